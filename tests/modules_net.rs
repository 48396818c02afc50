//! The network and service modules (`get_url`, `unarchive`, `systemd_service`, `wait_for`,
//! `uri`) end to end: the real `kk` binary over SSH against real Debian hosts (the
//! `testbed` crate), downloading from a real HTTP server on the bed's bridge, and
//! installing real etcd (Debian's `etcd-server` binary) as a systemd service.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::Project;
use testbed::http::HttpServer;
use testbed::TestBed;

/// sha256 of a controller file, with the same tool the hosts use.
fn sha256(path: &Path) -> String {
    let out = Command::new("sha256sum")
        .arg(path)
        .output()
        .expect("sha256sum");
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_string()
}

/// Deterministic bytes that do not compress to nothing.
fn data(n: usize, seed: u32) -> Vec<u8> {
    let mut x = seed.wrapping_mul(2654435761).wrapping_add(1);
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            (x & 0xff) as u8
        })
        .collect()
}

fn host_out(bed: &TestBed, cmd: &str) -> String {
    let o = bed.ssh(0, cmd);
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

#[test]
fn get_url_checksums_failures_redirects_and_auth() {
    let bed = TestBed::start(1).expect("boot test host");
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("data.bin"), data(300_000, 1)).unwrap();
    std::fs::write(root.path().join("other.bin"), data(1000, 2)).unwrap();
    std::fs::write(root.path().join("big.bin"), data(2_000_000, 3)).unwrap();
    let sum = sha256(&root.path().join("data.bin"));
    std::fs::write(
        root.path().join("SHA256SUMS"),
        format!(
            "{}  other.bin\n{}  data.bin\n",
            sha256(&root.path().join("other.bin")),
            sum
        ),
    )
    .unwrap();
    let srv =
        HttpServer::with_basic_auth(bed.bridge_ip().into(), root.path(), "kkuser", "s3cret-pw")
            .unwrap();
    let wrong = "0".repeat(64);
    let site = format!(
        r#"
- hosts: all
  gather_facts: false
  tasks:
    - name: dir
      file: {{path: /opt/dl, state: directory}}
    - name: good
      get_url: {{url: "{u}data.bin", dest: /opt/dl/data.bin, checksum: "sha256:{sum}"}}
    - name: again
      get_url: {{url: "{u}data.bin", dest: /opt/dl/data.bin, checksum: "sha256:{sum}"}}
    - name: sums file
      get_url: {{url: "{u}data.bin", dest: /opt/dl/, checksum: "sha256:{u}SHA256SUMS", mode: "0600"}}
    - name: wrong checksum
      get_url: {{url: "{u}other.bin", dest: /opt/dl/data.bin, checksum: "sha256:{wrong}"}}
      ignore_errors: true
    - name: cut
      get_url: {{url: "{u}cut/big.bin", dest: /opt/dl/big.bin, retries: 1}}
      ignore_errors: true
    - name: missing
      get_url: {{url: "{u}missing.bin", dest: /opt/dl/missing.bin}}
      ignore_errors: true
    - name: redirect
      get_url: {{url: "{u}redirect/data.bin", dest: /opt/dl/redirected.bin, checksum: "sha256:{sum}"}}
    - name: auth
      get_url: {{url: "{u}private/data.bin", dest: /opt/dl/auth.bin, url_username: kkuser, url_password: s3cret-pw}}
    - name: auth wrong
      get_url: {{url: "{u}private/data.bin", dest: /opt/dl/auth2.bin, url_username: kkuser, url_password: nope}}
      ignore_errors: true
    - name: kubekey names
      http_get_file: {{url: "{u}private/other.bin", dest: /opt/dl/kk.bin, username: kkuser, password: s3cret-pw, timeout: 10s}}
"#,
        u = srv.url(""),
        sum = sum,
        wrong = wrong
    );
    let p = Project::new();
    p.file("inventory.yaml", &bed.inventory_yaml())
        .file("site.yaml", &site);
    let r = p.run_json(&[]);
    r.code(0);
    let h = &bed.hosts()[0].name;
    assert_eq!(r.status("good", h), "changed", "{}", r.describe());
    assert_eq!(r.result("good", h)["result"]["sha256"], sum.as_str());
    assert_eq!(r.status("again", h), "ok");
    assert_eq!(srv.count("/data.bin"), 2, "`again` must not download");
    let sums = r.result("sums file", h);
    assert_eq!(sums["status"], "changed");
    assert_eq!(sums["result"]["dest"], "/opt/dl/data.bin");
    // `dest: /opt/dl/` is a directory: the file got the URL's name, which exists with
    // the right checksum already, so only its mode changed.
    assert_eq!(host_out(&bed, "stat -c %a /opt/dl/data.bin"), "600");

    // A wrong checksum fails with both digests and leaves the old file intact.
    let w = r.result("wrong checksum", h);
    assert_eq!(w["status"], "failed", "{}", r.describe());
    let msg = w["result"]["msg"].as_str().unwrap_or_default().to_string();
    let other_sum = sha256(&root.path().join("other.bin"));
    assert!(msg.contains(&other_sum) && msg.contains(&wrong), "{msg}");
    assert_eq!(
        host_out(&bed, "sha256sum /opt/dl/data.bin | cut -d' ' -f1"),
        sum
    );

    // A cut transfer is retried, then fails; nothing is left behind.
    let c = r.result("cut", h);
    assert_eq!(c["status"], "failed");
    assert!(
        c["result"]["msg"]
            .as_str()
            .unwrap()
            .contains("after 2 attempts"),
        "{c}"
    );
    assert_eq!(srv.count("/cut/big.bin"), 2);
    assert_eq!(host_out(&bed, "ls -A /opt/dl | grep -c kk_ || true"), "0");
    assert_eq!(host_out(&bed, "test -e /opt/dl/big.bin; echo $?"), "1");

    // A 404 fails at once (no retries) and says so.
    let m = r.result("missing", h);
    assert!(
        m["result"]["msg"].as_str().unwrap().contains("HTTP 404"),
        "{m}"
    );
    assert_eq!(srv.count("/missing.bin"), 1);

    // Redirects are followed; basic auth works and a wrong password is a 401.
    assert_eq!(r.status("redirect", h), "changed");
    assert_eq!(
        host_out(&bed, "sha256sum /opt/dl/redirected.bin | cut -d' ' -f1"),
        sum
    );
    assert_eq!(r.status("auth", h), "changed");
    assert_eq!(
        host_out(&bed, "sha256sum /opt/dl/auth.bin | cut -d' ' -f1"),
        sum
    );
    let aw = r.result("auth wrong", h);
    assert!(
        aw["result"]["msg"].as_str().unwrap().contains("HTTP 401"),
        "{aw}"
    );
    assert_eq!(r.status("kubekey names", h), "changed");
    assert!(
        !r.stdout.contains("s3cret-pw") && !r.stderr.contains("s3cret-pw"),
        "the password must not be shown"
    );
    // Credentials went in the request header, not in a command line on the host.
    let authed: Vec<_> = srv
        .requests()
        .into_iter()
        .filter(|q| q.path == "/private/data.bin" && q.status == 200)
        .collect();
    assert_eq!(authed.len(), 1);

    // The second run downloads nothing new and changes nothing.
    let before = srv.count("/data.bin");
    let again = p.run_json(&[]);
    again.code(0);
    assert_eq!(again.recap(h)["changed"], 0, "{}", again.describe());
    assert_eq!(srv.count("/data.bin"), before);
}

