//! A loopback GitHub REST API stand-in that keeps state.
//!
//! It serves the endpoints compute-bot uses, with GitHub-shaped JSON (complete
//! user and comment objects, since octocrab's models deserialize strictly):
//!
//! - `POST/GET /repos/{o}/{r}/issues/{n}/comments` (GET paginated with `Link`)
//! - `GET/PATCH/POST /repos/{o}/{r}/issues/comments/{id}`
//! - `POST /repos/{o}/{r}/issues/comments/{id}/reactions`
//! - `GET /repos/{o}/{r}/collaborators/{user}/permission`
//!
//! - `GET /user` (a user token gets its user; an installation token such as
//!   the workflow's `GITHUB_TOKEN` gets 403 "Resource not accessible by
//!   integration", as on GitHub)
//! - the Git Data and contents endpoints over a real Git object store per
//!   repository (`github_git.rs` over `git_store.rs`), and pull requests
//!   with their files and `pull_request` payloads (`github_pulls.rs`)
//!
//! plus fault injection (the next N requests to a path answer a given
//! status, or the Nth request from now does), GitHub's rate limits (a primary
//! quota answered with 403/429, `x-ratelimit-remaining: 0` and
//! `x-ratelimit-reset` until the reset time; secondary limits with or without
//! `retry-after` that keep refusing until their block ends), the
//! `x-ratelimit-*` headers on every answer, and helpers to read the state back.
//! Conditional requests as GitHub's REST API documents them: every `GET`
//! answered 200 with a body carries `ETag: "<sha256 of the body>"`; asked
//! with a matching `If-None-Match` it answers `304 Not Modified` with an
//! empty body and the `ETag`, and gives back the primary rate limit unit
//! (a 304 to an authorised conditional request does not count).
//!
//! ```ignore
//! let gh = GitHubStandIn::start().await;
//! gh.add_repo("octo-org/data");
//! gh.add_user("alice", "User");
//! gh.set_permission("octo-org/data", "alice", "write");
//! gh.add_issue("octo-org/data", 7);
//! let id = gh.seed_comment("octo-org/data", 7, "alice", "/compute mean");
//! // point GITHUB_API_URL at gh.uri(), run the bot, then:
//! let comments = gh.comments("octo-org/data", 7);
//! let reactions = gh.reactions(id); // e.g. ["eyes", "rocket"]
//! ```
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// The login comments created through the API are attributed to by default.
pub const DEFAULT_APP_LOGIN: &str = "github-actions[bot]";

/// A stored user.
#[derive(Debug, Clone)]
pub struct User {
    /// Login.
    pub login: String,
    /// Numeric id.
    pub id: u64,
    /// `User`, `Bot` or `Organization`.
    pub kind: String,
}

/// A stored issue or pull request.
#[derive(Debug, Clone)]
pub struct Issue {
    /// Number.
    pub number: u64,
    /// True for a pull request.
    pub is_pull_request: bool,
}

/// A stored comment.
#[derive(Debug, Clone)]
pub struct StoredComment {
    /// Id.
    pub id: u64,
    /// `owner/name`.
    pub repo: String,
    /// Issue or PR number.
    pub issue: u64,
    /// Author login.
    pub author: String,
    /// Text.
    pub body: String,
    /// Creation time (RFC 3339).
    pub created_at: String,
    /// Last update time (RFC 3339).
    pub updated_at: String,
    /// How many times it was edited through the API.
    pub edits: u32,
    /// Every text it had before the current one, oldest first (the text it
    /// was created with, then each one an edit replaced).
    pub history: Vec<String>,
    /// `(login, content)` of each reaction, in order.
    pub reactions: Vec<(String, String)>,
}

/// One request the stand-in received.
#[derive(Debug, Clone)]
pub struct Seen {
    /// HTTP method.
    pub method: String,
    /// Path with query.
    pub path: String,
    /// The `Authorization` header, as sent.
    pub authorization: Option<String>,
    /// The status answered.
    pub status: u16,
    /// The `If-None-Match` header, as sent.
    pub if_none_match: Option<String>,
    /// When it arrived.
    pub at: std::time::Instant,
}

/// A primary rate limit: `limit` requests per window; when none are left,
/// every request answers `status` with `x-ratelimit-remaining: 0` until
/// `reset` (epoch seconds).
#[derive(Debug, Clone)]
struct Quota {
    limit: u32,
    remaining: u32,
    reset: u64,
    window: u64,
    status: u16,
}

/// A secondary rate limit: the next `hits` requests answer `status`; each
/// starts a block of `block` during which every request is refused again.
#[derive(Debug, Clone)]
struct Secondary {
    status: u16,
    retry_after: Option<u64>,
    block: std::time::Duration,
    hits: u32,
    until: Option<std::time::Instant>,
    early: u32,
}

#[derive(Debug, Clone)]
struct Fault {
    method: Option<String>,
    path: String,
    status: u16,
    remaining: u32,
}

