//! Python's `datetime` and `timedelta` as Ansible's templates have them: the
//! `to_datetime(format='%Y-%m-%d %H:%M:%S')` filter and `now(utc=False, fmt=None)` give a
//! naive datetime; subtracting two gives a timedelta (`.days`, `.seconds`,
//! `.microseconds`, `.total_seconds()`), subtracting a timedelta gives a datetime; both
//! compare with their own kind and print as Python's `str()` does (`2024-01-02 03:04:05`,
//! `1 day, 2:03:04`). minijinja has no operator overloading, so `-` reaches them through
//! [`super::arith`], which turns `a - b` into a call of [`sub`] in templates that can
//! make datetimes. As a task's value a datetime is its text (`2024-01-02 03:04:05`); a
//! timedelta is refused there ("Type 'timedelta' is unsupported for variable storage"),
//! as Ansible refuses it. A stored datetime is text from then on (Ansible keeps the
//! object): `| to_datetime` reads it back.

use std::cmp::Ordering;
use std::sync::{Arc, LazyLock};

use chrono::{Datelike, NaiveDateTime, TimeDelta, Timelike};
use minijinja::value::{DynObject, Kwargs, Object, ObjectRepr, ValueKind};
use minijinja::{Environment, Error, ErrorKind, State, Value};

use super::filters::text::{broken_down_time, c_strftime};

/// The function `a - b` becomes in templates that can make datetimes.
pub const SUB_FN: &str = "__kk_sub";

/// Python's naive `datetime.datetime`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct DateTime(pub NaiveDateTime);

/// Python's `datetime.timedelta`, in microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Delta(pub i64);

const MICROS_PER_DAY: i64 = 86_400_000_000;

fn fail(msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::InvalidOperation, msg.into())
}

/// Registers `to_datetime` (also as `ansible.builtin.to_datetime`), `now` and [`SUB_FN`].
pub fn register(env: &mut Environment<'static>) {
    env.add_filter("to_datetime", to_datetime);
    env.add_filter("ansible.builtin.to_datetime", to_datetime);
    env.add_function("now", now);
    env.add_function(SUB_FN, sub);
}

/// `string | to_datetime(format='%Y-%m-%d %H:%M:%S')`: Python's `strptime`.
fn to_datetime(value: &Value, format: Option<String>) -> Result<Value, Error> {
    let Some(text) = value.as_str() else {
        return Err(fail(format!(
            "strptime() argument 1 must be str, not {}",
            super::filters::py_type(value)
        )));
    };
    let fmt = format.unwrap_or_else(|| "%Y-%m-%d %H:%M:%S".into());
    parse(text, &fmt).map(|d| Value::from_object(DateTime(d)))
}

/// Python's `datetime.strptime(text, fmt)`: fields the format lacks are those of
/// 1900-01-01 00:00:00.
fn parse(text: &str, fmt: &str) -> Result<NaiveDateTime, Error> {
    let no_match = || {
        fail(format!(
            "time data '{}' does not match format '{}'",
            text, fmt
        ))
    };
    if fmt.contains("%z") || fmt.contains("%Z") {
        return Err(fail(format!(
            "to_datetime: kk makes naive datetimes only, the format '{}' has a time zone",
            fmt
        )));
    }
    // Python's `.%f` reads 1 to 6 digits as a fraction, chrono's `%.f` the same text;
    // a `%f` after anything else reads exactly 6 digits.
    let chrono_fmt = fmt.replace(".%f", "%.f").replace("%f", "%6f");
    let mut p = chrono::format::Parsed::new();
    let rest = chrono::format::parse_and_remainder(
        &mut p,
        text,
        chrono::format::StrftimeItems::new(&chrono_fmt),
    )
    .map_err(|_| no_match())?;
    if !rest.is_empty() {
        return Err(fail(format!("unconverted data remains: {}", rest)));
    }
    let set = |r: chrono::format::ParseResult<()>| r.map_err(|_| no_match());
    if p.year().is_none() && p.year_mod_100().is_none() && p.isoyear().is_none() {
        set(p.set_year(1900))?;
    }
    let week = p.week_from_sun().is_some() || p.week_from_mon().is_some();
    if p.month().is_none() && p.ordinal().is_none() && !week {
        set(p.set_month(1))?;
    }
    if p.day().is_none() && p.ordinal().is_none() && !week {
        set(p.set_day(1))?;
    }
    if p.hour_div_12().is_none() && p.hour_mod_12().is_none() {
        set(p.set_hour(0))?;
    } else if p.hour_div_12().is_none() {
        // `%I` without `%p` is a morning hour.
        set(p.set_ampm(false))?;
    }
    if p.minute().is_none() {
        set(p.set_minute(0))?;
    }
    if p.second().is_none() {
        set(p.set_second(0))?;
    }
    p.to_naive_datetime_with_offset(0).map_err(|_| no_match())
}

