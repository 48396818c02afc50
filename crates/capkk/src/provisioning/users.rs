//! Users from cloud-init's `users` and Ignition's `passwd.users`, as shell steps.
//!
//! Both agents create a missing user; on an existing one they leave the account alone but
//! still install sudo rules and SSH keys. The same holds here, so a machine's own users
//! (including the one CAPKK logs in as) are never reshaped. Password hashes travel in a
//! `0600` file under `/run/cluster-api/users/`, not on a command line, and the file is
//! removed once used.

use super::error::clip;
use super::{shell_quote, ProvisioningError, Step};

/// One user, in the terms both documents share.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct User {
    pub name: String,
    pub gecos: Option<String>,
    pub homedir: Option<String>,
    pub shell: Option<String>,
    pub primary_group: Option<String>,
    pub groups: Vec<String>,
    pub uid: Option<u64>,
    pub system: bool,
    pub no_create_home: bool,
    pub no_user_group: bool,
    pub inactive: Option<u64>,
    /// A crypt(3) hash, set when the user is created (cloud-init `passwd`).
    pub hash_on_create: Option<String>,
    /// A crypt(3) hash, set on new and existing users (cloud-init `hashed_passwd`, Ignition
    /// `passwordHash`).
    pub hash_always: Option<String>,
    /// Lock the password of a user this step creates (cloud-init's default).
    pub lock_passwd: bool,
    pub sudo: Vec<String>,
    pub ssh_authorized_keys: Vec<String>,
}

/// Checks a user or group name: what `useradd` accepts on common distributions.
pub(crate) fn check_name(doc: &'static str, at: &str, name: &str) -> Result<(), ProvisioningError> {
    let ok = !name.is_empty()
        && name.len() <= 32
        && name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name
            .trim_end_matches('$')
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c));
    if ok {
        return Ok(());
    }
    Err(ProvisioningError::new(
        doc,
        at,
        "a user or group name of letters, digits, `_`, `.`, `-` (at most 32, starting with a letter or `_`)",
        format!("`{}`", clip(name)),
        "rename the user or group",
    ))
}

/// Checks a one-line value that goes into a file or command (a key, a sudo rule, a hash).
pub(crate) fn check_line(
    doc: &'static str,
    at: &str,
    what: &str,
    value: &str,
) -> Result<(), ProvisioningError> {
    if value.trim().is_empty() || value.contains(['\n', '\r', '\0']) {
        return Err(ProvisioningError::new(
            doc,
            at,
            format!("{what} on one non-empty line"),
            "an empty value or one with a line break or NUL",
            "write each entry as a single line",
        ));
    }
    Ok(())
}

/// The steps for `users`, in order.
pub(crate) fn steps(users: &[User]) -> Vec<Step> {
    let mut steps = Vec::new();
    for user in users {
        let name = shell_quote(&user.name);
        let secret_file = format!("/run/cluster-api/users/{}.passwd", user.name);
        let hash = user.hash_always.as_ref().or(user.hash_on_create.as_ref());
        if let Some(hash) = hash {
            steps.push(Step::write(
                &secret_file,
                hash.as_bytes().to_vec(),
                0o600,
                "root:root",
                false,
            ));
        }
        let sudoers = sudoers_path(&user.name);
        if !user.sudo.is_empty() {
            let mut body = format!("# Cluster API user rules for {}\n", user.name);
            for rule in &user.sudo {
                body.push_str(&format!("{} {}\n", user.name, rule));
            }
            steps.push(Step::write(
                &sudoers,
                body.into_bytes(),
                0o440,
                "root:root",
                false,
            ));
        }
        let mut script = String::from("set -e\n");
        let mut useradd = vec!["useradd".to_string()];
        let mut groups_needed: Vec<&String> = user.groups.iter().collect();
        if let Some(g) = &user.primary_group {
            groups_needed.insert(0, g);
            useradd.push(format!("-g {}", shell_quote(g)));
        }
        for g in &groups_needed {
            let g = shell_quote(g);
            script.push_str(&format!(
                "getent group {g} >/dev/null || getent passwd {name} >/dev/null || groupadd {g}\n"
            ));
        }
        if let Some(v) = &user.gecos {
            useradd.push(format!("-c {}", shell_quote(v)));
        }
        if let Some(v) = &user.homedir {
            useradd.push(format!("-d {}", shell_quote(v)));
        }
        if let Some(v) = &user.shell {
            useradd.push(format!("-s {}", shell_quote(v)));
        }
        if !user.groups.is_empty() {
            useradd.push(format!("-G {}", shell_quote(&user.groups.join(","))));
        }
        if let Some(uid) = user.uid {
            useradd.push(format!("-u {uid}"));
        }
        if let Some(days) = user.inactive {
            useradd.push(format!("-f {days}"));
        }
        if user.system {
            useradd.push("-r".into());
        }
        useradd.push(if user.no_create_home { "-M" } else { "-m" }.into());
        if user.no_user_group {
            useradd.push("-N".into());
        }
        let file = shell_quote(&secret_file);
        if user.hash_on_create.is_some() && user.hash_always.is_none() {
            useradd.push(format!("-p \"$(cat {file})\""));
        }
        useradd.push(name.clone());
        script.push_str(&format!(
            "if ! getent passwd {name} >/dev/null; then\n  {}\n",
            useradd.join(" ")
        ));
        if user.lock_passwd {
            script.push_str(&format!("  passwd -l {name} >/dev/null\n"));
        }
        script.push_str("fi\n");
        if user.hash_always.is_some() {
            script.push_str(&format!("usermod -p \"$(cat {file})\" {name}\n"));
        }
        if hash.is_some() {
            script.push_str(&format!("rm -f {file}\n"));
        }
        if !user.sudo.is_empty() {
            let f = shell_quote(&sudoers);
            script.push_str(&format!(
                "if command -v visudo >/dev/null && ! visudo -cq -f {f}; then rm -f {f}; \
                 echo \"sudo rules for user {} are not valid sudoers syntax\" >&2; exit 1; fi\n",
                user.name
            ));
        }
        if !user.ssh_authorized_keys.is_empty() {
            script.push_str(&format!(
                "home=$(getent passwd {name} | cut -d: -f6)\ngroup=$(id -gn {name})\n\
                 install -d -m 0700 -o {name} -g \"$group\" \"$home/.ssh\"\n\
                 keys=\"$home/.ssh/authorized_keys\"\ntouch \"$keys\"\n\
                 chmod 0600 \"$keys\"\nchown {name}:\"$group\" \"$keys\"\n"
            ));
            for key in &user.ssh_authorized_keys {
                let k = shell_quote(key);
                script.push_str(&format!(
                    "grep -qxF -- {k} \"$keys\" || printf '%s\\n' {k} >> \"$keys\"\n"
                ));
            }
        }
        steps.push(Step::Shell(script));
    }
    steps
}

/// sudo skips files in sudoers.d whose names contain `.`, so dots become `_`.
fn sudoers_path(name: &str) -> String {
    format!("/etc/sudoers.d/90-cluster-api-{}", name.replace('.', "_"))
}

/// Steps for cloud-init's top-level `groups`: each group created when missing, members
/// added to it.
pub(crate) fn group_steps(groups: &[(String, Vec<String>)]) -> Vec<Step> {
    groups
        .iter()
        .map(|(group, members)| {
            let g = shell_quote(group);
            let mut script = format!("set -e\ngetent group {g} >/dev/null || groupadd {g}\n");
            for m in members {
                script.push_str(&format!("usermod -aG {g} {}\n", shell_quote(m)));
            }
            Step::Shell(script)
        })
        .collect()
}
