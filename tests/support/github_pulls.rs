//! Pull requests in the GitHub stand-in: `GET /repos/{o}/{r}/pulls/{n}`,
//! `GET /repos/{o}/{r}/pulls/{n}/files` (paginated with `Link`, at most
//! 3,000 files, `added`/`modified`/`removed`/`renamed`/`changed` with
//! `previous_filename`), `pull_request` event payloads, and the helpers that
//! open pull requests from a branch or a fork and push to them. Their
//! commits live in the base repository's object store (`git_store.rs`), as
//! GitHub keeps a fork's pull request head under `refs/pull/{n}/head`.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::git_store::{Change, Store};
use super::github_git::{Reply, error};
use super::github_standin::{GitHubStandIn, Issue, State, paginate};

/// A stored pull request.
#[derive(Debug, Clone)]
pub(super) struct Pull {
    number: u64,
    author: String,
    base_ref: String,
    /// The base commit the head was built on (GitHub's merge base).
    base_sha: String,
    head_ref: String,
    head_sha: String,
    /// `owner/name` of the head; `None` for a deleted fork.
    head_repo: Option<String>,
    /// The head before the last push (for `synchronize`).
    before: Option<String>,
    /// What it changes (computed when the head moves).
    files: Vec<FileChange>,
    created_at: String,
    updated_at: String,
}

fn repo_json(st: &State, full_name: &str, fork: bool) -> Value {
    let (owner, name) = full_name.split_once('/').unwrap_or((full_name, full_name));
    let api = &st.base;
    json!({
        "id": 186_853_002u64 + full_name.len() as u64,
        "node_id": format!("R_kgDO{}", full_name.len()),
        "name": name,
        "full_name": full_name,
        "private": false,
        "owner": st.user_json(owner),
        "html_url": format!("https://github.com/{full_name}"),
        "url": format!("{api}/repos/{full_name}"),
        "fork": fork,
        "default_branch": "main",
        "visibility": "public"
    })
}

