//! The controlled loop with the model stand-in: generation, repair, stops, model providers and settings, checks beyond the schema, replay.
//!
//! One test crate per area (each links the library once); each file is a module.

// Function length is a rule for src/ and crates/*/src/ (Cargo.toml,
// `[workspace.lints]`), not for a test crate or a bench.
#![allow(clippy::too_many_lines)]

#[path = "../support/mod.rs"]
mod support;

mod chart_repair;
mod cli_files;
mod followup_session;
mod loop_scenarios;
mod model_behaviour;
mod model_config;
mod model_fallback;
mod model_providers;
mod replay;
mod session_steps;
mod verify_checks;
