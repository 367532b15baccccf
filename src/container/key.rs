//! TKey: the record in front of every object in a ROOT file.
//!
//! Layout from `TKey::ReadKeyBuffer` (io/io/src/TKey.cxx) and `RTFKey`
//! (tree/ntuple/src/RMiniFile.cxx). Big-endian; a key version above 1000
//! means 64-bit SeekKey and SeekPdir.
//!
//! ```text
//! offset  size  field
//!  0       4    Nbytes     key plus stored (maybe compressed) object; negative marks a free gap
//!  4       2    Version    4, or 1004 for 64-bit seeks
//!  6       4    ObjLen     uncompressed object length
//! 10       4    Datime     packed date and time
//! 14       2    KeyLen     length of this key record, strings included
//! 16       2    Cycle
//! 18      4|8   SeekKey    offset of this key in the file
//!         4|8   SeekPdir   SeekDir (key offset) of the directory it belongs to
//!                          (64-bit: the top 16 bits hold a TProcessID offset)
//!          s    ClassName  ROOT string (below)
//!          s    Name
//!          s    Title
//!               ...        object: at SeekKey + KeyLen, Nbytes - KeyLen bytes stored
//! ```
//!
//! A ROOT string (`TString::ReadBuffer`) is one length byte and the
//! characters; a length byte of 255 is followed by a 4-byte length.
//!
//! The object is stored as is when `ObjLen == Nbytes - KeyLen`, otherwise
//! as a series of ROOT compression blocks (spec: "Compression block").

use bytes::Bytes;

use super::read_seek;
use crate::compression::decompress_into;
use crate::cursor::Cursor;
use crate::error::{Error, Result};
use crate::io::{read_checked, ReadAt};

/// Key versions above this use 64-bit seeks (`TKey::ReadKeyBuffer`).
pub const BIG_KEY_VERSION: u16 = 1000;

/// Length of the fixed part of a key header, up to and including Cycle.
const FIXED_PREFIX: u64 = 18;

/// The smallest possible key: 32-bit seeks and three empty strings.
pub(crate) const MIN_KEY_LEN: usize = 18 + 8 + 3;

/// Size of a ROOT compression block header (spec: "Compression block").
const BLOCK_HEADER_LEN: usize = 9;

/// A TKey header (see the module documentation for the layout).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Key {
    /// `Nbytes`: size of the key plus the stored object.
    pub nbytes: u32,
    /// Key class version; above 1000 the seeks are 64-bit.
    pub version: u16,
    /// `ObjLen`: length of the object once uncompressed.
    pub obj_len: u32,
    /// `Datime`: ROOT's packed date and time.
    pub datime: u32,
    /// `KeyLen`: length of the key record, strings included.
    pub key_len: u16,
    /// Cycle number of the object.
    pub cycle: u16,
    /// `SeekKey`: offset of the key in the file.
    pub seek_key: u64,
    /// `SeekPdir`: the SeekDir (key offset) of the directory the key belongs to;
    /// fBEGIN for the top directory.
    pub seek_pdir: u64,
    /// TProcessID offset stored in the top 16 bits of a 64-bit SeekPdir.
    pub pid_offset: u16,
    /// Class of the object ("TDirectory" is read as "TDirectoryFile", as ROOT does).
    pub class_name: String,
    /// Name of the object.
    pub name: String,
    /// Title of the object.
    pub title: String,
}

impl Key {
    /// Whether the key uses 64-bit seeks.
    pub fn is_64bit(&self) -> bool {
        self.version > BIG_KEY_VERSION
    }

    /// Whether the key holds a directory.
    pub fn is_directory(&self) -> bool {
        self.class_name == "TDirectoryFile"
    }

    /// Number of bytes the object takes in the file (`Nbytes - KeyLen`).
    pub fn stored_len(&self) -> Result<u64> {
        u64::from(self.nbytes)
            .checked_sub(u64::from(self.key_len))
            .ok_or_else(|| Error::malformed("key", self.seek_key, "KeyLen is larger than Nbytes"))
    }

    /// File offset of the object (`SeekKey + KeyLen`).
    pub fn payload_offset(&self) -> Result<u64> {
        self.seek_key
            .checked_add(u64::from(self.key_len))
            .ok_or_else(|| Error::malformed("key", self.seek_key, "SeekKey + KeyLen overflows"))
    }