/// (filename, status, previous filename, blob sha, additions, deletions), by filename.
type FileChange = (String, &'static str, Option<String>, String, usize, usize);

/// The files a pull request changes, as GitHub lists them.
fn pull_files(store: &Store, base_sha: &str, head_sha: &str) -> Vec<FileChange> {
    let flat = |c: &str| {
        store
            .commit(c)
            .map(|c| store.flatten(&c.tree))
            .unwrap_or_default()
    };
    let (old, new) = (flat(base_sha), flat(head_sha));
    let lines = |sha: &str| {
        store
            .blob(sha)
            .map_or(0, |b| String::from_utf8_lossy(b).lines().count())
    };
    let mut removed: Vec<(&String, &(String, String))> =
        old.iter().filter(|(p, _)| !new.contains_key(*p)).collect();
    let mut out = Vec::new();
    for (path, (mode, sha)) in &new {
        match old.get(path) {
            Some((m, s)) if s == sha && m == mode => {}
            Some((_, s)) if s == sha => {
                out.push((path.clone(), "changed", None, sha.clone(), 0, 0))
            }
            Some((_, s)) => {
                let (a, d) = line_changes(store.blob(s), store.blob(sha));
                out.push((path.clone(), "modified", None, sha.clone(), a, d));
            }
            None => match removed.iter().position(|(_, (_, s))| s == sha) {
                Some(i) => {
                    let (from, _) = removed.remove(i);
                    out.push((
                        path.clone(),
                        "renamed",
                        Some(from.clone()),
                        sha.clone(),
                        0,
                        0,
                    ));
                }
                None => out.push((path.clone(), "added", None, sha.clone(), lines(sha), 0)),
            },
        }
    }
    for (path, (_, sha)) in removed {
        out.push((path.clone(), "removed", None, sha.clone(), 0, lines(sha)));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// Lines added and deleted (a multiset difference, enough for the counts).
fn line_changes(old: Option<&Vec<u8>>, new: Option<&Vec<u8>>) -> (usize, usize) {
    let count = |b: Option<&Vec<u8>>| {
        let mut m: BTreeMap<String, usize> = BTreeMap::new();
        for l in String::from_utf8_lossy(b.map_or(&[][..], Vec::as_slice)).lines() {
            *m.entry(l.to_string()).or_default() += 1;
        }
        m
    };
    let (o, n) = (count(old), count(new));
    let diff = |a: &BTreeMap<String, usize>, b: &BTreeMap<String, usize>| {
        a.iter()
            .map(|(l, k)| k.saturating_sub(*b.get(l).unwrap_or(&0)))
            .sum()
    };
    (diff(&n, &o), diff(&o, &n))
}

fn pull_json(st: &State, repo: &str, p: &Pull) -> Value {
    let api = &st.base;
    let n = p.number;
    let files = &p.files;
    let head_repo = p.head_repo.as_deref().map(|h| repo_json(st, h, h != repo));
    let head_owner = p
        .head_repo
        .as_deref()
        .and_then(|h| h.split('/').next())
        .unwrap_or("ghost");
    let base_owner = repo.split('/').next().unwrap_or("");
    json!({
        "url": format!("{api}/repos/{repo}/pulls/{n}"),
        "id": 3_000_000_000u64 + n,
        "node_id": format!("PR_kwDO{n}"),
        "html_url": format!("https://github.com/{repo}/pull/{n}"),
        "diff_url": format!("https://github.com/{repo}/pull/{n}.diff"),
        "patch_url": format!("https://github.com/{repo}/pull/{n}.patch"),
        "issue_url": format!("{api}/repos/{repo}/issues/{n}"),
        "commits_url": format!("{api}/repos/{repo}/pulls/{n}/commits"),
        "statuses_url": format!("{api}/repos/{repo}/statuses/{}", p.head_sha),
        "number": n,
        "state": "open",
        "locked": false,
        "title": format!("Pull request {n}"),
        "user": st.user_json(&p.author),
        "body": "",
        "created_at": p.created_at,
        "updated_at": p.updated_at,
        "closed_at": null,
        "merged_at": null,
        "merge_commit_sha": null,
        "draft": false,
        "head": {
            "label": format!("{head_owner}:{}", p.head_ref),
            "ref": p.head_ref,
            "sha": p.head_sha,
            "user": st.user_json(head_owner),
            "repo": head_repo
        },
        "base": {
            "label": format!("{base_owner}:{}", p.base_ref),
            "ref": p.base_ref,
            "sha": p.base_sha,
            "user": st.user_json(base_owner),
            "repo": repo_json(st, repo, false)
        },
        "author_association": if p.head_repo.as_deref() == Some(repo) { "MEMBER" } else { "CONTRIBUTOR" },
        "auto_merge": null,
        "merged": false,
        "mergeable": null,
        "rebaseable": null,
        "mergeable_state": "unknown",
        "comments": 0,
        "review_comments": 0,
        "commits": 1,
        "additions": files.iter().map(|f| f.4).sum::<usize>(),
        "deletions": files.iter().map(|f| f.5).sum::<usize>(),
        "changed_files": files.len()
    })
}

pub(super) fn pulls_route(
    st: &State,
    base: &str,
    repo: &str,
    method: &str,
    rest: &[&str],
    query: &BTreeMap<String, String>,
) -> Reply {
    let pull = rest
        .first()
        .and_then(|n| n.parse::<u64>().ok())
        .and_then(|n| st.git.pulls.get(&(repo.to_string(), n)));
    match (method, rest, pull) {
        ("GET", [_], Some(p)) => (200, Some(pull_json(st, repo, p)), None),
        ("GET", [_, "files"], Some(p)) => {
            let files = &p.files[..p.files.len().min(st.git.pull_files_cap)];
            let (range, link) = paginate(query, files.len(), 100, |per_page, n| {
                format!(
                    "{base}/repos/{repo}/pulls/{}/files?per_page={per_page}&page={n}",
                    p.number
                )
            });
            let items: Vec<Value> = files[range]
                .iter()
                .map(|(name, status, previous, sha, additions, deletions)| {
                    let at = if *status == "removed" {
                        &p.base_sha
                    } else {
                        &p.head_sha
                    };
                    let mut v = json!({
                        "sha": sha,
                        "filename": name,
                        "status": status,
                        "additions": additions,
                        "deletions": deletions,
                        "changes": additions + deletions,
                        "blob_url": format!("https://github.com/{repo}/blob/{at}/{name}"),
                        "raw_url": format!("https://github.com/{repo}/raw/{at}/{name}"),
                        "contents_url": format!("{base}/repos/{repo}/contents/{name}?ref={at}"),
                    });
                    if let Some(prev) = previous {
                        v["previous_filename"] = json!(prev);
                    }
                    v
                })
                .collect();
            (200, Some(Value::Array(items)), link)
        }
        _ => error(404, "Not Found", "pulls/pulls#get-a-pull-request"),
    }
}

/// A pull request opened with the helpers below.
fn opened<'a>(st: &'a State, repo: &str, number: u64) -> &'a Pull {
    st.git
        .pulls
        .get(&(repo.to_string(), number))
        .expect("open the pull request first")
}

/// The shas of a pull request the stand-in made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullShas {
    /// The base commit.
    pub base: String,
    /// The head commit.
    pub head: String,
}

