//! `gen_cert`'s arguments, checked and turned into a [`Request`]: what the certificate
//! should be (names, SANs, validity, key type, usages) and the replacement policy.

use std::net::IpAddr;

use rcgen::{ExtendedKeyUsagePurpose, KeyUsagePurpose};
use serde::Deserialize;
use serde_json::Value;

use super::DEFAULT_VALIDITY_SECS;
use crate::error::{Error, ErrorKind, Result};
use crate::modules::args::{Flag, Int, List, Text};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct GenCertArgs {
    #[serde(default)]
    pub(super) root_key: Option<Text>,
    #[serde(default)]
    pub(super) root_cert: Option<Text>,
    #[serde(default)]
    pub(super) out_key: Option<Text>,
    #[serde(default)]
    pub(super) out_cert: Option<Text>,
    #[serde(default)]
    pub(super) cn: Option<Text>,
    #[serde(default)]
    pub(super) organization: List,
    #[serde(default)]
    pub(super) sans: List,
    #[serde(default, alias = "validity")]
    pub(super) date: Option<Value>,
    #[serde(default)]
    pub(super) is_ca: Option<Flag>,
    #[serde(default)]
    pub(super) key_type: Option<Text>,
    #[serde(default)]
    pub(super) key_size: Option<Int>,
    /// `None` when not given (defaults apply), unlike an empty list.
    #[serde(default, alias = "key_usages")]
    pub(super) usages: Option<List>,
    /// `None` when not given (defaults apply), unlike an empty list.
    #[serde(default, alias = "extended_key_usages")]
    pub(super) ext_key_usages: Option<List>,
    #[serde(default)]
    pub(super) policy: Option<Text>,
    #[serde(default)]
    pub(super) localhost_sans: Option<Flag>,
}

/// A path argument given and not blank.
pub(super) fn nonempty(o: &Option<Text>) -> Option<String> {
    o.as_ref()
        .map(|t| t.as_str().to_string())
        .filter(|s| !s.trim().is_empty())
}

/// The controller files named (`out_key`, `out_cert`, and the CA's pair or none), and
/// the certificate asked for, checked without touching a file.
pub(super) struct Checked {
    pub(super) out: (String, String),
    pub(super) root: Option<(String, String)>,
    pub(super) request: Request,
}

/// Parses and checks the arguments.
pub(super) fn check(raw: crate::modules::VarMap) -> Result<Checked> {
    let a: GenCertArgs = crate::modules::parse_args("gen_cert", raw, VALID)?;
    let out = match (nonempty(&a.out_key), nonempty(&a.out_cert)) {
        (Some(k), Some(c)) => (k, c),
        _ => return Err(margs("`out_key` and `out_cert` are required")),
    };
    let root =
        match (nonempty(&a.root_key), nonempty(&a.root_cert)) {
            (Some(k), Some(c)) => Some((k, c)),
            (None, None) => None,
            _ => return Err(margs(
                "give both `root_key` and `root_cert` (the CA), or neither for a self-signed CA",
            )),
        };
    let request = Request::from_args(&a, root.is_some())?;
    Ok(Checked { out, root, request })
}

pub(super) const VALID: &[&str] = &[
    "root_key",
    "root_cert",
    "out_key",
    "out_cert",
    "cn",
    "organization",
    "sans",
    "date",
    "validity",
    "is_ca",
    "key_type",
    "key_size",
    "usages",
    "ext_key_usages",
    "policy",
    "localhost_sans",
];

/// When an existing certificate is replaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Policy {
    /// Always make a new key and certificate.
    Always,
    /// Keep a valid existing certificate, replace anything else.
    IfNotPresent,
    /// Never write: the existing certificate must be valid.
    Never,
}

impl Policy {
    fn parse(s: &str) -> Option<Policy> {
        match norm(s).as_str() {
            "always" => Some(Policy::Always),
            "ifnotpresent" | "" => Some(Policy::IfNotPresent),
            "never" | "none" => Some(Policy::Never),
            _ => None,
        }
    }
}

/// The kind of key to make.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum KeyType {
    Rsa(usize),
    EcdsaP256,
    EcdsaP384,
    Ed25519,
}