#[derive(Debug, Default)]
pub(super) struct State {
    pub(super) base: String,
    users: BTreeMap<String, User>,
    pub(super) repos: BTreeMap<String, BTreeMap<u64, Issue>>,
    /// repo → login → (permission, role_name)
    permissions: BTreeMap<String, BTreeMap<String, (String, String)>>,
    comments: BTreeMap<u64, StoredComment>,
    next_id: u64,
    faults: Vec<Fault>,
    seen: Vec<Seen>,
    pub(super) app_login: String,
    token: Option<String>,
    pub(super) max_per_page: usize,
    quota: Option<Quota>,
    secondary: Option<Secondary>,
    /// (index of the request from the start, status)
    nth_faults: Vec<(usize, u16)>,
    /// Headers to add to the answer being built.
    extra_headers: Vec<(String, String)>,
    /// The login `GET /user` answers with (a user token); `None`: an installation token.
    token_user: Option<String>,
    /// Objects, refs and pull requests (`github_git`).
    pub(super) git: super::github_git::GitState,
    /// How long every answer takes (a real API's round trip).
    latency: Option<std::time::Duration>,
    /// `(from, to)`: every `Link` header's text with `from` replaced by `to`
    /// (a next-page link to another repository or host).
    link_rewrite: Option<(String, String)>,
    /// Pull requests, reviews, issues, comments and runs as lists (`github_activity`).
    pub(super) activity: super::github_activity::ActivityState,
}

/// The running stand-in. Cheap to clone; all clones share the state.
#[derive(Clone)]
pub struct GitHubStandIn {
    server: Arc<MockServer>,
    state: Arc<Mutex<State>>,
}

struct Router(Arc<Mutex<State>>);

impl Respond for Router {
    fn respond(&self, req: &Request) -> ResponseTemplate {
        let mut st = self.0.lock().unwrap();
        st.extra_headers.clear();
        let (status, body, link) = route(&mut st, req);
        let if_none_match = req
            .headers
            .get("if-none-match")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let (status, body) = conditional(&mut st, req, (status, body), if_none_match.as_deref());
        let mut path = req.url.path().to_string();
        if let Some(q) = req.url.query() {
            path.push('?');
            path.push_str(q);
        }
        st.seen.push(Seen {
            method: req.method.to_string(),
            path,
            authorization: req
                .headers
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .map(str::to_string),
            status,
            if_none_match,
            at: std::time::Instant::now(),
        });
        let mut t = ResponseTemplate::new(status);
        if let Some(d) = st.latency {
            t = t.set_delay(d);
        }
        let mut t = t
            .insert_header("content-type", "application/json; charset=utf-8")
            .insert_header("x-github-api-version-selected", "2022-11-28");
        if let Some(mut link) = link {
            if let Some((from, to)) = &st.link_rewrite {
                link = link.replace(from.as_str(), to.as_str());
            }
            t = t.insert_header("link", link.as_str());
        }
        for (k, v) in std::mem::take(&mut st.extra_headers) {
            t = t.insert_header(k.as_str(), v.as_str());
        }
        match body {
            Some(b) => t.set_body_string(b.to_string()),
            None => t,
        }
    }
}

