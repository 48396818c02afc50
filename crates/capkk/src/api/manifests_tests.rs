//! The committed manifests and samples checked with real validators: `kubernetes-validate
//! --strict` (PyPI, the schemas of each Kubernetes version) for the CRDs, RBAC and
//! Deployment; the samples against the generated CRD schemas with the `jsonschema` package
//! of the same virtualenv (kubernetes-validate itself only knows built-in kinds), and
//! through the Rust types, defaulting and validation. scripts/test creates the virtualenv.

use super::*;
use crate::api::{self, crd};
use std::path::{Path, PathBuf};
use std::process::Command;
use testbed::artifacts::validators::venv_bin;

/// The Kubernetes versions the manifests are validated for: kube's k8s-openapi feature
/// (v1_33) and the newest kubernetes-validate 1.37.0 knows.
const K8S_VERSIONS: [&str; 2] = ["1.33", "1.37"];

fn config_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("config")
}

fn docs(text: &str) -> Vec<serde_yaml::Value> {
    serde_yaml::Deserializer::from_str(text)
        .map(|d| serde::Deserialize::deserialize(d).expect("YAML document"))
        .filter(|v: &serde_yaml::Value| !v.is_null())
        .collect()
}

/// The files a kustomization directory lists, recursively (paths under config/).
fn kustomized_files(dir: &Path, out: &mut Vec<String>) {
    let k: serde_yaml::Value =
        serde_yaml::from_str(&std::fs::read_to_string(dir.join("kustomization.yaml")).unwrap())
            .unwrap();
    for r in k["resources"].as_sequence().expect("resources") {
        let p = dir.join(r.as_str().unwrap());
        if p.is_dir() {
            kustomized_files(&p, out);
        } else {
            assert!(p.is_file(), "{} listed but missing", p.display());
            out.push(p.strip_prefix(config_dir()).unwrap().display().to_string());
        }
    }
}

#[test]
fn the_kustomizations_list_exactly_what_manifests_prints() {
    let mut listed = Vec::new();
    kustomized_files(&config_dir(), &mut listed);
    listed.sort();
    let mut embedded: Vec<String> = FILES.iter().map(|(p, _)| p.to_string()).collect();
    embedded.extend(
        crd::crd_files()
            .into_iter()
            .map(|(f, _)| format!("crd/bases/{}", f)),
    );
    embedded.sort();
    assert_eq!(listed, embedded);
}

#[test]
fn manifests_are_ordered_labelled_and_namespaced() {
    let all = docs(&manifests(Some("registry.example.com/kk-capkk:v0.1.0")));
    assert_eq!(all[0]["kind"].as_str(), Some("Namespace"));
    assert_eq!(all.len(), FILES.len() + 4);
    for d in &all {
        let kind = d["kind"].as_str().unwrap();
        assert_eq!(
            d["metadata"]["labels"]["cluster.x-k8s.io/provider"].as_str(),
            Some("infrastructure-kk"),
            "{kind}"
        );
        if matches!(
            kind,
            "ServiceAccount" | "Deployment" | "Role" | "RoleBinding"
        ) {
            assert_eq!(
                d["metadata"]["namespace"].as_str(),
                Some(NAMESPACE),
                "{kind}"
            );
        }
        if kind == "Deployment" {
            let c = &d["spec"]["template"]["spec"]["containers"][0];
            assert_eq!(
                c["image"].as_str(),
                Some("registry.example.com/kk-capkk:v0.1.0")
            );
            assert_eq!(c["args"][0].as_str(), Some("run"));
        }
    }
    assert!(manifests(None).contains(&format!("image: {}", DEFAULT_IMAGE)));
}

#[test]
fn clusterctl_metadata_names_this_release_and_the_contract() {
    let text = std::fs::read_to_string(config_dir().join("clusterctl/metadata.yaml")).unwrap();
    let m: serde_yaml::Value = serde_yaml::from_str(&text).unwrap();
    assert_eq!(m["kind"].as_str(), Some("Metadata"));
    let version = env!("CARGO_PKG_VERSION");
    let mut parts = version.split('.').map(|p| p.parse::<u64>().unwrap());
    let (major, minor) = (parts.next().unwrap(), parts.next().unwrap());
    let series = m["releaseSeries"].as_sequence().unwrap();
    assert!(
        series.iter().any(|s| s["major"].as_u64() == Some(major)
            && s["minor"].as_u64() == Some(minor)
            && s["contract"].as_str() == Some("v1beta1")),
        "no release series for {version} in metadata.yaml"
    );
}

