//! The Docker backend (also Podman's Docker-compatible API), through
//! bollard: [`Docker`] is the connection and implements
//! [`super::Executor`]; [`Prepared`] is a started container waiting for its
//! job and implements [`super::PreparedRun`].
//!
//! - [`Docker::prepare`] creates and starts a hardened container (see
//!   `engine::container_body`) whose runner waits for a job on stdin;
//! - [`Prepared::execute`] (`run.rs`) hands over the code and inputs, lets
//!   [`super::collect`] read the framed output under the caps and the
//!   deadline, and removes the container in every case.
//!
//! Code and inputs travel over the container's stdin: no host path is ever
//! mounted, so this works the same when the bot itself runs in a container
//! or talks to a remote engine through `DOCKER_HOST`. bollard is used here
//! and nowhere else in the crate (`src/layering.rs` holds that).

mod data_volume;
mod engine;
mod pull;
mod run;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bollard::Docker as Bollard;
use bollard::query_parameters::{AttachContainerOptions, CreateContainerOptions};
use futures_util::future::BoxFuture;
use tokio::sync::{OnceCell, watch};
use tokio::task::JoinHandle;

pub use engine::{
    ContainerFacts, LABEL_EXPIRES, LABEL_MANAGED, LABEL_PID, LABEL_RUN, RUNSC_PIDS_OVERHEAD,
    SECCOMP_PROFILE, STOPPED_GRACE_SECONDS, is_leftover,
};
pub use run::Prepared;

use super::executor::{EngineFacts, Executor, PreparedRun};
use super::host::docker_host;
use super::pull::{ImageRef, PullProgress};
use super::types::{ImageInfo, Job, Outcome, SandboxConfig};
use super::{SandboxError, random_hex};

/// True when the bot pulls `image` when the engine lacks it.
fn pulls(image: &str) -> bool {
    ImageRef::parse(image).is_some_and(|r| r.pulls())
}

/// A connection to the Docker engine plus the containers made through it
/// that are not removed yet, so that [`Docker::close`] can finish them.
#[derive(Clone)]
pub struct Docker {
    docker: Bollard,
    /// The engine's address (`unix:///var/run/docker.sock`, `tcp://…`).
    address: String,
    engine: engine::Engine,
    live: Arc<Live>,
    images: Arc<Mutex<HashMap<String, ImageInfo>>>,
    facts: Arc<OnceCell<EngineFacts>>,
    /// Images being pulled (or pulled) through this connection.
    pulls: Arc<pull::Pulls>,
    /// When a run's container is removed.
    removal: Removal,
}

/// When a run's container is removed, once its report is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Removal {
    /// Before the outcome returns: for a caller that may end its runtime
    /// right after (tests, benchmarks, `Docker::run`).
    BeforeTheOutcome,
    /// Started as the outcome returns and carried on beside the answer
    /// (validate, render, post); [`Docker::settled`] and
    /// [`Docker::close`] wait for it. Only for a connection whose owner
    /// closes it before its runtime ends (a process's `Session`).
    BesideTheAnswer,
}

/// The containers of one [`Docker`] (and its clones) not removed yet, and
/// the tasks it started beside the runs (removals, the leftover sweep, the
/// engine's facts).
#[derive(Default)]
struct Live {
    /// Names from just before creation until removal succeeded; `true`
    /// while a guard still owns the container (its creation may be under way).
    names: Mutex<HashMap<String, bool>>,
    /// Tasks started by [`Docker::track`], not yet awaited.
    tasks: Mutex<Vec<JoinHandle<()>>>,
    /// Set by [`Docker::close`]: no new container may start.
    closing: AtomicBool,
}

impl Live {
    /// After a removal attempt by its guard: gone, or left for
    /// [`Docker::close`] to try again.
    fn settle(&self, name: &str, removed: bool) {
        let mut names = self.names.lock().expect("lock");
        if removed {
            names.remove(name);
        } else if let Some(guarded) = names.get_mut(name) {
            *guarded = false;
        }
    }
}

/// How long [`Docker::close`] keeps at containers still being created.
const CLOSE_WAIT: Duration = Duration::from_secs(30);

impl std::fmt::Debug for Docker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sandbox").finish_non_exhaustive()
    }
}

impl Docker {
    /// Connects to the engine (`DOCKER_HOST` or the local socket) and
    /// negotiates the API version.
    pub async fn connect() -> Result<Docker, SandboxError> {
        Docker::connect_to(&docker_host()).await
    }

