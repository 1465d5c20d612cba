//! The repository calls of the real client (`github::rest::repo`: commits through
//! the Git Data API, files at a ref, pull requests and their files) against
//! the stand-in's object store, and the stand-in itself against the real
//! `git` binary and GitHub's documented answers.

use std::path::Path;
use std::time::Duration;

use crate::support::git_store::{Change, blob_sha};
use crate::support::github_standin::GitHubStandIn;
use compute_bot::github::actions::event::{RepoRef, Secret};
use compute_bot::github::rest::client::{GitHub, RateLimits};
use compute_bot::github::rest::repo::{FileStatus, GitWriteError, ReadError};
use serde_json::{Value, json};

const REPO: &str = "octo-org/data";
const TOKEN: &str = "ghs_repo_token_0123456789";
const ASSETS: &str = "compute-bot-assets";
const MB: u64 = 1024 * 1024;

async fn setup() -> (GitHubStandIn, GitHub) {
    let gh = GitHubStandIn::start().await;
    gh.add_repo(REPO);
    gh.require_token(TOKEN);
    gh.seed_branch(REPO, "main", &[("README.md", b"# data\n")]);
    let client = GitHub::new(
        &gh.uri(),
        &Secret::new(TOKEN),
        RepoRef::parse(REPO, "test").unwrap(),
    )
    .unwrap()
    .with_retry(3, Duration::from_millis(10));
    (gh, client)
}

/// Bytes like a PNG's: every byte value, not UTF-8.
fn binary(seed: u8, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

fn names(files: &std::collections::BTreeMap<String, Vec<u8>>) -> Vec<&str> {
    files.keys().map(String::as_str).collect()
}

fn git(dir: &Path, args: &[&str], stdin: Option<&[u8]>) -> String {
    use std::io::Write as _;
    let mut child = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "Octo Cat")
        .env("GIT_AUTHOR_EMAIL", "octo@example.com")
        .env("GIT_AUTHOR_DATE", "@1700000000 +0000")
        .env("GIT_COMMITTER_NAME", "Octo Cat")
        .env("GIT_COMMITTER_EMAIL", "octo@example.com")
        .env("GIT_COMMITTER_DATE", "@1700000000 +0000")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("git runs");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.unwrap_or_default())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "git {args:?} failed");
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// Raw REST calls, to see the stand-in's answers as GitHub sends them.
struct Rest {
    client: reqwest::Client,
    base: String,
}

impl Rest {
    fn new(gh: &GitHubStandIn) -> Rest {
        Rest {
            client: reqwest::Client::new(),
            base: format!("{}/repos/{REPO}", gh.uri()),
        }
    }

    async fn call(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut req = self
            .client
            .request(method.parse().unwrap(), format!("{}/{path}", self.base))
            .bearer_auth(TOKEN);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await.unwrap();
        let status = resp.status().as_u16();
        let text = resp.text().await.unwrap();
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }
}

