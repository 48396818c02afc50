//! os-release, `lsb_release` and the distro release file, read as the bundled `distro`
//! library reads them.
//!
//! Ansible names the distribution from `distro`'s answers first and only then applies its
//! own file rules ([`super::distribution`]); this is that first opinion.

use std::collections::HashMap;

use indexmap::IndexMap;

use super::raw::{capitalize, regex, Raw};

/// The os-release file `distro` reads: `/etc/os-release`, else `/usr/lib/os-release`.
pub(super) fn os_release_path(raw: &Raw) -> &'static str {
    if raw.files.contains_key("/etc/os-release") || !raw.files.contains_key("/usr/lib/os-release") {
        "/etc/os-release"
    } else {
        "/usr/lib/os-release"
    }
}

/// `KEY=value` assignments of a shell-syntax file (os-release, lsb-release), quotes and
/// escapes resolved as Python's `shlex` in POSIX mode does; later keys win.
pub(super) fn os_release_pairs(text: &str) -> IndexMap<String, String> {
    let mut out = IndexMap::new();
    for tok in shlex_split(text) {
        if let Some((k, v)) = tok.split_once('=') {
            out.insert(k.to_string(), v.to_string());
        }
    }
    out
}

/// Python's `shlex.shlex(posix=True, whitespace_split=True)` tokens, `#` comments included.
/// An unclosed quote ends the token instead of failing.
pub(super) fn shlex_split(text: &str) -> Vec<String> {
    #[derive(PartialEq, Clone, Copy)]
    enum St {
        Space,
        Word,
        Quote(char),
        Escape(Option<char>),
    }
    let mut tokens = Vec::new();
    let mut tok = String::new();
    let mut quoted = false;
    let mut st = St::Space;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match st {
            St::Space | St::Word => {
                if c.is_whitespace() {
                    if st == St::Word || quoted {
                        tokens.push(std::mem::take(&mut tok));
                        quoted = false;
                    }
                    st = St::Space;
                } else if c == '#' {
                    for n in chars.by_ref() {
                        if n == '\n' {
                            break;
                        }
                    }
                    if st == St::Word || quoted {
                        tokens.push(std::mem::take(&mut tok));
                        quoted = false;
                    }
                    st = St::Space;
                } else if c == '\\' {
                    st = St::Escape(None);
                } else if c == '\'' || c == '"' {
                    quoted = true;
                    st = St::Quote(c);
                } else {
                    tok.push(c);
                    st = St::Word;
                }
            }
            St::Quote(q) => {
                if c == q {
                    st = St::Word;
                } else if c == '\\' && q == '"' {
                    st = St::Escape(Some(q));
                } else {
                    tok.push(c);
                }
            }
            St::Escape(inside) => {
                if let Some(q) = inside {
                    if c != '\\' && c != q {
                        tok.push('\\');
                    }
                    tok.push(c);
                    st = St::Quote(q);
                } else {
                    tok.push(c);
                    st = St::Word;
                }
            }
        }
    }
    if !tok.is_empty() || quoted {
        tokens.push(tok);
    }
    tokens
}

/// What `lsb_release -a` would print, as `(label, value)`, when the command exists.
///
/// Not run (on Ubuntu it is a slow Python program): Ubuntu's reads `/etc/lsb-release`,
/// Debian's is a shell script over os-release; both are reproduced here.
pub(super) fn lsb_release_output(
    raw: &Raw,
    os: &IndexMap<String, String>,
) -> Option<Vec<(String, String)>> {
    if !raw.has_cmd("lsb_release") {
        return None;
    }
    let na = |v: Option<&String>| {
        v.filter(|s| !s.is_empty())
            .cloned()
            .unwrap_or_else(|| "n/a".into())
    };
    let file = os_release_pairs(&raw.text("/etc/lsb-release").unwrap_or_default());
    if file.contains_key("DISTRIB_ID") {
        return Some(vec![
            ("Distributor ID".into(), na(file.get("DISTRIB_ID"))),
            ("Description".into(), na(file.get("DISTRIB_DESCRIPTION"))),
            ("Release".into(), na(file.get("DISTRIB_RELEASE"))),
            ("Codename".into(), na(file.get("DISTRIB_CODENAME"))),
        ]);
    }
    let id = os.get("ID").cloned().unwrap_or_default();
    let mut cap = String::new();
    let mut it = id.chars();
    if let Some(f) = it.next() {
        cap.extend(f.to_uppercase());
        cap.extend(it);
    }
    if let Some(name) = os.get("NAME") {
        if name.to_lowercase() == cap.to_lowercase() {
            cap = name.clone();
        }
    }
    Some(vec![
        ("Distributor ID".into(), na(Some(&cap))),
        ("Description".into(), na(os.get("PRETTY_NAME"))),
        ("Release".into(), na(os.get("VERSION_ID"))),
        ("Codename".into(), na(os.get("VERSION_CODENAME"))),
    ])
}

