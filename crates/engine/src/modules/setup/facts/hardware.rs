//! Hardware facts: memory, CPUs, uptime, block devices and DMI, ported from ansible-core's
//! `hardware/linux.py` from `/proc` and `/sys` files the script dumps.
//!
//! Preflight checks compare these against KubeKey's minimums, so sizes and counts keep
//! Ansible's units and rounding.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use indexmap::IndexMap;
use serde_json::{json, Map, Value};

use super::raw::{cap1, py_int, Raw};
use super::system::Platform;

/// `/proc/meminfo` in kB by key.
fn meminfo(raw: &Raw) -> HashMap<String, i64> {
    raw.lines("/proc/meminfo")
        .iter()
        .filter_map(|l| {
            let (k, v) = l.split_once(':')?;
            Some((k.to_string(), py_int(v.split_whitespace().next()?)?))
        })
        .collect()
}

/// Ansible's memory facts; returns kk's `memory`.
pub(super) fn memory_facts(raw: &Raw, af: &mut BTreeMap<String, Value>) -> Value {
    let kb = meminfo(raw);
    let mb = |k: &str| kb.get(k).map(|v| v.div_euclid(1024));
    for (key, fact) in [
        ("MemTotal", "memtotal_mb"),
        ("MemFree", "memfree_mb"),
        ("SwapTotal", "swaptotal_mb"),
        ("SwapFree", "swapfree_mb"),
    ] {
        if let Some(v) = mb(key) {
            af.insert(fact.into(), v.into());
        }
    }
    if !kb.is_empty() {
        let sub = |a: Option<i64>, b: Option<i64>| Some(a? - b?);
        let nocache_free = (|| Some(mb("Cached")? + mb("MemFree")? + mb("Buffers")?))();
        af.insert(
            "memory_mb".into(),
            json!({
                "real": {"total": mb("MemTotal"), "used": sub(mb("MemTotal"), mb("MemFree")), "free": mb("MemFree")},
                "nocache": {"free": nocache_free, "used": sub(mb("MemTotal"), nocache_free)},
                "swap": {"total": mb("SwapTotal"), "free": mb("SwapFree"),
                         "used": sub(mb("SwapTotal"), mb("SwapFree")), "cached": mb("SwapCached")},
            }),
        );
    }
    let mut m = Map::new();
    if let Some(t) = mb("MemTotal") {
        m.insert("total_mb".into(), t.into());
    }
    // Kernels before 3.14 have no MemAvailable: estimate it as free + buffers + cache.
    let avail = mb("MemAvailable")
        .or_else(|| Some(mb("MemFree")? + mb("Buffers").unwrap_or(0) + mb("Cached").unwrap_or(0)));
    if let Some(a) = avail {
        m.insert("available_mb".into(), a.into());
    }
    if let Some(v) = mb("MemFree") {
        m.insert("free_mb".into(), v.into());
    }
    if let Some(v) = mb("SwapTotal") {
        m.insert("swap_total_mb".into(), v.into());
    }
    Value::Object(m)
}

/// Key of Ansible's `sockets`/`cores` dicts: its loop starts with the *integer* 0, which
/// is a different key from the string "0" read from the file.
#[derive(PartialEq, Eq, Hash, Clone)]
enum CpuKey {
    Initial,
    Str(String),
}

