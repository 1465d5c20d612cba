//! `compute-bot run` with a policy, end to end against the real engine:
//! denied and escalated code never creates a container; allowed code runs;
//! exit codes and the report say why.

use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_compute-bot");

fn write(dir: &std::path::Path, name: &str, text: &str) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// Runs the binary and returns its output plus the containers it created
/// ([`crate::support::containers_created`]).
pub(super) fn run_counting(args: &[&str]) -> (Output, usize) {
    let since = chrono::Utc::now().timestamp();
    let child = Command::new(BIN)
        .args(args)
        .env_remove("COMPUTE_BOT_PROVIDER")
        .env_remove("COMPUTE_BOT_MODEL")
        .env_remove("COMPUTE_BOT_BASE_URL")
        .env_remove("COMPUTE_BOT_API_KEY")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    (out, crate::support::containers_created(pid, since))
}

pub(super) fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

#[test]
fn denied_code_never_creates_a_container() {
    let dir = tempfile::tempdir().unwrap();
    let code = write(
        dir.path(),
        "evil.py",
        "import subprocess\nprint(subprocess.run(['id'], capture_output=True).stdout)\n",
    );
    let (out, created) = run_counting(&[
        "run",
        "--policy",
        "policies/default.yml",
        "--format",
        "json",
        "--code",
        code.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let r = json(&out);
    assert_eq!(r["status"], "failed");
    assert_eq!(r["verdict"]["decision"], "deny");
    assert!(
        r["stop_reason"].as_str().unwrap().contains("subprocess"),
        "{r}"
    );
    assert!(r["outcome"].is_null());
    assert_eq!(created, 0, "a denied script created a container");
}

#[test]
fn allowed_code_creates_exactly_one_container_and_validates() {
    let dir = tempfile::tempdir().unwrap();
    let (out, created) = run_counting(&[
        "run",
        "--policy",
        "policies/default.yml",
        "--schema",
        "examples/conversion.schema.json",
        "--input",
        "examples/sales.csv",
        "--format",
        "json",
        "--code",
        "examples/conversion.py",
    ]);
    drop(dir);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let r = json(&out);
    assert_eq!(r["status"], "ok");
    assert_eq!(r["verdict"]["decision"], "allow");
    assert_eq!(r["result"]["by_day"].as_array().unwrap().len(), 14);
    assert_eq!(r["outcome"]["status"], "ok");
    assert_eq!(created, 1);
}

#[test]
fn escalated_code_waits_for_approval_without_running() {
    let dir = tempfile::tempdir().unwrap();
    // Outside the escalate policy's allowlist, but not a denied family.
    let code = write(dir.path(), "w.py", "import wave\nprint('{}')\n");
    let (out, created) = run_counting(&[
        "run",
        "--policy",
        "policies/escalate.yml",
        "--format",
        "json",
        "--code",
        code.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let r = json(&out);
    assert_eq!(r["status"], "needs_approval");
    assert_eq!(r["verdict"]["decision"], "escalate");
    assert_eq!(
        r["code_sha256"].as_str().unwrap(),
        compute_bot::sandbox::sha256_hex(b"import wave\nprint('{}')\n")
    );
    assert_eq!(created, 0);
}

#[test]
fn a_result_that_breaks_the_schema_fails_with_the_instance_path() {
    let dir = tempfile::tempdir().unwrap();
    let code = write(
        dir.path(),
        "bad.py",
        "import json\nprint(json.dumps({'by_day': [], 'average_conversion': 'high'}))\n",
    );
    let (out, _) = run_counting(&[
        "run",
        "--schema",
        "examples/conversion.schema.json",
        "--format",
        "json",
        "--code",
        code.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let r = json(&out);
    assert_eq!(r["status"], "failed");
    let errors = r["attempts"][0]["validation_errors"].to_string();
    assert!(errors.contains("/average_conversion"), "{errors}");
    // Nothing is lost: the code and the output so far are in the report.
    assert!(r["code"].as_str().unwrap().contains("average_conversion"));
    assert!(r["outcome"]["stdout"].as_str().unwrap().contains("high"));
}

#[test]
fn a_goal_without_a_model_or_code_shows_both_ways_forward() {
    let (out, created) = run_counting(&["run", "--goal", "average conversion by day"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("COMPUTE_BOT_MODEL"), "{err}");
    assert!(err.contains("--code") || err.contains("```python"), "{err}");
    assert_eq!(created, 0);
}

#[test]
fn flags_may_only_tighten_the_policy() {
    let (out, _) = run_counting(&[
        "run",
        "--policy",
        "policies/strict.yml",
        "--timeout",
        "60s",
        "--code",
        "examples/conversion.py",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("only tighten"));
}

#[test]
fn a_broken_policy_file_is_reported_with_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(
        dir.path(),
        "p.yml",
        "version: 1\nsandbox:\n  network: bridge\n",
    );
    let (out, created) = run_counting(&[
        "run",
        "--policy",
        p.to_str().unwrap(),
        "--code",
        "examples/conversion.py",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("p.yml:3:"), "{err}");
    assert_eq!(created, 0);
}

/// Inputs are admitted in one place for every front end; for `run` the
/// workspace is the current directory. `--input /anywhere/x.json` used to be
/// admitted (only its file name was checked against the globs) while
/// `--input ../x.json` was refused: both are refused now, as is a symlink
/// out, with the built-in policy and with `--policy`, naming the input.
/// An absolute path inside the current directory is taken relative to it.
#[test]
fn an_input_outside_the_current_directory_is_refused_like_dotdot() {
    let root = tempfile::tempdir().unwrap();
    let ws = root.path().join("ws");
    let outside = root.path().join("outside");
    std::fs::create_dir_all(ws.join("data")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    write(&outside, "x.json", "{\"n\": 1}\n");
    write(&ws, "job.py", "print(open('/data/x.json').read())\n");
    std::os::unix::fs::symlink(outside.join("x.json"), ws.join("link.json")).unwrap();
    let policy = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("policies/default.yml");
    let abs = outside.join("x.json").display().to_string();
    let bot = |args: &[&str]| {
        Command::new(BIN)
            .current_dir(&ws)
            .args(args)
            .env_remove("COMPUTE_BOT_PROVIDER")
            .env_remove("COMPUTE_BOT_MODEL")
            .env_remove("COMPUTE_BOT_API_KEY")
            .output()
            .unwrap()
    };
    for with_policy in [false, true] {
        for (input, why) in [
            (abs.as_str(), "is not a path inside the current directory"),
            (
                "../outside/x.json",
                "is not a path inside the current directory",
            ),
            (
                "link.json",
                "resolves (through a symlink) to a file outside the workspace",
            ),
        ] {
            let mut args = vec!["run", "--code", "job.py", "--input", input];
            if with_policy {
                args.extend(["--policy", policy.to_str().unwrap()]);
            }
            let out = bot(&args);
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
            assert!(
                err.contains(&format!("input `{input}`: {why}")),
                "{args:?}: {err}"
            );
            assert!(out.stdout.is_empty(), "{args:?}");
        }
    }
    // Inside the current directory, named by its absolute path: admitted.
    write(&ws.join("data"), "x.json", "{\"n\": 2}\n");
    let inside = ws.join("data/x.json").display().to_string();
    let out = bot(&[
        "run", "--code", "job.py", "--input", &inside, "--format", "json",
    ]);
    let v = json(&out);
    assert_eq!(out.status.code(), Some(0), "{v}");
    assert_eq!(v["stdout"], "{\"n\": 2}\n\n");
}

#[test]
fn run_code_preloads_the_heavy_modules_the_checked_code_imports() {
    // Sandbox only (no --policy): the built-in policy's check passes, and
    // what the code imports of the heavy stack loads before the audit hook,
    // `from` imports' submodules included. Unchecked code preloads nothing.
    let dir = tempfile::tempdir().unwrap();
    let code = write(
        dir.path(),
        "t.py",
        "import json\nfrom scipy import stats\n\
         print(json.dumps({\"p\": round(float(stats.ttest_1samp([1.0, 2.0, 3.0, 4.5], 0).pvalue), 4)}))\n",
    );
    let code = code.to_str().unwrap();
    let (out, created) = run_counting(&["run", "--format", "json", "--code", code]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let o = json(&out);
    assert_eq!(o["stdout"], "{\"p\": 0.039}\n", "{o}");
    assert_eq!(
        o["audit"]["preloaded"],
        serde_json::json!(["scipy", "scipy.stats"]),
        "{o}"
    );
    assert_eq!(created, 1);
    let (out, _) = run_counting(&["run", "--unchecked", "--format", "json", "--code", code]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let o = json(&out);
    assert_eq!(o["stdout"], "{\"p\": 0.039}\n", "{o}");
    assert!(o["audit"]["preloaded"].is_null(), "{o}");
}
