//! The `github:` sources as written — in `inputs=`, a workflow's `inputs`,
//! a watch file and the policy's `inputs.github` — as plain data: the
//! sources' names ([`GithubSource`]) and the query syntax
//! `github:<source>[?key=value[&key=value]...]` ([`parse`] into a
//! [`Query`]), e.g. `github:pulls?state=closed&since=2026-11-01&labels=bug,ui&limit=500`.
//! No GitHub client: fetching is the bot's `github::activity`; this module
//! sits in the policy's crate, low, so that the policy and `watch check`
//! read the same syntax.
//!
//! Keys (each at most once; which ones a source takes is in [`allowed`]):
//! - `state`: `open`, `closed` or `all` (default `all`);
//! - `since`, `until`: a date `YYYY-MM-DD` (UTC), an RFC 3339 time, or
//!   `-<N>d`, N days before now (for watches: `since=-28d`); the
//!   rows *updated* in `[since, until]` (workflow runs: *created*, as GitHub
//!   filters runs by creation); a date as `until` includes that whole day;
//! - `labels`: label names separated by commas; a row must carry all of them;
//! - `limit`: the most rows (at most the policy's `inputs.github_max_items`);
//! - `sizes` (pulls): `true` (default) or `false`, whether each pull
//!   request's additions, deletions and changed files are fetched (one
//!   request per pull request).

use chrono::{DateTime, NaiveDate, Utc};
use serde::{Deserialize, Serialize};

/// Declares the `github:` sources once: for each, its variant, the name
/// written after `github:`, what it is, the workflow token's read scope it
/// needs, the query keys it takes, the REST endpoints its rows are built
/// from (below `/repos/{owner}/{name}/`, `{n}` a number) and its CSV
/// columns with their meaning. The enum, [`GithubSource::ALL`] and every
/// accessor come from this one table; the fetcher, the CSV writer, the
/// prompt, `init` and the docs read it. Adding a source is a row here, its
/// row function in the bot's `src/github/activity/table.rs` and its fetch in
/// `src/github/activity/mod.rs`.
macro_rules! sources {
    ($(
        $variant:ident = $name:literal {
            doc: $doc:literal,
            scope: $scope:ident,
            keys: [$($key:literal),* $(,)?],
            endpoints: [$($endpoint:literal),* $(,)?],
            columns: [$(($column:literal, $meaning:literal $(,)?)),* $(,)?] $(,)?
        }
    )*) => {
        /// One kind of the repository's own activity the bot can fetch as a table.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(rename_all = "snake_case")]
        pub enum GithubSource {
            $(
                #[doc = $doc]
                $variant,
            )*
        }

        /// Every source's declaration, in the order of [`GithubSource::ALL`].
        const DECLARED: &[Declared] = &[
            $(
                Declared {
                    source: GithubSource::$variant,
                    name: $name,
                    scope: Scope::$scope,
                    keys: &[$($key),*],
                    endpoints: &[$($endpoint),*],
                    columns: &[$(($column, $meaning)),*],
                },
            )*
        ];

        impl GithubSource {
            /// Every source, in the order the docs list them.
            pub(crate) const ALL: [GithubSource; [$(stringify!($variant)),*].len()] =
                [$(GithubSource::$variant),*];
        }
    };
}

/// The read scope of the workflow token a source needs (the `permissions:`
/// key of a workflow).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// `pull-requests: read`.
    PullRequests,
    /// `issues: read`.
    Issues,
    /// `actions: read`.
    Actions,
}

impl Scope {
    /// The key in a workflow's `permissions:`.
    pub(crate) fn key(self) -> &'static str {
        match self {
            Scope::PullRequests => "pull-requests",
            Scope::Issues => "issues",
            Scope::Actions => "actions",
        }
    }
}

/// One source as [`sources!`] declares it.
struct Declared {
    source: GithubSource,
    name: &'static str,
    scope: Scope,
    keys: &'static [&'static str],
    endpoints: &'static [&'static str],
    columns: &'static [(&'static str, &'static str)],
}

