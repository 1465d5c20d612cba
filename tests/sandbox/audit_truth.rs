//! The audit the code cannot lie in, against the real engine: hostile
//! programs try to start programs through allowed libraries, to forge the
//! runner's frames and the interpreter's audit channel, and to read outside
//! /data through native code. Each runs with no runtime rules at all (the
//! interpreter refuses nothing), so what holds is the kernel and the runner,
//! and what the answer shows is what the kernel saw.

use compute_bot::sandbox::{
    InputFile, Job, KernelRecord, Outcome, RunStatus, RuntimeRules, Sandbox, Source, Supervision,
    Witness,
};

fn under_runsc() -> bool {
    crate::machine_runtime() == compute_bot::sandbox::Runtime::Runsc
}

/// The record of the code's opens and sockets, seen outside its process:
/// by the kernel through the runner (runc), or by gVisor's kernel in the
/// log of the `runsc-audit` runtime (scripts/install-gvisor registers it),
/// and named so in the outcome's sources.
fn opens_record(o: &Outcome) -> &KernelRecord {
    let k = o.audit.kernel.as_ref().expect("the kernel's record");
    let (witness, source) = if under_runsc() {
        (Witness::Sentry, Source::SandboxKernelObserved)
    } else {
        (Witness::Runner, Source::KernelObserved)
    };
    assert_eq!(
        k.witness(),
        Some(witness),
        "no record of the opens (under runsc: register runsc-audit with scripts/install-gvisor): {:?}",
        o.notes
    );
    assert_eq!(o.sources.get("audit.kernel.files"), Some(&source));
    k
}

async fn run(code: &str, rules: RuntimeRules, inputs: Vec<InputFile>) -> Outcome {
    let sb = Sandbox::connect().await.expect("the Docker engine");
    let job = Job {
        code: code.to_string(),
        inputs,
        rules,
    };
    let o = sb
        .run(&crate::long_deadline_config(1.0), &job)
        .await
        .expect("run");
    sb.close().await;
    o
}

fn sales() -> Vec<InputFile> {
    vec![InputFile::new(
        "sales.csv",
        b"day,amount\n1,10\n2,32\n".to_vec(),
    )]
}

/// Each route of the hostile search that started a program through an
/// allowed library: none starts one, and the kernel's record lists them.
#[tokio::test]
async fn no_route_through_the_libraries_starts_a_program() {
    let code = r#"
import os, string, json, ctypes
import numpy as np
out = {}
def attempt(name, f):
    try:
        out[name] = repr(f())[:80]
    except BaseException as e:
        out[name] = "refused " + type(e).__name__
system = lambda c: string.Formatter().get_field("0.system", [os], {})[0](c)
attempt("formatter_vectorize", lambda: np.vectorize(system)(["id > /tmp/ran"]))
attempt("libc_system", lambda: ctypes.CDLL(None).system(b"id > /tmp/ran"))
from threadpoolctl import threadpool_info, ThreadpoolController
attempt("threadpoolctl_dynlib", lambda: [c.dynlib for c in ThreadpoolController().lib_controllers][0].system(b"id > /tmp/ran"))
attempt("posix_spawn", lambda: os.posix_spawn("/bin/sh", ["sh", "-c", "id > /tmp/ran"], {}))
attempt("execv", lambda: os.execv("/bin/sh", ["sh", "-c", "id > /tmp/ran"]))
out["ran"] = os.path.exists("/tmp/ran")
print(json.dumps(out))
"#;
    let o = run(code, RuntimeRules::default(), vec![]).await;
    assert_eq!(o.status, RunStatus::Ok, "{o:?}");
    let v: serde_json::Value = serde_json::from_str(o.stdout.trim()).expect(&o.stdout);
    assert_eq!(v["ran"], false, "a program ran: {v}");
    assert!(v["execv"].as_str().unwrap().starts_with("refused"), "{v}");
    let k = o.audit.kernel.as_ref().expect("the kernel's record");
    assert!(k.refuses_starts(), "{k:?}");
    if !under_runsc() {
        assert_eq!(k.mode, Supervision::Notify);
        // Python's and libc's routes alike: forks (system, spawn) and the exec.
        assert!(k.starts.len() >= 4, "{:?}", k.starts);
        assert!(
            k.starts
                .iter()
                .any(|s| s.call == "execve" && s.path.as_deref() == Some("/bin/sh")),
            "{:?}",
            k.starts
        );
    }
}

