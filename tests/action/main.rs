//! The GitHub Action front end against the GitHub stand-in: events, commands, handlers, rate limits, approval, workflows and release files, init and doctor, the policy's reserve, the sandbox image pulled by the bot.
//!
//! One test crate per area (each links the library once); each file is a module.

// Function length is a rule for src/ and crates/*/src/ (Cargo.toml,
// `[workspace.lints]`), not for a test crate or a bench.
#![allow(clippy::too_many_lines)]

#[path = "../support/mod.rs"]
mod support;

mod approve_action;
mod command_errors;
mod explain_later;
mod followup_action;
mod github_action;
mod github_action_files;
mod github_assets;
mod github_client;
mod github_event;
mod github_rate_limits;
mod github_real;
mod github_repo;
mod github_sources;
mod init_doctor;
mod notebook_action;
mod plan_action;
mod preload_by_need;
mod pull_action;
mod release_files;
mod replay_action;
mod reserve_action;
mod usage_action;
mod watches;
