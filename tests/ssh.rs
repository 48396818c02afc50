//! kk over SSH against real hosts: Debian 12 with systemd and sshd, each in its own
//! network namespace (the `testbed` crate). Nothing here is mocked.

use crate::common;

use common::Project;
use serde_json::json;
use testbed::TestBed;

/// A project whose inventory is the test bed's, plus extra inventory text per host.
fn project(bed: &TestBed, site: &str) -> Project {
    let p = Project::new();
    p.file("inventory.yaml", &bed.inventory_yaml())
        .file("site.yaml", site);
    p
}

/// The same playbook work as a cluster role does: commands, files, templates, loops,
/// facts; run twice, the second run changes nothing.
const WORKLOAD: &str = r#"
- hosts: all
  gather_facts: true
  vars:
    dir: /opt/kk-test
  tasks:
    - name: dir
      file: {path: "{{ dir }}", state: directory, mode: "0755"}
    - name: config
      copy: {content: "host={{ inventory_hostname }} os={{ ansible_distribution }}\n", dest: "{{ dir }}/host.conf", mode: "0640"}
    - name: template
      template: {src: t.j2, dest: "{{ dir }}/t.txt"}
    - name: line
      lineinfile: {path: "{{ dir }}/extra.conf", line: "extra=1", create: true}
    - name: loop
      command: "test -d {{ item }}"
      loop: [/etc, /usr]
      changed_when: false
    - name: read back
      command: cat {{ dir }}/host.conf
      register: conf
      changed_when: false
    - name: show
      debug: msg="{{ conf.stdout_lines }}"
    - name: stat
      stat: {path: "{{ dir }}/t.txt"}
      register: st
    - name: assert
      assert: {that: ["st.stat.exists", "st.stat.mode == '0644'", "ansible_hostname == inventory_hostname"]}
"#;

#[test]
fn playbooks_run_over_ssh_with_one_connection_per_host_and_are_idempotent() {
    let bed = TestBed::start(3).expect("boot test hosts");
    let p = project(&bed, WORKLOAD);
    p.file(
        "templates/t.j2",
        "{% for h in groups['all'] %}\n{{ h }}={{ hostvars[h].internal_ipv4 }}\n{% endfor %}\n",
    );
    let before: Vec<usize> = (0..3)
        .map(|i| bed.accepted_ssh_logins(i).unwrap())
        .collect();
    let r = p.run_json(&["--workdir", "wd"]);
    r.code(0);
    let host0 = &bed.hosts()[0].name;
    assert_eq!(
        r.msg("show", host0),
        json!([format!("host={} os=Debian", host0)])
    );
    for (i, h) in bed.hosts().iter().enumerate() {
        assert_eq!(r.recap(&h.name)["failed"], 0);
        let after = bed.accepted_ssh_logins(i).unwrap();
        assert_eq!(
            after - before[i],
            1,
            "one SSH connection per host for the whole run on {}",
            h.name
        );
        let out = bed.ssh(i, "cat /opt/kk-test/t.txt");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains(&format!("{}={}", h.name, h.ip)), "{}", text);
    }
    let again = p.run_json(&["--workdir", "wd"]);
    again.code(0);
    for h in bed.hosts() {
        assert_eq!(
            again.recap(&h.name)["changed"],
            0,
            "second run must change nothing\n{}",
            again.describe()
        );
    }
}

