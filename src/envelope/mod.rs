//! Envelopes.
