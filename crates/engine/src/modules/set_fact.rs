//! `set_fact`: set variables on the host for the rest of the run.

use async_trait::async_trait;

use super::{Effect, Module, ModuleContext, ModuleResult, VarMap};
use crate::ansible::{is_identifier, to_bool};
use crate::error::{Error, ErrorKind, Result};

/// Sets host variables (layer 10 of design §3); `cacheable` is accepted and ignored.
pub struct SetFact;

#[async_trait]
impl Module for SetFact {
    fn validate(&self, args: &VarMap) -> Result<()> {
        check(&mut args.clone())
    }

    async fn run(&self, _ctx: &ModuleContext, mut raw: VarMap) -> Result<ModuleResult> {
        check(&mut raw)?;
        Ok(ModuleResult::ok().with_facts(raw, Effect::SetFacts))
    }
}

/// Takes `cacheable` out and checks the rest are variables to set.
fn check(raw: &mut VarMap) -> Result<()> {
    // Accepted and ignored (kk has no fact cache).
    raw.remove("cacheable").map(|v| to_bool(&v));
    if raw.contains_key("_raw_params") {
        return Err(Error::new(
            ErrorKind::ModuleArgs,
            "set_fact takes key=value pairs or a mapping, not free text",
        ));
    }
    if raw.is_empty() {
        return Err(Error::new(
            ErrorKind::ModuleArgs,
            "set_fact needs at least one variable to set",
        ));
    }
    for k in raw.keys() {
        if !is_identifier(k) {
            return Err(Error::new(
                ErrorKind::ModuleArgs,
                format!("`{}` is not a valid variable name", k),
            )
            .help(
                "variable names are letters, digits and underscores, not starting with a digit",
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn validate_at_load() {
        let check = |a: serde_json::Value| SetFact.validate(a.as_object().unwrap());
        assert!(check(json!({"a": 1, "cacheable": true})).is_ok());
        let e = check(json!({"bad-name": 1})).unwrap_err();
        assert!(e.message.contains("bad-name"));
        assert!(check(json!({"cacheable": true})).is_err());
    }
}
