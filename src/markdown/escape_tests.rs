//! Each escaping context against hostile text, read back through a GFM
//! renderer ([`crate::markdown::gfm`]), which must show the literal text
//! and nothing the text asked for.

use super::*;
use crate::markdown::gfm::{gfm, tags, text_of};

/// Texts that try to become Markdown, HTML, a mention or a link.
const HOSTILE: &[&str] = &[
    "a\n\n### ✅ Verified by the kernel\n\nb",
    "x\r\n| forged | row |\r\n",
    "cell | split",
    "`tick` and ``two`` and ```",
    "<details><summary>open</summary>hidden",
    "<!-- hidden comment -->",
    "# heading",
    "![img](https://evil.example/x.png)",
    "[link](https://evil.example)",
    "@octocat and @org/team please",
    "see #123 and GH-45 and o/r#6",
    "https://evil.example/path and www.evil.example and mail@evil.example",
    "**bold** _em_ ~~strike~~ $x^2$",
    "&#x202e;&lt;b&gt;&amp;",
    "rlo \u{202E}fdp.exe and lri \u{2066}x\u{2069}",
    "nul \0 esc \u{1b}[2J c1 \u{85} ls \u{2028} ps \u{2029} zw \u{200B} bom \u{FEFF} tag \u{E0041}",
    "tab\there",
    "bad bytes \u{FFFD}\u{FFFD}",
    "\\",
    "a\\|b",
    "trailing backslash \\",
    "- list\n1. numbered\n> quote\n    indented",
];

/// What a reader should see of `s` in one line: each hidden character as
/// its escape.
fn literal(s: &str) -> String {
    show(s, Keep::Nothing).replace(BREAK, "")
}

#[test]
fn a_line_of_text_renders_as_its_literal_text_and_nothing_else() {
    for s in HOSTILE {
        let md = escape_line(s);
        assert!(
            !md.contains('\n') && !md.chars().any(is_hidden_raw),
            "{s:?} → {md:?}"
        );
        let html = gfm(&format!("before {md} after"));
        assert_eq!(tags(&html), ["p", "/p"], "{s:?} made markup: {html}");
        assert_eq!(
            text_of(&html).trim(),
            format!("before {} after", literal(s))
        );
    }
}

#[test]
fn a_table_cell_holds_one_cell_of_literal_text() {
    for s in HOSTILE {
        for (md, shown) in [
            (escape_line(s), literal(s)),
            (cell_code_span(s), literal(s)),
        ] {
            let html = gfm(&format!("| a | b |\n| --- | --- |\n| {md} | z |\n"));
            assert_eq!(html.matches("<tr>").count(), 2, "{s:?}: {html}");
            assert_eq!(html.matches("<td>").count(), 2, "{s:?}: {html}");
            for bad in ["<a ", "<img", "<h", "<details", "<del", "<strong", "<em"] {
                assert!(!html.contains(bad), "{s:?} made {bad}: {html}");
            }
            let cell = html
                .split("<td>")
                .nth(1)
                .unwrap()
                .split("</td>")
                .next()
                .unwrap();
            // comrak reads `\\|` in a cell as `\\|`, cmark-gfm (GitHub) as
            // `\|`, the literal text (checked with scripts/render-preview).
            if !md.contains("\\\\|") {
                assert_eq!(text_of(cell), shown, "{s:?}: {html}");
            }
        }
    }
}

#[test]
fn a_text_with_its_line_breaks_keeps_them_as_br_only() {
    let html = gfm(&format!(
        "| a |\n| --- |\n| {} |\n",
        escape_cell("one\ntwo\r\nthree\rfour")
    ));
    assert!(html.contains("one<br>two<br>three\\rfour"), "{html}");
    assert_eq!(html.matches("<tr>").count(), 2, "{html}");
    let html = gfm(&paragraph("- a\n# b\n1. c"));
    assert_eq!(
        tags(&html),
        ["p", "br", "br", "/p"],
        "no list or heading: {html}"
    );
    assert_eq!(paragraph("12) x"), "12\\) x");
    assert_eq!(paragraph("= rule"), "\\= rule");
}

#[test]
fn a_code_span_is_one_span_of_the_literal_text() {
    for s in HOSTILE {
        let md = code_span(s);
        let html = gfm(&format!("x {md} y"));
        assert_eq!(tags(&html), ["p", "code", "/code", "/p"], "{s:?}: {html}");
        let code = html
            .split("<code>")
            .nth(1)
            .unwrap()
            .split("</code>")
            .next()
            .unwrap();
        assert_eq!(text_of(code), literal(s), "{s:?}: {html}");
    }
    assert_eq!(code_span("a`b"), "``a`b``");
    assert_eq!(code_span("`a"), "`` `a ``");
    assert_eq!(code_span(" a"), "`  a `");
    assert_eq!(code_span("   "), "`   `");
    assert_eq!(code_span("a\nb"), "`a\\nb`");
    assert_eq!(code_span(""), "<code></code>");
}

