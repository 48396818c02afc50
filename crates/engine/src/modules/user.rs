//! `user`: makes a local account exist (or not) with the wanted uid, groups, shell, home,
//! password hash… with `useradd`/`usermod`/`userdel` as Ansible's `user.py` runs them on
//! Linux (same command lines, so the same output and the same result keys). One round
//! trip reads the account; the plan is the command Ansible would run (none: unchanged);
//! apply runs it and reads the account back (creating a missing home as Ansible does).

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::Value;

use super::accounts::{self, command_line, Accounts};
use super::args::{Flag, Int, List, Text};
use super::plan::{Plan, PlanApply};
use super::remote::parent_dir;
use super::{parse_args, ModuleContext, ModuleResult, VarMap};
use crate::connect::shell_quote;
use crate::error::{Error, ErrorKind, Result};

crate::closed_set! {
    /// Whether the account should exist.
    enum State for "state" { Present = "present", Absent = "absent" }
}

crate::closed_set! {
    /// When `password` is applied.
    enum UpdatePassword for "update_password" { Always = "always", OnCreate = "on_create" }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UserArgs {
    #[serde(default, alias = "user")]
    name: Option<Text>,
    #[serde(default)]
    state: Option<State>,
    #[serde(default)]
    uid: Option<Int>,
    #[serde(default)]
    non_unique: Flag,
    #[serde(default)]
    group: Option<Text>,
    #[serde(default)]
    groups: Option<List>,
    #[serde(default)]
    append: Flag,
    #[serde(default)]
    comment: Option<Text>,
    #[serde(default)]
    home: Option<Text>,
    #[serde(default)]
    shell: Option<Text>,
    #[serde(default)]
    password: Option<Text>,
    #[serde(default)]
    update_password: Option<UpdatePassword>,
    #[serde(default)]
    password_lock: Option<Flag>,
    #[serde(default)]
    expires: Option<f64>,
    #[serde(default)]
    force: Flag,
    #[serde(default)]
    remove: Flag,
    #[serde(default = "Flag::on", alias = "createhome")]
    create_home: Flag,
    #[serde(default)]
    skeleton: Option<Text>,
    #[serde(default)]
    system: Flag,
    #[serde(default)]
    move_home: Flag,
    #[serde(default)]
    umask: Option<Text>,
    #[serde(default)]
    uid_min: Option<Int>,
    #[serde(default)]
    uid_max: Option<Int>,
}

const VALID: &[&str] = &[
    "name",
    "state",
    "uid",
    "non_unique",
    "group",
    "groups",
    "append",
    "comment",
    "home",
    "shell",
    "password",
    "update_password",
    "password_lock",
    "expires",
    "force",
    "remove",
    "create_home",
    "skeleton",
    "system",
    "move_home",
    "umask",
    "uid_min",
    "uid_max",
];

/// Ansible options kk does not implement: refused by name rather than ignored.
const UNSUPPORTED: &[&str] = &[
    "generate_ssh_key",
    "ssh_key_bits",
    "ssh_key_type",
    "ssh_key_file",
    "ssh_key_comment",
    "ssh_key_passphrase",
    "password_expire_max",
    "password_expire_min",
    "password_expire_warn",
    "password_expire_account_disable",
    "login_class",
    "hidden",
    "seuser",
    "local",
    "profile",
    "authorization",
    "role",
];

fn arg_err(msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::ModuleArgs, format!("user: {}", msg.into()))
}

fn check(mut raw: VarMap) -> Result<(String, UserArgs)> {
    for k in UNSUPPORTED {
        if raw.get(*k).is_some_and(|v| !v.is_null()) {
            return Err(arg_err(format!("`{}` is not supported by kk", k)).help(
                "kk's user module manages the account with useradd/usermod/userdel; \
                 do this part with a command task",
            ));
        }
        raw.remove(*k);
    }
    let a: UserArgs = parse_args("user", raw, VALID)?;
    let name = a
        .name
        .as_ref()
        .map(|n| n.0.clone())
        .filter(|n| !n.is_empty())
        .ok_or_else(|| arg_err("`name` is required"))?;
    if name.contains([':', '\n', ',']) || name.starts_with('-') {
        return Err(arg_err(format!("{:?} is not a valid user name", name)));
    }
    Ok((name, a))
}

