//! Renders a [`Report`] for people: the GitHub comment ([`markdown`]), the job
//! summary ([`summary`]) and a terminal ([`text`]).
//!
//! The comment is exactly what is posted. It never exceeds GitHub's 65,536
//! characters: when the full rendering is too long, the largest parts are
//! cut first (stdout/stderr excerpts, then the result table and lists, then
//! the code) and the comment says what was cut. Every string that comes from
//! a result, the goal or the model is escaped so that it cannot inject HTML,
//! mentions or table cells.

use crate::units::{NumberKind, SIGNIFICANT_DIGITS, display_json_number};
use std::fmt::Write as _;

use serde_json::Value;

use crate::policy::{Decision, Severity, Verdict};
use crate::report::{Attempt, Report, ReportStatus};
use crate::sandbox::{Outcome, RunStatus};
use crate::units::{ByteSize, format_duration};

mod audit;
mod chart;
mod result;
mod steps;
#[cfg(test)]
use chart::chart;
pub(crate) use chart::chart_for;
pub(crate) use result::FOLD_ROWS;
use result::{images_shown_in, is_scalar, result_md, rounds_numbers};

/// The rule numbers are rounded by, under the tables when some number is.
fn rounding_note() -> String {
    format!(
        "\n_Numbers are rounded to {SIGNIFICANT_DIGITS} significant digits, never inside the integer part, and amounts of money to the cent; the JSON report and the `result` output have every digit._\n"
    )
}

/// GitHub's limit on a comment body, in characters.
pub const COMMENT_LIMIT: usize = 65_536;
/// GitHub's limit on one step's job summary, in bytes (the Actions
/// runtime's rule, kept with its writer).
pub(crate) use crate::github::actions::workflow::SUMMARY_LIMIT;

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
    /// The images it can show, for the Result block to show one where the
    /// result names it (`"chart": "/out/x.png"`).
    pub images: Vec<ResultImage>,
}

impl FilesBlock {
    /// The files block of a run whose `result` may name its images
    /// (`"chart": "/out/x.png"`): `images` are (name in `/out`, link) of
    /// those the front end can show; `markdown` writes the block given the
    /// names the Result block shows already, which it links instead of
    /// showing them twice.
    pub(crate) fn new(
        images: Vec<(String, String)>,
        result: Option<&Value>,
        markdown: impl FnOnce(&[String]) -> String,
    ) -> FilesBlock {
        let images: Vec<ResultImage> = images
            .into_iter()
            .map(|(name, url)| ResultImage { name, url })
            .collect();
        let in_result = result
            .map(|r| images_shown_in(r, &images))
            .unwrap_or_default();
        FilesBlock {
            markdown: markdown(&in_result),
            has_images: !images.is_empty(),
            images,
        }
    }
}

/// An image among the run's files, as the front end links it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResultImage {
    /// Its name in `/out` (`x.png`, `plots/y.png`).
    pub name: String,
    /// Where the front end serves it (a pinned link, or a path relative to
    /// the `--artifacts` directory).
    pub url: String,
}

// ---------------------------------------------------------------- escaping

/// The escaping helpers live in the shared Markdown module (so the GitHub
/// texts use them without knowing render); re-exported for the renderers.
pub(crate) use crate::markdown::{
    NAME_CHARS, cell_code_span, code_span, cut_chars, escape_cell, escape_line, fenced, html_text,
    is_bidi_control, mermaid_label, neutralize, paragraph, show_hidden,
};

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
    /// Rows of a table inside a nested section (`survival_by › sex`).
    nested_rows: usize,
    /// Levels of nested objects laid out as tables; deeper ones are folded
    /// JSON (0 = every nested object is folded JSON).
    depth: usize,
    /// Sections of the Result block (nested objects, tables, long texts).
    sections: usize,
    /// Characters of each long text value of the result.
    text: usize,
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
        nested_rows: 50,
        depth: 3,
        sections: 40,
        text: 20_000,
    }
}

impl Budget {
    /// The budget of the Result block's nested sections and long texts.
    const fn nested(self, nested_rows: usize, depth: usize, sections: usize, text: usize) -> Self {
        Budget {
            nested_rows,
            depth,
            sections,
            text,
            ..self
        }
    }
}

const ALL: usize = usize::MAX;

