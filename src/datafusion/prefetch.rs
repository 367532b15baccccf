//! Byte ranges of an object fetched ahead of their reads, for
//! [`ObjectStoreReader`](super::ObjectStoreReader).
//!
//! ```text
//!  prefetch(ranges) ─> chunks: neighbouring ranges (gaps up to 64 KiB), up to 8 MiB,
//!                      needed within an eighth of the read of each other;
//!                      queued in the order they are needed
//!  queued ─> started while fewer than 8 requests are out and the chunks
//!            started hold less than 64 MiB ─> one GET each ─> done
//!  read(range) inside a chunk ─> still queued? started at once ─> wait ─> slice
//!               └─ once a chunk's wanted bytes have all been read, it is used up:
//!                  kept among the recent chunks (8 MiB), for pages read again
//! ```
//!
//! A reader of a cluster asks for the pages of its projected columns, and
//! for those of the next cluster, which start arriving while this one
//! decodes, as in ROOT's cluster pool. Each page comes with how far into
//! the read it is first needed ([`PrefetchRange::at`]). The columns of a
//! cluster lie one after another in the file, and the first batch needs the
//! first page of every column: chunks in file order would each hold a long
//! run of one column, kept until the end of the cluster. Instead a chunk
//! takes a column's pages needed close together, and chunks start in the
//! order they are needed, so what is held is the next stretch of every
//! column, and it is dropped as the read passes it. The chunks of all but
//! the last [`KEEP_CALLS`] calls are dropped when a new call comes: a read
//! that stopped early leaves nothing behind for long.

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

use std::collections::VecDeque;
use std::ops::Range;
#[cfg(test)]
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use bytes::Bytes;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use tokio::runtime::Handle;

use crate::error::{Error, Result};
use crate::io::PrefetchRange;

/// Ranges with gaps up to this size between them are fetched together.
const GAP: u64 = 64 << 10;
/// The largest chunk made of several ranges (a single longer range is one
/// chunk of its own).
const CHUNK: u64 = 8 << 20;
/// Ranges needed far apart in the read still share a chunk up to this
/// size: one request for a small column's pages, or for the end of one
/// column and the start of the next.
const SMALL_CHUNK: u64 = 1 << 20;
/// How far apart in the read (a share of it) the ranges of one chunk may
/// be needed.
const SPAN: f32 = 0.125;
/// Requests out at once.
const MAX_REQUESTS: usize = 8;
/// Bytes of the chunks started and not yet used up, past which queued
/// chunks wait (unless a read asks for them): half a cluster of ROOT's
/// default size, 128 MiB compressed. The next chunks start as the read
/// uses up earlier ones.
const MAX_HELD: u64 = 64 << 20;
/// Bytes of the chunks used up that are kept for reads of the same pages
/// again.
const RECENT: u64 = 8 << 20;
/// The calls whose chunks are kept: this one and the one before, the
/// cluster being read and the next.
const KEEP_CALLS: u64 = 2;

/// Ranges of one object fetched ahead of their reads.
pub(crate) struct Prefetcher {
    store: Arc<dyn ObjectStore>,
    location: Path,
    len: u64,
    handle: Handle,
    chunks: Mutex<Chunks>,
    /// Reads served from chunks, for tests.
    #[cfg(test)]
    served: AtomicU64,
}

#[derive(Default)]
struct Chunks {
    /// In the order they are needed within a call, calls in order.
    list: Vec<Chunk>,
    /// Chunks used up lately, oldest first, up to [`RECENT`] bytes: a page
    /// read again (the offsets of a collection, which a reader of part of
    /// a cluster reads to find the items' pages, and the read reads
    /// again) is served from here, and a call that asks for it again
    /// takes it back.
    recent: VecDeque<Chunk>,
    calls: u64,
}

