use super::*;
use crate::prompt::preview::zip::write_zip;

const WORKBOOK: &str = r#"<?xml version="1.0"?><workbook xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheets><sheet name="sales &amp; more" sheetId="1" r:id="rId1"/><sheet name="b" sheetId="2" state="hidden" r:id="rId2"/><sheet name="empty" sheetId="3" r:id="rId3"/></sheets></workbook>"#;
const RELS: &str = r#"<Relationships><Relationship Id="rId1" Target="worksheets/sheet1.xml"/><Relationship Id="rId2" Target="/xl/worksheets/sheet2.xml"/><Relationship Id="rId3" Target="worksheets/sheet3.xml"/></Relationships>"#;
const STYLES: &str = r#"<styleSheet><numFmts count="1"><numFmt numFmtId="164" formatCode="yyyy-mm-dd h:mm:ss"/></numFmts><cellStyleXfs count="1"><xf numFmtId="14"/></cellStyleXfs><cellXfs count="3"><xf numFmtId="0"/><xf numFmtId="164"/><xf numFmtId="14"/></cellXfs></styleSheet>"#;
const SHEET1: &str = r#"<worksheet><dimension ref="A1:D10"/><sheetData><row r="1"><c r="A1" t="s"><v>0</v></c><c r="B1" t="inlineStr"><is><t>name</t></is></c><c r="D1" t="s"><v>1</v></c></row><row r="2"><c r="A2"><v>1</v></c><c r="B2" t="s"><v>2</v></c><c r="C2"><v>2.5</v></c><c r="D2" s="1"><v>45293.12783564815</v></c></row><row r="4"><c r="A4"><v>3.0</v></c><c r="C4" t="b"><v>1</v></c><c r="D4" s="2"><v>45294</v></c></row><row r="10"><c r="B10" s="1"/></row></sheetData></worksheet>"#;
const SHEET2: &str = r#"<worksheet><sheetData><row r="3"><c r="B3" t="inlineStr"><is><t>h1</t></is></c></row><row r="4"><c r="B4"><v>1e-7</v></c></row></sheetData></worksheet>"#;
const SHEET3: &str = r#"<worksheet><dimension ref="A1"/><sheetData/></worksheet>"#;
const STRINGS: &str = r#"<sst><si><t>id</t></si><si><r><t>wh</t></r><r><t>en</t></r><rPh><t>x</t></rPh></si><si><t xml:space="preserve">x &lt;1&gt;</t></si></sst>"#;

fn book() -> Vec<u8> {
    write_zip(
        &[
            ("[Content_Types].xml", b"<Types/>"),
            ("xl/workbook.xml", WORKBOOK.as_bytes()),
            ("xl/_rels/workbook.xml.rels", RELS.as_bytes()),
            ("xl/styles.xml", STYLES.as_bytes()),
            ("xl/sharedStrings.xml", STRINGS.as_bytes()),
            ("xl/worksheets/sheet1.xml", SHEET1.as_bytes()),
            ("xl/worksheets/sheet2.xml", SHEET2.as_bytes()),
            ("xl/worksheets/sheet3.xml", SHEET3.as_bytes()),
        ],
        true,
    )
}

/// What pandas 2.3 + openpyxl 3.1 read from the same sheets (checked by
/// hand in the sandbox image; `tests/sandbox/previews.rs` checks files
/// openpyxl writes).
#[test]
fn sheets_read_as_pandas_reads_them() {
    let (sheets, total) = read_workbook(&book(), true).unwrap();
    assert_eq!(total, 3);
    let a = &sheets[0];
    assert_eq!(a.name, "sales & more");
    assert_eq!(a.header, ["id", "name", "", "when"]);
    assert_eq!(
        a.count, 3,
        "trailing empty row 10 dropped, blank row 3 kept"
    );
    assert_eq!(a.width, 4);
    assert_eq!(a.rows[0], ["1", "x <1>", "2.5", "2024-01-02 03:04:05"]);
    assert_eq!(a.rows[1], ["", "", "", ""]);
    assert_eq!(a.rows[2], ["3", "", "True", "2024-01-03 00:00:00"]);
    assert_eq!(a.dimension.as_deref(), Some("A1:D10"));
    let b = &sheets[1];
    assert!(b.hidden);
    assert_eq!((b.count, b.width, b.first_row), (3, 2, 3));
    assert_eq!(b.header, ["", ""]);
    assert_eq!(b.rows[2], ["", "1e-07"]);
    let e = &sheets[2];
    assert_eq!((e.count, e.width, e.header.len()), (0, 0, 0));
}

