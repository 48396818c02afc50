//! Roles: finding a role's directory, its defaults and vars files, its task files, and
//! a `roles:`/`import_role` entry with its dependencies, as Ansible resolves them.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use std::collections::HashSet;

use super::{canonical, cycle_error, parse_inherited, resolve_first, FileCtx, Loader};
use crate::error::{Error, Result, Span};
use crate::graph::{cycle_text, DepGraph};
use crate::project::{Inherited, Role, RoleScope, Task, TaskKind, TaskOwn};
use crate::vars::VarMap;
use crate::yaml::{self, Node, Yaml};

impl Loader {
    /// Finds a role directory by name.
    pub fn find_role(
        &self,
        name: &str,
        from_dir: &Path,
    ) -> std::result::Result<PathBuf, Vec<PathBuf>> {
        let mut cands = self.collection_role_candidates(name);
        for base in &self.roles_path {
            cands.push(base.join(name));
        }
        cands.push(from_dir.join("roles").join(name));
        cands.push(self.playbook_dir.join("roles").join(name));
        // KubeKey's layout keeps playbooks (and playbooks/hook/) next to roles/.
        for up in self.playbook_dir.ancestors().skip(1).take(2) {
            cands.push(up.join("roles").join(name));
        }
        // A dependency in a role's meta/main is also looked for beside the role that
        // declares it (ansible-core's role_basedir: `policy_controller/calico` from
        // roles/kubernetes-apps/policy_controller is roles/kubernetes-apps/policy_controller/calico).
        if from_dir.join("meta").is_dir() || from_dir.join("tasks").is_dir() {
            if let Some(basedir) = from_dir.parent() {
                cands.push(basedir.join(name));
            }
        }
        cands.push(from_dir.join(name));
        cands.dedup();
        for c in &cands {
            if c.is_dir() {
                return Ok(c.clone());
            }
        }
        Err(cands)
    }

