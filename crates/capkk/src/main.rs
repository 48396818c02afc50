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
}

fn main() {
    let cli = Cli::parse();
    match cli.command {
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
