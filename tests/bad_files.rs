//! Hostile files and options (issue 15): alias bombs, non-UTF-8 bytes, endless inputs,
//! inventory values out of range, bad command-line options. Each gets a located error and
//! Ansible's exit code, within bounded time and memory.

use crate::common::{Project, Run};

/// Every hostile run gets this long and this much address space.
const SECS: u64 = 20;
const MEM_MIB: u64 = 1024;

const PLAY: &str = "- hosts: all\n  gather_facts: false\n  tasks:\n    - debug: {msg: hi}\n";
const INVENTORY: &str = "all:\n  hosts:\n    h1: {ansible_connection: local}\n";

fn project() -> Project {
    let p = Project::new();
    p.file("site.yaml", PLAY).file("inv.yaml", INVENTORY);
    p
}

/// Runs kk bounded and checks the exit code and that every phrase is in its output.
fn expect(p: &Project, args: &[&str], code: i32, phrases: &[&str]) -> Run {
    let r = p.kk_bounded(args, SECS, MEM_MIB);
    assert_eq!(r.code, code, "kk {:?}\n{}", args, r.describe());
    let all = format!("{}{}", r.stdout, r.stderr);
    for want in phrases {
        assert!(
            all.contains(want),
            "kk {:?}: no {:?} in\n{}",
            args,
            want,
            r.describe()
        );
    }
    assert!(
        !all.contains("panicked"),
        "kk {:?} panicked\n{}",
        args,
        r.describe()
    );
    r
}

/// The lines of a 1 KB "billion laughs": ten strings, then nine levels of ten aliases of
/// the level before (10^9 strings once expanded).
fn laughs() -> Vec<String> {
    let mut lines = vec![format!("a0: &a0 [{}]", ["\"lol\""; 10].join(", "))];
    for i in 1..=9 {
        lines.push(format!(
            "a{i}: &a{i} [{}]",
            vec![format!("*a{}", i - 1); 10].join(", ")
        ));
    }
    lines
}

fn indented(lines: &[String], pad: &str) -> String {
    lines.iter().map(|l| format!("{pad}{l}\n")).collect()
}

#[test]
fn alias_bombs_are_refused_where_they_are() {
    let p = project();
    let bomb = laughs();
    let top = indented(&bomb, "");
    assert!(top.len() < 1100, "{}", top.len());
    p.file("bomb.yaml", &top);
    p.file(
        "play_bomb.yaml",
        &format!(
            "- hosts: all\n  gather_facts: false\n  vars:\n{}  tasks:\n    - debug: {{msg: hi}}\n",
            indented(&bomb, "    ")
        ),
    );
    p.file(
        "play_vars_files.yaml",
        "- hosts: all\n  gather_facts: false\n  vars_files: [bomb.yaml]\n  tasks:\n    - debug: {msg: hi}\n",
    );
    p.file(
        "inv_bomb.yaml",
        &format!(
            "all:\n  vars:\n{}  hosts:\n    h1: {{ansible_connection: local}}\n",
            indented(&bomb, "    ")
        ),
    );
    p.file(
        "config_bomb.yaml",
        &format!(
            "apiVersion: kubekey.kubesphere.io/v1\nkind: Config\nspec:\n{}",
            indented(&bomb, "  ")
        ),
    );
    // Merge keys multiply too: each level merges and aliases the one before.
    let mut merge = String::from("m0: &m0 {k0: 0, j0: 1}\n");
    for i in 1..=30 {
        merge.push_str(&format!(
            "m{i}: &m{i} {{k{i}: *m{p}, j{i}: *m{p}, <<: *m{p}}}\n",
            p = i - 1
        ));
    }
    p.file("merge_bomb.yaml", &merge);
    // A short string aliased into a very long list does not add up: but a long one does.
    let mut strings = format!("s: &s \"{}\"\nl:\n", "x".repeat(1 << 20));
    strings.push_str(&"  - *s\n".repeat(40));
    p.file("string_bomb.yaml", &strings);
    let why = "aliases expand too far";
    expect(
        &p,
        &["run", "play_bomb.yaml", "-i", "inv.yaml"],
        4,
        &[why, "play_bomb.yaml:9:"],
    );
    expect(
        &p,
        &["run", "play_vars_files.yaml", "-i", "inv.yaml"],
        4,
        &[why, "bomb.yaml:6:"],
    );
    expect(
        &p,
        &["run", "site.yaml", "-i", "inv_bomb.yaml"],
        4,
        &[why, "inv_bomb.yaml:8:"],
    );
    expect(
        &p,
        &["run", "site.yaml", "-i", "inv.yaml", "-e", "@bomb.yaml"],
        4,
        &[why, "bomb.yaml:6:"],
    );
    expect(
        &p,
        &[
            "run",
            "site.yaml",
            "-i",
            "inv.yaml",
            "-c",
            "config_bomb.yaml",
        ],
        4,
        &[why, "config_bomb.yaml:9:"],
    );
    expect(
        &p,
        &[
            "run",
            "site.yaml",
            "-i",
            "inv.yaml",
            "-e",
            "@merge_bomb.yaml",
        ],
        4,
        &[why, "merge_bomb.yaml:"],
    );
    expect(
        &p,
        &[
            "run",
            "site.yaml",
            "-i",
            "inv.yaml",
            "-e",
            "@string_bomb.yaml",
        ],
        4,
        &[why, "32 MiB", "string_bomb.yaml:"],
    );
    // Aliases within the budget still work.
    p.file("few.yaml", &indented(&bomb[..3], ""));
    p.file(
        "use_few.yaml",
        "- hosts: all\n  gather_facts: false\n  tasks:\n    - debug: {msg: \"{{ a2 | flatten | length }}\"}\n",
    );
    let r = expect(
        &p,
        &["run", "use_few.yaml", "-i", "inv.yaml", "-e", "@few.yaml"],
        0,
        &["100"],
    );
    assert!(
        r.stdout.contains("\"msg\": \"100\"") || r.stdout.contains("100"),
        "{}",
        r.describe()
    );
}