impl KeyType {
    fn parse(kind: Option<&str>, size: Option<i64>) -> std::result::Result<KeyType, String> {
        let kind = kind.map(norm).unwrap_or_else(|| "rsa".into());
        match (kind.as_str(), size) {
            ("rsa", None) => Ok(KeyType::Rsa(2048)),
            ("rsa", Some(n @ (2048 | 3072 | 4096))) => Ok(KeyType::Rsa(n as usize)),
            ("rsa", Some(n)) => Err(format!(
                "key_size {} is not a supported RSA size (2048, 3072 or 4096)",
                n
            )),
            ("ecdsa" | "ec", None | Some(256)) => Ok(KeyType::EcdsaP256),
            ("ecdsa" | "ec", Some(384)) => Ok(KeyType::EcdsaP384),
            ("ecdsa" | "ec", Some(n)) => Err(format!(
                "key_size {} is not a supported ECDSA curve size (256 or 384)",
                n
            )),
            ("ed25519", None | Some(256)) => Ok(KeyType::Ed25519),
            ("ed25519", Some(n)) => Err(format!("ed25519 keys have no size {}", n)),
            (other, _) => Err(format!(
                "key_type {:?} is not one of rsa, ecdsa, ed25519",
                other
            )),
        }
    }
}

/// A subject alternative name, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum San {
    Ip(IpAddr),
    Dns(String),
}

impl San {
    fn parse(s: &str) -> Option<San> {
        let s = s.trim();
        if let Ok(ip) = s.parse::<IpAddr>() {
            return Some(San::Ip(ip));
        }
        // `[::1]` is how people write IPv6 in URLs.
        if let Some(inner) = s.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
            if let Ok(ip) = inner.parse::<IpAddr>() {
                return Some(San::Ip(ip));
            }
        }
        if is_dns_name(s) {
            return Some(San::Dns(s.to_ascii_lowercase()));
        }
        None
    }

    pub(super) fn text(&self) -> String {
        match self {
            San::Ip(ip) => ip.to_string(),
            San::Dns(d) => d.clone(),
        }
    }
}

/// A DNS name as X.509 allows it: RFC 1123 labels, optionally `*.` in front.
fn is_dns_name(s: &str) -> bool {
    let body = s.strip_prefix("*.").unwrap_or(s);
    let body = body.strip_suffix('.').unwrap_or(body);
    if body.is_empty() || body.len() > 253 {
        return false;
    }
    // All-numeric dotted names would be mistaken for (bad) IPv4 addresses.
    if body
        .split('.')
        .all(|l| l.chars().all(|c| c.is_ascii_digit()))
    {
        return false;
    }
    body.split('.').all(|l| {
        !l.is_empty()
            && l.len() <= 63
            && !l.starts_with('-')
            && !l.ends_with('-')
            && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
    })
}

/// Lower case without `_`, `-` and spaces, so `IfNotPresent`, `if_not_present` and
/// `server auth` / `serverAuth` / `server_auth` compare equal.
fn norm(s: &str) -> String {
    s.chars()
        .filter(|c| !matches!(c, '_' | '-' | ' '))
        .flat_map(char::to_lowercase)
        .collect()
}

fn key_usage(s: &str) -> Option<KeyUsagePurpose> {
    Some(match norm(s).as_str() {
        "digitalsignature" => KeyUsagePurpose::DigitalSignature,
        "contentcommitment" | "nonrepudiation" => KeyUsagePurpose::ContentCommitment,
        "keyencipherment" => KeyUsagePurpose::KeyEncipherment,
        "dataencipherment" => KeyUsagePurpose::DataEncipherment,
        "keyagreement" => KeyUsagePurpose::KeyAgreement,
        "certsign" | "keycertsign" => KeyUsagePurpose::KeyCertSign,
        "crlsign" => KeyUsagePurpose::CrlSign,
        "encipheronly" => KeyUsagePurpose::EncipherOnly,
        "decipheronly" => KeyUsagePurpose::DecipherOnly,
        _ => return None,
    })
}

fn ext_key_usage(s: &str) -> Option<ExtendedKeyUsagePurpose> {
    Some(match norm(s).as_str() {
        "serverauth" | "server" => ExtendedKeyUsagePurpose::ServerAuth,
        "clientauth" | "client" => ExtendedKeyUsagePurpose::ClientAuth,
        "codesigning" => ExtendedKeyUsagePurpose::CodeSigning,
        "emailprotection" => ExtendedKeyUsagePurpose::EmailProtection,
        "timestamping" => ExtendedKeyUsagePurpose::TimeStamping,
        "ocspsigning" => ExtendedKeyUsagePurpose::OcspSigning,
        "any" => ExtendedKeyUsagePurpose::Any,
        other => {
            // A dotted OID for anything else.
            let parts: Option<Vec<u64>> = other.split('.').map(|p| p.parse().ok()).collect();
            match parts {
                Some(p) if p.len() >= 2 => ExtendedKeyUsagePurpose::Other(p),
                _ => return None,
            }
        }
    })
}

