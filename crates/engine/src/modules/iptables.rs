//! `iptables`: one rule, a chain's policy, a flush, or a chain of `iptables`/`ip6tables`.
//! The command line is built as ansible-core's module builds it (same arguments in the
//! same order, `!` negations, `-m` matches added for `ctstate`, `destination_ports`,
//! `comment` …), and the decisions are its: a rule is checked with `-C` before `-A`/`-I`/
//! `-D`, a policy read from `-L` before `-P`, a flush always changes. Everything a task
//! does (version, check, change, for both IP versions) is one script on the host.

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::Value;

use super::args::{Flag, List, Text};
use super::plan::OneScript;
use super::{parse_args, ModuleContext, ModuleResult, VarMap};
use crate::connect::shell_quote;
use crate::error::Result;

/// The module's boolean-or-choice `syn` and the rest of its arguments, as given.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct IptablesArgs {
    table: Option<Text>,
    state: Option<Text>,
    action: Option<Text>,
    ip_version: Option<Text>,
    chain: Option<Text>,
    rule_num: Option<Text>,
    protocol: Option<Text>,
    wait: Option<Text>,
    source: Option<Text>,
    to_source: Option<Text>,
    destination: Option<Text>,
    to_destination: Option<Text>,
    #[serde(rename = "match")]
    match_: Option<List>,
    tcp_flags: Option<TcpFlags>,
    jump: Option<Text>,
    gateway: Option<Text>,
    log_prefix: Option<Text>,
    log_level: Option<Text>,
    goto: Option<Text>,
    in_interface: Option<Text>,
    out_interface: Option<Text>,
    fragment: Option<Text>,
    set_counters: Option<Text>,
    source_port: Option<Text>,
    destination_port: Option<Text>,
    destination_ports: Option<List>,
    to_ports: Option<Text>,
    set_dscp_mark: Option<Text>,
    set_dscp_mark_class: Option<Text>,
    comment: Option<Text>,
    ctstate: Option<List>,
    src_range: Option<Text>,
    dst_range: Option<Text>,
    match_set: Option<Text>,
    match_set_flags: Option<Text>,
    limit: Option<Text>,
    limit_burst: Option<Text>,
    uid_owner: Option<Text>,
    gid_owner: Option<Text>,
    reject_with: Option<Text>,
    icmp_type: Option<Text>,
    syn: Option<Text>,
    flush: Option<Flag>,
    policy: Option<Text>,
    chain_management: Option<Flag>,
    numeric: Option<Flag>,
}

/// `tcp_flags`: the flags examined and those that must be set.
#[derive(Deserialize, Default, Clone)]
#[serde(deny_unknown_fields)]
struct TcpFlags {
    #[serde(default)]
    flags: Option<List>,
    #[serde(default)]
    flags_set: Option<List>,
}

const VALID: &[&str] = &[
    "table",
    "state",
    "action",
    "ip_version",
    "chain",
    "rule_num",
    "protocol",
    "wait",
    "source",
    "to_source",
    "destination",
    "to_destination",
    "match",
    "tcp_flags",
    "jump",
    "gateway",
    "log_prefix",
    "log_level",
    "goto",
    "in_interface",
    "out_interface",
    "fragment",
    "set_counters",
    "source_port",
    "destination_port",
    "destination_ports",
    "to_ports",
    "set_dscp_mark",
    "set_dscp_mark_class",
    "comment",
    "ctstate",
    "src_range",
    "dst_range",
    "match_set",
    "match_set_flags",
    "limit",
    "limit_burst",
    "uid_owner",
    "gid_owner",
    "reject_with",
    "icmp_type",
    "syn",
    "flush",
    "policy",
    "chain_management",
    "numeric",
];

