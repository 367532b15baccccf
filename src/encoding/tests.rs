//! Tests of the page decoders across all column types.

use super::*;
use crate::test_util::xorshift;
use ColumnType as C;

/// Every known column type, 0x00 to 0x1D.
fn all_types() -> Vec<ColumnType> {
    (0..=0x1Du16).map(ColumnType::from_code).collect()
}

/// A usable coding for each type: 20-bit Real32Trunc, 16-bit Real32Quant in [-10, 10].
fn coding(column_type: ColumnType) -> ColumnCoding {
    match column_type {
        C::Real32Trunc => ColumnCoding::new(column_type).with_bits_on_storage(20),
        C::Real32Quant => ColumnCoding::new(column_type)
            .with_bits_on_storage(16)
            .with_value_range(-10.0, 10.0),
        _ => ColumnCoding::new(column_type),
    }
}

/// A page of `n` elements of the type, built with the matching encoder.
fn sample_page(column_type: ColumnType, n: usize) -> Vec<u8> {
    let c = coding(column_type);
    let mut page = Vec::new();
    if column_type == C::Switch {
        let index: Vec<u64> = (0..n as u64).collect();
        let tag: Vec<u32> = (0..n as u32).map(|i| i % 3).collect();
        encode_switch(&index, &tag, &mut page).unwrap();
    } else if column_type.is_index() {
        let offsets: Vec<u64> = (0..n as u64).map(|i| i * 3).collect();
        encode_index(&c, &offsets, &mut page).unwrap();
    } else if column_type == C::Byte {
        let values: Vec<u8> = (0..n).map(|i| (i * 37) as u8).collect();
        encode_values(&c, &values, &mut page).unwrap();
    } else if can_decode_as::<f64>(column_type) {
        let values: Vec<f64> = (0..n).map(|i| (i % 80) as f64 / 7.0 - 3.0).collect();
        encode_values(&c, &values, &mut page).unwrap();
    } else {
        let values: Vec<i64> = (0..n as i64).map(|i| i * 37 - 50).collect();
        encode_values(&c, &values, &mut page).unwrap();
    }
    assert_eq!(Some(page.len()), c.page_len(n), "{column_type} n {n}");
    page
}

fn values<T: NativeType>(coding: &ColumnCoding, page: &[u8], n: usize) -> Result<Vec<T>> {
    let mut out = Vec::new();
    decode_values(coding, page, n, 0, &mut out)?;
    Ok(out)
}

/// Decodes the page as each native type; the names of those that worked.
fn readable_as(coding: &ColumnCoding, page: &[u8], n: usize) -> Vec<&'static str> {
    fn one<T: NativeType>(
        coding: &ColumnCoding,
        page: &[u8],
        n: usize,
        ok: &mut Vec<&'static str>,
    ) {
        match values::<T>(coding, page, n) {
            Ok(v) => {
                assert_eq!(v.len(), n);
                ok.push(T::NAME);
            }
            Err(e) => assert!(
                matches!(e, Error::Unsupported { .. }),
                "{}: {e}",
                coding.column_type
            ),
        }
    }
    let mut ok = Vec::new();
    one::<u8>(coding, page, n, &mut ok);
    one::<i8>(coding, page, n, &mut ok);
    one::<u16>(coding, page, n, &mut ok);
    one::<i16>(coding, page, n, &mut ok);
    one::<u32>(coding, page, n, &mut ok);
    one::<i32>(coding, page, n, &mut ok);
    one::<u64>(coding, page, n, &mut ok);
    one::<i64>(coding, page, n, &mut ok);
    one::<f32>(coding, page, n, &mut ok);
    one::<f64>(coding, page, n, &mut ok);
    ok
}

#[test]
fn every_column_type_through_every_decoder() {
    const INTS: [&str; 8] = ["u8", "i8", "u16", "i16", "u32", "i32", "u64", "i64"];
    const REALS: [&str; 2] = ["f32", "f64"];
    for column_type in all_types() {
        let c = coding(column_type);
        for n in [0, 1, 5, 100, 1000] {
            let page = sample_page(column_type, n);
            let expected: Vec<&str> = match column_type {
                C::Byte => vec!["u8", "i8"],
                C::Bit | C::Char => INTS.to_vec(),
                t if is_integer(t) => INTS.to_vec(),
                C::Real16
                | C::SplitReal16
                | C::Real32
                | C::SplitReal32
                | C::Real64
                | C::SplitReal64
                | C::Real32Trunc
                | C::Real32Quant => REALS.to_vec(),
                _ => vec![],
            };
            assert_eq!(readable_as(&c, &page, n), expected, "{column_type} n {n}");

            let mut offsets = Vec::new();
            let r = decode_index(&c, &page, n, 0, &mut offsets);
            assert_eq!(r.is_ok(), column_type.is_index(), "{column_type}");
            if column_type.is_index() {
                assert_eq!(offsets, (0..n as u64).map(|i| i * 3).collect::<Vec<_>>());
            } else {
                assert!(matches!(r, Err(Error::Unsupported { .. })));
            }

            let (mut index, mut tag) = (Vec::new(), Vec::new());
            let r = decode_switch(&c, &page, n, 0, &mut index, &mut tag);
            assert_eq!(r.is_ok(), column_type == C::Switch, "{column_type}");
            if column_type == C::Switch {
                assert_eq!(index, (0..n as u64).collect::<Vec<_>>());
                assert_eq!(tag, (0..n as u32).map(|i| i % 3).collect::<Vec<_>>());
            }

            let mut bits = BitVec::new();
            let r = decode_bits(&c, &page, n, 0, &mut bits);
            let bool_readable = matches!(column_type, C::Bit | C::Char | C::Int8 | C::UInt8)
                || is_integer(column_type);
            assert_eq!(r.is_ok(), bool_readable, "{column_type}");
            if bool_readable {
                assert_eq!(bits.len(), n);
            }
        }
    }
}

