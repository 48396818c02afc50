//! Reading what dnf prints: its transaction table (printed before dnf acts, and alone with
//! `--assumeno` in check mode), turned into Ansible's `Installed: <nevra>` /
//! `Removed: <nevra>` result lines, with the versions upgrades replace from `rpm -qa`.
//!
//! Packages are written as dnf's `str(package)`: `name-[epoch:]version-release.arch`,
//! the epoch only when it is not 0.

/// What a transaction table says dnf would do.
#[derive(Debug, Default, PartialEq)]
pub struct Table {
    /// Packages dnf would install (new, upgraded to, downgraded to, reinstalled).
    pub install: Vec<String>,
    /// Packages dnf would remove (`Removing…` sections and `replacing` lines).
    pub remove: Vec<String>,
    /// `(name, arch)` of the packages whose installed version an upgrade or downgrade
    /// replaces: Ansible lists the replaced version as removed.
    pub replaced: Vec<(String, String)>,
}

/// The kind of a table section, from its header line.
#[derive(Clone, Copy, PartialEq)]
enum Section {
    Install,
    Replace,
    Remove,
}

fn section(header: &str) -> Option<Section> {
    let h = header.trim_end_matches(':');
    if h.starts_with("Upgrading") || h.starts_with("Downgrading") {
        Some(Section::Replace)
    } else if h.starts_with("Installing") || h.starts_with("Reinstalling") {
        Some(Section::Install)
    } else if h.starts_with("Removing") {
        Some(Section::Remove)
    } else {
        None
    }
}

/// dnf's size units (`6.0 k`); bytes have none (`817`).
fn is_unit(t: &str) -> bool {
    matches!(t, "k" | "M" | "G" | "T" | "P" | "E" | "Z" | "Y")
}

/// `name-evr.arch` from a table row's columns (dnf prints the epoch only when not 0).
fn nevra(name: &str, arch: &str, evr: &str) -> String {
    format!("{}-{}.{}", name, evr, arch)
}

/// Reads every transaction table in dnf's output. A row is `name arch [epoch:]version-release
/// repository size [unit]`; a long name may stand on its own line with the rest of the row
/// on the next, so rows are read as a stream of words per section.
pub fn parse(out: &str) -> Table {
    let mut t = Table::default();
    let mut current: Option<Section> = None;
    let mut words: Vec<String> = Vec::new();
    let flush = |sec: Option<Section>, words: &mut Vec<String>, t: &mut Table| {
        if let Some(sec) = sec {
            let mut i = 0;
            while i + 5 <= words.len() {
                let (name, arch, evr) = (&words[i], &words[i + 1], &words[i + 2]);
                let p = nevra(name, arch, evr);
                match sec {
                    Section::Install => t.install.push(p),
                    Section::Replace => {
                        t.install.push(p);
                        t.replaced.push((name.clone(), arch.clone()));
                    }
                    Section::Remove => t.remove.push(p),
                }
                i += 5;
                if words.get(i).is_some_and(|w| is_unit(w)) {
                    i += 1;
                }
            }
        }
        words.clear();
    };
    for line in out.lines() {
        if line.trim().is_empty() || line.starts_with('=') {
            flush(current, &mut words, &mut t);
            current = None;
        } else if !line.starts_with(' ') {
            flush(current, &mut words, &mut t);
            current = if line.ends_with(':') {
                section(line)
            } else {
                None
            };
        } else if current.is_some() {
            let ws: Vec<&str> = line.split_whitespace().collect();
            if ws.first() == Some(&"replacing") {
                // `replacing  name.arch evr`: what an obsoleting package takes away.
                if let (Some(na), Some(evr)) = (ws.get(1), ws.get(2)) {
                    if let Some((n, a)) = na.rsplit_once('.') {
                        t.remove.push(nevra(n, a, evr));
                    }
                }
            } else {
                words.extend(ws.into_iter().map(str::to_string));
            }
        }
    }
    flush(current, &mut words, &mut t);
    t
}

