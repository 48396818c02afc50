//! Ansible's distribution facts (`distribution.py`'s `DistributionFiles`): the name,
//! version, release and OS family, from `distro`'s view corrected by the release files.
//!
//! Roles branch on `ansible_distribution` and `ansible_os_family`, so these follow
//! ansible-core 2.19 rule by rule.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::distro::Distro;
use super::raw::{cap1, cap_n, regex, strip_chars, Raw};
use super::system::Platform;

const OSDIST_LIST: &[(&str, &str, bool)] = &[
    ("/etc/altlinux-release", "Altlinux", false),
    ("/etc/oracle-release", "OracleLinux", false),
    ("/etc/slackware-version", "Slackware", false),
    ("/etc/centos-release", "CentOS", false),
    ("/etc/redhat-release", "RedHat", false),
    ("/etc/vmware-release", "VMwareESX", true),
    ("/etc/openwrt_release", "OpenWrt", false),
    ("/etc/os-release", "Amazon", false),
    ("/etc/system-release", "Amazon", false),
    ("/etc/alpine-release", "Alpine", false),
    ("/etc/arch-release", "Archlinux", true),
    ("/etc/os-release", "Archlinux", false),
    ("/etc/os-release", "SUSE", false),
    ("/etc/SuSE-release", "SUSE", false),
    ("/etc/gentoo-release", "Gentoo", false),
    ("/etc/os-release", "Debian", false),
    ("/etc/lsb-release", "Debian", false),
    ("/etc/lsb-release", "Mandriva", false),
    ("/etc/sourcemage-release", "SMGL", false),
    ("/usr/lib/os-release", "ClearLinux", false),
    ("/etc/coreos/update.conf", "Coreos", false),
    ("/etc/os-release", "Flatcar", false),
    ("/etc/os-release", "NA", false),
];

const OS_FAMILY_MAP: &[(&str, &[&str])] = &[
    (
        "RedHat",
        &[
            "RedHat",
            "RHEL",
            "Fedora",
            "CentOS",
            "Scientific",
            "SLC",
            "Ascendos",
            "CloudLinux",
            "PSBM",
            "OracleLinux",
            "OVS",
            "OEL",
            "Amazon",
            "Amzn",
            "Virtuozzo",
            "XenServer",
            "Alibaba",
            "EulerOS",
            "openEuler",
            "AlmaLinux",
            "Rocky",
            "TencentOS",
            "EuroLinux",
            "Kylin Linux Advanced Server",
            "MIRACLE",
        ],
    ),
    (
        "Debian",
        &[
            "Debian",
            "Ubuntu",
            "Raspbian",
            "Neon",
            "KDE neon",
            "Linux Mint",
            "SteamOS",
            "Devuan",
            "Kali",
            "Cumulus Linux",
            "Pop!_OS",
            "Parrot",
            "Pardus GNU/Linux",
            "Uos",
            "Deepin",
            "OSMC",
            "Linux Mint Debian Edition",
        ],
    ),
    (
        "Suse",
        &[
            "SuSE",
            "SLES",
            "SLED",
            "openSUSE",
            "openSUSE Tumbleweed",
            "SLES_SAP",
            "SUSE_LINUX",
            "openSUSE Leap",
            "ALP-Dolomite",
            "SL-Micro",
            "openSUSE MicroOS",
        ],
    ),
    ("Archlinux", &["Archlinux", "Antergos", "Manjaro"]),
    ("Mandrake", &["Mandrake", "Mandriva"]),
    (
        "Solaris",
        &["Solaris", "Nexenta", "OmniOS", "OpenIndiana", "SmartOS"],
    ),
    ("Slackware", &["Slackware"]),
    ("Altlinux", &["Altlinux"]),
    ("SMGL", &["SMGL"]),
    ("Gentoo", &["Gentoo", "Funtoo"]),
    ("Alpine", &["Alpine"]),
    ("ClearLinux", &["Clear Linux OS", "Clear Linux Mix"]),
];

fn os_family(distribution: &str) -> String {
    OS_FAMILY_MAP
        .iter()
        .find(|(_, names)| names.contains(&distribution))
        .map(|(f, _)| f.to_string())
        .unwrap_or_else(|| distribution.to_string())
}

type Facts = Map<String, Value>;

pub(super) fn distribution_facts(
    raw: &Raw,
    plat: &Platform,
    distro: &Distro,
    af: &mut BTreeMap<String, Value>,
) {
    // Baseline from `platform`, then the distribution files.
    let mut facts = Facts::new();
    facts.insert("distribution".into(), plat.system.clone().into());
    facts.insert("distribution_release".into(), plat.kernel.clone().into());
    facts.insert(
        "distribution_version".into(),
        plat.kernel_version.clone().into(),
    );
    if plat.system == "Linux" {
        for (k, v) in process_dist_files(raw, distro) {
            facts.insert(k, v);
        }
    }
    let dist = facts
        .get("distribution")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    facts.insert("os_family".into(), os_family(&dist).into());
    af.extend(facts);
}

