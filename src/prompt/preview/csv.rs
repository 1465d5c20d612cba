//! Delimited text (`.csv`, `.tsv`): the dialect sniffed from the first
//! records ([`CsvDialect`]), and the records read by a state machine that
//! follows `pandas.read_csv`'s C tokenizer with the options the preview
//! states — quoted fields may hold delimiters and line breaks, a record ends
//! at `\n`, `\r` or `\r\n`, blank and whitespace-only lines are skipped.
//! So the header, the first rows and the row count shown to the model are
//! what pandas reads.

use super::text::Encoding;

/// Delimiters tried when sniffing, as pandas' `sep=None` (csv.Sniffer) would.
const DELIMITERS: [u8; 4] = [b',', b';', b'\t', b'|'];
/// How much of the text the delimiter is sniffed from.
const SNIFF_BYTES: usize = 64 * 1024;
/// How many records the delimiter is sniffed from.
const SNIFF_RECORDS: usize = 30;

/// How a delimited file is written, as the preview tells the model to read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CsvDialect {
    /// The field delimiter (`,`, `;`, tab or `|`); the quote is always `"`.
    pub delimiter: u8,
    /// The text encoding (and byte-order mark).
    pub encoding: Encoding,
    /// The line breaks that end records (outside quotes), as
    /// [`read_table`] counts them; empty until then.
    pub line_endings: LineEndings,
    /// Numbers are written with a decimal comma (`1,5`): pandas needs
    /// `decimal=","` to read them as numbers.
    pub decimal_comma: bool,
}

impl CsvDialect {
    /// Sniffs the dialect of `text` (decoded from `encoding`): the delimiter
    /// among [`DELIMITERS`] that splits the first records into the same
    /// number (at least 2) of fields most consistently; on a tie the one the
    /// extension names (`ext_delimiter`). One column: `ext_delimiter`.
    pub(crate) fn sniff(text: &str, encoding: Encoding, ext_delimiter: u8) -> CsvDialect {
        let mut cut = text.len().min(SNIFF_BYTES);
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        let sample = &text.as_bytes()[..cut];
        let whole = cut == text.len();
        let mut best: Option<(usize, bool, usize, u8)> = None;
        for d in DELIMITERS {
            let mut records = Records::new(sample, d, whole);
            let mut counts = Vec::new();
            while counts.len() < SNIFF_RECORDS {
                match records.next(None) {
                    Step::Record(n) => counts.push(n),
                    _ => break,
                }
            }
            let Some((&header, rows)) = counts.split_first() else {
                continue;
            };
            if header < 2 {
                continue;
            }
            let same = rows.iter().filter(|n| **n == header).count();
            let consistency = if rows.is_empty() {
                100
            } else {
                same * 100 / rows.len()
            };
            let key = (consistency, d == ext_delimiter, header, d);
            if best.is_none_or(|b| (key.0, key.1, key.2) > (b.0, b.1, b.2)) {
                best = Some(key);
            }
        }
        CsvDialect {
            delimiter: best.map_or(ext_delimiter, |b| b.3),
            encoding,
            line_endings: LineEndings::default(),
            decimal_comma: false,
        }
    }

    /// The delimiter as the preview and Python write it.
    pub(crate) fn delimiter_literal(&self) -> &'static str {
        match self.delimiter {
            b'\t' => "\\t",
            b';' => ";",
            b'|' => "|",
            _ => ",",
        }
    }

    /// The keyword arguments `pandas.read_csv` needs besides the path
    /// (`sep=";", encoding="cp1252"`); empty for pandas' defaults.
    pub(crate) fn read_csv_options(&self) -> String {
        let mut opts = Vec::new();
        if self.delimiter != b',' {
            opts.push(format!("sep=\"{}\"", self.delimiter_literal()));
        }
        if self.decimal_comma {
            opts.push("decimal=\",\"".into());
        }
        if let Some(e) = self.encoding.python_name() {
            opts.push(format!("encoding=\"{e}\""));
        }
        opts.join(", ")
    }

    /// One sentence on how the file is written, e.g. `delimiter ";",
    /// Windows-1252 (cp1252), not UTF-8, CR-only line endings`.
    pub(crate) fn describe(&self) -> String {
        let mut parts = vec![
            format!("delimiter \"{}\"", self.delimiter_literal()),
            self.encoding.describe().to_string(),
        ];
        if let Some(l) = self.line_endings.describe() {
            parts.push(l);
        }
        if self.decimal_comma {
            parts.push("decimal commas (1,5)".into());
        }
        parts.join(", ")
    }
}

