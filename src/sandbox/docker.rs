//! Talking to the Docker engine: connecting (with API version negotiation),
//! the hardened container configuration, image facts and leftover cleanup.

use std::collections::{BTreeMap, HashMap};
use std::time::{SystemTime, UNIX_EPOCH};

use bollard::Docker;
use bollard::models::{ContainerCreateBody, HostConfig, HostConfigLogConfig, ResourcesUlimits};
use bollard::query_parameters::{ListContainersOptions, RemoveContainerOptions};

use super::error::SandboxError;
use super::host::{docker_host, hostname};
use super::protocol::RUNNER;
use super::types::{ImageInfo, SandboxConfig};

/// The uid:gid the code runs as inside the container. Images must not need root.
pub const SANDBOX_USER: &str = "10001:10001";

/// Label present on every container the bot creates.
pub const LABEL_MANAGED: &str = "org.compute-bot.managed";
/// Label naming the run (the container name).
pub const LABEL_RUN: &str = "org.compute-bot.run";
/// Label naming the host the creating bot ran on.
pub const LABEL_HOST: &str = "org.compute-bot.host";
/// Label with the pid of the creating bot process.
pub const LABEL_PID: &str = "org.compute-bot.pid";
/// Label with the unix time after which the container is certainly abandoned.
pub const LABEL_EXPIRES: &str = "org.compute-bot.expires";

/// Seconds a prepared container waits for its code before its runner exits.
pub const IDLE_SECONDS: u64 = 900;

/// Connects to the engine named by `DOCKER_HOST` (or the local socket) and
/// negotiates the API version, so older engines (e.g. Docker 20.10, API 1.41)
/// work as well as current ones.
pub async fn connect() -> Result<Docker, SandboxError> {
    let host = docker_host();
    let unreachable = |e: bollard::errors::Error| SandboxError::Unreachable {
        host: host.clone(),
        detail: e.to_string(),
    };
    let docker = Docker::connect_with_defaults().map_err(unreachable)?;
    docker.negotiate_version().await.map_err(unreachable)
}

pub(crate) fn now_unix() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// The labels that identify one run's container.
pub fn run_labels(name: &str, cfg: &SandboxConfig) -> HashMap<String, String> {
    let expires = now_unix() + IDLE_SECONDS + cfg.limits.timeout.as_secs() + 120;
    let mut labels: HashMap<String, String> = cfg.labels.clone().into_iter().collect();
    labels.insert(LABEL_MANAGED.into(), "true".into());
    labels.insert(LABEL_RUN.into(), name.into());
    labels.insert(LABEL_HOST.into(), hostname());
    labels.insert(LABEL_PID.into(), std::process::id().to_string());
    labels.insert(LABEL_EXPIRES.into(), expires.to_string());
    labels
}

fn tmpfs_opts(size: u64, owner: bool) -> String {
    let mut o = format!("rw,noexec,nosuid,nodev,size={size}");
    if owner {
        o.push_str(",mode=0700,uid=10001,gid=10001");
    } else {
        o.push_str(",mode=1777");
    }
    o
}

