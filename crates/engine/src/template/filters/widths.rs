//! Jinja2's filters that take a width or a count, `indent`, `format`, `slice` and
//! `batch`: minijinja's own, called after the number is checked against [`limits`]
//! (`indent(10**12)` would otherwise allocate a terabyte and abort, `slice(10**12)` build
//! 10**12 lists).

use minijinja::value::{Kwargs, Rest, StringInput, ValueOrKwargs};
use minijinja::{Error, State, Value};

use super::{fail, py_type};
use crate::template::limits;

/// `indent(width=4, first=False, blank=False)` with its width and result size bounded.
pub(super) fn indent(
    value: StringInput<'_>,
    width: Option<Value>,
    first: Option<bool>,
    blank: Option<bool>,
    kwargs: Kwargs,
) -> Result<Value, Error> {
    let given = match width {
        Some(w) => Some(w),
        None => kwargs.peek::<Option<Value>>("width")?,
    };
    let checked = match &given {
        None => None,
        Some(w) => Some(limits::width_value("indent", "width", w)?.ok_or_else(|| {
            fail(format!(
                "indent: width must be an integer, got {} '{}'",
                py_type(w),
                w
            ))
        })?),
    };
    let text = value.as_str();
    let lines = text.bytes().filter(|b| *b == b'\n').count() as u128 + 1;
    let w = checked.unwrap_or(4) as u128;
    limits::text("indent", text.len() as u128 + lines * w)?;
    // Given positionally, the width goes on positionally; by keyword, it stays in kwargs.
    let positional = if kwargs.has("width") { None } else { checked };
    minijinja::filters::indent(value, positional, first, blank, kwargs)
}

/// `format` (printf style: `'%-10s' | format(x)`) with its widths and precisions bounded.
pub(super) fn format(
    state: &mut State,
    format_str: &Value,
    args: Rest<ValueOrKwargs>,
) -> Result<Value, Error> {
    if let Some(f) = format_str.as_str() {
        let values: Vec<Value> = args.iter().map(|a| Value::clone(a)).collect();
        limits::printf("format", f, &values)?;
    }
    minijinja::filters::format(state, format_str, args)
}

/// The count of `slice` (how many lists) or `batch` (how many items per list, which a
/// `fill_with` pads up to): at most [`limits::MAX_ITEMS`].
fn count_of(filter: &str, count: i64) -> Result<usize, Error> {
    if count > limits::MAX_ITEMS as i64 {
        return Err(fail(format!(
            "{}: count must be at most {}, got {}",
            filter,
            limits::MAX_ITEMS,
            count
        )));
    }
    // Zero and negative counts get minijinja's own message.
    Ok(count.max(0) as usize)
}

/// `slice(count, fill_with=None)` with its count bounded.
pub(super) fn slice(
    state: &State,
    value: Value,
    count: i64,
    fill_with: Option<Value>,
) -> Result<Value, Error> {
    minijinja::filters::slice(state, value, count_of("slice", count)?, fill_with)
}

/// `batch(count, fill_with=None)` with its count bounded.
pub(super) fn batch(
    state: &State,
    value: Value,
    count: i64,
    fill_with: Option<Value>,
) -> Result<Value, Error> {
    minijinja::filters::batch(state, value, count_of("batch", count)?, fill_with)
}

#[cfg(test)]
mod tests {
    use crate::template::Templar;
    use minijinja::context;

    fn render(s: &str) -> Result<String, String> {
        Templar::new()
            .render_text(s, &context! {})
            .map_err(|e| e.render())
    }

    #[test]
    fn huge_widths_are_errors_that_name_the_filter() {
        for (tpl, filter) in [
            ("{{ 'a\nb' | indent(10**12) }}", "indent: width"),
            ("{{ 'a\nb' | indent(width=10**12) }}", "indent: width"),
            ("{{ 'a\nb' | indent(-1) }}", "indent: width"),
            ("{{ '%10000000000s' | format('x') }}", "format: width"),
            ("{{ '%.10000000000f' | format(1.5) }}", "format: precision"),
            ("{{ '%*s' | format(10**12, 'x') }}", "format: width"),
            ("{{ '{:10000000000}'.format('x') }}", "format: width"),
            ("{{ {'a': 1} | to_json(indent=10**12) }}", "to_json: indent"),
            (
                "{{ {'a': 1} | to_nice_json(indent=10**12) }}",
                "to_nice_json: indent",
            ),
            (
                "{{ {'a': 1} | to_json(indent='x' * 10**6) }}",
                "to_json: indent",
            ),
            (
                "{{ 'x' | comment(prefix_count=10**12) }}",
                "comment: prefix_count",
            ),
            ("{{ [1] | product(repeat=10**12) }}", "product: repeat"),
            ("{{ [1] | slice(10**12) | list }}", "slice: count"),
            (
                "{{ 'x' | regex_findall('x' * 10**8) }}",
                "regex_findall: the regular expression",
            ),
            (
                "{{ 'x' is match('x' * 10**6) }}",
                "match: the regular expression",
            ),
            ("{{ [1] | batch(10**12, 'x') | list }}", "batch: count"),
        ] {
            let e = render(tpl).unwrap_err();
            assert!(e.contains(filter), "{}: {}", tpl, e);
        }
        let big = "{{ ('a\n' * 1000000) | indent(1000) }}";
        assert!(render(big)
            .unwrap_err()
            .contains("indent: the result would be"));
    }

    #[test]
    fn ordinary_widths_still_work() {
        assert_eq!(render("{{ 'a\nb' | indent(2) }}").unwrap(), "a\n  b");
        assert_eq!(
            render("{{ 'a\nb' | indent(width=1, first=true) }}").unwrap(),
            " a\n b"
        );
        assert_eq!(render("{{ 'a\nb' | indent }}").unwrap(), "a\n    b");
        assert_eq!(
            render("{{ '%-4s|%03d' | format('x', 7) }}").unwrap(),
            "x   |007"
        );
        assert_eq!(render("{{ '{:>3}'.format('x') }}").unwrap(), "  x");
        assert_eq!(
            render("{{ [1, 2, 3] | slice(2) | list }}").unwrap(),
            "[[1, 2], [3]]"
        );
        assert_eq!(
            render("{{ [1, 2, 3] | batch(2, 0) | list }}").unwrap(),
            "[[1, 2], [3, 0]]"
        );
    }
}
