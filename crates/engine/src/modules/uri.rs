//! `uri`: one HTTP(S) request from the host with curl, in one round trip; checks the
//! status, returns the body (parsed when it is JSON) and the response headers.
//!
//! The request (URL, headers, credentials, body) goes to the host on stdin as a curl
//! config, never on a command line. Client certificates (`client_cert`/`client_key`)
//! and a CA file (`ca_path`) reach etcd and the API server over TLS. It changes nothing
//! on the host, so it reports `changed: false`. In check mode GET/HEAD/OPTIONS requests
//! still run (they only read); other methods are skipped.

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::args::{self, Flag, Text};
use super::get_url::parse_headers;
use super::net::{self, Request};
use super::remote;
use super::{parse_args, CheckMode, Module, ModuleContext, ModuleResult, VarMap};
use crate::error::{Error, ErrorKind, Result};

crate::closed_set! {
    /// How `body` is sent.
    enum BodyFormat for "body_format" {
        Raw = "raw",
        Json = "json",
        FormUrlencoded = "form-urlencoded",
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UriArgs {
    #[serde(default)]
    url: Option<Text>,
    #[serde(default)]
    method: Option<Text>,
    #[serde(default)]
    body: Option<Value>,
    #[serde(default)]
    body_format: Option<BodyFormat>,
    #[serde(default)]
    headers: Option<Value>,
    #[serde(default)]
    status_code: Option<Value>,
    #[serde(default)]
    return_content: Flag,
    #[serde(default)]
    client_cert: Option<Text>,
    #[serde(default)]
    client_key: Option<Text>,
    #[serde(default)]
    ca_path: Option<Text>,
    #[serde(default = "Flag::on")]
    validate_certs: Flag,
    #[serde(default)]
    url_username: Option<Text>,
    #[serde(default)]
    url_password: Option<Text>,
    #[serde(default)]
    force_basic_auth: Option<Flag>,
    #[serde(default)]
    timeout: Option<Value>,
    #[serde(default)]
    follow_redirects: Option<Value>,
    #[serde(default)]
    http_agent: Option<Text>,
    #[serde(default)]
    use_proxy: Option<Flag>,
}

fn text(t: &Option<Text>) -> Option<String> {
    t.as_ref().map(|t| t.as_str().to_string())
}

/// Parses and checks the arguments without the host: the URL is required, status codes,
/// headers and timeout must read.
fn check(raw: VarMap) -> Result<(UriArgs, String)> {
    let a: UriArgs = parse_args("uri", raw, VALID)?;
    let _ = (a.force_basic_auth, a.use_proxy);
    let url = text(&a.url)
        .filter(|u| !u.is_empty())
        .ok_or_else(|| Error::new(ErrorKind::ModuleArgs, "uri: `url` is required"))?;
    status_codes(&a.status_code)?;
    parse_headers(&a.headers)?;
    if let Some(v) = &a.timeout {
        net::parse_seconds(v)?;
    }
    Ok((a, url))
}

const VALID: &[&str] = &[
    "url",
    "method",
    "body",
    "body_format",
    "headers",
    "status_code",
    "return_content",
    "client_cert",
    "client_key",
    "ca_path",
    "validate_certs",
    "url_username",
    "url_password",
    "force_basic_auth",
    "timeout",
    "follow_redirects",
    "http_agent",
    "use_proxy",
];

/// Makes HTTP requests.
pub struct Uri;

/// `status_code` as a list of integers (a number, a numeric string, a comma list, a list).
fn status_codes(v: &Option<Value>) -> Result<Vec<i64>> {
    let bad = |v: &Value| {
        Error::new(
            ErrorKind::ModuleArgs,
            format!(
                "uri: invalid status_code {}: expected a number or a list of numbers",
                v
            ),
        )
    };
    let one = |v: &Value| -> Result<Vec<i64>> {
        match v {
            Value::Number(n) => n.as_i64().map(|i| vec![i]).ok_or_else(|| bad(v)),
            Value::String(s) => s
                .split(',')
                .filter(|p| !p.trim().is_empty())
                .map(|p| p.trim().parse().map_err(|_| bad(v)))
                .collect(),
            _ => Err(bad(v)),
        }
    };
    match v {
        None | Some(Value::Null) => Ok(vec![200]),
        Some(Value::Array(items)) => {
            let mut out = Vec::new();
            for i in items {
                out.extend(one(i)?);
            }
            Ok(out)
        }
        Some(other) => one(other),
    }
}

/// Percent-encodes a form value (`application/x-www-form-urlencoded`).
fn form_encode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{:02X}", b)),
        }
    }
    out
}

