//! The documented, stable columns of each `github:` source and the CSV the
//! code reads as `/data/github/<source>.csv`.
//!
//! The format: a header line, then one row per item, RFC 4180 quoting
//! (a field with a comma, quote or line break is quoted, quotes doubled),
//! `\n` line ends. Timestamps are ISO 8601 UTC (`2026-11-03T09:15:00Z`);
//! a missing one (an open issue's `closed_at`) is an empty cell. People are
//! a `login` column plus a `*_type` column, `User` or `Bot` (GitHub's
//! `type`; a deleted account is `ghost`, `User`). Booleans are `true` /
//! `false`. Labels are joined with `;` in GitHub's order. A count the bot did
//! not fetch (a pull request's size past the request budget) is an empty
//! cell, never 0, and the prompt says how many rows have it.

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::Value;

use crate::sources::GithubSource;

/// The columns of `source`: name and meaning (the prompt and the README
/// show them; the order is the file's), as [`crate::sources`] declares them.
pub(crate) fn columns(source: GithubSource) -> &'static [(&'static str, &'static str)] {
    source.columns()
}

/// A timestamp as ISO 8601 UTC with seconds (`Z`), or empty.
pub(crate) fn utc(v: Option<&Value>) -> String {
    v.and_then(Value::as_str)
        .and_then(|s| DateTime::parse_from_rfc3339(s).ok())
        .map(|t| {
            t.with_timezone(&Utc)
                .to_rfc3339_opts(SecondsFormat::Secs, true)
        })
        .unwrap_or_default()
}

/// A timestamp field of an item, parsed.
pub(crate) fn time_of(item: &Value, field: &str) -> Option<DateTime<Utc>> {
    item.get(field)
        .and_then(Value::as_str)
        .and_then(|s| DateTime::parse_from_rfc3339(s).ok())
        .map(|t| t.with_timezone(&Utc))
}

fn text(item: &Value, ptr: &str) -> String {
    match item.pointer(ptr) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        Some(Value::Bool(b)) => b.to_string(),
        _ => String::new(),
    }
}

fn person(item: &Value, field: &str) -> [String; 2] {
    match item.get(field).filter(|u| u.is_object()) {
        Some(u) => [
            text(u, "/login"),
            if text(u, "/type") == "Bot" {
                "Bot"
            } else {
                "User"
            }
            .to_string(),
        ],
        // GitHub sends `null` for a deleted account; it shows as ghost.
        None => ["ghost".into(), "User".into()],
    }
}

/// The label names of an item, in GitHub's order.
pub(crate) fn labels_of(item: &Value) -> Vec<String> {
    item.get("labels")
        .and_then(Value::as_array)
        .map(|ls| ls.iter().map(|l| text(l, "/name")).collect())
        .unwrap_or_default()
}

/// What the single pull request's answer (`GET pulls/{n}`, fetched for
/// its size) adds to the list's fields.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct PullDetail {
    /// Lines added, lines deleted, files changed.
    pub(crate) size: (u64, u64, u64),
    /// The login of who merged it (`merged_by`), when merged.
    pub(crate) merged_by: Option<String>,
}

impl PullDetail {
    /// The detail in a single pull request's answer.
    pub(crate) fn of(v: &Value) -> PullDetail {
        let count = |f: &str| v.get(f).and_then(Value::as_u64).unwrap_or_default();
        PullDetail {
            size: (
                count("additions"),
                count("deletions"),
                count("changed_files"),
            ),
            merged_by: v
                .get("merged_by")
                .filter(|u| u.is_object())
                .map(|u| text(u, "/login")),
        }
    }
}

/// What the bot adds to a pull request row beyond the list's fields.
#[derive(Debug, Clone, Default)]
pub(crate) struct PullExtra {
    /// The single pull request's size and merger, when fetched.
    pub(crate) detail: Option<PullDetail>,
    /// Whether its reviews were fetched.
    pub(crate) reviews_fetched: bool,
}

