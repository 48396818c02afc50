//! Ansible's TOML inventory form (the `toml` plugin, `.toml` files): top-level tables are
//! groups with `hosts` (a table of host keys, each a table of variables; ranges and ports
//! as in the other forms), `vars` (a table) and `children` (a list of group names).

use std::sync::Arc;

use serde_json::Value;

use crate::error::{Error, Result, SourceFile, Span};
use crate::vars::VarMap;

use super::ranges::expand_host;
use super::{too_many_hosts, Inventory, ALL, MAX_HOSTS};

/// TOML data as variables: datetimes become their TOML text (Python's tomllib gives
/// datetime objects, which print the same way).
fn to_json(v: &toml::Value) -> Value {
    match v {
        toml::Value::String(s) => Value::from(s.clone()),
        toml::Value::Integer(i) => Value::from(*i),
        toml::Value::Float(f) => serde_json::Number::from_f64(*f)
            .map(Value::Number)
            .unwrap_or(Value::Null),
        toml::Value::Boolean(b) => Value::Bool(*b),
        toml::Value::Datetime(d) => Value::from(d.to_string()),
        toml::Value::Array(a) => Value::Array(a.iter().map(to_json).collect()),
        toml::Value::Table(t) => {
            Value::Object(t.iter().map(|(k, v)| (k.clone(), to_json(v))).collect())
        }
    }
}

/// The 1-based line and column of a byte offset.
fn line_col(text: &str, at: usize) -> (usize, usize) {
    let before = &text[..at.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

/// The line a top-level `[group…]` table starts on, for messages about it.
fn group_line(file: &SourceFile, group: &str) -> usize {
    file.text
        .lines()
        .position(|l| {
            let t = l.trim_start();
            t.strip_prefix('[')
                .map(|r| r.trim_start_matches('['))
                .is_some_and(|r| {
                    r.trim_start().starts_with(group)
                        || r.trim_start().starts_with(&format!("\"{}\"", group))
                })
        })
        .map_or(1, |i| i + 1)
}

impl Inventory {
    /// Reads a TOML inventory into the inventory (the caller rebuilds).
    pub(super) fn load_toml(&mut self, file: &Arc<SourceFile>) -> Result<()> {
        let at = |line: usize, col: usize| Span {
            file: file.clone(),
            line,
            col,
        };
        let prefix = format!(
            "failed to parse inventory {} with the toml plugin",
            file.path.display()
        );
        let table: toml::Table = toml::from_str(&file.text).map_err(|e| {
            let (line, col) = e
                .span()
                .map(|r| line_col(&file.text, r.start))
                .unwrap_or((1, 1));
            Error::syntax(format!("{}: {}", prefix, e.message()), &at(line, col))
        })?;
        if table.is_empty() {
            return Err(Error::syntax(
                format!("{}: the file is empty", prefix),
                &at(1, 1),
            ));
        }
        if table.contains_key("plugin") {
            return Err(Error::syntax(
                format!("{}: a plugin configuration, not a TOML inventory", prefix),
                &at(1, 1),
            ));
        }
        for (group, data) in &table {
            let span = at(group_line(file, group), 1);
            self.toml_group(group, Some(data), &span)
                .map_err(|m| Error::syntax(format!("{}: {}", prefix, m), &span))?;
        }
        Ok(())
    }

    fn toml_group(
        &mut self,
        group: &str,
        data: Option<&toml::Value>,
        span: &Span,
    ) -> std::result::Result<(), String> {
        let data = match data {
            None => None,
            Some(toml::Value::Table(t)) => Some(t),
            // Ansible warns and skips a group that is not a table.
            Some(_) => return Ok(()),
        };
        if group != ALL {
            self.groups.entry(group.to_string()).or_default();
        }
        let Some(data) = data else {
            return Ok(());
        };
        for (key, value) in data {
            match key.as_str() {
                "vars" => {
                    let toml::Value::Table(vars) = value else {
                        return Err(format!(
                            "`vars` of group `{}` must be a table, not {}",
                            group,
                            value.type_str()
                        ));
                    };
                    let target = if group == ALL {
                        &mut self.all_vars
                    } else {
                        &mut self.groups.entry(group.to_string()).or_default().vars
                    };
                    for (k, v) in vars {
                        target.insert(k.clone(), to_json(v));
                    }
                }
                "children" => {
                    let toml::Value::Array(children) = value else {
                        return Err(format!(
                            "`children` of group `{}` must be a list, not {}",
                            group,
                            value.type_str()
                        ));
                    };
                    for c in children {
                        let Some(c) = c.as_str() else {
                            return Err(format!(
                                "a child of group `{}` is {}, not a group name",
                                group,
                                c.type_str()
                            ));
                        };
                        if c == ALL {
                            return Err(
                                "`all` cannot be a child group: it is the top of every inventory"
                                    .to_string(),
                            );
                        }
                        self.toml_group(c, None, span)?;
                        if group == ALL {
                            self.all_children.insert(c.to_string());
                        } else {
                            let g = self.groups.entry(group.to_string()).or_default();
                            g.children.entry(c.to_string()).or_insert(None);
                        }
                    }
                }
                "hosts" => {
                    let toml::Value::Table(hosts) = value else {
                        return Err(format!(
                            "`hosts` of group `{}` must be a table, not {}",
                            group,
                            value.type_str()
                        ));
                    };
                    for (raw, hv) in hosts {
                        let toml::Value::Table(hv) = hv else {
                            return Err(format!(
                                "host `{}` must be a table of variables, not {}",
                                raw,
                                hv.type_str()
                            ));
                        };
                        let mut vars: VarMap =
                            hv.iter().map(|(k, v)| (k.clone(), to_json(v))).collect();
                        let (names, port) = expand_host(raw, span).map_err(|e| e.message)?;
                        if self.hosts.len().saturating_add(names.len()) > MAX_HOSTS {
                            return Err(too_many_hosts(span).message);
                        }
                        if let Some(p) = port {
                            vars.entry("ansible_port".to_string())
                                .or_insert(Value::from(p));
                        }
                        for h in names {
                            self.add_host_def(&h, &vars, Some(span));
                            if group == ALL {
                                self.all_direct.insert(h);
                            } else {
                                self.groups
                                    .entry(group.to_string())
                                    .or_default()
                                    .hosts
                                    .insert(h);
                            }
                        }
                    }
                }
                // Ansible warns and skips other keys.
                _ => {}
            }
        }
        Ok(())
    }
}
