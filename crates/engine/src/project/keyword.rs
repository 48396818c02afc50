//! Task and play keywords as typed values, parsed once when the playbook loads.
//!
//! A keyword is either a literal, checked against the keyword's type at load time (a
//! wrong one is a load error with its position: `retries: many`), or a template, kept
//! with its position and rendered per host at run time, then checked the same way (a
//! wrong result fails the task on that host, as in Ansible). Keywords Ansible does not
//! template (`register`, `listen`, the module name) are rejected when they hold a
//! template, so a playbook means the same thing under kk and under ansible-core.

use serde_json::Value;

use super::Strategy;
use crate::error::{Error, ErrorKind, Result, Span};
use crate::template::{is_template, Templar, OMIT};
use crate::yaml::Node;

/// A keyword's value: known at load time, or a template rendered per host.
#[derive(Debug, Clone)]
pub enum Keyword<T> {
    /// Written as a value of the keyword's type.
    Literal(T),
    /// Written with `{{ }}`: rendered, then checked, when the task runs.
    Template {
        /// The keyword's name, for messages.
        keyword: &'static str,
        /// The value as written (a string, or a list holding templated strings).
        raw: Value,
        /// Where it is written.
        span: Span,
    },
    /// A keyword set at an inner level (the first) over the value of an outer one (the
    /// second): the inner one unless it renders to `omit`, which leaves the outer value,
    /// as if the inner level had not set the keyword.
    Over(Box<Keyword<T>>, Box<Keyword<T>>),
}

impl<T: PartialEq> PartialEq for Keyword<T> {
    fn eq(&self, other: &Keyword<T>) -> bool {
        match (self, other) {
            (Keyword::Literal(a), Keyword::Literal(b)) => a == b,
            (
                Keyword::Template { keyword, raw, span },
                Keyword::Template {
                    keyword: k2,
                    raw: r2,
                    span: s2,
                },
            ) => keyword == k2 && raw == r2 && span.to_string() == s2.to_string(),
            (Keyword::Over(a, b), Keyword::Over(a2, b2)) => a == a2 && b == b2,
            _ => false,
        }
    }
}

/// A type a keyword's value can have: how to read it from plain data, and what to say
/// when the data is not one.
pub trait KeywordValue: Sized + Clone {
    /// What the keyword expects, as a message says it ("an integer").
    const EXPECTED: &'static str;
    /// How to write a right value, for the error's help line.
    const HELP: &'static str;
    /// A right value, shown in the help line (`retries: 3`).
    const EXAMPLE: &'static str;
    /// Reads a value; `Err` carries what is wrong when more than "not a T" can be said.
    fn from_value(v: &Value) -> std::result::Result<Self, Option<String>>;
}

/// Whether a value holds a template anywhere (strings in lists included).
fn holds_template(v: &Value) -> bool {
    match v {
        Value::String(s) => is_template(s),
        Value::Array(items) => items.iter().any(holds_template),
        _ => false,
    }
}

