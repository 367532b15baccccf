//! Page decoding: the bytes of one decompressed page become typed values
//! (spec: "Column description" for the types, "Encodings" for the layouts).
//!
//! ```text
//!  page bytes ──┬─ Plain ─────────── little-endian values ───┐
//!   (one page,  ├─ Split ─────────── unsplit ────────────────┤── cast ──> Vec<T>
//!    n elements)├─ Split + zigzag ── unsplit, unzigzag ──────┤  (static_cast)
//!               ├─ Split + delta ─── unsplit, running sum ───┴─────────> Vec<u64>  (offsets)
//!               ├─ bit-packed ────── Bit ────────────────────────────────> BitVec
//!               │                    Real32Trunc / Real32Quant ─ real ──> Vec<f32 | f64>
//!               └─ Switch ────────── 64-bit index + 32-bit tag ─────────> Vec<u64>, Vec<u32>
//! ```
//!
//! Encodings apply inside each page, so every page decodes on its own. The
//! functions here are pure: they check that the page has exactly the bytes
//! `n` elements need, then append `n` values to the output. Each decoder
//! picks its kernel once per page; the loops over the elements are
//! monomorphic and work in fixed-size blocks the compiler can vectorise.
//!
//! Which column types can be read into which type follows ROOT's column
//! elements (tree/ntuple/src/RColumnElement.hxx): any integer column (and
//! Bit, Char) into any integer, Byte only into 8-bit integers, reals into
//! `f32` or `f64` (including `f32` from Real64), and booleans from Bit or any
//! integer column. Integer and real conversions are C++ `static_cast`s (see
//! [`NativeType`]); ROOT itself throws when an integer does not fit its
//! target or a double changes class as a float, which this reader leaves to
//! the caller.
//!
//! The `encode_*` functions are the exact inverses, for tests, fuzzing and
//! benchmarks.

// File input never panics: the parsers and decoders check every index and
// length instead (tests may unwrap).
#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::indexing_slicing
    )
)]

mod bits;
mod delta;
mod native;
mod plain;
mod real;
mod split;
mod streaming;
mod zigzag;

pub use bits::BitVec;
pub use native::NativeType;

use std::ops::Range;

use crate::descriptor::{ColumnDescriptor, ColumnType, Encoding};
use crate::error::{Error, Result};
use delta::{Delta, RunningSum};
use real::Quantizer;
use zigzag::Zigzag;

/// Number of elements the kernels handle at a time.
const BLOCK: usize = 64;

/// How one physical column is stored: what a page of it needs to decode.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ColumnCoding {
    /// The column type.
    pub column_type: ColumnType,
    /// Bits per element; fixed by the type except for Real32Trunc (10 to 31)
    /// and Real32Quant (1 to 32).
    pub bits_on_storage: u16,
    /// The inclusive `(min, max)` of a Real32Quant column.
    pub value_range: Option<(f64, f64)>,
}

impl ColumnCoding {
    /// The coding of a column of `column_type` with its natural width (the
    /// widest allowed for Real32Trunc and Real32Quant) and no value range.
    pub fn new(column_type: ColumnType) -> Self {
        Self {
            column_type,
            bits_on_storage: column_type.bits_range().map_or(0, |(_, max)| max),
            value_range: None,
        }
    }

    /// The coding of the physical column `column` as its description gives it.
    pub fn of(column: &ColumnDescriptor) -> Self {
        Self {
            column_type: column.column_type,
            bits_on_storage: column.bits_on_storage,
            value_range: column.value_range,
        }
    }

    /// Sets the bits per element.
    pub fn with_bits_on_storage(mut self, bits: u16) -> Self {
        self.bits_on_storage = bits;
        self
    }

    /// Sets the value range of a Real32Quant column.
    pub fn with_value_range(mut self, min: f64, max: f64) -> Self {
        self.value_range = Some((min, max));
        self
    }

    /// The size in bytes of a page of `n` elements, `None` if it overflows
    /// or the type is unknown.
    pub fn page_len(&self, n: usize) -> Option<usize> {
        let bits = usize::from(self.bits_on_storage);
        match self.column_type.encoding() {
            _ if !self.column_type.is_known() => None,
            Encoding::BitPacked => Some(n.checked_mul(bits)?.div_ceil(8)),
            _ => n.checked_mul(bits / 8),
        }
    }

