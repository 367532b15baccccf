//! DataFusion integration: the `rntuple` table format and HEP functions.
