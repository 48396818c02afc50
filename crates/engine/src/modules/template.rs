//! `template`: renders a controller Jinja file with the host's variables and writes the
//! result like `copy` (checksum-idempotent, atomic, check mode and diff).

use async_trait::async_trait;
use serde::Deserialize;

use super::args::{parse_with_file_attrs, Flag, Text};
use super::copy::{check_validate, preserve_local_mode, put, PutSpec};
use super::plan::{Plan, PlanApply};
use super::remote::Attrs;
use super::{ModuleContext, ModuleResult, VarMap};
use crate::error::{Error, ErrorKind, Result};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TemplateArgs {
    #[serde(default)]
    src: Option<Text>,
    #[serde(default)]
    dest: Option<Text>,
    #[serde(default)]
    backup: Flag,
    #[serde(default = "Flag::on")]
    force: Flag,
    #[serde(default)]
    validate: Option<Text>,
    #[serde(default = "Flag::on")]
    trim_blocks: Flag,
    #[serde(default)]
    lstrip_blocks: Flag,
    #[serde(default)]
    newline_sequence: Option<Newline>,
    #[serde(default)]
    follow: Flag,
    // Accepted for compatibility; it does not change what we do.
    #[serde(default)]
    output_encoding: Option<Text>,
}

const VALID: &[&str] = &[
    "src",
    "dest",
    "backup",
    "force",
    "validate",
    "trim_blocks",
    "lstrip_blocks",
    "newline_sequence",
    "output_encoding",
    "follow",
];

crate::closed_set! {
    /// `newline_sequence`: the line ending of the written file (given escaped or not).
    enum Newline for "newline_sequence" {
        Lf = "\\n" | "\n",
        CrLf = "\\r\\n" | "\r\n",
        Cr = "\\r" | "\r",
    }
}

/// Checked arguments.
struct Parsed {
    src: String,
    a: TemplateArgs,
    /// `dest` and the put options; `data`, `src_name`, `src_label` come with the rendering.
    spec: PutSpec,
}

/// Parses and checks the arguments without touching a host (also at load time).
fn parse(raw: VarMap) -> Result<Parsed> {
    let (a, fa): (TemplateArgs, _) = parse_with_file_attrs("template", raw, VALID)?;
    let src = a
        .src
        .clone()
        .map(|s| s.0)
        .ok_or_else(|| Error::new(ErrorKind::ModuleArgs, "template: `src` is required"))?;
    let dest = a
        .dest
        .clone()
        .map(|d| d.0)
        .filter(|d| !d.is_empty())
        .ok_or_else(|| Error::new(ErrorKind::ModuleArgs, "template: `dest` is required"))?;
    let validate = a.validate.clone().map(|v| v.0);
    if let Some(v) = &validate {
        check_validate(v)?;
    }
    Attrs::from(&fa).check("template")?;
    let spec = PutSpec {
        data: Default::default(),
        dest,
        src_name: None,
        src_label: None,
        attrs: Attrs::from(&fa),
        backup: a.backup.0,
        force: a.force.0,
        validate,
        directory_mode: None,
        follow: a.follow.0,
    };
    Ok(Parsed { src, a, spec })
}

