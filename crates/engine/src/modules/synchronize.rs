//! `synchronize` (`ansible.posix.synchronize`): rsync between the controller and a host,
//! as Ansible's action plugin and module build it (the same options, in the same order,
//! `changed` from rsync's itemized output, `cmd`, `msg`, `rc`, `stdout_lines`).
//!
//! Where rsync runs follows the action plugin: on the controller, reaching the host
//! through kk's own SSH master for it ([`crate::connect::Connection::tunnel`]: no second
//! login, no connection set up per task); on the host itself when the task is delegated
//! to the host (both paths there, as kubespray's argocd role does); locally for a
//! `connection: local` host. With `become`, the remote rsync runs as
//! `--rsync-path="sudo -u USER rsync"`, as Ansible does.

use std::path::Path;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::json;

use super::args::{Flag, Int, List, Text};
use super::{parse_args, Module, ModuleContext, ModuleResult, VarMap};
use crate::ansible::{shell_quote, shlex_quote, split_words};
use crate::connect::local::LocalConnection;
use crate::connect::{BecomeMethod, Connection, ExecRequest, Tunnel};
use crate::error::{Error, ErrorKind, Result};

crate::closed_set! {
    /// `mode`: which way the files go.
    enum Direction for "mode" { Push = "push", Pull = "pull" }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SyncArgs {
    src: Option<Text>,
    dest: Option<Text>,
    dest_port: Option<Int>,
    #[serde(default)]
    delete: Flag,
    private_key: Option<Text>,
    rsync_path: Option<Text>,
    #[serde(default = "Flag::on")]
    archive: Flag,
    #[serde(default)]
    checksum: Flag,
    #[serde(default = "Flag::on")]
    compress: Flag,
    #[serde(default)]
    existing_only: Flag,
    #[serde(default)]
    dirs: Flag,
    recursive: Option<Flag>,
    links: Option<Flag>,
    #[serde(default)]
    copy_links: Flag,
    perms: Option<Flag>,
    times: Option<Flag>,
    owner: Option<Flag>,
    group: Option<Flag>,
    #[serde(default = "Flag::on")]
    set_remote_user: Flag,
    rsync_timeout: Option<Int>,
    #[serde(default)]
    rsync_opts: List,
    // kk's master already carries the host's ssh arguments.
    #[serde(default)]
    #[allow(dead_code)]
    use_ssh_args: Flag,
    // kk always goes through its master.
    #[serde(default)]
    #[allow(dead_code)]
    ssh_connection_multiplexing: Flag,
    #[serde(default)]
    partial: Flag,
    #[serde(default)]
    verify_host: Flag,
    #[serde(default = "Flag::on")]
    delay_updates: Flag,
    mode: Option<Direction>,
    #[serde(default)]
    link_dest: List,
}

const VALID: &[&str] = &[
    "src",
    "dest",
    "dest_port",
    "delete",
    "private_key",
    "rsync_path",
    "archive",
    "checksum",
    "compress",
    "existing_only",
    "dirs",
    "recursive",
    "links",
    "copy_links",
    "perms",
    "times",
    "owner",
    "group",
    "set_remote_user",
    "rsync_timeout",
    "rsync_opts",
    "use_ssh_args",
    "ssh_connection_multiplexing",
    "partial",
    "verify_host",
    "delay_updates",
    "mode",
    "link_dest",
];

/// What rsync's `--out-format` puts before each itemized line: a line means a change.
const CHANGED_MARKER: &str = "<<CHANGED>>";

/// The start of Ansible's message for a program not found (`get_bin_path`).
const NOT_FOUND: &str = "Failed to find required executable";

/// Copies files with rsync between the controller (or the delegate) and the host.
pub struct Synchronize;

/// Where rsync runs and how it reaches the other end.
enum Route {
    /// Both paths are on the machine `conn` reaches; rsync runs there with the task's
    /// become (Ansible's `dest_is_local`).
    Local,
    /// rsync runs on the controller; the host is the other end, through its master.
    Controller(Tunnel),
}

#[async_trait]
impl Module for Synchronize {
    async fn run(&self, ctx: &ModuleContext, raw: VarMap) -> Result<ModuleResult> {
        let a: SyncArgs =
            parse_args("synchronize", raw, VALID).map_err(|e| e.at_opt(ctx.span.as_ref()))?;
        let (Some(src), Some(dest)) = (&a.src, &a.dest) else {
            return Ok(ModuleResult::failed(
                "synchronize requires both src and dest parameters are set",
            ));
        };
        let route = route(ctx).await?;
        let pull = a.mode == Some(Direction::Pull);
        let (src, dest) = match &route {
            Route::Local => (
                local_path(ctx, src.as_str()),
                local_path(ctx, dest.as_str()),
            ),
            Route::Controller(t) => {
                let user = t.user.as_deref().filter(|_| a.set_remote_user.0);
                if pull {
                    (
                        remote_target(&t.host, src.as_str(), user),
                        local_path(ctx, dest.as_str()),
                    )
                } else {
                    (
                        local_path(ctx, src.as_str()),
                        remote_target(&t.host, dest.as_str(), user),
                    )
                }
            }
        };
        let rsync = ctx
            .templar
            .render_text("{{ ansible_rsync_path | default('rsync') }}", &ctx.vars)
            .ok()
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "rsync".into());
        let tunnel = match &route {
            Route::Controller(t) => Some(t),
            Route::Local => None,
        };
        let cmd = command_line(ctx, &a, &rsync, tunnel, &src, &dest);
        // Ansible runs the line split as `shlex.split` splits it, without a shell (no
        // `$` expansion or globbing in `rsync_opts`): the same words, quoted for sh.
        let argv: Vec<String> = split_words(&cmd).iter().map(|w| shell_quote(w)).collect();
        // Ansible's `get_bin_path(required=True)` message when rsync is missing.
        let script = format!(
            "command -v {r} >/dev/null 2>&1 || {{ printf 'Failed to find required executable \"%s\" in paths: %s' {r} \"$PATH\" >&2; exit 127; }}\nexec {argv}",
            r = shell_quote(&rsync),
            argv = argv.join(" "),
        );
        let req = ExecRequest {
            script,
            env: ctx.env.clone(),
            timeout: ctx.timeout,
            ..Default::default()
        };
        let out = match &route {
            Route::Local => ctx.exec(req.script, None).await?,
            Route::Controller(_) => LocalConnection::new().exec(&req).await?,
        };
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        if out.rc == 127 && stderr.starts_with(NOT_FOUND) {
            // Ansible fails before running anything: a message only.
            return Ok(ModuleResult::failed(explain_failure(ctx, &route, stderr)));
        }
        if out.rc != 0 {
            let msg = explain_failure(ctx, &route, stderr);
            return Ok(ModuleResult::failed(msg)
                .with("rc", out.rc)
                .with("cmd", cmd));
        }
        let changed = stdout.contains(CHANGED_MARKER);
        let clean = stdout.replace(CHANGED_MARKER, "");
        let lines: Vec<&str> = clean.split('\n').filter(|l| !l.is_empty()).collect();
        let mut r = ModuleResult::changed(changed)
            .msg(clean.clone())
            .with("rc", out.rc)
            .with("cmd", cmd)
            .with("stdout_lines", json!(lines));
        if ctx.diff {
            r = r.with("diff", json!({ "prepared": clean }));
        }
        Ok(r)
    }

    fn validate(&self, raw: &VarMap) -> Result<()> {
        parse_args::<SyncArgs>("synchronize", raw.clone(), VALID).map(|_| ())
    }
}

