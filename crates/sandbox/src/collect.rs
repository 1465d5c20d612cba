//! Output collection, the same for every backend: the job goes in as bytes
//! for the runner's stdin, the container's output comes back as plain
//! [`Chunk`]s, and a [`Collector`] turns the runner's frames into an
//! [`Outcome`] under the byte caps and the deadline. No engine is known
//! here; a backend only maps its stream onto [`Chunk`]s and, when the
//! output ends without a report, says what the engine found ([`NoReport`]);
//! what each finding makes of the run is decided here.

use std::time::{Duration, Instant};

use futures_util::{Stream, StreamExt};

use super::protocol::{self, CappedBuffer, Frame, FrameKey, FrameReader, RunnerReport};
use super::types::{Artifact, Audit, ImageInfo, Job, Limits, Outcome, Resources, RunStatus};
use super::{CpuQuota, SandboxError, sha256_hex};

/// One item of a container's output, as any backend delivers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Chunk {
    /// Bytes the runner wrote to stdout (the frames).
    Stdout(Vec<u8>),
    /// Bytes the runner itself wrote to stderr (kept for a note).
    Stderr(Vec<u8>),
    /// Anything else the stream carries (ignored).
    Other,
}

/// How the output ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Ending {
    /// The deadline passed first: the backend must kill the run.
    pub(crate) timed_out: bool,
    /// From handing over the job to the end of the output.
    pub(crate) duration: Duration,
    /// From the code's start (the runner's start frame) to the end of the
    /// output; `None` when the code never started.
    pub(crate) code_ran: Option<Duration>,
}

/// What the engine found when the runner's output ended without its report
/// (and before the deadline), each with the note that says so. The status
/// each makes is decided in [`Collector::outcome`]: only the engine's own
/// failure is `Lost`, and a runner that ended on its own without its report
/// is `Tampered` (the runner always reports, so the code's run ended it or
/// its record), unless the output stream had failed first (then `Lost`:
/// the code cannot make the engine's stream fail).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum NoReport {
    /// The engine or the stream failed: the container still ran when the
    /// output ended, the engine did not answer, or the runner finished
    /// normally (it reports before it does) and the report never arrived.
    Lost(String),
    /// The container hit its memory limit.
    Oom(String),
    /// The container was killed or removed from outside compute-bot.
    Outside(String),
    /// The runner (pid 1) ended on its own without its report.
    RunnerEnded(String),
}

impl NoReport {
    /// The run's status, and whether the note is a finding of tampering.
    fn status(&self) -> (RunStatus, bool) {
        match self {
            NoReport::Lost(_) => (RunStatus::Lost, false),
            NoReport::Oom(_) => (RunStatus::Oom, false),
            NoReport::Outside(_) => (RunStatus::Killed, false),
            NoReport::RunnerEnded(_) => (RunStatus::Tampered, true),
        }
    }

    /// The note that says what was found.
    fn into_note(self) -> String {
        match self {
            NoReport::Lost(n)
            | NoReport::Oom(n)
            | NoReport::Outside(n)
            | NoReport::RunnerEnded(n) => n,
        }
    }
}

/// What a preloading child may take beyond the run's time limit before the
/// code starts. The code's own limit counts from its start, whole.
const PRELOAD_GRACE: Duration = Duration::from_secs(30);

/// When the run is over: before the code starts, `timeout` (plus
/// [`PRELOAD_GRACE`] when a preload runs) after the handover; from the
/// code's start on, its whole `timeout` after that start, however long the
/// preload took (within its grace).
fn deadline(
    handover: Instant,
    code_started: Option<Instant>,
    timeout: Duration,
    preloading: bool,
) -> Instant {
    match code_started {
        Some(s) => s + timeout,
        None if preloading => handover + timeout + PRELOAD_GRACE,
        None => handover + timeout,
    }
}

/// Reads one run's frames into an [`Outcome`].
pub(crate) struct Collector {
    reader: FrameReader,
    limits: Limits,
    /// What the child imports before the code starts.
    preload: Vec<String>,
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
    /// The output stream ended with an error (the engine's connection).
    stream_failed: bool,
    /// What the collector itself found tampered with.
    tampered: Vec<String>,
    /// A held run: told once when its modules are loaded ([`Frame::Ready`]).
    ready: Option<tokio::sync::oneshot::Sender<()>>,
    /// The run was held (the runner sends one [`Frame::Ready`]).
    hold: bool,
    /// A session's step: its own deadline in place of the limits'.
    step_timeout: Option<Duration>,
    /// The report in hand is a step's ([`Frame::StepReport`]): the
    /// interpreter waits for the next step.
    step_report: bool,
}

