//! Input previews: what the model is told about each input file, computed
//! on the host at the policy's `model.data` level. A preview tells the
//! truth about the file as pandas reads it: the encoding (a BOM, UTF-16,
//! cp1252 — [`text`]), the delimiter and line endings of delimited text and
//! its records, not lines ([`csv`]), the sheets of a workbook ([`xlsx`]),
//! and how to read it (`pd.read_csv(..., sep=";", encoding="cp1252")`).

mod columns;
mod csv;
mod parquet;
mod text;
mod xlsx;
mod zip;

use serde_json::Value;

use super::{is_invisible, strip_invisible};
use crate::model::excerpt;
use crate::policy::DataLevel;
use crate::sandbox::InputFile;
use csv::CsvDialect;
use text::Encoding;

/// Most bytes of one input preview.
pub(super) const PREVIEW_MAX_BYTES: usize = 6144;
/// Most bytes of a preview's column facts (one line per column, with a
/// text column's values and counts).
const FACTS_MAX_BYTES: usize = 3000;
/// The column whose values are kinds of rows, each shown in the preview:
/// `github:issues` lists pull requests as issues.
const KIND_COLUMN: &str = "is_pull_request";
/// The most of an input read for its preview (JSON up to this size is
/// parsed whole; record counts of bigger files are "more than" the count in
/// this much, with an estimate from the file's size).
pub(super) const PREVIEW_READ: usize = 32 * 1024 * 1024;
/// Most characters of one line of a text preview.
const PREVIEW_LINE_CHARS: usize = 160;
/// Most characters of one value shown.
const VALUE_CHARS: usize = 60;
/// Data rows of a delimited file shown at `preview` (the column facts say
/// the types, gaps and ranges; the rows show how values are written).
const CSV_ROWS: usize = 5;
/// The last data rows shown too, where exports keep a `TOTAL` line.
const CSV_LAST_ROWS: usize = 2;
/// Data rows read for the column kinds at `schema`.
const KIND_ROWS: usize = 50;

/// The preview of one input file at `level`, as the prompt states it: its
/// path under `/data`, its size and its shape — for delimited text the
/// delimiter, encoding and line endings, the `pd.read_csv(...)` call that
/// reads it, the row count, the column names and (at `preview`) the first
/// rows as pandas reads them; for a workbook its sheets; for JSON its top-level shape;
/// for other text its first lines; for a binary file its kind.
pub fn preview_file(file: &InputFile, level: DataLevel) -> String {
    let head = file.head(PREVIEW_READ);
    if head.starts_with(b"PAR1") && (head.len() as u64) < file.size() {
        // A big Parquet file: its footer is at its end, past the head.
        let tail = parquet::footer_len(&file.tail(8))
            .filter(|n| *n <= parquet::MAX_FOOTER)
            .map(|n| file.tail(n + 8))
            .unwrap_or_default();
        return parquet_preview(&file.name, &tail, file.size(), level);
    }
    preview_input_at(&file.name, &head, file.size(), level)
}

/// [`preview_input_at`] of a whole file at `preview` (tests).
#[cfg(test)]
pub(super) fn preview_input(name: &str, bytes: &[u8]) -> String {
    preview_input_at(name, bytes, bytes.len() as u64, DataLevel::Preview)
}

/// The preview of a file from its first `bytes` (at most [`PREVIEW_READ`])
/// and whole `size`: `preview` shows rows and lines, `schema` column names
/// with inferred types (JSON keys with value kinds), `none` the file's name
/// and size only. At most [`PREVIEW_MAX_BYTES`].
pub(super) fn preview_input_at(name: &str, bytes: &[u8], size: u64, level: DataLevel) -> String {
    let mut out = format!("`/data/{}` ({})", shown_name(name), human_size(size));
    if level == DataLevel::None {
        out.push_str("; contents not shown (policy model.data: none)");
        return out;
    }
    let whole = bytes.len() as u64 >= size;
    let lower = name.to_ascii_lowercase();
    let ext = lower.rsplit_once('.').map(|(_, e)| e).unwrap_or("");
    let path = serde_json::to_string(&format!("/data/{}", shown_name(name))).unwrap_or_default();
    if matches!(ext, "xlsx" | "xlsm") && bytes.starts_with(b"PK\x03\x04") {
        return cap_preview(out + &workbook(&path, bytes, whole, level));
    }
    if bytes.starts_with(b"PAR1") && whole {
        return parquet_preview(name, bytes, size, level);
    }
    if let Some(kind) = magic_kind(bytes) {
        out.push_str(&format!(", binary: {kind}; contents not shown"));
        return cap_preview(out);
    }
    let Some(enc) = text::detect(bytes) else {
        out.push_str(", binary: unknown binary data; contents not shown");
        return cap_preview(out);
    };
    let text = text::decode(bytes, enc);
    let ext_delimiter = match ext {
        "csv" => Some(b','),
        "tsv" | "tab" => Some(b'\t'),
        _ => None,
    };
    if let Some(d) = ext_delimiter {
        let file = Head {
            whole,
            read: bytes.len(),
            size,
        };
        return cap_preview(out + &delimited(&path, &text, enc, d, file, level));
    }
    out.push_str(&plain_text(&text, enc, ext, whole, level));
    cap_preview(out)
}

