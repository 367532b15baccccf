//! ROOT compression blocks (spec: "Compression block").
//!
//! Every page and envelope is one block. If its compressed size equals its
//! uncompressed length the bytes are stored as is; otherwise the block is a
//! series of chunks, each compressed on its own:
//!
//! ```text
//!  block:  [ chunk ][ chunk ] ...            (one chunk per <= 16 MiB of data)
//!  chunk:  a0 a1 m  c0 c1 c2  u0 u1 u2  payload (c bytes)
//!          |  |  |  |         |
//!          |  |  |  |         +-- uncompressed size, 24-bit little-endian
//!          |  |  |  +------------ compressed size (payload only), 24-bit LE
//!          |  |  +--------------- method / version byte
//!          +--+------------------ algorithm: "ZS" zstd, "L4" LZ4, "ZL" zlib,
//!                                 "XZ" xz, "CS" ROOT's old deflate
//! ```
//!
//! Worked example: a chunk header `5A 53 01 20 00 00 00 10 00` is zstd
//! ("ZS", version 1) with a 32-byte payload that inflates to 4096 bytes.
//!
//! The payload of each algorithm, as ROOT's `R__unzip` (core/zip/src/RZip.cxx)
//! and its per-algorithm helpers read it:
//! - `ZS 01`: one or more zstd frames (core/zstd/src/ZipZSTD.cxx).
//! - `L4 01`: an 8-byte XXH64 (seed 0) of the rest of the payload, stored
//!   big-endian (xxHash's canonical form), then one LZ4 block
//!   (core/lz4/src/ZipLZ4.cxx). The method byte is the LZ4 major version.
//! - `ZL 08`: a zlib stream, with its 2-byte header and Adler-32 trailer
//!   (`inflateInit`, not raw deflate).
//! - `XZ 00`: an xz stream (`lzma_stream_decoder`, core/lzma/src/ZipLZMA.cxx).
//! - `CS 08`: raw deflate (RFC 1951) with no header or trailer: ROOT's own
//!   `R__Inflate` (core/zip/src/ZInflate.c) decodes the blocks straight away.
//!
//! Every size in a chunk header is checked against the input that is really
//! there and against the output the block declares before anything is
//! decompressed or allocated, and each decompressor must produce exactly the
//! declared number of bytes.

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

use std::cell::RefCell;

use crate::error::{Error, Result};

/// Size of a chunk header: algorithm (2), method (1), compressed size (3),
/// uncompressed size (3).
const CHUNK_HEADER_LEN: usize = 9;

/// Memory the xz decoder may use. ROOT's writer caps the dictionary at a
/// quarter of the (at most 16 MiB) chunk, so 4 MiB; this leaves ample room.
const XZ_MEMORY_LIMIT: u64 = 128 << 20;

/// What a block is called in errors.
const WHAT: &str = "compression block";

/// The compression algorithm of one chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Algorithm {
    Zstd,
    Lz4,
    Zlib,
    Xz,
    /// ROOT's old algorithm ("CS"): raw deflate.
    Deflate,
}

impl Algorithm {
    /// The algorithm's name, as used in errors.
    fn name(self) -> &'static str {
        match self {
            Algorithm::Zstd => "zstd",
            Algorithm::Lz4 => "LZ4",
            Algorithm::Zlib => "zlib",
            Algorithm::Xz => "xz",
            Algorithm::Deflate => "deflate (ROOT CS)",
        }
    }

    /// The largest output a valid payload of `payload_len` bytes can have,
    /// from the limits of each format. A header claiming more is rejected
    /// before any buffer of that size exists.
    fn max_expansion(self, payload_len: usize) -> usize {
        let n = payload_len;
        match self {
            // An LZ4 sequence gains at most 255 bytes per input byte.
            Algorithm::Lz4 => n.saturating_mul(256).saturating_add(64),
            // Deflate's best case is 258 bytes per 2 bits.
            Algorithm::Zlib | Algorithm::Deflate => n.saturating_mul(1032).saturating_add(1024),
            // A zstd RLE block: 4 bytes for at most 128 KiB.
            Algorithm::Zstd => n.saturating_mul(32 << 10),
            // An LZMA2 chunk: at least 6 bytes for at most 2 MiB.
            Algorithm::Xz => n.saturating_mul(512 << 10),
        }
    }
}

