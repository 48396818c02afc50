//! kubeadm's configuration API as field tables, for the FAKE kubeadm and kubelet and for
//! tests that check a rendered kubeadm config directly. It stands in for the Go types of
//! kubeadm `v1beta3` (Kubernetes < 1.31) and `v1beta4` (>= 1.31): InitConfiguration,
//! ClusterConfiguration and JoinConfiguration (`kubeadm.k8s.io`), KubeletConfiguration
//! (`kubelet.config.k8s.io/v1beta1`) and KubeProxyConfiguration
//! (`kubeproxy.config.k8s.io/v1alpha1`); field names are the Go types' json tags
//! (cmd/kubeadm/app/apis/kubeadm/v1beta{3,4}/types.go,
//! staging/src/k8s.io/{kubelet,kube-proxy}/config/*/types.go, as on kubernetes.io's
//! "kubeadm Configuration (v1beta3)/(v1beta4)", "Kubelet Configuration (v1beta1)" and
//! "kube-proxy Configuration (v1alpha1)" pages).
//!
//! It checks: every field is known (an unknown one fails with its path, e.g.
//! `ClusterConfiguration.apiServer.extraArgz: unknown field` — stricter than kubeadm, whose
//! strict decoding only warns and then ignores the field, which is how a misspelt field gets
//! lost), scalars have the Go field's JSON type (a number where kubeadm wants a string fails,
//! as the real decoder does), the kubeadm apiVersion is the one kk uses for that Kubernetes
//! version (kubeadm v1.31+ still reads v1beta3, deprecated; kk must not write it). It leaves
//! value semantics (CIDRs, durations) alone. The kubelet and kube-proxy tables are the union over
//! v1.28–v1.34 (a field newer than the configured version is not caught).
//!
//! Table syntax, one type per line: `Type: field:type …` where type is `s` string, `i`
//! integer, `f` number, `b` bool, `any` free-form, `[T]` list of T, `{T}` map of string to
//! T, or another type's name.

use std::collections::HashMap;

use serde::Deserialize;
use serde_yaml::Value;

/// Types both kubeadm versions share (v1beta4 below replaces what it changed).
const KUBEADM_COMMON: &str = "
BootstrapToken: token:s description:s ttl:s expires:s usages:[s] groups:[s]
Taint: key:s value:s effect:s timeAdded:s
APIEndpoint: advertiseAddress:s bindPort:i
Patches: directory:s
HostPathMount: name:s hostPath:s mountPath:s readOnly:b pathType:s
Networking: serviceSubnet:s podSubnet:s dnsDomain:s
Etcd: local:LocalEtcd external:ExternalEtcd
ExternalEtcd: endpoints:[s] caFile:s certFile:s keyFile:s
BootstrapTokenDiscovery: token:s apiServerEndpoint:s caCertHashes:[s] unsafeSkipCAVerification:b
FileDiscovery: kubeConfigPath:s
JoinControlPlane: localAPIEndpoint:APIEndpoint certificateKey:s
";

/// kubeadm.k8s.io/v1beta3 (Kubernetes 1.22–1.30 read it; kk uses it below v1.31).
const KUBEADM_V1BETA3: &str = "
InitConfiguration: apiVersion:s kind:s bootstrapTokens:[BootstrapToken] nodeRegistration:NodeRegistrationOptions localAPIEndpoint:APIEndpoint certificateKey:s skipPhases:[s] patches:Patches
ClusterConfiguration: apiVersion:s kind:s etcd:Etcd networking:Networking kubernetesVersion:s controlPlaneEndpoint:s apiServer:APIServer controllerManager:ControlPlaneComponent scheduler:ControlPlaneComponent dns:DNS certificatesDir:s imageRepository:s featureGates:{b} clusterName:s
JoinConfiguration: apiVersion:s kind:s nodeRegistration:NodeRegistrationOptions caCertPath:s discovery:Discovery controlPlane:JoinControlPlane skipPhases:[s] patches:Patches
NodeRegistrationOptions: name:s criSocket:s taints:[Taint] kubeletExtraArgs:{s} ignorePreflightErrors:[s] imagePullPolicy:s
ControlPlaneComponent: extraArgs:{s} extraVolumes:[HostPathMount]
APIServer: extraArgs:{s} extraVolumes:[HostPathMount] certSANs:[s] timeoutForControlPlane:s
DNS: imageRepository:s imageTag:s
LocalEtcd: imageRepository:s imageTag:s dataDir:s extraArgs:{s} serverCertSANs:[s] peerCertSANs:[s]
Discovery: bootstrapToken:BootstrapTokenDiscovery file:FileDiscovery tlsBootstrapToken:s timeout:s
";

