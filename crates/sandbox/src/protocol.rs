//! The wire protocol between the bot and the in-container runner.
//!
//! Bot → runner (container stdin): one JSON header line, the code, then each
//! input file's bytes; for a held run (the header's `hold`), later the line
//! [`GO`] once the bot has lowered the container's CPU quota. In a session
//! (the header's `session`), after each step's report, the next step
//! ([`encode_step`]) or [`END`]. Runner → bot
//! (container stdout): lines `<seq>:<kind>:<base64>:<tag>` where kind is `q`
//! (a held run's modules are loaded: the code waits for [`GO`]), `s` (the
//! code started), `o`
//! (stdout chunk), `e` (stderr chunk), `a` (artifact header), `c` (artifact
//! chunk), `p` (a piece of the final report, more follow), `r` (the final
//! report, or its last piece) or `t` (in a session, a step's report, or
//! its last piece: the interpreter waits for the next step), `seq` counts the frames from 0 and `tag` is
//! the first 16 bytes (hex) of HMAC-SHA256 over `<seq>:<kind>:<base64>` with
//! the run's key. The key is random per run, goes in on stdin (read by the
//! runner before the code starts) and never appears on the output, so a
//! process that reads the frames learns nothing that forges one. A line
//! without a valid tag, a frame out of sequence, a line over [`MAX_LINE`]
//! and an authentic frame that does not decode are tampering
//! ([`FrameReader::tampered`], [`Frame::Unreadable`]): the runner writes
//! none of them, so its output was forged or steered.
//!
//! # Text the code controls
//!
//! Every string of the report and of an artifact header (paths, `/out`
//! names, notes, audit records, argv, refused messages) is the runner's
//! `shown()` of it: UTF-8 text in which a backslash is `\\`, a byte that is
//! not UTF-8 is `\xNN` (two lowercase hex digits) and a lone surrogate that
//! no byte made is `\uXXXX`; every other character stands for itself (line
//! breaks and control characters too: JSON carries them, and what shows them
//! escapes them per context). So a name is carried without loss whatever its
//! bytes, and two names never show alike. A string over 1,024 characters
//! is cut there, followed by `… (N more characters not shown)`. The report
//! goes in pieces of at most 256 KiB (`p` frames, then `r`), each well under
//! [`MAX_LINE`] once in base64, and is taken whole up to [`MAX_REPORT`].

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use serde::{Deserialize, Serialize};

use super::input::InputFile;
use super::trust::{CgroupFacts, KernelRecord};
use super::types::{Audit, Job, Limits, RuntimeRules};

/// The runner's source, passed as `python3 -I -S -c <RUNNER>`.
pub(crate) const RUNNER: &str = include_str!("runner.py");

/// The longest frame line accepted; a longer line is dropped, and is
/// tampering (the runner writes none).
const MAX_LINE: usize = 1 << 20;

/// The largest report taken (all its pieces); a larger one is unreadable,
/// which is tampering (the runner bounds its report far below this).
const MAX_REPORT: usize = 16 << 20;

#[derive(Serialize)]
struct Header<'a> {
    /// The run's frame key, hex.
    key: &'a str,
    code_len: usize,
    inputs: Vec<InputHeader<'a>>,
    caps: Caps,
    rules: &'a RuntimeRules,
    /// The code waits, once its modules are loaded, for [`GO`] on stdin.
    hold: bool,
    /// The image's own libraries: their reads are counted, not listed
    /// ([`super::LIBRARY_PATHS`]).
    library: &'static [&'static str],
    /// A session of steps: the interpreter stays after the code (step 1)
    /// and waits for [`encode_step`] or [`END`].
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    session: bool,
    /// In a session: step 1 is meant to give the result (its `/out` files
    /// are collected when it ends).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    last: bool,
}

/// The longest string of the report, in characters (the runner's
/// `TEXT_CAP`).
const TEXT_CAP: usize = 1024;

