//! A watch's state between runs: the history kept in the hidden state
//! marker of its sticky comment, what moved since the previous run, and the
//! sticky comment itself (edited in place; a notification when something
//! moved).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::github::rest::client::GitHubError;
use crate::github::texts;
use crate::github::thread::Ctx;
use crate::watch_spec::{Watch, changes};

use super::runner::WatchRun;

/// Most history entries kept in a sticky comment.
const HISTORY_MAX: usize = 20;
/// Largest history (JSON bytes; hex doubles it in the comment).
const STATE_MAX_BYTES: usize = 16 * 1024;

/// One entry of a watch's history (in the sticky comment's state marker).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Entry {
    /// When (UTC, `YYYY-MM-DD HH:MM`).
    at: String,
    #[serde(default)]
    values: BTreeMap<String, Value>,
    /// The checks that failed, with why.
    #[serde(default)]
    failing: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    code_sha256: Option<String>,
    /// The workflow run (`GITHUB_RUN_ID`) that wrote it: a re-run of that
    /// run replaces it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    run_id: Option<String>,
    /// Its attempt (`GITHUB_RUN_ATTEMPT`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    attempt: Option<u32>,
}

/// The hidden state of a sticky comment.
#[derive(Debug, Default, Serialize, Deserialize)]
struct State {
    #[serde(default)]
    history: Vec<Entry>,
}

impl Entry {
    fn of(run: &WatchRun, at: &str, run_id: &str, attempt: u32) -> Entry {
        Entry {
            at: at.to_string(),
            run_id: Some(run_id.to_string()),
            attempt: Some(attempt),
            values: run.values.clone(),
            failing: run
                .failing()
                .into_iter()
                .map(|c| (c.check.clone(), c.error.clone().unwrap_or_default()))
                .collect(),
            error: run.error.clone(),
            code_sha256: run.code_sha256.clone(),
        }
    }
}

impl State {
    /// Adds `entry` as the newest row; a re-run of a workflow run (same
    /// `run_id`, a later attempt) replaces that run's row instead of adding
    /// a second one.
    fn record(&mut self, entry: Entry) {
        if let Some(id) = &entry.run_id {
            self.history.retain(|e| e.run_id.as_ref() != Some(id));
        }
        self.history.push(entry);
    }
}

/// What moved from `prev` to `now` under `tolerance`.
fn moved<'a>(prev: &'a Entry, now: &'a Entry, tolerance: f64) -> texts::Moved<'a> {
    let mut m = texts::Moved {
        values: Vec::new(),
        started_failing: Vec::new(),
        stopped_failing: Vec::new(),
        result: None,
    };
    match (&prev.error, &now.error) {
        (None, Some(e)) => m.result = Some(Err(e.as_str())),
        (Some(_), None) => m.result = Some(Ok(())),
        (Some(_), Some(_)) => return m,
        (None, None) => {}
    }
    if now.error.is_none() && prev.error.is_none() {
        for c in changes(&prev.values, &now.values, tolerance) {
            let key = now
                .values
                .get_key_value(&c.path)
                .or_else(|| prev.values.get_key_value(&c.path))
                .map(|(k, _)| k.as_str())
                .unwrap_or_default();
            m.values
                .push((key, prev.values.get(key), now.values.get(key)));
        }
        for (c, why) in &now.failing {
            if !prev.failing.contains_key(c) {
                m.started_failing.push((c.as_str(), why.as_str()));
            }
        }
        for c in prev.failing.keys() {
            if !now.failing.contains_key(c) {
                m.stopped_failing.push(c.as_str());
            }
        }
    }
    m
}

