//! `find`: lists files under directories on the host that pass Ansible's filters, with
//! each one's stat fields (Ansible's `find.py` result: `files`, `matched`, `examined`,
//! `msg`, `skipped_paths`). One round trip lists the trees (GNU `find -printf`, no Python);
//! the filters run on the controller in the order of Python's `os.walk`, rebuilt from
//! the listing. `contains` and `get_checksum` need the files themselves: one more round
//! trip each, for the candidates only.

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::args::{Flag, Int, List, Text};
use super::remote::{apply_mode, qpath, remote_error, Checksum};
use super::{parse_args, Module, ModuleContext, ModuleResult, VarMap};
use crate::connect::shell_quote;
use crate::error::{Error, ErrorKind, Result};

mod filters;
mod walk;

use filters::{age_ok, mode_ok, pfilter, size_ok, Matcher};
use walk::{parse_listing, walk_order, Entry};

crate::closed_set! {
    /// Which kinds of entries are reported.
    enum FileType for "file_type" {
        File = "file",
        Directory = "directory",
        Link = "link",
        Any = "any",
    }
}

crate::closed_set! {
    /// Which time `age` compares.
    enum AgeStamp for "age_stamp" { Mtime = "mtime", Atime = "atime", Ctime = "ctime" }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FindArgs {
    #[serde(default, alias = "name", alias = "path")]
    paths: List,
    #[serde(default, alias = "pattern")]
    patterns: List,
    #[serde(default, alias = "exclude")]
    excludes: List,
    #[serde(default)]
    contains: Option<Text>,
    #[serde(default)]
    read_whole_file: Flag,
    #[serde(default)]
    file_type: Option<FileType>,
    #[serde(default)]
    age: Option<Text>,
    #[serde(default)]
    age_stamp: Option<AgeStamp>,
    #[serde(default)]
    size: Option<Text>,
    #[serde(default)]
    recurse: Flag,
    #[serde(default)]
    hidden: Flag,
    #[serde(default)]
    follow: Flag,
    #[serde(default)]
    get_checksum: Flag,
    #[serde(default, alias = "checksum", alias = "checksum_algo")]
    checksum_algorithm: Option<Text>,
    #[serde(default)]
    use_regex: Flag,
    #[serde(default)]
    depth: Option<Int>,
    #[serde(default)]
    mode: Option<Value>,
    #[serde(default = "Flag::on")]
    exact_mode: Flag,
    #[serde(default)]
    encoding: Option<Text>,
    #[serde(default)]
    limit: Option<Int>,
}

const VALID: &[&str] = &[
    "paths",
    "patterns",
    "excludes",
    "contains",
    "read_whole_file",
    "file_type",
    "age",
    "age_stamp",
    "size",
    "recurse",
    "hidden",
    "follow",
    "get_checksum",
    "checksum_algorithm",
    "use_regex",
    "depth",
    "mode",
    "exact_mode",
    "encoding",
    "limit",
];

/// The arguments, checked.
struct Checked {
    paths: Vec<String>,
    patterns: Matcher,
    excludes: Matcher,
    contains: Option<Contains>,
    read_whole_file: bool,
    file_type: FileType,
    age: Option<i64>,
    age_stamp: AgeStamp,
    size: Option<i64>,
    recurse: bool,
    hidden: bool,
    follow: bool,
    checksum: Option<Checksum>,
    depth: Option<i64>,
    mode: Option<u32>,
    exact_mode: bool,
    limit: Option<i64>,
}

fn arg_err(msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::ModuleArgs, format!("find: {}", msg.into()))
}