/// Ansible's `get_cpu_facts` for Linux, ported with its quirks.
pub(super) fn cpu_facts(raw: &Raw, plat: &Platform, af: &mut BTreeMap<String, Value>) {
    let lines = raw.lines("/proc/cpuinfo");
    if lines.is_empty() {
        return;
    }
    let xen = raw.exists("/proc/xen")
        || raw
            .lines("/sys/hypervisor/type")
            .first()
            .is_some_and(|l| l.trim() == "xen");
    let mut xen_paravirt = false;
    let (mut i, mut vendor_occ, mut model_occ, mut proc_occ) = (0i64, 0i64, 0i64, 0i64);
    let (mut zp, mut zmt) = (0i64, 0i64);
    let mut physid = CpuKey::Initial;
    let mut coreid = CpuKey::Initial;
    let mut sockets: IndexMap<CpuKey, i64> = IndexMap::new();
    let mut cores: IndexMap<CpuKey, i64> = IndexMap::new();
    let mut processor: Vec<Value> = Vec::new();
    let mut flags: Option<Vec<Value>> = None;
    for line in lines {
        let (key, val) = match line.split_once(':') {
            Some((k, v)) => (k.trim(), v.trim()),
            None => (line.trim(), ""),
        };
        if xen && key == "flags" && !val.contains("vme") {
            xen_paravirt = true;
        }
        if key == "flags" {
            flags = Some(val.split_whitespace().map(Value::from).collect());
        }
        match key {
            "model name" | "Processor" | "vendor_id" | "cpu" | "Vendor" | "processor" => {
                processor.push(val.into());
                match key {
                    "vendor_id" => vendor_occ += 1,
                    "model name" => model_occ += 1,
                    "processor" => proc_occ += 1,
                    _ => {}
                }
                i += 1;
            }
            "physical id" => {
                physid = CpuKey::Str(val.into());
                sockets.entry(physid.clone()).or_insert(1);
            }
            "core id" => {
                coreid = CpuKey::Str(val.into());
                // Ansible checks `sockets` here, not `cores`.
                if !sockets.contains_key(&coreid) {
                    cores.insert(coreid.clone(), 1);
                }
            }
            "cpu cores" => {
                if let Some(v) = py_int(val) {
                    sockets.insert(physid.clone(), v);
                }
            }
            "siblings" => {
                if let Some(v) = py_int(val) {
                    cores.insert(coreid.clone(), v);
                }
            }
            "# processors" => zp = py_int(val).unwrap_or(zp),
            "max thread id" => zmt = py_int(val).map(|v| v + 1).unwrap_or(zmt),
            "ncpus active" => i = py_int(val).unwrap_or(i),
            _ => {}
        }
    }
    if vendor_occ > 0 && vendor_occ == model_occ {
        i = vendor_occ;
    }
    let arch = plat.machine.as_str();
    if arch.starts_with("armv") || arch.starts_with("aarch") || arch.starts_with("ppc") {
        i = proc_occ;
    }
    let (count, ncores, tpc, vcpus, mut nproc);
    if arch == "s390x" {
        count = 1;
        ncores = if zmt != 0 {
            (zp as f64 / zmt as f64).round_ties_even() as i64
        } else {
            0
        };
        tpc = zmt;
        vcpus = zp;
        nproc = zp;
    } else if xen_paravirt {
        (count, ncores, tpc, vcpus, nproc) = (i, i, 1, i, i);
    } else {
        count = if sockets.is_empty() {
            i
        } else {
            sockets.len() as i64
        };
        ncores = sockets
            .values()
            .next()
            .copied()
            .filter(|v| *v != 0)
            .unwrap_or(1);
        let first_core = cores.values().next().copied().unwrap_or(1);
        tpc = (first_core as f64 / ncores as f64).round_ties_even() as i64;
        vcpus = tpc * count * ncores;
        nproc = proc_occ;
    }
    if let Some(n) = affinity_count(raw) {
        nproc = n;
    }
    af.insert("processor".into(), Value::Array(processor));
    if let Some(f) = flags {
        af.insert("flags".into(), Value::Array(f));
    }
    af.insert("processor_count".into(), count.into());
    af.insert("processor_cores".into(), ncores.into());
    af.insert("processor_threads_per_core".into(), tpc.into());
    af.insert("processor_vcpus".into(), vcpus.into());
    af.insert("processor_nproc".into(), nproc.into());
}

/// CPUs this process may run on (`os.sched_getaffinity`), from `Cpus_allowed_list`.
fn affinity_count(raw: &Raw) -> Option<i64> {
    let line = raw
        .lines("/proc/self/status")
        .iter()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?;
    let mut n = 0i64;
    for part in line.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => n += py_int(b)? - py_int(a)? + 1,
            None => {
                py_int(part)?;
                n += 1
            }
        }
    }
    (n > 0).then_some(n)
}

