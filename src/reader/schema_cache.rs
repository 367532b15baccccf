//! Schemas shared between RNTuples written with the same header.
//!
//! ```text
//!  stored header and its length, anchor version, schema extension
//!    └─ same as a kept one? ─ yes ─> its Descriptor and ArrowMapping
//!                           └ no ──> decompress, parse, validate, map, keep
//! ```
//!
//! The files of one dataset (thousands of NanoAOD files, say) carry the same
//! header: with 1,680 fields, its descriptor and Arrow schema take about a
//! megabyte and a few milliseconds to make, for each file. The cache makes
//! them once and hands out the same ones. Entries match on the exact bytes
//! of the header as stored (so a header seen before is not even
//! decompressed again), not on a hash, so a collision cannot swap a schema.

use std::sync::{Arc, Mutex, PoisonError};

use super::ntuple::StoredBlock;
use crate::arrow::{map_descriptor, ArrowMapping};
use crate::descriptor::Descriptor;
use crate::envelope::{parse_header, SchemaDescription};
use crate::error::{Result, ResultExt};

/// Schemas kept for the RNTuples opened through it (see
/// [`RNTupleFile::with_schema_cache`](crate::RNTupleFile::with_schema_cache)).
/// Holds up to [`SchemaCache::MAX_SCHEMAS`] distinct schemas; RNTuples of
/// further ones are opened as without a cache.
#[derive(Debug, Default)]
pub struct SchemaCache {
    entries: Mutex<Vec<Arc<Entry>>>,
}

#[derive(Debug)]
struct Entry {
    /// The header envelope as stored in the file (compressed), and its
    /// decompressed length.
    header: Vec<u8>,
    len: usize,
    version: [u16; 4],
    extension: SchemaDescription,
    /// The descriptor without clusters (see [`Descriptor::schema`]).
    schema: Descriptor,
    mapping: Arc<ArrowMapping>,
}

impl SchemaCache {
    /// Most distinct schemas kept.
    pub const MAX_SCHEMAS: usize = 16;

    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// The number of distinct schemas kept.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether no schema is kept yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The schema descriptor and Arrow mapping of `header` extended by
    /// `extension`: kept ones when an earlier RNTuple had the same, else
    /// new ones, then kept while there is room.
    pub(super) fn get_or_make(
        &self,
        header: &StoredBlock,
        version: [u16; 4],
        extension: SchemaDescription,
    ) -> Result<(Descriptor, Arc<ArrowMapping>)> {
        if let Some(entry) = self.find(header, version, &extension) {
            return Ok((entry.schema.clone(), entry.mapping.clone()));
        }
        let parsed = parse_header(&header.decompress()?, header.offset)
            .with_context(|| format!("header envelope at offset {}", header.offset))?;
        let schema = Descriptor::schema(parsed, extension.clone(), version)?;
        let mapping = Arc::new(map_descriptor(&schema));
        let mut entries = self.lock();
        // Another thread may have made the same one meanwhile: share its.
        if let Some(entry) = entries
            .iter()
            .find(|e| e.matches(header, version, &extension))
        {
            return Ok((entry.schema.clone(), entry.mapping.clone()));
        }
        if entries.len() < Self::MAX_SCHEMAS {
            entries.push(Arc::new(Entry {
                header: header.bytes.to_vec(),
                len: header.len,
                version,
                extension,
                schema: schema.clone(),
                mapping: mapping.clone(),
            }));
        }
        Ok((schema, mapping))
    }

    fn find(
        &self,
        header: &StoredBlock,
        version: [u16; 4],
        extension: &SchemaDescription,
    ) -> Option<Arc<Entry>> {
        self.lock()
            .iter()
            .find(|e| e.matches(header, version, extension))
            .cloned()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Arc<Entry>>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Entry {
    /// The same stored bytes decompressed to another length would fail
    /// to decompress: such a header is never taken for a kept one.
    fn matches(
        &self,
        header: &StoredBlock,
        version: [u16; 4],
        extension: &SchemaDescription,
    ) -> bool {
        self.version == version
            && self.len == header.len
            && self.header == header.bytes
            && self.extension == *extension
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::container::RootFile;
    use crate::io::{FileReader, ReadAt};
    use crate::page::Limits;

    /// A header whose anchor claims another length than a kept one with the
    /// same bytes is decompressed (and refused), not taken from the cache.
    #[test]
    fn the_same_bytes_of_another_length_are_not_a_kept_header() {
        let Some(path) = crate::test_util::fixture("clusters.root") else {
            return;
        };
        let source: Arc<dyn ReadAt> = Arc::new(FileReader::open(&path).unwrap());
        let root = RootFile::open(source.clone()).unwrap();
        let anchor = &root.anchors()[0].anchor;
        let header = StoredBlock::header(source.as_ref(), anchor, Limits::default()).unwrap();
        let cache = SchemaCache::new();
        let version = [1, 0, 0, 0];
        cache
            .get_or_make(&header, version, SchemaDescription::default())
            .unwrap();
        assert_eq!(cache.len(), 1);
        let longer = StoredBlock {
            bytes: header.bytes.clone(),
            len: header.len + 1,
            offset: header.offset,
        };
        assert!(cache
            .get_or_make(&longer, version, SchemaDescription::default())
            .is_err());
        assert_eq!(cache.len(), 1);
    }
}
