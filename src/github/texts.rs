//! Every comment text the bot writes, in one place, and the hidden markers it
//! reads back from its own comments.
//!
//! Markers:
//! - `<!-- compute-bot:run=<run_id> -->` on the tracking comment of a workflow run
//!   (a re-run of the same run finds and edits it);
//! - `<!-- compute-bot:pending sha256=<hex> -->` right before the code that waits
//!   for approval; [`read_pending`] extracts that code and checks its hash;
//! - `<!-- compute-bot:request=<hex JSON> -->` on every answer, plan and
//!   pending request: the goal and the inputs (with hashes) of that request
//!   ([`request_marker`]); an approval or a run of a plan takes them, a
//!   follow-up reads the earlier goal from it;
//! - `<!-- compute-bot:plan sha256=<hex> -->` right before the code of a plan
//!   (`/compute plan`); [`read_plan`] extracts that code and checks its hash,
//!   and the request marker beside it holds the plan's goal and inputs.

use std::fmt::Write as _;

#[cfg(test)]
mod every_comment;
mod replay;
pub(crate) mod stop;
mod watch;
pub(crate) use replay::{
    cannot_replay, differs, nothing_to_replay, replay_data_afresh, replay_data_fetched,
    replay_data_from_snapshot, replay_data_unchanged, replay_not_allowed_now, replay_notes,
    replay_thread_unreadable, reproduced,
};
pub(crate) use watch::{
    CheckView, Compared, HistoryRow, Moved, Sticky, WATCH_PR_MARKER, read_watch_state,
    watch_file_reply, watch_file_unavailable, watch_marker, watch_notification, watch_pull_request,
    watch_state_marker, watch_sticky, watch_summary,
};
pub(crate) use watch::{
    NO_RESULT_IN_THREAD, nothing_to_watch, pull_comment_unposted, pull_files_unreadable,
    pull_unreadable, unknown_watches, watch_files_unreadable, watch_files_unusable,
    watch_inputs_unreadable, watch_no_workspace, watch_not_pinned, watch_run_ended,
};

use serde::{Deserialize, Serialize};

use crate::github::command::Subcommand;
use crate::markdown::{
    NAME_CHARS, code_span, cut_chars, escape_cell, escape_line, fenced_exact, is_bidi_control,
    neutralize,
};
use crate::policy::{Finding, Permission, Severity};
use crate::report::{Report, ReportStatus};

const RUN_MARKER_START: &str = "<!-- compute-bot:run=";
const PENDING_MARKER_START: &str = "<!-- compute-bot:pending sha256=";
const REQUEST_MARKER_START: &str = "<!-- compute-bot:request=";
const PLAN_MARKER_START: &str = "<!-- compute-bot:plan sha256=";
const MARKER_END: &str = " -->";
/// Put before each step that ran before code waiting for approval.
const BEFORE_MARKER_START: &str = "<!-- compute-bot:before ";
/// Marks a request as closed (denied or already approved) so it cannot be approved again.
const CLOSED_MARKER: &str = "<!-- compute-bot:closed -->";

/// The hidden marker of the tracking comment of workflow run `run_id`.
pub fn run_marker(run_id: &str) -> String {
    format!("{RUN_MARKER_START}{}{MARKER_END}", clean_id(run_id))
}

fn clean_id(s: &str) -> String {
    s.chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '.')
        .collect()
}

/// The hidden marker put before code that waits for approval.
fn pending_marker(sha256_hex: &str) -> String {
    format!(
        "{PENDING_MARKER_START}{}{MARKER_END}",
        sha256_hex.to_ascii_lowercase()
    )
}

/// Hex SHA-256 of a text ([`crate::sandbox::sha256_hex`] of its bytes).
pub fn sha256_hex(text: &str) -> String {
    crate::sandbox::sha256_hex(text.as_bytes())
}

/// Code read back from the bot's own approval comment, hash checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingCode {
    /// The exact code that was shown.
    pub code: String,
    /// Its hex SHA-256 (equal to the one in the marker).
    pub(crate) sha256: String,
}

/// Why no approvable code could be read from a comment.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PendingError {
    /// The comment has no pending marker.
    #[error("the comment has no pending-approval marker; nothing waits for approval")]
    NoMarker,
    /// The request was already approved or denied.
    #[error("this request was already closed (approved or denied)")]
    Closed,
    /// No code block follows the marker.
    #[error("the comment has no code block after its marker")]
    NoCode,
    /// The code shown does not hash to the sha256 in the marker (the comment was edited).
    #[error(
        "the code in the comment does not match the sha256 in its marker (expected {expected}, found {found}); it was changed, so it will not run"
    )]
    Mismatch {
        /// The hash in the marker.
        expected: String,
        /// The hash of the code found.
        found: String,
    },
}

/// Reads the code waiting for approval from the bot's own comment and checks
/// it against the sha256 in the marker. Only the first fenced block after the
/// marker counts. GitHub may have turned LF into CRLF; both are tried.
pub fn read_pending(body: &str) -> Result<PendingCode, PendingError> {
    if body.contains(CLOSED_MARKER) {
        return Err(PendingError::Closed);
    }
    read_marked_code(body, PENDING_MARKER_START)
}

/// Reads the code of a plan from the bot's own plan comment and checks it
/// against the sha256 in the plan marker, as [`read_pending`] does for
/// code waiting for approval.
pub fn read_plan(body: &str) -> Result<PendingCode, PendingError> {
    read_marked_code(body, PLAN_MARKER_START)
}

/// Whether `body` carries a plan marker (read or not).
pub(crate) fn has_plan_marker(body: &str) -> bool {
    body.contains(PLAN_MARKER_START)
}

