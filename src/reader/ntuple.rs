//! Files, their RNTuples, and the metadata of one RNTuple.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};

use bytes::Bytes;

use super::builder::RNTupleReaderBuilder;
use super::schema_cache::SchemaCache;
use crate::arrow::{map_descriptor, ArrowMapping};
use crate::compression::decompress_to_vec;
use crate::container::{read_blob, Anchor, AnchorEntry, RootFile};
use crate::descriptor::{ClusterDescriptor, ClusterGroup, Descriptor};
use crate::envelope::{parse_footer, parse_header, parse_page_list};
use crate::error::{Error, Result, ResultExt};
use crate::io::{FileReader, MmapReader, ReadAt};
use crate::page::{BufferPool, Limits, PageSource};

/// One RNTuple listed in a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NTupleInfo {
    /// Directory path and name, `/`-separated (`"sub/Events"`).
    pub path: String,
    pub name: String,
    /// Format version from the anchor: epoch, major, minor, patch.
    pub version: [u16; 4],
}

/// A ROOT file and the RNTuples in it.
#[derive(Debug, Clone)]
pub struct RNTupleFile {
    source: Arc<dyn ReadAt>,
    root: Arc<RootFile>,
    limits: Limits,
    schemas: Option<Arc<SchemaCache>>,
}

impl RNTupleFile {
    /// Opens a local file, read with positioned reads (`pread`): a read
    /// holds in memory only the pages it is decoding, and measured on a
    /// 214 MB file a full decode is as fast as through a memory map.
    ///
    /// ```no_run
    /// let file = rntuple::RNTupleFile::open("events.root")?;
    /// for info in file.ntuples() {
    ///     println!("{} (format {:?})", info.path, info.version);
    /// }
    /// # Ok::<(), rntuple::Error>(())
    /// ```
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let source = FileReader::open(path).with_context(|| path.display())?;
        Self::from_source(Arc::new(source)).with_context(|| path.display())
    }

    /// Opens a local file through a memory map (falling back to positioned
    /// reads where it cannot be mapped). The pages the reads touch count in
    /// the process's resident memory until the system evicts them.
    pub fn open_mmap(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let source: Arc<dyn ReadAt> = match MmapReader::open(path) {
            Ok(map) => Arc::new(map),
            Err(_) => Arc::new(FileReader::open(path).with_context(|| path.display())?),
        };
        Self::from_source(source).with_context(|| path.display())
    }

    /// Opens a file held in memory.
    pub fn from_bytes(bytes: impl Into<Bytes>) -> Result<Self> {
        Self::from_source(Arc::new(bytes.into()))
    }

    /// Opens a file from any positioned reader.
    pub fn from_source(source: Arc<dyn ReadAt>) -> Result<Self> {
        let root = RootFile::open(source.clone())?;
        Ok(Self {
            source,
            root: Arc::new(root),
            limits: Limits::default(),
            schemas: None,
        })
    }

    /// Sets the memory limits of the RNTuples opened from now on: the
    /// largest envelope or page and the bytes one batch of one column may
    /// decompress (see [`Limits`]).
    ///
    /// ```no_run
    /// use rntuple::{Limits, RNTupleFile};
    /// let file = RNTupleFile::open("events.root")?.with_limits(Limits {
    ///     max_page_bytes: 64 << 20,
    ///     max_batch_bytes: 1 << 30,
    /// });
    /// # Ok::<(), rntuple::Error>(())
    /// ```
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Shares the schemas of the RNTuples opened from now on with those of
    /// other files opened through the same cache: an RNTuple whose header
    /// is byte for byte one seen before (the files of one dataset) takes
    /// that one's descriptor fields and Arrow mapping instead of making its
    /// own, which saves their memory and the time to make them.
    ///
    /// ```no_run
    /// use std::sync::Arc;
    /// use rntuple::{RNTupleFile, SchemaCache};
    /// let schemas = Arc::new(SchemaCache::new());
    /// for path in ["a.root", "b.root"] {
    ///     let file = RNTupleFile::open(path)?.with_schema_cache(schemas.clone());
    ///     let events = file.ntuple(Some("Events"))?;
    ///     println!("{path}: {} entries", events.n_entries());
    /// }
    /// # Ok::<(), rntuple::Error>(())
    /// ```
    pub fn with_schema_cache(mut self, schemas: Arc<SchemaCache>) -> Self {
        self.schemas = Some(schemas);
        self
    }

    /// Every RNTuple in the file, in the top directory and below.
    pub fn ntuples(&self) -> Vec<NTupleInfo> {
        self.root.anchors().iter().map(info_of).collect()
    }

    /// The RNTuple [`ntuple`](Self::ntuple) opens for `name`, without
    /// opening it.
    pub fn find(&self, name: Option<&str>) -> Result<NTupleInfo> {
        self.entry(name).map(info_of)
    }

    /// Opens the RNTuple with this path or name (`"Events"`, `"dir/Events"`);
    /// `None` takes the only RNTuple of the file.
    pub fn ntuple(&self, name: Option<&str>) -> Result<RNTuple> {
        let entry = self.entry(name)?;
        RNTuple::open_inner(
            self.source.clone(),
            &entry.anchor,
            self.limits,
            self.schemas.as_deref(),
        )
        .with_context(|| format!("RNTuple {}", entry.path))
    }

    /// The anchor of the RNTuple with this path or name, or of the only one.
    fn entry(&self, name: Option<&str>) -> Result<&AnchorEntry> {
        let anchors = self.root.anchors();
        let entry = match name {
            Some(name) => anchors
                .iter()
                .find(|a| a.path == name)
                .or_else(|| anchors.iter().find(|a| a.name == name)),
            None if anchors.len() == 1 => anchors.first(),
            None if anchors.is_empty() => {
                return Err(Error::InvalidArgument(
                    "the file holds no RNTuple".to_string(),
                ));
            }
            None => {
                return Err(Error::AmbiguousNTuple {
                    ntuples: anchors.iter().map(|a| a.path.clone()).collect(),
                });
            }
        };
        entry.ok_or_else(|| {
            let names: Vec<&str> = anchors.iter().map(|a| a.path.as_str()).collect();
            Error::InvalidArgument(format!(
                "no RNTuple named {:?} in the file (it has: {})",
                name.unwrap_or_default(),
                if names.is_empty() {
                    "none".to_string()
                } else {
                    names.join(", ")
                }
            ))
        })
    }

    /// A reader builder for the RNTuple with this path or name.
    pub fn reader_builder(&self, name: Option<&str>) -> Result<RNTupleReaderBuilder> {
        Ok(RNTupleReaderBuilder::new(self.ntuple(name)?))
    }

    /// The underlying byte source.
    pub fn source(&self) -> &Arc<dyn ReadAt> {
        &self.source
    }
}

