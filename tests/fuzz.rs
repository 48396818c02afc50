//! A short seeded fuzzing run of kk's parsers (issue 15): the YAML loader, the
//! inventory loaders, templating with Ansible's filters, host patterns and the `k=v`
//! splitter, through the same entry points as the cargo-fuzz targets
//! (`kk_engine::fuzzing`). Inputs are mutations of the repository's own playbooks,
//! inventories and templates (fixed seed, so every run is the same); each must not
//! panic, must finish in bounded time, and a load error must carry file:line:col.
//!
//! The run happens in a child process with its address space capped (`prlimit --as`)
//! and a deadline, so a runaway allocation or a hang fails the test instead of the
//! machine. `KK_FUZZ_ITERATIONS` (per target) and `KK_FUZZ_SEED` make a longer or
//! different run, `KK_FUZZ_TARGETS=template,filter` a narrower one. A crash it ever
//! found is kept under `tests/fuzz/regressions/<target>/` and replayed first.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use kk_engine::fuzzing::Target;

/// Inputs per target in the normal suite (seconds in a debug build).
const ITERATIONS: usize = 300;
/// The child's address-space cap and deadline.
const MEM_MIB: u64 = 4096;
const DEADLINE_SECS: u64 = 300;
/// One input taking longer than this is reported as a hang.
const SLOW: Duration = Duration::from_secs(5);

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Runs the seeded fuzzing in a bounded child process (this test binary, running
/// [`seeded_child`]) and checks it finished cleanly.
#[test]
fn seeded_run() {
    let exe = std::env::current_exe().expect("test binary");
    let started = Instant::now();
    let mut child = std::process::Command::new("prlimit")
        .arg(format!("--as={}", MEM_MIB * 1024 * 1024))
        .arg("--")
        .arg(exe)
        .args([
            "fuzz::seeded_child",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("KK_FUZZ_CHILD", "1")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("run the seeded fuzzing under prlimit");
    let mut out = child.stdout.take().expect("stdout");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut out, &mut s);
        s
    });
    let deadline = started + Duration::from_secs(DEADLINE_SECS);
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the seeded fuzzing run hung: still running after {DEADLINE_SECS} s");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let out = reader.join().unwrap_or_default();
    print!("{out}");
    if !status.success() {
        for target in Target::ALL {
            let p = root()
                .join("target/fuzz-failures")
                .join(target.name())
                .join("in-flight");
            if let Ok(input) = std::fs::read(&p) {
                println!(
                    "fuzz: {} aborted the run on the input saved as {}: {:?}",
                    target.name(),
                    p.display(),
                    String::from_utf8_lossy(&input)
                        .chars()
                        .take(300)
                        .collect::<String>()
                );
            }
        }
    }
    assert!(
        status.success() && out.contains("fuzz: done"),
        "the seeded fuzzing run failed ({status}); see its output above"
    );
}

