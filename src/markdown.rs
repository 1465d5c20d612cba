//! The one Markdown reader of fenced code blocks, on pulldown-cmark
//! (CommonMark, as GitHub renders comments).
//!
//! Three callers, one set of rules:
//! - [`exact_code`]: the exact code a person wrote in a `/compute` comment or
//!   a goal — the first ```` ```python ```` / ```` ```py ```` block that is not
//!   inside a block quote. An unclosed fence runs to the end of the text, as
//!   CommonMark (and GitHub's rendering) says, so what runs is what a reader
//!   sees as code.
//! - [`reply_code`]: the program in a model reply — the *last* complete
//!   python block outside `<think>` sections (a bare fence when there is no
//!   python block); a reply whose last block is cut off is reported as cut.
//! - [`first_fenced`]: the first fenced block of any language, with its text
//!   exactly as written (CR line ends included), for the bot's own comments.
//!
//! And the writing side every front end shares ([`escape`]): one escaping
//! function per context (a line of text, a table cell, a paragraph, a code
//! span, HTML, a mermaid label, a fenced block, prose), so that nothing the
//! bot does not control becomes Markdown.

use std::ops::Range;

use pulldown_cmark::{CodeBlockKind, Event, Options, Parser, Tag, TagEnd};

mod escape;
#[cfg(test)]
pub(crate) mod gfm;
pub(crate) use escape::{
    NAME_CHARS, cell_code_span, code_span, cut_chars, escape_cell, escape_line, fenced,
    fenced_exact, html_text, is_bidi_control, mermaid_label, neutralize, paragraph, show_hidden,
};
#[cfg(test)]
pub(crate) use escape::{fence_for, is_hidden};

/// One fenced code block of a Markdown text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CodeBlock {
    /// The language: the first word of the info string, lower-cased
    /// (`python`, `py`, `` for a bare fence).
    lang: String,
    /// The whole info string, trimmed.
    info: String,
    /// The content as CommonMark reads it (each line with its `\n`).
    pub(crate) code: String,
    /// The source text between the fence lines, exactly as written (CR line
    /// ends kept; block-quote markers kept for quoted blocks).
    pub(crate) raw: String,
    /// False when the text ends before the closing fence (a cut reply).
    pub(crate) closed: bool,
    /// Inside a block quote (`> ...`): someone quoting code, not asking.
    quoted: bool,
    /// Bytes of the input the block covers, fences included.
    pub(crate) span: Range<usize>,
}

impl CodeBlock {
    /// True when the language tag names Python (`python`, `python3`, `py`, `py3`).
    fn is_python(&self) -> bool {
        is_python(&self.lang)
    }

    /// The second word of the info string, lower-cased (`look` for
    /// ```` ```python look ````); `None` when there is none.
    pub(crate) fn tag(&self) -> Option<String> {
        self.info
            .split_whitespace()
            .nth(1)
            .map(|w| w.trim_matches(['{', '}', '.', ',']).to_ascii_lowercase())
    }
}

/// True for the language tags that mean Python.
fn is_python(lang: &str) -> bool {
    matches!(lang, "python" | "python3" | "py" | "py3")
}

/// Every fenced code block of `text`, in order (indented code blocks are
/// not fences and are not returned).
fn code_blocks(text: &str) -> Vec<CodeBlock> {
    let mut out = Vec::new();
    let mut quote_depth = 0usize;
    let mut current: Option<CodeBlock> = None;
    for (event, range) in Parser::new_ext(text, Options::empty()).into_offset_iter() {
        match event {
            Event::Start(Tag::BlockQuote(_)) => quote_depth += 1,
            Event::End(TagEnd::BlockQuote(_)) => quote_depth = quote_depth.saturating_sub(1),
            Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(info))) => {
                let info = info.trim().to_string();
                let (closed, raw) = fence_shape(&text[range.clone()]);
                // The span takes the closing fence's line end with it.
                let mut range = range;
                let rest = &text[range.end..];
                range.end += if rest.starts_with("\r\n") {
                    2
                } else {
                    usize::from(rest.starts_with('\n'))
                };
                current = Some(CodeBlock {
                    lang: lang_of(&info),
                    info,
                    code: String::new(),
                    raw,
                    closed,
                    quoted: quote_depth > 0,
                    span: range,
                });
            }
            Event::Text(t) => {
                if let Some(block) = current.as_mut() {
                    block.code.push_str(&t);
                }
            }
            Event::End(TagEnd::CodeBlock) => {
                if let Some(mut block) = current.take() {
                    // Every line ends with a newline, the last one of a
                    // block cut at the end of the text too.
                    if !block.code.is_empty() && !block.code.ends_with('\n') {
                        block.code.push('\n');
                    }
                    out.push(block);
                }
            }
            _ => {}
        }
    }
    out
}

