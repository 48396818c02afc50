//! Real validators for what the roles render (scripts/test installs them):
//! - Kubernetes objects against the schema of a Kubernetes version: `kubernetes-validate
//!   --strict` (PyPI) from the virtualenv /usr/local/lib/kk-test/venv;
//! - haproxy's configuration: Debian's `haproxy -c`;
//! - systemd units: `systemd-analyze verify` on a test-bed host (real systemd).

use std::path::Path;
use std::process::Command;

use testbed::artifacts::validators::venv_bin;

/// What kubernetes-validate made of a file whose objects all validated (or had no schema).
#[derive(Debug, Default)]
pub struct K8sValidation {
    /// `pod/kube-vip`, `storageclass/local`…: objects that passed the schema.
    pub passed: Vec<String>,
    /// `crd.projectcalico.org/v1 IPPool`: objects of kinds the version's schema does not
    /// know (custom resources, or kinds removed in that version): not validated. Callers
    /// decide whether that is expected.
    pub unknown_kinds: Vec<String>,
    /// Everything it printed.
    pub output: String,
}

/// `v1.30.8` → `1.30`: kubernetes-validate 1.37.0 has the schemas of 1.25 … 1.37.
fn schema_version(k8s_version: &str) -> String {
    let v = k8s_version.trim_start_matches('v');
    let mut it = v.split('.');
    let (maj, min) = (it.next().unwrap_or(""), it.next().unwrap_or(""));
    let m: u32 = min
        .parse()
        .unwrap_or_else(|_| panic!("not a Kubernetes version: {}", k8s_version));
    assert!(
        maj == "1" && (25..=37).contains(&m),
        "kubernetes-validate has schemas for v1.25 … v1.37, not {}",
        k8s_version
    );
    format!("1.{}", m)
}

/// Validates every object of a (multi-document) YAML text against the Kubernetes schema
/// of `k8s_version` (`v1.30.8`) with `kubernetes-validate --strict` (unknown fields are
/// errors). `Err` holds its ERROR lines (and its whole output); objects of kinds without a
/// schema are listed in `unknown_kinds`, not errors.
pub fn kubernetes_validate(k8s_version: &str, yaml_text: &str) -> Result<K8sValidation, String> {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("objects.yaml");
    std::fs::write(&file, yaml_text).unwrap();
    let out = Command::new(venv_bin("kubernetes-validate"))
        .args(["--strict", "-k", &schema_version(k8s_version)])
        .arg(&file)
        .output()
        .expect("run kubernetes-validate");
    let output = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let mut v = K8sValidation {
        output: output.clone(),
        ..Default::default()
    };
    let mut errors = Vec::new();
    for line in output.lines() {
        if let Some(rest) = line.strip_prefix("INFO ") {
            if let Some((_, r)) = rest.split_once(" passed for resource ") {
                v.passed
                    .push(r.split(" against ").next().unwrap_or(r).to_string());
            }
        } else if let Some(rest) = line.strip_prefix("WARN ") {
            // "Couldn't find schema for kind IPPool with api version crd.projectcalico.org/v1 for …"
            match rest.split_once("Couldn't find schema for kind ") {
                Some((_, r)) => {
                    let kind = r.split(' ').next().unwrap_or("");
                    let api = r
                        .split_once(" with api version ")
                        .map(|(_, a)| a.split(' ').next().unwrap_or(""))
                        .unwrap_or("");
                    v.unknown_kinds.push(format!("{} {}", api, kind));
                }
                None => errors.push(line.to_string()),
            }
        } else if line.starts_with("ERROR ") || line.starts_with("Couldn't parse") {
            errors.push(line.to_string());
        }
    }
    if !out.status.success() || !errors.is_empty() {
        if errors.is_empty() {
            errors.push(format!("kubernetes-validate exited with {}", out.status));
        }
        return Err(format!("{}\n--- output\n{}", errors.join("\n"), output));
    }
    if v.passed.is_empty() && v.unknown_kinds.is_empty() {
        return Err(format!(
            "no Kubernetes object in the text\n--- output\n{}",
            output
        ));
    }
    Ok(v)
}

/// [`kubernetes_validate`] that must pass with no unknown kinds; panics naming `what`.
pub fn assert_kubernetes_valid(k8s_version: &str, what: &str, yaml_text: &str) -> K8sValidation {
    let v = kubernetes_validate(k8s_version, yaml_text).unwrap_or_else(|e| {
        panic!(
            "{} is not valid for Kubernetes {}:\n{}\n--- text\n{}",
            what, k8s_version, e, yaml_text
        )
    });
    assert!(
        v.unknown_kinds.is_empty(),
        "{}: kinds without a schema in Kubernetes {}: {:?}",
        what,
        k8s_version,
        v.unknown_kinds
    );
    v
}