/// Chooses where rsync runs, as Ansible's action plugin does (`dest_is_local`,
/// `use_delegate`).
async fn route(ctx: &ModuleContext) -> Result<Route> {
    let host_conn = match &ctx.delegation {
        None => ctx.conn.clone(),
        Some(d) => {
            // Delegated to the host itself (by name or address): both ends are there.
            let address = ctx
                .templar
                .render_text("{{ ansible_host | default('') }}", &ctx.vars)
                .unwrap_or_default();
            if d.to == ctx.host || (!address.is_empty() && d.to == address) {
                return Ok(Route::Local);
            }
            if ctx.conn.is_remote() {
                return Err(Error::new(
                    ErrorKind::ModuleArgs,
                    format!(
                        "synchronize: delegated to {}, another remote host: rsync would run there and reach {} with an ssh login of its own, which kk does not do (its connection to {} starts on the controller)",
                        d.to, ctx.host, ctx.host
                    ),
                )
                .help(format!(
                    "delegate to localhost (rsync runs on the controller) or to {} itself, or drop delegate_to",
                    ctx.host
                ))
                .at_opt(ctx.span.as_ref()));
            }
            match &d.host_conn {
                Ok(c) => c.clone(),
                Err(why) => {
                    return Err(Error::new(
                        ErrorKind::Connection,
                        format!("synchronize: cannot reach {}: {}", ctx.host, why),
                    )
                    .at_opt(ctx.span.as_ref()))
                }
            }
        }
    };
    if !host_conn.is_remote() {
        return Ok(Route::Local);
    }
    match host_conn.tunnel().await? {
        Some(t) => Ok(Route::Controller(t)),
        None => Ok(Route::Local),
    }
}

