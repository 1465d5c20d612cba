//! `compute-bot run --unchecked` against the real engine: code the policy
//! refuses runs with no static check and no runtime refusal, and the
//! container alone holds it (no network, a read-only root, a non-root user);
//! the output says so first and the JSON has `"unchecked": true`. Without the
//! flag the same code never starts a container.

use compute_bot::sandbox::Runtime;

use super::cli_run::{json, run_counting};

/// Tries what the built-in policy refuses (a socket, `subprocess`, reading
/// `/etc/shadow`, writing to `/usr`) and prints what happened as JSON: an
/// errno, or what it got.
const HOSTILE: &str = r#"import json, socket, subprocess
r = {}
try:
    socket.create_connection(("1.1.1.1", 80), timeout=3)
    r["net"] = "connected"
except OSError as e:
    r["net"] = e.errno
try:
    open("/etc/shadow").read()
    r["shadow"] = "read"
except OSError as e:
    r["shadow"] = e.errno
try:
    with open("/usr/compute-bot-unchecked", "w") as f:
        f.write("x")
    r["usr"] = "written"
except OSError as e:
    r["usr"] = e.errno
try:
    r["uid"] = subprocess.run(["id", "-u"], capture_output=True, text=True).stdout.strip()
except OSError as e:
    r["uid"] = e.errno
print(json.dumps(r))
"#;

const EPERM: i64 = 1;
const ENETUNREACH: i64 = 101;
const EHOSTUNREACH: i64 = 113;
const EACCES: i64 = 13;
const EROFS: i64 = 30;

fn hostile_file() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("hostile.py");
    std::fs::write(&p, HOSTILE).unwrap();
    let s = p.to_str().unwrap().to_string();
    (dir, s)
}

#[test]
fn unchecked_code_the_policy_refuses_runs_and_the_container_holds_it() {
    let (_dir, code) = hostile_file();
    let (out, created) = run_counting(&["run", "--unchecked", "--format", "json", "--code", &code]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(err.starts_with("WARNING: unchecked run"), "{err}");
    assert_eq!(created, 1);
    let v = json(&out);
    assert_eq!(v["unchecked"], true, "{v}");
    assert_eq!(v["status"], "ok", "{v}");
    // Nothing was refused by the runner; what was tried is still recorded.
    assert_eq!(v["audit"]["refused"], serde_json::json!([]), "{v}");
    assert!(
        v["audit"]["network_attempts"]
            .to_string()
            .contains("1.1.1.1"),
        "{v}"
    );
    assert!(
        v["audit"]["subprocess_attempts"].to_string().contains("id"),
        "{v}"
    );
    let r: serde_json::Value = serde_json::from_str(v["stdout"].as_str().unwrap().trim()).unwrap();
    // The container: no network (runc: the seccomp allowlist refuses the
    // socket; gVisor: no route), a user who may not read /etc/shadow, a
    // read-only root (EROFS under runc, EACCES under gVisor), and no program
    // starts (the kernel refuses the fork: EPERM, and says so).
    let (net, usr): (&[i64], i64) = match super::machine_runtime() {
        Runtime::Runc => (&[EPERM], EROFS),
        Runtime::Runsc => (&[ENETUNREACH, EHOSTUNREACH], EACCES),
    };
    let got = r["net"].as_i64().unwrap_or_else(|| panic!("{r}"));
    assert!(net.contains(&got), "{r}");
    assert_eq!(r["shadow"], EACCES, "{r}");
    assert_eq!(r["usr"], usr, "{r}");
    assert_eq!(r["uid"], EPERM, "{r}");
    let starts = &v["audit"]["kernel"]["execs"];
    assert!(
        super::machine_runtime() == Runtime::Runsc || !starts.as_array().unwrap().is_empty(),
        "{v}"
    );
}

#[test]
fn unchecked_text_output_starts_with_the_warning() {
    let (_dir, code) = hostile_file();
    let (out, _) = run_counting(&["run", "--unchecked", "--code", &code]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    let first = text.lines().next().unwrap_or_default();
    assert!(
        first.starts_with("WARNING: unchecked run: no policy check and no runtime refusals"),
        "{text}"
    );
    assert!(text.contains("status: ok"), "{text}");
    assert!(text.contains("network attempts:"), "{text}");
}

#[test]
fn without_unchecked_the_same_code_is_refused_before_any_container() {
    let (_dir, code) = hostile_file();
    let (out, created) = run_counting(&["run", "--format", "json", "--code", &code]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let v = json(&out);
    assert_eq!(v["status"], "not_run", "{v}");
    assert_eq!(v["verdict"]["decision"], "deny", "{v}");
    assert!(v.get("unchecked").is_none(), "{v}");
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("WARNING: unchecked"),
        "{out:?}"
    );
    assert_eq!(created, 0);
}

#[test]
fn unchecked_does_not_go_with_the_loop() {
    let (_dir, code) = hostile_file();
    for (flags, named) in [
        (vec!["--policy", "policies/default.yml"], "--policy"),
        (vec!["--goal", "count"], "--goal"),
        (
            vec!["--schema", "examples/conversion.schema.json"],
            "--schema",
        ),
        (vec!["--repeat", "2"], "--repeat"),
        (vec!["--format", "markdown"], "--format markdown"),
    ] {
        let mut args = vec!["run", "--unchecked", "--code", &code];
        args.extend(flags);
        let (out, created) = run_counting(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(&format!("--unchecked cannot go with {named}")),
            "{args:?}: {err}"
        );
        assert_eq!(created, 0, "{args:?}");
    }
}