/// A value as the user wrote it, for "found `…`".
fn shown(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn mismatch<T: KeywordValue>(keyword: &str, v: &Value, why: Option<String>) -> (String, String) {
    let expected = match why {
        Some(w) => w,
        None => T::EXPECTED.to_string(),
    };
    (
        format!("{} expects {}, found `{}`", keyword, expected, shown(v)),
        format!("{}, e.g. `{}: {}`", T::HELP, keyword, T::EXAMPLE),
    )
}

impl<T: KeywordValue> Keyword<T> {
    /// Reads a keyword from its YAML node: a template stays one, anything else must be
    /// a `T` (a load error at the node otherwise).
    pub fn parse(keyword: &'static str, node: &Node) -> Result<Keyword<T>> {
        let v = node.to_value();
        if holds_template(&v) {
            return Ok(Keyword::Template {
                keyword,
                raw: v,
                span: node.span.clone(),
            });
        }
        T::from_value(&v).map(Keyword::Literal).map_err(|why| {
            let (msg, help) = mismatch::<T>(keyword, &v, why);
            Error::syntax(msg, &node.span).help(help)
        })
    }

    /// Reads the keyword `keyword` of a mapping node, if it is there.
    pub fn from_node(node: &Node, keyword: &'static str) -> Result<Option<Keyword<T>>> {
        node.get(keyword)
            .map(|n| Keyword::parse(keyword, n))
            .transpose()
    }

    /// The value for one host: the literal, or the template rendered with the host's
    /// variables and checked. `None` when the template gave `omit` (the keyword is unset).
    pub fn resolve(&self, templar: &Templar, ctx: &minijinja::Value) -> Result<Option<T>> {
        let (keyword, raw, span) = match self {
            Keyword::Literal(t) => return Ok(Some(t.clone())),
            Keyword::Template { keyword, raw, span } => (keyword, raw, span),
            Keyword::Over(inner, outer) => {
                return match inner.resolve(templar, ctx)? {
                    Some(v) => Ok(Some(v)),
                    None => outer.resolve(templar, ctx),
                }
            }
        };
        let v = templar
            .render_value(raw, ctx)
            .map_err(|e| e.at(span).note(format!("in `{}`", keyword)))?;
        if v.as_str() == Some(OMIT) {
            return Ok(None);
        }
        T::from_value(&v).map(Some).map_err(|why| {
            let (msg, help) = mismatch::<T>(keyword, &v, why);
            Error::new(ErrorKind::Template, msg)
                .at(span)
                .note(format!("`{}` rendered to `{}`", shown(raw), shown(&v)))
                .help(help)
        })
    }
}

/// The keyword in force at an inner level that sets `inner` inside an outer level whose
/// value is `outer`: the inner one, over the outer one when it is a template (it may
/// render to `omit`).
pub fn inherit<T: Clone>(
    inner: &Option<Keyword<T>>,
    outer: &Option<Keyword<T>>,
) -> Option<Keyword<T>> {
    match (inner, outer) {
        (Some(i @ (Keyword::Template { .. } | Keyword::Over(..))), Some(o)) => {
            Some(Keyword::Over(Box::new(i.clone()), Box::new(o.clone())))
        }
        (Some(i), _) => Some(i.clone()),
        (None, o) => o.clone(),
    }
}

/// A whole number, as Ansible's `int` fields read it (`3`, `"3"`, `3.0`); never negative.
fn count(v: &Value) -> std::result::Result<u64, Option<String>> {
    let n = match v {
        Value::Number(n) => n.as_f64().ok_or(None)?,
        Value::String(s) => s.trim().parse::<f64>().map_err(|_| None)?,
        _ => return Err(None),
    };
    if !n.is_finite() || n.fract() != 0.0 {
        return Err(None);
    }
    if n < 0.0 {
        return Err(Some("a non-negative integer".into()));
    }
    if n > u32::MAX as f64 {
        return Err(Some(format!("an integer up to {}", u32::MAX)));
    }
    Ok(n as u64)
}

/// A non-negative number of seconds or a percentage (finite, not NaN).
fn number(v: &Value, percent: bool) -> std::result::Result<f64, Option<String>> {
    let n = match v {
        Value::Number(n) => n.as_f64().ok_or(None)?,
        Value::String(s) => {
            let s = s.trim();
            let s = if percent {
                s.strip_suffix('%').unwrap_or(s)
            } else {
                s
            };
            s.trim().parse::<f64>().map_err(|_| None)?
        }
        _ => return Err(None),
    };
    if !n.is_finite() {
        return Err(None);
    }
    if n < 0.0 {
        return Err(Some("a non-negative number".into()));
    }
    if n > u32::MAX as f64 {
        return Err(Some(format!("a number up to {}", u32::MAX)));
    }
    Ok(n)
}

impl KeywordValue for bool {
    const EXPECTED: &'static str = "a boolean";
    const HELP: &'static str = "write true or false (yes/no, on/off and 1/0 work too)";
    const EXAMPLE: &'static str = "true";
    fn from_value(v: &Value) -> std::result::Result<bool, Option<String>> {
        match v {
            Value::Array(_) | Value::Object(_) => Err(None),
            other => crate::ansible::to_bool(other).ok_or(None),
        }
    }
}

impl KeywordValue for u64 {
    const EXPECTED: &'static str = "an integer";
    const HELP: &'static str = "write a whole number, 0 or more";
    const EXAMPLE: &'static str = "3";
    fn from_value(v: &Value) -> std::result::Result<u64, Option<String>> {
        count(v)
    }
}

/// Seconds (`delay`): a non-negative number, fractions allowed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Seconds(pub f64);

impl KeywordValue for Seconds {
    const EXPECTED: &'static str = "a number of seconds";
    const HELP: &'static str = "write a number of seconds, 0 or more";
    const EXAMPLE: &'static str = "3";
    fn from_value(v: &Value) -> std::result::Result<Seconds, Option<String>> {
        number(v, false).map(Seconds)
    }
}

/// A percentage (`max_fail_percentage`): `30`, `30.5` or `"30%"`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Percent(pub f64);

impl KeywordValue for Percent {
    const EXPECTED: &'static str = "a percentage";
    const HELP: &'static str = "write a number from 0 to 100";
    const EXAMPLE: &'static str = "3";
    fn from_value(v: &Value) -> std::result::Result<Percent, Option<String>> {
        number(v, true).map(Percent)
    }
}

/// A name (`become_user`): any scalar, as text.
impl KeywordValue for String {
    const EXPECTED: &'static str = "a string";
    const HELP: &'static str = "write a name";
    const EXAMPLE: &'static str = "root";
    fn from_value(v: &Value) -> std::result::Result<String, Option<String>> {
        match v {
            Value::String(s) => Ok(s.clone()),
            Value::Number(n) => Ok(n.to_string()),
            Value::Bool(b) => Ok(b.to_string()),
            _ => Err(None),
        }
    }
}

/// `become_method`: kk runs commands as another user with sudo or su (Ansible's
/// `connect::BecomeMethod`); any other method is refused with the ones kk knows.
pub use crate::connect::BecomeMethod;

impl KeywordValue for BecomeMethod {
    const EXPECTED: &'static str = "`sudo` or `su` (the become methods kk supports)";
    const HELP: &'static str = "use sudo or su";
    const EXAMPLE: &'static str = "sudo";
    fn from_value(v: &Value) -> std::result::Result<BecomeMethod, Option<String>> {
        match v.as_str().map(str::trim) {
            Some("sudo") => Ok(BecomeMethod::Sudo),
            Some("su") => Ok(BecomeMethod::Su),
            _ => Err(None),
        }
    }
}

impl KeywordValue for Strategy {
    const EXPECTED: &'static str = "a strategy (`linear`, `free` or `host_pinned`)";
    const HELP: &'static str = "use linear (the default), free or host_pinned";
    const EXAMPLE: &'static str = "linear";
    fn from_value(v: &Value) -> std::result::Result<Strategy, Option<String>> {
        match v.as_str().map(str::trim) {
            Some("linear") => Ok(Strategy::Linear),
            Some("free") => Ok(Strategy::Free),
            Some("host_pinned") => Ok(Strategy::HostPinned),
            _ => Err(None),
        }
    }
}

/// `order`: the order a play's hosts run in and are cut into `serial` batches, from
/// the order its host pattern selects them (`ansible_play_hosts` keeps that one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HostOrder {
    /// As the pattern selects them (the default).
    #[default]
    Inventory,
    /// By name.
    Sorted,
    /// By name, last first.
    ReverseSorted,
    /// The pattern's order reversed.
    ReverseInventory,
    /// Ansible shuffles; kk is deterministic and keeps the pattern's order.
    Shuffle,
}