    /// Checks the type and width, and that a page of `n` elements is `len` bytes.
    fn check_page(&self, len: usize, n: usize, offset: u64) -> Result<()> {
        let Some((lo, hi)) = self.column_type.bits_range() else {
            return Err(Error::unsupported(format!(
                "column type {}",
                self.column_type
            )));
        };
        let bits = self.bits_on_storage;
        if !(lo..=hi).contains(&bits) {
            let allowed = if lo == hi {
                format!("{lo}")
            } else {
                format!("{lo} to {hi}")
            };
            return Err(Error::malformed(
                "column coding",
                offset,
                format!(
                    "{} column with {bits} bits per element; allowed: {allowed}",
                    self.column_type
                ),
            ));
        }
        let Some(expected) = self.page_len(n) else {
            return Err(Error::malformed(
                "page",
                offset,
                format!("{n} elements of {bits} bits overflow the address space"),
            ));
        };
        if len != expected {
            return Err(Error::malformed(
                "page",
                offset,
                format!(
                    "{n} {} elements need {expected} bytes, the page has {len}",
                    self.column_type
                ),
            ));
        }
        Ok(())
    }

    /// The quantiser of a Real32Quant column, if its value range is sound.
    fn quantizer(&self, offset: u64) -> Result<Quantizer> {
        match self.value_range {
            Some((min, max)) if min.is_finite() && max.is_finite() && min <= max => {
                Ok(Quantizer::new(min, max, u32::from(self.bits_on_storage)))
            }
            Some((min, max)) => Err(Error::malformed(
                "column coding",
                offset,
                format!("Real32Quant value range [{min}, {max}] is not a finite interval"),
            )),
            None => Err(Error::malformed(
                "column coding",
                offset,
                "Real32Quant column without a value range",
            )),
        }
    }

    /// Whether the page bytes are byte-stream split.
    fn is_split(&self) -> bool {
        matches!(
            self.column_type.encoding(),
            Encoding::Split | Encoding::SplitDelta | Encoding::SplitZigzag
        )
    }
}

/// Whether [`decode_values`] can read a column of `column_type` into `T`.
pub fn can_decode_as<T: NativeType>(column_type: ColumnType) -> bool {
    use ColumnType as C;
    if T::IS_FLOAT {
        matches!(
            column_type,
            C::Real16
                | C::SplitReal16
                | C::Real32
                | C::SplitReal32
                | C::Real64
                | C::SplitReal64
                | C::Real32Trunc
                | C::Real32Quant
        )
    } else {
        match column_type {
            C::Byte => T::SIZE == 1,
            other => other == C::Bit || other == C::Char || is_integer(other),
        }
    }
}

/// Whether `column_type` holds integers (plain or split, any width).
fn is_integer(column_type: ColumnType) -> bool {
    use ColumnType as C;
    matches!(
        column_type,
        C::Int8
            | C::UInt8
            | C::Int16
            | C::UInt16
            | C::Int32
            | C::UInt32
            | C::Int64
            | C::UInt64
            | C::SplitInt16
            | C::SplitUInt16
            | C::SplitInt32
            | C::SplitUInt32
            | C::SplitInt64
            | C::SplitUInt64
    )
}

/// An error for reading `column_type` as `target`.
fn cannot_read(column_type: ColumnType, target: &str) -> Error {
    Error::unsupported(format!("reading a {column_type} column as {target}"))
}

/// Calls `f` with blocks of the values `sub` of the page, plain or split.
#[inline]
fn for_each<S: NativeType>(
    split: bool,
    src: &[u8],
    n: usize,
    sub: Range<usize>,
    f: impl FnMut(&[S]),
) {
    if split {
        split::for_each_block_in(src, n, sub, f);
    } else {
        let bytes = src.get(sub.start * S::SIZE..sub.end * S::SIZE);
        plain::for_each_block(bytes.unwrap_or_default(), f);
    }
}

/// Appends the values `sub` of the page, cast to `T`.
#[inline]
fn cast_values<S: NativeType, T: NativeType>(
    split: bool,
    src: &[u8],
    n: usize,
    sub: Range<usize>,
    out: &mut Vec<T>,
) {
    map_values(split, src, n, sub, out, |s: S| s.cast::<T>());
}

/// Appends `map` of the values `sub` of the page.
#[inline]
fn map_values<S: NativeType, T>(
    split: bool,
    src: &[u8],
    n: usize,
    sub: Range<usize>,
    out: &mut Vec<T>,
    map: impl Fn(S) -> T,
) {
    if split {
        split::extend_in(src, n, sub, out, map);
    } else {
        for_each::<S>(false, src, n, sub, |block| {
            out.extend(block.iter().map(|&s| map(s)))
        });
    }
}

