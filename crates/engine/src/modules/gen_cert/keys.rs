//! `gen_cert`'s keys and PEM files: reading PEM blocks, loading private keys (PKCS#8,
//! PKCS#1 RSA, SEC1 EC), checking a key against a certificate, loading the CA, and making
//! new keys.

use std::path::Path;

use pkcs8::der::{Decode, Encode};
use pkcs8::ObjectIdentifier;
use rcgen::KeyPair;
use x509_parser::certificate::X509Certificate;
use x509_parser::prelude::FromDer;

use super::request::KeyType;
use crate::error::{Error, ErrorKind, Result};

/// A loaded CA: its certificate (DER) and its key.
pub(super) struct Ca {
    pub(super) cert_der: Vec<u8>,
    pub(super) key: KeyPair,
}

/// Reads the first PEM block of `data` with one of `labels`, as DER.
pub(super) fn pem_block(
    data: &[u8],
    labels: &[&str],
) -> std::result::Result<(String, Vec<u8>), String> {
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

pub(super) fn parse_cert(der: &[u8]) -> std::result::Result<X509Certificate<'_>, String> {
    X509Certificate::from_der(der)
        .map(|(_, c)| c)
        .map_err(|e| format!("not a valid X.509 certificate: {}", e))
}

/// id-ecPublicKey, the PKCS#8 algorithm of every EC key.
const EC_PUBLIC_KEY: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.2.1");

/// The curves whose SEC1 keys are read: prime256v1 (P-256) and secp384r1 (P-384).
const EC_CURVES: [ObjectIdentifier; 2] = [
    ObjectIdentifier::new_unwrap("1.2.840.10045.3.1.7"),
    ObjectIdentifier::new_unwrap("1.3.132.0.34"),
];

/// Loads a SEC1 EC key (`EC PRIVATE KEY`, what openssl writes), wrapped in PKCS#8 for the
/// curve it names, or for each supported curve when it names none.
fn load_sec1(der: &[u8]) -> Option<KeyPair> {
    let key = sec1::EcPrivateKey::from_der(der).ok()?;
    let curves = match key.parameters.and_then(|p| p.named_curve()) {
        Some(curve) => vec![curve],
        None => EC_CURVES.to_vec(),
    };
    curves.iter().find_map(|curve| {
        let algorithm = pkcs8::AlgorithmIdentifierRef {
            oid: EC_PUBLIC_KEY,
            parameters: Some(curve.into()),
        };
        let p8 = pkcs8::PrivateKeyInfo::new(algorithm, der).to_der().ok()?;
        KeyPair::try_from(p8.as_slice()).ok()
    })
}

/// Loads a private key in PKCS#8, PKCS#1 (RSA) or SEC1 (EC) PEM.
pub(super) fn load_key(data: &[u8]) -> std::result::Result<KeyPair, String> {
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
        "EC PRIVATE KEY" => load_sec1(&der).ok_or_else(|| {
            "unsupported or damaged EC private key (P-256 and P-384 are supported)".into()
        }),
        _ => Err("encrypted private keys are not supported; decrypt it first (openssl pkey -in KEY -out KEY.plain)".into()),
    }
}

/// Whether `key` is the private half of the certificate's public key.
pub(super) fn key_matches(key: &KeyPair, cert: &X509Certificate<'_>) -> bool {
    key.public_key_raw() == cert.public_key().subject_public_key.data.as_ref()
}

fn io_err(what: &str, path: &Path, e: impl std::fmt::Display) -> Error {
    Error::new(
        ErrorKind::Io,
        format!("gen_cert: cannot read {} {}: {}", what, path.display(), e),
    )
}

/// Reads and checks the CA: both files load, the certificate is a CA, the key is its key.
pub(super) fn load_ca(key_path: &Path, cert_path: &Path) -> Result<Ca> {
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

/// Makes a new key of the requested type.
pub(super) fn new_key(kt: KeyType) -> std::result::Result<KeyPair, String> {
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
