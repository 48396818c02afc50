//! kk's own short fact names (`os`, `cpu`, `disks`, `init`, `kernel_modules`), derived
//! from the same raw output as Ansible's.
//!
//! The builtin roles use these (for instance GOARCH names in artifact URLs) so they do not
//! depend on Ansible's spelling of the same facts.

use std::collections::{BTreeMap, BTreeSet};

use indexmap::IndexMap;
use serde_json::{json, Map, Value};

use super::hardware::block_devices;
use super::raw::{py_int, Raw};
use super::system::Platform;

/// Go's GOARCH name for a `uname -m` machine, which is what artifact URLs use.
pub(super) fn normalize_arch(machine: &str) -> String {
    match machine {
        "x86_64" | "amd64" => "amd64",
        "aarch64" | "arm64" | "armv8l" | "armv8b" | "aarch64_be" => "arm64",
        "i386" | "i486" | "i586" | "i686" | "x86" => "386",
        "armv7l" | "armv7" | "armv6l" | "armv6" | "armv5tel" | "arm" => "arm",
        "ppc64le" => "ppc64le",
        "ppc64" => "ppc64",
        "s390x" => "s390x",
        "riscv64" => "riscv64",
        "loongarch64" | "loong64" => "loong64",
        "mips64" => "mips64",
        "mips64el" => "mips64le",
        other => other,
    }
    .to_string()
}

pub(super) fn kk_os(plat: &Platform, release: &IndexMap<String, String>) -> Value {
    let get = |k: &str| release.get(k).cloned().unwrap_or_default();
    let rel: Map<String, Value> = release
        .iter()
        .map(|(k, v)| (k.clone(), Value::from(v.as_str())))
        .collect();
    json!({
        "type": plat.system,
        "id": get("ID"),
        "version_id": get("VERSION_ID"),
        "pretty_name": get("PRETTY_NAME"),
        "kernel_version": plat.kernel,
        "architecture": normalize_arch(&plat.machine),
        "architecture_raw": plat.machine,
        "hostname": plat.nodename,
        "release": rel,
    })
}

pub(super) fn kk_cpu(raw: &Raw, af: &BTreeMap<String, Value>) -> Value {
    let lines = raw.lines("/proc/cpuinfo");
    let count = lines
        .iter()
        .filter(|l| {
            l.split_once(':')
                .is_some_and(|(k, _)| k.trim() == "processor")
        })
        .count();
    let model = lines.iter().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        matches!(
            k.trim(),
            "model name" | "Processor" | "cpu model" | "Model Name"
        )
        .then(|| v.trim().to_string())
    });
    let mut m = Map::new();
    if count > 0 {
        m.insert("count".into(), count.into());
    } else if let Some(v) = af.get("processor_vcpus") {
        m.insert("count".into(), v.clone());
    }
    m.insert(
        "model".into(),
        model.map(Value::from).unwrap_or(Value::Null),
    );
    for (k, fact) in [
        ("sockets", "processor_count"),
        ("cores_per_socket", "processor_cores"),
        ("threads_per_core", "processor_threads_per_core"),
    ] {
        if let Some(v) = af.get(fact) {
            m.insert(k.into(), v.clone());
        }
    }
    Value::Object(m)
}

pub(super) fn kk_disks(raw: &Raw) -> Value {
    let mut disks = Map::new();
    for name in block_devices(raw) {
        let get = |rel: &str| raw.content(&format!("/sys/block/{name}/{rel}"));
        let sectors = get("size").as_deref().and_then(py_int).unwrap_or(0);
        let mut d = Map::new();
        d.insert("size_bytes".into(), (sectors * 512).into());
        d.insert(
            "rotational".into(),
            (get("queue/rotational").as_deref() == Some("1")).into(),
        );
        d.insert(
            "removable".into(),
            (get("removable").as_deref() == Some("1")).into(),
        );
        if let Some(m) = get("device/model") {
            d.insert("model".into(), m.into());
        }
        disks.insert(name, Value::Object(d));
    }
    Value::Object(disks)
}

/// "systemd" when PID 1 is systemd, else PID 1's name ("unknown" when unreadable).
pub(super) fn kk_init(raw: &Raw) -> String {
    match raw.content("/proc/1/comm") {
        Some(c) => c,
        None if raw.exists("/run/systemd/system") => "systemd".into(),
        None => "unknown".into(),
    }
}

pub(super) fn kk_kernel_modules(raw: &Raw) -> Value {
    let mods: BTreeSet<&str> = raw
        .lines("/proc/modules")
        .iter()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    mods.into_iter().map(Value::from).collect()
}
