//! Runs as Jupyter notebooks, and notebooks as code: the `.ipynb` a run is
//! written as (nbformat 4.5, cell ids included, valid against nbformat's
//! JSON schema), and the code cells read from a notebook or from `# %%`
//! percent-format text ([`cells`]).
//!
//! A code cell holds the executed code byte for byte and the run's real
//! outputs: stdout and stderr as `stream` outputs, a value as an
//! `execute_result` (`text/plain`, and `text/html` when there is one), a
//! Python traceback as an `error`. Its metadata (`compute_bot`) carries the
//! step's code sha256, its duration and the run record's id — the name of
//! the container it ran in (`outcome.container` in the report), unique per
//! run. Nothing in the notebook is signed, so Jupyter opens it untrusted
//! (HTML sanitized, no script run) and GitHub renders it sanitized.

pub mod cells;

use serde_json::{Map, Value, json};

use crate::sandbox::{Artifact, Outcome, sha256_hex};

/// The notebook format written: nbformat 4, minor 5 (the first with cell ids).
const NBFORMAT: (u32, u32) = (4, 5);

/// One output of a code cell, in nbformat's terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    /// Text the code wrote to `stdout` or `stderr` (`name`).
    Stream {
        /// `stdout` or `stderr`.
        name: &'static str,
        /// The text as captured.
        text: String,
    },
    /// The value of the cell's last expression, as a notebook shows it.
    Value {
        /// Its `repr`.
        plain: String,
        /// Its HTML (a DataFrame's table), when it has one.
        html: Option<String>,
    },
    /// The exception that ended the cell.
    Error {
        /// The exception's class name (`ValueError`).
        ename: String,
        /// Its message.
        evalue: String,
        /// The traceback, one line a string.
        traceback: Vec<String>,
    },
}

/// One executed step: a code cell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// The exact code that ran.
    pub code: String,
    /// Its outputs, in order.
    pub outputs: Vec<Output>,
    /// Milliseconds the code ran.
    pub duration_ms: u64,
    /// The run record's id (the container's name).
    pub record_id: String,
    /// How the run ended (`ok`, `error`, `timeout`, ...).
    pub status: String,
    /// True when stdout or stderr was cut at the sandbox's cap.
    pub truncated: bool,
}

/// A notebook of executed steps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notebook {
    /// The steps, in the order they ran.
    pub steps: Vec<Step>,
    /// The interpreter's version (the image's `org.compute-bot.python` label).
    pub python: Option<String>,
}

/// Splits a text into nbformat's list of lines, each keeping its line
/// break: joined, they are the text byte for byte.
fn lines(text: &str) -> Value {
    Value::Array(
        text.split_inclusive('\n')
            .map(|l| Value::String(l.to_string()))
            .collect(),
    )
}

impl Output {
    /// The output as nbformat JSON; `count` is the cell's execution count.
    fn to_json(&self, count: usize) -> Value {
        match self {
            Output::Stream { name, text } => {
                json!({"output_type": "stream", "name": name, "text": lines(text)})
            }
            Output::Value { plain, html } => {
                let mut data = Map::new();
                data.insert("text/plain".into(), lines(plain));
                if let Some(h) = html {
                    data.insert("text/html".into(), lines(h));
                }
                json!({"output_type": "execute_result", "execution_count": count,
                       "data": data, "metadata": {}})
            }
            Output::Error {
                ename,
                evalue,
                traceback,
            } => json!({"output_type": "error", "ename": ename, "evalue": evalue,
                        "traceback": traceback}),
        }
    }
}

impl Step {
    /// The step as an nbformat code cell; `n` is its 1-based position.
    fn to_json(&self, n: usize) -> Value {
        let mut meta = json!({
            "code_sha256": sha256_hex(self.code.as_bytes()),
            "duration_ms": self.duration_ms,
            "record_id": self.record_id,
            "status": self.status,
        });
        if self.truncated {
            meta["output_truncated"] = Value::Bool(true);
        }
        json!({
            "id": format!("step-{n}"),
            "cell_type": "code",
            "metadata": {"compute_bot": meta},
            "execution_count": n,
            "source": lines(&self.code),
            "outputs": self.outputs.iter().map(|o| o.to_json(n)).collect::<Vec<_>>(),
        })
    }
}

impl Notebook {
    /// The notebook as nbformat 4.5 JSON.
    pub fn to_json(&self) -> Value {
        let mut language = json!({"name": "python", "file_extension": ".py",
                                  "mimetype": "text/x-python"});
        if let Some(v) = &self.python {
            language["version"] = Value::String(v.clone());
        }
        json!({
            "nbformat": NBFORMAT.0,
            "nbformat_minor": NBFORMAT.1,
            "metadata": {
                "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
                "language_info": language,
                "compute_bot": {"version": env!("CARGO_PKG_VERSION")},
            },
            "cells": self.steps.iter().enumerate().map(|(i, s)| s.to_json(i + 1)).collect::<Vec<_>>(),
        })
    }

