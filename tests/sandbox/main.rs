//! The sandbox against the real Docker engine: the audit the code cannot lie in (hostile programs against the kernel's record), hardening, limits, removal, the boundary (seccomp, leftovers, runtimes), the bot's `/data/github/` folder and the job check of input names, the data files the image reads (DuckDB, Parquet, Excel), the analysis stack (SciPy, statsmodels, scikit-learn, seaborn, joblib), input previews against what pandas reads, the `run` command (also `--unchecked`), the policy's reserve environment, the image pulled from a loopback registry when the engine lacks it, and output validation, and the bot image as a container action.
//!
//! One test crate per area (each links the library once); each file is a module.

// Function length is a rule for src/ and crates/*/src/ (Cargo.toml,
// `[workspace.lints]`), not for a test crate or a bench.
#![allow(clippy::too_many_lines)]

#[path = "../support/mod.rs"]
mod support;

mod audit_truth;
mod big_inputs;
mod boundary;
mod cli_run;
mod data_files;
mod engine_lost;
mod github_data;
mod previews;
mod pull;
mod reserve;
mod runner_simulation;
mod sandbox;
mod session;
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

/// The default hardened container under the machine's runtime with the
/// default limits but a 120 s deadline (the test machine is shared; a
/// deadline is no part of the hardening) and `cpus` cores;
/// `COMPUTE_BOT_SANDBOX_IMAGE` names another image to try (a candidate
/// build), else the bot's default image.
fn long_deadline_config(cpus: f64) -> compute_bot::sandbox::SandboxConfig {
    let mut cfg = compute_bot::sandbox::SandboxConfig {
        runtime: machine_runtime(),
        limits: compute_bot::sandbox::Limits {
            timeout: std::time::Duration::from_secs(120),
            cpus,
            ..Default::default()
        },
        ..Default::default()
    };
    if let Ok(image) = std::env::var("COMPUTE_BOT_SANDBOX_IMAGE") {
        cfg.image = image;
    }
    cfg
}

/// Runs `code` in [`long_deadline_config`] with the default policy's runtime
/// rules and `inputs` (the static check is the caller's business).
async fn run_with_default_rules(
    code: &str,
    inputs: Vec<compute_bot::sandbox::InputFile>,
    cpus: f64,
) -> compute_bot::sandbox::Outcome {
    let sb = compute_bot::sandbox::docker::Docker::connect()
        .await
        .expect("the Docker engine must be running for the sandbox tests");
    let job = compute_bot::sandbox::Job {
        code: code.to_string(),
        inputs,
        rules: compute_bot::policy::Policy::default().runtime_rules(),
    };
    sb.run(&long_deadline_config(cpus), &job)
        .await
        .expect("run")
}

/// Checks `code` with the default policy (it must be allowed as it is), runs
/// it as [`run_with_default_rules`] does and expects it to succeed.
async fn run_allowed(
    code: &str,
    inputs: Vec<compute_bot::sandbox::InputFile>,
    cpus: f64,
) -> compute_bot::sandbox::Outcome {
    let verdict = compute_bot::policy::check_code(&compute_bot::policy::Policy::default(), code);
    assert_eq!(
        verdict.decision,
        compute_bot::policy::Decision::Allow,
        "the default policy refuses this code: {:#?}\n{code}",
        verdict.findings
    );
    let o = run_with_default_rules(code, inputs, cpus).await;
    assert_eq!(
        o.status,
        compute_bot::sandbox::RunStatus::Ok,
        "stdout:\n{}\nstderr:\n{}\ntampered: {:?}",
        o.stdout,
        o.stderr,
        o.tampered
    );
    o
}