/// The preview of a Parquet file from its last bytes (`tail`: at least
/// its footer) — the facts of its footer, no value at `schema`.
fn parquet_preview(name: &str, tail: &[u8], size: u64, level: DataLevel) -> String {
    let mut out = format!("`/data/{}` ({})", shown_name(name), human_size(size));
    if level == DataLevel::None {
        out.push_str("; contents not shown (policy model.data: none)");
        return out;
    }
    let path = serde_json::to_string(&format!("/data/{}", shown_name(name))).unwrap_or_default();
    let table = match parquet::footer(tail).and_then(|m| parquet::table(&m)) {
        Ok(t) => t,
        Err(e) => {
            out.push_str(&format!(
                ", Parquet file whose footer this preview cannot read ({e})"
            ));
            return cap_preview(out);
        }
    };
    out.push_str(&parquet_facts(&path, &table, level));
    cap_preview(out)
}

/// The shape, the call and the column facts of a Parquet file's footer.
fn parquet_facts(path: &str, t: &parquet::Table, level: DataLevel) -> String {
    let names: Vec<String> = t.columns.iter().map(|c| c.name.clone()).collect();
    let mut out = format!(
        ", Parquet: {} row(s) × {} column(s) in {} row group(s), written by {}. Read it with `pd.read_parquet({path})` (fastparquet)",
        t.rows,
        names.len(),
        t.row_groups,
        serde_json::to_string(&excerpt(&strip_invisible(&t.created_by), 60)).unwrap_or_default()
    );
    if !t.index.is_empty() {
        out.push_str(&format!(
            "; pandas makes {} the DataFrame's index",
            json_list(&t.index, 200)
        ));
    }
    out.push_str(&format!("\nColumns: {}", json_list(&names, 1200)));
    let what = if level == DataLevel::Schema {
        "dtype; missing, if any"
    } else {
        "dtype; missing, if any; min to max from the row groups' statistics"
    };
    let header = format!(
        "\nColumn facts from the file's footer, over all {} rows ({what}; the data pages are not read, so no row is shown and distinct counts are not known):",
        t.rows
    );
    let lines = t.columns.iter().map(|c| {
        let mut line = format!("\n{}: {}", columns::quoted_name(&c.name), c.dtype);
        match c.missing {
            parquet::Missing::Exactly(0) => {}
            parquet::Missing::Exactly(n) => line.push_str(&columns::missing_share(n, t.rows)),
            parquet::Missing::AtLeast(n) => line.push_str(&format!(
                "{} or more: NaN values, missing to pandas too, are not counted in this footer",
                columns::missing_share(n, t.rows)
            )),
            parquet::Missing::Unknown => line.push_str("; missing values not stated in the footer"),
        }
        if let (Some((lo, hi)), DataLevel::Preview) = (&c.range, level) {
            let shown = |s: &str| excerpt(&strip_invisible(s), 40);
            line.push_str(&format!("; {} to {}", shown(lo), shown(hi)));
        }
        line
    });
    out + &columns::budgeted(header, lines, names.len(), FACTS_MAX_BYTES)
}

/// A file name as the prompt shows it: invisible characters dropped, no
/// line break or backquote, at most 120 characters.
pub(super) fn shown_name(name: &str) -> String {
    excerpt(&strip_invisible(name).replace(['\n', '`'], " "), 120)
}

/// How much of a file the preview read.
#[derive(Debug, Clone, Copy)]
struct Head {
    whole: bool,
    read: usize,
    size: u64,
}

