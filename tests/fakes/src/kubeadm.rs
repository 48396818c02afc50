//! FAKE kubeadm (stands in for the real kubeadm, which needs a container runtime running
//! an API server): `version -o short`, `init`, `init phase upload-certs|upload-config
//! kubeadm|control-plane apiserver`,
//! `token create --print-join-command`, `join`, `certs renew all`, `reset -f`, and the two
//! calls kubespray's download role makes: `config validate --config F` and
//! `config images list --config F`.
//!
//! Checks: every config it is given, field by field against kubeadm's API of its own
//! version ([`crate::kubeadm_api`]: v1beta3 below v1.31, v1beta4 from v1.31); init needs an
//! InitConfiguration and a ClusterConfiguration whose kubernetesVersion kubeadm can deploy;
//! join needs a bootstrap token with CA hashes (or unsafeSkipCAVerification) and, for a
//! control plane, a 64-hex certificateKey; a control plane holding the cluster CA checks
//! the hashes pin it. init and join refuse to run over what a previous one left (admin.conf,
//! kubelet.conf: stricter than kubeadm, `--ignore-preflight-errors` does not lift that).
//! kubeadm's own preflight checks that need no API server, by their names (ignorable with
//! `--ignore-preflight-errors`/nodeRegistration.ignorePreflightErrors as in kubeadm): init —
//! external etcd client certificate files exist (ExternalEtcdClientCertificates), a local
//! etcd's data dir is empty (DirAvailable--var-lib-etcd), no kube-apiserver/controller-manager/
//! scheduler/etcd static pod yet (other static pods, e.g. kube-vip, are fine); join — an
//! empty /etc/kubernetes/manifests (DirAvailable--etc-kubernetes-manifests), no
//! bootstrap-kubelet.conf, on a worker no /etc/kubernetes/pki/ca.crt
//! (FileAvailable--etc-kubernetes-pki-ca.crt), on a control plane no control-plane static
//! pod yet.
//! Leaves: the kubeconfigs under /etc/kubernetes, /var/lib/kubelet/config.yaml and
//! kubeadm-flags.env, pki/ca.crt when absent (kk's CA is kept), then restarts the kubelet
//! unit as kubeadm's kubelet-start phase does and checks it stays up; init and upload-config
//! keep the ClusterConfiguration as the kubeadm-config ConfigMap in this host's fake cluster
//! state (the FAKE kubectl reads it there). Nothing else: no static pod manifests, no
//! certificates beyond ca.crt.

use base64::Engine;
use serde_yaml::Value;
use sha2::{Digest, Sha256};

use crate::{exists, fail, kubeadm_api, take_bool, take_flag, write_file, Call, Fail, Res};

const K: &str = "/etc/kubernetes";
const CA: &str = "/etc/kubernetes/pki/ca.crt";
const ADMIN: &str = "/etc/kubernetes/admin.conf";
const KUBELET_CONF: &str = "/etc/kubernetes/kubelet.conf";
const KUBELET_CONFIG: &str = "/var/lib/kubelet/config.yaml";
const KUBELET_FLAGS: &str = "/var/lib/kubelet/kubeadm-flags.env";