#[test]
fn the_cluster_role_grants_what_the_controllers_use() {
    let role = docs(
        FILES
            .iter()
            .find(|(p, _)| *p == "rbac/role.yaml")
            .unwrap()
            .1,
    )
    .remove(0);
    let verbs = |group: &str, resource: &str| -> Vec<String> {
        let mut v: Vec<String> = role["rules"]
            .as_sequence()
            .unwrap()
            .iter()
            .filter(|r| {
                r["apiGroups"]
                    .as_sequence()
                    .unwrap()
                    .iter()
                    .any(|g| g.as_str() == Some(group))
                    && r["resources"]
                        .as_sequence()
                        .unwrap()
                        .iter()
                        .any(|x| x.as_str() == Some(resource))
            })
            .flat_map(|r| {
                r["verbs"]
                    .as_sequence()
                    .unwrap()
                    .iter()
                    .map(|x| x.as_str().unwrap().to_string())
            })
            .collect();
        v.sort();
        v
    };
    let g = api::GROUP;
    assert_eq!(
        verbs(g, "kkinstances"),
        ["create", "delete", "get", "list", "patch", "update", "watch"]
    );
    assert_eq!(
        verbs(g, "kkclusters"),
        ["get", "list", "patch", "update", "watch"]
    );
    assert_eq!(verbs(g, "kkmachines/status"), ["get", "patch", "update"]);
    assert_eq!(verbs(g, "kkinstances/finalizers"), ["update"]);
    assert!(verbs(g, "kkmachinetemplates").is_empty());
    assert_eq!(
        verbs("cluster.x-k8s.io", "machines"),
        ["get", "list", "patch", "watch"]
    );
    assert_eq!(verbs("", "secrets"), ["get", "list", "watch"]);
    assert_eq!(verbs("events.k8s.io", "events"), ["create", "patch"]);
}

/// kubernetes-validate over files; every object must pass (no unknown kind, no error).
fn kubernetes_validate(version: &str, files: &[PathBuf]) -> Result<usize, String> {
    let out = Command::new(venv_bin("kubernetes-validate"))
        .args(["--strict", "-k", version])
        .args(files)
        .output()
        .expect("run kubernetes-validate");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let passed = text
        .lines()
        .filter(|l| l.starts_with("INFO ") && l.contains(" passed for resource "))
        .count();
    let bad: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with("INFO ") && !l.trim().is_empty())
        .collect();
    if out.status.success() && bad.is_empty() {
        Ok(passed)
    } else {
        Err(format!("kubernetes-validate {}:\n{}", out.status, text))
    }
}

#[test]
fn every_committed_manifest_is_valid_for_kubernetes() {
    let mut files: Vec<PathBuf> = crd::crd_files()
        .into_iter()
        .map(|(f, _)| {
            config_dir()
                .join(crd::CRD_DIR.trim_start_matches("config/"))
                .join(f)
        })
        .collect();
    files.extend(FILES.iter().map(|(p, _)| config_dir().join(p)));
    for version in K8S_VERSIONS {
        let passed = kubernetes_validate(version, &files).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(passed, files.len(), "one object per file");
    }
}

#[test]
fn kubernetes_validate_rejects_a_broken_crd() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("crd.yaml");
    let text = crd::crd_files()
        .remove(0)
        .1
        .replace("scope: Namespaced", "scope: Namespaced\n  scopes: 1");
    std::fs::write(&f, text).unwrap();
    let err = kubernetes_validate(K8S_VERSIONS[0], &[f]).unwrap_err();
    assert!(err.contains("scopes"), "{err}");
}

/// Validates the samples against the openAPIV3Schema of their kind's CRD, strictly: unknown
/// fields are errors, as `kubectl apply`'s default server-side field validation makes them.
const SCHEMA_CHECK: &str = r#"
import sys, yaml, jsonschema
crds = {d["spec"]["names"]["kind"]: d for d in yaml.safe_load_all(open(sys.argv[1])) if d}
def strict(s):
    if not isinstance(s, dict):
        return s
    s = dict(s)
    if s.pop("nullable", False) and "type" in s:
        s["type"] = [s["type"], "null"]
        if "enum" in s:
            s["enum"] = s["enum"] + [None]
    if "properties" in s:
        s["properties"] = {k: strict(v) for k, v in s["properties"].items()}
        if not s.get("x-kubernetes-preserve-unknown-fields"):
            s.setdefault("additionalProperties", False)
    if isinstance(s.get("additionalProperties"), dict):
        s["additionalProperties"] = strict(s["additionalProperties"])
    if isinstance(s.get("items"), dict):
        s["items"] = strict(s["items"])
    return s