    /// Whether the object is stored compressed (`ObjLen != Nbytes - KeyLen`).
    pub fn is_compressed(&self) -> Result<bool> {
        Ok(u64::from(self.obj_len) != self.stored_len()?)
    }

    /// Reads the key header at `offset` and checks that it records `offset`
    /// as its own position, as every key written by ROOT does.
    pub fn read(source: &dyn ReadAt, offset: u64) -> Result<Key> {
        let prefix = read_checked(source, "key", offset, FIXED_PREFIX)?;
        let mut c = Cursor::new(&prefix, offset, "key");
        c.skip(14)?;
        let key_len = c.u16_be()?;
        let data = read_checked(source, "key", offset, u64::from(key_len))?;
        let key = parse_key(&mut Cursor::new(&data, offset, "key"))?;
        if key.seek_key != offset {
            return Err(Error::malformed(
                "key",
                offset,
                format!("key records its position as {}", key.seek_key),
            ));
        }
        Ok(key)
    }

    /// Reads the object of this key, uncompressed, refusing objects longer
    /// than `max_len` (the caller's bound for what the key may hold). When
    /// it is stored as is, this is a single read (zero copy for in-memory and
    /// mapped sources).
    pub fn read_payload(&self, source: &dyn ReadAt, max_len: u64) -> Result<Bytes> {
        let offset = self.payload_offset()?;
        if u64::from(self.obj_len) > max_len {
            return Err(Error::malformed(
                "key payload",
                offset,
                format!(
                    "{} '{}' claims {} bytes, more than the {max_len} allowed",
                    self.class_name, self.name, self.obj_len
                ),
            ));
        }
        read_object(
            source,
            "key payload",
            offset,
            self.stored_len()?,
            u64::from(self.obj_len),
        )
    }
}

/// Parses a key header at the cursor and leaves the cursor after its title.
pub fn parse_key(c: &mut Cursor) -> Result<Key> {
    let start = c.position();
    let offset = c.offset();
    let nbytes = c.i32_be()?;
    let version = c.u16_be()?;
    let obj_len = c.u32_be()?;
    let datime = c.u32_be()?;
    let key_len = c.u16_be()?;
    let cycle = c.u16_be()?;
    let big = version > BIG_KEY_VERSION;
    let seek_key = read_seek(c, big)?;
    let pdir = read_seek(c, big)?;
    let (seek_pdir, pid_offset) = if big {
        (pdir & 0xffff_ffff_ffff, (pdir >> 48) as u16)
    } else {
        (pdir, 0)
    };
    let mut class_name = read_tstring(c)?;
    let name = read_tstring(c)?;
    let title = read_tstring(c)?;

    let nbytes = u32::try_from(nbytes).map_err(|_| {
        Error::malformed(
            "key",
            offset,
            format!("negative Nbytes {nbytes} (a free gap, not a key)"),
        )
    })?;
    let read = c.position() - start;
    if usize::from(key_len) < read {
        return Err(Error::malformed(
            "key",
            offset,
            format!("KeyLen {key_len} is shorter than the {read} bytes of the key record"),
        ));
    }
    if u32::from(key_len) > nbytes {
        return Err(Error::malformed(
            "key",
            offset,
            format!("KeyLen {key_len} is larger than Nbytes {nbytes}"),
        ));
    }
    // TKey::ReadKeyBuffer: "TDirectory" is the old name of "TDirectoryFile".
    if class_name == "TDirectory" {
        class_name = "TDirectoryFile".to_string();
    }
    Ok(Key {
        nbytes,
        version,
        obj_len,
        datime,
        key_len,
        cycle,
        seek_key,
        seek_pdir,
        pid_offset,
        class_name,
        name,
        title,
    })
}

/// Reads a ROOT string (`TString::ReadBuffer`): a length byte, or 255 and a
/// 4-byte big-endian length, then the characters. Invalid UTF-8 is replaced.
pub fn read_tstring(c: &mut Cursor) -> Result<String> {
    let len = match c.u8()? {
        255 => u64::from(c.u32_be()?),
        n => u64::from(n),
    };
    let bytes = c.bytes_u64(len)?;
    Ok(String::from_utf8_lossy(bytes).into_owned())
}

