//! `package_facts`: `ansible_facts.packages` for Debian-family hosts, in the shape
//! ansible-core 2.19 returns through python-apt (`name`, `version`, `arch`, `category`,
//! `origin`, `source: apt`), from one remote script and no Python on the host.
//!
//! python-apt lists every package with an installed version; its `name` is the cache key
//! (`pkg:arch` for a foreign architecture), `category` the version's section and `origin`
//! the `Origin:` of the first repository whose index lists that version (empty for a
//! version only dpkg knows). The script reads the same from `dpkg-query`, the apt lists'
//! `Release` files and one `awk` pass over their `Packages` indexes.

use std::collections::BTreeMap;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{json, Value};

use super::args::{List, Text};
use super::service_facts::fact_vars;
use super::{parse_args, Effect, Module, ModuleContext, ModuleResult, VarMap};
use crate::error::{Error, ErrorKind, Result};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PackageFactsArgs {
    #[serde(default)]
    manager: Option<List>,
    #[serde(default)]
    strategy: Option<Text>,
}

const VALID: &[&str] = &["manager", "strategy"];

/// The package managers ansible-core 2.19 knows, as its `auto` expands them (sorted, then
/// the aliases): named in its failure message.
const ANSIBLE_MANAGERS: &[&str] = &[
    "apk", "apt", "pacman", "pkg", "pkg_info", "portage", "rpm", "pkgng",
];

/// The managers kk reads: `apt` (python-apt's view of dpkg) and `auto` (= apt).
const KK_MANAGERS: &[&str] = &["auto", "apt"];

fn check(raw: VarMap) -> Result<()> {
    let a: PackageFactsArgs = parse_args("package_facts", raw, VALID)?;
    if let Some(Text(s)) = &a.strategy {
        if s != "first" && s != "all" {
            return Err(Error::new(
                ErrorKind::ModuleArgs,
                format!("package_facts: value of strategy must be one of: first, all, got: {s}"),
            ));
        }
    }
    let managers = a.manager.map(|l| l.0).unwrap_or_default();
    let unknown: Vec<String> = managers
        .iter()
        .map(|m| m.to_lowercase())
        .filter(|m| !KK_MANAGERS.contains(&m.as_str()))
        .collect();
    if !unknown.is_empty() {
        return Err(Error::new(
            ErrorKind::ModuleArgs,
            format!(
                "package_facts: kk reads only the apt package manager (dpkg), not: {}",
                unknown.join(", ")
            ),
        )
        .help("use `manager: auto` or `manager: apt`"));
    }
    Ok(())
}