/// GitHub's conditional requests: a `GET` answered 200 gets an `ETag`
/// (the body's sha256, quoted); a matching `If-None-Match` turns it into a
/// 304 with no body, which does not count against the primary rate limit.
fn conditional(
    st: &mut State,
    req: &Request,
    (status, body): (u16, Option<Value>),
    if_none_match: Option<&str>,
) -> (u16, Option<Value>) {
    let Some(b) = body
        .as_ref()
        .filter(|_| status == 200 && req.method.as_str() == "GET")
    else {
        return (status, body);
    };
    let tag = format!(
        "\"{}\"",
        compute_bot::sandbox::sha256_hex(b.to_string().as_bytes())
    );
    st.extra_headers.push(("etag".to_string(), tag.clone()));
    let matches = if_none_match.is_some_and(|h| {
        h.split(',')
            .any(|t| t.trim().trim_start_matches("W/") == tag || t.trim() == "*")
    });
    if !matches {
        return (status, body);
    }
    if let Some(q) = st.quota.as_mut() {
        q.remaining = (q.remaining + 1).min(q.limit);
        let (limit, remaining) = (q.limit, q.remaining);
        for (k, v) in st.extra_headers.iter_mut() {
            match k.as_str() {
                "x-ratelimit-remaining" => *v = remaining.to_string(),
                "x-ratelimit-used" => *v = (limit - remaining).to_string(),
                _ => {}
            }
        }
    }
    (304, None)
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

fn not_found(doc: &str) -> (u16, Option<Value>, Option<String>) {
    (
        404,
        Some(json!({
            "message": "Not Found",
            "documentation_url": format!("https://docs.github.com/rest/{doc}"),
            "status": "404"
        })),
        None,
    )
}

impl State {
    pub(super) fn user_json(&self, login: &str) -> Value {
        let (id, kind) = match self.users.get(login) {
            Some(u) => (u.id, u.kind.clone()),
            None => (0, "User".to_string()),
        };
        let web = "https://github.com";
        let api = &self.base;
        json!({
            "login": login,
            "id": id,
            "node_id": format!("MDQ6VXNlcj{id}"),
            "avatar_url": format!("https://avatars.githubusercontent.com/u/{id}?v=4"),
            "gravatar_id": "",
            "url": format!("{api}/users/{login}"),
            "html_url": format!("{web}/{login}"),
            "followers_url": format!("{api}/users/{login}/followers"),
            "following_url": format!("{api}/users/{login}/following{{/other_user}}"),
            "gists_url": format!("{api}/users/{login}/gists{{/gist_id}}"),
            "starred_url": format!("{api}/users/{login}/starred{{/owner}}{{/repo}}"),
            "subscriptions_url": format!("{api}/users/{login}/subscriptions"),
            "organizations_url": format!("{api}/users/{login}/orgs"),
            "repos_url": format!("{api}/users/{login}/repos"),
            "events_url": format!("{api}/users/{login}/events{{/privacy}}"),
            "received_events_url": format!("{api}/users/{login}/received_events"),
            "type": kind,
            "user_view_type": "public",
            "site_admin": false
        })
    }

    fn association(&self, repo: &str, login: &str) -> &'static str {
        if repo.split('/').next() == Some(login) {
            return "OWNER";
        }
        match self.permissions.get(repo).and_then(|m| m.get(login)) {
            Some((p, _)) if p != "none" && p != "read" => "COLLABORATOR",
            _ => "NONE",
        }
    }

    fn comment_json(&self, c: &StoredComment) -> Value {
        let api = &self.base;
        let is_pr = self
            .repos
            .get(&c.repo)
            .and_then(|m| m.get(&c.issue))
            .is_some_and(|i| i.is_pull_request);
        let kind = if is_pr { "pull" } else { "issues" };
        let count = |what: &str| c.reactions.iter().filter(|(_, r)| r == what).count();
        json!({
            "id": c.id,
            "node_id": format!("IC_kwDOA{}", c.id),
            "url": format!("{api}/repos/{}/issues/comments/{}", c.repo, c.id),
            "html_url": format!("https://github.com/{}/{kind}/{}#issuecomment-{}", c.repo, c.issue, c.id),
            "body": c.body,
            "user": self.user_json(&c.author),
            "created_at": c.created_at,
            "updated_at": c.updated_at,
            "issue_url": format!("{api}/repos/{}/issues/{}", c.repo, c.issue),
            "author_association": self.association(&c.repo, &c.author),
            "performed_via_github_app": null,
            "reactions": {
                "url": format!("{api}/repos/{}/issues/comments/{}/reactions", c.repo, c.id),
                "total_count": c.reactions.len(),
                "+1": count("+1"), "-1": count("-1"), "laugh": count("laugh"),
                "hooray": count("hooray"), "confused": count("confused"),
                "heart": count("heart"), "rocket": count("rocket"), "eyes": count("eyes")
            }
        })
    }

    fn new_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }
}

fn epoch_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// GitHub's primary limit: the `x-ratelimit-*` headers on every answer, and
/// 403/429 with `x-ratelimit-remaining: 0` until the reset when none are left.
fn primary_limit(st: &mut State) -> Option<(u16, Option<Value>, Option<String>)> {
    let now = epoch_now();
    let q = st.quota.get_or_insert(Quota {
        limit: 5000,
        remaining: 5000,
        reset: now + 3600,
        window: 3600,
        status: 403,
    });
    if now >= q.reset {
        q.remaining = q.limit;
        q.reset = now + q.window;
    }
    let exhausted = q.remaining == 0;
    q.remaining = q.remaining.saturating_sub(1);
    let (limit, remaining, reset, status) = (q.limit, q.remaining, q.reset, q.status);
    st.extra_headers.extend([
        ("x-ratelimit-limit".to_string(), limit.to_string()),
        ("x-ratelimit-remaining".to_string(), remaining.to_string()),
        ("x-ratelimit-reset".to_string(), reset.to_string()),
        (
            "x-ratelimit-used".to_string(),
            (limit - remaining).to_string(),
        ),
        ("x-ratelimit-resource".to_string(), "core".to_string()),
    ]);
    exhausted.then(|| {
        (
            status,
            Some(json!({
                "message": "API rate limit exceeded for installation ID 4242.",
                "documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api",
                "status": status.to_string()
            })),
            None,
        )
    })
}

