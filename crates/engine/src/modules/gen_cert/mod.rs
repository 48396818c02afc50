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
//!
//! The parts: `request` (the arguments, checked, as what to make), `keys` (PEM files, private
//! keys, the CA), `renewal` (whether the files already there are kept), `generate` (the new
//! key and certificate); this file runs the policy over them and writes the files.

mod generate;
mod keys;
mod renewal;
mod request;
#[cfg(test)]
mod tests;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use async_trait::async_trait;
use serde_json::Value;

use super::{Module, ModuleContext, ModuleResult, VarMap};
use crate::error::{Error, ErrorKind, Result};
use generate::generate;
use keys::{load_ca, parse_cert};
use renewal::{check_existing, rfc3339, CertInfo, Existing};
use request::{check, Policy, Request, San};

/// An existing certificate this close to expiry is renewed under `if_not_present`.
pub const RENEW_BEFORE_DAYS: i64 = 30;

/// Validity when `date` is not given: KubeKey's roles all use `87600h` (10 years).
const DEFAULT_VALIDITY_SECS: i64 = 87600 * 3600;

/// New certificates start this much in the past, so hosts with a slightly late clock
/// accept them at once (kubeadm does the same).
const BACKDATE_SECS: i64 = 5 * 60;

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
    fn validate(&self, args: &VarMap) -> Result<()> {
        check(args.clone()).map(|_| ())
    }

    async fn run(&self, ctx: &ModuleContext, raw: VarMap) -> Result<ModuleResult> {
        let c = check(raw).map_err(|e| e.at_opt(ctx.span.as_ref()))?;
        let (out_key, out_cert) = (resolve(ctx, &c.out.0), resolve(ctx, &c.out.1));
        let (root_key, root_cert) = match &c.root {
            Some((k, c)) => (Some(resolve(ctx, k)), Some(resolve(ctx, c))),
            None => (None, None),
        };
        let req = c.request;
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

/// Writes `data` to `path` whole (temp file + rename, flushed to disk first), with `mode`
/// from the start (a key is never readable by others, not even briefly); creates the
/// directory.
fn write_atomic(path: &Path, data: &[u8], mode: u32) -> Result<()> {
    let fail = |what: &str, e: std::io::Error| {
        Error::new(
            ErrorKind::Io,
            format!("gen_cert: cannot {} {}: {}", what, path.display(), e),
        )
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| fail("create the directory of", e))?;
    }
    crate::files::write_atomic(path, data, Some(mode), true).map_err(|e| fail("write", e))
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
