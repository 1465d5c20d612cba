//! One line of the Sentry's strace log, read in the Sentry's own formats
//! (gVisor's `pkg/sentry/strace`, release 20221219): the `[pid:tid]`
//! prefix, the call, its arguments split by their shapes, and its result,
//! anchored on the line's end.
//!
//! An exit line is `comm X name(arg, arg, …) = rv (0xrv)[ errno=N (text)]
//! (elapsed)`. The code controls the task's name (`comm`, up to 15 bytes)
//! and the text of every path; the Sentry controls everything else. So the
//! result is read from the right, where nothing of the code's follows it,
//! and the arguments are split at `, ` only where every argument then has
//! its call's shape: a path may hold `, `, `) = ` or ` errno=`, a number
//! or a flag word may not.

use super::TRACED;

/// How many `, ` an argument list may hold before its ways to split are
/// not worked out (a path of the code's full of them): the line is then
/// kept whole, marked.
const MAX_CUTS: usize = 16;

/// The longest number, flag word list, mode or time structure the Sentry
/// prints; a longer text is a path's.
const MAX_FIXED: usize = 160;

/// How many ways to split one line are kept (for the interpreter check).
const MAX_WAYS: usize = 8;

/// The shape of one argument as the Sentry prints it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Arg {
    /// A descriptor: `AT_FDCWD /cwd`, `0x3 /name`, `0x3 socket:[3]`,
    /// `0x3 (bad FD)`; the name is the Sentry's (resolved).
    Fd,
    /// A path as the code gave it: `0xADDR text`, or `<null>`.
    Path,
    /// Open flags: `O_RDONLY|O_CLOEXEC`, `0x0`.
    Flags,
    /// A file mode: `0o644`, `S_IFIFO|S_ISUID|0o755`.
    Mode,
    /// A number: `0x1ff`.
    Hex,
    /// A time structure: `null`, `0xADDR {sec=1 nsec=0}`,
    /// `0xADDR {actime=1, modtime=2}`, `0xADDR (error decoding …)`.
    Time,
}

/// The arguments of each traced call whose arguments the record reads.
pub(super) fn shape(name: &str) -> Option<&'static [Arg]> {
    use Arg::*;
    Some(match name {
        "open" => &[Path, Flags, Mode],
        "openat" => &[Fd, Path, Flags, Mode],
        "creat" | "mkdir" | "chmod" => &[Path, Mode],
        "seccomp" => &[Hex, Hex, Hex],
        "rename" | "link" | "symlink" => &[Path, Path],
        "renameat" => &[Fd, Path, Hex, Path],
        "renameat2" | "linkat" => &[Fd, Path, Hex, Path, Hex],
        "symlinkat" => &[Path, Fd, Path],
        "unlink" | "rmdir" => &[Path],
        "unlinkat" | "futimesat" | "mkdirat" => &[Fd, Path, Hex],
        "truncate" => &[Path, Hex],
        "ftruncate" => &[Fd, Hex],
        "utime" | "utimes" => &[Path, Time],
        "utimensat" => &[Fd, Path, Time, Hex],
        "mknod" => &[Path, Mode, Hex],
        "mknodat" => &[Fd, Path, Mode, Hex],
        "fchmod" => &[Fd, Mode],
        "fchmodat" => &[Fd, Path, Mode],
        "chown" | "lchown" => &[Path, Hex, Hex],
        "fchown" => &[Fd, Hex, Hex],
        "fchownat" => &[Fd, Path, Hex, Hex, Hex],
        _ => return None,
    })
}

/// How a line's arguments split into their call's shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Split<'a> {
    /// One way: each argument's text.
    One(Vec<&'a str>),
    /// More than one way (a name holding `, 0x1 `): each way, up to
    /// [`MAX_WAYS`], and the text that holds every way's names.
    Many(Vec<Vec<&'a str>>, &'a str),
    /// Too many `, ` to work the ways out: the whole text.
    Unsplit(&'a str),
    /// A call whose arguments the record does not split (sockets, program
    /// starts): the whole text.
    Free(&'a str),
}

/// One system call's exit line, after the task's name.
#[derive(Debug)]
pub(super) struct Exit<'a> {
    pub(super) name: &'a str,
    /// The arguments as the Sentry printed them.
    pub(super) args: &'a str,
    /// The arguments split by their shapes.
    pub(super) split: Split<'a>,
    /// The errno, when the call failed.
    pub(super) errno: Option<i32>,
}

impl Exit<'_> {
    pub(super) fn ok(&self) -> bool {
        self.errno.is_none()
    }

    pub(super) fn result(&self) -> String {
        self.errno.map_or("ok".into(), super::errno_name)
    }
}

