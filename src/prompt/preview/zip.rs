//! A small zip reader for the `.xlsx` preview: the entries from the central
//! directory (or, for a file's head, from the local headers), and an
//! entry's contents streamed through a fixed buffer under a budget of
//! decompressed bytes — a zip bomb costs at most the budget in time and
//! nothing in memory.

use miniz_oxide::inflate::stream::{InflateState, inflate};
use miniz_oxide::{DataFormat, MZFlush, MZStatus};

const LOCAL: u32 = 0x0403_4b50;
const CENTRAL: u32 = 0x0201_4b50;
const END: u32 = 0x0605_4b50;
/// The output buffer an entry is streamed through.
const CHUNK: usize = 64 * 1024;

/// One stored file of the archive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    /// The path inside the archive (`xl/workbook.xml`).
    pub name: String,
    method: u16,
    encrypted: bool,
    compressed: usize,
    /// Where the entry's local header starts.
    local: usize,
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// The entries of the zip archive `bytes`: from its central directory when
/// `bytes` is the whole file, else (a file's head) from the local headers
/// that carry their sizes. `Err` says why the archive cannot be listed.
pub(crate) fn entries(bytes: &[u8], whole: bool) -> Result<Vec<Entry>, String> {
    if whole {
        central(bytes)
    } else {
        Ok(local_headers(bytes))
    }
}

fn central(b: &[u8]) -> Result<Vec<Entry>, String> {
    let from = b.len().saturating_sub(22 + 65_535);
    let end = (from..b.len().saturating_sub(21))
        .rev()
        .find(|&i| u32_at(b, i) == Some(END))
        .ok_or("no zip end-of-directory record (not a zip, or truncated)")?;
    let count = usize::from(u16_at(b, end + 10).unwrap_or(0));
    let offset = u32_at(b, end + 16).unwrap_or(u32::MAX);
    if offset == u32::MAX || count == 0xFFFF {
        return Err("a ZIP64 archive (not read by this preview)".into());
    }
    let mut at = offset as usize;
    let mut out = Vec::with_capacity(count.min(4096));
    for _ in 0..count {
        if u32_at(b, at) != Some(CENTRAL) {
            return Err("a damaged zip central directory".into());
        }
        let field = |o: usize| u16_at(b, at + o).map(usize::from).unwrap_or(0);
        let (name_len, extra, comment) = (field(28), field(30), field(32));
        let name = b
            .get(at + 46..at + 46 + name_len)
            .ok_or("a cut zip entry name")?;
        out.push(Entry {
            name: String::from_utf8_lossy(name).into_owned(),
            method: u16_at(b, at + 10).unwrap_or(0),
            encrypted: u16_at(b, at + 8).unwrap_or(0) & 1 == 1,
            compressed: u32_at(b, at + 20).unwrap_or(0) as usize,
            local: u32_at(b, at + 42).unwrap_or(u32::MAX) as usize,
        });
        at += 46 + name_len + extra + comment;
    }
    Ok(out)
}

fn local_headers(b: &[u8]) -> Vec<Entry> {
    let mut out = Vec::new();
    let mut at = 0;
    while u32_at(b, at) == Some(LOCAL) {
        let flags = u16_at(b, at + 6).unwrap_or(0);
        let compressed = u32_at(b, at + 18).unwrap_or(0) as usize;
        let name_len = usize::from(u16_at(b, at + 26).unwrap_or(0));
        let extra = usize::from(u16_at(b, at + 28).unwrap_or(0));
        // Sizes after the data (bit 3): the next header cannot be found.
        if flags & 8 != 0 {
            break;
        }
        let Some(name) = b.get(at + 30..at + 30 + name_len) else {
            break;
        };
        out.push(Entry {
            name: String::from_utf8_lossy(name).into_owned(),
            method: u16_at(b, at + 8).unwrap_or(0),
            encrypted: flags & 1 == 1,
            compressed,
            local: at,
        });
        at += 30 + name_len + extra + compressed;
    }
    out
}

/// Decompressed bytes still allowed for the whole preview of one archive.
#[derive(Debug)]
pub(crate) struct Budget(pub usize);

/// How streaming an entry ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Streamed {
    /// The whole entry went through.
    Whole,
    /// The reader asked to stop.
    Stopped,
    /// The budget ran out (or the entry lies past a file's head).
    Partial,
}

/// Streams `entry`'s decompressed contents to `read` in chunks of at most
/// 64 KiB until it returns `false`, the entry ends or `budget` runs out.
pub(crate) fn stream(
    archive: &[u8],
    entry: &Entry,
    budget: &mut Budget,
    mut read: impl FnMut(&[u8]) -> bool,
) -> Result<Streamed, String> {
    if entry.encrypted {
        return Err(format!("{} is encrypted", entry.name));
    }
    let name_len = usize::from(u16_at(archive, entry.local + 26).unwrap_or(0));
    let extra = usize::from(u16_at(archive, entry.local + 28).unwrap_or(0));
    if u32_at(archive, entry.local) != Some(LOCAL) {
        return Err(format!("{}: no local zip header", entry.name));
    }
    let start = entry.local + 30 + name_len + extra;
    let end = start.saturating_add(entry.compressed).min(archive.len());
    let data = archive.get(start..end).unwrap_or_default();
    let short = end - start.min(end) < entry.compressed;
    match entry.method {
        0 => {
            for chunk in data.chunks(CHUNK) {
                let take = chunk.len().min(budget.0);
                budget.0 -= take;
                if !read(&chunk[..take]) {
                    return Ok(Streamed::Stopped);
                }
                if take < chunk.len() {
                    return Ok(Streamed::Partial);
                }
            }
            Ok(if short {
                Streamed::Partial
            } else {
                Streamed::Whole
            })
        }
        8 => inflate_entry(data, budget, read),
        m => Err(format!(
            "{}: zip compression method {m} not read",
            entry.name
        )),
    }
}