/// The first fenced block after the marker `marker_start`, which must hash
/// to the sha256 written in the marker.
fn read_marked_code(body: &str, marker_start: &str) -> Result<PendingCode, PendingError> {
    let start = body.find(marker_start).ok_or(PendingError::NoMarker)?;
    let rest = &body[start + marker_start.len()..];
    let end = rest.find(MARKER_END).ok_or(PendingError::NoMarker)?;
    let expected = rest[..end].trim().to_ascii_lowercase();
    if expected.len() != 64 || !expected.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err(PendingError::NoMarker);
    }
    let after = &rest[end + MARKER_END.len()..];
    let inner = first_fenced_block(after).ok_or(PendingError::NoCode)?;
    let mut candidates = vec![inner.clone()];
    if let Some(s) = inner.strip_suffix('\n') {
        candidates.push(s.to_string());
    }
    let lf = inner.replace("\r\n", "\n");
    if lf != inner {
        candidates.push(lf.clone());
        if let Some(s) = lf.strip_suffix('\n') {
            candidates.push(s.to_string());
        }
    }
    for c in &candidates {
        if sha256_hex(c) == expected {
            return Ok(PendingCode {
                code: c.clone(),
                sha256: expected,
            });
        }
    }
    Err(PendingError::Mismatch {
        expected,
        found: sha256_hex(&candidates[0]),
    })
}

/// The content of the first fenced block in `text`, exactly as written
/// (line ends kept, CR included), read by [`crate::markdown::first_fenced`].
fn first_fenced_block(text: &str) -> Option<String> {
    crate::markdown::first_fenced(text)
        .filter(|b| b.closed)
        .map(|b| b.raw)
}

/// The approval part of the comment for `report` when it needs approval
/// (and has its code and hash): [`approval_block`] with the findings that
/// ask for it, to put in `RenderContext::approval`. `None` for any other
/// report.
pub fn approval_for(report: &Report, command: &str) -> Option<String> {
    if report.status != ReportStatus::NeedsApproval {
        return None;
    }
    let (code, sha) = (report.code.as_ref()?, report.code_sha256.as_ref()?);
    let findings = report
        .verdict
        .as_ref()
        .map(|v| v.findings.as_slice())
        .unwrap_or_default();
    let mut block = approval_block(code, sha, findings, command);
    block.push_str(&steps_before(report));
    Some(block)
}

/// A step of a session that ran without an error before the code that
/// waits for approval, as its comment shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StepBefore {
    /// Its exact code (hash checked against its marker).
    pub(crate) code: String,
    /// Hex SHA-256 of the stdout it printed then.
    pub(crate) stdout_sha256: String,
}

/// For code escalated in a session: the steps that ran before it without an
/// error, each with a hidden marker (its code's and its stdout's sha256) and
/// its exact code; an approval runs them first ([`read_before`]). Empty
/// without such steps.
fn steps_before(report: &Report) -> String {
    let clean: Vec<_> = report
        .steps
        .iter()
        .filter(|s| s.status == crate::sandbox::RunStatus::Ok)
        .collect();
    if clean.is_empty() {
        return String::new();
    }
    let mut s = String::from(
        "\n#### Steps that run first\n\nThis code was written in a session, after the steps below \
(those that ran without an error). An approval runs them again first, in one session, each checked \
by the policy and compared to the output it printed then, and then this code: it runs in the state \
it was written for.\n",
    );
    for step in clean {
        let _ = write!(
            s,
            "\n<details><summary>Step {} · sha256 <code>{}</code></summary>\n\n{BEFORE_MARKER_START}{} {}{MARKER_END}\n",
            step.number,
            &step.code_sha256[..step.code_sha256.len().min(12)],
            step.code_sha256,
            step.stdout_sha256
        );
        s.push_str(&fenced_exact("python", &step.code));
        s.push_str("\n</details>\n");
    }
    s
}

/// The steps [`steps_before`] wrote into a pending comment, in order, each
/// code the first fenced block after its marker and hashing to it; why
/// one cannot be read.
pub(crate) fn read_before(body: &str) -> Result<Vec<StepBefore>, PendingError> {
    let mut steps = Vec::new();
    for (at, _) in body.match_indices(BEFORE_MARKER_START) {
        let rest = &body[at + BEFORE_MARKER_START.len()..];
        let end = rest.find(MARKER_END).ok_or(PendingError::NoMarker)?;
        let mut hashes = rest[..end].split_whitespace();
        let (Some(code_sha), Some(stdout_sha)) = (hashes.next(), hashes.next()) else {
            return Err(PendingError::NoMarker);
        };
        let inner =
            first_fenced_block(&rest[end + MARKER_END.len()..]).ok_or(PendingError::NoCode)?;
        let code = [inner.clone(), inner.replace("\r\n", "\n")]
            .into_iter()
            .find(|c| sha256_hex(c).eq_ignore_ascii_case(code_sha))
            .ok_or_else(|| PendingError::Mismatch {
                expected: code_sha.to_ascii_lowercase(),
                found: sha256_hex(&inner),
            })?;
        steps.push(StepBefore {
            code,
            stdout_sha256: stdout_sha.to_ascii_lowercase(),
        });
    }
    Ok(steps)
}

