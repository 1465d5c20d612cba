//! Source checks, before any name is resolved: NUL bytes, the declared
//! encoding, syntax, bracket depth; and positions (line, column, snippet)
//! for every finding.

use ruff_python_ast::ModModule;
use ruff_python_ast::token::TokenKind as K;
use ruff_python_parser::Parsed;
use ruff_text_size::{Ranged, TextSize};

use super::{RawFinding, raw};
use crate::rules::RuleId;

/// CPython's limit on nested brackets.
const MAX_BRACKETS: usize = 200;

/// Parses `code` after the checks Python makes before parsing (NUL bytes,
/// the declared encoding) and the bracket depth it refuses; `Err` is the
/// one finding that stops the check.
pub(super) fn parse(code: &str) -> Result<Parsed<ModModule>, RawFinding> {
    if let Some(i) = code.find('\0') {
        return Err(raw(
            RuleId::SourceEncoding,
            TextSize::new(i as u32),
            "the code contains a NUL byte, which Python refuses; remove it".to_string(),
        ));
    }
    if let Some((off, enc)) = bad_coding_declaration(code) {
        return Err(raw(
            RuleId::SourceEncoding,
            TextSize::new(off as u32),
            format!(
                "the code declares the source encoding `{enc}`; Python would decode it differently from what was checked. Remove the declaration (UTF-8 is the default)"
            ),
        ));
    }
    let parsed = ruff_python_parser::parse_module(code).map_err(|e| {
        raw(
            RuleId::SyntaxError,
            e.location.start(),
            format!("syntax error: {}", e.error),
        )
    })?;
    // CPython refuses more than 200 nested brackets; the AST does not show
    // parentheses, so count them on the tokens.
    let mut level = 0usize;
    for t in parsed.tokens().iter() {
        match t.kind() {
            K::Lpar | K::Lsqb | K::Lbrace => {
                level += 1;
                if level > MAX_BRACKETS {
                    return Err(raw(
                        RuleId::TooComplex,
                        t.start(),
                        format!(
                            "more than {MAX_BRACKETS} nested brackets, which Python itself refuses; split the expression into several statements"
                        ),
                    ));
                }
            }
            K::Rpar | K::Rsqb | K::Rbrace => level = level.saturating_sub(1),
            _ => {}
        }
    }
    Ok(parsed)
}

/// Byte offsets of line starts; Python counts `\n`, `\r\n` and `\r`.
pub(super) struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    pub(super) fn new(code: &str) -> Self {
        let b = code.as_bytes();
        let mut starts = vec![0];
        let mut i = 0;
        while i < b.len() {
            match b[i] {
                b'\n' => starts.push(i + 1),
                b'\r' => {
                    if b.get(i + 1) == Some(&b'\n') {
                        i += 1;
                    }
                    starts.push(i + 1);
                }
                _ => {}
            }
            i += 1;
        }
        LineIndex { starts }
    }

    /// 1-based line and 1-based column in characters.
    pub(super) fn position(&self, code: &str, offset: TextSize) -> (u32, u32) {
        let off = (offset.to_usize()).min(code.len());
        let line = match self.starts.binary_search(&off) {
            Ok(i) => i,
            Err(i) => i - 1,
        };
        let start = self.starts[line];
        let col = code.get(start..off).map(|s| s.chars().count()).unwrap_or(0);
        (line as u32 + 1, col as u32 + 1)
    }

    pub(super) fn snippet(&self, code: &str, line: u32) -> String {
        let i = (line as usize).saturating_sub(1);
        let start = self.starts.get(i).copied().unwrap_or(0);
        let end = self.starts.get(i + 1).copied().unwrap_or(code.len());
        let text = code.get(start..end).unwrap_or("").trim();
        let mut out: String = text.chars().take(160).collect();
        if text.chars().count() > 160 {
            out.push('…');
        }
        out
    }
}

/// Finds a `# coding:` declaration in the first two lines that is not UTF-8
/// (or ASCII): the offset and the declared name.
fn bad_coding_declaration(code: &str) -> Option<(usize, String)> {
    let mut offset = 0;
    for line in code.split_inclusive('\n').take(2) {
        let t = line.trim_start_matches([' ', '\t', '\x0c', '\u{feff}']);
        if let Some(comment) = t.strip_prefix('#') {
            let mut rest = comment;
            while let Some(i) = rest.find("coding") {
                let after = &rest[i + 6..];
                if let Some(val) = after.strip_prefix([':', '=']) {
                    let name: String = val
                        .trim_start_matches([' ', '\t'])
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '.'))
                        .collect();
                    let norm = name.to_ascii_lowercase().replace('_', "-");
                    if !matches!(
                        norm.as_str(),
                        "utf-8" | "utf8" | "utf-8-sig" | "ascii" | "us-ascii"
                    ) {
                        return Some((offset, name));
                    }
                    break;
                }
                rest = after;
            }
        } else if !t.trim().is_empty() {
            break;
        }
        offset += line.len();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coding_declarations() {
        assert!(bad_coding_declaration("# -*- coding: utf-8 -*-\nx=1").is_none());
        assert!(bad_coding_declaration("#!/usr/bin/python\n# coding=utf_7\n").is_some());
        assert!(bad_coding_declaration("x = 1\n# coding: utf-7\n").is_none());
    }
}
