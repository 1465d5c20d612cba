//! The comment command: `/compute [key=value ...] <goal>`, extra context on the
//! following lines, and optionally a fenced python block with the exact code;
//! `/compute plan ...` the same, to plan only; `/compute run` to run the plan.

use std::collections::BTreeMap;

/// What `/compute <goal>` and `/compute plan <goal>` write: the options,
/// the goal, the lines after it and the code. A run and a plan take the
/// same, so each handler builds its run from one of these
/// (`RunSpec::asked`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Ask {
    /// `key=value` options written before the goal (quoted values allowed).
    pub options: BTreeMap<String, String>,
    /// The goal: the rest of the first line.
    pub goal: String,
    /// The following lines, without the code block, trimmed.
    pub context: String,
    /// The first fenced python block anywhere in the comment.
    pub code: Option<String>,
}

impl Ask {
    /// The `key=value` options a run or a plan does not know.
    pub fn unknown_options(&self) -> Vec<&str> {
        self.options
            .keys()
            .filter(|k| !matches!(k.as_str(), "inputs" | "code"))
            .map(String::as_str)
            .collect()
    }
}

/// A parsed comment command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// Run a computation.
    Run(Ask),
    /// `/compute approve [<sha256 prefix>]`: approve the pending code. With a
    /// hex prefix (at least 8 digits, as shown next to the code), only code
    /// whose sha256 starts with it is approved, so the approval is bound to
    /// what the approver read even if the comment is edited meanwhile.
    Approve {
        /// The lower-case sha256 prefix written after `approve`, if any.
        sha256_prefix: Option<String>,
    },
    /// `/compute deny`: close the pending request.
    Deny,
    /// `/compute replay [fresh]`: replay the newest result in the thread and
    /// post the verdict. Its `github:` data comes from the run's snapshot;
    /// `fresh` fetches it again instead.
    Replay {
        /// `fresh`: fetch the `github:` sources again.
        fresh: bool,
    },
    /// `/compute plan <goal>`: the plan, the exact code, its verdict and its
    /// sha256 are posted; nothing runs. It asks what [`Command::Run`] asks
    /// (`plan` is followed by the same options and goal).
    Plan(Ask),
    /// `/compute run [<sha256 prefix>]`: run exactly the code of the newest
    /// plan in the thread (only when its sha256 starts with the prefix, if given).
    RunPlan {
        /// The lower-case sha256 prefix written after `run`, if any.
        sha256_prefix: Option<String>,
    },
    /// `/compute watch <name>`: post the watch file that keeps running the
    /// exact code of the newest result in the thread.
    Watch {
        /// The watch's name as written.
        name: String,
    },
    /// A reserved subcommand followed by what it does not take (`/compute
    /// approve 7f72`, `/compute run extra`): the reply says what it takes;
    /// nothing is generated or run.
    Malformed {
        /// The subcommand written.
        subcommand: Subcommand,
        /// What followed it on the first line, as written.
        given: String,
    },
}

/// The reserved first words: a comment starting with one of them is that
/// subcommand (strictly), never a goal for the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subcommand {
    /// `approve [<sha256 prefix>]`.
    Approve,
    /// `deny`.
    Deny,
    /// `run [<sha256 prefix>]`.
    Run,
    /// `replay [fresh]`.
    Replay,
    /// `watch <name>`.
    Watch,
}

impl Subcommand {
    /// The subcommand named by `word` (ASCII case ignored).
    fn named(word: &str) -> Option<Subcommand> {
        let all = [
            ("approve", Subcommand::Approve),
            ("deny", Subcommand::Deny),
            ("run", Subcommand::Run),
            ("replay", Subcommand::Replay),
            ("watch", Subcommand::Watch),
        ];
        all.into_iter()
            .find(|(w, _)| w.eq_ignore_ascii_case(word))
            .map(|(_, s)| s)
    }

    /// The word as written in a command.
    pub fn word(self) -> &'static str {
        match self {
            Subcommand::Approve => "approve",
            Subcommand::Deny => "deny",
            Subcommand::Run => "run",
            Subcommand::Replay => "replay",
            Subcommand::Watch => "watch",
        }
    }
}

/// The `inputs=` option of `options` as a list of paths (comma-separated,
/// blanks dropped).
pub(crate) fn inputs_option(options: &BTreeMap<String, String>) -> Vec<String> {
    options
        .get("inputs")
        .map(|v| crate::github::actions::event::split_list(v))
        .unwrap_or_default()
}