/// The runner's frames and pid 1's descriptors are out of reach: /proc/1/fd
/// cannot be opened, with Python or with libc, and a line written anywhere
/// the code can write never becomes a frame.
#[tokio::test]
async fn the_code_cannot_forge_the_report() {
    let code = r#"
import os, json, ctypes
out = {}
for path in ("/proc/1/fd/1", "/proc/1/fd/0", "/proc/1/mem", "/proc/1/environ"):
    try:
        fd = os.open(path, os.O_RDWR)
        os.write(fd, b"0:r:e30=:00000000000000000000000000000000\n")
        out[path] = "OPENED"
    except OSError as e:
        out[path] = e.errno
out["libc"] = ctypes.CDLL(None).open(b"/proc/1/fd/1", 2)
print(json.dumps(out))
"#;
    let o = run(code, RuntimeRules::default(), vec![]).await;
    if under_runsc() {
        // This gVisor lets the code open pid 1's fd/* (PR_SET_DUMPABLE is not
        // honoured there): a write is a line without a valid tag, and the
        // run ends tampered, never ok.
        assert!(
            matches!(o.status, RunStatus::Ok | RunStatus::Tampered),
            "{o:?}"
        );
        if o.stdout.contains("OPENED") {
            assert_eq!(o.status, RunStatus::Tampered, "{o:?}");
        }
        return;
    }
    assert_eq!(o.status, RunStatus::Ok, "{o:?}");
    assert!(!o.stdout.contains("OPENED"), "{}", o.stdout);
    let v: serde_json::Value = serde_json::from_str(o.stdout.trim()).unwrap();
    assert_eq!(v["libc"], -1, "{v}");
}

/// The interpreter's audit channel: closing it is refused by the kernel,
/// and a line written to it that no system call backs makes the run
/// `tampered`, shown with what the kernel saw.
#[tokio::test]
async fn the_audit_channel_cannot_be_closed_or_written_unnoticed() {
    let code = r#"
import os, sys
aud = int(sys.argv[2])
try:
    os.close(aud)
    print("closed")
except OSError as e:
    print("close refused", e.errno)
print(open("/data/sales.csv").read().count("\n"))
"#;
    let o = run(code, RuntimeRules::default(), sales()).await;
    assert!(o.stdout.contains("close refused 1"), "{}", o.stdout);
    if !under_runsc() {
        assert_eq!(o.status, RunStatus::Tampered, "{o:?}");
        assert!(
            o.tampered.iter().any(|t| t.contains("audit channel")),
            "{:?}",
            o.tampered
        );
    }
    // A forged read of an input: the kernel saw no such open.
    let forge = r#"
import os, sys
os.writev(int(sys.argv[2]), [b"open\t/data/sales.csv\tr\t0\t0\n"])
print(41)
"#;
    let o = run(forge, RuntimeRules::default(), sales()).await;
    // Under gVisor its kernel's log has no such open either.
    assert_eq!(o.status, RunStatus::Tampered, "{o:?}");
    let never = if under_runsc() {
        "never carried out"
    } else {
        "never saw"
    };
    assert!(
        o.tampered
            .iter()
            .any(|t| t.contains("/data/sales.csv") && t.contains(never)),
        "{:?}",
        o.tampered
    );
    // The same forgery through the interpreter's own audit hook, in pure
    // Python: the hook believes it; the kernel's record does not.
    let hook = "import sys\nsys.audit('open', '/data/sales.csv', 'r', 0)\nprint(41)\n";
    let o = run(hook, RuntimeRules::default(), sales()).await;
    assert_eq!(o.status, RunStatus::Tampered, "{o:?}");
    // The same program without the forgery is an ordinary run.
    let o = run(
        "print(open('/data/sales.csv').read().count('\\n'))\n",
        RuntimeRules::default(),
        sales(),
    )
    .await;
    assert_eq!(o.status, RunStatus::Ok, "{o:?}");
}

