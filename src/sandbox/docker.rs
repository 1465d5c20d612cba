//! Talking to the Docker engine: connecting (with API version negotiation),
//! the hardened container configuration, image facts and leftover cleanup.

use std::collections::{BTreeMap, HashMap};
use std::time::{SystemTime, UNIX_EPOCH};

use bollard::Docker;
use bollard::models::{ContainerCreateBody, HostConfig, HostConfigLogConfig, ResourcesUlimits};
use bollard::query_parameters::{ListContainersOptions, RemoveContainerOptions};

use super::error::SandboxError;
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

/// The fixed environment every sandbox gets (before what the run names).
/// `PYTHONHASHSEED`, `TZ` and the locale make runs repeatable: set ordering,
/// `time.localtime` and locale-dependent formatting do not vary by run or host.
pub const BASE_ENV: &[(&str, &str)] = &[
    ("HOME", "/tmp"),
    ("LANG", "C.UTF-8"),
    ("LC_ALL", "C.UTF-8"),
    ("TZ", "UTC"),
    ("PYTHONHASHSEED", "0"),
    ("MPLBACKEND", "Agg"),
    ("PYTHONDONTWRITEBYTECODE", "1"),
    ("PATH", "/usr/local/bin:/usr/bin:/bin"),
];

/// Seconds a prepared container waits for its code before its runner exits.
pub const IDLE_SECONDS: u64 = 900;

/// Where the engine is, for error messages.
pub fn docker_host() -> String {
    std::env::var("DOCKER_HOST").unwrap_or_else(|_| "unix:///var/run/docker.sock".to_string())
}

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

/// This machine's host name, used to tell our own leftovers from others'.
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".to_string())
}

fn now_unix() -> u64 {
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
    let mut env: Vec<String> = BASE_ENV.iter().map(|(k, v)| format!("{k}={v}")).collect();
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

/// True when the labels say the container was left behind by a bot that is
/// gone (same host, pid no longer alive) or its time is up.
pub fn is_leftover(labels: &HashMap<String, String>) -> bool {
    let expired = labels
        .get(LABEL_EXPIRES)
        .and_then(|v| v.parse::<u64>().ok())
        .is_some_and(|t| t < now_unix());
    let same_host = labels.get(LABEL_HOST).is_some_and(|h| *h == hostname());
    let owner_gone = labels
        .get(LABEL_PID)
        .and_then(|p| p.parse::<u32>().ok())
        .is_some_and(|pid| !std::path::Path::new(&format!("/proc/{pid}")).exists());
    expired || (same_host && owner_gone)
}
