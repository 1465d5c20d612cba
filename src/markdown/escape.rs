//! Writing text the bot does not control — what the code names, prints and
//! returns, what a model or a person wrote — into Markdown, one function per
//! context, so that it reads as the literal text it is and never becomes
//! Markdown, HTML, a mention or a link of its author's choosing:
//!
//! | where the text goes | function |
//! | --- | --- |
//! | one line of text: a table cell, a line of a paragraph, link or image text | [`escape_line`] |
//! | a text whose line breaks are kept, in a table cell or mid-line | [`escape_cell`] |
//! | a text that is a paragraph of its own | [`paragraph`] |
//! | a name, path or call as code, outside a table | [`code_span`] |
//! | the same in a table cell | [`cell_code_span`] |
//! | inside HTML (`<summary>`, an attribute value) | [`html_text`] |
//! | a label of a mermaid chart | [`mermaid_label`] |
//! | a fenced block (code, stdout, JSON) | [`fenced`] ([`fenced_exact`] for code read back) |
//! | prose a model or a person wrote, whose Markdown is kept | [`neutralize`] |
//! | plain text (the terminal) | [`show_hidden`] |
//!
//! Each starts from the same rule for the characters a reader cannot see
//! ([`is_hidden`]: controls, line and paragraph separators, bidirectional
//! and zero-width characters): they are shown as escapes (`\n`, `\t`,
//! `\u{202e}`), except the line breaks and tabs a context lays out itself.
//! A backslash the text holds stays one backslash, so the two characters
//! `\n` and a line break read alike; the JSON report has the exact text.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::ops::Range;

use pulldown_cmark::{Event, Options, Parser};

/// Most characters of a name the code chose (a file in `/out`, a path it
/// opened, a module it imported) that an answer shows; the JSON report has
/// it whole.
pub(crate) const NAME_CHARS: usize = 200;

/// Cuts `s` to at most `max` characters, adding `…` when cut (a name the
/// code chose is shown up to [`NAME_CHARS`]).
pub(crate) fn cut_chars(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// The zero-width space put after `@`, `#`, `:` and the like so that GitHub
/// links or notifies nothing (`@user`, `#12`, `https://`, `www.`, `GH-12`).
const BREAK: char = '\u{200B}';

/// True for the Unicode bidirectional controls that can make text read in
/// another order than it is stored (U+202A–U+202E embeddings and overrides,
/// U+2066–U+2069 isolates, U+200E/U+200F marks, U+061C the Arabic letter mark).
pub(crate) fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}' | '\u{061C}')
}

/// True for a character a reader cannot see or that changes how the text
/// around it is laid out: the C0 and C1 controls and DEL (line breaks and
/// tabs among them), the line and paragraph separators U+2028/U+2029, the
/// bidirectional controls ([`is_bidi_control`]), the word joiner and
/// invisible operators U+2060–U+2064, the byte-order mark U+FEFF and the
/// tag characters U+E0000–U+E007F. (The zero-width joiner and non-joiner,
/// which emoji and scripts need, are not; nor is the zero-width space
/// U+200B, which the escaping itself puts in to break mentions and links,
/// so that escaped text passes [`neutralize`] unchanged.)
pub(crate) fn is_hidden(c: char) -> bool {
    c.is_control()
        || is_bidi_control(c)
        || matches!(
            c,
            '\u{2028}' | '\u{2029}' | '\u{2060}'..='\u{2064}'
                | '\u{FEFF}'
                | '\u{E0000}'..='\u{E007F}'
        )
}

/// Which layout characters a context keeps raw.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Keep {
    /// None: every hidden character is shown (one line of text, code spans).
    Nothing,
    /// Line breaks (`\n`, and `\r\n` as one): texts whose breaks the
    /// context writes as `<br>`.
    Breaks,
    /// Line breaks and tabs: fenced blocks and the terminal.
    Layout,
}

/// Shows `c` as an escape: `\n`, `\r`, `\t`, `\0`, else `\u{202e}`.
fn push_escape(out: &mut String, c: char) {
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        '\0' => out.push_str("\\0"),
        c => {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        }
    }
}

/// `s` with its hidden characters shown as escapes, but those `keep` keeps.
fn show(s: &str, keep: Keep) -> Cow<'_, str> {
    if !s.chars().any(is_hidden) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        let kept = match keep {
            Keep::Nothing => false,
            Keep::Breaks => c == '\n' || (c == '\r' && chars.peek() == Some(&'\n')),
            Keep::Layout => c == '\n' || c == '\t' || (c == '\r' && chars.peek() == Some(&'\n')),
        };
        if kept || !is_hidden(c) {
            out.push(c);
        } else {
            push_escape(&mut out, c);
        }
    }
    Cow::Owned(out)
}

