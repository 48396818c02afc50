//! Ansible's filters on top of minijinja's built-ins.
//!
//! minijinja already behaves as Jinja2 for `default`/`d` (with its boolean second
//! argument, and `default(omit)` through the `omit` global), `sort`/`map`/`selectattr`/
//! `min`/`max`/`sum`/`unique` with `attribute=`, `join`, `format`, `items`, `first`,
//! `last`, `length`, `split` (Python `str.split` semantics), `zip`, `string` and
//! `list`, so those are kept. Replaced here because they differ from Jinja2/Ansible:
//! `bool` (Ansible's yes/no/on/off rules, not truthiness), `int`/`float` (Jinja2 falls
//! back to the default instead of failing) and `replace` (Jinja2's `count` argument).
//!
//! Every filter is also registered under its fully-qualified name
//! (`ansible.builtin.to_json`); minijinja parses dotted filter and test names.
//!
//! [`register`] is the one entry point; the filters live by theme: `types` (conversions),
//! `json_yaml`, `collections` (dictionaries and lists), `regexes`, `encoding`
//! (base64 and hashes), `paths` (paths and shell quoting) and `numbers` (numbers and
//! text). The helpers below are shared with the tests, ipaddr, lookup and TOML modules.

use minijinja::value::{Kwargs, ValueKind};
use minijinja::{Environment, Error, ErrorKind, State, Value};
use serde_json::Value as J;

use crate::template::pydump;

pub(crate) use paths::expand_user;
pub(crate) use regexes::py_regex;

mod collections;
pub(crate) mod consumers;
mod crypt;
mod encoding;
mod json_yaml;
mod markup;
mod numbers;
mod paths;
pub(crate) mod paths_os;
mod picks;
pub(crate) mod pyrandom;
mod regexes;
pub(crate) mod strict;
pub(crate) mod text;
mod types;
pub(crate) mod urls;
mod vaulting;
mod widths;

use collections::{
    combine, dict2items, dict_fn, difference, extract, flatten, intersect, items2dict, product,
    subelements, symmetric_difference, ternary, to_uuid, union, zip_longest,
};
use encoding::{b64decode, b64encode, hash, md5_filter, sha1_filter};
use json_yaml::{
    from_json, from_yaml, from_yaml_all, to_json, to_nice_json, to_nice_yaml, to_yaml,
};
use numbers::{comment, human_readable, human_to_bytes, log, pow, root};
use paths::{basename, dirname, expanduser, path_join, quote, splitext};
use regexes::{regex_escape, regex_findall, regex_replace, regex_search};
use types::{bool_filter, float_filter, int_filter, mandatory, replace, type_debug};