/// Plays `kubeadm` for one call: checks its arguments and files like the real tool, then
/// records or refuses it.
pub fn run(call: &mut Call) -> Res {
    let mut args = call.args.clone();
    // Verbosity flags change nothing here.
    args.retain(|a| !(a.starts_with("-v=") || a.starts_with("--v=")));
    let words: Vec<&str> = args.iter().take(3).map(String::as_str).collect();
    match words.as_slice() {
        ["version", ..] => {
            let mut rest = args[1..].to_vec();
            let out = take_flag(&mut rest, "--output", Some("-o"))?;
            if out.as_deref() != Some("short") || !rest.is_empty() {
                return call.unsupported();
            }
            println!("{}", call.version);
            Ok(())
        }
        ["init", "phase", "upload-certs", ..] => upload_certs(call, args[3..].to_vec()),
        ["init", "phase", "upload-config"]
            if args.get(3).map(String::as_str) == Some("kubeadm") =>
        {
            upload_config(call, args[4..].to_vec())
        }
        ["init", "phase", "control-plane"]
            if args.get(3).map(String::as_str) == Some("apiserver") =>
        {
            let mut rest = args[4..].to_vec();
            let docs = config(call, &mut rest)?;
            if !rest.is_empty() || doc(&docs, "ClusterConfiguration").is_none() {
                return call.unsupported();
            }
            need_cluster(ADMIN)?;
            println!("[control-plane] FAKE kubeadm: kube-apiserver's static pod would be rewritten (nothing written)");
            Ok(())
        }
        ["init", "phase", ..] => call.unsupported(),
        ["init", ..] => init(call, args[1..].to_vec()),
        ["token", "create", ..] => token_create(call, args[2..].to_vec()),
        ["join", ..] => join(call, args[1..].to_vec()),
        ["certs", "renew", "all"] if args.len() == 3 => {
            need_cluster(ADMIN)?;
            println!("[renew] FAKE kubeadm: certificates renewed (nothing was written)");
            Ok(())
        }
        ["reset", ..] => reset(call, args[1..].to_vec()),
        ["config", "validate", ..] => {
            let mut rest = args[2..].to_vec();
            config(call, &mut rest)?;
            if !rest.is_empty() {
                return call.unsupported();
            }
            println!("ok");
            Ok(())
        }
        ["config", "images", "list"] => {
            let mut rest = args[3..].to_vec();
            let docs = config(call, &mut rest)?;
            if !rest.is_empty() {
                return call.unsupported();
            }
            for image in images(&call.version, doc(&docs, "ClusterConfiguration")) {
                println!("{image}");
            }
            Ok(())
        }
        _ => call.unsupported(),
    }
}

/// Reads and checks `--config`; the documents by kind.
fn config(call: &mut Call, args: &mut Vec<String>) -> Result<Vec<(String, Value)>, Fail> {
    let Some(path) = take_flag(args, "--config", None)? else {
        return fail("--config is required (kk passes every input as a file)");
    };
    let text = call.read_input(&path)?;
    kubeadm_api::check_documents(&call.version, &text).or_else(|errs| {
        fail(format!(
            "{}: not a valid kubeadm {} config:\n  {}",
            path,
            call.version,
            errs.join("\n  ")
        ))
    })
}

/// The images `kubeadm config images list` prints for a ClusterConfiguration (kubeadm's
/// defaults where the config leaves them out): the control plane's at kubernetesVersion,
/// CoreDNS, pause, and etcd only for a local etcd.
fn images(version: &str, cluster: Option<&Value>) -> Vec<String> {
    let field = |path: &[&str]| {
        let mut v = cluster?;
        for p in path {
            v = v.get(*p)?;
        }
        v.as_str().map(str::to_string)
    };
    let repo = field(&["imageRepository"]).unwrap_or_else(|| "registry.k8s.io".into());
    let kube = field(&["kubernetesVersion"]).unwrap_or_else(|| version.to_string());
    let mut out: Vec<String> = [
        "kube-apiserver",
        "kube-controller-manager",
        "kube-scheduler",
        "kube-proxy",
    ]
    .iter()
    .map(|c| format!("{repo}/{c}:{kube}"))
    .collect();
    let dns_repo = field(&["dns", "imageRepository"]).unwrap_or_else(|| format!("{repo}/coredns"));
    let dns_tag = field(&["dns", "imageTag"]).unwrap_or_else(|| "v1.12.1".into());
    out.push(format!("{dns_repo}/coredns:{dns_tag}"));
    let pause = if crate::parse_minor(version) >= (1, 34) {
        "3.10.1"
    } else {
        "3.10"
    };
    out.push(format!("{repo}/pause:{pause}"));
    let external = cluster
        .and_then(|c| c.get("etcd"))
        .and_then(|e| e.get("external"));
    if external.is_none() {
        let etcd_repo =
            field(&["etcd", "local", "imageRepository"]).unwrap_or_else(|| repo.clone());
        let etcd_tag = field(&["etcd", "local", "imageTag"]).unwrap_or_else(|| "3.6.5-0".into());
        out.push(format!("{etcd_repo}/etcd:{etcd_tag}"));
    }
    out
}

fn doc<'a>(docs: &'a [(String, Value)], kind: &str) -> Option<&'a Value> {
    docs.iter().find(|(k, _)| k == kind).map(|(_, d)| d)
}

fn need_cluster(kubeconfig: &str) -> Res {
    if !exists(kubeconfig) {
        return fail(format!(
            "{} does not exist: no cluster was initialised on this host (kubeadm init first)",
            kubeconfig
        ));
    }
    Ok(())
}

