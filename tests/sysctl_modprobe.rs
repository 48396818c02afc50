//! `sysctl` (ansible.posix.sysctl) and `modprobe` (community.general.modprobe) on a real
//! Debian test host: the files and values they leave there. The oracle fixtures
//! 209_sysctl and 210_modprobe compare their results with the collections' own.

use crate::common;

use common::Project;
use testbed::TestBed;

const SITE: &str = r##"
- hosts: all
  gather_facts: false
  tasks:
    - name: seed
      copy:
        content: "# kept\nvm.x = 1\n  net.other=  2 \nvm.x=3\n"
        dest: /tmp/kk-sysctl.conf
    - name: file only
      ansible.posix.sysctl:
        name: net.other
        value: "5"
        sysctl_file: /tmp/kk-sysctl.conf
        reload: false
      register: file_only
    - name: file only again
      sysctl:
        key: net.other
        val: "5"
        sysctl_file: /tmp/kk-sysctl.conf
        reload: false
      register: file_again
    - name: set now
      sysctl:
        name: net.ipv4.ip_forward
        value: true
        sysctl_set: true
        sysctl_file: /etc/sysctl.d/99-kk.conf
      register: set_now
    - name: set now again
      sysctl:
        name: net.ipv4.ip_forward
        value: "1"
        sysctl_set: true
        sysctl_file: /etc/sysctl.d/99-kk.conf
      register: set_again
    - name: conf after set
      command: cat /etc/sysctl.d/99-kk.conf
    - name: remove in check mode
      sysctl:
        name: net.ipv4.ip_forward
        state: absent
        sysctl_file: /etc/sysctl.d/99-kk.conf
      check_mode: true
      register: rm_check
    - name: remove
      sysctl:
        name: net.ipv4.ip_forward
        state: absent
        sysctl_file: /etc/sysctl.d/99-kk.conf
        reload: false
      register: rm
    - name: dnf on a Debian host
      dnf:
        name: kk-nothing
      register: dnf_here
      ignore_errors: true
    - name: yum in check mode on a Debian host
      yum:
        name: kk-nothing
      check_mode: true
      ignore_errors: true
    - name: load a module
      community.general.modprobe:
        name: kk_no_such_module
      register: mod
      ignore_errors: true
"##;

#[test]
fn sysctl_writes_sets_and_removes_and_modprobe_reports_the_host() {
    let bed = TestBed::start(1).expect("boot test hosts");
    let name = bed.hosts()[0].name.clone();
    let p = Project::new();
    p.file("inventory.yaml", &ansible_inventory(&bed))
        .file("site.yaml", SITE);
    let r = p.run_json(&["--workdir", "wd"]);
    let status = |t: &str| r.status(t, &name);
    assert_eq!(status("file only"), "changed", "{}", r.describe());
    assert_eq!(status("file only again"), "ok", "{}", r.describe());
    // The collection normalises every `k=v` line, keeps the first of a key.
    let conf = bed.ssh(0, "cat /tmp/kk-sysctl.conf");
    assert_eq!(
        String::from_utf8_lossy(&conf.stdout),
        "# kept\nvm.x=1\nnet.other=5\n"
    );
    assert_eq!(status("set now"), "changed", "{}", r.describe());
    assert_eq!(status("set now again"), "ok", "{}", r.describe());
    let fwd = bed.ssh(0, "cat /proc/sys/net/ipv4/ip_forward");
    assert_eq!(String::from_utf8_lossy(&fwd.stdout), "1\n");
    assert_eq!(
        r.result("conf after set", &name)["result"]["stdout"],
        "net.ipv4.ip_forward=1"
    );
    assert_eq!(status("remove in check mode"), "changed");
    assert_eq!(status("remove"), "changed", "{}", r.describe());
    let after = bed.ssh(0, "cat /etc/sysctl.d/99-kk.conf");
    assert_eq!(String::from_utf8_lossy(&after.stdout), "");
    // dnf and yum (one action in ansible-core 2.19) fail before anything runs on a host
    // whose package manager is neither, with the action's two-line message.
    let not_dnf = serde_json::json!([
        "Could not detect which major revision of dnf is in use, which is required to determine module backend.",
        "You should manually specify use_backend to tell the module whether to use the dnf4 or dnf5 backend})"
    ]);
    let d = r.result("dnf on a Debian host", &name);
    assert_eq!(d["result"]["msg"], not_dnf, "{}", r.describe());
    let y = r.result("yum in check mode on a Debian host", &name);
    assert_eq!(y["result"]["msg"], not_dnf, "{}", r.describe());
    // No such module on the host: modprobe's own error, as the collection reports it.
    let m = r.result("load a module", &name);
    assert_eq!(m["result"]["failed"], true, "{}", r.describe());
    let msg = m["result"]["msg"].as_str().unwrap_or_default().to_string();
    assert!(
        msg.contains("kk_no_such_module") || msg.contains("No such file"),
        "{}",
        msg
    );
}

/// An Ansible-style inventory of the test hosts (host, port, user, key per host).
fn ansible_inventory(bed: &TestBed) -> String {
    let mut s = String::from("all:\n  hosts:\n");
    for h in bed.hosts() {
        s.push_str(&format!(
            "    {}:\n      ansible_host: {}\n      ansible_port: {}\n      ansible_user: root\n      ansible_ssh_private_key_file: {:?}\n",
            h.name,
            h.ip,
            h.port,
            h.root_key_path.to_string_lossy()
        ));
    }
    s
}
