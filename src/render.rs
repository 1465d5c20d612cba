//! Renders a [`Report`] for people: the GitHub comment ([`markdown`]), the job
//! summary ([`summary`]) and a terminal ([`text`]).
//!
//! The comment is exactly what is posted. It never exceeds GitHub's 65,536
//! characters: when the full rendering is too long, the largest parts are
//! cut first (stdout/stderr excerpts, then the result table and lists, then
//! the code) and the comment says what was cut. Every string that comes from
//! a result, the goal or the model is escaped so that it cannot inject HTML,
//! mentions or table cells.

use crate::units::{SIGNIFICANT_DIGITS, readable_json_number, readable_number};
use std::fmt::Write as _;

use serde_json::Value;

use crate::policy::{Decision, Severity, Verdict};
use crate::report::{Attempt, Report, ReportStatus};
use crate::sandbox::{Outcome, RunStatus};
use crate::units::{ByteSize, format_duration};

/// GitHub's limit on a comment body, in characters.
pub const COMMENT_LIMIT: usize = 65_536;
/// GitHub's limit on one step's job summary, in bytes.
pub(crate) const SUMMARY_LIMIT: usize = 1_048_576;

/// Most points a chart shows.
const CHART_MAX_POINTS: usize = 100;

/// Where the rendering goes and what links to put in it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RenderContext {
    /// The workflow run link (`{server}/{repo}/actions/runs/{id}`).
    pub run_url: Option<String>,
    /// A hidden marker to put first (e.g. `github::texts::run_marker`).
    pub marker: Option<String>,
    /// The comment command, for the reproduce line (`/compute` when unset).
    pub command: Option<String>,
    /// The approval part of a needs-approval report (or the plan part of a
    /// planned one), written by the front end that can act on it (the GitHub
    /// comment's is `github::texts::approval_for` / `github::texts::plan_for`);
    /// it replaces the code and findings. Unset, such a report shows its code
    /// and findings as any other.
    pub approval: Option<String>,
    /// The run's files as the front end shows them (the GitHub front end's
    /// is `github::assets`: images inline, other files linked); shown after
    /// the explanation, in place of the mermaid chart when it has an image.
    pub files: Option<FilesBlock>,
}

/// The run's files, written as Markdown by a front end that can host them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FilesBlock {
    /// The Markdown (a heading, images, links, notes).
    pub markdown: String,
    /// True when it shows at least one image: the mermaid chart rebuilt
    /// from the result is left out then.
    pub has_images: bool,
}

// ---------------------------------------------------------------- escaping

/// The escaping helpers live in the shared Markdown module (so the GitHub
/// texts use them without knowing render); re-exported for the renderers.
pub(crate) use crate::markdown::{escape_cell, fenced, is_bidi_control, neutralize, show_bidi};

