//! A repository's activity in the GitHub stand-in, served in the REST
//! API's real shapes for the `github:` sources:
//!
//! - `GET /repos/{o}/{r}/pulls` (`state` open/closed/all, default open;
//!   `sort` created/updated, `direction`, default created desc),
//!   `GET pulls/{n}` with `additions`, `deletions`, `changed_files` and
//!   `merged_by` (only in the single pull request, as GitHub; the list has
//!   `requested_reviewers` and `requested_teams`), `GET pulls/{n}/reviews`;
//! - `GET /repos/{o}/{r}/issues` (pull requests included, with a
//!   `pull_request` key; `state`, `labels` — all must match —, `since`:
//!   updated at or after, `sort`, `direction`);
//! - `GET /repos/{o}/{r}/issues/comments` (`since`, `sort`, `direction`;
//!   ascending id by default);
//! - `GET /repos/{o}/{r}/actions/runs` wrapped as `{"total_count",
//!   "workflow_runs": [...]}`, newest first, `created` as `>=DATE`,
//!   `<=DATE`, `A..B` or a date.
//!
//! Every list pages by `Link` (`per_page` at most 100, with the other
//! query parameters kept in the links). A permission withheld with
//! [`GitHubStandIn::deny_permission`] answers 403 "Resource not accessible
//! by integration" as GitHub does for a workflow token without it. The
//! stand-in's faults and rate limits apply first, as everywhere.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Duration, TimeZone, Utc};
use serde_json::{Value, json};

use super::github_standin::{GitHubStandIn, State, paginate};

type Reply = (u16, Option<Value>, Option<String>);

/// A pull request of the activity data set.
#[derive(Debug, Clone)]
pub struct ActPull {
    pub number: u64,
    pub title: String,
    pub author: String,
    pub author_type: String,
    /// `open` or `closed`.
    pub state: String,
    pub draft: bool,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub closed_at: Option<DateTime<Utc>>,
    pub merged_at: Option<DateTime<Utc>>,
    pub labels: Vec<String>,
    pub additions: u64,
    pub deletions: u64,
    pub changed_files: u64,
    /// Who merged it (`None` when not merged).
    pub merged_by: Option<String>,
    /// Logins asked to review.
    pub requested_reviewers: Vec<String>,
}

/// A review.
#[derive(Debug, Clone)]
pub struct ActReview {
    pub id: u64,
    pub pull: u64,
    pub reviewer: String,
    pub state: String,
    /// `None` for a pending review.
    pub submitted_at: Option<DateTime<Utc>>,
}

/// An issue that is not a pull request.
#[derive(Debug, Clone)]
pub struct ActIssue {
    pub number: u64,
    pub author: String,
    pub state: String,
    pub labels: Vec<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub closed_at: Option<DateTime<Utc>>,
}

