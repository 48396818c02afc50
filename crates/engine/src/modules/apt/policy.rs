//! What Ansible's apt module asks python-apt, answered from `dpkg-query` and
//! `apt-cache policy` output: Debian version order, package specs, package status.

use std::cmp::Ordering;

use serde_json::{json, Value};

use crate::modules::setup::fnmatch;

/// Debian version order (dpkg's `verrevcmp` over epoch, upstream and revision).
pub(super) fn version_cmp(a: &str, b: &str) -> Ordering {
    fn split(v: &str) -> (u64, &str, &str) {
        let (epoch, rest) = match v.split_once(':') {
            Some((e, r)) => (e.parse().unwrap_or(0), r),
            None => (0, v),
        };
        match rest.rsplit_once('-') {
            Some((u, r)) => (epoch, u, r),
            None => (epoch, rest, ""),
        }
    }
    fn order(c: Option<u8>) -> i32 {
        match c {
            None => 0,
            Some(b'~') => -1,
            Some(c) if c.is_ascii_digit() => 0,
            Some(c) if c.is_ascii_alphabetic() => c as i32,
            Some(c) => c as i32 + 256,
        }
    }
    fn part(a: &[u8], b: &[u8]) -> Ordering {
        let (mut i, mut j) = (0, 0);
        while i < a.len() || j < b.len() {
            while (i < a.len() && !a[i].is_ascii_digit()) || (j < b.len() && !b[j].is_ascii_digit())
            {
                let ac = order(a.get(i).copied().filter(|c| !c.is_ascii_digit()));
                let bc = order(b.get(j).copied().filter(|c| !c.is_ascii_digit()));
                if ac != bc {
                    return ac.cmp(&bc);
                }
                if i < a.len() && !a[i].is_ascii_digit() {
                    i += 1;
                }
                if j < b.len() && !b[j].is_ascii_digit() {
                    j += 1;
                }
            }
            while i < a.len() && a[i] == b'0' {
                i += 1;
            }
            while j < b.len() && b[j] == b'0' {
                j += 1;
            }
            let si = i;
            while i < a.len() && a[i].is_ascii_digit() {
                i += 1;
            }
            let sj = j;
            while j < b.len() && b[j].is_ascii_digit() {
                j += 1;
            }
            let (na, nb) = (&a[si..i], &b[sj..j]);
            let c = na.len().cmp(&nb.len()).then(na.cmp(nb));
            if c != Ordering::Equal {
                return c;
            }
        }
        Ordering::Equal
    }
    let (ea, ua, ra) = split(a);
    let (eb, ub, rb) = split(b);
    ea.cmp(&eb)
        .then_with(|| part(ua.as_bytes(), ub.as_bytes()))
        .then_with(|| part(ra.as_bytes(), rb.as_bytes()))
}

/// What dpkg and apt-cache say about one package name.
#[derive(Default, Debug)]
pub(super) struct Known {
    /// `apt-cache policy` knows the name (a real or a virtual package).
    pub(super) in_cache: bool,
    /// dpkg's state is "installed".
    pub(super) installed: bool,
    /// dpkg has files of it (installed, or removed with its configuration left).
    pub(super) has_files: bool,
    pub(super) installed_version: String,
    /// The policy's candidate (with `default_release`), if any.
    pub(super) candidate: Option<String>,
    /// Every version the repositories (and dpkg) offer.
    pub(super) versions: Vec<String>,
}

/// Python's `re.split(r'(>?=)', spec, maxsplit=1)`: name, comparison, version.
pub(super) fn package_split(spec: &str) -> (String, Option<String>, Option<String>) {
    match spec.find('=') {
        Some(i) => {
            let (name, cmp) = if i > 0 && spec.as_bytes()[i - 1] == b'>' {
                (&spec[..i - 1], ">=")
            } else {
                (&spec[..i], "=")
            };
            (
                name.to_string(),
                Some(cmp.to_string()),
                Some(spec[i + 1..].to_string()),
            )
        }
        None => (spec.to_string(), None, None),
    }
}