/// Cuts `s` to at most `max` characters, adding `…` when cut.
pub(crate) fn cut_chars(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

fn tail_chars(s: &str, max: usize) -> (String, bool) {
    let n = s.chars().count();
    if n <= max {
        (s.to_string(), false)
    } else {
        (s.chars().skip(n - max).collect(), true)
    }
}

fn short_sha(s: &str) -> &str {
    s.get(..s.len().min(12)).unwrap_or(s)
}

// ---------------------------------------------------------------- budgets

/// How much of each part to show; tightened step by step until it fits.
#[derive(Debug, Clone, Copy)]
struct Budget {
    /// Characters of each of stdout/stderr (0 = leave them out).
    output: usize,
    /// Rows of a result table.
    rows: usize,
    /// Entries of each audit list.
    items: usize,
    /// Characters of a result shown as JSON.
    json: usize,
    /// Characters of code (`usize::MAX` = all of it).
    code: usize,
    /// Characters of the explanation.
    prose: usize,
}

const fn budget(
    output: usize,
    rows: usize,
    items: usize,
    json: usize,
    code: usize,
    prose: usize,
) -> Budget {
    Budget {
        output,
        rows,
        items,
        json,
        code,
        prose,
    }
}

const ALL: usize = usize::MAX;

/// Comment budgets, loosest first: stdout/stderr go first, then the result
/// table and lists, then the explanation, and the code last.
const COMMENT_BUDGETS: [Budget; 9] = [
    budget(3000, 50, 50, 20_000, ALL, 20_000),
    budget(1000, 50, 30, 10_000, ALL, 20_000),
    budget(0, 30, 20, 5_000, ALL, 20_000),
    budget(0, 10, 10, 2_000, ALL, 10_000),
    budget(0, 0, 5, 500, ALL, 4_000),
    budget(0, 0, 3, 200, 30_000, 4_000),
    budget(0, 0, 3, 200, 10_000, 2_000),
    budget(0, 0, 1, 100, 2_000, 2_000),
    budget(0, 0, 0, 100, 0, 1_000),
];

const SUMMARY_BUDGETS: [Budget; 2] = [
    budget(64 * 1024, 1000, 1000, 200_000, ALL, 100_000),
    budget(8 * 1024, 200, 200, 50_000, ALL, 50_000),
];

#[derive(Clone, Copy, PartialEq, Eq)]
enum Target {
    Comment,
    Summary,
}

/// The comment posted to GitHub (never over [`COMMENT_LIMIT`] characters).
pub fn markdown(report: &Report, ctx: &RenderContext) -> String {
    fit(report, ctx, Target::Comment)
}

/// The job summary (never over [`SUMMARY_LIMIT`] bytes); no hidden marker.
pub(crate) fn summary(report: &Report, ctx: &RenderContext) -> String {
    let ctx = RenderContext {
        marker: None,
        ..ctx.clone()
    };
    fit(report, &ctx, Target::Summary)
}

fn fit(report: &Report, ctx: &RenderContext, target: Target) -> String {
    let fits = |s: &str| match target {
        Target::Comment => s.chars().count() <= COMMENT_LIMIT,
        Target::Summary => s.len() <= SUMMARY_LIMIT,
    };
    let budgets: Vec<Budget> = match target {
        Target::Comment => COMMENT_BUDGETS.to_vec(),
        Target::Summary => SUMMARY_BUDGETS
            .iter()
            .chain(COMMENT_BUDGETS.iter())
            .copied()
            .collect(),
    };
    let mut last = String::new();
    for (level, b) in budgets.iter().enumerate() {
        let cut_note = (level > 0).then(|| cut_note(&budgets[0], b, target));
        let s = render_md(report, ctx, b, cut_note.as_deref());
        if fits(&s) {
            return s;
        }
        last = s;
    }
    hard_cut(&last, target)
}

fn cut_note(full: &Budget, b: &Budget, target: Target) -> String {
    let mut parts = Vec::new();
    if b.output < full.output {
        parts.push(if b.output == 0 {
            "stdout/stderr left out"
        } else {
            "stdout/stderr shortened"
        });
    }
    if b.rows < full.rows || b.json < full.json {
        parts.push(if b.rows == 0 {
            "result table left out (the result JSON is cut)"
        } else {
            "result table shortened"
        });
    }
    if b.items < full.items {
        parts.push("audit lists shortened");
    }
    if b.prose < full.prose {
        parts.push("explanation shortened");
    }
    if b.code < full.code {
        parts.push(if b.code == 0 {
            "code left out (its sha256 is shown)"
        } else {
            "code cut (its sha256 is of the whole code)"
        });
    }
    let limit = match target {
        Target::Comment => "GitHub's 65,536-character comment limit",
        Target::Summary => "the 1 MiB job summary limit",
    };
    format!(
        "> [!NOTE]\n> Parts of this report were cut to fit {limit}: {}. The full report is in the job summary and the JSON report file (output `report_path`).\n",
        parts.join("; ")
    )
}

/// Last resort: cut the text and close any open fence and `<details>`.
fn hard_cut(s: &str, target: Target) -> String {
    let note = "\n\n> [!WARNING]\n> This report was cut at the size limit; see the job summary and the JSON report file.\n";
    let max = match target {
        Target::Comment => COMMENT_LIMIT,
        Target::Summary => SUMMARY_LIMIT,
    } - note.len()
        - 2_000;
    let mut out = String::new();
    for (count, c) in s.chars().enumerate() {
        let over = match target {
            Target::Comment => count >= max,
            Target::Summary => out.len() + c.len_utf8() > max,
        };
        if over {
            break;
        }
        out.push(c);
    }
    // Close an open fence (count fence lines) and open <details>.
    let mut open: Option<String> = None;
    for line in out.lines() {
        let t = line.trim_start();
        let ticks: String = t.chars().take_while(|c| *c == '`').collect();
        if ticks.len() >= 3 {
            match &open {
                None => open = Some(ticks),
                Some(f)
                    if t.trim() == f.as_str()
                        || (ticks.len() >= f.len() && t.trim().chars().all(|c| c == '`')) =>
                {
                    open = None
                }
                _ => {}
            }
        }
    }
    if let Some(f) = open {
        out.push('\n');
        out.push_str(&f);
    }
    let opened = out.matches("<details").count();
    let closed = out.matches("</details>").count();
    for _ in closed..opened {
        out.push_str("\n</details>");
    }
    out.push_str(note);
    out
}

// ---------------------------------------------------------------- markdown

fn status_heading(report: &Report) -> &'static str {
    match report.status {
        ReportStatus::Ok => "✅ compute-bot: result",
        ReportStatus::Failed => "❌ compute-bot: no result",
        ReportStatus::NeedsApproval => "⏸️ compute-bot: needs approval",
        ReportStatus::Planned => "📝 compute-bot: plan (nothing ran)",
        ReportStatus::Error => "⚠️ compute-bot: configuration error",
    }
}