impl Chunks {
    /// Keeps a chunk used up among the recent ones, dropping the oldest
    /// past [`RECENT`] bytes.
    fn keep_recent(&mut self, chunk: Chunk) {
        self.recent.push_back(chunk);
        let mut held: u64 = self
            .recent
            .iter()
            .map(|c| c.range.end - c.range.start)
            .sum();
        while held > RECENT {
            let Some(old) = self.recent.pop_front() else {
                break;
            };
            held -= old.range.end - old.range.start;
        }
    }
}

struct Chunk {
    range: Range<u64>,
    /// The bytes of the ranges asked for (without the gaps between them).
    wanted: u64,
    /// The bytes read from it so far.
    served: u64,
    call: u64,
    started: bool,
    fetch: Arc<Fetch>,
}

/// The outcome of one request, waited for by the reads that need it.
#[derive(Default)]
struct Fetch {
    result: Mutex<Option<std::result::Result<Bytes, String>>>,
    done: Condvar,
}

impl Fetch {
    fn set(&self, result: std::result::Result<Bytes, String>) {
        let mut slot = self.result.lock().unwrap_or_else(PoisonError::into_inner);
        if slot.is_none() {
            *slot = Some(result);
        }
        self.done.notify_all();
    }

    fn is_done(&self) -> bool {
        self.result
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some()
    }

    fn wait(&self) -> std::result::Result<Bytes, String> {
        let mut slot = self.result.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if let Some(result) = &*slot {
                return result.clone();
            }
            slot = self.done.wait(slot).unwrap_or_else(PoisonError::into_inner);
        }
    }
}

/// Ends a fetch that stops without a result (its task was dropped or
/// panicked): the reads waiting for it get an error instead of waiting
/// for ever.
struct Finish(Arc<Fetch>);

impl Drop for Finish {
    fn drop(&mut self) {
        self.0.set(Err("the request was dropped".to_string()));
    }
}

