//! Stage: execute. Locked-down Docker runs through bollard.
//!
//! A run has two halves so the slow part (the engine starting a container)
//! can happen while the model is still writing code:
//! - [`Sandbox::prepare`] creates and starts a hardened container whose
//!   runner waits for a job on stdin;
//! - [`Prepared::execute`] hands over the code and inputs, collects the
//!   framed output under a byte cap and a wall-clock deadline, and removes
//!   the container in every case.
//!
//! Code and inputs travel over the container's stdin: no host path is ever
//! mounted, so this works the same when the bot itself runs in a container
//! or talks to a remote engine through `DOCKER_HOST`.

mod docker;
mod error;
mod executor;
mod host;
mod protocol;
mod session;
mod types;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bollard::Docker;
use bollard::container::LogOutput;
use bollard::query_parameters::{
    AttachContainerOptions, CreateContainerOptions, KillContainerOptions,
};
use futures_util::StreamExt;
use sha2::{Digest, Sha256};
use tokio::io::AsyncWriteExt;
use tokio::task::JoinHandle;

pub(crate) use docker::BASE_ENV;
pub use docker::{
    ContainerFacts, LABEL_EXPIRES, LABEL_MANAGED, LABEL_PID, LABEL_RUN, RUNSC_PIDS_OVERHEAD,
    SECCOMP_PROFILE, STOPPED_GRACE_SECONDS, is_leftover,
};
pub use error::SandboxError;
pub use executor::{Executor, PreparedRun};
pub(crate) use host::docker_host;
pub(crate) use session::Session;
pub use types::*;

use protocol::{CappedBuffer, Frame, FrameReader, RunnerReport};

/// Hex SHA-256 of some bytes.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

fn random_hex(n: usize) -> String {
    let mut b = vec![0u8; n];
    rand::fill(&mut b[..]);
    hex::encode(b)
}

/// A connection to the Docker engine plus the containers made through it
/// that are not removed yet, so that [`Sandbox::close`] can finish them.
#[derive(Clone)]
pub struct Sandbox {
    docker: Docker,
    engine: docker::Engine,
    live: Arc<Live>,
    images: Arc<Mutex<HashMap<String, ImageInfo>>>,
}

/// The containers of one [`Sandbox`] (and its clones) not removed yet, and
/// the removals its guards started when dropped.
#[derive(Default)]
struct Live {
    /// Names from just before creation until removal succeeded; `true`
    /// while a guard still owns the container (its creation may be under way).
    names: Mutex<HashMap<String, bool>>,
    /// Removal tasks of dropped guards, not yet awaited.
    removals: Mutex<Vec<JoinHandle<()>>>,
    /// Set by [`Sandbox::close`]: no new container may start.
    closing: AtomicBool,
}

impl Live {
    /// After a removal attempt by its guard: gone, or left for
    /// [`Sandbox::close`] to try again.
    fn settle(&self, name: &str, removed: bool) {
        let mut names = self.names.lock().expect("lock");
        if removed {
            names.remove(name);
        } else if let Some(guarded) = names.get_mut(name) {
            *guarded = false;
        }
    }
}

/// How long [`Sandbox::close`] keeps at containers still being created.
const CLOSE_WAIT: Duration = Duration::from_secs(30);

impl std::fmt::Debug for Sandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sandbox").finish_non_exhaustive()
    }
}

impl Sandbox {
    /// Connects to the engine (`DOCKER_HOST` or the local socket) and
    /// negotiates the API version.
    pub async fn connect() -> Result<Sandbox, SandboxError> {
        let docker = docker::connect().await?;
        Ok(Sandbox {
            engine: docker::engine_kind(&docker).await,
            docker,
            live: Arc::default(),
            images: Arc::default(),
        })
    }

    /// True when `DOCKER_HOST` is Podman's Docker-compatible API.
    pub fn is_podman(&self) -> bool {
        self.engine == docker::Engine::Podman
    }

    /// The underlying bollard client (tests inspect containers with it).
    pub fn docker(&self) -> &Docker {
        &self.docker
    }