sources! {
    Pulls = "pulls" {
        doc: "Pull requests (`GET /repos/{o}/{r}/pulls`, sizes from `pulls/{n}`).",
        scope: PullRequests,
        keys: ["state", "since", "until", "labels", "limit", "sizes"],
        endpoints: ["pulls", "pulls/{n}"],
        columns: [
            ("number", "pull request number"),
            ("title", "title"),
            ("author", "login of the author"),
            ("author_type", "User or Bot"),
            (
                "state",
                "open or closed (a merged one is closed with merged_at set)",
            ),
            ("draft", "true or false"),
            ("created_at", "opened (UTC)"),
            ("updated_at", "last updated (UTC)"),
            ("closed_at", "closed (UTC), empty when open"),
            ("merged_at", "merged (UTC), empty when not merged"),
            ("labels", "label names joined with ;"),
            ("base_ref", "the branch it merges into"),
            ("additions", "lines added; empty when not fetched"),
            ("deletions", "lines deleted; empty when not fetched"),
            ("changed_files", "files changed; empty when not fetched"),
            (
                "reviews_fetched",
                "true when github:reviews holds this pull request's reviews",
            ),
            (
                "merged_by",
                "login of who merged it; empty when not merged, or when its size was not fetched (the same request)",
            ),
            (
                "requested_reviewers",
                "logins asked to review and not yet reviewed, joined with ; (teams not included)",
            ),
            (
                "ready_for_review",
                "true when it is not a draft (the list's draft flag; a closed draft stays false); when it was marked ready is not known: GitHub states that only as a ready_for_review event in each pull request's own events, one request per pull request",
            ),
        ],
    }
    Reviews = "reviews" {
        doc: "Reviews of the fetched pull requests (`pulls/{n}/reviews`).",
        scope: PullRequests,
        keys: ["state", "since", "until", "labels", "limit"],
        endpoints: ["pulls", "pulls/{n}/reviews"],
        columns: [
            (
                "pull_number",
                "the pull request reviewed (github:pulls number)",
            ),
            ("review_id", "review id"),
            ("reviewer", "login of the reviewer"),
            ("reviewer_type", "User or Bot"),
            (
                "state",
                "APPROVED; CHANGES_REQUESTED; COMMENTED (comments, no verdict); DISMISSED (an approval or change request a maintainer dismissed: it no longer counts); PENDING (started, not submitted)",
            ),
            (
                "submitted_at",
                "submitted (UTC), empty for a pending review",
            ),
        ],
    }
    Issues = "issues" {
        doc: "Issues and pull requests (`GET /repos/{o}/{r}/issues`).",
        scope: Issues,
        keys: ["state", "since", "until", "labels", "limit"],
        endpoints: ["issues"],
        columns: [
            ("number", "issue or pull request number"),
            ("title", "title"),
            ("author", "login of the author"),
            ("author_type", "User or Bot"),
            ("state", "open or closed"),
            ("state_reason", "completed, not_planned, reopened or empty"),
            ("labels", "label names joined with ;"),
            ("comments", "number of comments"),
            ("created_at", "opened (UTC)"),
            ("updated_at", "last updated (UTC)"),
            ("closed_at", "closed (UTC), empty when open"),
            (
                "is_pull_request",
                "true for a pull request: GitHub lists pull requests as issues, so keep is_pull_request == false for issues only",
            ),
        ],
    }
    Comments = "comments" {
        doc: "Issue and pull request comments (`GET /repos/{o}/{r}/issues/comments`).",
        scope: Issues,
        keys: ["since", "until", "limit"],
        endpoints: ["issues/comments"],
        columns: [
            ("id", "comment id"),
            ("issue_number", "the issue or pull request commented on"),
            ("author", "login of the author"),
            ("author_type", "User or Bot"),
            ("created_at", "written (UTC)"),
            ("updated_at", "last edited (UTC)"),
        ],
    }
    WorkflowRuns = "workflow_runs" {
        doc: "Workflow runs (`GET /repos/{o}/{r}/actions/runs`).",
        scope: Actions,
        keys: ["since", "until", "limit"],
        endpoints: ["actions/runs"],
        columns: [
            ("id", "run id"),
            ("workflow", "workflow name"),
            ("event", "push, pull_request, schedule, ..."),
            ("status", "queued, in_progress, completed, ..."),
            (
                "conclusion",
                "success; failure, timed_out and startup_failure are failures; cancelled, skipped, neutral, action_required and stale are not; empty while running",
            ),
            ("head_branch", "branch"),
            ("run_attempt", "attempt number (1 for the first)"),
            ("created_at", "created (UTC)"),
            ("run_started_at", "started (UTC)"),
            (
                "updated_at",
                "last updated (UTC; the end time of a completed run)",
            ),
        ],
    }
}