fn render_md(report: &Report, ctx: &RenderContext, b: &Budget, cut_note: Option<&str>) -> String {
    let mut s = String::new();
    if let Some(m) = &ctx.marker {
        s.push_str(m);
        s.push('\n');
    }
    // The run record, hidden and first, so that no cut can lose it.
    if let Some(r) = &report.record {
        s.push_str(&r.marker(report.result.as_ref()));
        s.push('\n');
    }
    let _ = writeln!(s, "### {}\n", status_heading(report));
    s.push_str(&status_line(report));
    s.push('\n');
    if let Some(goal) = &report.goal {
        let g = cut_chars(goal.lines().collect::<Vec<_>>().join(" ").trim(), 500);
        let _ = writeln!(s, "\n**Goal:** {}", escape_cell(&g));
    }
    if let Some(note) = cut_note {
        s.push('\n');
        s.push_str(note);
    }
    if let Some(answer) = report.result.as_ref().and_then(answer_of) {
        let _ = writeln!(s, "\n**Answer:** {answer}");
    }
    if let Some(result) = &report.result
        && !result.is_null()
        && !is_scalar(result)
    {
        s.push_str("\n#### Result\n\n");
        s.push_str(&result_md(result, b));
    }
    if report.result.as_ref().is_some_and(has_rounded_numbers) {
        let _ = writeln!(
            s,
            "\n_Numbers are shown to {SIGNIFICANT_DIGITS} significant digits; the JSON report and the `result` output have every digit._"
        );
    }
    if let Some(ex) = &report.explanation {
        let _ = write!(
            s,
            "\n#### Explanation\n\n{}\n",
            neutralize(&cut_chars(ex.trim(), b.prose))
        );
        let n = ex.trim().chars().count();
        if n > b.prose {
            let _ = writeln!(
                s,
                "\n_The explanation was cut at {} of {n} characters._",
                b.prose
            );
        }
    }
    if let Some(files) = &ctx.files {
        s.push('\n');
        s.push_str(&files.markdown);
    }
    if let Some(chart) = report
        .result
        .as_ref()
        .filter(|_| !ctx.files.as_ref().is_some_and(|f| f.has_images))
        .and_then(|r| chart_for(r, report.goal.as_deref()))
    {
        s.push('\n');
        s.push_str(&chart);
    }
    let command = ctx.command.as_deref().unwrap_or("/compute");
    let approval = ctx.approval.as_deref().filter(|_| {
        matches!(
            report.status,
            ReportStatus::NeedsApproval | ReportStatus::Planned
        )
    });
    if let Some(block) = approval {
        s.push('\n');
        s.push_str(block);
    } else if let Some(code) = &report.code {
        s.push('\n');
        s.push_str(&code_md(report, code, b));
    }
    if approval.is_none()
        && let Some(v) = &report.verdict
        && !v.findings.is_empty()
    {
        s.push('\n');
        s.push_str(&findings_md(v, b.items));
    }
    if let Some(o) = &report.outcome {
        s.push('\n');
        s.push_str(&sandbox_md(o, b));
    }
    if report.attempts.len() > 1 {
        s.push('\n');
        s.push_str(&attempts_md(&report.attempts));
    }
    if report.record.is_some() {
        s.push_str(&crate::record::reproduce_line(command));
    }
    s.push_str("\n---\n");
    let mut foot = Vec::new();
    if let Some(url) = &ctx.run_url {
        foot.push(format!("[Workflow run]({url})"));
    }
    if let Some(p) = &report.policy {
        foot.push(format!("policy `{}`", p.replace('`', "'")));
    }
    foot.push(crate::usage::Usage::of(report).line());
    if let Some(m) = report.code_model() {
        foot.push(model_md(&m.model, &m.provider, m.fallback));
    }
    foot.push(format!("compute-bot {}", env!("CARGO_PKG_VERSION")));
    let _ = writeln!(s, "<sub>{}</sub>", foot.join(" · "));
    s
}

/// The model that wrote the code: "code by `gpt-4o-mini` (openai)", or
/// "code by the fallback model `claude-haiku-4-5` (anthropic)".
fn model_md(model: &str, provider: &str, fallback: bool) -> String {
    let which = if fallback { "the fallback model " } else { "" };
    format!(
        "code by {which}`{}` ({})",
        model.replace('`', "'"),
        escape_cell(provider)
    )
}

fn status_line(report: &Report) -> String {
    let n = report.attempts.len();
    let attempts = if n == 1 {
        "1 attempt".to_string()
    } else {
        format!("{n} attempts")
    };
    match report.status {
        ReportStatus::Ok => format!("**Status:** ok · {attempts} · result validated"),
        ReportStatus::Failed | ReportStatus::Error => format!(
            "**Status:** {} · {attempts} · **stopped:** {}",
            report.status.label(),
            escape_cell(&cut_chars(
                report.stop_reason.as_deref().unwrap_or("no reason given"),
                1000
            ))
        ),
        ReportStatus::Planned => {
            format!("**Status:** planned · {attempts} · no container was started")
        }
        ReportStatus::NeedsApproval => format!(
            "**Status:** needs approval · {attempts} · {}",
            escape_cell(&cut_chars(
                report
                    .stop_reason
                    .as_deref()
                    .unwrap_or("the policy asks a human to approve this code"),
                1000
            ))
        ),
    }
}