/// One chunk of a compression block, with its header already checked.
#[derive(Debug, Clone, Copy)]
struct Chunk<'a> {
    algorithm: Algorithm,
    /// The compressed bytes after the 9-byte header.
    payload: &'a [u8],
    /// The number of bytes the payload inflates to.
    uncompressed_len: usize,
    /// File offset of the chunk header, for errors.
    offset: u64,
}

/// Walks the chunks of a block, checking each header against the input left
/// and the output still to fill.
struct Chunks<'a> {
    rest: &'a [u8],
    /// Output bytes not yet claimed by a chunk.
    out_left: usize,
    offset: u64,
}

impl<'a> Chunks<'a> {
    fn new(src: &'a [u8], uncompressed_len: usize, offset: u64) -> Self {
        Self {
            rest: src,
            out_left: uncompressed_len,
            offset,
        }
    }

    /// The next chunk, `None` at the end of the input. Output left over at the
    /// end is the caller's to report.
    fn next_chunk(&mut self) -> Result<Option<Chunk<'a>>> {
        if self.rest.is_empty() {
            return Ok(None);
        }
        let offset = self.offset;
        let Some((header, after)) = self.rest.split_first_chunk::<CHUNK_HEADER_LEN>() else {
            return Err(Error::UnexpectedEof {
                what: "compression chunk header",
                offset,
                needed: CHUNK_HEADER_LEN as u64,
                available: self.rest.len() as u64,
            });
        };
        let algorithm = parse_algorithm(header, offset)?;
        let compressed_len = u24(header[3], header[4], header[5]);
        let uncompressed_len = u24(header[6], header[7], header[8]);
        if compressed_len > after.len() {
            return Err(Error::UnexpectedEof {
                what: "compression chunk",
                offset: offset + CHUNK_HEADER_LEN as u64,
                needed: compressed_len as u64,
                available: after.len() as u64,
            });
        }
        if uncompressed_len > self.out_left {
            return Err(Error::malformed(
                WHAT,
                offset,
                format!(
                    "chunk inflates to {uncompressed_len} bytes but only {} of the block's length are left",
                    self.out_left
                ),
            ));
        }
        if uncompressed_len > algorithm.max_expansion(compressed_len) {
            return Err(Error::malformed(
                WHAT,
                offset,
                format!(
                    "{} chunk of {compressed_len} bytes cannot inflate to {uncompressed_len} bytes",
                    algorithm.name()
                ),
            ));
        }
        let (payload, rest) = after.split_at(compressed_len);
        self.rest = rest;
        self.out_left -= uncompressed_len;
        self.offset = offset + (CHUNK_HEADER_LEN + compressed_len) as u64;
        Ok(Some(Chunk {
            algorithm,
            payload,
            uncompressed_len,
            offset,
        }))
    }

    /// Checks the whole block without decompressing anything: every chunk
    /// header is sound and the chunks add up to exactly the block's length.
    fn validate(mut self) -> Result<()> {
        while self.next_chunk()?.is_some() {}
        self.finish()
    }

    /// Fails if the chunks did not cover the block's whole length.
    fn finish(&self) -> Result<()> {
        if self.out_left != 0 {
            return Err(Error::malformed(
                WHAT,
                self.offset,
                format!(
                    "chunks end {} bytes short of the block's length",
                    self.out_left
                ),
            ));
        }
        Ok(())
    }
}

/// A 24-bit little-endian size.
fn u24(b0: u8, b1: u8, b2: u8) -> usize {
    usize::from(b0) | usize::from(b1) << 8 | usize::from(b2) << 16
}

/// The algorithm named by a chunk header, with its method byte checked as
/// ROOT's `R__unzip` checks it.
fn parse_algorithm(header: &[u8; CHUNK_HEADER_LEN], offset: u64) -> Result<Algorithm> {
    let (algorithm, expected_method) = match [header[0], header[1]] {
        [b'Z', b'S'] => (Algorithm::Zstd, 1),
        [b'L', b'4'] => (Algorithm::Lz4, 1),
        [b'Z', b'L'] => (Algorithm::Zlib, 8),
        [b'X', b'Z'] => (Algorithm::Xz, 0),
        [b'C', b'S'] => (Algorithm::Deflate, 8),
        [a, b] => {
            return Err(Error::malformed(
                WHAT,
                offset,
                format!("unknown compression algorithm bytes {a:#04x} {b:#04x}"),
            ))
        }
    };
    let method = header[2];
    if method == expected_method {
        return Ok(algorithm);
    }
    match algorithm {
        // The method byte is the major version of the library that wrote it.
        Algorithm::Zstd | Algorithm::Lz4 => Err(Error::unsupported(format!(
            "{} chunk format version {method} at offset {offset} (only version {expected_method} is known)",
            algorithm.name()
        ))),
        _ => Err(Error::malformed(
            WHAT,
            offset,
            format!(
                "{} chunk with method byte {method:#04x}, expected {expected_method:#04x}",
                algorithm.name()
            ),
        )),
    }
}