/// The arguments after Ansible's defaults and checks: what the rule is built from.
#[derive(Default, Clone)]
struct Params {
    table: String,
    present: bool,
    insert: bool,
    ip_version: String,
    chain: Option<String>,
    rule_num: Option<String>,
    wait: Option<String>,
    flush: bool,
    policy: Option<String>,
    chain_management: bool,
    numeric: bool,
    s: std::collections::BTreeMap<&'static str, String>,
    match_: Vec<String>,
    destination_ports: Vec<String>,
    ctstate: Vec<String>,
    tcp_flags: Option<(Vec<String>, Vec<String>)>,
    syn: String,
}

impl Params {
    fn get(&self, k: &str) -> Option<&str> {
        self.s.get(k).map(String::as_str)
    }
}

/// A value among `values`, or Ansible's message.
fn choice(
    name: &str,
    v: Option<Text>,
    values: &[&str],
    default: Option<&str>,
) -> std::result::Result<Option<String>, String> {
    match v {
        None => Ok(default.map(str::to_string)),
        Some(t) if values.contains(&t.0.as_str()) => Ok(Some(t.0)),
        Some(t) => Err(format!(
            "value of {} must be one of: {}, got: {}",
            name,
            values.join(", "),
            t.0
        )),
    }
}

fn check(raw: VarMap) -> Result<std::result::Result<Params, String>> {
    let a: IptablesArgs = parse_args("iptables", raw, VALID)?;
    Ok(check_args(a))
}

fn check_args(a: IptablesArgs) -> std::result::Result<Params, String> {
    let table = choice(
        "table",
        a.table,
        &["filter", "nat", "mangle", "raw", "security"],
        Some("filter"),
    )?
    .unwrap_or_default();
    let state = choice("state", a.state, &["absent", "present"], Some("present"))?;
    let action = choice("action", a.action, &["append", "insert"], Some("append"))?;
    let ip_version = choice(
        "ip_version",
        a.ip_version,
        &["ipv4", "ipv6", "both"],
        Some("ipv4"),
    )?
    .unwrap_or_default();
    let log_level = choice(
        "log_level",
        a.log_level,
        &[
            "0", "1", "2", "3", "4", "5", "6", "7", "emerg", "alert", "crit", "error", "warning",
            "notice", "info", "debug",
        ],
        None,
    )?;
    let match_set_flags = choice(
        "match_set_flags",
        a.match_set_flags,
        &["src", "dst", "src,dst", "dst,src", "src,src", "dst,dst"],
        None,
    )?;
    let syn =
        choice("syn", a.syn, &["ignore", "match", "negate"], Some("ignore"))?.unwrap_or_default();
    let policy = choice(
        "policy",
        a.policy,
        &["ACCEPT", "DROP", "QUEUE", "RETURN"],
        None,
    )?;
    let flush = a.flush.is_some_and(|f| f.0);
    if a.set_dscp_mark.is_some() && a.set_dscp_mark_class.is_some() {
        return Err("parameters are mutually exclusive: set_dscp_mark|set_dscp_mark_class".into());
    }
    if a.flush.is_some() && policy.is_some() {
        return Err("parameters are mutually exclusive: flush|policy".into());
    }
    for (k, v) in [
        ("set_dscp_mark", &a.set_dscp_mark),
        ("set_dscp_mark_class", &a.set_dscp_mark_class),
    ] {
        if v.is_some() && a.jump.is_none() {
            return Err(format!("missing parameter(s) required by '{}': jump", k));
        }
    }
    if a.jump
        .as_ref()
        .is_some_and(|j| j.0 == "TEE" || j.0 == "tee")
        && a.gateway.is_none()
    {
        return Err(format!(
            "jump is {} but all of the following are missing: gateway",
            a.jump.as_ref().map(|j| j.0.as_str()).unwrap_or_default()
        ));
    }
    if !flush && a.chain.is_none() {
        return Err("flush is False but all of the following are missing: chain".into());
    }
    let mut s = std::collections::BTreeMap::new();
    for (k, v) in [
        ("protocol", a.protocol),
        ("source", a.source),
        ("to_source", a.to_source),
        ("destination", a.destination),
        ("to_destination", a.to_destination),
        ("jump", a.jump),
        ("gateway", a.gateway),
        ("log_prefix", a.log_prefix),
        ("log_level", log_level.map(Text)),
        ("goto", a.goto),
        ("in_interface", a.in_interface),
        ("out_interface", a.out_interface),
        ("fragment", a.fragment),
        ("set_counters", a.set_counters),
        ("source_port", a.source_port),
        ("destination_port", a.destination_port),
        ("to_ports", a.to_ports),
        ("set_dscp_mark", a.set_dscp_mark),
        ("set_dscp_mark_class", a.set_dscp_mark_class),
        ("comment", a.comment),
        ("src_range", a.src_range),
        ("dst_range", a.dst_range),
        ("match_set", a.match_set),
        ("match_set_flags", match_set_flags.map(Text)),
        ("limit", a.limit),
        ("limit_burst", a.limit_burst),
        ("uid_owner", a.uid_owner),
        ("gid_owner", a.gid_owner),
        ("reject_with", a.reject_with),
        ("icmp_type", a.icmp_type),
    ] {
        if let Some(t) = v {
            s.insert(k, t.0);
        }
    }
    let tcp_flags = a.tcp_flags.and_then(|t| match (t.flags, t.flags_set) {
        (Some(f), Some(fs)) => Some((f.0, fs.0)),
        _ => None,
    });
    Ok(Params {
        table,
        present: state.as_deref() == Some("present"),
        insert: action.as_deref() == Some("insert"),
        ip_version,
        chain: a.chain.map(|c| c.0),
        rule_num: a.rule_num.map(|r| r.0),
        wait: a.wait.map(|w| w.0),
        flush,
        policy,
        chain_management: a.chain_management.is_some_and(|f| f.0),
        numeric: a.numeric.is_some_and(|f| f.0),
        s,
        match_: a.match_.map(|m| m.0).unwrap_or_default(),
        destination_ports: a.destination_ports.map(|m| m.0).unwrap_or_default(),
        ctstate: a.ctstate.map(|m| m.0).unwrap_or_default(),
        tcp_flags,
        syn,
    })
}