fn preflight_file(path: &str) -> Res {
    if exists(path) {
        return fail(format!(
            "[preflight] Some fatal errors occurred:\n\t[ERROR FileAvailable-{}]: {} already exists",
            path.replace('/', "-"),
            path
        ));
    }
    Ok(())
}

/// kubeadm's preflight checks the fake can make on a host, by kubeadm's check names;
/// `--ignore-preflight-errors` and nodeRegistration.ignorePreflightErrors (names, or
/// `all`, case-insensitive) make one non-fatal, as with kubeadm.
struct Preflight {
    ignored: Vec<String>,
    errors: Vec<String>,
}

impl Preflight {
    fn new(flag: Option<String>, reg: &Value) -> Preflight {
        let mut ignored: Vec<String> = flag
            .unwrap_or_default()
            .split(',')
            .map(|s| s.trim().to_lowercase())
            .filter(|s| !s.is_empty())
            .collect();
        if let Some(l) = reg["ignorePreflightErrors"].as_sequence() {
            ignored.extend(l.iter().filter_map(Value::as_str).map(str::to_lowercase));
        }
        Preflight {
            ignored,
            errors: Vec::new(),
        }
    }

    fn check(&mut self, name: &str, failed: bool, msg: String) {
        let lname = name.to_lowercase();
        if failed && !self.ignored.iter().any(|i| *i == "all" || *i == lname) {
            self.errors.push(format!("\t[ERROR {}]: {}", name, msg));
        }
    }

    /// FileAvailable-<path>: the file must not exist yet.
    fn file_available(&mut self, path: &str) {
        let name = format!("FileAvailable-{}", path.replace('/', "-"));
        self.check(&name, exists(path), format!("{} already exists", path));
    }

    /// FileAvailable for the control plane's static pods (kubeadm writes them; other
    /// static pods in /etc/kubernetes/manifests, e.g. kube-vip, are fine since v1.23).
    fn control_plane_manifests(&mut self) {
        for c in [
            "kube-apiserver",
            "kube-controller-manager",
            "kube-scheduler",
            "etcd",
        ] {
            self.file_available(&format!("{}/manifests/{}.yaml", K, c));
        }
    }

    /// DirAvailable-<path>: the directory must be absent or empty.
    fn dir_available(&mut self, path: &str) {
        let full = crate::host_path(path);
        let busy = std::fs::read_dir(&full).is_ok_and(|mut d| d.next().is_some());
        let name = format!("DirAvailable-{}", path.replace('/', "-"));
        self.check(&name, busy, format!("{} is not empty", path));
    }

    fn finish(self) -> Res {
        if self.errors.is_empty() {
            return Ok(());
        }
        fail(format!(
            "error execution phase preflight: [preflight] Some fatal errors occurred:\n{}\n[preflight] If you know what you are doing, you can make a check non-fatal with `--ignore-preflight-errors=...`",
            self.errors.join("\n")
        ))
    }
}

/// The control-plane version kubeadm `v` can deploy: its own minor or the one before.
fn check_kubernetes_version(call: &Call, cluster: &Value) -> Res {
    let Some(want) = cluster["kubernetesVersion"].as_str() else {
        return Ok(());
    };
    let (maj, min) = crate::parse_minor(want);
    let (kmaj, kmin) = call.minor();
    if maj != kmaj || !(min == kmin || min + 1 == kmin) {
        return fail(format!(
            "ClusterConfiguration.kubernetesVersion {}: kubeadm {} deploys only v{}.{} or v{}.{} control planes",
            want,
            call.version,
            kmaj,
            kmin,
            kmaj,
            kmin.saturating_sub(1)
        ));
    }
    Ok(())
}