/// The preview of delimited text after the file's name and size.
fn delimited(
    path: &str,
    text: &str,
    enc: Encoding,
    ext_delimiter: u8,
    file: Head,
    level: DataLevel,
) -> String {
    let mut dialect = CsvDialect::sniff(text, enc, ext_delimiter);
    let keep = if level == DataLevel::Preview {
        CSV_ROWS
    } else {
        KIND_ROWS
    };
    let table = csv::read_table(text, &dialect, file.whole, keep);
    dialect.line_endings = table.line_endings;
    dialect.decimal_comma = csv::decimal_comma(&table.rows, dialect.delimiter);
    let kind = if dialect.delimiter == b'\t' {
        "TSV"
    } else {
        "CSV"
    };
    let opts = dialect.read_csv_options();
    let call = if opts.is_empty() {
        format!("pd.read_csv({path})")
    } else {
        format!("pd.read_csv({path}, {opts})")
    };
    if table.header.is_empty() {
        return if table.cut {
            format!(
                ", {kind}: its first record is longer than the {} read for this preview; {}",
                human_size(file.read as u64),
                dialect.describe()
            )
        } else {
            format!(
                ", {kind}: empty — no header and no rows (`{call}` raises EmptyDataError: No columns to parse from file)"
            )
        };
    }
    let names = csv::pandas_names(&table.header);
    let mut out = format!(
        ", {kind}: {} × {} column(s); {}. Read it with `{call}`",
        rows_phrase(&table, text.len(), file),
        names.len(),
        dialect.describe()
    );
    if dialect.line_endings.breaks_naive_split() {
        out.push_str(" (records end at \\r: do not split lines on \"\\n\" yourself)");
    }
    if table.open_quote {
        out.push_str(&format!("; a quoted field opened after data row {} is never closed: pandas fails with \"EOF inside string\"", table.count));
    }
    if table.widest > names.len() {
        out.push_str(&format!(
            "; some of the first rows have {} fields but the header {}: pandas uses the extra first column(s) as the index, or fails with \"Expected {} fields\"",
            table.widest,
            names.len(),
            names.len()
        ));
    }
    out.push_str(&columns_and_rows(&names, &table.rows, level));
    let kind = names.iter().position(|n| n == KIND_COLUMN);
    let (facts, kinds, last) = csv::column_facts(text, &dialect, file.whole, names.len(), kind);
    let said = if level == DataLevel::Preview {
        let unseen = facts
            .rows
            .saturating_sub(table.rows.len())
            .min(CSV_LAST_ROWS);
        if unseen > 0 {
            out.push_str(&format!(
                "\nLast {unseen} row(s) read (data rows {} to {}):",
                facts.rows - unseen + 1,
                facts.rows
            ));
            for r in &last[last.len() - unseen..] {
                out.push('\n');
                out.push_str(&json_list(r, 400));
            }
        }
        out.push_str(&other_kinds(&names, &table.rows, &kinds));
        columns::Said::Values
    } else {
        columns::Said::Shape
    };
    out.push_str(&columns::describe(
        &names,
        &facts,
        !table.cut,
        said,
        FACTS_MAX_BYTES,
    ));
    out
}

/// The first row of each kind (a value of [`KIND_COLUMN`]) the first rows
/// shown do not have, with its data row number.
fn other_kinds(names: &[String], shown: &[Vec<String>], kinds: &[(usize, Vec<String>)]) -> String {
    let Some(k) = names.iter().position(|n| n == KIND_COLUMN) else {
        return String::new();
    };
    let mut out = String::new();
    for (number, row) in kinds {
        if shown.iter().any(|r| r.get(k) == row.get(k)) {
            continue;
        }
        out.push_str(&format!(
            "\nThe first row with {KIND_COLUMN} {} (data row {number}):\n{}",
            json_list(&row[k..=k], 80),
            json_list(row, 400)
        ));
    }
    out
}

/// "N data row(s)", or for a file's head "more than N data row(s)" with an
/// estimate from the file's size, clearly labelled.
fn rows_phrase(table: &csv::Table, text_len: usize, file: Head) -> String {
    if !table.cut {
        return format!("{} data row(s)", table.count);
    }
    let raw_counted = table.counted_bytes as f64 * file.read as f64 / text_len.max(1) as f64;
    let estimate = if table.count > 0 && raw_counted > 0.0 {
        format!(
            "about {} estimated from the file's size, ",
            (table.count as f64 * file.size as f64 / raw_counted).round() as u64
        )
    } else {
        String::new()
    };
    format!(
        "more than {} data row(s) ({estimate}counted in its first {})",
        table.count,
        human_size(file.read as u64)
    )
}