/// Text as the runner shows it in the report (see "Text the code controls"
/// above) for text the bot read itself (gVisor's log), so the two compare:
/// a backslash doubled, cut at [`TEXT_CAP`] characters with the cut stated.
pub(crate) fn shown(text: &str) -> String {
    let (mut out, mut shown_chars, mut kept) = (String::new(), 0, 0);
    for c in text.chars() {
        let piece = if c == '\\' { 2 } else { 1 };
        if shown_chars + piece > TEXT_CAP {
            break;
        }
        out.push(c);
        if c == '\\' {
            out.push('\\');
        }
        shown_chars += piece;
        kept += 1;
    }
    let cut = text.chars().count() - kept;
    if cut > 0 {
        out.push_str(&format!("… ({cut} more characters not shown)"));
    }
    out
}

/// A string the runner showed, as gVisor's log writes the same name: a
/// backslash single again, and each byte that is not UTF-8 (`\xNN`) or lone
/// surrogate (`\uXXXX`) one U+FFFD, as the log's JSON replaces it. Only to
/// match the two records: the log cannot vouch for the bytes themselves.
pub(crate) fn as_logged(shown: &str) -> String {
    let mut out = String::new();
    let mut rest = shown;
    while let Some(i) = rest.find('\\') {
        out.push_str(&rest[..i]);
        let tail = &rest[i + 1..];
        let skip = match tail.chars().next() {
            Some('\\') => {
                out.push('\\');
                1
            }
            Some('x') if tail.len() >= 3 => {
                out.push('\u{FFFD}');
                3
            }
            Some('u') if tail.len() >= 5 => {
                out.push('\u{FFFD}');
                5
            }
            _ => {
                out.push('\\');
                0
            }
        };
        rest = tail.get(skip..).unwrap_or_default();
    }
    out.push_str(rest);
    out
}

/// What the bot writes on a held run's stdin when the code may start (its
/// CPU quota is the code's).
pub(crate) const GO: &[u8] = b"go\n";

/// What the bot writes to end a session: the child interpreter's pipe
/// closes and it exits.
pub(crate) const END: &[u8] = b"end\n";

/// The next step of a session, for the runner's stdin: the line
/// `step <length> <last 0|1> <timeout ms> <tag>` and the code. The tag is
/// the session key's over `step:<number>:<last>:<timeout ms>:` and the code,
/// so a line the code itself writes to the runner's stdin (under gVisor
/// it can open `/proc/1/fd/0`) is never run as a step.
pub(crate) fn encode_step(
    key: &FrameKey,
    number: u32,
    code: &str,
    options: super::StepOptions,
) -> Vec<u8> {
    let (last, ms) = (u8::from(options.last), options.timeout.as_millis());
    let mut signed = format!("step:{number}:{last}:{ms}:").into_bytes();
    signed.extend_from_slice(code.as_bytes());
    let mut out = format!("step {} {last} {ms} {}\n", code.len(), key.tag(&signed)).into_bytes();
    out.extend_from_slice(code.as_bytes());
    out
}

#[derive(Serialize)]
struct InputHeader<'a> {
    name: &'a str,
    size: u64,
}

#[derive(Serialize)]
struct Caps {
    stdout: u64,
    stderr: u64,
    artifacts_max_files: u32,
    artifacts_max_bytes: u64,
    /// The runner kills the code itself a little after this, so a container
    /// whose bot died does not run on until its expiry.
    timeout_ms: u64,
}

