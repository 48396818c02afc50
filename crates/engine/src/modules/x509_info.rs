//! `community.crypto.x509_certificate_info`, the module and the filter of the same name:
//! a certificate's fields in the shape community.crypto returns them (through Python's
//! `cryptography`), parsed on the controller with the `x509-parser` crate.
//!
//! The module reads the file on the host with `cat` (one command) or takes `content`;
//! the filter takes PEM text. Differences from Ansible: `fingerprints` and
//! `public_key_fingerprints` hold md5, sha1 and the SHA-2 digests only (no blake2, SHA-3 or
//! shake); integers wider than 64 bits (`serial_number`, an RSA `modulus`, EC points) are
//! decimal strings, as kk's values hold at most 64-bit integers.

use async_trait::async_trait;
use base64::Engine as _;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use sha2::Digest as _;
use x509_parser::extensions::{GeneralName, ParsedExtension};
use x509_parser::num_bigint::BigUint;
use x509_parser::prelude::*;
use x509_parser::public_key::PublicKey;

use super::args::Text;
use super::remote::qpath;
use super::{parse_args, Module, ModuleContext, ModuleResult, VarMap};
use crate::error::{Error, ErrorKind, Result};

/// The fields of a PEM (or DER) certificate; the message says what could not be read.
pub fn certificate_info(data: &[u8]) -> std::result::Result<Map<String, Value>, String> {
    let is_pem = data.trim_ascii_start().starts_with(b"-----BEGIN");
    let der: Vec<u8> = if is_pem {
        let (_, pem) =
            parse_x509_pem(data).map_err(|e| format!("Unable to load certificate: {e}"))?;
        pem.contents
    } else {
        data.to_vec()
    };
    let (_, cert) = parse_x509_certificate(&der).map_err(|e| {
        if is_pem {
            format!("Unable to load certificate: {e}")
        } else {
            format!("Cannot parse DER certificate: {e}")
        }
    })?;
    let mut m = Map::new();
    let (subject, subject_ordered) = name(cert.subject());
    let (issuer, issuer_ordered) = name(cert.issuer());
    m.insert("subject".into(), subject);
    m.insert("subject_ordered".into(), subject_ordered);
    m.insert("issuer".into(), issuer);
    m.insert("issuer_ordered".into(), issuer_ordered);
    m.insert("version".into(), (cert.version().0 + 1).into());
    let nb = cert.validity().not_before.timestamp();
    let na = cert.validity().not_after.timestamp();
    m.insert("not_before".into(), asn1_time(nb).into());
    m.insert("not_after".into(), asn1_time(na).into());
    let now = ::time::OffsetDateTime::now_utc().unix_timestamp();
    m.insert("expired".into(), (na < now).into());
    m.insert("serial_number".into(), big(&cert.tbs_certificate.serial));
    m.insert(
        "signature_algorithm".into(),
        sig_name(&cert.signature_algorithm.algorithm.to_id_string()).into(),
    );
    let spki = cert.public_key();
    m.insert("public_key".into(), pem("PUBLIC KEY", spki.raw).into());
    m.insert("public_key_fingerprints".into(), fingerprints(spki.raw));
    m.insert("fingerprints".into(), fingerprints(&der));
    let (kind, data) = match spki.parsed() {
        Ok(PublicKey::RSA(k)) => (
            "RSA",
            json!({"size": k.key_size(), "modulus": big(&BigUint::from_bytes_be(k.modulus)),
                   "exponent": big(&BigUint::from_bytes_be(k.exponent))}),
        ),
        Ok(PublicKey::EC(p)) => ("ECC", json!({"exponent_size": p.key_size() / 2})),
        Ok(PublicKey::DSA(_)) => ("DSA", json!({})),
        _ => match spki.algorithm.algorithm.to_id_string().as_str() {
            "1.3.101.112" => ("Ed25519", json!({})),
            "1.3.101.113" => ("Ed448", json!({})),
            _ => ("unknown", json!({})),
        },
    };
    m.insert("public_key_type".into(), kind.into());
    m.insert("public_key_data".into(), data);
    extensions(&cert, &mut m);
    m.insert("issuer_uri".into(), Value::Null);
    m.insert("ocsp_uri".into(), Value::Null);
    m.insert("ocsp_must_staple".into(), Value::Null);
    m.insert("ocsp_must_staple_critical".into(), false.into());
    Ok(m)
}

