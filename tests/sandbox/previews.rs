//! The input previews against pandas itself: for each file people have
//! (CR-only, CRLF and mixed line endings, a BOM, UTF-16, `;` and tab
//! delimiters in a `.csv`, cp1252 and Latin-1 text, quoted fields with line
//! breaks, an empty file, a header-only file, an Excel workbook of several
//! sheets written by openpyxl), the preview is computed on the host, and
//! the exact `pd.read_csv(...)` / `pd.read_excel(...)` call it states runs
//! in the sandbox image (plus `dtype=str, keep_default_na=False`, so values
//! compare as text): the row count, the column names and the first rows
//! must be what the preview showed.

use compute_bot::policy::DataLevel;
use compute_bot::prompt::preview_file;
use compute_bot::sandbox::InputFile;
use serde_json::Value;

fn cp1252(s: &str) -> Vec<u8> {
    s.chars()
        .map(|c| match c {
            '€' => 0x80,
            '’' => 0x92,
            'Œ' => 0x8C,
            c => u8::try_from(u32::from(c)).expect("a Latin-1 character"),
        })
        .collect()
}

/// The delimited files, generated here.
fn csv_fixtures() -> Vec<InputFile> {
    let mut beauty = b"\xEF\xBB\xBFwage,lwage,belavg,abvavg,exper,union,goodhlth".to_vec();
    for i in 0..12 {
        beauty.extend(
            format!(
                "\r{}.{},{:.6},{},{},{},0,1",
                5 + i,
                i,
                1.7 + i as f64 / 10.0,
                i % 2,
                1 - i % 2,
                30 - i
            )
            .bytes(),
        );
    }
    beauty.push(b'\r');
    let mut preise = String::from("Artikel;Preis €;Menge\n");
    for (i, name) in [
        "Straße",
        "Müsli",
        "Café \"Zur Post\"",
        "Grüße; viele",
        "Œuvre’s",
    ]
    .iter()
    .enumerate()
    {
        let quoted = if name.contains(['"', ';']) {
            format!("\"{}\"", name.replace('"', "\"\""))
        } else {
            name.to_string()
        };
        preise.push_str(&format!("{quoted};{},{};{}\n", i + 1, 25 * i, i * 3));
    }
    preise.push_str("Käse;9,99;7\n");
    let mut latin = b"name,city\n".to_vec();
    for i in 0..6 {
        latin.extend(format!("n{i},K\u{f6}ln\n").chars().map(|c| c as u8));
    }
    latin.extend(b"x\x81y,z\n"); // 0x81: no cp1252 character; Latin-1 reads it
    let mut utf16 = vec![0xFF, 0xFE];
    for u in "a;b;c\r\n1;é;x\r\n2;ß;y\r\n".encode_utf16() {
        utf16.extend(u.to_le_bytes());
    }
    vec![
        InputFile::new("beauty and the labor market.csv", beauty),
        InputFile::new("crlf.csv", b"id,v\r\n1,a\r\n2,b\r\n3,\"c\r\nd\"\r\n".to_vec()),
        InputFile::new("mixed.csv", b"\n\nid,v,v,\r1,x,y,z\r\n\r\n  \n2,\"q\"\"r\",,\n3,s\r".to_vec()),
        InputFile::new("preise.csv", cp1252(&preise)),
        InputFile::new("latin.csv", latin),
        InputFile::new("tabs.csv", b"city\tnote\tn\nParis\tbig, old\t1\nLyon\tx, y\t2\n".to_vec()),
        InputFile::new("pipes.csv", b"a|b\n1|2\n3|4\n".to_vec()),
        InputFile::new("utf16.csv", utf16),
        InputFile::new(
            "quoted.csv",
            b"id,text,n\n1,\"line one\nline two\",3\n2,\"a, b\",4\n3,\"say \"\"hi\"\"\",5\n4,\"\",6\n5,\"x\r\ny\",7\n6,plain,8\n".to_vec(),
        ),
        InputFile::new("header_only.csv", b"alpha,beta,gamma\n".to_vec()),
        InputFile::new("empty.csv", Vec::new()),
    ]
}