/// The approval part of a needs-approval comment: findings, hash, how to
/// approve or deny, the pending marker and the exact code.
fn approval_block(code: &str, sha256: &str, findings: &[Finding], command: &str) -> String {
    let mut s = String::from(
        "#### Approval needed\n\nThe policy asks a human to approve this code before it runs:\n\n",
    );
    let needing: Vec<&Finding> = findings
        .iter()
        .filter(|f| f.severity >= Severity::Escalate)
        .collect();
    if needing.is_empty() {
        s.push_str("- (no finding given)\n");
    }
    for f in needing {
        let _ = writeln!(
            s,
            "- line {}: `{}` — {}",
            f.line,
            f.rule.replace('`', "'"),
            escape_cell(&f.message)
        );
    }
    let bidi: Vec<String> = {
        let mut seen: Vec<char> = code.chars().filter(|c| is_bidi_control(*c)).collect();
        seen.sort_unstable();
        seen.dedup();
        seen.iter()
            .map(|c| format!("U+{:04X}", *c as u32))
            .collect()
    };
    if !bidi.is_empty() {
        let _ = write!(
            s,
            "\n> [!WARNING]\n> This code contains invisible bidirectional control characters ({}), which can make it read differently from how it runs. The block below holds the exact code (so its hash can be checked); read it in an editor that shows them, or in the JSON report, before approving.\n",
            bidi.join(", ")
        );
    }
    let _ = write!(
        s,
        "\nTo run exactly this code (sha256 `{sha256}`), someone the policy's `escalation` allows comments `{command} approve {}` (or just `{command} approve`); `{command} deny` closes the request. The code is never regenerated: the bot reads it back from this comment and checks the hash; with the hash prefix, only this code can run even if the comment is edited meanwhile.\n\n<details open><summary>Code waiting for approval · sha256 <code>{}</code></summary>\n\n{}\n",
        &sha256[..sha256.len().min(12)],
        &sha256[..sha256.len().min(12)],
        pending_marker(sha256)
    );
    s.push_str(&fenced_exact("python", code));
    s.push_str("\n</details>\n");
    s
}

/// The plan part of a planned report's comment (`/compute plan`): the
/// model's plan, the policy verdict, how to run it, the plan marker and the
/// exact code with its sha256. `None` for any other report.
pub fn plan_for(report: &Report, command: &str) -> Option<String> {
    if report.status != ReportStatus::Planned {
        return None;
    }
    let (code, sha256) = (report.code.as_ref()?, report.code_sha256.as_ref()?);
    let mut s = String::new();
    if let Some(plan) = report.plan.as_deref().filter(|p| !p.trim().is_empty()) {
        let _ = write!(s, "#### Plan\n\n{}\n\n", neutralize(plan.trim()));
    }
    let findings = report
        .verdict
        .as_ref()
        .map(|v| v.findings.as_slice())
        .unwrap_or_default();
    let decision = report.verdict.as_ref().map(|v| v.decision);
    s.push_str("#### Policy verdict\n\n");
    s.push_str(match decision {
        Some(crate::policy::Decision::Escalate) => {
            "**escalate**: running it will wait for an approval by someone the policy's `escalation` allows.\n"
        }
        Some(crate::policy::Decision::Deny) => "**deny**: the policy does not let this code run.\n",
        _ => "**allow**: the policy lets this code run as it is.\n",
    });
    for f in findings {
        let _ = writeln!(
            s,
            "- line {}: `{}` ({:?}) — {}",
            f.line,
            f.rule.replace('`', "'"),
            f.severity,
            escape_cell(&f.message)
        );
    }
    let short = &sha256[..sha256.len().min(12)];
    let _ = write!(
        s,
        "\nNothing ran. To run exactly this code (sha256 `{sha256}`), someone the policy's `who` allows comments `{command} run` (the newest plan in this thread), or `{command} run {short}` to run it only if the newest plan is still this one. The code is never regenerated: the bot reads it back from this comment, checks the hash and refuses a plan comment that was edited.\n\n<details open><summary>Planned code · sha256 <code>{short}</code></summary>\n\n{PLAN_MARKER_START}{sha256}{MARKER_END}\n",
    );
    s.push_str(&fenced_exact("python", code));
    s.push_str("\n</details>\n");
    Some(s)
}

/// The reply when `/compute run` finds no plan of the bot's in the thread.
pub(crate) fn nothing_planned(user: &str, command: &str) -> String {
    format!(
        "@{user} there is no plan in this thread to run. Ask for one with `{command} plan <goal>`; `{command} run` then runs exactly its code."
    )
}

/// The reply when the newest plan cannot be run as shown.
pub(crate) fn plan_invalid(reason: &str, command: &str) -> String {
    format!(
        "### ⛔ compute-bot: the plan cannot run\n\n{}\n\nNothing ran. Ask for a new plan with `{command} plan <goal>`.\n",
        neutralize(reason)
    )
}

/// Why the newest plan cannot run: it was edited after the bot posted it.
pub(crate) fn plan_edited(plan_url: &str) -> String {
    format!(
        "The newest plan ({plan_url}) was edited after the bot posted it, so what it shows may not be what was planned; it will not run."
    )
}

/// Why the newest plan cannot run: its code cannot be read back (`error`).
pub(crate) fn plan_unreadable(plan_url: &str, error: &str) -> String {
    format!("The newest plan ({plan_url}) cannot be read back: {error}.")
}

/// Why the newest plan cannot run: `/compute run <prefix>` names other code.
pub(crate) fn plan_names_other_code(prefix: &str, sha256: &str) -> String {
    format!(
        "The run names sha256 `{prefix}…`, but the newest plan's code has sha256 `{sha256}`; read the newest plan and run it with its hash."
    )
}

/// The note under the template's explanation of an answer posted before
/// the model's explanation came: it follows, by `timeout` (the policy's
/// `explain.timeout`, counted from when it was asked), and this comment is
/// edited then.
pub(crate) fn explanation_follows(timeout: std::time::Duration) -> String {
    format!(
        "_The model's explanation follows: this comment is updated when it arrives (within {} of the result, the policy's `explain.timeout`)._",
        crate::units::format_duration(timeout)
    )
}

/// The line on a follow-up: the earlier answer it builds on, and where its
/// inputs came from when it took that answer's.
pub(crate) fn follows_up(parent_url: &str, inherited: &[String]) -> String {
    let mut s = format!("\n↪️ Builds on [this earlier answer]({parent_url})");
    if !inherited.is_empty() {
        let list: Vec<String> = inherited
            .iter()
            .map(|p| format!("`{}`", p.replace('`', "'")))
            .collect();
        let _ = write!(s, ", with its inputs {}", list.join(", "));
    }
    s.push_str(".\n");
    s
}

