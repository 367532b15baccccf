//! The in-memory element types pages decode into.
//!
//! Conversions between them follow C++ `static_cast`, as ROOT's column
//! elements do when a field type is wider or narrower than its column:
//! integers are sign- or zero-extended to 64 bits and then truncated
//! (`(u8) -1i32 == 255`, `(i16) 70000u32 == 4464`), reals are rounded to
//! nearest (`f64 -> f32`) or widened exactly (`f32 -> f64`).

use std::fmt;
use std::ops::{BitOr, BitOrAssign, Shl};

mod sealed {
    pub trait Sealed {}
}

/// A primitive a page can be decoded into: `u8`, `i8`, `u16`, `i16`, `u32`,
/// `i32`, `u64`, `i64`, `f32` or `f64`.
///
/// The trait is sealed; its methods serve the decoders and are not meant to
/// be called by users.
pub trait NativeType:
    Copy + Default + PartialEq + fmt::Debug + Send + Sync + 'static + sealed::Sealed
{
    /// The little-endian bytes of a value, `[u8; SIZE]`.
    type Bytes: Copy + Default + AsRef<[u8]> + AsMut<[u8]>;
    /// Size in bytes.
    const SIZE: usize;
    /// Whether this is `f32` or `f64`.
    const IS_FLOAT: bool;
    /// The Rust name of the type, for errors.
    const NAME: &'static str;

    /// The value of little-endian `bytes`.
    fn from_le_bytes(bytes: Self::Bytes) -> Self;
    /// The little-endian bytes of the value.
    fn to_le_bytes(self) -> Self::Bytes;
    /// `static_cast` from an integer, given sign- or zero-extended to 64 bits.
    fn from_int(value: u64) -> Self;
    /// `static_cast` from a single precision real.
    fn from_f32(value: f32) -> Self;
    /// `static_cast` from a double precision real.
    fn from_f64(value: f64) -> Self;
    /// `static_cast` to another native type.
    fn cast<T: NativeType>(self) -> T;
    /// Whether the value is not zero.
    fn is_nonzero(self) -> bool;
    /// The unsigned integer of the same size, for assembling values bytewise.
    type Word: Copy
        + Default
        + BitOr<Output = Self::Word>
        + BitOrAssign
        + Shl<u32, Output = Self::Word>
        + From<u8>;
    /// The value with the bits of `word`.
    fn from_word(word: Self::Word) -> Self;
    /// The value with the low `8 * SIZE` bits of `bits`.
    fn from_bits64(bits: u64) -> Self;

    /// The value of `bytes`, which hold `SIZE` little-endian bytes.
    #[inline]
    fn from_le_slice(bytes: &[u8]) -> Self {
        let mut array = Self::Bytes::default();
        for (dst, src) in array.as_mut().iter_mut().zip(bytes) {
            *dst = *src;
        }
        Self::from_le_bytes(array)
    }
}

macro_rules! native_int {
    ($t:ty, $size:literal, $wide:ty, $word:ty) => {
        impl sealed::Sealed for $t {}
        impl NativeType for $t {
            type Bytes = [u8; $size];
            type Word = $word;
            const SIZE: usize = $size;
            const IS_FLOAT: bool = false;
            const NAME: &'static str = stringify!($t);

            #[inline]
            fn from_le_bytes(bytes: Self::Bytes) -> Self {
                <$t>::from_le_bytes(bytes)
            }
            #[inline]
            fn to_le_bytes(self) -> Self::Bytes {
                <$t>::to_le_bytes(self)
            }
            #[inline]
            fn from_int(value: u64) -> Self {
                value as $t
            }
            #[inline]
            fn from_f32(value: f32) -> Self {
                value as $t
            }
            #[inline]
            fn from_f64(value: f64) -> Self {
                value as $t
            }
            #[inline]
            fn cast<T: NativeType>(self) -> T {
                // Sign- or zero-extend to 64 bits, then truncate.
                T::from_int(self as $wide as u64)
            }
            #[inline]
            fn is_nonzero(self) -> bool {
                self != 0
            }
            #[inline]
            fn from_word(word: $word) -> Self {
                word as $t
            }
            #[inline]
            fn from_bits64(bits: u64) -> Self {
                bits as $t
            }
        }
    };
}

