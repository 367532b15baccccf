//! Page encodings.
