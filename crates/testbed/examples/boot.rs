//! Boots N test hosts and prints how long it took: `cargo run -p testbed --example boot -- 32`.
//! Also checks one SSH command per host and times the cleanup.

use std::time::Instant;

fn main() {
    let n: usize = match std::env::args().nth(1).map(|a| a.parse()) {
        None => 3,
        Some(Ok(n)) => n,
        Some(Err(_)) => {
            eprintln!("usage: boot [N]   (N = number of hosts, default 3)");
            std::process::exit(2);
        }
    };
    // Build the rootfs outside the timing (it is cached after the first run).
    if let Err(e) = testbed::ensure_rootfs() {
        eprintln!("{e}");
        std::process::exit(1);
    }
    let mem_before = mem_available_kb();
    let t = Instant::now();
    let bed = match testbed::TestBed::start(n) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    let boot = t.elapsed();
    println!(
        "booted {n} hosts in {:.2} s (subnet {})",
        boot.as_secs_f64(),
        bed.subnet()
    );
    let t = Instant::now();
    let mut states = std::collections::BTreeMap::<String, usize>::new();
    for i in 0..n {
        let st = bed
            .exec(i, "systemctl is-system-running; systemctl --failed --no-legend --plain | cut -d' ' -f1 | tr '\\n' ' '")
            .map(|o| String::from_utf8_lossy(&o.stdout).split_whitespace().collect::<Vec<_>>().join(" "))
            .unwrap_or_else(|e| e.to_string());
        *states.entry(st).or_default() += 1;
    }
    println!("systemd states (failed units): {states:?}");
    let mut ok = 0;
    for (i, h) in bed.hosts().iter().enumerate() {
        let out = bed.ssh(i, "hostname");
        if out.status.success() && String::from_utf8_lossy(&out.stdout).trim() == h.name {
            ok += 1;
        } else {
            eprintln!("{}: {}", h.name, String::from_utf8_lossy(&out.stderr));
        }
    }
    println!(
        "ssh hostname on {ok}/{n} hosts in {:.2} s",
        t.elapsed().as_secs_f64()
    );
    if let (Some(a), Some(b)) = (mem_before, mem_available_kb()) {
        println!("memory used by the hosts: about {} MB", (a - b) / 1024);
    }
    let t = Instant::now();
    drop(bed);
    println!("cleaned up in {:.2} s", t.elapsed().as_secs_f64());
    if ok != n {
        std::process::exit(1);
    }
}

/// MemAvailable from /proc/meminfo, in kB.
fn mem_available_kb() -> Option<i64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}
