//! Validation, as KubeKey's CAPKK webhooks do it (`ValidateCreate` / `ValidateUpdate`), and
//! more: without an admission webhook the controllers call these after defaulting
//! ([`super::defaults`]) and report every problem at once, each naming the field's path
//! (`spec.nodes.instances[2].address`), what was expected and what was found, so a user can
//! fix the object in one edit. Secrets (passwords, private keys) are never quoted.

use super::common::{Auth, ContainerManager, Repository, Role};
use super::defaults::{CONTAINERD_TYPE, DOCKER_TYPE};
use super::formats::*;
use super::kkcluster::{Component, KKCluster, KKClusterSpec, Registry};
use super::kkinstance::KKInstance;
use super::kkmachine::{KKMachine, KKMachineSpec, KKMachineTemplate};
use kube::ResourceExt;
use std::collections::BTreeMap;

/// The distributions KKCluster supports.
pub const DISTRIBUTIONS: [&str; 2] = ["kubernetes", "k3s"];
/// The architectures instances and component overrides may have.
pub const ARCHES: [&str; 2] = ["amd64", "arm64"];
/// The container managers kk installs.
pub const CONTAINER_MANAGERS: [&str; 2] = [CONTAINERD_TYPE, DOCKER_TYPE];
/// The component ids an override may replace (KubeKey CAPKK's binary ids).
pub const COMPONENT_IDS: [&str; 11] = [
    "containerd",
    "cri-dockerd",
    "crictl",
    "docker",
    "iso",
    "k3s",
    "kubeadm",
    "kubecni",
    "kubectl",
    "kubelet",
    "runc",
];
/// The component zones: upstream (empty) or KubeSphere's mirrors in China.
pub const ZONES: [&str; 2] = ["", "cn"];

/// The kind of problem, with Kubernetes' `field.ErrorType` names so messages read as the
/// API server's would.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FieldErrorKind {
    /// A value is missing.
    Required,
    /// A value has the wrong form.
    Invalid,
    /// A value that must be unique is used twice.
    Duplicate,
    /// A value is not one of the supported ones.
    NotSupported,
    /// A value may not be used here (e.g. changing an immutable field).
    Forbidden,
}

impl FieldErrorKind {
    fn as_str(self) -> &'static str {
        match self {
            FieldErrorKind::Required => "Required value",
            FieldErrorKind::Invalid => "Invalid value",
            FieldErrorKind::Duplicate => "Duplicate value",
            FieldErrorKind::NotSupported => "Unsupported value",
            FieldErrorKind::Forbidden => "Forbidden",
        }
    }
}

/// One problem in one field.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {}: expected {expected}, found {found}", kind.as_str())]
pub struct FieldError {
    /// What kind of problem.
    pub kind: FieldErrorKind,
    /// The field, as in the object's YAML: `spec.nodes.instances[2].address`.
    pub path: String,
    /// What the field must hold.
    pub expected: String,
    /// What it holds (quoted; `<hidden>` for secrets; `nothing` when empty).
    pub found: String,
}

impl FieldError {
    fn new(
        kind: FieldErrorKind,
        path: &str,
        expected: impl Into<String>,
        found: impl Into<String>,
    ) -> Self {
        FieldError {
            kind,
            path: path.to_string(),
            expected: expected.into(),
            found: found.into(),
        }
    }
}

/// Every problem of one object: the controllers put it in a condition and an event.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{kind} {name} is invalid: {}", errors.iter().map(|e| e.to_string()).collect::<Vec<_>>().join("; "))]
pub struct ValidationErrors {
    /// The object's kind (`KKCluster`).
    pub kind: String,
    /// `namespace/name`.
    pub name: String,
    /// The problems, in the order of the fields.
    pub errors: Vec<FieldError>,
}

/// Quotes a found value for a message (`"300.1.1.1"`), `nothing` when empty.
fn found(v: &str) -> String {
    if v.is_empty() {
        "nothing".to_string()
    } else {
        format!("{:?}", v)
    }
}

