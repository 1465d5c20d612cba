use super::*;

fn codes(cells: &[CodeCell]) -> Vec<&str> {
    cells.iter().map(|c| c.code.as_str()).collect()
}

#[test]
fn percent_markers_split_code_cells_and_leave_markdown_and_raw_out() {
    let text = "import pandas as pd\n\n# %% Load the data\ndf = pd.read_csv('/data/a.csv')\n\n\n\
                # %% [markdown]\n# Some *prose*\nx = 'not code'\n\
                #%%\nprint(df.shape)\n# %% Totals [raw]\nraw text\n# %%   [md] Notes\n# prose\n\
                # %% tags=[\"x\"]\nprint(1)";
    let cells = percent_cells(text);
    assert_eq!(
        codes(&cells),
        [
            "import pandas as pd\n",
            "df = pd.read_csv('/data/a.csv')\n",
            "print(df.shape)\n",
            "print(1)\n"
        ]
    );
    let titles: Vec<Option<&str>> = cells.iter().map(|c| c.title.as_deref()).collect();
    assert_eq!(
        titles,
        [None, Some("Load the data"), None, Some("tags=[\"x\"]")]
    );
    let origins: Vec<Origin> = cells.iter().map(|c| c.origin).collect();
    assert_eq!(
        origins,
        [
            Origin::Line(1),
            Origin::Line(3),
            Origin::Line(10),
            Origin::Line(16)
        ]
    );
}

#[test]
fn only_a_marker_at_the_start_of_a_line_opens_a_cell() {
    // `# %%%`, an indented marker, `# %%x` and a marker inside a string
    // literal's line are code.
    let text =
        "def f():\n    # %% inside\n    return 1\n# %%%\ns = '''\n# %%x\n'''\nprint(f(), s)\n";
    assert_eq!(codes(&percent_cells(text)), [text]);
}

#[test]
fn cells_that_run_nothing_are_left_out() {
    // Jupytext's header is comments only; an empty cell runs nothing.
    let text = "# ---\n# jupyter:\n#   kernelspec:\n#     name: python3\n# ---\n\n# %%\n\n# %%\n# just a note\n\n# %%\nx = 1\r\n\r\n";
    let cells = percent_cells(text);
    assert_eq!(codes(&cells), ["x = 1\n"]);
    assert_eq!(cells[0].origin, Origin::Line(12));
    assert!(percent_cells("").is_empty());
    assert!(percent_cells("# %%\n# %% [markdown]\n").is_empty());
}

#[test]
fn text_without_markers_is_one_cell_as_written() {
    let text = "print('a')\nprint('b')\n";
    assert_eq!(codes(&percent_cells(text)), [text]);
}

fn nb(cells: serde_json::Value) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": cells
    }))
    .unwrap()
}

#[test]
fn a_notebooks_code_cells_come_in_order_with_either_source_form() {
    let bytes = nb(serde_json::json!([
        {"cell_type": "markdown", "metadata": {}, "source": "# Title\nimport os"},
        {"cell_type": "code", "metadata": {}, "source": ["import json\n", "x = 2"],
         "outputs": [{"output_type": "stream", "name": "stdout", "text": ["huge\n"]}],
         "execution_count": 3},
        {"cell_type": "raw", "metadata": {}, "source": "raw"},
        {"cell_type": "code", "metadata": {}, "source": "", "outputs": [], "execution_count": null},
        {"cell_type": "code", "metadata": {}, "source": "print(json.dumps({'x': x}))",
         "outputs": [], "execution_count": null},
    ]));
    let cells = notebook_cells(&bytes, "a.ipynb").unwrap();
    assert_eq!(
        codes(&cells),
        ["import json\nx = 2", "print(json.dumps({'x': x}))"]
    );
    assert_eq!(cells[0].origin, Origin::Cell(2));
    assert_eq!(cells[1].origin, Origin::Cell(5));
    let program = joined(&cells);
    assert_eq!(
        program,
        "# %% cell 2\nimport json\nx = 2\n# %% cell 5\nprint(json.dumps({'x': x}))\n"
    );
    // The joined program reads back as the same cells.
    let back = percent_cells(&program);
    assert_eq!(
        codes(&back),
        ["import json\nx = 2\n", "print(json.dumps({'x': x}))\n"]
    );
    assert_eq!(back[0].title.as_deref(), Some("cell 2"));
}

