//! The execution environments of a run and the one place that decides
//! between them: the first environment (an engine address and the run's
//! runtime) and the reserve the policy names (`sandbox.reserve`: another
//! engine, another runtime, or both). [`Fallback`] is an [`Executor`] over
//! both: it prepares in the first and, only when the first **cannot prepare
//! or start** the container ([`cannot_prepare`]), in the reserve. What runs
//! after the job was handed over — the code failing, timing out, running
//! out of memory, or the engine connection lost or the container killed
//! mid-run — is never moved: the code may already have done part of its
//! work, and running it a second time elsewhere would hide what happened.
//! Each outcome says which environment ran it and why
//! ([`Outcome::environment`](super::Outcome)).

use std::fmt;
use std::sync::{Arc, Mutex};

use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};
use tokio::sync::OnceCell;

use super::SandboxError;
use super::executor::{Begun, EngineFacts, Executor, PreparedRun, StepOptions, Steps};
use super::types::{ImageInfo, Job, Outcome, Runtime, SandboxConfig};

/// Which of the policy's environments ran the code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The first environment (`sandbox.engine` and the run's runtime).
    First,
    /// The reserve (`sandbox.reserve`), because the first could not prepare
    /// the container.
    Reserve,
}

/// The environment a run's container ran in, and why there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Environment {
    /// The first environment or the reserve.
    pub role: Role,
    /// The engine's address (`unix:///var/run/docker.sock`, `tcp://…`).
    pub engine: String,
    /// The OCI runtime the container ran under.
    pub runtime: Runtime,
    /// Why the reserve ran it: what the first environment said when it
    /// could not prepare the container. `None` for the first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl fmt::Display for Environment {
    /// `the reserve (unix:///run/podman/podman.sock, runc)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let role = match self.role {
            Role::First => "the first environment",
            Role::Reserve => "the reserve",
        };
        write!(f, "{role} ({}, {})", self.engine, self.runtime.as_str())
    }
}

impl Environment {
    /// One line for a report: the environment, and for the reserve why.
    pub fn line(&self) -> String {
        match &self.reason {
            Some(reason) => format!("{self}, because the first could not prepare: {reason}"),
            None => self.to_string(),
        }
    }
}

/// `sandbox.reserve`: where runs go when the first environment cannot
/// prepare a container. What it leaves out is the first's: an engine alone
/// keeps the run's runtime (no silent step down from runsc to runc), a
/// runtime alone keeps the first engine.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reserve {
    /// The reserve engine's address; the first engine when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<String>,
    /// The reserve's OCI runtime; the run's runtime when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<Runtime>,
}

/// The environments a command may use, resolved by the front end: the
/// first engine's address and the reserve, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Environments {
    /// The first engine's address.
    pub engine: String,
    /// The reserve, when the policy names one.
    pub reserve: Option<Reserve>,
}

impl Default for Environments {
    /// `DOCKER_HOST` (or the local socket) and no reserve.
    fn default() -> Self {
        Environments::new(None, None)
    }
}

impl Environments {
    /// The policy's `sandbox.engine` (else `DOCKER_HOST`, else the local
    /// socket) and its `sandbox.reserve`.
    pub fn new(engine: Option<String>, reserve: Option<Reserve>) -> Environments {
        Environments {
            engine: engine.unwrap_or_else(super::docker_host),
            reserve,
        }
    }

    /// The reserve's engine address: its own, else the first's.
    fn reserve_engine(&self) -> Option<String> {
        let r = self.reserve.as_ref()?;
        Some(r.engine.clone().unwrap_or_else(|| self.engine.clone()))
    }
}

/// True when `e`, from preparing a container (before any code was handed
/// over), means this environment cannot run it, so the reserve may: the
/// engine unreachable, the image missing there (or not pullable there:
/// registry down, digest refused), or the engine refusing to
/// create, attach to or start the container (e.g. `Unknown runtime
/// specified runsc`). Not a bad input (the same everywhere) and not an
/// interrupted run.
pub(crate) fn cannot_prepare(e: &SandboxError) -> bool {
    match e {
        SandboxError::Unreachable { .. }
        | SandboxError::ImageMissing { .. }
        | SandboxError::ImagePull { .. }
        | SandboxError::Engine { .. } => true,
        SandboxError::BadInput { .. }
        | SandboxError::Closed
        | SandboxError::NoEnvironment { .. } => false,
    }
}

/// One engine connection, made on first use and kept.
struct Slot {
    address: String,
    conn: OnceCell<Arc<dyn Executor>>,
}

impl Slot {
    fn new(address: String) -> Slot {
        Slot {
            address,
            conn: OnceCell::new(),
        }
    }

    async fn get(&self) -> Result<Arc<dyn Executor>, SandboxError> {
        let conn = self
            .conn
            .get_or_try_init(|| async {
                // The session closes it: removals may go on beside the answer.
                crate::connect_to(&self.address, crate::Use::Session).await
            })
            .await?;
        Ok(conn.clone())
    }
}