#[test]
fn wrong_page_sizes_are_malformed() {
    for column_type in all_types() {
        let c = coding(column_type);
        for n in [0, 1, 5, 9] {
            let page = sample_page(column_type, n);
            let mut longer = page.clone();
            longer.push(0);
            let mut shorter = page.clone();
            let cut = shorter.pop().is_some();
            let mut cases = vec![longer];
            if cut {
                cases.push(shorter);
            }
            for bad in cases {
                let malformed =
                    |r: Result<()>| matches!(r, Err(Error::Malformed { offset: 42, .. }));
                assert!(
                    malformed(decode_values::<f64>(&c, &bad, n, 42, &mut Vec::new())),
                    "{column_type}"
                );
                assert!(
                    malformed(decode_values::<i32>(&c, &bad, n, 42, &mut Vec::new())),
                    "{column_type}"
                );
                assert!(
                    malformed(decode_index(&c, &bad, n, 42, &mut Vec::new())),
                    "{column_type}"
                );
                assert!(malformed(decode_switch(
                    &c,
                    &bad,
                    n,
                    42,
                    &mut Vec::new(),
                    &mut Vec::new()
                )));
                assert!(
                    malformed(decode_bits(&c, &bad, n, 42, &mut BitVec::new())),
                    "{column_type}"
                );
            }
        }
    }
}

#[test]
fn huge_element_counts_fail_without_panicking() {
    for column_type in all_types() {
        let c = coding(column_type);
        for n in [usize::MAX, usize::MAX / 8, usize::MAX / 12 + 1] {
            let r = decode_values::<f64>(&c, &[0; 16], n, 0, &mut Vec::new());
            assert!(
                matches!(r, Err(Error::Malformed { .. })),
                "{column_type} n {n}"
            );
            let r = decode_values::<u8>(&c, &[0; 16], n, 0, &mut Vec::new());
            assert!(
                matches!(r, Err(Error::Malformed { .. })),
                "{column_type} n {n}"
            );
        }
    }
}

#[test]
fn unknown_types_are_unsupported() {
    let c = ColumnCoding::new(ColumnType::Unknown(0x99)).with_bits_on_storage(32);
    assert_eq!(c.page_len(4), None);
    assert!(matches!(
        decode_values::<u32>(&c, &[0; 16], 4, 0, &mut Vec::new()),
        Err(Error::Unsupported { .. })
    ));
    assert!(matches!(
        decode_index(&c, &[0; 16], 4, 0, &mut Vec::new()),
        Err(Error::Unsupported { .. })
    ));
    assert!(matches!(
        decode_bits(&c, &[0; 16], 4, 0, &mut BitVec::new()),
        Err(Error::Unsupported { .. })
    ));
}

#[test]
fn widths_outside_the_type_are_malformed() {
    let bad = [
        ColumnCoding::new(C::Real32Trunc).with_bits_on_storage(9),
        ColumnCoding::new(C::Real32Trunc).with_bits_on_storage(32),
        ColumnCoding::new(C::Real32Quant)
            .with_bits_on_storage(0)
            .with_value_range(0.0, 1.0),
        ColumnCoding::new(C::Real32Quant)
            .with_bits_on_storage(33)
            .with_value_range(0.0, 1.0),
        ColumnCoding::new(C::Int32).with_bits_on_storage(16),
        ColumnCoding::new(C::Bit).with_bits_on_storage(8),
    ];
    for c in bad {
        let r = decode_values::<f32>(&c, &[0; 8], 2, 7, &mut Vec::new());
        assert!(
            matches!(r, Err(Error::Malformed { offset: 7, .. })),
            "{c:?}"
        );
    }
}

#[test]
fn quant_needs_a_finite_range() {
    let base = ColumnCoding::new(C::Real32Quant).with_bits_on_storage(8);
    for c in [
        base,
        base.with_value_range(f64::NAN, 1.0),
        base.with_value_range(0.0, f64::INFINITY),
        base.with_value_range(2.0, 1.0),
    ] {
        let r = decode_values::<f32>(&c, &[0; 2], 2, 0, &mut Vec::new());
        assert!(matches!(r, Err(Error::Malformed { .. })), "{c:?}");
        assert!(encode_values(&c, &[0.5f32], &mut Vec::new()).is_err());
    }
}

#[test]
fn empty_pages() {
    for column_type in all_types() {
        let c = coding(column_type);
        let mut out = vec![1.0f64];
        if can_decode_as::<f64>(column_type) {
            decode_values(&c, &[], 0, 0, &mut out).unwrap();
            assert_eq!(out, [1.0]);
        }
        assert!(decode_values::<f64>(&c, &[0], 0, 0, &mut out).is_err());
    }
}

/// Encodes `values` as a column of `column_type` and decodes them as `T`.
fn round_trip<S: NativeType, T: NativeType>(coding: &ColumnCoding, values: &[S]) -> Vec<T> {
    let mut page = Vec::new();
    encode_values(coding, values, &mut page).unwrap();
    assert_eq!(Some(page.len()), coding.page_len(values.len()));
    values_or_panic(coding, &page, values.len())
}

