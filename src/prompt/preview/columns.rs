//! What each column holds, as `pandas.read_csv` with its defaults infers it:
//! the dtype (`int64`, `float64`, `bool`, `object`), the missing values
//! (pandas' default NA strings and empty fields), the distinct values of a
//! text column and the smallest and largest value of a number column (or of
//! a text column of ISO dates). Computed over every record the preview
//! read, so over the whole file up to the preview's read limit and over its
//! head beyond (the facts then say so). `tests/sandbox/previews.rs` checks
//! each fact against pandas itself in the sandbox image.

use std::collections::HashMap;

/// pandas' default missing-value strings (`pandas._libs.parsers.STR_NA_VALUES`
/// in pandas 2, with the empty field), matched exactly, without trimming.
pub(crate) const NA_VALUES: [&str; 19] = [
    "", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN",
    "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null",
];

/// The values pandas' C parser reads as booleans (`true_values` /
/// `false_values` defaults).
pub(crate) const TRUE_VALUES: [&str; 3] = ["True", "TRUE", "true"];
pub(crate) const FALSE_VALUES: [&str; 3] = ["False", "FALSE", "false"];

/// Distinct values counted per column; past this many the count is "more than".
pub(crate) const DISTINCT_MAX: usize = 10_000;

/// A column's dtype as pandas infers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dtype {
    /// Every value an integer, none missing.
    Int64,
    /// Every value a number (or integers with some missing; or all missing).
    Float64,
    /// Every value `True`/`False` (in pandas' spellings), none missing.
    Bool,
    /// Anything else: pandas keeps the text (dates too, unless parsed).
    Object,
}

impl Dtype {
    /// The name pandas prints (`df.dtypes`).
    pub(crate) fn name(self) -> &'static str {
        match self {
            Dtype::Int64 => "int64",
            Dtype::Float64 => "float64",
            Dtype::Bool => "bool",
            Dtype::Object => "object",
        }
    }
}

/// One number with the text it was read from (shown as written).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Extreme {
    /// The value as pandas parses it.
    pub value: f64,
    /// The field as written in the file.
    pub text: String,
}

/// What the preview says of one column.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ColumnFacts {
    /// pandas' dtype for the values read.
    pub dtype: Dtype,
    /// Missing values (`df[c].isna().sum()`).
    pub missing: usize,
    /// Distinct values that are not missing (`df[c].nunique()`), for text
    /// and boolean columns; `None` past [`DISTINCT_MAX`].
    pub distinct: Option<usize>,
    /// Smallest and largest number (number columns).
    pub range: Option<(Extreme, Extreme)>,
    /// Smallest and largest ISO date text (a text column of ISO dates only).
    pub dates: Option<(String, String)>,
    /// A text column's values with their counts, most frequent first, when
    /// it has at most [`VALUES_SHOWN`] distinct (a junk value, spellings of
    /// one label); else a value of each of the first few shapes
    /// ([`SAMPLE_SHAPES`]) with count 0.
    pub values: Vec<(String, usize)>,
    /// A number column's zeros and negative values.
    pub zeros: usize,
    /// See [`ColumnFacts::zeros`].
    pub negatives: usize,
    /// A number column's most repeated value other than zero, as written,
    /// with its count, when it stands out (a sentinel such as `-999`):
    /// repeated at least 3 times, and more than 3 times as often as the
    /// median value.
    pub repeated: Option<(String, usize)>,
}

/// Most distinct values of a text column shown with their counts.
pub(crate) const VALUES_SHOWN: usize = 20;
/// Samples of different shapes shown of a text column with more values.
const SAMPLE_SHAPES: usize = 3;

/// A value's shape: digits as `9`, letters as `a`, runs of one collapsed
/// (`2026-10-05` → `9-9-9`, `N.` → `a.`).
fn shape(v: &str) -> String {
    let mut out = String::new();
    for c in v.chars() {
        let k = if c.is_ascii_digit() {
            '9'
        } else if c.is_alphabetic() {
            'a'
        } else {
            c
        };
        if !out.ends_with(k) || !matches!(k, '9' | 'a') {
            out.push(k);
        }
    }
    out
}