fn process_dist_files(raw: &Raw, distro: &Distro) -> Facts {
    let mut facts = Facts::new();
    let version = Some(distro.distribution_version())
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| "NA".into());
    let major = Some(version.split('.').next().unwrap_or("").to_string())
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| "NA".into());
    facts.insert("distribution".into(), distro.distribution().into());
    facts.insert("distribution_version".into(), version.into());
    facts.insert(
        "distribution_release".into(),
        distro
            .distribution_codename()
            .unwrap_or_else(|| "NA".into())
            .into(),
    );
    facts.insert("distribution_major_version".into(), major.into());

    for &(path, name, allow_empty) in OSDIST_LIST {
        let has_content = raw.files.contains_key(path);
        if allow_empty && (has_content || raw.exists(path)) {
            facts.insert("distribution".into(), name.into());
            facts.insert("distribution_file_path".into(), path.into());
            facts.insert("distribution_file_variety".into(), name.into());
            break;
        }
        if !has_content {
            continue;
        }
        let data = raw.content(path).unwrap_or_default();
        let (parsed, found) = parse_dist_file(raw, distro, name, &data, path, &facts);
        if parsed {
            facts.insert("distribution".into(), name.into());
            facts.insert("distribution_file_path".into(), path.into());
            facts.insert("distribution_file_variety".into(), name.into());
            facts.insert("distribution_file_parsed".into(), true.into());
            facts.extend(found);
            break;
        }
    }
    facts
}

