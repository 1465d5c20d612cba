//! compute-bot answers computational questions with code it actually ran,
//! inside a locked-down sandbox.
//!
//! The modules follow the flow: trigger → authorize → plan → generate →
//! policy check → execute → validate → explain → report. See ARCHITECTURE.md.

// The library crates of the workspace (crates/), under the names the
// modules had here: `crate::sandbox::…` and `compute_bot::units::…` paths
// read as before.
pub use compute_bot_sandbox as sandbox;
pub use compute_bot_units as units;

// The test support files the handlers' tester compiles in (see
// `github::handlers::tests`) name this crate `compute_bot::…`, as the
// integration tests they were written for do.
#[cfg(test)]
extern crate self as compute_bot;

mod admit;
pub mod agent;
pub mod cli;
pub mod explain;
pub mod github;
pub mod located;
mod markdown;
pub mod model;
pub mod notebook;
pub mod policy;
mod problems;
pub mod prompt;
pub mod record;
pub mod render;
pub mod replay;
pub mod report;
mod secret;
mod sources;
pub mod status;
pub mod usage;
pub mod validate;
mod verify;
pub mod watch;

#[cfg(test)]
mod fn_length;
#[cfg(test)]
mod layering;