/// One pull request row.
pub(crate) fn pull_row(p: &Value, extra: &PullExtra) -> Vec<String> {
    let [author, author_type] = person(p, "user");
    let (a, d, c) = match &extra.detail {
        Some(PullDetail {
            size: (a, d, c), ..
        }) => (a.to_string(), d.to_string(), c.to_string()),
        None => Default::default(),
    };
    let merged_by = extra
        .detail
        .as_ref()
        .and_then(|x| x.merged_by.clone())
        .unwrap_or_default();
    let draft = p.get("draft").and_then(Value::as_bool).unwrap_or(false);
    let requested: Vec<String> = p
        .get("requested_reviewers")
        .and_then(Value::as_array)
        .map(|rs| rs.iter().map(|r| text(r, "/login")).collect())
        .unwrap_or_default();
    vec![
        text(p, "/number"),
        text(p, "/title"),
        author,
        author_type,
        text(p, "/state"),
        draft.to_string(),
        utc(p.get("created_at")),
        utc(p.get("updated_at")),
        utc(p.get("closed_at")),
        utc(p.get("merged_at")),
        labels_of(p).join(";"),
        text(p, "/base/ref"),
        a,
        d,
        c,
        extra.reviews_fetched.to_string(),
        merged_by,
        requested.join(";"),
        (!draft).to_string(),
    ]
}

/// One review row of pull request `number`.
pub(crate) fn review_row(number: u64, r: &Value) -> Vec<String> {
    let [reviewer, reviewer_type] = person(r, "user");
    vec![
        number.to_string(),
        text(r, "/id"),
        reviewer,
        reviewer_type,
        text(r, "/state"),
        utc(r.get("submitted_at")),
    ]
}

/// One issue row (a pull request too: `is_pull_request`).
pub(crate) fn issue_row(i: &Value) -> Vec<String> {
    let [author, author_type] = person(i, "user");
    vec![
        text(i, "/number"),
        text(i, "/title"),
        author,
        author_type,
        text(i, "/state"),
        text(i, "/state_reason"),
        labels_of(i).join(";"),
        text(i, "/comments"),
        utc(i.get("created_at")),
        utc(i.get("updated_at")),
        utc(i.get("closed_at")),
        i.get("pull_request")
            .is_some_and(|v| !v.is_null())
            .to_string(),
    ]
}

/// One comment row; the issue number is the last segment of `issue_url`.
pub(crate) fn comment_row(c: &Value) -> Vec<String> {
    let [author, author_type] = person(c, "user");
    let issue = text(c, "/issue_url")
        .rsplit('/')
        .next()
        .unwrap_or_default()
        .to_string();
    vec![
        text(c, "/id"),
        issue,
        author,
        author_type,
        utc(c.get("created_at")),
        utc(c.get("updated_at")),
    ]
}

/// One workflow run row.
pub(crate) fn run_row(r: &Value) -> Vec<String> {
    vec![
        text(r, "/id"),
        text(r, "/name"),
        text(r, "/event"),
        text(r, "/status"),
        text(r, "/conclusion"),
        text(r, "/head_branch"),
        text(r, "/run_attempt"),
        utc(r.get("created_at")),
        utc(r.get("run_started_at")),
        utc(r.get("updated_at")),
    ]
}

