//! The one seam between compute-bot and a container backend: [`Executor`]
//! (engine facts, image facts, prepare a run, sweep leftovers, close) and
//! [`PreparedRun`] (execute one job or discard), with [`Preparing`], the
//! owner of a container prepared in the background. Every front end and stage
//! goes through it — `run`, the loop, the checks, replay, doctor and the
//! Action — so a backend implements these two traits and nothing else (see
//! ARCHITECTURE.md, "Sandbox backends"). The Docker backend
//! ([`Docker`](crate::docker::Docker)) is the real one; loop tests may use an in-memory
//! executor where Docker is not what is under test.

use futures_util::future::BoxFuture;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::{ImageInfo, Job, Outcome, PullProgress, SandboxConfig, SandboxError};

/// How one step of a session runs ([`PreparedRun::begin`], [`Steps::step`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StepOptions {
    /// The step is meant to give the result: the files in `/out` are
    /// collected when it ends (a look step's are not).
    pub last: bool,
    /// The step's own deadline, counted from its code's start.
    pub timeout: std::time::Duration,
    /// What follows the step: a wait (the container is frozen until the
    /// next step) or the next step at once.
    pub then: Then,
}

/// What follows a step, which decides whether its container is frozen
/// after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Then {
    /// The bot waits (for the model, or for a person): the container is
    /// frozen until the next step, so nothing the code left running works
    /// unobserved meanwhile.
    #[default]
    Wait,
    /// The next step follows at once, its code known already (exact
    /// `# %%` cells, a replay of recorded steps): no freeze and no thaw,
    /// which would only add the engine's two round trips to each step.
    Next,
}

/// A session's container after a step: its interpreter waits, globals
/// kept, for the next step's code ([`Steps::step`]) or for the end
/// ([`Steps::end`]). Between steps the container is frozen (the engine's
/// pause), so nothing the code left behind runs while the model thinks.
/// Dropped without [`Steps::end`], the container is removed in the
/// background, like a dropped [`Preparing`].
pub trait Steps: Send {
    /// Runs `code` as the next step in the same interpreter. The outcome is
    /// this step's alone: its output, its facts (files, attempts, CPU time,
    /// duration) and its status; `outcome.step` numbers it. A step whose
    /// outcome ends the session (a timeout, the memory limit, a kill,
    /// tampering, the interpreter gone) leaves [`Steps::is_over`] true.
    fn step<'a>(
        &'a mut self,
        code: &'a str,
        options: StepOptions,
    ) -> BoxFuture<'a, Result<Outcome, SandboxError>>;
    /// True once no further step can run in this session.
    fn is_over(&self) -> bool;
    /// Ends the session and removes its container. `last`: the outcome of
    /// the step that gave the result, to which what only the session's end
    /// can say is added: a step's end the code forged, and what its process
    /// did after that step's report (under gVisor, the rest of the Sentry's
    /// log; each step's own stretch is in its outcome already).
    fn end<'a>(self: Box<Self>, last: Option<&'a mut Outcome>) -> BoxFuture<'a, ()>;
}

/// A begun session: step 1's outcome and the session for the next steps.
pub type Begun = (Outcome, Box<dyn Steps>);

/// A backend that runs no sessions: [`PreparedRun::begin`]'s default.
fn no_sessions() -> SandboxError {
    SandboxError::Engine {
        action: "starting a session of steps",
        detail: "this backend runs one program per container only; set `session.max_steps: 1` in the policy".into(),
    }
}

/// What a backend is and what it offers, for `compute-bot doctor` and the
/// run record.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EngineFacts {
    /// What answers: `Docker`, `Podman`, `Kubernetes`, `in memory`.
    pub kind: String,
    /// Where it answers (`unix:///var/run/docker.sock`, a cluster URL).
    pub address: String,
    /// The engine's version (`20.10.24`), when it says.
    pub version: Option<String>,
    /// The version of its API (`1.41`), when it has one.
    pub api_version: Option<String>,
    /// The OCI runtime it uses when a run names none.
    pub default_runtime: Option<String>,
    /// The OCI runtimes (or runtime classes) it offers, sorted.
    pub runtimes: Vec<String>,
    /// A runtime it offers that runs gVisor with the Sentry's strace log
    /// on: under `runtime: runsc` the bot runs the container with it and
    /// reads the code's file opens and socket calls from that log.
    pub gvisor_log: Option<super::LogRuntime>,
}

