//! What the HTTP modules (`get_url`, `uri`) share: a curl config file built on the
//! controller and sent to the host on stdin (`curl -K -`), so passwords, tokens and
//! headers never appear in a command line (`ps`) or a log; and checksum specs.

use indexmap::IndexMap;

use crate::error::{Error, ErrorKind, Result};

/// Quotes a value for a curl config file (`"…"` with `\\`, `\"`, `\n`, `\r`, `\t` escapes).
pub fn curl_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\x0b' => out.push_str("\\v"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The request options common to `get_url` and `uri`.
#[derive(Debug, Clone, Default)]
pub struct Request {
    /// The URL (a bare `host/path` gets `http://`, as KubeKey's `http_get_file` does).
    pub url: String,
    /// HTTP method; `None` is GET.
    pub method: Option<String>,
    /// Request headers, in the order given.
    pub headers: IndexMap<String, String>,
    /// Basic auth user.
    pub username: Option<String>,
    /// Basic auth password.
    pub password: Option<String>,
    /// Send the credentials without waiting for a 401 (curl always does for basic).
    pub bearer_token: Option<String>,
    /// Whole-request timeout in seconds.
    pub timeout: Option<u64>,
    /// Verify the server's certificate.
    pub validate_certs: bool,
    /// CA bundle (a file) or directory of CA certificates.
    pub ca_path: Option<String>,
    /// Client certificate (PEM).
    pub client_cert: Option<String>,
    /// Client key (PEM).
    pub client_key: Option<String>,
    /// Follow redirects.
    pub follow_redirects: bool,
    /// Request body.
    pub body: Option<String>,
}

/// Adds `http://` to a URL without a scheme.
pub fn normalize_url(url: &str) -> String {
    if url.contains("://") {
        url.to_string()
    } else {
        format!("http://{}", url)
    }
}

impl Request {
    /// The curl config (for `curl -K -`): everything that may be secret is in here.
    pub fn curl_config(&self) -> String {
        let mut c = String::new();
        let mut line = |k: &str, v: &str| {
            c.push_str(k);
            c.push_str(" = ");
            c.push_str(&curl_quote(v));
            c.push('\n');
        };
        line("url", &normalize_url(&self.url));
        if let Some(m) = &self.method {
            line("request", m);
        }
        for (k, v) in &self.headers {
            line("header", &format!("{}: {}", k, v));
        }
        if let Some(u) = &self.username {
            line(
                "user",
                &format!("{}:{}", u, self.password.as_deref().unwrap_or("")),
            );
        }
        if let Some(t) = &self.bearer_token {
            line("header", &format!("Authorization: Bearer {}", t));
        }
        if let Some(t) = self.timeout {
            line("max-time", &t.to_string());
            line("connect-timeout", &t.min(30).to_string());
        }
        if let Some(ca) = &self.ca_path {
            line("cacert", ca);
        }
        if let Some(cert) = &self.client_cert {
            line("cert", cert);
        }
        if let Some(key) = &self.client_key {
            line("key", key);
        }
        if let Some(b) = &self.body {
            line("data-raw", b);
        }
        if !self.validate_certs {
            c.push_str("insecure\n");
        }
        if self.follow_redirects {
            c.push_str("location\nmax-redirs = 10\n");
        }
        c
    }
}

/// A shell function `kk_curl CFG OUT HDRS` running curl with the config file, writing
/// the body to OUT and the response headers to HDRS, printing the HTTP status (`000`
/// when no response came). Its exit status is curl's.
pub const CURL_FN: &str = r#"kk_curl() {
  command -v curl >/dev/null 2>&1 || { echo "curl is not installed on this host; install it (e.g. apt-get install curl)" >&2; return 127; }
  curl -sS -K "$1" -o "$2" -D "$3" -w '%{http_code}'
}
"#;

/// A checksum wanted for a download: `algorithm:hex` or `algorithm:URL of a sums file`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChecksumSpec {
    /// `sha256`, `sha1`, `md5`, `sha224`, `sha384` or `sha512`.
    pub algorithm: String,
    /// The digest (lower case hex) or a URL to read it from.
    pub value: ChecksumValue,
}

/// Where the digest comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChecksumValue {
    /// Given inline.
    Digest(String),
    /// A file of `<digest>  <name>` lines (or a lone digest) at this URL.
    Url(String),
}

