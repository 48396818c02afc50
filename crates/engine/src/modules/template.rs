//! `template`: renders a controller Jinja file with the host's variables and writes the
//! result like `copy` (checksum-idempotent, atomic, check mode and diff).

use async_trait::async_trait;
use serde::Deserialize;

use super::copy::{check_validate, preserve_local_mode, put_file, PutSpec};
use super::remote::Attrs;
use super::{args, parse_args, Module, ModuleContext, ModuleResult, VarMap};
use crate::error::{Error, ErrorKind, Result};
use crate::template::convert_error;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TemplateArgs {
    #[serde(default, deserialize_with = "args::opt_string_like")]
    src: Option<String>,
    #[serde(default, deserialize_with = "args::opt_string_like")]
    dest: Option<String>,
    #[serde(default, deserialize_with = "args::opt_mode")]
    mode: Option<String>,
    #[serde(default, deserialize_with = "args::opt_string_like")]
    owner: Option<String>,
    #[serde(default, deserialize_with = "args::opt_string_like")]
    group: Option<String>,
    #[serde(default, deserialize_with = "args::bool_like")]
    backup: bool,
    #[serde(default = "args::yes", deserialize_with = "args::bool_like")]
    force: bool,
    #[serde(default, deserialize_with = "args::opt_string_like")]
    validate: Option<String>,
    #[serde(default, deserialize_with = "args::opt_bool_like")]
    trim_blocks: Option<bool>,
    #[serde(default, deserialize_with = "args::opt_bool_like")]
    lstrip_blocks: Option<bool>,
    #[serde(default, deserialize_with = "args::opt_string_like")]
    newline_sequence: Option<String>,
    // Accepted for compatibility; they do not change what we do.
    #[serde(default, deserialize_with = "args::opt_string_like")]
    output_encoding: Option<String>,
    #[serde(default, deserialize_with = "args::opt_bool_like")]
    follow: Option<bool>,
    #[serde(default, deserialize_with = "args::opt_bool_like")]
    unsafe_writes: Option<bool>,
}

const VALID: &[&str] = &[
    "src",
    "dest",
    "mode",
    "owner",
    "group",
    "backup",
    "force",
    "validate",
    "trim_blocks",
    "lstrip_blocks",
    "newline_sequence",
    "output_encoding",
    "follow",
    "unsafe_writes",
];

/// Renders a template to the host.
pub struct Template;

#[async_trait]
impl Module for Template {
    async fn run(&self, ctx: &ModuleContext, raw: VarMap) -> Result<ModuleResult> {
        let a: TemplateArgs = parse_args("template", raw, VALID)?;
        let _ = (&a.output_encoding, a.unsafe_writes);
        let src = a.src.clone().ok_or_else(|| {
            Error::new(ErrorKind::ModuleArgs, "template: `src` is required")
                .at_opt(ctx.span.as_ref())
        })?;
        let dest = a.dest.clone().filter(|d| !d.is_empty()).ok_or_else(|| {
            Error::new(ErrorKind::ModuleArgs, "template: `dest` is required")
                .at_opt(ctx.span.as_ref())
        })?;
        if let Some(v) = &a.validate {
            check_validate(v)?;
        }
        let path = ctx.find_file("templates", &src)?;
        let source = std::fs::read_to_string(&path).map_err(|e| {
            Error::new(
                ErrorKind::Io,
                format!("template: cannot read {}: {}", path.display(), e),
            )
            .at_opt(ctx.span.as_ref())
        })?;
        // Ansible's template variables; the play's own variables win over them.
        let extras = minijinja::context! {
            template_path => path.display().to_string(),
            template_fullpath => path.display().to_string(),
            template_destpath => dest.clone(),
            template_host => controller_hostname(),
            ansible_managed => "Ansible managed",
        };
        let context = minijinja::value::merge_maps([extras, ctx.vars.clone()]);
        let trim = a.trim_blocks.unwrap_or(true);
        let lstrip = a.lstrip_blocks.unwrap_or(false);
        let rendered = if trim && !lstrip {
            ctx.templar.render_text(&source, &context)
        } else {
            // Non-default whitespace control: a copy of the environment with other syntax.
            let mut env = ctx.templar.env().clone();
            let syntax = minijinja::syntax::SyntaxConfig::builder()
                .trim_blocks(trim)
                .lstrip_blocks(lstrip)
                .keep_trailing_newline(false)
                .build()
                .map_err(|e| convert_error(e, &source))?;
            env.set_syntax(syntax);
            env.render_str(&source, &context)
                .map(|r| crate::template::preserve_trailing_newlines(&source, r))
                .map_err(|e| convert_error(e, &source))
        }
        .map_err(|e| {
            e.note(format!("while rendering template {}", path.display()))
                .at_opt(ctx.span.as_ref())
        })?;
        let rendered = match a.newline_sequence.as_deref() {
            None | Some("\n") | Some("\\n") => rendered,
            Some("\r\n") | Some("\\r\\n") => rendered.replace("\r\n", "\n").replace('\n', "\r\n"),
            Some("\r") | Some("\\r") => rendered.replace("\r\n", "\n").replace('\n', "\r"),
            Some(other) => {
                return Err(Error::new(
                    ErrorKind::ModuleArgs,
                    format!("template: unknown newline_sequence {:?}", other),
                )
                .help("use \"\\n\", \"\\r\" or \"\\r\\n\""))
            }
        };
        let mut attrs = Attrs {
            mode: a.mode,
            owner: a.owner,
            group: a.group,
        };
        preserve_local_mode(&mut attrs, &path);
        put_file(
            ctx,
            PutSpec {
                data: rendered.into_bytes(),
                dest,
                // As Ansible: into a directory the file keeps the template's name (`.j2` too).
                src_name: path.file_name().map(|n| n.to_string_lossy().into_owned()),
                src_label: Some(path.display().to_string()),
                attrs,
                backup: a.backup,
                force: a.force,
                validate: a.validate,
                directory_mode: None,
                follow: a.follow.unwrap_or(false),
            },
        )
        .await
    }
}

