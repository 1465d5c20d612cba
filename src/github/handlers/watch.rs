//! `/compute watch <name>`: replies with the watch file (YAML, read back to
//! check it) that keeps running the exact code of the newest result in the
//! thread; of a session answer, its steps that ran without an error, each
//! a `# %%` cell ([`crate::replay::Recorded::session_cells`]), which a watch
//! runs as exact steps in one session.

use crate::github::rest::comments::Reaction;
use crate::github::texts::{self, stop};
use crate::github::thread::{Asker, Ctx, Published, Stop};
use crate::status::Status;
use crate::watch_spec::Watch;

/// A YAML block scalar of `code` (`|`, `|-` or `|+` by its trailing line
/// ends, with an indentation indicator when the first line starts with a
/// space).
fn block_scalar(code: &str) -> String {
    let chomp = if !code.ends_with('\n') {
        "-"
    } else if code.ends_with("\n\n") {
        "+"
    } else {
        ""
    };
    let indent = if code.starts_with([' ', '\t']) {
        "2"
    } else {
        ""
    };
    let mut out = format!("|{indent}{chomp}\n");
    for line in code.strip_suffix('\n').unwrap_or(code).split('\n') {
        if line.is_empty() {
            out.push('\n');
        } else {
            out.push_str("  ");
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// The watch file for `code` reading `inputs`, posting to `issue`; checked
/// by reading it back (the code falls back to a quoted string when the block
/// scalar does not give it back exactly).
fn watch_yaml(name: &str, code: &str, inputs: &[String], issue: u64) -> Result<String, String> {
    let sha = texts::sha256_hex(code);
    let list: Vec<String> = inputs
        .iter()
        .map(|p| serde_json::to_string(p).unwrap_or_default())
        .collect();
    let text = |code_yaml: &str| {
        format!(
            "name: {name}\ncode: {code_yaml}code_sha256: {sha}\ninputs: [{}]\nchecks: []\ntolerance: 0\nissue: {issue}\n",
            list.join(", ")
        )
    };
    let block = text(&block_scalar(code));
    if Watch::parse(&block, "watch").is_ok_and(|w| w.code.as_deref() == Some(code)) {
        return Ok(block);
    }
    let quoted = text(&format!(
        "{}\n",
        serde_json::to_string(code).unwrap_or_default()
    ));
    Watch::parse(&quoted, "watch")
        .map(|_| quoted)
        .map_err(|e| e.message)
}

/// `/compute watch <name>`: replies with the watch file that keeps running
/// the exact code of the newest result (with a run record) in `issue`.
pub(crate) async fn watch_file_in_thread(
    ctx: &Ctx<'_>,
    issue: u64,
    asker: Asker<'_>,
    name: &str,
) -> Result<Published, Stop> {
    if let Err(refused) = asker.allowed(ctx).await? {
        return Ok(refused);
    }
    let found = ctx
        .gh
        .find_tracking_comment(issue, crate::record::RECORD_MARKER_START)
        .await
        .map_err(|e| Stop::github(stop::THREAD_UNREADABLE, &e))?;
    let unavailable = |why: &str| {
        Ok(Published::reply(
            Status::Ignored,
            &texts::watch_file_unavailable(why, ctx.prefix),
            Reaction::Confused,
        ))
    };
    let Some((id, body)) = found else {
        return unavailable(texts::NO_RESULT_IN_THREAD);
    };
    let source = ctx.comment_url(issue, id);
    let rec = match crate::replay::Recorded::from_comment_body(&body, &source) {
        Ok(r) => r,
        Err(e) => return unavailable(&e),
    };
    let inputs: Vec<String> = rec
        .record
        .inputs
        .iter()
        .map(|i| i.path.clone().unwrap_or_else(|| i.name.clone()))
        .collect();
    // A session answer: its steps that ran without an error, as cells.
    let code = match rec.session_cells() {
        Ok(cells) => cells.unwrap_or_else(|| rec.code.clone()),
        Err(e) => return unavailable(&e),
    };
    match watch_yaml(name, &code, &inputs, issue) {
        Ok(yaml) => Ok(Published::reply(
            Status::Ok,
            &texts::watch_file_reply(name, &source, &yaml),
            Reaction::Rocket,
        )),
        Err(e) => unavailable(&e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::github::handlers::tests::{Scripted, Tester, assert_answer, fenced, shipped_policy};

    #[test]
    fn the_watch_file_gives_the_code_back_exactly() {
        for code in [
            "print(1)\n",
            "print(1)",
            "x = 1\n\n\n",
            "  x = 1\nprint(x)\n",
            "if True:\n\n    print('a: b # c')\n",
            "s = \"\\tx\"\n\tprint(s)\n",
        ] {
            let y = watch_yaml("w", code, &["data/a b.csv".into()], 7).unwrap();
            let w = Watch::parse(&y, "w.yml").unwrap_or_else(|e| panic!("{e}\n{y}"));
            assert_eq!(w.code.as_deref(), Some(code), "{y}");
            assert_eq!(w.inputs, vec!["data/a b.csv"]);
            assert_eq!(w.issue, Some(7));
        }
        assert!(watch_yaml("bad name", "print(1)\n", &[], 7).is_err());
    }

    const CODE: &str = "import json\nprint(json.dumps({\"total\": 42}))\n";

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn watch_replies_with_the_watch_file_of_the_newest_result() {
        let mut t = Tester::new(
            &shipped_policy("default.yml"),
            [Scripted::ok("{\"total\": 42}\n")],
        )
        .await;
        let first = t
            .comment("alice", &format!("/compute the total\n{}", fenced(CODE)))
            .await;
        assert_eq!(first.status, "ok");
        let answer = t.comment("alice", "/compute watch daily-total").await;
        assert_eq!(t.executor.codes().len(), 1, "a watch file runs nothing");
        assert_answer!(answer);
    }
}
