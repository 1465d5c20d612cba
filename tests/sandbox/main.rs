//! The sandbox against the real Docker engine: hardening, limits, removal, the boundary (seccomp, leftovers, runtimes), the `run` command and output validation, and the bot image as a container action.
//!
//! One test crate per area (each links the library once); each file is a module.

#[path = "../support/mod.rs"]
mod support;

mod boundary;
mod cli_run;
mod engine_lost;
mod runner_simulation;
mod sandbox;
mod validate_python_output;
