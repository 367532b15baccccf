//! Page decoding per column encoding, apart from I/O and decompression.
//!
//! ```text
//! cargo bench --bench decode
//! ```
//!
//! Each benchmark decodes one page of 64 Ki elements that is already in
//! memory, uncompressed, into the typed values the Arrow arrays are built
//! from. Throughput is in elements per second (and bytes of decoded values).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use rntuple::descriptor::ColumnType;
use rntuple::encoding::{
    decode_bits, decode_index, decode_switch, decode_values, encode_bits, encode_index,
    encode_switch, encode_values, BitVec, ColumnCoding, NativeType,
};

const N: usize = 64 * 1024;

/// Values that look like physics: smooth floats, small counts.
fn floats() -> Vec<f32> {
    (0..N)
        .map(|i| 20.0 + (i as f32 * 0.618).sin() * 15.0 + (i % 7) as f32)
        .collect()
}

fn page<T: NativeType>(coding: &ColumnCoding, values: &[T]) -> Vec<u8> {
    let mut page = Vec::new();
    encode_values(coding, values, &mut page).expect("encodable");
    page
}

fn bench_values<T: NativeType>(
    c: &mut Criterion,
    group_name: &str,
    cases: &[(&str, ColumnCoding)],
    values: &[T],
) {
    let mut group = c.benchmark_group(group_name);
    group.throughput(Throughput::Elements(N as u64));
    for (name, coding) in cases {
        let page = page(coding, values);
        let mut out: Vec<T> = Vec::with_capacity(N);
        group.bench_function(BenchmarkId::from_parameter(name), |b| {
            b.iter(|| {
                out.clear();
                decode_values(coding, &page, N, 0, &mut out).expect("decodes");
                std::hint::black_box(&out);
            })
        });
    }
    group.finish();
}

fn reals(c: &mut Criterion) {
    let values = floats();
    let cases = [
        ("Real32", ColumnCoding::new(ColumnType::Real32)),
        ("SplitReal32", ColumnCoding::new(ColumnType::SplitReal32)),
        ("Real16", ColumnCoding::new(ColumnType::Real16)),
        ("SplitReal16", ColumnCoding::new(ColumnType::SplitReal16)),
        (
            "Real32Trunc/16",
            ColumnCoding::new(ColumnType::Real32Trunc).with_bits_on_storage(16),
        ),
        (
            "Real32Quant/20",
            ColumnCoding::new(ColumnType::Real32Quant)
                .with_bits_on_storage(20)
                .with_value_range(0.0, 64.0),
        ),
    ];
    bench_values(c, "decode/f32", &cases, &values);

    let doubles: Vec<f64> = values.iter().map(|&x| f64::from(x) * 1.5).collect();
    let cases = [
        ("Real64", ColumnCoding::new(ColumnType::Real64)),
        ("SplitReal64", ColumnCoding::new(ColumnType::SplitReal64)),
    ];
    bench_values(c, "decode/f64", &cases, &doubles);
}

fn integers(c: &mut Criterion) {
    let ints: Vec<i32> = (0..N as i32).map(|i| (i % 1000) - 500).collect();
    let cases = [
        ("Int32", ColumnCoding::new(ColumnType::Int32)),
        (
            "SplitInt32 (zigzag)",
            ColumnCoding::new(ColumnType::SplitInt32),
        ),
    ];
    bench_values(c, "decode/i32", &cases, &ints);

    let uints: Vec<u32> = (0..N as u32)
        .map(|i| i.wrapping_mul(2_654_435_761))
        .collect();
    let cases = [
        ("UInt32", ColumnCoding::new(ColumnType::UInt32)),
        ("SplitUInt32", ColumnCoding::new(ColumnType::SplitUInt32)),
    ];
    bench_values(c, "decode/u32", &cases, &uints);

    let longs: Vec<i64> = (0..N as i64).map(|i| i * 1_000_003 - 7).collect();
    let cases = [
        ("Int64", ColumnCoding::new(ColumnType::Int64)),
        (
            "SplitInt64 (zigzag)",
            ColumnCoding::new(ColumnType::SplitInt64),
        ),
    ];
    bench_values(c, "decode/i64", &cases, &longs);
}

fn offsets(c: &mut Criterion) {
    // End offsets of collections of 0 to 7 elements.
    let mut end = 0u64;
    let ends: Vec<u64> = (0..N as u64)
        .map(|i| {
            end += (i * 7 + 3) % 8;
            end
        })
        .collect();
    // The same steps on a page that starts a million elements into its
    // cluster: a wide first delta.
    let later: Vec<u64> = ends.iter().map(|e| e + 1_000_000).collect();
    let mut group = c.benchmark_group("decode/index");
    group.throughput(Throughput::Elements(N as u64));
    for (name, t, ends) in [
        ("Index32", ColumnType::Index32, &ends),
        ("SplitIndex32 (delta)", ColumnType::SplitIndex32, &ends),
        ("Index64", ColumnType::Index64, &ends),
        ("SplitIndex64 (delta)", ColumnType::SplitIndex64, &ends),
        (
            "SplitIndex64 (delta, later page)",
            ColumnType::SplitIndex64,
            &later,
        ),
    ] {
        let coding = ColumnCoding::new(t);
        let mut page = Vec::new();
        encode_index(&coding, ends, &mut page).expect("encodable");
        let mut out = Vec::with_capacity(N);
        group.bench_function(BenchmarkId::from_parameter(name), |b| {
            b.iter(|| {
                out.clear();
                decode_index(&coding, &page, N, 0, &mut out).expect("decodes");
                std::hint::black_box(&out);
            })
        });
    }
    group.finish();
}

fn bits_and_switches(c: &mut Criterion) {
    let mut group = c.benchmark_group("decode/other");
    group.throughput(Throughput::Elements(N as u64));

    let coding = ColumnCoding::new(ColumnType::Bit);
    let mut page = Vec::new();
    encode_bits((0..N).map(|i| i % 3 == 0), &mut page);
    let mut out = BitVec::with_capacity(N);
    group.bench_function("Bit", |b| {
        b.iter(|| {
            out.clear();
            decode_bits(&coding, &page, N, 0, &mut out).expect("decodes");
            std::hint::black_box(&out);
        })
    });

    let coding = ColumnCoding::new(ColumnType::Switch);
    let index: Vec<u64> = (0..N as u64).map(|i| i / 3).collect();
    let tag: Vec<u32> = (0..N as u32).map(|i| 1 + i % 3).collect();
    let mut page = Vec::new();
    encode_switch(&index, &tag, &mut page).expect("encodable");
    let (mut si, mut st) = (Vec::with_capacity(N), Vec::with_capacity(N));
    group.bench_function("Switch", |b| {
        b.iter(|| {
            si.clear();
            st.clear();
            decode_switch(&coding, &page, N, 0, &mut si, &mut st).expect("decodes");
            std::hint::black_box((&si, &st));
        })
    });
    group.finish();
}

criterion_group!(benches, reals, integers, offsets, bits_and_switches);
criterion_main!(benches);