/// Text with its line breaks and tabs kept and every other hidden character
/// shown as an escape ([`is_hidden`]): fenced blocks ([`fenced`]) and the
/// terminal text, so no control sequence, bidirectional override or
/// invisible character reaches a reader raw.
pub(crate) fn show_hidden(s: &str) -> String {
    show(s, Keep::Layout).into_owned()
}

/// True when a zero-width space goes after `chars[i]`, so that GitHub
/// neither notifies nor links: `@name` (a mention, or an e-mail address),
/// `#12` (an issue; with `owner/repo` before it too), `GH-12`, `http://`,
/// `https://`, `ftp://` and `www.` (the schemes GitHub autolinks).
fn needs_break(chars: &[char], i: usize) -> bool {
    let next = chars.get(i + 1).copied();
    let lower = |j: usize| chars[j].to_ascii_lowercase();
    match chars[i] {
        '@' => next.is_some_and(|n| n.is_alphanumeric() || n == '-' || n == '_'),
        '#' => next.is_some_and(|n| n.is_ascii_digit()),
        ':' => {
            let scheme: String = chars[..i]
                .iter()
                .rev()
                .take_while(|c| c.is_ascii_alphabetic())
                .map(|c| c.to_ascii_lowercase())
                .collect();
            next == Some('/') && matches!(scheme.as_str(), "ptth" | "sptth" | "ptf")
        }
        '-' => {
            i >= 2
                && lower(i - 2) == 'g'
                && lower(i - 1) == 'h'
                && next.is_some_and(|n| n.is_ascii_digit())
        }
        'w' | 'W' => {
            next == Some('.')
                && i >= 2
                && lower(i - 1) == 'w'
                && lower(i - 2) == 'w'
                && (i == 2 || !chars[i - 3].is_alphanumeric())
        }
        _ => false,
    }
}

/// Inline text after its hidden characters were shown: Markdown punctuation
/// escaped, HTML as entities, mentions, references and links broken, a
/// kept line break as `<br>`.
fn escape_inline(shown: &str) -> String {
    let chars: Vec<char> = shown.chars().collect();
    let mut out = String::with_capacity(shown.len() + 8);
    for (i, &c) in chars.iter().enumerate() {
        match c {
            '\\' | '`' | '|' | '*' | '_' | '[' | ']' | '~' | '#' | '$' => {
                out.push('\\');
                out.push(c);
            }
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '\r' => {}
            '\n' => out.push_str("<br>"),
            _ => out.push(c),
        }
        if needs_break(&chars, i) {
            out.push(BREAK);
        }
    }
    out
}

/// One line of text the bot does not control, as text: in a table cell, in
/// a line of a paragraph, as link or image text. Every hidden character is
/// shown (a line break as `\n`); `\`, `` ` ``, `|`, `*`, `_`, `[`, `]`,
/// `~`, `#` and `$` are backslash-escaped (no code, table cell, emphasis,
/// link, image, strikethrough, heading or math); `<`, `>` and `&` are
/// entities (no HTML, no character reference); `@name`, `#12`, `GH-12`,
/// `https://` and `www.` get a zero-width space (no mention, reference or
/// autolink).
pub(crate) fn escape_line(s: &str) -> String {
    escape_inline(&show(s, Keep::Nothing))
}

/// [`escape_line`] for a text whose line breaks are kept: each (`\n` or
/// `\r\n`) is a `<br>`, which breaks the line where it stands and never
/// starts a block (a table cell, the goal, a result's text).
pub(crate) fn escape_cell(s: &str) -> String {
    escape_inline(&show(s, Keep::Breaks))
}

/// [`escape_cell`] for a text that is a paragraph of its own: no block
/// syntax at its start either (`-`, `+` and `=` would start a list or a
/// rule, `1.` a numbered list; the rest is escaped already).
pub(crate) fn paragraph(s: &str) -> String {
    let mut p = escape_cell(s.trim());
    let digits = p.chars().take_while(char::is_ascii_digit).count();
    if p.starts_with(['-', '+', '=']) {
        p.insert(0, '\\');
    } else if digits > 0 && p[digits..].starts_with(['.', ')']) {
        p.insert(digits, '\\');
    }
    p
}

/// A name, path or call the bot does not control as a code span: every
/// hidden character shown (a line break as `\n`), a backtick run inside
/// fenced by a longer one, spaces added when it starts or ends with a
/// backtick or a space (CommonMark strips one from each side). In a code
/// span GitHub renders no Markdown and links or notifies nothing. An empty
/// text is `<code></code>`.
pub(crate) fn code_span(s: &str) -> String {
    let shown = show(s, Keep::Nothing);
    if shown.is_empty() {
        return "<code></code>".into();
    }
    let mut longest = 0;
    let mut run = 0;
    for c in shown.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let ticks = "`".repeat(longest + 1);
    let pad = (shown.starts_with(['`', ' ']) || shown.ends_with(['`', ' ']))
        && !shown.chars().all(|c| c == ' ');
    let space = if pad { " " } else { "" };
    format!("{ticks}{space}{shown}{space}{ticks}")
}