/// The module's `append_param`: `!x` becomes `! FLAG x`.
fn param(rule: &mut Vec<String>, v: Option<&str>, flag: &str) {
    if let Some(v) = v {
        match v.strip_prefix('!') {
            Some(rest) => rule.extend(["!".into(), flag.into(), rest.into()]),
            None => rule.extend([flag.into(), v.into()]),
        }
    }
}

fn match_flag(rule: &mut Vec<String>, v: Option<&str>, flag: &str, negatable: bool) {
    match v {
        Some("match") => rule.push(flag.into()),
        Some("negate") if negatable => rule.extend(["!".into(), flag.into()]),
        _ => {}
    }
}

fn csv(rule: &mut Vec<String>, v: &[String], flag: &str) {
    if !v.is_empty() {
        rule.extend([flag.into(), v.join(",")]);
    }
}

fn add_match(rule: &mut Vec<String>, on: bool, m: &str) {
    if on {
        rule.extend(["-m".into(), m.into()]);
    }
}

fn add_jump(rule: &mut Vec<String>, on: bool, j: &str) {
    if on {
        rule.extend(["-j".into(), j.into()]);
    }
}

/// The module's `construct_rule`, argument for argument.
fn construct_rule(p: &Params) -> Vec<String> {
    let g = |k: &str| p.get(k);
    let has = |k: &str| p.get(k).is_some_and(|v| !v.is_empty());
    let mut r = Vec::new();
    param(&mut r, g("protocol"), "-p");
    param(&mut r, g("source"), "-s");
    param(&mut r, g("destination"), "-d");
    for m in &p.match_ {
        param(&mut r, Some(m), "-m");
    }
    if let Some((f, fs)) = &p.tcp_flags {
        r.extend(["--tcp-flags".into(), f.join(","), fs.join(",")]);
    }
    param(&mut r, g("jump"), "-j");
    if g("jump").is_some_and(|j| j.eq_ignore_ascii_case("tee")) {
        param(&mut r, g("gateway"), "--gateway");
    }
    param(&mut r, g("log_prefix"), "--log-prefix");
    param(&mut r, g("log_level"), "--log-level");
    param(&mut r, g("to_destination"), "--to-destination");
    add_match(&mut r, !p.destination_ports.is_empty(), "multiport");
    csv(&mut r, &p.destination_ports, "--dports");
    param(&mut r, g("to_source"), "--to-source");
    param(&mut r, g("goto"), "-g");
    param(&mut r, g("in_interface"), "-i");
    param(&mut r, g("out_interface"), "-o");
    param(&mut r, g("fragment"), "-f");
    param(&mut r, g("set_counters"), "-c");
    param(&mut r, g("source_port"), "--source-port");
    param(&mut r, g("destination_port"), "--destination-port");
    param(&mut r, g("to_ports"), "--to-ports");
    param(&mut r, g("set_dscp_mark"), "--set-dscp");
    let jump_not_dscp = !g("jump").is_some_and(|j| j.eq_ignore_ascii_case("dscp"));
    add_jump(&mut r, has("set_dscp_mark") && jump_not_dscp, "DSCP");
    param(&mut r, g("set_dscp_mark_class"), "--set-dscp-class");
    add_jump(&mut r, has("set_dscp_mark_class") && jump_not_dscp, "DSCP");
    match_flag(&mut r, Some(&p.syn), "--syn", true);
    if p.match_.iter().any(|m| m == "conntrack") {
        csv(&mut r, &p.ctstate, "--ctstate");
    } else if p.match_.iter().any(|m| m == "state") {
        csv(&mut r, &p.ctstate, "--state");
    } else if !p.ctstate.is_empty() {
        add_match(&mut r, true, "conntrack");
        csv(&mut r, &p.ctstate, "--ctstate");
    }
    if p.match_.iter().any(|m| m == "iprange") {
        param(&mut r, g("src_range"), "--src-range");
        param(&mut r, g("dst_range"), "--dst-range");
    } else if has("src_range") || has("dst_range") {
        add_match(&mut r, true, "iprange");
        param(&mut r, g("src_range"), "--src-range");
        param(&mut r, g("dst_range"), "--dst-range");
    }
    let set_flags = |r: &mut Vec<String>| {
        if let Some(f) = g("match_set_flags") {
            r.push(f.into());
        }
    };
    if p.match_.iter().any(|m| m == "set") {
        param(&mut r, g("match_set"), "--match-set");
        set_flags(&mut r);
    } else if has("match_set") {
        add_match(&mut r, true, "set");
        param(&mut r, g("match_set"), "--match-set");
        set_flags(&mut r);
    }
    add_match(&mut r, has("limit") || has("limit_burst"), "limit");
    param(&mut r, g("limit"), "--limit");
    param(&mut r, g("limit_burst"), "--limit-burst");
    for (k, flag) in [("uid_owner", "--uid-owner"), ("gid_owner", "--gid-owner")] {
        add_match(&mut r, has(k), "owner");
        match_flag(&mut r, g(k), flag, true);
        param(&mut r, g(k), flag);
    }
    if g("jump").is_none() {
        add_jump(&mut r, has("reject_with"), "REJECT");
        add_jump(&mut r, has("set_dscp_mark_class"), "DSCP");
        add_jump(&mut r, has("set_dscp_mark"), "DSCP");
    }
    param(&mut r, g("reject_with"), "--reject-with");
    let icmp = match p.ip_version.as_str() {
        "ipv6" => "--icmpv6-type",
        "both" => "--icmp-type --icmpv6-type",
        _ => "--icmp-type",
    };
    param(&mut r, g("icmp_type"), icmp);
    add_match(&mut r, has("comment"), "comment");
    param(&mut r, g("comment"), "--comment");
    r
}