impl GithubSource {
    /// Its declaration in [`sources!`].
    fn declared(self) -> &'static Declared {
        let d = &DECLARED[self as usize];
        debug_assert_eq!(d.source, self);
        d
    }

    /// The name written in `github:<name>` and in the policy.
    pub fn name(self) -> &'static str {
        self.declared().name
    }

    /// The workflow token's read scope the source needs.
    pub fn scope(self) -> Scope {
        self.declared().scope
    }

    /// The workflow token permission (read) the source needs, as a
    /// workflow's `permissions:` names it.
    pub fn permission(self) -> &'static str {
        self.scope().key()
    }

    /// The query keys it takes.
    pub(crate) fn keys(self) -> &'static [&'static str] {
        self.declared().keys
    }

    /// The endpoints (path below `/repos/{owner}/{name}/`) whose answers it
    /// is built from: its list, and per pull request its reviews or its
    /// size. `{n}` is a number.
    pub fn endpoints(self) -> &'static [&'static str] {
        self.declared().endpoints
    }

    /// Its CSV columns: name and meaning, in the file's order.
    pub fn columns(self) -> &'static [(&'static str, &'static str)] {
        self.declared().columns
    }

    /// The source named `name`, if any.
    pub fn parse(name: &str) -> Option<GithubSource> {
        GithubSource::ALL.into_iter().find(|s| s.name() == name)
    }

    /// Every name, for messages (`pulls`, `reviews`, ...).
    pub fn names() -> String {
        GithubSource::ALL
            .iter()
            .map(|s| format!("`{}`", s.name()))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// `open`, `closed` or `all`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// `state=open`: the open ones only.
    Open,
    /// `state=closed`: the closed ones only (a merged pull request is closed).
    Closed,
    /// `state=all`, the default: open and closed.
    All,
}

impl State {
    /// GitHub's name for it (the `state` parameter).
    pub fn as_str(self) -> &'static str {
        match self {
            State::Open => "open",
            State::Closed => "closed",
            State::All => "all",
        }
    }
}

/// One parsed `github:` source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Query {
    /// Which source.
    pub source: GithubSource,
    /// `state=` (default all).
    pub state: State,
    /// `since=`: rows updated (runs: created) at or after it.
    pub since: Option<DateTime<Utc>>,
    /// `until=`: rows updated (runs: created) before it (exclusive).
    pub until: Option<DateTime<Utc>>,
    /// `labels=`: every one must be on a row.
    pub labels: Vec<String>,
    /// `limit=`: the most rows.
    pub limit: Option<u32>,
    /// `sizes=` (pulls): fetch each pull request's size.
    pub sizes: bool,
    /// The text as written (trimmed), the input's name in records and comments.
    pub text: String,
}

/// The keys `source` takes (as [`GithubSource::keys`] declares them).
pub(crate) fn allowed(source: GithubSource) -> &'static [&'static str] {
    source.keys()
}

/// True when `text` names a `github:` source (the prefix decides; the
/// rest may still be wrong, which [`parse`] says).
pub fn is_source(text: &str) -> bool {
    text.trim().to_ascii_lowercase().starts_with("github:")
}

