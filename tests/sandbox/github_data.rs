//! The bot's one folder under `/data`: the `github:` data as
//! `/data/github/<source>.csv`, on the real engine. The code reads it (the
//! runtime rules and the audit see the path), cannot write there (the
//! folder is read-only like `/data`, on the tmpfs and on the disk-backed
//! volume), and a job naming any other folder, `..` or an absolute path is
//! refused by the sandbox's own job check before a byte reaches the
//! container.

use std::time::Duration;

use compute_bot::sandbox::{
    InputFile, Job, Limits, RunStatus, RuntimeRules, SandboxConfig, SandboxError, docker::Docker,
};
use compute_bot::units::ByteSize;

const PULLS: &str = "number,title\n1,first\n2,second\n";

/// What the code finds under `/data` and what it may do there: each try is
/// `allowed` or the error's name.
const PROBE: &str = r#"import errno, json, os
import pandas as pd
p = pd.read_csv("/data/github/pulls.csv")
mine = pd.read_csv("/data/github_pulls.csv")
tries = {}
def attempt(what, f):
    try:
        f()
        tries[what] = "allowed"
    except OSError as e:
        tries[what] = errno.errorcode.get(e.errno, str(e.errno)) if e.errno else type(e).__name__
attempt("create", lambda: open("/data/github/new.csv", "w").write("x"))
attempt("append", lambda: open("/data/github/pulls.csv", "a").write("x"))
attempt("mkdir", lambda: os.mkdir("/data/github/sub"))
attempt("remove", lambda: os.remove("/data/github/pulls.csv"))
d, f = os.stat("/data/github"), os.stat("/data/github/pulls.csv")
print(json.dumps({"rows": int(len(p)), "mine": int(len(mine)), "tries": tries,
    "dir_mode": oct(d.st_mode & 0o777), "file_mode": oct(f.st_mode & 0o777),
    "data": sorted(os.listdir("/data")), "folder": sorted(os.listdir("/data/github"))}))
"#;

fn inputs() -> Vec<InputFile> {
    vec![
        InputFile::new("github/pulls.csv", PULLS.as_bytes().to_vec()),
        InputFile::new("github_pulls.csv", b"number\n7\n".to_vec()),
        InputFile::new("github/reviews.csv", b"pull_number\n1\n".to_vec()),
    ]
}

fn config(limits: Limits) -> SandboxConfig {
    SandboxConfig {
        runtime: crate::machine_runtime(),
        limits: Limits {
            timeout: Duration::from_secs(120),
            ..limits
        },
        ..Default::default()
    }
}

async fn probe(
    limits: Limits,
    rules: RuntimeRules,
) -> (serde_json::Value, compute_bot::sandbox::Outcome) {
    let sb = Docker::connect()
        .await
        .expect("the Docker engine must be running");
    let job = Job {
        code: PROBE.into(),
        inputs: inputs(),
        rules,
    };
    let o = sb.run(&config(limits), &job).await.expect("run");
    sb.close().await;
    assert_eq!(o.status, RunStatus::Ok, "{}\n{}", o.stdout, o.stderr);
    let v = serde_json::from_str(o.stdout.trim()).unwrap_or_else(|e| panic!("{e}: {}", o.stdout));
    (v, o)
}

/// The listing, the rows and the modes every layout shows.
fn assert_read_only_folder(v: &serde_json::Value) {
    assert_eq!(v["rows"], 2, "{v}");
    assert_eq!(
        v["mine"], 1,
        "a user's github_pulls.csv sits beside the folder: {v}"
    );
    assert_eq!(
        v["data"],
        serde_json::json!(["github", "github_pulls.csv"]),
        "{v}"
    );
    assert_eq!(
        v["folder"],
        serde_json::json!(["pulls.csv", "reviews.csv"]),
        "{v}"
    );
    assert_eq!(v["dir_mode"], "0o555", "{v}");
    assert_eq!(v["file_mode"], "0o444", "{v}");
}

/// Under the default policy's runtime rules: the code reads
/// `/data/github/pulls.csv`, the audit lists that path, and a write into
/// the folder is refused (and audited as refused).
#[tokio::test]
async fn code_reads_the_github_folder_and_its_writes_there_are_refused() {
    let rules = compute_bot::policy::Policy::default().runtime_rules();
    let (v, o) = probe(Limits::default(), rules).await;
    assert_read_only_folder(&v);
    for what in ["create", "append", "mkdir", "remove"] {
        assert_ne!(v["tries"][what], "allowed", "{what}: {v}");
    }
    let opened = &o.audit.files_opened;
    assert!(
        opened
            .iter()
            .any(|f| f.path == "/data/github/pulls.csv" && f.mode == "r"),
        "{opened:?}"
    );
    assert!(
        opened
            .iter()
            .any(|f| f.path == "/data/github/new.csv" && f.mode == "w"),
        "{opened:?}"
    );
    assert!(
        o.audit
            .refused
            .iter()
            .any(|r| r.contains("/data/github/new.csv")),
        "{:?}",
        o.audit.refused
    );
}