/// Decompresses a ROOT compression block `src` whose uncompressed length is
/// `dst.len()` into `dst`. `offset` is the file offset of `src`, for errors.
/// Equal lengths mean the data is stored as is.
pub fn decompress_into(src: &[u8], dst: &mut [u8], offset: u64) -> Result<()> {
    if src.len() == dst.len() {
        dst.copy_from_slice(src);
        return Ok(());
    }
    Chunks::new(src, dst.len(), offset).validate()?;
    let mut chunks = Chunks::new(src, dst.len(), offset);
    let mut out = dst;
    while let Some(chunk) = chunks.next_chunk()? {
        // `next_chunk` checked the length against what is left of `dst`.
        let (target, rest) = std::mem::take(&mut out).split_at_mut(chunk.uncompressed_len);
        decompress_chunk(&chunk, target)?;
        out = rest;
    }
    chunks.finish()
}

/// Decompresses a ROOT compression block `src` of `uncompressed_len` bytes
/// into `dst`, replacing its contents and keeping its allocation. A block
/// of one zstd chunk (what ROOT writes for pages up to 16 MiB) is written
/// straight into the vector's spare capacity, so a fresh buffer is not
/// zeroed first; other blocks go through [`decompress_into`]. The caller has
/// checked the block with [`check_block`].
pub fn decompress_into_vec(
    src: &[u8],
    uncompressed_len: usize,
    dst: &mut Vec<u8>,
    offset: u64,
) -> Result<()> {
    let mut chunks = Chunks::new(src, uncompressed_len, offset);
    if src.len() != uncompressed_len {
        if let Some(chunk) = chunks.next_chunk()? {
            if chunk.algorithm == Algorithm::Zstd && chunks.rest.is_empty() {
                chunks.finish()?;
                dst.clear();
                dst.reserve(uncompressed_len);
                // Writes at most the spare capacity, and sets the length.
                let produced = unzstd(&chunk, dst)?;
                return check_produced(&chunk, produced);
            }
        }
    }
    dst.resize(uncompressed_len, 0);
    decompress_into(src, dst, offset)
}

/// Checks a ROOT compression block `src` that should inflate to
/// `uncompressed_len` bytes without decompressing it: every chunk header
/// must be sound, fit the input, claim no more than its algorithm can
/// produce from its payload, and the chunks must add up to exactly
/// `uncompressed_len`. A block for which this holds justifies a buffer of
/// `uncompressed_len` bytes. `offset` is the file offset of `src`, for errors.
pub fn check_block(src: &[u8], uncompressed_len: usize, offset: u64) -> Result<()> {
    if src.len() == uncompressed_len {
        return Ok(());
    }
    Chunks::new(src, uncompressed_len, offset).validate()
}

/// Decompresses a ROOT compression block `src` of `uncompressed_len` bytes
/// into a new vector. `offset` is the file offset of `src`, for errors.
///
/// The chunk headers are checked before the output is allocated, so a
/// corrupt length cannot make this allocate more than the chunks can hold.
pub fn decompress_to_vec(src: &[u8], uncompressed_len: usize, offset: u64) -> Result<Vec<u8>> {
    if src.len() == uncompressed_len {
        return Ok(src.to_vec());
    }
    check_block(src, uncompressed_len, offset)?;
    let mut out = vec![0u8; uncompressed_len];
    decompress_into(src, &mut out, offset)?;
    Ok(out)
}

/// Decompresses one chunk into `dst`, whose length is the chunk's declared
/// uncompressed size.
fn decompress_chunk(chunk: &Chunk<'_>, dst: &mut [u8]) -> Result<()> {
    let produced = match chunk.algorithm {
        Algorithm::Zstd => unzstd(chunk, dst)?,
        Algorithm::Lz4 => unlz4(chunk, dst)?,
        Algorithm::Zlib => inflate(chunk, dst, true)?,
        Algorithm::Deflate => inflate(chunk, dst, false)?,
        Algorithm::Xz => unxz(chunk, dst)?,
    };
    check_produced(chunk, produced)
}

