//! Reading the REST list endpoints of the `github:` sources through the
//! client's one request path ([`GitHub::call`]: retries, rate limits waited
//! out within the run's budget), paged by the `Link` header with
//! `per_page=100`, within a request budget counted here. Each answer's
//! `ETag` is kept (by the URL asked), so that `/compute replay fresh` can
//! ask again with `If-None-Match` ([`unchanged`]): GitHub answers
//! `304 Not Modified` with an empty body when the data have not changed,
//! and such an answer to an authorised request costs no primary rate limit.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use octocrab::{FromResponse, Page};
use serde_json::Value;

use crate::github::activity::table::{labels_of, time_of};
use crate::github::rest::client::{Answer, GitHub, GitHubError, Need, encode_segment};
use crate::sources::{GithubSource, Query, Scope};

/// Items per page (GitHub's most).
const PER_PAGE: &str = "100";

/// The requests the sources of one run may make, and how many they made.
/// The count is the run's ([`super::Cache`] holds it): every watch, every
/// source, the base and head of a pull request and `replay fresh`'s
/// conditional requests take from the one `inputs.github_max_requests`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Budget {
    /// The most (the policy's `inputs.github_max_requests`).
    pub(crate) max: u32,
    /// Made so far in the run (each page and each per-item request is one;
    /// the client's retries of a failed request are not counted again).
    spent: Arc<AtomicU32>,
    /// Each answer's `ETag`, by the URL asked (in the order asked).
    pub(crate) etags: Vec<(String, String)>,
    /// Why a list stopped before its end without a request: its next-page
    /// link led elsewhere ([`next_page`]); drained into the source's notes.
    pub(crate) stopped: Vec<String>,
}

impl Budget {
    /// A budget of `max` requests counted in the run's `spent`.
    pub(crate) fn of_run(max: u32, spent: Arc<AtomicU32>) -> Self {
        Budget {
            max,
            spent,
            ..Budget::default()
        }
    }

    /// Takes one request; false when none is left.
    pub(crate) fn take(&mut self) -> bool {
        let max = self.max;
        self.spent
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |u| {
                (u < max).then_some(u + 1)
            })
            .is_ok()
    }

    /// The requests the run made so far.
    pub(crate) fn used(&self) -> u32 {
        self.spent.load(Ordering::SeqCst)
    }
}

/// The endpoint of `uri` (a route, or an absolute URL at the client's API
/// root): its path below `/repos/{owner}/{name}/` of the client's
/// repository, or why it is not one of the repository's.
fn endpoint_of(gh: &GitHub, uri: &str) -> Result<String, String> {
    let root = reqwest::Url::parse(&format!("{}/", gh.api_url()))
        .map_err(|e| format!("the API root `{}` is not a URL: {e}", gh.api_url()))?;
    let url = root
        .join(uri.trim_start_matches('/'))
        .map_err(|e| format!("`{uri}` is not a URL: {e}"))?;
    let same_host = url.scheme() == root.scheme()
        && url.host_str() == root.host_str()
        && url.port_or_known_default() == root.port_or_known_default();
    if !same_host {
        return Err(format!(
            "it names another host than the API's (`{}`)",
            root.origin().ascii_serialization()
        ));
    }
    let repo = route(gh, "");
    let by_id = gh.repo_id().map(|id| format!("/repositories/{id}/"));
    let below = url
        .path()
        .strip_prefix(root.path().trim_end_matches('/'))
        .and_then(|p| {
            p.strip_prefix(repo.as_str())
                .or_else(|| p.strip_prefix(by_id.as_deref()?))
        });
    match below {
        Some(tail) => Ok(tail.to_string()),
        None => Err(format!(
            "it names another repository than {}",
            gh.repo_ref()
        )),
    }
}

/// Whether `tail` is `pattern` with `{n}` standing for a number.
fn endpoint_matches(pattern: &str, tail: &str) -> bool {
    let (p, t): (Vec<&str>, Vec<&str>) = (pattern.split('/').collect(), tail.split('/').collect());
    p.len() == t.len()
        && p.iter().zip(&t).all(|(p, t)| {
            *p == *t || (*p == "{n}" && !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()))
        })
}

/// Whether `uri`, asked for `source` once (a kept `ETag`'s URL), is one of
/// the source's own requests: the client's API host, its repository, one of
/// the source's [`endpoints`](GithubSource::endpoints); else why not.
pub(crate) fn belongs(gh: &GitHub, source: GithubSource, uri: &str) -> Result<(), String> {
    let tail = endpoint_of(gh, uri)?;
    if source
        .endpoints()
        .iter()
        .any(|e| endpoint_matches(e, &tail))
    {
        Ok(())
    } else {
        Err(format!(
            "`{tail}` is not an endpoint of `github:{}`",
            source.name()
        ))
    }
}

