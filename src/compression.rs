//! ROOT compression blocks (spec: "Compression block").

use crate::error::{Error, Result};

/// Decompresses a ROOT compression block `src` whose uncompressed length is
/// `dst.len()` into `dst`. `offset` is the file offset of `src`, for errors.
/// Equal lengths mean the data is stored as is.
pub fn decompress_into(src: &[u8], dst: &mut [u8], offset: u64) -> Result<()> {
    if src.len() == dst.len() {
        dst.copy_from_slice(src);
        return Ok(());
    }
    Err(Error::unsupported(format!("compressed block at offset {offset}")))
}
