//! gVisor's own record of what the code did: the file opens and socket
//! calls its kernel (the Sentry) carried out for the code's process, read
//! by the bot from the Sentry's strace log after the run (in a session,
//! after each step: see [below](#a-sessions-steps)).
//!
//! gVisor has no seccomp user notification, so under runsc the runner sees
//! no open. But the Sentry implements every system call itself, outside the
//! code's reach, and with `--strace` it logs each one it is told to, with
//! its arguments and result, for Python and native code alike. A runtime
//! registered with the engine with that log on (`scripts/install-gvisor`
//! registers [`RECORD_RUNTIME`]) is found in the engine's runtimes
//! ([`LogRuntime::find`]); the bot then runs the container under it and
//! reads the log on this machine ([`read`]).
//!
//! What the code controls in the log, and how each is read:
//! - line breaks: none, the log is JSON (`--debug-log-format=json`), one
//!   object per line, so a path cannot start a line of its own;
//! - the task's name (up to 15 bytes, `prctl(PR_SET_NAME)`): the system
//!   call starts within 16 bytes of the Sentry's `[pid:tid]` prefix, at the
//!   last such position from which the whole line parses with the Sentry's
//!   own formats ([`syscall_exit`](line::syscall_exit));
//! - paths and directory names: read from the right, where the Sentry's
//!   fixed formats (flags, mode, result) end the line; a path that could be
//!   split more than one way is listed whole, marked, not guessed.
//!
//! The code's process is the one that installs the runner's second seccomp
//! stage (its first successful `seccomp` call, pid other than 1): only its
//! calls after that, the code's own, go into the record.
//!
//! ## A session's steps
//!
//! A session runs its steps in one container, so its Sentry writes one log;
//! each step's record is that log's lines from the step before's boundary
//! to its own ([`LogReader`]). A boundary is a byte offset: the log's size
//! once the bot has the step's report, before the container is frozen. Why
//! offsets and not the lines' times: the offset needs no clock (the
//! Sentry's times are its own, to the microsecond, and compared with the
//! bot's they would tie at the edges) and no parse, and it cuts where the
//! record of the step is known to be whole: the Sentry writes each exit line
//! to the file (one `write`, no buffer) before the call returns to the
//! code, so every call the step's code finished is in the file before its
//! interpreter writes the step's end, and that comes before the runner's
//! report, which the bot has before it looks at the size. The runner under
//! runc cuts at the same point (its record of a step is taken at the step's
//! end), so both runtimes attribute alike: a call a thread of the code's
//! left running returns after the report (until the container is frozen)
//! belongs to the next step, and what returns after the last step's report
//! is noted on that step, not listed. A line still being written at a
//! boundary is not read until it is whole, in the next step. The runner
//! between steps (reading the next step, writing frames) is pid 1, whose
//! calls are never the code's, as in a single run; the code's process is
//! found once, in step 1, and holds for the session.

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use super::trust::{
    FileChange, KernelOpen, KernelRecord, LIBRARY_PATHS, SocketCall, Supervision, Witness,
};
use super::types::Outcome;

mod line;
use line::{Exit, Split};

/// The name `scripts/install-gvisor` registers the recording runtime under.
pub const RECORD_RUNTIME: &str = "runsc-audit";

/// The system calls the record needs the Sentry to log: opens, sockets,
/// the runner's second stage, program starts, and every call that changes
/// the file system without an open.
pub const TRACED: &[&str] = &[
    "open",
    "openat",
    "creat",
    "socket",
    "connect",
    "bind",
    "seccomp",
    "execve",
    "execveat",
    "rename",
    "renameat",
    "renameat2",
    "link",
    "linkat",
    "symlink",
    "symlinkat",
    "unlink",
    "unlinkat",
    "rmdir",
    "truncate",
    "ftruncate",
    "utime",
    "utimes",
    "utimensat",
    "futimesat",
    "mkdir",
    "mkdirat",
    "mknod",
    "mknodat",
    "chmod",
    "fchmod",
    "fchmodat",
    "chown",
    "fchown",
    "lchown",
    "fchownat",
];

/// The most a run's log may grow to while the code runs: past it the run
/// is stopped (the container killed) and ends `tampered`, so a flood of
/// calls cannot fill the host's disk (a pandas and DuckDB run's log is
/// about 0.5 MB; a flood of opens writes some 45 MB a second).
pub const LOG_CAP: u64 = 64 << 20;

/// How often the log's size is looked at while the code runs.
pub(crate) const LOG_WATCH_EVERY: std::time::Duration = std::time::Duration::from_millis(100);

/// The most of a log the bot reads: the cap and what the Sentry writes
/// while the run is stopped; past it the record says it is cut.
const MAX_LOG_BYTES: u64 = 2 * LOG_CAP;

/// A log older than this is of a container long gone (a run's time limit
/// and a prepared container's idle wait are far shorter): removed by the
/// next run that reads the directory (one whose bot died left it).
const STALE: std::time::Duration = std::time::Duration::from_secs(3600);

/// The most files of one kind ([`file_kind`]), changes and socket calls
/// listed (as the runner keeps).
const MAX_ITEMS: usize = 200;

/// The most files of one kind under `/data` and `/out` listed.
const MAX_ITEMS_IO: usize = 1000;

/// The kind a file's cap counts in: its top folder (one of the image's
/// root folders, else `?`, so names the code makes up are one kind) and
/// how the open ended.
fn file_kind(open: &KernelOpen) -> (&'static str, &'static str) {
    const TOPS: [&str; 20] = [
        "data", "out", "tmp", "etc", "usr", "proc", "sys", "dev", "opt", "lib", "lib64", "bin",
        "sbin", "var", "home", "root", "run", "srv", "mnt", "media",
    ];
    let top = open
        .path
        .strip_prefix('/')
        .and_then(|p| p.split('/').next())
        .and_then(|t| TOPS.iter().find(|k| **k == t).copied())
        .unwrap_or("?");
    let end = if open.denied {
        "denied"
    } else if open.result == "ok" {
        "ok"
    } else {
        "failed"
    };
    (top, end)
}

/// A runtime the engine offers that runs gVisor with its strace log on, in
/// a directory of this machine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogRuntime {
    /// The name the engine knows it by.
    pub name: String,
    /// Where the Sentry writes its log (`--debug-log=DIR/`).
    pub dir: PathBuf,
}

impl LogRuntime {
    /// The first runtime, by name, whose program is runsc and whose
    /// arguments log every call of [`TRACED`] as JSON into a directory, for
    /// the `boot` command (the Sentry). `runtimes`: name, program, arguments.
    pub fn find<'a>(
        runtimes: impl IntoIterator<Item = (&'a str, &'a str, &'a [String])>,
    ) -> Option<LogRuntime> {
        let mut found: Vec<LogRuntime> = runtimes
            .into_iter()
            .filter(|(_, path, _)| Path::new(path).file_name().is_some_and(|n| n == "runsc"))
            .filter_map(|(name, _, args)| {
                Some(LogRuntime {
                    name: name.to_string(),
                    dir: log_dir(args)?,
                })
            })
            .collect();
        found.sort_by(|a, b| a.name.cmp(&b.name));
        found.into_iter().next()
    }

    /// Why the bot cannot read this runtime's log from here, if it cannot:
    /// the engine on another machine, or the directory not readable.
    pub fn unusable_from_here(&self, engine_address: &str) -> Option<String> {
        if !super::host::on_this_machine(engine_address) {
            return Some(format!(
                "the engine at {engine_address} is not on this machine, so its log directory {} is not here to read",
                self.dir.display()
            ));
        }
        match std::fs::read_dir(&self.dir) {
            Ok(_) => None,
            Err(e) => Some(format!(
                "its log directory {} cannot be read here ({e}); run scripts/install-gvisor as root, or add this user to the group that owns it",
                self.dir.display()
            )),
        }
    }
}

