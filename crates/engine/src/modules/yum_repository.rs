//! `yum_repository`: one section of a `.repo` file (`/etc/yum.repos.d/FILE.repo`), written
//! as ansible-core's module writes it through Python's `configparser`: the file is read
//! (keys lowercased, multi-line values joined), the repository's section is replaced by
//! the options given (sorted by name, booleans as `0`/`1`, lists joined), and the file is
//! written back only when its sorted dump differs (temp file and rename), or removed when
//! no section is left. It only writes files, so it works on any host.

use std::collections::BTreeMap;

use async_trait::async_trait;
use serde_json::{json, Value};

use super::args::FileAttrs;
use super::plan::{Plan, PlanApply};
use super::remote::{
    parse_stats, qpath, remote_error, set_attrs, stat_var_script, write_file, Attrs, WriteOptions,
};
use super::{FileDiff, ModuleContext, ModuleResult, VarMap};
use crate::error::{Error, ErrorKind, Result};

/// How an option's value becomes its text in the file.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Str,
    Bool,
    /// A list joined with this separator.
    List(&'static str),
    Choice(&'static [&'static str]),
}

/// The module's repository options (ansible-core 2.19's argument spec, less `name`,
/// `description`, `file`, `reposdir` and `state`), with their aliases.
const OPTIONS: &[(&str, Kind, &[&str])] = &[
    ("async", Kind::Bool, &[]),
    ("bandwidth", Kind::Str, &[]),
    ("baseurl", Kind::List("\n"), &[]),
    ("cost", Kind::Str, &[]),
    ("countme", Kind::Bool, &[]),
    ("deltarpm_metadata_percentage", Kind::Str, &[]),
    ("deltarpm_percentage", Kind::Str, &[]),
    ("enabled", Kind::Bool, &[]),
    ("enablegroups", Kind::Bool, &[]),
    ("exclude", Kind::List(" "), &["excludepkgs"]),
    (
        "failovermethod",
        Kind::Choice(&["roundrobin", "priority"]),
        &[],
    ),
    ("gpgcakey", Kind::Str, &[]),
    ("gpgcheck", Kind::Bool, &[]),
    ("gpgkey", Kind::List("\n"), &[]),
    ("module_hotfixes", Kind::Bool, &[]),
    (
        "http_caching",
        Kind::Choice(&["all", "packages", "none"]),
        &[],
    ),
    ("include", Kind::Str, &[]),
    ("includepkgs", Kind::List(" "), &[]),
    (
        "ip_resolve",
        Kind::Choice(&["4", "6", "IPv4", "IPv6", "whatever"]),
        &[],
    ),
    ("keepalive", Kind::Bool, &[]),
    ("keepcache", Kind::Choice(&["0", "1"]), &[]),
    ("metadata_expire", Kind::Str, &[]),
    (
        "metadata_expire_filter",
        Kind::Choice(&[
            "never",
            "read-only:past",
            "read-only:present",
            "read-only:future",
        ]),
        &[],
    ),
    ("metalink", Kind::Str, &[]),
    ("mirrorlist", Kind::Str, &[]),
    ("mirrorlist_expire", Kind::Str, &[]),
    ("password", Kind::Str, &[]),
    ("priority", Kind::Str, &[]),
    ("protect", Kind::Bool, &[]),
    ("proxy", Kind::Str, &[]),
    ("proxy_password", Kind::Str, &[]),
    ("proxy_username", Kind::Str, &[]),
    ("repo_gpgcheck", Kind::Bool, &[]),
    ("retries", Kind::Str, &[]),
    ("s3_enabled", Kind::Bool, &[]),
    ("skip_if_unavailable", Kind::Bool, &[]),
    ("sslcacert", Kind::Str, &["ca_cert"]),
    ("ssl_check_cert_permissions", Kind::Bool, &[]),
    ("sslclientcert", Kind::Str, &["client_cert"]),
    ("sslclientkey", Kind::Str, &["client_key"]),
    ("sslverify", Kind::Bool, &["validate_certs"]),
    ("throttle", Kind::Str, &[]),
    ("timeout", Kind::Str, &[]),
    ("ui_repoid_vars", Kind::Str, &[]),
    ("username", Kind::Str, &[]),
];

