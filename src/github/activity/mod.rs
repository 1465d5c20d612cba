//! The repository's own activity as data: the `github:` sources
//! (`github:pulls`, `github:reviews`, `github:issues`, `github:comments`,
//! `github:workflow_runs`) named in `inputs=`, a workflow's `inputs` or a
//! watch file, fetched by the trusted side with the job's token and handed
//! to the code as `/data/github/<source>.csv` (the sandbox keeps no
//! network). The query syntax is `crate::sources` (plain data, also read by
//! `watch check`), `fetch.rs` pages through the REST lists within a request
//! budget, `table.rs` holds the columns and writes the CSV.
//!
//! Each source is fetched once per run: `github:reviews` are the reviews
//! of the pull requests `github:pulls` lists (or, without it, of the pull
//! requests its own filters select). Lists come first, then the reviews of
//! each pull request, then each pull request's size, all within the policy's
//! `inputs.github_max_requests`: a list that does not fit stops the request;
//! reviews or sizes that do not fit are left out of the rows past the
//! budget, which the file (`reviews_fetched`, empty size cells) and the
//! prompt say.

pub(crate) mod earlier;
pub(crate) mod fetch;
pub(crate) mod table;

use serde_json::Value;

use crate::github::rest::client::{GitHub, GitHubError};
use crate::policy::Inputs;
use crate::sandbox::GITHUB_DIR;
use crate::sources::{GithubSource, Query};
use fetch::{Budget, FetchError, Purpose, Take, judge, list, need, one, route};
use table::{PullDetail, PullExtra};

pub(crate) use crate::sources::split_inputs;

/// One fetched source: its query, its file and what the code must know.
#[derive(Debug, Clone)]
pub(crate) struct SourceFile {
    /// The query as parsed.
    pub(crate) query: Query,
    /// `github/<source>.csv`, the name under `/data` ([`file_name`]).
    pub(crate) name: String,
    /// The CSV bytes.
    pub(crate) bytes: Vec<u8>,
    /// Data rows.
    pub(crate) rows: usize,
    /// What is incomplete (a limit reached, sizes or reviews not fetched).
    pub(crate) notes: Vec<String>,
    /// Read back from an earlier run's snapshot: where it is kept
    /// (`<branch>@<sha>:<path>`); `None` when fetched in this run.
    pub(crate) snapshot: Option<String>,
    /// The `ETag` of each answer the file was built from, by the URL asked
    /// (kept beside the snapshot, [`etags_name`]; see [`earlier`]).
    pub(crate) etags: Vec<(String, String)>,
}

/// Where the data of a run's sources came from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) enum Origin {
    /// Fetched in this run.
    #[default]
    Fetched,
    /// Read back from an earlier run's snapshot (see [`earlier`]), not
    /// fetched again.
    Snapshot {
        /// The runs that fetched it (`7101`, `7101 (attempt 2)`).
        runs: Vec<String>,
        /// The commits of the files branch holding it (12 hex digits).
        commits: Vec<String>,
    },
    /// Asked afresh (`replay fresh`), GitHub answered every request the
    /// earlier run's snapshot was built from with `304 Not Modified`: the
    /// snapshot is read back (no primary rate limit spent).
    Unchanged {
        /// The runs that fetched it.
        runs: Vec<String>,
        /// The commits of the files branch holding it (12 hex digits).
        commits: Vec<String>,
    },
    /// Fetched in this run although an earlier run's data were asked for.
    Afresh {
        /// Why.
        why: String,
    },
}

/// Every source of one request, fetched.
#[derive(Debug, Clone, Default)]
pub(crate) struct Fetched {
    /// In the order named.
    pub(crate) files: Vec<SourceFile>,
    /// Requests the run made so far (of the one budget every watch and
    /// source of the run shares); for `replay fresh`'s 304s, those asked.
    pub(crate) requests: u32,
    /// The budget (`inputs.github_max_requests`).
    pub(crate) budget: u32,
    /// When the data were fetched (RFC 3339, UTC, seconds).
    pub(crate) fetched_at: Option<String>,
    /// Where they came from.
    pub(crate) origin: Origin,
}