/// A secondary limit: refuses its next hits, and everything inside a block.
fn secondary_limit(st: &mut State) -> Option<(u16, Option<Value>, Option<String>)> {
    let s = st.secondary.as_mut()?;
    let now = std::time::Instant::now();
    let blocked = s.until.is_some_and(|u| now < u);
    if blocked {
        s.early += 1;
    } else if s.hits > 0 {
        s.hits -= 1;
        s.until = Some(now + s.block);
    } else {
        return None;
    }
    let status = s.status;
    if let Some(secs) = s.retry_after {
        st.extra_headers
            .push(("retry-after".to_string(), secs.to_string()));
    }
    Some((
        status,
        Some(json!({
            "message": "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. If you reach out to GitHub Support for help, please include the request ID 0000:1111:2222:3333:44444444.",
            "documentation_url": "https://docs.github.com/free-pro-team@latest/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits",
            "status": status.to_string()
        })),
        None,
    ))
}

fn route(st: &mut State, req: &Request) -> (u16, Option<Value>, Option<String>) {
    let method = req.method.to_string();
    let path = req.url.path().to_string();

    // A fault on a chosen request.
    let index = st.seen.len();
    if let Some(pos) = st.nth_faults.iter().position(|(n, _)| *n == index) {
        let (_, status) = st.nth_faults.remove(pos);
        return (
            status,
            Some(json!({"message": "Server Error", "status": status.to_string()})),
            None,
        );
    }

    // Fault injection first.
    if let Some(f) = st.faults.iter_mut().find(|f| {
        f.remaining > 0
            && path.contains(&f.path)
            && f.method
                .as_deref()
                .is_none_or(|m| m.eq_ignore_ascii_case(&method))
    }) {
        f.remaining -= 1;
        let status = f.status;
        let body = match status {
            403 => json!({
                "message": "Resource not accessible by integration",
                "documentation_url": "https://docs.github.com/rest/issues/comments#create-an-issue-comment",
                "status": "403"
            }),
            404 => {
                json!({"message": "Not Found", "documentation_url": "https://docs.github.com/rest", "status": "404"})
            }
            _ => json!({"message": "Server Error"}),
        };
        return (status, Some(body), None);
    }

    if let Some(token) = &st.token {
        let auth = req
            .headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        let ok = auth == format!("Bearer {token}") || auth == format!("token {token}");
        if !ok {
            return (
                401,
                Some(
                    json!({"message": "Bad credentials", "documentation_url": "https://docs.github.com/rest", "status": "401"}),
                ),
                None,
            );
        }
    }

    if let Some(limited) = primary_limit(st) {
        return limited;
    }
    if let Some(limited) = secondary_limit(st) {
        return limited;
    }

    // GHES serves the API under /api/v3.
    let api_path = path.strip_prefix("/api/v3").unwrap_or(&path);
    let segs: Vec<&str> = api_path.trim_matches('/').split('/').collect();
    let body: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
    let query: BTreeMap<String, String> = req.url.query_pairs().into_owned().collect();
    if let Some(reply) = super::github_activity::route(st, &method, &segs, &query) {
        return reply;
    }
    match (method.as_str(), segs.as_slice()) {
        ("GET", ["user"]) => match st.token_user.clone() {
            Some(login) => (200, Some(st.user_json(&login)), None),
            None => (
                403,
                Some(json!({
                    "message": "Resource not accessible by integration",
                    "documentation_url": "https://docs.github.com/rest/users/users#get-the-authenticated-user",
                    "status": "403"
                })),
                None,
            ),
        },
        ("GET", ["repos", o, r, "collaborators", user, "permission"]) => {
            let repo = format!("{o}/{r}");
            let user = percent_decode(user);
            if !st.repos.contains_key(&repo) || !st.users.contains_key(&user) {
                return not_found(
                    "collaborators/collaborators#get-repository-permissions-for-a-user",
                );
            }
            let (perm, role) = st
                .permissions
                .get(&repo)
                .and_then(|m| m.get(&user))
                .cloned()
                .unwrap_or_else(|| ("none".into(), "none".into()));
            let mut u = st.user_json(&user);
            u["permissions"] = json!({
                "admin": perm == "admin", "maintain": role == "maintain" || perm == "admin",
                "push": perm == "admin" || perm == "write", "triage": perm != "none", "pull": perm != "none"
            });
            u["role_name"] = json!(role);
            (
                200,
                Some(json!({"permission": perm, "role_name": role, "user": u})),
                None,
            )
        }
        ("POST", ["repos", o, r, "issues", n, "comments"]) => {
            let repo = format!("{o}/{r}");
            let Ok(n) = n.parse::<u64>() else {
                return not_found("issues/comments");
            };
            if !st.repos.get(&repo).is_some_and(|m| m.contains_key(&n)) {
                return not_found("issues/comments#create-an-issue-comment");
            }
            let Some(text) = body.get("body").and_then(Value::as_str) else {
                return (
                    422,
                    Some(
                        json!({"message": "Invalid request.\n\n\"body\" wasn't supplied.", "status": "422"}),
                    ),
                    None,
                );
            };
            if text.chars().count() > 65536 {
                return (
                    422,
                    Some(
                        json!({"message": "Validation Failed", "errors": [{"resource": "IssueComment", "code": "custom", "field": "body", "message": "body is too long (maximum is 65536 characters)"}], "status": "422"}),
                    ),
                    None,
                );
            }
            let id = st.new_id();
            let t = now();
            let c = StoredComment {
                id,
                repo,
                issue: n,
                author: st.app_login.clone(),
                body: text.to_string(),
                created_at: t.clone(),
                updated_at: t,
                edits: 0,
                history: Vec::new(),
                reactions: Vec::new(),
            };
            let v = st.comment_json(&c);
            st.comments.insert(id, c);
            (201, Some(v), None)
        }
        ("GET", ["repos", o, r, "issues", n, "comments"]) => {
            let repo = format!("{o}/{r}");
            let Ok(n) = n.parse::<u64>() else {
                return not_found("issues/comments");
            };
            if !st.repos.get(&repo).is_some_and(|m| m.contains_key(&n)) {
                return not_found("issues/comments#list-issue-comments");
            }
            let q: BTreeMap<String, String> = req.url.query_pairs().into_owned().collect();
            let all: Vec<&StoredComment> = st
                .comments
                .values()
                .filter(|c| c.repo == repo && c.issue == n)
                .collect();
            let (range, link) = paginate(&q, all.len(), st.max_per_page, |per_page, p| {
                format!(
                    "{}/repos/{repo}/issues/{n}/comments?per_page={per_page}&page={p}",
                    st.base
                )
            });
            let items: Vec<Value> = all[range].iter().map(|c| st.comment_json(c)).collect();
            (200, Some(Value::Array(items)), link)
        }
        ("GET", ["repos", o, r, "issues", "comments", id]) => {
            let repo = format!("{o}/{r}");
            match id.parse::<u64>().ok().and_then(|id| st.comments.get(&id)) {
                Some(c) if c.repo == repo => (200, Some(st.comment_json(c)), None),
                _ => not_found("issues/comments#get-an-issue-comment"),
            }
        }
        ("PATCH" | "POST", ["repos", o, r, "issues", "comments", id]) => {
            let repo = format!("{o}/{r}");
            let Some(text) = body.get("body").and_then(Value::as_str).map(str::to_string) else {
                return (
                    422,
                    Some(json!({"message": "Invalid request.", "status": "422"})),
                    None,
                );
            };
            if text.chars().count() > 65536 {
                return (
                    422,
                    Some(
                        json!({"message": "Validation Failed", "errors": [{"resource": "IssueComment", "code": "custom", "field": "body", "message": "body is too long (maximum is 65536 characters)"}], "status": "422"}),
                    ),
                    None,
                );
            }
            let id = id.parse::<u64>().unwrap_or(0);
            match st.comments.get_mut(&id) {
                Some(c) if c.repo == repo => {
                    c.history.push(std::mem::replace(&mut c.body, text));
                    c.updated_at = now();
                    c.edits += 1;
                    let c = c.clone();
                    (200, Some(st.comment_json(&c)), None)
                }
                _ => not_found("issues/comments#update-an-issue-comment"),
            }
        }
        ("POST", ["repos", o, r, "issues", "comments", id, "reactions"]) => {
            let repo = format!("{o}/{r}");
            let content = body.get("content").and_then(Value::as_str).unwrap_or("");
            if ![
                "+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes",
            ]
            .contains(&content)
            {
                return (
                    422,
                    Some(
                        json!({"message": "Validation Failed", "errors": [{"resource": "Reaction", "code": "invalid", "field": "content"}], "status": "422"}),
                    ),
                    None,
                );
            }
            let id = id.parse::<u64>().unwrap_or(0);
            let app = st.app_login.clone();
            let exists = match st.comments.get_mut(&id) {
                Some(c) if c.repo == repo => {
                    let had = c.reactions.iter().any(|(u, r)| *u == app && r == content);
                    if !had {
                        c.reactions.push((app.clone(), content.to_string()));
                    }
                    had
                }
                _ => return not_found("reactions/reactions#create-reaction-for-an-issue-comment"),
            };
            let rid = st.new_id();
            let v = json!({
                "id": rid,
                "node_id": format!("REA_lADO{rid}"),
                "user": st.user_json(&app),
                "content": content,
                "created_at": now()
            });
            (if exists { 200 } else { 201 }, Some(v), None)
        }
        _ => super::github_git::route(st, req, &method, &segs, &body)
            .unwrap_or_else(|| not_found("")),
    }
}

