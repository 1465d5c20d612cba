//! What an input's bytes are: a known binary format, or text in an encoding
//! pandas must be told. Text that is not UTF-8 is decoded as Windows-1252
//! (or Latin-1 when it holds bytes cp1252 leaves undefined), never shown
//! with replacement characters in silence.

use std::borrow::Cow;

/// A text encoding, as found from a byte-order mark or the bytes themselves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Encoding {
    /// UTF-8 (ASCII included), no byte-order mark.
    Utf8,
    /// UTF-8 after a byte-order mark (pandas' default `utf-8` skips it).
    Utf8Bom,
    /// UTF-16 little-endian after its byte-order mark.
    Utf16Le,
    /// UTF-16 big-endian after its byte-order mark.
    Utf16Be,
    /// UTF-32 little-endian after its byte-order mark.
    Utf32Le,
    /// UTF-32 big-endian after its byte-order mark.
    Utf32Be,
    /// Not UTF-8: Windows-1252 (a superset of Latin-1's printable range).
    Cp1252,
    /// Not UTF-8, with bytes Windows-1252 leaves undefined: Latin-1.
    Latin1,
}

impl Encoding {
    /// The `encoding=` value pandas (and `open()`) need; `None` when the
    /// default (`utf-8`) reads the file.
    pub(crate) fn python_name(self) -> Option<&'static str> {
        match self {
            Encoding::Utf8 | Encoding::Utf8Bom => None,
            Encoding::Utf16Le | Encoding::Utf16Be => Some("utf-16"),
            Encoding::Utf32Le | Encoding::Utf32Be => Some("utf-32"),
            Encoding::Cp1252 => Some("cp1252"),
            Encoding::Latin1 => Some("latin-1"),
        }
    }

    /// How the preview names the encoding.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Encoding::Utf8 => "UTF-8",
            Encoding::Utf8Bom => "UTF-8 with a byte-order mark (BOM)",
            Encoding::Utf16Le => "UTF-16 little-endian with a BOM",
            Encoding::Utf16Be => "UTF-16 big-endian with a BOM",
            Encoding::Utf32Le => "UTF-32 little-endian with a BOM",
            Encoding::Utf32Be => "UTF-32 big-endian with a BOM",
            Encoding::Cp1252 => "Windows-1252 (cp1252), not UTF-8",
            Encoding::Latin1 => "Latin-1 (ISO-8859-1), not UTF-8",
        }
    }

    fn bom(self) -> &'static [u8] {
        match self {
            Encoding::Utf8Bom => b"\xEF\xBB\xBF",
            Encoding::Utf16Le => b"\xFF\xFE",
            Encoding::Utf16Be => b"\xFE\xFF",
            Encoding::Utf32Le => b"\xFF\xFE\0\0",
            Encoding::Utf32Be => b"\0\0\xFE\xFF",
            _ => b"",
        }
    }
}

