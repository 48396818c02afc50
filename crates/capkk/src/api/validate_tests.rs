//! One test per validation rule: a valid object, then the rule broken, checking the path,
//! the kind of error and that the message says what was expected and found.

use super::*;

fn instance(name: &str, address: &str) -> InstanceInfo {
    InstanceInfo {
        name: name.into(),
        address: address.into(),
        ..Default::default()
    }
}

/// The seed's quick-start KKCluster, defaulted.
fn cluster() -> KKCluster {
    let mut c = KKCluster::new(
        "quick-start",
        KKClusterSpec {
            nodes: Nodes {
                auth: Auth {
                    user: "ubuntu".into(),
                    password: "P@88w0rd".into(),
                    ..Default::default()
                },
                instances: vec![
                    instance("test1", "192.168.0.3"),
                    instance("test2", "192.168.0.4"),
                    instance("test3", "192.168.0.5"),
                ],
            },
            control_plane_load_balancer: Some(KKLoadBalancerSpec {
                host: "192.168.0.100".into(),
            }),
            ..Default::default()
        },
    );
    c.metadata.namespace = Some("default".into());
    default_kkcluster(&mut c);
    c
}

/// The errors of `c`, asserting there are some.
fn errors(c: &KKCluster) -> Vec<FieldError> {
    validate_kkcluster(c).expect_err("must be invalid").errors
}

fn one(errs: &[FieldError], path: &str) -> FieldError {
    let found: Vec<_> = errs.iter().filter(|e| e.path == path).collect();
    assert_eq!(found.len(), 1, "one error at {}: {:#?}", path, errs);
    found[0].clone()
}

#[test]
fn the_seed_sample_is_valid() {
    validate_kkcluster(&cluster()).unwrap();
}

#[test]
fn message_names_path_expected_and_found() {
    let mut c = cluster();
    c.spec.nodes.instances[2].address = "300.1.1.1".into();
    let err = validate_kkcluster(&c).unwrap_err();
    assert_eq!(
        err.to_string(),
        "KKCluster default/quick-start is invalid: spec.nodes.instances[2].address: Invalid value: \
         expected an IP address or a host name, found \"300.1.1.1\""
    );
    let e = &err.errors[0];
    assert_eq!(e.kind, FieldErrorKind::Invalid);
    assert_eq!(e.path, "spec.nodes.instances[2].address");
}

#[test]
fn addresses_may_be_host_names() {
    let mut c = cluster();
    c.spec.nodes.instances[0].address = "node1.example.com".into();
    c.spec.nodes.instances[0].internal_address = "10.0.0.3".into();
    validate_kkcluster(&c).unwrap();
}

#[test]
fn internal_address_must_be_an_address() {
    let mut c = cluster();
    c.spec.nodes.instances[1].internal_address = "10.0.0.".into();
    let e = one(&errors(&c), "spec.nodes.instances[1].internalAddress");
    assert_eq!(e.kind, FieldErrorKind::Invalid);
}

#[test]
fn instance_names_are_unique_object_names() {
    let mut c = cluster();
    c.spec.nodes.instances[2].name = "test1".into();
    let e = one(&errors(&c), "spec.nodes.instances[2].name");
    assert_eq!(e.kind, FieldErrorKind::Duplicate);
    assert!(e.expected.contains("spec.nodes.instances[0].name"), "{e}");
    let mut c = cluster();
    c.spec.nodes.instances[0].name = "Test1".into();
    assert_eq!(
        one(&errors(&c), "spec.nodes.instances[0].name").kind,
        FieldErrorKind::Invalid
    );
    let mut c = cluster();
    c.spec.nodes.instances[0].name = String::new();
    assert_eq!(
        one(&errors(&c), "spec.nodes.instances[0].name").kind,
        FieldErrorKind::Required
    );
}

#[test]
fn addresses_are_unique() {
    let mut c = cluster();
    c.spec.nodes.instances[1].address = "192.168.0.3".into();
    c.spec.nodes.instances[1].internal_address = "192.168.0.3".into();
    let errs = errors(&c);
    assert_eq!(
        one(&errs, "spec.nodes.instances[1].address").kind,
        FieldErrorKind::Duplicate
    );
    assert_eq!(
        one(&errs, "spec.nodes.instances[1].internalAddress").kind,
        FieldErrorKind::Duplicate
    );
}

#[test]
fn at_least_one_instance() {
    let mut c = cluster();
    c.spec.nodes.instances.clear();
    assert_eq!(
        one(&errors(&c), "spec.nodes.instances").kind,
        FieldErrorKind::Required
    );
}

