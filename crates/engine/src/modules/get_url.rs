//! `get_url` (and KubeKey's `http_get_file`): downloads a URL to a file on the host with
//! curl, in one round trip.
//!
//! The curl config (URL, credentials, token, headers) goes to the host on stdin, so no
//! secret is on a command line or in a log. The body lands in a temp file beside `dest`;
//! only when its checksum matches (if one is given) is it renamed over `dest`, so a
//! mismatch, a 404 or a cut transfer leaves the old file as it was. A `dest` that
//! already has the wanted checksum is not downloaded again.

use async_trait::async_trait;
use indexmap::IndexMap;
use serde::Deserialize;
use serde_json::Value;

use super::args::{parse_with_file_attrs, FileAttrs, Flag, Int, Text};
use super::lineinfile::attrs_of;
use super::net::{self, ChecksumSpec, ChecksumValue, Request};
use super::plan::OneScript;
use super::remote::{self, add_stat_keys, base_name, parse_stats, qpath, stat_var_script};
use super::{ModuleContext, ModuleResult, VarMap};
use crate::connect::shell_quote;
use crate::error::{Error, ErrorKind, Result};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GetUrlArgs {
    #[serde(default)]
    url: Option<Text>,
    #[serde(default)]
    dest: Option<Text>,
    #[serde(default)]
    checksum: Option<Text>,
    #[serde(default, alias = "username")]
    url_username: Option<Text>,
    #[serde(default, alias = "password")]
    url_password: Option<Text>,
    #[serde(default, alias = "token")]
    bearer_token: Option<Text>,
    #[serde(default)]
    headers: Option<Value>,
    #[serde(default)]
    timeout: Option<Value>,
    #[serde(default)]
    retries: Option<Int>,
    #[serde(default)]
    force: Flag,
    #[serde(default = "Flag::on")]
    validate_certs: Flag,
    #[serde(default)]
    ca_path: Option<Text>,
    #[serde(default)]
    client_cert: Option<Text>,
    #[serde(default)]
    client_key: Option<Text>,
    #[serde(default)]
    http_agent: Option<Text>,
    // Accepted for compatibility: curl always sends basic credentials up front and
    // uses the environment's proxy settings.
    #[serde(default)]
    force_basic_auth: Option<Flag>,
    #[serde(default)]
    use_proxy: Option<Flag>,
    #[serde(default)]
    tmp_dest: Option<Text>,
}

const VALID: &[&str] = &[
    "url",
    "dest",
    "checksum",
    "url_username (username)",
    "url_password (password)",
    "bearer_token (token)",
    "headers",
    "timeout",
    "retries",
    "force",
    "validate_certs",
    "ca_path",
    "client_cert",
    "client_key",
    "http_agent",
    "force_basic_auth",
    "use_proxy",
    "tmp_dest",
];

fn text(t: &Option<Text>) -> Option<String> {
    t.as_ref().map(|t| t.as_str().to_string())
}

/// The arguments, parsed and checked without the host.
struct Checked {
    url: String,
    dest: String,
    checksum: Option<ChecksumSpec>,
    /// Seconds; 10 unless given.
    timeout: Option<u64>,
    headers: IndexMap<String, String>,
    args: GetUrlArgs,
    attrs: FileAttrs,
}

fn check(raw: VarMap) -> Result<Checked> {
    let (a, attrs): (GetUrlArgs, FileAttrs) = parse_with_file_attrs("get_url", raw, VALID)?;
    let _ = (a.force_basic_auth, a.use_proxy, &a.tmp_dest);
    let url = text(&a.url)
        .filter(|u| !u.is_empty())
        .ok_or_else(|| Error::new(ErrorKind::ModuleArgs, "get_url: `url` is required"))?;
    let dest = text(&a.dest)
        .filter(|d| !d.is_empty())
        .ok_or_else(|| Error::new(ErrorKind::ModuleArgs, "get_url: `dest` is required"))?;
    let checksum = match a.checksum.as_ref().map(|c| c.as_str().trim()) {
        None | Some("") => None,
        Some(c) => Some(ChecksumSpec::parse(c)?),
    };
    let timeout = match &a.timeout {
        Some(v) => net::parse_seconds(v)?,
        None => None,
    }
    .or(Some(10));
    let mut headers = parse_headers(&a.headers)?;
    if let Some(agent) = &a.http_agent {
        headers.insert("User-Agent".into(), agent.as_str().to_string());
    }
    Ok(Checked {
        url,
        dest,
        checksum,
        timeout,
        headers,
        args: a,
        attrs,
    })
}

