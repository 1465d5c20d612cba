//! The repository side of the GitHub stand-in: GitHub's Git Data and
//! contents endpoints over a real Git object store per repository
//! (`git_store.rs`; pull requests are in `github_pulls.rs`). Served, with
//! GitHub's answers and failures:
//!
//! - `POST/GET /repos/{o}/{r}/git/blobs[/{sha}]` (`utf-8` or `base64`;
//!   base64 content with line breaks; 403 `too_large` past the API limit)
//! - `POST/GET /repos/{o}/{r}/git/trees[/{sha}]` (entries with `sha` or
//!   `content`, nested paths, `sha: null` deletes, `base_tree`; GET takes a
//!   tree, a commit or a branch, `recursive`, `truncated` past the cap; 422
//!   "base_tree is not a valid tree oid", "tree.sha … is not a valid blob")
//! - `POST/GET /repos/{o}/{r}/git/commits[/{sha}]` (422 "Tree SHA does not
//!   exist", "Parent SHA does not exist or is not a commit object")
//! - `GET git/ref/{ref}`, `GET/PATCH/DELETE git/refs/{ref}`, `POST git/refs`
//!   (404 for a missing ref; 422 "Reference already exists", "Update is not
//!   a fast forward" unless `force`, "Reference does not exist", "Object
//!   does not exist")
//! - `GET /repos/{o}/{r}/contents/{path}?ref=` from the object store at any
//!   branch, `refs/...` name or commit sha (404 "No commit found for the
//!   ref …"; 404 for a missing path; a directory is a list; files over 1 MB
//!   come with `content: ""` and `encoding: "none"`; past 100 MB, 403
//!   `too_large`)
//!
//! A repository without any ref answers the Git Data API with 409 "Git
//! Repository is empty." as GitHub does. A token given `contents: read`
//! (a fork's pull request, a read-only workflow) gets 403 "Resource not
//! accessible by integration" on every write; one with `pull-requests: none`
//! on the pulls endpoints. The stand-in's faults and rate limits (checked
//! before any route) apply here as everywhere.

use std::collections::BTreeMap;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use serde_json::{Value, json};
use wiremock::Request;

use super::git_store::{
    Change, CommitInfo, Entry, Flat, Object, Signature, Store, github_base64, kind_of_mode, sorted,
};
use super::github_pulls::{Pull, pulls_route};
use super::github_standin::{GitHubStandIn, State, percent_decode};

/// An answer: status, JSON body, `Link` header.
pub(super) type Reply = (u16, Option<Value>, Option<String>);

/// What a token may do with contents and pull requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Access {
    None,
    Read,
    Write,
}

impl Access {
    fn parse(s: &str) -> Access {
        match s {
            "write" => Access::Write,
            "read" => Access::Read,
            "none" => Access::None,
            other => panic!("access must be none, read or write, not {other}"),
        }
    }
}

/// Another run's write, made just before the next write to a ref.
#[derive(Debug, Clone)]
struct Race {
    repo: String,
    branch: String,
    changes: Vec<Change>,
}

/// The repository state of the stand-in (kept in its `State`).
#[derive(Debug)]
pub struct GitState {
    pub(super) stores: BTreeMap<String, Store>,
    /// token → (contents, pull-requests); unknown tokens may write both.
    access: BTreeMap<String, (Access, Access)>,
    races: Vec<Race>,
    pub(super) pulls: BTreeMap<(String, u64), Pull>,
    /// GitHub lists at most 3,000 files of a pull request.
    pub(super) pull_files_cap: usize,
    /// A recursive tree lists at most this many entries (then `truncated`).
    tree_entries_cap: usize,
    /// Files up to this size come inline from the contents API.
    inline_max: usize,
    /// Blobs past this size are refused by the API (403 `too_large`).
    api_max: usize,
    /// (repo, path) → what the contents API answers for it at any commit.
    tampered: BTreeMap<(String, String), Vec<u8>>,
}

impl Default for GitState {
    fn default() -> Self {
        GitState {
            stores: BTreeMap::new(),
            access: BTreeMap::new(),
            races: Vec::new(),
            pulls: BTreeMap::new(),
            pull_files_cap: 3000,
            tree_entries_cap: 100_000,
            tampered: BTreeMap::new(),
            inline_max: 1024 * 1024,
            api_max: 100 * 1024 * 1024,
        }
    }
}