impl EngineFacts {
    /// The engine as the run record names it: `20.10.24 (API 1.41)`, the
    /// version alone without an API, `None` when it did not say.
    pub fn record_line(&self) -> Option<String> {
        let version = self.version.as_deref()?;
        Some(match &self.api_version {
            Some(api) => format!("{version} (API {api})"),
            None => version.to_string(),
        })
    }
}

/// A container backend as every stage sees it. A backend implements the
/// five required methods; [`Executor::start_prepare`] and [`Executor::run`]
/// are built on [`Executor::prepare`] (tests may override them to count).
pub trait Executor: Send + Sync {
    /// What the engine is, where, which version and runtimes.
    fn engine(&self) -> BoxFuture<'_, Result<EngineFacts, SandboxError>>;
    /// Facts about `image` (its id, digests and `org.compute-bot.*`
    /// labels); a missing image is [`SandboxError::ImageMissing`].
    fn image<'a>(&'a self, image: &'a str) -> BoxFuture<'a, Result<ImageInfo, SandboxError>>;
    /// Prepares a run: a hardened container (pod, VM, ...) whose runner
    /// waits for its job. The future owns what it needs, so it can run in
    /// the background while the model writes code.
    fn prepare(
        &self,
        cfg: SandboxConfig,
    ) -> BoxFuture<'static, Result<Box<dyn PreparedRun>, SandboxError>>;
    /// Removes runs that dead bots left behind (by the backend's expiry
    /// rule, never by process ids); returns how many went.
    fn sweep_leftovers(&self) -> BoxFuture<'_, Result<usize, SandboxError>>;
    /// Removes every run of this connection that is still there, waits for
    /// removals under way, and refuses new runs
    /// ([`SandboxError::Closed`]). Called once at the end of a command.
    fn close(&self) -> BoxFuture<'_, ()>;

    /// Starts getting `image` onto the engine when it lacks it and the
    /// backend pulls it (the Docker backend: pinned by digest or naming
    /// its registry), so it arrives beside the run's other work; a later
    /// [`Executor::prepare`] waits for it. Returns the pull's progress;
    /// `None` when nothing is pulled (the default).
    fn pull_ahead<'a>(
        &'a self,
        image: &'a str,
    ) -> BoxFuture<'a, Option<watch::Receiver<PullProgress>>> {
        let _ = image;
        Box::pin(async { None })
    }

    /// Starts [`Executor::prepare`] on the runtime, so it can happen while
    /// the model writes code; the [`Preparing`] it returns owns the
    /// container until it is ready or discarded.
    fn start_prepare(&self, cfg: SandboxConfig) -> Preparing {
        Preparing::start(self.prepare(cfg))
    }

    /// One complete run in a fresh container (`run --code`, repeat runs,
    /// checks, the independent verification, replay).
    fn run<'a>(
        &'a self,
        cfg: &'a SandboxConfig,
        job: &'a Job,
    ) -> BoxFuture<'a, Result<Outcome, SandboxError>> {
        Box::pin(async move { self.prepare(cfg.clone()).await?.execute(job).await })
    }
}

/// A prepared run: executes exactly one job, or is discarded.
pub trait PreparedRun: Send {
    /// Runs `job`, collects the outcome under the limits and removes what
    /// was prepared, in every case; the removal may still be under way
    /// when the outcome returns (the answer need not wait for it), and
    /// [`Executor::close`] waits for it.
    fn execute<'a>(self: Box<Self>, job: &'a Job) -> BoxFuture<'a, Result<Outcome, SandboxError>>;
    /// Removes what was prepared without running anything.
    fn discard(self: Box<Self>) -> BoxFuture<'static, Result<(), SandboxError>>;
    /// Starts a session in the prepared container: writes the job's inputs
    /// and runs its code as step 1 in an interpreter that stays, and
    /// returns that step's outcome with the session, which runs further
    /// steps ([`Steps`]). On an error the container is removed.
    fn begin<'a>(
        self: Box<Self>,
        job: &'a Job,
        options: StepOptions,
    ) -> BoxFuture<'a, Result<Begun, SandboxError>> {
        let _ = (job, options);
        let discard = self.discard();
        Box::pin(async move {
            let _ = discard.await;
            Err(no_sessions())
        })
    }
}

/// A container being prepared in the background: the one owner of the
/// *prepared* state (see docs/dev/container-life.md). It ends one of three
/// ways, and the container is never left behind:
/// - [`Preparing::ready`] waits for the preparation and hands over the
///   [`PreparedRun`], which executes one job and removes the container;
/// - [`Preparing::discard`] waits for it and removes the container unused;
/// - dropped, it does what `discard` does on the runtime, in the
///   background. The preparation is not cancelled: a creation cut off
///   mid-request can leave a container the engine finishes after its
///   removal was tried. Until it is gone the backend lists it, so
///   [`Executor::close`] waits for it.
pub struct Preparing {
    /// `None` only once `ready` or `discard` took it, so `Drop` knows.
    task: Option<Task>,
}

