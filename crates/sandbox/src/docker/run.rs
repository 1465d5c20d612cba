//! One run in a prepared Docker container: write the job to its stdin, hand
//! its attach stream to the [`Collector`] as plain [`Chunk`]s, kill it at
//! the deadline, ask the engine why when the output ended without a report,
//! and start its removal.

use bollard::Docker as Bollard;
use bollard::container::{AttachContainerResults, LogOutput};
use bollard::query_parameters::KillContainerOptions;
use futures_util::StreamExt;
use futures_util::future::BoxFuture;
use tokio::io::AsyncWriteExt;

use super::super::collect::{Chunk, Collector, NoReport};
use super::super::executor::{Begun, PreparedRun, StepOptions, Steps, Then};
use super::super::protocol::{END, GO};
use super::super::sentry_log::{LogReader, SentryRecord, Upto};
use super::super::types::{
    CPU_PERIOD_US, CpuBoost, ImageInfo, Job, Limits, Outcome, SeccompProfile,
};
use super::super::{InputChanged, InputFile, SandboxError};
use super::{Guard, Removal, data_volume};

/// A started container whose runner waits for exactly one job.
pub struct Prepared {
    pub(super) name: String,
    pub(super) image: ImageInfo,
    pub(super) limits: Limits,
    pub(super) attach: AttachContainerResults,
    pub(super) guard: Guard,
    /// What the child imports before the code starts.
    pub(super) preload: Vec<String>,
    /// The modules load above the code's CPU limit, lowered before the
    /// code starts ([`super::engine::cpu_boost`]).
    pub(super) boost: Option<CpuBoost>,
    /// The system-call filter it was created with.
    pub(super) seccomp: SeccompProfile,
    /// Where gVisor's record of the code's calls comes from, if anywhere.
    pub(super) gvisor: GvisorLog,
}

/// gVisor's log of a run's system calls ([`crate::LogRuntime`]).
#[derive(Debug)]
pub(super) enum GvisorLog {
    /// Not gVisor on Docker, or no runtime with the log on.
    Off,
    /// One is offered, but its log cannot be read from here (why).
    Unusable(String),
    /// The container runs under it; its log is read after the run.
    Reading(crate::LogRuntime),
    /// ... and this is the container's log.
    Container(LogFile),
}

/// Where the Sentry's log of one container is: its directory, the
/// container's id and when it was created (see
/// [`crate::sentry_log::read`]). The container's guard removes it
/// with the container unless a run, or a session's end, read it to its end
/// first.
#[derive(Debug, Clone)]
pub(super) struct LogFile {
    pub(super) dir: std::path::PathBuf,
    pub(super) id: String,
    pub(super) began: std::time::SystemTime,
}

impl LogFile {
    /// Removes the log unread (no code ran, the run failed or was cut off).
    pub(super) async fn discard(self) {
        let _ = tokio::task::spawn_blocking(move || {
            crate::sentry_log::discard(&self.dir, &self.id, self.began)
        })
        .await;
    }
}

/// A watch on a running container's Sentry log, beside the collector:
/// every [`LOG_WATCH_EVERY`](crate::sentry_log::LOG_WATCH_EVERY)
/// it looks at the log's size, and past [`crate::LOG_CAP`] it
/// kills the container (the run ends `tampered`, saying why). Dropping it
/// ends the watch.
pub(super) struct LogWatch {
    task: tokio::task::JoinHandle<()>,
    /// The log's size when it was found past the cap.
    over: std::sync::Arc<std::sync::OnceLock<u64>>,
}

impl LogWatch {
    /// Starts watching `file`, the log of container `name`.
    fn start(file: &LogFile, docker: Bollard, name: String) -> LogWatch {
        use crate::sentry_log::{LOG_WATCH_EVERY, log_size};
        let over = std::sync::Arc::new(std::sync::OnceLock::new());
        let seen = over.clone();
        let file = file.clone();
        let task = tokio::spawn(async move {
            let mut path = None;
            loop {
                tokio::time::sleep(LOG_WATCH_EVERY).await;
                let (dir, id, began) = (file.dir.clone(), file.id.clone(), file.began);
                let looked = tokio::task::spawn_blocking(move || {
                    let size = log_size(&dir, &id, began, &mut path);
                    (size, path)
                })
                .await;
                let Ok((size, found)) = looked else { return };
                path = found;
                if let Some(size) = size.filter(|&s| s > crate::LOG_CAP) {
                    let _ = seen.set(size);
                    tracing::warn!(container = %name, bytes = size, "gVisor's log passed its cap; the run is stopped");
                    let _ = docker
                        .kill_container(
                            &name,
                            Some(KillContainerOptions {
                                signal: "SIGKILL".into(),
                            }),
                        )
                        .await;
                    return;
                }
            }
        });
        LogWatch { task, over }
    }

