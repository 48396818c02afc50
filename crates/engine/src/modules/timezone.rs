//! `timezone` (`community.general.timezone`): the system time zone (`name`) and whether
//! the hardware clock keeps local time or UTC (`hwclock`). As the collection on Linux:
//! with a usable `timedatectl` (systemd hosts) it reads `timedatectl status` and runs
//! `timedatectl set-timezone` / `set-local-rtc`; without it, on Debian-like hosts
//! (`dpkg-reconfigure` present), it reads `/etc/timezone`, `/etc/localtime`,
//! `/etc/default/rcS` and `/etc/adjtime`, rewrites the first two files (temp file and
//! rename) and runs `dpkg-reconfigure tzdata` / `hwclock --systohc`. One script looks,
//! one script changes and looks again; the result (`diff` with `before`/`after`, `msg`)
//! and the failure when the change did not take are the collection's. Other systems
//! without `timedatectl` are refused with a clear error.

use async_trait::async_trait;
use serde::Deserialize;

use super::args::Text;
use super::plan::{Plan, PlanApply};
use super::remote::write::TRAP_SIGNALS;
use super::{parse_args, ModuleContext, ModuleResult, VarMap};
use crate::connect::shell_quote;
use crate::error::{Error, ErrorKind, Result};

crate::closed_set! {
    /// Where the hardware clock keeps time.
    enum Hwclock for "hwclock" { Local = "local", Utc = "UTC" }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TzArgs {
    #[serde(default)]
    name: Option<Text>,
    #[serde(default, alias = "rtc")]
    hwclock: Option<Hwclock>,
}

#[derive(Debug)]
struct Checked {
    name: Option<String>,
    hwclock: Option<Hwclock>,
}

fn check(raw: VarMap) -> Result<std::result::Result<Checked, String>> {
    let a: TzArgs = parse_args("timezone", raw, &["name", "hwclock"])?;
    if a.name.is_none() && a.hwclock.is_none() {
        return Ok(Err("one of the following is required: hwclock, name".into()));
    }
    let name = a.name.map(|n| n.0);
    if let Some(n) = &name {
        if n.is_empty()
            || n.contains(['\n', '\'', '"', '\\', ' '])
            || n.split('/').any(|p| p == "..")
        {
            return Err(Error::new(
                ErrorKind::ModuleArgs,
                format!("timezone: {:?} is not a time zone name", n),
            )
            .help("use a name from /usr/share/zoneinfo, such as Europe/Berlin or Etc/UTC"));
        }
    }
    Ok(Ok(Checked {
        name,
        hwclock: a.hwclock,
    }))
}

/// The collection's `abort` message.
fn abort(msg: &str, others: &[String]) -> String {
    let mut m = format!("Error message:\n{}", msg);
    if !others.is_empty() {
        m.push_str("\nOther message(s):\n");
        m.push_str(&others.join("\n"));
    }
    m
}

/// The look script: which way the host is driven, and what it says now.
fn look_script(tz: &str) -> String {
    format!(
        r#"export LANG=C LC_ALL=C
tz={tz}
if t=$(command -v timedatectl) && timedatectl >/dev/null 2>&1; then
  echo "way=systemd"; echo "bin=$t"
  [ -z "$tz" ] || [ -f "/usr/share/zoneinfo/$tz" ] || echo "badtz=1"
  echo "==status=="; timedatectl status || exit 1
  exit 0
fi
if command -v dpkg-reconfigure >/dev/null 2>&1; then echo "way=debian"; else echo "way=other"; fi
[ -z "$tz" ] || [ -f "/usr/share/zoneinfo/$tz" ] || echo "badtz=1"
h=$(command -v hwclock) && echo "hwclock=$h"
if [ -L /etc/localtime ]; then
  if [ -e /etc/localtime ]; then echo "link=$(readlink /etc/localtime)"; else echo "link=broken"; fi
elif [ -n "$tz" ] && cmp -s /etc/localtime "/usr/share/zoneinfo/$tz"; then echo "same=1"
fi
for f in /etc/timezone /etc/default/rcS /etc/adjtime; do
  if [ -f "$f" ]; then printf '==file %s==\n' "$f"; cat -- "$f"; printf '\n==end==\n'; fi
done
"#,
        tz = shell_quote(tz)
    )
}

/// What the look script said.
#[derive(Debug, Default)]
struct Look {
    way: String,
    bin: String,
    badtz: bool,
    hwclock_bin: Option<String>,
    status: String,
    link: Option<String>,
    same: bool,
    files: Vec<(String, String)>,
}

fn parse_look(text: &str) -> Look {
    let mut l = Look::default();
    let (head, status) = match text.split_once("==status==\n") {
        Some((h, s)) => (h, s.to_string()),
        None => (text, String::new()),
    };
    l.status = status;
    let mut rest = head;
    while let Some(i) = rest.find("==file ") {
        for line in rest[..i].lines() {
            head_line(&mut l, line);
        }
        let r = &rest[i + 7..];
        let Some((path, body)) = r.split_once("==\n") else {
            break;
        };
        let Some(end) = body.find("\n==end==\n") else {
            break;
        };
        l.files.push((path.to_string(), body[..end].to_string()));
        rest = &body[end + 9..];
    }
    for line in rest.lines() {
        head_line(&mut l, line);
    }
    l
}

fn head_line(l: &mut Look, line: &str) {
    match line.split_once('=') {
        Some(("way", v)) => l.way = v.into(),
        Some(("bin", v)) => l.bin = v.into(),
        Some(("badtz", _)) => l.badtz = true,
        Some(("hwclock", v)) => l.hwclock_bin = Some(v.into()),
        Some(("link", v)) => l.link = Some(v.into()),
        Some(("same", _)) => l.same = true,
        _ => {}
    }
}

impl Look {
    fn file(&self, path: &str) -> Option<&str> {
        self.files
            .iter()
            .find(|(p, _)| p == path)
            .map(|(_, c)| c.as_str())
    }
}

/// Ansible's `module.boolean` of a config value; `None` when it is none of its spellings.
fn boolean(v: &str) -> Option<bool> {
    match v.to_lowercase().as_str() {
        "y" | "yes" | "on" | "1" | "true" | "t" | "1.0" => Some(true),
        "n" | "no" | "off" | "0" | "false" | "f" | "0.0" => Some(false),
        _ => None,
    }
}

/// The first capture of `re` (multi-line) in `text`.
fn first(re: &str, text: &str) -> Option<String> {
    regex::Regex::new(&format!("(?m){}", re))
        .expect("valid")
        .captures(text)
        .map(|c| c[1].to_string())
}

/// The current `name` and `hwclock` as the collection reads them (`planned` decides
/// which further files a Debian host's value is checked against).
fn current(l: &Look, c: &Checked, phase_before: bool) -> std::result::Result<Values, String> {
    let mut v = Values::default();
    if l.way == "systemd" {
        if c.hwclock.is_some() {
            let raw = first(r"^\s*RTC in local TZ\s*:\s*([^\s]+)", &l.status)
                .ok_or("timedatectl status did not say whether the RTC is in local time")?;
            let b = boolean(&raw).ok_or_else(|| format!("'{}' is not a valid boolean", raw))?;
            v.hwclock = Some(if b { "local" } else { "UTC" }.into());
        }
        if c.name.is_some() {
            v.name = Some(
                first(r"^\s*Time ?zone\s*:\s*([^\s]+)", &l.status)
                    .ok_or("timedatectl status did not name the time zone")?,
            );
        }
        return Ok(v);
    }
    if let Some(planned) = c.hwclock {
        let mut value = match l.file("/etc/default/rcS") {
            None => "n/a".to_string(),
            Some(t) => match first(r"^UTC\s*=\s*([^\s]+)", t) {
                None => "n/a".into(),
                Some(raw) => match boolean(&raw) {
                    Some(true) => "UTC".into(),
                    Some(false) => "local".into(),
                    None => return Err(format!("'{}' is not a valid boolean", raw)),
                },
            },
        };
        if value == planned.as_str() {
            value = match l
                .file("/etc/adjtime")
                .and_then(|t| first(r"^(UTC|LOCAL)$", t))
            {
                Some(a) if a == "LOCAL" => "local".into(),
                _ => "UTC".into(),
            };
        }
        v.hwclock = Some(value);
    }
    if let Some(planned) = &c.name {
        let mut value = match l.file("/etc/timezone").map(|t| first(r"^([^\s]+)", t)) {
            Some(Some(n)) => n,
            Some(None) if !phase_before => {
                return Err(abort(
                    "tried to configure name using a file \"/etc/timezone\", but could not find a valid value in it",
                    &[],
                ))
            }
            _ => "n/a".into(),
        };
        if value == *planned {
            match l.link.as_deref() {
                Some("broken") => value = "n/a".into(),
                Some(target) => match first(r"(?:/(?:usr/share|etc)/zoneinfo/)(.*)", target) {
                    Some(linked) if linked != *planned => value = linked,
                    Some(_) => {}
                    None => value = "n/a".into(),
                },
                None if !l.same => value = "n/a".into(),
                None => {}
            }
        }
        v.name = Some(value);
    }
    Ok(v)
}

/// The values of the keys asked about.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct Values {
    hwclock: Option<String>,
    name: Option<String>,
}

