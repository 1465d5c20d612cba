//! The sandbox against the real Docker engine: hardening, limits, removal, the boundary (seccomp, leftovers, runtimes), the data files the image reads (DuckDB, Parquet, Excel), the `run` command and output validation, and the bot image as a container action.
//!
//! One test crate per area (each links the library once); each file is a module.

#[path = "../support/mod.rs"]
mod support;

mod boundary;
mod cli_run;
mod data_files;
mod engine_lost;
mod runner_simulation;
mod sandbox;
mod validate_python_output;
