//! Dunder names: recognizing them, and finding them in strings.

pub(super) fn is_dunder(name: &str) -> bool {
    name.len() > 4 && name.starts_with("__") && name.ends_with("__")
}

/// Every `__word__` inside a string.
pub(super) fn dunders_in(text: &str) -> Vec<&str> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i + 4 < b.len() {
        if b[i] == b'_' && b[i + 1] == b'_' {
            let start = i;
            let mut j = i + 2;
            while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'_') {
                j += 1;
            }
            let word = &text[start..j];
            // interpreter dunders are lowercase (`__MAIN__` is just text)
            if word.len() > 4
                && word.ends_with("__")
                && word[2..word.len() - 2].bytes().any(|c| c != b'_')
                && !word.bytes().any(|c| c.is_ascii_uppercase())
            {
                let inner = word.trim_start_matches('_').trim_end_matches('_');
                if !inner.is_empty() {
                    out.push(word);
                }
            }
            i = j.max(i + 1);
        } else {
            i += 1;
        }
        if out.len() > 64 {
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dunder_scan_finds_words() {
        assert_eq!(dunders_in("{0.__globals__}"), vec!["__globals__"]);
        assert_eq!(
            dunders_in("__init__.py and __main__"),
            vec!["__init__", "__main__"]
        );
        assert!(dunders_in("a__b").is_empty());
        assert!(dunders_in("____").is_empty());
    }
}