/// The language of an info string: its first word, lower-cased, without a
/// leading `{` or `.` (`{.python}` and `python {linenos}` both read `python`).
fn lang_of(info: &str) -> String {
    info.trim_start_matches(['{', '.'])
        .split(|c: char| c.is_whitespace() || c == '{' || c == ',' || c == '}')
        .next()
        .unwrap_or("")
        .to_ascii_lowercase()
}

/// Whether the block's source ends with its closing fence, and the source
/// between the fence lines.
fn fence_shape(src: &str) -> (bool, String) {
    let strip = |line: &str| -> String {
        line.trim_end_matches(['\n', '\r'])
            .trim_start_matches([' ', '\t', '>'])
            .trim_end()
            .to_string()
    };
    let first_end = src.find('\n').map(|i| i + 1).unwrap_or(src.len());
    let opening = strip(&src[..first_end]);
    let Some(ch) = opening.chars().next().filter(|c| *c == '`' || *c == '~') else {
        return (false, src[first_end..].to_string());
    };
    let open_len = opening.chars().take_while(|c| *c == ch).count();
    let body = &src[first_end..];
    let trimmed = body.trim_end_matches(['\n', '\r']);
    let last_start = trimmed.rfind('\n').map(|i| i + 1).unwrap_or(0);
    let last = strip(&trimmed[last_start..]);
    let closed =
        !body.is_empty() && last.chars().count() >= open_len && last.chars().all(|c| c == ch);
    if closed {
        (true, body[..last_start].to_string())
    } else {
        (false, body.to_string())
    }
}

/// The exact code a person gave: the first python block (```` ```python ````,
/// ```` ```py ````, ```` ```python3 ````, backticks or tildes) that is not
/// quoted. A bare fence is not code (people paste data and logs that way).
/// An unclosed fence runs to the end of the text, as CommonMark reads it.
pub(crate) fn exact_code(text: &str) -> Option<CodeBlock> {
    code_blocks(text)
        .into_iter()
        .find(|b| b.is_python() && !b.quoted)
}

/// The first fenced block of any language, for reading back the bot's own
/// comments ([`CodeBlock::raw`] keeps the text exactly as written).
pub(crate) fn first_fenced(text: &str) -> Option<CodeBlock> {
    code_blocks(text).into_iter().next()
}

/// Why a model reply holds no usable program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ReplyProblem {
    /// No python (or bare) fenced block outside think sections.
    NoCode,
    /// The block that would be the program is never closed: the reply was cut.
    Unclosed,
    /// The chosen block is empty.
    Empty,
}

/// The program of a model reply and the prose before it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ReplyCode {
    /// The prose before the chosen block, outside think sections and other
    /// code blocks (the caller picks the plan out of it).
    pub(crate) prose: String,
    /// The chosen block.
    pub(crate) block: CodeBlock,
}

/// Picks the program out of a model reply: the last complete python block
/// outside `<think>` sections; a bare fence only when there is no python
/// block. When the last candidate is unclosed the reply was cut, and that is
/// the answer (an earlier example snippet is never run instead).
pub(crate) fn reply_code(reply: &str) -> Result<ReplyCode, ReplyProblem> {
    let visible = mask_think(reply);
    let blocks = code_blocks(&visible);
    let python: Vec<&CodeBlock> = blocks.iter().filter(|b| b.is_python()).collect();
    let candidates = if python.is_empty() {
        blocks.iter().filter(|b| b.lang.is_empty()).collect()
    } else {
        python
    };
    let chosen = match candidates.last() {
        None => return Err(ReplyProblem::NoCode),
        Some(b) if !b.closed => return Err(ReplyProblem::Unclosed),
        Some(b) => *b,
    };
    if chosen.code.trim().is_empty() {
        return Err(ReplyProblem::Empty);
    }
    let mut prose = String::new();
    let mut at = 0;
    for b in blocks
        .iter()
        .take_while(|b| b.span.start < chosen.span.start)
    {
        prose.push_str(&visible[at..b.span.start]);
        at = b.span.end;
    }
    prose.push_str(&visible[at.min(chosen.span.start)..chosen.span.start]);
    Ok(ReplyCode {
        prose,
        block: chosen.clone(),
    })
}