/// Accumulates one column's values.
#[derive(Debug, Default)]
struct Column {
    missing: usize,
    /// Values seen that are not missing.
    present: usize,
    all_int: bool,
    all_float: bool,
    all_bool: bool,
    /// Which truth values were seen (pandas reads every spelling as one).
    truths: [bool; 2],
    all_iso_date: bool,
    /// Each distinct value with its count, up to [`DISTINCT_MAX`] of them.
    distinct: HashMap<String, usize>,
    distinct_overflow: bool,
    zeros: usize,
    negatives: usize,
    min: Option<Extreme>,
    max: Option<Extreme>,
    min_text: Option<String>,
    max_text: Option<String>,
}

impl Column {
    /// Each value's count, by count then value (a stable order).
    fn counted(&self) -> Vec<(&String, usize)> {
        let mut all: Vec<(&String, usize)> = self.distinct.iter().map(|(v, n)| (v, *n)).collect();
        all.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
        all
    }

    /// See [`ColumnFacts::values`].
    fn values(&self) -> Vec<(String, usize)> {
        shown_values(&self.counted(), self.distinct_overflow)
    }

    /// See [`ColumnFacts::repeated`]: zeros are counted apart.
    fn repeated(&self, decimal_comma: bool) -> Option<(String, usize)> {
        standing_out(&self.counted(), |v| number(v, decimal_comma) == Some(0.0))
    }
}

/// A text column's values with their counts (`all`: each distinct value,
/// most frequent first) when it has at most [`VALUES_SHOWN`] and none was
/// left uncounted (`overflow`); else a value of each of the first
/// [`SAMPLE_SHAPES`] shapes, with count 0. CSV and Excel columns alike.
pub(crate) fn shown_values<S: AsRef<str>>(
    all: &[(S, usize)],
    overflow: bool,
) -> Vec<(String, usize)> {
    if all.len() <= VALUES_SHOWN && !overflow {
        return all
            .iter()
            .map(|(v, n)| (v.as_ref().to_string(), *n))
            .collect();
    }
    let mut shapes: Vec<String> = Vec::new();
    let mut out = Vec::new();
    for (v, _) in all {
        let s = shape(v.as_ref());
        if !shapes.contains(&s) {
            shapes.push(s);
            out.push((v.as_ref().to_string(), 0));
            if out.len() == SAMPLE_SHAPES {
                break;
            }
        }
    }
    out
}

/// A number column's most repeated value other than zero (`all`: each
/// distinct value as written, most frequent first) when it stands out: a
/// sentinel such as `-999`, repeated at least 3 times and more than 3 times
/// as often as the median value.
pub(crate) fn standing_out<S: AsRef<str>>(
    all: &[(S, usize)],
    is_zero: impl Fn(&str) -> bool,
) -> Option<(String, usize)> {
    let median = all.get(all.len() / 2).map_or(0, |x| x.1);
    let (v, n) = all.iter().find(|(v, _)| !is_zero(v.as_ref()))?;
    (*n >= 3 && *n > 3 * median).then(|| (v.as_ref().trim().to_string(), *n))
}

/// The facts of every column, fed one data record at a time.
#[derive(Debug)]
pub(crate) struct Facts {
    columns: Vec<Column>,
    decimal_comma: bool,
    /// Data records seen.
    pub rows: usize,
}

/// `value` as pandas' C parser reads a number: surrounding spaces and tabs
/// allowed, `inf`/`infinity` in any case, no `nan` spelling beyond the NA
/// strings, `decimal` as the decimal mark.
pub(crate) fn number(value: &str, decimal_comma: bool) -> Option<f64> {
    let v = value.trim_matches([' ', '\t']);
    if v.trim_start_matches(['+', '-']).eq_ignore_ascii_case("nan") || v.contains('_') {
        return None;
    }
    if decimal_comma {
        if v.contains('.') {
            return None;
        }
        return v.replace(',', ".").parse().ok();
    }
    v.parse().ok()
}

/// True for an integer as pandas reads one into int64.
pub(crate) fn integer(value: &str) -> bool {
    value.trim_matches([' ', '\t']).parse::<i64>().is_ok()
}