impl Values {
    fn json(&self) -> serde_json::Value {
        let mut m = serde_json::Map::new();
        if let Some(h) = &self.hwclock {
            m.insert("hwclock".into(), h.clone().into());
        }
        if let Some(n) = &self.name {
            m.insert("name".into(), n.clone().into());
        }
        serde_json::Value::Object(m)
    }
}

/// The collection's `_edit_file`: every line matching `re` removed, `line` put where
/// the first was (or first); with its message.
fn edit_file(path: &str, content: Option<&str>, re: &str, line: &str) -> (String, String) {
    let re = regex::Regex::new(re).expect("valid");
    let mut lines: Vec<String> = content
        .unwrap_or_default()
        .split_inclusive('\n')
        .map(str::to_string)
        .collect();
    let matched: Vec<usize> = (0..lines.len())
        .filter(|i| re.is_match(&lines[*i]))
        .collect();
    let at = matched.first().copied().unwrap_or(0);
    for i in matched.iter().rev() {
        lines.remove(*i);
    }
    lines.insert(at, line.to_string());
    (
        lines.concat(),
        format!(
            "Added 1 line and deleted {} line(s) on {}",
            matched.len(),
            path
        ),
    )
}

/// Shell lines replacing `path` by `content` through a temp file and rename, keeping the
/// old file's mode.
fn put_file(path: &str, content: &str) -> String {
    format!(
        "f={p}; t=$(mktemp \"$f.kk_tmp-$$-XXXXXXXX\") || exit 70\ntrap 'rm -f \"$t\"' EXIT\nprintf %s {c} > \"$t\" || exit 71\nif [ -e \"$f\" ]; then chmod \"$(stat -L -c %a -- \"$f\")\" \"$t\"; else chmod 644 \"$t\"; fi\nmv -f -- \"$t\" \"$f\" || exit 77\ntrap - EXIT\n",
        p = shell_quote(path),
        c = shell_quote(content)
    )
}

