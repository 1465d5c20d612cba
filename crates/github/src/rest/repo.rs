//! The repository's files through the REST API: reading a file at a ref
//! (the contents API, with the Git Data API for files over 1 MB), a pull
//! request and the files it changes, and committing files to a branch
//! through the Git Data API (blobs, a tree, a commit, a fast-forward of the
//! ref).
//!
//! Every call goes through [`GitHub`]'s one request path: retries on 5xx and
//! connection errors, rate limits waited out within the run's budget, and
//! errors that name the `permissions:` a workflow token needs.
//!
//! What GitHub documents and this module handles:
//!
//! - `GET /git/ref/heads/{branch}` answers 404 for a branch that does not
//!   exist (then the first commit is an orphan and `POST /git/refs` creates
//!   the branch) and 409 "Git Repository is empty." in a repository without
//!   any commit (the Git Data API cannot write there).
//! - `PATCH /git/refs/heads/{branch}` without `force` answers 422 "Update is
//!   not a fast forward" when the branch moved (another run wrote); `POST
//!   /git/refs` answers 422 "Reference already exists" when another run
//!   created the branch first. Both are answered by rebuilding the commit on
//!   the new head, a bounded number of times.
//! - Every write answers 403 "Resource not accessible by integration" to a
//!   token without `contents: write` (pull requests from forks, read-only
//!   workflow tokens): [`GitWriteError::NoPermission`].
//! - The contents API sends files up to 1 MB inline (base64, with line
//!   breaks); for 1–100 MB it sends an empty `content` with `encoding:
//!   "none"`, and the blob is read by its sha; past 100 MB it answers 403
//!   `too_large`. The caller's size cap is checked before any content is
//!   read.
//! - The list of a pull request's files holds at most 3,000 files
//!   ([`PullFiles::truncated`]).

use std::collections::BTreeSet;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use octocrab::Page;
use serde_json::{Value, json};
use tracing::{debug, warn};

use crate::rest::client::{GitHub, GitHubError, Need, encode_segment};

/// How many times a write is rebuilt on a branch head that moved.
const WRITE_TRIES: u32 = 5;

/// GitHub lists at most this many files of a pull request.
const PULL_FILES_MAX: usize = 3000;

/// Page size for the pull request's files (GitHub's maximum).
const PER_PAGE: &str = "100";

/// A commit written by [`GitHub::commit_files`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitRef {
    /// The commit's sha (pin links to it: `blob/<sha>/<path>` never moves).
    pub sha: String,
    /// The branch that now points at it.
    pub branch: String,
    /// The head it was built on; `None` when it created the branch.
    pub parent: Option<String>,
    /// The sha of its tree.
    pub tree: String,
    /// The repository paths of the files written, in the order given.
    pub paths: Vec<String>,
    /// How many times it was built (more than 1 when the branch moved).
    pub tries: u32,
}

/// Why [`GitHub::commit_files`] wrote nothing. Never contains the token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GitWriteError {
    /// The token may not write to the repository (HTTP 403).
    #[error(
        "committing files to branch `{branch}` of {repo} was refused: the workflow token cannot write to the repository (GitHub answered HTTP 403: {message}). Give the job `permissions: contents: write` in the workflow file; a pull request from a fork always runs with a read-only token, so there the files can only be kept as the run's artifact."
    )]
    NoPermission {
        /// The branch.
        branch: String,
        /// `owner/name`.
        repo: String,
        /// GitHub's message.
        message: String,
    },
    /// The repository has no commit yet (HTTP 409): the Git Data API cannot write there.
    #[error(
        "committing files to branch `{branch}` of {repo} failed: the repository has no commit yet (GitHub answered HTTP 409 \"Git Repository is empty.\"), and GitHub's Git Data API cannot write to an empty repository. Push a first commit (any file), then re-run the job."
    )]
    EmptyRepository {
        /// The branch.
        branch: String,
        /// `owner/name`.
        repo: String,
    },
    /// Other runs kept moving the branch; every try was rebuilt on the new head.
    #[error(
        "committing files to branch `{branch}` failed: the branch moved {tries} times while this run was writing (other runs writing to it at the same time); nothing of this run was committed. Re-run the job."
    )]
    Contended {
        /// The branch.
        branch: String,
        /// How many times the commit was built.
        tries: u32,
    },
    /// A branch, folder or file name that cannot be written (nothing was sent).
    #[error("cannot commit `{path}`: {reason}")]
    BadPath {
        /// The name as given.
        path: String,
        /// What is wrong with it and what to do.
        reason: String,
    },
    /// Any other failure (transport, rate limit past the budget, 5xx after retries, ...).
    #[error(transparent)]
    Failed(GitHubError),
}