    /// Removes containers that are certainly abandoned (see [`is_leftover`]:
    /// past their expiry label, or stopped for longer than a grace period).
    /// Never judged by process ids, which other PID namespaces cannot see.
    /// Returns how many were removed.
    pub async fn cleanup_leftovers(&self) -> Result<usize, SandboxError> {
        let mut removed = 0;
        let now = docker::now_unix();
        for c in docker::list_managed(&self.docker).await? {
            let Some(facts) = docker::container_facts(&self.docker, &c).await else {
                continue;
            };
            if is_leftover(&facts, now)
                && let Some(id) = c.id
            {
                tracing::info!(container = %id, state = %facts.state, "removing a leftover sandbox container");
                // One that cannot be removed now (e.g. its removal is under
                // way elsewhere) must not keep the others from going.
                match docker::remove(&self.docker, &id).await {
                    Ok(()) => removed += 1,
                    Err(e) => {
                        tracing::warn!(container = %id, error = %e, "could not remove a leftover")
                    }
                }
            }
        }
        Ok(removed)
    }

    /// Removes every container of this connection that is still there and
    /// waits for the removals its dropped runs started; a container still
    /// being created is removed once its creation returns. Call it before
    /// the runtime ends (a dropped run's removal is a task on the runtime);
    /// after it, [`Sandbox::prepare`] refuses.
    pub async fn close(&self) {
        self.live.closing.store(true, Ordering::SeqCst);
        let deadline = Instant::now() + CLOSE_WAIT;
        loop {
            let started: Vec<JoinHandle<()>> =
                std::mem::take(&mut *self.live.removals.lock().expect("lock"));
            for task in started {
                let _ = task.await;
            }
            let names: Vec<(String, bool)> = self
                .live
                .names
                .lock()
                .expect("lock")
                .iter()
                .map(|(n, g)| (n.clone(), *g))
                .collect();
            if names.is_empty() {
                return;
            }
            for (name, guarded) in &names {
                match docker::remove(&self.docker, name).await {
                    // A guarded container may still be in creation: its
                    // guard settles it; one removal is not the end of it.
                    Ok(()) if !guarded => self.live.settle(name, true),
                    Ok(()) => {}
                    Err(e) => {
                        tracing::warn!(container = %name, error = %e, "could not remove container")
                    }
                }
            }
            if Instant::now() >= deadline {
                tracing::warn!(containers = ?names, "containers still in use at exit; the next run's leftover sweep removes them once expired");
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Facts about an image (cached per reference).
    pub(crate) async fn image_info(&self, reference: &str) -> Result<ImageInfo, SandboxError> {
        if let Some(info) = self.images.lock().expect("lock").get(reference) {
            return Ok(info.clone());
        }
        let info = docker::image_info(&self.docker, reference).await?;
        self.images
            .lock()
            .expect("lock")
            .insert(reference.to_string(), info.clone());
        Ok(info)
    }

    /// Creates and starts a hardened container whose runner waits for a job.
    pub async fn prepare(&self, cfg: &SandboxConfig) -> Result<Prepared, SandboxError> {
        for key in cfg.env.keys() {
            if key.is_empty() || key.contains('=') || key.contains('\0') {
                return Err(SandboxError::BadInput {
                    name: key.clone(),
                    problem: "is not a valid environment variable name".into(),
                });
            }
        }
        let image = self.image_info(&cfg.image).await?;
        let name = format!("compute-bot-{}", random_hex(6));
        let body = docker::container_body(cfg, docker::run_labels(&name, cfg), self.engine);
        let guard = Guard::new(self, &name)?;
        // A step that fails removes the container before the error returns
        // (only a cancelled future leaves it to the guard's drop).
        let attach = match self.create_and_start(&name, body).await {
            Ok(attach) => attach,
            Err(e) => {
                let _ = guard.remove().await;
                return Err(e);
            }
        };
        Ok(Prepared {
            name,
            image,
            limits: cfg.limits.clone(),
            attach,
            guard,
            preloading: !cfg.preload.is_empty(),
        })
    }

    /// Creates, attaches to and starts the container `name`.
    async fn create_and_start(
        &self,
        name: &str,
        body: bollard::models::ContainerCreateBody,
    ) -> Result<bollard::container::AttachContainerResults, SandboxError> {
        self.docker
            .create_container(
                Some(CreateContainerOptions {
                    name: Some(name.to_string()),
                    ..Default::default()
                }),
                body,
            )
            .await
            .map_err(|e| SandboxError::from_engine("creating the container", e))?;
        let attach = self
            .docker
            .attach_container(
                name,
                Some(AttachContainerOptions {
                    stream: true,
                    stdin: true,
                    stdout: true,
                    stderr: true,
                    logs: false,
                    ..Default::default()
                }),
            )
            .await
            .map_err(|e| SandboxError::from_engine("attaching to the container", e))?;
        self.docker
            .start_container(name, None)
            .await
            .map_err(|e| SandboxError::from_engine("starting the container", e))?;
        Ok(attach)
    }

    /// Prepares a container and executes the job in it.
    pub async fn run(&self, cfg: &SandboxConfig, job: &Job) -> Result<Outcome, SandboxError> {
        self.prepare(cfg).await?.execute(job).await
    }
}

/// Lists its container from just before creation and removes it: through
/// [`Guard::remove`], or when dropped without it (error, panic, cancelled
/// future) by a task on the current runtime that [`Sandbox::close`] awaits.
struct Guard {
    sandbox: Sandbox,
    name: String,
    armed: bool,
}

impl Guard {
    /// Lists `name`; refused once the sandbox is closing.
    fn new(sandbox: &Sandbox, name: &str) -> Result<Guard, SandboxError> {
        if sandbox.live.closing.load(Ordering::SeqCst) {
            return Err(SandboxError::Closed);
        }
        sandbox
            .live
            .names
            .lock()
            .expect("lock")
            .insert(name.to_string(), true);
        Ok(Guard {
            sandbox: sandbox.clone(),
            name: name.to_string(),
            armed: true,
        })
    }

    async fn remove(mut self) -> Result<(), SandboxError> {
        self.armed = false;
        let removed = docker::remove(&self.sandbox.docker, &self.name).await;
        self.sandbox.live.settle(&self.name, removed.is_ok());
        removed
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            self.sandbox.live.settle(&self.name, false);
            tracing::warn!(container = %self.name, "no runtime to remove the container; the next run's leftover sweep removes it once expired");
            return;
        };
        let (sandbox, name) = (self.sandbox.clone(), self.name.clone());
        let task = runtime.spawn(async move {
            let removed = docker::remove(&sandbox.docker, &name).await;
            if let Err(e) = &removed {
                tracing::warn!(container = %name, error = %e, "could not remove container");
            }
            sandbox.live.settle(&name, removed.is_ok());
        });
        self.sandbox.live.removals.lock().expect("lock").push(task);
    }
}

/// A started container whose runner waits for exactly one job.
pub struct Prepared {
    name: String,
    image: ImageInfo,
    limits: Limits,
    attach: bollard::container::AttachContainerResults,
    guard: Guard,
    preloading: bool,
}

/// What [`execute_in`] needs of a prepared container.
struct Parts {
    name: String,
    image: ImageInfo,
    limits: Limits,
    attach: bollard::container::AttachContainerResults,
    preloading: bool,
}

impl std::fmt::Debug for Prepared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prepared")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// What was collected while reading the runner's frames.
struct Collected {
    stdout: CappedBuffer,
    stderr: CappedBuffer,
    runner_stderr: CappedBuffer,
    artifacts: Vec<Artifact>,
    current: Option<(String, Vec<u8>)>,
    artifact_bytes: u64,
    report: Option<RunnerReport>,
    notes: Vec<String>,
    started: Option<Instant>,
    /// A report frame came but could not be read (so it was not lost).
    unreadable_report: bool,
}

impl Collected {
    fn finish_artifact(&mut self) {
        if let Some((name, bytes)) = self.current.take() {
            self.artifacts.push(Artifact {
                sha256: sha256_hex(&bytes),
                size: bytes.len() as u64,
                name,
                bytes,
            });
        }
    }
}

impl Prepared {
    /// The container's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Removes the container without running anything in it.
    async fn discard(self) -> Result<(), SandboxError> {
        self.guard.remove().await
    }

    /// Hands over the job, collects the outcome and removes the container.
    pub async fn execute(self, job: &Job) -> Result<Outcome, SandboxError> {
        let Prepared {
            name,
            image,
            limits,
            attach,
            guard,
            preloading,
        } = self;
        let parts = Parts {
            name: name.clone(),
            image,
            limits,
            attach,
            preloading,
        };
        let sandbox = guard.sandbox.clone();
        let result = execute_in(&sandbox.docker, parts, job).await;
        let removal = guard.remove().await;
        let mut outcome = result?;
        if let Err(e) = removal {
            // Nothing is lost: the outcome stands; one more try on a fresh connection.
            let retried = match docker::connect().await {
                Ok(d) => docker::remove(&d, &name).await,
                Err(e) => Err(e),
            };
            sandbox.live.settle(&name, retried.is_ok());
            if retried.is_err() {
                tracing::warn!(container = %name, error = %e, "could not remove the container");
                outcome.notes.push(format!(
                    "the container could not be removed ({e}); any bot removes it once its expiry label passes"
                ));
            }
        }
        Ok(outcome)
    }
}

fn check_inputs(job: &Job, limits: &Limits) -> Result<(), SandboxError> {
    let mut total = 0u64;
    let mut seen = HashSet::new();
    for f in &job.inputs {
        if f.name.is_empty()
            || f.name.contains('/')
            || f.name == "."
            || f.name == ".."
            || f.name.contains('\0')
        {
            return Err(SandboxError::BadInput {
                name: f.name.clone(),
                problem: "is not a plain file name; inputs appear as /data/<file name>".into(),
            });
        }
        if !seen.insert(&f.name) {
            return Err(SandboxError::BadInput {
                name: f.name.clone(),
                problem: "is given twice; two inputs cannot share a name under /data".into(),
            });
        }
        total += f.bytes.len() as u64;
    }
    if total > limits.data_max_bytes.bytes() {
        return Err(SandboxError::BadInput {
            name: job
                .inputs
                .iter()
                .max_by_key(|f| f.bytes.len())
                .map(|f| f.name.clone())
                .unwrap_or_default(),
            problem: format!(
                "the inputs total {} bytes, over the {} limit for /data; pass fewer or smaller files or raise `data_max_bytes`",
                total, limits.data_max_bytes
            ),
        });
    }
    Ok(())
}

/// How the stream of frames ended.
struct Stream {
    timed_out: bool,
    error: Option<String>,
    duration: std::time::Duration,
}

impl Collected {
    fn new(limits: &Limits) -> Collected {
        Collected {
            stdout: CappedBuffer::new(limits.stdout_cap.bytes()),
            stderr: CappedBuffer::new(limits.stderr_cap.bytes()),
            runner_stderr: CappedBuffer::new(8 * 1024),
            artifacts: Vec::new(),
            current: None,
            artifact_bytes: 0,
            report: None,
            notes: Vec::new(),
            started: None,
            unreadable_report: false,
        }
    }

    fn take_frame(&mut self, frame: Frame, limits: &Limits) {
        match frame {
            Frame::Stdout(b) => self.stdout.push(&b),
            Frame::Stderr(b) => self.stderr.push(&b),
            Frame::Artifact(h) => {
                self.finish_artifact();
                self.current = Some((h.name, Vec::new()));
            }
            Frame::ArtifactChunk(b) => {
                self.artifact_bytes += b.len() as u64;
                if self.artifact_bytes > limits.artifacts_max_bytes.bytes() {
                    if let Some((n, _)) = self.current.take() {
                        self.notes
                            .push(format!("artifact {n} dropped: over the artifact byte cap"));
                    }
                } else if let Some((_, buf)) = self.current.as_mut() {
                    buf.extend_from_slice(&b);
                }
            }
            Frame::Report(r) => {
                self.finish_artifact();
                self.report = Some(*r);
            }
            Frame::Started => self.started = Some(Instant::now()),
            Frame::Unreadable { kind, problem } => {
                self.unreadable_report |= kind == 'r';
                self.notes.push(format!(
                    "a frame of the runner's output (kind `{kind}`) could not be read: {problem}; \
                     this is a compute-bot bug, please report it"
                ));
            }
        }
    }
}

/// Reads frames until the report arrives, the stream ends or the deadline passes.
async fn collect(
    output: &mut (impl futures_util::Stream<Item = Result<LogOutput, bollard::errors::Error>> + Unpin),
    reader: &mut FrameReader,
    c: &mut Collected,
    limits: &Limits,
    preloading: bool,
) -> Stream {
    let started = Instant::now();
    // Until the code starts (a preloading child may still be importing), the
    // deadline allows for that wait; from the start frame on it is the run's
    // own timeout.
    let grace = if preloading {
        PRELOAD_GRACE
    } else {
        std::time::Duration::ZERO
    };
    let mut timed_out = false;
    let mut error = None;
    while c.report.is_none() {
        let deadline = tokio::time::Instant::from_std(match c.started {
            Some(s) => (s + limits.timeout).min(started + limits.timeout + grace),
            None => started + limits.timeout + grace,
        });
        let item = tokio::select! {
            biased;
            _ = tokio::time::sleep_until(deadline) => { timed_out = true; break; }
            item = output.next() => item,
        };
        match item {
            Some(Ok(LogOutput::StdOut { message })) => {
                for frame in reader.push(&message) {
                    c.take_frame(frame, limits);
                }
            }
            Some(Ok(LogOutput::StdErr { message })) => c.runner_stderr.push(&message),
            Some(Ok(_)) => {}
            Some(Err(e)) => {
                error = Some(e.to_string());
                break;
            }
            None => break,
        }
    }
    Stream {
        timed_out,
        error,
        duration: started.elapsed(),
    }
}

/// After the deadline: kill the container (unpausing it first when someone
/// paused it from outside, which would otherwise keep the kill from landing).
async fn kill_at_deadline(docker: &Docker, name: &str, notes: &mut Vec<String>) {
    if let Ok(info) = docker.inspect_container(name, None).await
        && info.state.and_then(|s| s.paused) == Some(true)
    {
        notes.push(
            "the container was paused from outside compute-bot; the deadline passed while it was paused"
                .into(),
        );
        let _ = docker.unpause_container(name).await;
    }
    let _ = docker
        .kill_container(
            name,
            Some(KillContainerOptions {
                signal: "SIGKILL".into(),
            }),
        )
        .await;
}

/// The runner's output ended without a report: ask the engine why, and say
/// so when the container was removed or killed from outside, or when it is
/// still running (the stream, not the runner, ended: the connection to the
/// engine was lost). `unreadable`: a report came but could not be read, so
/// it was not lost. Returns the run's status: `Oom`, `Lost` or `Killed`.
async fn explain_missing_report(
    docker: &Docker,
    name: &str,
    unreadable: bool,
    notes: &mut Vec<String>,
) -> RunStatus {
    for _ in 0..20 {
        match docker.inspect_container(name, None).await {
            Ok(info) => {
                let state = info.state.unwrap_or_default();
                if state.running == Some(true) {
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
                let oom = state.oom_killed.unwrap_or(false);
                let code = state.exit_code.unwrap_or(-1);
                if code == 0 && !oom && !unreadable {
                    // The runner finished normally, and it always reports
                    // before it does: the report was lost on the way.
                    notes.push(
                        "the connection to the Docker engine was lost while the code ran: the \
                         runner finished (exit code 0) but its report never arrived"
                            .into(),
                    );
                    return RunStatus::Lost;
                }
                notes.push(format!(
                    "the runner ended without a report (container exit code {code})"
                ));
                if !oom && code == 137 {
                    notes.push(
                        "the container was killed or removed from outside compute-bot (SIGKILL from `docker kill`, a forced removal or another process; not by the deadline or the memory limit)"
                            .into(),
                    );
                }
                return if oom {
                    RunStatus::Oom
                } else {
                    RunStatus::Killed
                };
            }
            Err(bollard::errors::Error::DockerResponseServerError {
                status_code: 404, ..
            }) => {
                notes.push(
                    "the container was removed from outside compute-bot while the code ran \
                     (by another process, bot or operator); no report came back"
                        .into(),
                );
                return RunStatus::Killed;
            }
            Err(e) => {
                notes.push(format!(
                    "the connection to the Docker engine was lost while the code ran ({e}); no report came back"
                ));
                return RunStatus::Lost;
            }
        }
    }
    notes.push(
        "the connection to the Docker engine was lost while the code ran: the output stream \
         closed with the container still running; the run was stopped"
            .into(),
    );
    RunStatus::Lost
}

/// Longest the code may wait for a preloading child before the deadline
/// starts counting anyway.
const PRELOAD_GRACE: std::time::Duration = std::time::Duration::from_secs(30);

async fn execute_in(docker: &Docker, p: Parts, job: &Job) -> Result<Outcome, SandboxError> {
    let Parts {
        name,
        image,
        limits,
        attach,
        preloading,
    } = p;
    let name = name.as_str();
    check_inputs(job, &limits)?;
    let nonce = random_hex(16);
    let bytes = protocol::encode_job(&nonce, job, &limits);
    let bollard::container::AttachContainerResults { mut output, input } = attach;
    let writer = tokio::spawn(async move {
        let mut input = input;
        let r = input.write_all(&bytes).await;
        let _ = input.flush().await;
        // Keep the write half open until the job is read; dropping closes it.
        r
    });
    let mut reader = FrameReader::new(&nonce);
    let mut c = Collected::new(&limits);
    let stream = collect(&mut output, &mut reader, &mut c, &limits, preloading).await;
    writer.abort();
    if reader.noise_bytes > 0 {
        c.notes.push(format!(
            "{} bytes on the container's stdout were not runner frames (ignored)",
            reader.noise_bytes
        ));
    }
    if let Some(e) = &stream.error {
        c.notes
            .push(format!("the output stream ended with an error: {e}"));
    }
    let mut no_report = RunStatus::Killed;
    if stream.timed_out {
        kill_at_deadline(docker, name, &mut c.notes).await;
    } else if c.report.is_none() {
        no_report = explain_missing_report(docker, name, c.unreadable_report, &mut c.notes).await;
    }
    let runner_err = c.runner_stderr.text();
    if !runner_err.trim().is_empty() {
        c.notes
            .push(format!("runner stderr: {}", runner_err.trim()));
    }
    let outcome = build_outcome(c, &stream, no_report, image, limits, job, name);
    tracing::debug!(container = %name, status = outcome.status.as_str(), ms = outcome.duration_ms, "run finished");
    Ok(outcome)
}

/// Status, exit code, signal, resources, audit and duration from the runner's report.
fn from_report(
    r: &RunnerReport,
    c: &mut Collected,
    limits: &Limits,
) -> (RunStatus, Option<i64>, Option<i32>, Resources, Audit, u64) {
    for a in &r.artifacts {
        match c.artifacts.iter().find(|x| x.name == a.name) {
            Some(x) if x.sha256 == a.sha256 && x.size == a.size => {}
            Some(_) => c.notes.push(format!(
                "artifact {} arrived damaged (checksum mismatch)",
                a.name
            )),
            None => {}
        }
    }
    c.notes.extend(r.notes.iter().cloned());
    if r.start_wait_ms >= 100 {
        c.notes.push(format!(
            "the code waited {} ms for the sandbox's preloaded modules to finish loading",
            r.start_wait_ms
        ));
    }
    let oom = r.oom_kills.unwrap_or(0) > 0 && r.signal == Some(9);
    let stdout_over = r.stdout_bytes > limits.stdout_cap.bytes();
    let stderr_over = r.stderr_bytes > limits.stderr_cap.bytes();
    c.stdout.truncated |= stdout_over;
    c.stderr.truncated |= stderr_over;
    let status = if oom {
        RunStatus::Oom
    } else if r.signal.is_some() {
        RunStatus::Killed
    } else if r.exit_code != Some(0) {
        RunStatus::Error
    } else if stdout_over || stderr_over {
        RunStatus::OutputLimit
    } else {
        RunStatus::Ok
    };
    let resources = Resources {
        peak_memory_bytes: Some(r.peak_memory_bytes),
        cpu_time_ms: Some(r.cpu_time_ms),
    };
    (
        status,
        r.exit_code,
        r.signal,
        resources,
        r.audit.clone(),
        r.duration_ms,
    )
}

fn build_outcome(
    mut c: Collected,
    stream: &Stream,
    no_report: RunStatus,
    image: ImageInfo,
    limits: Limits,
    job: &Job,
    name: &str,
) -> Outcome {
    let report = c.report.take();
    let mut oom_killed = false;
    let (status, exit_code, signal, resources, audit, duration_ms) = match &report {
        Some(r) => {
            let parts = from_report(r, &mut c, &limits);
            oom_killed |= parts.0 == RunStatus::Oom;
            parts
        }
        None => {
            let status = if stream.timed_out {
                RunStatus::Timeout
            } else {
                no_report
            };
            oom_killed = status == RunStatus::Oom;
            let ms = stream.duration.as_millis() as u64;
            (
                status,
                None,
                None,
                Resources::default(),
                Audit::default(),
                ms,
            )
        }
    };
    Outcome {
        status,
        exit_code,
        signal,
        duration_ms,
        collected_ms: stream.duration.as_millis() as u64,
        stdout: c.stdout.text(),
        stderr: c.stderr.text(),
        stdout_truncated: c.stdout.truncated,
        stderr_truncated: c.stderr.truncated,
        timed_out: stream.timed_out,
        oom_killed,
        image,
        limits,
        resources,
        audit,
        artifacts: c.artifacts,
        code_sha256: sha256_hex(job.code.as_bytes()),
        container: name.to_string(),
        notes: c.notes,
    }
}
