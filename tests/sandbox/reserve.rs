//! The policy's reserve execution environment (`sandbox.engine`,
//! `sandbox.reserve`) on the real engine, through `compute-bot run` as a
//! user runs it: the first engine unreachable → the reserve (a second
//! address to the same Docker engine, a loopback proxy) runs the code and
//! the report, the record, the Markdown and a replay say so; a runtime the
//! engine does not know → the reserve's runtime; both down (unreachable, or
//! the image on neither) → a controlled stop naming both (exit 2, no
//! container); a failing program (exit 1, timeout, out of memory) or a run
//! whose engine connection is lost after the code started is never moved to
//! the reserve. The proxies forward to the Docker socket itself, as in
//! `engine_lost.rs`.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::support::engine_proxy::EngineProxy;

use super::cli_run::{json, run_counting};

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// A unix socket path nobody listens on.
fn dead_engine(dir: &Path, name: &str) -> String {
    format!("unix://{}", dir.join(name).display())
}

/// `run --policy P --format F --code C [extra]` in a blocking task (the
/// proxy answers on this test's runtime meanwhile): output and containers
/// created.
async fn run(policy: &Path, code: &Path, format: &str, extra: &[&str]) -> (Output, usize) {
    let mut args: Vec<String> = [
        "run",
        "--policy",
        policy.to_str().unwrap(),
        "--format",
        format,
        "--code",
        code.to_str().unwrap(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.extend(extra.iter().map(|s| s.to_string()));
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        run_counting(&args)
    })
    .await
    .unwrap()
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn runtime_name() -> &'static str {
    match crate::machine_runtime() {
        compute_bot::sandbox::Runtime::Runc => "runc",
        compute_bot::sandbox::Runtime::Runsc => "runsc",
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unreachable_first_engine_runs_the_code_in_the_reserve_and_says_why() {
    let d = tempfile::tempdir().unwrap();
    let proxy = EngineProxy::start().await;
    let first = dead_engine(d.path(), "nobody.sock");
    let policy = write(
        d.path(),
        "p.yml",
        &format!(
            "version: 1\nsandbox:\n  engine: {first}\n  preload: []\n  reserve:\n    engine: {}\n",
            proxy.address()
        ),
    );
    let code = write(
        d.path(),
        "ok.py",
        "import json\nprint(json.dumps({'n': 42}))\n",
    );
    let (out, created) = run(&policy, &code, "json", &[]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(created, 1, "one container, in the reserve");
    assert!(proxy.accepted() > 0, "the reserve engine was never asked");
    let report = json(&out);
    assert_eq!(report["result"]["n"], 42);
    let env = &report["outcome"]["environment"];
    assert_eq!(env["role"], "reserve", "{env}");
    assert_eq!(env["engine"], proxy.address());
    assert_eq!(env["runtime"], runtime_name());
    let reason = env["reason"].as_str().unwrap();
    assert!(
        reason.contains("nobody.sock") && reason.contains("cannot reach"),
        "{reason}"
    );
    // The run record says the same, and a replay runs where it ran.
    assert_eq!(&report["record"]["runtime"]["environment"], env);
    assert_eq!(
        report["record"]["runtime"]["container_runtime"],
        runtime_name()
    );
    let saved = write(d.path(), "report.json", &report.to_string());
    let before = proxy.accepted();
    let replayed =
        tokio::task::spawn_blocking(move || run_counting(&["replay", saved.to_str().unwrap()]))
            .await
            .unwrap();
    assert_eq!(replayed.0.status.code(), Some(0), "{}", text(&replayed.0));
    assert!(
        proxy.accepted() > before,
        "the replay did not use the recorded engine"
    );
    // The answer's Markdown names the reserve and why.
    let (md, _) = run(&policy, &code, "markdown", &[]).await;
    assert_eq!(md.status.code(), Some(0), "{}", text(&md));
    let md = String::from_utf8_lossy(&md.stdout);
    assert!(md.contains("Sandbox (the policy's reserve)"), "{md}");
    assert!(
        md.contains(&format!(
            "| Environment | the reserve ({}, {}), because the first could not prepare: cannot reach",
            proxy.address(),
            runtime_name()
        )),
        "{md}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_runtime_the_engine_does_not_know_moves_the_run_to_the_reserve_runtime() {
    let d = tempfile::tempdir().unwrap();
    let engine = "unix:///var/run/docker.sock";
    let policy = write(
        d.path(),
        "p.yml",
        &format!(
            "version: 1\nsandbox:\n  engine: {engine}\n  runtime: runsc\n  preload: []\n  reserve:\n    runtime: runc\n"
        ),
    );
    let code = write(d.path(), "ok.py", "print('{\"ok\": true}')\n");
    let (out, created) = run(&policy, &code, "json", &[]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(created, 1, "the refused create makes no container");
    let env = json(&out)["outcome"]["environment"].clone();
    let info = std::process::Command::new("docker")
        .args(["info", "--format", "{{json .Runtimes}}"])
        .output()
        .unwrap();
    if String::from_utf8_lossy(&info.stdout).contains("\"runsc\"") {
        // gVisor registered (`.ci/run` after scripts/install-gvisor): the
        // first environment prepares, and the reserve stays unused.
        assert_eq!(env["role"], "first", "{env}");
        assert_eq!(env["runtime"], "runsc", "{env}");
    } else {
        assert_eq!(env["role"], "reserve", "{env}");
        assert_eq!(env["engine"], engine);
        assert_eq!(
            env["runtime"], "runc",
            "the policy names runc as the reserve"
        );
        let reason = env["reason"].as_str().unwrap();
        assert!(
            reason.contains("Unknown runtime specified runsc"),
            "{reason}"
        );
    }
    // Without a reserve runsc is never stepped down to runc: the engine's
    // refusal (or gVisor) is the answer.
    let strict = write(
        d.path(),
        "strict.yml",
        &format!("version: 1\nsandbox:\n  engine: {engine}\n  runtime: runsc\n  preload: []\n"),
    );
    let (out, _) = run(&strict, &code, "json", &[]).await;
    let report = json(&out);
    let ran_runsc =
        out.status.code() == Some(0) && report["outcome"]["environment"]["runtime"] == "runsc";
    let refused = out.status.code() == Some(1)
        && report["outcome"].is_null()
        && text(&out).contains("Unknown runtime specified runsc");
    assert!(ran_runsc || refused, "{}", text(&out));
}

#[tokio::test(flavor = "multi_thread")]
async fn both_environments_down_is_a_controlled_stop_naming_both() {
    let d = tempfile::tempdir().unwrap();
    let (first, reserve) = (
        dead_engine(d.path(), "first.sock"),
        dead_engine(d.path(), "reserve.sock"),
    );
    let policy = write(
        d.path(),
        "p.yml",
        &format!("version: 1\nsandbox:\n  engine: {first}\n  reserve:\n    engine: {reserve}\n"),
    );
    let code = write(d.path(), "ok.py", "print('{}')\n");
    let (out, created) = run(&policy, &code, "json", &[]).await;
    assert_no_environment(&out, created, &["first.sock", "reserve.sock"]);
    // Both reachable, neither can prepare (the image is on neither): the
    // same stop, decided when the container is prepared.
    let missing = write(
        d.path(),
        "missing.yml",
        "version: 1\nsandbox:\n  image: compute-bot-sandbox:no-such-tag-reserve-test\n  engine: unix:///var/run/docker.sock\n  runtime: runc\n  reserve:\n    runtime: runsc\n",
    );
    let (out, created) = run(&missing, &code, "json", &[]).await;
    assert_no_environment(
        &out,
        created,
        &[
            "(unix:///var/run/docker.sock, runc: the sandbox image",
            "(unix:///var/run/docker.sock, runsc: the sandbox image",
        ],
    );
}

/// The controlled stop when neither environment can run the code: exit 2,
/// no container created, a reason naming each environment (`names`).
fn assert_no_environment(out: &Output, created: usize, names: &[&str]) {
    assert_eq!(out.status.code(), Some(2), "{}", text(out));
    assert_eq!(created, 0);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no execution environment can run the code")
            && names.iter().all(|n| err.contains(n)),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failing_program_is_not_moved_to_the_reserve() {
    let d = tempfile::tempdir().unwrap();
    let (first, reserve) = (EngineProxy::start().await, EngineProxy::start().await);
    let policy = write(
        d.path(),
        "p.yml",
        &format!(
            "version: 1\nsandbox:\n  engine: {}\n  memory: 64MiB\n  timeout: 3s\n  preload: []\n  reserve:\n    engine: {}\n",
            first.address(),
            reserve.address()
        ),
    );
    for (name, code, status) in [
        ("exit", "raise SystemExit(1)\n", "error"),
        ("timeout", "while True:\n    pass\n", "timeout"),
        (
            "oom",
            "x = bytearray(512 * 1024 * 1024)\nprint(len(x))\n",
            "oom",
        ),
    ] {
        let code = write(d.path(), &format!("{name}.py"), code);
        let (out, created) = run(&policy, &code, "json", &[]).await;
        assert_eq!(out.status.code(), Some(1), "{name}: {}", text(&out));
        assert_eq!(created, 1, "{name}: one run, not a second in the reserve");
        let o = &json(&out)["outcome"];
        let ended = o["status"].as_str().unwrap();
        let expected = ended == status || (status == "oom" && ended == "killed");
        assert!(expected, "{name}: ended {ended}");
        assert_eq!(o["environment"]["role"], "first", "{name}");
    }
    assert!(first.accepted() > 0);
    assert_eq!(reserve.accepted(), 0, "the reserve was never contacted");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_whose_engine_connection_is_lost_after_the_code_started_is_not_moved() {
    let d = tempfile::tempdir().unwrap();
    let (first, reserve) = (EngineProxy::start().await, EngineProxy::start().await);
    let policy = write(
        d.path(),
        "p.yml",
        &format!(
            "version: 1\nsandbox:\n  engine: {}\n  timeout: 30s\n  preload: []\n  reserve:\n    engine: {}\n",
            first.address(),
            reserve.address()
        ),
    );
    let code = write(d.path(), "sleep.py", "import time\ntime.sleep(60)\n");
    let started = std::time::Instant::now();
    let running = tokio::spawn({
        let (policy, code) = (policy.clone(), code.clone());
        async move { run(&policy, &code, "json", &[]).await }
    });
    // Cut the first engine's connections once the code runs (the attach
    // stream is open), then let later connections through again.
    tokio::time::sleep(std::time::Duration::from_secs(4)).await;
    assert!(first.cut() > 0, "no connection was open to cut");
    let (out, created) = running.await.unwrap();
    assert!(
        started.elapsed() < std::time::Duration::from_secs(25),
        "the run should end soon after the loss, not at its deadline"
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert_eq!(created, 1, "one container, never a second in the reserve");
    let o = &json(&out)["outcome"];
    assert_eq!(o["status"], "lost", "{o}");
    assert_eq!(o["environment"]["role"], "first", "{o}");
    assert_eq!(reserve.accepted(), 0, "the reserve was never contacted");
}