/// Checks a haproxy configuration with the real `haproxy -c -f` (Debian's haproxy);
/// `Err` holds its output.
pub fn haproxy_check(cfg_text: &str) -> Result<(), String> {
    let bin = ["/usr/sbin/haproxy", "/usr/bin/haproxy"]
        .into_iter()
        .find(|p| Path::new(p).is_file())
        .expect("haproxy is needed: apt-get install haproxy (scripts/test does)");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("haproxy.cfg");
    std::fs::write(&file, cfg_text).unwrap();
    let out = Command::new(bin)
        .args(["-c", "-f"])
        .arg(&file)
        .output()
        .expect("run haproxy -c");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // haproxy -c exits 0 with [WARNING]s: a warning is a finding too.
    if out.status.success() && !text.contains("[WARNING]") && !text.contains("[ALERT]") {
        Ok(())
    } else {
        Err(format!("haproxy -c: {}\n{}", out.status, text))
    }
}

/// Runs `systemd-analyze verify <units…>` on test-bed host `i` (the units must be on that
/// host, their ExecStart binaries too: systemd checks they exist and are executable, and a
/// `Requires=` unit must exist; a missing `Wants=`/`After=` unit is fine).
/// `Err` holds what it reported: systemd-analyze prints unknown keys, bad values and missing
/// binaries but exits 0 for some of them, so any output is a finding.
pub fn systemd_verify(bed: &testbed::TestBed, i: usize, units: &[&str]) -> Result<(), String> {
    let cmd = format!("systemd-analyze verify {} 2>&1", units.join(" "));
    let out = bed
        .exec(i, &cmd)
        .unwrap_or_else(|e| panic!("systemd-analyze on host {}: {}", i, e));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let findings: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    if out.status.success() && findings.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "systemd-analyze verify {} on host {}: {}\n{}",
            units.join(" "),
            i,
            out.status,
            findings.join("\n")
        ))
    }
}

/// Checks a kubeadm config file (multi-document) field by field against kubeadm's
/// documented API for `k8s_version` (v1beta3 below v1.31, v1beta4 from v1.31; plus
/// KubeletConfiguration and KubeProxyConfiguration): unknown fields, wrong scalar types and
/// the wrong apiVersion are errors naming the field's path. The kinds found, in order.
pub fn kubeadm_config(k8s_version: &str, yaml_text: &str) -> Result<Vec<String>, Vec<String>> {
    kk_fakes::kubeadm_api::check_documents(k8s_version, yaml_text)
        .map(|docs| docs.into_iter().map(|(kind, _)| kind).collect())
}

/// [`kubeadm_config`] that must pass; panics naming `what` and every error.
pub fn assert_kubeadm_config(k8s_version: &str, what: &str, yaml_text: &str) -> Vec<String> {
    kubeadm_config(k8s_version, yaml_text).unwrap_or_else(|errs| {
        panic!(
            "{} is not a valid kubeadm config for {}:\n  {}\n--- text\n{}",
            what,
            k8s_version,
            errs.join("\n  "),
            yaml_text
        )
    })
}

/// [`systemd_verify`] of rendered unit files that are not installed: writes `files`
/// (`(relative path, content)`, e.g. `("kubelet.service", …)` and
/// `("kubelet.service.d/10-kubeadm.conf", …)`: drop-ins beside a unit are read with it) into
/// a scratch directory on host `i`, verifies every unit at its top level, removes it.
pub fn systemd_verify_files(
    bed: &testbed::TestBed,
    i: usize,
    files: &[(&str, &str)],
) -> Result<(), String> {
    let dir = format!("/tmp/kk-verify-{}", std::process::id());
    let local = tempfile::tempdir().unwrap();
    for (k, (rel, content)) in files.iter().enumerate() {
        let f = local.path().join(k.to_string());
        std::fs::write(&f, content).unwrap();
        super::fakes::push(bed, i, &f, &format!("{}/{}", dir, rel), "644");
    }
    let units: Vec<String> = files
        .iter()
        .filter(|(rel, _)| !rel.contains('/'))
        .map(|(rel, _)| format!("{}/{}", dir, rel))
        .collect();
    let refs: Vec<&str> = units.iter().map(String::as_str).collect();
    let r = systemd_verify(bed, i, &refs);
    let _ = bed.exec(i, &format!("rm -rf {}", dir));
    r
}
