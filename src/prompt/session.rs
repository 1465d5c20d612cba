//! A session of steps as the model sees it: the system prompt's paragraph
//! on steps and its reply format, reading a reply as a [`Move`] (look, final
//! or stop), and what the model is shown after each step (an observation,
//! each part within a budget; earlier ones within a total budget, the
//! oldest shortened first).
//!
//! The reply format, with a tool (`python_step`): `{"step": "look" | "final"
//! | "stop", "plan": "...", "code": "...", "reason": "..."}`. Without one:
//!
//! ~~~text
//! Step: look
//! Plan: count the status labels before deciding what counts as paid
//! ```python
//! df = pd.read_csv("/data/orders.csv")
//! df["status"].value_counts()
//! ```
//! ~~~
//!
//! or `Step: final` with the program that prints the JSON result, or
//! `Step: stop` with a `Reason:` line and no code.

use serde_json::{Value, json};

use super::{
    PLAN_MAX_CHARS, PromptContext, PromptError, RUN_PYTHON_TOOL, RepairNote, fence_data,
    framed_system_prompt, head_tail, hints_of, plan_of, problem_at, request_message,
};
use crate::markdown::{ReplyProblem, mask_think, reply_code, reply_python_blocks};
use crate::model::{ChatReply, ChatRequest, Finish, Message, Tool, excerpt};
use crate::policy::DataLevel;
use crate::sandbox::{Outcome, RunStatus};
use crate::units::format_duration;

/// The tool of a session: one step, or a stop.
const STEP_TOOL: &str = "python_step";
/// Most characters of a step's stdout shown (head and tail).
const STDOUT_CHARS: usize = 3_000;
/// Most characters of a step's last value shown.
const VALUE_CHARS: usize = 1_500;
/// Most characters of a step's traceback shown (its end).
const TRACEBACK_CHARS: usize = 2_000;
/// Most files named after a step.
const FILES_SHOWN: usize = 10;
/// Most characters of the earlier steps' observations in one request.
const EARLIER_CHARS: usize = 12_000;
/// What a shortened earlier observation keeps.
const SHORTENED_CHARS: usize = 600;
/// Most characters of a stop's reason kept.
const REASON_CHARS: usize = 1_000;

/// What the model asks for in a session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Move {
    /// Run `code` as the next step.
    Run {
        /// True for the final step (its printed JSON is the result).
        last: bool,
        /// What the step does, in the model's words.
        plan: Option<String>,
        /// The step's code.
        code: String,
        /// What was assumed to read the reply (told to the model).
        assumed: Vec<String>,
    },
    /// Stop without a result, for this reason in the model's words.
    Stop {
        /// Why.
        reason: String,
    },
}

/// The limits of a session, as the prompt states them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Budget {
    /// The most steps (model turns) of the session.
    pub(crate) max_steps: u32,
    /// Turns left, this one included.
    pub(crate) left: u32,
    /// The code time of the whole session.
    pub(crate) code_time: std::time::Duration,
}

/// One earlier turn of the session: what the model said (as it is shown
/// back) and what it was told after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Turn {
    /// The step's code (empty when the reply held none).
    pub(crate) code: String,
    /// The model's turn as shown back to it.
    pub(crate) said: String,
    /// What it was told after it.
    pub(crate) observation: String,
}

impl Turn {
    /// A turn that ran (or tried to run) `code`.
    pub(crate) fn of(last: bool, plan: Option<&str>, code: &str, observation: String) -> Turn {
        let kind = if last { "final" } else { "look" };
        let plan = plan.map(|p| format!("Plan: {p}\n")).unwrap_or_default();
        Turn {
            code: code.to_string(),
            said: format!("Step: {kind}\n{plan}```python\n{}\n```", code.trim_end()),
            observation,
        }
    }

    /// A turn whose reply held no usable step.
    pub(crate) fn unusable(problem: &str, data: DataLevel) -> Turn {
        Turn {
            code: String::new(),
            said: "(the reply held no usable step)".to_string(),
            observation: format!(
                "Your reply could not be used: {}\nIn this session reply with `Step: look` or \
`Step: final`, a `Plan:` line and one ```python block, or `Step: stop` and a `Reason:` line.",
                problem_at(problem.trim(), data)
            ),
        }
    }
}

