//! The boundary's harder cases against the real Docker engine: leftovers
//! judged only on facts every bot shares, runs stopped from outside, code
//! made through eval/exec/compile, and the seccomp allowlist.

use std::collections::HashMap;
use std::process::Command;
use std::time::Duration;

use compute_bot::sandbox::{
    ContainerFacts, Job, LABEL_EXPIRES, Limits, Outcome, RunStatus, Runtime, RuntimeRules,
    STOPPED_GRACE_SECONDS, SandboxConfig, docker::Docker, is_leftover,
};

const BIN: &str = env!("CARGO_BIN_EXE_compute-bot");

async fn sandbox() -> Docker {
    Docker::connect()
        .await
        .expect("the Docker engine must be running for the sandbox tests")
}

fn cfg(timeout: u64) -> SandboxConfig {
    SandboxConfig {
        limits: Limits {
            timeout: Duration::from_secs(timeout),
            ..Default::default()
        },
        runtime: crate::machine_runtime(),
        ..Default::default()
    }
}

/// The seccomp tests are about runc's profile, whatever COMPUTE_BOT_RUNTIME says.
fn runc(timeout: u64) -> SandboxConfig {
    SandboxConfig {
        runtime: Runtime::Runc,
        ..cfg(timeout)
    }
}

fn job(code: &str, rules: RuntimeRules) -> Job {
    Job {
        code: code.to_string(),
        rules,
        ..Default::default()
    }
}

async fn assert_gone(sb: &Docker, name: &str) {
    // Whatever the connection still has under way (a dropped guard's
    // removal) first.
    sb.settled().await;
    match sb.docker().inspect_container(name, None).await {
        Err(bollard::errors::Error::DockerResponseServerError {
            status_code: 404, ..
        }) => {}
        other => panic!("container {name} still exists after the run: {other:?}"),
    }
}

fn docker(args: &[&str]) {
    let out = Command::new("docker").args(args).output().unwrap();
    assert!(out.status.success(), "docker {args:?}: {out:?}");
}

#[test]
fn the_leftover_rule_rests_on_expiry_and_engine_state_only() {
    let now = 1_000_000;
    let facts = |state: &str, created: u64, finished: Option<u64>, expires: Option<u64>| {
        let mut labels = HashMap::new();
        if let Some(e) = expires {
            labels.insert(LABEL_EXPIRES.to_string(), e.to_string());
        }
        ContainerFacts {
            labels,
            state: state.into(),
            created,
            finished,
        }
    };
    let long_ago = now - STOPPED_GRACE_SECONDS - 1;
    // Running or paused: only the expiry counts, however old.
    assert!(!is_leftover(&facts("running", 0, None, Some(now + 1)), now));
    assert!(!is_leftover(&facts("paused", 0, None, Some(now + 1)), now));
    assert!(!is_leftover(&facts("running", 0, None, None), now));
    assert!(is_leftover(&facts("running", 0, None, Some(now - 1)), now));
    // Stopped: only after the grace period (its bot may be collecting it).
    assert!(!is_leftover(
        &facts("exited", 0, Some(now - 5), Some(now + 1)),
        now
    ));
    assert!(is_leftover(
        &facts("exited", 0, Some(long_ago), Some(now + 1)),
        now
    ));
    assert!(!is_leftover(&facts("exited", 0, None, Some(now + 1)), now));
    assert!(!is_leftover(
        &facts("created", now - 5, None, Some(now + 1)),
        now
    ));
    assert!(is_leftover(
        &facts("created", long_ago, None, Some(now + 1)),
        now
    ));
}

