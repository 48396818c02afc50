//! `setup` (and `gather_facts`): gathers facts in one remote command.
//!
//! The remote script and its parsing live in [`facts`] (they serve only this module); this
//! file only runs the script on the host and applies Ansible's `filter` argument.

pub mod facts;

use std::time::Duration;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::Value;

use super::args::{Int, List, Text};
use super::{parse_args, Module, ModuleContext, ModuleResult, VarMap};
use crate::connect::ExecRequest;
use crate::error::Result;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SetupArgs {
    /// Which facts are reported (Ansible's subsets); kk gathers everything in its one
    /// command and reports the facts of the chosen collectors.
    #[serde(default)]
    gather_subset: List,
    /// Seconds before the gathering command is killed.
    #[serde(default)]
    gather_timeout: Option<Int>,
    /// Shell-style patterns on the `ansible_`-prefixed names; only matching facts are returned.
    #[serde(default)]
    filter: List,
    /// Accepted for compatibility; local facts (`*.fact` files) are not read.
    #[serde(default)]
    fact_path: Option<Text>,
}

const VALID: &[&str] = &["gather_subset", "gather_timeout", "filter", "fact_path"];

/// Gathers facts; the result's `ansible_facts` becomes the host's facts layer (kk's names,
/// `ansible_facts.*` and the `ansible_*` variables, see [`facts::parse`]).
pub struct Setup;

#[async_trait]
impl Module for Setup {
    fn validate(&self, args: &VarMap) -> Result<()> {
        parse_args::<SetupArgs>("setup", args.clone(), VALID).map(|_| ())
    }

    async fn run(&self, ctx: &ModuleContext, raw: VarMap) -> Result<ModuleResult> {
        let a: SetupArgs = parse_args("setup", raw, VALID)?;
        let _ = &a.fact_path;
        let out = ctx
            .conn
            .exec(&ExecRequest {
                script: facts::SCRIPT.to_string(),
                stdin: None,
                keep: None,
                env: ctx.env.clone(),
                become_: ctx.become_.clone(),
                timeout: a
                    .gather_timeout
                    .map(|Int(t)| t)
                    .filter(|t| *t > 0)
                    .map(|t| Duration::from_secs(t as u64))
                    .or(ctx.timeout),
            })
            .await?;
        let text = String::from_utf8_lossy(&out.stdout);
        if out.rc != 0 || !text.contains("==kk:end") {
            return Ok(ModuleResult::failed(format!(
                "fact gathering did not complete (rc {}): the host's /bin/sh stopped before the end of the script",
                out.rc
            ))
            .with_output(&out));
        }
        let mut gathered = match facts::restrict(facts::parse(&text), &a.gather_subset.0) {
            Ok(g) => g,
            Err(e) => return Ok(ModuleResult::failed(e.message)),
        };
        if !a.filter.0.is_empty() {
            gathered = apply_filter(gathered, &a.filter.0);
        }
        Ok(ModuleResult::ok().with_facts(gathered, super::Effect::GatheredFacts))
    }
}

/// Keeps only the Ansible facts whose prefixed name matches one of the patterns (in both
/// the `ansible_facts` map and the `ansible_*` variables); kk's own names are dropped too,
/// as a filtered `setup` asks for specific facts only.
fn apply_filter(all: VarMap, patterns: &[String]) -> VarMap {
    let matches = |name: &str| patterns.iter().any(|p| fnmatch(p, name));
    let mut out = VarMap::new();
    let mut namespaced = VarMap::new();
    if let Some(Value::Object(f)) = all.get("ansible_facts") {
        for (k, v) in f {
            if matches(&format!("ansible_{k}")) || matches(k) {
                namespaced.insert(k.clone(), v.clone());
            }
        }
    }
    for (k, v) in all {
        if k.starts_with("ansible_") && k != "ansible_facts" && matches(&k) {
            out.insert(k, v);
        }
    }
    out.insert("ansible_facts".into(), Value::Object(namespaced));
    out
}