#[test]
fn numbers_and_dates_are_written_as_python_writes_them() {
    assert_eq!(python_number(3.0), "3");
    assert_eq!(python_number(2.5), "2.5");
    assert_eq!(python_number(1e-7), "1e-07");
    assert_eq!(python_number(1.5e20), "1.5e+20");
    assert_eq!(excel_date(0.5, false).unwrap(), "12:00:00");
    assert_eq!(excel_date(45294.0, false).unwrap(), "2024-01-03 00:00:00");
    assert_eq!(excel_date(1.0, false).unwrap(), "1900-01-01 00:00:00");
    assert_eq!(excel_date(0.0, true).unwrap(), "00:00:00");
    assert!(is_date_code("yyyy-mm-dd") && is_date_code("h:mm"));
    assert!(!is_date_code("0.00") && !is_date_code("\"days\" 0") && !is_date_code("[Red]0"));
    assert_eq!(column_of("AB12"), Some(27));
}

#[test]
fn a_workbook_head_and_a_damaged_one_are_told_not_guessed() {
    let z = book();
    // The head (no central directory): local headers still list the parts.
    let (sheets, _) = read_workbook(&z[..z.len() - 30], false).unwrap();
    assert_eq!(sheets[0].count, 3);
    assert!(read_workbook(b"PK\x03\x04garbage", true).is_err());
}

/// A sheet bigger than its share of the budget is read in part: its count
/// is a lower bound, and the preview says "more than".
#[test]
fn a_sheet_past_the_budget_is_a_lower_bound() {
    let mut xml = String::from("<worksheet><sheetData>");
    for r in 1..=5000 {
        xml.push_str(&format!(
            "<row r=\"{r}\"><c r=\"A{r}\"><v>{r}</v></c></row>"
        ));
    }
    xml.push_str("</sheetData></worksheet>");
    let z = write_zip(&[("s.xml", xml.as_bytes())], true);
    let e = &zip::entries(&z, true).unwrap()[0];
    let scan = scan_sheet(&z, e, &mut Budget(64 * 1024), &BTreeSet::new()).unwrap();
    assert!(scan.partial);
    assert!(
        scan.last_row > 100 && scan.last_row < 5000,
        "{}",
        scan.last_row
    );
    let whole = scan_sheet(&z, e, &mut Budget(1 << 20), &BTreeSet::new()).unwrap();
    assert!(!whole.partial);
    assert_eq!(whole.last_row, 5000);
}

#[test]
fn the_workbook_preview_names_sheets_calls_and_hides_values_at_schema() {
    use crate::policy::DataLevel;
    use crate::prompt::preview::preview_input_at;
    let z = book();
    let p = preview_input_at("book.xlsx", &z, z.len() as u64, DataLevel::Preview);
    assert!(
        p.contains("3 sheet(s): [\"sales & more\", \"b\", \"empty\"]"),
        "{p}"
    );
    assert!(
        p.contains("`pd.read_excel(\"/data/book.xlsx\", sheet_name=\"sales & more\")` → 3 data row(s) × 4 column(s)"),
        "{p}"
    );
    assert!(
        p.contains("Columns: [\"id\", \"name\", \"Unnamed: 2\", \"when\"]"),
        "{p}"
    );
    assert!(p.contains("\"2024-01-02 03:04:05\""), "{p}");
    assert!(p.contains("(hidden)") && p.contains("pass header=2"), "{p}");
    assert!(p.contains("no cells (an empty table)"), "{p}");
    let s = preview_input_at("book.xlsx", &z, z.len() as u64, DataLevel::Schema);
    assert!(s.contains("id (integer), name (text)"), "{s}");
    assert!(!s.contains("x <1>") && !s.contains("2024"), "{s}");
}