/// Collects the errors of one object.
#[derive(Default)]
struct Errors(Vec<FieldError>);

impl Errors {
    fn push(
        &mut self,
        kind: FieldErrorKind,
        path: &str,
        expected: impl Into<String>,
        found: impl Into<String>,
    ) {
        self.0.push(FieldError::new(kind, path, expected, found));
    }

    /// `Invalid` unless `ok(value)`; empty values are left to the caller (often optional).
    fn check(&mut self, path: &str, value: &str, ok: fn(&str) -> bool, expected: &str) {
        if !value.is_empty() && !ok(value) {
            self.push(FieldErrorKind::Invalid, path, expected, found(value));
        }
    }

    /// `NotSupported` unless `value` is one of `allowed`.
    fn one_of(&mut self, path: &str, value: &str, allowed: &[&str]) {
        if !allowed.contains(&value) {
            let list: Vec<String> = allowed.iter().map(|a| format!("{:?}", a)).collect();
            self.push(
                FieldErrorKind::NotSupported,
                path,
                format!("one of {}", list.join(", ")),
                found(value),
            );
        }
    }

    /// `Duplicate` for each value seen before under `seen` (value → first path).
    fn unique(&mut self, seen: &mut BTreeMap<String, String>, path: &str, value: &str) {
        if value.is_empty() {
            return;
        }
        match seen.get(value) {
            Some(first) => self.push(
                FieldErrorKind::Duplicate,
                path,
                format!("a value not used before (it is the value of {})", first),
                found(value),
            ),
            None => {
                seen.insert(value.to_string(), path.to_string());
            }
        }
    }

    fn finish(self, kind: &str, name: String) -> Result<(), ValidationErrors> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(ValidationErrors {
                kind: kind.to_string(),
                name,
                errors: self.0,
            })
        }
    }
}

fn object_name<K: kube::Resource>(obj: &K) -> String {
    match obj.namespace() {
        Some(ns) => format!("{}/{}", ns, obj.name_any()),
        None => obj.name_any(),
    }
}

/// Validates a KKCluster (see [`validate_kkcluster_spec`]).
pub fn validate_kkcluster(cluster: &KKCluster) -> Result<(), ValidationErrors> {
    Errors(validate_kkcluster_spec(&cluster.spec)).finish("KKCluster", object_name(cluster))
}

/// The rules of a KKCluster spec: a supported distribution; SSH credentials for every
/// instance; at least one instance; instance names that are object names and unique;
/// addresses and internal addresses that are IPs or host names and unique; roles not
/// repeated; a known arch; a load balancer host (or an endpoint host), which is no
/// instance's address; component zone, host and overrides (known ids, `http(s)` URLs,
/// sha256 values of 64 hex digits, one override per id/arch/version); registry addresses.
pub fn validate_kkcluster_spec(spec: &KKClusterSpec) -> Vec<FieldError> {
    use FieldErrorKind::*;
    let mut e = Errors::default();
    if !spec.distribution.is_empty() {
        e.one_of("spec.distribution", &spec.distribution, &DISTRIBUTIONS);
    }
    let cluster_has_credential = has_credential(&spec.nodes.auth);
    validate_auth(&mut e, "spec.nodes.auth", &spec.nodes.auth);
    if spec.nodes.instances.is_empty() {
        e.push(
            Required,
            "spec.nodes.instances",
            "at least one instance",
            "none",
        );
    }
    let (mut names, mut addrs, mut internal) = (BTreeMap::new(), BTreeMap::new(), BTreeMap::new());
    for (i, inst) in spec.nodes.instances.iter().enumerate() {
        let p = format!("spec.nodes.instances[{}]", i);
        validate_name(&mut e, &format!("{}.name", p), &inst.name);
        e.unique(&mut names, &format!("{}.name", p), &inst.name);
        validate_address(&mut e, &format!("{}.address", p), &inst.address, true);
        e.unique(&mut addrs, &format!("{}.address", p), &inst.address);
        validate_address(
            &mut e,
            &format!("{}.internalAddress", p),
            &inst.internal_address,
            false,
        );
        e.unique(
            &mut internal,
            &format!("{}.internalAddress", p),
            &inst.internal_address,
        );
        validate_roles(&mut e, &format!("{}.roles", p), &inst.roles);
        if !inst.arch.is_empty() {
            e.one_of(&format!("{}.arch", p), &inst.arch, &ARCHES);
        }
        validate_auth(&mut e, &format!("{}.auth", p), &inst.auth);
        if !cluster_has_credential && !has_credential(&inst.auth) {
            e.push(
                Required,
                &format!("{}.auth", p),
                "a password, privateKey, privateKeyPath or secret, here or in spec.nodes.auth",
                "none",
            );
        }
    }
    validate_endpoint_and_lb(&mut e, spec);
    if let Some(c) = &spec.component {
        validate_component(&mut e, c);
    }
    if let Some(r) = &spec.registry {
        validate_registry(&mut e, r);
    }
    e.0
}