/// The column names and either the first rows (`preview`) or each
/// column's inferred kind (`schema`).
fn columns_and_rows(names: &[String], rows: &[Vec<String>], level: DataLevel) -> String {
    if level == DataLevel::Schema {
        let cols: Vec<String> = names
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let kind = infer_kind(rows.iter().filter_map(|r| r.get(i).map(String::as_str)));
                format!("{} ({kind})", excerpt(&strip_invisible(c), VALUE_CHARS))
            })
            .collect();
        return format!("\nColumns (values not shown): {}", cols.join(", "));
    }
    let mut out = format!("\nColumns: {}", json_list(names, 1200));
    if !rows.is_empty() {
        out.push_str(&format!(
            "\nFirst {} row(s) (each value as text):",
            rows.len()
        ));
        for r in rows {
            out.push('\n');
            out.push_str(&json_list(r, 400));
        }
    }
    out
}

/// Values as a JSON list (each cut to [`VALUE_CHARS`], invisible characters
/// dropped), at most about `max` characters, then ` … +N more`.
fn json_list(values: &[String], max: usize) -> String {
    let mut out = String::from("[");
    for (i, v) in values.iter().enumerate() {
        // Invisible characters dropped; a \r is data (JSON escapes it).
        let v: String = v
            .chars()
            .filter(|&c| c == '\r' || !is_invisible(c))
            .collect();
        let item = serde_json::to_string(&excerpt(&v, VALUE_CHARS)).unwrap_or_default();
        if i > 0 && out.len() + item.len() > max {
            return format!("{out}] … +{} more", values.len() - i);
        }
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(&item);
    }
    out.push(']');
    out
}

/// The preview of an Excel workbook after the file's name and size.
fn workbook(path: &str, bytes: &[u8], whole: bool, level: DataLevel) -> String {
    let (sheets, total) = match xlsx::read_workbook(bytes, whole) {
        Ok(s) => s,
        Err(e) => return format!(", Excel workbook whose sheets this preview cannot list ({e})"),
    };
    let names: Vec<String> = sheets.iter().map(|s| s.name.clone()).collect();
    let mut out = format!(
        ", Excel workbook, {total} sheet(s): {}{}. pandas reads one sheet with `sheet_name=` (default: the first; None: all, as a dict), row 1 as the header",
        json_list(&names, 600),
        if total > sheets.len() {
            format!(" (first {} listed)", sheets.len())
        } else {
            String::new()
        }
    );
    let keep = match sheets.len() {
        0 | 1 => 5,
        2 | 3 => 3,
        _ => 2,
    };
    for (i, s) in sheets.iter().enumerate() {
        let call = format!(
            "pd.read_excel({path}, sheet_name={})",
            serde_json::to_string(&s.name).unwrap_or_default()
        );
        let shown = serde_json::to_string(&excerpt(&strip_invisible(&s.name), VALUE_CHARS))
            .unwrap_or_default();
        let hidden = if s.hidden { " (hidden)" } else { "" };
        out.push_str(&format!("\nSheet {shown}{hidden}: `{call}`"));
        if let Some(e) = &s.error {
            out.push_str(&format!(" — not read: {e}"));
            continue;
        }
        if s.width == 0 {
            out.push_str(if s.partial {
                " — no value in the part read"
            } else {
                " — no cells (an empty table)"
            });
            continue;
        }
        let count = if s.partial {
            format!(
                "more than {} data row(s) (only part of the sheet was read)",
                s.count
            )
        } else {
            format!("{} data row(s)", s.count)
        };
        out.push_str(&format!(" → {count} × {} column(s)", s.width));
        if let Some(d) = &s.dimension {
            out.push_str(&format!("; the sheet states cells {}", excerpt(d, 30)));
        }
        if s.first_row > 1 {
            out.push_str(&format!(
                "; row 1 is empty and values start at row {}: pass header={} to use that row as the header",
                s.first_row,
                s.first_row - 1
            ));
        }
        let rows = &s.rows[..s.rows.len().min(if level == DataLevel::Schema {
            s.rows.len()
        } else {
            keep
        })];
        let names = csv::pandas_names(&s.header);
        out.push_str(&columns_and_rows(&names, rows, level));
        if level == DataLevel::Preview {
            out.push_str(&last_sheet_rows(s, rows.len()));
        }
        // The first sheet (pandas' default) gets the whole budget.
        let budget = if i == 0 {
            FACTS_MAX_BYTES
        } else {
            FACTS_MAX_BYTES / 4
        };
        out.push_str(&sheet_facts(&names, s, level, budget));
    }
    out
}

