//! Platform and system facts: `uname` as Python's `platform` reports it, the host names,
//! and the small collectors (service manager, package manager, user, SELinux, LSB, DNS,
//! kernel command line).
//!
//! Ported from ansible-core's `platform.py`, `service_mgr.py`, `pkg_mgr.py`, `user.py`,
//! `selinux.py`, `lsb.py`, `dns.py` and `cmdline.py`, quirks included.

use std::collections::BTreeMap;

use indexmap::IndexMap;
use serde_json::{Map, Value};

use super::distro::os_release_pairs;
use super::network::push;
use super::raw::{basename, py_int, strip_chars, Raw};

/// `uname` fields, as Python's `platform` module reports them.
pub(super) struct Platform {
    pub(super) system: String,
    pub(super) nodename: String,
    pub(super) kernel: String,
    pub(super) kernel_version: String,
    pub(super) machine: String,
}

impl Platform {
    pub(super) fn new(raw: &Raw) -> Platform {
        let line = raw.section("uname").first().copied().unwrap_or("");
        let t: Vec<&str> = line.split_whitespace().collect();
        let get = |i: usize| t.get(i).map(|s| s.to_string()).unwrap_or_default();
        let (machine, middle) = if t.len() >= 5 {
            (t[t.len() - 1].to_string(), t[3..t.len() - 1].join(" "))
        } else {
            (String::new(), String::new())
        };
        let system = get(0);
        Platform {
            system: if system.is_empty() {
                "Linux".into()
            } else {
                system
            },
            nodename: get(1),
            kernel: get(2),
            kernel_version: raw.content("/proc/sys/kernel/version").unwrap_or(middle),
            machine,
        }
    }
}

pub(super) fn platform_facts(raw: &Raw, p: &Platform, af: &mut BTreeMap<String, Value>) {
    af.insert("system".into(), p.system.clone().into());
    af.insert("kernel".into(), p.kernel.clone().into());
    af.insert("kernel_version".into(), p.kernel_version.clone().into());
    af.insert("machine".into(), p.machine.clone().into());
    af.insert("architecture".into(), p.machine.clone().into());
    af.insert("nodename".into(), p.nodename.clone().into());
    af.insert(
        "hostname".into(),
        p.nodename.split('.').next().unwrap_or("").into(),
    );
    let fqdn = fqdn(raw, &p.nodename);
    af.insert(
        "domain".into(),
        fqdn.split('.').skip(1).collect::<Vec<_>>().join(".").into(),
    );
    af.insert("fqdn".into(), fqdn.into());
    let machine_id = raw
        .content("/var/lib/dbus/machine-id")
        .or_else(|| raw.content("/etc/machine-id"));
    if let Some(id) = machine_id.as_deref().and_then(|m| m.lines().next()) {
        af.insert("machine_id".into(), id.into());
    }
}

/// Python's `socket.getfqdn()`: the first name with a dot among the reverse lookup's
/// names, else its canonical name; the node name when nothing resolves.
fn fqdn(raw: &Raw, nodename: &str) -> String {
    for line in raw.section("fqdn") {
        if let Some(f) = line.strip_prefix("-f ") {
            let f = f.trim();
            if !f.is_empty() {
                return f.to_string();
            }
            continue;
        }
        let names: Vec<&str> = line.split_whitespace().skip(1).collect();
        if let Some(first) = names.first() {
            return names
                .iter()
                .find(|n| n.contains('.'))
                .unwrap_or(first)
                .to_string();
        }
    }
    nodename.to_string()
}

pub(super) fn service_mgr(raw: &Raw, plat: &Platform, af: &BTreeMap<String, Value>) -> String {
    let mut proc_1 = raw.content("/proc/1/comm");
    if proc_1.is_none() {
        proc_1 = raw.link("/sbin/init").map(str::to_string);
    }
    let proc_1 = proc_1
        .map(|p| basename(&p).trim().to_string())
        .filter(|p| p != "init" && !p.ends_with("sh"));
    if let Some(p) = proc_1 {
        return match p.as_str() {
            "procd" => "openwrt_init".into(),
            "runit-init" => "runit".into(),
            "svscan" => "svc".into(),
            "openrc-init" => "openrc".into(),
            _ => p,
        };
    }
    let dist = af.get("distribution").and_then(Value::as_str).unwrap_or("");
    if dist == "OpenWrt" {
        return "openwrt_init".into();
    }
    if dist == "SMGL" {
        return "simpleinit_msb".into();
    }
    if plat.system == "Linux" {
        let systemctl = raw.has_cmd("systemctl");
        if systemctl
            && ["/run/systemd/system", "/dev/.run/systemd", "/dev/.systemd"]
                .iter()
                .any(|p| raw.exists(p))
        {
            return "systemd".into();
        }
        if raw.has_cmd("initctl") && raw.exists("/etc/init") {
            return "upstart".into();
        }
        if raw.exists("/sbin/openrc") {
            return "openrc".into();
        }
        if systemctl
            && raw
                .link("/sbin/init")
                .is_some_and(|l| basename(l) == "systemd")
        {
            return "systemd".into();
        }
        if raw.exists("/etc/init.d") {
            return "sysvinit".into();
        }
        if raw.exists("/etc/dinit.d") {
            return "dinit".into();
        }
    }
    "service".into()
}