/// Ansible's `_get_absolute_path`: remote-looking (`host:path`) and absolute paths stay;
/// a relative one is looked up in the role's or playbook's `files/`, keeping a trailing `/`.
fn local_path(ctx: &ModuleContext, path: &str) -> String {
    if path.contains(':') || path.starts_with('/') {
        return path.to_string();
    }
    let found = ctx.find_file("files", path).unwrap_or_else(|_| {
        ctx.search_dirs
            .last()
            .map(|d| d.join(path))
            .unwrap_or_else(|| Path::new(path).to_path_buf())
    });
    let mut out = found.display().to_string();
    if path.ends_with('/') && !out.ends_with('/') {
        out.push('/');
    }
    out
}

/// Ansible's `_format_rsync_rsh_target`: `user@host:path` (`[user@host]:path` for IPv6),
/// keeping a host or user the path already names.
fn remote_target(host: &str, path: &str, user: Option<&str>) -> String {
    if path.starts_with("rsync://") {
        return path.to_string();
    }
    let prefix = user.map(|u| format!("{u}@")).unwrap_or_default();
    if host.contains(':') {
        format!("[{prefix}{host}]:{path}")
    } else if !path.contains(':') {
        format!("{prefix}{host}:{path}")
    } else if !path.contains('@') {
        format!("{prefix}{path}")
    } else {
        path.to_string()
    }
}

