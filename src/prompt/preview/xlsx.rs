//! Excel workbooks (`.xlsx`, `.xlsm`): the sheet names, and per sheet the
//! header, first rows and row count as `pandas.read_excel(sheet_name=...)`
//! (openpyxl) gives them — the grid starts at A1, row 1 is the header,
//! empty rows inside the data are kept and trailing ones dropped. Read from
//! the zip's XML by a small scanner, streamed under a budget of
//! decompressed bytes ([`zip::Budget`]).

use std::collections::{BTreeMap, BTreeSet};

use super::zip::{self, Budget, Entry, Streamed};

mod facts;
pub(crate) use facts::SheetColumn;

/// Decompressed bytes one workbook's preview may read in all.
const WORKBOOK_BUDGET: usize = 64 * 1024 * 1024;
/// Decompressed bytes of a small part (workbook, relationships, styles).
const PART_BUDGET: usize = 4 * 1024 * 1024;
/// Sheets previewed in detail.
pub(crate) const MAX_SHEETS: usize = 8;
/// Grid rows kept per sheet: the header and 5 rows.
const KEEP_ROWS: usize = 6;
/// Excel's most columns (XFD): cells past it are not counted.
const MAX_COLUMNS: usize = 16_384;
/// Most unprocessed XML kept between chunks.
const MAX_CARRY: usize = 4 * 1024 * 1024;

/// One sheet as pandas reads it with its defaults.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Sheet {
    /// The sheet's name.
    pub name: String,
    /// Hidden in Excel (pandas reads it all the same).
    pub hidden: bool,
    /// The cell range the sheet states (`<dimension ref>`), if any.
    pub dimension: Option<String>,
    /// Row 1: the header (values as text, before pandas names them).
    pub header: Vec<String>,
    /// The first data rows (rows 2–6), values as text, padded to the width.
    pub rows: Vec<Vec<String>>,
    /// Data rows (after the header) up to the last row with a value.
    pub count: usize,
    /// Columns: up to the last column with a value in any row.
    pub width: usize,
    /// The first row that has a value (1-based; 0: none).
    pub first_row: usize,
    /// Only part of the sheet was read: `count` is a lower bound.
    pub partial: bool,
    /// Why the sheet could not be read, if so.
    pub error: Option<String>,
    /// Each column's facts over the data rows read ([`facts`]).
    pub facts: Vec<SheetColumn>,
    /// The last [`LAST_ROWS`] data rows read, with their data row numbers
    /// (1 is the row under the header): where exports keep their `TOTAL`
    /// line.
    pub last: Vec<(usize, Vec<String>)>,
}

/// The last rows of a sheet kept for its preview.
pub(crate) const LAST_ROWS: usize = 2;