/// The stand-in names blobs, trees and commits exactly as the real `git`
/// binary does, so the same content gives the same id.
#[tokio::test]
async fn stand_in_object_ids_match_git() {
    let (gh, _) = setup().await;
    let rest = Rest::new(&gh);
    let dir = tempfile::tempdir().unwrap();
    git(dir.path(), &["init", "-q"], None);
    let big = binary(7, 70_000);
    for content in [&b""[..], b"hello\n", &big, "π ≈ 3.14159\n".as_bytes()] {
        let id = git(dir.path(), &["hash-object", "--stdin"], Some(content));
        assert_eq!(blob_sha(content), id, "{} bytes", content.len());
    }
    // A tree with subfolders and names that sort differently as trees
    // (`a.b` before `a/`, as Git orders them).
    let files: [(&str, &[u8]); 4] = [
        ("a.b", b"dot\n"),
        ("a/x.csv", b"x,y\n1,2\n"),
        ("a/z/deep.txt", b"deep\n"),
        ("b.png", &big),
    ];
    let sha = gh.seed_branch(REPO, "tree-check", &files);
    let ours = gh.commit_info(REPO, &sha).unwrap();
    for (path, bytes) in files {
        let p = dir.path().join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, bytes).unwrap();
    }
    git(dir.path(), &["add", "."], None);
    let (status, created) = rest
        .call(
            "POST",
            "git/trees",
            Some(json!({"tree": files.iter().map(|(p, b)| json!({
            "path": p, "mode": "100644", "type": "blob", "sha": blob_sha(b)
        })).collect::<Vec<_>>()})),
        )
        .await;
    assert_eq!(status, 201, "{created}");
    let tree = git(dir.path(), &["write-tree"], None);
    assert_eq!(created["sha"], tree);
    assert_eq!(ours.tree, tree, "a new branch starts from an orphan commit");
    // A commit with fixed author and committer.
    let (status, commit) = rest.call(
        "POST",
        "git/commits",
        Some(json!({
            "message": "runs/1\n", "tree": tree, "parents": [],
            "author": {"name": "Octo Cat", "email": "octo@example.com", "date": "2023-11-14T22:13:20Z"},
            "committer": {"name": "Octo Cat", "email": "octo@example.com", "date": "2023-11-14T22:13:20Z"}
        })),
    )
    .await;
    assert_eq!(status, 201, "{commit}");
    let id = git(dir.path(), &["commit-tree", &tree, "-m", "runs/1"], None);
    assert_eq!(commit["sha"], id);
}

/// The first write creates the branch with an orphan commit of only its files.
#[tokio::test]
async fn first_write_creates_an_orphan_branch() {
    let (gh, client) = setup().await;
    let main = gh.branch_sha(REPO, "main").unwrap();
    let png = binary(1, 4000);
    let c = client
        .commit_files(
            ASSETS,
            "runs/41-1",
            &[
                ("chart.png", png.clone()),
                ("by_day.csv", b"day,n\n1,2\n".to_vec()),
            ],
            "compute-bot: files of run 41-1",
        )
        .await
        .unwrap();
    assert_eq!(c.parent, None);
    assert_eq!(c.tries, 1);
    assert_eq!(c.paths, vec!["runs/41-1/chart.png", "runs/41-1/by_day.csv"]);
    assert_eq!(gh.branch_sha(REPO, ASSETS).as_deref(), Some(c.sha.as_str()));
    let info = gh.commit_info(REPO, &c.sha).unwrap();
    assert!(info.parents.is_empty());
    assert_eq!(info.tree, c.tree);
    assert_eq!(info.message, "compute-bot: files of run 41-1");
    let files = gh.files_at(REPO, ASSETS);
    assert_eq!(
        names(&files),
        vec!["runs/41-1/by_day.csv", "runs/41-1/chart.png"]
    );
    assert_eq!(
        files["runs/41-1/chart.png"], png,
        "bytes survive base64 both ways"
    );
    // The default branch is untouched.
    assert_eq!(gh.branch_sha(REPO, "main"), Some(main));
}

/// The second write's parent is the first, and the first's files stay.
#[tokio::test]
async fn second_write_builds_on_the_first_and_keeps_its_files() {
    let (gh, client) = setup().await;
    let first = client
        .commit_files(ASSETS, "runs/1-1", &[("a.png", binary(1, 100))], "run 1")
        .await
        .unwrap();
    let second = client
        .commit_files(ASSETS, "runs/2-1", &[("a.png", binary(2, 100))], "run 2")
        .await
        .unwrap();
    assert_eq!(second.parent.as_deref(), Some(first.sha.as_str()));
    assert_eq!(
        gh.commit_info(REPO, &second.sha).unwrap().parents,
        vec![first.sha.clone()]
    );
    let files = gh.files_at(REPO, ASSETS);
    assert_eq!(names(&files), vec!["runs/1-1/a.png", "runs/2-1/a.png"]);
    assert_eq!(files["runs/1-1/a.png"], binary(1, 100));
    // The first commit still shows only its own files (pinned links never move).
    assert_eq!(
        names(&gh.files_at(REPO, &first.sha)),
        vec!["runs/1-1/a.png"]
    );
    // Writing the same path again replaces it in the newest commit only.
    let third = client
        .commit_files(
            ASSETS,
            "runs/1-1",
            &[("a.png", b"again".to_vec())],
            "re-run 1",
        )
        .await
        .unwrap();
    assert_eq!(gh.files_at(REPO, &third.sha)["runs/1-1/a.png"], b"again");
    assert_eq!(
        gh.files_at(REPO, &second.sha)["runs/1-1/a.png"],
        binary(1, 100)
    );
}

