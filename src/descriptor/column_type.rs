//! Column types (spec: "Column description").

use std::fmt;

/// The on-disk type of a column, which fixes its element size and encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ColumnType {
    /// 0x00: one bit per boolean, packed least significant bit first.
    Bit,
    /// 0x01: an uninterpreted byte.
    Byte,
    /// 0x02: an ASCII character.
    Char,
    Int8,
    UInt8,
    Int16,
    UInt16,
    Int32,
    UInt32,
    Int64,
    UInt64,
    /// 0x0B: IEEE 754 half precision.
    Real16,
    Real32,
    Real64,
    /// 0x0E: cluster-relative end offsets of a collection, 32 bits.
    Index32,
    /// 0x0F: cluster-relative end offsets of a collection, 64 bits.
    Index64,
    /// 0x10: a 64-bit index and a 32-bit dispatch tag (variants).
    Switch,
    SplitInt16,
    SplitUInt16,
    SplitInt32,
    SplitUInt32,
    SplitInt64,
    SplitUInt64,
    SplitReal16,
    SplitReal32,
    SplitReal64,
    SplitIndex32,
    SplitIndex64,
    /// 0x1C: single precision with the low mantissa bits cut off (10 to 31 bits).
    Real32Trunc,
    /// 0x1D: a real in a known range, quantised to 1 to 32 bits.
    Real32Quant,
    /// A type this reader does not know; its fields are skipped.
    Unknown(u16),
}

/// How the bytes of a page become values (spec: "Encodings").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// Little-endian values stored one after the other.
    Plain,
    /// Byte-stream split: all first bytes, then all second bytes, ...
    Split,
    /// Split, then each value is the difference from the previous one.
    SplitDelta,
    /// Split, then zigzag-decoded (signed integers).
    SplitZigzag,
    /// Bits packed least significant first (Bit, Real32Trunc, Real32Quant).
    BitPacked,
}

impl ColumnType {
    /// The type for the 16-bit code stored in the column description.
    pub fn from_code(code: u16) -> Self {
        use ColumnType::*;
        match code {
            0x00 => Bit,
            0x01 => Byte,
            0x02 => Char,
            0x03 => Int8,
            0x04 => UInt8,
            0x05 => Int16,
            0x06 => UInt16,
            0x07 => Int32,
            0x08 => UInt32,
            0x09 => Int64,
            0x0A => UInt64,
            0x0B => Real16,
            0x0C => Real32,
            0x0D => Real64,
            0x0E => Index32,
            0x0F => Index64,
            0x10 => Switch,
            0x11 => SplitInt16,
            0x12 => SplitUInt16,
            0x13 => SplitInt32,
            0x14 => SplitUInt32,
            0x15 => SplitInt64,
            0x16 => SplitUInt64,
            0x17 => SplitReal16,
            0x18 => SplitReal32,
            0x19 => SplitReal64,
            0x1A => SplitIndex32,
            0x1B => SplitIndex64,
            0x1C => Real32Trunc,
            0x1D => Real32Quant,
            other => Unknown(other),
        }
    }

    /// The 16-bit code of this type.
    pub fn code(self) -> u16 {
        use ColumnType::*;
        match self {
            Bit => 0x00,
            Byte => 0x01,
            Char => 0x02,
            Int8 => 0x03,
            UInt8 => 0x04,
            Int16 => 0x05,
            UInt16 => 0x06,
            Int32 => 0x07,
            UInt32 => 0x08,
            Int64 => 0x09,
            UInt64 => 0x0A,
            Real16 => 0x0B,
            Real32 => 0x0C,
            Real64 => 0x0D,
            Index32 => 0x0E,
            Index64 => 0x0F,
            Switch => 0x10,
            SplitInt16 => 0x11,
            SplitUInt16 => 0x12,
            SplitInt32 => 0x13,
            SplitUInt32 => 0x14,
            SplitInt64 => 0x15,
            SplitUInt64 => 0x16,
            SplitReal16 => 0x17,
            SplitReal32 => 0x18,
            SplitReal64 => 0x19,
            SplitIndex32 => 0x1A,
            SplitIndex64 => 0x1B,
            Real32Trunc => 0x1C,
            Real32Quant => 0x1D,
            Unknown(code) => code,
        }
    }