/// Parses a comment body. A first line that starts with a reserved word
/// ([`Subcommand`]: `approve`, `deny`, `run`, `replay`, `watch`) is that
/// subcommand, parsed strictly (`approve` / `run` take nothing or a sha256
/// prefix of 8 to 64 hex digits, `replay` nothing or `fresh`, `watch` one
/// name, `deny` nothing; later lines are a remark); anything else after it
/// is [`Command::Malformed`], never a goal.
/// Returns `None` unless the comment starts with `prefix` (ASCII case
/// ignored) followed by a space, a tab, a line end or nothing (so `/computer`
/// does not match `/compute`). Nothing may come before it, not even blank
/// lines: that is exactly what the example workflows' `if:` filter can check
/// (GitHub's `startsWith` ignores case). CRLF line ends are accepted.
pub fn parse(body: &str, prefix: &str) -> Option<Command> {
    let prefix = prefix.trim();
    if prefix.is_empty() {
        return None;
    }
    let text = body.replace("\r\n", "\n").replace('\r', "\n");
    let (first, rest) = text.split_once('\n').unwrap_or((&text, ""));
    let head = first.get(..prefix.len())?;
    if !head.eq_ignore_ascii_case(prefix) {
        return None;
    }
    let after = &first[prefix.len()..];
    if !(after.is_empty() || after.starts_with([' ', '\t'])) {
        return None;
    }
    let after = after.trim();
    // `plan` first: the rest is a request to plan, not to run.
    let (planning, after) = match after.split_once(char::is_whitespace) {
        Some((w, rest)) if w.eq_ignore_ascii_case("plan") => (true, rest.trim()),
        None if after.eq_ignore_ascii_case("plan") => (true, ""),
        _ => (false, after),
    };
    let (options, goal) = parse_options(after);
    if options.is_empty()
        && !planning
        && let Some(command) = reserved(goal)
    {
        return Some(command);
    }
    let (code, context) = match find_python_block(rest) {
        Some(block) => {
            let mut ctx = String::new();
            ctx.push_str(&rest[..block.start]);
            ctx.push_str(&rest[block.end..]);
            (Some(block.code), ctx)
        }
        None => (None, rest.to_string()),
    };
    let ask = Ask {
        options,
        goal: goal.to_string(),
        context: context.trim().to_string(),
        code,
    };
    Some(if planning {
        Command::Plan(ask)
    } else {
        Command::Run(ask)
    })
}

/// A sha256 prefix as shown next to code: 8 to 64 hex digits, lower-cased.
fn sha256_prefix(word: &str) -> Option<String> {
    ((8..=64).contains(&word.len()) && word.chars().all(|c| c.is_ascii_hexdigit()))
        .then(|| word.to_ascii_lowercase())
}

/// The reserved subcommand the first line (after the command) names, parsed
/// strictly: what does not fit is [`Command::Malformed`]. `None`: the line
/// does not start with a reserved word (a goal).
fn reserved(line: &str) -> Option<Command> {
    let (word, given) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
    let subcommand = Subcommand::named(word)?;
    let given = given.trim();
    let args: Vec<&str> = given.split_whitespace().collect();
    let parsed = match (subcommand, args.as_slice()) {
        (Subcommand::Approve, []) => Some(Command::Approve {
            sha256_prefix: None,
        }),
        (Subcommand::Approve, [hash]) => sha256_prefix(hash).map(|h| Command::Approve {
            sha256_prefix: Some(h),
        }),
        (Subcommand::Deny, []) => Some(Command::Deny),
        (Subcommand::Run, []) => Some(Command::RunPlan {
            sha256_prefix: None,
        }),
        (Subcommand::Run, [hash]) => sha256_prefix(hash).map(|h| Command::RunPlan {
            sha256_prefix: Some(h),
        }),
        (Subcommand::Replay, []) => Some(Command::Replay { fresh: false }),
        (Subcommand::Replay, [w]) if w.eq_ignore_ascii_case("fresh") => {
            Some(Command::Replay { fresh: true })
        }
        (Subcommand::Watch, [name]) => Some(Command::Watch {
            name: name.to_string(),
        }),
        _ => None,
    };
    Some(parsed.unwrap_or_else(|| Command::Malformed {
        subcommand,
        given: given.to_string(),
    }))
}

