//! Interrupted runs leave nothing half-done (issue 15): `kk create cluster` stopped at
//! seeded random moments (SIGINT, SIGTERM, SIGKILL, a host cut off, a host rebooted),
//! then completed by the next run. And bounded command output: a command printing
//! without end costs kk bounded memory, locally and over SSH.

use crate::common;

use common::{Project, Run};
use testbed::TestBed;

/// A playbook whose one task prints `bytes` bytes of `y` on `hosts`.
fn runaway(hosts: &str, bytes: u64) -> String {
    format!(
        "- hosts: {hosts}\n  gather_facts: false\n  tasks:\n    - name: runaway\n      shell: \"head -c {bytes} /dev/zero | tr '\\\\0' y; echo done >&2\"\n"
    )
}

/// The runaway task's stdout as kk kept it.
fn kept_stdout(r: &Run, host: &str) -> String {
    r.result("runaway", host)["stdout"]
        .as_str()
        .unwrap_or_else(|| panic!("no stdout\n{}", r.describe()))
        .to_string()
}

/// `kk run` with `KK_OUTPUT_KEEP` set, under the same address-space cap and deadline as
/// [`Project::kk_bounded`].
fn kk_keep(p: &Project, keep: &str, args: &[&str], mem_mib: u64) -> Run {
    let out = std::process::Command::new("timeout")
        .args(["-s", "KILL", "120", "prlimit"])
        .arg(format!("--as={}", mem_mib * 1024 * 1024))
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_kk"))
        .args(args)
        .env("KK_OUTPUT_KEEP", keep)
        .current_dir(p.dir())
        .output()
        .expect("run kk");
    Run::from_output(out)
}

#[test]
fn a_local_command_printing_1_5_gb_costs_bounded_memory() {
    let p = Project::new();
    p.file("site.yaml", &runaway("localhost", 1_500_000_000));
    // 1.5 GB of output under a 200 MiB address-space cap: only both ends are kept.
    let r = p.kk_bounded(&["run", "site.yaml", "--output", "json"], 120, 200);
    r.code(0);
    let out = kept_stdout(&r, "localhost");
    let keep = 1 << 20;
    let marker = format!(
        "\n[kk: {} bytes of output dropped here; the first and last {} bytes are kept (KK_OUTPUT_KEEP sets how many)]\n",
        1_500_000_000 - 2 * keep,
        keep
    );
    assert_eq!(out.len(), 2 * keep + marker.len(), "{}", &out[..200]);
    assert!(out.contains(&marker));
    assert!(out.trim_matches('y') == marker.trim());
    assert_eq!(r.result("runaway", "localhost")["stderr"], "done");
}

#[test]
fn a_command_over_ssh_printing_300_mb_keeps_what_kk_output_keep_says() {
    let bed = TestBed::start(1).expect("boot a test host");
    let p = Project::new();
    p.file(
        "inventory.yaml",
        &(common::bed_inventory_hosts(&bed, &["n1"]) + "  groups: {}\n"),
    );
    p.file("site.yaml", &runaway("n1", 300_000_000));
    let r = kk_keep(
        &p,
        "64K",
        &[
            "run",
            "site.yaml",
            "-i",
            "inventory.yaml",
            "--output",
            "json",
        ],
        200,
    );
    r.code(0);
    let out = kept_stdout(&r, "n1");
    let keep = 64 * 1024;
    let marker = format!(
        "\n[kk: {} bytes of output dropped here; the first and last {} bytes are kept (KK_OUTPUT_KEEP sets how many)]\n",
        300_000_000 - 2 * keep,
        keep
    );
    assert_eq!(out.len(), 2 * keep + marker.len());
    assert!(out.trim_matches('y') == marker.trim(), "{}", r.describe());
    assert_eq!(r.result("runaway", "n1")["stderr"], "done");
}