#[test]
fn logins_become_and_host_keys() {
    let bed = TestBed::start(2).expect("boot test hosts");
    let h = bed.hosts();
    // Host 0's user `kk` needs a sudo password; host 1's has NOPASSWD.
    let inv = format!(
        "all:\n  hosts:\n    pw:\n      ansible_host: {}\n      ansible_user: {}\n      ansible_password: {}\n      ansible_become_password: {}\n    nopw:\n      ansible_host: {}\n      ansible_user: {}\n      ansible_password: {}\n    wrong:\n      ansible_host: {}\n      ansible_user: {}\n      ansible_password: {}\n      ansible_become_password: not-the-password\n",
        h[0].ip, h[0].user, h[0].user_password, h[0].user_password,
        h[1].ip, h[1].user, h[1].user_password,
        h[0].ip, h[0].user, h[0].user_password,
    );
    let p = Project::new();
    p.file("inventory.yaml", &inv).file(
        "site.yaml",
        r#"
- hosts: all
  gather_facts: false
  tasks:
    - name: login user
      command: id -un
    - name: become root
      command: id -un
      become: true
    - name: become nobody
      command: id -un
      become: true
      become_user: nobody
"#,
    );
    let r = p.run_json(&["--workdir", "wd"]);
    r.code(2);
    assert_eq!(r.result("login user", "pw")["result"]["stdout"], "kk");
    assert_eq!(r.result("become root", "pw")["result"]["stdout"], "root");
    assert_eq!(r.result("become root", "nopw")["result"]["stdout"], "root");
    assert_eq!(
        r.result("become nobody", "nopw")["result"]["stdout"],
        "nobody"
    );
    let wrong = r.result("become root", "wrong");
    assert_eq!(wrong["status"], "failed");
    assert!(
        wrong["result"]["msg"]
            .as_str()
            .unwrap()
            .contains("rejected the become password"),
        "{}",
        wrong
    );
    assert!(
        !r.stdout.contains(&h[0].user_password) && !r.stderr.contains(&h[0].user_password),
        "a password leaked into the output"
    );

    // Strict mode refuses an unknown key; a changed key is an error naming the file.
    let p = project(&bed, "- hosts: all\n  gather_facts: false\n  tasks:\n    - name: ping\n      command: \"true\"\n");
    let strict = p.run_json(&["--workdir", "strict", "--ssh-strict"]);
    strict.code(3);
    assert!(
        strict.stdout.contains("strict host key checking is on"),
        "{}",
        strict.describe()
    );
    p.run_json(&["--workdir", "tofu"]).code(0);
    let kh = p.path("tofu/known_hosts");
    assert!(
        std::fs::metadata(&kh).unwrap().len() > 0,
        "keys are recorded on first use"
    );
    // Host 0 now "presents" a different key than the one recorded: record host 1's for it.
    std::fs::write(
        &kh,
        format!(
            "{} {}\n{} {}\n",
            h[0].ip, h[1].host_public_key, h[1].ip, h[1].host_public_key
        ),
    )
    .unwrap();
    let changed = p.run_json(&["--workdir", "tofu"]);
    changed.code(3);
    assert_eq!(changed.status("ping", &h[0].name), "unreachable");
    assert_eq!(changed.status("ping", &h[1].name), "changed");
    assert!(
        changed.stdout.contains("host key changed") && changed.stdout.contains("known_hosts"),
        "{}",
        changed.describe()
    );
}

