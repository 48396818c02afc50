//! cloud-config's machine-level modules: `ntp`, `mounts`, and the disk modules CAPKK
//! refuses (`disk_setup`, `fs_setup`: partitioning an existing machine's disks is not
//! something to do behind its owner's back).

use super::cloud_init::DOC;
use super::error::{clip, kind_of_yaml};
use super::{check_path, shell_quote, ProvisioningError, Step};
use serde_yaml::Value;

fn err(
    path: impl Into<String>,
    expected: impl Into<String>,
    found: impl Into<String>,
    fix: impl Into<String>,
) -> ProvisioningError {
    ProvisioningError::new(DOC, path, expected, found, fix)
}

/// `disk_setup` / `fs_setup`: accepted only when empty.
pub(crate) fn refuse_disks(key: &str, v: &Value) -> Result<(), ProvisioningError> {
    let empty = match v {
        Value::Null => true,
        Value::Sequence(s) => s.is_empty(),
        Value::Mapping(m) => m.is_empty(),
        _ => false,
    };
    if empty {
        return Ok(());
    }
    Err(err(
        key,
        "no disk partitioning or formatting (CAPKK provisions existing machines)",
        format!("a non-empty `{key}`"),
        "prepare the disks and filesystems on the machine beforehand, keep `mounts`, and remove \
         diskSetup from the KubeadmConfig",
    ))
}

/// A host name or address for NTP: no spaces, quotes or shell characters.
fn check_server(at: &str, s: &str) -> Result<(), ProvisioningError> {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || ".-_:[]".contains(c))
    {
        return Ok(());
    }
    Err(err(
        at,
        "a host name or IP address",
        format!("`{}`", clip(s)),
        "list NTP servers by name or address",
    ))
}

/// `ntp`: servers and pools configured in the time client the machine has
/// (systemd-timesyncd, else chrony with a `sources.d` directory), then restarted. The
/// client is detected on the machine because images differ; with neither, the step fails
/// saying so.
pub(crate) fn ntp(v: &Value) -> Result<Vec<Step>, ProvisioningError> {
    let m = match v {
        Value::Null => return Ok(Vec::new()),
        Value::Mapping(m) => m,
        other => {
            return Err(err(
                "ntp",
                "a mapping (enabled, servers, pools, ntp_client)",
                kind_of_yaml(other),
                "write ntp as a mapping",
            ))
        }
    };
    for k in m.keys() {
        let k = k.as_str().unwrap_or("");
        if !["enabled", "servers", "pools", "ntp_client"].contains(&k) {
            return Err(err(
                format!("ntp.{}", clip(k)),
                "only enabled, servers, pools, ntp_client",
                format!("the key `{}`", clip(k)),
                "configure the time client in the machine's image for anything beyond servers and pools",
            ));
        }
    }
    match m.get("enabled") {
        Some(Value::Bool(false)) => return Ok(Vec::new()),
        None | Some(Value::Null) | Some(Value::Bool(true)) => {}
        Some(other) => {
            return Err(err(
                "ntp.enabled",
                "true or false",
                kind_of_yaml(other),
                "write `enabled: true`",
            ))
        }
    }
    let client = match m.get("ntp_client") {
        None | Some(Value::Null) => "auto".to_string(),
        Some(Value::String(s)) if ["auto", "chrony", "systemd-timesyncd"].contains(&s.as_str()) => {
            s.clone()
        }
        Some(other) => {
            let found = other.as_str().map_or_else(
                || kind_of_yaml(other).to_string(),
                |s| format!("`{}`", clip(s)),
            );
            return Err(err(
                "ntp.ntp_client",
                "auto, chrony or systemd-timesyncd",
                found,
                "use a client CAPKK can configure, or install yours in the image",
            ));
        }
    };
    let mut servers = Vec::new();
    let mut pools = Vec::new();
    for (key, list) in [("servers", &mut servers), ("pools", &mut pools)] {
        match m.get(key) {
            None | Some(Value::Null) => {}
            Some(Value::Sequence(items)) => {
                for (i, s) in items.iter().enumerate() {
                    let at = format!("ntp.{key}[{i}]");
                    let s = s.as_str().ok_or_else(|| {
                        err(&at, "a host name", kind_of_yaml(s), "quote the server")
                    })?;
                    check_server(&at, s)?;
                    list.push(s.to_string());
                }
            }
            Some(other) => {
                return Err(err(
                    format!("ntp.{key}"),
                    "a list of host names",
                    kind_of_yaml(other),
                    "list the servers",
                ))
            }
        }
    }
    if servers.is_empty() && pools.is_empty() {
        return Ok(Vec::new());
    }
    let all: Vec<&str> = servers.iter().chain(&pools).map(String::as_str).collect();
    let timesyncd = format!("[Time]\nNTP={}\n", all.join(" "));
    let mut chrony = String::new();
    for s in &servers {
        chrony.push_str(&format!("server {s} iburst\n"));
    }
    for p in &pools {
        chrony.push_str(&format!("pool {p} iburst\n"));
    }
    let use_timesyncd = client != "chrony";
    let use_chrony = client != "systemd-timesyncd";
    let script = format!(
        "set -e\n\
         if {use_timesyncd} && systemctl cat systemd-timesyncd.service >/dev/null 2>&1; then\n\
         \x20 mkdir -p /etc/systemd/timesyncd.conf.d\n\
         \x20 printf '%s' {t} > /etc/systemd/timesyncd.conf.d/.cluster-api.conf.tmp\n\
         \x20 mv /etc/systemd/timesyncd.conf.d/.cluster-api.conf.tmp /etc/systemd/timesyncd.conf.d/cluster-api.conf\n\
         \x20 systemctl restart systemd-timesyncd.service\n\
         elif {use_chrony} && [ -d /etc/chrony/sources.d ]; then\n\
         \x20 printf '%s' {c} > /etc/chrony/sources.d/.cluster-api.sources.tmp\n\
         \x20 mv /etc/chrony/sources.d/.cluster-api.sources.tmp /etc/chrony/sources.d/cluster-api.sources\n\
         \x20 chronyc reload sources >/dev/null\n\
         else\n\
         \x20 echo 'ntp: found no {client} time client to configure (systemd-timesyncd, or chrony with /etc/chrony/sources.d); install one or remove ntp from the KubeadmConfig' >&2\n\
         \x20 exit 1\n\
         fi\n",
        t = shell_quote(&timesyncd),
        c = shell_quote(&chrony),
    );
    Ok(vec![Step::Shell(script)])
}