/// The bundled `distro` library's view: os-release, lsb_release, the distro release file.
pub(super) struct Distro {
    os: HashMap<String, String>,
    lsb: HashMap<String, String>,
    rel: HashMap<String, String>,
    debian_version: String,
}

const DISTRO_RELEASE_IGNORE: &[&str] = &[
    "debian_version",
    "lsb-release",
    "oem-release",
    "os-release",
    "system-release",
    "plesk-release",
    "iredmail-release",
    "board-release",
    "ec2_version",
];

impl Distro {
    pub(super) fn new(
        raw: &Raw,
        os_pairs: &IndexMap<String, String>,
        lsb_out: Option<&[(String, String)]>,
    ) -> Distro {
        let mut os: HashMap<String, String> = os_pairs
            .iter()
            .map(|(k, v)| (k.to_lowercase(), v.clone()))
            .collect();
        if let Some(v) = os.get("version").cloned() {
            if let Some(re) = regex(r"\((\D+)\)|,\s*(\D+)") {
                if let Some(c) = re.captures(&v) {
                    if let Some(m) = c.get(1).or_else(|| c.get(2)) {
                        os.insert("codename".into(), m.as_str().into());
                        os.insert("release_codename".into(), m.as_str().into());
                    }
                }
            }
        }
        if let Some(c) = os.get("version_codename").cloned() {
            os.insert("codename".into(), c);
        } else if let Some(c) = os.get("ubuntu_codename").cloned() {
            os.insert("codename".into(), c);
        }
        let lsb = lsb_out
            .unwrap_or(&[])
            .iter()
            .map(|(k, v)| (k.replace(' ', "_").to_lowercase(), v.trim().to_string()))
            .collect();
        Distro {
            os,
            lsb,
            rel: distro_release_info(raw),
            debian_version: raw
                .lines("/etc/debian_version")
                .first()
                .map(|l| l.trim_end().to_string())
                .unwrap_or_default(),
        }
    }

    fn os(&self, k: &str) -> &str {
        self.os.get(k).map(String::as_str).unwrap_or("")
    }

    fn lsb(&self, k: &str) -> &str {
        self.lsb.get(k).map(String::as_str).unwrap_or("")
    }

    fn rel(&self, k: &str) -> &str {
        self.rel.get(k).map(String::as_str).unwrap_or("")
    }

    fn id(&self) -> String {
        fn norm(id: &str, table: &[(&str, &str)]) -> String {
            let id = id.to_lowercase().replace(' ', "_");
            table
                .iter()
                .find(|(k, _)| *k == id)
                .map(|(_, v)| v.to_string())
                .unwrap_or(id)
        }
        if !self.os("id").is_empty() {
            return norm(
                self.os("id"),
                &[("ol", "oracle"), ("opensuse-leap", "opensuse")],
            );
        }
        if !self.lsb("distributor_id").is_empty() {
            return norm(
                self.lsb("distributor_id"),
                &[
                    ("enterpriseenterpriseas", "oracle"),
                    ("enterpriseenterpriseserver", "oracle"),
                    ("redhatenterpriseworkstation", "rhel"),
                    ("redhatenterpriseserver", "rhel"),
                    ("redhatenterprisecomputenode", "rhel"),
                ],
            );
        }
        if !self.rel("id").is_empty() {
            return norm(self.rel("id"), &[("redhat", "rhel")]);
        }
        String::new()
    }

    fn like(&self) -> &str {
        self.os("id_like")
    }

    fn version(&self, best: bool) -> String {
        let from_line = |l: &str| {
            parse_distro_release_content(l)
                .get("version_id")
                .cloned()
                .unwrap_or_default()
        };
        let mut versions = vec![
            self.os("version_id").to_string(),
            self.lsb("release").to_string(),
            self.rel("version_id").to_string(),
            from_line(self.os("pretty_name")),
            from_line(self.lsb("description")),
        ];
        if self.id() == "debian" || self.like().split_whitespace().any(|w| w == "debian") {
            versions.push(self.debian_version.clone());
        }
        let mut version = String::new();
        if best {
            for v in versions {
                if v.matches('.').count() > version.matches('.').count() || version.is_empty() {
                    version = v;
                }
            }
        } else if let Some(v) = versions.into_iter().find(|v| !v.is_empty()) {
            version = v;
        }
        version
    }