/// `2024-01-31`, optionally followed by a time.
fn iso_date(v: &str) -> bool {
    let b = v.as_bytes();
    b.len() >= 10
        && b[4] == b'-'
        && b[7] == b'-'
        && [0, 1, 2, 3, 5, 6, 8, 9]
            .iter()
            .all(|&i| b[i].is_ascii_digit())
        && (b.len() == 10 || matches!(b[10], b' ' | b'T'))
}

impl Facts {
    /// Facts for `width` columns; `decimal_comma` as the preview's call reads them.
    pub(crate) fn new(width: usize, decimal_comma: bool) -> Facts {
        let column = || Column {
            all_int: true,
            all_float: true,
            all_bool: true,
            all_iso_date: true,
            ..Column::default()
        };
        Facts {
            columns: (0..width).map(|_| column()).collect(),
            decimal_comma,
            rows: 0,
        }
    }

    /// Adds one data record (padded or cut to the header's width, as pandas does).
    pub(crate) fn add(&mut self, row: &[String]) {
        self.rows += 1;
        for (i, c) in self.columns.iter_mut().enumerate() {
            let v = row.get(i).map_or("", String::as_str);
            if NA_VALUES.contains(&v) {
                c.missing += 1;
                continue;
            }
            c.present += 1;
            // Each test only while it still holds: a column is read once.
            c.all_int = c.all_int && integer(v);
            if c.all_bool {
                let truth = TRUE_VALUES.contains(&v);
                c.all_bool = truth || FALSE_VALUES.contains(&v);
                c.truths[usize::from(truth)] = true;
            }
            c.all_iso_date = c.all_iso_date && iso_date(v);
            match c.all_float.then(|| number(v, self.decimal_comma)).flatten() {
                Some(n) => {
                    c.zeros += usize::from(n == 0.0);
                    c.negatives += usize::from(n < 0.0);
                    if c.min.as_ref().is_none_or(|m| n < m.value) {
                        c.min = Some(Extreme {
                            value: n,
                            text: v.trim().to_string(),
                        });
                    }
                    if c.max.as_ref().is_none_or(|m| n > m.value) {
                        c.max = Some(Extreme {
                            value: n,
                            text: v.trim().to_string(),
                        });
                    }
                }
                None => c.all_float = false,
            }
            if c.all_iso_date {
                if c.min_text.as_deref().is_none_or(|m| v < m) {
                    c.min_text = Some(v.to_string());
                }
                if c.max_text.as_deref().is_none_or(|m| v > m) {
                    c.max_text = Some(v.to_string());
                }
            }
            if let Some(n) = c.distinct.get_mut(v) {
                *n += 1;
            } else if !c.distinct_overflow {
                if c.distinct.len() >= DISTINCT_MAX {
                    c.distinct_overflow = true;
                    c.distinct.clear();
                } else {
                    c.distinct.insert(v.to_string(), 1);
                }
            }
        }
    }

    /// The facts of each column, in the file's order.
    pub(crate) fn columns(&self) -> Vec<ColumnFacts> {
        self.columns
            .iter()
            .map(|c| {
                // No rows: pandas keeps the header's columns as object;
                // rows that are all missing make a float64 column.
                let dtype = if self.rows == 0 {
                    Dtype::Object
                } else if c.present == 0 {
                    Dtype::Float64
                } else if c.all_int && c.missing == 0 {
                    Dtype::Int64
                } else if c.all_float && !c.all_bool {
                    Dtype::Float64
                } else if c.all_bool && c.missing == 0 {
                    Dtype::Bool
                } else {
                    Dtype::Object
                };
                let numeric = matches!(dtype, Dtype::Int64 | Dtype::Float64);
                // Booleans (also with a gap, as object) count as True/False.
                let distinct = if c.all_bool && c.present > 0 {
                    c.truths.iter().filter(|t| **t).count()
                } else {
                    c.distinct.len()
                };
                ColumnFacts {
                    dtype,
                    missing: c.missing,
                    distinct: (!numeric && (!c.distinct_overflow || c.all_bool))
                        .then_some(distinct),
                    range: match (&c.min, &c.max) {
                        (Some(a), Some(b)) if numeric => Some((a.clone(), b.clone())),
                        _ => None,
                    },
                    dates: match (&c.min_text, &c.max_text) {
                        (Some(a), Some(b)) if dtype == Dtype::Object && c.all_iso_date => {
                            Some((a.clone(), b.clone()))
                        }
                        _ => None,
                    },
                    values: if dtype == Dtype::Object && !c.all_iso_date {
                        c.values()
                    } else {
                        Vec::new()
                    },
                    zeros: if numeric { c.zeros } else { 0 },
                    negatives: if numeric { c.negatives } else { 0 },
                    repeated: if numeric {
                        c.repeated(self.decimal_comma)
                    } else {
                        None
                    },
                }
            })
            .collect()
    }
}