/// A validity: days as a number, or a string of `<n><unit>` parts (`87600h`, `365d`,
/// `1y`, `90d12h`, `30m`), units y (365 days), w, d, h, m, s; a bare number is days.
fn parse_validity(v: &Value) -> std::result::Result<i64, String> {
    let bad = || {
        format!(
            "date {} is not a validity: write days as a number, or a duration like \"87600h\", \"365d\", \"10y\"",
            v
        )
    };
    let secs = match v {
        Value::Number(n) => {
            let d = n.as_f64().ok_or_else(bad)?;
            (d * 86400.0) as i64
        }
        Value::String(s) => {
            let s = s.trim();
            if let Ok(d) = s.parse::<f64>() {
                (d * 86400.0) as i64
            } else {
                const UNITS_SECS: &[(&str, f64)] = &[
                    ("y", 365.0 * 86400.0),
                    ("w", 7.0 * 86400.0),
                    ("d", 86400.0),
                    ("h", 3600.0),
                    ("m", 60.0),
                    ("s", 1.0),
                    ("ms", 0.001),
                ];
                let total = crate::duration::parse(s, UNITS_SECS).ok_or_else(bad)?;
                i64::try_from(total).unwrap_or(i64::MAX)
            }
        }
        _ => return Err(bad()),
    };
    if secs <= 0 {
        return Err(format!("date {} must be a positive validity", v));
    }
    Ok(secs)
}

/// Everything the certificate should be, from the arguments.
#[derive(Debug)]
pub(super) struct Request {
    pub(super) cn: String,
    pub(super) organization: Option<String>,
    pub(super) sans: Vec<San>,
    pub(super) validity_secs: i64,
    pub(super) is_ca: bool,
    pub(super) key_type: KeyType,
    pub(super) key_usages: Vec<KeyUsagePurpose>,
    pub(super) ext_key_usages: Vec<ExtendedKeyUsagePurpose>,
    pub(super) policy: Policy,
}

pub(super) fn margs(msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::ModuleArgs, format!("gen_cert: {}", msg.into()))
}

