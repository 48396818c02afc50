//! `modification_time` and `access_time`: kept, now, or a `touch -t` stamp.

use crate::error::{Error, ErrorKind, Result};

/// A requested time: keep it, set it to now, or set it to a `touch -t` stamp.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Time {
    /// Leave it.
    Preserve,
    /// The time of the run.
    Now,
    /// A `touch -t` stamp.
    At(String),
}

pub(super) fn parse_time(
    v: &Option<String>,
    format: &Option<String>,
    default: Time,
    what: &str,
) -> Result<Time> {
    let Some(v) = v else { return Ok(default) };
    match v.as_str() {
        "preserve" => Ok(Time::Preserve),
        "now" => Ok(Time::Now),
        stamp => {
            let fmt = format.as_deref().unwrap_or("%Y%m%d%H%M.%S");
            if fmt != "%Y%m%d%H%M.%S" {
                return Err(Error::new(
                    ErrorKind::ModuleArgs,
                    format!("file: {}_format {:?} is not supported", what, fmt),
                )
                .help("use the default format %Y%m%d%H%M.%S, e.g. 202401311530.00"));
            }
            let ok = stamp.len() == 15
                && stamp.as_bytes()[12] == b'.'
                && stamp
                    .chars()
                    .enumerate()
                    .all(|(i, c)| i == 12 || c.is_ascii_digit());
            if !ok {
                return Err(Error::new(
                    ErrorKind::ModuleArgs,
                    format!("file: {} {:?} is not a time", what, stamp),
                )
                .help(
                    "give `now`, `preserve` or a time as YYYYMMDDHHMM.SS, e.g. 202401311530.00",
                ));
            }
            Ok(Time::At(stamp.to_string()))
        }
    }
}

/// Shell lines setting times on `"$p"` (`-c`: never create).
pub(super) fn time_script(mtime: &Time, atime: &Time) -> String {
    let mut s = String::new();
    for (flag, t) in [("-m", mtime), ("-a", atime)] {
        match t {
            Time::Preserve => {}
            Time::Now => s.push_str(&format!("touch -c {} -- \"$p\" || exit 78\n", flag)),
            Time::At(stamp) => s.push_str(&format!(
                "touch -c {} -t {} -- \"$p\" || exit 78\n",
                flag, stamp
            )),
        }
    }
    s
}