fn values_or_panic<T: NativeType>(coding: &ColumnCoding, page: &[u8], n: usize) -> Vec<T> {
    values::<T>(coding, page, n).unwrap_or_else(|e| panic!("{}: {e}", coding.column_type))
}

macro_rules! check_int_column {
    ($column_type:expr, $natural:ty, $values:expr) => {{
        let c = coding($column_type);
        let values: Vec<$natural> = $values;
        assert_eq!(round_trip::<$natural, $natural>(&c, &values), values, "{}", $column_type);
        check_int_column!(@as c, $natural, values, u8, i8, u16, i16, u32, i32, u64, i64);
    }};
    (@as $c:ident, $natural:ty, $values:ident, $($t:ty),*) => {$(
        let expected: Vec<$t> = $values.iter().map(|&v| v as $t).collect();
        assert_eq!(
            round_trip::<$natural, $t>(&$c, &$values),
            expected,
            "{} as {}",
            $c.column_type,
            stringify!($t)
        );
    )*};
}

#[test]
fn integers_round_trip_and_cast_like_static_cast() {
    check_int_column!(C::Int8, i8, vec![i8::MIN, -1, 0, 1, i8::MAX]);
    check_int_column!(C::UInt8, u8, vec![0, 1, 0x80, u8::MAX]);
    check_int_column!(C::Char, i8, vec![b'a' as i8, 0, -1, i8::MIN]);
    check_int_column!(C::Int16, i16, vec![i16::MIN, -300, -1, 0, 1, 300, i16::MAX]);
    check_int_column!(C::UInt16, u16, vec![0, 1, 300, 0x8000, u16::MAX]);
    check_int_column!(
        C::SplitInt16,
        i16,
        vec![i16::MIN, i16::MIN + 1, -1, 0, 1, i16::MAX - 1, i16::MAX]
    );
    check_int_column!(C::SplitUInt16, u16, vec![0, 1, 0x0102, 0x0304, u16::MAX]);
    check_int_column!(
        C::Int32,
        i32,
        vec![i32::MIN, -70000, -1, 0, 70000, i32::MAX]
    );
    check_int_column!(C::UInt32, u32, vec![0, 1, 70000, 0x8000_0000, u32::MAX]);
    check_int_column!(C::SplitInt32, i32, vec![i32::MIN, -1, 0, 1, i32::MAX]);
    check_int_column!(C::SplitUInt32, u32, vec![0, 0xDEAD_BEEF, u32::MAX]);
    check_int_column!(C::Int64, i64, vec![i64::MIN, -1, 0, 1, 1 << 40, i64::MAX]);
    check_int_column!(C::UInt64, u64, vec![0, 1, 1 << 63, u64::MAX]);
    check_int_column!(
        C::SplitInt64,
        i64,
        vec![i64::MIN, i64::MIN + 1, -1, 0, 1, i64::MAX - 1, i64::MAX]
    );
    check_int_column!(
        C::SplitUInt64,
        u64,
        vec![0, 0x0102_0304_0506_0708, u64::MAX]
    );
    // Odd lengths across the block size.
    check_int_column!(
        C::SplitInt32,
        i32,
        (0..(3 * BLOCK as i32 + 5))
            .map(|i| i * i * if i % 2 == 0 { 1 } else { -1 })
            .collect()
    );
}

#[test]
fn hand_built_split_zigzag_page() {
    // SplitInt16 [1, -2]: zigzag codes 2 and 3, split: low bytes, then high bytes.
    let c = ColumnCoding::new(C::SplitInt16);
    assert_eq!(
        values_or_panic::<i16>(&c, &[0x02, 0x03, 0x00, 0x00], 2),
        [1, -2]
    );
    // SplitUInt16 [0x0102, 0x0304] is 02 04 01 03.
    let c = ColumnCoding::new(C::SplitUInt16);
    assert_eq!(
        values_or_panic::<u16>(&c, &[0x02, 0x04, 0x01, 0x03], 2),
        [0x0102, 0x0304]
    );
    // SplitInt64 i64::MIN is the code u64::MAX.
    let c = ColumnCoding::new(C::SplitInt64);
    assert_eq!(values_or_panic::<i64>(&c, &[0xFF; 8], 1), [i64::MIN]);
}

#[test]
fn char_and_byte_columns() {
    let c = ColumnCoding::new(C::Char);
    assert_eq!(values_or_panic::<u8>(&c, b"hi\xff", 3), [b'h', b'i', 0xFF]);
    assert_eq!(values_or_panic::<i32>(&c, b"\xff", 1), [-1]);
    let c = ColumnCoding::new(C::Byte);
    assert_eq!(values_or_panic::<u8>(&c, &[0, 0xFF], 2), [0, 0xFF]);
    assert_eq!(values_or_panic::<i8>(&c, &[0, 0xFF], 2), [0, -1]);
    assert!(matches!(
        values::<u16>(&c, &[0, 0xFF], 2),
        Err(Error::Unsupported { .. })
    ));
}

fn bits_of<T: Copy>(values: &[T], to_bits: impl Fn(T) -> u64) -> Vec<u64> {
    values.iter().map(|&v| to_bits(v)).collect()
}