#[test]
fn roles_are_not_repeated() {
    let mut c = cluster();
    c.spec.nodes.instances[0].roles = vec![Role::Worker, Role::Worker];
    let e = one(&errors(&c), "spec.nodes.instances[0].roles[1]");
    assert_eq!(e.kind, FieldErrorKind::Duplicate);
    assert!(e.found.contains("worker"));
}

#[test]
fn unknown_roles_do_not_deserialize() {
    let yaml = "name: n\naddress: 10.0.0.1\nroles: [etcd]\n";
    let err = serde_yaml::from_str::<InstanceInfo>(yaml)
        .unwrap_err()
        .to_string();
    assert!(err.contains("unknown variant `etcd`"), "{err}");
    assert!(err.contains("control-plane"), "{err}");
}

#[test]
fn distribution_and_arch_are_known() {
    let mut c = cluster();
    c.spec.distribution = "openshift".into();
    c.spec.nodes.instances[0].arch = "riscv64".into();
    let errs = errors(&c);
    let e = one(&errs, "spec.distribution");
    assert_eq!(e.kind, FieldErrorKind::NotSupported);
    assert_eq!(e.expected, "one of \"kubernetes\", \"k3s\"");
    assert_eq!(e.found, "\"openshift\"");
    assert_eq!(
        one(&errs, "spec.nodes.instances[0].arch").kind,
        FieldErrorKind::NotSupported
    );
}

#[test]
fn every_instance_needs_a_credential_and_secrets_are_not_quoted() {
    let mut c = cluster();
    c.spec.nodes.auth.password.clear();
    c.spec.nodes.instances[1].auth.private_key_path = "/root/.ssh/id_ed25519".into();
    let errs = errors(&c);
    assert_eq!(
        one(&errs, "spec.nodes.instances[0].auth").kind,
        FieldErrorKind::Required
    );
    assert!(errs
        .iter()
        .all(|e| e.path != "spec.nodes.instances[1].auth"));
    let mut c = cluster();
    c.spec.nodes.auth.private_key = "not a key: s3cr3t".into();
    let err = validate_kkcluster(&c).unwrap_err();
    assert_eq!(
        one(&err.errors, "spec.nodes.auth.privateKey").found,
        "<hidden>"
    );
    assert!(!err.to_string().contains("s3cr3t"));
    assert!(!err.to_string().contains("P@88w0rd"));
}

#[test]
fn auth_port_timeout_and_secret() {
    let mut c = cluster();
    c.spec.nodes.auth.port = Some(0);
    c.spec.nodes.auth.timeout = Some("30".into());
    c.spec.nodes.instances[0].auth.secret = "SSH_Key".into();
    let errs = errors(&c);
    assert_eq!(
        one(&errs, "spec.nodes.auth.port").kind,
        FieldErrorKind::Invalid
    );
    assert_eq!(one(&errs, "spec.nodes.auth.timeout").found, "\"30\"");
    assert_eq!(
        one(&errs, "spec.nodes.instances[0].auth.secret").kind,
        FieldErrorKind::Invalid
    );
}

#[test]
fn load_balancer_host_is_required_and_free() {
    let mut c = cluster();
    c.spec.control_plane_load_balancer = Some(KKLoadBalancerSpec {
        host: "192.168.0.4".into(),
    });
    let e = one(&errors(&c), "spec.controlPlaneLoadBalancer.host");
    assert!(e.expected.contains("spec.nodes.instances[1]"), "{e}");
    let mut c = cluster();
    c.spec.control_plane_load_balancer = Some(KKLoadBalancerSpec::default());
    assert_eq!(
        one(&errors(&c), "spec.controlPlaneLoadBalancer.host").kind,
        FieldErrorKind::Required
    );
    // No load balancer at all is fine when the endpoint is given (an external one).
    let mut c = cluster();
    c.spec.control_plane_load_balancer = None;
    c.spec.control_plane_endpoint = ApiEndpoint {
        host: "api.example.com".into(),
        port: 6443,
    };
    validate_kkcluster(&c).unwrap();
    c.spec.control_plane_endpoint = ApiEndpoint::default();
    assert_eq!(
        one(&errors(&c), "spec.controlPlaneLoadBalancer.host").kind,
        FieldErrorKind::Required
    );
}

#[test]
fn endpoint_host_and_port() {
    let mut c = cluster();
    c.spec.control_plane_endpoint = ApiEndpoint {
        host: "api example".into(),
        port: 70000,
    };
    let errs = errors(&c);
    one(&errs, "spec.controlPlaneEndpoint.host");
    one(&errs, "spec.controlPlaneEndpoint.port");
}