    /// Connects to the engine at `address` (`unix:///…`, `tcp://host:port`).
    pub async fn connect_to(address: &str) -> Result<Docker, SandboxError> {
        let docker = engine::connect(address).await?;
        Ok(Docker {
            engine: engine::engine_kind(&docker).await,
            docker,
            address: address.to_string(),
            live: Arc::default(),
            images: Arc::default(),
            facts: Arc::default(),
            pulls: Arc::default(),
            removal: Removal::BeforeTheOutcome,
        })
    }

    /// The same connection, whose runs (through [`PreparedRun::execute`])
    /// start their container's removal once the report is in and return
    /// the outcome without waiting for it, so the answer is posted while the
    /// engine removes. Only for a connection whose owner calls
    /// [`Docker::close`] before its runtime ends (the process's
    /// `Session` does): an unawaited removal ends with the runtime.
    pub(crate) fn removing_beside_the_answer(mut self) -> Docker {
        self.removal = Removal::BesideTheAnswer;
        self
    }

    /// True when `DOCKER_HOST` is Podman's Docker-compatible API.
    pub fn is_podman(&self) -> bool {
        self.engine == engine::Engine::Podman
    }

    /// The underlying bollard client (tests inspect containers with it).
    pub fn docker(&self) -> &Bollard {
        &self.docker
    }

    /// What the engine says about itself: version, API version, runtimes
    /// (asked once per connection).
    async fn engine_facts(&self) -> Result<EngineFacts, SandboxError> {
        let facts = self
            .facts
            .get_or_try_init(|| self.ask_engine())
            .await
            .map_err(|e| self.here(e))?;
        Ok(facts.clone())
    }

    async fn ask_engine(&self) -> Result<EngineFacts, SandboxError> {
        let version = self
            .docker
            .version()
            .await
            .map_err(|e| engine::engine_error("asking the engine's version", e))?;
        // Without `info` the version still goes into the record; doctor
        // says the runtimes are unknown.
        let info = match self.docker.info().await {
            Ok(info) => info,
            Err(e) => {
                tracing::warn!(error = %e, "the engine did not describe itself");
                Default::default()
            }
        };
        let offered = info.runtimes.unwrap_or_default();
        let gvisor_log = super::LogRuntime::find(offered.iter().map(|(name, r)| {
            (
                name.as_str(),
                r.path.as_deref().unwrap_or_default(),
                r.runtime_args.as_deref().unwrap_or_default(),
            )
        }));
        let mut runtimes: Vec<String> = offered.into_keys().collect();
        runtimes.sort();
        Ok(EngineFacts {
            kind: match self.engine {
                engine::Engine::Docker => "Docker",
                engine::Engine::Podman => "Podman",
            }
            .to_string(),
            address: self.address.clone(),
            version: version.version,
            api_version: version.api_version,
            default_runtime: info.default_runtime,
            runtimes,
            gvisor_log,
        })
    }

    /// Removes containers that are certainly abandoned (see [`is_leftover`]:
    /// past their expiry label, or stopped for longer than a grace period).
    /// Never judged by process ids, which other PID namespaces cannot see.
    /// Returns how many were removed.
    pub async fn cleanup_leftovers(&self) -> Result<usize, SandboxError> {
        let mut removed = 0;
        let now = engine::now_unix();
        for c in engine::list_managed(&self.docker).await? {
            let Some(facts) = engine::container_facts(&self.docker, &c).await else {
                continue;
            };
            if is_leftover(&facts, now)
                && let Some(id) = c.id
            {
                tracing::info!(container = %id, state = %facts.state, "removing a leftover sandbox container");
                // One that cannot be removed now (e.g. its removal is under
                // way elsewhere) must not keep the others from going.
                match engine::remove(&self.docker, &id).await {
                    Ok(()) => removed += 1,
                    Err(e) => {
                        tracing::warn!(container = %id, error = %e, "could not remove a leftover")
                    }
                }
            }
        }
        Ok(removed)
    }

    /// Starts [`Docker::cleanup_leftovers`] as a task that
    /// [`Docker::settled`] and [`Docker::close`] await, so that the first
    /// container need not wait for it (a container being prepared is no
    /// leftover: it is running and its expiry label is ahead).
    pub(crate) fn sweep_in_background(&self) {
        let s = self.clone();
        let started = self.track(async move {
            if let Err(e) = s.cleanup_leftovers().await {
                tracing::warn!(engine = %s.address, error = %e, "could not clean up leftover containers");
            }
        });
        if !started {
            tracing::warn!(engine = %self.address, "no runtime to clean up leftover containers on");
        }
    }