/// Appends the zigzag-coded values `sub` of the page, cast to `T`.
#[inline]
fn zigzag_values<U: Zigzag, T: NativeType>(
    src: &[u8],
    n: usize,
    sub: Range<usize>,
    out: &mut Vec<T>,
) {
    split::extend_in(src, n, sub, out, |u: U| u.decode().cast::<T>());
}

/// Checks that the elements `sub` lie within a page of `n`; `offset` is
/// the page's file offset, for errors.
fn check_sub(sub: &Range<usize>, n: usize, offset: u64) -> Result<()> {
    if sub.start > sub.end || sub.end > n {
        return Err(Error::malformed(
            "page",
            offset,
            format!("elements {sub:?} of a page of {n}"),
        ));
    }
    Ok(())
}

/// Decodes the `n` elements of one page `src` of a column coded as `coding`,
/// converting them to `T`, and appends them to `out`. `offset` is the
/// page's file offset, for errors.
///
/// Fails with [`Error::Malformed`] if `src` is not exactly the size of `n`
/// elements (`ceil(n * bits / 8)` bytes for bit-packed types) or the coding
/// is inconsistent, and with [`Error::Unsupported`] if the column cannot be
/// read as `T` (see [`can_decode_as`]).
pub fn decode_values<T: NativeType>(
    coding: &ColumnCoding,
    src: &[u8],
    n: usize,
    offset: u64,
    out: &mut Vec<T>,
) -> Result<()> {
    decode_values_in(coding, src, n, 0..n, offset, out)
}

/// Like [`decode_values`], but appends only the elements `sub` of the page
/// (`sub` within `0..n`). Byte-aligned encodings read only the bytes of
/// those elements.
pub fn decode_values_in<T: NativeType>(
    coding: &ColumnCoding,
    src: &[u8],
    n: usize,
    sub: Range<usize>,
    offset: u64,
    out: &mut Vec<T>,
) -> Result<()> {
    use ColumnType as C;
    coding.check_page(src.len(), n, offset)?;
    check_sub(&sub, n, offset)?;
    if !can_decode_as::<T>(coding.column_type) {
        return Err(cannot_read(coding.column_type, T::NAME));
    }
    if coding.column_type == C::Real32Quant {
        coding.quantizer(offset)?;
    }
    let split = coding.is_split();
    let bits = u32::from(coding.bits_on_storage);
    // `sub` is bounded by the page: at most 8 elements per byte.
    out.reserve(sub.len());
    match coding.column_type {
        C::Bit => bits::extend_unpacked(src, sub, 1, out, |bit| T::from_int(u64::from(bit))),
        C::Byte | C::UInt8 => cast_values::<u8, T>(false, src, n, sub, out),
        // ROOT reads `char`, which is signed on the platforms it mostly runs on.
        C::Char | C::Int8 => cast_values::<i8, T>(false, src, n, sub, out),
        C::Int16 => cast_values::<i16, T>(false, src, n, sub, out),
        C::UInt16 | C::SplitUInt16 => cast_values::<u16, T>(split, src, n, sub, out),
        C::Int32 => cast_values::<i32, T>(false, src, n, sub, out),
        C::UInt32 | C::SplitUInt32 => cast_values::<u32, T>(split, src, n, sub, out),
        C::Int64 => cast_values::<i64, T>(false, src, n, sub, out),
        C::UInt64 | C::SplitUInt64 => cast_values::<u64, T>(split, src, n, sub, out),
        C::SplitInt16 => zigzag_values::<u16, T>(src, n, sub, out),
        C::SplitInt32 => zigzag_values::<u32, T>(src, n, sub, out),
        C::SplitInt64 => zigzag_values::<u64, T>(src, n, sub, out),
        C::Real16 | C::SplitReal16 => map_values(split, src, n, sub, out, |h: u16| {
            T::from_f32(real::half_to_f32(h))
        }),
        C::Real32 | C::SplitReal32 => cast_values::<f32, T>(split, src, n, sub, out),
        C::Real64 | C::SplitReal64 => cast_values::<f64, T>(split, src, n, sub, out),
        C::Real32Trunc => bits::extend_unpacked(src, sub, bits, out, |item| {
            T::from_f32(real::trunc_to_f32(item, bits))
        }),
        C::Real32Quant => {
            let q = coding.quantizer(offset)?;
            bits::extend_unpacked(src, sub, bits, out, |item| T::from_f64(q.unquantize(item)));
        }
        other => return Err(cannot_read(other, T::NAME)),
    }
    Ok(())
}

