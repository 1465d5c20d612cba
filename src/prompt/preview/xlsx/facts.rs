//! What each column of a sheet holds as `pandas.read_excel` (openpyxl)
//! infers it: every data cell is classed as openpyxl and pandas' reader
//! give it (an integral number is an int, a date-styled number a datetime,
//! an error cell NaN, text through pandas' NA strings and its number and
//! boolean parsing), then the dtype follows from the classes seen. Checked
//! against pandas itself in `tests/sandbox/previews.rs`.

use std::collections::{BTreeMap, HashMap};

use super::Cell;
use crate::prompt::preview::columns::{self, DISTINCT_MAX};

/// One column's cells, accumulated as the sheet streams.
#[derive(Debug, Default, Clone)]
pub(crate) struct ColumnCells {
    /// Cells with a stored value (the others are blank: missing).
    present: usize,
    /// Error cells (NaN to pandas).
    errors: usize,
    ints: usize,
    floats: usize,
    bools: [bool; 2],
    bool_cells: usize,
    dates: usize,
    min: Option<f64>,
    max: Option<f64>,
    date_min: Option<f64>,
    date_max: Option<f64>,
    /// Text cells by shared-string index or inline text, with their counts.
    shared: HashMap<usize, usize>,
    inline: HashMap<String, usize>,
    /// Distinct numbers and dates seen (their bits), with their counts.
    numbers: HashMap<u64, usize>,
    dates_seen: HashMap<u64, usize>,
    /// Boolean cells (and texts pandas reads as booleans), False then True.
    bool_counts: [usize; 2],
    /// More distinct texts than [`DISTINCT_MAX`]: counts are lower bounds.
    overflow: bool,
}

impl ColumnCells {
    pub(crate) fn add(&mut self, cell: &Cell) {
        self.present += 1;
        match cell {
            Cell::Error(_) => self.errors += 1,
            Cell::Bool(b) => {
                self.bool_cells += 1;
                self.bools[usize::from(*b)] = true;
                self.bool_counts[usize::from(*b)] += 1;
                // In a number column a boolean is 0 or 1.
                let v = f64::from(u8::from(*b));
                self.min = Some(self.min.map_or(v, |m| m.min(v)));
                self.max = Some(self.max.map_or(v, |m| m.max(v)));
            }
            Cell::Number { raw, date } => match raw.trim().parse::<f64>() {
                Ok(v) if *date => {
                    self.dates += 1;
                    count_into(&mut self.dates_seen, v.to_bits());
                    self.date_min = Some(self.date_min.map_or(v, |m| m.min(v)));
                    self.date_max = Some(self.date_max.map_or(v, |m| m.max(v)));
                }
                Ok(v) => self.number(v),
                Err(_) => self.text_cell(None, raw),
            },
            Cell::Shared(i) => self.text_cell(Some(*i), ""),
            Cell::Text(s) => self.text_cell(None, s),
        }
    }

    fn number(&mut self, v: f64) {
        self.number_as(v, v.fract() == 0.0 && v.abs() < 9.2e18);
    }

    /// A number, read by pandas as an int (`int`) or a float.
    fn number_as(&mut self, v: f64, int: bool) {
        if int {
            self.ints += 1;
        } else {
            self.floats += 1;
        }
        self.min = Some(self.min.map_or(v, |m| m.min(v)));
        self.max = Some(self.max.map_or(v, |m| m.max(v)));
        count_into(&mut self.numbers, v.to_bits());
    }

    fn text_cell(&mut self, shared: Option<usize>, text: &str) {
        if self.shared.len() + self.inline.len() >= DISTINCT_MAX {
            self.overflow = true;
        }
        match shared {
            Some(i) if !self.overflow || self.shared.contains_key(&i) => {
                *self.shared.entry(i).or_default() += 1
            }
            None if !self.overflow || self.inline.contains_key(text) => {
                *self.inline.entry(text.to_string()).or_default() += 1
            }
            _ => {}
        }
    }

    /// The shared strings this column's facts need.
    pub(crate) fn wanted(&self) -> impl Iterator<Item = usize> + '_ {
        self.shared.keys().copied()
    }
}

/// Counts `key` in `counts`, which holds at most [`DISTINCT_MAX`] keys.
fn count_into(counts: &mut HashMap<u64, usize>, key: u64) {
    if let Some(n) = counts.get_mut(&key) {
        *n += 1;
    } else if counts.len() < DISTINCT_MAX {
        counts.insert(key, 1);
    }
}

/// Values with their counts, most frequent first, then by value.
fn by_count(mut all: Vec<(String, usize)>) -> Vec<(String, usize)> {
    all.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    all
}

/// A column's facts, as the preview states them.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SheetColumn {
    pub dtype: &'static str,
    pub missing: usize,
    /// Smallest and largest value as pandas prints it.
    pub range: Option<(String, String)>,
    pub distinct: Option<usize>,
    /// An object column's values as pandas prints them, with their counts
    /// (up to [`columns::VALUES_SHOWN`]), or samples of their shapes
    /// (counts 0): [`columns::shown_values`].
    pub values: Vec<(String, usize)>,
    /// A number column's zeros and negative values.
    pub zeros: usize,
    /// See [`SheetColumn::zeros`].
    pub negatives: usize,
    /// A number column's value that stands out ([`columns::standing_out`]).
    pub repeated: Option<(String, usize)>,
}