    /// The log's size when the watch found it past the cap, if it did.
    fn over(&self) -> Option<u64> {
        self.over.get().copied()
    }
}

impl Drop for LogWatch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl GvisorLog {
    /// A watch on the log's size while the code runs, when the container
    /// runs under gVisor's log.
    fn watch(&self, docker: &Bollard, name: &str) -> Option<LogWatch> {
        match self {
            GvisorLog::Container(file) => {
                Some(LogWatch::start(file, docker.clone(), name.to_string()))
            }
            _ => None,
        }
    }

    /// The directory of the log a container created under it writes.
    pub(super) fn dir(&self) -> Option<&std::path::Path> {
        match self {
            GvisorLog::Reading(log) => Some(&log.dir),
            _ => None,
        }
    }

    /// With the container that runs under it.
    pub(super) fn with_container(self, id: String, began: std::time::SystemTime) -> GvisorLog {
        match self {
            GvisorLog::Reading(log) => GvisorLog::Container(LogFile {
                dir: log.dir,
                id,
                began,
            }),
            other => other,
        }
    }

    /// Adds what the log holds (or why it could not) to the outcome of a
    /// single run that has ended, and removes the log: every call of the
    /// code's is in the log by then (the Sentry writes each as it returns,
    /// and the runner reports after the code's process is gone; a killed
    /// container's Sentry is gone). A session's steps read theirs as each
    /// ends ([`SessionRun`]).
    async fn add_to(self, outcome: &mut Outcome) {
        match self {
            GvisorLog::Off | GvisorLog::Reading(_) => {}
            GvisorLog::Unusable(why) => outcome.notes.push(why),
            GvisorLog::Container(file) => {
                let read = tokio::task::spawn_blocking(move || {
                    crate::sentry_log::read(&file.dir, &file.id, file.began)
                })
                .await
                .unwrap_or_else(|e| Err(format!("reading gVisor's log failed: {e}")));
                match read {
                    Ok(rec) => crate::sentry_log::attach(outcome, rec),
                    Err(e) => outcome.notes.push(format!(
                        "{e}: the files are as the code's interpreter reports them"
                    )),
                }
            }
        }
    }
}

/// A session's stretch of its Sentry's log, from where `reader` stopped to
/// `upto` (see [`crate::sentry_log::LogReader`]); the reader comes back
/// unless the read panicked.
async fn read_on(
    file: &LogFile,
    reader: Option<LogReader>,
    upto: Upto,
) -> (Option<LogReader>, Result<SentryRecord, String>) {
    let Some(mut reader) = reader else {
        return (
            None,
            Err("an earlier read of gVisor's log of the session failed".into()),
        );
    };
    let file = file.clone();
    tokio::task::spawn_blocking(move || {
        let rec = reader.next(&file.dir, &file.id, file.began, upto);
        (Some(reader), rec)
    })
    .await
    .unwrap_or_else(|e| (None, Err(format!("reading gVisor's log failed: {e}"))))
}