/// The sheets of a workbook (up to [`MAX_SHEETS`] read in detail) and the
/// total number of sheets.
pub(crate) fn read_workbook(bytes: &[u8], whole: bool) -> Result<(Vec<Sheet>, usize), String> {
    let entries = zip::entries(bytes, whole)?;
    let mut budget = Budget(WORKBOOK_BUDGET);
    let part = |name: &str, budget: &mut Budget| -> Result<String, String> {
        let e = entries
            .iter()
            .find(|e| e.name == name)
            .ok_or_else(|| format!("no {name} in the archive"))?;
        let mut small = Budget(PART_BUDGET.min(budget.0));
        let mut out = Vec::new();
        zip::stream(bytes, e, &mut small, |c| {
            out.extend_from_slice(c);
            true
        })?;
        budget.0 -= out.len();
        Ok(String::from_utf8_lossy(&out).into_owned())
    };
    let workbook = part("xl/workbook.xml", &mut budget)?;
    let rels = part("xl/_rels/workbook.xml.rels", &mut budget).unwrap_or_default();
    let styles = part("xl/styles.xml", &mut budget).unwrap_or_default();
    let date1904 = tags(&workbook)
        .find(|t| t.name == "workbookPr")
        .and_then(|t| attr(t.attrs, "date1904"))
        .is_some_and(|v| v == "1" || v == "true");
    let dates = date_styles(&styles);
    let targets: BTreeMap<String, String> = tags(&rels)
        .filter(|t| t.name == "Relationship")
        .filter_map(|t| Some((attr(t.attrs, "Id")?, attr(t.attrs, "Target")?)))
        .collect();
    let listed: Vec<(String, bool, Option<String>)> = tags(&workbook)
        .filter(|t| t.name == "sheet" && !t.closing)
        .map(|t| {
            let target = attr(t.attrs, "r:id").and_then(|id| targets.get(&id).cloned());
            let hidden = attr(t.attrs, "state").is_some_and(|s| s != "visible");
            (attr(t.attrs, "name").unwrap_or_default(), hidden, target)
        })
        .collect();
    let total = listed.len();
    let mut scans = Vec::new();
    for (i, (name, hidden, target)) in listed.into_iter().take(MAX_SHEETS).enumerate() {
        let share = budget.0 / (total.min(MAX_SHEETS) - i).max(1);
        let mut sheet_budget = Budget(share);
        let path = target.map(|t| match t.strip_prefix('/') {
            Some(abs) => abs.to_string(),
            None => format!("xl/{t}"),
        });
        let entry = path.and_then(|p| entries.iter().find(|e| e.name == p));
        let scan = match entry {
            Some(e) => scan_sheet(bytes, e, &mut sheet_budget, &dates),
            None => Err("its part is not in the archive (or past the file's head)".into()),
        };
        budget.0 -= share - sheet_budget.0;
        scans.push((name, hidden, scan));
    }
    let wanted: BTreeSet<usize> = scans
        .iter()
        .filter_map(|(_, _, s)| s.as_ref().ok())
        .flat_map(|s| {
            let kept = s.kept.iter().flatten().filter_map(|(_, c)| c.shared());
            let tail = s
                .tail
                .iter()
                .flat_map(|(_, r)| r)
                .filter_map(|(_, c)| c.shared());
            let kept = kept.chain(tail);
            kept.chain(s.cells.iter().flat_map(facts::ColumnCells::wanted))
        })
        .collect();
    let strings = match entries.iter().find(|e| e.name == "xl/sharedStrings.xml") {
        Some(e) if !wanted.is_empty() => shared_strings(bytes, e, &mut budget, &wanted),
        _ => BTreeMap::new(),
    };
    let sheets = scans
        .into_iter()
        .map(|(name, hidden, scan)| match scan {
            Ok(s) => s.into_sheet(name, hidden, &strings, date1904),
            Err(e) => Sheet {
                name,
                hidden,
                error: Some(e),
                ..Sheet::default()
            },
        })
        .collect();
    Ok((sheets, total))
}

/// A cell's stored value.
#[derive(Debug, Clone, PartialEq)]
enum Cell {
    Shared(usize),
    Text(String),
    Number { raw: String, date: bool },
    Bool(bool),
    Error(String),
}

impl Cell {
    fn shared(&self) -> Option<usize> {
        match self {
            Cell::Shared(i) => Some(*i),
            _ => None,
        }
    }

    /// The value as `read_excel(..., dtype=str)` writes it.
    fn text(&self, strings: &BTreeMap<usize, String>, date1904: bool) -> String {
        match self {
            Cell::Shared(i) => strings.get(i).cloned().unwrap_or_default(),
            Cell::Text(s) | Cell::Error(s) => s.clone(),
            Cell::Bool(b) => if *b { "True" } else { "False" }.into(),
            Cell::Number { raw, date } => match raw.trim().parse::<f64>() {
                Ok(v) if *date => excel_date(v, date1904).unwrap_or_else(|| raw.clone()),
                Ok(v) => python_number(v),
                Err(_) => raw.clone(),
            },
        }
    }
}

