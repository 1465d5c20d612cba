//! An executor in memory for loop tests whose subject is the loop, not the
//! container: every run (a prepared one or a one-off repeat/check/verify
//! run) answers with the next scripted [`Outcome`]; it keeps every job and
//! counts what was prepared, executed, run once, discarded and dropped.
//! It can take its time (prepare, execute, discard) and fail to prepare.
//! A prepared run can also begin a session of steps ([`PreparedRun::begin`]):
//! each step answers with the next scripted outcome too, and every job
//! records which container (prepared run) and which step it ran as, so a
//! test can assert one container per session.
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
    Artifact, Audit, EngineFacts, Executor, ImageInfo, Job, Limits, Outcome, PreparedRun,
    Resources, RunStatus, SandboxConfig, SandboxError, StepOptions, Steps, sha256_hex,
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
    value: Option<String>,
    files: Vec<String>,
}

impl Scripted {
    /// A run that ended with `status`, exit code 0 for `ok`, else 1.
    pub fn new(status: RunStatus, stdout: &str, stderr: &str) -> Self {
        Scripted {
            status,
            stdout: stdout.to_string(),
            stderr: stderr.to_string(),
            takes: Duration::ZERO,
            value: None,
            files: Vec::new(),
        }
    }

    /// A step whose last expression has this value (its `repr`).
    pub fn with_value(mut self, value: &str) -> Self {
        self.value = Some(value.to_string());
        self
    }

    /// The run leaves a file of this name in `/out` (a few bytes).
    pub fn with_file(mut self, name: &str) -> Self {
        self.files.push(name.to_string());
        self
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
    /// The prepared run (container) it ran in, numbered from 1 in the order
    /// they were prepared; `None` for a one-off run.
    pub container: Option<usize>,
    /// Its step in that container's session (1 for the first); `None` for
    /// a run of one program.
    pub step: Option<u32>,
    /// What the loop asked of the step (`last`, `timeout`).
    pub options: Option<StepOptions>,
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
    sessions: AtomicUsize,
    ended: AtomicUsize,
    steps_dropped: AtomicUsize,
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

    /// Sessions begun (each in its own prepared container).
    pub fn sessions(&self) -> usize {
        self.state.sessions.load(Ordering::SeqCst)
    }

    /// Sessions ended by the loop ([`Steps::end`]).
    pub fn sessions_ended(&self) -> usize {
        self.state.ended.load(Ordering::SeqCst)
    }

    /// Sessions dropped without [`Steps::end`].
    pub fn sessions_dropped(&self) -> usize {
        self.state.steps_dropped.load(Ordering::SeqCst)
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
            let container = state.prepared.load(Ordering::SeqCst);
            Ok(ScriptedRun {
                state,
                limits,
                discard_takes,
                finished: false,
                container,
            })
        }
    }

    /// A one-off run of `job` (no container kept in between).
    async fn run_once(&self, job: &Job) -> Result<Outcome, SandboxError> {
        self.state.one_off.fetch_add(1, Ordering::SeqCst);
        let seen = seen(job, true);
        answer(&self.state, &self.limits, seen).await
    }
}

/// A job as received, not yet placed in a container or step.
fn seen(job: &Job, one_off: bool) -> SeenJob {
    SeenJob {
        code: job.code.clone(),
        inputs: job.inputs.iter().map(|f| f.name.clone()).collect(),
        one_off,
        container: None,
        step: None,
        options: None,
    }
}

/// A prepared run of the [`ScriptedExecutor`].
pub struct ScriptedRun {
    state: Arc<State>,
    limits: Limits,
    discard_takes: Duration,
    finished: bool,
    container: usize,
}

impl ScriptedRun {
    async fn execute(mut self, job: &Job) -> Result<Outcome, SandboxError> {
        self.finished = true;
        self.state.executed.fetch_add(1, Ordering::SeqCst);
        let seen = SeenJob {
            container: Some(self.container),
            ..seen(job, false)
        };
        answer(&self.state, &self.limits, seen).await
    }

