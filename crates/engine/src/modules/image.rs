//! `image`: copy OCI images between registries (`oci://registry/repo:tag`) and a local
//! OCI image layout (`local://dir`), on the controller. Manifest lists stay lists (or
//! are rebuilt with only the requested platforms); every blob's digest is verified.
//!
//! With `manifests:`, `src` and `dest` are templates rendered once per image with
//! `module.image.reference.{registry,repository,reference}` (KubeKey's form).
//!
//! `auths` is a list of `{registry, username, password, skip_tls_verify, plain_http,
//! ca_file}`, the entry whose `registry` is the image's registry applying to it. `ca_file`
//! is a PEM bundle on the controller (relative to the playbook directory) whose
//! certificates are trusted for that registry besides the system's roots, e.g. kk's
//! `{{ pki_dir }}/root.crt` for the registry kk installs; an empty one is ignored.

use std::path::{Path, PathBuf};

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::args::{List, Text};
use super::oci_registry::{Auth, Registry};
use super::{parse_args, Module, ModuleContext, ModuleResult, VarMap};
use crate::error::{Error, ErrorKind, Result};

const INDEX_TYPES: &[&str] = &[
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
];
const ACCEPT: &str = "application/vnd.oci.image.index.v1+json, application/vnd.docker.distribution.manifest.list.v2+json, application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json";
const REF_NAME: &str = "org.opencontainers.image.ref.name";

crate::closed_set! {
    /// What a platform missing from an image's index does: fail, or warn and go on.
    enum Policy for "policy" { Strict = "strict", Warn = "warn" }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ImageArgs {
    #[serde(default)]
    manifests: List,
    #[serde(default)]
    pattern: Option<String>,
    #[serde(default)]
    platform: List,
    #[serde(default)]
    policy: Option<Policy>,
    #[serde(default)]
    auths: Option<Value>,
    src: String,
    dest: String,
}

const VALID: &[&str] = &[
    "manifests",
    "pattern",
    "platform",
    "policy",
    "auths",
    "src",
    "dest",
];

pub(super) fn err(msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::Runtime, msg)
}

/// `registry/repository:tag` (or `@digest`), split.
#[derive(Debug, Clone, PartialEq)]
pub struct Reference {
    /// Registry host[:port].
    pub registry: String,
    /// Repository path.
    pub repository: String,
    /// Tag or digest.
    pub reference: String,
}

impl Reference {
    /// Parses an image name as Docker does (`nginx` → `docker.io/library/nginx:latest`).
    pub fn parse(name: &str) -> Result<Reference> {
        let name = name.trim();
        if name.is_empty() {
            return Err(Error::new(ErrorKind::ModuleArgs, "image: empty image name"));
        }
        let (rest, reference) = match name.split_once('@') {
            Some((r, d)) => (r, d.to_string()),
            None => match name.rfind(':').filter(|i| !name[*i..].contains('/')) {
                Some(i) => (&name[..i], name[i + 1..].to_string()),
                None => (name, "latest".to_string()),
            },
        };
        let (registry, repository) = match rest.split_once('/') {
            Some((first, path))
                if first.contains('.') || first.contains(':') || first == "localhost" =>
            {
                (first.to_string(), path.to_string())
            }
            Some(_) => ("docker.io".to_string(), rest.to_string()),
            None => ("docker.io".to_string(), format!("library/{}", rest)),
        };
        Ok(Reference {
            registry,
            repository,
            reference,
        })
    }

    fn full(&self) -> String {
        let sep = if self.reference.starts_with("sha256:") {
            "@"
        } else {
            ":"
        };
        format!(
            "{}/{}{}{}",
            self.registry, self.repository, sep, self.reference
        )
    }
}

fn sha256(data: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(data)))
}

fn verify(digest: &str, data: &[u8], what: &str) -> Result<()> {
    let got = sha256(data);
    if got != digest {
        return Err(err(format!(
            "{} has digest {}, expected {}: refusing a corrupted or tampered blob",
            what, got, digest
        )));
    }
    Ok(())
}

/// Either side of a copy.
enum Store {
    Registry(Registry),
    Layout(PathBuf),
}

