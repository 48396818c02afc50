//! The `ansible.utils` IP address filters and tests that cluster playbooks use:
//! `ipaddr` and its queries, `ipv4`, `ipv6`, `ipwrap`, `nthhost`, `ipmath`,
//! `ipsubnet`, `network_in_network`, `network_in_usable`, and the `in_network`
//! family of tests.
//!
//! Semantics follow ansible.utils (which uses netaddr): a value keeps its host bits
//! (`192.168.1.5/24` is an "address" in a network), invalid input gives `false`
//! rather than an error, and queries that do not apply give `none`. Filters are
//! registered under their short names and as `ansible.utils.X` and
//! `ansible.netcommon.X`.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnet::IpNet;
use minijinja::value::ValueKind;
use minijinja::{Environment, Error, Value};

use super::filters::{fail, py_str, py_type};

/// Registers the IP filters and tests.
pub fn register(env: &mut Environment<'static>) {
    macro_rules! filter {
        ($name:literal, $f:expr) => {{
            env.add_filter($name, $f);
            env.add_filter(concat!("ansible.utils.", $name), $f);
            env.add_filter(concat!("ansible.netcommon.", $name), $f);
        }};
    }
    filter!("ipaddr", ipaddr_filter);
    filter!("ipv4", ipv4_filter);
    filter!("ipv6", ipv6_filter);
    filter!("ipwrap", ipwrap);
    filter!("nthhost", nthhost);
    filter!("ipmath", ipmath);
    filter!("ipsubnet", ipsubnet);
    filter!("network_in_network", network_in_network);
    filter!("network_in_usable", network_in_usable);
    filter!("next_nth_usable", next_nth_usable);
    filter!("previous_nth_usable", previous_nth_usable);
    macro_rules! test {
        ($name:literal, $f:expr) => {{
            env.add_test($name, $f);
            env.add_test(concat!("ansible.utils.", $name), $f);
        }};
    }
    test!("in_network", in_network);
    test!("in_any_network", in_any_network);
    test!("in_one_network", in_one_network);
    test!("ip", is_ip);
    test!("ip_address", is_ip_address);
    test!("ipv4", is_ipv4);
    test!("ipv6", is_ipv6);
    test!("ipv4_address", is_ipv4_address);
    test!("ipv6_address", is_ipv6_address);
    test!("subnet_of", subnet_of);
    test!("supernet_of", supernet_of);
    test!("private", is_private_test);
    test!("public", is_public_test);
    test!("loopback", is_loopback_test);
}

/// An address with a prefix length, keeping its host bits (netaddr's `IPNetwork`).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Net {
    ip: IpAddr,
    prefix: u8,
}

impl Net {
    fn bits(&self) -> u8 {
        if self.ip.is_ipv4() {
            32
        } else {
            128
        }
    }
    fn version(&self) -> u8 {
        if self.ip.is_ipv4() {
            4
        } else {
            6
        }
    }
    fn host_bits(&self) -> u8 {
        self.bits() - self.prefix
    }
    fn ip_int(&self) -> u128 {
        ip_to_int(self.ip)
    }
    fn hostmask_int(&self) -> u128 {
        let hb = self.host_bits() as u32;
        if hb >= 128 {
            u128::MAX
        } else {
            (1u128 << hb) - 1
        }
    }
    fn max(&self) -> u128 {
        if self.ip.is_ipv4() {
            u32::MAX as u128
        } else {
            u128::MAX
        }
    }
    fn first(&self) -> u128 {
        self.ip_int() & !self.hostmask_int()
    }
    fn last(&self) -> u128 {
        self.first() | self.hostmask_int()
    }
    /// Number of addresses (saturating for `::/0`).
    fn size(&self) -> u128 {
        self.hostmask_int().saturating_add(1)
    }
    fn addr(&self, n: u128) -> IpAddr {
        int_to_ip(n, self.ip.is_ipv4())
    }
    fn network(&self) -> IpAddr {
        self.addr(self.first())
    }
    /// netaddr has no broadcast for /31, /32, /127, /128.
    fn broadcast(&self) -> Option<IpAddr> {
        (self.host_bits() > 1).then(|| self.addr(self.last()))
    }
    fn netmask(&self) -> IpAddr {
        self.addr(self.max() & !self.hostmask_int())
    }
    fn hostmask(&self) -> IpAddr {
        self.addr(self.hostmask_int())
    }
    fn cidr(&self) -> String {
        format!("{}/{}", self.network(), self.prefix)
    }
    fn contains_net(&self, other: &Net) -> bool {
        self.version() == other.version()
            && self.first() <= other.first()
            && other.last() <= self.last()
    }
}

impl std::fmt::Display for Net {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.ip, self.prefix)
    }
}

fn ip_to_int(ip: IpAddr) -> u128 {
    match ip {
        IpAddr::V4(a) => u32::from(a) as u128,
        IpAddr::V6(a) => u128::from(a),
    }
}

fn int_to_ip(n: u128, v4: bool) -> IpAddr {
    if v4 {
        IpAddr::V4(Ipv4Addr::from(n as u32))
    } else {
        IpAddr::V6(Ipv6Addr::from(n))
    }
}

/// A dotted IPv4 mask (`255.255.255.0` or the hostmask `0.0.0.255`) as a prefix length.
fn mask_prefix(mask: &str) -> Option<u8> {
    let m = u32::from(mask.parse::<Ipv4Addr>().ok()?);
    if m.leading_ones() + m.trailing_zeros() == 32 {
        return Some(m.leading_ones() as u8);
    }
    if m.leading_zeros() + m.trailing_ones() == 32 {
        return Some(m.leading_zeros() as u8);
    }
    None
}

/// Parses what netaddr's `IPNetwork` accepts: `addr`, `addr/len`, `addr/mask`.
fn parse_net(s: &str) -> Option<Net> {
    if let Some((a, p)) = s.split_once('/') {
        let ip: IpAddr = a.parse().ok()?;
        let bits = if ip.is_ipv4() { 32 } else { 128 };
        let prefix = if !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()) {
            p.parse::<u8>().ok().filter(|n| *n <= bits)?
        } else if ip.is_ipv4() {
            mask_prefix(p)?
        } else {
            return None;
        };
        // Validate through ipnet too, so the two never disagree on what is valid.
        IpNet::new(ip, prefix).ok()?;
        Some(Net { ip, prefix })
    } else {
        let ip: IpAddr = s.parse().ok()?;
        Some(Net {
            ip,
            prefix: if ip.is_ipv4() { 32 } else { 128 },
        })
    }
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum VType {
    Address,
    Network,
}