impl std::fmt::Debug for Prepared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prepared")
            .field("name", &self.name)
            .finish_non_exhaustive()
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

    /// Hands over the job, collects the outcome and removes the container
    /// before it returns: for a caller that may end its runtime right after
    /// (tests, benchmarks). The bot's path (a `Session`'s connection,
    /// through [`PreparedRun`]) is [`Prepared::execute_removing_after`].
    pub async fn execute(self, job: &Job) -> Result<Outcome, SandboxError> {
        let (result, guard) = self.collect(job).await;
        guard.remove_after_run().await;
        result
    }

    /// Hands over the job and collects the outcome; the container's removal
    /// starts as soon as the report is in and goes on while the caller
    /// validates and posts the outcome (the removal is not part of the
    /// answer). [`super::Docker::settled`] and [`super::Docker::close`]
    /// wait for it.
    pub async fn execute_removing_after(self, job: &Job) -> Result<Outcome, SandboxError> {
        let (result, guard) = self.collect(job).await;
        guard.remove_in_background();
        result
    }

    /// The run itself, and the guard that still owns the container.
    async fn collect(self, job: &Job) -> (Result<Outcome, SandboxError>, Guard) {
        let (first, rest) = self.first(job, None).await;
        let Rest {
            mut guard,
            gvisor,
            watch,
            ..
        } = rest;
        let mut result = first.map(|(outcome, _)| outcome);
        drop(watch);
        // A run with an outcome reads its log (and removes it); any other
        // end leaves the log to the guard, which removes it with the
        // container.
        if let Ok(o) = &mut result {
            guard.log = None;
            gvisor.add_to(o).await;
        }
        (result, guard)
    }

    /// The job's run, or (`session`) step 1 of a session, in the prepared
    /// container, with its system-call filter on the outcome; and what is
    /// left of the container for its removal, its log or the next steps.
    /// The one place a prepared run is taken apart.
    async fn first(
        self,
        job: &Job,
        session: Option<StepOptions>,
    ) -> (Result<(Outcome, Live), SandboxError>, Rest) {
        let Prepared {
            name,
            image,
            limits,
            attach,
            guard,
            preload,
            boost,
            seccomp,
            gvisor,
        } = self;
        let docker = guard.sandbox.docker.clone();
        let watch = gvisor.watch(&docker, &name);
        let run = Run {
            docker: &docker,
            name: &name,
            limits: &limits,
            preload: &preload,
            boost,
            watch: watch.as_ref(),
        };
        let first = run.first(image.clone(), attach, job, session).await;
        let first = first.map(|(mut outcome, live)| {
            outcome.seccomp = Some(seccomp);
            (outcome, live)
        });
        let rest = Rest {
            docker,
            name,
            image,
            guard,
            seccomp,
            gvisor,
            watch,
        };
        (first, rest)
    }
}

/// What is left of a [`Prepared`] container once its first run is over
/// ([`Prepared::first`]): the guard that owns it, gVisor's log and its
/// watch, and what a session's next steps need.
struct Rest {
    docker: Bollard,
    name: String,
    image: ImageInfo,
    guard: Guard,
    seccomp: SeccompProfile,
    gvisor: GvisorLog,
    watch: Option<LogWatch>,
}

impl PreparedRun for Prepared {
    fn execute<'a>(self: Box<Self>, job: &'a Job) -> BoxFuture<'a, Result<Outcome, SandboxError>> {
        match self.guard.sandbox.removal {
            Removal::BesideTheAnswer => Box::pin(Prepared::execute_removing_after(*self, job)),
            Removal::BeforeTheOutcome => Box::pin(Prepared::execute(*self, job)),
        }
    }

    fn discard(self: Box<Self>) -> BoxFuture<'static, Result<(), SandboxError>> {
        Box::pin(Prepared::discard(*self))
    }

    fn begin<'a>(
        self: Box<Self>,
        job: &'a Job,
        options: StepOptions,
    ) -> BoxFuture<'a, Result<Begun, SandboxError>> {
        Box::pin(async move {
            let (outcome, session) = Prepared::begin(*self, job, options).await?;
            Ok((outcome, Box::new(session) as Box<dyn Steps>))
        })
    }
}

impl Prepared {
    /// Starts a session: the job's code runs as step 1 in an interpreter
    /// that stays ([`Steps`]); the container is frozen until the next step.
    pub async fn begin(
        self,
        job: &Job,
        options: StepOptions,
    ) -> Result<(Outcome, SessionRun), SandboxError> {
        let (first, rest) = self.first(job, Some(options)).await;
        let Rest {
            docker,
            name,
            image,
            guard,
            seccomp,
            gvisor,
            watch,
        } = rest;
        let (mut outcome, live) = match first {
            Ok(first) => first,
            Err(e) => {
                drop(watch);
                finally_remove(guard).await;
                return Err(e);
            }
        };
        let mut session = SessionRun {
            docker,
            name,
            image,
            seccomp,
            live,
            guard,
            gvisor,
            reader: Some(LogReader::default()),
            watch,
            over: false,
            freezing: None,
            unfrozen: None,
            number: 1,
        };
        session.read_step(&mut outcome).await;
        session.after_step(&outcome, options.then).await;
        Ok((outcome, session))
    }
}