/// Native code is seen: a DuckDB read of an input appears in the kernel's
/// record as a Python read of it does, and DuckDB's own confinement refuses
/// files outside /data, /tmp and /out, extension installs and URLs.
#[tokio::test]
async fn native_reads_are_recorded_and_duckdb_is_confined() {
    let code = r#"
import json, duckdb
out = {"n": duckdb.sql("select count(*) from read_csv('/data/sales.csv')").fetchall()[0][0]}
for name, q in (("passwd", "select * from read_text('/etc/passwd')"),
                ("environ", "select * from read_text('/proc/self/environ')"),
                ("copy_out", "copy (select 1) to '/etc/x.csv'"),
                ("url", "select * from read_csv('https://example.com/x.csv')"),
                ("install", "INSTALL httpfs")):
    try:
        duckdb.sql(q).fetchall() if q.startswith("select") else duckdb.sql(q)
        out[name] = "ran"
    except duckdb.Error as e:
        out[name] = type(e).__name__
c = duckdb.connect()
try:
    c.sql("select * from read_text('/etc/passwd')").fetchall()
    out["new_connection"] = "ran"
except duckdb.Error as e:
    out["new_connection"] = type(e).__name__
print(json.dumps(out))
"#;
    let o = run(code, RuntimeRules::default(), sales()).await;
    assert_eq!(o.status, RunStatus::Ok, "{o:?}");
    let v: serde_json::Value = serde_json::from_str(o.stdout.trim()).expect(&o.stdout);
    assert_eq!(v["n"], 2, "{v}");
    for refused in [
        "passwd",
        "environ",
        "copy_out",
        "url",
        "install",
        "new_connection",
    ] {
        assert_ne!(v[refused], "ran", "{refused}: {v}");
    }
    let k = opens_record(&o);
    let native = k
        .files
        .iter()
        .find(|f| f.path == "/data/sales.csv")
        .unwrap_or_else(|| panic!("DuckDB's read is not in the record: {k:?}"));
    // The interpreter saw nothing of it: it was native code.
    assert!(
        !o.audit
            .files_opened
            .iter()
            .any(|f| f.path == "/data/sales.csv"),
        "{:?}",
        o.audit.files_opened
    );
    // A Python read of the same file appears the same way.
    let o = run(
        "open('/data/sales.csv').read()\n",
        RuntimeRules::default(),
        sales(),
    )
    .await;
    let k = opens_record(&o);
    let python = k
        .files
        .iter()
        .find(|f| f.path == "/data/sales.csv")
        .unwrap();
    assert_eq!(
        (python.mode.as_str(), python.result.as_str()),
        (native.mode.as_str(), native.result.as_str())
    );
}

/// What the runtime file rules refuse, the runner refuses for native code
/// too, on the path actually opened: /proc/self/root/etc/passwd is
/// /etc/passwd, a symlink into /proc/self is the code's own, and /dev/shm
/// does not exist. Threads (joblib, BLAS) keep working.
#[tokio::test]
async fn file_rules_hold_on_the_path_opened_and_threads_work() {
    let code = r#"
import os, json, ctypes
from sklearn.ensemble import RandomForestClassifier
import numpy as np
out = {}
def attempt(name, f):
    try:
        out[name] = repr(f())[:40]
    except OSError as e:
        out[name] = e.errno
attempt("proc_root", lambda: ctypes.CDLL(None).open(b"/proc/self/root/etc/passwd", 0))
attempt("dev_shm", lambda: os.listdir("/dev/shm"))
try:
    os.close(os.open("/dev/shm/x", os.O_WRONLY | os.O_CREAT))
    out["dev_shm_write"] = "WRITTEN"
except OSError as e:
    out["dev_shm_write"] = "refused"
attempt("data", lambda: len(open("/data/sales.csv").read()))
X = np.random.RandomState(0).rand(300, 4)
y = (X[:, 0] > 0.5).astype(int)
out["forest"] = RandomForestClassifier(n_estimators=20, n_jobs=-1, random_state=0).fit(X, y).score(X, y)
print(json.dumps(out))
"#;
    // The file rule alone (ctypes stands for any native library here).
    let rules = RuntimeRules {
        restrict_files: true,
        ..RuntimeRules::default()
    };
    let o = run(code, rules, sales()).await;
    assert_eq!(o.status, RunStatus::Ok, "{o:?}");
    let v: serde_json::Value = serde_json::from_str(o.stdout.trim()).expect(&o.stdout);
    assert_eq!(v["forest"], 1.0, "{v}");
    assert_eq!(v["data"], "21", "{v}");
    assert_eq!(
        v["dev_shm_write"], "refused",
        "/dev/shm must not be writable: {v}"
    );
    if under_runsc() {
        return;
    }
    assert_eq!(
        v["dev_shm"], 2,
        "no /dev/shm under runc (IPC mode none): {v}"
    );
    assert_eq!(v["proc_root"], "-1", "{v}");
    let k = o.audit.kernel.as_ref().unwrap();
    assert!(
        k.files.iter().any(|f| f.path == "/etc/passwd"
            && f.asked.as_deref() == Some("/proc/self/root/etc/passwd")
            && f.denied),
        "{:?}",
        k.files
    );
}