/// Encodes the start of the job written to the runner's stdin: the header
/// and the code. Each input's bytes follow in order, streamed by the
/// backend from [`InputFile::chunks`], so no input is held whole here.
/// `hold`: the code waits for [`GO`] once its modules are loaded.
/// `session`: the job's code is step 1 of a session, with these options
/// (the timeout is the step's, in place of the limits').
pub(crate) fn encode_job(
    key: &FrameKey,
    job: &Job,
    limits: &Limits,
    hold: bool,
    session: Option<super::StepOptions>,
) -> Vec<u8> {
    let key = hex::encode(key.0);
    let header = Header {
        key: &key,
        code_len: job.code.len(),
        inputs: job
            .inputs
            .iter()
            .map(|f: &InputFile| InputHeader {
                name: &f.name,
                size: f.size(),
            })
            .collect(),
        caps: Caps {
            stdout: limits.stdout_cap.bytes(),
            stderr: limits.stderr_cap.bytes(),
            artifacts_max_files: limits.artifacts_max_files,
            artifacts_max_bytes: limits.artifacts_max_bytes.bytes(),
            timeout_ms: session.map_or(limits.timeout, |o| o.timeout).as_millis() as u64,
        },
        rules: &job.rules,
        hold,
        library: super::LIBRARY_PATHS,
        session: session.is_some(),
        last: session.is_some_and(|o| o.last),
    };
    let mut out = serde_json::to_vec(&header).expect("header serializes");
    out.push(b'\n');
    out.extend_from_slice(job.code.as_bytes());
    out
}

/// The secret a run's frames are authenticated with (HMAC-SHA256).
#[derive(Clone)]
pub(crate) struct FrameKey(pub(crate) [u8; 32]);

impl std::fmt::Debug for FrameKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FrameKey(***)")
    }
}

impl FrameKey {
    /// A fresh random key.
    pub(crate) fn random() -> Self {
        let mut k = [0u8; 32];
        rand::fill(&mut k[..]);
        FrameKey(k)
    }

    /// HMAC-SHA256 (RFC 2104) of `msg`.
    fn mac(&self, msg: &[u8]) -> [u8; 32] {
        use sha2::{Digest, Sha256};
        let mut block = [0u8; 64];
        block[..32].copy_from_slice(&self.0);
        let pad = |byte: u8| block.map(|b| b ^ byte);
        let inner = Sha256::new()
            .chain_update(pad(0x36))
            .chain_update(msg)
            .finalize();
        Sha256::new()
            .chain_update(pad(0x5c))
            .chain_update(inner)
            .finalize()
            .into()
    }

    /// The tag a frame body `<seq>:<kind>:<base64>` carries (hex of the first 16 bytes).
    pub(crate) fn tag(&self, body: &[u8]) -> String {
        hex::encode(&self.mac(body)[..16])
    }

    /// One frame line as the runner writes it (tests and stand-ins).
    #[cfg(test)]
    pub(crate) fn frame(&self, seq: u64, kind: char, payload: &[u8]) -> Vec<u8> {
        let body = format!("{seq}:{kind}:{}", B64.encode(payload));
        format!("{body}:{}\n", self.tag(body.as_bytes())).into_bytes()
    }
}

/// An artifact as announced by the runner.
#[derive(Debug, Deserialize)]
pub(crate) struct ArtifactHeader {
    /// Path relative to `/out`.
    pub(crate) name: String,
}

/// An artifact entry of the final report.
#[derive(Debug, Deserialize)]
pub(crate) struct ReportedArtifact {
    /// Path relative to `/out`.
    pub(crate) name: String,
    /// Size in bytes.
    pub(crate) size: u64,
    /// Hex SHA-256 computed inside the container.
    pub(crate) sha256: String,
}

