//! The `sequence` lookup, with Python's `%` formatting of its integers.

use minijinja::value::Kwargs;
use minijinja::{Error, Value};

use crate::template::filters::{fail, py_str};
use crate::template::limits;

/// `sequence`: `start=1 end=5 stride=1 format=%d` or the shortcut `[start-]end[/stride][:format]`.
pub(super) fn sequence(terms: &[Value], kwargs: &Kwargs) -> Result<Vec<Value>, Error> {
    let mut out = Vec::new();
    let kw = |k: &str| -> Result<Option<String>, Error> {
        Ok(kwargs.get::<Option<Value>>(k)?.map(|v| py_str(&v)))
    };
    let (kstart, kend, kcount, kstride, kformat) = (
        kw("start")?,
        kw("end")?,
        kw("count")?,
        kw("stride")?,
        kw("format")?,
    );
    let mut specs: Vec<String> = terms.iter().map(py_str).collect();
    if specs.is_empty() {
        specs.push(String::new());
    }
    for spec in specs {
        let (mut start, mut end, mut count, mut stride, mut format) = (
            kstart.clone(),
            kend.clone(),
            kcount.clone(),
            kstride.clone(),
            kformat.clone(),
        );
        let spec = spec.trim();
        if spec.contains('=') {
            for part in spec.split_whitespace() {
                let (k, v) = part
                    .split_once('=')
                    .ok_or_else(|| fail(format!("lookup('sequence'): cannot parse '{}'", part)))?;
                let v = Some(v.to_string());
                match k {
                    "start" => start = v,
                    "end" => end = v,
                    "count" => count = v,
                    "stride" => stride = v,
                    "format" => format = v,
                    other => {
                        return Err(fail(format!(
                            "lookup('sequence'): unknown argument '{}'",
                            other
                        )))
                    }
                }
            }
        } else if !spec.is_empty() {
            let (body, fmt) = match spec.split_once(':') {
                Some((b, f)) => (b, Some(f.to_string())),
                None => (spec, None),
            };
            let (range, st) = match body.split_once('/') {
                Some((r, s)) => (r, Some(s.to_string())),
                None => (body, None),
            };
            match range.rsplit_once('-').filter(|(a, _)| !a.is_empty()) {
                Some((a, b)) => {
                    start = Some(a.to_string());
                    end = Some(b.to_string());
                }
                None => end = Some(range.to_string()),
            }
            if st.is_some() {
                stride = st;
            }
            if fmt.is_some() {
                format = fmt;
            }
        }
        let num = |what: &str, v: &Option<String>, d: i64| -> Result<i64, Error> {
            match v {
                None => Ok(d),
                Some(s) => parse_seq_int(s).ok_or_else(|| {
                    fail(format!(
                        "lookup('sequence'): {} must be a number, got '{}'",
                        what, s
                    ))
                }),
            }
        };
        let start_n = num("start", &start, 1)?;
        let stride_n = num("stride", &stride, 1)?;
        // i128 from here on: start, end and stride near i64's limits must neither wrap
        // nor loop forever.
        let (start_n, stride_n) = (start_n as i128, stride_n as i128);
        let end_n: i128 = match (&end, &count) {
            (Some(_), Some(_)) => {
                return Err(fail("lookup('sequence'): can't specify both count and end"))
            }
            (None, None) => return Err(fail("lookup('sequence'): must specify count or end")),
            (None, Some(_)) => {
                let c = num("count", &count, 0)? as i128;
                if c <= 0 {
                    continue;
                }
                too_many(c)?;
                start_n + (c - 1) * stride_n
            }
            (Some(_), None) => num("end", &end, 0)? as i128,
        };
        if i64::try_from(end_n).is_err() {
            return Err(fail(format!(
                "lookup('sequence'): the sequence would end at {}, beyond the 64-bit integers",
                end_n
            )));
        }
        if stride_n == 0 {
            continue;
        }
        if (stride_n > 0 && end_n < start_n) || (stride_n < 0 && end_n > start_n) {
            return Err(fail(
                "lookup('sequence'): to count backwards make stride negative",
            ));
        }
        too_many((end_n - start_n) / stride_n + 1)?;
        let fmt = format.unwrap_or_else(|| "%d".into());
        let mut i = start_n;
        while (stride_n > 0 && i <= end_n) || (stride_n < 0 && i >= end_n) {
            // Within [start, end], both i64, so it fits.
            out.push(Value::from(printf_int(&fmt, i as i64)?));
            i += stride_n;
        }
        too_many(out.len() as i128)?;
    }
    Ok(out)
}

