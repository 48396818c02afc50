//! What `user` and `group` share: reading the host's account databases (`getent`, no
//! Python) in one script, and parsing them as Python's `pwd`/`grp`/`spwd` modules see them.

use super::ModuleContext;
use crate::connect::shell_quote;
use crate::error::{Error, ErrorKind, Result};

/// A `passwd` entry, with the password hash from `shadow` (Ansible's `user_info`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Passwd {
    pub name: String,
    /// The shadow hash (empty when shadow could not be read).
    pub password: String,
    pub uid: u64,
    pub gid: u64,
    pub comment: String,
    pub home: String,
    pub shell: String,
    /// Shadow's account expiry, days since the epoch (`None`: empty field).
    pub expires: Option<i64>,
}

/// A `group` entry.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Group {
    pub name: String,
    pub gid: u64,
    pub members: Vec<String>,
}

/// The host's view of one account name.
#[derive(Debug, Clone, Default)]
pub struct Accounts {
    /// The user, if any.
    pub user: Option<Passwd>,
    /// Every group (`getent group`).
    pub groups: Vec<Group>,
    /// Extra `KEY=value` facts the script printed (`HOME_EXISTS=1` …).
    pub facts: Vec<(String, String)>,
}

impl Accounts {
    /// Python's `group_exists`/`group_info`: a number is tried as a gid first, then as a name.
    pub fn group(&self, g: &str) -> Option<&Group> {
        if let Ok(id) = g.parse::<u64>() {
            if let Some(found) = self.groups.iter().find(|x| x.gid == id) {
                return Some(found);
            }
        }
        self.groups.iter().find(|x| x.name == g)
    }

    /// A fact the script printed.
    pub fn fact(&self, key: &str) -> Option<&str> {
        self.facts
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// Reads the user `name` (passwd and shadow) and every group, then runs `extra` (which
/// may print `KEY=value` lines as `==kk-fact==KEY=value`).
pub async fn read(ctx: &ModuleContext, name: &str, extra: &str) -> Result<Accounts> {
    let script = format!(
        "n={}\necho ==kk-passwd==\ngetent passwd \"$n\"\necho ==kk-shadow==\ngetent shadow \"$n\" 2>/dev/null\necho ==kk-group==\ngetent group\necho ==kk-end==\n{}",
        shell_quote(name),
        extra
    );
    let out = ctx.exec(script, None).await?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    parse(&text, name).ok_or_else(|| {
        Error::new(
            ErrorKind::Runtime,
            "cannot read the host's account databases (getent)",
        )
        .note(out.stderr_text())
    })
}

fn parse(text: &str, name: &str) -> Option<Accounts> {
    let mut a = Accounts::default();
    let mut section = "";
    let mut shadow: Option<(String, Option<i64>)> = None;
    for line in text.lines() {
        if let Some(s) = line
            .strip_prefix("==kk-")
            .and_then(|l| l.strip_suffix("=="))
        {
            section = match s {
                "passwd" => "passwd",
                "shadow" => "shadow",
                "group" => "group",
                "end" => "end",
                _ => section,
            };
            continue;
        }
        if let Some(f) = line.strip_prefix("==kk-fact==") {
            if let Some((k, v)) = f.split_once('=') {
                a.facts.push((k.to_string(), v.to_string()));
            }
            continue;
        }
        let f: Vec<&str> = line.split(':').collect();
        match section {
            "passwd" if f.len() >= 7 && f[0] == name => {
                a.user = Some(Passwd {
                    name: f[0].into(),
                    password: f[1].into(),
                    uid: f[2].parse().ok()?,
                    gid: f[3].parse().ok()?,
                    comment: f[4].into(),
                    home: f[5].into(),
                    shell: f[6..].join(":"),
                    expires: None,
                });
            }
            "shadow" if f.len() >= 8 && f[0] == name => {
                shadow = Some((f[1].to_string(), f[7].parse().ok()));
            }
            "group" if f.len() >= 4 => a.groups.push(Group {
                name: f[0].into(),
                gid: f[2].parse().ok()?,
                members: f[3]
                    .split(',')
                    .filter(|m| !m.is_empty())
                    .map(str::to_string)
                    .collect(),
            }),
            _ => {}
        }
    }
    if section != "end" {
        return None;
    }
    if let (Some(u), Some((hash, exp))) = (a.user.as_mut(), shadow) {
        u.password = hash;
        u.expires = exp;
    }
    Some(a)
}

/// A command line for the shell, each word quoted.
pub fn command_line(words: &[String]) -> String {
    words
        .iter()
        .map(|w| shell_quote(w))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_getent() {
        let text = "==kk-passwd==\nbob:x:1001:1002:Bob B:/home/bob:/bin/sh\n==kk-shadow==\nbob:$6$x:19000:0:99999:7::19500:\n==kk-group==\nroot:x:0:\nbob:x:1002:\nsudo:x:27:alice,bob\n==kk-end==\n==kk-fact==HOME=1\n";
        let a = parse(text, "bob").unwrap();
        let u = a.user.clone().unwrap();
        assert_eq!((u.uid, u.gid, u.password.as_str()), (1001, 1002, "$6$x"));
        assert_eq!(u.expires, Some(19500));
        assert_eq!(a.group("27").unwrap().members, vec!["alice", "bob"]);
        assert_eq!(a.group("bob").unwrap().gid, 1002);
        assert!(a.group("nope").is_none());
        assert_eq!(a.fact("HOME"), Some("1"));
        assert!(parse("==kk-passwd==\n", "bob").is_none());
        assert!(parse("==kk-passwd==\n==kk-end==\n", "bob")
            .unwrap()
            .user
            .is_none());
    }
}
