//! Reading the REST list endpoints of the `github:` sources through the
//! client's one request path ([`GitHub::call`]: retries, rate limits waited
//! out within the run's budget), paged by the `Link` header with
//! `per_page=100`, within a request budget counted here. Each answer's
//! `ETag` is kept (by the URL asked), so that `/compute replay fresh` can
//! ask again with `If-None-Match` ([`unchanged`]): GitHub answers
//! `304 Not Modified` with an empty body when the data have not changed,
//! and such an answer to an authorised request costs no primary rate limit.

use octocrab::{FromResponse, Page};
use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::Value;

use crate::github::client::{GitHub, GitHubError, Need, encode_segment};
use crate::github::sources::table::{labels_of, time_of};
use crate::sources::{GithubSource, Query};

/// Items per page (GitHub's most).
const PER_PAGE: &str = "100";

/// The requests the sources of one run may make, and how many they made.
#[derive(Debug, Clone, Default)]
pub(crate) struct Budget {
    /// The most (the policy's `inputs.github_max_requests`).
    pub(crate) max: u32,
    /// Made so far (each page and each per-item request is one; the
    /// client's retries of a failed request are not counted again).
    pub(crate) used: u32,
    /// Each answer's `ETag`, by the URL asked (in the order asked).
    pub(crate) etags: Vec<(String, String)>,
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
    let mut page: Page<Value> = got(budget, gh, (action, need), &with_query(route, &query)).await?;
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
        page = got(budget, gh, (action, need), &next.to_string()).await?;
    }
}

/// One JSON object (a pull request with its size), its `ETag` kept.
pub(crate) async fn one(
    gh: &GitHub,
    budget: &mut Budget,
    (action, need): (&str, Need),
    route: &str,
) -> Result<Value, GitHubError> {
    got(budget, gh, (action, need), route).await
}

/// `route` with `query` form-encoded (as octocrab encodes parameters).
fn with_query(route: &str, query: &[(&str, &str)]) -> String {
    let mut u = reqwest::Url::parse("http://query.invalid/").expect("a fixed URL parses");
    u.query_pairs_mut().extend_pairs(query);
    format!("{route}?{}", u.query().unwrap_or_default())
}

/// An unconditional GET of `uri` whose `ETag` is kept in `budget`.
async fn got<R: FromResponse>(
    budget: &mut Budget,
    gh: &GitHub,
    what: (&str, Need),
    uri: &str,
) -> Result<R, GitHubError> {
    match get(gh, what, uri, None).await? {
        Answer::Body(v, etag) => {
            if let Some(etag) = etag {
                budget.etags.push((uri.to_string(), etag));
            }
            Ok(v)
        }
        // Not asked conditionally, so GitHub does not answer 304.
        Answer::NotModified => Err(GitHubError::Decode {
            action: what.0.to_string(),
            message: "GitHub answered 304 Not Modified to a request that was not conditional"
                .into(),
        }),
    }
}

/// What a GET answered.
pub(crate) enum Answer<R> {
    /// 2xx: the body read as `R`, with the `ETag` when GitHub sent one.
    Body(R, Option<String>),
    /// 304 to `If-None-Match`: unchanged, no body.
    NotModified,
}

/// A GET of `uri` (a route or a `Link` URL) through the client's one
/// request path ([`GitHub::call`]: retries, rate limits), conditional on
/// `if_none_match` when given. octocrab's typed `get` drops the headers and
/// cannot read an empty body, so the answer is read here: 304 first, then
/// octocrab's own error mapping, then the body.
pub(crate) async fn get<R: FromResponse>(
    gh: &GitHub,
    (action, need): (&str, Need),
    uri: &str,
    if_none_match: Option<&str>,
) -> Result<Answer<R>, GitHubError> {
    let mut headers = HeaderMap::new();
    if let Some(tag) = if_none_match.and_then(|t| HeaderValue::from_str(t).ok()) {
        headers.insert("if-none-match", tag);
    }
    gh.call(action, need, || {
        let headers = headers.clone();
        async move {
            let res = gh.crab()._get_with_headers(uri, Some(headers)).await?;
            if res.status().as_u16() == 304 {
                return Ok(Answer::NotModified);
            }
            let res = octocrab::map_github_error(res).await?;
            let etag = res
                .headers()
                .get("etag")
                .and_then(|v| v.to_str().ok())
                .map(str::to_string);
            Ok(Answer::Body(R::from_response(res).await?, etag))
        }
    })
    .await
}

/// Whether the answers kept as `etags` (URL, `ETag`) are all unchanged:
/// each asked again with `If-None-Match`, stopping at the first that is
/// not a 304. `Ok(n)`: all `n` were 304 (no primary rate limit spent);
/// `Err(None)`: one was answered in full (one request spent);
/// `Err(Some(e))`: GitHub failed.
pub(crate) async fn unchanged(
    gh: &GitHub,
    what: (&str, Need),
    etags: &[(String, String)],
) -> Result<u32, Option<GitHubError>> {
    for (uri, etag) in etags {
        match get::<Value>(gh, what, uri, Some(etag)).await {
            Ok(Answer::NotModified) => {}
            Ok(Answer::Body(..)) => return Err(None),
            Err(e) => return Err(Some(e)),
        }
    }
    Ok(etags.len() as u32)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_page_is_asked_with_its_parameters_form_encoded() {
        assert_eq!(
            with_query(
                "/repos/o/r/actions/runs",
                &[
                    ("created", ">=2026-01-01T00:00:00Z"),
                    ("labels", "a b,c"),
                    ("per_page", "100")
                ]
            ),
            "/repos/o/r/actions/runs?created=%3E%3D2026-01-01T00%3A00%3A00Z&labels=a+b%2Cc&per_page=100"
        );
        assert_eq!(
            crate::github::sources::etags_name("github/pulls.csv"),
            "github/pulls.etags.json"
        );
    }
}