/// The background preparation.
type Task = JoinHandle<Result<Box<dyn PreparedRun>, SandboxError>>;

impl Preparing {
    /// Starts `prepare` (an [`Executor::prepare`] future) on the runtime.
    pub fn start(prepare: BoxFuture<'static, Result<Box<dyn PreparedRun>, SandboxError>>) -> Self {
        Preparing {
            task: Some(tokio::spawn(prepare)),
        }
    }

    /// The prepared run, once the container is ready; the preparation's
    /// error when it failed (a panic in it is the caller's panic).
    pub async fn ready(mut self) -> Result<Box<dyn PreparedRun>, SandboxError> {
        join(self.take()).await
    }

    /// Removes the container unused, once it is prepared; a preparation
    /// that failed left nothing to remove.
    pub async fn discard(mut self) {
        discard(self.take()).await;
    }

    /// The task, taken by the one method that consumes `self`.
    fn take(&mut self) -> Task {
        self.task
            .take()
            .expect("only Drop sees a Preparing without its task")
    }
}

impl Drop for Preparing {
    fn drop(&mut self) {
        if let Some(task) = self.task.take()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(discard(task));
        }
    }
}

/// The preparation's result; a panic in it resumes here.
async fn join(task: Task) -> Result<Box<dyn PreparedRun>, SandboxError> {
    match task.await {
        Ok(prepared) => prepared,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => Err(SandboxError::Engine {
            action: "preparing the container",
            detail: e.to_string(),
        }),
    }
}

/// Removes the container once the preparation ends, if it made one.
async fn discard(task: Task) {
    if let Ok(Ok(prepared)) = task.await {
        let _ = prepared.discard().await;
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    /// A prepared run that counts its discards.
    struct Counted(Arc<AtomicUsize>);

    impl PreparedRun for Counted {
        fn execute<'a>(
            self: Box<Self>,
            _job: &'a Job,
        ) -> BoxFuture<'a, Result<Outcome, SandboxError>> {
            unreachable!("these tests run no job")
        }
        fn discard(self: Box<Self>) -> BoxFuture<'static, Result<(), SandboxError>> {
            self.0.fetch_add(1, Ordering::SeqCst);
            Box::pin(async { Ok(()) })
        }
    }

    /// A preparation that takes a moment, then yields a [`Counted`].
    fn slow(discards: &Arc<AtomicUsize>) -> Preparing {
        let discards = discards.clone();
        Preparing::start(Box::pin(async move {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            Ok(Box::new(Counted(discards)) as Box<dyn PreparedRun>)
        }))
    }

    #[tokio::test]
    async fn a_preparing_dropped_unused_discards_its_container_once_prepared() {
        let discards = Arc::new(AtomicUsize::new(0));
        drop(slow(&discards));
        assert_eq!(
            discards.load(Ordering::SeqCst),
            0,
            "not before it is prepared"
        );
        for _ in 0..100 {
            if discards.load(Ordering::SeqCst) == 1 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        assert_eq!(discards.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn a_ready_run_is_handed_over_and_not_discarded_and_discard_waits() {
        let discards = Arc::new(AtomicUsize::new(0));
        let run = slow(&discards).ready().await.expect("prepared");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        assert_eq!(
            discards.load(Ordering::SeqCst),
            0,
            "the holder of the run decides"
        );
        drop(run);
        slow(&discards).discard().await;
        assert_eq!(
            discards.load(Ordering::SeqCst),
            1,
            "discard returns once it is done"
        );
    }

    #[tokio::test]
    async fn a_failed_preparation_is_its_error() {
        let p = Preparing::start(Box::pin(async {
            Err(SandboxError::Engine {
                action: "creating the container",
                detail: "no such image".into(),
            })
        }));
        let e = p.ready().await.err().expect("the error");
        assert!(e.to_string().contains("no such image"), "{e}");
    }

    #[test]
    fn the_record_names_the_engine_with_its_api_when_known() {
        let mut f = EngineFacts {
            version: Some("20.10.24".into()),
            api_version: Some("1.41".into()),
            ..Default::default()
        };
        assert_eq!(f.record_line().as_deref(), Some("20.10.24 (API 1.41)"));
        f.api_version = None;
        assert_eq!(f.record_line().as_deref(), Some("20.10.24"));
        f.version = None;
        assert_eq!(f.record_line(), None);
    }
}