/// The rsync command line, option for option as Ansible's module builds it.
fn command_line(
    ctx: &ModuleContext,
    a: &SyncArgs,
    rsync: &str,
    tunnel: Option<&Tunnel>,
    src: &str,
    dest: &str,
) -> String {
    let mut cmd = vec![shlex_quote(rsync)];
    let mut push = |s: &str| cmd.push(s.to_string());
    if a.delay_updates.0 {
        push("--delay-updates");
        push("-F");
    }
    if a.compress.0 {
        push("--compress");
    }
    if let Some(t) = a.rsync_timeout.filter(|t| t.0 != 0) {
        push(&format!("--timeout={}", t.0));
    }
    if ctx.check_mode {
        push("--dry-run");
    }
    if a.delete.0 {
        push("--delete-after");
    }
    if a.existing_only.0 {
        push("--existing");
    }
    if a.checksum.0 {
        push("--checksum");
    }
    if a.copy_links.0 {
        push("--copy-links");
    }
    let tri = [
        (a.recursive, "recursive"),
        (a.links, "links"),
        (a.perms, "perms"),
        (a.times, "times"),
        (a.owner, "owner"),
        (a.group, "group"),
    ];
    if a.archive.0 {
        push("--archive");
        for (flag, name) in tri {
            if flag == Some(Flag(false)) {
                push(&format!("--no-{name}"));
            }
        }
    } else {
        for (flag, name) in tri {
            if flag == Some(Flag(true)) {
                push(&format!("--{name}"));
            }
        }
    }
    if a.dirs.0 {
        push("--dirs");
    }
    let has_rsh = a.rsync_opts.0.iter().any(|o| o.contains("--rsh"));
    if let (Some(t), false) = (tunnel, has_rsh) {
        push(&format!("--rsh={}", shlex_quote(&rsh(a, t))));
    }
    let mut rsync_path = a.rsync_path.as_ref().map(|p| p.0.clone());
    if let (Some(t), None, Some(b)) = (tunnel, &rsync_path, &ctx.become_) {
        // As Ansible: only sudo is escalated, and only on the remote end. Becoming the
        // login user is no become (kk's rule everywhere).
        if b.method == BecomeMethod::Sudo && t.user.as_deref() != Some(b.user.as_str()) {
            rsync_path = Some(format!("sudo -u {} rsync", b.user));
        }
    }
    if let Some(p) = &rsync_path {
        push(&format!("--rsync-path={}", shlex_quote(p)));
    }
    for o in &a.rsync_opts.0 {
        push(o);
    }
    if a.partial.0 {
        push("--partial");
    }
    if !a.link_dest.0.is_empty() {
        push("-H");
        push("-vv");
        for l in &a.link_dest.0 {
            push(&format!("--link-dest={l}"));
        }
    }
    push(&format!(
        "--out-format={}",
        shlex_quote(&format!("{CHANGED_MARKER}%i %n%L"))
    ));
    cmd.push(shlex_quote(src));
    cmd.push(shlex_quote(dest));
    cmd.join(" ")
}

/// rsync's `--rsh`: a client of kk's master for the host. A `private_key` or `dest_port`
/// other than the master's names another endpoint: then a login of its own, built as
/// Ansible builds it (`-S none`, `-i`, `Port=`, host keys unchecked unless `verify_host`).
fn rsh(a: &SyncArgs, t: &Tunnel) -> String {
    let key_differs = a
        .private_key
        .as_ref()
        .is_some_and(|k| t.private_key.as_deref() != Some(Path::new(k.as_str())));
    let port_differs = a.dest_port.is_some_and(|p| p.0 != i64::from(t.port));
    let words: Vec<String> = if key_differs || port_differs {
        let mut w: Vec<String> = vec!["ssh".into(), "-S".into(), "none".into()];
        if let Some(k) = &a.private_key {
            w.extend(["-i".into(), k.0.clone()]);
        } else if let Some(k) = &t.private_key {
            w.extend(["-i".into(), k.display().to_string()]);
        }
        let port = a.dest_port.map(|p| p.0).unwrap_or(i64::from(t.port));
        w.extend(["-o".into(), format!("Port={port}")]);
        if !a.verify_host.0 {
            w.extend([
                "-o".into(),
                "StrictHostKeyChecking=no".into(),
                "-o".into(),
                "UserKnownHostsFile=/dev/null".into(),
            ]);
        }
        w
    } else {
        t.ssh.clone()
    };
    words
        .iter()
        .map(|w| shlex_quote(w))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Ansible's failure message (rsync's standard error), with which side lacks rsync and