/// A number as pandas shows it: integral values as integers (pandas'
/// openpyxl reader turns `3.0` into `3`), others as Python's `repr`.
fn python_number(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e16 {
        return format!("{}", v as i64);
    }
    let a = v.abs();
    if (1e-4..1e16).contains(&a) {
        return format!("{v}");
    }
    let e = format!("{v:e}");
    match e.split_once('e') {
        Some((m, x)) => {
            let x: i32 = x.parse().unwrap_or(0);
            format!("{m}e{}{:02}", if x < 0 { '-' } else { '+' }, x.abs())
        }
        None => e,
    }
}

/// An Excel serial date as openpyxl turns it into Python (`datetime` or,
/// below 1, `time`) and `str()` writes it.
fn excel_date(v: f64, date1904: bool) -> Option<String> {
    use chrono::{Duration, NaiveDate};
    let day = v.floor();
    let ms = ((v - day) * 86_400_000.0).round() as i64;
    let time = |ms: i64| {
        let (s, frac) = (ms / 1000, ms % 1000);
        let base = format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
        if frac == 0 {
            base
        } else {
            format!("{base}.{:06}", frac * 1000)
        }
    };
    if (0.0..1.0).contains(&v) && ms < 86_400_000 {
        return Some(time(ms));
    }
    let (epoch, mut days) = if date1904 {
        (NaiveDate::from_ymd_opt(1904, 1, 1)?, day as i64)
    } else {
        (NaiveDate::from_ymd_opt(1899, 12, 30)?, day as i64)
    };
    // Excel's 1900 leap-year bug: serials below 60 are a day early.
    if !date1904 && 0.0 < v && v < 60.0 {
        days += 1;
    }
    let dt = epoch.and_hms_opt(0, 0, 0)? + Duration::days(days) + Duration::milliseconds(ms);
    let (d, t) = (dt.date(), dt.time());
    use chrono::Timelike;
    let ms =
        i64::from(t.num_seconds_from_midnight()) * 1000 + i64::from(t.nanosecond() / 1_000_000);
    Some(format!("{} {}", d.format("%Y-%m-%d"), time(ms)))
}

/// The indices of `cellXfs` whose number format is a date or time, as
/// openpyxl decides it (built-in formats 14–22 and 45–47, or a format code
/// with d, m, y, h or s outside quotes and brackets).
fn date_styles(styles: &str) -> BTreeSet<usize> {
    let mut custom: BTreeMap<String, bool> = BTreeMap::new();
    let mut in_xfs = false;
    let mut index = 0;
    let mut dates = BTreeSet::new();
    for t in tags(styles) {
        match (t.name, t.closing) {
            ("numFmt", false) => {
                if let (Some(id), Some(code)) =
                    (attr(t.attrs, "numFmtId"), attr(t.attrs, "formatCode"))
                {
                    custom.insert(id, is_date_code(&code));
                }
            }
            ("cellXfs", closing) => in_xfs = !closing && !t.self_closing,
            ("xf", false) if in_xfs => {
                let id = attr(t.attrs, "numFmtId").unwrap_or_default();
                let builtin = id
                    .parse::<u32>()
                    .is_ok_and(|n| (14..=22).contains(&n) || (45..=47).contains(&n));
                if builtin || custom.get(&id).copied().unwrap_or(false) {
                    dates.insert(index);
                }
                index += 1;
            }
            _ => {}
        }
    }
    dates
}

fn is_date_code(code: &str) -> bool {
    let first = code.split(';').next().unwrap_or("");
    let (mut quoted, mut bracket, mut escaped) = (false, false, false);
    for c in first.chars() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '"' => quoted = !quoted,
            '[' if !quoted => bracket = true,
            ']' if !quoted => bracket = false,
            _ if quoted || bracket => {}
            'd' | 'm' | 'y' | 'h' | 's' | 'D' | 'M' | 'Y' | 'H' | 'S' => return true,
            _ => {}
        }
    }
    false
}

