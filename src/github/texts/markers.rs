//! The hidden markers the bot writes into its own comments and reads back
//! (see the parent module's docs for each), with their hash checks: the
//! code waiting for approval, a plan's code, the steps before an escalated
//! step, the request (goal and inputs with hashes) and the run's tracking
//! comment.

use super::*;

const RUN_MARKER_START: &str = "<!-- compute-bot:run=";
const PENDING_MARKER_START: &str = "<!-- compute-bot:pending sha256=";
const REQUEST_MARKER_START: &str = "<!-- compute-bot:request=";
pub(super) const PLAN_MARKER_START: &str = "<!-- compute-bot:plan sha256=";
pub(super) const MARKER_END: &str = " -->";
/// Put before each step that ran before code waiting for approval.
const BEFORE_MARKER_START: &str = "<!-- compute-bot:before ";
/// Marks a request as closed (denied or already approved) so it cannot be approved again.
pub(super) const CLOSED_MARKER: &str = "<!-- compute-bot:closed -->";

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
pub(super) fn pending_marker(sha256_hex: &str) -> String {
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