/// What apply runs.
pub struct TzWork {
    c: Checked,
    before: Values,
    script: String,
    msgs: Vec<String>,
}

/// `community.general.timezone`.
pub struct Timezone;

#[async_trait]
impl PlanApply for Timezone {
    type Work = TzWork;

    async fn plan(&self, ctx: &ModuleContext, raw: VarMap) -> Result<Plan<TzWork>> {
        let c = match check(raw).map_err(|e| e.at_opt(ctx.span.as_ref()))? {
            Ok(c) => c,
            Err(msg) => return Ok(Plan::Done(ModuleResult::failed(msg))),
        };
        let tz = c.name.clone().unwrap_or_default();
        let out = ctx.exec(look_script(&tz), None).await?;
        if out.rc != 0 {
            return Ok(Plan::Done(
                ModuleResult::failed(out.stderr_text().trim_end().to_string())
                    .with("rc", out.rc)
                    .with("stdout", out.stdout_text())
                    .with("stderr", out.stderr_text()),
            ));
        }
        let l = parse_look(&String::from_utf8_lossy(&out.stdout));
        if l.way == "other" {
            return Err(Error::new(
                ErrorKind::Runtime,
                "timezone: this host has no usable timedatectl and is not Debian-like (no dpkg-reconfigure); kk drives the time zone only through one of those",
            )
            .help("run the play on a systemd host, or set the zone with a template of the system's own files")
            .at_opt(ctx.span.as_ref()));
        }
        if l.badtz {
            return Ok(Plan::Done(ModuleResult::failed(abort(
                &format!("given timezone \"{}\" is not available", tz),
                &[],
            ))));
        }
        if l.way == "debian" && l.hwclock_bin.is_none() {
            return Ok(Plan::Done(ModuleResult::failed(
                "Failed to find required executable \"hwclock\"",
            )));
        }
        let before = match current(&l, &c, true) {
            Ok(v) => v,
            Err(msg) => return Ok(Plan::Done(ModuleResult::failed(msg))),
        };
        let planned = Values {
            hwclock: c.hwclock.map(|h| h.as_str().to_string()),
            name: c.name.clone(),
        };
        let mut res = ModuleResult::changed(false);
        if before == planned {
            let diff = serde_json::json!({"before": before.json(), "after": before.json()});
            return Ok(Plan::Done(res.with("diff", diff)));
        }
        let mut script = String::from("export LANG=C LC_ALL=C\n");
        script.push_str(TRAP_SIGNALS);
        let mut msgs = Vec::new();
        let fail = "|| { rc=$?; echo \"==failed==$rc\"; exit 0; }";
        if l.way == "systemd" {
            if before.hwclock != planned.hwclock {
                let v = if c.hwclock == Some(Hwclock::Local) {
                    "yes"
                } else {
                    "no"
                };
                script.push_str(&format!("{} set-local-rtc {} {}\n", l.bin, v, fail));
                msgs.push(format!("executed `{} set-local-rtc {}`", l.bin, v));
            }
            if before.name != planned.name {
                script.push_str(&format!(
                    "{} set-timezone {} {}\n",
                    l.bin,
                    shell_quote(&tz),
                    fail
                ));
                msgs.push(format!("executed `{} set-timezone {}`", l.bin, tz));
            }
        } else {
            let hw = l.hwclock_bin.clone().unwrap_or_default();
            if let (true, Some(h)) = (before.hwclock != planned.hwclock, c.hwclock) {
                let (opt, utc) = match h {
                    Hwclock::Local => ("--localtime", "no"),
                    Hwclock::Utc => ("--utc", "yes"),
                };
                let (content, msg) = edit_file(
                    "/etc/default/rcS",
                    l.file("/etc/default/rcS"),
                    r"^UTC\s*=\s*([^\s]+)",
                    &format!("UTC={}\n", utc),
                );
                script.push_str(&put_file("/etc/default/rcS", &content));
                msgs.push(msg);
                script.push_str(&format!("{} --systohc {} {}\n", hw, opt, fail));
                msgs.push(format!("executed `{} --systohc {}`", hw, opt));
            }
            if before.name != planned.name {
                let (content, msg) = edit_file(
                    "/etc/timezone",
                    l.file("/etc/timezone"),
                    r"^([^\s]+)",
                    &format!("{}\n", tz),
                );
                script.push_str(&put_file("/etc/timezone", &content));
                msgs.push(msg);
                script.push_str(&format!(
                    "ln -sf {} /etc/localtime {}\ndpkg-reconfigure --frontend noninteractive tzdata {}\n",
                    shell_quote(&format!("/usr/share/zoneinfo/{}", tz)),
                    fail,
                    fail
                ));
            }
        }
        script.push_str("echo ==after==\n");
        script.push_str(&look_script(&tz));
        // Check mode reports the planned values as the after state, without a message.
        let diff = serde_json::json!({"before": before.json(), "after": planned.json()});
        res = res.with("diff", diff);
        Ok(Plan::change(
            res,
            TzWork {
                c,
                before,
                script,
                msgs,
            },
        ))
    }