/// What ansible.utils makes of one input: the network, whether it was written as
/// an address or with a prefix, and the value as text.
fn recognise(value: &Value, version: Option<u8>) -> Option<(Net, VType, String)> {
    let text = py_str(value);
    if !value.is_true() || (value.kind() == ValueKind::Bool) {
        return None;
    }
    if !text.is_empty() && text.chars().all(|c| c.is_ascii_digit()) {
        let n: u128 = text.parse().ok()?;
        let v4 = version != Some(6) && n <= u32::MAX as u128;
        let net = Net {
            ip: int_to_ip(n, v4),
            prefix: if v4 { 32 } else { 128 },
        };
        return Some((net, VType::Address, net.to_string()));
    }
    if let Some(net) = parse_net(&text) {
        let vtype = if text.contains('/') {
            VType::Network
        } else {
            VType::Address
        };
        return Some((net, vtype, text));
    }
    // A numeric CIDR: `167772160/8`.
    let (a, p) = text.split_once('/')?;
    let (a, p): (u128, u8) = (a.parse().ok()?, p.parse().ok()?);
    let net = if a <= u32::MAX as u128 && p <= 32 {
        Net {
            ip: int_to_ip(a, true),
            prefix: p,
        }
    } else if p <= 128 {
        Net {
            ip: int_to_ip(a, false),
            prefix: p,
        }
    } else {
        return None;
    };
    Some((net, VType::Network, net.to_string()))
}

fn in_table(ip: IpAddr, table: &[&str]) -> bool {
    table.iter().filter_map(|n| parse_net(n)).any(|n| {
        n.version() == if ip.is_ipv4() { 4 } else { 6 } && {
            let i = ip_to_int(ip);
            n.first() <= i && i <= n.last()
        }
    })
}

/// netaddr's `is_global()`: not in IANA's not-globally-reachable registries.
fn is_global(ip: IpAddr) -> bool {
    const V4_NOT: &[&str] = &[
        "0.0.0.0/8",
        "10.0.0.0/8",
        "100.64.0.0/10",
        "127.0.0.0/8",
        "169.254.0.0/16",
        "172.16.0.0/12",
        "192.0.0.0/24",
        "192.0.0.170/31",
        "192.0.2.0/24",
        "192.168.0.0/16",
        "198.18.0.0/15",
        "198.51.100.0/24",
        "203.0.113.0/24",
        "240.0.0.0/4",
        "255.255.255.255/32",
    ];
    const V4_EXC: &[&str] = &["192.0.0.9/32", "192.0.0.10/32"];
    const V6_NOT: &[&str] = &[
        "::1/128",
        "::/128",
        "::ffff:0:0/96",
        "64:ff9b:1::/48",
        "100::/64",
        "2001::/23",
        "2001:db8::/32",
        "2002::/16",
        "fc00::/7",
        "fe80::/10",
    ];
    const V6_EXC: &[&str] = &[
        "2001:1::1/128",
        "2001:1::2/128",
        "2001:3::/32",
        "2001:4:112::/48",
        "2001:20::/28",
        "2001:30::/28",
    ];
    let (not, exc) = if ip.is_ipv4() {
        (V4_NOT, V4_EXC)
    } else {
        (V6_NOT, V6_EXC)
    };
    !in_table(ip, not) || in_table(ip, exc)
}

fn is_multicast(ip: IpAddr) -> bool {
    ip.is_multicast()
}

fn is_loopback(ip: IpAddr) -> bool {
    ip.is_loopback()
}

/// netaddr's `is_netmask`/`is_hostmask`: contiguous ones from the top / bottom.
fn is_netmask(ip: IpAddr) -> bool {
    let bits = if ip.is_ipv4() { 32 } else { 128 };
    let max = if bits == 32 {
        u32::MAX as u128
    } else {
        u128::MAX
    };
    let inv = (ip_to_int(ip) ^ max).checked_add(1);
    match inv {
        Some(v) => v & (v - 1) == 0,
        None => true,
    }
}

fn is_hostmask(ip: IpAddr) -> bool {
    match ip_to_int(ip).checked_add(1) {
        Some(v) => v & (v - 1) == 0,
        None => true,
    }
}

fn s(v: impl ToString) -> Value {
    Value::from(v.to_string())
}

fn none() -> Value {
    Value::from(())
}

/// IPv6 form of an IPv4 network (netaddr's `ipv6()`: `::ffff:a.b.c.d`, prefix + 96).
fn to_ipv6(v: &Net) -> Net {
    match v.ip {
        IpAddr::V4(a) => Net {
            ip: IpAddr::V6(a.to_ipv6_mapped()),
            prefix: v.prefix + 96,
        },
        IpAddr::V6(_) => *v,
    }
}

/// IPv4 form of an IPv6 network, when it is IPv4-mapped or -compatible.
fn to_ipv4(v: &Net) -> Option<Net> {
    match v.ip {
        IpAddr::V4(_) => Some(*v),
        IpAddr::V6(a) => {
            let n = u128::from(a);
            let mapped = n >> 32 == 0xffff;
            if !(mapped || n <= u32::MAX as u128) || v.prefix < 96 {
                return None;
            }
            Some(Net {
                ip: IpAddr::V4(Ipv4Addr::from(n as u32)),
                prefix: v.prefix - 96,
            })
        }
    }
}

fn first_last(v: &Net) -> (u128, u128) {
    if v.size() == 2 {
        (v.first(), v.last())
    } else {
        (v.first() + 1, v.last() - 1)
    }
}

fn not_network(alias: &str) -> Error {
    fail(format!("{}: Not a network address", alias))
}

