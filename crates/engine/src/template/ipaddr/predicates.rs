//! The IP Jinja tests (`in_network`, `in_any_network`, `ip`, `ipv4_address`, `subnet_of`,
//! `private` …), with Python's `ipaddress` semantics: a network must not have host bits
//! set.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use minijinja::value::ValueKind;
use minijinja::{Error, Value};

use crate::template::filters::{fail, py_str, py_type};

use super::net::{is_global, is_loopback, parse_net, Net};

fn strict_net(v: &Value) -> Option<Net> {
    let text = py_str(v);
    let n = parse_net(&text)?;
    (n.ip() == n.network()).then_some(n)
}

pub(super) fn in_network(ip: &Value, network: &Value) -> bool {
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

pub(super) fn in_any_network(ip: &Value, nets: &Value) -> Result<bool, Error> {
    Ok(networks(nets)?.iter().any(|n| in_network(ip, n)))
}

pub(super) fn in_one_network(ip: &Value, nets: &Value) -> Result<bool, Error> {
    Ok(networks(nets)?.iter().filter(|n| in_network(ip, n)).count() == 1)
}

pub(super) fn is_ip(v: &Value) -> bool {
    parse_net(&py_str(v)).is_some()
}

pub(super) fn is_ip_address(v: &Value) -> bool {
    py_str(v).parse::<IpAddr>().is_ok()
}

pub(super) fn is_ipv4(v: &Value) -> bool {
    parse_net(&py_str(v)).is_some_and(|n| n.version() == 4)
}

pub(super) fn is_ipv6(v: &Value) -> bool {
    parse_net(&py_str(v)).is_some_and(|n| n.version() == 6)
}

pub(super) fn is_ipv4_address(v: &Value) -> bool {
    py_str(v).parse::<Ipv4Addr>().is_ok()
}

pub(super) fn is_ipv6_address(v: &Value) -> bool {
    py_str(v).parse::<Ipv6Addr>().is_ok()
}

pub(super) fn subnet_of(a: &Value, b: &Value) -> bool {
    in_network(a, b)
}

pub(super) fn supernet_of(a: &Value, b: &Value) -> bool {
    in_network(b, a)
}

pub(super) fn is_private_test(v: &Value) -> bool {
    parse_net(&py_str(v)).is_some_and(|n| !is_global(n.ip()))
}

pub(super) fn is_public_test(v: &Value) -> bool {
    parse_net(&py_str(v)).is_some_and(|n| is_global(n.ip()))
}

pub(super) fn is_loopback_test(v: &Value) -> bool {
    parse_net(&py_str(v)).is_some_and(|n| is_loopback(n.ip()))
}