/// Parses the probe's output: `KK_PKG name`, then `KK_DPKG <abbrev> <version>` and the
/// `apt-cache policy` text of that name.
pub(super) fn parse_known(text: &str) -> Vec<(String, Known)> {
    let mut out: Vec<(String, Known)> = Vec::new();
    // After `KK_POLICY`: one `apt-cache policy` of many names, each section headed by
    // its name (`name:` at the line start), for the package of that name.
    let mut batched = false;
    let mut current: Option<usize> = None;
    for line in text.lines() {
        if let Some(name) = line.strip_prefix("KK_PKG ") {
            out.push((name.to_string(), Known::default()));
            current = Some(out.len() - 1);
            continue;
        }
        if line == "KK_POLICY" {
            batched = true;
            current = None;
            continue;
        }
        if batched && line.ends_with(':') && !line.starts_with(' ') {
            let name = &line[..line.len() - 1];
            current = out.iter().position(|(n, k)| n == name && !k.in_cache);
        }
        let Some(k) = current.and_then(|i| out.get_mut(i)).map(|(_, k)| k) else {
            continue;
        };
        if let Some(rest) = line.strip_prefix("KK_DPKG ") {
            // `ii 1.0`, `rc 1.0`, `un `
            let abbrev = rest.get(..2).unwrap_or("");
            let version = rest.get(3..).unwrap_or("").trim().to_string();
            k.installed = abbrev.ends_with('i');
            k.has_files = !abbrev.ends_with('n') && abbrev.len() == 2;
            if k.installed {
                k.installed_version = version;
            }
        } else if line.ends_with(':') && !line.starts_with(' ') {
            k.in_cache = true;
        } else if let Some(c) = line.trim_start().strip_prefix("Candidate: ") {
            k.candidate = Some(c.trim().to_string()).filter(|c| c != "(none)");
        } else if line.starts_with(" *** ")
            || (line.starts_with("     ") && !line.starts_with("      "))
        {
            if let Some(v) = line
                .trim_start_matches([' ', '*'])
                .split_whitespace()
                .next()
            {
                k.versions.push(v.to_string());
            }
        }
    }
    out
}

/// Ansible's `package_status` for `state=install`: installed, the installed version
/// matches, the version to install (`Some(None)` stands for "let apt decide").
pub(super) struct Status {
    pub(super) installed: bool,
    pub(super) version_ok: bool,
    pub(super) installable: Option<Option<String>>,
}

pub(super) fn package_status(k: &Known, cmp: Option<&str>, version: Option<&str>) -> Status {
    if !k.installed && k.versions.is_empty() {
        // A virtual package (or one without versions): apt sorts out what provides it.
        return Status {
            installed: false,
            version_ok: false,
            installable: Some(None),
        };
    }
    let best = match (cmp, version) {
        (Some("="), Some(v)) => k
            .versions
            .iter()
            .filter(|x| fnmatch(v, x))
            .max_by(|a, b| version_cmp(a, b))
            .cloned(),
        _ => k.candidate.clone(),
    };
    if !k.installed {
        return Status {
            installed: false,
            version_ok: false,
            installable: best.map(Some),
        };
    }
    let iv = k.installed_version.as_str();
    let differs = |b: &String| b != iv;
    let (version_ok, installable) = match (cmp, version) {
        (Some("="), Some(v)) => (fnmatch(v, iv), best.filter(|b| differs(b) && fnmatch(v, b))),
        (Some(_), Some(v)) => (
            version_cmp(iv, v) != Ordering::Less,
            best.filter(|b| differs(b) && version_cmp(b, v) != Ordering::Less),
        ),
        _ => (true, best.filter(differs)),
    };
    Status {
        installed: true,
        version_ok,
        installable: installable.map(Some),
    }
}