/// One ansible.utils query on one recognised value.
fn run_query(v: &Net, vtype: VType, value: &str, query: &str, alias: &str) -> Result<Value, Error> {
    let size = v.size();
    let ip_is_net = v.ip == v.network();
    Ok(match query {
        "" => match vtype {
            VType::Address => s(v.ip),
            VType::Network => s(v),
        },
        "address" | "ip" => {
            if size == 1 || !ip_is_net || v.broadcast().is_none() || v.version() == 6 {
                s(v.ip)
            } else {
                none()
            }
        }
        "address/prefix" | "host/prefix" | "gateway" | "gw" | "hostnet" | "router" => {
            if size > 2 && (v.ip == v.network() || Some(v.ip) == v.broadcast()) {
                Value::from(false)
            } else {
                s(format!("{}/{}", v.ip, v.prefix))
            }
        }
        "bool" => Value::from(true),
        "broadcast" => v
            .broadcast()
            .filter(|_| size > 2)
            .map(s)
            .unwrap_or_else(none),
        "cidr" => s(v),
        "first_usable" => match vtype {
            VType::Address => return Err(not_network(alias)),
            VType::Network if size > 1 => s(v.addr(first_last(v).0)),
            _ => none(),
        },
        "last_usable" => match vtype {
            VType::Address => return Err(not_network(alias)),
            VType::Network if size > 1 => s(v.addr(first_last(v).1)),
            _ => none(),
        },
        "next_usable" | "previous_usable" => match vtype {
            VType::Address => return Err(not_network(alias)),
            VType::Network if size > 1 => {
                let (f, l) = first_last(v);
                let cand = if query == "next_usable" {
                    v.ip_int().checked_add(1)
                } else {
                    v.ip_int().checked_sub(1)
                };
                match cand {
                    Some(c) if f <= c && c <= l => s(v.addr(c)),
                    _ => none(),
                }
            }
            _ => none(),
        },
        "range_usable" => match vtype {
            VType::Address => return Err(not_network(alias)),
            VType::Network if size > 1 => {
                let (f, l) = first_last(v);
                s(format!("{}-{}", v.addr(f), v.addr(l)))
            }
            _ => none(),
        },
        "host" => {
            if size == 1 {
                s(v)
            } else if !ip_is_net || v.broadcast().is_none() {
                s(format!("{}/{}", v.ip, v.prefix))
            } else {
                none()
            }
        }
        "hostmask" | "wildcard" => s(v.hostmask()),
        "int" => match vtype {
            VType::Address => Value::from(v.ip_int()),
            VType::Network => s(format!("{}/{}", v.ip_int(), v.prefix)),
        },
        "ip/prefix" => {
            if size == 2 || (size > 1 && !ip_is_net) {
                s(format!("{}/{}", v.ip, v.prefix))
            } else {
                none()
            }
        }
        "ip_netmask" => {
            if size == 2 || (size > 1 && !ip_is_net) {
                s(format!("{} {}", v.ip, v.netmask()))
            } else {
                none()
            }
        }
        "ipv4" | "v4" => match to_ipv4(v) {
            Some(n) if v.version() == 6 => s(n),
            Some(_) => s(value),
            None => Value::from(false),
        },
        "ipv6" | "v6" => {
            if v.version() == 4 {
                s(to_ipv6(v))
            } else {
                s(value)
            }
        }
        "link-local" => {
            let table: &[&str] = if v.version() == 4 {
                &["169.254.0.0/16"]
            } else {
                &["fe80::/10"]
            };
            if in_table(v.ip, table) {
                s(value)
            } else {
                none()
            }
        }
        "lo" | "loopback" => {
            if is_loopback(v.ip) {
                s(value)
            } else {
                none()
            }
        }
        "multicast" => {
            if is_multicast(v.network()) && is_multicast(v.addr(v.last())) {
                s(value)
            } else {
                none()
            }
        }
        "unicast" => {
            if !is_multicast(v.ip) {
                s(value)
            } else {
                none()
            }
        }
        "net" => {
            if size > 1 && ip_is_net {
                s(v.cidr())
            } else {
                none()
            }
        }
        "netmask" => s(v.netmask()),
        "network" | "network_id" => s(v.network()),
        "network/prefix" | "subnet" => s(v.cidr()),
        "network_netmask" => s(format!("{} {}", v.network(), v.netmask())),
        "network_wildcard" => s(format!("{} {}", v.network(), v.hostmask())),
        "peer" => match vtype {
            VType::Address => return Err(not_network(alias)),
            VType::Network => match size {
                2 => s(v.addr(v.ip_int() ^ 1)),
                4 => match v.ip_int() % 4 {
                    0 => {
                        return Err(fail(format!(
                            "{}: Network address of /30 has no peer",
                            alias
                        )))
                    }
                    3 => {
                        return Err(fail(format!(
                            "{}: Broadcast address of /30 has no peer",
                            alias
                        )))
                    }
                    _ => s(v.addr(v.ip_int() ^ 3)),
                },
                _ => return Err(fail(format!("{}: Not a point-to-point network", alias))),
            },
        },
        "prefix" => Value::from(v.prefix),
        "private" => {
            if !is_global(v.ip) {
                s(value)
            } else {
                none()
            }
        }
        "public" => {
            let ip = v.ip;
            if !is_multicast(ip)
                && is_global(ip)
                && !is_loopback(ip)
                && !is_netmask(ip)
                && !is_hostmask(ip)
            {
                s(value)
            } else {
                none()
            }
        }
        "revdns" => s(revdns(v.ip)),
        "size" => Value::from(size),
        "size_usable" => Value::from(match size {
            1 => 0,
            2 => 2,
            n => n - 2,
        }),
        "type" => s(if size == 1 || !ip_is_net {
            "address"
        } else {
            "network"
        }),
        "version" => Value::from(v.version()),
        "wrap" => {
            if v.version() == 6 {
                match vtype {
                    VType::Address => s(format!("[{}]", v.ip)),
                    VType::Network => s(format!("[{}]/{}", v.ip, v.prefix)),
                }
            } else {
                s(value)
            }
        }
        _ => return Err(fail(format!("{}: unknown filter type: {}", alias, query))),
    })
}

fn revdns(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(a) => {
            let o = a.octets();
            format!("{}.{}.{}.{}.in-addr.arpa.", o[3], o[2], o[1], o[0])
        }
        IpAddr::V6(a) => {
            let hex = format!("{:032x}", u128::from(a));
            let mut parts: Vec<String> = hex.chars().rev().map(|c| c.to_string()).collect();
            parts.push("ip6.arpa.".into());
            parts.join(".")
        }
    }
}