fn is_scalar(v: &Value) -> bool {
    !(v.is_object() || v.is_array())
}

fn scalar_inline(v: &Value) -> String {
    match v {
        Value::String(s) => escape_cell(&cut_chars(s, 2000)),
        Value::Null => "null".into(),
        Value::Number(n) => format!("`{}`", readable_json_number(n)),
        other => format!("`{other}`"),
    }
}

/// The one-line answer: a scalar result, or the result's scalar `answer` field.
fn answer_of(result: &Value) -> Option<String> {
    if is_scalar(result) && !result.is_null() {
        return Some(scalar_inline(result));
    }
    let a = result.get("answer")?;
    is_scalar(a).then(|| scalar_inline(a))
}

fn cell_of(v: &Value) -> String {
    match v {
        Value::String(s) => escape_cell(&cut_chars(s, 300)),
        Value::Null => String::new(),
        Value::Number(n) => readable_json_number(n),
        Value::Bool(_) => v.to_string(),
        other => format!(
            "<code>{}</code>",
            escape_cell(&cut_chars(&other.to_string(), 200))
        ),
    }
}

fn json_block(v: &Value, max: usize) -> String {
    let pretty = serde_json::to_string_pretty(v).unwrap_or_default();
    let n = pretty.chars().count();
    if n <= max {
        fenced("json", &pretty)
    } else {
        let cut: String = pretty.chars().take(max).collect();
        format!(
            "{}_The result JSON was cut at {max} of {n} characters._\n",
            fenced("json", &cut)
        )
    }
}

fn result_md(result: &Value, b: &Budget) -> String {
    let mut s = String::new();
    match result {
        Value::Object(map) => {
            if b.rows == 0 {
                return json_block(result, b.json);
            }
            // Lists of records get a table of their own below the key/value table.
            let is_records = |v: &Value| {
                v.as_array()
                    .is_some_and(|a| !a.is_empty() && a.iter().all(Value::is_object))
            };
            let flat: Vec<(&String, &Value)> = map.iter().filter(|(_, v)| !is_records(v)).collect();
            if !flat.is_empty() {
                s.push_str("| Key | Value |\n| --- | --- |\n");
                for (k, v) in flat.iter().take(b.rows) {
                    let _ = writeln!(s, "| {} | {} |", escape_cell(k), cell_of(v));
                }
                if flat.len() > b.rows {
                    let _ = writeln!(
                        s,
                        "\n_… {} more keys ({} in all)._",
                        flat.len() - b.rows,
                        flat.len()
                    );
                }
            }
            for (k, v) in map.iter().filter(|(_, v)| is_records(v)).take(4) {
                let _ = write!(s, "\n**{}**\n\n{}", escape_cell(k), result_md(v, b));
            }
        }
        Value::Array(items) if !items.is_empty() && items.iter().all(Value::is_object) => {
            if b.rows == 0 {
                return json_block(result, b.json);
            }
            let mut cols: Vec<&str> = Vec::new();
            for it in items {
                for k in it.as_object().into_iter().flat_map(|m| m.keys()) {
                    if !cols.contains(&k.as_str()) && cols.len() < 12 {
                        cols.push(k);
                    }
                }
            }
            let _ = writeln!(
                s,
                "| {} |",
                cols.iter()
                    .map(|c| escape_cell(c))
                    .collect::<Vec<_>>()
                    .join(" | ")
            );
            let _ = writeln!(s, "|{}", " --- |".repeat(cols.len()));
            for it in items.iter().take(b.rows) {
                let row: Vec<String> = cols
                    .iter()
                    .map(|c| it.get(*c).map(cell_of).unwrap_or_default())
                    .collect();
                let _ = writeln!(s, "| {} |", row.join(" | "));
            }
            if items.len() > b.rows {
                let _ = writeln!(
                    s,
                    "\n_… {} more rows ({} in all)._",
                    items.len() - b.rows,
                    items.len()
                );
            }
        }
        Value::Array(items) if items.iter().all(is_scalar) => {
            if b.rows == 0 {
                return json_block(result, b.json);
            }
            s.push_str("| # | Value |\n| --- | --- |\n");
            for (i, v) in items.iter().take(b.rows).enumerate() {
                let _ = writeln!(s, "| {} | {} |", i + 1, cell_of(v));
            }
            if items.len() > b.rows {
                let _ = writeln!(
                    s,
                    "\n_… {} more values ({} in all)._",
                    items.len() - b.rows,
                    items.len()
                );
            }
        }
        other => s.push_str(&json_block(other, b.json)),
    }
    s
}

// ---------------------------------------------------------------- chart

/// A numeric series found in a result: labels, values and a title.
#[derive(Debug, Clone, PartialEq)]
struct Series {
    /// What the series is (a field name, or `result`).
    title: String,
    /// The x-axis labels.
    labels: Vec<String>,
    /// The values.
    values: Vec<f64>,
    /// True when labels came from the data (bar chart), false for positions (line).
    labelled: bool,
    /// True when the labels are points in time (a date field or date-like
    /// labels): a line, not bars.
    over_time: bool,
}