/// The facts of a column of `rows` data rows, its text resolved with
/// `strings` (the shared strings read).
pub(crate) fn column(
    c: &ColumnCells,
    rows: usize,
    strings: &BTreeMap<usize, String>,
    date1904: bool,
) -> SheetColumn {
    let mut c = c.clone();
    let mut na = 0;
    let (mut bool_texts, mut texts) = (0, 0);
    let mut distinct_texts: HashMap<String, usize> = HashMap::new();
    let resolved: Vec<(String, usize)> = c
        .shared
        .iter()
        .map(|(i, n)| (strings.get(i).cloned().unwrap_or_default(), *n))
        .chain(c.inline.iter().map(|(s, n)| (s.clone(), *n)))
        .collect();
    for (text, n) in resolved {
        if columns::NA_VALUES.contains(&text.as_str()) {
            na += n;
        } else if let Some(v) = columns::number(&text, false) {
            // Text pandas parses: "12" an int, "12.0" a float.
            for _ in 0..n {
                c.number_as(v, columns::integer(&text));
            }
        } else if columns::TRUE_VALUES.contains(&text.as_str())
            || columns::FALSE_VALUES.contains(&text.as_str())
        {
            bool_texts += n;
            let truth = usize::from(columns::TRUE_VALUES.contains(&text.as_str()));
            c.bools[truth] = true;
            c.bool_counts[truth] += n;
        } else {
            texts += n;
            *distinct_texts.entry(text).or_default() += n;
        }
    }
    let missing = rows - c.present.min(rows) + c.errors + na;
    let numbers = c.ints + c.floats;
    let bools = c.bool_cells + bool_texts;
    let dtype = if rows == 0 {
        "object"
    } else if missing >= rows {
        "float64"
    } else if texts > 0 || (c.dates > 0 && numbers + bools > 0) || (bool_texts > 0 && numbers > 0) {
        "object"
    } else if c.dates > 0 {
        "datetime64[ns]"
    } else if numbers == 0 && missing == 0 {
        "bool"
    } else if numbers == 0 && bool_texts > 0 {
        "object"
    } else if c.floats > 0 || missing > 0 {
        "float64"
    } else {
        "int64"
    };
    let shown = |v: f64| super::python_number(v);
    let range = match dtype {
        "int64" | "float64" => c.min.zip(c.max).map(|(a, b)| (shown(a), shown(b))),
        "datetime64[ns]" => c.date_min.zip(c.date_max).and_then(|(a, b)| {
            Some((
                super::excel_date(a, date1904)?,
                super::excel_date(b, date1904)?,
            ))
        }),
        _ => None,
    };
    let distinct = match dtype {
        "bool" => Some(c.bools.iter().filter(|b| **b).count()),
        "object" if !c.overflow => Some(
            distinct_texts.len()
                + c.numbers.len()
                + c.dates_seen.len()
                + c.bools.iter().filter(|b| **b).count(),
        ),
        _ => None,
    };
    let (values, zeros, negatives, repeated) = first_look(&c, dtype, distinct_texts, date1904);
    SheetColumn {
        dtype,
        missing,
        range,
        distinct,
        values,
        zeros,
        negatives,
        repeated,
    }
}

/// A column's values, zeros, negatives and repeated value (the fields of
/// [`SheetColumn`] of the same names).
type FirstLook = (Vec<(String, usize)>, usize, usize, Option<(String, usize)>);

/// What a first look at a column shows beyond its range (as for CSV): an
/// object column's values with their counts (`texts`: its texts pandas
/// keeps as text), a number column's zeros, negatives and a value that
/// stands out.
fn first_look(
    c: &ColumnCells,
    dtype: &str,
    texts: HashMap<String, usize>,
    date1904: bool,
) -> FirstLook {
    let shown = |v: f64| super::python_number(v);
    let numeric = matches!(dtype, "int64" | "float64");
    let numbers = || {
        by_count(
            c.numbers
                .iter()
                .map(|(bits, n)| (shown(f64::from_bits(*bits)), *n))
                .collect(),
        )
    };
    let values = if dtype == "object" {
        let mut all = numbers();
        all.extend(texts);
        all.extend(c.dates_seen.iter().map(|(bits, n)| {
            let v = f64::from_bits(*bits);
            (
                super::excel_date(v, date1904).unwrap_or_else(|| shown(v)),
                *n,
            )
        }));
        for (truth, n) in ["False", "True"].iter().zip(c.bool_counts) {
            if n > 0 {
                all.push((truth.to_string(), n));
            }
        }
        let overflow = c.overflow || c.numbers.len() >= DISTINCT_MAX;
        columns::shown_values(&by_count(all), overflow)
    } else {
        Vec::new()
    };
    let count_where = |f: fn(f64) -> bool| -> usize {
        c.numbers
            .iter()
            .filter(|(bits, _)| f(f64::from_bits(**bits)))
            .map(|(_, n)| n)
            .sum()
    };
    if !numeric {
        return (values, 0, 0, None);
    }
    let repeated = columns::standing_out(&numbers(), |v| v.parse::<f64>() == Ok(0.0));
    (
        values,
        count_where(|v| v == 0.0),
        count_where(|v| v < 0.0),
        repeated,
    )
}
