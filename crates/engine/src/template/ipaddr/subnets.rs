//! The filters on whole networks: `nthhost`, `ipmath`, `ipsubnet`, `network_in_network`,
//! `network_in_usable`, `next_nth_usable` and `previous_nth_usable`.
//!
//! Cluster playbooks derive service and DNS addresses from the service CIDR with these,
//! so bounds and errors follow ansible.utils exactly.

use std::net::IpAddr;

use minijinja::value::ValueKind;
use minijinja::{Error, Value};

use crate::template::filters::{fail, py_str, py_type};

use super::net::{first_last, int_to_ip, ip_to_int, none, parse_net, recognise, s, Net, VType};

/// The value as a CIDR network for filters that work on whole networks
/// (`ipsubnet`, `nthhost`, `network_in_*`); `None` when it is not an IP.
fn as_subnet(value: &Value) -> Option<Net> {
    let (v, _, _) = recognise(value, None)?;
    Some(v.trunc())
}

pub(super) fn nthhost(value: &Value, query: Option<Value>) -> Result<Value, Error> {
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
    Ok(v.nth(n as i128).map(s).unwrap_or(Value::from(false)))
}

pub(super) fn ipmath(value: &Value, amount: &Value) -> Result<String, Error> {
    let text = py_str(value);
    let ip = if text.contains('/') {
        parse_net(&text).map(|n| n.ip())
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

pub(super) fn ipsubnet(
    value: &Value,
    query: Option<Value>,
    index: Option<Value>,
) -> Result<Value, Error> {
    let Some((full, _, _)) = recognise(value, None) else {
        return Ok(Value::from(false));
    };
    let is_addr = full.size() == 1 || full.ip() != full.network();
    // An "address" keeps its host bits, a network is normalised.
    let v = if is_addr { full } else { full.trunc() };
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
            if want < v.prefix() {
                return Ok(match index {
                    Some(_) => Value::from(false),
                    None => s("0"),
                });
            }
            let count_bits = (want - v.prefix()) as u32;
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
                            // `want` is at most the address width (checked above).
                            Net::new(v.addr(v.first() + x * step), want)
                                .map(s)
                                .unwrap_or(Value::from(false))
                        }
                        None => Value::from(false),
                    }
                }
            });
        }
        // A single address: its supernets from /want up to /(prefix-1).
        if want >= v.prefix() {
            return Ok(Value::from(false));
        }
        let supers: Vec<Net> = (want..v.prefix())
            .filter_map(|p| Net::new(v.ip(), p))
            .map(|n| n.trunc())
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
    let inner = v.trunc();
    if outer.contains_net(&inner) && inner.prefix() >= outer.prefix() {
        let shift = (inner.bits() - inner.prefix()) as u32;
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

pub(super) fn network_in_network(value: &Value, test: &Value) -> Result<bool, Error> {
    usable_range(value, test, false, "network_in_network")
}

pub(super) fn network_in_usable(value: &Value, test: &Value) -> Result<bool, Error> {
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

pub(super) fn next_nth_usable(value: &Value, offset: &Value) -> Result<Value, Error> {
    nth_usable(value, offset, true, "next_nth_usable")
}

pub(super) fn previous_nth_usable(value: &Value, offset: &Value) -> Result<Value, Error> {
    nth_usable(value, offset, false, "previous_nth_usable")
}