/// The extension keys, null/false when the extension is absent (as community.crypto).
fn extensions(cert: &X509Certificate, m: &mut Map<String, Value>) {
    for k in [
        "subject_alt_name",
        "key_usage",
        "extended_key_usage",
        "basic_constraints",
        "subject_key_identifier",
        "authority_key_identifier",
        "authority_cert_issuer",
        "authority_cert_serial_number",
    ] {
        m.insert(k.into(), Value::Null);
    }
    for k in [
        "subject_alt_name",
        "key_usage",
        "extended_key_usage",
        "basic_constraints",
    ] {
        m.insert(format!("{k}_critical"), false.into());
    }
    let mut by_oid = Map::new();
    for ext in cert.extensions() {
        let b64 = base64::engine::general_purpose::STANDARD.encode(ext.value);
        by_oid.insert(
            ext.oid.to_id_string(),
            json!({"critical": ext.critical, "value": b64}),
        );
        let crit = |m: &mut Map<String, Value>, k: &str| {
            m.insert(format!("{k}_critical"), ext.critical.into());
        };
        match ext.parsed_extension() {
            ParsedExtension::SubjectAlternativeName(san) => {
                let names: Vec<Value> = san.general_names.iter().map(general_name).collect();
                m.insert("subject_alt_name".into(), names.into());
                crit(m, "subject_alt_name");
            }
            ParsedExtension::KeyUsage(ku) => {
                let flags = [
                    (ku.digital_signature(), "Digital Signature"),
                    (ku.non_repudiation(), "Non Repudiation"),
                    (ku.key_encipherment(), "Key Encipherment"),
                    (ku.data_encipherment(), "Data Encipherment"),
                    (ku.key_agreement(), "Key Agreement"),
                    (ku.key_cert_sign(), "Certificate Sign"),
                    (ku.crl_sign(), "CRL Sign"),
                    (ku.encipher_only(), "Encipher Only"),
                    (ku.decipher_only(), "Decipher Only"),
                ];
                let mut v: Vec<&str> = flags.iter().filter(|f| f.0).map(|f| f.1).collect();
                v.sort();
                m.insert("key_usage".into(), json!(v));
                crit(m, "key_usage");
            }
            ParsedExtension::ExtendedKeyUsage(eku) => {
                let flags = [
                    (eku.any, "Any Extended Key Usage"),
                    (eku.server_auth, "TLS Web Server Authentication"),
                    (eku.client_auth, "TLS Web Client Authentication"),
                    (eku.code_signing, "Code Signing"),
                    (eku.email_protection, "E-mail Protection"),
                    (eku.time_stamping, "Time Stamping"),
                    (eku.ocsp_signing, "OCSP Signing"),
                ];
                let mut v: Vec<String> = flags
                    .iter()
                    .filter(|f| f.0)
                    .map(|f| f.1.to_string())
                    .chain(eku.other.iter().map(|o| o.to_id_string()))
                    .collect();
                v.sort();
                m.insert("extended_key_usage".into(), json!(v));
                crit(m, "extended_key_usage");
            }
            ParsedExtension::BasicConstraints(bc) => {
                let mut v = vec![if bc.ca { "CA:TRUE" } else { "CA:FALSE" }.to_string()];
                if let Some(p) = bc.path_len_constraint {
                    v.push(format!("pathlen:{p}"));
                }
                m.insert("basic_constraints".into(), json!(v));
                crit(m, "basic_constraints");
            }
            ParsedExtension::SubjectKeyIdentifier(k) => {
                m.insert("subject_key_identifier".into(), colon_hex(k.0).into());
            }
            ParsedExtension::AuthorityKeyIdentifier(a) => {
                if let Some(k) = &a.key_identifier {
                    m.insert("authority_key_identifier".into(), colon_hex(k.0).into());
                }
                if let Some(names) = &a.authority_cert_issuer {
                    let v: Vec<Value> = names.iter().map(general_name).collect();
                    m.insert("authority_cert_issuer".into(), v.into());
                }
                if let Some(s) = a.authority_cert_serial {
                    m.insert(
                        "authority_cert_serial_number".into(),
                        big(&BigUint::from_bytes_be(s)),
                    );
                }
            }
            _ => {}
        }
    }
    m.insert("extensions_by_oid".into(), Value::Object(by_oid));
}

