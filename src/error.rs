//! The one error type of the crate.
//!
//! Every error that comes from file content names what was being read and
//! where: a byte offset in the file, or a field path. `Display` is one line.

use std::fmt;

/// Result alias used throughout the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Compares a checksum stored in the file with the one computed from its data.
///
/// Fuzz builds (cargo-fuzz compiles with `--cfg fuzzing`) accept any stored
/// checksum, so that mutated files reach the parsers and decoders behind the
/// checksums; every other build verifies.
pub(crate) fn verify_checksum(
    what: &'static str,
    offset: u64,
    expected: u64,
    actual: u64,
) -> Result<()> {
    if expected == actual || cfg!(fuzzing) {
        return Ok(());
    }
    Err(Error::ChecksumMismatch {
        what,
        offset,
        expected,
        actual,
    })
}

/// Everything that can go wrong while reading an RNTuple.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The file (or a block inside it) ended before a structure was complete.
    #[error("unexpected end of data reading {what} at offset {offset}: needed {needed} bytes, {available} available")]
    UnexpectedEof {
        what: &'static str,
        offset: u64,
        needed: u64,
        available: u64,
    },

    /// A checksum stored in the file does not match its data.
    #[error("checksum mismatch in {what} at offset {offset}: stored {expected:#018x}, computed {actual:#018x}")]
    ChecksumMismatch {
        what: &'static str,
        offset: u64,
        expected: u64,
        actual: u64,
    },

    /// The file content breaks a rule of the format.
    #[error("malformed {what} at offset {offset}: {detail}")]
    Malformed {
        what: &'static str,
        offset: u64,
        detail: String,
    },

    /// The file uses a feature this reader does not implement.
    #[error("unsupported: {feature}")]
    Unsupported { feature: String },

    /// A compressed block could not be decompressed.
    #[error("{algorithm} decompression failed at offset {offset}: {source}")]
    Decompress {
        algorithm: &'static str,
        offset: u64,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },

    /// A resource limit set in the reader options was exceeded.
    #[error("limit exceeded: {what} needs {requested} bytes, limit is {limit}")]
    LimitExceeded {
        what: &'static str,
        requested: u64,
        limit: u64,
    },

    /// The caller asked for something that does not exist (ntuple, field, entry range).
    #[error("{0}")]
    InvalidArgument(String),

    /// The file holds several RNTuples and none was named.
    #[error("the file holds {} RNTuples ({}): name one", .ntuples.len(), .ntuples.join(", "))]
    AmbiguousNTuple {
        /// The paths of the file's RNTuples.
        ntuples: Vec<String>,
    },

    /// An error of the operating system.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),

    /// An error from arrow-rs while building arrays.
    #[error("arrow error: {0}")]
    Arrow(#[from] arrow_schema::ArrowError),

    /// Another error, with the context in which it happened (a field path, a cluster).
    #[error("{context}: {source}")]
    Context {
        context: String,
        #[source]
        source: Box<Error>,
    },
}

impl Error {
    /// A [`Error::Malformed`] with the given description.
    pub fn malformed(what: &'static str, offset: u64, detail: impl fmt::Display) -> Self {
        Error::Malformed {
            what,
            offset,
            detail: detail.to_string(),
        }
    }

    /// An [`Error::Unsupported`] naming the feature.
    pub fn unsupported(feature: impl fmt::Display) -> Self {
        Error::Unsupported {
            feature: feature.to_string(),
        }
    }

    /// Wraps this error with context, such as a field path or a cluster number.
    pub fn context(self, context: impl fmt::Display) -> Self {
        Error::Context {
            context: context.to_string(),
            source: Box::new(self),
        }
    }

    /// The innermost error, under all [`Error::Context`] wrappers.
    pub fn root_cause(&self) -> &Error {
        match self {
            Error::Context { source, .. } => source.root_cause(),
            other => other,
        }
    }
}

impl From<Error> for arrow_schema::ArrowError {
    fn from(e: Error) -> Self {
        match e {
            Error::Arrow(a) => a,
            other => arrow_schema::ArrowError::ExternalError(Box::new(other)),
        }
    }
}

/// Adds context to the error of a `Result`.
pub trait ResultExt<T> {
    /// Wraps the error, if any, with the context the closure gives.
    fn with_context<C: fmt::Display>(self, f: impl FnOnce() -> C) -> Result<T>;
}

impl<T> ResultExt<T> for Result<T> {
    fn with_context<C: fmt::Display>(self, f: impl FnOnce() -> C) -> Result<T> {
        self.map_err(|e| e.context(f()))
    }
}
