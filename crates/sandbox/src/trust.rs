//! Who saw each fact of a run, and so whether the code could have changed it.
//!
//! The code runs as the container's only untrusted process. What its own
//! interpreter reports (Python audit hooks, PEP 578) lives in that process,
//! so the code can blind, bypass or write it: it is shown, and named as the
//! interpreter's word. What the kernel refuses (the second seccomp stage),
//! what it hands to the runner (pid 1, non-dumpable, another process) at a
//! system call, what the runner reads from `wait4` and the container's
//! cgroup, and what the engine and the bot see from outside are out of the
//! code's reach; the answer names which of them each fact comes from.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Where a fact in the answer comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// The kernel refuses it, whatever the code does (seccomp filters,
    /// cgroup limits, mounts, namespaces).
    KernelEnforced,
    /// The kernel stopped the system call and handed it to the runner
    /// (seccomp user notification), or told the runner at the code's exit
    /// (`wait4`, the cgroup): seen outside the code's process.
    KernelObserved,
    /// The engine or the bot, from outside the container.
    EngineObserved,
    /// gVisor's sandbox kernel, from outside the code's reach.
    SandboxKernelObserved,
    /// The code's own interpreter (audit hooks in its process): the code can
    /// change it, so it is a claim, not a record.
    Interpreter,
}

impl Source {
    /// The words the answer uses for it.
    pub fn label(self) -> &'static str {
        match self {
            Source::KernelEnforced => "enforced by the kernel",
            Source::KernelObserved => "seen by the kernel",
            Source::EngineObserved => "seen by the engine",
            Source::SandboxKernelObserved => "seen by gVisor's kernel",
            Source::Interpreter => "reported by the code's interpreter",
        }
    }
}

/// How the runner's second seccomp stage held while the code ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Supervision {
    /// Program and process starts refused by the kernel, and every file
    /// open, socket, connect, bind and change without an open handed to the
    /// runner (runc: seccomp user notification).
    Notify,
    /// Program and process starts refused by the kernel; no user
    /// notification here (gVisor implements none), so opens are not seen
    /// outside the code's process.
    Errno,
    /// No second stage (a record from before it existed).
    #[default]
    None,
}

/// A file open the kernel handed to the runner, which carried it out and
/// handed over the descriptor: the path is the one opened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelOpen {
    /// The file opened (after symlinks and `/proc/self`), or the path asked
    /// for when the open failed.
    pub path: String,
    /// The path as the code gave it, when it differs from `path`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asked: Option<String>,
    /// `r`, `w` or `rw`, with `+create` for `O_CREAT`.
    pub mode: String,
    /// `ok`, or the error the open got (`ENOENT`, `EACCES`, ...).
    pub result: String,
    /// True when the runtime file rules refused it (not the file's own
    /// permissions).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub denied: bool,
}

/// A program or process start the kernel refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StartAttempt {
    /// `execve`, `execveat`, `fork`, `vfork` or `clone`.
    pub call: String,
    /// The program, for `execve`/`execveat` (as read at the call).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Its first arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub argv: Vec<String>,
    /// The clone flags, for `clone`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flags: Option<String>,
}

impl StartAttempt {
    /// One line: `execve /bin/sh [sh -c id]`, `fork`.
    pub fn line(&self) -> String {
        match (&self.path, self.call.as_str()) {
            (Some(p), call) if self.argv.is_empty() => format!("{call} {p}"),
            (Some(p), call) => format!("{call} {p} [{}]", self.argv.join(" ")),
            (None, "clone") => "fork (clone without CLONE_THREAD)".into(),
            (None, call) => call.to_string(),
        }
    }
}

/// A socket call the kernel handed to the runner.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SocketCall {
    /// `socket`, `connect` or `bind`.
    pub call: String,
    /// The family, and for a Unix socket its path.
    pub target: String,
    /// True when the runtime network rule refused it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub denied: bool,
    /// What the call returned (`ok`, `EHOSTUNREACH`, ...), when the record
    /// saw its end (gVisor's log does; the runner refuses every connect and
    /// bind, `EACCES`, and lets a socket call go on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
}

/// A change to the file system without an open (rename, link, symlink,
/// unlink, rmdir, mkdir, mknod, truncate, utime and their `*at` forms):
/// under runc carried out by the runner on the paths it resolved, so the
/// paths are the ones changed; refused outside `/tmp` and `/out`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileChange {
    /// The system call as the code made it (`renameat2`, `unlinkat`, ...).
    pub call: String,
    /// The path changed (its folder resolved, its last name as given): the
    /// old name of a rename or link, the link of a symlink.
    pub path: String,
    /// The second path: the new name of a rename or link, the target text
    /// of a symlink (stored as given, never followed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    /// `ok`, or the error the call got (`ENOENT`, `EACCES`, ...).
    pub result: String,
    /// True when the runner refused it (outside `/tmp` and `/out`, or an
    /// input under `/data`), not the file system.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub denied: bool,
}