/// The rules of a KKCluster update: the new object's rules, and the load balancer may not
/// change once set (kube-vip holds its address on the machines), as in KubeKey.
pub fn validate_kkcluster_update(old: &KKCluster, new: &KKCluster) -> Result<(), ValidationErrors> {
    let mut e = Errors(validate_kkcluster_spec(&new.spec));
    if let Some(old_lb) = &old.spec.control_plane_load_balancer {
        let new_host = new
            .spec
            .control_plane_load_balancer
            .as_ref()
            .map(|l| l.host.as_str())
            .unwrap_or("");
        if new_host != old_lb.host {
            e.push(
                FieldErrorKind::Forbidden,
                "spec.controlPlaneLoadBalancer.host",
                format!(
                    "the value it was created with, {:?} (the field is immutable)",
                    old_lb.host
                ),
                found(new_host),
            );
        }
    }
    e.finish("KKCluster", object_name(new))
}

fn has_credential(auth: &Auth) -> bool {
    !auth.password.is_empty()
        || !auth.private_key.is_empty()
        || !auth.private_key_path.is_empty()
        || !auth.secret.is_empty()
}

fn validate_auth(e: &mut Errors, p: &str, auth: &Auth) {
    if auth.port == Some(0) {
        e.push(
            FieldErrorKind::Invalid,
            &format!("{}.port", p),
            "a port from 1 to 65535",
            "0",
        );
    }
    e.check(
        &format!("{}.user", p),
        &auth.user,
        |u| is_safe_text(u) && !u.starts_with('-'),
        "a user name without spaces or quotes",
    );
    if let Some(t) = &auth.timeout {
        if !is_go_duration(t) {
            e.push(
                FieldErrorKind::Invalid,
                &format!("{}.timeout", p),
                "a duration such as 30s or 1m30s",
                found(t),
            );
        }
    }
    e.check(
        &format!("{}.secret", p),
        &auth.secret,
        is_dns1123_subdomain,
        "the name of a Secret",
    );
    // The key itself is never quoted: only whether it looks like PEM text.
    if !auth.private_key.is_empty() && !auth.private_key.contains("-----BEGIN ") {
        e.push(
            FieldErrorKind::Invalid,
            &format!("{}.privateKey", p),
            "a PEM private key (-----BEGIN …)",
            "<hidden>",
        );
    }
}

fn validate_name(e: &mut Errors, path: &str, name: &str) {
    if name.is_empty() {
        e.push(
            FieldErrorKind::Required,
            path,
            "the machine's name",
            "nothing",
        );
    } else if !is_dns1123_subdomain(name) {
        e.push(
            FieldErrorKind::Invalid,
            path,
            "a lower-case name of letters, digits, '-' and '.' (it names the KKInstance)",
            found(name),
        );
    }
}