/// The python blocks of a model reply outside `<think>` sections, in
/// order (closed or not), with spans into `reply`.
pub(crate) fn reply_python_blocks(reply: &str) -> Vec<CodeBlock> {
    code_blocks(&mask_think(reply))
        .into_iter()
        .filter(CodeBlock::is_python)
        .collect()
}

/// `text` with its think sections blanked (same length, newlines kept, so
/// offsets still point into the original): `<think>…</think>` and
/// `<thinking>…</thinking>` (any case); an unclosed opening tag runs to the
/// end; a closing tag without an opening one (some servers strip the
/// opening tag) hides everything before it.
pub(crate) fn mask_think(text: &str) -> String {
    let lower = text.to_ascii_lowercase();
    let mut bytes = text.as_bytes().to_vec();
    let mut blank = |r: Range<usize>| {
        for b in &mut bytes[r] {
            if *b != b'\n' {
                *b = b' ';
            }
        }
    };
    let mut pos = 0;
    loop {
        let open = ["<think>", "<thinking>"]
            .iter()
            .filter_map(|t| lower[pos..].find(t).map(|i| pos + i))
            .min();
        let close = ["</think>", "</thinking>"]
            .iter()
            .filter_map(|t| lower[pos..].find(t).map(|i| (pos + i, t.len())))
            .min();
        match (open, close) {
            (_, Some((c, len))) if open.is_none_or(|o| c < o) => {
                blank(pos..c + len);
                pos = c + len;
            }
            (Some(o), _) => {
                let end = ["</think>", "</thinking>"]
                    .iter()
                    .filter_map(|t| lower[o..].find(t).map(|i| o + i + t.len()))
                    .min()
                    .unwrap_or(text.len());
                blank(o..end);
                pos = end;
            }
            _ => break,
        }
    }
    // Every blanked range starts and ends at an ASCII tag or the end of the
    // text, so whole characters were replaced and the bytes stay UTF-8.
    String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (name, reply, expected code or problem)
    const REPLIES: &[(&str, &str, Result<&str, ReplyProblem>)] = &[
        (
            "py tag",
            "Plan: sum\n```py\nprint(1)\n```\n",
            Ok("print(1)\n"),
        ),
        (
            "python3 tag with attributes",
            "```python3 title=x\nprint(3)\n```",
            Ok("print(3)\n"),
        ),
        (
            "bare fence",
            "Plan: x\n```\nprint(2)\n```",
            Ok("print(2)\n"),
        ),
        ("tildes", "~~~python\nprint(4)\n~~~\n", Ok("print(4)\n")),
        (
            "example snippet first, full program last",
            "For example:\n```python\ndf.head()\n```\nThe program:\n```python\nimport json\nprint(json.dumps({}))\n```\n",
            Ok("import json\nprint(json.dumps({}))\n"),
        ),
        (
            "python block preferred over a later bare output block",
            "```python\nprint(5)\n```\nOutput:\n```\n{\"a\": 1}\n```",
            Ok("print(5)\n"),
        ),
        (
            "think draft ignored",
            "<think>\nDraft:\n```python\nprint('draft')\n```\n</think>\nPlan: final\n```python\nprint('final')\n```",
            Ok("print('final')\n"),
        ),
        (
            "think after the program ignored",
            "```python\nprint('real')\n```\n<think>\n```python\nprint('later draft')\n```\n</think>",
            Ok("print('real')\n"),
        ),
        (
            "unclosed fence inside think does not swallow the program",
            "<think>\n```python\nprint('draft'\n</think>\n```python\nprint('ok')\n```",
            Ok("print('ok')\n"),
        ),
        (
            "closing think tag only",
            "```python\nprint('draft')\n```\n</think>\n```python\nprint('final')\n```",
            Ok("print('final')\n"),
        ),
        (
            "only a think block",
            "<think>\n```python\nprint(1)\n```\n</think>\nThe answer is 6.",
            Err(ReplyProblem::NoCode),
        ),
        ("prose only", "The answer is 42.", Err(ReplyProblem::NoCode)),
        ("bash only", "```bash\nls\n```", Err(ReplyProblem::NoCode)),
        (
            "truncated reply",
            "Plan: a\n```python\nimport json\nprint(",
            Err(ReplyProblem::Unclosed),
        ),
        (
            "snippet then truncated program",
            "```python\nx = 1\n```\nFull:\n```python\nimport json\nprint(",
            Err(ReplyProblem::Unclosed),
        ),
        ("empty block", "```python\n\n```", Err(ReplyProblem::Empty)),
        (
            "longer fence holds a shorter one",
            "````python\ns = '''\n```\n'''\nprint(s)\n````\n",
            Ok("s = '''\n```\n'''\nprint(s)\n"),
        ),
    ];

    #[test]
    fn reply_code_on_real_reply_styles() {
        for (name, reply, want) in REPLIES {
            let got = reply_code(reply).map(|r| r.block.code);
            assert_eq!(got.as_deref(), want.as_ref().map(|s| *s), "{name}");
        }
    }

    /// (name, comment text, expected exact code)
    const EXACT: &[(&str, &str, Option<&str>)] = &[
        (
            "python",
            "run:\n```python\nprint(1)\n```\n",
            Some("print(1)\n"),
        ),
        ("py", "```py\nprint(2)\n```", Some("print(2)\n")),
        ("python3", "```python3\nprint(3)\n```", Some("print(3)\n")),
        ("tildes", "~~~py\nprint(4)\n~~~", Some("print(4)\n")),
        ("bare fence is data", "```\na,b\n1,2\n```", None),
        ("other language", "```sh\nls\n```", None),
        (
            "first python block wins in a comment",
            "```python\nprint('a')\n```\n```python\nprint('b')\n```",
            Some("print('a')\n"),
        ),
        (
            "unclosed runs to the end",
            "```py\nprint(2)\n",
            Some("print(2)\n"),
        ),
        (
            "quoted code is not a request",
            "> ```python\n> print(1)\n> ```",
            None,
        ),
        (
            "indented up to three spaces",
            "   ```python\n   print(1)\n   ```",
            Some("print(1)\n"),
        ),
        (
            "four spaces is an indented block",
            "    ```python\n    x\n    ```",
            None,
        ),
        (
            "longer fence",
            "````python\nprint(\"```\")\n```\n````\n",
            Some("print(\"```\")\n```\n"),
        ),
        ("inline code is not a block", "use `print(1)` please", None),
    ];

    #[test]
    fn exact_code_rules() {
        for (name, text, want) in EXACT {
            let got = exact_code(text).map(|b| b.code);
            assert_eq!(got.as_deref(), *want, "{name}");
        }
    }

    #[test]
    fn first_fenced_keeps_the_text_as_written() {
        let b = first_fenced("x\r\n```python\r\nprint(1)\r\nprint(2)\r\n```\r\n").unwrap();
        assert_eq!(b.raw, "print(1)\r\nprint(2)\r\n");
        assert!(b.closed);
        let b = first_fenced("```\nno end\n").unwrap();
        assert!(!b.closed);
        assert_eq!(b.raw, "no end\n");
    }

    #[test]
    fn prose_before_the_chosen_block_skips_other_blocks_and_think() {
        let r = reply_code(
            "<think>secret plan</think>Plan: real\n```sh\nls\n```\n```python\nprint(1)\n```",
        )
        .unwrap();
        assert!(r.prose.contains("Plan: real"), "{:?}", r.prose);
        assert!(!r.prose.contains("secret") && !r.prose.contains("ls"));
    }

    #[test]
    fn mask_think_keeps_offsets_and_multibyte_text() {
        let t = "a<think>é\n</think>b";
        let m = mask_think(t);
        assert_eq!(m.len(), t.len());
        assert!(m.starts_with('a') && m.ends_with('b') && m.contains('\n'));
        assert!(!m.contains("think"));
    }
}
