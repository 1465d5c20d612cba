//! Stages: trigger and authorize, and posting the report. The GitHub Action front end.
//!
//! - [`event`]: the Actions environment and the event that started the run.
//! - [`command`]: the `/compute ...` comment syntax.
//! - [`client`]: the REST calls the bot makes (octocrab), with retries and clear errors.
//! - [`repo`]: files at a ref, pull requests and their files, and commits of
//!   files to a branch (Git Data API), over the client's request path.
//! - [`texts`]: every comment the bot writes, and the hidden markers it reads back.
//! - [`actions_io`]: `GITHUB_OUTPUT`, the step summary and workflow commands.
//! - [`flow`]: pure decisions (who may run what) taking plain data.
//! - [`inputs`]: which workspace files the code gets, checked against the policy.
//! - [`action`]: `compute-bot action`, the orchestration of all of the above;
//!   [`request`] runs one request, [`approval`] handles `approve` / `deny`.
//! - [`assets`]: the run's files committed to the files branch and shown in
//!   the thread (images inline), or named with the run's artifact.
//! - [`tracking`]: the run's one tracking comment, edited through the stages.
//! - [`watch`]: the repository's watches on schedule, dispatch and pull requests.
//! - [`thread`]: how a run ends — every handler returns `Result<Published,
//!   Stop>` and `thread::conclude` alone posts, reacts, writes the outputs
//!   and decides the status.

pub(crate) mod action;
pub mod actions_io;
mod approval;
mod assets;
pub mod client;
pub mod command;
pub mod event;
pub mod flow;
mod followup;
mod inputs;
mod plan;
mod replay;
pub mod repo;
mod request;
mod sources;
pub mod texts;
mod thread;
pub mod tracking;
mod watch;