const ETCD_SITE: &str = r#"
- hosts: all
  gather_facts: false
  vars:
    ip: "{{ internal_ipv4 }}"
  tasks:
    - name: download etcd
      get_url:
        url: "{{ base }}etcd-v3.4.23-linux-amd64.tar.gz"
        dest: /tmp/etcd-v3.4.23-linux-amd64.tar.gz
        checksum: "sha256:{{ base }}SHA256SUMS"
    - name: unpack etcd
      unarchive:
        src: /tmp/etcd-v3.4.23-linux-amd64.tar.gz
        remote_src: true
        dest: /usr/local/bin
        extra_opts: [--strip-components=1]
        include: [etcd-v3.4.23-linux-amd64/etcd, etcd-v3.4.23-linux-amd64/etcdctl]
    - name: docs dir
      file: {path: /opt/etcd-docs, state: directory}
    - name: docs from the controller (tar.xz)
      unarchive: {src: docs.tar.xz, dest: /opt/etcd-docs}
    - name: unit
      copy:
        dest: /etc/systemd/system/etcd.service
        content: |
          [Unit]
          Description=etcd key-value store
          After=network.target
          [Service]
          ExecStart=/usr/local/bin/etcd --name {{ inventory_hostname }} --data-dir /var/lib/etcd-kk --listen-client-urls http://0.0.0.0:2379 --advertise-client-urls http://{{ ip }}:2379
          Restart=always
          [Install]
          WantedBy=multi-user.target
    - name: start etcd
      systemd_service: {name: etcd, state: started, enabled: true, daemon_reload: true}
      register: svc
    - name: port
      wait_for: {host: "{{ ip }}", port: 2379, timeout: 60}
    - name: health
      uri: {url: "http://{{ ip }}:2379/health", return_content: true}
      register: health
      until: health.json is defined and health.json.health == 'true'
      retries: 20
      delay: 1
    - name: write a key
      command: /usr/local/bin/etcdctl --endpoints http://{{ ip }}:2379 put kk-test hello
      changed_when: false
    - name: service again
      service: {name: etcd, state: started, enabled: yes}
    - name: check
      assert:
        that:
          - svc.status.ActiveState == 'active'
          - svc.status.UnitFileState == 'enabled'
          - health.status == 200
          - health.json.health == 'true'