/// A cell being read.
#[derive(Debug, Default)]
struct Pending {
    col: usize,
    kind: String,
    date: bool,
    value: String,
}

/// The state of a sheet's streamed scan.
#[derive(Debug, Default)]
struct Scan {
    row: usize,
    next_col: usize,
    cell: Option<Pending>,
    in_inline: bool,
    kept: Vec<Vec<(usize, Cell)>>,
    /// The last rows with cells past [`KEEP_ROWS`], by sheet row number.
    tail: Vec<(usize, Vec<(usize, Cell)>)>,
    last_row: usize,
    first_row: usize,
    width: usize,
    dimension: Option<String>,
    partial: bool,
    /// Each column's data cells (rows 2 on), by column.
    cells: Vec<facts::ColumnCells>,
}

fn scan_sheet(
    bytes: &[u8],
    entry: &Entry,
    budget: &mut Budget,
    dates: &BTreeSet<usize>,
) -> Result<Scan, String> {
    let mut scan = Scan {
        kept: vec![Vec::new(); KEEP_ROWS],
        ..Scan::default()
    };
    let mut carry: Vec<u8> = Vec::new();
    let how = zip::stream(bytes, entry, budget, |chunk| {
        carry.extend_from_slice(chunk);
        let Some(cut) = carry.iter().rposition(|b| *b == b'<') else {
            return carry.len() <= MAX_CARRY;
        };
        scan.feed(&String::from_utf8_lossy(&carry[..cut]), dates);
        carry.drain(..cut);
        carry.len() <= MAX_CARRY
    })?;
    if how == Streamed::Whole {
        scan.feed(&String::from_utf8_lossy(&carry), dates);
    } else {
        scan.partial = true;
    }
    Ok(scan)
}

impl Scan {
    /// Reads complete tags (and the text after each) of a sheet's XML.
    fn feed(&mut self, xml: &str, dates: &BTreeSet<usize>) {
        for t in tags(xml) {
            match (t.name, t.closing) {
                ("dimension", false) => self.dimension = attr(t.attrs, "ref"),
                ("row", false) => {
                    self.row = attr(t.attrs, "r")
                        .and_then(|r| r.parse().ok())
                        .unwrap_or(self.row + 1);
                    self.next_col = 0;
                }
                ("c", false) => {
                    let col = attr(t.attrs, "r")
                        .and_then(|r| column_of(&r))
                        .unwrap_or(self.next_col);
                    let style = attr(t.attrs, "s").and_then(|s| s.parse().ok()).unwrap_or(0);
                    self.next_col = col + 1;
                    self.cell = (!t.self_closing).then(|| Pending {
                        col,
                        kind: attr(t.attrs, "t").unwrap_or_else(|| "n".into()),
                        date: dates.contains(&style),
                        value: String::new(),
                    });
                }
                ("is", closing) => self.in_inline = !closing && !t.self_closing,
                ("v", false) | ("t", false) if !t.self_closing => {
                    if let Some(p) = self.cell.as_mut()
                        && (t.name == "v" || self.in_inline)
                    {
                        p.value.push_str(&unescape(t.text));
                    }
                }
                ("c", true) => {
                    if let Some(p) = self.cell.take() {
                        self.finish(p);
                    }
                }
                _ => {}
            }
        }
    }