struct Inner {
    first: Slot,
    /// The reserve's connection and runtime (`None`: the run's).
    reserve: Option<(Slot, Option<Runtime>)>,
    /// Set once the first could not prepare: why. From then on the session
    /// prepares in the reserve (its runs stay in one environment).
    moved: Mutex<Option<String>>,
}

/// The [`Executor`] over the first environment and the reserve; the one
/// place that decides which of them prepares a container.
pub(crate) struct Fallback {
    inner: Arc<Inner>,
}

impl Fallback {
    /// Connects to the first engine; when it cannot be reached and a
    /// reserve is named, to the reserve. Both unreachable: a
    /// [`SandboxError::NoEnvironment`] naming both.
    pub(crate) async fn connect(envs: &Environments) -> Result<Fallback, SandboxError> {
        let inner = Inner {
            first: Slot::new(envs.engine.clone()),
            reserve: envs.reserve_engine().map(|engine| {
                let runtime = envs.reserve.as_ref().and_then(|r| r.runtime);
                (Slot::new(engine), runtime)
            }),
            moved: Mutex::new(None),
        };
        match inner.first.get().await {
            Ok(_) => {}
            Err(e) if inner.reserve.is_some() && cannot_prepare(&e) => {
                tracing::warn!(engine = %inner.first.address, error = %e.short(), "the first engine cannot be reached; using the reserve");
                let (slot, _) = inner.reserve.as_ref().expect("checked");
                if let Err(r) = slot.get().await {
                    return Err(inner.both_down(&e.short(), None, &r));
                }
                *inner.moved.lock().expect("lock") = Some(e.short());
            }
            Err(e) => return Err(e),
        }
        Ok(Fallback {
            inner: Arc::new(inner),
        })
    }

    /// The connection in use: the reserve once the first could not prepare.
    async fn current(&self) -> Result<Arc<dyn Executor>, SandboxError> {
        let moved = self.inner.moved.lock().expect("lock").is_some();
        match (&self.inner.reserve, moved) {
            (Some((slot, _)), true) => slot.get().await,
            _ => self.inner.first.get().await,
        }
    }
}

impl Inner {
    /// The stop when neither environment can prepare: both named, each with
    /// what it said.
    fn both_down(
        &self,
        first: &str,
        runtime: Option<Runtime>,
        reserve: &SandboxError,
    ) -> SandboxError {
        let (slot, reserve_runtime) = self.reserve.as_ref().expect("a reserve");
        let name = |engine: &str, runtime: Option<Runtime>| match runtime {
            Some(r) => format!("{engine}, {}", r.as_str()),
            None => engine.to_string(),
        };
        SandboxError::NoEnvironment {
            first: format!("{}: {first}", name(&self.first.address, runtime)),
            reserve: format!(
                "{}: {}",
                name(&slot.address, reserve_runtime.or(runtime)),
                reserve.short()
            ),
        }
    }

    async fn prepare(&self, cfg: SandboxConfig) -> Result<Box<dyn PreparedRun>, SandboxError> {
        let moved = self.moved.lock().expect("lock").clone();
        let reason = match moved {
            Some(reason) => reason,
            None => {
                let tried = match self.first.get().await {
                    Ok(first) => first.prepare(cfg.clone()).await,
                    Err(e) => Err(e),
                };
                match tried {
                    Ok(run) => {
                        let env = Environment {
                            role: Role::First,
                            engine: self.first.address.clone(),
                            runtime: cfg.runtime,
                            reason: None,
                        };
                        return Ok(Box::new(Placed { run, env }));
                    }
                    Err(e) if self.reserve.is_none() || !cannot_prepare(&e) => return Err(e),
                    Err(e) => {
                        tracing::warn!(engine = %self.first.address, error = %e.short(), "the first environment cannot prepare the container; using the reserve");
                        let reason = e.short();
                        *self.moved.lock().expect("lock") = Some(reason.clone());
                        reason
                    }
                }
            }
        };
        let (slot, runtime) = self.reserve.as_ref().expect("moved only with a reserve");
        let runtime = runtime.unwrap_or(cfg.runtime);
        let tried = match slot.get().await {
            Ok(reserve) => {
                reserve
                    .prepare(SandboxConfig {
                        runtime,
                        ..cfg.clone()
                    })
                    .await
            }
            Err(e) => Err(e),
        };
        match tried {
            Ok(run) => {
                let env = Environment {
                    role: Role::Reserve,
                    engine: slot.address.clone(),
                    runtime,
                    reason: Some(reason),
                };
                Ok(Box::new(Placed { run, env }))
            }
            Err(e) if cannot_prepare(&e) => Err(self.both_down(&reason, Some(cfg.runtime), &e)),
            Err(e) => Err(e),
        }
    }
}

