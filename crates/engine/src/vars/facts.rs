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

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::{LazyLock, Mutex};

use indexmap::IndexMap;
use regex::Regex;
use serde_json::{json, Map, Value};

use super::VarMap;

/// The remote script: POSIX `sh` (dash and busybox tested), one round trip, no Python.
///
/// It forks about ten short processes; everything else is shell built-ins or the one
/// `grep -H ''` that dumps all small files (each output line is `path:line`).
pub const SCRIPT: &str = r#"LC_ALL=C; export LC_ALL
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

// ---------------------------------------------------------------------------------------
// Raw output
// ---------------------------------------------------------------------------------------

/// The script's output split into its sections and, for `files`, into files.
struct Raw<'a> {
    sections: HashMap<&'a str, Vec<&'a str>>,
    /// Path → its lines, in dump order. Only the first block of a path counts: overlapping
    /// globs may dump a file twice.
    files: IndexMap<&'a str, Vec<&'a str>>,
}

impl<'a> Raw<'a> {
    fn new(output: &'a str) -> Raw<'a> {
        let mut sections: HashMap<&str, Vec<&str>> = HashMap::new();
        let mut files: IndexMap<&str, Vec<&str>> = IndexMap::new();
        let mut current: Option<&str> = None;
        let mut last_path: Option<&str> = None;
        let mut skipping = false;
        for line in output.lines() {
            if let Some(name) = line.strip_prefix(SECTION) {
                let name = name.trim();
                sections.entry(name).or_default();
                current = Some(name);
                last_path = None;
                continue;
            }
            match current {
                Some("files") => {
                    let Some((path, rest)) = line.split_once(':') else {
                        continue;
                    };
                    if last_path != Some(path) {
                        skipping = files.contains_key(path);
                        last_path = Some(path);
                    }
                    if !skipping {
                        files.entry(path).or_default().push(rest);
                    }
                }
                Some(name) => sections.entry(name).or_default().push(line),
                None => {}
            }
        }
        Raw { sections, files }
    }

    fn has_section(&self, name: &str) -> bool {
        self.sections.contains_key(name)
    }

    fn section(&self, name: &str) -> &[&'a str] {
        self.sections.get(name).map(|v| v.as_slice()).unwrap_or(&[])
    }

    /// A dumped file's lines (empty when absent).
    fn lines(&self, path: &str) -> &[&'a str] {
        self.files.get(path).map(|v| v.as_slice()).unwrap_or(&[])
    }

    /// A dumped file's text, lines joined.
    fn text(&self, path: &str) -> Option<String> {
        self.files.get(path).map(|l| l.join("\n"))
    }

    /// Python's `get_file_content`: stripped, `None` when absent or empty.
    fn content(&self, path: &str) -> Option<String> {
        let t = self.text(path)?;
        let t = t.trim();
        (!t.is_empty()).then(|| t.to_string())
    }

    /// True when the script saw the path (tested for existence, or dumped with content).
    fn exists(&self, path: &str) -> bool {
        self.section("exists").contains(&path) || self.files.contains_key(path)
    }

    fn has_cmd(&self, cmd: &str) -> bool {
        self.section("cmds").contains(&cmd)
    }

    /// Target of a symbolic link listed by `ls -ld` in the `links` section (as `readlink`).
    fn link(&self, path: &str) -> Option<&'a str> {
        self.section("links").iter().find_map(|l| {
            let (left, target) = l.split_once(" -> ")?;
            (left.split_whitespace().last() == Some(path)).then_some(target.trim())
        })
    }

    /// Where a symbolic link points, made absolute (one level: enough for `dnf -> dnf5`).
    fn link_abs(&self, path: &str) -> Option<String> {
        let target = self.link(path)?;
        if target.starts_with('/') {
            return Some(target.to_string());
        }
        let mut parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
        parts.pop();
        for seg in target.split('/') {
            match seg {
                "" | "." => {}
                ".." => {
                    parts.pop();
                }
                s => parts.push(s),
            }
        }
        Some(format!("/{}", parts.join("/")))
    }
}

/// Python's `int()` on a trimmed string.
fn py_int(s: &str) -> Option<i64> {
    s.trim().parse().ok()
}

/// A compiled regex, cached: the same few dozen patterns serve every host.
fn regex(pattern: &str) -> Option<Regex> {
    static CACHE: LazyLock<Mutex<HashMap<String, Regex>>> = LazyLock::new(Default::default);
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(re) = cache.get(pattern) {
        return Some(re.clone());
    }
    let re = Regex::new(pattern).ok()?;
    cache.insert(pattern.to_string(), re.clone());
    Some(re)
}

/// First capture group of a regex search, like Python's `re.search(p, s).group(1)`.
fn cap1(pattern: &str, text: &str) -> Option<String> {
    let re = regex(pattern)?;
    re.captures(text)
        .and_then(|c| c.get(1))
        .map(|m| m.as_str().to_string())
}

/// Capture group `n` of a regex search.
fn cap_n(pattern: &str, text: &str, n: usize) -> Option<String> {
    let re = regex(pattern)?;
    re.captures(text)
        .and_then(|c| c.get(n))
        .map(|m| m.as_str().to_string())
}

/// Python's `str.capitalize()`.
fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f
            .to_uppercase()
            .chain(c.flat_map(|ch| ch.to_lowercase()))
            .collect(),
        None => String::new(),
    }
}

/// Python's `str.strip(chars)`.
fn strip_chars<'s>(s: &'s str, chars: &str) -> &'s str {
    s.trim_matches(|c| chars.contains(c))
}

/// Python's `os.path.basename`.
fn basename(p: &str) -> &str {
    p.rsplit('/').next().unwrap_or(p)
}

// ---------------------------------------------------------------------------------------
// Platform
// ---------------------------------------------------------------------------------------

/// `uname` fields, as Python's `platform` module reports them.
struct Platform {
    system: String,
    nodename: String,
    kernel: String,
    kernel_version: String,
    machine: String,
}