/// A line chart of the history (through the result charts of
/// [`crate::render`], which pick the value to draw: one that names a
/// measure, e.g. `/total`, else the last); over the runs that have every
/// numeric value of the newest run (at most 11); none with fewer than two.
fn history_chart(history: &[Entry]) -> Option<String> {
    let newest = history.last()?;
    let keys: Vec<&String> = newest
        .values
        .iter()
        .filter(|(_, v)| v.is_number())
        .map(|(k, _)| k)
        .take(11)
        .collect();
    if keys.is_empty() {
        return None;
    }
    let points: Vec<Value> = history
        .iter()
        .filter(|e| {
            keys.iter()
                .all(|k| e.values.get(*k).is_some_and(Value::is_number))
        })
        .map(|e| {
            let mut m = serde_json::Map::new();
            m.insert("date".into(), Value::String(e.at.clone()));
            for k in &keys {
                m.insert((*k).clone(), e.values[*k].clone());
            }
            Value::Object(m)
        })
        .collect();
    if points.len() < 2 {
        return None;
    }
    crate::render::chart_for(&Value::Array(points), None)
}

/// Keeps the last [`HISTORY_MAX`] entries, and fewer while the JSON is over
/// [`STATE_MAX_BYTES`] (so the comment stays far below GitHub's 65,536
/// characters); returns the JSON.
fn bounded(state: &mut State) -> Vec<u8> {
    let drop = state.history.len().saturating_sub(HISTORY_MAX);
    state.history.drain(..drop);
    let mut json = serde_json::to_vec(&state).unwrap_or_default();
    while json.len() > STATE_MAX_BYTES && state.history.len() > 1 {
        state.history.remove(0);
        json = serde_json::to_vec(&state).unwrap_or_default();
    }
    json
}

