//! The steps of a session, after the answer: each step folded with a
//! one-line audit in its summary (number, kind, status, duration, files,
//! sha256), its exact code and its real (bounded) output and value; the
//! step that gave the result is marked.

use std::fmt::Write as _;

use crate::markdown::{fenced, html_text};
use crate::report::Step;
use crate::sandbox::RunStatus;

/// The steps, each in its own `<details>`. `code` and `output`: the most
/// characters of a step's code and of each of its outputs (0 leaves them
/// out, as the comment's budget tightens).
pub(super) fn steps_md(steps: &[Step], code: usize, output: usize) -> String {
    let mut s = format!(
        "**Steps:** {} in one session (one container, one interpreter)\n",
        steps.len()
    );
    for step in steps {
        s.push('\n');
        s.push_str(&step_md(step, code, output));
    }
    s
}

/// One step, folded.
fn step_md(step: &Step, code: usize, output: usize) -> String {
    let mut s = format!("<details><summary>{}</summary>\n\n", audit_line(step));
    s.push_str(&part("python", &step.code, code));
    if !step.stdout.is_empty() {
        s.push_str("Output:\n\n");
        s.push_str(&part("text", &step.stdout, output));
    }
    if let Some(value) = step.value.as_deref().filter(|v| !v.is_empty()) {
        let _ = write!(s, "`Out[{}]`:\n\n", step.number);
        s.push_str(&part("text", value, output));
    }
    if !step.stderr.is_empty() && step.status != RunStatus::Ok {
        s.push_str("Error:\n\n");
        s.push_str(&part("text", &step.stderr, output));
    }
    let _ = writeln!(s, "sha256: `{}`\n</details>", step.code_sha256);
    s
}

/// `Step 2 · final · gave the result · ok · 420 ms · 1 file: chart.png ·
/// sha256 0123456789ab`.
fn audit_line(step: &Step) -> String {
    let mut parts = vec![
        format!("Step {}", step.number),
        step.kind.label().to_string(),
    ];
    if step.attempt == 0 {
        parts.push("replayed from the earlier answer".to_string());
    }
    if step.result {
        parts.push("<b>gave the result</b>".to_string());
    }
    parts.push(step.status.as_str().to_string());
    parts.push(super::fmt_ms(step.duration_ms));
    if !step.files.is_empty() {
        let plural = if step.files.len() == 1 { "" } else { "s" };
        let names: Vec<String> = step.files.iter().take(5).map(|f| html_name(f)).collect();
        parts.push(format!(
            "{} file{plural}: {}",
            step.files.len(),
            names.join(", ")
        ));
    }
    parts.push(format!(
        "sha256 <code>{}</code>",
        step.code_sha256.get(..12).unwrap_or(&step.code_sha256)
    ));
    parts.join(" · ")
}

/// A file name inside the summary's HTML.
fn html_name(name: &str) -> String {
    html_text(name)
}

/// A fenced block of `text` cut to `max` characters (saying so), or a
/// note that it was left out.
fn part(lang: &str, text: &str, max: usize) -> String {
    let n = text.chars().count();
    if max == 0 {
        return format!(
            "_({n} characters left out to fit the comment; they are in the JSON report.)_\n\n"
        );
    }
    if n <= max {
        return format!("{}\n", fenced(lang, text));
    }
    let cut: String = text.chars().take(max).collect();
    format!(
        "{}\n_Cut at {max} of {n} characters; the whole text is in the JSON report._\n\n",
        fenced(lang, &cut)
    )
}
