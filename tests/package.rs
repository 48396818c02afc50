//! `package`/`apt` on a real Debian test host, from a local apt repository the test
//! builds (a real .deb made with dpkg-deb) and puts on the host as a `file:` source.

use crate::common;

use common::Project;
use testbed::TestBed;

/// Builds `kk-hello_<version>_all.deb` and a matching `Packages` index in `dir`.
fn build_repo(dir: &std::path::Path, version: &str) {
    let root = dir.join("pkgroot");
    std::fs::create_dir_all(root.join("DEBIAN")).unwrap();
    std::fs::create_dir_all(root.join("usr/share/kk-hello")).unwrap();
    std::fs::write(
        root.join("usr/share/kk-hello/README"),
        format!("hello {}\n", version),
    )
    .unwrap();
    std::fs::write(
        root.join("DEBIAN/control"),
        format!("Package: kk-hello\nVersion: {}\nArchitecture: all\nMaintainer: kk tests <kk@example.invalid>\nDescription: a package the kk tests install\n", version),
    )
    .unwrap();
    let deb = dir.join("kk-hello.deb");
    let st = std::process::Command::new("dpkg-deb")
        .args(["--build", "--root-owner-group"])
        .arg(&root)
        .arg(&deb)
        .output()
        .unwrap();
    assert!(
        st.status.success(),
        "dpkg-deb: {}",
        String::from_utf8_lossy(&st.stderr)
    );
    let data = std::fs::read(&deb).unwrap();
    let sha = String::from_utf8_lossy(
        &std::process::Command::new("sha256sum")
            .arg(&deb)
            .output()
            .unwrap()
            .stdout,
    )
    .split_whitespace()
    .next()
    .unwrap()
    .to_string();
    std::fs::write(
        dir.join("Packages"),
        format!(
            "Package: kk-hello\nVersion: {}\nArchitecture: all\nMaintainer: kk tests <kk@example.invalid>\nFilename: ./kk-hello.deb\nSize: {}\nSHA256: {}\nDescription: a package the kk tests install\n\n",
            version,
            data.len(),
            sha
        ),
    )
    .unwrap();
}

const SITE: &str = r#"
- hosts: all
  gather_facts: true
  tasks:
    - name: repo dir
      file: {path: /srv/kkrepo, state: directory}
    - name: repo files
      copy: {src: "repo/{{ item }}", dest: "/srv/kkrepo/{{ item }}"}
      loop: [kk-hello.deb, Packages]
    - name: only the local source
      copy: {content: "", dest: /etc/apt/sources.list}
    - name: local source
      copy: {content: "deb [trusted=yes] file:/srv/kkrepo ./\n", dest: /etc/apt/sources.list.d/kk.list}
    - name: install
      package: {name: kk-hello, state: "{{ want }}", update_cache: true}
      register: inst
    - name: check
      command: dpkg-query -W -f=${Status} kk-hello
      register: q
      failed_when: false
      changed_when: false
"#;

#[test]
fn package_installs_removes_and_is_idempotent() {
    let bed = TestBed::start(1).expect("boot test hosts");
    let name = bed.hosts()[0].name.clone();
    let p = Project::new();
    p.file("inventory.yaml", &bed.inventory_yaml())
        .file("site.yaml", SITE);
    build_repo(&p.path("files/repo"), "1.0");
    let r = p.run_json(&["--workdir", "wd", "-e", "want=present"]);
    r.code(0);
    assert_eq!(r.status("install", &name), "changed", "{}", r.describe());
    // `package` on Debian is apt (as ansible-core's package action): apt's result fields.
    assert_eq!(r.result("install", &name)["result"]["cache_updated"], true);
    assert_eq!(
        r.result("check", &name)["result"]["stdout"],
        "install ok installed"
    );
    let again = p.run_json(&["--workdir", "wd", "-e", "want=present"]);
    again.code(0);
    assert_eq!(again.recap(&name)["changed"], 0, "{}", again.describe());
    // A new version in the repo: `latest` upgrades, `present` would not.
    build_repo(&p.path("files/repo"), "2.0");
    let up = p.run_json(&["--workdir", "wd", "-e", "want=latest"]);
    up.code(0);
    assert_eq!(up.status("install", &name), "changed", "{}", up.describe());
    let out = bed.ssh(0, "cat /usr/share/kk-hello/README");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "hello 2.0\n");
    let check = p.run_json(&["--workdir", "wd", "-e", "want=absent", "--check"]);
    check.code(0);
    assert_eq!(check.status("install", &name), "changed");
    assert!(
        bed.ssh(0, "test -e /usr/share/kk-hello/README")
            .status
            .success(),
        "check mode removed it"
    );
    let rm = p.run_json(&["--workdir", "wd", "-e", "want=absent"]);
    rm.code(0);
    assert_eq!(rm.status("install", &name), "changed");
    assert!(!bed
        .ssh(0, "test -e /usr/share/kk-hello/README")
        .status
        .success());
}

const PURGE: &str = r#"
- hosts: all
  gather_facts: false
  tasks:
    - name: repo dir
      file: {path: /srv/kkrepo, state: directory}
    - name: repo files
      copy: {src: "repo/{{ item }}", dest: "/srv/kkrepo/{{ item }}"}
      loop: [kk-hello.deb, Packages]
    - name: only the local source
      copy: {content: "", dest: /etc/apt/sources.list}
    - name: local source
      copy: {content: "deb [trusted=yes] file:/srv/kkrepo ./\n", dest: /etc/apt/sources.list.d/kk.list}
    - name: install
      apt: {name: kk-hello, update_cache: true}
    - name: purge
      apt: {name: kk-hello, state: absent, purge: true, autoremove: true}
      register: purged
    - name: purge again
      apt: {name: kk-hello, state: absent, purge: true}
      register: purged_again
    - name: autoremove
      apt: {autoremove: true, purge: true}
      register: autoremoved
"#;

#[test]
fn apt_purge_and_autoremove() {
    let bed = TestBed::start(1).expect("boot test hosts");
    let name = bed.hosts()[0].name.clone();
    let p = Project::new();
    p.file("inventory.yaml", &ansible_inventory(&bed))
        .file("site.yaml", PURGE);
    build_repo(&p.path("files/repo"), "1.0");
    let r = p.run_json(&["--workdir", "wd"]);
    r.code(0);
    assert_eq!(r.status("purge", &name), "changed", "{}", r.describe());
    assert_eq!(r.status("purge again", &name), "ok", "{}", r.describe());
    // A minimal host has nothing left for autoremove.
    assert_eq!(r.status("autoremove", &name), "ok", "{}", r.describe());
    let q = bed.ssh(0, "dpkg-query -W -f='${Status}' kk-hello");
    let st = String::from_utf8_lossy(&q.stdout);
    assert!(
        !st.contains("ok installed") && !st.contains("config-files"),
        "{}",
        st
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
