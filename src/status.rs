//! How a run ends: one [`Status`] decides both the `status` output and the
//! process exit status. Only `main` turns it into the process exit.
//!
//! The table in docs/github-action.md ("Exit status") and the "Exit status"
//! sentences of docs/commands.md and docs/cli.md are held against
//! [`Status::exit_code`] by a test.

/// How a command or an action run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Status {
    /// The result is validated (the CLI: the code ran and exited 0).
    Ok,
    /// The code waits for a human approval.
    NeedsApproval,
    /// A plan (`/compute plan`): the code and its verdict are shown, nothing ran.
    Planned,
    /// An event or comment the bot does not act on, or a usage reply.
    Ignored,
    /// The commenter may not do what they asked; nothing ran.
    Refused,
    /// A maintainer denied the code waiting for approval; nothing ran.
    Denied,
    /// No valid result: the code failed or was stopped, unusable inputs, no
    /// model and no code, an approval that cannot be honoured, GitHub could
    /// not be read.
    Failed,
    /// Configuration or usage: a missing variable, a malformed event file, a
    /// bad policy file, a bad model setting, no Docker, a bad flag.
    Error,
    /// SIGINT / SIGTERM (a cancelled job) stopped the run.
    Interrupted,
}

/// Which front end ends: the terminal and the Action differ in one row
/// (a waiting approval is exit 3 in a terminal, 0 in a workflow).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Front {
    /// `compute-bot run` and `compute-bot policy check`.
    Cli,
    /// `compute-bot action`.
    Action,
}

impl Status {
    /// Every status, for tables and tests.
    #[cfg(test)]
    const ALL: [Status; 9] = [
        Status::Ok,
        Status::NeedsApproval,
        Status::Planned,
        Status::Ignored,
        Status::Refused,
        Status::Denied,
        Status::Failed,
        Status::Error,
        Status::Interrupted,
    ];

    /// The `status` output of the action.
    pub(crate) const fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::NeedsApproval => "needs_approval",
            Status::Planned => "planned",
            Status::Ignored => "ignored",
            Status::Refused => "refused",
            Status::Denied => "denied",
            Status::Failed => "failed",
            Status::Error => "error",
            Status::Interrupted => "interrupted",
        }
    }

    /// The process exit status for `front`: 0 done (in a workflow also a
    /// waiting approval, so the workflow is not red while it waits), 1 no
    /// valid result, 2 configuration or usage, 3 a waiting approval in a
    /// terminal, 130 interrupted.
    pub(crate) const fn exit_code(self, front: Front) -> i32 {
        match (self, front) {
            (
                Status::Ok | Status::Planned | Status::Ignored | Status::Refused | Status::Denied,
                _,
            ) => 0,
            (Status::NeedsApproval, Front::Action) => 0,
            (Status::NeedsApproval, Front::Cli) => 3,
            (Status::Failed, _) => 1,
            (Status::Error, _) => 2,
            (Status::Interrupted, _) => 130,
        }
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What `main` turns into the process exit: a status, the front end it
/// ended in, and whether the thread is missing what it should show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exit {
    /// How the run ended (the `status` output).
    pub(crate) status: Status,
    /// Which front end.
    pub(crate) front: Front,
    /// The action could not post what the thread should show (the summary
    /// still has it): at least exit 1, whatever the status.
    pub(crate) unposted: bool,
}

impl Exit {
    /// A terminal command ended with `status`.
    pub const fn cli(status: Status) -> Exit {
        Exit {
            status,
            front: Front::Cli,
            unposted: false,
        }
    }

    /// The action ended with `status`.
    pub(crate) const fn action(status: Status) -> Exit {
        Exit {
            status,
            front: Front::Action,
            unposted: false,
        }
    }

    /// The same, marked as not shown in the thread.
    pub(crate) const fn unposted(mut self, unposted: bool) -> Exit {
        self.unposted = unposted;
        self
    }

    /// The process exit status: [`Status::exit_code`], at least 1 when
    /// something could not be posted.
    pub const fn code(self) -> i32 {
        let code = self.status.exit_code(self.front);
        if self.unposted && code == 0 { 1 } else { code }
    }
}

