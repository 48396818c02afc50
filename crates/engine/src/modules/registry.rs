//! The one list of what a task may name: every module with its aliases, how its
//! free-form text is read, whether it runs once for all hosts, and its implementation;
//! and the task-structure entries (`block`, `include_tasks`, `meta` …) that the executor
//! walks itself. Lookups, "did you mean" candidates and the loader's checks are all
//! derived from [`REGISTRY`], so a module is added in one place.

use super::plan::{Planned, Scripted};
use super::{assemble, async_status, known_hosts, ping, tempfile, wait_for_connection};
use super::{
    assert, blockinfile, command, copy, debug, fail, fetch, file, gen_cert, get_url, image,
    include_vars, inventory, lineinfile, package, pause, replace, script, set_fact, setup, slurp,
    stat, systemd_service, template, unarchive, uri, wait_for, Module,
};
use super::{group, hostname, modprobe, sysctl, user};

/// How a task's free-form text (`command: ls -l`, `include_tasks: x.yaml`) is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FreeForm {
    /// Only `key=value` pairs.
    No,
    /// Text that is not `key=value` becomes `_raw_params` (Ansible's raw-param modules).
    Text,
    /// A command line: only the command parameters are split off the text (Ansible's
    /// `FREEFORM_ACTIONS`, `parse_kv(check_raw=True)`).
    CommandLine,
}

/// What carries out a registry entry.
#[derive(Clone, Copy)]
pub enum Action {
    /// A module, run per host (or once, see [`Entry::run_once`]).
    Module(&'static dyn Module),
    /// Task structure the loader and executor handle (blocks, includes, imports, `meta`).
    Structural,
}

/// One name a task may use as its action.
pub struct Entry {
    /// The canonical name, as the loader stores it.
    pub name: &'static str,
    /// Other short names for the same entry (`service` for `systemd_service`). The
    /// collection prefixes `ansible.builtin.` and `ansible.legacy.` are accepted on
    /// every name and alias (see [`canonical_name`]).
    pub aliases: &'static [&'static str],
    /// How free-form text is read.
    pub free_form: FreeForm,
    /// Runs once for the whole host list, as if `run_once: true` (Ansible's
    /// `BYPASS_HOST_LOOP` actions such as `add_host`).
    pub run_once: bool,
    /// The implementation.
    pub action: Action,
}

impl Entry {
    /// The module, for entries that are one.
    pub fn module(&self) -> Option<&'static dyn Module> {
        match self.action {
            Action::Module(m) => Some(m),
            Action::Structural => None,
        }
    }
}

const fn module(name: &'static str, imp: &'static dyn Module) -> Entry {
    Entry {
        name,
        aliases: &[],
        free_form: FreeForm::No,
        run_once: false,
        action: Action::Module(imp),
    }
}

const fn structural(name: &'static str, free_form: FreeForm) -> Entry {
    Entry {
        name,
        aliases: &[],
        free_form,
        run_once: false,
        action: Action::Structural,
    }
}

const fn with_form(e: Entry, free_form: FreeForm) -> Entry {
    Entry { free_form, ..e }
}

const fn with_aliases(e: Entry, aliases: &'static [&'static str]) -> Entry {
    Entry { aliases, ..e }
}

const fn once(e: Entry) -> Entry {
    Entry {
        run_once: true,
        ..e
    }
}

/// The module the executor runs to gather facts when a play asks for them.
pub const FACTS_MODULE: &str = "setup";