pub(super) fn error(status: u16, message: &str, doc: &str) -> Reply {
    (
        status,
        Some(json!({
            "message": message,
            "documentation_url": format!("https://docs.github.com/rest/{doc}"),
            "status": status.to_string()
        })),
        None,
    )
}

fn too_large(doc: &str) -> Reply {
    let (status, body, link) = error(
        403,
        "This API returns blobs up to 100 MB in size. The requested blob is too large to fetch via the API, but you can always clone the repository via Git in order to obtain this blob.",
        doc,
    );
    let mut body = body.unwrap();
    body["errors"] = json!([{ "resource": "Blob", "field": "data", "code": "too_large" }]);
    (status, Some(body), link)
}

fn token_of(req: &Request) -> String {
    let auth = req
        .headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    auth.trim_start_matches("Bearer ")
        .trim_start_matches("token ")
        .to_string()
}

fn is_sha(s: &str) -> bool {
    s.len() == 40 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Serves the repository endpoints; `None` for paths it does not own.
pub(super) fn route(
    st: &mut State,
    req: &Request,
    method: &str,
    segs: &[&str],
    body: &Value,
) -> Option<Reply> {
    let ["repos", o, r, area, rest @ ..] = segs else {
        return None;
    };
    if !matches!(*area, "git" | "contents" | "pulls") {
        return None;
    }
    let repo = format!("{o}/{r}");
    if !st.repos.contains_key(&repo) {
        return Some(error(404, "Not Found", "repos/repos#get-a-repository"));
    }
    let (contents, pulls) = st
        .git
        .access
        .get(&token_of(req))
        .copied()
        .unwrap_or((Access::Write, Access::Write));
    let needed = if method == "GET" {
        Access::Read
    } else {
        Access::Write
    };
    let granted = if *area == "pulls" { pulls } else { contents };
    if granted < needed {
        let doc = match *area {
            "pulls" => "pulls/pulls#get-a-pull-request",
            "contents" => "repos/contents#get-repository-content",
            _ => "git/blobs#create-a-blob",
        };
        return Some(error(403, "Resource not accessible by integration", doc));
    }
    let query: BTreeMap<String, String> = req.url.query_pairs().into_owned().collect();
    let base = st.base.clone();
    Some(match *area {
        "git" => git_route(st, &base, &repo, method, rest, body, &query),
        "contents" => contents_route(&st.git, &base, &repo, method, rest, &query),
        _ => pulls_route(st, &base, &repo, method, rest, &query),
    })
}

fn blob_json(base: &str, repo: &str, sha: &str, bytes: &[u8]) -> Value {
    json!({
        "sha": sha,
        "node_id": format!("B_kwDO{}", &sha[..12]),
        "size": bytes.len(),
        "url": format!("{base}/repos/{repo}/git/blobs/{sha}"),
        "content": github_base64(bytes),
        "encoding": "base64"
    })
}

fn tree_json(
    store: &Store,
    base: &str,
    repo: &str,
    sha: &str,
    recursive: bool,
    cap: usize,
) -> Value {
    let mut items = Vec::new();
    let mut todo = vec![(sha.to_string(), String::new())];
    while let Some((tree, prefix)) = todo.pop() {
        for e in sorted(&store.tree(&tree).cloned().unwrap_or_default()) {
            let path = format!("{prefix}{}", e.name);
            let kind = kind_of_mode(&e.mode);
            let mut item = json!({
                "path": path, "mode": e.mode, "type": kind, "sha": e.sha,
                "url": format!("{base}/repos/{repo}/git/{}s/{}", if kind == "tree" { "tree" } else { "blob" }, e.sha)
            });
            if kind == "blob" {
                item["size"] = json!(store.blob(&e.sha).map_or(0, Vec::len));
            }
            if kind == "commit" {
                item.as_object_mut().unwrap().remove("url");
            }
            items.push(item);
            if recursive && kind == "tree" {
                todo.push((e.sha.clone(), format!("{path}/")));
            }
        }
    }
    let truncated = items.len() > cap;
    items.truncate(cap);
    json!({
        "sha": sha,
        "url": format!("{base}/repos/{repo}/git/trees/{sha}"),
        "tree": items,
        "truncated": truncated
    })
}

fn commit_json(base: &str, repo: &str, sha: &str, c: &CommitInfo) -> Value {
    json!({
        "sha": sha,
        "node_id": format!("C_kwDO{}", &sha[..12]),
        "url": format!("{base}/repos/{repo}/git/commits/{sha}"),
        "html_url": format!("https://github.com/{repo}/commit/{sha}"),
        "author": c.author.json(),
        "committer": c.committer.json(),
        "tree": { "sha": c.tree, "url": format!("{base}/repos/{repo}/git/trees/{}", c.tree) },
        "message": c.message,
        "parents": c.parents.iter().map(|p| json!({
            "sha": p,
            "url": format!("{base}/repos/{repo}/git/commits/{p}"),
            "html_url": format!("https://github.com/{repo}/commit/{p}")
        })).collect::<Vec<_>>(),
        "verification": { "verified": false, "reason": "unsigned", "signature": null, "payload": null, "verified_at": null }
    })
}

fn ref_json(base: &str, repo: &str, name: &str, sha: &str) -> Value {
    json!({
        "ref": name,
        "node_id": format!("REF_kwDO{}", name.len()),
        "url": format!("{base}/repos/{repo}/git/{name}"),
        "object": { "type": "commit", "sha": sha, "url": format!("{base}/repos/{repo}/git/commits/{sha}") }
    })
}

#[allow(clippy::too_many_arguments)]
fn git_route(
    st: &mut State,
    base: &str,
    repo: &str,
    method: &str,
    rest: &[&str],
    body: &Value,
    query: &BTreeMap<String, String>,
) -> Reply {
    let app = st.app_login.clone();
    let git = &mut st.git;
    // Another run's write lands just before this one's ref write.
    let ref_target = match (method, rest) {
        ("POST", ["refs"]) => body.get("ref").and_then(Value::as_str).map(str::to_string),
        ("PATCH", ["refs", name @ ..]) => Some(format!("refs/{}", name.join("/"))),
        _ => None,
    };
    if let Some(target) = ref_target
        && let Some(pos) = git
            .races
            .iter()
            .position(|r| r.repo == repo && format!("refs/heads/{}", r.branch) == target)
    {
        let race = git.races.remove(pos);
        let store = git.stores.entry(repo.to_string()).or_default();
        store.commit_to_branch(
            &race.branch,
            &race.changes,
            "another run's files",
            "other-run[bot]",
        );
    }
    let (api_max, cap) = (git.api_max, git.tree_entries_cap);
    let store = git.stores.entry(repo.to_string()).or_default();
    if store.refs.is_empty() {
        return error(409, "Git Repository is empty.", "git");
    }
    let invalid = |message: &str, doc: &str| error(422, message, doc);
    match (method, rest) {
        ("POST", ["blobs"]) => {
            let Some(content) = body.get("content").and_then(Value::as_str) else {
                return invalid(
                    "Invalid request.\n\n\"content\" wasn't supplied.",
                    "git/blobs#create-a-blob",
                );
            };
            let bytes = match body
                .get("encoding")
                .and_then(Value::as_str)
                .unwrap_or("utf-8")
            {
                "utf-8" => content.as_bytes().to_vec(),
                "base64" => {
                    let compact: String = content
                        .chars()
                        .filter(|c| !c.is_ascii_whitespace())
                        .collect();
                    match B64.decode(compact) {
                        Ok(b) => b,
                        Err(_) => {
                            return invalid("Problems parsing JSON", "git/blobs#create-a-blob");
                        }
                    }
                }
                _ => return invalid("Validation Failed", "git/blobs#create-a-blob"),
            };
            let sha = store.put(Object::Blob(bytes));
            store.writes += 1;
            (
                201,
                Some(json!({ "url": format!("{base}/repos/{repo}/git/blobs/{sha}"), "sha": sha })),
                None,
            )
        }
        ("GET", ["blobs", sha]) => match store.blob(sha) {
            Some(b) if b.len() > api_max => too_large("git/blobs#get-a-blob"),
            Some(b) => (200, Some(blob_json(base, repo, sha, b)), None),
            None => error(404, "Not Found", "git/blobs#get-a-blob"),
        },
        ("POST", ["trees"]) => create_tree(store, base, repo, body),
        ("GET", ["trees", rev @ ..]) => {
            let rev = percent_decode(&rev.join("/"));
            let tree = if store.tree(&rev).is_some() {
                Some(rev)
            } else {
                store
                    .resolve(&rev)
                    .and_then(|c| store.commit(&c).map(|c| c.tree.clone()))
            };
            match tree {
                Some(t) => (
                    200,
                    Some(tree_json(
                        store,
                        base,
                        repo,
                        &t,
                        query.contains_key("recursive"),
                        cap,
                    )),
                    None,
                ),
                None => error(404, "Not Found", "git/trees#get-a-tree"),
            }
        }
        ("POST", ["commits"]) => {
            let doc = "git/commits#create-a-commit";
            let Some(message) = body.get("message").and_then(Value::as_str) else {
                return invalid("Invalid request.\n\n\"message\" wasn't supplied.", doc);
            };
            let tree = body.get("tree").and_then(Value::as_str).unwrap_or("");
            if store.tree(tree).is_none() {
                return invalid("Tree SHA does not exist", doc);
            }
            let parents: Vec<String> = body
                .get("parents")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default();
            if parents.iter().any(|p| store.commit(p).is_none()) {
                return invalid("Parent SHA does not exist or is not a commit object", doc);
            }
            let sig = |field: &str| match body.get(field) {
                Some(s) if s.is_object() => Signature {
                    name: s
                        .get("name")
                        .and_then(Value::as_str)
                        .unwrap_or(&app)
                        .to_string(),
                    email: s
                        .get("email")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                    time: s
                        .get("date")
                        .and_then(Value::as_str)
                        .and_then(|d| chrono::DateTime::parse_from_rfc3339(d).ok())
                        .map_or_else(|| chrono::Utc::now().timestamp(), |d| d.timestamp()),
                },
                _ => Signature::of(&app),
            };
            let author = sig("author");
            let committer = if body.get("committer").is_some() {
                sig("committer")
            } else {
                author.clone()
            };
            let c = CommitInfo {
                tree: tree.to_string(),
                parents,
                author,
                committer,
                message: message.to_string(),
            };
            let sha = store.put(Object::Commit(c.clone()));
            store.writes += 1;
            (201, Some(commit_json(base, repo, &sha, &c)), None)
        }
        ("GET", ["commits", sha]) => match store.commit(sha) {
            Some(c) => (200, Some(commit_json(base, repo, sha, c)), None),
            None => error(404, "Not Found", "git/commits#get-a-commit-object"),
        },
        ("GET", ["ref" | "refs", name @ ..]) if !name.is_empty() => {
            let name = format!("refs/{}", percent_decode(&name.join("/")));
            match store.refs.get(&name) {
                Some(sha) => (200, Some(ref_json(base, repo, &name, sha)), None),
                None => error(404, "Not Found", "git/refs#get-a-reference"),
            }
        }
        ("POST", ["refs"]) => {
            let doc = "git/refs#create-a-reference";
            let name = body.get("ref").and_then(Value::as_str).unwrap_or("");
            let sha = body.get("sha").and_then(Value::as_str).unwrap_or("");
            if !name.starts_with("refs/") || name.matches('/').count() < 2 {
                return invalid(
                    "Reference name must start with 'refs/' and have at least two slashes.",
                    doc,
                );
            }
            if store.commit(sha).is_none() {
                return invalid("Object does not exist", doc);
            }
            if store.refs.contains_key(name) {
                return invalid("Reference already exists", doc);
            }
            store.refs.insert(name.to_string(), sha.to_string());
            store.writes += 1;
            (201, Some(ref_json(base, repo, name, sha)), None)
        }
        ("PATCH", ["refs", name @ ..]) => {
            let doc = "git/refs#update-a-reference";
            let name = format!("refs/{}", percent_decode(&name.join("/")));
            let sha = body.get("sha").and_then(Value::as_str).unwrap_or("");
            let force = body.get("force").and_then(Value::as_bool).unwrap_or(false);
            let Some(current) = store.refs.get(&name).cloned() else {
                return invalid("Reference does not exist", doc);
            };
            if store.commit(sha).is_none() {
                return invalid("Object does not exist", doc);
            }
            if !force && !store.is_ancestor(&current, sha) {
                return invalid("Update is not a fast forward", doc);
            }
            store.refs.insert(name.clone(), sha.to_string());
            store.writes += 1;
            (200, Some(ref_json(base, repo, &name, sha)), None)
        }
        ("DELETE", ["refs", name @ ..]) => {
            let name = format!("refs/{}", percent_decode(&name.join("/")));
            if store.refs.remove(&name).is_none() {
                return invalid("Reference does not exist", "git/refs#delete-a-reference");
            }
            store.writes += 1;
            (204, None, None)
        }
        _ => error(404, "Not Found", "git"),
    }
}

/// `POST /git/trees`: entries on `base_tree` (or on nothing).
fn create_tree(store: &mut Store, base: &str, repo: &str, body: &Value) -> Reply {
    let doc = "git/trees#create-a-tree";
    let invalid = |message: String| error(422, &message, doc);
    let Some(items) = body.get("tree").and_then(Value::as_array) else {
        return invalid("Invalid request.\n\n\"tree\" wasn't supplied.".into());
    };
    let mut flat = match body.get("base_tree").and_then(Value::as_str) {
        Some(t) if store.tree(t).is_some() => store.flatten(t),
        Some(_) => return invalid("base_tree is not a valid tree oid".into()),
        None => Flat::new(),
    };
    for item in items {
        let path = item.get("path").and_then(Value::as_str).unwrap_or("");
        let mode = item.get("mode").and_then(Value::as_str).unwrap_or("");
        let kind = item.get("type").and_then(Value::as_str).unwrap_or("");
        if path.is_empty()
            || path.starts_with('/')
            || path
                .split('/')
                .any(|p| p.is_empty() || p == "." || p == "..")
        {
            return invalid(format!(
                "tree.path {path:?} contains a malformed path component"
            ));
        }
        if !["100644", "100755", "040000", "160000", "120000"].contains(&mode)
            || kind_of_mode(mode) != kind
        {
            return invalid(format!(
                "tree.mode {mode:?} and tree.type {kind:?} do not match or are not valid"
            ));
        }
        let sha = item.get("sha");
        let content = item.get("content").and_then(Value::as_str);
        if sha.is_some_and(|s| !s.is_null()) && content.is_some() {
            return invalid("Must supply either tree.sha or tree.content. Request will be rejected if both are present.".into());
        }
        let under = format!("{path}/");
        let had = flat.remove(path).is_some() | {
            let before = flat.len();
            flat.retain(|p, _| !p.starts_with(&under));
            flat.len() != before
        };
        match (sha, content) {
            (Some(Value::Null), _) => {
                if !had {
                    return invalid(format!(
                        "tree.path {path:?} does not exist and cannot be deleted"
                    ));
                }
            }
            (_, Some(text)) => {
                let sha = store.put(Object::Blob(text.as_bytes().to_vec()));
                flat.insert(path.to_string(), (mode.to_string(), sha));
            }
            (Some(Value::String(sha)), None) => match kind {
                "blob" if store.blob(sha).is_some() => {
                    flat.insert(path.to_string(), (mode.to_string(), sha.clone()));
                }
                "tree" if store.tree(sha).is_some() => {
                    for (p, e) in store.flatten(sha) {
                        flat.insert(format!("{under}{p}"), e);
                    }
                }
                "commit" if is_sha(sha) => {
                    flat.insert(path.to_string(), (mode.to_string(), sha.clone()));
                }
                _ => return invalid(format!("tree.sha {sha} is not a valid {kind}")),
            },
            _ => return invalid("Must supply either tree.sha or tree.content.".into()),
        }
    }
    let sha = store.build_tree(&flat);
    store.writes += 1;
    (
        201,
        Some(tree_json(store, base, repo, &sha, false, usize::MAX)),
        None,
    )
}

fn content_item(
    base: &str,
    repo: &str,
    reference: &str,
    path: &str,
    kind: &str,
    sha: &str,
    size: usize,
) -> Value {
    let self_url = format!("{base}/repos/{repo}/contents/{path}?ref={reference}");
    let git_url = format!(
        "{base}/repos/{repo}/git/{}s/{sha}",
        if kind == "dir" { "tree" } else { "blob" }
    );
    let html_url = format!(
        "https://github.com/{repo}/{}/{reference}/{path}",
        if kind == "dir" { "tree" } else { "blob" }
    );
    json!({
        "type": kind,
        "size": size,
        "name": path.rsplit('/').next().unwrap_or(path),
        "path": path,
        "sha": sha,
        "url": self_url,
        "git_url": git_url,
        "html_url": html_url,
        "download_url": if kind == "file" { json!(format!("https://raw.githubusercontent.com/{repo}/{reference}/{path}")) } else { Value::Null },
        "_links": { "self": self_url, "git": git_url, "html": html_url }
    })
}

/// `GET /contents/{path}?ref=` from the object store.
fn contents_route(
    git: &GitState,
    base: &str,
    repo: &str,
    method: &str,
    rest: &[&str],
    query: &BTreeMap<String, String>,
) -> Reply {
    let doc = "repos/contents#get-repository-content";
    if method != "GET" {
        return error(404, "Not Found", doc);
    }
    let Some(store) = git.stores.get(repo).filter(|s| !s.refs.is_empty()) else {
        return error(404, "This repository is empty.", doc);
    };
    let reference = query
        .get("ref")
        .cloned()
        .or_else(|| store.default_branch.clone())
        .unwrap_or_default();
    let Some(commit) = store.resolve(&reference) else {
        return error(
            404,
            &format!("No commit found for the ref {reference}"),
            doc,
        );
    };
    let path = percent_decode(&rest.join("/"))
        .trim_matches('/')
        .to_string();
    let mut tree = store
        .commit(&commit)
        .map(|c| c.tree.clone())
        .unwrap_or_default();
    let mut found: Option<Entry> = None;
    if !path.is_empty() {
        for (i, part) in path.split('/').enumerate() {
            if i > 0 {
                match &found {
                    Some(e) if e.mode == "040000" => tree = e.sha.clone(),
                    _ => return error(404, "Not Found", doc),
                }
            }
            found = store
                .tree(&tree)
                .and_then(|t| t.iter().find(|e| e.name == part).cloned());
            if found.is_none() {
                return error(404, "Not Found", doc);
            }
        }
    }
    let listing = |tree: &str, prefix: &str| {
        let items: Vec<Value> = sorted(&store.tree(tree).cloned().unwrap_or_default())
            .iter()
            .map(|e| {
                let p = format!("{prefix}{}", e.name);
                let (kind, size) = match e.mode.as_str() {
                    "040000" => ("dir", 0),
                    "160000" => ("file", 0),
                    "120000" => ("symlink", store.blob(&e.sha).map_or(0, Vec::len)),
                    _ => ("file", store.blob(&e.sha).map_or(0, Vec::len)),
                };
                content_item(base, repo, &reference, &p, kind, &e.sha, size)
            })
            .collect();
        (200, Some(Value::Array(items)), None)
    };
    let Some(entry) = found else {
        return listing(&tree, "");
    };
    match entry.mode.as_str() {
        "040000" => listing(&entry.sha, &format!("{path}/")),
        "160000" => {
            let mut v = content_item(base, repo, &reference, &path, "submodule", &entry.sha, 0);
            v["submodule_git_url"] = json!(null);
            (200, Some(v), None)
        }
        mode => {
            let bytes = match git.tampered.get(&(repo.to_string(), path.clone())) {
                Some(b) => b.clone(),
                None => store.blob(&entry.sha).cloned().unwrap_or_default(),
            };
            if bytes.len() > git.api_max {
                return too_large(doc);
            }
            let kind = if mode == "120000" { "symlink" } else { "file" };
            let mut v = content_item(base, repo, &reference, &path, kind, &entry.sha, bytes.len());
            if kind == "symlink" {
                v["target"] = json!(String::from_utf8_lossy(&bytes));
            } else if bytes.len() <= git.inline_max {
                v["content"] = json!(github_base64(&bytes));
                v["encoding"] = json!("base64");
            } else {
                v["content"] = json!("");
                v["encoding"] = json!("none");
            }
            (200, Some(v), None)
        }
    }
}

impl GitHubStandIn {
    fn with_store<T>(&self, repo: &str, f: impl FnOnce(&mut Store) -> T) -> T {
        let mut st = self.st();
        assert!(st.repos.contains_key(repo), "add_repo({repo}) first");
        f(st.git.stores.entry(repo.to_string()).or_default())
    }

    /// Commits `changes` on top of `branch` (creating it, as an orphan, if
    /// needed) as if pushed; returns the commit sha. The first branch made is
    /// the repository's default branch.
    pub fn push_changes(
        &self,
        repo: &str,
        branch: &str,
        changes: &[Change],
        message: &str,
    ) -> String {
        self.with_store(repo, |s| {
            s.commit_to_branch(branch, changes, message, "octocat")
        })
    }

    /// Seeds `branch` with `files` (added on top of what it has); returns the commit sha.
    pub fn seed_branch(&self, repo: &str, branch: &str, files: &[(&str, &[u8])]) -> String {
        let changes: Vec<Change> = files.iter().map(|(p, b)| Change::put(p, b)).collect();
        self.push_changes(repo, branch, &changes, "seed")
    }

    /// The commit a branch points at.
    pub fn branch_sha(&self, repo: &str, branch: &str) -> Option<String> {
        self.with_store(repo, |s| {
            s.refs.get(&format!("refs/heads/{branch}")).cloned()
        })
    }

    /// Every file at `rev` (a branch, ref name or commit sha), by path; panics
    /// when `rev` names no commit.
    pub fn files_at(&self, repo: &str, rev: &str) -> BTreeMap<String, Vec<u8>> {
        self.with_store(repo, |s| {
            let commit = s
                .resolve(rev)
                .unwrap_or_else(|| panic!("no commit {rev} in {repo}"));
            let tree = s.commit(&commit).unwrap().tree.clone();
            s.flatten(&tree)
                .into_iter()
                .map(|(p, (_, sha))| (p, s.blob(&sha).cloned().unwrap_or_default()))
                .collect()
        })
    }

    /// A stored commit.
    pub fn commit_info(&self, repo: &str, sha: &str) -> Option<CommitInfo> {
        self.with_store(repo, |s| s.commit(sha).cloned())
    }

    /// How many objects the repository holds.
    pub fn object_count(&self, repo: &str) -> usize {
        self.with_store(repo, |s| s.objects.len())
    }

    /// How many writes (blobs, trees, commits, refs) succeeded through the API.
    pub fn git_writes(&self, repo: &str) -> usize {
        self.with_store(repo, |s| s.writes)
    }

    /// What `token` may do: `contents` and `pull_requests` each `none`,
    /// `read` or `write` (a fork's pull request gets `read`, `read`). Tokens
    /// not set may do everything.
    pub fn set_token_access(&self, token: &str, contents: &str, pull_requests: &str) {
        self.st().git.access.insert(
            token.to_string(),
            (Access::parse(contents), Access::parse(pull_requests)),
        );
    }

    /// Another run commits `files` to `branch` just before the next request
    /// that creates or moves that branch (so that request no longer
    /// fast-forwards, or finds the branch already there).
    pub fn race_next_ref_write(&self, repo: &str, branch: &str, files: &[(&str, &[u8])]) {
        self.st().git.races.push(Race {
            repo: repo.to_string(),
            branch: branch.to_string(),
            changes: files.iter().map(|(p, b)| Change::put(p, b)).collect(),
        });
    }

    /// Caps the files listed for a pull request (GitHub: 3,000).
    pub fn set_pull_files_cap(&self, n: usize) {
        self.st().git.pull_files_cap = n;
    }

    /// Caps the entries of a recursive tree (then `truncated: true`).
    pub fn set_tree_entries_cap(&self, n: usize) {
        self.st().git.tree_entries_cap = n;
    }

    /// From now on the contents API answers `bytes` for `path` at every
    /// commit (a file changed behind the bot's back); `None` undoes it.
    pub fn tamper_file(&self, repo: &str, path: &str, bytes: Option<&[u8]>) {
        let key = (repo.to_string(), path.to_string());
        let mut st = self.st();
        match bytes {
            Some(b) => st.git.tampered.insert(key, b.to_vec()),
            None => st.git.tampered.remove(&key),
        };
    }

    /// The contents API's limits: inline up to `inline_max` bytes (GitHub: 1
    /// MB), refused past `api_max` (GitHub: 100 MB).
    pub fn set_contents_limits(&self, inline_max: usize, api_max: usize) {
        let mut st = self.st();
        st.git.inline_max = inline_max;
        st.git.api_max = api_max;
    }
}
