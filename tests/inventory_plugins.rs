//! Inventory plugins as Ansible users give them (issue 16): the cases the oracle fixtures
//! (102–105) cannot express — ansible.cfg's `[inventory]` settings (enable_plugins,
//! ignore_extensions, ignore_patterns and their environment variables) and the errors of
//! scripts and plugin files — compared with ansible-playbook from the oracle venv.

use std::process::Command;

use crate::common::{oracle_venv_bin, Project, Run};

/// Prints every group with its hosts (and a variable of each host) on one line.
const PLAY: &str = "- hosts: localhost\n  gather_facts: false\n  tasks:\n    - debug: {msg: \"G={{ groups | to_json }} V={{ groups['all'] | map('extract', hostvars, 'v') | map('default', '-') | list | to_json }}\"}\n";

/// The `G=…` line of a run's output.
fn groups_line(out: &str) -> String {
    out.lines()
        .find(|l| l.contains("\"msg\": \"G="))
        .map(|l| l.trim().to_string())
        .unwrap_or_else(|| panic!("no groups line in:\n{out}"))
}

/// ansible-playbook's exit code and output in the project, with `env`.
fn ansible(p: &Project, args: &[&str], env: &[(&str, &str)]) -> (i32, String) {
    let out = Command::new(oracle_venv_bin().join("ansible-playbook"))
        .args(args)
        .current_dir(p.dir())
        .env("ANSIBLE_NOCOLOR", "1")
        .env("ANSIBLE_LOCALHOST_WARNING", "False")
        .envs(env.iter().copied())
        .output()
        .expect("run ansible-playbook");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

/// kk in the project with `env`.
fn kk(p: &Project, args: &[&str], env: &[(&str, &str)]) -> Run {
    let out = Command::new(env!("CARGO_BIN_EXE_kk"))
        .args(args)
        .current_dir(p.dir())
        .envs(env.iter().copied())
        .output()
        .expect("run kk");
    Run::from_output(out)
}

/// Both tools print the same groups for `args` (exit 0 both).
fn same_groups(p: &Project, args: &[&str], env: &[(&str, &str)]) -> String {
    let mut all = vec!["run"];
    all.extend_from_slice(args);
    let r = kk(p, &all, env);
    r.code(0);
    let (code, text) = ansible(p, args, env);
    assert_eq!(code, 0, "{text}");
    let k = groups_line(&r.stdout);
    assert_eq!(k, groups_line(&text), "kk and ansible-playbook differ");
    k
}

fn executable(p: &Project, rel: &str, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    p.file(rel, text);
    std::fs::set_permissions(p.path(rel), std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn enable_plugins_chooses_how_a_host_list_is_read() {
    let p = Project::new();
    p.file("site.yaml", PLAY);
    // Ansible's default host_list takes `web[1:3]` as one host of that name.
    let plain = same_groups(&p, &["site.yaml", "-i", "web[1:3],db:2200,"], &[]);
    assert!(plain.contains("web[1:3]"), "{plain}");
    // advanced_host_list expands ranges.
    p.file(
        "ansible.cfg",
        "[inventory]\nenable_plugins = ansible.builtin.advanced_host_list, ini\n",
    );
    let ranged = same_groups(&p, &["site.yaml", "-i", "web[1:3],db:2200,"], &[]);
    assert!(ranged.contains("web2"), "{ranged}");
    // The environment variable wins over the file.
    let env = [("ANSIBLE_INVENTORY_ENABLED", "host_list")];
    let again = same_groups(&p, &["site.yaml", "-i", "web[1:3],"], &env);
    assert!(again.contains("web[1:3]"), "{again}");
}

#[test]
fn ignore_extensions_and_patterns_skip_directory_entries() {
    let p = Project::new();
    p.file("site.yaml", PLAY)
        .file("inv/a.ini", "[a]\nh1 v=1\n")
        .file("inv/b.txt", "[b]\nh2 v=2\n")
        .file("inv/c.skip", "[c]\nh3 v=3\n")
        .file("inv/draft_d.ini", "[d]\nh4 v=4\n")
        .file("inv/e.yml", "e:\n  hosts:\n    h5: {v: 5}\n");
    // Defaults: .txt is skipped, the rest read.
    let g = same_groups(&p, &["site.yaml", "-i", "inv"], &[]);
    assert!(
        !g.contains("h2") && g.contains("h3") && g.contains("h4"),
        "{g}"
    );
    // ansible.cfg: new endings and patterns (the [inventory] keys win over [defaults]').
    p.file(
        "ansible.cfg",
        "[defaults]\ninventory_ignore_extensions = .ini\n[inventory]\nignore_extensions = .skip, .txt\nignore_patterns = ^draft_\n",
    );
    let g = same_groups(&p, &["site.yaml", "-i", "inv"], &[]);
    assert!(
        g.contains("h1") && !g.contains("h3") && !g.contains("h4") && g.contains("h5"),
        "{g}"
    );
    // The environment variables.
    let env = [
        ("ANSIBLE_INVENTORY_IGNORE", ".yml"),
        ("ANSIBLE_INVENTORY_IGNORE_REGEX", "^a"),
    ];
    let g = same_groups(&p, &["site.yaml", "-i", "inv"], &env);
    assert!(
        !g.contains("h1") && g.contains("h2") && g.contains("h3") && !g.contains("h5"),
        "{g}"
    );
}

#[test]
fn an_executable_ini_file_falls_back_to_ini_as_in_ansible() {
    let p = Project::new();
    p.file("site.yaml", PLAY);
    executable(&p, "hosts", "[web]\nh1 v=1\n");
    let g = same_groups(&p, &["site.yaml", "-i", "hosts"], &[]);
    assert!(g.contains(r#"\"web\": [\"h1\"]"#), "{g}");
}

#[test]
fn a_failing_script_is_a_load_error_with_its_exit_code_and_stderr() {
    let p = Project::new();
    p.file("site.yaml", PLAY);
    executable(
        &p,
        "inv.sh",
        "#!/bin/sh\necho 'cannot reach the CMDB' >&2\nexit 3\n",
    );
    let r = kk(&p, &["run", "site.yaml", "-i", "inv.sh"], &[]);
    r.code(4);
    let out = format!("{}{}", r.stdout, r.stderr);
    assert!(
        out.contains("inv.sh with the script plugin")
            && out.contains("exit code 3")
            && out.contains("cannot reach the CMDB"),
        "{}",
        r.describe()
    );
    // Ansible says the same but only warns, and runs with no hosts (exit 0): kk refuses
    // to run against an inventory it could not read, as for a bad INI line.
    let (code, text) = ansible(&p, &["site.yaml", "-i", "inv.sh"], &[]);
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains("Inventory script returned non-zero exit code 3"),
        "{text}"
    );

    // Output that is not JSON.
    executable(&p, "inv.sh", "#!/bin/sh\necho 'not json'\n");
    let r = kk(&p, &["run", "site.yaml", "-i", "inv.sh"], &[]);
    r.code(4);
    assert!(
        format!("{}{}", r.stdout, r.stderr).contains("is not JSON"),
        "{}",
        r.describe()
    );
    let (code, text) = ansible(&p, &["site.yaml", "-i", "inv.sh"], &[]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("could not be parsed as JSON"), "{text}");
}

#[test]
fn an_unknown_plugin_is_a_load_error_at_its_line() {
    let p = Project::new();
    p.file("site.yaml", PLAY).file(
        "cloud.yml",
        "# a cloud inventory\nplugin: amazon.aws.aws_ec2\nregions: [eu-west-1]\n",
    );
    let r = kk(&p, &["run", "site.yaml", "-i", "cloud.yml"], &[]);
    r.code(4);
    let out = format!("{}{}", r.stdout, r.stderr);
    assert!(
        out.contains("cloud.yml:2:1") && out.contains("unknown plugin `amazon.aws.aws_ec2`"),
        "{}",
        r.describe()
    );
    let (code, text) = ansible(&p, &["site.yaml", "-i", "cloud.yml"], &[]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("Failed to parse inventory"), "{text}");
}

#[test]
fn a_strict_constructed_error_stops_the_run() {
    let p = Project::new();
    p.file("site.yaml", PLAY).file("hosts", "h1 v=1\n").file(
        "c.yml",
        "plugin: constructed\nstrict: true\ncompose:\n  x: nope + 1\n",
    );
    let r = kk(&p, &["run", "site.yaml", "-i", "hosts", "-i", "c.yml"], &[]);
    r.code(4);
    let out = format!("{}{}", r.stdout, r.stderr);
    assert!(
        out.contains("could not set x for host h1") && out.contains("constructed plugin"),
        "{}",
        r.describe()
    );
    let (_, text) = ansible(&p, &["site.yaml", "-i", "hosts", "-i", "c.yml"], &[]);
    assert!(text.contains("Could not set x for host h1"), "{text}");
}

#[test]
fn a_scripts_stderr_is_shown_even_when_it_succeeds() {
    let p = Project::new();
    p.file("site.yaml", PLAY);
    executable(
        &p,
        "inv.sh",
        "#!/bin/sh\necho 'using the cached CMDB copy' >&2\necho '{\"web\": {\"hosts\": [\"h1\"]}, \"_meta\": {\"hostvars\": {\"h1\": {\"v\": 1}}}}'\n",
    );
    let g = same_groups(&p, &["site.yaml", "-i", "inv.sh"], &[]);
    assert!(g.contains("V=[1]"), "{g}");
    let r = kk(&p, &["run", "site.yaml", "-i", "inv.sh"], &[]);
    assert!(
        r.stderr.contains("[ERROR]: using the cached CMDB copy"),
        "{}",
        r.describe()
    );
    let (_, text) = ansible(&p, &["site.yaml", "-i", "inv.sh"], &[]);
    assert!(
        text.contains("[ERROR]: using the cached CMDB copy"),
        "{text}"
    );
}
