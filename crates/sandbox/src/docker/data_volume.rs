//! A disk-backed `/data` for big inputs ([`Limits::data_on_disk`]): an
//! anonymous volume on the engine's disk instead of a tmpfs, whose pages
//! would be charged to the container's memory limit.
//!
//! The volume is created with the container and removed with it (the
//! removal passes `v=true`, [`super::engine::remove`]). Its root is owned by
//! root (0755, from the image's `/data`), and the inputs are copied in by
//! the engine through the archive endpoint as root-owned files of mode
//! 0444 (the bot's `github/` folder, when there is one, as a root-owned
//! directory of mode 0555), so the code (uid 10001, no capabilities) can read them but cannot
//! write, create, chmod or delete anything there: the volume cannot be used
//! to fill the engine's disk. The tar archive is streamed from the input
//! files in chunks ([`InputFile::chunks`]); nothing is held whole.
//!
//! [`Limits::data_on_disk`]: super::super::Limits::data_on_disk

use bollard::Docker as Bollard;
use bollard::models::{Mount, MountType};
use bollard::query_parameters::UploadToContainerOptions;
use futures_util::{Stream, StreamExt};
use std::sync::{Arc, Mutex};

use super::super::{InputChanged, InputFile, SandboxError};

/// Where the inputs appear in the container.
const DATA: &str = "/data";

/// The `/data` mount: an anonymous volume.
pub(super) fn mount() -> Mount {
    Mount {
        target: Some(DATA.into()),
        typ: Some(MountType::VOLUME),
        read_only: Some(false),
        ..Default::default()
    }
}

/// Copies `inputs` into the container's `/data` volume as one streamed tar
/// archive. An input that changed since admission ends the archive early
/// and is returned as [`SandboxError::BadInput`].
pub(super) async fn upload(
    docker: &Bollard,
    container: &str,
    inputs: &[InputFile],
) -> Result<(), SandboxError> {
    if inputs.is_empty() {
        return Ok(());
    }
    let changed: Arc<Mutex<Option<InputChanged>>> = Arc::default();
    let seen = changed.clone();
    let body = archive(inputs.to_vec()).map(move |item| {
        item.map(Into::into).map_err(|c| {
            let e = std::io::Error::other(c.problem.clone());
            *seen.lock().unwrap_or_else(|p| p.into_inner()) = Some(c);
            e
        })
    });
    let options = UploadToContainerOptions {
        path: DATA.into(),
        ..Default::default()
    };
    let r = docker
        .upload_to_container(container, Some(options), bollard::body_try_stream(body))
        .await;
    if let Some(c) = changed.lock().unwrap_or_else(|p| p.into_inner()).take() {
        return Err(SandboxError::BadInput {
            name: c.name,
            problem: c.problem,
        });
    }
    r.map_err(|e| SandboxError::Engine {
        action: "copying the inputs into the /data volume",
        detail: e.to_string(),
    })
}

/// The tar archive of `inputs`, chunk by chunk: per file a header, its
/// bytes and the padding to 512; then the two empty end blocks. The first
/// file in a folder (the job check allows only the bot's `github/`) is
/// preceded by the folder's entry: root-owned, mode 0555, like `/data`.
fn archive(inputs: Vec<InputFile>) -> impl Stream<Item = Result<Vec<u8>, InputChanged>> + Send {
    let mut folders: Vec<String> = Vec::new();
    let files = futures_util::stream::iter(inputs).flat_map(move |f| {
        let size = f.size();
        let mut heads = Vec::new();
        if let Some((dir, _)) = f.name.rsplit_once('/')
            && !folders.iter().any(|d| d == dir)
        {
            folders.push(dir.to_string());
            heads.push(Ok(
                block(format!("{dir}/").as_bytes(), 0, b'5', 0o555).to_vec()
            ));
        }
        heads.push(Ok(header(&f.name, size)));
        let head = futures_util::stream::iter(heads);
        let pad = (512 - (size % 512) as usize) % 512;
        let tail = futures_util::stream::iter((pad > 0).then(|| Ok(vec![0u8; pad])));
        head.chain(f.chunks()).chain(tail)
    });
    files.chain(futures_util::stream::iter([Ok(vec![0u8; 1024])]))
}

/// The header block(s) of a regular file `name` of `size` bytes: root-owned,
/// mode 0444, mtime 0. A name longer than 100 bytes goes first in a GNU
/// long-name entry.
fn header(name: &str, size: u64) -> Vec<u8> {
    let mut out = Vec::new();
    let bytes = name.as_bytes();
    if bytes.len() > 100 {
        let mut long = bytes.to_vec();
        long.push(0);
        out.extend(block(
            "././@LongLink".as_bytes(),
            long.len() as u64,
            b'L',
            0o444,
        ));
        let pad = (512 - long.len() % 512) % 512;
        out.extend_from_slice(&long);
        out.extend(std::iter::repeat_n(0, pad));
    }
    out.extend(block(&bytes[..bytes.len().min(100)], size, b'0', 0o444));
    out
}