/// Comment budgets, loosest first: stdout/stderr go first, then the deep
/// parts of the result (nested tables shortened, then folded into JSON),
/// then its top-level tables and the lists, then long texts and the
/// explanation, and the code last. The result's headline figures (its
/// top-level key/value table) keep at least 5 rows.
const COMMENT_BUDGETS: [Budget; 10] = [
    budget(3000, 50, 50, 20_000, ALL, 20_000).nested(50, 3, 200, 20_000),
    budget(1000, 50, 30, 10_000, ALL, 20_000).nested(30, 3, 200, 20_000),
    budget(0, 30, 20, 5_000, ALL, 20_000).nested(10, 3, 100, 20_000),
    budget(0, 30, 20, 1_000, ALL, 20_000).nested(5, 2, 100, 20_000),
    budget(0, 20, 10, 500, ALL, 10_000).nested(3, 1, 50, 20_000),
    budget(0, 10, 5, 300, ALL, 4_000).nested(0, 0, 30, 4_000),
    budget(0, 10, 3, 200, 30_000, 4_000).nested(0, 0, 20, 4_000),
    budget(0, 10, 3, 200, 10_000, 2_000).nested(0, 0, 10, 2_000),
    budget(0, 5, 1, 100, 2_000, 2_000).nested(0, 0, 5, 1_000),
    budget(0, 5, 0, 100, 0, 1_000).nested(0, 0, 3, 1_000),
];