    /// Removes every container of this connection that is still there and
    /// waits for the removals its runs started; a container still
    /// being created is removed once its creation returns. Call it before
    /// the runtime ends (a dropped run's removal is a task on the runtime);
    /// after it, [`Docker::prepare`] refuses.
    pub async fn close(&self) {
        self.live.closing.store(true, Ordering::SeqCst);
        let deadline = Instant::now() + CLOSE_WAIT;
        loop {
            self.settled().await;
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
                match engine::remove(&self.docker, name).await {
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

    /// Runs `work` (a removal, the leftover sweep, the engine's facts) as a
    /// task on the current runtime that [`Docker::settled`] and
    /// [`Docker::close`] await.
    /// False without a runtime: nothing can run it, and the containers it
    /// would remove are left to `close` and the expiry label.
    fn track(&self, work: impl std::future::Future<Output = ()> + Send + 'static) -> bool {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return false;
        };
        let task = runtime.spawn(work);
        self.live.tasks.lock().expect("lock").push(task);
        true
    }

    /// Waits for the tasks started so far (removals, the leftover sweep, the
    /// engine's facts): after
    /// it, every container whose run ended is gone or was logged as not
    /// removable. New runs may still start (unlike [`Docker::close`]).
    pub async fn settled(&self) {
        loop {
            let started: Vec<JoinHandle<()>> =
                std::mem::take(&mut *self.live.tasks.lock().expect("lock"));
            if started.is_empty() {
                return;
            }
            for task in started {
                let _ = task.await;
            }
        }
    }

    /// Facts about an image (cached per reference).
    pub(crate) async fn image_info(&self, reference: &str) -> Result<ImageInfo, SandboxError> {
        if let Some(info) = self.images.lock().expect("lock").get(reference) {
            return Ok(info.clone());
        }
        let info = engine::image_info(&self.docker, reference, &self.address).await?;
        self.images
            .lock()
            .expect("lock")
            .insert(reference.to_string(), info.clone());
        Ok(info)
    }

    /// An error of this connection with this engine's address in it (the
    /// engine module names `DOCKER_HOST`'s).
    fn here(&self, e: SandboxError) -> SandboxError {
        match e {
            SandboxError::Unreachable { detail, .. } => SandboxError::Unreachable {
                host: self.address.clone(),
                detail,
            },
            e => e,
        }
    }

    /// Creates and starts a hardened container whose runner waits for a job.
    pub async fn prepare(&self, cfg: &SandboxConfig) -> Result<Prepared, SandboxError> {
        self.prepare_here(cfg).await.map_err(|e| self.here(e))
    }

    /// [`Docker::prepare_once`], after the pull of its image when one is
    /// under way, and again after pulling the image when the engine lacks
    /// it and the policy names one the bot pulls (`sandbox/pull.rs`).
    async fn prepare_here(&self, cfg: &SandboxConfig) -> Result<Prepared, SandboxError> {
        // A pull under way ends first; one that failed is said again below
        // only if the image is still missing (someone may have put it there).
        if let Some(pulling) = self.pulls.get(&cfg.image) {
            let _ = pull::finished(pulling, &self.address).await;
        }
        match self.prepare_once(cfg).await {
            Err(SandboxError::ImageMissing { .. }) if pulls(&cfg.image) => {
                let Some(pulling) = self.pulls.start(&self.docker, &cfg.image) else {
                    return self.prepare_once(cfg).await;
                };
                pull::finished(pulling, &self.address).await?;
                self.prepare_once(cfg).await
            }
            prepared => prepared,
        }
    }

    /// Starts pulling `image` when the engine lacks it and it is one the
    /// bot pulls, so it arrives while the run does other work (the
    /// permission check, the model writing code); the run's preparation
    /// waits for it. The progress of the pull, `None` when there is none.
    pub async fn pull_ahead(&self, image: &str) -> Option<watch::Receiver<PullProgress>> {
        if let Some(pulling) = self.pulls.get(image) {
            return Some(pulling);
        }
        if !pulls(image) {
            return None;
        }
        match self.image_info(image).await {
            Err(SandboxError::ImageMissing { .. }) => self.pulls.start(&self.docker, image),
            _ => None,
        }
    }

    async fn prepare_once(&self, cfg: &SandboxConfig) -> Result<Prepared, SandboxError> {
        for key in cfg.env.keys() {
            if key.is_empty() || key.contains('=') || key.contains('\0') {
                return Err(SandboxError::BadInput {
                    name: key.clone(),
                    problem: "is not a valid environment variable name".into(),
                });
            }
        }
        let name = format!("compute-bot-{}", random_hex(6));
        let seccomp = engine::seccomp_for(cfg.runtime, self.engine, &self.address)?;
        let gvisor = self.gvisor_log(cfg.runtime).await;
        let runtime = match &gvisor {
            run::GvisorLog::Reading(log) => log.name.clone(),
            _ => cfg.runtime.as_str().to_string(),
        };
        let body = engine::container_body(
            cfg,
            engine::run_labels(&name, cfg),
            self.engine,
            &seccomp,
            &runtime,
        );
        let began = std::time::SystemTime::now();
        let mut guard = Guard::new(self, &name)?;
        // What the run record asks of the engine after the run, asked while
        // the container starts (once per connection).
        if !self.facts.initialized() {
            let s = self.clone();
            self.track(async move {
                let _ = s.engine_facts().await;
            });
        }
        // The image's facts while the engine creates the container (a
        // missing image fails both; its own error says how to build it). A
        // step that fails removes the container before the error returns
        // (only a cancelled future leaves it to the guard's drop).
        let (image, attach) = tokio::join!(
            self.image_info(&cfg.image),
            self.create_and_start(&name, body, &mut guard, gvisor.dir(), began)
        );
        let (image, (attach, id)) = match (image, attach) {
            (Ok(image), Ok(attach)) => (image, attach),
            (Err(e), _) | (_, Err(e)) => {
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
            preload: cfg.preload.clone(),
            boost: engine::cpu_boost(cfg, self.engine),
            seccomp: seccomp.profile(),
            gvisor: gvisor.with_container(id, began),
        })
    }

    /// Whether a run under `runtime` gets gVisor's record: only runsc on
    /// Docker, when the engine offers a runtime with the Sentry's log on
    /// ([`super::LogRuntime::find`]) and its directory is readable here.
    async fn gvisor_log(&self, runtime: super::Runtime) -> run::GvisorLog {
        if runtime != super::Runtime::Runsc || self.engine != engine::Engine::Docker {
            return run::GvisorLog::Off;
        }
        let Ok(facts) = self.engine_facts().await else {
            return run::GvisorLog::Off;
        };
        match facts.gvisor_log {
            None => run::GvisorLog::Off,
            Some(log) => match log.unusable_from_here(&self.address) {
                None => run::GvisorLog::Reading(log),
                Some(why) => {
                    tracing::warn!(runtime = %log.name, %why, "gVisor's record cannot be read");
                    run::GvisorLog::Unusable(format!(
                        "the engine offers `{}` (gVisor with its log of the code's calls), but {why}: the files are as the code's interpreter reports them",
                        log.name
                    ))
                }
            },
        }
    }

    /// Creates, attaches to and starts the container `name`; `guard` learns
    /// when the engine has answered the creation.
    async fn create_and_start(
        &self,
        name: &str,
        body: bollard::models::ContainerCreateBody,
        guard: &mut Guard,
        log_dir: Option<&std::path::Path>,
        began: std::time::SystemTime,
    ) -> Result<(bollard::container::AttachContainerResults, String), SandboxError> {
        let created = self
            .docker
            .create_container(
                Some(CreateContainerOptions {
                    name: Some(name.to_string()),
                    ..Default::default()
                }),
                body,
            )
            .await;
        guard.created = true;
        let created = created.map_err(|e| engine::engine_error("creating the container", e))?;
        // From here the container may have a Sentry, and the Sentry a log.
        guard.log = log_dir.map(|dir| run::LogFile {
            dir: dir.to_path_buf(),
            id: created.id.clone(),
            began,
        });
        engine::refuse_warnings(&created.warnings)?;
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
            .map_err(|e| engine::engine_error("attaching to the container", e))?;
        self.docker
            .start_container(name, None)
            .await
            .map_err(|e| engine::engine_error("starting the container", e))?;
        Ok((attach, created.id))
    }

    /// Prepares a container, executes the job in it and removes it before
    /// returning ([`Prepared::execute`]).
    pub async fn run(&self, cfg: &SandboxConfig, job: &Job) -> Result<Outcome, SandboxError> {
        self.prepare(cfg).await?.execute(job).await
    }
}

impl Executor for Docker {
    fn engine(&self) -> BoxFuture<'_, Result<EngineFacts, SandboxError>> {
        Box::pin(self.engine_facts())
    }

    fn image<'a>(&'a self, image: &'a str) -> BoxFuture<'a, Result<ImageInfo, SandboxError>> {
        Box::pin(self.image_info(image))
    }

    fn prepare(
        &self,
        cfg: SandboxConfig,
    ) -> BoxFuture<'static, Result<Box<dyn PreparedRun>, SandboxError>> {
        let sandbox = self.clone();
        Box::pin(async move {
            let p = Docker::prepare(&sandbox, &cfg).await?;
            Ok(Box::new(p) as Box<dyn PreparedRun>)
        })
    }