/// The last rows of a sheet past the `shown` first ones, as for CSV.
fn last_sheet_rows(s: &xlsx::Sheet, shown: usize) -> String {
    let unseen: Vec<&(usize, Vec<String>)> = s.last.iter().filter(|(n, _)| *n > shown).collect();
    let (Some(first), Some(last)) = (unseen.first(), unseen.last()) else {
        return String::new();
    };
    let mut out = format!(
        "\nLast {} row(s) read (data rows {} to {}):",
        unseen.len(),
        first.0,
        last.0
    );
    for (_, r) in unseen {
        out.push('\n');
        out.push_str(&json_list(r, 400));
    }
    out
}

/// One line per column of a sheet (as [`columns::describe`] for CSV), at
/// most `max` bytes.
fn sheet_facts(names: &[String], s: &xlsx::Sheet, level: DataLevel, max: usize) -> String {
    let what = if level == DataLevel::Schema {
        "dtype; missing, if any"
    } else {
        "dtype; missing, if any; min to max or distinct values"
    };
    let header = if s.partial {
        format!(
            "\nColumn facts over the first {} rows read ({what}; a later row may change a dtype; missing and distinct counts are lower bounds):",
            s.count
        )
    } else {
        format!(
            "\nColumn facts as pandas reads all {} rows ({what}):",
            s.count
        )
    };
    let lines = names.iter().zip(&s.facts).map(|(name, c)| {
        let mut line = format!("\n{}: {}", columns::quoted_name(name), c.dtype);
        if c.missing > 0 {
            line.push_str(&columns::missing_share(c.missing as u64, s.count as u64));
        }
        if level == DataLevel::Schema {
            return line;
        }
        if let Some((lo, hi)) = &c.range {
            let shown = |t: &str| excerpt(&strip_invisible(t), 30);
            line.push_str(&format!("; {} to {}", shown(lo), shown(hi)));
        }
        if let Some(n) = c.distinct {
            line.push_str(&format!("; {n} distinct"));
        } else if c.dtype == "object" {
            line.push_str(&format!("; more than {} distinct", columns::DISTINCT_MAX));
        }
        line.push_str(&columns::values_said(
            &c.values,
            c.zeros,
            c.negatives,
            c.repeated.as_ref(),
        ));
        line
    });
    columns::budgeted(header, lines, names.len(), max)
}

/// A text file that is not delimited: JSON's shape, or the line count and
/// (at `preview`) the first lines.
fn plain_text(text: &str, enc: Encoding, ext: &str, whole: bool, level: DataLevel) -> String {
    let encoding = match enc.python_name() {
        Some(py) => format!(" ({}: open it with encoding=\"{py}\")", enc.describe()),
        None if enc == Encoding::Utf8Bom => format!(" ({})", enc.describe()),
        None => String::new(),
    };
    let trimmed = text.trim_start();
    let looks_json =
        matches!(ext, "json" | "geojson") || trimmed.starts_with('{') || trimmed.starts_with('[');
    if looks_json
        && !matches!(ext, "jsonl" | "ndjson")
        && whole
        && let Ok(v) = serde_json::from_str::<Value>(text)
    {
        return format!(", JSON{encoding}: {}", json_shape(&v));
    }
    let more = if whole { "" } else { "more than " };
    let lines = count_lines(text);
    let what = if matches!(ext, "jsonl" | "ndjson") {
        "JSON lines"
    } else {
        "text"
    };
    if level == DataLevel::Schema {
        return format!(", {what}{encoding}, {more}{lines} line(s); contents not shown");
    }
    let mut out = format!(", {what}{encoding}, {more}{lines} line(s); first lines:\n");
    for line in split_lines(text).take(10) {
        out.push_str(&excerpt(&strip_invisible(line), PREVIEW_LINE_CHARS));
        out.push('\n');
    }
    out
}

