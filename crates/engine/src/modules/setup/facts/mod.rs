//! Facts: gathered by one remote shell command (no Python on the host), parsed on the
//! controller into kk's own names and Ansible's.
//!
//! The remote side ([`SCRIPT`]) only prints raw material: a few commands (`uname`, `ip`,
//! `getent`, `ls`, `readlink`) and one `grep -H ''` over every small file we read, each part
//! under a `==kk:NAME` header line. All interpretation happens here in [`parse`], on the
//! controller, so it is testable on captured output; a missing tool or file leaves its
//! section empty and the facts it feeds absent, never a failure.
//!
//! Ansible's values are reproduced by porting ansible-core 2.19's collectors rule by rule
//! (`distribution.py` with the bundled `distro`, `platform.py`, `hardware/linux.py`,
//! `network/linux.py`, `service_mgr.py`, `pkg_mgr.py`, `user.py`, `lsb.py`, `dns.py` …),
//! quirks included, so that a role testing `ansible_distribution_major_version == "12"`
//! behaves the same under kk.
//!
//! The parts, in the order [`parse`] uses them: `raw` splits the output into sections
//! and files; `system` reads `uname` and the service manager, package manager, user,
//! SELinux, LSB and DNS facts; `distro` and `distribution` name the distribution;
//! `hardware` reads memory, CPUs and disks; `network` the interfaces and routes; and
//! `kk_names` derives kk's own short names from them.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use crate::vars::VarMap;

mod distribution;
mod distro;
mod env_time;
mod hardware;
mod kk_names;
mod network;
mod raw;
mod subset;
mod system;

use distribution::distribution_facts;
use distro::{lsb_release_output, os_release_pairs, os_release_path, Distro};
use hardware::{cpu_facts, device_facts, dmi_facts, memory_facts, uptime_facts};
use kk_names::{kk_cpu, kk_disks, kk_init, kk_kernel_modules, kk_os};
use network::Network;
use raw::Raw;
use system::{
    cmdline_facts, dns_facts, lsb_facts, pkg_mgr, platform_facts, selinux_facts, service_mgr,
    user_facts, Platform,
};

/// The remote script: POSIX `sh` (dash and busybox tested), one round trip, no Python.
///
/// It forks about ten short processes; everything else is shell built-ins or the one
/// `grep -H ''` that dumps all small files (each output line is `path:line`).
pub const SCRIPT: &str = r#"echo '==kk:env'; export -p
LC_ALL=C; export LC_ALL
PATH="$PATH:/sbin:/usr/sbin:/usr/local/sbin:/bin:/usr/bin"
echo '==kk:uname'; uname -snrvm 2>/dev/null
echo '==kk:cmds'
for c in ip getent systemctl initctl lsb_release hostname; do command -v "$c" >/dev/null 2>&1 && echo "$c"; done
echo '==kk:fqdn'
n=; read -r n </proc/sys/kernel/hostname 2>/dev/null || n=$(uname -n 2>/dev/null)
if command -v getent >/dev/null 2>&1; then
  a=$(getent ahosts "$n" 2>/dev/null); a=${a%%[!0-9A-Fa-f.:]*}
  [ -n "$a" ] && getent hosts "$a" 2>/dev/null
elif command -v hostname >/dev/null 2>&1; then
  echo "-f $(hostname -f 2>/dev/null)"
fi
if command -v ip >/dev/null 2>&1; then
  echo '==kk:ip'; ip -o addr show 2>/dev/null
  echo '==kk:route4'; ip -4 route get 8.8.8.8 2>/dev/null
  echo '==kk:route6'; ip -6 route get 2404:6800:400a:800::1012 2>/dev/null