fn check(raw: VarMap) -> Result<Checked> {
    let a: FindArgs = parse_args("find", raw, VALID)?;
    if a.paths.0.is_empty() {
        return Err(arg_err("`paths` is required").help("give a directory or a list of them"));
    }
    if let Some(e) = a.encoding.as_ref().map(Text::as_str) {
        let norm = e.to_ascii_lowercase().replace(['-', '_'], "");
        if norm != "utf8" {
            return Err(arg_err(format!("encoding {:?} is not supported", e))
                .help("kk reads files as UTF-8; drop `encoding`"));
        }
    }
    let use_regex = a.use_regex.0;
    let mut patterns = a.patterns.0;
    if patterns.is_empty() {
        patterns.push(if use_regex { ".*" } else { "*" }.to_string());
    }
    let patterns =
        Matcher::new(&patterns, use_regex).map_err(|e| arg_err(format!("`patterns`: {}", e)))?;
    let excludes = Matcher::new(&a.excludes.0, use_regex)
        .map_err(|e| arg_err(format!("`excludes`: {}", e)))?;
    let contains = a
        .contains
        .as_ref()
        .map(|c| {
            let bad = |e: String| {
                arg_err(format!(
                    "`contains` {:?} is not a valid regular expression: {}",
                    c.as_str(),
                    e
                ))
            };
            Ok::<_, Error>(Contains {
                anywhere: crate::ansible::pyre::compile(c.as_str(), false, false).map_err(bad)?,
                at_start: crate::ansible::pyre::compile(
                    &format!("\\A(?:{})", c.as_str()),
                    false,
                    false,
                )
                .map_err(bad)?,
            })
        })
        .transpose()?;
    let age = a
        .age
        .as_ref()
        .map(|s| {
            filters::parse_age(s.as_str()).ok_or_else(|| {
                arg_err(format!("failed to process age {:?}", s.as_str()))
                    .help("write a number with an optional unit: s, m, h, d or w (e.g. 2d, -1h)")
            })
        })
        .transpose()?;
    let size = a
        .size
        .as_ref()
        .map(|s| {
            filters::parse_size(s.as_str()).ok_or_else(|| {
                arg_err(format!("failed to process size {:?}", s.as_str()))
                    .help("write a number with an optional unit: b, k, m, g or t (e.g. 10k, -1m)")
            })
        })
        .transpose()?;
    let mode = match &a.mode {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.is_empty() => None,
        Some(Value::String(s)) => {
            Some(apply_mode(0, s, false).map_err(|e| arg_err(format!("`mode`: {}", e.message)))?)
        }
        Some(other) => {
            return Err(arg_err(format!(
                "argument 'mode' is not a string and conversion is not allowed (found {})",
                other
            ))
            .help("quote the mode: mode: \"0644\""))
        }
    };
    let checksum = if a.get_checksum.0 {
        let algo = a
            .checksum_algorithm
            .as_ref()
            .map(Text::as_str)
            .unwrap_or("sha1");
        Some(Checksum::parse(algo).ok_or_else(|| {
            arg_err(format!("unknown checksum_algorithm {:?}", algo))
                .help("one of md5, sha1, sha224, sha256, sha384, sha512")
        })?)
    } else {
        None
    };
    if let Some(Int(l)) = a.limit {
        if l <= 0 {
            return Err(arg_err(format!(
                "limit cannot be {} (use None for unlimited)",
                l
            )));
        }
    }
    Ok(Checked {
        paths: a.paths.0,
        patterns,
        excludes,
        contains,
        read_whole_file: a.read_whole_file.0,
        file_type: a.file_type.unwrap_or(FileType::File),
        age,
        age_stamp: a.age_stamp.unwrap_or(AgeStamp::Mtime),
        size,
        recurse: a.recurse.0,
        hidden: a.hidden.0,
        follow: a.follow.0,
        checksum,
        depth: a.depth.map(|Int(d)| d).filter(|d| *d != 0),
        mode,
        exact_mode: a.exact_mode.0,
        limit: a.limit.map(|Int(l)| l),
    })
}

/// The listing script: the host's time, then per path either its entries or "not a
/// directory".
fn list_script(c: &Checked) -> String {
    let maxdepth = if !c.recurse {
        Some(1)
    } else {
        c.depth.map(|d| d.max(0) + 1)
    };
    let mut s = String::from("LC_ALL=C; export LC_ALL\nprintf 'now=%s\\0' \"$(date +%s.%N)\"\n");
    for (i, p) in c.paths.iter().enumerate() {
        s.push_str(&format!("p={}\n", qpath(p)));
        s.push_str(&format!(
            "if [ -d \"$p\" ]; then\n  printf '==kk-dir==%s\\0%s\\0' {i} \"$p\"\n  find {} \"$p\" -mindepth 1{} -printf '{}' 2>/dev/null\nelse\n  printf '==kk-notdir==%s\\0%s\\0' {i} \"$p\"\nfi\n",
            if c.follow { "-L" } else { "-H" },
            maxdepth.map(|d| format!(" -maxdepth {}", d)).unwrap_or_default(),
            walk::FORMAT,
        ));
    }
    s
}