/// Ansible's `parse_diff`: the part of apt-get's output between its preamble and the
/// "N upgraded" line.
pub(super) fn parse_diff(out: &str) -> Value {
    let lines: Vec<&str> = out.lines().collect();
    let start = lines
        .iter()
        .position(|l| *l == "Resolving dependencies...")
        .or_else(|| {
            lines
                .iter()
                .position(|l| *l == "Reading state information...")
        })
        .map(|i| i as isize)
        .unwrap_or(-1);
    let upgraded = regex::Regex::new(r"^[0-9]+ (packages )?upgraded").expect("valid regex");
    let end = lines
        .iter()
        .position(|l| upgraded.is_match(l))
        .unwrap_or(lines.len());
    let from = (start + 1) as usize;
    let to = (end + 1).min(lines.len());
    let prepared = if from < to {
        lines[from..to].join("\n")
    } else {
        String::new()
    };
    json!({ "prepared": prepared })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cmp::Ordering;

    #[test]
    fn debian_versions_order_as_dpkg() {
        assert_eq!(version_cmp("1.0", "1.0"), Ordering::Equal);
        assert_eq!(version_cmp("1.0", "2.0"), Ordering::Less);
        assert_eq!(version_cmp("1.10", "1.9"), Ordering::Greater);
        assert_eq!(version_cmp("1.0~rc1", "1.0"), Ordering::Less);
        assert_eq!(version_cmp("1:0.1", "9.9"), Ordering::Greater);
        assert_eq!(version_cmp("1.0-2", "1.0-10"), Ordering::Less);
        assert_eq!(version_cmp("1.0a", "1.0"), Ordering::Greater);
        assert_eq!(version_cmp("1.0+b1", "1.0"), Ordering::Greater);
    }

    #[test]
    fn specs_split_as_ansible() {
        assert_eq!(package_split("a"), ("a".into(), None, None));
        assert_eq!(
            package_split("a=1.*"),
            ("a".into(), Some("=".into()), Some("1.*".into()))
        );
        assert_eq!(
            package_split("a>=2"),
            ("a".into(), Some(">=".into()), Some("2".into()))
        );
    }

    #[test]
    fn probe_output_parses() {
        let t = "KK_PKG kk-a\nKK_DPKG ii 2.0\nkk-a:\n  Installed: 2.0\n  Candidate: 3.0\n  Version table:\n     3.0 990\n        990 file:/x ./ Packages\n *** 2.0 100\n        100 /var/lib/dpkg/status\n     1.0 500\n        500 file:/x ./ Packages\nKK_PKG nosuch\n";
        let k = parse_known(t);
        assert_eq!(k.len(), 2);
        assert!(k[0].1.installed && k[0].1.in_cache);
        assert_eq!(k[0].1.installed_version, "2.0");
        assert_eq!(k[0].1.candidate.as_deref(), Some("3.0"));
        assert_eq!(k[0].1.versions, ["3.0", "2.0", "1.0"]);
        assert!(!k[1].1.in_cache && !k[1].1.installed);
        // The same from one batched `apt-cache policy` (sections by name, any order).
        let b = "KK_PKG kk-a\nKK_DPKG ii 2.0\nKK_PKG nosuch\nKK_DPKG \nKK_PKG kk-b\nKK_DPKG un \nKK_POLICY\nkk-b:\n  Installed: (none)\n  Candidate: 1.5\n  Version table:\n     1.5 500\n        500 file:/x ./ Packages\nkk-a:\n  Installed: 2.0\n  Candidate: 3.0\n  Version table:\n     3.0 990\n        990 file:/x ./ Packages\n *** 2.0 100\n        100 /var/lib/dpkg/status\n     1.0 500\n        500 file:/x ./ Packages\n";
        let kb = parse_known(b);
        assert_eq!(kb.len(), 3);
        assert_eq!(kb[0].1.versions, k[0].1.versions);
        assert_eq!(kb[0].1.candidate, k[0].1.candidate);
        assert!(kb[0].1.installed && kb[0].1.in_cache);
        assert!(!kb[1].1.in_cache && !kb[1].1.installed);
        assert!(kb[2].1.in_cache && !kb[2].1.installed);
        assert_eq!(kb[2].1.candidate.as_deref(), Some("1.5"));
        assert_eq!(kb[2].1.versions, ["1.5"]);
        let st = package_status(&k[0].1, Some("="), Some("1.*"));
        assert!(st.installed && !st.version_ok);
        assert_eq!(st.installable, Some(Some("1.0".into())));
    }
}
