//! The reliability suite (run by `scripts/reliability`, not in CI): many
//! runs in one bot process, sequential and concurrent, checking every
//! status, that no container outlives its run and that the bot's RSS stays
//! flat; then faults mid-run (container killed, paused, removed, and the
//! engine connection dropped under a running job).
//!
//! `cargo bench --bench reliability -- SEQUENTIAL CONCURRENT` (defaults 1000 200).

use std::sync::Arc;
use std::time::Duration;

use compute_bot::sandbox::{Job, LABEL_PID, Limits, RunStatus, SandboxConfig, docker::Docker};

#[path = "../tests/support/engine_proxy.rs"]
#[allow(dead_code)]
mod engine_proxy;
use engine_proxy::EngineProxy;

/// (code, expected status) cycled through the runs.
const CASES: &[(&str, RunStatus)] = &[
    ("print(sum(range(10)))", RunStatus::Ok),
    ("raise ValueError('boom')", RunStatus::Error),
    ("import time\ntime.sleep(30)", RunStatus::Timeout),
    (
        "import sys\nsys.stdout.write('x' * 200000)",
        RunStatus::OutputLimit,
    ),
    ("import os\nos.kill(os.getpid(), 9)", RunStatus::Killed),
];

fn cfg() -> SandboxConfig {
    SandboxConfig {
        limits: Limits {
            timeout: Duration::from_secs(2),
            ..Default::default()
        },
        ..Default::default()
    }
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

async fn ours_left(sb: &Docker) -> usize {
    let filters = [(
        "label".to_string(),
        vec![format!("{LABEL_PID}={}", std::process::id())],
    )]
    .into();
    sb.docker()
        .list_containers(Some(bollard::query_parameters::ListContainersOptions {
            all: true,
            filters: Some(filters),
            ..Default::default()
        }))
        .await
        .map(|v| v.len())
        .unwrap_or(usize::MAX)
}

async fn one(sb: &Docker, i: usize) -> Result<(), String> {
    let (code, want) = CASES[i % CASES.len()];
    let job = Job {
        code: code.to_string(),
        ..Default::default()
    };
    match sb.run(&cfg(), &job).await {
        Ok(o) if o.status == want => Ok(()),
        Ok(o) => Err(format!(
            "run {i}: wanted {want:?}, got {:?} ({:?})",
            o.status, o.notes
        )),
        Err(e) => Err(format!("run {i}: {e}")),
    }
}

/// Hands `prepared` a job that sleeps 1.5 s and waits 0.7 s, so a fault
/// lands mid-run; returns the container's name and the running execution.
async fn start_sleeper(
    prepared: compute_bot::sandbox::Prepared,
) -> (
    String,
    tokio::task::JoinHandle<
        Result<compute_bot::sandbox::Outcome, compute_bot::sandbox::SandboxError>,
    >,
) {
    let name = prepared.name().to_string();
    let job = Job {
        code: "import time\ntime.sleep(1.5)\nprint('late')".into(),
        ..Default::default()
    };
    let run = tokio::spawn(async move { prepared.execute(&job).await });
    tokio::time::sleep(Duration::from_millis(700)).await;
    (name, run)
}

async fn fault(sb: &Docker, action: &[&str], want: RunStatus, note: &str) -> Result<(), String> {
    let prepared = sb.prepare(&cfg()).await.map_err(|e| e.to_string())?;
    let (name, run) = start_sleeper(prepared).await;
    let mut args: Vec<&str> = action.to_vec();
    args.push(&name);
    let _ = std::process::Command::new("docker").args(&args).output();
    let o = run
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())?;
    let gone = sb.docker().inspect_container(&name, None).await.is_err();
    let noted = o.notes.iter().any(|n| n.contains(note));
    if o.status == want && gone && noted {
        Ok(())
    } else {
        Err(format!(
            "fault {action:?}: status {:?}, gone {gone}, notes {:?}",
            o.status, o.notes
        ))
    }
}

