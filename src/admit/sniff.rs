//! The cheap format check at admission: a data file whose extension
//! promises a format the sandbox's readers need (`.parquet`, `.xlsx`,
//! `.xlsm`) must look like that format at its ends, so a corrupt, truncated,
//! encrypted or legacy file is refused before any container starts, with a
//! message that names what is wrong and what to do. Only the first and last
//! bytes are read; a file that passes may still be damaged inside, and then
//! the reader's own error comes back in the run's stderr.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// The magic at both ends of a Parquet file.
const PARQUET: &[u8; 4] = b"PAR1";
/// The magic of a Parquet file with an encrypted footer.
const PARQUET_ENCRYPTED: &[u8; 4] = b"PARE";
/// A zip archive's first local file header (every .xlsx starts with one).
const ZIP: &[u8; 4] = b"PK\x03\x04";
/// An OLE compound file (CFB): a legacy .xls, or an .xlsx saved with a
/// password (Office wraps the encrypted package in a CFB container).
const OLE: &[u8; 8] = b"\xD0\xCF\x11\xE0\xA1\xB1\x1A\xE1";

/// The formats checked, by extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Parquet,
    Excel,
}

fn format_of(path: &Path) -> Option<Format> {
    let ext = path.extension()?.to_string_lossy().to_ascii_lowercase();
    match ext.as_str() {
        "parquet" => Some(Format::Parquet),
        "xlsx" | "xlsm" => Some(Format::Excel),
        _ => None,
    }
}

/// Checks the file at `path` (already known to be a regular file of `size`
/// bytes) against the format its extension names. `Err` says what is wrong
/// and what to do; files of other extensions always pass.
pub(crate) fn check(path: &Path, size: u64) -> Result<(), String> {
    let Some(format) = format_of(path) else {
        return Ok(());
    };
    let mut f = std::fs::File::open(path).map_err(|e| format!("cannot be read ({e})"))?;
    let mut head = [0u8; 8];
    let n = read_up_to(&mut f, &mut head)?;
    let head = &head[..n];
    let mut tail = [0u8; 4];
    if size >= 8 {
        f.seek(SeekFrom::Start(size - 4))
            .map_err(|e| format!("cannot be read ({e})"))?;
        read_up_to(&mut f, &mut tail)?;
    }
    match format {
        Format::Parquet => parquet(head, &tail, size),
        Format::Excel => excel(head),
    }
}

fn read_up_to(f: &mut std::fs::File, buf: &mut [u8]) -> Result<usize, String> {
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(format!("cannot be read ({e})")),
        }
    }
    Ok(n)
}

fn parquet(head: &[u8], tail: &[u8], size: u64) -> Result<(), String> {
    if head.starts_with(PARQUET_ENCRYPTED) {
        return Err("is an encrypted Parquet file (footer encryption, magic `PARE`); the sandbox has no key to read it — write it without encryption".into());
    }
    if !head.starts_with(PARQUET) {
        return Err(if size == 0 {
            "is empty, not a Parquet file; write the Parquet file again".into()
        } else {
            "is not a Parquet file (it does not start with `PAR1`): corrupt, or another format with a .parquet name — write it again as Parquet (e.g. DataFrame.to_parquet) or rename it to its real extension".into()
        });
    }
    if size < 12 || tail != PARQUET {
        return Err("is not a complete Parquet file (it does not end with `PAR1`): truncated — cut off while it was written or copied (a Git LFS pointer?); write or copy it again".into());
    }
    Ok(())
}

fn excel(head: &[u8]) -> Result<(), String> {
    if head.starts_with(OLE) {
        return Err("is an encrypted or legacy Excel file (an OLE compound file, not a zip); save it as an unencrypted .xlsx (Excel: File → Info → Protect Workbook → remove the password, then Save As → Excel Workbook)".into());
    }
    if !head.starts_with(ZIP) {
        return Err("is not an Excel .xlsx file (an .xlsx is a zip archive starting with `PK`): corrupt, or another format with an .xlsx name — save it again as an Excel Workbook (.xlsx)".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_bytes(name: &str, bytes: &[u8]) -> Result<(), String> {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        check(&p, bytes.len() as u64)
    }

    #[test]
    fn parquet_needs_par1_at_both_ends() {
        assert!(check_bytes("a.parquet", b"PAR1\x15\x04\x15\x00\x00\x00PAR1").is_ok());
        let e = check_bytes("a.parquet", b"PAR1\x15\x04\x15\x00\x00\x00").unwrap_err();
        assert!(e.contains("does not end with `PAR1`"), "{e}");
        let e = check_bytes("a.PARQUET", b"a,b\n1,2\n").unwrap_err();
        assert!(e.contains("does not start with `PAR1`"), "{e}");
        let e = check_bytes("a.parquet", b"PARE\x00\x00\x00\x00\x00PARE").unwrap_err();
        assert!(e.contains("encrypted Parquet"), "{e}");
        let e = check_bytes("a.parquet", b"").unwrap_err();
        assert!(e.contains("empty"), "{e}");
        // The magic alone, start and end overlapping, is not a file.
        assert!(check_bytes("a.parquet", b"PAR1PAR1").is_err());
    }

    #[test]
    fn xlsx_must_be_a_zip_and_ole_means_encrypted_or_legacy() {
        assert!(check_bytes("b.xlsx", b"PK\x03\x04\x14\x00\x06\x00rest").is_ok());
        let mut ole = OLE.to_vec();
        ole.extend_from_slice(&[0; 504]);
        let e = check_bytes("b.xlsx", &ole).unwrap_err();
        assert!(
            e.contains("encrypted or legacy Excel file")
                && e.contains("save it as an unencrypted .xlsx"),
            "{e}"
        );
        let e = check_bytes("b.xlsm", b"<html>not excel</html>").unwrap_err();
        assert!(e.contains("not an Excel .xlsx file"), "{e}");
    }

    #[test]
    fn other_extensions_are_not_sniffed() {
        assert!(check_bytes("c.csv", b"PAR1").is_ok());
        assert!(check_bytes("c.json", &OLE[..]).is_ok());
    }
}