/// A general name as community.crypto prints it (`DNS:x`, `IP:1.2.3.4`, `email:…`).
fn general_name(g: &GeneralName) -> Value {
    match g {
        GeneralName::DNSName(s) => format!("DNS:{s}"),
        GeneralName::RFC822Name(s) => format!("email:{s}"),
        GeneralName::URI(s) => format!("URI:{s}"),
        GeneralName::IPAddress(b) => match b.len() {
            4 => format!("IP:{}", std::net::Ipv4Addr::new(b[0], b[1], b[2], b[3])),
            16 => {
                let a: [u8; 16] = (*b).try_into().unwrap_or([0; 16]);
                format!("IP:{}", std::net::Ipv6Addr::from(a))
            }
            _ => format!("IP:{}", colon_hex(b)),
        },
        GeneralName::RegisteredID(o) => format!("RID:{}", o.to_id_string()),
        GeneralName::DirectoryName(n) => format!("dirName:{n}"),
        other => format!("othername:{other:?}"),
    }
    .into()
}

/// A distinguished name as a mapping (last value of a repeated attribute wins) and as
/// ordered `[name, value]` pairs.
fn name(n: &X509Name) -> (Value, Value) {
    let mut map = Map::new();
    let mut ordered = Vec::new();
    for rdn in n.iter() {
        for attr in rdn.iter() {
            let oid = attr.attr_type().to_id_string();
            let key = attr_name(&oid).map_or(oid.clone(), String::from);
            let val = attr.as_str().unwrap_or_default().to_string();
            map.insert(key.clone(), val.clone().into());
            ordered.push(json!([key, val]));
        }
    }
    (Value::Object(map), Value::Array(ordered))
}

/// cryptography's names of the usual attribute OIDs.
fn attr_name(oid: &str) -> Option<&'static str> {
    Some(match oid {
        "2.5.4.3" => "commonName",
        "2.5.4.6" => "countryName",
        "2.5.4.7" => "localityName",
        "2.5.4.8" => "stateOrProvinceName",
        "2.5.4.9" => "streetAddress",
        "2.5.4.10" => "organizationName",
        "2.5.4.11" => "organizationalUnitName",
        "2.5.4.5" => "serialNumber",
        "2.5.4.4" => "surname",
        "2.5.4.42" => "givenName",
        "2.5.4.12" => "title",
        "2.5.4.17" => "postalCode",
        "0.9.2342.19200300.100.1.25" => "domainComponent",
        "0.9.2342.19200300.100.1.1" => "userId",
        "1.2.840.113549.1.9.1" => "emailAddress",
        _ => return None,
    })
}

/// OpenSSL's names of the usual signature algorithms.
fn sig_name(oid: &str) -> String {
    match oid {
        "1.2.840.113549.1.1.5" => "sha1WithRSAEncryption",
        "1.2.840.113549.1.1.11" => "sha256WithRSAEncryption",
        "1.2.840.113549.1.1.12" => "sha384WithRSAEncryption",
        "1.2.840.113549.1.1.13" => "sha512WithRSAEncryption",
        "1.2.840.113549.1.1.14" => "sha224WithRSAEncryption",
        "1.2.840.113549.1.1.10" => "rsassaPss",
        "1.2.840.10045.4.3.2" => "ecdsa-with-SHA256",
        "1.2.840.10045.4.3.3" => "ecdsa-with-SHA384",
        "1.2.840.10045.4.3.4" => "ecdsa-with-SHA512",
        "1.3.101.112" => "ed25519",
        "1.3.101.113" => "ed448",
        other => other,
    }
    .to_string()
}