pub(super) fn uptime_facts(raw: &Raw, af: &mut BTreeMap<String, Value>) {
    if let Some(c) = raw.content("/proc/uptime") {
        if let Some(s) = c.split(' ').next().and_then(|s| s.parse::<f64>().ok()) {
            af.insert("uptime_seconds".into(), (s.trunc() as i64).into());
        }
    }
}

/// Python's `bytes_to_human`.
pub(super) fn bytes_to_human(size: f64) -> String {
    const RANGES: &[(&str, u32)] = &[
        ("Y", 80),
        ("Z", 70),
        ("E", 60),
        ("P", 50),
        ("T", 40),
        ("G", 30),
        ("M", 20),
        ("K", 10),
        ("B", 0),
    ];
    for &(suffix, shift) in RANGES {
        let limit = 2f64.powi(shift as i32);
        if size >= limit || shift == 0 {
            let unit = if shift == 0 {
                "Bytes".to_string()
            } else {
                format!("{suffix}B")
            };
            return format!("{:.2} {}", size / limit, unit);
        }
    }
    format!("{size:.2} Bytes")
}

/// Block device names under `/sys/block`, sorted.
pub(super) fn block_devices(raw: &Raw) -> BTreeSet<String> {
    raw.files
        .keys()
        .filter_map(|p| p.strip_prefix("/sys/block/"))
        .filter_map(|r| r.split_once('/').map(|(d, _)| d.to_string()))
        .collect()
}

/// A subset of Ansible's `devices`: size, sector size, model, vendor, rotational,
/// removable, scheduler and partitions (no links, holders, serials or PCI host).
pub(super) fn device_facts(raw: &Raw, af: &mut BTreeMap<String, Value>) {
    let names = block_devices(raw);
    if names.is_empty() {
        return;
    }
    let mut devices = Map::new();
    for name in &names {
        let dir = format!("/sys/block/{name}");
        let get = |rel: &str| raw.content(&format!("{dir}/{rel}"));
        let mut d = Map::new();
        d.insert("virtual".into(), 1.into());
        d.insert("vendor".into(), get("device/vendor").into());
        d.insert("model".into(), get("device/model").into());
        d.insert("removable".into(), get("removable").into());
        d.insert("rotational".into(), get("queue/rotational").into());
        let scheduler = get("queue/scheduler")
            .and_then(|s| cap1(r".*?\[(.*)\]", &s))
            .unwrap_or_default();
        d.insert("scheduler_mode".into(), scheduler.into());
        let sectorsize = get("queue/logical_block_size");
        let ss = sectorsize
            .as_deref()
            .and_then(py_int)
            .filter(|v| *v > 0)
            .unwrap_or(512);
        d.insert(
            "sectorsize".into(),
            sectorsize.map(Value::from).unwrap_or_else(|| 512.into()),
        );
        let sectors = get("size").as_deref().and_then(py_int).unwrap_or(0) * 512 / ss;
        d.insert("sectors".into(), sectors.into());
        d.insert(
            "size".into(),
            bytes_to_human(sectors as f64 * ss as f64).into(),
        );
        d.insert("host".into(), "".into());
        d.insert("sas_address".into(), get("device/sas_address").into());
        d.insert(
            "sas_device_handle".into(),
            get("device/sas_device_handle").into(),
        );
        if let Some(serial) = get("device/serial") {
            d.insert("serial".into(), serial.into());
        }
        let discard = if get("queue/discard_max_hw_bytes").as_deref() == Some("0") {
            Some("0".to_string())
        } else {
            get("queue/discard_granularity")
        };
        d.insert("support_discard".into(), discard.into());
        d.insert("holders".into(), holders(raw, &dir));
        let mut parts = Map::new();
        let prefix = format!("{dir}/");
        let part_names: BTreeSet<&str> = raw
            .files
            .keys()
            .filter_map(|p| p.strip_prefix(prefix.as_str()))
            .filter_map(|r| r.strip_suffix("/start"))
            .filter(|p| !p.contains('/'))
            .collect();
        for part in part_names {
            let start = raw
                .content(&format!("{dir}/{part}/start"))
                .unwrap_or_else(|| "0".into());
            let psectors = raw
                .content(&format!("{dir}/{part}/size"))
                .as_deref()
                .and_then(py_int)
                .unwrap_or(0);
            parts.insert(
                part.into(),
                json!({"start": start, "sectors": psectors, "sectorsize": 512,
                       "size": bytes_to_human(psectors as f64 * 512.0),
                       "holders": holders(raw, &format!("{dir}/{part}"))}),
            );
        }
        d.insert("partitions".into(), Value::Object(parts));
        devices.insert(name.clone(), Value::Object(d));
    }
    af.insert("devices".into(), Value::Object(devices));
}

