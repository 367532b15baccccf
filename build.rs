//! How the `rntuple` command is linked on Linux; the library and everything
//! else the crate builds are left as they are.
//!
//! - As a position-dependent executable. A position-independent executable
//!   of this size carries about 230,000 relative relocations that the
//!   dynamic loader applies at every start, writing to (and so faulting in)
//!   every page they touch: a few milliseconds, which is a tenth of a short
//!   query. Linked at a fixed address, the relocations are resolved by the
//!   linker instead.
//! - In release builds with lld (Rust's default linker for
//!   `x86_64-unknown-linux-gnu` since 1.90), with the functions a typical
//!   run executes laid out first and together, in the order of
//!   `src/bin/rntuple/link-order.txt` (written by
//!   `benches/link_order/generate.py`). The command's code is about 90 MB
//!   and a short run otherwise enters it all over, each 64 KiB piece at the
//!   cost of a page fault: `SELECT 1` took 6.2 ms before and 3.8 ms after.
//!   Set `RNTUPLE_LINK_ORDER=0` to link without it.
//!
//!   The names in the list carry hashes that depend on the features each
//!   dependency is built with. Built together with examples, tests or
//!   benches, the dependencies also get the features of the
//!   dev-dependencies, most names change (about 11% matched) and the layout
//!   is lost. Build the command on its own: `cargo build --release --bin
//!   rntuple`, `cargo run --release`, `cargo install`.

use std::process::Command;

const ORDER_FILE: &str = "src/bin/rntuple/link-order.txt";

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed={ORDER_FILE}");
    println!("cargo:rerun-if-env-changed=RNTUPLE_LINK_ORDER");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" {
        println!("cargo:rustc-link-arg-bin=rntuple=-no-pie");
    }
    if links_with_default_lld() {
        let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
        let order = std::path::Path::new(&dir).join(ORDER_FILE);
        if order.is_file() {
            println!(
                "cargo:rustc-link-arg-bin=rntuple=-Wl,--symbol-ordering-file={}",
                order.display()
            );
            // Functions the list names but this build does not have (other
            // compiler or dependency versions) are skipped, not reported.
            println!("cargo:rustc-link-arg-bin=rntuple=-Wl,--no-warn-symbol-ordering");
        }
    }
}

/// Whether this is a release build for `x86_64-unknown-linux-gnu` that
/// links with the toolchain's own lld: Rust 1.90 or later, and no linker
/// chosen in the configuration or the flags. Other linkers may not know
/// `--symbol-ordering-file`.
fn links_with_default_lld() -> bool {
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    if var("RNTUPLE_LINK_ORDER") == "0"
        || var("PROFILE") != "release"
        || var("TARGET") != "x86_64-unknown-linux-gnu"
        || std::env::var_os("RUSTC_LINKER").is_some()
    {
        return false;
    }
    let flags = var("CARGO_ENCODED_RUSTFLAGS");
    if flags.contains("linker") || flags.contains("fuse-ld") || flags.contains("self-contained") {
        return false;
    }
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let Ok(out) = Command::new(rustc).arg("-vV").output() else {
        return false;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let version = text
        .lines()
        .find_map(|line| line.strip_prefix("release: "))
        .unwrap_or_default();
    let mut parts = version.split(['.', '-']).map(|p| p.parse::<u32>().ok());
    matches!(
        (parts.next(), parts.next()),
        (Some(Some(major)), Some(Some(minor))) if (major, minor) >= (1, 90)
    )
}