impl Prefetcher {
    pub(crate) fn new(
        store: Arc<dyn ObjectStore>,
        location: Path,
        len: u64,
        handle: Handle,
    ) -> Self {
        Self {
            store,
            location,
            len,
            handle,
            chunks: Mutex::new(Chunks::default()),
            #[cfg(test)]
            served: AtomicU64::new(0),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Chunks> {
        self.chunks.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues `ranges` (those not held or queued already) and starts what
    /// there is room for; drops the chunks of calls before the last
    /// [`KEEP_CALLS`]. A call that asks again for a range of the last
    /// call's chunks continues that call (a read that names its pages in
    /// rounds).
    pub(crate) fn prefetch(self: &Arc<Self>, ranges: &[PrefetchRange]) {
        let mut chunks = self.lock();
        let last = chunks.calls;
        let continues = ranges.iter().any(|r| {
            let Chunks { list, recent, .. } = &*chunks;
            list.iter()
                .chain(recent)
                .any(|c| c.call == last && contains(&c.range, &r.range))
        });
        if !continues {
            chunks.calls += 1;
        }
        let call = chunks.calls;
        let mut new = Vec::new();
        for r in ranges
            .iter()
            .filter(|r| r.range.start < r.range.end && r.range.end <= self.len)
        {
            if let Some(chunk) = chunks
                .list
                .iter_mut()
                .find(|c| contains(&c.range, &r.range))
            {
                // Asked for again: kept as long as this call's.
                chunk.call = call;
                continue;
            }
            let used = chunks
                .recent
                .iter()
                .position(|c| contains(&c.range, &r.range));
            match used.and_then(|k| chunks.recent.remove(k)) {
                // Used up, and asked for again: held for its new reads.
                Some(mut chunk) => {
                    chunk.call = call;
                    chunk.served = 0;
                    chunk.wanted = r.range.end - r.range.start;
                    chunks.list.push(chunk);
                }
                None => new.push(r.clone()),
            }
        }
        chunks.list.retain(|c| c.call + KEEP_CALLS > call);
        for Planned { range, wanted, .. } in plan(new) {
            chunks.list.push(Chunk {
                range,
                wanted,
                served: 0,
                call,
                started: false,
                fetch: Arc::default(),
            });
        }
        self.start_queued(&mut chunks);
    }

    /// Starts queued chunks, in order, while there is room.
    fn start_queued(self: &Arc<Self>, chunks: &mut Chunks) {
        let mut out = 0;
        let mut held = 0;
        for chunk in chunks.list.iter().filter(|c| c.started) {
            held += chunk.range.end - chunk.range.start;
            out += usize::from(!chunk.fetch.is_done());
        }
        for k in 0..chunks.list.len() {
            let Some(chunk) = chunks.list.get_mut(k) else {
                break;
            };
            if chunk.started {
                continue;
            }
            let len = chunk.range.end - chunk.range.start;
            if out >= MAX_REQUESTS || (held > 0 && held + len > MAX_HELD) {
                break;
            }
            held += len;
            out += 1;
            self.start(chunk);
        }
    }

    fn start(self: &Arc<Self>, chunk: &mut Chunk) {
        chunk.started = true;
        let finish = Finish(chunk.fetch.clone());
        let this = self.clone();
        let range = chunk.range.clone();
        self.handle.spawn(async move {
            let expected = range.end - range.start;
            let result = match this.store.get_range(&this.location, range.clone()).await {
                Ok(bytes) if bytes.len() as u64 == expected => Ok(bytes),
                Ok(bytes) => Err(format!(
                    "bytes {}..{} of {}: the store sent {} bytes",
                    range.start,
                    range.end,
                    this.location,
                    bytes.len()
                )),
                Err(e) => Err(e.to_string()),
            };
            finish.0.set(result);
            drop(finish);
            let mut chunks = this.lock();
            this.start_queued(&mut chunks);
        });
    }

    /// The `len` bytes at `offset` if a chunk holds them (waiting for its
    /// request), `None` if none does.
    pub(crate) fn read(self: &Arc<Self>, offset: u64, len: usize) -> Option<Result<Bytes>> {
        let range = offset..offset.checked_add(len as u64)?;
        let (fetch, start) = {
            let mut chunks = self.lock();
            match chunks.list.iter().position(|c| contains(&c.range, &range)) {
                Some(k) => {
                    let chunk = chunks.list.get_mut(k)?;
                    if !chunk.started {
                        // Needed now: it goes ahead of the queue.
                        self.start(chunk);
                    }
                    chunk.served += len as u64;
                    let found = (chunk.fetch.clone(), chunk.range.start);
                    if chunk.served >= chunk.wanted {
                        let used = chunks.list.remove(k);
                        chunks.keep_recent(used);
                        self.start_queued(&mut chunks);
                    }
                    found
                }
                None => {
                    // Read again after its chunk was used up.
                    let chunk = chunks.recent.iter().find(|c| contains(&c.range, &range))?;
                    (chunk.fetch.clone(), chunk.range.start)
                }
            }
        };
        #[cfg(test)]
        self.served.fetch_add(1, Ordering::Relaxed);
        let bytes = match fetch.wait() {
            Ok(bytes) => bytes,
            Err(e) => return Some(Err(Error::Io(std::io::Error::other(e)))),
        };
        let from = usize::try_from(offset - start).ok()?;
        let to = from.checked_add(len)?;
        Some(match bytes.get(from..to) {
            Some(_) => Ok(bytes.slice(from..to)),
            None => Err(Error::malformed("read", offset, "a fetched chunk is short")),
        })
    }

    /// The reads served from chunks so far.
    #[cfg(test)]
    pub(crate) fn reads_served(&self) -> u64 {
        self.served.load(Ordering::Relaxed)
    }

    #[cfg(test)]
    fn held(&self) -> Vec<(Range<u64>, bool)> {
        self.lock()
            .list
            .iter()
            .map(|c| (c.range.clone(), c.started))
            .collect()
    }
}

fn contains(outer: &Range<u64>, inner: &Range<u64>) -> bool {
    outer.start <= inner.start && inner.end <= outer.end
}

/// A chunk to fetch: its bytes, the bytes of the ranges in it (overlaps
/// counted once), and when the read first needs it.
#[derive(Debug, PartialEq)]
struct Planned {
    range: Range<u64>,
    wanted: u64,
    at: f32,
}

/// Chunks over `ranges`, in the order the read needs them: runs of ranges
/// in file order whose gaps are at most [`GAP`], cut where a chunk would
/// pass [`CHUNK`], or, past [`SMALL_CHUNK`], where the next range is
/// needed more than [`SPAN`] away from the chunk's first. So a run of one
/// column's pages is cut into stretches of the read, and the end of one
/// column is not joined to the start of the next.
fn plan(mut ranges: Vec<PrefetchRange>) -> Vec<Planned> {
    ranges.sort_by_key(|r| (r.range.start, r.range.end));
    let mut out: Vec<Planned> = Vec::new();
    for PrefetchRange { range: r, at } in ranges {
        match out.last_mut() {
            Some(chunk)
                if r.start <= chunk.range.end.saturating_add(GAP)
                    && (r.end <= chunk.range.end || r.end - chunk.range.start <= CHUNK)
                    && ((at - chunk.at).abs() <= SPAN
                        || r.end.max(chunk.range.end) - chunk.range.start <= SMALL_CHUNK) =>
            {
                // Only the part past the chunk's end is new.
                chunk.wanted += r.end.saturating_sub(r.start.max(chunk.range.end));
                chunk.range.end = chunk.range.end.max(r.end);
                chunk.at = chunk.at.min(at);
            }
            _ => out.push(Planned {
                wanted: r.end - r.start,
                range: r,
                at,
            }),
        }
    }
    out.sort_by(|a, b| {
        a.at.total_cmp(&b.at)
            .then(a.range.start.cmp(&b.range.start))
    });
    out
}

#[cfg(test)]
// Lists of one range are lists of ranges here.
#[allow(clippy::single_range_in_vec_init)]
mod tests {
    use super::*;
    use object_store::memory::InMemory;
    use object_store::PutPayload;

    /// Ranges all needed at the start of the read.
    fn at_once(ranges: impl IntoIterator<Item = Range<u64>>) -> Vec<PrefetchRange> {
        ranges.into_iter().map(PrefetchRange::at_once).collect()
    }

    fn chunks(planned: Vec<Planned>) -> Vec<(Range<u64>, u64)> {
        planned.into_iter().map(|c| (c.range, c.wanted)).collect()
    }

    #[test]
    fn plan_joins_neighbours_and_cuts_long_runs() {
        let mb = 1 << 20;
        // Two pages 1 KiB apart, one far away, and a page inside the first.
        let got = plan(at_once([
            2000..3000,
            0..1000,
            10 * mb..10 * mb + 5,
            100..200,
        ]));
        assert_eq!(
            chunks(got),
            vec![(0..3000, 2000), (10 * mb..10 * mb + 5, 5)]
        );
        // Adjacent 1 MiB pages: cut into chunks of 8 MiB.
        let got = plan(at_once((0..20).map(|k| k * mb..(k + 1) * mb)));
        assert_eq!(
            chunks(got),
            vec![
                (0..8 * mb, 8 * mb),
                (8 * mb..16 * mb, 8 * mb),
                (16 * mb..20 * mb, 4 * mb)
            ]
        );
        // A page longer than a chunk is a chunk of its own.
        assert_eq!(
            chunks(plan(at_once([0..20 * mb]))),
            vec![(0..20 * mb, 20 * mb)]
        );
    }

    /// Two columns of ten 1 MiB pages each, one after the other in the
    /// file, each read from start to end: chunks hold stretches of an
    /// eighth of the read or less, the last of the first column is not
    /// joined to the start of the second, and both columns' starts come
    /// first. Small pages needed far apart still share a chunk.
    #[test]
    fn plan_cuts_columns_into_stretches_of_the_read() {
        let mb = 1 << 20;
        let column = |first: u64| {
            (0..10).map(move |k| PrefetchRange {
                range: (first + k) * mb..(first + k + 1) * mb,
                at: k as f32 / 10.0,
            })
        };
        let got = plan(column(0).chain(column(10)).collect());
        let order: Vec<_> = got
            .iter()
            .map(|c| (c.range.start / mb, c.range.end / mb, c.at))
            .collect();
        assert_eq!(
            order,
            vec![
                (0, 2, 0.0),
                (10, 12, 0.0),
                (2, 4, 0.2),
                (12, 14, 0.2),
                (4, 6, 0.4),
                (14, 16, 0.4),
                (6, 8, 0.6),
                (16, 18, 0.6),
                (8, 10, 0.8),
                (18, 20, 0.8),
            ]
        );
        let small: Vec<_> = (0..8)
            .map(|k| PrefetchRange {
                range: k * 10_000..(k + 1) * 10_000,
                at: k as f32 / 8.0,
            })
            .collect();
        assert_eq!(chunks(plan(small)), vec![(0..80_000, 80_000)]);
    }

    fn prefetcher(len: usize) -> (Arc<Prefetcher>, Vec<u8>, tokio::runtime::Runtime) {
        let bytes: Vec<u8> = (0..len).map(|i| (i * 13 % 251) as u8).collect();
        let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let path = Path::from("x.root");
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        runtime
            .block_on(store.put(&path, PutPayload::from(bytes.clone())))
            .unwrap();
        let p = Prefetcher::new(store, path, len as u64, runtime.handle().clone());
        (Arc::new(p), bytes, runtime)
    }

    #[test]
    fn reads_are_served_from_chunks_which_go_once_used_up() {
        let (p, bytes, _runtime) = prefetcher(1_000_000);
        p.prefetch(&at_once([0..1000, 1000..3000, 500_000..510_000]));
        assert_eq!(p.held().len(), 1 + 1);
        // Asked for again: nothing new.
        p.prefetch(&at_once([1000..3000]));
        assert_eq!(p.held().len(), 2);
        let got = p.read(1000, 2000).unwrap().unwrap();
        assert_eq!(&got[..], &bytes[1000..3000]);
        assert_eq!(p.held().len(), 2, "half of the first chunk is read");
        let got = p.read(0, 1000).unwrap().unwrap();
        assert_eq!(&got[..], &bytes[..1000]);
        assert_eq!(p.held(), vec![(500_000..510_000, true)]);
        // Outside every chunk, or past the end: not served here.
        assert!(p.read(3000, 10).is_none());
        assert!(p.read(999_999, 10).is_none());
        p.prefetch(&at_once([999_000..1_000_001]));
        assert_eq!(
            p.held(),
            vec![(500_000..510_000, true)],
            "a range past the end is not fetched"
        );
    }

    #[test]
    fn chunks_of_old_calls_are_dropped() {
        let (p, _bytes, _runtime) = prefetcher(1_000_000);
        p.prefetch(&at_once([0..10]));
        p.prefetch(&at_once([200_000..200_010]));
        p.prefetch(&at_once([400_000..400_010]));
        let held: Vec<_> = p.held().into_iter().map(|(r, _)| r).collect();
        assert_eq!(held, vec![200_000..200_010, 400_000..400_010]);
        // Asking for a range again keeps its chunk as long as the new ones.
        p.prefetch(&at_once([200_000..200_005]));
        p.prefetch(&at_once([600_000..600_010]));
        let held: Vec<_> = p.held().into_iter().map(|(r, _)| r).collect();
        assert_eq!(held, vec![200_000..200_010, 600_000..600_010]);
    }

    /// A page read again after its chunk was used up comes from the recent
    /// chunks, and a call asking for it again takes its chunk back; a call
    /// that asks again for a range of the last call continues that call,
    /// so the call before keeps its chunks.
    #[test]
    fn used_chunks_serve_reads_again_and_rounds_continue_a_call() {
        let (p, bytes, _runtime) = prefetcher(1_000_000);
        p.prefetch(&at_once([0..1000]));
        p.prefetch(&at_once([200_000..201_000]));
        let got = p.read(200_000, 1000).unwrap().unwrap();
        assert_eq!(&got[..], &bytes[200_000..201_000]);
        assert_eq!(p.held(), vec![(0..1000, true)], "used up");
        let again = p.read(200_500, 100).unwrap().unwrap();
        assert_eq!(&again[..], &bytes[200_500..200_600]);
        // The second round of the last call: it asks for its pages again,
        // and the call before keeps its chunk.
        p.prefetch(&at_once([200_000..201_000, 300_000..300_010]));
        let held: Vec<_> = p.held().into_iter().map(|(r, _)| r).collect();
        assert_eq!(held, vec![0..1000, 200_000..201_000, 300_000..300_010]);
        // A new call drops the first call's chunk.
        p.prefetch(&at_once([400_000..400_010]));
        let held: Vec<_> = p.held().into_iter().map(|(r, _)| r).collect();
        assert_eq!(
            held,
            vec![200_000..201_000, 300_000..300_010, 400_000..400_010]
        );
    }

    /// With a runtime that runs its tasks only when driven, requests stay
    /// out: at most MAX_REQUESTS start, those needed first, and a read of a
    /// queued chunk starts it ahead of the others.
    #[test]
    fn queued_chunks_wait_for_room_and_a_read_starts_its_own() {
        let mb = 1u64 << 20;
        let bytes: Vec<u8> = (0..20 * mb).map(|i| (i * 13 % 251) as u8).collect();
        let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let path = Path::from("x.root");
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime
            .block_on(store.put(&path, PutPayload::from(bytes.clone())))
            .unwrap();
        let p = Arc::new(Prefetcher::new(
            store,
            path,
            20 * mb,
            runtime.handle().clone(),
        ));
        // Ten 1 MiB chunks 1 MiB apart: more than MAX_REQUESTS. Those
        // further in the file are needed first.
        let ranges: Vec<_> = (0..10)
            .map(|k| PrefetchRange {
                range: 2 * k * mb..(2 * k + 1) * mb,
                at: 1.0 - k as f32 / 10.0,
            })
            .collect();
        p.prefetch(&ranges);
        let started = |p: &Prefetcher| p.held().iter().filter(|(_, s)| *s).count();
        assert_eq!(started(&p), MAX_REQUESTS);
        let waiting: Vec<_> = p.held().into_iter().filter(|(_, s)| !s).collect();
        assert_eq!(waiting, vec![(2 * mb..3 * mb, false), (0..mb, false)]);
        // The first one in the file is queued: a read starts it, and waits
        // for it.
        let reader = {
            let p = p.clone();
            std::thread::spawn(move || p.read(0, 10).unwrap().unwrap())
        };
        runtime.block_on(async {
            while !reader.is_finished() {
                tokio::time::sleep(std::time::Duration::from_millis(1)).await;
            }
        });
        let got = reader.join().unwrap();
        assert_eq!(&got[..], &bytes[..10]);
        assert_eq!(started(&p), 10);
    }

    /// A request that fails fails the reads waiting for it, with the
    /// store's message.
    #[test]
    fn a_failed_request_is_an_error_for_its_reads() {
        let (p, _bytes, runtime) = prefetcher(1000);
        let missing = Prefetcher::new(
            p.store.clone(),
            Path::from("gone.root"),
            1000,
            runtime.handle().clone(),
        );
        let missing = Arc::new(missing);
        missing.prefetch(&at_once([0..100]));
        let e = missing.read(0, 100).unwrap().unwrap_err();
        assert!(e.to_string().contains("gone.root"), "{e}");
    }
}
