//! `command`/`shell` loop items several to a round trip: one script runs each item as it
//! would run alone, and its output is split back into one result per item.

use super::{
    chrono_now, exec_failure, finish, parse_args, prepare, run, CommandArgs, Flavour, VALID,
};
use crate::ansible::shell_quote;
use crate::connect::ExecOutput;
use crate::error::{Error, ErrorKind, Result};
use crate::modules::{ModuleContext, ModuleResult, VarMap};

/// Arguments a batched item may use. Anything else (`creates`, `removes`, `stdin`, ...)
/// keeps the loop on the one-round-trip-per-item path, where those are handled.
const BATCHABLE: &[&str] = &[
    "_raw_params",
    "cmd",
    "argv",
    "chdir",
    "executable",
    "strip_empty_ends",
    "stdin_add_newline",
    "expand_argument_vars",
    "warn",
];

/// Whether a `command`/`shell` loop item with these templated arguments may run in one
/// remote script with its neighbours ([`run_batch`]) without any visible difference:
/// only plain arguments.
pub(super) fn batchable(args: &VarMap) -> bool {
    args.keys().all(|k| BATCHABLE.contains(&k.as_str()))
}

/// First line of a batch's output; the rc of each item follows on the same line.
const BATCH_MARK: &str = "__KK_BATCH__";
/// Printed when the batch could not start (no temp dir); nothing ran, so the caller
/// falls back to one round trip per item.
const NO_BATCH: &str = "__KK_NOBATCH__";

/// One script that runs each item in its own subshell (so `exit`/`cd` stay inside it),
/// its stdout/stderr into files of a fresh temp dir, then prints
/// `__KK_BATCH__ rc...`, the `wc -c` sizes of those files and their contents, and
/// removes the dir. Output is bounded as a single command's is ([`bounded`]): a file
/// longer than twice `keep` is cut on the host to its two ends around the marker, so
/// what kk reads back is bounded too. Extra processes per batch: mktemp, wc (twice),
/// cat, rm; none per item, and head/tail only for a file that is cut.
///
/// [`bounded`]: crate::connect::bounded
fn batch_script(items: &[String], keep: usize) -> String {
    let mut s = format!(
        "kk_d=$(mktemp -d 2>/dev/null) || {{ echo {}; exit 0; }}\n",
        NO_BATCH
    );
    for (i, body) in items.iter().enumerate() {
        s.push_str("(\n");
        s.push_str(body);
        s.push_str(&format!(
            "\n) >\"$kk_d/o{i}\" 2>\"$kk_d/e{i}\" </dev/null\nkk_r{i}=$?\n"
        ));
    }
    let rcs: Vec<String> = (0..items.len()).map(|i| format!("$kk_r{i}")).collect();
    let files: Vec<String> = (0..items.len())
        .flat_map(|i| [format!("\"$kk_d/o{i}\""), format!("\"$kk_d/e{i}\"")])
        .collect();
    // Cut what is too long (`wc` prints a `total` line when there are several files).
    s.push_str(&format!(
        "wc -c {files} | while read kk_n kk_f; do\n\
         [ \"$kk_f\" != total ] && [ \"$kk_n\" -gt {twice} ] || continue\n\
         {{ head -c {keep} \"$kk_f\"; printf {fmt} $((kk_n - {twice})); tail -c {keep} \"$kk_f\"; }} >\"$kk_f.t\" && mv \"$kk_f.t\" \"$kk_f\"\n\
         done\n",
        files = files.join(" "),
        twice = 2 * keep,
        fmt = shell_quote(&crate::connect::bounded::marker("%s", keep)),
    ));
    s.push_str(&format!("echo {} {}\n", BATCH_MARK, rcs.join(" ")));
    s.push_str(&format!("wc -c {}\n", files.join(" ")));
    s.push_str(&format!("cat {}\n", files.join(" ")));
    s.push_str("rm -rf \"$kk_d\"\n");
    s
}

/// Splits a batch's stdout back into one output per item; `Err` says what did not fit.
fn parse_batch(out: &[u8], n: usize) -> std::result::Result<Vec<ExecOutput>, String> {
    let mut rest = out;
    let mut line = || -> std::result::Result<String, String> {
        let end = rest
            .iter()
            .position(|b| *b == b'\n')
            .ok_or("output ended early")?;
        let l = String::from_utf8_lossy(&rest[..end]).into_owned();
        rest = &rest[end + 1..];
        Ok(l)
    };
    let head = line()?;
    let mut words = head.split_whitespace();
    if words.next() != Some(BATCH_MARK) {
        return Err(format!("expected `{}`, found `{}`", BATCH_MARK, head));
    }
    let rcs = words
        .map(|w| {
            w.parse::<i32>()
                .map_err(|_| format!("bad exit code `{}`", w))
        })
        .collect::<std::result::Result<Vec<_>, _>>()?;
    if rcs.len() != n {
        return Err(format!("expected {} exit codes, found {}", n, rcs.len()));
    }
    let mut sizes = Vec::with_capacity(2 * n);
    for _ in 0..2 * n {
        let l = line()?;
        let size = l
            .split_whitespace()
            .next()
            .and_then(|w| w.parse::<usize>().ok())
            .ok_or_else(|| format!("bad size line `{}`", l))?;
        sizes.push(size);
    }
    line()?; // wc's total
    if sizes.iter().sum::<usize>() != rest.len() {
        return Err(format!(
            "sizes add up to {} bytes but {} followed",
            sizes.iter().sum::<usize>(),
            rest.len()
        ));
    }
    let mut outs = Vec::with_capacity(n);
    for (i, rc) in rcs.into_iter().enumerate() {
        let (o, tail) = rest.split_at(sizes[2 * i]);
        let (e, tail) = tail.split_at(sizes[2 * i + 1]);
        rest = tail;
        outs.push(ExecOutput {
            rc,
            stdout: o.to_vec(),
            stderr: e.to_vec(),
        });
    }
    Ok(outs)
}