#[test]
fn reals_keep_their_bits() {
    let specials32 = [
        f32::from_bits(0x7FA0_0001), // signalling NaN with a payload
        f32::NAN,
        -0.0,
        0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::from_bits(1), // smallest denormal
        f32::MIN_POSITIVE,
        f32::MAX,
        f32::MIN,
        1.5,
    ];
    for column_type in [C::Real32, C::SplitReal32] {
        let c = coding(column_type);
        let back: Vec<f32> = round_trip(&c, &specials32);
        assert_eq!(
            bits_of(&back, |v| v.to_bits().into()),
            bits_of(&specials32, |v| v.to_bits().into())
        );
        let wide: Vec<f64> = round_trip(&c, &specials32);
        for (w, v) in wide.iter().zip(&specials32) {
            assert!(
                w.is_nan() && v.is_nan() || *w == f64::from(*v),
                "{column_type}: {w} {v}"
            );
        }
    }
    let specials64 = [
        f64::from_bits(0x7FF4_0000_0000_0001),
        -0.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::from_bits(1),
        f64::MIN_POSITIVE,
        f64::MAX,
        f64::MIN,
        0.1,
        1e-40, // a float denormal
        1e300, // beyond float range
    ];
    for column_type in [C::Real64, C::SplitReal64] {
        let c = coding(column_type);
        let back: Vec<f64> = round_trip(&c, &specials64);
        assert_eq!(
            bits_of(&back, f64::to_bits),
            bits_of(&specials64, f64::to_bits)
        );
        let narrow: Vec<f32> = round_trip(&c, &specials64);
        for (n, v) in narrow.iter().zip(&specials64) {
            assert!(
                n.is_nan() && v.is_nan() || n.to_bits() == (*v as f32).to_bits(),
                "{column_type}: {n} {v}"
            );
        }
    }
}

#[test]
fn real16_columns() {
    let values = [
        0.0f32,
        -0.0,
        1.0,
        -2.0,
        65504.0,
        2f32.powi(-24),
        2f32.powi(-14),
        f32::INFINITY,
        f32::NEG_INFINITY,
    ];
    for column_type in [C::Real16, C::SplitReal16] {
        let c = coding(column_type);
        let back: Vec<f32> = round_trip(&c, &values);
        assert_eq!(
            bits_of(&back, |v| v.to_bits().into()),
            bits_of(&values, |v| v.to_bits().into())
        );
        let wide: Vec<f64> = round_trip(&c, &values);
        assert_eq!(
            wide,
            values.iter().map(|&v| f64::from(v)).collect::<Vec<_>>()
        );
        let nan: Vec<f32> = round_trip(&c, &[f32::NAN]);
        assert!(nan[0].is_nan());
    }
    // Plain Real16 [1.0, -2.0] is 00 3C 00 C0; split it is 00 00 3C C0.
    assert_eq!(
        values_or_panic::<f32>(&coding(C::Real16), &[0x00, 0x3C, 0x00, 0xC0], 2),
        [1.0, -2.0]
    );
    assert_eq!(
        values_or_panic::<f32>(&coding(C::SplitReal16), &[0x00, 0x00, 0x3C, 0xC0], 2),
        [1.0, -2.0]
    );
    // A signalling NaN keeps its payload, as in ROOT's portable HalfToFloat.
    let v: Vec<f32> = values_or_panic(&coding(C::Real16), &[0x01, 0x7C], 1);
    assert_eq!(v[0].to_bits(), 0x7F80_2000);
}

#[test]
fn real32_trunc_columns() {
    let values = [
        1.5f32,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        f32::from_bits(0x3FAB_CDEF),
        f32::from_bits(0x0000_0001),
        f32::MAX,
        -123.456,
    ];
    for bits in [10u16, 11, 16, 20, 23, 31] {
        let c = ColumnCoding::new(C::Real32Trunc).with_bits_on_storage(bits);
        let keep = u32::MAX << (32 - bits);
        let back: Vec<f32> = round_trip(&c, &values);
        let expected: Vec<u64> = values
            .iter()
            .map(|v| u64::from(v.to_bits() & keep))
            .collect();
        assert_eq!(
            bits_of(&back, |v| v.to_bits().into()),
            expected,
            "bits {bits}"
        );
        // A double field reads the float, widened.
        let doubles: Vec<f64> = values.iter().map(|&v| f64::from(v)).collect();
        let wide: Vec<f64> = round_trip(&c, &doubles);
        for (w, e) in wide.iter().zip(&back) {
            assert!(
                w.is_nan() && e.is_nan() || *w == f64::from(*e),
                "bits {bits}"
            );
        }
    }
    // Hand-built, 16 bits: 1.5 = 0x3FC0_0000 and -2.0 = 0xC000_0000 keep 0x3FC0 and 0xC000.
    let c = ColumnCoding::new(C::Real32Trunc).with_bits_on_storage(16);
    assert_eq!(
        values_or_panic::<f32>(&c, &[0xC0, 0x3F, 0x00, 0xC0], 2),
        [1.5, -2.0]
    );
    // 10 bits: 1.0 = 0x3F80_0000 keeps 0x0FE; two of them fill 20 bits: FE F8 03.
    let c = ColumnCoding::new(C::Real32Trunc).with_bits_on_storage(10);
    assert_eq!(
        values_or_panic::<f32>(&c, &[0xFE, 0xF8, 0x03], 2),
        [1.0, 1.0]
    );
}

/// ROOT's reading of a quantised value, written out independently.
fn root_unquantize(q: u32, min: f64, max: f64, bits: u32) -> f64 {
    let quant_max = ((1u64 << bits) - 1) as f64;
    let scale = (max - min) / quant_max;
    let e = q as f64 * scale + min;
    if max < e {
        max
    } else {
        e
    }
}