/// The sequence's items (all specs together) must stay within [`limits::MAX_ITEMS`].
fn too_many(items: i128) -> Result<(), Error> {
    if items > limits::MAX_ITEMS as i128 {
        return Err(fail(format!(
            "lookup('sequence'): the sequence would have {} items; refusing more than {}",
            items,
            limits::MAX_ITEMS
        )));
    }
    Ok(())
}

pub(super) fn parse_seq_int(s: &str) -> Option<i64> {
    let t = s.trim().to_ascii_lowercase();
    if let Some(h) = t.strip_prefix("0x") {
        return i64::from_str_radix(h, 16).ok();
    }
    if let Some(o) = t.strip_prefix("0o") {
        return i64::from_str_radix(o, 8).ok();
    }
    t.parse().ok()
}

/// Python's `fmt % n` for one integer conversion (`%d`, `%05d`, `%x`, `%o`, `%s`).
pub(super) fn printf_int(fmt: &str, n: i64) -> Result<String, Error> {
    let mut out = String::new();
    let chars: Vec<char> = fmt.chars().collect();
    let mut i = 0;
    let mut used = false;
    while i < chars.len() {
        if chars[i] != '%' {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        if chars.get(i + 1) == Some(&'%') {
            out.push('%');
            i += 2;
            continue;
        }
        let mut j = i + 1;
        let mut flags = String::new();
        while j < chars.len() && "-0 +".contains(chars[j]) {
            flags.push(chars[j]);
            j += 1;
        }
        let mut width = String::new();
        while j < chars.len() && chars[j].is_ascii_digit() {
            width.push(chars[j]);
            j += 1;
        }
        let conv = chars
            .get(j)
            .copied()
            .ok_or_else(|| fail(format!("lookup('sequence'): bad format '{}'", fmt)))?;
        let body = match conv {
            'd' | 'i' | 's' => n.to_string(),
            'x' => format!("{:x}", n),
            'X' => format!("{:X}", n),
            'o' => format!("{:o}", n),
            other => {
                return Err(fail(format!(
                    "lookup('sequence'): unsupported conversion %{} in '{}'",
                    other, fmt
                )))
            }
        };
        let w = match width.trim_start_matches('0') {
            "" => 0,
            digits if digits.len() > 30 => limits::width("lookup('sequence')", "width", i128::MAX)?,
            digits => limits::width(
                "lookup('sequence')",
                "width",
                digits.parse().unwrap_or(i128::MAX),
            )?,
        };
        let padded = if body.len() >= w {
            body
        } else if flags.contains('-') {
            format!("{:<w$}", body, w = w)
        } else if flags.contains('0') && conv != 's' {
            let (sign, digits) = match body.strip_prefix('-') {
                Some(d) => ("-", d.to_string()),
                None => ("", body.clone()),
            };
            format!("{}{}{}", sign, "0".repeat(w - body.len()), digits)
        } else {
            format!("{:>w$}", body, w = w)
        };
        out.push_str(&padded);
        used = true;
        i = j + 1;
    }
    if !used {
        return Err(fail(format!(
            "lookup('sequence'): the format '{}' has no %d",
            fmt
        )));
    }
    Ok(out)
}