#[test]
fn a_broken_notebook_is_named_with_what_to_do() {
    let err = |bytes: &[u8]| notebook_cells(bytes, "analysis.ipynb").unwrap_err();
    let e = err(b"{\"nbformat\": 4, \"cells\": [");
    assert!(
        e.contains("`analysis.ipynb`") && e.contains("not readable as JSON") && e.contains(".py"),
        "{e}"
    );
    // Non-UTF-8 bytes inside a string.
    let e = err(b"{\"nbformat\": 4, \"cells\": [{\"cell_type\": \"code\", \"source\": \"x = '\xff\xfe'\"}]}");
    assert!(e.contains("not readable as JSON"), "{e}");
    // nbformat 3 keeps its cells in worksheets.
    let e = err(
        br#"{"nbformat": 3, "nbformat_minor": 0, "worksheets": [{"cells": []}], "metadata": {}}"#,
    );
    assert!(
        e.contains("nbformat 3") && e.contains("jupyter nbconvert --to notebook --nbformat 4"),
        "{e}"
    );
    let e = err(br#"{"cells": []}"#);
    assert!(e.contains("no `nbformat`"), "{e}");
    let e = err(br#"{"nbformat": 4, "metadata": {}}"#);
    assert!(e.contains("no `cells` list"), "{e}");
    let e = err(&nb(serde_json::json!([{"metadata": {}, "source": "x"}])));
    assert!(e.contains("cell 1 has no `cell_type`"), "{e}");
    let e = err(&nb(serde_json::json!([
        {"cell_type": "markdown", "source": "x"},
        {"cell_type": "code", "metadata": {}}
    ])));
    assert!(e.contains("code cell 2 has no `source`"), "{e}");
    let e = err(&nb(
        serde_json::json!([{"cell_type": "code", "source": ["a", 1]}]),
    ));
    assert!(e.contains("code cell 1 has no `source` text"), "{e}");
    let e = err(b"[1, 2]");
    assert!(e.contains("not readable as JSON"), "{e}");
}

#[test]
fn hostile_notebooks_end_in_an_error_or_their_cells_never_a_crash() {
    // Nested 100,000 deep: in outputs, skipped unread; in a source, past
    // serde_json's depth limit, an error.
    let nested = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let deep = format!(
        "{{\"nbformat\": 4, \"cells\": [{{\"cell_type\": \"code\", \"source\": \"x\", \"outputs\": {nested}}}]}}"
    );
    assert_eq!(
        codes(&notebook_cells(deep.as_bytes(), "d.ipynb").unwrap()),
        ["x"]
    );
    let deep = format!(
        "{{\"nbformat\": 4, \"cells\": [{{\"cell_type\": \"code\", \"source\": {nested}}}]}}"
    );
    let e = notebook_cells(deep.as_bytes(), "d.ipynb").unwrap_err();
    assert!(e.contains("not readable as JSON"), "{e}");
    // Over the size read.
    let big = vec![b' '; NOTEBOOK_MAX_BYTES + 1];
    let e = notebook_cells(&big, "big.ipynb").unwrap_err();
    assert!(e.contains("--clear-output"), "{e}");
    // Many cells with big outputs: read, outputs skipped.
    let cells: Vec<serde_json::Value> = (0..5_000)
        .map(|i| {
            serde_json::json!({"cell_type": "code", "metadata": {}, "source": format!("x{i} = {i}\n"),
                "outputs": [{"output_type": "stream", "name": "stdout", "text": "y".repeat(1_000)}],
                "execution_count": i})
        })
        .collect();
    let got = notebook_cells(&nb(serde_json::Value::Array(cells)), "many.ipynb").unwrap();
    assert_eq!(got.len(), 5_000);
    assert_eq!(got[4_999].code, "x4999 = 4999\n");
    // Line breaks and a marker inside a cell's source stay code.
    let tricky = nb(
        serde_json::json!([{"cell_type": "code", "source": "s = '''\n# %% [markdown]\n'''\r\nprint(s)"}]),
    );
    assert_eq!(
        codes(&notebook_cells(&tricky, "t.ipynb").unwrap()),
        ["s = '''\n# %% [markdown]\n'''\r\nprint(s)"]
    );
}