/// The module's own arguments besides [`OPTIONS`].
const OWN: &[&str] = &["name", "description", "file", "reposdir", "state"];

fn arg_err(msg: impl Into<String>) -> Error {
    Error::new(
        ErrorKind::ModuleArgs,
        format!("yum_repository: {}", msg.into()),
    )
}

/// Python's `str()` of a scalar argument (`type='str'`).
fn py_str(v: &Value) -> Option<String> {
    match v {
        Value::Null => None,
        other => Some(crate::template::pydump::py_str(other)),
    }
}

/// Ansible's boolean conversion, or its message.
fn py_bool(name: &str, v: &Value) -> std::result::Result<bool, String> {
    let s = match v {
        Value::Bool(b) => return Ok(*b),
        Value::Number(n) => n.to_string(),
        Value::String(s) => s.to_lowercase(),
        _ => String::new(),
    };
    match s.as_str() {
        "y" | "yes" | "on" | "1" | "true" | "t" | "1.0" => Ok(true),
        "n" | "no" | "off" | "0" | "false" | "f" | "0.0" => Ok(false),
        _ => Err(format!(
            "argument '{}' is of type {} and we were unable to convert to bool: The value {} is not a valid boolean.  Valid booleans include: '0', '1', 'f', 'false', 'n', 'no', 'off', 'on', 't', 'true', 'y', 'yes'",
            name,
            match v {
                Value::String(_) => "<class 'str'>",
                Value::Array(_) => "<class 'list'>",
                Value::Object(_) => "<class 'dict'>",
                _ => "<class 'float'>",
            },
            crate::template::pydump::py_repr(v)
        )),
    }
}

/// A list argument: a list, or a comma-separated string.
fn py_list(v: &Value) -> Vec<String> {
    match v {
        Value::Array(items) => items.iter().filter_map(py_str).collect(),
        Value::String(s) => s.split(',').map(|p| p.trim().to_string()).collect(),
        other => py_str(other).into_iter().collect(),
    }
}

/// The checked arguments.
#[derive(Debug)]
struct Checked {
    /// The repository id: the section's name.
    name: String,
    present: bool,
    /// The file's path.
    dest: String,
    reposdir: String,
    /// Options as written, by name (`name` is the description).
    options: BTreeMap<String, String>,
    attrs: Attrs,
}

