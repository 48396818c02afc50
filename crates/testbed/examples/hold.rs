//! Boots N hosts, writes their inventory to the path given, and keeps them up until
//! stdin closes: for trying kk by hand against real hosts.
//! `cargo run -p testbed --example hold -- 3 /tmp/inv.yaml`

use std::io::Read;

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(3);
    let path = std::env::args()
        .nth(2)
        .unwrap_or_else(|| "inventory.yaml".into());
    let bed = testbed::TestBed::start(n).unwrap_or_else(|e| panic!("{}", e));
    std::fs::write(&path, bed.inventory_yaml()).expect("write the inventory");
    for h in bed.hosts() {
        println!("{} {}", h.name, h.ip);
    }
    println!(
        "inventory written to {}; close stdin (Ctrl-D) to stop the hosts",
        path
    );
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
}
