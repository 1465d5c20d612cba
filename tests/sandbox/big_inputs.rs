//! Big inputs and bad data files through `compute-bot run` and the real
//! engine: an input far larger than the bot's memory use streams from its
//! file (the bot's peak RSS, side by side with a run on a tiny input, stays
//! far below the input's size), into a tmpfs `/data` or, past
//! `Limits::data_on_disk`, an anonymous volume the code cannot write to and
//! that goes with the container; a truncated, encrypted or oversized
//! Parquet/Excel file is refused at admission naming the file and the fix;
//! one that only looks right fails in the reader with the code, the output
//! so far and the stop reason in the report.

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use compute_bot::sandbox::{
    InputFile, Job, Limits, RunStatus, RuntimeRules, SandboxConfig, docker::Docker,
};
use compute_bot::units::ByteSize;

const BIN: &str = env!("CARGO_BIN_EXE_compute-bot");

/// Runs the bot in `dir`; returns its output and the largest peak RSS of
/// any child this test process has waited for so far (`RUSAGE_CHILDREN`).
fn run_in(dir: &Path, args: &[&str]) -> (Output, u64) {
    let out = Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .env_remove("COMPUTE_BOT_PROVIDER")
        .env_remove("COMPUTE_BOT_MODEL")
        .env_remove("COMPUTE_BOT_BASE_URL")
        .env_remove("COMPUTE_BOT_API_KEY")
        .output()
        .unwrap();
    (out, children_peak_rss())
}

fn children_peak_rss() -> u64 {
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    assert_eq!(unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut u) }, 0);
    u.ru_maxrss as u64 * 1024
}

fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// Writes a CSV of at least `bytes` bytes (a block of rows repeated);
/// returns its SHA-256 as `sha256sum` computes it.
fn write_csv(path: &Path, bytes: u64) -> String {
    use std::io::Write;
    let mut block = String::new();
    for i in 0..20_000u64 {
        block.push_str(&format!("{i},r{},{}.{:02}\n", i % 7, i % 1000, i % 100));
    }
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    f.write_all(b"id,region,amount\n").unwrap();
    let mut n = 0u64;
    while n < bytes {
        f.write_all(block.as_bytes()).unwrap();
        n += block.len() as u64;
    }
    f.flush().unwrap();
    drop(f);
    let out = Command::new("sha256sum").arg(path).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .unwrap()
        .to_string()
}

/// Hashes `/data/<name>` in the sandbox and says who owns `/data` (uid 0:
/// the volume; 10000: the runner's tmpfs).
const HASH_CODE: &str = r#"import hashlib, json, os
name = os.listdir('/data')[0]
h = hashlib.sha256()
n = 0
with open('/data/' + name, 'rb') as f:
    while True:
        b = f.read(1 << 20)
        if not b:
            break
        h.update(b)
        n += len(b)
print(json.dumps({"sha256": h.hexdigest(), "size": n, "data_owner": os.stat('/data').st_uid}))
"#;

fn policy(dir: &Path, file: &str, extra: &str) -> String {
    let p = dir.join(file);
    std::fs::write(
        &p,
        format!(
            "version: 1\nsandbox:\n  timeout: 5m\n{extra}inputs:\n  allow: ['*.csv', '*.parquet', '*.xlsx']\n  max_file_bytes: 512MiB\n  max_total_bytes: 512MiB\n"
        ),
    )
    .unwrap();
    p.display().to_string()
}