fn is_key(k: &str) -> bool {
    let mut cs = k.chars();
    cs.next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && cs.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// Reads leading `key=value` tokens; returns them and the rest (the goal).
fn parse_options(line: &str) -> (BTreeMap<String, String>, &str) {
    let mut options = BTreeMap::new();
    let mut rest = line;
    loop {
        let t = rest.trim_start();
        let Some(eq) = t.find('=') else { break };
        let key = &t[..eq];
        if !is_key(key) {
            break;
        }
        let after = &t[eq + 1..];
        let (value, remaining) = match after.chars().next() {
            Some(q @ ('"' | '\'')) => {
                let body = &after[1..];
                let mut value = String::new();
                let mut end = None;
                let mut chars = body.char_indices();
                while let Some((i, c)) = chars.next() {
                    if c == '\\' {
                        if let Some((_, n)) = chars.next() {
                            value.push(n);
                        }
                    } else if c == q {
                        end = Some(i + 1);
                        break;
                    } else {
                        value.push(c);
                    }
                }
                let Some(end) = end else { break };
                let remaining = &body[end..];
                if !(remaining.is_empty() || remaining.starts_with(char::is_whitespace)) {
                    break;
                }
                (value, remaining)
            }
            _ => {
                let end = after.find(char::is_whitespace).unwrap_or(after.len());
                (after[..end].to_string(), &after[end..])
            }
        };
        options.insert(key.to_ascii_lowercase(), value);
        rest = remaining;
    }
    (options, rest.trim())
}

struct Block {
    start: usize,
    end: usize,
    code: String,
}

/// The exact code of a comment: the first python block (see
/// [`crate::markdown::exact_code`] for the rules, shared with goals).
fn find_python_block(text: &str) -> Option<Block> {
    crate::markdown::exact_code(text).map(|b| Block {
        start: b.span.start,
        end: b.span.end,
        code: b.code,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(body: &str) -> (BTreeMap<String, String>, String, String, Option<String>) {
        match parse(body, "/compute") {
            Some(Command::Run(Ask {
                options,
                goal,
                context,
                code,
            })) => (options, goal, context, code),
            other => panic!("expected Run, got {other:?}"),
        }
    }

    #[test]
    fn plan_takes_a_goal_and_run_alone_runs_the_plan() {
        let body = "/compute plan inputs=data/a.csv mean amount\nper day\n```python\nprint(1)\n```";
        match parse(body, "/compute") {
            Some(Command::Plan(Ask {
                options,
                goal,
                context,
                code,
            })) => {
                assert_eq!(options["inputs"], "data/a.csv");
                assert_eq!(goal, "mean amount");
                assert_eq!(context, "per day");
                assert_eq!(code.as_deref(), Some("print(1)\n"));
            }
            other => panic!("expected Plan, got {other:?}"),
        }
        assert_eq!(
            parse("/compute plan", "/compute"),
            Some(Command::Plan(Ask::default()))
        );
        assert!(
            matches!(parse("/compute PLAN mean", "/compute"), Some(Command::Plan(Ask { goal, options, .. })) if goal == "mean" && inputs_option(&options).is_empty())
        );
        assert!(
            matches!(parse("/compute planets by mass", "/compute"), Some(Command::Run(Ask { goal, .. })) if goal == "planets by mass")
        );
        assert_eq!(
            parse("/compute run", "/compute"),
            Some(Command::RunPlan {
                sha256_prefix: None
            })
        );
        assert_eq!(
            parse("/compute Run ABCDEF0123", "/compute"),
            Some(Command::RunPlan {
                sha256_prefix: Some("abcdef0123".into())
            })
        );
        // `run` takes nothing or a hash: words after it are no goal.
        assert_eq!(
            parse("/compute run the numbers", "/compute"),
            Some(Command::Malformed {
                subcommand: Subcommand::Run,
                given: "the numbers".into()
            })
        );
        // `plan run` plans the goal "run".
        assert!(
            matches!(parse("/compute plan run", "/compute"), Some(Command::Plan(Ask { goal, .. })) if goal == "run")
        );
    }

    #[test]
    fn prefix_must_be_a_whole_word() {
        assert!(parse("/computer do it", "/compute").is_none());
        assert!(parse("please /compute x", "/compute").is_none());
        assert!(parse("/compute", "/compute").is_some());
        // Nothing before the command, as the workflow's `if:` filter checks it.
        assert!(parse("  \n  /compute mean", "/compute").is_none());
        assert!(parse("\n/compute mean", "/compute").is_none());
        assert!(parse("/COMPUTE mean", "/compute").is_some());
        assert!(parse("/compute\u{a0}mean", "/compute").is_none());
        assert!(parse("/calc mean", "/calc").is_some());
        assert!(parse("/compute mean", "/calc").is_none());
    }

    #[test]
    fn options_goal_context_and_code() {
        let body = "/compute inputs=\"data/a b.csv,data/c.csv\" attempts=2 mean of column x\r\nUse the second sheet.\r\n\r\n```python\r\nprint(1)\r\nx = '```'\r\n```\r\nthanks\r\n";
        let (opts, goal, ctx, code) = run(body);
        assert_eq!(opts["inputs"], "data/a b.csv,data/c.csv");
        assert_eq!(opts["attempts"], "2");
        assert_eq!(goal, "mean of column x");
        assert_eq!(ctx, "Use the second sheet.\n\nthanks");
        assert_eq!(code.as_deref(), Some("print(1)\nx = '```'\n"));
        assert_eq!(inputs_option(&opts), vec!["data/a b.csv", "data/c.csv"]);
    }

    #[test]
    fn longer_fences_and_non_python_blocks() {
        let body =
            "/compute do this\n```text\nnot code\n```\n````python\nprint(\"```\")\n```\n````\n";
        let (_, _, ctx, code) = run(body);
        assert_eq!(code.as_deref(), Some("print(\"```\")\n```\n"));
        assert!(ctx.contains("not code"));
    }

    #[test]
    fn equals_inside_goal_is_not_an_option() {
        let (opts, goal, _, code) = run("/compute what is 2+2=4? x=1");
        assert!(opts.is_empty());
        assert_eq!(goal, "what is 2+2=4? x=1");
        assert!(code.is_none());
        let (opts, goal, ..) = run("/compute unterminated=\"a b c");
        assert!(opts.is_empty());
        assert_eq!(goal, "unterminated=\"a b c");
    }

    #[test]
    fn approve_and_deny() {
        let plain = Some(Command::Approve {
            sha256_prefix: None,
        });
        assert_eq!(parse("/compute approve", "/compute"), plain);
        assert_eq!(parse("/compute Deny\r\n", "/compute"), Some(Command::Deny));
        assert_eq!(
            parse("/compute approve\nlooks fine to me", "/compute"),
            plain
        );
        assert_eq!(
            parse("/compute approve 7F722B92796C", "/compute"),
            Some(Command::Approve {
                sha256_prefix: Some("7f722b92796c".into())
            })
        );
        // Too short to identify code, not hex, or more words: what
        // `approve` does not take, never a goal for the model.
        for (body, given) in [
            ("/compute approve 7f72", "7f72"),
            ("/compute approve budget12", "budget12"),
            ("/compute approve the budget", "the budget"),
            ("/compute APPROVE 7F722B92 now", "7F722B92 now"),
        ] {
            assert_eq!(
                parse(body, "/compute"),
                Some(Command::Malformed {
                    subcommand: Subcommand::Approve,
                    given: given.into()
                }),
                "{body}"
            );
        }
        assert!(matches!(
            parse("/compute deny it\nplease", "/compute"),
            Some(Command::Malformed { subcommand: Subcommand::Deny, given }) if given == "it"
        ));
        // With an option first, the line is a goal.
        assert!(matches!(
            parse("/compute inputs=a.csv approve the budget", "/compute"),
            Some(Command::Run(Ask { goal, .. })) if goal == "approve the budget"
        ));
    }

    #[test]
    fn watch_takes_one_name() {
        assert_eq!(
            parse("/compute watch Weekly-Sales\nkeep this", "/compute"),
            Some(Command::Watch {
                name: "Weekly-Sales".into()
            })
        );
        for (body, given) in [
            ("/compute watch the sales numbers", "the sales numbers"),
            ("/compute watch", ""),
        ] {
            assert_eq!(
                parse(body, "/compute"),
                Some(Command::Malformed {
                    subcommand: Subcommand::Watch,
                    given: given.into()
                })
            );
        }
    }

    #[test]
    fn replay_takes_fresh_or_nothing() {
        assert_eq!(
            parse("/compute replay", "/compute"),
            Some(Command::Replay { fresh: false })
        );
        assert_eq!(
            parse("/compute Replay FRESH", "/compute"),
            Some(Command::Replay { fresh: true })
        );
        assert_eq!(
            parse("/compute replay nonsense", "/compute"),
            Some(Command::Malformed {
                subcommand: Subcommand::Replay,
                given: "nonsense".into()
            })
        );
        // A word that merely starts like a subcommand is a goal.
        assert!(matches!(
            parse("/compute replays per day", "/compute"),
            Some(Command::Run(Ask { goal, .. })) if goal == "replays per day"
        ));
    }

    #[test]
    fn unclosed_fence_runs_to_the_end() {
        let (_, _, _, code) = run("/compute x\n```py\nprint(2)\n");
        assert_eq!(code.as_deref(), Some("print(2)\n"));
    }
}