/// Label fields that name a point in time.
const TIME_KEYS: [&str; 13] = [
    "year",
    "quarter",
    "month",
    "week",
    "day",
    "date",
    "time",
    "timestamp",
    "period",
    "t",
    "epoch",
    "datetime",
    "hour",
];

/// True for labels such as `2024`, `2024-01`, `2024-01-05`, `2024/01/05`,
/// `2024-W03`, `2024Q1` or `2024-01-05T10:00`.
fn looks_like_date(label: &str) -> bool {
    let b = label.as_bytes();
    b.len() >= 4
        && b[..4].iter().all(u8::is_ascii_digit)
        && (b.len() == 4 || matches!(b[4], b'-' | b'/' | b'Q' | b'q'))
}

const LABEL_NUMERIC_KEYS: [&str; 12] = [
    "year", "month", "day", "date", "x", "t", "time", "step", "index", "i", "n", "epoch",
];

fn series_of(v: &Value, title: &str, hint: Option<&str>) -> Option<Series> {
    let items = v.as_array()?;
    if items.len() < 2 {
        return None;
    }
    if items.iter().all(Value::is_number) {
        return Some(Series {
            title: title.to_string(),
            labels: (1..=items.len()).map(|i| i.to_string()).collect(),
            values: items.iter().filter_map(Value::as_f64).collect(),
            labelled: false,
            over_time: false,
        });
    }
    // Records with one label field and one or more numeric fields.
    let first = items[0].as_object()?;
    let keys: Vec<&String> = first.keys().collect();
    if keys.len() < 2 || keys.len() > 12 {
        return None;
    }
    let all = |k: &str, f: fn(&Value) -> bool| {
        items.iter().all(|it| {
            it.as_object()
                .is_some_and(|m| m.len() == keys.len() && m.get(k).is_some_and(f))
        })
    };
    let strings: Vec<&String> = keys
        .iter()
        .copied()
        .filter(|k| all(k, Value::is_string))
        .collect();
    let numbers: Vec<&String> = keys
        .iter()
        .copied()
        .filter(|k| all(k, Value::is_number))
        .collect();
    let is_label = |k: &str| LABEL_NUMERIC_KEYS.contains(&k.to_ascii_lowercase().as_str());
    let label = match strings.as_slice() {
        [one] => *one,
        [] => {
            let numeric_labels: Vec<&&String> = numbers.iter().filter(|k| is_label(k)).collect();
            match numeric_labels.as_slice() {
                [one] => **one,
                _ => return None,
            }
        }
        _ => return None,
    };
    let candidates: Vec<&String> = numbers.into_iter().filter(|k| *k != label).collect();
    if candidates.is_empty()
        || strings.len() + candidates.len() + usize::from(strings.is_empty()) != keys.len()
    {
        return None;
    }
    let value = pick_value_key(&candidates, hint);
    let labels: Vec<String> = items
        .iter()
        .map(|it| match &it[label.as_str()] {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect();
    let over_time = TIME_KEYS.contains(&label.to_ascii_lowercase().as_str())
        || labels.iter().all(|l| looks_like_date(l));
    Some(Series {
        title: if title == "result" {
            value.clone()
        } else {
            format!("{title}: {value}")
        },
        labels,
        values: items
            .iter()
            .filter_map(|it| it[value.as_str()].as_f64())
            .collect(),
        labelled: true,
        over_time,
    })
}

/// Of several numeric fields, the one to chart: named in the goal, else one
/// that names a measure, else the last.
fn pick_value_key<'a>(candidates: &[&'a String], hint: Option<&str>) -> &'a String {
    let hint = hint.unwrap_or("").to_ascii_lowercase();
    if let Some(k) = candidates
        .iter()
        .find(|k| !hint.is_empty() && hint.contains(&k.to_ascii_lowercase().replace('_', " ")))
    {
        return k;
    }
    const MEASURES: [&str; 9] = [
        "rate",
        "ratio",
        "conversion",
        "share",
        "mean",
        "average",
        "avg",
        "total",
        "value",
    ];
    if let Some(k) = candidates.iter().find(|k| {
        let l = k.to_ascii_lowercase();
        MEASURES.iter().any(|m| l.contains(m))
    }) {
        return k;
    }
    candidates[candidates.len() - 1]
}

/// Finds a numeric series: the result itself (a list of numbers, or of
/// records with one label and one numeric field), or the first such list
/// among an object's fields; preferring the numeric field the goal (`hint`)
/// names.
fn find_series_for(result: &Value, hint: Option<&str>) -> Option<Series> {
    if let Some(s) = series_of(result, "result", hint) {
        return Some(s);
    }
    result
        .as_object()?
        .iter()
        .find_map(|(k, v)| series_of(v, k, hint))
}

fn chart_text(s: &str) -> String {
    show_bidi(s)
        .chars()
        .filter(|c| !matches!(c, '"' | '`' | '\n' | '\r' | '[' | ']' | '<' | '>'))
        .take(40)
        .collect()
}