const PKG_MGRS: &[(&str, &str)] = &[
    ("/usr/bin/rpm-ostree", "atomic_container"),
    ("/usr/bin/yum", "dnf"),
    ("/usr/bin/dnf-3", "dnf"),
    ("/usr/bin/dnf5", "dnf5"),
    ("/usr/bin/apt-get", "apt"),
    ("/usr/bin/zypper", "zypper"),
    ("/usr/sbin/urpmi", "urpmi"),
    ("/usr/bin/pacman", "pacman"),
    ("/bin/opkg", "opkg"),
    ("/sbin/apk", "apk"),
    ("/usr/bin/emerge", "portage"),
    ("/usr/bin/xbps-install", "xbps"),
    ("/usr/bin/swupd", "swupd"),
    ("/usr/sbin/sorcery", "sorcery"),
];

/// Ansible's `pkg_mgr` (the apt-rpm check of Altlinux is reduced to the family rule).
pub(super) fn pkg_mgr(raw: &Raw, af: &BTreeMap<String, Value>) -> String {
    let mut name = "unknown".to_string();
    for (path, n) in PKG_MGRS {
        if raw.exists(path) {
            name = n.to_string();
        }
    }
    match af.get("os_family").and_then(Value::as_str).unwrap_or("") {
        "RedHat" => {
            if raw.exists("/run/ostree-booted") {
                return "atomic_container".into();
            }
            for bin in ["/usr/bin/dnf", "/usr/bin/microdnf"] {
                if raw.exists(bin) {
                    let real = raw.link_abs(bin).unwrap_or_else(|| bin.to_string());
                    return if real == "/usr/bin/dnf5" {
                        "dnf5"
                    } else {
                        "dnf"
                    }
                    .into();
                }
            }
            "unknown".into()
        }
        "Debian" => "apt".into(),
        "Altlinux" if name == "apt" => "apt_rpm".into(),
        _ => name,
    }
}

/// Ansible's `user` facts: the login name from the environment, its passwd entry, and the
/// process ids (from `/proc/self/status`).
pub(super) fn user_facts(raw: &Raw, af: &mut BTreeMap<String, Value>) {
    let lines = raw.section("user");
    let env_name = lines.first().map(|s| s.trim()).unwrap_or("");
    let entry: Option<Vec<&str>> = lines
        .iter()
        .skip(1)
        .map(|l| l.split(':').collect::<Vec<_>>())
        .find(|f| f.len() >= 7);
    let name = if env_name.is_empty() {
        entry.as_ref().map(|e| e[0]).unwrap_or("")
    } else {
        env_name
    };
    if !name.is_empty() {
        af.insert("user_id".into(), name.into());
    }
    if let Some(e) = entry {
        if let (Some(uid), Some(gid)) = (py_int(e[2]), py_int(e[3])) {
            af.insert("user_uid".into(), uid.into());
            af.insert("user_gid".into(), gid.into());
        }
        af.insert("user_gecos".into(), e[4].into());
        af.insert("user_dir".into(), e[5].into());
        af.insert("user_shell".into(), e[6].into());
    }
    let ids = |key: &str| -> Vec<i64> {
        raw.lines("/proc/self/status")
            .iter()
            .find_map(|l| l.strip_prefix(key))
            .map(|r| r.split_whitespace().filter_map(py_int).collect())
            .unwrap_or_default()
    };
    let (uids, gids) = (ids("Uid:"), ids("Gid:"));
    if uids.len() >= 2 {
        af.insert("real_user_id".into(), uids[0].into());
        af.insert("effective_user_id".into(), uids[1].into());
    }
    if let Some(g) = gids.first() {
        af.insert("real_group_id".into(), (*g).into());
        // Ansible reports getgid() here too.
        af.insert("effective_group_id".into(), (*g).into());
    }
}

pub(super) fn selinux_facts(raw: &Raw, af: &mut BTreeMap<String, Value>) {
    let mut s = Map::new();
    match raw.content("/sys/fs/selinux/enforce") {
        None => {
            s.insert("status".into(), "disabled".into());
        }
        Some(enforce) => {
            s.insert("status".into(), "enabled".into());
            let policyvers = raw
                .content("/sys/fs/selinux/policyvers")
                .as_deref()
                .and_then(py_int);
            s.insert(
                "policyvers".into(),
                policyvers
                    .map(Value::from)
                    .unwrap_or_else(|| "unknown".into()),
            );
            let config = os_release_pairs(&raw.text("/etc/selinux/config").unwrap_or_default());
            let config_mode = match config.get("SELINUX").map(|m| m.to_lowercase()).as_deref() {
                Some("enforcing") => "enforcing",
                Some("permissive") => "permissive",
                Some("disabled") => "disabled",
                _ => "unknown",
            };
            s.insert("config_mode".into(), config_mode.into());
            let mode = match enforce.as_str() {
                "1" => "enforcing",
                "0" => "permissive",
                _ => "unknown",
            };
            s.insert("mode".into(), mode.into());
            s.insert(
                "type".into(),
                config
                    .get("SELINUXTYPE")
                    .cloned()
                    .unwrap_or_else(|| "unknown".into())
                    .into(),
            );
        }
    }
    af.insert("selinux".into(), Value::Object(s));
    af.insert("selinux_python_present".into(), true.into());
}

