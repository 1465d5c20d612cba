//! The Result block: a result laid out as a person reads it.
//!
//! - An object's short values (numbers, booleans, short texts, short lists
//!   of scalars) form a key/value table.
//! - Its other values follow in the order the code printed them, each in a
//!   section headed by its path (`survival_by › sex`): a nested object is
//!   laid out the same way, recursively to [`Budget::depth`] levels; a list
//!   of records is a table with columns; a long list of scalars is a
//!   numbered table; a long text is a paragraph, in full up to
//!   [`Budget::text`] characters; a text that names an image the front end
//!   shows (`"chart": "/out/x.png"`) is that image.
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
use crate::units::readable_json_number;

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
    /// A numbered table of values.
    Values(&'a [Value]),
    /// Folded, pretty-printed JSON.
    Json,
}

fn shape_of<'a>(v: &'a Value, images: &'a [ResultImage]) -> Shape<'a> {
    match v {
        Value::String(s) => match image_named(s, images) {
            Some(image) => Shape::Image(image),
            None if s.chars().count() > CELL_TEXT => Shape::Text(s),
            None => Shape::Cell,
        },
        Value::Object(m) if m.is_empty() => Shape::Cell,
        Value::Object(m) => Shape::Object(m),
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
            Value::Number(n) => readable_json_number(n),
            other => other.to_string(),
        })
        .collect();
    let joined = parts.join(", ");
    (joined.chars().count() <= INLINE_LIST).then(|| escape_cell(&joined))
}