/// One page of a list of `total` items as GitHub pages lists: `per_page`
/// (default 30, at most 100 and `max`) and `page` from the query, the range
/// of items on it, and the `Link` header (`next`, `last`, `prev`, `first`)
/// with `url(per_page, page)`.
pub(super) fn paginate(
    query: &BTreeMap<String, String>,
    total: usize,
    max: usize,
    url: impl Fn(usize, usize) -> String,
) -> (std::ops::Range<usize>, Option<String>) {
    let number = |name: &str, default: usize| {
        query
            .get(name)
            .and_then(|v| v.parse::<usize>().ok())
            .unwrap_or(default)
    };
    let per_page = number("per_page", 30).clamp(1, 100).min(max.max(1));
    let page = number("page", 1).max(1);
    let start = (page - 1).saturating_mul(per_page).min(total);
    let end = (start + per_page).min(total);
    let last = total.div_ceil(per_page).max(1);
    let mut links = Vec::new();
    if page < last {
        links.push(format!("<{}>; rel=\"next\"", url(per_page, page + 1)));
        links.push(format!("<{}>; rel=\"last\"", url(per_page, last)));
    }
    if page > 1 {
        links.push(format!("<{}>; rel=\"prev\"", url(per_page, page - 1)));
        links.push(format!("<{}>; rel=\"first\"", url(per_page, 1)));
    }
    (start..end, (!links.is_empty()).then(|| links.join(", ")))
}