/// A workbook of several sheets, written by openpyxl in the sandbox.
const WORKBOOK: &str = r#"import datetime
import openpyxl
wb = openpyxl.Workbook()
ws = wb.active
ws.title = "sales"
ws.append(["id", "name", None, "when", "id"])
ws.append([1, "Zoë", 2.5, datetime.datetime(2024, 1, 2, 3, 4, 5), 10])
ws.append([])
ws.append([3.0, None, True, datetime.date(2024, 1, 3), 0.1])
for i in range(4, 40):
    ws.append([i, "n" + str(i), i / 4, datetime.datetime(2024, 2, 1) + datetime.timedelta(hours=i), -i])
ws["B60"].number_format = "0.00"
ws2 = wb.create_sheet("offset table")
ws2["B3"] = "h1"
ws2["C3"] = "h2"
ws2["B4"] = 1
ws2["C4"] = "x"
ws2.sheet_state = "hidden"
wb.create_sheet("empty")
ws4 = wb.create_sheet("header only")
ws4.append(["only", "header"])
wb.save("/out/book.xlsx")
print("{}")
"#;

/// What one preview (or one sheet of it) states.
#[derive(Debug)]
struct Stated {
    call: String,
    count: Option<u64>,
    columns: Vec<String>,
    rows: Vec<Vec<String>>,
}