impl FileChange {
    /// One line: `renameat2 /tmp/a → /tmp/b`, `unlink /data/x refused`.
    pub fn line(&self) -> String {
        let mut t = format!("{} {}", self.call, self.path);
        if let Some(to) = &self.to {
            t.push_str(" → ");
            t.push_str(to);
        }
        if self.denied {
            t.push_str(" refused");
        } else if self.result != "ok" {
            t.push(' ');
            t.push_str(&self.result);
        }
        t
    }
}

/// The paths whose plain reads are the image's own libraries: counted in
/// [`KernelRecord::library_reads`], not listed. The one list: the runner
/// gets it in the job's header, gVisor's log is read with it.
pub const LIBRARY_PATHS: &[&str] = &[
    "/usr/",
    "/opt/compute-bot/",
    "/etc/ld.so.cache",
    "/etc/localtime",
    "/etc/matplotlibrc",
];

/// Who recorded [`KernelRecord::files`] and [`KernelRecord::sockets`],
/// outside the code's process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Witness {
    /// The runner (pid 1), to which the kernel handed each call (runc:
    /// seccomp user notification).
    Runner,
    /// gVisor's kernel (the Sentry), in its strace log, read by the bot
    /// outside the sandbox after the run.
    Sentry,
}

/// What the kernel saw of the code's process while it ran, as the runner
/// (pid 1, outside the code's reach) recorded it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct KernelRecord {
    /// How the second stage held.
    pub mode: Supervision,
    /// Files opened outside the image's libraries, in order, each once.
    pub files: Vec<KernelOpen>,
    /// Reads of the image's own files (`/usr`, `/opt/compute-bot`, the
    /// loader cache): counted, not listed.
    pub library_reads: u64,
    /// Program and process starts, every one refused.
    #[serde(rename = "execs")]
    pub starts: Vec<StartAttempt>,
    /// Sockets, connects and binds.
    pub sockets: Vec<SocketCall>,
    /// Changes to the file system without an open, in order.
    pub changes: Vec<FileChange>,
    /// True when more happened than was kept.
    pub truncated: bool,
    /// Who recorded the files and sockets; unset in the runner's own record
    /// (then [`Supervision::Notify`] means the runner).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub witness: Option<Witness>,
}

impl KernelRecord {
    /// Who saw the file opens and socket calls outside the code's process,
    /// `None` when nobody did.
    pub fn witness(&self) -> Option<Witness> {
        self.witness
            .or((self.mode == Supervision::Notify).then_some(Witness::Runner))
    }

    /// True when the file opens were seen outside the code's process.
    pub fn sees_opens(&self) -> bool {
        self.witness().is_some()
    }

    /// True when program and process starts were refused by the kernel.
    pub fn refuses_starts(&self) -> bool {
        matches!(self.mode, Supervision::Notify | Supervision::Errno)
    }
}

/// Who saw each fact of an outcome, by its JSON field (`exit_code`,
/// `resources.peak_memory_bytes`, `audit.kernel.files`, `audit.imports`, ...):
/// the one table the JSON output and the run record carry. `reported`: the
/// runner's report came (else the engine's and the bot's findings stand).
pub fn sources(kernel: Option<&KernelRecord>, reported: bool) -> BTreeMap<String, Source> {
    let mut m = BTreeMap::new();
    let run = if reported {
        Source::KernelObserved
    } else {
        Source::EngineObserved
    };
    for field in [
        "exit_code",
        "signal",
        "duration_ms",
        "resources.peak_memory_bytes",
        "resources.cpu_time_ms",
        "resources.container",
    ] {
        m.insert(field.to_string(), run);
    }
    for field in ["status", "image", "collected_ms"] {
        m.insert(field.to_string(), Source::EngineObserved);
    }
    m.insert("limits".into(), Source::KernelEnforced);
    m.insert("seccomp".into(), Source::KernelEnforced);
    m.insert("network".into(), Source::KernelEnforced);
    kernel_sources(&mut m, kernel);
    for field in [
        "audit.files_opened",
        "audit.network_attempts",
        "audit.subprocess_attempts",
        "audit.imports",
        "audit.refused",
        "audit.preloaded",
        "audit.preload_skipped",
    ] {
        m.insert(field.to_string(), Source::Interpreter);
    }
    m
}

/// The `audit.kernel.*` entries of [`sources`] for `kernel`, replacing any
/// there (the bot adds gVisor's record after the runner's report).
pub(crate) fn kernel_sources(m: &mut BTreeMap<String, Source>, kernel: Option<&KernelRecord>) {
    m.retain(|field, _| !field.starts_with("audit.kernel."));
    let Some(k) = kernel else { return };
    if k.refuses_starts() {
        m.insert("audit.kernel.execs".into(), Source::KernelEnforced);
    }
    let seen = match k.witness() {
        Some(Witness::Runner) => Source::KernelObserved,
        Some(Witness::Sentry) => Source::SandboxKernelObserved,
        None => return,
    };
    m.insert("audit.kernel.files".into(), seen);
    m.insert("audit.kernel.sockets".into(), seen);
    m.insert("audit.kernel.changes".into(), seen);
}