fn scalar_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// The last header block of a `curl -D` dump (earlier ones are redirects), as Ansible's
/// result keys: lower case, `-` → `_`.
fn parse_headers_dump(text: &str) -> (Map<String, Value>, usize) {
    let blocks: Vec<&str> = text
        .split("\r\n\r\n")
        .flat_map(|b| b.split("\n\n"))
        .filter(|b| b.trim_start().starts_with("HTTP/"))
        .collect();
    let mut m = Map::new();
    if let Some(last) = blocks.last() {
        for line in last.lines().skip(1) {
            if let Some((k, v)) = line.split_once(':') {
                m.insert(
                    k.trim().to_ascii_lowercase().replace('-', "_"),
                    Value::String(v.trim().to_string()),
                );
            }
        }
    }
    (m, blocks.len())
}

#[async_trait]
impl Module for Uri {
    fn check_mode(&self) -> CheckMode {
        CheckMode::ActionRefuses
    }

    fn validate(&self, args: &VarMap) -> Result<()> {
        check(args.clone()).map(|_| ())
    }

    async fn run(&self, ctx: &ModuleContext, raw: VarMap) -> Result<ModuleResult> {
        let (a, url) = check(raw).map_err(|e| e.at_opt(ctx.span.as_ref()))?;
        let method = text(&a.method)
            .unwrap_or_else(|| "GET".into())
            .to_ascii_uppercase();
        let codes = status_codes(&a.status_code)?;
        let mut headers = parse_headers(&a.headers)?;
        let has = |h: &indexmap::IndexMap<String, String>, k: &str| {
            h.keys().any(|x| x.eq_ignore_ascii_case(k))
        };
        let format = a.body_format.unwrap_or(BodyFormat::Raw);
        let body = match (&a.body, format) {
            (None, _) | (Some(Value::Null), _) => None,
            (Some(b), BodyFormat::Json) => {
                if !has(&headers, "Content-Type") {
                    headers.insert("Content-Type".into(), "application/json".into());
                }
                Some(match b {
                    Value::String(s) => s.clone(),
                    other => serde_json::to_string(other).unwrap_or_default(),
                })
            }
            (Some(b), BodyFormat::FormUrlencoded) => {
                if !has(&headers, "Content-Type") {
                    headers.insert(
                        "Content-Type".into(),
                        "application/x-www-form-urlencoded".into(),
                    );
                }
                Some(match b {
                    Value::Object(m) => m
                        .iter()
                        .map(|(k, v)| {
                            format!("{}={}", form_encode(k), form_encode(&scalar_text(v)))
                        })
                        .collect::<Vec<_>>()
                        .join("&"),
                    other => scalar_text(other),
                })
            }
            (Some(b), BodyFormat::Raw) => Some(scalar_text(b)),
        };
        if let Some(agent) = &a.http_agent {
            headers.insert("User-Agent".into(), agent.as_str().to_string());
        }
        let follow = match &a.follow_redirects {
            None => true,
            Some(Value::String(s)) => !matches!(s.as_str(), "none" | "no" | "false"),
            Some(v) => args::to_bool(v).unwrap_or(true),
        };
        let timeout = match &a.timeout {
            Some(v) => net::parse_seconds(v)?,
            None => Some(30),
        };
        let req = Request {
            url: url.clone(),
            method: (method != "GET" || body.is_some()).then(|| method.clone()),
            headers,
            username: text(&a.url_username).filter(|u| !u.is_empty()),
            password: text(&a.url_password),
            timeout,
            validate_certs: a.validate_certs.0,
            ca_path: text(&a.ca_path),
            client_cert: text(&a.client_cert),
            client_key: text(&a.client_key),
            follow_redirects: follow,
            body,
            ..Default::default()
        };
        let mut cfg = req.curl_config();
        if method == "HEAD" {
            cfg.push_str("head\n");
        }
        let out = ctx.exec(SCRIPT, Some(cfg.into_bytes())).await?;
        if out.rc != 0 {
            return Err(
                remote::remote_error(&format!("uri: cannot request {}", url), &out)
                    .at_opt(ctx.span.as_ref()),
            );
        }
        let text = out.stdout_text();
        let section = |name: &str| -> Vec<u8> {
            let start = format!("=={}==\n", name);
            let Some(i) = text.find(&start) else {
                return Vec::new();
            };
            let rest = &text[i + start.len()..];
            let end = rest.find("\n==").map(|e| e + 1).unwrap_or(rest.len());
            let b64: String = rest[..end].split_whitespace().collect();
            use base64::Engine;
            base64::engine::general_purpose::STANDARD
                .decode(b64)
                .unwrap_or_default()
        };
        let get = |k: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(&format!("{}=", k)))
                .map(str::to_string)
        };
        let code: i64 = get("http_status")
            .and_then(|c| c.parse().ok())
            .filter(|c| *c != 0)
            .unwrap_or(-1);
        let curl_rc = get("curl_rc").unwrap_or_default();
        let (hdrs, nblocks) = parse_headers_dump(&String::from_utf8_lossy(&section("kk-headers")));
        let body = section("kk-body");
        let content = String::from_utf8_lossy(&body).into_owned();
        let mut res = ModuleResult::ok();
        for (k, v) in &hdrs {
            res.data.insert(k.clone(), v.clone());
        }
        res.data.insert("status".into(), code.into());
        res.data
            .insert("url".into(), net::normalize_url(&url).into());
        res.data.insert("redirected".into(), (nblocks > 1).into());
        let ctype = hdrs
            .get("content_type")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_ascii_lowercase();
        let looks_json = ctype.contains("json")
            || matches!(content.trim_start().chars().next(), Some('{') | Some('['));
        if looks_json {
            if let Ok(j) = serde_json::from_str::<Value>(&content) {
                res.data.insert("json".into(), j);
            }
        }
        if a.return_content.0 {
            res.data.insert("content".into(), content.clone().into());
        }
        if code == -1 {
            let err = out.stderr_text();
            res.failed = true;
            res.msg = Some(format!(
                "Status code was -1 and not {:?}: Request failed: {} (curl exit {})",
                codes,
                err.trim(),
                curl_rc
            ));
        } else if !codes.contains(&code) {
            res.failed = true;
            res.msg = Some(format!(
                "Status code was {} and not {:?}: {}",
                code,
                codes,
                content.chars().take(500).collect::<String>().trim()
            ));
            if !a.return_content.0 {
                res.data.insert("content".into(), content.into());
            }
        } else {
            res.msg = Some(format!("OK ({} bytes)", body.len()));
        }
        Ok(res)
    }
}