#[test]
fn real32_quant_matches_root_formula() {
    for (bits, min, max) in [
        (1u32, 0.0, 1.0),
        (2, -1.0, 1.0),
        (7, -3.25, 17.5),
        (16, -10.0, 10.0),
        (20, 0.0, 1e6),
        (32, -1.0, 3.0),
    ] {
        let c = ColumnCoding::new(C::Real32Quant)
            .with_bits_on_storage(bits as u16)
            .with_value_range(min, max);
        let top = ((1u64 << bits) - 1) as u32;
        let items: Vec<u32> = [0, 1, top / 3, top / 2, top.saturating_sub(1), top]
            .into_iter()
            .chain((0..100).map(|i| ((i as u64 * 0x9E37_79B9) % (top as u64 + 1)) as u32))
            .collect();
        let mut page = Vec::new();
        bits::pack(items.iter().copied(), bits, &mut page);
        let doubles: Vec<f64> = values_or_panic(&c, &page, items.len());
        let floats: Vec<f32> = values_or_panic(&c, &page, items.len());
        for ((&q, &d), &f) in items.iter().zip(&doubles).zip(&floats) {
            let e = root_unquantize(q, min, max, bits);
            assert_eq!(d.to_bits(), e.to_bits(), "bits {bits} q {q}");
            // Computed in double, then cast to float.
            assert_eq!(f.to_bits(), (e as f32).to_bits(), "bits {bits} q {q}");
            assert!((min..=max).contains(&d));
        }
        // Encoding, then decoding, lands within half a step.
        let step = (max - min) / top as f64;
        let originals: Vec<f64> = (0..50)
            .map(|i| min + (max - min) * i as f64 / 49.0)
            .collect();
        let back: Vec<f64> = round_trip(&c, &originals);
        for (b, o) in back.iter().zip(&originals) {
            assert!(
                (b - o).abs() <= step / 2.0 + 1e-12 * max.abs().max(1.0),
                "bits {bits}: {o} -> {b}"
            );
        }
    }
    // Out-of-range values are refused when writing.
    let c = ColumnCoding::new(C::Real32Quant)
        .with_bits_on_storage(8)
        .with_value_range(0.0, 1.0);
    assert!(matches!(
        encode_values(&c, &[1.5f64], &mut Vec::new()),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        encode_values(&c, &[f32::NAN], &mut Vec::new()),
        Err(Error::InvalidArgument(_))
    ));
}

#[test]
fn real32_quant_matches_root_6_40() {
    // (bits, min, max, float written, float ROOT 6.40 reads back), from
    // tests/data/reals.json (fields quant*, written by tests/data/generate.py).
    let cases: [(u16, f64, f64, u32, u32); 21] = [
        (1, -1.0, 1.0, 0x3f800000, 0x3f800000),      // quant1[0]
        (1, -1.0, 1.0, 0xbf4ccccd, 0xbf800000),      // quant1[2]
        (1, -1.0, 1.0, 0x3f7fffde, 0x3f800000),      // quant1[5]
        (8, 0.0, 1.0, 0x3e800000, 0x3e808081),       // quant8[0]
        (8, 0.0, 1.0, 0x3f800000, 0x3f800000),       // quant8[2]
        (8, 0.0, 1.0, 0x3f666666, 0x3f65e5e6),       // quant8[5]
        (16, -100.0, 100.0, 0xc2c7ffe6, 0xc2c80000), // quant16[0]
        (16, -100.0, 100.0, 0xc2c80000, 0xc2c80000), // quant16[2]
        (16, -100.0, 100.0, 0xc2a00000, 0xc29fff38), // quant16[5]
        (20, -1000000.0, 1000000.0, 0x00000000, 0x3f74240f), // quant20[0]
        (20, -1000000.0, 1000000.0, 0x49435000, 0x4943500f), // quant20[2]
        (20, -1000000.0, 1000000.0, 0xc97423e0, 0xc97423e1), // quant20[5]
        (32, -1.0, 1.0, 0xbeaaaaab, 0xbeaaaaab),     // quant32[0]
        (32, -1.0, 1.0, 0xbf7fffde, 0xbf7fffde),     // quant32[2]
        (32, -1.0, 1.0, 0x3f800000, 0x3f800000),     // quant32[5]
        (12, -0.5, 1000.0, 0x42c7199a, 0x42c75826),  // quant12_asym[0]
        (12, -0.5, 1000.0, 0x43a68000, 0x43a68000),  // quant12_asym[2]
        (12, -0.5, 1000.0, 0x4379a000, 0x4379afa3),  // quant12_asym[5]
        (
            24,
            9.999999974752427e-07,
            1.9999999949504854e-06,
            0x360637b9,
            0x360637b9,
        ), // quant24_tiny[0]
        (
            24,
            9.999999974752427e-07,
            1.9999999949504854e-06,
            0x35a7c5ac,
            0x35a7c5ac,
        ), // quant24_tiny[2]
        (
            24,
            9.999999974752427e-07,
            1.9999999949504854e-06,
            0x35c9539c,
            0x35c9539c,
        ), // quant24_tiny[5]
    ];
    for (bits, min, max, written, expected) in cases {
        let c = ColumnCoding::new(C::Real32Quant)
            .with_bits_on_storage(bits)
            .with_value_range(min, max);
        let back: Vec<f32> = round_trip(&c, &[f32::from_bits(written)]);
        assert_eq!(
            back[0].to_bits(),
            expected,
            "{bits} bits in [{min}, {max}]: {written:#010x}"
        );
    }
}