fn num(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

/// True when some number in `v` is shown with fewer digits than it has.
fn has_rounded_numbers(v: &Value) -> bool {
    match v {
        Value::Number(n) => readable_json_number(n) != n.to_string(),
        Value::Array(a) => a.iter().any(has_rounded_numbers),
        Value::Object(m) => m.values().any(has_rounded_numbers),
        _ => false,
    }
}

/// Most x-axis labels a chart shows by name; with more points the x axis
/// is numbered and its title names the first and last label.
const CHART_MAX_LABELS: usize = 8;

/// A mermaid `xychart-beta` block for the result's numeric series, if any.
#[cfg(test)]
fn chart(result: &Value) -> Option<String> {
    chart_for(result, None)
}

/// [`chart`], preferring the numeric field the goal (`hint`) names.
///
/// The y axis always includes zero (from zero up for positive values, so a
/// bar's height is its value; down to the lowest value when there are
/// negative ones). Up to [`CHART_MAX_LABELS`] points keep their labels on the
/// x axis; with more, the x axis is numbered 1…n (mermaid then picks readable
/// ticks) and its title names the first and last label. Values are written
/// to [`SIGNIFICANT_DIGITS`] significant digits.
fn chart_for(result: &Value, hint: Option<&str>) -> Option<String> {
    let s = find_series_for(result, hint)?;
    let total = s.values.len();
    let n = total.min(CHART_MAX_POINTS);
    let title = if total > n {
        format!("{} (first {n} of {total})", chart_text(&s.title))
    } else {
        chart_text(&s.title)
    };
    let values = &s.values[..n];
    let x_axis = if n <= CHART_MAX_LABELS {
        let labels: Vec<String> = s.labels[..n]
            .iter()
            .map(|l| format!("\"{}\"", chart_text(l)))
            .collect();
        format!("[{}]", labels.join(", "))
    } else if s.labelled {
        format!(
            "\"{} … {} ({n} points)\" 1 --> {n}",
            chart_text(&s.labels[0]),
            chart_text(&s.labels[n - 1])
        )
    } else {
        format!("\"position\" 1 --> {n}")
    };
    let shown: Vec<String> = values.iter().copied().map(readable_number).collect();
    // The axis from the values as written, so no bar pokes out of it.
    let plotted = shown.iter().filter_map(|v| v.parse::<f64>().ok());
    let lo = plotted.clone().fold(0.0_f64, f64::min);
    let hi = plotted.fold(0.0_f64, f64::max);
    let hi = if hi == lo { lo + 1.0 } else { hi };
    // Bars compare labelled things; a series over time is a line.
    let kind = if s.labelled && !s.over_time && n <= 30 {
        "bar"
    } else {
        "line"
    };
    Some(format!(
        "```mermaid\nxychart-beta\n    title \"{title}\"\n    x-axis {x_axis}\n    y-axis \"{}\" {} --> {}\n    {kind} [{}]\n```\n",
        chart_text(&s.title),
        num(lo),
        num(hi),
        shown.join(", ")
    ))
}

// ---------------------------------------------------------------- code, sandbox, audit

fn code_md(report: &Report, code: &str, b: &Budget) -> String {
    let sha = report.code_sha256.clone().unwrap_or_default();
    let ran = report.outcome.is_some();
    let label = if ran {
        "Executed code"
    } else {
        "Code (not run)"
    };
    let mut s = format!(
        "<details><summary>{label} · {} lines · sha256 <code>{}</code></summary>\n\n",
        code.lines().count(),
        short_sha(&sha)
    );
    let n = code.chars().count();
    if b.code == 0 {
        let _ = writeln!(
            s,
            "_The code ({n} characters) was left out to fit the limit; it is in the job summary and the JSON report._\n"
        );
    } else if n > b.code {
        let cut: String = code.chars().take(b.code).collect();
        s.push_str(&fenced("python", &cut));
        let _ = writeln!(
            s,
            "\n_Cut at {} of {n} characters; the sha256 below is of the whole code._\n",
            b.code
        );
    } else {
        s.push_str(&fenced("python", code));
        s.push('\n');
    }
    if code.chars().any(is_bidi_control) {
        let _ = writeln!(
            s,
            "_The code contains bidirectional control characters, shown as `[U+…]`; the sha256 is of the exact code (in the JSON report)._\n"
        );
    }
    let _ = writeln!(s, "sha256: `{sha}`\n</details>");
    s
}

fn findings_md(v: &Verdict, max: usize) -> String {
    let decision = match v.decision {
        Decision::Allow => "allow",
        Decision::Deny => "deny",
        Decision::Escalate => "escalate",
    };
    let mut s = format!("**Policy:** {decision}");
    if v.findings.is_empty() {
        s.push('\n');
        return s;
    }
    s.push_str("\n\n| Line | Rule | Severity | Finding |\n| --- | --- | --- | --- |\n");
    let max = max.max(3);
    for f in v.findings.iter().take(max) {
        let sev = match f.severity {
            Severity::Info => "info",
            Severity::Escalate => "escalate",
            Severity::Deny => "deny",
        };
        let _ = writeln!(
            s,
            "| {}:{} | `{}` | {sev} | {} |",
            f.line,
            f.column,
            f.rule.replace('`', "'"),
            escape_cell(&cut_chars(&f.message, 300))
        );
    }
    if v.findings.len() > max {
        let _ = writeln!(s, "\n_… {} more findings._", v.findings.len() - max);
    }
    s
}

/// `ok (exit 0)`, `timeout`, `killed (signal 9)`.
fn exit_text(o: &Outcome) -> String {
    let mut t = o.status.as_str().to_string();
    if let Some(c) = o.exit_code {
        let _ = write!(t, " (exit {c})");
    } else if let Some(sig) = o.signal {
        let _ = write!(t, " (signal {sig})");
    }
    t
}

fn mem(bytes: Option<u64>) -> String {
    bytes
        .map(|b| {
            if b >= 1 << 20 {
                format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64)
            } else {
                ByteSize(b).to_string()
            }
        })
        .unwrap_or_else(|| "n/a".into())
}