impl Request {
    pub(super) fn from_args(a: &GenCertArgs, signed: bool) -> Result<Request> {
        let cn = nonempty(&a.cn)
            .ok_or_else(|| margs("`cn` (the certificate's common name) is required"))?;
        let organization = match a.organization.0.len() {
            0 => None,
            1 => Some(a.organization.0[0].clone()),
            n => {
                return Err(margs(format!(
                    "`organization` has {} entries ({}); only one organization is supported",
                    n,
                    a.organization.0.join(", ")
                ))
                .help("give a single organization"))
            }
        };
        let is_ca = a.is_ca.map_or(!signed, |Flag(c)| c);
        let mut sans: Vec<San> = Vec::new();
        let mut bad = Vec::new();
        for s in &a.sans.0 {
            match San::parse(s) {
                Some(san) => {
                    if !sans.contains(&san) {
                        sans.push(san);
                    }
                }
                None => bad.push(format!("{:?}", s)),
            }
        }
        if !bad.is_empty() {
            return Err(margs(format!(
                "invalid SAN {}: each SAN must be an IP address or a DNS name",
                bad.join(", ")
            ))
            .help("DNS names are letters, digits and `-` in dot-separated labels, optionally starting with `*.`"));
        }
        if signed && !is_ca && a.localhost_sans.is_none_or(|Flag(l)| l) {
            for s in ["localhost", "127.0.0.1", "::1"] {
                let san = San::parse(s).expect("built-in SANs are valid");
                if !sans.contains(&san) {
                    sans.push(san);
                }
            }
        }
        let validity_secs = match &a.date {
            None | Some(Value::Null) => DEFAULT_VALIDITY_SECS,
            Some(v) => parse_validity(v).map_err(margs)?,
        };
        let key_type = KeyType::parse(
            a.key_type.as_ref().map(Text::as_str),
            a.key_size.map(|Int(n)| n),
        )
        .map_err(margs)?;
        let key_usages = match &a.usages {
            Some(list) => list
                .0
                .iter()
                .map(|u| {
                    key_usage(u).ok_or_else(|| {
                        margs(format!("unknown key usage {:?}", u)).help(
                            "key usages are digital_signature, content_commitment, key_encipherment, data_encipherment, key_agreement, cert_sign, crl_sign, encipher_only, decipher_only",
                        )
                    })
                })
                .collect::<Result<Vec<_>>>()?,
            None if is_ca => vec![
                KeyUsagePurpose::DigitalSignature,
                KeyUsagePurpose::KeyCertSign,
                KeyUsagePurpose::CrlSign,
            ],
            None if matches!(key_type, KeyType::Rsa(_)) => vec![
                KeyUsagePurpose::DigitalSignature,
                KeyUsagePurpose::KeyEncipherment,
            ],
            None => vec![KeyUsagePurpose::DigitalSignature],
        };
        let ext_key_usages = match &a.ext_key_usages {
            Some(list) => list
                .0
                .iter()
                .map(|u| {
                    ext_key_usage(u).ok_or_else(|| {
                        margs(format!("unknown extended key usage {:?}", u)).help(
                            "extended key usages are server_auth, client_auth, code_signing, email_protection, time_stamping, ocsp_signing, any, or a dotted OID",
                        )
                    })
                })
                .collect::<Result<Vec<_>>>()?,
            None if is_ca => Vec::new(),
            None => vec![
                ExtendedKeyUsagePurpose::ServerAuth,
                ExtendedKeyUsagePurpose::ClientAuth,
            ],
        };
        let policy = match &a.policy {
            None => Policy::IfNotPresent,
            Some(p) => Policy::parse(p.as_str()).ok_or_else(|| {
                margs(format!(
                    "policy {:?} is not one of always, if_not_present, never",
                    p.as_str()
                ))
                .help("KubeKey's Always, IfNotPresent and None are accepted too (None = never)")
            })?,
        };
        Ok(Request {
            cn,
            organization,
            sans,
            validity_secs,
            is_ca,
            key_type,
            key_usages,
            ext_key_usages,
            policy,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn validity_parsing() {
        assert_eq!(parse_validity(&json!("87600h")), Ok(87600 * 3600));
        assert_eq!(parse_validity(&json!("365d")), Ok(365 * 86400));
        assert_eq!(parse_validity(&json!("1y")), Ok(365 * 86400));
        assert_eq!(parse_validity(&json!("1d12h")), Ok(36 * 3600));
        assert_eq!(parse_validity(&json!("90m")), Ok(5400));
        assert_eq!(parse_validity(&json!(30)), Ok(30 * 86400));
        assert_eq!(parse_validity(&json!("30")), Ok(30 * 86400));
        for bad in [
            json!("0h"),
            json!("-1"),
            json!("h"),
            json!("5x"),
            json!("10 days"),
            json!("300ms"),
            json!(true),
        ] {
            assert!(parse_validity(&bad).is_err(), "{}", bad);
        }
    }

    #[test]
    fn san_and_names() {
        assert_eq!(
            San::parse("10.1.2.3"),
            Some(San::Ip("10.1.2.3".parse().unwrap()))
        );
        assert_eq!(San::parse("[::1]"), Some(San::Ip("::1".parse().unwrap())));
        assert_eq!(
            San::parse("*.Example.COM"),
            Some(San::Dns("*.example.com".into()))
        );
        assert_eq!(
            San::parse("lb.kubesphere.local"),
            Some(San::Dns("lb.kubesphere.local".into()))
        );
        for bad in [
            "",
            "a..b",
            "-a.b",
            "a_b",
            "10.0.0.300",
            "1.2.3",
            "a.*.b",
            "x y",
            &"a".repeat(64),
        ] {
            assert_eq!(San::parse(bad), None, "{:?}", bad);
        }
        assert_eq!(Policy::parse("IfNotPresent"), Some(Policy::IfNotPresent));
        assert_eq!(Policy::parse("if_not_present"), Some(Policy::IfNotPresent));
        assert_eq!(Policy::parse("None"), Some(Policy::Never));
        assert_eq!(Policy::parse("Always"), Some(Policy::Always));
        assert_eq!(
            ext_key_usage("serverAuth"),
            Some(ExtendedKeyUsagePurpose::ServerAuth)
        );
        assert_eq!(
            ext_key_usage("client auth"),
            Some(ExtendedKeyUsagePurpose::ClientAuth)
        );
        assert_eq!(
            ext_key_usage("1.3.6.1.5.5.7.3.17"),
            Some(ExtendedKeyUsagePurpose::Other(vec![
                1, 3, 6, 1, 5, 5, 7, 3, 17
            ]))
        );
        assert_eq!(key_usage("cert_sign"), Some(KeyUsagePurpose::KeyCertSign));
        assert_eq!(
            KeyType::parse(Some("ECDSA"), Some(384)),
            Ok(KeyType::EcdsaP384)
        );
        assert_eq!(KeyType::parse(None, None), Ok(KeyType::Rsa(2048)));
    }
}