impl GitWriteError {
    /// True when the token lacks `contents: write`: the caller should say so
    /// and keep the files elsewhere (retrying cannot help).
    pub fn is_permission(&self) -> bool {
        matches!(self, GitWriteError::NoPermission { .. })
    }
}

/// Why [`GitHub::file_at`] could not read a file. Never contains the token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReadError {
    /// The file is larger than the caller's cap (or than GitHub's API serves).
    #[error(
        "`{path}` at `{reference}` is {} which is more than {cap} bytes allowed; it was not read. Raise the limit or make the file smaller.", size.map_or("too large for GitHub's API (over 100 MB)".to_string(), |s| format!("{s} bytes"))
    )]
    TooLarge {
        /// The path.
        path: String,
        /// The ref it was read at.
        reference: String,
        /// Its size, when GitHub said.
        size: Option<u64>,
        /// The cap.
        cap: u64,
    },
    /// The path is a directory, symlink or submodule.
    #[error("`{path}` at `{reference}` is a {kind}, not a file; name a file.")]
    NotAFile {
        /// The path.
        path: String,
        /// The ref it was read at.
        reference: String,
        /// `dir`, `symlink`, `submodule`.
        kind: String,
    },
    /// The ref names no commit of the repository.
    #[error(
        "`{reference}` is not a branch, tag or commit of {repo} (GitHub: \"{message}\"); check the name or sha."
    )]
    NoSuchRef {
        /// The ref as given.
        reference: String,
        /// `owner/name`.
        repo: String,
        /// GitHub's message.
        message: String,
    },
    /// Any other failure.
    #[error(transparent)]
    Failed(GitHubError),
}

/// A pull request as the bot needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullRequest {
    /// Its number.
    pub number: u64,
    /// `open` or `closed`.
    pub state: String,
    /// The branch it merges into.
    pub base_ref: String,
    /// The base branch's commit GitHub compares against.
    pub base_sha: String,
    /// `owner/name` of the base repository.
    pub base_repo: String,
    /// The branch with the changes.
    pub head_ref: String,
    /// The head commit.
    pub head_sha: String,
    /// `owner/name` of the head repository; `None` when the fork was deleted.
    pub head_repo: Option<String>,
    /// How many files GitHub counts as changed.
    pub changed_files: u64,
}

impl PullRequest {
    /// True when the head lives in another repository (a fork, or a deleted
    /// one): its workflow token is read-only and its files are data only.
    pub fn is_fork(&self) -> bool {
        self.head_repo
            .as_deref()
            .is_none_or(|h| !h.eq_ignore_ascii_case(&self.base_repo))
    }
}

/// What a pull request does to a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileStatus {
    /// New in the head.
    Added,
    /// Deleted in the head.
    Removed,
    /// Changed content.
    Modified,
    /// Moved (see [`PullFile::previous_filename`]), maybe changed too.
    Renamed,
    /// Copied from another file.
    Copied,
    /// Mode changed only.
    Changed,
    /// Listed without a change.
    Unchanged,
    /// A status GitHub added later, as sent.
    Other(String),
}

impl FileStatus {
    fn parse(s: &str) -> FileStatus {
        match s {
            "added" => FileStatus::Added,
            "removed" => FileStatus::Removed,
            "modified" => FileStatus::Modified,
            "renamed" => FileStatus::Renamed,
            "copied" => FileStatus::Copied,
            "changed" => FileStatus::Changed,
            "unchanged" => FileStatus::Unchanged,
            other => FileStatus::Other(other.to_string()),
        }
    }
}

/// One file a pull request changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullFile {
    /// Its path in the head (for a removed file, the path it had).
    pub filename: String,
    /// What the pull request does to it.
    pub status: FileStatus,
    /// The path in the base, for a renamed or copied file.
    pub previous_filename: Option<String>,
}

/// The files a pull request changes, from every page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullFiles {
    /// The files, in GitHub's order.
    pub files: Vec<PullFile>,
    /// True when GitHub's cap of 3,000 files was reached: more files may have
    /// changed than are listed, so treat every input as possibly changed.
    pub truncated: bool,
}