/// One `rpm -qa` line as dnf names the package: an epoch of 0 is not written.
pub fn normalise(p: &str) -> Option<String> {
    let p = p.trim();
    if p.is_empty() || p.starts_with("gpg-pubkey-") {
        return None;
    }
    Some(match p.rsplit_once("-0:") {
        Some((n, rest)) if rest.matches('-').count() == 1 => {
            format!("{}-{}", n, rest)
        }
        _ => p.to_string(),
    })
}

/// The result lines of a planned transaction: what it installs, then what it removes
/// (the versions upgrades replace taken from the installed packages, `before`).
pub fn planned(t: &Table, before: &[String]) -> Vec<String> {
    let mut install: Vec<&String> = t.install.iter().collect();
    install.sort();
    install.dedup();
    let mut remove: Vec<String> = t.remove.clone();
    for (name, arch) in &t.replaced {
        let prefix = format!("{}-", name);
        let suffix = format!(".{}", arch);
        for p in before {
            // The installed `name-evr.arch` whose evr has exactly one `-` (version-release).
            if let Some(mid) = p
                .strip_prefix(&prefix)
                .and_then(|r| r.strip_suffix(&suffix))
            {
                if mid.matches('-').count() == 1 && !install.contains(&p) {
                    remove.push(p.clone());
                }
            }
        }
    }
    remove.sort();
    remove.dedup();
    let mut lines: Vec<String> = install
        .into_iter()
        .map(|p| format!("Installed: {}", p))
        .collect();
    lines.extend(remove.into_iter().map(|p| format!("Removed: {}", p)));
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    const UPGRADE: &str = "Last metadata expiration check: 0:02:23 ago on Tue Nov 24 22:36:50 2026.
Dependencies resolved.
================================================================================
 Package           Architecture     Version          Repository            Size
================================================================================
Upgrading:
 kk211-a           noarch           2.0-1            kk211-next           6.0 k
Installing dependencies:
 a-very-long-package-name-that-does-not-fit-in-its-column
                   x86_64           1:3.2-4.el9      appstream            817
 kk211-c           noarch           1.0-1            kk211-main            12 M
     replacing  kk211-old.noarch 0.9-1

Transaction Summary
================================================================================
Upgrade  1 Package

Total size: 6.0 k
Operation aborted.
";

    #[test]
    fn reads_the_transaction_table() {
        let t = parse(UPGRADE);
        assert_eq!(
            t.install,
            vec![
                "kk211-a-2.0-1.noarch",
                "a-very-long-package-name-that-does-not-fit-in-its-column-1:3.2-4.el9.x86_64",
                "kk211-c-1.0-1.noarch"
            ]
        );
        assert_eq!(t.remove, vec!["kk211-old-0.9-1.noarch"]);
        assert_eq!(t.replaced, vec![("kk211-a".into(), "noarch".into())]);
        let before = vec![
            "kk211-a-1.0-1.noarch".to_string(),
            "kk211-a-extra-1.0-1.noarch".to_string(),
        ];
        let lines = planned(&t, &before);
        assert_eq!(lines.last().unwrap(), "Removed: kk211-old-0.9-1.noarch");
        assert!(lines.contains(&"Removed: kk211-a-1.0-1.noarch".to_string()));
        assert!(!lines.iter().any(|l| l.contains("extra")));
        let rm = parse(
            "Removing:\n kk211-a  noarch  1.0-1  @kk211-main  12  \nRemoving unused dependencies:\n kk211-c noarch 1.0-1 @kk211-main 12\n\nTransaction Summary\n",
        );
        assert_eq!(
            rm.remove,
            vec!["kk211-a-1.0-1.noarch", "kk211-c-1.0-1.noarch"]
        );
    }

    #[test]
    fn rpm_names_as_dnf_writes_them() {
        assert_eq!(
            normalise("kk-0:1.0-1.noarch").as_deref(),
            Some("kk-1.0-1.noarch")
        );
        assert_eq!(normalise("gpg-pubkey-1-2"), None);
    }
}
