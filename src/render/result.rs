//! The Result block: a result laid out as a person reads it.
//!
//! - An object's short values (numbers, booleans, short texts, short lists
//!   of scalars) form a key/value table: at the top, the headline figures.
//! - Its other values follow in the order the code printed them, each in a
//!   section headed by its path (`survival_by › sex`): a nested object is
//!   laid out the same way, recursively to [`Budget::depth`] levels; a list
//!   of records is a table with columns; so is an object of records with
//!   the same fields (pandas' `orient="index"`, the outer key the first
//!   column) and an object of equal-length lists (`orient="list"`); a long
//!   list of scalars is a numbered table; a long text is a paragraph, in
//!   full up to [`Budget::text`] characters; a text that names an image the
//!   front end shows (`"chart": "/out/x.png"`) is that image, among the
//!   charts ([`ResultParts::charts`]).
//! - Auxiliary sections fold into `<details>` with a one-line summary
//!   ([`is_auxiliary`]): tables over [`FOLD_ROWS`] rows, mappings, and keys
//!   named `details`, `cleaning`, `log` or `notes`.
//! - A table wider than a comment is split into column groups, each
//!   repeating the first column, or transposed when it has one row
//!   ([`TABLE_WIDTH`]).
//! - Numbers are written as people write them ([`display_json_number`]).
//! - Anything deeper, or of another shape (lists of lists, mixed lists), is
//!   a folded `<details>` block with the pretty-printed JSON, cut only at
//!   [`Budget::json`] characters and said so — never one line cut with `…`.
//!
//! Every text from the result is escaped for where it stands
//! ([`crate::markdown`]'s escaping: keys as [`escape_line`], texts as
//! [`escape_cell`] or a paragraph, JSON titles as [`html_text`]).

use std::fmt::Write as _;

use serde_json::{Map, Value};

use super::{
    Budget, ResultImage, code_span, cut_chars, escape_cell, escape_line, fenced, html_text,
};
use crate::units::{NumberKind, display_json_number, is_rounded};

/// Most characters of a text shown in a table cell; a longer text value of
/// an object is a paragraph under its key, and in a table of records it is
/// cut here (the JSON report has it in full).
pub(super) const CELL_TEXT: usize = 160;
/// Most characters of a list of scalars shown in one cell (`1, 2, 3`).
const INLINE_LIST: usize = 100;
/// Most values of a list of scalars shown in one cell.
const INLINE_LIST_ITEMS: usize = 10;
/// Most characters of a nested value's compact JSON in a record's cell.
const CELL_JSON: usize = 80;
/// Most columns of a table of records.
const MAX_COLUMNS: usize = 12;
/// Most characters of a key shown in a table or a heading.
const KEY_CHARS: usize = 100;
/// Rows from which a table beyond the headline is folded into `<details>`.
pub(crate) const FOLD_ROWS: usize = 10;
/// Words of a key that name an auxiliary part (folded): `cleaning_log`,
/// `notes`, `region_mapping`.
const AUXILIARY_WORDS: [&str; 8] = [
    "details", "cleaning", "log", "logs", "notes", "mapping", "mappings", "cleaned",
];
/// The width a table may take, in characters of its cells plus
/// [`COLUMN_PADDING`] per column: GitHub's comment column is about 800
/// pixels, about 110 characters of its 14-pixel font.
const TABLE_WIDTH: usize = 110;
/// What a column takes beyond its text (GitHub pads a cell 13 pixels on
/// each side, and draws its border).
const COLUMN_PADDING: usize = 4;