/// The line under [`follows_up`] when the earlier answer was a session: this
/// session continued from its state, or started fresh and why (the report's
/// `continued`, written by the loop).
pub(crate) fn continued(line: &str) -> String {
    format!("{}\n", line.replace(['\n', '\r'], " "))
}

/// The line on a run of a plan: which plan, which code.
pub(crate) fn planned_run(user: &str, plan_url: &str, sha256: &str) -> String {
    format!(
        "\n📝 Runs the [plan]({plan_url}), as @{user} asked: exactly the code with sha256 `{sha256}`.\n"
    )
}

/// A step of the checklist the tracking comment shows (the agent reports
/// its [`crate::agent::Stage`]s; each maps onto a step).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Step {
    /// Planning the computation.
    Planning,
    /// Generating code with the model.
    Generating,
    /// Checking the code against the policy.
    Checking,
    /// Running the code in the sandbox.
    Running,
    /// Validating the result against the schema.
    Validating,
}

impl Step {
    /// All stages in order.
    const ALL: [Step; 5] = [
        Step::Planning,
        Step::Generating,
        Step::Checking,
        Step::Running,
        Step::Validating,
    ];

    /// Lower-case name.
    fn name(self) -> &'static str {
        match self {
            Step::Planning => "planning",
            Step::Generating => "generating code",
            Step::Checking => "checking against the policy",
            Step::Running => "running in the sandbox",
            Step::Validating => "validating the result",
        }
    }
}

fn footer(run_url: Option<&str>) -> String {
    match run_url {
        Some(u) => format!("\n<sub>[Workflow run]({u})</sub>\n"),
        None => String::new(),
    }
}

/// The tracking comment while work goes on: a checklist with the current stage.
/// `attempt` is 1-based; `max_attempts` the policy's limit.
/// With `note` after the current stage (the sandbox image's pull:
/// "preparing the sandbox image, 120 of 180 MB").
pub(crate) fn progress(
    marker: &str,
    stage: Step,
    attempt: u32,
    max_attempts: u32,
    note: Option<&str>,
    run_url: Option<&str>,
) -> String {
    let mut s = format!("{marker}\n⏳ **compute-bot is working on it**");
    if attempt > 1 {
        let _ = write!(s, " (attempt {attempt} of {max_attempts})");
    }
    s.push_str("\n\n");
    for st in Step::ALL {
        let mark = if st < stage {
            "- [x]"
        } else if st == stage {
            "- [ ] **→**"
        } else {
            "- [ ]"
        };
        match note {
            Some(note) if st == stage => {
                let _ = writeln!(s, "{mark} {} ({note})", st.name());
            }
            _ => {
                let _ = writeln!(s, "{mark} {}", st.name());
            }
        }
    }
    s.push_str(&footer(run_url));
    s
}

/// The first reply to a command: seen, starting.
pub(crate) fn acknowledged(marker: &str, run_url: Option<&str>) -> String {
    format!(
        "{marker}\n👀 **compute-bot** got the request and is starting.\n{}",
        footer(run_url)
    )
}

/// Refused: the commenter's permission is below what the policy needs.
pub(crate) fn refused_permission(
    user: &str,
    has: Permission,
    needs: Permission,
    command: &str,
) -> String {
    format!(
        "🚫 @{user}, `{command}` needs **{needs}** permission on this repository (or being listed in the policy's `who.users`); you have **{has}**. Nothing was generated or run.\n"
    )
}

/// Refused: the policy lists users and the commenter is not one of them.
pub(crate) fn refused_not_listed(user: &str, command: &str) -> String {
    format!(
        "🚫 @{user}, `{command}` may only be used by the users the policy's `who` lists. Nothing was generated or run.\n"
    )
}

/// Refused: an approval by someone the policy's `escalation` does not allow.
pub(crate) fn refused_approval(user: &str, needs: Permission, command: &str) -> String {
    format!(
        "🚫 @{user}, `{command} approve` needs someone the policy's `escalation` allows (at least **{needs}** permission). The code was not run.\n"
    )
}

/// Refused: the policy lists approvers and the commenter is not one of them.
/// `verb` is `approve` or `deny`.
pub(crate) fn refused_not_approver(user: &str, verb: &str, command: &str) -> String {
    format!(
        "🚫 @{user}, `{command} {verb}` may only be used by the approvers the policy's `escalation` lists. Nothing was run or changed.\n"
    )
}

/// Refused: a `deny` by someone the policy's `escalation` does not allow.
pub(crate) fn refused_deny(user: &str, needs: Permission, command: &str) -> String {
    format!(
        "🚫 @{user}, `{command} deny` needs someone the policy's `escalation` allows (at least **{needs}** permission). The request stays open.\n"
    )
}

/// Ignored (for the log notice; nothing is posted for ignored events).
pub(crate) fn ignored(reason: &str) -> String {
    format!("compute-bot: nothing to do: {reason}")
}

/// `approve`/`deny` when nothing waits for approval.
pub(crate) fn nothing_pending(user: &str, command: &str) -> String {
    format!(
        "ℹ️ @{user}, nothing on this thread waits for approval, so `{command} approve` / `{command} deny` has nothing to act on.\n"
    )
}

/// The approval could not be honoured: the shown code was changed or is missing.
pub(crate) fn approval_invalid(reason: &str) -> String {
    format!(
        "⚠️ The approval was not carried out: {}. Ask again with a new `/compute` comment.\n",
        neutralize(reason)
    )
}

/// Why an approval is not carried out: `approve <prefix>` names other code.
pub(crate) fn approval_names_other_code(prefix: &str, sha256: &str) -> String {
    format!(
        "the approval names sha256 `{prefix}…`, but the code waiting for approval has sha256 `{sha256}` (was the comment edited?); read the code again and approve it with its current hash"
    )
}