/// Every entry, in the order "did you mean" hints consider them (the first of equally
/// close candidates wins).
pub static REGISTRY: &[Entry] = &[
    with_form(module("command", &command::COMMAND), FreeForm::CommandLine),
    with_form(module("shell", &command::SHELL), FreeForm::CommandLine),
    with_form(module("raw", &command::RAW), FreeForm::CommandLine),
    module("debug", &debug::Debug),
    module("set_fact", &set_fact::SetFact),
    module("assert", &assert::Assert),
    module("fail", &fail::Fail),
    module("pause", &pause::Pause),
    module("package", &Planned(Scripted(package::PACKAGE))),
    module("image", &image::Image),
    module("apt", &Planned(Scripted(super::apt::APT))),
    module("apt_key", &Planned(super::apt_key::AptKey)),
    module(
        "apt_repository",
        &Planned(super::apt_repository::AptRepository),
    ),
    module("dnf", &Planned(Scripted(super::dnf::DNF))),
    module("yum", &Planned(Scripted(super::dnf::YUM))),
    module(FACTS_MODULE, &setup::Setup),
    // Ansible's `gather_facts` action runs `setup`; kept as its own name.
    module("gather_facts", &setup::Setup),
    module("copy", &Planned(copy::Copy)),
    module("template", &Planned(template::Template)),
    module("file", &Planned(file::File)),
    module("stat", &stat::Stat),
    module("lineinfile", &Planned(lineinfile::LineInFile)),
    module("blockinfile", &Planned(blockinfile::BlockInFile)),
    module("replace", &Planned(replace::Replace)),
    module("find", &super::find_files::Find),
    module("slurp", &slurp::Slurp),
    module("user", &Planned(user::User)),
    module("group", &Planned(group::GroupModule)),
    module("hostname", &Planned(hostname::Hostname)),
    with_aliases(
        module("sysctl", &Planned(sysctl::Sysctl)),
        &["ansible.posix.sysctl"],
    ),
    with_aliases(
        module("modprobe", &Planned(modprobe::Modprobe)),
        &["community.general.modprobe"],
    ),
    with_aliases(
        module("mount", &Planned(super::mount::Mount)),
        &["ansible.posix.mount"],
    ),
    with_aliases(
        module(
            "authorized_key",
            &Planned(super::authorized_key::AuthorizedKey),
        ),
        &["ansible.posix.authorized_key"],
    ),
    with_aliases(
        module("ini_file", &Planned(super::ini_file::IniFile)),
        &["community.general.ini_file"],
    ),
    with_aliases(
        module("timezone", &Planned(super::timezone::Timezone)),
        &["community.general.timezone"],
    ),
    with_aliases(
        module("selinux", &Planned(super::selinux::Selinux)),
        &["ansible.posix.selinux"],
    ),
    module(
        "dpkg_selections",
        &Planned(super::dpkg_selections::DpkgSelections),
    ),
    with_aliases(
        module("synchronize", &super::synchronize::Synchronize),
        &["ansible.posix.synchronize"],
    ),
    module("reboot", &super::reboot::Reboot),
    module("fetch", &fetch::Fetch),
    with_form(module("script", &script::Script), FreeForm::CommandLine),
    with_form(
        module("include_vars", &include_vars::IncludeVars),
        FreeForm::Text,
    ),
    module("gen_cert", &gen_cert::GenCert),
    with_aliases(
        module("get_url", &Planned(Scripted(get_url::GetUrl))),
        &["http_get_file"],
    ),
    module("unarchive", &Planned(Scripted(unarchive::Unarchive))),
    with_aliases(
        module(
            "systemd_service",
            &Planned(Scripted(systemd_service::SystemdService)),
        ),
        &["systemd", "service"],
    ),
    module("wait_for", &wait_for::WaitFor),
    module("uri", &uri::Uri),
    module("ping", &ping::Ping),
    module("service_facts", &super::service_facts::ServiceFacts),
    module("package_facts", &super::package_facts::PackageFacts),
    with_aliases(
        module(
            "x509_certificate_info",
            &super::x509_info::X509CertificateInfo,
        ),
        &["community.crypto.x509_certificate_info"],
    ),
    module("async_status", &async_status::AsyncStatus),
    module("tempfile", &tempfile::TempFile),
    module("known_hosts", &Planned(known_hosts::KnownHosts)),
    module("iptables", &Planned(Scripted(super::iptables::Iptables))),
    module("assemble", &Planned(assemble::Assemble)),
    module("cron", &Planned(super::cron::Cron)),
    module("git", &Planned(Scripted(super::git::Git))),
    module(
        "yum_repository",
        &Planned(super::yum_repository::YumRepository),
    ),
    module(
        "wait_for_connection",
        &wait_for_connection::WaitForConnection,
    ),
    structural("block", FreeForm::No),
    structural("include_tasks", FreeForm::Text),
    structural("import_tasks", FreeForm::Text),
    structural("include_role", FreeForm::No),
    structural("import_role", FreeForm::No),
    structural("meta", FreeForm::Text),
    once(module("add_host", &inventory::AddHost)),
    module("group_by", &inventory::GroupBy),
    once(module("add_hostvars", &inventory::AddHostVars)),
    structural("include", FreeForm::No),
    structural("import_playbook", FreeForm::Text),
    module("result", &inventory::Report),
    module(
        "validate_argument_spec",
        &super::argspec::ValidateArgumentSpec,
    ),
];

/// The canonical name of an action as written: the collection prefix removed
/// (`ansible.builtin.copy` → `copy`) and aliases resolved (`service` → `systemd_service`).
/// Names the registry does not know come back without their prefix.
pub fn canonical_name(name: &str) -> &str {
    let short = name
        .strip_prefix("ansible.builtin.")
        .or_else(|| name.strip_prefix("ansible.legacy."))
        .unwrap_or(name);
    REGISTRY
        .iter()
        .find(|e| e.aliases.contains(&short))
        .map(|e| e.name)
        .unwrap_or(short)
}

/// The entry of a canonical name (modules and task structure alike).
pub fn find(name: &str) -> Option<&'static Entry> {
    REGISTRY
        .iter()
        .find(|e| e.name == name)
        .or_else(|| super::python::entry(name))
}

/// The module of a canonical name; `None` for unknown names and task structure.
pub fn lookup(name: &str) -> Option<&'static dyn Module> {
    find(name).and_then(Entry::module)
}

/// Whether the free-form text of this (canonical) action is text rather than
/// `key=value` pairs.
pub fn is_free_form(name: &str) -> bool {
    find(name).is_some_and(|e| e.free_form != FreeForm::No)
}

/// Whether the free-form text of this (canonical) action is a command line.
pub fn is_command_line(name: &str) -> bool {
    find(name).is_some_and(|e| e.free_form == FreeForm::CommandLine)
}

/// Whether this (canonical) action runs once for all hosts of the task.
pub fn runs_once(name: &str) -> bool {
    find(name).is_some_and(|e| e.run_once)
}

/// Every name and alias a task may use as its action, in registry order: the
/// candidates of "did you mean" hints.
pub fn all_names() -> impl Iterator<Item = &'static str> {
    REGISTRY
        .iter()
        .flat_map(|e| std::iter::once(e.name).chain(e.aliases.iter().copied()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_resolve() {
        assert_eq!(canonical_name("ansible.builtin.service"), "systemd_service");
        assert_eq!(canonical_name("ansible.legacy.copy"), "copy");
        assert_eq!(canonical_name("http_get_file"), "get_url");
        assert_eq!(canonical_name("nope"), "nope");
        assert!(lookup("gather_facts").is_some());
        assert!(lookup("block").is_none() && find("block").is_some());
        assert!(is_free_form("include_tasks") && !is_free_form("include"));
        assert!(is_command_line("script") && !is_command_line("include_vars"));
        assert!(runs_once("add_host") && !runs_once("group_by"));
        let mut seen = std::collections::HashSet::new();
        for n in all_names() {
            assert!(seen.insert(n), "{} twice", n);
        }
    }
}