/// The lines of `text`, ended by `\n`, `\r\n` or `\r`.
fn split_lines(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let end = rest.find(['\r', '\n']).unwrap_or(rest.len());
        let line = &rest[..end];
        let skip = if rest[end..].starts_with("\r\n") {
            2
        } else {
            usize::from(end < rest.len())
        };
        rest = &rest[end + skip..];
        Some(line)
    })
}

fn count_lines(text: &str) -> usize {
    split_lines(text).count()
}

fn cap_preview(mut s: String) -> String {
    if s.len() > PREVIEW_MAX_BYTES {
        let mut cut = PREVIEW_MAX_BYTES - 16;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
        s.push_str("\n… (cut)");
    }
    s.trim_end().to_string()
}

/// `integer`, `number`, `date/time`, `boolean`, `text` or `empty` for a column's values.
fn infer_kind<'a>(values: impl Iterator<Item = &'a str>) -> &'static str {
    let vals: Vec<&str> = values.map(str::trim).filter(|v| !v.is_empty()).collect();
    if vals.is_empty() {
        "empty"
    } else if vals.iter().all(|v| v.parse::<i64>().is_ok()) {
        "integer"
    } else if vals.iter().all(|v| v.parse::<f64>().is_ok()) {
        "number"
    } else if vals
        .iter()
        .all(|v| matches!(v.to_ascii_lowercase().as_str(), "true" | "false"))
    {
        "boolean"
    } else if vals.iter().all(|v| {
        let b = v.as_bytes();
        b.len() >= 10 && b[4] == b'-' && b[7] == b'-' && b[..4].iter().all(u8::is_ascii_digit)
    }) {
        "date/time"
    } else {
        "text"
    }
}

fn human_size(n: u64) -> String {
    if n < 1024 {
        format!("{n} bytes")
    } else if n < 1024 * 1024 {
        format!("{:.1} KiB, {n} bytes", n as f64 / 1024.0)
    } else {
        format!("{:.1} MiB, {n} bytes", n as f64 / (1024.0 * 1024.0))
    }
}

/// Recognises common binary formats by their magic bytes.
fn magic_kind(bytes: &[u8]) -> Option<&'static str> {
    let magic: &[(&[u8], &str)] = &[
        (b"\x89PNG", "PNG image"),
        (b"\xFF\xD8\xFF", "JPEG image"),
        (b"GIF8", "GIF image"),
        (b"%PDF", "PDF document"),
        (b"PK\x03\x04", "ZIP archive (also .xlsx/.docx)"),
        (b"\x1F\x8B", "gzip data"),
        (b"PAR1", "Parquet file"),
        (b"SQLite format 3\0", "SQLite database"),
        (b"\x93NUMPY", "NumPy array (.npy)"),
        (b"ARROW1", "Arrow IPC file"),
        (
            b"\xD0\xCF\x11\xE0\xA1\xB1\x1A\xE1",
            "OLE compound file (legacy .xls/.doc)",
        ),
    ];
    magic
        .iter()
        .find(|(m, _)| bytes.starts_with(m))
        .map(|(_, kind)| *kind)
}

/// The top-level shape of a JSON value in one or two lines.
pub(super) fn json_shape(v: &Value) -> String {
    match v {
        Value::Object(m) => {
            let keys: Vec<String> = m
                .iter()
                .take(40)
                .map(|(k, v)| format!("{} ({})", excerpt(k, 40), short_kind(v)))
                .collect();
            let more = if m.len() > 40 {
                format!(", … {} more", m.len() - 40)
            } else {
                String::new()
            };
            format!("object with {} key(s): {}{more}", m.len(), keys.join(", "))
        }
        Value::Array(a) => {
            let first = match a.first() {
                Some(Value::Object(m)) => format!(
                    "; first element is an object with key(s): {}",
                    m.keys()
                        .take(40)
                        .map(|k| excerpt(k, 40))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                Some(other) => format!("; first element: {}", short_kind(other)),
                None => String::new(),
            };
            format!("array of {} element(s){first}", a.len())
        }
        other => short_kind(other),
    }
}

fn short_kind(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(_) => "boolean".into(),
        Value::Number(_) => "number".into(),
        Value::String(_) => "string".into(),
        Value::Array(a) => format!("array of {}", a.len()),
        Value::Object(m) => format!("object with {} key(s)", m.len()),
    }
}

#[cfg(test)]
mod tests;