native_int!(u8, 1, u64, u8);
native_int!(i8, 1, i64, u8);
native_int!(u16, 2, u64, u16);
native_int!(i16, 2, i64, u16);
native_int!(u32, 4, u64, u32);
native_int!(i32, 4, i64, u32);
native_int!(u64, 8, u64, u64);
native_int!(i64, 8, i64, u64);

macro_rules! native_float {
    ($t:ty, $size:literal, $bits:ty, $from_self:ident) => {
        impl sealed::Sealed for $t {}
        impl NativeType for $t {
            type Bytes = [u8; $size];
            type Word = $bits;
            const SIZE: usize = $size;
            const IS_FLOAT: bool = true;
            const NAME: &'static str = stringify!($t);

            #[inline]
            fn from_le_bytes(bytes: Self::Bytes) -> Self {
                <$t>::from_le_bytes(bytes)
            }
            #[inline]
            fn to_le_bytes(self) -> Self::Bytes {
                <$t>::to_le_bytes(self)
            }
            #[inline]
            fn from_int(value: u64) -> Self {
                value as i64 as $t
            }
            #[inline]
            fn from_f32(value: f32) -> Self {
                value as $t
            }
            #[inline]
            fn from_f64(value: f64) -> Self {
                value as $t
            }
            #[inline]
            fn cast<T: NativeType>(self) -> T {
                T::$from_self(self)
            }
            #[inline]
            fn is_nonzero(self) -> bool {
                self != 0.0
            }
            #[inline]
            fn from_word(word: $bits) -> Self {
                <$t>::from_bits(word)
            }
            #[inline]
            fn from_bits64(bits: u64) -> Self {
                <$t>::from_bits(bits as $bits)
            }
        }
    };
}

native_float!(f32, 4, u32, from_f32);
native_float!(f64, 8, u64, from_f64);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn casts_follow_static_cast() {
        assert_eq!((-1i32).cast::<u8>(), 255);
        assert_eq!(70000u32.cast::<i16>(), 4464);
        assert_eq!((-2i8).cast::<u64>(), u64::MAX - 1);
        assert_eq!(200u8.cast::<i8>(), -56);
        assert_eq!(200u8.cast::<i64>(), 200);
        assert_eq!(i64::MIN.cast::<i32>(), 0);
        assert_eq!(u64::MAX.cast::<i64>(), -1);
        assert_eq!(1.5f64.cast::<f32>(), 1.5f32);
        assert_eq!(f32::MAX.cast::<f64>(), f32::MAX as f64);
        assert!(f64::NAN.cast::<f32>().is_nan());
        assert_eq!(1e300f64.cast::<f32>(), f32::INFINITY);
    }

    #[test]
    fn same_type_casts_keep_the_bits() {
        let nan = f32::from_bits(0x7FA0_0001);
        assert_eq!(nan.cast::<f32>().to_bits(), 0x7FA0_0001);
        let nan = f64::from_bits(0x7FF4_0000_0000_0001);
        assert_eq!(nan.cast::<f64>().to_bits(), 0x7FF4_0000_0000_0001);
        assert_eq!((-0.0f32).cast::<f32>().to_bits(), 0x8000_0000);
    }

    #[test]
    fn words() {
        assert_eq!(u16::from_word(0x5678), 0x5678);
        assert_eq!(i8::from_word(0xFF), -1);
        assert_eq!(i64::from_word(u64::MAX), -1);
        assert_eq!(f32::from_word(0x3F80_0000).to_bits(), 0x3F80_0000);
        assert_eq!(
            f64::from_word(0x7FF4_0000_0000_0001).to_bits(),
            0x7FF4_0000_0000_0001
        );
    }

    #[test]
    fn le_slices() {
        assert_eq!(u32::from_le_slice(&[1, 2, 3, 4]), 0x0403_0201);
        assert_eq!(i16::from_le_slice(&[0xFF, 0xFF]), -1);
    }
}
