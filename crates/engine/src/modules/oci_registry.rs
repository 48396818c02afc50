//! The registry side of the `image` module: credentials and TLS settings of one registry
//! (`auths` entries, with a CA bundle from `ca_file`) and its HTTP API client, which
//! answers Basic and Bearer challenges. Kept apart from image.rs, which copies manifests
//! and blobs between registries and OCI layouts.

use std::path::Path;

use serde::Deserialize;
use serde_json::Value;
use x509_parser::certificate::X509Certificate;
use x509_parser::prelude::FromDer;

use super::args::{Flag, Text};
use super::image::err;
use crate::error::{Error, ErrorKind, Result};

/// Credentials and transport settings for one registry.
#[derive(Debug, Clone, Default, Deserialize)]
pub(super) struct Auth {
    pub(super) registry: String,
    #[serde(default)]
    pub(super) username: Option<String>,
    #[serde(default)]
    pub(super) password: Option<String>,
    #[serde(default)]
    pub(super) skip_tls_verify: Flag,
    #[serde(default)]
    pub(super) plain_http: Flag,
    /// A PEM CA bundle on the controller, trusted for this registry.
    #[serde(default)]
    pub(super) ca_file: Option<Text>,
}

/// The certificates of the PEM bundle `path` (`ca_file` of the `auths` entry for
/// `registry`), checked to be X.509 certificates.
fn load_ca(registry: &str, path: &Path) -> Result<Vec<reqwest::Certificate>> {
    let bad = |why: String| {
        Error::new(
            ErrorKind::ModuleArgs,
            format!(
                "image: ca_file {} (auths entry for {}) {}",
                path.display(),
                registry,
                why
            ),
        )
        .help("ca_file is a PEM file on the controller holding the CA certificate(s) that signed the registry's certificate")
    };
    let data = std::fs::read(path).map_err(|e| bad(format!("cannot be read: {}", e)))?;
    let mut certs = Vec::new();
    for pem in x509_parser::pem::Pem::iter_from_buffer(&data) {
        let pem = pem.map_err(|e| bad(format!("is not valid PEM: {}", e)))?;
        if pem.label != "CERTIFICATE" {
            continue;
        }
        X509Certificate::from_der(&pem.contents)
            .map_err(|e| bad(format!("holds a certificate that does not parse: {}", e)))?;
        certs.push(
            reqwest::Certificate::from_der(&pem.contents)
                .map_err(|e| bad(format!("holds an unusable certificate: {}", e)))?,
        );
    }
    if certs.is_empty() {
        return Err(bad("holds no PEM CERTIFICATE block".into()));
    }
    Ok(certs)
}

/// A registry's HTTP API with its credentials: a Basic or Bearer challenge is answered
/// once per request, a token kept for the next ones.
pub(super) struct Registry {
    pub(super) client: reqwest::Client,
    /// The registry as named in the image reference (host[:port]).
    pub(super) name: String,
    pub(super) base: String,
    pub(super) auth: Auth,
    pub(super) token: tokio::sync::Mutex<Option<String>>,
}

impl Registry {
    pub(super) fn new(registry: &str, auth: Auth) -> Result<Registry> {
        let mut builder = reqwest::Client::builder()
            .danger_accept_invalid_certs(auth.skip_tls_verify.0)
            .timeout(std::time::Duration::from_secs(300));
        if let Some(ca) = &auth.ca_file {
            // Merged with the system's roots (add_root_certificate's successor in reqwest 0.13).
            builder = builder.tls_certs_merge(load_ca(registry, Path::new(ca.as_str()))?);
        }
        let client = builder
            .build()
            .map_err(|e| err(format!("cannot set up the HTTP client: {}", chain(&e))))?;
        let host = if registry == "docker.io" {
            "registry-1.docker.io"
        } else {
            registry
        };
        let scheme = if auth.plain_http.0 { "http" } else { "https" };
        Ok(Registry {
            client,
            name: registry.to_string(),
            base: format!("{}://{}", scheme, host),
            auth,
            token: tokio::sync::Mutex::new(None),
        })
    }

