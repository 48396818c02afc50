//! uninstall/kubernetes' network clean-up (roles/uninstall/kubernetes/tasks/network.yaml) on
//! one real test host, with the leftovers of a Kubernetes node made by hand (veth pairs stand
//! in for the dummy links, the hosts cannot load the dummy module): kube-proxy's
//! kube-ipvs0, nodelocaldns, the cni0 bridge, a calico veth-like link, a CNI network
//! namespace, the kube-vip VIP (and a longer address starting with the same digits, which
//! must stay), kube-proxy's and calico's iptables chains in filter and nat next to rules of
//! the host's own, which must stay. `--check` changes nothing; the run removes exactly kk's
//! leftovers; a second run changes nothing.

use crate::common;

use common::{sh, Project};
use testbed::TestBed;

const PLAY: &str = r#"- hosts: k8s_cluster
  gather_facts: false
  roles: [defaults]
  tasks:
    - import_role:
        name: uninstall/kubernetes
        tasks_from: network
"#;

/// The host's network state the test looks at.
fn net(bed: &TestBed) -> String {
    sh(
        bed,
        0,
        "ip -o link show | awk -F': ' '{ sub(/@.*/, \"\", $2); print $2 }' | sort; ip netns list; \
         ip -o addr show | awk '{ print $2, $4 }'; iptables-save | grep -v '^#'",
    )
}

#[test]
fn kube_links_vip_and_chains_go_the_hosts_own_rules_stay() {
    let bed = TestBed::start(1).expect("boot a test host");
    let vip = bed.subnet().replace(".0/24", ".25");
    let p = Project::new();
    std::os::unix::fs::symlink(common::artifacts::repo().join("roles"), p.path("roles")).unwrap();
    let inv = common::bed_inventory_hosts(&bed, &["cp1"])
        + "  groups:\n    k8s_cluster:\n      groups: [kube_control_plane]\n    kube_control_plane:\n      hosts: [cp1]\n";
    p.file("inventory.yaml", &inv)
        .file("site.yaml", PLAY)
        .file(
            "config.yaml",
            &format!(
                "apiVersion: kubekey.kubesphere.io/v1\nkind: Config\nspec:\n  cni: {{type: calico}}\n  kubernetes:\n    control_plane_endpoint: {{type: kube_vip, kube_vip: {{address: {vip}}}}}\n"
            ),
        );
    let dev = sh(&bed, 0, "ip -o route get 1.1.1.1 2>/dev/null | awk '{ for (i = 1; i < NF; i++) if ($i == \"dev\") print $(i+1) }' | head -n1; true");
    let dev = if dev.is_empty() {
        sh(
            &bed,
            0,
            "ip -o -4 addr show scope global | awk '{ print $2; exit }'",
        )
    } else {
        dev
    };
    sh(
        &bed,
        0,
        &format!(
            "set -e
ip link add kube-ipvs0 type veth peer name p-ipvs
ip link add nodelocaldns type veth peer name p-nld
ip link add cni0 type bridge
ip link add cali0123abcd type veth peer name p-cali
ip link add keep0 type veth peer name keep1
ip netns add cni-1234
ip netns add mine
ip addr add {vip}/32 dev {dev}
ip addr add {vip}0/32 dev {dev}
iptables -N KUBE-SERVICES
iptables -A INPUT -j KUBE-SERVICES
iptables -N cali-INPUT
iptables -A INPUT -j cali-INPUT
iptables -A INPUT -p tcp --dport 2222 -j ACCEPT
iptables -t nat -N KUBE-POSTROUTING
iptables -t nat -A POSTROUTING -j KUBE-POSTROUTING
iptables -t nat -A POSTROUTING -s 10.99.0.0/16 -j MASQUERADE
"
        ),
    );
    let before = net(&bed);
    let run = |extra: &[&str]| p.kk_flow(&["run", "site.yaml"], extra);

    let c = run(&["--check"]);
    c.code(0);
    assert!(
        c.recap("cp1")["changed"].as_i64() > Some(0),
        "{}",
        c.describe()
    );
    assert_eq!(net(&bed), before, "--check changed the network");

    run(&[]).code(0);
    let after = net(&bed);
    for gone in [
        "kube-ipvs0",
        "nodelocaldns",
        "\ncni0",
        "cali0123abcd",
        "p-ipvs",
        "cni-1234",
        &format!(" {}/32", vip),
        "KUBE-",
        "cali-",
    ] {
        assert!(!after.contains(gone), "{} is still there:\n{}", gone, after);
    }
    for kept in [
        "keep0".to_string(),
        "mine".into(),
        format!(" {}0/32", vip),
        "-A INPUT -p tcp -m tcp --dport 2222 -j ACCEPT".into(),
        "-A POSTROUTING -s 10.99.0.0/16 -j MASQUERADE".into(),
    ] {
        assert!(after.contains(&kept), "{} was removed:\n{}", kept, after);
    }

    let again = run(&[]);
    again.code(0);
    assert_eq!(again.recap("cp1")["changed"], 0, "{}", again.describe());
}
