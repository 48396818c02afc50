//! Defaulting, as KubeKey's CAPKK webhooks do it (`api/v1beta1/*_webhook.go` `Default()`):
//! there is no admission webhook here, so the controllers call these on the objects they
//! read before validating and acting on them. Each function is idempotent: defaulting a
//! defaulted object changes nothing.

use super::common::{Auth, ContainerManager, Role};
use super::kkcluster::{KKCluster, KKClusterSpec};
use super::kkinstance::{KKInstance, KKInstanceSpec};
use super::kkmachine::{KKMachine, KKMachineSpec, KKMachineTemplate};

/// The distribution when none is named.
pub const DEFAULT_DISTRIBUTION: &str = "kubernetes";
/// The SSH user when none is named.
pub const DEFAULT_SSH_USER: &str = "root";
/// The SSH port when none is named.
pub const DEFAULT_SSH_PORT: u16 = 22;
/// How long establishing an SSH connection may take (KubeKey's 30 s).
pub const DEFAULT_SSH_TIMEOUT: &str = "30s";
/// An instance's architecture when none is named.
pub const DEFAULT_ARCH: &str = "amd64";
/// The API server's port when the endpoint has none (Cluster API's default
/// `clusterNetwork.apiServerPort`).
pub const DEFAULT_API_SERVER_PORT: i32 = 6443;
/// The roles of an instance that names none: it may serve any machine.
pub const DEFAULT_ROLES: [Role; 2] = [Role::ControlPlane, Role::Worker];

/// `containerManager.type` for containerd.
pub const CONTAINERD_TYPE: &str = "containerd";
/// containerd's version when none is named (KubeKey's `DefaultContainerdVersion`).
pub const DEFAULT_CONTAINERD_VERSION: &str = "1.6.4";
/// containerd's CRI socket.
pub const DEFAULT_CONTAINERD_CRI_SOCKET: &str = "unix:///var/run/containerd/containerd.sock";
/// `containerManager.type` for Docker (with cri-dockerd).
pub const DOCKER_TYPE: &str = "docker";
/// Docker's version when none is named (KubeKey's `DefaultDockerVersion`).
pub const DEFAULT_DOCKER_VERSION: &str = "20.10.8";
/// cri-dockerd's version when none is named (KubeKey's `DefaultCRIDockerdVersion`).
pub const DEFAULT_CRI_DOCKERD_VERSION: &str = "0.2.6";
/// cri-dockerd's CRI socket.
pub const DEFAULT_DOCKER_CRI_SOCKET: &str = "unix:///run/cri-dockerd.sock";
/// crictl's version when none is named (KubeKey's `DefaultCrictlVersion`).
pub const DEFAULT_CRICTL_VERSION: &str = "v1.24.0";

/// Defaults a whole KKCluster (see [`default_kkcluster_spec`]).
pub fn default_kkcluster(cluster: &mut KKCluster) {
    default_kkcluster_spec(&mut cluster.spec);
}

/// Distribution `kubernetes` (and `k8s` spelled out), the cluster-wide SSH auth (user
/// `root`, port 22, timeout 30s), each instance's internal address (its address), arch
/// (`amd64`) and roles (control-plane and worker), and the control plane endpoint: its
/// host from `controlPlaneLoadBalancer.host` when empty, its port 6443 when unset.
///
/// Instances without a name are not given a random one as KubeKey does: the name is the
/// KKInstance's name, and a random one would change on every defaulting (validation
/// reports it instead).
pub fn default_kkcluster_spec(spec: &mut KKClusterSpec) {
    if spec.distribution.is_empty() || spec.distribution == "k8s" {
        spec.distribution = DEFAULT_DISTRIBUTION.to_string();
    }
    default_auth(&mut spec.nodes.auth);
    for instance in &mut spec.nodes.instances {
        if instance.internal_address.is_empty() {
            instance.internal_address = instance.address.clone();
        }
        if instance.arch.is_empty() {
            instance.arch = DEFAULT_ARCH.to_string();
        }
        if instance.roles.is_empty() {
            instance.roles = DEFAULT_ROLES.to_vec();
        }
    }
    let endpoint = &mut spec.control_plane_endpoint;
    if endpoint.host.is_empty() {
        if let Some(lb) = &spec.control_plane_load_balancer {
            endpoint.host = lb.host.clone();
        }
    }
    if endpoint.port == 0 && !endpoint.host.is_empty() {
        endpoint.port = DEFAULT_API_SERVER_PORT;
    }
}

/// User `root`, port 22 and a 30 s connection timeout where unset; the credentials are
/// left alone (they have no default).
pub fn default_auth(auth: &mut Auth) {
    if auth.user.is_empty() {
        auth.user = DEFAULT_SSH_USER.to_string();
    }
    if auth.port.is_none() {
        auth.port = Some(DEFAULT_SSH_PORT);
    }
    if auth.timeout.is_none() {
        auth.timeout = Some(DEFAULT_SSH_TIMEOUT.to_string());
    }
}