/// how to fix it when that is the cause.
fn explain_failure(ctx: &ModuleContext, route: &Route, stderr: String) -> String {
    let runs_on = match (route, &ctx.delegation) {
        (Route::Controller(_), _) => "the controller".to_string(),
        (Route::Local, _) if !ctx.conn.is_remote() => "the controller".to_string(),
        (Route::Local, Some(d)) => d.to.clone(),
        (Route::Local, None) => ctx.host.clone(),
    };
    if stderr.starts_with(NOT_FOUND) {
        return format!(
            "{stderr}\nsynchronize runs rsync on {runs_on}, which does not have it: install rsync there (e.g. `apt-get install rsync`)"
        );
    }
    let remote_missing = ["rsync: command not found", "rsync: not found"]
        .iter()
        .any(|m| stderr.contains(m));
    if let (Route::Controller(_), true) = (route, remote_missing) {
        return format!(
            "{stderr}rsync is not installed on {}, the other end of the transfer: install it there (e.g. `apt-get install rsync`)",
            ctx.host
        );
    }
    stderr
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remote_targets_as_ansible_formats_them() {
        assert_eq!(
            remote_target("10.0.0.1", "/a", Some("root")),
            "root@10.0.0.1:/a"
        );
        assert_eq!(remote_target("10.0.0.1", "/a", None), "10.0.0.1:/a");
        assert_eq!(remote_target("fe80::1", "/a", Some("u")), "[u@fe80::1]:/a");
        assert_eq!(remote_target("h", "other:/a", Some("u")), "u@other:/a");
        assert_eq!(remote_target("h", "v@other:/a", Some("u")), "v@other:/a");
        assert_eq!(remote_target("h", "rsync://x/a", Some("u")), "rsync://x/a");
    }

    fn args(v: serde_json::Value) -> SyncArgs {
        parse_args("synchronize", v.as_object().unwrap().clone(), VALID).unwrap()
    }

    #[test]
    fn options_in_ansibles_order() {
        let ctx = crate::modules::remote::testutil::ctx(Path::new("/"), json!({}));
        let a = args(
            json!({"src": "/s", "dest": "/d", "delete": true, "perms": false,
            "rsync_opts": ["--exclude=x"], "partial": "yes", "rsync_timeout": "5"}),
        );
        let c = command_line(&ctx, &a, "rsync", None, "/s", "/d");
        assert_eq!(
            c,
            "rsync --delay-updates -F --compress --timeout=5 --delete-after --archive --no-perms --exclude=x --partial --out-format='<<CHANGED>>%i %n%L' /s /d"
        );
        let a = args(
            json!({"src": "/s", "dest": "/d", "archive": false, "compress": false,
            "recursive": true, "times": true, "delay_updates": false}),
        );
        let c = command_line(&ctx, &a, "rsync", None, "/s", "/d");
        assert_eq!(
            c,
            "rsync --recursive --times --out-format='<<CHANGED>>%i %n%L' /s /d"
        );
    }

    #[test]
    fn the_remote_end_goes_through_the_master() {
        let t = Tunnel {
            ssh: vec!["ssh".into(), "-S".into(), "/run/kk/master".into()],
            host: "10.0.0.1".into(),
            user: Some("kk".into()),
            port: 22,
            private_key: Some("/k".into()),
            permit: None,
        };
        let mut ctx = crate::modules::remote::testutil::ctx(Path::new("/"), json!({}));
        ctx.become_ = Some(crate::connect::Become {
            user: "root".into(),
            ..Default::default()
        });
        let a = args(json!({"src": "/s", "dest": "/d", "compress": false, "delay_updates": false}));
        let c = command_line(&ctx, &a, "rsync", Some(&t), "/s", "kk@10.0.0.1:/d");
        assert_eq!(
            c,
            "rsync --archive --rsh='ssh -S /run/kk/master' --rsync-path='sudo -u root rsync' --out-format='<<CHANGED>>%i %n%L' /s kk@10.0.0.1:/d"
        );
        // Another port is another endpoint: a login of its own, as Ansible makes it.
        let a = args(json!({"src": "/s", "dest": "/d", "dest_port": 2222}));
        assert_eq!(
            rsh(&a, &t),
            "ssh -S none -i /k -o Port=2222 -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null"
        );
    }

    #[test]
    fn mode_is_push_or_pull() {
        let e = parse_args::<SyncArgs>(
            "synchronize",
            json!({"src": "a", "dest": "b", "mode": "both"})
                .as_object()
                .unwrap()
                .clone(),
            VALID,
        )
        .err()
        .unwrap();
        assert!(e.message.contains("push, pull"), "{}", e.message);
    }
}