fn block(name: &[u8], size: u64, kind: u8, mode: u64) -> [u8; 512] {
    let mut h = [0u8; 512];
    h[..name.len()].copy_from_slice(name);
    octal(&mut h[100..108], mode);
    octal(&mut h[108..116], 0);
    octal(&mut h[116..124], 0);
    if size < 8u64.pow(11) {
        octal(&mut h[124..136], size);
    } else {
        // Base-256 (GNU), for files of 8 GiB and more.
        h[124] = 0x80;
        h[128..136].copy_from_slice(&size.to_be_bytes());
    }
    octal(&mut h[136..148], 0);
    h[156] = kind;
    h[257..263].copy_from_slice(b"ustar\0");
    h[263..265].copy_from_slice(b"00");
    h[148..156].copy_from_slice(b"        ");
    let sum: u32 = h.iter().map(|&b| u32::from(b)).sum();
    let text = format!("{sum:06o}\0 ");
    h[148..156].copy_from_slice(text.as_bytes());
    h
}

/// Writes `v` as zero-padded octal digits, NUL-terminated, filling `field`.
fn octal(field: &mut [u8], v: u64) {
    let digits = field.len() - 1;
    let text = format!("{v:0digits$o}");
    field[..digits].copy_from_slice(&text.as_bytes()[text.len() - digits..]);
    field[digits] = 0;
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn tar_of(inputs: Vec<InputFile>) -> Vec<u8> {
        let mut out = Vec::new();
        let mut s = std::pin::pin!(archive(inputs));
        while let Some(c) = s.next().await {
            out.extend(c.unwrap());
        }
        out
    }

    /// The archive is read back by the system's `tar`, the same format the
    /// engine extracts: names (also one over 100 bytes), sizes, mode 0444,
    /// root, contents.
    #[tokio::test]
    async fn the_archive_is_a_tar_the_system_tar_reads() {
        let long = format!("{}.csv", "l".repeat(120));
        let tar = tar_of(vec![
            InputFile::new("a.csv", b"a,b\n1,2\n".to_vec()),
            InputFile::new(long.clone(), vec![b'x'; 1500]),
            InputFile::new("empty.txt", Vec::new()),
            InputFile::new("github/pulls.csv", b"number\n1\n".to_vec()),
            InputFile::new("github/reviews.csv", b"pull_number\n".to_vec()),
        ])
        .await;
        assert_eq!(tar.len() % 512, 0);
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("in.tar");
        std::fs::write(&p, &tar).unwrap();
        let list = std::process::Command::new("tar")
            .args(["-tvf"])
            .arg(&p)
            .arg("--numeric-owner")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&list.stdout);
        assert!(list.status.success(), "{text}");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 6, "{text}");
        // The bot's folder comes once, before its files, read-only.
        assert!(
            lines[3].starts_with("dr-xr-xr-x 0/0") && lines[3].ends_with(" github/"),
            "{text}"
        );
        assert!(
            lines[4].ends_with(" github/pulls.csv") && lines[5].ends_with(" github/reviews.csv")
        );
        assert!(lines[0].starts_with("-r--r--r-- 0/0") && lines[0].ends_with(" a.csv"));
        assert!(
            lines[1].contains(" 1500 ") && lines[1].ends_with(&long),
            "{text}"
        );
        let x = std::process::Command::new("tar")
            .args(["-xf"])
            .arg(&p)
            .arg("-C")
            .arg(d.path())
            .output()
            .unwrap();
        assert!(x.status.success());
        assert_eq!(
            std::fs::read(d.path().join("a.csv")).unwrap(),
            b"a,b\n1,2\n"
        );
        assert_eq!(std::fs::read(d.path().join(&long)).unwrap().len(), 1500);
        assert_eq!(
            std::fs::read(d.path().join("github/pulls.csv")).unwrap(),
            b"number\n1\n"
        );
    }

    #[test]
    fn sizes_of_8_gib_and_more_use_base_256() {
        let h = block(b"big.csv", 9 << 30, b'0', 0o444);
        assert_eq!(h[124], 0x80);
        assert_eq!(u64::from_be_bytes(h[128..136].try_into().unwrap()), 9 << 30);
        let h = block(b"small.csv", 1000, b'0', 0o444);
        assert_eq!(&h[124..136], b"00000001750\0");
    }
}