/// The run itself; does nothing unless started by [`seeded_run`].
#[test]
fn seeded_child() {
    if std::env::var_os("KK_FUZZ_CHILD").is_none() {
        return;
    }
    let iterations = env_num("KK_FUZZ_ITERATIONS", ITERATIONS as u64) as usize;
    let seed = env_num("KK_FUZZ_SEED", 15);
    let corpus = Corpus::load(&root());
    let mut failures = Vec::new();
    let mut total = 0usize;
    let started = Instant::now();
    // Keep panics quiet: each one is reported with its input below.
    std::panic::set_hook(Box::new(|info| {
        if let Some(l) = info.location() {
            *PANIC_AT.lock().unwrap_or_else(|e| e.into_inner()) = l.to_string();
        }
    }));
    // `KK_FUZZ_TARGETS=pattern,split` runs only those.
    let only = std::env::var("KK_FUZZ_TARGETS").unwrap_or_default();
    for target in Target::ALL {
        if !only.is_empty() && !only.split(',').any(|t| t == target.name()) {
            continue;
        }
        let t0 = Instant::now();
        let mut inputs = regressions(target);
        let replayed = inputs.len();
        let mut rng = fastrand::Rng::with_seed(seed ^ target as u64);
        let seeds = corpus.seeds(target);
        for _ in 0..iterations {
            inputs.push(mutate(&mut rng, &seeds));
        }
        let mut slowest = Duration::ZERO;
        // The input in flight is on disk, so one that aborts the process (a stack
        // overflow) is still found: the parent reports it.
        let in_flight = root().join("target/fuzz-failures").join(target.name());
        let _ = std::fs::create_dir_all(&in_flight);
        let in_flight = in_flight.join("in-flight");
        for input in &inputs {
            let _ = std::fs::write(&in_flight, input);
            let t = Instant::now();
            let result = std::panic::catch_unwind(|| target.run(input));
            let took = t.elapsed();
            slowest = slowest.max(took);
            let problem = match result {
                Ok(Ok(())) if took > SLOW => Some(format!("took {:?}", took)),
                Ok(Ok(())) => None,
                Ok(Err(e)) => Some(e),
                Err(p) => Some(format!(
                    "panicked at {}: {}",
                    PANIC_AT.lock().unwrap_or_else(|e| e.into_inner()),
                    panic_text(&p)
                )),
            };
            if let Some(p) = problem {
                failures.push(report(target, input, &p));
            }
        }
        let _ = std::fs::remove_file(&in_flight);
        total += inputs.len();
        println!(
            "fuzz: {:9} {} inputs ({} regressions, {} seeds) in {:.1?}, slowest {:.1?}",
            target.name(),
            inputs.len(),
            replayed,
            seeds.len(),
            t0.elapsed(),
            slowest
        );
    }
    let _ = std::panic::take_hook();
    println!(
        "fuzz: {} inputs, seed {}, {:.1?}, {} failures",
        total,
        seed,
        started.elapsed(),
        failures.len()
    );
    for f in failures.iter().take(20) {
        println!("{f}");
    }
    assert!(failures.is_empty(), "{} inputs failed", failures.len());
    println!("fuzz: done");
}

/// Where the last panic happened (the quiet panic hook records it).
static PANIC_AT: std::sync::Mutex<String> = std::sync::Mutex::new(String::new());

fn env_num(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn panic_text(p: &Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "(no message)".into())
}

/// Saves a failing input under target/fuzz-failures and describes it.
fn report(target: Target, input: &[u8], problem: &str) -> String {
    let dir = root().join("target/fuzz-failures").join(target.name());
    let _ = std::fs::create_dir_all(&dir);
    let name = format!("{:016x}", fnv(input));
    let _ = std::fs::write(dir.join(&name), input);
    let preview: String = String::from_utf8_lossy(input).chars().take(160).collect();
    format!(
        "fuzz: {} FAILED ({}): {}\n  input saved as target/fuzz-failures/{}/{}: {:?}",
        target.name(),
        input.len(),
        problem,
        target.name(),
        name,
        preview
    )
}

fn fnv(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf29ce484222325, |h, b| {
        (h ^ *b as u64).wrapping_mul(0x100000001b3)
    })
}

/// Inputs that once failed, replayed before the mutations.
fn regressions(target: Target) -> Vec<Vec<u8>> {
    let dir = root().join("tests/fuzz/regressions").join(target.name());
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    files.sort();
    files
        .iter()
        .filter(|p| p.extension().is_none_or(|e| e != "md"))
        .filter(|p| {
            !p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with('.'))
        })
        .filter_map(|p| std::fs::read(p).ok())
        .collect()
}

/// The repository's playbooks, inventories and templates, as seeds.
struct Corpus {
    yaml: Vec<Vec<u8>>,
    inventories: Vec<Vec<u8>>,
    templates: Vec<Vec<u8>>,
    args: Vec<Vec<u8>>,
}