/// How many line breaks of each kind end the records (or blank lines).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct LineEndings {
    /// `\r\n` (Windows).
    pub crlf: usize,
    /// `\r` alone (classic Mac OS, and some exports).
    pub cr: usize,
    /// `\n` alone (Unix).
    pub lf: usize,
}

impl LineEndings {
    /// Counts the break at `text[at]` (`\r`, `\n`), and returns its length.
    fn count(&mut self, text: &[u8], at: usize) -> usize {
        match (text[at], text.get(at + 1)) {
            (b'\r', Some(b'\n')) => {
                self.crlf += 1;
                2
            }
            (b'\r', _) => {
                self.cr += 1;
                1
            }
            _ => {
                self.lf += 1;
                1
            }
        }
    }

    /// Line breaks that are not plain `\n`, described; `None` for `\n` only.
    fn describe(&self) -> Option<String> {
        match (self.crlf > 0, self.cr > 0, self.lf > 0) {
            (false, false, _) => None,
            (true, false, false) => Some("CRLF (Windows) line endings".into()),
            (false, true, false) => Some("CR-only line endings (no \\n)".into()),
            _ => Some(format!(
                "mixed line endings ({} CRLF, {} CR-only, {} LF)",
                self.crlf, self.cr, self.lf
            )),
        }
    }

    /// Whether splitting the text on `\n` would not give its lines.
    pub(crate) fn breaks_naive_split(&self) -> bool {
        self.cr > 0
    }
}

/// What reading one more record found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// A record of this many fields.
    Record(usize),
    /// No more records.
    End,
    /// The text (a file's head) ends inside a record: more of it follows.
    Cut,
    /// The file ends inside a quoted field (pandas: "EOF inside string").
    OpenQuote,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    StartField,
    Unquoted,
    Quoted,
    QuoteInQuoted,
}

/// The records of delimited text, read as pandas' C tokenizer reads them
/// with `quotechar='"'`, `doublequote=True`, `skip_blank_lines=True`.
/// `text` is UTF-8 (every byte that matters is ASCII, so fields split at
/// character boundaries).
pub(crate) struct Records<'a> {
    text: &'a [u8],
    pos: usize,
    delimiter: u8,
    /// The text is the whole file (else the file's head: a record at the
    /// end is [`Step::Cut`]).
    whole: bool,
    /// The line breaks read so far outside quoted fields.
    pub endings: LineEndings,
}