/// Ansible's per-entry result: the path and `statinfo`.
fn statinfo(path: &str, e: &Entry) -> Map<String, Value> {
    let m = e.mode;
    let t = e.own;
    let mut r = Map::new();
    let mut put = |k: &str, v: Value| {
        r.insert(k.to_string(), v);
    };
    put("path", path.into());
    put("mode", format!("{:04o}", m).into());
    put("isdir", (t == 'd').into());
    put("ischr", (t == 'c').into());
    put("isblk", (t == 'b').into());
    put("isreg", (t == 'f').into());
    put("isfifo", (t == 'p').into());
    put("islnk", (t == 'l').into());
    put("issock", (t == 's').into());
    put("uid", e.uid.into());
    put("gid", e.gid.into());
    put("size", e.size.into());
    put("inode", e.inode.into());
    put("dev", e.dev.into());
    put("nlink", e.nlink.into());
    put("atime", json!(e.atime));
    put("mtime", json!(e.mtime));
    put("ctime", json!(e.ctime));
    put("gr_name", e.group.clone().into());
    put("pw_name", e.owner.clone().into());
    for (k, bit) in [
        ("wusr", 0o200),
        ("rusr", 0o400),
        ("xusr", 0o100),
        ("wgrp", 0o020),
        ("rgrp", 0o040),
        ("xgrp", 0o010),
        ("woth", 0o002),
        ("roth", 0o004),
        ("xoth", 0o001),
        ("isuid", 0o4000),
        ("isgid", 0o2000),
    ] {
        put(k, (m & bit != 0).into());
    }
    r
}

/// Reads files on the host for `contains` (whole, as length-prefixed records) or their
/// checksums; `None` for a file that could not be read.
async fn per_file(
    ctx: &ModuleContext,
    paths: &[String],
    checksum: Option<Checksum>,
) -> Result<Vec<Option<Vec<u8>>>> {
    if paths.is_empty() {
        return Ok(Vec::new());
    }
    let mut s = String::from("LC_ALL=C; export LC_ALL\n");
    for p in paths {
        s.push_str(&format!("f={}\n", shell_quote(p)));
        match checksum {
            Some(c) => s.push_str(&format!(
                "if h=$({} < \"$f\" 2>/dev/null); then h=${{h%% *}}; printf '%s:%s' ${{#h}} \"$h\"; else printf -- '-:'; fi\n",
                sum_tool(c)
            )),
            None => s.push_str(
                "if [ -r \"$f\" ] && n=$(wc -c < \"$f\" 2>/dev/null); then printf '%s:' $n; head -c \"$n\" -- \"$f\"; else printf -- '-:'; fi\n",
            ),
        }
    }
    let out = ctx.exec(s, None).await?;
    if out.rc != 0 {
        return Err(remote_error(
            "find: cannot read the files on the host",
            &out,
        ));
    }
    let mut res = Vec::with_capacity(paths.len());
    let mut rest: &[u8] = &out.stdout;
    for _ in paths {
        let colon = rest.iter().position(|b| *b == b':').ok_or_else(|| {
            Error::new(ErrorKind::Runtime, "find: the host's answer was cut short")
        })?;
        let head = std::str::from_utf8(&rest[..colon]).unwrap_or("-");
        rest = &rest[colon + 1..];
        if head == "-" {
            res.push(None);
            continue;
        }
        let n: usize = head
            .trim()
            .parse()
            .map_err(|_| Error::new(ErrorKind::Runtime, "find: the host's answer is malformed"))?;
        let n = n.min(rest.len());
        res.push(Some(rest[..n].to_vec()));
        rest = &rest[n..];
    }
    Ok(res)
}

/// Python's `contentfilter`: a line (universal newlines) matching at its start
/// (`at_start` is the pattern anchored with `\A`), or with `read_whole_file` a search of
/// the whole text (`anywhere`). Non-UTF-8 files do not match.
fn contains_ok(c: &Contains, bytes: &[u8], whole: bool) -> bool {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return false;
    };
    let text = text.replace("\r\n", "\n").replace('\r', "\n");
    if whole {
        return c.anywhere.is_match(&text).unwrap_or(false);
    }
    text.split_inclusive('\n')
        .any(|line| c.at_start.is_match(line).unwrap_or(false))
}

/// `contains`, compiled for Python's `re.search` and `re.match`.
struct Contains {
    anywhere: fancy_regex::Regex,
    at_start: fancy_regex::Regex,
}

/// The coreutils tool computing a checksum.
fn sum_tool(c: Checksum) -> &'static str {
    match c {
        Checksum::Md5 => "md5sum",
        Checksum::Sha1 => "sha1sum",
        Checksum::Sha224 => "sha224sum",
        Checksum::Sha256 => "sha256sum",
        Checksum::Sha384 => "sha384sum",
        Checksum::Sha512 => "sha512sum",
    }
}

/// Finds files.
pub struct Find;

