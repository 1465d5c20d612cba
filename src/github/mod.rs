//! Stages: trigger and authorize, and posting the report. The GitHub Action
//! front end, by layer (`src/layering.rs` holds the rules):
//!
//! - GitHub's side of the wire, the crate `compute-bot-github`
//!   (crates/github) re-exported here: [`rest`], the REST client
//!   ([`rest::client`], octocrab, with retries, rate limits and ETags) and
//!   the repository's files, pull requests and commits over it
//!   ([`rest::repo`]); [`actions`], the Actions runtime I/O — the
//!   environment and the event that started the run ([`actions::event`]),
//!   `GITHUB_OUTPUT`, the step summary and workflow commands
//!   ([`actions::workflow`]).
//! - [`command`]: the `/compute ...` comment syntax; [`flow`]: screening a
//!   trigger before any API call.
//! - [`texts`]: every comment the bot writes, and the hidden markers it reads back.
//! - [`thread`]: how a run ends — every handler returns `Result<Published,
//!   Stop>` and `thread::conclude` alone posts, reacts, writes the outputs
//!   and decides the status; [`tracking`]: the run's one tracking comment.
//! - Services of a run: [`inputs`] (workspace files checked against the
//!   policy), [`activity`] (`github:` data: the repository's own activity), [`assets`] (the run's files on
//!   the files branch), [`followup`] (the earlier answer a comment builds on).
//! - [`spec`]: one run specification ([`spec::RunSpec`]), built once from
//!   the command, the dispatch or the watch and taken through the loop.
//! - [`execute`]: one request through the loop, from acknowledgement to the
//!   result comment; every handler that runs code goes through it.
//! - [`handlers`]: one file per comment command (compute, plan, run,
//!   approve, replay, watch) behind one dispatcher, [`handlers::on_comment`].
//! - [`watch`]: the repository's watches — their state and sticky comments
//!   ([`watch::state`]), the schedule runner and the pull-request runner.
//! - [`action`]: `compute-bot action`, the entry point: reads the runtime,
//!   authorizes, and hands the trigger to a handler or a runner.

// GitHub's side of the wire, its own crate (crates/github): the REST client
// and the Actions runtime's I/O, under the names they had here.
pub use compute_bot_github::{actions, rest};

pub(crate) mod action;
mod activity;
mod assets;
pub mod command;
mod execute;
pub mod flow;
mod followup;
mod handlers;
mod inputs;
mod spec;
pub mod texts;
mod thread;
pub mod tracking;
mod watch;