impl<'a> Records<'a> {
    /// The records of `text` split at `delimiter`.
    pub(crate) fn new(text: &'a [u8], delimiter: u8, whole: bool) -> Records<'a> {
        Records {
            text,
            pos: 0,
            delimiter,
            whole,
            endings: LineEndings::default(),
        }
    }

    /// Where the next record starts (after the last one read).
    pub(crate) fn position(&self) -> usize {
        self.pos
    }

    /// Skips blank and whitespace-only lines, as `skip_blank_lines` does.
    fn skip_blank_lines(&mut self) {
        loop {
            let rest = &self.text[self.pos..];
            let ws = rest
                .iter()
                .take_while(|&&b| (b == b' ' || b == b'\t') && b != self.delimiter)
                .count();
            match rest.get(ws) {
                Some(b'\n' | b'\r') => {
                    self.pos += ws;
                    self.pos += self.endings.count(self.text, self.pos);
                }
                None if ws > 0 && self.whole => self.pos = self.text.len(),
                _ => return,
            }
        }
    }

    /// Reads the next record; its fields go to `out` when given.
    pub(crate) fn next(&mut self, mut out: Option<&mut Vec<String>>) -> Step {
        if let Some(o) = out.as_deref_mut() {
            o.clear();
        }
        self.skip_blank_lines();
        if self.pos >= self.text.len() {
            return Step::End;
        }
        let start = self.pos;
        let keep = out.is_some();
        let mut field: Vec<u8> = Vec::new();
        let mut fields = 0;
        let mut push = |field: &mut Vec<u8>, out: &mut Option<&mut Vec<String>>| {
            fields += 1;
            if let Some(o) = out.as_deref_mut() {
                o.push(String::from_utf8_lossy(field).into_owned());
            }
            field.clear();
        };
        let mut state = State::StartField;
        while self.pos < self.text.len() {
            let c = self.text[self.pos];
            self.pos += 1;
            let end_of_record = c == b'\n' || c == b'\r';
            match state {
                State::Quoted if c == b'"' => state = State::QuoteInQuoted,
                State::Quoted => {}
                State::StartField if c == b'"' => {
                    state = State::Quoted;
                    continue;
                }
                State::QuoteInQuoted if c == b'"' => state = State::Quoted,
                _ if c == self.delimiter => {
                    push(&mut field, &mut out);
                    state = State::StartField;
                    continue;
                }
                _ if end_of_record => {
                    push(&mut field, &mut out);
                    self.pos += self.endings.count(self.text, self.pos - 1) - 1;
                    return Step::Record(fields);
                }
                _ => state = State::Unquoted,
            }
            if keep && !(state == State::QuoteInQuoted && c == b'"') {
                field.push(c);
            }
        }
        if !self.whole {
            self.pos = start;
            return Step::Cut;
        }
        if state == State::Quoted {
            return Step::OpenQuote;
        }
        push(&mut field, &mut out);
        Step::Record(fields)
    }
}

/// The column names pandas gives a header row: an empty name becomes
/// `Unnamed: <i>`, a repeated one `<name>.1`, `<name>.2`, ...
pub(crate) fn pandas_names(header: &[String]) -> Vec<String> {
    let mut seen: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    header
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let mut name = if h.is_empty() {
                format!("Unnamed: {i}")
            } else {
                h.clone()
            };
            let mut count = seen.get(&name).copied().unwrap_or(0);
            if count > 0 {
                while count > 0 {
                    seen.insert(name.clone(), count + 1);
                    name = format!("{name}.{count}");
                    count = seen.get(&name).copied().unwrap_or(0);
                }
            }
            seen.insert(name.clone(), count + 1);
            name
        })
        .collect()
}

/// Whether some column of `rows` (split at `delimiter`, not `,`) holds
/// only numbers written with a decimal comma (`-12,5`).
pub(crate) fn decimal_comma(rows: &[Vec<String>], delimiter: u8) -> bool {
    let is_decimal_comma = |v: &str| {
        let v = v.strip_prefix('-').unwrap_or(v);
        v.split_once(',').is_some_and(|(a, b)| {
            !a.is_empty()
                && !b.is_empty()
                && a.bytes().all(|c| c.is_ascii_digit())
                && b.bytes().all(|c| c.is_ascii_digit())
        })
    };
    let width = rows.iter().map(Vec::len).max().unwrap_or(0);
    delimiter != b','
        && (0..width).any(|i| {
            let mut values = rows
                .iter()
                .filter_map(|r| r.get(i))
                .filter(|v| !v.is_empty())
                .peekable();
            values.peek().is_some() && values.all(|v| is_decimal_comma(v))
        })
}