/// The next page of the list at `route`: GitHub's `Link: rel="next"` is
/// followed only when it names the same API host, the same repository and
/// the same endpoint (only the query may differ); otherwise the list stops
/// there and the note says why — no request is sent to it, with the job's
/// token or otherwise.
fn next_page(gh: &GitHub, route: &str, next: &str) -> Result<(), String> {
    let path = route.split('?').next().unwrap_or(route);
    let want = endpoint_of(gh, path)?;
    let got = endpoint_of(gh, next).map_err(|why| format!("the link `{next}`: {why}"))?;
    let got = got.split('?').next().unwrap_or(&got).to_string();
    if got == want {
        Ok(())
    } else {
        Err(format!(
            "the link `{next}` names the endpoint `{got}`, not this list's `{want}`"
        ))
    }
}

/// Why a source could not be fetched.
#[derive(Debug, Clone)]
pub(crate) enum FetchError {
    /// GitHub refused or failed (a 403 names the permission, see
    /// `problem` in [`super`]).
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
    match source.scope() {
        Scope::PullRequests => Need::ReadPulls,
        Scope::Issues => Need::ReadIssues,
        Scope::Actions => Need::ReadActions,
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

/// What a request is for: the action its errors name (`list the pull
/// requests`) and the permission it needs (the 403/404 hint).
#[derive(Clone, Copy)]
pub(crate) struct Purpose<'a> {
    /// The action, as the errors name it.
    pub(crate) action: &'a str,
    /// The permission the request needs.
    pub(crate) need: Need,
}

/// Reads every page of `route` with `params` (plus `per_page=100`), each
/// item judged by `take`, until `limit` items are kept or the list ends.
pub(crate) async fn list(
    gh: &GitHub,
    budget: &mut Budget,
    purpose: Purpose<'_>,
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
    let mut page: Page<Value> = got(budget, gh, purpose, &with_query(route, &query)).await?;
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
        if let Err(why) = next_page(gh, route, &next.to_string()) {
            tracing::warn!("a list of {} stopped: {why}", gh.repo_ref());
            budget.stopped.push(format!(
                "stopped after {pages} page(s): GitHub's next-page link was not followed ({why}); no request was sent there, so later rows were not fetched"
            ));
            return Ok(kept);
        }
        if !budget.take() {
            return Err(FetchError::Budget { pages });
        }
        pages += 1;
        page = got(budget, gh, purpose, &next.to_string()).await?;
    }
}

/// One JSON object (a pull request with its size), its `ETag` kept.
pub(crate) async fn one(
    gh: &GitHub,
    budget: &mut Budget,
    purpose: Purpose<'_>,
    route: &str,
) -> Result<Value, GitHubError> {
    got(budget, gh, purpose, route).await
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
    what: Purpose<'_>,
    uri: &str,
) -> Result<R, GitHubError> {
    match gh
        .get_conditional(what.action, what.need, uri, None)
        .await?
    {
        Answer::Body(v, etag) => {
            if let Some(etag) = etag {
                budget.etags.push((uri.to_string(), etag));
            }
            Ok(v)
        }
        // Not asked conditionally, so GitHub does not answer 304.
        Answer::NotModified => Err(GitHubError::Decode {
            action: what.action.to_string(),
            message: "GitHub answered 304 Not Modified to a request that was not conditional"
                .into(),
        }),
    }
}

/// Whether the answers kept as `etags` (URL, `ETag`) are all unchanged:
/// each asked again with `If-None-Match`, stopping at the first that is
/// not a 304. `Ok(n)`: all `n` were 304 (no primary rate limit spent);
/// `Err(Changed)`: one was answered in full (one request spent);
/// `Err(Budget)`: the run's `budget` ran out before all were asked;
/// `Err(Failed(e))`: GitHub failed.
pub(crate) async fn unchanged(
    gh: &GitHub,
    what: Purpose<'_>,
    etags: &[(String, String)],
    budget: &mut Budget,
) -> Result<u32, NotUnchanged> {
    for (uri, etag) in etags {
        if !budget.take() {
            return Err(NotUnchanged::Budget);
        }
        match gh
            .get_conditional::<Value>(what.action, what.need, uri, Some(etag))
            .await
        {
            Ok(Answer::NotModified) => {}
            Ok(Answer::Body(..)) => return Err(NotUnchanged::Changed),
            Err(e) => return Err(NotUnchanged::Failed(e)),
        }
    }
    Ok(etags.len() as u32)
}