/// Appended to the approval comment when someone approves: who, and that it runs.
pub(crate) fn approved_by(user: &str, sha256: &str) -> String {
    format!(
        "\n{CLOSED_MARKER}\n✅ Approved by @{user}; running exactly the code with sha256 `{sha256}`.\n"
    )
}

/// Appended to the approval comment on `deny`: closed, nothing ran.
pub(crate) fn denied(user: &str) -> String {
    format!("\n{CLOSED_MARKER}\n🛑 Denied by @{user}. The request is closed; nothing was run.\n")
}

/// A comment with a goal-less command: how to use the bot.
pub(crate) fn usage(command: &str) -> String {
    format!(
        "ℹ️ Write the goal after the command, e.g. `{command} mean and median of column price inputs=data/sales.csv`, or add a fenced ```` ```python ```` block with the exact code to run. Options go before the goal as `key=value` (quotes allowed): `inputs=\"data/a b.csv,data/c.csv\"`.\n"
    )
}

/// What a reserved subcommand takes after it.
fn subcommand_takes(subcommand: Subcommand, command: &str) -> String {
    match subcommand {
        Subcommand::Approve => format!(
            "nothing, or the sha256 shown next to the code waiting for approval (its first 8 to 64 hex digits, e.g. `{command} approve 7f722b92`)"
        ),
        Subcommand::Deny => "nothing (it closes the request waiting for approval)".to_string(),
        Subcommand::Run => format!(
            "nothing, or the sha256 shown with the newest plan (its first 8 to 64 hex digits, e.g. `{command} run 7f722b92`); a plan is asked for with `{command} plan <goal>`"
        ),
        Subcommand::Replay => "nothing, or `fresh` (to fetch the `github:` data again)".to_string(),
        Subcommand::Watch => format!("one name, e.g. `{command} watch weekly-sales`"),
    }
}

/// The reply to a reserved subcommand written with what it does not take
/// (`given`, as written): what it takes; nothing was asked of the model.
pub(crate) fn malformed_subcommand(subcommand: Subcommand, given: &str, command: &str) -> String {
    let word = subcommand.word();
    let given: String = given.replace('`', "'").chars().take(80).collect();
    let given = if given.trim().is_empty() {
        "nothing".to_string()
    } else {
        format!("`{given}`")
    };
    format!(
        "ℹ️ `{command} {word}` takes {}; it was given {given}, so nothing was generated or run. A goal cannot start with `{word}`: word it differently.\n",
        subcommand_takes(subcommand, command)
    )
}

/// The step summary of a short reply: the reply under a heading.
pub(crate) fn reply_summary(reply: &str) -> String {
    format!("### compute-bot\n\n{}\n", reply.trim())
}

/// The end of a request that stopped before anything ran: in the tracking
/// comment (or a reply) and the summary. `details` is Markdown.
pub(crate) fn stopped(title: &str, details: &str, run_url: &str) -> String {
    format!(
        "### ❌ compute-bot: {title}\n\n{details}\n\nNothing was run.\n\n<sub>[Workflow run]({run_url})</sub>\n"
    )
}

/// The summary when the run could not start (environment, event, token).
pub(crate) fn could_not_start(message: &str) -> String {
    format!(
        "### 💥 compute-bot could not start\n\n{}\n",
        neutralize(message)
    )
}

/// The summary when the policy file is not usable; `error` is the
/// `file:line:column: message` text, `file` the workspace-relative path.
pub(crate) fn policy_unusable(error: &str, file: &str) -> String {
    format!(
        "### 💥 compute-bot: the policy file is not usable\n\n```text\n{}\n```\n\nNothing was posted or run. Fix the file (`compute-bot policy check {file}` shows the same message locally).\n",
        error.replace("```", "'''")
    )
}

/// The summary of a `deny`.
pub(crate) fn denied_summary(user: &str) -> String {
    format!(
        "### compute-bot: request denied\n\n@{user} denied the code waiting for approval; nothing was run.\n"
    )
}

/// The line on top of an approved run's result.
pub(crate) fn approved_run(user: &str, request_url: &str, sha256: &str) -> String {
    format!(
        "\n✅ Approved by @{user} ([request]({request_url})): ran exactly the code with sha256 `{sha256}`.\n"
    )
}

/// Where an answer's `github:` data were fetched: the GitHub API requests
/// made, the request budget apart (so the count never reads as a share of
/// the data), and where the snapshot is kept (`commit` on the files branch,
/// else the run's artifact).
pub(crate) fn data_fetched_here(requests: u32, budget: u32, commit: Option<&str>) -> String {
    let home = match commit {
        Some(sha) => format!(
            "kept in commit `{}` of the files branch",
            sha.get(..12).unwrap_or(sha)
        ),
        None => "kept in the run's artifact".to_string(),
    };
    let plural = if requests == 1 { "" } else { "s" };
    format!(
        "fetched with {requests} GitHub API request{plural} (request budget: {budget}); the snapshot is {home}"
    )
}

/// The runs named in an origin of `github:` data.
fn runs_words(runs: &[String]) -> String {
    if runs.is_empty() {
        "(unknown)".to_string()
    } else {
        runs.join(", ")
    }
}

/// Where `github:` data came from: an earlier run's snapshot, not fetched again.
pub(crate) fn data_from_snapshot(
    runs: &[String],
    fetched_at: Option<&str>,
    commits: &[String],
) -> String {
    format!(
        "the GitHub data of run {}, fetched at {}, not fetched again (the snapshot in commit `{}` of the files branch)",
        runs_words(runs),
        fetched_at.unwrap_or("(time not recorded)"),
        commits.join("`, `")
    )
}