/// How a value is shown inside an object.
enum Shape<'a> {
    /// A row of the key/value table.
    Cell,
    /// A paragraph under its key.
    Text(&'a str),
    /// The image the front end shows for the file the value names.
    Image(&'a ResultImage),
    /// A section of its own, laid out like the result.
    Object(&'a Map<String, Value>),
    /// A table with one column per field.
    Records(&'a [Value]),
    /// A table with one column per field, of records built from an object
    /// of records or of equal-length lists.
    Built(Vec<Value>),
    /// A numbered table of values.
    Values(&'a [Value]),
    /// Folded, pretty-printed JSON.
    Json,
}

/// How `v`, under `key`, is shown inside an object.
fn shape_of<'a>(key: &str, v: &'a Value, images: &'a [ResultImage]) -> Shape<'a> {
    match v {
        Value::String(s) => match image_named(s, images) {
            Some(image) => Shape::Image(image),
            None if s.chars().count() > CELL_TEXT => Shape::Text(s),
            None => Shape::Cell,
        },
        Value::Object(m) if m.is_empty() => Shape::Cell,
        Value::Object(m) => match records_of_object(m, key) {
            Some(rows) => Shape::Built(rows),
            None => Shape::Object(m),
        },
        Value::Array(a) if a.is_empty() => Shape::Cell,
        Value::Array(a) if a.iter().all(Value::is_object) => Shape::Records(a),
        Value::Array(a) if a.iter().all(is_scalar) => {
            if inline_list(a).is_some() {
                Shape::Cell
            } else {
                Shape::Values(a)
            }
        }
        Value::Array(_) => Shape::Json,
        _ => Shape::Cell,
    }
}

/// An object that is one table, as its rows: records with the same fields
/// (the outer key first, under [`index_name`]), or equal-length lists of
/// scalars, at least one of numbers (a row per position).
fn records_of_object(m: &Map<String, Value>, key: &str) -> Option<Vec<Value>> {
    if m.len() < 2 {
        return None;
    }
    let first = m.values().next()?;
    if let Some(fields) = first.as_object() {
        let same = m.values().all(|v| {
            v.as_object().is_some_and(|o| {
                o.len() == fields.len()
                    && o.len() < MAX_COLUMNS
                    && o.keys().all(|k| fields.contains_key(k))
                    && o.values().all(is_scalar)
            })
        });
        if !same || fields.is_empty() {
            return None;
        }
        let mut index = index_name(key);
        while fields.contains_key(&index) {
            index.push('_');
        }
        let rows = m.iter().map(|(k, v)| {
            let mut row = Map::new();
            row.insert(index.clone(), Value::String(k.clone()));
            row.extend(
                v.as_object()
                    .into_iter()
                    .flatten()
                    .map(|(f, x)| (f.clone(), x.clone())),
            );
            Value::Object(row)
        });
        return Some(rows.collect());
    }
    let len = first.as_array().map(Vec::len)?;
    let lists = m.values().all(|v| {
        v.as_array()
            .is_some_and(|a| a.len() == len && a.iter().all(is_scalar))
    });
    let numbers = m
        .values()
        .any(|v| v.as_array().is_some_and(|a| a.iter().all(Value::is_number)));
    if !lists || !numbers || len < 2 || m.len() > MAX_COLUMNS {
        return None;
    }
    let rows = (0..len).map(|i| {
        let row: Map<String, Value> = m.iter().map(|(k, v)| (k.clone(), v[i].clone())).collect();
        Value::Object(row)
    });
    Some(rows.collect())
}

/// The first column of a table built from an object of records: what the
/// key groups by (`by_channel` → `channel`), else the key itself (`key` at
/// the top).
fn index_name(key: &str) -> String {
    let by = ["by_", "per_"]
        .iter()
        .find_map(|p| key.rfind(p).map(|i| &key[i + p.len()..]));
    match by {
        Some(rest) if !rest.is_empty() => rest.to_string(),
        _ if key.is_empty() => "key".to_string(),
        _ => key.to_string(),
    }
}

/// True for a section a reader looks at only to check the answer, folded
/// into `<details>`: a key named for it ([`AUXILIARY_WORDS`]), a table of
/// more than [`FOLD_ROWS`] rows, or a mapping (texts to texts, some
/// mapped to the same text, or more than [`FOLD_ROWS`] of them).
fn is_auxiliary(key: &str, shape: &Shape<'_>) -> bool {
    is_auxiliary_name(key)
        || match shape {
            Shape::Records(a) | Shape::Values(a) => a.len() > FOLD_ROWS,
            Shape::Built(rows) => rows.len() > FOLD_ROWS,
            Shape::Object(m) if m.values().all(Value::is_string) => {
                let mut texts: Vec<&Value> = m.values().collect();
                texts.sort_by_key(|v| v.as_str());
                texts.dedup();
                m.len() > FOLD_ROWS || texts.len() < m.len()
            }
            Shape::Object(m) => m.values().filter(|v| is_scalar(v)).count() > FOLD_ROWS,
            _ => false,
        }
}

/// True for a key named for an auxiliary part ([`AUXILIARY_WORDS`]).
fn is_auxiliary_name(key: &str) -> bool {
    key.to_lowercase()
        .split(|c: char| !c.is_ascii_alphanumeric())
        .any(|w| AUXILIARY_WORDS.contains(&w))
}

/// The image a result text names: `/out/<name>` or `<name>` of a file the
/// front end shows inline.
fn image_named<'a>(s: &str, images: &'a [ResultImage]) -> Option<&'a ResultImage> {
    let name = s.trim();
    let name = name.strip_prefix("/out/").unwrap_or(name);
    images.iter().find(|i| i.name == name)
}

pub(super) fn is_scalar(v: &Value) -> bool {
    !(v.is_object() || v.is_array())
}

/// A short list of scalars as one cell (`2019, 2020, 2021`), if it is short.
fn inline_list(items: &[Value]) -> Option<String> {
    if items.len() > INLINE_LIST_ITEMS {
        return None;
    }
    let parts: Vec<String> = items
        .iter()
        .map(|v| match v {
            Value::String(s) => s.clone(),
            Value::Null => "null".into(),
            Value::Number(n) => display_json_number(n, NumberKind::Plain),
            other => other.to_string(),
        })
        .collect();
    let joined = parts.join(", ");
    (joined.chars().count() <= INLINE_LIST).then(|| escape_cell(&joined))
}

/// One table cell under `key`: a number as [`display_json_number`] writes
/// it for what the key names, anything else as [`cell_of`].
fn cell_in(key: &str, v: &Value) -> String {
    match v {
        Value::Number(n) => display_json_number(n, NumberKind::of_key(key)),
        other => cell_of(other),
    }
}

/// True when some number in `v` is shown with fewer digits than it has
/// (under `key`, as [`cell_in`] shows it).
pub(super) fn rounds_numbers(key: &str, v: &Value) -> bool {
    match v {
        Value::Number(n) => is_rounded(n, NumberKind::of_key(key)),
        Value::Array(a) => a.iter().any(|x| rounds_numbers(key, x)),
        Value::Object(m) => m.iter().any(|(k, x)| rounds_numbers(k, x)),
        _ => false,
    }
}

/// One table cell: numbers as people write them, texts cut at
/// [`CELL_TEXT`], a nested value as its compact JSON when short, else what
/// it holds.
fn cell_of(v: &Value) -> String {
    match v {
        Value::String(s) => escape_cell(&cut_chars(s, CELL_TEXT)),
        Value::Null => String::new(),
        Value::Number(n) => display_json_number(n, NumberKind::Plain),
        Value::Bool(_) => v.to_string(),
        Value::Array(a) if a.iter().all(is_scalar) => {
            inline_list(a).unwrap_or_else(|| format!("_{}_", items_text(a.len())))
        }
        other => {
            let json = other.to_string();
            if json.chars().count() <= CELL_JSON {
                format!("<code>{}</code>", escape_cell(&json))
            } else {
                match other {
                    Value::Object(m) => format!("_{}_", fields_text(m.len())),
                    Value::Array(a) => format!("_{}_", items_text(a.len())),
                    _ => String::new(),
                }
            }
        }
    }
}

/// True when [`cell_of`] cannot show `v` whole.
fn cell_is_cut(v: &Value) -> bool {
    match v {
        Value::String(s) => s.chars().count() > CELL_TEXT,
        Value::Array(a) if a.iter().all(is_scalar) => inline_list(a).is_none(),
        Value::Array(_) | Value::Object(_) => v.to_string().chars().count() > CELL_JSON,
        _ => false,
    }
}

fn rows_text(n: usize) -> String {
    format!("{n} row{}", if n == 1 { "" } else { "s" })
}

fn items_text(n: usize) -> String {
    format!("{n} item{}", if n == 1 { "" } else { "s" })
}

fn fields_text(n: usize) -> String {
    format!("{n} field{}", if n == 1 { "" } else { "s" })
}

fn key_text(k: &str) -> String {
    escape_line(&cut_chars(k, KEY_CHARS))
}

/// `survival_by › sex`, escaped for Markdown.
fn path_text(path: &[&str]) -> String {
    path.iter()
        .map(|k| key_text(k))
        .collect::<Vec<_>>()
        .join(" › ")
}

/// The Result block in the parts the answer shows apart, in its order:
/// the headline figures first, then the charts, then the tables.
#[derive(Debug, Default)]
pub(super) struct ResultParts {
    /// The result's top-level key/value table.
    pub(super) headline: String,
    /// The images the result names (`"chart": "/out/x.png"`).
    pub(super) charts: String,
    /// Its sections (tables, texts, JSON), the auxiliary ones folded, and
    /// what was left out for the budget.
    pub(super) tables: String,
}

/// The Result block of `result` within `b`; `images` are the files the
/// front end shows inline, by their name in `/out`.
pub(super) fn result_md(result: &Value, b: &Budget, images: &[ResultImage]) -> ResultParts {
    let mut layout = Layout {
        b,
        images,
        sections_left: b.sections,
        left_out: Vec::new(),
        folding: false,
        parts: ResultParts::default(),
    };
    match result {
        Value::Object(map) => match records_of_object(map, "") {
            Some(rows) => layout.records(&[], &rows, b.rows),
            None => layout.object(&[], map),
        },
        Value::Array(items) if !items.is_empty() && items.iter().all(Value::is_object) => {
            layout.records(&[], items, b.rows)
        }
        Value::Array(items) if items.iter().all(is_scalar) => layout.values("", items, b.rows),
        other => layout.parts.tables.push_str(&json_block(other, b.json)),
    }
    let out = &mut layout.parts.tables;
    *out = out.trim_start_matches('\n').to_string();
    if !layout.left_out.is_empty() {
        let n = layout.left_out.len();
        let names: Vec<String> = layout.left_out.iter().take(10).cloned().collect();
        let _ = writeln!(
            out,
            "\n_{n} more section{} left out to fit the limit ({}{}); the JSON report has them._",
            if n == 1 { "" } else { "s" },
            names.join(", "),
            if n > 10 { ", …" } else { "" }
        );
    }
    layout.parts
}

/// The Markdown being written, and what of the budget is left.
struct Layout<'a> {
    b: &'a Budget,
    images: &'a [ResultImage],
    /// Sections that may still be written.
    sections_left: usize,
    /// The paths of sections left out for the budget.
    left_out: Vec<String>,
    /// True inside a folded section (nothing in it folds again).
    folding: bool,
    parts: ResultParts,
}

impl Layout<'_> {
    /// An object: its key/value table (at the top, the headline figures),
    /// then its sections in key order.
    fn object(&mut self, path: &[&str], map: &Map<String, Value>) {
        let rows = if path.is_empty() {
            self.b.rows
        } else {
            self.b.nested_rows.max(1)
        };
        // A short value under an auxiliary name folds too, out of the table.
        let in_table = |k: &str, v: &Value| {
            matches!(shape_of(k, v, self.images), Shape::Cell) && !is_auxiliary_name(k)
        };
        let cells: Vec<(&String, &Value)> = map.iter().filter(|(k, v)| in_table(k, v)).collect();
        if !cells.is_empty() {
            let out = if path.is_empty() {
                &mut self.parts.headline
            } else {
                &mut self.parts.tables
            };
            out.push_str("| Key | Value |\n| --- | --- |\n");
            for (k, v) in cells.iter().take(rows) {
                let _ = writeln!(out, "| {} | {} |", key_text(k), cell_in(k, v));
            }
            if cells.len() > rows {
                let _ = writeln!(
                    out,
                    "\n_… {} more keys ({} in all)._",
                    cells.len() - rows,
                    cells.len()
                );
            }
        }
        for (k, v) in map {
            let shape = match (shape_of(k, v, self.images), v) {
                (_, _) if in_table(k, v) => continue,
                (Shape::Cell, Value::Array(a)) if !a.is_empty() => Shape::Values(a),
                (Shape::Cell, Value::String(t)) => Shape::Text(t),
                (shape, _) => shape,
            };
            let mut sub: Vec<&str> = path.to_vec();
            sub.push(k);
            self.section(&sub, v, shape);
        }
    }

    /// One value in a section of its own, headed by its path; an auxiliary
    /// one ([`is_auxiliary`]) folded into `<details>` with a one-line summary.
    fn section(&mut self, path: &[&str], v: &Value, shape: Shape<'_>) {
        // An image is a line and is never left out.
        if !matches!(shape, Shape::Image(_)) {
            if self.sections_left == 0 {
                self.left_out.push(path_text(path));
                return;
            }
            self.sections_left -= 1;
        }
        let key = path.last().copied().unwrap_or_default();
        if self.folding || !is_auxiliary(key, &shape) || matches!(shape, Shape::Image(_)) {
            return self.section_body(path, v, shape);
        }
        let what = match &shape {
            Shape::Records(a) | Shape::Values(a) => rows_text(a.len()),
            Shape::Built(rows) => rows_text(rows.len()),
            Shape::Text(t) => format!("{} characters", t.chars().count()),
            Shape::Cell => match v {
                Value::Array(a) => items_text(a.len()),
                Value::String(t) => format!("{} characters", t.chars().count()),
                _ => "a value".into(),
            },
            _ => match v {
                Value::Object(m) => fields_text(m.len()),
                Value::Array(a) => items_text(a.len()),
                _ => "a value".into(),
            },
        };
        let before = std::mem::take(&mut self.parts.tables);
        self.folding = true;
        self.section_body(path, v, shape);
        self.folding = false;
        let body = std::mem::replace(&mut self.parts.tables, before);
        // The summary names the section: its own heading goes.
        let heading = format!("\n**{}**\n\n", path_text(path));
        let body = body.strip_prefix(&heading).unwrap_or(&body);
        let _ = write!(
            self.parts.tables,
            "\n<details><summary><b>{}</b> · {what}</summary>\n\n{}\n</details>\n",
            path_title(path),
            body.trim_matches('\n')
        );
    }

    /// The heading and content of one section.
    fn section_body(&mut self, path: &[&str], v: &Value, shape: Shape<'_>) {
        // Tables down to `depth` levels; a list of records directly in the
        // result is a table at every budget.
        let as_table = path.len() <= self.b.depth || (path.len() == 1 && self.b.rows > 0);
        let rows = if path.len() == 1 {
            self.b.rows
        } else {
            self.b.nested_rows
        };
        let key = path.last().copied().unwrap_or_default();
        let heading = format!("\n**{}**\n\n", path_text(path));
        match shape {
            Shape::Object(m) if path.len() <= self.b.depth => {
                // Its sections are headed by their paths: the object's own
                // heading is over its key/value table, when it has one.
                if m.iter()
                    .any(|(k, v)| matches!(shape_of(k, v, self.images), Shape::Cell))
                {
                    self.parts.tables.push_str(&heading);
                }
                self.object(path, m);
            }
            Shape::Records(items) if as_table && rows > 0 => {
                self.parts.tables.push_str(&heading);
                self.records(path, items, rows);
            }
            Shape::Built(items) if as_table && rows > 0 => {
                self.parts.tables.push_str(&heading);
                self.records(path, &items, rows);
            }
            Shape::Values(items) if as_table && rows > 0 => {
                self.parts.tables.push_str(&heading);
                self.values(key, items, rows);
            }
            Shape::Text(text) => {
                self.parts.tables.push_str(&heading);
                self.parts.tables.push_str(&paragraph(text, self.b.text));
            }
            Shape::Image(image) => {
                let _ = write!(
                    self.parts.charts,
                    "{heading}![{}]({})\n\n<sub>{}</sub>\n",
                    key_text(path.last().copied().unwrap_or("chart")),
                    image.url,
                    code_span(&cut_chars(&image.name, super::NAME_CHARS))
                );
            }
            Shape::Cell => {
                let t = &mut self.parts.tables;
                let _ = write!(t, "{heading}| Key | Value |\n| --- | --- |\n");
                let _ = writeln!(t, "| {} | {} |", key_text(key), cell_in(key, v));
            }
            _ => self
                .parts
                .tables
                .push_str(&folded_json(path, v, self.b.json)),
        }
    }

    /// A list of records as a table with a column per field (the first
    /// [`MAX_COLUMNS`] fields in the order they appear), at most `rows`
    /// rows, split to fit ([`fit_columns`]). Texts are cut at [`CELL_TEXT`]
    /// (said under the table); when a nested value is too long for its
    /// cell, the list follows as folded JSON, so every value can be read in
    /// the comment.
    fn records(&mut self, path: &[&str], items: &[Value], rows: usize) {
        let mut cols: Vec<&str> = Vec::new();
        for it in items {
            for k in it.as_object().into_iter().flat_map(|m| m.keys()) {
                if !cols.contains(&k.as_str()) && cols.len() < MAX_COLUMNS {
                    cols.push(k);
                }
            }
        }
        let (mut texts_cut, mut nested_cut) = (false, false);
        let mut cells: Vec<Vec<String>> = Vec::new();
        for it in items.iter().take(rows) {
            let row: Vec<String> = cols
                .iter()
                .map(|c| match it.get(*c) {
                    Some(v) => {
                        if cell_is_cut(v) {
                            texts_cut |= v.is_string();
                            nested_cut |= !v.is_string();
                        }
                        cell_in(c, v)
                    }
                    None => String::new(),
                })
                .collect();
            cells.push(row);
        }
        for c in 0..cols.len() {
            align_decimals(&mut cells, c);
        }
        let header: Vec<String> = cols.iter().map(|c| key_text(c)).collect();
        let s = &mut self.parts.tables;
        s.push_str(&fit_columns(&header, &cells));
        if items.len() > rows {
            let _ = writeln!(
                s,
                "\n_… {} more rows ({} in all)._",
                items.len() - rows,
                items.len()
            );
        }
        let more_fields = items
            .iter()
            .filter_map(Value::as_object)
            .flat_map(|m| m.keys())
            .any(|k| !cols.contains(&k.as_str()));
        if more_fields {
            let _ = writeln!(
                s,
                "\n_Only the first {MAX_COLUMNS} fields are columns; the JSON report has them all._"
            );
        }
        if texts_cut {
            let _ = writeln!(
                s,
                "\n_Texts over {CELL_TEXT} characters are cut in this table; the JSON report has them in full._"
            );
        }
        if nested_cut {
            let _ = writeln!(
                s,
                "\n_Nested values are summarised in this table; the rows in full follow as JSON._"
            );
            let list = Value::Array(items.to_vec());
            let json = folded_json(path, &list, self.b.json);
            self.parts.tables.push_str(&json);
        }
    }

    /// A list of scalars (under `key`) as a numbered table of at most `rows` values.
    fn values(&mut self, key: &str, items: &[Value], rows: usize) {
        let s = &mut self.parts.tables;
        s.push_str("| # | Value |\n| --- | --- |\n");
        for (i, v) in items.iter().take(rows).enumerate() {
            let _ = writeln!(s, "| {} | {} |", i + 1, cell_in(key, v));
        }
        if items.len() > rows {
            let _ = writeln!(
                s,
                "\n_… {} more values ({} in all)._",
                items.len() - rows,
                items.len()
            );
        }
    }
}

