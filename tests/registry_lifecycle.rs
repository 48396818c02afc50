//! The registry commands' playbooks on one real test host (kk-reg): `playbooks/init_registry.yaml`
//! (`kk init registry`) installs Docker and the docker-registry (TLS from certs/init, htpasswd
//! auth) and pushes binary_dir/images into it; `playbooks/artifact_images.yaml --tags push`
//! (`kk artifact images --push`) finds the image there already, `--tags pull` pulls it back
//! from the registry into binary_dir/images; `playbooks/certs_renew.yaml`
//! (`kk certs renew`) gives the registry a new certificate from the same CA and restarts it.
//!
//! Real: Docker 26.1.5, docker-compose 2.26.1 and the registry 2.8.2 in a container
//! (tests/common/docker.rs builds them from Debian packages); the controller's curl and
//! openssl talk to the registry. binary_dir is staged (download.fetch false).

mod common;

use std::process::Command;

use common::artifacts::repo;
use common::cluster::failures;
use common::docker::{binary_dir, COMPOSE_VERSION, DOCKER_VERSION, REGISTRY_VERSION};
use common::{bed_inventory_hosts, Project, Run};
use testbed::TestBed;

const PASSWORD: &str = "Kk-Lifecycle-Secret-3";
const IMAGE: &str = "docker.io/kubesphere/kk-hello:v1";

/// The registry's settings, and the OS init a test host needs (it shares this machine's
/// kernel: no kernel-global sysctls, no time sync; swap off only when the machine has none).
fn config() -> String {
    format!(
        r#"apiVersion: kubekey.kubesphere.io/v1
kind: Config
spec:
  download: {{fetch: false}}
  image_registry:
    type: docker-registry
    docker_registry_version: "{REGISTRY_VERSION}"
    dockercompose_version: {COMPOSE_VERSION}
    auth:
      password: "{PASSWORD}"
  cri:
    docker_version: "{DOCKER_VERSION}"
  native:
    disable_swap: {swap}
    sysctl_skip: [vm., fs., kernel., net.core.rmem_max, net.core.wmem_max, net.ipv4.neigh., net.ipv6.neigh.]
    ntp:
      enabled: false
"#,
        swap = std::fs::read_to_string("/proc/swaps")
            .unwrap_or_default()
            .lines()
            .count()
            <= 1
    )
}

fn run(p: &Project, playbook: &str, extra: &[&str]) -> Run {
    let pb = repo()
        .join("playbooks")
        .join(playbook)
        .display()
        .to_string();
    let t = std::time::Instant::now();
    let r = p.kk_flow(&["run", &pb], extra);
    eprintln!("{}: {:?}", playbook, t.elapsed());
    assert!(
        !r.stdout.contains(PASSWORD) && !r.stderr.contains(PASSWORD),
        "the registry password was printed"
    );
    r.code(0);
    assert!(failures(&r).is_empty(), "{:#?}", failures(&r));
    r
}

fn curl(args: &[&str]) -> (String, String) {
    let out = Command::new("curl")
        .args(["-s", "-w", "\n%{http_code}"])
        .args(args)
        .output()
        .expect("curl is installed");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", &text));
    (body.to_string(), code.to_string())
}