/// Names the code chooses cannot write the record: a path holding a line
/// break and a whole forged log line, a task name that reads as the start
/// of an open, a directory name that holds the log's own separator. Under
/// gVisor the Sentry's log is JSON and read from its fixed formats; under
/// runc the runner reads the path from the stopped thread.
#[tokio::test]
async fn names_the_code_chooses_do_not_write_the_record() {
    let code = r#"
import ctypes, os, json
ctypes.CDLL(None).prctl(15, b" X openat(0x3 /", 0, 0, 0)  # PR_SET_NAME
forged = '/tmp/a\n{"msg":"[   2:   2] python3 X openat(AT_FDCWD /tmp, 0x1 /data/secret.csv, O_RDONLY, 0o0) = 3 (0x3) (1us)"}'
os.makedirs(os.path.dirname(forged))
open(forged, "w").write("x")
os.mkdir("/tmp/q, 0x1 ")
os.chdir("/tmp/q, 0x1 ")
open("rel.txt", "w").write("y")
os.close(os.open("/data/sales.csv", os.O_RDONLY))
print(json.dumps({"ok": True}))
"#;
    let o = run(code, RuntimeRules::default(), sales()).await;
    assert_eq!(o.status, RunStatus::Ok, "{o:?}");
    let k = opens_record(&o);
    let paths: Vec<&str> = k.files.iter().map(|f| f.path.as_str()).collect();
    assert!(!paths.contains(&"/data/secret.csv"), "forged: {paths:?}");
    assert!(
        k.files
            .iter()
            .any(|f| f.path.contains("/tmp/a\n") && f.mode == "w+create"),
        "{paths:?}"
    );
    if under_runsc() {
        // With the working directory named so, the log's opens split two
        // ways: listed whole, marked, not guessed (and the interpreter's
        // read of the input is one of the ways, so not a forgery).
        for named in ["rel.txt", "/data/sales.csv"] {
            assert!(
                paths
                    .iter()
                    .any(|p| p.starts_with("(ambiguous)") && p.ends_with(named)),
                "{named}: {paths:?}"
            );
        }
    } else {
        assert!(paths.contains(&"/tmp/q, 0x1 /rel.txt"), "{paths:?}");
        assert!(paths.contains(&"/data/sales.csv"), "{paths:?}");
    }
}