    async fn apply(
        &self,
        ctx: &ModuleContext,
        w: TzWork,
        mut res: ModuleResult,
    ) -> Result<ModuleResult> {
        let out = ctx.exec(w.script, None).await?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        if let Some((_, rc)) = text.split_once("==failed==") {
            let rc: i64 = rc.trim().parse().unwrap_or(1);
            let stderr = out.stderr_text();
            return Ok(ModuleResult::failed(stderr.trim_end().to_string())
                .with("rc", rc)
                .with("stderr", stderr));
        }
        let Some((_, after_text)) = text.split_once("==after==\n").filter(|_| out.rc == 0) else {
            return Err(super::remote::remote_error(
                "cannot set the time zone",
                &out,
            ));
        };
        // Messages of the commands run, in the order the collection logs them.
        let mut msgs = w.msgs;
        let after = match current(&parse_look(after_text), &w.c, false) {
            Ok(v) => v,
            Err(msg) => return Ok(ModuleResult::failed(msg)),
        };
        let planned = Values {
            hwclock: w.c.hwclock.map(|h| h.as_str().to_string()),
            name: w.c.name.clone(),
        };
        if after != planned {
            let m = abort(
                &format!(
                    "still not desired state, though changes have made - planned: {}, after: {}",
                    py_dict(&planned),
                    py_dict(&after)
                ),
                &msgs,
            );
            return Ok(ModuleResult::failed(m));
        }
        let diff = serde_json::json!({"before": w.before.json(), "after": after.json()});
        res.data.insert("diff".into(), diff);
        res.changed = w.before != after;
        if !msgs.is_empty() {
            res.msg = Some(std::mem::take(&mut msgs).join("\n"));
        }
        Ok(res)
    }