/// The log directory when `args` log every [`TRACED`] call as JSON.
fn log_dir(args: &[String]) -> Option<PathBuf> {
    let mut opts: HashMap<&str, &str> = HashMap::new();
    let mut i = 0;
    while i < args.len() {
        let a = args[i].trim_start_matches('-');
        if let Some((k, v)) = a.split_once('=') {
            opts.insert(k, v);
        } else if a == "strace" {
            opts.insert(a, "true");
        } else if let Some(v) = args.get(i + 1).filter(|v| !v.starts_with('-')) {
            opts.insert(a, v);
            i += 1;
        } else {
            opts.insert(a, "true");
        }
        i += 1;
    }
    if opts.get("strace").copied() != Some("true")
        || opts.get("debug-log-format").copied() != Some("json")
    {
        return None;
    }
    if let Some(list) = opts.get("strace-syscalls").filter(|l| !l.is_empty()) {
        let names: HashSet<&str> = list.split(',').map(str::trim).collect();
        if !TRACED.iter().all(|t| names.contains(t)) {
            return None;
        }
    }
    if let Some(cmds) = opts.get("debug-command").filter(|c| !c.is_empty())
        && (cmds.contains('!') || !cmds.split(',').any(|c| c.trim() == "boot"))
    {
        return None;
    }
    let dir = opts.get("debug-log")?;
    (dir.starts_with('/') && dir.ends_with('/') && !dir.contains('%')).then(|| PathBuf::from(dir))
}

/// What gVisor's log holds of the code's own calls.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SentryRecord {
    /// The code's process installed the second stage (the code started).
    pub started: bool,
    /// Files opened outside the image's libraries, each once, in order.
    pub files: Vec<KernelOpen>,
    /// Plain reads (tried) of the image's own files.
    pub library_reads: u64,
    /// socket, connect and bind calls.
    pub sockets: Vec<SocketCall>,
    /// Changes to the file system without an open.
    pub changes: Vec<FileChange>,
    /// More happened than was kept (or read).
    pub truncated: bool,
    /// Exit lines of the code's process that did not read as the Sentry's
    /// (each listed whole among the files).
    pub unread: u64,
    /// Texts whose names could not be split out (unread lines, arguments
    /// with too many `, `), for the interpreter check.
    raw: Vec<String>,
    /// Every path opened, asked and resolved, each way an ambiguous one
    /// splits (for the interpreter check: "never carried out" is said only
    /// of a path no open may have named).
    paths: HashSet<String>,
}

/// Finds the log of container `id` in `dir` (a file the Sentry began at or
/// after `since`), reads the code's record from it and removes it: a run
/// whose container has stopped.
pub fn read(dir: &Path, id: &str, since: SystemTime) -> Result<SentryRecord, String> {
    let mut reader = LogReader::default();
    let rec = reader.next(dir, id, since, Upto::End)?;
    reader.remove();
    Ok(rec)
}

/// How far [`LogReader::next`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Upto {
    /// To the log's size now, whole lines only: a step's boundary, the
    /// container still running (a line still being written waits for the
    /// next read).
    Now,
    /// To the log's end: the container has stopped, its Sentry is gone and
    /// wrote its last line (a cut one is kept, as `(unread)`).
    End,
}

/// gVisor's log of one container, read a stretch at a time: a session's
/// steps, each its own record (see the module's docs). What it keeps
/// between reads: where the log is, where the first line not yet read
/// starts, and the code's process.
#[derive(Default)]
pub struct LogReader {
    path: Option<PathBuf>,
    /// The offset of the first byte not yet read.
    pos: u64,
    parser: Parser,
}

impl LogReader {
    /// The record of the code's calls the log of container `id` in `dir`
    /// holds from the last read's end to `upto` (from its start the first
    /// time). A log past [`MAX_LOG_BYTES`] is read to there, and each
    /// record with lines beyond says it is cut.
    pub fn next(
        &mut self,
        dir: &Path,
        id: &str,
        since: SystemTime,
        upto: Upto,
    ) -> Result<SentryRecord, String> {
        let started = std::time::Instant::now();
        let path = match &self.path {
            Some(p) => p.clone(),
            None => {
                remove_stale(dir);
                let p = find_log(dir, id, since)?;
                self.path = Some(p.clone());
                p
            }
        };
        let mut file = std::fs::File::open(&path)
            .map_err(|e| format!("gVisor's log {} could not be opened: {e}", path.display()))?;
        let size = file
            .metadata()
            .map_err(|e| format!("gVisor's log {} could not be read: {e}", path.display()))?
            .len();
        let from = self.pos;
        self.read_range(&mut file, size, upto)
            .map_err(|e| format!("gVisor's log {} could not be read: {e}", path.display()))?;
        let mut rec = self.parser.take();
        rec.truncated |= size > MAX_LOG_BYTES;
        tracing::debug!(
            from,
            to = self.pos,
            ms = started.elapsed().as_millis() as u64,
            files = rec.files.len(),
            "gVisor's log read"
        );
        Ok(rec)
    }

    /// Feeds the lines from `pos` to `size` (at most [`MAX_LOG_BYTES`]) to
    /// the parser; `pos` moves past each line read.
    fn read_range(
        &mut self,
        file: &mut std::fs::File,
        size: u64,
        upto: Upto,
    ) -> std::io::Result<()> {
        use std::io::{Seek, SeekFrom};
        let end = size.min(MAX_LOG_BYTES);
        if end <= self.pos {
            return Ok(());
        }
        file.seek(SeekFrom::Start(self.pos))?;
        let mut reader = BufReader::new(file.take(end - self.pos));
        let mut line = Vec::new();
        loop {
            line.clear();
            let n = reader.read_until(b'\n', &mut line)?;
            if n == 0 || (upto == Upto::Now && line.last() != Some(&b'\n')) {
                return Ok(());
            }
            self.pos += n as u64;
            self.parser.json_line(&line);
        }
    }

    /// Removes the log (once read to its end).
    pub fn remove(&self) {
        if let Some(path) = &self.path
            && let Err(e) = std::fs::remove_file(path)
        {
            tracing::warn!(log = %path.display(), error = %e, "gVisor's log of the run stays on disk");
        }
    }
}

/// The size of container `id`'s log now (`None` until the Sentry began
/// it); `path` keeps where it was found between calls.
pub fn log_size(
    dir: &Path,
    id: &str,
    since: SystemTime,
    path: &mut Option<PathBuf>,
) -> Option<u64> {
    if path.is_none() {
        *path = find_log(dir, id, since).ok();
    }
    std::fs::metadata(path.as_ref()?).ok().map(|m| m.len())
}

/// Why a run whose log passed [`LOG_CAP`] (at `size` bytes) was stopped.
pub fn over_cap(size: u64) -> String {
    format!(
        "gVisor's log of the code's calls passed its cap of {} MiB ({} MiB when looked at): the run was stopped (the container killed) so the host's disk does not fill, and its record of the code's calls cannot be whole",
        LOG_CAP >> 20,
        size >> 20
    )
}

/// Removes the log of container `id` unread (a container discarded before
/// any code ran in it).
pub fn discard(dir: &Path, id: &str, since: SystemTime) {
    remove_stale(dir);
    if let Ok(path) = find_log(dir, id, since)
        && let Err(e) = std::fs::remove_file(&path)
    {
        tracing::warn!(log = %path.display(), error = %e, "gVisor's log of a discarded container stays on disk");
    }
}