fn list_md(title: &str, items: &[String], max: usize) -> String {
    if items.is_empty() {
        return format!("- {title}: none\n");
    }
    let mut s = format!("- {title} ({}):", items.len());
    for it in items.iter().take(max) {
        let _ = write!(s, " `{}`", show_bidi(&cut_chars(it, 200)).replace('`', "'"));
    }
    if items.len() > max {
        let _ = write!(s, " … and {} more", items.len() - max);
    }
    s.push('\n');
    s
}

fn sandbox_md(o: &Outcome, b: &Budget) -> String {
    let l = &o.limits;
    let mut s = format!(
        "<details><summary>Sandbox: network none · {} · peak memory {} · {}</summary>\n\n",
        fmt_ms(o.duration_ms),
        mem(o.resources.peak_memory_bytes),
        exit_text(o)
    );
    s.push_str("| | |\n| --- | --- |\n");
    let mut image = format!("`{}`", o.image.reference.replace('`', "'"));
    if !o.image.id.is_empty() {
        let _ = write!(image, " · id `{}`", cut_chars(&o.image.id, 19));
    }
    if let Some(d) = o.image.digests.first() {
        let _ = write!(image, " · digest `{}`", d.replace('`', "'"));
    }
    let _ = writeln!(s, "| Image | {image} |");
    if let Some(stack) = o.image.stack().summary() {
        let _ = writeln!(s, "| Data stack | {} |", escape_cell(&stack));
    }
    let _ = writeln!(
        s,
        "| Limits | timeout {} · memory {} · {} CPU · {} processes · /tmp {} |",
        format_duration(l.timeout),
        l.memory,
        l.cpus,
        l.pids,
        l.tmpfs
    );
    let _ = writeln!(s, "| Network | none |");
    let _ = writeln!(s, "| Duration | {} |", fmt_ms(o.duration_ms));
    let _ = writeln!(
        s,
        "| Peak memory | {} |",
        mem(o.resources.peak_memory_bytes)
    );
    if let Some(cpu) = o.resources.cpu_time_ms {
        let _ = writeln!(s, "| CPU time | {} |", fmt_ms(cpu));
    }
    let _ = writeln!(s, "| Exit | {} |", exit_text(o));
    if !o.artifacts.is_empty() {
        let arts: Vec<String> = o
            .artifacts
            .iter()
            .take(b.items.max(5))
            .map(|a| {
                format!(
                    "`{}` ({}, sha256 `{}`)",
                    a.name.replace('`', "'"),
                    ByteSize(a.size),
                    short_sha(&a.sha256)
                )
            })
            .collect();
        let _ = writeln!(s, "| Artifacts | {} |", escape_pipes(&arts.join(", ")));
    }
    for n in o.notes.iter().take(b.items.max(1)) {
        let _ = writeln!(s, "| Note | {} |", escape_cell(&cut_chars(n, 300)));
    }
    s.push('\n');
    s.push_str(&audit_md(o, b.items));
    if b.output > 0 {
        for (name, text, truncated) in [
            ("stdout", &o.stdout, o.stdout_truncated),
            ("stderr", &o.stderr, o.stderr_truncated),
        ] {
            if text.is_empty() {
                continue;
            }
            let (tail, cut) = tail_chars(text, b.output);
            let mut what = format!("{} bytes", text.len());
            if truncated {
                what.push_str(", cut at the sandbox cap");
            }
            if cut {
                let _ = write!(what, ", last {} characters shown", b.output);
            }
            let _ = write!(
                s,
                "\n<details><summary>{name} ({what})</summary>\n\n{}\n</details>\n",
                fenced("text", &tail)
            );
        }
    }
    s.push_str("\n</details>\n");
    s
}

fn escape_pipes(s: &str) -> String {
    show_bidi(s).replace('|', "\\|")
}

