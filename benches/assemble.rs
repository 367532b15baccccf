//! Assembling Arrow arrays from decoded columns: lists, strings, structs,
//! unions and nested lists, apart from I/O and decompression.
//!
//! ```text
//! cargo bench --bench assemble
//! ```
//!
//! The file `benches/data/assemble.root` (written by ROOT with compression
//! 0; see `make_assemble.py` beside it) is held in memory, so a read copies
//! uncompressed pages and builds arrays, and does nothing else. Each
//! benchmark reads one field of all 2,048 entries.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use rntuple::RNTupleFile;

fn assemble(c: &mut Criterion) {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/data/assemble.root");
    let bytes = std::fs::read(path).expect("benches/data/assemble.root");
    let file = RNTupleFile::from_bytes(bytes).expect("an RNTuple file");
    let ntuple = file.ntuple(Some("assemble")).expect("the RNTuple");
    let entries = ntuple.n_entries();

    let mut group = c.benchmark_group("assemble");
    group.throughput(Throughput::Elements(entries));
    for (name, field) in [
        ("list<float>", "pt"),
        ("string", "name"),
        ("struct<float, int, double>", "hit"),
        ("union<int, float, string>", "value"),
        ("list<list<float>>", "tracks"),
    ] {
        group.bench_function(BenchmarkId::from_parameter(name), |b| {
            b.iter(|| {
                let reader = file
                    .reader_builder(Some("assemble"))
                    .and_then(|r| r.with_projection([field]))
                    .and_then(|r| r.build())
                    .expect("a reader");
                let batches = reader.collect_batches().expect("batches");
                std::hint::black_box(batches);
            })
        });
    }
    group.finish();
}

criterion_group!(benches, assemble);
criterion_main!(benches);