/// The runner's final report.
#[derive(Debug, Deserialize)]
pub(crate) struct RunnerReport {
    /// Exit code of the code's process, when it exited.
    pub(crate) exit_code: Option<i64>,
    /// Signal that ended the code's process.
    pub(crate) signal: Option<i32>,
    /// Milliseconds the code's process ran.
    pub(crate) duration_ms: u64,
    /// Peak RSS of the code's process in bytes.
    pub(crate) peak_memory_bytes: u64,
    /// User + system CPU time in milliseconds.
    pub(crate) cpu_time_ms: u64,
    /// Bytes the code wrote to stdout in total.
    pub(crate) stdout_bytes: u64,
    /// Bytes the code wrote to stderr in total.
    pub(crate) stderr_bytes: u64,
    /// OOM kills in the container's cgroup while the code ran.
    pub(crate) oom_kills: Option<i64>,
    /// The audit trail.
    pub(crate) audit: Audit,
    /// Artifacts with their checksums.
    pub(crate) artifacts: Vec<ReportedArtifact>,
    /// Runner notes (dropped artifacts, ...).
    pub(crate) notes: Vec<String>,
    /// Milliseconds the code waited after handover for the child (its
    /// preload) to be ready.
    #[serde(default)]
    pub(crate) start_wait_ms: u64,
    /// What the kernel saw of the code (the second stage's record).
    #[serde(default)]
    pub(crate) kernel: Option<KernelRecord>,
    /// The container's cgroup after the code ended.
    #[serde(default)]
    pub(crate) cgroup: CgroupFacts,
    /// What the runner found tampered with (its audit channel closed or
    /// written by the code, the interpreter's record against the kernel's).
    #[serde(default)]
    pub(crate) tampered: Vec<String>,
    /// In a session: the step this report is of.
    #[serde(default)]
    pub(crate) step: Option<u32>,
    /// In a session: the repr of the step's last expression, as the
    /// interpreter reports it.
    #[serde(default)]
    pub(crate) value: Option<String>,
}

/// One decoded frame.
#[derive(Debug)]
pub(crate) enum Frame {
    /// A chunk of the code's stdout.
    Stdout(Vec<u8>),
    /// A chunk of the code's stderr.
    Stderr(Vec<u8>),
    /// The start of an artifact.
    Artifact(ArtifactHeader),
    /// A chunk of the current artifact.
    ArtifactChunk(Vec<u8>),
    /// A held run's modules are loaded; its code waits for [`GO`].
    Ready,
    /// The code has started (the child finished preloading); the deadline
    /// counts from here.
    Started,
    /// A piece of the final report, kept by the reader until the report's
    /// last piece comes.
    ReportPiece,
    /// The final report.
    Report(Box<RunnerReport>),
    /// A session's step ended: its report (the interpreter waits for the
    /// next step).
    StepReport(Box<RunnerReport>),
    /// An authentic frame that does not decode: the runner wrote it, so
    /// what it read from the code's side (a name, a path) steered its
    /// output. Tampering. What failed.
    Unreadable {
        /// The frame kind (`r` is the report).
        kind: char,
        /// Why it could not be read.
        problem: String,
    },
}

/// Splits the container's stdout into frames, with bounded memory, and
/// checks each frame's tag and sequence number.
#[derive(Debug)]
pub(crate) struct FrameReader {
    key: FrameKey,
    next_seq: u64,
    pending: Vec<u8>,
    overlong: bool,
    /// The report's pieces so far (`p` frames), at most [`MAX_REPORT`].
    report: Vec<u8>,
    /// The pieces went over [`MAX_REPORT`]: the rest is not kept.
    report_over: bool,
    /// Bytes seen that were not valid frames: only the runner writes to the
    /// container's stdout, so anything else there came from somewhere else.
    pub(crate) noise_bytes: u64,
    /// What showed that the frame stream was tampered with (frames out of
    /// sequence, lines without a valid tag), at most a few.
    pub(crate) tampered: Vec<String>,
}

impl FrameReader {
    /// A reader for frames authenticated with `key`.
    pub(crate) fn new(key: &FrameKey) -> Self {
        FrameReader {
            key: key.clone(),
            next_seq: 0,
            pending: Vec::new(),
            overlong: false,
            report: Vec::new(),
            report_over: false,
            noise_bytes: 0,
            tampered: Vec::new(),
        }
    }

    /// The session's key, for signing what the bot sends.
    pub(crate) fn key(&self) -> &FrameKey {
        &self.key
    }

    fn tamper(&mut self, what: String) {
        if self.tampered.len() < 5 {
            self.tampered.push(what);
        }
    }

