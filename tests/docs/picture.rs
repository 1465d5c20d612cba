//! The README's picture is a real answer as the current code renders it:
//! `docs/images/answer.json` is the JSON report of a real run of
//! `docs/images/answer.py` (made by `scripts/readme-picture`), and
//! `docs/images/answer.md` must be exactly what `render::markdown` makes of it
//! today; `docs/images/answer.png.sha256` names the Markdown the PNG was
//! rendered from.

use compute_bot::render::{RenderContext, markdown};
use compute_bot::report::Report;
use sha2::{Digest, Sha256};

use super::{read, root};

const REFRESH: &str = "run scripts/readme-picture to refresh the picture";

fn sha256(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

#[test]
fn the_pictured_answer_is_what_the_code_renders_from_its_run() {
    let dir = root().join("docs/images");
    let json = read(&dir.join("answer.json"));
    let report: Report = serde_json::from_str(&json)
        .unwrap_or_else(|e| panic!("docs/images/answer.json is no report ({e}): {REFRESH}"));
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        value["record"]["code_sha256"].as_str(),
        Some(sha256(read(&dir.join("answer.py")).as_bytes()).as_str()),
        "docs/images/answer.json is not a run of docs/images/answer.py: {REFRESH}"
    );
    let rendered = markdown(&report, &RenderContext::default());
    let path = dir.join("answer.md");
    if std::env::var_os("COMPUTE_BOT_REFRESH_PICTURE").is_some() {
        std::fs::write(&path, &rendered).unwrap();
    }
    let committed = read(&path);
    assert!(
        committed == rendered,
        "docs/images/answer.md is not what the code renders from docs/images/answer.json: {REFRESH}\n\
         --- committed\n{committed}\n--- rendered now\n{rendered}"
    );
}

#[test]
fn the_picture_was_rendered_from_that_markdown() {
    let dir = root().join("docs/images");
    let png = std::fs::read(dir.join("answer.png")).expect("docs/images/answer.png");
    assert!(
        png.starts_with(b"\x89PNG\r\n\x1a\n"),
        "answer.png is no PNG"
    );
    let hash = read(&dir.join("answer.png.sha256"));
    let md = std::fs::read(dir.join("answer.md")).unwrap();
    assert_eq!(
        hash.split_whitespace().next(),
        Some(sha256(&md).as_str()),
        "docs/images/answer.png was rendered from another docs/images/answer.md: {REFRESH}"
    );
}