impl HostOrder {
    /// `hosts` (in the pattern's order) in this order.
    pub fn apply(self, hosts: &[String]) -> Vec<String> {
        let mut out = hosts.to_vec();
        match self {
            HostOrder::Inventory | HostOrder::Shuffle => {}
            HostOrder::Sorted => out.sort(),
            HostOrder::ReverseSorted => out.sort_by(|a, b| b.cmp(a)),
            HostOrder::ReverseInventory => out.reverse(),
        }
        out
    }
}

impl KeywordValue for HostOrder {
    const EXPECTED: &'static str =
        "a host order (`inventory`, `sorted`, `reverse_sorted`, `reverse_inventory` or `shuffle`)";
    const HELP: &'static str =
        "use inventory (the default), sorted, reverse_sorted, reverse_inventory or shuffle";
    const EXAMPLE: &'static str = "sorted";
    fn from_value(v: &Value) -> std::result::Result<HostOrder, Option<String>> {
        match v.as_str() {
            Some("inventory") => Ok(HostOrder::Inventory),
            Some("sorted") => Ok(HostOrder::Sorted),
            Some("reverse_sorted") => Ok(HostOrder::ReverseSorted),
            Some("reverse_inventory") => Ok(HostOrder::ReverseInventory),
            Some("shuffle") => Ok(HostOrder::Shuffle),
            _ => Err(None),
        }
    }
}