/// Removes a run's container as its connection removes them: before
/// returning (tests) or beside the answer.
async fn finally_remove(guard: Guard) {
    match guard.sandbox.removal {
        Removal::BesideTheAnswer => guard.remove_in_background(),
        Removal::BeforeTheOutcome => guard.remove_after_run().await,
    }
}

/// A session of steps in one Docker container ([`Steps`]): its runner
/// keeps the child interpreter between steps, and the container is paused
/// (its cgroup frozen) while the bot waits for the model. Dropped, its
/// guard removes the container. Under gVisor's log each step's outcome
/// gets the log's lines since the step before's report
/// ([`SessionRun::read_step`]).
pub struct SessionRun {
    docker: Bollard,
    name: String,
    image: ImageInfo,
    seccomp: SeccompProfile,
    live: Live,
    guard: Guard,
    gvisor: GvisorLog,
    /// Where the last step's stretch of the Sentry's log ended (`None`
    /// once a read failed past recovery).
    reader: Option<LogReader>,
    watch: Option<LogWatch>,
    /// No further step can run.
    over: bool,
    /// The pause this session asked for after its last step: under way
    /// while the model thinks, awaited (and undone) before the next step.
    freezing: Option<tokio::task::JoinHandle<Result<(), String>>>,
    /// Why the container could not be frozen after the last step, for the
    /// next step's outcome.
    unfrozen: Option<String>,
    /// The number of the last step handed over.
    number: u32,
}

impl std::fmt::Debug for SessionRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionRun")
            .field("name", &self.name)
            .field("over", &self.over)
            .finish_non_exhaustive()
    }
}

impl SessionRun {
    /// A step's own stretch of gVisor's log, into its outcome: read up to
    /// the log's size now, with the step's report in and the container not
    /// yet frozen (see [`crate::sentry_log`]'s docs on steps). Before
    /// [`SessionRun::after_step`], so a step the record makes `tampered`
    /// ends the session.
    async fn read_step(&mut self, outcome: &mut Outcome) {
        match &self.gvisor {
            GvisorLog::Off | GvisorLog::Reading(_) => {}
            GvisorLog::Unusable(why) => outcome.notes.push(why.clone()),
            GvisorLog::Container(file) => {
                let (reader, read) = read_on(file, self.reader.take(), Upto::Now).await;
                self.reader = reader;
                match read {
                    Ok(rec) => crate::sentry_log::attach(outcome, rec),
                    Err(e) => outcome.notes.push(format!(
                        "{e}: this step's files are as the code's interpreter reports them"
                    )),
                }
            }
        }
    }

    /// After a step: the session is over when its interpreter does not
    /// wait for another; else, when a wait follows (`then`), the container
    /// is frozen until the next.
    async fn after_step(&mut self, outcome: &Outcome, then: Then) {
        if !self.live.collector.waits_for_a_step(outcome) || self.live.stdin.is_none() {
            self.over = true;
            return;
        }
        if then == Then::Next {
            return;
        }
        // The pause goes on while the outcome returns (and the model
        // thinks): a step waits for it only when it comes first.
        let (docker, name) = (self.docker.clone(), self.name.clone());
        self.freezing = Some(tokio::spawn(async move {
            docker
                .pause_container(&name)
                .await
                .map_err(|e| e.to_string())
        }));
    }

    /// Thaws the container when this session froze it; a pause that
    /// failed is kept for the next step's outcome.
    async fn thaw(&mut self) -> Result<(), SandboxError> {
        let Some(freezing) = self.freezing.take() else {
            return Ok(());
        };
        match freezing.await {
            Ok(Ok(())) => self
                .docker
                .unpause_container(&self.name)
                .await
                .map_err(|e| SandboxError::Engine {
                    action: "thawing the session's container for its next step",
                    detail: e.to_string(),
                }),
            Ok(Err(e)) => {
                self.unfrozen = Some(format!(
                    "the container could not be frozen after the last step ({e}): what the code \
                     left running could run while the model wrote this step"
                ));
                Ok(())
            }
            Err(_) => Ok(()),
        }
    }