/// What a file's records hold, as pandas reads them.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Table {
    /// The header record's fields (empty when the file has no record).
    pub header: Vec<String>,
    /// The first data records, each padded to the header's width.
    pub rows: Vec<Vec<String>>,
    /// Data records (after the header) counted.
    pub count: usize,
    /// The most fields of a data record seen among the first ones.
    pub widest: usize,
    /// The count is a lower bound: the text is the file's head.
    pub cut: bool,
    /// The file ends inside a quoted field.
    pub open_quote: bool,
    /// Where in the text the counted records end.
    pub counted_bytes: usize,
    /// The line breaks that end the records read.
    pub line_endings: LineEndings,
}

/// Reads `text` with `dialect`: the header, the first `keep` data records,
/// and the number of data records.
pub(crate) fn read_table(text: &str, dialect: &CsvDialect, whole: bool, keep: usize) -> Table {
    let mut records = Records::new(text.as_bytes(), dialect.delimiter, whole);
    let mut table = Table {
        header: Vec::new(),
        rows: Vec::new(),
        count: 0,
        widest: 0,
        cut: false,
        open_quote: false,
        counted_bytes: 0,
        line_endings: LineEndings::default(),
    };
    let mut fields = Vec::new();
    let mut first = true;
    loop {
        let want = first || table.rows.len() < keep;
        match records.next(want.then_some(&mut fields)) {
            Step::Record(_) if first => {
                table.header = std::mem::take(&mut fields);
                first = false;
            }
            Step::Record(n) => {
                table.count += 1;
                if want {
                    table.widest = table.widest.max(n);
                    let mut row = std::mem::take(&mut fields);
                    if row.len() < table.header.len() {
                        row.resize(table.header.len(), String::new());
                    }
                    table.rows.push(row);
                }
            }
            Step::End => break,
            Step::Cut => {
                table.cut = true;
                break;
            }
            Step::OpenQuote => {
                table.open_quote = true;
                break;
            }
        }
        table.counted_bytes = records.position();
    }
    table.line_endings = records.endings;
    table
}

/// The first record of a kind, with its 1-based data row number.
pub(crate) type KindRow = (usize, Vec<String>);

/// The last records [`column_facts`] keeps.
const LAST_KEPT: usize = 2;