impl PullFiles {
    /// True when the pull request touches `path` in the base or the head
    /// (a rename touches both names).
    pub fn touches(&self, path: &str) -> bool {
        self.files
            .iter()
            .any(|f| f.filename == path || f.previous_filename.as_deref() == Some(path))
    }
}

/// Checks a branch name the way `git check-ref-format --branch` would.
fn check_branch(branch: &str) -> Result<(), GitWriteError> {
    let bad = |reason: &str| {
        Err(GitWriteError::BadPath {
            path: branch.to_string(),
            reason: format!("{reason}; choose another branch name in the policy"),
        })
    };
    if branch.is_empty() {
        return bad("the branch name is empty");
    }
    if branch.starts_with('-') || branch.starts_with('/') || branch.ends_with('/') {
        return bad("a branch name cannot start with `-` or `/` or end with `/`");
    }
    if branch.contains("..")
        || branch.contains("//")
        || branch.contains("@{")
        || branch.ends_with(".lock")
        || branch.ends_with('.')
        || branch
            .chars()
            .any(|c| c.is_control() || " ~^:?*[\\".contains(c))
    {
        return bad(
            "a branch name cannot contain `..`, `//`, `@{`, spaces, control characters or any of `~^:?*[\\`, nor end with `.` or `.lock`",
        );
    }
    Ok(())
}

/// Checks one relative path (`a/b.png`): no empty, `.`, `..` or `.git` part,
/// no backslash or control character.
fn check_path(path: &str, what: &str) -> Result<(), GitWriteError> {
    let bad = |reason: String| {
        Err(GitWriteError::BadPath {
            path: path.to_string(),
            reason,
        })
    };
    if path.is_empty() {
        return bad(format!("the {what} is empty"));
    }
    for part in path.split('/') {
        if part.is_empty() || part == "." || part == ".." {
            return bad(format!(
                "the {what} must be a relative path without empty, `.` or `..` parts"
            ));
        }
        if part.eq_ignore_ascii_case(".git") {
            return bad(format!("the {what} cannot contain a `.git` part"));
        }
        if part.chars().any(|c| c.is_control() || c == '\\') {
            return bad(format!(
                "the {what} cannot contain a backslash or a control character"
            ));
        }
    }
    Ok(())
}

/// The repository paths of `files` under `folder`, checked, in order.
fn repo_paths<N: AsRef<str>>(folder: &str, names: &[N]) -> Result<Vec<String>, GitWriteError> {
    let folder = folder.trim_matches('/');
    if !folder.is_empty() {
        check_path(folder, "folder")?;
    }
    if names.is_empty() {
        return Err(GitWriteError::BadPath {
            path: folder.to_string(),
            reason: "no files to commit".to_string(),
        });
    }
    let mut seen = BTreeSet::new();
    let mut out = Vec::with_capacity(names.len());
    for name in names {
        let name = name.as_ref();
        check_path(name, "file name")?;
        let path = if folder.is_empty() {
            name.to_string()
        } else {
            format!("{folder}/{name}")
        };
        if !seen.insert(path.clone()) {
            return Err(GitWriteError::BadPath {
                path,
                reason: "the same file is named twice".to_string(),
            });
        }
        out.push(path);
    }
    Ok(out)
}

/// Percent-encodes each part of a `/`-separated path.
fn encode_path(path: &str) -> String {
    path.split('/')
        .map(encode_segment)
        .collect::<Vec<_>>()
        .join("/")
}

/// Base64 as GitHub sends it (with line breaks) to bytes.
fn decode_base64(text: &str) -> Result<Vec<u8>, String> {
    let compact: Vec<u8> = text.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    B64.decode(compact)
        .map_err(|e| format!("content is not base64: {e}"))
}

fn str_at<'a>(v: &'a Value, ptr: &str) -> Option<&'a str> {
    v.pointer(ptr).and_then(Value::as_str)
}

/// Reads a field GitHub always sends, or says which is missing.
fn need_str(v: &Value, ptr: &str, action: &str) -> Result<String, GitHubError> {
    str_at(v, ptr)
        .map(str::to_string)
        .ok_or_else(|| GitHubError::Decode {
            action: action.to_string(),
            message: format!("no `{ptr}` in the answer"),
        })
}

