//! The batches of one cluster, decoded with fields running ahead.
//!
//! Each top-level field of the read is a *lane*: its batches decode in
//! entry order, one task at a time, on the rayon pool. Lanes do not wait for
//! each other, so a lane done with batch `k` goes on to `k + 1` while a
//! slower lane is still on `k`, and the pool stays busy through the end of
//! every batch instead of idling behind its longest field. Batch `k` is
//! handed out once all lanes have done it. Lanes run at most
//! [`BATCHES_AHEAD`] batches past the one the consumer waits for, which
//! bounds the memory held.
//!
//! ```text
//!  lane MET_pt       [k][k+1]      [k+2]
//!  lane _collection1 [    k    ][   k+1   ]
//!  lane _collection2 [   k   ][  k+1  ]
//!  projections                [k]       [k+1]   (once every source lane has the batch)
//!  consumer          ───────── take k ───────── take k+1
//! ```
//!
//! Projected fields (NanoAOD's `Muon_pt`, aliases of `_collection2`) share
//! the arrays of the fields they alias through [`SharedReads`], so their
//! lanes start a batch only after every other lane has finished it.

use std::collections::VecDeque;
use std::ops::Range;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use arrow_array::ArrayRef;

use crate::arrow::assemble::{NodeReader, SharedReads};
use crate::error::{Error, Result};

/// How many batches past the one the consumer waits for a lane may decode:
/// with 2, a lane works on the awaited batch or the one after it.
pub const BATCHES_AHEAD: usize = 2;

/// Batches of fewer entries times fields than this are decoded on the
/// consumer's thread: handing a task to the pool and waking the consumer
/// costs a few microseconds, more than decoding a few values.
const INLINE_WORK: u64 = 16_384;

/// A cluster's entry range cut into batches of `size` entries (the last
/// may be shorter), computed per batch rather than listed: the entry count
/// comes from the file.
#[derive(Debug, Clone)]
pub(super) struct BatchRanges {
    range: Range<u64>,
    size: u64,
    len: usize,
}

impl BatchRanges {
    pub(super) fn new(range: Range<u64>, size: u64) -> Self {
        let size = size.max(1);
        let n = range.end.saturating_sub(range.start).div_ceil(size);
        Self {
            range,
            size,
            len: usize::try_from(n).unwrap_or(usize::MAX),
        }
    }

    /// The entry range of batch `k`.
    fn get(&self, k: usize) -> Option<Range<u64>> {
        if k >= self.len {
            return None;
        }
        let start = self.range.start + k as u64 * self.size;
        Some(start..start.saturating_add(self.size).min(self.range.end))
    }
}

/// The batches of one cluster: their entry ranges and the lanes decoding
/// them. Dropping it stops the lanes after the tasks already running.
#[derive(Debug)]
pub(super) struct Pipeline {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    lanes: Vec<Mutex<NodeReader>>,
    /// Whether each lane is a projection of other fields.
    projection: Vec<bool>,
    /// The cluster-relative entry range of each batch.
    ranges: BatchRanges,
    /// The columns the lanes share, for each batch's [`SharedReads`].
    shared: SharedReads,
    state: Mutex<State>,
    /// Signalled when the batch the consumer waits for is complete or failed.
    ready: Condvar,
    /// Batches too small to be worth handing to the pool are decoded on the
    /// consumer's thread, one at a time.
    inline: bool,
    /// How many batches past the awaited one lanes may decode.
    ahead: usize,
}

#[derive(Debug)]
struct State {
    /// The next batch of each lane.
    next: Vec<usize>,
    /// Whether a task of each lane is running.
    running: Vec<bool>,
    /// Batches handed to the consumer: `slots[0]` is batch `taken`.
    taken: usize,
    slots: VecDeque<Slot>,
    /// No task of this batch or a later one starts: the number of batches
    /// until an error (at the first failed batch) or a drop (0).
    end: usize,
}

