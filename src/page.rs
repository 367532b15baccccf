//! Pages of one column in one cluster: fetch, verify, decompress, decode.
//!
//! ```text
//!  cluster-relative elements  0 ........ zeros ........ | page 0 | page 1 | ... |
//!                             (deferred column: synthetic zeros, no pages)
//!  read_*(range) ─> pages overlapping range ─> read_checked ─> XXH3 check
//!                 ─> decompress_into ─> decode_* ─> typed values appended
//! ```
//!
//! Consecutive batches that share a page fetch and decompress it once.
//! Numbers and offsets decode a page whole, from a buffer of the thread that
//! stays warm in the cache, as soon as it is decompressed: a batch takes
//! the part it needs, and the cursor keeps the rest, decoded, for the next
//! batch (as a slice without a copy when it covers that batch, or as the
//! start of its output). Other columns (bits, switches, string bytes) keep
//! the decompressed page and decode the part each batch needs.

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

use std::any::Any;
use std::cell::RefCell;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use arrow_buffer::{ArrowNativeType, ScalarBuffer};

use crate::checksum::xxh3_64;
use crate::compression::{check_block, decompress_into_vec};
use crate::container::read_blob_reusing;
use crate::descriptor::{ClusterDescriptor, ColumnDescriptor};
use crate::encoding::{self, BitVec, ColumnCoding, NativeType};
use crate::envelope::{PageRecord, Pages};
use crate::error::{Error, Result, ResultExt};
use crate::io::ReadAt;

/// Limits that protect against decompression bombs: pages and batches
/// whose declared sizes the file's bytes justify (see
/// [`crate::compression::check_block`]) but that would still take more
/// memory than the caller allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest uncompressed page (or envelope) accepted, in bytes.
    pub max_page_bytes: u64,
    /// Most bytes one read of a column range (one batch of one column) may
    /// materialise: the pages it decompresses and the synthetic zeros of
    /// deferred or absent columns, counted at their width on storage.
    pub max_batch_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_page_bytes: 1 << 30,
            max_batch_bytes: 1 << 32,
        }
    }
}

/// Where pages come from: the file, its RBlob key size and the limits.
#[derive(Debug, Clone)]
pub struct PageSource {
    pub source: Arc<dyn ReadAt>,
    /// Payloads larger than this are split over several keys.
    pub max_key_size: u64,
    pub limits: Limits,
    /// Page buffers of finished cursors, for the next ones.
    pub buffers: Arc<BufferPool>,
    /// The pages the cursors have read so far.
    pub stats: Arc<ReadStats>,
}

/// The pages a read has taken from its source: how many were decompressed
/// (a page read twice counts twice) and their stored bytes, checksums
/// included.
#[derive(Debug, Default)]
pub struct ReadStats {
    pages: AtomicU64,
    bytes: AtomicU64,
}

impl ReadStats {
    /// Pages read and decompressed.
    pub fn pages(&self) -> u64 {
        self.pages.load(Ordering::Relaxed)
    }

    /// Stored bytes of those pages.
    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    fn record(&self, bytes: u64) {
        self.pages.fetch_add(1, Ordering::Relaxed);
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
    }
}

/// Page buffers handed from the cursors of one cluster to those of the
/// next, so that a read fills (zeroes) and faults in its page buffers once
/// rather than once per cluster. Holds at most [`BufferPool::MAX_BYTES`].
#[derive(Debug, Default)]
pub struct BufferPool {
    buffers: std::sync::Mutex<Vec<Vec<u8>>>,
}

impl BufferPool {
    /// Most bytes of buffers kept for reuse.
    pub const MAX_BYTES: usize = 256 << 20;

    fn take(&self) -> Vec<u8> {
        self.lock().pop().unwrap_or_default()
    }

