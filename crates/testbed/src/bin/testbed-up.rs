//! Boots test-bed hosts for working by hand on roles: writes their inventory and waits.
//!
//! `cargo run -p testbed --bin testbed-up -- N [inventory.yaml]` boots N hosts, writes a
//! `kind: Inventory` (every host in group `testbed`, reached as root over SSH) to the file
//! (default `testbed-inventory.yaml`), prints each host's `ssh` command line, and keeps the
//! hosts up until it is interrupted (Ctrl-C, SIGTERM) or its standard input closes; then
//! they are removed as after a test.

use std::io::Read;
use std::sync::atomic::{AtomicBool, Ordering};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let n: usize = match args.first().map(|a| a.parse()) {
        Some(Ok(n)) => n,
        _ => {
            eprintln!("usage: testbed-up N [inventory.yaml]");
            std::process::exit(5);
        }
    };
    let out = args
        .get(1)
        .cloned()
        .unwrap_or_else(|| "testbed-inventory.yaml".into());
    let bed = match testbed::TestBed::start(n) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    if let Err(e) = std::fs::write(&out, bed.inventory_yaml()) {
        eprintln!("cannot write {out}: {e}");
        std::process::exit(1);
    }
    println!("inventory: {out}");
    for h in bed.hosts() {
        println!(
            "{}: ssh {} root@{}",
            h.name,
            bed.ssh_options(h.index).join(" "),
            h.ip
        );
    }
    println!("up; close stdin or send SIGTERM/SIGINT to remove the hosts");
    unsafe {
        libc::signal(
            libc::SIGINT,
            on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t,
        );
        libc::signal(
            libc::SIGTERM,
            on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t,
        );
    }
    std::thread::spawn(|| {
        let mut sink = Vec::new();
        let _ = std::io::stdin().read_to_end(&mut sink);
        STOP.store(true, Ordering::SeqCst);
    });
    while !STOP.load(Ordering::SeqCst) {
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    drop(bed);
}

/// Set by a signal or the end of standard input: time to remove the hosts.
static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}