/// The bot's peak RSS with a 60 MiB input (through stdin into the tmpfs
/// `/data`) and then a 300 MiB one (the disk-backed `/data`), against a run
/// on a tiny input, in one test: each adds far less than its input's size
/// (the code before this change held an input twice: read whole, then
/// copied into the job's bytes); the code sees exactly the admitted bytes.
#[test]
fn a_big_input_streams_without_the_bot_holding_it() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("hash.py"), HASH_CODE).unwrap();
    // At most TMPFS_DATA_MAX (64MiB) of inputs: /data is the runner's tmpfs.
    let tmpfs = policy(dir.path(), "tmpfs.yml", "");
    let text = std::fs::read_to_string(&tmpfs)
        .unwrap()
        .replace("512MiB", "64MiB");
    std::fs::write(&tmpfs, text).unwrap();
    // More: /data is a volume on the engine's disk.
    let disk = policy(dir.path(), "disk.yml", "");
    assert!(
        !Limits {
            data_max_bytes: ByteSize::mib(64),
            ..Default::default()
        }
        .data_on_disk()
    );
    assert!(
        Limits {
            data_max_bytes: ByteSize::mib(512),
            ..Default::default()
        }
        .data_on_disk()
    );
    let run = |p: &str, input: &str, sha: &str| {
        let (out, peak) = run_in(
            dir.path(),
            &[
                "run", "--policy", p, "--format", "json", "--code", "hash.py", "--input", input,
            ],
        );
        let r = json(&out);
        assert_eq!(r["status"], "ok", "{r:#}");
        let res: serde_json::Value =
            serde_json::from_str(r["outcome"]["stdout"].as_str().unwrap().trim()).unwrap();
        assert_eq!(res["sha256"], sha, "{input}");
        (res["data_owner"].as_u64().unwrap(), peak)
    };
    let small_sha = write_csv(&dir.path().join("small.csv"), 1000);
    let (owner, baseline) = run(&tmpfs, "small.csv", &small_sha);
    assert_eq!(owner, 10000, "the runner's tmpfs");

    let mid = 60u64 << 20;
    let mid_sha = write_csv(&dir.path().join("mid.csv"), mid);
    let (owner, after_tmpfs) = run(&tmpfs, "mid.csv", &mid_sha);
    assert_eq!(owner, 10000, "the runner's tmpfs");
    std::fs::remove_file(dir.path().join("mid.csv")).unwrap();

    let big = 300u64 << 20;
    let big_sha = write_csv(&dir.path().join("big.csv"), big);
    let (owner, after_disk) = run(&disk, "big.csv", &big_sha);
    assert_eq!(owner, 0, "the volume's root is root's");
    std::fs::remove_file(dir.path().join("big.csv")).unwrap();

    let mib = |b: u64| b as f64 / (1 << 20) as f64;
    eprintln!(
        "bot peak RSS: tiny input {:.1} MiB; 60 MiB input (tmpfs, stdin) {:.1} MiB; 300 MiB input (volume) {:.1} MiB",
        mib(baseline),
        mib(after_tmpfs),
        mib(after_disk)
    );
    // RUSAGE_CHILDREN is the largest of all runs so far, so each bound
    // covers every run before it. Streaming costs a fixed ~30 MiB here
    // (buffers and threads), the same for 60 and 300 MiB; holding an input
    // would cost its size, at least.
    let fixed = 48u64 << 20;
    assert!(
        after_tmpfs < baseline + fixed,
        "the 60 MiB input raised the bot's peak RSS from {:.1} to {:.1} MiB",
        mib(baseline),
        mib(after_tmpfs)
    );
    assert!(
        after_disk < baseline + fixed,
        "the 300 MiB input raised the bot's peak RSS from {:.1} to {:.1} MiB",
        mib(baseline),
        mib(after_disk)
    );
}