/// Python's `fnmatch.fnmatch` (case-sensitive): `*`, `?`, `[seq]`, `[!seq]`.
pub(crate) fn fnmatch(pattern: &str, name: &str) -> bool {
    let mut re = String::from("^");
    let chars: Vec<char> = pattern.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '*' => re.push_str(".*"),
            '?' => re.push('.'),
            '[' => match chars[i + 1..]
                .iter()
                .position(|c| *c == ']')
                .map(|p| p + i + 1)
            {
                Some(end) if end > i + 1 => {
                    let mut class: String = chars[i + 1..end].iter().collect();
                    if let Some(rest) = class.strip_prefix('!') {
                        class = format!("^{rest}");
                    }
                    re.push('[');
                    re.push_str(&class.replace('\\', "\\\\"));
                    re.push(']');
                    i = end;
                }
                _ => re.push_str("\\["),
            },
            c => re.push_str(&regex::escape(&c.to_string())),
        }
        i += 1;
    }
    re.push('$');
    regex::Regex::new(&re)
        .map(|r| r.is_match(name))
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn validate_at_load() {
        let check = |a: Value| Setup.validate(a.as_object().unwrap());
        assert!(check(json!({"gather_subset": "!all,network", "gather_timeout": "10"})).is_ok());
        let e = check(json!({"filters": "ansible_eth*"})).unwrap_err();
        assert!(e.message.contains("setup") && e.message.contains("filters"));
        assert!(e.help.unwrap().contains("filter"));
        let e = check(json!({"gather_timeout": "long"})).unwrap_err();
        assert!(e.message.contains("setup") && e.message.contains("integer"));
    }

    #[test]
    fn fnmatch_like_python() {
        assert!(fnmatch("ansible_eth*", "ansible_eth0"));
        assert!(fnmatch("ansible_distribution", "ansible_distribution"));
        assert!(!fnmatch(
            "ansible_distribution",
            "ansible_distribution_version"
        ));
        assert!(fnmatch("ansible_eth[0-9]", "ansible_eth1"));
        assert!(!fnmatch("ansible_eth[!0-9]", "ansible_eth1"));
        assert!(fnmatch("a?c", "abc"));
        assert!(fnmatch("a.c", "a.c") && !fnmatch("a.c", "abc"));
        assert!(fnmatch("[", "[") && !fnmatch("[", "a"));
    }

    #[test]
    fn filter_keeps_matching_facts_only() {
        let all = json!({
            "os": {"id": "debian"},
            "ansible_facts": {"distribution": "Debian", "distribution_version": "12.11", "kernel": "6.1"},
            "ansible_distribution": "Debian",
            "ansible_distribution_version": "12.11",
            "ansible_kernel": "6.1",
        });
        let Value::Object(all) = all else {
            unreachable!()
        };
        let f = apply_filter(all, &["ansible_distribution*".to_string()]);
        assert_eq!(
            Value::Object(f),
            json!({
                "ansible_distribution": "Debian",
                "ansible_distribution_version": "12.11",
                "ansible_facts": {"distribution": "Debian", "distribution_version": "12.11"},
            })
        );
    }

    #[tokio::test]
    async fn setup_runs_locally() {
        use crate::connect::local::LocalConnection;
        use std::sync::Arc;
        let ctx = ModuleContext {
            host: "localhost".into(),
            conn: Arc::new(LocalConnection::new()),
            check_mode: false,
            diff: false,
            no_log: false,
            become_: None,
            env: vec![],
            timeout: None,
            templar: Arc::new(crate::template::Templar::new()),
            vars: minijinja::Value::UNDEFINED,
            search_dirs: vec![],
            span: None,
            progress: None,
            delegation: None,
        };
        let mut args = VarMap::new();
        args.insert("filter".into(), json!(["ansible_system", "ansible_kernel"]));
        let r = Setup.run(&ctx, args).await.unwrap();
        assert!(!r.failed, "{:?}", r.msg);
        let f = &r.data["ansible_facts"];
        assert_eq!(f["ansible_system"], "Linux");
        assert_eq!(f["ansible_facts"]["system"], "Linux");
        assert!(f["ansible_kernel"].is_string());
        assert!(f.get("ansible_hostname").is_none());

        let mut bad = VarMap::new();
        bad.insert("filtre".into(), json!("x"));
        let err = Setup.run(&ctx, bad).await.unwrap_err();
        assert!(err.to_string().contains("filtre"), "{err}");
    }
}