/// ansible.utils' `ipaddr(value, query, version)`.
fn ipaddr_impl(
    value: &Value,
    query: &Value,
    version: Option<u8>,
    alias: &str,
) -> Result<Value, Error> {
    if matches!(value.kind(), ValueKind::Seq | ValueKind::Iterable) {
        let q = if query.is_none() || query.is_undefined() {
            Value::from("")
        } else {
            Value::from(py_str(query))
        };
        let mut out = Vec::new();
        for item in value.try_iter()? {
            let r = ipaddr_impl(&item, &q, version, alias)?;
            if r.is_true() {
                out.push(r);
            }
        }
        return Ok(Value::from(out));
    }
    let Some((v, vtype, text)) = recognise(value, version) else {
        return Ok(Value::from(false));
    };
    let q = if query.is_none() || query.is_undefined() {
        String::new()
    } else {
        py_str(query)
    };
    // A query that is itself a network: "is the value inside it?".
    if !q.is_empty() && !is_known_query(&q) && !q.chars().all(|c| c.is_ascii_digit()) {
        if let Some((net, _, _)) = recognise(&Value::from(q.as_str()), None) {
            if version.is_some_and(|ver| v.version() != ver) {
                return Ok(Value::from(false));
            }
            let cidr = Net {
                ip: net.network(),
                prefix: net.prefix,
            };
            return Ok(if cidr.contains_net(&v) {
                s(text)
            } else {
                none()
            });
        }
    }
    if version.is_some_and(|ver| v.version() != ver) {
        return Ok(Value::from(false));
    }
    if is_known_query(&q) {
        return run_query(&v, vtype, &text, &q, alias);
    }
    // A number: the nth address of the network.
    let nth = if query.kind() == ValueKind::Number {
        f64::try_from(query.clone()).ok().map(|f| f.trunc() as i128)
    } else {
        q.trim().parse::<f64>().ok().map(|f| f.trunc() as i128)
    };
    let Some(n) = nth else {
        return Err(fail(format!("{}: unknown filter type: {}", alias, q)));
    };
    if v.size() == 1 {
        return Ok(match vtype {
            VType::Address => s(v.ip),
            VType::Network => s(v),
        });
    }
    Ok(match nth_addr(&v, n) {
        Some(a) => s(format!("{}/{}", a, v.prefix)),
        None => Value::from(false),
    })
}

/// netaddr's `IPNetwork[n]` (negative counts from the end).
fn nth_addr(v: &Net, n: i128) -> Option<IpAddr> {
    let size = v.size();
    let idx = if n < 0 {
        size.checked_sub(n.unsigned_abs())?
    } else {
        n as u128
    };
    (idx < size).then(|| v.addr(v.first() + idx))
}

fn is_known_query(q: &str) -> bool {
    matches!(
        q,
        "" | "address"
            | "address/prefix"
            | "bool"
            | "broadcast"
            | "cidr"
            | "first_usable"
            | "gateway"
            | "gw"
            | "host"
            | "host/prefix"
            | "hostmask"
            | "hostnet"
            | "int"
            | "ip"
            | "ip/prefix"
            | "ip_netmask"
            | "ipv4"
            | "ipv6"
            | "last_usable"
            | "link-local"
            | "lo"
            | "loopback"
            | "multicast"
            | "net"
            | "next_usable"
            | "netmask"
            | "network"
            | "network_id"
            | "network/prefix"
            | "network_netmask"
            | "network_wildcard"
            | "peer"
            | "prefix"
            | "previous_usable"
            | "private"
            | "public"
            | "range_usable"
            | "revdns"
            | "router"
            | "size"
            | "size_usable"
            | "subnet"
            | "type"
            | "unicast"
            | "v4"
            | "v6"
            | "version"
            | "wildcard"
            | "wrap"
    )
}

fn q(query: Option<Value>) -> Value {
    query.unwrap_or_else(|| Value::from(""))
}

fn ipaddr_filter(value: &Value, query: Option<Value>) -> Result<Value, Error> {
    ipaddr_impl(value, &q(query), None, "ipaddr")
}

fn ipv4_filter(value: &Value, query: Option<Value>) -> Result<Value, Error> {
    ipaddr_impl(value, &q(query), Some(4), "ipv4")
}

fn ipv6_filter(value: &Value, query: Option<Value>) -> Result<Value, Error> {
    ipaddr_impl(value, &q(query), Some(6), "ipv6")
}

fn ipwrap(value: &Value, query: Option<Value>) -> Result<Value, Error> {
    let query = q(query);
    let wrap_one = |item: &Value| -> Value {
        match ipaddr_impl(item, &query, None, "ipwrap") {
            Ok(r) if r.is_true() => ipaddr_impl(&r, &Value::from("wrap"), None, "ipwrap")
                .unwrap_or_else(|_| item.clone()),
            _ => item.clone(),
        }
    };
    if matches!(value.kind(), ValueKind::Seq | ValueKind::Iterable) {
        return Ok(Value::from(
            value.try_iter()?.map(|i| wrap_one(&i)).collect::<Vec<_>>(),
        ));
    }
    Ok(wrap_one(value))
}

/// The value as a CIDR network for filters that work on whole networks
/// (`ipsubnet`, `nthhost`, `network_in_*`); `None` when it is not an IP.
fn as_subnet(value: &Value) -> Option<Net> {
    let (v, _, _) = recognise(value, None)?;
    Some(Net {
        ip: v.network(),
        prefix: v.prefix,
    })
}

fn nthhost(value: &Value, query: Option<Value>) -> Result<Value, Error> {
    let Some((v, _, _)) = recognise(value, None) else {
        return Ok(Value::from(false));
    };
    let Some(query) = query.filter(|q| q.is_true() || q.as_i64() == Some(0)) else {
        return Ok(Value::from(false));
    };
    let n = match query
        .as_i64()
        .or_else(|| py_str(&query).trim().parse::<i64>().ok())
    {
        Some(n) => n,
        None => return Ok(Value::from(false)),
    };
    let size = v.size();
    if n >= 0 && (n as u128) >= size {
        return Ok(Value::from(false));
    }
    Ok(nth_addr(&v, n as i128).map(s).unwrap_or(Value::from(false)))
}

