//! The object store behind the GitHub stand-in's repositories: Git objects
//! under their real ids (SHA-1 over Git's object encoding, so a blob's id is
//! what `git hash-object` prints), trees sorted and encoded as Git does,
//! commits with their parents, and refs. No HTTP here: `github_git.rs`
//! serves it.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use serde_json::{Value, json};

/// SHA-1 (FIPS 180-4), as Git names its objects.
pub fn sha1(data: &[u8]) -> [u8; 20] {
    let mut h: [u32; 5] = [
        0x6745_2301,
        0xEFCD_AB89,
        0x98BA_DCFE,
        0x1032_5476,
        0xC3D2_E1F0,
    ];
    let mut msg = data.to_vec();
    let bits = (data.len() as u64).wrapping_mul(8);
    msg.push(0x80);
    while msg.len() % 64 != 56 {
        msg.push(0);
    }
    msg.extend_from_slice(&bits.to_be_bytes());
    for block in msg.chunks(64) {
        let mut w = [0u32; 80];
        for (i, word) in block.chunks(4).enumerate() {
            w[i] = u32::from_be_bytes([word[0], word[1], word[2], word[3]]);
        }
        for i in 16..80 {
            w[i] = (w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16]).rotate_left(1);
        }
        let [mut a, mut b, mut c, mut d, mut e] = h;
        for (i, wi) in w.iter().enumerate() {
            let (f, k) = match i {
                0..=19 => ((b & c) | (!b & d), 0x5A82_7999),
                20..=39 => (b ^ c ^ d, 0x6ED9_EBA1),
                40..=59 => ((b & c) | (b & d) | (c & d), 0x8F1B_BCDC),
                _ => (b ^ c ^ d, 0xCA62_C1D6),
            };
            let t = a
                .rotate_left(5)
                .wrapping_add(f)
                .wrapping_add(e)
                .wrapping_add(k)
                .wrapping_add(*wi);
            e = d;
            d = c;
            c = b.rotate_left(30);
            b = a;
            a = t;
        }
        for (x, y) in h.iter_mut().zip([a, b, c, d, e]) {
            *x = x.wrapping_add(y);
        }
    }
    let mut out = [0u8; 20];
    for (i, x) in h.iter().enumerate() {
        out[4 * i..4 * i + 4].copy_from_slice(&x.to_be_bytes());
    }
    out
}

/// The Git id of an object of `kind` (`blob`, `tree`, `commit`) with `body`.
pub fn object_sha(kind: &str, body: &[u8]) -> String {
    let mut data = format!("{kind} {}\0", body.len()).into_bytes();
    data.extend_from_slice(body);
    hex::encode(sha1(&data))
}

/// The Git id of a file's content (what `git hash-object` prints).
pub fn blob_sha(content: &[u8]) -> String {
    object_sha("blob", content)
}

/// Base64 as GitHub sends file and blob content: lines of 60 characters,
/// each ending in a newline.
pub fn github_base64(bytes: &[u8]) -> String {
    let flat = B64.encode(bytes);
    let mut out = String::with_capacity(flat.len() + flat.len() / 60 + 1);
    for line in flat.as_bytes().chunks(60) {
        out.push_str(std::str::from_utf8(line).unwrap());
        out.push('\n');
    }
    out
}

/// One tree entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Entry {
    /// `100644`, `100755`, `120000`, `160000` or `040000`.
    pub(super) mode: String,
    pub(super) name: String,
    pub(super) sha: String,
}

pub(super) fn kind_of_mode(mode: &str) -> &'static str {
    match mode {
        "040000" => "tree",
        "160000" => "commit",
        _ => "blob",
    }
}

/// A commit's author or committer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signature {
    /// Name.
    pub name: String,
    /// Email.
    pub email: String,
    /// Seconds since the epoch (UTC).
    pub time: i64,
}

impl Signature {
    pub(super) fn json(&self) -> Value {
        let date = chrono::DateTime::from_timestamp(self.time, 0)
            .unwrap_or_default()
            .to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
        json!({ "name": self.name, "email": self.email, "date": date })
    }

    pub(super) fn of(login: &str) -> Signature {
        Signature {
            name: login.to_string(),
            email: format!("{}@users.noreply.github.com", login.replace(['[', ']'], "")),
            time: chrono::Utc::now().timestamp(),
        }
    }
}