/// Like [`decode_values_in`], but writes many values of split 32-bit reals
/// and integers read as their own type with streaming stores, which bypass
/// the cache: for output that is read, if at all, after the cache has moved
/// on (see `streaming.rs`). Other columns and types decode as there.
pub(crate) fn decode_values_in_streaming<T: NativeType>(
    coding: &ColumnCoding,
    src: &[u8],
    n: usize,
    sub: Range<usize>,
    offset: u64,
    out: &mut Vec<T>,
) -> Result<()> {
    use ColumnType as C;
    let bits_kept = match coding.column_type {
        C::SplitReal32 => T::NAME == "f32",
        C::SplitUInt32 => T::NAME == "u32",
        C::SplitInt32 => T::NAME == "i32",
        _ => false,
    };
    if bits_kept && sub.len() >= streaming::MIN_VALUES {
        coding.check_page(src.len(), n, offset)?;
        check_sub(&sub, n, offset)?;
        let zigzag = coding.column_type == C::SplitInt32;
        if streaming::extend_u32_bits(src, n, sub.clone(), out, zigzag) {
            return Ok(());
        }
    }
    decode_values_in(coding, src, n, sub, offset, out)
}

/// Decodes the `n` cluster-relative end offsets of one page `src` of an
/// (Split)Index32 or (Split)Index64 column and appends them to `out`.
/// The split kinds are delta-coded, summed from zero within the page, in
/// the column's width. `offset` is the page's file offset, for errors.
pub fn decode_index(
    coding: &ColumnCoding,
    src: &[u8],
    n: usize,
    offset: u64,
    out: &mut Vec<u64>,
) -> Result<()> {
    decode_index_ordered(coding, src, n, offset, out).map(|_| ())
}

/// Like [`decode_index`], and tells whether the offsets appended are known
/// not to decrease without looking at them again: true for pages whose
/// deltas past the first are bytes, false (unknown) for the others.
pub(crate) fn decode_index_ordered(
    coding: &ColumnCoding,
    src: &[u8],
    n: usize,
    offset: u64,
    out: &mut Vec<u64>,
) -> Result<bool> {
    use ColumnType as C;
    coding.check_page(src.len(), n, offset)?;
    fn sum<S: Delta>(src: &[u8], n: usize, out: &mut Vec<u64>) -> bool {
        if let Some((first, low)) = narrow_index_page::<S>(src, n) {
            out.push(first);
            RunningSum::starting_at(first).extend_narrow(low.get(1..).unwrap_or_default(), out);
            return true;
        }
        let mut running = RunningSum::<S>::default();
        split::for_each_block::<S>(src, n, |block| running.extend(block, out));
        false
    }
    match coding.column_type {
        C::Index32 => {
            out.reserve(n);
            plain::for_each_block::<u32>(src, |block| {
                out.extend(block.iter().map(|&v| u64::from(v)))
            });
        }
        C::Index64 => {
            out.reserve(n);
            plain::for_each_block::<u64>(src, |block| out.extend_from_slice(block));
        }
        C::SplitIndex32 => {
            out.reserve(n);
            return Ok(sum::<u32>(src, n, out));
        }
        C::SplitIndex64 => {
            out.reserve(n);
            return Ok(sum::<u64>(src, n, out));
        }
        other => return Err(cannot_read(other, "offsets")),
    }
    Ok(false)
}

/// The first end offset and the low byte plane of the `n`-element page
/// `src` of a split index column, when the page's deltas past the first fit
/// a byte: end `i` is then the first plus the plane's bytes `1..=i`, and
/// the ends never decrease. `None` for other pages and other column types.
/// `offset` is the page's file offset, for errors.
pub(crate) fn narrow_index<'a>(
    coding: &ColumnCoding,
    src: &'a [u8],
    n: usize,
    offset: u64,
) -> Result<Option<(u64, &'a [u8])>> {
    coding.check_page(src.len(), n, offset)?;
    Ok(match coding.column_type {
        ColumnType::SplitIndex32 => narrow_index_page::<u32>(src, n),
        ColumnType::SplitIndex64 => narrow_index_page::<u64>(src, n),
        _ => None,
    })
}