/// An issue or pull request comment.
#[derive(Debug, Clone)]
pub struct ActComment {
    pub id: u64,
    pub issue: u64,
    pub author: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// A workflow run.
#[derive(Debug, Clone)]
pub struct ActRun {
    pub id: u64,
    pub workflow: String,
    pub event: String,
    pub conclusion: String,
    pub head_branch: String,
    pub run_attempt: u64,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// One repository's activity.
#[derive(Debug, Clone, Default)]
pub struct Activity {
    pub pulls: Vec<ActPull>,
    pub reviews: Vec<ActReview>,
    pub issues: Vec<ActIssue>,
    pub comments: Vec<ActComment>,
    pub runs: Vec<ActRun>,
}

/// The activity of every repository and the permissions withheld.
#[derive(Debug, Default)]
pub(super) struct ActivityState {
    repos: BTreeMap<String, Activity>,
    denied: BTreeSet<String>,
}

fn ts(t: &DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

fn opt_ts(t: &Option<DateTime<Utc>>) -> Value {
    t.as_ref().map_or(Value::Null, |t| json!(ts(t)))
}

fn user(login: &str) -> Value {
    let kind = if login.ends_with("[bot]") {
        "Bot"
    } else {
        "User"
    };
    json!({"login": login, "id": 7000 + login.len() as u64, "type": kind, "site_admin": false,
        "url": format!("https://api.github.com/users/{login}")})
}

fn labels(ls: &[String]) -> Value {
    Value::Array(ls.iter().enumerate().map(|(i, l)| json!({"id": 900 + i as u64, "name": l, "color": "ededed", "default": false})).collect())
}

/// A small deterministic generator (no rand dependency in the data).
struct Lcg(u64);
impl Lcg {
    fn next(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n.max(1)
    }
}

/// `pulls` pull requests (and a third as many issues, comments and `runs`
/// workflow runs) from 2026-09-01 on, deterministic for `seed`.
pub fn generate(pulls: u64, runs: u64, seed: u64) -> Activity {
    let mut g = Lcg(seed);
    let start = Utc.with_ymd_and_hms(2026, 9, 1, 0, 0, 0).unwrap();
    let people = ["ana", "bo", "chen", "dee", "eli", "fay", "gus"];
    let label_set = ["bug", "ui", "docs", "perf"];
    let mut a = Activity::default();
    let mut review_id = 50_000;
    let mut comment_id = 80_000;
    for n in 1..=pulls {
        let created = start + Duration::minutes((n * 397 + g.next(300)) as i64);
        let author = if g.next(10) == 0 {
            "dependabot[bot]".to_string()
        } else {
            people[g.next(7) as usize].to_string()
        };
        let mut last = created;
        let reviews = g.next(4);
        for k in 0..reviews {
            let at = created + Duration::minutes((30 + g.next(3000) + k * 200) as i64);
            let pending = g.next(12) == 0;
            let reviewer = people[g.next(7) as usize].to_string();
            let state = ["APPROVED", "COMMENTED", "CHANGES_REQUESTED"][g.next(3) as usize];
            review_id += 1;
            a.reviews.push(ActReview {
                id: review_id,
                pull: n,
                reviewer,
                state: if pending {
                    "PENDING".into()
                } else {
                    state.into()
                },
                submitted_at: (!pending).then_some(at),
            });
            if !pending {
                last = last.max(at);
            }
        }
        let closed = g.next(10) < 7;
        let closed_at = closed.then(|| last + Duration::minutes((60 + g.next(4000)) as i64));
        let merged_at = closed_at.filter(|_| g.next(10) < 8);
        let updated = closed_at.unwrap_or(last) + Duration::minutes(g.next(30) as i64);
        let ls: Vec<String> = label_set
            .iter()
            .filter(|_| g.next(4) == 0)
            .map(|s| s.to_string())
            .collect();
        a.pulls.push(ActPull {
            number: n,
            title: format!("Change {n}, part \"{}\"", n % 7),
            author_type: if author.ends_with("[bot]") {
                "Bot".into()
            } else {
                "User".into()
            },
            author,
            state: if closed {
                "closed".into()
            } else {
                "open".into()
            },
            draft: g.next(10) == 0,
            created_at: created,
            updated_at: updated,
            closed_at,
            merged_at,
            labels: ls,
            additions: g.next(500),
            deletions: g.next(200),
            changed_files: 1 + g.next(20),
            merged_by: merged_at.map(|_| people[(n % 7) as usize].to_string()),
            requested_reviewers: if closed {
                Vec::new()
            } else {
                vec![people[((n + 1) % 7) as usize].to_string()]
            },
        });
        for _ in 0..g.next(3) {
            comment_id += 1;
            let at = created + Duration::minutes(g.next(2000) as i64);
            a.comments.push(ActComment {
                id: comment_id,
                issue: n,
                author: people[g.next(7) as usize].into(),
                created_at: at,
                updated_at: at,
            });
        }
    }
    for i in 0..pulls / 3 {
        let number = pulls + 1 + i;
        let created = start + Duration::minutes((i * 1100 + g.next(500)) as i64);
        let closed_at = (g.next(2) == 0).then(|| created + Duration::hours(1 + g.next(300) as i64));
        a.issues.push(ActIssue {
            number,
            author: people[g.next(7) as usize].into(),
            state: if closed_at.is_some() {
                "closed".into()
            } else {
                "open".into()
            },
            labels: label_set
                .iter()
                .filter(|_| g.next(3) == 0)
                .map(|s| s.to_string())
                .collect(),
            created_at: created,
            updated_at: closed_at.unwrap_or(created) + Duration::minutes(5),
            closed_at,
        });
    }
    let workflows = ["CI", "Lint", "Release"];
    for i in 0..runs {
        let created = start + Duration::minutes((i * 251 + g.next(100)) as i64);
        let conclusion =
            ["success", "success", "success", "failure", "cancelled"][g.next(5) as usize];
        a.runs.push(ActRun {
            id: 3_000_000 + i,
            workflow: workflows[g.next(3) as usize].into(),
            event: ["push", "pull_request", "schedule"][g.next(3) as usize].into(),
            conclusion: conclusion.into(),
            head_branch: if g.next(3) == 0 {
                "main".into()
            } else {
                format!("topic-{}", g.next(40))
            },
            run_attempt: 1 + g.next(10) / 8,
            created_at: created,
            updated_at: created + Duration::minutes(1 + g.next(30) as i64),
        });
    }
    a
}

fn pull_json(base: &str, repo: &str, p: &ActPull, detail: bool) -> Value {
    let mut v = json!({
        "url": format!("{base}/repos/{repo}/pulls/{}", p.number),
        "id": 4_000_000 + p.number, "number": p.number, "state": p.state, "locked": false,
        "title": p.title, "user": user(&p.author), "body": "text", "labels": labels(&p.labels),
        "created_at": ts(&p.created_at), "updated_at": ts(&p.updated_at),
        "closed_at": opt_ts(&p.closed_at), "merged_at": opt_ts(&p.merged_at),
        "draft": p.draft, "author_association": "MEMBER",
        "head": {"ref": format!("topic-{}", p.number), "sha": format!("{:040x}", p.number)},
        "base": {"ref": "main", "sha": format!("{:040x}", 1)},
        "requested_reviewers": p.requested_reviewers.iter().map(|r| user(r)).collect::<Vec<_>>(),
        "requested_teams": [],
    });
    if detail {
        v["merged"] = json!(p.merged_at.is_some());
        v["merged_by"] = p.merged_by.as_deref().map_or(Value::Null, user);
        v["additions"] = json!(p.additions);
        v["deletions"] = json!(p.deletions);
        v["changed_files"] = json!(p.changed_files);
        v["comments"] = json!(0);
    }
    v
}

fn issue_json(base: &str, repo: &str, i: &ActIssue) -> Value {
    json!({"url": format!("{base}/repos/{repo}/issues/{}", i.number), "id": 5_000_000 + i.number,
        "number": i.number, "title": format!("Issue {}", i.number), "user": user(&i.author),
        "labels": labels(&i.labels), "state": i.state,
        "state_reason": if i.closed_at.is_some() { json!("completed") } else { Value::Null },
        "comments": 0, "created_at": ts(&i.created_at), "updated_at": ts(&i.updated_at),
        "closed_at": opt_ts(&i.closed_at), "author_association": "MEMBER"})
}

/// A pull request as the issues list shows it: with a `pull_request` key.
fn pull_as_issue(base: &str, repo: &str, p: &ActPull) -> Value {
    json!({"url": format!("{base}/repos/{repo}/issues/{}", p.number), "id": 4_000_000 + p.number,
        "number": p.number, "title": p.title, "user": user(&p.author), "labels": labels(&p.labels),
        "state": p.state, "state_reason": Value::Null, "comments": 0, "draft": p.draft,
        "created_at": ts(&p.created_at), "updated_at": ts(&p.updated_at), "closed_at": opt_ts(&p.closed_at),
        "pull_request": {"url": format!("{base}/repos/{repo}/pulls/{}", p.number), "merged_at": opt_ts(&p.merged_at)}})
}

fn forbidden(doc: &str) -> Reply {
    (
        403,
        Some(json!({"message": "Resource not accessible by integration",
        "documentation_url": format!("https://docs.github.com/rest/{doc}"), "status": "403"})),
        None,
    )
}

fn time_param(q: &BTreeMap<String, String>, key: &str) -> Option<DateTime<Utc>> {
    q.get(key)
        .and_then(|s| DateTime::parse_from_rfc3339(s).ok())
        .map(|t| t.with_timezone(&Utc))
}

/// One page of `items` with the `Link` header keeping `q`'s other parameters.
fn page(
    base: &str,
    path: &str,
    q: &BTreeMap<String, String>,
    items: Vec<Value>,
    max: usize,
) -> (Vec<Value>, Option<String>) {
    let keep: Vec<String> = q
        .iter()
        .filter(|(k, _)| *k != "page" && *k != "per_page")
        .map(|(k, v)| {
            format!(
                "{k}={}",
                v.replace('>', "%3E")
                    .replace('<', "%3C")
                    .replace(',', "%2C")
            )
        })
        .collect();
    let (range, link) = paginate(q, items.len(), max, |per_page, p| {
        let mut all = keep.clone();
        all.push(format!("per_page={per_page}"));
        all.push(format!("page={p}"));
        format!("{base}{path}?{}", all.join("&"))
    });
    (items[range].to_vec(), link)
}

/// Sorts by `field` (RFC 3339 text sorts as time) in `direction`.
fn sort_by(items: &mut [Value], field: &str, desc: bool) {
    items.sort_by(|a, b| {
        let o = a[field]
            .as_str()
            .cmp(&b[field].as_str())
            .then(a["id"].as_u64().cmp(&b["id"].as_u64()));
        if desc { o.reverse() } else { o }
    });
}

/// Serves the activity endpoints; `None` for paths it does not own.
pub(super) fn route(
    st: &mut State,
    method: &str,
    segs: &[&str],
    q: &BTreeMap<String, String>,
) -> Option<Reply> {
    if method != "GET" {
        return None;
    }
    let ["repos", o, r, rest @ ..] = segs else {
        return None;
    };
    let repo = format!("{o}/{r}");
    let a = st.activity.repos.get(&repo)?.clone();
    let base = st.base.clone();
    let max = st.max_per_page;
    let denied = |p: &str| st.activity.denied.contains(p);
    let path = format!("/repos/{repo}/{}", rest.join("/"));
    let desc = q.get("direction").map(String::as_str) != Some("asc");
    let (items, link) = match rest {
        ["pulls"] => {
            if denied("pull-requests") {
                return Some(forbidden("pulls/pulls#list-pull-requests"));
            }
            let state = q.get("state").map_or("open", String::as_str);
            let mut items: Vec<Value> = a
                .pulls
                .iter()
                .filter(|p| state == "all" || p.state == state)
                .map(|p| pull_json(&base, &repo, p, false))
                .collect();
            let field = if q.get("sort").map(String::as_str) == Some("updated") {
                "updated_at"
            } else {
                "created_at"
            };
            sort_by(&mut items, field, desc);
            page(&base, &path, q, items, max)
        }
        ["pulls", n] => {
            let n: u64 = n.parse().ok()?;
            let p = a.pulls.iter().find(|p| p.number == n)?;
            if st.git.pulls.contains_key(&(repo.clone(), n)) {
                return None;
            }
            if denied("pull-requests") {
                return Some(forbidden("pulls/pulls#get-a-pull-request"));
            }
            return Some((200, Some(pull_json(&base, &repo, p, true)), None));
        }
        ["pulls", n, "reviews"] => {
            let n: u64 = n.parse().ok()?;
            if denied("pull-requests") {
                return Some(forbidden("pulls/reviews#list-reviews-for-a-pull-request"));
            }
            let items: Vec<Value> = a.reviews.iter().filter(|r| r.pull == n).map(|r| {
                let mut v = json!({"id": r.id, "user": user(&r.reviewer), "body": "", "state": r.state,
                    "commit_id": format!("{:040x}", n), "author_association": "MEMBER",
                    "pull_request_url": format!("{base}/repos/{repo}/pulls/{n}")});
                if let Some(t) = &r.submitted_at {
                    v["submitted_at"] = json!(ts(t));
                }
                v
            }).collect();
            page(&base, &path, q, items, max)
        }
        ["issues"] => {
            if denied("issues") {
                return Some(forbidden("issues/issues#list-repository-issues"));
            }
            let mut items = issue_items(&a, (&base, &repo), q);
            let field = match q.get("sort").map(String::as_str) {
                Some("updated") => "updated_at",
                _ => "created_at",
            };
            sort_by(&mut items, field, desc);
            page(&base, &path, q, items, max)
        }
        ["issues", "comments"] => {
            if denied("issues") {
                return Some(forbidden(
                    "issues/comments#list-issue-comments-for-a-repository",
                ));
            }
            let since = time_param(q, "since");
            let mut items: Vec<Value> = a.comments.iter()
                .filter(|c| since.is_none_or(|s| c.updated_at >= s))
                .map(|c| json!({"id": c.id, "issue_url": format!("{base}/repos/{repo}/issues/{}", c.issue),
                    "user": user(&c.author), "body": "a comment", "created_at": ts(&c.created_at),
                    "updated_at": ts(&c.updated_at), "author_association": "MEMBER"}))
                .collect();
            match q.get("sort").map(String::as_str) {
                Some("updated") => sort_by(&mut items, "updated_at", desc),
                Some(_) => sort_by(&mut items, "created_at", desc),
                None => items.sort_by_key(|v| v["id"].as_u64()),
            }
            page(&base, &path, q, items, max)
        }
        ["actions", "runs"] => {
            if denied("actions") {
                return Some(forbidden(
                    "actions/workflow-runs#list-workflow-runs-for-a-repository",
                ));
            }
            return Some(runs_page(&a, (&base, &path), q, max));
        }
        _ => return None,
    };
    Some((200, Some(Value::Array(items)), link))
}

/// The issues list: issues and pull requests (these with `pull_request`),
/// filtered by `state`, `labels` and `since` as GitHub does.
fn issue_items(
    a: &Activity,
    (base, repo): (&str, &str),
    q: &BTreeMap<String, String>,
) -> Vec<Value> {
    let state = q.get("state").map_or("open", String::as_str);
    let want: Vec<&str> = q
        .get("labels")
        .map(|l| l.split(',').collect())
        .unwrap_or_default();
    let since = time_param(q, "since");
    a.issues
        .iter()
        .map(|i| issue_json(base, repo, i))
        .chain(a.pulls.iter().map(|p| pull_as_issue(base, repo, p)))
        .filter(|v| state == "all" || v["state"] == state)
        .filter(|v| {
            want.iter().all(|w| {
                v["labels"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|l| l["name"] == *w)
            })
        })
        .filter(|v| since.is_none_or(|s| v["updated_at"].as_str().unwrap() >= ts(&s).as_str()))
        .collect()
}

/// The workflow runs page: newest first, wrapped as GitHub wraps them.
fn runs_page(
    a: &Activity,
    (base, path): (&str, &str),
    q: &BTreeMap<String, String>,
    max: usize,
) -> Reply {
    let (from, to) = created_range(q.get("created").map(String::as_str));
    let mut items: Vec<Value> = a
        .runs
        .iter()
        .filter(|r| from.is_none_or(|f| r.created_at >= f) && to.is_none_or(|t| r.created_at <= t))
        .map(|r| {
            json!({"id": r.id, "name": r.workflow, "event": r.event, "status": "completed",
            "conclusion": r.conclusion, "head_branch": r.head_branch, "run_attempt": r.run_attempt,
            "run_number": r.id - 3_000_000, "created_at": ts(&r.created_at),
            "run_started_at": ts(&r.created_at), "updated_at": ts(&r.updated_at),
            "workflow_id": 161_335, "display_title": "run"})
        })
        .collect();
    sort_by(&mut items, "created_at", true);
    let total = items.len();
    let (items, link) = page(base, path, q, items, max);
    (
        200,
        Some(json!({"total_count": total, "workflow_runs": items})),
        link,
    )
}

/// The bounds of a `created` filter (`>=D`, `<=D`, `A..B`, `D`).
fn created_range(f: Option<&str>) -> (Option<DateTime<Utc>>, Option<DateTime<Utc>>) {
    let parse = |s: &str| {
        DateTime::parse_from_rfc3339(s)
            .map(|t| t.with_timezone(&Utc))
            .ok()
            .or_else(|| {
                chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d")
                    .ok()
                    .map(|d| d.and_hms_opt(0, 0, 0).unwrap().and_utc())
            })
    };
    match f {
        None => (None, None),
        Some(s) if s.starts_with(">=") => (parse(&s[2..]), None),
        Some(s) if s.starts_with("<=") => (None, parse(&s[2..])),
        Some(s) => match s.split_once("..") {
            Some((a, b)) => (parse(a), parse(b)),
            None => (parse(s), parse(s).map(|d| d + Duration::days(1))),
        },
    }
}

impl GitHubStandIn {
    /// Gives `repo` this activity (replacing any before).
    pub fn set_activity(&self, repo: &str, a: Activity) {
        self.st().activity.repos.insert(repo.to_string(), a);
    }

    /// The activity of `repo`, for a test's own computation.
    pub fn activity(&self, repo: &str) -> Activity {
        self.st()
            .activity
            .repos
            .get(repo)
            .cloned()
            .unwrap_or_default()
    }

    /// Withholds a permission (`pull-requests`, `issues`, `actions`) from
    /// every token: its endpoints answer 403.
    pub fn deny_permission(&self, permission: &str) {
        self.st().activity.denied.insert(permission.to_string());
    }
}