/// A date or time of `key`; `end_of_day` turns a bare date into the start
/// of the next day (for an exclusive `until`).
fn time(key: &str, value: &str, end_of_day: bool) -> Result<DateTime<Utc>, String> {
    if let Some(days) = value
        .strip_prefix('-')
        .and_then(|v| v.strip_suffix('d'))
        .and_then(|d| d.parse::<u32>().ok())
    {
        return Ok(Utc::now() - chrono::Duration::days(i64::from(days)));
    }
    if let Ok(d) = NaiveDate::parse_from_str(value, "%Y-%m-%d") {
        let d = if end_of_day {
            d.succ_opt().unwrap_or(d)
        } else {
            d
        };
        return Ok(d.and_hms_opt(0, 0, 0).unwrap_or_default().and_utc());
    }
    DateTime::parse_from_rfc3339(value)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|_| {
            format!(
                "`{key}={value}` is not a date; write `{key}=2026-11-01` (UTC), a time such as `{key}=2026-11-01T09:00:00Z`, or `{key}=-28d` (28 days ago)"
            )
        })
}

/// Parses one `github:` source. The error names the bad part and what is
/// allowed there.
pub fn parse(text: &str) -> Result<Query, String> {
    let text = text.trim();
    let rest = text
        .get(..7)
        .filter(|p| p.eq_ignore_ascii_case("github:"))
        .map(|_| &text[7..])
        .ok_or_else(|| format!("`{text}` is not a `github:` source"))?;
    let (name, query) = rest.split_once('?').unwrap_or((rest, ""));
    let source = GithubSource::parse(name).ok_or_else(|| {
        format!(
            "`github:{name}` is not a source; the sources are {}",
            GithubSource::names()
        )
    })?;
    let mut q = Query {
        source,
        state: State::All,
        since: None,
        until: None,
        labels: Vec::new(),
        limit: None,
        sizes: true,
        text: text.to_string(),
    };
    let keys = allowed(source);
    let mut seen: Vec<&str> = Vec::new();
    for part in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = part.split_once('=').ok_or_else(|| {
            format!(
                "`{part}` in `{text}` has no value; write `key=value` (keys: {})",
                list(keys)
            )
        })?;
        let value = value.trim();
        if !keys.contains(&key) {
            return Err(format!(
                "`github:{}` takes no `{key}`; its keys are {}",
                source.name(),
                list(keys)
            ));
        }
        if seen.contains(&key) {
            return Err(format!("`{key}` is given twice in `{text}`; give it once"));
        }
        seen.push(key);
        match key {
            "state" => {
                q.state = match value {
                    "open" => State::Open,
                    "closed" => State::Closed,
                    "all" => State::All,
                    _ => {
                        return Err(format!(
                            "`state={value}` is not a state; write `open`, `closed` or `all`"
                        ));
                    }
                }
            }
            "since" => q.since = Some(time(key, value, false)?),
            "until" => q.until = Some(time(key, value, true)?),
            "labels" => {
                q.labels = value
                    .split(',')
                    .map(str::trim)
                    .filter(|l| !l.is_empty())
                    .map(str::to_string)
                    .collect()
            }
            "limit" => {
                q.limit = Some(
                    value
                        .parse::<u32>()
                        .ok()
                        .filter(|n| *n > 0)
                        .ok_or_else(|| {
                            format!(
                                "`limit={value}` is not a number of rows; write e.g. `limit=500`"
                            )
                        })?,
                )
            }
            _ => {
                q.sizes = match value {
                    "true" => true,
                    "false" => false,
                    _ => return Err(format!("`sizes={value}`: write `true` or `false`")),
                }
            }
        }
    }
    if let (Some(s), Some(u)) = (q.since, q.until)
        && s >= u
    {
        return Err(format!(
            "in `{text}` `since` is not before `until`; nothing could match"
        ));
    }
    Ok(q)
}