    /// The `.ipynb` file's bytes (indented JSON, one line break at the end).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut b = serde_json::to_vec_pretty(&self.to_json()).expect("a notebook serializes");
        b.push(b'\n');
        b
    }

    /// The notebook of one run: a single code cell with the exact code and
    /// the outcome's real output.
    pub fn of_run(code: &str, outcome: &Outcome) -> Notebook {
        Notebook::of_cells(&[(code, outcome)])
    }

    /// The notebook of a session's steps (or of one run): one code cell per
    /// step, its exact code and real outputs — stdout, stderr, the value of
    /// its last expression as `Out[n]`, the traceback — with the step's
    /// sha256, duration and status in the cell's metadata.
    pub fn of_cells(cells: &[(&str, &Outcome)]) -> Notebook {
        Notebook {
            steps: cells
                .iter()
                .map(|(code, outcome)| Step {
                    code: code.to_string(),
                    outputs: outputs_of(outcome),
                    duration_ms: outcome.duration_ms,
                    record_id: outcome.container.clone(),
                    status: outcome.status.as_str().to_string(),
                    truncated: outcome.stdout_truncated || outcome.stderr_truncated,
                })
                .collect(),
            python: cells
                .last()
                .and_then(|(_, o)| o.image.labels.get("org.compute-bot.python").cloned()),
        }
    }
}

/// The outputs of a run: stdout, then stderr — and when the code failed
/// with a Python traceback at the end of stderr, that traceback as an
/// `error` output after whatever stderr held before it.
fn outputs_of(o: &Outcome) -> Vec<Output> {
    let mut out = Vec::new();
    if !o.stdout.is_empty() {
        out.push(Output::Stream {
            name: "stdout",
            text: o.stdout.clone(),
        });
    }
    let failed = o.exit_code.is_some_and(|c| c != 0);
    let (before, error) = match failed.then(|| split_traceback(&o.stderr)).flatten() {
        Some((before, error)) => (before, Some(error)),
        None => (o.stderr.as_str(), None),
    };
    if !before.is_empty() {
        out.push(Output::Stream {
            name: "stderr",
            text: before.to_string(),
        });
    }
    let value = o
        .value
        .as_deref()
        .filter(|v| !v.is_empty() && error.is_none());
    out.extend(error);
    if let Some(plain) = value {
        out.push(Output::Value {
            plain: plain.to_string(),
            html: None,
        });
    }
    out
}

/// The last Python traceback of `stderr` when it runs to the end: the text
/// before it, and the traceback as an error output; `None` when stderr does
/// not end in one (a kill, a timeout, text the code printed itself).
fn split_traceback(stderr: &str) -> Option<(&str, Output)> {
    const HEAD: &str = "Traceback (most recent call last):";
    let start = stderr
        .rmatch_indices(HEAD)
        .map(|(i, _)| i)
        .find(|&i| i == 0 || stderr.as_bytes()[i - 1] == b'\n')?;
    let tb: Vec<String> = stderr[start..].lines().map(str::to_string).collect();
    let last = tb.iter().rev().find(|l| !l.trim().is_empty())?;
    let (ename, evalue) = match last.split_once(": ") {
        Some((n, v)) => (n, v),
        None => (last.as_str(), ""),
    };
    let name_ok = !ename.is_empty()
        && !ename.starts_with(' ')
        && ename
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '.');
    if !name_ok || tb.len() < 2 {
        return None;
    }
    let error = Output::Error {
        ename: ename.to_string(),
        evalue: evalue.to_string(),
        traceback: tb.clone(),
    };
    Some((&stderr[..start], error))
}

/// A file name for `stem` that is not in `taken`: `<stem>.ipynb`, else
/// `<stem>.run.ipynb`, else `<stem>.run-2.ipynb`, and so on. `stem` is cut
/// to letters, digits, `-`, `_` and `.` (anything else becomes `_`; empty
/// becomes `answer`).
pub(crate) fn file_name(stem: &str, taken: &[&str]) -> String {
    let mut clean: String = stem
        .chars()
        .take(100)
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if clean.trim_matches('.').is_empty() {
        clean = "answer".into();
    }
    let candidates = std::iter::once(format!("{clean}.ipynb"))
        .chain(std::iter::once(format!("{clean}.run.ipynb")))
        .chain((2..).map(|n| format!("{clean}.run-{n}.ipynb")));
    candidates
        .into_iter()
        .find(|c| !taken.contains(&c.as_str()))
        .expect("an unbounded list has a free name")
}

/// The notebook of one run as a file beside the run's own: named from
/// `stem` ([`file_name`]) so that it takes no name of the run's files nor
/// one of `taken`.
/// `cells`: the code that ran and its outcome, step by step (one for a
/// run of one program); the files the last one left are the run's.
pub(crate) fn run_file(cells: &[(&str, &Outcome)], stem: &str, taken: &[&str]) -> Artifact {
    let mut names: Vec<&str> = cells
        .last()
        .map(|(_, o)| o.artifacts.iter().map(|a| a.name.as_str()).collect())
        .unwrap_or_default();
    names.extend(taken);
    let bytes = Notebook::of_cells(cells).to_bytes();
    Artifact {
        name: file_name(stem, &names),
        size: bytes.len() as u64,
        sha256: sha256_hex(&bytes),
        bytes,
    }
}

#[cfg(test)]
mod tests;