/// Where `github:` data came from: asked again, and GitHub said unchanged.
pub(crate) fn data_unchanged(
    runs: &[String],
    fetched_at: Option<&str>,
    requests: u32,
    commits: &[String],
) -> String {
    format!(
        "asked afresh (`replay fresh`): unchanged since run {} (fetched at {}) — GitHub answered all {requests} conditional requests with 304 Not Modified, no rate limit spent; the snapshot in commit `{}` of the files branch",
        runs_words(runs),
        fetched_at.unwrap_or("(time not recorded)"),
        commits.join("`, `")
    )
}

/// Where `github:` data came from: fetched afresh, for `why`.
pub(crate) fn data_afresh(why: &str) -> String {
    format!("fetched afresh: {why}")
}

/// The line an answer shows under its head for its `github:` data: each
/// query with its rows, where the data came from (`from`), and each note
/// on what is incomplete, by file name.
pub(crate) fn github_data_line(
    queries: &[(&str, usize)],
    from: &str,
    notes: &[(&str, &str)],
) -> String {
    let list: Vec<String> = queries
        .iter()
        .map(|(q, rows)| format!("`{}` ({rows} rows)", q.replace('`', "'")))
        .collect();
    let mut md = format!("\n📥 GitHub data: {} — {from}.", list.join(", "));
    for (name, n) in notes {
        let _ = write!(md, "\n⚠️ `{name}`: {n}.");
    }
    neutralize(&md)
}

/// What to tell a commenter when there is a goal but no code and no model.
pub(crate) const NO_MODEL_ACTION_HELP: &str = "No language model is configured for this workflow, so no code can be generated for this goal. Either configure a model — set the action inputs `provider` (`openai` for any OpenAI-compatible endpoint, or `anthropic`), `model` and `api_key` (from a repository secret), and `base_url` if needed — or give the exact code to run in a fenced ```` ```python ```` block in the comment (or the `code` input for workflow_dispatch and schedule runs).";

/// Where a model's key comes from in Actions, named in place of the CLI's
/// variables when the provider refuses the key.
pub(crate) const KEY_INPUT: &str = "the action input `api_key` (from a repository secret, e.g. `api_key: ${{ secrets.COMPUTE_BOT_API_KEY }}`)";

/// [`KEY_INPUT`] for the fallback model.
pub(crate) const FALLBACK_KEY_INPUT: &str = "the action input `fallback_api_key` (from a repository secret, e.g. `fallback_api_key: ${{ secrets.COMPUTE_BOT_FALLBACK_API_KEY }}`)";

/// Added to model configuration errors, whose text names the `COMPUTE_BOT_*` variables.
pub(crate) const MODEL_INPUTS_HINT: &str = "In the workflow, the action inputs `provider`, `model`, `base_url` and `api_key` set these (they win over the `COMPUTE_BOT_*` variables).";

/// The approved request's inputs changed since the code was shown.
pub(crate) fn inputs_changed(paths: &[String], command: &str) -> String {
    let list: Vec<String> = paths
        .iter()
        .map(|p| {
            format!(
                "- `{}` changed since the code was shown",
                p.replace('`', "'")
            )
        })
        .collect();
    format!(
        "{}\n\nThe approval covered the code together with these inputs. Ask again with a new `{command}` comment.",
        list.join("\n")
    )
}

/// What a needs-approval comment records besides the code, so that the
/// approved run gets the same goal and the same inputs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct PendingRequest {
    /// The goal.
    pub(crate) goal: Option<String>,
    /// Extra context.
    pub(crate) context: Option<String>,
    /// Workspace inputs with the hashes the approver was shown.
    pub(crate) inputs: Vec<PendingInput>,
}

/// One input of a pending request.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct PendingInput {
    /// Workspace-relative path.
    pub(crate) path: String,
    /// Hex SHA-256 of the contents when the code was shown.
    pub(crate) sha256: String,
    /// For a `github:` source: where its snapshot is kept
    /// (`<branch>@<sha>:<path>` or `artifact`), so an approved run or a
    /// follow-up reads the same data back instead of fetching again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) snapshot: Option<String>,
    /// For a `github:` source: when it was fetched (RFC 3339, UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) fetched_at: Option<String>,
    /// For a `github:` source: what is incomplete in it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) notes: Vec<String>,
}

/// The hidden marker that records a [`PendingRequest`] (hex-encoded JSON, so
/// no text in it can end the HTML comment).
pub(crate) fn request_marker(req: &PendingRequest) -> String {
    let json = serde_json::to_vec(req).unwrap_or_default();
    format!("{REQUEST_MARKER_START}{}{MARKER_END}", hex::encode(json))
}

/// Reads the [`PendingRequest`] back from a comment, if it has one.
pub(crate) fn read_request_marker(body: &str) -> Option<PendingRequest> {
    let start = body.find(REQUEST_MARKER_START)? + REQUEST_MARKER_START.len();
    let rest = &body[start..];
    let end = rest.find(MARKER_END)?;
    let bytes = hex::decode(rest[..end].trim()).ok()?;
    serde_json::from_slice(&bytes).ok()
}

// ---------------------------------------------------------------- the run's files

/// One file of a run as the result comment shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ShownFile {
    /// The name in `/out`.
    pub(crate) name: String,
    /// Its size in bytes.
    pub(crate) size: u64,
    /// True for a PNG, JPEG or GIF (shown inline when it has a link).
    pub(crate) image: bool,
    /// The pinned link to the committed file; `None` when not committed.
    pub(crate) url: Option<String>,
}

/// Where the files went, for [`files_md`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FilesHome {
    /// Committed to `branch` as commit `sha` (its page is `commit_url`).
    Committed {
        branch: String,
        sha: String,
        commit_url: String,
    },
    /// Not committed, for `reason` (Markdown); the run's artifact has them.
    ArtifactOnly { reason: String },
    /// Written to a local directory (the CLI's `--artifacts`); the links
    /// are relative paths.
    Local,
}

/// The heading of the files part of a result.
const FILES_HEADING: &str = "#### Files\n\n";

