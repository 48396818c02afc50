//! Writing only what changed: a JSON merge patch (RFC 7386) computed from the object as
//! read and as wanted, sent to the main resource or the status subresource. A reconcile
//! that changes nothing sends nothing, which keeps re-reconciles free of writes and of
//! the watch events writes would cause.

use super::Error;
use kube::api::{Patch, PatchParams};
use kube::{Api, Resource};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Value};
use std::fmt::Debug;

/// The merge patch that turns `old` into `new`: changed keys with their new values,
/// removed keys as `null`, nested objects patched key by key (arrays are replaced whole,
/// as RFC 7386 does). `None` when nothing changed.
pub fn merge_diff(old: &Value, new: &Value) -> Option<Value> {
    match (old, new) {
        (Value::Object(o), Value::Object(n)) => {
            let mut patch = Map::new();
            for (k, nv) in n {
                match o.get(k) {
                    Some(ov) => {
                        if let Some(p) = merge_diff(ov, nv) {
                            patch.insert(k.clone(), p);
                        }
                    }
                    None => {
                        patch.insert(k.clone(), nv.clone());
                    }
                }
            }
            for k in o.keys() {
                if !n.contains_key(k) {
                    patch.insert(k.clone(), Value::Null);
                }
            }
            (!patch.is_empty()).then_some(Value::Object(patch))
        }
        _ if old == new => None,
        _ => Some(new.clone()),
    }
}

/// Patches `status` of `name` through the status subresource when `new` differs from
/// `old`; returns whether it wrote.
pub async fn patch_status<K, S>(api: &Api<K>, name: &str, old: &S, new: &S) -> Result<bool, Error>
where
    K: Resource + Clone + DeserializeOwned + Debug,
    S: Serialize,
{
    let (old, new) = (to_value(old)?, to_value(new)?);
    let Some(diff) = merge_diff(&old, &new) else {
        return Ok(false);
    };
    let patch = serde_json::json!({ "status": diff });
    api.patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(true)
}

/// Patches `spec` of `name` when `new` differs from `old`; returns whether it wrote.
pub async fn patch_spec<K, S>(api: &Api<K>, name: &str, old: &S, new: &S) -> Result<bool, Error>
where
    K: Resource + Clone + DeserializeOwned + Debug,
    S: Serialize,
{
    let (old, new) = (to_value(old)?, to_value(new)?);
    let Some(diff) = merge_diff(&old, &new) else {
        return Ok(false);
    };
    let patch = serde_json::json!({ "spec": diff });
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(true)
}

fn to_value<S: Serialize>(v: &S) -> Result<Value, Error> {
    serde_json::to_value(v).map_err(|e| Error::Invalid(format!("cannot serialize a patch: {e}")))
}

#[cfg(test)]
mod tests {
    use super::merge_diff;
    use serde_json::json;

    #[test]
    fn diff_sets_changed_nulls_removed_and_skips_equal() {
        let old = json!({"a": 1, "b": {"c": 2, "d": 3}, "e": [1], "gone": "x"});
        let new = json!({"a": 1, "b": {"c": 2, "d": 4}, "e": [1, 2], "new": true});
        assert_eq!(
            merge_diff(&old, &new),
            Some(json!({"b": {"d": 4}, "e": [1, 2], "gone": null, "new": true}))
        );
        assert_eq!(merge_diff(&old, &old), None);
    }
}
