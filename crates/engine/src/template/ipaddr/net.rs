//! The value the IP filters work on: an address with a prefix length that keeps its host
//! bits (netaddr's `IPNetwork`), the network arithmetic on it (through `ipnet`), how
//! ansible.utils recognises an input (address, CIDR, netmask form, integer), and the
//! address classes (private, loopback, multicast …).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnet::{ip_mask_to_prefix, ipv4_mask_to_prefix, IpNet};
use minijinja::value::ValueKind;
use minijinja::Value;

use crate::template::filters::py_str;

/// An address with a prefix length, keeping its host bits (netaddr's `IPNetwork`).
///
/// A thin view over [`IpNet`], which does the arithmetic (network, broadcast, masks,
/// containment); what is added here is netaddr's reading of it (no broadcast for /31 and
/// /32, sizes, the address at an index).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Net(IpNet);

impl Net {
    /// `addr/prefix`; `None` when the prefix is longer than the address.
    pub(super) fn new(ip: IpAddr, prefix: u8) -> Option<Net> {
        IpNet::new(ip, prefix).ok().map(Net)
    }
    /// A single address (`/32` or `/128`).
    pub(super) fn host(ip: IpAddr) -> Net {
        Net(IpNet::from(ip))
    }
    /// The address as written, host bits kept.
    pub(super) fn ip(&self) -> IpAddr {
        self.0.addr()
    }
    pub(super) fn prefix(&self) -> u8 {
        self.0.prefix_len()
    }
    /// Address width: 32 or 128.
    pub(super) fn bits(&self) -> u8 {
        self.0.max_prefix_len()
    }
    pub(super) fn version(&self) -> u8 {
        match self.0 {
            IpNet::V4(_) => 4,
            IpNet::V6(_) => 6,
        }
    }
    fn host_bits(&self) -> u8 {
        self.bits() - self.prefix()
    }
    pub(super) fn ip_int(&self) -> u128 {
        ip_to_int(self.ip())
    }
    /// The network address as a number.
    pub(super) fn first(&self) -> u128 {
        ip_to_int(self.0.network())
    }
    /// The last address of the network as a number.
    pub(super) fn last(&self) -> u128 {
        ip_to_int(self.0.broadcast())
    }
    /// Number of addresses (saturating for `::/0`).
    pub(super) fn size(&self) -> u128 {
        (self.last() - self.first()).saturating_add(1)
    }
    /// The address numbered `n`, in this network's family.
    pub(super) fn addr(&self, n: u128) -> IpAddr {
        int_to_ip(n, self.version() == 4)
    }
    pub(super) fn network(&self) -> IpAddr {
        self.0.network()
    }
    /// netaddr has no broadcast for /31, /32, /127, /128.
    pub(super) fn broadcast(&self) -> Option<IpAddr> {
        (self.host_bits() > 1).then(|| self.0.broadcast())
    }
    pub(super) fn netmask(&self) -> IpAddr {
        self.0.netmask()
    }
    pub(super) fn hostmask(&self) -> IpAddr {
        self.0.hostmask()
    }
    /// The network with its host bits cleared (netaddr's `.cidr`).
    pub(super) fn trunc(&self) -> Net {
        Net(self.0.trunc())
    }
    /// [`Net::trunc`] as text: `network/prefix`.
    pub(super) fn cidr(&self) -> String {
        self.trunc().to_string()
    }
    /// Whether `other` lies entirely inside this network (same family only).
    pub(super) fn contains_net(&self, other: &Net) -> bool {
        self.0.contains(&other.0)
    }
    /// Whether the address lies inside this network (same family only).
    pub(super) fn contains_ip(&self, ip: IpAddr) -> bool {
        self.0.contains(&ip)
    }
    /// netaddr's `IPNetwork[n]` (negative counts from the end).
    pub(super) fn nth(&self, n: i128) -> Option<IpAddr> {
        let size = self.size();
        let idx = if n < 0 {
            size.checked_sub(n.unsigned_abs())?
        } else {
            n as u128
        };
        (idx < size).then(|| self.addr(self.first() + idx))
    }
}

impl std::fmt::Display for Net {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.ip(), self.prefix())
    }
}

/// An address as a number (IPv4 in the low 32 bits), for offsets and indexes.
pub(super) fn ip_to_int(ip: IpAddr) -> u128 {
    match ip {
        IpAddr::V4(a) => u32::from(a) as u128,
        IpAddr::V6(a) => u128::from(a),
    }
}

/// The inverse of [`ip_to_int`] in the given family.
pub(super) fn int_to_ip(n: u128, v4: bool) -> IpAddr {
    if v4 {
        IpAddr::V4(Ipv4Addr::from(n as u32))
    } else {
        IpAddr::V6(Ipv6Addr::from(n))
    }
}

