//! Test support: Markdown read back the way GitHub reads it (comrak with
//! GitHub's extensions: tables, autolinks, strikethrough), and the HTML
//! taken apart, to check what a text became. Raw HTML is let through
//! unfiltered (comrak dropped GFM's tag filter in 0.56; it would only
//! rename a few tags), so any tag a text smuggles in shows.

/// The HTML GitHub's Markdown makes of `md`.
pub(crate) fn gfm(md: &str) -> String {
    let mut o = comrak::Options::default();
    o.extension.table = true;
    o.extension.autolink = true;
    o.extension.strikethrough = true;
    o.render.r#unsafe = true;
    comrak::markdown_to_html(md, &o)
}

/// The HTML tags of `html`, by name (`p`, `code`, `table`, ...).
pub(crate) fn tags(html: &str) -> Vec<String> {
    html.split('<')
        .skip(1)
        .map(|t| {
            t.chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '/' || *c == '!')
                .collect()
        })
        .collect()
}

/// `html`'s text: tags dropped, the entities the renderer writes decoded,
/// the zero-width spaces the escaping put in removed.
pub(crate) fn text_of(html: &str) -> String {
    let mut out = String::new();
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            _ if !in_tag => out.push(c),
            _ => {}
        }
    }
    out.replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
        .replace('\u{200B}', "")
}