fn ipmath(value: &Value, amount: &Value) -> Result<String, Error> {
    let text = py_str(value);
    let ip = if text.contains('/') {
        parse_net(&text).map(|n| n.ip)
    } else {
        text.parse::<IpAddr>().ok()
    };
    let ip = ip.ok_or_else(|| {
        fail(format!(
            "ipmath: you must pass a valid IP address; {} is invalid",
            text
        ))
    })?;
    if !(amount.kind() == ValueKind::Number && amount.is_integer()) {
        return Err(fail(format!(
            "ipmath: you must pass an integer for arithmetic; {} is not a valid integer",
            py_str(amount)
        )));
    }
    let amt =
        i128::try_from(amount.clone()).map_err(|_| fail("ipmath: the amount is too large"))?;
    let max = if ip.is_ipv4() {
        u32::MAX as i128
    } else {
        i128::MAX
    };
    let cur = ip_to_int(ip);
    let res = if amt >= 0 {
        cur.checked_add(amt as u128)
    } else {
        cur.checked_sub(amt.unsigned_abs())
    };
    match res {
        Some(r) if ip.is_ipv6() || r as i128 <= max => Ok(int_to_ip(r, ip.is_ipv4()).to_string()),
        _ => Err(fail(format!(
            "ipmath: {} + {} is outside the valid IP address range",
            ip, amt
        ))),
    }
}

fn ipsubnet(value: &Value, query: Option<Value>, index: Option<Value>) -> Result<Value, Error> {
    let Some((full, _, _)) = recognise(value, None) else {
        return Ok(Value::from(false));
    };
    let is_addr = full.size() == 1 || full.ip != full.network();
    // An "address" keeps its host bits, a network is normalised.
    let v = if is_addr {
        full
    } else {
        Net {
            ip: full.network(),
            prefix: full.prefix,
        }
    };
    let query = match query {
        None => return Ok(s(v)),
        Some(q) if !q.is_true() && q.as_i64() != Some(0) => return Ok(s(v)),
        Some(q) => q,
    };
    let qs = py_str(&query);
    if !qs.is_empty() && qs.chars().all(|c| c.is_ascii_digit()) {
        let want: u8 = match qs.parse() {
            Ok(n) => n,
            Err(_) => return Ok(Value::from(false)),
        };
        let index = index
            .filter(|i| !i.is_undefined())
            .and_then(|i| i.as_i64().or_else(|| py_str(&i).trim().parse::<i64>().ok()));
        if v.size() > 1 {
            // Subnets of length `want` inside the network.
            if want > v.bits() {
                return Ok(Value::from(false));
            }
            if want < v.prefix {
                return Ok(match index {
                    Some(_) => Value::from(false),
                    None => s("0"),
                });
            }
            let count_bits = (want - v.prefix) as u32;
            let count: Option<u128> = 1u128.checked_shl(count_bits);
            return Ok(match index {
                None => match count {
                    Some(c) => s(c),
                    None => s("340282366920938463463374607431768211456"),
                },
                Some(i) => {
                    let c = count.unwrap_or(u128::MAX);
                    let idx = if i < 0 {
                        c.checked_sub(i.unsigned_abs() as u128)
                    } else {
                        Some(i as u128)
                    };
                    match idx.filter(|x| *x < c) {
                        Some(x) => {
                            let step = if want >= v.bits() {
                                1
                            } else {
                                1u128 << (v.bits() - want)
                            };
                            s(Net {
                                ip: v.addr(v.first() + x * step),
                                prefix: want,
                            })
                        }
                        None => Value::from(false),
                    }
                }
            });
        }
        // A single address: its supernets from /want up to /(prefix-1).
        if want >= v.prefix {
            return Ok(Value::from(false));
        }
        let supers: Vec<Net> = (want..v.prefix)
            .map(|p| {
                let n = Net {
                    ip: v.ip,
                    prefix: p,
                };
                Net {
                    ip: n.network(),
                    prefix: p,
                }
            })
            .collect();
        let i = index.unwrap_or(0);
        let idx = if i < 0 { supers.len() as i64 + i } else { i };
        return Ok(usize::try_from(idx)
            .ok()
            .and_then(|i| supers.get(i))
            .map(s)
            .unwrap_or(Value::from(false)));
    }
    // The query is a network: the 1-based position of the value among its subnets.
    let outer = as_subnet(&query).ok_or_else(|| {
        fail(format!(
            "ipsubnet: you must pass a valid subnet or IP address; {} is invalid",
            qs
        ))
    })?;
    let inner = Net {
        ip: v.network(),
        prefix: v.prefix,
    };
    if outer.contains_net(&inner) && inner.prefix >= outer.prefix {
        let shift = (inner.bits() - inner.prefix) as u32;
        let pos = (inner.first() - outer.first())
            .checked_shr(shift)
            .unwrap_or(0)
            + 1;
        return Ok(s(pos));
    }
    Err(fail(format!(
        "ipsubnet: {} is not in the subnet {}",
        inner.cidr(),
        outer.cidr()
    )))
}

fn usable_range(value: &Value, test: &Value, usable: bool, name: &str) -> Result<bool, Error> {
    let v = as_subnet(value).ok_or_else(|| {
        fail(format!(
            "{}: '{}' is not an IP address or network",
            name,
            py_str(value)
        ))
    })?;
    let (w, _, _) = recognise(test, None).ok_or_else(|| {
        fail(format!(
            "{}: '{}' is not an IP address or network",
            name,
            py_str(test)
        ))
    })?;
    if v.version() != w.version() {
        return Ok(false);
    }
    // ansible.utils compares network..broadcast of both (the address itself when
    // there is no broadcast, as for /31 and /32).
    let bounds = |n: &Net| -> (u128, u128) {
        let last = if n.size() > 2 { n.last() } else { n.ip_int() };
        (n.first(), last)
    };
    let (vf, vl) = bounds(&v);
    let (wf, wl) = bounds(&w);
    let (lo, hi) = if usable {
        (vf.saturating_add(1), vl.saturating_sub(1))
    } else {
        (vf, vl)
    };
    Ok(lo <= wf && wf <= hi && lo <= wl && wl <= hi)
}

fn network_in_network(value: &Value, test: &Value) -> Result<bool, Error> {
    usable_range(value, test, false, "network_in_network")
}

fn network_in_usable(value: &Value, test: &Value) -> Result<bool, Error> {
    usable_range(value, test, true, "network_in_usable")
}

fn nth_usable(value: &Value, offset: &Value, forward: bool, name: &str) -> Result<Value, Error> {
    let Some((v, vtype, _)) = recognise(value, None) else {
        return Ok(Value::from(false));
    };
    if vtype == VType::Address {
        return Err(fail(format!("{}: Not a network address", name)));
    }
    let off = offset.as_i64().ok_or_else(|| {
        fail(format!(
            "{}: the offset must be an integer, got {}",
            name,
            py_type(offset)
        ))
    })?;
    if v.size() <= 1 {
        return Ok(none());
    }
    let (f, l) = first_last(&v);
    let cand = if forward {
        v.ip_int().checked_add(off as u128)
    } else {
        v.ip_int().checked_sub(off as u128)
    };
    Ok(match cand {
        Some(c) if f <= c && c <= l => s(v.addr(c)),
        _ => none(),
    })
}