    /// The next step (see [`Steps::step`]).
    pub async fn step(
        &mut self,
        code: &str,
        options: StepOptions,
    ) -> Result<Outcome, SandboxError> {
        if self.over {
            return Err(SandboxError::Engine {
                action: "running a session's next step",
                detail:
                    "the session is over: its last step ended it (that step's outcome says how)"
                        .into(),
            });
        }
        if let Err(e) = self.thaw().await {
            self.over = true;
            return Err(e);
        }
        self.live.collector.next_step(options.timeout);
        self.number += 1;
        let line = self.live.collector.step_line(self.number, code, options);
        let wrote = match self.live.stdin.as_mut() {
            Some(stdin) => stdin.write_all(&line).await.is_ok() && stdin.flush().await.is_ok(),
            None => false,
        };
        if !wrote {
            // The runner is gone: its output says how.
            self.live.stdin = None;
        }
        let run = Run {
            docker: &self.docker,
            name: &self.name,
            limits: &self.live.collector.limits().clone(),
            preload: &[],
            boost: None,
            watch: self.watch.as_ref(),
        };
        let ending = self.live.collector.read(&mut self.live.output).await;
        let mut outcome = run
            .conclude(&mut self.live.collector, ending, self.image.clone(), code)
            .await;
        outcome.seccomp = Some(self.seccomp);
        outcome.notes.extend(self.unfrozen.take());
        self.read_step(&mut outcome).await;
        self.after_step(&outcome, options.then).await;
        Ok(outcome)
    }

    /// Ends the session (see [`Steps::end`]).
    pub async fn end(mut self, last: Option<&mut Outcome>) {
        let _ = self.thaw().await;
        let SessionRun {
            docker,
            name,
            image,
            mut live,
            mut guard,
            gvisor,
            reader,
            watch,
            ..
        } = self;
        drop(watch);
        let ended = match live.stdin.as_mut() {
            Some(stdin) => stdin.write_all(END).await.is_ok() && stdin.flush().await.is_ok(),
            None => false,
        };
        let Some(last) = last else {
            finally_remove(guard).await;
            return;
        };
        let mut after = After::default();
        if ended {
            after = account_for_the_end(&mut live, &name, image, last).await;
        }
        if let GvisorLog::Container(file) = &gvisor {
            // The rest of the Sentry's log, after the last step's report,
            // is whole once the container stops.
            let _ = docker
                .kill_container(
                    &name,
                    Some(KillContainerOptions {
                        signal: "SIGKILL".into(),
                    }),
                )
                .await;
            let _ = docker
                .wait_container(
                    &name,
                    None::<bollard::query_parameters::WaitContainerOptions>,
                )
                .next()
                .await;
            match read_on(file, reader, Upto::End).await {
                (Some(reader), Ok(tail)) => {
                    after.calls += tail.files.len() + tail.changes.len() + tail.sockets.len();
                    reader.remove();
                    guard.log = None;
                }
                (_, Err(e)) => last.notes.push(format!(
                    "{e}: what the code's process did after this step ended is not known"
                )),
                (None, Ok(_)) => {}
            }
        }
        after.note(last);
        finally_remove(guard).await;
    }
}

/// What the code's process did after the last step's report, until the
/// session's end.
#[derive(Debug, Default)]
struct After {
    /// Calls in the kernel's record (the runner's under runc, the
    /// Sentry's log under gVisor).
    calls: usize,
    /// Bytes of output.
    printed: usize,
}

impl After {
    /// The last step's note of it, when there was any.
    fn note(&self, last: &mut Outcome) {
        let After { calls, printed } = self;
        if *calls > 0 || *printed > 0 {
            last.notes.push(format!(
                "after this step ended, the code's process went on until the session's end: {calls} \
                 calls in the kernel's record, {printed} bytes of output (not part of the result)"
            ));
        }
    }
}

/// How long the runner may take to report a session's end.
const END_REPORT: std::time::Duration = std::time::Duration::from_secs(5);

