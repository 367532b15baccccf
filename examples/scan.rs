//! Decode every column of an RNTuple into Arrow and report how fast it went.
//!
//! ```text
//! cargo run --release --example scan -- FILE.root [NTUPLE] [--batch-size N] [--columns a,b]
//!     [--clusters-in-flight N] [--batches-ahead N] [--decompress-only | --decode-pages]
//!     [--verify] [--mmap] [--repeat N]
//! ```
//!
//! Prints one line of JSON: entries, batches, the bytes of the Arrow arrays
//! made, and the seconds spent. `--decompress-only` instead reads and
//! decompresses every page of every column, all pages in parallel, and
//! decodes nothing: the floor that a full decode is measured against.
//! `--decode-pages` does the same and also decodes each page on its own into
//! a vector of its values, dropped at once: what the decoding kernels cost
//! when nothing is kept, sliced or assembled into batches. With either,
//! `--verify` also checks each page's XXH3 checksum first, as the reader
//! does.
//! The file is read with positioned reads (so the resident memory is what
//! the read holds); `--mmap` maps it instead. `--repeat N` runs the whole
//! thing N times in one process and prints a line for each: the passes
//! after the first find the allocator's memory already faulted in.

use std::error::Error;
use std::time::Instant;

use rayon::prelude::*;
use rntuple::compression::decompress_into;
use rntuple::container::read_blob_reusing;
use rntuple::RNTupleFile;

// The `rntuple` command's allocator.
#[path = "../src/bin/rntuple/allocator.rs"]
mod allocator;

fn main() -> Result<(), Box<dyn Error>> {
    allocator::tune();
    let mut args = std::env::args().skip(1);
    let mut path = None;
    let mut ntuple = None;
    let mut batch_size = None;
    let mut pages_only = None;
    let mut mmap = false;
    let mut verify = false;
    let mut columns: Option<Vec<String>> = None;
    let mut in_flight = 1;
    let mut ahead = None;
    let mut repeat = 1;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--decompress-only" => pages_only = Some(PagesOnly::Decompress),
            "--decode-pages" => pages_only = Some(PagesOnly::Decode),
            "--mmap" => mmap = true,
            "--verify" => verify = true,
            "--batch-size" => batch_size = Some(args.next().ok_or("--batch-size N")?.parse()?),
            "--columns" => {
                let list = args.next().ok_or("--columns a,b")?;
                columns = Some(list.split(',').map(str::to_string).collect());
            }
            "--batches-ahead" => {
                ahead = Some(args.next().ok_or("--batches-ahead N")?.parse()?);
            }
            "--repeat" => repeat = args.next().ok_or("--repeat N")?.parse()?,
            "--clusters-in-flight" => {
                in_flight = args.next().ok_or("--clusters-in-flight N")?.parse()?;
            }
            _ if path.is_none() => path = Some(arg),
            _ => ntuple = Some(arg),
        }
    }
    let path = path.ok_or(
        "usage: scan FILE.root [NTUPLE] [--batch-size N] [--columns a,b] \
         [--clusters-in-flight N] [--batches-ahead N] [--decompress-only | --decode-pages] \
         [--verify] [--mmap] [--repeat N]",
    )?;
    for _ in 0..repeat {
        let start = Instant::now();
        let file = if mmap {
            RNTupleFile::open_mmap(&path)?
        } else {
            RNTupleFile::open(&path)?
        };
        let summary = if let Some(what) = pages_only {
            pages_all(&file, ntuple.as_deref(), what, verify)?
        } else {
            let mut builder = file
                .reader_builder(ntuple.as_deref())?
                .with_clusters_in_flight(in_flight);
            if let Some(columns) = &columns {
                builder = builder.with_projection(columns)?;
            }
            if let Some(n) = batch_size {
                builder = builder.with_batch_size(n);
            }
            if let Some(n) = ahead {
                builder = builder.with_batches_ahead(n);
            }
            let mut summary = Summary::default();
            for batch in builder.build()? {
                let batch = batch?;
                summary.entries += batch.num_rows() as u64;
                summary.batches += 1;
                summary.bytes += batch.get_array_memory_size() as u64;
            }
            summary
        };
        println!(
        "{{\"mode\": \"{}\", \"entries\": {}, \"batches\": {}, \"bytes\": {}, \"seconds\": {:.6}}}",
        match pages_only {
            None => "decode",
            Some(PagesOnly::Decompress) if verify => "decompress-verified",
            Some(PagesOnly::Decompress) => "decompress",
            Some(PagesOnly::Decode) if verify => "decode-pages-verified",
            Some(PagesOnly::Decode) => "decode-pages",
        },
        summary.entries,
        summary.batches,
        summary.bytes,
        start.elapsed().as_secs_f64()
    );
    }
    Ok(())
}