fn next_nth_usable(value: &Value, offset: &Value) -> Result<Value, Error> {
    nth_usable(value, offset, true, "next_nth_usable")
}

fn previous_nth_usable(value: &Value, offset: &Value) -> Result<Value, Error> {
    nth_usable(value, offset, false, "previous_nth_usable")
}

// ---------------------------------------------------------------------------
// Tests (Python's `ipaddress` semantics: networks must not have host bits set).

fn strict_net(v: &Value) -> Option<Net> {
    let text = py_str(v);
    let n = parse_net(&text)?;
    (n.ip == n.network()).then_some(n)
}

fn in_network(ip: &Value, network: &Value) -> bool {
    match (strict_net(ip), strict_net(network)) {
        (Some(a), Some(b)) => b.contains_net(&a),
        _ => false,
    }
}

fn networks(v: &Value) -> Result<Vec<Value>, Error> {
    match v.kind() {
        ValueKind::Seq | ValueKind::Iterable => Ok(v.try_iter()?.collect()),
        _ => Err(fail(format!(
            "in_any_network: expected a list of networks, got {}",
            py_type(v)
        ))),
    }
}

fn in_any_network(ip: &Value, nets: &Value) -> Result<bool, Error> {
    Ok(networks(nets)?.iter().any(|n| in_network(ip, n)))
}

fn in_one_network(ip: &Value, nets: &Value) -> Result<bool, Error> {
    Ok(networks(nets)?.iter().filter(|n| in_network(ip, n)).count() == 1)
}

fn is_ip(v: &Value) -> bool {
    parse_net(&py_str(v)).is_some()
}

fn is_ip_address(v: &Value) -> bool {
    py_str(v).parse::<IpAddr>().is_ok()
}

fn is_ipv4(v: &Value) -> bool {
    parse_net(&py_str(v)).is_some_and(|n| n.version() == 4)
}

fn is_ipv6(v: &Value) -> bool {
    parse_net(&py_str(v)).is_some_and(|n| n.version() == 6)
}

fn is_ipv4_address(v: &Value) -> bool {
    py_str(v).parse::<Ipv4Addr>().is_ok()
}

fn is_ipv6_address(v: &Value) -> bool {
    py_str(v).parse::<Ipv6Addr>().is_ok()
}

fn subnet_of(a: &Value, b: &Value) -> bool {
    in_network(a, b)
}

fn supernet_of(a: &Value, b: &Value) -> bool {
    in_network(b, a)
}

fn is_private_test(v: &Value) -> bool {
    parse_net(&py_str(v)).is_some_and(|n| !is_global(n.ip))
}

fn is_public_test(v: &Value) -> bool {
    parse_net(&py_str(v)).is_some_and(|n| is_global(n.ip))
}

fn is_loopback_test(v: &Value) -> bool {
    parse_net(&py_str(v)).is_some_and(|n| is_loopback(n.ip))
}

#[cfg(test)]
mod tests {
    use crate::template::{to_mj, Templar};
    use serde_json::{json, Value as J};

    fn ev(expr: &str) -> J {
        let t = Templar::new();
        let v = t
            .eval_expr(
                expr,
                &to_mj(&json!({"pods": "10.233.64.0/18,fd85:ee78:d8a6:8607::1:0000/112"})),
            )
            .unwrap_or_else(|e| panic!("{}: {}", expr, e.render()));
        serde_json::to_value(&v).unwrap()
    }

    fn err(expr: &str) -> String {
        let t = Templar::new();
        match t.eval_expr(expr, &to_mj(&json!({}))) {
            Ok(v) => panic!("{} should fail, gave {}", expr, v),
            Err(e) => e.render(),
        }
    }

    #[test]
    fn ipaddr_validity() {
        assert_eq!(ev("'192.168.0.1' | ipaddr"), json!("192.168.0.1"));
        assert_eq!(ev("'192.168.0.1/24' | ipaddr"), json!("192.168.0.1/24"));
        assert_eq!(ev("'fd00::1' | ipaddr"), json!("fd00::1"));
        assert_eq!(
            ev("'192.24.2.1/255.255.255.0' | ipaddr"),
            json!("192.24.2.1/24")
        );
        assert_eq!(ev("'x' | ipaddr"), json!(false));
        assert_eq!(ev("'' | ipaddr"), json!(false));
        assert_eq!(ev("'300.1.1.1' | ipaddr"), json!(false));
        assert_eq!(ev("'10.0.0.0/33' | ipaddr"), json!(false));
        assert_eq!(ev("true | ipaddr"), json!(false));
        assert_eq!(ev("167772161 | ipaddr"), json!("10.0.0.1"));
        assert_eq!(
            ev("['192.24.2.1', 'host.fqdn', '::1', '', '192.168.32.0/24', 'fe80::100/10', True] | ipaddr"),
            json!(["192.24.2.1", "::1", "192.168.32.0/24", "fe80::100/10"])
        );
        assert_eq!(
            ev("'192.168.0.1' | ansible.utils.ipaddr"),
            json!("192.168.0.1")
        );
        assert_eq!(
            ev("'192.168.0.1' | ansible.netcommon.ipaddr('address')"),
            json!("192.168.0.1")
        );
    }