fn volumes() -> std::collections::BTreeSet<String> {
    let out = Command::new("docker")
        .args(["volume", "ls", "-q"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

/// The disk-backed /data: the code (no audit hook rules, so only the kernel
/// answers) can read its input but cannot write, create, chmod or delete
/// anything there, and the volume is gone with the container.
#[tokio::test]
async fn the_code_cannot_write_to_a_disk_backed_data_and_the_volume_goes_with_the_container() {
    let limits = Limits {
        timeout: Duration::from_secs(120),
        data_max_bytes: ByteSize::mib(128),
        ..Default::default()
    };
    assert!(limits.data_on_disk());
    let cfg = SandboxConfig {
        runtime: crate::machine_runtime(),
        limits,
        ..Default::default()
    };
    let code = r#"import json, os
tries = {}
for what, f in [
    ("chmod_file", lambda: os.chmod('/data/a.csv', 0o666)),
    ("chmod_dir", lambda: os.chmod('/data', 0o777)),
    ("create", lambda: open('/data/new.csv', 'w').write('x')),
    ("append", lambda: open('/data/a.csv', 'a').write('x')),
    ("remove", lambda: os.remove('/data/a.csv')),
]:
    try:
        f()
        tries[what] = "allowed"
    except PermissionError:
        tries[what] = "denied"
st = os.stat('/data/a.csv')
print(json.dumps({"tries": tries, "text": open('/data/a.csv').read(), "mode": oct(st.st_mode & 0o777), "uid": st.st_uid}))
"#;
    let before = volumes();
    let sb = Docker::connect().await.expect("Docker must be running");
    let job = Job {
        code: code.into(),
        inputs: vec![InputFile::new("a.csv", b"a,b\n1,2\n".to_vec())],
        rules: RuntimeRules::default(),
    };
    let o = sb.run(&cfg, &job).await.expect("run");
    assert_eq!(o.status, RunStatus::Ok, "{}\n{}", o.stdout, o.stderr);
    let r: serde_json::Value = serde_json::from_str(o.stdout.trim()).unwrap();
    for what in ["chmod_file", "chmod_dir", "create", "append", "remove"] {
        assert_eq!(r["tries"][what], "denied", "{what}: {r}");
    }
    assert_eq!(r["text"], "a,b\n1,2\n");
    assert_eq!(r["mode"], "0o444");
    assert_eq!(r["uid"], 0);
    // Whatever the connection still has under way first.
    sb.settled().await;
    let left: Vec<String> = volumes().difference(&before).cloned().collect();
    assert!(left.is_empty(), "volumes left behind: {left:?}");
}

/// Bad data files: refused at admission, each naming the file and the fix —
/// truncated Parquet, a password-protected (OLE) .xlsx, a file over
/// `inputs.max_file_bytes`; no container starts.
#[test]
fn truncated_encrypted_or_oversized_data_files_are_refused_naming_the_file_and_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("job.py"), "print('{}')\n").unwrap();
    std::fs::write(dir.path().join("cut.parquet"), b"PAR1\x15\x04\x15\x10\x15").unwrap();
    let mut ole = b"\xD0\xCF\x11\xE0\xA1\xB1\x1A\xE1".to_vec();
    ole.resize(512, 0);
    std::fs::write(dir.path().join("locked.xlsx"), &ole).unwrap();
    let p = policy(dir.path(), "policy.yml", "");
    let text = std::fs::read_to_string(&p)
        .unwrap()
        .replace("max_file_bytes: 512MiB", "max_file_bytes: 1KiB");
    std::fs::write(&p, text).unwrap();
    std::fs::write(dir.path().join("big.csv"), vec![b'1'; 2048]).unwrap();
    let cases = [
        ("cut.parquet", "does not end with `PAR1`"),
        ("locked.xlsx", "encrypted or legacy Excel file"),
        ("big.csv", "`inputs.max_file_bytes`"),
    ];
    for (file, why) in cases {
        let (out, _) = run_in(
            dir.path(),
            &["run", "--policy", &p, "--code", "job.py", "--input", file],
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{file}: {err}");
        assert!(
            err.contains(&format!("input `{file}`: ")) && err.contains(why),
            "{file}: {err}"
        );
    }
    let (out, _) = run_in(
        dir.path(),
        &[
            "run",
            "--policy",
            &p,
            "--code",
            "job.py",
            "--input",
            "locked.xlsx",
        ],
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("save it as an unencrypted .xlsx"));
}

/// A Parquet file with the magic at both ends but garbage inside passes
/// admission; DuckDB's error comes back with the code, what it printed
/// before and the stop reason, naming the file.
#[test]
fn a_corrupt_parquet_inside_fails_in_the_reader_with_code_output_and_reason_reported() {
    let dir = tempfile::tempdir().unwrap();
    let code = "import duckdb\nprint('reading /data/bad.parquet', flush=True)\nprint(duckdb.sql(\"select count(*) from '/data/bad.parquet'\").fetchall())\n";
    std::fs::write(dir.path().join("job.py"), code).unwrap();
    let mut bad = b"PAR1".to_vec();
    bad.extend(std::iter::repeat_n(0x5a, 200));
    bad.extend(b"PAR1");
    std::fs::write(dir.path().join("bad.parquet"), &bad).unwrap();
    let p = policy(dir.path(), "policy.yml", "");
    let (out, _) = run_in(
        dir.path(),
        &[
            "run",
            "--policy",
            &p,
            "--goal",
            "count the rows of bad.parquet",
            "--code",
            "job.py",
            "--input",
            "bad.parquet",
            "--format",
            "json",
        ],
    );
    let r = json(&out);
    assert_ne!(r["status"], "ok", "{r:#}");
    assert_eq!(r["code"], code, "{r:#}");
    assert!(
        r["outcome"]["stdout"]
            .as_str()
            .unwrap()
            .contains("reading /data/bad.parquet"),
        "{r:#}"
    );
    let stderr = r["outcome"]["stderr"].as_str().unwrap();
    assert!(stderr.contains("bad.parquet"), "{stderr}");
    assert!(
        r["stop_reason"].as_str().is_some_and(|s| !s.is_empty()),
        "{r:#}"
    );
}

/// An input whose file no longer has the admitted SHA-256 is not handed
/// to the code: through stdin (tmpfs `/data`) and through the volume, the
/// run fails with `BadInput` naming the file, and no container is left.
#[tokio::test]
async fn an_input_changed_after_admission_fails_the_run_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.csv");
    std::fs::write(&path, b"a,b\n9,9\n").unwrap();
    // Admitted with the hash of other bytes of the same size.
    let admitted = compute_bot::sandbox::sha256_hex(b"a,b\n1,2\n");
    let sb = Docker::connect().await.expect("Docker must be running");
    for data in [ByteSize::mib(64), ByteSize::mib(128)] {
        let cfg = SandboxConfig {
            runtime: crate::machine_runtime(),
            limits: Limits {
                timeout: Duration::from_secs(120),
                data_max_bytes: data,
                ..Default::default()
            },
            ..Default::default()
        };
        let job = Job {
            code: "print(open('/data/a.csv').read())".into(),
            inputs: vec![InputFile::from_file("a.csv", &path, 8, admitted.clone())],
            rules: RuntimeRules::default(),
        };
        let e = sb.run(&cfg, &job).await.unwrap_err();
        let text = e.to_string();
        assert!(
            text.starts_with("input file `a.csv`: changed after it was admitted"),
            "{data}: {text}"
        );
    }
    sb.settled().await;
    let left = Command::new("docker")
        .args(["ps", "-aq", "--filter"])
        .arg(format!("label=org.compute-bot.pid={}", std::process::id()))
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&left.stdout).trim().is_empty(),
        "containers left: {}",
        String::from_utf8_lossy(&left.stdout)
    );
}