/// `now(utc=False, fmt=None)`: the controller's local (or UTC) time as a datetime, or
/// its `strftime(fmt)` text.
fn now(kwargs: Kwargs) -> Result<Value, Error> {
    let utc = kwargs.get::<Option<bool>>("utc")?.unwrap_or(false);
    let fmt = kwargs.get::<Option<String>>("fmt")?;
    kwargs.assert_all_used()?;
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_err(|e| fail(e.to_string()))?;
    let dt = broken_down_time(d.as_secs() as libc::time_t, utc)
        .and_then(|tm| {
            chrono::NaiveDate::from_ymd_opt(
                tm.tm_year + 1900,
                tm.tm_mon as u32 + 1,
                tm.tm_mday as u32,
            )?
            .and_hms_micro_opt(
                tm.tm_hour as u32,
                tm.tm_min as u32,
                tm.tm_sec.min(59) as u32,
                d.subsec_micros(),
            )
        })
        .ok_or_else(|| fail("now: the clock is out of range"))?;
    match fmt {
        Some(f) => strftime(&dt, &f).map(Value::from),
        None => Ok(Value::from_object(DateTime(dt))),
    }
}

/// `a - b` for datetimes and timedeltas; anything else as minijinja subtracts.
pub fn sub(a: Value, b: Value) -> Result<Value, Error> {
    let (da, db) = (as_datetime(&a), as_datetime(&b));
    let (ta, tb) = (as_delta(&a), as_delta(&b));
    match (da, db, ta, tb) {
        (Some(x), Some(y), _, _) => {
            let us = (x.0 - y.0)
                .num_microseconds()
                .ok_or_else(|| fail("date value out of range"))?;
            Ok(Value::from_object(Delta(us)))
        }
        (Some(x), None, _, Some(t)) => {
            x.0.checked_sub_signed(TimeDelta::microseconds(t.0))
                .filter(|d| d.year() >= 1)
                .map(|d| Value::from_object(DateTime(d)))
                .ok_or_else(|| fail("date value out of range"))
        }
        (None, None, Some(x), Some(y)) => {
            x.0.checked_sub(y.0)
                .map(|us| Value::from_object(Delta(us)))
                .ok_or_else(|| fail("timedelta value out of range"))
        }
        _ if da.is_some() || db.is_some() || ta.is_some() || tb.is_some() => Err(fail(format!(
            "unsupported operand type(s) for -: '{}' and '{}'",
            py_type(&a),
            py_type(&b)
        ))),
        _ => plain_sub(a, b),
    }
}

/// minijinja's own `-`, for operands that are not datetimes.
fn plain_sub(a: Value, b: Value) -> Result<Value, Error> {
    static ENV: LazyLock<Environment<'static>> = LazyLock::new(|| {
        let mut env = Environment::new();
        env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
        env
    });
    ENV.compile_expression("a - b")?
        .eval(minijinja::context! { a => a, b => b })
}

