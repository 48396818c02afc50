//! `ansible_env` and `ansible_date_time`, ported from ansible-core 2.19's `env.py` and
//! `date_time.py`.
//!
//! The environment is the shell's `export -p` (a built-in, printed before the script sets
//! anything), in dash's `NAME='v'` or bash's `NAME="v"` quoting. The date comes from one
//! `date` call: the host's local fields with the epoch and nanoseconds; the UTC forms
//! (`iso8601`, `iso8601_micro`) are computed here from that epoch. `tz_dst` (Python's
//! `time.tzname[1]`) is the zone's name at the larger of its January and July offsets,
//! which GNU `date -f` prints in the same call.

use serde_json::{json, Map, Value};

use super::raw::Raw;

/// `ansible_env` from the `env` section (`export -p` output); variables exported without
/// a value are not in a process's environment and are left out, as Python's `os.environ`.
pub(super) fn env_facts(raw: &Raw) -> Value {
    let text = raw.section("env").join("\n");
    Value::Object(parse_export(&text))
}

/// Parses `export -p` (dash, busybox and bash in POSIX mode, also bash's `declare -x`).
fn parse_export(text: &str) -> Map<String, Value> {
    let mut out = Map::new();
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        // One statement: `export NAME[=VALUE]` up to an unquoted newline.
        let rest: String = chars[i..].iter().take(12).collect();
        let skip = if rest.starts_with("export ") {
            7
        } else if rest.starts_with("declare -x ") {
            11
        } else {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
            i += 1;
            continue;
        };
        i += skip;
        let mut name = String::new();
        while i < chars.len() && chars[i] != '=' && chars[i] != '\n' {
            name.push(chars[i]);
            i += 1;
        }
        if i >= chars.len() || chars[i] == '\n' {
            i += 1;
            continue;
        }
        i += 1;
        let mut value = String::new();
        while i < chars.len() && chars[i] != '\n' {
            match chars[i] {
                '\'' => {
                    i += 1;
                    while i < chars.len() && chars[i] != '\'' {
                        value.push(chars[i]);
                        i += 1;
                    }
                    i += 1;
                }
                '"' => {
                    i += 1;
                    while i < chars.len() && chars[i] != '"' {
                        if chars[i] == '\\'
                            && i + 1 < chars.len()
                            && matches!(chars[i + 1], '"' | '\\' | '$' | '`' | '\n')
                        {
                            i += 1;
                        }
                        value.push(chars[i]);
                        i += 1;
                    }
                    i += 1;
                }
                '\\' if i + 1 < chars.len() => {
                    value.push(chars[i + 1]);
                    i += 2;
                }
                c => {
                    value.push(c);
                    i += 1;
                }
            }
        }
        i += 1;
        if !name.is_empty() {
            out.insert(name, Value::String(value));
        }
    }
    out
}

/// `ansible_date_time` from the `date` section: the first line is now
/// (`%Y %m %A %w %W %d %H %M %S %s %N %z %Z`), the next two (when GNU `date -f` gave them)
/// January and July in the same format. `None` when `date` printed nothing usable.
pub(super) fn date_time_facts(raw: &Raw) -> Option<Value> {
    let lines = raw.section("date");
    let now: Vec<&str> = lines.first()?.splitn(13, ' ').collect();
    if now.len() < 13 {
        return None;
    }
    let [year, month, weekday, wday, week, day, hour, minute, second, epoch, nanos, offset, tz] =
        <[&str; 13]>::try_from(now).ok()?;
    let epoch_i: i64 = epoch.parse().ok()?;
    let nanos: i64 = nanos.parse().unwrap_or(0);
    let micros = format!("{:06}", nanos / 1000);
    let utc = time::OffsetDateTime::from_unix_timestamp(epoch_i).ok()?;
    let utc_s = format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
        utc.year(),
        u8::from(utc.month()),
        utc.day(),
        utc.hour(),
        utc.minute(),
        utc.second()
    );
    let tz_dst = dst_name(&lines[1..]).unwrap_or_else(|| tz.to_string());
    Some(json!({
        "year": year, "month": month, "weekday": weekday, "weekday_number": wday,
        "weeknumber": week, "day": day, "hour": hour, "minute": minute, "second": second,
        "epoch": epoch, "epoch_int": epoch_i.to_string(),
        "date": format!("{year}-{month}-{day}"),
        "time": format!("{hour}:{minute}:{second}"),
        "iso8601_micro": format!("{utc_s}.{micros}Z"),
        "iso8601": format!("{utc_s}Z"),
        "iso8601_basic": format!("{year}{month}{day}T{hour}{minute}{second}{micros}"),
        "iso8601_basic_short": format!("{year}{month}{day}T{hour}{minute}{second}"),
        "tz": tz, "tz_dst": tz_dst, "tz_offset": offset,
    }))
}

/// The zone's daylight-saving name from its January and July lines: the name at
/// the larger offset (equal offsets: no DST, the one name).
fn dst_name(lines: &[&str]) -> Option<String> {
    let parse = |l: &&str| -> Option<(i32, String)> {
        let f: Vec<&str> = l.splitn(13, ' ').collect();
        let (off, name) = (*f.get(11)?, *f.get(12)?);
        let sign = if off.starts_with('-') { -1 } else { 1 };
        let digits = off.trim_start_matches(['+', '-']);
        let n: i32 = digits.parse().ok()?;
        Some((sign * (n / 100 * 60 + n % 100), name.to_string()))
    };
    let jan = parse(lines.first()?)?;
    let jul = parse(lines.get(1)?)?;
    Some(if jul.0 > jan.0 { jul.1 } else { jan.1 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn export_p_in_both_quotings() {
        let dash = "export HOME='/root'\nexport OLDPWD\nexport Q='it'\"'\"'s'\nexport M='a\nb'\n";
        let m = parse_export(dash);
        assert_eq!(m["HOME"], "/root");
        assert!(m.get("OLDPWD").is_none());
        assert_eq!(m["Q"], "it's");
        assert_eq!(m["M"], "a\nb");
        let bash = "declare -x HOME=\"/root\"\ndeclare -x X=\"a\\\"b\\$c\"\nexport Y=\"1\"\n";
        let m = parse_export(bash);
        assert_eq!(m["HOME"], "/root");
        assert_eq!(m["X"], "a\"b$c");
        assert_eq!(m["Y"], "1");
    }

    #[test]
    fn date_time_like_python() {
        let out = "==kk:date\n2026 11 Sunday 0 47 29 08 21 09 1795936869 123456789 +0100 CET\n2000 01 Saturday 6 00 01 12 00 00 946724400 0 +0100 CET\n2000 07 Saturday 6 25 01 12 00 00 962445600 0 +0200 CEST\n==kk:end\n";
        let raw = Raw::new(out);
        let d = date_time_facts(&raw).unwrap();
        assert_eq!(d["date"], "2026-11-29");
        assert_eq!(d["time"], "08:21:09");
        assert_eq!(d["iso8601_basic"], "20261129T082109123456");
        assert_eq!(d["iso8601_micro"], "2026-11-29T07:21:09.123456Z");
        assert_eq!(d["iso8601"], "2026-11-29T07:21:09Z");
        assert_eq!(d["tz_dst"], "CEST");
        assert_eq!(d["epoch_int"], "1795936869");
        assert_eq!(d["weekday"], "Sunday");
    }
}