/// Parses every source of one request or watch and checks them together:
/// each source named once, and `github:reviews` beside `github:pulls`
/// without filters of its own (its reviews are those of the pulls). The
/// queries that passed, and every problem, each with the index of its entry
/// in `specs` (a watch file places it). The policy's rules on a query are
/// `Inputs::github_problem`.
pub fn parse_all(specs: &[String]) -> (Vec<Query>, Vec<(usize, String)>) {
    let mut problems = Vec::new();
    let mut out: Vec<(usize, Query)> = Vec::new();
    for (i, spec) in specs.iter().enumerate() {
        match parse(spec) {
            Err(e) => problems.push((i, e)),
            Ok(q) if out.iter().any(|(_, o)| o.source == q.source) => problems.push((
                i,
                format!(
                    "`github:{}` is named twice; name each source once",
                    q.source.name()
                ),
            )),
            Ok(q) => out.push((i, q)),
        }
    }
    let pulls = out.iter().any(|(_, q)| q.source == GithubSource::Pulls);
    if let Some((i, r)) = out.iter().find(|(_, q)| q.source == GithubSource::Reviews)
        && pulls
        && (r.state != State::All
            || r.since.is_some()
            || r.until.is_some()
            || !r.labels.is_empty()
            || r.limit.is_some())
    {
        problems.push((
            *i,
            format!(
                "`{}`: with `github:pulls` the reviews are those of its pull requests; write `github:reviews` without filters",
                r.text
            ),
        ));
    }
    problems.sort_by_key(|(i, _)| *i);
    (out.into_iter().map(|(_, q)| q).collect(), problems)
}