/// `YYYY-MM-DD` (UTC) of a day number since the epoch.
fn ymd(days: i64) -> (i64, u32, u32) {
    // Howard Hinnant's civil_from_days.
    let z = days + 719468;
    let era = z.div_euclid(146097);
    let doe = z.rem_euclid(146097);
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

fn date_arg(expires: f64) -> String {
    if expires < 0.0 {
        return String::new();
    }
    let (y, m, d) = ymd((expires / 86400.0).floor() as i64);
    format!("{:04}-{:02}-{:02}", y, m, d)
}

/// What apply does.
pub struct UserWork {
    /// The command Ansible would run (`useradd …`), if any.
    cmd: Option<Vec<String>>,
    home: Option<String>,
    create_home: bool,
    skeleton: Option<String>,
    /// The `groups` result key (the wanted groups, comma-joined, as Ansible reports them).
    groups: Option<String>,
    /// For `userdel`: the keys Ansible reports after it (name, state, force, remove).
    removed: Option<(String, bool, bool)>,
}

/// Ansible's `user`.
pub struct User;

fn info_keys(mut r: ModuleResult, acc: &Accounts, groups: &Option<String>) -> ModuleResult {
    if let Some(u) = &acc.user {
        r = r
            .with("uid", u.uid)
            .with("group", u.gid)
            .with("comment", u.comment.clone())
            .with("home", u.home.clone())
            .with("shell", u.shell.clone());
        if let Some(g) = groups {
            r = r.with("groups", g.clone());
        }
    }
    r
}

fn group_missing(g: &str) -> Plan<UserWork> {
    Plan::Done(ModuleResult::failed(format!("Group {} does not exist", g)))
}

/// The home checks the plan needs: whether the wanted (or current) home exists.
fn home_fact(home: Option<&str>) -> String {
    let h = home
        .map(shell_quote)
        .unwrap_or_else(|| "\"$(getent passwd \"$n\" | cut -d: -f6)\"".to_string());
    format!(
        "h={}\n[ -n \"$h\" ] && [ -e \"$h\" ] && echo ==kk-fact==HOME_EXISTS=1\nexit 0\n",
        h
    )
}

#[async_trait]
impl PlanApply for User {
    type Work = UserWork;

    async fn plan(&self, ctx: &ModuleContext, raw: VarMap) -> Result<Plan<UserWork>> {
        let (name, a) = check(raw).map_err(|e| e.at_opt(ctx.span.as_ref()))?;
        let home = a.home.as_ref().map(|h| h.0.clone());
        let acc = accounts::read(ctx, &name, &home_fact(home.as_deref())).await?;
        let state = a.state.unwrap_or(State::Present);
        let base = ModuleResult::ok()
            .with("name", name.clone())
            .with("state", state.as_str());
        let groups_str = a.groups.as_ref().map(|g| g.0.join(","));
        let password = a.password.as_ref().map(|p| p.0.clone());
        let with_pw = |r: ModuleResult| match &password {
            Some(_) => r.with("password", "NOT_LOGGING_PASSWORD"),
            None => r,
        };
        match (state, &acc.user) {
            (State::Absent, None) => Ok(Plan::Done(base)),
            (State::Absent, Some(_)) => {
                let mut cmd = vec!["userdel".to_string()];
                if a.force.0 {
                    cmd.push("-f".into());
                }
                if a.remove.0 {
                    cmd.push("-r".into());
                }
                cmd.push(name.clone());
                // In check mode Ansible says only `changed`.
                Ok(Plan::change(
                    ModuleResult::ok(),
                    UserWork {
                        cmd: Some(cmd),
                        home: None,
                        create_home: false,
                        skeleton: None,
                        groups: None,
                        removed: Some((name.clone(), a.force.0, a.remove.0)),
                    },
                ))
            }
            (State::Present, None) => {
                let mut cmd = vec!["useradd".to_string()];
                if let Some(Int(uid)) = a.uid {
                    cmd.extend(["-u".into(), uid.to_string()]);
                    if a.non_unique.0 {
                        cmd.push("-o".into());
                    }
                }
                if let Some(g) = &a.group {
                    if acc.group(&g.0).is_none() && !ctx.check_mode {
                        return Ok(group_missing(&g.0));
                    }
                    cmd.extend(["-g".into(), g.0.clone()]);
                } else if acc.group(&name).is_some() {
                    cmd.push("-N".into());
                }
                if let Some(gs) = &a.groups {
                    let wanted: Vec<&String> = gs.0.iter().filter(|g| !g.is_empty()).collect();
                    if !wanted.is_empty() {
                        let mut set: Vec<String> = Vec::new();
                        for g in wanted {
                            let g = g.trim().to_string();
                            if acc.group(&g).is_none() && !ctx.check_mode {
                                return Ok(group_missing(&g));
                            }
                            if !set.contains(&g) {
                                set.push(g);
                            }
                        }
                        cmd.extend(["-G".into(), set.join(",")]);
                    }
                }
                if let Some(c) = &a.comment {
                    cmd.extend(["-c".into(), c.0.clone()]);
                }
                if let Some(h) = &home {
                    cmd.extend(["-d".into(), h.clone()]);
                }
                if let Some(s) = &a.shell {
                    cmd.extend(["-s".into(), s.0.clone()]);
                }
                if let Some(e) = a.expires {
                    cmd.extend(["-e".into(), date_arg(e)]);
                }
                if let Some(p) = &password {
                    let p = if a.password_lock == Some(Flag(true)) {
                        format!("!{}", p)
                    } else {
                        p.clone()
                    };
                    cmd.extend(["-p".into(), p]);
                }
                if a.create_home.0 {
                    cmd.push("-m".into());
                    if let Some(k) = &a.skeleton {
                        cmd.extend(["-k".into(), k.0.clone()]);
                    }
                    if let Some(u) = &a.umask {
                        cmd.extend(["-K".into(), format!("UMASK={}", u.0)]);
                    }
                } else {
                    cmd.push("-M".into());
                }
                if a.system.0 {
                    cmd.push("-r".into());
                }
                if let Some(Int(m)) = a.uid_min {
                    cmd.extend(["-K".into(), format!("UID_MIN={}", m)]);
                }
                if let Some(Int(m)) = a.uid_max {
                    cmd.extend(["-K".into(), format!("UID_MAX={}", m)]);
                }
                cmd.push(name.clone());
                let reported = with_pw(
                    base.with("system", a.system.0)
                        .with("create_home", a.create_home.0),
                );
                Ok(Plan::change(
                    // Check mode: only `changed`, as Ansible.
                    if ctx.check_mode {
                        ModuleResult::ok()
                    } else {
                        reported
                    },
                    UserWork {
                        cmd: Some(cmd),
                        home: home.clone(),
                        create_home: a.create_home.0,
                        skeleton: a.skeleton.as_ref().map(|s| s.0.clone()),
                        groups: groups_str,
                        removed: None,
                    },
                ))
            }
            (State::Present, Some(u)) => {
                let mut cmd = vec!["usermod".to_string()];
                if let Some(Int(uid)) = a.uid {
                    if u.uid as i64 != uid {
                        cmd.extend(["-u".into(), uid.to_string()]);
                        if a.non_unique.0 {
                            cmd.push("-o".into());
                        }
                    }
                }
                if let Some(g) = &a.group {
                    let Some(gi) = acc.group(&g.0) else {
                        return Ok(group_missing(&g.0));
                    };
                    if gi.gid != u.gid {
                        cmd.extend(["-g".into(), gi.gid.to_string()]);
                    }
                }
                if let Some(gs) = &a.groups {
                    let current: Vec<&str> = acc
                        .groups
                        .iter()
                        .filter(|g| g.members.contains(&name))
                        .map(|g| g.name.as_str())
                        .collect();
                    let wanted_raw: Vec<String> =
                        gs.0.iter()
                            .map(|g| g.trim().to_string())
                            .filter(|g| !g.is_empty())
                            .collect();
                    let mut need = false;
                    let mut wanted: Vec<String> = Vec::new();
                    if wanted_raw.is_empty() {
                        need = !current.is_empty() && !a.append.0;
                    } else {
                        for g in &wanted_raw {
                            let Some(gi) = acc.group(g) else {
                                return Ok(group_missing(g));
                            };
                            if !wanted.contains(&gi.name) {
                                wanted.push(gi.name.clone());
                            }
                        }
                        let diff = current.iter().any(|c| !wanted.iter().any(|w| w == c))
                            || wanted.iter().any(|w| !current.contains(&w.as_str()));
                        if diff {
                            if a.append.0 {
                                if wanted.iter().any(|w| !current.contains(&w.as_str())) {
                                    cmd.push("-a".into());
                                    need = true;
                                }
                            } else {
                                need = true;
                            }
                        }
                    }
                    if need {
                        cmd.extend(["-G".into(), wanted.join(",")]);
                    }
                }
                if let Some(c) = &a.comment {
                    if u.comment != c.0 {
                        cmd.extend(["-c".into(), c.0.clone()]);
                    }
                }
                if let Some(h) = &home {
                    if &u.home != h {
                        cmd.extend(["-d".into(), h.clone()]);
                        if a.move_home.0 {
                            cmd.push("-m".into());
                        }
                    }
                }
                if let Some(s) = &a.shell {
                    if u.shell != s.0 {
                        cmd.extend(["-s".into(), s.0.clone()]);
                    }
                }
                if let Some(e) = a.expires {
                    let current = u.expires.unwrap_or(0);
                    if e < 0.0 {
                        if current >= 0 {
                            cmd.extend(["-e".into(), String::new()]);
                        }
                    } else if current < 0 || ymd(current) != ymd((e / 86400.0).floor() as i64) {
                        cmd.extend(["-e".into(), date_arg(e)]);
                    }
                }
                match a.password_lock {
                    Some(Flag(true)) if !u.password.starts_with('!') => cmd.push("-L".into()),
                    Some(Flag(false)) if u.password.starts_with('!') => cmd.push("-U".into()),
                    _ => {}
                }
                if let Some(p) = &password {
                    if a.update_password != Some(UpdatePassword::OnCreate)
                        && u.password.trim_start_matches('!') != p.trim_start_matches('!')
                    {
                        cmd.retain(|c| c != "-U" && c != "-L");
                        let p = if a.password_lock == Some(Flag(true)) {
                            format!("!{}", p)
                        } else {
                            p.clone()
                        };
                        cmd.extend(["-p".into(), p]);
                    }
                }
                let home_missing = acc.fact("HOME_EXISTS").is_none() && a.create_home.0;
                let reported = info_keys(
                    with_pw(
                        base.with("append", a.append.0)
                            .with("move_home", a.move_home.0),
                    ),
                    &acc,
                    &groups_str,
                );
                if cmd.len() == 1 && !home_missing {
                    return Ok(Plan::Done(reported));
                }
                cmd.push(name.clone());
                Ok(Plan::change(
                    reported,
                    UserWork {
                        cmd: (cmd.len() > 2).then_some(cmd),
                        home: home.clone(),
                        create_home: a.create_home.0,
                        skeleton: a.skeleton.as_ref().map(|s| s.0.clone()),
                        groups: groups_str,
                        removed: None,
                    },
                ))
            }
        }
    }

    async fn apply(
        &self,
        ctx: &ModuleContext,
        w: UserWork,
        planned: ModuleResult,
    ) -> Result<ModuleResult> {
        let mut r = planned;
        if let Some(cmd) = &w.cmd {
            // A home whose parent is missing is made first, as Ansible does.
            let mut script = String::from("LC_ALL=C; export LC_ALL\n");
            if cmd[0] == "useradd" && w.create_home {
                if let Some(h) = &w.home {
                    script.push_str(&format!(
                        "[ -d {} ] || mkdir -p -- {}\n",
                        shell_quote(&parent_dir(h)),
                        shell_quote(&parent_dir(h))
                    ));
                }
            }
            script.push_str(&format!("exec {}\n", command_line(cmd)));
            let out = ctx.exec(script, None).await?;
            if out.rc != 0 {
                let name = cmd.last().cloned().unwrap_or_default();
                return Ok(
                    ModuleResult::failed(String::from_utf8_lossy(&out.stderr).into_owned())
                        .with("name", name)
                        .with("rc", out.rc),
                );
            }
            let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
            let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
            if !stdout.is_empty() {
                r = r.with("stdout", stdout);
            }
            if !stderr.is_empty() {
                r = r.with("stderr", stderr);
            }
        }
        if let Some((name, force, remove)) = w.removed {
            return Ok(r
                .with("name", name)
                .with("state", "absent")
                .with("force", force)
                .with("remove", remove));
        }
        // Read the account back; make a missing home (skeleton copied, mode from
        // login.defs, owned by the user) as Ansible does after useradd/usermod.
        let name = match r.data.get("name") {
            Some(Value::String(n)) => n.clone(),
            _ => String::new(),
        };
        let extra = if w.create_home {
            let h = w
                .home
                .as_deref()
                .map(shell_quote)
                .unwrap_or_else(|| "\"$(getent passwd \"$n\" | cut -d: -f6)\"".to_string());
            let skel = shell_quote(w.skeleton.as_deref().unwrap_or("/etc/skel"));
            format!(
                r#"h={h}
if [ -n "$h" ] && [ ! -e "$h" ]; then
  if [ -e {skel} ] && [ {skel} != /dev/null ]; then cp -a -- {skel} "$h" || exit 1; else mkdir -p -- "$h" || exit 1; fi
  mode=755
  if [ -f /etc/login.defs ]; then
    hm=$(sed -n 's/^HOME_MODE[[:space:]]\{{1,\}}\([0-9]\{{1,\}}\)$/\1/p' /etc/login.defs | head -1)
    um=$(sed -n 's/^UMASK[[:space:]]\{{1,\}}\([0-9]\{{1,\}}\)$/\1/p' /etc/login.defs | tail -1)
    if [ -n "$hm" ]; then mode=$hm; elif [ -n "$um" ]; then mode=$(printf %o $((0777 & ~0$um))); fi
  fi
  chmod "$mode" "$h"
  chown -R "$(getent passwd "$n" | cut -d: -f3,4)" "$h"
  echo ==kk-fact==HOME_CREATED=1
fi
exit 0
"#
            )
        } else {
            "exit 0\n".to_string()
        };
        let acc = accounts::read(ctx, &name, &extra).await?;
        if acc.user.is_none() {
            return Ok(ModuleResult::failed(format!(
                "failed to look up user name: {}",
                name
            )));
        }
        // `changed` stays true: something was (or was to be) done.
        Ok(info_keys(r, &acc, &w.groups))
    }

    fn validate(&self, args: &VarMap) -> Result<()> {
        check(args.clone()).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn dates_and_arguments() {
        assert_eq!(date_arg(0.0), "1970-01-01");
        assert_eq!(date_arg(1_700_000_000.0), "2023-11-14");
        assert_eq!(date_arg(-1.0), "");
        assert_eq!(ymd(19723), (2024, 1, 1));
        let e = |v: Value| check(v.as_object().unwrap().clone()).err().unwrap().message;
        assert!(e(json!({"name": "a", "generate_ssh_key": true}))
            .contains("`generate_ssh_key` is not supported"));
        assert!(e(json!({"state": "present"})).contains("`name` is required"));
        assert!(e(json!({"name": "a:b"})).contains("not a valid user name"));
        assert!(e(json!({"name": "a", "shel": "/bin/sh"})).contains("shel"));
        assert!(check(
            json!({"name": "a", "groups": "sudo,adm", "uid": "1500"})
                .as_object()
                .unwrap()
                .clone()
        )
        .is_ok());
    }
}