impl GitHubStandIn {
    /// Opens a pull request from `head` of `head_repo`; its author is the
    /// fork's owner, or `contributor` within the repository.
    fn add_pull(
        &self,
        repo: &str,
        number: u64,
        base: &str,
        head: &str,
        head_repo: &str,
        changes: &[Change],
    ) -> PullShas {
        let author = if head_repo == repo {
            "contributor"
        } else {
            head_repo.split('/').next().unwrap_or(head_repo)
        };
        self.add_user(author, "User");
        let mut st = self.st();
        let store = st.git.stores.entry(repo.to_string()).or_default();
        let base_sha = store
            .refs
            .get(&format!("refs/heads/{base}"))
            .cloned()
            .unwrap_or_else(|| panic!("seed branch {base} of {repo} first"));
        let head_sha = store.commit_changes(Some(&base_sha), changes, "change the data", author);
        if head_repo == repo {
            store
                .refs
                .insert(format!("refs/heads/{head}"), head_sha.clone());
        }
        store
            .refs
            .insert(format!("refs/pull/{number}/head"), head_sha.clone());
        let files = pull_files(store, &base_sha, &head_sha);
        let t = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
        st.git.pulls.insert(
            (repo.to_string(), number),
            Pull {
                number,
                author: author.to_string(),
                base_ref: base.to_string(),
                base_sha: base_sha.clone(),
                head_ref: head.to_string(),
                head_sha: head_sha.clone(),
                head_repo: Some(head_repo.to_string()),
                before: None,
                files,
                created_at: t.clone(),
                updated_at: t,
            },
        );
        st.repos.get_mut(repo).unwrap().insert(
            number,
            Issue {
                number,
                is_pull_request: true,
            },
        );
        PullShas {
            base: base_sha,
            head: head_sha,
        }
    }

    /// Opens pull request `number` from branch `head` of the same repository
    /// into `base`: the head commit is `base`'s head with `changes` applied.
    pub fn open_pull_request(
        &self,
        repo: &str,
        number: u64,
        base: &str,
        head: &str,
        changes: &[Change],
    ) -> PullShas {
        self.add_pull(repo, number, base, head, repo, changes)
    }

    /// Opens pull request `number` from branch `head` of the fork `fork`
    /// (`owner/name`, whose owner is the author) into `base`.
    pub fn open_fork_pull_request(
        &self,
        repo: &str,
        number: u64,
        fork: &str,
        base: &str,
        head: &str,
        changes: &[Change],
    ) -> PullShas {
        self.add_pull(repo, number, base, head, fork, changes)
    }

    /// Pushes `changes` to a pull request's head; returns the new head sha.
    pub fn push_to_pull_request(&self, repo: &str, number: u64, changes: &[Change]) -> String {
        let mut st = self.st();
        let git = &mut st.git;
        let pull = git
            .pulls
            .get_mut(&(repo.to_string(), number))
            .expect("open the pull request first");
        let store = git.stores.get_mut(repo).unwrap();
        let new = store.commit_changes(Some(&pull.head_sha), changes, "more changes", &pull.author);
        if pull.head_repo.as_deref() == Some(repo) {
            store
                .refs
                .insert(format!("refs/heads/{}", pull.head_ref), new.clone());
        }
        store
            .refs
            .insert(format!("refs/pull/{number}/head"), new.clone());
        pull.files = pull_files(store, &pull.base_sha, &new);
        pull.before = Some(std::mem::replace(&mut pull.head_sha, new.clone()));
        pull.updated_at = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
        new
    }

    /// Deletes the fork of a pull request (GitHub then sends `head.repo: null`).
    pub fn delete_pull_request_fork(&self, repo: &str, number: u64) {
        let mut st = self.st();
        st.git
            .pulls
            .get_mut(&(repo.to_string(), number))
            .expect("open the pull request first")
            .head_repo = None;
    }

    /// The GitHub JSON of a pull request (as `GET /pulls/{n}` answers).
    pub fn pull_request_json(&self, repo: &str, number: u64) -> Value {
        let st = self.st();
        pull_json(&st, repo, opened(&st, repo, number))
    }

    /// A real-shaped `pull_request` webhook payload (`action`: `opened`,
    /// `synchronize`, `reopened`, ...), to write to the file named by
    /// `GITHUB_EVENT_PATH`; `synchronize` carries `before` and `after`.
    pub fn pull_request_event(&self, repo: &str, number: u64, action: &str) -> Value {
        let st = self.st();
        let p = opened(&st, repo, number);
        let mut event = json!({
            "action": action,
            "number": number,
            "pull_request": pull_json(&st, repo, p),
            "repository": repo_json(&st, repo, false),
            "sender": st.user_json(&p.author)
        });
        if action == "synchronize" {
            event["before"] = json!(p.before.clone().unwrap_or_else(|| p.base_sha.clone()));
            event["after"] = json!(p.head_sha);
        }
        event
    }
}
