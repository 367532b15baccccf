//! The format's checksums: XXH3-64 over envelopes, pages and anchors, and
//! XXH64 over the blocks of LZ4 chunks.
//!
//! Every page is hashed on the read path, so XXH3 uses the widest vector unit
//! the processor has (AVX2 where present, chosen at run time).

/// XXH3-64 of `data`, seed 0.
#[inline]
pub(crate) fn xxh3_64(data: &[u8]) -> u64 {
    twox_hash::XxHash3_64::oneshot(data)
}

/// XXH64 of `data` with `seed`.
#[inline]
pub(crate) fn xxh64(data: &[u8], seed: u64) -> u64 {
    twox_hash::XxHash64::oneshot(seed, data)
}

#[cfg(test)]
mod tests {
    /// Agrees with an independent implementation on inputs of every length
    /// class XXH3 treats apart (0-16, 17-128, 129-240, longer, over a stripe
    /// block).
    #[test]
    fn agrees_with_the_reference_hashes() {
        let data: Vec<u8> = (0..5000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        for len in [
            0, 1, 3, 8, 16, 17, 100, 128, 129, 240, 241, 1024, 1025, 4999, 5000,
        ] {
            let d = &data[..len];
            assert_eq!(
                super::xxh3_64(d),
                xxhash_rust::xxh3::xxh3_64(d),
                "xxh3, {len} bytes"
            );
            assert_eq!(
                super::xxh64(d, 0),
                xxhash_rust::xxh64::xxh64(d, 0),
                "xxh64, {len} bytes"
            );
            assert_eq!(
                super::xxh64(d, 7),
                xxhash_rust::xxh64::xxh64(d, 7),
                "xxh64 seeded, {len} bytes"
            );
        }
    }
}