#[test]
fn load_balancer_is_immutable() {
    let old = cluster();
    let mut new = old.clone();
    validate_kkcluster_update(&old, &new).unwrap();
    new.spec.control_plane_load_balancer = Some(KKLoadBalancerSpec {
        host: "192.168.0.101".into(),
    });
    let err = validate_kkcluster_update(&old, &new).unwrap_err();
    let e = one(&err.errors, "spec.controlPlaneLoadBalancer.host");
    assert_eq!(e.kind, FieldErrorKind::Forbidden);
    assert!(e.expected.contains("192.168.0.100"), "{e}");
}

fn with_override(o: Override) -> KKCluster {
    let mut c = cluster();
    c.spec.component = Some(Component {
        zone: "cn".into(),
        host: "files.example.com:8080".into(),
        overrides: vec![o],
    });
    c
}

fn kubeadm_override() -> Override {
    Override {
        id: "kubeadm".into(),
        arch: "amd64".into(),
        version: "v1.33.0".into(),
        url: "https://files.example.com/kubeadm".into(),
        checksum: Checksum {
            value: "0f".repeat(32),
            ..Default::default()
        },
        ..Default::default()
    }
}

#[test]
fn a_complete_override_is_valid() {
    validate_kkcluster(&with_override(kubeadm_override())).unwrap();
}

#[test]
fn sha256_is_64_hex_digits() {
    let mut o = kubeadm_override();
    o.checksum.value = "abc123".into();
    let e = one(
        &errors(&with_override(o)),
        "spec.component.overrides[0].checksum.value",
    );
    assert_eq!(e.expected, "a sha256: 64 hexadecimal digits");
    assert_eq!(e.found, "\"abc123\"");
    let mut o = kubeadm_override();
    o.checksum.value = format!("{}z", "a".repeat(63));
    one(
        &errors(&with_override(o)),
        "spec.component.overrides[0].checksum.value",
    );
}

#[test]
fn override_id_arch_version_url_are_checked() {
    let o = Override {
        id: "kube-proxy".into(),
        arch: "x86".into(),
        version: "latest".into(),
        url: "ftp://files/kubeadm".into(),
        path: "/a b".into(),
        ..Default::default()
    };
    let errs = errors(&with_override(o));
    for f in ["id", "arch", "version", "url", "path"] {
        one(&errs, &format!("spec.component.overrides[0].{}", f));
    }
    let o = Override::default();
    assert_eq!(
        one(&errors(&with_override(o)), "spec.component.overrides[0].id").kind,
        FieldErrorKind::Required
    );
}

#[test]
fn one_override_per_component() {
    let mut c = with_override(kubeadm_override());
    c.spec
        .component
        .as_mut()
        .unwrap()
        .overrides
        .push(kubeadm_override());
    assert_eq!(
        one(&errors(&c), "spec.component.overrides[1]").kind,
        FieldErrorKind::Duplicate
    );
}

#[test]
fn component_zone_and_host() {
    let mut c = with_override(kubeadm_override());
    let comp = c.spec.component.as_mut().unwrap();
    comp.zone = "us".into();
    comp.host = "files example".into();
    let errs = errors(&c);
    one(&errs, "spec.component.zone");
    one(&errs, "spec.component.host");
}

#[test]
fn registry_addresses() {
    let mut c = cluster();
    c.spec.registry = Some(Registry {
        private_registry: "dockerhub.kubekey.local:5000/library".into(),
        registry_mirrors: vec!["https://mirror.example.com".into()],
        insecure_registries: vec!["10.0.0.1:5000".into()],
        ..Default::default()
    });
    validate_kkcluster(&c).unwrap();
    let r = c.spec.registry.as_mut().unwrap();
    r.private_registry = "a b".into();
    r.registry_mirrors = vec!["mirror.example.com".into()];
    r.insecure_registries = vec!["".into()];
    r.auth.ca_file = "ca.crt".into();
    let errs = errors(&c);
    for p in [
        "spec.registry.privateRegistry",
        "spec.registry.registryMirrors[0]",
        "spec.registry.insecureRegistries[0]",
        "spec.registry.auth.caFile",
    ] {
        one(&errs, p);
    }
}

#[test]
fn every_problem_is_reported_at_once() {
    let mut c = cluster();
    c.spec.distribution = "x".into();
    c.spec.nodes.instances[0].address = "a b".into();
    c.spec.nodes.instances[1].name = "B".into();
    assert_eq!(errors(&c).len(), 3);
}

fn machine(spec: KKMachineSpec) -> KKMachine {
    let mut m = KKMachine::new("m1", spec);
    default_kkmachine(&mut m);
    m
}

#[test]
fn a_defaulted_machine_is_valid() {
    validate_kkmachine(&machine(KKMachineSpec::default())).unwrap();
    let mut spec = KKMachineSpec {
        roles: vec![Role::ControlPlane],
        repository: Some(Repository {
            iso: "none".into(),
            packages: vec!["socat".into(), "conntrack".into()],
            ..Default::default()
        }),
        ..Default::default()
    };
    spec.container_manager.type_ = "docker".into();
    validate_kkmachine(&machine(spec)).unwrap();
}