/// Names and types of the arguments; `Ok(Err(msg))` for what Ansible reports as a failed
/// task (a missing or ill-typed value), so `ignore_errors` applies as there.
fn check(mut raw: VarMap) -> Result<std::result::Result<Checked, String>> {
    let file_attrs = FileAttrs::take("yum_repository", &mut raw)?;
    let attrs = Attrs::from(&file_attrs);
    attrs.check("yum_repository")?;
    let mut options = BTreeMap::new();
    let mut own: BTreeMap<&str, Value> = BTreeMap::new();
    for (k, v) in raw {
        if let Some(o) = OWN.iter().find(|o| **o == k) {
            own.insert(o, v);
            continue;
        }
        let Some((name, kind, _)) = OPTIONS
            .iter()
            .find(|(n, _, aliases)| *n == k || aliases.contains(&k.as_str()))
        else {
            let mut valid: Vec<&str> = OWN.to_vec();
            for (n, _, a) in OPTIONS {
                valid.push(n);
                valid.extend(a.iter());
            }
            valid.extend(FileAttrs::NAMES);
            valid.sort();
            return Err(arg_err(format!("unknown argument `{}`", k))
                .with_code("kk::module::unknown_argument")
                .help(format!(
                    "valid arguments of `yum_repository` are: {}",
                    valid.join(", ")
                )));
        };
        if v.is_null() {
            continue;
        }
        let text = match kind {
            Kind::Str => py_str(&v).unwrap_or_default(),
            Kind::Bool => match py_bool(name, &v) {
                Ok(b) => if b { "1" } else { "0" }.to_string(),
                Err(msg) => return Ok(Err(msg)),
            },
            Kind::List(sep) => py_list(&v).join(sep),
            Kind::Choice(values) => {
                let s = py_str(&v).unwrap_or_default();
                if !values.contains(&s.as_str()) {
                    return Ok(Err(format!(
                        "value of {} must be one of: {}, got: {}",
                        name,
                        values.join(", "),
                        s
                    )));
                }
                s
            }
        };
        options.insert(name.to_string(), text);
    }
    let text = |k: &str| own.get(k).and_then(py_str);
    let Some(name) = text("name") else {
        return Ok(Err("missing required arguments: name".into()));
    };
    let present = match text("state").as_deref() {
        None | Some("present") => true,
        Some("absent") => false,
        Some(s) => {
            return Ok(Err(format!(
                "value of state must be one of: present, absent, got: {}",
                s
            )))
        }
    };
    if present {
        let mut missing = Vec::new();
        if !["baseurl", "mirrorlist", "metalink"]
            .iter()
            .any(|k| options.contains_key(*k))
        {
            missing.push(
                "state is present but any of the following are missing: baseurl, mirrorlist, metalink",
            );
        }
        if text("description").is_none() {
            missing.push("state is present but all of the following are missing: description");
        }
        if let Some(first) = missing.first() {
            return Ok(Err(first.to_string()));
        }
    }
    if let Some(d) = text("description") {
        options.insert("name".into(), d);
    }
    if name.contains(['\n', '[', ']']) || name.trim() != name || name.is_empty() {
        return Err(arg_err(format!(
            "{:?} cannot be a section name of a repo file",
            name
        )));
    }
    let reposdir = text("reposdir").unwrap_or_else(|| "/etc/yum.repos.d".into());
    let file = text("file").unwrap_or_else(|| name.clone());
    let dest = format!("{}/{}.repo", reposdir.trim_end_matches('/'), file);
    Ok(Ok(Checked {
        name,
        present,
        dest,
        reposdir,
        options,
        attrs,
    }))
}

/// A `.repo` file as Python's `RawConfigParser` holds it: sections in file order, each
/// with its options in order (`DEFAULT` apart, merged into every section when read).
#[derive(Debug, Default, Clone, PartialEq)]
struct Ini {
    defaults: Vec<(String, String)>,
    sections: Vec<(String, Vec<(String, String)>)>,
}

/// Sets `key` in an ordered option list (in place when present, as a dict does).
fn set(opts: &mut Vec<(String, String)>, key: &str, value: String) {
    match opts.iter_mut().find(|(k, _)| k == key) {
        Some(e) => e.1 = value,
        None => opts.push((key.to_string(), value)),
    }
}

/// Options with their values as lines, while a file is read.
type Lines = Vec<(String, Vec<String>)>;

