//! The harness of the FAKE tools' own tests: the tools installed under their names in a
//! temporary bin directory, run under `KK_FAKE_ROOT` (every absolute path they touch is
//! inside a temporary directory, systemctl is skipped), with their output and journal.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

/// The fake tools and their root.
pub struct Fake {
    root: tempfile::TempDir,
    bin: tempfile::TempDir,
}

/// What one call printed and returned.
pub struct Out {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Fake {
    /// kubeadm/kubelet/kubectl at `kube`, helm at v3.18.5, calicoctl at v3.29.7.
    pub fn new(kube: &str) -> Fake {
        let bin = tempfile::tempdir().unwrap();
        let exe = std::fs::read(env!("CARGO_BIN_EXE_kube-fake")).unwrap();
        for (tool, v) in [
            ("kubeadm", kube),
            ("kubelet", kube),
            ("kubectl", kube),
            ("helm", "v3.18.5"),
            ("calicoctl", "v3.29.7"),
        ] {
            let mut b = exe.clone();
            b.extend_from_slice(format!("\nKK-FAKE-VERSION={}\n", v).as_bytes());
            let p = bin.path().join(tool);
            std::fs::write(&p, b).unwrap();
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        Fake {
            root: tempfile::tempdir().unwrap(),
            bin,
        }
    }

    /// A path inside the fake root.
    pub fn path(&self, p: &str) -> PathBuf {
        self.root.path().join(p.trim_start_matches('/'))
    }

    pub fn write(&self, p: &str, content: &str) {
        let f = self.path(p);
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(f, content).unwrap();
    }

    pub fn run(&self, tool: &str, args: &[&str]) -> Out {
        self.run_env(tool, args, &[])
    }

    /// Runs `tool` with `env` set (HOME=/root; no KUBECONFIG nor calicoctl's datastore
    /// variables unless given).
    pub fn run_env(&self, tool: &str, args: &[&str], env: &[(&str, &str)]) -> Out {
        let mut cmd = Command::new(self.bin.path().join(tool));
        cmd.args(args)
            .env("KK_FAKE_ROOT", self.root.path())
            .env("HOME", "/root");
        for v in ["KUBECONFIG", "DATASTORE_TYPE", "ETCD_ENDPOINTS"] {
            cmd.env_remove(v).env_remove(format!("CALICO_{}", v));
        }
        let out = cmd.envs(env.iter().copied()).output().unwrap();
        Out {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).trim_end().to_string(),
            stderr: String::from_utf8_lossy(&out.stderr).trim_end().to_string(),
        }
    }

    pub fn ok(&self, tool: &str, args: &[&str]) -> String {
        let o = self.run(tool, args);
        assert_eq!(o.code, 0, "{} {:?}: {}\n{}", tool, args, o.stdout, o.stderr);
        o.stdout
    }

    pub fn fails(&self, tool: &str, args: &[&str]) -> String {
        let o = self.run(tool, args);
        assert_ne!(o.code, 0, "{} {:?} should fail: {}", tool, args, o.stdout);
        o.stderr
    }

    pub fn journal(&self) -> Vec<Value> {
        std::fs::read_to_string(self.path("/var/lib/kk-fakes/journal.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}
