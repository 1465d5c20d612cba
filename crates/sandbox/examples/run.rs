//! Runs a snippet of untrusted Python on one input file and prints how it
//! ended, what it printed and the files it opened, each record with who
//! observed it.
//!
//! Needs a Docker engine (`DOCKER_HOST`, or the local socket; Podman's
//! Docker-compatible API works too) and the sandbox image
//! `compute-bot-sandbox:python` (`scripts/ensure-sandbox-image` builds it):
//!
//! ```sh
//! cargo run -p compute-bot-sandbox --example run
//! ```

use compute_bot_sandbox::{InputFile, Job, SandboxConfig, SandboxError, docker::Docker};

/// The untrusted code: it reads its input from `/data`, as every job does.
const CODE: &str = r#"
import csv
with open("/data/sales.csv") as f:
    rows = list(csv.DictReader(f))
print("total:", sum(int(r["amount"]) for r in rows))
"#;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), SandboxError> {
    let sandbox = Docker::connect().await?;
    let job = Job {
        code: CODE.into(),
        inputs: vec![InputFile::new(
            "sales.csv",
            b"day,amount\n1,10\n2,32\n".to_vec(),
        )],
        ..Job::default()
    };
    // The default image and limits under runc; the container is removed
    // before `run` returns, and `close` waits for anything still settling.
    let outcome = sandbox.run(&SandboxConfig::default(), &job).await;
    sandbox.close().await;
    let outcome = outcome?;

    let observed = |field: &str| outcome.sources.get(field).map_or("?", |s| s.label());
    println!(
        "status: {} ({})",
        outcome.status.as_str(),
        observed("status")
    );
    println!("stdout: {}", outcome.stdout.trim_end());
    if let Some(kernel) = &outcome.audit.kernel {
        println!("files opened ({}):", observed("audit.kernel.files"));
        for open in &kernel.files {
            println!("  {} {} -> {}", open.mode, open.path, open.result);
        }
    }
    println!("files opened ({}):", observed("audit.files_opened"));
    for open in &outcome.audit.files_opened {
        println!("  {} {}", open.mode, open.path);
    }
    Ok(())
}
