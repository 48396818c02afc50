//! `modprobe` (`community.general.modprobe`): loads or unloads a kernel module, and with
//! `persistent` keeps it loaded at boot (`/etc/modules-load.d/NAME.conf`, options in
//! `/etc/modprobe.d/NAME.conf`) or stops that (matching lines commented out). The
//! decisions are the collection's; one script reads `/proc/modules`, `modules.builtin`
//! and both directories (a kernel without modules has no `/proc/modules`: the task fails
//! with Python's message for it, as the collection's does); files are written through a temp file and rename. Unlike the
//! collection, check mode writes no file (it runs `modprobe -n`, as the collection does).

use async_trait::async_trait;
use serde::Deserialize;

use super::args::Text;
use super::plan::{Plan, PlanApply};
use super::remote::{write_file, WriteOptions};
use super::{parse_args, ModuleContext, ModuleResult, VarMap};
use crate::connect::shell_quote;
use crate::error::{Error, ErrorKind, Result};

crate::closed_set! {
    /// Whether the module should be loaded now (in the collection's order of choices).
    enum State for "state" { Absent = "absent", Present = "present" }
}

crate::closed_set! {
    /// Whether the module should be loaded at boot.
    enum Persistent for "persistent" { Disabled = "disabled", Present = "present", Absent = "absent" }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ModprobeArgs {
    #[serde(default)]
    name: Option<Text>,
    #[serde(default)]
    state: Option<Text>,
    #[serde(default)]
    params: Option<Text>,
    #[serde(default)]
    persistent: Option<Text>,
}

const MODULES_LOAD: &str = "/etc/modules-load.d";
const MODPROBE_D: &str = "/etc/modprobe.d";

struct Checked {
    name: String,
    state: State,
    params: String,
    persistent: Persistent,
}

/// Types and names of the arguments; `Ok(Err(msg))` for what the collection reports as a
/// failed task (no name), so `ignore_errors` applies as there.
fn check(raw: VarMap) -> Result<std::result::Result<Checked, String>> {
    let a: ModprobeArgs = parse_args("modprobe", raw, &["name", "state", "params", "persistent"])?;
    let Some(name) = a.name.map(|n| n.0) else {
        return Ok(Err("missing required arguments: name".into()));
    };
    let state: Option<State> = match choice("state", State::VALUES, a.state) {
        Ok(s) => s,
        Err(msg) => return Ok(Err(msg)),
    };
    let persistent: Option<Persistent> =
        match choice("persistent", Persistent::VALUES, a.persistent) {
            Ok(p) => p,
            Err(msg) => return Ok(Err(msg)),
        };
    if name.is_empty() {
        return Err(Error::new(
            ErrorKind::ModuleArgs,
            "modprobe: `name` is empty",
        ));
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err(Error::new(
            ErrorKind::ModuleArgs,
            format!("modprobe: {:?} is not a kernel module name", name),
        ));
    }
    let params = a.params.map(|p| p.0).unwrap_or_default();
    if params.contains(['\n', '\'', '"', '\\']) {
        return Err(Error::new(
            ErrorKind::ModuleArgs,
            "modprobe: `params` with quotes, backslashes or newlines is not supported by kk",
        )
        .help("write the parameters as plain key=value words"));
    }
    Ok(Ok(Checked {
        name,
        state: state.unwrap_or(State::Present),
        params,
        persistent: persistent.unwrap_or(Persistent::Disabled),
    }))
}

/// A value among the argument's choices, or Ansible's argument-spec message (a failed
/// task there, not a load error).
fn choice<T: serde::de::DeserializeOwned>(
    arg: &str,
    values: &[&str],
    v: Option<Text>,
) -> std::result::Result<Option<T>, String> {
    let Some(t) = v else { return Ok(None) };
    serde_json::from_value(serde_json::Value::String(t.0.clone()))
        .map(Some)
        .map_err(|_| {
            format!(
                "value of {} must be one of: {}, got: {}",
                arg,
                values.join(", "),
                t.0
            )
        })
}

/// One config file read from the host.
#[derive(Debug, Clone)]
struct ConfFile {
    path: String,
    content: String,
}

/// What the host said.
#[derive(Debug, Default)]
struct Host {
    loaded: bool,
    modules_files: Vec<ConfFile>,
    modprobe_files: Vec<ConfFile>,
    error: Option<String>,
}

fn read_script(name: &str) -> String {
    let proc_name = name.replace('-', "_");
    format!(
        r#"n={n}
if [ ! -r /proc/modules ]; then echo "ERROR=[Errno 2] No such file or directory: '/proc/modules'"
elif grep -q "^{p} " /proc/modules; then echo LOADED
else
  b="/lib/modules/$(uname -r)/modules.builtin"
  if [ ! -r "$b" ]; then echo "ERROR=[Errno 2] No such file or directory: '$b'"
  elif grep -q "/$n\.ko\$" "$b"; then echo LOADED; fi
fi
for d in {ml} {md}; do
  [ -d "$d" ] || continue
  for f in "$d"/* "$d"/.[!.]*; do
    [ -f "$f" ] || continue
    printf '==kk-file==%s\n' "$f"
    cat -- "$f"
    printf '\n==kk-end==\n'
  done
done
"#,
        n = shell_quote(name),
        p = proc_name,
        ml = MODULES_LOAD,
        md = MODPROBE_D,
    )
}

fn parse_host(text: &str) -> Host {
    let mut h = Host::default();
    let mut rest = text;
    if let Some(first_file) = rest.find("==kk-file==") {
        for l in rest[..first_file].lines() {
            if l == "LOADED" {
                h.loaded = true;
            } else if let Some(e) = l.strip_prefix("ERROR=") {
                h.error = Some(e.to_string());
            }
        }
        rest = &rest[first_file..];
    } else {
        for l in rest.lines() {
            if l == "LOADED" {
                h.loaded = true;
            } else if let Some(e) = l.strip_prefix("ERROR=") {
                h.error = Some(e.to_string());
            }
        }
        return h;
    }
    while let Some(r) = rest.strip_prefix("==kk-file==") {
        let Some((path, body)) = r.split_once('\n') else {
            break;
        };
        let Some(end) = body.find("\n==kk-end==\n") else {
            break;
        };
        let f = ConfFile {
            path: path.to_string(),
            content: body[..end].to_string(),
        };
        if path.starts_with(MODULES_LOAD) {
            h.modules_files.push(f);
        } else {
            h.modprobe_files.push(f);
        }
        rest = &body[end + "\n==kk-end==\n".len()..];
    }
    h
}

/// The collection's line patterns, for module `name`.
struct Patterns {
    module: regex::Regex,
    params: regex::Regex,
}

impl Patterns {
    fn new(name: &str) -> Patterns {
        let n = regex::escape(name);
        Patterns {
            module: regex::Regex::new(&format!(r"^ *{} *(?:[#;].*)?\n?\z", n)).expect("valid"),
            params: regex::Regex::new(&format!(r"^options {} (\w+=\S+) *(?:[#;].*)?\n?\z", n))
                .expect("valid"),
        }
    }
}

/// Python's `readlines`.
fn readlines(s: &str) -> Vec<&str> {
    s.split_inclusive('\n').collect()
}

fn loaded_persistently(h: &Host, p: &Patterns) -> bool {
    h.modules_files
        .iter()
        .any(|f| readlines(&f.content).iter().any(|l| p.module.is_match(l)))
}

fn permanent_params(h: &Host, p: &Patterns) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for f in &h.modprobe_files {
        for l in readlines(&f.content) {
            if let Some(c) = p.params.captures(l) {
                let v = c[1].to_string();
                if !out.contains(&v) {
                    out.push(v);
                }
            }
        }
    }
    out.sort();
    out
}

/// Comments out matching lines; the collection writes the lines back joined with `\n`
/// (each already ends with one), which kk reproduces.
fn comment_out(content: &str, re: &regex::Regex) -> Option<String> {
    let mut lines: Vec<String> = readlines(content).iter().map(|l| l.to_string()).collect();
    let mut changed = false;
    for l in lines.iter_mut() {
        if re.is_match(l) {
            *l = format!("#{}", l);
            changed = true;
        }
    }
    changed.then(|| lines.join("\n"))
}

/// What apply does.
pub struct ModprobeWork {
    name: String,
    params: String,
    load: bool,
    unload: bool,
    writes: Vec<(String, String)>,
}

/// `community.general.modprobe`.
pub struct Modprobe;

fn result(c: &Checked, changed: bool) -> ModuleResult {
    ModuleResult::changed(changed)
        .with("name", c.name.clone())
        .with("params", c.params.clone())
        .with("state", c.state.as_str())
}

fn param_words(params: &str) -> String {
    params
        .split_whitespace()
        .map(shell_quote)
        .collect::<Vec<_>>()
        .join(" ")
}

#[async_trait]
impl PlanApply for Modprobe {
    type Work = ModprobeWork;

    async fn plan(&self, ctx: &ModuleContext, raw: VarMap) -> Result<Plan<ModprobeWork>> {
        let c = match check(raw).map_err(|e| e.at_opt(ctx.span.as_ref()))? {
            Ok(c) => c,
            Err(msg) => return Ok(Plan::Done(ModuleResult::failed(msg))),
        };
        let out = ctx.exec(read_script(&c.name), None).await?;
        let host = parse_host(&out.stdout_text());
        if let Some(e) = &host.error {
            return Ok(Plan::Done(result(&c, false).msg(e.clone()).failed_too()));
        }
        let p = Patterns::new(&c.name);
        let load = c.state == State::Present && !host.loaded;
        let unload = c.state == State::Absent && host.loaded;
        if load || unload {
            // The collection runs modprobe in dry-run mode in check mode; kk does it in
            // every plan, so a module that cannot load fails before anything is written.
            let cmd = if load {
                format!(
                    "modprobe -n {} {}",
                    shell_quote(&c.name),
                    param_words(&c.params)
                )
            } else {
                format!("modprobe -r {} -n", shell_quote(&c.name))
            };
            let o = ctx.exec(cmd, None).await?;
            if o.rc != 0 {
                let err = o.stderr_text();
                return Ok(Plan::Done(
                    result(&c, false)
                        .msg(err.clone())
                        .with("rc", o.rc)
                        .with("stdout", o.stdout_text())
                        .with("stderr", err)
                        .failed_too(),
                ));
            }
        }
        let mut writes: Vec<(String, String)> = Vec::new();
        let persistently = loaded_persistently(&host, &p);
        let current_params = permanent_params(&host, &p);
        let mut wanted: Vec<String> = c.params.split_whitespace().map(str::to_string).collect();
        wanted.sort();
        wanted.dedup();
        let params_set = wanted == current_params;
        match c.persistent {
            Persistent::Present if !(persistently && params_set) => {
                if !persistently {
                    writes.push((
                        format!("{}/{}.conf", MODULES_LOAD, c.name),
                        format!("{}\n", c.name),
                    ));
                }
                if !params_set {
                    let any_params = regex::Regex::new(&format!(
                        r"^options {} \w+=\S+ *(?:[#;].*)?\n?\z",
                        regex::escape(&c.name)
                    ))
                    .expect("valid");
                    for f in &host.modprobe_files {
                        if let Some(new) = comment_out(&f.content, &any_params) {
                            writes.push((f.path.clone(), new));
                        }
                    }
                    let body: Vec<String> = c
                        .params
                        .split_whitespace()
                        .map(|w| format!("options {} {}", c.name, w))
                        .collect();
                    let own = format!("{}/{}.conf", MODPROBE_D, c.name);
                    writes.retain(|(p, _)| *p != own);
                    writes.push((own, body.join("\n") + "\n"));
                }
            }
            Persistent::Absent if persistently || !current_params.is_empty() => {
                for f in &host.modules_files {
                    if let Some(new) = comment_out(&f.content, &p.module) {
                        writes.push((f.path.clone(), new));
                    }
                }
                let any_params = regex::Regex::new(&format!(
                    r"^options {} \w+=\S+ *(?:[#;].*)?\n?\z",
                    regex::escape(&c.name)
                ))
                .expect("valid");
                for f in &host.modprobe_files {
                    if let Some(new) = comment_out(&f.content, &any_params) {
                        writes.push((f.path.clone(), new));
                    }
                }
            }
            _ => {}
        }
        // Persistence is a change even when no line needs rewriting (as the collection).
        let persist_change = match c.persistent {
            Persistent::Present => !(persistently && params_set),
            Persistent::Absent => persistently || !current_params.is_empty(),
            Persistent::Disabled => false,
        };
        if !load && !unload && !persist_change {
            return Ok(Plan::Done(result(&c, false)));
        }
        Ok(Plan::change(
            result(&c, true),
            ModprobeWork {
                name: c.name.clone(),
                params: c.params.clone(),
                load,
                unload,
                writes,
            },
        ))
    }

    async fn apply(
        &self,
        ctx: &ModuleContext,
        w: ModprobeWork,
        mut r: ModuleResult,
    ) -> Result<ModuleResult> {
        if w.load || w.unload {
            let cmd = if w.load {
                format!(
                    "modprobe {} {}",
                    shell_quote(&w.name),
                    param_words(&w.params)
                )
            } else {
                format!("modprobe -r {}", shell_quote(&w.name))
            };
            let o = ctx.exec(cmd, None).await?;
            if o.rc != 0 {
                let err = o.stderr_text();
                return Ok(r
                    .msg(err.clone())
                    .with("rc", o.rc)
                    .with("stdout", o.stdout_text())
                    .with("stderr", err)
                    .failed_too());
            }
        }
        for (path, content) in w.writes {
            write_file(
                ctx,
                &path,
                content.into_bytes(),
                &WriteOptions {
                    make_parents: true,
                    ..Default::default()
                },
            )
            .await?;
        }
        r.changed = true;
        Ok(r)
    }

    fn validate(&self, args: &VarMap) -> Result<()> {
        check(args.clone()).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_files_and_lines_like_the_collection() {
        let text = "LOADED\n==kk-file==/etc/modules-load.d/a.conf\nbr_netfilter # x\nother\n\n==kk-end==\n==kk-file==/etc/modprobe.d/b.conf\noptions br_netfilter a=1\noptions br_netfilter b=2 ;c\n\n==kk-end==\n";
        let h = parse_host(text);
        assert!(h.loaded);
        assert_eq!(h.modules_files.len(), 1);
        let p = Patterns::new("br_netfilter");
        assert!(loaded_persistently(&h, &p));
        assert_eq!(permanent_params(&h, &p), vec!["a=1", "b=2"]);
        assert_eq!(
            comment_out("x\nbr_netfilter\n", &p.module).unwrap(),
            "x\n\n#br_netfilter\n"
        );
        assert!(comment_out("x\n", &p.module).is_none());
        assert!(!Patterns::new("br").module.is_match("br_netfilter\n"));
        let e = check(
            serde_json::json!({"name": "a b"})
                .as_object()
                .unwrap()
                .clone(),
        );
        assert!(e.is_err());
        let no_name = check(
            serde_json::json!({"state": "absent"})
                .as_object()
                .unwrap()
                .clone(),
        );
        assert_eq!(
            no_name.unwrap().err().as_deref(),
            Some("missing required arguments: name")
        );
        let bad = |v: serde_json::Value| check(v.as_object().unwrap().clone()).unwrap().err();
        assert_eq!(
            bad(serde_json::json!({"name": "a", "state": "loaded"})).as_deref(),
            Some("value of state must be one of: absent, present, got: loaded")
        );
        assert_eq!(
            bad(serde_json::json!({"name": "a", "persistent": "yes"})).as_deref(),
            Some("value of persistent must be one of: disabled, present, absent, got: yes")
        );
    }
}
