//! The one seam between compute-bot and a container backend: [`Executor`]
//! (engine facts, image facts, prepare a run, sweep leftovers, close) and
//! [`PreparedRun`] (execute one job or discard). Every front end and stage
//! goes through it — `run`, the loop, the checks, replay, doctor and the
//! Action — so a backend implements these two traits and nothing else (see
//! ARCHITECTURE.md, "Sandbox backends"). The Docker backend
//! ([`super::Sandbox`]) is the real one; loop tests may use an in-memory
//! executor where Docker is not what is under test.

use futures_util::future::BoxFuture;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::{ImageInfo, Job, Outcome, PullProgress, SandboxConfig, SandboxError};

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
    pub(crate) fn record_line(&self) -> Option<String> {
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
    /// the model writes code.
    fn start_prepare(
        &self,
        cfg: SandboxConfig,
    ) -> JoinHandle<Result<Box<dyn PreparedRun>, SandboxError>> {
        tokio::spawn(self.prepare(cfg))
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
}

#[cfg(test)]
mod tests {
    use super::*;

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