fn init(call: &mut Call, mut args: Vec<String>) -> Res {
    let skip = take_flag(&mut args, "--skip-phases", None)?.unwrap_or_default();
    let ignore = take_flag(&mut args, "--ignore-preflight-errors", None)?;
    let upload = take_bool(&mut args, "--upload-certs");
    // kubeadm takes every `skip-*` flag beside --config; this one keeps the default bootstrap
    // token out of init's output (the fake prints none anyway).
    take_bool(&mut args, "--skip-token-print");
    let docs = config(call, &mut args)?;
    if !args.is_empty() {
        return call.unsupported();
    }
    let (Some(init), Some(cluster)) = (
        doc(&docs, "InitConfiguration"),
        doc(&docs, "ClusterConfiguration"),
    ) else {
        return fail("kk's init config must hold an InitConfiguration and a ClusterConfiguration");
    };
    if doc(&docs, "JoinConfiguration").is_some() {
        return fail("a JoinConfiguration has no place in an init config");
    }
    check_kubernetes_version(call, cluster)?;
    preflight_file(ADMIN)?;
    let mut pre = Preflight::new(ignore, &init["nodeRegistration"]);
    pre.control_plane_manifests();
    let external = &cluster["etcd"]["external"];
    if external.is_null() {
        let dir = cluster["etcd"]["local"]["dataDir"]
            .as_str()
            .unwrap_or("/var/lib/etcd");
        pre.dir_available(dir);
    }
    for key in ["caFile", "certFile", "keyFile"] {
        if let Some(f) = external[key].as_str().filter(|f| !f.is_empty()) {
            pre.check(
                "ExternalEtcdClientCertificates",
                !exists(f),
                format!(
                    "{} doesn't exist (ClusterConfiguration.etcd.external.{})",
                    f, key
                ),
            );
        }
    }
    pre.finish()?;
    let port = init["localAPIEndpoint"]["bindPort"]
        .as_u64()
        .unwrap_or(6443);
    let endpoint = match cluster["controlPlaneEndpoint"].as_str() {
        Some(e) if e.contains(':') && !e.ends_with(']') => e.to_string(),
        Some(e) if !e.is_empty() => format!("{}:{}", e, port),
        _ => match init["localAPIEndpoint"]["advertiseAddress"].as_str() {
            Some(a) => format!("{}:{}", a, port),
            None => {
                return fail(
                    "neither controlPlaneEndpoint nor localAPIEndpoint.advertiseAddress is set",
                )
            }
        },
    };
    let node = node_name(&init["nodeRegistration"]);
    let ca = ensure_ca()?;
    let server = format!("https://{}", endpoint);
    write_file(ADMIN, &kubeconfig(&server, &ca, "kubernetes-admin"))?;
    if call.minor() >= (1, 29) {
        write_file(
            &format!("{}/super-admin.conf", K),
            &kubeconfig(&server, &ca, "kubernetes-super-admin"),
        )?;
    }
    write_file(
        KUBELET_CONF,
        &kubeconfig(&server, &ca, &format!("system:node:{}", node)),
    )?;
    for (f, user) in [
        ("controller-manager.conf", "system:kube-controller-manager"),
        ("scheduler.conf", "system:kube-scheduler"),
    ] {
        write_file(&format!("{}/{}", K, f), &kubeconfig(&server, &ca, user))?;
    }
    kubelet_files(
        doc(&docs, "KubeletConfiguration"),
        &init["nodeRegistration"],
    )?;
    store_kubeadm_config(cluster)?;
    start_kubelet(&skip)?;
    println!(
        "[init] FAKE kubeadm {}: control plane initialised at {}",
        call.version, server
    );
    println!("Your Kubernetes control-plane has initialized successfully!");
    if upload {
        print_certificate_key();
    }
    Ok(())
}

fn node_name(reg: &Value) -> String {
    reg["name"].as_str().map(str::to_string).unwrap_or_else(|| {
        std::fs::read_to_string("/proc/sys/kernel/hostname")
            .unwrap_or_default()
            .trim()
            .to_string()
    })
}

/// /etc/kubernetes/pki/ca.crt as it is (kk copies its CA there first), else a FAKE one.
fn ensure_ca() -> Result<String, Fail> {
    if let Ok(ca) = std::fs::read_to_string(crate::host_path(CA)) {
        return Ok(ca);
    }
    let ca = "-----BEGIN CERTIFICATE-----\nRkFLRSBrdWJlYWRtIENB\n-----END CERTIFICATE-----\n";
    write_file(CA, ca)?;
    Ok(ca.to_string())
}

fn kubeconfig(server: &str, ca: &str, user: &str) -> String {
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    format!(
        "# FAKE kubeconfig written by the FAKE kubeadm (kk tests)\napiVersion: v1\nkind: Config\nclusters:\n- name: kubernetes\n  cluster:\n    certificate-authority-data: {ca}\n    server: {server}\ncontexts:\n- name: {user}@kubernetes\n  context:\n    cluster: kubernetes\n    user: {user}\ncurrent-context: {user}@kubernetes\npreferences: {{}}\nusers:\n- name: {user}\n  user:\n    client-certificate-data: {cert}\n    client-key-data: {key}\n",
        ca = b64(ca),
        server = server,
        user = user,
        cert = b64(&format!("FAKE client certificate of {}", user)),
        key = b64("FAKE client key"),
    )
}

