//! GitHub's rate limits as GitHub answers them (403/429 with
//! `x-ratelimit-remaining: 0` and `x-ratelimit-reset`; secondary limits with
//! and without `retry-after`), against the real client over octocrab and the
//! stateful stand-in, which keeps refusing until the limit is over.

use std::time::{Duration, Instant};

use crate::support::github_standin::GitHubStandIn;
use compute_bot::github::actions::event::{RepoRef, Secret};
use compute_bot::github::rest::client::{GitHub, GitHubError, RateLimits};
use compute_bot::github::rest::comments::Reaction;

const REPO: &str = "octo-org/data";
const TOKEN: &str = "ghs_rate_limit_token_42";

async fn setup(limits: RateLimits) -> (GitHubStandIn, GitHub) {
    let gh = GitHubStandIn::start().await;
    gh.add_repo(REPO);
    gh.add_issue(REPO, 7);
    gh.require_token(TOKEN);
    let client = GitHub::new(
        &gh.uri(),
        &Secret::new(TOKEN),
        RepoRef::parse(REPO, "test").unwrap(),
    )
    .unwrap()
    .with_retry(3, Duration::from_millis(10))
    .with_rate_limits(limits);
    (gh, client)
}

fn limits(budget_ms: u64, secondary_ms: u64) -> RateLimits {
    RateLimits {
        budget: Duration::from_millis(budget_ms),
        secondary_wait: Duration::from_millis(secondary_ms),
    }
}

fn epoch_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn gaps(gh: &GitHubStandIn) -> Vec<Duration> {
    let seen = gh.requests();
    seen.windows(2).map(|w| w[1].at - w[0].at).collect()
}

/// A primary limit answered with 403 (or 429) waits until
/// `x-ratelimit-reset` and then succeeds; it is not called a permission problem.
#[tokio::test]
async fn primary_limit_waits_until_the_reset_then_succeeds() {
    for status in [403, 429] {
        let (gh, client) = setup(limits(30_000, 60_000)).await;
        gh.set_primary_limit(5000, 0, 2, status);
        let reset = epoch_now() + 2;
        let id = client.create_comment(7, "after the reset").await.unwrap();
        assert_eq!(gh.comment(id).unwrap().body, "after the reset");
        let seen = gh.requests();
        assert_eq!(
            seen.iter().map(|s| s.status).collect::<Vec<_>>(),
            vec![status, 201],
            "one refused request, one after the reset"
        );
        // The second request went out after the reset time.
        let after = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        assert!(after >= reset, "{after} < {reset}");
        assert!(
            gaps(&gh)[0] >= Duration::from_millis(900),
            "{:?}",
            gaps(&gh)
        );
    }
}

/// Past the budget: "rate limited until <time>", not a permission hint, and
/// the rest of the run's requests are not sent until the reset.
#[tokio::test]
async fn primary_limit_past_the_budget_stops_and_holds_back_every_later_request() {
    let (gh, client) = setup(limits(1_000, 60_000)).await;
    gh.set_primary_limit(5000, 0, 3600, 403);
    let started = Instant::now();
    let err = client.create_comment(7, "x").await.unwrap_err();
    let msg = err.to_string();
    assert!(err.is_rate_limited(), "{msg}");
    assert_eq!(err.status(), None);
    assert!(msg.contains("rate limited until 20"), "{msg}");
    assert!(msg.contains("primary"), "{msg}");
    assert!(msg.contains("API rate limit exceeded"), "{msg}");
    assert!(!msg.contains("issues: write"), "{msg}");
    assert!(!msg.contains(TOKEN), "{msg}");
    // The time named is the reset GitHub gave (plus a second of margin).
    let GitHubError::RateLimited { until, .. } = &err else {
        unreachable!()
    };
    let until = chrono::DateTime::parse_from_rfc3339(until).unwrap();
    let reset = epoch_now() as i64 + 3600;
    assert!((until.timestamp() - reset).abs() <= 2, "{until} vs {reset}");

    // Everything else the run would do fails at once without being sent.
    let c = gh.seed_comment(REPO, 7, "alice", "/compute x");
    assert!(
        client
            .add_reaction(c, Reaction::Rocket)
            .await
            .unwrap_err()
            .is_rate_limited()
    );
    assert!(
        client
            .update_comment(c, "y")
            .await
            .unwrap_err()
            .is_rate_limited()
    );
    assert!(client.list_comments(7).await.unwrap_err().is_rate_limited());
    assert!(
        client
            .permission("alice")
            .await
            .unwrap_err()
            .is_rate_limited()
    );
    assert!(
        client
            .create_comment(7, "z")
            .await
            .unwrap_err()
            .is_rate_limited()
    );
    assert_eq!(gh.requests().len(), 1, "only the first request was sent");
    assert!(started.elapsed() < Duration::from_secs(5), "no waiting");
}