impl Store {
    fn open(url: &str, auths: &[Auth]) -> Result<(Store, Option<Reference>)> {
        if let Some(rest) = url.strip_prefix("oci://") {
            let r = Reference::parse(rest)?;
            let auth = auths
                .iter()
                .find(|a| a.registry == r.registry)
                .cloned()
                .unwrap_or_default();
            Ok((Store::Registry(Registry::new(&r.registry, auth)?), Some(r)))
        } else if let Some(dir) = url.strip_prefix("local://") {
            Ok((Store::Layout(PathBuf::from(dir)), None))
        } else {
            Err(Error::new(
                ErrorKind::ModuleArgs,
                format!(
                    "image: {:?} is neither oci://registry/repo:tag nor local://dir",
                    url
                ),
            ))
        }
    }

    /// The manifest for a reference: bytes, media type, digest.
    async fn manifest(&self, r: &Reference) -> Result<Option<(Vec<u8>, String, String)>> {
        match self {
            Store::Registry(reg) => {
                let url = format!("{}/v2/{}/manifests/{}", reg.base, r.repository, r.reference);
                let resp = reg.send(|c| c.get(&url).header("Accept", ACCEPT)).await?;
                if resp.status() == reqwest::StatusCode::NOT_FOUND {
                    return Ok(None);
                }
                if !resp.status().is_success() {
                    return Err(err(format!("GET {}: HTTP {}", url, resp.status())));
                }
                let media = resp
                    .headers()
                    .get("content-type")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("")
                    .to_string();
                let body = resp
                    .bytes()
                    .await
                    .map_err(|e| err(format!("GET {}: {}", url, e)))?
                    .to_vec();
                let digest = sha256(&body);
                if r.reference.starts_with("sha256:") {
                    verify(&r.reference, &body, &format!("manifest {}", r.full()))?;
                }
                let media = serde_json::from_slice::<Value>(&body)
                    .ok()
                    .and_then(|v| {
                        v.get("mediaType")
                            .and_then(Value::as_str)
                            .map(str::to_string)
                    })
                    .unwrap_or(media);
                Ok(Some((body, media, digest)))
            }
            Store::Layout(dir) => {
                let digest = if r.reference.starts_with("sha256:") {
                    Some(r.reference.clone())
                } else {
                    let index = read_index(dir)?;
                    let full = r.full();
                    let short = format!("{}:{}", r.repository, r.reference);
                    let entries = index["manifests"].as_array().cloned().unwrap_or_default();
                    let name_of = |m: &Value| {
                        m["annotations"][REF_NAME]
                            .as_str()
                            .unwrap_or("")
                            .to_string()
                    };
                    entries
                        .iter()
                        .find(|m| name_of(m) == full)
                        .or_else(|| {
                            entries.iter().find(|m| {
                                name_of(m).ends_with(&format!("/{}", short)) || name_of(m) == short
                            })
                        })
                        .and_then(|m| m["digest"].as_str().map(str::to_string))
                };
                let Some(digest) = digest else {
                    return Ok(None);
                };
                let Some(body) = self.blob_local(dir, &digest)? else {
                    return Ok(None);
                };
                let media = serde_json::from_slice::<Value>(&body)
                    .ok()
                    .and_then(|v| {
                        v.get("mediaType")
                            .and_then(Value::as_str)
                            .map(str::to_string)
                    })
                    .unwrap_or_default();
                Ok(Some((body, media, digest)))
            }
        }
    }

    fn blob_local(&self, dir: &Path, digest: &str) -> Result<Option<Vec<u8>>> {
        let path = dir.join("blobs").join(digest.replacen(':', "/", 1));
        match std::fs::read(&path) {
            Ok(b) => {
                verify(digest, &b, &format!("blob {}", path.display()))?;
                Ok(Some(b))
            }
            Err(_) => Ok(None),
        }
    }

