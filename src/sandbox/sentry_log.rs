//! gVisor's own record of what the code did: the file opens and socket
//! calls its kernel (the Sentry) carried out for the code's process, read
//! by the bot from the Sentry's strace log after the run.
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
//!   own formats ([`syscall_exit`]);
//! - paths and directory names: read from the right, where the Sentry's
//!   fixed formats (flags, mode, result) end the line; a path that could be
//!   split more than one way is listed whole, marked, not guessed.
//!
//! The code's process is the one that installs the runner's second seccomp
//! stage (its first successful `seccomp` call, pid other than 1): only its
//! calls after that, the code's own, go into the record.

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use super::trust::{KernelOpen, KernelRecord, LIBRARY_PATHS, SocketCall, Supervision, Witness};
use super::types::Outcome;

/// The name `scripts/install-gvisor` registers the recording runtime under.
pub const RECORD_RUNTIME: &str = "runsc-audit";

/// The system calls the record needs the Sentry to log.
pub const TRACED: &[&str] = &[
    "open", "openat", "creat", "socket", "connect", "bind", "seccomp", "execve", "execveat",
];

/// The most of a log the bot reads; past it the record says it is cut.
const MAX_LOG_BYTES: u64 = 256 << 20;

/// A log older than this is of a container long gone (a run's time limit
/// and a prepared container's idle wait are far shorter): removed by the
/// next run that reads the directory (one whose bot died left it).
const STALE: std::time::Duration = std::time::Duration::from_secs(3600);

/// The most files and socket calls listed (as the runner keeps).
const MAX_ITEMS: usize = 200;

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
    /// More happened than was kept (or read).
    pub truncated: bool,
    /// Every path opened, asked and resolved, each way an ambiguous one
    /// splits (for the interpreter check: "never carried out" is said only
    /// of a path no open may have named).
    paths: HashSet<String>,
}

/// Finds the log of container `id` in `dir` (a file the Sentry began at or
/// after `since`), reads the code's record from it and removes it.
pub fn read(dir: &Path, id: &str, since: SystemTime) -> Result<SentryRecord, String> {
    remove_stale(dir);
    let started = std::time::Instant::now();
    let path = find_log(dir, id, since)?;
    let file = std::fs::File::open(&path)
        .map_err(|e| format!("gVisor's log {} could not be opened: {e}", path.display()))?;
    let mut parser = Parser::default();
    let mut reader = BufReader::new(file.take(MAX_LOG_BYTES));
    let mut line = Vec::new();
    let mut read = 0u64;
    loop {
        line.clear();
        let n = reader
            .read_until(b'\n', &mut line)
            .map_err(|e| format!("gVisor's log {} could not be read: {e}", path.display()))?;
        if n == 0 {
            break;
        }
        read += n as u64;
        parser.json_line(&line);
    }
    if read >= MAX_LOG_BYTES {
        parser.rec.truncated = true;
    }
    if let Err(e) = std::fs::remove_file(&path) {
        tracing::warn!(log = %path.display(), error = %e, "gVisor's log of the run stays on disk");
    }
    tracing::debug!(
        bytes = read,
        ms = started.elapsed().as_millis() as u64,
        files = parser.rec.files.len(),
        "gVisor's log of the run read"
    );
    Ok(parser.rec)
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
}

impl Parser {
    fn json_line(&mut self, line: &[u8]) {
        // Only exit lines are read; the others (entries, the Sentry's own
        // messages) are most of the log and are skipped undecoded.
        if !line.windows(3).any(|w| w == b" X ") {
            return;
        }
        if let Some(m) = message(line) {
            self.line(&m);
        }
    }

    fn line(&mut self, msg: &str) {
        let Some((pid, tid, rest)) = task_prefix(msg) else {
            return;
        };
        let Some(call) = syscall_exit(rest) else {
            return;
        };
        match self.code_pid {
            None => {
                if pid != 1
                    && call.name == "seccomp"
                    && call.ok()
                    && call.args.starts_with("0x1, 0x1,")
                {
                    self.code_pid = Some(pid);
                    self.rec.started = true;
                }
            }
            Some(code) if code == pid => self.code_call(pid, tid, &call),
            Some(_) => {}
        }
    }