fn parse_dist_file(
    raw: &Raw,
    distro: &Distro,
    name: &str,
    data: &str,
    path: &str,
    collected: &Facts,
) -> (bool, Facts) {
    let data = strip_chars(data, "'\"\\");
    let mut f = Facts::new();
    let search = match name {
        "OracleLinux" => Some("Oracle Linux"),
        "RedHat" => Some("Red Hat"),
        "Altlinux" => Some("ALT"),
        "SMGL" => Some("Source Mage GNU/Linux"),
        _ => None,
    };
    if let Some(s) = search {
        if data.contains(s) {
            f.insert("distribution".into(), name.into());
            f.insert("distribution_file_search_string".into(), s.into());
        } else {
            let Some(first) = data.split_whitespace().next() else {
                return (false, f);
            };
            f.insert("distribution".into(), first.into());
        }
        return (true, f);
    }
    let collected_str = |k: &str| {
        collected
            .get(k)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let set = |f: &mut Facts, k: &str, v: String| {
        f.insert(k.into(), v.into());
    };
    match name {
        "Archlinux" => {
            if data.contains("Arch Linux") {
                set(&mut f, "distribution", name.into());
                return (true, f);
            }
            (false, f)
        }
        "Slackware" => {
            if !data.contains("Slackware") {
                return (false, f);
            }
            set(&mut f, "distribution", name.into());
            if let Some(m) =
                regex(r"\w+[.]\w+\+?").and_then(|re| re.find(data).map(|m| m.as_str().to_string()))
            {
                set(&mut f, "distribution_version", m);
            }
            (true, f)
        }
        "Amazon" => {
            if !data.contains("Amazon") {
                return (false, f);
            }
            set(&mut f, "distribution", "Amazon".into());
            if path == "/etc/os-release" {
                if let Some(v) = cap1(r#"VERSION_ID="(.*)""#, data) {
                    let parts: Vec<&str> = v.split('.').collect();
                    let (major, minor) = if parts.len() > 1 {
                        (parts[0].to_string(), parts[1..].join("."))
                    } else {
                        (parts[0].to_string(), "NA".to_string())
                    };
                    set(&mut f, "distribution_version", v.clone());
                    set(&mut f, "distribution_major_version", major);
                    set(&mut f, "distribution_minor_version", minor);
                }
            } else {
                let v = data
                    .split_whitespace()
                    .find(|w| w.chars().all(|c| c.is_ascii_digit()))
                    .unwrap_or("NA");
                set(&mut f, "distribution_version", v.into());
            }
            (true, f)
        }
        "OpenWrt" => {
            if !data.contains("OpenWrt") {
                return (false, f);
            }
            set(&mut f, "distribution", name.into());
            if let Some(v) = cap1(r#"DISTRIB_RELEASE="(.*)""#, data) {
                set(&mut f, "distribution_version", v);
            }
            if let Some(v) = cap1(r#"DISTRIB_CODENAME="(.*)""#, data) {
                set(&mut f, "distribution_release", v);
            }
            (true, f)
        }
        "Alpine" => {
            set(&mut f, "distribution", "Alpine".into());
            set(&mut f, "distribution_version", data.into());
            (true, f)
        }
        "SUSE" => parse_suse(raw, data, path, collected),
        "Debian" => parse_debian(raw, data, path, collected),
        "Mandriva" => {
            if !data.contains("Mandriva") {
                return (false, f);
            }
            if let Some(v) = cap1(r#"DISTRIB_RELEASE="(.*)""#, data) {
                set(&mut f, "distribution_version", v);
            }
            if let Some(v) = cap1(r#"DISTRIB_CODENAME="(.*)""#, data) {
                set(&mut f, "distribution_release", v);
            }
            set(&mut f, "distribution", name.into());
            (true, f)
        }
        "NA" => {
            for line in data.lines() {
                if let Some(d) = cap1("^NAME=(.*)", line) {
                    set(&mut f, "distribution", d.trim_matches('"').into());
                }
                if let Some(v) = cap1("^VERSION=(.*)", line) {
                    if collected_str("distribution_version") == "NA" {
                        set(&mut f, "distribution_version", v.trim_matches('"').into());
                    }
                }
            }
            (true, f)
        }
        "Coreos" => {
            if distro.distribution().to_lowercase() != "coreos" || data.is_empty() {
                return (false, f);
            }
            if let Some(r) = cap1("^GROUP=(.*)", data) {
                set(&mut f, "distribution_release", r.trim_matches('"').into());
            }
            (true, f)
        }
        "Flatcar" => {
            if distro.distribution().to_lowercase() != "flatcar" || data.is_empty() {
                return (false, f);
            }
            if let Some(v) = cap1("VERSION=(.*)", data) {
                let v = v.trim_matches('"').to_string();
                set(
                    &mut f,
                    "distribution_major_version",
                    v.split('.').next().unwrap_or("").into(),
                );
                set(&mut f, "distribution_version", v);
            }
            (true, f)
        }
        "ClearLinux" => {
            // Ansible tests the *name* ("ClearLinux"), so this always matches once the
            // file is there, then requires "Clear Linux" in NAME.
            if let Some(p) = cap1(r#"NAME="(.*)""#, data) {
                if !p.contains("Clear Linux") {
                    return (false, f);
                }
                set(&mut f, "distribution", p);
            }
            if let Some(v) = cap1("VERSION_ID=(.*)", data) {
                set(&mut f, "distribution_major_version", v.clone());
                set(&mut f, "distribution_version", v);
            }
            if let Some(r) = cap1("ID=(.*)", data) {
                set(&mut f, "distribution_release", r);
            }
            (true, f)
        }
        "CentOS" => {
            if data.contains("CentOS Stream") {
                set(&mut f, "distribution_release", "Stream".into());
                return (true, f);
            }
            if data.contains("TencentOS Server") {
                set(&mut f, "distribution", "TencentOS".into());
                return (true, f);
            }
            (false, f)
        }
        // VMwareESX (allow-empty), Gentoo: no parser in Ansible, never "parsed".
        _ => (false, f),
    }
}

fn parse_suse(raw: &Raw, data: &str, path: &str, collected: &Facts) -> (bool, Facts) {
    let mut f = Facts::new();
    let lower = data.to_lowercase();
    if !lower.contains("suse") {
        return (false, f);
    }
    if path == "/etc/os-release" {
        for line in data.lines() {
            if let Some(d) = cap1("^NAME=(.*)", line) {
                f.insert("distribution".into(), d.trim_matches('"').into());
            }
            if let Some(v) = cap1(r#"^VERSION_ID="?([0-9]+\.?[0-9]*)"?"#, line) {
                f.insert(
                    "distribution_major_version".into(),
                    v.split('.').next().unwrap_or("").into(),
                );
                f.insert("distribution_version".into(), v.into());
            }
            if lower.contains("open") {
                if let Some(r) = cap1(r#"^VERSION_ID="?[0-9]+\.?([0-9]*)"?"#, line) {
                    f.insert("distribution_release".into(), r.into());
                }
            } else if lower.contains("enterprise") && line.contains("VERSION_ID") {
                let r =
                    cap1(r#"^VERSION_ID="?[0-9]+\.?([0-9]*)"?"#, line).filter(|r| !r.is_empty());
                f.insert(
                    "distribution_release".into(),
                    r.unwrap_or_else(|| "0".into()).into(),
                );
            }
        }
    } else if path == "/etc/SuSE-release" {
        if lower.contains("open") {
            if let Some(first) = raw
                .lines(path)
                .first()
                .and_then(|l| l.split_whitespace().next())
            {
                f.insert("distribution".into(), first.into());
            }
            for line in data.lines() {
                if let Some(r) = cap1("CODENAME *= *([^\n]+)", line) {
                    f.insert("distribution_release".into(), r.trim().into());
                }
            }
        } else if lower.contains("enterprise") {
            if data.contains("Server") {
                f.insert("distribution".into(), "SLES".into());
            } else if data.contains("Desktop") {
                f.insert("distribution".into(), "SLED".into());
            }
            for line in data.lines() {
                if let Some(r) = cap1("PATCHLEVEL = ([0-9]+)", line) {
                    let base = collected
                        .get("distribution_version")
                        .and_then(Value::as_str)
                        .unwrap_or("");
                    f.insert("distribution_version".into(), format!("{base}.{r}").into());
                    f.insert("distribution_release".into(), r.into());
                }
            }
        }
    }
    if let Some(variant) = cap1(r#"(?m)^VARIANT_ID="?([^"\n]*)"?"#, data) {
        if variant == "server-sap" || variant == "sles-sap" {
            f.insert("distribution".into(), "SLES_SAP".into());
        } else if variant == "transactional" {
            f.insert("distribution".into(), "SL-Micro".into());
        }
    } else if let Some(real) = raw.link_abs("/etc/products.d/baseproduct") {
        if real.ends_with("SLES_SAP.prod") {
            f.insert("distribution".into(), "SLES_SAP".into());
        } else if real.ends_with("SL-Micro.prod") {
            f.insert("distribution".into(), "SL-Micro".into());
        }
    }
    (true, f)
}

fn parse_debian(raw: &Raw, data: &str, path: &str, _collected: &Facts) -> (bool, Facts) {
    let mut f = Facts::new();
    let mut set = |k: &str, v: String| {
        f.insert(k.into(), v.into());
    };
    let version_id = |set: &mut dyn FnMut(&str, String)| {
        if let Some(v) = cap1(r#"VERSION_ID="(.*)""#, data) {
            set(
                "distribution_major_version",
                v.split('.').next().unwrap_or("").into(),
            );
            set("distribution_version", v);
        }
    };
    if data.contains("Debian") || data.contains("Raspbian") {
        set("distribution", "Debian".into());
        if let Some(r) = cap1(r"PRETTY_NAME=[^(]+ \(?([^)]+?)\)", data) {
            set("distribution_release", r);
        }
        // (Ansible's last resort for a missing codename, `dpkg --status tzdata`, is not run.)
        for line in raw.lines("/etc/debian_version") {
            if let Some(minor) = cap_n(r"(\d+)\.(\d+)", line.trim(), 2) {
                set("distribution_minor_version", minor);
            }
        }
    } else if data.contains("Ubuntu") {
        set("distribution", "Ubuntu".into());
    } else if data.contains("SteamOS") {
        set("distribution", "SteamOS".into());
    } else if (path == "/etc/lsb-release" || path == "/etc/os-release")
        && (data.contains("Kali") || data.contains("Parrot"))
    {
        set(
            "distribution",
            if data.contains("Kali") {
                "Kali"
            } else {
                "Parrot"
            }
            .into(),
        );
        if let Some(r) = cap1("DISTRIB_RELEASE=(.*)", data) {
            set("distribution_release", r);
        }
    } else if data.contains("Devuan") {
        set("distribution", "Devuan".into());
        if let Some(r) = cap1(r#"PRETTY_NAME="?[^("]+ \(?([^) "]+)\)?"#, data) {
            set("distribution_release", r);
        }
        if let Some(v) = cap1(r#"VERSION_ID="(.*)""#, data) {
            set("distribution_version", v.clone());
            set("distribution_major_version", v);
        }
    } else if data.contains("Cumulus") {
        set("distribution", "Cumulus Linux".into());
        if let Some(v) = cap1("VERSION_ID=(.*)", data) {
            let parts: Vec<&str> = v.split('.').collect();
            if parts.len() == 3 {
                set("distribution_major_version", parts[0].into());
                set("distribution_version", v.clone());
            }
        }
        if let Some(r) = cap1(r#"VERSION="(.*)""#, data) {
            set("distribution_release", r);
        }
    } else if data.contains("Mint") {
        set("distribution", "Linux Mint".into());
        version_id(&mut set);
    } else if data.contains("UOS") || data.contains("Uos") || data.contains("uos") {
        set("distribution", "Uos".into());
        if let Some(r) = cap1(r#"VERSION_CODENAME="?([^"]+)"?"#, data) {
            set("distribution_release", r);
        }
        version_id(&mut set);
    } else if data.contains("Deepin") || data.contains("deepin") {
        set("distribution", "Deepin".into());
        if let Some(r) = cap1(r#"VERSION_CODENAME="?([^"]+)"?"#, data) {
            set("distribution_release", r);
        }
        version_id(&mut set);
    } else if data.contains("LMDE") {
        set("distribution", "Linux Mint Debian Edition".into());
    } else {
        return (false, f);
    }
    (true, f)
}
