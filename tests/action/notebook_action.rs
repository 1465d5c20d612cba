//! A notebook named in a `/compute` comment (issue 40): `code=PATH`, or the
//! one `.ipynb` the goal mentions, is read from the checkout (admitted as an
//! input is: inside it, no symlink out) and its code cells run as the steps
//! of one session in the real sandbox, without a model. Problems with the
//! named code are answered only to someone who may run code, and nothing
//! runs then.

use crate::support::action_fixture::{ActionFixture, ActionFixtureBuilder, COMMENT, fenced};
use serde_json::{Value, json};

/// A notebook: a markdown cell, a cell that loads the data and prints a
/// look, and a cell that uses the first cell's `totals` and prints the
/// result (it runs only in the interpreter where cell 2 ran).
fn notebook() -> String {
    json!({
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {},
        "cells": [
            {"cell_type": "markdown", "id": "a", "metadata": {}, "source": ["# Totals per region\n"]},
            {"cell_type": "code", "id": "b", "metadata": {}, "execution_count": null, "outputs": [],
             "source": ["import pandas as pd\n", "df = pd.read_csv('/data/sales.csv')\n",
                        "totals = df.groupby('region')['amount'].sum()\n", "print('regions:', len(totals))\n"]},
            {"cell_type": "code", "id": "c", "metadata": {}, "execution_count": null, "outputs": [],
             "source": "import json\nprint(json.dumps({str(k): int(v) for k, v in totals.items()}))\n"}
        ]
    })
    .to_string()
}

/// The fixture with the notebook at `notebooks/totals.ipynb`.
fn with_notebook() -> ActionFixtureBuilder {
    ActionFixture::builder().file("notebooks/totals.ipynb", notebook())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_notebook_the_goal_mentions_runs_its_cells_as_steps_in_the_real_sandbox() {
    let f = with_notebook().start().await;
    f.comment(
        "alice",
        "/compute inputs=data/sales.csv re-run notebooks/totals.ipynb",
    );
    let run = f.run(COMMENT, "9401").await;
    assert_eq!(run.out("status"), "ok", "{}", run.log());
    assert_eq!(
        serde_json::from_str::<Value>(run.out("result")).unwrap(),
        json!({"north": 10, "south": 32})
    );
    let report = f.report(&run);
    let steps = report["steps"].as_array().expect("steps");
    assert_eq!(steps.len(), 2, "{report}");
    assert_eq!(report["record"]["steps"].as_array().map(Vec::len), Some(2));
    assert!(
        steps[0]["stdout"]
            .as_str()
            .is_some_and(|s| s.contains("regions: 2")),
        "{report}"
    );
    // The executed code is the notebook's code cells, each after its marker.
    let code = report["code"].as_str().unwrap();
    assert!(
        code.starts_with("# %% cell 2\nimport pandas as pd\n"),
        "{code}"
    );
    assert!(code.contains("# %% cell 3\nimport json\n"), "{code}");
    assert!(!code.contains("Totals per region"), "{code}");
    let answer = f.bot_comments(7).pop().unwrap().body;
    let note = answer
        .lines()
        .find(|l| l.starts_with("| Note |"))
        .unwrap_or_else(|| panic!("no note\n{answer}"));
    assert!(
        note.contains("notebooks/totals.ipynb")
            && note
                .contains("is a notebook: its 2 code cells ran in order as 2 steps of one session"),
        "{note}"
    );
    assert!(answer.contains("regions: 2"), "{answer}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn code_names_a_notebook_and_problems_with_it_stop_before_anything_runs() {
    let f = with_notebook()
        .file("notebooks/other.ipynb", notebook())
        .start()
        .await;
    std::os::unix::fs::symlink("/etc/passwd", f.ws().join("notebooks/out.ipynb")).unwrap();

    // `code=` picks one of two mentioned notebooks.
    f.comment(
        "alice",
        "/compute code=notebooks/other.ipynb inputs=data/sales.csv compare notebooks/totals.ipynb",
    );
    let run = f.run(COMMENT, "9402").await;
    assert_eq!(run.out("status"), "ok", "{}", run.log());
    let answer = f.bot_comments(7).pop().unwrap().body;
    assert!(
        answer
            .lines()
            .any(|l| l.starts_with("| Note |") && l.contains("notebooks/other.ipynb")),
        "{answer}"
    );

    let cases = [
        (
            "/compute inputs=data/sales.csv compare notebooks/totals.ipynb with notebooks/other.ipynb",
            "name the one to run with `code=`",
        ),
        (
            "/compute code=notebooks/missing.ipynb inputs=data/sales.csv totals",
            "does not exist in the checked-out workspace",
        ),
        (
            "/compute code=notebooks/out.ipynb inputs=data/sales.csv totals",
            "outside the workspace",
        ),
        (
            "/compute code=../etc/passwd totals",
            "is not a path inside the repository checkout",
        ),
        (
            &format!(
                "/compute code=notebooks/totals.ipynb totals\n{}",
                fenced("print(1)\n")
            ),
            "keep one of them",
        ),
    ];
    for (i, (body, says)) in cases.iter().enumerate() {
        f.comment("alice", body);
        let run = f.run(COMMENT, &format!("941{i}")).await;
        assert_eq!(run.out("status"), "failed", "{body}\n{}", run.log());
        let answer = f.bot_comments(7).pop().unwrap().body;
        assert!(
            answer.contains("the named code cannot be used"),
            "{body}\n{answer}"
        );
        assert!(answer.contains(says), "{body}\n{answer}");
        assert_eq!(run.out("code_sha256"), "", "{body}: nothing ran");
        assert!(
            !run.stdout.contains("::stop-commands::"),
            "{body}: nothing ran"
        );
    }

    // Someone who may not run code hears that, not what is in the checkout.
    f.comment("rita", "/compute code=notebooks/missing.ipynb totals");
    let run = f.run(COMMENT, "9420").await;
    assert_eq!(run.out("status"), "refused", "{}", run.log());
    let answer = f.bot_comments(7).pop().unwrap().body;
    assert!(!answer.contains("does not exist"), "{answer}");
}
