//! `compute-bot init` and `compute-bot doctor` as a user runs them: the real
//! binary, a real git repository, the real Docker engine, the LLM stand-in.

use std::path::Path;
use std::process::{Command, Output};

use crate::support::llm_standin::{CANARY_KEY, LlmStandin, Reply};
use serde_json::Value;
use sha2::{Digest, Sha256};

fn bot(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_compute-bot"));
    cmd.args(args).current_dir(dir);
    for k in [
        "COMPUTE_BOT_API_KEY",
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "COMPUTE_BOT_PROVIDER",
        "COMPUTE_BOT_MODEL",
        "COMPUTE_BOT_BASE_URL",
        "GITHUB_ACTIONS",
    ] {
        cmd.env_remove(k);
    }
    cmd.envs(env.iter().copied());
    cmd.output().unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn git_repo() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    let st = Command::new("git")
        .args(["init", "-q"])
        .current_dir(d.path())
        .status()
        .unwrap();
    assert!(st.success());
    d
}

#[test]
fn init_outside_a_repository_writes_nothing() {
    let d = tempfile::tempdir().unwrap();
    let o = bot(d.path(), &["init"], &[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("not inside a git repository"));
    assert!(!d.path().join(".github").exists());
}

#[test]
fn init_writes_a_workflow_and_policy_that_pass_the_checks() {
    let d = git_repo();
    let o = bot(d.path(), &["init"], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let out = text(&o);
    for step in [
        "COMPUTE_BOT_API_KEY",
        "git push",
        "policy check",
        "release notes",
    ] {
        assert!(out.contains(step), "next steps lack {step}: {out}");
    }
    let wf = d.path().join(".github/workflows/compute.yml");
    let policy = d.path().join(".github/compute-bot.yml");
    assert!(wf.exists() && policy.exists());
    let watches_wf = d.path().join(".github/workflows/compute-watches.yml");
    assert!(watches_wf.exists());
    let w = std::fs::read_to_string(&watches_wf).unwrap();
    assert!(
        w.contains("schedule:") && w.contains("pull_request:"),
        "{w}"
    );

    // The sample watch passes `watch check`; a typo in it is named by line.
    let o = bot(d.path(), &["watch", "check", ".github/compute"], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("`sales`"), "{}", text(&o));
    let sample = d.path().join(".github/compute/sales.yml");
    let good = std::fs::read_to_string(&sample).unwrap();
    std::fs::write(&sample, good.replace("tolerance:", "tolerence:")).unwrap();
    let o = bot(d.path(), &["watch", "check"], &[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let line = good
        .lines()
        .position(|l| l.starts_with("tolerance:"))
        .unwrap()
        + 1;
    assert!(
        text(&o).contains(&format!(".github/compute/sales.yml:{line}:1: ")),
        "{}",
        text(&o)
    );
    std::fs::write(&sample, good).unwrap();

    // The policy is valid for the bot's own checker.
    let o = bot(
        d.path(),
        &["policy", "check", ".github/compute-bot.yml"],
        &[],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));

    // The workflow passes actionlint and zizmor (installed by the script).
    let lint = Command::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scripts/lint-workflows"
    ))
    .arg(&wf)
    .arg(&watches_wf)
    .current_dir(env!("CARGO_MANIFEST_DIR"))
    .output()
    .unwrap();
    assert!(lint.status.success(), "{}", text(&lint));

    // Never overwritten without --force; both files stay as they were.
    std::fs::write(&policy, "version: 1\n").unwrap();
    let o = bot(d.path(), &["init"], &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("--force"), "{}", text(&o));
    assert_eq!(std::fs::read_to_string(&policy).unwrap(), "version: 1\n");

    // --force with the release's pins fills them in.
    let sha = "3d3c42e5aac5ba805825da76410c181273ba90b1";
    let digest = format!(
        "ghcr.io/acme/compute-bot-sandbox@sha256:{}",
        "ab".repeat(32)
    );
    let action = format!("acme/compute-bot@{sha} # v1.2.0");
    let o = bot(
        d.path(),
        &[
            "init",
            "--force",
            "--action",
            &action,
            "--sandbox-image",
            &digest,
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    // The workflows pin the action and pull nothing themselves: the policy
    // pins the sandbox image, which the bot pulls when the engine lacks it.
    for f in [&wf, &watches_wf] {
        let w = std::fs::read_to_string(f).unwrap();
        assert!(w.contains(&format!("uses: {action}")), "{w}");
        assert!(!w.contains("@0000") && !w.contains("sha256:0000"), "{w}");
        assert!(!w.contains("docker pull"), "{w}");
    }
    let p = std::fs::read_to_string(&policy).unwrap();
    assert!(!p.contains("sha256:0000"), "{p}");
    let read = compute_bot::policy::Policy::from_yaml_str(&p, "p.yml").unwrap();
    assert_eq!(read.image(), digest);
}

#[test]
fn init_rejects_an_unpinned_action_and_writes_nothing() {
    let d = git_repo();
    let o = bot(d.path(), &["init", "--action", "acme/compute-bot@v1"], &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("40 hex"), "{}", text(&o));
    assert!(!d.path().join(".github").exists());
}

#[test]
fn doctor_without_docker_names_docker_host_and_the_fix() {
    let d = tempfile::tempdir().unwrap();
    let sock = d.path().join("dead.sock");
    let host = format!("unix://{}", sock.display());
    let o = bot(d.path(), &["doctor"], &[("DOCKER_HOST", &host)]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let out = text(&o);
    assert!(
        out.contains(&format!(
            "✗ docker: no engine answers at DOCKER_HOST={host}"
        )),
        "{out}"
    );
    assert!(out.contains("start Docker"), "{out}");
    assert!(out.contains("- sandbox image: skipped"), "{out}");
}

#[test]
fn doctor_checks_the_policys_reserve_on_lines_of_its_own() {
    let d = tempfile::tempdir().unwrap();
    let first = format!("unix://{}", d.path().join("dead.sock").display());
    std::fs::write(
        d.path().join("p.yml"),
        format!(
            "version: 1\nsandbox:\n  engine: {first}\n  reserve:\n    engine: unix:///var/run/docker.sock\n    runtime: runc\n"
        ),
    )
    .unwrap();
    let o = bot(d.path(), &["doctor", "--policy", "p.yml"], &[]);
    let out = text(&o);
    // The first engine is down: a failed line naming the policy's key.
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.contains(&format!(
            "✗ docker: no engine answers at sandbox.engine={first}"
        )),
        "{out}"
    );
    assert!(out.contains("- sandbox image: skipped"), "{out}");
    // The reserve answers, with its own image and runtime lines.
    assert!(
        out.contains("✓ reserve engine: engine ") && out.contains("at unix:///var/run/docker.sock"),
        "{out}"
    );
    assert!(
        out.contains("reserve image: compute-bot-sandbox:python"),
        "{out}"
    );
    assert!(out.contains("✓ reserve runtime: runs use runc"), "{out}");
}

/// An image with only labels, made offline (`docker import` of an empty tar).
fn labelled_image(tag: &str, lock_sha: &str) {
    let mut child = Command::new("docker")
        .args([
            "import",
            "--change",
            &format!(
                "LABEL org.compute-bot.python=3.11.2 org.compute-bot.pandas=2.3.3 org.compute-bot.lock-sha256={lock_sha}"
            ),
            "-",
            tag,
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        // An empty tar archive: two 512-byte zero blocks.
        child.stdin.take().unwrap().write_all(&[0u8; 1024]).unwrap();
    }
    assert!(child.wait().unwrap().success());
}

fn remove_image(tag: &str) {
    let _ = Command::new("docker")
        .args(["image", "rm", "-f", tag])
        .output();
}

#[tokio::test(flavor = "multi_thread")]
async fn doctor_checks_image_labels_policy_and_model() {
    let lock = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/sandbox/requirements.lock"
    ))
    .unwrap();
    let lock_sha = hex::encode(Sha256::digest(&lock));
    let pid = std::process::id();
    let good = format!("compute-bot-doctor-test:good-{pid}");
    let old = format!("compute-bot-doctor-test:old-{pid}");
    labelled_image(&good, &lock_sha);
    labelled_image(&old, &"0".repeat(64));

    let llm = LlmStandin::openai().await;
    llm.push(Reply::text("pong"));
    let d = tempfile::tempdir().unwrap();
    let write_policy = |image: &str| {
        std::fs::write(
            d.path().join("p.yml"),
            format!("version: 1\nsandbox:\n  image: {image}\n"),
        )
        .unwrap();
    };
    let model_env = [
        ("COMPUTE_BOT_API_KEY", CANARY_KEY),
        ("COMPUTE_BOT_MODEL", "gpt-test"),
        ("COMPUTE_BOT_BASE_URL", &llm.base_url()),
    ];

    write_policy(&good);
    let layer = Command::new("docker")
        .args([
            "image",
            "inspect",
            "--format",
            "{{index .RootFS.Layers 0}}",
            &good,
        ])
        .output()
        .unwrap();
    let layer = String::from_utf8_lossy(&layer.stdout).trim().to_string();
    let o = bot(d.path(), &["doctor", "--policy", "p.yml"], &model_env);
    let out = text(&o);
    remove_image(&good);
    // This build records no release layer: the line says so and names the
    // image's own layer (the release's binary compares it: cli/doctor.rs).
    assert!(layer.starts_with("sha256:"), "{layer}");
    assert!(
        out.contains(&format!(
            "- sandbox layer: skipped (a development build records no release layer; {good}'s is {layer})"
        )),
        "{out}"
    );
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(
        out.contains("✓ docker: engine ") && out.contains("API 1."),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "✓ sandbox image: {good}: Python 3.11.2, pandas 2.3.3"
        )),
        "{out}"
    );
    assert!(out.contains("✓ policy: p.yml is valid"), "{out}");
    assert!(
        out.contains("✓ model:") && out.contains("answered"),
        "{out}"
    );
    assert!(out.contains("✓ runtime: "), "{out}");
    assert!(!out.contains(CANARY_KEY));

    // An image from another lock, a wrong key, a broken policy: each a ✗ with its fix.
    write_policy(&old);
    let bad_key = [
        ("COMPUTE_BOT_API_KEY", "wrong-key"),
        ("COMPUTE_BOT_MODEL", "gpt-test"),
        ("COMPUTE_BOT_BASE_URL", &llm.base_url()),
    ];
    let o = bot(d.path(), &["doctor", "--policy", "p.yml"], &bad_key);
    let out = text(&o);
    remove_image(&old);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.contains("built from another lock") && out.contains("fix: rebuild it"),
        "{out}"
    );
    assert!(out.contains("✗ model:"), "{out}");
    assert!(!out.contains("wrong-key"), "{out}");

    std::fs::write(
        d.path().join("p.yml"),
        "version: 1\nsandbox:\n  timeout: soon\n",
    )
    .unwrap();
    let o = bot(d.path(), &["doctor", "--policy", "p.yml"], &[]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("✗ policy:") && out.contains("p.yml"), "{out}");
    assert!(out.contains("- model: skipped"), "{out}");
}

