//! The answer's audit block: what the code did, each line with who saw it
//! ([`Source`]), so a reader can tell a record from a claim.

use std::fmt::Write as _;

use crate::sandbox::{KernelRecord, Outcome, RunStatus, Source, Witness};

use super::{NAME_CHARS, cell_code_span, cut_chars, escape_line};

/// Up to `max` items, each cut at [`NAME_CHARS`], as code spans in a
/// table cell ([`cell_code_span`]), then "… and N more".
fn items(list: &[String], max: usize) -> String {
    let mut s = String::new();
    for it in list.iter().take(max) {
        if !s.is_empty() {
            s.push_str(", ");
        }
        s.push_str(&cell_code_span(&cut_chars(it, NAME_CHARS)));
    }
    if list.len() > max {
        let _ = write!(s, " … and {} more", list.len() - max);
    }
    s
}

/// One row: what, what happened (the bot's words and [`items`]), who saw it.
fn row(s: &mut String, what: &str, happened: &str, source: &str) {
    let _ = writeln!(s, "| {what} | {happened} | {source} |");
}

/// The audit block of the Markdown answer.
pub(super) fn audit_md(o: &Outcome, max: usize) -> String {
    let a = &o.audit;
    let mut s = String::new();
    if o.status == RunStatus::Tampered {
        let _ = writeln!(
            s,
            "**🚫 The run's record was tampered with** ({}), so nothing the code reported is taken: {}\n",
            Source::KernelObserved.label(),
            escape_line(&cut_chars(&o.tampered.join("; "), 1200))
        );
    }
    s.push_str(
        "**Audit** — each row says who saw it. What the code's own interpreter reports lives in \
         the code's process, so the code could have changed it.\n\n| | What happened | Source |\n| --- | --- | --- |\n",
    );
    let kernel = a.kernel.clone().unwrap_or_default();
    starts_row(&mut s, o, &kernel, max);
    files_row(&mut s, o, &kernel, max);
    changes_row(&mut s, &kernel, max);
    network_row(&mut s, o, &kernel, max);
    let interp = Source::Interpreter.label();
    if !a.refused.is_empty() {
        row(&mut s, "Refused in Python", &items(&a.refused, max), interp);
    }
    let imports = if a.imports.is_empty() {
        "none".to_string()
    } else {
        items(&a.imports, max)
    };
    row(&mut s, "Imports", &imports, interp);
    if !a.preloaded.is_empty() {
        row(
            &mut s,
            "Preloaded before the code arrived",
            &items(&a.preloaded, max),
            interp,
        );
    }
    if !a.preload_skipped.is_empty() {
        row(
            &mut s,
            "Not preloaded (the code had arrived)",
            &items(&a.preload_skipped, max),
            interp,
        );
    }
    if a.truncated || kernel.truncated {
        s.push_str("\n_More happened than was kept._\n");
    }
    s
}

/// Who saw the sandbox table's figures, in one cell.
pub(super) fn figures_source(o: &Outcome) -> String {
    let figures = match o.sources.get("exit_code") {
        Some(Source::KernelObserved) => {
            "exit, CPU time and peak memory: seen by the kernel (`wait4` to the runner, pid 1); the whole container's: its cgroup"
        }
        Some(Source::EngineObserved) => {
            "exit and time: seen by the engine and the bot (no report from the runner)"
        }
        _ => "exit, CPU time and peak memory: as the runner reported them",
    };
    format!(
        "{figures} · limits and network: {} · image: {}",
        Source::KernelEnforced.label(),
        Source::EngineObserved.label()
    )
}

fn starts_row(s: &mut String, o: &Outcome, k: &KernelRecord, max: usize) {
    let a = &o.audit;
    if k.refuses_starts() {
        let tried: Vec<String> = k.starts.iter().map(|t| t.line()).collect();
        let mut happened = "none: starting a program or a process is impossible".to_string();
        if !tried.is_empty() {
            let _ = write!(
                happened,
                " · {} attempt(s) refused: {}",
                tried.len(),
                items(&tried, max)
            );
        }
        row(
            s,
            "Programs started",
            &happened,
            Source::KernelEnforced.label(),
        );
        if !a.subprocess_attempts.is_empty() && tried.is_empty() {
            row(
                s,
                "Program starts refused in Python",
                &items(&a.subprocess_attempts, max),
                Source::Interpreter.label(),
            );
        }
    } else {
        let happened = if a.subprocess_attempts.is_empty() {
            "none reported".to_string()
        } else {
            items(&a.subprocess_attempts, max)
        };
        row(s, "Program starts", &happened, Source::Interpreter.label());
    }
}

