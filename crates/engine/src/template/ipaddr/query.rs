//! `ipaddr(query)` and its `ipv4`, `ipv6` and `ipwrap` variants: one recognised value (or
//! each item of a list) answered for one of ansible.utils' named queries, a network
//! ("is the value inside it?") or an index (the nth address).

use std::net::IpAddr;

use minijinja::value::ValueKind;
use minijinja::{Error, Value};

use crate::template::filters::{fail, py_str};

use super::net::{
    first_last, in_table, is_global, is_hostmask, is_loopback, is_multicast, is_netmask, none,
    recognise, s, to_ipv4, to_ipv6, Net, VType,
};

fn not_network(alias: &str) -> Error {
    fail(format!("{}: Not a network address", alias))
}

/// One ansible.utils query on one recognised value.
fn run_query(v: &Net, vtype: VType, value: &str, query: &str, alias: &str) -> Result<Value, Error> {
    let size = v.size();
    let ip_is_net = v.ip() == v.network();
    Ok(match query {
        "" => match vtype {
            VType::Address => s(v.ip()),
            VType::Network => s(v),
        },
        "address" | "ip" => {
            if size == 1 || !ip_is_net || v.broadcast().is_none() || v.version() == 6 {
                s(v.ip())
            } else {
                none()
            }
        }
        "address/prefix" | "host/prefix" | "gateway" | "gw" | "hostnet" | "router" => {
            if size > 2 && (v.ip() == v.network() || Some(v.ip()) == v.broadcast()) {
                Value::from(false)
            } else {
                s(format!("{}/{}", v.ip(), v.prefix()))
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
                s(format!("{}/{}", v.ip(), v.prefix()))
            } else {
                none()
            }
        }
        "hostmask" | "wildcard" => s(v.hostmask()),
        "int" => match vtype {
            VType::Address => Value::from(v.ip_int()),
            VType::Network => s(format!("{}/{}", v.ip_int(), v.prefix())),
        },
        "ip/prefix" => {
            if size == 2 || (size > 1 && !ip_is_net) {
                s(format!("{}/{}", v.ip(), v.prefix()))
            } else {
                none()
            }
        }
        "ip_netmask" => {
            if size == 2 || (size > 1 && !ip_is_net) {
                s(format!("{} {}", v.ip(), v.netmask()))
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
            if in_table(v.ip(), table) {
                s(value)
            } else {
                none()
            }
        }
        "lo" | "loopback" => {
            if is_loopback(v.ip()) {
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
            if !is_multicast(v.ip()) {
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
        "prefix" => Value::from(v.prefix()),
        "private" => {
            if !is_global(v.ip()) {
                s(value)
            } else {
                none()
            }
        }
        "public" => {
            let ip = v.ip();
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
        "revdns" => s(revdns(v.ip())),
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
                    VType::Address => s(format!("[{}]", v.ip())),
                    VType::Network => s(format!("[{}]/{}", v.ip(), v.prefix())),
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
            return Ok(if net.trunc().contains_net(&v) {
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
            VType::Address => s(v.ip()),
            VType::Network => s(v),
        });
    }
    Ok(match v.nth(n) {
        Some(a) => s(format!("{}/{}", a, v.prefix())),
        None => Value::from(false),
    })
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

pub(super) fn ipaddr_filter(value: &Value, query: Option<Value>) -> Result<Value, Error> {
    ipaddr_impl(value, &q(query), None, "ipaddr")
}

pub(super) fn ipv4_filter(value: &Value, query: Option<Value>) -> Result<Value, Error> {
    ipaddr_impl(value, &q(query), Some(4), "ipv4")
}

pub(super) fn ipv6_filter(value: &Value, query: Option<Value>) -> Result<Value, Error> {
    ipaddr_impl(value, &q(query), Some(6), "ipv6")
}

pub(super) fn ipwrap(value: &Value, query: Option<Value>) -> Result<Value, Error> {
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
