//! `gather_subset`: which of the gathered facts `setup` returns, as ansible-core 2.19's
//! `get_collector_names` chooses its collectors (the minimal set always first, `all` and
//! named subsets added, `!` excludes, explicit names winning over excludes) and its
//! dependencies add theirs (`network` needs `platform` and `distribution`, `hardware`
//! needs `platform`). kk still gathers everything in its one command; the subset only
//! decides which facts are reported, so a host's earlier facts are not overwritten by
//! facts Ansible would not have gathered.

use std::collections::BTreeSet;

use crate::error::{Error, ErrorKind, Result};

/// Ansible's `minimal_gather_subset` (setup.py).
const MINIMAL: &[&str] = &[
    "apparmor",
    "caps",
    "cmdline",
    "date_time",
    "distribution",
    "dns",
    "env",
    "fips",
    "local",
    "lsb",
    "pkg_mgr",
    "platform",
    "python",
    "selinux",
    "service_mgr",
    "ssh_pub_keys",
    "user",
];

/// Every name `gather_subset` accepts besides `all` (collector names and their fact ids),
/// as Ansible's "Bad subset" message lists them.
const VALID: &[&str] = &[
    "all_ipv4_addresses",
    "all_ipv6_addresses",
    "apparmor",
    "architecture",
    "caps",
    "chroot",
    "cmdline",
    "date_time",
    "default_ipv4",
    "default_ipv6",
    "devices",
    "distribution",
    "distribution_major_version",
    "distribution_release",
    "distribution_version",
    "dns",
    "effective_group_ids",
    "effective_user_id",
    "env",
    "facter",
    "fibre_channel_wwn",
    "fips",
    "hardware",
    "interfaces",
    "is_chroot",
    "iscsi",
    "kernel",
    "kernel_version",
    "loadavg",
    "local",
    "lsb",
    "machine",
    "machine_id",
    "mounts",
    "network",
    "nvme",
    "ohai",
    "os_family",
    "pkg_mgr",
    "platform",
    "processor",
    "processor_cores",
    "processor_count",
    "python",
    "python_version",
    "real_user_id",
    "selinux",
    "service_mgr",
    "ssh_host_key_dsa_public",
    "ssh_host_key_ecdsa_public",
    "ssh_host_key_ed25519_public",
    "ssh_host_key_rsa_public",
    "ssh_host_pub_keys",
    "ssh_pub_keys",
    "system",
    "system_capabilities",
    "system_capabilities_enforced",
    "systemd",
    "user",
    "user_dir",
    "user_gecos",
    "user_gid",
    "user_id",
    "user_shell",
    "user_uid",
    "virtual",
    "virtualization_role",
    "virtualization_tech_guest",
    "virtualization_tech_host",
    "virtualization_type",
];

const PLATFORM: &[&str] = &[
    "architecture",
    "domain",
    "fqdn",
    "hostname",
    "kernel",
    "kernel_version",
    "machine",
    "machine_id",
    "nodename",
    "python_version",
    "system",
    "userspace_architecture",
    "userspace_bits",
];

const NETWORK: &[&str] = &[
    "all_ipv4_addresses",
    "all_ipv6_addresses",
    "default_ipv4",
    "default_ipv6",
    "interfaces",
];

/// The collector a subset name (collector name or one of its fact ids) stands for.
fn collector_of_subset(name: &str) -> &str {
    if PLATFORM.contains(&name) {
        "platform"
    } else if name.starts_with("distribution") || name == "os_family" {
        "distribution"
    } else if NETWORK.contains(&name) {
        "network"
    } else if matches!(name, "devices" | "dmi" | "mounts") || name.starts_with("processor") {
        "hardware"
    } else if name.starts_with("user_")
        || name.starts_with("real_")
        || name.starts_with("effective_")
    {
        "user"
    } else if name.starts_with("virtualization_") {
        "virtual"
    } else if name.starts_with("ssh_host") {
        "ssh_pub_keys"
    } else if name.starts_with("system_capabilities") {
        "caps"
    } else if name == "is_chroot" {
        "chroot"
    } else {
        name
    }
}