/// Serial and dates of the certificate the registry serves, read by the controller's openssl.
fn served_cert(ip: &str) -> String {
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "echo | openssl s_client -connect {}:443 2>/dev/null | openssl x509 -noout -serial -dates",
            ip
        ))
        .output()
        .expect("openssl");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn init_registry_push_images_and_renew_its_certificate() {
    let bed = TestBed::start(1).expect("boot a test host");
    let p = Project::new();
    let mut inv = bed_inventory_hosts(&bed, &["kk-reg"]);
    inv.push_str("  groups:\n    image_registry:\n      hosts: [kk-reg]\n");
    p.file("inventory.yaml", &inv)
        .file("config.yaml", &config());
    let scratch = tempfile::tempdir().unwrap();
    let bin = p.path("wd/kubekey");
    binary_dir(&bin, scratch.path());
    common::registry::layout(&bin.join("images"), IMAGE);
    let ip = bed.hosts()[0].ip.to_string();
    let ca = p.path("wd/pki/root.crt").display().to_string();
    let url = format!("https://{}/v2/", ip);
    let user = format!("admin:{}", PASSWORD);

    // 1. kk init registry: Docker, the registry, the image pushed.
    let r = run(&p, "init_registry.yaml", &["--tags", "image_registry"]);
    assert!(r.recap("kk-reg")["changed"].as_i64().unwrap_or(0) > 0);
    assert_eq!(
        common::sh(&bed, 0, "systemctl is-active docker docker-registry"),
        "active\nactive"
    );
    assert_eq!(curl(&["--cacert", &ca, &url]).1, "401");
    let (body, code) = curl(&["--cacert", &ca, "-u", &user, &format!("{}_catalog", url)]);
    assert_eq!(code, "200");
    assert!(body.contains("\"kubesphere/kk-hello\""), "{}", body);

    // 2. kk artifact images --push: the registry already holds the image.
    let r = run(&p, "artifact_images.yaml", &["--tags", "push"]);
    // The push task ran (found every image there: no change).
    let pushed: Vec<serde_json::Value> = r
        .events()
        .into_iter()
        .filter(|e| {
            e["event"] == "host_result"
                && e["task"]
                    .as_str()
                    .is_some_and(|t| t.starts_with("push | Push the images"))
        })
        .collect();
    assert!(
        pushed.len() == 1 && pushed[0]["status"] == "ok",
        "{:#?}",
        pushed
    );
    assert_eq!(r.recap("localhost")["changed"], 0, "{}", r.describe());

    // 2b. kk artifact images --pull: the image back from the registry into binary_dir/images
    //     (download.images.manifests, the registry's CA and credentials on the controller).
    let pulled = format!("{}/kubesphere/kk-hello:v1", ip);
    p.file(
        "config-pull.yaml",
        &config().replace(
            "  download: {fetch: false}\n",
            &format!(
                "  download:\n    images:\n      manifests: [\"{pulled}\"]\n      auths: [{{registry: \"{ip}\", username: admin, password: \"{PASSWORD}\", ca_file: \"{ca}\"}}]\n"
            ),
        ),
    );
    let pb = repo()
        .join("playbooks/artifact_images.yaml")
        .display()
        .to_string();
    let r = p.kk(&[
        "run",
        &pb,
        "-i",
        "inventory.yaml",
        "-c",
        "config-pull.yaml",
        "--workdir",
        "wd",
        "--output",
        "json",
        "--tags",
        "pull",
    ]);
    r.code(0);
    assert!(failures(&r).is_empty(), "{:#?}", failures(&r));
    let index = std::fs::read_to_string(bin.join("images/index.json")).unwrap();
    assert!(index.contains(&pulled), "{}", index);

    // 3. kk certs renew: a new certificate from the same CA, served after the restart.
    let before = served_cert(&ip);
    assert!(before.contains("serial="), "{}", before);
    let r = run(&p, "certs_renew.yaml", &[]);
    let restart = r.result("RenewImageRegistry | Restart the registry", "kk-reg");
    assert_eq!(restart["changed"], true, "{}", restart);
    let mut after = served_cert(&ip);
    for _ in 0..30 {
        if after.contains("serial=") && after != before {
            break;
        }
        std::thread::sleep(std::time::Duration::from_secs(1));
        after = served_cert(&ip);
    }
    assert_ne!(after, before, "the registry serves the same certificate");
    let mut code = String::new();
    for _ in 0..30 {
        code = curl(&["--cacert", &ca, "-u", &user, &url]).1;
        if code == "200" {
            break;
        }
        std::thread::sleep(std::time::Duration::from_secs(1));
    }
    assert_eq!(
        code, "200",
        "the renewed certificate verifies against the CA"
    );
}
