//! The Result block of each shape a result takes, compared against the
//! snapshots in `snapshots/` (`cargo insta review` after a deliberate change;
//! plain `cargo nextest` fails on any difference and writes no file under CI).

use serde_json::{Value, json};

use super::*;

/// A report of `result` for `goal`, with no code or sandbox run.
fn bare(goal: &str, result: Value, explanation: Option<&str>) -> Report {
    Report {
        goal: Some(goal.into()),
        plan: None,
        status: ReportStatus::Ok,
        stop_reason: None,
        result: Some(result),
        explanation: explanation.map(str::to_string),
        attempts: vec![],
        code: None,
        code_sha256: None,
        verdict: None,
        outcome: None,
        inputs: vec![],
        policy: None,
        usage: Default::default(),
        model_requests: 0,
        prices: None,
        cost_usd: None,
        timings_ms: Default::default(),
        steps: Vec::new(),
        continued: None,
        replayed: Vec::new(),
        record: None,
    }
}

/// The part of the comment this module lays out: from the answer line to
/// the footer (no sandbox audit, no version), with the files a front end
/// shows in `files`.
fn result_part(result: Value, explanation: Option<&str>, files: Option<FilesBlock>) -> String {
    let report = bare("the goal", result, explanation);
    let ctx = RenderContext {
        files,
        ..RenderContext::default()
    };
    let md = markdown(&report, &ctx);
    let start = md
        .find("\n**Answer:**")
        .or_else(|| md.find("\n#### Result"));
    let end = md.rfind("\n---\n").unwrap_or(md.len());
    md[start.unwrap_or(0)..end].trim().to_string()
}

/// The Titanic answer: headline figures and an object of tables.
pub(super) fn titanic() -> Value {
    json!({
        "passengers": 891,
        "survival_rate": 0.3838383838383838,
        "survival_by": {
            "sex": [
                {"sex": "female", "passengers": 314, "survived": 233, "rate": 0.7420382165605095},
                {"sex": "male", "passengers": 577, "survived": 109, "rate": 0.18890814558058924}
            ],
            "class": [
                {"pclass": 1, "passengers": 216, "survived": 136, "rate": 0.6296296296296297},
                {"pclass": 2, "passengers": 184, "survived": 87, "rate": 0.47282608695652173},
                {"pclass": 3, "passengers": 491, "survived": 119, "rate": 0.24236252545824846}
            ]
        },
        "logistic_regression": {
            "n": 714,
            "auc": 0.8602,
            "pseudo_r2": 0.3339,
            "terms": [
                {"term": "sex[male]", "coef": -2.5221, "odds_ratio": 0.0803, "p": 1.05e-19},
                {"term": "pclass", "coef": -1.2885, "odds_ratio": 0.2757, "p": 3.1e-14},
                {"term": "age", "coef": -0.0369, "odds_ratio": 0.9638, "p": 1.2e-5}
            ]
        },
        "features": ["sex", "pclass", "age"]
    })
}

/// The review and CI health report: a window, two nested sections with
/// their own tables, and a summary in the code's own words.
pub(super) fn health_report() -> Value {
    json!({
        "window": {"since": "2026-10-01", "until": "2026-11-30", "days": 61},
        "reviews": {
            "pull_requests": 148,
            "median_hours_to_first_review": 5.216666666666667,
            "unreviewed": 7,
            "by_reviewer": [
                {"reviewer": "alice", "reviews": 61, "median_hours": 3.1},
                {"reviewer": "bob", "reviews": 44, "median_hours": 7.75},
                {"reviewer": "carol", "reviews": 29, "median_hours": 12.4}
            ]
        },
        "ci": {
            "runs": 1204,
            "failure_rate": 0.1204318936877076,
            "by_workflow": [
                {"workflow": "ci", "runs": 903, "failures": 97, "failure_rate": 0.10741971207087486},
                {"workflow": "release", "runs": 301, "failures": 48, "failure_rate": 0.15946843853820597}
            ],
            "failure_conclusions": ["failure", "timed_out", "startup_failure"]
        },
        "summary": "Since October, 148 pull requests were opened and the median time to a first review was 5.2 hours; 7 are still unreviewed. CI failed 12 % of 1,204 runs, the release workflow more often (16 %) than ci (11 %). Reviews are concentrated: alice did 41 % of them, so a second reviewer on release changes would cut the wait most."
    })
}

#[test]
fn nested_objects_get_sections_headed_by_their_path() {
    let md = result_part(titanic(), None, None);
    assert!(md.contains("**survival\\_by › sex**"), "{md}");
    assert!(md.contains("| female | 314 | 233 | 0.742 |"), "{md}");
    assert!(md.contains("**logistic\\_regression**"), "{md}");
    assert!(!md.contains('…'), "nothing is cut: {md}");
    insta::assert_snapshot!(md);
}