/// One table cell: numbers to 4 significant digits, texts cut at
/// [`CELL_TEXT`], a nested value as its compact JSON when short, else what
/// it holds.
fn cell_of(v: &Value) -> String {
    match v {
        Value::String(s) => escape_cell(&cut_chars(s, CELL_TEXT)),
        Value::Null => String::new(),
        Value::Number(n) => readable_json_number(n),
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

/// The Result block of `result` within `b`; `images` are the files the
/// front end shows inline, by their name in `/out`.
pub(super) fn result_md(result: &Value, b: &Budget, images: &[ResultImage]) -> String {
    let mut layout = Layout {
        b,
        images,
        sections_left: b.sections,
        left_out: Vec::new(),
        out: String::new(),
    };
    match result {
        Value::Object(map) => layout.object(&[], map),
        Value::Array(items) if !items.is_empty() && items.iter().all(Value::is_object) => {
            layout.records(&[], items, b.rows)
        }
        Value::Array(items) if items.iter().all(is_scalar) => layout.values(items, b.rows),
        other => layout.out.push_str(&json_block(other, b.json)),
    }
    layout.out = layout.out.trim_start_matches('\n').to_string();
    if !layout.left_out.is_empty() {
        let n = layout.left_out.len();
        let names: Vec<String> = layout.left_out.iter().take(10).cloned().collect();
        let _ = writeln!(
            layout.out,
            "\n_{n} more section{} left out to fit the limit ({}{}); the JSON report has them._",
            if n == 1 { "" } else { "s" },
            names.join(", "),
            if n > 10 { ", …" } else { "" }
        );
    }
    layout.out
}

/// The Markdown being written, and what of the budget is left.
struct Layout<'a> {
    b: &'a Budget,
    images: &'a [ResultImage],
    /// Sections that may still be written.
    sections_left: usize,
    /// The paths of sections left out for the budget.
    left_out: Vec<String>,
    out: String,
}

impl Layout<'_> {
    /// An object: its key/value table, then its sections in key order.
    fn object(&mut self, path: &[&str], map: &Map<String, Value>) {
        let rows = if path.is_empty() {
            self.b.rows
        } else {
            self.b.nested_rows.max(1)
        };
        let cells: Vec<(&String, &Value)> = map
            .iter()
            .filter(|(_, v)| matches!(shape_of(v, self.images), Shape::Cell))
            .collect();
        if !cells.is_empty() {
            self.out.push_str("| Key | Value |\n| --- | --- |\n");
            for (k, v) in cells.iter().take(rows) {
                let _ = writeln!(self.out, "| {} | {} |", key_text(k), cell_of(v));
            }
            if cells.len() > rows {
                let _ = writeln!(
                    self.out,
                    "\n_… {} more keys ({} in all)._",
                    cells.len() - rows,
                    cells.len()
                );
            }
        }
        for (k, v) in map {
            let shape = shape_of(v, self.images);
            if matches!(shape, Shape::Cell) {
                continue;
            }
            let mut sub: Vec<&str> = path.to_vec();
            sub.push(k);
            self.section(&sub, v, shape);
        }
    }

    /// One value in a section of its own, headed by its path.
    fn section(&mut self, path: &[&str], v: &Value, shape: Shape<'_>) {
        // An image is a line and is never left out.
        if !matches!(shape, Shape::Image(_)) {
            if self.sections_left == 0 {
                self.left_out.push(path_text(path));
                return;
            }
            self.sections_left -= 1;
        }
        // Tables down to `depth` levels; a list of records directly in the
        // result is a table at every budget.
        let as_table = path.len() <= self.b.depth || (path.len() == 1 && self.b.rows > 0);
        let rows = if path.len() == 1 {
            self.b.rows
        } else {
            self.b.nested_rows
        };
        match shape {
            Shape::Object(m) if path.len() <= self.b.depth => {
                // Its sections are headed by their paths: the object's own
                // heading is over its key/value table, when it has one.
                if m.values()
                    .any(|v| matches!(shape_of(v, self.images), Shape::Cell))
                {
                    let _ = write!(self.out, "\n**{}**\n\n", path_text(path));
                }
                self.object(path, m);
            }
            Shape::Records(items) if as_table && rows > 0 => {
                let _ = write!(self.out, "\n**{}**\n\n", path_text(path));
                self.records(path, items, rows);
            }
            Shape::Values(items) if as_table && rows > 0 => {
                let _ = write!(self.out, "\n**{}**\n\n", path_text(path));
                self.values(items, rows);
            }
            Shape::Text(text) => {
                let _ = write!(self.out, "\n**{}**\n\n", path_text(path));
                self.out.push_str(&paragraph(text, self.b.text));
            }
            Shape::Image(image) => {
                let _ = write!(
                    self.out,
                    "\n**{}**\n\n![{}]({})\n\n<sub>{}</sub>\n",
                    path_text(path),
                    key_text(path.last().copied().unwrap_or("chart")),
                    image.url,
                    code_span(&cut_chars(&image.name, super::NAME_CHARS))
                );
            }
            _ => self.out.push_str(&folded_json(path, v, self.b.json)),
        }
    }

    /// A list of records as a table with a column per field (the first
    /// [`MAX_COLUMNS`] fields in the order they appear), at most `rows`
    /// rows. Texts are cut at [`CELL_TEXT`] (said under the table); when a
    /// nested value is too long for its cell, the list follows as folded
    /// JSON, so every value can be read in the comment.
    fn records(&mut self, path: &[&str], items: &[Value], rows: usize) {
        let mut cols: Vec<&str> = Vec::new();
        for it in items {
            for k in it.as_object().into_iter().flat_map(|m| m.keys()) {
                if !cols.contains(&k.as_str()) && cols.len() < MAX_COLUMNS {
                    cols.push(k);
                }
            }
        }
        let s = &mut self.out;
        let header: Vec<String> = cols.iter().map(|c| key_text(c)).collect();
        let _ = writeln!(s, "| {} |", header.join(" | "));
        let _ = writeln!(s, "|{}", " --- |".repeat(cols.len()));
        let (mut texts_cut, mut nested_cut) = (false, false);
        for it in items.iter().take(rows) {
            let row: Vec<String> = cols
                .iter()
                .map(|c| match it.get(*c) {
                    Some(v) => {
                        if cell_is_cut(v) {
                            texts_cut |= v.is_string();
                            nested_cut |= !v.is_string();
                        }
                        cell_of(v)
                    }
                    None => String::new(),
                })
                .collect();
            let _ = writeln!(s, "| {} |", row.join(" | "));
        }
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
            self.out.push_str(&json);
        }
    }

    /// A list of scalars as a numbered table of at most `rows` values.
    fn values(&mut self, items: &[Value], rows: usize) {
        let s = &mut self.out;
        s.push_str("| # | Value |\n| --- | --- |\n");
        for (i, v) in items.iter().take(rows).enumerate() {
            let _ = writeln!(s, "| {} | {} |", i + 1, cell_of(v));
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

/// A value as folded, pretty-printed JSON, headed by its path.
fn folded_json(path: &[&str], v: &Value, max: usize) -> String {
    let what = match v {
        Value::Object(m) => fields_text(m.len()),
        Value::Array(a) => items_text(a.len()),
        _ => "a value".into(),
    };
    let title = if path.is_empty() {
        "result".to_string()
    } else {
        path.iter()
            .map(|k| html_text(&cut_chars(k, KEY_CHARS)))
            .collect::<Vec<_>>()
            .join(" › ")
    };
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
