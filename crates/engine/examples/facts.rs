//! Gathers this machine's facts through the local connection, as `setup` does on a host.
//!
//! `cargo run --release -p kk_engine --example facts` prints the median time of 20
//! gatherings (remote script + controller-side parse); `-- --dump` prints the facts as
//! JSON, for comparing with `ansible localhost -m setup`.

use std::time::Instant;

use kk_engine::connect::local::LocalConnection;
use kk_engine::connect::{Connection, ExecRequest};
use kk_engine::facts::{parse, SCRIPT};

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let conn = LocalConnection::new();
    let gather = || async {
        let out = conn
            .exec(&ExecRequest::script(SCRIPT))
            .await
            .expect("run the facts script");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    if std::env::args().any(|a| a == "--dump") {
        let facts = parse(&gather().await);
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::Value::Object(facts)).unwrap()
        );
        return;
    }
    let (mut total, mut parse_only) = (Vec::new(), Vec::new());
    for _ in 0..20 {
        let t = Instant::now();
        let text = gather().await;
        let p = Instant::now();
        let facts = parse(&text);
        parse_only.push(p.elapsed().as_secs_f64() * 1000.0);
        total.push(t.elapsed().as_secs_f64() * 1000.0);
        assert!(facts.contains_key("ansible_facts"));
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(|a, b| a.total_cmp(b));
        (v[9] + v[10]) / 2.0
    };
    println!(
        "facts gathering over 20 runs: median {:.1} ms, of which parsing {:.2} ms",
        median(&mut total),
        median(&mut parse_only)
    );
}