/// The remote script: the native architecture, the installed packages, each apt index's
/// origin and which index lists each installed version.
const SCRIPT: &str = r#"LC_ALL=C; export LC_ALL
command -v dpkg-query >/dev/null 2>&1 || { echo '==kk:nodpkg'; echo '==kk:end'; exit 0; }
echo '==kk:arch'; dpkg --print-architecture 2>/dev/null
q=$(dpkg-query -W -f='${db:Status-Status}\t${Package}\t${Version}\t${Architecture}\t${Section}\n' 2>/dev/null)
echo '==kk:pkgs'; printf '%s\n' "$q"
echo '==kk:origins'
for r in /var/lib/apt/lists/*_InRelease /var/lib/apt/lists/*_Release; do
  [ -f "$r" ] || continue
  o=$(grep -m1 '^Origin:' "$r" 2>/dev/null); printf '%s\t%s\n' "${r##*/}" "${o#Origin: }"
done
echo '==kk:found'
set -- /var/lib/apt/lists/*_Packages
if [ -f "$1" ]; then
  printf '%s\n' "$q" | awk -F'\t' '
    FNR == NR { if ($1 != "not-installed" && $1 != "config-files") want[$2 "\t" $3 "\t" $4] = 1; next }
    FNR == 1 { p = v = a = "" }
    /^Package: / { p = substr($0, 10) } /^Version: / { v = substr($0, 10) }
    /^Architecture: / { a = substr($0, 15) }
    /^$/ { k = p "\t" v "\t" a; if ((k in want) && !(k in seen)) { seen[k] = 1; n = FILENAME; sub(/.*\//, "", n); print k "\t" n }; p = v = a = "" }
  ' - "$@" 2>/dev/null
fi
echo '==kk:end'
"#;

/// Reads the host's installed packages.
pub struct PackageFacts;

#[async_trait]
impl Module for PackageFacts {
    fn validate(&self, args: &VarMap) -> Result<()> {
        check(args.clone())
    }

    async fn run(&self, ctx: &ModuleContext, raw: VarMap) -> Result<ModuleResult> {
        check(raw).map_err(|e| e.at_opt(ctx.span.as_ref()))?;
        let out = ctx.exec(SCRIPT, None).await?;
        let text = out.stdout_text();
        if !text.contains("==kk:end") {
            return Ok(ModuleResult::failed(format!(
                "package_facts: the listing script stopped early (rc {})",
                out.rc
            ))
            .with_output(&out));
        }
        let packages = parse(&text);
        if packages.is_empty() {
            return Ok(ModuleResult::failed(format!(
                "Could not detect a supported package manager from the following list: {}, \
                 or the required Python library is not installed. Check warnings for details.",
                py_list(ANSIBLE_MANAGERS)
            )));
        }
        Ok(ModuleResult::ok().with_facts(
            fact_vars("packages", Value::Object(packages)),
            Effect::GatheredFacts,
        ))
    }
}

/// A Python list's `repr` of strings.
fn py_list(items: &[&str]) -> String {
    let q: Vec<String> = items.iter().map(|s| format!("'{s}'")).collect();
    format!("[{}]", q.join(", "))
}

/// The packages map from the script's output (names sorted).
fn parse(text: &str) -> VarMap {
    let mut sec: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    let mut cur = "";
    for line in text.lines() {
        if let Some(h) = line.strip_prefix("==kk:") {
            cur = h;
            sec.entry(h).or_default();
        } else if let Some(v) = sec.get_mut(cur) {
            v.push(line);
        }
    }
    let get = |k: &str| sec.get(k).cloned().unwrap_or_default();
    let native = get("arch")
        .first()
        .map(|s| s.trim())
        .unwrap_or("")
        .to_string();
    // Release file name → Origin; an index belongs to the release whose name (without
    // `InRelease`/`Release`) starts it.
    let origins: Vec<(String, String)> = get("origins")
        .iter()
        .filter_map(|l| {
            let (f, o) = l.split_once('\t')?;
            let prefix = f
                .strip_suffix("InRelease")
                .or_else(|| f.strip_suffix("Release"))?;
            Some((prefix.to_string(), o.to_string()))
        })
        .collect();
    let origin_of = |index: &str| -> String {
        origins
            .iter()
            .filter(|(p, _)| index.starts_with(p.as_str()))
            .max_by_key(|(p, _)| p.len())
            .map(|(_, o)| o.clone())
            .unwrap_or_default()
    };
    let found: BTreeMap<(String, String, String), String> = get("found")
        .iter()
        .filter_map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            (f.len() == 4).then(|| {
                (
                    (f[0].to_string(), f[1].to_string(), f[2].to_string()),
                    origin_of(f[3]),
                )
            })
        })
        .collect();
    let mut packages: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for line in get("pkgs") {
        let f: Vec<&str> = line.split('\t').collect();
        if f.len() < 5 || f[0] == "not-installed" || f[0] == "config-files" || f[1].is_empty() {
            continue;
        }
        let (pkg, version, arch, section) = (f[1], f[2], f[3], f[4]);
        let name = if arch != native && arch != "all" && !native.is_empty() {
            format!("{pkg}:{arch}")
        } else {
            pkg.to_string()
        };
        let origin = found
            .get(&(pkg.to_string(), version.to_string(), arch.to_string()))
            .cloned()
            .unwrap_or_default();
        packages.entry(name.clone()).or_default().push(json!({
            "name": name, "version": version, "arch": arch, "category": section,
            "origin": origin, "source": "apt",
        }));
    }
    packages
        .into_iter()
        .map(|(k, v)| (k, Value::Array(v)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_dpkg_and_origins() {
        let out = "==kk:arch\namd64\n==kk:pkgs\n\
installed\tbash\t5.2.15-2+b7\tamd64\tshells\n\
config-files\told\t1\tamd64\tadmin\n\
installed\tlibc6\t2.36-9\ti386\tlibs\n\
installed\tlocal\t1.0\tall\tmisc\n\
==kk:origins\ndeb.debian.org_debian_dists_bookworm_InRelease\tDebian\n\
==kk:found\nbash\t5.2.15-2+b7\tamd64\tdeb.debian.org_debian_dists_bookworm_main_binary-amd64_Packages\n==kk:end\n";
        let p = Value::Object(parse(out));
        assert_eq!(
            p["bash"],
            json!([{"name": "bash", "version": "5.2.15-2+b7", "arch": "amd64", "category": "shells", "origin": "Debian", "source": "apt"}])
        );
        assert!(p.get("old").is_none());
        assert_eq!(p["libc6:i386"][0]["name"], "libc6:i386");
        assert_eq!(p["local"][0]["origin"], "");
        assert!(check(json!({"manager": ["rpm"]}).as_object().unwrap().clone()).is_err());
        assert!(check(
            json!({"manager": "auto", "strategy": "all"})
                .as_object()
                .unwrap()
                .clone()
        )
        .is_ok());
    }
}
