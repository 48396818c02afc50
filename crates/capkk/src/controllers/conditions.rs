//! Cluster API conditions on our status types: set one by type, keeping
//! `lastTransitionTime` unless the status itself changes (Cluster API's `conditions.Set`),
//! so a reconcile that finds things as they were writes nothing.

use crate::api::Condition;

/// `status: True`.
pub const TRUE: &str = "True";
/// `status: False`.
pub const FALSE: &str = "False";

/// Severity of a False condition that is only waiting.
pub const INFO: &str = "Info";
/// Severity of a False condition that may pass.
pub const WARNING: &str = "Warning";
/// Severity of a False condition that needs a person.
pub const ERROR: &str = "Error";

/// The condition of type `type_`, if set.
pub fn get<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}

/// Whether `type_` is set and True.
pub fn is_true(conditions: &[Condition], type_: &str) -> bool {
    get(conditions, type_).is_some_and(|c| c.status == TRUE)
}

/// Sets `type_` True (clearing reason, severity and message).
pub fn mark_true(conditions: &mut Vec<Condition>, type_: &str, now: &str) {
    set(
        conditions,
        Condition {
            type_: type_.to_string(),
            status: TRUE.to_string(),
            ..Condition::default()
        },
        now,
    );
}

/// Sets `type_` False with why.
pub fn mark_false(
    conditions: &mut Vec<Condition>,
    type_: &str,
    reason: &str,
    severity: &str,
    message: &str,
    now: &str,
) {
    set(
        conditions,
        Condition {
            type_: type_.to_string(),
            status: FALSE.to_string(),
            severity: severity.to_string(),
            reason: reason.to_string(),
            message: message.to_string(),
            last_transition_time: None,
        },
        now,
    );
}

/// Replaces or appends `new`; its `lastTransitionTime` is the old one when the status is
/// unchanged, else `now`. Conditions stay sorted by type with `Ready` first (Cluster
/// API's order), so their order never depends on which was set first.
pub fn set(conditions: &mut Vec<Condition>, mut new: Condition, now: &str) {
    match conditions.iter_mut().find(|c| c.type_ == new.type_) {
        Some(old) => {
            new.last_transition_time = if old.status == new.status {
                old.last_transition_time.clone()
            } else {
                Some(now.to_string())
            };
            *old = new;
        }
        None => {
            new.last_transition_time = Some(now.to_string());
            conditions.push(new);
        }
    }
    conditions.sort_by(|a, b| (a.type_ != "Ready", &a.type_).cmp(&(b.type_ != "Ready", &b.type_)));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transition_time_changes_only_with_status() {
        let mut c = Vec::new();
        mark_false(&mut c, "Ready", "Waiting", INFO, "", "t1");
        mark_false(&mut c, "Ready", "Other", WARNING, "m", "t2");
        assert_eq!(c[0].last_transition_time.as_deref(), Some("t1"));
        assert_eq!(c[0].reason, "Other");
        mark_true(&mut c, "Ready", "t3");
        assert_eq!(c[0].last_transition_time.as_deref(), Some("t3"));
        assert_eq!(c[0].reason, "");
        mark_true(&mut c, "B", "t4");
        mark_true(&mut c, "A", "t4");
        let types: Vec<_> = c.iter().map(|c| c.type_.as_str()).collect();
        assert_eq!(types, ["Ready", "A", "B"]);
    }
}