impl Platform {
    fn new(raw: &Raw) -> Platform {
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

fn platform_facts(raw: &Raw, p: &Platform, af: &mut BTreeMap<String, Value>) {
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

// ---------------------------------------------------------------------------------------
// os-release and the `distro` library
// ---------------------------------------------------------------------------------------

/// The os-release file `distro` reads: `/etc/os-release`, else `/usr/lib/os-release`.
fn os_release_path(raw: &Raw) -> &'static str {
    if raw.files.contains_key("/etc/os-release") || !raw.files.contains_key("/usr/lib/os-release") {
        "/etc/os-release"
    } else {
        "/usr/lib/os-release"
    }
}

/// `KEY=value` assignments of a shell-syntax file (os-release, lsb-release), quotes and
/// escapes resolved as Python's `shlex` in POSIX mode does; later keys win.
fn os_release_pairs(text: &str) -> IndexMap<String, String> {
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
fn shlex_split(text: &str) -> Vec<String> {
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
fn lsb_release_output(raw: &Raw, os: &IndexMap<String, String>) -> Option<Vec<(String, String)>> {
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
struct Distro {
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
    fn new(
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
    fn distribution(&self) -> String {
        match capitalize(&self.id()).as_str() {
            "Amzn" => "Amazon".into(),
            "Rhel" => "Redhat".into(),
            "" => "OtherLinux".into(),
            other => other.into(),
        }
    }

    /// `sys_info.get_distribution_version()`.
    fn distribution_version(&self) -> String {
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
    fn distribution_codename(&self) -> Option<String> {
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
fn parse_distro_release_content(line: &str) -> HashMap<String, String> {
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

// ---------------------------------------------------------------------------------------
// Distribution (Ansible's DistributionFiles)
// ---------------------------------------------------------------------------------------

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

fn distribution_facts(
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

// ---------------------------------------------------------------------------------------
// Hardware: memory, CPU, uptime, block devices
// ---------------------------------------------------------------------------------------

/// `/proc/meminfo` in kB by key.
fn meminfo(raw: &Raw) -> HashMap<String, i64> {
    raw.lines("/proc/meminfo")
        .iter()
        .filter_map(|l| {
            let (k, v) = l.split_once(':')?;
            Some((k.to_string(), py_int(v.split_whitespace().next()?)?))
        })
        .collect()
}

/// Ansible's memory facts; returns kk's `memory`.
fn memory_facts(raw: &Raw, af: &mut BTreeMap<String, Value>) -> Value {
    let kb = meminfo(raw);
    let mb = |k: &str| kb.get(k).map(|v| v.div_euclid(1024));
    for (key, fact) in [
        ("MemTotal", "memtotal_mb"),
        ("MemFree", "memfree_mb"),
        ("SwapTotal", "swaptotal_mb"),
        ("SwapFree", "swapfree_mb"),
    ] {
        if let Some(v) = mb(key) {
            af.insert(fact.into(), v.into());
        }
    }
    if !kb.is_empty() {
        let sub = |a: Option<i64>, b: Option<i64>| Some(a? - b?);
        let nocache_free = (|| Some(mb("Cached")? + mb("MemFree")? + mb("Buffers")?))();
        af.insert(
            "memory_mb".into(),
            json!({
                "real": {"total": mb("MemTotal"), "used": sub(mb("MemTotal"), mb("MemFree")), "free": mb("MemFree")},
                "nocache": {"free": nocache_free, "used": sub(mb("MemTotal"), nocache_free)},
                "swap": {"total": mb("SwapTotal"), "free": mb("SwapFree"),
                         "used": sub(mb("SwapTotal"), mb("SwapFree")), "cached": mb("SwapCached")},
            }),
        );
    }
    let mut m = Map::new();
    if let Some(t) = mb("MemTotal") {
        m.insert("total_mb".into(), t.into());
    }
    // Kernels before 3.14 have no MemAvailable: estimate it as free + buffers + cache.
    let avail = mb("MemAvailable")
        .or_else(|| Some(mb("MemFree")? + mb("Buffers").unwrap_or(0) + mb("Cached").unwrap_or(0)));
    if let Some(a) = avail {
        m.insert("available_mb".into(), a.into());
    }
    if let Some(v) = mb("MemFree") {
        m.insert("free_mb".into(), v.into());
    }
    if let Some(v) = mb("SwapTotal") {
        m.insert("swap_total_mb".into(), v.into());
    }
    Value::Object(m)
}

/// Key of Ansible's `sockets`/`cores` dicts: its loop starts with the *integer* 0, which
/// is a different key from the string "0" read from the file.
#[derive(PartialEq, Eq, Hash, Clone)]
enum CpuKey {
    Initial,
    Str(String),
}

/// Ansible's `get_cpu_facts` for Linux, ported with its quirks.
fn cpu_facts(raw: &Raw, plat: &Platform, af: &mut BTreeMap<String, Value>) {
    let lines = raw.lines("/proc/cpuinfo");
    if lines.is_empty() {
        return;
    }
    let xen = raw.exists("/proc/xen")
        || raw
            .lines("/sys/hypervisor/type")
            .first()
            .is_some_and(|l| l.trim() == "xen");
    let mut xen_paravirt = false;
    let (mut i, mut vendor_occ, mut model_occ, mut proc_occ) = (0i64, 0i64, 0i64, 0i64);
    let (mut zp, mut zmt) = (0i64, 0i64);
    let mut physid = CpuKey::Initial;
    let mut coreid = CpuKey::Initial;
    let mut sockets: IndexMap<CpuKey, i64> = IndexMap::new();
    let mut cores: IndexMap<CpuKey, i64> = IndexMap::new();
    let mut processor: Vec<Value> = Vec::new();
    let mut flags: Option<Vec<Value>> = None;
    for line in lines {
        let (key, val) = match line.split_once(':') {
            Some((k, v)) => (k.trim(), v.trim()),
            None => (line.trim(), ""),
        };
        if xen && key == "flags" && !val.contains("vme") {
            xen_paravirt = true;
        }
        if key == "flags" {
            flags = Some(val.split_whitespace().map(Value::from).collect());
        }
        match key {
            "model name" | "Processor" | "vendor_id" | "cpu" | "Vendor" | "processor" => {
                processor.push(val.into());
                match key {
                    "vendor_id" => vendor_occ += 1,
                    "model name" => model_occ += 1,
                    "processor" => proc_occ += 1,
                    _ => {}
                }
                i += 1;
            }
            "physical id" => {
                physid = CpuKey::Str(val.into());
                sockets.entry(physid.clone()).or_insert(1);
            }
            "core id" => {
                coreid = CpuKey::Str(val.into());
                // Ansible checks `sockets` here, not `cores`.
                if !sockets.contains_key(&coreid) {
                    cores.insert(coreid.clone(), 1);
                }
            }
            "cpu cores" => {
                if let Some(v) = py_int(val) {
                    sockets.insert(physid.clone(), v);
                }
            }
            "siblings" => {
                if let Some(v) = py_int(val) {
                    cores.insert(coreid.clone(), v);
                }
            }
            "# processors" => zp = py_int(val).unwrap_or(zp),
            "max thread id" => zmt = py_int(val).map(|v| v + 1).unwrap_or(zmt),
            "ncpus active" => i = py_int(val).unwrap_or(i),
            _ => {}
        }
    }
    if vendor_occ > 0 && vendor_occ == model_occ {
        i = vendor_occ;
    }
    let arch = plat.machine.as_str();
    if arch.starts_with("armv") || arch.starts_with("aarch") || arch.starts_with("ppc") {
        i = proc_occ;
    }
    let (count, ncores, tpc, vcpus, mut nproc);
    if arch == "s390x" {
        count = 1;
        ncores = if zmt != 0 {
            (zp as f64 / zmt as f64).round_ties_even() as i64
        } else {
            0
        };
        tpc = zmt;
        vcpus = zp;
        nproc = zp;
    } else if xen_paravirt {
        (count, ncores, tpc, vcpus, nproc) = (i, i, 1, i, i);
    } else {
        count = if sockets.is_empty() {
            i
        } else {
            sockets.len() as i64
        };
        ncores = sockets
            .values()
            .next()
            .copied()
            .filter(|v| *v != 0)
            .unwrap_or(1);
        let first_core = cores.values().next().copied().unwrap_or(1);
        tpc = (first_core as f64 / ncores as f64).round_ties_even() as i64;
        vcpus = tpc * count * ncores;
        nproc = proc_occ;
    }
    if let Some(n) = affinity_count(raw) {
        nproc = n;
    }
    af.insert("processor".into(), Value::Array(processor));
    if let Some(f) = flags {
        af.insert("flags".into(), Value::Array(f));
    }
    af.insert("processor_count".into(), count.into());
    af.insert("processor_cores".into(), ncores.into());
    af.insert("processor_threads_per_core".into(), tpc.into());
    af.insert("processor_vcpus".into(), vcpus.into());
    af.insert("processor_nproc".into(), nproc.into());
}

/// CPUs this process may run on (`os.sched_getaffinity`), from `Cpus_allowed_list`.
fn affinity_count(raw: &Raw) -> Option<i64> {
    let line = raw
        .lines("/proc/self/status")
        .iter()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?;
    let mut n = 0i64;
    for part in line.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => n += py_int(b)? - py_int(a)? + 1,
            None => {
                py_int(part)?;
                n += 1
            }
        }
    }
    (n > 0).then_some(n)
}

fn uptime_facts(raw: &Raw, af: &mut BTreeMap<String, Value>) {
    if let Some(c) = raw.content("/proc/uptime") {
        if let Some(s) = c.split(' ').next().and_then(|s| s.parse::<f64>().ok()) {
            af.insert("uptime_seconds".into(), (s.trunc() as i64).into());
        }
    }
}

/// Python's `bytes_to_human`.
fn bytes_to_human(size: f64) -> String {
    const RANGES: &[(&str, u32)] = &[
        ("Y", 80),
        ("Z", 70),
        ("E", 60),
        ("P", 50),
        ("T", 40),
        ("G", 30),
        ("M", 20),
        ("K", 10),
        ("B", 0),
    ];
    for &(suffix, shift) in RANGES {
        let limit = 2f64.powi(shift as i32);
        if size >= limit || shift == 0 {
            let unit = if shift == 0 {
                "Bytes".to_string()
            } else {
                format!("{suffix}B")
            };
            return format!("{:.2} {}", size / limit, unit);
        }
    }
    format!("{size:.2} Bytes")
}

/// Block device names under `/sys/block`, sorted.
fn block_devices(raw: &Raw) -> BTreeSet<String> {
    raw.files
        .keys()
        .filter_map(|p| p.strip_prefix("/sys/block/"))
        .filter_map(|r| r.split_once('/').map(|(d, _)| d.to_string()))
        .collect()
}

/// A subset of Ansible's `devices`: size, sector size, model, vendor, rotational,
/// removable, scheduler and partitions (no links, holders, serials or PCI host).
fn device_facts(raw: &Raw, af: &mut BTreeMap<String, Value>) {
    let names = block_devices(raw);
    if names.is_empty() {
        return;
    }
    let mut devices = Map::new();
    for name in &names {
        let dir = format!("/sys/block/{name}");
        let get = |rel: &str| raw.content(&format!("{dir}/{rel}"));
        let mut d = Map::new();
        d.insert("virtual".into(), 1.into());
        d.insert("vendor".into(), get("device/vendor").into());
        d.insert("model".into(), get("device/model").into());
        d.insert("removable".into(), get("removable").into());
        d.insert("rotational".into(), get("queue/rotational").into());
        let scheduler = get("queue/scheduler")
            .and_then(|s| cap1(r".*?\[(.*)\]", &s))
            .unwrap_or_default();
        d.insert("scheduler_mode".into(), scheduler.into());
        let sectorsize = get("queue/logical_block_size");
        let ss = sectorsize
            .as_deref()
            .and_then(py_int)
            .filter(|v| *v > 0)
            .unwrap_or(512);
        d.insert(
            "sectorsize".into(),
            sectorsize.map(Value::from).unwrap_or_else(|| 512.into()),
        );
        let sectors = get("size").as_deref().and_then(py_int).unwrap_or(0) * 512 / ss;
        d.insert("sectors".into(), sectors.into());
        d.insert(
            "size".into(),
            bytes_to_human(sectors as f64 * ss as f64).into(),
        );
        d.insert("host".into(), "".into());
        d.insert("sas_address".into(), get("device/sas_address").into());
        d.insert(
            "sas_device_handle".into(),
            get("device/sas_device_handle").into(),
        );
        if let Some(serial) = get("device/serial") {
            d.insert("serial".into(), serial.into());
        }
        let discard = if get("queue/discard_max_hw_bytes").as_deref() == Some("0") {
            Some("0".to_string())
        } else {
            get("queue/discard_granularity")
        };
        d.insert("support_discard".into(), discard.into());
        d.insert("holders".into(), holders(raw, &dir));
        let mut parts = Map::new();
        let prefix = format!("{dir}/");
        let part_names: BTreeSet<&str> = raw
            .files
            .keys()
            .filter_map(|p| p.strip_prefix(prefix.as_str()))
            .filter_map(|r| r.strip_suffix("/start"))
            .filter(|p| !p.contains('/'))
            .collect();
        for part in part_names {
            let start = raw
                .content(&format!("{dir}/{part}/start"))
                .unwrap_or_else(|| "0".into());
            let psectors = raw
                .content(&format!("{dir}/{part}/size"))
                .as_deref()
                .and_then(py_int)
                .unwrap_or(0);
            parts.insert(
                part.into(),
                json!({"start": start, "sectors": psectors, "sectorsize": 512,
                       "size": bytes_to_human(psectors as f64 * 512.0),
                       "holders": holders(raw, &format!("{dir}/{part}"))}),
            );
        }
        d.insert("partitions".into(), Value::Object(parts));
        devices.insert(name.clone(), Value::Object(d));
    }
    af.insert("devices".into(), Value::Object(devices));
}

const FORM_FACTOR: &[&str] = &[
    "Unknown",
    "Other",
    "Unknown",
    "Desktop",
    "Low Profile Desktop",
    "Pizza Box",
    "Mini Tower",
    "Tower",
    "Portable",
    "Laptop",
    "Notebook",
    "Hand Held",
    "Docking Station",
    "All In One",
    "Sub Notebook",
    "Space-saving",
    "Lunch Box",
    "Main Server Chassis",
    "Expansion Chassis",
    "Sub Chassis",
    "Bus Expansion Chassis",
    "Peripheral Chassis",
    "RAID Chassis",
    "Rack Mount Chassis",
    "Sealed-case PC",
    "Multi-system",
    "CompactPCI",
    "AdvancedTCA",
    "Blade",
    "Blade Enclosure",
    "Tablet",
    "Convertible",
    "Detachable",
    "IoT Gateway",
    "Embedded PC",
    "Mini PC",
    "Stick PC",
];

/// Ansible's DMI facts from `/sys/devices/virtual/dmi/id` ("NA" when unreadable;
/// `dmidecode` is not run, so hosts without the sysfs files get "NA" throughout).
fn dmi_facts(raw: &Raw, af: &mut BTreeMap<String, Value>) {
    for (key, file) in [
        ("bios_date", "bios_date"),
        ("bios_vendor", "bios_vendor"),
        ("bios_version", "bios_version"),
        ("board_asset_tag", "board_asset_tag"),
        ("board_name", "board_name"),
        ("board_serial", "board_serial"),
        ("board_vendor", "board_vendor"),
        ("board_version", "board_version"),
        ("chassis_asset_tag", "chassis_asset_tag"),
        ("chassis_serial", "chassis_serial"),
        ("chassis_vendor", "chassis_vendor"),
        ("chassis_version", "chassis_version"),
        ("form_factor", "chassis_type"),
        ("product_name", "product_name"),
        ("product_serial", "product_serial"),
        ("product_uuid", "product_uuid"),
        ("product_version", "product_version"),
        ("system_vendor", "sys_vendor"),
    ] {
        let value = match raw.content(&format!("/sys/devices/virtual/dmi/id/{file}")) {
            None => "NA".to_string(),
            Some(data) if key == "form_factor" => {
                match data.parse::<usize>().ok().and_then(|i| FORM_FACTOR.get(i)) {
                    Some(f) => f.to_string(),
                    None => format!("unknown ({data})"),
                }
            }
            Some(data) => data,
        };
        af.insert(key.into(), value.into());
    }
}

/// Device-mapper names holding a block device or partition (Ansible's `holders`).
fn holders(raw: &Raw, sysdir: &str) -> Value {
    let prefix = format!("{sysdir}/holders/");
    let names: BTreeSet<String> = raw
        .files
        .keys()
        .filter_map(|p| p.strip_prefix(prefix.as_str()))
        .filter_map(|r| r.strip_suffix("/dm/name"))
        .filter(|h| h.starts_with("dm-") && !h.contains('/'))
        .map(|h| {
            raw.content(&format!("{prefix}{h}/dm/name"))
                .unwrap_or_else(|| h.to_string())
        })
        .collect();
    names.into_iter().map(Value::from).collect()
}

// ---------------------------------------------------------------------------------------
// Network
// ---------------------------------------------------------------------------------------

/// Ansible's Linux network facts, ported from `network/linux.py`.
#[derive(Default)]
struct Network {
    /// Interface name → Ansible's per-interface dict, in Ansible's order (`/sys/class/net`
    /// directory order, aliases after their device).
    interfaces: IndexMap<String, Map<String, Value>>,
    default_ipv4: Map<String, Value>,
    default_ipv6: Map<String, Value>,
    all_ipv4: Vec<String>,
    all_ipv6: Vec<String>,
    /// Whether any network data was found at all.
    present: bool,
}

const INTERFACE_TYPES: &[(&str, &str)] = &[
    ("1", "ether"),
    ("32", "infiniband"),
    ("512", "ppp"),
    ("772", "loopback"),
    ("65534", "tunnel"),
];

impl Network {
    fn gather(raw: &Raw) -> Network {
        let mut net = Network::default();
        // Devices: directory order from `ls -f` (Ansible's glob order), then any others sorted.
        let seen: BTreeSet<&str> = raw
            .files
            .keys()
            .filter_map(|p| p.strip_prefix("/sys/class/net/"))
            .filter_map(|r| r.split_once('/').map(|(d, _)| d))
            .collect();
        let mut devices: Vec<&str> = raw
            .section("netorder")
            .iter()
            .copied()
            .filter(|n| seen.contains(n))
            .collect();
        for n in &seen {
            if !devices.contains(n) {
                devices.push(n);
            }
        }
        let have_ip = raw.has_section("ip");
        net.present = !devices.is_empty() || have_ip;
        if have_ip {
            net.default_ipv4 = route_get(raw.section("route4"), "8.8.8.8");
            net.default_ipv6 = route_get(raw.section("route6"), "2404:6800:400a:800::1012");
        } else {
            net.default_ipv4 = proc_net_route(raw);
        }
        // `ip -o addr` lines per device: (secondary, words before the `\`).
        let mut addrs: HashMap<&str, Vec<(bool, Vec<&str>)>> = HashMap::new();
        for line in raw.section("ip") {
            let body = line.split('\\').next().unwrap_or("");
            let mut w = body.split_whitespace();
            let (Some(_idx), Some(name)) = (w.next(), w.next()) else {
                continue;
            };
            let name = name.trim_end_matches(':');
            let name = name.split('@').next().unwrap_or(name);
            let words: Vec<&str> = w.collect();
            let secondary = words.iter().any(|x| *x == "secondary" || *x == "temporary");
            addrs.entry(name).or_default().push((secondary, words));
        }
        for device in devices {
            let dir = format!("/sys/class/net/{device}");
            let get = |rel: &str| raw.content(&format!("{dir}/{rel}"));
            let mut iface = Map::new();
            iface.insert("device".into(), device.into());
            let macaddress = get("address").unwrap_or_default();
            if !macaddress.is_empty() && macaddress != "00:00:00:00:00:00" {
                iface.insert("macaddress".into(), macaddress.clone().into());
            }
            if let Some(mtu) = get("mtu").as_deref().and_then(py_int) {
                iface.insert("mtu".into(), mtu.into());
            }
            if raw.files.contains_key(format!("{dir}/operstate").as_str()) {
                iface.insert(
                    "active".into(),
                    (get("operstate").as_deref() != Some("down")).into(),
                );
            }
            if let Some(t) = get("type") {
                let name = INTERFACE_TYPES
                    .iter()
                    .find(|(k, _)| *k == t)
                    .map(|(_, v)| *v)
                    .unwrap_or("unknown");
                iface.insert("type".into(), name.into());
            }
            if raw
                .files
                .contains_key(format!("{dir}/bridge/bridge_id").as_str())
            {
                iface.insert("type".into(), "bridge".into());
                let brif = format!("{dir}/brif/");
                let members: Vec<Value> = raw
                    .section("brif")
                    .iter()
                    .filter_map(|p| p.strip_prefix(brif.as_str()))
                    .map(Value::from)
                    .collect();
                iface.insert("interfaces".into(), Value::Array(members));
                iface.insert(
                    "id".into(),
                    get("bridge/bridge_id").unwrap_or_default().into(),
                );
                iface.insert(
                    "stp".into(),
                    (get("bridge/stp_state").as_deref() == Some("1")).into(),
                );
            }
            if raw
                .files
                .contains_key(format!("{dir}/bonding/mode").as_str())
            {
                let first = |rel: &str| {
                    get(rel)
                        .and_then(|s| s.split_whitespace().next().map(String::from))
                        .unwrap_or_default()
                };
                iface.insert("type".into(), "bonding".into());
                let slaves: Vec<Value> = get("bonding/slaves")
                    .unwrap_or_default()
                    .split_whitespace()
                    .map(Value::from)
                    .collect();
                iface.insert("slaves".into(), Value::Array(slaves));
                iface.insert("mode".into(), first("bonding/mode").into());
                iface.insert("miimon".into(), first("bonding/miimon").into());
                iface.insert("lacp_rate".into(), first("bonding/lacp_rate").into());
                if let Some(p) = get("bonding/primary") {
                    iface.insert("primary".into(), p.into());
                    if let Some(a) = get("bonding/all_slaves_active") {
                        iface.insert("all_slaves_active".into(), (a == "1").into());
                    }
                }
            }
            if raw
                .files
                .contains_key(format!("{dir}/bonding_slave/perm_hwaddr").as_str())
            {
                iface.insert(
                    "perm_macaddress".into(),
                    get("bonding_slave/perm_hwaddr").unwrap_or_default().into(),
                );
            }
            if let Some(m) = raw.link(&format!("{dir}/device/driver/module")) {
                iface.insert("module".into(), basename(m).into());
            }
            if let Some(d) = raw.link(&format!("{dir}/device")) {
                iface.insert("pciid".into(), basename(d).into());
            }
            if let Some(speed) = get("speed").as_deref().and_then(py_int) {
                iface.insert("speed".into(), speed.into());
            }
            if let Some(flags) =
                get("flags").and_then(|f| i64::from_str_radix(f.trim_start_matches("0x"), 16).ok())
            {
                iface.insert("promisc".into(), (flags & 0x100 > 0).into());
            }
            net.interfaces.insert(device.to_string(), iface);

            if have_ip {
                let lines = addrs.get(device).map(|v| v.as_slice()).unwrap_or(&[]);
                let primary = lines.iter().filter(|(s, _)| !s);
                let secondary = lines.iter().filter(|(s, _)| *s);
                for (sec, words) in primary.chain(secondary) {
                    net.parse_ip_words(device, words, *sec, &macaddress);
                }
            } else {
                for line in raw.lines("/proc/net/if_inet6") {
                    let w: Vec<&str> = line.split_whitespace().collect();
                    if w.len() < 6 || w[5] != device {
                        continue;
                    }
                    let Some(addr) = u128::from_str_radix(w[0], 16)
                        .ok()
                        .map(|v| Ipv6Addr::from(v).to_string())
                    else {
                        continue;
                    };
                    let prefix = u32::from_str_radix(w[2], 16)
                        .map(|p| p.to_string())
                        .unwrap_or_default();
                    let scope = match w[3] {
                        "00" => "global",
                        "10" => "host",
                        "20" => "link",
                        "40" => "site",
                        _ => "unknown",
                    };
                    let words = [
                        "inet6".to_string(),
                        format!("{addr}/{prefix}"),
                        "scope".into(),
                        scope.into(),
                    ];
                    let words: Vec<&str> = words.iter().map(String::as_str).collect();
                    net.parse_ip_words(device, &words, false, &macaddress);
                }
            }
        }
        // Ansible replaces ':' (aliases such as eth0:1) with '_'.
        net.interfaces = std::mem::take(&mut net.interfaces)
            .into_iter()
            .map(|(k, v)| (k.replace(':', "_"), v))
            .collect();
        net
    }

    /// Ansible's `parse_ip_output` for one address line of `device`.
    fn parse_ip_words(&mut self, device: &str, words: &[&str], secondary: bool, macaddress: &str) {
        let Some(&kind) = words.first() else { return };
        let dev_mtu = self
            .interfaces
            .get(device)
            .and_then(|i| i.get("mtu"))
            .cloned()
            .unwrap_or(Value::Null);
        let dev_type = self
            .interfaces
            .get(device)
            .and_then(|i| i.get("type"))
            .cloned()
            .unwrap_or_else(|| "unknown".into());
        if kind == "inet" {
            let Some(&spec) = words.get(1) else { return };
            let mut broadcast = "";
            let (address, len) = match spec.split_once('/') {
                Some((a, l)) => {
                    if words.len() > 3 && words[2] == "brd" {
                        broadcast = words[3];
                    }
                    (a, l)
                }
                None => (spec, "32"),
            };
            let (Ok(addr), Some(bits)) = (
                address.parse::<Ipv4Addr>(),
                py_int(len).filter(|b| (0..=32).contains(b)),
            ) else {
                return;
            };
            let mask: u32 = (((1u64 << 32) - ((1u64 << 32) >> bits)) & 0xffff_ffff) as u32;
            let netmask = Ipv4Addr::from(mask).to_string();
            let network = Ipv4Addr::from(u32::from(addr) & mask).to_string();
            let entry = json!({"address": address, "broadcast": broadcast, "netmask": netmask, "network": network, "prefix": len});
            let iface = words.last().copied().unwrap_or(device);
            if iface != device {
                self.interfaces.insert(iface.to_string(), Map::new());
            }
            let target = self.interfaces.entry(iface.to_string()).or_default();
            if !secondary && !target.contains_key("ipv4") {
                target.insert("ipv4".into(), entry.clone());
            } else {
                push(target, "ipv4_secondaries", entry.clone());
            }
            if secondary {
                let dev = self.interfaces.entry(device.to_string()).or_default();
                dev.entry("ipv4_secondaries")
                    .or_insert_with(|| Value::Array(vec![]));
                if device != iface {
                    push(dev, "ipv4_secondaries", entry);
                }
            }
            if self.default_ipv4.get("address").and_then(Value::as_str) == Some(address) {
                let d = &mut self.default_ipv4;
                d.insert("broadcast".into(), broadcast.into());
                d.insert("netmask".into(), netmask.into());
                d.insert("network".into(), network.into());
                d.insert("prefix".into(), len.into());
                d.insert("macaddress".into(), macaddress.into());
                d.insert("mtu".into(), dev_mtu);
                d.insert("type".into(), dev_type);
                d.insert("alias".into(), iface.into());
            }
            if !address.starts_with("127.") {
                self.all_ipv4.push(address.to_string());
            }
        } else if kind == "inet6" {
            let (address, prefix, scope) = if words.get(2) == Some(&"peer") {
                let prefix = words
                    .get(3)
                    .and_then(|p| p.split_once('/'))
                    .map(|(_, p)| p)
                    .unwrap_or("");
                (words[1], prefix, words.get(5).copied().unwrap_or(""))
            } else {
                let Some((a, p)) = words.get(1).and_then(|s| s.split_once('/')) else {
                    return;
                };
                (a, p, words.get(3).copied().unwrap_or(""))
            };
            let dev = self.interfaces.entry(device.to_string()).or_default();
            push(
                dev,
                "ipv6",
                json!({"address": address, "prefix": prefix, "scope": scope}),
            );
            if self.default_ipv6.get("address").and_then(Value::as_str) == Some(address) {
                let d = &mut self.default_ipv6;
                d.insert("prefix".into(), prefix.into());
                d.insert("scope".into(), scope.into());
                d.insert("macaddress".into(), macaddress.into());
                d.insert("mtu".into(), dev_mtu);
                d.insert("type".into(), dev_type);
            }
            if address != "::1" {
                self.all_ipv6.push(address.to_string());
            }
        }
    }

    fn ansible_facts(&self, af: &mut BTreeMap<String, Value>) {
        if !self.present {
            return;
        }
        af.insert(
            "interfaces".into(),
            self.interfaces
                .keys()
                .map(|k| Value::from(k.as_str()))
                .collect(),
        );
        for (name, iface) in &self.interfaces {
            af.insert(name.clone(), Value::Object(iface.clone()));
        }
        af.insert(
            "default_ipv4".into(),
            Value::Object(self.default_ipv4.clone()),
        );
        af.insert(
            "default_ipv6".into(),
            Value::Object(self.default_ipv6.clone()),
        );
        af.insert(
            "all_ipv4_addresses".into(),
            self.all_ipv4
                .iter()
                .map(|a| Value::from(a.as_str()))
                .collect(),
        );
        af.insert(
            "all_ipv6_addresses".into(),
            self.all_ipv6
                .iter()
                .map(|a| Value::from(a.as_str()))
                .collect(),
        );
    }

    /// kk's `network`: interfaces with plain address lists, and the default routes.
    fn kk_facts(&self) -> Value {
        let mut ifaces = Map::new();
        for (name, i) in &self.interfaces {
            if !i.contains_key("device") {
                continue; // an alias entry (eth0_1): its addresses are listed under the device
            }
            let mut v4: Vec<Value> = i
                .get("ipv4")
                .and_then(|v| v.get("address"))
                .cloned()
                .into_iter()
                .collect();
            if let Some(Value::Array(sec)) = i.get("ipv4_secondaries") {
                v4.extend(sec.iter().filter_map(|s| s.get("address").cloned()));
            }
            // Addresses of alias labels (eth0:1) belong to this device too.
            for (alias, a) in &self.interfaces {
                if alias.starts_with(&format!("{name}_")) && !a.contains_key("device") {
                    v4.extend(a.get("ipv4").and_then(|v| v.get("address")).cloned());
                }
            }
            let mut seen = BTreeSet::new();
            v4.retain(|a| seen.insert(a.to_string()));
            let v6: Vec<Value> = match i.get("ipv6") {
                Some(Value::Array(a)) => {
                    a.iter().filter_map(|x| x.get("address").cloned()).collect()
                }
                _ => vec![],
            };
            let up = match i.get("active") {
                Some(Value::Bool(b)) => *b,
                _ => false,
            };
            ifaces.insert(
                name.clone(),
                json!({
                    "ipv4": v4, "ipv6": v6,
                    "mac": i.get("macaddress").cloned().unwrap_or(Value::Null),
                    "mtu": i.get("mtu").cloned().unwrap_or(Value::Null),
                    "up": up,
                }),
            );
        }
        let default = |d: &Map<String, Value>| {
            let mut m = Map::new();
            for k in ["interface", "address", "gateway"] {
                if let Some(v) = d.get(k) {
                    m.insert(k.into(), v.clone());
                }
            }
            Value::Object(m)
        };
        json!({"interfaces": ifaces, "default_ipv4": default(&self.default_ipv4), "default_ipv6": default(&self.default_ipv6)})
    }
}

fn push(m: &mut Map<String, Value>, key: &str, v: Value) {
    match m.entry(key).or_insert_with(|| Value::Array(vec![])) {
        Value::Array(a) => a.push(v),
        other => *other = Value::Array(vec![v]),
    }
}

/// Ansible's reading of `ip route get ADDR`: `dev`, `src` and `via` of the first line.
fn route_get(lines: &[&str], queried: &str) -> Map<String, Value> {
    let mut m = Map::new();
    let Some(first) = lines.first() else { return m };
    let words: Vec<&str> = first.split_whitespace().collect();
    if words.first() != Some(&queried) {
        return m;
    }
    for i in 0..words.len().saturating_sub(1) {
        match words[i] {
            "dev" => {
                m.insert("interface".into(), words[i + 1].into());
            }
            "src" => {
                m.insert("address".into(), words[i + 1].into());
            }
            "via" if words[i + 1] != queried => {
                m.insert("gateway".into(), words[i + 1].into());
            }
            _ => {}
        }
    }
    m
}

/// Default IPv4 interface and gateway from `/proc/net/route`, for hosts without `ip`.
fn proc_net_route(raw: &Raw) -> Map<String, Value> {
    let mut m = Map::new();
    for line in raw.lines("/proc/net/route").iter().skip(1) {
        let w: Vec<&str> = line.split_whitespace().collect();
        if w.len() >= 8 && w[1] == "00000000" && w[7] == "00000000" {
            m.insert("interface".into(), w[0].into());
            if let Ok(g) = u32::from_str_radix(w[2], 16) {
                if g != 0 {
                    m.insert(
                        "gateway".into(),
                        Ipv4Addr::from(g.to_le_bytes()).to_string().into(),
                    );
                }
            }
            break;
        }
    }
    m
}

// ---------------------------------------------------------------------------------------
// Service manager, package manager, user, SELinux, LSB, DNS
// ---------------------------------------------------------------------------------------

fn service_mgr(raw: &Raw, plat: &Platform, af: &BTreeMap<String, Value>) -> String {
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
fn pkg_mgr(raw: &Raw, af: &BTreeMap<String, Value>) -> String {
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
fn user_facts(raw: &Raw, af: &mut BTreeMap<String, Value>) {
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

fn selinux_facts(raw: &Raw, af: &mut BTreeMap<String, Value>) {
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
fn lsb_facts(raw: &Raw, lsb_output: Option<&[(String, String)]>) -> Value {
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

fn dns_facts(raw: &Raw) -> Value {
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
fn split_non_posix(s: &str) -> Option<Vec<String>> {
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
fn cmdline_facts(data: &str) -> (Value, Value) {
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

// ---------------------------------------------------------------------------------------
// kk's own names
// ---------------------------------------------------------------------------------------

/// Go's GOARCH name for a `uname -m` machine, which is what artifact URLs use.
fn normalize_arch(machine: &str) -> String {
    match machine {
        "x86_64" | "amd64" => "amd64",
        "aarch64" | "arm64" | "armv8l" | "armv8b" | "aarch64_be" => "arm64",
        "i386" | "i486" | "i586" | "i686" | "x86" => "386",
        "armv7l" | "armv7" | "armv6l" | "armv6" | "armv5tel" | "arm" => "arm",
        "ppc64le" => "ppc64le",
        "ppc64" => "ppc64",
        "s390x" => "s390x",
        "riscv64" => "riscv64",
        "loongarch64" | "loong64" => "loong64",
        "mips64" => "mips64",
        "mips64el" => "mips64le",
        other => other,
    }
    .to_string()
}

fn kk_os(plat: &Platform, release: &IndexMap<String, String>) -> Value {
    let get = |k: &str| release.get(k).cloned().unwrap_or_default();
    let rel: Map<String, Value> = release
        .iter()
        .map(|(k, v)| (k.clone(), Value::from(v.as_str())))
        .collect();
    json!({
        "type": plat.system,
        "id": get("ID"),
        "version_id": get("VERSION_ID"),
        "pretty_name": get("PRETTY_NAME"),
        "kernel_version": plat.kernel,
        "architecture": normalize_arch(&plat.machine),
        "architecture_raw": plat.machine,
        "hostname": plat.nodename,
        "release": rel,
    })
}

fn kk_cpu(raw: &Raw, af: &BTreeMap<String, Value>) -> Value {
    let lines = raw.lines("/proc/cpuinfo");
    let count = lines
        .iter()
        .filter(|l| {
            l.split_once(':')
                .is_some_and(|(k, _)| k.trim() == "processor")
        })
        .count();
    let model = lines.iter().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        matches!(
            k.trim(),
            "model name" | "Processor" | "cpu model" | "Model Name"
        )
        .then(|| v.trim().to_string())
    });
    let mut m = Map::new();
    if count > 0 {
        m.insert("count".into(), count.into());
    } else if let Some(v) = af.get("processor_vcpus") {
        m.insert("count".into(), v.clone());
    }
    m.insert(
        "model".into(),
        model.map(Value::from).unwrap_or(Value::Null),
    );
    for (k, fact) in [
        ("sockets", "processor_count"),
        ("cores_per_socket", "processor_cores"),
        ("threads_per_core", "processor_threads_per_core"),
    ] {
        if let Some(v) = af.get(fact) {
            m.insert(k.into(), v.clone());
        }
    }
    Value::Object(m)
}

fn kk_disks(raw: &Raw) -> Value {
    let mut disks = Map::new();
    for name in block_devices(raw) {
        let get = |rel: &str| raw.content(&format!("/sys/block/{name}/{rel}"));
        let sectors = get("size").as_deref().and_then(py_int).unwrap_or(0);
        let mut d = Map::new();
        d.insert("size_bytes".into(), (sectors * 512).into());
        d.insert(
            "rotational".into(),
            (get("queue/rotational").as_deref() == Some("1")).into(),
        );
        d.insert(
            "removable".into(),
            (get("removable").as_deref() == Some("1")).into(),
        );
        if let Some(m) = get("device/model") {
            d.insert("model".into(), m.into());
        }
        disks.insert(name, Value::Object(d));
    }
    Value::Object(disks)
}

/// "systemd" when PID 1 is systemd, else PID 1's name ("unknown" when unreadable).
fn kk_init(raw: &Raw) -> String {
    match raw.content("/proc/1/comm") {
        Some(c) => c,
        None if raw.exists("/run/systemd/system") => "systemd".into(),
        None => "unknown".into(),
    }
}

fn kk_kernel_modules(raw: &Raw) -> Value {
    let mods: BTreeSet<&str> = raw
        .lines("/proc/modules")
        .iter()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    mods.into_iter().map(Value::from).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEBIAN: &str = include_str!("../../tests/fixtures/facts/debian12-vm.txt");
    const MINIMAL: &str = include_str!("../../tests/fixtures/facts/busybox-minimal.txt");

    /// Builds script output from `(path, content)` files plus extra raw sections.
    fn output(sections: &str, files: &[(&str, &str)]) -> String {
        let mut s = String::from(sections);
        s.push_str("\n==kk:files\n");
        for (path, content) in files {
            for line in content.lines() {
                s.push_str(&format!("{path}:{line}\n"));
            }
        }
        s.push_str("==kk:end\n");
        s
    }

    #[test]
    fn debian_fixture_kk_names() {
        let f = parse(DEBIAN);
        assert_eq!(f["hostname"], "vm");
        let os = &f["os"];
        assert_eq!(os["id"], "debian");
        assert_eq!(os["version_id"], "12");
        assert_eq!(os["pretty_name"], "Debian GNU/Linux 12 (bookworm)");
        assert_eq!(os["architecture"], "amd64");
        assert_eq!(os["architecture_raw"], "x86_64");
        assert_eq!(os["kernel_version"], "6.18.44-fc-v595");
        assert_eq!(os["release"]["VERSION_CODENAME"], "bookworm");
        assert_eq!(f["memory"]["total_mb"], 24105);
        assert!(f["memory"]["available_mb"].is_u64());
        assert_eq!(f["cpu"]["count"], 2);
        assert_eq!(f["cpu"]["model"], "Intel(R) Xeon(R) Processor");
        let net = &f["network"];
        assert_eq!(
            net["default_ipv4"],
            json!({"interface": "eth0", "address": "192.0.2.2", "gateway": "192.0.2.1"})
        );
        assert_eq!(
            net["default_ipv6"],
            json!({"interface": "eth0", "address": "fd00::2", "gateway": "fd00::1"})
        );
        assert_eq!(
            net["interfaces"]["eth0"],
            json!({"ipv4": ["192.0.2.2"], "ipv6": ["fd00::2", "fe80::fc:ff:fe00:1"], "mac": "02:fc:00:00:00:01", "mtu": 1400, "up": true})
        );
        assert_eq!(net["interfaces"]["ifb0"]["up"], false);
        assert_eq!(
            f["disks"]["vda"],
            json!({"size_bytes": 274877906944u64, "rotational": true, "removable": false})
        );
        assert_eq!(f["init"], "process_api");
        assert!(f["kernel_modules"].as_array().is_some());
    }

    #[test]
    fn debian_fixture_ansible_names() {
        let f = parse(DEBIAN);
        // Values as `ansible localhost -m setup` (ansible-core 2.19) printed on the same machine.
        let parts = [
            json!({
                "distribution": "Debian", "distribution_version": "12.11", "distribution_major_version": "12",
                "distribution_minor_version": "11", "distribution_release": "bookworm", "os_family": "Debian",
                "distribution_file_path": "/etc/os-release", "distribution_file_variety": "Debian",
                "distribution_file_parsed": true,
                "system": "Linux", "kernel": "6.18.44-fc-v595", "kernel_version": "#1 SMP PREEMPT_DYNAMIC @0",
                "architecture": "x86_64", "machine": "x86_64", "hostname": "vm", "nodename": "vm", "fqdn": "localhost",
                "domain": "", "memtotal_mb": 24105, "swaptotal_mb": 0, "processor_vcpus": 2, "processor_count": 1,
                "processor_cores": 2, "processor_threads_per_core": 1, "processor_nproc": 2,
                "processor": ["0", "GenuineIntel", "Intel(R) Xeon(R) Processor", "1", "GenuineIntel", "Intel(R) Xeon(R) Processor"],
            }),
            json!({
                "default_ipv4": {"address": "192.0.2.2", "alias": "eth0", "broadcast": "192.0.2.255", "gateway": "192.0.2.1",
                    "interface": "eth0", "macaddress": "02:fc:00:00:00:01", "mtu": 1400, "netmask": "255.255.255.0",
                    "network": "192.0.2.0", "prefix": "24", "type": "ether"},
                "default_ipv6": {"address": "fd00::2", "gateway": "fd00::1", "interface": "eth0",
                    "macaddress": "02:fc:00:00:00:01", "mtu": 1400, "prefix": "64", "scope": "global", "type": "ether"},
                "all_ipv4_addresses": ["192.0.2.2"], "all_ipv6_addresses": ["fd00::2", "fe80::fc:ff:fe00:1"],
                "interfaces": ["ifb0", "ifb1", "lo", "eth0"],
            }),
            json!({
                "eth0": {"active": true, "device": "eth0", "ipv4": {"address": "192.0.2.2", "broadcast": "192.0.2.255",
                    "netmask": "255.255.255.0", "network": "192.0.2.0", "prefix": "24"},
                    "ipv6": [{"address": "fd00::2", "prefix": "64", "scope": "global"},
                             {"address": "fe80::fc:ff:fe00:1", "prefix": "64", "scope": "link"}],
                    "macaddress": "02:fc:00:00:00:01", "mtu": 1400, "pciid": "virtio2", "promisc": false, "speed": -1, "type": "ether"},
            }),
            json!({
                "lo": {"active": true, "device": "lo", "ipv4": {"address": "127.0.0.1", "broadcast": "", "netmask": "255.0.0.0",
                    "network": "127.0.0.0", "prefix": "8"}, "ipv6": [{"address": "::1", "prefix": "128", "scope": "host"}],
                    "mtu": 65536, "promisc": false, "type": "loopback"},
            }),
            json!({
                "service_mgr": "process_api", "pkg_mgr": "apt", "user_id": "root", "user_uid": 0, "user_gid": 0,
                "user_dir": "/root", "user_shell": "/bin/bash", "selinux": {"status": "disabled"},
                "apparmor": {"status": "disabled"}, "fips": false, "dns": {"nameservers": ["10.255.255.53"]},
            }),
            json!({
                "lsb": {"codename": "bookworm", "description": "Debian GNU/Linux 12 (bookworm)", "id": "Debian",
                    "major_release": "12", "release": "12"},
                "machine_id": "3d1219c7c4c5404aaa1f6d2a48adfda4", "bios_vendor": "NA", "product_name": "NA",
            }),
        ];
        for (k, v) in parts.iter().flat_map(|p| p.as_object().unwrap()) {
            assert_eq!(&f["ansible_facts"][k], v, "ansible_facts.{k}");
            assert_eq!(&f[&format!("ansible_{k}")], v, "ansible_{k}");
        }
        assert!(f["ansible_uptime_seconds"].is_u64());
        assert!(f["ansible_memfree_mb"].is_u64());
        assert_eq!(f["ansible_devices"]["vda"]["size"], "256.00 GB");
        assert_eq!(
            f["ansible_proc_cmdline"]["root"],
            "UUID=0b1d7e51-6a3c-4a8e-9f53-0c5e8d2d6c1e"
        );
        assert_eq!(f["module_setup"], true);
        assert!(f.get("ansible_python").is_none());
        // ansible_facts keys are sorted; the prefixed copies follow the kk names.
        let keys: Vec<&String> = f["ansible_facts"].as_object().unwrap().keys().collect();
        let mut sorted_keys = keys.clone();
        sorted_keys.sort();
        assert_eq!(keys, sorted_keys);
    }

    #[test]
    fn minimal_busybox_host() {
        let f = parse(MINIMAL);
        let a = &f["ansible_facts"];
        assert_eq!(a["distribution"], "Alpine");
        assert_eq!(a["distribution_version"], "3.19.1");
        assert_eq!(a["distribution_major_version"], "3");
        assert_eq!(a["distribution_release"], "NA");
        assert_eq!(a["os_family"], "Alpine");
        assert_eq!(a["service_mgr"], "openrc");
        assert_eq!(a["pkg_mgr"], "apk");
        assert_eq!(a["architecture"], "aarch64");
        assert_eq!(f["os"]["architecture"], "arm64");
        assert_eq!(a["fqdn"], "alpine1");
        assert_eq!(a["processor"], json!(["0", "1"]));
        assert_eq!(
            (
                &a["processor_count"],
                &a["processor_cores"],
                &a["processor_vcpus"]
            ),
            (&json!(2), &json!(1), &json!(2))
        );
        assert_eq!(a["user_id"], "nobody");
        assert!(a.get("user_uid").is_none());
        assert_eq!(a["real_user_id"], 65534);
        assert_eq!(a["memtotal_mb"], 1987);
        assert_eq!(
            f["memory"],
            json!({"total_mb": 1987, "available_mb": 1840, "free_mb": 1662, "swap_total_mb": 1023})
        );
        assert_eq!(a["lsb"], json!({}));
        assert_eq!(
            a["proc_cmdline"]["modules"],
            json!(["sd-mod", "usb-storage"])
        );
        assert_eq!(a["cmdline"]["\"quoted arg\""], true);
        // No `ip`: interfaces from sysfs, IPv6 from /proc/net/if_inet6, default route from /proc/net/route.
        assert_eq!(a["interfaces"], json!(["eth0", "lo"]));
        assert_eq!(
            a["default_ipv4"],
            json!({"gateway": "192.168.1.1", "interface": "eth0"})
        );
        assert_eq!(a["all_ipv6_addresses"], json!(["fe80::5054:ff:fe12:3456"]));
        assert_eq!(a["all_ipv4_addresses"], json!([]));
        assert_eq!(
            f["network"]["interfaces"]["eth0"]["ipv6"],
            json!(["fe80::5054:ff:fe12:3456"])
        );
        assert_eq!(
            f["network"]["default_ipv4"],
            json!({"interface": "eth0", "gateway": "192.168.1.1"})
        );
        assert_eq!(f["disks"], json!({}));
        assert!(a.get("devices").is_none());
        assert_eq!(f["kernel_modules"], json!([]));
        assert_eq!(f["init"], "init");
    }

    #[test]
    fn busybox_tools_give_the_same_facts() {
        // The same machine gathered with only busybox applets on PATH (no getent, no `ls -f`).
        let gnu = parse(DEBIAN);
        let bb = parse(include_str!(
            "../../tests/fixtures/facts/debian12-busybox.txt"
        ));
        for k in [
            "distribution",
            "distribution_version",
            "distribution_major_version",
            "distribution_release",
            "os_family",
            "kernel",
            "kernel_version",
            "architecture",
            "hostname",
            "memtotal_mb",
            "processor",
            "processor_vcpus",
            "processor_count",
            "processor_cores",
            "default_ipv4",
            "default_ipv6",
            "all_ipv4_addresses",
            "all_ipv6_addresses",
            "eth0",
            "lo",
            "service_mgr",
            "pkg_mgr",
            "user_id",
            "user_uid",
            "selinux",
        ] {
            assert_eq!(bb["ansible_facts"][k], gnu["ansible_facts"][k], "{k}");
        }
        let set = |v: &Value| {
            v.as_array()
                .map(|a| a.iter().map(|x| x.to_string()).collect::<BTreeSet<_>>())
        };
        assert_eq!(
            set(&bb["ansible_interfaces"]),
            set(&gnu["ansible_interfaces"])
        );
        assert_eq!(bb["ansible_fqdn"], "vm", "no getent: `hostname -f`");
        for k in ["os", "hostname", "network", "disks", "init"] {
            if k == "network" {
                assert_eq!(bb[k]["default_ipv4"], gnu[k]["default_ipv4"]);
                assert_eq!(bb[k]["interfaces"]["eth0"], gnu[k]["interfaces"]["eth0"]);
            } else {
                assert_eq!(bb[k], gnu[k], "{k}");
            }
        }
    }

    #[test]
    fn empty_or_garbage_output_never_fails() {
        for text in ["", "garbage\n", "==kk:files\nno colon here\n/x:y\n==kk:ip\n1:\n3: eth0 inet\n==kk:route4\nvia\n==kk:uname\nLinux\n"] {
            let f = parse(text);
            assert_eq!(f["ansible_system"], "Linux");
            assert_eq!(f["ansible_distribution"], "OtherLinux");
            assert!(f["ansible_facts"].is_object());
            assert!(f["os"]["release"].is_object());
        }
    }

    const UBUNTU_OS: &str = r#"PRETTY_NAME="Ubuntu 22.04.4 LTS"
NAME="Ubuntu"
VERSION_ID="22.04"
VERSION="22.04.4 LTS (Jammy Jellyfish)"
VERSION_CODENAME=jammy
ID=ubuntu
ID_LIKE=debian
UBUNTU_CODENAME=jammy"#;

    #[test]
    fn ubuntu_distribution() {
        let out = output(
            "==kk:uname\nLinux u1 5.15.0-91-generic #101-Ubuntu SMP x86_64\n==kk:cmds\nlsb_release\n==kk:exists\n/usr/bin/apt-get\n/etc/lsb-release",
            &[
                ("/etc/os-release", UBUNTU_OS),
                ("/etc/lsb-release", "DISTRIB_ID=Ubuntu\nDISTRIB_RELEASE=22.04\nDISTRIB_CODENAME=jammy\nDISTRIB_DESCRIPTION=\"Ubuntu 22.04.4 LTS\""),
                ("/etc/debian_version", "bookworm/sid"),
            ],
        );
        let f = parse(&out);
        let a = &f["ansible_facts"];
        assert_eq!(a["distribution"], "Ubuntu");
        assert_eq!(a["distribution_version"], "22.04");
        assert_eq!(a["distribution_major_version"], "22");
        assert_eq!(a["distribution_release"], "jammy");
        assert_eq!(a["os_family"], "Debian");
        assert_eq!(a["pkg_mgr"], "apt");
        assert_eq!(a["lsb"]["description"], "Ubuntu 22.04.4 LTS");
        assert_eq!(a["lsb"]["major_release"], "22");
        assert_eq!(f["os"]["id"], "ubuntu");
    }

    #[test]
    fn centos7_distribution() {
        let out = output(
            "==kk:uname\nLinux c7 3.10.0-1160.el7.x86_64 #1 SMP Mon Oct 19 16:18:59 UTC 2020 x86_64\n==kk:cmds\nsystemctl\n==kk:exists\n/run/systemd/system\n/usr/bin/yum\n/usr/bin/dnf\n==kk:links\nlrwxrwxrwx 1 root root 5 Oct 1 2020 /usr/bin/dnf -> dnf-3",
            &[
                (
                    "/etc/os-release",
                    "NAME=\"CentOS Linux\"\nVERSION=\"7 (Core)\"\nID=\"centos\"\nID_LIKE=\"rhel fedora\"\nVERSION_ID=\"7\"\nPRETTY_NAME=\"CentOS Linux 7 (Core)\"",
                ),
                ("/etc/centos-release", "CentOS Linux release 7.9.2009 (Core)"),
                ("/etc/redhat-release", "CentOS Linux release 7.9.2009 (Core)"),
                ("/etc/system-release", "CentOS Linux release 7.9.2009 (Core)"),
                ("/proc/1/comm", "systemd"),
            ],
        );
        let a = &parse(&out)["ansible_facts"];
        assert_eq!(a["distribution"], "CentOS");
        assert_eq!(a["distribution_version"], "7.9");
        assert_eq!(a["distribution_major_version"], "7");
        assert_eq!(a["distribution_release"], "Core");
        assert_eq!(a["distribution_file_variety"], "RedHat");
        assert_eq!(a["os_family"], "RedHat");
        assert_eq!(a["service_mgr"], "systemd");
        assert_eq!(a["pkg_mgr"], "dnf");
    }

    #[test]
    fn rocky9_and_openeuler_distribution() {
        let rocky = output(
            "==kk:uname\nLinux r9 5.14.0-362.8.1.el9_3.x86_64 #1 SMP PREEMPT_DYNAMIC x86_64\n==kk:exists\n/usr/bin/dnf",
            &[
                (
                    "/etc/os-release",
                    "NAME=\"Rocky Linux\"\nVERSION=\"9.3 (Blue Onyx)\"\nID=\"rocky\"\nID_LIKE=\"rhel centos fedora\"\nVERSION_ID=\"9.3\"\nPRETTY_NAME=\"Rocky Linux 9.3 (Blue Onyx)\"",
                ),
                ("/etc/redhat-release", "Rocky Linux release 9.3 (Blue Onyx)"),
                ("/etc/rocky-release", "Rocky Linux release 9.3 (Blue Onyx)"),
            ],
        );
        let a = &parse(&rocky)["ansible_facts"];
        assert_eq!(
            (
                &a["distribution"],
                &a["distribution_version"],
                &a["distribution_major_version"],
                &a["distribution_release"]
            ),
            (
                &json!("Rocky"),
                &json!("9.3"),
                &json!("9"),
                &json!("Blue Onyx")
            )
        );
        assert_eq!(a["os_family"], "RedHat");
        assert_eq!(a["pkg_mgr"], "dnf");

        let euler = output(
            "==kk:uname\nLinux e1 5.10.0-136.12.0.86.oe2203sp1.aarch64 #1 SMP aarch64",
            &[
                (
                    "/etc/os-release",
                    "NAME=\"openEuler\"\nVERSION=\"22.03 (LTS-SP1)\"\nID=\"openEuler\"\nVERSION_ID=\"22.03\"\nPRETTY_NAME=\"openEuler 22.03 (LTS-SP1)\"\nANSI_COLOR=\"0;31\"",
                ),
                ("/etc/openEuler-release", "openEuler release 22.03 (LTS-SP1)"),
            ],
        );
        let f = parse(&euler);
        let a = &f["ansible_facts"];
        assert_eq!(
            (
                &a["distribution"],
                &a["distribution_version"],
                &a["os_family"]
            ),
            (&json!("openEuler"), &json!("22.03"), &json!("RedHat"))
        );
        assert_eq!(f["os"]["architecture"], "arm64");
    }

    #[test]
    fn shlex_like_python() {
        assert_eq!(
            shlex_split(r#"A="x y" B='q "r"' C=a\ b D="e\"f\g" # comment"#),
            vec!["A=x y", "B=q \"r\"", "C=a b", "D=e\"f\\g"]
        );
        assert_eq!(shlex_split("E=\"\"\nF=1#x\nG=2"), vec!["E=", "F=1", "G=2"]);
        assert_eq!(shlex_split("H=\"unclosed"), vec!["H=unclosed"]);
        assert_eq!(
            split_non_posix("a \"b c\" d=\"e f\""),
            Some(vec![
                "a".into(),
                "\"b c\"".into(),
                "d=\"e".into(),
                "f\"".into()
            ])
        );
        assert_eq!(split_non_posix("\"open"), None);
    }

    #[test]
    fn distro_release_lines() {
        let c = parse_distro_release_content("CentOS Linux release 7.9.2009 (Core)");
        assert_eq!(
            (
                c["name"].as_str(),
                c["version_id"].as_str(),
                c["codename"].as_str()
            ),
            ("CentOS Linux", "7.9.2009", "Core")
        );
        let d = parse_distro_release_content("Debian GNU/Linux 12 (bookworm)");
        assert_eq!(
            (d["name"].as_str(), d["version_id"].as_str()),
            ("Debian GNU/Linux", "12")
        );
        let u = parse_distro_release_content("Ubuntu 22.04.4 LTS");
        assert_eq!(
            (u["name"].as_str(), u["version_id"].as_str()),
            ("Ubuntu", "22.04.4")
        );
        assert_eq!(
            parse_distro_release_content("Arch")
                .get("name")
                .map(String::as_str),
            Some("Arch")
        );
        assert!(parse_distro_release_content("").is_empty());
    }

    #[test]
    fn ip_secondaries_aliases_and_peers() {
        let out = output(
            "==kk:ip\n2: eth0    inet 10.0.0.5/24 brd 10.0.0.255 scope global eth0\\       valid_lft forever preferred_lft forever\n\
             2: eth0    inet 10.0.0.6/24 brd 10.0.0.255 scope global secondary eth0:1\\       valid_lft forever\n\
             2: eth0    inet6 2001:db8::5/64 scope global temporary dynamic \\       valid_lft 100sec\n\
             2: eth0    inet6 2001:db8::1/64 scope global \\       valid_lft forever\n\
             3: tun0    inet 172.16.0.1 peer 172.16.0.2/32 scope global tun0\\       valid_lft forever\n\
             ==kk:route4\n8.8.8.8 via 10.0.0.1 dev eth0 src 10.0.0.6 uid 0\n==kk:route6",
            &[
                ("/sys/class/net/eth0/address", "52:54:00:aa:bb:cc"),
                ("/sys/class/net/eth0/mtu", "1500"),
                ("/sys/class/net/eth0/type", "1"),
                ("/sys/class/net/tun0/mtu", "1400"),
                ("/sys/class/net/tun0/type", "65534"),
            ],
        );
        let f = parse(&out);
        let a = &f["ansible_facts"];
        assert_eq!(a["interfaces"], json!(["eth0", "eth0_1", "tun0"]));
        assert_eq!(a["eth0"]["ipv4"]["address"], "10.0.0.5");
        assert_eq!(a["eth0"]["ipv4_secondaries"][0]["address"], "10.0.0.6");
        assert_eq!(a["eth0_1"]["ipv4_secondaries"][0]["address"], "10.0.0.6");
        assert_eq!(
            a["eth0"]["ipv6"][0]["address"], "2001:db8::1",
            "primary (non-temporary) addresses first"
        );
        assert_eq!(
            a["tun0"]["ipv4"],
            json!({"address": "172.16.0.1", "broadcast": "", "netmask": "255.255.255.255", "network": "172.16.0.1", "prefix": "32"})
        );
        assert_eq!(a["default_ipv4"]["alias"], "eth0:1");
        assert_eq!(a["default_ipv4"]["netmask"], "255.255.255.0");
        assert_eq!(a["default_ipv6"], json!({}));
        assert_eq!(
            a["all_ipv4_addresses"],
            json!(["10.0.0.5", "10.0.0.6", "172.16.0.1"])
        );
        assert_eq!(
            f["network"]["interfaces"]["eth0"]["ipv4"],
            json!(["10.0.0.5", "10.0.0.6"])
        );
        assert!(f["network"]["interfaces"].get("eth0_1").is_none());
    }

    #[test]
    fn cpu_topology_and_helpers() {
        // Two sockets, 4 cores each, hyperthreading: 16 vCPUs.
        let mut cpuinfo = String::new();
        for p in 0..16 {
            cpuinfo.push_str(&format!(
                "processor\t: {p}\nvendor_id\t: GenuineIntel\nmodel name\t: Xeon\nphysical id\t: {}\nsiblings\t: 8\ncore id\t\t: {}\ncpu cores\t: 4\n\n",
                p / 8,
                p % 4
            ));
        }
        let f = parse(&output(
            "==kk:uname\nLinux h 6.1.0 #1 SMP x86_64",
            &[("/proc/cpuinfo", &cpuinfo)],
        ));
        let a = &f["ansible_facts"];
        assert_eq!(
            (
                &a["processor_count"],
                &a["processor_cores"],
                &a["processor_threads_per_core"]
            ),
            (&json!(2), &json!(4), &json!(2))
        );
        assert_eq!(
            (&a["processor_vcpus"], &a["processor_nproc"]),
            (&json!(16), &json!(16))
        );
        assert_eq!(f["cpu"]["count"], 16);
        assert_eq!(bytes_to_human(0.0), "0.00 Bytes");
        assert_eq!(bytes_to_human(1536.0), "1.50 KB");
        assert_eq!(bytes_to_human(274877906944.0), "256.00 GB");
        assert_eq!(normalize_arch("armv7l"), "arm");
        assert_eq!(normalize_arch("ppc64le"), "ppc64le");
    }

    /// Runs the real script on this machine and checks the main facts and their types.
    #[tokio::test]
    async fn gathers_on_this_machine() {
        use crate::connect::{local::LocalConnection, Connection, ExecRequest};
        let out = LocalConnection::new()
            .exec(&ExecRequest::script(SCRIPT))
            .await
            .unwrap();
        assert_eq!(out.rc, 0, "{}", out.stderr_text());
        let f = parse(&String::from_utf8_lossy(&out.stdout));
        assert!(f["hostname"].as_str().is_some_and(|h| !h.is_empty()));
        assert_eq!(f["os"]["type"], "Linux");
        assert!(f["os"]["id"].as_str().is_some_and(|s| !s.is_empty()));
        assert!(f["os"]["kernel_version"]
            .as_str()
            .is_some_and(|s| !s.is_empty()));
        assert!(f["os"]["architecture"]
            .as_str()
            .is_some_and(|s| !s.is_empty()));
        assert!(f["memory"]["total_mb"].as_u64().is_some_and(|m| m > 0));
        assert!(f["memory"]["available_mb"].is_u64());
        assert!(f["cpu"]["count"].as_u64().is_some_and(|c| c > 0));
        assert!(f["network"]["interfaces"].is_object());
        assert!(f["disks"].is_object());
        assert!(f["kernel_modules"].is_array());
        assert!(f["init"].is_string());
        for k in [
            "memtotal_mb",
            "memfree_mb",
            "processor_vcpus",
            "processor_count",
            "processor_cores",
            "uptime_seconds",
        ] {
            assert!(
                f[&format!("ansible_{k}")].is_u64(),
                "ansible_{k} = {}",
                f[&format!("ansible_{k}")]
            );
        }
        for k in [
            "distribution",
            "distribution_version",
            "distribution_major_version",
            "os_family",
            "system",
            "kernel",
            "architecture",
            "hostname",
            "fqdn",
            "service_mgr",
            "pkg_mgr",
            "user_id",
        ] {
            assert!(
                f[&format!("ansible_{k}")].is_string(),
                "ansible_{k} = {}",
                f[&format!("ansible_{k}")]
            );
            assert_eq!(f["ansible_facts"][k], f[&format!("ansible_{k}")]);
        }
        assert!(f["ansible_interfaces"].is_array());
        assert!(f["ansible_all_ipv4_addresses"].is_array());
        assert!(f["ansible_processor"].is_array());
    }
}