#[test]
fn container_manager_type_and_versions() {
    let mut spec = KKMachineSpec::default();
    spec.container_manager.type_ = "cri-o".into();
    spec.container_manager.crictl_version = "latest".into();
    let err = validate_kkmachine(&machine(spec)).unwrap_err();
    let e = one(&err.errors, "spec.containerManager.type");
    assert_eq!(e.kind, FieldErrorKind::NotSupported);
    assert_eq!(e.expected, "one of \"containerd\", \"docker\"");
    one(&err.errors, "spec.containerManager.crictlVersion");
    // A CRI socket alone is a runtime already there: valid without a type.
    let mut spec = KKMachineSpec::default();
    spec.container_manager.cri_socket = "unix:///run/crio/crio.sock".into();
    validate_kkmachine(&machine(spec)).unwrap();
    let mut spec = KKMachineSpec::default();
    spec.container_manager.cri_socket = "tcp://1.2.3.4".into();
    one(
        &validate_kkmachine(&machine(spec)).unwrap_err().errors,
        "spec.containerManager.criSocket",
    );
}

#[test]
fn cri_dockerd_only_with_docker() {
    let mut spec = KKMachineSpec::default();
    spec.container_manager.cri_dockerd_version = "0.3.1".into();
    let err = validate_kkmachine(&machine(spec)).unwrap_err();
    assert_eq!(
        one(&err.errors, "spec.containerManager.criDockerdVersion").kind,
        FieldErrorKind::Forbidden
    );
}

#[test]
fn repository_iso_and_packages() {
    let spec = KKMachineSpec {
        repository: Some(Repository {
            iso: "../etc/passwd".into(),
            packages: vec!["socat".into(), "socat; reboot".into(), "socat".into()],
            ..Default::default()
        }),
        ..Default::default()
    };
    let errs = validate_kkmachine(&machine(spec)).unwrap_err().errors;
    one(&errs, "spec.repository.iso");
    assert_eq!(
        one(&errs, "spec.repository.packages[1]").kind,
        FieldErrorKind::Invalid
    );
    assert_eq!(
        one(&errs, "spec.repository.packages[2]").kind,
        FieldErrorKind::Duplicate
    );
    let spec = KKMachineSpec {
        repository: Some(Repository {
            iso: "ubuntu-22.04-debs-amd64.iso".into(),
            ..Default::default()
        }),
        ..Default::default()
    };
    validate_kkmachine(&machine(spec)).unwrap();
}

#[test]
fn provider_and_instance_ids() {
    let spec = KKMachineSpec {
        provider_id: Some("aws:///i-1".into()),
        instance_id: Some("Node_1".into()),
        ..Default::default()
    };
    let errs = validate_kkmachine(&machine(spec)).unwrap_err().errors;
    one(&errs, "spec.providerID");
    one(&errs, "spec.instanceID");
    let spec = KKMachineSpec {
        provider_id: Some("kk://default/test1".into()),
        instance_id: Some("test1".into()),
        ..Default::default()
    };
    validate_kkmachine(&machine(spec)).unwrap();
}

#[test]
fn template_paths_are_under_template_spec() {
    let mut t = KKMachineTemplate::new(
        "quick-start",
        KKMachineTemplateSpec {
            template: KKMachineTemplateResource {
                spec: KKMachineSpec {
                    roles: vec![Role::ControlPlane, Role::ControlPlane],
                    ..Default::default()
                },
            },
        },
    );
    default_kkmachinetemplate(&mut t);
    let err = validate_kkmachinetemplate(&t).unwrap_err();
    assert_eq!(err.kind, "KKMachineTemplate");
    one(&err.errors, "spec.template.spec.roles[1]");
}

#[test]
fn instances() {
    let spec = KKInstanceSpec {
        name: "test1".into(),
        address: "192.168.0.3".into(),
        auth: Auth {
            secret: "ssh-key".into(),
            ..Default::default()
        },
        ..Default::default()
    };
    let mut i = KKInstance::new("test1", spec);
    default_kkinstance(&mut i);
    validate_kkinstance(&i).unwrap();
    i.spec.auth.secret.clear();
    i.spec.address = "".into();
    i.spec.arch = "s390x".into();
    let errs = validate_kkinstance(&i).unwrap_err().errors;
    assert_eq!(one(&errs, "spec.auth").kind, FieldErrorKind::Required);
    assert_eq!(one(&errs, "spec.address").kind, FieldErrorKind::Required);
    one(&errs, "spec.arch");
}