fn info_of(a: &AnchorEntry) -> NTupleInfo {
    NTupleInfo {
        path: a.path.clone(),
        name: a.name.clone(),
        version: version_of(&a.anchor),
    }
}

fn version_of(a: &Anchor) -> [u16; 4] {
    [
        a.version_epoch,
        a.version_major,
        a.version_minor,
        a.version_patch,
    ]
}

/// A linked attribute set of an RNTuple.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttributeSetInfo {
    pub name: String,
    pub schema_version: (u16, u16),
}

/// The metadata of one RNTuple: descriptor, Arrow mapping, page lists (read
/// on first use, and kept unless [released](RNTuple::release_page_lists)).
/// Cheap to clone and shared between threads.
#[derive(Debug, Clone)]
pub struct RNTuple {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    source: Arc<dyn ReadAt>,
    max_key_size: u64,
    descriptor: Arc<Descriptor>,
    mapping: Arc<ArrowMapping>,
    /// The parsed page list of each cluster group.
    page_lists: Vec<Clusters>,
    /// The clusters of all groups in entry order.
    all_clusters: Clusters,
    /// Whether page lists are only lent, not kept.
    released: AtomicBool,
    limits: Limits,
    /// Page buffers shared by the reads of this RNTuple.
    buffers: Arc<BufferPool>,
}

/// Clusters read from page lists: kept, or, once released, shared while
/// some caller holds them and read again after.
#[derive(Debug, Default)]
struct Clusters(Mutex<Held>);

#[derive(Debug, Default)]
enum Held {
    #[default]
    Unread,
    Kept(Arc<Vec<ClusterDescriptor>>),
    Lent(Weak<Vec<ClusterDescriptor>>),
}

impl Clusters {
    /// The clusters held, or those `read` gives (held while it reads, so
    /// that callers at the same time read once), then kept unless
    /// `released`.
    fn get_or_read(
        &self,
        released: &AtomicBool,
        read: impl FnOnce() -> Result<Arc<Vec<ClusterDescriptor>>>,
    ) -> Result<Arc<Vec<ClusterDescriptor>>> {
        let mut held = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        match &*held {
            Held::Kept(clusters) => return Ok(clusters.clone()),
            Held::Lent(lent) => {
                if let Some(clusters) = lent.upgrade() {
                    return Ok(clusters);
                }
            }
            Held::Unread => {}
        }
        let clusters = read()?;
        // Read under the lock: a release after it finds these kept and
        // lets them go.
        *held = if released.load(Ordering::Acquire) {
            Held::Lent(Arc::downgrade(&clusters))
        } else {
            Held::Kept(clusters.clone())
        };
        Ok(clusters)
    }

