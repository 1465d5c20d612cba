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

use octocrab::Octocrab;
use octocrab::models::issues::Comment;
use octocrab::models::reactions::ReactionContent;
use octocrab::service::middleware::retry::RetryConfig;
use tracing::{debug, warn};

use crate::github::actions::event::{RepoRef, Secret, is_bot};
use crate::policy::Permission;

/// Reactions the bot puts on comments.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reaction {
    /// 👀 — seen, working on it.
    Eyes,
    /// 🚀 — done.
    Rocket,
    /// 😕 — failed.
    Confused,
    /// 👎 — refused.
    MinusOne,
    /// 👍 — approved.
    PlusOne,
}

impl Reaction {
    /// GitHub's name for it (`eyes`, `rocket`, `confused`, `-1`, `+1`).
    fn as_str(self) -> &'static str {
        match self {
            Reaction::Eyes => "eyes",
            Reaction::Rocket => "rocket",
            Reaction::Confused => "confused",
            Reaction::MinusOne => "-1",
            Reaction::PlusOne => "+1",
        }
    }

    fn content(self) -> ReactionContent {
        match self {
            Reaction::Eyes => ReactionContent::Eyes,
            Reaction::Rocket => ReactionContent::Rocket,
            Reaction::Confused => ReactionContent::Confused,
            Reaction::MinusOne => ReactionContent::MinusOne,
            Reaction::PlusOne => ReactionContent::PlusOne,
        }
    }
}

/// A comment as the bot needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommentInfo {
    /// The comment id.
    pub(crate) id: u64,
    /// The text (empty when GitHub sent none).
    pub body: String,
    /// The author's login.
    pub(crate) author_login: String,
    /// True when the author is a bot (`type: Bot` or a `[bot]` login).
    author_is_bot: bool,
    /// The comment's web address.
    pub(crate) html_url: String,
    /// True when GitHub says it was changed after it was written
    /// (`updated_at` later than `created_at`; both have one-second precision).
    pub(crate) edited: bool,
}

impl From<Comment> for CommentInfo {
    fn from(c: Comment) -> Self {
        CommentInfo {
            id: c.id.into_inner(),
            body: c.body.unwrap_or_default(),
            author_is_bot: is_bot(&c.user.login, Some(&c.user.r#type)),
            author_login: c.user.login,
            html_url: c.html_url.to_string(),
            edited: c.updated_at.is_some_and(|u| u > c.created_at),
        }
    }
}

/// What a failed GitHub call was, with what to do about it. Never contains the token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GitHubError {
    /// GitHub answered with an error status.
    #[error("{action} failed: GitHub answered HTTP {status} ({message}).{hint}")]
    Api {
        /// What the bot was doing.
        action: String,
        /// The HTTP status.
        status: u16,
        /// GitHub's message.
        message: String,
        /// What to change (starts with a space, or is empty).
        hint: String,
    },
    /// No answer: connection refused, reset, timed out.
    #[error(
        "{action} failed: could not reach the GitHub API at {api_url} after {tries} tries: {message}"
    )]
    Transport {
        /// What the bot was doing.
        action: String,
        /// The API root.
        api_url: String,
        /// How many tries were made.
        tries: u32,
        /// The last error.
        message: String,
    },
    /// The answer could not be read.
    #[error("{action} failed: the answer from GitHub could not be read: {message}")]
    Decode {
        /// What the bot was doing.
        action: String,
        /// The parser's message.
        message: String,
    },
    /// GitHub's rate limit lasts longer than the wait budget left.
    #[error(
        "{action} failed: rate limited until {until} (GitHub's {kind} rate limit: {message}). compute-bot waits for rate limits at most {budget_secs} s per run (COMPUTE_BOT_GITHUB_WAIT) and had waited {waited_secs} s; re-run the job after {until}."
    )]
    RateLimited {
        /// What the bot was doing.
        action: String,
        /// `primary` or `secondary`.
        kind: String,
        /// Until when GitHub refuses requests (RFC 3339, UTC).
        until: String,
        /// GitHub's message, or why the request was not sent.
        message: String,
        /// Seconds already waited on rate limits in this run.
        waited_secs: u64,
        /// The wait budget in seconds.
        budget_secs: u64,
    },
    /// The client could not be built (bad `GITHUB_API_URL`, ...).
    #[error("cannot set up the GitHub client: {0}")]
    Setup(String),
}

