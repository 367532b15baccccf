//! Fuzz target `envelopes`: see `envelopes` in `fuzz/harness.rs`.

#![no_main]

#[path = "../harness.rs"]
#[allow(dead_code)]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::envelopes(data));
