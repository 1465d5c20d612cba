//! The bot pulls the policy's image when the engine lacks it, from a real
//! registry: Debian's `docker-registry` on loopback (`scripts/start-registry`,
//! started here when it is not answering; Docker allows plain http to
//! 127.0.0.0/8). Each test pushes to a repository of its own
//! (`127.0.0.1:5000/cbs-<test>-<pid>`) and removes only that repository's
//! references from the engine, never `compute-bot-sandbox:python`.
//!
//! What is covered, honestly: the sandbox image's layers stay in the
//! engine's store (the local `compute-bot-sandbox:python` holds them), so a
//! pull of the sandbox image fetches its manifest and config and finds
//! every layer "Already exists"; that path is the one that runs code. The
//! bytes of a real download are covered by a small image of fresh random
//! content made here (`docker import`, about 6 MB, in no store before),
//! which is also what the interrupted pull, the pulls at once and the error
//! inside the engine's streamed answer (a config blob deleted from the
//! registry through its API) use. A pull cut for good (every retry cut
//! too) is not here: the engine retries a cut layer after a delay (5 s
//! here) several times before it gives up, too slow for the suite.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use compute_bot::sandbox::{PullPhase, PullProgress, docker::Docker};

use super::cli_run::{json, run_counting};
use crate::support::registry::{
    Forget, docker, docker_ok, engine_has, pulls_of, push_and_forget, registry, repo, small_image,
    small_pushed,
};

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn policy_with_image(dir: &Path, image: &str) -> PathBuf {
    write(
        dir,
        "policy.yml",
        &format!("version: 1\nsandbox:\n  image: {image}\n  preload: []\n"),
    )
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// `compute-bot run --policy P --format json --code C` in a blocking task.
async fn run(policy: &Path, code: &Path) -> (Output, usize) {
    let (p, c) = (
        policy.to_str().unwrap().to_string(),
        code.to_str().unwrap().to_string(),
    );
    tokio::task::spawn_blocking(move || {
        run_counting(&["run", "--policy", &p, "--format", "json", "--code", &c])
    })
    .await
    .unwrap()
}

/// Waits until the pull `rx` watches has ended; its last progress.
async fn ended(mut rx: tokio::sync::watch::Receiver<PullProgress>) -> PullProgress {
    tokio::time::timeout(
        std::time::Duration::from_secs(120),
        rx.wait_for(|p| p.phase != PullPhase::Pulling),
    )
    .await
    .expect("the pull ended within 2 minutes")
    .expect("the pull's sender")
    .clone()
}

const PRINT_42: &str = "import json\nprint(json.dumps({'n': 42}))\n";

#[tokio::test(flavor = "multi_thread")]
async fn the_policys_image_pinned_by_digest_is_pulled_and_the_code_runs() {
    let repo = repo("run");
    let _forget = Forget(repo.clone());
    let pinned = push_and_forget("compute-bot-sandbox:python", &repo);
    let d = tempfile::tempdir().unwrap();
    let policy = policy_with_image(d.path(), &pinned);
    let code = write(d.path(), "ok.py", PRINT_42);
    let since = chrono::Utc::now().timestamp();
    let (out, created) = run(&policy, &code).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(created, 1);
    assert_eq!(pulls_of(&repo, since), 1, "the engine pulled {repo} once");
    let report = json(&out);
    assert_eq!(report["result"]["n"], 42, "{report}");
    let digests = report["outcome"]["image"]["digests"].to_string();
    assert!(digests.contains(&pinned), "{digests}");
    // On the engine now, and tagged for the job's later steps.
    assert!(engine_has(&pinned));
    let digest = pinned.split_once('@').unwrap().1;
    assert!(
        engine_has(&format!("{repo}:{}", digest.replace(':', "-"))),
        "not tagged"
    );
    // A second run finds it and pulls nothing.
    let since = chrono::Utc::now().timestamp();
    let (again, _) = run(&policy, &code).await;
    assert_eq!(again.status.code(), Some(0), "{}", text(&again));
    assert_eq!(pulls_of(&repo, since), 0, "pulled again although present");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_digest_the_registry_does_not_have_is_refused_naming_the_policy_field() {
    let repo = repo("wrong");
    let _forget = Forget(repo.clone());
    push_and_forget("compute-bot-sandbox:python", &repo);
    let wrong = format!("{repo}@sha256:{}", "0".repeat(64));
    let d = tempfile::tempdir().unwrap();
    let policy = policy_with_image(d.path(), &wrong);
    let code = write(d.path(), "ok.py", PRINT_42);
    let (out, created) = run(&policy, &code).await;
    let said = text(&out);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert_eq!(created, 0, "no container for an image that is not there");
    assert!(said.contains("could not be pulled"), "{said}");
    assert!(said.contains("`sandbox.image`"), "{said}");
    assert!(said.contains("has no image"), "{said}");
    assert!(!engine_has(&wrong));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_registry_that_is_down_is_a_clear_stop_and_the_reserve_is_tried() {
    // A loopback port nobody listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let image = format!(
        "127.0.0.1:{port}/compute-bot-sandbox@sha256:{}",
        "1".repeat(64)
    );
    let d = tempfile::tempdir().unwrap();
    let policy = policy_with_image(d.path(), &image);
    let code = write(d.path(), "ok.py", PRINT_42);
    let (out, created) = run(&policy, &code).await;
    let said = text(&out);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert_eq!(created, 0);
    assert!(said.contains("cannot be reached"), "{said}");
    assert!(said.contains(&format!("127.0.0.1:{port}")), "{said}");
    // With a reserve (here the same engine under runc), the reserve pulls
    // too, and the stop names both environments and the pull.
    let with_reserve = write(
        d.path(),
        "reserve.yml",
        &format!(
            "version: 1\nsandbox:\n  image: {image}\n  preload: []\n  runtime: runsc\n  reserve:\n    runtime: runc\n"
        ),
    );
    let (out, created) = run(&with_reserve, &code).await;
    let said = text(&out);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert_eq!(created, 0);
    assert!(
        said.contains("no execution environment can run the code"),
        "{said}"
    );
    assert!(said.matches("could not be pulled").count() >= 2, "{said}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_fresh_layer_is_downloaded_with_its_progress_counted() {
    let repo = repo("bytes");
    let _forget = Forget(repo.clone());
    let pinned = small_pushed("bytes", &repo);
    let sandbox = Docker::connect().await.expect("the Docker engine");
    let rx = sandbox.pull_ahead(&pinned).await.expect("a pull starts");
    // Asked again while it runs: the same pull.
    assert!(sandbox.pull_ahead(&pinned).await.is_some());
    let end = ended(rx).await;
    assert_eq!(end.phase, PullPhase::Done, "{end:?}");
    assert_eq!(end.layers, 1, "{end:?}");
    assert!(end.total_bytes >= 6_000_000, "{end:?}");
    assert_eq!(end.done_bytes, end.total_bytes, "{end:?}");
    assert!(engine_has(&pinned));
    // Present now: nothing to pull.
    assert!(
        sandbox.pull_ahead(&pinned).await.is_some(),
        "the connection keeps its pull"
    );
    let fresh = Docker::connect().await.unwrap();
    assert!(
        fresh.pull_ahead(&pinned).await.is_none(),
        "pulled again although present"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn two_runs_pulling_at_once_both_succeed() {
    let repo = repo("twice");
    let _forget = Forget(repo.clone());
    let pinned = push_and_forget("compute-bot-sandbox:python", &repo);
    let d = tempfile::tempdir().unwrap();
    let policy = policy_with_image(d.path(), &pinned);
    let code = write(d.path(), "ok.py", PRINT_42);
    let ((a, ca), (b, cb)) = tokio::join!(run(&policy, &code), run(&policy, &code));
    for (out, created) in [(&a, ca), (&b, cb)] {
        assert_eq!(out.status.code(), Some(0), "{}", text(out));
        assert_eq!(created, 1);
        assert_eq!(json(out)["result"]["n"], 42);
    }
    // And a real download by two connections at once.
    let small = repo_small("twice");
    let _forget_small = Forget(small.clone());
    let pinned = small_pushed("twice", &small);
    let (s1, s2) = (
        Docker::connect().await.unwrap(),
        Docker::connect().await.unwrap(),
    );
    let (r1, r2) = tokio::join!(s1.pull_ahead(&pinned), s2.pull_ahead(&pinned));
    let (e1, e2) = tokio::join!(ended(r1.unwrap()), ended(r2.unwrap()));
    assert_eq!(e1.phase, PullPhase::Done, "{e1:?}");
    assert_eq!(e2.phase, PullPhase::Done, "{e2:?}");
    assert!(engine_has(&pinned));
}

fn repo_small(test: &str) -> String {
    repo(&format!("{test}-small"))
}

/// A loopback TCP proxy to the registry that cuts the first connection
/// after it has carried `cut_after` bytes towards the engine; later
/// connections pass whole.
async fn cutting_proxy(cut_after: usize) -> (u16, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let cuts = Arc::new(AtomicUsize::new(0));
    let upstream = registry().to_string();
    let counted = cuts.clone();
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let upstream = upstream.clone();
            let cuts = counted.clone();
            tokio::spawn(async move {
                let Ok(server) = tokio::net::TcpStream::connect(&upstream).await else {
                    return;
                };
                let (mut cr, mut cw) = client.into_split();
                let (mut sr, mut sw) = server.into_split();
                let up = tokio::spawn(async move {
                    let _ = tokio::io::copy(&mut cr, &mut sw).await;
                });
                use tokio::io::{AsyncReadExt, AsyncWriteExt};
                let mut buf = vec![0u8; 16 * 1024];
                let mut carried = 0usize;
                loop {
                    let n = match sr.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => n,
                    };
                    if cuts.load(Ordering::SeqCst) == 0 && carried + n > cut_after {
                        let keep = cut_after - carried;
                        let _ = cw.write_all(&buf[..keep]).await;
                        cuts.fetch_add(1, Ordering::SeqCst);
                        break;
                    }
                    carried += n;
                    if cw.write_all(&buf[..n]).await.is_err() {
                        break;
                    }
                }
                up.abort();
            });
        }
    });
    (port, cuts)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_pull_cut_halfway_is_resumed_and_the_image_is_the_pinned_one() {
    let repo = repo("cut");
    let _forget = Forget(repo.clone());
    let pinned = small_pushed("cut", &repo);
    // The same repository through the proxy, which cuts the blob halfway.
    let (port, cuts) = cutting_proxy(3_000_000).await;
    let through = pinned.replacen(registry(), &format!("127.0.0.1:{port}"), 1);
    let _forget_through = Forget(through.split_once('@').unwrap().0.to_string());
    let sandbox = Docker::connect().await.unwrap();
    let end = ended(sandbox.pull_ahead(&through).await.expect("a pull")).await;
    assert_eq!(cuts.load(Ordering::SeqCst), 1, "the proxy never cut");
    // The engine retries the layer after a cut (5 s later): the pull ends
    // with the pinned image, whole.
    assert_eq!(end.phase, PullPhase::Done, "{end:?}");
    assert_eq!(end.done_bytes, end.total_bytes);
    assert!(engine_has(&through));
    let size = docker_ok(&["image", "inspect", "--format", "{{.Size}}", &through]);
    assert!(size.parse::<u64>().unwrap() >= 6_000_000, "{size}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_error_inside_the_engines_streamed_answer_fails_the_pull() {
    let repo = repo("stream");
    let _forget = Forget(repo.clone());
    let local = small_image("stream");
    // The image's config blob (its id) is taken from the repository after
    // the push: the registry still serves the manifest, so the engine
    // answers 200, starts streaming, and then reports the missing blob
    // inside the stream.
    let config = docker_ok(&["image", "inspect", "--format", "{{.Id}}", &local]);
    let pinned = push_and_forget(&local, &repo);
    let _ = docker(&["rmi", &local]);
    let path = repo.split_once('/').unwrap().1;
    let deleted = Command::new("python3")
        .args([
            "-c",
            "import sys, urllib.request\nr = urllib.request.Request(sys.argv[1], method='DELETE')\nprint(urllib.request.urlopen(r).status)",
            &format!("http://{}/v2/{path}/blobs/{config}", registry()),
        ])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&deleted.stdout).trim(),
        "202",
        "{deleted:?}"
    );
    let sandbox = Docker::connect().await.unwrap();
    let end = ended(sandbox.pull_ahead(&pinned).await.expect("a pull")).await;
    let PullPhase::Failed(problem) = &end.phase else {
        panic!("the pull did not fail: {end:?}");
    };
    assert!(
        problem.contains("unknown blob") && problem.contains("only in part"),
        "{problem}"
    );
    // From inside the streamed answer, not an HTTP error status.
    assert!(!problem.contains("status code"), "{problem}");
    assert!(!engine_has(&pinned));
}