/// The engine connection drops while the code runs: the run must end (no
/// hang) with an error or a status that says so, and the container must be gone.
async fn engine_drop(sb: &Docker) -> Result<String, String> {
    let proxy = EngineProxy::start().await;
    let proxied = proxy.sandbox().await;
    let prepared = proxied.prepare(&cfg()).await.map_err(|e| e.to_string())?;
    let (name, run) = start_sleeper(prepared).await;
    let cut = proxy.cut();
    let ended = tokio::time::timeout(Duration::from_secs(60), run).await;
    let what = match ended {
        Err(_) => {
            return Err(format!(
                "engine drop: the run did not end within 60 s ({cut} connections cut)"
            ));
        }
        Ok(joined) => match joined.map_err(|e| e.to_string())? {
            Ok(o) => format!("status {:?}, notes {:?}", o.status, o.notes),
            Err(e) => format!("error: {e}"),
        },
    };
    // Give a failed removal's own retry a moment, then look.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let gone = sb.docker().inspect_container(&name, None).await.is_err();
    if gone {
        Ok(format!("{cut} connections cut -> {what}; container gone"))
    } else {
        let _ = sb
            .docker()
            .remove_container(
                &name,
                Some(bollard::query_parameters::RemoveContainerOptions {
                    force: true,
                    ..Default::default()
                }),
            )
            .await;
        Err(format!("engine drop: {what}; container {name} left behind"))
    }
}

#[tokio::main]
async fn main() {
    let nums: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let sequential = nums.first().copied().unwrap_or(1000);
    let concurrent = nums.get(1).copied().unwrap_or(200);
    let sb = Arc::new(Docker::connect().await.expect("Docker engine"));
    let mut failures = Vec::new();
    let rss_start = rss_kib();
    let mut rss_samples = vec![rss_start];
    let started = std::time::Instant::now();
    for i in 0..sequential {
        if let Err(e) = one(&sb, i).await {
            failures.push(e);
        }
        if (i + 1) % 100 == 0 {
            rss_samples.push(rss_kib());
            println!(
                "progress: {} sequential runs in {:.0} s, {} wrong, RSS {} KiB",
                i + 1,
                started.elapsed().as_secs_f64(),
                failures.len(),
                rss_kib()
            );
        }
    }
    let seq_secs = started.elapsed().as_secs_f64();
    let started = std::time::Instant::now();
    let sem = Arc::new(tokio::sync::Semaphore::new(8));
    let mut handles = Vec::new();
    for i in 0..concurrent {
        let sb = sb.clone();
        let permit = sem.clone().acquire_owned().await.unwrap();
        handles.push(tokio::spawn(async move {
            let r = one(&sb, i).await;
            drop(permit);
            r
        }));
    }
    for h in handles {
        if let Err(e) = h.await.unwrap() {
            failures.push(e);
        }
    }
    let conc_secs = started.elapsed().as_secs_f64();
    rss_samples.push(rss_kib());
    let faults = [
        (fault(
            &sb,
            &["kill", "-s", "KILL"],
            RunStatus::Killed,
            "from outside",
        )
        .await),
        (fault(&sb, &["rm", "-f"], RunStatus::Killed, "from outside").await),
        (fault(&sb, &["pause"], RunStatus::Timeout, "paused from outside").await),
        engine_drop(&sb)
            .await
            .map(|what| println!("engine connection dropped mid-run: {what}")),
    ];
    let n_faults = faults.len();
    let fault_failures: Vec<String> = faults.into_iter().filter_map(|r| r.err()).collect();
    let left = ours_left(&sb).await;
    println!(
        "sequential runs: {sequential} in {seq_secs:.0} s; concurrent runs (8 at a time): {concurrent} in {conc_secs:.0} s"
    );
    println!("wrong statuses or errors: {}", failures.len());
    for f in failures.iter().take(10) {
        println!("  {f}");
    }
    println!(
        "faults (kill, remove, pause, engine connection dropped mid-run) handled: {}/{n_faults}",
        n_faults - fault_failures.len()
    );
    for f in &fault_failures {
        println!("  {f}");
    }
    println!("containers left behind: {left}");
    println!(
        "bot RSS (KiB) at start, every 100 sequential runs, after the concurrent runs: {rss_samples:?}"
    );
    if !failures.is_empty() || !fault_failures.is_empty() || left != 0 {
        std::process::exit(1);
    }
}