/// The controller's host name, for `template_host`.
fn controller_hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .or_else(|_| std::env::var("HOSTNAME"))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::super::remote::testutil::{args, ctx, mode_of};
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn renders_idempotently_with_check_and_diff() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("templates")).unwrap();
        std::fs::write(
            dir.path().join("templates/cfg.j2"),
            "# {{ ansible_managed }}\n{% for p in ports %}\nport={{ p }}\n{% endfor %}\nname={{ name }}\n",
        )
        .unwrap();
        let dest = dir.path().join("cfg");
        let d = dest.to_str().unwrap();
        let mut c = ctx(dir.path(), json!({"ports": [80, 443], "name": "web"}));
        c.diff = true;
        c.check_mode = true;
        let r = Template
            .run(&c, args(json!({"src": "cfg.j2", "dest": d, "mode": 416})))
            .await
            .unwrap();
        assert!(r.changed);
        assert!(!dest.exists());
        let want = "# Ansible managed\nport=80\nport=443\nname=web\n";
        assert_eq!(r.diffs[0].after, want);
        c.check_mode = false;
        let r = Template
            .run(&c, args(json!({"src": "cfg.j2", "dest": d, "mode": 416})))
            .await
            .unwrap();
        assert!(r.changed);
        assert_eq!(std::fs::read_to_string(&dest).unwrap(), want);
        assert_eq!(mode_of(&dest), 0o640);
        let r = Template
            .run(&c, args(json!({"src": "cfg.j2", "dest": d, "mode": 416})))
            .await
            .unwrap();
        assert!(!r.changed);
        // A variable change shows up in the diff.
        let c2 = ModuleContext {
            vars: crate::template::to_mj(&json!({"ports": [80], "name": "web"})),
            diff: true,
            ..ctx(dir.path(), json!({}))
        };
        let r = Template
            .run(&c2, args(json!({"src": "cfg.j2", "dest": d})))
            .await
            .unwrap();
        assert!(r.changed);
        assert_eq!(r.diffs[0].before, want);
        assert_eq!(r.diffs[0].after, "# Ansible managed\nport=80\nname=web\n");
    }

    #[tokio::test]
    async fn lstrip_and_errors() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("t.j2"),
            "a\n  {% if true %}\nb\n  {% endif %}\n",
        )
        .unwrap();
        let dest = dir.path().join("out");
        let c = ctx(dir.path(), json!({}));
        Template
            .run(
                &c,
                args(json!({"src": "t.j2", "dest": dest.to_str().unwrap(), "lstrip_blocks": true})),
            )
            .await
            .unwrap();
        assert_eq!(std::fs::read_to_string(&dest).unwrap(), "a\nb\n");
        std::fs::write(dir.path().join("bad.j2"), "{{ missing_var }}\n").unwrap();
        let e = Template
            .run(
                &c,
                args(json!({"src": "bad.j2", "dest": dest.to_str().unwrap()})),
            )
            .await
            .unwrap_err();
        assert!(e.notes.iter().any(|n| n.contains("bad.j2")), "{e:?}");
        let e = Template
            .run(&c, args(json!({"src": "nope.j2", "dest": "/tmp/x"})))
            .await
            .unwrap_err();
        assert!(e.message.contains("nope.j2"));
        let e = Template
            .run(
                &c,
                args(json!({"src": "t.j2", "dest": "/tmp/x", "mdoe": "0644"})),
            )
            .await
            .unwrap_err();
        assert!(e.message.contains("mdoe"));
    }
}