    fn code_call(&mut self, pid: u32, tid: u32, call: &Exit<'_>) {
        match call.name {
            "open" | "openat" | "creat" => {
                if let Some((open, named)) = open_call(call, pid, tid) {
                    self.note_open(open, named);
                }
            }
            "socket" | "connect" | "bind" => {
                let target = socket_target(call);
                self.keep_socket(SocketCall {
                    call: call.name.to_string(),
                    target,
                    denied: false,
                    result: Some(call.result()),
                });
            }
            _ => {}
        }
    }

    fn note_open(&mut self, open: KernelOpen, named: Vec<String>) {
        if self.rec.paths.len() < 20_000 {
            self.rec.paths.extend(named);
            if let Some(a) = &open.asked {
                self.rec.paths.insert(a.clone());
            }
        }
        if open.mode == "r" && library(&open.path) {
            self.rec.library_reads += 1;
            return;
        }
        let key = (open.path.clone(), open.mode.clone(), open.result.clone());
        if !self.seen.insert(key) {
            return;
        }
        if self.rec.files.len() < MAX_ITEMS {
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

/// A read of the image's own libraries.
fn library(path: &str) -> bool {
    LIBRARY_PATHS.iter().any(|p| path.starts_with(p))
}

/// The Sentry's `[pid:tid] ` prefix (or `[pid(ns pid):tid(ns tid)] `).
fn task_prefix(msg: &str) -> Option<(u32, u32, &str)> {
    let inner = msg.strip_prefix('[')?;
    let (ids, rest) = inner.split_once("] ")?;
    let (pid, tid) = ids.split_once(':')?;
    let num = |s: &str| {
        s.split('(')
            .next()
            .and_then(|n| n.trim().parse::<u32>().ok())
    };
    Some((num(pid)?, num(tid)?, rest))
}

/// One system call's exit line, after the task's name.
#[derive(Debug)]
struct Exit<'a> {
    name: &'a str,
    /// The arguments as the Sentry printed them.
    args: &'a str,
    /// The errno, when the call failed.
    errno: Option<i32>,
}

impl Exit<'_> {
    fn ok(&self) -> bool {
        self.errno.is_none()
    }

    fn result(&self) -> String {
        self.errno.map_or("ok".into(), errno_name)
    }
}

/// `comm X name(args) = rv (0xrv)[ errno=N (text)] (elapsed)`. The task's
/// name is at most 15 bytes, so the call starts at one of the first 16
/// positions; of those from which the line parses as a traced call, the
/// last: text after the real start is the Sentry's fixed format for at
/// least 14 bytes, then a path under a writable (so not root-level)
/// directory, out of that window.
fn syscall_exit(rest: &str) -> Option<Exit<'_>> {
    let limit = rest.len().min(16);
    (0..limit)
        .rev()
        .filter(|&i| rest.is_char_boundary(i) && rest[i..].starts_with(" X "))
        .find_map(|i| {
            let call = &rest[i + 3..];
            let (name, tail) = call.split_once('(')?;
            if !TRACED.contains(&name) {
                return None;
            }
            let (args, errno) = split_result(tail)?;
            let exit = Exit { name, args, errno };
            valid_args(&exit).then_some(exit)
        })
}

/// Splits `args) = rv (0x..)[ errno=N (text)] (elapsed)` from the right.
fn split_result(tail: &str) -> Option<(&str, Option<i32>)> {
    // The elapsed time, then the optional errno, then the return value.
    let (head, elapsed) = tail.strip_suffix(')')?.rsplit_once(" (")?;
    if elapsed.contains(['(', ')']) {
        return None;
    }
    let (head, errno) = match head.rsplit_once(" errno=") {
        Some((h, e)) if !e.contains(" errno=") => {
            let (n, text) = e.split_once(" (")?;
            text.strip_suffix(')')?;
            (h, Some(n.parse::<i32>().ok()?))
        }
        _ => (head, None),
    };
    let (args, rv) = head.rsplit_once(") = ")?;
    let (num, hex) = rv.split_once(' ')?;
    num.parse::<i64>().ok()?;
    let hex = hex.strip_prefix("(0x")?.strip_suffix(')')?;
    if !hex.chars().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    Some((args, errno))
}

