//! A scripted connection for the executor's unit tests: it records every command a run
//! sends and answers from rules the test gives, so tests see what the engine does without
//! SSH or local processes. Hosts use it with `connector: {type: fake, fake: <id>}`, where
//! `<id>` names a [`FakeHosts`] registered by the test.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use async_trait::async_trait;

use super::{Connection, ExecOutput, ExecRequest};
use crate::error::Result;

/// One command a host received.
#[derive(Debug, Clone)]
pub struct Sent {
    /// The host whose connection ran it.
    pub host: String,
    /// The script.
    pub script: String,
}

/// An answer for the commands whose script contains `needle` on `host` (any host when
/// `None`).
#[derive(Debug, Clone)]
pub struct Rule {
    /// Only this host (else every host).
    pub host: Option<String>,
    /// A part of the script.
    pub needle: String,
    /// What the command returns.
    pub output: ExecOutput,
}

/// The fake hosts of one test: what they were sent, in order, and the rules they answer
/// with (first match; else rc 0 with no output).
#[derive(Debug, Default)]
pub struct FakeHosts {
    /// Every command sent to any of them, in the order they arrived.
    pub sent: Mutex<Vec<Sent>>,
    rules: Mutex<Vec<Rule>>,
}

impl FakeHosts {
    /// Registers a new set of fake hosts; returns its id for the inventory and itself.
    pub fn register() -> (String, Arc<FakeHosts>) {
        static NEXT: Mutex<u64> = Mutex::new(0);
        let id = {
            let mut n = NEXT.lock().unwrap();
            *n += 1;
            format!("fake{}", *n)
        };
        let hosts = Arc::new(FakeHosts::default());
        registry().lock().unwrap().insert(id.clone(), hosts.clone());
        (id, hosts)
    }

    /// Answers commands containing `needle` (on `host`, or any) with `rc`, `stdout`.
    pub fn answer(&self, host: Option<&str>, needle: &str, rc: i32, stdout: &str) {
        self.rules.lock().unwrap().push(Rule {
            host: host.map(str::to_string),
            needle: needle.to_string(),
            output: ExecOutput {
                rc,
                stdout: stdout.as_bytes().to_vec(),
                stderr: Vec::new(),
            },
        });
    }

    /// The scripts `host` received, in order.
    pub fn scripts(&self, host: &str) -> Vec<String> {
        self.sent
            .lock()
            .unwrap()
            .iter()
            .filter(|s| s.host == host)
            .map(|s| s.script.clone())
            .collect()
    }
}

fn registry() -> &'static Mutex<HashMap<String, Arc<FakeHosts>>> {
    static REG: OnceLock<Mutex<HashMap<String, Arc<FakeHosts>>>> = OnceLock::new();
    REG.get_or_init(Default::default)
}

/// The connection of `host` among the fake hosts registered as `id`.
pub(super) fn connection(id: &str, host: &str) -> Option<Arc<dyn Connection>> {
    let hosts = registry().lock().unwrap().get(id)?.clone();
    Some(Arc::new(FakeConnection {
        host: host.to_string(),
        hosts,
    }))
}

struct FakeConnection {
    host: String,
    hosts: Arc<FakeHosts>,
}

#[async_trait]
impl Connection for FakeConnection {
    async fn exec(&self, req: &ExecRequest) -> Result<ExecOutput> {
        self.hosts.sent.lock().unwrap().push(Sent {
            host: self.host.clone(),
            script: req.script.clone(),
        });
        let rules = self.hosts.rules.lock().unwrap();
        let hit = rules.iter().find(|r| {
            r.host.as_deref().is_none_or(|h| h == self.host) && req.script.contains(&r.needle)
        });
        Ok(hit.map(|r| r.output.clone()).unwrap_or_default())
    }
}
