//! Mode, owner and group wanted for a path: whether they differ from what is there, and
//! the shell lines applying them (octal and symbolic modes, as `chmod` takes them).

use super::super::args::FileAttrs;
use super::{FileKind, RemoteStat};
use crate::connect::shell_quote;
use crate::error::{Error, ErrorKind, Result};

/// Mode, owner and group wanted for a path; `None` leaves that attribute alone.
#[derive(Debug, Clone, Default)]
pub struct Attrs {
    /// An octal (`"0644"`) or symbolic (`"u+x,g-w"`) mode.
    pub mode: Option<String>,
    /// Owner name or id.
    pub owner: Option<String>,
    /// Group name or id.
    pub group: Option<String>,
}

impl From<&FileAttrs> for Attrs {
    /// The attributes kk applies from the shared argument group (the SELinux ones and
    /// `attributes` are accepted, not applied).
    fn from(a: &FileAttrs) -> Attrs {
        Attrs {
            mode: a.mode.as_ref().map(|m| m.as_str().to_string()),
            owner: a.owner.as_ref().map(|o| o.as_str().to_string()),
            group: a.group.as_ref().map(|g| g.as_str().to_string()),
        }
    }
}

impl Attrs {
    /// Checks the mode's spelling without a host, so a literal `mode: rwx` is a load
    /// error; `preserve` is left to the modules that take it.
    pub fn check(&self, module: &str) -> Result<()> {
        match self.mode.as_deref() {
            Some(m) if m != "preserve" => {
                apply_mode(0o644, m, false).map(|_| ()).map_err(|e| Error {
                    message: format!("{}: {}", module, e.message),
                    ..e
                })
            }
            _ => Ok(()),
        }
    }

    /// Whether applying these to a path in state `st` would change anything.
    pub fn differ(&self, st: &RemoteStat) -> Result<bool> {
        if !st.exists {
            return Ok(self.mode.is_some() || self.owner.is_some() || self.group.is_some());
        }
        if let Some(m) = &self.mode {
            if apply_mode(st.mode, m, st.kind == FileKind::Dir)? != st.mode {
                return Ok(true);
            }
        }
        if let Some(o) = &self.owner {
            if !st.owner_is(o) {
                return Ok(true);
            }
        }
        if let Some(g) = &self.group {
            if !st.group_is(g) {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Shell lines applying the attributes to the path in the shell variable `var`;
    /// each failure exits with a message naming what failed.
    pub fn script(&self, var: &str, recurse: bool) -> String {
        let r = if recurse { "-R " } else { "" };
        let mut s = String::new();
        if let Some(o) = &self.owner {
            s.push_str(&format!(
                "chown {r}{} \"${var}\" || {{ echo 'cannot set owner {}' >&2; exit 73; }}\n",
                shell_quote(o),
                o.replace('\'', "")
            ));
        }
        if let Some(g) = &self.group {
            s.push_str(&format!(
                "chgrp {r}{} \"${var}\" || {{ echo 'cannot set group {}' >&2; exit 74; }}\n",
                shell_quote(g),
                g.replace('\'', "")
            ));
        }
        if let Some(m) = &self.mode {
            s.push_str(&format!(
                "chmod {r}{} \"${var}\" || {{ echo 'cannot set mode {}' >&2; exit 72; }}\n",
                shell_quote(&normalize_mode(m)),
                m.replace('\'', "")
            ));
        }
        s
    }
}

/// Makes a symbolic mode mean what Ansible means: a clause without `u`/`g`/`o`/`a`
/// applies to all, not filtered by the umask as `chmod` would.
pub fn normalize_mode(mode: &str) -> String {
    if mode.chars().all(|c| c.is_ascii_digit()) {
        return mode.to_string();
    }
    mode.split(',')
        .map(|c| {
            if c.starts_with(['+', '-', '=']) {
                format!("a{}", c)
            } else {
                c.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// Computes the mode `chmod` would give a path now at `cur`, for change detection
/// before anything runs. Accepts octal (`"0644"`) and symbolic (`"u=rw,g+r,o-rwx"`).
pub fn apply_mode(cur: u32, spec: &str, is_dir: bool) -> Result<u32> {
    let spec = spec.trim();
    let bad = |why: &str| {
        Error::new(
            ErrorKind::ModuleArgs,
            format!("invalid mode {:?}: {}", spec, why),
        )
        .help(
            "give an octal mode as a quoted string (\"0644\") or a symbolic one (\"u=rw,g=r,o=r\")",
        )
    };
    if !spec.is_empty() && spec.chars().all(|c| c.is_ascii_digit()) {
        return u32::from_str_radix(spec, 8)
            .ok()
            .filter(|m| *m <= 0o7777)
            .ok_or_else(|| bad("not an octal mode"));
    }
    let mut mode = cur & 0o7777;
    for clause in spec.split(',') {
        let who_end = clause
            .find(['+', '-', '='])
            .ok_or_else(|| bad("expected +, - or ="))?;
        let who_s = &clause[..who_end];
        let mut who = 0u32; // bits of u, g, o classes: 4, 2, 1
        for c in who_s.chars() {
            who |= match c {
                'u' => 4,
                'g' => 2,
                'o' => 1,
                'a' => 7,
                _ => return Err(bad(&format!("unknown user class `{}`", c))),
            };
        }
        if who == 0 {
            who = 7;
        }
        let mut rest = &clause[who_end..];
        while let Some(op) = rest.chars().next() {
            if !matches!(op, '+' | '-' | '=') {
                return Err(bad(&format!("unexpected `{}`", op)));
            }
            rest = &rest[1..];
            let end = rest.find(['+', '-', '=']).unwrap_or(rest.len());
            let perms = &rest[..end];
            rest = &rest[end..];
            let mut bits = 0u32;
            for p in perms.chars() {
                bits |= match p {
                    'r' => class_bits(who, 4),
                    'w' => class_bits(who, 2),
                    'x' => class_bits(who, 1),
                    'X' if is_dir || mode & 0o111 != 0 => class_bits(who, 1),
                    'X' => 0,
                    's' => {
                        (if who & 4 != 0 { 0o4000 } else { 0 })
                            | (if who & 2 != 0 { 0o2000 } else { 0 })
                    }
                    't' => {
                        if who & 1 != 0 {
                            0o1000
                        } else {
                            0
                        }
                    }
                    'u' => class_bits(who, (mode >> 6) & 7),
                    'g' => class_bits(who, (mode >> 3) & 7),
                    'o' => class_bits(who, mode & 7),
                    _ => return Err(bad(&format!("unknown permission `{}`", p))),
                };
            }
            match op {
                '+' => mode |= bits,
                '-' => mode &= !bits,
                _ => {
                    let mut clear = class_bits(who, 7);
                    if who & 4 != 0 {
                        clear |= 0o4000;
                    }
                    if who & 2 != 0 {
                        clear |= 0o2000;
                    }
                    if who & 1 != 0 {
                        clear |= 0o1000;
                    }
                    // Like chmod: `=` keeps setuid/setgid on directories unless named.
                    if is_dir {
                        clear &= !0o6000;
                    }
                    mode = (mode & !clear) | bits;
                }
            }
        }
    }
    Ok(mode)
}

/// Spreads a 3-bit rwx value over the user classes in `who`.
fn class_bits(who: u32, rwx: u32) -> u32 {
    let mut b = 0;
    if who & 4 != 0 {
        b |= rwx << 6;
    }
    if who & 2 != 0 {
        b |= rwx << 3;
    }
    if who & 1 != 0 {
        b |= rwx;
    }
    b
}