"#;

#[test]
fn installs_real_etcd_as_a_service_idempotently() {
    let etcd = Path::new("/usr/bin/etcd");
    assert!(
        etcd.exists(),
        "this test needs Debian's etcd-server package on the controller (scripts/test installs it)"
    );
    let bed = TestBed::start(1).expect("boot test host");
    let root = tempfile::tempdir().unwrap();
    let pkg = root.path().join("pkg/etcd-v3.4.23-linux-amd64");
    std::fs::create_dir_all(&pkg).unwrap();
    std::fs::copy(etcd, pkg.join("etcd")).unwrap();
    let ctl = Path::new("/usr/bin/etcdctl");
    assert!(ctl.exists(), "needs etcd-client on the controller");
    std::fs::copy(ctl, pkg.join("etcdctl")).unwrap();
    std::fs::write(pkg.join("README.md"), "etcd for kk tests\n").unwrap();
    let tarball = root.path().join("etcd-v3.4.23-linux-amd64.tar.gz");
    let st = Command::new("tar")
        .arg("-czf")
        .arg(&tarball)
        .arg("-C")
        .arg(root.path().join("pkg"))
        .arg("etcd-v3.4.23-linux-amd64")
        .status()
        .unwrap();
    assert!(st.success());
    std::fs::write(
        root.path().join("SHA256SUMS"),
        format!("{}  etcd-v3.4.23-linux-amd64.tar.gz\n", sha256(&tarball)),
    )
    .unwrap();
    let srv = HttpServer::start(bed.bridge_ip().into(), root.path()).unwrap();

    let p = Project::new();
    p.file("inventory.yaml", &bed.inventory_yaml())
        .file("site.yaml", ETCD_SITE);
    // A small tar.xz unpacked from the controller (the host has no xz: python3's lzma is used).
    std::fs::create_dir_all(p.path("docsrc/etcd")).unwrap();
    p.file("docsrc/etcd/NOTES.txt", "notes\n");
    std::fs::create_dir_all(p.path("files")).unwrap();
    let st = Command::new("tar")
        .arg("-cJf")
        .arg(p.path("files/docs.tar.xz"))
        .arg("-C")
        .arg(p.path("docsrc"))
        .arg("etcd")
        .status()
        .unwrap();
    assert!(st.success());
    let base = srv.url("");
    let r = p.run_json(&["-e", &format!("base={}", base)]);
    r.code(0);
    let h = &bed.hosts()[0].name;
    for t in [
        "download etcd",
        "unpack etcd",
        "docs from the controller (tar.xz)",
        "unit",
        "start etcd",
    ] {
        assert_eq!(r.status(t, h), "changed", "{t}\n{}", r.describe());
    }
    assert_eq!(r.status("service again", h), "ok");
    assert_eq!(r.status("check", h), "ok");
    assert_eq!(host_out(&bed, "cat /opt/etcd-docs/etcd/NOTES.txt"), "notes");
    assert_eq!(
        host_out(&bed, "test -e /usr/local/bin/README.md; echo $?"),
        "1"
    );
    assert_eq!(
        host_out(
            &bed,
            "/usr/local/bin/etcdctl --endpoints http://127.0.0.1:2379 get kk-test --print-value-only"
        ),
        "hello"
    );
    assert_eq!(host_out(&bed, "systemctl is-active etcd"), "active");

    let again = p.run_json(&["-e", &format!("base={}", base)]);
    again.code(0);
    assert_eq!(again.recap(h)["changed"], 0, "{}", again.describe());
    assert_eq!(srv.count("/etcd-v3.4.23-linux-amd64.tar.gz"), 1);
}

