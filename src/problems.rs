//! Why a run or a verdict is not usable, in words a model (and a person) can
//! act on: shared by the loop (`agent`) and the checks beyond the schema
//! (`verify`), below both.

use crate::policy::Verdict;
use crate::sandbox::{Outcome, RunStatus};

/// The file in `/out` a program may write its result to instead of printing it.
pub(crate) const RESULT_FILE: &str = "result.json";

/// The last `n` lines of a text.
fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// Why an outcome is not usable, in words a model (and a person) can act on.
pub fn outcome_problem(o: &Outcome) -> Option<String> {
    match o.status {
        RunStatus::Ok | RunStatus::OutputLimit => None,
        // stderr keeps its head: after a flood of warnings the traceback
        // at the end is gone, and the model must be told so.
        RunStatus::Error if o.stderr_truncated => Some(format!(
            "the code failed (exit code {}), but it wrote more than the {} stderr limit, so stderr \
             was cut and the error at its end was lost; write less to stderr (silence warnings, no \
             per-row logging) so the traceback shows. The last lines that were kept:\n{}",
            o.exit_code.unwrap_or(-1),
            o.limits.stderr_cap,
            tail(&o.stderr, 5)
        )),
        RunStatus::Error => Some(format!(
            "the code failed (exit code {}). The end of stderr:\n{}",
            o.exit_code.unwrap_or(-1),
            tail(&o.stderr, 15)
        )),
        RunStatus::Timeout => Some(format!(
            "the code did not finish within the {} ms limit; make it faster (vectorise, read less)",
            o.limits.timeout.as_millis()
        )),
        RunStatus::Oom => Some(format!(
            "the code ran out of memory (limit {}); use less memory (read only needed columns, use chunks)",
            o.limits.memory
        )),
        RunStatus::Killed => Some(match o.signal {
            Some(signal) => format!("the code was killed by signal {signal}"),
            None => format!(
                "the run ended without the runner's report: {}",
                o.notes.join("; ")
            ),
        }),
        // Nothing about the code is known, or nothing it reported can be
        // believed: the loop stops (no repair).
        RunStatus::Lost | RunStatus::Tampered => engine_problem(o),
    }
}

/// Why a run must stop without a repair: the engine connection was lost,
/// so the fault is not in the code; or the run's record was tampered with,
/// so nothing it reported is taken and no model is asked to try again.
/// `None` for every other outcome.
pub fn engine_problem(o: &Outcome) -> Option<String> {
    match o.status {
        RunStatus::Lost => Some(
            "the connection to the Docker engine was lost while the code ran, so how it ended is \
             unknown; the run was stopped — check the engine (`compute-bot doctor`) and ask again"
                .to_string(),
        ),
        RunStatus::Tampered => Some(format!(
            "the run's record was tampered with, so nothing the code reported is taken and the \
             run was stopped: {}; the code and what the kernel and the engine saw are shown \
             below — read the code before you run anything like it",
            o.tampered.join("; ")
        )),
        _ => None,
    }
}

/// Why a run whose stdout was cut at the cap gave no readable result: the
/// JSON on the last line was lost with the rest. `None` when stdout was not
/// cut or the result came from `/out/result.json`.
pub(crate) fn truncated_output_problem(o: &Outcome, has_result_file: bool) -> Option<String> {
    (o.stdout_truncated && !has_result_file).then(|| {
        format!(
            "the code printed more than the {} stdout limit, so stdout was cut and the JSON result \
             on its last line was lost; print less (no large tables or per-row output), or write \
             the result to /out/{RESULT_FILE}",
            o.limits.stdout_cap
        )
    })
}

/// Findings as text lines for a repair request or a stop reason.
pub(crate) fn findings_text(v: &Verdict) -> String {
    v.findings
        .iter()
        .map(|f| {
            format!(
                "line {}:{} [{}] {} — `{}`",
                f.line, f.column, f.rule, f.message, f.snippet
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}