/// kubeadm.k8s.io/v1beta4 (Kubernetes 1.31+): extraArgs become `[{name, value}]`, extraEnvs,
/// timeouts move to `InitConfiguration/JoinConfiguration.timeouts`, dryRun, imagePullSerial,
/// dns/proxy `disabled`, encryptionAlgorithm, certificate validity periods.
const KUBEADM_V1BETA4: &str = "
Arg: name:s value:s
EnvVar: name:s value:s valueFrom:any
Timeouts: controlPlaneComponentHealthCheck:s kubeletHealthCheck:s kubernetesAPICall:s etcdAPICall:s tlsBootstrap:s discovery:s upgradeManifests:s
InitConfiguration: apiVersion:s kind:s bootstrapTokens:[BootstrapToken] dryRun:b nodeRegistration:NodeRegistrationOptions localAPIEndpoint:APIEndpoint certificateKey:s skipPhases:[s] patches:Patches timeouts:Timeouts
ClusterConfiguration: apiVersion:s kind:s etcd:Etcd networking:Networking kubernetesVersion:s controlPlaneEndpoint:s apiServer:APIServer controllerManager:ControlPlaneComponent scheduler:ControlPlaneComponent dns:DNS proxy:Proxy certificatesDir:s imageRepository:s featureGates:{b} clusterName:s encryptionAlgorithm:s certificateValidityPeriod:s caCertificateValidityPeriod:s
JoinConfiguration: apiVersion:s kind:s dryRun:b nodeRegistration:NodeRegistrationOptions caCertPath:s discovery:Discovery controlPlane:JoinControlPlane skipPhases:[s] patches:Patches timeouts:Timeouts
NodeRegistrationOptions: name:s criSocket:s taints:[Taint] kubeletExtraArgs:[Arg] ignorePreflightErrors:[s] imagePullPolicy:s imagePullSerial:b
ControlPlaneComponent: extraArgs:[Arg] extraVolumes:[HostPathMount] extraEnvs:[EnvVar]
APIServer: extraArgs:[Arg] extraVolumes:[HostPathMount] extraEnvs:[EnvVar] certSANs:[s]
DNS: imageRepository:s imageTag:s disabled:b
Proxy: disabled:b
LocalEtcd: imageRepository:s imageTag:s dataDir:s extraArgs:[Arg] extraEnvs:[EnvVar] serverCertSANs:[s] peerCertSANs:[s]
Discovery: bootstrapToken:BootstrapTokenDiscovery file:FileDiscovery tlsBootstrapToken:s
";