/// The sheet facts against what pandas 2.3 + openpyxl 3.1 reported for a
/// workbook openpyxl wrote (`scripts/xlsx-fixtures.py` wrote
/// `tests/fixtures/xlsx/facts.xlsx` and pandas' facts in `expected.json`).
#[test]
fn sheet_facts_are_what_pandas_reports() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/xlsx");
    let book = std::fs::read(format!("{dir}/facts.xlsx")).unwrap();
    let expected: serde_json::Value =
        serde_json::from_slice(&std::fs::read(format!("{dir}/expected.json")).unwrap()).unwrap();
    let (sheets, _) = read_workbook(&book, true).unwrap();
    let (mut checked, mut ranges, mut distinct) = (0, 0, 0);
    for s in &sheets {
        let want = &expected[&s.name];
        assert_eq!(s.count as u64, want["rows"].as_u64().unwrap(), "{}", s.name);
        let cols = want["columns"].as_array().unwrap();
        assert_eq!(s.facts.len(), cols.len(), "{}", s.name);
        for (ours, theirs) in s.facts.iter().zip(cols) {
            let what = format!("{} {ours:?} vs pandas {theirs}", s.name);
            assert_eq!(ours.dtype, theirs["dtype"].as_str().unwrap(), "{what}");
            assert_eq!(
                ours.missing as u64,
                theirs["missing"].as_u64().unwrap(),
                "{what}"
            );
            if let Some(n) = ours.distinct {
                assert_eq!(n as u64, theirs["nunique"].as_u64().unwrap(), "{what}");
                distinct += 1;
            }
            match (&ours.range, theirs.get("min")) {
                (Some((lo, hi)), Some(min)) if ours.dtype.starts_with("datetime") => {
                    assert_eq!(
                        (lo.as_str(), hi.as_str()),
                        (min.as_str().unwrap(), theirs["max"].as_str().unwrap()),
                        "{what}"
                    );
                    ranges += 1;
                }
                (Some((lo, hi)), Some(min)) => {
                    let num = |t: &str| t.parse::<f64>().unwrap();
                    assert_eq!(
                        (num(lo), num(hi)),
                        (
                            num(min.as_str().unwrap()),
                            num(theirs["max"].as_str().unwrap())
                        ),
                        "{what}"
                    );
                    ranges += 1;
                }
                (None, None) => {}
                (ours, theirs) => panic!("{what}: range {ours:?} vs {theirs:?}"),
            }
            checked += 1;
        }
    }
    assert_eq!(checked, 17 + 2);
    assert!(
        ranges >= 12 && distinct >= 6,
        "{ranges} ranges, {distinct} distinct"
    );
}

#[test]
fn the_workbook_preview_states_each_sheets_facts() {
    use crate::policy::DataLevel;
    use crate::prompt::preview::preview_input_at;
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/xlsx");
    let book = std::fs::read(format!("{dir}/facts.xlsx")).unwrap();
    let p = preview_input_at("f.xlsx", &book, book.len() as u64, DataLevel::Preview);
    for part in [
        "\nColumn facts as pandas reads all 8 rows (dtype; missing, if any; min to max or distinct values):",
        "\n\"int_gap\": float64; 3 missing (37.5%); -5 to 6",
        "\n\"date_gap\": datetime64[ns]; 4 missing (50.0%); 2023-05-01 00:00:00 to 2025-01-01 00:00:00",
        "\n\"na_text\": object; 5 missing (62.5%); 2 distinct",
        "\nColumn facts as pandas reads all 30 rows",
        "\n\"city\": object; 2 distinct",
    ] {
        assert!(p.contains(part), "{part:?} missing:\n{p}");
    }
    assert!(
        p.len() <= crate::prompt::preview::PREVIEW_MAX_BYTES,
        "{}",
        p.len()
    );
    let s = preview_input_at("f.xlsx", &book, book.len() as u64, DataLevel::Schema);
    assert!(
        s.contains("\n\"int_gap\": float64; 3 missing (37.5%)\n"),
        "{s}"
    );
    assert!(!s.contains("2025") && !s.contains("distinct"), "{s}");
}