    /// Feeds bytes and returns the complete frames found in them.
    pub(crate) fn push(&mut self, mut bytes: &[u8]) -> Vec<Frame> {
        let mut frames = Vec::new();
        while let Some(pos) = bytes.iter().position(|&b| b == b'\n') {
            let (head, rest) = bytes.split_at(pos);
            bytes = &rest[1..];
            if self.overlong {
                self.noise_bytes += head.len() as u64 + 1;
                self.overlong = false;
                continue;
            }
            self.pending.extend_from_slice(head);
            let line = std::mem::take(&mut self.pending);
            match self.decode(&line) {
                Some(frame) => frames.push(frame),
                None => self.noise_bytes += line.len() as u64 + 1,
            }
            if self.noise_bytes > 0 && self.tampered.is_empty() {
                self.tamper(
                    "a line on the container's stdout was not an authentic runner frame \
                     (no valid tag): only the runner writes there"
                        .into(),
                );
            }
        }
        if self.overlong || self.pending.len() + bytes.len() > MAX_LINE {
            if !self.overlong {
                self.tamper(format!(
                    "a line of over {} MiB came on the container's stdout and was dropped: the \
                     runner writes no frame that long, so its output was forged or steered",
                    MAX_LINE >> 20
                ));
            }
            self.noise_bytes += (self.pending.len() + bytes.len()) as u64;
            self.pending.clear();
            self.overlong = true;
        } else {
            self.pending.extend_from_slice(bytes);
        }
        frames
    }

    /// `None` for a line without a valid tag (noise); an authentic line is
    /// a frame, or [`Frame::Unreadable`] saying what failed. A frame out of
    /// sequence is taken, and noted as tampering.
    fn decode(&mut self, line: &[u8]) -> Option<Frame> {
        let cut = line.iter().rposition(|&b| b == b':')?;
        let (body, tag) = (&line[..cut], &line[cut + 1..]);
        if tag != self.key.tag(body).as_bytes() {
            return None;
        }
        let mut parts = body.splitn(3, |&b| b == b':');
        let seq = parts
            .next()
            .and_then(|s| std::str::from_utf8(s).ok()?.parse::<u64>().ok());
        let kind = parts
            .next()
            .and_then(|k| k.first().copied())
            .unwrap_or(b'?');
        let rest = parts.next();
        match seq {
            Some(seq) if seq == self.next_seq => self.next_seq += 1,
            Some(seq) => {
                self.tamper(format!(
                    "the runner's frame {seq} came where frame {} was due: frames were removed, repeated or reordered on the way",
                    self.next_seq
                ));
                self.next_seq = seq.max(self.next_seq) + 1;
            }
            None => self.tamper("an authentic frame without a sequence number".into()),
        }
        let unreadable = |problem: String| Frame::Unreadable {
            kind: char::from(kind),
            problem,
        };
        let payload = match rest.map(|p| B64.decode(p)) {
            Some(Ok(p)) => p,
            Some(Err(e)) => return Some(unreadable(format!("not base64: {e}"))),
            None => return Some(unreadable("no `:` after the kind".into())),
        };
        Some(match kind {
            b'o' => Frame::Stdout(payload),
            b'e' => Frame::Stderr(payload),
            b'a' => match serde_json::from_slice(&payload) {
                Ok(h) => Frame::Artifact(h),
                Err(e) => unreadable(e.to_string()),
            },
            b'c' => Frame::ArtifactChunk(payload),
            b'q' => Frame::Ready,
            b's' => Frame::Started,
            b'p' => {
                self.keep_piece(&payload);
                Frame::ReportPiece
            }
            b'r' | b't' => {
                self.keep_piece(&payload);
                let whole = std::mem::take(&mut self.report);
                if std::mem::take(&mut self.report_over) {
                    return Some(unreadable(format!(
                        "the report is over {} MiB",
                        MAX_REPORT >> 20
                    )));
                }
                match serde_json::from_slice(&whole) {
                    Ok(r) if kind == b't' => Frame::StepReport(Box::new(r)),
                    Ok(r) => Frame::Report(Box::new(r)),
                    Err(e) => unreadable(e.to_string()),
                }
            }
            _ => unreadable("unknown kind".into()),
        })
    }
}