/// Fails unless a chunk produced the bytes its header declares.
fn check_produced(chunk: &Chunk<'_>, produced: usize) -> Result<()> {
    if produced != chunk.uncompressed_len {
        return Err(Error::malformed(
            WHAT,
            chunk.offset,
            format!(
                "{} chunk produced {produced} bytes, its header declares {}",
                chunk.algorithm.name(),
                chunk.uncompressed_len
            ),
        ));
    }
    Ok(())
}

/// A [`Error::Decompress`] for `chunk`.
fn decompress_error(
    chunk: &Chunk<'_>,
    source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
) -> Error {
    Error::Decompress {
        algorithm: chunk.algorithm.name(),
        offset: chunk.offset,
        source: source.into(),
    }
}

/// Malformed: the stream holds more data than the chunk header declares.
fn too_long(chunk: &Chunk<'_>) -> Error {
    Error::malformed(
        WHAT,
        chunk.offset,
        format!(
            "{} chunk inflates to more than the {} bytes its header declares",
            chunk.algorithm.name(),
            chunk.uncompressed_len
        ),
    )
}

thread_local! {
    /// A zstd context per thread, reused across chunks.
    static ZSTD: RefCell<Option<zstd::bulk::Decompressor<'static>>> = const { RefCell::new(None) };
}

/// Decompresses a zstd chunk into `dst`: a slice, or a vector's spare
/// capacity.
fn unzstd<C: zstd::zstd_safe::WriteBuf + ?Sized>(chunk: &Chunk<'_>, dst: &mut C) -> Result<usize> {
    ZSTD.with(|cell| {
        let mut slot = cell.borrow_mut();
        let decompressor = match slot.as_mut() {
            Some(d) => d,
            None => slot
                .insert(zstd::bulk::Decompressor::new().map_err(|e| decompress_error(chunk, e))?),
        };
        // zstd stops with an error rather than write past `dst`.
        decompressor
            .decompress_to_buffer(chunk.payload, dst)
            .map_err(|e| decompress_error(chunk, e))
    })
}

fn unlz4(chunk: &Chunk<'_>, dst: &mut [u8]) -> Result<usize> {
    let Some((stored, block)) = chunk.payload.split_first_chunk::<8>() else {
        return Err(Error::UnexpectedEof {
            what: "LZ4 chunk checksum",
            offset: chunk.offset + CHUNK_HEADER_LEN as u64,
            needed: 8,
            available: chunk.payload.len() as u64,
        });
    };
    let expected = u64::from_be_bytes(*stored);
    let actual = crate::checksum::xxh64(block, 0);
    crate::error::verify_checksum("LZ4 chunk", chunk.offset, expected, actual)?;
    lz4_flex::block::decompress_into(block, dst).map_err(|e| decompress_error(chunk, e))
}

/// zlib (`zlib_header`) or raw deflate.
fn inflate(chunk: &Chunk<'_>, dst: &mut [u8], zlib_header: bool) -> Result<usize> {
    use flate2::{FlushDecompress, Status};
    let mut stream = flate2::Decompress::new(zlib_header);
    loop {
        let (consumed, produced) = (stream.total_in() as usize, stream.total_out() as usize);
        let input = chunk.payload.get(consumed..).unwrap_or_default();
        let output = dst.get_mut(produced..).unwrap_or_default();
        let output_full = output.is_empty();
        let status = stream
            .decompress(input, output, FlushDecompress::Finish)
            .map_err(|e| decompress_error(chunk, e))?;
        let progressed =
            stream.total_in() as usize != consumed || stream.total_out() as usize != produced;
        match status {
            Status::StreamEnd => return Ok(stream.total_out() as usize),
            _ if output_full => return Err(too_long(chunk)),
            _ if !progressed => {
                return Err(decompress_error(
                    chunk,
                    "stream ends before its end-of-stream marker",
                ))
            }
            _ => {}
        }
    }
}

