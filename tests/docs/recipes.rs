//! ARCHITECTURE.md's "Adding a …" recipes stay true: every file or folder
//! they name exists, and each name given after a file (in backticks, until
//! the next file) is in that file. A template path (`src/cli/<name>.rs`)
//! names a file to write, so nothing after it is looked up.

use super::{read, root};

/// The section's text: from its heading to the next `## ` heading.
fn recipes() -> String {
    let doc = read(&root().join("ARCHITECTURE.md"));
    let start = doc
        .find("\n## Adding a …\n")
        .expect("ARCHITECTURE.md has a section \"## Adding a …\"");
    let rest = &doc[start + 1..];
    let end = rest[3..].find("\n## ").map_or(rest.len(), |i| i + 3);
    rest[..end].to_string()
}

/// The bullets of the section, each with its continuation lines joined.
fn bullets(section: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in section.lines() {
        if let Some(b) = line.strip_prefix("- ") {
            out.push(b.to_string());
        } else if line.starts_with("  ")
            && let Some(last) = out.last_mut()
        {
            last.push(' ');
            last.push_str(line.trim());
        }
    }
    out
}

/// The spans in backticks of `text`, in order.
fn spans(text: &str) -> Vec<&str> {
    text.split('`').skip(1).step_by(2).collect()
}

/// A repository path: has a `/` or a file extension, no blanks.
fn is_path(span: &str) -> bool {
    !span.contains(' ')
        && (span.contains('/') || span.ends_with(".md") || span.ends_with(".rs"))
        && !span.starts_with('/')
}

/// A name to look up: an identifier, or a macro's name with its `!`.
fn is_name(span: &str) -> bool {
    let name = span.strip_suffix('!').unwrap_or(span);
    !name.is_empty()
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit())
}

/// True when `text` has `name` as a whole word.
fn has_word(text: &str, name: &str) -> bool {
    text.match_indices(name).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + name.len()..].chars().next();
        let word = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
        !word(before) && (name.ends_with('!') || !word(after))
    })
}

/// Every problem with the recipes: a missing file, or a name not in its file.
fn problems(section: &str) -> Vec<String> {
    let mut out = Vec::new();
    for bullet in bullets(section) {
        let mut file: Option<String> = None;
        for span in spans(&bullet) {
            if is_path(span) {
                file = None;
                if span.contains('<') {
                    continue;
                }
                let path = root().join(span.trim_end_matches('/'));
                if !path.exists() {
                    out.push(format!("`{span}` does not exist"));
                } else if path.is_file() && span.ends_with(".rs") {
                    file = Some(span.to_string());
                }
            } else if let Some(f) = &file
                && is_name(span)
                && !has_word(&read(&root().join(f)), span)
            {
                out.push(format!("`{span}` is not in `{f}`"));
            }
        }
    }
    out
}

#[test]
fn every_file_and_name_the_recipes_give_exists() {
    let section = recipes();
    assert!(
        bullets(&section).len() >= 15,
        "the recipes lost their bullets:\n{section}"
    );
    let problems = problems(&section);
    assert!(
        problems.is_empty(),
        "ARCHITECTURE.md, \"Adding a …\", is out of date; fix the recipe:\n{}",
        problems.join("\n")
    );
}

#[test]
fn a_renamed_file_or_name_is_caught() {
    let bad = "## Adding a …\n\n- `src/cli/gone.rs`: `main`.\n- `src/cli/mod.rs`: `NoSuchCommand`,\n  `main`.\n";
    assert_eq!(
        problems(bad),
        vec![
            "`src/cli/gone.rs` does not exist".to_string(),
            "`NoSuchCommand` is not in `src/cli/mod.rs`".to_string(),
        ]
    );
}
