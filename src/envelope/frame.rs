//! Basic types, frames and locators (spec: "Basic types", "Frames",
//! "Locators and envelope links").

use crate::cursor::Cursor;
use crate::error::Result;

/// Where a block of bytes lives: `size` compressed bytes at file `offset`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Locator {
    pub size: u64,
    pub offset: u64,
}

/// An envelope link: the uncompressed length of an envelope and its locator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EnvelopeLink {
    pub length: u64,
    pub locator: Locator,
}

impl EnvelopeLink {
    /// Reads an envelope link from the cursor.
    pub fn read(cursor: &mut Cursor<'_>) -> Result<Self> {
        let length = cursor.u64_le()?;
        let locator = read_locator(cursor)?;
        Ok(Self { length, locator })
    }
}

/// Reads a string: a u32 byte count and UTF-8 bytes.
pub fn read_string(cursor: &mut Cursor<'_>) -> Result<String> {
    let at = cursor.offset();
    let len = cursor.u32_le()?;
    let bytes = cursor.bytes_u64(u64::from(len))?;
    String::from_utf8(bytes.to_vec())
        .map_err(|_| crate::error::Error::malformed(cursor.what(), at, "string is not valid UTF-8"))
}

/// Reads feature flags: 64-bit words, continued while the signed value is
/// negative. Returns the numbers of the bits set (word `i`, bit `b` is
/// feature `63 * i + b`).
pub fn read_feature_flags(cursor: &mut Cursor<'_>) -> Result<Vec<u64>> {
    let mut bits = Vec::new();
    let mut word_index = 0u64;
    loop {
        let word = cursor.u64_le()?;
        for b in 0..63 {
            if word & (1 << b) != 0 {
                bits.push(word_index * 63 + b);
            }
        }
        if (word as i64) >= 0 {
            return Ok(bits);
        }
        word_index += 1;
    }
}

/// Reads a frame header and returns a cursor limited to the frame's payload;
/// `cursor` moves past the whole frame, skipping any content this reader
/// does not know.
fn read_frame<'a>(cursor: &mut Cursor<'a>, list: bool) -> Result<(Cursor<'a>, u32)> {
    let start = cursor.position();
    let at = cursor.offset();
    let size = cursor.i64_le()?;
    if (size < 0) != list {
        let (want, got) = if list {
            ("list", "record")
        } else {
            ("record", "list")
        };
        return Err(cursor.malformed(format!(
            "expected a {want} frame at offset {at}, found a {got} frame"
        )));
    }
    let n_items = if list { cursor.u32_le()? } else { 0 };
    let header_len = cursor.position() - start;
    let size = size.unsigned_abs();
    if size < header_len as u64 {
        return Err(cursor.malformed(format!(
            "frame at offset {at} declares size {size}, smaller than its preamble"
        )));
    }
    let payload = cursor.bytes_u64(size - header_len as u64)?;
    let base = at + header_len as u64;
    Ok((Cursor::new(payload, base, cursor.what()), n_items))
}

/// Reads a record frame; returns a cursor over its payload.
pub fn read_record_frame<'a>(cursor: &mut Cursor<'a>) -> Result<Cursor<'a>> {
    read_frame(cursor, false).map(|(c, _)| c)
}

/// Reads a list frame; returns a cursor over its items and their number.
///
/// The number is checked against the bytes of the frame, `min_item_size`
/// bytes per item at least, so callers may reserve that many items.
pub fn read_list_frame<'a>(
    cursor: &mut Cursor<'a>,
    min_item_size: usize,
) -> Result<(Cursor<'a>, usize)> {
    let (inner, n) = read_frame(cursor, true)?;
    let n = n as usize;
    if n.saturating_mul(min_item_size.max(1)) > inner.remaining() {
        return Err(inner.malformed(format!(
            "list frame declares {n} items but holds only {} bytes",
            inner.remaining()
        )));
    }
    Ok((inner, n))
}

