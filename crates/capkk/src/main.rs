//! `kk-capkk`: the CAPKK controller manager and its tools.

use clap::{Parser, Subcommand};

/// CAPKK, the Cluster API infrastructure provider of kk.
#[derive(Parser)]
#[command(name = "kk-capkk", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print the CustomResourceDefinitions as YAML.
    Crds,
    /// Run the KKCluster, KKMachine and KKInstance controllers against the cluster of the
    /// kubeconfig (or, in a Pod, its service account) until SIGTERM; `--leader-elect` for
    /// more than one replica.
    Run(capkk::controllers::manager::RunArgs),
}

fn main() {
    let cli = Cli::parse();
    match cli.command {
        Command::Run(args) => {
            let result = engine_driver().and_then(|driver| {
                let rt = tokio::runtime::Runtime::new().map_err(|e| format!("tokio: {e}"))?;
                rt.block_on(capkk::controllers::manager::run_manager(&args, driver))
                    .map_err(|e| e.to_string())
            });
            if let Err(e) = result {
                eprintln!("kk-capkk run: {e}");
                std::process::exit(1);
            }
        }
        Command::Crds => {
            use kube::CustomResourceExt;
            for crd in [
                capkk::api::KKCluster::crd(),
                capkk::api::KKMachine::crd(),
                capkk::api::KKMachineTemplate::crd(),
                capkk::api::KKInstance::crd(),
            ] {
                print!(
                    "---\n{}",
                    serde_yaml::to_string(&crd).expect("a CRD serializes")
                );
            }
        }
    }
}

/// The machine side of `run`: kk's engine running the phase playbooks.
fn engine_driver() -> Result<std::sync::Arc<dyn capkk::machine::Driver>, String> {
    // TODO(integrator): `capkk::machine::EngineDriver` is written on another branch;
    // return `Ok(Arc::new(EngineDriver::new(..)))` here once it is merged.
    Err("the engine driver (capkk::machine::EngineDriver) is not built into this binary yet".into())
}
