//! Python string methods minijinja_contrib's pycompat lacks, which Ansible users call:
//! `rsplit`, `partition`, `rpartition`, `zfill`, `ljust`, `rjust`, `removeprefix`,
//! `removesuffix`, `swapcase`.

use minijinja::{Error, ErrorKind, Value};

fn int_arg(method: &str, v: Option<&Value>) -> Result<Option<i64>, Error> {
    match v {
        None => Ok(None),
        Some(v) if v.is_none() => Ok(None),
        Some(v) => i64::try_from(v.clone()).map(Some).map_err(|_| {
            Error::new(
                ErrorKind::InvalidOperation,
                format!("str.{}: expected an integer, got {}", method, v),
            )
        }),
    }
}

fn str_arg(method: &str, v: Option<&Value>) -> Result<Option<String>, Error> {
    match v {
        None => Ok(None),
        Some(v) if v.is_none() => Ok(None),
        Some(v) => v.as_str().map(|s| Some(s.to_string())).ok_or_else(|| {
            Error::new(
                ErrorKind::InvalidOperation,
                format!("str.{}: expected a string, got {}", method, v),
            )
        }),
    }
}

/// Python's `str.rsplit(sep=None, maxsplit=-1)`.
fn rsplit(s: &str, sep: Option<&str>, maxsplit: i64) -> Result<Vec<String>, Error> {
    let max = if maxsplit < 0 {
        usize::MAX
    } else {
        maxsplit as usize
    };
    match sep {
        Some("") => Err(Error::new(ErrorKind::InvalidOperation, "empty separator")),
        Some(sep) => {
            let mut parts: Vec<String> = s
                .rsplitn(max.saturating_add(1), sep)
                .map(str::to_string)
                .collect();
            parts.reverse();
            Ok(parts)
        }
        None => {
            let mut out = Vec::new();
            let mut rest = s.trim_end();
            while !rest.is_empty() {
                if out.len() == max {
                    out.push(rest.to_string());
                    break;
                }
                match rest.rfind(char::is_whitespace) {
                    Some(i) => {
                        let ws = rest[i..].chars().next().map_or(1, char::len_utf8);
                        out.push(rest[i + ws..].to_string());
                        rest = rest[..i].trim_end();
                    }
                    None => {
                        out.push(rest.to_string());
                        rest = "";
                    }
                }
            }
            out.reverse();
            Ok(out)
        }
    }
}

/// The method's result, or None when it is not one of these.
pub(crate) fn call(value: &Value, method: &str, args: &[Value]) -> Result<Option<Value>, Error> {
    let Some(s) = value.as_str() else {
        return Ok(None);
    };
    let strs = |v: Vec<String>| Value::from(v.into_iter().map(Value::from).collect::<Vec<_>>());
    Ok(Some(match method {
        "rsplit" => {
            let sep = str_arg(method, args.first())?;
            let max = int_arg(method, args.get(1))?.unwrap_or(-1);
            strs(rsplit(s, sep.as_deref(), max)?)
        }
        "partition" | "rpartition" => {
            let sep = str_arg(method, args.first())?.unwrap_or_default();
            if sep.is_empty() {
                return Err(Error::new(ErrorKind::InvalidOperation, "empty separator"));
            }
            let found = if method == "partition" {
                s.split_once(sep.as_str())
            } else {
                s.rsplit_once(sep.as_str())
            };
            let parts = match (found, method) {
                (Some((a, b)), _) => vec![a.to_string(), sep.clone(), b.to_string()],
                (None, "partition") => vec![s.to_string(), String::new(), String::new()],
                (None, _) => vec![String::new(), String::new(), s.to_string()],
            };
            strs(parts)
        }
        "zfill" | "ljust" | "rjust" => {
            let width = int_arg(method, args.first())?.unwrap_or(0).max(0) as usize;
            let width = super::limits::width(method, "width", width as i128)?;
            let fill = str_arg(method, args.get(1))?
                .and_then(|f| f.chars().next())
                .unwrap_or(' ');
            let len = s.chars().count();
            if len >= width {
                return Ok(Some(Value::from(s)));
            }
            let pad = width - len;
            Value::from(match method {
                "ljust" => format!("{}{}", s, fill.to_string().repeat(pad)),
                "rjust" => format!("{}{}", fill.to_string().repeat(pad), s),
                _ => match s.strip_prefix(['-', '+']) {
                    Some(rest) => format!("{}{}{}", &s[..1], "0".repeat(pad), rest),
                    None => format!("{}{}", "0".repeat(pad), s),
                },
            })
        }
        "removeprefix" => {
            let p = str_arg(method, args.first())?.unwrap_or_default();
            Value::from(s.strip_prefix(p.as_str()).unwrap_or(s))
        }
        "removesuffix" => {
            let p = str_arg(method, args.first())?.unwrap_or_default();
            Value::from(s.strip_suffix(p.as_str()).unwrap_or(s))
        }
        "swapcase" => Value::from(
            s.chars()
                .flat_map(|c| {
                    if c.is_uppercase() {
                        c.to_lowercase().collect::<Vec<_>>()
                    } else {
                        c.to_uppercase().collect::<Vec<_>>()
                    }
                })
                .collect::<String>(),
        ),
        _ => return Ok(None),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rsplit_like_python() {
        assert_eq!(rsplit("a.b.c", Some("."), 1).unwrap(), ["a.b", "c"]);
        assert_eq!(rsplit("a.b.c", Some("."), -1).unwrap(), ["a", "b", "c"]);
        assert_eq!(rsplit("  a b  c  ", None, 1).unwrap(), ["  a b", "c"]);
        assert_eq!(rsplit("  a b  c  ", None, -1).unwrap(), ["a", "b", "c"]);
        assert_eq!(rsplit("", None, -1).unwrap(), Vec::<String>::new());
    }
}