/// The runner's last report of a session, after its end: what happened
/// after the last step's own report reaches that step's outcome. Tampering
/// (a step's end the code wrote itself, so a later one arrived when no step
/// ran) makes it `tampered`; what the code's process still did (output,
/// the kernel's record of opens, changes, sockets) is returned, for a note.
async fn account_for_the_end(
    live: &mut Live,
    name: &str,
    image: ImageInfo,
    last: &mut Outcome,
) -> After {
    live.collector.next_step(END_REPORT);
    let ending = live.collector.read(&mut live.output).await;
    if !live.collector.has_report() {
        last.notes.push(format!(
            "the runner did not report the session's end within {} s; what the code did after this step is not known",
            END_REPORT.as_secs()
        ));
        return After::default();
    }
    let tail = live.collector.outcome(&ending, None, image, "", name);
    if !tail.tampered.is_empty() {
        last.tampered.extend(tail.tampered);
        last.status = crate::RunStatus::Tampered;
    }
    After {
        calls: tail.audit.kernel.as_ref().map_or(0, |k| {
            k.files.len() + k.changes.len() + k.sockets.len() + k.starts.len()
        }),
        printed: tail.stdout.len() + tail.stderr.len(),
    }
}

impl Steps for SessionRun {
    fn step<'a>(
        &'a mut self,
        code: &'a str,
        options: StepOptions,
    ) -> BoxFuture<'a, Result<Outcome, SandboxError>> {
        Box::pin(SessionRun::step(self, code, options))
    }

    fn is_over(&self) -> bool {
        self.over
    }

    fn end<'a>(self: Box<Self>, last: Option<&'a mut Outcome>) -> BoxFuture<'a, ()> {
        Box::pin(SessionRun::end(*self, last))
    }
}

/// The attach stream's items as plain chunks.
fn chunk(item: Result<LogOutput, bollard::errors::Error>) -> Result<Chunk, String> {
    match item {
        Ok(LogOutput::StdOut { message }) => Ok(Chunk::Stdout(message.into())),
        Ok(LogOutput::StdErr { message }) => Ok(Chunk::Stderr(message.into())),
        Ok(_) => Ok(Chunk::Other),
        Err(e) => Err(e.to_string()),
    }
}

/// One run's fixed facts, for the steps of [`Run::first`].
struct Run<'a> {
    docker: &'a Bollard,
    name: &'a str,
    limits: &'a Limits,
    preload: &'a [String],
    boost: Option<CpuBoost>,
    /// The watch on gVisor's log, under it.
    watch: Option<&'a LogWatch>,
}

/// The container's stdin, as the attach stream gives it.
type Stdin = std::pin::Pin<Box<dyn tokio::io::AsyncWrite + Send>>;

/// What a session keeps between its steps: the collector (one frame
/// sequence spans the session), the runner's output and its stdin.
struct Live {
    collector: Collector,
    output: futures_util::stream::BoxStream<'static, Result<Chunk, String>>,
    /// `None` once the runner is gone (a write failed).
    stdin: Option<Stdin>,
}