/// Ansible's `lsb`: from (emulated) `lsb_release -a`, else `/etc/lsb-release`.
pub(super) fn lsb_facts(raw: &Raw, lsb_output: Option<&[(String, String)]>) -> Value {
    let mut m: IndexMap<&str, String> = IndexMap::new();
    if let Some(lines) = lsb_output {
        for (label, value) in lines {
            let key = match label.as_str() {
                "Distributor ID" => "id",
                "Description" => "description",
                "Release" => "release",
                "Codename" => "codename",
                _ => continue,
            };
            m.insert(key, value.trim().to_string());
        }
    }
    if m.is_empty() {
        for line in raw.lines("/etc/lsb-release") {
            let Some((_, value)) = line.split_once('=') else {
                continue;
            };
            let key = if line.contains("DISTRIB_ID") {
                "id"
            } else if line.contains("DISTRIB_RELEASE") {
                "release"
            } else if line.contains("DISTRIB_DESCRIPTION") {
                "description"
            } else if line.contains("DISTRIB_CODENAME") {
                "codename"
            } else {
                continue;
            };
            m.insert(key, value.trim().to_string());
        }
    }
    if let Some(r) = m.get("release").cloned() {
        m.insert(
            "major_release",
            r.split('.').next().unwrap_or("").to_string(),
        );
    }
    let mut out = Map::new();
    for (k, v) in m {
        out.insert(k.into(), strip_chars(&v, "'\"\\").into());
    }
    Value::Object(out)
}

pub(super) fn dns_facts(raw: &Raw) -> Value {
    let mut dns = Map::new();
    for line in raw.content("/etc/resolv.conf").unwrap_or_default().lines() {
        if line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        let t: Vec<&str> = line.split_whitespace().collect();
        let Some(&first) = t.first() else { continue };
        let list = |from: &[&str]| Value::Array(from.iter().map(|s| Value::from(*s)).collect());
        match first {
            "nameserver" => {
                for ns in &t[1..] {
                    push(&mut dns, "nameservers", (*ns).into());
                }
                dns.entry("nameservers")
                    .or_insert_with(|| Value::Array(vec![]));
            }
            "domain" if t.len() > 1 => {
                dns.insert("domain".into(), t[1].into());
            }
            "search" => {
                dns.insert("search".into(), list(&t[1..]));
            }
            "sortlist" => {
                dns.insert("sortlist".into(), list(&t[1..]));
            }
            "options" => {
                let mut o = Map::new();
                for opt in &t[1..] {
                    match opt.split_once(':') {
                        Some((k, v)) if !v.is_empty() => o.insert(k.into(), v.into()),
                        Some((k, _)) => o.insert(k.into(), true.into()),
                        None => o.insert((*opt).into(), true.into()),
                    };
                }
                dns.insert("options".into(), Value::Object(o));
            }
            _ => {}
        }
    }
    Value::Object(dns)
}

/// Python's `shlex.split(s, posix=False)`: whitespace-separated, a token that starts with a
/// quote runs to the closing quote (quotes kept); `None` for an unclosed quote.
pub(super) fn split_non_posix(s: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    let mut tok = String::new();
    let mut quote: Option<char> = None;
    let mut in_word = false;
    for c in s.chars() {
        if let Some(q) = quote {
            tok.push(c);
            if c == q {
                out.push(std::mem::take(&mut tok));
                quote = None;
            }
        } else if c.is_whitespace() {
            if in_word {
                out.push(std::mem::take(&mut tok));
                in_word = false;
            }
        } else if !in_word && (c == '"' || c == '\'') {
            tok.push(c);
            quote = Some(c);
        } else {
            tok.push(c);
            in_word = true;
        }
    }
    if quote.is_some() {
        return None;
    }
    if in_word {
        out.push(tok);
    }
    Some(out)
}

/// Ansible's `cmdline` (last value wins) and `proc_cmdline` (repeated keys become lists).
pub(super) fn cmdline_facts(data: &str) -> (Value, Value) {
    let mut cmdline = Map::new();
    let mut proc_cmdline = Map::new();
    for piece in split_non_posix(data).unwrap_or_default() {
        match piece.split_once('=') {
            None => {
                cmdline.insert(piece.clone(), true.into());
                proc_cmdline.insert(piece, true.into());
            }
            Some((k, v)) => {
                cmdline.insert(k.into(), v.into());
                match proc_cmdline.get_mut(k) {
                    Some(Value::Array(a)) => a.push(v.into()),
                    Some(old) => *old = Value::Array(vec![old.clone(), v.into()]),
                    None => {
                        proc_cmdline.insert(k.into(), v.into());
                    }
                }
            }
        }
    }
    (Value::Object(cmdline), Value::Object(proc_cmdline))
}