    #[test]
    fn ipaddr_queries_v4() {
        let q = |v: &str, q: &str| ev(&format!("'{}' | ipaddr('{}')", v, q));
        assert_eq!(q("192.168.1.5/24", "address"), json!("192.168.1.5"));
        assert_eq!(q("192.168.1.0/24", "address"), json!(null));
        assert_eq!(q("192.168.1.5/24", "network"), json!("192.168.1.0"));
        assert_eq!(q("192.168.1.5/24", "netmask"), json!("255.255.255.0"));
        assert_eq!(q("192.168.1.5/24", "hostmask"), json!("0.0.0.255"));
        assert_eq!(q("192.168.1.5/24", "prefix"), json!(24));
        assert_eq!(q("192.168.1.5/24", "broadcast"), json!("192.168.1.255"));
        assert_eq!(q("10.0.0.0/31", "broadcast"), json!(null));
        assert_eq!(q("192.168.1.5/24", "size"), json!(256));
        assert_eq!(q("192.168.1.5/24", "host"), json!("192.168.1.5/24"));
        assert_eq!(q("192.168.1.0/24", "host"), json!(null));
        assert_eq!(q("192.168.1.5", "host"), json!("192.168.1.5/32"));
        assert_eq!(q("192.168.1.0/24", "net"), json!("192.168.1.0/24"));
        assert_eq!(q("192.168.1.5/24", "net"), json!(null));
        assert_eq!(q("192.168.1.5/24", "subnet"), json!("192.168.1.0/24"));
        assert_eq!(q("192.168.1.5/24", "cidr"), json!("192.168.1.5/24"));
        assert_eq!(q("192.168.1.5/24", "host/prefix"), json!("192.168.1.5/24"));
        assert_eq!(q("192.168.1.0/24", "host/prefix"), json!(false));
        assert_eq!(q("192.168.1.5/24", "int"), json!("3232235781/24"));
        assert_eq!(q("192.168.1.5", "int"), json!(3232235781u64));
        assert_eq!(q("192.168.1.5/24", "type"), json!("address"));
        assert_eq!(q("192.168.1.0/24", "type"), json!("network"));
        assert_eq!(q("192.168.1.0/24", "first_usable"), json!("192.168.1.1"));
        assert_eq!(q("192.168.1.0/24", "last_usable"), json!("192.168.1.254"));
        assert_eq!(
            q("192.168.1.0/24", "range_usable"),
            json!("192.168.1.1-192.168.1.254")
        );
        assert_eq!(q("192.168.1.0/24", "size_usable"), json!(254));
        assert_eq!(q("192.168.1.5/24", "version"), json!(4));
        assert_eq!(
            q("192.168.1.5", "revdns"),
            json!("5.1.168.192.in-addr.arpa.")
        );
        assert_eq!(q("192.168.1.5", "private"), json!("192.168.1.5"));
        assert_eq!(q("192.168.1.5", "public"), json!(null));
        assert_eq!(q("8.8.8.8", "public"), json!("8.8.8.8"));
        assert_eq!(q("8.8.8.8", "private"), json!(null));
        assert_eq!(q("127.0.0.1", "loopback"), json!("127.0.0.1"));
        assert_eq!(q("192.168.1.5", "ipv4"), json!("192.168.1.5"));
        assert_eq!(q("192.168.1.5/24", "ipv6"), json!("::ffff:192.168.1.5/120"));
        assert_eq!(q("192.168.1.5", "wrap"), json!("192.168.1.5"));
        assert!(err("'1.2.3.4' | ipaddr('bogus')").contains("ipaddr: unknown filter type: bogus"));
        assert!(err("'1.2.3.4' | ipaddr('first_usable')").contains("Not a network address"));
    }

    #[test]
    fn ipaddr_queries_v6() {
        let q = |v: &str, q: &str| ev(&format!("'{}' | ipaddr('{}')", v, q));
        assert_eq!(
            q("fd85:ee78:d8a6:8607::1:0000/112", ""),
            json!("fd85:ee78:d8a6:8607::1:0/112")
        );
        assert_eq!(
            q("fd85:ee78:d8a6:8607::1:0000/112", "network"),
            json!("fd85:ee78:d8a6:8607::1:0")
        );
        assert_eq!(q("fd85:ee78:d8a6:8607::1:0000/112", "prefix"), json!(112));
        assert_eq!(q("fd85:ee78:d8a6:8607::1:0000/112", "size"), json!(65536));
        assert_eq!(
            q("fd85:ee78:d8a6:8607::1:0000/112", "net"),
            json!("fd85:ee78:d8a6:8607::1:0/112")
        );
        assert_eq!(
            q("fd85:ee78:d8a6:8607::1:0000/112", "address"),
            json!("fd85:ee78:d8a6:8607::1:0")
        );
        assert_eq!(
            q("2001:db8::1/64", "netmask"),
            json!("ffff:ffff:ffff:ffff::")
        );
        assert_eq!(
            q("2001:db8::1/64", "broadcast"),
            json!("2001:db8::ffff:ffff:ffff:ffff")
        );
        assert_eq!(q("2001:db8::1", "wrap"), json!("[2001:db8::1]"));
        assert_eq!(q("2001:db8::1/64", "wrap"), json!("[2001:db8::1]/64"));
        assert_eq!(q("fd00::1", "private"), json!("fd00::1"));
        assert_eq!(q("2606:4700::1111", "public"), json!("2606:4700::1111"));
        assert_eq!(q("::1", "loopback"), json!("::1"));
        assert_eq!(q("::ffff:10.0.0.1/120", "ipv4"), json!("10.0.0.1/24"));
        assert_eq!(q("2001:db8::1", "ipv4"), json!(false));
        assert_eq!(q("2001:db8::1", "version"), json!(6));
    }

    #[test]
    fn dual_stack_lists() {
        assert_eq!(
            ev("pods | split(',') | ansible.utils.ipv4"),
            json!(["10.233.64.0/18"])
        );
        assert_eq!(
            ev("pods | split(',') | ansible.utils.ipv6"),
            json!(["fd85:ee78:d8a6:8607::1:0/112"])
        );
        assert_eq!(
            ev("pods | split(',') | ipaddr('ipv4')"),
            json!(["10.233.64.0/18"])
        );
        assert_eq!(ev("pods | split(',') | ipv6('prefix')"), json!([112]));
        assert_eq!(
            ev("(pods | split(','))[0] | ipaddr('net') | ipaddr(1)"),
            json!("10.233.64.1/18")
        );
        assert_eq!(
            ev("'10.233.64.0/18' | ipaddr('1') | ipaddr('address')"),
            json!("10.233.64.1")
        );
        assert_eq!(ev("'10.233.0.0/18' | ipaddr(10)"), json!("10.233.0.10/18"));
        assert_eq!(
            ev("'10.233.0.0/18' | ipaddr(-1)"),
            json!("10.233.63.255/18")
        );
        assert_eq!(
            ev("'fd85::/112' | ipaddr(10) | ipaddr('address')"),
            json!("fd85::a")
        );
        assert_eq!(ev("'10.0.0.5' | ipv6"), json!(false));
        assert_eq!(ev("'10.0.0.5' | ipaddr('10.0.0.0/8')"), json!("10.0.0.5"));
        assert_eq!(ev("'11.0.0.5' | ipaddr('10.0.0.0/8')"), json!(null));
        assert_eq!(
            ev("['10.0.0.5', '11.0.0.5', 'fd00::1'] | ipaddr('10.0.0.0/8')"),
            json!(["10.0.0.5"])
        );
    }