/// The Sentry's `[pid:tid] ` prefix (or `[pid(ns pid):tid(ns tid)] `).
pub(super) fn task_prefix(msg: &str) -> Option<(u32, u32, &str)> {
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

/// True when `rest` (after the prefix) is an exit line: ` X ` where the
/// call can start, after a task name of at most 15 bytes.
pub(super) fn is_exit(rest: &str) -> bool {
    starts(rest).next().is_some()
}

/// Where the call may start: ` X ` within the first 16 bytes, last first.
fn starts(rest: &str) -> impl Iterator<Item = usize> + '_ {
    let limit = rest.len().min(16);
    (0..limit)
        .rev()
        .filter(|&i| rest.is_char_boundary(i) && rest[i..].starts_with(" X "))
}

/// `comm X name(args) = rv (0xrv)[ errno=N (text)] (elapsed)`. The task's
/// name is at most 15 bytes, so the call starts at one of the first 16
/// positions; of those from which the line parses as a traced call, the
/// last: text after the real start is the Sentry's fixed format for at
/// least 14 bytes, then a path under a writable (so not root-level)
/// directory, out of that window.
pub(super) fn syscall_exit(rest: &str) -> Option<Exit<'_>> {
    starts(rest).find_map(|i| {
        let call = &rest[i + 3..];
        let (name, tail) = call.split_once('(')?;
        if !TRACED.contains(&name) {
            return None;
        }
        let (args, errno) = split_result(tail)?;
        let split = match shape(name) {
            Some(shape) => split_args(args, shape)?,
            None if free_args(name, args) => Split::Free(args),
            None => return None,
        };
        Some(Exit {
            name,
            args,
            split,
            errno,
        })
    })
}

/// The arguments of a call the record does not split have its shape's
/// start (socket: a family; connect, bind: a descriptor).
fn free_args(name: &str, args: &str) -> bool {
    match name {
        "socket" => args
            .split_once(", ")
            .is_some_and(|(d, _)| d.starts_with("AF_") || d.starts_with("0x")),
        "connect" | "bind" => args.starts_with("0x"),
        _ => true,
    }
}

/// Splits `args) = rv (0xrv)[ errno=N (text)] (elapsed)` from the right:
/// the elapsed time ends the line, the errno part (when the call failed)
/// ends just before it, the return value before that. Each has a fixed
/// shape, so a path holding ` errno=` or `) = ` moves none of them.
pub(super) fn split_result(tail: &str) -> Option<(&str, Option<i32>)> {
    let (head, elapsed) = tail.strip_suffix(')')?.rsplit_once(" (")?;
    if elapsed.is_empty() || elapsed.contains(['(', ')', ' ']) {
        return None;
    }
    let (head, errno) = match failed(head) {
        Some((h, n)) => (h, Some(n)),
        None => (head, None),
    };
    let (args, rv) = head.rsplit_once(") = ")?;
    let (num, hex) = rv.split_once(' ')?;
    num.parse::<i64>().ok()?;
    if !hex_digits(hex.strip_prefix("(0x")?.strip_suffix(')')?) {
        return None;
    }
    Some((args, errno))
}

/// `… (0xrv) errno=N (text)`: the text without parentheses, the number
/// digits only, right after the return value.
fn failed(head: &str) -> Option<(&str, i32)> {
    let (h, text) = head.strip_suffix(')')?.rsplit_once(" (")?;
    if text.contains(['(', ')']) {
        return None;
    }
    let (h, n) = h.rsplit_once(" errno=")?;
    if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) || !h.ends_with(')') {
        return None;
    }
    Some((h, n.parse().ok()?))
}