impl Ini {
    /// `configparser`'s reading (strict, `#`/`;` comments, `=`/`:` delimiters, indented
    /// continuation lines); its exceptions become the message.
    fn parse(text: &str) -> std::result::Result<Ini, String> {
        let mut ini = Ini::default();
        // Values as line lists, joined at the end.
        let mut defaults: Lines = Vec::new();
        let mut sections: Vec<(String, Lines)> = Vec::new();
        // Where options go: None before any header, Some(None) the defaults.
        let mut cur: Option<Option<usize>> = None;
        let mut opt: Option<usize> = None;
        let mut indent = 0usize;
        let mut seen_sections: Vec<String> = Vec::new();
        let mut seen_opts: Vec<(String, String)> = Vec::new();
        let mut sect_name = String::new();
        for (i, line) in text.split_inclusive('\n').enumerate() {
            let lineno = i + 1;
            let stripped = line.trim();
            let comment = stripped.starts_with('#') || stripped.starts_with(';');
            let value = if comment { "" } else { stripped };
            if value.is_empty() {
                if !comment {
                    if let (Some(c), Some(o)) = (cur, opt) {
                        let list = match c {
                            None => &mut defaults[o].1,
                            Some(s) => &mut sections[s].1[o].1,
                        };
                        list.push(String::new());
                    }
                }
                continue;
            }
            let cur_indent = line.len() - line.trim_start().len();
            if let (Some(c), Some(o), true) = (cur, opt, cur_indent > indent) {
                let list = match c {
                    None => &mut defaults[o].1,
                    Some(s) => &mut sections[s].1[o].1,
                };
                list.push(value.to_string());
                continue;
            }
            indent = cur_indent;
            if let Some(rest) = value.strip_prefix('[') {
                if let Some(end) = rest.rfind(']').filter(|e| *e > 0) {
                    let name = rest[..end].to_string();
                    if seen_sections.contains(&name) {
                        return Err(format!(
                            "While reading from '<file>' [line {:2}]: section '{}' already exists",
                            lineno, name
                        ));
                    }
                    seen_sections.push(name.clone());
                    if name == "DEFAULT" {
                        cur = Some(None);
                    } else {
                        sections.push((name.clone(), Vec::new()));
                        cur = Some(Some(sections.len() - 1));
                    }
                    sect_name = name;
                    opt = None;
                    continue;
                }
            }
            let Some(c) = cur else {
                return Err(format!(
                    "File contains no section headers.\nfile: '<file>', line: {}\n{:?}",
                    lineno, line
                ));
            };
            let Some(d) = value.find(['=', ':']) else {
                return Err(format!(
                    "Source contains parsing errors: '<file>'\n\t[line {:2}]: {:?}",
                    lineno, line
                ));
            };
            let key = value[..d].trim_end().to_lowercase();
            if key.is_empty() {
                return Err(format!(
                    "Source contains parsing errors: '<file>'\n\t[line {:2}]: {:?}",
                    lineno, line
                ));
            }
            let v = value[d + 1..].trim().to_string();
            if seen_opts.contains(&(sect_name.clone(), key.clone())) {
                return Err(format!(
                    "While reading from '<file>' [line {:2}]: option '{}' in section '{}' already exists",
                    lineno, key, sect_name
                ));
            }
            seen_opts.push((sect_name.clone(), key.clone()));
            let list = match c {
                None => &mut defaults,
                Some(s) => &mut sections[s].1,
            };
            match list.iter().position(|(k, _)| *k == key) {
                Some(p) => {
                    list[p].1 = vec![v];
                    opt = Some(p);
                }
                None => {
                    list.push((key, vec![v]));
                    opt = Some(list.len() - 1);
                }
            }
        }
        let join = |l: Vec<String>| l.join("\n").trim_end().to_string();
        ini.defaults = defaults.into_iter().map(|(k, v)| (k, join(v))).collect();
        ini.sections = sections
            .into_iter()
            .map(|(n, o)| (n, o.into_iter().map(|(k, v)| (k, join(v))).collect()))
            .collect();
        Ok(ini)
    }

    /// The module's `dump`: sections sorted, each with its options (defaults merged)
    /// sorted, as `key = value` lines and a blank line.
    fn dump(&self) -> String {
        let mut names: Vec<&String> = self.sections.iter().map(|(n, _)| n).collect();
        names.sort();
        let mut out = String::new();
        for n in names {
            let opts = &self.sections.iter().find(|(s, _)| s == n).expect("known").1;
            let mut merged: BTreeMap<&str, &str> = BTreeMap::new();
            for (k, v) in self.defaults.iter().chain(opts) {
                merged.insert(k, v);
            }
            out.push_str(&format!("[{}]\n", n));
            for (k, v) in merged {
                out.push_str(&format!("{} = {}\n", k, v));
            }
            out.push('\n');
        }
        out
    }