/// The tool the model is made to call in a session.
pub(crate) fn step_tool() -> Tool {
    Tool {
        name: STEP_TOOL.to_string(),
        description: "Run the next step in the session's Python interpreter (its variables stay \
for later steps), or stop. `step`: `look` (you see its output), `final` (its printed JSON is the \
result) or `stop` (no result; say why in `reason`). `plan`: one or two short lines. `code`: the \
step's Python source without Markdown fences (empty for `stop`)."
            .to_string(),
        parameters: json!({
            "type": "object",
            "properties": {
                "step": {"type": "string", "enum": ["look", "final", "stop"]},
                "plan": {"type": "string", "description": "What this step does, 1-2 short lines."},
                "code": {"type": "string", "description": "The step's Python code (empty for stop)."},
                "reason": {"type": "string", "description": "For stop: why, in 1-2 sentences."}
            },
            "required": ["step", "plan"],
            "additionalProperties": false
        }),
    }
}

/// How a session's prompt begins.
const SESSION_INTRO: &str = "You answer a goal by running Python 3 in steps, like the cells of a \
notebook, in one locked-down sandbox. The interpreter stays between steps: the variables, imports and \
DataFrames of one step are there in the next. After a look step you see its real output; the final \
step's printed JSON is the result.";

/// The paragraph on steps and the reply format of a session.
fn session_format(ctx: &PromptContext, budget: Budget) -> String {
    let shown = if ctx.data == DataLevel::Preview {
        format!(
            "you see the head and tail of its stdout (about {STDOUT_CHARS} characters), the value of its \
last expression, the end of a traceback and the files it wrote"
        )
    } else {
        "the policy lets no printed data leave the sandbox, so you see only whether it worked and the kind \
of error: look only when that helps"
            .to_string()
    };
    format!(
        "Steps:
- Look first when the data is unfamiliar or messy (the previews show a few rows; labels, dates, units, \
sentinels, total rows or partial periods may hide in the rest): a short look step prints what you need \
to decide (value counts of the categories, a few date strings, min and max, nulls, the last rows). Then \
compute in the final step, using what the looks showed.
- A simple question on clean data is one final step: do not look for its own sake.
- After a step {shown}. Print little: value counts, head(), describe(), not whole tables.
- A step that fails leaves the state it reached: the next step continues from there (fix only what \
failed; do not reload everything).
- The final step prints the JSON result as the last line of stdout (the output contract below); it \
may use every variable the earlier steps defined.
- At most {steps} steps in all (refused and failed ones count) and {code_time} of code time for the \
whole session; each step also has the wall-clock limit.
- Stop, with the reason in one or two sentences, when the goal needs no computation (a purely textual \
task) or the files cannot answer it (a column is missing, the period is not covered). Never guess a \
result.

Reply format: call the `python_step` tool (`step`, `plan`, `code`, `reason` as it describes them). If no \
tool is offered, reply with a line `Step: look` or `Step: final`, then a `Plan:` line, then exactly one \
```python fenced block with the step's code, and nothing after it; or with a line `Step: stop` and a \
`Reason:` line, and no code.",
        steps = budget.max_steps,
        code_time = format_duration(budget.code_time),
    )
}

/// The request for the next step: the goal and inputs, then each earlier
/// turn and what followed it (earlier observations within a total budget,
/// the oldest shortened first), and the steps left.
pub(crate) fn step_request(ctx: &PromptContext, turns: &[Turn], budget: Budget) -> ChatRequest {
    let mut messages = vec![Message::user(request_message(ctx))];
    let shown = within_budget(turns);
    for (i, (turn, observation)) in turns.iter().zip(shown).enumerate() {
        messages.push(Message::assistant(turn.said.clone()));
        let next = if i + 1 == turns.len() {
            format!("\n\n{}", next_line(budget.left))
        } else {
            String::new()
        };
        messages.push(Message::user(format!("{observation}{next}")));
    }
    let notes: Vec<RepairNote> = turns
        .iter()
        .map(|t| RepairNote {
            code: t.code.clone(),
            problem: String::new(),
        })
        .collect();
    ChatRequest {
        system: framed_system_prompt(
            ctx,
            &hints_of(ctx, &notes),
            SESSION_INTRO,
            &session_format(ctx, budget),
        ),
        messages,
        max_tokens: None,
        tool: Some(step_tool()),
    }
}

/// What the model is told about the steps left.
fn next_line(left: u32) -> String {
    match left {
        0 | 1 => {
            "One step is left: it must be the final step (`Step: final`) or a stop (`Step: stop`)."
                .to_string()
        }
        n => format!(
            "{n} steps are left. Reply with the next step: `Step: look` or `Step: final` with its code, \
or `Step: stop` with a reason."
        ),
    }
}

/// The observations as sent: the latest whole, the earlier ones within
/// [`EARLIER_CHARS`], the oldest shortened first (to its head and tail,
/// then to its first line).
fn within_budget(turns: &[Turn]) -> Vec<String> {
    let mut shown: Vec<String> = turns.iter().map(|t| t.observation.clone()).collect();
    let earlier = shown.len().saturating_sub(1);
    let size = |v: &[String]| v.iter().map(|s| s.chars().count()).sum::<usize>();
    for level in 0..2 {
        for i in 0..earlier {
            if size(&shown[..earlier]) <= EARLIER_CHARS {
                return shown;
            }
            shown[i] = if level == 0 {
                head_tail(&shown[i], SHORTENED_CHARS)
            } else {
                format!(
                    "{} (the rest is left out to keep the request small)",
                    shown[i].lines().next().unwrap_or_default()
                )
            };
        }
    }
    shown
}

/// Keeps the head and the tail of a long text in halves, on line
/// boundaries when it can, and says how much was cut.
fn ends(text: &str, max: usize) -> String {
    let n = text.chars().count();
    if n <= max {
        return text.to_string();
    }
    let head: String = text.chars().take(max / 2).collect();
    let tail: String = text.chars().skip(n - max / 2).collect();
    let head = head.rsplit_once('\n').map_or(head.as_str(), |(h, _)| h);
    let tail = tail.split_once('\n').map_or(tail.as_str(), |(_, t)| t);
    format!(
        "{head}\n… ({} characters cut) …\n{tail}",
        n - head.len() - tail.len()
    )
}

/// What the model is told after step `number` ran: how it ended, its
/// stdout (head and tail), the value of its last expression, the traceback,
/// the files it wrote, within budgets and the policy's data level;
/// `problem`: why a final step's result is not usable; `assumed`: how its
/// reply was read.
pub(crate) fn observe(
    number: u32,
    last: bool,
    outcome: &Outcome,
    problem: Option<&str>,
    assumed: &[String],
    data: DataLevel,
) -> String {
    let kind = if last { "final" } else { "look" };
    let how = match outcome.status {
        RunStatus::Ok | RunStatus::OutputLimit => "ran",
        RunStatus::Error => "raised an error; the session goes on with what the step set before it",
        _ => "ended the session",
    };
    let mut s = format!(
        "Step {number} ({kind}) {how} ({}).\n",
        format_duration(std::time::Duration::from_millis(outcome.duration_ms))
    );
    for a in assumed {
        s.push_str(&format!("Assumed: {a}.\n"));
    }
    s.push_str(&printed(outcome, data));
    if let Some(value) = outcome.value.as_deref().filter(|v| !v.is_empty()) {
        if data == DataLevel::Preview {
            s.push_str("Value of the last expression:\n");
            s.push_str(&fence_data("value", &ends(value, VALUE_CHARS)));
            s.push('\n');
        } else {
            s.push_str("Value of the last expression: (not shown: policy model.data)\n");
        }
    }
    if outcome.status == RunStatus::Error && !outcome.stderr.trim().is_empty() {
        s.push_str("Traceback (the end of stderr):\n");
        let tb = ends(&outcome.stderr, TRACEBACK_CHARS);
        s.push_str(&fence_data("stderr", &problem_at(&tb, data)));
        s.push('\n');
    }
    if !outcome.artifacts.is_empty() {
        let names: Vec<String> = outcome
            .artifacts
            .iter()
            .take(FILES_SHOWN)
            .map(|a| format!("{} ({} bytes)", a.name, a.size))
            .collect();
        let more = outcome.artifacts.len().saturating_sub(FILES_SHOWN);
        let more = if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        };
        s.push_str(&format!(
            "Files written to /out: {}{more}\n",
            names.join(", ")
        ));
    }
    if let Some(p) = problem {
        s.push_str(&format!(
            "The result is not usable: {}\n",
            problem_at(p.trim(), data)
        ));
    }
    s.trim_end().to_string()
}

/// The stdout part of an observation.
fn printed(outcome: &Outcome, data: DataLevel) -> String {
    let out = &outcome.stdout;
    if out.trim().is_empty() {
        return "stdout: (nothing printed)\n".to_string();
    }
    let lines = out.lines().count();
    let cut = if outcome.stdout_truncated {
        ", cut at the stdout limit"
    } else {
        ""
    };
    if data != DataLevel::Preview {
        return format!("stdout: {lines} lines (not shown: policy model.data){cut}\n");
    }
    format!(
        "stdout ({lines} lines{cut}):\n{}\n",
        fence_data("stdout", &ends(out.trim_end(), STDOUT_CHARS))
    )
}

/// What the model is told when the policy refused a step before it ran.
pub(crate) fn observe_refused(findings: &str) -> String {
    format!(
        "The policy refused this step before it ran; nothing ran and the session's state is \
unchanged:\n{findings}\nThe policy is fixed and will not be changed: write the step without the \
refused imports and calls, using only the allowed modules."
    )
}

/// Reads the model's reply in a session. A cut reply, an empty one, a
/// code block left open or empty, another tool: errors whose text goes
/// back to the model (as for one program). A refusal of the provider is a
/// stop in the model's words.
pub(crate) fn parse_move(reply: &ChatReply) -> Result<Move, PromptError> {
    if reply.finish == Finish::Length {
        return Err(PromptError::Cut {
            budget: reply.max_tokens,
        });
    }
    if let Some((name, args)) = &reply.tool_call {
        return move_of_tool(name, args);
    }
    if !reply.text.trim().is_empty() {
        return move_of_text(&reply.text);
    }
    if let Some(r) = &reply.refusal {
        return Ok(Move::Stop {
            reason: excerpt(r.trim(), REASON_CHARS),
        });
    }
    Err(PromptError::Empty)
}

/// A `python_step` (or `run_python`) call as a move.
fn move_of_tool(name: &str, args: &Value) -> Result<Move, PromptError> {
    let text = |k: &str| {
        args.get(k)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
    };
    let code = text("code");
    if name != STEP_TOOL && name != RUN_PYTHON_TOOL && code.is_none() {
        return Err(PromptError::WrongTool(excerpt(name, 60)));
    }
    let step = text("step").map(str::to_ascii_lowercase);
    if step.as_deref() == Some("stop") {
        let reason = text("reason")
            .or(text("plan"))
            .unwrap_or("(no reason given)");
        return Ok(Move::Stop {
            reason: excerpt(reason, REASON_CHARS),
        });
    }
    let Some(code) = code else {
        return Err(PromptError::EmptyCode);
    };
    let code = match reply_code(code) {
        Ok(found) => found.block.code,
        Err(_) => code.to_string(),
    };
    let code = format!("{}\n", code.trim_matches('\n').trim_end());
    let mut assumed = Vec::new();
    let last = match (step.as_deref(), name) {
        (Some("look"), _) => false,
        (Some("final"), _) => true,
        (_, RUN_PYTHON_TOOL) => true,
        _ => inferred(&code, &mut assumed),
    };
    Ok(Move::Run {
        last,
        plan: text("plan").map(|p| excerpt(p, PLAN_MAX_CHARS)),
        code,
        assumed,
    })
}

/// Whether code without a `Step:` marker is the final step: it is when it
/// prints (or writes) a JSON result. Says what was assumed.
fn inferred(code: &str, assumed: &mut Vec<String>) -> bool {
    let last = code.contains("json.dumps") || code.contains("result.json");
    assumed.push(if last {
        "the reply named no step, so it ran as the final step (its code prints JSON)".to_string()
    } else {
        "the reply named no step, so it ran as a look step (its code prints no JSON result)"
            .to_string()
    });
    last
}

/// A `Step:` marker of a text reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mark {
    Look,
    Final,
    Stop,
}

/// The word of a step marker (`look`, `final`, `stop`).
fn mark_of(word: &str) -> Option<Mark> {
    match word.to_ascii_lowercase().as_str() {
        "look" => Some(Mark::Look),
        "final" => Some(Mark::Final),
        "stop" => Some(Mark::Stop),
        _ => None,
    }
}

/// The `Step: <kind>` lines of `text` with their byte offsets: at the start
/// of a line, any case, Markdown emphasis or a heading around it, a step
/// number allowed (`**Step 2:** look`).
fn marks(text: &str) -> Vec<(usize, Mark)> {
    let mut out = Vec::new();
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        let t = line.trim_start_matches(['*', '_', '#', '>', '-', ' ', '\t']);
        let lower = t.to_ascii_lowercase();
        if let Some(rest) = lower.strip_prefix("step") {
            let rest = rest.trim_start_matches(|c: char| c.is_ascii_digit() || c == ' ');
            if let Some(after) = rest
                .strip_prefix(|c| c == ':' || c == '*')
                .map(|r| r.trim_start_matches(['*', '_', ':', ' ', '`']))
            {
                let word: String = after
                    .chars()
                    .take_while(char::is_ascii_alphabetic)
                    .collect();
                if let Some(m) = mark_of(&word) {
                    out.push((at, m));
                }
            }
        }
        at += line.len();
    }
    out
}