/// The arguments have the Sentry's format for the call.
fn valid_args(exit: &Exit<'_>) -> bool {
    match exit.name {
        "openat" => open_parts(exit.args, true).is_some(),
        "open" => open_parts(exit.args, false).is_some(),
        "creat" => exit
            .args
            .rsplit_once(", ")
            .is_some_and(|(p, m)| mode(m) && addr_path(p).is_some()),
        "socket" => exit
            .args
            .split_once(", ")
            .is_some_and(|(d, _)| d.starts_with("AF_") || d.starts_with("0x")),
        "connect" | "bind" => exit.args.starts_with("0x"),
        "seccomp" => exit.args.starts_with("0x"),
        _ => true,
    }
}

/// A file mode as the Sentry prints it (`0o644`).
fn mode(m: &str) -> bool {
    m.strip_prefix("0o")
        .is_some_and(|d| !d.is_empty() && d.chars().all(|c| ('0'..='7').contains(&c)))
}

/// Open flags as the Sentry prints them (`O_RDONLY|O_CLOEXEC`, `0x0`).
fn flags(f: &str) -> bool {
    !f.is_empty()
        && f.split('|').all(|p| {
            (p.starts_with("O_")
                && p[2..]
                    .chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'))
                || p.strip_prefix("0x")
                    .is_some_and(|h| h.chars().all(|c| c.is_ascii_hexdigit()))
        })
}

/// `0xADDR path`: the path.
fn addr_path(s: &str) -> Option<&str> {
    let (addr, path) = s.split_once(' ')?;
    addr.strip_prefix("0x")
        .filter(|h| !h.is_empty() && h.chars().all(|c| c.is_ascii_hexdigit()))?;
    Some(path)
}

/// An open's parts: the directory (for `openat`), the path, the flags.
/// `None` when the line has another shape; the path is `Err` when it could
/// be split from the directory more than one way: the whole text, and each
/// way (directory, path).
type OpenParts<'a> = (Option<&'a str>, Result<&'a str, Ambiguous<'a>>, &'a str);

/// An `openat` whose directory and path split more than one way.
type Ambiguous<'a> = (&'a str, Vec<(&'a str, &'a str)>);

fn open_parts(args: &str, at: bool) -> Option<OpenParts<'_>> {
    let (rest, m) = args.rsplit_once(", ")?;
    let (rest, fl) = rest.rsplit_once(", ")?;
    if !mode(m) || !flags(fl) {
        return None;
    }
    if !at {
        return Some((None, Ok(addr_path(rest)?), fl));
    }
    // `DIRFD, 0xADDR path`, DIRFD `AT_FDCWD /cwd` or `0xN /name`: split at
    // the one `, 0x… ` that leaves a directory of that shape.
    let splits: Vec<(&str, &str)> = rest
        .match_indices(", 0x")
        .map(|(i, _)| (&rest[..i], &rest[i + 2..]))
        .filter(|(dir, p)| dir_name(dir).is_some() && addr_path(p).is_some())
        .collect();
    match splits.as_slice() {
        [(dir, p)] => Some((dir_name(dir), Ok(addr_path(p)?), fl)),
        [] => None,
        _ => {
            let ways = splits
                .iter()
                .filter_map(|(d, p)| Some((dir_name(d)?, addr_path(p)?)))
                .collect();
            Some((None, Err((rest, ways)), fl))
        }
    }
}

/// The directory of `AT_FDCWD /cwd` or `0xN /name`, absolute.
fn dir_name(d: &str) -> Option<&str> {
    let name = match d.strip_prefix("AT_FDCWD ") {
        Some(cwd) => cwd,
        None => addr_path(d)?,
    };
    name.starts_with('/').then_some(name)
}