    /// `configparser`'s `write`: defaults first, then sections in order, multi-line
    /// values continued with a tab.
    fn write(&self) -> String {
        let mut out = String::new();
        let mut section = |name: &str, opts: &[(String, String)]| {
            out.push_str(&format!("[{}]\n", name));
            for (k, v) in opts {
                out.push_str(&format!("{} = {}\n", k, v.replace('\n', "\n\t")));
            }
            out.push('\n');
        };
        if !self.defaults.is_empty() {
            section("DEFAULT", &self.defaults);
        }
        for (n, o) in &self.sections {
            section(n, o);
        }
        out
    }

    fn remove(&mut self, name: &str) {
        self.sections.retain(|(n, _)| n != name);
    }
}

/// What apply does.
pub struct YumWork {
    dest: String,
    /// The new content, or `None` to remove the file.
    content: Option<String>,
    /// Whether the content is to be written (else only the attributes are set).
    write: bool,
    attrs: Attrs,
}

/// `ansible.builtin.yum_repository`.
pub struct YumRepository;

#[async_trait]
impl PlanApply for YumRepository {
    type Work = YumWork;

    async fn plan(&self, ctx: &ModuleContext, raw: VarMap) -> Result<Plan<YumWork>> {
        let c = match check(raw).map_err(|e| e.at_opt(ctx.span.as_ref()))? {
            Ok(c) => c,
            Err(msg) => return Ok(Plan::Done(ModuleResult::failed(msg))),
        };
        let script = format!(
            "d={}\nf={}\n[ -d \"$d\" ] || {{ echo NODIR; exit 0; }}\n{}if [ -f \"$f\" ]; then echo ==kk-file==; cat -- \"$f\" || exit 1; fi\n",
            qpath(&c.reposdir),
            qpath(&c.dest),
            stat_var_script("f", true)
        );
        let out = ctx.exec(script, None).await?;
        if out.rc != 0 {
            return Err(remote_error(&format!("cannot read {}", c.dest), &out));
        }
        let text = out.stdout_text();
        if text.starts_with("NODIR") {
            return Ok(Plan::Done(ModuleResult::failed(format!(
                "Repo directory '{}' does not exist.",
                c.reposdir
            ))));
        }
        let (head, file) = match text.split_once("==kk-file==\n") {
            Some((h, f)) => (h.to_string(), Some(f.to_string())),
            None => (text.clone(), None),
        };
        let st = parse_stats(&[c.dest.as_str()], head.as_bytes())?.remove(0);
        let mut ini = match file.as_deref().map(Ini::parse).transpose() {
            Ok(i) => i.unwrap_or_default(),
            Err(e) => {
                return Ok(Plan::Done(ModuleResult::failed(format!(
                    "cannot parse {}: {}",
                    c.dest,
                    e.replace("<file>", &c.dest)
                ))))
            }
        };
        let before = ini.dump();
        ini.remove(&c.name);
        if c.present {
            ini.sections.push((c.name.clone(), Vec::new()));
            let opts = &mut ini.sections.last_mut().expect("pushed").1;
            for (k, v) in &c.options {
                set(opts, k, v.clone());
            }
        }
        let after = ini.dump();
        let content_changed = before != after;
        let exists_after = if content_changed {
            !ini.sections.is_empty()
        } else {
            st.exists
        };
        let attrs_changed = exists_after && c.attrs.differ(&st)?;
        let changed = content_changed || attrs_changed;
        let diff = json!({
            "before_header": c.dest,
            "before": before,
            "after_header": c.dest,
            "after": after,
        });
        let mut res = ModuleResult::changed(changed)
            .with("repo", c.name.clone())
            .with("state", if c.present { "present" } else { "absent" })
            .with("diff", diff);
        if !changed {
            return Ok(Plan::Done(res));
        }
        if content_changed {
            res.diffs.push(FileDiff {
                before_header: c.dest.clone(),
                after_header: c.dest.clone(),
                before,
                after,
            });
        }
        let content = (!ini.sections.is_empty()).then(|| ini.write());
        Ok(Plan::change(
            res,
            YumWork {
                dest: c.dest,
                content,
                write: content_changed,
                attrs: c.attrs,
            },
        ))
    }