/// kubelet.config.k8s.io/v1beta1 KubeletConfiguration (union of v1.28–v1.34).
const KUBELET_V1BETA1: &str = "
KubeletConfiguration: apiVersion:s kind:s enableServer:b staticPodPath:s podLogsDir:s syncFrequency:s fileCheckFrequency:s httpCheckFrequency:s staticPodURL:s staticPodURLHeader:{[s]} address:s port:i readOnlyPort:i volumePluginDir:s providerID:s tlsCertFile:s tlsPrivateKeyFile:s tlsCipherSuites:[s] tlsMinVersion:s rotateCertificates:b serverTLSBootstrap:b authentication:KubeletAuthentication authorization:KubeletAuthorization registryPullQPS:i registryBurst:i imagePullCredentialsVerificationPolicy:s preloadedImagesVerificationAllowlist:[s] eventRecordQPS:i eventBurst:i enableDebuggingHandlers:b enableContentionProfiling:b healthzPort:i healthzBindAddress:s oomScoreAdj:i clusterDomain:s clusterDNS:[s] streamingConnectionIdleTimeout:s nodeStatusUpdateFrequency:s nodeStatusReportFrequency:s nodeLeaseDurationSeconds:i imageMinimumGCAge:s imageMaximumGCAge:s imageGCHighThresholdPercent:i imageGCLowThresholdPercent:i volumeStatsAggPeriod:s kubeletCgroups:s systemCgroups:s cgroupRoot:s cgroupsPerQOS:b cgroupDriver:s cpuManagerPolicy:s singleProcessOOMKill:b cpuManagerPolicyOptions:{s} cpuManagerReconcilePeriod:s memoryManagerPolicy:s topologyManagerPolicy:s topologyManagerScope:s topologyManagerPolicyOptions:{s} qosReserved:{s} runtimeRequestTimeout:s hairpinMode:s maxPods:i podCIDR:s podPidsLimit:i resolvConf:s runOnce:b cpuCFSQuota:b cpuCFSQuotaPeriod:s nodeStatusMaxImages:i maxOpenFiles:i contentType:s kubeAPIQPS:i kubeAPIBurst:i serializeImagePulls:b maxParallelImagePulls:i evictionHard:{s} evictionSoft:{s} evictionSoftGracePeriod:{s} evictionPressureTransitionPeriod:s evictionMaxPodGracePeriod:i evictionMinimumReclaim:{s} mergeDefaultEvictionSettings:b podsPerCore:i enableControllerAttachDetach:b protectKernelDefaults:b makeIPTablesUtilChains:b iptablesMasqueradeBit:i iptablesDropBit:i featureGates:{b} failSwapOn:b memorySwap:MemorySwapConfiguration containerLogMaxSize:s containerLogMaxFiles:i containerLogMaxWorkers:i containerLogMonitorInterval:s configMapAndSecretChangeDetectionStrategy:s systemReserved:{s} kubeReserved:{s} reservedSystemCPUs:s showHiddenMetricsForVersion:s systemReservedCgroup:s kubeReservedCgroup:s enforceNodeAllocatable:[s] allowedUnsafeSysctls:[s] volumePluginDir:s kernelMemcgNotification:b logging:any enableSystemLogHandler:b enableSystemLogQuery:b shutdownGracePeriod:s shutdownGracePeriodCriticalPods:s shutdownGracePeriodByPodPriority:[ShutdownGracePeriodByPodPriority] crashLoopBackOff:CrashLoopBackOffConfig reservedMemory:[MemoryReservation] enableProfilingHandler:b enableDebugFlagsHandler:b seccompDefault:b memoryThrottlingFactor:f registerWithTaints:[Taint] registerNode:b tracing:any localStorageCapacityIsolation:b containerRuntimeEndpoint:s imageServiceEndpoint:s failCgroupV1:b userNamespaces:UserNamespaces
KubeletAuthentication: x509:KubeletX509Authentication webhook:KubeletWebhookAuthentication anonymous:KubeletAnonymousAuthentication
KubeletX509Authentication: clientCAFile:s
KubeletWebhookAuthentication: enabled:b cacheTTL:s
KubeletAnonymousAuthentication: enabled:b
KubeletAuthorization: mode:s webhook:KubeletWebhookAuthorization
KubeletWebhookAuthorization: cacheAuthorizedTTL:s cacheUnauthorizedTTL:s
MemorySwapConfiguration: swapBehavior:s
ShutdownGracePeriodByPodPriority: priority:i shutdownGracePeriodSeconds:i
CrashLoopBackOffConfig: maxContainerRestartPeriod:s
MemoryReservation: numaNode:i limits:{any}
UserNamespaces: idsPerPod:i
Taint: key:s value:s effect:s timeAdded:s
";

