//! The loopback image registry of the pull tests: Debian's
//! `docker-registry` (`scripts/start-registry`, started when it is not
//! answering), a repository per test and process, pushing an image there
//! and removing the repository's references from the engine (never
//! `compute-bot-sandbox:python` itself), a small image of fresh random
//! content whose one layer is in no store, and the engine's pull events.

use std::process::{Command, Output};
use std::sync::OnceLock;

/// The registry's address (`host:port`), from `scripts/start-registry`.
pub fn registry() -> &'static str {
    static ADDR: OnceLock<String> = OnceLock::new();
    ADDR.get_or_init(|| {
        let out = Command::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/scripts/start-registry"
        ))
        .stderr(std::process::Stdio::inherit())
        .output()
        .expect("scripts/start-registry");
        assert!(out.status.success(), "scripts/start-registry failed");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    })
}

pub fn docker(args: &[&str]) -> Output {
    Command::new("docker").args(args).output().expect("docker")
}

pub fn docker_ok(args: &[&str]) -> String {
    let out = docker(args);
    assert!(
        out.status.success(),
        "docker {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// True when the engine resolves `reference`.
pub fn engine_has(reference: &str) -> bool {
    docker(&["image", "inspect", reference]).status.success()
}

/// A repository of this test and process in the registry.
pub fn repo(test: &str) -> String {
    format!("{}/cbs-{test}-{}", registry(), std::process::id())
}

/// Pushes `local` as `repo:pushed` and returns `repo@sha256:…`; then
/// removes the repository's references from the engine (the image itself
/// stays while another tag holds it), so the engine lacks `repo@digest`.
pub fn push_and_forget(local: &str, repo: &str) -> String {
    let tagged = format!("{repo}:pushed");
    docker_ok(&["tag", local, &tagged]);
    // One push at a time across the test processes: the first uploads the
    // layers (about 35 s for the sandbox image into an empty registry), the
    // others mount them from the repository that has them.
    let pushed = Command::new("flock")
        .args([
            "/var/tmp/compute-bot-registry/push.lock",
            "docker",
            "push",
            "-q",
            &tagged,
        ])
        .output()
        .expect("flock docker push");
    assert!(
        pushed.status.success(),
        "docker push {tagged}: {}",
        String::from_utf8_lossy(&pushed.stderr)
    );
    let digests = docker_ok(&[
        "image",
        "inspect",
        "--format",
        "{{range .RepoDigests}}{{println .}}{{end}}",
        &tagged,
    ]);
    let pinned = digests
        .lines()
        .find(|d| d.starts_with(&format!("{repo}@sha256:")))
        .unwrap_or_else(|| panic!("no digest of {repo} in {digests}"))
        .to_string();
    forget(repo);
    assert!(!engine_has(&pinned), "{pinned} still on the engine");
    pinned
}

/// Removes every reference of `repo` from the engine (untags; an image no
/// other reference holds goes with its last one).
pub fn forget(repo: &str) {
    let refs = docker_ok(&[
        "image",
        "ls",
        "--digests",
        "--format",
        "{{.Repository}} {{.Tag}} {{.Digest}}",
        repo,
    ]);
    for line in refs.lines() {
        let mut f = line.split(' ');
        let (r, t, d) = (f.next().unwrap(), f.next().unwrap(), f.next().unwrap());
        if t != "<none>" {
            let _ = docker(&["rmi", &format!("{r}:{t}")]);
        }
        if d != "<none>" {
            let _ = docker(&["rmi", &format!("{r}@{d}")]);
        }
    }
}

/// Removes the repository's references when the test ends, passed or not.
pub struct Forget(pub String);

impl Drop for Forget {
    fn drop(&mut self) {
        forget(&self.0);
    }
}

/// A small image of fresh random content (so its one layer is in no store),
/// under the local name `cbs-small-<test>-<pid>:local`, about 6 MB
/// compressed.
pub fn small_image(test: &str) -> String {
    let name = format!("cbs-small-{test}-{}:local", std::process::id());
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("root");
    std::fs::create_dir(&root).unwrap();
    let mut bytes = vec![0u8; 6_000_000];
    let mut x: u64 =
        std::process::id() as u64 ^ chrono::Utc::now().timestamp_nanos_opt().unwrap() as u64;
    for b in bytes.iter_mut() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = x as u8;
    }
    std::fs::write(root.join("noise"), &bytes).unwrap();
    let tar = d.path().join("root.tar");
    let ok = Command::new("tar")
        .args([
            "-C",
            root.to_str().unwrap(),
            "-cf",
            tar.to_str().unwrap(),
            ".",
        ])
        .status()
        .unwrap();
    assert!(ok.success());
    docker_ok(&["import", tar.to_str().unwrap(), &name]);
    name
}

/// Pushes a fresh small image to `repo` and removes it from the engine
/// entirely (it has no other reference): its layer must be downloaded.
pub fn small_pushed(test: &str, repo: &str) -> String {
    let local = small_image(test);
    let pinned = push_and_forget(&local, repo);
    let _ = docker(&["rmi", &local]);
    assert!(!engine_has(&local));
    pinned
}

/// How many pulls of `repo` the engine's event log shows since `since`
/// (Unix seconds).
pub fn pulls_of(repo: &str, since: i64) -> usize {
    let until = chrono::Utc::now().timestamp() + 1;
    let events = docker_ok(&[
        "events",
        "--since",
        &(since - 1).to_string(),
        "--until",
        &until.to_string(),
        "--filter",
        "type=image",
        "--filter",
        "event=pull",
        "--format",
        "{{.Actor.ID}}",
    ]);
    events
        .lines()
        .filter(|l| l.starts_with(&format!("{repo}@")) || l.starts_with(&format!("{repo}:")))
        .count()
}

/// A loopback TCP proxy to the registry that holds every answer towards
/// the engine until [`HeldRegistry::release`]: a pull through it cannot end
/// before the test lets it (requests pass at once; answers wait).
pub struct HeldRegistry {
    /// The loopback port it listens on.
    pub port: u16,
    release: tokio::sync::watch::Sender<bool>,
}

impl HeldRegistry {
    /// Listens on a free loopback port, forwarding to [`registry`].
    pub async fn start() -> HeldRegistry {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let (release, released) = tokio::sync::watch::channel(false);
        let upstream = registry().to_string();
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let (upstream, mut released) = (upstream.clone(), released.clone());
                tokio::spawn(async move {
                    let Ok(server) = tokio::net::TcpStream::connect(&upstream).await else {
                        return;
                    };
                    let (mut cr, mut cw) = client.into_split();
                    let (mut sr, mut sw) = server.into_split();
                    let up = tokio::spawn(async move {
                        let _ = tokio::io::copy(&mut cr, &mut sw).await;
                    });
                    if released.wait_for(|r| *r).await.is_ok() {
                        let _ = tokio::io::copy(&mut sr, &mut cw).await;
                    }
                    up.abort();
                });
            }
        });
        HeldRegistry { port, release }
    }

    /// `reference` (in [`registry`]) as seen through this proxy.
    pub fn through(&self, reference: &str) -> String {
        reference.replacen(registry(), &format!("127.0.0.1:{}", self.port), 1)
    }

    /// Lets every answer through, now and later.
    pub fn release(&self) {
        let _ = self.release.send(true);
    }
}
