//! The ROOT file header: the first bytes of every ROOT file.
//!
//! Layout from ROOT's `TFile::Init` (io/io/src/TFile.cxx) and `RTFHeader`
//! (tree/ntuple/src/RMiniFile.cxx). All fields are big-endian; a version of
//! 1000000 or more means the file uses 64-bit seeks, and the pointers marked
//! `4|8` below are then 8 bytes long.
//!
//! ```text
//! offset  size  field
//!  0       4    magic "root"
//!  4       4    fVersion       ROOT version code (63400 for 6.34/00), + 1000000 for 64-bit seeks
//!  8       4    fBEGIN         offset of the first key (the TFile key), normally 100
//! 12      4|8   fEND           end of the used part of the file
//!         4|8   fSeekFree      key of the free-segments list
//!          4    fNbytesFree
//!          4    nfree          number of free segments
//!          4    fNbytesName    length of the TFile key plus its TNamed name and title
//!          1    fUnits         4 or 8: the size of a pointer
//!          4    fCompress      algorithm * 100 + level
//!         4|8   fSeekInfo      key of the streamer info list
//!          4    fNbytesInfo
//!         18    fUUID          (not read)
//! ```
//!
//! The header is 45 bytes long with 32-bit seeks and 57 bytes with 64-bit
//! seeks; fBEGIN leaves room for it to grow.

use super::read_seek;
use crate::cursor::Cursor;
use crate::error::{Error, Result};
use crate::io::{read_checked, ReadAt};

/// The four bytes every ROOT file starts with.
pub const MAGIC: &[u8; 4] = b"root";

/// File versions from this value on use 64-bit seeks (`kBigHeaderVersion`).
pub const BIG_FILE_VERSION: u32 = 1_000_000;

/// Size of the header fields read here, with 32-bit seeks.
const SIZE_SMALL: u64 = 45;
/// Size of the header fields read here, with 64-bit seeks.
const SIZE_BIG: u64 = 57;

/// The ROOT file header (see the module documentation for the layout).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileHeader {
    /// `fVersion` as stored: the ROOT version code, plus 1000000 for 64-bit seeks.
    pub version: u32,
    /// `fBEGIN`: offset of the first key, the one holding the top directory.
    pub begin: u64,
    /// `fEND`: end of the used part of the file.
    pub end: u64,
    /// `fSeekFree`: offset of the key holding the list of free segments.
    pub seek_free: u64,
    /// `fNbytesFree`: size of that key.
    pub nbytes_free: u32,
    /// Number of free segments.
    pub n_free: u32,
    /// `fNbytesName`: size of the TFile key plus the TNamed name and title after it.
    pub nbytes_name: u32,
    /// `fUnits`: size in bytes of the file's pointers (4 or 8).
    pub units: u8,
    /// `fCompress`: default compression settings (algorithm * 100 + level).
    pub compression: u32,
    /// `fSeekInfo`: offset of the key holding the streamer info list.
    pub seek_info: u64,
    /// `fNbytesInfo`: size of that key.
    pub nbytes_info: u32,
}

impl FileHeader {
    /// Whether the file uses 64-bit seeks in its header.
    pub fn is_64bit(&self) -> bool {
        self.version >= BIG_FILE_VERSION
    }

    /// The ROOT version that wrote the file, as a code such as 63400.
    pub fn root_version(&self) -> u32 {
        self.version % BIG_FILE_VERSION
    }

    /// Reads the header at the start of `source`.
    pub fn read(source: &dyn ReadAt) -> Result<FileHeader> {
        let len = source.len().min(SIZE_BIG);
        let data = read_checked(source, "file header", 0, len)?;
        FileHeader::parse(&data)
    }