    fn sweep_leftovers(&self) -> BoxFuture<'_, Result<usize, SandboxError>> {
        Box::pin(self.cleanup_leftovers())
    }

    fn pull_ahead<'a>(
        &'a self,
        image: &'a str,
    ) -> BoxFuture<'a, Option<watch::Receiver<PullProgress>>> {
        Box::pin(Docker::pull_ahead(self, image))
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(Docker::close(self))
    }
}

/// Lists its container from just before creation and removes it: through
/// [`Guard::remove`], or when dropped without it (error, panic, cancelled
/// future) by a task on the current runtime that [`Docker::close`] awaits.
struct Guard {
    sandbox: Docker,
    name: String,
    armed: bool,
    /// The engine answered the creation request. Until then a drop (a
    /// cancelled future) may come while the engine is still creating the
    /// container: a removal then finds nothing and has to look again.
    created: bool,
    /// gVisor's log of the container, removed with it; `None` once a run
    /// took it to read (or under any other runtime).
    log: Option<run::LogFile>,
}

/// How long a guard dropped during the creation request keeps looking for
/// the container the engine may still be creating.
const CREATION_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

impl Guard {
    /// Lists `name`; refused once the sandbox is closing.
    fn new(sandbox: &Docker, name: &str) -> Result<Guard, SandboxError> {
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
            created: false,
            log: None,
        })
    }

    async fn remove(mut self) -> Result<(), SandboxError> {
        self.armed = false;
        let removed = engine::remove(&self.sandbox.docker, &self.name).await;
        discard_log(self.log.take()).await;
        self.sandbox.live.settle(&self.name, removed.is_ok());
        removed
    }

    /// Removes the container of a run that is over, before returning.
    async fn remove_after_run(mut self) {
        self.armed = false;
        remove_finally(self.sandbox.clone(), self.name.clone(), self.log.take()).await;
    }

    /// Starts the removal of a container whose run is over as a task that
    /// [`Docker::settled`] and [`Docker::close`] await.
    fn remove_in_background(mut self) {
        self.armed = false;
        let (sandbox, name, log) = (self.sandbox.clone(), self.name.clone(), self.log.take());
        self.untracked_if(!sandbox.clone().track(remove_finally(sandbox, name, log)));
    }

    /// A removal that could not start (no runtime): `close` tries again.
    fn untracked_if(&self, untracked: bool) {
        if untracked {
            self.sandbox.live.settle(&self.name, false);
            tracing::warn!(container = %self.name, "no runtime to remove the container; the next run's leftover sweep removes it once expired");
        }
    }
}