impl Corpus {
    fn load(root: &Path) -> Corpus {
        let mut files = Vec::new();
        for dir in [
            "tests/oracle",
            "tests/fixtures",
            "playbooks",
            "roles",
            "builtin",
            "examples",
            "crates/engine/tests/fixtures/inventory",
        ] {
            walk(&root.join(dir), &mut files);
        }
        files.sort();
        let mut c = Corpus {
            yaml: Vec::new(),
            inventories: Vec::new(),
            templates: Vec::new(),
            args: Vec::new(),
        };
        for f in &files {
            let Ok(text) = std::fs::read_to_string(f) else {
                continue;
            };
            let name = f.to_string_lossy();
            if name.ends_with(".j2") {
                c.templates.push(text.into_bytes());
                continue;
            }
            if name.contains("inventor") || text.contains("kind: Inventory") {
                c.inventories.push(text.clone().into_bytes());
            }
            for line in text.lines() {
                let value = line.split_once(": ").map(|(_, v)| v).unwrap_or(line).trim();
                if value.contains("{{") || value.contains("{%") {
                    c.templates.push(unquote(value).as_bytes().to_vec());
                } else if value.contains('=') && !value.contains(": ") {
                    c.args.push(value.as_bytes().to_vec());
                }
            }
            c.yaml.push(text.into_bytes());
        }
        c.templates.sort();
        c.templates.dedup();
        c.args.sort();
        c.args.dedup();
        c
    }

    fn seeds(&self, target: Target) -> Vec<Vec<u8>> {
        let lines = |v: &[&str]| v.iter().map(|s| s.as_bytes().to_vec()).collect::<Vec<_>>();
        match target {
            Target::Yaml => self.yaml.clone(),
            Target::Inventory => self.inventories.clone(),
            Target::Template => self.templates.clone(),
            Target::Filter => {
                // Two picking bytes, then argument text.
                let mut out = Vec::new();
                for (i, a) in FILTER_ARGS.iter().enumerate() {
                    for pick in 0..8u8 {
                        let mut v = vec![pick.wrapping_mul(37).wrapping_add(i as u8), i as u8];
                        v.extend_from_slice(a.as_bytes());
                        out.push(v);
                    }
                }
                out
            }
            Target::Pattern => lines(&[
                "all",
                "k8s:&etcd",
                "k8s:!node2",
                "node[1:2]",
                "~node\\d",
                "db-*",
                "k8s[0]",
                "k8s[-1]",
                "k8s[1:]",
                "all,!localhost",
                "etcd[0:10000000000000000000]",
                "node[9223372036854775807]",
                "k8s[-9223372036854775808]",
                "*",
                "",
            ]),
            Target::Split => {
                let mut v = self.args.clone();
                v.extend(lines(&[
                    "a=1 b='x y' c={{ d | e }}",
                    "cmd='echo \"{{ x }}\"' chdir=/tmp",
                    "a=\\\nb=2",
                    "{% if x %}y=1{% endif %} z=2",
                ]));
                v
            }
        }
    }
}

/// Argument texts for the filter target: numbers at the edges among ordinary ones.
const FILTER_ARGS: &[&str] = &[
    "",
    "2",
    "10**12",
    "width=10**12",
    "indent=10**12",
    "-1",
    "2**63",
    "-2**63",
    "1e308",
    "'%10000000000s'",
    "'%.1000000000f'",
    "repeat=10**6",
    "prefix_count=10**12",
    "length=10**18",
    "'x' * 10**8",
    "start=9223372036854775806, end=9223372036854775807",
    "'start=-9223372036854775808 end=9223372036854775807 stride=9223372036854775807'",
    "'count=1000000000000000000'",
    "'0-9223372036854775807/9223372036854775807'",
    "'a', 'b'",
    "[1, 2], [3]",
    "{'a': {'b': 1}}, recursive=true",
    "'(.*)+$', '\\\\1'",
    "'sha512'",
    "'prefix'",
    "32",
    "'10.0.0.0/8'",
    "-9223372036854775808",
];

fn unquote(s: &str) -> &str {
    for q in ['"', '\''] {
        if let Some(inner) = s.strip_prefix(q).and_then(|r| r.strip_suffix(q)) {
            return inner;
        }
    }
    s
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            walk(&p, out);
        } else if p
            .extension()
            .is_some_and(|x| ["yml", "yaml", "j2"].contains(&x.to_string_lossy().as_ref()))
            && e.metadata().is_ok_and(|m| m.len() < 64 * 1024)
        {
            out.push(p);
        }
    }
}