fn as_datetime(v: &Value) -> Option<DateTime> {
    v.downcast_object_ref::<DateTime>().copied()
}

fn as_delta(v: &Value) -> Option<Delta> {
    v.downcast_object_ref::<Delta>().copied()
}

/// Python's type name, for the messages.
fn py_type(v: &Value) -> String {
    if as_datetime(v).is_some() {
        "datetime.datetime".into()
    } else if as_delta(v).is_some() {
        "datetime.timedelta".into()
    } else {
        super::filters::py_type(v).into()
    }
}

/// Python's `datetime.strftime`: `%f` is the microseconds, `%z`/`%Z` are empty (naive),
/// the rest is the C library's.
fn strftime(d: &NaiveDateTime, fmt: &str) -> Result<String, Error> {
    let mut f = String::with_capacity(fmt.len());
    let mut chars = fmt.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            f.push(c);
            continue;
        }
        match chars.next() {
            Some('f') => f.push_str(&format!("{:06}", d.nanosecond() / 1000)),
            Some('z') | Some('Z') => {}
            Some(o) => {
                f.push('%');
                f.push(o);
            }
            None => f.push('%'),
        }
    }
    c_strftime(&f, &c_tm(d))
}

/// `d` as the C library's broken-down time, daylight saving time left for it to find
/// (`tm_isdst` -1); `mktime` ignores the weekday and day of the year it also holds.
fn c_tm(d: &NaiveDateTime) -> libc::tm {
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    tm.tm_year = d.year() - 1900;
    tm.tm_mon = d.month0() as i32;
    tm.tm_mday = d.day() as i32;
    tm.tm_hour = d.hour() as i32;
    tm.tm_min = d.minute() as i32;
    tm.tm_sec = d.second() as i32;
    tm.tm_wday = d.weekday().num_days_from_sunday() as i32;
    tm.tm_yday = d.ordinal0() as i32;
    tm.tm_isdst = -1;
    tm
}

/// Orders `a` against another object of its own type, as Python compares datetimes with
/// datetimes and timedeltas with timedeltas; `None` (minijinja's own order) otherwise.
fn same_kind_cmp<T: Object + Ord + 'static>(a: &T, other: &DynObject) -> Option<Ordering> {
    Some(a.cmp(other.downcast_ref::<T>()?))
}

/// Python's `str(datetime)` (`sep` ' ') and `isoformat()` (`sep` 'T').
fn iso(d: &NaiveDateTime, sep: char) -> String {
    let mut s = format!(
        "{:04}-{:02}-{:02}{}{:02}:{:02}:{:02}",
        d.year(),
        d.month(),
        d.day(),
        sep,
        d.hour(),
        d.minute(),
        d.second()
    );
    let us = d.nanosecond() / 1000;
    if us != 0 {
        s.push_str(&format!(".{:06}", us));
    }
    s
}

