//! ROOT file container.