#[test]
fn wide_mappings_load_in_linear_time() {
    let p = project();
    let mut wide = String::new();
    // 300,000 keys: linear checks take seconds; the quadratic duplicate check this
    // replaced made 4.5·10^10 comparisons (minutes), past the deadline.
    for i in 0..300_000 {
        wide.push_str(&format!("k{i}: {i}\n"));
    }
    p.file("wide.yaml", &wide);
    let args = ["run", "site.yaml", "-i", "inv.yaml", "-e", "@wide.yaml"];
    let r = p.kk_bounded(&args, 60, MEM_MIB);
    assert_eq!(r.code, 0, "{}", r.describe());
    wide.push_str("k5: again\n");
    p.file("wide_dup.yaml", &wide);
    expect(
        &p,
        &["run", "site.yaml", "-i", "inv.yaml", "-e", "@wide_dup.yaml"],
        4,
        &["duplicate key `k5`", "wide_dup.yaml:300001:1"],
    );
    // Deep nesting is a located error, not a stack overflow.
    p.file("deep.yaml", &format!("{}1\n", "- ".repeat(20_000)));
    expect(
        &p,
        &["run", "site.yaml", "-i", "inv.yaml", "-e", "@deep.yaml"],
        4,
        &["nest more than 1000 deep", "deep.yaml:1:"],
    );
}