#[test]
fn unreachable_hosts_and_faults_end_in_bounded_time() {
    let bed = TestBed::start(3).expect("boot test hosts");
    let names: Vec<String> = bed.hosts().iter().map(|h| h.name.clone()).collect();
    let site = r#"
- hosts: all
  gather_facts: false
  tasks:
    - name: first
      copy: {content: "one\n", dest: /root/first.txt}
    - name: wait
      pause: {seconds: 3}
    - name: long
      command: "sleep {{ 20 if inventory_hostname == cut_host else 1 }}"
    - name: last
      copy: {content: "last\n", dest: /root/last.txt}
"#;
    // A host stopped before the run: unreachable, the others finish, exit 3.
    bed.stop_host(0).unwrap();
    let p = project(&bed, site);
    let r = p.run_json(&["--workdir", "wd", "-e", &format!("cut_host={}", names[2])]);
    r.code(3);
    assert_eq!(r.status("first", &names[0]), "unreachable");
    assert_eq!(r.status("last", &names[1]), "changed");
    assert_eq!(r.recap(&names[0])["unreachable"], 1);
    assert_eq!(r.recap(&names[0])["failed"], 0);

    // Host 1 cut off between two tasks (during the pause), host 2 during a long command.
    let p = project(&bed, site);
    let start = std::time::Instant::now();
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_kk"))
        .args([
            "run",
            "site.yaml",
            "-i",
            "inventory.yaml",
            "--output",
            "json",
            "--workdir",
            "wd2",
            "--limit",
            &format!("{}:{}", names[1], names[2]),
            "-e",
            &format!("cut_host={}", names[2]),
        ])
        .current_dir(p.dir())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Host 1 once its first file is written (the 3 s pause follows; a moment for kk to finish
    // the task), host 2 once its long command runs.
    let on = |i: usize, cmd: &str| {
        bed.exec(i, cmd)
            .map(|o| o.status.success())
            .unwrap_or(false)
    };
    common::wait_until("the first task on host 1", 30, || {
        on(1, "test -e /root/first.txt")
    });
    std::thread::sleep(std::time::Duration::from_millis(500));
    bed.cut_host(1).unwrap();
    common::wait_until("the long command on host 2", 30, || {
        on(2, "pgrep -xf 'sleep 20'")
    });
    bed.cut_host(2).unwrap();
    let out = child.wait_with_output().unwrap();
    let elapsed = start.elapsed();
    let r = common::Run::from_output(out);
    assert_eq!(r.code, 3, "{}", r.describe());
    assert!(elapsed.as_secs() < 60, "the run took {:?}", elapsed);
    assert_eq!(r.status("long", &names[1]), "unreachable");
    assert_eq!(r.status("long", &names[2]), "unreachable");

    // Back on the network, the next run completes and finished work is unchanged.
    bed.restore_host(1).unwrap();
    bed.restore_host(2).unwrap();
    let again = p.run_json(&[
        "--workdir",
        "wd2",
        "--limit",
        &format!("{}:{}", names[1], names[2]),
        "-e",
        "cut_host=none",
    ]);
    again.code(0);
    assert_eq!(again.status("first", &names[1]), "ok");
    assert_eq!(again.status("first", &names[2]), "ok");
}

/// The `ssh -M` master of a host, found by its destination address.
fn master_pids(ip: &str) -> Vec<String> {
    let out = std::process::Command::new("pgrep")
        .args(["-f", &format!("ssh -M .* {}$", ip)])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn a_dropped_master_is_reopened_and_ctrl_c_leaves_nothing_behind() {
    let bed = TestBed::start(1).expect("boot test hosts");
    let h = &bed.hosts()[0];
    let ip = h.ip.to_string();
    let p = project(
        &bed,
        "- hosts: all\n  gather_facts: false\n  tasks:\n    - name: before\n      command: touch /root/kk-before\n    - name: wait\n      pause: {seconds: 2}\n    - name: after\n      command: \"true\"\n",
    );
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_kk"))
        .args([
            "run",
            "site.yaml",
            "-i",
            "inventory.yaml",
            "--output",
            "json",
            "--workdir",
            "wd",
        ])
        .current_dir(p.dir())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // During the pause: after `before` ran (a moment for kk to take its result).
    common::wait_until("the first task", 30, || {
        bed.exec(0, "test -e /root/kk-before")
            .map(|o| o.status.success())
            .unwrap_or(false)
    });
    std::thread::sleep(std::time::Duration::from_millis(300));
    let masters = master_pids(&ip);
    assert_eq!(masters.len(), 1, "one master while the run pauses");
    std::process::Command::new("kill")
        .arg("-9")
        .args(&masters)
        .status()
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let r = common::Run::from_output(out);
    r.code(0);
    assert_eq!(r.status("after", &h.name), "changed");
    assert!(
        master_pids(&ip).is_empty(),
        "the re-opened master was closed at the end"
    );

    // Ctrl-C during a long command: kk exits 99, no master and no remote command remain.
    let p = project(&bed, "- hosts: all\n  gather_facts: false\n  tasks:\n    - name: long\n      command: sleep 41\n      become: true\n");
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_kk"))
        .args([
            "run",
            "site.yaml",
            "-i",
            "inventory.yaml",
            "--workdir",
            "wd",
        ])
        .current_dir(p.dir())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let remote_sleep = || {
        bed.exec(0, "pgrep -x sleep -a | grep -c 'sleep 41' || true")
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_default()
    };
    common::wait_until("the remote command to start", 10, || remote_sleep() == "1");
    std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(99),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(master_pids(&ip).is_empty(), "no master left behind");
    common::wait_until("the remote command to stop", 6, || remote_sleep() == "0");
}

#[test]
fn inline_private_key_is_used_and_removed() {
    let bed = TestBed::start(1).expect("boot test hosts");
    let h = &bed.hosts()[0];
    let key = std::fs::read_to_string(&h.root_key_path).unwrap();
    let indented: String = key.lines().map(|l| format!("          {}\n", l)).collect();
    let inv = format!(
        "kind: Inventory\nspec:\n  hosts:\n    {}:\n      connector:\n        host: {}\n        user: root\n        private_key_content: |\n{}",
        h.name, h.ip, indented
    );
    let p = Project::new();
    p.file("inventory.yaml", &inv).file(
        "site.yaml",
        "- hosts: all\n  gather_facts: false\n  tasks:\n    - name: who\n      command: id -un\n",
    );
    let r = p.run_json(&["--workdir", "wd"]);
    r.code(0);
    assert_eq!(r.result("who", &h.name)["result"]["stdout"], "root");
    // No copy of the key is left anywhere under the system temp dir.
    let body = key.lines().nth(1).unwrap().to_string();
    let out = std::process::Command::new("grep")
        .args([
            "-rlF",
            &body,
            &std::env::temp_dir().display().to_string(),
            "--include=key-*",
        ])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&out.stdout).trim().is_empty(),
        "key left behind: {}",
        String::from_utf8_lossy(&out.stdout)
    );
}