/// The name of a source's file under `/data`: `github/<source>.csv`, in
/// the bot's own folder ([`GITHUB_DIR`]), which no workspace file can take.
pub(crate) fn file_name(source: GithubSource) -> String {
    format!("{GITHUB_DIR}/{}.csv", source.name())
}

/// The name of the `ETag`s kept beside a source's file `name`
/// (`github/<source>.csv` → `github/<source>.etags.json`): a JSON array of
/// `[url, etag]` pairs, committed with the snapshot, never given to the code.
pub(crate) fn etags_name(name: &str) -> String {
    format!("{}.etags.json", name.strip_suffix(".csv").unwrap_or(name))
}

/// Parses `specs` and checks them against the policy: the list's own
/// rules ([`crate::sources::parse_all`]: each source once, reviews not
/// filtered apart from the pulls they review) and the policy's on each
/// query ([`Inputs::github_problem`]: opted in, `limit` within
/// `inputs.github_max_items`). Every problem is listed.
pub(crate) fn check(specs: &[String], policy: &Inputs) -> Result<Vec<Query>, Vec<String>> {
    let (parsed, found) = crate::sources::parse_all(specs);
    let mut problems: Vec<String> = found.into_iter().map(|(_, p)| p).collect();
    let mut out = Vec::new();
    for q in parsed {
        match policy.github_problem(&q) {
            Some(p) => problems.push(p),
            None => out.push(q),
        }
    }
    if problems.is_empty() {
        Ok(out)
    } else {
        Err(problems)
    }
}

/// Why a source stopped the request, in words naming what to change.
fn problem(q: &Query, e: FetchError, budget: &Budget) -> String {
    match e {
        FetchError::GitHub(GitHubError::Api {
            status: s @ (403 | 404),
            message,
            ..
        }) => format!(
            "`{}` cannot be read with this token: GitHub answered HTTP {s} ({message}). The job needs the `{}: read` permission: add it under `permissions:` in the workflow file (`compute-bot init` writes it for the sources the policy allows) and run again",
            q.text,
            q.source.permission()
        ),
        FetchError::GitHub(e) => format!("`{}`: {e}", q.text),
        FetchError::Budget { pages } => format!(
            "`{}` needs more than the {} requests the policy allows a run (`inputs.github_max_requests`, one budget for every watch and source of the run; {pages} page(s) of this list were read, {} requests in all); narrow it with `since=` or `limit=`, or raise the policy's",
            q.text,
            budget.max,
            budget.used()
        ),
    }
}

/// The pull requests a query selects, newest first (by update time when
/// `since` is given, so the walk stops at the first one older; else by
/// creation).
async fn pulls(
    gh: &GitHub,
    b: &mut Budget,
    q: &Query,
    limit: usize,
) -> Result<Vec<Value>, FetchError> {
    let action = format!("listing the pull requests of {}", gh.repo_ref());
    let sort = if q.since.is_some() {
        "updated"
    } else {
        "created"
    };
    let params = [
        ("state", q.state.as_str().to_string()),
        ("sort", sort.to_string()),
        ("direction", "desc".to_string()),
    ];
    let sorted = q.since.is_some();
    list(
        gh,
        b,
        Purpose {
            action: &action,
            need: need(q.source),
        },
        &route(gh, "pulls"),
        &params,
        limit,
        |p| judge(q, p, "updated_at", sorted),
    )
    .await
}