/// Runs several `command`/`shell` calls (loop items that passed [`batchable`]) in one
/// round trip, in order, each as it would run alone; one result per item, in order.
/// `start`/`end`/`delta` of each item are those of the whole batch. The outer `Err` is a
/// connection failure.
pub(super) async fn run_batch(
    flavour: Flavour,
    ctx: &ModuleContext,
    items: Vec<VarMap>,
) -> Result<Vec<Result<ModuleResult>>> {
    let module = flavour.name();
    if ctx.check_mode {
        let mut out = Vec::new();
        for raw in items {
            out.push(run(flavour, ctx, raw).await);
        }
        return Ok(out);
    }
    let mut results: Vec<Option<Result<ModuleResult>>> = Vec::new();
    // (index in results, result skeleton, strip_empty_ends, run by `exec`)
    let mut pending = Vec::new();
    let mut scripts = Vec::new();
    let mut raws = Vec::new();
    for raw in items {
        let a: CommandArgs = match parse_args(module, raw.clone(), VALID) {
            Ok(a) => a,
            Err(e) => {
                results.push(Some(Err(e)));
                continue;
            }
        };
        let expand = a.expand();
        match prepare(flavour, &a, expand) {
            Err(r) => results.push(Some(Ok(r))),
            Ok((body, res)) => {
                // The script the item would run alone; in a shell of its own where it
                // holds shell text or a `cd`, so syntax errors stay its own and messages
                // (with line numbers) read the same.
                let mut single = String::new();
                if let Some(dir) = &a.chdir {
                    single.push_str(&format!("cd {} || exit 1\n", shell_quote(dir)));
                }
                let direct = flavour == Flavour::Command && !body.contains('\n');
                if direct {
                    single.push_str(&format!("exec {}", body));
                } else {
                    single.push_str(&body);
                }
                let own_shell =
                    a.chdir.is_some() || (flavour == Flavour::Shell && a.executable.is_none());
                let script = if own_shell {
                    single.push('\n');
                    format!("exec /bin/sh -c {}", shell_quote(&single))
                } else {
                    single
                };
                pending.push((results.len(), res, a.strip_empty_ends.0, direct));
                scripts.push(script);
                raws.push(raw);
                results.push(None);
            }
        }
    }
    if !scripts.is_empty() {
        let start = chrono_now();
        let t0 = std::time::Instant::now();
        let keep = crate::connect::bounded::keep();
        let out = ctx.exec(batch_script(&scripts, keep), None).await?;
        let delta = t0.elapsed();
        let end = chrono_now();
        if String::from_utf8_lossy(&out.stdout).trim_end() == NO_BATCH {
            for ((i, _, _, _), raw) in pending.into_iter().zip(raws) {
                results[i] = Some(run(flavour, ctx, raw).await);
            }
        } else {
            match parse_batch(&out.stdout, scripts.len()) {
                Ok(outs) => {
                    for ((i, mut res, strip, direct), o) in pending.into_iter().zip(outs) {
                        finish(&mut res, &o, &start, &end, delta, strip);
                        if direct {
                            exec_failure(&mut res, &o);
                        }
                        results[i] = Some(Ok(res));
                    }
                }
                Err(why) => {
                    for (i, _, _, _) in pending {
                        results[i] = Some(Err(Error::new(
                            ErrorKind::Runtime,
                            format!(
                                "could not read the output of the batched commands: {} (rc {}, stderr: {})",
                                why,
                                out.rc,
                                String::from_utf8_lossy(&out.stderr).trim_end()
                            ),
                        )));
                    }
                }
            }
        }
    }
    Ok(results
        .into_iter()
        .map(|r| r.unwrap_or_else(|| Err(Error::new(ErrorKind::Runtime, "batched item lost"))))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::super::super::remote::testutil::{args, ctx};
    use super::super::{COMMAND, RAW, SHELL};
    use super::*;
    use crate::modules::Module;
    use serde_json::json;

    #[test]
    fn batch_output_framing() {
        let out =
            b"__KK_BATCH__ 0 3\n 2 /t/o0\n0 /t/e0\n      5 /t/o1\n3 /t/e1\n10 total\nhi\nb\n\0xyzE";
        let o = parse_batch(out, 2).unwrap();
        assert_eq!(
            (o[0].rc, &o[0].stdout[..], &o[0].stderr[..]),
            (0, &b"hi"[..], &b""[..])
        );
        assert_eq!(
            (o[1].rc, &o[1].stdout[..], &o[1].stderr[..]),
            (3, &b"\nb\n\0x"[..], &b"yzE"[..])
        );
        assert!(parse_batch(b"__KK_BATCH__ 0\n1 a\n0 b\n1 total\nxy", 1)
            .unwrap_err()
            .contains("sizes add up to 1"));
        assert!(parse_batch(b"oops\n", 1)
            .unwrap_err()
            .contains("expected `__KK_BATCH__`"));
        assert!(parse_batch(b"__KK_BATCH__ 0 1\n", 1).is_err());
        assert!(parse_batch(b"__KK_BATCH__ 0\n1 a\n", 1).is_err());
    }

    #[tokio::test]
    async fn batch_gives_what_single_runs_give() {
        let dir = tempfile::tempdir().unwrap();
        let c = ctx(dir.path(), json!({}));
        let d = dir.path().to_str().unwrap().to_string();
        let items = [
            (
                "shell",
                json!({"_raw_params": "echo a; echo e >&2; cd /; exit 3"}),
            ),
            (
                "shell",
                json!({"_raw_params": "pwd; printf 'x\\n\\n'", "chdir": d}),
            ),
            (
                "shell",
                json!({"_raw_params": "read l; echo \"[$l]\"; exit"}),
            ),
            ("shell", json!({"_raw_params": "  "})),
            ("shell", json!({"_raw_params": "if then"})),
            (
                "shell",
                json!({"_raw_params": "echo $0 x", "executable": "/bin/sh"}),
            ),
            (
                "command",
                json!({"argv": ["printf", "%s|", "$HOME", "a b"]}),
            ),
            ("command", json!({"_raw_params": "false"})),
            (
                "command",
                json!({"_raw_params": "true", "chdir": "/nonexistent-kk"}),
            ),
            ("command", json!({"_raw_params": "true", "bogus": 1})),
        ];
        for module in ["shell", "command"] {
            let list: Vec<_> = items.iter().filter(|(m, _)| *m == module).collect();
            let flavour = if module == "shell" {
                Flavour::Shell
            } else {
                Flavour::Command
            };
            let batch = run_batch(
                flavour,
                &c,
                list.iter().map(|(_, a)| args(a.clone())).collect(),
            )
            .await
            .unwrap();
            assert_eq!(batch.len(), list.len());
            for ((_, a), b) in list.iter().zip(batch) {
                let single = run(flavour, &c, args(a.clone())).await;
                let strip = |r: ModuleResult| {
                    let mut v = r.to_value();
                    for k in ["start", "end", "delta"] {
                        if let Some(x) = v.get_mut(k) {
                            *x = json!(x.is_null());
                        }
                    }
                    v
                };
                match (single, b) {
                    (Ok(s), Ok(b)) => assert_eq!(strip(s), strip(b), "{}", a),
                    (Err(s), Err(b)) => assert_eq!(s.message, b.message),
                    (s, b) => panic!("{}: {:?} vs {:?}", a, s.is_ok(), b.is_ok()),
                }
            }
        }
        assert!(batchable(&args(json!({"cmd": "x", "chdir": "/"}))));
        assert!(!batchable(&args(json!({"cmd": "x", "creates": "/"}))));
        assert!(COMMAND.batches() && SHELL.batches() && !RAW.batches());
        assert!(
            batch_script(&["true".into()], 1 << 20)
                .matches("mktemp")
                .count()
                == 1
        );
    }

    /// A batched item printing more than twice `keep` comes back as its two ends around
    /// the marker, as a single command's output does; a short one is whole.
    #[test]
    fn batch_output_is_bounded_on_the_host() {
        let items = [
            "seq 1 10000".to_string(),
            "echo short; seq 1 5000 >&2".to_string(),
        ];
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(batch_script(&items, 64))
            .output()
            .unwrap();
        let o = parse_batch(&out.stdout, 2).unwrap();
        let long = String::from_utf8_lossy(&o[0].stdout);
        let (head, tail) = (&long[..64], &long[long.len() - 64..]);
        assert!(head.starts_with("1\n2\n3\n") && tail.ends_with("9999\n10000\n"));
        let full = (1..=10000).map(|i| format!("{}\n", i)).collect::<String>();
        let marker = crate::connect::bounded::marker(full.len() - 128, 64);
        assert_eq!(long, format!("{}{}{}", head, marker, tail));
        assert_eq!(&o[1].stdout[..], b"short\n");
        assert!(String::from_utf8_lossy(&o[1].stderr).contains("bytes of output dropped here"));
    }
}