fn files_row(s: &mut String, o: &Outcome, k: &KernelRecord, max: usize) {
    let a = &o.audit;
    if k.sees_opens() {
        let files: Vec<String> = k
            .files
            .iter()
            .map(|f| {
                let mut t = format!("{} ({})", f.path, f.mode);
                if let Some(asked) = &f.asked {
                    let _ = write!(t, " as {asked}");
                }
                if f.denied {
                    t.push_str(" refused");
                } else if f.result != "ok" {
                    let _ = write!(t, " {}", f.result);
                }
                t
            })
            .collect();
        let mut happened = if files.is_empty() {
            "none".to_string()
        } else {
            items(&files, max)
        };
        if k.library_reads > 0 {
            let _ = write!(
                happened,
                " · {} read(s) of the image's own libraries",
                k.library_reads
            );
        }
        row(s, "Files opened", &happened, opens_seen_by(k));
    } else {
        let files: Vec<String> = a
            .files_opened
            .iter()
            .map(|f| {
                format!(
                    "{} ({}){}",
                    f.path,
                    f.mode,
                    if f.denied { " refused" } else { "" }
                )
            })
            .collect();
        let happened = if files.is_empty() {
            "none reported".to_string()
        } else {
            items(&files, max)
        };
        row(
            s,
            "Files opened",
            &happened,
            "reported by the code's interpreter (Python's opens only; native code is not seen)",
        );
    }
}

/// The file-system changes without an open (rename, unlink, mkdir, ...),
/// when the record has any.
fn changes_row(s: &mut String, k: &KernelRecord, max: usize) {
    if k.changes.is_empty() {
        return;
    }
    let lines: Vec<String> = k.changes.iter().map(|c| c.line()).collect();
    row(
        s,
        "File system changes",
        &items(&lines, max),
        opens_seen_by(k).split(" (").next().unwrap_or_default(),
    );
}

/// Who saw the file opens and socket calls, in the answer's words.
fn opens_seen_by(k: &KernelRecord) -> &'static str {
    match k.witness() {
        Some(Witness::Sentry) => {
            "seen by gVisor's kernel (its log of each call it carried out, read by the bot outside the sandbox; Python and native code alike; paths and addresses as the code gave them at the call's entry, which a thread of the code's can change before the call reads them again)"
        }
        _ => "seen by the kernel (each open handed to the runner, Python and native code alike)",
    }
}