#[tokio::test]
async fn a_bot_in_another_pid_namespace_leaves_a_live_run_alone() {
    let sb = sandbox().await;
    let prepared = sb.prepare(&cfg(30)).await.unwrap();
    let name = prepared.name().to_string();
    let run = tokio::spawn(async move {
        prepared
            .execute(&job(
                "import time\ntime.sleep(4)\nprint('finished')\n",
                RuntimeRules::default(),
            ))
            .await
    });
    tokio::time::sleep(Duration::from_millis(800)).await;
    // Another bot whose /proc cannot see this process: the old "same host,
    // dead pid" rule removed our container here.
    let dir = tempfile::tempdir().unwrap();
    let code = dir.path().join("one.py");
    std::fs::write(&code, "print(1)\n").unwrap();
    let other = Command::new("unshare")
        .args([
            "--pid",
            "--fork",
            "--mount-proc",
            BIN,
            "run",
            "--format",
            "json",
            "--code",
        ])
        .arg(&code)
        .output()
        .unwrap();
    assert!(other.status.success(), "{other:?}");
    let o = run.await.unwrap().unwrap();
    assert_eq!(o.status, RunStatus::Ok, "{o:?}");
    assert_eq!(o.stdout.trim(), "finished");
    assert_gone(&sb, &name).await;
}

/// Runs a sleeper and does `action` to its container from outside after a moment.
async fn disturbed(action: &'static [&'static str], timeout: u64) -> Outcome {
    let sb = sandbox().await;
    let prepared = sb.prepare(&cfg(timeout)).await.unwrap();
    let name = prepared.name().to_string();
    let run = tokio::spawn(async move {
        prepared
            .execute(&job(
                "import time\nprint('started', flush=True)\ntime.sleep(60)\n",
                RuntimeRules::default(),
            ))
            .await
    });
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let mut args: Vec<&str> = action.to_vec();
    args.push(&name);
    docker(&args);
    let o = tokio::time::timeout(Duration::from_secs(timeout + 20), run)
        .await
        .expect("the run must end")
        .unwrap()
        .unwrap();
    assert_gone(&sb, &name).await;
    o
}

#[tokio::test]
async fn a_container_removed_from_outside_mid_run_says_so() {
    let o = disturbed(&["rm", "-f"], 30).await;
    assert_eq!(o.status, RunStatus::Killed, "{o:?}");
    assert!(!o.timed_out);
    let notes = o.notes.join("\n");
    // Depending on timing the engine's kill or the removal is what we see.
    assert!(
        notes.contains("removed from outside") || notes.contains("killed or removed from outside"),
        "{notes}"
    );
}

#[tokio::test]
async fn a_container_killed_from_outside_mid_run_says_so() {
    let o = disturbed(&["kill", "-s", "KILL"], 30).await;
    assert_eq!(o.status, RunStatus::Killed, "{o:?}");
    let notes = o.notes.join("\n");
    assert!(notes.contains("killed or removed from outside"), "{notes}");
}

#[tokio::test]
async fn a_container_paused_from_outside_times_out_and_is_removed() {
    let o = disturbed(&["pause"], 4).await;
    assert_eq!(o.status, RunStatus::Timeout, "{o:?}");
    let notes = o.notes.join("\n");
    assert!(notes.contains("paused from outside"), "{notes}");
}

const THROUGH_EVAL: &str = r#"
import os
def attempt(label, f):
    try:
        f()
        print(label, "ran")
    except PermissionError:
        print(label, "refused")
attempt("exec", lambda: exec("import os; os.system('ls')"))
attempt("eval", lambda: eval("os.system('ls')"))
attempt("compile", lambda: exec(compile("import subprocess\nsubprocess.run(['ls'])", "/usr/lib/python3/dist-packages/pandas/x.py", "exec")))
ns = {}
exec("import os\ndef later():\n    os.system('ls')\n", ns)
attempt("nested", ns["later"])
attempt("import", lambda: exec("import pty"))
"#;

