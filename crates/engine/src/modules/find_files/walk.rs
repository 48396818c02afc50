//! The host's listing (GNU `find -printf`, NUL-separated fields) and Python's `os.walk`
//! order rebuilt from it: each directory's entries, files before directories (a link to a
//! directory counts as a directory, as `DirEntry.is_dir()` says), then each
//! subdirectory's walk in turn.

use std::collections::HashMap;

use super::filters::normpath;
use crate::error::{Error, ErrorKind, Result};

/// `find -printf` fields, one entry each: own type, type followed, permission bits,
/// uid, gid, owner, group, size, inode, device, links, atime, mtime, ctime, path
/// relative to the starting directory.
pub const FORMAT: &str =
    "%y\\0%Y\\0%m\\0%U\\0%G\\0%u\\0%g\\0%s\\0%i\\0%D\\0%n\\0%A@\\0%T@\\0%C@\\0%P\\0";
const FIELDS: usize = 15;

/// One entry under a searched directory.
#[derive(Debug, Clone, Default)]
pub struct Entry {
    /// Its own type (`f d l c b p s`), as `lstat` says.
    pub own: char,
    /// The type behind a link (`N` dangling, `L` loop).
    pub followed: char,
    /// Permission bits.
    pub mode: u32,
    pub uid: u64,
    pub gid: u64,
    /// Owner name; empty when the id has none.
    pub owner: String,
    /// Group name; empty when the id has none.
    pub group: String,
    pub size: u64,
    pub inode: u64,
    pub dev: u64,
    pub nlink: u64,
    pub atime: f64,
    pub mtime: f64,
    pub ctime: f64,
    /// Path relative to the searched directory.
    pub rel: String,
    /// 1 for the directory's own entries.
    pub depth: usize,
}

impl Entry {
    /// The entry's name (what patterns match).
    pub fn name(&self) -> &str {
        self.rel.rsplit('/').next().unwrap_or(&self.rel)
    }
}

/// One searched directory's entries, in `find`'s order.
#[derive(Debug, Default)]
pub struct Tree {
    /// The directory as the host's shell expanded it (`~` resolved).
    pub base: String,
    pub entries: Vec<Entry>,
}

impl Tree {
    /// The path Ansible reports: `normpath(base/rel)`.
    pub fn full_path(&self, e: &Entry) -> String {
        normpath(&format!("{}/{}", self.base, e.rel))
    }
}

/// What the listing script printed.
#[derive(Debug, Default)]
pub struct Listing {
    /// The host's clock when it listed.
    pub now: f64,
    /// Per path asked: its tree, or `None` when it is not a directory.
    pub trees: Vec<Option<Tree>>,
    /// Per path asked: as the host's shell expanded it.
    pub shown: Vec<String>,
}

fn malformed(what: &str) -> Error {
    Error::new(
        ErrorKind::Runtime,
        format!("find: the host's listing is malformed ({})", what),
    )
    .help("kk's find needs GNU find (findutils) on the host")
}

/// Parses the listing script's output.
pub fn parse_listing(out: &[u8]) -> Result<Listing> {
    let mut toks = out
        .split(|b| *b == 0)
        .map(|t| String::from_utf8_lossy(t).into_owned());
    let mut l = Listing::default();
    let now = toks.next().unwrap_or_default();
    l.now = now
        .strip_prefix("now=")
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| malformed("no time"))?;
    while let Some(t) = toks.next() {
        if t.is_empty() {
            // The split leaves an empty last piece.
            continue;
        }
        if let Some(rest) = t.strip_prefix("==kk-dir==") {
            let _: usize = rest.parse().map_err(|_| malformed("path index"))?;
            let base = toks.next().ok_or_else(|| malformed("path"))?;
            l.shown.push(base.clone());
            l.trees.push(Some(Tree {
                base,
                entries: Vec::new(),
            }));
            continue;
        }
        if let Some(rest) = t.strip_prefix("==kk-notdir==") {
            let _: usize = rest.parse().map_err(|_| malformed("path index"))?;
            l.shown.push(toks.next().ok_or_else(|| malformed("path"))?);
            l.trees.push(None);
            continue;
        }
        let mut f = vec![t];
        for _ in 1..FIELDS {
            f.push(toks.next().ok_or_else(|| malformed("short entry"))?);
        }
        let tree = l
            .trees
            .last_mut()
            .and_then(|t| t.as_mut())
            .ok_or_else(|| malformed("entry outside a directory"))?;
        tree.entries.push(entry(&f)?);
    }
    Ok(l)
}

fn entry(f: &[String]) -> Result<Entry> {
    let num = |i: usize| f[i].parse::<u64>().map_err(|_| malformed("number"));
    let time = |i: usize| f[i].parse::<f64>().map_err(|_| malformed("time"));
    let name = |name: &str, id: &str| {
        if name == id {
            String::new()
        } else {
            name.to_string()
        }
    };
    let rel = f[14].clone();
    Ok(Entry {
        own: f[0].chars().next().unwrap_or('U'),
        followed: f[1].chars().next().unwrap_or('U'),
        mode: u32::from_str_radix(&f[2], 8).map_err(|_| malformed("mode"))?,
        uid: num(3)?,
        gid: num(4)?,
        owner: name(&f[5], &f[3]),
        group: name(&f[6], &f[4]),
        size: num(7)?,
        inode: num(8)?,
        dev: num(9)?,
        nlink: num(10)?,
        atime: time(11)?,
        mtime: time(12)?,
        ctime: time(13)?,
        depth: rel.matches('/').count() + 1,
        rel,
    })
}

/// The directories `os.walk` visits, in its (top-down) order, each with its entries:
/// files first, then directories, each group in the directory's listing order.
pub fn walk_order(tree: &Tree) -> Vec<Vec<usize>> {
    let mut children: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, e) in tree.entries.iter().enumerate() {
        let parent = e.rel.rsplit_once('/').map(|(p, _)| p).unwrap_or("");
        children.entry(parent).or_default().push(i);
    }
    let mut out = Vec::new();
    let mut stack: Vec<&str> = vec![""];
    while let Some(dir) = stack.pop() {
        let kids = children.get(dir).cloned().unwrap_or_default();
        let is_dir = |i: &usize| tree.entries[*i].followed == 'd';
        let (dirs, files): (Vec<usize>, Vec<usize>) = kids.iter().partition(|i| is_dir(i));
        // Visited in order: push reversed.
        for d in dirs.iter().rev() {
            stack.push(tree.entries[*d].rel.as_str());
        }
        out.push(files.into_iter().chain(dirs).collect());
    }
    out
}