    /// Sends a request, answering a Basic or Bearer challenge once.
    pub(super) async fn send(
        &self,
        build: impl Fn(&reqwest::Client) -> reqwest::RequestBuilder,
    ) -> Result<reqwest::Response> {
        let with_auth = |rb: reqwest::RequestBuilder, token: &Option<String>| match (
            token,
            &self.auth.username,
        ) {
            (Some(t), _) => rb.bearer_auth(t),
            (None, Some(u)) => rb.basic_auth(u, self.auth.password.clone()),
            _ => rb,
        };
        let token = self.token.lock().await.clone();
        let resp = with_auth(build(&self.client), &token)
            .send()
            .await
            .map_err(|e| self.transport_err(&self.base, &e))?;
        if resp.status() != reqwest::StatusCode::UNAUTHORIZED {
            return Ok(resp);
        }
        let challenge = resp
            .headers()
            .get("www-authenticate")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        let Some(bearer) = challenge.strip_prefix("Bearer ") else {
            return Err(err(format!("{} refused the credentials (401)", self.base))
                .help("check `auths` for this registry"));
        };
        let param = |k: &str| {
            bearer.split(',').find_map(|kv| {
                let (key, v) = kv.trim().split_once('=')?;
                (key == k).then(|| v.trim_matches('"').to_string())
            })
        };
        let realm = param("realm")
            .ok_or_else(|| err(format!("{}: bearer challenge without realm", self.base)))?;
        let mut url = realm.clone();
        for key in ["service", "scope"] {
            if let Some(v) = param(key) {
                url.push(if url.contains('?') { '&' } else { '?' });
                url.push_str(&format!("{}={}", key, v.replace(' ', "%20")));
            }
        }
        let mut req = self.client.get(&url);
        if let Some(u) = &self.auth.username {
            req = req.basic_auth(u, self.auth.password.clone());
        }
        let tok: Value = req
            .send()
            .await
            .map_err(|e| self.transport_err(&format!("token from {}", realm), &e))?
            .json()
            .await
            .map_err(|e| err(format!("token from {}: {}", realm, e)))?;
        let t = tok
            .get("token")
            .or_else(|| tok.get("access_token"))
            .and_then(Value::as_str)
            .map(str::to_string);
        *self.token.lock().await = t.clone();
        with_auth(build(&self.client), &t)
            .send()
            .await
            .map_err(|e| self.transport_err(&self.base, &e))
    }

    /// A request that got no answer, with its causes (a TLS failure is only named deep in
    /// the chain) and, for a certificate the client does not trust, what to set.
    pub(super) fn transport_err(&self, what: &str, e: &reqwest::Error) -> Error {
        let msg = format!("{}: {}", what, chain(e));
        if !msg.to_lowercase().contains("certificate") {
            return err(msg);
        }
        let help = match &self.auth.ca_file {
            _ if !msg.contains("UnknownIssuer") => format!(
                "the certificate of {} was refused for the reason above; ca_file and skip_tls_verify of its `auths` entry say what is trusted",
                self.name
            ),
            Some(ca) => format!(
                "the certificate of {} is not signed by a CA of ca_file {} (nor by a system CA): point ca_file of its `auths` entry at the CA that signed it",
                self.name, ca.as_str()
            ),
            None => format!(
                "the certificate of {} is not signed by a system CA: set ca_file in its `auths` entry to the CA that signed it (or skip_tls_verify: true)",
                self.name
            ),
        };
        err(msg).help(help)
    }
}

/// An error and its sources, each said once.
pub(super) fn chain(e: &dyn std::error::Error) -> String {
    let mut msg = e.to_string();
    let mut src = e.source();
    while let Some(s) = src {
        let t = s.to_string();
        if !msg.contains(&t) {
            msg.push_str(": ");
            msg.push_str(&t);
        }
        src = s.source();
    }
    msg
}

#[cfg(test)]
mod tests {
    use super::load_ca;

    #[test]
    fn ca_file_is_read_checked_and_named_in_errors() {
        let dir = tempfile::tempdir().unwrap();
        let pem = |name: &str| {
            rcgen::generate_simple_self_signed(vec![name.to_string()])
                .unwrap()
                .cert
                .pem()
        };
        // A bundle: every certificate is trusted, other blocks are ignored.
        let bundle = dir.path().join("bundle.crt");
        std::fs::write(
            &bundle,
            format!(
                "{}-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n{}",
                pem("a"),
                pem("b")
            ),
        )
        .unwrap();
        assert_eq!(load_ca("reg:5000", &bundle).unwrap().len(), 2);

        let msg = |path: &std::path::Path| {
            let e = load_ca("reg:5000", path).map(|_| ()).unwrap_err();
            format!("{} / {}", e.message, e.help.unwrap_or_default())
        };
        let missing = dir.path().join("missing.crt");
        let m = msg(&missing);
        assert!(
            m.contains("ca_file") && m.contains(&missing.display().to_string()),
            "{}",
            m
        );
        assert!(
            m.contains("reg:5000") && m.contains("cannot be read"),
            "{}",
            m
        );

        let garbage = dir.path().join("garbage.crt");
        std::fs::write(&garbage, "not a certificate\n").unwrap();
        let m = msg(&garbage);
        assert!(
            m.contains("ca_file") && m.contains(&garbage.display().to_string()),
            "{}",
            m
        );

        let empty = dir.path().join("empty.crt");
        std::fs::write(&empty, "").unwrap();
        assert!(msg(&empty).contains("holds no PEM CERTIFICATE block"));

        let broken = dir.path().join("broken.crt");
        std::fs::write(
            &broken,
            "-----BEGIN CERTIFICATE-----\nAAECAwQF\n-----END CERTIFICATE-----\n",
        )
        .unwrap();
        assert!(msg(&broken).contains("does not parse"), "{}", msg(&broken));
    }
}
