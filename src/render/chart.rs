//! The mermaid chart of a result: the numeric series in it (labels, values,
//! a title), a line for a series over time and bars to compare other labels.

use serde_json::Value;

use super::mermaid_label;
use crate::units::readable_number;

/// Most points a chart shows.
const CHART_MAX_POINTS: usize = 100;

/// A numeric series found in a result: labels, values and a title.
#[derive(Debug, Clone, PartialEq)]
struct Series {
    /// What the series is (a field name, or `result`).
    title: String,
    /// The x-axis labels.
    labels: Vec<String>,
    /// The values.
    values: Vec<f64>,
    /// True when labels came from the data (bar chart), false for positions (line).
    labelled: bool,
    /// True when the labels are points in time (a date field or date-like
    /// labels): a line, not bars.
    over_time: bool,
}

/// Label fields that name a point in time.
const TIME_KEYS: [&str; 13] = [
    "year",
    "quarter",
    "month",
    "week",
    "day",
    "date",
    "time",
    "timestamp",
    "period",
    "t",
    "epoch",
    "datetime",
    "hour",
];

/// True for labels such as `2024`, `2024-01`, `2024-01-05`, `2024/01/05`,
/// `2024-W03`, `2024Q1` or `2024-01-05T10:00`.
fn looks_like_date(label: &str) -> bool {
    let b = label.as_bytes();
    b.len() >= 4
        && b[..4].iter().all(u8::is_ascii_digit)
        && (b.len() == 4 || matches!(b[4], b'-' | b'/' | b'Q' | b'q'))
}

const LABEL_NUMERIC_KEYS: [&str; 12] = [
    "year", "month", "day", "date", "x", "t", "time", "step", "index", "i", "n", "epoch",
];

fn series_of(v: &Value, title: &str, hint: Option<&str>) -> Option<Series> {
    let items = v.as_array()?;
    if items.len() < 2 {
        return None;
    }
    if items.iter().all(Value::is_number) {
        return Some(Series {
            title: title.to_string(),
            labels: (1..=items.len()).map(|i| i.to_string()).collect(),
            values: items.iter().filter_map(Value::as_f64).collect(),
            labelled: false,
            over_time: false,
        });
    }
    // Records with one label field and one or more numeric fields.
    let first = items[0].as_object()?;
    let keys: Vec<&String> = first.keys().collect();
    if keys.len() < 2 || keys.len() > 12 {
        return None;
    }
    let all = |k: &str, f: fn(&Value) -> bool| {
        items.iter().all(|it| {
            it.as_object()
                .is_some_and(|m| m.len() == keys.len() && m.get(k).is_some_and(f))
        })
    };
    let strings: Vec<&String> = keys
        .iter()
        .copied()
        .filter(|k| all(k, Value::is_string))
        .collect();
    let numbers: Vec<&String> = keys
        .iter()
        .copied()
        .filter(|k| all(k, Value::is_number))
        .collect();
    let is_label = |k: &str| LABEL_NUMERIC_KEYS.contains(&k.to_ascii_lowercase().as_str());
    let label = match strings.as_slice() {
        [one] => *one,
        [] => {
            let numeric_labels: Vec<&&String> = numbers.iter().filter(|k| is_label(k)).collect();
            match numeric_labels.as_slice() {
                [one] => **one,
                _ => return None,
            }
        }
        _ => return None,
    };
    let candidates: Vec<&String> = numbers.into_iter().filter(|k| *k != label).collect();
    if candidates.is_empty()
        || strings.len() + candidates.len() + usize::from(strings.is_empty()) != keys.len()
    {
        return None;
    }
    let value = pick_value_key(&candidates, hint);
    let labels: Vec<String> = items
        .iter()
        .map(|it| match &it[label.as_str()] {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect();
    let over_time = TIME_KEYS.contains(&label.to_ascii_lowercase().as_str())
        || labels.iter().all(|l| looks_like_date(l));
    Some(Series {
        title: if title == "result" {
            value.clone()
        } else {
            format!("{title}: {value}")
        },
        labels,
        values: items
            .iter()
            .filter_map(|it| it[value.as_str()].as_f64())
            .collect(),
        labelled: true,
        over_time,
    })
}

/// Of several numeric fields, the one to chart: named in the goal, else one
/// that names a measure, else the last.
fn pick_value_key<'a>(candidates: &[&'a String], hint: Option<&str>) -> &'a String {
    let hint = hint.unwrap_or("").to_ascii_lowercase();
    if let Some(k) = candidates
        .iter()
        .find(|k| !hint.is_empty() && hint.contains(&k.to_ascii_lowercase().replace('_', " ")))
    {
        return k;
    }
    const MEASURES: [&str; 9] = [
        "rate",
        "ratio",
        "conversion",
        "share",
        "mean",
        "average",
        "avg",
        "total",
        "value",
    ];
    if let Some(k) = candidates.iter().find(|k| {
        let l = k.to_ascii_lowercase();
        MEASURES.iter().any(|m| l.contains(m))
    }) {
        return k;
    }
    candidates[candidates.len() - 1]
}

