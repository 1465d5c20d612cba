//! The execution layer as the loop sees it: [`Executor`] (prepare a run,
//! run once, image labels, engine version) and [`PreparedRun`] (execute or
//! discard). [`Sandbox`] is the real one; loop tests may use an in-memory
//! executor where Docker is not what is under test.

use std::collections::BTreeMap;

use futures_util::future::BoxFuture;
use tokio::task::JoinHandle;

use super::{Job, Outcome, Prepared, Sandbox, SandboxConfig, SandboxError};

/// What the loop needs from an execution engine.
pub trait Executor: Send + Sync {
    /// The version labels (`org.compute-bot.*`) of `image`.
    fn image_labels<'a>(
        &'a self,
        image: &'a str,
    ) -> BoxFuture<'a, Result<BTreeMap<String, String>, SandboxError>>;
    /// Starts preparing a run in the background (a container waiting for
    /// its job), so it can happen while the model writes code.
    fn start_prepare(
        &self,
        cfg: SandboxConfig,
    ) -> JoinHandle<Result<Box<dyn PreparedRun>, SandboxError>>;
    /// One complete run in a fresh container (repeat runs, checks, the
    /// independent verification).
    fn run<'a>(
        &'a self,
        cfg: &'a SandboxConfig,
        job: &'a Job,
    ) -> BoxFuture<'a, Result<Outcome, SandboxError>>;
    /// The engine's version, for the run record (`None` when unknown).
    fn engine_version(&self) -> BoxFuture<'_, Option<String>>;
}

/// A prepared run: executes exactly one job, or is discarded.
pub trait PreparedRun: Send {
    /// Runs `job` and removes what was prepared.
    fn execute<'a>(self: Box<Self>, job: &'a Job) -> BoxFuture<'a, Result<Outcome, SandboxError>>;
    /// Removes what was prepared without running anything.
    fn discard(self: Box<Self>) -> BoxFuture<'static, Result<(), SandboxError>>;
}

impl Executor for Sandbox {
    fn image_labels<'a>(
        &'a self,
        image: &'a str,
    ) -> BoxFuture<'a, Result<BTreeMap<String, String>, SandboxError>> {
        Box::pin(async move { Ok(self.image_info(image).await?.labels) })
    }

    fn start_prepare(
        &self,
        cfg: SandboxConfig,
    ) -> JoinHandle<Result<Box<dyn PreparedRun>, SandboxError>> {
        let sandbox = self.clone();
        tokio::spawn(async move {
            let p = sandbox.prepare(&cfg).await?;
            Ok(Box::new(p) as Box<dyn PreparedRun>)
        })
    }

    fn run<'a>(
        &'a self,
        cfg: &'a SandboxConfig,
        job: &'a Job,
    ) -> BoxFuture<'a, Result<Outcome, SandboxError>> {
        Box::pin(Sandbox::run(self, cfg, job))
    }

    fn engine_version(&self) -> BoxFuture<'_, Option<String>> {
        Box::pin(async move {
            let v = self.docker().version().await.ok()?;
            Some(format!(
                "{} (API {})",
                v.version.unwrap_or_default(),
                v.api_version.unwrap_or_default()
            ))
        })
    }
}

impl PreparedRun for Prepared {
    fn execute<'a>(self: Box<Self>, job: &'a Job) -> BoxFuture<'a, Result<Outcome, SandboxError>> {
        Box::pin(Prepared::execute(*self, job))
    }

    fn discard(self: Box<Self>) -> BoxFuture<'static, Result<(), SandboxError>> {
        Box::pin(Prepared::discard(*self))
    }
}
