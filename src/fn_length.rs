//! Holds the code to the project's rule "every function ≤ 120 lines"
//! (ARCHITECTURE.md, "Rules of the code"): every `fn` with a body in
//! src/**/*.rs and in the library crates' crates/*/src/**/*.rs, tests
//! included, counted from its `fn` line to its closing brace. A small lexer skips comments, strings and character literals, so
//! a brace inside them does not count.

use std::path::{Path, PathBuf};

/// The most lines a function may take, its signature and closing brace included.
const MAX_LINES: usize = 120;

/// A function found in a file: its name, the line of its `fn` and of its
/// closing brace (1-based).
#[derive(Debug, PartialEq)]
struct Function {
    name: String,
    first: usize,
    last: usize,
}

impl Function {
    fn lines(&self) -> usize {
        self.last - self.first + 1
    }
}

/// The code of a file with comments, strings and character literals blanked
/// out (each replaced by spaces, newlines kept), so only code braces remain.
fn code_only(text: &str) -> Vec<char> {
    let s: Vec<char> = text.chars().collect();
    let mut out = s.clone();
    let blank = |out: &mut Vec<char>, from: usize, to: usize| {
        for c in out.iter_mut().take(to.min(s.len())).skip(from) {
            if *c != '\n' {
                *c = ' ';
            }
        }
    };
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    // Whether a literal may start at `i`: not inside an identifier, but
    // after a lone `b` prefix (b"…", br#"…"#, b'x').
    let starts =
        |i: usize| i == 0 || !ident(s[i - 1]) || (s[i - 1] == 'b' && (i < 2 || !ident(s[i - 2])));
    let mut i = 0;
    while i < s.len() {
        if s[i] == '/' && s.get(i + 1) == Some(&'/') {
            let end = s[i..]
                .iter()
                .position(|&c| c == '\n')
                .map_or(s.len(), |p| i + p);
            blank(&mut out, i, end);
            i = end;
        } else if s[i] == '/' && s.get(i + 1) == Some(&'*') {
            let (mut depth, mut j) = (1, i + 2);
            while j < s.len() && depth > 0 {
                if s[j] == '/' && s.get(j + 1) == Some(&'*') {
                    depth += 1;
                    j += 2;
                } else if s[j] == '*' && s.get(j + 1) == Some(&'/') {
                    depth -= 1;
                    j += 2;
                } else {
                    j += 1;
                }
            }
            blank(&mut out, i, j);
            i = j;
        } else if s[i] == 'r' && starts(i) && matches!(s.get(i + 1), Some('"' | '#')) {
            // A raw string: r"…", r#"…"#, br#"…"# (the `b` is blanked with it).
            let hashes = s[i + 1..].iter().take_while(|&&c| c == '#').count();
            if s.get(i + 1 + hashes) != Some(&'"') {
                i += 1;
                continue;
            }
            let close: Vec<char> = std::iter::once('"')
                .chain(std::iter::repeat_n('#', hashes))
                .collect();
            let start = i + 2 + hashes;
            let end = (start..s.len())
                .find(|&j| s[j..].starts_with(&close))
                .map_or(s.len(), |j| j + close.len());
            blank(&mut out, i, end);
            i = end;
        } else if s[i] == '"' {
            let mut j = i + 1;
            while j < s.len() && s[j] != '"' {
                j += if s[j] == '\\' { 2 } else { 1 };
            }
            blank(&mut out, i, j + 1);
            i = j + 1;
        } else if s[i] == '\'' {
            // A character literal ('x', '\n', '\u{7b}'), else a lifetime.
            let end = if s.get(i + 1) == Some(&'\\') {
                (i + 2..s.len()).find(|&j| s[j] == '\'').map(|j| j + 1)
            } else if s.get(i + 2) == Some(&'\'') {
                Some(i + 3)
            } else {
                None
            };
            match end {
                Some(end) => {
                    blank(&mut out, i, end);
                    i = end;
                }
                None => i += 1,
            }
        } else {
            i += 1;
        }
    }
    out
}