/// Column `c` of `rows` with one number of decimals: when its numbers have
/// at most two decimals (cents, `7.75`) and some have fewer, those are
/// padded (`101.5` → `101.50`, `104` → `104.00`); other columns as they are.
fn align_decimals(rows: &mut [Vec<String>], c: usize) {
    let decimals = |t: &str| t.split_once('.').map_or(0, |(_, f)| f.len());
    let is_number = |t: &str| {
        !t.is_empty()
            && !t.contains('e')
            && t.replace(',', "").parse::<f64>().is_ok_and(f64::is_finite)
    };
    let numbers: Vec<&String> = rows
        .iter()
        .filter_map(|r| r.get(c))
        .filter(|t| is_number(t))
        .collect();
    let most = numbers.iter().map(|t| decimals(t)).max().unwrap_or(0);
    if most == 0 || most > 2 {
        return;
    }
    for cell in rows.iter_mut().filter_map(|r| r.get_mut(c)) {
        if is_number(cell) {
            let have = decimals(cell);
            if have == 0 {
                cell.push('.');
            }
            cell.push_str(&"0".repeat(most - have));
        }
    }
}

/// A table of `header` and `rows` (cells as Markdown) that fits
/// [`TABLE_WIDTH`]: as it is when it fits; transposed into a field/value
/// table when it has one row; else split into column groups, each
/// repeating the first column (the label of a row).
pub(super) fn fit_columns(header: &[String], rows: &[Vec<String>]) -> String {
    let width = |i: usize| {
        let text = |c: &String| c.replace('\\', "").chars().count();
        let cells = rows.iter().filter_map(|r| r.get(i)).map(text);
        cells.chain([text(&header[i])]).max().unwrap_or(0) + COLUMN_PADDING
    };
    let widths: Vec<usize> = (0..header.len()).map(width).collect();
    let table = |cols: &[usize]| {
        let mut t = String::new();
        let names: Vec<&str> = cols.iter().map(|&i| header[i].as_str()).collect();
        let _ = writeln!(t, "| {} |", names.join(" | "));
        let _ = writeln!(t, "|{}", " --- |".repeat(cols.len()));
        for r in rows {
            let cells: Vec<&str> = cols.iter().map(|&i| r[i].as_str()).collect();
            let _ = writeln!(t, "| {} |", cells.join(" | "));
        }
        t
    };
    if widths.iter().sum::<usize>() <= TABLE_WIDTH || header.len() < 3 {
        return table(&(0..header.len()).collect::<Vec<_>>());
    }
    if let [row] = rows {
        let mut t = String::from("| Field | Value |\n| --- | --- |\n");
        for (name, cell) in header.iter().zip(row) {
            let _ = writeln!(t, "| {name} | {cell} |");
        }
        return t;
    }
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut group = vec![0];
    for i in 1..header.len() {
        let used: usize = group.iter().map(|&c| widths[c]).sum();
        if group.len() > 1 && used + widths[i] > TABLE_WIDTH {
            groups.push(std::mem::replace(&mut group, vec![0]));
        }
        group.push(i);
    }
    groups.push(group);
    let n = groups.len();
    let parts: Vec<String> = groups
        .iter()
        .enumerate()
        .map(|(g, cols)| format!("_Columns {} of {n}:_\n\n{}", g + 1, table(cols)))
        .collect();
    parts.join("\n")
}