/// Reads an object of `len` bytes stored in `nbytes` bytes at `offset`,
/// decompressing it when the two differ.
///
/// Before anything is allocated for a compressed object, the lengths stated
/// in its block headers must add up to `len`, so the allocation is backed by
/// headers that really are in the file.
pub(crate) fn read_object(
    source: &dyn ReadAt,
    what: &'static str,
    offset: u64,
    nbytes: u64,
    len: u64,
) -> Result<Bytes> {
    let stored = read_checked(source, what, offset, nbytes)?;
    if nbytes == len {
        return Ok(stored);
    }
    check_block_lengths(&stored, what, offset, len)?;
    let len = usize::try_from(len)
        .map_err(|_| Error::malformed(what, offset, "length does not fit in memory"))?;
    let mut out = vec![0u8; len];
    decompress_into(&stored, &mut out, offset)?;
    Ok(Bytes::from(out))
}

/// Checks that the compression block headers in `data` state uncompressed
/// lengths adding up to `len` (spec: "Compression block": 3 algorithm bytes,
/// 3-byte little-endian compressed size, 3-byte little-endian uncompressed size).
fn check_block_lengths(data: &[u8], what: &'static str, offset: u64, len: u64) -> Result<()> {
    let mut c = Cursor::new(data, offset, what);
    let mut total: u64 = 0;
    while c.remaining() > 0 && total < len {
        let header = c.bytes(BLOCK_HEADER_LEN)?;
        let compressed = u24_le(header.get(3..6));
        let uncompressed = u24_le(header.get(6..9));
        c.skip(compressed)?;
        total = total.saturating_add(uncompressed as u64);
    }
    if total != len {
        return Err(Error::malformed(
            what,
            offset,
            format!("compression blocks hold {total} bytes, the object is {len} bytes long"),
        ));
    }
    Ok(())
}