fn inflate_entry(
    mut data: &[u8],
    budget: &mut Budget,
    mut read: impl FnMut(&[u8]) -> bool,
) -> Result<Streamed, String> {
    let mut state = InflateState::new_boxed(DataFormat::Raw);
    let mut buf = vec![0u8; CHUNK];
    loop {
        let room = CHUNK.min(budget.0);
        if room == 0 {
            return Ok(Streamed::Partial);
        }
        let r = inflate(&mut state, data, &mut buf[..room], MZFlush::None);
        data = &data[r.bytes_consumed..];
        budget.0 -= r.bytes_written;
        if r.bytes_written > 0 && !read(&buf[..r.bytes_written]) {
            return Ok(Streamed::Stopped);
        }
        match r.status {
            Ok(MZStatus::StreamEnd) => return Ok(Streamed::Whole),
            Ok(_) if r.bytes_written == 0 && r.bytes_consumed == 0 => {
                return Ok(Streamed::Partial);
            }
            Ok(_) => {}
            Err(miniz_oxide::MZError::Buf) => return Ok(Streamed::Partial),
            Err(e) => return Err(format!("damaged deflate data ({e:?})")),
        }
    }
}

/// A small zip writer for tests: stored or deflated entries, with a
/// central directory.
#[cfg(test)]
pub(crate) fn write_zip(files: &[(&str, &[u8])], deflate: bool) -> Vec<u8> {
    let mut out = Vec::new();
    let mut central = Vec::new();
    for (name, data) in files {
        let body = if deflate {
            miniz_oxide::deflate::compress_to_vec(data, 6)
        } else {
            data.to_vec()
        };
        let method: u16 = if deflate { 8 } else { 0 };
        let offset = out.len() as u32;
        let header = |sig: u32, central_dir: bool| {
            let mut h = Vec::new();
            h.extend(sig.to_le_bytes());
            if central_dir {
                h.extend(20u16.to_le_bytes());
            }
            h.extend(20u16.to_le_bytes());
            h.extend(0u16.to_le_bytes());
            h.extend(method.to_le_bytes());
            h.extend([0u8; 8]); // time, date, crc (not checked here)
            h.extend((body.len() as u32).to_le_bytes());
            h.extend((data.len() as u32).to_le_bytes());
            h.extend((name.len() as u16).to_le_bytes());
            h.extend(0u16.to_le_bytes());
            if central_dir {
                h.extend([0u8; 6]); // comment length, disk, internal attributes
                h.extend(0u32.to_le_bytes());
                h.extend(offset.to_le_bytes());
            }
            h.extend(name.as_bytes());
            h
        };
        out.extend(header(LOCAL, false));
        central.extend(header(CENTRAL, true));
        out.extend(&body);
    }
    let at = out.len() as u32;
    let n = files.len() as u16;
    out.extend(&central);
    out.extend(END.to_le_bytes());
    out.extend([0u8; 4]);
    out.extend(n.to_le_bytes());
    out.extend(n.to_le_bytes());
    out.extend((central.len() as u32).to_le_bytes());
    out.extend(at.to_le_bytes());
    out.extend(0u16.to_le_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(z: &[u8], e: &Entry, budget: usize) -> (Vec<u8>, Streamed) {
        let mut got = Vec::new();
        let how = stream(z, e, &mut Budget(budget), |c| {
            got.extend(c);
            true
        })
        .unwrap();
        (got, how)
    }

    #[test]
    fn entries_come_from_the_central_directory_or_the_local_headers() {
        let z = write_zip(&[("a.xml", b"<a/>"), ("b/c.xml", b"hello")], true);
        let all = entries(&z, true).unwrap();
        let names: Vec<&str> = all.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["a.xml", "b/c.xml"]);
        assert_eq!(
            read_all(&z, &all[1], 1 << 20),
            (b"hello".to_vec(), Streamed::Whole)
        );
        let head = entries(&z[..z.len() - 10], false).unwrap();
        assert_eq!(head, all);
        let stored = write_zip(&[("s", b"stored bytes")], false);
        let e = &entries(&stored, true).unwrap()[0];
        assert_eq!(
            read_all(&stored, e, 6),
            (b"stored".to_vec(), Streamed::Partial)
        );
        assert!(entries(b"PK\x03\x04 not a zip", true).is_err());
    }

    /// 64 MiB of zeros deflate to about 64 KiB: streaming it under a 1 MiB
    /// budget stops at the budget, and no buffer grows with the entry.
    #[test]
    fn a_zip_bomb_stops_at_the_budget() {
        let zeros = vec![0u8; 64 << 20];
        let z = write_zip(&[("bomb.xml", &zeros)], true);
        assert!(z.len() < 1 << 20, "{}", z.len());
        let e = &entries(&z, true).unwrap()[0];
        let mut seen = 0usize;
        let mut biggest = 0;
        let how = stream(&z, e, &mut Budget(1 << 20), |c| {
            seen += c.len();
            biggest = biggest.max(c.len());
            true
        })
        .unwrap();
        assert_eq!((how, seen), (Streamed::Partial, 1 << 20));
        assert!(biggest <= CHUNK);
    }
}
