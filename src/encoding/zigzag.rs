//! Zigzag (spec: "Encodings"; SplitInt16, SplitInt32, SplitInt64).
//!
//! Signed integers are mapped to unsigned ones so that small magnitudes of
//! either sign get small codes, `x -> 2x` for `x >= 0` and `x -> -(2x + 1)`
//! for `x < 0`; the codes are then split:
//!
//! ```text
//!   value    0   -1    1   -2    2   ...  i16::MAX  i16::MIN
//!   code     0    1    2    3    4   ...  0xFFFE    0xFFFF
//!
//!  SplitInt16 [1, -2] -> codes [0x0002, 0x0003] -> split 02 03 00 00
//! ```
//!
//! Decoding is `(code >> 1) ^ -(code & 1)` in the unsigned type, read as
//! signed (ROOT: `CastZigzagSplitUnpack` in tree/ntuple/src/RColumnElement.hxx).

use super::native::NativeType;

/// An unsigned code type with its signed counterpart.
pub(crate) trait Zigzag: NativeType {
    type Signed: NativeType;
    /// The signed value of a code.
    fn decode(self) -> Self::Signed;
    /// The code of a signed value.
    fn encode(value: Self::Signed) -> Self;
}

macro_rules! zigzag {
    ($u:ty, $s:ty) => {
        impl Zigzag for $u {
            type Signed = $s;
            #[inline]
            fn decode(self) -> $s {
                ((self >> 1) ^ (self & 1).wrapping_neg()) as $s
            }
            #[inline]
            fn encode(value: $s) -> $u {
                ((value << 1) ^ (value >> (<$s>::BITS - 1))) as $u
            }
        }
    };
}

zigzag!(u16, i16);
zigzag!(u32, i32);
zigzag!(u64, i64);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table() {
        let pairs: [(i16, u16); 7] = [
            (0, 0),
            (-1, 1),
            (1, 2),
            (-2, 3),
            (2, 4),
            (i16::MAX, 0xFFFE),
            (i16::MIN, 0xFFFF),
        ];
        for (value, code) in pairs {
            assert_eq!(u16::encode(value), code, "{value}");
            assert_eq!(code.decode(), value, "{code}");
        }
    }

    #[test]
    fn extremes_round_trip() {
        for v in [i64::MIN, i64::MIN + 1, -1, 0, 1, i64::MAX - 1, i64::MAX] {
            assert_eq!(u64::encode(v).decode(), v);
        }
        assert_eq!(u64::encode(i64::MIN), u64::MAX);
        assert_eq!(u64::encode(i64::MAX), u64::MAX - 1);
        for v in [i32::MIN, -1, 0, i32::MAX] {
            assert_eq!(u32::encode(v).decode(), v);
        }
        // Every code decodes to something, and back.
        for code in 0..=u16::MAX {
            assert_eq!(u16::encode(code.decode()), code);
        }
    }
}