/// The hardened container definition: no network, read-only root, no
/// capabilities, no new privileges, default seccomp, non-root user, cgroup
/// limits, tmpfs scratch space, ulimits, an init, a minimal environment and
/// no host mounts at all. The runner waits on stdin for its job.
pub fn container_body(cfg: &SandboxConfig, labels: HashMap<String, String>) -> ContainerCreateBody {
    let l = &cfg.limits;
    let mem = l.memory.bytes() as i64;
    let period: i64 = 100_000;
    let quota = ((l.cpus.max(0.01)) * period as f64).round() as i64;
    let mut env: Vec<String> = vec![
        "HOME=/tmp".into(),
        "LANG=C.UTF-8".into(),
        "MPLBACKEND=Agg".into(),
        "PYTHONDONTWRITEBYTECODE=1".into(),
        "PATH=/usr/local/bin:/usr/bin:/bin".into(),
    ];
    env.extend(cfg.env.iter().map(|(k, v)| format!("{k}={v}")));
    let tmpfs: HashMap<String, String> = [
        ("/tmp".to_string(), tmpfs_opts(l.tmpfs.bytes(), false)),
        (
            "/data".to_string(),
            tmpfs_opts(l.data_max_bytes.bytes().max(4096), true),
        ),
        (
            "/out".to_string(),
            tmpfs_opts(l.artifacts_max_bytes.bytes().max(4096), true),
        ),
    ]
    .into_iter()
    .collect();
    let ulimit = |name: &str, v: i64| ResourcesUlimits {
        name: Some(name.into()),
        soft: Some(v),
        hard: Some(v),
    };
    ContainerCreateBody {
        image: Some(cfg.image.clone()),
        cmd: Some(vec![
            "python3".into(),
            "-I".into(),
            "-S".into(),
            "-c".into(),
            RUNNER.into(),
            IDLE_SECONDS.to_string(),
        ]),
        entrypoint: Some(vec![]),
        user: Some(SANDBOX_USER.into()),
        working_dir: Some("/tmp".into()),
        env: Some(env),
        hostname: Some("sandbox".into()),
        network_disabled: Some(true),
        attach_stdin: Some(true),
        attach_stdout: Some(true),
        attach_stderr: Some(true),
        open_stdin: Some(true),
        stdin_once: Some(true),
        tty: Some(false),
        labels: Some(labels),
        host_config: Some(HostConfig {
            network_mode: Some("none".into()),
            readonly_rootfs: Some(true),
            cap_drop: Some(vec!["ALL".into()]),
            security_opt: Some(vec!["no-new-privileges:true".into()]),
            privileged: Some(false),
            pids_limit: Some(l.pids),
            memory: Some(mem),
            memory_swap: Some(mem),
            cpu_period: Some(period),
            cpu_quota: Some(quota),
            tmpfs: Some(tmpfs),
            ulimits: Some(vec![
                ulimit("nofile", l.nofile as i64),
                ulimit("fsize", l.fsize.bytes() as i64),
                ulimit("core", 0),
            ]),
            init: Some(true),
            ipc_mode: Some("private".into()),
            log_config: Some(HostConfigLogConfig {
                typ: Some("none".into()),
                config: None,
            }),
            binds: Some(vec![]),
            mounts: Some(vec![]),
            auto_remove: Some(false),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Looks up an image; a missing image is a configuration error that says how to build it.
pub async fn image_info(docker: &Docker, reference: &str) -> Result<ImageInfo, SandboxError> {
    match docker.inspect_image(reference).await {
        Ok(img) => {
            let labels: BTreeMap<String, String> = img
                .config
                .and_then(|c| c.labels)
                .unwrap_or_default()
                .into_iter()
                .filter(|(k, _)| k.starts_with("org.compute-bot."))
                .collect();
            Ok(ImageInfo {
                reference: reference.to_string(),
                id: img.id.unwrap_or_default(),
                digests: img.repo_digests.unwrap_or_default(),
                labels,
            })
        }
        Err(bollard::errors::Error::DockerResponseServerError {
            status_code: 404, ..
        }) => Err(SandboxError::ImageMissing {
            image: reference.to_string(),
            host: docker_host(),
        }),
        Err(e) => Err(SandboxError::from_engine("inspecting the image", e)),
    }
}

/// Force-removes a container; a container that is already gone is fine.
pub async fn remove(docker: &Docker, name: &str) -> Result<(), SandboxError> {
    let opts = RemoveContainerOptions {
        force: true,
        v: true,
        ..Default::default()
    };
    match docker.remove_container(name, Some(opts)).await {
        Ok(()) => Ok(()),
        Err(bollard::errors::Error::DockerResponseServerError {
            status_code: 404, ..
        }) => Ok(()),
        // 409: removal already in progress.
        Err(bollard::errors::Error::DockerResponseServerError {
            status_code: 409, ..
        }) => Ok(()),
        Err(e) => Err(SandboxError::from_engine("removing the container", e)),
    }
}

/// Lists the containers the bot created (any state).
pub async fn list_managed(
    docker: &Docker,
) -> Result<Vec<bollard::models::ContainerSummary>, SandboxError> {
    let filters: HashMap<String, Vec<String>> =
        [("label".to_string(), vec![format!("{LABEL_MANAGED}=true")])].into();
    docker
        .list_containers(Some(ListContainersOptions {
            all: true,
            filters: Some(filters),
            ..Default::default()
        }))
        .await
        .map_err(|e| SandboxError::from_engine("listing containers", e))
}

/// Seconds a stopped container may stay before another bot may remove it.
/// Its own bot removes it right after collecting the outcome, which takes
/// well under a second; a minute is a wide margin.
pub const STOPPED_GRACE_SECONDS: u64 = 60;

/// What the engine says about a managed container, for the leftover rule.
#[derive(Debug, Clone, Default)]
pub struct ContainerFacts {
    /// The container's labels.
    pub labels: HashMap<String, String>,
    /// The engine's state: `created`, `running`, `paused`, `exited`, `dead`, ...
    pub state: String,
    /// Unix time the container was created.
    pub created: u64,
    /// Unix time it stopped (exited or dead), when known.
    pub finished: Option<u64>,
}

/// True when the container is certainly abandoned, judged only on facts that
/// hold the same for every bot sharing the engine (whatever PID namespace or
/// host it runs in): its expiry label has passed (it includes the idle wait,
/// the run's deadline and a grace period), or it stopped / never started
/// more than [`STOPPED_GRACE_SECONDS`] ago. A running or paused container
/// before its expiry is never touched: its bot may be alive elsewhere.
pub fn is_leftover(f: &ContainerFacts, now: u64) -> bool {
    let expired = f
        .labels
        .get(LABEL_EXPIRES)
        .and_then(|v| v.parse::<u64>().ok())
        .is_some_and(|t| t < now);
    let old = |t: u64| t.saturating_add(STOPPED_GRACE_SECONDS) < now;
    let stopped_long_ago = match f.state.as_str() {
        "exited" | "dead" => f.finished.is_some_and(old),
        "created" => old(f.created),
        _ => false,
    };
    expired || stopped_long_ago
}

/// Reads the facts [`is_leftover`] needs; `None` when the container is gone.
pub async fn container_facts(
    docker: &Docker,
    summary: &bollard::models::ContainerSummary,
) -> Option<ContainerFacts> {
    let id = summary.id.as_deref()?;
    let mut facts = ContainerFacts {
        labels: summary.labels.clone().unwrap_or_default(),
        state: summary
            .state
            .as_ref()
            .map(|s| s.to_string())
            .unwrap_or_default(),
        created: summary.created.unwrap_or(0).max(0) as u64,
        finished: None,
    };
    if matches!(facts.state.as_str(), "exited" | "dead") {
        let info = docker.inspect_container(id, None).await.ok()?;
        facts.finished = info
            .state
            .and_then(|s| s.finished_at)
            .and_then(|t| chrono::DateTime::parse_from_rfc3339(&t).ok())
            .map(|t| t.timestamp().max(0) as u64);
    }
    Some(facts)
}