/// A dotted IPv4 mask (`255.255.255.0` or the hostmask `0.0.0.255`) as a prefix length.
fn mask_prefix(mask: &str) -> Option<u8> {
    let m: Ipv4Addr = mask.parse().ok()?;
    ipv4_mask_to_prefix(m)
        .or_else(|_| ipv4_mask_to_prefix(!m))
        .ok()
}

/// Parses what netaddr's `IPNetwork` accepts: `addr`, `addr/len`, `addr/mask`.
pub(super) fn parse_net(s: &str) -> Option<Net> {
    if let Some((a, p)) = s.split_once('/') {
        let ip: IpAddr = a.parse().ok()?;
        let prefix = if !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()) {
            p.parse::<u8>().ok()?
        } else if ip.is_ipv4() {
            mask_prefix(p)?
        } else {
            return None;
        };
        Net::new(ip, prefix)
    } else {
        Some(Net::host(s.parse().ok()?))
    }
}

#[derive(Clone, Copy, PartialEq, Debug)]
pub(super) enum VType {
    Address,
    Network,
}

/// What ansible.utils makes of one input: the network, whether it was written as
/// an address or with a prefix, and the value as text.
pub(super) fn recognise(value: &Value, version: Option<u8>) -> Option<(Net, VType, String)> {
    let text = py_str(value);
    if !value.is_true() || (value.kind() == ValueKind::Bool) {
        return None;
    }
    if !text.is_empty() && text.chars().all(|c| c.is_ascii_digit()) {
        let n: u128 = text.parse().ok()?;
        let v4 = version != Some(6) && n <= u32::MAX as u128;
        let net = Net::host(int_to_ip(n, v4));
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
        Net::new(int_to_ip(a, true), p)?
    } else {
        Net::new(int_to_ip(a, false), p)?
    };
    Some((net, VType::Network, net.to_string()))
}

/// Whether the address is in one of the networks written in `table`.
pub(super) fn in_table(ip: IpAddr, table: &[&str]) -> bool {
    table
        .iter()
        .filter_map(|n| parse_net(n))
        .any(|n| n.contains_ip(ip))
}

/// netaddr's `is_global()`: not in IANA's not-globally-reachable registries.
pub(super) fn is_global(ip: IpAddr) -> bool {
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

pub(super) fn is_multicast(ip: IpAddr) -> bool {
    ip.is_multicast()
}

pub(super) fn is_loopback(ip: IpAddr) -> bool {
    ip.is_loopback()
}

/// netaddr's `is_netmask`/`is_hostmask`: contiguous ones from the top / bottom.
pub(super) fn is_netmask(ip: IpAddr) -> bool {
    ip_mask_to_prefix(ip).is_ok()
}

pub(super) fn is_hostmask(ip: IpAddr) -> bool {
    let inverted = match ip {
        IpAddr::V4(a) => IpAddr::V4(!a),
        IpAddr::V6(a) => IpAddr::V6(!a),
    };
    ip_mask_to_prefix(inverted).is_ok()
}

pub(super) fn s(v: impl ToString) -> Value {
    Value::from(v.to_string())
}

pub(super) fn none() -> Value {
    Value::from(())
}

/// IPv6 form of an IPv4 network (netaddr's `ipv6()`: `::ffff:a.b.c.d`, prefix + 96).
pub(super) fn to_ipv6(v: &Net) -> Net {
    match v.ip() {
        // An IPv4 prefix (at most 32) plus 96 is a valid IPv6 prefix.
        IpAddr::V4(a) => Net(IpNet::new_assert(
            IpAddr::V6(a.to_ipv6_mapped()),
            v.prefix() + 96,
        )),
        IpAddr::V6(_) => *v,
    }
}

/// IPv4 form of an IPv6 network, when it is IPv4-mapped or -compatible.
pub(super) fn to_ipv4(v: &Net) -> Option<Net> {
    match v.ip() {
        IpAddr::V4(_) => Some(*v),
        IpAddr::V6(a) => {
            let n = u128::from(a);
            let mapped = n >> 32 == 0xffff;
            if !(mapped || n <= u32::MAX as u128) || v.prefix() < 96 {
                return None;
            }
            Net::new(IpAddr::V4(Ipv4Addr::from(n as u32)), v.prefix() - 96)
        }
    }
}

pub(super) fn first_last(v: &Net) -> (u128, u128) {
    if v.size() == 2 {
        (v.first(), v.last())
    } else {
        (v.first() + 1, v.last() - 1)
    }
}