    fn give(&self, buffer: Vec<u8>) {
        if buffer.capacity() == 0 {
            return;
        }
        let mut buffers = self.lock();
        let kept: usize = buffers.iter().map(Vec::capacity).sum();
        if kept + buffer.capacity() <= Self::MAX_BYTES {
            buffers.push(buffer);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Vec<u8>>> {
        self.buffers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

thread_local! {
    /// The stored (compressed) bytes of the page being read on this thread.
    static STORED: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

thread_local! {
    /// The decompressed bytes of a page decoded at once on this thread.
    static DECOMPRESSED: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Calls `f` with this thread's buffer for stored bytes (a fresh one if it
/// is in use), and lets the buffer go if a large page grew it.
fn with_stored<R>(f: impl FnOnce(&mut Vec<u8>) -> R) -> R {
    STORED.with(|stored| match stored.try_borrow_mut() {
        Ok(mut scratch) => {
            let result = f(&mut scratch);
            if scratch.capacity() > MAX_KEPT_STORED_BYTES {
                *scratch = Vec::new();
            }
            result
        }
        Err(_) => f(&mut Vec::new()),
    })
}

/// A thread keeps its buffer of stored bytes for the next page up to this
/// size; a larger one, read for an unusually large page, is let go.
const MAX_KEPT_STORED_BYTES: usize = 16 << 20;

/// Reads element ranges of one column within one cluster.
#[derive(Debug)]
pub struct ColumnCursor {
    source: PageSource,
    coding: ColumnCoding,
    column_id: u32,
    cluster_id: u64,
    pages: Pages,
    /// Cluster-relative index of each page's first element; one more entry
    /// holds the end of the last page.
    starts: Vec<u64>,
    current: Option<(usize, Vec<u8>)>,
    /// The current page of an index column decoded, for the batches that
    /// share it.
    decoded: DecodedIndex,
    /// Values decoded past the end of the last read of
    /// [`read_values_buffer`](Self::read_values_buffer), for the next one.
    carry: Option<Carry>,
    /// No read goes past this cluster-relative element (see
    /// [`set_read_end`](Self::set_read_end)).
    read_end: u64,
    /// Bytes materialised by the read in progress, against
    /// [`Limits::max_batch_bytes`].
    batch_bytes: u64,
    /// Whether the column's elements follow the entries (its first element
    /// is known from the entry number): without pages in the cluster, it
    /// then reads as zeros for every entry. A column inside a collection
    /// without pages holds no elements: its collections are all empty.
    per_entry: bool,
    /// Whether [`read_values_buffer`](Self::read_values_buffer) writes
    /// large outputs with streaming stores (see
    /// [`set_streaming`](Self::set_streaming)).
    streaming: bool,
}

impl ColumnCursor {
    /// A cursor over `column` in `cluster`. `expected` is the range of
    /// element indices the column has in this cluster when that is known
    /// from the entries (columns outside collections). Elements before the
    /// first page are then synthetic zeros (deferred columns). A column
    /// absent from the cluster reads as zeros then, and otherwise (inside a
    /// collection) holds no elements.
    ///
    /// A deferred column (one added by a late model extension) reads as ROOT
    /// reads it: its pages hold the last elements of the cluster's range,
    /// whatever element offset the page list gives (files merged by ROOT's
    /// merger may give one that does not follow the entries).
    pub fn new(
        source: &PageSource,
        column: &ColumnDescriptor,
        cluster: &ClusterDescriptor,
        expected: Option<Range<u64>>,
    ) -> Result<Self> {
        let coding = ColumnCoding::of(column);
        let deferred = column.first_element_index.is_some_and(|i| i != 0);
        let (pages, zeros) = match cluster.column(column.id) {
            Some(range) => {
                let offset = range.element_offset.unwrap_or(0);
                let zeros = match &expected {
                    Some(elements) if deferred => {
                        let stored = range
                            .pages
                            .iter()
                            .map(|p| u64::from(p.n_elements))
                            .fold(0u64, u64::saturating_add);
                        elements.end.saturating_sub(elements.start).saturating_sub(stored)
                    }
                    Some(elements) => offset.checked_sub(elements.start).ok_or_else(|| {
                        Error::malformed(
                            "page list envelope",
                            0,
                            format!("column {} starts at element {offset} in cluster {}, before its first entry's element {}", column.id, cluster.id, elements.start),
                        )
                    })?,
                    None => 0,
                };
                (range.pages.clone(), zeros)
            }
            None => (Pages::default(), u64::MAX),
        };
        let mut starts = Vec::with_capacity(pages.len() + 1);
        let mut at = zeros;
        for page in &pages {
            starts.push(at);
            at = at.saturating_add(u64::from(page.n_elements));
        }
        starts.push(at);
        Ok(Self {
            source: source.clone(),
            coding,
            column_id: column.id,
            cluster_id: cluster.id,
            pages,
            starts,
            current: None,
            decoded: DecodedIndex::default(),
            carry: None,
            read_end: u64::MAX,
            batch_bytes: 0,
            per_entry: expected.is_some(),
            streaming: false,
        })
    }

    /// Has [`read_values_buffer`](Self::read_values_buffer) write the
    /// values of split 32-bit columns with streaming stores, which bypass
    /// the cache, where it decodes many at once: for reads whose batches
    /// outgrow the cache before they are used (see
    /// [`NodeReader::set_streaming`](crate::arrow::assemble::NodeReader::set_streaming)).
    pub fn set_streaming(&mut self, on: bool) {
        self.streaming = on;
    }

    /// The bytes of the column's pages in this cluster, decompressed.
    pub fn page_bytes(&self) -> u64 {
        let bits = u64::from(self.coding.bits_on_storage);
        self.pages
            .iter()
            .map(|p| u64::from(p.n_elements).saturating_mul(bits).div_ceil(8))
            .fold(0, u64::saturating_add)
    }

    /// Promises that no read goes past cluster-relative element `end`: a
    /// read that ends there keeps no decoded rest of its last page for a
    /// next read. A read of a few entries (`LIMIT 10`) then decodes only
    /// what it returns. A read past `end` still works; it decodes its pages
    /// again.
    pub fn set_read_end(&mut self, end: u64) {
        self.read_end = end;
    }

    /// Appends the stored byte ranges (with checksums) of the pages that
    /// hold elements `range` of the column in this cluster: the pages a read
    /// of `range` decompresses. Synthetic zeros have none.
    pub fn page_ranges(&self, range: Range<u64>, out: &mut Vec<Range<u64>>) {
        if range.start >= range.end {
            return;
        }
        let first = self
            .starts
            .partition_point(|&s| s <= range.start)
            .saturating_sub(1);
        for (k, page) in self.pages.iter().enumerate().skip(first) {
            let (Some(&start), Some(&end)) = (self.starts.get(k), self.starts.get(k + 1)) else {
                break;
            };
            if start >= range.end {
                break;
            }
            if end > range.start {
                out.push(page.stored_range());
            }
        }
    }

    /// Appends the stored byte ranges of all the column's pages in this
    /// cluster.
    pub fn all_page_ranges(&self, out: &mut Vec<Range<u64>>) {
        out.extend(self.pages.iter().map(|p| p.stored_range()));
    }

    /// The value of index column element `at` (a collection's end offset).
    pub fn index_at(&mut self, at: u64) -> Result<u64> {
        let mut value = None;
        self.for_each_index(at..at.saturating_add(1), |ends, _| {
            value = value.or(ends.first().copied());
        })?;
        value.ok_or_else(|| {
            Error::malformed(
                "page list envelope",
                0,
                format!(
                    "column {} has no element {at} in cluster {}",
                    self.column_id, self.cluster_id
                ),
            )
        })
    }

    /// The physical column this cursor reads.
    pub fn column_id(&self) -> u32 {
        self.column_id
    }

    fn zeros_end(&self) -> u64 {
        self.starts.first().copied().unwrap_or(u64::MAX)
    }

    fn end(&self) -> u64 {
        if self.pages.is_empty() {
            // An absent (deferred) column: zeros for every entry; the items
            // of collections that are all empty: none.
            return if self.per_entry { u64::MAX } else { 0 };
        }
        self.starts.last().copied().unwrap_or(0)
    }

    fn check_range(&self, range: &Range<u64>) -> Result<()> {
        if range.end <= self.end() {
            return Ok(());
        }
        Err(Error::malformed(
            "page list envelope",
            0,
            format!(
                "column {} has {} elements in cluster {}, element {} was needed",
                self.column_id,
                self.end(),
                self.cluster_id,
                range.end.saturating_sub(1)
            ),
        ))
    }

    /// The number of elements in `range`, once it is known to lie within the
    /// column and its values, `width` bytes each, within the batch limit:
    /// callers size their output with it before reading, so that a range
    /// taken from corrupt offsets fails here rather than in the allocator.
    pub fn checked_len(&self, range: &Range<u64>, width: usize) -> Result<usize> {
        self.check_range(range)?;
        let n = range.end.saturating_sub(range.start);
        let bytes = n.saturating_mul(width as u64);
        let limit = self.source.limits.max_batch_bytes;
        if bytes > limit {
            return Err(Error::LimitExceeded {
                what: "values of one batch of a column",
                requested: bytes,
                limit,
            });
        }
        to_usize(n)
    }

    /// Visits the spans of `range`: a run of synthetic zeros, then the part
    /// of each page that `range` covers, without loading any page.
    fn for_each_span(
        &mut self,
        range: Range<u64>,
        mut f: impl FnMut(&mut Self, Span) -> Result<()>,
    ) -> Result<()> {
        self.check_range(&range)?;
        self.batch_bytes = 0;
        let mut at = range.start;
        let zeros_end = self.zeros_end().min(range.end);
        if at < zeros_end {
            let n = zeros_end - at;
            self.charge(
                "synthetic zeros of a column",
                n.saturating_mul(u64::from(self.coding.bits_on_storage))
                    .div_ceil(8),
            )?;
            f(self, Span::Zeros(to_usize(n)?))?;
            at = zeros_end;
        }
        while at < range.end {
            // The page holding element `at`.
            let k = self.starts.partition_point(|&s| s <= at).saturating_sub(1);
            let (page_start, page_end) = match (self.starts.get(k), self.starts.get(k + 1)) {
                (Some(&s), Some(&e)) => (s, e),
                _ => {
                    return Err(Error::malformed(
                        "page list envelope",
                        0,
                        "page index out of range",
                    ))
                }
            };
            if page_end <= at {
                // An empty page; move on.
                at = page_end.max(at);
                if page_end == at && k + 1 >= self.pages.len() {
                    break;
                }
                continue;
            }
            let stop = page_end.min(range.end);
            f(
                self,
                Span::Page {
                    page: k,
                    sub: to_usize(at - page_start)?..to_usize(stop - page_start)?,
                },
            )?;
            at = stop;
        }
        Ok(())
    }

    /// Visits the pieces of `range`: runs of synthetic zeros and slices of
    /// decompressed pages, each page loaded into the cursor's own buffer.
    fn for_each_piece(
        &mut self,
        range: Range<u64>,
        mut f: impl FnMut(Piece<'_>, &ColumnCoding) -> Result<()>,
    ) -> Result<()> {
        self.for_each_span(range, |this, span| match span {
            Span::Zeros(n) => f(Piece::Zeros(n), &this.coding),
            Span::Page { page, sub, .. } => {
                this.load(page)?;
                let (n, offset) = this
                    .pages
                    .get(page)
                    .map_or((0, 0), |p| (p.n_elements as usize, p.locator.offset));
                match &this.current {
                    Some((_, bytes)) => f(
                        Piece::Page {
                            bytes,
                            n,
                            sub,
                            offset,
                        },
                        &this.coding,
                    ),
                    None => Ok(()),
                }
            }
        })
    }

    /// Calls `f` with the decompressed bytes of page `k`, its element count
    /// and its file offset. The bytes are the cursor's current page when it
    /// is `k`; otherwise the page is decompressed into a buffer of the
    /// thread, reused from page to page (and so warm in the cache), and not
    /// kept: for callers that take all they need from the page at once.
    fn with_page<R>(
        &mut self,
        k: usize,
        f: impl FnOnce(&[u8], &ColumnCoding, usize, u64) -> Result<R>,
    ) -> Result<R> {
        let page = *self
            .pages
            .get(k)
            .ok_or_else(|| Error::malformed("page list envelope", 0, "page index out of range"))?;
        let (n, offset) = (page.n_elements as usize, page.locator.offset);
        if let Some((c, bytes)) = &self.current {
            if *c == k {
                return f(bytes, &self.coding, n, offset);
            }
        }
        let len = self.page_len(&page)?;
        DECOMPRESSED.with(|cell| {
            let mut fresh = Vec::new();
            let mut borrowed = cell.try_borrow_mut();
            let buf = match borrowed.as_deref_mut() {
                Ok(buf) => buf,
                Err(_) => &mut fresh,
            };
            with_stored(|stored| self.decompress_page(page, len, stored, buf))?;
            let result = f(buf, &self.coding, n, offset);
            if buf.capacity() > MAX_KEPT_STORED_BYTES {
                *buf = Vec::new();
            }
            result
        })
    }

    /// Counts `bytes` more against the batch limit.
    fn charge(&mut self, what: &'static str, bytes: u64) -> Result<()> {
        let total = self.batch_bytes.saturating_add(bytes);
        let limit = self.source.limits.max_batch_bytes;
        if total > limit {
            return Err(Error::LimitExceeded {
                what,
                requested: total,
                limit,
            });
        }
        self.batch_bytes = total;
        Ok(())
    }

    /// The uncompressed size of `page`, within the page limit.
    fn page_len(&self, page: &PageRecord) -> Result<u64> {
        let bits = u64::from(self.coding.bits_on_storage);
        let len = (u64::from(page.n_elements) * bits).div_ceil(8);
        if len > self.source.limits.max_page_bytes {
            return Err(Error::LimitExceeded {
                what: "uncompressed page",
                requested: len,
                limit: self.source.limits.max_page_bytes,
            });
        }
        Ok(len)
    }

    /// Makes page `k` the current, decompressed page.
    fn load(&mut self, k: usize) -> Result<()> {
        if matches!(&self.current, Some((c, _)) if *c == k) {
            return Ok(());
        }
        let page = *self
            .pages
            .get(k)
            .ok_or_else(|| Error::malformed("page list envelope", 0, "page index out of range"))?;
        let len = self.page_len(&page)?;
        let mut buf = match std::mem::take(&mut self.current) {
            Some((_, b)) => b,
            None => self.source.buffers.take(),
        };
        with_stored(|stored| self.decompress_page(page, len, stored, &mut buf))?;
        self.current = Some((k, buf));
        Ok(())
    }

    /// Reads, verifies and decompresses `page` into `buf` (`len` bytes),
    /// reading the stored bytes into `stored`.
    fn decompress_page(
        &mut self,
        page: PageRecord,
        len: u64,
        stored: &mut Vec<u8>,
        buf: &mut Vec<u8>,
    ) -> Result<()> {
        let offset = page.locator.offset;
        let size = page.locator.size + if page.has_checksum { 8 } else { 0 };
        // A page and its checksum may be split over several keys.
        let data = read_blob_reusing(
            self.source.source.as_ref(),
            offset,
            size,
            self.source.max_key_size,
            stored,
        )?;
        if data.len() as u64 != size {
            return Err(Error::malformed(
                "page",
                offset,
                format!("read {} bytes, expected {size}", data.len()),
            ));
        }
        self.source.stats.record(size);
        let (compressed, checksum) = data.split_at(page.locator.size as usize);
        if page.has_checksum {
            let mut b = [0u8; 8];
            b.copy_from_slice(checksum);
            let expected = u64::from_le_bytes(b);
            let actual = xxh3_64(compressed);
            crate::error::verify_checksum("page", offset, expected, actual)?;
        }
        let len_usize = to_usize(len)?;
        // The chunk headers must justify the page's size before a buffer
        // of that size exists.
        check_block(compressed, len_usize, offset)?;
        self.charge("decompressed pages of a batch", len)?;
        // Every byte is overwritten by the decompression (or the copy of an
        // uncompressed page), so the buffer is not cleared first.
        decompress_into_vec(compressed, len_usize, buf, offset)
    }

    /// Where the cursor reads, for errors; formatted only when one occurs.
    fn context(&self) -> Place {
        Place {
            column: self.column_id,
            cluster: self.cluster_id,
        }
    }

    /// Appends the values of `range` to `out`, converted to `T`. Parts of
    /// pages decode on their own, straight into `out`.
    pub fn read_values<T: NativeType>(
        &mut self,
        range: Range<u64>,
        out: &mut Vec<T>,
    ) -> Result<()> {
        let ctx = self.context();
        self.for_each_piece(range, |piece, coding| match piece {
            Piece::Zeros(n) => {
                out.resize(out.len() + n, T::default());
                Ok(())
            }
            Piece::Page {
                bytes,
                n,
                sub,
                offset,
                ..
            } => encoding::decode_values_in(coding, bytes, n, sub, offset, out),
        })
        .with_context(|| ctx)
    }

    /// The values of `range`, converted to `T`. Each page is decompressed
    /// into a buffer of the thread and decoded at once: the part `range`
    /// needs goes to the output, and the rest of the page, decoded too, is
    /// kept for the next read (unless this one ends at the read end, see
    /// [`set_read_end`](Self::set_read_end)). That read, when it starts
    /// where this one ended, takes the kept values without decoding again:
    /// as a slice, without a copy, when they cover it, or else as the start
    /// of its output, which is sized for a batch like this one to grow into.
    pub fn read_values_buffer<T: NativeType + ArrowNativeType>(
        &mut self,
        range: Range<u64>,
    ) -> Result<ScalarBuffer<T>> {
        let ctx = self.context();
        self.read_values_carried(range).with_context(|| ctx)
    }

    fn read_values_carried<T: NativeType + ArrowNativeType>(
        &mut self,
        range: Range<u64>,
    ) -> Result<ScalarBuffer<T>> {
        let n = self.checked_len(&range, std::mem::size_of::<T>())?;
        let mut out: Vec<T> = Vec::new();
        if let Some(carry) = self.carry.take() {
            if carry.start == range.start {
                match carry.values.downcast::<Vec<T>>() {
                    Ok(kept) if kept.len() >= n => {
                        return Ok(self.take_from(ScalarBuffer::from(*kept), range.start, n));
                    }
                    Ok(kept) => out = *kept,
                    Err(values) => {
                        if let Ok(kept) = values.downcast::<ScalarBuffer<T>>() {
                            if kept.len() >= n {
                                return Ok(self.take_from(*kept, range.start, n));
                            }
                            out = Vec::with_capacity(n);
                            out.extend_from_slice(&kept);
                        }
                    }
                }
            }
        }
        out.reserve(n - out.len());
        let at = range.start + out.len() as u64;
        // Room for a next batch of about this one's size, for the rest of
        // the last page to grow into.
        let room = n.saturating_add(n / 8);
        let keep_rest = range.end < self.read_end;
        let decode = if self.streaming {
            encoding::decode_values_in_streaming::<T>
        } else {
            encoding::decode_values_in::<T>
        };
        let mut carry = None;
        self.for_each_span(at..range.end, |this, span| match span {
            Span::Zeros(k) => {
                out.resize(out.len() + k, T::default());
                Ok(())
            }
            Span::Page { page, sub, .. } => this.with_page(page, |bytes, coding, len, offset| {
                decode(coding, bytes, len, sub.clone(), offset, &mut out)?;
                if sub.end < len && keep_rest {
                    let rest = len - sub.end;
                    let mut kept: Vec<T> = Vec::with_capacity(rest.max(room));
                    decode(coding, bytes, len, sub.end..len, offset, &mut kept)?;
                    carry = Some(Carry {
                        start: range.end,
                        values: Box::new(kept),
                    });
                }
                Ok(())
            }),
        })?;
        self.carry = carry;
        Ok(ScalarBuffer::from(out))
    }

    /// The first `n` of the kept values `kept` (which start at element
    /// `start`), without a copy; the rest stays kept.
    fn take_from<T: ArrowNativeType>(
        &mut self,
        kept: ScalarBuffer<T>,
        start: u64,
        n: usize,
    ) -> ScalarBuffer<T> {
        let rest = kept.len() - n;
        if rest > 0 {
            self.carry = Some(Carry {
                start: start + n as u64,
                values: Box::new(kept.slice(n, rest)),
            });
        }
        kept.slice(0, n)
    }

    /// Visits the collection end offsets of `range` (cluster-relative), in
    /// order, as slices, each with whether its offsets are known not to
    /// decrease. Each page is decoded once, into a buffer kept for the
    /// batches that share the page, and the slices are taken from it:
    /// index pages are delta-coded, so a part of one cannot be decoded alone.
    pub fn for_each_index(
        &mut self,
        range: Range<u64>,
        mut f: impl FnMut(&[u64], bool),
    ) -> Result<()> {
        let mut decoded = std::mem::take(&mut self.decoded);
        let ctx = self.context();
        let result = self.for_each_span(range, |this, span| match span {
            Span::Zeros(n) => {
                f(&vec![0; n], true);
                Ok(())
            }
            Span::Page { page, sub, .. } => {
                if decoded.page != Some(page) {
                    decoded.page = None;
                    this.with_page(page, |bytes, coding, n, offset| {
                        decoded.decode(coding, bytes, n, offset)
                    })?;
                    decoded.page = Some(page);
                }
                if decoded.visit(sub, &mut f) {
                    return Ok(());
                }
                Err(Error::malformed(
                    "page",
                    this.pages.get(page).map_or(0, |p| p.locator.offset),
                    "index page holds fewer elements than listed",
                ))
            }
        });
        self.decoded = decoded;
        result.with_context(|| ctx)
    }

    /// Appends the variant switch values (index, tag) of `range`.
    pub fn read_switch(
        &mut self,
        range: Range<u64>,
        index: &mut Vec<u64>,
        tag: &mut Vec<u32>,
    ) -> Result<()> {
        let (mut si, mut st) = (Vec::new(), Vec::new());
        let ctx = self.context();
        self.for_each_piece(range, |piece, coding| match piece {
            Piece::Zeros(n) => {
                index.resize(index.len() + n, 0);
                tag.resize(tag.len() + n, 0);
                Ok(())
            }
            Piece::Page {
                bytes,
                n,
                sub,
                offset,
                ..
            } => {
                si.clear();
                st.clear();
                encoding::decode_switch(coding, bytes, n, offset, &mut si, &mut st)?;
                index.extend_from_slice(si.get(sub.clone()).unwrap_or_default());
                tag.extend_from_slice(st.get(sub).unwrap_or_default());
                Ok(())
            }
        })
        .with_context(|| ctx)
    }

    /// Appends the booleans of `range`.
    pub fn read_bits(&mut self, range: Range<u64>, out: &mut BitVec) -> Result<()> {
        let ctx = self.context();
        self.for_each_piece(range, |piece, coding| match piece {
            Piece::Zeros(n) => {
                out.extend_packed(&vec![0u8; n.div_ceil(8)], n);
                Ok(())
            }
            Piece::Page {
                bytes,
                n,
                sub,
                offset,
                ..
            } => encoding::decode_bits_in(coding, bytes, n, sub, offset, out),
        })
        .with_context(|| ctx)
    }
}

impl Drop for ColumnCursor {
    fn drop(&mut self) {
        if let Some((_, page)) = self.current.take() {
            self.source.buffers.give(page);
        }
    }
}

/// The end offsets of one page of an index column, decoded.
#[derive(Debug, Default)]
struct DecodedIndex {
    /// The page (its position in the cursor's page list) held, if any.
    page: Option<usize>,
    /// Whether the page's deltas past its first fit a byte (collections of
    /// fewer than 256 elements per entry, the usual case). Its ends are
    /// then kept as `first` and `sizes` and summed as they are read, in
    /// small blocks: a whole page of 64-bit ends, written out and read
    /// back, would be eight times the size.
    narrow: bool,
    /// Every end offset of a page that is not narrow.
    values: Vec<u64>,
    /// Whether `values` are known not to decrease.
    ordered: bool,
    /// The first end of a narrow page.
    first: u64,
    /// The low byte plane of a narrow page: end `i` is `first` plus
    /// `sizes[1..=i]`.
    sizes: Vec<u8>,
    /// A known end of a narrow page, `(i, end i)`: where the last read
    /// stopped, for the next one to go on from.
    mark: (usize, u64),
}

impl DecodedIndex {
    /// Decodes the `n`-element page `src`.
    fn decode(&mut self, coding: &ColumnCoding, src: &[u8], n: usize, offset: u64) -> Result<()> {
        self.values.clear();
        self.sizes.clear();
        if let Some((first, sizes)) = encoding::narrow_index(coding, src, n, offset)? {
            self.narrow = true;
            self.first = first;
            self.sizes.extend_from_slice(sizes);
            self.mark = (0, first);
            return Ok(());
        }
        self.narrow = false;
        self.ordered = encoding::decode_index_ordered(coding, src, n, offset, &mut self.values)?;
        Ok(())
    }

    /// Calls `f` with the ends `sub` of the page, in order, in one or more
    /// slices, each with whether it is known not to decrease. False if the
    /// page has fewer elements.
    fn visit(&mut self, sub: Range<usize>, f: &mut impl FnMut(&[u64], bool)) -> bool {
        if !self.narrow {
            let Some(ends) = self.values.get(sub) else {
                return false;
            };
            f(ends, self.ordered);
            return true;
        }
        if sub.start > sub.end || sub.end > self.sizes.len() {
            return false;
        }
        if sub.is_empty() {
            f(&[], true);
            return true;
        }
        let sizes = &self.sizes;
        let sum = |range: Range<usize>| -> u64 {
            sizes
                .get(range)
                .unwrap_or_default()
                .iter()
                .map(|&s| u64::from(s))
                .sum()
        };
        // The end at `sub.start`, from the mark if the read goes on from it.
        let (i, end) = if self.mark.0 <= sub.start {
            self.mark
        } else {
            (0, self.first)
        };
        let mut end = end + sum(i + 1..sub.start + 1);
        let mut block = [0u64; INDEX_BLOCK];
        let mut at = sub.start;
        loop {
            let len = INDEX_BLOCK.min(sub.end - at);
            let Some((head, rest)) = block.split_first_mut() else {
                break;
            };
            *head = end;
            let next = sizes.get(at + 1..at + len).unwrap_or_default();
            for (slot, &size) in rest.iter_mut().zip(next) {
                end += u64::from(size);
                *slot = end;
            }
            f(block.get(..len).unwrap_or_default(), true);
            at += len;
            if at == sub.end {
                break;
            }
            end += sizes.get(at).map_or(0, |&s| u64::from(s));
        }
        self.mark = (sub.end - 1, end);
        true
    }
}

/// A column in a cluster, as errors name it.
#[derive(Debug, Clone, Copy)]
struct Place {
    column: u32,
    cluster: u64,
}

impl std::fmt::Display for Place {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "column {} in cluster {}", self.column, self.cluster)
    }
}

/// The ends of a narrow index page are summed in blocks of this many, on
/// the stack, for the reader to convert.
const INDEX_BLOCK: usize = 1024;

/// Decoded values of a page past the end of a read, from element `start`
/// of the cluster on: a `Vec<T>` or a `ScalarBuffer<T>` of the reader's `T`.
struct Carry {
    start: u64,
    values: Box<dyn Any + Send>,
}

impl std::fmt::Debug for Carry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Carry").field("start", &self.start).finish()
    }
}

enum Piece<'a> {
    Zeros(usize),
    Page {
        bytes: &'a [u8],
        n: usize,
        sub: Range<usize>,
        offset: u64,
    },
}

/// A part of a range, before any page is loaded.
enum Span {
    Zeros(usize),
    /// Elements `sub` of page `page`.
    Page {
        page: usize,
        sub: Range<usize>,
    },
}

fn to_usize(n: u64) -> Result<usize> {
    usize::try_from(n)
        .map_err(|_| Error::malformed("page", 0, format!("{n} elements do not fit in memory")))
}

#[cfg(test)]
mod pool_tests {
    use super::BufferPool;

    /// Buffers come back in the state they were given (no clearing), empty
    /// ones are not kept, and the pool keeps at most `MAX_BYTES`.
    #[test]
    fn the_pool_reuses_buffers_up_to_its_bound() {
        let pool = BufferPool::default();
        assert!(pool.take().is_empty());
        pool.give(Vec::new());
        assert_eq!(pool.lock().len(), 0);
        pool.give(vec![7u8; 1000]);
        let again = pool.take();
        assert_eq!(again, vec![7u8; 1000]);
        let big = BufferPool::MAX_BYTES / 2 + 1;
        pool.give(Vec::with_capacity(big));
        pool.give(Vec::with_capacity(big));
        assert_eq!(
            pool.lock().len(),
            1,
            "a second half-limit buffer is over the bound"
        );
    }
}

#[cfg(test)]
mod index_tests {
    use super::*;
    use crate::descriptor::ColumnType;

    /// A split index page of `n` ends whose sizes are `size(i)`.
    fn split_page(width: usize, first: u64, sizes: &[u8]) -> Vec<u8> {
        let n = sizes.len();
        let mut page = vec![0u8; n * width];
        for (plane, byte) in first.to_le_bytes().iter().take(width).enumerate() {
            page[plane * n] = *byte;
        }
        page[1..n].copy_from_slice(&sizes[1..]);
        page
    }

    /// Reads of a narrow page, forward, repeated, backward and across the
    /// block size, give the same ends as the page decoded whole; so do
    /// reads of a page that is not narrow.
    #[test]
    fn narrow_pages_read_as_decoded_whole() {
        let mut next = crate::test_util::xorshift(0x2545_F491_4F6C_DD1D);
        for (round, column_type) in [ColumnType::SplitIndex64, ColumnType::SplitIndex32]
            .into_iter()
            .cycle()
            .take(40)
            .enumerate()
        {
            let width = if column_type == ColumnType::SplitIndex64 {
                8
            } else {
                4
            };
            let n = 1 + (next() % 5000) as usize;
            let first = if round % 3 == 0 {
                next() % 1_000_000
            } else {
                0
            };
            let sizes: Vec<u8> = (0..n).map(|_| next() as u8).collect();
            let mut page = split_page(width, first, &sizes);
            if round % 5 == 4 && n > 2 {
                page[n + n / 2] = 1; // a wide size: the page is not narrow
            }
            let coding = ColumnCoding::new(column_type);
            let mut whole = Vec::new();
            encoding::decode_index(&coding, &page, n, 0, &mut whole).unwrap();
            let mut decoded = DecodedIndex::default();
            decoded.decode(&coding, &page, n, 0).unwrap();
            assert_eq!(decoded.narrow, round % 5 != 4 || n <= 2, "round {round}");
            let mut at: usize = 0;
            for _ in 0..30 {
                let start = match next() % 4 {
                    0 => (next() as usize) % (n + 1), // anywhere, also backward
                    1 => at.saturating_sub(1),        // the last end again
                    _ => at,                          // where the last read stopped
                };
                let end = (start + (next() as usize) % 2500).min(n);
                let mut seen = Vec::new();
                assert!(decoded.visit(start..end, &mut |ends, ordered| {
                    assert!(!ordered || ends.windows(2).all(|w| w[0] <= w[1]));
                    seen.extend_from_slice(ends);
                }));
                assert_eq!(seen, whole[start..end], "round {round}, {start}..{end}");
                at = end;
            }
            assert!(!decoded.visit(0..n + 1, &mut |_, _| {}));
        }
    }
}