fn unxz(chunk: &Chunk<'_>, dst: &mut [u8]) -> Result<usize> {
    use liblzma::stream::{Action, Status, Stream};
    let mut stream =
        Stream::new_stream_decoder(XZ_MEMORY_LIMIT, 0).map_err(|e| decompress_error(chunk, e))?;
    loop {
        let (consumed, produced) = (stream.total_in() as usize, stream.total_out() as usize);
        let input = chunk.payload.get(consumed..).unwrap_or_default();
        let output = dst.get_mut(produced..).unwrap_or_default();
        let output_full = output.is_empty();
        let status = stream
            .process(input, output, Action::Finish)
            .map_err(|e| decompress_error(chunk, e))?;
        let progressed =
            stream.total_in() as usize != consumed || stream.total_out() as usize != produced;
        match status {
            Status::StreamEnd => return Ok(stream.total_out() as usize),
            _ if output_full => return Err(too_long(chunk)),
            _ if !progressed => {
                return Err(decompress_error(
                    chunk,
                    "stream ends before its end-of-stream marker",
                ))
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// Test data that compresses well but not trivially.
    fn sample(len: usize) -> Vec<u8> {
        (0..len)
            .map(|i| ((i * 7) % 251) as u8 ^ ((i / 1000) as u8))
            .collect()
    }

    /// A chunk header followed by `payload`.
    fn chunk(algorithm: &[u8; 2], method: u8, payload: &[u8], uncompressed_len: usize) -> Vec<u8> {
        let c = payload.len();
        let u = uncompressed_len;
        let mut out = vec![
            algorithm[0],
            algorithm[1],
            method,
            c as u8,
            (c >> 8) as u8,
            (c >> 16) as u8,
            u as u8,
            (u >> 8) as u8,
            (u >> 16) as u8,
        ];
        out.extend_from_slice(payload);
        out
    }

    fn zstd_chunk(data: &[u8]) -> Vec<u8> {
        chunk(
            b"ZS",
            1,
            &zstd::bulk::compress(data, 5).unwrap(),
            data.len(),
        )
    }

    fn lz4_chunk(data: &[u8]) -> Vec<u8> {
        let block = lz4_flex::block::compress(data);
        let mut payload = xxhash_rust::xxh64::xxh64(&block, 0).to_be_bytes().to_vec();
        payload.extend_from_slice(&block);
        chunk(b"L4", 1, &payload, data.len())
    }

    fn zlib_chunk(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(data).unwrap();
        chunk(b"ZL", 8, &e.finish().unwrap(), data.len())
    }

    fn deflate_chunk(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(data).unwrap();
        chunk(b"CS", 8, &e.finish().unwrap(), data.len())
    }

    fn xz_chunk(data: &[u8]) -> Vec<u8> {
        chunk(b"XZ", 0, &liblzma::encode_all(data, 6).unwrap(), data.len())
    }

    /// Builds a one-chunk block of `data`.
    type MakeChunk = fn(&[u8]) -> Vec<u8>;

    fn all_kinds() -> [(&'static str, MakeChunk); 5] {
        [
            ("zstd", zstd_chunk),
            ("lz4", lz4_chunk),
            ("zlib", zlib_chunk),
            ("deflate", deflate_chunk),
            ("xz", xz_chunk),
        ]
    }

    #[test]
    fn stored_block_is_copied() {
        let data = sample(100);
        let mut out = vec![0; 100];
        decompress_into(&data, &mut out, 0).unwrap();
        assert_eq!(out, data);
        assert_eq!(decompress_to_vec(&data, 100, 0).unwrap(), data);
        assert!(decompress_to_vec(&[], 0, 0).unwrap().is_empty());
    }

    #[test]
    fn round_trip_per_algorithm() {
        let data = sample(50_000);
        for (name, make) in all_kinds() {
            let block = make(&data);
            assert!(block.len() < data.len(), "{name}");
            let mut out = vec![0; data.len()];
            decompress_into(&block, &mut out, 0).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(out, data, "{name}");
            assert_eq!(
                decompress_to_vec(&block, data.len(), 0).unwrap(),
                data,
                "{name}"
            );
        }
    }

    /// Into a reused vector: one zstd chunk goes into its spare capacity,
    /// everything else through `decompress_into`; whatever the vector held
    /// before, and however large it was, it ends up holding the page.
    #[test]
    fn into_vec_replaces_the_contents_of_any_buffer() {
        let data = sample(50_000);
        let mut two_zstd = zstd_chunk(&data[..20_000]);
        two_zstd.extend(zstd_chunk(&data[20_000..]));
        let mut blocks: Vec<(&str, Vec<u8>)> = all_kinds()
            .iter()
            .map(|(name, make)| (*name, make(&data)))
            .collect();
        blocks.push(("two zstd chunks", two_zstd));
        blocks.push(("stored", data.clone()));
        for (name, block) in &blocks {
            for before in [
                Vec::new(),
                vec![9u8; 10],
                vec![9u8; 80_000],
                Vec::with_capacity(60_000),
            ] {
                let mut out = before;
                decompress_into_vec(block, data.len(), &mut out, 0)
                    .unwrap_or_else(|e| panic!("{name}: {e}"));
                assert_eq!(out, data, "{name}");
            }
        }
        // A zstd chunk that inflates to less than its header declares.
        let short = chunk(
            b"ZS",
            1,
            &zstd::bulk::compress(&data[..100], 1).unwrap(),
            200,
        );
        let mut out = Vec::new();
        assert!(decompress_into_vec(&short, 200, &mut out, 0).is_err());
    }

    #[test]
    fn hand_built_zstd_header() {
        // "ZS", version 1, 24-bit sizes; the payload is a zstd frame.
        let data = vec![0x42u8; 4096];
        let frame = zstd::bulk::compress(&data, 1).unwrap();
        let mut block = vec![
            b'Z',
            b'S',
            0x01,
            frame.len() as u8,
            0x00,
            0x00,
            0x00,
            0x10,
            0x00,
        ];
        block.extend_from_slice(&frame);
        assert_eq!(decompress_to_vec(&block, 4096, 0).unwrap(), data);
    }

    #[test]
    fn several_chunks_of_mixed_algorithms() {
        let parts = [sample(3000), vec![7u8; 2000], sample(10_000)];
        let mut block = zstd_chunk(&parts[0]);
        block.extend(lz4_chunk(&parts[1]));
        block.extend(xz_chunk(&parts[2]));
        let expected = parts.concat();
        assert_eq!(
            decompress_to_vec(&block, expected.len(), 0).unwrap(),
            expected
        );
    }

    #[test]
    fn wrong_lz4_checksum() {
        let data = sample(5000);
        let mut block = lz4_chunk(&data);
        block[9] ^= 0x01; // first byte of the stored XXH64
        let err = decompress_to_vec(&block, data.len(), 100).unwrap_err();
        assert!(
            matches!(err, Error::ChecksumMismatch { offset: 100, .. }),
            "{err}"
        );
        let mut block = lz4_chunk(&data);
        let last = block.len() - 1;
        block[last] ^= 0x80; // compressed data
        let err = decompress_to_vec(&block, data.len(), 0).unwrap_err();
        assert!(matches!(err, Error::ChecksumMismatch { .. }), "{err}");
    }

    #[test]
    fn lz4_checksum_is_big_endian() {
        let data = sample(5000);
        let block = lz4_chunk(&data);
        let mut swapped = block.clone();
        swapped[9..17].reverse();
        assert!(decompress_to_vec(&block, data.len(), 0).is_ok());
        assert!(matches!(
            decompress_to_vec(&swapped, data.len(), 0),
            Err(Error::ChecksumMismatch { .. })
        ));
    }

    #[test]
    fn truncated_chunks() {
        let data = sample(20_000);
        for (name, make) in all_kinds() {
            let block = make(&data);
            for cut in [1, 5, 9, 10, block.len() / 2, block.len() - 1] {
                let err = decompress_to_vec(&block[..cut], data.len(), 0).unwrap_err();
                assert!(
                    matches!(err, Error::UnexpectedEof { .. }),
                    "{name} cut at {cut}: {err}"
                );
            }
        }
    }

    #[test]
    fn payload_cut_short_inside_a_consistent_header() {
        // Headers agree with the input, but the stream itself is incomplete.
        let data = sample(20_000);
        for (name, make) in all_kinds() {
            let block = make(&data);
            let payload = &block[CHUNK_HEADER_LEN..block.len() - 4];
            let algorithm: [u8; 2] = [block[0], block[1]];
            let cut = chunk(&algorithm, block[2], payload, data.len());
            assert!(decompress_to_vec(&cut, data.len(), 0).is_err(), "{name}");
        }
    }

    #[test]
    fn declared_size_differs_from_stream() {
        let data = sample(20_000);
        for (name, make) in all_kinds() {
            let block = make(&data);
            let payload = &block[CHUNK_HEADER_LEN..];
            let algorithm: [u8; 2] = [block[0], block[1]];
            for len in [data.len() - 1, data.len() + 1] {
                let wrong = chunk(&algorithm, block[2], payload, len);
                assert!(
                    decompress_to_vec(&wrong, len, 0).is_err(),
                    "{name} declared {len}"
                );
            }
        }
    }

    #[test]
    fn chunk_sizes_must_add_up_to_the_block() {
        let data = sample(20_000);
        let block = zstd_chunk(&data);
        let err = decompress_to_vec(&block, data.len() + 10, 0).unwrap_err();
        assert!(matches!(err, Error::Malformed { .. }), "{err}");
        let err = decompress_to_vec(&block, data.len() - 10, 0).unwrap_err();
        assert!(matches!(err, Error::Malformed { .. }), "{err}");
        let mut dst = vec![0; data.len() + 10];
        assert!(decompress_into(&block, &mut dst, 0).is_err());
    }

    #[test]
    fn huge_declared_size_in_tiny_input_fails_before_allocating() {
        // 20 bytes: a zstd header claiming 16 MiB - 1 from an 11-byte payload.
        let mut block = chunk(b"ZS", 1, &[0u8; 11], 0xFF_FFFF);
        assert_eq!(block.len(), 20);
        // The plan is rejected by the header walk alone; nothing is allocated.
        let err = Chunks::new(&block, 0xFF_FFFF, 0).validate().unwrap_err();
        assert!(matches!(err, Error::Malformed { .. }), "{err}");
        assert!(decompress_to_vec(&block, 0xFF_FFFF, 0).is_err());
        // The same for every algorithm.
        for (alg, method) in [(b"L4", 1), (b"ZL", 8), (b"XZ", 0), (b"CS", 8)] {
            let b = chunk(alg, method, &[0u8; 11], 0xFF_FFFF);
            assert!(Chunks::new(&b, 0xFF_FFFF, 0).validate().is_err());
        }
        // A compressed size of 16 MiB - 1 in a 20-byte input.
        block[3..6].copy_from_slice(&[0xFF, 0xFF, 0xFF]);
        let err = decompress_to_vec(&block, 16 << 20, 0).unwrap_err();
        assert!(matches!(err, Error::UnexpectedEof { .. }), "{err}");
        // A block length of 16 MiB with a header for far less.
        let small = zstd_chunk(&sample(100));
        let err = decompress_to_vec(&small, 16 << 20, 0).unwrap_err();
        assert!(matches!(err, Error::Malformed { .. }), "{err}");
    }

    #[test]
    fn unknown_and_unsupported_algorithms() {
        let err = decompress_to_vec(&chunk(b"QQ", 1, &[0; 4], 10), 10, 77).unwrap_err();
        assert!(matches!(err, Error::Malformed { offset: 77, .. }), "{err}");
        let err = decompress_to_vec(&chunk(b"ZL", 9, &[0; 4], 10), 10, 0).unwrap_err();
        assert!(matches!(err, Error::Malformed { .. }), "{err}");
        let err = decompress_to_vec(&chunk(b"ZS", 2, &[0; 4], 10), 10, 0).unwrap_err();
        assert!(matches!(err, Error::Unsupported { .. }), "{err}");
        let err = decompress_to_vec(&chunk(b"L4", 2, &[0; 12], 10), 10, 0).unwrap_err();
        assert!(matches!(err, Error::Unsupported { .. }), "{err}");
    }

    #[test]
    fn error_offsets_name_the_failing_chunk() {
        let first = zstd_chunk(&sample(1000));
        let mut block = first.clone();
        block.extend(chunk(b"QQ", 0, &[0; 4], 10));
        let err = decompress_to_vec(&block, 1010, 1000).unwrap_err();
        assert!(
            matches!(err, Error::Malformed { offset, .. } if offset == 1000 + first.len() as u64),
            "{err}"
        );
    }

    #[test]
    fn garbage_never_panics() {
        let data = sample(4000);
        for (_, make) in all_kinds() {
            let block = make(&data);
            for i in 0..block.len() {
                let mut bad = block.clone();
                bad[i] ^= 0xA5;
                let _ = decompress_to_vec(&bad, data.len(), 0);
            }
        }
    }
}