/// The collectors a `gather_subset` list selects, dependencies included; an unknown name
/// to add is Ansible's error.
pub(crate) fn collectors(gather_subset: &[String]) -> Result<BTreeSet<String>> {
    let all: BTreeSet<&str> = VALID.iter().map(|s| collector_of_subset(s)).collect();
    let minimal: BTreeSet<&str> = MINIMAL.iter().copied().collect();
    let mut add: BTreeSet<&str> = minimal.clone();
    let mut exclude: BTreeSet<&str> = BTreeSet::new();
    let mut explicit: BTreeSet<&str> = BTreeSet::new();
    let asked: Vec<&str> = if gather_subset.is_empty() {
        vec!["all"]
    } else {
        gather_subset.iter().map(|s| s.trim()).collect()
    };
    for s in asked {
        match s {
            "min" => add.extend(&minimal),
            "all" => add.extend(&all),
            "!min" => exclude.extend(&minimal),
            "!all" => exclude.extend(all.difference(&minimal)),
            _ => {
                if let Some(x) = s.strip_prefix('!') {
                    exclude.insert(collector_of_subset(x));
                } else if VALID.contains(&s) {
                    explicit.insert(collector_of_subset(s));
                    add.insert(collector_of_subset(s));
                } else {
                    return Err(Error::new(
                        ErrorKind::ModuleArgs,
                        format!(
                            "Bad subset '{s}' given to Ansible. gather_subset options allowed: all, {}",
                            VALID.join(", ")
                        ),
                    ));
                }
            }
        }
    }
    let mut out: BTreeSet<String> = add
        .into_iter()
        .filter(|c| !exclude.contains(c) || explicit.contains(c))
        .map(String::from)
        .collect();
    if out.contains("network") {
        out.extend(["platform".to_string(), "distribution".to_string()]);
    }
    if out.contains("hardware") {
        out.insert("platform".into());
    }
    Ok(out)
}

/// The collector that reports a fact (unprefixed name); `interfaces` names the network
/// interfaces, whose own facts are the network collector's.
pub(crate) fn collector_of_fact<'a>(name: &'a str, interfaces: &[String]) -> &'a str {
    if PLATFORM.contains(&name) {
        return "platform";
    }
    if NETWORK.contains(&name) || interfaces.iter().any(|i| i == name) {
        return "network";
    }
    if name.starts_with("distribution") || name == "os_family" {
        return "distribution";
    }
    if [
        "bios_",
        "board_",
        "chassis_",
        "product_",
        "processor",
        "mem",
        "swap",
    ]
    .iter()
    .any(|p| name.starts_with(p))
        || matches!(
            name,
            "device_links"
                | "devices"
                | "flags"
                | "form_factor"
                | "lvm"
                | "mounts"
                | "system_vendor"
                | "uptime_seconds"
        )
    {
        return "hardware";
    }
    if name.starts_with("user_") || name.starts_with("real_") || name.starts_with("effective_") {
        return "user";
    }
    match name {
        "proc_cmdline" => "cmdline",
        "selinux_python_present" => "selinux",
        _ => collector_of_subset(name),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(s: &[&str]) -> Vec<String> {
        let v: Vec<String> = s.iter().map(|x| x.to_string()).collect();
        collectors(&v).unwrap().into_iter().collect()
    }

    #[test]
    fn subsets_like_ansible() {
        assert!(c(&["!all", "!min"]).is_empty());
        assert_eq!(
            c(&["!all", "!min", "network"]),
            ["distribution", "network", "platform"]
        );
        assert_eq!(c(&["!all", "!min", "hardware"]), ["hardware", "platform"]);
        let min = c(&["!all"]);
        assert_eq!(min, c(&["min"]));
        assert!(min.contains(&"env".to_string()) && !min.contains(&"network".to_string()));
        assert!(c(&["all"]).contains(&"hardware".to_string()));
        assert!(!c(&["!hardware"]).contains(&"hardware".to_string()));
        assert!(collectors(&["bogus".to_string()]).is_err());
        assert_eq!(collector_of_fact("memtotal_mb", &[]), "hardware");
        assert_eq!(collector_of_fact("eth0", &["eth0".into()]), "network");
        assert_eq!(collector_of_fact("hostname", &[]), "platform");
        assert_eq!(collector_of_fact("date_time", &[]), "date_time");
    }
}