    fn codename(&self) -> String {
        match self.os.get("codename") {
            Some(c) => c.clone(),
            None => [self.lsb("codename"), self.rel("codename")]
                .into_iter()
                .find(|s| !s.is_empty())
                .unwrap_or("")
                .to_string(),
        }
    }

    /// `sys_info.get_distribution()`.
    pub(super) fn distribution(&self) -> String {
        match capitalize(&self.id()).as_str() {
            "Amzn" => "Amazon".into(),
            "Rhel" => "Redhat".into(),
            "" => "OtherLinux".into(),
            other => other.into(),
        }
    }

    /// `sys_info.get_distribution_version()`.
    pub(super) fn distribution_version(&self) -> String {
        let id = self.id();
        match id.as_str() {
            "centos" => self
                .version(true)
                .split('.')
                .take(2)
                .collect::<Vec<_>>()
                .join("."),
            "debian" => self.version(true),
            _ => self.version(false),
        }
    }

    /// `sys_info.get_distribution_codename()`.
    pub(super) fn distribution_codename(&self) -> Option<String> {
        if let Some(c) = self
            .os
            .get("version_codename")
            .or_else(|| self.os.get("ubuntu_codename"))
        {
            return Some(c.clone());
        }
        if self.id() == "ubuntu" {
            if let Some(c) = self.lsb.get("codename") {
                return Some(c.clone());
            }
        }
        Some(self.codename()).filter(|c| !c.is_empty())
    }
}

/// `distro`'s distro release file: the first `/etc/<id>[-_](release|version)` whose first
/// line parses, in sorted order.
fn distro_release_info(raw: &Raw) -> HashMap<String, String> {
    let Some(re) = regex(r"^(\w+)[-_](release|version)$") else {
        return HashMap::new();
    };
    let mut names: Vec<&str> = raw
        .files
        .keys()
        .filter_map(|p| p.strip_prefix("/etc/"))
        .filter(|b| !b.contains('/') && !DISTRO_RELEASE_IGNORE.contains(b))
        .collect();
    names.sort();
    for b in names {
        let Some(m) = re.captures(b) else { continue };
        let Some(first) = raw.lines(&format!("/etc/{b}")).first().copied() else {
            continue;
        };
        let mut info = parse_distro_release_content(first);
        if first.trim().is_empty() {
            info.insert("name".into(), String::new());
        }
        if !info.contains_key("name") {
            continue;
        }
        info.insert("id".into(), m[1].to_string());
        if info
            .get("name")
            .is_some_and(|n| n.to_lowercase().contains("cloudlinux"))
        {
            info.insert("id".into(), "cloudlinux".into());
        }
        return info;
    }
    HashMap::new()
}

/// `distro._parse_distro_release_content`: `Name release 1.2 (Codename)`, matched reversed.
pub(super) fn parse_distro_release_content(line: &str) -> HashMap<String, String> {
    let mut info = HashMap::new();
    let rev: String = line.trim().chars().rev().collect();
    let re = regex(r"^(?:[^)]*\)(.*)\()? *(?:STL )?([\d.+\-a-z]*\d) *(?:esaeler *)?(.+)");
    let rev_str = |s: &str| s.chars().rev().collect::<String>();
    if let Some(c) = re.and_then(|re| {
        re.captures(&rev).map(|c| {
            c.iter()
                .map(|m| m.map(|m| m.as_str().to_string()))
                .collect::<Vec<_>>()
        })
    }) {
        if let Some(Some(n)) = c.get(3) {
            info.insert("name".into(), rev_str(n));
        }
        if let Some(Some(v)) = c
            .get(2)
            .filter(|v| v.as_ref().is_some_and(|s| !s.is_empty()))
        {
            info.insert("version_id".into(), rev_str(v));
        }
        if let Some(Some(cn)) = c
            .get(1)
            .filter(|v| v.as_ref().is_some_and(|s| !s.is_empty()))
        {
            info.insert("codename".into(), rev_str(cn));
        }
    } else if !line.is_empty() {
        info.insert("name".into(), line.trim().to_string());
    }
    info
}