/// Registers every Ansible filter, test and lookup function.
pub fn register(env: &mut Environment<'static>) {
    macro_rules! filter {
        ($name:literal, $f:expr) => {{
            env.add_filter($name, $f);
            env.add_filter(concat!("ansible.builtin.", $name), $f);
        }};
    }
    // Replacements of built-ins whose behaviour differs from Jinja2/Ansible.
    filter!("bool", bool_filter);
    filter!("int", int_filter);
    filter!("float", float_filter);
    filter!("replace", replace);
    // minijinja's own, with their widths bounded (template::limits).
    filter!("indent", widths::indent);
    filter!("format", widths::format);
    filter!("slice", widths::slice);
    filter!("batch", widths::batch);
    // Ansible core.
    filter!("mandatory", mandatory);
    filter!("to_json", to_json);
    filter!("to_nice_json", to_nice_json);
    filter!("from_json", from_json);
    filter!("to_yaml", to_yaml);
    filter!("to_nice_yaml", to_nice_yaml);
    filter!("from_yaml", from_yaml);
    filter!("from_yaml_all", from_yaml_all);
    filter!("combine", combine);
    filter!("dict2items", dict2items);
    filter!("items2dict", items2dict);
    env.add_filter("community.general.dict", collections::pairs_dict);
    env.add_filter("json_query", collections::json_query);
    env.add_filter("community.general.json_query", collections::json_query);
    env.add_filter(
        "community.crypto.x509_certificate_info",
        collections::x509_certificate_info,
    );
    filter!("union", union);
    filter!("intersect", intersect);
    filter!("difference", difference);
    filter!("symmetric_difference", symmetric_difference);
    filter!("flatten", flatten);
    filter!("zip_longest", zip_longest);
    filter!("product", product);
    filter!("regex_search", regex_search);
    filter!("regex_replace", regex_replace);
    filter!("regex_findall", regex_findall);
    filter!("regex_escape", regex_escape);
    filter!("b64encode", b64encode);
    filter!("b64decode", b64decode);
    filter!("hash", hash);
    filter!("checksum", sha1_filter);
    filter!("sha1", sha1_filter);
    filter!("md5", md5_filter);
    filter!("basename", basename);
    filter!("dirname", dirname);
    filter!("splitext", splitext);
    filter!("expanduser", expanduser);
    filter!("path_join", path_join);
    filter!("quote", quote);
    filter!("ternary", ternary);
    filter!("extract", extract);
    filter!("type_debug", type_debug);
    filter!("human_readable", human_readable);
    filter!("human_to_bytes", human_to_bytes);
    filter!("comment", comment);
    filter!("log", log);
    filter!("pow", pow);
    filter!("root", root);
    filter!("subelements", subelements);
    filter!("to_uuid", to_uuid);
    filter!("unique", strict::unique);
    filter!("password_hash", crypt::password_hash);
    filter!("xmlattr", markup::xmlattr);
    filter!("urlize", markup::urlize);
    filter!("vault", vaulting::vault);
    filter!("unvault", vaulting::unvault);
    for prefix in ["", "ansible.builtin."] {
        env.add_test(
            format!("{}vault_encrypted", prefix),
            vaulting::vault_encrypted,
        );
        env.add_test(format!("{}vaulted_file", prefix), vaulting::vaulted_file);
    }
    env.add_function("undef", strict::undef);
    filter!("random", picks::random);
    filter!("shuffle", picks::shuffle);
    filter!("combinations", picks::combinations);
    filter!("permutations", picks::permutations);
    filter!("rekey_on_member", picks::rekey_on_member);
    filter!("urlsplit", urls::urlsplit);
    filter!("urldecode", urls::urldecode);
    filter!("center", text::center);
    filter!("wordcount", text::wordcount);
    filter!("wordwrap", text::wordwrap);
    filter!("forceescape", text::forceescape);
    filter!("strftime", text::strftime);
    filter!("normpath", paths_os::normpath);
    filter!("realpath", paths_os::realpath);
    filter!("relpath", paths_os::relpath);
    filter!("commonpath", paths_os::commonpath);
    filter!("expandvars", paths_os::expandvars);
    filter!("fileglob", paths_os::fileglob);
    filter!("win_basename", paths_os::win_basename);
    filter!("win_dirname", paths_os::win_dirname);
    filter!("win_splitdrive", paths_os::win_splitdrive);
    // Jinja2 built-ins, reachable under their documented `ansible.builtin.` names too.
    use minijinja::filters as b;
    macro_rules! alias {
        ($($name:literal => $f:expr),* $(,)?) => {{ $( env.add_filter(concat!("ansible.builtin.", $name), $f); )* }};
    }
    alias!(
        "default" => b::default, "d" => b::default, "map" => b::map, "select" => b::select,
        "reject" => b::reject, "selectattr" => b::selectattr, "rejectattr" => b::rejectattr,
        "join" => b::join, "list" => b::list, "first" => b::first, "last" => b::last,
        "length" => b::length, "count" => b::length, "lower" => b::lower, "upper" => b::upper,
        "sort" => b::sort, "min" => b::min, "max" => b::max,
        "sum" => b::sum, "dictsort" => b::dictsort, "items" => b::items, "reverse" => b::reverse,
        "trim" => b::trim, "round" => b::round, "abs" => b::abs, "string" => b::string,
        "groupby" => b::groupby, "zip" => b::zip,
        "capitalize" => b::capitalize,
        "title" => b::title, "split" => b::split,
    );
    // Python's `dict()`, which also takes a list of pairs: `dict(keys | zip(values))`.
    env.add_function("dict", dict_fn);
    super::jinja_tests::register(env);
    super::ipaddr::register(env);
    super::lookups::register(env);
    super::toml_filters::register(env);
    // Last: these replace filters registered above.
    consumers::register(env);
}

// ---------------------------------------------------------------------------
// Shared helpers (also used by the tests, ipaddr and lookup modules).

/// A filter error: `what` is the message, which names the filter and says what was
/// expected and what was found.
pub(crate) fn fail(msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::InvalidOperation, msg.into())
}

