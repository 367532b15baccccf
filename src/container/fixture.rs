//! Hand-built ROOT container bytes for the tests of this module.

use xxhash_rust::xxh3::xxh3_64;

/// The 57-byte header of a file with 64-bit seeks.
pub fn file_header_64bit() -> Vec<u8> {
    [
        &b"root"[..],                                      // magic
        &[0x00, 0x10, 0x3a, 0xb0], // fVersion 1063600: 6.36/00 + 1000000 (64-bit seeks)
        &[0x00, 0x00, 0x00, 0x64], // fBEGIN 100
        &[0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x02, 0x00], // fEND 0x1_0000_0200 (8 bytes)
        &[0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x01, 0x00], // fSeekFree 0x1_0000_0100 (8 bytes)
        &[0x00, 0x00, 0x00, 0x40], // fNbytesFree 64
        &[0x00, 0x00, 0x00, 0x01], // nfree 1
        &[0x00, 0x00, 0x00, 0x3b], // fNbytesName 59
        &[0x08],                   // fUnits 8
        &[0x00, 0x00, 0x01, 0xf9], // fCompress 505 (zstd, level 5)
        &[0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00], // fSeekInfo 0x1_0000_0000 (8 bytes)
        &[0x00, 0x00, 0x00, 0x80], // fNbytesInfo 128
    ]
    .concat()
}

/// A 54-byte key header with 64-bit seeks, for an anchor "ntpl".
pub fn anchor_key_header_64bit() -> Vec<u8> {
    [
        &[0x00, 0x00, 0x00, 0x84][..], // Nbytes 132: key 54 + anchor 78
        &[0x03, 0xec],                 // Version 1004: 64-bit seeks
        &[0x00, 0x00, 0x00, 0x4e],     // ObjLen 78
        &[0x78, 0x70, 0xbd, 0x34],     // Datime
        &[0x00, 0x36],                 // KeyLen 54
        &[0x00, 0x01],                 // Cycle 1
        &[0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x10, 0x00], // SeekKey 0x1_0000_1000 (8 bytes)
        &[0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x64], // SeekPdir 100, pid offset 2 in the top 16 bits
        &[13],                                             // ClassName: 13 bytes
        b"ROOT::RNTuple",
        &[4], // Name: 4 bytes
        b"ntpl",
        &[0], // Title: empty
    ]
    .concat()
}

/// Appends a ROOT string (length byte, or 255 and a 4-byte length).
pub fn put_tstring(buf: &mut Vec<u8>, s: &str) {
    if s.len() < 255 {
        buf.push(s.len() as u8);
    } else {
        buf.push(255);
        buf.extend((s.len() as u32).to_be_bytes());
    }
    buf.extend(s.as_bytes());
}

fn put_seek(buf: &mut Vec<u8>, big: bool, v: u64) {
    if big {
        buf.extend(v.to_be_bytes());
    } else {
        buf.extend((v as u32).to_be_bytes());
    }
}

/// A key header with computed KeyLen and Nbytes (`stored` bytes of object).
#[allow(clippy::too_many_arguments)]
pub fn key_bytes(
    big: bool,
    seek_key: u64,
    seek_pdir: u64,
    class: &str,
    name: &str,
    title: &str,
    obj_len: u32,
    stored: u32,
    cycle: u16,
) -> Vec<u8> {
    let mut strings = Vec::new();
    put_tstring(&mut strings, class);
    put_tstring(&mut strings, name);
    put_tstring(&mut strings, title);
    let key_len = 18 + if big { 16 } else { 8 } + strings.len();
    let mut k = Vec::new();
    k.extend((key_len as i32 + stored as i32).to_be_bytes()); // Nbytes
    k.extend((if big { 1004u16 } else { 4u16 }).to_be_bytes()); // Version
    k.extend(obj_len.to_be_bytes()); // ObjLen
    k.extend(0x7870_bd34u32.to_be_bytes()); // Datime
    k.extend((key_len as u16).to_be_bytes()); // KeyLen
    k.extend(cycle.to_be_bytes()); // Cycle
    put_seek(&mut k, big, seek_key);
    put_seek(&mut k, big, seek_pdir);
    k.extend(strings);
    k
}