#[tokio::test]
async fn code_made_through_eval_exec_compile_is_the_users_code() {
    let sb = sandbox().await;
    // Audit only: everything runs and every command is recorded.
    let o = sb
        .run(&cfg(20), &job(THROUGH_EVAL, RuntimeRules::default()))
        .await
        .unwrap();
    assert_eq!(o.status, RunStatus::Ok, "{o:?}");
    let subs = o.audit.subprocess_attempts.join("\n");
    assert!(
        o.audit.subprocess_attempts.len() >= 4,
        "every command started through eval/exec/compile must be recorded: {subs}"
    );
    assert!(subs.contains("subprocess.Popen"), "{subs}");
    assert!(
        o.audit.imports.contains(&"pty".to_string()),
        "{:?}",
        o.audit
    );
    // With the default policy's runtime rules every one is refused.
    let rules = compute_bot::policy::Policy::default().runtime_rules();
    let o = sb.run(&cfg(20), &job(THROUGH_EVAL, rules)).await.unwrap();
    assert_eq!(o.status, RunStatus::Ok, "{o:?}");
    for label in ["exec", "eval", "compile", "nested", "import"] {
        assert!(
            o.stdout.contains(&format!("{label} refused")),
            "{label} was not refused: {}",
            o.stdout
        );
    }
    assert!(o.audit.refused.len() >= 5, "{:?}", o.audit.refused);
}

#[test]
fn run_code_without_a_policy_applies_the_builtin_policy() {
    let dir = tempfile::tempdir().unwrap();
    let run = |name: &str, code: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, code).unwrap();
        Command::new(BIN)
            .args(["run", "--format", "json", "--code"])
            .arg(&path)
            .output()
            .unwrap()
    };
    let help = Command::new(BIN).args(["run", "--help"]).output().unwrap();
    assert!(
        String::from_utf8_lossy(&help.stdout).contains("built-in data-analysis policy"),
        "the help text this test holds true changed"
    );
    // The static check: denied before any container starts.
    let out = run("shadow.py", "print(open('/etc/shadow').read())\n");
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["status"], "not_run", "{v}");
    assert_eq!(
        v["verdict"]["findings"][0]["rule"], "open-read-outside",
        "{v}"
    );
    let out = run("proc.py", "import subprocess\nsubprocess.run(['ls'])\n");
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    // The runtime rules: a path the checker cannot see is refused inside.
    let out = run(
        "hidden.py",
        "p = ['/tmp/x', '/etc/hostname'][len(str(1))]\ntry:\n    open(p).read()\n    print('READ')\nexcept PermissionError:\n    print('refused')\n",
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["status"], "ok", "{v}");
    assert_eq!(v["stdout"].as_str().unwrap().trim(), "refused", "{v}");
    let refused = v["audit"]["refused"].to_string();
    assert!(refused.contains("/etc/hostname"), "{refused}");
}

/// Calls each denied family straight through `syscall(2)` (ctypes, no static
/// check and no runtime rules on this path): the kernel must answer EPERM.
const SYSCALL_PROBE: &str = r#"
import ctypes, errno, os, platform, socket, threading
assert platform.machine() == "x86_64", platform.machine()
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def call(nr, *args):
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])
    return r, ctypes.get_errno()
probes = {
    "ptrace": (101, 16, 1, 0, 0),          # PTRACE_ATTACH to pid 1
    "process_vm_readv": (310, 1, 0, 0, 0, 0, 0),
    "keyctl": (250, 0, 0, 0, 0),
    "add_key": (248, 0, 0, 0, 0, 0),
    "bpf": (321, 0, 0, 0),
    "perf_event_open": (298, 0, 0, -1, -1, 0),
    "userfaultfd": (323, 0),
    "io_uring_setup": (425, 8, 0),
    "unshare": (272, 0x20000),             # CLONE_NEWNS
    "setns": (308, 0, 0),
    "mount": (165, 0, 0, 0, 0, 0),
    "personality": (135, 0xFFFFFFFF),      # a query; Docker's default allows it
    "socket_inet": (41, 2, 1, 0),          # AF_INET, SOCK_STREAM
    "socket_inet6": (41, 10, 2, 0),
    "socket_netlink": (41, 16, 3, 0),
    "init_module": (175, 0, 0, 0),
    "kexec_load": (246, 0, 0, 0, 0),
}
for name, (nr, *args) in probes.items():
    r, e = call(nr, *args)
    print(name, r, errno.errorcode.get(e, e))