bad = 0
for path in sys.argv[2:]:
    for obj in yaml.safe_load_all(open(path)):
        if not obj:
            continue
        kind = obj.get("kind")
        crd = crds[kind]
        version = obj["apiVersion"].split("/")[-1]
        assert obj["apiVersion"].split("/")[0] == crd["spec"]["group"], obj["apiVersion"]
        schema = [v for v in crd["spec"]["versions"] if v["name"] == version][0]["schema"]["openAPIV3Schema"]
        schema = strict(schema)
        schema["properties"].update({"apiVersion": {"type": "string"}, "kind": {"type": "string"},
                                     "metadata": {"type": "object"}})
        errors = sorted(jsonschema.Draft7Validator(schema).iter_errors(obj), key=lambda e: list(e.path))
        name = "%s %s/%s" % (kind, obj["metadata"].get("namespace", ""), obj["metadata"]["name"])
        for e in errors:
            bad += 1
            print("ERROR %s: %s: %s" % (name, ".".join(str(p) for p in e.path), e.message))
        if not errors:
            print("OK %s" % name)
sys.exit(1 if bad else 0)
"#;

/// Runs [`SCHEMA_CHECK`] on sample files; `Ok` lists the objects that passed.
fn schema_check(samples: &[PathBuf]) -> Result<Vec<String>, String> {
    let dir = tempfile::tempdir().unwrap();
    let crds = dir.path().join("crds.yaml");
    std::fs::write(&crds, crd::crds_yaml()).unwrap();
    let out = Command::new(venv_bin("python3"))
        .arg("-c")
        .arg(SCHEMA_CHECK)
        .arg(&crds)
        .args(samples)
        .output()
        .expect("run python3");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if out.status.success() {
        Ok(text
            .lines()
            .filter_map(|l| l.strip_prefix("OK "))
            .map(String::from)
            .collect())
    } else {
        Err(text)
    }
}

fn sample_files() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(config_dir().join("samples"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    v.sort();
    v
}

#[test]
fn samples_match_the_generated_crd_schemas() {
    let files = sample_files();
    let passed = schema_check(&files).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        passed,
        [
            "KKCluster default/offline",
            "KKCluster default/quick-start",
            "KKMachineTemplate default/quick-start",
            "KKMachineTemplate default/quick-start-md-0",
        ]
    );
}

#[test]
fn the_schema_check_rejects_what_the_api_server_would() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("bad.yaml");
    let text = std::fs::read_to_string(config_dir().join("samples/kkcluster-offline.yaml"))
        .unwrap()
        .replace("value: 4ef6", "value: 4ef")
        .replace("port: 2222", "port: 0")
        .replace("roles: [worker]", "roles: [etcd]")
        .replace("timeout: 30s", "timeout: 30s\n      sshKey: x");
    std::fs::write(&f, text).unwrap();
    let err = schema_check(&[f]).unwrap_err();
    for expected in [
        "component.overrides.0.checksum.value: '4ef",
        "nodes.instances.3.auth.port: 0 is less than the minimum of 1",
        "nodes.instances.3.roles.0: 'etcd' is not one of",
        "Additional properties are not allowed ('sshKey' was unexpected)",
    ] {
        assert!(err.contains(expected), "{expected:?} not in:\n{err}");
    }
}

#[test]
fn samples_deserialize_default_and_validate() {
    let mut seen = Vec::new();
    for f in sample_files() {
        let text = std::fs::read_to_string(&f).unwrap();
        for d in serde_yaml::Deserializer::from_str(&text) {
            let v: serde_yaml::Value = serde::Deserialize::deserialize(d).unwrap();
            let kind = v["kind"].as_str().unwrap().to_string();
            match kind.as_str() {
                "KKCluster" => {
                    let mut c: api::KKCluster = serde_yaml::from_value(v).unwrap();
                    api::default_kkcluster(&mut c);
                    api::validate_kkcluster(&c).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
                    assert!(c.spec.control_plane_endpoint.is_valid());
                    seen.push(format!("{} {}", kind, c.metadata.name.unwrap()));
                }
                "KKMachineTemplate" => {
                    let mut t: api::KKMachineTemplate = serde_yaml::from_value(v).unwrap();
                    api::default_kkmachinetemplate(&mut t);
                    api::validate_kkmachinetemplate(&t)
                        .unwrap_or_else(|e| panic!("{}: {e}", f.display()));
                    seen.push(format!("{} {}", kind, t.metadata.name.unwrap()));
                }
                other => panic!("{}: unexpected kind {other}", f.display()),
            }
        }
    }
    assert_eq!(seen.len(), 4, "{seen:?}");
}

#[test]
fn quick_start_defaults_as_the_seed_says() {
    let text = std::fs::read_to_string(config_dir().join("samples/kkcluster.yaml")).unwrap();
    let mut c: api::KKCluster = serde_yaml::from_str(&text).unwrap();
    api::default_kkcluster(&mut c);
    for i in &c.spec.nodes.instances {
        assert_eq!(i.roles, [api::Role::ControlPlane, api::Role::Worker]);
    }
    assert_eq!(c.spec.control_plane_endpoint.host, "192.168.0.100");
    assert_eq!(c.spec.control_plane_endpoint.port, 6443);
}
