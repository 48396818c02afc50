//! The field tables against documents as kubeadm's docs show them.

use super::*;

const V1BETA3: &str = r#"
apiVersion: kubeadm.k8s.io/v1beta3
kind: InitConfiguration
bootstrapTokens:
- token: abcdef.0123456789abcdef
  ttl: 24h0m0s
  usages: [signing, authentication]
localAPIEndpoint: {advertiseAddress: 10.0.0.1, bindPort: 6443}
nodeRegistration:
  name: cp1
  criSocket: unix:///run/containerd/containerd.sock
  kubeletExtraArgs: {node-ip: 10.0.0.1}
  taints: []
certificateKey: "0000000000000000000000000000000000000000000000000000000000000000"
skipPhases: [addon/kube-proxy]
---
apiVersion: kubeadm.k8s.io/v1beta3
kind: ClusterConfiguration
kubernetesVersion: v1.30.8
controlPlaneEndpoint: lb.kubesphere.local:6443
clusterName: cluster.local
imageRepository: registry.k8s.io
etcd:
  external:
    endpoints: [https://10.0.0.1:2379]
    caFile: /etc/kubernetes/pki/etcd/ca.crt
    certFile: /etc/kubernetes/pki/etcd/client.crt
    keyFile: /etc/kubernetes/pki/etcd/client.key
networking: {podSubnet: 10.233.64.0/18, serviceSubnet: 10.233.0.0/18, dnsDomain: cluster.local}
apiServer:
  certSANs: [lb.kubesphere.local]
  extraArgs: {bind-address: 0.0.0.0, audit-log-path: /var/log/audit.log}
  extraVolumes:
  - {name: audit, hostPath: /etc/kubernetes/audit, mountPath: /etc/kubernetes/audit, readOnly: true, pathType: DirectoryOrCreate}
  timeoutForControlPlane: 4m0s
controllerManager: {extraArgs: {node-cidr-mask-size: "24"}}
scheduler: {extraArgs: {bind-address: 0.0.0.0}}
dns: {imageRepository: registry.k8s.io/coredns, imageTag: v1.11.1}
featureGates: {EtcdLearnerMode: true}
---
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: systemd
clusterDNS: [169.254.25.10]
clusterDomain: cluster.local
maxPods: 110
evictionHard: {memory.available: 5%, pid.available: 10%}
kubeReserved: {cpu: 200m, memory: 250Mi}
rotateCertificates: true
featureGates: {RotateKubeletServerCertificate: true}
---
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: ipvs
clusterCIDR: 10.233.64.0/18
iptables: {masqueradeAll: false, masqueradeBit: 14, minSyncPeriod: 0s, syncPeriod: 30s}
ipvs: {strictARP: true}
"#;

fn v1beta4() -> String {
    V1BETA3
        .replace("kubeadm.k8s.io/v1beta3", "kubeadm.k8s.io/v1beta4")
        .replace("kubernetesVersion: v1.30.8", "kubernetesVersion: v1.34.1")
        .replace("kubeletExtraArgs: {node-ip: 10.0.0.1}", "kubeletExtraArgs: [{name: node-ip, value: 10.0.0.1}]")
        .replace(
            "extraArgs: {bind-address: 0.0.0.0, audit-log-path: /var/log/audit.log}",
            "extraArgs: [{name: bind-address, value: 0.0.0.0}, {name: audit-log-path, value: /var/log/audit.log}]",
        )
        .replace("{extraArgs: {node-cidr-mask-size: \"24\"}}", "{extraArgs: [{name: node-cidr-mask-size, value: \"24\"}]}")
        .replace("{extraArgs: {bind-address: 0.0.0.0}}", "{extraArgs: [{name: bind-address, value: 0.0.0.0}]}")
        .replace("  timeoutForControlPlane: 4m0s\n", "")
        .replace("skipPhases: [addon/kube-proxy]", "skipPhases: [addon/kube-proxy]\ntimeouts: {controlPlaneComponentHealthCheck: 4m0s}")
}

#[test]
fn valid_documents_pass() {
    assert_eq!(check("v1.30.8", V1BETA3), Ok(()));
    assert_eq!(check("v1.34.1", &v1beta4()), Ok(()));
    let docs = check_documents("v1.34.1", &v1beta4()).unwrap();
    let kinds: Vec<&str> = docs.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "InitConfiguration",
            "ClusterConfiguration",
            "KubeletConfiguration",
            "KubeProxyConfiguration"
        ]
    );
}