/// The text encoding of `bytes` (a file's first bytes), or `None` when they
/// look like binary data: NUL bytes or many control characters.
pub(crate) fn detect(bytes: &[u8]) -> Option<Encoding> {
    // Longest mark first: UTF-32 LE starts like UTF-16 LE.
    for enc in [
        Encoding::Utf32Le,
        Encoding::Utf32Be,
        Encoding::Utf8Bom,
        Encoding::Utf16Le,
        Encoding::Utf16Be,
    ] {
        if bytes.starts_with(enc.bom()) {
            return Some(enc);
        }
    }
    let sample = &bytes[..bytes.len().min(64 * 1024)];
    let controls = sample
        .iter()
        .filter(|b| **b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r' | 0x0C))
        .count();
    if sample.contains(&0) || controls * 100 > sample.len() {
        return None;
    }
    match std::str::from_utf8(bytes) {
        Ok(_) => Some(Encoding::Utf8),
        // A multi-byte character cut at the end of the head is still UTF-8.
        Err(e) if e.error_len().is_none() => Some(Encoding::Utf8),
        Err(_) if bytes.iter().any(|b| CP1252_UNDEFINED.contains(b)) => Some(Encoding::Latin1),
        Err(_) => Some(Encoding::Cp1252),
    }
}

/// Bytes Windows-1252 does not define (Python's `cp1252` codec fails on them).
const CP1252_UNDEFINED: [u8; 5] = [0x81, 0x8D, 0x8F, 0x90, 0x9D];

/// Windows-1252's characters for 0x80–0x9F (Latin-1 has C1 controls there).
const CP1252_HIGH: [char; 32] = [
    '€', '\u{81}', '‚', 'ƒ', '„', '…', '†', '‡', 'ˆ', '‰', 'Š', '‹', 'Œ', '\u{8D}', 'Ž', '\u{8F}',
    '\u{90}', '‘', '’', '“', '”', '•', '–', '—', '˜', '™', 'š', '›', 'œ', '\u{9D}', 'ž', 'Ÿ',
];

/// `bytes` (a file's first bytes, perhaps cut inside a character) as text
/// in `enc`, without its byte-order mark. A character cut at the end is
/// dropped; an invalid sequence inside UTF-8 becomes U+FFFD.
pub(crate) fn decode(bytes: &[u8], enc: Encoding) -> Cow<'_, str> {
    let body = &bytes[enc.bom().len()..];
    match enc {
        Encoding::Utf8 | Encoding::Utf8Bom => match std::str::from_utf8(body) {
            Ok(s) => Cow::Borrowed(s),
            Err(e) if e.error_len().is_none() => {
                Cow::Borrowed(std::str::from_utf8(&body[..e.valid_up_to()]).unwrap_or_default())
            }
            Err(_) => String::from_utf8_lossy(body),
        },
        Encoding::Utf16Le | Encoding::Utf16Be => {
            let units = body.chunks_exact(2).map(|p| {
                let pair = [p[0], p[1]];
                if enc == Encoding::Utf16Le {
                    u16::from_le_bytes(pair)
                } else {
                    u16::from_be_bytes(pair)
                }
            });
            Cow::Owned(
                char::decode_utf16(units)
                    .map(|c| c.unwrap_or(char::REPLACEMENT_CHARACTER))
                    .collect(),
            )
        }
        Encoding::Utf32Le | Encoding::Utf32Be => Cow::Owned(
            body.chunks_exact(4)
                .map(|q| {
                    let quad = [q[0], q[1], q[2], q[3]];
                    let n = if enc == Encoding::Utf32Le {
                        u32::from_le_bytes(quad)
                    } else {
                        u32::from_be_bytes(quad)
                    };
                    char::from_u32(n).unwrap_or(char::REPLACEMENT_CHARACTER)
                })
                .collect(),
        ),
        Encoding::Cp1252 | Encoding::Latin1 => Cow::Owned(
            body.iter()
                .map(|&b| match b {
                    0x80..=0x9F if enc == Encoding::Cp1252 => CP1252_HIGH[usize::from(b - 0x80)],
                    _ => char::from(b),
                })
                .collect(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_order_marks_name_the_encoding_and_are_not_part_of_the_text() {
        let utf8 = b"\xEF\xBB\xBFa,b\r1,2\r";
        assert_eq!(detect(utf8), Some(Encoding::Utf8Bom));
        assert_eq!(decode(utf8, Encoding::Utf8Bom), "a,b\r1,2\r");
        let mut utf16 = vec![0xFF, 0xFE];
        for u in "é,x\n".encode_utf16() {
            utf16.extend(u.to_le_bytes());
        }
        assert_eq!(detect(&utf16), Some(Encoding::Utf16Le));
        assert_eq!(decode(&utf16, Encoding::Utf16Le), "é,x\n");
        assert_eq!(Encoding::Utf16Le.python_name(), Some("utf-16"));
        let utf32 = b"\xFF\xFE\0\0a\0\0\0";
        assert_eq!(detect(utf32), Some(Encoding::Utf32Le));
        assert_eq!(decode(utf32, Encoding::Utf32Le), "a");
    }

    #[test]
    fn non_utf8_text_is_cp1252_or_latin1_never_replacement_characters() {
        // "Café; 5 €" in Windows-1252.
        let cp = b"Caf\xE9;5 \x80\n";
        assert_eq!(detect(cp), Some(Encoding::Cp1252));
        assert_eq!(decode(cp, Encoding::Cp1252), "Café;5 €\n");
        // 0x81 is undefined in cp1252: Python's codec fails, latin-1 reads it.
        let l1 = b"x\x81\xE9\n";
        assert_eq!(detect(l1), Some(Encoding::Latin1));
        assert_eq!(decode(l1, Encoding::Latin1), "x\u{81}é\n");
        assert!(!decode(cp, Encoding::Cp1252).contains('\u{FFFD}'));
    }

    #[test]
    fn a_character_cut_at_the_end_is_still_utf8_and_binary_is_none() {
        let cut = "a,é".as_bytes();
        assert_eq!(detect(&cut[..cut.len() - 1]), Some(Encoding::Utf8));
        assert_eq!(decode(&cut[..cut.len() - 1], Encoding::Utf8), "a,");
        assert_eq!(detect(b"ab\0cd"), None);
        assert_eq!(detect(b"\x01\x02\x03\x04\x05text"), None);
        assert_eq!(detect(b""), Some(Encoding::Utf8));
    }
}
