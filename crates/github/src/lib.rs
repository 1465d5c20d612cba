//! GitHub's side of the wire: the REST API and the Actions runtime, as
//! compute-bot talks to them.
//!
//! - [`rest`]: every call to GitHub's REST API, over octocrab. The client
//!   ([`rest::client::GitHub`]) retries what GitHub says may be retried,
//!   waits out primary and secondary rate limits, and reads conditional
//!   GETs (`ETag`, `304 Not Modified`); [`rest::error::GitHubError`] says
//!   which token scope a refusal needs; [`rest::comments`] holds the comment,
//!   reaction and permission calls, and [`rest::repo`] the repository's
//!   files, pull requests and commits per ref.
//! - [`actions`]: the Actions runtime's I/O — the environment and the event
//!   payload that started the job ([`actions::event`]), and what goes back:
//!   step outputs, the job summary and workflow commands
//!   ([`actions::workflow`]).
//!
//! The crate `compute-bot-github` knows the units, the secret (the token
//! never prints) and the policy's plain data (a user's `Permission`, a
//! `Located` error). It must not know the sandbox, the model, the agent or
//! any text the bot posts: what to say comes in as plain data, and the bot
//! (compute-bot, which re-exports both modules as `github::rest` and
//! `github::actions`) decides what a command, a handler or a comment is.

pub mod actions;
pub mod rest;