#[derive(Default)]
struct Summary {
    entries: u64,
    batches: u64,
    /// Arrow bytes made, or pages decompressed.
    bytes: u64,
}

/// What [`pages_all`] does with each page.
#[derive(Clone, Copy, PartialEq, Eq)]
enum PagesOnly {
    Decompress,
    Decode,
}

/// Decodes the decompressed page `src` of `column` into a vector of its
/// values (end offsets for an index column) and drops it; returns the
/// number of values. Bit and other columns are left out (0).
fn decode_page(
    column: &rntuple::descriptor::ColumnDescriptor,
    page: &rntuple::envelope::PageRecord,
    src: &[u8],
) -> rntuple::Result<u64> {
    use rntuple::descriptor::ColumnType as C;
    use rntuple::encoding::{decode_index, decode_values, ColumnCoding};
    let coding = ColumnCoding::of(column);
    let n = page.n_elements as usize;
    let o = page.locator.offset;
    macro_rules! values {
        ($t:ty) => {{
            let mut v: Vec<$t> = Vec::new();
            decode_values(&coding, src, n, o, &mut v)?;
            std::hint::black_box(&v);
            v.len() as u64
        }};
    }
    Ok(match column.column_type {
        C::SplitIndex64 | C::SplitIndex32 | C::Index64 | C::Index32 => {
            let mut v = Vec::new();
            decode_index(&coding, src, n, o, &mut v)?;
            std::hint::black_box(&v);
            v.len() as u64
        }
        C::SplitReal32 | C::Real32 => values!(f32),
        C::SplitReal64 | C::Real64 => values!(f64),
        C::SplitInt32 | C::Int32 => values!(i32),
        C::SplitUInt32 | C::UInt32 => values!(u32),
        C::SplitInt64 | C::Int64 => values!(i64),
        C::SplitUInt64 | C::UInt64 => values!(u64),
        C::SplitInt16 | C::Int16 => values!(i16),
        C::SplitUInt16 | C::UInt16 => values!(u16),
        C::Byte | C::UInt8 | C::Char | C::Int8 => values!(u8),
        _ => 0,
    })
}

/// Reads and decompresses every page of the RNTuple, in parallel over all
/// pages of a cluster, verifies its checksum first if `verify`, decodes it
/// if `what` says so, and throws the bytes away.
fn pages_all(
    file: &RNTupleFile,
    ntuple: Option<&str>,
    what: PagesOnly,
    verify: bool,
) -> Result<Summary, Box<dyn Error>> {
    let ntuple = file.ntuple(ntuple)?;
    let descriptor = ntuple.descriptor();
    let pages = ntuple.page_source();
    let mut summary = Summary::default();
    for cluster in ntuple.clusters()? {
        let mut work = Vec::new();
        for column in &descriptor.columns {
            let bits = u64::from(column.bits_on_storage);
            if let Some(range) = cluster.column(column.id) {
                for page in &range.pages {
                    let len = (u64::from(page.n_elements) * bits).div_ceil(8);
                    work.push((column, *page, len as usize));
                }
            }
        }
        // Each thread reads into one buffer and decompresses into another,
        // reused from page to page, as the reader does.
        let bytes = work
            .par_iter()
            .map_init(
                || (Vec::new(), Vec::new()),
                |(stored, out), (column, page, len)| {
                    let checked = verify && page.has_checksum;
                    let data = read_blob_reusing(
                        pages.source.as_ref(),
                        page.locator.offset,
                        page.locator.size + if checked { 8 } else { 0 },
                        pages.max_key_size,
                        stored,
                    )?;
                    let mut data: &[u8] = &data;
                    if checked {
                        let (body, sum) = data.split_at(data.len().saturating_sub(8));
                        let expected = sum.try_into().map(u64::from_le_bytes).unwrap_or(0);
                        let actual = twox_hash::XxHash3_64::oneshot(body);
                        if actual != expected {
                            return Err(rntuple::Error::ChecksumMismatch {
                                what: "page",
                                offset: page.locator.offset,
                                expected,
                                actual,
                            });
                        }
                        data = body;
                    }
                    if out.len() < *len {
                        out.resize(*len, 0);
                    }
                    out.truncate(*len);
                    decompress_into(data, out, page.locator.offset)?;
                    if what == PagesOnly::Decode {
                        decode_page(column, page, out)?;
                    }
                    Ok(out.len() as u64)
                },
            )
            .collect::<rntuple::Result<Vec<u64>>>()?;
        summary.entries += cluster.n_entries;
        summary.batches += 1;
        summary.bytes += bytes.iter().sum::<u64>();
    }
    Ok(summary)
}