    #[test]
    fn helper_filters() {
        assert_eq!(ev("'::1' | ipwrap"), json!("[::1]"));
        assert_eq!(ev("'1.2.3.4' | ipwrap"), json!("1.2.3.4"));
        assert_eq!(
            ev("['::1', 'host', '10.0.0.1'] | ipwrap"),
            json!(["[::1]", "host", "10.0.0.1"])
        );
        assert_eq!(ev("'10.0.0.0/8' | nthhost(305)"), json!("10.0.1.49"));
        assert_eq!(ev("'10.0.0.0/24' | nthhost(-1)"), json!("10.0.0.255"));
        assert_eq!(ev("'10.0.0.0/24' | nthhost(300)"), json!(false));
        assert_eq!(ev("'fd00::/64' | nthhost(5)"), json!("fd00::5"));
        assert_eq!(ev("'192.168.1.5' | ipmath(5)"), json!("192.168.1.10"));
        assert_eq!(ev("'192.168.1.5/24' | ipmath(-10)"), json!("192.168.0.251"));
        assert_eq!(ev("'2001:db8::1' | ipmath(255)"), json!("2001:db8::100"));
        assert!(err("'x' | ipmath(1)").contains("you must pass a valid IP address"));
        assert!(err("'1.2.3.4' | ipmath('a')").contains("not a valid integer"));
        assert!(err("'255.255.255.255' | ipmath(1)").contains("outside"));
        assert_eq!(ev("'192.168.0.0/16' | ipsubnet"), json!("192.168.0.0/16"));
        assert_eq!(ev("'192.168.0.0/16' | ipsubnet(20)"), json!("16"));
        assert_eq!(
            ev("'192.168.0.0/16' | ipsubnet(20, 0)"),
            json!("192.168.0.0/20")
        );
        assert_eq!(
            ev("'192.168.0.0/16' | ipsubnet(20, -1)"),
            json!("192.168.240.0/20")
        );
        assert_eq!(ev("'192.168.0.0/16' | ipsubnet(20, 16)"), json!(false));
        assert_eq!(
            ev("'192.168.144.5' | ipsubnet(20)"),
            json!("192.168.144.0/20")
        );
        assert_eq!(
            ev("'192.168.144.5' | ipsubnet(18, -1)"),
            json!("192.168.144.4/31")
        );
        assert_eq!(
            ev("'192.168.144.0/20' | ipsubnet('192.168.0.0/16')"),
            json!("10")
        );
        assert!(err("'10.0.0.0/20' | ipsubnet('192.168.0.0/16')").contains("is not in the subnet"));
        assert_eq!(
            ev("'fd00::/64' | ipsubnet(66, 3)"),
            json!("fd00::c000:0:0:0/66")
        );
    }

    #[test]
    fn network_membership() {
        assert_eq!(
            ev("'10.0.0.0/8' | network_in_network('10.0.0.5')"),
            json!(true)
        );
        assert_eq!(
            ev("'10.0.0.0/8' | network_in_network('10.1.0.0/16')"),
            json!(true)
        );
        assert_eq!(
            ev("'10.0.0.0/8' | network_in_network('11.0.0.1')"),
            json!(false)
        );
        assert_eq!(
            ev("'10.0.0.5' | ansible.utils.network_in_network('10.0.0.0/8')"),
            json!(false)
        );
        assert_eq!(
            ev("'192.168.0.0/24' | network_in_usable('192.168.0.1')"),
            json!(true)
        );
        assert_eq!(
            ev("'192.168.0.0/24' | network_in_usable('192.168.0.0')"),
            json!(false)
        );
        assert_eq!(
            ev("'192.168.0.0/24' | network_in_usable('192.168.0.255')"),
            json!(false)
        );
        assert_eq!(
            ev("'192.168.0.0/16' | network_in_network('192.168.0.0/24')"),
            json!(true)
        );
        assert_eq!(
            ev("'fd00::/64' | network_in_network('fd00::5')"),
            json!(true)
        );
        assert_eq!(
            ev("'fd00::/64' | network_in_network('10.0.0.1')"),
            json!(false)
        );
        assert_eq!(
            ev("'192.168.0.0/24' | next_nth_usable(2)"),
            json!("192.168.0.2")
        );
        assert_eq!(
            ev("'192.168.0.10/24' | previous_nth_usable(2)"),
            json!("192.168.0.8")
        );
    }

    #[test]
    fn ip_tests() {
        assert_eq!(
            ev("'10.0.0.5' is ansible.utils.in_network('10.0.0.0/8')"),
            json!(true)
        );
        assert_eq!(
            ev("'10.0.0.5' is in_network('192.168.0.0/16')"),
            json!(false)
        );
        assert_eq!(ev("'10.1.0.0/16' is in_network('10.0.0.0/8')"), json!(true));
        assert_eq!(ev("'fd00::5' is in_network('fd00::/64')"), json!(true));
        assert_eq!(
            ev("'10.0.0.5' is in_any_network(['192.168.0.0/16', '10.0.0.0/8'])"),
            json!(true)
        );
        assert_eq!(
            ev("'10.0.0.5' is in_one_network(['10.0.0.0/16', '10.0.0.0/8'])"),
            json!(false)
        );
        assert_eq!(ev("'10.0.0.5' is ansible.utils.ip"), json!(true));
        assert_eq!(ev("'10.0.0.0/8' is ip_address"), json!(false));
        assert_eq!(ev("'10.0.0.5' is ipv4_address"), json!(true));
        assert_eq!(ev("'fd00::1' is ipv6"), json!(true));
        assert_eq!(ev("'fd00::1' is ipv4"), json!(false));
        assert_eq!(ev("'x' is ip"), json!(false));
        assert_eq!(ev("'10.1.0.0/16' is subnet_of('10.0.0.0/8')"), json!(true));
        assert_eq!(
            ev("'10.0.0.0/8' is supernet_of('10.1.0.0/16')"),
            json!(true)
        );
        assert_eq!(ev("'10.0.0.1' is private"), json!(true));
        assert_eq!(ev("'8.8.8.8' is public"), json!(true));
        assert_eq!(ev("'127.0.0.1' is loopback"), json!(true));
    }
}
