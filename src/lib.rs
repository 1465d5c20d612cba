//! compute-bot answers computational questions with code it actually ran,
//! inside a locked-down sandbox.
//!
//! The modules follow the flow: trigger → authorize → plan → generate →
//! policy check → execute → validate → explain → report. See ARCHITECTURE.md.

// The library crates of the workspace (crates/), under the names the
// modules had here and as visible as they were: `crate::sandbox::…`,
// `crate::policy::…`, `crate::model::…` and `compute_bot::units::…` paths
// read as before, and GitHub's crate as `github::rest` and
// `github::actions` (src/github/mod.rs). The secret is the GitHub and model
// crates' own (`github::actions::event::Secret`, `model::Secret`). The policy's crate carries
// two modules of plain data the bot reads too: `located` and `sources`.
pub use compute_bot_model as model;
pub use compute_bot_policy as policy;
pub use compute_bot_policy::located;
use compute_bot_policy::sources;
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
mod markdown;
pub mod notebook;
mod problems;
pub mod prompt;
pub mod record;
pub mod render;
pub mod replay;
pub mod report;
pub mod status;
pub mod usage;
pub mod validate;
mod verify;
pub mod watch_spec;

#[cfg(test)]
mod layering;
