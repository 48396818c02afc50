//! Ansible host keys: `name:port`, `[ipv6]:port` and ranges (`web[01:03].example.com`,
//! `db-[a:c]`, `n[0:10:5]`), and the check that a host name is one patterns can select.

use crate::error::{Error, Result, Span};

/// Expands an Ansible host key: `name:port` and ranges `web[01:03].example.com`, `db-[a:c]`,
/// `n[0:10:5]`. Returns the names and the port, if any.
/// The port of a `name:port` host key: 1 to 65535, as every inventory port.
fn key_port(raw: &str, p: &str, span: &Span) -> Result<u16> {
    crate::connect::parse_port(&serde_json::Value::String(p.to_string()))
        .map_err(|m| Error::syntax(format!("host `{}`: {}", raw, m), span))
}

pub(super) fn expand_host(raw: &str, span: &Span) -> Result<(Vec<String>, Option<u16>)> {
    let mut name = raw.trim().to_string();
    let mut port = None;
    // `[ipv6]:port`
    if let Some((addr, p)) = name.strip_prefix('[').and_then(|r| r.split_once("]:")) {
        if addr.parse::<std::net::Ipv6Addr>().is_ok() {
            port = Some(key_port(raw, p, span)?);
            name = addr.to_string();
        }
    }
    // `host:port`, but not IPv6 addresses (more than one colon) nor ranges (`[1:3]`).
    if let Some((h, p)) = name.rsplit_once(':') {
        if !outside_brackets(h).contains(':')
            && !p.contains(']')
            && !p.is_empty()
            && p.bytes().all(|b| b.is_ascii_digit())
        {
            port = Some(key_port(raw, p, span)?);
            name = h.to_string();
        }
    }
    check_host_name(&name, span)?;
    // A bare IPv6 address (or `[addr]`) is one host, never a range.
    let bare = name.trim_start_matches('[').trim_end_matches(']');
    if bare.parse::<std::net::Ipv6Addr>().is_ok() {
        return Ok((vec![bare.to_string()], port));
    }
    let names = expand_ranges(&name).map_err(|msg| {
        Error::syntax(format!("host range `{}`: {}", raw, msg), span)
            .help("ranges are written `web[01:10]`, `web[1:10:2]` (step) or `db-[a:f]`")
    })?;
    Ok((names, port))
}

/// The text of a host key without its `[range]` parts, so `node[01:03]:2222` is seen as
/// `node:2222` when looking for a port.
fn outside_brackets(s: &str) -> String {
    let mut depth = 0usize;
    s.chars()
        .filter(|c| {
            match c {
                '[' => depth += 1,
                ']' => depth = depth.saturating_sub(1),
                _ => return depth == 0,
            }
            false
        })
        .collect()
}

/// Rejects host names that host patterns could not select.
pub(super) fn check_host_name(name: &str, span: &Span) -> Result<()> {
    if name.is_empty() || name.contains([',', ' ', '\t', '&', '!', '~', '|']) {
        return Err(Error::syntax(
            format!("`{}` is not a usable host name: it cannot be empty or contain spaces, `,`, `&`, `!`, `~` or `|`", name),
            span,
        ));
    }
    Ok(())
}

/// The most hosts one host key may expand to.
const MAX_RANGE_HOSTS: usize = 100_000;

/// Ansible's `expand_hostname_range`, recursively for several ranges.
pub(super) fn expand_ranges(name: &str) -> std::result::Result<Vec<String>, String> {
    let Some(open) = name.find('[') else {
        if name.contains(']') {
            return Err("`]` without `[`".to_string());
        }
        return Ok(vec![name.to_string()]);
    };
    let close = name[open..]
        .find(']')
        .map(|i| open + i)
        .ok_or("unclosed `[`")?;
    let (head, inner, tail) = (&name[..open], &name[open + 1..close], &name[close + 1..]);
    let parts: Vec<&str> = inner.split(':').collect();
    if parts.len() < 2 || parts.len() > 3 {
        return Err(format!(
            "`[{}]` is not `[start:end]` or `[start:end:step]`",
            inner
        ));
    }
    let (beg, end) = (parts[0], parts[1]);
    let step: usize = match parts.get(2) {
        Some(s) => s
            .parse()
            .ok()
            .filter(|s| *s > 0)
            .ok_or(format!("step `{}` is not a positive number", s))?,
        None => 1,
    };
    let mut items = Vec::new();
    let is_alpha = |s: &str| s.len() == 1 && s.bytes().all(|b| b.is_ascii_alphabetic());
    if is_alpha(beg) && is_alpha(end) {
        let (b, e) = (beg.as_bytes()[0], end.as_bytes()[0]);
        if b > e {
            return Err(format!("range start `{}` is after its end `{}`", beg, end));
        }
        items.extend((b..=e).step_by(step).map(|c| (c as char).to_string()));
    } else {
        let beg_str = if beg.is_empty() { "0" } else { beg };
        let b: u64 = beg_str
            .parse()
            .map_err(|_| format!("`{}` is not a number or a letter", beg))?;
        let e: u64 = end
            .parse()
            .map_err(|_| format!("`{}` is not a number or a letter", end))?;
        if b > e {
            return Err(format!("range start `{}` is after its end `{}`", beg, end));
        }
        if (e - b) / step as u64 >= MAX_RANGE_HOSTS as u64 {
            return Err(format!("more than {} hosts", MAX_RANGE_HOSTS));
        }
        let width = if beg_str.len() > 1 && beg_str.starts_with('0') {
            beg_str.len()
        } else {
            0
        };
        if width > 0 && end.len() != width {
            return Err(format!(
                "`{}` and `{}` must have the same number of digits",
                beg, end
            ));
        }
        items.extend(
            (b..=e)
                .step_by(step)
                .map(|i| format!("{:0width$}", i, width = width)),
        );
    }
    let tails = expand_ranges(tail)?;
    // Several ranges in one name multiply (`h[0:99999][0:99999]`): the cap is on the product.
    if items.len().saturating_mul(tails.len()) > MAX_RANGE_HOSTS {
        return Err(format!("more than {} hosts", MAX_RANGE_HOSTS));
    }
    let mut out = Vec::new();
    for i in &items {
        for t in &tails {
            out.push(format!("{}{}{}", head, i, t));
        }
    }
    Ok(out)
}
