//! Output collection, the same for every backend: the job goes in as bytes
//! for the runner's stdin, the container's output comes back as plain
//! [`Chunk`]s, and a [`Collector`] turns the runner's frames into an
//! [`Outcome`] under the byte caps and the deadline. No engine is known
//! here; a backend only maps its stream onto [`Chunk`]s and, when the
//! output ends without a report, says why ([`Collector::finish`]'s
//! `no_report`).

use std::time::{Duration, Instant};

use futures_util::{Stream, StreamExt};

use super::protocol::{self, CappedBuffer, Frame, FrameReader, RunnerReport};
use super::types::{Artifact, Audit, ImageInfo, Job, Limits, Outcome, Resources, RunStatus};
use super::{SandboxError, random_hex, sha256_hex};

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
}

/// Longest the code may wait for a preloading child before the deadline
/// starts counting anyway.
const PRELOAD_GRACE: Duration = Duration::from_secs(30);

/// Reads one run's frames into an [`Outcome`].
pub(crate) struct Collector {
    reader: FrameReader,
    limits: Limits,
    preloading: bool,
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

impl Collector {
    /// Checks the job ([`Job::check`]), picks the run's nonce and returns
    /// the collector with the bytes the runner's stdin starts with (header
    /// and code; the backend streams the inputs after them).
    /// `preloading`: the child imports modules first, so the deadline
    /// allows for that wait until the code starts.
    pub(crate) fn new(
        job: &Job,
        limits: &Limits,
        preloading: bool,
    ) -> Result<(Collector, Vec<u8>), SandboxError> {
        job.check(limits)?;
        let nonce = random_hex(16);
        let stdin = protocol::encode_job(&nonce, job, limits);
        let collector = Collector {
            reader: FrameReader::new(&nonce),
            limits: limits.clone(),
            preloading,
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
        };
        Ok((collector, stdin))
    }

    /// Reads `output` until the report arrives, the stream ends (an error
    /// is kept as a note) or the deadline passes.
    pub(crate) async fn read(
        &mut self,
        output: &mut (impl Stream<Item = Result<Chunk, String>> + Unpin),
    ) -> Ending {
        let started = Instant::now();
        // Until the code starts (a preloading child may still be importing),
        // the deadline allows for that wait; from the start frame on it is
        // the run's own timeout.
        let grace = if self.preloading {
            PRELOAD_GRACE
        } else {
            Duration::ZERO
        };
        let timeout = self.limits.timeout;
        let mut timed_out = false;
        let mut error = None;
        while self.report.is_none() {
            let deadline = tokio::time::Instant::from_std(match self.started {
                Some(s) => (s + timeout).min(started + timeout + grace),
                None => started + timeout + grace,
            });
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
                    break;
                }
                None => break,
            }
        }
        let duration = started.elapsed();
        if self.reader.noise_bytes > 0 {
            self.notes.push(format!(
                "{} bytes on the container's stdout were not runner frames (ignored)",
                self.reader.noise_bytes
            ));
        }
        if let Some(e) = &error {
            self.notes
                .push(format!("the output stream ended with an error: {e}"));
        }
        Ending {
            timed_out,
            duration,
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
        if r.start_wait_ms >= 100 {
            self.notes.push(format!(
                "the code waited {} ms for the sandbox's preloaded modules to finish loading",
                r.start_wait_ms
            ));
        }
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
        };
        (status, resources)
    }

    /// The outcome. `no_report`: the status when the output ended without a
    /// report and before the deadline (the backend's finding: `Oom`, `Lost`
    /// or `Killed`). `image` and `container` say where it ran.
    pub(crate) fn finish(
        mut self,
        ending: &Ending,
        no_report: RunStatus,
        image: ImageInfo,
        job: &Job,
        container: &str,
    ) -> Outcome {
        let runner_err = self.runner_stderr.text();
        if !runner_err.trim().is_empty() {
            self.notes
                .push(format!("runner stderr: {}", runner_err.trim()));
        }
        let report = self.report.take();
        let (status, exit_code, signal, resources, audit, duration_ms) = match &report {
            Some(r) => {
                let (status, resources) = self.read_report(r);
                let audit = r.audit.clone();
                (
                    status,
                    r.exit_code,
                    r.signal,
                    resources,
                    audit,
                    r.duration_ms,
                )
            }
            None => {
                let status = if ending.timed_out {
                    RunStatus::Timeout
                } else {
                    no_report
                };
                let ms = ending.duration.as_millis() as u64;
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
            collected_ms: ending.duration.as_millis() as u64,
            stdout: self.stdout.text(),
            stderr: self.stderr.text(),
            stdout_truncated: self.stdout.truncated,
            stderr_truncated: self.stderr.truncated,
            timed_out: ending.timed_out,
            oom_killed: status == RunStatus::Oom,
            image,
            limits: self.limits,
            resources,
            audit,
            artifacts: self.artifacts,
            code_sha256: sha256_hex(job.code.as_bytes()),
            container: container.to_string(),
            notes: self.notes,
        }
    }
}

#[cfg(test)]
mod tests {
    use base64::Engine as _;
    use base64::engine::general_purpose::STANDARD as B64;
    use futures_util::stream;

    use super::*;

    /// A collector for `job` and the nonce its stdin header carries.
    fn collector(limits: &Limits) -> (Collector, String) {
        let (c, stdin) = Collector::new(&Job::default(), limits, false).unwrap();
        let header = stdin.split(|b| *b == b'\n').next().unwrap();
        let header: serde_json::Value = serde_json::from_slice(header).unwrap();
        (c, header["nonce"].as_str().unwrap().to_string())
    }

    fn frame(nonce: &str, kind: char, payload: &[u8]) -> Chunk {
        Chunk::Stdout(format!("{nonce}:{kind}:{}\n", B64.encode(payload)).into_bytes())
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
        no_report: RunStatus,
        output: impl FnOnce(&str) -> S,
    ) -> (Ending, bool, Outcome)
    where
        S: Stream<Item = Result<Chunk, String>> + Unpin,
    {
        let (mut c, nonce) = collector(limits);
        let ending = c.read(&mut output(&nonce)).await;
        let reported = c.has_report();
        let o = c.finish(
            &ending,
            no_report,
            ImageInfo::default(),
            &Job::default(),
            "box",
        );
        (ending, reported, o)
    }

    #[tokio::test]
    async fn frames_from_plain_bytes_make_the_outcome() {
        let (ending, reported, o) = collect(&Limits::default(), RunStatus::Lost, |nonce| {
            ok(vec![
                Chunk::Stdout(b"noise without the nonce\n".to_vec()),
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
        assert!(
            o.notes
                .iter()
                .any(|n| n.starts_with("24 bytes on the container's stdout")),
            "{:?}",
            o.notes
        );
        assert!(
            o.notes.iter().any(|n| n == "runner stderr: runner says hi"),
            "{:?}",
            o.notes
        );
    }

    #[tokio::test]
    async fn an_end_without_a_report_takes_the_backends_finding() {
        let (ending, reported, o) = collect(&Limits::default(), RunStatus::Lost, |nonce| {
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
    async fn the_deadline_ends_a_silent_run_as_a_timeout() {
        let limits = Limits {
            timeout: Duration::from_millis(50),
            ..Limits::default()
        };
        let (ending, _, o) = collect(&limits, RunStatus::Killed, |_| {
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
            stdout_cap: crate::units::ByteSize(3),
            artifacts_max_bytes: crate::units::ByteSize(2),
            ..Limits::default()
        };
        let (_, _, o) = collect(&limits, RunStatus::Lost, |nonce| {
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
}