/// The rows of a list source (issues, comments, workflow runs).
async fn listed(
    gh: &GitHub,
    b: &mut Budget,
    q: &Query,
    limit: usize,
) -> Result<Vec<Vec<String>>, FetchError> {
    let since = q.since.map(fetch::iso);
    let mut params: Vec<(&str, String)> = Vec::new();
    let (tail, field, what) = match q.source {
        GithubSource::Issues => {
            params.push(("state", q.state.as_str().to_string()));
            params.push(("sort", "updated".into()));
            params.push(("direction", "desc".into()));
            if !q.labels.is_empty() {
                params.push(("labels", q.labels.join(",")));
            }
            ("issues", "updated_at", "issues")
        }
        GithubSource::Comments => {
            params.push(("sort", "updated".into()));
            params.push(("direction", "desc".into()));
            ("issues/comments", "updated_at", "issue comments")
        }
        _ => ("actions/runs", "created_at", "workflow runs"),
    };
    match (&since, q.source) {
        (Some(s), GithubSource::WorkflowRuns) => params.push(("created", format!(">={s}"))),
        (Some(s), _) => params.push(("since", s.clone())),
        _ => {}
    }
    let action = format!("listing the {what} of {}", gh.repo_ref());
    let items = list(
        gh,
        b,
        Purpose {
            action: &action,
            need: need(q.source),
        },
        &route(gh, tail),
        &params,
        limit,
        |i| judge(q, i, field, true),
    )
    .await?;
    Ok(items
        .iter()
        .map(|i| match q.source {
            GithubSource::Issues => table::issue_row(i),
            GithubSource::Comments => table::comment_row(i),
            _ => table::run_row(i),
        })
        .collect())
}

/// The reviews of each pull request while the budget lasts; the second
/// value marks which pull requests' reviews were read.
async fn reviews(
    gh: &GitHub,
    b: &mut Budget,
    pulls: &[Value],
) -> Result<(Vec<Vec<String>>, Vec<bool>), FetchError> {
    let mut rows = Vec::new();
    let mut done = vec![false; pulls.len()];
    for (i, p) in pulls.iter().enumerate() {
        let Some(n) = p.get("number").and_then(Value::as_u64) else {
            continue;
        };
        let action = format!(
            "listing the reviews of pull request #{n} of {}",
            gh.repo_ref()
        );
        let tail = format!("pulls/{n}/reviews");
        match list(
            gh,
            b,
            Purpose {
                action: &action,
                need: need(GithubSource::Reviews),
            },
            &route(gh, &tail),
            &[],
            usize::MAX,
            |_| Take::Keep,
        )
        .await
        {
            Ok(items) => {
                rows.extend(items.iter().map(|r| table::review_row(n, r)));
                done[i] = true;
            }
            Err(FetchError::Budget { .. }) => break,
            Err(e) => return Err(e),
        }
    }
    Ok((rows, done))
}

/// Each pull request's size and merger (one request each: the single pull
/// request's answer) while the budget lasts.
async fn sizes(
    gh: &GitHub,
    b: &mut Budget,
    pulls: &[Value],
) -> Result<Vec<Option<PullDetail>>, FetchError> {
    let mut out = vec![None; pulls.len()];
    for (i, p) in pulls.iter().enumerate() {
        let Some(n) = p.get("number").and_then(Value::as_u64) else {
            continue;
        };
        if !b.take() {
            break;
        }
        let action = format!("reading the size of pull request #{n} of {}", gh.repo_ref());
        let v = one(
            gh,
            b,
            Purpose {
                action: &action,
                need: need(GithubSource::Pulls),
            },
            &route(gh, &format!("pulls/{n}")),
        )
        .await?;
        out[i] = Some(PullDetail::of(&v));
    }
    Ok(out)
}