fn validate_address(e: &mut Errors, path: &str, value: &str, required: bool) {
    if value.is_empty() {
        if required {
            e.push(
                FieldErrorKind::Required,
                path,
                "an IP address or a host name",
                "nothing",
            );
        }
    } else if !is_address(value) {
        e.push(
            FieldErrorKind::Invalid,
            path,
            "an IP address or a host name",
            found(value),
        );
    }
}

fn validate_roles(e: &mut Errors, path: &str, roles: &[Role]) {
    for (i, r) in roles.iter().enumerate() {
        if roles[..i].contains(r) {
            e.push(
                FieldErrorKind::Duplicate,
                &format!("{}[{}]", path, i),
                "each role once",
                format!("{:?} again", role_name(*r)),
            );
        }
    }
}

fn role_name(r: Role) -> &'static str {
    match r {
        Role::ControlPlane => "control-plane",
        Role::Master => "master",
        Role::Worker => "worker",
    }
}

fn validate_endpoint_and_lb(e: &mut Errors, spec: &KKClusterSpec) {
    use FieldErrorKind::*;
    let ep = &spec.control_plane_endpoint;
    validate_address(e, "spec.controlPlaneEndpoint.host", &ep.host, false);
    if !(0..=65535).contains(&ep.port) {
        e.push(
            Invalid,
            "spec.controlPlaneEndpoint.port",
            "a port from 1 to 65535",
            ep.port.to_string(),
        );
    }
    match &spec.control_plane_load_balancer {
        None if ep.host.is_empty() => e.push(
            Required,
            "spec.controlPlaneLoadBalancer.host",
            "the address kube-vip holds for the control plane (or spec.controlPlaneEndpoint.host)",
            "nothing",
        ),
        None => {}
        Some(lb) if lb.host.is_empty() => e.push(
            Required,
            "spec.controlPlaneLoadBalancer.host",
            "the address kube-vip holds for the control plane",
            "nothing",
        ),
        Some(lb) => {
            validate_address(e, "spec.controlPlaneLoadBalancer.host", &lb.host, true);
            for (i, inst) in spec.nodes.instances.iter().enumerate() {
                if lb.host == inst.address || lb.host == inst.internal_address {
                    e.push(
                        Invalid,
                        "spec.controlPlaneLoadBalancer.host",
                        format!(
                            "a free address, not an instance's (spec.nodes.instances[{}] has it)",
                            i
                        ),
                        found(&lb.host),
                    );
                }
            }
        }
    }
}

fn validate_component(e: &mut Errors, c: &Component) {
    use FieldErrorKind::*;
    e.one_of("spec.component.zone", &c.zone, &ZONES);
    e.check(
        "spec.component.host",
        &c.host,
        |h| is_host_port(h) || is_http_url(h),
        "host[:port] or an http(s) URL of a file server",
    );
    let mut seen = BTreeMap::new();
    for (i, o) in c.overrides.iter().enumerate() {
        let p = format!("spec.component.overrides[{}]", i);
        if o.id.is_empty() {
            e.push(
                Required,
                &format!("{}.id", p),
                "the component's id (kubeadm, kubelet, …)",
                "nothing",
            );
        } else {
            e.one_of(&format!("{}.id", p), &o.id, &COMPONENT_IDS);
        }
        if !o.arch.is_empty() {
            e.one_of(&format!("{}.arch", p), &o.arch, &ARCHES);
        }
        e.check(
            &format!("{}.version", p),
            &o.version,
            is_version,
            "a version such as v1.33.0 or 1.6.4",
        );
        e.check(&format!("{}.url", p), &o.url, is_http_url, "an http(s) URL");
        e.check(
            &format!("{}.path", p),
            &o.path,
            is_safe_text,
            "a path without spaces or quotes",
        );
        e.check(
            &format!("{}.checksum.value", p),
            &o.checksum.value,
            is_sha256,
            "a sha256: 64 hexadecimal digits",
        );
        e.check(
            &format!("{}.checksum.path", p),
            &o.checksum.path,
            is_safe_text,
            "a path without spaces or quotes",
        );
        let key = format!("{}/{}/{}", o.id, o.arch, o.version);
        if !o.id.is_empty() {
            e.unique(&mut seen, &p, &key);
        }
    }
}