/// The first look at a messy export against what pandas 2.3 + openpyxl 3.1
/// report for it (`scripts/xlsx-fixtures.py` wrote
/// `tests/fixtures/xlsx/first_look.xlsx` and `first_look.json`): every
/// value of a text column with its count, the zeros, negatives and the
/// sentinel of a number column, and the last rows with the TOTAL line.
#[test]
fn the_first_look_at_a_sheet_is_what_pandas_counts() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/xlsx");
    let book = std::fs::read(format!("{dir}/first_look.xlsx")).unwrap();
    let want: serde_json::Value =
        serde_json::from_slice(&std::fs::read(format!("{dir}/first_look.json")).unwrap()).unwrap();
    let (sheets, _) = read_workbook(&book, true).unwrap();
    let s = &sheets[0];
    let names = ["region", "sex", "amount", "units"];
    for (name, c) in names.iter().zip(&s.facts) {
        let theirs = &want["columns"][name];
        if let Some(values) = theirs.get("values") {
            let ours: serde_json::Map<String, serde_json::Value> = c
                .values
                .iter()
                .map(|(v, n)| (v.clone(), (*n).into()))
                .collect();
            assert_eq!(&serde_json::Value::Object(ours), values, "{name}");
            continue;
        }
        assert_eq!(c.zeros as u64, theirs["zeros"].as_u64().unwrap(), "{name}");
        assert_eq!(
            c.negatives as u64,
            theirs["negatives"].as_u64().unwrap(),
            "{name}"
        );
        // A value that stands out is pandas' most repeated; a spread column has none.
        if let Some((v, n)) = &c.repeated {
            let most = &theirs["most"];
            assert_eq!(
                v.parse::<f64>().ok(),
                most[0].as_str().unwrap().parse().ok()
            );
            assert_eq!(*n as u64, most[1].as_u64().unwrap());
        }
    }
    assert_eq!(s.facts[2].repeated, Some(("-999".to_string(), 5)));
    assert_eq!(s.facts[3].repeated, None);
    let last: Vec<Vec<String>> = s.last.iter().map(|(_, r)| r.clone()).collect();
    let theirs: Vec<Vec<String>> = serde_json::from_value(want["last"].clone()).unwrap();
    let num = |r: &[String]| -> Vec<Option<f64>> { r.iter().map(|v| v.parse().ok()).collect() };
    assert_eq!(
        last.iter()
            .map(|r| (r[0].clone(), num(r)))
            .collect::<Vec<_>>(),
        theirs
            .iter()
            .map(|r| (r[0].clone(), num(r)))
            .collect::<Vec<_>>()
    );
    assert_eq!(s.last.iter().map(|(n, _)| *n).collect::<Vec<_>>(), [30, 31]);
}

/// The preview tells the model what the first rows hide, as for CSV.
#[test]
fn the_workbook_preview_shows_counts_sentinels_and_the_last_rows() {
    use crate::policy::DataLevel;
    use crate::prompt::preview::preview_input_at;
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/xlsx");
    let book = std::fs::read(format!("{dir}/first_look.xlsx")).unwrap();
    let p = preview_input_at("e.xlsx", &book, book.len() as u64, DataLevel::Preview);
    for part in [
        "\nFirst 5 row(s) (each value as text):",
        "\nLast 2 row(s) read (data rows 30 to 31):\n[\"W.\", \"F\", \"304.5\", \"0\"]\n[\"TOTAL\", \"\", \"12345.5\", \"42\"]",
        "\n\"region\": object; 11 distinct: \"North\" 7, \"E",
        "\"TOTAL\" 1",
        "\n\"sex\": object; 1 missing (3.2%); 3 distinct: \"M\" 15, \"F\" 14, \"0\" 1",
        "; 3 zero(s); 5 negative; \"-999\" repeated 5 times",
        "\n\"units\": int64; -1 to 42; 8 zero(s); 8 negative",
    ] {
        assert!(p.contains(part), "{part:?} missing:\n{p}");
    }
    let s = preview_input_at("e.xlsx", &book, book.len() as u64, DataLevel::Schema);
    assert!(!s.contains("TOTAL") && !s.contains("-999"), "{s}");
}