pub(super) fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && i + 2 < b.len()
            && let Ok(v) = u8::from_str_radix(&s[i + 1..i + 3], 16)
        {
            out.push(v);
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The legacy `permission` field GitHub sends for a role.
fn legacy_permission(role: &str) -> &'static str {
    match role {
        "admin" => "admin",
        "maintain" | "write" => "write",
        "triage" | "read" => "read",
        _ => "none",
    }
}

impl GitHubStandIn {
    /// Starts the stand-in on a loopback port; the app's comments are
    /// attributed to `github-actions[bot]` (a `Bot` user).
    pub async fn start() -> GitHubStandIn {
        let server = MockServer::start().await;
        let state = Arc::new(Mutex::new(State {
            base: server.uri(),
            app_login: DEFAULT_APP_LOGIN.to_string(),
            next_id: 1_000_000,
            max_per_page: 100,
            ..State::default()
        }));
        Mock::given(wiremock::matchers::any())
            .respond_with(Router(state.clone()))
            .mount(&server)
            .await;
        let gh = GitHubStandIn {
            server: Arc::new(server),
            state,
        };
        gh.add_user(DEFAULT_APP_LOGIN, "Bot");
        gh
    }

    /// The API root to use as `GITHUB_API_URL` (`http://127.0.0.1:PORT`).
    pub fn uri(&self) -> String {
        self.server.uri()
    }

    pub(super) fn st(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap()
    }

    /// Adds a user (`kind`: `User`, `Bot`, `Organization`). Ids are assigned in order.
    pub fn add_user(&self, login: &str, kind: &str) {
        let mut st = self.st();
        let id = 100 + st.users.len() as u64;
        st.users.entry(login.to_string()).or_insert(User {
            login: login.to_string(),
            id,
            kind: kind.to_string(),
        });
    }

    /// Adds a repository `owner/name` (and its owner as a user with admin).
    pub fn add_repo(&self, full_name: &str) {
        let owner = full_name.split('/').next().unwrap_or("").to_string();
        self.add_user(&owner, "User");
        let mut st = self.st();
        st.repos.entry(full_name.to_string()).or_default();
        st.permissions
            .entry(full_name.to_string())
            .or_default()
            .entry(owner)
            .or_insert(("admin".into(), "admin".into()));
    }

    /// Adds an issue.
    pub fn add_issue(&self, repo: &str, number: u64) {
        self.add_issue_or_pr(repo, number, false);
    }

    /// Adds a pull request (an issue with `pull_request`).
    pub fn add_pull_request(&self, repo: &str, number: u64) {
        self.add_issue_or_pr(repo, number, true);
    }

    fn add_issue_or_pr(&self, repo: &str, number: u64, is_pull_request: bool) {
        self.st()
            .repos
            .get_mut(repo)
            .unwrap_or_else(|| panic!("add_repo({repo}) first"))
            .insert(
                number,
                Issue {
                    number,
                    is_pull_request,
                },
            );
    }

    /// Sets a user's role (`admin`, `maintain`, `write`, `triage`, `read`,
    /// `none`); the legacy `permission` field is derived as GitHub does
    /// (maintain → write, triage → read). Adds the user if unknown.
    pub fn set_permission(&self, repo: &str, login: &str, role: &str) {
        self.add_user(
            login,
            if login.ends_with("[bot]") {
                "Bot"
            } else {
                "User"
            },
        );
        self.st()
            .permissions
            .entry(repo.to_string())
            .or_default()
            .insert(
                login.to_string(),
                (legacy_permission(role).to_string(), role.to_string()),
            );
    }