impl ChecksumSpec {
    /// Parses Ansible's `checksum` argument.
    pub fn parse(s: &str) -> Result<ChecksumSpec> {
        let bad = |why: String| {
            Error::new(
                ErrorKind::ModuleArgs,
                format!("invalid checksum {:?}: {}", s, why),
            )
            .help("write it as `sha256:<hex digest>` or `sha256:<URL of a checksum file>`")
        };
        let (alg, rest) = s
            .trim()
            .split_once(':')
            .ok_or_else(|| bad("expected `<algorithm>:<digest or URL>`".into()))?;
        let alg = alg.trim().to_ascii_lowercase();
        let len = match alg.as_str() {
            "md5" => 32,
            "sha1" => 40,
            "sha224" => 56,
            "sha256" => 64,
            "sha384" => 96,
            "sha512" => 128,
            other => return Err(bad(format!("unknown algorithm `{}`", other))),
        };
        let rest = rest.trim();
        if rest.contains("://") {
            return Ok(ChecksumSpec {
                algorithm: alg,
                value: ChecksumValue::Url(rest.to_string()),
            });
        }
        let hexd = rest.to_ascii_lowercase();
        if hexd.len() != len || !hexd.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err(bad(format!(
                "a {} digest is {} hex digits, found {:?}",
                alg, len, rest
            )));
        }
        Ok(ChecksumSpec {
            algorithm: alg,
            value: ChecksumValue::Digest(hexd),
        })
    }

    /// The host command computing this digest (`sha256sum` …).
    pub fn command(&self) -> String {
        format!("{}sum", self.algorithm)
    }
}

/// A duration given as seconds (`30`, `"30"`) or Go style (`"10s"`, `"5m"`, `"1h30m"`, `"300ms"`),
/// as KubeKey writes `timeout`; rounded up to whole seconds.
pub fn parse_seconds(v: &serde_json::Value) -> Result<Option<u64>> {
    let bad = || {
        Error::new(
            ErrorKind::ModuleArgs,
            format!(
                "invalid timeout {}: expected seconds or a duration like \"30s\"",
                v
            ),
        )
    };
    match v {
        serde_json::Value::Null => Ok(None),
        serde_json::Value::Number(n) => n
            .as_f64()
            .filter(|f| *f >= 0.0)
            .map(|f| Some(f.ceil() as u64))
            .ok_or_else(bad),
        serde_json::Value::String(s) => {
            let s = s.trim();
            if let Ok(n) = s.parse::<f64>() {
                return if n >= 0.0 {
                    Ok(Some(n.ceil() as u64))
                } else {
                    Err(bad())
                };
            }
            const UNITS_MS: &[(&str, f64)] = &[
                ("ms", 1.0),
                ("s", 1000.0),
                ("m", 60_000.0),
                ("h", 3_600_000.0),
            ];
            let total_ms = crate::duration::parse(s, UNITS_MS).ok_or_else(bad)?;
            Ok(Some(total_ms.div_ceil(1000) as u64))
        }
        _ => Err(bad()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn quoting_and_config() {
        assert_eq!(curl_quote("a\"b\\c\nd"), r#""a\"b\\c\nd""#);
        let r = Request {
            url: "example.com/x".into(),
            username: Some("u".into()),
            password: Some("p\"w".into()),
            validate_certs: true,
            follow_redirects: true,
            ..Default::default()
        };
        let c = r.curl_config();
        assert!(c.contains("url = \"http://example.com/x\"\n"), "{c}");
        assert!(c.contains("user = \"u:p\\\"w\"\n"), "{c}");
        assert!(c.contains("location\n"));
        assert!(!c.contains("insecure"));
    }

    #[test]
    fn checksums() {
        let d = "a".repeat(64);
        assert_eq!(
            ChecksumSpec::parse(&format!("sha256:{}", d)).unwrap(),
            ChecksumSpec {
                algorithm: "sha256".into(),
                value: ChecksumValue::Digest(d.clone())
            }
        );
        assert_eq!(
            ChecksumSpec::parse("sha256:http://h/SUMS").unwrap().value,
            ChecksumValue::Url("http://h/SUMS".into())
        );
        assert!(ChecksumSpec::parse("sha256:abc").is_err());
        assert!(ChecksumSpec::parse("crc32:abc").is_err());
        assert!(ChecksumSpec::parse(&d).is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_seconds(&json!(10)).unwrap(), Some(10));
        assert_eq!(parse_seconds(&json!("10s")).unwrap(), Some(10));
        assert_eq!(parse_seconds(&json!("1m30s")).unwrap(), Some(90));
        assert_eq!(parse_seconds(&json!("300ms")).unwrap(), Some(1));
        assert_eq!(parse_seconds(&json!("15")).unwrap(), Some(15));
        assert!(parse_seconds(&json!("soon")).is_err());
        assert!(parse_seconds(&json!("5x")).is_err());
        assert!(parse_seconds(&json!("1d")).is_err());
    }
}
