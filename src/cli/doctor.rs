//! `compute-bot doctor`: checks what a run needs, one line per check with ✓ or ✗
//! and, for ✗, the fix. Exit 0 only when everything the configuration needs is
//! there; 1 otherwise.
//!
//! Checks: the Docker engine (and its API version), the policy, the sandbox
//! image and its labels (data stack, lock), whether its layer is the one the
//! release built, tested and pushed (`sandbox/release-layers`), the container
//! runtime — for the first environment and for the policy's `sandbox.reserve`
//! —, the model
//! endpoint (one small call; skipped without a key), and inside GitHub Actions
//! whether the token is accepted for the repository.

use crate::status::Status;
use std::path::{Path, PathBuf};

use clap::Args;
use sha2::{Digest, Sha256};

use crate::model::{ChatRequest, Message, ModelClient, ModelConfig, ModelOverrides};
use crate::policy::Policy;
use crate::sandbox::{DataStack, EngineFacts, Executor, ImageInfo, Runtime};

/// The lock the sandbox image should be built from (its sha256 is compared
/// with the image's `org.compute-bot.lock-sha256` label).
const LOCK: &str = include_str!("../../sandbox/requirements.lock");

/// The release's sandbox layer per platform (`linux/amd64 sha256:…` lines),
/// written by the release before it builds this binary
/// (`scripts/release-layers`); between releases it names none.
const RELEASE_LAYERS: &str = include_str!("../../sandbox/release-layers");

/// Flags of `compute-bot doctor`.
#[derive(Debug, Args)]
pub(crate) struct DoctorArgs {
    /// The policy file (default: .github/compute-bot.yml or
    /// .github/compute-policy.yml when present, else the built-in policy).
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,
}

/// One check's outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Check {
    /// There and working: what was found.
    Ok(String),
    /// Missing or broken: what, and the fix.
    Fail(String, String),
    /// Not needed by this configuration: why.
    Skip(String),
}

impl Check {
    fn line(&self, name: &str) -> String {
        match self {
            Check::Ok(what) => format!("✓ {name}: {what}"),
            Check::Fail(what, fix) => format!("✗ {name}: {what}\n    fix: {fix}"),
            Check::Skip(why) => format!("- {name}: skipped ({why})"),
        }
    }
}

/// Runs every check, prints one line each: `Ok` (exit 0) when none failed,
/// else `Failed` (exit 1).
pub(crate) async fn doctor_command(args: &DoctorArgs) -> Status {
    let checks = run_checks(args).await;
    let mut failed = 0;
    for (name, check) in &checks {
        println!("{}", check.line(name));
        failed += usize::from(matches!(check, Check::Fail(..)));
    }
    if failed == 0 {
        println!("all checks passed");
        Status::Ok
    } else {
        println!("{failed} check(s) failed");
        Status::Failed
    }
}

/// The checks in order, named.
async fn run_checks(args: &DoctorArgs) -> Vec<(&'static str, Check)> {
    let mut out = Vec::new();
    let (policy_check, policy) = check_policy(args.policy.as_deref());
    out.push(("policy", policy_check));
    let image = policy
        .as_ref()
        .map(|p| p.image().to_string())
        .unwrap_or_else(|| crate::sandbox::DEFAULT_IMAGE.to_string());
    let wanted = super::resolve_runtime(None, policy.as_ref().and_then(|p| p.sandbox.runtime));
    let envs = policy
        .as_ref()
        .map(|p| p.sandbox.environments())
        .unwrap_or_default();
    let source = match policy.as_ref().and_then(|p| p.sandbox.engine.as_ref()) {
        Some(_) => "sandbox.engine",
        None => "DOCKER_HOST",
    };
    let first = Place {
        names: ["docker", "sandbox image", "sandbox layer", "runtime"],
        source,
        address: &envs.engine,
    };
    check_place(&mut out, &first, &image, wanted.clone()).await;
    if let Some(reserve) = &envs.reserve {
        let address = reserve.engine.as_deref().unwrap_or(&envs.engine);
        let place = Place {
            names: [
                "reserve engine",
                "reserve image",
                "reserve layer",
                "reserve runtime",
            ],
            source: "sandbox.reserve",
            address,
        };
        check_place(&mut out, &place, &image, reserve.runtime.map_or(wanted, Ok)).await;
    }
    out.push(("model", check_model().await));
    out.push(("github token", check_token().await));
    out
}