    fn validate(&self, args: &VarMap) -> Result<()> {
        check(args.clone()).map(|_| ())
    }
}

/// Python's `str()` of the values dict, as in the collection's message.
fn py_dict(v: &Values) -> String {
    let mut parts = Vec::new();
    if let Some(h) = &v.hwclock {
        parts.push(format!("'hwclock': '{}'", h));
    }
    if let Some(n) = &v.name {
        parts.push(format!("'name': '{}'", n));
    }
    format!("{{{}}}", parts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn c(v: Value) -> Checked {
        check(v.as_object().unwrap().clone()).unwrap().unwrap()
    }

    #[test]
    fn reads_timedatectl() {
        let l = parse_look("way=systemd\nbin=/usr/bin/timedatectl\n==status==\n                Time zone: Etc/UTC (UTC, +0000)\n          RTC in local TZ: no\n");
        let v = current(
            &l,
            &c(json!({"name": "Europe/Berlin", "hwclock": "local"})),
            true,
        )
        .unwrap();
        assert_eq!(v.name.as_deref(), Some("Etc/UTC"));
        assert_eq!(v.hwclock.as_deref(), Some("UTC"));
        assert_eq!(v.json(), json!({"hwclock": "UTC", "name": "Etc/UTC"}));
    }

    #[test]
    fn reads_debian_files() {
        let l = parse_look("way=debian\nhwclock=/usr/sbin/hwclock\nlink=/usr/share/zoneinfo/Etc/UTC\n==file /etc/timezone==\nEurope/Berlin\n\n==end==\n");
        // /etc/timezone says Berlin, the link says UTC: the link wins.
        let v = current(
            &l,
            &c(json!({"name": "Europe/Berlin", "hwclock": "UTC"})),
            true,
        )
        .unwrap();
        assert_eq!(v.name.as_deref(), Some("Etc/UTC"));
        assert_eq!(v.hwclock.as_deref(), Some("n/a"));
        let v = current(&l, &c(json!({"name": "Asia/Tokyo"})), true).unwrap();
        assert_eq!(v.name.as_deref(), Some("Europe/Berlin"));
        assert_eq!(l.link.as_deref(), Some("/usr/share/zoneinfo/Etc/UTC"));
    }

    #[test]
    fn edits_and_arguments() {
        assert_eq!(
            edit_file("/etc/timezone", Some("a\n b\nc\n"), r"^([^\s]+)", "X\n"),
            (
                "X\n b\n".to_string(),
                "Added 1 line and deleted 2 line(s) on /etc/timezone".to_string()
            )
        );
        assert_eq!(
            check(json!({}).as_object().unwrap().clone())
                .unwrap()
                .unwrap_err(),
            "one of the following is required: hwclock, name"
        );
        assert!(check(json!({"name": "../etc"}).as_object().unwrap().clone()).is_err());
        assert!(check(json!({"hwclock": "utc"}).as_object().unwrap().clone()).is_err());
        assert_eq!(c(json!({"rtc": "local"})).hwclock, Some(Hwclock::Local));
        assert_eq!(
            abort("x", &["a".into()]),
            "Error message:\nx\nOther message(s):\na"
        );
    }
}