/// Python's type name for a value, as Ansible's messages and `type_debug` show it.
pub(crate) fn py_type(v: &Value) -> &'static str {
    match v.kind() {
        ValueKind::Undefined => "AnsibleUndefined",
        ValueKind::None => "NoneType",
        ValueKind::Bool => "bool",
        ValueKind::Number if v.is_integer() => "int",
        ValueKind::Number => "float",
        ValueKind::String => "str",
        ValueKind::Bytes => "bytes",
        ValueKind::Seq | ValueKind::Iterable => "list",
        ValueKind::Map => "dict",
        _ if v
            .downcast_object_ref::<super::datetime::DateTime>()
            .is_some() =>
        {
            "datetime"
        }
        _ if v.downcast_object_ref::<super::datetime::Delta>().is_some() => "timedelta",
        _ => "object",
    }
}

/// Python's `str(value)`: strings as they are, `True`/`None`, floats as `repr`,
/// containers in Python's repr.
pub(crate) fn py_str(v: &Value) -> String {
    if let Some(s) = v.as_str() {
        return s.to_string();
    }
    if v.kind() == ValueKind::Number && !v.is_integer() {
        if let Ok(f) = f64::try_from(v.clone()) {
            return pydump::py_float_repr(f);
        }
    }
    v.to_string()
}

/// The error strict undefined gives for `value` (naming the variable when minijinja
/// tracks undefined origins), for filters that must reject undefined input.
pub(crate) fn undefined_error(state: &State, value: &Value, filter: &str) -> Error {
    if state.env().debug() {
        if let Err(e) = minijinja::filters::string(state, value) {
            return e;
        }
    }
    Error::new(
        ErrorKind::UndefinedError,
        format!("{}: the input value is undefined", filter),
    )
}

/// Converts a template value to plain data, or says which filter could not.
/// Undefined values, also inside lists and dicts, are errors (as in Ansible).
pub(crate) fn to_plain(state: &State, v: &Value, filter: &str) -> Result<J, Error> {
    if let Some(u) = find_undefined(v, 0) {
        return Err(undefined_error(state, &u, filter));
    }
    serde_json::to_value(v).map_err(|e| {
        fail(format!(
            "{}: cannot convert {} to data: {}",
            filter,
            py_type(v),
            e
        ))
    })
}

/// The first undefined value inside `v` (lists and dicts, a bounded depth).
fn find_undefined(v: &Value, depth: usize) -> Option<Value> {
    if v.is_undefined() {
        return Some(v.clone());
    }
    if depth > 64 {
        return None;
    }
    match v.kind() {
        ValueKind::Seq => v
            .try_iter()
            .ok()?
            .find_map(|i| find_undefined(&i, depth + 1)),
        ValueKind::Map => {
            let keys: Vec<Value> = v.try_iter().ok()?.collect();
            keys.iter()
                .find_map(|k| find_undefined(&v.get_item(k).unwrap_or_default(), depth + 1))
        }
        _ => None,
    }
}

/// Plain data as a template value.
pub(crate) fn from_plain(j: &J) -> Value {
    super::to_mj(j)
}

/// A map value keeping insertion order.
pub(crate) fn map_value(pairs: Vec<(Value, Value)>) -> Value {
    Value::from_object(
        pairs
            .into_iter()
            .collect::<indexmap::IndexMap<Value, Value>>(),
    )
}

/// An optional argument given positionally or by keyword (Python lets either).
pub(crate) fn arg(pos: Option<Value>, kwargs: &Kwargs, name: &str) -> Result<Option<Value>, Error> {
    match pos {
        Some(v) => Ok(Some(v)),
        None => kwargs.get::<Option<Value>>(name),
    }
}

/// The items of a list-like value, or an error naming the filter.
pub(crate) fn items_of(v: &Value, filter: &str, what: &str) -> Result<Vec<Value>, Error> {
    match v.kind() {
        ValueKind::Seq | ValueKind::Iterable => Ok(v.try_iter()?.collect()),
        _ => Err(fail(format!(
            "{}: {} must be a list, got {}",
            filter,
            what,
            py_type(v)
        ))),
    }
}

fn is_list(v: &Value) -> bool {
    matches!(v.kind(), ValueKind::Seq | ValueKind::Iterable)
}

fn truthy(v: &Value) -> bool {
    v.is_true()
}

#[cfg(test)]
mod tests;