impl Object for DateTime {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Plain
    }

    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        let d = &self.0;
        Some(Value::from(match key.as_str()? {
            "year" => d.year() as i64,
            "month" => d.month() as i64,
            "day" => d.day() as i64,
            "hour" => d.hour() as i64,
            "minute" => d.minute() as i64,
            "second" => d.second() as i64,
            "microsecond" => (d.nanosecond() / 1000) as i64,
            _ => return None,
        }))
    }

    fn call_method(
        self: &Arc<Self>,
        _state: &mut State<'_, '_>,
        method: &str,
        args: &[Value],
    ) -> Result<Value, Error> {
        let d = &self.0;
        let no_args = |v: Value| {
            if args.is_empty() {
                Ok(v)
            } else {
                Err(Error::from(ErrorKind::TooManyArguments))
            }
        };
        match method {
            "strftime" => {
                let [fmt] = args else {
                    return Err(fail("strftime() takes exactly one argument (the format)"));
                };
                strftime(d, &super::filters::py_str(fmt)).map(Value::from)
            }
            "isoformat" => {
                let sep = match args {
                    [] => 'T',
                    [s] => s
                        .as_str()
                        .and_then(|s| {
                            let mut c = s.chars();
                            c.next().filter(|_| c.next().is_none())
                        })
                        .ok_or_else(|| fail("isoformat: sep must be one character"))?,
                    _ => return Err(Error::from(ErrorKind::TooManyArguments)),
                };
                Ok(Value::from(iso(d, sep)))
            }
            "timestamp" => no_args(Value::from(local_timestamp(d)?)),
            "weekday" => no_args(Value::from(d.weekday().num_days_from_monday())),
            "isoweekday" => no_args(Value::from(d.weekday().number_from_monday())),
            // Python gives a `date`; its text is what templates print of it.
            "date" => no_args(Value::from(format!(
                "{:04}-{:02}-{:02}",
                d.year(),
                d.month(),
                d.day()
            ))),
            _ => Err(Error::from(ErrorKind::UnknownMethod)),
        }
    }

    fn custom_cmp(self: &Arc<Self>, other: &DynObject) -> Option<Ordering> {
        same_kind_cmp(&**self, other)
    }

    fn render(self: &Arc<Self>, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&iso(&self.0, ' '))
    }
}

/// Python's `timestamp()` of a naive datetime: seconds since the epoch, reading it as
/// local time.
fn local_timestamp(d: &NaiveDateTime) -> Result<f64, Error> {
    let mut tm = c_tm(d);
    // SAFETY: mktime reads and normalises `tm`, which lives on this stack.
    let t = unsafe { libc::mktime(&mut tm) };
    if t == -1 && !(d.year() == 1969 || d.year() == 1970) {
        return Err(fail("timestamp out of range for platform time_t"));
    }
    Ok(t as f64 + (d.nanosecond() / 1000) as f64 / 1e6)
}

impl Delta {
    /// Python's normalised (days, seconds, microseconds).
    fn parts(self) -> (i64, i64, i64) {
        let days = self.0.div_euclid(MICROS_PER_DAY);
        let rest = self.0.rem_euclid(MICROS_PER_DAY);
        (days, rest / 1_000_000, rest % 1_000_000)
    }
}

impl Object for Delta {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Plain
    }

    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        let (days, seconds, micros) = self.parts();
        Some(Value::from(match key.as_str()? {
            "days" => days,
            "seconds" => seconds,
            "microseconds" => micros,
            _ => return None,
        }))
    }

    fn call_method(
        self: &Arc<Self>,
        _state: &mut State<'_, '_>,
        method: &str,
        args: &[Value],
    ) -> Result<Value, Error> {
        match method {
            "total_seconds" if args.is_empty() => Ok(Value::from(self.0 as f64 / 1e6)),
            "total_seconds" => Err(Error::from(ErrorKind::TooManyArguments)),
            _ => Err(Error::from(ErrorKind::UnknownMethod)),
        }
    }

    fn custom_cmp(self: &Arc<Self>, other: &DynObject) -> Option<Ordering> {
        same_kind_cmp(&**self, other)
    }

    fn render(self: &Arc<Self>, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (days, seconds, micros) = self.parts();
        if days != 0 {
            let s = if days.abs() != 1 { "s" } else { "" };
            write!(f, "{} day{}, ", days, s)?;
        }
        write!(
            f,
            "{}:{:02}:{:02}",
            seconds / 3600,
            seconds / 60 % 60,
            seconds % 60
        )?;
        if micros != 0 {
            write!(f, ".{:06}", micros)?;
        }
        Ok(())
    }
}

