//! The texts of watches: the sticky comment of a watch (with its hidden
//! history), the short notification, the pull-request comment and the job
//! summary. Everything from a watch file or a result is escaped here.
//!
//! Markers:
//! - `<!-- compute-bot:watch=<name> -->` on a watch's sticky comment;
//! - `<!-- compute-bot:watch-state=<hex JSON> -->` beside it: the history;
//! - `<!-- compute-bot:watch-pr -->` on the one watch comment of a pull request.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::Value;

use super::MARKER_END;
use crate::markdown::{cell_code_span, escape_cell};
use crate::render::FOLD_ROWS;
use crate::units::{NumberKind, display_fixed, display_json_number, display_number};

const WATCH_MARKER_START: &str = "<!-- compute-bot:watch=";
const STATE_MARKER_START: &str = "<!-- compute-bot:watch-state=";
/// The marker of the watch comment of a pull request.
pub(crate) const WATCH_PR_MARKER: &str = "<!-- compute-bot:watch-pr -->";
/// Most value columns in a history table.
const HISTORY_COLUMNS: usize = 6;

/// The hidden marker of watch `name`'s sticky comment (names are letters,
/// digits, `-`, `_`, `.`: checked when the watch is read).
pub(crate) fn watch_marker(name: &str) -> String {
    format!("{WATCH_MARKER_START}{name}{MARKER_END}")
}

/// The hidden marker carrying a watch's history (hex-encoded JSON, so no
/// text in it can end the HTML comment).
pub(crate) fn watch_state_marker(json: &[u8]) -> String {
    format!("{STATE_MARKER_START}{}{MARKER_END}", hex::encode(json))
}

/// The history bytes of a sticky comment, if it has them.
pub(crate) fn read_watch_state(body: &str) -> Option<Vec<u8>> {
    let start = body.find(STATE_MARKER_START)? + STATE_MARKER_START.len();
    let rest = &body[start..];
    let end = rest.find(MARKER_END)?;
    hex::decode(rest[..end].trim()).ok()
}

/// One check as shown.
pub(crate) struct CheckView<'a> {
    /// The check as written.
    pub(crate) check: &'a str,
    /// True when it held.
    pub(crate) passed: bool,
    /// Why it failed.
    pub(crate) error: Option<&'a str>,
}

/// One row of a watch's history.
pub(crate) struct HistoryRow<'a> {
    /// When (UTC, `YYYY-MM-DD HH:MM`).
    pub(crate) at: &'a str,
    /// The values by pointer.
    pub(crate) values: &'a BTreeMap<String, Value>,
    /// How many checks failed.
    pub(crate) failing: usize,
    /// Why the run gave no result.
    pub(crate) error: Option<&'a str>,
}

/// What the sticky comment of a watch shows.
pub(crate) struct Sticky<'a> {
    /// The watch's name.
    pub(crate) name: &'a str,
    /// Its file.
    pub(crate) file: &'a str,
    /// The SHA-256 of the code that ran.
    pub(crate) code_sha256: Option<&'a str>,
    /// The newest run's values.
    pub(crate) values: &'a BTreeMap<String, Value>,
    /// The newest run's checks.
    pub(crate) checks: &'a [CheckView<'a>],
    /// Why the newest run gave no result.
    pub(crate) error: Option<&'a str>,
    /// The history, oldest first (the newest run last).
    pub(crate) history: &'a [HistoryRow<'a>],
    /// The tolerance.
    pub(crate) tolerance: f64,
    /// The workflow run.
    pub(crate) run_url: &'a str,
    /// The state marker ([`watch_state_marker`]).
    pub(crate) state: &'a str,
    /// A chart of the history (a mermaid block), when it has one.
    pub(crate) chart: Option<&'a str>,
    /// What moved beyond the tolerance since the previous run (none on the
    /// first run).
    pub(crate) moved: Option<&'a Moved<'a>>,
}

/// A value as an answer writes it (the `render` number rules): a number
/// with thousands separators and the decimals its key's kind keeps
/// (`/total_revenue` to the cent, `/year` as written); a text escaped.
fn cell(key: &str, v: &Value) -> String {
    match v {
        Value::String(s) => escape_cell(s),
        Value::Number(n) => display_json_number(n, NumberKind::of_key(key)),
        other => escape_cell(&other.to_string()),
    }
}