/// The facts of every column of `text` read with `dialect` (every data
/// record after the header, as pandas reads them; see [`super::columns`]),
/// and for `kind_column` the first record of each of its values (at most
/// four kinds), with its 1-based data row number: a file mixing kinds of
/// rows (issues and pull requests) shows one of each; and the last
/// [`LAST_KEPT`] records read (an export's `TOTAL` line).
pub(crate) fn column_facts(
    text: &str,
    dialect: &CsvDialect,
    whole: bool,
    width: usize,
    kind_column: Option<usize>,
) -> (super::columns::Facts, Vec<KindRow>, Vec<Vec<String>>) {
    let mut records = Records::new(text.as_bytes(), dialect.delimiter, whole);
    let mut facts = super::columns::Facts::new(width, dialect.decimal_comma);
    let mut kinds: Vec<(usize, Vec<String>)> = Vec::new();
    let mut last: Vec<Vec<String>> = Vec::new();
    let mut fields = Vec::new();
    let mut header = true;
    while let Step::Record(_) = records.next(Some(&mut fields)) {
        if std::mem::take(&mut header) {
            continue;
        }
        facts.add(&fields);
        if last.len() == LAST_KEPT {
            last.remove(0);
        }
        let mut row = fields.clone();
        row.resize(width, String::new());
        last.push(row);
        if let Some(v) = kind_column.and_then(|k| fields.get(k))
            && kinds.len() < 4
            && !kinds
                .iter()
                .any(|(_, r)| r.get(kind_column.unwrap_or(0)) == Some(v))
        {
            let mut row = fields.clone();
            row.resize(width, String::new());
            kinds.push((facts.rows, row));
        }
    }
    (facts, kinds, last)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn records(text: &str, d: u8) -> Vec<Vec<String>> {
        let mut r = Records::new(text.as_bytes(), d, true);
        let mut out = Vec::new();
        let mut fields = Vec::new();
        while let Step::Record(_) = r.next(Some(&mut fields)) {
            out.push(fields.clone());
        }
        out
    }

    #[test]
    fn records_end_at_any_line_break_and_quotes_hold_breaks_and_delimiters() {
        let text =
            "a,b\rx,1\r\r  \r\n\"q\r\nz\",2\na\"b,3\r\"c\"d,4\n\"say \"\"hi\"\", ok\",5\n,\n";
        assert_eq!(
            records(text, b','),
            vec![
                vec!["a", "b"],
                vec!["x", "1"],
                vec!["q\r\nz", "2"],
                vec!["a\"b", "3"],
                vec!["cd", "4"],
                vec!["say \"hi\", ok", "5"],
                vec!["", ""],
            ]
        );
        let mut open = Records::new(b"a\n\"never closed\n1\n", b',', true);
        assert_eq!(open.next(None), Step::Record(1));
        assert_eq!(open.next(None), Step::OpenQuote);
        let mut head = Records::new(b"a,b\n1,2\n3,", b',', false);
        assert_eq!(head.next(None), Step::Record(2));
        assert_eq!(head.next(None), Step::Record(2));
        assert_eq!(head.next(None), Step::Cut);
    }

    #[test]
    fn the_delimiter_is_sniffed_from_consistent_field_counts() {
        let semi = "name;price\nCafé;1,5\nTee;2,25\n";
        let d = CsvDialect::sniff(semi, Encoding::Cp1252, b',');
        assert_eq!(d.delimiter, b';');
        assert_eq!(d.read_csv_options(), "sep=\";\", encoding=\"cp1252\"");
        let tab = "a\tb\tc\n1\tx, y\t3\n";
        assert_eq!(
            CsvDialect::sniff(tab, Encoding::Utf8, b',').delimiter,
            b'\t'
        );
        let comma = "id,note\n1,\"a;b;c\"\n2,\"d|e\"\n";
        let d = CsvDialect::sniff(comma, Encoding::Utf8, b',');
        assert_eq!((d.delimiter, d.read_csv_options().as_str()), (b',', ""));
        // One column: the extension's delimiter.
        assert_eq!(
            CsvDialect::sniff("x\n1\n", Encoding::Utf8, b'\t').delimiter,
            b'\t'
        );
    }

    #[test]
    fn line_endings_are_counted_and_described() {
        let of = |text: &[u8]| {
            let mut r = Records::new(text, b',', true);
            while let Step::Record(_) = r.next(None) {}
            r.endings
        };
        assert_eq!(of(b"a\nb\n").describe(), None);
        let cr = of(b"a\rb\r");
        assert_eq!(cr.describe().unwrap(), "CR-only line endings (no \\n)");
        assert!(cr.breaks_naive_split());
        let mixed = of(b"a\r\nb\rc\n\"in\r\nquotes\"\n");
        assert_eq!((mixed.crlf, mixed.cr, mixed.lf), (1, 1, 2));
        assert!(mixed.describe().unwrap().starts_with("mixed"));
    }

    #[test]
    fn header_names_follow_pandas() {
        let h: Vec<String> = ["a", "", "a", "b", "a", "a.1"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(
            pandas_names(&h),
            ["a", "Unnamed: 1", "a.1", "b", "a.2", "a.1.1"]
        );
    }

    #[test]
    fn a_table_counts_records_not_lines_and_pads_short_rows() {
        let text = "a,b,c\n1,\"two\nlines\",3\n\n4,5\n";
        let d = CsvDialect::sniff(text, Encoding::Utf8, b',');
        let t = read_table(text, &d, true, 5);
        assert_eq!(t.header, ["a", "b", "c"]);
        assert_eq!(t.count, 2);
        assert_eq!(t.rows[1], ["4", "5", ""]);
        assert!(!t.cut && !t.open_quote);
        let head = read_table("a\n1\n2\n3", &d, false, 1);
        assert_eq!((head.count, head.cut, head.rows.len()), (2, true, 1));
    }
}