/// kubeproxy.config.k8s.io/v1alpha1 KubeProxyConfiguration (union of v1.28–v1.34).
const KUBEPROXY_V1ALPHA1: &str = "
KubeProxyConfiguration: apiVersion:s kind:s featureGates:{b} clientConnection:ClientConnectionConfiguration hostnameOverride:s bindAddress:s healthzBindAddress:s metricsBindAddress:s bindAddressHardFail:b enableProfiling:b showHiddenMetricsForVersion:s mode:s iptables:KubeProxyIPTablesConfiguration ipvs:KubeProxyIPVSConfiguration nftables:KubeProxyNFTablesConfiguration winkernel:KubeProxyWinkernelConfiguration detectLocalMode:s detectLocal:DetectLocalConfiguration clusterCIDR:s nodePortAddresses:[s] oomScoreAdj:i conntrack:KubeProxyConntrackConfiguration configSyncPeriod:s portRange:s windowsRunAsService:b logging:any serviceProxyName:s
ClientConnectionConfiguration: kubeconfig:s acceptContentTypes:s contentType:s qps:f burst:i
KubeProxyIPTablesConfiguration: masqueradeBit:i masqueradeAll:b localhostNodePorts:b syncPeriod:s minSyncPeriod:s
KubeProxyIPVSConfiguration: syncPeriod:s minSyncPeriod:s scheduler:s excludeCIDRs:[s] strictARP:b tcpTimeout:s tcpFinTimeout:s udpTimeout:s
KubeProxyNFTablesConfiguration: masqueradeBit:i masqueradeAll:b syncPeriod:s minSyncPeriod:s tableName:s
KubeProxyWinkernelConfiguration: networkName:s sourceVip:s enableDSR:b rootHnsEndpointName:s forwardHealthCheckVip:b
DetectLocalConfiguration: bridgeInterface:s interfaceNamePrefix:s
KubeProxyConntrackConfiguration: maxPerCore:i min:i tcpEstablishedTimeout:s tcpCloseWaitTimeout:s tcpBeLiberal:b udpTimeout:s udpStreamTimeout:s
";

/// Field tables: type name → [(field, type)].
type Tables = HashMap<String, Vec<(String, String)>>;

fn tables(parts: &[&str]) -> Tables {
    let mut t = Tables::new();
    for part in parts {
        for line in part.lines().filter(|l| !l.trim().is_empty()) {
            let (name, fields) = line.split_once(':').expect("table line");
            let fields = fields
                .split_whitespace()
                .map(|f| {
                    let (k, ty) = f.split_once(':').expect("field:type");
                    (k.to_string(), ty.to_string())
                })
                .collect();
            t.insert(name.trim().to_string(), fields);
        }
    }
    t
}

/// The kubeadm API group version kk uses (and the fake accepts) for a Kubernetes version.
pub fn kubeadm_api_version(k8s_version: &str) -> &'static str {
    if crate::parse_minor(k8s_version) >= (1, 31) {
        "kubeadm.k8s.io/v1beta4"
    } else {
        "kubeadm.k8s.io/v1beta3"
    }
}

/// The kinds a kubeadm config file may hold, with their apiVersion for `k8s_version`.
pub fn known_kinds(k8s_version: &str) -> Vec<(&'static str, &'static str)> {
    let kubeadm = kubeadm_api_version(k8s_version);
    vec![
        ("InitConfiguration", kubeadm),
        ("ClusterConfiguration", kubeadm),
        ("JoinConfiguration", kubeadm),
        ("KubeletConfiguration", "kubelet.config.k8s.io/v1beta1"),
        ("KubeProxyConfiguration", "kubeproxy.config.k8s.io/v1alpha1"),
    ]
}

fn tables_for(k8s_version: &str) -> Tables {
    let kubeadm = if kubeadm_api_version(k8s_version).ends_with("v1beta4") {
        KUBEADM_V1BETA4
    } else {
        KUBEADM_V1BETA3
    };
    tables(&[KUBEADM_COMMON, kubeadm, KUBELET_V1BETA1, KUBEPROXY_V1ALPHA1])
}

/// Checks one document of kind `kind` (its apiVersion included) for `k8s_version`;
/// errors name the field's path.
pub fn check_doc(k8s_version: &str, kind: &str, doc: &Value) -> Result<(), Vec<String>> {
    let mut errs = Vec::new();
    let Some((_, want)) = known_kinds(k8s_version)
        .into_iter()
        .find(|(k, _)| *k == kind)
    else {
        return Err(vec![format!("{}: unknown kind", kind)]);
    };
    let got = doc["apiVersion"].as_str().unwrap_or("");
    if got != want {
        errs.push(format!(
            "{}.apiVersion: {:?} is not the one Kubernetes {} reads: {} (kubeadm.k8s.io/v1beta3 below v1.31, v1beta4 from v1.31)",
            kind, got, k8s_version, want
        ));
    }
    walk(&tables_for(k8s_version), kind, doc, kind, &mut errs);
    if errs.is_empty() {
        Ok(())
    } else {
        Err(errs)
    }
}