/// The reason of a `Step: stop` reply: after `Reason:`, else the prose
/// without the marker line.
fn stop_reason(text: &str) -> String {
    let lower = text.to_ascii_lowercase();
    let reason = match lower.find("reason:") {
        Some(i) => text[i + "reason:".len()..].to_string(),
        None => text
            .lines()
            .filter(|l| marks(l).is_empty())
            .collect::<Vec<_>>()
            .join("\n"),
    };
    let reason = reason.trim().trim_matches(['*', '_']).trim();
    if reason.is_empty() {
        "(no reason given)".to_string()
    } else {
        excerpt(reason, REASON_CHARS)
    }
}

/// A text reply as a move: `Step: stop` stops; otherwise the step's code is
/// the last python block, its kind the block's tag (```` ```python look ````)
/// or the last marker before it, else inferred. A reply holding a look and a
/// final step runs the first look only (the final was written before the
/// look's output was seen).
fn move_of_text(text: &str) -> Result<Move, PromptError> {
    let text = text.replace("\r\n", "\n");
    let visible = mask_think(&text);
    let blocks = reply_python_blocks(&text);
    // A `# Step: ...` comment inside code is no marker.
    let marked: Vec<(usize, Mark)> = marks(&visible)
        .into_iter()
        .filter(|(at, _)| !blocks.iter().any(|b| b.span.contains(at)))
        .collect();
    if marked.last().is_some_and(|(_, m)| *m == Mark::Stop) {
        return Ok(Move::Stop {
            reason: stop_reason(&visible),
        });
    }
    let kind_at = |start: usize, tag: Option<String>| {
        tag.as_deref().and_then(mark_of).or_else(|| {
            marked
                .iter()
                .rev()
                .find(|(at, _)| *at < start)
                .map(|(_, m)| *m)
        })
    };
    let kinds: Vec<Option<Mark>> = blocks
        .iter()
        .map(|b| kind_at(b.span.start, b.tag()))
        .collect();
    let mut assumed = Vec::new();
    let first_look = kinds.iter().position(|k| *k == Some(Mark::Look));
    if let Some(i) = first_look.filter(|_| kinds.contains(&Some(Mark::Final)))
        && blocks[i].closed
        && !blocks[i].code.trim().is_empty()
    {
        assumed.push(
            "the reply held a look and a final step; only the look ran, so that you see its output first"
                .to_string(),
        );
        let prose = &visible[..blocks[i].span.start];
        return Ok(Move::Run {
            last: false,
            plan: plan_without_marks(prose),
            code: format!("{}\n", blocks[i].code.trim_matches('\n').trim_end()),
            assumed,
        });
    }
    let found = reply_code(&text).map_err(|p| match p {
        ReplyProblem::NoCode => PromptError::NoCode {
            excerpt: excerpt(visible.trim(), 120),
        },
        ReplyProblem::Unclosed => PromptError::Unclosed,
        ReplyProblem::Empty => PromptError::EmptyCode,
    })?;
    if blocks.len() > 1 {
        assumed.push(format!(
            "the reply held {} python blocks; only the last one ran",
            blocks.len()
        ));
    }
    let code = format!("{}\n", found.block.code.trim_matches('\n').trim_end());
    let last = match kind_at(found.block.span.start, found.block.tag()) {
        Some(Mark::Look) => false,
        Some(Mark::Final) => true,
        _ => inferred(&code, &mut assumed),
    };
    Ok(Move::Run {
        last,
        plan: plan_without_marks(&found.prose),
        code,
        assumed,
    })
}

/// The plan in the prose before a step's code, without its marker lines.
fn plan_without_marks(prose: &str) -> Option<String> {
    let kept: Vec<&str> = prose.lines().filter(|l| marks(l).is_empty()).collect();
    plan_of(&kept.join("\n"))
}

#[cfg(test)]
#[path = "session_tests.rs"]
mod tests;