/// A run that moves the branch between this run's read and its update makes
/// GitHub answer 422; the retry lands on top of it and no file is lost.
#[tokio::test]
async fn a_concurrent_write_is_rebuilt_on_top_of_it() {
    let (gh, client) = setup().await;
    let first = client
        .commit_files(ASSETS, "runs/1-1", &[("a.png", binary(1, 10))], "run 1")
        .await
        .unwrap();
    gh.race_next_ref_write(REPO, ASSETS, &[("runs/other/b.png", b"other run")]);
    let mine = client
        .commit_files(ASSETS, "runs/2-1", &[("c.png", binary(3, 10))], "run 2")
        .await
        .unwrap();
    assert_eq!(mine.tries, 2);
    let other = gh
        .commit_info(REPO, mine.parent.as_deref().unwrap())
        .unwrap();
    assert_eq!(other.message, "another run's files");
    assert_eq!(other.parents, vec![first.sha.clone()]);
    assert_eq!(gh.branch_sha(REPO, ASSETS), Some(mine.sha.clone()));
    assert_eq!(
        names(&gh.files_at(REPO, ASSETS)),
        vec!["runs/1-1/a.png", "runs/2-1/c.png", "runs/other/b.png"]
    );
    let refused: Vec<_> = gh
        .requests()
        .into_iter()
        .filter(|s| s.method == "PATCH" && s.status == 422)
        .collect();
    assert_eq!(refused.len(), 1, "{refused:?}");
}

/// Two runs creating the branch at once: the loser's `POST /git/refs`
/// answers "Reference already exists" and its files land on the winner's.
#[tokio::test]
async fn a_concurrent_branch_creation_is_rebuilt_on_top_of_it() {
    let (gh, client) = setup().await;
    gh.race_next_ref_write(REPO, ASSETS, &[("runs/other/b.png", b"other run")]);
    let mine = client
        .commit_files(ASSETS, "runs/1-1", &[("a.png", binary(1, 10))], "run 1")
        .await
        .unwrap();
    assert_eq!(mine.tries, 2);
    let winner = mine.parent.clone().expect("built on the winner");
    assert!(gh.commit_info(REPO, &winner).unwrap().parents.is_empty());
    assert_eq!(
        names(&gh.files_at(REPO, ASSETS)),
        vec!["runs/1-1/a.png", "runs/other/b.png"]
    );
    assert_eq!(
        gh.requests()
            .iter()
            .filter(|s| s.method == "POST" && s.path.ends_with("/git/refs") && s.status == 422)
            .count(),
        1
    );
}