    /// Adds a comment as if `author` wrote it on the web; returns its id.
    pub fn seed_comment(&self, repo: &str, issue: u64, author: &str, body: &str) -> u64 {
        let mut st = self.st();
        let id = st.new_id();
        let t = now();
        st.comments.insert(
            id,
            StoredComment {
                id,
                repo: repo.to_string(),
                issue,
                author: author.to_string(),
                body: body.to_string(),
                created_at: t.clone(),
                updated_at: t,
                edits: 0,
                history: Vec::new(),
                reactions: Vec::new(),
            },
        );
        id
    }

    /// Edits a stored comment as a person would on the web, `after_secs`
    /// seconds after it was written: the body changes and `updated_at` is
    /// set to that moment (GitHub's timestamps have one-second precision, so
    /// an edit within the same second leaves `updated_at == created_at`).
    pub fn edit_comment_later(&self, id: u64, body: &str, after_secs: i64) {
        let mut st = self.st();
        let c = st.comments.get_mut(&id).expect("a stored comment");
        let created = chrono::DateTime::parse_from_rfc3339(&c.created_at).expect("RFC 3339");
        c.body = body.to_string();
        c.updated_at = (created + chrono::Duration::seconds(after_secs))
            .with_timezone(&chrono::Utc)
            .to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
        c.edits += 1;
    }

    /// The GitHub JSON of a stored comment (to build event payloads with).
    pub fn comment_json(&self, id: u64) -> Option<Value> {
        let st = self.st();
        st.comments.get(&id).map(|c| st.comment_json(c))
    }

    /// A real-shaped `issue_comment` webhook payload for a stored comment
    /// (`action`: `created`, `edited` or `deleted`), to write to the file
    /// named by `GITHUB_EVENT_PATH`.
    pub fn issue_comment_event(&self, comment_id: u64, action: &str) -> Value {
        let st = self.st();
        let c = st
            .comments
            .get(&comment_id)
            .unwrap_or_else(|| panic!("no comment {comment_id}"));
        let is_pr = st
            .repos
            .get(&c.repo)
            .and_then(|m| m.get(&c.issue))
            .is_some_and(|i| i.is_pull_request);
        let (owner, name) = c.repo.split_once('/').unwrap();
        let api = &st.base;
        let issue_api = format!("{api}/repos/{}/issues/{}", c.repo, c.issue);
        let kind = if is_pr { "pull" } else { "issues" };
        let reactions = |url: String| {
            json!({"url": url, "total_count": 0, "+1": 0, "-1": 0, "laugh": 0, "hooray": 0,
                   "confused": 0, "heart": 0, "rocket": 0, "eyes": 0})
        };
        let mut issue = json!({
            "url": issue_api,
            "repository_url": format!("{api}/repos/{}", c.repo),
            "labels_url": format!("{issue_api}/labels{{/name}}"),
            "comments_url": format!("{issue_api}/comments"),
            "events_url": format!("{issue_api}/events"),
            "html_url": format!("https://github.com/{}/{kind}/{}", c.repo, c.issue),
            "id": 2_000_000_000u64 + c.issue,
            "node_id": format!("I_kwDOA{}", c.issue),
            "number": c.issue,
            "title": format!("Issue {}", c.issue),
            "user": st.user_json(owner),
            "labels": [], "state": "open", "locked": false, "assignee": null, "assignees": [],
            "milestone": null, "comments": 1,
            "created_at": c.created_at, "updated_at": c.updated_at, "closed_at": null,
            "author_association": "OWNER", "active_lock_reason": null, "body": "",
            "reactions": reactions(format!("{issue_api}/reactions")),
            "timeline_url": format!("{issue_api}/timeline"),
            "performed_via_github_app": null, "state_reason": null
        });
        if is_pr {
            issue["draft"] = json!(false);
            issue["pull_request"] = json!({
                "url": format!("{api}/repos/{}/pulls/{}", c.repo, c.issue),
                "html_url": format!("https://github.com/{}/pull/{}", c.repo, c.issue),
                "diff_url": format!("https://github.com/{}/pull/{}.diff", c.repo, c.issue),
                "patch_url": format!("https://github.com/{}/pull/{}.patch", c.repo, c.issue),
                "merged_at": null
            });
        }
        let repository = json!({
            "id": 186_853_002u64,
            "node_id": "MDEwOlJlcG9zaXRvcnkxODY4NTMwMDI=",
            "name": name,
            "full_name": c.repo,
            "private": false,
            "owner": st.user_json(owner),
            "html_url": format!("https://github.com/{}", c.repo),
            "url": format!("{api}/repos/{}", c.repo),
            "default_branch": "main",
            "visibility": "public"
        });
        let mut event = json!({
            "action": action,
            "issue": issue,
            "comment": st.comment_json(c),
            "repository": repository,
            "sender": st.user_json(&c.author)
        });
        if action == "edited" {
            event["changes"] = json!({"body": {"from": "(earlier text)"}});
        }
        event
    }