/// One CSV field, quoted when it must be.
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// The CSV text of `source` with `rows`.
pub(crate) fn csv(source: GithubSource, rows: &[Vec<String>]) -> String {
    let mut out = String::new();
    let head: Vec<&str> = columns(source).iter().map(|(n, _)| *n).collect();
    out.push_str(&head.join(","));
    out.push('\n');
    for row in rows {
        let cells: Vec<String> = row.iter().map(|c| field(c)).collect();
        out.push_str(&cells.join(","));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merged_by_and_requested_reviewers_are_read_from_the_rest_shapes() {
        // Trimmed from GitHub's REST reference: "List pull requests" items
        // carry requested_reviewers and requested_teams; "Get a pull
        // request" adds merged_by (null when not merged) and the size.
        let listed = json!({"number": 1347, "state": "closed", "user": {"login": "octocat", "type": "User"},
            "requested_reviewers": [{"login": "other_user", "id": 1, "type": "User"}, {"login": "hubot", "type": "User"}],
            "requested_teams": [{"id": 1, "name": "Justice League", "slug": "justice-league"}],
            "labels": [], "base": {"ref": "main"}, "draft": false});
        let single = json!({"number": 1347, "merged": true, "merged_by": {"login": "octocat", "type": "User"},
            "additions": 100, "deletions": 3, "changed_files": 5});
        let detail = PullDetail::of(&single);
        assert_eq!(detail.size, (100, 3, 5));
        assert_eq!(detail.merged_by.as_deref(), Some("octocat"));
        assert_eq!(PullDetail::of(&json!({"merged_by": null})).merged_by, None);
        let names: Vec<&str> = columns(GithubSource::Pulls)
            .iter()
            .map(|(n, _)| *n)
            .collect();
        let at = |c: &str| names.iter().position(|n| *n == c).unwrap();
        let extra = PullExtra {
            detail: Some(detail),
            reviews_fetched: false,
        };
        let row = pull_row(&listed, &extra);
        assert_eq!(row[at("merged_by")], "octocat");
        assert_eq!(row[at("requested_reviewers")], "other_user;hubot");
        assert_eq!(row[at("ready_for_review")], "true");
        let draft = json!({"number": 2, "draft": true, "user": null});
        let drafted = pull_row(&draft, &PullExtra::default());
        assert_eq!(
            (
                drafted[at("draft")].as_str(),
                drafted[at("ready_for_review")].as_str()
            ),
            ("true", "false")
        );
        assert_eq!(row[at("additions")], "100");
        // Without the single answer (sizes not fetched) the cell is empty, not a guess.
        assert_eq!(
            pull_row(&listed, &PullExtra::default())[at("merged_by")],
            ""
        );
    }

    #[test]
    fn rows_match_their_columns_and_quote_what_they_must() {
        let p = json!({"number": 7, "title": "Fix \"a\", b", "user": {"login": "dependabot[bot]", "type": "Bot"},
            "state": "closed", "draft": false, "created_at": "2026-11-01T10:00:00Z",
            "updated_at": "2026-11-02T10:00:00+00:00", "closed_at": null, "merged_at": "2026-11-02T10:00:00Z",
            "labels": [{"name": "bug"}, {"name": "ui"}], "base": {"ref": "main"}});
        let row = pull_row(&p, &PullExtra::default());
        assert_eq!(row.len(), columns(GithubSource::Pulls).len());
        let text = csv(GithubSource::Pulls, &[row]);
        let line = text.lines().nth(1).unwrap();
        assert_eq!(
            line,
            "7,\"Fix \"\"a\"\", b\",dependabot[bot],Bot,closed,false,2026-11-01T10:00:00Z,2026-11-02T10:00:00Z,,2026-11-02T10:00:00Z,bug;ui,main,,,,false,,,true"
        );
        let i = json!({"number": 3, "user": null, "pull_request": {"url": "x"}, "labels": []});
        let row = issue_row(&i);
        assert_eq!(row.len(), columns(GithubSource::Issues).len());
        assert_eq!((row[2].as_str(), row[11].as_str()), ("ghost", "true"));
        let c = json!({"id": 9, "issue_url": "https://api.github.com/repos/o/r/issues/12", "user": {"login": "a", "type": "User"}});
        assert_eq!(comment_row(&c)[1], "12");
        assert_eq!(
            run_row(&json!({})).len(),
            columns(GithubSource::WorkflowRuns).len()
        );
        assert_eq!(
            review_row(1, &json!({})).len(),
            columns(GithubSource::Reviews).len()
        );
    }
}