fn validate_registry(e: &mut Errors, r: &Registry) {
    let host_path = |s: &str| {
        let host = s.split('/').next().unwrap_or("");
        is_host_port(host) && is_safe_text(s)
    };
    e.check(
        "spec.registry.privateRegistry",
        &r.private_registry,
        host_path,
        "host[:port][/path] of a registry",
    );
    for (i, m) in r.registry_mirrors.iter().enumerate() {
        let p = format!("spec.registry.registryMirrors[{}]", i);
        if m.is_empty() || !is_http_url(m) {
            e.push(
                FieldErrorKind::Invalid,
                &p,
                "an http(s) URL of a registry mirror",
                found(m),
            );
        }
    }
    for (i, h) in r.insecure_registries.iter().enumerate() {
        let p = format!("spec.registry.insecureRegistries[{}]", i);
        if h.is_empty() || !is_host_port(h) {
            e.push(
                FieldErrorKind::Invalid,
                &p,
                "host[:port] of a registry",
                found(h),
            );
        }
    }
    e.check(
        "spec.registry.namespaceOverride",
        &r.namespace_override,
        is_dns1123_subdomain,
        "an image namespace (lower-case letters, digits, '-', '.')",
    );
    for (field, v) in [
        ("certsPath", &r.auth.certs_path),
        ("caFile", &r.auth.ca_file),
        ("certFile", &r.auth.cert_file),
        ("keyFile", &r.auth.key_file),
    ] {
        e.check(
            &format!("spec.registry.auth.{}", field),
            v,
            |s| s.starts_with('/') && is_safe_text(s),
            "an absolute path without spaces or quotes",
        );
    }
}

/// Validates a KKMachine (see [`validate_kkmachine_spec`]).
pub fn validate_kkmachine(machine: &KKMachine) -> Result<(), ValidationErrors> {
    Errors(validate_kkmachine_spec("spec", &machine.spec)).finish("KKMachine", object_name(machine))
}

/// Validates the KKMachine spec a KKMachineTemplate copies, under
/// `spec.template.spec`.
pub fn validate_kkmachinetemplate(template: &KKMachineTemplate) -> Result<(), ValidationErrors> {
    Errors(validate_kkmachine_spec(
        "spec.template.spec",
        &template.spec.template.spec,
    ))
    .finish("KKMachineTemplate", object_name(template))
}

/// The rules of a KKMachine spec at `prefix` (`spec`, or `spec.template.spec`): a
/// `kk://` provider ID, an instance ID that is an object name, roles not repeated, the
/// container manager (known type, versions, CRI socket) and the repository (ISO
/// `""`/`none`/`auto`/a file name; package names apt and yum take, nothing a shell reads).
pub fn validate_kkmachine_spec(prefix: &str, spec: &KKMachineSpec) -> Vec<FieldError> {
    let mut e = Errors::default();
    if let Some(id) = &spec.provider_id {
        e.check(
            &format!("{}.providerID", prefix),
            id,
            |s| s.starts_with("kk://") && is_safe_text(s),
            "kk://<namespace>/<instance>",
        );
        if id.is_empty() {
            e.push(
                FieldErrorKind::Invalid,
                &format!("{}.providerID", prefix),
                "kk://<namespace>/<instance> (or no field)",
                "nothing",
            );
        }
    }
    if let Some(id) = &spec.instance_id {
        e.check(
            &format!("{}.instanceID", prefix),
            id,
            is_dns1123_subdomain,
            "the name of a KKInstance",
        );
    }
    validate_roles(&mut e, &format!("{}.roles", prefix), &spec.roles);
    validate_container_manager(
        &mut e,
        &format!("{}.containerManager", prefix),
        &spec.container_manager,
    );
    if let Some(r) = &spec.repository {
        validate_repository(&mut e, &format!("{}.repository", prefix), r);
    }
    e.0
}