/// Without any runtime rule, only the kernel answers: the folder the runner
/// made is read-only on the tmpfs `/data`, and on the disk-backed volume
/// (big inputs) it is root's, as the engine unpacked it.
#[tokio::test]
async fn the_kernel_keeps_the_github_folder_read_only_on_tmpfs_and_on_disk() {
    let (v, _) = probe(Limits::default(), RuntimeRules::default()).await;
    assert_read_only_folder(&v);
    for what in ["create", "append", "mkdir", "remove"] {
        assert_eq!(v["tries"][what], "EACCES", "tmpfs, {what}: {v}");
    }
    let disk = Limits {
        data_max_bytes: ByteSize::mib(128),
        ..Default::default()
    };
    assert!(disk.data_on_disk());
    let (v, _) = probe(disk, RuntimeRules::default()).await;
    assert_read_only_folder(&v);
    for what in ["create", "append", "mkdir", "remove"] {
        assert_eq!(v["tries"][what], "EACCES", "volume, {what}: {v}");
    }
}

/// A job naming any folder but the bot's, `..`, an absolute path or the
/// folder itself as a file is refused by the sandbox, naming the input and
/// the rule; no container of this process is left.
#[tokio::test]
async fn a_job_with_another_folder_dotdot_or_an_absolute_name_is_refused() {
    let sb = Docker::connect()
        .await
        .expect("the Docker engine must be running");
    let cases = [
        ("github/../x", "`github/<source>.csv`"),
        ("github/../etc/passwd.csv", "`github/<source>.csv`"),
        ("github/a/b.csv", "`github/<source>.csv`"),
        ("a/b.csv", "is not a plain file name"),
        ("/etc/x.csv", "is not a plain file name"),
        ("..", "is not a plain file name"),
        ("github", "rename the file"),
    ];
    for (name, why) in cases {
        let job = Job {
            code: "print(1)\n".into(),
            inputs: vec![InputFile::new(name, b"x\n".to_vec())],
            rules: RuntimeRules::default(),
        };
        let e = sb
            .run(&config(Limits::default()), &job)
            .await
            .expect_err(name);
        assert!(matches!(e, SandboxError::BadInput { .. }), "{name}: {e:?}");
        let text = e.to_string();
        assert!(
            text.starts_with(&format!("input file `{name}`: ")) && text.contains(why),
            "{name}: {text}"
        );
    }
    sb.close().await;
    crate::sandbox::assert_none_left_by_this_process("a refused job left its container");
}

/// The runner checks the names again, whatever the bot sent: fed a job
/// with a bad name directly (past the bot's job check), it stops before
/// writing a byte or running the code, and never reports. A good name in
/// the same container set-up gets its folder and a report.
#[test]
fn the_runner_itself_refuses_a_name_outside_the_rule() {
    let image = crate::long_deadline_config(1.0).image;
    let run = |name: &str| {
        let code = "print('ran')\n";
        let header = serde_json::json!({
            "key": "00".repeat(32),
            "code_len": code.len(),
            "inputs": [{"name": name, "size": 2}],
            "caps": {"timeout_ms": 20000},
        });
        let mut child = std::process::Command::new("docker")
            .args(["run", "--rm", "-i", "--network", "none", "--read-only"])
            .args(["--user", "10001:10001", "--entrypoint", ""])
            .args(["--tmpfs", "/data:rw,size=1m,mode=0700,uid=10001,gid=10001"])
            .args(["--tmpfs", "/out:rw,size=1m,mode=0700,uid=10001,gid=10001"])
            .args(["--tmpfs", "/tmp:rw,size=64m,mode=1777"])
            .arg(&image)
            .args(["python3", "-I", "-S", "-c", RUNNER, "60", ""])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("docker");
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        stdin
            .write_all(format!("{header}\n{code}x\n").as_bytes())
            .unwrap();
        drop(stdin);
        child.wait_with_output().unwrap()
    };
    for name in [
        "github/../x",
        "github/a/b.csv",
        "github/Pulls.csv",
        "a/b.csv",
        "/x",
        "github",
        "..",
    ] {
        let o = run(name);
        let err = String::from_utf8_lossy(&o.stderr);
        let out = String::from_utf8_lossy(&o.stdout);
        assert_ne!(o.status.code(), Some(0), "{name}: {out}\n{err}");
        assert!(err.contains("ValueError: bad input name"), "{name}: {err}");
        assert!(!out.contains(":r:"), "{name}: reported: {out}");
    }
    let o = run("github/pulls.csv");
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{out}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(out.contains(":r:"), "{out}");
}

const RUNNER: &str = include_str!("../../crates/sandbox/src/runner.py");