    /// Step 1 of a session in this container; the session runs the rest.
    async fn begin(
        mut self,
        job: &Job,
        options: StepOptions,
    ) -> Result<(Outcome, ScriptedSteps), SandboxError> {
        self.finished = true;
        self.state.sessions.fetch_add(1, Ordering::SeqCst);
        let mut steps = ScriptedSteps {
            state: self.state.clone(),
            limits: self.limits.clone(),
            container: self.container,
            inputs: job.inputs.iter().map(|f| f.name.clone()).collect(),
            done: 0,
            over: false,
            ended: false,
        };
        let outcome = steps.step(&job.code, options).await?;
        Ok((outcome, steps))
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

/// A session of steps in one scripted container: each step answers with
/// the next scripted outcome; a step that ends a session (timeout, memory,
/// kill, tampering, lost) leaves it over.
pub struct ScriptedSteps {
    state: Arc<State>,
    limits: Limits,
    container: usize,
    inputs: Vec<String>,
    done: u32,
    over: bool,
    ended: bool,
}

impl ScriptedSteps {
    async fn step(&mut self, code: &str, options: StepOptions) -> Result<Outcome, SandboxError> {
        assert!(!self.over, "a step was asked of a session that is over");
        self.done += 1;
        let seen = SeenJob {
            code: code.to_string(),
            inputs: self.inputs.clone(),
            one_off: false,
            container: Some(self.container),
            step: Some(self.done),
            options: Some(options),
        };
        let mut outcome = answer(&self.state, &self.limits, seen).await?;
        outcome.step = Some(self.done);
        if !options.last {
            outcome.artifacts.clear();
        }
        self.over = !matches!(
            outcome.status,
            RunStatus::Ok | RunStatus::Error | RunStatus::OutputLimit
        );
        Ok(outcome)
    }

    fn end(mut self) {
        self.ended = true;
        self.state.ended.fetch_add(1, Ordering::SeqCst);
    }
}

impl Drop for ScriptedSteps {
    fn drop(&mut self) {
        if !self.ended {
            self.state.steps_dropped.fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// Keeps the job `seen` and answers it with the next scripted outcome.
async fn answer(state: &State, limits: &Limits, seen: SeenJob) -> Result<Outcome, SandboxError> {
    let code = seen.code.clone();
    state.jobs.lock().unwrap().push(seen);
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
        artifacts: s
            .files
            .iter()
            .map(|name| Artifact {
                name: name.clone(),
                size: 3,
                sha256: sha256_hex(b"png"),
                bytes: b"png".to_vec(),
            })
            .collect(),
        code_sha256: sha256_hex(code.as_bytes()),
        container: "in-memory".into(),
        notes: Vec::new(),
        tampered: Vec::new(),
        sources: Default::default(),
        environment: None,
        seccomp: None,
        step: None,
        value: s.value,
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

    fn begin<'a>(
        self: Box<Self>,
        job: &'a Job,
        options: StepOptions,
    ) -> BoxFuture<'a, Result<(Outcome, Box<dyn Steps>), SandboxError>> {
        Box::pin(async move {
            let (outcome, steps) = ScriptedRun::begin(*self, job, options).await?;
            Ok((outcome, Box::new(steps) as Box<dyn Steps>))
        })
    }
}

impl Steps for ScriptedSteps {
    fn step<'a>(
        &'a mut self,
        code: &'a str,
        options: StepOptions,
    ) -> BoxFuture<'a, Result<Outcome, SandboxError>> {
        Box::pin(ScriptedSteps::step(self, code, options))
    }

    fn is_over(&self) -> bool {
        self.over
    }

    fn end<'a>(self: Box<Self>, _last: Option<&'a mut Outcome>) -> BoxFuture<'a, ()> {
        ScriptedSteps::end(*self);
        Box::pin(async {})
    }
}