/// A directory record (without UUID).
pub fn directory_record(
    big: bool,
    nbytes_keys: u32,
    nbytes_name: u32,
    seek_dir: u64,
    seek_parent: u64,
    seek_keys: u64,
) -> Vec<u8> {
    let mut d = Vec::new();
    d.extend((if big { 1005u16 } else { 5u16 }).to_be_bytes()); // Version
    d.extend(0x7870_bd34u32.to_be_bytes()); // DatimeC
    d.extend(0x7870_bd35u32.to_be_bytes()); // DatimeM
    d.extend(nbytes_keys.to_be_bytes());
    d.extend(nbytes_name.to_be_bytes());
    put_seek(&mut d, big, seek_dir);
    put_seek(&mut d, big, seek_parent);
    put_seek(&mut d, big, seek_keys);
    d
}

/// The 64 bytes of RNTuple 1.0 anchor fields.
#[allow(clippy::too_many_arguments)]
pub fn anchor_fields(
    epoch: u16,
    major: u16,
    minor: u16,
    patch: u16,
    seek_header: u64,
    nbytes_header: u64,
    len_header: u64,
    seek_footer: u64,
    nbytes_footer: u64,
    len_footer: u64,
    max_key_size: u64,
) -> Vec<u8> {
    let mut f = Vec::new();
    for v in [epoch, major, minor, patch] {
        f.extend(v.to_be_bytes());
    }
    for v in [
        seek_header,
        nbytes_header,
        len_header,
        seek_footer,
        nbytes_footer,
        len_footer,
        max_key_size,
    ] {
        f.extend(v.to_be_bytes());
    }
    f
}

/// A streamed anchor: byte count, class version 2, fields, `extra`
/// appended fields, checksum.
pub fn anchor_payload_with(fields: &[u8], extra: &[u8]) -> Vec<u8> {
    let body = [fields, extra].concat();
    let mut p = Vec::new();
    p.extend((0x4000_0000u32 | (2 + body.len() as u32)).to_be_bytes());
    p.extend(2u16.to_be_bytes());
    p.extend(&body);
    p.extend(xxh3_64(&body).to_be_bytes());
    p
}

/// Name of the files the builder makes.
const FILE_NAME: &str = "t.root";

/// A directory written by [`FileBuilder`]: its key header (to put in its
/// parent's key list), the offset of that key (its SeekDir) and the offset
/// of its record.
#[derive(Debug, Clone)]
pub struct DirHandle {
    pub key: Vec<u8>,
    pub seek_dir: u64,
    pub record: u64,
}

/// Lays out a small ROOT file object by object.
pub struct FileBuilder {
    pub buf: Vec<u8>,
    big: bool,
}

impl FileBuilder {
    /// Starts a file with 64-bit (`big`) or 32-bit seeks; the header is
    /// written by [`FileBuilder::finish`].
    pub fn new(big: bool) -> Self {
        FileBuilder {
            buf: vec![0; 100],
            big,
        }
    }

    pub fn pos(&self) -> u64 {
        self.buf.len() as u64
    }

    fn record_tail(&self) -> Vec<u8> {
        // UUID (version + 16 bytes), and 3 padding ints in small files.
        vec![0; if self.big { 18 } else { 30 }]
    }

    /// Writes the TFile key at fBEGIN holding the top directory.
    pub fn top(&mut self) -> DirHandle {
        assert_eq!(self.pos(), 100);
        let mut names = Vec::new();
        put_tstring(&mut names, FILE_NAME);
        put_tstring(&mut names, "");
        let record_len = directory_record(self.big, 0, 0, 0, 0, 0).len() + self.record_tail().len();
        let payload_len = (names.len() + record_len) as u32;
        let key = key_bytes(
            self.big,
            100,
            0,
            "TFile",
            FILE_NAME,
            "",
            payload_len,
            payload_len,
            1,
        );
        let nbytes_name = (key.len() + names.len()) as u32;
        let record = 100 + nbytes_name as u64;
        self.buf.extend(&key);
        self.buf.extend(names);
        self.buf
            .extend(directory_record(self.big, 0, nbytes_name, 100, 0, 0));
        self.buf.extend(self.record_tail());
        DirHandle {
            key,
            seek_dir: 100,
            record,
        }
    }