/// A quota that runs out in the middle of a run: the request that hit it
/// waits for the reset, and so do the ones after it.
#[tokio::test]
async fn a_quota_running_out_mid_run_is_waited_out_once() {
    let (gh, client) = setup(limits(30_000, 60_000)).await;
    gh.set_primary_limit(3, 2, 2, 403);
    let c = gh.seed_comment(REPO, 7, "alice", "/compute x");
    client.add_reaction(c, Reaction::Eyes).await.unwrap();
    let id = client.create_comment(7, "working").await.unwrap();
    // Quota exhausted now: this one waits for the reset.
    client.update_comment(id, "done").await.unwrap();
    client.add_reaction(c, Reaction::Rocket).await.unwrap();
    let statuses: Vec<u16> = gh.requests().iter().map(|s| s.status).collect();
    assert_eq!(statuses, vec![201, 201, 403, 200, 201], "{statuses:?}");
    assert_eq!(gh.comment(id).unwrap().body, "done");
}

/// A secondary limit with `retry-after`: nothing is sent before it elapsed.
#[tokio::test]
async fn secondary_limit_with_retry_after_is_honoured() {
    let (gh, client) = setup(limits(30_000, 60_000)).await;
    gh.set_secondary_limit(403, Some(1), Duration::ZERO, 1);
    let id = client.create_comment(7, "after retry-after").await.unwrap();
    assert_eq!(gh.comment(id).unwrap().body, "after retry-after");
    assert_eq!(gh.secondary_early_requests(), 0);
    let statuses: Vec<u16> = gh.requests().iter().map(|s| s.status).collect();
    assert_eq!(statuses, vec![403, 201]);
    assert!(
        gaps(&gh)[0] >= Duration::from_millis(1000),
        "{:?}",
        gaps(&gh)
    );
}

/// A secondary limit without `retry-after` (429, or a 403 that says so):
/// the configured minimum wait, doubled on each further one.
#[tokio::test]
async fn secondary_limit_without_retry_after_backs_off_exponentially() {
    for status in [429, 403] {
        let (gh, client) = setup(limits(30_000, 300)).await;
        gh.set_secondary_limit(status, None, Duration::from_millis(250), 2);
        let id = client.create_comment(7, "backed off").await.unwrap();
        assert_eq!(gh.comment(id).unwrap().body, "backed off");
        assert_eq!(gh.secondary_early_requests(), 0, "status {status}");
        let statuses: Vec<u16> = gh.requests().iter().map(|s| s.status).collect();
        assert_eq!(statuses, vec![status, status, 201]);
        let g = gaps(&gh);
        assert!(g[0] >= Duration::from_millis(300), "{g:?}");
        assert!(g[1] >= Duration::from_millis(600), "doubled: {g:?}");
    }
}

/// A secondary limit that outlasts the budget stops with the time it ends.
#[tokio::test]
async fn secondary_limit_past_the_budget_stops() {
    let (gh, client) = setup(limits(500, 400)).await;
    gh.set_secondary_limit(429, None, Duration::from_secs(60), 10);
    let err = client.create_comment(7, "x").await.unwrap_err();
    let msg = err.to_string();
    assert!(err.is_rate_limited(), "{msg}");
    assert!(msg.contains("secondary"), "{msg}");
    assert!(msg.contains("rate limited until"), "{msg}");
    // 400 ms waited, the doubled 800 ms would pass the 500 ms budget.
    assert_eq!(gh.requests().len(), 2, "{:?}", gh.requests());
    assert!(gh.comments(REPO, 7).is_empty());
}

/// A 403 about permissions is still a permission problem, not retried.
#[tokio::test]
async fn a_permission_403_is_not_a_rate_limit() {
    let (gh, client) = setup(limits(30_000, 60_000)).await;
    gh.fail_next(Some("POST"), "/issues/7/comments", 403, 5);
    let err = client.create_comment(7, "x").await.unwrap_err();
    assert!(!err.is_rate_limited());
    assert_eq!(err.status(), Some(403));
    assert!(err.to_string().contains("issues: write"), "{err}");
    assert_eq!(gh.requests().len(), 1);
}

/// A fault on a chosen request: the second page of a listing fails once
/// with 502 and is retried.
#[tokio::test]
async fn a_fault_on_a_chosen_request_is_retried() {
    let (gh, client) = setup(limits(30_000, 60_000)).await;
    gh.set_max_per_page(2);
    for i in 0..5 {
        gh.seed_comment(REPO, 7, "alice", &format!("c{i}"));
    }
    gh.fail_request(2, 502);
    let all = client.list_comments(7).await.unwrap();
    assert_eq!(all.len(), 5);
    let statuses: Vec<u16> = gh.requests().iter().map(|s| s.status).collect();
    assert_eq!(statuses, vec![200, 502, 200, 200]);
}
