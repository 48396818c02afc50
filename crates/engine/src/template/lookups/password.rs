//! The `password` lookup: reads a password kept in a controller file, or makes a random
//! one and keeps it there (mode 0600, in a 0700 directory), as Ansible does. With `seed`
//! the password is the one Python's `random.Random(seed)` picks, so kk and Ansible make
//! the same password from the same seed.

use std::path::{Path, PathBuf};

use minijinja::value::Kwargs;
use minijinja::{Error, State, Value};

use super::{term_str, var_str};
use crate::template::filters::pyrandom::PyRandom;
use crate::template::filters::{fail, py_str};

const ASCII_LOWER: &str = "abcdefghijklmnopqrstuvwxyz";
const ASCII_UPPER: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
const DIGITS: &str = "0123456789";
const PUNCTUATION: &str = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~";

/// Python's `string` module constants, which `chars=` names.
fn string_constant(name: &str) -> Option<String> {
    Some(match name {
        "ascii_letters" => format!("{}{}", ASCII_LOWER, ASCII_UPPER),
        "ascii_lowercase" => ASCII_LOWER.into(),
        "ascii_uppercase" => ASCII_UPPER.into(),
        "digits" => DIGITS.into(),
        "hexdigits" => "0123456789abcdefABCDEF".into(),
        "octdigits" => "01234567".into(),
        "punctuation" => PUNCTUATION.into(),
        "whitespace" => " \t\n\r\x0b\x0c".into(),
        "printable" => format!(
            "{}{}{}{}{}",
            DIGITS, ASCII_LOWER, ASCII_UPPER, PUNCTUATION, " \t\n\r\x0b\x0c"
        ),
        _ => return None,
    })
}

/// The candidate characters from the `chars` specs (quotes removed, as Ansible does).
fn candidate_chars(specs: &[String]) -> String {
    specs
        .iter()
        .map(|s| string_constant(s).unwrap_or_else(|| s.clone()))
        .collect::<String>()
        .replace(['"', '\''], "")
}

/// `chars=a,b` split on commas; `,,` means a comma.
fn split_chars(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    if s.contains(",,") {
        out.push(",".to_string());
    }
    out.extend(
        s.replace(",,", ",")
            .split(',')
            .filter(|c| !c.is_empty())
            .map(str::to_string),
    );
    out
}

fn random_password(length: usize, chars: &[char], seed: Option<&Value>) -> Result<String, Error> {
    if chars.is_empty() {
        return Err(fail(
            "lookup('password'): no characters to choose from (chars)",
        ));
    }
    if chars.len() >= 1 << 31 {
        return Err(fail("lookup('password'): too many characters"));
    }
    let mut rng = seed.map(PyRandom::seeded);
    (0..length)
        .map(|_| Ok(chars[crate::template::filters::pyrandom::below(&mut rng, chars.len())?]))
        .collect()
}

/// The password part of a password file (`pw salt=… ident=…` keeps only `pw`).
fn stored_password(content: &str) -> &str {
    match content.rfind(" salt=") {
        Some(p) => &content[..p],
        None => content,
    }
}

fn write_password_file(path: &Path, content: &str) -> Result<(), Error> {
    use std::io::Write;
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    let err = |e: std::io::Error| {
        fail(format!(
            "lookup('password'): cannot write {}: {}",
            path.display(),
            e
        ))
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(err)?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(err)?;
    tmp.as_file()
        .set_permissions(std::fs::Permissions::from_mode(0o600))
        .map_err(err)?;
    tmp.write_all(content.as_bytes()).map_err(err)?;
    tmp.write_all(b"\n").map_err(err)?;
    tmp.persist(path).map_err(|e| err(e.error))?;
    Ok(())
}

/// Held while a password file is read or made.
static FILE_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

pub(super) fn password(
    state: &State,
    terms: &[Value],
    kwargs: &Kwargs,
) -> Result<Vec<Value>, Error> {
    let kw_length = kwargs.get::<Option<Value>>("length")?;
    let kw_chars = kwargs.get::<Option<Value>>("chars")?;
    let kw_seed = kwargs.get::<Option<Value>>("seed")?;
    for unsupported in ["encrypt", "ident"] {
        if kwargs
            .get::<Option<Value>>(unsupported)?
            .is_some_and(|v| !v.is_none())
        {
            return Err(fail(format!(
                "lookup('password'): '{}' is not supported by kk; hash the password with a filter instead",
                unsupported
            )));
        }
    }
    let mut out = Vec::new();
    for t in terms {
        let term = term_str("password", t)?;
        let (mut relpath, params) = match term.split_once(' ') {
            None => (term.clone(), serde_json::Map::new()),
            Some((first, rest)) => (first.to_string(), crate::project::kv::parse_kv(rest, false)),
        };
        let mut length = kw_length.as_ref().map(py_str);
        let mut chars: Option<Vec<String>> = match &kw_chars {
            None => None,
            Some(c) if c.as_str().is_some() => Some(split_chars(&py_str(c))),
            Some(c) => Some(c.try_iter()?.map(|v| py_str(&v)).collect()),
        };
        let mut seed = kw_seed.clone().filter(|s| !s.is_none());
        for (k, v) in &params {
            let v = match v {
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            match k.as_str() {
                "_raw_params" => {
                    relpath = format!("{} {}", relpath, v);
                    if !term.starts_with(&relpath) {
                        return Err(fail(
                            "Unrecognized value after key=value parameters given to password lookup",
                        ));
                    }
                }
                "length" => length = Some(v),
                "chars" => chars = Some(split_chars(&v)),
                "seed" => seed = Some(Value::from(v)),
                "encrypt" | "ident" => {
                    return Err(fail(format!(
                        "lookup('password'): '{}' is not supported by kk; hash the password with a filter instead",
                        k
                    )))
                }
                other => {
                    return Err(fail(format!(
                        "Unrecognized parameter(s) given to password lookup: {}",
                        other
                    )))
                }
            }
        }
        let length: usize = match length {
            None => 20,
            Some(l) => l.trim().parse().map_err(|_| {
                fail(format!(
                    "lookup('password'): length must be an integer, got '{}'",
                    l
                ))
            })?,
        };
        crate::template::limits::width("lookup('password')", "length", length as i128)
            .map_err(|e| fail(e.to_string()))?;
        let chars: Vec<char> = match chars {
            None => format!("{}{}{}.,:-_", ASCII_LOWER, ASCII_UPPER, DIGITS)
                .chars()
                .collect(),
            Some(specs) => candidate_chars(&specs).chars().collect(),
        };
        let path = {
            let p = PathBuf::from(crate::template::filters::expand_user(&relpath));
            if p.is_absolute() {
                p
            } else {
                match var_str(state, "playbook_dir") {
                    Some(d) => Path::new(&d).join(p),
                    None => p,
                }
            }
        };
        let devnull = path == Path::new("/dev/null");
        // Hosts render at the same time: one of them makes the file, the others read it
        // (Ansible's lock file serves the same end), so every host gets one password.
        let _guard = FILE_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        let existing = if devnull || !path.exists() {
            None
        } else {
            let text = std::fs::read_to_string(&path).map_err(|e| {
                fail(format!(
                    "lookup('password'): cannot read {}: {}",
                    path.display(),
                    e
                ))
            })?;
            Some(stored_password(text.trim_end()).to_string())
        };
        let pw = match existing {
            Some(pw) => pw,
            None => {
                let pw = random_password(length, &chars, seed.as_ref())?;
                if !devnull {
                    write_password_file(&path, &pw)?;
                }
                pw
            }
        };
        out.push(Value::from(pw));
    }
    Ok(out)
}