impl FrameReader {
    /// Adds a piece of the report, within [`MAX_REPORT`].
    fn keep_piece(&mut self, piece: &[u8]) {
        if self.report.len() + piece.len() > MAX_REPORT {
            self.report_over = true;
            self.report = Vec::new();
        } else if !self.report_over {
            self.report.extend_from_slice(piece);
        }
    }
}

/// Keeps at most `cap` bytes of a stream and remembers whether more came.
#[derive(Debug)]
pub(crate) struct CappedBuffer {
    cap: usize,
    buf: Vec<u8>,
    /// True once bytes beyond the cap arrived.
    pub(crate) truncated: bool,
}

impl CappedBuffer {
    /// An empty buffer keeping at most `cap` bytes.
    pub(crate) fn new(cap: u64) -> Self {
        CappedBuffer {
            cap: usize::try_from(cap).unwrap_or(usize::MAX),
            buf: Vec::new(),
            truncated: false,
        }
    }

    /// Appends what fits; marks truncation for the rest.
    pub(crate) fn push(&mut self, bytes: &[u8]) {
        let room = self.cap.saturating_sub(self.buf.len());
        if bytes.len() > room {
            self.truncated = true;
        }
        self.buf.extend_from_slice(&bytes[..bytes.len().min(room)]);
    }

