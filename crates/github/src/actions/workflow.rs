//! Talking to the Actions runner: step outputs (`GITHUB_OUTPUT`), the job
//! summary (`GITHUB_STEP_SUMMARY`) and workflow commands on stdout.
//!
//! Workflow commands are written to a caller-given writer (the binary passes
//! stdout) so that tests can read them back.

use std::fs::OpenOptions;
use std::io::{self, Write};
use std::path::Path;

use compute_bot_policy::located::Located;

/// GitHub's limit on one step's job summary, in bytes.
pub const SUMMARY_LIMIT: usize = 1_048_576;

/// A random token (32 hex digits) for delimiters and stop-commands.
fn random_token() -> String {
    format!("{:032x}", rand::random::<u128>())
}

/// The step outputs the action declares.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outputs {
    /// `ok`, `failed`, `needs_approval`, `planned`, `refused`, `denied`, `ignored` or `error`.
    pub status: String,
    /// The result as JSON (`null` when there is none).
    pub result: Option<serde_json::Value>,
    /// The id of the comment posted, if any.
    pub comment_id: Option<u64>,
    /// Hex SHA-256 of the final code, if any.
    pub code_sha256: Option<String>,
    /// Path of the JSON report file.
    pub report_path: Option<String>,
    /// What the answer took from the model (the bot's `usage::Usage::json`).
    pub usage: Option<String>,
}

/// The most the `result` output may take, in bytes as GitHub counts outputs
/// (UTF-16: two bytes per ASCII character): 256 KiB. GitHub allows a job's
/// outputs 1 MB in all ("Passing information between jobs"), shared with
/// every other step, so the result keeps well below it. A larger result is
/// written as `null` with a warning that points at the report file.
const RESULT_OUTPUT_CAP: usize = 256 * 1024;

/// The size of `s` as GitHub approximates output sizes (UTF-16 encoding).
fn utf16_size(s: &str) -> usize {
    s.encode_utf16().count() * 2
}

impl Outputs {
    /// The `result` output: the result as compact JSON in the order the code
    /// printed its keys, or `null` (no result, or one over
    /// [`RESULT_OUTPUT_CAP`]; see [`Outputs::result_note`]).
    fn result_value(&self) -> String {
        match &self.result {
            Some(v) => {
                let json = v.to_string();
                if utf16_size(&json) > RESULT_OUTPUT_CAP {
                    "null".into()
                } else {
                    json
                }
            }
            None => "null".into(),
        }
    }

    /// When the result was left out of the `result` output for its size:
    /// what to tell the user (for a `::warning::` and the job summary).
    pub fn result_note(&self) -> Option<String> {
        let json = self.result.as_ref()?.to_string();
        let size = utf16_size(&json);
        if size <= RESULT_OUTPUT_CAP {
            return None;
        }
        let report = match self.report_path.as_deref() {
            Some(p) if !p.is_empty() => format!(
                "the report file `{p}` (its `result` field; keep it with `actions/upload-artifact`)"
            ),
            _ => "the JSON report (`report_path` output)".to_string(),
        };
        Some(format!(
            "The result is {:.2} MB as GitHub counts outputs (UTF-16), over the {} KiB cap of the `result` output (a job's outputs may take 1 MB in all), so `result` is `null`. The whole result is in {report}.",
            size as f64 / 1_000_000.0,
            RESULT_OUTPUT_CAP / 1024
        ))
    }

    /// The `(name, value)` pairs to write; absent values are written empty.
    pub fn pairs(&self) -> Vec<(&'static str, String)> {
        vec![
            ("status", self.status.clone()),
            ("result", self.result_value()),
            (
                "comment_id",
                self.comment_id.map(|c| c.to_string()).unwrap_or_default(),
            ),
            ("code_sha256", self.code_sha256.clone().unwrap_or_default()),
            ("report_path", self.report_path.clone().unwrap_or_default()),
            ("usage", self.usage.clone().unwrap_or_default()),
        ]
    }
}

/// Formats one output entry. Values with a line break use the
/// `name<<ghadelimiter_<random>` form, with a delimiter checked not to occur
/// in the value.
fn format_output(name: &str, value: &str) -> String {
    if !value.contains('\n') && !value.contains('\r') {
        return format!("{name}={value}\n");
    }
    let delimiter = loop {
        let d = format!("ghadelimiter_{}", random_token());
        if !value.contains(&d) {
            break d;
        }
    };
    format!("{name}<<{delimiter}\n{value}\n{delimiter}\n")
}