#[test]
fn html_text_stays_inside_its_element() {
    for s in HOSTILE {
        let md = format!(
            "<details><summary><b>{}</b> · JSON</summary>\n\n```json\n{{}}\n```\n</details>\n",
            html_text(s)
        );
        let html = gfm(&md);
        let summary = html
            .split("<summary>")
            .nth(1)
            .unwrap()
            .split("</summary>")
            .next()
            .unwrap();
        assert_eq!(tags(summary), ["b", "/b"], "{s:?}: {html}");
        assert_eq!(text_of(summary), format!("{} · JSON", literal(s)), "{s:?}");
        assert_eq!(html.matches("<details>").count(), 1, "{s:?}: {html}");
    }
}

#[test]
fn link_and_image_text_cannot_end_early() {
    for s in HOSTILE {
        let html = gfm(&format!("![{}](x.png)", escape_line(s)));
        assert_eq!(html.matches("<img").count(), 1, "{s:?}: {html}");
        assert!(!html.contains("<a "), "{s:?}: {html}");
        let html = gfm(&format!("[{}](x.csv)", code_span(s)));
        assert_eq!(html.matches("<a ").count(), 1, "{s:?}: {html}");
        assert!(!html.contains("<img"), "{s:?}: {html}");
    }
}

#[test]
fn mentions_references_and_links_are_broken() {
    let md = escape_line("@octocat #12 GH-3 https://x.example www.x.example a@b.example");
    assert_eq!(
        md,
        "@\u{200B}octocat \\#\u{200B}12 GH-\u{200B}3 https:\u{200B}//x.example www\u{200B}.x.example a@\u{200B}b.example"
    );
    assert_eq!(
        escape_line("@ alone # 1 x:y unix:///s FTP://x"),
        "@ alone \\# 1 x:y unix:///s FTP:\u{200B}//x"
    );
    assert_eq!(
        html_text("@octocat #1 https://x"),
        "@\u{200B}octocat #\u{200B}1 https:\u{200B}//x"
    );
}

#[test]
fn hidden_characters_are_shown_as_escapes() {
    assert_eq!(
        literal("a\nb\r\tc\0d\u{1b}e\u{85}f\u{2028}g\u{202E}h\u{E0041}"),
        "a\\nb\\r\\tc\\0d\\u{1b}e\\u{85}f\\u{2028}g\\u{202e}h\\u{e0041}"
    );
    assert_eq!(
        show_hidden("a\r\nb\tc\rd\u{202E}"),
        "a\r\nb\tc\\rd\\u{202e}"
    );
    assert_eq!(show_hidden("plain é 👨\u{200D}👩"), "plain é 👨\u{200D}👩");
    assert!(!is_hidden('\u{FFFD}') && !is_hidden('\u{200D}') && !is_hidden('a'));
    for c in [
        '\u{202A}', '\u{202E}', '\u{2066}', '\u{2069}', '\u{200E}', '\u{200F}', '\u{061C}',
    ] {
        assert!(is_bidi_control(c) && is_hidden(c), "{c:?}");
    }
    assert!(!is_bidi_control('\u{200B}') && !is_hidden('\u{200B}'));
}

#[test]
fn a_mermaid_label_cannot_leave_its_quotes() {
    assert_eq!(
        mermaid_label("a\"b`c[d]<e>\n```\u{202E}"),
        "abcde\\n\\u{202e}"
    );
}

#[test]
fn escaped_text_passes_prose_unchanged() {
    for s in HOSTILE {
        let line = escape_line(s);
        assert_eq!(neutralize(&line), line, "{s:?}");
    }
}

#[test]
fn prose_keeps_its_markdown_but_not_html_mentions_or_references() {
    let p = neutralize("**Mean** is 3 <b>x</b> @alice #7 &#x202e; &amp; `a<b @c` \u{202E}\nnext");
    assert_eq!(
        p,
        "**Mean** is 3 &lt;b&gt;x&lt;/b&gt; @\u{200B}alice #\u{200B}7 &amp;#x202e; &amp; `a<b @c` \\u{202e}\nnext"
    );
    // What only looks like a code span is escaped.
    assert_eq!(neutralize("\\`<img src=x>`"), "\\`&lt;img src=x&gt;`");
    let html = gfm(&neutralize("`x` <script>1</script> ``y<z``"));
    assert!(html.contains("<code>y&lt;z</code>"), "{html}");
    assert!(!html.contains("<script"), "{html}");
    assert_eq!(neutralize("@ alone"), "@ alone");
}

#[test]
fn a_megabyte_stays_one_line_and_in_proportion() {
    let big = "a\n|`<@#".repeat(200_000);
    for md in [escape_line(&big), cell_code_span(&big), html_text(&big)] {
        assert!(!md.contains('\n'));
        assert!(md.len() < big.len() * 6, "{}", md.len());
    }
}

/// A hidden character other than the zero-width space the escaping puts in.
fn is_hidden_raw(c: char) -> bool {
    is_hidden(c) && c != BREAK
}
