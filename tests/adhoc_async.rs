//! `kk adhoc -B SECONDS -P POLL` (issue 16): the module runs as an async job, as with
//! Ansible's `ansible -B/-P`; output and exit codes are compared with the real `ansible`
//! of the oracle venv, job ids and times aside.

use crate::common::Project;

/// kk or ansible in the project, without deprecation warnings (kk prints none).
fn run(p: &Project, program: std::path::PathBuf, args: &[&str]) -> crate::common::Run {
    crate::cli_ansible::run_in(p, program, args, &[("ANSIBLE_DEPRECATION_WARNINGS", "0")])
}

/// The result lines without what differs from run to run (job ids, times) and without
/// Ansible's `[ERROR]` block (kk prints only the result lines, as README says).
fn normalised(out: &str) -> Vec<String> {
    let mut lines: Vec<String> = out
        .lines()
        .filter(|l| {
            !l.is_empty()
                && !l.contains("\"delta\"")
                && !l.contains("\"start\"")
                && !l.contains("\"end\"")
                && !l.starts_with("[ERROR]: ")
                && !l.starts_with("Origin: <adhoc")
                && !l.starts_with("{'action': ")
        })
        .map(without_job_ids)
        .map(|l| {
            // Ansible's answer to a job that outlives `-B` depends on its own speed: a
            // poll that arrives before its async wrapper kills the job (after 5 s at
            // the least) answers as kk does; a later one (CI under load) finds the
            // wrapper's "Timeout exceeded". Both mean the same, so both compare equal.
            if l == "Timeout exceeded" {
                "async task did not complete within the requested time - 1s".to_string()
            } else {
                l
            }
        })
        .collect();
    lines.sort();
    lines
}

/// `j123.45` (an async job id, also inside results_file paths) as `JOB`.
fn without_job_ids(line: &str) -> String {
    let b = line.as_bytes();
    let mut out = String::new();
    let mut i = 0;
    while i < b.len() {
        let digits = |from: usize| b[from..].iter().take_while(|c| c.is_ascii_digit()).count();
        if b[i] == b'j' {
            let n = digits(i + 1);
            if n > 0 && b.get(i + 1 + n) == Some(&b'.') {
                let m = digits(i + 2 + n);
                if m > 0 {
                    out.push_str("JOB");
                    i += 2 + n + m;
                    continue;
                }
            }
        }
        out.push(b[i] as char);
        i += 1;
    }
    out
}

#[test]
fn background_and_poll_print_and_exit_as_ansible() {
    let p = Project::new();
    let python = crate::common::oracle_venv_bin().join("python3");
    p.file(
        "inv.ini",
        &format!(
            "[all:vars]\nansible_connection=local\nansible_python_interpreter={}\n\n[web]\nh1\nh2\n",
            python.display()
        ),
    );
    for args in [
        &["web", "-a", "echo hi", "-B", "10", "-P", "1"][..],
        &["h1", "-a", "echo fired", "-B", "10", "-P", "0"],
        &["h1", "-a", "sleep 3", "-B", "1", "-P", "1"],
        &["h1", "-a", "false", "-B", "10", "-P", "1"],
        &[
            "h1",
            "-m",
            "shell",
            "-a",
            "echo out; echo err >&2",
            "-B",
            "10",
            "-P",
            "1",
        ],
        &["h1", "-a", "echo hi", "-P", "1"],
    ] {
        let mut kk_args = vec!["adhoc", "-i", "inv.ini", "--workdir", "wd"];
        kk_args.extend_from_slice(args);
        let k = run(&p, env!("CARGO_BIN_EXE_kk").into(), &kk_args);
        let mut a_args = vec!["-i", "inv.ini"];
        a_args.extend_from_slice(args);
        let a = run(
            &p,
            crate::common::oracle_venv_bin().join("ansible"),
            &a_args,
        );
        let what = args.join(" ");
        assert_eq!(
            k.code,
            a.code,
            "{what}: exit codes\nkk: {}\nansible: {}",
            k.describe(),
            a.describe()
        );
        assert_eq!(
            normalised(&k.stdout),
            normalised(&a.stdout),
            "{what}: output\n--- kk:\n{}\n--- ansible:\n{}",
            k.stdout,
            a.stdout
        );
    }
}