/// Appends entries to the `GITHUB_OUTPUT` file. Names must be
/// `[A-Za-z0-9_-]+` (checked).
pub fn write_outputs(path: &Path, pairs: &[(&str, String)]) -> io::Result<()> {
    let mut text = String::new();
    for (name, value) in pairs {
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("`{name}` is not a valid output name"),
            ));
        }
        text.push_str(&format_output(name, value));
    }
    append(path, &text, "GITHUB_OUTPUT")
}

fn append(path: &Path, text: &str, what: &str) -> io::Result<()> {
    let mut f = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("cannot open {what} file {}: {e}", path.display()),
            )
        })?;
    f.write_all(text.as_bytes()).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("cannot write {what} file {}: {e}", path.display()),
        )
    })
}

/// Appends markdown to the `GITHUB_STEP_SUMMARY` file, keeping the file
/// within 1 MiB: if the text does not fit in what is left, it is cut at a
/// character boundary with a note. Returns how many bytes were written.
pub fn append_summary(path: &Path, markdown: &str) -> io::Result<usize> {
    let used = std::fs::metadata(path)
        .map(|m| m.len() as usize)
        .unwrap_or(0);
    let room = SUMMARY_LIMIT.saturating_sub(used);
    let text = if markdown.len() < room {
        format!("{markdown}\n")
    } else {
        let note = "\n\n> [!WARNING]\n> The job summary was cut at GitHub's 1 MiB limit.\n";
        if room <= note.len() {
            return Ok(0);
        }
        let mut end = room - note.len();
        while !markdown.is_char_boundary(end) {
            end -= 1;
        }
        format!("{}{note}", &markdown[..end])
    };
    append(path, &text, "GITHUB_STEP_SUMMARY")?;
    Ok(text.len())
}

/// Escapes a workflow command's property value (`file=`, `title=`): the
/// data escapes and `:` and `,`.
pub fn escape_property(s: &str) -> String {
    escape_data(s).replace(':', "%3A").replace(',', "%2C")
}

/// The `::error file=…,line=…,col=…,title=…::message` workflow command for a
/// problem in a file the user wrote (the file as `e.file` names it), so the
/// run's annotations point at the line.
pub fn file_error_annotation(e: &Located, title: &str) -> String {
    let position = if e.line > 0 {
        format!(",line={},col={}", e.line, e.column.max(1))
    } else {
        String::new()
    };
    format!(
        "::error file={}{position},title={}::{}",
        escape_property(&e.file),
        escape_property(title),
        escape_data(&e.to_string())
    )
}

/// Escapes a workflow command's data (`%`, CR, LF).
pub fn escape_data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// `::add-mask::` lines for a secret (one per non-empty line, so multi-line
/// secrets are masked line by line).
pub fn add_mask(out: &mut impl Write, secret: &str) -> io::Result<()> {
    for line in secret.lines().map(str::trim).filter(|l| !l.is_empty()) {
        writeln!(out, "::add-mask::{}", escape_data(line))?;
    }
    Ok(())
}

/// A `::notice::` (or `::warning::` / `::error::` with that `level`) line.
pub fn annotation(out: &mut impl Write, level: &str, message: &str) -> io::Result<()> {
    let level = match level {
        "warning" | "error" | "debug" => level,
        _ => "notice",
    };
    writeln!(out, "::{level}::{}", escape_data(message))
}