/// Resolves when the process is asked to stop: Ctrl-C (SIGINT) or SIGTERM
/// (a cancelled CI job). [`crate::cli::main`] is the one place that waits for
/// it; dropping the command's future then removes its sandbox containers.
pub(crate) async fn stop_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(path: &str) -> String {
        std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path))
            .unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    /// The words inside backticks.
    fn ticked(text: &str) -> Vec<&str> {
        text.split('`').skip(1).step_by(2).collect()
    }

    /// The "Exit status: N ...; M ..." sentence that follows `after`, as
    /// (code, text) pairs; lines are joined first.
    fn sentence(text: &str, after: &str) -> Vec<(i32, String)> {
        let start = text.find(after).unwrap_or_else(|| panic!("no `{after}`"));
        let rest = &text[start..];
        let rest = &rest[rest.find("Exit status:").expect("an exit status sentence") + 12..];
        let para = rest.split("\n\n").next().unwrap().replace('\n', " ");
        let mut out: Vec<(i32, String)> = Vec::new();
        for part in para.split("; ") {
            let part = part.trim();
            let (n, words) = part.split_once(' ').unwrap_or((part, ""));
            match n.parse::<i32>() {
                Ok(n) => out.push((n, words.to_string())),
                // A `;` inside a parenthesis: still the previous code's text.
                Err(_) => out.last_mut().expect("starts with a code").1 += part,
            }
        }
        out
    }

    #[test]
    fn the_action_docs_table_is_the_enum() {
        let text = doc("docs/github-action.md");
        let table = &text[text
            .find("### Exit status")
            .expect("the exit status section")..];
        let rows: Vec<(i32, &str, &str)> = table
            .lines()
            .skip_while(|l| !l.starts_with('|'))
            .take_while(|l| l.starts_with('|'))
            .filter_map(|l| {
                let cells: Vec<&str> = l.split('|').map(str::trim).collect();
                Some((cells[1].parse().ok()?, cells[2], cells[3]))
            })
            .collect();
        assert!(rows.len() >= 6, "{rows:?}");
        for s in Status::ALL {
            let code = s.exit_code(Front::Action);
            let row = rows
                .iter()
                .find(|(_, _, st)| ticked(st).contains(&s.as_str()));
            match (s, row) {
                (Status::Interrupted, _) => {
                    assert!(
                        rows.iter()
                            .any(|(n, w, _)| *n == code && w.contains("interrupted"))
                    )
                }
                (_, Some((n, _, _))) => assert_eq!(*n, code, "{s} in docs/github-action.md"),
                (_, None) => panic!("docs/github-action.md does not list `{s}`"),
            }
        }
        // The row for a result that could not be posted: the status stays,
        // the exit is at least 1.
        let (n, _, _) = rows
            .iter()
            .find(|(_, _, st)| st.contains("the run's status"))
            .expect("the unposted row");
        for s in [Status::Ok, Status::NeedsApproval, Status::Refused] {
            assert_eq!(Exit::action(s).unposted(true).code(), *n);
        }
        assert_eq!(Exit::action(Status::Error).unposted(true).code(), 2);
        // Every documented code is one the enum gives.
        for (n, _, _) in &rows {
            assert!(
                Status::ALL.iter().any(|s| s.exit_code(Front::Action) == *n),
                "{n}"
            );
        }
    }

    #[test]
    fn the_exit_sentences_of_the_docs_are_the_enum() {
        // The Action: statuses in backticks.
        let action = sentence(&doc("docs/commands.md"), "In short: `/compute");
        for s in Status::ALL {
            let Some((n, _)) = action.iter().find(|(_, w)| ticked(w).contains(&s.as_str())) else {
                assert_eq!(
                    s,
                    Status::Interrupted,
                    "docs/commands.md does not list `{s}`"
                );
                continue;
            };
            assert_eq!(*n, s.exit_code(Front::Action), "{s} in docs/commands.md");
        }
        // The terminal: each code's words.
        let cli = sentence(&doc("docs/cli.md"), "--format json");
        let words = [
            (Status::Ok, "ran"),
            (Status::Failed, "failed"),
            (Status::Error, "configuration"),
            (Status::NeedsApproval, "approval"),
            (Status::Interrupted, "interrupted"),
        ];
        assert_eq!(cli.len(), words.len(), "{cli:?}");
        for (s, w) in words {
            let code = s.exit_code(Front::Cli);
            assert!(
                cli.iter().any(|(n, t)| *n == code && t.contains(w)),
                "docs/cli.md: exit {code} should say `{w}`: {cli:?}"
            );
        }
        for (n, _) in &action {
            assert!(
                Status::ALL.iter().any(|s| s.exit_code(Front::Action) == *n),
                "{n}"
            );
        }
    }
}