#[test]
fn lists_of_records_inside_objects_are_tables_with_columns() {
    let md = result_part(health_report(), None, None);
    assert!(md.contains("**reviews › by\\_reviewer**"), "{md}");
    assert!(
        md.contains("| reviewer | reviews | median\\_hours |"),
        "{md}"
    );
    assert!(
        md.contains("| failure\\_conclusions | failure, timed\\_out, startup\\_failure |"),
        "{md}"
    );
    insta::assert_snapshot!(md);
}

#[test]
fn long_texts_are_paragraphs_in_full_and_escaped() {
    let summary = format!(
        "Revenue rose in every month but March. @team please see <b>this</b> | not a cell. {}",
        "The paid orders were counted once per order id after removing test accounts. ".repeat(8)
    );
    let result = json!({
        "months": 6,
        "summary": summary,
        "method": "1. Dropped 41 duplicate rows (the same order id, customer and amount)\n2. Parsed the dates, which were written day first (31/05/2026)\n3. Kept the orders whose status is paid, after trimming and lowercasing it",
    });
    let md = result_part(result.clone(), None, None);
    // In full, under its key, not in a cell.
    assert!(
        md.contains("**summary**\n\nRevenue rose in every month"),
        "{md}"
    );
    assert!(md.contains("removing test accounts.\n"), "{md}");
    assert!(!md.contains("| summary |"), "{md}");
    assert!(!md.contains("@team") && !md.contains("<b>"), "{md}");
    // A text that starts like a list does not become one; its line breaks stay.
    assert!(md.contains("**method**\n\n1\\. Dropped"), "{md}");
    insta::assert_snapshot!(md);
    // In a table of records a long text is cut at the cell's 160
    // characters, and the table says so.
    let rows = json!([{"id": 1, "comment": "y".repeat(200)}]);
    let table = result_part(rows, None, None);
    assert!(
        table.contains(&format!("| 1 | {}… |", "y".repeat(159))),
        "{table}"
    );
    assert!(
        table.contains("Texts over 160 characters are cut in this table"),
        "{table}"
    );
    // The JSON report keeps the exact value.
    let report = bare("g", result, None);
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["result"]["summary"], summary.as_str());
}

#[test]
fn a_chart_key_shows_its_image_where_the_key_sits() {
    let files = FilesBlock::new(
        vec![
            (
                "monthly.png".into(),
                "https://example.test/monthly.png".into(),
            ),
            ("other.png".into(), "https://example.test/other.png".into()),
        ],
        Some(&json!({"chart": "/out/monthly.png"})),
        |in_result| format!("#### Files\n\nshown in the result: {in_result:?}\n"),
    );
    assert_eq!(
        files.markdown,
        "#### Files\n\nshown in the result: [\"monthly.png\"]\n"
    );
    let result = json!({
        "total_revenue": 48211.5,
        "chart": "/out/monthly.png",
        "by_month": [
            {"month": "2026-05", "revenue": 7012.25},
            {"month": "2026-06", "revenue": 8120.0}
        ]
    });
    let md = result_part(result, None, Some(files));
    let image = md
        .find("![chart](https://example.test/monthly.png)")
        .expect(&md);
    assert!(image < md.find("**by\\_month**").unwrap(), "{md}");
    assert!(!md.contains("| chart |"), "{md}");
    insta::assert_snapshot!(md);
}

#[test]
fn deep_levels_and_other_shapes_are_folded_pretty_json() {
    let result = json!({
        "a": {"b": {"c": {"d": {"e": 1, "f": [1, 2]}}, "n": 2}},
        "matrix": [[1, 2], [3, 4]],
        "cells": [{"id": 1, "detail": {"x": "a long nested value that is longer than a table cell holds as one line", "y": [1, 2, 3]}}]
    });
    let md = result_part(result, None, None);
    assert!(
        md.contains("<details><summary><b>a › b › c › d</b>"),
        "{md}"
    );
    assert!(md.contains("<details><summary><b>matrix</b>"), "{md}");
    assert!(md.contains("\"e\": 1"), "pretty-printed: {md}");
    assert!(md.contains("| 1 | _2 fields_ |"), "{md}");
    // A record's nested value too long for its cell: the rows follow in full.
    assert!(
        md.contains("<details><summary><b>cells</b> · 1 item · JSON"),
        "{md}"
    );
    assert!(
        md.contains("longer than a table cell holds as one line"),
        "{md}"
    );
    insta::assert_snapshot!(md);
}