fn size_text(bytes: u64) -> String {
    match bytes {
        b if b < 1024 => format!("{b} B"),
        b if b < 1024 * 1024 => format!("{:.1} KiB", b as f64 / 1024.0),
        b => format!("{:.1} MiB", b as f64 / 1_048_576.0),
    }
}

/// A file name as an image's alt text ([`escape_line`]), cut at
/// [`NAME_CHARS`].
fn alt_text(name: &str) -> String {
    escape_line(&cut_chars(name, NAME_CHARS))
}

/// A file name as a code span ([`code_span`]), cut at [`NAME_CHARS`].
fn name_code(name: &str) -> String {
    code_span(&cut_chars(name, NAME_CHARS))
}

/// The images of `files` that have a link: (name in `/out`, link), for
/// [`crate::render::FilesBlock`] to show where a result names them.
pub(crate) fn image_links(files: &[ShownFile]) -> Vec<(String, String)> {
    files
        .iter()
        .filter(|f| f.image)
        .filter_map(|f| Some((f.name.clone(), f.url.clone()?)))
        .collect()
}

/// The files part of a result: the images inline and the other files as
/// links when they were committed; else a note saying why not and where the
/// files are (the run's artifact, `run_url`), with their names and no link.
/// `left_out` are the files over the policy's caps (`caps` says which).
/// The images named in `in_result` are linked, not shown: the Result block
/// shows them where the result names them.
pub(crate) fn files_md(
    files: &[ShownFile],
    home: &FilesHome,
    left_out: &[(String, u64)],
    caps: &str,
    run_url: &str,
    in_result: &[String],
) -> String {
    let mut s = String::from(FILES_HEADING);
    if let FilesHome::ArtifactOnly { reason } = home {
        let _ = writeln!(
            s,
            "> [!NOTE]\n> The files were not committed to the repository: {reason}. They are kept with the [workflow run]({run_url}) as its artifact.\n"
        );
    }
    let inline = |f: &ShownFile| f.image && f.url.is_some() && !in_result.contains(&f.name);
    for f in files.iter().filter(|f| inline(f)) {
        if let Some(url) = &f.url {
            let _ = writeln!(
                s,
                "![{}]({url})\n\n<sub>{} · {}</sub>\n",
                alt_text(&f.name),
                name_code(&f.name),
                size_text(f.size)
            );
        }
    }
    let listed: Vec<&ShownFile> = files.iter().filter(|f| !inline(f)).collect();
    for f in &listed {
        match &f.url {
            Some(url) => {
                let _ = writeln!(
                    s,
                    "- [{}]({url}) · {}{}",
                    name_code(&f.name),
                    size_text(f.size),
                    if in_result.contains(&f.name) {
                        " · shown with the result"
                    } else {
                        ""
                    }
                );
            }
            None => {
                let _ = writeln!(s, "- {} · {}", name_code(&f.name), size_text(f.size));
            }
        }
    }
    if !listed.is_empty() {
        s.push('\n');
    }
    if !left_out.is_empty() {
        let names: Vec<String> = left_out
            .iter()
            .map(|(n, size)| format!("{} ({})", name_code(n), size_text(*size)))
            .collect();
        let _ = writeln!(
            s,
            "_Not shown ({caps}): {}; the [workflow run]({run_url})'s artifact has them._\n",
            names.join(", ")
        );
    }
    if let FilesHome::Committed {
        branch,
        sha,
        commit_url,
    } = home
    {
        let short: String = sha.chars().take(7).collect();
        let _ = writeln!(
            s,
            "<sub>Committed to branch `{}` as [`{short}`]({commit_url}).</sub>",
            branch.replace('`', "'")
        );
    }
    s
}

/// Why the files were not committed: a token without `contents: write`.
pub(crate) const FILES_NO_WRITE: &str = "the workflow token cannot write to the repository (give the job `permissions: contents: write` to show charts here; a pull request from a fork always gets a read-only token)";

/// Why the files were not committed: the policy switched it off.
pub(crate) const FILES_NO_BRANCH: &str =
    "the policy's `output.files.branch` is empty, so nothing is committed";

/// Why files are left out: over the policy's caps (count and bytes).
pub(crate) fn files_over_caps(max_files: u32, max_bytes: &str) -> String {
    let plural = if max_files == 1 { "" } else { "s" };
    format!("over the policy's `output.files` caps of {max_files} file{plural} and {max_bytes}")
}

/// Why no file is committed: every one is over the caps.
pub(crate) const FILES_NONE_WITHIN_CAPS: &str = "none is within the caps";

/// The commit message of a run's files on the files branch.
pub(crate) fn files_commit_message(run_id: &str, attempt: u32, run_url: &str) -> String {
    format!("compute-bot: files of run {run_id} attempt {attempt}\n\n{run_url}")
}

/// The commit message of a run's `github:` data snapshot on the files branch.
pub(crate) fn data_commit_message(run_id: &str, attempt: u32, run_url: &str) -> String {
    format!("compute-bot: GitHub data of run {run_id} attempt {attempt}\n\n{run_url}")
}

