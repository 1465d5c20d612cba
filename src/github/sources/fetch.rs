//! Reading the REST list endpoints of the `github:` sources through the
//! client's one request path ([`GitHub::call`]: retries, rate limits waited
//! out within the run's budget), paged by the `Link` header with
//! `per_page=100`, within a request budget counted here.

use octocrab::Page;
use serde_json::Value;

use crate::github::client::{GitHub, GitHubError, Need, encode_segment};
use crate::github::sources::table::{labels_of, time_of};
use crate::sources::{GithubSource, Query};

/// Items per page (GitHub's most).
const PER_PAGE: &str = "100";

/// The requests the sources of one run may make, and how many they made.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Budget {
    /// The most (the policy's `inputs.github_max_requests`).
    pub(crate) max: u32,
    /// Made so far (each page and each per-item request is one; the
    /// client's retries of a failed request are not counted again).
    pub(crate) used: u32,
}

impl Budget {
    /// Takes one request; false when none is left.
    pub(crate) fn take(&mut self) -> bool {
        if self.used < self.max {
            self.used += 1;
            true
        } else {
            false
        }
    }
}

/// Why a source could not be fetched.
#[derive(Debug, Clone)]
pub(crate) enum FetchError {
    /// GitHub refused or failed (a 403 names the permission, see
    /// [`super::permission_problem`]).
    GitHub(GitHubError),
    /// The list needs more requests than the budget has left.
    Budget {
        /// Pages read before the budget ran out.
        pages: u32,
    },
}

impl From<GitHubError> for FetchError {
    fn from(e: GitHubError) -> Self {
        FetchError::GitHub(e)
    }
}

/// `/repos/{owner}/{name}/{tail}` of the client's repository.
pub(crate) fn route(gh: &GitHub, tail: &str) -> String {
    let r = gh.repo_ref();
    format!(
        "/repos/{}/{}/{tail}",
        encode_segment(&r.owner),
        encode_segment(&r.name)
    )
}

/// The permission a source's requests need, for the client's hint.
pub(crate) fn need(source: GithubSource) -> Need {
    match source {
        GithubSource::Pulls | GithubSource::Reviews => Need::ReadPulls,
        GithubSource::Issues | GithubSource::Comments => Need::ReadIssues,
        GithubSource::WorkflowRuns => Need::ReadActions,
    }
}

/// What a list walk does with an item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Take {
    /// Keep it.
    Keep,
    /// Skip it, read on.
    Skip,
    /// Skip it and stop: the list is sorted, no later item can match.
    Stop,
}

/// Reads every page of `route` with `params` (plus `per_page=100`), each
/// item judged by `take`, until `limit` items are kept or the list ends.
pub(crate) async fn list(
    gh: &GitHub,
    budget: &mut Budget,
    (action, need): (&str, Need),
    route: &str,
    params: &[(&str, String)],
    limit: usize,
    take: impl Fn(&Value) -> Take,
) -> Result<Vec<Value>, FetchError> {
    let mut query: Vec<(&str, &str)> = params.iter().map(|(k, v)| (*k, v.as_str())).collect();
    query.push(("per_page", PER_PAGE));
    if !budget.take() {
        return Err(FetchError::Budget { pages: 0 });
    }
    let mut page: Page<Value> = gh
        .call(action, need, || {
            gh.crab().get::<Page<Value>, _, _>(route, Some(&query))
        })
        .await?;
    let mut kept = Vec::new();
    let mut pages = 1;
    loop {
        for item in page.take_items() {
            match take(&item) {
                Take::Keep => kept.push(item),
                Take::Skip => {}
                Take::Stop => return Ok(kept),
            }
            if kept.len() >= limit {
                return Ok(kept);
            }
        }
        let Some(next) = page.next.clone() else {
            return Ok(kept);
        };
        if !budget.take() {
            return Err(FetchError::Budget { pages });
        }
        pages += 1;
        let next = Some(next);
        match gh
            .call(action, need, || gh.crab().get_page::<Value>(&next))
            .await?
        {
            Some(p) => page = p,
            None => return Ok(kept),
        }
    }
}

/// One JSON object (a pull request with its size).
pub(crate) async fn one(
    gh: &GitHub,
    (action, need): (&str, Need),
    route: &str,
) -> Result<Value, GitHubError> {
    gh.call(action, need, || gh.crab().get::<Value, _, ()>(route, None))
        .await
}

/// How a query's `since`/`until`/`labels` judge an item by its `field`
/// timestamp; `sorted_desc`: the list is newest first by that field, so an
/// item before `since` ends the walk.
pub(crate) fn judge(q: &Query, item: &Value, field: &str, sorted_desc: bool) -> Take {
    let t = time_of(item, field);
    if let (Some(since), Some(t)) = (q.since, t)
        && t < since
    {
        return if sorted_desc { Take::Stop } else { Take::Skip };
    }
    if let (Some(until), Some(t)) = (q.until, t)
        && t >= until
    {
        return Take::Skip;
    }
    let labels = labels_of(item);
    if q.labels.iter().all(|l| labels.contains(l)) {
        Take::Keep
    } else {
        Take::Skip
    }
}

/// The `since` of a query as GitHub's parameter (ISO 8601 UTC).
pub(crate) fn iso(t: chrono::DateTime<chrono::Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}