    async fn blob(&self, repo: &str, digest: &str) -> Result<Vec<u8>> {
        match self {
            Store::Registry(reg) => {
                let url = format!("{}/v2/{}/blobs/{}", reg.base, repo, digest);
                let resp = reg.send(|c| c.get(&url)).await?;
                if !resp.status().is_success() {
                    return Err(err(format!("GET {}: HTTP {}", url, resp.status())));
                }
                let body = resp
                    .bytes()
                    .await
                    .map_err(|e| err(format!("GET {}: {}", url, e)))?
                    .to_vec();
                verify(digest, &body, &format!("blob {} of {}", digest, repo))?;
                Ok(body)
            }
            Store::Layout(dir) => self
                .blob_local(dir, digest)?
                .ok_or_else(|| err(format!("blob {} is missing from {}", digest, dir.display()))),
        }
    }

    async fn has_blob(&self, repo: &str, digest: &str) -> Result<bool> {
        match self {
            Store::Registry(reg) => {
                let url = format!("{}/v2/{}/blobs/{}", reg.base, repo, digest);
                Ok(reg.send(|c| c.head(&url)).await?.status().is_success())
            }
            Store::Layout(dir) => Ok(dir
                .join("blobs")
                .join(digest.replacen(':', "/", 1))
                .is_file()),
        }
    }

    async fn put_blob(&self, repo: &str, digest: &str, data: Vec<u8>) -> Result<()> {
        match self {
            Store::Registry(reg) => {
                let start = format!("{}/v2/{}/blobs/uploads/", reg.base, repo);
                let resp = reg.send(|c| c.post(&start)).await?;
                if !resp.status().is_success() {
                    return Err(err(format!("POST {}: HTTP {}", start, resp.status())));
                }
                let loc = resp
                    .headers()
                    .get("location")
                    .and_then(|v| v.to_str().ok())
                    .ok_or_else(|| err(format!("POST {}: no upload location", start)))?;
                let mut url = if loc.starts_with("http") {
                    loc.to_string()
                } else {
                    format!("{}{}", reg.base, loc)
                };
                url.push(if url.contains('?') { '&' } else { '?' });
                url.push_str(&format!("digest={}", digest));
                let resp = reg
                    .send(|c| {
                        c.put(&url)
                            .header("Content-Type", "application/octet-stream")
                            .body(data.clone())
                    })
                    .await?;
                if !resp.status().is_success() {
                    return Err(err(format!(
                        "PUT blob {} to {}: HTTP {}",
                        digest,
                        repo,
                        resp.status()
                    )));
                }
                Ok(())
            }
            Store::Layout(dir) => {
                write_atomic(&dir.join("blobs").join(digest.replacen(':', "/", 1)), &data)
            }
        }
    }

    async fn put_manifest(
        &self,
        r: &Reference,
        data: &[u8],
        media: &str,
        name: &str,
    ) -> Result<()> {
        match self {
            Store::Registry(reg) => {
                let url = format!("{}/v2/{}/manifests/{}", reg.base, r.repository, r.reference);
                let resp = reg
                    .send(|c| {
                        c.put(&url)
                            .header("Content-Type", media)
                            .body(data.to_vec())
                    })
                    .await?;
                if !resp.status().is_success() {
                    let status = resp.status();
                    let text = resp.text().await.unwrap_or_default();
                    return Err(err(format!("PUT {}: HTTP {}: {}", url, status, text)));
                }
                Ok(())
            }
            Store::Layout(dir) => {
                let digest = sha256(data);
                write_atomic(&dir.join("blobs").join(digest.replacen(':', "/", 1)), data)?;
                let mut index = read_index(dir)?;
                let entries = index["manifests"]
                    .as_array_mut()
                    .expect("index has manifests");
                entries.retain(|m| m["annotations"][REF_NAME].as_str() != Some(name));
                entries.push(json!({"mediaType": media, "digest": digest, "size": data.len(), "annotations": {REF_NAME: name}}));
                write_atomic(
                    &dir.join("oci-layout"),
                    br#"{"imageLayoutVersion":"1.0.0"}"#,
                )?;
                write_atomic(
                    &dir.join("index.json"),
                    serde_json::to_string_pretty(&index)
                        .unwrap_or_default()
                        .as_bytes(),
                )
            }
        }
    }
}