/// Removes a container whose run is over: one more try on a fresh
/// connection when the first fails (the outcome stands either way), then
/// `close` tries again and any bot removes it once its expiry label passes.
async fn remove_finally(sandbox: Docker, name: String, log: Option<run::LogFile>) {
    let mut removed = engine::remove(&sandbox.docker, &name).await;
    if removed.is_err() {
        removed = match engine::connect(&sandbox.address).await {
            Ok(d) => engine::remove(&d, &name).await,
            Err(e) => Err(e),
        };
    }
    if let Err(e) = &removed {
        tracing::warn!(container = %name, error = %e, "could not remove the container; any bot removes it once its expiry label passes");
    }
    discard_log(log).await;
    sandbox.live.settle(&name, removed.is_ok());
}

/// Removes gVisor's log of a removed container, when it has one left.
async fn discard_log(log: Option<run::LogFile>) {
    if let Some(log) = log {
        log.discard().await;
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let (sandbox, name, log) = (self.sandbox.clone(), self.name.clone(), self.log.take());
        let in_creation = !self.created;
        self.untracked_if(!sandbox.clone().track(async move {
            let removed = if in_creation {
                engine::remove_once_created(&sandbox.docker, &name, CREATION_GRACE).await
            } else {
                engine::remove(&sandbox.docker, &name).await
            };
            if let Err(e) = &removed {
                tracing::warn!(container = %name, error = %e, "could not remove container");
            }
            discard_log(log).await;
            sandbox.live.settle(&name, removed.is_ok());
        }));
    }
}