/// Validates a KKInstance: its name, addresses, roles, arch, SSH auth (with a credential),
/// container manager and repository, by the same rules as KKCluster's instances and
/// KKMachine's software.
pub fn validate_kkinstance(instance: &KKInstance) -> Result<(), ValidationErrors> {
    let mut e = Errors::default();
    let s = &instance.spec;
    validate_name(&mut e, "spec.name", &s.name);
    validate_address(&mut e, "spec.address", &s.address, true);
    validate_address(&mut e, "spec.internalAddress", &s.internal_address, false);
    validate_roles(&mut e, "spec.roles", &s.roles);
    if !s.arch.is_empty() {
        e.one_of("spec.arch", &s.arch, &ARCHES);
    }
    validate_auth(&mut e, "spec.auth", &s.auth);
    if !has_credential(&s.auth) {
        e.push(
            FieldErrorKind::Required,
            "spec.auth",
            "a password, privateKey, privateKeyPath or secret",
            "none",
        );
    }
    validate_container_manager(&mut e, "spec.containerManager", &s.container_manager);
    if let Some(r) = &s.repository {
        validate_repository(&mut e, "spec.repository", r);
    }
    e.finish("KKInstance", object_name(instance))
}

fn validate_container_manager(e: &mut Errors, p: &str, cm: &ContainerManager) {
    let socket_ok = |s: &str| (s.starts_with("unix:///") || s.starts_with('/')) && is_safe_text(s);
    e.check(
        &format!("{}.criSocket", p),
        &cm.cri_socket,
        socket_ok,
        "unix:///path/to/cri.sock",
    );
    // A CRI socket alone means "use the runtime that is there": no type needed.
    if !cm.type_.is_empty() || cm.cri_socket.is_empty() {
        e.one_of(&format!("{}.type", p), &cm.type_, &CONTAINER_MANAGERS);
    }
    for (field, v) in [
        ("version", &cm.version),
        ("crictlVersion", &cm.crictl_version),
        ("criDockerdVersion", &cm.cri_dockerd_version),
    ] {
        e.check(
            &format!("{}.{}", p, field),
            v,
            is_version,
            "a version such as 1.6.4 or v1.24.0",
        );
    }
    if !cm.cri_dockerd_version.is_empty() && cm.type_ == CONTAINERD_TYPE {
        e.push(
            FieldErrorKind::Forbidden,
            &format!("{}.criDockerdVersion", p),
            "no cri-dockerd version with containerd (it is for type docker)",
            found(&cm.cri_dockerd_version),
        );
    }
}

fn validate_repository(e: &mut Errors, p: &str, r: &Repository) {
    if !matches!(r.iso.as_str(), "" | "none" | "auto") && !is_file_name(&r.iso) {
        e.push(
            FieldErrorKind::Invalid,
            &format!("{}.iso", p),
            "\"\" (no packages), \"none\" (the machine's repositories), \"auto\" or an ISO file name",
            found(&r.iso),
        );
    }
    let mut seen = BTreeMap::new();
    for (i, pkg) in r.packages.iter().enumerate() {
        let path = format!("{}.packages[{}]", p, i);
        if !is_package_name(pkg) {
            e.push(
                FieldErrorKind::Invalid,
                &path,
                "a package name (letters, digits, . _ + - : ~ =)",
                found(pkg),
            );
        }
        e.unique(&mut seen, &path, pkg);
    }
}