/// Reads a locator, standard or non-standard (spec: "Locators").
pub fn read_locator(cursor: &mut Cursor<'_>) -> Result<Locator> {
    let at = cursor.offset();
    let head = cursor.i32_le()?;
    if head >= 0 {
        let offset = cursor.u64_le()?;
        return Ok(Locator {
            size: head as u64,
            offset,
        });
    }
    // Non-standard: bits 0-15 the size of the locator itself, bits 16-23
    // reserved, bits 24-31 the (negative) 8-bit type.
    let head = head as u32;
    let own_size = (head & 0xFFFF) as usize;
    let kind = ((head >> 24) as u8 as i8).unsigned_abs();
    if own_size < 4 {
        return Err(cursor.malformed(format!("locator at offset {at} declares size {own_size}")));
    }
    let mut payload = Cursor::new(cursor.bytes(own_size - 4)?, at + 4, cursor.what());
    match kind {
        0x01 => {
            let size = payload.u64_le()?;
            let offset = payload.u64_le()?;
            Ok(Locator { size, offset })
        }
        other => Err(crate::error::Error::unsupported(format!(
            "locator type {other:#04x} at offset {at} of the {}",
            cursor.what()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::envelope::test_util::Writer;
    use crate::error::Error;

    #[test]
    fn record_frame_skips_unknown_tail() {
        let mut w = Writer::default();
        w.record(|w| {
            w.u32(7).u32(0xDEAD); // a known u32 and an unknown trailing u32
        })
        .u32(42);
        let mut c = Cursor::new(&w.buf, 0, "test");
        let mut rec = read_record_frame(&mut c).unwrap();
        assert_eq!(rec.u32_le().unwrap(), 7);
        assert_eq!(c.u32_le().unwrap(), 42);
    }

    #[test]
    fn list_frame_count_is_bounded_by_its_bytes() {
        let mut w = Writer::default();
        w.i64(-16).u32(1 << 30).u32(0);
        let mut c = Cursor::new(&w.buf, 0, "test");
        assert!(matches!(
            read_list_frame(&mut c, 4),
            Err(Error::Malformed { .. })
        ));
    }

    #[test]
    fn frame_size_past_end_is_eof() {
        let mut w = Writer::default();
        w.i64(1000).u32(1);
        let mut c = Cursor::new(&w.buf, 0, "test");
        assert!(matches!(
            read_record_frame(&mut c),
            Err(Error::UnexpectedEof { .. })
        ));
    }

    #[test]
    fn frame_kind_mismatch_is_malformed() {
        let mut w = Writer::default();
        w.record(|_| {});
        let mut c = Cursor::new(&w.buf, 0, "test");
        assert!(matches!(
            read_list_frame(&mut c, 1),
            Err(Error::Malformed { .. })
        ));
    }

    #[test]
    fn standard_and_large_locators() {
        let mut w = Writer::default();
        w.i32(100).u64(5000);
        // large locator: size 20 (4 + 16), reserved 0, type -1 in the top byte
        let head = (20u32) | ((-1i8 as u8 as u32) << 24);
        w.u32(head).u64(1 << 33).u64(1 << 40);
        let mut c = Cursor::new(&w.buf, 0, "test");
        assert_eq!(
            read_locator(&mut c).unwrap(),
            Locator {
                size: 100,
                offset: 5000
            }
        );
        assert_eq!(
            read_locator(&mut c).unwrap(),
            Locator {
                size: 1 << 33,
                offset: 1 << 40
            }
        );
        assert_eq!(c.remaining(), 0);
    }

    #[test]
    fn unknown_locator_type_is_unsupported() {
        let mut w = Writer::default();
        let head = 12u32 | ((-5i8 as u8 as u32) << 24);
        w.u32(head).u64(0);
        let mut c = Cursor::new(&w.buf, 0, "test");
        assert!(matches!(
            read_locator(&mut c),
            Err(Error::Unsupported { .. })
        ));
    }

    #[test]
    fn feature_flags_continue_while_negative() {
        let mut w = Writer::default();
        w.u64(1 | (1 << 63)).u64(1 << 11);
        let mut c = Cursor::new(&w.buf, 0, "test");
        assert_eq!(read_feature_flags(&mut c).unwrap(), vec![0, 74]);
    }
}