/// How much a column's facts say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Said {
    /// Dtype, missing values, and the range or distinct count (`preview`).
    Values,
    /// Dtype and missing values only, no value of the data (`schema`).
    Shape,
}

/// One line per column, `"Age": float64; 177 missing (19.9%); 0.42 to 80`,
/// at most `max` bytes (then `… +N more columns`). `whole`: the facts are
/// over the whole file; otherwise over the rows read, said as lower bounds.
pub(crate) fn describe(
    names: &[String],
    facts: &Facts,
    whole: bool,
    said: Said,
    max: usize,
) -> String {
    let rows = facts.rows;
    let what = match said {
        Said::Values => "dtype; missing, if any; min to max or distinct values",
        Said::Shape => "dtype; missing, if any",
    };
    let out = if whole {
        format!("\nColumn facts as pandas reads all {rows} rows ({what}):")
    } else {
        format!(
            "\nColumn facts over the first {rows} rows read ({what}; a later row may change a dtype; missing and distinct counts are lower bounds):"
        )
    };
    let columns = facts.columns();
    let lines = names.iter().zip(&columns).map(|(name, c)| {
        let mut line = format!("\n{}: {}", quoted_name(name), c.dtype.name());
        if c.missing > 0 {
            line.push_str(&missing_share(c.missing as u64, rows as u64));
        }
        if said == Said::Shape {
            return line;
        }
        let shown = |t: &str| super::excerpt(&super::strip_invisible(t), 30);
        if let Some((lo, hi)) = &c.range {
            line.push_str(&format!("; {} to {}", shown(&lo.text), shown(&hi.text)));
        } else if let Some((lo, hi)) = &c.dates {
            line.push_str(&format!("; {} to {} (dates as text)", shown(lo), shown(hi)));
        }
        if matches!(c.dtype, Dtype::Bool | Dtype::Object) {
            match c.distinct {
                Some(n) => line.push_str(&format!("; {n} distinct")),
                None => line.push_str(&format!("; more than {DISTINCT_MAX} distinct")),
            }
        }
        line.push_str(&values_said(
            &c.values,
            c.zeros,
            c.negatives,
            c.repeated.as_ref(),
        ));
        line
    });
    budgeted(out, lines, names.len(), max)
}

/// Most characters of one column's values and counts.
const VALUES_CHARS: usize = 360;

/// What a column's values say beyond its range: a text column's `values`
/// with their counts (`: "North" 412, "N." 3`) or samples of its shapes
/// (counts 0); a number column's zeros, negatives and a `repeated` value
/// that stands out. CSV and Excel columns alike.
pub(crate) fn values_said(
    values: &[(String, usize)],
    zeros: usize,
    negatives: usize,
    repeated: Option<&(String, usize)>,
) -> String {
    let quoted = |v: &str| {
        serde_json::to_string(&super::excerpt(&super::strip_invisible(v), 30)).unwrap_or_default()
    };
    let mut out = String::new();
    let counted = values.iter().all(|(_, n)| *n > 0);
    if !values.is_empty() {
        let parts: Vec<String> = values
            .iter()
            .map(|(v, n)| {
                if counted {
                    format!("{} {n}", quoted(v))
                } else {
                    quoted(v)
                }
            })
            .collect();
        let mut list = String::new();
        for (i, p) in parts.iter().enumerate() {
            if list.len() + p.len() > VALUES_CHARS {
                list.push_str(&format!(", … +{} more", parts.len() - i));
                break;
            }
            if i > 0 {
                list.push_str(", ");
            }
            list.push_str(p);
        }
        out.push_str(&if counted {
            format!(": {list}")
        } else {
            format!("; e.g. {list}")
        });
    }
    if zeros > 0 {
        out.push_str(&format!("; {zeros} zero(s)"));
    }
    if negatives > 0 {
        out.push_str(&format!("; {negatives} negative"));
    }
    if let Some((v, n)) = repeated {
        out.push_str(&format!("; {} repeated {n} times", quoted(v)));
    }
    out
}