fn decode_err(action: &str, message: impl Into<String>) -> GitHubError {
    GitHubError::Decode {
        action: action.to_string(),
        message: message.into(),
    }
}

impl GitHub {
    /// `/repos/{owner}/{name}/{tail}`.
    fn repo_route(&self, tail: &str) -> String {
        let repo = self.repo_ref();
        format!(
            "/repos/{}/{}/{tail}",
            encode_segment(&repo.owner),
            encode_segment(&repo.name)
        )
    }

    async fn get_json(
        &self,
        action: &str,
        need: Need,
        route: &str,
        query: &[(&str, &str)],
    ) -> Result<Value, GitHubError> {
        self.call(action, need, || {
            self.crab().get::<Value, _, _>(route, Some(query))
        })
        .await
    }

    async fn post_json(
        &self,
        action: &str,
        route: &str,
        body: &Value,
    ) -> Result<Value, GitHubError> {
        self.call(action, Need::WriteContents, || {
            self.crab().post::<_, Value>(route, Some(body))
        })
        .await
    }

    /// Maps a failed write to what the caller acts on.
    fn write_error(&self, branch: &str, e: GitHubError) -> GitWriteError {
        match &e {
            GitHubError::Api {
                status: 403,
                message,
                ..
            } => GitWriteError::NoPermission {
                branch: branch.to_string(),
                repo: self.repo_ref().to_string(),
                message: message.clone(),
            },
            GitHubError::Api { status: 409, .. } => GitWriteError::EmptyRepository {
                branch: branch.to_string(),
                repo: self.repo_ref().to_string(),
            },
            _ => GitWriteError::Failed(e),
        }
    }

