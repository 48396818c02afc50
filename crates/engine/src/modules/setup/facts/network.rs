//! Network facts: interfaces, addresses and default routes, from `ip addr`/`ip route`
//! output (or `/proc/net/route` without `ip`), ported from ansible-core's
//! `network/linux.py`.
//!
//! Kept in one place because both Ansible's `ansible_<iface>` facts and kk's `network`
//! summary are built from the same gathered [`Network`].

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::{Ipv4Addr, Ipv6Addr};

use indexmap::IndexMap;
use serde_json::{json, Map, Value};

use super::raw::{basename, py_int, Raw};

/// Ansible's Linux network facts, ported from `network/linux.py`.
#[derive(Default)]
pub(super) struct Network {
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
    pub(super) fn gather(raw: &Raw) -> Network {
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

    pub(super) fn ansible_facts(&self, af: &mut BTreeMap<String, Value>) {
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
    pub(super) fn kk_facts(&self) -> Value {
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

pub(super) fn push(m: &mut Map<String, Value>, key: &str, v: Value) {
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
