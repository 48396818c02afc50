//! `kk-capkk`: the CAPKK controller manager and its tools (the CRDs and the install
//! manifests, printed from the binary so they always match it).

use clap::{Parser, Subcommand};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

const LONG_ABOUT: &str = "\
CAPKK, the Cluster API infrastructure provider of kk: Cluster API users declare clusters as
Kubernetes objects (KKCluster, KKMachineTemplate, KKMachine), and CAPKK turns plain Linux
machines reachable over SSH into their nodes, running kk's bundled playbooks on them.

Install it in a management cluster that runs Cluster API (`clusterctl init`):

  1. Build the image from the workspace and push it where the cluster pulls from.
  2. Apply the provider's objects (Namespace capkk-system, the four CRDs, RBAC, the
     Deployment running `kk-capkk run`), either from a checkout:
       kubectl apply -k crates/capkk/config
     or from this binary (same objects):
       kk-capkk manifests --image <registry>/kk-capkk:<tag> | kubectl apply -f -
  3. Declare a cluster: a KKCluster listing the machines (config/samples/kkcluster.yaml),
     KKMachineTemplates for the control plane and the workers
     (config/samples/kkmachinetemplate.yaml), and Cluster API's Cluster,
     KubeadmControlPlane and MachineDeployment referring to them.

With clusterctl, CAPKK is the infrastructure provider `kk` (every object carries the label
cluster.x-k8s.io/provider=infrastructure-kk, the CRDs cluster.x-k8s.io/v1beta1=v1beta1):
put the output of `kk-capkk manifests` as infrastructure-components.yaml beside
crates/capkk/config/clusterctl/metadata.yaml in a provider repository, register it in
clusterctl's configuration (providers: name kk, type InfrastructureProvider, url: that
infrastructure-components.yaml) and run `clusterctl init --infrastructure kk`.";

/// CAPKK, the Cluster API infrastructure provider of kk.
#[derive(Parser)]
#[command(name = "kk-capkk", version, long_about = LONG_ABOUT)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print the CustomResourceDefinitions (KKCluster, KKMachine, KKMachineTemplate,
    /// KKInstance) as YAML, generated from the types.
    #[command(long_about = "\
Print the four CustomResourceDefinitions as one YAML stream, generated from the Rust types
(the same as crates/capkk/config/crd/bases/). With --out-dir, write one file per CRD there
instead (how the committed files are regenerated after a type changes):
  kk-capkk crds --out-dir crates/capkk/config/crd/bases")]
    Crds {
        /// Write `<group>_<plural>.yaml` files into this directory instead of printing.
        #[arg(long, value_name = "DIR")]
        out_dir: Option<PathBuf>,
    },
    /// Print everything that installs CAPKK in a cluster: Namespace, CRDs, RBAC and the
    /// controller manager's Deployment.
    #[command(long_about = "\
Print everything that installs CAPKK in a management cluster, in an order `kubectl apply`
can create it in: the Namespace capkk-system, the four CRDs, the ServiceAccount, ClusterRole
and ClusterRoleBinding of the controllers, the leader-election Role, and the Deployment
running `kk-capkk run`. The same objects as `kubectl apply -k crates/capkk/config`:
  kk-capkk manifests --image registry.example.com/kk-capkk:v0.1.0 | kubectl apply -f -
For clusterctl, this output is the provider's infrastructure-components.yaml (provider name
kk, type InfrastructureProvider; label cluster.x-k8s.io/provider=infrastructure-kk).")]
    Manifests {
        /// The controller manager's image (default: the committed localhost/kk-capkk:latest).
        #[arg(long, value_name = "IMAGE")]
        image: Option<String>,
    },
    /// Run the KKCluster, KKMachine and KKInstance controllers against the cluster of the
    /// kubeconfig (or, in a Pod, its service account) until SIGTERM; `--leader-elect` for
    /// more than one replica.
    Run(capkk::controllers::manager::RunArgs),
}