    fn release(&self) {
        let mut held = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Held::Kept(clusters) = &*held {
            *held = Held::Lent(Arc::downgrade(clusters));
        }
    }
}

/// An envelope (or any block) as stored in the file: `nbytes` at `offset`
/// that decompress to `len` bytes.
pub(super) struct StoredBlock {
    pub(super) bytes: Bytes,
    /// The decompressed length.
    pub(super) len: usize,
    pub(super) offset: u64,
}

impl StoredBlock {
    /// Reads the block, once its decompressed length is known to be within
    /// the limits.
    fn read(
        source: &dyn ReadAt,
        what: &'static str,
        offset: u64,
        nbytes: u64,
        len: u64,
        max_key_size: u64,
        limits: Limits,
    ) -> Result<Self> {
        if len > limits.max_page_bytes.max(nbytes) {
            return Err(Error::LimitExceeded {
                what,
                requested: len,
                limit: limits.max_page_bytes,
            });
        }
        let bytes = read_blob(source, offset, nbytes, max_key_size)?;
        let len = usize::try_from(len)
            .map_err(|_| Error::malformed(what, offset, "length does not fit in memory"))?;
        Ok(Self { bytes, len, offset })
    }

    /// The header envelope an anchor points to.
    pub(super) fn header(source: &dyn ReadAt, anchor: &Anchor, limits: Limits) -> Result<Self> {
        Self::read(
            source,
            "header envelope",
            anchor.seek_header,
            anchor.nbytes_header,
            anchor.len_header,
            anchor.max_key_size,
            limits,
        )
    }

    /// The footer envelope an anchor points to.
    fn footer(source: &dyn ReadAt, anchor: &Anchor, limits: Limits) -> Result<Self> {
        Self::read(
            source,
            "footer envelope",
            anchor.seek_footer,
            anchor.nbytes_footer,
            anchor.len_footer,
            anchor.max_key_size,
            limits,
        )
    }

    pub(super) fn decompress(&self) -> Result<Vec<u8>> {
        decompress_to_vec(&self.bytes, self.len, self.offset)
    }
}

impl RNTuple {
    /// Reads the header and footer of the RNTuple an anchor points to.
    pub fn open(source: Arc<dyn ReadAt>, anchor: &Anchor) -> Result<Self> {
        Self::open_with_limits(source, anchor, Limits::default())
    }

    /// [`open`](Self::open) with other limits than the defaults; they also
    /// bound the page lists read later and the pages of every read.
    pub fn open_with_limits(
        source: Arc<dyn ReadAt>,
        anchor: &Anchor,
        limits: Limits,
    ) -> Result<Self> {
        Self::open_inner(source, anchor, limits, None)
    }

    fn open_inner(
        source: Arc<dyn ReadAt>,
        anchor: &Anchor,
        limits: Limits,
        schemas: Option<&SchemaCache>,
    ) -> Result<Self> {
        let header = StoredBlock::header(source.as_ref(), anchor, limits)?;
        let footer = StoredBlock::footer(source.as_ref(), anchor, limits)?.decompress()?;
        let mut footer = parse_footer(&footer, anchor.seek_footer)
            .with_context(|| format!("footer envelope at offset {}", anchor.seek_footer))?;
        let version = version_of(anchor);
        let (descriptor, mapping) = match schemas {
            Some(cache) => {
                let extension = std::mem::take(&mut footer.extension);
                let (schema, mapping) = cache.get_or_make(&header, version, extension)?;
                (schema.with_footer(footer)?, mapping)
            }
            None => {
                let header = parse_header(&header.decompress()?, anchor.seek_header)
                    .with_context(|| format!("header envelope at offset {}", anchor.seek_header))?;
                let descriptor = Descriptor::new(header, footer, version)?;
                let mapping = Arc::new(map_descriptor(&descriptor));
                (descriptor, mapping)
            }
        };
        let page_lists = descriptor
            .cluster_groups
            .iter()
            .map(|_| Clusters::default())
            .collect();
        Ok(Self {
            inner: Arc::new(Inner {
                source,
                max_key_size: anchor.max_key_size,
                descriptor: Arc::new(descriptor),
                mapping,
                page_lists,
                all_clusters: Clusters::default(),
                released: AtomicBool::new(false),
                limits,
                buffers: Arc::default(),
            }),
        })
    }

    /// The validated descriptor.
    pub fn descriptor(&self) -> &Arc<Descriptor> {
        &self.inner.descriptor
    }

    /// The Arrow schema of all readable fields, and the fields left out.
    pub fn mapping(&self) -> &Arc<ArrowMapping> {
        &self.inner.mapping
    }