/// [`narrow_index`] of a page of deltas of type `S`: collections of fewer
/// than 256 elements per entry, where past the first delta only the low
/// byte plane holds anything. The sum must not pass the column's width,
/// where its own sum would wrap: below that, a sum of bytes never decreases.
fn narrow_index_page<S: Delta>(src: &[u8], n: usize) -> Option<(u64, &[u8])> {
    let limit = if S::SIZE == 8 {
        u64::MAX
    } else {
        u64::from(u32::MAX)
    };
    delta::narrow_split::<S>(src, n).filter(|&(first, _)| {
        first
            .checked_add((n as u64).saturating_mul(255))
            .is_some_and(|m| m <= limit)
    })
}

/// Decodes the `n` elements of one page `src` of a Switch column, appending
/// each element's 64-bit index to `index` and its 32-bit tag to `tag`.
/// `offset` is the page's file offset, for errors.
pub fn decode_switch(
    coding: &ColumnCoding,
    src: &[u8],
    n: usize,
    offset: u64,
    index: &mut Vec<u64>,
    tag: &mut Vec<u32>,
) -> Result<()> {
    coding.check_page(src.len(), n, offset)?;
    if coding.column_type != ColumnType::Switch {
        return Err(cannot_read(coding.column_type, "switch"));
    }
    index.reserve(n);
    tag.reserve(n);
    plain::decode_switch(src, index, tag);
    Ok(())
}

/// Decodes the `n` booleans of one page `src` and appends them to `out`:
/// the bits of a Bit column, or "not zero" for an integer or Char column.
/// `offset` is the page's file offset, for errors.
pub fn decode_bits(
    coding: &ColumnCoding,
    src: &[u8],
    n: usize,
    offset: u64,
    out: &mut BitVec,
) -> Result<()> {
    decode_bits_in(coding, src, n, 0..n, offset, out)
}

/// As [`decode_bits`], for the elements `sub` of the page only: a batch that
/// takes part of a page decodes that part, not the whole page.
pub fn decode_bits_in(
    coding: &ColumnCoding,
    src: &[u8],
    n: usize,
    sub: Range<usize>,
    offset: u64,
    out: &mut BitVec,
) -> Result<()> {
    use ColumnType as C;
    coding.check_page(src.len(), n, offset)?;
    check_sub(&sub, n, offset)?;
    fn nonzero<S: NativeType>(
        split: bool,
        src: &[u8],
        n: usize,
        sub: Range<usize>,
        out: &mut BitVec,
    ) {
        out.reserve(sub.len());
        for_each::<S>(split, src, n, sub, |block| {
            out.extend(block.iter().map(|s| s.is_nonzero()))
        });
    }
    // Zigzag maps zero to zero, so the stored codes tell zero apart as well.
    let split = coding.is_split();
    match coding.column_type {
        C::Bit => out.extend_from_bits(src, sub.start, sub.len()),
        C::Char | C::Int8 | C::UInt8 => nonzero::<u8>(false, src, n, sub, out),
        C::Int16 | C::UInt16 | C::SplitInt16 | C::SplitUInt16 => {
            nonzero::<u16>(split, src, n, sub, out)
        }
        C::Int32 | C::UInt32 | C::SplitInt32 | C::SplitUInt32 => {
            nonzero::<u32>(split, src, n, sub, out)
        }
        C::Int64 | C::UInt64 | C::SplitInt64 | C::SplitUInt64 => {
            nonzero::<u64>(split, src, n, sub, out)
        }
        other => return Err(cannot_read(other, "bool")),
    }
    Ok(())
}

/// Appends `values` to `out` as `S`, plain or split.
fn put<S: NativeType>(split: bool, values: impl Iterator<Item = S> + Clone, out: &mut Vec<u8>) {
    if split {
        split::encode(values, out);
    } else {
        plain::encode(values, out);
    }
}