impl Collector {
    /// Checks the job ([`Job::check`]), picks the run's frame key and returns
    /// the collector with the bytes the runner's stdin starts with (header
    /// and code; the backend streams the inputs after them).
    /// `preload`: what the child imports first, so the deadline allows for
    /// that wait until the code starts (and a preload that overruns is
    /// named as such). `hold`: the code waits, once its modules are loaded,
    /// for the backend's [`protocol::GO`] ([`Collector::ready_signal`]).
    /// `session`: the job's code is step 1 of a session with these options
    /// (see [`Collector::next_step`]).
    pub(crate) fn new(
        job: &Job,
        limits: &Limits,
        preload: &[String],
        hold: bool,
        session: Option<super::StepOptions>,
    ) -> Result<(Collector, Vec<u8>), SandboxError> {
        job.check(limits)?;
        let key = FrameKey::random();
        let stdin = protocol::encode_job(&key, job, limits, hold, session);
        let collector = Collector {
            reader: FrameReader::new(&key),
            limits: limits.clone(),
            preload: preload.to_vec(),
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
            stream_failed: false,
            tampered: Vec::new(),
            ready: None,
            hold,
            step_timeout: session.map(|o| o.timeout),
            step_report: false,
        };
        Ok((collector, stdin))
    }

    /// Resolves when a held run's modules are loaded and its code waits for
    /// the backend's [`protocol::GO`] (never for a run that is not held).
    pub(crate) fn ready_signal(&mut self) -> tokio::sync::oneshot::Receiver<()> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.ready = Some(tx);
        rx
    }

    /// Reads `output` until the report arrives, the stream ends (an error
    /// is kept as a note) or the deadline passes.
    pub(crate) async fn read(
        &mut self,
        output: &mut (impl Stream<Item = Result<Chunk, String>> + Unpin),
    ) -> Ending {
        let started = Instant::now();
        let timeout = self.step_timeout.unwrap_or(self.limits.timeout);
        let preloading = !self.preload.is_empty();
        let mut timed_out = false;
        let mut error = None;
        while self.report.is_none() {
            let deadline = tokio::time::Instant::from_std(deadline(
                started,
                self.started,
                timeout,
                preloading,
            ));
            let item = tokio::select! {
                biased;
                _ = tokio::time::sleep_until(deadline) => { timed_out = true; break; }
                item = output.next() => item,
            };
            match item {
                Some(Ok(Chunk::Stdout(bytes))) => {
                    for frame in self.reader.push(&bytes) {
                        self.take_frame(frame);
                    }
                }
                Some(Ok(Chunk::Stderr(bytes))) => self.runner_stderr.push(&bytes),
                Some(Ok(Chunk::Other)) => {}
                Some(Err(e)) => {
                    error = Some(e);
                    self.stream_failed = true;
                    break;
                }
                None => break,
            }
        }
        let duration = started.elapsed();
        if let Some(e) = &error {
            self.notes
                .push(format!("the output stream ended with an error: {e}"));
        }
        Ending {
            timed_out,
            duration,
            code_ran: self.started.map(|s| s.elapsed()),
        }
    }

    /// True once the runner's report arrived.
    pub(crate) fn has_report(&self) -> bool {
        self.report.is_some()
    }

    /// True when a report came but could not be read (so it was not lost).
    pub(crate) fn report_unreadable(&self) -> bool {
        self.unreadable_report
    }

    /// Where a backend adds what it found out (a kill, why the output ended).
    pub(crate) fn notes(&mut self) -> &mut Vec<String> {
        &mut self.notes
    }

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

    fn take_frame(&mut self, frame: Frame) {
        match frame {
            Frame::Stdout(b) => self.stdout.push(&b),
            Frame::Stderr(b) => self.stderr.push(&b),
            Frame::Artifact(h) => {
                self.finish_artifact();
                self.current = Some((h.name, Vec::new()));
            }
            Frame::ArtifactChunk(b) => {
                self.artifact_bytes += b.len() as u64;
                if self.artifact_bytes > self.limits.artifacts_max_bytes.bytes() {
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
                self.step_report = false;
            }
            Frame::StepReport(r) => {
                self.finish_artifact();
                self.report = Some(*r);
                self.step_report = true;
            }
            Frame::Ready => match self.ready.take() {
                Some(tx) if self.hold && self.started.is_none() => {
                    let _ = tx.send(());
                }
                _ if !self.hold => self
                    .tampered
                    .push("a run that was not held reported its modules loaded".into()),
                _ => self.tampered.push(
                    "the runner reported the modules loaded twice, or after the code started"
                        .into(),
                ),
            },
            Frame::Started if self.started.is_some() => self
                .tampered
                .push("the code's start was reported twice".into()),
            Frame::Started => self.started = Some(Instant::now()),
            Frame::ReportPiece => {}
            Frame::Unreadable { kind, problem } => {
                self.unreadable_report |= kind == 'r';
                let what = if kind == 'r' {
                    "the runner's report".to_string()
                } else {
                    format!("a frame of the runner's output (kind `{kind}`)")
                };
                self.tampered.push(format!(
                    "{what} could not be read ({problem}): the runner writes only frames that \
                     read back, so what the code controls steered its output"
                ));
            }
        }
    }

    /// The code's run time: the runner's figure, unless the bot saw the
    /// code run for less (from its start frame to the end of the output):
    /// then the bot's stands, and a note says so.
    fn checked_duration(&mut self, reported_ms: u64, ending: &Ending) -> u64 {
        match ending.code_ran.map(|d| d.as_millis() as u64) {
            Some(seen) if reported_ms > seen + 500 => {
                self.notes.push(format!(
                    "the runner reported {reported_ms} ms of run time, but the bot saw the code run for {seen} ms (from its start to the end of the output): the bot's figure is shown"
                ));
                seen
            }
            _ => reported_ms,
        }
    }

    /// A note when the code started under more CPU than the policy allows
    /// (the cgroup's quota as the runner read it before the code started).
    fn check_cpu_quota(&mut self, at_start: Option<CpuQuota>) {
        let Some(q) = at_start else { return };
        let allowed = self.limits.cpus;
        if q.cores().is_none_or(|c| c > allowed + 0.005) {
            self.notes.push(format!(
                "the code started under {} (the container's cgroup), above the policy's {allowed} CPU",
                q.words()
            ));
        }
    }

    /// Status, exit code, signal, resources, audit and duration from the runner's report.
    fn read_report(&mut self, r: &RunnerReport) -> (RunStatus, Resources) {
        for a in &r.artifacts {
            match self.artifacts.iter().find(|x| x.name == a.name) {
                Some(x) if x.sha256 == a.sha256 && x.size == a.size => {}
                Some(_) => self.notes.push(format!(
                    "artifact {} arrived damaged (checksum mismatch)",
                    a.name
                )),
                None => {}
            }
        }
        self.notes.extend(r.notes.iter().cloned());
        // Waiting for modules the code imports anyway is its own import
        // time, loaded ahead; only a wait for modules it does not use is
        // time lost to the preload.
        let unused = super::preload::unused(&r.audit.preloaded, &r.audit.imports);
        if r.start_wait_ms >= 100 && !unused.is_empty() {
            self.notes.push(format!(
                "the code waited {} ms for the sandbox's preloaded modules to finish loading ({} of them it does not import: {})",
                r.start_wait_ms,
                unused.len(),
                unused.join(", ")
            ));
        }
        self.check_cpu_quota(r.cgroup.cpu_at_code_start);
        let oom = r.oom_kills.unwrap_or(0) > 0 && r.signal == Some(9);
        let stdout_over = r.stdout_bytes > self.limits.stdout_cap.bytes();
        let stderr_over = r.stderr_bytes > self.limits.stderr_cap.bytes();
        self.stdout.truncated |= stdout_over;
        self.stderr.truncated |= stderr_over;
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
            container: r.cgroup.clone(),
        };
        (status, resources)
    }

    /// The status of a run whose output ended before the deadline without
    /// a readable report, from the backend's finding; its note goes to the
    /// notes, or to the tampering found.
    fn without_report(&mut self, no_report: Option<NoReport>) -> RunStatus {
        if self.unreadable_report {
            return RunStatus::Tampered;
        }
        let finding = match no_report {
            // The stream the engine delivers failed first: the engine's
            // connection, not the runner, is what ended the output.
            Some(NoReport::RunnerEnded(_)) if self.stream_failed => NoReport::Lost(
                "the connection to the Docker engine failed while the code ran: the output \
                 stream ended with an error, and no report came back"
                    .into(),
            ),
            Some(f) => f,
            None => NoReport::RunnerEnded("the runner's output ended without its report".into()),
        };
        let (status, tampering) = finding.status();
        let note = finding.into_note();
        if tampering {
            self.tampered.push(note);
        } else {
            self.notes.push(note);
        }
        status
    }

    /// The run's limits.
    pub(crate) fn limits(&self) -> &Limits {
        &self.limits
    }

    /// True when the last outcome was a session's step and its interpreter
    /// waits for the next one (a step's report came, nothing was found
    /// tampered with, and the deadline did not pass).
    pub(crate) fn waits_for_a_step(&self, outcome: &Outcome) -> bool {
        self.step_report
            && outcome.step.is_some()
            && !outcome.timed_out
            && !matches!(
                outcome.status,
                RunStatus::Tampered
                    | RunStatus::Timeout
                    | RunStatus::Oom
                    | RunStatus::Killed
                    | RunStatus::Lost
            )
    }

    /// The bytes that hand a session's next step to the runner, signed
    /// with the session's key ([`protocol::encode_step`]); `number` is the
    /// step's.
    pub(crate) fn step_line(
        &self,
        number: u32,
        code: &str,
        options: super::StepOptions,
    ) -> Vec<u8> {
        protocol::encode_step(self.reader.key(), number, code, options)
    }

    /// Ready for a session's next step with its own deadline: what the
    /// last step collected was taken by [`Collector::outcome`].
    pub(crate) fn next_step(&mut self, timeout: Duration) {
        self.step_timeout = Some(timeout);
        self.step_report = false;
        // Only step 1 waits for the preload.
        self.preload.clear();
    }

    /// The outcome. `no_report`: what the backend found when the output
    /// ended without a report and before the deadline (`None` when it did
    /// not need to ask: a report came, readable or not, or the deadline
    /// passed). `code` is what ran; `container` says where.
    /// One outcome (a run's, or a session's step's): what was collected
    /// since the last is taken, so the next step starts empty.
    pub(crate) fn outcome(
        &mut self,
        ending: &Ending,
        no_report: Option<NoReport>,
        image: ImageInfo,
        code: &str,
        container: &str,
    ) -> Outcome {
        let runner_err =
            std::mem::replace(&mut self.runner_stderr, CappedBuffer::new(8 * 1024)).text();
        if !runner_err.trim().is_empty() {
            self.notes
                .push(format!("runner stderr: {}", runner_err.trim()));
        }
        let report = self.report.take();
        let (mut status, exit_code, signal, resources, audit, duration_ms) = match &report {
            Some(r) => {
                let (status, resources) = self.read_report(r);
                let mut audit = r.audit.clone();
                audit.kernel = r.kernel.clone();
                self.tampered.extend(r.tampered.iter().cloned());
                let duration_ms = self.checked_duration(r.duration_ms, ending);
                (status, r.exit_code, r.signal, resources, audit, duration_ms)
            }
            None => {
                let status = if ending.timed_out {
                    RunStatus::Timeout
                } else {
                    self.without_report(no_report)
                };
                // The code's own time: from its start, when it started.
                let mut ms = ending.code_ran.unwrap_or(ending.duration).as_millis() as u64;
                if ending.timed_out && ending.code_ran.is_none() && !self.preload.is_empty() {
                    // The time went to the preload: the code never ran.
                    ms = 0;
                    self.notes.push(format!(
                        "the code never started: the sandbox was still preloading {} when the run's time limit ({} s) and the preload's grace ({} s) had passed; the time was the preload's, not the code's",
                        self.preload.join(", "),
                        self.limits.timeout.as_secs_f64(),
                        PRELOAD_GRACE.as_secs()
                    ));
                }
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
        let mut tampered = std::mem::take(&mut self.reader.tampered);
        tampered.append(&mut self.tampered);
        if !tampered.is_empty() {
            status = RunStatus::Tampered;
        }
        let sources = super::sources(audit.kernel.as_ref(), report.is_some());
        let (step, value) = report
            .as_ref()
            .map_or((None, None), |r| (r.step, r.value.clone()));
        let stdout = std::mem::replace(
            &mut self.stdout,
            CappedBuffer::new(self.limits.stdout_cap.bytes()),
        );
        let stderr = std::mem::replace(
            &mut self.stderr,
            CappedBuffer::new(self.limits.stderr_cap.bytes()),
        );
        self.started = None;
        self.artifact_bytes = 0;
        Outcome {
            status,
            tampered,
            sources,
            exit_code,
            signal,
            duration_ms,
            collected_ms: ending.duration.as_millis() as u64,
            stdout: stdout.text(),
            stderr: stderr.text(),
            stdout_truncated: stdout.truncated,
            stderr_truncated: stderr.truncated,
            timed_out: ending.timed_out,
            oom_killed: status == RunStatus::Oom,
            image,
            limits: self.limits.clone(),
            resources,
            audit,
            artifacts: std::mem::take(&mut self.artifacts),
            code_sha256: sha256_hex(code.as_bytes()),
            container: container.to_string(),
            notes: std::mem::take(&mut self.notes),
            environment: None,
            seccomp: None,
            step,
            value,
        }
    }
}

#[cfg(test)]
mod tests {
    use futures_util::stream;

    use super::*;

    /// Writes frames as the runner does: with the run's key, in sequence.
    struct Framer {
        key: FrameKey,
        seq: std::cell::Cell<u64>,
    }

    /// A collector for `job` and a framer with the key its stdin header carries.
    fn collector(limits: &Limits) -> (Collector, Framer) {
        held(limits, false)
    }

    /// A collector for a run that is held (`hold`) or not.
    fn held(limits: &Limits, hold: bool) -> (Collector, Framer) {
        let (c, stdin) = Collector::new(&Job::default(), limits, &[], hold, None).unwrap();
        let header = stdin.split(|b| *b == b'\n').next().unwrap();
        let header: serde_json::Value = serde_json::from_slice(header).unwrap();
        let key: [u8; 32] = hex::decode(header["key"].as_str().unwrap())
            .unwrap()
            .try_into()
            .unwrap();
        let framer = Framer {
            key: FrameKey(key),
            seq: std::cell::Cell::new(0),
        };
        (c, framer)
    }

    fn frame(f: &Framer, kind: char, payload: &[u8]) -> Chunk {
        let seq = f.seq.replace(f.seq.get() + 1);
        Chunk::Stdout(f.key.frame(seq, kind, payload))
    }

    fn report(exit_code: i64, artifact: Option<(&str, &[u8])>) -> Vec<u8> {
        let artifacts: Vec<serde_json::Value> = artifact
            .map(|(name, bytes)| {
                serde_json::json!({"name": name, "size": bytes.len(), "sha256": sha256_hex(bytes)})
            })
            .into_iter()
            .collect();
        serde_json::to_vec(&serde_json::json!({
            "exit_code": exit_code, "signal": null, "duration_ms": 7,
            "peak_memory_bytes": 1024, "cpu_time_ms": 3,
            "stdout_bytes": 6, "stderr_bytes": 0, "oom_kills": 0,
            "audit": {"files_opened": [], "network_attempts": [], "subprocess_attempts": [],
                      "imports": ["json"], "refused": []},
            "artifacts": artifacts, "notes": []
        }))
        .unwrap()
    }

    fn ok(items: Vec<Chunk>) -> stream::Iter<std::vec::IntoIter<Result<Chunk, String>>> {
        stream::iter(items.into_iter().map(Ok).collect::<Vec<_>>())
    }

    /// Reads the stream `output` makes (given the run's nonce) and finishes
    /// with `no_report`: how it ended, whether a report came, the outcome.
    async fn collect<S>(
        limits: &Limits,
        no_report: Option<NoReport>,
        output: impl FnOnce(&Framer) -> S,
    ) -> (Ending, bool, Outcome)
    where
        S: Stream<Item = Result<Chunk, String>> + Unpin,
    {
        let (mut c, nonce) = collector(limits);
        let ending = c.read(&mut output(&nonce)).await;
        let reported = c.has_report();
        let o = c.outcome(&ending, no_report, ImageInfo::default(), "", "box");
        (ending, reported, o)
    }

    #[tokio::test]
    async fn frames_from_plain_bytes_make_the_outcome() {
        let (ending, reported, o) = collect(&Limits::default(), None, |nonce| {
            ok(vec![
                frame(nonce, 's', b""),
                frame(nonce, 'o', b"hello\n"),
                Chunk::Stderr(b"runner says hi".to_vec()),
                frame(nonce, 'a', br#"{"name": "plot.png"}"#),
                frame(nonce, 'c', b"PNG"),
                frame(nonce, 'r', &report(0, Some(("plot.png", b"PNG")))),
                frame(nonce, 'o', b"after the report is not read"),
            ])
        })
        .await;
        assert!(!ending.timed_out && reported);
        assert_eq!(o.status, RunStatus::Ok);
        assert_eq!((o.exit_code, o.duration_ms), (Some(0), 7));
        assert_eq!(o.stdout, "hello\n");
        assert_eq!(o.artifacts.len(), 1);
        assert_eq!(o.artifacts[0].bytes, b"PNG");
        assert_eq!(o.audit.imports, vec!["json".to_string()]);
        assert_eq!(o.container, "box");
        assert!(o.tampered.is_empty(), "{:?}", o.tampered);
        assert!(
            o.notes.iter().any(|n| n == "runner stderr: runner says hi"),
            "{:?}",
            o.notes
        );
    }

    #[tokio::test]
    async fn an_end_without_a_report_takes_the_backends_finding() {
        let lost = NoReport::Lost("the connection to the Docker engine was lost".into());
        let (ending, reported, o) = collect(&Limits::default(), Some(lost), |nonce| {
            stream::iter(vec![
                Ok(frame(nonce, 'o', b"partial")),
                Err("connection reset".to_string()),
            ])
        })
        .await;
        assert!(!ending.timed_out && !reported);
        assert_eq!(o.status, RunStatus::Lost);
        assert_eq!(o.stdout, "partial");
        assert_eq!(o.exit_code, None);
        assert!(
            o.notes
                .iter()
                .any(|n| n == "the output stream ended with an error: connection reset"),
            "{:?}",
            o.notes
        );
    }

    #[tokio::test]
    async fn a_report_that_does_not_read_back_is_tampering_never_a_bug_of_ours() {
        // An authentic report frame whose JSON the bot cannot read (the old
        // runner's lone surrogates from a name's bytes).
        let (_, reported, o) = collect(&Limits::default(), None, |nonce| {
            ok(vec![
                frame(nonce, 's', b""),
                frame(nonce, 'r', br#"{"notes": ["/out/\udcff"]}"#),
            ])
        })
        .await;
        assert!(!reported);
        assert_eq!(o.status, RunStatus::Tampered, "{o:?}");
        assert!(
            o.tampered
                .iter()
                .any(|t| t.contains("the runner's report could not be read")),
            "{:?}",
            o.tampered
        );
        assert!(
            !o.notes.iter().any(|n| n.contains("compute-bot bug")),
            "{:?}",
            o.notes
        );
    }

    #[tokio::test]
    async fn each_engine_finding_without_a_report_makes_its_status() {
        let ended = "the runner (pid 1) ended without its report (container exit code 1)";
        for (finding, status) in [
            (NoReport::Lost("lost".into()), RunStatus::Lost),
            (NoReport::Oom("oom".into()), RunStatus::Oom),
            (NoReport::Outside("outside".into()), RunStatus::Killed),
            (NoReport::RunnerEnded(ended.into()), RunStatus::Tampered),
        ] {
            let note = finding.clone().into_note();
            let (_, _, o) = collect(&Limits::default(), Some(finding), |nonce| {
                ok(vec![frame(nonce, 's', b"")])
            })
            .await;
            assert_eq!(o.status, status, "{o:?}");
            let (listed, other) = if status == RunStatus::Tampered {
                (&o.tampered, &o.notes)
            } else {
                (&o.notes, &o.tampered)
            };
            assert!(listed.contains(&note), "{o:?}");
            assert!(!other.contains(&note), "{o:?}");
        }
    }

    #[tokio::test]
    async fn a_runner_that_ended_after_the_stream_failed_is_lost_not_tampered() {
        let ended = NoReport::RunnerEnded("the runner ended (container exit code 1)".into());
        let (_, _, o) = collect(&Limits::default(), Some(ended), |nonce| {
            stream::iter(vec![
                Ok(frame(nonce, 's', b"")),
                Err("connection reset".to_string()),
            ])
        })
        .await;
        assert_eq!(o.status, RunStatus::Lost, "{o:?}");
        assert!(o.tampered.is_empty(), "{:?}", o.tampered);
        assert!(
            o.notes
                .iter()
                .any(|n| n.contains("connection to the Docker engine failed")),
            "{:?}",
            o.notes
        );
    }

    #[tokio::test]
    async fn the_deadline_ends_a_silent_run_as_a_timeout() {
        let limits = Limits {
            timeout: Duration::from_millis(50),
            ..Limits::default()
        };
        let (ending, _, o) = collect(&limits, None, |_| {
            stream::pending::<Result<Chunk, String>>()
        })
        .await;
        assert!(ending.timed_out);
        assert!(ending.duration >= Duration::from_millis(50));
        assert_eq!(o.status, RunStatus::Timeout);
        assert!(o.timed_out);
    }

    #[tokio::test]
    async fn output_over_the_caps_is_cut_and_flagged() {
        let limits = Limits {
            stdout_cap: compute_bot_units::ByteSize(3),
            artifacts_max_bytes: compute_bot_units::ByteSize(2),
            ..Limits::default()
        };
        let (_, _, o) = collect(&limits, None, |nonce| {
            ok(vec![
                frame(nonce, 'o', b"hello\n"),
                frame(nonce, 'a', br#"{"name": "big.bin"}"#),
                frame(nonce, 'c', b"too big"),
                frame(nonce, 'r', &report(0, None)),
            ])
        })
        .await;
        assert_eq!(o.stdout, "hel");
        assert!(o.stdout_truncated);
        assert_eq!(o.status, RunStatus::OutputLimit);
        assert!(o.artifacts.is_empty());
        assert!(
            o.notes
                .iter()
                .any(|n| n.contains("artifact big.bin dropped")),
            "{:?}",
            o.notes
        );
    }

    #[test]
    fn the_code_gets_its_whole_limit_however_late_the_preload_lets_it_start() {
        let h = Instant::now();
        let t = Duration::from_secs(10);
        // Waiting for the start: the limit, plus the grace when preloading.
        assert_eq!(deadline(h, None, t, false), h + t);
        assert_eq!(deadline(h, None, t, true), h + t + PRELOAD_GRACE);
        // A preload that took 35 s (beyond its grace, within the wait):
        // the code still has its whole 10 s from its start.
        let late = h + Duration::from_secs(35);
        assert_eq!(deadline(h, Some(late), t, true), late + t);
        assert!(deadline(h, Some(late), t, true) > deadline(h, None, t, true));
    }

    /// The outcome of a run that timed out after `code_ran` of the code's
    /// own time (`None`: it never started), `preload` being preloaded.
    fn timed_out(preload: &[&str], code_ran: Option<Duration>) -> Outcome {
        let preload: Vec<String> = preload.iter().map(|m| m.to_string()).collect();
        let (mut c, _) =
            Collector::new(&Job::default(), &Limits::default(), &preload, false, None).unwrap();
        let ending = Ending {
            timed_out: true,
            duration: Duration::from_secs(40),
            code_ran,
        };
        c.outcome(&ending, None, ImageInfo::default(), "", "box")
    }

    #[test]
    fn a_preload_that_overruns_is_reported_as_the_preloads_time() {
        let o = timed_out(&["pandas", "matplotlib.pyplot"], None);
        assert_eq!(o.status, RunStatus::Timeout);
        assert_eq!(o.duration_ms, 0, "the code never ran");
        let note = o
            .notes
            .iter()
            .find(|n| n.contains("never started"))
            .unwrap_or_else(|| panic!("{:?}", o.notes));
        assert!(
            note.contains("pandas, matplotlib.pyplot") && note.contains("the preload's"),
            "{note}"
        );
        // Code that started and ran out of its own time: its time, no such note.
        let o = timed_out(&["pandas"], Some(Duration::from_secs(10)));
        assert_eq!(o.duration_ms, 10_000);
        assert!(!o.notes.iter().any(|n| n.contains("never started")));
        // Without a preload nothing is blamed on one.
        let o = timed_out(&[], None);
        assert_eq!(o.duration_ms, 40_000);
        assert!(o.notes.is_empty(), "{:?}", o.notes);
    }

    /// A report whose code waited `wait_ms`, with what was preloaded and
    /// what the code imported.
    fn waited(wait_ms: u64, preloaded: &[&str], imports: &[&str]) -> Vec<u8> {
        serde_json::to_vec(&serde_json::json!({
            "exit_code": 0, "signal": null, "duration_ms": 7, "start_wait_ms": wait_ms,
            "peak_memory_bytes": 1024, "cpu_time_ms": 3,
            "stdout_bytes": 0, "stderr_bytes": 0, "oom_kills": 0,
            "audit": {"files_opened": [], "network_attempts": [], "subprocess_attempts": [],
                      "imports": imports, "refused": [], "preloaded": preloaded},
            "artifacts": [], "notes": []
        }))
        .unwrap()
    }

    #[tokio::test]
    async fn only_a_wait_for_modules_the_code_does_not_import_is_noted() {
        let fixed = ["pandas", "numpy", "matplotlib.pyplot"];
        let (_, _, o) = collect(&Limits::default(), None, |nonce| {
            ok(vec![frame(nonce, 'r', &waited(900, &fixed, &["json"]))])
        })
        .await;
        assert_eq!(o.audit.preloaded, fixed);
        let note = o
            .notes
            .iter()
            .find(|n| n.contains("waited 900 ms"))
            .unwrap_or_else(|| panic!("{:?}", o.notes));
        assert!(note.contains("pandas, numpy, matplotlib.pyplot"), "{note}");
        // Its own imports loaded ahead: no wait to speak of.
        let (_, _, o) = collect(&Limits::default(), None, |nonce| {
            ok(vec![frame(
                nonce,
                'r',
                &waited(900, &["pandas"], &["json", "pandas"]),
            )])
        })
        .await;
        assert!(o.notes.is_empty(), "{:?}", o.notes);
        // A short wait is no news either.
        let (_, _, o) = collect(&Limits::default(), None, |nonce| {
            ok(vec![frame(nonce, 'r', &waited(50, &fixed, &["json"]))])
        })
        .await;
        assert!(o.notes.is_empty(), "{:?}", o.notes);
    }

    /// A report as the runner writes it, with `extra` fields set.
    fn report_with(extra: serde_json::Value) -> Vec<u8> {
        let mut r: serde_json::Value = serde_json::from_slice(&report(0, None)).unwrap();
        for (k, v) in extra.as_object().unwrap() {
            r[k] = v.clone();
        }
        serde_json::to_vec(&r).unwrap()
    }

    #[tokio::test]
    async fn anything_but_the_runners_frames_makes_the_run_tampered() {
        // A line without a valid tag; a frame of another run's key; a
        // repeated frame; a second start: each alone makes the run tampered,
        // whatever the report says.
        type Build = fn(&Framer) -> Vec<Chunk>;
        let cases: [(&str, Build); 4] = [
            ("not an authentic runner frame", |f| {
                vec![
                    Chunk::Stdout(b"0:o:aGk=:00000000000000000000000000000000\n".to_vec()),
                    frame(f, 'r', &report(0, None)),
                ]
            }),
            ("not an authentic runner frame", |f| {
                vec![
                    Chunk::Stdout(FrameKey([9; 32]).frame(0, 'o', b"forged")),
                    frame(f, 'r', &report(0, None)),
                ]
            }),
            ("came where frame", |f| {
                let first = frame(f, 'o', b"once");
                vec![first.clone(), first, frame(f, 'r', &report(0, None))]
            }),
            ("start was reported twice", |f| {
                vec![
                    frame(f, 's', b""),
                    frame(f, 's', b""),
                    frame(f, 'r', &report(0, None)),
                ]
            }),
        ];
        for (why, build) in cases {
            let (_, reported, o) = collect(&Limits::default(), None, |f| ok(build(f))).await;
            assert!(reported, "{why}");
            assert_eq!(o.status, RunStatus::Tampered, "{why}: {o:?}");
            assert!(
                o.tampered.iter().any(|t| t.contains(why)),
                "{why}: {:?}",
                o.tampered
            );
        }
    }

    #[tokio::test]
    async fn the_runners_findings_and_the_kernels_record_reach_the_outcome() {
        let (_, _, o) = collect(&Limits::default(), None, |f| {
            ok(vec![frame(
                f,
                'r',
                &report_with(serde_json::json!({
                    "tampered": ["the interpreter's record names an open of /data/x.csv that the kernel never saw"],
                    "kernel": {"mode": "notify", "files": [], "library_reads": 3,
                               "execs": [{"call": "vfork"}], "sockets": [], "truncated": false},
                    "cgroup": {"peak_memory_bytes": 4096, "cpu_time_ms": 9}
                })),
            )])
        })
        .await;
        assert_eq!(o.status, RunStatus::Tampered);
        assert!(o.tampered[0].contains("never saw"), "{:?}", o.tampered);
        let k = o.audit.kernel.as_ref().expect("the kernel's record");
        assert_eq!((k.library_reads, k.starts[0].call.as_str()), (3, "vfork"));
        assert_eq!(o.resources.container.peak_memory_bytes, Some(4096));
        // The same report without findings is an ordinary run.
        let (_, _, o) = collect(&Limits::default(), None, |f| {
            ok(vec![frame(
                f,
                'r',
                &report_with(serde_json::json!({"tampered": []})),
            )])
        })
        .await;
        assert_eq!(o.status, RunStatus::Ok);
    }

    #[tokio::test]
    async fn a_held_run_signals_once_when_its_modules_are_loaded() {
        let (mut c, f) = held(&Limits::default(), true);
        let mut ready = c.ready_signal();
        let first = frame(&f, 'q', b"");
        c.read(&mut ok(vec![first])).await;
        assert!(ready.try_recv().is_ok(), "the backend is told to release");
        assert!(c.tampered.is_empty(), "{:?}", c.tampered);
        // Again (or after the start): tampering, with no second release.
        let again = frame(&f, 'q', b"");
        c.read(&mut ok(vec![again, frame(&f, 'r', &report(0, None))]))
            .await;
        assert!(c.tampered[0].contains("loaded twice"), "{:?}", c.tampered);
        // A run that was not held never sends it.
        let (_, _, o) = collect(&Limits::default(), None, |f| {
            ok(vec![frame(f, 'q', b""), frame(f, 'r', &report(0, None))])
        })
        .await;
        assert_eq!(o.status, RunStatus::Tampered);
        assert!(o.tampered[0].contains("not held"), "{:?}", o.tampered);
    }

    #[tokio::test]
    async fn a_code_start_above_the_policys_cpu_is_noted() {
        let at = |quota: serde_json::Value| {
            report_with(serde_json::json!({"cgroup": {
                "cpu_before_code": {"quota": null, "period": 100000},
                "cpu_at_code_start": {"quota": quota, "period": 100000}}}))
        };
        let limits = Limits {
            cpus: 0.5,
            ..Limits::default()
        };
        for (quota, noted) in [
            (serde_json::json!(50000), None),
            (
                serde_json::json!(100000),
                Some("the code started under 1 CPU"),
            ),
            (serde_json::Value::Null, Some("under every host CPU")),
        ] {
            let r = at(quota.clone());
            let (_, _, o) = collect(&limits, None, |f| ok(vec![frame(f, 'r', &r)])).await;
            let note = o
                .notes
                .iter()
                .find(|n| n.contains("above the policy's 0.5 CPU"));
            match noted {
                None => assert!(note.is_none(), "{quota}: {:?}", o.notes),
                Some(text) => assert!(
                    note.is_some_and(|n| n.contains(text)),
                    "{quota}: {:?}",
                    o.notes
                ),
            }
            assert_eq!(
                o.resources.container.cpu_at_code_start.map(|q| q.quota),
                Some(quota.as_u64())
            );
        }
    }

    #[tokio::test]
    async fn a_run_time_longer_than_the_bot_saw_gives_way_to_the_bots() {
        let (_, _, o) = collect(&Limits::default(), None, |f| {
            ok(vec![
                frame(f, 's', b""),
                frame(
                    f,
                    'r',
                    &report_with(serde_json::json!({"duration_ms": 600000})),
                ),
            ])
        })
        .await;
        assert!(o.duration_ms < 600_000, "{}", o.duration_ms);
        assert!(
            o.notes
                .iter()
                .any(|n| n.contains("the bot's figure is shown")),
            "{:?}",
            o.notes
        );
    }
}
