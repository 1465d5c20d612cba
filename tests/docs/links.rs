//! Every relative link and image in the documentation names a file that
//! exists, and every `#anchor` into a Markdown file names one of its headings
//! (as GitHub makes heading anchors).

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

use super::{documents, read, root};

/// The links and images of a Markdown text, in order.
fn targets(text: &str) -> Vec<String> {
    Parser::new_ext(text, Options::ENABLE_TABLES)
        .filter_map(|e| match e {
            Event::Start(Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. }) => {
                Some(dest_url.to_string())
            }
            _ => None,
        })
        .collect()
}

/// GitHub's anchor of a heading: lower case, punctuation other than `-` and
/// `_` dropped, each space a `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a Markdown text's headings (a repeated one as `x-1`, `x-2`).
fn anchors(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut heading: Option<String> = None;
    for e in Parser::new_ext(text, Options::ENABLE_TABLES) {
        match e {
            Event::Start(Tag::Heading { .. }) => heading = Some(String::new()),
            Event::Text(t) | Event::Code(t) => {
                if let Some(h) = heading.as_mut() {
                    h.push_str(&t);
                }
            }
            Event::End(TagEnd::Heading(_)) => {
                let base = slug(&heading.take().unwrap_or_default());
                let mut name = base.clone();
                let mut n = 0;
                while out.contains(&name) {
                    n += 1;
                    name = format!("{base}-{n}");
                }
                out.insert(name);
            }
            _ => {}
        }
    }
    out
}

/// `a/b/../c` as `a/c`; `None` when the path leaves the repository.
fn normalize(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::CurDir => {}
            Component::Normal(c) => out.push(c),
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(out)
}

/// What is wrong with one link of the document `doc` (relative to the root).
fn problem(doc: &Path, text: &str, target: &str) -> Option<String> {
    if target.contains("://") || target.starts_with("mailto:") {
        return None;
    }
    let (path, anchor) = target.split_once('#').unwrap_or((target, ""));
    let file = if path.is_empty() {
        doc.to_path_buf()
    } else {
        let Some(file) = normalize(&doc.parent().unwrap_or(Path::new("")).join(path)) else {
            return Some(format!("{target}: outside the repository"));
        };
        if !root().join(&file).exists() {
            return Some(format!("{target}: {} does not exist", file.display()));
        }
        file
    };
    let markdown = file.extension().is_some_and(|x| x == "md");
    if anchor.is_empty() || !markdown {
        return None;
    }
    let heads = if path.is_empty() {
        anchors(text)
    } else {
        anchors(&read(&root().join(&file)))
    };
    (!heads.contains(anchor))
        .then(|| format!("{target}: {} has no heading `#{anchor}`", file.display()))
}

/// Every problem of one document, each as `doc: target: why`.
fn problems(doc: &Path, text: &str) -> Vec<String> {
    targets(text)
        .iter()
        .filter_map(|t| problem(doc, text, t))
        .map(|p| format!("{}: {p}", doc.display()))
        .collect()
}

#[test]
fn every_relative_link_in_the_docs_resolves() {
    let docs = documents();
    assert!(docs.len() >= 10, "{docs:?}");
    let mut found = 0;
    let mut wrong = Vec::new();
    for doc in &docs {
        let text = read(&root().join(doc));
        found += targets(&text).len();
        wrong.extend(problems(doc, &text));
    }
    assert!(
        found >= 100,
        "only {found} links found: is the parser reading them?"
    );
    assert!(wrong.is_empty(), "broken links:\n{}", wrong.join("\n"));
}

/// The checker itself: a missing file, a missing heading and a link out of
/// the repository are each named; good links are not.
#[test]
fn the_link_check_names_what_is_broken() {
    let doc = Path::new("docs/x.md");
    let text = "# A `code` heading, here\n## Twice\n## Twice\n\
        [ok](setup.md) [ok](../README.md#quick-start) [ok](#a-code-heading-here) [ok](#twice-1)\n\
        [ok](https://example.com/x) ![ok](images/answer.png)\n\
        [bad](nowhere.md) [bad](setup.md#no-such-heading) [bad](#nope) [bad](../../etc/passwd)\n";
    let p = problems(doc, text);
    assert_eq!(p.len(), 4, "{p:#?}");
    assert!(p[0].contains("docs/nowhere.md does not exist"), "{}", p[0]);
    assert!(
        p[1].contains("has no heading `#no-such-heading`"),
        "{}",
        p[1]
    );
    assert!(p[2].contains("`#nope`"), "{}", p[2]);
    assert!(p[3].contains("outside the repository"), "{}", p[3]);
}