/// Every way `args` splits at `, ` into `shape` (see [`Split`]); `None`
/// when there is none (not a line of the Sentry's).
fn split_args<'a>(args: &'a str, shape: &[Arg]) -> Option<Split<'a>> {
    let cuts: Vec<usize> = args.match_indices(", ").map(|(i, _)| i).collect();
    if cuts.len() > MAX_CUTS {
        return Some(Split::Unsplit(args));
    }
    let mut walk = Walk {
        args,
        shape,
        cuts: &cuts,
        dead: vec![false; shape.len() * (cuts.len() + 1)],
        now: Vec::new(),
        ways: Vec::new(),
    };
    walk.from(0, 0);
    let mut ways = walk.ways;
    match ways.len() {
        0 => None,
        1 => Some(Split::One(ways.pop()?)),
        _ => {
            // From the first named argument's start to the last's end, in
            // any way.
            let base = args.as_ptr() as usize;
            let span = |w: &Vec<&str>| {
                let named: Vec<&str> = w
                    .iter()
                    .zip(shape)
                    .filter(|(_, a)| matches!(a, Arg::Fd | Arg::Path))
                    .map(|(t, _)| *t)
                    .collect();
                let first = named.first().map_or(0, |t| t.as_ptr() as usize - base);
                let last = named
                    .last()
                    .map_or(args.len(), |t| t.as_ptr() as usize - base + t.len());
                (first, last)
            };
            let from = ways.iter().map(|w| span(w).0).min().unwrap_or(0);
            let to = ways.iter().map(|w| span(w).1).max().unwrap_or(args.len());
            Some(Split::Many(ways, &args[from..to]))
        }
    }
}

/// A search of the ways to split: argument `k` starts at piece `i`.
struct Walk<'a, 's> {
    args: &'a str,
    shape: &'s [Arg],
    /// Where each `, ` is.
    cuts: &'s [usize],
    /// (argument, piece) from which no way completes.
    dead: Vec<bool>,
    now: Vec<&'a str>,
    ways: Vec<Vec<&'a str>>,
}

impl<'a> Walk<'a, '_> {
    fn from(&mut self, k: usize, i: usize) {
        let pieces = self.cuts.len() + 1;
        if k == self.shape.len() || i == pieces || self.dead[k * pieces + i] {
            return;
        }
        let found = self.ways.len();
        let start = if i == 0 { 0 } else { self.cuts[i - 1] + 2 };
        let last = k + 1 == self.shape.len();
        for j in i..pieces {
            if self.ways.len() >= MAX_WAYS {
                return;
            }
            // The last argument ends the list; the others end at a cut
            // that leaves a piece for each argument after them.
            if last != (j + 1 == pieces) || (!last && pieces - j - 1 < self.shape.len() - k - 1) {
                continue;
            }
            let end = if j + 1 == pieces {
                self.args.len()
            } else {
                self.cuts[j]
            };
            let text = &self.args[start..end];
            if !fits(self.shape[k], text) {
                continue;
            }
            self.now.push(text);
            if last {
                self.ways.push(self.now.clone());
            } else {
                self.from(k + 1, j + 1);
            }
            self.now.pop();
        }
        if self.ways.len() == found {
            self.dead[k * pieces + i] = true;
        }
    }
}

/// True when `text` has the shape `arg`.
fn fits(arg: Arg, text: &str) -> bool {
    if !matches!(arg, Arg::Fd | Arg::Path) && text.len() > MAX_FIXED {
        return false;
    }
    match arg {
        Arg::Fd => fd_name(text).is_some(),
        Arg::Path => text == "<null>" || addr_path(text).is_some(),
        Arg::Flags => flags(text),
        Arg::Mode => mode(text),
        Arg::Hex => text.strip_prefix("0x").is_some_and(hex_digits),
        Arg::Time => time(text),
    }
}

fn hex_digits(h: &str) -> bool {
    !h.is_empty() && h.bytes().all(|b| b.is_ascii_hexdigit())
}

/// A flag word (`O_CLOEXEC`, `S_IFIFO`) or a hex number (`0x200000`).
fn word_or_hex(p: &str) -> bool {
    p.strip_prefix("0x").is_some_and(hex_digits)
        || (p.len() > 2
            && p.bytes()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == b'_'))
}

/// A file mode: its type and extra bits (`S_IFIFO|S_ISUID|`), then
/// `0o` and octal digits.
pub(super) fn mode(m: &str) -> bool {
    let (bits, perm) = m.rsplit_once('|').unwrap_or(("", m));
    perm.strip_prefix("0o")
        .is_some_and(|d| !d.is_empty() && d.bytes().all(|c| (b'0'..=b'7').contains(&c)))
        && (bits.is_empty() || bits.split('|').all(word_or_hex))
}

/// Open flags as the Sentry prints them (`O_RDONLY|O_CLOEXEC`, `0x0`).
pub(super) fn flags(f: &str) -> bool {
    !f.is_empty() && f.split('|').all(word_or_hex)
}

