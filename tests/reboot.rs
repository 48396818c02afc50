//! `reboot` (ansible.builtin.reboot) rebooting a real test host, with kk and then with
//! ansible-playbook on the same host: both see the host go down and come back (its PID 1
//! is a new process) and report `rebooted: true`, `changed: true` with an `elapsed`. The
//! oracle fixture 247_reboot covers what does not reboot; a real reboot runs here, on a
//! host of its own, because it cuts every connection to the host (the oracle's hosts are
//! shared by fixtures running at once).
//!
//! A test host is a PID namespace: `systemctl reboot` ends its systemd, and the testbed
//! boots it again as systemd-nspawn would (crates/testbed). The kernel's boot_id does not
//! change there, so the playbook gives `boot_time_command`: the start time of the
//! namespace's PID 1, new at every boot. `shutdown -r` needs systemd-logind, which test
//! hosts mask, so `reboot_command` is `systemctl reboot`.

use std::process::Command;

use crate::common;

use common::{Project, Run};
use testbed::TestBed;

const SITE: &str = r#"
- hosts: all
  gather_facts: false
  tasks:
    - name: Boot before
      command: cut -d' ' -f22 /proc/1/stat
      register: before
    - name: Reboot
      ansible.builtin.reboot:
        reboot_command: systemctl reboot
        boot_time_command: cut -d' ' -f22 /proc/1/stat
        connect_timeout: 5
        post_reboot_delay: 0
        msg: kk reboot test
      register: r
    - name: Boot after
      command: cut -d' ' -f22 /proc/1/stat
      register: after
    - name: Show
      debug:
        msg:
          rebooted: "{{ r.rebooted }}"
          changed: "{{ r.changed }}"
          failed: "{{ r.failed }}"
          elapsed_is_number: "{{ r.elapsed is number }}"
          new_boot: "{{ before.stdout != after.stdout }}"
"#;

/// What both tools must report.
fn check(run: &Run, tool: &str) {
    assert_eq!(run.code, 0, "{tool}: {}", run.describe());
    assert_eq!(
        run.status("Reboot", "n1"),
        "changed",
        "{tool}: {}",
        run.describe()
    );
    assert_eq!(
        run.msg("Show", "n1"),
        serde_json::json!({
            "rebooted": true,
            "changed": true,
            "failed": false,
            "elapsed_is_number": true,
            "new_boot": true,
        }),
        "{tool}: {}",
        run.describe()
    );
}

#[test]
fn reboot_brings_a_test_host_down_and_back_like_ansible() {
    let bed = TestBed::start(1).unwrap_or_else(|e| panic!("cannot boot a test host: {e}"));
    let h = &bed.hosts()[0];
    let p = Project::new();
    p.file("site.yaml", SITE).file(
        "inventory.yaml",
        &format!(
            "all:\n  hosts:\n    n1:\n      ansible_host: {}\n      ansible_port: {}\n      ansible_user: root\n      ansible_ssh_private_key_file: {}\n      ansible_ssh_common_args: \"-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null\"\n      ansible_python_interpreter: /usr/bin/python3\n",
            h.ip,
            h.port,
            h.root_key_path.display()
        ),
    );
    check(&p.run_json(&[]), "kk");

    let oracle = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/oracle");
    let bin = common::oracle_venv_bin();
    let out = Command::new(bin.join("ansible-playbook"))
        .args(["-i", "inventory.yaml", "site.yaml"])
        .current_dir(p.dir())
        .env("ANSIBLE_STDOUT_CALLBACK", "kk_json")
        .env("ANSIBLE_CALLBACK_PLUGINS", oracle.join("callback"))
        .env("ANSIBLE_HOST_KEY_CHECKING", "False")
        .env("ANSIBLE_RETRY_FILES_ENABLED", "False")
        .env("ANSIBLE_NOCOLOR", "1")
        .env("ANSIBLE_LOCAL_TEMP", p.path("ansible-local"))
        .env("ANSIBLE_SSH_CONTROL_PATH_DIR", p.path("ansible-cp"))
        .env_remove("ANSIBLE_FORCE_COLOR")
        .output()
        .expect("run ansible-playbook");
    check(&Run::from_output(out), "ansible-playbook");
}