/// Default number of retries of a transient failure (no response, 408, 429, 5xx, a cut
/// transfer), with a backoff of 1, 2, 4 … seconds (at most 30) between attempts.
const DEFAULT_RETRIES: i64 = 3;

/// Downloads files over HTTP(S).
pub struct GetUrl;

/// Headers given as a map or as `"Name: value"` strings (a list or one string).
pub(crate) fn parse_headers(v: &Option<Value>) -> Result<IndexMap<String, String>> {
    let mut out = IndexMap::new();
    let bad = |what: &Value| {
        Error::new(
            ErrorKind::ModuleArgs,
            format!(
                "invalid headers {}: expected a mapping of names to values",
                what
            ),
        )
    };
    let scalar = |v: &Value| match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    };
    match v {
        None | Some(Value::Null) => {}
        Some(Value::Object(m)) => {
            for (k, val) in m {
                out.insert(k.clone(), scalar(val).ok_or_else(|| bad(val))?);
            }
        }
        Some(Value::String(s)) if s.trim().is_empty() => {}
        Some(Value::String(s)) => {
            // KubeKey passes headers through templating; a JSON object text is common.
            if let Ok(Value::Object(m)) = serde_json::from_str::<Value>(s) {
                return parse_headers(&Some(Value::Object(m)));
            }
            let (k, val) = s
                .split_once(':')
                .ok_or_else(|| bad(&Value::String(s.clone())))?;
            out.insert(k.trim().to_string(), val.trim().to_string());
        }
        Some(Value::Array(items)) => {
            for i in items {
                let s = scalar(i).ok_or_else(|| bad(i))?;
                let (k, val) = s.split_once(':').ok_or_else(|| bad(i))?;
                out.insert(k.trim().to_string(), val.trim().to_string());
            }
        }
        Some(other) => return Err(bad(other)),
    }
    Ok(out)
}

/// The file name a URL names (its last path segment, without query or fragment).
fn url_file_name(url: &str) -> String {
    let no_scheme = url.split_once("://").map(|x| x.1).unwrap_or(url);
    let path = no_scheme.split(['?', '#']).next().unwrap_or("");
    let path = path.split_once('/').map(|x| x.1).unwrap_or("");
    let name = base_name(path);
    if name.is_empty() {
        "index.html".to_string()
    } else {
        name
    }
}

/// The marker separating the two curl configs on stdin (file, then checksum file).
const SPLIT: &str = "#kk-split";

#[async_trait]
impl OneScript for GetUrl {
    fn validate(&self, args: &VarMap) -> Result<()> {
        check(args.clone()).map(|_| ())
    }

