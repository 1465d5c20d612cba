//! An executor in memory for loop tests whose subject is the loop, not the
//! container: every run (a prepared one or a one-off repeat/check/verify
//! run) answers with the next scripted [`Outcome`]; it keeps every job and
//! counts what was prepared, executed, run once, discarded and dropped.
//! It can take its time (prepare, execute, discard) and fail to prepare.
//!
//! The behaviour lives in [`ScriptedExecutor`]'s and [`ScriptedRun`]'s own
//! methods; the `Executor` / `PreparedRun` impls at the end are a thin
//! adapter, the only part that follows a change of those traits.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use compute_bot::policy::Policy;
use compute_bot::sandbox::{
    Audit, EngineFacts, Executor, ImageInfo, Job, Limits, Outcome, PreparedRun, Resources,
    RunStatus, SandboxConfig, SandboxError, sha256_hex,
};
use futures_util::future::BoxFuture;

/// The engine version the run record names for this executor.
pub const ENGINE: &str = "in memory";

/// What one run answers.
#[derive(Debug, Clone)]
pub struct Scripted {
    status: RunStatus,
    stdout: String,
    stderr: String,
    takes: Duration,
}

impl Scripted {
    /// A run that ended with `status`, exit code 0 for `ok`, else 1.
    pub fn new(status: RunStatus, stdout: &str, stderr: &str) -> Self {
        Scripted {
            status,
            stdout: stdout.to_string(),
            stderr: stderr.to_string(),
            takes: Duration::ZERO,
        }
    }

    /// Exit code 0 with this stdout.
    pub fn ok(stdout: &str) -> Self {
        Self::new(RunStatus::Ok, stdout, "")
    }

    /// Exit code 1 with this stderr (a traceback).
    pub fn error(stderr: &str) -> Self {
        Self::new(RunStatus::Error, "", stderr)
    }

    /// The run takes `d` before it answers.
    pub fn taking(mut self, d: Duration) -> Self {
        self.takes = d;
        self
    }
}

/// A job as the executor received it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeenJob {
    /// The code.
    pub code: String,
    /// The names of its input files.
    pub inputs: Vec<String>,
    /// True for a one-off run (repeat, check, verification), false for a
    /// prepared run the loop executed.
    pub one_off: bool,
}

/// What the executor and its prepared runs share.
#[derive(Default)]
struct State {
    script: Mutex<VecDeque<Scripted>>,
    jobs: Mutex<Vec<SeenJob>>,
    prepared: AtomicUsize,
    executed: AtomicUsize,
    one_off: AtomicUsize,
    discarded: AtomicUsize,
    dropped: AtomicUsize,
}

/// Makes the error a failing prepare returns (errors are not `Clone`).
type MakeError = Arc<dyn Fn() -> SandboxError + Send + Sync>;

/// The in-memory executor; see the module documentation.
pub struct ScriptedExecutor {
    state: Arc<State>,
    limits: Limits,
    prepare_takes: Duration,
    discard_takes: Duration,
    prepare_fails: Option<MakeError>,
}

impl ScriptedExecutor {
    /// Answers runs with `script`, in order (none left: an engine error),
    /// reporting `policy`'s limits as applied.
    pub fn new(policy: &Policy, script: impl IntoIterator<Item = Scripted>) -> Self {
        let state = State::default();
        state.script.lock().unwrap().extend(script);
        ScriptedExecutor {
            state: Arc::new(state),
            limits: policy.limits(),
            prepare_takes: Duration::ZERO,
            discard_takes: Duration::ZERO,
            prepare_fails: None,
        }
    }

    /// Preparing a run takes `d` (a container start).
    pub fn preparing_takes(mut self, d: Duration) -> Self {
        self.prepare_takes = d;
        self
    }

    /// Discarding a prepared run takes `d` (a container removal).
    pub fn discarding_takes(mut self, d: Duration) -> Self {
        self.discard_takes = d;
        self
    }

    /// Every prepare fails with the error `make` returns.
    pub fn failing_prepare(
        mut self,
        make: impl Fn() -> SandboxError + Send + Sync + 'static,
    ) -> Self {
        self.prepare_fails = Some(Arc::new(make));
        self
    }

    /// Every job received, in order.
    pub fn jobs(&self) -> Vec<SeenJob> {
        self.state.jobs.lock().unwrap().clone()
    }

    /// The code of every job received, in order.
    pub fn codes(&self) -> Vec<String> {
        self.jobs().into_iter().map(|j| j.code).collect()
    }

    /// Runs prepared (containers started), failed ones included.
    pub fn prepared(&self) -> usize {
        self.state.prepared.load(Ordering::SeqCst)
    }

    /// Prepared runs that executed a job.
    pub fn executed(&self) -> usize {
        self.state.executed.load(Ordering::SeqCst)
    }

    /// One-off runs (repeat runs, checks, the independent verification).
    pub fn one_off_runs(&self) -> usize {
        self.state.one_off.load(Ordering::SeqCst)
    }

    /// Prepared runs removed unused.
    pub fn discarded(&self) -> usize {
        self.state.discarded.load(Ordering::SeqCst)
    }

    /// Prepared runs dropped without being executed or discarded (the
    /// loop forgot a container; the Docker sandbox's guard would remove it).
    pub fn dropped(&self) -> usize {
        self.state.dropped.load(Ordering::SeqCst)
    }