/// The container's cgroup as the kernel kept it, read by the runner after
/// the code ended: everything in the container (the runner, the preload and
/// the code).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct CgroupFacts {
    /// The cgroup's peak memory (bytes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peak_memory_bytes: Option<u64>,
    /// The cgroup's CPU time (milliseconds).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_time_ms: Option<u64>,
    /// The cgroup's CPU quota while the runner started and modules loaded,
    /// read by the runner when it started.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_before_code: Option<CpuQuota>,
    /// The cgroup's CPU quota the code started under, read by the runner
    /// (pid 1, out of the code's reach) just before it let the code start.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_at_code_start: Option<CpuQuota>,
}

/// A cgroup's CPU bandwidth limit (`cpu.max`, or v1's `cpu.cfs_quota_us`
/// and `cpu.cfs_period_us`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuQuota {
    /// Microseconds of CPU per period; `None`: no limit (`max`, `-1`).
    pub quota: Option<u64>,
    /// The period in microseconds.
    pub period: u64,
}

impl CpuQuota {
    /// The limit in cores; `None` when there is none.
    pub fn cores(&self) -> Option<f64> {
        self.quota
            .filter(|_| self.period > 0)
            .map(|q| q as f64 / self.period as f64)
    }

    /// In words: "1 CPU", "0.5 CPU", "every host CPU".
    pub fn words(&self) -> String {
        match self.cores() {
            Some(c) => format!("{} CPU", (c * 100.0).round() / 100.0),
            None => "every host CPU".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_from_the_runner_reads_with_its_wire_names() {
        let r: KernelRecord = serde_json::from_value(serde_json::json!({
            "mode": "notify",
            "files": [{"path": "/etc/passwd", "asked": "/proc/self/root/etc/passwd",
                       "mode": "r", "result": "EACCES", "denied": true}],
            "library_reads": 12,
            "execs": [{"call": "execve", "path": "/bin/sh", "argv": ["sh", "-c", "id"]},
                      {"call": "clone", "flags": "0x4111"}],
            "sockets": [],
            "truncated": false
        }))
        .unwrap();
        assert!(r.sees_opens() && r.refuses_starts());
        assert_eq!(
            r.files[0].asked.as_deref(),
            Some("/proc/self/root/etc/passwd")
        );
        assert_eq!(r.starts[0].line(), "execve /bin/sh [sh -c id]");
        assert_eq!(r.starts[1].line(), "fork (clone without CLONE_THREAD)");
        // A record from before the second stage: nothing claimed.
        let old: KernelRecord = serde_json::from_value(serde_json::json!({})).unwrap();
        assert!(!old.sees_opens() && !old.refuses_starts());
    }

    #[test]
    fn each_field_names_who_saw_it() {
        let k = KernelRecord {
            mode: Supervision::Notify,
            ..KernelRecord::default()
        };
        let m = sources(Some(&k), true);
        assert_eq!(m["audit.kernel.files"], Source::KernelObserved);
        assert_eq!(m["audit.kernel.execs"], Source::KernelEnforced);
        assert_eq!(m["audit.files_opened"], Source::Interpreter);
        assert_eq!(m["exit_code"], Source::KernelObserved);
        // gVisor: starts refused, opens not seen by the kernel.
        let k = KernelRecord {
            mode: Supervision::Errno,
            ..KernelRecord::default()
        };
        let mut m = sources(Some(&k), true);
        assert!(!m.contains_key("audit.kernel.files"));
        assert_eq!(m["audit.kernel.execs"], Source::KernelEnforced);
        // ... and gVisor's own log, read by the bot, added after the report.
        let k = KernelRecord {
            witness: Some(Witness::Sentry),
            ..k
        };
        kernel_sources(&mut m, Some(&k));
        assert_eq!(m["audit.kernel.files"], Source::SandboxKernelObserved);
        assert_eq!(m["audit.kernel.sockets"], Source::SandboxKernelObserved);
        assert_eq!(m["audit.kernel.execs"], Source::KernelEnforced);
        assert_eq!(m["exit_code"], Source::KernelObserved);
        // No report (a timeout, a kill): the engine's and the bot's findings.
        let m = sources(None, false);
        assert_eq!(m["exit_code"], Source::EngineObserved);
        assert!(!m.contains_key("audit.kernel.execs"));
        let json = serde_json::to_value(&m).unwrap();
        assert_eq!(json["audit.imports"], "interpreter");
    }
}