fn u24_le(b: Option<&[u8]>) -> usize {
    match b {
        Some(&[b0, b1, b2]) => usize::from(b0) | usize::from(b1) << 8 | usize::from(b2) << 16,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::container::fixture;

    #[test]
    fn parses_a_64bit_key() {
        let data = fixture::anchor_key_header_64bit();
        let key = parse_key(&mut Cursor::new(&data, 0x1000, "key")).unwrap();
        assert!(key.is_64bit());
        assert_eq!(key.nbytes, 54 + 78);
        assert_eq!(key.version, 1004);
        assert_eq!(key.obj_len, 78);
        assert_eq!(key.datime, 0x7870_bd34);
        assert_eq!(key.key_len, 54);
        assert_eq!(key.cycle, 1);
        assert_eq!(key.seek_key, 0x1_0000_1000);
        assert_eq!(key.seek_pdir, 100);
        assert_eq!(key.pid_offset, 2);
        assert_eq!(key.class_name, "ROOT::RNTuple");
        assert_eq!(key.name, "ntpl");
        assert_eq!(key.title, "");
        assert_eq!(key.stored_len().unwrap(), 78);
        assert_eq!(key.payload_offset().unwrap(), 0x1_0000_1000 + 54);
        assert!(!key.is_compressed().unwrap());
    }

    #[test]
    fn parses_a_32bit_key() {
        // The key of anchor "B" in the corpus file
        // rntviewer-testfile-multiple-rntuples-v1-0-0-0.root, at offset 0x847.
        let data: [u8; 43] = [
            0x00, 0x00, 0x00, 0x79, // Nbytes 121
            0x00, 0x04, // Version 4: 32-bit seeks
            0x00, 0x00, 0x00, 0x4e, // ObjLen 78
            0x78, 0x70, 0xbd, 0x34, // Datime
            0x00, 0x2b, // KeyLen 43
            0x00, 0x01, // Cycle 1
            0x00, 0x00, 0x08, 0x47, // SeekKey 0x847
            0x00, 0x00, 0x00, 0x64, // SeekPdir 100
            13, b'R', b'O', b'O', b'T', b':', b':', b'R', b'N', b'T', b'u', b'p', b'l',
            b'e', // ClassName
            1, b'B', // Name
            0,    // Title
        ];
        let mut c = Cursor::new(&data, 0x847, "key");
        let key = parse_key(&mut c).unwrap();
        assert_eq!(c.remaining(), 0);
        assert!(!key.is_64bit());
        assert_eq!(
            (key.nbytes, key.obj_len, key.key_len, key.cycle),
            (121, 78, 43, 1)
        );
        assert_eq!(
            (key.seek_key, key.seek_pdir, key.pid_offset),
            (0x847, 100, 0)
        );
        assert_eq!(
            (key.class_name.as_str(), key.name.as_str()),
            ("ROOT::RNTuple", "B")
        );
    }

    #[test]
    fn long_strings_use_a_4_byte_length() {
        let mut data = vec![255, 0, 0, 1, 0];
        data.extend(std::iter::repeat_n(b'x', 256));
        let s = read_tstring(&mut Cursor::new(&data, 0, "string")).unwrap();
        assert_eq!(s.len(), 256);
        // A declared length past the data is an EOF, not an allocation.
        let err = read_tstring(&mut Cursor::new(
            &[255, 0xff, 0xff, 0xff, 0xff],
            0,
            "string",
        ))
        .unwrap_err();
        assert!(matches!(err, Error::UnexpectedEof { .. }));
    }

    #[test]
    fn old_directory_class_name_is_normalised() {
        let data = fixture::key_bytes(false, 200, 100, "TDirectory", "d", "", 10, 10, 1);
        let key = parse_key(&mut Cursor::new(&data, 200, "key")).unwrap();
        assert!(key.is_directory());
    }

    #[test]
    fn inconsistent_lengths_are_malformed() {
        // Nbytes smaller than KeyLen.
        let mut data = fixture::key_bytes(false, 200, 100, "TNamed", "n", "", 10, 10, 1);
        data[0..4].copy_from_slice(&5i32.to_be_bytes());
        assert!(matches!(
            parse_key(&mut Cursor::new(&data, 200, "key")),
            Err(Error::Malformed { .. })
        ));
        // Negative Nbytes: a free gap.
        data[0..4].copy_from_slice(&(-40i32).to_be_bytes());
        assert!(matches!(
            parse_key(&mut Cursor::new(&data, 200, "key")),
            Err(Error::Malformed { .. })
        ));
        // KeyLen shorter than the strings it holds.
        let mut data = fixture::key_bytes(false, 200, 100, "TNamed", "n", "", 10, 10, 1);
        data[14..16].copy_from_slice(&20u16.to_be_bytes());
        assert!(matches!(
            parse_key(&mut Cursor::new(&data, 200, "key")),
            Err(Error::Malformed { .. })
        ));
    }

    #[test]
    fn key_read_checks_its_position_and_the_file_end() {
        let mut file = vec![0u8; 200];
        file.extend(fixture::key_bytes(
            false, 200, 100, "TNamed", "n", "", 4, 4, 1,
        ));
        file.extend([1, 2, 3, 4]);
        let source = Bytes::from(file.clone());
        let key = Key::read(&source, 200).unwrap();
        assert_eq!(&key.read_payload(&source, 4).unwrap()[..], &[1, 2, 3, 4]);
        assert!(matches!(
            key.read_payload(&source, 3),
            Err(Error::Malformed { .. })
        ));

        // A key that says it lives elsewhere.
        let mut moved = vec![0u8; 8];
        moved.extend(&file);
        let err = Key::read(&Bytes::from(moved), 208).unwrap_err();
        assert!(matches!(err, Error::Malformed { offset: 208, .. }));

        // A key whose object runs past the end of the file.
        let source = Bytes::from(file[..file.len() - 1].to_vec());
        let key = Key::read(&source, 200).unwrap();
        assert!(matches!(
            key.read_payload(&source, 4),
            Err(Error::UnexpectedEof { .. })
        ));

        // A KeyLen pointing past the end of the file.
        let mut long = file[..230].to_vec();
        long[214..216].copy_from_slice(&600u16.to_be_bytes());
        assert!(matches!(
            Key::read(&Bytes::from(long), 200),
            Err(Error::UnexpectedEof { .. })
        ));
    }

    #[test]
    fn compressed_object_lengths_must_match_block_headers() {
        // One block header stating 5 uncompressed bytes for an object of 1000.
        let block = [b'Z', b'S', 1, 2, 0, 0, 5, 0, 0, 0xaa, 0xbb];
        let mut file = vec![0u8; 100];
        file.extend(block);
        let source = Bytes::from(file);
        let err = read_object(&source, "object", 100, block.len() as u64, 1000).unwrap_err();
        assert!(matches!(err, Error::Malformed { offset: 100, .. }));
        // A compressed size running past the data.
        let block = [b'Z', b'S', 1, 0xff, 0, 0, 5, 0, 0];
        let mut file = vec![0u8; 100];
        file.extend(block);
        let err = read_object(&Bytes::from(file), "object", 100, 9, 1000).unwrap_err();
        assert!(matches!(err, Error::UnexpectedEof { .. }));
    }
}