#[test]
fn endless_and_huge_files_stop_at_the_limit() {
    let p = project();
    let limit = "larger than kk's limit of 16 MiB";
    expect(
        &p,
        &["run", "site.yaml", "-i", "/dev/zero"],
        4,
        &[limit, "/dev/zero"],
    );
    expect(
        &p,
        &["run", "site.yaml", "-i", "inv.yaml", "-c", "/dev/zero"],
        4,
        &[limit, "/dev/zero"],
    );
    expect(
        &p,
        &["run", "site.yaml", "-i", "inv.yaml", "-e", "@/dev/zero"],
        4,
        &[limit, "/dev/zero"],
    );
    // A (sparse) 17 MiB file: playbook, vars_files, -e @.
    let big = p.path("big.yaml");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(17 << 20)
        .unwrap();
    expect(
        &p,
        &["run", "big.yaml", "-i", "inv.yaml"],
        4,
        &[limit, "big.yaml"],
    );
    p.file(
        "vars_files.yaml",
        "- hosts: all\n  gather_facts: false\n  vars_files: [big.yaml]\n  tasks:\n    - debug: {msg: hi}\n",
    );
    expect(
        &p,
        &["run", "vars_files.yaml", "-i", "inv.yaml"],
        4,
        &[limit, "big.yaml"],
    );
    p.file(
        "vars_zero.yaml",
        "- hosts: all\n  gather_facts: false\n  vars_files: [/dev/zero]\n  tasks:\n    - debug: {msg: hi}\n",
    );
    expect(
        &p,
        &["run", "vars_zero.yaml", "-i", "inv.yaml"],
        4,
        &[limit, "/dev/zero"],
    );
    // A lookup fails its task, not the run's memory.
    p.file(
        "lookup.yaml",
        "- hosts: all\n  gather_facts: false\n  tasks:\n    - name: zero\n      debug: {msg: \"{{ lookup('file', '/dev/zero') }}\"}\n    - name: big\n      debug: {msg: \"{{ lookup('file', 'big.yaml') }}\"}\n      ignore_errors: true\n",
    );
    expect(
        &p,
        &["run", "lookup.yaml", "-i", "inv.yaml"],
        2,
        &["lookup('file')", limit, "/dev/zero", "failed=1"],
    );
    p.file(
        "template.yaml",
        "- hosts: all\n  gather_facts: false\n  tasks:\n    - template: {src: /dev/zero, dest: \"{{ playbook_dir }}/out.txt\"}\n",
    );
    expect(
        &p,
        &["run", "template.yaml", "-i", "inv.yaml"],
        2,
        &["template:", limit, "failed=1"],
    );
    // The commands that load the config and inventory before their playbook stop the same way.
    expect(
        &p,
        &["create", "cluster", "--yes", "-c", "/dev/zero"],
        4,
        &[limit],
    );
    expect(&p, &["precheck", "-i", "/dev/zero"], 4, &[limit]);
}

/// Writes raw bytes into the project.
fn bytes(p: &Project, rel: &str, data: &[u8]) {
    let path = p.path(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, data).unwrap();
}

#[test]
fn non_utf8_bytes_are_located_and_a_bom_is_accepted() {
    let p = project();
    let must = "the file must be UTF-8";
    bytes(
        &p,
        "play.yaml",
        b"- hosts: all\n  gather_facts: false\n  tasks:\n    - debug: {msg: caf\xe9}\n",
    );
    expect(
        &p,
        &["run", "play.yaml", "-i", "inv.yaml"],
        4,
        &[must, "0xe9", "play.yaml:4:23"],
    );
    bytes(
        &p,
        "inv_latin1.yaml",
        b"all:\n  hosts:\n    h\xf61: {ansible_connection: local}\n",
    );
    expect(
        &p,
        &["run", "site.yaml", "-i", "inv_latin1.yaml"],
        4,
        &[must, "inv_latin1.yaml:3:6"],
    );
    bytes(&p, "vars.yaml", b"a: 1\nb: \xff\xfe\n");
    expect(
        &p,
        &["run", "site.yaml", "-i", "inv.yaml", "-e", "@vars.yaml"],
        4,
        &[must, "vars.yaml:2:4"],
    );
    bytes(
        &p,
        "config.yaml",
        b"kind: Config\nspec: {a: \"\xc3\x28\"}\n",
    );
    expect(
        &p,
        &["run", "site.yaml", "-i", "inv.yaml", "-c", "config.yaml"],
        4,
        &[must, "config.yaml:2:12"],
    );
    p.file(
        "roles_play.yaml",
        "- hosts: all\n  gather_facts: false\n  roles: [r]\n",
    );
    bytes(&p, "roles/r/tasks/main.yaml", b"- debug: {msg: \"\x80\"}\n");
    expect(
        &p,
        &["run", "roles_play.yaml", "-i", "inv.yaml"],
        4,
        &[must, "main.yaml:1:17"],
    );
    p.file(
        "vf.yaml",
        "- hosts: all\n  gather_facts: false\n  vars_files: [vars.yaml]\n  tasks:\n    - debug: {msg: hi}\n",
    );
    expect(
        &p,
        &["run", "vf.yaml", "-i", "inv.yaml"],
        4,
        &[must, "vars.yaml:2:4"],
    );
    bytes(&p, "files/latin1.txt", b"ol\xe9\n");
    p.file(
        "lookup.yaml",
        "- hosts: all\n  gather_facts: false\n  tasks:\n    - debug: {msg: \"{{ lookup('file', 'latin1.txt') }}\"}\n",
    );
    expect(
        &p,
        &["run", "lookup.yaml", "-i", "inv.yaml"],
        2,
        &[must, "latin1.txt:1:3"],
    );
    // A template file, read when its task runs: the task fails at the template's place.
    bytes(&p, "templates/t.j2", b"line one\n{{ x }} \xe9t\xe9\n");
    p.file(
        "template.yaml",
        "- hosts: all\n  gather_facts: false\n  tasks:\n    - template: {src: t.j2, dest: \"{{ playbook_dir }}/out.txt\"}\n",
    );
    expect(
        &p,
        &["run", "template.yaml", "-i", "inv.yaml"],
        2,
        &[must, "templates/t.j2:2:9", "failed=1"],
    );
    // A byte order mark is dropped, as Ansible does.
    let bom = |s: &str| [b"\xEF\xBB\xBF".as_slice(), s.as_bytes()].concat();
    bytes(&p, "bom_play.yaml", &bom(PLAY));
    bytes(&p, "bom_inv.yaml", &bom(INVENTORY));
    bytes(&p, "bom_vars.yaml", &bom("greeting: hello\n"));
    bytes(&p, "bom_config.yaml", &bom("kind: Config\nspec: {x: 1}\n"));
    p.file(
        "greet.yaml",
        "- hosts: all\n  gather_facts: false\n  tasks:\n    - debug: {msg: \"{{ greeting }}\"}\n",
    );
    expect(
        &p,
        &[
            "run",
            "bom_play.yaml",
            "-i",
            "bom_inv.yaml",
            "-c",
            "bom_config.yaml",
        ],
        0,
        &["ok=1"],
    );
    expect(
        &p,
        &[
            "run",
            "greet.yaml",
            "-i",
            "inv.yaml",
            "-e",
            "@bom_vars.yaml",
        ],
        0,
        &["hello"],
    );
}

