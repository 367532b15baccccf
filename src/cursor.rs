//! A bounds-checked reader over a byte slice.
//!
//! Every read checks the remaining length first and reports the absolute file
//! offset of the failure, so parsers never index past the data they were given.
//! Little-endian reads serve the RNTuple envelopes, big-endian reads the ROOT
//! container (file header, keys, directories, anchor).

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

use crate::error::{Error, Result};

/// A position in a byte slice, with the file offset of the slice's first byte.
#[derive(Debug, Clone)]
pub struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
    base: u64,
    what: &'static str,
}

macro_rules! read_int {
    ($le:ident, $be:ident, $t:ty) => {
        #[doc = concat!("Reads a little-endian `", stringify!($t), "`.")]
        pub fn $le(&mut self) -> Result<$t> {
            Ok(<$t>::from_le_bytes(self.array()?))
        }

        #[doc = concat!("Reads a big-endian `", stringify!($t), "`.")]
        pub fn $be(&mut self) -> Result<$t> {
            Ok(<$t>::from_be_bytes(self.array()?))
        }
    };
}

impl<'a> Cursor<'a> {
    /// A cursor over `data`, whose first byte is at file offset `base`;
    /// `what` names the structure in error messages.
    pub fn new(data: &'a [u8], base: u64, what: &'static str) -> Self {
        Self {
            data,
            pos: 0,
            base,
            what,
        }
    }

    /// Renames the structure reported in errors.
    pub fn set_what(&mut self, what: &'static str) {
        self.what = what;
    }

    /// The structure being read, as named in errors.
    pub fn what(&self) -> &'static str {
        self.what
    }

    /// Position relative to the start of the slice.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Absolute file offset of the current position.
    pub fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    /// Bytes left after the current position.
    pub fn remaining(&self) -> usize {
        self.data.len().saturating_sub(self.pos)
    }

    /// The whole underlying slice.
    pub fn data(&self) -> &'a [u8] {
        self.data
    }

    /// An error of kind [`Error::Malformed`] at the current position.
    pub fn malformed(&self, detail: impl std::fmt::Display) -> Error {
        Error::malformed(self.what, self.offset(), detail)
    }

    fn eof(&self, needed: usize) -> Error {
        Error::UnexpectedEof {
            what: self.what,
            offset: self.offset(),
            needed: needed as u64,
            available: self.remaining() as u64,
        }
    }

    /// Takes the next `n` bytes.
    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8]> {
        let out = self
            .pos
            .checked_add(n)
            .and_then(|end| self.data.get(self.pos..end))
            .ok_or_else(|| self.eof(n))?;
        self.pos += n;
        Ok(out)
    }

    /// Takes the next `n` bytes, with `n` read from the file as a `u64`.
    pub fn bytes_u64(&mut self, n: u64) -> Result<&'a [u8]> {
        match usize::try_from(n) {
            Ok(n) => self.bytes(n),
            Err(_) => Err(self.eof(usize::MAX)),
        }
    }

    /// Skips `n` bytes.
    pub fn skip(&mut self, n: usize) -> Result<()> {
        self.bytes(n).map(|_| ())
    }

    /// Moves to position `pos` (relative to the slice start), which may not
    /// lie past the end.
    pub fn seek(&mut self, pos: usize) -> Result<()> {
        if pos > self.data.len() {
            return Err(Error::UnexpectedEof {
                what: self.what,
                offset: self.base + pos as u64,
                needed: 0,
                available: 0,
            });
        }
        self.pos = pos;
        Ok(())
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N]> {
        let b = self.bytes(N)?;
        let mut out = [0u8; N];
        out.copy_from_slice(b);
        Ok(out)
    }

    /// Reads one byte.
    pub fn u8(&mut self) -> Result<u8> {
        Ok(self.array::<1>()?[0])
    }

    read_int!(u16_le, u16_be, u16);
    read_int!(i16_le, i16_be, i16);
    read_int!(u32_le, u32_be, u32);
    read_int!(i32_le, i32_be, i32);
    read_int!(u64_le, u64_be, u64);
    read_int!(i64_le, i64_be, i64);

    /// Reads a little-endian IEEE 754 double.
    pub fn f64_le(&mut self) -> Result<f64> {
        Ok(f64::from_le_bytes(self.array()?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_both_byte_orders() {
        let data = [0x01, 0x02, 0x03, 0x04];
        let mut c = Cursor::new(&data, 100, "test");
        assert_eq!(c.u16_le().unwrap(), 0x0201);
        assert_eq!(c.u16_be().unwrap(), 0x0304);
        assert_eq!(c.offset(), 104);
    }

    #[test]
    fn short_read_names_offset() {
        let data = [0u8; 3];
        let mut c = Cursor::new(&data, 10, "thing");
        c.u8().unwrap();
        let err = c.u32_le().unwrap_err();
        assert!(matches!(
            err,
            Error::UnexpectedEof {
                what: "thing",
                offset: 11,
                needed: 4,
                available: 2
            }
        ));
    }
}
