//! `gen_cert`: makes a CA or a certificate signed by a CA, on the controller.
//!
//! KubeKey's module of the same name, made strict and idempotent:
//! - keys are RSA (generated with the `rsa` crate, since ring cannot), ECDSA P-256/P-384 or
//!   Ed25519; certificates are built with `rcgen` and read back with `x509-parser`;
//! - every SAN must be a valid IP address or DNS name (KubeKey silently dropped bad ones);
//! - a signed certificate gets serverAuth + clientAuth unless told otherwise (KubeKey gave
//!   none), so etcd peers can use one certificate both ways; a CA gets certSign + cRLSign;
//! - `policy` (KubeKey's `Always`/`IfNotPresent`/`None` are accepted as `always`,
//!   `if_not_present`, `never`): an existing certificate is kept only when it parses, matches
//!   its key, is signed by the given CA (or by itself), covers the CN and every requested SAN,
//!   has the requested CA-ness and is more than [`RENEW_BEFORE_DAYS`] days from expiry;
//!   the result's `reason` says why it was kept or (re)generated. Organization, key type
//!   and usages are not compared: changing them alone does not replace a valid certificate
//!   (a CA above all), use `policy: always` for that;
//! - like KubeKey, a certificate signed by a CA also covers `localhost`, `127.0.0.1` and `::1`
//!   unless `localhost_sans: false`.
//!
//! Files are written atomically (temp file + rename), the key with mode 0600, the
//! certificate with 0644; parent directories are created. Relative paths are taken from
//! the playbook directory.

use std::fmt::Write as _;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use async_trait::async_trait;
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, SanType, SerialNumber,
};
use serde::Deserialize;
use serde_json::Value;
use x509_parser::certificate::X509Certificate;
use x509_parser::extensions::GeneralName;
use x509_parser::prelude::FromDer;

use super::{args, parse_args, Module, ModuleContext, ModuleResult, VarMap};
use crate::error::{Error, ErrorKind, Result};

/// An existing certificate this close to expiry is renewed under `if_not_present`.
pub const RENEW_BEFORE_DAYS: i64 = 30;

/// Validity when `date` is not given: KubeKey's roles all use `87600h` (10 years).
const DEFAULT_VALIDITY_SECS: i64 = 87600 * 3600;

/// New certificates start this much in the past, so hosts with a slightly late clock
/// accept them at once (kubeadm does the same).
const BACKDATE_SECS: i64 = 5 * 60;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GenCertArgs {
    #[serde(default, deserialize_with = "args::opt_string_like")]
    root_key: Option<String>,
    #[serde(default, deserialize_with = "args::opt_string_like")]
    root_cert: Option<String>,
    #[serde(default, deserialize_with = "args::opt_string_like")]
    out_key: Option<String>,
    #[serde(default, deserialize_with = "args::opt_string_like")]
    out_cert: Option<String>,
    #[serde(default, deserialize_with = "args::opt_string_like")]
    cn: Option<String>,
    #[serde(default, deserialize_with = "args::list_like")]
    organization: Vec<String>,
    #[serde(default, deserialize_with = "args::list_like")]
    sans: Vec<String>,
    #[serde(default, alias = "validity")]
    date: Option<Value>,
    #[serde(default, deserialize_with = "args::opt_bool_like")]
    is_ca: Option<bool>,
    #[serde(default, deserialize_with = "args::opt_string_like")]
    key_type: Option<String>,
    #[serde(default, deserialize_with = "args::opt_int_like")]
    key_size: Option<i64>,
    #[serde(default, deserialize_with = "opt_list_like", alias = "key_usages")]
    usages: Option<Vec<String>>,
    #[serde(
        default,
        deserialize_with = "opt_list_like",
        alias = "extended_key_usages"
    )]
    ext_key_usages: Option<Vec<String>>,
    #[serde(default, deserialize_with = "args::opt_string_like")]
    policy: Option<String>,
    #[serde(default, deserialize_with = "args::opt_bool_like")]
    localhost_sans: Option<bool>,
}