/// `mounts`: each entry becomes an `/etc/fstab` line (unless the mount point is already
/// there) and is mounted. cloud-init's cloud-specific names (`ephemeral0`, swap) have no
/// meaning here and are refused.
pub(crate) fn mounts(v: &Value) -> Result<Vec<Step>, ProvisioningError> {
    let items = match v {
        Value::Null => return Ok(Vec::new()),
        Value::Sequence(items) => items,
        other => {
            return Err(err(
                "mounts",
                "a list of fstab entries",
                kind_of_yaml(other),
                "write mounts as a list of lists",
            ))
        }
    };
    let defaults = ["", "", "auto", "defaults,nofail", "0", "2"];
    let mut steps = Vec::new();
    for (i, entry) in items.iter().enumerate() {
        let at = format!("mounts[{i}]");
        let Value::Sequence(fields) = entry else {
            return Err(err(
                &at,
                "a list [device, mount point, type, options, dump, pass]",
                kind_of_yaml(entry),
                "write the entry as a list",
            ));
        };
        if fields.len() < 2 || fields.len() > 6 {
            return Err(err(
                &at,
                "2 to 6 fields (device, mount point, …)",
                format!("{} fields", fields.len()),
                "give at least the device and the mount point",
            ));
        }
        let mut f: Vec<String> = defaults.iter().map(|s| s.to_string()).collect();
        for (j, field) in fields.iter().enumerate() {
            f[j] = match field {
                Value::String(s) => s.trim().to_string(),
                Value::Number(n) => n.to_string(),
                other => {
                    return Err(err(
                        format!("{at}[{j}]"),
                        "a string",
                        kind_of_yaml(other),
                        "write the field as a string",
                    ))
                }
            };
            if f[j].is_empty() || f[j].contains(char::is_whitespace) {
                return Err(err(
                    format!("{at}[{j}]"),
                    "a non-empty field without spaces",
                    "an empty field or one with spaces",
                    "write fstab fields without spaces",
                ));
            }
        }
        let dev = &f[0];
        if dev.starts_with("ephemeral") || dev == "swap" || f[1] == "swap" || f[1] == "none" {
            return Err(err(
                &at,
                "a device (/dev/…, LABEL=…, UUID=…) and a mount point",
                format!(
                    "`{}`, a cloud-specific device or swap",
                    clip(if f[1] == "swap" || f[1] == "none" {
                        &f[1]
                    } else {
                        dev
                    })
                ),
                "name the machine's device, and set up swap in the machine's image",
            ));
        }
        if !dev.starts_with('/') && !dev.contains('=') && !dev.contains(':') {
            f[0] = format!("/dev/{dev}");
        }
        check_path(DOC, &format!("{at}[1]"), &f[1])?;
        let mp = shell_quote(&f[1]);
        let line = shell_quote(&f.join(" "));
        steps.push(Step::Shell(format!(
            "set -e\nmkdir -p {mp}\n\
             awk -v mp={mp} '$1 !~ /^#/ && $2 == mp {{ found = 1 }} END {{ exit !found }}' /etc/fstab \
             || printf '%s\\n' {line} >> /etc/fstab\n\
             mountpoint -q {mp} || mount {mp}\n"
        )));
    }
    Ok(steps)
}