/// A number without float noise (at most 10 decimals, trailing zeros cut).
fn num(x: f64) -> String {
    let s = format!("{x:.10}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" { "0".into() } else { s.to_string() }
}

/// A relative tolerance as people say it: `5 %` of the value, or `0`
/// (any change counts).
fn tolerance_words(tolerance: f64) -> String {
    if tolerance == 0.0 {
        "0 (any change counts)".into()
    } else {
        format!("{} % of its previous value", num(tolerance * 100.0))
    }
}

/// `+8 (+19.05 %)` for two numbers of value `key` (written by the answer's
/// number rules: `+1,204.50` for money); empty for anything else.
pub(crate) fn difference(key: &str, before: Option<&Value>, after: Option<&Value>) -> String {
    match (
        before.and_then(Value::as_f64),
        after.and_then(Value::as_f64),
    ) {
        (Some(a), Some(b)) if a == b => "no change".into(),
        (Some(a), Some(b)) => {
            let d = b - a;
            let sign = if d > 0.0 { "+" } else { "" };
            let shown = display_number(d, NumberKind::of_key(key));
            if a != 0.0 {
                let pct = d / a.abs() * 100.0;
                let psign = if pct > 0.0 { "+" } else { "" };
                format!("{sign}{shown} ({psign}{} %)", display_fixed(pct, 2))
            } else {
                format!("{sign}{shown}")
            }
        }
        (_, _) if before == after => "no change".into(),
        (_, _) if before.is_none() => "new".into(),
        (_, _) if after.is_none() => "removed".into(),
        _ => "changed".into(),
    }
}

fn checks_list(out: &mut String, checks: &[CheckView<'_>]) {
    for c in checks {
        if c.passed {
            let _ = writeln!(out, "- ✅ {}", escape_cell(c.check));
        } else {
            let _ = writeln!(
                out,
                "- ❌ {} — {}",
                escape_cell(c.check),
                escape_cell(c.error.unwrap_or("failed"))
            );
        }
    }
}

/// The headline figures: each value now and, beside the previous run's
/// (`previous`), its change.
fn values_table(
    out: &mut String,
    values: &BTreeMap<String, Value>,
    previous: Option<&BTreeMap<String, Value>>,
) {
    if values.is_empty() {
        return;
    }
    match previous {
        Some(_) => out.push_str("| value | now | since the previous run |\n| --- | --: | --- |\n"),
        None => out.push_str("| value | now |\n| --- | --: |\n"),
    }
    for (k, v) in values {
        let _ = write!(out, "| {} | {} |", escape_cell(k), cell(k, v));
        if let Some(p) = previous {
            let _ = write!(out, " {} |", escape_cell(&difference(k, p.get(k), Some(v))));
        }
        out.push('\n');
    }
    out.push('\n');
}

/// The status line under a watch's heading: how its checks went.
fn checks_status(checks: &[CheckView<'_>], error: Option<&str>) -> String {
    let failing = checks.iter().filter(|c| !c.passed).count();
    match (error, checks.len(), failing) {
        (Some(_), _, _) => "no result".into(),
        (None, 0, _) => "ok · no checks".into(),
        (None, 1, 0) => "ok · the check passes".into(),
        (None, n, 0) => format!("ok · all {n} checks pass"),
        (None, 1, _) => "failed · the check fails".into(),
        (None, n, 1) => format!("failed · 1 of {n} checks fails"),
        (None, n, f) => format!("failed · {f} of {n} checks fail"),
    }
}

/// What a conclusion says of the previous run.
enum Since<'a> {
    /// This is the watch's first run.
    First,
    /// The previous run's date and what moved beyond the tolerance since.
    Previous(&'a str, &'a Moved<'a>),
    /// Nothing (a summary; a previous run without a result).
    NotShown,
}

/// The conclusion of a watch run, first as an answer's explanation is: why
/// it gave no result, the checks that fail, and what moved since the
/// previous run.
fn conclusion(
    out: &mut String,
    checks: &[CheckView<'_>],
    error: Option<&str>,
    since: Since<'_>,
    tolerance: f64,
) {
    if let Some(e) = error {
        let _ = writeln!(
            out,
            "> [!CAUTION]\n> The watch gave no result: {}\n",
            escape_cell(e)
        );
    }
    for c in checks.iter().filter(|c| !c.passed) {
        let _ = writeln!(
            out,
            "The check {} fails: {}.\n",
            cell_code_span(c.check),
            escape_cell(c.error.unwrap_or("failed"))
        );
    }
    match since {
        Since::Previous(at, m) if !m.values.is_empty() => {
            let moves: Vec<String> = m.values.iter().map(value_move).collect();
            let _ = writeln!(
                out,
                "Since the previous run ({}): {}.\n",
                escape_cell(at),
                moves.join("; ")
            );
        }
        Since::Previous(at, _) if error.is_none() => {
            let _ = writeln!(
                out,
                "No value moved by more than {} since the previous run ({}).\n",
                tolerance_words(tolerance),
                escape_cell(at)
            );
        }
        Since::First if error.is_none() => {
            out.push_str("The first run of this watch: later runs are compared with it.\n\n");
        }
        _ => {}
    }
}

/// `/total 40 → 42 (+2 (+5.00 %))`: one value that moved.
fn value_move((k, b, a): &(&str, Option<&Value>, Option<&Value>)) -> String {
    let show = |v: &Option<&Value>| v.map(|v| cell(k, v)).unwrap_or_else(|| "(none)".into());
    let d = match difference(k, *b, *a).as_str() {
        "changed" | "no change" | "new" | "removed" => String::new(),
        d => format!(" ({d})"),
    };
    format!("{} {} → {}{d}", escape_cell(k), show(b), show(a))
}

/// The history table (newest first), folded beyond [`FOLD_ROWS`] rows as an
/// answer folds its long tables.
fn history_table(out: &mut String, history: &[HistoryRow<'_>]) {
    let mut columns: Vec<&String> = Vec::new();
    for row in history.iter().rev() {
        for k in row.values.keys() {
            if columns.len() < HISTORY_COLUMNS && !columns.contains(&k) {
                columns.push(k);
            }
        }
    }
    let folded = history.len() > FOLD_ROWS;
    if folded {
        let _ = writeln!(
            out,
            "<details><summary>History · {} runs, newest first</summary>\n",
            history.len()
        );
    } else {
        out.push_str("**History** (newest first)\n\n");
    }
    out.push_str("| date (UTC) |");
    for c in &columns {
        let _ = write!(out, " {} |", escape_cell(c));
    }
    out.push_str(" checks |\n| --- |");
    for _ in &columns {
        out.push_str(" --: |");
    }
    out.push_str(" --- |\n");
    for row in history.iter().rev() {
        let _ = write!(out, "| {} |", escape_cell(row.at));
        for c in &columns {
            let v = row
                .values
                .get(*c)
                .map_or_else(|| "–".into(), |v| cell(c, v));
            let _ = write!(out, " {v} |");
        }
        let status = match (row.error, row.failing) {
            (Some(_), _) => "no result".to_string(),
            (None, 0) => "pass".to_string(),
            (None, n) => format!("{n} failing"),
        };
        let _ = writeln!(out, " {status} |");
    }
    out.push_str(if folded { "\n</details>\n\n" } else { "\n" });
}

/// The details, folded last as an answer's code and sandbox are: the watch
/// file, its tolerance, every check and the code's hash.
fn watch_details(out: &mut String, s: &Sticky<'_>) {
    let what = if s.checks.is_empty() {
        "Watch file and code"
    } else {
        "Watch file, checks and code"
    };
    let _ = writeln!(
        out,
        "<details><summary>{what}</summary>\n\nFrom `{}`; a value counts as changed when it moves by more than {}.\n",
        escape_cell(s.file),
        tolerance_words(s.tolerance),
    );
    if !s.checks.is_empty() {
        out.push_str("**Checks**\n\n");
        checks_list(out, s.checks);
        out.push('\n');
    }
    if let Some(sha) = s.code_sha256 {
        let _ = writeln!(out, "code sha256 `{}`\n", escape_cell(sha));
    }
    out.push_str("</details>\n");
}

/// The sticky comment of a watch, in an answer's order: the status, the
/// conclusion (no result, failing checks, what moved), the values (the
/// headline figures, with their change since the previous run), the
/// history chart, the history table, then the details folded; the hidden
/// markers first.
pub(crate) fn watch_sticky(s: &Sticky<'_>) -> String {
    let mut out = format!("{}\n{}\n", watch_marker(s.name), s.state);
    let failing = s.checks.iter().filter(|c| !c.passed).count();
    let head = match (s.error, failing) {
        (Some(_), _) => "❌ no result",
        (None, 0) => "✅ all checks pass",
        (None, _) => "❌ a check fails",
    };
    let runs = s.history.len();
    let _ = writeln!(
        out,
        "### compute-bot watch `{}` — {head}\n\n**Status:** {} · {runs} run{} in the history · last run: [workflow run]({})\n",
        escape_cell(s.name),
        checks_status(s.checks, s.error),
        if runs == 1 { "" } else { "s" },
        s.run_url
    );
    // The previous run: the row before the newest (this run's).
    let previous = s
        .history
        .len()
        .checked_sub(2)
        .map(|i| &s.history[i])
        .filter(|p| p.error.is_none());
    let since = match (s.history.len(), previous, s.moved) {
        (0 | 1, _, _) => Since::First,
        (_, Some(p), Some(m)) => Since::Previous(p.at, m),
        _ => Since::NotShown,
    };
    conclusion(&mut out, s.checks, s.error, since, s.tolerance);
    values_table(&mut out, s.values, previous.map(|p| p.values));
    if let Some(chart) = s.chart {
        out.push_str(chart);
        out.push('\n');
    }
    if !s.history.is_empty() {
        history_table(&mut out, s.history);
    }
    watch_details(&mut out, s);
    out
}

/// What changed since the previous run, for the notification.
pub(crate) struct Moved<'a> {
    /// Values that moved beyond the tolerance: pointer, before, after.
    pub(crate) values: Vec<(&'a str, Option<&'a Value>, Option<&'a Value>)>,
    /// Checks that started failing, with why.
    pub(crate) started_failing: Vec<(&'a str, &'a str)>,
    /// Checks that pass again.
    pub(crate) stopped_failing: Vec<&'a str>,
    /// The run gives no result any more (why), or gives one again.
    pub(crate) result: Option<Result<(), &'a str>>,
}

impl Moved<'_> {
    /// True when nothing moved (then nothing is posted).
    pub(crate) fn is_empty(&self) -> bool {
        self.values.is_empty()
            && self.started_failing.is_empty()
            && self.stopped_failing.is_empty()
            && self.result.is_none()
    }
}

/// The short notification that links the sticky comment.
pub(crate) fn watch_notification(name: &str, sticky_url: &str, m: &Moved<'_>) -> String {
    let mut out = format!("**compute-bot watch `{}`**: ", escape_cell(name));
    let mut parts = Vec::new();
    parts.extend(m.values.iter().map(value_move));
    for (c, why) in &m.started_failing {
        parts.push(format!(
            "check {} started failing ({})",
            escape_cell(c),
            escape_cell(why)
        ));
    }
    for c in &m.stopped_failing {
        parts.push(format!("check {} passes again", escape_cell(c)));
    }
    match m.result {
        Some(Err(why)) => parts.push(format!("no result any more ({})", escape_cell(why))),
        Some(Ok(())) => parts.push("gives a result again".into()),
        None => {}
    }
    out.push_str(&parts.join("; "));
    let _ = writeln!(out, ". [Values, checks and history]({sticky_url})");
    out
}

/// One watch in a pull-request comment or a summary.
pub(crate) struct Compared<'a> {
    /// The watch's name.
    pub(crate) name: &'a str,
    /// Its file.
    pub(crate) file: &'a str,
    /// Values on the base (none: no result, see `base_error`).
    pub(crate) base: &'a BTreeMap<String, Value>,
    /// Values on the head.
    pub(crate) head: &'a BTreeMap<String, Value>,
    /// Why the base run gave no result.
    pub(crate) base_error: Option<&'a str>,
    /// Why the head run gave no result.
    pub(crate) head_error: Option<&'a str>,
    /// The checks on the head.
    pub(crate) checks: &'a [CheckView<'a>],
    /// The inputs the pull request changes.
    pub(crate) changed_inputs: Vec<&'a str>,
}

/// The pull request's watch comment (or its summary): for each watch, in
/// an answer's order, its status, the conclusion (no result, the checks that
/// fail on the head, the values that differ), before → after per value with
/// the difference, the checks on the head, and where the watch comes from.
pub(crate) fn watch_pull_request(
    base_sha: &str,
    head_sha: &str,
    watches: &[Compared<'_>],
    run_url: &str,
) -> String {
    let short = |s: &str| s.chars().take(7).collect::<String>();
    let mut out = format!(
        "{WATCH_PR_MARKER}\n### compute-bot watches\n\nEach watch's code as it is on the base branch (`{}`), run on the base and on the head (`{}`) versions of its inputs. [Workflow run]({run_url}).\n\n",
        escape_cell(&short(base_sha)),
        escape_cell(&short(head_sha))
    );
    for w in watches {
        compared_md(&mut out, w);
    }
    out
}

/// One watch of [`watch_pull_request`].
fn compared_md(out: &mut String, w: &Compared<'_>) {
    let failing = w.checks.iter().filter(|c| !c.passed).count();
    let head = match (w.head_error, failing) {
        (Some(_), _) => "❌ no result on the head",
        (None, 0) => "✅ checks pass",
        (None, _) => "❌ a check fails on the head",
    };
    let _ = writeln!(out, "#### `{}` — {head}\n", escape_cell(w.name));
    for (side, e) in [("base", w.base_error), ("head", w.head_error)] {
        if let Some(e) = e {
            let _ = writeln!(
                out,
                "> [!CAUTION]\n> No result on the {side}: {}\n",
                escape_cell(e)
            );
        }
    }
    for c in w.checks.iter().filter(|c| !c.passed) {
        let _ = writeln!(
            out,
            "The check {} fails on the head: {}.\n",
            cell_code_span(c.check),
            escape_cell(c.error.unwrap_or("failed"))
        );
    }
    let mut keys: Vec<&String> = w.base.keys().collect();
    for k in w.head.keys() {
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    if w.base_error.is_none() && w.head_error.is_none() {
        let differ = keys
            .iter()
            .filter(|k| w.base.get(**k) != w.head.get(**k))
            .count();
        let _ = writeln!(
            out,
            "{}\n",
            match differ {
                0 => "Every value is the same on the head.".to_string(),
                1 => format!("1 of {} values differs on the head.", keys.len()),
                n => format!("{n} of {} values differ on the head.", keys.len()),
            }
        );
    }
    if !keys.is_empty() {
        out.push_str("| value | base | head | difference |\n| --- | --: | --: | --- |\n");
        for k in keys {
            let (b, a) = (w.base.get(k), w.head.get(k));
            let show = |v: Option<&Value>| v.map_or_else(|| "–".into(), |v| cell(k, v));
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} |",
                escape_cell(k),
                show(b),
                show(a),
                escape_cell(&difference(k, b, a))
            );
        }
        out.push('\n');
    }
    if !w.checks.is_empty() {
        out.push_str("Checks on the head:\n\n");
        checks_list(out, w.checks);
        out.push('\n');
    }
    let inputs: Vec<String> = w.changed_inputs.iter().map(|p| escape_cell(p)).collect();
    let _ = writeln!(
        out,
        "<sub>From `{}`; changed inputs: {}.</sub>\n",
        escape_cell(w.file),
        inputs.join(", ")
    );
}

/// The reply to `/compute watch <name>`: the watch file, ready to commit.
pub(crate) fn watch_file_reply(name: &str, source: &str, yaml: &str) -> String {
    format!(
        "### compute-bot: a watch for this result\n\nCommit this as `.github/compute/{}.yml` to keep running the exact code of [this result]({source}) every week and on pull requests that change its inputs. Add `checks`, a `tolerance` and the `issue` to suit; `compute-bot watch check` validates the file.\n\n{}",
        escape_cell(name),
        crate::markdown::fenced("yaml", yaml)
    )
}

/// The reply when `/compute watch` has no usable name or result.
pub(crate) fn watch_file_unavailable(why: &str, command: &str) -> String {
    format!(
        "No watch file: {}. Write `{} watch <name>` (letters, digits, `-`, `_`, `.`) under a compute-bot result.",
        escape_cell(why),
        command.replace('`', "'")
    )
}

/// One watch of a schedule or dispatch run in the job summary, in the
/// sticky comment's order: the status, the conclusion (no result, failing
/// checks), the values, the checks, the link to the watch's comment.
pub(crate) fn watch_summary(
    name: &str,
    values: &BTreeMap<String, Value>,
    checks: &[CheckView<'_>],
    error: Option<&str>,
    sticky_url: Option<&str>,
) -> String {
    let mut out = format!(
        "### compute-bot watch `{}`\n\n**Status:** {}\n\n",
        escape_cell(name),
        checks_status(checks, error)
    );
    conclusion(&mut out, checks, error, Since::NotShown, 0.0);
    values_table(&mut out, values, None);
    if !checks.is_empty() {
        out.push_str("**Checks**\n\n");
        checks_list(&mut out, checks);
        out.push('\n');
    }
    if let Some(u) = sticky_url {
        let _ = writeln!(out, "[The watch's comment]({u})\n");
    }
    out
}

/// Why a watch thread has nothing to make a watch file of, or to replay.
pub(crate) const NO_RESULT_IN_THREAD: &str =
    "this thread has no compute-bot result with a run record";

/// A watch run without a result and without a reason: how it ended.
pub(crate) fn watch_run_ended(status: &str) -> String {
    format!("the run ended {status}")
}

/// A watch whose pinned `code_sha256` is not the code the model wrote.
pub(crate) fn watch_not_pinned(sha256: &str, pinned: &str, file: &str) -> String {
    format!(
        "the code the model wrote has SHA-256 {sha256}, not the pinned {pinned}; it was not run. Put the approved code under `code:` in {file}"
    )
}

/// The summary when watch files cannot be read: one line per problem.
pub(crate) fn watch_files_unusable(lines: &[String]) -> String {
    format!(
        "### compute-bot\n\nThe watch files cannot be used:\n\n{}\n",
        lines.join("\n")
    )
}

/// A schedule or dispatch run with neither a goal nor watch files.
pub(crate) fn nothing_to_watch(folder: &str) -> String {
    format!(
        "a schedule or workflow_dispatch run needs the action input `goal` (or `code`), or watch files in `{folder}/*.yml` (the `watches` input names another folder)"
    )
}

/// The `watch` input names watches the folder does not have.
pub(crate) fn unknown_watches(unknown: &[&String], folder: &str, known: &[&str]) -> String {
    format!(
        "the `watch` input names {:?}, which {folder} does not have; its watches are {}",
        unknown,
        known.join(", ")
    )
}

/// A watch run on a pull request's side without a temporary workspace.
pub(crate) fn watch_no_workspace(error: &str) -> String {
    format!("no temporary workspace: {error}")
}

/// A watch's inputs could not be read at commit `sha`.
pub(crate) fn watch_inputs_unreadable(sha: &str, error: &str) -> String {
    format!("the inputs could not be read at {sha}: {error}")
}

/// The pull request itself could not be read.
pub(crate) fn pull_unreadable(number: u64, error: &str) -> String {
    format!("cannot read pull request #{number}: {error}")
}

/// The pull request's files could not be listed.
pub(crate) fn pull_files_unreadable(number: u64, error: &str) -> String {
    format!("cannot list the files of pull request #{number}: {error}")
}

/// The base's watch files could not be read.
pub(crate) fn watch_files_unreadable(error: &str) -> String {
    format!("cannot read the watch files: {error}")
}

/// Put before the summary when the pull request's comment could not be posted.
pub(crate) fn pull_comment_unposted(error: &str) -> String {
    format!(
        "> [!CAUTION]\n> compute-bot could not post to the pull request: {}\n\n",
        crate::markdown::neutralize(error)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_state_marker_round_trips_and_cannot_close_the_comment() {
        let json = br#"{"x":"--> <!-- @alice"}"#;
        let m = watch_state_marker(json);
        assert!(!m[4..m.len() - 4].contains("-->"), "{m}");
        assert_eq!(read_watch_state(&format!("a\n{m}\nb")).unwrap(), json);
    }

    #[test]
    fn differences_are_signed_with_the_relative_change() {
        let d = |b: Value, a: Value| difference("/total", Some(&b), Some(&a));
        assert_eq!(d(json!(42), json!(50)), "+8 (+19.05 %)");
        assert_eq!(d(json!(0.3), json!(0.1)), "-0.2 (-66.67 %)");
        assert_eq!(d(json!(0), json!(2)), "+2");
        assert_eq!(d(json!("a"), json!("b")), "changed");
        assert_eq!(difference("/t", None, Some(&json!(1))), "new");
        assert_eq!(difference("/t", Some(&json!(1)), None), "removed");
        assert_eq!(d(json!(1), json!(1)), "no change");
        // The answer's number rules: separators, money to the cent.
        assert_eq!(
            d(json!(100), json!(1_234_567)),
            "+1,234,467 (+1,234,467.00 %)"
        );
        assert_eq!(
            difference("/revenue", Some(&json!(100_000.5)), Some(&json!(111_797.4))),
            "+11,796.90 (+11.80 %)"
        );
    }

    #[test]
    fn values_are_written_by_the_answers_number_rules() {
        let values = BTreeMap::from([
            ("/revenue".to_string(), json!(111797.4)),
            ("/rows".to_string(), json!(1234567)),
            ("/share".to_string(), json!(0.08330713612071676)),
            ("/year".to_string(), json!(2026)),
        ]);
        let t = watch_summary("w", &values, &[], None, None);
        for row in [
            "| /revenue | 111,797.40 |",
            "| /rows | 1,234,567 |",
            "| /share | 0.08331 |",
            "| /year | 2026 |",
        ] {
            assert!(t.contains(row), "{row} in {t}");
        }
    }

    #[test]
    fn the_sticky_comment_follows_the_answers_order() {
        let older = BTreeMap::from([("/total".to_string(), json!(1000))]);
        let now = BTreeMap::from([("/total".to_string(), json!(1500))]);
        let history: Vec<HistoryRow<'_>> = (0..12)
            .map(|i| HistoryRow {
                at: if i == 11 {
                    "2026-02-02 06:00"
                } else {
                    "2026-01-01 06:00"
                },
                values: if i == 11 { &now } else { &older },
                failing: usize::from(i == 11),
                error: None,
            })
            .collect();
        let checks = [CheckView {
            check: "total < 1200",
            passed: false,
            error: Some("the expression is false"),
        }];
        let (b, a) = (json!(1000), json!(1500));
        let moved = Moved {
            values: vec![("/total", Some(&b), Some(&a))],
            started_failing: vec![],
            stopped_failing: vec![],
            result: None,
        };
        let body = watch_sticky(&Sticky {
            name: "w",
            file: "w.yml",
            code_sha256: Some("abc"),
            values: &now,
            checks: &checks,
            error: None,
            history: &history,
            tolerance: 0.05,
            run_url: "u",
            state: "",
            chart: Some("```mermaid\nchart\n```\n"),
            moved: Some(&moved),
        });
        let at = |part: &str| {
            body.find(part)
                .unwrap_or_else(|| panic!("{part} in {body}"))
        };
        let order = [
            at("**Status:** failed · the check fails"),
            at("The check `total < 1200` fails"),
            at("Since the previous run (2026-01-01 06:00): /total 1,000 → 1,500 (+500 (+50.00 %))"),
            at("| /total | 1,500 | +500 (+50.00 %) |"),
            at("```mermaid"),
            at("<details><summary>History · 12 runs"),
            at("<details><summary>Watch file, checks and code"),
            at("- ❌ total &lt; 1200"),
        ];
        assert!(order.is_sorted(), "{order:?}\n{body}");
    }

    #[test]
    fn untrusted_text_is_escaped() {
        let v = BTreeMap::from([("/who".to_string(), json!("@alice <!-- |"))]);
        let t = watch_summary("w", &v, &[], None, None);
        assert!(t.contains("@\u{200b}alice &lt;!-- \\|"), "{t}");
    }
}