fn fmt_ms(ms: u64) -> String {
    if ms >= 1000 {
        format!("{:.2} s", ms as f64 / 1000.0)
    } else {
        format!("{ms} ms")
    }
}

fn audit_md(o: &Outcome, max: usize) -> String {
    let a = &o.audit;
    let mut s = String::from(
        "**Audit** (reported from inside the sandbox by Python audit hooks; telemetry — the container is the enforcement):\n\n",
    );
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
    s.push_str(&list_md("files opened", &files, max));
    s.push_str(&list_md("network attempts", &a.network_attempts, max));
    s.push_str(&list_md("subprocess attempts", &a.subprocess_attempts, max));
    s.push_str(&list_md("refused", &a.refused, max));
    s.push_str(&list_md("imports", &a.imports, max));
    if !a.preloaded.is_empty() {
        s.push_str(&list_md(
            "preloaded before the code arrived",
            &a.preloaded,
            max,
        ));
    }
    if a.truncated {
        s.push_str("- _more events happened than were kept_\n");
    }
    s
}

fn attempts_md(attempts: &[Attempt]) -> String {
    let mut s = String::from(
        "<details><summary>Attempts</summary>\n\n| # | Code sha256 | Policy | Run | Validation | Why it did not count |\n| --- | --- | --- | --- | --- | --- |\n",
    );
    for a in attempts {
        let policy = match a.verdict.as_ref().map(|v| v.decision) {
            Some(Decision::Allow) => "allow",
            Some(Decision::Deny) => "deny",
            Some(Decision::Escalate) => "escalate",
            None => "—",
        };
        let run = a
            .outcome
            .as_ref()
            .map(exit_text)
            .unwrap_or_else(|| "not run".into());
        let validation = if a.outcome.is_none() {
            "—".to_string()
        } else if a.validation_errors.is_empty() && a.result.is_some() {
            "valid".to_string()
        } else {
            format!("{} error(s)", a.validation_errors.len())
        };
        let why = a
            .failure
            .as_deref()
            .map(|f| escape_cell(&cut_chars(f, 200)))
            .unwrap_or_default();
        let _ = writeln!(
            s,
            "| {} | `{}` | {policy} | {run} | {validation} | {why} |",
            a.number,
            short_sha(&a.code_sha256)
        );
    }
    s.push_str("\n</details>\n");
    s
}

// ---------------------------------------------------------------- text

/// A plain-text rendering for a terminal.
pub(crate) fn text(report: &Report) -> String {
    let mut s = String::new();
    let status = report.status.label();
    let _ = writeln!(
        s,
        "compute-bot: {status} ({} attempt(s))",
        report.attempts.len()
    );
    if let Some(r) = &report.stop_reason {
        let _ = writeln!(s, "stopped: {r}");
    }
    if let Some(g) = &report.goal {
        let _ = writeln!(s, "goal: {g}");
    }
    if let Some(result) = &report.result {
        let pretty = serde_json::to_string_pretty(result).unwrap_or_default();
        let _ = writeln!(s, "\nresult:\n{pretty}");
    }
    if let Some(ex) = &report.explanation {
        let _ = writeln!(s, "\nexplanation:\n{}", ex.trim());
    }
    if let Some(sha) = &report.code_sha256 {
        let _ = writeln!(s, "\ncode sha256: {sha}");
    }
    let _ = writeln!(s, "usage: {}", crate::usage::Usage::of(report).line());
    if let Some(v) = &report.verdict {
        for f in &v.findings {
            let _ = writeln!(
                s,
                "policy: {}:{} {} [{:?}] {}",
                f.line, f.column, f.rule, f.severity, f.message
            );
        }
    }
    if let Some(o) = &report.outcome {
        let _ = writeln!(
            s,
            "sandbox: image {} ({}){}, network none, {}, peak memory {}, {}",
            o.image.reference,
            cut_chars(&o.image.id, 19),
            o.image
                .stack()
                .summary()
                .map(|v| format!(" with {v}"))
                .unwrap_or_default(),
            fmt_ms(o.duration_ms),
            mem(o.resources.peak_memory_bytes),
            exit_text(o)
        );
        let a = &o.audit;
        let _ = writeln!(
            s,
            "audit (from inside the sandbox): {} file(s) opened, {} network attempt(s), {} subprocess attempt(s), {} refused",
            a.files_opened.len(),
            a.network_attempts.len(),
            a.subprocess_attempts.len(),
            a.refused.len()
        );
        if o.status != RunStatus::Ok && !o.stderr.is_empty() {
            let (tail, _) = tail_chars(&o.stderr, 2000);
            let _ = writeln!(s, "stderr (tail):\n{tail}");
        }
    }
    if report.attempts.len() > 1 {
        for a in &report.attempts {
            let _ = writeln!(
                s,
                "attempt {}: {} {}",
                a.number,
                short_sha(&a.code_sha256),
                a.failure.as_deref().unwrap_or("ok")
            );
        }
    }
    show_bidi(&s)
}

#[cfg(test)]
mod tests;