/// /var/lib/kubelet/config.yaml (the given KubeletConfiguration, or kubeadm's minimal
/// default) and kubeadm-flags.env (criSocket and kubeletExtraArgs as flags).
fn kubelet_files(kubelet: Option<&Value>, reg: &Value) -> Res {
    let cfg = match kubelet {
        Some(k) => serde_yaml::to_string(k).unwrap(),
        None => "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncgroupDriver: systemd\n".to_string(),
    };
    write_file(KUBELET_CONFIG, &cfg)?;
    let mut flags = Vec::new();
    if let Some(s) = reg["criSocket"].as_str() {
        flags.push(format!("--container-runtime-endpoint={}", s));
    }
    match &reg["kubeletExtraArgs"] {
        Value::Mapping(m) => {
            for (k, v) in m {
                flags.push(format!(
                    "--{}={}",
                    k.as_str().unwrap_or(""),
                    v.as_str().unwrap_or("")
                ));
            }
        }
        Value::Sequence(l) => {
            for a in l {
                flags.push(format!(
                    "--{}={}",
                    a["name"].as_str().unwrap_or(""),
                    a["value"].as_str().unwrap_or("")
                ));
            }
        }
        _ => {}
    }
    write_file(
        KUBELET_FLAGS,
        &format!("KUBELET_KUBEADM_ARGS=\"{}\"\n", flags.join(" ")),
    )
}

/// kubeadm's kubelet-start phase: restart the unit; the fake also checks it stays up
/// (the real kubeadm would time out waiting for a kubelet that crash-loops).
fn start_kubelet(skip_phases: &str) -> Res {
    if skip_phases.split(',').any(|p| p == "kubelet-start") {
        return Ok(());
    }
    crate::systemctl(&["restart", "kubelet"])?;
    if std::env::var_os("KK_FAKE_ROOT").is_some() {
        return Ok(());
    }
    std::thread::sleep(std::time::Duration::from_millis(700));
    crate::systemctl(&["is-active", "--quiet", "kubelet"]).or_else(|_| {
        fail("the kubelet is not running after `systemctl restart kubelet` (see `journalctl -u kubelet`): kubeadm would time out waiting for it")
    })
}

/// The CA's discovery hash as kubeadm computes it: sha256 of its SubjectPublicKeyInfo
/// (with the host's openssl); for the FAKE CA (not a certificate), sha256 of the file.
fn ca_hash() -> String {
    let path = crate::host_path(CA);
    let spki = std::process::Command::new("sh")
        .arg("-c")
        .arg("openssl x509 -pubkey -noout -in \"$1\" | openssl pkey -pubin -outform der")
        .arg("sh")
        .arg(&path)
        .output()
        .ok()
        .filter(|o| o.status.success() && !o.stdout.is_empty())
        .map(|o| o.stdout);
    let bytes = spki.unwrap_or_else(|| std::fs::read(&path).unwrap_or_default());
    hex::encode(Sha256::digest(&bytes))
}

fn print_certificate_key() {
    println!("[upload-certs] Storing the certificates in Secret \"kubeadm-certs\" in the \"kube-system\" Namespace");
    println!("[upload-certs] Using certificate key:");
    println!("{}", crate::random_hex(32));
}

fn upload_certs(call: &mut Call, mut args: Vec<String>) -> Res {
    if !take_bool(&mut args, "--upload-certs") {
        return call.unsupported();
    }
    if args.iter().any(|a| a.starts_with("--config")) {
        config(call, &mut args)?;
    }
    if !args.is_empty() {
        return call.unsupported();
    }
    need_cluster(ADMIN)?;
    print_certificate_key();
    Ok(())
}

/// kubeadm's upload-config: the ClusterConfiguration into the kubeadm-config ConfigMap (of
/// this host's fake cluster state).
fn store_kubeadm_config(cluster: &Value) -> Res {
    crate::kubectl::put_configmap(
        "kube-system",
        "kubeadm-config",
        serde_json::json!({"ClusterConfiguration": serde_yaml::to_string(cluster).unwrap()}),
    )
}

