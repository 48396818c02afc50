//! FAKE kubelet (stands in for the real kubelet, which would need a working container
//! runtime and API server): `kubelet --version`, and the service itself.
//!
//! Checks, as the service (any other arguments): no flag removed before v1.28
//! (`--network-plugin`, `--container-runtime`, klog's `--logtostderr`…); `--config=<file>` exists and is a
//! KubeletConfiguration whose every field is known ([`crate::kubeadm_api`]) — else exit 1,
//! as the real one crash-loops until kubeadm wrote it — and a `--kubeconfig` or
//! `--bootstrap-kubeconfig` that exists. Then it journals the call and sleeps until killed.
//! Leaves nothing.

use crate::{fail, kubeadm_api, Call, Res};

/// kubelet flags removed before v1.28: dockershim's (v1.24), klog's (v1.26),
/// `--container-runtime` (v1.27).
const REMOVED_FLAGS: &[&str] = &[
    "network-plugin",
    "network-plugin-mtu",
    "cni-bin-dir",
    "cni-conf-dir",
    "cni-cache-dir",
    "docker-endpoint",
    "image-pull-progress-deadline",
    "experimental-dockershim-root-directory",
    "dynamic-config-dir",
    "logtostderr",
    "alsologtostderr",
    "log-dir",
    "log-file",
    "log-file-max-size",
    "one-output",
    "skip-headers",
    "skip-log-headers",
    "add-dir-header",
    "stderrthreshold",
    "container-runtime",
];

/// Plays `kubelet` for one call: checks its arguments and files like the real tool, then
/// records or refuses it.
pub fn run(call: &mut Call) -> Res {
    if call.args == ["--version"] {
        println!("Kubernetes {}", call.version);
        return Ok(());
    }
    if !call.args.first().is_some_and(|a| a.starts_with('-')) {
        return call.unsupported();
    }
    // Flags the kubelet no longer has in any version kk installs (v1.28+): the real one
    // exits at once on them.
    for a in &call.args {
        let name = a.trim_start_matches('-').split('=').next().unwrap_or("");
        if a.starts_with("--") && REMOVED_FLAGS.contains(&name) {
            return fail(format!(
                "failed to parse kubelet flag: unknown flag: --{} (removed before Kubernetes v1.28)",
                name
            ));
        }
    }
    let flag = |name: &str| -> Option<String> {
        let eq = format!("--{}=", name);
        let bare = format!("--{}", name);
        let args = &call.args;
        args.iter().enumerate().find_map(|(i, a)| {
            a.strip_prefix(&eq)
                .map(str::to_string)
                .or_else(|| (*a == bare).then(|| args.get(i + 1).cloned()).flatten())
        })
    };
    let (config, kubeconfig, bootstrap) = (
        flag("config"),
        flag("kubeconfig"),
        flag("bootstrap-kubeconfig"),
    );
    let Some(config) = config else {
        return fail(
            "--config=<file> is required (kubeadm's drop-in passes /var/lib/kubelet/config.yaml)",
        );
    };
    let text = call.read_input(&config)?;
    let version = call.version.clone();
    let docs = serde_yaml::from_str::<serde_yaml::Value>(&text)
        .map_err(|e| format!("not YAML: {}", e))
        .and_then(|doc| {
            kubeadm_api::check_doc(&version, "KubeletConfiguration", &doc).map_err(|e| e.join("; "))
        });
    if let Err(e) = docs {
        return fail(format!("{}: not a KubeletConfiguration: {}", config, e));
    }
    if kubeconfig.is_none() && bootstrap.is_none() {
        return fail("--kubeconfig or --bootstrap-kubeconfig is required");
    }
    let present = [&kubeconfig, &bootstrap]
        .into_iter()
        .flatten()
        .any(|p| crate::exists(p));
    if !present {
        return fail(format!(
            "neither --kubeconfig {:?} nor --bootstrap-kubeconfig {:?} exists (kubeadm init/join writes them)",
            kubeconfig.unwrap_or_default(),
            bootstrap.unwrap_or_default()
        ));
    }
    // Running: journal now, then serve until systemd stops the unit.
    crate::journal(call, 0, None);
    println!(
        "FAKE kubelet {}: running (it does nothing until stopped)",
        call.version
    );
    loop {
        std::thread::sleep(std::time::Duration::from_secs(3600));
    }
}