#[test]
fn unknown_fields_fail_with_their_path() {
    let bad = V1BETA3.replace("  certSANs:", "  extraArgz: {}\n  certSANs:");
    assert_eq!(
        check("v1.30.8", &bad),
        Err(vec![
            "ClusterConfiguration.apiServer.extraArgz: unknown field".to_string()
        ])
    );
    let bad = V1BETA3
        .replace("readOnly: true", "readonly: true")
        .replace("maxPods: 110", "maxPod: 110");
    assert_eq!(
        check("v1.30.8", &bad).unwrap_err(),
        [
            "ClusterConfiguration.apiServer.extraVolumes[0].readonly: unknown field",
            "KubeletConfiguration.maxPod: unknown field"
        ]
    );
}

#[test]
fn version_differences_matter() {
    // v1beta3's map-shaped extraArgs and timeoutForControlPlane are not v1beta4's.
    let mixed = V1BETA3.replace("kubeadm.k8s.io/v1beta3", "kubeadm.k8s.io/v1beta4");
    let errs = check("v1.34.1", &mixed).unwrap_err();
    assert!(
        errs.contains(
            &"ClusterConfiguration.apiServer.extraArgs: want a list, found a map".to_string()
        ),
        "{:?}",
        errs
    );
    assert!(
        errs.contains(
            &"ClusterConfiguration.apiServer.timeoutForControlPlane: unknown field".to_string()
        ),
        "{:?}",
        errs
    );
    assert!(
        errs.contains(
            &"InitConfiguration.nodeRegistration.kubeletExtraArgs: want a list, found a map"
                .to_string()
        ),
        "{:?}",
        errs
    );
    // v1beta4-only fields are unknown to v1beta3.
    let errs = check(
        "v1.30.8",
        &V1BETA3.replace(
            "kubernetesVersion:",
            "encryptionAlgorithm: RSA-2048\nkubernetesVersion:",
        ),
    )
    .unwrap_err();
    assert_eq!(
        errs,
        ["ClusterConfiguration.encryptionAlgorithm: unknown field"]
    );
}

#[test]
fn wrong_api_version_for_the_kubernetes_version_fails() {
    let errs = check("v1.34.1", V1BETA3).unwrap_err();
    assert!(errs[0].starts_with("InitConfiguration.apiVersion: \"kubeadm.k8s.io/v1beta3\" is not the one Kubernetes v1.34.1 reads: kubeadm.k8s.io/v1beta4"), "{:?}", errs);
    let errs = check("v1.30.8", &v1beta4()).unwrap_err();
    assert!(
        errs.iter()
            .any(|e| e.starts_with("ClusterConfiguration.apiVersion:")),
        "{:?}",
        errs
    );
}

#[test]
fn scalar_types_are_the_go_fields() {
    let errs = check(
        "v1.30.8",
        &V1BETA3.replace("{node-ip: 10.0.0.1}", "{max-pods: 110}"),
    )
    .unwrap_err();
    assert_eq!(errs, ["InitConfiguration.nodeRegistration.kubeletExtraArgs.max-pods: want a string, found number 110"]);
    let errs = check(
        "v1.30.8",
        &V1BETA3.replace("bindPort: 6443", "bindPort: \"6443\""),
    )
    .unwrap_err();
    assert_eq!(
        errs,
        ["InitConfiguration.localAPIEndpoint.bindPort: want an integer, found string \"6443\""]
    );
}

#[test]
fn unknown_kinds_and_bad_yaml_fail() {
    assert!(
        check("v1.30.8", "apiVersion: v1\nkind: Pod\n").unwrap_err()[0]
            .contains("Pod: unknown kind")
    );
    assert!(check("v1.30.8", "kind: [").is_err());
    assert!(check("v1.30.8", "").is_err());
}