    /// The byte source.
    pub fn source(&self) -> &Arc<dyn ReadAt> {
        &self.inner.source
    }

    /// Reader limits.
    pub fn limits(&self) -> Limits {
        self.inner.limits
    }

    /// The source of this RNTuple's pages.
    pub fn page_source(&self) -> PageSource {
        PageSource {
            source: self.inner.source.clone(),
            max_key_size: self.inner.max_key_size,
            limits: self.inner.limits,
            buffers: self.inner.buffers.clone(),
            stats: Arc::default(),
        }
    }

    /// Number of entries.
    pub fn n_entries(&self) -> u64 {
        self.inner.descriptor.n_entries
    }

    /// The clusters of one cluster group, reading its page list on first use.
    pub fn clusters_of_group(&self, group: &ClusterGroup) -> Result<Arc<Vec<ClusterDescriptor>>> {
        let slot =
            self.inner.page_lists.get(group.index).ok_or_else(|| {
                Error::InvalidArgument(format!("no cluster group {}", group.index))
            })?;
        slot.get_or_read(&self.inner.released, || {
            self.read_page_list(group).map(Arc::new)
        })
    }

    fn read_page_list(&self, group: &ClusterGroup) -> Result<Vec<ClusterDescriptor>> {
        let link = group.page_list;
        let what = "page list envelope";
        let data = StoredBlock::read(
            self.inner.source.as_ref(),
            what,
            link.locator.offset,
            link.locator.size,
            link.length,
            self.inner.max_key_size,
            self.inner.limits,
        )?
        .decompress()?;
        let page_list = parse_page_list(&data, link.locator.offset).with_context(|| {
            format!(
                "page list of cluster group {} at offset {}",
                group.index, link.locator.offset
            )
        })?;
        self.inner
            .descriptor
            .clusters_from_page_list(group, page_list)
    }

    /// Stops keeping the parsed page lists: from now on a page list lives
    /// while some caller holds the clusters read from it, and is read from
    /// the source again when next needed. For tables of many files, whose
    /// page lists together would not fit in memory.
    pub fn release_page_lists(&self) {
        self.inner.released.store(true, Ordering::Release);
        for slot in self
            .inner
            .page_lists
            .iter()
            .chain([&self.inner.all_clusters])
        {
            slot.release();
        }
    }

    /// All clusters, in entry order (reads every page list).
    pub fn clusters(&self) -> Result<Vec<ClusterDescriptor>> {
        Ok(self.all_clusters()?.as_ref().clone())
    }

    /// All clusters, in entry order (reads every page list on first use),
    /// shared between calls; the list of the cluster group itself when the
    /// RNTuple has one, listed in that order, as ROOT writes them.
    pub fn all_clusters(&self) -> Result<Arc<Vec<ClusterDescriptor>>> {
        let groups = &self.inner.descriptor.cluster_groups;
        self.inner
            .all_clusters
            .get_or_read(&self.inner.released, || {
                if let [group] = groups.as_slice() {
                    let clusters = self.clusters_of_group(group)?;
                    if clusters.is_sorted_by_key(|c| c.first_entry) {
                        return Ok(clusters);
                    }
                }
                let mut out = Vec::new();
                for group in groups {
                    out.extend(self.clusters_of_group(group)?.iter().cloned());
                }
                out.sort_by_key(|c| c.first_entry);
                Ok(Arc::new(out))
            })
    }

    /// The linked attribute sets of this RNTuple.
    pub fn attribute_sets(&self) -> Vec<AttributeSetInfo> {
        self.inner
            .descriptor
            .attribute_sets
            .iter()
            .map(|a| AttributeSetInfo {
                name: a.name.clone(),
                schema_version: (a.schema_version_major, a.schema_version_minor),
            })
            .collect()
    }

    /// Opens a linked attribute set as an RNTuple of its own (fields
    /// `_rangeStart`, `_rangeLen` and the user's fields).
    pub fn attribute_set(&self, name: &str) -> Result<RNTuple> {
        let record = self
            .inner
            .descriptor
            .attribute_sets
            .iter()
            .find(|a| a.name == name)
            .ok_or_else(|| Error::InvalidArgument(format!("no attribute set named {name:?}")))?;
        if record.schema_version_major != 1 {
            return Err(Error::unsupported(format!(
                "attribute set {name:?} has schema version {}.{}",
                record.schema_version_major, record.schema_version_minor
            )));
        }
        let anchor = Anchor::read_at(
            self.inner.source.as_ref(),
            record.anchor.offset,
            record.anchor.size,
            u64::from(record.anchor_length),
        )
        .with_context(|| format!("attribute set {name}"))?;
        RNTuple::open(self.inner.source.clone(), &anchor)
            .with_context(|| format!("attribute set {name}"))
    }
}
