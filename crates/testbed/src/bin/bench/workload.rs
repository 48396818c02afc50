//! What every tool runs: the benchmark playbook (kk, ansible-playbook), the equivalent
//! pyinfra deploy and raw OpenSSH script, written into the bench directory.

use super::*;

/// The benchmark playbook (kk and ansible-playbook): 20 task runs per host of the kinds a
/// cluster install uses. Read-only commands say `changed_when: false`, so a re-run with
/// everything in place reports `changed=0`.
pub(super) const PLAYBOOK: &str = r#"# kk benchmark playbook: 20 task runs per host.
- name: kk benchmark
  hosts: all
  gather_facts: false
  vars:
    bench_dir: /tmp/kkbench
    bench_skip: false
  tasks:
    - name: kernel release
      command: uname -r
      register: kernel
      changed_when: false
      when: not bench_skip
    - name: host name in capitals
      shell: echo {{ inventory_hostname }} | tr a-z A-Z
      register: upper
      changed_when: false
      when: not bench_skip
    - name: remember a greeting
      set_fact:
        greeting: "hello {{ upper.stdout }}"
      when: not bench_skip
    - name: bench directory
      file:
        path: "{{ bench_dir }}"
        state: directory
        mode: "0755"
      when: not bench_skip
    - name: kernel file
      copy:
        content: "kernel={{ kernel.stdout }}\n"
        dest: "{{ bench_dir }}/kernel.txt"
        mode: "0644"
      when: not bench_skip
    - name: config from a template
      template:
        src: bench.conf.j2
        dest: "{{ bench_dir }}/bench.conf"
        mode: "0644"
      when: not bench_skip
    - name: ten commands
      command: echo item {{ item }}
      loop: "{{ range(10) | list }}"
      changed_when: false
      when: not bench_skip
    - name: check what we have
      assert:
        that:
          - kernel.stdout | length > 0
          - greeting is defined
      when: not bench_skip
    - name: say hello
      debug:
        msg: "{{ greeting }}"
      when: not bench_skip
    - name: stat the config
      stat:
        path: "{{ bench_dir }}/bench.conf"
      register: conf
      when: not bench_skip
    - name: read the hostname
      command: cat /etc/hostname
      changed_when: false
      when: not bench_skip
"#;

/// The template both engines render (pyinfra gets the same variables as keywords).
pub(super) const TEMPLATE: &str = r#"# kk benchmark config for {{ inventory_hostname }}
greeting: {{ greeting }}
kernel: {{ kernel.stdout }}
{% for i in range(5) %}
slot{{ i }}: {{ (i * 7) % 5 }}
{% endfor %}
"#;

/// The pyinfra deploy doing the same remote work: the two commands whose output later
/// steps use are facts (pyinfra's way), the rest are operations; `set_fact`, `assert` and
/// `debug` are plain Python, as they cost no remote work in any engine.
pub(super) const DEPLOY: &str = r#"# pyinfra deploy equivalent to playbook.yml (same remote commands, uploads, template).
from io import StringIO

from pyinfra import host, logger
from pyinfra.facts.server import Command
from pyinfra.operations import files, server

BENCH_DIR = "/tmp/kkbench"

if str(host.data.get("bench_skip", "false")).lower() not in ("true", "1", "yes"):
    kernel = host.get_fact(Command, command="uname -r")
    upper = host.get_fact(Command, command="echo %s | tr a-z A-Z" % host.name)
    greeting = "hello %s" % upper
    files.directory(name="bench directory", path=BENCH_DIR, mode="755")
    files.put(
        name="kernel file",
        src=StringIO("kernel=%s\n" % kernel),
        dest=BENCH_DIR + "/kernel.txt",
        mode="644",
    )
    files.template(
        name="config from a template",
        src="templates/bench.conf.j2",
        dest=BENCH_DIR + "/bench.conf",
        mode="644",
        inventory_hostname=host.name,
        greeting=greeting,
        kernel={"stdout": kernel},
    )
    for i in range(10):
        server.shell(name="item %d" % i, commands=["echo item %d" % i])
    assert len(kernel) > 0 and greeting
    logger.info(greeting)
    server.shell(name="stat the config", commands=["stat " + BENCH_DIR + "/bench.conf"])
    server.shell(name="read the hostname", commands=["cat /etc/hostname"])
"#;