    /// The commit a branch points at; `None` when the branch does not exist.
    async fn branch_head(&self, branch: &str) -> Result<Option<String>, GitHubError> {
        let action = format!("reading branch `{branch}` of {}", self.repo_ref());
        let route = self.repo_route(&format!("git/ref/heads/{}", encode_path(branch)));
        match self
            .get_json(&action, Need::ReadContents, &route, &[])
            .await
        {
            Ok(v) => Ok(Some(need_str(&v, "/object/sha", &action)?)),
            Err(GitHubError::Api { status: 404, .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The tree of a commit.
    async fn commit_tree(&self, commit: &str) -> Result<String, GitHubError> {
        let action = format!("reading commit {commit} of {}", self.repo_ref());
        let route = self.repo_route(&format!("git/commits/{commit}"));
        let v = self
            .get_json(&action, Need::ReadContents, &route, &[])
            .await?;
        need_str(&v, "/tree/sha", &action)
    }

    /// Builds one commit of `entries` on `parent` (an orphan when `None`).
    async fn build_commit(
        &self,
        parent: Option<&str>,
        entries: &[Value],
        message: &str,
    ) -> Result<(String, String), GitHubError> {
        let mut body = json!({ "tree": entries });
        if let Some(parent) = parent {
            body["base_tree"] = json!(self.commit_tree(parent).await?);
        }
        let action = format!("creating a tree in {}", self.repo_ref());
        let tree = self
            .post_json(&action, &self.repo_route("git/trees"), &body)
            .await?;
        let tree = need_str(&tree, "/sha", &action)?;
        let action = format!("creating a commit in {}", self.repo_ref());
        let parents: Vec<&str> = parent.into_iter().collect();
        let commit = self
            .post_json(
                &action,
                &self.repo_route("git/commits"),
                &json!({ "message": message, "tree": tree, "parents": parents }),
            )
            .await?;
        Ok((need_str(&commit, "/sha", &action)?, tree))
    }

    /// Commits `files` under `folder` to `branch` and returns the commit.
    ///
    /// The files are added to the branch head's tree (files already there
    /// stay; a file of the same path is replaced), in a commit whose parent
    /// is the head, and the branch is fast-forwarded to it. A branch that
    /// does not exist is created with an orphan commit holding only these
    /// files. When another run moves or creates the branch in between
    /// (GitHub's 422), the commit is rebuilt on the new head, at most 5 times
    /// ([`GitWriteError::Contended`] then), so no run's files are lost.
    /// Names are checked before anything is sent; a token without `contents:
    /// write` gets [`GitWriteError::NoPermission`] and nothing is written.
    pub async fn commit_files<N, B>(
        &self,
        branch: &str,
        folder: &str,
        files: &[(N, B)],
        message: &str,
    ) -> Result<CommitRef, GitWriteError>
    where
        N: AsRef<str>,
        B: AsRef<[u8]>,
    {
        check_branch(branch)?;
        let names: Vec<&str> = files.iter().map(|(n, _)| n.as_ref()).collect();
        let paths = repo_paths(folder, &names)?;
        let err = |e| self.write_error(branch, e);
        let mut head = self.branch_head(branch).await.map_err(err)?;

        let mut entries = Vec::with_capacity(files.len());
        for (path, (_, bytes)) in paths.iter().zip(files) {
            let action = format!("uploading `{path}` to {}", self.repo_ref());
            let body = json!({ "content": B64.encode(bytes.as_ref()), "encoding": "base64" });
            let blob = self
                .post_json(&action, &self.repo_route("git/blobs"), &body)
                .await
                .map_err(err)?;
            let sha = need_str(&blob, "/sha", &action).map_err(err)?;
            entries.push(json!({ "path": path, "mode": "100644", "type": "blob", "sha": sha }));
        }

        for tries in 1..=WRITE_TRIES {
            let (commit, tree) = self
                .build_commit(head.as_deref(), &entries, message)
                .await
                .map_err(err)?;
            let written = match &head {
                Some(parent) => {
                    let action = format!(
                        "moving branch `{branch}` of {} from {parent} to {commit}",
                        self.repo_ref()
                    );
                    let route = self.repo_route(&format!("git/refs/heads/{}", encode_path(branch)));
                    let body = json!({ "sha": commit, "force": false });
                    self.call(&action, Need::WriteContents, || {
                        self.crab().patch::<Value, _, _>(&route, Some(&body))
                    })
                    .await
                }
                None => {
                    let action = format!("creating branch `{branch}` of {}", self.repo_ref());
                    let body = json!({ "ref": format!("refs/heads/{branch}"), "sha": commit });
                    self.post_json(&action, &self.repo_route("git/refs"), &body)
                        .await
                }
            };
            let done = CommitRef {
                sha: commit.clone(),
                branch: branch.to_string(),
                parent: head.clone(),
                tree,
                paths: paths.clone(),
                tries,
            };
            match written {
                Ok(_) => {
                    debug!(
                        "committed {} file(s) to `{branch}` as {commit}",
                        paths.len()
                    );
                    return Ok(done);
                }
                Err(e @ GitHubError::Api { status: 422, .. }) => {
                    // Moved or created by someone else (or our own earlier
                    // try landed although its answer was lost).
                    let now = self.branch_head(branch).await.map_err(err)?;
                    if now.as_deref() == Some(commit.as_str()) {
                        return Ok(done);
                    }
                    if now.is_none() || now == head {
                        return Err(GitWriteError::Failed(e));
                    }
                    warn!(
                        "branch `{branch}` moved to {} while writing (try {tries}/{WRITE_TRIES}); rebuilding on it",
                        now.as_deref().unwrap_or("?")
                    );
                    head = now;
                }
                Err(e) => return Err(err(e)),
            }
        }
        Err(GitWriteError::Contended {
            branch: branch.to_string(),
            tries: WRITE_TRIES,
        })
    }

    /// The bytes of `path` at `reference` (a branch, tag or commit sha), or
    /// `None` when the path does not exist there.
    ///
    /// Files up to 1 MB come inline from the contents API; larger ones (GitHub
    /// then sends no content) are read as a blob by their sha. A file over
    /// `max_bytes` is refused with [`ReadError::TooLarge`] before its content
    /// is requested.
    pub async fn file_at(
        &self,
        reference: &str,
        path: &str,
        max_bytes: u64,
    ) -> Result<Option<Vec<u8>>, ReadError> {
        let path = path.trim_matches('/');
        let action = format!("reading `{path}` at `{reference}` in {}", self.repo_ref());
        let v = match self.contents(&action, path, reference).await {
            Ok(Some(v)) => v,
            Ok(None) => return Ok(None),
            Err(ReadError::Failed(GitHubError::Api {
                status: 403,
                message,
                ..
            })) if message.to_ascii_lowercase().contains("too large") => {
                return Err(ReadError::TooLarge {
                    path: path.to_string(),
                    reference: reference.to_string(),
                    size: None,
                    cap: max_bytes,
                });
            }
            Err(e) => return Err(e),
        };
        let kind = if v.is_array() {
            "dir"
        } else {
            str_at(&v, "/type").unwrap_or("?")
        };
        if kind != "file" {
            return Err(ReadError::NotAFile {
                path: path.to_string(),
                reference: reference.to_string(),
                kind: kind.to_string(),
            });
        }
        let size = v
            .get("size")
            .and_then(Value::as_u64)
            .ok_or_else(|| ReadError::Failed(decode_err(&action, "no `size` in the answer")))?;
        if size > max_bytes {
            return Err(ReadError::TooLarge {
                path: path.to_string(),
                reference: reference.to_string(),
                size: Some(size),
                cap: max_bytes,
            });
        }
        let bytes = match (str_at(&v, "/encoding"), str_at(&v, "/content")) {
            (Some("base64"), Some(content)) => {
                decode_base64(content).map_err(|m| ReadError::Failed(decode_err(&action, m)))?
            }
            _ => {
                // Over 1 MB: `encoding: "none"` and no content; read the blob.
                let sha = need_str(&v, "/sha", &action).map_err(ReadError::Failed)?;
                debug!("{action}: {size} bytes, reading blob {sha}");
                self.blob(&sha).await.map_err(ReadError::Failed)?
            }
        };
        if bytes.len() as u64 != size {
            return Err(ReadError::Failed(decode_err(
                &action,
                format!("GitHub said {size} bytes and sent {}", bytes.len()),
            )));
        }
        Ok(Some(bytes))
    }

    /// The paths of the files directly in folder `dir` at `reference`
    /// (contents API listing), sorted; empty when the folder does not exist.
    pub async fn files_in(&self, reference: &str, dir: &str) -> Result<Vec<String>, ReadError> {
        let dir = dir.trim_matches('/');
        let action = format!("listing `{dir}` at `{reference}` in {}", self.repo_ref());
        let Some(v) = self.contents(&action, dir, reference).await? else {
            return Ok(Vec::new());
        };
        let Some(items) = v.as_array() else {
            warn!("{action}: it is a file, not a folder; no files in it");
            return Ok(Vec::new());
        };
        let mut paths: Vec<String> = items
            .iter()
            .filter(|i| str_at(i, "/type") == Some("file"))
            .filter_map(|i| str_at(i, "/path").map(str::to_string))
            .collect();
        paths.sort();
        Ok(paths)
    }

    /// `GET contents/{path}?ref={reference}`: the file's or folder's JSON,
    /// `None` when the path does not exist at that ref, [`ReadError::NoSuchRef`]
    /// when the ref itself does not, any other failure as
    /// [`ReadError::Failed`].
    async fn contents(
        &self,
        action: &str,
        path: &str,
        reference: &str,
    ) -> Result<Option<serde_json::Value>, ReadError> {
        let route = self.repo_route(&format!("contents/{}", encode_path(path)));
        match self
            .get_json(action, Need::ReadContents, &route, &[("ref", reference)])
            .await
        {
            Ok(v) => Ok(Some(v)),
            Err(GitHubError::Api {
                status: 404,
                message,
                ..
            }) if message.contains("No commit found") => Err(ReadError::NoSuchRef {
                reference: reference.to_string(),
                repo: self.repo_ref().to_string(),
                message,
            }),
            Err(GitHubError::Api { status: 404, .. }) => Ok(None),
            Err(e) => Err(ReadError::Failed(e)),
        }
    }

    /// The bytes of a blob (`GET /git/blobs/{sha}`, up to 100 MB).
    async fn blob(&self, sha: &str) -> Result<Vec<u8>, GitHubError> {
        let action = format!("reading blob {sha} of {}", self.repo_ref());
        let v = self
            .get_json(
                &action,
                Need::ReadContents,
                &self.repo_route(&format!("git/blobs/{sha}")),
                &[],
            )
            .await?;
        let content = need_str(&v, "/content", &action)?;
        decode_base64(&content).map_err(|m| decode_err(&action, m))
    }

    /// A pull request: its base and head branches and shas, and whether the
    /// head is in a fork.
    pub async fn pull_request(&self, number: u64) -> Result<PullRequest, GitHubError> {
        let action = format!("reading pull request #{number} of {}", self.repo_ref());
        let v = self
            .get_json(
                &action,
                Need::ReadPulls,
                &self.repo_route(&format!("pulls/{number}")),
                &[],
            )
            .await?;
        Ok(PullRequest {
            number,
            state: need_str(&v, "/state", &action)?,
            base_ref: need_str(&v, "/base/ref", &action)?,
            base_sha: need_str(&v, "/base/sha", &action)?,
            base_repo: need_str(&v, "/base/repo/full_name", &action)?,
            head_ref: need_str(&v, "/head/ref", &action)?,
            head_sha: need_str(&v, "/head/sha", &action)?,
            head_repo: str_at(&v, "/head/repo/full_name").map(str::to_string),
            changed_files: v
                .get("changed_files")
                .and_then(Value::as_u64)
                .unwrap_or_default(),
        })
    }

    /// Every file a pull request changes (all pages; GitHub lists at most
    /// 3,000, see [`PullFiles::truncated`]).
    pub async fn pull_request_files(&self, number: u64) -> Result<PullFiles, GitHubError> {
        let action = format!(
            "listing the files of pull request #{number} of {}",
            self.repo_ref()
        );
        let route = self.repo_route(&format!("pulls/{number}/files"));
        let mut page: Page<Value> = self
            .call(&action, Need::ReadPulls, || {
                self.crab()
                    .get::<Page<Value>, _, _>(&route, Some(&[("per_page", PER_PAGE)]))
            })
            .await?;
        let mut files = Vec::new();
        let mut pages = 1;
        loop {
            for item in page.take_items() {
                files.push(PullFile {
                    filename: need_str(&item, "/filename", &action)?,
                    status: FileStatus::parse(&need_str(&item, "/status", &action)?),
                    previous_filename: str_at(&item, "/previous_filename").map(str::to_string),
                });
            }
            let Some(next) = page.next.clone() else { break };
            pages += 1;
            if pages > PULL_FILES_MAX / 30 + 1 {
                warn!("{action}: stopping after {pages} pages");
                break;
            }
            let next = Some(next);
            match self
                .call(&action, Need::ReadPulls, || {
                    self.crab().get_page::<Value>(&next)
                })
                .await?
            {
                Some(p) => page = p,
                None => break,
            }
        }
        let truncated = files.len() >= PULL_FILES_MAX;
        if truncated {
            warn!("{action}: GitHub lists at most {PULL_FILES_MAX} files; more may have changed");
        }
        Ok(PullFiles { files, truncated })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_joined_and_checked() {
        assert_eq!(
            repo_paths("/runs/7-1/", &["a.png", "sub/b.csv"]).unwrap(),
            vec!["runs/7-1/a.png", "runs/7-1/sub/b.csv"]
        );
        assert_eq!(repo_paths("", &["a.png"]).unwrap(), vec!["a.png"]);
        for (folder, name) in [
            ("runs", "../x"),
            ("runs", "a//b"),
            ("runs/..", "x"),
            ("runs", ".git/config"),
            ("runs", "a\\b"),
            ("runs", ""),
            ("runs", "./a"),
        ] {
            let e = repo_paths(folder, &[name]).unwrap_err();
            assert!(
                matches!(e, GitWriteError::BadPath { .. }),
                "{folder} {name}"
            );
        }
        let e = repo_paths("runs", &["a", "a"]).unwrap_err();
        assert!(e.to_string().contains("named twice"), "{e}");
        let none: [&str; 0] = [];
        assert!(repo_paths("runs", &none).is_err());
    }

    #[test]
    fn branch_names_follow_git() {
        for ok in ["compute-bot-assets", "bots/assets", "a.b"] {
            check_branch(ok).unwrap();
        }
        for bad in [
            "", "-x", "a..b", "a b", "a~1", "x.lock", "a/", "/a", "a//b", "a@{1}", "a:b",
        ] {
            assert!(check_branch(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn base64_with_line_breaks_is_read() {
        assert_eq!(decode_base64("aGVs\nbG8=\n").unwrap(), b"hello");
        assert!(decode_base64("*").is_err());
    }

    #[test]
    fn forks_are_told_apart() {
        let mut pr = PullRequest {
            number: 1,
            state: "open".into(),
            base_ref: "main".into(),
            base_sha: "a".into(),
            base_repo: "o/r".into(),
            head_ref: "f".into(),
            head_sha: "b".into(),
            head_repo: Some("O/R".into()),
            changed_files: 1,
        };
        assert!(!pr.is_fork());
        pr.head_repo = Some("someone/r".into());
        assert!(pr.is_fork());
        pr.head_repo = None;
        assert!(pr.is_fork());
    }
}