#[test]
fn bad_options_exit_5_and_an_empty_limit_exits_1() {
    let p = project();
    let run = ["run", "site.yaml", "-i", "inv.yaml"];
    let with = |extra: &[&str]| -> Vec<String> {
        run.iter().chain(extra).map(|s| s.to_string()).collect()
    };
    let cases: &[(&[&str], &[&str])] = &[
        (&["--bogus"], &["unexpected argument '--bogus'"]),
        (&["--output", "xml"], &["invalid value 'xml' for '--output"]),
        (
            &["--forks", "-1"],
            &["'--forks <FORKS>'", "from 1 to 10000"],
        ),
        (&["--forks", "0"], &["'--forks <FORKS>'", "from 1 to 10000"]),
        (&["--forks", "10001"], &["from 1 to 10000"]),
        (&["--forks", "18446744073709551616"], &["from 1 to 10000"]),
        (&["--forks", "many"], &["from 1 to 10000"]),
        (&["--limit", "web["], &["'--limit <LIMIT>'", "unclosed `[`"]),
        (&["--limit", ""], &["'--limit <LIMIT>'"]),
        (&["-c", "nope.yaml"], &["'--config <CONFIG>'", "nope.yaml"]),
        (&["-e", "@nope.yaml"], &["-e @nope.yaml", "nope.yaml"]),
        (&["-e", "k"], &["-e `k`"]),
    ];
    for (extra, phrases) in cases {
        let args = with(extra);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        expect(&p, &args, 5, phrases);
    }
    expect(
        &p,
        &["run", "site.yaml", "-i", "nope.yaml"],
        5,
        &["'--inventory <INVENTORY>'", "nope.yaml"],
    );
    // A directory is a source of inventories (Ansible's `-i dir/`): here the playbook is
    // one of its files, which is no inventory, so it does not load (exit 4, located).
    expect(&p, &["run", "site.yaml", "-i", "."], 4, &["site.yaml:"]);
    // A --set path as deep as a YAML file may nest, no deeper (it overflowed the stack).
    let deep = format!("{}=1", vec!["a"; 20_000].join("."));
    expect(
        &p,
        &["run", "site.yaml", "-i", "inv.yaml", "--set", &deep],
        5,
        &["nests more than 1000 deep"],
    );
    expect(&p, &["frobnicate"], 5, &["unrecognized subcommand"]);
    expect(&p, &[], 5, &["Usage"]);
    // Every command that runs a playbook takes the same options the same way.
    for cmd in [
        &["precheck"][..],
        &["create", "cluster", "--yes"],
        &["init", "os"],
    ] {
        let mut args = cmd.to_vec();
        args.extend(["-i", "missing.yaml"]);
        expect(&p, &args, 5, &["'--inventory <INVENTORY>'", "missing.yaml"]);
        let mut args = cmd.to_vec();
        args.extend(["--forks", "0"]);
        expect(&p, &args, 5, &["from 1 to 10000"]);
    }
    expect(&p, &["--help"], 0, &["Usage"]);
    expect(&p, &["--version"], 0, &["kk"]);
    expect(&p, &["run", "--help"], 0, &["--forks"]);
    // A limit that matches nothing: Ansible's words and exit 1.
    let no_hosts =
        "Specified inventory, host pattern and/or --limit leaves us with no hosts to target.";
    for limit in ["web", "h9*", "all:!h1", "~^x"] {
        expect(
            &p,
            &["run", "site.yaml", "-i", "inv.yaml", "--limit", limit],
            1,
            &[no_hosts, limit],
        );
    }
    expect(
        &p,
        &["run", "site.yaml", "-i", "inv.yaml", "--limit", "h*"],
        0,
        &["ok=1"],
    );
}