/// A value fit to be a task's value: datetimes (also inside lists and mappings) become
/// their text (`2024-01-02 03:04:05`, as Ansible's results show them and as a stored one
/// prints later); a timedelta is an error. `None` when `v` holds neither.
pub fn storable(v: &Value) -> Result<Option<Value>, Error> {
    if let Some(d) = as_datetime(v) {
        return Ok(Some(Value::from(iso(&d.0, ' '))));
    }
    if as_delta(v).is_some() {
        return Err(fail(
            "Type 'timedelta' is unsupported for variable storage.",
        ));
    }
    if let Some(items) = v.downcast_object_ref::<Vec<Value>>() {
        let mut out: Option<Vec<Value>> = None;
        for (i, item) in items.iter().enumerate() {
            if let Some(new) = storable(item)? {
                out.get_or_insert_with(|| items.clone())[i] = new;
            }
        }
        return Ok(out.map(Value::from));
    }
    if v.kind() == ValueKind::Map {
        if let Some(map) = v.downcast_object_ref::<indexmap::IndexMap<Value, Value>>() {
            let mut out: Option<indexmap::IndexMap<Value, Value>> = None;
            for (k, item) in map {
                if let Some(new) = storable(item)? {
                    out.get_or_insert_with(|| map.clone())
                        .insert(k.clone(), new);
                }
            }
            return Ok(out.map(Value::from_object));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use crate::template::{to_mj, Templar};
    use serde_json::json;

    /// Answers of ansible-core 2.19 (Python's datetime).
    #[test]
    fn datetimes_as_python() {
        let t = Templar::new();
        let ctx = to_mj(&json!({"a": "2024-01-02 03:04:05", "b": "2024-01-01 01:01:01"}));
        let r = |s: &str| t.render_str(s, &ctx).unwrap();
        let (da, db) = ("(a | to_datetime)", "(b | to_datetime)");
        assert_eq!(r("{{ a | to_datetime }}"), json!("2024-01-02 03:04:05"));
        assert_eq!(
            r(&format!("d={{{{ {da} - {db} }}}}")),
            json!("d=1 day, 2:03:04")
        );
        assert_eq!(
            r(&format!("d={{{{ {db} - {da} }}}}")),
            json!("d=-2 days, 21:56:56")
        );
        assert_eq!(
            r(&format!("{{{{ ({da} - {db}).total_seconds() }}}}")),
            json!(93784.0)
        );
        assert_eq!(
            r(&format!(
                "{{{{ ({da} - {db}).days }}}} {{{{ ({da} - {db}).seconds }}}}"
            )),
            json!("1 7384")
        );
        assert_eq!(r(&format!("{{{{ {da} > {db} }}}}")), json!(true));
        assert_eq!(
            r(&format!("{{{{ {da} == {da} }}}} {{{{ {da} == a }}}}")),
            json!("True False")
        );
        assert_eq!(
            r("{{ '20240102' | to_datetime('%Y%m%d') }}"),
            json!("2024-01-02 00:00:00")
        );
        assert_eq!(
            r("{{ '2024-01-02 03:04:05.123' | to_datetime('%Y-%m-%d %H:%M:%S.%f') }}"),
            json!("2024-01-02 03:04:05.123000")
        );
        assert_eq!(
            r(&format!("{{{{ {da}.strftime('%d/%m/%Y') }}}}")),
            json!("02/01/2024")
        );
        assert_eq!(
            r(&format!("{{{{ {da}.isoformat() }}}}")),
            json!("2024-01-02T03:04:05")
        );
        assert_eq!(
            r("{{ 5 - 3 }} {{ now() | type_debug }}"),
            json!("2 datetime")
        );
        assert_eq!(r("{{ (now() - now()).days <= 0 }}"), json!(true));
        for bad in [
            format!("{{{{ {da} - {db} }}}}"),
            format!("{{{{ {da} - 1 }}}}"),
            "{{ 'x' | to_datetime }}".to_string(),
            "{{ a | to_datetime('%Y') }}".to_string(),
        ] {
            assert!(t.render_str(&bad, &ctx).is_err(), "{}", bad);
        }
    }
}