/// A result far over the comment's budget: the deep tables go first, the
/// headline figures and the summary stay.
#[test]
fn an_over_budget_result_keeps_its_headline_and_summary() {
    let region = |r: usize| {
        let stores: Vec<Value> = (0..400)
            .map(|s| json!({"store": format!("store-{r}-{s}"), "revenue": 1000.0 + s as f64 * 3.25, "orders": 40 + s, "note": "x".repeat(40)}))
            .collect();
        json!({"revenue": 1.0e6 + r as f64, "stores": stores, "detail": {"by_week": (0..52).map(|w| json!({"week": w, "v": w})).collect::<Vec<_>>()}})
    };
    let mut result = serde_json::Map::new();
    result.insert("total_revenue".into(), json!(12_345_678.9));
    result.insert("regions".into(), json!(30));
    result.insert(
        "summary".into(),
        json!("Revenue grew in 27 of 30 regions; the three that fell all lost their largest store, and the new stores opened in the spring made up for it in 19 of the others, so the total rose by 8 %."),
    );
    for r in 0..30 {
        result.insert(format!("region_{r}"), region(r));
    }
    let result = Value::Object(result);
    let report = bare("revenue by region", result, Some("Revenue grew."));
    let md = markdown(&report, &RenderContext::default());
    assert!(
        md.chars().count() <= COMMENT_LIMIT,
        "{}",
        md.chars().count()
    );
    assert!(md.contains("| total\\_revenue | 12,345,678.90 |"), "{md}");
    assert!(md.contains("| regions | 30 |"), "{md}");
    assert!(md.contains("Revenue grew in 27 of 30 regions"), "{md}");
    // The explanation comes first, before the result.
    assert!(
        md.find("\nRevenue grew.\n").unwrap() < md.find("#### Result").unwrap(),
        "{md}"
    );
    assert!(md.contains("nested result"), "the cut is said: {md}");
    assert!(
        !md.contains("cut at the size limit"),
        "no last-resort cut: {md}"
    );
    assert_eq!(
        md.matches("<details").count(),
        md.matches("</details>").count()
    );
    // The outline: what was kept, folded and left out.
    let outline: Vec<&str> = md
        .lines()
        .filter(|l| {
            l.starts_with("**")
                || l.starts_with("_")
                || l.starts_with("<details")
                || l.starts_with("> ")
        })
        .collect();
    insta::assert_snapshot!(outline.join("\n"));
    // The job summary, with its larger budget, shows the nested tables.
    let sum = summary(&report, &RenderContext::default());
    assert!(
        sum.contains("<b>region_0 › stores</b> · 400 rows"),
        "{}",
        &sum[..2000]
    );
    assert!(sum.contains("| store-0-399 |"), "{}", &sum[..2000]);
}

/// The README's answer: a dict of dicts (`by_channel`) is one table with a
/// row per channel, the outer key its first column.
#[test]
fn an_object_of_records_is_one_table() {
    let result = json!({
        "best_channel": "social",
        "overall_conversion": 0.08330713612071676,
        "days": 14,
        "by_channel": {
            "social": {"leads": 3035, "paid": 319, "conversion": 0.10510708401976936},
            "email": {"leads": 3108, "paid": 252, "conversion": 0.08108108108108109},
            "search": {"leads": 3400, "paid": 224, "conversion": 0.06588235294117648}
        }
    });
    let md = result_part(result, None, None);
    assert!(
        md.contains("| channel | leads | paid | conversion |\n| --- | --- | --- | --- |\n| social | 3,035 | 319 | 0.1051 |"),
        "{md}"
    );
    assert!(
        !md.contains("by\\_channel ›"),
        "one table, not one per channel: {md}"
    );
    insta::assert_snapshot!(md);
    // pandas' to_dict(orient="index") at the top: the key is the first column.
    let top = result_part(
        json!({"a": {"x": 1, "y": 2.5}, "b": {"x": 3, "y": 4.5}}),
        None,
        None,
    );
    assert!(
        top.contains("| key | x | y |\n| --- | --- | --- |\n| a | 1 | 2.5 |"),
        "{top}"
    );
    // Records that differ in their fields stay sections of their own.
    let mixed = result_part(json!({"s": {"a": {"x": 1}, "b": {"y": 2}}}), None, None);
    assert!(mixed.contains("**s › a**"), "{mixed}");
}