#[test]
fn inventory_connection_values_are_checked_when_it_loads() {
    let p = project();
    let kubekey = |host: &str| {
        format!("apiVersion: kubekey.kubesphere.io/v1\nkind: Inventory\nspec:\n  hosts:\n    n1:\n{host}")
    };
    p.file(
        "kk_port.yaml",
        &kubekey("      connector: {host: 10.0.0.1, port: twenty-two}\n"),
    );
    p.file(
        "kk_range.yaml",
        &kubekey("      connector:\n        port: 65536\n"),
    );
    p.file(
        "kk_type.yaml",
        &kubekey("      connector: {type: telnet}\n"),
    );
    p.file(
        "an_port.yaml",
        "all:\n  vars:\n    ansible_port: -22\n  hosts:\n    h1:\n",
    );
    p.file(
        "an_conn.yaml",
        "all:\n  children:\n    web:\n      hosts:\n        h1: {ansible_connection: winrm}\n",
    );
    p.file("an_key.yaml", "all:\n  hosts:\n    h1:0:\n");
    let port = "is not a port number (a whole number from 1 to 65535)";
    let unknown = "unknown connection type";
    for (inv, phrases) in [
        ("kk_port.yaml", [port, "kk_port.yaml:6:41"]),
        ("kk_range.yaml", [port, "kk_range.yaml:7:15"]),
        ("kk_type.yaml", [unknown, "kk_type.yaml:6:25"]),
        ("an_port.yaml", [port, "an_port.yaml:3:19"]),
        ("an_conn.yaml", [unknown, "an_conn.yaml:5:34"]),
        ("an_key.yaml", [port, "an_key.yaml:3:5"]),
    ] {
        let r = expect(&p, &["run", "site.yaml", "-i", inv], 4, &phrases);
        assert!(!r.stdout.contains("UNREACHABLE"), "{}", r.describe());
    }
    // Host ranges cannot ask for millions of hosts: one key, or many keys together.
    p.file("ranges_mult.yaml", "all:\n  hosts:\n    h[0:999][0:999]:\n");
    let many: String = (0..20)
        .map(|i| format!("    h{i}x[00000:99999]:\n"))
        .collect();
    p.file("ranges_many.yaml", &format!("all:\n  hosts:\n{many}"));
    expect(
        &p,
        &["run", "site.yaml", "-i", "ranges_mult.yaml"],
        4,
        &["more than 100000 hosts", "ranges_mult.yaml:3:5"],
    );
    expect(
        &p,
        &["run", "site.yaml", "-i", "ranges_many.yaml"],
        4,
        &[
            "the inventory defines more than 100000 hosts",
            "ranges_many.yaml:4:5",
        ],
    );
    // Long chains of child groups stop at a depth; a group of 100,000 hosts loads in linear time.
    let mut chain = String::from("kind: Inventory\nspec:\n  hosts:\n    h1: {}\n  groups:\n");
    for i in 0..20_000 {
        chain.push_str(&format!("    g{i}: {{groups: [g{}]}}\n", i + 1));
    }
    chain.push_str("    g20000: {hosts: [h1]}\n");
    p.file("chain.yaml", &chain);
    expect(
        &p,
        &["run", "site.yaml", "-i", "chain.yaml"],
        4,
        &["child groups nest more than 64 deep", "chain.yaml:69:"],
    );
    p.file(
        "big_group.yaml",
        "all:\n  children:\n    web:\n      hosts:\n        h[00000:99999]:\n  vars: {ansible_connection: local}\n",
    );
    expect(
        &p,
        &[
            "run",
            "site.yaml",
            "-i",
            "big_group.yaml",
            "--limit",
            "h00001",
        ],
        0,
        &["ok=1"],
    );
    // 50,000 hosts written one per key (each key's place was found by walking the file).
    let listed: String = (0..50_000)
        .map(|i| format!("    n{i}: {{x: {i}}}\n"))
        .collect();
    p.file(
        "listed.yaml",
        &format!("all:\n  vars: {{ansible_connection: local}}\n  hosts:\n{listed}"),
    );
    expect(
        &p,
        &["run", "site.yaml", "-i", "listed.yaml", "--limit", "n1"],
        0,
        &["ok=1"],
    );
    // A templated value is checked once rendered: the host fails, it is not unreachable.
    p.file(
        "templated.yaml",
        "all:\n  hosts:\n    h1: {ansible_connection: ssh, ansible_host: 127.0.0.1, ansible_port: \"{{ p }}\"}\n    h2: {ansible_connection: \"{{ c }}\"}\n  vars: {p: not-a-port, c: docker}\n",
    );
    let r = expect(
        &p,
        &["run", "site.yaml", "-i", "templated.yaml"],
        2,
        &[
            "host h1: port \"not-a-port\" ",
            "host h2: unknown connection type `docker`",
        ],
    );
    assert!(r.stdout.contains("unreachable=0"), "{}", r.describe());
}