    /// Runs the download script (one round trip): it decides and downloads; with `report_only` it decides and downloads nothing.
    async fn script(
        &self,
        ctx: &ModuleContext,
        raw: VarMap,
        report_only: bool,
    ) -> Result<ModuleResult> {
        let c = check(raw).map_err(|e| e.at_opt(ctx.span.as_ref()))?;
        let (url, dest, checksum, a) = (c.url, c.dest, c.checksum, c.args);
        let req = Request {
            url: url.clone(),
            headers: c.headers,
            username: text(&a.url_username).filter(|u| !u.is_empty()),
            password: text(&a.url_password),
            bearer_token: text(&a.bearer_token).filter(|t| !t.is_empty()),
            timeout: c.timeout,
            validate_certs: a.validate_certs.0,
            ca_path: text(&a.ca_path),
            client_cert: text(&a.client_cert),
            client_key: text(&a.client_key),
            follow_redirects: true,
            ..Default::default()
        };
        let retries = a.retries.map_or(DEFAULT_RETRIES, |Int(r)| r).max(0);
        let name = url_file_name(&net::normalize_url(&url));
        let mut stdin = req.curl_config();
        let (sum_cmd, want, sums_url) = match &checksum {
            None => (String::new(), String::new(), None),
            Some(c) => match &c.value {
                ChecksumValue::Digest(d) => (c.command(), d.clone(), None),
                ChecksumValue::Url(u) => {
                    let sreq = Request {
                        url: u.clone(),
                        ..req.clone()
                    };
                    stdin.push_str(SPLIT);
                    stdin.push('\n');
                    stdin.push_str(&sreq.curl_config());
                    (c.command(), String::new(), Some(u.clone()))
                }
            },
        };
        let attrs = attrs_of(&c.attrs);
        let mut s = String::new();
        s.push_str(&format!(
            "dest={}\nname={}\nsum={}\nwant={}\nsumsurl={}\nforce={}\ncheck={}\nretries={}\nlocal={}\n",
            qpath(&dest),
            shell_quote(&name),
            shell_quote(&sum_cmd),
            shell_quote(&want),
            if sums_url.is_some() { "1" } else { "" },
            if a.force.0 { "1" } else { "" },
            if report_only { "1" } else { "" },
            retries,
            // A file:// URL has no HTTP status: curl reports 000 for it.
            if url.to_ascii_lowercase().starts_with("file:") { "1" } else { "" },
        ));
        s.push_str(net::CURL_FN);
        s.push_str(DEST_LINE);
        s.push_str("(\n");
        s.push_str(&SCRIPT_HEAD.replace("#kk-sweep\n", &remote::write::sweep_stale("dir")));
        s.push_str(&attrs.script("tmp", false));
        s.push_str(SCRIPT_TAIL);
        s.push_str(")\nrc=$?\n[ \"$rc\" = 0 ] || exit \"$rc\"\n");
        s.push_str(&stat_var_script("dest", true));
        let run = ctx.exec(s, Some(stdin.into_bytes()));
        let out = match (&ctx.progress, report_only) {
            (Some(show), false) => {
                // While curl runs, a second channel on the same connection reports how much
                // of the temp file has arrived, once a second.
                let dir = std::path::Path::new(&dest)
                    .parent()
                    .map(|p| p.display().to_string())
                    .unwrap_or_else(|| ".".into());
                let probe = crate::connect::ExecRequest {
                    script: format!(
                        "for f in {}/.kk_get_url-*; do [ -f \"$f\" ] && wc -c < \"$f\"; done",
                        qpath(&dir)
                    ),
                    become_: ctx.become_.clone(),
                    ..Default::default()
                };
                let poll = async {
                    loop {
                        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                        if let Ok(o) = ctx.conn.exec(&probe).await {
                            let bytes: u64 = String::from_utf8_lossy(&o.stdout)
                                .lines()
                                .filter_map(|l| l.trim().parse::<u64>().ok())
                                .sum();
                            if bytes > 0 {
                                show(&format!(
                                    "downloading {}: {:.1} MB",
                                    name,
                                    bytes as f64 / 1_048_576.0
                                ));
                            }
                        }
                    }
                };
                tokio::pin!(run);
                tokio::select! {
                    r = &mut run => r?,
                    _ = poll => unreachable!("the progress poll never ends"),
                }
            }
            _ => run.await?,
        };
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        // The last value wins (`attempts=` is printed once per attempt).
        let get = |k: &str| {
            text.lines()
                .rev()
                .find_map(|l| l.strip_prefix(&format!("{}=", k)))
                .map(str::to_string)
        };
        let status: Option<i64> = get("http_status").and_then(|c| c.parse().ok());
        let fail = |msg: String| -> Result<ModuleResult> {
            let mut e = remote::remote_error(&msg, &out);
            e = e.at_opt(ctx.span.as_ref());
            Err(e)
        };
        match out.rc {
            0 => {}
            80 => {
                return fail(format!(
                    "get_url: {} answered HTTP {}{}",
                    url,
                    status.map(|s| s.to_string()).unwrap_or_else(|| "?".into()),
                    if get("attempts").is_some_and(|n| n != "1") {
                        format!(" after {} attempts", get("attempts").unwrap_or_default())
                    } else {
                        String::new()
                    }
                ))
            }
            81 => {
                return fail(format!(
                    "get_url: the download of {} failed (curl exit {}) after {} attempts",
                    url,
                    get("curl_rc").unwrap_or_default(),
                    get("attempts").unwrap_or_default()
                ))
            }
            82 => {
                return fail(format!(
                    "get_url: the checksum file {} has no {} digest for `{}`",
                    sums_url.clone().unwrap_or_default(),
                    checksum
                        .as_ref()
                        .map(|c| c.algorithm.as_str())
                        .unwrap_or(""),
                    name
                ))
            }
            83 => {
                return fail(format!(
                    "get_url: the checksum file {} could not be read (HTTP {}, curl exit {})",
                    sums_url.clone().unwrap_or_default(),
                    get("sums_status").unwrap_or_default(),
                    get("curl_rc").unwrap_or_default()
                ))
            }
            84 => {
                let alg = checksum
                    .as_ref()
                    .map(|c| c.algorithm.as_str())
                    .unwrap_or("");
                return fail(format!(
                    "get_url: the {} checksum of the file downloaded from {} is {}, but {} was expected; {} was left unchanged",
                    alg,
                    url,
                    get("got").unwrap_or_default(),
                    get("want").unwrap_or_default(),
                    get("dest").unwrap_or(dest.clone())
                ));
            }
            _ => return fail(format!("get_url: cannot download {} to {}", url, dest)),
        }
        let final_dest = get("dest").unwrap_or(dest.clone());
        let result = get("result").unwrap_or_default();
        let st = parse_stats(&[final_dest.as_str()], &out.stdout)?.remove(0);
        let mut changed = result == "downloaded" || result == "would_download";
        let mut res = ModuleResult::default();
        // An existing file keeps its content; its attributes may still need setting.
        if !changed && st.exists && attrs.differ(&st)? {
            changed = true;
            if !report_only {
                let st2 = remote::set_attrs(ctx, &final_dest, &attrs, false).await?;
                add_stat_keys(&mut res, &st2);
            }
        }
        if !res.data.contains_key("state") {
            add_stat_keys(&mut res, &st);
        }
        res.changed = changed;
        res.data.insert("dest".into(), final_dest.into());
        res.data.insert("url".into(), url.clone().into());
        if let Some(c) = status {
            res.data.insert("status_code".into(), c.into());
        }
        if let Some(sha) = get("sha256") {
            res.data.insert("sha256".into(), sha.into());
        }
        if let Some(sha1) = get("sha1") {
            res.data.insert("checksum_dest".into(), sha1.clone().into());
            res.data.insert("checksum_src".into(), sha1.into());
        }
        if let Some(n) = get("attempts") {
            res.data
                .insert("attempts".into(), n.parse::<i64>().unwrap_or(0).into());
        }
        // ansible-core's messages: playbooks test them (kubespray retries its downloads
        // `until` the message has "OK" or "file already exists").
        let msg = match result.as_str() {
            "downloaded" | "same" => format!("OK ({} bytes)", st.size),
            "would_download" => "would download (check mode)".to_string(),
            "has_checksum" if changed => {
                "file already exists but file attributes changed".to_string()
            }
            "has_checksum" => "file already exists".to_string(),
            _ => "file already exists (force: no), not downloaded".to_string(),
        };
        Ok(res.msg(msg))
    }
}