impl Executor for Fallback {
    fn engine(&self) -> BoxFuture<'_, Result<EngineFacts, SandboxError>> {
        Box::pin(async move { self.current().await?.engine().await })
    }

    fn image<'a>(&'a self, image: &'a str) -> BoxFuture<'a, Result<ImageInfo, SandboxError>> {
        Box::pin(async move { self.current().await?.image(image).await })
    }

    fn prepare(
        &self,
        cfg: SandboxConfig,
    ) -> BoxFuture<'static, Result<Box<dyn PreparedRun>, SandboxError>> {
        let inner = self.inner.clone();
        Box::pin(async move { inner.prepare(cfg).await })
    }

    fn pull_ahead<'a>(
        &'a self,
        image: &'a str,
    ) -> BoxFuture<'a, Option<tokio::sync::watch::Receiver<super::PullProgress>>> {
        // In the environment that prepares next; a reserve that takes over
        // pulls in its own preparation.
        Box::pin(async move { self.current().await.ok()?.pull_ahead(image).await })
    }

    fn sweep_leftovers(&self) -> BoxFuture<'_, Result<usize, SandboxError>> {
        // Each connection sweeps its engine when it is made (`Slot::get`).
        Box::pin(async { Ok(0) })
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            if let Some(first) = self.inner.first.conn.get() {
                first.close().await;
            }
            if let Some(reserve) = self.inner.reserve.as_ref().and_then(|(s, _)| s.conn.get()) {
                reserve.close().await;
            }
        })
    }
}

/// A prepared run and the environment it was prepared in, which its
/// outcome names.
struct Placed {
    run: Box<dyn PreparedRun>,
    env: Environment,
}

impl PreparedRun for Placed {
    fn execute<'a>(self: Box<Self>, job: &'a Job) -> BoxFuture<'a, Result<Outcome, SandboxError>> {
        Box::pin(async move {
            let mut outcome = self.run.execute(job).await?;
            outcome.environment = Some(self.env);
            Ok(outcome)
        })
    }

    fn discard(self: Box<Self>) -> BoxFuture<'static, Result<(), SandboxError>> {
        self.run.discard()
    }

    fn begin<'a>(
        self: Box<Self>,
        job: &'a Job,
        options: StepOptions,
    ) -> BoxFuture<'a, Result<Begun, SandboxError>> {
        Box::pin(async move {
            let Placed { run, env } = *self;
            let (mut outcome, steps) = run.begin(job, options).await?;
            outcome.environment = Some(env.clone());
            Ok((
                outcome,
                Box::new(PlacedSteps { steps, env }) as Box<dyn Steps>,
            ))
        })
    }
}

/// A session and the environment it runs in, which each step's outcome
/// names.
struct PlacedSteps {
    steps: Box<dyn Steps>,
    env: Environment,
}

impl Steps for PlacedSteps {
    fn step<'a>(
        &'a mut self,
        code: &'a str,
        options: StepOptions,
    ) -> BoxFuture<'a, Result<Outcome, SandboxError>> {
        Box::pin(async move {
            let mut outcome = self.steps.step(code, options).await?;
            outcome.environment = Some(self.env.clone());
            Ok(outcome)
        })
    }

    fn is_over(&self) -> bool {
        self.steps.is_over()
    }

    fn end<'a>(self: Box<Self>, last: Option<&'a mut Outcome>) -> BoxFuture<'a, ()> {
        self.steps.end(last)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_preparation_failures_move_a_run_to_the_reserve() {
        let engine = |action| SandboxError::Engine {
            action,
            detail: "Unknown runtime specified runsc".into(),
        };
        assert!(cannot_prepare(&engine("creating the container")));
        assert!(cannot_prepare(&SandboxError::Unreachable {
            host: "unix:///nowhere".into(),
            detail: "connection refused".into()
        }));
        assert!(cannot_prepare(&SandboxError::ImageMissing {
            image: "x".into(),
            host: "h".into()
        }));
        // A pull that failed there (registry down, digest refused).
        assert!(cannot_prepare(&SandboxError::ImagePull {
            image: "x@sha256:00".into(),
            host: "h".into(),
            problem: "the registry cannot be reached".into()
        }));
        assert!(!cannot_prepare(&SandboxError::Closed));
        assert!(!cannot_prepare(&SandboxError::BadInput {
            name: "a".into(),
            problem: "b".into()
        }));
    }

    #[test]
    fn a_reserve_keeps_what_it_does_not_name() {
        let envs = Environments::new(
            Some("unix:///first.sock".into()),
            Some(Reserve {
                engine: None,
                runtime: Some(Runtime::Runc),
            }),
        );
        assert_eq!(envs.reserve_engine().as_deref(), Some("unix:///first.sock"));
        let env = Environment {
            role: Role::Reserve,
            engine: "unix:///r.sock".into(),
            runtime: Runtime::Runsc,
            reason: Some("cannot reach".into()),
        };
        assert_eq!(
            env.line(),
            "the reserve (unix:///r.sock, runsc), because the first could not prepare: cannot reach"
        );
    }
}