#[test]
fn init_offers_contents_write_for_charts_and_the_workflow_still_lints_clean() {
    let d = git_repo();
    let o = bot(d.path(), &["init"], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("--charts"), "{}", text(&o));
    let wf = d.path().join(".github/workflows/compute.yml");
    let job = |w: &str| -> Value {
        let v: Value = serde_saphyr::from_str(w).unwrap();
        v["jobs"]["compute"]["permissions"]["contents"].clone()
    };
    let read = std::fs::read_to_string(&wf).unwrap();
    assert_eq!(job(&read), "read", "least privilege unless asked");
    // The artifact the fallback note links holds the run's files.
    assert!(read.contains("compute-bot-reports/runs/"), "{read}");

    let o = bot(d.path(), &["init", "--force", "--charts"], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(!text(&o).contains("--charts"), "{}", text(&o));
    let write = std::fs::read_to_string(&wf).unwrap();
    assert_eq!(job(&write), "write", "{write}");
    let lint = Command::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scripts/lint-workflows"
    ))
    .arg(&wf)
    .current_dir(env!("CARGO_MANIFEST_DIR"))
    .output()
    .unwrap();
    assert!(lint.status.success(), "{}", text(&lint));
}

/// `watch check` reads a watch's `github:` entries as the run does: a bad
/// one is named at its file:line:column with what to write, and one the
/// policy does not opt into (`inputs.github`) is named with the key to add —
/// the policy the Action would find here, or `--policy FILE`. (Before, every
/// entry starting with `github:` passed unread.)
#[test]
fn watch_check_reads_github_sources_and_the_policys_opt_in() {
    let d = git_repo();
    let o = bot(
        d.path(),
        &["init", "--github", "pulls,reviews,workflow_runs"],
        &[],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = bot(d.path(), &["watch", "check"], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        text(&o).contains("github: sources checked against the policy .github/compute-bot.yml"),
        "{}",
        text(&o)
    );
    let watch = d.path().join(".github/compute/engineering.yml");
    let good = std::fs::read_to_string(&watch).unwrap();
    let at = |text: &str, needle: &str| {
        let (i, l) = text
            .lines()
            .enumerate()
            .find(|(_, l)| l.contains(needle))
            .unwrap();
        format!("{}:{}", i + 1, l.find(needle).unwrap() + 1)
    };
    // A typo in a source: its place and the sources there are.
    let bad = good.replace("\"github:reviews\"", "\"github:review\"");
    std::fs::write(&watch, &bad).unwrap();
    let o = bot(d.path(), &["watch", "check"], &[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let want = format!(
        ".github/compute/engineering.yml:{}: input `github:review`: `github:review` is not a source; the sources are `pulls`, `reviews`",
        at(&bad, "\"github:review\"")
    );
    assert!(text(&o).contains(&want), "{want}\n{}", text(&o));
    // A key the source does not take.
    let bad = good.replace(
        "\"github:workflow_runs?since=-28d\"",
        "\"github:workflow_runs?state=closed\"",
    );
    std::fs::write(&watch, &bad).unwrap();
    let o = bot(d.path(), &["watch", "check"], &[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains(&format!(
            ".github/compute/engineering.yml:{}: ",
            at(&bad, "\"github:workflow_runs")
        )) && text(&o).contains(
            "`github:workflow_runs` takes no `state`; its keys are `since`, `until`, `limit`"
        ),
        "{}",
        text(&o)
    );
    std::fs::write(&watch, &good).unwrap();

    // A source the policy does not opt into, placed at its entry.
    let policy = d.path().join(".github/compute-bot.yml");
    std::fs::write(&policy, "version: 1\ninputs:\n  github: [pulls, reviews]\n").unwrap();
    let o = bot(d.path(), &["watch", "check"], &[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let want = format!(
        ".github/compute/engineering.yml:{}: input `github:workflow_runs?since=-28d`: `github:workflow_runs` is not allowed by the policy (sources allowed: pulls, reviews); add `workflow_runs` to `inputs.github`",
        at(&good, "\"github:workflow_runs")
    );
    assert!(text(&o).contains(&want), "{want}\n{}", text(&o));
    // --policy names another file; without any, the syntax alone is checked and said so.
    std::fs::write(
        d.path().join("all.yml"),
        "version: 1\ninputs:\n  github: [pulls, reviews, workflow_runs]\n",
    )
    .unwrap();
    let o = bot(d.path(), &["watch", "check", "--policy", "all.yml"], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        text(&o).contains("against the policy all.yml"),
        "{}",
        text(&o)
    );
    std::fs::remove_file(&policy).unwrap();
    let o = bot(d.path(), &["watch", "check"], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        text(&o).contains("checked for their syntax only"),
        "{}",
        text(&o)
    );
    let o = bot(d.path(), &["watch", "check", "--policy", "none.yml"], &[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
}

#[test]
fn init_with_github_sources_writes_their_permissions_policy_and_metrics_watch() {
    let d = git_repo();
    let o = bot(d.path(), &["init", "--github", "pulls,revews"], &[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("\"revews\": not a source") && text(&o).contains("`workflow_runs`"),
        "{}",
        text(&o)
    );
    assert!(!d.path().join(".github").exists(), "nothing written");

    let o = bot(
        d.path(),
        &["init", "--github", "pulls,reviews,workflow_runs"],
        &[],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let read = |rel: &str| std::fs::read_to_string(d.path().join(rel)).unwrap();
    for wf in [
        ".github/workflows/compute.yml",
        ".github/workflows/compute-watches.yml",
    ] {
        let v: Value = serde_saphyr::from_str(&read(wf)).unwrap();
        let perms = &v["jobs"]["compute"]["permissions"];
        assert_eq!(perms["actions"], "read", "{wf}: {perms}");
        assert_eq!(
            perms["pull-requests"], "write",
            "{wf}: includes reading pulls"
        );
    }
    let policy =
        compute_bot::policy::Policy::from_yaml_str(&read(".github/compute-bot.yml"), "p.yml")
            .unwrap();
    let effective = policy.to_effective_yaml();
    assert!(
        effective.contains("- pulls") && effective.contains("- workflow_runs"),
        "{effective}"
    );
    let watch = compute_bot::watch_spec::Watch::parse(
        &read(".github/compute/engineering.yml"),
        "engineering.yml",
    )
    .unwrap();
    assert!(
        watch
            .inputs
            .iter()
            .any(|i| i.starts_with("github:workflow_runs"))
    );
    let lint = Command::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scripts/lint-workflows"
    ))
    .arg(d.path().join(".github/workflows/compute.yml"))
    .arg(d.path().join(".github/workflows/compute-watches.yml"))
    .current_dir(env!("CARGO_MANIFEST_DIR"))
    .output()
    .unwrap();
    assert!(lint.status.success(), "{}", text(&lint));
}