    /// Scripted outcomes not used.
    pub fn left(&self) -> usize {
        self.state.script.lock().unwrap().len()
    }

    /// A prepared run, after the preparing time; the error when set to fail.
    fn prepare_run(&self) -> impl Future<Output = Result<ScriptedRun, SandboxError>> + 'static {
        self.state.prepared.fetch_add(1, Ordering::SeqCst);
        let state = self.state.clone();
        let limits = self.limits.clone();
        let discard_takes = self.discard_takes;
        let takes = self.prepare_takes;
        let fails = self.prepare_fails.clone();
        async move {
            tokio::time::sleep(takes).await;
            if let Some(make) = fails {
                return Err(make());
            }
            Ok(ScriptedRun {
                state,
                limits,
                discard_takes,
                finished: false,
            })
        }
    }

    /// A one-off run of `job` (no container kept in between).
    async fn run_once(&self, job: &Job) -> Result<Outcome, SandboxError> {
        self.state.one_off.fetch_add(1, Ordering::SeqCst);
        answer(&self.state, &self.limits, job, true).await
    }
}

/// A prepared run of the [`ScriptedExecutor`].
pub struct ScriptedRun {
    state: Arc<State>,
    limits: Limits,
    discard_takes: Duration,
    finished: bool,
}

impl ScriptedRun {
    async fn execute(mut self, job: &Job) -> Result<Outcome, SandboxError> {
        self.finished = true;
        self.state.executed.fetch_add(1, Ordering::SeqCst);
        answer(&self.state, &self.limits, job, false).await
    }

    async fn discard(mut self) -> Result<(), SandboxError> {
        self.finished = true;
        tokio::time::sleep(self.discard_takes).await;
        self.state.discarded.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

impl Drop for ScriptedRun {
    fn drop(&mut self) {
        if !self.finished {
            self.state.dropped.fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// Keeps `job` and answers it with the next scripted outcome.
async fn answer(
    state: &State,
    limits: &Limits,
    job: &Job,
    one_off: bool,
) -> Result<Outcome, SandboxError> {
    state.jobs.lock().unwrap().push(SeenJob {
        code: job.code.clone(),
        inputs: job.inputs.iter().map(|f| f.name.clone()).collect(),
        one_off,
    });
    let next = state.script.lock().unwrap().pop_front();
    let Some(s) = next else {
        return Err(SandboxError::Engine {
            action: "running in memory",
            detail: "no scripted outcome left".into(),
        });
    };
    tokio::time::sleep(s.takes).await;
    let ms = s.takes.as_millis() as u64;
    Ok(Outcome {
        status: s.status,
        exit_code: Some(if s.status == RunStatus::Ok { 0 } else { 1 }),
        signal: None,
        duration_ms: ms,
        collected_ms: ms,
        stdout: s.stdout,
        stderr: s.stderr,
        stdout_truncated: false,
        stderr_truncated: false,
        timed_out: s.status == RunStatus::Timeout,
        oom_killed: s.status == RunStatus::Oom,
        image: ImageInfo::default(),
        limits: limits.clone(),
        resources: Resources::default(),
        audit: Audit::default(),
        artifacts: Vec::new(),
        code_sha256: sha256_hex(job.code.as_bytes()),
        container: "in-memory".into(),
        notes: Vec::new(),
        tampered: Vec::new(),
        sources: Default::default(),
        environment: None,
        seccomp: None,
        step: None,
        value: None,
    })
}

// The adapter to the execution layer's traits.

impl Executor for ScriptedExecutor {
    fn engine(&self) -> BoxFuture<'_, Result<EngineFacts, SandboxError>> {
        Box::pin(async {
            Ok(EngineFacts {
                kind: ENGINE.into(),
                version: Some(ENGINE.into()),
                ..EngineFacts::default()
            })
        })
    }

    fn image<'a>(&'a self, _image: &'a str) -> BoxFuture<'a, Result<ImageInfo, SandboxError>> {
        Box::pin(async { Ok(ImageInfo::default()) })
    }

    fn prepare(
        &self,
        _cfg: SandboxConfig,
    ) -> BoxFuture<'static, Result<Box<dyn PreparedRun>, SandboxError>> {
        let prepared = self.prepare_run();
        Box::pin(async move { Ok(Box::new(prepared.await?) as Box<dyn PreparedRun>) })
    }

    fn sweep_leftovers(&self) -> BoxFuture<'_, Result<usize, SandboxError>> {
        Box::pin(async { Ok(0) })
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }

    fn run<'a>(
        &'a self,
        _cfg: &'a SandboxConfig,
        job: &'a Job,
    ) -> BoxFuture<'a, Result<Outcome, SandboxError>> {
        Box::pin(self.run_once(job))
    }
}

impl PreparedRun for ScriptedRun {
    fn execute<'a>(self: Box<Self>, job: &'a Job) -> BoxFuture<'a, Result<Outcome, SandboxError>> {
        Box::pin(ScriptedRun::execute(*self, job))
    }

    fn discard(self: Box<Self>) -> BoxFuture<'static, Result<(), SandboxError>> {
        Box::pin(ScriptedRun::discard(*self))
    }
}