/// A column name as a fact line starts: JSON-quoted, cut to 60 characters.
pub(crate) fn quoted_name(name: &str) -> String {
    serde_json::to_string(&super::excerpt(&super::strip_invisible(name), 60)).unwrap_or_default()
}

/// `; 177 missing (19.9%)` of `rows`.
pub(crate) fn missing_share(missing: u64, rows: u64) -> String {
    let share = missing as f64 * 100.0 / rows.max(1) as f64;
    format!("; {missing} missing ({share:.1}%)")
}

/// `out` and then each of `lines` (`total` in all) while they fit in `max`
/// bytes; then `… +N more columns`.
pub(crate) fn budgeted(
    mut out: String,
    lines: impl Iterator<Item = String>,
    total: usize,
    max: usize,
) -> String {
    for (i, line) in lines.enumerate() {
        if out.len() + line.len() > max {
            out.push_str(&format!("\n… +{} more columns", total - i));
            break;
        }
        out.push_str(&line);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(rows: &[&[&str]]) -> Vec<ColumnFacts> {
        let mut f = Facts::new(rows[0].len(), false);
        for r in rows {
            f.add(&r.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        }
        f.columns()
    }

    #[test]
    fn dtypes_follow_pandas_inference() {
        let c = facts(&[
            &[
                "1",
                "1.5",
                "True",
                "x",
                "",
                "1",
                " 7 ",
                "2024-01-02",
                "NA",
                "inf",
            ],
            &[
                "2",
                "2",
                "false",
                "y",
                "",
                "",
                "8",
                "2023-12-31",
                " NA",
                "-3",
            ],
        ]);
        let names: Vec<&str> = c.iter().map(|c| c.dtype.name()).collect();
        assert_eq!(
            names,
            [
                "int64", "float64", "bool", "object", "float64", "float64", "int64", "object",
                "object", "float64"
            ]
        );
        assert_eq!(c[5].missing, 1);
        assert_eq!(c[4].missing, 2);
        assert_eq!(c[3].distinct, Some(2));
        assert_eq!(c[7].dates, Some(("2023-12-31".into(), "2024-01-02".into())));
        assert_eq!(c[9].range.as_ref().unwrap().0.text, "-3");
        assert_eq!(c[9].range.as_ref().unwrap().1.text, "inf");
        // "NAN" is no NA string and no number for pandas.
        assert_eq!(facts(&[&["NAN"], &["1"]])[0].dtype, Dtype::Object);
    }

    #[test]
    fn the_description_says_missing_shares_ranges_and_stays_in_its_budget() {
        let mut f = Facts::new(2, false);
        for i in 0..10 {
            let age = if i < 2 {
                String::new()
            } else {
                format!("{i}.5")
            };
            f.add(&[age, format!("name{}", i % 3)]);
        }
        let names = vec!["Age".to_string(), "Name".to_string()];
        let d = describe(&names, &f, true, Said::Values, 1000);
        assert!(d.contains("all 10 rows"), "{d}");
        assert!(
            d.contains("\n\"Age\": float64; 2 missing (20.0%); 2.5 to 9.5"),
            "{d}"
        );
        assert!(d.contains("\n\"Name\": object; 3 distinct"), "{d}");
        let cut = describe(&names, &f, false, Said::Values, 230);
        assert!(
            cut.contains("lower bounds") && cut.contains("… +1 more columns"),
            "{cut}"
        );
        let shape = describe(&names, &f, true, Said::Shape, 1000);
        assert!(
            shape.contains("\n\"Age\": float64; 2 missing (20.0%)\n"),
            "{shape}"
        );
        assert!(
            !shape.contains("9.5") && !shape.contains("distinct"),
            "{shape}"
        );
    }
}