/// Fetches the checked sources `queries` (see [`check`]) through `gh`
/// within the run's budget `b`: every file, or every problem (the first
/// failing source stops the rest). A list whose next-page link leads
/// elsewhere stops there, said in its file's notes.
pub(crate) async fn fetch(
    gh: &GitHub,
    queries: &[Query],
    policy: &Inputs,
    b: &mut Budget,
) -> Result<Fetched, Vec<String>> {
    let mut stopped: Vec<(GithubSource, String)> = Vec::new();
    let max_items = policy.github_max_items as usize;
    let limit = |q: &Query| q.limit.map_or(max_items, |l| l as usize);
    let by = |s: GithubSource| queries.iter().find(|q| q.source == s);
    let mut lists: Vec<(Query, Vec<Vec<String>>, Vec<String>)> = Vec::new();
    // The answers each source was built from (its ETags).
    let mut tags: Vec<(GithubSource, Tags)> = Vec::new();
    // The pull requests, for github:pulls and github:reviews alike.
    let pulls_query = by(GithubSource::Pulls).or(by(GithubSource::Reviews));
    let mut pull_items = Vec::new();
    if let Some(q) = pulls_query {
        pull_items = pulls(gh, b, q, limit(q))
            .await
            .map_err(|e| vec![problem(q, e, b)])?;
        for why in b.stopped.drain(..) {
            stopped.push((GithubSource::Pulls, why.clone()));
            stopped.push((GithubSource::Reviews, why));
        }
    }
    let pull_tags = b.etags.clone();
    for q in queries
        .iter()
        .filter(|q| !matches!(q.source, GithubSource::Pulls | GithubSource::Reviews))
    {
        let start = b.etags.len();
        let rows = listed(gh, b, q, limit(q))
            .await
            .map_err(|e| vec![problem(q, e, b)])?;
        let mut notes: Vec<String> = b.stopped.drain(..).collect();
        if rows.len() >= limit(q) {
            notes.push(format!(
                "stopped at its limit of {} rows (newest first); older rows were not fetched",
                limit(q)
            ));
        }
        if q.source == GithubSource::WorkflowRuns && q.since.is_some() && rows.len() >= 1000 {
            notes.push("GitHub lists at most 1,000 workflow runs for a `created` filter; there may be more".into());
        }
        tags.push((q.source, b.etags[start..].to_vec()));
        lists.push((q.clone(), rows, notes));
    }
    let mut extras = vec![PullExtra::default(); pull_items.len()];
    let mut review_rows = Vec::new();
    if let Some(q) = by(GithubSource::Reviews) {
        let start = b.etags.len();
        let (rows, done) = reviews(gh, b, &pull_items)
            .await
            .map_err(|e| vec![problem(q, e, b)])?;
        for why in b.stopped.drain(..) {
            stopped.push((GithubSource::Reviews, why));
        }
        for (x, d) in extras.iter_mut().zip(done) {
            x.reviews_fetched = d;
        }
        review_rows = rows;
        let own = b.etags[start..].iter().cloned();
        tags.push((
            GithubSource::Reviews,
            pull_tags.iter().cloned().chain(own).collect(),
        ));
    }
    let start = b.etags.len();
    if let Some(q) = by(GithubSource::Pulls).filter(|q| q.sizes) {
        let sizes = sizes(gh, b, &pull_items)
            .await
            .map_err(|e| vec![problem(q, e, b)])?;
        for (x, s) in extras.iter_mut().zip(sizes) {
            x.detail = s;
        }
    }
    let own = b.etags[start..].iter().cloned();
    tags.push((
        GithubSource::Pulls,
        pull_tags.iter().cloned().chain(own).collect(),
    ));
    let mut fetched = assemble(queries, &pull_items, &extras, review_rows, lists, tags, b);
    for (source, why) in stopped {
        let files = fetched.files.iter_mut();
        for f in files.filter(|f| f.query.source == source) {
            f.notes.push(why.clone());
        }
    }
    Ok(fetched)
}

/// `(URL, ETag)` of the answers a source was built from.
pub(crate) type Tags = Vec<(String, String)>;

