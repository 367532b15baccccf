//! The batches of a read as an async [`Stream`], for async code that must
//! not block its executor on decoding.
//!
//! ```text
//!  RNTupleRecordBatchReader ── into_stream() ──> thread: next_batch() ... ─┐
//!                                                                          │ channel (2 batches)
//!  RNTupleRecordBatchStream: Stream<Item = Result<RecordBatch>> <──────────┘
//! ```

use std::pin::Pin;
use std::task::{Context, Poll};

use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::SchemaRef;
use futures::channel::mpsc;
use futures::{SinkExt, Stream};

use super::builder::RNTupleRecordBatchReader;
use crate::error::{Error, Result};

/// Batches decoded ahead of an async consumer.
const BATCHES_AHEAD: usize = 2;

/// The record batches of a read, in entry order, as an async stream.
///
/// A thread of its own runs the read, at most a few batches ahead of the
/// consumer; dropping the stream stops it at its next batch.
///
/// ```no_run
/// use futures::StreamExt;
/// # async fn f() -> Result<(), Box<dyn std::error::Error>> {
/// let file = rntuple::RNTupleFile::open("events.root")?;
/// let mut batches = file.reader_builder(None)?.build()?.into_stream()?;
/// while let Some(batch) = batches.next().await {
///     println!("{} rows", batch?.num_rows());
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct RNTupleRecordBatchStream {
    schema: SchemaRef,
    batches: mpsc::Receiver<Result<RecordBatch>>,
    /// The reading thread, joined at the end to tell a finished read from
    /// a thread that died.
    thread: Option<std::thread::JoinHandle<()>>,
}

impl RNTupleRecordBatchStream {
    /// The Arrow schema of the batches.
    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

impl Stream for RNTupleRecordBatchStream {
    type Item = Result<RecordBatch>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        match Pin::new(&mut self.batches).poll_next(cx) {
            Poll::Ready(None) => {
                // The sender is gone: the thread has returned or is about to.
                let died = self.thread.take().is_some_and(|t| t.join().is_err());
                Poll::Ready(died.then(|| {
                    Err(Error::Io(std::io::Error::other(
                        "the thread reading the batches stopped",
                    )))
                }))
            }
            other => other,
        }
    }
}

impl RNTupleRecordBatchReader {
    /// Runs the read on a thread of its own and gives its batches as an
    /// async stream. The read ends after the first error.
    pub fn into_stream(self) -> Result<RNTupleRecordBatchStream> {
        let schema = RecordBatchReader::schema(&self);
        let (mut tx, rx) = mpsc::channel(BATCHES_AHEAD);
        let mut reader = self;
        let thread = std::thread::Builder::new()
            .name("rntuple-stream".into())
            .spawn(move || loop {
                let Some(batch) = reader.next_batch().transpose() else {
                    return;
                };
                let failed = batch.is_err();
                // Fails when the stream was dropped.
                let sent = futures::executor::block_on(tx.send(batch));
                if sent.is_err() || failed {
                    return;
                }
            })?;
        Ok(RNTupleRecordBatchStream {
            schema,
            batches: rx,
            thread: Some(thread),
        })
    }
}