    /// Loads a role's variable files (defaults or vars): `main.yaml|yml` and `main/*.yaml` sorted.
    fn role_vars(dir: &Path, which: &str, from: &str) -> Result<VarMap> {
        let base = dir.join(which);
        let mut out = VarMap::new();
        let mut files = Vec::new();
        for ext in ["yaml", "yml", "json"] {
            let f = base.join(format!("{}.{}", from, ext));
            if f.is_file() {
                files.push(f);
                break;
            }
        }
        let sub = base.join(from);
        if sub.is_dir() {
            let mut entries: Vec<PathBuf> = std::fs::read_dir(&sub)?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| {
                    matches!(
                        p.extension().and_then(|e| e.to_str()),
                        Some("yaml" | "yml" | "json")
                    )
                })
                .collect();
            entries.sort();
            files.extend(entries);
        }
        for f in files {
            let node = yaml::load_file(&f)?;
            crate::vars::merge_maps(&mut out, &node.to_map(&format!("role {}", which))?);
        }
        Ok(out)
    }

    /// Loads a role and returns its scope and handlers (task lists are loaded by the caller).
    pub fn load_role(
        &self,
        name: &str,
        params: VarMap,
        from_dir: &Path,
        span: &Span,
        defaults_from: &str,
        vars_from: &str,
    ) -> Result<RoleScope> {
        let path = self.find_role(name, from_dir).map_err(|cands| {
            Error::syntax(format!("role `{}` not found", name), span)
                .with_code("kk::role::not_found")
                .note(format!(
                    "searched: {}",
                    cands
                        .iter()
                        .map(|c| c.display().to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
        })?;
        let role = Role {
            name: name.to_string(),
            defaults: Arc::new(Self::role_vars(&path, "defaults", defaults_from)?),
            vars: Arc::new(Self::role_vars(&path, "vars", vars_from)?),
            path,
        };
        Ok(RoleScope {
            role: Arc::new(role),
            params: Arc::new(params),
            public: true,
        })
    }

    /// The task list of a role (`tasks/<from>.yaml`), empty when the role has none; its
    /// tasks nested `depth` levels deep.
    pub fn role_tasks(
        &self,
        scope: &RoleScope,
        from: &str,
        stack: &[PathBuf],
        depth: usize,
        span: &Span,
    ) -> Result<Vec<Task>> {
        let dir = scope.role.path.join("tasks");
        match resolve_first(&[
            dir.join(format!("{}.yaml", from)),
            dir.join(format!("{}.yml", from)),
            dir.join(from),
        ]) {
            Some(p) => self.load_task_file(&p, Some(scope.clone()), stack, depth, Some(span)),
            None if from == "main" => Ok(Vec::new()),
            None => Err(Error::syntax(
                format!("role `{}` has no task file `{}`", scope.role.name, from),
                span,
            )),
        }
    }

    /// Whether the role's meta/main.yml has `allow_duplicates: true`.
    fn allows_duplicates(role: &Path) -> Result<bool> {
        let Some(meta) = resolve_first(&[role.join("meta/main.yaml"), role.join("meta/main.yml")])
        else {
            return Ok(false);
        };
        let node = yaml::load_file(&meta)?;
        Ok(node
            .get("allow_duplicates")
            .is_some_and(|n| crate::ansible::to_bool(&n.to_value()) == Some(true)))
    }

    /// Walks the role dependency graph under `root` (each role's `meta/main`
    /// `dependencies`) and refuses the first dependency that closes a cycle, printing the
    /// cycle by role names (`a -> b -> a`) at that dependency.
    fn check_dependency_graph(&self, root: &Path) -> Result<()> {
        let mut graph = DepGraph::new();
        let mut todo = vec![root.to_path_buf()];
        let mut walked = HashSet::new();
        while let Some(role) = todo.pop() {
            if !walked.insert(role.clone()) {
                continue;
            }
            let Some(meta) =
                resolve_first(&[role.join("meta/main.yaml"), role.join("meta/main.yml")])
            else {
                continue;
            };
            let node = yaml::load_file(&meta)?;
            let Some(Yaml::Seq(deps)) = node.get("dependencies").map(|d| &d.value) else {
                continue; // a malformed list is reported when the role loads
            };
            for d in deps {
                let name = match &d.value {
                    Yaml::Str(s) => Some(s.as_str()),
                    Yaml::Map(_) => d
                        .get("role")
                        .or_else(|| d.get("name"))
                        .and_then(Node::as_str),
                    _ => None,
                };
                // A dependency that cannot be found is reported when it loads.
                let Some(dep) = name.and_then(|n| self.find_role(n, &role).ok()) else {
                    continue;
                };
                let dep = canonical(&dep);
                if let Err(cycle) = graph.add_edge(&role, &dep) {
                    let names = cycle.iter().map(|p| {
                        p.file_name()
                            .map(|n| n.to_string_lossy().into_owned())
                            .unwrap_or_else(|| p.display().to_string())
                    });
                    return Err(Error::syntax(
                        format!("role dependency cycle: {}", cycle_text(names)),
                        &d.span,
                    )
                    .help("role dependencies may not form a cycle"));
                }
                todo.push(dep);
            }
        }
        Ok(())
    }

    /// The roles of `meta/main`'s `dependencies` of the role `role_ctx` is in, each as a
    /// role block appended to `out` (their handlers to `handlers`).
    fn role_dependencies(
        &self,
        role_ctx: &FileCtx,
        out: &mut Vec<Task>,
        handlers: &mut Vec<Task>,
        seen: &mut HashSet<String>,
    ) -> Result<()> {
        let Some(scope) = &role_ctx.role else {
            return Ok(());
        };
        let Some(meta) = resolve_first(&[
            scope.role.path.join("meta/main.yaml"),
            scope.role.path.join("meta/main.yml"),
        ]) else {
            return Ok(());
        };
        let node = yaml::load_file(&meta)?;
        if let Some(deps) = node.get("dependencies") {
            match &deps.value {
                Yaml::Seq(items) => {
                    for d in items {
                        crate::depth::grow(|| {
                            self.load_role_ref(d, role_ctx, out, handlers, seen)
                        })?;
                    }
                }
                Yaml::Null => {}
                _ => return Err(deps.expected("a list of role dependencies")),
            }
        }
        Ok(())
    }

    /// The role's `handlers/<from>` (`main` unless `handlers_from`): each joins
    /// `handlers`, wrapped so it runs with the role's variables and answers to
    /// `role : name` too.
    fn role_handlers(
        &self,
        role_ctx: &FileCtx,
        span: &Span,
        handlers: &mut Vec<Task>,
        from: &str,
    ) -> Result<()> {
        let Some(scope) = &role_ctx.role else {
            return Ok(());
        };
        let hdir = scope.role.path.join("handlers");
        if let Some(h) = resolve_first(&[
            hdir.join(format!("{}.yaml", from)),
            hdir.join(format!("{}.yml", from)),
        ]) {
            for t in super::flatten_handlers(self.load_task_file(
                &h,
                Some(scope.clone()),
                &role_ctx.stack,
                role_ctx.depth,
                Some(span),
            )?) {
                handlers.push(Task {
                    name: t.name.clone(),
                    own: TaskOwn {
                        listen: t.own.listen.clone(),
                        ..Default::default()
                    },
                    span: t.span.clone(),
                    dir: t.dir.clone(),
                    attrs: Inherited::default(),
                    kind: TaskKind::Block {
                        block: vec![t],
                        rescue: Vec::new(),
                        always: Vec::new(),
                        role: Some(scope.clone()),
                    },
                });
            }
        }
        Ok(())
    }

    /// What `include_role` runs, loaded when it runs: the role's `meta/main` dependencies
    /// (role blocks) before its `tasks_from` tasks, and its handlers and its
    /// dependencies', which join the play's (ansible-core loads both for an included role).
    /// With `validate`, the role's argument spec is checked first (a task reported at
    /// `play_span`, see [`Loader::validation_task`]). Also returns the dependencies
    /// themselves, nearest first: ansible-core gives the role's tasks their defaults and
    /// vars beneath the role's own.
    pub fn included_role(
        &self,
        scope: &RoleScope,
        tasks_from: &str,
        depth: usize,
        span: &Span,
        validate: Option<&Span>,
        handlers_from: &str,
    ) -> Result<IncludedRole> {
        let role_ctx = FileCtx {
            dir: scope.role.path.clone(),
            role: Some(scope.clone()),
            stack: vec![canonical(&scope.role.path)],
            depth,
            vars: Arc::new(VarMap::new()),
            play_span: validate.cloned(),
        };
        self.check_dependency_graph(&canonical(&scope.role.path))?;
        let (mut tasks, mut handlers) = (Vec::new(), Vec::new());
        self.role_dependencies(&role_ctx, &mut tasks, &mut handlers, &mut HashSet::new())?;
        let mut dependencies = Vec::new();
        dependency_roles(&tasks, &mut dependencies);
        if let Some(at) = validate {
            // An included role has no parameters of its own for the spec (its include's
            // vars are checked as variables).
            let checked = RoleScope {
                params: Arc::new(VarMap::new()),
                ..scope.clone()
            };
            tasks.extend(self.validation_task(&checked, tasks_from, at)?);
        }
        tasks.extend(self.role_tasks(scope, tasks_from, &[], depth, span)?);
        self.role_handlers(&role_ctx, span, &mut handlers, handlers_from)?;
        Ok(IncludedRole {
            tasks,
            handlers,
            dependencies,
        })
    }

    pub(super) fn load_role_ref(
        &self,
        item: &Node,
        ctx: &FileCtx,
        out: &mut Vec<Task>,
        handlers: &mut Vec<Task>,
        seen: &mut HashSet<String>,
    ) -> Result<()> {
        // The parameters as written, without `vars:` (what the argument spec checks).
        let mut provided = VarMap::new();
        let from = |k: &str| {
            item.get(k)
                .and_then(Node::as_str)
                .unwrap_or("main")
                .to_string()
        };
        let (name, params, attrs, tasks_from, handlers_from) = match &item.value {
            Yaml::Str(s) => (
                s.clone(),
                VarMap::new(),
                Inherited::default(),
                "main".to_string(),
                "main".to_string(),
            ),
            Yaml::Map(_) => {
                let name = item
                    .get("role")
                    .or_else(|| item.get("name"))
                    .and_then(Node::as_str)
                    .ok_or_else(|| item.expected("a role reference with `role:`"))?
                    .to_string();
                let attrs = parse_inherited(item)?;
                let mut params = VarMap::new();
                for (k, v) in item.entries() {
                    if matches!(
                        k.as_str(),
                        "role"
                            | "name"
                            | "when"
                            | "tags"
                            | "vars"
                            | "become"
                            | "become_user"
                            | "environment"
                            | "ignore_errors"
                            | "delegate_to"
                            | "run_once"
                            | "no_log"
                            | "check_mode"
                            | "any_errors_fatal"
                            | "tasks_from"
                            | "vars_from"
                            | "defaults_from"
                            | "handlers_from"
                            | "allow_duplicates"
                            | "public"
                            | "apply"
                            | "rolespec_validate"
                    ) {
                        continue;
                    }
                    params.insert(k.clone(), v.to_value());
                }
                provided = params.clone();
                // Role `vars:` behave as parameters.
                for (k, v) in attrs.vars.iter() {
                    params.insert(k.clone(), v.clone());
                }
                let mut attrs = attrs;
                attrs.vars = Arc::new(VarMap::new());
                (
                    name,
                    params,
                    attrs,
                    from("tasks_from"),
                    from("handlers_from"),
                )
            }
            _ => return Err(item.expected("a role name or a mapping with `role:`")),
        };
        let mut scope = self.load_role(
            &name,
            params,
            &ctx.dir,
            &item.span,
            &from("defaults_from"),
            &from("vars_from"),
        )?;
        scope.public = item
            .get("public")
            .is_none_or(|n| crate::ansible::to_bool(&n.to_value()) != Some(false));
        // ansible-core runs a role once per play for the same parameters, vars, `when`,
        // tags and files, unless its meta/main.yml says `allow_duplicates: true`.
        let identity = format!(
            "{}|{}|{:?}|{:?}|{}|{}|{}|{}",
            scope.role.path.display(),
            serde_json::Value::Object((*scope.params).clone()),
            attrs.when,
            attrs.tags,
            tasks_from,
            handlers_from,
            from("vars_from"),
            from("defaults_from"),
        );
        if !seen.insert(identity) && !Self::allows_duplicates(&scope.role.path)? {
            return Ok(());
        }
        let role_key = canonical(&scope.role.path);
        if ctx.role.is_none() {
            self.check_dependency_graph(&role_key)?;
        }
        if ctx.stack.contains(&role_key) {
            return Err(cycle_error(&ctx.stack, &scope.role.path, Some(&item.span))
                .help("role dependencies may not form a cycle"));
        }
        let mut stack = ctx.stack.clone();
        stack.push(role_key);
        let role_ctx = FileCtx {
            dir: scope.role.path.clone(),
            role: Some(scope.clone()),
            stack: stack.clone(),
            depth: crate::depth::deeper(ctx.depth, &item.span)?,
            vars: ctx.vars.clone(),
            play_span: ctx.play_span.clone(),
        };
        // meta/main dependencies run first.
        let mut block = Vec::new();
        self.role_dependencies(&role_ctx, &mut block, handlers, seen)?;
        let validate = item
            .get("rolespec_validate")
            .map(|n| crate::ansible::to_bool(&n.to_value()) != Some(false))
            .unwrap_or(true);
        if validate {
            let at = ctx.play_span.as_ref().unwrap_or(&item.span);
            let checked = RoleScope {
                params: Arc::new(provided),
                ..scope.clone()
            };
            block.extend(self.validation_task(&checked, &tasks_from, at)?);
        }
        block.extend(self.role_tasks(&scope, &tasks_from, &stack, role_ctx.depth, &item.span)?);
        self.role_handlers(&role_ctx, &item.span, handlers, &handlers_from)?;
        out.push(Task {
            name: None,
            kind: TaskKind::Block {
                block,
                rescue: Vec::new(),
                always: Vec::new(),
                role: Some(scope.clone()),
            },
            attrs,
            own: TaskOwn::default(),
            span: item.span.clone(),
            dir: scope.role.path.clone(),
        });
        Ok(())
    }
}

/// What [`Loader::included_role`] loaded.
pub struct IncludedRole {
    /// The dependencies' role blocks, then the role's tasks.
    pub tasks: Vec<Task>,
    /// The role's handlers and its dependencies'.
    pub handlers: Vec<Task>,
    /// Every dependency, transitively, each once: a dependency's own before it.
    pub dependencies: Vec<Arc<Role>>,
}

/// The roles of the role blocks in `tasks` and, depth first, of the blocks inside them
/// (a dependency's dependencies), each once.
fn dependency_roles(tasks: &[Task], out: &mut Vec<Arc<Role>>) {
    for t in tasks {
        if let TaskKind::Block {
            block,
            role: Some(r),
            ..
        } = &t.kind
        {
            dependency_roles(block, out);
            if !out.iter().any(|d| Arc::ptr_eq(d, &r.role)) {
                out.push(r.role.clone());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::project::load_playbook;

    #[test]
    fn role_dependency_cycles_print_the_cycle() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        for (role, dep) in [("a", "b"), ("b", "c"), ("c", "a")] {
            std::fs::create_dir_all(d.join(format!("roles/{role}/meta"))).unwrap();
            std::fs::write(
                d.join(format!("roles/{role}/meta/main.yml")),
                format!("dependencies:\n  - role: {dep}\n"),
            )
            .unwrap();
        }
        std::fs::write(d.join("site.yml"), "- hosts: all\n  roles: [top]\n").unwrap();
        std::fs::create_dir_all(d.join("roles/top/meta")).unwrap();
        std::fs::write(d.join("roles/top/meta/main.yml"), "dependencies: [a]\n").unwrap();
        let e = load_playbook(&d.join("site.yml"), Vec::new()).unwrap_err();
        assert!(
            e.message
                .contains("role dependency cycle: c -> a -> b -> c"),
            "{}",
            e.message
        );
        assert!(e.span.unwrap().path().ends_with("roles/c/meta/main.yml"));
    }

    #[test]
    fn shared_dependencies_are_not_cycles() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        for (role, deps) in [
            ("top", "[l, r]"),
            ("l", "[base]"),
            ("r", "[base]"),
            ("base", "[]"),
        ] {
            std::fs::create_dir_all(d.join(format!("roles/{role}/meta"))).unwrap();
            std::fs::write(
                d.join(format!("roles/{role}/meta/main.yml")),
                format!("dependencies: {deps}\n"),
            )
            .unwrap();
        }
        std::fs::write(d.join("site.yml"), "- hosts: all\n  roles: [top]\n").unwrap();
        assert!(load_playbook(&d.join("site.yml"), Vec::new()).is_ok());
    }
}
