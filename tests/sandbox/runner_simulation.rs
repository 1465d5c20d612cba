//! The bot image runs as GitHub runs a container action: built from the binary
//! by scripts/build-bot-image (FROM scratch), started with the runner's mounts
//! (`/github/workspace`, `/github/file_commands`, `/github/home`,
//! `/github/workflow`), the Docker socket, `INPUT_*` and `GITHUB_*` variables,
//! the workspace as working directory, and a network of its own (not the
//! host's). It answers a `/compute` comment held by the GitHub stand-in: the
//! sandbox runs as a sibling container on the same engine, and the result
//! comment appears.
//!
//! Network: the stand-in listens on loopback only. The bot's container shares
//! the network namespace of a helper container that has no network but its own
//! loopback; the helper forwards 127.0.0.1:8080 to a Unix socket in a mounted
//! directory, and this test forwards that socket to the stand-in's loopback
//! port. No traffic leaves this machine's loopback and Unix sockets.

use std::path::Path;
use std::process::Command;

use crate::support::github_standin::{DEFAULT_APP_LOGIN, GitHubStandIn};

const REPO: &str = "octo-org/data";
const TOKEN: &str = "ghs_runner_sim_token_51a9";
const CSV: &str = "region,amount\nnorth,10\nsouth,32\n";
const CODE: &str = "import json\nimport pandas as pd\ndf = pd.read_csv(\"/data/sales.csv\")\nprint(json.dumps({\"total\": int(df[\"amount\"].sum()), \"pandas_major\": int(pd.__version__.split(\".\")[0])}))\n";
const LABEL: &str = "org.compute-bot.test=runner-simulation";

/// Forwards 127.0.0.1:8080 inside the helper's namespace to /gh/api.sock.
const FORWARDER: &str = r#"
import socket, threading
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", 8080))
srv.listen(16)
def pipe(a, b):
    try:
        while True:
            d = a.recv(65536)
            if not d:
                break
            b.sendall(d)
    except OSError:
        pass
    finally:
        try:
            b.shutdown(socket.SHUT_WR)
        except OSError:
            pass
while True:
    c, _ = srv.accept()
    u = socket.socket(socket.AF_UNIX)
    u.connect("/gh/api.sock")
    threading.Thread(target=pipe, args=(c, u), daemon=True).start()
    threading.Thread(target=pipe, args=(u, c), daemon=True).start()
"#;

/// Removes a container when dropped (also on a failed assertion).
struct Container(String);

impl Drop for Container {
    fn drop(&mut self) {
        let _ = Command::new("docker").args(["rm", "-f", &self.0]).output();
    }
}

/// Removes an image when dropped.
struct Image(String);

impl Drop for Image {
    fn drop(&mut self) {
        let _ = Command::new("docker")
            .args(["image", "rm", "-f", &self.0])
            .output();
    }
}

fn mkdir(p: &Path) {
    std::fs::create_dir_all(p).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o777)).unwrap();
}

/// Forwards connections on a Unix socket to a loopback TCP address.
async fn unix_to_loopback(sock: &Path, target: String) {
    let listener = tokio::net::UnixListener::bind(sock).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(sock, std::fs::Permissions::from_mode(0o777)).unwrap();
    tokio::spawn(async move {
        while let Ok((mut inbound, _)) = listener.accept().await {
            let target = target.clone();
            tokio::spawn(async move {
                if let Ok(mut out) = tokio::net::TcpStream::connect(&target).await {
                    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut out).await;
                }
            });
        }
    });
}