/// Why the files were not committed: the write failed (`error`, plain text).
pub(crate) fn files_write_failed(error: &str) -> String {
    format!(
        "writing them failed ({})",
        neutralize(error.trim_end_matches('.'))
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(name: &str, image: bool, url: Option<&str>) -> ShownFile {
        ShownFile {
            name: name.into(),
            size: 2048,
            image,
            url: url.map(String::from),
        }
    }

    #[test]
    fn files_show_images_inline_only_with_a_link_and_names_stay_inert() {
        let files = [
            shown(
                "a](x) <img src=y>.png",
                true,
                Some("https://h/o/r/blob/s/a.png?raw=true"),
            ),
            shown("t.csv", false, Some("https://h/o/r/blob/s/t.csv?raw=true")),
        ];
        let home = FilesHome::Committed {
            branch: "compute-bot-assets".into(),
            sha: "0123456789abcdef".into(),
            commit_url: "https://h/o/r/commit/0123456789abcdef".into(),
        };
        let md = files_md(
            &files,
            &home,
            &[("big.bin".into(), 3 << 20)],
            "caps",
            "RUN",
            &[],
        );
        assert!(
            md.contains(
                "![a\\](x) &lt;img src=y&gt;.png](https://h/o/r/blob/s/a.png?raw=true)\n\n<sub>"
            ),
            "{md}"
        );
        assert!(
            md.contains("- [`t.csv`](https://h/o/r/blob/s/t.csv?raw=true) · 2.0 KiB"),
            "{md}"
        );
        assert!(
            md.contains("`big.bin` (3.0 MiB)") && md.contains("[workflow run](RUN)"),
            "{md}"
        );
        assert!(
            md.contains("as [`0123456`](https://h/o/r/commit/0123456789abcdef)"),
            "{md}"
        );
        // Not committed: no image, no link; the reason and the run's link.
        let files = [shown("c.png", true, None), shown("t.csv", false, None)];
        let home = FilesHome::ArtifactOnly {
            reason: FILES_NO_WRITE.into(),
        };
        let md = files_md(&files, &home, &[], "caps", "RUN", &[]);
        assert!(!md.contains("!["), "{md}");
        assert!(!md.contains("](http"), "{md}");
        assert!(
            md.contains("- `c.png` · 2.0 KiB") && md.contains("contents: write"),
            "{md}"
        );
        assert!(md.contains("[workflow run](RUN) as its artifact"), "{md}");
    }

    #[test]
    fn request_marker_round_trips_any_text() {
        let req = PendingRequest {
            goal: Some("mean --> of <!-- x -->".into()),
            context: None,
            inputs: vec![PendingInput {
                path: "data/a b.csv".into(),
                sha256: "ab".repeat(32),
                ..PendingInput::default()
            }],
        };
        let m = request_marker(&req);
        assert!(!m[4..m.len() - 3].contains("-->"));
        assert_eq!(
            read_request_marker(&format!("x\n{m}\ny")).as_ref(),
            Some(&req)
        );
        assert_eq!(read_request_marker("no marker"), None);
    }

    #[test]
    fn run_marker_round_trips_and_rejects_junk() {
        let m = run_marker("123456789");
        assert_eq!(m, "<!-- compute-bot:run=123456789 -->");
        assert_eq!(run_marker("12 -->x"), "<!-- compute-bot:run=12x -->");
    }

    fn finding() -> Finding {
        Finding {
            rule: "import-escalate".into(),
            severity: Severity::Escalate,
            message: "imports `requests` <b>".into(),
            line: 1,
            column: 1,
            snippet: "import requests".into(),
        }
    }

    #[test]
    fn pending_code_round_trips_exactly() {
        for code in [
            "print('a')\n",
            "print('no newline')",
            "s = '````'\nprint(s)\n```\n",
            "",
        ] {
            let sha = sha256_hex(code);
            let body = format!(
                "{}\nsome text\n{}",
                run_marker("1"),
                approval_block(code, &sha, &[finding()], "/compute")
            );
            let got = read_pending(&body).unwrap();
            assert_eq!(got.code, code);
            assert_eq!(got.sha256, sha);
            // GitHub may hand back CRLF.
            let crlf = body.replace('\n', "\r\n");
            assert_eq!(read_pending(&crlf).unwrap().code, code);
        }
    }

    #[test]
    fn edited_code_is_refused() {
        let code = "print(1)\n";
        let body = approval_block(code, &sha256_hex(code), &[], "/compute");
        let tampered = body.replace("print(1)", "import os; os.system('x')");
        assert!(matches!(
            read_pending(&tampered),
            Err(PendingError::Mismatch { .. })
        ));
        assert_eq!(read_pending("hello"), Err(PendingError::NoMarker));
        let closed = format!("{body}{}", denied("maint"));
        assert_eq!(read_pending(&closed), Err(PendingError::Closed));
    }

    #[test]
    fn approval_block_shows_findings_hash_and_how_to_approve() {
        let code = "import requests\n";
        let sha = sha256_hex(code);
        let b = approval_block(code, &sha, &[finding()], "/calc");
        assert!(b.contains("`/calc approve`") && b.contains("`/calc deny`"));
        assert!(b.contains(&sha));
        assert!(b.contains("import-escalate"));
        assert!(b.contains("&lt;b&gt;"), "{b}");
        assert!(b.contains(&pending_marker(&sha)));
    }

    #[test]
    fn progress_marks_done_and_current_stages() {
        let p = progress(
            "<!-- m -->",
            Step::Running,
            2,
            3,
            None,
            Some("https://x/run"),
        );
        assert!(p.starts_with("<!-- m -->"));
        assert!(p.contains("- [x] checking against the policy"));
        assert!(p.contains("- [ ] **→** running in the sandbox"));
        assert!(p.contains("- [ ] validating the result"));
        assert!(p.contains("attempt 2 of 3"));
        assert!(p.contains("(https://x/run)"));
    }

    #[test]
    fn progress_may_note_the_image_pull_at_the_current_stage() {
        let note = "preparing the sandbox image, 120 of 180 MB";
        let p = progress("<!-- m -->", Step::Running, 1, 1, Some(note), None);
        assert!(
            p.contains(
                "- [ ] **→** running in the sandbox (preparing the sandbox image, 120 of 180 MB)"
            ),
            "{p}"
        );
        assert_eq!(p.matches(note).count(), 1, "{p}");
    }

    #[test]
    fn refusal_names_the_permission() {
        let t = refused_permission("bob", Permission::Read, Permission::Write, "/compute");
        assert!(t.contains("**write**") && t.contains("**read**") && t.contains("@bob"));
    }
}
