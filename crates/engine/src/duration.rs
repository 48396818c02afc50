//! Durations written as text: the one parser behind every argument that takes one
//! (`gen_cert`'s `date`, `get_url`/`uri`'s `timeout`).
//!
//! The text is Go-style `<number><unit>` parts (`1h30m`, `87600h`, `300ms`, `1d12h`); each
//! caller says which units it accepts and how long they are in the scale it counts in, and
//! keeps its own handling of bare numbers and its own error message.

/// Parses `<number><unit>` parts: `units` maps each accepted unit to its length in the
/// caller's scale (seconds, milliseconds …); each part is truncated to a whole number in that
/// scale and the parts are added up.
///
/// `None` when `s` is not such a duration: nothing in it, a number without a unit, a unit
/// without a number, or a unit not in `units`.
pub fn parse(s: &str, units: &[(&str, f64)]) -> Option<u128> {
    let mut total: u128 = 0;
    let mut num = String::new();
    let mut chars = s.chars().peekable();
    let mut any = false;
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() || c == '.' {
            num.push(c);
            continue;
        }
        let mut unit = c.to_string();
        while let Some(&n) = chars.peek() {
            if n.is_ascii_alphabetic() {
                unit.push(n);
                chars.next();
            } else {
                break;
            }
        }
        let x: f64 = num.parse().ok()?;
        num.clear();
        let (_, len) = units.iter().find(|(name, _)| *name == unit)?;
        total = total.saturating_add((x * len) as u128);
        any = true;
    }
    if !num.is_empty() || !any {
        return None;
    }
    Some(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: &[(&str, f64)] = &[
        ("ms", 1.0),
        ("s", 1000.0),
        ("m", 60_000.0),
        ("h", 3_600_000.0),
    ];

    #[test]
    fn parts_add_up_in_the_callers_scale() {
        assert_eq!(parse("1h30m", MS), Some(5_400_000));
        assert_eq!(parse("300ms", MS), Some(300));
        assert_eq!(parse("1.5s", MS), Some(1500));
        assert_eq!(parse("2m2m", MS), Some(240_000));
        let secs: &[(&str, f64)] = &[("d", 86400.0), ("h", 3600.0), ("ms", 0.001)];
        // Each part is truncated in the caller's scale: 300ms is 0 seconds.
        assert_eq!(parse("1d12h300ms", secs), Some(129_600));
        for bad in ["", "h", "10", "5x", "10 s", "1hm", "1..5h", "mss"] {
            assert_eq!(parse(bad, MS), None, "{:?}", bad);
        }
    }
}
