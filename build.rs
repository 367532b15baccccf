//! Links the `rntuple` command as a position-dependent executable on Linux.
//!
//! A position-independent executable of this size carries about 230,000
//! relative relocations that the dynamic loader applies at every start,
//! writing to (and so faulting in) every page they touch: a few
//! milliseconds, which is a tenth of a short query. Linked at a fixed
//! address, the relocations are resolved by the linker instead. The library
//! and everything else the crate builds are left as they are.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" {
        println!("cargo:rustc-link-arg-bin=rntuple=-no-pie");
    }
}