    /// The GitHub JSON of a user.
    pub fn user_json(&self, login: &str) -> Value {
        self.st().user_json(login)
    }

    /// Requires `Authorization: Bearer <token>` (or `token <token>`); others get 401.
    pub fn require_token(&self, token: &str) {
        self.st().token = Some(token.to_string());
    }

    /// Changes who comments made through the API are attributed to.
    pub fn set_app_login(&self, login: &str, kind: &str) {
        self.add_user(login, kind);
        self.st().app_login = login.to_string();
    }

    /// Caps the page size of comment lists (to exercise pagination).
    pub fn set_max_per_page(&self, n: usize) {
        self.st().max_per_page = n.max(1);
    }

    /// Every answer from now on takes `d`, as a real API's round trip does.
    pub fn set_latency(&self, d: std::time::Duration) {
        self.st().latency = Some(d);
    }

    /// The next `count` requests whose path contains `path_contains` (and,
    /// when given, whose method is `method`) answer `status` with a
    /// GitHub-shaped error body.
    pub fn fail_next(&self, method: Option<&str>, path_contains: &str, status: u16, count: u32) {
        self.st().faults.push(Fault {
            method: method.map(str::to_string),
            path: path_contains.to_string(),
            status,
            remaining: count,
        });
    }

    /// The request `n` requests from now (1 = the next one) answers
    /// `status` (whatever its path).
    pub fn fail_request(&self, n: usize, status: u16) {
        let mut st = self.st();
        let index = st.seen.len() + n.max(1) - 1;
        st.nth_faults.push((index, status));
    }

    /// A primary rate limit: `remaining` more requests succeed, then every
    /// request answers `status` (403 or 429) with `x-ratelimit-remaining: 0`
    /// until `reset_in_secs` from now; then the quota is back to `limit`.
    pub fn set_primary_limit(&self, limit: u32, remaining: u32, reset_in_secs: u64, status: u16) {
        self.st().quota = Some(Quota {
            limit,
            remaining,
            reset: epoch_now() + reset_in_secs,
            window: reset_in_secs.max(1),
            status,
        });
    }

    /// A secondary rate limit: the next `hits` requests answer `status` (403
    /// or 429) with GitHub's secondary-limit message and, when given, a
    /// `retry-after` header; each refusal blocks every request for
    /// `retry_after` seconds (or `block` without it).
    pub fn set_secondary_limit(
        &self,
        status: u16,
        retry_after: Option<u64>,
        block: std::time::Duration,
        hits: u32,
    ) {
        self.st().secondary = Some(Secondary {
            status,
            retry_after,
            block: retry_after.map_or(block, std::time::Duration::from_secs),
            hits,
            until: None,
            early: 0,
        });
    }

    /// How many requests came while a secondary limit's block was running
    /// (a client that honours the limit sends none).
    pub fn secondary_early_requests(&self) -> u32 {
        self.st().secondary.as_ref().map_or(0, |s| s.early)
    }

    /// Makes the token a user token of `login` (`GET /user` answers it);
    /// by default the token is an installation token.
    pub fn set_token_user(&self, login: &str) {
        self.add_user(login, "User");
        self.st().token_user = Some(login.to_string());
    }

    /// Comments on an issue, oldest first.
    pub fn comments(&self, repo: &str, issue: u64) -> Vec<StoredComment> {
        self.st()
            .comments
            .values()
            .filter(|c| c.repo == repo && c.issue == issue)
            .cloned()
            .collect()
    }

    /// One comment.
    pub fn comment(&self, id: u64) -> Option<StoredComment> {
        self.st().comments.get(&id).cloned()
    }

    /// The reaction contents on a comment, in order (`eyes`, `rocket`, ...).
    pub fn reactions(&self, comment_id: u64) -> Vec<String> {
        self.st()
            .comments
            .get(&comment_id)
            .map(|c| c.reactions.iter().map(|(_, r)| r.clone()).collect())
            .unwrap_or_default()
    }

    /// The primary rate limit left (`x-ratelimit-remaining` of the last answer).
    pub fn rate_remaining(&self) -> u32 {
        self.st().quota.as_ref().map_or(5000, |q| q.remaining)
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<Seen> {
        self.st().seen.clone()
    }

    /// From now on every `Link` header names `to` where it named `from`
    /// (`/repos/octo-org/data/` → `/repos/other/repo/`, or another host):
    /// GitHub's pagination as a hostile or broken proxy would send it.
    pub fn rewrite_links(&self, from: &str, to: &str) {
        self.st().link_rewrite = Some((from.to_string(), to.to_string()));
    }

    /// How many requests had a path containing `path_contains` and method `method`.
    pub fn count(&self, method: &str, path_contains: &str) -> usize {
        self.st()
            .seen
            .iter()
            .filter(|s| s.method.eq_ignore_ascii_case(method) && s.path.contains(path_contains))
            .count()
    }
}