fi
echo '==kk:netorder'; ls -f /sys/class/net 2>/dev/null
echo '==kk:brif'
for p in /sys/class/net/*/brif/*; do [ -e "$p" ] && echo "$p"; done
echo '==kk:exists'
for p in /etc/arch-release /etc/vmware-release /run/systemd/system /dev/.run/systemd /dev/.systemd \
  /etc/init /sbin/openrc /etc/init.d /etc/dinit.d /proc/xen /sys/kernel/security/apparmor \
  /run/ostree-booted /usr/bin/rpm-ostree /usr/bin/yum /usr/bin/dnf-3 /usr/bin/dnf5 /usr/bin/dnf \
  /usr/bin/microdnf /usr/bin/apt-get /usr/bin/zypper /usr/sbin/urpmi /usr/bin/pacman /bin/opkg \
  /sbin/apk /usr/bin/emerge /usr/bin/xbps-install /usr/bin/swupd /usr/sbin/sorcery /etc/lsb-release; do
  [ -e "$p" ] && echo "$p"
done
echo '==kk:links'
ls -ld /sbin/init /usr/bin/dnf /usr/bin/microdnf /etc/products.d/baseproduct /sys/class/net/*/device \
  /sys/class/net/*/device/driver/module 2>/dev/null
echo '==kk:user'
u=${LOGNAME:-${USER:-${LNAME:-${USERNAME:-}}}}
[ -n "$u" ] || u=$(id -un 2>/dev/null)
echo "$u"; f=
while IFS= read -r l; do case $l in "$u":*) echo "$l"; f=1; break;; esac; done </etc/passwd 2>/dev/null
[ -z "$f" ] && command -v getent >/dev/null 2>&1 && getent passwd "$u" 2>/dev/null
echo '==kk:files'
grep -H '' /proc/sys/kernel/version /proc/cmdline /usr/lib/os-release /etc/*[-_]release /etc/*[-_]version \
  /etc/coreos/update.conf /etc/resolv.conf /proc/meminfo /proc/cpuinfo /proc/uptime /proc/1/comm \
  /proc/modules /proc/self/status /proc/sys/crypto/fips_enabled /sys/hypervisor/type \
  /var/lib/dbus/machine-id /etc/machine-id /sys/fs/selinux/enforce /sys/fs/selinux/policyvers \
  /etc/selinux/config /proc/net/route /proc/net/if_inet6 /sys/class/net/*/address \
  /sys/class/net/*/mtu /sys/class/net/*/operstate /sys/class/net/*/type /sys/class/net/*/flags \
  /sys/class/net/*/speed /sys/class/net/*/bridge/bridge_id /sys/class/net/*/bridge/stp_state \
  /sys/class/net/*/bonding/slaves /sys/class/net/*/bonding/mode /sys/class/net/*/bonding/miimon \
  /sys/class/net/*/bonding/lacp_rate /sys/class/net/*/bonding/primary \
  /sys/class/net/*/bonding/all_slaves_active /sys/class/net/*/bonding_slave/perm_hwaddr \
  /sys/block/*/size /sys/block/*/removable /sys/block/*/queue/rotational \
  /sys/block/*/queue/logical_block_size /sys/block/*/queue/scheduler /sys/block/*/device/model \
  /sys/block/*/device/vendor /sys/block/*/device/serial /sys/block/*/device/sas_address \
  /sys/block/*/device/sas_device_handle /sys/block/*/queue/discard_granularity \
  /sys/block/*/queue/discard_max_hw_bytes /sys/block/*/holders/*/dm/name /sys/block/*/*/holders/*/dm/name \
  /sys/block/*/*/start /sys/block/*/*/size /sys/devices/virtual/dmi/id/*_* \
  2>/dev/null
echo '==kk:date'
f='+%Y %m %A %w %W %d %H %M %S %s %N %z %Z'
printf 'now\n2000-01-01 12:00\n2000-07-01 12:00\n' | date -f - "$f" 2>/dev/null || date "$f" 2>/dev/null
echo '==kk:end'
"#;

const SECTION: &str = "==kk:";

/// Parses the script's output into the host's facts layer.
///
/// The map holds kk's own names (`os`, `hostname`, `memory`, `cpu`, `network`, `disks`,
/// `init`, `kernel_modules`), Ansible's facts under `ansible_facts` (unprefixed, keys
/// sorted), and the same facts again at top level with the `ansible_` prefix. Any input is
/// accepted: what cannot be read is left out.
pub fn parse(output: &str) -> VarMap {
    let raw = Raw::new(output);
    let plat = Platform::new(&raw);
    let os_release = os_release_pairs(&raw.text(os_release_path(&raw)).unwrap_or_default());
    let lsb_output = lsb_release_output(&raw, &os_release);
    let distro = Distro::new(&raw, &os_release, lsb_output.as_deref());

    let mut af: BTreeMap<String, Value> = BTreeMap::new();
    platform_facts(&raw, &plat, &mut af);
    distribution_facts(&raw, &plat, &distro, &mut af);
    let mem = memory_facts(&raw, &mut af);
    cpu_facts(&raw, &plat, &mut af);
    uptime_facts(&raw, &mut af);
    device_facts(&raw, &mut af);
    dmi_facts(&raw, &mut af);
    let net = Network::gather(&raw);
    net.ansible_facts(&mut af);
    let service_mgr = service_mgr(&raw, &plat, &af);
    af.insert("service_mgr".into(), service_mgr.into());
    let pkg_mgr = pkg_mgr(&raw, &af);
    af.insert("pkg_mgr".into(), pkg_mgr.into());
    user_facts(&raw, &mut af);
    selinux_facts(&raw, &mut af);
    af.insert(
        "apparmor".into(),
        json!({"status": if raw.exists("/sys/kernel/security/apparmor") { "enabled" } else { "disabled" }}),
    );
    af.insert("lsb".into(), lsb_facts(&raw, lsb_output.as_deref()));
    af.insert("dns".into(), dns_facts(&raw));
    af.insert(
        "fips".into(),
        (raw.content("/proc/sys/crypto/fips_enabled").as_deref() == Some("1")).into(),
    );
    if let Some(c) = raw.content("/proc/cmdline") {
        let (cmdline, proc_cmdline) = cmdline_facts(&c);
        af.insert("cmdline".into(), cmdline);
        af.insert("proc_cmdline".into(), proc_cmdline);
    }
    af.insert("local".into(), json!({}));
    af.insert("env".into(), env_time::env_facts(&raw));
    if let Some(d) = env_time::date_time_facts(&raw) {
        af.insert("date_time".into(), d);
    }
    // kk runs no Python on the host: `ansible_python` keeps its documented shape, each
    // value null, so playbooks that read a key get null instead of an undefined error.
    af.insert(
        "python".into(),
        json!({
            "executable": null, "has_sslcontext": null, "type": null,
            "version": {"major": null, "minor": null, "micro": null, "releaselevel": null, "serial": null},
            "version_info": [],
        }),
    );
    af.insert("gather_subset".into(), json!(["all"]));
    af.insert("module_setup".into(), true.into());

    let mut out = VarMap::new();
    out.insert("os".into(), kk_os(&plat, &os_release));
    out.insert("hostname".into(), plat.nodename.clone().into());
    out.insert("memory".into(), mem);
    out.insert("cpu".into(), kk_cpu(&raw, &af));
    out.insert("network".into(), net.kk_facts());
    out.insert("disks".into(), kk_disks(&raw));
    out.insert("init".into(), kk_init(&raw).into());
    out.insert("kernel_modules".into(), kk_kernel_modules(&raw));

    let facts: Map<String, Value> = af.iter().map(|(k, v)| (k.clone(), sorted(v))).collect();
    out.insert("ansible_facts".into(), Value::Object(facts.clone()));
    for (k, v) in facts {
        // Ansible injects these two without the prefix.
        if k == "gather_subset" || k == "module_setup" {
            out.insert(k, v);
        } else {
            out.insert(format!("ansible_{k}"), v);
        }
    }
    out
}

/// Keeps of `all` (what [`parse`] returned) the Ansible facts of the collectors that
/// `gather_subset` selects, and reports the subset as asked; kk's own names stay.
pub fn restrict(mut all: VarMap, gather_subset: &[String]) -> crate::error::Result<VarMap> {
    let chosen = subset::collectors(gather_subset)?;
    let asked: Value = if gather_subset.is_empty() {
        json!(["all"])
    } else {
        json!(gather_subset)
    };
    let Some(Value::Object(af)) = all.remove("ansible_facts") else {
        return Ok(all);
    };
    let interfaces: Vec<String> = af
        .get("interfaces")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    let keep = |k: &str| {
        matches!(k, "gather_subset" | "module_setup")
            || chosen.contains(subset::collector_of_fact(k, &interfaces))
    };
    let mut kept = Map::new();
    for (k, v) in af {
        if !keep(&k) {
            all.remove(&format!("ansible_{k}"));
            continue;
        }
        kept.insert(k, v);
    }
    kept.insert("gather_subset".into(), asked.clone());
    all.insert("gather_subset".into(), asked);
    all.insert("ansible_facts".into(), Value::Object(kept));
    Ok(all)
}

/// A copy of a value with every mapping's keys sorted, as Ansible prints facts.
fn sorted(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let b: BTreeMap<&String, Value> = m.iter().map(|(k, v)| (k, sorted(v))).collect();
            Value::Object(b.into_iter().map(|(k, v)| (k.clone(), v)).collect())
        }
        Value::Array(a) => Value::Array(a.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests;
