//! The sandbox against the real Docker engine: hardening, limits, removal, the boundary (seccomp, leftovers, runtimes), the data files the image reads (DuckDB, Parquet, Excel), the analysis stack (SciPy, statsmodels, scikit-learn, seaborn, joblib), input previews against what pandas reads, the `run` command (also `--unchecked`), the policy's reserve environment and output validation, and the bot image as a container action.
//!
//! One test crate per area (each links the library once); each file is a module.

#[path = "../support/mod.rs"]
mod support;

mod big_inputs;
mod boundary;
mod cli_run;
mod data_files;
mod engine_lost;
mod previews;
mod reserve;
mod runner_simulation;
mod sandbox;
mod stack;
mod unchecked;
mod validate_python_output;

/// The runtime the sandbox tests run under, resolved as the front ends
/// resolve it for a run that names none: `COMPUTE_BOT_RUNTIME` (`runsc` in
/// `.ci/run`'s gVisor pass), else runc. The library has no hidden default.
fn machine_runtime() -> compute_bot::sandbox::Runtime {
    let machine = std::env::var(compute_bot::sandbox::RUNTIME_VARIABLE).ok();
    compute_bot::sandbox::Runtime::resolve(None, None, machine.as_deref())
        .expect("COMPUTE_BOT_RUNTIME must be runc or runsc")
}