#[async_trait]
impl Module for Find {
    async fn run(&self, ctx: &ModuleContext, raw: VarMap) -> Result<ModuleResult> {
        let c = check(raw).map_err(|e| e.at_opt(ctx.span.as_ref()))?;
        let out = ctx.exec(list_script(&c), None).await?;
        if out.rc != 0 {
            return Err(remote_error("find: listing the paths failed", &out));
        }
        let listing = parse_listing(&out.stdout)?;
        let now = listing.now;
        let stamp = |e: &Entry| match c.age_stamp {
            AgeStamp::Mtime => e.mtime,
            AgeStamp::Atime => e.atime,
            AgeStamp::Ctime => e.ctime,
        };
        let mut skipped = Map::new();
        let mut warnings = Vec::new();
        let base_ok = |e: &Entry| -> bool {
            pfilter(e.name(), &c.patterns, &c.excludes)
                && age_ok(now, stamp(e), c.age)
                && mode_ok(e.mode, c.mode, c.exact_mode)
        };
        let in_depth = |e: &Entry| c.depth.is_none_or(|d| e.depth as i64 <= d);
        // `contains` needs the content of the regular files that pass the other filters.
        let mut content_of = std::collections::HashMap::new();
        if let (Some(_), FileType::File) = (&c.contains, c.file_type) {
            let mut want = Vec::new();
            for tree in listing.trees.iter().flatten() {
                for e in &tree.entries {
                    if e.own == 'f'
                        && in_depth(e)
                        && visible(&c, e)
                        && base_ok(e)
                        && size_ok(e.size, c.size)
                    {
                        want.push(tree.full_path(e));
                    }
                }
            }
            let got = per_file(ctx, &want, None).await?;
            content_of = want.into_iter().zip(got).collect();
        }
        // Ansible's loop, in os.walk's order.
        let mut files: Vec<(Map<String, Value>, bool)> = Vec::new();
        let mut msg = "All paths examined".to_string();
        let mut examined = 0usize;
        for (pi, tree) in listing.trees.iter().enumerate() {
            let Some(tree) = tree else {
                let why = format!("'{}' is not a directory", listing.shown[pi]);
                warnings.push(format!(
                    "Skipped '{}' path due to this access issue: {}\n",
                    c.paths[pi], why
                ));
                skipped.insert(c.paths[pi].clone(), why.into());
                continue;
            };
            'walk: for dir in walk_order(tree) {
                examined += dir.len();
                for ei in dir {
                    let e = &tree.entries[ei];
                    if !in_depth(e) || !visible(&c, e) {
                        continue;
                    }
                    let path = tree.full_path(e);
                    let take = match c.file_type {
                        FileType::Any => base_ok(e) && (e.own != 'f' || size_ok(e.size, c.size)),
                        FileType::Directory => e.own == 'd' && base_ok(e),
                        FileType::Link => e.own == 'l' && base_ok(e),
                        FileType::File => {
                            e.own == 'f'
                                && base_ok(e)
                                && size_ok(e.size, c.size)
                                && match &c.contains {
                                    None => true,
                                    Some(re) => content_of
                                        .get(&path)
                                        .and_then(|b| b.as_deref())
                                        .is_some_and(|b| contains_ok(re, b, c.read_whole_file)),
                                }
                        }
                    };
                    if take {
                        files.push((statinfo(&path, e), e.own == 'f'));
                    }
                    if c.limit == Some(files.len() as i64) {
                        msg = "Limit of matches reached".to_string();
                        break 'walk;
                    }
                }
                if c.limit == Some(files.len() as i64) {
                    break;
                }
            }
        }
        if let Some(algo) = c.checksum {
            let regular: Vec<String> = files
                .iter()
                .filter(|(_, reg)| *reg)
                .map(|(m, _)| m["path"].as_str().unwrap_or_default().to_string())
                .collect();
            let sums = per_file(ctx, &regular, Some(algo)).await?;
            let mut it = sums.into_iter();
            for (m, reg) in files.iter_mut() {
                if *reg {
                    if let Some(Some(h)) = it.next() {
                        m.insert(
                            "checksum".into(),
                            String::from_utf8_lossy(&h).into_owned().into(),
                        );
                    }
                }
            }
        }
        if !warnings.is_empty() {
            msg = "Not all paths examined, check warnings for details".to_string();
        }
        let matched = files.len();
        let files: Vec<Value> = files.into_iter().map(|(m, _)| Value::Object(m)).collect();
        let mut r = ModuleResult::ok()
            .msg(msg)
            .with("files", files)
            .with("matched", matched)
            .with("examined", examined)
            .with("skipped_paths", Value::Object(skipped));
        if !warnings.is_empty() {
            r = r.with("warnings", warnings);
        }
        Ok(r)
    }

    fn validate(&self, args: &VarMap) -> Result<()> {
        check(args.clone()).map(|_| ())
    }
}

/// Hidden entries (a name starting with `.`) are reported only with `hidden`; their
/// directories are walked either way, as Ansible does.
fn visible(c: &Checked, e: &Entry) -> bool {
    c.hidden || !e.name().starts_with('.')
}

#[cfg(test)]
mod tests;