/// One batch in flight.
#[derive(Debug)]
struct Slot {
    arrays: Vec<Option<ArrayRef>>,
    /// Lanes that have not finished this batch.
    left: usize,
    /// Lanes other than projections that have not finished this batch.
    sources_left: usize,
    shared: Arc<SharedReads>,
    error: Option<Error>,
}

impl Pipeline {
    /// Decodes `ranges` of the fields read by `readers`, lanes running up
    /// to `ahead` batches past the awaited one (0: on the consumer's
    /// thread; `None`: [`BATCHES_AHEAD`], or 0 for small batches).
    pub(super) fn new(readers: Vec<NodeReader>, ranges: BatchRanges, ahead: Option<usize>) -> Self {
        let shared = SharedReads::new(&readers);
        let projection = readers.iter().map(NodeReader::is_projection).collect();
        let n = readers.len();
        let ahead = ahead.unwrap_or(if ranges.size.saturating_mul(n as u64) < INLINE_WORK {
            0
        } else {
            BATCHES_AHEAD
        });
        let inline = ahead == 0;
        Self {
            inner: Arc::new(Inner {
                lanes: readers.into_iter().map(Mutex::new).collect(),
                projection,
                ranges,
                shared,
                state: Mutex::new(State {
                    next: vec![0; n],
                    running: vec![false; n],
                    taken: 0,
                    slots: VecDeque::new(),
                    end: usize::MAX,
                }),
                ready: Condvar::new(),
                inline,
                ahead: ahead.max(1),
            }),
        }
    }

    /// The entry range and the arrays (one per lane) of the next batch;
    /// `None` after the last one. After an error the pipeline stops.
    pub(super) fn take(&mut self) -> Option<(Range<u64>, Result<Vec<ArrayRef>>)> {
        let inner = &self.inner;
        let mut state = inner.lock();
        let k = state.taken;
        let range = inner.ranges.get(k)?;
        if k > state.end {
            return None; // after an error
        }
        inner.ensure_slot(&mut state, k);
        let in_pool = rayon::current_thread_index().is_some();
        loop {
            let started = inner.start_ready(&mut state);
            let idle = started.is_empty();
            if !idle {
                drop(state);
                if inner.inline {
                    run_inline(inner, started);
                } else {
                    spawn_all(inner, started);
                }
                state = inner.lock();
            }
            let front = state.slots.front()?;
            if front.left == 0 || front.error.is_some() {
                break;
            }
            if inner.inline {
                if idle {
                    // Every task of the batch has run here; cannot happen.
                    let error =
                        Error::InvalidArgument("internal: a batch was left unfinished".into());
                    state.end = 0;
                    return Some((range, Err(error)));
                }
                continue;
            }
            if in_pool {
                // A worker of the pool must not block on work queued for the
                // pool (it may be its only worker): it runs queued tasks.
                drop(state);
                if rayon::yield_now() != Some(rayon::Yield::Executed) {
                    std::thread::yield_now();
                }
                state = inner.lock();
            } else {
                state = inner
                    .ready
                    .wait(state)
                    .unwrap_or_else(PoisonError::into_inner);
            }
        }
        let slot = state.slots.pop_front()?;
        state.taken += 1;
        if let Some(error) = slot.error {
            state.end = 0;
            state.slots.clear();
            return Some((range, Err(error)));
        }
        if !inner.inline {
            // Lanes held back by the run-ahead bound go on.
            let started = inner.start_ready(&mut state);
            drop(state);
            spawn_all(inner, started);
        } else {
            drop(state);
        }
        let arrays = slot
            .arrays
            .into_iter()
            .map(|a| {
                a.ok_or_else(|| Error::InvalidArgument("internal: a field was not read".into()))
            })
            .collect();
        Some((range, arrays))
    }
}

impl Drop for Pipeline {
    fn drop(&mut self) {
        let mut state = self.inner.lock();
        state.end = 0;
        state.slots.clear();
    }
}