/// The files of the fetched sources, in the order named, with their notes.
fn assemble(
    queries: &[Query],
    pull_items: &[Value],
    extras: &[PullExtra],
    review_rows: Vec<Vec<String>>,
    mut lists: Vec<(Query, Vec<Vec<String>>, Vec<String>)>,
    tags: Vec<(GithubSource, Tags)>,
    b: &Budget,
) -> Fetched {
    let n = pull_items.len();
    let reviewed = extras.iter().filter(|x| x.reviews_fetched).count();
    let sized = extras.iter().filter(|x| x.detail.is_some()).count();
    let budget_note = format!(
        "the request budget (`inputs.github_max_requests`: {}) was used up",
        b.max
    );
    let mut files = Vec::new();
    for q in queries {
        let (rows, mut notes) = match q.source {
            GithubSource::Pulls => {
                let rows: Vec<Vec<String>> = pull_items
                    .iter()
                    .zip(extras)
                    .map(|(p, x)| table::pull_row(p, x))
                    .collect();
                let mut notes = Vec::new();
                if q.sizes && sized < n {
                    notes.push(format!("sizes (additions, deletions, changed_files) and merged_by fetched for {sized} of {n} pull requests, newest first; {budget_note}, so the others' size and merged_by cells are empty"));
                } else if !q.sizes {
                    notes.push("sizes not fetched (`sizes=false`): additions, deletions, changed_files and merged_by are empty".into());
                }
                (rows, notes)
            }
            GithubSource::Reviews => {
                let mut notes = Vec::new();
                if reviewed < n {
                    notes.push(format!("reviews of {reviewed} of {n} pull requests, newest first; {budget_note} (github/pulls.csv says which: reviews_fetched)"));
                }
                (review_rows.clone(), notes)
            }
            _ => {
                let i = lists
                    .iter()
                    .position(|(l, _, _)| l.source == q.source)
                    .unwrap_or_default();
                let (_, rows, notes) = lists.swap_remove(i);
                (rows, notes)
            }
        };
        if matches!(q.source, GithubSource::Pulls | GithubSource::Reviews)
            && n >= q.limit.unwrap_or(u32::MAX) as usize
        {
            notes.push(format!(
                "the pull requests stopped at the limit of {n} (newest first)"
            ));
        }
        let text = table::csv(q.source, &rows);
        files.push(SourceFile {
            query: q.clone(),
            name: file_name(q.source),
            bytes: text.into_bytes(),
            rows: rows.len(),
            notes,
            snapshot: None,
            etags: tags
                .iter()
                .find(|(s, _)| *s == q.source)
                .map(|(_, t)| t.clone())
                .unwrap_or_default(),
        });
    }
    Fetched {
        files,
        requests: b.used(),
        budget: b.max,
        fetched_at: Some(chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
        origin: Origin::Fetched,
    }
}

/// What the prompt says of the sources: each file, its columns and what
/// is incomplete. The rows themselves reach the model only as the input
/// previews do, at the policy's `model.data` level.
pub(crate) fn describe(f: &Fetched) -> String {
    let mut out = String::from(
        "GitHub data fetched for this request (CSV with a header; timestamps ISO 8601 UTC; people as login + User/Bot; labels joined with ;):\n",
    );
    for s in &f.files {
        out.push_str(&format!(
            "- /data/{} from `{}`, {} rows. Columns:",
            s.name, s.query.text, s.rows
        ));
        for (name, meaning) in table::columns(s.query.source) {
            out.push_str(&format!(" {name} ({meaning});"));
        }
        out.push('\n');
        for n in &s.notes {
            out.push_str(&format!("  Note: {n}.\n"));
        }
    }
    out
}

/// What one run fetched, by the list of sources asked for: a second watch
/// or the base and head runs of a pull request's watches asking the same
/// list reuse it, so each is fetched once per run; the requests the run
/// made, so that `inputs.github_max_requests` is one budget for the whole
/// run (every watch, every source, base and head, `replay fresh`); and
/// where each file fetched was kept, so it is committed once per run.
#[derive(Debug, Default)]
pub(crate) struct Cache {
    done: tokio::sync::Mutex<Vec<(Vec<String>, Resolved)>>,
    spent: std::sync::Arc<std::sync::atomic::AtomicU32>,
    kept: std::sync::Mutex<Vec<((String, String), String)>>,
}

/// What [`resolve`] gives: the admitted files and what was fetched, or every problem.
type Resolved = Result<(Vec<crate::admit::Admitted>, Fetched), Vec<String>>;

impl Cache {
    /// [`resolve`], once per list of sources in this run.
    pub(crate) async fn resolve(&self, gh: &GitHub, specs: &[String], policy: &Inputs) -> Resolved {
        let mut done = self.done.lock().await;
        if let Some((_, r)) = done.iter().find(|(s, _)| s.as_slice() == specs) {
            return r.clone();
        }
        let r = resolve(gh, specs, policy, &mut self.budget(policy)).await;
        done.push((specs.to_vec(), r.clone()));
        r
    }

    /// The run's request budget: `inputs.github_max_requests`, less what
    /// the run's sources asked so far.
    pub(crate) fn budget(&self, policy: &Inputs) -> Budget {
        Budget::of_run(policy.github_max_requests, self.spent.clone())
    }

    /// Where this run kept the file `name` with hex SHA-256 `sha256`, if it did.
    pub(crate) fn kept(&self, name: &str, sha256: &str) -> Option<String> {
        let kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        kept.iter()
            .find(|((n, s), _)| n == name && s == sha256)
            .map(|(_, at)| at.clone())
    }

    /// Notes where this run kept the file `name` with hex SHA-256 `sha256`.
    pub(crate) fn keep(&self, name: &str, sha256: &str, at: &str) {
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        kept.push(((name.to_string(), sha256.to_string()), at.to_string()));
    }
}

/// The `github:` sources among `specs`, checked against the policy,
/// fetched and admitted (each within `inputs.max_file_bytes`; the caller
/// checks them together with the workspace files, see
/// [`crate::admit::check_together`]). Every problem is listed, each naming
/// the source and what to change.
pub(crate) async fn resolve(
    gh: &GitHub,
    specs: &[String],
    policy: &Inputs,
    budget: &mut Budget,
) -> Result<(Vec<crate::admit::Admitted>, Fetched), Vec<String>> {
    if specs.is_empty() {
        return Ok((Vec::new(), Fetched::default()));
    }
    let queries = check(specs, policy)?;
    let fetched = fetch(gh, &queries, policy, budget).await?;
    tracing::info!(
        "github sources: {} file(s), {} of {} requests",
        fetched.files.len(),
        fetched.requests,
        fetched.budget
    );
    let mut out = Vec::new();
    let mut problems = Vec::new();
    for f in &fetched.files {
        match crate::admit::admit_fetched(&f.query.text, &f.name, f.bytes.clone(), policy) {
            Ok(a) => out.push(a),
            Err(r) => problems.push(r.to_string()),
        }
    }
    if problems.is_empty() {
        Ok((out, fetched))
    } else {
        Err(problems)
    }
}

/// The reference of a snapshot committed to the files branch:
/// `<branch>@<commit sha>:<path>` (recorded in the run record).
pub(crate) fn snapshot_at(branch: &str, sha: &str, path: &str) -> String {
    format!("{branch}@{sha}:{path}")
}

/// A committed snapshot's `(commit sha, path)` from its reference
/// `<branch>@<sha>:<path>`; `None` for `artifact` or anything else.
pub(crate) fn snapshot_ref(at: &str) -> Option<(&str, &str)> {
    let (_, rest) = at.split_once('@')?;
    let (sha, path) = rest.split_once(':')?;
    (sha.len() == 40 && sha.chars().all(|c| c.is_ascii_hexdigit())).then_some((sha, path))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The policies' comments say where the code finds the data: the file
    /// [`file_name`] gives, under `/data`.
    #[test]
    fn the_policy_comments_name_the_files_the_code_reads() {
        let root = env!("CARGO_MANIFEST_DIR");
        let said = format!("/data/{}", file_name(GithubSource::Pulls)).replace("pulls", "<source>");
        for path in ["policies/default.yml", "examples/compute-bot.yml"] {
            let text = std::fs::read_to_string(format!("{root}/{path}")).unwrap();
            for (i, line) in text.lines().enumerate() {
                if line.contains("/data/github") {
                    assert!(
                        line.contains(&said),
                        "{path}:{}: `{}` names another file than `{said}`",
                        i + 1,
                        line.trim()
                    );
                }
            }
        }
        assert!(
            std::fs::read_to_string(format!("{root}/policies/default.yml"))
                .unwrap()
                .contains(&said)
        );
    }
}
