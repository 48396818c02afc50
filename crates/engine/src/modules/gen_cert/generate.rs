//! `gen_cert`'s certificate building: a new key and a certificate made from a
//! [`Request`], self-signed or signed by the CA.

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, IsCa, Issuer, SanType,
    SerialNumber,
};

use super::keys::{new_key, Ca};
use super::request::{Request, San};
use super::BACKDATE_SECS;

/// Makes a key and a certificate; returns (key PEM, certificate PEM, certificate DER).
pub(super) fn generate(
    req: &Request,
    ca: Option<&Ca>,
    now: i64,
) -> Result<(String, String, Vec<u8>), String> {
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
        .collect::<Result<_, String>>()?;
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