/// Encodes `values` as one page of a column coded as `coding` and appends
/// the page bytes to `out`; the inverse of [`decode_values`], with the same
/// conversions (as ROOT's writers cast, e.g. `i64` into an Int32 column).
///
/// Fails with [`Error::InvalidArgument`] for a value outside the range of a
/// Real32Quant column, as ROOT does.
pub fn encode_values<T: NativeType>(
    coding: &ColumnCoding,
    values: &[T],
    out: &mut Vec<u8>,
) -> Result<()> {
    use ColumnType as C;
    coding.check_page(coding.page_len(values.len()).unwrap_or(0), values.len(), 0)?;
    if !can_decode_as::<T>(coding.column_type) {
        return Err(Error::unsupported(format!(
            "writing {} as a {} column",
            T::NAME,
            coding.column_type
        )));
    }
    let split = coding.is_split();
    let bits = u32::from(coding.bits_on_storage);
    match coding.column_type {
        C::Bit => bits::pack(values.iter().map(|v| u32::from(v.is_nonzero())), 1, out),
        C::Byte | C::UInt8 => put(false, values.iter().map(|v| v.cast::<u8>()), out),
        C::Char | C::Int8 => put(false, values.iter().map(|v| v.cast::<i8>()), out),
        C::Int16 => put(false, values.iter().map(|v| v.cast::<i16>()), out),
        C::UInt16 | C::SplitUInt16 => put(split, values.iter().map(|v| v.cast::<u16>()), out),
        C::Int32 => put(false, values.iter().map(|v| v.cast::<i32>()), out),
        C::UInt32 | C::SplitUInt32 => put(split, values.iter().map(|v| v.cast::<u32>()), out),
        C::Int64 => put(false, values.iter().map(|v| v.cast::<i64>()), out),
        C::UInt64 | C::SplitUInt64 => put(split, values.iter().map(|v| v.cast::<u64>()), out),
        C::SplitInt16 => put(
            true,
            values.iter().map(|v| u16::encode(v.cast::<i16>())),
            out,
        ),
        C::SplitInt32 => put(
            true,
            values.iter().map(|v| u32::encode(v.cast::<i32>())),
            out,
        ),
        C::SplitInt64 => put(
            true,
            values.iter().map(|v| u64::encode(v.cast::<i64>())),
            out,
        ),
        C::Real16 | C::SplitReal16 => put(
            split,
            values.iter().map(|v| real::f32_to_half(v.cast::<f32>())),
            out,
        ),
        C::Real32 | C::SplitReal32 => put(split, values.iter().map(|v| v.cast::<f32>()), out),
        C::Real64 | C::SplitReal64 => put(split, values.iter().map(|v| v.cast::<f64>()), out),
        C::Real32Trunc => bits::pack(
            values
                .iter()
                .map(|v| real::f32_to_trunc(v.cast::<f32>(), bits)),
            bits,
            out,
        ),
        C::Real32Quant => {
            let q = coding.quantizer(0)?;
            let mut items = Vec::with_capacity(values.len());
            for v in values {
                let Some(item) = q.quantize(*v) else {
                    return Err(Error::InvalidArgument(format!(
                        "{v:?} is outside the Real32Quant range {:?}",
                        coding.value_range
                    )));
                };
                items.push(item);
            }
            bits::pack(items.into_iter(), bits, out);
        }
        other => {
            return Err(Error::unsupported(format!(
                "writing {} as a {other} column",
                T::NAME
            )))
        }
    }
    Ok(())
}

/// Encodes end offsets as one page of an (Split)Index32 or (Split)Index64
/// column; the inverse of [`decode_index`]. Index32 keeps the low 32 bits.
pub fn encode_index(coding: &ColumnCoding, offsets: &[u64], out: &mut Vec<u8>) -> Result<()> {
    use ColumnType as C;
    coding.check_page(
        coding.page_len(offsets.len()).unwrap_or(0),
        offsets.len(),
        0,
    )?;
    match coding.column_type {
        C::Index32 => plain::encode(offsets.iter().map(|&v| v as u32), out),
        C::Index64 => plain::encode(offsets.iter().copied(), out),
        C::SplitIndex32 => {
            let narrow: Vec<u32> = offsets.iter().map(|&v| v as u32).collect();
            split::encode(delta::deltas(&narrow), out);
        }
        C::SplitIndex64 => split::encode(delta::deltas(offsets), out),
        other => {
            return Err(Error::unsupported(format!(
                "writing offsets as a {other} column"
            )))
        }
    }
    Ok(())
}

/// Encodes `(index, tag)` pairs as one page of a Switch column; the inverse
/// of [`decode_switch`].
pub fn encode_switch(index: &[u64], tag: &[u32], out: &mut Vec<u8>) -> Result<()> {
    if index.len() != tag.len() {
        return Err(Error::InvalidArgument(format!(
            "{} switch indices but {} tags",
            index.len(),
            tag.len()
        )));
    }
    plain::encode_switch(index, tag, out);
    Ok(())
}

/// Encodes booleans as one page of a Bit column; the inverse of
/// [`decode_bits`].
pub fn encode_bits(values: impl IntoIterator<Item = bool>, out: &mut Vec<u8>) {
    let bits: BitVec = values.into_iter().collect();
    out.extend_from_slice(bits.as_bytes());
}

#[cfg(test)]
mod tests;