/// A task to run: lane `lane` decodes batch `batch`.
#[derive(Debug, Clone)]
struct Task {
    lane: usize,
    batch: usize,
    shared: Arc<SharedReads>,
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Makes room for batch `k` (at most `ahead` past `taken`).
    fn ensure_slot(&self, state: &mut State, k: usize) {
        while state.taken + state.slots.len() <= k {
            let n = self.lanes.len();
            state.slots.push_back(Slot {
                arrays: vec![None; n],
                left: n,
                sources_left: self.projection.iter().filter(|&&p| !p).count(),
                shared: Arc::new(self.shared.empty_like()),
                error: None,
            });
        }
    }

    /// Marks every lane that may start its next batch as running and
    /// returns those tasks.
    fn start_ready(&self, state: &mut State) -> Vec<Task> {
        self.start_lanes(state, 0..self.lanes.len())
    }

    /// [`Self::start_ready`] for some lanes only: those whose state may
    /// have changed. A table of a thousand fields has a thousand lanes, and
    /// looking at all of them after each task's end is a million checks a
    /// batch.
    fn start_lanes(&self, state: &mut State, lanes: impl IntoIterator<Item = usize>) -> Vec<Task> {
        let mut tasks = Vec::new();
        for lane in lanes {
            let k = state.next[lane];
            if state.running[lane]
                || k >= self.ranges.len
                || k >= state.end
                || k >= state.taken + self.ahead
            {
                continue;
            }
            self.ensure_slot(state, k);
            let Some(slot) = state.slots.get(k - state.taken) else {
                continue;
            };
            if self.projection[lane] && slot.sources_left > 0 {
                continue;
            }
            let shared = slot.shared.clone();
            state.running[lane] = true;
            tasks.push(Task {
                lane,
                batch: k,
                shared,
            });
        }
        tasks
    }

    /// Runs `task` on this thread and records its array.
    fn run(self: &Arc<Self>, task: Task) -> Vec<Task> {
        let range = self.ranges.get(task.batch).unwrap_or(0..0);
        let result = catch_unwind(AssertUnwindSafe(|| {
            let mut reader = self.lanes[task.lane]
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            reader.read(range, &task.shared)
        }))
        .unwrap_or_else(|panic| {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            Err(Error::InvalidArgument(format!(
                "internal: decoding a field panicked: {what}"
            )))
        });
        let mut state = self.lock();
        state.running[task.lane] = false;
        state.next[task.lane] = task.batch + 1;
        let Some(index) = task.batch.checked_sub(state.taken) else {
            return Vec::new(); // stopped and cleared
        };
        let Some(slot) = state.slots.get_mut(index) else {
            return Vec::new();
        };
        slot.left -= 1;
        let mut sources_done = false;
        if !self.projection[task.lane] {
            slot.sources_left -= 1;
            sources_done = slot.sources_left == 0;
        }
        let failed = match result {
            Ok(array) => {
                slot.arrays[task.lane] = Some(array);
                false
            }
            Err(e) => {
                slot.error.get_or_insert(e);
                true
            }
        };
        let done = slot.left == 0 || failed;
        if failed {
            // Earlier batches still complete; this one reports the error.
            state.end = state.end.min(task.batch);
        }
        if index == 0 && done {
            self.ready.notify_one();
        }
        // The end of a task lets its own lane go on, and the end of a
        // batch's last source lets the projections of that batch start;
        // lanes held back by the run-ahead bound wait for `take`.
        if sources_done && self.projection.iter().any(|&p| p) {
            self.start_ready(&mut state)
        } else {
            self.start_lanes(&mut state, [task.lane])
        }
    }
}

/// Runs `tasks` on this thread, and the tasks their ends make ready.
fn run_inline(inner: &Arc<Inner>, mut tasks: Vec<Task>) {
    while let Some(task) = tasks.pop() {
        tasks.extend(inner.run(task));
    }
}

/// Starts `tasks` on the pool; each starts the tasks its end makes ready.
fn spawn_all(inner: &Arc<Inner>, tasks: Vec<Task>) {
    for task in tasks {
        let inner = inner.clone();
        rayon::spawn(move || {
            let next = inner.run(task);
            spawn_all(&inner, next);
        });
    }
}