    fn finish(&mut self, p: Pending) {
        let cell = match p.kind.as_str() {
            "s" => match p.value.trim().parse() {
                Ok(i) => Cell::Shared(i),
                Err(_) => return,
            },
            "b" => Cell::Bool(p.value.trim() == "1"),
            "e" => Cell::Error(p.value),
            "str" | "inlineStr" if p.value.is_empty() => return,
            "str" | "inlineStr" => Cell::Text(p.value),
            _ if p.value.trim().is_empty() => return,
            _ => Cell::Number {
                raw: p.value,
                date: p.date,
            },
        };
        self.last_row = self.last_row.max(self.row);
        if self.first_row == 0 || self.row < self.first_row {
            self.first_row = self.row;
        }
        self.width = self.width.max(p.col + 1);
        if self.row >= 2 && p.col < MAX_COLUMNS {
            if self.cells.len() <= p.col {
                self.cells.resize(p.col + 1, facts::ColumnCells::default());
            }
            self.cells[p.col].add(&cell);
        }
        if (1..=KEEP_ROWS).contains(&self.row) {
            self.kept[self.row - 1].push((p.col, cell));
        } else if self.row > KEEP_ROWS && p.col < MAX_COLUMNS {
            match self.tail.last_mut() {
                Some((r, cells)) if *r == self.row => cells.push((p.col, cell)),
                _ => {
                    if self.tail.len() == LAST_ROWS {
                        self.tail.remove(0);
                    }
                    self.tail.push((self.row, vec![(p.col, cell)]));
                }
            }
        }
    }

    fn into_sheet(
        self,
        name: String,
        hidden: bool,
        strings: &BTreeMap<usize, String>,
        date1904: bool,
    ) -> Sheet {
        let grid_row = |cells: &Vec<(usize, Cell)>| {
            let mut row = vec![String::new(); self.width];
            for (col, cell) in cells {
                if let Some(slot) = row.get_mut(*col) {
                    *slot = cell.text(strings, date1904);
                }
            }
            row
        };
        let rows_kept = self.last_row.min(KEEP_ROWS);
        let count = self.last_row.saturating_sub(1);
        let none = facts::ColumnCells::default();
        let facts = (0..self.width)
            .map(|i| facts::column(self.cells.get(i).unwrap_or(&none), count, strings, date1904))
            .collect();
        // The last data rows (sheet row 2 on); a row without cells is empty.
        let empty = Vec::new();
        let last = (self.last_row.saturating_sub(LAST_ROWS - 1).max(2)..=self.last_row)
            .map(|r| {
                let cells = match r {
                    ..=KEEP_ROWS => &self.kept[r - 1],
                    _ => self
                        .tail
                        .iter()
                        .find(|(t, _)| *t == r)
                        .map_or(&empty, |(_, c)| c),
                };
                (r - 1, grid_row(cells))
            })
            .collect();
        Sheet {
            name,
            hidden,
            dimension: self.dimension.clone(),
            header: if self.last_row > 0 {
                grid_row(&self.kept[0])
            } else {
                Vec::new()
            },
            rows: self.kept[1..rows_kept.max(1)]
                .iter()
                .map(grid_row)
                .collect(),
            count,
            width: self.width,
            first_row: self.first_row,
            partial: self.partial,
            error: None,
            facts,
            last,
        }
    }
}

/// `B12` → 1 (the 0-based column of a cell reference).
fn column_of(reference: &str) -> Option<usize> {
    let letters: Vec<u8> = reference
        .bytes()
        .take_while(u8::is_ascii_alphabetic)
        .collect();
    if letters.is_empty() || letters.len() > 3 {
        return None;
    }
    let n = letters.iter().fold(0usize, |n, b| {
        n * 26 + usize::from(b.to_ascii_uppercase() - b'A' + 1)
    });
    Some(n - 1)
}