/// Many hosts delegating to one host at once (workers labelled from the first control
/// plane node) stay within sshd's `MaxSessions 10` channels per connection: kk queues
/// its commands on that host's one master instead of having channels refused.
#[test]
fn many_hosts_delegating_to_one_share_its_master_within_max_sessions() {
    let bed = TestBed::start(1).expect("boot test hosts");
    let target = &bed.hosts()[0].name;
    let mut inv = bed.inventory_yaml();
    let locals: Vec<String> = (1..=24).map(|i| format!("local{:02}", i)).collect();
    inv = inv.replace(
        "  groups:\n",
        &locals
            .iter()
            .map(|n| format!("    {}:\n      connector:\n        type: local\n", n))
            .chain(std::iter::once("  groups:\n".to_string()))
            .collect::<String>(),
    );
    inv.push_str("    locals:\n      hosts:\n");
    for n in &locals {
        inv.push_str(&format!("        - {}\n", n));
    }
    let site = format!(
        "- hosts: locals\n  gather_facts: false\n  tasks:\n    - name: on the target\n      shell: sleep 0.5; echo {{{{ inventory_hostname }}}}\n      delegate_to: {}\n      register: out\n    - name: all answered\n      assert: {{that: [\"out.stdout == inventory_hostname\"]}}\n",
        target
    );
    let p = Project::new();
    p.file("inventory.yaml", &inv).file("site.yaml", &site);
    let before = bed.accepted_ssh_logins(0).unwrap();
    let r = p.run_json(&["--workdir", "wd", "--forks", "30"]);
    r.code(0);
    for n in &locals {
        assert_eq!(r.recap(n)["failed"], 0, "{}", r.describe());
        assert_eq!(r.recap(n)["unreachable"], 0, "{}", r.describe());
    }
    assert_eq!(
        bed.accepted_ssh_logins(0).unwrap() - before,
        1,
        "one master for all the delegated commands"
    );
}

/// A big controller file goes to every host streamed: kk runs under a 200 MiB
/// address-space cap while putting 256 MB on 3 hosts (it used to read the file whole
/// per host), the hosts get it intact, and a second run sends nothing.
#[test]
fn a_big_file_is_streamed_to_every_host_in_bounded_memory() {
    let bed = TestBed::start(3).expect("boot test hosts");
    let p = project(
        &bed,
        "- hosts: all\n  gather_facts: false\n  tasks:\n    - name: big\n      copy: {src: big.bin, dest: /opt/big.bin, mode: '0644'}\n",
    );
    let len: u64 = 256 << 20;
    let f = std::fs::File::create(p.path("big.bin")).unwrap();
    f.set_len(len).unwrap();
    drop(f);
    let args = [
        "run",
        "site.yaml",
        "-i",
        "inventory.yaml",
        "--output",
        "json",
        "--workdir",
        "wd",
    ];
    let r = p.kk_bounded(&args, 300, 200);
    r.code(0);
    for (i, h) in bed.hosts().iter().enumerate() {
        assert_eq!(r.result("big", &h.name)["result"]["changed"], true);
        assert_eq!(r.result("big", &h.name)["result"]["size"], len);
        let out = bed.ssh(
            i,
            "head -c 268435456 /dev/zero | sha256sum; sha256sum < /opt/big.bin",
        );
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let sums: Vec<&str> = text.lines().collect();
        assert_eq!(sums.len(), 2, "{}", text);
        assert_eq!(sums[0], sums[1], "the host's copy is the file sent");
    }
    let again = p.kk_bounded(&args, 120, 200);
    again.code(0);
    for h in bed.hosts() {
        assert_eq!(again.result("big", &h.name)["result"]["changed"], false);
    }
}