/// Removes the Sentry's logs in `dir` older than [`STALE`].
fn remove_stale(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let now = SystemTime::now();
    for entry in entries.flatten() {
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .is_ok_and(|t| now.duration_since(t).is_ok_and(|age| age > STALE));
        if old
            && entry
                .file_name()
                .to_string_lossy()
                .starts_with("runsc.log.")
        {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// The Sentry's log file of container `id`: a `runsc.log.*boot*` file
/// begun since `since` whose first `Args:` line names the container.
fn find_log(dir: &Path, id: &str, since: SystemTime) -> Result<PathBuf, String> {
    let entries = std::fs::read_dir(dir).map_err(|e| {
        format!(
            "gVisor's log directory {} cannot be read: {e}",
            dir.display()
        )
    })?;
    let since = since - std::time::Duration::from_secs(2);
    let tail = format!(" {id}]");
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if !name.starts_with("runsc.log.") || !name.contains("boot") {
            continue;
        }
        let recent = entry
            .metadata()
            .and_then(|m| m.modified())
            .is_ok_and(|t| t >= since);
        if !recent {
            continue;
        }
        let Ok(f) = std::fs::File::open(entry.path()) else {
            continue;
        };
        let names_it = BufReader::new(f.take(64 << 10))
            .lines()
            .take(16)
            .map_while(Result::ok)
            .filter_map(|l| message(l.as_bytes()))
            .any(|m| m.starts_with("Args: [") && m.ends_with(&tail));
        if names_it {
            return Ok(entry.path());
        }
    }
    Err(format!(
        "gVisor's log of container {} is not in {}",
        &id[..id.len().min(12)],
        dir.display()
    ))
}

/// The `msg` of one JSON log line.
fn message(line: &[u8]) -> Option<String> {
    #[derive(Deserialize)]
    struct Line {
        msg: String,
    }
    serde_json::from_slice::<Line>(line).ok().map(|l| l.msg)
}

/// Reads the log line by line, keeping the code's process's calls.
#[derive(Default)]
struct Parser {
    code_pid: Option<u32>,
    rec: SentryRecord,
    seen: HashSet<(String, String, String)>,
    /// Files kept so far per kind ([`file_kind`]), each kind up to its cap.
    kinds: std::collections::HashMap<(&'static str, &'static str), usize>,
}

impl Parser {
    /// The record so far, and a fresh one for what follows (a session's
    /// next step): each step's caps and files are its own; the code's
    /// process stays.
    fn take(&mut self) -> SentryRecord {
        self.seen.clear();
        self.kinds.clear();
        let started = self.rec.started;
        let rec = std::mem::take(&mut self.rec);
        self.rec.started = started;
        rec
    }

    fn json_line(&mut self, line: &[u8]) {
        // Only exit lines are read; the others (entries, the Sentry's own
        // messages) are most of the log and are skipped undecoded.
        if !line.windows(3).any(|w| w == b" X ") {
            return;
        }
        match message(line) {
            Some(m) => self.line(&m),
            // The Sentry writes every line whole, as JSON: one that is not
            // (cut where the log was cut) is kept as it is.
            None if self.code_pid.is_some() => self.unread(&String::from_utf8_lossy(line)),
            None => {}
        }
    }

    fn line(&mut self, msg: &str) {
        let Some((pid, tid, rest)) = line::task_prefix(msg) else {
            return;
        };
        let call = line::syscall_exit(rest);
        match (self.code_pid, call) {
            (None, Some(call))
                if pid != 1
                    && call.name == "seccomp"
                    && call.ok()
                    && call.args.starts_with("0x1, 0x1,") =>
            {
                self.code_pid = Some(pid);
                self.rec.started = true;
            }
            (Some(code), Some(call)) if code == pid => self.code_call(pid, tid, &call),
            // An exit line of the code's that does not read as the
            // Sentry's: never dropped, kept as it is.
            (Some(code), None) if code == pid && line::is_exit(rest) => self.unread(rest),
            _ => {}
        }
    }

    /// A line of the code's the parser cannot read: listed whole, and the
    /// record is incomplete.
    fn unread(&mut self, text: &str) {
        self.rec.unread += 1;
        self.keep_raw(text);
        self.keep_file(KernelOpen {
            path: format!("(unread) {}", shorten(text.trim())),
            asked: None,
            mode: "?".into(),
            result: "?".into(),
            denied: false,
        });
    }

    /// Text whose names could not be split out, for the interpreter check.
    fn keep_raw(&mut self, text: &str) {
        if self.rec.raw.len() < MAX_ITEMS {
            self.rec.raw.push(text.chars().take(PATH_MAX).collect());
        }
    }

    fn code_call(&mut self, pid: u32, tid: u32, call: &Exit<'_>) {
        let at = At { pid, tid };
        match call.name {
            "open" | "openat" | "creat" => self.open_call(call, at),
            "socket" | "connect" | "bind" => {
                let mut target = socket_target(call);
                if call.name != "socket" {
                    // The Sentry copied the address at the call's entry;
                    // the call copies it again, after a thread of the
                    // code's may have changed it.
                    target.push_str(" (as given at entry)");
                }
                self.keep_socket(SocketCall {
                    call: call.name.to_string(),
                    target,
                    denied: false,
                    result: Some(call.result()),
                });
            }
            "seccomp" | "execve" | "execveat" => {}
            _ => self.change_call(call, at),
        }
    }

    /// The names of a call whose arguments split more than one way (or
    /// not at all): the whole text, marked; each way's names go to the
    /// interpreter check.
    fn ambiguous(&mut self, call: &Exit<'_>, at: At) -> String {
        match &call.split {
            Split::Many(ways, whole) => {
                for way in ways {
                    for n in names(call.name, way, at).into_iter().flatten() {
                        self.note_path(n.lexical);
                    }
                }
                format!("(ambiguous) {}", shorten(whole))
            }
            Split::Unsplit(whole) | Split::Free(whole) => {
                self.keep_raw(whole);
                format!("(ambiguous) {}", shorten(whole))
            }
            Split::One(_) => unreachable!("one way is not ambiguous"),
        }
    }

    fn open_call(&mut self, call: &Exit<'_>, at: At) {
        let fl = match (&call.split, call.name) {
            (_, "creat") => "O_WRONLY|O_CREAT|O_TRUNC",
            (Split::One(p), _) => p[p.len() - 2],
            (Split::Many(ways, _), _) => ways[0][ways[0].len() - 2],
            _ => "",
        };
        let (path, asked) = match &call.split {
            Split::One(parts) => {
                let n = names(call.name, parts, at)[0]
                    .clone()
                    .expect("an open names a path");
                self.note_path(n.lexical.clone());
                let asked = (n.resolved && n.shown != n.given).then(|| n.given.clone());
                if n.resolved && open_mode(fl) == "r" && library(&n.shown) {
                    self.rec.library_reads += 1;
                    return;
                }
                (n.shown, asked)
            }
            _ => (self.ambiguous(call, at), None),
        };
        let open = KernelOpen {
            path,
            asked,
            mode: open_mode(fl),
            result: call.result(),
            denied: false,
        };
        let key = (open.path.clone(), open.mode.clone(), open.result.clone());
        if self.seen.insert(key) {
            self.keep_file(open);
        }
    }

    fn change_call(&mut self, call: &Exit<'_>, at: At) {
        let (path, to) = match &call.split {
            Split::One(parts) => {
                let [first, second] = names(call.name, parts, at);
                for n in [&first, &second].into_iter().flatten() {
                    self.note_path(n.lexical.clone());
                }
                let to = second.map(|n| n.shown);
                match first {
                    Some(n) => (n.shown, to),
                    None => return,
                }
            }
            _ => (self.ambiguous(call, at), None),
        };
        let change = FileChange {
            call: call.name.to_string(),
            path,
            to,
            result: call.result(),
            denied: false,
        };
        if self.rec.changes.len() < MAX_ITEMS {
            self.rec.changes.push(change);
        } else {
            self.rec.truncated = true;
        }
    }

    fn note_path(&mut self, lexical: Option<String>) {
        if let Some(p) = lexical
            && self.rec.paths.len() < 20_000
        {
            self.rec.paths.insert(p);
        }
    }

    /// Keeps a file up to the cap of its kind, as the runner does under
    /// runc: a flood of one kind (files made in `/tmp`, missing paths)
    /// cannot push a later open of another (`/etc/passwd`, an input) out.
    fn keep_file(&mut self, open: KernelOpen) {
        let kind = file_kind(&open);
        let cap = if matches!(kind.0, "data" | "out") {
            MAX_ITEMS_IO
        } else {
            MAX_ITEMS
        };
        let held = self.kinds.entry(kind).or_default();
        if *held < cap {
            *held += 1;
            self.rec.files.push(open);
        } else {
            self.rec.truncated = true;
        }
    }

    fn keep_socket(&mut self, call: SocketCall) {
        if self.rec.sockets.len() < MAX_ITEMS {
            self.rec.sockets.push(call);
        } else {
            self.rec.truncated = true;
        }
    }
}

/// The longest path the kernel takes (`PATH_MAX`).
const PATH_MAX: usize = 4096;

/// The code's process and thread of a call (for `/proc/self`).
#[derive(Debug, Clone, Copy)]
struct At {
    pid: u32,
    tid: u32,
}

/// `r`, `w` or `rw` of open flags, with `+create` for `O_CREAT`.
fn open_mode(fl: &str) -> String {
    let has = |f: &str| fl.split('|').any(|p| p == f);
    let access = if has("O_RDWR") {
        "rw"
    } else if has("O_WRONLY") {
        "w"
    } else {
        "r"
    };
    format!("{access}{}", if has("O_CREAT") { "+create" } else { "" })
}

/// A read of the image's own libraries.
fn library(path: &str) -> bool {
    LIBRARY_PATHS.iter().any(|p| path.starts_with(p))
}

/// One path of a call, as the record shows it.
#[derive(Debug, Clone)]
struct Named {
    /// The file: by name when the log can tell it, else the path as given,
    /// marked `(unresolved)`.
    shown: String,
    /// True when `shown` is the file the kernel resolved (by name).
    resolved: bool,
    /// The path as the code gave it.
    given: String,
    /// The path by name (`.` and `..` taken as written), for the
    /// interpreter check; `None` when relative to an unknown directory.
    lexical: Option<String>,
}

/// The (up to two) paths a call names, in its arguments `parts` (split
/// by [`line::shape`]): what it opens or changes, and a rename's or
/// link's new name or a symlink's target.
fn names(call: &str, parts: &[&str], at: At) -> [Option<Named>; 2] {
    let fd = |i: usize| parts.get(i).and_then(|d| line::fd_name(d));
    let path = |i: usize| parts.get(i).and_then(|p| line::addr_path(p));
    let at_dir = |d: usize, p: usize| {
        if parts.get(p) == Some(&"<null>") {
            // utimensat on a descriptor: the file is the descriptor's.
            return fd(d).map(fd_file);
        }
        Some(resolve(fd(d), path(p)?, at))
    };
    let plain = |p: usize| path(p).map(|p| resolve(None, p, at));
    // The second directory of renameat/linkat is printed as a number: the
    // first's when it is the same descriptor, the working directory's
    // for AT_FDCWD when the first is AT_FDCWD too.
    let second_dir = |d: usize, n: usize| {
        let first = parts[d];
        let same = line::fd_number(first) == Some(parts[n])
            || (parts[n] == "0xffffffffffffff9c" && first.starts_with("AT_FDCWD "));
        same.then(|| fd(d)).flatten()
    };
    match call {
        "open" | "creat" | "rename" | "link" | "unlink" | "rmdir" | "truncate" | "utime"
        | "utimes" | "mkdir" | "mknod" | "chmod" | "chown" | "lchown" => [plain(0), plain(1)],
        "symlink" => [plain(1), path(0).map(given)],
        "symlinkat" => [at_dir(1, 2), path(0).map(given)],
        "openat" | "unlinkat" | "futimesat" | "mkdirat" | "mknodat" | "fchmodat" | "fchownat"
        | "utimensat" => [at_dir(0, 1), None],
        "renameat" | "renameat2" | "linkat" => [
            at_dir(0, 1),
            path(3).map(|p| resolve(second_dir(0, 2), p, at)),
        ],
        "ftruncate" | "fchmod" | "fchown" => [fd(0).map(fd_file), None],
        _ => [None, None],
    }
}

/// The file of a descriptor, named by the Sentry.
fn fd_file(name: &str) -> Named {
    Named {
        shown: name.to_string(),
        resolved: true,
        given: name.to_string(),
        lexical: Some(name.to_string()),
    }
}

/// A path kept as text (a symlink's target).
fn given(p: &str) -> Named {
    Named {
        shown: shorten(p),
        resolved: false,
        given: p.to_string(),
        lexical: None,
    }
}

/// Path `p` of the code's, relative to directory `dir` (the Sentry's name
/// of it; `None`: unknown). Taken by name (`.` and `..` as written,
/// `/proc/self` as the code's own) only when each `..` follows a
/// directory no link of the code's can be: one the Sentry named, or one
/// in the image's read-only library directories. Otherwise a link the
/// code made (in `/tmp`, `/out`, `/proc/self/cwd`, ...) may send `..`
/// anywhere, so the path is shown as given, marked, and never counts as a
/// library read.
fn resolve(dir: Option<&str>, p: &str, at: At) -> Named {
    let (full, trusted) = match dir.filter(|d| d.starts_with('/')) {
        _ if p.starts_with('/') => (p.to_string(), 0),
        Some(d) => (
            format!("{d}/{p}"),
            d.split('/').filter(|c| !c.is_empty()).count(),
        ),
        None => {
            return Named {
                shown: format!("(unresolved, relative) {}", shorten(p)),
                resolved: false,
                given: p.to_string(),
                lexical: None,
            };
        }
    };
    let lexical = own_proc(&normalize(&full), at.pid, at.tid);
    let resolved = by_name(&full, trusted);
    Named {
        shown: if resolved {
            lexical.clone()
        } else {
            format!("(unresolved) {}", shorten(&full))
        },
        resolved,
        given: p.to_string(),
        lexical: Some(lexical),
    }
}

/// True when every `..` of `full` follows a directory no link of the
/// code's can be: one of the first `trusted` components (the Sentry's
/// name of a directory), or one under the image's read-only library
/// directories (`/usr/`, `/opt/compute-bot/`).
fn by_name(full: &str, trusted: usize) -> bool {
    let mut stack: Vec<(String, bool)> = Vec::new();
    for (i, c) in full.split('/').filter(|c| !c.is_empty()).enumerate() {
        match c {
            "." => {}
            ".." => match stack.last() {
                Some((_, false)) => return false,
                _ => {
                    stack.pop();
                }
            },
            name => {
                let path = format!("{}/{name}/", stack.last().map_or("", |(p, _)| p.as_str()));
                let safe = i < trusted
                    || LIBRARY_PATHS
                        .iter()
                        .any(|d| d.ends_with('/') && path.starts_with(d));
                stack.push((path[..path.len() - 1].to_string(), safe));
            }
        }
    }
    true
}

/// `/proc/self/…` as the code's own `/proc/<pid>/…`.
fn own_proc(path: &str, pid: u32, tid: u32) -> String {
    for (own, mine) in [
        ("/proc/self", format!("/proc/{pid}")),
        ("/proc/thread-self", format!("/proc/{pid}/task/{tid}")),
    ] {
        if path == own || path.starts_with(&format!("{own}/")) {
            return format!("{mine}{}", &path[own.len()..]);
        }
    }
    path.to_string()
}

/// `.` and `..` resolved by name (as `os.path.normpath`).
fn normalize(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for p in path.split('/') {
        match p {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    format!("/{}", parts.join("/"))
}

/// At most 200 characters of what the code named.
fn shorten(s: &str) -> String {
    s.chars().take(200).collect()
}

/// The family (`AF_INET`), and for connect/bind the address.
fn socket_target(call: &Exit<'_>) -> String {
    if call.name == "socket" {
        return call.args.split(", ").next().unwrap_or("?").to_string();
    }
    // `0x3 socket:[3], 0xADDR {Family: AF_INET, Addr: 10.0.0.1, Port: 80}, 0x10`
    let Some(open) = call.args.find(", 0x").map(|i| &call.args[i + 2..]) else {
        return "?".into();
    };
    let Some((_, inner)) = open.split_once(" {") else {
        return "?".into();
    };
    let Some((inner, _)) = inner.rsplit_once("}, ") else {
        return "?".into();
    };
    let field = |k: &str| {
        inner
            .split(", ")
            .find_map(|f| f.strip_prefix(k))
            .map(str::to_string)
    };
    let family = field("Family: ").unwrap_or_else(|| "?".into());
    match (field("Addr: "), field("Port: ")) {
        (Some(a), Some(p)) => format!("{family} {a}:{p}"),
        (Some(a), None) => format!("{family} {}", shorten(a.trim_matches('"'))),
        _ => family,
    }
}

/// The C name of an errno (`ENOENT`), or `errno N`.
fn errno_name(n: i32) -> String {
    let name = match n {
        1 => "EPERM",
        2 => "ENOENT",
        5 => "EIO",
        6 => "ENXIO",
        9 => "EBADF",
        12 => "ENOMEM",
        13 => "EACCES",
        14 => "EFAULT",
        16 => "EBUSY",
        17 => "EEXIST",
        19 => "ENODEV",
        20 => "ENOTDIR",
        21 => "EISDIR",
        22 => "EINVAL",
        24 => "EMFILE",
        26 => "ETXTBSY",
        27 => "EFBIG",
        28 => "ENOSPC",
        30 => "EROFS",
        36 => "ENAMETOOLONG",
        38 => "ENOSYS",
        40 => "ELOOP",
        93 => "EPROTONOSUPPORT",
        95 => "EOPNOTSUPP",
        97 => "EAFNOSUPPORT",
        98 => "EADDRINUSE",
        99 => "EADDRNOTAVAIL",
        101 => "ENETUNREACH",
        111 => "ECONNREFUSED",
        113 => "EHOSTUNREACH",
        _ => return format!("errno {n}"),
    };
    name.to_string()
}

/// Puts gVisor's record into `outcome`: its files, sockets and changes,
/// seen by gVisor's kernel; an exit line of the code's that did not read
/// makes the record incomplete, and an open the code's interpreter reports
/// (of an input or a result) that the Sentry never carried out makes the
/// run tampered.
pub fn attach(outcome: &mut Outcome, rec: SentryRecord) {
    if !rec.started {
        outcome.notes.push(
            "gVisor's log shows no start of the code (no second seccomp stage), so it lists no file of the code's"
                .into(),
        );
        return;
    }
    if rec.unread > 0 {
        outcome.notes.push(format!(
            "{} of the code's calls in gVisor's log did not read as the Sentry writes them: each is listed whole as `(unread)`, and the record is incomplete",
            rec.unread
        ));
    }
    let kernel = outcome.audit.kernel.get_or_insert_with(|| KernelRecord {
        mode: Supervision::Errno,
        ..KernelRecord::default()
    });
    kernel.files = rec.files;
    kernel.library_reads = rec.library_reads;
    kernel.sockets = rec.sockets;
    kernel.changes = rec.changes;
    kernel.truncated |= rec.truncated || rec.unread > 0;
    kernel.witness = Some(Witness::Sentry);
    if !rec.truncated {
        // The interpreter's paths come as the runner shows them: cut, and
        // with bytes that are not UTF-8 escaped where the log has U+FFFD.
        let carried: HashSet<String> = rec
            .paths
            .iter()
            .map(|p| super::protocol::shown(p))
            .collect();
        // A name in a text that could not be split may be the open claimed.
        let in_raw = |p: &str| {
            let file = p.rsplit('/').next().unwrap_or(p);
            rec.raw.iter().any(|r| r.contains(file))
        };
        let unseen: Vec<String> = outcome
            .audit
            .files_opened
            .iter()
            .filter(|f| !f.denied)
            .map(|f| normalize(&f.path))
            .filter(|p| p.starts_with("/data/") || p.starts_with("/out/"))
            .filter(|p| {
                let logged = super::protocol::as_logged(p);
                !carried.contains(p) && !rec.paths.contains(&logged) && !in_raw(&logged)
            })
            .take(5)
            .map(|p| {
                format!(
                    "the interpreter's record names an open of {} that gVisor's kernel never carried out",
                    shorten(&p)
                )
            })
            .collect();
        if !unseen.is_empty() {
            outcome.tampered.extend(unseen);
            outcome.status = super::types::RunStatus::Tampered;
        }
    }
    super::trust::kernel_sources(&mut outcome.sources, outcome.audit.kernel.as_ref());
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines as runsc (release 20221219) wrote them in a real run here.
    const REAL: &[&str] = &[
        "[   2:   2] python3 X openat(AT_FDCWD /tmp, 0x7f466c0d51c0 /usr/lib/python3.11/json/__init__.pyc, O_RDONLY|O_CLOEXEC, 0o0) = 3 (0x3) (14.84µs)",
        "[   2:   2] python3 X seccomp(0x1, 0x19, 0x7f4528e37f10) = 0 (0x0) errno=22 (invalid argument) (2.718µs)",
        "[   2:   2] python3 X seccomp(0x1, 0x1, 0x7f4696b67f10) = 0 (0x0) (22.112µs)",
        "[   2:   2] python3 X openat(AT_FDCWD /tmp, 0x7f466c0d51c0 /data/sales.csv, O_RDONLY|O_CLOEXEC, 0o0) = 3 (0x3) (14.84µs)",
        "[   2:   7] python3 X openat(AT_FDCWD /tmp, 0x7f394adb6dc8 /data/sales.csv, O_RDONLY|0x0, 0o0) = 3 (0x3) (9.93µs)",
        "[   2:   2] python3 X socket(AF_INET, SOCK_STREAM|SOCK_CLOEXEC, IPPROTO_IP) = 3 (0x3) (45.302µs)",
        "[   2:   2] python3 X connect(0x3 socket:[3], 0x7f394adbb100 {Family: AF_INET, Addr: 10.0.0.1, Port: 80}, 0x10) = 0 (0x0) errno=113 (no route to host) (125.577µs)",
        "[   2:   2] python3 X openat(AT_FDCWD /tmp, 0x7f466c0d52e0 /etc/shadow, O_RDONLY|O_CLOEXEC, 0o0) = 0 (0x0) errno=13 (permission denied) (784.071µs)",
        "[   2:   2] python3 X openat(AT_FDCWD /tmp, 0x7f466c0d52e0 /tmp/x.txt, O_WRONLY|O_CLOEXEC|O_CREAT|O_TRUNC, 0o666) = 3 (0x3) (16.218µs)",
        "[   2:   2] python3 X openat(AT_FDCWD /data, 0x7f466c0d52e0 sales.csv, O_RDONLY|O_CLOEXEC, 0o0) = 3 (0x3) (16.886µs)",
        "[   1:   1] python3 X openat(AT_FDCWD /tmp, 0x7fe6ec05aa20 /out, O_RDONLY|O_CLOEXEC|O_DIRECTORY|O_NONBLOCK, 0o0) = 3 (0x3) (9.583µs)",
    ];

    fn parse(lines: &[&str]) -> SentryRecord {
        let mut p = Parser::default();
        for l in lines {
            p.line(l);
        }
        p.rec
    }

    fn files(r: &SentryRecord) -> Vec<String> {
        r.files
            .iter()
            .map(|f| format!("{} {} {}", f.path, f.mode, f.result))
            .collect()
    }

    #[test]
    fn the_codes_own_calls_after_the_second_stage_are_the_record() {
        let r = parse(REAL);
        assert!(r.started);
        // The preload's read before the stage is not the code's; the
        // runner's (pid 1) after it neither; Python's and DuckDB's reads of
        // the same file (two threads) are one entry, the relative one too.
        assert_eq!(
            files(&r),
            [
                "/data/sales.csv r ok",
                "/etc/shadow r EACCES",
                "/tmp/x.txt w+create ok",
            ]
        );
        assert_eq!(r.library_reads, 0);
        let sockets: Vec<String> = r
            .sockets
            .iter()
            .map(|s| {
                format!(
                    "{} {} {}",
                    s.call,
                    s.target,
                    s.result.as_deref().unwrap_or("")
                )
            })
            .collect();
        assert_eq!(
            sockets,
            [
                "socket AF_INET ok",
                "connect AF_INET 10.0.0.1:80 (as given at entry) EHOSTUNREACH"
            ]
        );
        assert!(r.paths.contains("/data/sales.csv"));
    }

    /// A log file as the Sentry writes it: JSON lines, the first naming
    /// the container.
    fn json(msg: &str) -> String {
        format!("{}\n", serde_json::json!({"msg": msg, "level": "info"}))
    }

    fn append(path: &Path, text: &str) {
        use std::io::Write;
        std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(path)
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
    }

    #[test]
    fn a_sessions_log_is_read_a_step_at_a_time() {
        let dir = tempfile::tempdir().unwrap();
        let id = "c0ffee";
        let since = SystemTime::now();
        let path = dir.path().join("runsc.log.20261205-221501.000001.boot.txt");
        let open = |pid: u32, p: &str| {
            json(&format!(
                "[   {pid}:   {pid}] python3 X openat(AT_FDCWD /tmp, 0x1 {p}, O_RDONLY|O_CLOEXEC, 0o0) = 3 (0x3) (1µs)"
            ))
        };
        append(
            &path,
            &[
                json(&format!("Args: [runsc boot {id}]")),
                json(REAL[2]),
                open(2, "/data/a.csv"),
                open(1, "/proc/2/stat"),
            ]
            .concat(),
        );
        let mut reader = LogReader::default();
        let one = reader.next(dir.path(), id, since, Upto::Now).unwrap();
        assert!(one.started);
        assert_eq!(files(&one), ["/data/a.csv r ok"]);

        // Step 2, and a line the Sentry is still writing at the boundary.
        let late = open(2, "/etc/hostname");
        let (head, rest) = late.split_at(late.len() - 20);
        append(
            &path,
            &[open(2, "/data/b.csv"), open(2, "/data/a.csv"), head.into()].concat(),
        );
        let two = reader.next(dir.path(), id, since, Upto::Now).unwrap();
        assert!(two.started, "the code's process holds for the session");
        assert_eq!(
            files(&two),
            ["/data/b.csv r ok", "/data/a.csv r ok"],
            "each step lists its own opens, a file of step 1's again"
        );
        assert_eq!(two.unread, 0, "a line still being written waits");

        // The container stopped: the rest, the whole line first.
        append(&path, &[rest.to_string(), open(2, "/tmp/t")].concat());
        let tail = reader.next(dir.path(), id, since, Upto::End).unwrap();
        assert_eq!(files(&tail), ["/etc/hostname r ok", "/tmp/t r ok"]);
        assert!(!tail.truncated);
        reader.remove();
        assert!(!path.exists());

        // A log cut mid-line at the container's end keeps the piece.
        let path = dir.path().join("runsc.log.20261205-221502.000001.boot.txt");
        append(
            &path,
            &[json("Args: [runsc boot c1]"), json(REAL[2]), head.into()].concat(),
        );
        let mut reader = LogReader::default();
        assert_eq!(
            reader
                .next(dir.path(), "c1", since, Upto::Now)
                .unwrap()
                .unread,
            0
        );
        let cut = reader.next(dir.path(), "c1", since, Upto::End).unwrap();
        assert_eq!(cut.unread, 1, "{cut:?}");
    }

    #[test]
    fn without_the_second_stage_nothing_is_the_codes() {
        let r = parse(&[REAL[0], REAL[1], REAL[3]]);
        assert!(!r.started);
        assert!(r.files.is_empty());
    }

    #[test]
    fn names_the_code_chooses_do_not_move_the_record() {
        let stage = REAL[2];
        // Task names that look like a call: the real call is found after,
        // also after a name of all 15 bytes that parses as a call's start
        // (read the other way, the directory would be a root-level name
        // holding " X ", which a read-only root cannot have).
        let named = "[   2:   2] a X openat(0x3  X openat(AT_FDCWD /tmp, 0x7f /data/real.csv, O_RDONLY, 0o0) = 3 (0x3) (1µs)";
        let whole = "[   2:   2]  X openat(0x3 / X openat(AT_FDCWD /data, 0x7f real.csv, O_RDONLY, 0o0) = 3 (0x3) (1µs)";
        // A path holding a whole fake ending: read from the right, it is the
        // path of a failed open.
        let fake_end = "[   2:   2] python3 X openat(AT_FDCWD /tmp, 0x7f /data/sales.csv, O_RDONLY, 0o0) = 3 (0x3) (1µs), O_RDONLY|O_CLOEXEC, 0o0) = 0 (0x0) errno=2 (no such file or directory) (3µs)";
        // A directory name with a fake address in it: two ways to split.
        let split = "[   2:   2] python3 X openat(AT_FDCWD /tmp/q, 0x1 /data/sales.csv, 0x7f x.csv, O_RDONLY, 0o0) = 3 (0x3) (1µs)";
        let r = parse(&[stage, named, whole, fake_end, split]);
        assert_eq!(
            files(&r),
            [
                "/data/real.csv r ok",
                "/data/sales.csv, O_RDONLY, 0o0) = 3 (0x3) (1µs) r ENOENT",
                "(ambiguous) AT_FDCWD /tmp/q, 0x1 /data/sales.csv, 0x7f x.csv r ok",
            ]
        );
        // A line the Sentry did not write in its format is not a call: it
        // is kept whole, unread, never read as an open.
        let r = parse(&[stage, "[   2:   2] python3 X openat(/data/x) = 3"]);
        assert_eq!(r.unread, 1);
        assert_eq!(files(&r), ["(unread) python3 X openat(/data/x) = 3 ? ?"]);
        // Either way the ambiguous open splits, it may have named the file.
        let r = parse(&[stage, split]);
        assert!(
            r.paths.contains("/data/sales.csv, 0x7f x.csv"),
            "{:?}",
            r.paths
        );
        assert!(
            r.paths.contains("/tmp/q, 0x1 /data/sales.csv/x.csv"),
            "{:?}",
            r.paths
        );
        assert!(!r.paths.contains("/data/sales.csv"), "{:?}", r.paths);
    }

    #[test]
    fn proc_self_is_the_codes_own_and_dots_resolve() {
        let r = parse(&[
            REAL[2],
            "[   2:   9] python3 X openat(AT_FDCWD /tmp, 0x1 /proc/self/environ, O_RDONLY|O_CLOEXEC, 0o0) = 3 (0x3) (1µs)",
            "[   2:   2] python3 X openat(AT_FDCWD /tmp, 0x1 ../etc/./passwd, O_RDONLY, 0o0) = 3 (0x3) (1µs)",
            "[   2:   2] python3 X open(0x1 /usr/lib/x.so, O_RDONLY|O_CLOEXEC, 0o0) = 3 (0x3) (1µs)",
            "[   2:   2] python3 X creat(0x1 /out/r.csv, 0o644) = 3 (0x3) (1µs)",
        ]);
        assert_eq!(
            files(&r),
            [
                "/proc/2/environ r ok",
                "/etc/passwd r ok",
                "/out/r.csv w+create ok"
            ]
        );
        assert_eq!(r.files[0].asked.as_deref(), Some("/proc/self/environ"));
        assert_eq!(r.library_reads, 1);
    }

    /// Lines of hostile programs as runsc (release 20221219) wrote them
    /// here (`docker run --runtime runsc-audit`), the process renumbered 2.
    const HOSTILE: &[&str] = &[
        "[   2:   2] python3 X mkdir(0x7fb95cbdd990 /tmp/a errno=2 (x), 0o777) = 0 (0x0) (7.441µs)",
        "[   2:   2] python3 X openat(AT_FDCWD /tmp, 0x7fb95cbddfd0 /tmp/a errno=2 (x)/f.txt, O_WRONLY|O_CLOEXEC|O_CREAT|O_TRUNC, 0o666) = 3 (0x3) (16.725µs)",
        "[   2:   2] python3 X openat(AT_FDCWD /tmp, 0x7fb95cd7fc50 /tmp/nope errno=2 (no such file or directory)) = 3 (0x3) (1µs), O_RDONLY|O_CLOEXEC, 0o0) = 0 (0x0) errno=2 (no such file or directory) (2.644µs)",
        "[   2:   2] python3 X openat(AT_FDCWD /tmp, 0x7fb95cbe7cb0 /tmp/m, O_WRONLY|O_CLOEXEC|O_CREAT, S_ISUID|0o755) = 4 (0x4) (9.654µs)",
        "[   2:   2] python3 X symlink(0x7fb95cbe7830 /tmp/t/q/r, 0x7fb95cbe75c0 /tmp/s) = 0 (0x0) (4.827µs)",
        "[   2:   2] python3 X openat(AT_FDCWD /tmp, 0x7fb95cbe0ff0 /tmp/s/../../usr/lib/python3.11/x, O_RDONLY|O_CLOEXEC, 0o0) = 3 (0x3) (173.728µs)",
        "[   2:   2] python3 X rename(0x7fb95cbe75c0 /tmp/f1, 0x7fb95cbe7830 /tmp/f2) = 0 (0x0) (8.322µs)",
        "[   2:   2] python3 X link(0x7fb95cbe7830 /tmp/f2, 0x7fb95cbe75c0 /tmp/f3) = 0 (0x0) (3.735µs)",
        "[   2:   2] python3 X unlink(0x7fb95cbe7830 /tmp/f3) = 0 (0x0) (3.595µs)",
        "[   2:   2] python3 X truncate(0x7fb95cbe7830 /tmp/f2, 0x1) = 0 (0x0) (7.301µs)",
        "[   2:   2] python3 X ftruncate(0x3 /tmp/f2, 0x0) = 0 (0x0) (21.181µs)",
        "[   2:   2] python3 X fchmod(0x3 /tmp/f2, 0o600) = 0 (0x0) (1.272µs)",
        "[   2:   2] python3 X utimensat(AT_FDCWD /tmp, 0x7fb95cbe7830 /tmp/f2, 0x7fa03ec456c0 {sec=1 nsec=0}, 0x0) = 0 (0x0) (3.295µs)",
        "[   2:   2] python3 X mkdir(0x7fb95cbe75c0 /tmp/d1, 0o700) = 0 (0x0) (3.705µs)",
        "[   2:   2] python3 X mknodat(AT_FDCWD /tmp, 0x7fb95cbe75c0 /tmp/fifo, S_IFIFO|0o644, 0x0) = 0 (0x0) (3.555µs)",
        "[   2:   2] python3 X rmdir(0x7fb95cbe75c0 /tmp/d1) = 0 (0x0) (3.225µs)",
        "[   2:   2] python3 X chown(0x7fb95cbe75c0 /tmp/f2, 0x0, 0x0) = 0 (0x0) errno=1 (operation not permitted) (1.372µs)",
        "[   2:   2] python3 X mkdirat(0x3 /tmp, 0x7fb95cbe75c0 d2, 0x1ff) = 0 (0x0) (5.188µs)",
        "[   2:   2] python3 X renameat(0x3 /tmp, 0x7fb95cbe75c0 d2, 0x3, 0x7fb95cbe7cb0 d3) = 0 (0x0) (4.267µs)",
        "[   2:   2] python3 X symlinkat(0x7fb95cbe7cb0 f2, 0x3 /tmp, 0x7fb95cbe75c0 f5) = 0 (0x0) (3.865µs)",
        "[   2:   2] python3 X linkat(0x3 /tmp, 0x7fb95cbe75c0 f2, 0x3, 0x7fb95cbe7cb0 f6, 0x400) = 0 (0x0) (4.547µs)",
        "[   2:   2] python3 X unlinkat(0x3 /tmp, 0x7fb95cbe7cb0 d3, 0x200) = 0 (0x0) (2.223µs)",
        "[   2:   2] python3 X fchmodat(0x3 /tmp, 0x7fb95cbe7cb0 f2, 0o640) = 0 (0x0) (1.803µs)",
        "[   2:   2] python3 X renameat2(AT_FDCWD /tmp, 0x7fb95cbd9520 /tmp/f2, 0xffffffffffffff9c, 0x7fb95cbe5850 /tmp/f7, 0x0) = 0 (0x0) (4.807µs)",
        "[   2:   2] python3 X mknod(0x7fb95cbe5970 /tmp/nod\n{x, S_IFIFO|0o644, 0x0) = 0 (0x0) (6.9µs)",
    ];

    #[test]
    fn an_errno_or_a_mode_bit_in_an_open_moves_nothing() {
        let r = parse(&[&[REAL[2]], &HOSTILE[..4]].concat());
        assert_eq!(
            files(&r),
            [
                "/tmp/a errno=2 (x)/f.txt w+create ok",
                "/tmp/nope errno=2 (no such file or directory)) = 3 (0x3) (1µs) r ENOENT",
                "/tmp/m w+create ok",
            ]
        );
        assert_eq!(r.unread, 0);
        assert_eq!(r.changes[0].line(), "mkdir /tmp/a errno=2 (x)");
    }

    #[test]
    fn a_flood_of_one_kind_does_not_push_a_later_open_out() {
        let flood: Vec<String> = (0..300)
            .map(|i| format!("[   2:   2] python3 X openat(AT_FDCWD /tmp, 0x1 /tmp/f{i}, O_WRONLY|O_CREAT, 0o644) = 3 (0x3) (1µs)"))
            .chain((0..300).map(|i| format!("[   2:   2] python3 X openat(AT_FDCWD /tmp, 0x1 /nowhere{i}/x, O_RDONLY, 0o0) = 0 (0x0) errno=2 (no such file or directory) (1µs)")))
            .collect();
        let mut lines: Vec<&str> = vec![REAL[2]];
        lines.extend(flood.iter().map(String::as_str));
        lines.push("[   2:   2] python3 X openat(AT_FDCWD /tmp, 0x1 /etc/passwd, O_RDONLY, 0o0) = 3 (0x3) (1µs)");
        lines.push("[   2:   2] python3 X openat(AT_FDCWD /tmp, 0x1 /data/sales.csv, O_RDONLY, 0o0) = 3 (0x3) (1µs)");
        let r = parse(&lines);
        assert!(r.truncated, "the flood is over the cap");
        let listed = files(&r);
        for path in ["/etc/passwd r ok", "/data/sales.csv r ok"] {
            assert!(
                listed.iter().any(|l| l == path),
                "{path}: {} listed",
                listed.len()
            );
        }
        assert_eq!(
            listed.iter().filter(|l| l.starts_with("/tmp/f")).count(),
            MAX_ITEMS
        );
    }

    #[test]
    fn a_link_then_dotdot_is_never_a_library_read() {
        let r = parse(&[
            REAL[2],
            HOSTILE[5],
            "[   2:   2] python3 X openat(AT_FDCWD /tmp/t/q/r, 0x1 /proc/self/cwd/../../../usr/lib/python3.11/x, O_RDONLY, 0o0) = 3 (0x3) (1µs)",
            "[   2:   2] python3 X openat(AT_FDCWD /tmp/t/q/r, 0x1 s/../../usr/lib/x, O_RDONLY, 0o0) = 3 (0x3) (1µs)",
            "[   2:   2] python3 X open(0x1 usr/lib/python3.11/x, O_RDONLY, 0o0) = 3 (0x3) (1µs)",
            // `..` after the image's own directories and the Sentry's name
            // of the working directory is taken by name.
            "[   2:   2] python3 X openat(AT_FDCWD /tmp, 0x1 /usr/local/lib/python3.11/site-packages/numpy/core/../../numpy.libs/x.so, O_RDONLY|O_CLOEXEC, 0o0) = 3 (0x3) (1µs)",
            "[   2:   2] python3 X openat(AT_FDCWD /tmp/t, 0x1 ../../data/sales.csv, O_RDONLY, 0o0) = 3 (0x3) (1µs)",
        ]);
        assert_eq!(
            files(&r),
            [
                "(unresolved) /tmp/s/../../usr/lib/python3.11/x r ok",
                "(unresolved) /proc/self/cwd/../../../usr/lib/python3.11/x r ok",
                "(unresolved) /tmp/t/q/r/s/../../usr/lib/x r ok",
                "(unresolved, relative) usr/lib/python3.11/x r ok",
                "/data/sales.csv r ok",
            ]
        );
        assert_eq!(r.library_reads, 1);
        // The interpreter check still knows each by name.
        assert!(r.paths.contains("/usr/lib/python3.11/x"));
    }

    #[test]
    fn changes_without_an_open_are_listed() {
        let r = parse(&[&[REAL[2]], &HOSTILE[4..]].concat());
        let changes: Vec<String> = r.changes.iter().map(|c| c.line()).collect();
        assert_eq!(
            changes,
            [
                "symlink /tmp/s → /tmp/t/q/r",
                "rename /tmp/f1 → /tmp/f2",
                "link /tmp/f2 → /tmp/f3",
                "unlink /tmp/f3",
                "truncate /tmp/f2",
                "ftruncate /tmp/f2",
                "fchmod /tmp/f2",
                "utimensat /tmp/f2",
                "mkdir /tmp/d1",
                "mknodat /tmp/fifo",
                "rmdir /tmp/d1",
                "chown /tmp/f2 EPERM",
                "mkdirat /tmp/d2",
                "renameat /tmp/d2 → /tmp/d3",
                "symlinkat /tmp/f5 → f2",
                "linkat /tmp/f2 → /tmp/f6",
                "unlinkat /tmp/d3",
                "fchmodat /tmp/f2",
                "renameat2 /tmp/f2 → /tmp/f7",
                "mknod /tmp/nod\n{x",
            ]
        );
        assert_eq!(r.unread, 0);
    }

    #[test]
    fn an_exit_line_of_the_codes_that_does_not_read_is_kept() {
        let odd = "[   2:   2] python3 X openat(AT_FDCWD /tmp, 0x1 /etc/passwd, O_RDONLY, 0o0) = 3 (0x3) errno=x (1µs)";
        let r = parse(&[
            REAL[2],
            odd,
            "[   1:   1] python3 X openat(?) = 3 (0x3) (1µs)",
        ]);
        assert_eq!(r.unread, 1);
        assert_eq!(r.files.len(), 1);
        assert!(
            r.files[0].path.starts_with("(unread)") && r.files[0].path.contains("/etc/passwd"),
            "{:?}",
            r.files
        );
        // A line that is not JSON, once the code started, is kept too.
        let mut p = Parser::default();
        p.line(REAL[2]);
        p.json_line(
            b"{\"msg\":\"[   2:   2] python3 X openat(AT_FDCWD /tmp, 0x1 /data/x.csv, O_RDO",
        );
        assert_eq!(p.rec.unread, 1);
        // In the outcome: the record says it is incomplete.
        let mut o: Outcome = serde_json::from_value(serde_json::json!({
            "status": "ok", "exit_code": 0, "signal": null, "duration_ms": 5, "collected_ms": 6,
            "stdout": "", "stderr": "", "stdout_truncated": false, "stderr_truncated": false,
            "timed_out": false, "oom_killed": false,
            "image": {"reference": "i", "id": "", "digests": [], "labels": {}},
            "limits": serde_json::to_value(crate::Limits::default()).unwrap(),
            "resources": {"peak_memory_bytes": 1, "cpu_time_ms": 1},
            "audit": {"files_opened": [], "network_attempts": [], "subprocess_attempts": [],
                      "imports": [], "refused": []},
            "artifacts": [], "code_sha256": "", "container": "c"
        }))
        .unwrap();
        attach(&mut o, r);
        assert!(o.audit.kernel.as_ref().unwrap().truncated);
        assert!(
            o.notes.iter().any(|n| n.contains("incomplete")),
            "{:?}",
            o.notes
        );
    }

    #[test]
    fn the_install_script_registers_the_runtime_the_bot_looks_for() {
        let script = include_str!("../../../scripts/install-gvisor");
        let traced = script
            .lines()
            .find_map(|l| l.strip_prefix("traced="))
            .expect("scripts/install-gvisor sets traced=");
        assert_eq!(traced.split(',').collect::<Vec<_>>(), TRACED);
        assert!(
            script.contains(&format!("\"{RECORD_RUNTIME}\": {{")),
            "{RECORD_RUNTIME}"
        );
        assert!(script.contains("--debug-log-format=json") && script.contains("--strace"));
    }

    #[test]
    fn a_runtime_is_the_record_only_with_the_whole_log_on() {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let traced = format!("--strace-syscalls={}", TRACED.join(","));
        let good = args(&[
            "--network=none",
            "--strace",
            &traced,
            "--debug-log=/var/log/compute-bot/runsc/",
            "--debug-command=boot",
            "--debug-log-format=json",
        ]);
        let text = args(&["--strace", "--debug-log=/var/log/x/"]);
        let few = args(&[
            "--strace",
            "--strace-syscalls=openat",
            "--debug-log=/var/log/x/",
            "--debug-log-format=json",
        ]);
        let file = args(&[
            "--strace",
            "--debug-log=/var/log/x.txt",
            "--debug-log-format=json",
        ]);
        let all = args(&[
            "-strace",
            "-debug-log",
            "/var/log/y/",
            "-debug-log-format",
            "json",
        ]);
        let plain = args(&["--network=none"]);
        let found = LogRuntime::find([
            ("runsc", "/usr/bin/runsc", plain.as_slice()),
            ("runsc-text", "/usr/bin/runsc", text.as_slice()),
            ("runsc-few", "/usr/bin/runsc", few.as_slice()),
            ("runsc-file", "/usr/bin/runsc", file.as_slice()),
            ("runsc-audit", "/usr/bin/runsc", good.as_slice()),
            ("other", "/usr/bin/runc", good.as_slice()),
        ]);
        assert_eq!(
            found,
            Some(LogRuntime {
                name: "runsc-audit".into(),
                dir: "/var/log/compute-bot/runsc/".into()
            })
        );
        let found = LogRuntime::find([("z", "/opt/runsc", all.as_slice())]).unwrap();
        assert_eq!(found.dir, PathBuf::from("/var/log/y/"));
        assert_eq!(
            LogRuntime::find([("runsc", "/usr/bin/runsc", plain.as_slice())]),
            None
        );
        let remote = LogRuntime {
            name: "runsc-audit".into(),
            dir: "/".into(),
        };
        assert!(
            remote
                .unusable_from_here("tcp://10.1.2.3:2375")
                .unwrap()
                .contains("not on this machine")
        );
        assert_eq!(
            remote.unusable_from_here("unix:///var/run/docker.sock"),
            None
        );
    }
}