/// Defaults a KKMachine's container manager (see [`default_container_manager`]).
pub fn default_kkmachine(machine: &mut KKMachine) {
    default_kkmachine_spec(&mut machine.spec);
}

/// Defaults the KKMachine spec a KKMachineTemplate copies, so every KKMachine made from
/// it starts defaulted.
pub fn default_kkmachinetemplate(template: &mut KKMachineTemplate) {
    default_kkmachine_spec(&mut template.spec.template.spec);
}

/// The container manager of a KKMachine spec. The repository has no default: none means
/// "install no packages", as in KubeKey.
pub fn default_kkmachine_spec(spec: &mut KKMachineSpec) {
    default_container_manager(&mut spec.container_manager);
}

/// A KKInstance's container manager, and its internal address and arch as in KKCluster
/// (the KKMachine controller copies them, this covers instances made by hand).
pub fn default_kkinstance(instance: &mut KKInstance) {
    default_kkinstance_spec(&mut instance.spec);
}

/// See [`default_kkinstance`].
pub fn default_kkinstance_spec(spec: &mut KKInstanceSpec) {
    if spec.internal_address.is_empty() {
        spec.internal_address = spec.address.clone();
    }
    if spec.arch.is_empty() {
        spec.arch = DEFAULT_ARCH.to_string();
    }
    default_container_manager(&mut spec.container_manager);
}