fn json_strings(text: &str) -> Vec<String> {
    let list = text.split(" … +").next().unwrap_or(text);
    serde_json::from_str(list).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// Reads one section of a preview: the call between backquotes, the count
/// before "data row(s)", the `Columns:` line and the row lines after it.
fn stated(section: &str, call_start: &str) -> Stated {
    let at = section
        .find(call_start)
        .unwrap_or_else(|| panic!("no {call_start} in {section}"));
    let call = section[at..].split('`').next().unwrap().to_string();
    let count = section.find(" data row(s)").map(|end| {
        let digits: String = section[..end]
            .chars()
            .rev()
            .take_while(char::is_ascii_digit)
            .collect();
        digits.chars().rev().collect::<String>().parse().unwrap()
    });
    let mut lines = section.lines().skip_while(|l| !l.starts_with("Columns: "));
    let columns = lines
        .next()
        .map(|l| json_strings(&l["Columns: ".len()..]))
        .unwrap_or_default();
    let rows = lines
        .skip_while(|l| !l.starts_with("First "))
        .skip(1)
        .take_while(|l| l.starts_with('['))
        .map(json_strings)
        .collect();
    Stated {
        call,
        count,
        columns,
        rows,
    }
}

/// The Python that runs each stated call and reports what pandas read.
fn pandas_code(calls: &[(String, String)]) -> String {
    let mut code = String::from(
        r#"import json
import pandas as pd
out = {}
def read(key, make):
    try:
        df = make()
    except Exception as e:
        out[key] = {"error": str(e)}
        return
    df = df.astype(object).where(df.notna(), "")
    out[key] = {"columns": [str(c) for c in df.columns], "count": len(df),
                "rows": [[str(v) for v in r] for r in df.head(5).values.tolist()]}
"#,
    );
    for (key, call) in calls {
        let call = call.strip_suffix(')').expect("a call ends with )");
        code.push_str(&format!(
            "read({key:?}, lambda: {call}, dtype=str, keep_default_na=False))\n"
        ));
    }
    code.push_str("print(json.dumps(out))\n");
    code
}

fn check(key: &str, s: &Stated, got: &Value, preview: &str) {
    let g = &got[key];
    assert!(
        g.get("error").is_none(),
        "{key}: pandas failed: {g}\n{preview}"
    );
    assert_eq!(
        g["columns"],
        serde_json::json!(s.columns),
        "{key} columns\n{preview}"
    );
    assert_eq!(
        g["count"],
        serde_json::json!(s.count.unwrap_or(0)),
        "{key} rows\n{preview}"
    );
    let first: Vec<Value> = g["rows"].as_array().unwrap()[..s.rows.len()].to_vec();
    assert_eq!(
        Value::from(first),
        serde_json::json!(s.rows),
        "{key} first rows\n{preview}"
    );
    let count = g["count"].as_u64().unwrap_or(0);
    assert!(
        count == 0 || !s.rows.is_empty(),
        "{key}: rows not shown\n{preview}"
    );
}

#[tokio::test]
async fn previews_state_what_pandas_reads_from_the_files_people_have() {
    let out = crate::run_allowed(WORKBOOK, vec![], 1.0).await;
    let book = out
        .artifacts
        .iter()
        .find(|a| a.name == "book.xlsx")
        .unwrap_or_else(|| panic!("book.xlsx was not written: {:?}", out.artifacts));
    let mut files = csv_fixtures();
    files.push(InputFile::new("book.xlsx", book.bytes.clone()));

    let mut calls = Vec::new();
    let mut expected = Vec::new();
    for (i, f) in files.iter().enumerate() {
        let preview = preview_file(f, DataLevel::Preview);
        assert!(!preview.contains("(cut)"), "{preview}");
        assert!(!preview.contains('\u{FFFD}'), "{preview}");
        if f.name.ends_with(".xlsx") {
            for (j, sheet) in preview.split("\nSheet ").skip(1).enumerate() {
                let s = stated(sheet, "pd.read_excel(");
                let key = format!("{i}.{j}");
                calls.push((key.clone(), s.call.clone()));
                expected.push((key, s, preview.clone()));
            }
        } else {
            let s = stated(&preview, "pd.read_csv(");
            calls.push((i.to_string(), s.call.clone()));
            expected.push((i.to_string(), s, preview.clone()));
        }
    }
    let out = crate::run_allowed(&pandas_code(&calls), files.clone(), 1.0).await;
    let got: Value = serde_json::from_str(out.stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("{e}: {}", out.stdout));

    for (key, s, preview) in &expected {
        if preview.contains("EmptyDataError") {
            let error = got[key]["error"].as_str().unwrap_or_default();
            assert!(
                error.contains("No columns to parse"),
                "{key}: {}\n{preview}",
                got[key]
            );
            continue;
        }
        check(key, s, &got, preview);
    }

    // What the previews say, beyond matching pandas.
    let preview = |name: &str| {
        let f = files.iter().find(|f| f.name == name).unwrap();
        preview_file(f, DataLevel::Preview)
    };
    let beauty = preview("beauty and the labor market.csv");
    assert!(beauty.contains("12 data row(s) × 7 column(s)"), "{beauty}");
    assert!(
        beauty.contains("BOM") && beauty.contains("CR-only"),
        "{beauty}"
    );
    let preise = preview("preise.csv");
    assert!(
        preise.contains("sep=\";\", decimal=\",\", encoding=\"cp1252\""),
        "{preise}"
    );
    let quoted = preview("quoted.csv");
    assert!(
        !quoted.contains("line endings"),
        "a CRLF inside quotes ends no record: {quoted}"
    );
    assert!(preview("latin.csv").contains("encoding=\"latin-1\""));
    assert!(preview("tabs.csv").contains("sep=\"\\t\""));
    assert!(preview("utf16.csv").contains("encoding=\"utf-16\""));
    assert!(preview("quoted.csv").contains("6 data row(s)"));
    let book = preview("book.xlsx");
    assert!(
        book.contains("4 sheet(s): [\"sales\", \"offset table\", \"empty\", \"header only\"]"),
        "{book}"
    );
    assert!(book.contains("pass header=2"), "{book}");
    assert_eq!(expected.len(), files.len() - 1 + 4);
}

/// Files whose columns test pandas' inference: its NA strings (and strings
/// that are not), spaces around numbers, infinities, exponents, signs,
/// booleans with and without a gap, an empty column, integers with a gap
/// (float64), ISO dates (text), and a decimal-comma file.
fn facts_fixtures() -> Vec<InputFile> {
    let mixed = "i,f,na_kinds,not_na,spaced,inf,b,b_gap,empty,int_gap,when,text\n\
1,1.5,NA,NAN,\" 7\",inf,True,true,,1,2024-01-02,x\n\
2,.5,#N/A,\" NA\",8 ,-Infinity,FALSE,,,,2023-12-31 10:00:00,y\n\
-3,5.,null,n.a.,9,1e5,false,False,,3,2024-02-29,x\n\
+4,1e-3,None,-,10,+2,TRUE,TRUE,,4,2024-01-01,\n\
0,-2E2,<NA>,?,11,3.25,true,false,,5,2025-06-30,NULL\n";
    let comma = "name;price;n\nA;1,5;1\nB;;2\nC;-12,25;3\nD;3;4\n";
    let mut long = String::from("id,group,score\n");
    for i in 0..2000 {
        let score = if i % 7 == 0 {
            String::new()
        } else {
            format!("{}.{}", i % 97, i % 10)
        };
        long.push_str(&format!("{i},g{},{score}\n", i % 13));
    }
    vec![
        InputFile::new("types.csv", mixed.as_bytes().to_vec()),
        InputFile::new("comma.csv", comma.as_bytes().to_vec()),
        InputFile::new("long.tsv", long.replace(',', "\t").into_bytes()),
    ]
}

/// One column's facts as the preview states them.
#[derive(Debug)]
struct FactLine {
    name: String,
    dtype: String,
    missing: u64,
    range: Option<(String, String)>,
    distinct: Option<u64>,
}

/// The `Column facts` lines of a preview.
fn fact_lines(preview: &str) -> Vec<FactLine> {
    preview
        .lines()
        .skip_while(|l| !l.starts_with("Column facts"))
        .skip(1)
        .take_while(|l| l.starts_with('"'))
        .map(|l| {
            let (name, rest) = l[1..].split_once("\": ").expect("name");
            // A text column's values with their counts end the line, and may hold `; `.
            let rest = match (rest.find(" distinct: "), rest.find("; e.g. ")) {
                (Some(i), _) => &rest[..i + " distinct".len()],
                (None, Some(i)) => &rest[..i],
                (None, None) => rest,
            };
            let parts: Vec<&str> = rest.split("; ").collect();
            let mut missing = 0;
            let mut range = None;
            let mut distinct = None;
            for p in &parts[1..] {
                if p.contains(" missing (") {
                    let n = p.split(' ').next().unwrap();
                    missing = n.parse().unwrap_or_else(|e| panic!("{e}: {l}"));
                } else if p.starts_with("e.g. ")
                    || p.ends_with(" zero(s)")
                    || p.ends_with(" negative")
                    || p.contains(" repeated ")
                {
                    // Samples, zeros, negatives and a sentinel: not compared here.
                } else if let Some((n, _)) = p.split_once(" distinct") {
                    // `7 distinct` or `7 distinct: "a" 3, "b" 4` (the values with their counts).
                    distinct = Some(n.parse().unwrap_or_else(|e| panic!("{e}: {l}")));
                } else {
                    let p = p.trim_end_matches(" (dates as text)");
                    let (a, b) = p
                        .split_once(" to ")
                        .unwrap_or_else(|| panic!("a range: {p:?} in {l}"));
                    range = Some((a.to_string(), b.to_string()));
                }
            }
            FactLine {
                name: name.to_string(),
                dtype: parts[0].to_string(),
                missing,
                range,
                distinct,
            }
        })
        .collect()
}

#[tokio::test]
async fn column_facts_are_what_pandas_infers() {
    let files: Vec<InputFile> = facts_fixtures().into_iter().chain(csv_fixtures()).collect();
    let mut code = String::from(
        r#"import json
import math
import pandas as pd
out = {}
def facts(key, make):
    try:
        df = make()
    except Exception as e:
        out[key] = {"error": str(e)}
        return
    cols = []
    for c in df.columns:
        s = df[c]
        numeric = pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s)
        v = s.dropna()
        col = {"name": str(c), "dtype": str(s.dtype), "missing": int(s.isna().sum()),
               "nunique": int(s.nunique())}
        if len(v) and numeric:
            col["min"], col["max"] = [float(x) if math.isfinite(x) else str(x) for x in (v.min(), v.max())]
        elif len(v) and s.dtype == object and all(isinstance(x, str) for x in v):
            col["min"], col["max"] = min(v), max(v)
        cols.append(col)
    out[key] = cols
"#,
    );
    let mut expected = Vec::new();
    for (i, f) in files.iter().enumerate() {
        let preview = preview_file(f, DataLevel::Preview);
        if preview.contains("EmptyDataError") || !preview.contains("Column facts") {
            continue;
        }
        let call = stated(&preview, "pd.read_csv(").call;
        code.push_str(&format!("facts({:?}, lambda: {call})\n", i.to_string()));
        expected.push((i.to_string(), fact_lines(&preview), preview));
    }
    code.push_str("print(json.dumps(out))\n");
    let out = crate::run_allowed(&code, files.clone(), 1.0).await;
    let got: Value = serde_json::from_str(out.stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("{e}: {}", out.stdout));
    let as_number = |t: &str| -> f64 {
        let t = t.trim().replace(',', ".");
        match t.to_ascii_lowercase().trim_start_matches('+') {
            "inf" | "infinity" => f64::INFINITY,
            "-inf" | "-infinity" => f64::NEG_INFINITY,
            _ => t.parse().unwrap_or_else(|_| panic!("not a number: {t}")),
        }
    };
    let mut checked = 0;
    for (key, lines, preview) in &expected {
        let cols = got[key]
            .as_array()
            .unwrap_or_else(|| panic!("{key}: {}", got[key]));
        assert_eq!(cols.len(), lines.len(), "{key}: columns\n{preview}");
        for (l, c) in lines.iter().zip(cols) {
            let what = format!("{key} {:?}: pandas {c}\n{preview}", l.name);
            assert_eq!(c["name"], l.name.as_str(), "{what}");
            assert_eq!(c["dtype"], l.dtype.as_str(), "{what}");
            assert_eq!(c["missing"], l.missing, "{what}");
            if let Some(d) = l.distinct {
                assert_eq!(c["nunique"], d, "{what}");
            }
            match (&l.range, l.dtype.as_str()) {
                (Some((a, b)), "int64" | "float64") => {
                    for (stated, theirs) in [(a, &c["min"]), (b, &c["max"])] {
                        let ours = as_number(stated);
                        let theirs = match theirs {
                            Value::Number(n) => n.as_f64().unwrap(),
                            Value::String(s) => as_number(s),
                            _ => f64::NAN,
                        };
                        // pandas' own float parser may differ in the last bit.
                        assert!(
                            ours == theirs || (ours - theirs).abs() <= 1e-12 * ours.abs(),
                            "{what}: {ours} vs {theirs}"
                        );
                    }
                }
                (Some((a, b)), _) => {
                    assert_eq!(
                        (&c["min"], &c["max"]),
                        (&Value::from(a.as_str()), &Value::from(b.as_str())),
                        "{what}"
                    );
                }
                (None, _) => {}
            }
            checked += 1;
        }
    }
    assert!(checked >= 30, "only {checked} columns checked");
    // What the mixed file states, beyond matching pandas.
    let mixed = preview_file(&files[0], DataLevel::Preview);
    assert!(
        mixed.contains("\"int_gap\": float64; 1 missing (20.0%); 1 to 5"),
        "{mixed}"
    );
    assert!(
        mixed.contains("\"empty\": float64; 5 missing (100.0%)"),
        "{mixed}"
    );
}