const TLS_SITE: &str = r#"
- hosts: localhost
  gather_facts: false
  vars:
    pki: "{{ playbook_dir }}/files/pki"
  tasks:
    - name: ca
      gen_cert: {cn: kk-test-ca, out_key: "{{ pki }}/ca.key", out_cert: "{{ pki }}/ca.crt", date: 2d}
    - name: server cert
      gen_cert:
        root_key: "{{ pki }}/ca.key"
        root_cert: "{{ pki }}/ca.crt"
        cn: etcd
        sans: ["{{ etcd_ip }}", "127.0.0.1"]
        out_key: "{{ pki }}/server.key"
        out_cert: "{{ pki }}/server.crt"
        date: 2d
    - name: client cert
      gen_cert:
        root_key: "{{ pki }}/ca.key"
        root_cert: "{{ pki }}/ca.crt"
        cn: client
        ext_key_usages: [client_auth]
        out_key: "{{ pki }}/client.key"
        out_cert: "{{ pki }}/client.crt"
        date: 2d
- hosts: all
  gather_facts: false
  vars:
    ip: "{{ internal_ipv4 }}"
    pki: /etc/kk-etcd-pki
  tasks:
    - name: binary
      get_url: {url: "{{ base }}etcd", dest: /usr/local/bin/etcd, mode: "0755"}
    - name: pki
      copy: {src: pki/, dest: "{{ pki }}/", mode: "0600"}
    - name: unit
      copy:
        dest: /etc/systemd/system/etcd-tls.service
        content: |
          [Service]
          ExecStart=/usr/local/bin/etcd --name tls --data-dir /var/lib/etcd-tls --listen-peer-urls http://127.0.0.1:2390 --initial-advertise-peer-urls http://127.0.0.1:2390 --initial-cluster tls=http://127.0.0.1:2390 --listen-client-urls https://0.0.0.0:2391 --advertise-client-urls https://{{ ip }}:2391 --cert-file {{ pki }}/server.crt --key-file {{ pki }}/server.key --client-cert-auth --trusted-ca-file {{ pki }}/ca.crt
          [Install]
          WantedBy=multi-user.target
    - name: start
      systemd: {name: etcd-tls, state: started, enabled: true, daemon_reload: true}
    - name: port
      wait_for: {host: "{{ ip }}", port: 2391, timeout: 60}
    - name: health with client cert
      uri:
        url: "https://{{ ip }}:2391/health"
        client_cert: "{{ pki }}/client.crt"
        client_key: "{{ pki }}/client.key"
        ca_path: "{{ pki }}/ca.crt"
      register: health
      until: health.json is defined and health.json.health == 'true'
      retries: 20
      delay: 1
    - name: put a key over the v3 JSON gateway
      uri:
        url: "https://{{ ip }}:2391/v3/kv/put"
        method: POST
        body_format: json
        body: {key: "a2s=", value: "dGxz"}
        client_cert: "{{ pki }}/client.crt"
        client_key: "{{ pki }}/client.key"
        ca_path: "{{ pki }}/ca.crt"
      changed_when: false
    - name: etcdctl accepts the server
      command: >-
        etcdctl --endpoints https://{{ ip }}:2391 --cacert {{ playbook_dir }}/files/pki/ca.crt
        --cert {{ playbook_dir }}/files/pki/client.crt --key {{ playbook_dir }}/files/pki/client.key endpoint health
      environment: {ETCDCTL_API: "3"}
      delegate_to: localhost
      register: ctl
      changed_when: false
    - name: no client cert
      uri: {url: "https://{{ ip }}:2391/health", ca_path: "{{ pki }}/ca.crt"}
      register: nocert
      ignore_errors: true
    - name: unknown CA
      uri: {url: "https://{{ ip }}:2391/health"}
      register: noca
      ignore_errors: true
    - name: wrong status
      uri: {url: "{{ base }}nope", status_code: [200, 204]}
      register: wrong
      ignore_errors: true
    - name: stop
      service: {name: etcd-tls, state: stopped}
    - name: port closed
      wait_for: {host: "{{ ip }}", port: 2391, state: stopped, timeout: 30}
    - name: check
      assert:
        that:
          - health.status == 200
          - nocert.failed
          - noca.failed and noca.status == -1
          - wrong.status == 404
          - "'is healthy' in (ctl.stdout + ctl.stderr)"
"#;