/// The record of one open, and every path it may have named (more than
/// one when it is ambiguous).
fn open_call(call: &Exit<'_>, pid: u32, tid: u32) -> Option<(KernelOpen, Vec<String>)> {
    let (dir, path, fl) = match call.name {
        "creat" => {
            let (p, _) = call.args.rsplit_once(", ")?;
            (None, Ok(addr_path(p)?), "O_WRONLY|O_CREAT|O_TRUNC")
        }
        name => open_parts(call.args, name == "openat")?,
    };
    let access = if fl.contains("O_RDWR") {
        "rw"
    } else if fl.contains("O_WRONLY") {
        "w"
    } else {
        "r"
    };
    let mode = format!(
        "{access}{}",
        if fl.contains("O_CREAT") {
            "+create"
        } else {
            ""
        }
    );
    let resolve = |dir: Option<&str>, p: &str| {
        let full = if p.starts_with('/') {
            p.to_string()
        } else {
            format!("{}/{p}", dir.unwrap_or("/"))
        };
        own_proc(&normalize(&full), pid, tid)
    };
    let (path, asked, named) = match path {
        Ok(p) => {
            let real = resolve(dir, p);
            let asked = (real != p).then(|| p.to_string());
            (real.clone(), asked, vec![real])
        }
        Err((whole, ways)) => (
            format!("(ambiguous) {}", shorten(whole)),
            None,
            ways.iter().map(|(d, p)| resolve(Some(d), p)).collect(),
        ),
    };
    let open = KernelOpen {
        path,
        asked,
        mode,
        result: call.result(),
        denied: false,
    };
    Some((open, named))
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

/// Puts gVisor's record into `outcome`: its files and sockets, seen by
/// gVisor's kernel, and an open the code's interpreter reports (of an
/// input or a result) that the Sentry never carried out makes the run
/// tampered.
pub fn attach(outcome: &mut Outcome, rec: SentryRecord) {
    if !rec.started {
        outcome.notes.push(
            "gVisor's log shows no start of the code (no second seccomp stage), so it lists no file of the code's"
                .into(),
        );
        return;
    }
    let kernel = outcome.audit.kernel.get_or_insert_with(|| KernelRecord {
        mode: Supervision::Errno,
        ..KernelRecord::default()
    });
    kernel.files = rec.files;
    kernel.library_reads = rec.library_reads;
    kernel.sockets = rec.sockets;
    kernel.truncated |= rec.truncated;
    kernel.witness = Some(Witness::Sentry);
    if !rec.truncated {
        // The interpreter's paths come as the runner shows them: cut, and
        // with bytes that are not UTF-8 escaped where the log has U+FFFD.
        let carried: HashSet<String> = rec
            .paths
            .iter()
            .map(|p| super::protocol::shown(p))
            .collect();
        let unseen: Vec<String> = outcome
            .audit
            .files_opened
            .iter()
            .filter(|f| !f.denied)
            .map(|f| normalize(&f.path))
            .filter(|p| p.starts_with("/data/") || p.starts_with("/out/"))
            .filter(|p| {
                !carried.contains(p) && !rec.paths.contains(&super::protocol::as_logged(p))
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
                "connect AF_INET 10.0.0.1:80 EHOSTUNREACH"
            ]
        );
        assert!(r.paths.contains("/data/sales.csv"));
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
        // A line the Sentry did not write in its format is not a call.
        let r = parse(&[stage, "[   2:   2] python3 X openat(/data/x) = 3"]);
        assert!(r.files.is_empty());
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

    #[test]
    fn the_install_script_registers_the_runtime_the_bot_looks_for() {
        let script = include_str!("../../scripts/install-gvisor");
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
        let good = args(&[
            "--network=none",
            "--strace",
            "--strace-syscalls=open,openat,creat,socket,connect,bind,seccomp,execve,execveat",
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