/// A `dest` that is a directory gets the URL's file name.
const DEST_LINE: &str = r#"case "$dest" in */) dest="$dest$name" ;; *) if [ -d "$dest" ]; then dest="${dest%/}/$name"; fi ;; esac
echo "dest=$dest"
"#;

/// The download (run in a subshell, so its early exits still reach the final stat), up to applying the attributes to the temp file. Exit codes: 80 HTTP
/// error, 81 transfer failed, 82/83 checksum file problems, 84 checksum mismatch.
const SCRIPT_HEAD: &str = r##"um=$(umask)
umask 077
cfg=$(mktemp "${TMPDIR:-/tmp}/.kk_curl.XXXXXXXX") || exit 70
cfg2="$cfg.sums"; hdr="$cfg.hdr"; sums="$cfg.body"; tmp=
trap 'rm -f "$cfg" "$cfg2" "$hdr" "$sums" ${tmp:+"$tmp"}' EXIT
trap '' PIPE
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM
awk -v a="$cfg" -v b="$cfg2" '$0 == "#kk-split" { f = 1; next } { print > (f ? b : a) }'
umask "$um"
if [ -n "$sumsurl" ] && [ -n "$sum" ] && [ -z "$want" ] && [ -s "$cfg2" ]; then
  code=$(kk_curl "$cfg2" "$sums" "$hdr"); rc=$?
  if [ "$rc" != 0 ] || [ "$code" -lt 200 ] || [ "$code" -ge 300 ]; then
    echo "sums_status=$code"; echo "curl_rc=$rc"; exit 83
  fi
  want=$(awk -v n="$name" '
    { f = $2; sub(/^\*/, "", f); sub(/^\.\//, "", f) }
    NF >= 2 && f == n { print $1; found = 1; exit }
    NF == 1 { one = $1; ones++ }
    END { if (!found && ones == 1 && NR == 1) print one }' "$sums" | tr 'A-F' 'a-f')
  [ -n "$want" ] || exit 82
fi
if [ -e "$dest" ] && [ -n "$want" ]; then
  have=$($sum < "$dest") && [ "${have%% *}" = "$want" ] && { echo result=has_checksum; exit 0; }
fi
if [ -e "$dest" ] && [ -z "$want" ] && [ -z "$force" ]; then echo result=exists; exit 0; fi
if [ -n "$check" ]; then echo result=would_download; exit 0; fi
dir=$(dirname -- "$dest")
[ -d "$dir" ] || { echo "destination directory $dir does not exist" >&2; exit 70; }
#kk-sweep
tmp=$(mktemp "$dir/.kk_get_url-$$-XXXXXXXX") || exit 70
n=0; delay=1
while :; do
  n=$((n + 1))
  code=$(kk_curl "$cfg" "$tmp" "$hdr"); rc=$?
  echo "attempts=$n"
  [ "$rc" = 127 ] && exit 81
  if [ "$rc" = 0 ] && [ -n "$local" ]; then break; fi
  if [ "$rc" = 0 ] && [ "$code" -ge 200 ] && [ "$code" -lt 300 ]; then break; fi
  case "$code" in 000|408|429|5??) again=1 ;; *) [ "$rc" != 0 ] && again=1 || again= ;; esac
  if [ -z "$again" ] || [ "$n" -gt "$retries" ]; then
    echo "http_status=$code"; echo "curl_rc=$rc"
    [ "$rc" = 0 ] && exit 80
    exit 81
  fi
  echo "attempt $n: HTTP $code, curl exit $rc; retrying in ${delay}s" >&2
  sleep "$delay"; delay=$((delay * 2)); [ "$delay" -gt 30 ] && delay=30
done
echo "http_status=$code"
if [ -n "$want" ]; then
  got=$($sum < "$tmp"); got=${got%% *}
  if [ "$got" != "$want" ]; then echo "got=$got"; echo "want=$want"; exit 84; fi
fi
new=$(sha256sum < "$tmp"); new=${new%% *}
echo "sha256=$new"
s1=$(sha1sum < "$tmp"); echo "sha1=${s1%% *}"
if [ -f "$dest" ]; then
  old=$(sha256sum < "$dest"); old=${old%% *}
  if [ "$old" = "$new" ]; then echo result=same; exit 0; fi
fi
if [ -e "$dest" ]; then
  chmod "$(stat -L -c %a -- "$dest")" "$tmp" 2>/dev/null
  chown "$(stat -L -c %u:%g -- "$dest")" "$tmp" 2>/dev/null
else
  chmod "$(printf %o $((0666 & ~$(umask))))" "$tmp"
fi
"##;

/// Moves the verified temp file over `dest`.
const SCRIPT_TAIL: &str = r#"sync -- "$tmp" 2>/dev/null
mv -f -- "$tmp" "$dest" || exit 77
tmp=
echo result=downloaded
"#;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_and_headers() {
        assert_eq!(url_file_name("http://h/a/b.tgz?x=1"), "b.tgz");
        assert_eq!(url_file_name("http://h/"), "index.html");
        assert_eq!(url_file_name("http://h"), "index.html");
        let h = parse_headers(&Some(json!({"A": "1", "B": 2}))).unwrap();
        assert_eq!(h.get("B").map(String::as_str), Some("2"));
        let h = parse_headers(&Some(json!(["X-A: 1"]))).unwrap();
        assert_eq!(h.get("X-A").map(String::as_str), Some("1"));
        let h = parse_headers(&Some(json!("{\"K\": \"v\"}"))).unwrap();
        assert_eq!(h.get("K").map(String::as_str), Some("v"));
        assert!(parse_headers(&Some(json!(5))).is_err());
    }

    #[test]
    fn validate_at_load() {
        let check = |a: Value| GetUrl.validate(a.as_object().unwrap());
        assert!(check(
            serde_json::json!({"url": "https://x/y", "dest": "/tmp/y", "mode": "0755",
            "timeout": "30s", "validate_certs": "no"})
        )
        .is_ok());
        let e = check(serde_json::json!({"url": "https://x/y", "dest": "/y", "forse": true}))
            .unwrap_err();
        assert!(e.message.contains("get_url") && e.message.contains("forse"));
        assert!(e.help.unwrap().contains("mode, owner"));
        let e = check(serde_json::json!({"dest": "/y"})).unwrap_err();
        assert!(e.message.contains("get_url: `url` is required"));
        let e = check(serde_json::json!({"url": "https://x/y", "dest": "/y", "force": "maybe"}))
            .unwrap_err();
        assert!(e.message.contains("get_url") && e.message.contains("boolean"));
        assert!(check(
            serde_json::json!({"url": "https://x/y", "dest": "/y", "checksum": "md7:1"})
        )
        .is_err());
    }
}