fn read_index(dir: &Path) -> Result<Value> {
    match std::fs::read(dir.join("index.json")) {
        Ok(b) => serde_json::from_slice(&b).map_err(|e| {
            err(format!(
                "{}/index.json is not valid JSON: {}",
                dir.display(),
                e
            ))
        }),
        Err(_) => Ok(
            json!({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": []}),
        ),
    }
}

/// Writes a file of an OCI layout whole, creating its directory: a reader of the layout
/// never sees half a blob or index.
fn write_atomic(path: &Path, data: &[u8]) -> Result<()> {
    if let Some(p) = path.parent() {
        std::fs::create_dir_all(p)?;
    }
    crate::files::write_atomic(path, data, None, false)
        .map_err(|e| err(format!("cannot write {}: {}", path.display(), e)))
}

fn platform_of(entry: &Value) -> String {
    let p = &entry["platform"];
    let mut s = format!(
        "{}/{}",
        p["os"].as_str().unwrap_or(""),
        p["architecture"].as_str().unwrap_or("")
    );
    if let Some(v) = p["variant"].as_str() {
        s.push('/');
        s.push_str(v);
    }
    s
}

/// Copies one manifest (not an index) and its blobs by digest.
async fn copy_manifest(
    src: &Store,
    dst: &Store,
    s: &Reference,
    d: &Reference,
    body: &[u8],
    copied: &mut u64,
) -> Result<()> {
    let m: Value = serde_json::from_slice(body)
        .map_err(|e| err(format!("manifest of {} is not JSON: {}", s.full(), e)))?;
    let mut digests = Vec::new();
    if let Some(c) = m["config"]["digest"].as_str() {
        digests.push(c.to_string());
    }
    for l in m["layers"].as_array().into_iter().flatten() {
        if let Some(dg) = l["digest"].as_str() {
            digests.push(dg.to_string());
        }
    }
    for dg in digests {
        if dst.has_blob(&d.repository, &dg).await? {
            continue;
        }
        let data = src.blob(&s.repository, &dg).await?;
        *copied += data.len() as u64;
        dst.put_blob(&d.repository, &dg, data).await?;
    }
    Ok(())
}

/// The `image` module.
pub struct Image;

#[async_trait]
impl Module for Image {
    /// With `manifests`, `src` and `dest` are rendered here, once per image.
    fn own_templates(&self, args: &VarMap) -> &'static [&'static str] {
        if args.contains_key("manifests") {
            &["src", "dest"]
        } else {
            &[]
        }
    }

    fn validate(&self, args: &VarMap) -> Result<()> {
        parse_args::<ImageArgs>("image", args.clone(), VALID).map(|_| ())
    }

    async fn run(&self, ctx: &ModuleContext, raw: VarMap) -> Result<ModuleResult> {
        let a: ImageArgs = parse_args("image", raw, VALID)?;
        let strict = a.policy.unwrap_or(Policy::Strict) == Policy::Strict;
        let (manifests, platform) = (&a.manifests.0, &a.platform.0);
        let auths: Vec<Auth> = match &a.auths {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::String(s)) => serde_json::from_str(s).map_err(|e| {
                Error::new(
                    ErrorKind::ModuleArgs,
                    format!("image: auths is not a JSON list: {}", e),
                )
            })?,
            Some(v) => serde_json::from_value(v.clone())
                .map_err(|e| Error::new(ErrorKind::ModuleArgs, format!("image: auths: {}", e)))?,
        };
        // An empty ca_file is none; a relative one is taken from the playbook directory.
        let auths: Vec<Auth> = auths
            .into_iter()
            .map(|mut a| {
                a.ca_file = a
                    .ca_file
                    .filter(|f| !f.as_str().trim().is_empty())
                    .map(|Text(f)| {
                        Text(match ctx.search_dirs.last() {
                            Some(base) if Path::new(&f).is_relative() => {
                                base.join(&f).display().to_string()
                            }
                            _ => f,
                        })
                    });
                a
            })
            .collect();
        let all_platforms = platform.is_empty() || platform.iter().any(|p| p == "all");
        let pattern = match &a.pattern {
            Some(p) => Some(regex::Regex::new(p).map_err(|e| {
                Error::new(ErrorKind::ModuleArgs, format!("image: bad pattern: {}", e))
            })?),
            None => None,
        };
        // One (src, dest) pair per image: rendered templates with manifests, as given without.
        let mut jobs = Vec::new();
        if manifests.is_empty() {
            jobs.push((a.src.clone(), a.dest.clone(), None));
        } else {
            for m in manifests {
                if pattern.as_ref().is_some_and(|p| !p.is_match(m)) {
                    continue;
                }
                let r = Reference::parse(m)?;
                let ctx_vars = minijinja::context! { module => minijinja::context! { image => minijinja::context! { reference => minijinja::context! {
                registry => r.registry.clone(), repository => r.repository.clone(), reference => r.reference.clone() } } }, ..ctx.vars.clone() };
                let src = ctx.templar.render_text(&a.src, &ctx_vars)?;
                let dest = ctx.templar.render_text(&a.dest, &ctx_vars)?;
                jobs.push((src, dest, Some(r)));
            }
        }
        let mut results = Vec::new();
        let mut changed = false;
        let mut bytes = 0u64;
        for (src_url, dest_url, named) in jobs {
            let (src, sref) = Store::open(&src_url, &auths)?;
            let (dst, dref) = Store::open(&dest_url, &auths)?;
            let sref = sref
                .or_else(|| named.clone())
                .or_else(|| dref.clone())
                .ok_or_else(|| {
                    Error::new(
                        ErrorKind::ModuleArgs,
                        "image: between two local stores, name the image with `manifests`",
                    )
                })?;
            let dref = dref.unwrap_or_else(|| sref.clone());
            let name = named.as_ref().unwrap_or(&sref).full();
            let (body, media, digest) = src
                .manifest(&sref)
                .await?
                .ok_or_else(|| err(format!("image {} not found in {}", sref.full(), src_url)))?;
            let mut out_body = body.clone();
            if INDEX_TYPES.contains(&media.as_str()) {
                let mut index: Value = serde_json::from_slice(&body)
                    .map_err(|e| err(format!("index of {}: {}", sref.full(), e)))?;
                let entries = index["manifests"].as_array().cloned().unwrap_or_default();
                let keep: Vec<Value> = if all_platforms {
                    entries.clone()
                } else {
                    entries
                        .iter()
                        .filter(|e| platform.contains(&platform_of(e)))
                        .cloned()
                        .collect()
                };
                if !all_platforms {
                    for want in platform {
                        if !entries.iter().any(|e| platform_of(e) == *want) {
                            let msg = format!(
                                "image {} has no {} variant (it has {})",
                                sref.full(),
                                want,
                                entries
                                    .iter()
                                    .map(platform_of)
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            );
                            if strict {
                                return Err(err(msg).help("use `policy: warn` to copy what exists"));
                            }
                        }
                    }
                }
                if keep.is_empty() {
                    results.push(json!({"image": name, "skipped": "no requested platform"}));
                    continue;
                }
                if keep.len() != entries.len() {
                    index["manifests"] = Value::Array(keep.clone());
                    out_body = serde_json::to_vec(&index).unwrap_or_default();
                }
                let new_digest = sha256(&out_body);
                if let Some((_, _, existing)) = dst.manifest(&dref).await? {
                    if existing == new_digest {
                        results
                            .push(json!({"image": name, "digest": new_digest, "changed": false}));
                        continue;
                    }
                }
                if ctx.check_mode {
                    changed = true;
                    results.push(json!({"image": name, "digest": new_digest, "changed": true}));
                    continue;
                }
                for e in &keep {
                    let cd = e["digest"].as_str().unwrap_or_default().to_string();
                    let child_ref = Reference {
                        reference: cd.clone(),
                        ..sref.clone()
                    };
                    let (cbody, cmedia, _) = src.manifest(&child_ref).await?.ok_or_else(|| {
                        err(format!("{} lists {} but it is missing", sref.full(), cd))
                    })?;
                    copy_manifest(&src, &dst, &sref, &dref, &cbody, &mut bytes).await?;
                    let dchild = Reference {
                        reference: cd.clone(),
                        ..dref.clone()
                    };
                    match &dst {
                        Store::Registry(_) => {
                            dst.put_manifest(&dchild, &cbody, &cmedia, &name).await?
                        }
                        Store::Layout(dir) => {
                            write_atomic(&dir.join("blobs").join(cd.replacen(':', "/", 1)), &cbody)?
                        }
                    }
                }
                dst.put_manifest(&dref, &out_body, &media, &name).await?;
                changed = true;
                results.push(json!({"image": name, "digest": new_digest, "platforms": keep.iter().map(platform_of).collect::<Vec<_>>(), "changed": true}));
            } else {
                if !all_platforms {
                    let m: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                    let cfg_digest = m["config"]["digest"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string();
                    let cfg: Value =
                        serde_json::from_slice(&src.blob(&sref.repository, &cfg_digest).await?)
                            .unwrap_or(Value::Null);
                    let plat = format!(
                        "{}/{}",
                        cfg["os"].as_str().unwrap_or(""),
                        cfg["architecture"].as_str().unwrap_or("")
                    );
                    if !platform.iter().any(|p| p.starts_with(&plat)) {
                        let msg = format!(
                            "image {} is {}, not {}",
                            sref.full(),
                            plat,
                            platform.join(", ")
                        );
                        if strict {
                            return Err(err(msg));
                        }
                        results.push(json!({"image": name, "skipped": msg}));
                        continue;
                    }
                }
                if let Some((_, _, existing)) = dst.manifest(&dref).await? {
                    if existing == digest {
                        results.push(json!({"image": name, "digest": digest, "changed": false}));
                        continue;
                    }
                }
                if ctx.check_mode {
                    changed = true;
                    results.push(json!({"image": name, "digest": digest, "changed": true}));
                    continue;
                }
                copy_manifest(&src, &dst, &sref, &dref, &body, &mut bytes).await?;
                dst.put_manifest(&dref, &body, &media, &name).await?;
                changed = true;
                results.push(json!({"image": name, "digest": digest, "changed": true}));
            }
        }
        Ok(ModuleResult::changed(changed)
            .with("images", Value::Array(results))
            .with("bytes_copied", bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::Reference;

    #[test]
    fn references() {
        let r = Reference::parse("nginx").unwrap();
        assert_eq!(
            (
                r.registry.as_str(),
                r.repository.as_str(),
                r.reference.as_str()
            ),
            ("docker.io", "library/nginx", "latest")
        );
        let r = Reference::parse("127.0.0.1:5000/kk/app:v1").unwrap();
        assert_eq!(
            (
                r.registry.as_str(),
                r.repository.as_str(),
                r.reference.as_str()
            ),
            ("127.0.0.1:5000", "kk/app", "v1")
        );
        let r = Reference::parse("quay.io/a/b@sha256:abc").unwrap();
        assert_eq!(r.reference, "sha256:abc");
        let r = Reference::parse("kubesphere/ks:v4").unwrap();
        assert_eq!(
            (r.registry.as_str(), r.repository.as_str()),
            ("docker.io", "kubesphere/ks")
        );
    }

    #[test]
    fn validate_at_load() {
        use super::{Image, Module};
        let check = |a: serde_json::Value| Image.validate(a.as_object().unwrap());
        assert!(check(serde_json::json!({"src": "a", "dest": "b", "platform": "linux/amd64,linux/arm64", "policy": "warn"})).is_ok());
        let e =
            check(serde_json::json!({"src": "a", "dest": "b", "policy": "lenient"})).unwrap_err();
        assert!(
            e.message.contains("image")
                && e.message.contains("`policy`")
                && e.message.contains("strict, warn"),
            "{}",
            e.message
        );
        let e = check(serde_json::json!({"src": "a", "dest": "b", "platfrom": "x"})).unwrap_err();
        assert!(e.message.contains("image") && e.message.contains("platfrom"));
        let e = check(serde_json::json!({"src": "a"})).unwrap_err();
        assert!(e.message.contains("image") && e.message.contains("dest"));
    }
}