/// A big integer as a JSON number when it fits 64 bits, else its decimal digits.
fn big(n: &BigUint) -> Value {
    u64::try_from(n).map_or_else(|_| n.to_string().into(), Value::from)
}

fn asn1_time(ts: i64) -> String {
    ::time::OffsetDateTime::from_unix_timestamp(ts)
        .map(|t| {
            format!(
                "{:04}{:02}{:02}{:02}{:02}{:02}Z",
                t.year(),
                u8::from(t.month()),
                t.day(),
                t.hour(),
                t.minute(),
                t.second()
            )
        })
        .unwrap_or_default()
}

fn colon_hex(b: &[u8]) -> String {
    b.iter()
        .map(|x| format!("{x:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

fn pem(label: &str, der: &[u8]) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut s = format!("-----BEGIN {label}-----\n");
    for chunk in b64.as_bytes().chunks(64) {
        s.push_str(std::str::from_utf8(chunk).unwrap_or_default());
        s.push('\n');
    }
    s.push_str(&format!("-----END {label}-----\n"));
    s
}

fn fingerprints(b: &[u8]) -> Value {
    json!({
        "md5": colon_hex(&md5::Md5::digest(b)),
        "sha1": colon_hex(&sha1::Sha1::digest(b)),
        "sha224": colon_hex(&sha2::Sha224::digest(b)),
        "sha256": colon_hex(&sha2::Sha256::digest(b)),
        "sha384": colon_hex(&sha2::Sha384::digest(b)),
        "sha512": colon_hex(&sha2::Sha512::digest(b)),
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct InfoArgs {
    #[serde(default)]
    path: Option<Text>,
    #[serde(default)]
    content: Option<Text>,
    #[serde(default)]
    valid_at: Option<Value>,
    #[serde(default)]
    select_crypto_backend: Option<Text>,
    #[serde(default)]
    name_encoding: Option<Text>,
}

const VALID: &[&str] = &[
    "path",
    "content",
    "valid_at",
    "select_crypto_backend",
    "name_encoding",
];

fn check(raw: VarMap) -> Result<InfoArgs> {
    let a: InfoArgs = parse_args("x509_certificate_info", raw, VALID)?;
    match (&a.path, &a.content) {
        (Some(_), Some(_)) => Err(Error::new(
            ErrorKind::ModuleArgs,
            "x509_certificate_info: parameters are mutually exclusive: path|content",
        )),
        (None, None) => Err(Error::new(
            ErrorKind::ModuleArgs,
            "x509_certificate_info: one of the following is required: path, content",
        )),
        _ => Ok(a),
    }
}

/// The module: the certificate at `path` on the host, or in `content`.
pub struct X509CertificateInfo;

#[async_trait]
impl Module for X509CertificateInfo {
    fn validate(&self, args: &VarMap) -> Result<()> {
        check(args.clone()).map(|_| ())
    }

    async fn run(&self, ctx: &ModuleContext, raw: VarMap) -> Result<ModuleResult> {
        let a = check(raw).map_err(|e| e.at_opt(ctx.span.as_ref()))?;
        let _ = (&a.valid_at, &a.select_crypto_backend, &a.name_encoding);
        let data = match (a.path, a.content) {
            (Some(Text(p)), _) => {
                let out = ctx
                    .exec(format!("exec cat -- {}\n", qpath(&p)), None)
                    .await?;
                if out.rc != 0 {
                    return Ok(ModuleResult::failed(format!(
                        "Error while reading certificate file from disk: {}",
                        out.stderr_text().trim()
                    )));
                }
                out.stdout
            }
            (None, Some(Text(c))) => c.into_bytes(),
            (None, None) => unreachable!("checked"),
        };
        match certificate_info(&data) {
            Ok(m) => {
                let mut r = ModuleResult::ok();
                r.data = m;
                // The module's `valid_at` points are not checked: always empty.
                r.data.insert("valid_at".into(), json!({}));
                Ok(r)
            }
            Err(e) => Ok(ModuleResult::failed(e)),
        }
    }
}