impl Run<'_> {
    /// The job's run, or (`session`) step 1 of a session, with what the
    /// session keeps for its next steps.
    async fn first(
        &self,
        image: ImageInfo,
        attach: AttachContainerResults,
        job: &Job,
        session: Option<StepOptions>,
    ) -> Result<(Outcome, Live), SandboxError> {
        let (docker, name, limits, preload) = (self.docker, self.name, self.limits, self.preload);
        let hold = self.boost.is_some();
        let (mut collector, start, streamed) = if limits.data_on_disk() && !job.inputs.is_empty() {
            // The engine copies the inputs into the /data volume; the runner
            // gets the code only.
            job.check(limits)?;
            data_volume::upload(docker, name, &job.inputs).await?;
            let code_only = Job {
                inputs: Vec::new(),
                ..job.clone()
            };
            let (collector, start) = Collector::new(&code_only, limits, preload, hold, session)?;
            (collector, start, Vec::new())
        } else {
            let (collector, start) = Collector::new(job, limits, preload, hold, session)?;
            (collector, start, job.inputs.clone())
        };
        let mut ready = hold.then(|| collector.ready_signal());
        let AttachContainerResults { output, input } = attach;
        let mut writer = tokio::spawn(write_job(input, start, streamed));
        let mut output = output.map(chunk).boxed();
        let keep = hold || session.is_some();
        let mut stdin: Option<Option<Stdin>> = None;
        let ending = {
            let read = collector.read(&mut output);
            tokio::pin!(read);
            loop {
                tokio::select! {
                    ending = &mut read => break ending,
                    // Kept for a held run's GO and a session's steps only.
                    w = &mut writer, if stdin.is_none() => stdin = Some(written(w)?.filter(|_| keep)),
                    r = async { ready.as_mut().expect("held").await }, if ready.is_some() => {
                        ready = None;
                        if r.is_ok() {
                            if stdin.is_none() {
                                stdin = Some(written((&mut writer).await)?);
                            }
                            self.release(stdin.as_mut().and_then(Option::as_mut)).await?;
                            if session.is_none() {
                                stdin = Some(None);
                            }
                        }
                    }
                }
            }
        };
        if stdin.is_none() && session.is_some() {
            // The step ended before the writer was polled again: it is
            // done (the runner reads every input before the code starts).
            stdin = Some(
                match tokio::time::timeout(std::time::Duration::from_secs(5), &mut writer).await {
                    Ok(w) => written(w)?,
                    Err(_) => None,
                },
            );
        }
        if stdin.is_none() {
            writer.abort();
        }
        let outcome = self
            .conclude(&mut collector, ending, image, &job.code)
            .await;
        let live = Live {
            collector,
            output,
            stdin: stdin.flatten(),
        };
        Ok((outcome, live))
    }

    /// The outcome once a run's (or a step's) output ended: kill the
    /// container at the deadline, ask the engine why when no report came,
    /// and end the run `tampered` when gVisor's log passed its cap.
    async fn conclude(
        &self,
        collector: &mut Collector,
        ending: crate::collect::Ending,
        image: ImageInfo,
        code: &str,
    ) -> Outcome {
        let (docker, name) = (self.docker, self.name);
        let mut no_report = None;
        let log_over = self.watch.and_then(LogWatch::over);
        if ending.timed_out {
            kill_at_deadline(docker, name, collector.notes()).await;
        } else if !collector.has_report() && !collector.report_unreadable() && log_over.is_none() {
            no_report = Some(explain_missing_report(docker, name).await);
        }
        let mut outcome = collector.outcome(&ending, no_report, image, code, name);
        if let Some(size) = log_over {
            outcome.tampered.push(crate::sentry_log::over_cap(size));
            outcome.status = crate::RunStatus::Tampered;
        }
        tracing::debug!(container = %name, status = outcome.status.as_str(), ms = outcome.duration_ms, step = ?outcome.step, "run finished");
        outcome
    }

    /// A held run's modules are loaded: lower the container's CPU quota to
    /// the code's by a live update, then let the code start. When the engine
    /// refuses the update the code never starts (the caller removes the
    /// container); a lost stdin means the runner is gone, which its output
    /// shows.
    async fn release(&self, stdin: Option<&mut Stdin>) -> Result<(), SandboxError> {
        let boost = self.boost.expect("a held run has a boost");
        self.docker
            .update_container(
                self.name,
                bollard::models::ContainerUpdateBody {
                    cpu_period: Some(CPU_PERIOD_US),
                    cpu_quota: Some(boost.code),
                    ..Default::default()
                },
            )
            .await
            .map_err(|e| SandboxError::Engine {
                action: "lowering the CPU quota before the code starts",
                detail: format!(
                    "{e}; the code was not started. Set `sandbox.preload_cpus` to the value of \
                     `cpus` in the policy to keep one quota from the container's start"
                ),
            })?;
        tracing::debug!(container = %self.name, quota = boost.code, "CPU quota lowered; the code may start");
        if let Some(stdin) = stdin
            && stdin.write_all(GO).await.is_ok()
        {
            let _ = stdin.flush().await;
        }
        Ok(())
    }
}