r, e = call(435, 0, 0)                     # clone3: ENOSYS, so glibc falls back to clone
print("clone3", r, errno.errorcode.get(e, e))
a, b = socket.socketpair()                 # AF_UNIX still works
a.send(b"x"); print("unix", b.recv(1))
t = threading.Thread(target=lambda: None); t.start(); t.join(); print("thread ok")
"#;

#[tokio::test]
async fn the_seccomp_allowlist_denies_each_family_with_eperm() {
    let sb = sandbox().await;
    let o = sb
        .run(&runc(30), &job(SYSCALL_PROBE, RuntimeRules::default()))
        .await
        .unwrap();
    assert_eq!(o.status, RunStatus::Ok, "{o:?}");
    let mut seen = 0;
    for line in o.stdout.lines() {
        let w: Vec<&str> = line.split_whitespace().collect();
        match w[0] {
            "clone3" => assert_eq!(&w[1..], ["-1", "ENOSYS"], "{line}"),
            "unix" => assert_eq!(w[1], "b'x'"),
            "thread" => {}
            _ => {
                assert_eq!(&w[1..], ["-1", "EPERM"], "{line} (stdout: {})", o.stdout);
                seen += 1;
            }
        }
    }
    assert_eq!(seen, 17, "{}", o.stdout);
}