#[test]
fn a_nul_byte_is_an_argument_error_not_a_connection_error() {
    let p = project();
    p.file(
        "nul.yaml",
        r#"- hosts: all
  gather_facts: false
  tasks:
    - {name: command, command: "echo a\0b", ignore_errors: true}
    - {name: shell, shell: "echo x > /tmp/kk\0nul", ignore_errors: true}
    - {name: templated, command: "echo {{ 'x\x00y' }}", ignore_errors: true}
    - {name: copy, copy: {content: x, dest: "/tmp/kk\0nul"}, ignore_errors: true}
    - {name: stat, stat: {path: "/tmp/\0"}, ignore_errors: true}
    - {name: file, file: {path: "/tmp/kk\0x", state: absent}, ignore_errors: true}
    - {name: env, command: "true", environment: {X: "a\0b"}, ignore_errors: true}
    - {name: fetch, fetch: {src: "/etc/\0hosts", dest: out/}, ignore_errors: true}
    - name: last
      command: "printf '%s' done"
"#,
    );
    let r = expect(
        &p,
        &["run", "nul.yaml", "-i", "inv.yaml", "--output", "json"],
        0,
        &[
            "the command holds a NUL byte (in `'a\\\\0b'`)",
            "environment variable `X` holds a NUL byte",
        ],
    );
    for task in [
        "command",
        "shell",
        "templated",
        "copy",
        "stat",
        "file",
        "env",
        "fetch",
    ] {
        let res = r.result(task, "h1");
        assert_eq!(res["status"], "failed", "{task}: {res}");
        let msg = res["result"]["msg"].as_str().unwrap_or_default();
        assert!(
            msg.contains("holds a NUL byte") && msg.contains("invalid module arguments"),
            "{task}: {msg}"
        );
    }
    assert_eq!(r.status("last", "h1"), "changed", "{}", r.describe());
    assert_eq!(r.recap("h1")["unreachable"], 0, "{}", r.describe());
}