const FORM_FACTOR: &[&str] = &[
    "Unknown",
    "Other",
    "Unknown",
    "Desktop",
    "Low Profile Desktop",
    "Pizza Box",
    "Mini Tower",
    "Tower",
    "Portable",
    "Laptop",
    "Notebook",
    "Hand Held",
    "Docking Station",
    "All In One",
    "Sub Notebook",
    "Space-saving",
    "Lunch Box",
    "Main Server Chassis",
    "Expansion Chassis",
    "Sub Chassis",
    "Bus Expansion Chassis",
    "Peripheral Chassis",
    "RAID Chassis",
    "Rack Mount Chassis",
    "Sealed-case PC",
    "Multi-system",
    "CompactPCI",
    "AdvancedTCA",
    "Blade",
    "Blade Enclosure",
    "Tablet",
    "Convertible",
    "Detachable",
    "IoT Gateway",
    "Embedded PC",
    "Mini PC",
    "Stick PC",
];

/// Ansible's DMI facts from `/sys/devices/virtual/dmi/id` ("NA" when unreadable;
/// `dmidecode` is not run, so hosts without the sysfs files get "NA" throughout).
pub(super) fn dmi_facts(raw: &Raw, af: &mut BTreeMap<String, Value>) {
    for (key, file) in [
        ("bios_date", "bios_date"),
        ("bios_vendor", "bios_vendor"),
        ("bios_version", "bios_version"),
        ("board_asset_tag", "board_asset_tag"),
        ("board_name", "board_name"),
        ("board_serial", "board_serial"),
        ("board_vendor", "board_vendor"),
        ("board_version", "board_version"),
        ("chassis_asset_tag", "chassis_asset_tag"),
        ("chassis_serial", "chassis_serial"),
        ("chassis_vendor", "chassis_vendor"),
        ("chassis_version", "chassis_version"),
        ("form_factor", "chassis_type"),
        ("product_name", "product_name"),
        ("product_serial", "product_serial"),
        ("product_uuid", "product_uuid"),
        ("product_version", "product_version"),
        ("system_vendor", "sys_vendor"),
    ] {
        let value = match raw.content(&format!("/sys/devices/virtual/dmi/id/{file}")) {
            None => "NA".to_string(),
            Some(data) if key == "form_factor" => {
                match data.parse::<usize>().ok().and_then(|i| FORM_FACTOR.get(i)) {
                    Some(f) => f.to_string(),
                    None => format!("unknown ({data})"),
                }
            }
            Some(data) => data,
        };
        af.insert(key.into(), value.into());
    }
}

/// Device-mapper names holding a block device or partition (Ansible's `holders`).
fn holders(raw: &Raw, sysdir: &str) -> Value {
    let prefix = format!("{sysdir}/holders/");
    let names: BTreeSet<String> = raw
        .files
        .keys()
        .filter_map(|p| p.strip_prefix(prefix.as_str()))
        .filter_map(|r| r.strip_suffix("/dm/name"))
        .filter(|h| h.starts_with("dm-") && !h.contains('/'))
        .map(|h| {
            raw.content(&format!("{prefix}{h}/dm/name"))
                .unwrap_or_else(|| h.to_string())
        })
        .collect();
    names.into_iter().map(Value::from).collect()
}