    /// Writes a TDirectory key and record for `name` under `parent`.
    pub fn directory(&mut self, name: &str, parent: &DirHandle) -> DirHandle {
        let at = self.pos();
        let mut payload = directory_record(self.big, 0, 0, at, parent.seek_dir, 0);
        payload.extend(self.record_tail());
        let len = payload.len() as u32;
        let key = key_bytes(
            self.big,
            at,
            parent.seek_dir,
            "TDirectory",
            name,
            name,
            len,
            len,
            1,
        );
        let record = at + key.len() as u64;
        self.buf.extend(&key);
        self.buf.extend(payload);
        DirHandle {
            key,
            seek_dir: at,
            record,
        }
    }

    /// Writes a key with an uncompressed object and returns its header.
    pub fn object(
        &mut self,
        class: &str,
        name: &str,
        payload: &[u8],
        dir: &DirHandle,
        cycle: u16,
    ) -> Vec<u8> {
        let at = self.pos();
        let len = payload.len() as u32;
        let key = key_bytes(self.big, at, dir.seek_dir, class, name, "", len, len, cycle);
        self.buf.extend(&key);
        self.buf.extend(payload);
        key
    }

    /// Writes a valid RNTuple 1.0 anchor key in `dir`.
    pub fn anchor(&mut self, name: &str, dir: &DirHandle, cycle: u16) -> Vec<u8> {
        let fields = anchor_fields(1, 0, 0, 0, 1000, 100, 200, 2000, 50, 60, 1 << 30);
        let payload = anchor_payload_with(&fields, &[]);
        self.object("ROOT::RNTuple", name, &payload, dir, cycle)
    }

    /// Writes the key list of `dir` and points its record at it. Returns
    /// the list's offset and length.
    pub fn key_list(&mut self, dir: &DirHandle, keys: &[Vec<u8>]) -> (u64, u32) {
        let at = self.pos();
        let mut body = (keys.len() as u32).to_be_bytes().to_vec();
        for k in keys {
            body.extend(k);
        }
        let len = body.len() as u32;
        let header = key_bytes(self.big, at, dir.seek_dir, "", FILE_NAME, "", len, len, 1);
        let total = (header.len() + body.len()) as u32;
        self.buf.extend(header);
        self.buf.extend(body);
        self.patch_directory(dir, (at, total));
        (at, total)
    }

    /// Sets the key list (offset, length) of a directory record.
    pub fn patch_directory(&mut self, dir: &DirHandle, (seek_keys, nbytes_keys): (u64, u32)) {
        let r = dir.record as usize;
        self.buf[r + 10..r + 14].copy_from_slice(&nbytes_keys.to_be_bytes());
        let at = r + 18 + if self.big { 16 } else { 8 };
        if self.big {
            self.buf[at..at + 8].copy_from_slice(&seek_keys.to_be_bytes());
        } else {
            self.buf[at..at + 4].copy_from_slice(&(seek_keys as u32).to_be_bytes());
        }
    }

    /// Writes the file header and returns the file.
    pub fn finish(mut self) -> Vec<u8> {
        let end = self.pos();
        let mut h = b"root".to_vec();
        h.extend((63600u32 + if self.big { 1_000_000 } else { 0 }).to_be_bytes());
        h.extend(100u32.to_be_bytes()); // fBEGIN
        put_seek(&mut h, self.big, end); // fEND
        put_seek(&mut h, self.big, 0); // fSeekFree
        h.extend(0u32.to_be_bytes()); // fNbytesFree
        h.extend(0u32.to_be_bytes()); // nfree
        h.extend(0u32.to_be_bytes()); // fNbytesName
        h.push(if self.big { 8 } else { 4 }); // fUnits
        h.extend(0u32.to_be_bytes()); // fCompress
        put_seek(&mut h, self.big, 0); // fSeekInfo
        h.extend(0u32.to_be_bytes()); // fNbytesInfo
        self.buf[..h.len()].copy_from_slice(&h);
        self.buf
    }
}