#[tokio::test(flavor = "multi_thread")]
async fn bot_image_answers_a_comment_as_a_container_action() {
    let pid = std::process::id();
    let tag = format!("compute-bot-runner-sim:{pid}");
    let build = Command::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scripts/build-bot-image"
    ))
    .args([env!("CARGO_BIN_EXE_compute-bot"), &tag])
    .output()
    .unwrap();
    let _image = Image(tag.clone());
    assert!(
        build.status.success(),
        "{}",
        String::from_utf8_lossy(&build.stderr)
    );

    let gh = GitHubStandIn::start().await;
    gh.add_repo(REPO);
    gh.add_issue(REPO, 7);
    gh.set_permission(REPO, "alice", "write");
    gh.require_token(TOKEN);
    let body = format!("/compute total amount of data/sales.csv\n```python\n{CODE}```\n");
    let cid = gh.seed_comment(REPO, 7, "alice", &body);

    // The runner's directories.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for sub in ["workspace/data", "file_commands", "home", "workflow", "gh"] {
        mkdir(&d.join(sub));
    }
    mkdir(d);
    std::fs::write(d.join("workspace/data/sales.csv"), CSV).unwrap();
    // The policy the guide tells people to commit (the sandbox image may be
    // overridden to try a freshly built one).
    let sandbox_image = std::env::var("COMPUTE_BOT_TEST_SANDBOX_IMAGE")
        .unwrap_or_else(|_| compute_bot::sandbox::DEFAULT_IMAGE.to_string());
    mkdir(&d.join("workspace/.github"));
    std::fs::write(
        d.join("workspace/.github/compute-bot.yml"),
        format!("version: 1\nsandbox:\n  image: {sandbox_image}\n"),
    )
    .unwrap();
    std::fs::write(
        d.join("workflow/event.json"),
        serde_json::to_vec(&gh.issue_comment_event(cid, "created")).unwrap(),
    )
    .unwrap();
    for f in ["set_output_1", "step_summary_1"] {
        std::fs::write(d.join("file_commands").join(f), "").unwrap();
    }
    let target = gh.uri().trim_start_matches("http://").to_string();
    unix_to_loopback(&d.join("gh/api.sock"), target).await;

    // The helper: no network but its own loopback, forwarding to the socket.
    let helper_name = format!("compute-bot-runner-sim-net-{pid}");
    let helper = Command::new("docker")
        .args(["run", "-d", "--name", &helper_name, "--label", LABEL])
        .args(["--network", "none", "-v"])
        .arg(format!("{}:/gh", d.join("gh").display()))
        .args([
            compute_bot::sandbox::DEFAULT_IMAGE,
            "python3",
            "-c",
            FORWARDER,
        ])
        .output()
        .unwrap();
    let _helper = Container(helper_name.clone());
    assert!(
        helper.status.success(),
        "{}",
        String::from_utf8_lossy(&helper.stderr)
    );

    // The action's container, as the runner starts it.
    let bot_name = format!("compute-bot-runner-sim-bot-{pid}");
    let mut cmd = Command::new("docker");
    cmd.args(["run", "--name", &bot_name, "--label", LABEL])
        .args(["--network", &format!("container:{helper_name}")])
        .args(["--workdir", "/github/workspace"])
        .args(["-v", "/var/run/docker.sock:/var/run/docker.sock"]);
    for (host, inside) in [
        ("workspace", "/github/workspace"),
        ("file_commands", "/github/file_commands"),
        ("home", "/github/home"),
        ("workflow", "/github/workflow"),
    ] {
        cmd.arg("-v")
            .arg(format!("{}:{inside}", d.join(host).display()));
    }
    let env = [
        ("HOME", "/github/home"),
        ("CI", "true"),
        ("GITHUB_ACTIONS", "true"),
        ("GITHUB_EVENT_NAME", "issue_comment"),
        ("GITHUB_EVENT_PATH", "/github/workflow/event.json"),
        ("GITHUB_WORKSPACE", "/github/workspace"),
        ("GITHUB_OUTPUT", "/github/file_commands/set_output_1"),
        (
            "GITHUB_STEP_SUMMARY",
            "/github/file_commands/step_summary_1",
        ),
        ("GITHUB_REPOSITORY", REPO),
        ("GITHUB_API_URL", "http://127.0.0.1:8080"),
        ("GITHUB_SERVER_URL", "https://github.example"),
        ("GITHUB_RUN_ID", "4242"),
        ("GITHUB_RUN_ATTEMPT", "1"),
        ("INPUT_GITHUB_TOKEN", TOKEN),
        ("INPUT_COMMAND", "/compute"),
        ("INPUT_POLICY", ""),
        ("INPUT_PROVIDER", ""),
        ("INPUT_MODEL", ""),
        ("INPUT_BASE_URL", ""),
        ("INPUT_API_KEY", ""),
        ("INPUT_GOAL", ""),
        ("INPUT_CODE", ""),
        ("INPUT_INPUTS", ""),
        ("INPUT_ISSUE", ""),
    ];
    for (k, v) in env {
        cmd.arg("-e").arg(format!("{k}={v}"));
    }
    cmd.args([&tag, "action"]);
    let run = tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap();
    let _bot = Container(bot_name);
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    assert_eq!(run.status.code(), Some(0), "{log}");

    let bots: Vec<_> = gh
        .comments(REPO, 7)
        .into_iter()
        .filter(|c| c.author == DEFAULT_APP_LOGIN)
        .collect();
    assert_eq!(bots.len(), 1, "{log}");
    let c = &bots[0].body;
    assert!(c.contains("✅ compute-bot: result"), "{c}");
    assert!(c.contains("| total | 42 |"), "{c}");
    // The sandbox ran the locked data stack (pandas 2), and the comment names it.
    assert!(c.contains("| pandas\\_major | 2 |"), "{c}");
    assert!(c.contains("| Data stack | Python 3.11.2, pandas 2."), "{c}");
    assert!(c.contains("<!-- compute-bot:run=4242 -->"));
    assert_eq!(gh.reactions(cid), vec!["eyes", "rocket"]);

    let outputs = crate::support::parse_outputs(
        &std::fs::read_to_string(d.join("file_commands/set_output_1")).unwrap(),
    );
    assert_eq!(
        outputs.get("status").map(String::as_str),
        Some("ok"),
        "{outputs:?}"
    );
    let summary = std::fs::read_to_string(d.join("file_commands/step_summary_1")).unwrap();
    assert!(summary.contains("| total | 42 |"), "{summary}");
    // The report the workflow uploads is in the workspace, under the relative path.
    let report = outputs.get("report_path").unwrap();
    assert!(d.join("workspace").join(report).exists(), "{report}");
    assert!(
        !log.contains(TOKEN)
            || log
                .lines()
                .all(|l| !l.contains(TOKEN) || l.starts_with("::add-mask::"))
    );
}

