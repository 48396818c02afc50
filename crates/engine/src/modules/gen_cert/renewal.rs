//! `gen_cert`'s verdict on the files already there: kept when they still satisfy the
//! request and the CA and are more than [`RENEW_BEFORE_DAYS`] days from expiry, or the
//! reason they are replaced.

use std::net::IpAddr;
use std::path::Path;

use x509_parser::certificate::X509Certificate;
use x509_parser::extensions::GeneralName;

use super::keys::{key_matches, load_key, parse_cert, pem_block, Ca};
use super::request::{Request, San};
use super::RENEW_BEFORE_DAYS;

/// What a certificate says about itself, for the result.
#[derive(Debug, Clone)]
pub(super) struct CertInfo {
    pub(super) subject: String,
    pub(super) sans: Vec<String>,
    pub(super) not_after: i64,
    pub(super) serial: String,
    pub(super) is_ca: bool,
}

impl CertInfo {
    pub(super) fn of(cert: &X509Certificate<'_>) -> CertInfo {
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

pub(super) fn rfc3339(ts: i64) -> String {
    time::OffsetDateTime::from_unix_timestamp(ts)
        .ok()
        .and_then(|t| {
            t.format(&time::format_description::well_known::Rfc3339)
                .ok()
        })
        .unwrap_or_else(|| ts.to_string())
}

/// The verdict on the files already there.
pub(super) enum Existing {
    /// Both files are missing.
    Absent,
    /// Present but not acceptable; the string says why.
    Invalid(String),
    /// Acceptable as they are.
    Valid(CertInfo),
}

/// Checks existing files against the request and the CA (`None`: self-signed).
pub(super) fn check_existing(
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