    /// The kept bytes as text (invalid UTF-8 replaced).
    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.buf).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> FrameKey {
        FrameKey([7; 32])
    }

    #[test]
    fn frames_split_across_chunks_are_reassembled() {
        let mut r = FrameReader::new(&key());
        let mut all = key().frame(0, 'o', b"hello\n");
        all.extend(key().frame(1, 'e', b"oops"));
        let (a, b) = all.split_at(7);
        assert!(r.push(a).is_empty());
        let frames = r.push(b);
        assert!(matches!(&frames[0], Frame::Stdout(p) if p == b"hello\n"));
        assert!(matches!(&frames[1], Frame::Stderr(p) if p == b"oops"));
        assert_eq!(r.noise_bytes, 0);
        assert!(r.tampered.is_empty(), "{:?}", r.tampered);
    }

    #[test]
    fn lines_without_a_valid_tag_are_noise_and_tampering() {
        let mut r = FrameReader::new(&key());
        // Another key, a tag copied from another frame, plain text.
        let mut bytes = FrameKey([8; 32]).frame(0, 'o', b"forged");
        let real = key().frame(0, 'o', b"real");
        let tag = &real[real.iter().rposition(|&b| b == b':').unwrap()..];
        bytes.extend(format!("0:o:{}", B64.encode(b"forged")).as_bytes());
        bytes.extend(tag);
        bytes.extend(b"plain text\n");
        bytes.extend(&real);
        let frames = r.push(&bytes);
        assert_eq!(frames.len(), 1);
        assert!(matches!(&frames[0], Frame::Stdout(p) if p == b"real"));
        assert!(r.noise_bytes > 0);
        assert_eq!(r.tampered.len(), 1, "{:?}", r.tampered);
        assert!(r.tampered[0].contains("not an authentic runner frame"));
    }

    #[test]
    fn a_frame_out_of_sequence_is_tampering() {
        for order in [[0, 2, 3], [0, 0, 1], [1, 0, 2]] {
            let mut r = FrameReader::new(&key());
            for seq in order {
                r.push(&key().frame(seq, 'o', b"x"));
            }
            assert!(!r.tampered.is_empty(), "{order:?}");
            assert!(
                r.tampered[0].contains("came where frame"),
                "{:?}",
                r.tampered
            );
        }
        let mut r = FrameReader::new(&key());
        for seq in 0..3 {
            r.push(&key().frame(seq, 'o', b"x"));
        }
        assert!(r.tampered.is_empty());
    }

    #[test]
    fn a_step_line_is_signed_over_its_number_options_and_code() {
        let key = key();
        let options = crate::StepOptions {
            last: false,
            timeout: std::time::Duration::from_secs(5),
            then: crate::Then::Wait,
        };
        let line = encode_step(&key, 2, "x = 1\n", options);
        let text = String::from_utf8(line.clone()).unwrap();
        let (head, code) = text.split_once('\n').unwrap();
        assert_eq!(code, "x = 1\n");
        let tag = key.tag(b"step:2:0:5000:x = 1\n");
        assert_eq!(head, format!("step 6 0 5000 {tag}"));
        // Another number, option or code: another tag.
        assert_ne!(line, encode_step(&key, 3, "x = 1\n", options));
        assert_ne!(line, encode_step(&key, 2, "x = 2\n", options));
        let last = crate::StepOptions {
            last: true,
            ..options
        };
        assert_ne!(line, encode_step(&key, 2, "x = 1\n", last));
    }

    #[test]
    fn the_mac_is_hmac_sha256() {
        // Computed independently with Python's hmac module:
        // hmac.new(bytes([7])*32, b"0:s:", "sha256").hexdigest()[:32]
        assert_eq!(key().tag(b"0:s:"), "7f2504430fd032072898a6caf60d7978");
    }

    #[test]
    fn a_damaged_report_is_named_not_dropped_as_noise() {
        let mut r = FrameReader::new(&key());
        let frames = r.push(&key().frame(0, 'r', br#"{"duration_ms": -3}"#));
        assert_eq!(r.noise_bytes, 0);
        match &frames[..] {
            [Frame::Unreadable { kind: 'r', problem }] => {
                assert!(
                    problem.contains("duration_ms") || problem.contains("-3"),
                    "{problem}"
                )
            }
            other => panic!("{other:?}"),
        }
        let body = b"1:o:%%%";
        let mut line = body.to_vec();
        line.extend(format!(":{}\n", key().tag(body)).as_bytes());
        let frames = r.push(&line);
        assert!(matches!(&frames[..], [Frame::Unreadable { kind: 'o', .. }]));
    }

    #[test]
    fn an_endless_line_does_not_grow_memory() {
        let mut r = FrameReader::new(&key());
        let chunk = vec![b'x'; 64 * 1024];
        for _ in 0..64 {
            assert!(r.push(&chunk).is_empty());
        }
        assert!(r.pending.len() <= MAX_LINE);
        let frames = r.push(&[b"\n".as_slice(), &key().frame(0, 'o', b"after")].concat());
        assert_eq!(frames.len(), 1);
        assert_eq!(r.noise_bytes, 64 * 64 * 1024 + 1);
        // Dropped, and never silently: the runner writes no such line.
        assert_eq!(r.tampered.len(), 1, "{:?}", r.tampered);
        assert!(r.tampered[0].contains("over 1 MiB"), "{:?}", r.tampered);
    }

    #[test]
    fn text_is_shown_as_the_runner_shows_it() {
        assert_eq!(shown("/out/a\\b"), "/out/a\\\\b");
        let long = "é".repeat(1030);
        assert_eq!(
            shown(&long),
            format!("{}… (6 more characters not shown)", "é".repeat(1024))
        );
        // A backslash pair is never split: 600 of them keep 512.
        assert_eq!(
            shown(&"\\".repeat(600)),
            format!("{}… (88 more characters not shown)", "\\".repeat(1024))
        );
    }

    #[test]
    fn a_shown_name_matches_the_name_as_gvisor_logs_it() {
        assert_eq!(
            as_logged(r"/out/r\xffe\\sult.txt"),
            "/out/r\u{FFFD}e\\sult.txt"
        );
        assert_eq!(
            as_logged(r"/d/\xff\xfe\ud800.csv"),
            "/d/\u{FFFD}\u{FFFD}\u{FFFD}.csv"
        );
        assert_eq!(as_logged("/data/sales.csv"), "/data/sales.csv");
    }

    #[test]
    fn an_authentic_report_over_the_line_limit_is_tampering_not_noise() {
        // One `r` frame of a report over 1 MiB, as the old runner wrote it.
        let big = serde_json::json!({"notes": ["x".repeat(900 * 1024)]});
        let line = key().frame(0, 'r', &serde_json::to_vec(&big).unwrap());
        assert!(line.len() > MAX_LINE);
        let mut r = FrameReader::new(&key());
        let mut frames = Vec::new();
        for chunk in line.chunks(64 * 1024) {
            frames.extend(r.push(chunk));
        }
        assert!(frames.is_empty());
        assert!(!r.tampered.is_empty(), "dropped silently");
    }

    #[test]
    fn a_report_in_pieces_is_taken_whole() {
        let report = serde_json::json!({
            "exit_code": 0, "signal": null, "duration_ms": 7,
            "peak_memory_bytes": 1024, "cpu_time_ms": 3,
            "stdout_bytes": 0, "stderr_bytes": 0, "oom_kills": 0,
            "audit": {"files_opened": [], "network_attempts": [], "subprocess_attempts": [],
                      "imports": [], "refused": []},
            "artifacts": [], "notes": ["n".repeat(700 * 1024), "/out/a\\xff\\\\b"]
        });
        let bytes = serde_json::to_vec(&report).unwrap();
        let mut r = FrameReader::new(&key());
        let mut frames = Vec::new();
        let pieces: Vec<&[u8]> = bytes.chunks(256 * 1024).collect();
        for (i, piece) in pieces.iter().enumerate() {
            let kind = if i + 1 == pieces.len() { 'r' } else { 'p' };
            frames.extend(r.push(&key().frame(i as u64, kind, piece)));
        }
        assert!(r.tampered.is_empty(), "{:?}", r.tampered);
        match frames.last() {
            Some(Frame::Report(rep)) => {
                assert_eq!(rep.notes[0].len(), 700 * 1024);
                assert_eq!(rep.notes[1], "/out/a\\xff\\\\b");
            }
            other => panic!("{other:?}"),
        }
        // Pieces beyond the report's limit: unreadable, not taken.
        let mut r = FrameReader::new(&key());
        let piece = vec![b' '; 700 * 1024];
        let mut seq = 0;
        while (seq as usize) * piece.len() <= MAX_REPORT {
            assert!(matches!(
                &r.push(&key().frame(seq, 'p', &piece))[..],
                [Frame::ReportPiece]
            ));
            seq += 1;
        }
        assert!(matches!(
            &r.push(&key().frame(seq, 'r', b"{}"))[..],
            [Frame::Unreadable { kind: 'r', problem }] if problem.contains("over 16 MiB")
        ));
    }

    #[test]
    fn capped_buffer_keeps_the_head_and_flags_the_rest() {
        let mut b = CappedBuffer::new(5);
        b.push(b"abc");
        assert!(!b.truncated);
        b.push(b"defg");
        assert!(b.truncated);
        assert_eq!(b.text(), "abcde");
    }

    #[test]
    fn job_encoding_puts_the_code_after_the_header_and_leaves_inputs_to_the_stream() {
        let job = Job {
            code: "print(1)".into(),
            inputs: vec![InputFile::new("a.csv", b"x\n1\n".to_vec())],
            rules: RuntimeRules::default(),
        };
        let bytes = encode_job(&FrameKey([1; 32]), &job, &Limits::default(), false, None);
        let nl = bytes.iter().position(|&b| b == b'\n').unwrap();
        let header: serde_json::Value = serde_json::from_slice(&bytes[..nl]).unwrap();
        assert_eq!(header["code_len"], 8);
        assert_eq!(header["inputs"][0]["size"], 4);
        assert_eq!(&bytes[nl + 1..], b"print(1)");
    }
}