#[test]
fn uri_speaks_tls_with_client_certificates_to_etcd() {
    let bed = TestBed::start(1).expect("boot test host");
    let root = tempfile::tempdir().unwrap();
    std::fs::copy("/usr/bin/etcd", root.path().join("etcd")).expect("needs etcd-server");
    let srv = HttpServer::start(bed.bridge_ip().into(), root.path()).unwrap();
    let p = Project::new();
    p.file("inventory.yaml", &bed.inventory_yaml())
        .file("site.yaml", TLS_SITE);
    // Certificates come from gen_cert (first play); openssl checks them too.
    let base = srv.url("");
    let ip = bed.hosts()[0].ip.to_string();
    let r = p.run_json(&[
        "-e",
        &format!("base={}", base),
        "-e",
        &format!("etcd_ip={}", ip),
    ]);
    let verify = Command::new("openssl")
        .args(["verify", "-CAfile", "ca.crt", "server.crt", "client.crt"])
        .current_dir(p.path("files/pki"))
        .output()
        .unwrap();
    assert!(
        verify.status.success(),
        "{}",
        String::from_utf8_lossy(&verify.stderr)
    );
    r.code(0);
    let h = &bed.hosts()[0].name;
    assert_eq!(r.status("check", h), "ok", "{}", r.describe());
    assert_eq!(r.status("no client cert", h), "failed");
    assert!(
        r.result("etcdctl accepts the server", h)["result"]["stderr"]
            .as_str()
            .unwrap_or_default()
            .contains("is healthy")
            || r.result("etcdctl accepts the server", h)["result"]["stdout"]
                .as_str()
                .unwrap_or_default()
                .contains("is healthy"),
        "{}",
        r.describe()
    );
    let noca = r.result("unknown CA", h);
    assert!(
        noca["result"]["msg"]
            .as_str()
            .unwrap_or_default()
            .contains("certificate"),
        "{noca}"
    );
    assert_eq!(
        host_out(
            &bed,
            "ETCDCTL_API=3 /usr/local/bin/etcd --version >/dev/null; systemctl is-active etcd-tls"
        ),
        "inactive"
    );
}

#[test]
fn check_mode_changes_nothing() {
    let bed = TestBed::start(1).expect("boot test host");
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("f.bin"), data(1000, 9)).unwrap();
    let srv = HttpServer::start(bed.bridge_ip().into(), root.path()).unwrap();
    let site = format!(
        r#"
- hosts: all
  gather_facts: false
  tasks:
    - name: get
      get_url: {{url: "{u}f.bin", dest: /root/f.bin}}
    - name: ssh stopped
      service: {{name: ssh, state: stopped}}
    - name: cron-like unit disabled
      systemd_service: {{name: ssh, enabled: false}}
    - name: wait
      wait_for: {{path: /nonexistent, timeout: 1}}
"#,
        u = srv.url("")
    );
    let p = Project::new();
    p.file("inventory.yaml", &bed.inventory_yaml())
        .file("site.yaml", &site);
    let r = p.run_json(&["--check"]);
    r.code(0);
    let h = &bed.hosts()[0].name;
    assert_eq!(r.status("get", h), "changed", "{}", r.describe());
    assert_eq!(r.status("ssh stopped", h), "changed");
    assert_eq!(r.status("cron-like unit disabled", h), "changed");
    assert_eq!(r.status("wait", h), "skipped");
    assert_eq!(srv.count("/f.bin"), 0, "check mode downloads nothing");
    assert_eq!(host_out(&bed, "test -e /root/f.bin; echo $?"), "1");
    assert_eq!(host_out(&bed, "systemctl is-active ssh"), "active");
    assert_eq!(host_out(&bed, "systemctl is-enabled ssh"), "enabled");
}

#[test]
fn a_long_download_shows_progress_on_a_terminal() {
    let bed = TestBed::start(1).expect("boot test host");
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("big.bin"), data(8 * 1024 * 1024, 7)).unwrap();
    let srv = HttpServer::start(bed.bridge_ip().into(), root.path()).unwrap();
    let p = Project::new();
    p.file("inventory.yaml", &bed.inventory_yaml()).file(
        "site.yaml",
        "- hosts: all\n  gather_facts: false\n  tasks:\n    - name: big\n      get_url: {url: \"{{ url }}\", dest: /root/big.bin}\n",
    );
    // `script` gives kk a terminal, where the live status line is drawn.
    let cmd = format!(
        "{} run site.yaml -i inventory.yaml -e url={}",
        env!("CARGO_BIN_EXE_kk"),
        srv.url("slow/big.bin")
    );
    let out = Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .current_dir(p.dir())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", text);
    assert!(
        text.contains("downloading big.bin:") && text.contains(" MB"),
        "no progress shown:\n{}",
        text
    );
    assert!(text.contains("changed: [node1]"), "{}", text);
}