/// KubeKey's `defaultContainerManager`: a given CRI socket means "use the runtime that is
/// there" and nothing else is defaulted; otherwise type containerd, the type's version,
/// socket and (docker) cri-dockerd version, crictl's version; versions are normalised
/// (`v1.6.4` → `1.6.4` for the runtime, `1.24.0` → `v1.24.0` for crictl) because the
/// download URLs are built from them.
pub fn default_container_manager(cm: &mut ContainerManager) {
    if !cm.cri_socket.is_empty() {
        return;
    }
    if cm.type_.is_empty() {
        cm.type_ = CONTAINERD_TYPE.to_string();
    }
    match cm.type_.as_str() {
        CONTAINERD_TYPE => {
            if cm.version.is_empty() {
                cm.version = DEFAULT_CONTAINERD_VERSION.to_string();
            }
            cm.cri_socket = DEFAULT_CONTAINERD_CRI_SOCKET.to_string();
        }
        DOCKER_TYPE => {
            if cm.version.is_empty() {
                cm.version = DEFAULT_DOCKER_VERSION.to_string();
            }
            if cm.cri_dockerd_version.is_empty() {
                cm.cri_dockerd_version = DEFAULT_CRI_DOCKERD_VERSION.to_string();
            }
            cm.cri_socket = DEFAULT_DOCKER_CRI_SOCKET.to_string();
        }
        // An unknown type is left for validation to report.
        _ => {}
    }
    if cm.crictl_version.is_empty() {
        cm.crictl_version = DEFAULT_CRICTL_VERSION.to_string();
    }
    if let Some(v) = cm.version.strip_prefix('v') {
        cm.version = v.to_string();
    }
    if !cm.crictl_version.starts_with('v') {
        cm.crictl_version = format!("v{}", cm.crictl_version);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{ApiEndpoint, InstanceInfo, KKLoadBalancerSpec, Nodes};

    fn instance(name: &str, address: &str) -> InstanceInfo {
        InstanceInfo {
            name: name.into(),
            address: address.into(),
            ..Default::default()
        }
    }

    fn cluster() -> KKClusterSpec {
        KKClusterSpec {
            nodes: Nodes {
                auth: Auth::default(),
                instances: vec![instance("n1", "192.168.0.3")],
            },
            control_plane_load_balancer: Some(KKLoadBalancerSpec {
                host: "192.168.0.100".into(),
            }),
            ..Default::default()
        }
    }

    #[test]
    fn cluster_defaults_as_kubekeys_webhook() {
        let mut spec = cluster();
        default_kkcluster_spec(&mut spec);
        assert_eq!(spec.distribution, "kubernetes");
        assert_eq!(spec.nodes.auth.user, "root");
        assert_eq!(spec.nodes.auth.port, Some(22));
        assert_eq!(spec.nodes.auth.timeout.as_deref(), Some("30s"));
        let i = &spec.nodes.instances[0];
        assert_eq!(i.roles, vec![Role::ControlPlane, Role::Worker]);
        assert_eq!(i.internal_address, "192.168.0.3");
        assert_eq!(i.arch, "amd64");
        assert_eq!(
            spec.control_plane_endpoint,
            ApiEndpoint {
                host: "192.168.0.100".into(),
                port: 6443
            }
        );
    }

    #[test]
    fn cluster_defaults_keep_what_is_set() {
        let mut spec = cluster();
        spec.distribution = "k3s".into();
        spec.nodes.auth.user = "ubuntu".into();
        spec.nodes.auth.port = Some(2222);
        spec.nodes.auth.timeout = Some("1m".into());
        spec.nodes.instances[0].roles = vec![Role::Worker];
        spec.nodes.instances[0].internal_address = "10.0.0.3".into();
        spec.nodes.instances[0].arch = "arm64".into();
        spec.control_plane_endpoint = ApiEndpoint {
            host: "api.example.com".into(),
            port: 8443,
        };
        let before = spec.clone();
        default_kkcluster_spec(&mut spec);
        assert_eq!(spec, before);
    }

    #[test]
    fn k8s_is_spelled_kubernetes() {
        let mut spec = cluster();
        spec.distribution = "k8s".into();
        default_kkcluster_spec(&mut spec);
        assert_eq!(spec.distribution, "kubernetes");
    }

    #[test]
    fn endpoint_port_defaults_when_only_host_is_set() {
        let mut spec = cluster();
        spec.control_plane_load_balancer = None;
        spec.control_plane_endpoint.host = "api.example.com".into();
        default_kkcluster_spec(&mut spec);
        assert_eq!(spec.control_plane_endpoint.port, 6443);
        // Neither host nor load balancer: nothing to default from (validation reports it).
        let mut spec = cluster();
        spec.control_plane_load_balancer = None;
        default_kkcluster_spec(&mut spec);
        assert_eq!(spec.control_plane_endpoint, ApiEndpoint::default());
    }

    #[test]
    fn defaulting_is_idempotent() {
        let mut spec = cluster();
        default_kkcluster_spec(&mut spec);
        let once = spec.clone();
        default_kkcluster_spec(&mut spec);
        assert_eq!(spec, once);
        let mut cm = ContainerManager {
            type_: "docker".into(),
            version: "v24.0.7".into(),
            ..Default::default()
        };
        default_container_manager(&mut cm);
        let once = cm.clone();
        default_container_manager(&mut cm);
        assert_eq!(cm, once);
    }

    #[test]
    fn containerd_is_the_default_runtime() {
        let mut spec = KKMachineSpec::default();
        default_kkmachine_spec(&mut spec);
        let cm = &spec.container_manager;
        assert_eq!(cm.type_, "containerd");
        assert_eq!(cm.version, "1.6.4");
        assert_eq!(cm.cri_socket, "unix:///var/run/containerd/containerd.sock");
        assert_eq!(cm.crictl_version, "v1.24.0");
        assert_eq!(cm.cri_dockerd_version, "");
        assert_eq!(spec.repository, None);
    }

    #[test]
    fn docker_gets_cri_dockerd() {
        let mut cm = ContainerManager {
            type_: "docker".into(),
            ..Default::default()
        };
        default_container_manager(&mut cm);
        assert_eq!(cm.version, "20.10.8");
        assert_eq!(cm.cri_dockerd_version, "0.2.6");
        assert_eq!(cm.cri_socket, "unix:///run/cri-dockerd.sock");
        assert_eq!(cm.crictl_version, "v1.24.0");
    }

    #[test]
    fn versions_are_normalised() {
        let mut cm = ContainerManager {
            version: "v1.7.13".into(),
            crictl_version: "1.29.0".into(),
            ..Default::default()
        };
        default_container_manager(&mut cm);
        assert_eq!(cm.version, "1.7.13");
        assert_eq!(cm.crictl_version, "v1.29.0");
    }

    #[test]
    fn a_given_cri_socket_means_an_existing_runtime() {
        let mut cm = ContainerManager {
            cri_socket: "unix:///run/crio/crio.sock".into(),
            ..Default::default()
        };
        let before = cm.clone();
        default_container_manager(&mut cm);
        assert_eq!(cm, before);
    }

    #[test]
    fn template_and_instance_are_defaulted_like_machines() {
        let mut t = KKMachineTemplate::new("t", Default::default());
        default_kkmachinetemplate(&mut t);
        assert_eq!(t.spec.template.spec.container_manager.type_, "containerd");
        let mut i = KKInstance::new(
            "n1",
            KKInstanceSpec {
                name: "n1".into(),
                address: "192.168.0.3".into(),
                ..Default::default()
            },
        );
        default_kkinstance(&mut i);
        assert_eq!(i.spec.internal_address, "192.168.0.3");
        assert_eq!(i.spec.arch, "amd64");
        assert_eq!(i.spec.container_manager.version, "1.6.4");
        let mut m = KKMachine::new("m", Default::default());
        default_kkmachine(&mut m);
        assert_eq!(m.spec.container_manager.type_, "containerd");
    }
}