/// Finds a numeric series: the result itself (a list of numbers, or of
/// records with one label and one numeric field), or the first such list
/// among an object's fields; preferring the numeric field the goal (`hint`)
/// names.
fn find_series_for(result: &Value, hint: Option<&str>) -> Option<Series> {
    if let Some(s) = series_of(result, "result", hint) {
        return Some(s);
    }
    result
        .as_object()?
        .iter()
        .find_map(|(k, v)| series_of(v, k, hint))
}

/// A title or label as the chart shows it: [`mermaid_label`], at most 40
/// characters.
fn chart_text(s: &str) -> String {
    mermaid_label(s).chars().take(40).collect()
}

fn num(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

/// Most x-axis labels a chart shows by name; with more points the x axis
/// is numbered and its title names the first and last label.
const CHART_MAX_LABELS: usize = 8;

/// A mermaid `xychart-beta` block for the result's numeric series, if any.
#[cfg(test)]
pub(super) fn chart(result: &Value) -> Option<String> {
    chart_for(result, None)
}

/// A mermaid `xychart-beta` block for the result's numeric series, if any,
/// preferring the numeric field the goal (`hint`) names.
///
/// The y axis always includes zero (from zero up for positive values, so a
/// bar's height is its value; down to the lowest value when there are
/// negative ones). Up to [`CHART_MAX_LABELS`] points keep their labels on the
/// x axis; with more, the x axis is numbered 1…n (mermaid then picks readable
/// ticks) and its title names the first and last label. Values are written
/// to [`SIGNIFICANT_DIGITS`](crate::units::SIGNIFICANT_DIGITS) significant digits.
pub(crate) fn chart_for(result: &Value, hint: Option<&str>) -> Option<String> {
    let s = find_series_for(result, hint)?;
    let total = s.values.len();
    let n = total.min(CHART_MAX_POINTS);
    let title = if total > n {
        format!("{} (first {n} of {total})", chart_text(&s.title))
    } else {
        chart_text(&s.title)
    };
    let values = &s.values[..n];
    let x_axis = if n <= CHART_MAX_LABELS {
        let labels: Vec<String> = s.labels[..n]
            .iter()
            .map(|l| format!("\"{}\"", chart_text(l)))
            .collect();
        format!("[{}]", labels.join(", "))
    } else if s.labelled {
        format!(
            "\"{} … {} ({n} points)\" 1 --> {n}",
            chart_text(&s.labels[0]),
            chart_text(&s.labels[n - 1])
        )
    } else {
        format!("\"position\" 1 --> {n}")
    };
    let shown: Vec<String> = values.iter().copied().map(readable_number).collect();
    // The axis from the values as written, so no bar pokes out of it.
    let plotted = shown.iter().filter_map(|v| v.parse::<f64>().ok());
    let lo = plotted.clone().fold(0.0_f64, f64::min);
    let hi = plotted.fold(0.0_f64, f64::max);
    let hi = if hi == lo { lo + 1.0 } else { hi };
    // Bars compare labelled things; a series over time is a line.
    let kind = if s.labelled && !s.over_time && n <= 30 {
        "bar"
    } else {
        "line"
    };
    Some(format!(
        "```mermaid\nxychart-beta\n    title \"{title}\"\n    x-axis {x_axis}\n    y-axis \"{}\" {} --> {}\n    {kind} [{}]\n```\n",
        chart_text(&s.title),
        num(lo),
        num(hi),
        shown.join(", ")
    ))
}