/// pandas' to_dict(orient="list"): one table with a row per position; equal
/// lists of texts alone (two lists of names) are not a table.
#[test]
fn an_object_of_equal_lists_is_one_table() {
    let result = json!({
        "forecast": {
            "date": ["2026-10-05", "2026-10-12", "2026-10-19"],
            "orders": [120, 131, 127],
            "low": [101.5, 110.25, 104.0]
        },
        "names": {"kept": ["a", "b"], "dropped": ["c", "d"]}
    });
    let md = result_part(result, None, None);
    assert!(
        md.contains("**forecast**\n\n| date | orders | low |\n| --- | --- | --- |\n| 2026-10-05 | 120 | 101.50 |"),
        "{md}"
    );
    assert!(!md.contains("| date | 2026-10-05"), "{md}");
    assert!(md.contains("**names**"), "{md}");
    assert!(md.contains("| kept | a, b |"), "{md}");
    insta::assert_snapshot!(md);
}

/// The messy export: the conclusion's figures stay on top; the mapping, the
/// cleaning log and a long table fold into `<details>` with a summary.
#[test]
fn auxiliary_parts_fold_with_a_one_line_summary() {
    let regions = ["North", "South", "East", "West"];
    let mapping: serde_json::Map<String, Value> = [
        "N", "north", "NORTH", "Nord", "S", "south", "E", "east", "W", "west", "Wst",
    ]
    .iter()
    .enumerate()
    .map(|(i, k)| (k.to_string(), json!(regions[i % 4])))
    .collect();
    let weekly: Vec<Value> = (1..=12)
        .map(|w| json!({"week": w, "revenue": 9000.0 + w as f64 * 125.5}))
        .collect();
    let result = json!({
        "total_revenue": 111797.40000000001,
        "by_region": [
            {"region": "North", "revenue": 40213.25},
            {"region": "South", "revenue": 30001.0},
            {"region": "East", "revenue": 21000.15},
            {"region": "West", "revenue": 20583.0}
        ],
        "region_mapping": Value::Object(mapping),
        "cleaning_log": ["dropped the TOTAL row", "read -999 as missing (14 cells)"],
        "weekly": weekly,
        "notes": "Revenue is net of refunds."
    });
    let md = result_part(result, None, None);
    assert!(md.contains("| total\\_revenue | 111,797.40 |"), "{md}");
    // The short table stays open.
    assert!(
        md.contains("**by\\_region**\n\n| region | revenue |"),
        "{md}"
    );
    for (key, what) in [
        ("region_mapping", "11 fields"),
        ("cleaning_log", "2 rows"),
        ("weekly", "12 rows"),
        ("notes", "26 characters"),
    ] {
        assert!(
            md.contains(&format!(
                "<details><summary><b>{key}</b> · {what}</summary>"
            )),
            "{key}: {md}"
        );
    }
    assert_eq!(
        md.matches("<details").count(),
        md.matches("</details>").count()
    );
    // A short object of different texts is not a mapping.
    let plain = result_part(
        json!({"m": {"test": "t-test", "tail": "two-sided"}}),
        None,
        None,
    );
    assert!(!plain.contains("<details"), "{plain}");
    insta::assert_snapshot!(md);
}

/// A table wider than the comment column: split into column groups that
/// repeat the first column; a one-row one is transposed.
#[test]
fn wide_tables_are_split_or_transposed() {
    let row = |d: &str, k: u64| {
        json!({
            "date": d, "store_code": "ST-0042", "region": "North-West",
            "orders": 1200 + k, "revenue": 48211.5 + k as f64, "refunds": 312.25,
            "net_revenue": 47899.25 + k as f64, "conversion": 0.0833071, "median_basket": 38.5,
            "returning_share": 0.4172, "new_customers": 311 + k
        })
    };
    let rows = json!({"daily": [row("2026-10-05", 1), row("2026-10-06", 2)]});
    let md = result_part(rows, None, None);
    assert!(md.contains("_Columns 1 of 2:_"), "{md}");
    assert!(
        md.contains("_Columns 2 of 2:_\n\n| date |"),
        "the first column repeats: {md}"
    );
    for table in md.split("_Columns").skip(1) {
        let header = table.lines().find(|l| l.starts_with("| ")).unwrap();
        assert!(header.chars().count() < 110, "{header}");
    }
    insta::assert_snapshot!(md);
    let one = result_part(json!({"today": [row("2026-10-05", 1)]}), None, None);
    assert!(
        one.contains("| Field | Value |\n| --- | --- |\n| date | 2026-10-05 |"),
        "{one}"
    );
    // A narrow table is one table.
    let narrow = result_part(
        json!({"t": [{"a": 1, "b": 2}, {"a": 3, "b": 4}]}),
        None,
        None,
    );
    assert!(!narrow.contains("_Columns"), "{narrow}");
}