/// Renders the template: the file to put.
fn render(ctx: &ModuleContext, p: &Parsed) -> Result<PutSpec> {
    let a = &p.a;
    let dest = &p.spec.dest;
    let path = ctx.find_file("templates", &p.src)?;
    // The engine's one file reader: at most 16 MiB, UTF-8 (a bad byte located in the
    // template file), a byte order mark dropped.
    let source = crate::error::read_file(&path).map_err(|mut e| {
        e.message = format!("template: {}", e.message);
        e.at_opt(ctx.span.as_ref())
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
    let rendered = ctx
        .templar
        .render_file(
            &path,
            &source,
            &context,
            (a.trim_blocks.0, a.lstrip_blocks.0),
        )
        .map_err(|e| {
            // Located in the template file itself; the task that rendered it is a note.
            let e = match &ctx.span {
                Some(task) => e.note(format!(
                    "rendering template {} for the task at {}",
                    path.display(),
                    task
                )),
                None => e.note(format!("while rendering template {}", path.display())),
            };
            e.at_opt(ctx.span.as_ref())
        })?;
    let rendered = match a.newline_sequence {
        None | Some(Newline::Lf) => rendered,
        Some(Newline::CrLf) => rendered.replace("\r\n", "\n").replace('\n', "\r\n"),
        Some(Newline::Cr) => rendered.replace("\r\n", "\n").replace('\n', "\r"),
    };
    let mut spec = PutSpec {
        data: rendered.into_bytes().into(),
        // As Ansible: into a directory the file keeps the template's name (`.j2` too).
        src_name: path.file_name().map(|n| n.to_string_lossy().into_owned()),
        src_label: Some(path.display().to_string()),
        ..p.spec.clone()
    };
    preserve_local_mode(&mut spec.attrs, &path);
    Ok(spec)
}

/// Renders a template to the host.
pub struct Template;

#[async_trait]
impl PlanApply for Template {
    type Work = put::PutWork;

    async fn plan(&self, ctx: &ModuleContext, raw: VarMap) -> Result<Plan<put::PutWork>> {
        let p = parse(raw).map_err(|e| e.at_opt(ctx.span.as_ref()))?;
        let _ = &p.a.output_encoding;
        let spec = render(ctx, &p)?;
        Ok(match put::plan(ctx, spec).await? {
            (result, Some(work)) => Plan::change(result, work),
            (result, None) => Plan::Done(result),
        })
    }

    async fn apply(
        &self,
        ctx: &ModuleContext,
        work: put::PutWork,
        result: ModuleResult,
    ) -> Result<ModuleResult> {
        put::apply(ctx, work, result).await
    }

    async fn at_once(&self, ctx: &ModuleContext, raw: &VarMap) -> Result<Option<ModuleResult>> {
        let p = parse(raw.clone()).map_err(|e| e.at_opt(ctx.span.as_ref()))?;
        // Decided before rendering, so a template taking the long way renders once.
        if !put::at_once_fits(ctx, &p.spec) {
            return Ok(None);
        }
        put::at_once(ctx, &render(ctx, &p)?).await
    }

    fn validate(&self, raw: &VarMap) -> Result<()> {
        parse(raw.clone()).map(|_| ())
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
    use super::super::plan::Planned;
    use super::super::remote::testutil::{args, ctx, mode_of};
    use super::super::Module;
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
        let r = Planned(Template)
            .run(&c, args(json!({"src": "cfg.j2", "dest": d, "mode": 416})))
            .await
            .unwrap();
        assert!(r.changed);
        assert!(!dest.exists());
        let want = "# Ansible managed\nport=80\nport=443\nname=web\n";
        assert_eq!(r.diffs[0].after, want);
        c.check_mode = false;
        let r = Planned(Template)
            .run(&c, args(json!({"src": "cfg.j2", "dest": d, "mode": 416})))
            .await
            .unwrap();
        assert!(r.changed);
        assert_eq!(std::fs::read_to_string(&dest).unwrap(), want);
        assert_eq!(mode_of(&dest), 0o640);
        let r = Planned(Template)
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
        let r = Planned(Template)
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
        Planned(Template)
            .run(
                &c,
                args(json!({"src": "t.j2", "dest": dest.to_str().unwrap(), "lstrip_blocks": true})),
            )
            .await
            .unwrap();
        assert_eq!(std::fs::read_to_string(&dest).unwrap(), "a\nb\n");
        std::fs::write(dir.path().join("bad.j2"), "{{ missing_var }}\n").unwrap();
        let e = Planned(Template)
            .run(
                &c,
                args(json!({"src": "bad.j2", "dest": dest.to_str().unwrap()})),
            )
            .await
            .unwrap_err();
        assert!(e.notes.iter().any(|n| n.contains("bad.j2")), "{e:?}");
        let e = Planned(Template)
            .run(&c, args(json!({"src": "nope.j2", "dest": "/tmp/x"})))
            .await
            .unwrap_err();
        assert!(e.message.contains("nope.j2"));
        let e = Planned(Template)
            .run(
                &c,
                args(json!({"src": "t.j2", "dest": "/tmp/x", "mdoe": "0644"})),
            )
            .await
            .unwrap_err();
        assert!(e.message.contains("mdoe"));
    }

    #[test]
    fn validate_checks_literal_arguments() {
        let check = |v: serde_json::Value| PlanApply::validate(&Template, &args(v));
        assert!(check(json!({"src": "t.j2", "dest": "/d", "newline_sequence": "\\r\\n"})).is_ok());
        let e =
            check(json!({"src": "t.j2", "dest": "/d", "newline_sequence": "crlf"})).unwrap_err();
        assert!(
            e.message
                .starts_with("template: `newline_sequence` must be one of"),
            "{e:?}"
        );
        let e = check(json!({"src": "t.j2", "dest": "/d", "mode": "0888"})).unwrap_err();
        assert!(
            e.message.starts_with("template:") && e.message.contains("0888"),
            "{e:?}"
        );
        assert!(check(json!({"dest": "/d"}))
            .unwrap_err()
            .message
            .contains("`src` is required"));
        let e =
            check(json!({"src": "t.j2", "dest": "/d", "trim_blocks": "sometimes"})).unwrap_err();
        assert!(e.message.contains("expected a boolean"), "{e:?}");
    }
}