    /// Parses the header from the first bytes of a file.
    ///
    /// A file that does not start with "root" gives [`Error::Malformed`]
    /// "not a ROOT file" at offset 0; a header cut short gives
    /// [`Error::UnexpectedEof`].
    pub fn parse(data: &[u8]) -> Result<FileHeader> {
        if data.get(..MAGIC.len()) != Some(MAGIC.as_slice()) {
            return Err(Error::malformed("file header", 0, "not a ROOT file"));
        }
        let mut c = Cursor::new(data, 0, "file header");
        c.skip(MAGIC.len())?;
        let version = c.u32_be()?;
        let begin = u64::from(c.u32_be()?);
        let big = version >= BIG_FILE_VERSION;
        let end = read_seek(&mut c, big)?;
        let seek_free = read_seek(&mut c, big)?;
        let nbytes_free = c.u32_be()?;
        let n_free = c.u32_be()?;
        let nbytes_name = c.u32_be()?;
        let units = c.u8()?;
        let compression = c.u32_be()?;
        let seek_info = read_seek(&mut c, big)?;
        let nbytes_info = c.u32_be()?;

        let size = if big { SIZE_BIG } else { SIZE_SMALL };
        if begin < size {
            return Err(Error::malformed(
                "file header",
                8,
                format!("fBEGIN {begin} lies inside the {size}-byte header"),
            ));
        }
        Ok(FileHeader {
            version,
            begin,
            end,
            seek_free,
            nbytes_free,
            n_free,
            nbytes_name,
            units,
            compression,
            seek_info,
            nbytes_info,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::container::fixture;

    #[test]
    fn parses_a_64bit_header() {
        let data = fixture::file_header_64bit();
        let h = FileHeader::parse(&data).unwrap();
        assert!(h.is_64bit());
        assert_eq!(h.root_version(), 63600);
        assert_eq!(h.begin, 100);
        assert_eq!(h.end, 0x1_0000_0200);
        assert_eq!(h.seek_free, 0x1_0000_0100);
        assert_eq!(h.nbytes_free, 0x40);
        assert_eq!(h.n_free, 1);
        assert_eq!(h.nbytes_name, 0x3b);
        assert_eq!(h.units, 8);
        assert_eq!(h.compression, 505);
        assert_eq!(h.seek_info, 0x1_0000_0000);
        assert_eq!(h.nbytes_info, 0x80);
    }

    #[test]
    fn parses_a_32bit_header() {
        // The first 45 bytes of a file written by ROOT 6.35/01 (corpus file
        // rntviewer-testfile-multiple-rntuples-v1-0-0-0.root).
        let data: [u8; 45] = [
            b'r', b'o', b'o', b't', // magic
            0x00, 0x00, 0xf8, 0x0d, // fVersion 63501: 32-bit seeks
            0x00, 0x00, 0x00, 0x64, // fBEGIN 100
            0x00, 0x00, 0x09, 0x4e, // fEND 2382
            0x00, 0x00, 0x03, 0xa8, // fSeekFree 936
            0x00, 0x00, 0x00, 0x4a, // fNbytesFree 74
            0x00, 0x00, 0x00, 0x03, // nfree 3
            0x00, 0x00, 0x00, 0x40, // fNbytesName 64
            0x04, // fUnits 4
            0x00, 0x00, 0x01, 0xf9, // fCompress 505
            0x00, 0x00, 0x04, 0x0e, // fSeekInfo 1038
            0x00, 0x00, 0x01, 0x95, // fNbytesInfo 405
        ];
        let h = FileHeader::parse(&data).unwrap();
        assert!(!h.is_64bit());
        assert_eq!(h.root_version(), 63501);
        assert_eq!(
            (h.begin, h.end, h.seek_free, h.seek_info),
            (100, 2382, 936, 1038)
        );
        assert_eq!(
            (h.nbytes_free, h.n_free, h.nbytes_name, h.units),
            (74, 3, 64, 4)
        );
        assert_eq!((h.compression, h.nbytes_info), (505, 405));
    }

    #[test]
    fn bad_magic_is_not_a_root_file() {
        let mut data = fixture::file_header_64bit();
        data[0] = b'R';
        let err = FileHeader::parse(&data).unwrap_err();
        assert!(matches!(err, Error::Malformed { offset: 0, .. }));
        assert!(matches!(
            FileHeader::parse(b"ro").unwrap_err(),
            Error::Malformed { offset: 0, .. }
        ));
    }

    #[test]
    fn truncated_header_is_eof() {
        let data = fixture::file_header_64bit();
        for len in [4, 8, 12, 30, 56] {
            let err = FileHeader::parse(&data[..len]).unwrap_err();
            assert!(matches!(err, Error::UnexpectedEof { .. }), "{len}: {err}");
        }
    }

    #[test]
    fn begin_inside_header_is_malformed() {
        let mut data = fixture::file_header_64bit();
        data[8..12].copy_from_slice(&20u32.to_be_bytes());
        assert!(matches!(
            FileHeader::parse(&data).unwrap_err(),
            Error::Malformed { offset: 8, .. }
        ));
    }
}
