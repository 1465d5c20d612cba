//! The REST calls the bot makes, over octocrab.
//!
//! Every call is retried on 5xx answers and connection errors (3 tries by
//! default, with a doubling delay), 403/404 answers become errors that say
//! which `permissions:` the workflow token needs, and the token is scrubbed
//! from every error message.
//!
//! Rate limits are told apart from permission problems and handled as
//! GitHub documents them (REST API "Rate limits", "Best practices"):
//!
//! - a `retry-after` header: no request for that many seconds;
//! - `x-ratelimit-remaining: 0` (the primary limit): no request until
//!   `x-ratelimit-reset` (UTC epoch seconds);
//! - otherwise a 429, or a 403 saying "secondary rate limit": wait at least
//!   one minute, doubling the wait on each further secondary limit.
//!
//! The wait holds back *every* request of the client (clones share it), not
//! only the one that was refused. All waits of a run together stay within a
//! budget ([`RateLimits`], default 5 minutes, `COMPUTE_BOT_GITHUB_WAIT`);
//! a limit that lasts longer stops the call at once with
//! [`GitHubError::RateLimited`] (`rate limited until <time>`), and later calls
//! fail the same way without being sent until the limit is over.

use std::fmt;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, SecondsFormat, Utc};

use octocrab::service::middleware::retry::RetryConfig;
use octocrab::{FromResponse, Octocrab};
use reqwest::header::{HeaderMap, HeaderValue};
use tracing::{debug, warn};

use crate::actions::event::{RepoRef, Secret};
pub use crate::rest::error::GitHubError;
pub use crate::rest::error::Need;

/// How long the client may wait on GitHub's rate limits.
///
/// Defaults: a budget of 5 minutes for all waits of one run (a primary limit
/// resets within the hour, so longer waits would mostly burn runner minutes)
/// and GitHub's documented minimum of 1 minute before retrying after a
/// secondary limit without `retry-after`. `COMPUTE_BOT_GITHUB_WAIT` and
/// `COMPUTE_BOT_GITHUB_SECONDARY_WAIT` (e.g. `10m`, `90s`, `0s`) change them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimits {
    /// The most the client waits in total.
    pub budget: Duration,
    /// The first wait after a secondary limit without `retry-after`
    /// (doubled on each further one).
    pub secondary_wait: Duration,
}

impl Default for RateLimits {
    fn default() -> Self {
        RateLimits {
            budget: Duration::from_secs(300),
            secondary_wait: Duration::from_secs(60),
        }
    }
}

impl RateLimits {
    /// The defaults, changed by `COMPUTE_BOT_GITHUB_WAIT` and
    /// `COMPUTE_BOT_GITHUB_SECONDARY_WAIT` when set (a value that does not
    /// parse is reported and ignored).
    fn from_env() -> RateLimits {
        let mut r = RateLimits::default();
        let read = |name: &str, into: &mut Duration| {
            if let Ok(v) = std::env::var(name)
                && !v.trim().is_empty()
            {
                match compute_bot_units::parse_duration(&v) {
                    Ok(d) => *into = d,
                    Err(e) => warn!("{name}: {e}; keeping {into:?}"),
                }
            }
        };
        read("COMPUTE_BOT_GITHUB_WAIT", &mut r.budget);
        read("COMPUTE_BOT_GITHUB_SECONDARY_WAIT", &mut r.secondary_wait);
        r
    }
}

/// A rate limit GitHub answered with: which one and until when.
#[derive(Debug, Clone)]
struct Limit {
    kind: &'static str,
    until: DateTime<Utc>,
    message: String,
}

/// What the clones of one client share: the rate-limit state and the
/// login the token posts as, once known.
#[derive(Debug, Default)]
struct Shared {
    blocked: Option<Limit>,
    waited: Duration,
    secondary_hits: u32,
    own_login: Option<String>,
}

/// The login the workflow token (`GITHUB_TOKEN`) posts as.
const ACTIONS_BOT_LOGIN: &str = "github-actions[bot]";

fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// Reads a rate limit from a 403/429 answer, in the order GitHub documents:
/// `retry-after`, then `x-ratelimit-remaining: 0` with `x-ratelimit-reset`,
/// then a secondary limit (a 429, or a 403 that says so) with `secondary`
/// as the wait. `None`: not a rate limit (e.g. a 403 about permissions).
fn rate_limit_of(
    source: &octocrab::GitHubError,
    now: DateTime<Utc>,
    secondary: impl FnOnce() -> Duration,
) -> Option<Limit> {
    let status = source.status_code.as_u16();
    if status != 403 && status != 429 {
        return None;
    }
    let header = |name: &str| {
        source
            .headers
            .as_ref()
            .and_then(|h| h.get(name))
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    let message = source.message.clone();
    let lower = message.to_ascii_lowercase();
    let is_secondary_text = lower.contains("secondary rate limit") || lower.contains("abuse");
    let kind = if is_secondary_text || header("x-ratelimit-remaining") != Some("0") {
        "secondary"
    } else {
        "primary"
    };
    if let Some(v) = header("retry-after") {
        let until = match v.parse::<u64>() {
            Ok(secs) => now + chrono::Duration::seconds(secs.min(86_400) as i64),
            Err(_) => DateTime::parse_from_rfc2822(v)
                .map(|t| t.with_timezone(&Utc))
                .unwrap_or(now + chrono::Duration::seconds(60)),
        };
        return Some(Limit {
            kind,
            until,
            message,
        });
    }
    if header("x-ratelimit-remaining") == Some("0") {
        // One second past the reset, so the clocks need not agree to the second.
        let until = source
            .rate_limit_reset_at()
            .map(|t| t + chrono::Duration::seconds(1))
            .unwrap_or_else(|| now + chrono::Duration::seconds(60));
        return Some(Limit {
            kind: "primary",
            until,
            message,
        });
    }
    if status == 429 || is_secondary_text {
        let wait = chrono::Duration::from_std(secondary()).unwrap_or(chrono::Duration::MAX);
        return Some(Limit {
            kind: "secondary",
            until: now + wait,
            message,
        });
    }
    None
}

/// The GitHub REST client for one repository.
#[derive(Clone)]
pub struct GitHub {
    crab: Octocrab,
    repo: RepoRef,
    api_url: String,
    token: Secret,
    tries: u32,
    base_delay: Duration,
    bot_login: Option<String>,
    repo_id: Option<u64>,
    limits: RateLimits,
    shared: Arc<Mutex<Shared>>,
}

impl fmt::Debug for GitHub {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GitHub")
            .field("repo", &self.repo)
            .field("api_url", &self.api_url)
            .field("token", &self.token)
            .finish()
    }
}

pub(super) const PER_PAGE: u8 = 100;

impl GitHub {
    /// Builds a client for `repo` at `api_url` (from `GITHUB_API_URL`; GHES
    /// roots like `https://ghe.example.com/api/v3` work). Must be called inside
    /// a tokio runtime.
    pub fn new(api_url: &str, token: &Secret, repo: RepoRef) -> Result<GitHub, GitHubError> {
        let api_url = api_url.trim().trim_end_matches('/').to_string();
        let crab = Octocrab::builder()
            .base_uri(api_url.as_str())
            .map_err(|e| {
                GitHubError::Setup(format!(
                    "GITHUB_API_URL `{api_url}` is not a valid URL: {e}"
                ))
            })?
            .personal_token(token.expose().to_string())
            .add_retry_config(RetryConfig::None)
            .set_connect_timeout(Some(Duration::from_secs(10)))
            .set_read_timeout(Some(Duration::from_secs(60)))
            .build()
            .map_err(|e| GitHubError::Setup(e.to_string()))?;
        Ok(GitHub {
            crab,
            repo,
            api_url,
            token: token.clone(),
            tries: 3,
            base_delay: Duration::from_millis(500),
            bot_login: None,
            repo_id: None,
            limits: RateLimits::from_env(),
            shared: Arc::default(),
        })
    }