/// Numbers at the edges, spliced in where a number was.
const EXTREMES: &[&str] = &[
    "9223372036854775807",
    "-9223372036854775808",
    "18446744073709551616",
    "1e308",
    "-0",
    "0",
    "nan",
    "1000000000000",
    "4294967296",
    "0x7fffffffffffffff",
    "99999999999999999999999",
];

/// One mutated input: a seed (or two spliced), then one to four mutations.
fn mutate(rng: &mut fastrand::Rng, seeds: &[Vec<u8>]) -> Vec<u8> {
    let mut v = if seeds.is_empty() {
        Vec::new()
    } else {
        seeds[rng.usize(..seeds.len())].clone()
    };
    for _ in 0..rng.usize(1..=4) {
        let len = v.len();
        match rng.u8(..9) {
            // Flip a bit.
            0 if len > 0 => {
                let i = rng.usize(..len);
                v[i] ^= 1 << rng.u8(..8);
            }
            // Insert a byte, often a structural one.
            1 => {
                let b = *rng.choice(b"{}[]:-'\"|>&*!%#\n \t\\=,.0").unwrap_or(&b'x');
                let b = if rng.bool() { b } else { rng.u8(..) };
                v.insert(rng.usize(..=len), b);
            }
            // Delete a range.
            2 if len > 0 => {
                let a = rng.usize(..len);
                let b = (a + rng.usize(..=16.min(len - a))).min(len);
                v.drain(a..b);
            }
            // Duplicate a line.
            3 => {
                let text = String::from_utf8_lossy(&v).into_owned();
                let mut lines: Vec<&str> = text.split('\n').collect();
                let i = rng.usize(..lines.len());
                let line = lines[i];
                lines.insert(i, line);
                v = lines.join("\n").into_bytes();
            }
            // Splice in part of another seed.
            4 if !seeds.is_empty() => {
                let other = &seeds[rng.usize(..seeds.len())];
                if !other.is_empty() {
                    let a = rng.usize(..other.len());
                    let b = (a + rng.usize(..=256)).min(other.len());
                    let at = rng.usize(..=len);
                    v.splice(at..at, other[a..b].iter().copied());
                }
            }
            // Replace a number with one at the edges (or insert one).
            5 => {
                let x = rng.choice(EXTREMES).unwrap_or(&"0").as_bytes();
                match v.iter().position(|b| b.is_ascii_digit()) {
                    Some(start) if rng.bool() => {
                        let end = v[start..]
                            .iter()
                            .position(|b| !b.is_ascii_digit())
                            .map_or(v.len(), |e| start + e);
                        v.splice(start..end, x.iter().copied());
                    }
                    _ => {
                        let at = rng.usize(..=len);
                        v.splice(at..at, x.iter().copied());
                    }
                }
            }
            // Deep nesting: flow brackets, block indentation or Jinja parentheses.
            6 => {
                let depth = rng.usize(1..=3000);
                let (open, close): (&[u8], &[u8]) = match rng.u8(..4) {
                    0 => (b"[", b"]"),
                    1 => (b"{a: ", b"}"),
                    2 => (b"- ", b""),
                    _ => (b"(", b")"),
                };
                let at = rng.usize(..=len);
                let mut mid = Vec::new();
                for _ in 0..depth {
                    mid.extend_from_slice(open);
                }
                mid.push(b'1');
                for _ in 0..depth {
                    mid.extend_from_slice(close);
                }
                v.splice(at..at, mid);
            }
            // Repeat a chunk.
            7 if len > 0 => {
                let a = rng.usize(..len);
                let b = (a + rng.usize(1..=32)).min(len);
                let chunk = v[a..b].to_vec();
                for _ in 0..rng.usize(1..=64) {
                    v.splice(a..a, chunk.iter().copied());
                }
            }
            // Truncate.
            _ if len > 0 => v.truncate(rng.usize(..len)),
            _ => {}
        }
    }
    v
}