/// The writer's end: the stdin back (`None`: the runner is gone), or the
/// input that changed since admission, which ends the run at once (the
/// code has not started on it; the caller removes the container).
fn written(
    w: Result<Result<Option<Stdin>, InputChanged>, tokio::task::JoinError>,
) -> Result<Option<Stdin>, SandboxError> {
    match w {
        Ok(Ok(stdin)) => Ok(stdin),
        Ok(Err(changed)) => Err(SandboxError::BadInput {
            name: changed.name,
            problem: changed.problem,
        }),
        Err(_) => Ok(None),
    }
}

/// Writes the job to the runner's stdin: its start (header and code), then
/// each input streamed from its [`InputFile::chunks`], so a big input is
/// never held whole. An input that changed since admission ends the write
/// before its last chunk (so the code never starts on it) and is returned,
/// which ends the run at once; a write error means the runner is gone,
/// which the output stream shows. The stdin comes back for a held run's
/// [`GO`].
async fn write_job(
    mut stdin: Stdin,
    start: Vec<u8>,
    inputs: Vec<InputFile>,
) -> Result<Option<Stdin>, InputChanged> {
    if stdin.write_all(&start).await.is_err() {
        return Ok(None);
    }
    for f in &inputs {
        let mut chunks = std::pin::pin!(f.chunks());
        while let Some(c) = chunks.next().await {
            if stdin.write_all(&c?).await.is_err() {
                return Ok(None);
            }
        }
    }
    Ok(stdin.flush().await.ok().map(|_| stdin))
}

/// After the deadline: kill the container (unpausing it first when someone
/// paused it from outside, which would otherwise keep the kill from landing).
async fn kill_at_deadline(docker: &Bollard, name: &str, notes: &mut Vec<String>) {
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

/// The runner's output ended without a report: ask the engine why. The
/// container still running (the stream, not the runner, ended) or an engine
/// that does not answer is a lost connection; so is a runner that finished
/// normally (it reports before it does) whose report never arrived. The
/// memory limit, a kill or removal from outside compute-bot, and a runner
/// that ended on its own (any other exit: the code's run ended it) are
/// named as such; [`Collector::outcome`](crate::collect::Collector::outcome) decides what each makes of the run.
async fn explain_missing_report(docker: &Bollard, name: &str) -> NoReport {
    for _ in 0..20 {
        match docker.inspect_container(name, None).await {
            Ok(info) => {
                let state = info.state.unwrap_or_default();
                if state.running == Some(true) {
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
                let code = state.exit_code.unwrap_or(-1);
                return if state.oom_killed.unwrap_or(false) {
                    NoReport::Oom(format!(
                        "the container hit its memory limit and the runner ended without a report \
                         (container exit code {code})"
                    ))
                } else if code == 0 {
                    NoReport::Lost(
                        "the connection to the Docker engine was lost while the code ran: the \
                         runner finished (exit code 0) but its report never arrived"
                            .into(),
                    )
                } else if code == 137 {
                    // SIGKILL: pid 1 cannot get it from inside its own
                    // namespace, so it came from outside.
                    NoReport::Outside(format!(
                        "the runner ended without a report (container exit code {code}): the container was killed or removed from outside compute-bot (SIGKILL from `docker kill`, a forced removal or another process; not by the deadline or the memory limit)"
                    ))
                } else {
                    NoReport::RunnerEnded(format!(
                        "the runner (pid 1, the code's supervisor) ended without its report \
                         (container exit code {code}{}): it always reports before it exits, so \
                         the code's run ended it or its record",
                        signal_name(code)
                    ))
                };
            }
            Err(bollard::errors::Error::DockerResponseServerError {
                status_code: 404, ..
            }) => {
                return NoReport::Outside(
                    "the container was removed from outside compute-bot while the code ran \
                     (by another process, bot or operator); no report came back"
                        .into(),
                );
            }
            Err(e) => {
                return NoReport::Lost(format!(
                    "the connection to the Docker engine was lost while the code ran ({e}); no report came back"
                ));
            }
        }
    }
    NoReport::Lost(
        "the connection to the Docker engine was lost while the code ran: the output stream \
         closed with the container still running; the run was stopped"
            .into(),
    )
}

/// `, signal N` for an exit code that says a signal ended the process
/// (128 + N), else nothing.
fn signal_name(code: i64) -> String {
    match code {
        129..=192 => format!(", signal {}", code - 128),
        _ => String::new(),
    }
}