/// Checks a multi-document kubeadm config file: every document's kind known, its
/// apiVersion that of `k8s_version`, every field known and typed. Returns the documents
/// by kind.
pub fn check_documents(k8s_version: &str, yaml: &str) -> Result<Vec<(String, Value)>, Vec<String>> {
    let mut docs = Vec::new();
    let mut errs = Vec::new();
    for (i, de) in serde_yaml::Deserializer::from_str(yaml).enumerate() {
        let doc = match Value::deserialize(de) {
            Ok(d) => d,
            Err(e) => {
                // serde_yaml yields the same error forever after a syntax error.
                errs.push(format!("document {}: not YAML: {}", i + 1, e));
                break;
            }
        };
        if doc.is_null() {
            continue;
        }
        let Some(kind) = doc["kind"].as_str().map(str::to_string) else {
            errs.push(format!("document {}: no kind", i + 1));
            continue;
        };
        if let Err(e) = check_doc(k8s_version, &kind, &doc) {
            errs.extend(e);
        }
        docs.push((kind, doc));
    }
    if docs.is_empty() && errs.is_empty() {
        errs.push("no documents".to_string());
    }
    if errs.is_empty() {
        Ok(docs)
    } else {
        Err(errs)
    }
}

/// [`check_documents`] without the documents.
pub fn check(k8s_version: &str, yaml: &str) -> Result<(), Vec<String>> {
    check_documents(k8s_version, yaml).map(|_| ())
}

fn walk(t: &Tables, ty: &str, v: &Value, path: &str, errs: &mut Vec<String>) {
    if v.is_null() {
        return; // omitted/null: the Go zero value
    }
    let kind_err = |want: &str| format!("{}: want {}, found {}", path, want, describe(v));
    match ty {
        "any" => {}
        "s" if !v.is_string() => errs.push(kind_err("a string")),
        "i" if !(v.is_i64() || v.is_u64()) => errs.push(kind_err("an integer")),
        "f" if !v.is_number() => errs.push(kind_err("a number")),
        "b" if !v.is_bool() => errs.push(kind_err("a bool")),
        "s" | "i" | "f" | "b" => {}
        _ if ty.starts_with('[') => match v.as_sequence() {
            Some(items) => {
                for (i, item) in items.iter().enumerate() {
                    walk(
                        t,
                        &ty[1..ty.len() - 1],
                        item,
                        &format!("{}[{}]", path, i),
                        errs,
                    );
                }
            }
            None => errs.push(kind_err("a list")),
        },
        _ if ty.starts_with('{') => match v.as_mapping() {
            Some(m) => {
                for (k, item) in m {
                    let key = k
                        .as_str()
                        .map(str::to_string)
                        .unwrap_or_else(|| describe(k));
                    walk(
                        t,
                        &ty[1..ty.len() - 1],
                        item,
                        &format!("{}.{}", path, key),
                        errs,
                    );
                }
            }
            None => errs.push(kind_err("a map")),
        },
        _ => {
            let fields = t.get(ty).unwrap_or_else(|| panic!("no table for {}", ty));
            let Some(m) = v.as_mapping() else {
                errs.push(kind_err(&format!("a map ({})", ty)));
                return;
            };
            for (k, item) in m {
                let key = k.as_str().unwrap_or("");
                let p = format!("{}.{}", path, key);
                match fields.iter().find(|(f, _)| f == key) {
                    Some((_, fty)) => walk(t, fty, item, &p, errs),
                    None => errs.push(format!("{}: unknown field", p)),
                }
            }
        }
    }
}

fn describe(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("bool {}", b),
        Value::Number(n) => format!("number {}", n),
        Value::String(s) => format!("string {:?}", s),
        Value::Sequence(_) => "a list".into(),
        Value::Mapping(_) => "a map".into(),
        Value::Tagged(_) => "a tagged value".into(),
    }
}

#[cfg(test)]
mod tests;
