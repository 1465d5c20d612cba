//! Watches: data checks that live in the repository (`.github/compute/*.yml`).
//!
//! A watch names exact code (or a goal with the pinned hash of the code a
//! human approved once), the workspace files it reads, an optional result
//! schema, checks over the result (the syntax of the policy's
//! `output.checks`), the relative change that counts (`tolerance`) and the
//! issue its sticky comment lives in. [`file`](mod@file) reads and validates them with
//! `file:line:column` errors; [`values`] turns results into the values a
//! watch tracks and says which of them moved.
//!
//! The GitHub side (schedule, dispatch and pull-request runs, the sticky
//! comment) is `github::watch`; the command line's `watch check` is
//! `cli::watch`.

mod file;
mod values;

pub use file::{DEFAULT_DIR, Watch, WatchError, load_dir};
pub(crate) use values::{changes, leaves};