/// One `serial` batch size: a number of hosts or a percentage of the play's hosts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum BatchSize {
    /// This many hosts.
    Hosts(u64),
    /// This percentage of the play's hosts (rounded down, at least one).
    Percent(f64),
}

/// `serial`: batch sizes in order, the last one repeating.
#[derive(Debug, Clone, PartialEq)]
pub struct Serial(pub Vec<BatchSize>);

impl KeywordValue for Serial {
    const EXPECTED: &'static str = "a number of hosts, a percentage (\"30%\") or a list of them";
    const HELP: &'static str = "write a number of hosts or a percentage";
    const EXAMPLE: &'static str = "3";
    fn from_value(v: &Value) -> std::result::Result<Serial, Option<String>> {
        let one = |v: &Value| match v {
            Value::String(s) if s.trim().ends_with('%') => number(v, true).map(BatchSize::Percent),
            _ => count(v).map(BatchSize::Hosts),
        };
        match v {
            Value::Array(items) => items.iter().map(one).collect::<Result<_, _>>().map(Serial),
            other => one(other).map(|b| Serial(vec![b])),
        }
    }
}

/// `loop_control`, typed: ansible-core post-validates (templates, then checks) every field
/// but `label` before the loop runs, so each is a [`Keyword`] resolved per host.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LoopControl {
    /// `loop_var` (default `item`).
    pub loop_var: Option<Keyword<String>>,
    /// `index_var`.
    pub index_var: Option<Keyword<String>>,
    /// `pause` between items, in seconds.
    pub pause: Option<Keyword<Seconds>>,
    /// `extended`: the `ansible_loop` variable.
    pub extended: Option<Keyword<bool>>,
    /// `extended_allitems`: `ansible_loop.allitems` with `extended` (default true).
    pub extended_allitems: Option<Keyword<bool>>,
    /// `label`: what the output shows for an item, templated per item.
    pub label: Option<Value>,
}

impl LoopControl {
    /// The options ansible-core knows, in its order.
    const OPTIONS: &'static [&'static str] = &[
        "loop_var",
        "index_var",
        "label",
        "pause",
        "extended",
        "extended_allitems",
        "break_when",
    ];

    /// Reads `loop_control` from its node: a mapping of known options, each checked as its
    /// keyword would be (a load error at the option otherwise).
    pub fn parse(node: &Node) -> Result<LoopControl> {
        if node.is_null() {
            return Ok(LoopControl::default());
        }
        if node.type_name() != "a mapping" {
            return Err(node.expected("a mapping of loop_control options"));
        }
        let mut lc = LoopControl::default();
        for (k, v) in node.entries() {
            match k.as_str() {
                "loop_var" => lc.loop_var = Some(Keyword::parse("loop_control.loop_var", v)?),
                "index_var" => lc.index_var = Some(Keyword::parse("loop_control.index_var", v)?),
                "pause" => lc.pause = Some(Keyword::parse("loop_control.pause", v)?),
                "extended" => lc.extended = Some(Keyword::parse("loop_control.extended", v)?),
                "extended_allitems" => {
                    lc.extended_allitems =
                        Some(Keyword::parse("loop_control.extended_allitems", v)?)
                }
                "label" => lc.label = Some(v.to_value()),
                "break_when" => {
                    return Err(Error::syntax(
                        "loop_control.break_when is not supported by kk yet",
                        &v.span,
                    )
                    .help("stop the loop with a `when` on the task, or split the list first"))
                }
                other => {
                    let mut e =
                        Error::syntax(format!("`{}` is not a loop_control option", other), &v.span);
                    e = match crate::error::did_you_mean(other, Self::OPTIONS.iter().copied()) {
                        Some(s) => e.help(format!("did you mean `{}`?", s)),
                        None => e.help(format!("loop_control takes: {}", Self::OPTIONS.join(", "))),
                    };
                    return Err(e);
                }
            }
        }
        Ok(lc)
    }
}