/// gVisor's log is read without loss: an open whose path holds ` errno=`
/// or a mode with extra bits is listed, a path through a link of the
/// code's and `..` is listed as given (never a library read), and every
/// change to the file system without an open is listed.
#[tokio::test]
async fn gvisors_log_reads_without_loss() {
    if !under_runsc() {
        return;
    }
    let code = r#"
import os
d = "/tmp/e errno=2 (no such file or directory)"
os.mkdir(d)
open(d + "/f.txt", "w").write("x")
os.close(os.open("/tmp/m", os.O_CREAT | os.O_WRONLY, 0o4755))
os.makedirs("/tmp/t/usr/lib/python3.11")
os.makedirs("/tmp/t/q/r")
os.symlink("/etc/passwd", "/tmp/t/usr/lib/python3.11/p")
os.symlink("/data/sales.csv", "/tmp/t/usr/lib/python3.11/s")
os.symlink("/tmp/t/q/r", "/tmp/l")
a = open("/tmp/l/../../usr/lib/python3.11/p").read()
b = open("/tmp/l/../../usr/lib/python3.11/s").read()
open("/tmp/f1", "w").write("abc")
os.rename("/tmp/f1", "/tmp/f2")
os.link("/tmp/f2", "/tmp/f3")
os.symlink("/tmp/f2", "/tmp/f4")
os.unlink("/tmp/f3")
os.truncate("/tmp/f2", 1)
os.utime("/tmp/f2", (1, 2))
os.mkdir("/tmp/d1")
os.mknod("/tmp/fifo", 0o10644)
print(len(a) > 0, b.count("\n"))
"#;
    let o = run(code, RuntimeRules::default(), sales()).await;
    assert_eq!(o.status, RunStatus::Ok, "{o:?}");
    assert_eq!(o.stdout.trim(), "True 3", "{o:?}");
    let k = opens_record(&o);
    let files: Vec<String> = k
        .files
        .iter()
        .map(|f| format!("{} {} {}", f.path, f.mode, f.result))
        .collect();
    for want in [
        "/tmp/e errno=2 (no such file or directory)/f.txt w+create ok",
        "/tmp/m w+create ok",
        "(unresolved) /tmp/l/../../usr/lib/python3.11/p r ok",
        "(unresolved) /tmp/l/../../usr/lib/python3.11/s r ok",
    ] {
        assert!(files.iter().any(|f| f == want), "{want}: {files:?}");
    }
    let changes: Vec<String> = k.changes.iter().map(|c| c.line()).collect();
    for want in [
        "mkdir /tmp/e errno=2 (no such file or directory)",
        "symlink /tmp/l → /tmp/t/q/r",
        "rename /tmp/f1 → /tmp/f2",
        "link /tmp/f2 → /tmp/f3",
        "symlink /tmp/f4 → /tmp/f2",
        "unlink /tmp/f3",
        "truncate /tmp/f2",
        "utimensat /tmp/f2",
        "mkdir /tmp/d1",
        "mknodat /tmp/fifo",
    ] {
        assert!(changes.iter().any(|c| c == want), "{want}: {changes:?}");
    }
    assert_eq!(
        o.sources.get("audit.kernel.changes"),
        Some(&Source::SandboxKernelObserved)
    );
    assert!(!k.truncated, "{k:?}");
}

/// A flood of opens cannot fill the host's disk with gVisor's log: past
/// its cap the run is stopped before the flood ends and ends `tampered`,
/// saying why, and the log never grows far past the cap.
#[tokio::test]
async fn a_flood_of_calls_stops_at_the_logs_cap() {
    if !under_runsc() {
        return;
    }
    let dir = std::path::PathBuf::from("/var/log/compute-bot/runsc");
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    // The largest Sentry log in the directory while the run goes on.
    let watcher = {
        let (dir, done) = (dir.clone(), done.clone());
        std::thread::spawn(move || {
            let mut largest = 0u64;
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                    if let Ok(m) = e.metadata() {
                        largest = largest.max(m.len());
                    }
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            largest
        })
    };
    // The flood would go on for 100 s (the deadline is 120 s): only the
    // log's cap stops it sooner.
    let code = r#"
import os, time
end = time.time() + 100
i = 0
while time.time() < end:
    for _ in range(1000):
        try:
            os.close(os.open("/tmp/nx%d" % i, os.O_RDONLY))
        except OSError:
            pass
        i += 1
print(i)
"#;
    let started = std::time::Instant::now();
    let o = run(code, RuntimeRules::default(), vec![]).await;
    let took = started.elapsed();
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let largest = watcher.join().unwrap();
    assert_eq!(
        o.status,
        RunStatus::Tampered,
        "{:?} {:?}",
        o.status,
        o.notes
    );
    assert!(
        o.tampered.iter().any(|t| t.contains("passed its cap")),
        "{:?}",
        o.tampered
    );
    assert!(
        o.stdout.trim().is_empty(),
        "the flood ran to its end: {}",
        o.stdout
    );
    let cap = compute_bot::sandbox::LOG_CAP;
    assert!(
        largest <= cap + (32 << 20),
        "the log grew to {} MiB (cap {} MiB)",
        largest >> 20,
        cap >> 20
    );
    eprintln!(
        "flood stopped after {took:?}; largest log {} MiB",
        largest >> 20
    );
}
