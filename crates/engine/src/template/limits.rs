//! Bounds on what one filter, method or lookup may build from a number it is given.
//!
//! A width, an indent, a precision or a repeat count is a number a template (or a
//! variable from an inventory, `-e`, a fact) chooses; `indent(10**12)` or
//! `'%10000000000s' | format(x)` would otherwise ask for a terabyte at once and abort the
//! process. Each such number is checked where the filter parses it, against the limits
//! below, and the error names the filter, the argument and the limit. The limits are far
//! above any real use and keep one result within minijinja's own bound for `'a' * n`.

use minijinja::value::ValueKind;
use minijinja::{Error, Value};

use super::filters::fail;

/// The largest width, indent, precision or repeat count a filter accepts.
pub(crate) const MAX_WIDTH: u64 = 100_000;

/// The largest text (bytes) one filter builds: minijinja's own limit for `'a' * n`.
pub(crate) const MAX_TEXT: u64 = 100_000_000;

/// The most items a lookup or filter generates (`sequence`, `product`).
pub(crate) const MAX_ITEMS: u64 = 1_000_000;

/// The longest regular expression a filter or test compiles (bytes): parsing one costs
/// memory per character, and `regex_findall('x' * 10**8)` took gigabytes.
pub(crate) const MAX_PATTERN: usize = 65_536;

/// Checks a width-like number (`what` of `filter`): an integer in `0..=MAX_WIDTH`.
pub(crate) fn width(filter: &str, what: &str, n: i128) -> Result<usize, Error> {
    if (0..=MAX_WIDTH as i128).contains(&n) {
        Ok(n as usize)
    } else {
        Err(fail(format!(
            "{}: {} must be between 0 and {}, got {}",
            filter, what, MAX_WIDTH, n
        )))
    }
}

/// [`width`] for a template value (`None` when it is not an integer).
pub(crate) fn width_value(filter: &str, what: &str, v: &Value) -> Result<Option<usize>, Error> {
    match int_of(v) {
        Some(n) => width(filter, what, n).map(Some),
        None => Ok(None),
    }
}

/// Checks that a result of `len` bytes stays within [`MAX_TEXT`].
pub(crate) fn text(filter: &str, len: u128) -> Result<(), Error> {
    if len <= MAX_TEXT as u128 {
        Ok(())
    } else {
        Err(fail(format!(
            "{}: the result would be {} bytes; refusing more than {}",
            filter, len, MAX_TEXT
        )))
    }
}

fn int_of(v: &Value) -> Option<i128> {
    if v.kind() == ValueKind::Number && v.is_integer() {
        i128::try_from(v.clone()).ok()
    } else {
        None
    }
}

/// Checks the widths and precisions of a printf-style format (`'%-10s' | format(x)`):
/// the literal ones, and those given as `*` by the argument they take.
pub(crate) fn printf(filter: &str, fmt: &str, args: &[Value]) -> Result<(), Error> {
    let b = fmt.as_bytes();
    let mut i = 0;
    let mut arg = 0usize;
    while i < b.len() {
        if b[i] != b'%' {
            i += 1;
            continue;
        }
        i += 1;
        if b.get(i) == Some(&b'%') {
            i += 1;
            continue;
        }
        if b.get(i) == Some(&b'(') {
            // A mapping key: `%(name)10s` takes no positional argument.
            while i < b.len() && b[i] != b')' {
                i += 1;
            }
            i += 1;
            arg = usize::MAX;
        }
        while i < b.len() && b"#0- +".contains(&b[i]) {
            i += 1;
        }
        for what in ["width", "precision"] {
            if what == "precision" {
                if b.get(i) != Some(&b'.') {
                    break;
                }
                i += 1;
            }
            if b.get(i) == Some(&b'*') {
                i += 1;
                if let Some(v) = args.get(arg) {
                    width_value(filter, what, v)?;
                }
                arg = arg.saturating_add(1);
                continue;
            }
            let start = i;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            digits(filter, what, &fmt[start..i])?;
        }
        arg = arg.saturating_add(1);
    }
    Ok(())
}

/// Checks the widths and precisions of a `str.format` string (`'{:>10}'.format(x)`): the
/// numbers in each field's format spec; a spec with a nested field (`{:{}}`) takes its
/// width from an argument, so then every integer argument is checked.
pub(crate) fn str_format(filter: &str, fmt: &str, args: &[Value]) -> Result<(), Error> {
    let mut rest = fmt;
    while let Some(open) = rest.find('{') {
        rest = &rest[open + 1..];
        if let Some(r) = rest.strip_prefix('{') {
            rest = r;
            continue;
        }
        // The field runs to its matching `}`; the spec starts at the first `:` outside `[]`.
        let (mut depth, mut brackets, mut spec_at, mut end) = (1usize, 0usize, None, rest.len());
        for (k, c) in rest.char_indices() {
            match c {
                '[' => brackets += 1,
                ']' => brackets = brackets.saturating_sub(1),
                ':' if depth == 1 && brackets == 0 && spec_at.is_none() => spec_at = Some(k + 1),
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = k;
                        break;
                    }
                }
                _ => {}
            }
        }
        if let Some(s) = spec_at.filter(|s| *s <= end) {
            let spec = &rest[s..end];
            if spec.contains('{') {
                for v in args.iter().flat_map(values_within) {
                    width_value(filter, "width", &v)?;
                }
            }
            for run in spec.split(|c: char| !c.is_ascii_digit()) {
                digits(filter, "width", run)?;
            }
        }
        rest = &rest[end..];
    }
    Ok(())
}

/// A value and, for keyword arguments (a map), the values inside it.
fn values_within(v: &Value) -> Vec<Value> {
    if v.kind() == ValueKind::Map {
        v.try_iter()
            .map(|keys| keys.filter_map(|k| v.get_item(&k).ok()).collect())
            .unwrap_or_default()
    } else {
        vec![v.clone()]
    }
}

fn digits(filter: &str, what: &str, run: &str) -> Result<(), Error> {
    let run = run.trim_start_matches('0');
    if run.is_empty() {
        return Ok(());
    }
    // More digits than any accepted number has is out of range whatever they say.
    let n = if run.len() > 30 {
        i128::MAX
    } else {
        run.parse().unwrap_or(i128::MAX)
    };
    width(filter, what, n).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printf_widths() {
        let ok = |f: &str, a: &[Value]| printf("format", f, a).is_ok();
        assert!(ok("%-10s|%05d|%.3f|%%|%(x)20s", &[]));
        assert!(!ok("%10000000000s", &[]));
        assert!(!ok("%.1000000000f", &[]));
        assert!(!ok(
            "%s %*d",
            &[Value::from(1), Value::from(10_i64.pow(12))]
        ));
        assert!(ok("%s %*d", &[Value::from(10_i64.pow(12)), Value::from(3)]));
        let e = printf("format", "%99999999999999999999999999999999999s", &[]).unwrap_err();
        assert!(e
            .to_string()
            .contains("format: width must be between 0 and 100000"));
    }

    #[test]
    fn str_format_widths() {
        let ok = |f: &str, a: &[Value]| str_format("format", f, a).is_ok();
        assert!(ok("{{}} {0[1]} {x:>10} {:08.3f}", &[]));
        assert!(!ok("{:10000000000}", &[]));
        assert!(!ok(
            "{:.{}}",
            &[Value::from(1), Value::from(10_i64.pow(12))]
        ));
    }
}