fn upload_config(call: &mut Call, mut args: Vec<String>) -> Res {
    let docs = config(call, &mut args)?;
    if !args.is_empty() {
        return call.unsupported();
    }
    need_cluster(ADMIN)?;
    let Some(cluster) = doc(&docs, "ClusterConfiguration") else {
        return fail("upload-config kubeadm needs a ClusterConfiguration in --config");
    };
    store_kubeadm_config(cluster)?;
    println!("[upload-config] Storing the configuration used in ConfigMap \"kubeadm-config\" in the \"kube-system\" Namespace");
    Ok(())
}

fn token_create(call: &mut Call, mut args: Vec<String>) -> Res {
    if !take_bool(&mut args, "--print-join-command") {
        return call.unsupported();
    }
    if let Some(ttl) = take_flag(&mut args, "--ttl", None)? {
        if !is_duration(&ttl) {
            return fail(format!("--ttl {:?}: not a duration (e.g. 24h0m0s)", ttl));
        }
    }
    let kc = take_flag(&mut args, "--kubeconfig", None)?.unwrap_or_else(|| ADMIN.to_string());
    if !args.is_empty() {
        return call.unsupported();
    }
    need_cluster(&kc)?;
    let text = call.read_input(&kc)?;
    let server = crate::kubeconfig_server(&text, &kc)?;
    println!(
        "kubeadm join {} --token {}.{} --discovery-token-ca-cert-hash sha256:{}",
        server.trim_start_matches("https://"),
        crate::random_token_part(6),
        crate::random_token_part(16),
        ca_hash()
    );
    Ok(())
}

/// Go's time.ParseDuration syntax: `24h0m0s`, `2h`, `90m`, `0`.
fn is_duration(s: &str) -> bool {
    if s == "0" {
        return true;
    }
    let mut num = false;
    let mut rest = s;
    while !rest.is_empty() {
        let n = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if n == 0 {
            return false;
        }
        rest = &rest[n..];
        let unit = ["ns", "us", "µs", "ms", "h", "m", "s"]
            .into_iter()
            .find(|u| rest.starts_with(u));
        let Some(u) = unit else { return false };
        rest = &rest[u.len()..];
        num = true;
    }
    num
}

fn is_token(t: &str) -> bool {
    let ok = |s: &str, n: usize| {
        s.len() == n
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
    };
    matches!(t.split_once('.'), Some((a, b)) if ok(a, 6) && ok(b, 16))
}

