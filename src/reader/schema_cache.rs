//! Schemas shared between RNTuples written with the same header.
//!
//! ```text
//!  stored header + anchor version + schema extension ─ same as a kept one? ─ yes ─> its Descriptor and ArrowMapping
//!                                                                         └ no ──> decompress, parse, validate, map, keep
//! ```
//!
//! The files of one dataset (thousands of NanoAOD files, say) carry the same
//! header: with 1,680 fields, its descriptor and Arrow schema take about a
//! megabyte and a few milliseconds to make, for each file. The cache makes
//! them once and hands out the same ones. Entries match on the exact bytes
//! of the header as stored (so a header seen before is not even
//! decompressed again), not on a hash, so a collision cannot swap a schema.

use std::sync::{Arc, Mutex, PoisonError};

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
    /// The header envelope as stored in the file (compressed).
    header: Vec<u8>,
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

    /// The schema descriptor and Arrow mapping of the header stored as
    /// `header` (at file offset `offset`; `decompress` gives its contents)
    /// extended by `extension`: kept ones when an earlier RNTuple had the
    /// same, else new ones, then kept while there is room.
    pub(crate) fn get_or_make(
        &self,
        header: &[u8],
        decompress: impl FnOnce() -> Result<Vec<u8>>,
        offset: u64,
        version: [u16; 4],
        extension: SchemaDescription,
    ) -> Result<(Descriptor, Arc<ArrowMapping>)> {
        if let Some(entry) = self.find(header, version, &extension) {
            return Ok((entry.schema.clone(), entry.mapping.clone()));
        }
        let parsed = parse_header(&decompress()?, offset)
            .with_context(|| format!("header envelope at offset {offset}"))?;
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
                header: header.to_vec(),
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
        header: &[u8],
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
    fn matches(&self, header: &[u8], version: [u16; 4], extension: &SchemaDescription) -> bool {
        self.version == version && self.header == header && self.extension == *extension
    }
}