/// Edits (or creates) the sticky comment of `w` on `issue` with this run
/// added to its history, and posts the notification when something moved;
/// returns the sticky comment's link.
pub(super) async fn keep_sticky(
    ctx: &Ctx<'_>,
    w: &Watch,
    run: &WatchRun,
    issue: u64,
    at: &str,
) -> Result<String, GitHubError> {
    let marker = texts::watch_marker(&w.name);
    // Only the bot's own comments count: nobody can plant the marker.
    let found = ctx.gh.find_tracking_comment(issue, &marker).await?;
    let mut state: State = found
        .as_ref()
        .and_then(|(_, body)| texts::read_watch_state(body))
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    let now = Entry::of(run, at, &ctx.env.run_id, ctx.env.run_attempt);
    // Compared with what the comment shows last (a re-run: its own first
    // attempt), so a move is announced once.
    let prev = state.history.last().cloned();
    state.record(now.clone());
    let json = bounded(&mut state);
    let state_marker = texts::watch_state_marker(&json);
    let rows: Vec<texts::HistoryRow<'_>> = state
        .history
        .iter()
        .map(|e| texts::HistoryRow {
            at: &e.at,
            values: &e.values,
            failing: e.failing.len(),
            error: e.error.as_deref(),
        })
        .collect();
    let views = run.views();
    let chart = history_chart(&state.history);
    let m = prev.as_ref().map(|p| moved(p, &now, w.tolerance));
    let body = texts::watch_sticky(&texts::Sticky {
        name: &w.name,
        file: &w.file,
        code_sha256: run.code_sha256.as_deref(),
        values: &run.values,
        checks: &views,
        error: run.error.as_deref(),
        history: &rows,
        tolerance: w.tolerance,
        run_url: &ctx.env.run_url(),
        state: &state_marker,
        chart: chart.as_deref(),
        moved: m.as_ref(),
    });
    let id = match found {
        Some((id, _)) => {
            ctx.gh.update_comment(id, &body).await?;
            id
        }
        None => ctx.gh.create_comment(issue, &body).await?,
    };
    let url = ctx.comment_url(issue, id);
    if let Some(m) = m
        && !m.is_empty()
    {
        ctx.gh
            .create_comment(issue, &texts::watch_notification(&w.name, &url, &m))
            .await?;
    }
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::watch_spec::leaves;
    use serde_json::json;

    fn entry(values: Value, failing: &[&str], error: Option<&str>) -> Entry {
        Entry {
            at: "2026-01-01 00:00".into(),
            values: leaves(&values),
            failing: failing
                .iter()
                .map(|c| (c.to_string(), "the expression is false".into()))
                .collect(),
            error: error.map(str::to_string),
            code_sha256: None,
            run_id: None,
            attempt: None,
        }
    }

    #[test]
    fn a_re_run_replaces_its_own_row() {
        let row = |t: i64, run: &str, attempt: u32| Entry {
            run_id: Some(run.into()),
            attempt: Some(attempt),
            ..entry(json!({"total": t}), &[], None)
        };
        let mut state = State {
            // An older history without run ids stays as it is.
            history: vec![entry(json!({"total": 1}), &[], None)],
        };
        state.record(row(10, "5", 1));
        state.record(row(20, "6", 1));
        state.record(row(21, "6", 2));
        let totals: Vec<(Value, Option<u32>)> = state
            .history
            .iter()
            .map(|e| (e.values["/total"].clone(), e.attempt))
            .collect();
        assert_eq!(
            totals,
            [(json!(1), None), (json!(10), Some(1)), (json!(21), Some(2))]
        );
        // A re-run of an older run: its row moves to the end, still once.
        state.record(row(11, "5", 2));
        let runs: Vec<Option<&str>> = state.history.iter().map(|e| e.run_id.as_deref()).collect();
        assert_eq!(runs, [None, Some("6"), Some("5")]);
    }

    #[test]
    fn the_history_chart_is_a_line_over_the_dates() {
        let h: Vec<Entry> = [40, 42, 60]
            .iter()
            .enumerate()
            .map(|(i, t)| Entry {
                at: format!("2026-01-0{} 06:00", i + 1),
                ..entry(json!({"name": "x", "rows": 2, "total": t}), &[], None)
            })
            .collect();
        let c = history_chart(&h).unwrap();
        assert!(c.starts_with("```mermaid\nxychart-beta"), "{c}");
        assert!(c.contains("line [40, 42, 60]"), "{c}");
        assert!(c.contains("2026-01-03 06:00"), "{c}");
        assert!(history_chart(&h[..1]).is_none());
    }

    #[test]
    fn the_history_is_bounded_newest_kept() {
        let wide: serde_json::Map<String, Value> = (0..50)
            .map(|i| (format!("k{i:02}"), json!("v".repeat(100))))
            .collect();
        let mut state = State {
            history: (0..30)
                .map(|i| Entry {
                    at: format!("{i}"),
                    ..entry(Value::Object(wide.clone()), &[], None)
                })
                .collect(),
        };
        let json = bounded(&mut state);
        assert!(json.len() <= STATE_MAX_BYTES, "{}", json.len());
        assert!(!state.history.is_empty());
        assert_eq!(state.history.last().unwrap().at, "29");
        let mut small = State {
            history: (0..30)
                .map(|i| Entry {
                    at: format!("{i}"),
                    ..entry(json!({"t": i}), &[], None)
                })
                .collect(),
        };
        bounded(&mut small);
        assert_eq!(small.history.len(), HISTORY_MAX);
        assert_eq!(small.history[0].at, "10");
    }

    #[test]
    fn only_moves_beyond_the_tolerance_and_check_flips_count() {
        let a = entry(json!({"total": 100}), &[], None);
        assert!(moved(&a, &entry(json!({"total": 104}), &[], None), 0.05).is_empty());
        let c = entry(json!({"total": 110}), &[], None);
        let m = moved(&a, &c, 0.05);
        assert_eq!(m.values.len(), 1);
        let b = entry(json!({"total": 100}), &["c1"], None);
        let m = moved(&a, &b, 0.05);
        assert_eq!(m.started_failing.len(), 1);
        assert!(moved(&b, &b, 0.0).is_empty());
        assert_eq!(moved(&b, &a, 0.0).stopped_failing, vec!["c1"]);
        let e = entry(json!({}), &[], Some("boom"));
        assert_eq!(moved(&a, &e, 0.0).result, Some(Err("boom")));
        assert!(moved(&e, &e, 0.0).is_empty());
    }
}