/// Every function with a body in a file's text.
fn functions(text: &str) -> Vec<Function> {
    let code = code_only(text);
    let line_at = |i: usize| code[..i].iter().filter(|&&c| c == '\n').count() + 1;
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut found = Vec::new();
    let mut i = 0;
    while let Some(p) = (i..code.len().saturating_sub(2)).find(|&j| {
        code[j] == 'f'
            && code[j + 1] == 'n'
            && code[j + 2].is_whitespace()
            && (j == 0 || !ident(code[j - 1]))
    }) {
        i = p + 2;
        let name_start = (i..code.len()).find(|&j| !code[j].is_whitespace());
        let Some(name_start) = name_start.filter(|&j| ident(code[j])) else {
            continue;
        };
        let name_end = (name_start..code.len())
            .find(|&j| !ident(code[j]))
            .unwrap_or(code.len());
        let name: String = code[name_start..name_end].iter().collect();
        // The body opens at the first `{` outside the signature's brackets;
        // a `;` there first is a declaration without a body.
        let mut depth = 0i32;
        let mut open = None;
        for (j, &c) in code.iter().enumerate().skip(name_end) {
            match c {
                '(' | '[' => depth += 1,
                ')' | ']' => depth -= 1,
                ';' if depth == 0 => break,
                '{' if depth == 0 => {
                    open = Some(j);
                    break;
                }
                _ => {}
            }
        }
        let Some(open) = open else { continue };
        let mut depth = 0usize;
        let close = (open..code.len()).find(|&j| {
            match code[j] {
                '{' => depth += 1,
                '}' => depth -= 1,
                _ => {}
            }
            depth == 0
        });
        let Some(close) = close else { continue };
        found.push(Function {
            name,
            first: line_at(p),
            last: line_at(close),
        });
    }
    found
}

/// Every `.rs` file under src/ and under each crate's `crates/*/src/`.
fn source_files() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    let mut dirs = vec![root.join("src")];
    for e in std::fs::read_dir(root.join("crates")).unwrap().flatten() {
        if e.path().join("src").is_dir() {
            dirs.push(e.path().join("src"));
        }
    }
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                files.push(p);
            }
        }
    }
    files.sort();
    files
}

#[test]
fn every_function_in_src_is_at_most_120_lines() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut long = Vec::new();
    let mut counted = 0;
    for f in source_files() {
        let text = std::fs::read_to_string(&f).unwrap();
        for func in functions(&text) {
            counted += 1;
            if func.lines() > MAX_LINES {
                long.push(format!(
                    "{}:{}: fn {} is {} lines (at most {MAX_LINES}; split it)",
                    f.strip_prefix(root).unwrap().display(),
                    func.first,
                    func.name,
                    func.lines()
                ));
            }
        }
    }
    // The scan itself must have found the crates' functions.
    assert!(
        counted > 1000,
        "only {counted} functions found in src/ and crates/"
    );
    for lib in [
        "crates/model/src/lib.rs",
        "crates/policy/src/lib.rs",
        "crates/sandbox/src/lib.rs",
        "crates/secret/src/lib.rs",
        "crates/units/src/lib.rs",
    ] {
        assert!(
            source_files().contains(&root.join(lib)),
            "{lib} not scanned"
        );
    }
    assert!(
        long.is_empty(),
        "functions over {MAX_LINES} lines:\n{}",
        long.join("\n")
    );
}

#[test]
fn the_scanner_skips_braces_in_strings_comments_and_chars() {
    let text = r##"
/// fn doc() { not a function
fn one() -> Result<(), String> {
    let s = "}}} fn fake() {";
    let r = r#"}" fn raw() {"#;
    let b = (br#"}"#, b'}', b"{");
    let c = '}';
    let e = '\'';
    // }
    /* } /* nested } */ } */
    let x: &'static str = "{";
    if c == '{' { drop(e) }
}

trait T {
    fn declared(&self);
    fn provided<'a>(&'a self, f: fn(u8) -> u8) -> [u8; 2] where Self: Sized {
        [f(1), 2]
    }
}
"##;
    let found = functions(text);
    let names: Vec<&str> = found.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["one", "provided"]);
    assert_eq!((found[0].first, found[0].last), (3, 13));
    assert_eq!((found[1].first, found[1].last), (17, 19));
    assert_eq!(found[0].lines(), 11);
}

#[test]
fn a_long_function_is_found_with_its_length() {
    let body = "    let _ = 1;\n".repeat(MAX_LINES);
    let text = format!("fn short() {{}}\n\nfn long() {{\n{body}}}\n");
    let found = functions(&text);
    assert_eq!(found[0].lines(), 1);
    assert_eq!(found[1].name, "long");
    assert_eq!(found[1].lines(), MAX_LINES + 2);
    assert!(found[1].lines() > MAX_LINES);
}