/// Echoes untrusted text (what the sandbox printed) to the log between
/// `::stop-commands::<token>` and `::<token>::`, so nothing in it can issue a
/// workflow command. The token is random and checked not to occur in the text.
pub fn echo_untrusted(out: &mut impl Write, title: &str, text: &str) -> io::Result<()> {
    let token = loop {
        let t = random_token();
        if !text.contains(&t) {
            break t;
        }
    };
    writeln!(out, "::group::{}", escape_data(title))?;
    writeln!(out, "::stop-commands::{token}")?;
    out.write_all(text.as_bytes())?;
    if !text.ends_with('\n') {
        writeln!(out)?;
    }
    writeln!(out, "::{token}::")?;
    writeln!(out, "::endgroup::")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_and_multi_line_outputs() {
        assert_eq!(format_output("status", "ok"), "status=ok\n");
        let v = "{\n  \"a\": 1\n}";
        let f = format_output("result", v);
        let first = f.lines().next().unwrap();
        let delim = first.strip_prefix("result<<").unwrap();
        assert!(delim.starts_with("ghadelimiter_") && delim.len() == 13 + 32);
        assert_eq!(f, format!("result<<{delim}\n{v}\n{delim}\n"));
    }

    #[test]
    fn outputs_file_is_appended() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("out");
        std::fs::write(&p, "earlier=1\n").unwrap();
        let o = Outputs {
            status: "ok".into(),
            result: Some(serde_json::json!({"a": "x\ny"})),
            comment_id: Some(5),
            code_sha256: Some("ab".into()),
            report_path: None,
            usage: None,
        };
        write_outputs(&p, &o.pairs()).unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(text.starts_with("earlier=1\nstatus=ok\n"));
        // JSON escapes the newline, so the result stays one line.
        assert!(text.contains("result={\"a\":\"x\\ny\"}\n"));
        assert!(text.contains("comment_id=5\n") && text.contains("report_path=\n"));
        assert!(write_outputs(&p, &[("bad name", "x".into())]).is_err());
    }

    #[test]
    fn a_large_result_is_left_out_of_the_output_with_a_note() {
        let rows: Vec<serde_json::Value> = (0..20_000)
            .map(|i| serde_json::json!({"day": format!("2024-01-{i:05}"), "value": i as f64 / 7.0}))
            .collect();
        let big = Outputs {
            status: "ok".into(),
            result: Some(serde_json::json!({ "rows": rows })),
            report_path: Some("compute-bot-reports/report-1-1.json".into()),
            ..Outputs::default()
        };
        assert_eq!(big.result_value(), "null");
        let note = big.result_note().unwrap();
        assert!(
            note.contains("256 KiB") && note.contains("compute-bot-reports/report-1-1.json"),
            "{note}"
        );
        let total: usize = big
            .pairs()
            .iter()
            .map(|(k, v)| utf16_size(&format_output(k, v)))
            .sum();
        assert!(total < 1_000, "{total}");
        // Just under the cap: written whole, no note.
        let s = "x".repeat(RESULT_OUTPUT_CAP / 2 - 2);
        let fits = Outputs {
            result: Some(serde_json::Value::String(s.clone())),
            ..Outputs::default()
        };
        assert_eq!(utf16_size(&fits.result_value()), RESULT_OUTPUT_CAP);
        assert_eq!(fits.result_note(), None);
        let over = Outputs {
            result: Some(serde_json::Value::String(s + "é")),
            ..Outputs::default()
        };
        assert_eq!(over.result_value(), "null");
        assert!(over.result_note().unwrap().contains("`report_path`"));
    }

    #[test]
    fn the_result_keeps_the_key_order_the_code_printed() {
        let v: serde_json::Value =
            serde_json::from_str(r#"{"zeta": 1, "alpha": {"y": 2, "b": 3}, "mid": [1]}"#).unwrap();
        let o = Outputs {
            result: Some(v),
            ..Outputs::default()
        };
        assert_eq!(
            o.result_value(),
            r#"{"zeta":1,"alpha":{"y":2,"b":3},"mid":[1]}"#
        );
    }

    #[test]
    fn summary_is_capped_at_one_mib() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("summary.md");
        append_summary(&p, "first").unwrap();
        let big = "é".repeat(SUMMARY_LIMIT);
        append_summary(&p, &big).unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(text.len() <= SUMMARY_LIMIT);
        assert!(text.starts_with("first\n"));
        assert!(text.contains("cut at GitHub's 1 MiB limit"));
        // Full: nothing more is written.
        assert_eq!(append_summary(&p, "more").unwrap(), 0);
    }

    #[test]
    fn untrusted_text_cannot_issue_commands() {
        let mut out = Vec::new();
        let evil = "::add-mask::x\n::set-output name=a::b\n::stop-commands::abc\n";
        echo_untrusted(&mut out, "stdout", evil).unwrap();
        let s = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines[0], "::group::stdout");
        let token = lines[1].strip_prefix("::stop-commands::").unwrap();
        assert_eq!(token.len(), 32);
        assert_ne!(token, "abc");
        assert_eq!(lines[2..5].join("\n") + "\n", evil);
        assert_eq!(lines[5], format!("::{token}::"));
        assert_eq!(lines[6], "::endgroup::");
    }

    #[test]
    fn masks_and_annotations_are_escaped() {
        let mut out = Vec::new();
        add_mask(&mut out, "sk-abc\nline2%\n").unwrap();
        annotation(&mut out, "notice", "not handled:\nx 100%").unwrap();
        let s = String::from_utf8(out).unwrap();
        assert_eq!(
            s,
            "::add-mask::sk-abc\n::add-mask::line2%25\n::notice::not handled:%0Ax 100%25\n"
        );
    }
}
