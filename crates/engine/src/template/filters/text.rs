//! Text filters from Jinja2 and Ansible that minijinja lacks: `center`, `wordcount`,
//! `wordwrap`, `forceescape`, `strftime`.

use minijinja::value::Kwargs;
use minijinja::{Error, Value};

use super::{arg, fail, py_str};
use crate::template::limits;

/// Jinja2's `center(width=80)`: Python's `str.center`.
pub(super) fn center(value: &Value, width: Option<Value>) -> Result<String, Error> {
    let s = py_str(value);
    let width = match width {
        None => 80,
        Some(w) => i64::try_from(w.clone())
            .map_err(|_| fail(format!("center: width must be an integer, got {}", w)))?,
    };
    let width = limits::width("center", "width", width as i128)?;
    let len = s.chars().count();
    if width <= len {
        return Ok(s);
    }
    let marg = width - len;
    // CPython: left = marg / 2 + (marg & width & 1).
    let left = marg / 2 + (marg & width & 1);
    Ok(format!(
        "{}{}{}",
        " ".repeat(left),
        s,
        " ".repeat(marg - left)
    ))
}

/// Jinja2's `wordcount`: the number of `\w+` runs.
pub(super) fn wordcount(value: &Value) -> usize {
    let s = py_str(value);
    let mut n = 0;
    let mut in_word = false;
    for c in s.chars() {
        let w = c.is_alphanumeric() || c == '_';
        if w && !in_word {
            n += 1;
        }
        in_word = w;
    }
    n
}

/// Jinja2's `forceescape`: HTML escaping, whatever the value.
pub(super) fn forceescape(value: &Value) -> String {
    super::markup::escape(&py_str(value))
}

/// Jinja2's `wordwrap(width=79, break_long_words=True, wrapstring=None,
/// break_on_hyphens=True)`: each line wrapped as Python's textwrap does (words split on
/// whitespace; long words cut when allowed), lines joined with `wrapstring` ("\n").
pub(super) fn wordwrap(
    value: &Value,
    width: Option<Value>,
    break_long_words: Option<Value>,
    wrapstring: Option<Value>,
    kwargs: Kwargs,
) -> Result<String, Error> {
    let width = arg(width, &kwargs, "width")?;
    let break_long =
        arg(break_long_words, &kwargs, "break_long_words")?.is_none_or(|v| v.is_true());
    let wrapstring = arg(wrapstring, &kwargs, "wrapstring")?
        .filter(|v| !v.is_none())
        .map(|v| py_str(&v))
        .unwrap_or_else(|| "\n".into());
    let _ = kwargs.get::<Option<Value>>("break_on_hyphens")?;
    kwargs.assert_all_used()?;
    let width = match width {
        None => 79,
        Some(w) => i64::try_from(w.clone())
            .map_err(|_| fail(format!("wordwrap: width must be an integer, got {}", w)))?,
    };
    if width <= 0 {
        return Err(fail(format!(
            "wordwrap: invalid width {} (must be > 0)",
            width
        )));
    }
    let width = limits::width("wordwrap", "width", width as i128)?;
    let s = py_str(value);
    let mut lines_out: Vec<String> = Vec::new();
    for line in s.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        if words.is_empty() {
            lines_out.push(String::new());
            continue;
        }
        let mut cur = String::new();
        for w in words {
            let mut w: String = w.to_string();
            loop {
                let cur_len = cur.chars().count();
                let need = if cur.is_empty() { 0 } else { 1 };
                let wl = w.chars().count();
                if cur_len + need + wl <= width {
                    if need == 1 {
                        cur.push(' ');
                    }
                    cur.push_str(&w);
                    break;
                }
                if wl > width && break_long {
                    // Fill what is left of this line with the start of the word.
                    let room = width.saturating_sub(cur_len + need);
                    if room == 0 {
                        lines_out.push(std::mem::take(&mut cur));
                        continue;
                    }
                    if need == 1 {
                        cur.push(' ');
                    }
                    let head: String = w.chars().take(room).collect();
                    cur.push_str(&head);
                    w = w.chars().skip(room).collect();
                    lines_out.push(std::mem::take(&mut cur));
                    continue;
                }
                if cur.is_empty() {
                    cur = w;
                    break;
                }
                lines_out.push(std::mem::take(&mut cur));
            }
        }
        if !cur.is_empty() {
            lines_out.push(cur);
        }
    }
    Ok(lines_out.join(&wrapstring))
}

/// Ansible's `strftime(format, second=None, utc=False)`: the C library's strftime of
/// the time `second` (now when not given), local time unless `utc`.
pub(super) fn strftime(
    format: &Value,
    second: Option<Value>,
    utc: Option<Value>,
    kwargs: Kwargs,
) -> Result<String, Error> {
    let second = arg(second, &kwargs, "second")?.filter(|v| !v.is_none());
    let utc = arg(utc, &kwargs, "utc")?.is_some_and(|v| v.is_true());
    kwargs.assert_all_used()?;
    let fmt = py_str(format);
    let t: f64 = match second {
        None => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0),
        Some(s) => py_str(&s)
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|f| f.is_finite())
            .ok_or_else(|| fail(format!("Invalid value for epoch value ({})", py_str(&s))))?,
    };
    let tm = broken_down_time(t.floor() as libc::time_t, utc)
        .ok_or_else(|| fail(format!("strftime: the time {} is out of range", t)))?;
    c_strftime(&fmt, &tm)
}

/// The C library's broken-down time of `secs` since the epoch, in UTC or the local zone
/// (Python's `time.gmtime`/`time.localtime`); `None` when out of its range.
pub(crate) fn broken_down_time(secs: libc::time_t, utc: bool) -> Option<libc::tm> {
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    // SAFETY: gmtime_r/localtime_r write only into `tm`, which lives on this stack.
    let ok = unsafe {
        if utc {
            !libc::gmtime_r(&secs, &mut tm).is_null()
        } else {
            !libc::localtime_r(&secs, &mut tm).is_null()
        }
    };
    ok.then_some(tm)
}

/// The C library's strftime of `tm` (Python's `time.strftime`).
pub(crate) fn c_strftime(fmt: &str, tm: &libc::tm) -> Result<String, Error> {
    if fmt.contains('\0') {
        return Err(fail("strftime: the format contains a NUL character"));
    }
    let cfmt = std::ffi::CString::new(fmt).map_err(|e| fail(e.to_string()))?;
    let mut size = 256usize.max(fmt.len() * 8);
    loop {
        let mut buf = vec![0u8; size];
        // SAFETY: the buffer has `size` bytes; strftime writes at most that many.
        let n = unsafe {
            libc::strftime(
                buf.as_mut_ptr() as *mut libc::c_char,
                size,
                cfmt.as_ptr(),
                tm,
            )
        };
        if n > 0 || fmt.is_empty() {
            buf.truncate(n);
            return Ok(String::from_utf8_lossy(&buf).into_owned());
        }
        if size > 1 << 16 {
            // A format that yields nothing (`%p` in some locales) is an empty string.
            return Ok(String::new());
        }
        size *= 4;
    }
}