    /// Sets the rate-limit wait budget (see [`RateLimits`]).
    pub fn with_rate_limits(mut self, limits: RateLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Sets how many tries a call gets (at least 1) and the first retry delay
    /// (doubled each retry). Defaults: 3 tries, 500 ms.
    pub fn with_retry(mut self, tries: u32, base_delay: Duration) -> Self {
        self.tries = tries.max(1);
        self.base_delay = base_delay;
        self
    }

    /// The login the token posts as, when known without asking (see
    /// [`GitHub::own_login`]); only comments by it count as the bot's own.
    pub fn with_bot_login(mut self, login: impl Into<String>) -> Self {
        self.bot_login = Some(login.into()).filter(|l: &String| !l.trim().is_empty());
        self
    }

    /// The login the token posts as; only comments by it are the bot's own
    /// (tracking comments, code waiting for approval). In order: the login
    /// given to [`GitHub::with_bot_login`]; the author GitHub named in the
    /// answer to a comment or reaction this client wrote; for a user token,
    /// `GET /user`; otherwise [`ACTIONS_BOT_LOGIN`] (installation tokens,
    /// `ghs_…`, cannot read `/user`; the workflow token is the GitHub Actions
    /// app's). Kept once known.
    pub async fn own_login(&self) -> Result<String, GitHubError> {
        if let Some(l) = &self.bot_login {
            return Ok(l.clone());
        }
        if let Some(l) = self.shared.lock().unwrap().own_login.clone() {
            return Ok(l);
        }
        let login = if self.token.expose().starts_with("ghs_") {
            ACTIONS_BOT_LOGIN.to_string()
        } else {
            let action = "reading the login of the token (GET /user)";
            match self
                .call(action, Need::ReadComments, || {
                    self.crab.get::<serde_json::Value, _, ()>("/user", None)
                })
                .await
            {
                Ok(v) => v
                    .get("login")
                    .and_then(|l| l.as_str())
                    .unwrap_or(ACTIONS_BOT_LOGIN)
                    .to_string(),
                Err(e @ GitHubError::RateLimited { .. })
                | Err(e @ GitHubError::Transport { .. }) => {
                    return Err(e);
                }
                Err(e) => {
                    debug!("{e}; taking {ACTIONS_BOT_LOGIN}");
                    ACTIONS_BOT_LOGIN.to_string()
                }
            }
        };
        self.learn_login(&login);
        Ok(login)
    }

    /// Records the login GitHub named as the author of something this client wrote.
    pub(super) fn learn_login(&self, login: &str) {
        let mut sh = self.shared.lock().unwrap();
        if sh.own_login.as_deref() != Some(login) {
            debug!("the token posts as {login}");
            sh.own_login = Some(login.to_string());
        }
    }

    fn redact(&self, text: String) -> String {
        let t = self.token.expose();
        if t.len() >= 4 {
            text.replace(t, "***")
        } else {
            text
        }
    }

    /// The octocrab client, for the calls of the sibling modules (they go
    /// through [`GitHub::call`]).
    pub fn crab(&self) -> &Octocrab {
        &self.crab
    }

    /// The repository this client works on.
    pub fn repo_ref(&self) -> &RepoRef {
        &self.repo
    }

    /// The repository's numeric id (`GITHUB_REPOSITORY_ID`): GitHub's
    /// next-page links may name it as `/repositories/{id}/...`.
    pub fn with_repo_id(mut self, id: u64) -> Self {
        self.repo_id = Some(id);
        self
    }

    /// The repository's numeric id, when known ([`GitHub::with_repo_id`]).
    pub fn repo_id(&self) -> Option<u64> {
        self.repo_id
    }

    /// The API root this client asks (`GITHUB_API_URL`, no trailing `/`).
    pub fn api_url(&self) -> &str {
        &self.api_url
    }

    /// Runs `call` with retries on 5xx and connection errors, and waits out
    /// rate limits within the budget (see the module docs).
    pub async fn call<T, F, Fut>(&self, action: &str, need: Need, call: F) -> Result<T, GitHubError>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = octocrab::Result<T>>,
    {
        let mut attempt = 1;
        let mut limited = 0;
        loop {
            self.wait_out_limit(action).await?;
            let err = match call().await {
                Ok(v) => return Ok(v),
                Err(e) => e,
            };
            if let octocrab::Error::GitHub { source, .. } = &err
                && let Some(limit) = self.note_limit(source)
            {
                limited += 1;
                warn!(
                    "{action}: GitHub's {} rate limit until {} ({})",
                    limit.kind,
                    rfc3339(limit.until),
                    limit.message
                );
                // The budget bounds the waits; this bounds answers that keep
                // saying "limited" with a reset already past.
                if limited < 10 {
                    continue;
                }
                return Err(self.limited_error(action, &limit));
            }
            let (retryable, mapped) = self.classify(action, need, attempt, err);
            if retryable && attempt < self.tries {
                let delay = self.base_delay * 2u32.pow(attempt - 1);
                warn!(
                    "{action}: try {attempt}/{} failed ({mapped}); retrying in {delay:?}",
                    self.tries
                );
                tokio::time::sleep(delay).await;
                attempt += 1;
                continue;
            }
            return Err(mapped);
        }
    }

    /// Records a rate limit from a 403/429 answer so that every request of
    /// the client waits for it.
    fn note_limit(&self, source: &octocrab::GitHubError) -> Option<Limit> {
        let mut sh = self.shared.lock().unwrap();
        let hits = sh.secondary_hits;
        let base = self.limits.secondary_wait;
        let limit = rate_limit_of(source, Utc::now(), || {
            base.saturating_mul(2u32.saturating_pow(hits.min(16)))
        })?;
        if limit.kind == "secondary"
            && source
                .headers
                .as_ref()
                .is_none_or(|h| h.get("retry-after").is_none())
        {
            sh.secondary_hits += 1;
        }
        let later = sh.blocked.as_ref().is_none_or(|b| b.until < limit.until);
        if later {
            sh.blocked = Some(limit.clone());
        }
        Some(limit)
    }

    /// Sleeps until a recorded rate limit is over, or fails at once when
    /// that is past the budget (the request is then not sent).
    async fn wait_out_limit(&self, action: &str) -> Result<(), GitHubError> {
        let wait = {
            let mut sh = self.shared.lock().unwrap();
            let Some(limit) = sh.blocked.clone() else {
                return Ok(());
            };
            let now = Utc::now();
            if limit.until <= now {
                sh.blocked = None;
                return Ok(());
            }
            let need = (limit.until - now).to_std().unwrap_or_default();
            if sh.waited + need > self.limits.budget {
                drop(sh);
                return Err(self.limited_error(action, &limit));
            }
            sh.waited += need;
            need
        };
        warn!("{action}: waiting {wait:?} for GitHub's rate limit");
        tokio::time::sleep(wait).await;
        Ok(())
    }

    fn limited_error(&self, action: &str, limit: &Limit) -> GitHubError {
        let waited = self.shared.lock().unwrap().waited;
        GitHubError::RateLimited {
            action: action.to_string(),
            kind: limit.kind.to_string(),
            until: rfc3339(limit.until),
            message: self.redact(limit.message.clone()),
            waited_secs: waited.as_secs(),
            budget_secs: self.limits.budget.as_secs(),
        }
    }

    fn classify(
        &self,
        action: &str,
        need: Need,
        attempt: u32,
        err: octocrab::Error,
    ) -> (bool, GitHubError) {
        match err {
            octocrab::Error::GitHub { source, .. } => {
                let status = source.status_code.as_u16();
                let hint = if status == 403 || status == 404 {
                    need.hint().to_string()
                } else if status == 401 {
                    " The token was rejected: check the action input `github_token` (default `${{ github.token }}`).".to_string()
                } else {
                    String::new()
                };
                (
                    source.status_code.is_server_error(),
                    GitHubError::Api {
                        action: action.to_string(),
                        status,
                        message: self.redact(source.message.clone()),
                        hint,
                    },
                )
            }
            e @ (octocrab::Error::Hyper { .. } | octocrab::Error::Service { .. }) => (
                true,
                GitHubError::Transport {
                    action: action.to_string(),
                    api_url: self.api_url.clone(),
                    tries: attempt,
                    message: self.redact(e.to_string()),
                },
            ),
            e => (
                false,
                GitHubError::Decode {
                    action: action.to_string(),
                    message: self.redact(e.to_string()),
                },
            ),
        }
    }
}

/// What a GET answered ([`GitHub::get_conditional`]).
pub enum Answer<R> {
    /// 2xx: the body read as `R`, with the `ETag` when GitHub sent one.
    Body(R, Option<String>),
    /// 304 to `If-None-Match`: unchanged, no body.
    NotModified,
}

impl GitHub {
    /// A GET of `uri` (a route or a `Link` URL) through the client's one
    /// request path ([`GitHub::call`]: retries, rate limits), conditional on
    /// `if_none_match` when given (a 304 spends no primary rate limit).
    /// octocrab's typed `get` drops the headers and cannot read an empty
    /// body, so the answer is read here: 304 first, then octocrab's own
    /// error mapping, then the body. `action` and `need` as for
    /// [`GitHub::call`].
    pub async fn get_conditional<R: FromResponse>(
        &self,
        action: &str,
        need: Need,
        uri: &str,
        if_none_match: Option<&str>,
    ) -> Result<Answer<R>, GitHubError> {
        let mut headers = HeaderMap::new();
        if let Some(tag) = if_none_match.and_then(|t| HeaderValue::from_str(t).ok()) {
            headers.insert("if-none-match", tag);
        }
        self.call(action, need, || {
            let headers = headers.clone();
            async move {
                let res = self.crab()._get_with_headers(uri, Some(headers)).await?;
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
}

/// Percent-encodes a path segment (logins like `app[bot]`).
pub fn encode_segment(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_are_encoded() {
        assert_eq!(encode_segment("app[bot]"), "app%5Bbot%5D");
        assert_eq!(encode_segment("octo-cat_1"), "octo-cat_1");
    }
}