fn network_row(s: &mut String, o: &Outcome, k: &KernelRecord, max: usize) {
    let a = &o.audit;
    let calls: Vec<String> = k
        .sockets
        .iter()
        .map(|c| {
            let result = match c.result.as_deref() {
                Some("ok") | None => "",
                Some(r) => r,
            };
            format!(
                "{} {}{}{}{result}",
                c.call,
                c.target,
                if c.denied { " refused" } else { "" },
                if result.is_empty() { "" } else { " " }
            )
        })
        .collect();
    let mut happened = "none: the container's network is `none` (loopback only)".to_string();
    if !calls.is_empty() {
        let _ = write!(
            happened,
            " · socket calls ({}): {}",
            opens_seen_by(k).split(" (").next().unwrap_or_default(),
            items(&calls, max)
        );
    }
    row(s, "Network", &happened, Source::KernelEnforced.label());
    if !a.network_attempts.is_empty() {
        row(
            s,
            "Network attempts in Python",
            &items(&a.network_attempts, max),
            Source::Interpreter.label(),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::{KernelOpen, StartAttempt, Supervision};

    fn outcome(kernel: Option<KernelRecord>) -> Outcome {
        let mut o: Outcome = serde_json::from_value(serde_json::json!({
            "status": "ok", "exit_code": 0, "signal": null, "duration_ms": 5, "collected_ms": 6,
            "stdout": "", "stderr": "", "stdout_truncated": false, "stderr_truncated": false,
            "timed_out": false, "oom_killed": false,
            "image": {"reference": "i", "id": "", "digests": [], "labels": {}},
            "limits": serde_json::to_value(crate::sandbox::Limits::default()).unwrap(),
            "resources": {"peak_memory_bytes": 1, "cpu_time_ms": 1},
            "audit": {"files_opened": [{"path": "/data/forged.csv", "mode": "r"}],
                      "network_attempts": [], "subprocess_attempts": ["os.system 'id'"],
                      "imports": ["pandas"], "refused": []},
            "artifacts": [], "code_sha256": "", "container": "c"
        }))
        .unwrap();
        o.audit.kernel = kernel;
        o
    }

    fn notify() -> KernelRecord {
        KernelRecord {
            mode: Supervision::Notify,
            files: vec![
                KernelOpen {
                    path: "/data/sales.csv".into(),
                    asked: None,
                    mode: "r".into(),
                    result: "ok".into(),
                    denied: false,
                },
                KernelOpen {
                    path: "/etc/passwd".into(),
                    asked: Some("/proc/self/root/etc/passwd".into()),
                    mode: "r".into(),
                    result: "EACCES".into(),
                    denied: true,
                },
            ],
            library_reads: 40,
            witness: None,
            starts: vec![StartAttempt {
                call: "execve".into(),
                path: Some("/bin/sh".into()),
                argv: vec!["sh".into(), "-c".into(), "id".into()],
                flags: None,
            }],
            sockets: vec![],
            changes: vec![],
            truncated: false,
        }
    }

    #[test]
    fn changes_to_the_file_system_have_their_row() {
        let md = audit_md(&outcome(Some(notify())), 10);
        assert!(!md.contains("File system changes"), "{md}");
        let mut k = notify();
        k.changes = vec![
            crate::sandbox::FileChange {
                call: "renameat2".into(),
                path: "/tmp/a".into(),
                to: Some("/out/b".into()),
                result: "ok".into(),
                denied: false,
            },
            crate::sandbox::FileChange {
                call: "unlink".into(),
                path: "/data/sales.csv".into(),
                to: None,
                result: "EACCES".into(),
                denied: true,
            },
        ];
        let md = audit_md(&outcome(Some(k)), 10);
        assert!(
            md.contains("| File system changes | `renameat2 /tmp/a → /out/b`, `unlink /data/sales.csv refused` | seen by the kernel |"),
            "{md}"
        );
    }

    #[test]
    fn under_supervision_files_and_starts_come_from_the_kernel() {
        let md = audit_md(&outcome(Some(notify())), 10);
        assert!(
            md.contains("| Files opened | `/data/sales.csv (r)`, `/etc/passwd (r) as /proc/self/root/etc/passwd refused` · 40 read(s) of the image's own libraries | seen by the kernel"),
            "{md}"
        );
        // The interpreter's list (here naming a file no system call opened)
        // is not what the answer shows as the files opened.
        assert!(!md.contains("forged.csv"), "{md}");
        assert!(
            md.contains("| Programs started | none: starting a program or a process is impossible · 1 attempt(s) refused: `execve /bin/sh [sh -c id]` | enforced by the kernel |"),
            "{md}"
        );
        assert!(
            md.contains("| Imports | `pandas` | reported by the code's interpreter |"),
            "{md}"
        );
    }

    #[test]
    fn under_gvisor_with_its_log_files_and_sockets_come_from_its_kernel() {
        let k = KernelRecord {
            mode: Supervision::Errno,
            witness: Some(Witness::Sentry),
            sockets: vec![crate::sandbox::SocketCall {
                call: "connect".into(),
                target: "AF_INET 10.0.0.1:80".into(),
                denied: false,
                result: Some("EHOSTUNREACH".into()),
            }],
            ..notify()
        };
        let md = audit_md(&outcome(Some(k)), 10);
        assert!(
            md.contains("| Files opened | `/data/sales.csv (r)`, `/etc/passwd (r) as /proc/self/root/etc/passwd refused` · 40 read(s) of the image's own libraries | seen by gVisor's kernel (its log"),
            "{md}"
        );
        assert!(!md.contains("forged.csv"), "{md}");
        assert!(
            md.contains(
                "socket calls (seen by gVisor's kernel): `connect AF_INET 10.0.0.1:80 EHOSTUNREACH`"
            ),
            "{md}"
        );
    }

    #[test]
    fn without_notifications_the_files_are_the_interpreters_word() {
        // gVisor: starts refused by the kernel, opens only as Python saw them.
        let k = KernelRecord {
            mode: Supervision::Errno,
            ..KernelRecord::default()
        };
        let md = audit_md(&outcome(Some(k)), 10);
        assert!(md.contains("| Programs started | none: starting a program or a process is impossible | enforced by the kernel |"), "{md}");
        assert!(md.contains("| Program starts refused in Python | `os.system 'id'` | reported by the code's interpreter |"), "{md}");
        assert!(md.contains("| Files opened | `/data/forged.csv (r)` | reported by the code's interpreter (Python's opens only"), "{md}");
        // A record from before the second stage claims nothing of the kernel.
        let md = audit_md(&outcome(None), 10);
        assert!(
            md.contains(
                "| Program starts | `os.system 'id'` | reported by the code's interpreter |"
            ),
            "{md}"
        );
        assert!(!md.contains("impossible"), "{md}");
    }

    #[test]
    fn the_sandbox_figures_name_their_source() {
        let mut o = outcome(Some(notify()));
        o.sources = crate::sandbox::sources(o.audit.kernel.as_ref(), true);
        assert!(
            figures_source(&o).starts_with("exit, CPU time and peak memory: seen by the kernel")
        );
        o.sources = crate::sandbox::sources(None, false);
        assert!(figures_source(&o).starts_with("exit and time: seen by the engine"));
    }

    #[test]
    fn a_path_cannot_break_the_table() {
        let mut k = notify();
        k.files[0].path = "/tmp/a|b`c\nd".into();
        let md = audit_md(&outcome(Some(k)), 10);
        assert!(md.contains("``/tmp/a\\|b`c\\nd (r)``"), "{md}");
    }

    #[test]
    fn a_tampered_run_says_so_first() {
        let mut o = outcome(Some(notify()));
        o.status = RunStatus::Tampered;
        o.tampered = vec![
            "the interpreter's record names an open of /data/forged.csv that the kernel never saw"
                .into(),
        ];
        let md = audit_md(&o, 10);
        assert!(
            md.starts_with("**🚫 The run's record was tampered with**"),
            "{md}"
        );
        assert!(md.contains("never saw"), "{md}");
        let clean = audit_md(&outcome(Some(notify())), 10);
        assert!(!clean.contains("tampered"), "{clean}");
    }
}
