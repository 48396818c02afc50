//! URL filters (`urlsplit`, `urldecode`) and the `uri`/`url`/`urn` tests, on a port of
//! Python's `urllib.parse.urlsplit` so the parts come out as Ansible gives them.

use minijinja::{Error, Value};

use super::{fail, map_value, py_str};

/// The five parts of Python's `SplitResult`.
pub(crate) struct Split {
    pub scheme: String,
    pub netloc: String,
    pub path: String,
    pub query: String,
    pub fragment: String,
}

/// Python's `urlsplit(url)` (3.11): scheme, `//netloc`, path, `?query`, `#fragment`.
pub(crate) fn urlsplit_parts(url: &str) -> Result<Split, String> {
    let mut url: String = url
        .trim_start_matches(|c: char| c <= ' ')
        .chars()
        .filter(|c| !matches!(c, '\t' | '\r' | '\n'))
        .collect();
    let mut scheme = String::new();
    if let Some(i) = url.find(':') {
        let head = &url[..i];
        if i > 0
            && head.starts_with(|c: char| c.is_ascii_alphabetic())
            && head
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        {
            scheme = head.to_ascii_lowercase();
            url = url[i + 1..].to_string();
        }
    }
    let mut netloc = String::new();
    if let Some(rest) = url.strip_prefix("//") {
        let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        netloc = rest[..end].to_string();
        url = rest[end..].to_string();
        if netloc.contains('[') != netloc.contains(']') {
            return Err("Invalid IPv6 URL".into());
        }
    }
    let mut fragment = String::new();
    if let Some((u, f)) = url.split_once('#') {
        fragment = f.to_string();
        url = u.to_string();
    }
    let mut query = String::new();
    if let Some((u, q)) = url.split_once('?') {
        query = q.to_string();
        url = u.to_string();
    }
    Ok(Split {
        scheme,
        netloc,
        path: url,
        query,
        fragment,
    })
}

/// The host part of a netloc (after any `user:pass@`).
fn hostinfo(netloc: &str) -> &str {
    netloc.rsplit_once('@').map_or(netloc, |(_, h)| h)
}

/// `urlsplit`: the URL's parts as a dict (Python's attribute names, sorted), or the one
/// part `query` names.
pub(super) fn urlsplit(value: &Value, query: Option<String>) -> Result<Value, Error> {
    let url = py_str(value);
    let s = urlsplit_parts(&url).map_err(|e| fail(format!("urlsplit: {}", e)))?;
    let userinfo = s.netloc.rsplit_once('@').map(|(u, _)| u);
    let username = userinfo.map(|u| u.split_once(':').map_or(u, |(n, _)| n).to_string());
    let password = userinfo.and_then(|u| u.split_once(':').map(|(_, p)| p.to_string()));
    let host = hostinfo(&s.netloc);
    let (hostname, port) = match host.split_once('[') {
        Some((_, bracketed)) => {
            let (h, after) = bracketed.split_once(']').unwrap_or((bracketed, ""));
            (
                h.to_string(),
                after.split_once(':').map(|(_, p)| p).unwrap_or(""),
            )
        }
        None => match host.split_once(':') {
            Some((h, p)) => (h.to_string(), p),
            None => (host.to_string(), ""),
        },
    };
    let hostname = if hostname.is_empty() {
        Value::from(())
    } else {
        // Python lower-cases the name, not a `%zone` after it.
        Value::from(match hostname.split_once('%') {
            Some((h, zone)) => format!("{}%{}", h.to_lowercase(), zone),
            None => hostname.to_lowercase(),
        })
    };
    let port = if port.is_empty() {
        Value::from(())
    } else if port.chars().all(|c| c.is_ascii_digit()) {
        match port.parse::<u32>() {
            Ok(p) if p <= 65535 => Value::from(p),
            _ => return Err(fail("urlsplit: Port out of range 0-65535")),
        }
    } else {
        return Err(fail(format!(
            "urlsplit: Port could not be cast to integer value as '{}'",
            port
        )));
    };
    let opt = |v: Option<String>| v.map(Value::from).unwrap_or(Value::from(()));
    let parts = vec![
        ("fragment", Value::from(s.fragment)),
        ("hostname", hostname),
        ("netloc", Value::from(s.netloc.clone())),
        ("password", opt(password)),
        ("path", Value::from(s.path)),
        ("port", port),
        ("query", Value::from(s.query)),
        ("scheme", Value::from(s.scheme)),
        ("username", opt(username)),
    ];
    match query.filter(|q| !q.is_empty()) {
        Some(q) => parts
            .into_iter()
            .find(|(k, _)| *k == q)
            .map(|(_, v)| v)
            .ok_or_else(|| fail(format!("urlsplit: unknown URL component: {}", q))),
        None => Ok(map_value(
            parts
                .into_iter()
                .map(|(k, v)| (Value::from(k), v))
                .collect(),
        )),
    }
}

/// `urldecode`: Python's `unquote_plus` (`+` is a space, `%XX` a byte, UTF-8 decoded
/// with replacement).
pub(super) fn urldecode(value: &Value) -> String {
    let s = py_str(value).replace('+', " ");
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                out.push(h * 16 + l);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hex(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

/// The `uri` test: any string parses (Python's urlparse never gives a None scheme or
/// path); with `schemes`, its scheme must be one of them.
pub(crate) fn is_uri(value: &Value, schemes: Option<&Value>) -> bool {
    let Some(s) = value.as_str() else {
        return false;
    };
    let Ok(parts) = urlsplit_parts(s) else {
        return false;
    };
    match schemes.filter(|v| !v.is_none() && !v.is_undefined()) {
        None => true,
        Some(list) => match list.try_iter() {
            Ok(mut it) => it.any(|x| x.as_str() == Some(parts.scheme.as_str())),
            Err(_) => false,
        },
    }
}

/// The `url` test: a URI with a network location, or a `file:` one.
pub(crate) fn is_url(value: &Value, schemes: Option<&Value>) -> bool {
    is_uri(value, schemes)
        && value
            .as_str()
            .and_then(|s| urlsplit_parts(s).ok())
            .is_some_and(|p| !p.netloc.is_empty() || p.scheme == "file")
}