/// Rejects a template in a keyword Ansible uses as written (`register`, `listen`, the
/// module name): ansible-core would not render it, so kk does not either.
pub fn reject_template(keyword: &str, node: &Node) -> Result<()> {
    if holds_template(&node.to_value()) {
        return Err(Error::syntax(
            format!(
                "`{}` cannot be templated: Ansible does not template this keyword",
                keyword
            ),
            &node.span,
        )
        .help(match keyword {
            "register" => "name the variable directly, e.g. `register: result`".to_string(),
            _ => format!("write `{}` without `{{{{ }}}}`", keyword),
        }));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::template::to_mj;
    use crate::yaml::parse_str;
    use serde_json::json;

    fn node(text: &str) -> Node {
        parse_str("play.yml", text).unwrap()
    }

    fn parse<T: KeywordValue>(kw: &'static str, text: &str) -> Result<Keyword<T>> {
        Keyword::<T>::parse(kw, &node(text))
    }

    fn resolved<T: KeywordValue>(kw: &'static str, text: &str, vars: Value) -> Result<Option<T>> {
        parse::<T>(kw, text)?.resolve(&Templar::new(), &to_mj(&vars))
    }

    #[test]
    fn host_order() {
        let h: Vec<String> = ["h3", "h10", "h1"].iter().map(|s| s.to_string()).collect();
        let o = |t: &str| match parse::<HostOrder>("order", t).unwrap() {
            Keyword::Literal(o) => o.apply(&h),
            _ => unreachable!(),
        };
        assert_eq!(o("inventory"), ["h3", "h10", "h1"]);
        assert_eq!(o("shuffle"), ["h3", "h10", "h1"]);
        assert_eq!(o("sorted"), ["h1", "h10", "h3"]);
        assert_eq!(o("reverse_sorted"), ["h3", "h10", "h1"]);
        assert_eq!(o("reverse_inventory"), ["h1", "h10", "h3"]);
        assert!(parse::<HostOrder>("order", "random").is_err());
        let r = resolved::<HostOrder>("order", "'{{ o }}'", json!({"o": "sorted"}));
        assert_eq!(r.unwrap(), Some(HostOrder::Sorted));
    }

    #[test]
    fn literals_are_checked_at_load_time() {
        assert_eq!(parse::<u64>("retries", "5").unwrap(), Keyword::Literal(5));
        assert_eq!(parse::<u64>("retries", "'5'").unwrap(), Keyword::Literal(5));
        let e = parse::<u64>("retries", "many").unwrap_err();
        assert_eq!(e.kind, ErrorKind::Syntax);
        assert_eq!(e.message, "retries expects an integer, found `many`");
        assert_eq!(e.span.unwrap().to_string(), "play.yml:1:1");
        let e = parse::<Seconds>("delay", "-1").unwrap_err();
        assert_eq!(e.message, "delay expects a non-negative number, found `-1`");
        assert!(parse::<u64>("timeout", "1e30").is_err());
        assert!(parse::<u64>("timeout", ".nan").is_err());
        assert!(parse::<u64>("throttle", "2.5").is_err());
        assert!(parse::<Seconds>("delay", ".inf").is_err());
        assert_eq!(
            parse::<Seconds>("delay", "0.5").unwrap(),
            Keyword::Literal(Seconds(0.5))
        );
    }

    #[test]
    fn booleans_are_lenient_like_ansible() {
        for (text, want) in [("yes", true), ("off", false), ("1", true), ("'no'", false)] {
            assert_eq!(
                parse::<bool>("become", text).unwrap(),
                Keyword::Literal(want)
            );
        }
        let e = parse::<bool>("any_errors_fatal", "maybe").unwrap_err();
        assert_eq!(
            e.message,
            "any_errors_fatal expects a boolean, found `maybe`"
        );
        assert!(parse::<bool>("become", "[1]").is_err());
    }

    #[test]
    fn serial_strategy_percent_and_become_method() {
        assert_eq!(
            parse::<Serial>("serial", "[1, '50%']").unwrap(),
            Keyword::Literal(Serial(vec![BatchSize::Hosts(1), BatchSize::Percent(50.0)]))
        );
        assert!(parse::<Serial>("serial", "abc").is_err());
        assert!(parse::<Serial>("serial", "[1, x]").is_err());
        assert_eq!(
            parse::<Strategy>("strategy", "free").unwrap(),
            Keyword::Literal(Strategy::Free)
        );
        assert!(parse::<Strategy>("strategy", "fast").is_err());
        assert_eq!(
            parse::<Percent>("max_fail_percentage", "'30%'").unwrap(),
            Keyword::Literal(Percent(30.0))
        );
        assert_eq!(
            parse::<BecomeMethod>("become_method", "su").unwrap(),
            Keyword::Literal(BecomeMethod::Su)
        );
        assert!(parse::<BecomeMethod>("become_method", "doas").is_err());
    }

    #[test]
    fn templates_are_rendered_then_checked() {
        assert_eq!(
            resolved::<u64>("retries", "'{{ n }}'", json!({"n": 4})).unwrap(),
            Some(4)
        );
        assert_eq!(
            resolved::<u64>("retries", "'{{ n }}0'", json!({"n": 4})).unwrap(),
            Some(40)
        );
        assert_eq!(
            resolved::<bool>("ignore_errors", "'{{ flag }}'", json!({"flag": "yes"})).unwrap(),
            Some(true)
        );
        let e = resolved::<u64>("timeout", "'{{ t }}'", json!({"t": "soon"})).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Template);
        assert_eq!(e.message, "timeout expects an integer, found `soon`");
        assert!(e.span.is_some());
        assert_eq!(
            resolved::<Serial>(
                "serial",
                "['{{ a }}', '{{ b }}']",
                json!({"a": 1, "b": "50%"})
            )
            .unwrap(),
            Some(Serial(vec![BatchSize::Hosts(1), BatchSize::Percent(50.0)]))
        );
        assert_eq!(
            resolved::<bool>("run_once", "'{{ omit }}'", json!({})).unwrap(),
            None
        );
        assert!(resolved::<u64>("retries", "'{{ nope }}'", json!({})).is_err());
    }

    #[test]
    fn omit_leaves_the_outer_value() {
        let outer = Some(parse::<bool>("become", "true").unwrap());
        let inner = Some(parse::<bool>("become", "'{{ flag | default(omit) }}'").unwrap());
        let k = inherit(&inner, &outer).unwrap();
        let t = Templar::new();
        let omit = json!({"omit": OMIT});
        assert_eq!(k.resolve(&t, &to_mj(&omit)).unwrap(), Some(true));
        let set = json!({"omit": OMIT, "flag": false});
        assert_eq!(k.resolve(&t, &to_mj(&set)).unwrap(), Some(false));
        // A literal inside wins without a fallback; nothing inside keeps the outer value.
        let lit = Some(parse::<bool>("become", "false").unwrap());
        assert_eq!(inherit(&lit, &outer), lit);
        assert_eq!(inherit(&None, &outer), outer);
    }

    #[test]
    fn untemplated_keywords_refuse_templates() {
        let e = reject_template("register", &node("'{{ name }}'")).unwrap_err();
        assert!(
            e.message.contains("Ansible does not template"),
            "{}",
            e.message
        );
        assert!(reject_template("register", &node("out")).is_ok());
    }
}