/// Why [`unchanged`] could not say the data are unchanged.
pub(crate) enum NotUnchanged {
    /// A conditional request was answered in full.
    Changed,
    /// The run's request budget ran out.
    Budget,
    /// GitHub failed.
    Failed(GitHubError),
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

    fn client(api: &str) -> GitHub {
        let repo = crate::github::actions::event::RepoRef::parse("octo-org/data", "test").unwrap();
        GitHub::new(api, &crate::github::actions::event::Secret::new("t"), repo).unwrap()
    }

    #[tokio::test]
    async fn a_next_page_stays_on_the_api_host_the_repository_and_the_endpoint() {
        let gh = client("https://ghe.example/api/v3");
        let list = "/repos/octo-org/data/issues?state=all&per_page=100";
        let at = |u: &str| next_page(&gh, list, u);
        assert!(at("https://ghe.example/api/v3/repos/octo-org/data/issues?page=2").is_ok());
        let why = |u: &str| at(u).unwrap_err();
        assert!(
            why("https://ghe.example/api/v3/repos/evil/loot/issues?page=2")
                .contains("another repository")
        );
        assert!(
            why("https://evil.example/api/v3/repos/octo-org/data/issues?page=2")
                .contains("another host")
        );
        assert!(
            why("http://ghe.example/api/v3/repos/octo-org/data/issues?page=2")
                .contains("another host")
        );
        assert!(
            why("https://ghe.example:8443/api/v3/repos/octo-org/data/issues?page=2")
                .contains("another host")
        );
        assert!(
            why("https://ghe.example/repos/octo-org/data/issues?page=2")
                .contains("another repository")
        );
        assert!(
            why("https://ghe.example/api/v3/repos/octo-org/data/pulls?page=2")
                .contains("endpoint `pulls`")
        );
        assert!(
            why("https://ghe.example/api/v3/repos/octo-org/data/issues/comments?page=2")
                .contains("endpoint")
        );
        // GitHub's links may name the repository by its id, when the run knows it.
        let by_id = "https://ghe.example/api/v3/repositories/4242/issues?page=2";
        assert!(why(by_id).contains("another repository"));
        let gh = gh.with_repo_id(4242);
        assert!(next_page(&gh, list, by_id).is_ok());
        assert!(
            next_page(
                &gh,
                list,
                "https://ghe.example/api/v3/repositories/4243/issues?page=2"
            )
            .is_err()
        );
    }

    #[tokio::test]
    async fn a_kept_etag_belongs_to_its_source_only_at_its_endpoints() {
        let gh = client("http://127.0.0.1:9");
        let ok = |s: GithubSource, u: &str| belongs(&gh, s, u).is_ok();
        assert!(ok(
            GithubSource::Pulls,
            "/repos/octo-org/data/pulls?state=all&per_page=100"
        ));
        assert!(ok(GithubSource::Pulls, "/repos/octo-org/data/pulls/17"));
        assert!(ok(
            GithubSource::Pulls,
            "http://127.0.0.1:9/repos/octo-org/data/pulls?page=2"
        ));
        assert!(ok(
            GithubSource::Reviews,
            "/repos/octo-org/data/pulls/17/reviews"
        ));
        assert!(ok(
            GithubSource::Reviews,
            "/repos/octo-org/data/pulls?state=closed"
        ));
        assert!(ok(
            GithubSource::Comments,
            "/repos/octo-org/data/issues/comments?since=x"
        ));
        assert!(ok(
            GithubSource::WorkflowRuns,
            "/repos/octo-org/data/actions/runs"
        ));
        assert!(!ok(
            GithubSource::Pulls,
            "/repos/octo-org/data/pulls/17/reviews"
        ));
        assert!(!ok(GithubSource::Pulls, "/repos/octo-org/data/pulls/x"));
        assert!(!ok(
            GithubSource::Issues,
            "/repos/octo-org/data/issues/comments"
        ));
        assert!(!ok(GithubSource::Issues, "/repos/other/data/issues"));
        assert!(!ok(
            GithubSource::Issues,
            "http://127.0.0.2:9/repos/octo-org/data/issues"
        ));
        assert!(!ok(
            GithubSource::Issues,
            "https://api.github.com/repos/octo-org/data/issues"
        ));
        assert!(!ok(GithubSource::Issues, "/user"));
    }

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
            crate::github::activity::etags_name("github/pulls.csv"),
            "github/pulls.etags.json"
        );
    }
}