fn is_hex64(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

fn join(call: &mut Call, mut args: Vec<String>) -> Res {
    let skip = take_flag(&mut args, "--skip-phases", None)?.unwrap_or_default();
    let ignore = take_flag(&mut args, "--ignore-preflight-errors", None)?;
    let docs = config(call, &mut args)?;
    if !args.is_empty() {
        return call.unsupported();
    }
    let Some(j) = doc(&docs, "JoinConfiguration") else {
        return fail("a join config needs a JoinConfiguration");
    };
    let bt = &j["discovery"]["bootstrapToken"];
    let token = bt["token"]
        .as_str()
        .or(j["discovery"]["tlsBootstrapToken"].as_str());
    match token {
        Some(t) if is_token(t) => {}
        Some(_) => return fail("JoinConfiguration.discovery.bootstrapToken.token: not a bootstrap token ([a-z0-9]{6}.[a-z0-9]{16})"),
        None => return fail("JoinConfiguration.discovery.bootstrapToken.token: a join needs a bootstrap token"),
    }
    let Some(endpoint) = bt["apiServerEndpoint"].as_str().filter(|e| !e.is_empty()) else {
        return fail("JoinConfiguration.discovery.bootstrapToken.apiServerEndpoint is required");
    };
    let hashes: Vec<&str> = bt["caCertHashes"]
        .as_sequence()
        .map(|l| l.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if hashes.is_empty() && bt["unsafeSkipCAVerification"].as_bool() != Some(true) {
        return fail("JoinConfiguration.discovery.bootstrapToken: caCertHashes is empty and unsafeSkipCAVerification is not true");
    }
    if let Some(h) = hashes
        .iter()
        .find(|h| !h.strip_prefix("sha256:").is_some_and(is_hex64))
    {
        return fail(format!(
            "JoinConfiguration.discovery.bootstrapToken.caCertHashes: {:?} is not sha256:<64 hex>",
            h
        ));
    }
    let cp = &j["controlPlane"];
    if !cp.is_null() && !cp["certificateKey"].as_str().is_some_and(is_hex64) {
        return fail("JoinConfiguration.controlPlane.certificateKey: a control-plane join needs the 64-hex key of `kubeadm init phase upload-certs`");
    }
    // kubeadm's join preflight (RunJoinNodeChecks, and RunInitNodeChecks for a control
    // plane): an empty /etc/kubernetes/manifests (a node carrying its own static pods, e.g.
    // kube-vip or a local balancer, must ignore DirAvailable--etc-kubernetes-manifests); no
    // kubelet kubeconfigs; on a worker no CA certificate (kubeadm fetches it); on a control
    // plane none of the static pods kubeadm writes.
    preflight_file(KUBELET_CONF)?;
    let mut pre = Preflight::new(ignore, &j["nodeRegistration"]);
    pre.dir_available(&format!("{}/manifests", K));
    pre.file_available(&format!("{}/bootstrap-kubelet.conf", K));
    let ca_path = j["caCertPath"].as_str().unwrap_or(CA);
    if cp.is_null() {
        pre.file_available(ca_path);
    } else {
        pre.control_plane_manifests();
    }
    pre.finish()?;
    // A control plane that holds the cluster CA (kk copies it there) checks the pins.
    if !cp.is_null() && !hashes.is_empty() && exists(CA) {
        let want = format!("sha256:{}", ca_hash());
        if !hashes.contains(&want.as_str()) {
            return fail(format!(
                "JoinConfiguration.discovery.bootstrapToken.caCertHashes: none is the hash of this node's cluster CA {} ({})",
                CA, want
            ));
        }
    }
    let ca = ensure_ca()?;
    let server = format!("https://{}", endpoint);
    let node = node_name(&j["nodeRegistration"]);
    write_file(
        KUBELET_CONF,
        &kubeconfig(&server, &ca, &format!("system:node:{}", node)),
    )?;
    if !cp.is_null() {
        write_file(ADMIN, &kubeconfig(&server, &ca, "kubernetes-admin"))?;
        for (f, user) in [
            ("controller-manager.conf", "system:kube-controller-manager"),
            ("scheduler.conf", "system:kube-scheduler"),
        ] {
            write_file(&format!("{}/{}", K, f), &kubeconfig(&server, &ca, user))?;
        }
    }
    kubelet_files(None, &j["nodeRegistration"])?;
    start_kubelet(&skip)?;
    println!(
        "FAKE kubeadm {}: this node has joined the cluster at {}{}",
        call.version,
        server,
        if cp.is_null() {
            ""
        } else {
            " as a control plane"
        }
    );
    Ok(())
}

fn reset(call: &mut Call, args: Vec<String>) -> Res {
    let force = args.iter().any(|a| a == "-f" || a == "--force");
    if !force {
        return call.unsupported();
    }
    let _ = crate::systemctl(&["stop", "kubelet"]);
    for f in [
        "admin.conf",
        "super-admin.conf",
        "kubelet.conf",
        "bootstrap-kubelet.conf",
        "controller-manager.conf",
        "scheduler.conf",
    ] {
        let _ = std::fs::remove_file(crate::host_path(&format!("{}/{}", K, f)));
    }
    // As kubeadm: the contents of these directories go (a real etcd is never touched).
    for d in [
        "/etc/kubernetes/manifests",
        "/var/lib/kubelet",
        "/etc/kubernetes/pki",
    ] {
        if let Ok(entries) = std::fs::read_dir(crate::host_path(d)) {
            for e in entries.flatten() {
                let p = e.path();
                let _ = if p.is_dir() {
                    std::fs::remove_dir_all(&p)
                } else {
                    std::fs::remove_file(&p)
                };
            }
        }
    }
    println!("[reset] FAKE kubeadm: deleted the kubeconfigs and the contents of /etc/kubernetes/manifests, /var/lib/kubelet, /etc/kubernetes/pki");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_tokens() {
        assert!(is_duration("24h0m0s") && is_duration("2h") && is_duration("0"));
        assert!(!is_duration("2 days") && !is_duration("h"));
        assert!(is_token("abcdef.0123456789abcdef"));
        assert!(!is_token("ABCDEF.0123456789abcdef") && !is_token("abc.def"));
    }
}