/// Writes `text` to stdout; a reader that went away (`kk-capkk crds | head`) ends the
/// command quietly instead of panicking as `print!` does.
fn write_stdout(text: &str) -> Result<(), String> {
    write_quietly(&mut std::io::stdout().lock(), text)
}

/// [`write_stdout`] on any writer: a broken pipe is success.
fn write_quietly(out: &mut impl Write, text: &str) -> Result<(), String> {
    match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(format!("cannot write to stdout: {}", e)),
    }
}

fn write_crds(dir: &std::path::Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {}", dir.display(), e))?;
    for (file, yaml) in capkk::api::crd::crd_files() {
        let path = dir.join(&file);
        // Temp file + rename: a crash leaves the old file, never half of the new one.
        let tmp = dir.join(format!(".{}.tmp", file));
        std::fs::write(&tmp, yaml)
            .and_then(|_| std::fs::rename(&tmp, &path))
            .map_err(|e| format!("cannot write {}: {}", path.display(), e))?;
        eprintln!("wrote {}", path.display());
    }
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Crds { out_dir: Some(dir) } => write_crds(&dir),
        Command::Crds { out_dir: None } => write_stdout(&capkk::api::crd::crds_yaml()),
        Command::Manifests { image } => {
            write_stdout(&capkk::api::manifests::manifests(image.as_deref()))
        }
        Command::Run(args) => engine_driver().and_then(|driver| {
            let rt = tokio::runtime::Runtime::new().map_err(|e| format!("tokio: {e}"))?;
            rt.block_on(capkk::controllers::manager::run_manager(&args, driver))
                .map_err(|e| e.to_string())
        }),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("kk-capkk: {}", e);
            ExitCode::FAILURE
        }
    }
}

/// The machine side of `run`: kk's engine running the phase playbooks, its files (the
/// bundled playbooks and roles, downloads) under `$TMPDIR/kk-capkk` (the Deployment's
/// writable emptyDir).
fn engine_driver() -> Result<std::sync::Arc<dyn capkk::machine::Driver>, String> {
    let dir = std::env::temp_dir().join("kk-capkk");
    let driver = capkk::machine::EngineDriver::new(&dir)
        .map_err(|e| format!("cannot prepare {}: {e}", dir.display()))?;
    Ok(std::sync::Arc::new(driver))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_cli_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn help_says_how_to_install() {
        let help = Cli::command().render_long_help().to_string();
        for s in [
            "kubectl apply -k crates/capkk/config",
            "kk-capkk manifests",
            "infrastructure-kk",
            "clusterctl init --infrastructure kk",
        ] {
            assert!(help.contains(s), "{s:?} not in --help:\n{help}");
        }
        let mut cmd = Cli::command();
        let manifests = cmd
            .find_subcommand_mut("manifests")
            .unwrap()
            .render_long_help()
            .to_string();
        assert!(manifests.contains("kubectl apply -f -"), "{manifests}");
    }

    /// A writer whose reader has gone, as stdout is under `kk-capkk crds | head -1`.
    struct ClosedPipe;

    impl Write for ClosedPipe {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::ErrorKind::BrokenPipe.into())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_closed_stdout_ends_quietly() {
        assert_eq!(write_quietly(&mut ClosedPipe, "---\n"), Ok(()));
        let mut full = std::io::Cursor::new([0u8; 2]);
        let err = write_quietly(&mut full, "---\n").unwrap_err();
        assert!(err.starts_with("cannot write to stdout"), "{err}");
    }

    #[test]
    fn crds_are_written_to_a_directory() {
        let dir = tempfile::tempdir().unwrap();
        write_crds(dir.path()).unwrap();
        let mut names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(
            names,
            [
                "infrastructure.cluster.x-k8s.io_kkclusters.yaml",
                "infrastructure.cluster.x-k8s.io_kkinstances.yaml",
                "infrastructure.cluster.x-k8s.io_kkmachines.yaml",
                "infrastructure.cluster.x-k8s.io_kkmachinetemplates.yaml",
            ]
        );
    }
}