pub(super) fn write(path: &Path, text: &str) -> Result<(), String> {
    if let Some(p) = path.parent() {
        fs::create_dir_all(p).map_err(|e| format!("cannot create {}: {e}", p.display()))?;
    }
    fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Playbook, template, deploy file, inventories, ansible.cfg and the raw script.
pub(super) fn write_files(dir: &Path, bed: &TestBed) -> Result<(), String> {
    let n = bed.hosts().len();
    write(&dir.join("playbook.yml"), PLAYBOOK)?;
    write(&dir.join("templates/bench.conf.j2"), TEMPLATE)?;
    write(&dir.join("deploy.py"), DEPLOY)?;
    write(&dir.join("inventory.yaml"), &bed.inventory_yaml())?;
    write(
        &dir.join("inventory_ansible.yaml"),
        &bed.inventory_ansible_yaml(),
    )?;
    let key = bed.key_path().display().to_string();
    let mut py = String::from("# pyinfra inventory of the test bed\nhosts = [\n");
    for h in bed.hosts() {
        let _ = writeln!(
            py,
            "    ({:?}, {{\"ssh_hostname\": \"{}\", \"ssh_port\": {}, \"ssh_user\": \"root\", \"ssh_key\": {:?}, \"ssh_known_hosts_file\": \"/dev/null\", \"ssh_strict_host_key_checking\": \"off\", \"ssh_allow_agent\": False, \"ssh_look_for_keys\": False}}),",
            h.name, h.ip, h.port, key
        );
    }
    py.push_str("]\n");
    write(&dir.join("inventory.py"), &py)?;
    // ansible-core at its fastest: pipelining, ControlPersist, forks = hosts, no facts.
    write(
        &dir.join("ansible.cfg"),
        &format!(
            "[defaults]\nforks = {n}\nhost_key_checking = False\ngathering = explicit\nretry_files_enabled = False\ninterpreter_python = /usr/bin/python3\n\n[ssh_connection]\npipelining = True\nssh_args = -o ControlMaster=auto -o ControlPersist=60s\ncontrol_path_dir = {}\n",
            dir.join("cp").display()
        ),
    )?;
    write(&dir.join("raw.sh"), &raw_script(dir, bed))?;
    Ok(())
}

/// The floor: the playbook's remote commands, one `ssh` process each, over one
/// multiplexed master per host (opened and closed in the run), all hosts in parallel.
pub(super) fn raw_script(dir: &Path, bed: &TestBed) -> String {
    let o = bed.ssh_options(0).join(" ");
    let d = dir.display();
    let mut s = format!(
        r#"#!/bin/sh
# Raw OpenSSH floor: the benchmark's remote commands sent one after another over one
# multiplexed connection per host, all hosts in parallel, no engine.
o="{o}"
rm -f {d}/raw-ok-*
one() {{
  n=$1; ip=$2; c={d}/raw-$n.sock
  ssh $o -M -N -f -S $c root@$ip || return 1
  r() {{ ssh $o -S $c root@$ip "$1"; }}
  k=$(r 'uname -r') || return 1
  u=$(r "echo $n | tr a-z A-Z") || return 1
  r 'mkdir -p /tmp/kkbench && chmod 0755 /tmp/kkbench' || return 1
  printf 'kernel=%s\n' "$k" | r 'cat > /tmp/kkbench/kernel.txt && chmod 0644 /tmp/kkbench/kernel.txt' || return 1
  printf '# kk benchmark config for %s\ngreeting: hello %s\nkernel: %s\n' $n "$u" "$k" | r 'cat > /tmp/kkbench/bench.conf && chmod 0644 /tmp/kkbench/bench.conf' || return 1
  for i in 0 1 2 3 4 5 6 7 8 9; do r "echo item $i" >/dev/null || return 1; done
  r 'stat /tmp/kkbench/bench.conf' >/dev/null || return 1
  r 'cat /etc/hostname' >/dev/null || return 1
  ssh $o -S $c -O exit root@$ip 2>/dev/null
  : > {d}/raw-ok-$n
}}
"#
    );
    for h in bed.hosts() {
        let _ = writeln!(s, "one {} {} &", h.name, h.ip);
    }
    let _ = writeln!(
        s,
        "wait\n[ \"$(ls {d}/raw-ok-* 2>/dev/null | wc -l)\" -eq {} ]",
        bed.hosts().len()
    );
    s
}