const SUMMARY_BUDGETS: [Budget; 2] = [
    budget(64 * 1024, 1000, 1000, 200_000, ALL, 100_000).nested(1000, 4, 1000, 100_000),
    budget(8 * 1024, 200, 200, 50_000, ALL, 50_000).nested(200, 3, 500, 50_000),
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
    if b.nested_rows < full.nested_rows || b.sections < full.sections {
        parts.push("nested result tables shortened");
    }
    if b.depth < full.depth {
        parts.push(if b.depth == 0 {
            "nested result objects folded into JSON"
        } else {
            "deeper result objects folded into JSON"
        });
    }
    if b.rows < full.rows || b.json < full.json {
        parts.push("result table shortened");
    }
    if b.text < full.text {
        parts.push("long result texts shortened");
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
    if report
        .outcome
        .as_ref()
        .is_some_and(|o| o.status == RunStatus::Tampered)
    {
        return "🚫 compute-bot: no result — the run's record was tampered with";
    }
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
    s.push_str(&answer_md(report, ctx, b));
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
    } else if !report.steps.is_empty() {
        s.push('\n');
        s.push_str(&steps::steps_md(&report.steps, b.code, b.output));
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

/// The answer, first: the explanation (the conclusion), the headline
/// figures, the charts, the tables and the rounding rule; the details
/// (code, sandbox, attempts) follow it.
fn answer_md(report: &Report, ctx: &RenderContext, b: &Budget) -> String {
    let mut s = String::new();
    if let Some(ex) = &report.explanation {
        let _ = write!(s, "\n{}\n", neutralize(&cut_chars(ex.trim(), b.prose)));
        let n = ex.trim().chars().count();
        if n > b.prose {
            let _ = writeln!(
                s,
                "\n_The explanation was cut at {} of {n} characters._",
                b.prose
            );
        }
    }
    if let Some(answer) = report.result.as_ref().and_then(answer_of) {
        let _ = writeln!(s, "\n**Answer:** {answer}");
    }
    let images = ctx.files.as_ref().map_or(&[][..], |f| &f.images[..]);
    let parts = report
        .result
        .as_ref()
        .filter(|r| !r.is_null() && !is_scalar(r))
        .map(|r| result_md(r, b, images));
    if let Some(parts) = &parts {
        s.push_str("\n#### Result\n\n");
        s.push_str(&parts.headline);
        s.push_str(&parts.charts);
    }
    // The run's files are the charts when the result names none of its
    // images; else they follow the tables.
    // Files without an image (a notebook, a CSV) are details: after the
    // tables.
    let files_first = ctx.files.as_ref().is_some_and(|f| f.has_images)
        && parts.as_ref().is_none_or(|p| p.charts.is_empty());
    if let Some(files) = ctx.files.as_ref().filter(|_| files_first) {
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
    if let Some(parts) = &parts
        && !parts.tables.is_empty()
    {
        if !s.ends_with("\n\n") {
            s.push('\n');
        }
        s.push_str(&parts.tables);
    }
    if report
        .result
        .as_ref()
        .is_some_and(|r| rounds_numbers("", r))
    {
        s.push_str(&rounding_note());
    }
    if let Some(files) = ctx.files.as_ref().filter(|_| !files_first) {
        s.push('\n');
        s.push_str(&files.markdown);
    }
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
    let attempts = match (n, report.steps.len()) {
        (_, 1) => "1 step".to_string(),
        (_, s) if s > 1 => format!("{s} steps in one session"),
        (1, _) => "1 attempt".to_string(),
        (n, _) => format!("{n} attempts"),
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

fn scalar_inline(v: &Value) -> String {
    match v {
        Value::String(s) => escape_cell(&cut_chars(s, 2000)),
        Value::Null => "null".into(),
        Value::Number(n) => format!("`{}`", display_json_number(n, NumberKind::Plain)),
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
            "_The code contains bidirectional control characters, shown as `\\u{{…}}`; the sha256 is of the exact code (in the JSON report)._\n"
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

fn sandbox_md(o: &Outcome, b: &Budget) -> String {
    let l = &o.limits;
    let reserve = o
        .environment
        .as_ref()
        .is_some_and(|e| e.role == crate::sandbox::Role::Reserve);
    // In a session the facts are of the step that gave the result (each
    // step's own are on its line above).
    let which = match (o.step, reserve) {
        (Some(n), true) => format!(" (step {n}, the policy's reserve)"),
        (Some(n), false) => format!(" (step {n})"),
        (None, true) => " (the policy's reserve)".to_string(),
        (None, false) => String::new(),
    };
    let mut s = format!(
        "<details><summary>Sandbox{which}: network none · {} · peak memory {} · {}</summary>\n\n",
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
    if let Some(env) = &o.environment {
        let _ = writeln!(
            s,
            "| Environment | {} |",
            escape_cell(&cut_chars(&env.line(), 400))
        );
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
    if let Some(p) = o.seccomp {
        let _ = writeln!(s, "| System calls | {} |", p.words());
    }
    if let Some(row) = cpu_quota_row(&o.resources.container) {
        let _ = writeln!(s, "| CPU quota | {row} |");
    }
    let _ = writeln!(s, "| Network | none (network mode `none`) |");
    let _ = writeln!(s, "| Duration | {} |", fmt_ms(o.duration_ms));
    let mut peak = mem(o.resources.peak_memory_bytes);
    if let Some(c) = o.resources.container.peak_memory_bytes {
        let _ = write!(peak, " · whole container {}", mem(Some(c)));
    }
    let _ = writeln!(s, "| Peak memory | {peak} |");
    if let Some(cpu) = o.resources.cpu_time_ms {
        let _ = writeln!(s, "| CPU time | {} |", fmt_ms(cpu));
    }
    let _ = writeln!(s, "| Exit | {} |", exit_text(o));
    let _ = writeln!(s, "| Sources | {} |", audit::figures_source(o));
    if !o.artifacts.is_empty() {
        let arts: Vec<String> = o
            .artifacts
            .iter()
            .take(b.items.max(5))
            .map(|a| {
                format!(
                    "{} ({}, sha256 `{}`)",
                    cell_code_span(&cut_chars(&a.name, NAME_CHARS)),
                    ByteSize(a.size),
                    short_sha(&a.sha256)
                )
            })
            .collect();
        let _ = writeln!(s, "| Artifacts | {} |", arts.join(", "));
    }
    for n in o.notes.iter().take(b.items.max(1)) {
        let _ = writeln!(s, "| Note | {} |", escape_line(&cut_chars(n, 300)));
    }
    s.push('\n');
    s.push_str(&audit::audit_md(o, b.items));
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

/// The CPU quota the code ran under, and the one its modules loaded under
/// when that was another, as the runner read them from the cgroup.
fn cpu_quota_row(c: &crate::sandbox::CgroupFacts) -> Option<String> {
    let at = c.cpu_at_code_start?;
    let mut row = format!(
        "{} while the code ran (the container's cgroup, read by the runner as the code started)",
        at.words()
    );
    if let Some(before) = c.cpu_before_code.filter(|b| *b != at) {
        let _ = write!(
            row,
            " · {} while the modules loaded before it",
            before.words()
        );
    }
    Some(row)
}

/// Milliseconds as the answer shows a duration: `420 ms`, `1.26 s`.
pub(crate) fn fmt_ms(ms: u64) -> String {
    if ms >= 1000 {
        format!("{:.2} s", ms as f64 / 1000.0)
    } else {
        format!("{ms} ms")
    }
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
        if let Some(env) = &o.environment {
            let _ = writeln!(s, "environment: {}", env.line());
        }
        let a = &o.audit;
        match a.kernel.as_ref() {
            Some(k) if k.sees_opens() => {
                let seen = match k.witness() {
                    Some(crate::sandbox::Witness::Sentry) => "seen by gVisor's kernel",
                    _ => "seen by the kernel",
                };
                let _ = writeln!(
                    s,
                    "audit ({seen}): {} file(s) opened, {} program start(s) refused, {} socket call(s)",
                    k.files.len(),
                    k.starts.len(),
                    k.sockets.len()
                );
            }
            Some(k) if k.refuses_starts() => {
                let _ = writeln!(
                    s,
                    "audit: {} program start(s) refused by the kernel; {} file(s) opened as the code's interpreter reports",
                    k.starts.len(),
                    a.files_opened.len()
                );
            }
            _ => {
                let _ = writeln!(
                    s,
                    "audit (reported by the code's interpreter): {} file(s) opened, {} network attempt(s), {} subprocess attempt(s), {} refused",
                    a.files_opened.len(),
                    a.network_attempts.len(),
                    a.subprocess_attempts.len(),
                    a.refused.len()
                );
            }
        }
        if !o.tampered.is_empty() {
            let _ = writeln!(s, "tampered: {}", o.tampered.join("; "));
        }
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
    show_hidden(&s)
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod result_tests;