/// [`code_span`] in a table cell: its `|` escaped as `\|`, which GitHub's
/// tables read as a `|` inside the span rather than the end of the cell.
pub(crate) fn cell_code_span(s: &str) -> String {
    code_span(s).replace('|', "\\|")
}

/// Text the bot does not control inside HTML (a `<summary>`, an attribute
/// value): every hidden character shown (no line break, so no blank line
/// can end the HTML block and start Markdown), `&`, `<`, `>`, `"` and `'`
/// as entities, mentions, references and links broken as in
/// [`escape_line`]. Markdown is not read inside an HTML block, so nothing
/// is backslash-escaped.
pub(crate) fn html_text(s: &str) -> String {
    let shown = show(s, Keep::Nothing);
    let chars: Vec<char> = shown.chars().collect();
    let mut out = String::with_capacity(shown.len() + 8);
    for (i, &c) in chars.iter().enumerate() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
        if needs_break(&chars, i) {
            out.push(BREAK);
        }
    }
    out
}

/// A label of a mermaid chart (inside a ```` ```mermaid ```` block, between
/// double quotes): every hidden character shown, and `"`, `` ` ``, `[`,
/// `]`, `<` and `>` left out, so a label can end neither its quotes, the
/// list it is in nor the block.
pub(crate) fn mermaid_label(s: &str) -> String {
    show(s, Keep::Nothing)
        .chars()
        .filter(|c| !matches!(c, '"' | '`' | '[' | ']' | '<' | '>'))
        .collect()
}

/// A backtick fence longer than any backtick run in `content` (at least 3).
pub(crate) fn fence_for(content: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in content.chars() {
        if c == '`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    "`".repeat((longest + 1).max(3))
}

/// Wraps `content` in a fenced block with `lang`, using [`fence_for`];
/// hidden characters other than line breaks and tabs are shown as
/// [`show_hidden`] does.
pub(crate) fn fenced(lang: &str, content: &str) -> String {
    fenced_exact(lang, &show_hidden(content))
}

/// [`fenced`] keeping `content` byte for byte (for code that is read back
/// and hash-checked, such as code waiting for approval).
pub(crate) fn fenced_exact(lang: &str, content: &str) -> String {
    let fence = fence_for(content);
    let nl = if content.ends_with('\n') || content.is_empty() {
        ""
    } else {
        "\n"
    };
    format!("{fence}{lang}\n{content}{nl}{fence}\n")
}

/// Makes prose a model or a person wrote safe to post, keeping its
/// Markdown (emphasis, lists, links, code): hidden characters other than
/// line breaks and tabs are shown; outside code spans `<` and `>` are
/// entities (no HTML, no hidden comment), `&` is one unless it starts
/// `&lt;`, `&gt;`, `&amp;` or `&quot;` (no character reference can make a
/// hidden character), and `@name` and `#12` get a zero-width space (no
/// mention, no cross-reference). Code spans are left as written: in them
/// `<` is text already and nothing notifies.
pub(crate) fn neutralize(s: &str) -> String {
    let shown = show(s, Keep::Layout);
    let spans = code_spans(&shown);
    let chars: Vec<(usize, char)> = shown.char_indices().collect();
    let plain: Vec<char> = chars.iter().map(|(_, c)| *c).collect();
    let mut out = String::with_capacity(shown.len() + 8);
    let mut spans = spans.iter().peekable();
    for (i, &(at, c)) in chars.iter().enumerate() {
        while spans.next_if(|r| r.end <= at).is_some() {}
        if spans.peek().is_some_and(|r| r.contains(&at)) {
            out.push(c);
            continue;
        }
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' if !["&lt;", "&gt;", "&amp;", "&quot;"]
                .iter()
                .any(|e| shown[at..].starts_with(e)) =>
            {
                out.push_str("&amp;")
            }
            _ => out.push(c),
        }
        if matches!(c, '@' | '#') && needs_break(&plain, i) {
            out.push(BREAK);
        }
    }
    out
}

/// The byte ranges of `text`'s code spans, as GitHub's Markdown (tables and
/// strikethrough on) reads them.
fn code_spans(text: &str) -> Vec<Range<usize>> {
    if !text.contains('`') {
        return Vec::new();
    }
    let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH;
    Parser::new_ext(text, options)
        .into_offset_iter()
        .filter(|(e, _)| matches!(e, Event::Code(_)))
        .map(|(_, r)| r)
        .collect()
}

#[cfg(test)]
#[path = "escape_tests.rs"]
mod tests;