#[tokio::test]
async fn the_container_carries_our_seccomp_profile_and_the_data_stack_runs_under_it() {
    let sb = sandbox().await;
    let prepared = sb.prepare(&runc(60)).await.unwrap();
    let info = sb
        .docker()
        .inspect_container(prepared.name(), None)
        .await
        .unwrap();
    let opts = info.host_config.unwrap().security_opt.unwrap_or_default();
    let profile = opts
        .iter()
        .find_map(|o| o.strip_prefix("seccomp="))
        .expect("a seccomp profile");
    let v: serde_json::Value = serde_json::from_str(profile).unwrap();
    assert_eq!(v["defaultAction"], "SCMP_ACT_ERRNO");
    assert_eq!(v["defaultErrnoRet"], 1);
    assert!(opts.iter().any(|o| o.starts_with("no-new-privileges")));
    let code = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/sandbox/seccomp/programs/pandas_csv.py"
    ))
    .unwrap();
    let o = prepared
        .execute(&job(&code, RuntimeRules::default()))
        .await
        .unwrap();
    assert_eq!(o.status, RunStatus::Ok, "{o:?}");
    for program in ["numpy_linalg.py", "matplotlib_plot.py"] {
        let code = std::fs::read_to_string(format!(
            "{}/sandbox/seccomp/programs/{program}",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap();
        let o = sb
            .run(&runc(60), &job(&code, RuntimeRules::default()))
            .await
            .unwrap();
        assert_eq!(o.status, RunStatus::Ok, "{program}: {o:?}");
    }
}

#[tokio::test]
async fn preloaded_modules_are_still_audited_and_refused() {
    let sb = sandbox().await;
    let config = SandboxConfig {
        preload: compute_bot::sandbox::DEFAULT_PRELOAD
            .iter()
            .map(|m| m.to_string())
            .collect(),
        ..cfg(60)
    };
    let code = r#"
import sys
print("preloaded", "pandas" in sys.modules)
import pandas as pd
print(pd.DataFrame({"a": [1, 2, 3]}).a.sum())
for name in ["socket", "subprocess", "ctypes"]:
    try:
        __import__(name)
        print(name, "IMPORTED")
    except PermissionError:
        print(name, "refused")
"#;
    let mut rules = compute_bot::policy::Policy::default().runtime_rules();
    rules.deny_imports.push("ctypes".into());
    let prepared = sb.prepare(&config).await.unwrap();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let o = prepared.execute(&job(code, rules)).await.unwrap();
    assert_eq!(o.status, RunStatus::Ok, "{o:?}");
    let lines: Vec<&str> = o.stdout.lines().collect();
    assert_eq!(
        lines,
        [
            "preloaded True",
            "6",
            "socket refused",
            "subprocess refused",
            "ctypes refused"
        ],
        "{o:?}"
    );
    // The audit lists what the code imported, preloaded or not.
    assert!(
        o.audit.imports.contains(&"pandas".to_string()),
        "{:?}",
        o.audit.imports
    );
    assert!(
        o.audit.imports.contains(&"sys".to_string()),
        "{:?}",
        o.audit.imports
    );
    assert!(o.audit.refused.len() >= 3, "{:?}", o.audit.refused);
    // What was preloaded, as the child reports it: pandas at least (the
    // code came 3 s after the container); the rest unless the code came
    // first, in order.
    let tried: Vec<&String> = o
        .audit
        .preloaded
        .iter()
        .chain(&o.audit.preload_skipped)
        .collect();
    assert_eq!(
        tried,
        ["pandas", "numpy", "matplotlib.pyplot"],
        "{:?}",
        o.audit
    );
    assert_eq!(o.audit.preloaded[0], "pandas", "{:?}", o.audit);
}

/// A long preload narrows once the code has arrived: code that imports
/// nothing heavy, handed over as soon as its container is up, does not wait
/// for the rest (the audit names the modules not started); code importing
/// one of the rest gets that one loaded before it runs.
#[tokio::test]
async fn a_preload_narrows_to_the_codes_imports_once_the_code_has_arrived() {
    let sb = sandbox().await;
    let long = [
        "pandas",
        "matplotlib.pyplot",
        "scipy.stats",
        "statsmodels.api",
        "sklearn.ensemble",
        "sklearn.model_selection",
        "seaborn",
        "duckdb",
        "openpyxl",
        "fastparquet",
    ];
    let config = SandboxConfig {
        preload: long.iter().map(|m| m.to_string()).collect(),
        ..cfg(60)
    };
    let code =
        "import json, sys\nprint(json.dumps({'fastparquet': 'fastparquet' in sys.modules}))\n";
    let prepared = sb.prepare(&config).await.unwrap();
    let o = prepared
        .execute(&job(
            code,
            compute_bot::policy::Policy::default().runtime_rules(),
        ))
        .await
        .unwrap();
    assert_eq!(o.status, RunStatus::Ok, "{o:?}");
    // Every module was either imported or not started, in the list's order,
    // and the last ones were not started: the code did not wait for them.
    let tried: Vec<&String> = o
        .audit
        .preloaded
        .iter()
        .chain(&o.audit.preload_skipped)
        .collect();
    assert_eq!(tried, long, "{:?}", o.audit);
    assert!(
        o.audit.preload_skipped.contains(&"fastparquet".to_string()),
        "{:?}",
        o.audit
    );
    // A module not preloaded is not there for the code.
    assert_eq!(o.stdout.trim(), r#"{"fastparquet": false}"#, "{o:?}");
    // The code's own imports are audited as ever.
    assert!(
        o.audit.imports.contains(&"json".to_string()),
        "{:?}",
        o.audit
    );

    // Code importing the list's last module: the rest is narrowed to it,
    // and it still loads before the code runs.
    let code = "import json, sys\nimport fastparquet\nprint(json.dumps({'seaborn': 'seaborn' in sys.modules}))\n";
    let prepared = sb.prepare(&config).await.unwrap();
    let o = prepared
        .execute(&job(
            code,
            compute_bot::policy::Policy::default().runtime_rules(),
        ))
        .await
        .unwrap();
    assert_eq!(o.status, RunStatus::Ok, "{o:?}");
    assert_eq!(
        o.audit.preloaded.last().map(String::as_str),
        Some("fastparquet"),
        "{:?}",
        o.audit
    );
    assert!(
        o.audit.preload_skipped.contains(&"seaborn".to_string()),
        "{:?}",
        o.audit
    );
    assert_eq!(o.stdout.trim(), r#"{"seaborn": false}"#, "{o:?}");
    assert!(
        o.audit.imports.contains(&"fastparquet".to_string()),
        "{:?}",
        o.audit
    );
}