/// Python's `shlex.quote`, as Ansible shows a failed command.
fn py_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_alphanumeric() || "_@%+=:,./-".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\"'\"'"))
    }
}

/// The module's `push_arguments` after the binary: `-t TABLE ACTION CHAIN [NUM]`; the
/// script adds `-w` (when the version takes it) through `"$@"`, then the rule.
fn head(p: &Params, action: &str) -> Vec<String> {
    let mut v = vec!["-t".into(), p.table.clone(), action.into()];
    if let Some(c) = &p.chain {
        v.push(c.clone());
    }
    if action == "-I" {
        if let Some(n) = p.rule_num.as_ref().filter(|n| !n.is_empty()) {
            v.push(n.clone());
        }
    }
    v
}

fn words(v: &[String]) -> String {
    v.iter()
        .map(|w| shell_quote(w))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The script for one binary: its version decides `-w`; `kk_run` runs a command that must
/// succeed (on failure: its output and `==kk-rc==N`, and the script stops).
fn script_for(bin: &str, p: &Params, rule: &[String], report_only: bool) -> String {
    let mut s = format!(
        "b=$(PATH=\"$PATH:/sbin:/usr/sbin:/usr/local/sbin\" command -v {bin}) || {{ echo '==kk-nobin=={bin}'; exit 0; }}\n"
    );
    s.push_str("kk_run \"$b\" --version\nv=${kk_out#*v}; v=${v%%[!0-9.]*}\n");
    match &p.wait {
        Some(w) => s.push_str(&format!(
            "if kk_ge \"$v\" 1.6.0; then set -- -w {w}; elif kk_ge \"$v\" 1.4.20; then set -- -w ''; else set --; fi\n",
            w = shell_quote(w)
        )),
        None => s.push_str("set --\n"),
    }
    let cmd = |action: &str, with_rule: bool| {
        let mut c = format!("\"$b\" {} \"$@\"", words(&head(p, action)));
        if with_rule {
            c.push(' ');
            c.push_str(&words(rule));
        }
        c
    };
    let numeric = if p.numeric { " --numeric" } else { "" };
    let act = |c: String| {
        if report_only {
            String::new()
        } else {
            format!("  kk_run {}\n", c)
        }
    };
    if p.flush {
        s.push_str("echo CHANGED\n");
        s.push_str(&act(cmd("-F", false)));
    } else if let Some(policy) = &p.policy {
        s.push_str(&format!("kk_run {}{}\n", cmd("-L", false), numeric));
        s.push_str("cur=$(printf '%s\\n' \"$kk_out\" | head -n 1 | sed -n 's/.*(policy \\([A-Z][A-Z]*\\)).*/\\1/p')\n");
        s.push_str("[ -n \"$cur\" ] || { echo '==kk-nopolicy=='; exit 0; }\n");
        s.push_str(&format!(
            "if [ \"$cur\" != {pol} ]; then\n  echo CHANGED\n{}fi\n",
            act(format!("{} {}", cmd("-P", false), shell_quote(policy))),
            pol = shell_quote(policy)
        ));
    } else if rule.is_empty() {
        s.push_str(&format!(
            "if {}{} >/dev/null 2>&1; then present=1; else present=0; fi\n",
            cmd("-L", false),
            numeric
        ));
        if p.present {
            s.push_str("if [ $present = 0 ]; then\n  echo CHANGED\n");
            if p.chain_management {
                s.push_str(&act(cmd("-N", false)));
            }
        } else {
            s.push_str("if [ $present = 1 ]; then\n  echo CHANGED\n");
            if p.chain_management {
                s.push_str(&act(cmd("-X", false)));
            }
        }
        s.push_str("fi\n");
    } else {
        s.push_str(&format!(
            "if {} >/dev/null 2>&1; then present=1; else present=0; fi\n",
            cmd("-C", true)
        ));
        let (want, action) = match (p.present, p.insert) {
            (true, true) => ("0", "-I"),
            (true, false) => ("0", "-A"),
            (false, _) => ("1", "-D"),
        };
        s.push_str(&format!(
            "if [ $present = {want} ]; then\n  echo CHANGED\n{}fi\n",
            act(cmd(action, true))
        ));
    }
    s
}

/// Shell helpers: `kk_run` shows the command line first (Ansible's `cmd`), keeps a
/// successful command's stdout in `$kk_out`, and on failure prints its output and rc and
/// stops; `kk_ge` compares versions.
const PRELUDE: &str = r#"export LANG=C LC_ALL=C
kk_run() {
  printf '==kk-cmd=='; printf '%s\037' "$@"; echo
  kk_out=$("$@") && return 0
  kk_rc=$?
  printf '%s\n==kk-rc==%s\n' "$kk_out" "$kk_rc"
  exit 0
}
kk_ge() { [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n 1)" = "$2" ]; }
"#;

/// `ansible.builtin.iptables`.
pub struct Iptables;

#[async_trait]
impl OneScript for Iptables {
    async fn script(
        &self,
        ctx: &ModuleContext,
        args: VarMap,
        report_only: bool,
    ) -> Result<ModuleResult> {
        let p = match check(args).map_err(|e| e.at_opt(ctx.span.as_ref()))? {
            Ok(p) => p,
            Err(msg) => return Ok(ModuleResult::failed(msg)),
        };
        let rule = construct_rule(&p);
        let mut p_run = p.clone();
        if p.get("log_prefix").is_some() || p.get("log_level").is_some() {
            match p.get("jump") {
                None => {
                    p_run.s.insert("jump", "LOG".into());
                }
                Some("LOG") => {}
                Some(_) => {
                    return Ok(ModuleResult::failed(
                        "Logging options can only be used with the LOG jump target.",
                    ))
                }
            }
        }
        let run_rule = construct_rule(&p_run);
        let bins: &[&str] = match p.ip_version.as_str() {
            "both" => &["iptables", "ip6tables"],
            "ipv6" => &["ip6tables"],
            _ => &["iptables"],
        };
        let mut script = PRELUDE.to_string();
        for b in bins {
            script.push_str(&format!("echo '==kk-bin=={}'\n", b));
            script.push_str(&script_for(b, &p_run, &run_rule, report_only));
        }
        let out = ctx.exec(script, None).await?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        if out.rc != 0 {
            return Err(super::remote::remote_error("iptables script failed", &out));
        }
        if let Some(b) = text.lines().find_map(|l| l.strip_prefix("==kk-nobin==")) {
            return Ok(ModuleResult::failed(format!(
                "Failed to find required executable \"{}\" in paths: /usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                b
            )));
        }
        if let Some(i) = text.rfind("\n==kk-rc==") {
            let rc: i64 = text[i + 10..].trim().parse().unwrap_or(1);
            let start = text[..i].rfind("==kk-cmd==").unwrap_or(0);
            let (cmd_line, stdout) = text[start + 10..i]
                .split_once('\n')
                .unwrap_or((&text[start + 10..i], ""));
            let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
            let cmd = cmd_line
                .split('\x1f')
                .filter(|w| !w.is_empty())
                .map(py_quote)
                .collect::<Vec<_>>()
                .join(" ");
            let stdout = if stdout.is_empty() {
                String::new()
            } else {
                format!("{}\n", stdout)
            };
            return Ok(ModuleResult::failed(stderr.trim_end().to_string())
                .with("cmd", cmd)
                .with("rc", rc)
                .with("stdout_lines", super::py_splitlines(&stdout))
                .with("stdout", stdout)
                .with("stderr_lines", super::py_splitlines(&stderr))
                .with("stderr", stderr));
        }
        if text.contains("==kk-nopolicy==") {
            return Ok(ModuleResult::failed("Can't detect current policy"));
        }
        let changed = text.lines().any(|l| l == "CHANGED");
        let opt = |v: &Option<String>| v.clone().map_or(Value::Null, Value::String);
        Ok(ModuleResult::changed(changed)
            .with("ip_version", p.ip_version.clone())
            .with("table", p.table.clone())
            .with("chain", opt(&p.chain))
            .with("flush", p.flush)
            .with("rule", rule.join(" "))
            .with("state", if p.present { "present" } else { "absent" })
            .with("chain_management", p.chain_management)
            .with("wait", opt(&p.wait)))
    }

    fn validate(&self, args: &VarMap) -> Result<()> {
        check(args.clone()).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rule(v: Value) -> String {
        let a: IptablesArgs =
            parse_args("iptables", v.as_object().unwrap().clone(), VALID).unwrap();
        construct_rule(&check_args(a).unwrap()).join(" ")
    }

    #[test]
    fn rules_as_ansible_builds_them() {
        assert_eq!(
            rule(json!({"chain": "INPUT", "protocol": "tcp", "destination_port": "22",
                "ctstate": ["NEW"], "syn": "match", "jump": "ACCEPT",
                "comment": "Accept new SSH connections."})),
            "-p tcp -j ACCEPT --destination-port 22 --syn -m conntrack --ctstate NEW -m comment --comment Accept new SSH connections."
        );
        assert_eq!(
            rule(json!({"chain": "INPUT", "source": "!10.0.0.0/8", "match": ["tcp", "state"],
                "ctstate": "ESTABLISHED,RELATED", "in_interface": "eth0",
                "destination_ports": ["80", "443:445"], "jump": "DROP"})),
            "! -s 10.0.0.0/8 -m tcp -m state -j DROP -m multiport --dports 80,443:445 -i eth0 --state ESTABLISHED,RELATED"
        );
        assert_eq!(
            rule(json!({"chain": "INPUT", "reject_with": "tcp-reset", "protocol": "tcp",
                "uid_owner": "0", "limit": "2/second", "icmp_type": "8", "ip_version": "ipv6"})),
            "-p tcp -m limit --limit 2/second -m owner --uid-owner 0 -j REJECT --reject-with tcp-reset --icmpv6-type 8"
        );
        assert_eq!(
            rule(json!({"chain": "PREROUTING", "table": "nat", "to_ports": "8080",
                "tcp_flags": {"flags": ["ALL"], "flags_set": ["ACK", "SYN"]},
                "src_range": "1.1.1.1-1.1.1.9", "match_set": "admins", "match_set_flags": "src"})),
            "--tcp-flags ALL ACK,SYN --to-ports 8080 -m iprange --src-range 1.1.1.1-1.1.1.9 -m set --match-set admins src"
        );
        assert_eq!(rule(json!({"chain": "INPUT", "policy": "DROP"})), "");
    }

    #[test]
    fn arguments() {
        let failed = |v: Value| {
            let a: IptablesArgs =
                parse_args("iptables", v.as_object().unwrap().clone(), VALID).unwrap();
            check_args(a).err().unwrap()
        };
        assert_eq!(
            failed(json!({"protocol": "tcp"})),
            "flush is False but all of the following are missing: chain"
        );
        assert_eq!(
            failed(json!({"flush": true, "policy": "DROP"})),
            "parameters are mutually exclusive: flush|policy"
        );
        assert_eq!(
            failed(json!({"chain": "X", "table": "bad"})),
            "value of table must be one of: filter, nat, mangle, raw, security, got: bad"
        );
        assert!(parse_args::<IptablesArgs>(
            "iptables",
            json!({"chain": "X", "nope": 1})
                .as_object()
                .unwrap()
                .clone(),
            VALID
        )
        .is_err());
        let p = check_args(
            parse_args(
                "iptables",
                json!({"chain": "INPUT", "rule_num": "2", "action": "insert", "wait": "5"})
                    .as_object()
                    .unwrap()
                    .clone(),
                VALID,
            )
            .unwrap(),
        )
        .unwrap();
        assert_eq!(head(&p, "-I"), vec!["-t", "filter", "-I", "INPUT", "2"]);
        assert_eq!(head(&p, "-A"), vec!["-t", "filter", "-A", "INPUT"]);
        assert_eq!(py_quote("a b"), "'a b'");
        assert_eq!(py_quote("-A"), "-A");
    }
}