/// A long text as a paragraph: escaped like a cell (no HTML, mentions,
/// links or emphasis; line breaks kept), no block syntax at its start, cut
/// at `max` characters and said so.
fn paragraph(text: &str, max: usize) -> String {
    let text = text.trim();
    let n = text.chars().count();
    let shown: String = text.chars().take(max).collect();
    let mut s = format!("{}\n", super::paragraph(&shown));
    if n > max {
        let _ = writeln!(
            s,
            "\n_The text was cut at {max} of {n} characters; the JSON report has it in full._"
        );
    }
    s
}

/// A path as the title of a `<details>` summary (`result` at the top).
fn path_title(path: &[&str]) -> String {
    if path.is_empty() {
        "result".to_string()
    } else {
        path.iter()
            .map(|k| html_text(&cut_chars(k, KEY_CHARS)))
            .collect::<Vec<_>>()
            .join(" › ")
    }
}

/// A value as folded, pretty-printed JSON, headed by its path.
fn folded_json(path: &[&str], v: &Value, max: usize) -> String {
    let what = match v {
        Value::Object(m) => fields_text(m.len()),
        Value::Array(a) => items_text(a.len()),
        _ => "a value".into(),
    };
    let title = path_title(path);
    format!(
        "\n<details><summary><b>{title}</b> · {what} · JSON</summary>\n\n{}\n</details>\n",
        json_block(v, max)
    )
}

/// `v` pretty-printed in a fenced block, cut at `max` characters and said so.
pub(super) fn json_block(v: &Value, max: usize) -> String {
    let pretty = serde_json::to_string_pretty(v).unwrap_or_default();
    let n = pretty.chars().count();
    if n <= max {
        fenced("json", &pretty)
    } else {
        let cut: String = pretty.chars().take(max).collect();
        format!(
            "{}_The JSON was cut at {max} of {n} characters; the JSON report has it in full._\n",
            fenced("json", &cut)
        )
    }
}

/// The names in `/out` of the images the Result block shows where the
/// result names them (a top-level text such as `"chart": "/out/x.png"`), so
/// that a front end's files block need not show them a second time.
pub(super) fn images_shown_in(result: &Value, images: &[ResultImage]) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    for v in result.as_object().into_iter().flat_map(|m| m.values()) {
        if let Some(i) = v.as_str().and_then(|s| image_named(s, images))
            && !found.contains(&i.name)
        {
            found.push(i.name.clone());
        }
    }
    found
}