#[test]
fn index_columns() {
    let offsets32 = [0u64, 3, 3, 10, 1 << 20, u32::MAX as u64];
    let offsets64 = [0u64, 3, 3, 10, 1 << 40, u64::MAX];
    for (column_type, offsets) in [
        (C::Index32, &offsets32),
        (C::SplitIndex32, &offsets32),
        (C::Index64, &offsets64),
        (C::SplitIndex64, &offsets64),
    ] {
        let c = coding(column_type);
        let mut page = Vec::new();
        encode_index(&c, offsets, &mut page).unwrap();
        let mut out = vec![99];
        decode_index(&c, &page, offsets.len(), 0, &mut out).unwrap();
        assert_eq!(out[0], 99, "appends");
        assert_eq!(&out[1..], offsets, "{column_type}");
    }
    // The worked example of `delta`: [3, 5, 5, 9] as SplitIndex32.
    let page = [3, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    let mut out = Vec::new();
    decode_index(&coding(C::SplitIndex32), &page, 4, 0, &mut out).unwrap();
    assert_eq!(out, [3, 5, 5, 9]);
    // Decreasing offsets wrap in the column's width and come back.
    for column_type in [C::SplitIndex32, C::SplitIndex64] {
        let offsets = [10u64, 5, 0, 7];
        let mut page = Vec::new();
        encode_index(&coding(column_type), &offsets, &mut page).unwrap();
        let mut out = Vec::new();
        decode_index(&coding(column_type), &page, 4, 0, &mut out).unwrap();
        assert_eq!(out, offsets);
    }
    // A SplitIndex32 sum wraps at 32 bits: deltas [u32::MAX, 2] give [u32::MAX, 1].
    let page = [0xFF, 0x02, 0xFF, 0x00, 0xFF, 0x00, 0xFF, 0x00];
    let mut out = Vec::new();
    decode_index(&coding(C::SplitIndex32), &page, 2, 0, &mut out).unwrap();
    assert_eq!(out, [u32::MAX as u64, 1]);
    // A page past the cluster's first entries: a wide first end offset,
    // then small steps (the low byte plane alone), and the same near
    // 2^32, where a SplitIndex32 sum wraps.
    for (column_type, start) in [
        (C::SplitIndex32, 1_000_000u64),
        (C::SplitIndex64, 1 << 40),
        (C::SplitIndex32, u32::MAX as u64 - 300),
    ] {
        let steps = [0u64, 4, 255, 0, 1, 200];
        let mut offsets: Vec<u64> = steps
            .iter()
            .scan(start, |end, &k| {
                *end += k;
                Some(*end)
            })
            .collect();
        let mut page = Vec::new();
        encode_index(&coding(column_type), &offsets, &mut page).unwrap();
        if column_type == C::SplitIndex32 {
            offsets.iter_mut().for_each(|o| *o &= u64::from(u32::MAX));
        }
        let mut out = Vec::new();
        decode_index(&coding(column_type), &page, offsets.len(), 0, &mut out).unwrap();
        assert_eq!(out, offsets, "{column_type} from {start}");
    }
    // Each page sums from zero.
    let mut out = Vec::new();
    decode_index(
        &coding(C::SplitIndex64),
        &[5, 0, 0, 0, 0, 0, 0, 0],
        1,
        0,
        &mut out,
    )
    .unwrap();
    decode_index(
        &coding(C::SplitIndex64),
        &[5, 0, 0, 0, 0, 0, 0, 0],
        1,
        0,
        &mut out,
    )
    .unwrap();
    assert_eq!(out, [5, 5]);
}

#[test]
fn switch_columns() {
    // Index 5 with tag 2, then index 2^40 + 1 with tag 0: plain, not split.
    let page = [
        5, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, //
        1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0,
    ];
    let (mut index, mut tag) = (Vec::new(), Vec::new());
    decode_switch(&coding(C::Switch), &page, 2, 0, &mut index, &mut tag).unwrap();
    assert_eq!(index, [5, (1 << 40) + 1]);
    assert_eq!(tag, [2, 0]);
    let mut again = Vec::new();
    encode_switch(&index, &tag, &mut again).unwrap();
    assert_eq!(again, page);
    assert!(encode_switch(&[1], &[], &mut Vec::new()).is_err());
}

#[test]
fn bit_columns() {
    let c = coding(C::Bit);
    // [1, 0, 1, 1, 0, 0, 0, 0, 1] -> 0D 01.
    let bools = [true, false, true, true, false, false, false, false, true];
    let mut page = Vec::new();
    encode_bits(bools.iter().copied(), &mut page);
    assert_eq!(page, [0x0D, 0x01]);
    let mut out = BitVec::new();
    decode_bits(&c, &page, 9, 0, &mut out).unwrap();
    assert_eq!(out.iter().collect::<Vec<_>>(), bools);
    // Stale high bits of the last byte are ignored, at any bit offset.
    let mut out: BitVec = [true, false, true].into_iter().collect();
    decode_bits(&c, &[0xFF], 3, 0, &mut out).unwrap();
    assert_eq!(out.len(), 6);
    assert_eq!(out.as_bytes(), [0b0011_1101]);
    // Integers read from a Bit column are 0 or 1.
    assert_eq!(
        values_or_panic::<i32>(&c, &[0x0D, 0xFF], 9),
        [1, 0, 1, 1, 0, 0, 0, 0, 1]
    );
    // Encoding an integer column as bits: not zero is true.
    let mut page = Vec::new();
    encode_values(&c, &[0i64, 5, -1, 0], &mut page).unwrap();
    assert_eq!(page, [0b0110]);
}

#[test]
fn booleans_from_integer_columns() {
    let values = [0i64, 5, -1, 0, i64::MIN, 1 << 40, 256];
    let expected = [false, true, true, false, true, true, true];
    for column_type in [C::Int64, C::SplitInt64, C::UInt64, C::SplitUInt64] {
        let c = coding(column_type);
        let mut page = Vec::new();
        encode_values(&c, &values, &mut page).unwrap();
        let mut out = BitVec::new();
        decode_bits(&c, &page, values.len(), 0, &mut out).unwrap();
        assert_eq!(out.iter().collect::<Vec<_>>(), expected, "{column_type}");
    }
    for column_type in [
        C::Int8,
        C::UInt8,
        C::Char,
        C::Int16,
        C::SplitInt16,
        C::Int32,
        C::SplitUInt32,
    ] {
        let c = coding(column_type);
        let small = [0i64, 5, -1, 0];
        let mut page = Vec::new();
        encode_values(&c, &small, &mut page).unwrap();
        let mut out = BitVec::new();
        decode_bits(&c, &page, small.len(), 0, &mut out).unwrap();
        assert_eq!(
            out.iter().collect::<Vec<_>>(),
            [false, true, true, false],
            "{column_type}"
        );
    }
}

#[test]
fn decoding_appends() {
    let c = coding(C::SplitUInt32);
    let mut out = vec![7u32];
    let mut page = Vec::new();
    encode_values(&c, &[1u32, 2], &mut page).unwrap();
    decode_values(&c, &page, 2, 0, &mut out).unwrap();
    decode_values(&c, &page, 2, 0, &mut out).unwrap();
    assert_eq!(out, [7, 1, 2, 1, 2]);
}

#[test]
fn arbitrary_bytes_never_panic() {
    let mut next = xorshift(0x2545_F491_4F6C_DD1D);
    for column_type in all_types() {
        let c = coding(column_type);
        for n in [0usize, 1, 3, 64, 65, 200] {
            let Some(len) = c.page_len(n) else { continue };
            let page: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            let _ = values::<f32>(&c, &page, n);
            let _ = values::<f64>(&c, &page, n);
            let _ = values::<i8>(&c, &page, n);
            let _ = values::<u64>(&c, &page, n);
            let _ = decode_index(&c, &page, n, 0, &mut Vec::new());
            let _ = decode_switch(&c, &page, n, 0, &mut Vec::new(), &mut Vec::new());
            let _ = decode_bits(&c, &page, n, 0, &mut BitVec::new());
            if let Ok(v) = values::<f64>(&c, &page, n) {
                if column_type == C::Real32Quant {
                    assert!(v.iter().all(|x| (-10.0..=10.0).contains(x)));
                }
            }
        }
    }
}

/// Part of a page decodes to the same values as that part of the whole page,
/// for every type, across block edges; a part outside the page is an error.
#[test]
fn parts_of_pages_equal_the_parts_of_whole_pages() {
    fn check<T: NativeType + std::fmt::Debug>(column_type: ColumnType, page: &[u8], n: usize) {
        let c = coding(column_type);
        let Ok(whole) = values::<T>(&c, page, n) else {
            return;
        };
        let edges = [0, 1, 7, BLOCK - 1, BLOCK, BLOCK + 3, n / 2, n - 1, n];
        for &a in &edges {
            for &b in &edges {
                if a > b || b > n {
                    continue;
                }
                let mut part = vec![T::default(); 2]; // appended after what is there
                decode_values_in(&c, page, n, a..b, 0, &mut part).unwrap();
                assert_eq!(&part[2..], &whole[a..b], "{column_type} {a}..{b}");
            }
        }
        let mut out = Vec::<T>::new();
        assert!(decode_values_in(&c, page, n, 3..n + 1, 0, &mut out).is_err());
        #[allow(clippy::reversed_empty_ranges)]
        let reversed = 5..3;
        assert!(decode_values_in(&c, page, n, reversed, 0, &mut out).is_err());
    }
    let n = 3 * BLOCK + 5;
    for column_type in all_types() {
        if column_type == C::Switch || column_type.is_index() {
            continue;
        }
        let page = sample_page(column_type, n);
        check::<f64>(column_type, &page, n);
        check::<f32>(column_type, &page, n);
        check::<i64>(column_type, &page, n);
        check::<u8>(column_type, &page, n);
        check::<i16>(column_type, &page, n);
    }
}

/// Part of a page read as booleans equals that part of the whole page, for
/// every column type that reads as booleans, across byte and block edges; a
/// part outside the page is an error.
#[test]
fn parts_of_boolean_pages_equal_the_parts_of_whole_pages() {
    let n = 3 * BLOCK + 5;
    let edges = [0, 1, 7, 8, 9, BLOCK - 1, BLOCK, BLOCK + 3, n / 2, n - 1, n];
    let mut checked = 0;
    for column_type in all_types() {
        let c = coding(column_type);
        let page = sample_page(column_type, n);
        let mut whole = BitVec::new();
        if decode_bits(&c, &page, n, 0, &mut whole).is_err() {
            continue;
        }
        let whole: Vec<bool> = whole.iter().collect();
        for &a in &edges {
            for &b in &edges {
                if a > b {
                    continue;
                }
                // Appended after bits already there, which fill part of a byte.
                let mut part: BitVec = [true, false, true].into_iter().collect();
                decode_bits_in(&c, &page, n, a..b, 0, &mut part).unwrap();
                let part: Vec<bool> = part.iter().collect();
                assert_eq!(&part[..3], [true, false, true], "{column_type}");
                assert_eq!(&part[3..], &whole[a..b], "{column_type} {a}..{b}");
            }
        }
        let mut out = BitVec::new();
        assert!(decode_bits_in(&c, &page, n, 3..n + 1, 0, &mut out).is_err());
        checked += 1;
    }
    assert!(
        checked >= 10,
        "only {checked} column types read as booleans"
    );
}

#[test]
fn offsets_said_to_be_ordered_are() {
    // Pages of byte-sized steps after a first offset anywhere in the
    // column's range, with now and then a wide byte: whenever the decoder
    // says the offsets never decrease, they do not, and they are the same
    // as the general running sum gives.
    let mut next = xorshift(0x9E37_79B9_7F4A_7C15);
    for round in 0..2000 {
        let column_type = if round % 2 == 0 {
            C::SplitIndex32
        } else {
            C::SplitIndex64
        };
        let width = if column_type == C::SplitIndex32 { 4 } else { 8 };
        let n = 1 + (next() % 40) as usize;
        let mut page = vec![0u8; n * width];
        // The first delta, whole: small, large, or near the top of the width.
        for plane in 0..width {
            page[plane * n] = match round % 3 {
                0 => 0,
                1 => next() as u8,
                _ => 0xFF,
            };
        }
        page[0] = next() as u8;
        for i in 1..n {
            page[i] = next() as u8;
            if next() % 50 == 0 {
                page[(1 + (next() as usize) % (width - 1)) * n + i] = next() as u8;
            }
        }
        let mut out = Vec::new();
        let ordered = decode_index_ordered(&coding(column_type), &page, n, 0, &mut out).unwrap();
        let mut wide = Vec::new();
        if width == 4 {
            let mut sum = delta::RunningSum::<u32>::default();
            split::for_each_block::<u32>(&page, n, |block| sum.extend(block, &mut wide));
        } else {
            let mut sum = delta::RunningSum::<u64>::default();
            split::for_each_block::<u64>(&page, n, |block| sum.extend(block, &mut wide));
        }
        assert_eq!(out, wide, "round {round}");
        if ordered {
            assert!(
                out.windows(2).all(|w| w[0] <= w[1]),
                "round {round}: {out:?}"
            );
        }
    }
}

/// Streaming stores give the values of ordinary decoding: split 32-bit
/// pages of random bits (NaNs and zigzag extremes included), parts that
/// start anywhere, outputs that already hold values (so the output starts
/// at every alignment), lengths around the kernel's threshold and vector
/// width; other column types and target types take the ordinary path.
#[test]
fn streaming_stores_decode_as_ordinary_stores() {
    fn check<T: NativeType>(
        column_type: ColumnType,
        page: &[u8],
        n: usize,
        sub: Range<usize>,
        held: usize,
    ) {
        let c = coding(column_type);
        let mut expected: Vec<T> = vec![T::default(); held];
        decode_values_in(&c, page, n, sub.clone(), 0, &mut expected).unwrap();
        let mut streamed: Vec<T> = vec![T::default(); held];
        decode_values_in_streaming(&c, page, n, sub.clone(), 0, &mut streamed).unwrap();
        let bits = |v: &[T]| {
            v.iter()
                .flat_map(|x| x.to_le_bytes().as_ref().to_vec())
                .collect::<Vec<u8>>()
        };
        assert!(
            bits(&streamed) == bits(&expected),
            "{column_type} as {}, n {n}, {sub:?}, {held} held",
            T::NAME
        );
    }
    let mut next = xorshift(0x9E37_79B9_7F4A_7C15);
    let min = streaming::MIN_VALUES;
    for n in [min, min + 1, min + 15, min + 16, min + 63, 3 * min + 7] {
        let mut page: Vec<u8> = (0..4 * n).map(|_| next() as u8).collect();
        // NaN payloads and zigzag extremes (0xFFFFFFFF, 0xFFFFFFFE).
        for (k, &byte) in [0xFFu8, 0xFF, 0xFF, 0xFF, 0xFE, 0xFF, 0xFF, 0xFF]
            .iter()
            .enumerate()
        {
            page[(k % 4) * n + k / 4] = byte;
        }
        for round in 0..12 {
            let start = match round {
                0 => 0,
                1 => n - min,
                _ => (next() as usize) % (n - min + 1),
            };
            let end = if round % 3 == 0 {
                n
            } else {
                start + min + (next() as usize) % (n - start - min + 1)
            };
            let held = (next() % 17) as usize;
            check::<f32>(C::SplitReal32, &page, n, start..end, held);
            check::<u32>(C::SplitUInt32, &page, n, start..end, held);
            check::<i32>(C::SplitInt32, &page, n, start..end, held);
            check::<f64>(C::SplitReal32, &page, n, start..end, held);
            check::<i64>(C::SplitInt32, &page, n, start..end, held);
            check::<i32>(C::SplitUInt32, &page, n, start..end, held);
            check::<i16>(C::SplitInt16, &page[..2 * n], n, start..end, held);
        }
    }
    // Short parts and bad pages behave as ordinary decoding.
    let c = coding(C::SplitReal32);
    let page = vec![0u8; 4 * min];
    let mut out: Vec<f32> = Vec::new();
    assert!(decode_values_in_streaming(&c, &page, min, 0..min + 1, 0, &mut out).is_err());
    assert!(decode_values_in_streaming(&c, &page[1..], min, 0..min, 0, &mut out).is_err());
    decode_values_in_streaming(&c, &page, min, 5..9, 0, &mut out).unwrap();
    assert_eq!(out, [0.0; 4]);
}