impl GitHubError {
    /// The HTTP status, when GitHub answered (rate limits have none: they are
    /// not a 403 about permissions).
    pub fn status(&self) -> Option<u16> {
        match self {
            GitHubError::Api { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// True for [`GitHubError::RateLimited`].
    pub fn is_rate_limited(&self) -> bool {
        matches!(self, GitHubError::RateLimited { .. })
    }
}

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
                match crate::units::parse_duration(&v) {
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

/// Which permission a call needs, for the 403/404 hint.
#[derive(Clone, Copy)]
pub(crate) enum Need {
    WriteComments,
    ReadComments,
    Collaborators,
    /// Blobs, trees, commits and refs (the Git Data API).
    WriteContents,
    /// Files, blobs, trees, commits and refs at a ref.
    ReadContents,
    /// A pull request and its files.
    ReadPulls,
    /// The issues list and the repository's issue comments.
    ReadIssues,
    /// Workflow runs.
    ReadActions,
}

impl Need {
    fn hint(self) -> &'static str {
        match self {
            Need::WriteComments => {
                " The workflow token cannot write comments or reactions here: give the job `permissions: issues: write` (and `pull-requests: write` to comment on pull requests) in the workflow file."
            }
            Need::ReadComments => {
                " The workflow token cannot read comments here: give the job `permissions: issues: read` (and `pull-requests: read` for pull requests), or `issues: write` which includes it."
            }
            Need::Collaborators => {
                " The workflow token cannot read collaborator permissions: it needs `metadata: read` on this repository (every workflow token has it unless `permissions:` is set to `{}`); a 404 also means the user or repository does not exist."
            }
            Need::WriteContents => {
                " The workflow token cannot write to this repository: give the job `permissions: contents: write` in the workflow file. A pull request from a fork always runs with a read-only token; there nothing can be committed."
            }
            Need::ReadContents => {
                " The workflow token cannot read this repository's files: give the job `permissions: contents: read` (or `contents: write`, which includes it); a 404 also means the path, ref or repository does not exist."
            }
            Need::ReadPulls => {
                " The workflow token cannot read pull requests here: give the job `permissions: pull-requests: read` (or `pull-requests: write`); a 404 also means the pull request does not exist."
            }
            Need::ReadIssues => {
                " The workflow token cannot read issues here: give the job `permissions: issues: read` (or `issues: write`)."
            }
            Need::ReadActions => {
                " The workflow token cannot read workflow runs here: give the job `permissions: actions: read`."
            }
        }
    }
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

const PER_PAGE: u8 = 100;

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
    pub(crate) fn with_bot_login(mut self, login: impl Into<String>) -> Self {
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
    pub(crate) async fn own_login(&self) -> Result<String, GitHubError> {
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
    fn learn_login(&self, login: &str) {
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
    pub(crate) fn crab(&self) -> &Octocrab {
        &self.crab
    }

    /// The repository this client works on.
    pub(crate) fn repo_ref(&self) -> &RepoRef {
        &self.repo
    }

    /// The repository's numeric id (`GITHUB_REPOSITORY_ID`): GitHub's
    /// next-page links may name it as `/repositories/{id}/...`.
    pub(crate) fn with_repo_id(mut self, id: u64) -> Self {
        self.repo_id = Some(id);
        self
    }

    /// The repository's numeric id, when known ([`GitHub::with_repo_id`]).
    pub(crate) fn repo_id(&self) -> Option<u64> {
        self.repo_id
    }

    /// The API root this client asks (`GITHUB_API_URL`, no trailing `/`).
    pub(crate) fn api_url(&self) -> &str {
        &self.api_url
    }

    /// Runs `call` with retries on 5xx and connection errors, and waits out
    /// rate limits within the budget (see the module docs).
    pub(crate) async fn call<T, F, Fut>(
        &self,
        action: &str,
        need: Need,
        call: F,
    ) -> Result<T, GitHubError>
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

    /// The user's permission on the repository, from a raw
    /// `GET /repos/{o}/{r}/collaborators/{user}/permission` (octocrab's typed
    /// helper cannot parse every value). The finer `role_name` (`maintain`,
    /// `triage`) wins over the legacy `permission` field when GitHub sends it.
    pub async fn permission(&self, user: &str) -> Result<Permission, GitHubError> {
        let route = format!(
            "/repos/{}/{}/collaborators/{}/permission",
            self.repo.owner,
            self.repo.name,
            encode_segment(user)
        );
        let action = format!("reading the permission of @{user} on {}", self.repo);
        let value: serde_json::Value = self
            .call(&action, Need::Collaborators, || {
                self.crab.get(&route, None::<&()>)
            })
            .await?;
        let perm = value
            .get("permission")
            .and_then(|v| v.as_str())
            .and_then(|s| s.parse::<Permission>().ok());
        let role = value
            .get("role_name")
            .and_then(|v| v.as_str())
            .and_then(|s| s.parse::<Permission>().ok());
        let result = match (perm, role) {
            (Some(p), Some(r)) => p.max(r),
            (Some(p), None) => p,
            (None, Some(r)) => r,
            (None, None) => {
                return Err(GitHubError::Decode {
                    action,
                    message: format!("no known `permission` or `role_name` in {value}"),
                });
            }
        };
        debug!("@{user} has {result} on {}", self.repo);
        Ok(result)
    }

    /// Puts a reaction on an issue comment.
    pub async fn add_reaction(
        &self,
        comment_id: u64,
        reaction: Reaction,
    ) -> Result<(), GitHubError> {
        let action = format!(
            "adding the {} reaction to comment {comment_id} in {}",
            reaction.as_str(),
            self.repo
        );
        let r = self
            .call(&action, Need::WriteComments, || async {
                self.crab
                    .issues(&self.repo.owner, &self.repo.name)
                    .create_comment_reaction(comment_id, reaction.content())
                    .await
            })
            .await?;
        self.learn_login(&r.user.login);
        Ok(())
    }

    /// Creates a comment on an issue or pull request; returns its id.
    pub async fn create_comment(&self, issue: u64, body: &str) -> Result<u64, GitHubError> {
        let action = format!("creating a comment on #{issue} in {}", self.repo);
        let c = self
            .call(&action, Need::WriteComments, || async {
                self.crab
                    .issues(&self.repo.owner, &self.repo.name)
                    .create_comment(issue, body)
                    .await
            })
            .await?;
        self.learn_login(&c.user.login);
        Ok(c.id.into_inner())
    }

    /// Replaces the text of a comment (`PATCH /repos/{o}/{r}/issues/comments/{id}`).
    pub async fn update_comment(&self, comment_id: u64, body: &str) -> Result<(), GitHubError> {
        let action = format!("editing comment {comment_id} in {}", self.repo);
        let route = format!(
            "/repos/{}/{}/issues/comments/{comment_id}",
            self.repo.owner, self.repo.name
        );
        let payload = serde_json::json!({ "body": body });
        let c = self
            .call(&action, Need::WriteComments, || {
                self.crab.patch::<Comment, _, _>(&route, Some(&payload))
            })
            .await?;
        self.learn_login(&c.user.login);
        Ok(())
    }

    /// The text of a comment.
    pub async fn get_comment(&self, comment_id: u64) -> Result<String, GitHubError> {
        Ok(self.comment(comment_id).await?.body)
    }

    /// A comment with its author.
    pub(crate) async fn comment(&self, comment_id: u64) -> Result<CommentInfo, GitHubError> {
        let action = format!("reading comment {comment_id} in {}", self.repo);
        let c = self
            .call(&action, Need::ReadComments, || async {
                self.crab
                    .issues(&self.repo.owner, &self.repo.name)
                    .get_comment(comment_id.into())
                    .await
            })
            .await?;
        Ok(c.into())
    }

    /// Every comment on an issue or pull request, oldest first (follows pagination).
    pub async fn list_comments(&self, issue: u64) -> Result<Vec<CommentInfo>, GitHubError> {
        let action = format!("listing the comments on #{issue} in {}", self.repo);
        let mut page = self
            .call(&action, Need::ReadComments, || async {
                self.crab
                    .issues(&self.repo.owner, &self.repo.name)
                    .list_comments(issue)
                    .per_page(PER_PAGE)
                    .send()
                    .await
            })
            .await?;
        let mut out: Vec<CommentInfo> = page.take_items().into_iter().map(Into::into).collect();
        let mut pages = 1;
        while let Some(next) = page.next.clone() {
            pages += 1;
            if pages > 1000 {
                warn!("{action}: stopping after 1000 pages");
                break;
            }
            let next = Some(next);
            let got = self
                .call(&action, Need::ReadComments, || {
                    self.crab.get_page::<Comment>(&next)
                })
                .await?;
            let Some(mut p) = got else { break };
            out.extend(p.take_items().into_iter().map(CommentInfo::from));
            page = p;
        }
        Ok(out)
    }

    /// The newest comment by the bot whose text contains `marker`: its id and text.
    /// Only the bot's own comments count (see [`GitHub::own_login`]), so
    /// neither a user nor another bot can plant a marker.
    pub async fn find_tracking_comment(
        &self,
        issue: u64,
        marker: &str,
    ) -> Result<Option<(u64, String)>, GitHubError> {
        let comments = self.list_comments(issue).await?;
        let own = self.own_login().await?;
        Ok(comments
            .into_iter()
            .rev()
            .filter(|c| c.author_login.eq_ignore_ascii_case(&own))
            .find(|c| c.body.contains(marker))
            .map(|c| (c.id, c.body)))
    }
}

impl GitHub {
    /// Writes the tracking comment of this run: edits the bot's comment that
    /// carries `marker` if there is one (a re-run of the same workflow run),
    /// else creates it. Returns the comment id. `body` should contain the marker.
    pub async fn upsert_tracking_comment(
        &self,
        issue: u64,
        marker: &str,
        body: &str,
    ) -> Result<u64, GitHubError> {
        match self.find_tracking_comment(issue, marker).await? {
            Some((id, _)) => {
                self.update_comment(id, body).await?;
                Ok(id)
            }
            None => self.create_comment(issue, body).await,
        }
    }
}

/// Percent-encodes a path segment (logins like `app[bot]`).
pub(crate) fn encode_segment(s: &str) -> String {
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