/// An execution environment doctor checks: the names of its four lines
/// (engine, image, layer, runtime), where its address comes from and the address.
struct Place<'a> {
    names: [&'static str; 4],
    source: &'static str,
    address: &'a str,
}

/// The engine, image, layer and runtime lines of one environment (the first,
/// or the policy's reserve).
async fn check_place(
    out: &mut Vec<(&'static str, Check)>,
    place: &Place<'_>,
    image: &str,
    wanted: Result<Runtime, String>,
) {
    let [engine, image_name, layer, runtime] = place.names;
    let executor = match crate::sandbox::connect_to(place.address, crate::sandbox::Use::Check).await
    {
        Ok(executor) => executor,
        Err(e) => return no_engine(out, place, &e.to_string()),
    };
    match executor.engine().await {
        Ok(facts) => {
            out.push((engine, check_engine(&facts)));
            let (image_check, info) = check_image(executor.as_ref(), image).await;
            out.push((image_name, image_check));
            let layer_check = match info {
                Some(info) => check_layer(RELEASE_LAYERS, &info),
                None => Check::Skip("no sandbox image on the engine".into()),
            };
            out.push((layer, layer_check));
            out.push((runtime, check_runtime(&facts, wanted)));
        }
        Err(e) => no_engine(out, place, &e.to_string()),
    }
}

fn check_policy(path: Option<&Path>) -> (Check, Option<Policy>) {
    let found = path.map(Path::to_path_buf).or_else(|| {
        [".github/compute-bot.yml", ".github/compute-policy.yml"]
            .into_iter()
            .map(PathBuf::from)
            .find(|p| p.exists())
    });
    let Some(path) = found else {
        return (
            Check::Ok("none in .github/; the built-in default policy applies (`compute-bot init` writes one)".into()),
            Some(Policy::default()),
        );
    };
    match Policy::load(&path) {
        Ok(p) => (Check::Ok(format!("{} is valid", path.display())), Some(p)),
        Err(e) => (
            Check::Fail(
                e.to_string(),
                format!(
                    "correct {} as the message says; `compute-bot policy check {}` prints the effective policy",
                    path.display(),
                    path.display()
                ),
            ),
            None,
        ),
    }
}

/// The engine line: kind, version and API, and where it answers.
fn check_engine(facts: &EngineFacts) -> Check {
    let version = facts.version.as_deref().unwrap_or("?");
    let api = facts.api_version.as_deref().unwrap_or("?");
    let kind = if facts.kind == "Docker" {
        String::new()
    } else {
        format!(" ({})", facts.kind)
    };
    Check::Ok(format!(
        "engine {version}, API {api} at {}{kind}",
        facts.address
    ))
}

/// No engine answered: the engine line fails with the fix, and what needs it is skipped.
fn no_engine(out: &mut Vec<(&'static str, Check)>, place: &Place<'_>, error: &str) {
    let [engine, image, layer, runtime] = place.names;
    out.push((
        engine,
        Check::Fail(
            format!(
                "no engine answers at {}={} ({})",
                place.source,
                place.address,
                error.lines().next().unwrap_or("")
            ),
            "start Docker (`sudo systemctl start docker`, `sudo dockerd &`, or Docker Desktop), or set DOCKER_HOST to a running engine, e.g. DOCKER_HOST=unix:///var/run/docker.sock".into(),
        ),
    ));
    for name in [image, layer, runtime] {
        out.push((name, Check::Skip("no Docker engine".into())));
    }
}

/// The image line (there, its data stack, built from this release's lock),
/// and the image's facts when the engine has it.
async fn check_image(executor: &dyn Executor, image: &str) -> (Check, Option<ImageInfo>) {
    let info = match executor.image(image).await {
        Ok(i) => i,
        // Pinned by digest or naming its registry: a run pulls it.
        Err(crate::sandbox::SandboxError::ImageMissing { .. })
            if crate::sandbox::ImageRef::parse(image).is_some_and(|r| r.pulls()) =>
        {
            let why = format!(
                "{image} is not on the engine yet; a run pulls it when it needs it (by digest when pinned; a private registry needs `docker login` first)"
            );
            return (Check::Skip(why), None);
        }
        Err(e) => {
            let fail = Check::Fail(
                format!(
                    "{image} is missing ({})",
                    e.to_string().lines().next().unwrap_or("")
                ),
                format!(
                    "build it without a registry: sandbox/build-debian.sh {image} (or scripts/ensure-sandbox-image); on GitHub, name the release's sandbox image by digest in the policy's `sandbox.image` (the bot pulls it)"
                ),
            );
            return (fail, None);
        }
    };
    let stack = DataStack::from_labels(&info.labels)
        .summary()
        .unwrap_or_else(|| "no version labels".into());
    let want = hex::encode(Sha256::digest(LOCK.as_bytes()));
    let check = match info.labels.get("org.compute-bot.lock-sha256") {
        Some(have) if *have == want => {
            Check::Ok(format!("{image}: {stack}; built from this release's lock"))
        }
        have => Check::Fail(
            format!(
                "{image}: {stack}; built from another lock (lock-sha256 {}, this release's is {})",
                have.map(String::as_str).unwrap_or("none"),
                &want[..12]
            ),
            format!(
                "rebuild it: sandbox/build-debian.sh {image} (scripts/ensure-sandbox-image does it when the label differs)"
            ),
        ),
    };
    (check, Some(info))
}

/// The platforms and layers `recorded` names (the text of
/// `sandbox/release-layers`: `#` comments, blank lines, `<os/arch>
/// sha256:<64 hex>` lines), or the first line that is none of those.
fn release_layers(recorded: &str) -> Result<Vec<(&str, &str)>, String> {
    let mut out = Vec::new();
    for (n, line) in recorded.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut words = line.split_whitespace();
        match (words.next(), words.next(), words.next()) {
            (Some(platform), Some(layer), None)
                if platform.contains('/') && is_sha256_digest(layer) =>
            {
                out.push((platform, layer));
            }
            _ => {
                return Err(format!(
                    "line {} is not `<os/arch> sha256:<64 hex>`: {line:?}",
                    n + 1
                ));
            }
        }
    }
    Ok(out)
}

/// `sha256:` and 64 lowercase hex digits.
fn is_sha256_digest(s: &str) -> bool {
    s.strip_prefix("sha256:").is_some_and(|h| {
        h.len() == 64
            && h.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

/// The layer line: whether the image's layer is the one the release built,
/// tested and pushed for the image's platform (`recorded`: the text of
/// `sandbox/release-layers`). A development build records none (skipped).
fn check_layer(recorded: &str, info: &ImageInfo) -> Check {
    let image = &info.reference;
    let have = info.layers.first().map(String::as_str).unwrap_or("none");
    let layers = match release_layers(recorded) {
        Ok(l) => l,
        Err(e) => {
            return Check::Fail(
                format!("this build's sandbox/release-layers is unreadable: {e}"),
                "build the binary from a release commit (its release-layers is what scripts/release-layers wrote)".into(),
            );
        }
    };
    if layers.is_empty() {
        return Check::Skip(format!(
            "a development build records no release layer; {image}'s is {have}"
        ));
    }
    let platform = if info.platform.is_empty() {
        "?"
    } else {
        &info.platform
    };
    let Some((_, want)) = layers.iter().find(|(p, _)| *p == platform) else {
        let recorded: Vec<&str> = layers.iter().map(|(p, _)| *p).collect();
        return Check::Fail(
            format!(
                "{image} is for {platform}; this release built the sandbox image for {} only",
                recorded.join(" and ")
            ),
            "run on one of those platforms with the release's sandbox image".into(),
        );
    };
    let extra = info.layers.len().saturating_sub(1);
    match info.layers.first() {
        Some(first) if first == want && extra == 0 => Check::Ok(format!(
            "{image} is this release's sandbox image for {platform}: layer {want}"
        )),
        Some(first) if first == want => Check::Ok(format!(
            "{image} is built on this release's sandbox image for {platform} (layer {want}) with {extra} layer(s) of its own"
        )),
        _ => Check::Fail(
            format!(
                "{image}'s layer is {have}, not this release's for {platform} ({want}): not the image the release tested"
            ),
            "name the release's sandbox image by digest in the policy's `sandbox.image` (the release notes print it; the bot pulls it); a build from this release's lock gives this layer only from the Debian packages of the release's day".into(),
        ),
    }
}

/// The runtime runs would use (the policy's, else COMPUTE_BOT_RUNTIME, else
/// runc) and whether the engine offers it.
fn check_runtime(facts: &EngineFacts, wanted: Result<Runtime, String>) -> Check {
    let runtime = match wanted {
        Ok(r) => r.as_str(),
        Err(e) => {
            return Check::Fail(
                e,
                "set COMPUTE_BOT_RUNTIME to runc or runsc, or unset it".into(),
            );
        }
    };
    let Some(default) = &facts.default_runtime else {
        return Check::Fail(
            "the engine did not name its runtimes".into(),
            "check `docker info` on this machine".into(),
        );
    };
    let available = facts.runtimes.join(", ");
    if !facts.runtimes.is_empty() && !facts.runtimes.iter().any(|r| r == runtime) {
        return Check::Fail(
            format!("runs use {runtime}, which the engine does not offer (available: {available})"),
            if runtime == "runsc" {
                "install and register gVisor: scripts/install-gvisor".into()
            } else {
                format!("register {runtime} with the engine, or name another runtime")
            },
        );
    }
    let record = match (wanted, &facts.gvisor_log) {
        (Ok(Runtime::Runsc), Some(log)) => match log.unusable_from_here(&facts.address) {
            None => format!(
                "the full record: runs use `{}` (gVisor with its kernel's log of each open, socket and the code's start, in {}), which the bot reads outside the sandbox, Python and native code alike",
                log.name,
                log.dir.display()
            ),
            Some(why) => format!(
                "{} (`{}` is offered, but {why})",
                Runtime::Runsc.audit_record(),
                log.name
            ),
        },
        (Ok(Runtime::Runsc), None) => format!(
            "{}; for the full record under gVisor register `{}`: scripts/install-gvisor",
            Runtime::Runsc.audit_record(),
            crate::sandbox::RECORD_RUNTIME
        ),
        (w, _) => w.map(Runtime::audit_record).unwrap_or_default().to_string(),
    };
    Check::Ok(format!(
        "runs use {runtime}; the engine's default is {default}; available: {available}; audit: {record}"
    ))
}

async fn check_model() -> Check {
    let cfg = match ModelConfig::from_env(&ModelOverrides::default()) {
        Ok(Some(cfg)) => cfg,
        Ok(None) => return Check::Skip("no model configured: only ```python blocks run".into()),
        Err(e) => {
            return Check::Fail(
                e.to_string(),
                "set COMPUTE_BOT_PROVIDER, COMPUTE_BOT_MODEL and COMPUTE_BOT_API_KEY consistently"
                    .into(),
            );
        }
    };
    if cfg.api_key.is_none() {
        return Check::Skip(format!("no API key ({})", cfg.key_setting()));
    }
    let mut cfg = cfg;
    cfg.max_retries = 0;
    // The first model on its own: a fallback answering would hide it.
    cfg.fallback = None;
    let (model, endpoint) = (cfg.model.clone(), cfg.base_url.clone());
    let client = match ModelClient::new(cfg) {
        Ok(c) => c,
        Err(e) => return Check::Fail(e.to_string(), "check COMPUTE_BOT_BASE_URL".into()),
    };
    let req = ChatRequest {
        system: "Answer with one word.".into(),
        messages: vec![Message::user("ping")],
        max_tokens: Some(1),
        tool: None,
    };
    match client.complete(&req).await {
        Ok(r) => Check::Ok(format!("{} at {endpoint} answered", r.model)),
        Err(e) => Check::Fail(
            format!("{model} at {endpoint}: {e}"),
            "check the key, the model name and the base URL (COMPUTE_BOT_API_KEY, COMPUTE_BOT_MODEL, COMPUTE_BOT_BASE_URL)".into(),
        ),
    }
}

async fn check_token() -> Check {
    if std::env::var("GITHUB_ACTIONS").as_deref() != Ok("true") {
        return Check::Skip("not inside GitHub Actions".into());
    }
    let token = std::env::var("INPUT_GITHUB_TOKEN")
        .or_else(|_| std::env::var("GITHUB_TOKEN"))
        .unwrap_or_default();
    let repo = std::env::var("GITHUB_REPOSITORY").unwrap_or_default();
    let api = std::env::var("GITHUB_API_URL").unwrap_or_else(|_| "https://api.github.com".into());
    if token.is_empty() || repo.is_empty() {
        return Check::Fail(
            "no token (INPUT_GITHUB_TOKEN / GITHUB_TOKEN) or no GITHUB_REPOSITORY".into(),
            "pass `github_token: ${{ github.token }}` (the action's default) and give the job `issues: write` and `pull-requests: write`".into(),
        );
    }
    let url = format!("{}/repos/{repo}", api.trim_end_matches('/'));
    let resp = reqwest::Client::new()
        .get(&url)
        .bearer_auth(&token)
        .header("user-agent", "compute-bot-doctor")
        .header("accept", "application/vnd.github+json")
        .send()
        .await;
    match resp {
        Ok(r) if r.status().is_success() => {
            // Installation tokens do not list their permissions; GitHub names a
            // missing one on the first comment (the bot reports it).
            Check::Ok(format!(
                "accepted for {repo}; commenting needs the job's `issues: write` / `pull-requests: write`"
            ))
        }
        Ok(r) => Check::Fail(
            format!("GET /repos/{repo} answered HTTP {}", r.status().as_u16()),
            "give the job `contents: read`, `issues: write` and `pull-requests: write`".into(),
        ),
        Err(e) => Check::Fail(
            format!("{api} did not answer ({e})"),
            "check GITHUB_API_URL and the runner's network".into(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const AMD64: &str = "sha256:78179dba450f53f7c8b993dfaa5f3f55918e7373134ded9387ead89f79a0395d";
    const ARM64: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    fn recorded() -> String {
        format!("# comment\n\nlinux/amd64 {AMD64}\nlinux/arm64 {ARM64}\n")
    }

    fn image(platform: &str, layers: &[&str]) -> ImageInfo {
        ImageInfo {
            reference: "compute-bot-sandbox:python".into(),
            layers: layers.iter().map(|l| l.to_string()).collect(),
            platform: platform.into(),
            ..ImageInfo::default()
        }
    }

    /// The committed file is one the binary can read (a release commit's
    /// names a layer per platform; between releases it names none).
    #[test]
    fn the_committed_release_layers_parse() {
        let layers = release_layers(RELEASE_LAYERS).unwrap();
        assert!(layers.iter().all(|(p, _)| p.starts_with("linux/")));
    }

    #[test]
    fn the_layer_line_says_whether_the_image_is_the_releases() {
        let r = recorded();
        let ok = check_layer(&r, &image("linux/amd64", &[AMD64]));
        assert_eq!(
            ok,
            Check::Ok(format!(
                "compute-bot-sandbox:python is this release's sandbox image for linux/amd64: layer {AMD64}"
            ))
        );
        // The arm64 layer on an arm64 engine; the amd64 one there is another build.
        assert!(matches!(
            check_layer(&r, &image("linux/arm64", &[ARM64])),
            Check::Ok(_)
        ));
        let Check::Fail(what, fix) = check_layer(&r, &image("linux/arm64", &[AMD64])) else {
            panic!("another layer passed");
        };
        assert!(
            what.contains(&format!(
                "layer is {AMD64}, not this release's for linux/arm64 ({ARM64})"
            )),
            "{what}"
        );
        assert!(
            fix.contains("by digest in the policy's `sandbox.image`"),
            "{fix}"
        );
        // Built on the release's image: said so, not claimed to be it.
        let Check::Ok(derived) = check_layer(&r, &image("linux/amd64", &[AMD64, ARM64])) else {
            panic!("a derived image failed");
        };
        assert!(
            derived.contains("is built on this release's")
                && derived.contains("1 layer(s) of its own"),
            "{derived}"
        );
        // A platform the release did not build, an image without layers.
        let Check::Fail(what, _) = check_layer(&r, &image("linux/riscv64", &[AMD64])) else {
            panic!("an unbuilt platform passed");
        };
        assert!(
            what.contains("for linux/amd64 and linux/arm64 only"),
            "{what}"
        );
        assert!(matches!(
            check_layer(&r, &image("linux/amd64", &[])),
            Check::Fail(..)
        ));
    }

    #[test]
    fn a_development_build_skips_the_layer_line_and_a_broken_record_fails_it() {
        let info = image("linux/amd64", &[AMD64]);
        assert_eq!(
            check_layer("# nothing recorded\n", &info),
            Check::Skip(format!(
                "a development build records no release layer; compute-bot-sandbox:python's is {AMD64}"
            ))
        );
        for broken in [
            "linux/amd64\n",
            "linux/amd64 sha256:abc\n",
            &format!("amd64 {AMD64}\n"),
            &format!("linux/amd64 {}\n", AMD64.to_uppercase()),
            &format!("linux/amd64 {AMD64} extra\n"),
        ] {
            let Check::Fail(what, _) = check_layer(broken, &info) else {
                panic!("{broken:?} was read");
            };
            assert!(what.contains("line 1 is not"), "{what}");
        }
    }
}