    async fn apply(
        &self,
        ctx: &ModuleContext,
        w: YumWork,
        result: ModuleResult,
    ) -> Result<ModuleResult> {
        match (w.write, w.content) {
            (true, Some(content)) => {
                let opts = WriteOptions {
                    attrs: w.attrs,
                    ..WriteOptions::default()
                };
                write_file(ctx, &w.dest, content.into_bytes(), &opts).await?;
            }
            (true, None) => {
                let out = ctx
                    .exec(format!("rm -f -- {}\n", qpath(&w.dest)), None)
                    .await?;
                if out.rc != 0 {
                    return Ok(ModuleResult::failed(format!(
                        "Cannot remove empty repo file {}.",
                        w.dest
                    ))
                    .with("details", out.stderr_text().trim_end().to_string()));
                }
            }
            (false, _) => {
                set_attrs(ctx, &w.dest, &w.attrs, false).await?;
            }
        }
        Ok(result)
    }

    fn validate(&self, args: &VarMap) -> Result<()> {
        check(args.clone()).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(v: Value) -> std::result::Result<Checked, String> {
        check(v.as_object().unwrap().clone()).unwrap()
    }

    #[test]
    fn options_as_the_module_writes_them() {
        let k = c(
            json!({"name": "epel", "description": "EPEL", "baseurl": ["a", "b"],
            "gpgcheck": "yes", "enabled": false, "exclude": "x,y", "priority": 5,
            "validate_certs": true, "file": "other"}),
        )
        .unwrap();
        assert_eq!(k.dest, "/etc/yum.repos.d/other.repo");
        let got: Vec<(&str, &str)> = k
            .options
            .iter()
            .map(|(a, b)| (a.as_str(), b.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                ("baseurl", "a\nb"),
                ("enabled", "0"),
                ("exclude", "x y"),
                ("gpgcheck", "1"),
                ("name", "EPEL"),
                ("priority", "5"),
                ("sslverify", "1"),
            ]
        );
        assert_eq!(
            c(json!({"name": "x", "description": "d"})).unwrap_err(),
            "state is present but any of the following are missing: baseurl, mirrorlist, metalink"
        );
        assert_eq!(
            c(json!({"name": "x", "baseurl": "u"})).unwrap_err(),
            "state is present but all of the following are missing: description"
        );
        assert!(c(json!({"name": "x", "state": "absent"})).is_ok());
        assert!(
            c(json!({"name": "x", "state": "absent", "gpgcheck": "maybe"}))
                .unwrap_err()
                .contains("unable to convert to bool")
        );
        assert!(check(json!({"name": "x", "nope": 1}).as_object().unwrap().clone()).is_err());
    }

    #[test]
    fn configparser_reading_and_writing() {
        let text = "# c\n[b]\nName = B\nbaseurl = u1\n  u2\n\n[a]\nx: 1\n; c\ny=\n";
        let ini = Ini::parse(text).unwrap();
        assert_eq!(
            ini.sections[0].1,
            vec![
                ("name".to_string(), "B".to_string()),
                ("baseurl".into(), "u1\nu2".into())
            ]
        );
        assert_eq!(
            ini.write(),
            "[b]\nname = B\nbaseurl = u1\n\tu2\n\n[a]\nx = 1\ny = \n\n"
        );
        assert_eq!(
            ini.dump(),
            "[a]\nx = 1\ny = \n\n[b]\nbaseurl = u1\nu2\nname = B\n\n"
        );
        assert!(Ini::parse("x = 1\n").unwrap_err().contains("no section"));
        assert!(Ini::parse("[a]\n[a]\n").unwrap_err().contains("already"));
        assert!(Ini::parse("[a]\nx=1\nX=2\n")
            .unwrap_err()
            .contains("already"));
        assert!(Ini::parse("[a]\njunk\n").unwrap_err().contains("parsing"));
    }
}