/// Runs the request: config from stdin into a 0600 file, then status, headers and body.
const SCRIPT: &str = r#"command -v curl >/dev/null 2>&1 || { echo "curl is not installed on this host; install it (e.g. apt-get install curl)" >&2; exit 127; }
um=$(umask); umask 077
cfg=$(mktemp "${TMPDIR:-/tmp}/.kk_curl.XXXXXXXX") || exit 70
trap 'rm -f "$cfg" "$cfg.out" "$cfg.hdr"' EXIT
cat > "$cfg" || exit 71
umask "$um"
: > "$cfg.out"; : > "$cfg.hdr"
code=$(curl -sS -K "$cfg" -o "$cfg.out" -D "$cfg.hdr" -w '%{http_code}')
rc=$?
echo "http_status=$code"
echo "curl_rc=$rc"
echo "==kk-headers=="
base64 < "$cfg.hdr"
echo "==kk-body=="
base64 < "$cfg.out"
echo "==kk-end=="
"#;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn codes_forms_headers() {
        assert_eq!(status_codes(&None).unwrap(), vec![200]);
        assert_eq!(
            status_codes(&Some(json!([200, "201"]))).unwrap(),
            vec![200, 201]
        );
        assert_eq!(
            status_codes(&Some(json!("200,204"))).unwrap(),
            vec![200, 204]
        );
        assert!(status_codes(&Some(json!("ok"))).is_err());
        assert_eq!(form_encode("a b&c"), "a+b%26c");
        let (h, n) = parse_headers_dump(
            "HTTP/1.1 302 Found\r\nLocation: /x\r\n\r\nHTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n",
        );
        assert_eq!(n, 2);
        assert_eq!(h["content_type"], "application/json");
        assert!(!h.contains_key("location"));
    }

    #[test]
    fn validate_at_load() {
        let check = |a: Value| Uri.validate(a.as_object().unwrap());
        assert!(check(
            json!({"url": "https://x", "status_code": [200, 201], "body_format": "json"})
        )
        .is_ok());
        let e = check(json!({"url": "https://x", "body_format": "xml"})).unwrap_err();
        assert!(
            e.message.contains("uri")
                && e.message.contains("`body_format`")
                && e.message.contains("raw, json, form-urlencoded"),
            "{}",
            e.message
        );
        let e = check(json!({"url": "https://x", "metod": "GET"})).unwrap_err();
        assert!(e.message.contains("uri") && e.message.contains("metod"));
        let e = check(json!({"method": "GET"})).unwrap_err();
        assert!(e.message.contains("uri: `url` is required"));
        assert!(check(json!({"url": "https://x", "status_code": "ok"})).is_err());
    }
}