/// The image the release would push (issue 43 item 4): `scripts/build-bot-image`
/// over the binary, FROM scratch and offline, checked by the script the release
/// runs on its pushed image (`scripts/check-bot-image`): `--version` names this
/// version, and `doctor` in the image, through the mounted engine socket, finds
/// the sandbox image and passes. This binary records no release layer, so
/// doctor's layer line is skipped with the image's own layer, and the release's
/// stricter check (`--release-layer`) fails on it.
#[test]
fn the_bot_image_runs_version_and_doctor() {
    let root = env!("CARGO_MANIFEST_DIR");
    let tag = format!("compute-bot-release-check:{}", std::process::id());
    let build = Command::new(format!("{root}/scripts/build-bot-image"))
        .args([env!("CARGO_BIN_EXE_compute-bot"), &tag])
        .output()
        .unwrap();
    let _image = Image(tag.clone());
    assert!(
        build.status.success(),
        "{}",
        String::from_utf8_lossy(&build.stderr)
    );
    let sandbox = compute_bot::sandbox::DEFAULT_IMAGE;
    let check = |strict: bool| {
        let mut cmd = Command::new(format!("{root}/scripts/check-bot-image"));
        if strict {
            cmd.arg("--release-layer");
        }
        let out = cmd
            .args([&tag, env!("CARGO_PKG_VERSION"), sandbox])
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, log) = check(false);
    assert_eq!(code, Some(0), "{log}");
    assert!(
        log.contains(&format!("{tag}: compute-bot {}", env!("CARGO_PKG_VERSION"))),
        "{log}"
    );
    assert!(
        log.contains(&format!(
            "✓ sandbox image: {sandbox}: Python 3.11.2, pandas "
        )),
        "{log}"
    );
    assert!(
        log.contains("✓ docker: engine ") && log.contains("all checks passed"),
        "{log}"
    );
    let layer = Command::new("docker")
        .args([
            "image",
            "inspect",
            "--format",
            "{{index .RootFS.Layers 0}}",
            sandbox,
        ])
        .output()
        .unwrap();
    let layer = String::from_utf8_lossy(&layer.stdout).trim().to_string();
    assert!(layer.starts_with("sha256:"), "{layer}");
    assert!(
        log.contains(&format!(
            "- sandbox layer: skipped (a development build records no release layer; {sandbox}'s is {layer})"
        )),
        "{log}"
    );
    let (code, log) = check(true);
    assert_eq!(code, Some(1), "{log}");
    assert!(log.contains("does not say"), "{log}");
}