    /// Whether this reader knows the type.
    pub fn is_known(self) -> bool {
        !matches!(self, ColumnType::Unknown(_))
    }

    /// The fixed number of bits per element, or the allowed range for the
    /// types whose width is set per column (Real32Trunc, Real32Quant).
    pub fn bits_range(self) -> Option<(u16, u16)> {
        use ColumnType::*;
        Some(match self {
            Bit => (1, 1),
            Byte | Char | Int8 | UInt8 => (8, 8),
            Int16 | UInt16 | Real16 | SplitInt16 | SplitUInt16 | SplitReal16 => (16, 16),
            Int32 | UInt32 | Real32 | Index32 | SplitInt32 | SplitUInt32 | SplitReal32
            | SplitIndex32 => (32, 32),
            Int64 | UInt64 | Real64 | Index64 | SplitInt64 | SplitUInt64 | SplitReal64
            | SplitIndex64 => (64, 64),
            Switch => (96, 96),
            Real32Trunc => (10, 31),
            Real32Quant => (1, 32),
            Unknown(_) => return None,
        })
    }

    /// The encoding applied inside each page of this type.
    pub fn encoding(self) -> Encoding {
        use ColumnType::*;
        match self {
            Bit | Real32Trunc | Real32Quant => Encoding::BitPacked,
            SplitInt16 | SplitInt32 | SplitInt64 => Encoding::SplitZigzag,
            SplitUInt16 | SplitUInt32 | SplitUInt64 | SplitReal16 | SplitReal32 | SplitReal64 => {
                Encoding::Split
            }
            SplitIndex32 | SplitIndex64 => Encoding::SplitDelta,
            _ => Encoding::Plain,
        }
    }

    /// Whether this is an offset column of a collection.
    pub fn is_index(self) -> bool {
        use ColumnType::*;
        matches!(self, Index32 | Index64 | SplitIndex32 | SplitIndex64)
    }

    /// The name ROOT gives the type (`kSplitReal32` without the `k`).
    pub fn name(self) -> &'static str {
        use ColumnType::*;
        match self {
            Bit => "Bit",
            Byte => "Byte",
            Char => "Char",
            Int8 => "Int8",
            UInt8 => "UInt8",
            Int16 => "Int16",
            UInt16 => "UInt16",
            Int32 => "Int32",
            UInt32 => "UInt32",
            Int64 => "Int64",
            UInt64 => "UInt64",
            Real16 => "Real16",
            Real32 => "Real32",
            Real64 => "Real64",
            Index32 => "Index32",
            Index64 => "Index64",
            Switch => "Switch",
            SplitInt16 => "SplitInt16",
            SplitUInt16 => "SplitUInt16",
            SplitInt32 => "SplitInt32",
            SplitUInt32 => "SplitUInt32",
            SplitInt64 => "SplitInt64",
            SplitUInt64 => "SplitUInt64",
            SplitReal16 => "SplitReal16",
            SplitReal32 => "SplitReal32",
            SplitReal64 => "SplitReal64",
            SplitIndex32 => "SplitIndex32",
            SplitIndex64 => "SplitIndex64",
            Real32Trunc => "Real32Trunc",
            Real32Quant => "Real32Quant",
            Unknown(_) => "Unknown",
        }
    }
}

impl fmt::Display for ColumnType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ColumnType::Unknown(code) => write!(f, "Unknown({code:#06x})"),
            other => f.write_str(other.name()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip() {
        for code in 0..=0x1Fu16 {
            assert_eq!(ColumnType::from_code(code).code(), code);
        }
        assert!(!ColumnType::from_code(0x1E).is_known());
        assert!(ColumnType::from_code(0x1D).is_known());
    }
}