fn list(keys: &[&str]) -> String {
    keys.iter()
        .map(|k| format!("`{k}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Splits the items of an `inputs` list (already split at commas) into
/// workspace paths and `github:` sources. A comma inside a source's last
/// `labels=` value splits the list too; such a piece (no `/`, no `.`, not
/// a source itself) is joined back to the source it follows.
pub fn split_inputs(items: &[String]) -> (Vec<String>, Vec<String>) {
    let (mut paths, mut sources): (Vec<String>, Vec<String>) = (Vec::new(), Vec::new());
    let mut last_was_labels = false;
    for item in items {
        let item = item.trim();
        if is_source(item) {
            sources.push(item.to_string());
            last_was_labels = ends_with_labels(item);
        } else if last_was_labels && !item.contains(['/', '.', '=']) {
            if let Some(s) = sources.last_mut() {
                s.push(',');
                s.push_str(item);
            }
        } else {
            paths.push(item.to_string());
            last_was_labels = false;
        }
    }
    (paths, sources)
}

fn ends_with_labels(source: &str) -> bool {
    source
        .split_once('?')
        .and_then(|(_, q)| q.rsplit('&').next())
        .is_some_and(|p| p.starts_with("labels="))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// docs/github-data.md follows the declaration: each source's file row
    /// lists its columns in order, and each query key's row names exactly
    /// the sources that take it (`all` when every one does).
    #[test]
    fn the_docs_list_every_source_its_keys_and_its_columns() {
        let doc = include_str!("../../../docs/github-data.md");
        for s in GithubSource::ALL {
            let file = format!("| `/data/github/{}.csv` |", s.name());
            let row = doc
                .lines()
                .find(|l| l.starts_with(&file))
                .unwrap_or_else(|| panic!("docs/github-data.md has no row {file}"));
            let mut at = row.len().min(file.len());
            for (column, _) in s.columns() {
                let found = row[at..].find(&format!(" {column}")).unwrap_or_else(|| {
                    panic!(
                        "docs/github-data.md: {file} lacks `{column}` (or lists it out of order)"
                    )
                });
                at += found + column.len() + 1;
            }
        }
        let mut keys: Vec<&str> = GithubSource::ALL
            .iter()
            .flat_map(|s| s.keys())
            .copied()
            .collect();
        keys.sort();
        keys.dedup();
        for key in keys {
            let row = doc
                .lines()
                .find(|l| {
                    l.starts_with("| `")
                        && l.split('|')
                            .nth(1)
                            .is_some_and(|c| c.contains(&format!("`{key}`")))
                })
                .unwrap_or_else(|| {
                    panic!("docs/github-data.md has no row for the query key `{key}`")
                });
            let listed = row.split('|').nth(2).unwrap().trim();
            let takes: Vec<&str> = GithubSource::ALL
                .iter()
                .filter(|s| s.keys().contains(&key))
                .map(|s| s.name())
                .collect();
            let expected = if takes.len() == GithubSource::ALL.len() {
                "all".to_string()
            } else {
                takes.join(", ")
            };
            assert_eq!(
                listed, expected,
                "docs/github-data.md: the sources of `{key}`"
            );
        }
    }

    #[test]
    fn a_full_query_is_read() {
        let q = parse("github:pulls?state=closed&since=2026-11-01&until=2026-11-30&labels=a,b&limit=500&sizes=false").unwrap();
        assert_eq!(q.source, GithubSource::Pulls);
        assert_eq!(q.state, State::Closed);
        assert_eq!(q.since.unwrap().to_rfc3339(), "2026-11-01T00:00:00+00:00");
        // A date as `until` takes that whole day.
        assert_eq!(q.until.unwrap().to_rfc3339(), "2026-12-01T00:00:00+00:00");
        assert_eq!(q.labels, vec!["a", "b"]);
        assert_eq!(q.limit, Some(500));
        assert!(!q.sizes);
        let q = parse("github:workflow_runs?since=-28d").unwrap();
        let ago = Utc::now() - q.since.unwrap();
        assert!((ago.num_hours() - 28 * 24).abs() <= 1, "{ago}");
        let q = parse("github:workflow_runs").unwrap();
        assert_eq!((q.state, q.limit, q.since), (State::All, None, None));
    }

    #[test]
    fn every_error_names_the_bad_part_and_what_is_allowed() {
        let e = |t: &str| parse(t).unwrap_err();
        let m = e("github:pull");
        assert!(
            m.contains("`github:pull`") && m.contains("`workflow_runs`"),
            "{m}"
        );
        let m = e("github:comments?state=open");
        assert!(
            m.contains("takes no `state`") && m.contains("`since`, `until`, `limit`"),
            "{m}"
        );
        assert!(e("github:pulls?state=merged").contains("`open`, `closed` or `all`"));
        assert!(e("github:pulls?since=yesterday").contains("since=2026-11-01"));
        assert!(e("github:pulls?limit=0").contains("limit=500"));
        assert!(e("github:pulls?limit").contains("has no value"));
        assert!(e("github:pulls?limit=1&limit=2").contains("given twice"));
        assert!(e("github:pulls?since=2026-11-02&until=2026-11-01").contains("not before"));
    }

    #[test]
    fn a_list_names_each_source_once_and_reviews_follow_the_pulls() {
        let specs: Vec<String> = [
            "github:pulls",
            "github:pull",
            "github:pulls?state=open",
            "github:reviews?since=2026-11-01",
            "github:issues",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let (ok, problems) = parse_all(&specs);
        let sources: Vec<GithubSource> = ok.iter().map(|q| q.source).collect();
        assert_eq!(
            sources,
            [
                GithubSource::Pulls,
                GithubSource::Reviews,
                GithubSource::Issues
            ]
        );
        let at: Vec<usize> = problems.iter().map(|(i, _)| *i).collect();
        assert_eq!(at, [1, 2, 3], "{problems:?}");
        assert!(problems[0].1.contains("not a source"));
        assert!(problems[1].1.contains("named twice"));
        assert!(problems[2].1.contains("without filters"));
        assert!(
            parse_all(&specs[3..4]).1.is_empty(),
            "alone, reviews take filters"
        );
    }

    #[test]
    fn labels_commas_stay_with_their_source() {
        let items: Vec<String> = [
            "data/a.csv",
            "github:pulls?state=closed&labels=bug",
            "ui",
            "github:reviews",
            "b.csv",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let (paths, sources) = split_inputs(&items);
        assert_eq!(paths, vec!["data/a.csv", "b.csv"]);
        assert_eq!(
            sources,
            vec!["github:pulls?state=closed&labels=bug,ui", "github:reviews"]
        );
        assert_eq!(parse(&sources[0]).unwrap().labels, vec!["bug", "ui"]);
    }
}