/// A stored commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitInfo {
    /// Its tree.
    pub tree: String,
    /// Its parents, in order.
    pub parents: Vec<String>,
    /// Author.
    pub author: Signature,
    /// Committer.
    pub committer: Signature,
    /// Message.
    pub message: String,
}

#[derive(Debug, Clone)]
pub(super) enum Object {
    Blob(Vec<u8>),
    Tree(Vec<Entry>),
    Commit(CommitInfo),
}

impl Object {
    /// The Git encoding: its kind and body.
    pub(super) fn encode(&self) -> (&'static str, Vec<u8>) {
        match self {
            Object::Blob(b) => ("blob", b.clone()),
            Object::Tree(entries) => {
                let mut body = Vec::new();
                for e in sorted(entries) {
                    let mode = if e.mode == "040000" { "40000" } else { &e.mode };
                    body.extend_from_slice(format!("{mode} {}\0", e.name).as_bytes());
                    body.extend_from_slice(&hex::decode(&e.sha).expect("a hex sha"));
                }
                ("tree", body)
            }
            Object::Commit(c) => {
                let mut text = format!("tree {}\n", c.tree);
                for p in &c.parents {
                    text.push_str(&format!("parent {p}\n"));
                }
                for (role, s) in [("author", &c.author), ("committer", &c.committer)] {
                    text.push_str(&format!(
                        "{role} {} <{}> {} +0000\n",
                        s.name, s.email, s.time
                    ));
                }
                text.push('\n');
                text.push_str(&c.message);
                ("commit", text.into_bytes())
            }
        }
    }
}

/// Git's tree order: by name, a subtree compared as if its name ended in `/`.
pub(super) fn sorted(entries: &[Entry]) -> Vec<Entry> {
    let mut v = entries.to_vec();
    let key = |e: &Entry| {
        let mut k = e.name.clone().into_bytes();
        if e.mode == "040000" {
            k.push(b'/');
        }
        k
    };
    v.sort_by_key(key);
    v
}

/// A file change for seeding branches and pull requests.
#[derive(Debug, Clone)]
pub enum Change {
    /// Create or replace a file.
    Put(String, Vec<u8>),
    /// Delete a file.
    Delete(String),
    /// Move a file (content kept).
    Rename(String, String),
}

impl Change {
    /// Create or replace `path` with `bytes`.
    pub fn put(path: &str, bytes: impl AsRef<[u8]>) -> Change {
        Change::Put(path.to_string(), bytes.as_ref().to_vec())
    }

    /// Delete `path`.
    pub fn delete(path: &str) -> Change {
        Change::Delete(path.to_string())
    }

    /// Move `from` to `to`.
    pub fn rename(from: &str, to: &str) -> Change {
        Change::Rename(from.to_string(), to.to_string())
    }
}

/// Path → (mode, blob sha): a tree's files, flattened.
pub(super) type Flat = BTreeMap<String, (String, String)>;

/// One repository's objects and refs.
#[derive(Debug, Default)]
pub(super) struct Store {
    pub(super) objects: HashMap<String, Object>,
    /// `refs/heads/main` → commit sha.
    pub(super) refs: BTreeMap<String, String>,
    /// The branch `contents` reads without `ref` (the first one created).
    pub(super) default_branch: Option<String>,
    /// Successful writes through the API (blobs, trees, commits, refs).
    pub(super) writes: usize,
}

impl Store {
    pub(super) fn put(&mut self, obj: Object) -> String {
        let (kind, body) = obj.encode();
        let sha = object_sha(kind, &body);
        self.objects.entry(sha.clone()).or_insert(obj);
        sha
    }

    pub(super) fn blob(&self, sha: &str) -> Option<&Vec<u8>> {
        match self.objects.get(sha) {
            Some(Object::Blob(b)) => Some(b),
            _ => None,
        }
    }

    pub(super) fn tree(&self, sha: &str) -> Option<&Vec<Entry>> {
        match self.objects.get(sha) {
            Some(Object::Tree(t)) => Some(t),
            _ => None,
        }
    }

    pub(super) fn commit(&self, sha: &str) -> Option<&CommitInfo> {
        match self.objects.get(sha) {
            Some(Object::Commit(c)) => Some(c),
            _ => None,
        }
    }