/// A time structure, or `null`.
fn time(t: &str) -> bool {
    if t == "null" {
        return true;
    }
    let Some((addr, rest)) = t.split_once(' ') else {
        return false;
    };
    if !addr.strip_prefix("0x").is_some_and(hex_digits) {
        return false;
    }
    if let Some(inner) = rest.strip_prefix('{').and_then(|r| r.strip_suffix('}')) {
        return inner
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'=' | b',' | b' ' | b'-'));
    }
    rest.strip_prefix("(error decoding ")
        .and_then(|r| r.strip_suffix(')'))
        .is_some_and(|r| !r.contains(['(', ')']))
}

/// `0xADDR path`: the path (the Sentry's copy of it at the call's entry).
pub(super) fn addr_path(s: &str) -> Option<&str> {
    // An address is at most 18 bytes: look no further for its end.
    let space = s.bytes().take(20).position(|b| b == b' ')?;
    let (addr, path) = (&s[..space], &s[space + 1..]);
    addr.strip_prefix("0x").filter(|h| hex_digits(h))?;
    Some(path)
}

/// The name of a descriptor argument: `AT_FDCWD /cwd` or `0xN name`,
/// where the Sentry's name is absolute, a kind (`socket:[3]`) or
/// `(bad FD)`.
pub(super) fn fd_name(d: &str) -> Option<&str> {
    let name = match d.strip_prefix("AT_FDCWD ") {
        Some(cwd) => cwd,
        None => addr_path(d)?,
    };
    let kind = name.split_once(":[").is_some_and(|(k, _)| {
        !k.is_empty() && k.bytes().all(|c| c.is_ascii_lowercase() || c == b'_')
    });
    (name.starts_with('/') || kind || name == "(bad FD)").then_some(name)
}

/// The descriptor number of `0xN name` (`None` for `AT_FDCWD`).
pub(super) fn fd_number(d: &str) -> Option<&str> {
    d.split_once(' ')
        .map(|(n, _)| n)
        .filter(|n| n.starts_with("0x"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_result_is_read_from_the_lines_end() {
        // A path holding ` errno=` (a directory of the code's): the call
        // succeeded, and the path is whole.
        let tail = "AT_FDCWD /tmp, 0x7f /tmp/a errno=2 (x)/f.txt, O_WRONLY|O_CREAT, 0o666) = 3 (0x3) (16.7µs)";
        let (args, errno) = split_result(tail).unwrap();
        assert_eq!(errno, None);
        assert!(args.ends_with("/tmp/a errno=2 (x)/f.txt, O_WRONLY|O_CREAT, 0o666"));
        let tail = "AT_FDCWD /tmp, 0x7f /tmp/x errno=5 (y), O_RDONLY, 0o0) = 0 (0x0) errno=2 (no such file or directory) (2µs)";
        let (args, errno) = split_result(tail).unwrap();
        assert_eq!(errno, Some(2));
        assert!(args.ends_with("/tmp/x errno=5 (y), O_RDONLY, 0o0"));
        // Not the Sentry's ending: no result.
        assert_eq!(split_result("0x1 /x) = 3"), None);
        assert_eq!(split_result("0x1 /x) = 3 (0x3) errno=x (y) (1µs)"), None);
    }

    #[test]
    fn arguments_split_only_where_each_has_its_shape() {
        let s = split_args(
            "0x3 /tmp, 0x7f d2, 0x3, 0x7f d, 3",
            shape("renameat").unwrap(),
        );
        assert_eq!(
            s,
            Some(Split::One(vec!["0x3 /tmp", "0x7f d2", "0x3", "0x7f d, 3"]))
        );
        let s = split_args(
            "AT_FDCWD /tmp/q, 0x1 /data/s.csv, 0x7f x.csv, O_RDONLY, 0o0",
            shape("openat").unwrap(),
        );
        let Some(Split::Many(ways, whole)) = s else {
            panic!("{s:?}")
        };
        assert_eq!(ways.len(), 2);
        assert_eq!(whole, "AT_FDCWD /tmp/q, 0x1 /data/s.csv, 0x7f x.csv");
        assert_eq!(split_args("0x1 /a, 0o7x", shape("chmod").unwrap()), None);
        assert!(mode("S_IFIFO|S_ISUID|0o644") && !mode("S_IFIFO|0o8"));
        let many = format!("0x1 /tmp/{}, 0o644", ", ".repeat(20));
        assert!(matches!(
            split_args(&many, shape("chmod").unwrap()),
            Some(Split::Unsplit(_))
        ));
    }
}