/// The shared strings at the `wanted` indices (streamed; stops after the
/// last one wanted).
fn shared_strings(
    bytes: &[u8],
    entry: &Entry,
    budget: &mut Budget,
    wanted: &BTreeSet<usize>,
) -> BTreeMap<usize, String> {
    let last = wanted.iter().next_back().copied().unwrap_or(0);
    let mut found = BTreeMap::new();
    let (mut index, mut current, mut phonetic) = (0usize, String::new(), false);
    let mut carry: Vec<u8> = Vec::new();
    let mut feed = |xml: &str, found: &mut BTreeMap<usize, String>| {
        for t in tags(xml) {
            match (t.name, t.closing) {
                ("rPh", closing) => phonetic = !closing && !t.self_closing,
                ("t", false) if !phonetic && !t.self_closing => current.push_str(&unescape(t.text)),
                ("si", false) if !t.self_closing => current.clear(),
                ("si", _) => {
                    if wanted.contains(&index) {
                        found.insert(index, std::mem::take(&mut current));
                    }
                    current.clear();
                    index += 1;
                }
                _ => {}
            }
        }
        index <= last
    };
    let _ = zip::stream(bytes, entry, budget, |chunk| {
        carry.extend_from_slice(chunk);
        let Some(cut) = carry.iter().rposition(|b| *b == b'<') else {
            return carry.len() <= MAX_CARRY;
        };
        let more = feed(&String::from_utf8_lossy(&carry[..cut]), &mut found);
        carry.drain(..cut);
        more && carry.len() <= MAX_CARRY
    });
    feed(&String::from_utf8_lossy(&carry), &mut found);
    found
}

/// One XML tag: its local name (prefix dropped), attributes' text, and the
/// text that follows it up to the next tag.
#[derive(Debug, Clone, Copy)]
struct Tag<'a> {
    name: &'a str,
    attrs: &'a str,
    closing: bool,
    self_closing: bool,
    text: &'a str,
}

/// The tags of `xml` in order (declarations, comments and CDATA skipped).
fn tags(xml: &str) -> impl Iterator<Item = Tag<'_>> {
    let mut rest = xml;
    std::iter::from_fn(move || {
        loop {
            let open = rest.find('<')?;
            let after = &rest[open + 1..];
            let close = after.find('>')?;
            let inner = &after[..close];
            let tail = &after[close + 1..];
            let text = &tail[..tail.find('<').unwrap_or(tail.len())];
            rest = tail;
            if inner.starts_with('?') || inner.starts_with('!') {
                continue;
            }
            let closing = inner.starts_with('/');
            let inner = inner.trim_start_matches('/');
            let self_closing = inner.ends_with('/');
            let inner = inner.trim_end_matches('/');
            let end = inner
                .find(|c: char| c.is_ascii_whitespace())
                .unwrap_or(inner.len());
            let qname = &inner[..end];
            let name = qname.rsplit(':').next().unwrap_or(qname);
            return Some(Tag {
                name,
                attrs: &inner[end..],
                closing,
                self_closing,
                text,
            });
        }
    })
}

/// The value of attribute `name` (exact, prefix included) in a tag's text.
fn attr(attrs: &str, name: &str) -> Option<String> {
    let mut from = 0;
    while let Some(i) = attrs[from..].find(name) {
        let at = from + i;
        from = at + name.len();
        let before_ok = attrs[..at].ends_with(|c: char| c.is_ascii_whitespace());
        let rest = attrs[from..].trim_start();
        if !before_ok || !rest.starts_with('=') {
            continue;
        }
        let rest = rest[1..].trim_start();
        let quote = rest.chars().next().filter(|q| *q == '"' || *q == '\'')?;
        let body = &rest[1..];
        return Some(unescape(&body[..body.find(quote)?]));
    }
    None
}

/// XML character and entity references resolved.
fn unescape(s: &str) -> String {
    if !s.contains('&') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        let Some(end) = rest.find(';').filter(|e| *e <= 10) else {
            out.push('&');
            rest = &rest[1..];
            continue;
        };
        let entity = &rest[1..end];
        let c = match entity {
            "amp" => Some('&'),
            "lt" => Some('<'),
            "gt" => Some('>'),
            "quot" => Some('"'),
            "apos" => Some('\''),
            _ => entity
                .strip_prefix("#x")
                .map(|h| u32::from_str_radix(h, 16))
                .or_else(|| entity.strip_prefix('#').map(str::parse::<u32>))
                .and_then(Result::ok)
                .and_then(char::from_u32),
        };
        match c {
            Some(c) => {
                out.push(c);
                rest = &rest[end + 1..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests;