/// A branch that moves on every try ends in `Contended`, after a bounded number of tries.
#[tokio::test]
async fn a_branch_that_never_settles_is_given_up_on() {
    let (gh, client) = setup().await;
    client
        .commit_files(ASSETS, "runs/1-1", &[("a.png", b"1")], "run 1")
        .await
        .unwrap();
    for i in 0..10 {
        gh.race_next_ref_write(REPO, ASSETS, &[(&format!("runs/o{i}/x"), b"x")]);
    }
    let err = client
        .commit_files(ASSETS, "runs/2-1", &[("a.png", b"2")], "run 2")
        .await
        .unwrap_err();
    assert!(
        matches!(err, GitWriteError::Contended { tries: 5, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("Re-run the job"), "{err}");
    assert!(!gh.files_at(REPO, ASSETS).contains_key("runs/2-1/a.png"));
}

/// A token without `contents: write` (a fork's pull request, a read-only
/// workflow) is refused on the first write: reported as a permission
/// problem, not retried, and nothing is written.
#[tokio::test]
async fn without_contents_write_nothing_is_written() {
    let (gh, client) = setup().await;
    gh.set_token_access(TOKEN, "read", "read");
    let objects = gh.object_count(REPO);
    let err = client
        .commit_files(ASSETS, "runs/1-1", &[("a.png", b"x")], "run 1")
        .await
        .unwrap_err();
    assert!(err.is_permission(), "{err:?}");
    let msg = err.to_string();
    assert!(msg.contains("contents: write"), "{msg}");
    assert!(
        msg.contains("Resource not accessible by integration"),
        "{msg}"
    );
    assert!(msg.contains("artifact"), "{msg}");
    assert!(!msg.contains(TOKEN));
    assert_eq!(gh.git_writes(REPO), 0);
    assert_eq!(gh.object_count(REPO), objects);
    assert_eq!(gh.branch_sha(REPO, ASSETS), None);
    assert_eq!(gh.count("POST", "/git/blobs"), 1, "a 403 is not retried");
    // Reading still works with `contents: read`.
    assert_eq!(
        client
            .file_at("main", "README.md", MB)
            .await
            .unwrap()
            .unwrap(),
        b"# data\n"
    );
}

/// A token without any contents permission cannot read files either; the
/// error names the permission.
#[tokio::test]
async fn without_contents_read_the_error_names_the_permission() {
    let (gh, client) = setup().await;
    gh.set_token_access(TOKEN, "none", "none");
    let err = client.file_at("main", "README.md", MB).await.unwrap_err();
    assert!(err.to_string().contains("contents: read"), "{err}");
    let err = client.pull_request(1).await.unwrap_err();
    assert_eq!(err.status(), Some(403));
    assert!(err.to_string().contains("pull-requests: read"), "{err}");
}

/// A repository without any commit: GitHub's 409, said plainly.
#[tokio::test]
async fn an_empty_repository_is_reported() {
    let gh = GitHubStandIn::start().await;
    gh.add_repo("octo-org/empty");
    let client = GitHub::new(
        &gh.uri(),
        &Secret::new(TOKEN),
        RepoRef::parse("octo-org/empty", "test").unwrap(),
    )
    .unwrap();
    let err = client
        .commit_files(ASSETS, "runs/1-1", &[("a.png", b"x")], "run 1")
        .await
        .unwrap_err();
    assert!(
        matches!(err, GitWriteError::EmptyRepository { .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("Push a first commit"), "{err}");
}

/// Names that would escape the folder or are not branch names are refused
/// before any request.
#[tokio::test]
async fn bad_names_are_refused_before_any_request() {
    let (gh, client) = setup().await;
    for (branch, folder, name) in [
        (ASSETS, "runs/1", "../../main.py"),
        (ASSETS, "runs/../..", "a.png"),
        (ASSETS, "runs/1", ".git/hooks/x"),
        ("a..b", "runs/1", "a.png"),
        ("has space", "runs/1", "a.png"),
    ] {
        let err = client
            .commit_files(branch, folder, &[(name, b"x")], "m")
            .await
            .unwrap_err();
        assert!(matches!(err, GitWriteError::BadPath { .. }), "{err:?}");
    }
    assert!(gh.requests().is_empty());
}

/// Server errors on a write are retried (blobs are content-addressed, so a
/// repeated write is harmless), and rate limits on the Git Data API are
/// waited out as for comments.
#[tokio::test]
async fn writes_survive_server_errors_and_rate_limits() {
    let (gh, client) = setup().await;
    let client = client.with_rate_limits(RateLimits {
        budget: Duration::from_secs(30),
        secondary_wait: Duration::from_millis(200),
    });
    gh.fail_next(Some("POST"), "/git/blobs", 502, 1);
    gh.fail_next(Some("POST"), "/git/refs", 502, 1);
    client
        .commit_files(ASSETS, "runs/1-1", &[("a.png", b"x")], "run 1")
        .await
        .unwrap();
    // A primary limit that runs out after two more requests, reset in 2 s.
    gh.set_primary_limit(5000, 2, 2, 403);
    let started = std::time::Instant::now();
    let c = client
        .commit_files(ASSETS, "runs/2-1", &[("b.png", b"y")], "run 2")
        .await
        .unwrap();
    assert!(started.elapsed() >= Duration::from_millis(900));
    assert!(gh.requests().iter().any(|s| s.status == 403));
    // A secondary limit with `retry-after` on the next write.
    gh.set_secondary_limit(403, Some(1), Duration::ZERO, 1);
    let d = client
        .commit_files(ASSETS, "runs/3-1", &[("c.png", b"z")], "run 3")
        .await
        .unwrap();
    assert_eq!(gh.secondary_early_requests(), 0);
    assert_eq!(d.parent.as_deref(), Some(c.sha.as_str()));
    assert_eq!(
        names(&gh.files_at(REPO, ASSETS)),
        vec!["runs/1-1/a.png", "runs/2-1/b.png", "runs/3-1/c.png"]
    );
}

/// Files differ per ref as in a pull request: base and head give their own
/// versions, by sha or by name; missing paths, unknown refs and folders are
/// told apart.
#[tokio::test]
async fn contents_differ_per_ref() {
    let (gh, client) = setup().await;
    let rest = Rest::new(&gh);
    gh.seed_branch(
        REPO,
        "main",
        &[
            ("data/sales.csv", b"day,n\n1,10\n"),
            ("data/keep.csv", b"k\n"),
        ],
    );
    let shas = gh.open_pull_request(
        REPO,
        7,
        "main",
        "more-sales",
        &[
            Change::put("data/sales.csv", "day,n\n1,10\n2,20\n"),
            Change::put("data/new.csv", "n\n"),
        ],
    );
    let pr = client.pull_request(7).await.unwrap();
    assert_eq!(
        (pr.base_sha.as_str(), pr.head_sha.as_str()),
        (shas.base.as_str(), shas.head.as_str())
    );
    assert_eq!(
        (pr.base_ref.as_str(), pr.head_ref.as_str()),
        ("main", "more-sales")
    );
    assert!(!pr.is_fork());
    assert_eq!(pr.changed_files, 2);
    let read = |r: &'static str, p: &'static str| client.file_at(r, p, MB);
    assert_eq!(
        read("main", "data/sales.csv").await.unwrap().unwrap(),
        b"day,n\n1,10\n"
    );
    let base = client
        .file_at(&pr.base_sha, "data/sales.csv", MB)
        .await
        .unwrap()
        .unwrap();
    let head = client
        .file_at(&pr.head_sha, "data/sales.csv", MB)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(base, b"day,n\n1,10\n");
    assert_eq!(head, b"day,n\n1,10\n2,20\n");
    assert_eq!(
        read("more-sales", "data/sales.csv").await.unwrap().unwrap(),
        head
    );
    assert_eq!(
        read("refs/pull/7/head", "data/new.csv")
            .await
            .unwrap()
            .unwrap(),
        b"n\n"
    );
    assert_eq!(
        client
            .file_at(&pr.base_sha, "data/new.csv", MB)
            .await
            .unwrap(),
        None
    );
    assert_eq!(read("main", "no/such.csv").await.unwrap(), None);
    let err = read("no-such-branch", "data/sales.csv").await.unwrap_err();
    assert!(matches!(err, ReadError::NoSuchRef { .. }), "{err:?}");
    let err = read("main", "data").await.unwrap_err();
    assert!(
        matches!(&err, ReadError::NotAFile { kind, .. } if kind == "dir"),
        "{err:?}"
    );
    // GitHub's base64 comes with a line break every 60 characters.
    let (_, v) = rest.call("GET", "contents/README.md?ref=main", None).await;
    assert_eq!(v["encoding"], "base64");
    assert!(v["content"].as_str().unwrap().ends_with('\n'));
    let (_, dir) = rest.call("GET", "contents/data?ref=main", None).await;
    let listed: Vec<&str> = dir
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert_eq!(listed, vec!["data/keep.csv", "data/sales.csv"]);
}

/// A file over 1 MB comes without content (`encoding: "none"`) and is read
/// by its blob; the caller's cap is checked before any content is fetched;
/// past the API's limit GitHub's 403 `too_large` is a size error, not a
/// permission one.
#[tokio::test]
async fn large_files_are_read_through_their_blob_within_the_cap() {
    let (gh, client) = setup().await;
    let rest = Rest::new(&gh);
    let big = binary(9, 1_500_000);
    gh.seed_branch(REPO, "main", &[("data/big.bin", &big)]);
    let (_, v) = rest
        .call("GET", "contents/data/big.bin?ref=main", None)
        .await;
    assert_eq!(
        (v["encoding"].as_str(), v["content"].as_str()),
        (Some("none"), Some(""))
    );
    assert_eq!(
        client
            .file_at("main", "data/big.bin", 2 * MB)
            .await
            .unwrap()
            .unwrap(),
        big
    );
    assert_eq!(gh.count("GET", "/git/blobs/"), 1);
    let err = client
        .file_at("main", "data/big.bin", MB)
        .await
        .unwrap_err();
    assert!(
        matches!(err, ReadError::TooLarge { size: Some(1_500_000), cap, .. } if cap == MB),
        "{err:?}"
    );
    assert!(err.to_string().contains("1500000 bytes"), "{err}");
    assert_eq!(gh.count("GET", "/git/blobs/"), 1, "nothing more was read");
    // Small caps apply to inline files as well.
    let err = client.file_at("main", "README.md", 3).await.unwrap_err();
    assert!(matches!(err, ReadError::TooLarge { .. }), "{err:?}");
    // Past GitHub's API limit (lowered here from 100 MB).
    gh.set_contents_limits(1024 * 1024, 1_000_000);
    let err = client
        .file_at("main", "data/big.bin", 10 * MB)
        .await
        .unwrap_err();
    assert!(
        matches!(err, ReadError::TooLarge { size: None, .. }),
        "{err:?}"
    );
}

/// All pages of a pull request's files, with GitHub's statuses and the
/// previous name of a renamed file; GitHub's cap of 3,000 files is flagged.
#[tokio::test]
async fn pull_request_files_come_from_every_page() {
    let (gh, client) = setup().await;
    let seeded: Vec<(String, Vec<u8>)> = (0..230)
        .map(|i| (format!("data/f{i:03}.csv"), format!("v,{i}\n").into_bytes()))
        .collect();
    let refs: Vec<(&str, &[u8])> = seeded
        .iter()
        .map(|(p, b)| (p.as_str(), b.as_slice()))
        .collect();
    gh.seed_branch(REPO, "main", &refs);
    let mut changes: Vec<Change> = (0..120)
        .map(|i| Change::put(&format!("data/f{i:03}.csv"), format!("v,{i}\nw,{i}\n")))
        .collect();
    changes.extend((0..100).map(|i| Change::put(&format!("new/n{i:03}.csv"), "n\n")));
    changes.push(Change::delete("data/f200.csv"));
    changes.push(Change::rename("data/f201.csv", "archive/f201.csv"));
    gh.open_pull_request(REPO, 9, "main", "bulk", &changes);
    let files = client.pull_request_files(9).await.unwrap();
    assert!(!files.truncated);
    assert_eq!(files.files.len(), 222);
    assert_eq!(gh.count("GET", "/pulls/9/files"), 3, "100 + 100 + 22");
    let status_of = |name: &str| {
        files
            .files
            .iter()
            .find(|f| f.filename == name)
            .map(|f| f.status.clone())
    };
    assert_eq!(status_of("data/f000.csv"), Some(FileStatus::Modified));
    assert_eq!(status_of("new/n099.csv"), Some(FileStatus::Added));
    assert_eq!(status_of("data/f200.csv"), Some(FileStatus::Removed));
    assert_eq!(status_of("data/f150.csv"), None);
    let renamed = files
        .files
        .iter()
        .find(|f| f.filename == "archive/f201.csv")
        .unwrap();
    assert_eq!(renamed.status, FileStatus::Renamed);
    assert_eq!(renamed.previous_filename.as_deref(), Some("data/f201.csv"));
    assert!(files.touches("data/f201.csv") && files.touches("archive/f201.csv"));
    assert!(!files.touches("data/f150.csv"));

    // More than 3,000 changed files: GitHub lists 3,000.
    let many: Vec<Change> = (0..3001)
        .map(|i| Change::put(&format!("m/{i}"), "x"))
        .collect();
    gh.open_pull_request(REPO, 10, "main", "many", &many);
    let files = client.pull_request_files(10).await.unwrap();
    assert_eq!(files.files.len(), 3000);
    assert!(files.truncated);
    assert_eq!(client.pull_request(10).await.unwrap().changed_files, 3001);
}

/// A fork's pull request: the head is another repository (or none once the
/// fork is deleted), its files are readable by sha in the base repository,
/// and the event payload carries what a `pull_request` run reads.
#[tokio::test]
async fn fork_pull_requests_and_their_events() {
    let (gh, client) = setup().await;
    gh.seed_branch(REPO, "main", &[("data/a.csv", b"a\n")]);
    let shas = gh.open_fork_pull_request(
        REPO,
        11,
        "someone/data",
        "main",
        "patch-1",
        &[Change::put("data/a.csv", "b\n")],
    );
    let pr = client.pull_request(11).await.unwrap();
    assert!(pr.is_fork());
    assert_eq!(pr.head_repo.as_deref(), Some("someone/data"));
    assert_eq!(
        client
            .file_at(&shas.head, "data/a.csv", MB)
            .await
            .unwrap()
            .unwrap(),
        b"b\n"
    );
    assert_eq!(
        gh.branch_sha(REPO, "patch-1"),
        None,
        "the branch lives in the fork"
    );

    let opened = gh.pull_request_event(REPO, 11, "opened");
    assert_eq!(opened["pull_request"]["head"]["repo"]["fork"], true);
    assert_eq!(opened["pull_request"]["head"]["sha"], shas.head.as_str());
    assert_eq!(opened["pull_request"]["base"]["sha"], shas.base.as_str());
    assert_eq!(opened["sender"]["login"], "someone");
    let after = gh.push_to_pull_request(REPO, 11, &[Change::put("data/a.csv", "c\n")]);
    let sync = gh.pull_request_event(REPO, 11, "synchronize");
    assert_eq!(
        (sync["before"].as_str(), sync["after"].as_str()),
        (Some(shas.head.as_str()), Some(after.as_str()))
    );
    assert_eq!(client.pull_request(11).await.unwrap().head_sha, after);

    gh.delete_pull_request_fork(REPO, 11);
    let pr = client.pull_request(11).await.unwrap();
    assert_eq!(pr.head_repo, None);
    assert!(pr.is_fork());
    assert!(client.pull_request(99).await.unwrap_err().status() == Some(404));
}

/// The stand-in's Git Data API answers as GitHub documents it, failures
/// included.
#[tokio::test]
async fn stand_in_git_data_api_answers_like_github() {
    let (gh, _) = setup().await;
    let rest = Rest::new(&gh);
    let main = gh.branch_sha(REPO, "main").unwrap();
    let (s, v) = rest.call("GET", "git/ref/heads/nope", None).await;
    assert_eq!((s, v["message"].as_str()), (404, Some("Not Found")));
    let (s, v) = rest.call("GET", "git/ref/heads/main", None).await;
    assert_eq!((s, v["object"]["sha"].as_str()), (200, Some(main.as_str())));
    let (s, v) = rest
        .call(
            "POST",
            "git/refs",
            Some(json!({"ref": "refs/heads/main", "sha": main})),
        )
        .await;
    assert_eq!(
        (s, v["message"].as_str()),
        (422, Some("Reference already exists"))
    );
    // A utf-8 blob, a tree with `content`, a commit on main, then a rewind.
    let (s, blob) = rest
        .call(
            "POST",
            "git/blobs",
            Some(json!({"content": "hi\n", "encoding": "utf-8"})),
        )
        .await;
    assert_eq!(
        (s, blob["sha"].as_str()),
        (201, Some(blob_sha(b"hi\n").as_str()))
    );
    let main_tree = gh.commit_info(REPO, &main).unwrap().tree;
    let (s, tree) = rest
        .call(
            "POST",
            "git/trees",
            Some(json!({"base_tree": main_tree, "tree": [
                {"path": "x/y.txt", "mode": "100644", "type": "blob", "content": "hi\n"}
            ]})),
        )
        .await;
    assert_eq!(s, 201, "{tree}");
    let (_, listed) = rest
        .call(
            "GET",
            &format!("git/trees/{}?recursive=1", tree["sha"].as_str().unwrap()),
            None,
        )
        .await;
    let paths: Vec<&str> = listed["tree"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, vec!["README.md", "x", "x/y.txt"]);
    assert_eq!(listed["truncated"], false);
    let (_, commit) = rest
        .call(
            "POST",
            "git/commits",
            Some(json!({"message": "m", "tree": tree["sha"], "parents": [main]})),
        )
        .await;
    let (s, _) = rest
        .call(
            "PATCH",
            "git/refs/heads/main",
            Some(json!({"sha": commit["sha"]})),
        )
        .await;
    assert_eq!(s, 200);
    let (s, v) = rest
        .call(
            "PATCH",
            "git/refs/heads/main",
            Some(json!({"sha": main, "force": false})),
        )
        .await;
    assert_eq!(
        (s, v["message"].as_str()),
        (422, Some("Update is not a fast forward"))
    );
    let (s, _) = rest
        .call(
            "PATCH",
            "git/refs/heads/main",
            Some(json!({"sha": main, "force": true})),
        )
        .await;
    assert_eq!(s, 200);
    // Unknown objects.
    let zero = "0".repeat(40);
    for (path, body, message) in [
        (
            "git/trees",
            json!({"base_tree": zero, "tree": []}),
            "base_tree is not a valid tree oid",
        ),
        (
            "git/commits",
            json!({"message": "m", "tree": zero}),
            "Tree SHA does not exist",
        ),
        (
            "git/commits",
            json!({"message": "m", "tree": main_tree, "parents": [zero]}),
            "Parent SHA does not exist or is not a commit object",
        ),
        (
            "git/refs",
            json!({"ref": "refs/heads/new", "sha": zero}),
            "Object does not exist",
        ),
    ] {
        let (s, v) = rest.call("POST", path, Some(body)).await;
        assert_eq!((s, v["message"].as_str()), (422, Some(message)));
    }
    let (s, v) = rest
        .call(
            "POST",
            "git/trees",
            Some(json!({"tree": [{"path": "a", "mode": "100644", "type": "blob", "sha": zero}]})),
        )
        .await;
    assert_eq!(s, 422);
    assert!(
        v["message"]
            .as_str()
            .unwrap()
            .contains("is not a valid blob"),
        "{v}"
    );
    // A recursive listing past the cap says `truncated`.
    gh.set_tree_entries_cap(1);
    let big_tree = tree["sha"].as_str().unwrap();
    let (_, listed) = rest
        .call("GET", &format!("git/trees/{big_tree}?recursive=1"), None)
        .await;
    assert_eq!(listed["truncated"], true);
    assert_eq!(listed["tree"].as_array().unwrap().len(), 1);
    // Every write needs `contents: write`.
    gh.set_token_access(TOKEN, "read", "read");
    let (s, v) = rest
        .call("POST", "git/blobs", Some(json!({"content": "x"})))
        .await;
    assert_eq!(
        (s, v["message"].as_str()),
        (403, Some("Resource not accessible by integration"))
    );
    let (s, _) = rest.call("GET", "git/ref/heads/main", None).await;
    assert_eq!(s, 200);
}