const VALID: &[&str] = &[
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

/// `list_like`, but telling "not given" (defaults apply) from an empty list.
fn opt_list_like<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> std::result::Result<Option<Vec<String>>, D::Error> {
    args::list_like(d).map(Some)
}

/// When an existing certificate is replaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Policy {
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
enum KeyType {
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
enum San {
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

    fn text(&self) -> String {
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
                let mut total: i64 = 0;
                let mut num = String::new();
                let mut chars = s.chars().peekable();
                let mut any = false;
                while let Some(c) = chars.next() {
                    if c.is_ascii_digit() || c == '.' {
                        num.push(c);
                        continue;
                    }
                    let n: f64 = num.parse().map_err(|_| bad())?;
                    num.clear();
                    let unit = if c == 'm' && chars.peek() == Some(&'s') {
                        chars.next();
                        0.001
                    } else {
                        match c {
                            'y' => 365.0 * 86400.0,
                            'w' => 7.0 * 86400.0,
                            'd' => 86400.0,
                            'h' => 3600.0,
                            'm' => 60.0,
                            's' => 1.0,
                            _ => return Err(bad()),
                        }
                    };
                    total += (n * unit) as i64;
                    any = true;
                }
                if !num.is_empty() || !any {
                    return Err(bad());
                }
                total
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
struct Request {
    cn: String,
    organization: Option<String>,
    sans: Vec<San>,
    validity_secs: i64,
    is_ca: bool,
    key_type: KeyType,
    key_usages: Vec<KeyUsagePurpose>,
    ext_key_usages: Vec<ExtendedKeyUsagePurpose>,
    policy: Policy,
}

fn margs(msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::ModuleArgs, format!("gen_cert: {}", msg.into()))
}

impl Request {
    fn from_args(a: &GenCertArgs, signed: bool) -> Result<Request> {
        let cn =
            a.cn.clone()
                .filter(|c| !c.trim().is_empty())
                .ok_or_else(|| margs("`cn` (the certificate's common name) is required"))?;
        let organization = match a.organization.len() {
            0 => None,
            1 => Some(a.organization[0].clone()),
            n => {
                return Err(margs(format!(
                    "`organization` has {} entries ({}); only one organization is supported",
                    n,
                    a.organization.join(", ")
                ))
                .help("give a single organization"))
            }
        };
        let is_ca = a.is_ca.unwrap_or(!signed);
        let mut sans: Vec<San> = Vec::new();
        let mut bad = Vec::new();
        for s in &a.sans {
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
        if signed && !is_ca && a.localhost_sans.unwrap_or(true) {
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
        let key_type = KeyType::parse(a.key_type.as_deref(), a.key_size).map_err(margs)?;
        let key_usages = match &a.usages {
            Some(list) => list
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
            Some(p) => Policy::parse(p).ok_or_else(|| {
                margs(format!(
                    "policy {:?} is not one of always, if_not_present, never",
                    p
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

/// A loaded CA: its certificate (DER) and its key.
struct Ca {
    cert_der: Vec<u8>,
    key: KeyPair,
}

/// Reads the first PEM block of `data` with one of `labels`, as DER.
fn pem_block(data: &[u8], labels: &[&str]) -> std::result::Result<(String, Vec<u8>), String> {
    let text = String::from_utf8_lossy(data);
    if !text.contains("-----BEGIN ") {
        return Err("it is not PEM (no -----BEGIN line)".into());
    }
    for pem in x509_parser::pem::Pem::iter_from_buffer(data) {
        let pem = pem.map_err(|e| format!("bad PEM: {}", e))?;
        if labels.contains(&pem.label.as_str()) {
            return Ok((pem.label, pem.contents));
        }
    }
    Err(format!("it holds no {} block", labels.join(" or ")))
}

fn parse_cert(der: &[u8]) -> std::result::Result<X509Certificate<'_>, String> {
    X509Certificate::from_der(der)
        .map(|(_, c)| c)
        .map_err(|e| format!("not a valid X.509 certificate: {}", e))
}

/// Minimal DER: a tag and its contents.
fn der_tlv(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let n = content.len();
    if n < 0x80 {
        out.push(n as u8);
    } else {
        let bytes: Vec<u8> = n
            .to_be_bytes()
            .into_iter()
            .skip_while(|b| *b == 0)
            .collect();
        out.push(0x80 | bytes.len() as u8);
        out.extend(bytes);
    }
    out.extend_from_slice(content);
    out
}

/// Wraps a SEC1 EC key (`EC PRIVATE KEY`, what openssl writes) in PKCS#8 for one curve.
fn sec1_to_pkcs8(sec1: &[u8], curve_oid: &[u8]) -> Vec<u8> {
    // id-ecPublicKey 1.2.840.10045.2.1
    const EC_PUBLIC_KEY: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01];
    let mut alg = der_tlv(0x06, EC_PUBLIC_KEY);
    alg.extend(der_tlv(0x06, curve_oid));
    let mut body = der_tlv(0x02, &[0]);
    body.extend(der_tlv(0x30, &alg));
    body.extend(der_tlv(0x04, sec1));
    der_tlv(0x30, &body)
}

/// Loads a private key in PKCS#8, PKCS#1 (RSA) or SEC1 (EC) PEM.
fn load_key(data: &[u8]) -> std::result::Result<KeyPair, String> {
    let (label, der) = pem_block(
        data,
        &[
            "PRIVATE KEY",
            "RSA PRIVATE KEY",
            "EC PRIVATE KEY",
            "ENCRYPTED PRIVATE KEY",
        ],
    )?;
    match label.as_str() {
        "PRIVATE KEY" => KeyPair::try_from(der.as_slice())
            .map_err(|e| format!("unsupported or damaged private key: {}", e)),
        "RSA PRIVATE KEY" => {
            use rsa::pkcs1::DecodeRsaPrivateKey;
            use rsa::pkcs8::EncodePrivateKey;
            let k = rsa::RsaPrivateKey::from_pkcs1_der(&der)
                .map_err(|e| format!("damaged RSA private key: {}", e))?;
            let p8 = k
                .to_pkcs8_der()
                .map_err(|e| format!("cannot convert the RSA key: {}", e))?;
            KeyPair::try_from(p8.as_bytes())
                .map_err(|e| format!("unsupported RSA private key: {}", e))
        }
        "EC PRIVATE KEY" => {
            // prime256v1 and secp384r1
            const P256: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07];
            const P384: &[u8] = &[0x2b, 0x81, 0x04, 0x00, 0x22];
            for oid in [P256, P384] {
                if let Ok(k) = KeyPair::try_from(sec1_to_pkcs8(&der, oid).as_slice()) {
                    return Ok(k);
                }
            }
            Err("unsupported or damaged EC private key (P-256 and P-384 are supported)".into())
        }
        _ => Err("encrypted private keys are not supported; decrypt it first (openssl pkey -in KEY -out KEY.plain)".into()),
    }
}

/// Whether `key` is the private half of the certificate's public key.
fn key_matches(key: &KeyPair, cert: &X509Certificate<'_>) -> bool {
    key.public_key_raw() == cert.public_key().subject_public_key.data.as_ref()
}

fn io_err(what: &str, path: &Path, e: impl std::fmt::Display) -> Error {
    Error::new(
        ErrorKind::Io,
        format!("gen_cert: cannot read {} {}: {}", what, path.display(), e),
    )
}

/// Reads and checks the CA: both files load, the certificate is a CA, the key is its key.
fn load_ca(key_path: &Path, cert_path: &Path) -> Result<Ca> {
    let cert_data = std::fs::read(cert_path).map_err(|e| io_err("root_cert", cert_path, e))?;
    let key_data = std::fs::read(key_path).map_err(|e| io_err("root_key", key_path, e))?;
    let (_, cert_der) = pem_block(&cert_data, &["CERTIFICATE"]).map_err(|e| {
        Error::new(
            ErrorKind::Runtime,
            format!("gen_cert: root_cert {}: {}", cert_path.display(), e),
        )
    })?;
    let cert = parse_cert(&cert_der).map_err(|e| {
        Error::new(
            ErrorKind::Runtime,
            format!("gen_cert: root_cert {}: {}", cert_path.display(), e),
        )
    })?;
    if !cert.is_ca() {
        return Err(Error::new(
            ErrorKind::Runtime,
            format!(
                "gen_cert: root_cert {} ({}) is not a CA certificate (no basicConstraints CA:TRUE)",
                cert_path.display(),
                cert.subject()
            ),
        )
        .help("point root_cert at the CA's certificate, or make one with gen_cert without root_key/root_cert"));
    }
    let key = load_key(&key_data).map_err(|e| {
        Error::new(
            ErrorKind::Runtime,
            format!("gen_cert: root_key {}: {}", key_path.display(), e),
        )
    })?;
    if !key_matches(&key, &cert) {
        return Err(Error::new(
            ErrorKind::Runtime,
            format!(
                "gen_cert: root_key {} does not match root_cert {} ({})",
                key_path.display(),
                cert_path.display(),
                cert.subject()
            ),
        )
        .help("the CA key and certificate must be a pair; was one of them regenerated alone?"));
    }
    drop(cert);
    Ok(Ca { cert_der, key })
}

/// What a certificate says about itself, for the result.
#[derive(Debug, Clone)]
struct CertInfo {
    subject: String,
    sans: Vec<String>,
    not_after: i64,
    serial: String,
    is_ca: bool,
}

impl CertInfo {
    fn of(cert: &X509Certificate<'_>) -> CertInfo {
        CertInfo {
            subject: cert.subject().to_string(),
            sans: cert_sans(cert).iter().map(San::text).collect(),
            not_after: cert.validity().not_after.timestamp(),
            serial: cert.raw_serial_as_string(),
            is_ca: cert.is_ca(),
        }
    }
}

/// The certificate's IP and DNS SANs.
fn cert_sans(cert: &X509Certificate<'_>) -> Vec<San> {
    let mut out = Vec::new();
    if let Ok(Some(ext)) = cert.subject_alternative_name() {
        for name in &ext.value.general_names {
            match name {
                GeneralName::DNSName(d) => out.push(San::Dns(d.to_ascii_lowercase())),
                GeneralName::IPAddress(b) => {
                    if let Ok(a) = <[u8; 4]>::try_from(*b) {
                        out.push(San::Ip(IpAddr::from(a)));
                    } else if let Ok(a) = <[u8; 16]>::try_from(*b) {
                        out.push(San::Ip(IpAddr::from(a)));
                    }
                }
                _ => {}
            }
        }
    }
    out
}

fn rfc3339(ts: i64) -> String {
    time::OffsetDateTime::from_unix_timestamp(ts)
        .ok()
        .and_then(|t| {
            t.format(&time::format_description::well_known::Rfc3339)
                .ok()
        })
        .unwrap_or_else(|| ts.to_string())
}

/// The verdict on the files already there.
enum Existing {
    /// Both files are missing.
    Absent,
    /// Present but not acceptable; the string says why.
    Invalid(String),
    /// Acceptable as they are.
    Valid(CertInfo),
}

/// Checks existing files against the request and the CA (`None`: self-signed).
fn check_existing(
    req: &Request,
    ca: Option<&Ca>,
    key_path: &Path,
    cert_path: &Path,
    now: i64,
) -> Existing {
    let (key_data, cert_data) = match (std::fs::read(key_path), std::fs::read(cert_path)) {
        (Err(k), Err(c))
            if k.kind() == std::io::ErrorKind::NotFound
                && c.kind() == std::io::ErrorKind::NotFound =>
        {
            return Existing::Absent
        }
        (Err(e), _) => {
            return Existing::Invalid(format!("key {} unreadable: {}", key_path.display(), e))
        }
        (_, Err(e)) => {
            return Existing::Invalid(format!(
                "certificate {} unreadable: {}",
                cert_path.display(),
                e
            ))
        }
        (Ok(k), Ok(c)) => (k, c),
    };
    let der = match pem_block(&cert_data, &["CERTIFICATE"]) {
        Ok((_, d)) => d,
        Err(e) => return Existing::Invalid(format!("certificate does not parse: {}", e)),
    };
    let cert = match parse_cert(&der) {
        Ok(c) => c,
        Err(e) => return Existing::Invalid(format!("certificate does not parse: {}", e)),
    };
    let key = match load_key(&key_data) {
        Ok(k) => k,
        Err(e) => return Existing::Invalid(format!("key does not parse: {}", e)),
    };
    if !key_matches(&key, &cert) {
        return Existing::Invalid("key does not match the certificate".into());
    }
    match ca {
        Some(ca) => {
            let ca_cert = match parse_cert(&ca.cert_der) {
                Ok(c) => c,
                Err(e) => return Existing::Invalid(e),
            };
            if cert.issuer().as_raw() != ca_cert.subject().as_raw()
                || cert.verify_signature(Some(ca_cert.public_key())).is_err()
            {
                return Existing::Invalid(format!(
                    "certificate is not signed by the CA {} (was the CA replaced?)",
                    ca_cert.subject()
                ));
            }
        }
        None => {
            if cert.issuer().as_raw() != cert.subject().as_raw()
                || cert.verify_signature(None).is_err()
            {
                return Existing::Invalid("certificate is not self-signed".into());
            }
        }
    }
    let cn: Vec<String> = cert
        .subject()
        .iter_common_name()
        .filter_map(|a| a.as_str().ok().map(str::to_string))
        .collect();
    if !cn.iter().any(|c| c == &req.cn) {
        return Existing::Invalid(format!(
            "common name is {:?}, requested {:?}",
            cn.join(", "),
            req.cn
        ));
    }
    let have = cert_sans(&cert);
    let missing: Vec<String> = req
        .sans
        .iter()
        .filter(|s| !have.contains(s))
        .map(San::text)
        .collect();
    if !missing.is_empty() {
        return Existing::Invalid(format!("SAN {} missing", missing.join(", ")));
    }
    if cert.is_ca() != req.is_ca {
        return Existing::Invalid(if req.is_ca {
            "certificate is not a CA".into()
        } else {
            "certificate is a CA, a leaf certificate was requested".into()
        });
    }
    let v = cert.validity();
    if v.not_before.timestamp() > now {
        return Existing::Invalid(format!(
            "certificate is not valid before {}",
            rfc3339(v.not_before.timestamp())
        ));
    }
    let left = v.not_after.timestamp() - now;
    if left < RENEW_BEFORE_DAYS * 86400 {
        return Existing::Invalid(if left <= 0 {
            format!(
                "certificate expired on {}",
                rfc3339(v.not_after.timestamp())
            )
        } else {
            format!(
                "certificate expires in {} days ({}), within {} days",
                left / 86400,
                rfc3339(v.not_after.timestamp()),
                RENEW_BEFORE_DAYS
            )
        });
    }
    Existing::Valid(CertInfo::of(&cert))
}

/// Makes a new key of the requested type.
fn new_key(kt: KeyType) -> std::result::Result<KeyPair, String> {
    match kt {
        KeyType::Rsa(bits) => {
            use rsa::pkcs8::EncodePrivateKey;
            let mut rng = rsa::rand_core::OsRng;
            let k = rsa::RsaPrivateKey::new(&mut rng, bits)
                .map_err(|e| format!("RSA key generation failed: {}", e))?;
            let p8 = k
                .to_pkcs8_der()
                .map_err(|e| format!("cannot encode the RSA key: {}", e))?;
            KeyPair::try_from(p8.as_bytes()).map_err(|e| format!("cannot load the RSA key: {}", e))
        }
        KeyType::EcdsaP256 => {
            KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).map_err(|e| e.to_string())
        }
        KeyType::EcdsaP384 => {
            KeyPair::generate_for(&rcgen::PKCS_ECDSA_P384_SHA384).map_err(|e| e.to_string())
        }
        KeyType::Ed25519 => KeyPair::generate_for(&rcgen::PKCS_ED25519).map_err(|e| e.to_string()),
    }
}

/// Makes a key and a certificate; returns (key PEM, certificate PEM, certificate DER).
fn generate(
    req: &Request,
    ca: Option<&Ca>,
    now: i64,
) -> std::result::Result<(String, String, Vec<u8>), String> {
    let key = new_key(req.key_type)?;
    let mut params = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, req.cn.as_str());
    if let Some(o) = &req.organization {
        dn.push(DnType::OrganizationName, o.as_str());
    }
    params.distinguished_name = dn;
    params.subject_alt_names = req
        .sans
        .iter()
        .map(|s| match s {
            San::Ip(ip) => Ok(SanType::IpAddress(*ip)),
            San::Dns(d) => d
                .clone()
                .try_into()
                .map(SanType::DnsName)
                .map_err(|e| format!("SAN {:?}: {}", d, e)),
        })
        .collect::<std::result::Result<_, String>>()?;
    params.is_ca = if req.is_ca {
        IsCa::Ca(BasicConstraints::Unconstrained)
    } else {
        IsCa::ExplicitNoCa
    };
    params.key_usages = req.key_usages.clone();
    params.extended_key_usages = req.ext_key_usages.clone();
    let ts = |t: i64| {
        time::OffsetDateTime::from_unix_timestamp(t).map_err(|e| format!("bad time: {}", e))
    };
    params.not_before = ts(now - BACKDATE_SECS)?;
    params.not_after = ts(now + req.validity_secs)?;
    let mut serial = [0u8; 16];
    rsa::rand_core::RngCore::fill_bytes(&mut rsa::rand_core::OsRng, &mut serial);
    serial[0] &= 0x7f;
    serial[0] |= 0x01;
    params.serial_number = Some(SerialNumber::from_slice(&serial));
    let cert = match ca {
        Some(ca) => {
            params.use_authority_key_identifier_extension = true;
            let issuer = Issuer::from_ca_cert_der(&ca.cert_der.as_slice().into(), &ca.key)
                .map_err(|e| format!("cannot use the CA certificate: {}", e))?;
            params
                .signed_by(&key, &issuer)
                .map_err(|e| format!("signing failed: {}", e))?
        }
        None => params
            .self_signed(&key)
            .map_err(|e| format!("self-signing failed: {}", e))?,
    };
    Ok((key.serialize_pem(), cert.pem(), cert.der().to_vec()))
}

/// Writes `data` to `path` through a temp file in the same directory and a rename,
/// with `mode` from the start (a key is never readable by others, not even briefly).
fn write_atomic(path: &Path, data: &[u8], mode: u32) -> Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let fail = |what: &str, e: std::io::Error| {
        Error::new(
            ErrorKind::Io,
            format!("gen_cert: cannot {} {}: {}", what, path.display(), e),
        )
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| fail("create the directory of", e))?;
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(".{}.kk_tmp{}", name, std::process::id()));
    let res = (|| {
        let _ = std::fs::remove_file(&tmp);
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&tmp)?;
        f.write_all(data)?;
        f.sync_all()?;
        // The umask may have cleared bits of 0644; set the mode exactly.
        std::fs::set_permissions(&tmp, std::os::unix::fs::PermissionsExt::from_mode(mode))?;
        std::fs::rename(&tmp, path)
    })();
    res.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        fail("write", e)
    })
}

/// Makes CA and leaf certificates on the controller.
pub struct GenCert;

fn resolve(ctx: &ModuleContext, p: &str) -> PathBuf {
    let path = PathBuf::from(p);
    match ctx.search_dirs.last() {
        Some(base) if path.is_relative() => base.join(path),
        _ => path,
    }
}

fn now_ts() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

fn result_of(info: &CertInfo, reason: &str, key: &Path, cert: &Path) -> ModuleResult {
    ModuleResult::default()
        .with("subject", info.subject.clone())
        .with(
            "sans",
            Value::Array(info.sans.iter().cloned().map(Value::String).collect()),
        )
        .with("not_after", rfc3339(info.not_after))
        .with("serial", info.serial.clone())
        .with("is_ca", info.is_ca)
        .with("reason", reason.to_string())
        .with("out_key", key.display().to_string())
        .with("out_cert", cert.display().to_string())
}

#[async_trait]
impl Module for GenCert {
    async fn run(&self, ctx: &ModuleContext, raw: VarMap) -> Result<ModuleResult> {
        let a: GenCertArgs = parse_args("gen_cert", raw, VALID)?;
        let nonempty = |o: &Option<String>| o.clone().filter(|s| !s.trim().is_empty());
        let (out_key, out_cert) = match (nonempty(&a.out_key), nonempty(&a.out_cert)) {
            (Some(k), Some(c)) => (resolve(ctx, &k), resolve(ctx, &c)),
            _ => {
                return Err(margs("`out_key` and `out_cert` are required").at_opt(ctx.span.as_ref()))
            }
        };
        let (root_key, root_cert) = match (nonempty(&a.root_key), nonempty(&a.root_cert)) {
            (Some(k), Some(c)) => (Some(resolve(ctx, &k)), Some(resolve(ctx, &c))),
            (None, None) => (None, None),
            _ => return Err(margs(
                "give both `root_key` and `root_cert` (the CA), or neither for a self-signed CA",
            )
            .at_opt(ctx.span.as_ref())),
        };
        let req =
            Request::from_args(&a, root_key.is_some()).map_err(|e| e.at_opt(ctx.span.as_ref()))?;
        // Key generation (RSA especially) and file I/O are blocking work.
        let span = ctx.span.clone();
        let check_mode = ctx.check_mode;
        tokio::task::spawn_blocking(move || {
            run_blocking(
                &req,
                root_key.as_deref().zip(root_cert.as_deref()),
                &out_key,
                &out_cert,
                check_mode,
            )
            .map_err(|e| e.at_opt(span.as_ref()))
        })
        .await
        .map_err(|e| {
            Error::new(
                ErrorKind::Runtime,
                format!("gen_cert: worker failed: {}", e),
            )
        })?
    }
}

fn run_blocking(
    req: &Request,
    root: Option<(&Path, &Path)>,
    out_key: &Path,
    out_cert: &Path,
    check_mode: bool,
) -> Result<ModuleResult> {
    // In check mode a CA made earlier in the same run does not exist yet: what it signs
    // would be generated too.
    let ca_pending = check_mode && root.is_some_and(|(k, c)| !k.exists() && !c.exists());
    let ca = match root {
        Some((k, c)) if !ca_pending => Some(load_ca(k, c)?),
        _ => None,
    };
    let now = now_ts();
    let reason = match req.policy {
        _ if ca_pending => "its CA does not exist yet".to_string(),
        Policy::Always => "policy is always".to_string(),
        Policy::IfNotPresent | Policy::Never => {
            match check_existing(req, ca.as_ref(), out_key, out_cert, now) {
                Existing::Valid(info) => {
                    let why = format!(
                        "kept: the existing certificate is valid until {}",
                        rfc3339(info.not_after)
                    );
                    return Ok(result_of(&info, &why, out_key, out_cert).msg(why));
                }
                Existing::Absent => "certificate absent".to_string(),
                Existing::Invalid(why) => why,
            }
        }
    };
    if req.policy == Policy::Never {
        return Err(Error::new(
            ErrorKind::Runtime,
            format!(
                "gen_cert: policy is never, and {} ({}): {}",
                out_cert.display(),
                out_key.display(),
                reason
            ),
        )
        .help("use policy if_not_present to regenerate it, or fix the files"));
    }
    let msg = format!("generated: {}", reason);
    if check_mode {
        let mut sub = format!("CN={}", req.cn);
        if let Some(o) = &req.organization {
            let _ = write!(sub, ", O={}", o);
        }
        let info = CertInfo {
            subject: sub,
            sans: req.sans.iter().map(San::text).collect(),
            not_after: now + req.validity_secs,
            serial: String::new(),
            is_ca: req.is_ca,
        };
        let mut r = result_of(&info, &reason, out_key, out_cert)
            .msg(format!("would be generated: {}", reason));
        r.data.insert("serial".into(), Value::Null);
        r.changed = true;
        return Ok(r);
    }
    let (key_pem, cert_pem, der) = generate(req, ca.as_ref(), now)
        .map_err(|e| Error::new(ErrorKind::Runtime, format!("gen_cert: {}", e)))?;
    // The key first: a crash in between leaves a pair that does not match, which the
    // next run notices and repairs.
    write_atomic(out_key, key_pem.as_bytes(), 0o600)?;
    write_atomic(out_cert, cert_pem.as_bytes(), 0o644)?;
    let cert =
        parse_cert(&der).map_err(|e| Error::new(ErrorKind::Runtime, format!("gen_cert: {}", e)))?;
    let mut r = result_of(&CertInfo::of(&cert), &reason, out_key, out_cert).msg(msg);
    r.changed = true;
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::super::remote::testutil::{args, ctx, mode_of};
    use super::*;
    use serde_json::json;
    use std::process::Command;

    fn openssl(a: &[&str]) -> (bool, String) {
        let out = Command::new("openssl")
            .args(a)
            .output()
            .expect("the openssl CLI is needed for these tests");
        let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
        text.push_str(&String::from_utf8_lossy(&out.stderr));
        (out.status.success(), text)
    }

    fn p(dir: &Path, name: &str) -> String {
        dir.join(name).display().to_string()
    }

    async fn run(c: &ModuleContext, a: serde_json::Value) -> Result<ModuleResult> {
        GenCert.run(c, args(a)).await
    }

    /// A CA in `dir` as ca.key/ca.crt.
    async fn make_ca(c: &ModuleContext, dir: &Path, key_type: &str) -> ModuleResult {
        run(
            c,
            json!({"out_key": p(dir, "ca.key"), "out_cert": p(dir, "ca.crt"), "cn": "kk-root-ca",
                   "organization": "kubekey", "key_type": key_type, "policy": "IfNotPresent"}),
        )
        .await
        .unwrap()
    }

    fn leaf_args(dir: &Path, name: &str, sans: serde_json::Value) -> serde_json::Value {
        json!({"root_key": p(dir, "ca.key"), "root_cert": p(dir, "ca.crt"),
               "out_key": p(dir, &format!("{}.key", name)), "out_cert": p(dir, &format!("{}.crt", name)),
               "cn": name, "sans": sans, "key_type": "ecdsa", "policy": "if_not_present"})
    }

    #[tokio::test]
    async fn ca_and_signed_cert_pass_openssl() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("pki");
        let c = ctx(d.path(), json!({}));
        let ca = make_ca(&c, &dir, "ecdsa").await;
        assert!(ca.changed);
        assert_eq!(ca.data["is_ca"], json!(true));
        assert_eq!(ca.data["reason"], json!("certificate absent"));
        assert_eq!(ca.data["subject"], json!("CN=kk-root-ca, O=kubekey"));
        let r = run(
            &c,
            leaf_args(
                &dir,
                "etcd-1",
                json!(["etcd-1", "10.0.0.5", "Node1.Example.com", "fd00::5"]),
            ),
        )
        .await
        .unwrap();
        assert!(r.changed);
        assert_eq!(r.data["is_ca"], json!(false));
        assert_eq!(
            r.data["sans"],
            json!([
                "etcd-1",
                "10.0.0.5",
                "node1.example.com",
                "fd00::5",
                "localhost",
                "127.0.0.1",
                "::1"
            ])
        );
        let na = r.data["not_after"].as_str().unwrap();
        assert!(na.ends_with('Z') && na.len() == 20, "{}", na);
        assert!(!r.data["serial"].as_str().unwrap().is_empty());
        assert_eq!(mode_of(&dir.join("etcd-1.key")), 0o600);
        assert_eq!(mode_of(&dir.join("etcd-1.crt")), 0o644);
        assert_eq!(mode_of(&dir.join("ca.key")), 0o600);

        let (ok, out) = openssl(&[
            "verify",
            "-CAfile",
            &p(&dir, "ca.crt"),
            &p(&dir, "etcd-1.crt"),
        ]);
        assert!(ok, "{}", out);
        for purpose in ["sslserver", "sslclient"] {
            let (ok, out) = openssl(&[
                "verify",
                "-purpose",
                purpose,
                "-CAfile",
                &p(&dir, "ca.crt"),
                &p(&dir, "etcd-1.crt"),
            ]);
            assert!(ok, "{}: {}", purpose, out);
        }
        let (ok, text) = openssl(&["x509", "-in", &p(&dir, "etcd-1.crt"), "-text", "-noout"]);
        assert!(ok, "{}", text);
        for want in [
            "DNS:etcd-1",
            "IP Address:10.0.0.5",
            "DNS:node1.example.com",
            "IP Address:FD00:0:0:0:0:0:0:5",
            "DNS:localhost",
            "IP Address:127.0.0.1",
            "IP Address:0:0:0:0:0:0:0:1",
            "TLS Web Server Authentication, TLS Web Client Authentication",
            "Digital Signature",
            "CA:FALSE",
            "Subject: CN = etcd-1",
            "Issuer: CN = kk-root-ca, O = kubekey",
            "X509v3 Authority Key Identifier",
            "prime256v1",
        ] {
            assert!(text.contains(want), "missing {:?} in\n{}", want, text);
        }
        let (ok, text) = openssl(&["x509", "-in", &p(&dir, "ca.crt"), "-text", "-noout"]);
        assert!(ok);
        for want in [
            "CA:TRUE",
            "Certificate Sign, CRL Sign",
            "Subject: CN = kk-root-ca, O = kubekey",
        ] {
            assert!(text.contains(want), "missing {:?} in\n{}", want, text);
        }
        assert!(!text.contains("TLS Web"), "{}", text);
        // 10 years by default: valid in 9 years, not in 11.
        let (ok, _) = openssl(&[
            "x509",
            "-in",
            &p(&dir, "etcd-1.crt"),
            "-noout",
            "-checkend",
            &(9 * 365 * 86400).to_string(),
        ]);
        assert!(ok);
        let (ok, _) = openssl(&[
            "x509",
            "-in",
            &p(&dir, "etcd-1.crt"),
            "-noout",
            "-checkend",
            &(11 * 365 * 86400).to_string(),
        ]);
        assert!(!ok);
        // The key is the certificate's key, in a form openssl reads.
        let (ok1, k) = openssl(&["pkey", "-in", &p(&dir, "etcd-1.key"), "-pubout"]);
        let (ok2, c2) = openssl(&["x509", "-in", &p(&dir, "etcd-1.crt"), "-noout", "-pubkey"]);
        assert!(ok1 && ok2 && k == c2, "{}\n{}", k, c2);
    }

    #[tokio::test]
    async fn rsa_keys_and_usages() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path();
        let c = ctx(dir, json!({}));
        make_ca(&c, dir, "rsa").await;
        let mut a = leaf_args(dir, "client", json!("admin"));
        a["key_type"] = json!("rsa");
        a["organization"] = json!(["system:masters"]);
        a["ext_key_usages"] = json!(["clientAuth"]);
        a["localhost_sans"] = json!(false);
        a["date"] = json!(365);
        let r = run(&c, a).await.unwrap();
        assert!(r.changed);
        assert_eq!(r.data["sans"], json!(["admin"]));
        assert_eq!(r.data["subject"], json!("CN=client, O=system:masters"));
        let (ok, out) = openssl(&[
            "verify",
            "-purpose",
            "sslclient",
            "-CAfile",
            &p(dir, "ca.crt"),
            &p(dir, "client.crt"),
        ]);
        assert!(ok, "{}", out);
        let (ok, _) = openssl(&[
            "verify",
            "-purpose",
            "sslserver",
            "-CAfile",
            &p(dir, "ca.crt"),
            &p(dir, "client.crt"),
        ]);
        assert!(!ok, "a client-only certificate must not pass as a server");
        let (_, text) = openssl(&["x509", "-in", &p(dir, "client.crt"), "-text", "-noout"]);
        for want in [
            "Public-Key: (2048 bit)",
            "Digital Signature, Key Encipherment",
            "TLS Web Client Authentication",
            "sha256WithRSAEncryption",
        ] {
            assert!(text.contains(want), "missing {:?} in\n{}", want, text);
        }
        assert!(!text.contains("TLS Web Server"));
        let (ok, _) = openssl(&[
            "x509",
            "-in",
            &p(dir, "client.crt"),
            "-noout",
            "-checkend",
            &(364 * 86400).to_string(),
        ]);
        assert!(ok);
        let (ok, _) = openssl(&[
            "x509",
            "-in",
            &p(dir, "client.crt"),
            "-noout",
            "-checkend",
            &(366 * 86400).to_string(),
        ]);
        assert!(!ok);
    }

    #[tokio::test]
    async fn if_not_present_keeps_then_regenerates_for_reasons() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path();
        let c = ctx(dir, json!({}));
        make_ca(&c, dir, "ecdsa").await;
        let again = make_ca(&c, dir, "ecdsa").await;
        assert!(!again.changed, "{:?}", again.data);
        assert!(again.data["reason"].as_str().unwrap().starts_with("kept"));

        let a = leaf_args(dir, "server", json!("10.0.0.1,server.local"));
        let first = run(&c, a.clone()).await.unwrap();
        assert!(first.changed);
        let crt = std::fs::read(dir.join("server.crt")).unwrap();
        let second = run(&c, a.clone()).await.unwrap();
        assert!(!second.changed, "{:?}", second.data);
        assert_eq!(second.data["serial"], first.data["serial"]);
        assert_eq!(second.data["sans"], first.data["sans"]);
        assert_eq!(std::fs::read(dir.join("server.crt")).unwrap(), crt);

        // A SAN added: regenerated, and the reason names it.
        let more = leaf_args(dir, "server", json!("10.0.0.1,server.local,10.0.0.2"));
        let r = run(&c, more.clone()).await.unwrap();
        assert!(r.changed);
        assert_eq!(r.data["reason"], json!("SAN 10.0.0.2 missing"));
        assert!(!run(&c, more.clone()).await.unwrap().changed);
        // Fewer SANs than the certificate has: still covered, kept.
        assert!(!run(&c, a.clone()).await.unwrap().changed);

        // CN changed.
        let mut cn = more.clone();
        cn["cn"] = json!("other");
        let r = run(&c, cn).await.unwrap();
        assert!(r.changed);
        assert!(
            r.data["reason"].as_str().unwrap().contains("common name"),
            "{:?}",
            r.data
        );

        // `always` regenerates a valid one.
        let mut always = more.clone();
        always["policy"] = json!("Always");
        let r = run(&c, always).await.unwrap();
        assert!(r.changed);
        assert_eq!(r.data["reason"], json!("policy is always"));

        // The key replaced by another one.
        std::fs::copy(dir.join("ca.key"), dir.join("server.key")).unwrap();
        let r = run(&c, more.clone()).await.unwrap();
        assert!(r.changed);
        assert_eq!(
            r.data["reason"],
            json!("key does not match the certificate")
        );

        // Garbage in the certificate file.
        std::fs::write(dir.join("server.crt"), "garbage").unwrap();
        let r = run(&c, more.clone()).await.unwrap();
        assert!(r.changed);
        assert!(r.data["reason"]
            .as_str()
            .unwrap()
            .starts_with("certificate does not parse"));
        let (ok, out) = openssl(&[
            "verify",
            "-CAfile",
            &p(dir, "ca.crt"),
            &p(dir, "server.crt"),
        ]);
        assert!(ok, "{}", out);
    }

    #[tokio::test]
    async fn expiring_cert_is_renewed() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path();
        let c = ctx(dir, json!({}));
        make_ca(&c, dir, "ecdsa").await;
        let mut a = leaf_args(dir, "short", json!(["short.local"]));
        a["date"] = json!("240h");
        assert!(run(&c, a.clone()).await.unwrap().changed);
        let (ok, _) = openssl(&[
            "x509",
            "-in",
            &p(dir, "short.crt"),
            "-noout",
            "-checkend",
            &(11 * 86400).to_string(),
        ]);
        assert!(!ok, "a 10-day certificate");
        let r = run(&c, a.clone()).await.unwrap();
        assert!(r.changed);
        let reason = r.data["reason"].as_str().unwrap();
        // 10 days minus the seconds the test has run.
        assert!(
            (reason.starts_with("certificate expires in 9 days")
                || reason.starts_with("certificate expires in 10 days"))
                && reason.ends_with("within 30 days"),
            "{}",
            reason
        );
        // With a long validity the renewed one is then kept.
        a["date"] = json!("365d");
        assert!(run(&c, a.clone()).await.unwrap().changed);
        assert!(!run(&c, a).await.unwrap().changed);
    }

    #[tokio::test]
    async fn new_ca_means_new_certs() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path();
        let c = ctx(dir, json!({}));
        make_ca(&c, dir, "ecdsa").await;
        let a = leaf_args(dir, "peer", json!(["peer.local"]));
        assert!(run(&c, a.clone()).await.unwrap().changed);
        assert!(!run(&c, a.clone()).await.unwrap().changed);
        // Same CN, new key: the old leaf no longer chains.
        let r = run(
            &c,
            json!({"out_key": p(dir, "ca.key"), "out_cert": p(dir, "ca.crt"), "cn": "kk-root-ca",
                   "organization": "kubekey", "key_type": "ecdsa", "policy": "always"}),
        )
        .await
        .unwrap();
        assert!(r.changed);
        let (ok, _) = openssl(&["verify", "-CAfile", &p(dir, "ca.crt"), &p(dir, "peer.crt")]);
        assert!(!ok);
        let r = run(&c, a.clone()).await.unwrap();
        assert!(r.changed);
        let reason = r.data["reason"].as_str().unwrap();
        assert!(reason.contains("not signed by the CA"), "{}", reason);
        let (ok, out) = openssl(&["verify", "-CAfile", &p(dir, "ca.crt"), &p(dir, "peer.crt")]);
        assert!(ok, "{}", out);
    }

    #[tokio::test]
    async fn never_and_check_mode() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path();
        let mut c = ctx(dir, json!({}));
        let ca = json!({"out_key": p(dir, "ca.key"), "out_cert": p(dir, "ca.crt"), "cn": "ca", "key_type": "ecdsa", "policy": "never"});
        let e = run(&c, ca.clone()).await.unwrap_err();
        assert!(
            e.message.contains("policy is never") && e.message.contains("certificate absent"),
            "{}",
            e.message
        );

        c.check_mode = true;
        let mut ca_inp = ca.clone();
        ca_inp["policy"] = json!("if_not_present");
        let r = run(&c, ca_inp.clone()).await.unwrap();
        assert!(r.changed);
        assert_eq!(r.data["reason"], json!("certificate absent"));
        assert_eq!(r.data["subject"], json!("CN=ca"));
        assert!(!dir.join("ca.key").exists() && !dir.join("ca.crt").exists());

        // A certificate signed by that CA, still absent in check mode: would be generated.
        let leaf = json!({"root_key": p(dir, "ca.key"), "root_cert": p(dir, "ca.crt"),
            "out_key": p(dir, "leaf.key"), "out_cert": p(dir, "leaf.crt"), "cn": "leaf"});
        let r = run(&c, leaf).await.unwrap();
        assert!(r.changed);
        assert_eq!(r.data["reason"], json!("its CA does not exist yet"));
        assert!(!dir.join("leaf.crt").exists());

        c.check_mode = false;
        assert!(run(&c, ca_inp.clone()).await.unwrap().changed);
        let r = run(&c, ca.clone()).await.unwrap();
        assert!(!r.changed);
        // Check mode with everything in place: no change.
        c.check_mode = true;
        assert!(!run(&c, ca_inp.clone()).await.unwrap().changed);
        let mut always = ca_inp.clone();
        always["policy"] = json!("always");
        let before = std::fs::read(dir.join("ca.crt")).unwrap();
        assert!(run(&c, always).await.unwrap().changed);
        assert_eq!(std::fs::read(dir.join("ca.crt")).unwrap(), before);
        // `None` is KubeKey's name for never.
        c.check_mode = false;
        std::fs::write(dir.join("ca.crt"), "x").unwrap();
        let mut none = ca_inp.clone();
        none["policy"] = json!("None");
        let e = run(&c, none).await.unwrap_err();
        assert!(e.message.contains("does not parse"), "{}", e.message);
    }

    #[tokio::test]
    async fn ca_errors_are_clear() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path();
        let c = ctx(dir, json!({}));
        make_ca(&c, dir, "ecdsa").await;
        let a = leaf_args(dir, "x", json!([]));

        // Garbled CA certificate.
        std::fs::write(
            dir.join("bad.crt"),
            "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
        )
        .unwrap();
        let mut b = a.clone();
        b["root_cert"] = json!(p(dir, "bad.crt"));
        let e = run(&c, b).await.unwrap_err();
        assert!(
            e.message.contains("root_cert") && e.message.contains("bad.crt"),
            "{}",
            e.message
        );

        // Not PEM at all.
        std::fs::write(dir.join("bad.key"), "hello").unwrap();
        let mut b = a.clone();
        b["root_key"] = json!(p(dir, "bad.key"));
        let e = run(&c, b).await.unwrap_err();
        assert!(
            e.message.contains("root_key") && e.message.contains("not PEM"),
            "{}",
            e.message
        );

        // Missing CA file.
        let mut b = a.clone();
        b["root_key"] = json!(p(dir, "nope.key"));
        let e = run(&c, b).await.unwrap_err();
        assert_eq!(e.kind, ErrorKind::Io);
        assert!(e.message.contains("nope.key"), "{}", e.message);

        // A CA key that is not the CA certificate's.
        run(&c, json!({"out_key": p(dir, "other.key"), "out_cert": p(dir, "other.crt"), "cn": "other", "key_type": "ecdsa"}))
            .await
            .unwrap();
        let mut b = a.clone();
        b["root_key"] = json!(p(dir, "other.key"));
        let e = run(&c, b).await.unwrap_err();
        assert!(
            e.message.contains("does not match root_cert"),
            "{}",
            e.message
        );

        // A leaf as CA.
        run(&c, leaf_args(dir, "leaf", json!([]))).await.unwrap();
        let mut b = a.clone();
        b["root_key"] = json!(p(dir, "leaf.key"));
        b["root_cert"] = json!(p(dir, "leaf.crt"));
        let e = run(&c, b).await.unwrap_err();
        assert!(e.message.contains("not a CA certificate"), "{}", e.message);

        // Argument errors.
        let mut b = a.clone();
        b["sans"] = json!(["good.example", "bad_name!", "10.0.0.300"]);
        let e = run(&c, b).await.unwrap_err();
        assert_eq!(e.kind, ErrorKind::ModuleArgs);
        assert!(
            e.message.contains("\"bad_name!\"") && e.message.contains("\"10.0.0.300\""),
            "{}",
            e.message
        );
        assert!(!e.message.contains("good.example"));
        let mut b = a.clone();
        b.as_object_mut().unwrap().remove("root_cert");
        assert!(run(&c, b)
            .await
            .unwrap_err()
            .message
            .contains("both `root_key` and `root_cert`"));
        let mut b = a.clone();
        b["policy"] = json!("sometimes");
        assert!(run(&c, b).await.unwrap_err().message.contains("policy"));
        let mut b = a.clone();
        b["date"] = json!("10 parsecs");
        assert!(run(&c, b).await.unwrap_err().message.contains("date"));
        let mut b = a.clone();
        b["usages"] = json!(["fly"]);
        assert!(run(&c, b).await.unwrap_err().message.contains("\"fly\""));
        let mut b = a.clone();
        b["key_size"] = json!(1024);
        b["key_type"] = json!("rsa");
        assert!(run(&c, b).await.unwrap_err().message.contains("1024"));
        let mut b = a.clone();
        b["bogus"] = json!(1);
        assert!(run(&c, b).await.is_err());
    }

    /// CA files made by openssl itself (PKCS#1 RSA and SEC1 EC keys) sign our certificates.
    #[tokio::test]
    async fn openssl_made_ca_is_usable() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path();
        let c = ctx(dir, json!({}));
        for (name, keygen) in [
            (
                "ec",
                vec!["ecparam", "-name", "secp384r1", "-genkey", "-noout", "-out"],
            ),
            ("rsa", vec!["genrsa", "-traditional", "-out"]),
        ] {
            let key = p(dir, &format!("{}-ca.key", name));
            let crt = p(dir, &format!("{}-ca.crt", name));
            let mut kg = keygen.clone();
            kg.push(&key);
            if name == "rsa" {
                kg.push("2048");
            }
            let (ok, out) = openssl(&kg);
            assert!(ok, "{}", out);
            let head = std::fs::read_to_string(&key).unwrap();
            assert!(
                head.contains(if name == "rsa" {
                    "RSA PRIVATE KEY"
                } else {
                    "EC PRIVATE KEY"
                }),
                "{}",
                head
            );
            let (ok, out) = openssl(&[
                "req",
                "-x509",
                "-new",
                "-key",
                &key,
                "-subj",
                "/CN=openssl-ca",
                "-days",
                "30",
                "-out",
                &crt,
            ]);
            assert!(ok, "{}", out);
            let a = json!({"root_key": key, "root_cert": crt, "out_key": p(dir, &format!("{}-leaf.key", name)),
                           "out_cert": p(dir, &format!("{}-leaf.crt", name)), "cn": "leaf", "sans": "leaf.local", "key_type": "ecdsa"});
            assert!(run(&c, a.clone()).await.unwrap().changed);
            let (ok, out) = openssl(&[
                "verify",
                "-CAfile",
                &crt,
                &p(dir, &format!("{}-leaf.crt", name)),
            ]);
            assert!(ok, "{}: {}", name, out);
            assert!(!run(&c, a).await.unwrap().changed);
        }
    }

    /// A real TLS handshake with client certificates: openssl s_server and s_client.
    #[tokio::test]
    async fn mutual_tls_handshake() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path();
        let c = ctx(dir, json!({}));
        make_ca(&c, dir, "ecdsa").await;
        run(&c, leaf_args(dir, "server", json!(["server.local"])))
            .await
            .unwrap();
        run(&c, leaf_args(dir, "client", json!([]))).await.unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut server = Command::new("openssl")
            .args([
                "s_server",
                "-accept",
                &format!("127.0.0.1:{}", port),
                "-naccept",
                "1",
                "-cert",
                &p(dir, "server.crt"),
                "-key",
                &p(dir, "server.key"),
                "-CAfile",
                &p(dir, "ca.crt"),
                "-Verify",
                "1",
                "-verify_return_error",
                "-quiet",
            ])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let mut last = String::new();
        let mut ok = false;
        for _ in 0..50 {
            let out = Command::new("openssl")
                .args([
                    "s_client",
                    "-connect",
                    &format!("127.0.0.1:{}", port),
                    "-CAfile",
                    &p(dir, "ca.crt"),
                    "-cert",
                    &p(dir, "client.crt"),
                    "-key",
                    &p(dir, "client.key"),
                    "-verify_return_error",
                    "-verify_hostname",
                    "server.local",
                    "-brief",
                ])
                .stdin(std::process::Stdio::null())
                .output()
                .unwrap();
            last = String::from_utf8_lossy(&out.stderr).into_owned();
            if last.contains("CONNECTION ESTABLISHED") {
                ok = out.status.success();
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        let _ = server.kill();
        let _ = server.wait();
        assert!(ok, "{}", last);
        assert!(last.contains("Verification: OK"), "{}", last);
    }

    #[tokio::test]
    async fn ed25519_and_p384() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path();
        let c = ctx(dir, json!({}));
        make_ca(&c, dir, "ed25519").await;
        let mut a = leaf_args(dir, "ed", json!(["ed.local"]));
        a["key_size"] = json!(384);
        assert!(run(&c, a.clone()).await.unwrap().changed);
        assert!(!run(&c, a).await.unwrap().changed);
        let (ok, out) = openssl(&["verify", "-CAfile", &p(dir, "ca.crt"), &p(dir, "ed.crt")]);
        assert!(ok, "{}", out);
        let (_, text) = openssl(&["x509", "-in", &p(dir, "ed.crt"), "-text", "-noout"]);
        assert!(
            text.contains("secp384r1") && text.contains("ED25519"),
            "{}",
            text
        );
    }

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