    pub(super) fn flatten(&self, tree: &str) -> Flat {
        let mut out = Flat::new();
        self.flatten_into(tree, "", &mut out);
        out
    }

    pub(super) fn flatten_into(&self, tree: &str, prefix: &str, out: &mut Flat) {
        for e in self.tree(tree).cloned().unwrap_or_default() {
            let path = format!("{prefix}{}", e.name);
            if e.mode == "040000" {
                self.flatten_into(&e.sha, &format!("{path}/"), out);
            } else {
                out.insert(path, (e.mode, e.sha));
            }
        }
    }

    /// Writes the trees of a flat file list; returns the root tree.
    pub(super) fn build_tree(&mut self, flat: &Flat) -> String {
        let mut entries = Vec::new();
        let mut subdirs: BTreeMap<String, Flat> = BTreeMap::new();
        for (path, (mode, sha)) in flat {
            match path.split_once('/') {
                Some((dir, rest)) => {
                    subdirs
                        .entry(dir.to_string())
                        .or_default()
                        .insert(rest.to_string(), (mode.clone(), sha.clone()));
                }
                None => entries.push(Entry {
                    mode: mode.clone(),
                    name: path.clone(),
                    sha: sha.clone(),
                }),
            }
        }
        for (dir, sub) in subdirs {
            let sha = self.build_tree(&sub);
            entries.push(Entry {
                mode: "040000".into(),
                name: dir,
                sha,
            });
        }
        self.put(Object::Tree(sorted(&entries)))
    }

    /// A commit sha for a branch name, `heads/x`, `refs/...` name or commit sha.
    pub(super) fn resolve(&self, rev: &str) -> Option<String> {
        if self.commit(rev).is_some() {
            return Some(rev.to_string());
        }
        [
            rev.to_string(),
            format!("refs/{rev}"),
            format!("refs/heads/{rev}"),
            format!("refs/tags/{rev}"),
        ]
        .iter()
        .find_map(|r| self.refs.get(r).cloned())
    }

    /// True when `ancestor` is `of` or reachable from it through parents.
    pub(super) fn is_ancestor(&self, ancestor: &str, of: &str) -> bool {
        let mut todo = vec![of.to_string()];
        let mut seen = BTreeSet::new();
        while let Some(c) = todo.pop() {
            if c == ancestor {
                return true;
            }
            if seen.insert(c.clone())
                && let Some(commit) = self.commit(&c)
            {
                todo.extend(commit.parents.iter().cloned());
            }
        }
        false
    }

    /// Applies `changes` to the files of `parent` (none for an orphan) and
    /// writes the commit.
    pub(super) fn commit_changes(
        &mut self,
        parent: Option<&str>,
        changes: &[Change],
        message: &str,
        author: &str,
    ) -> String {
        let mut flat = parent
            .and_then(|p| self.commit(p))
            .map(|c| c.tree.clone())
            .map(|t| self.flatten(&t))
            .unwrap_or_default();
        for change in changes {
            match change {
                Change::Put(path, bytes) => {
                    let sha = self.put(Object::Blob(bytes.clone()));
                    flat.insert(path.clone(), ("100644".into(), sha));
                }
                Change::Delete(path) => {
                    flat.remove(path)
                        .unwrap_or_else(|| panic!("no {path} to delete"));
                }
                Change::Rename(from, to) => {
                    let e = flat
                        .remove(from)
                        .unwrap_or_else(|| panic!("no {from} to move"));
                    flat.insert(to.clone(), e);
                }
            }
        }
        let tree = self.build_tree(&flat);
        let sig = Signature::of(author);
        self.put(Object::Commit(CommitInfo {
            tree,
            parents: parent.into_iter().map(str::to_string).collect(),
            author: sig.clone(),
            committer: sig,
            message: message.to_string(),
        }))
    }

    /// Commits `changes` on top of `branch` (an orphan when it does not
    /// exist) and moves the branch there.
    pub(super) fn commit_to_branch(
        &mut self,
        branch: &str,
        changes: &[Change],
        message: &str,
        author: &str,
    ) -> String {
        let name = format!("refs/heads/{branch}");
        let parent = self.refs.get(&name).cloned();
        let sha = self.commit_changes(parent.as_deref(), changes, message, author);
        self.refs.insert(name, sha.clone());
        self.default_branch
            .get_or_insert_with(|| branch.to_string());
        sha
    }
}
