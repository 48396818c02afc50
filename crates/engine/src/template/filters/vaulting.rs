//! Ansible Vault from templates: the `vault` and `unvault` filters, the `vault_encrypted`
//! and `vaulted_file` tests — kk's own vault code ([`crate::vault`]), so the text is what
//! ansible-vault writes and reads.

use minijinja::value::Kwargs;
use minijinja::{Error, Value};

use super::{fail, py_type};
use crate::vault::{Keyring, Secret};

/// `secret | vault(password, vault_id='filter_default', salt=None, wrap_object=False)`.
pub(super) fn vault(value: Value, password: Value, kwargs: Kwargs) -> Result<Value, Error> {
    let vault_id = kwargs
        .get::<Option<String>>("vault_id")?
        .unwrap_or_else(|| "filter_default".into());
    let salt = kwargs.get::<Option<String>>("salt")?;
    let _ = kwargs.get::<Option<bool>>("wrap_object")?;
    kwargs.assert_all_used()?;
    let text = text_arg("vault", "secret", &value)?;
    let password = text_arg("vault", "vault password", &password)?;
    let out = crate::vault::encrypt_salted(
        text.as_bytes(),
        password.as_bytes(),
        salt.as_deref().map(str::as_bytes),
        Some(&vault_id),
    )
    .map_err(|e| fail(format!("Unable to encrypt: {}", e)))?;
    Ok(Value::from(String::from_utf8_lossy(&out).into_owned()))
}

/// `vaulted | unvault(password, vault_id='filter_default')`: text that is not vaulted is
/// returned as it is, as in Ansible.
pub(super) fn unvault(value: Value, password: Value, kwargs: Kwargs) -> Result<Value, Error> {
    let vault_id = kwargs
        .get::<Option<String>>("vault_id")?
        .unwrap_or_else(|| "filter_default".into());
    kwargs.assert_all_used()?;
    let text = text_arg("unvault", "vault", &value)?;
    let password = text_arg("unvault", "vault password", &password)?;
    let data = text.trim_start().as_bytes();
    if !crate::vault::is_encrypted(data) {
        return Ok(Value::from(text));
    }
    let ring = Keyring::new(vec![Secret::new(vault_id, password.as_bytes().to_vec())]);
    let (plain, _) = ring
        .decrypt(data)
        .map_err(|e| fail(format!("Unable to decrypt: {}", e)))?;
    Ok(Value::from(String::from_utf8_lossy(&plain).into_owned()))
}

/// `value is vault_encrypted`: true for a value that came from a `!vault` scalar.
pub(super) fn vault_encrypted(value: Value) -> bool {
    value.as_str().is_some_and(crate::vault::is_vault_scalar)
}

/// `path is vaulted_file`: the file starts with a vault header (a file that cannot be
/// read is an error, as in Ansible).
pub(super) fn vaulted_file(value: Value) -> Result<bool, Error> {
    let path = text_arg("vaulted_file", "path", &value)?;
    let mut head = [0u8; 64];
    let n = match std::fs::File::open(super::expand_user(&path)) {
        Ok(mut f) => std::io::Read::read(&mut f, &mut head).unwrap_or(0),
        Err(e) => {
            return Err(fail(format!(
                "Cannot test if the file '{}' is a vault: {}",
                path, e
            )))
        }
    };
    Ok(crate::vault::is_encrypted(&head[..n]))
}

fn text_arg(what: &str, name: &str, v: &Value) -> Result<String, Error> {
    match v.as_str() {
        Some(s) => Ok(s.to_string()),
        None => Err(fail(format!(
            "{}: the {} must be a string, got {}",
            what,
            name,
            py_type(v)
        ))),
    }
}

#[cfg(test)]
mod tests {
    use crate::template::{to_mj, Templar};

    #[test]
    fn vault_round_trip_as_ansible() {
        let t = Templar::new();
        let r = |s: &str| t.render_str(s, &to_mj(&serde_json::json!({}))).unwrap();
        // Printed by ansible-core 2.19: `'secret' | vault('pw1', salt='abc')`.
        assert_eq!(
            r("{{ 'secret' | vault('pw1', salt='abc') }}"),
            "$ANSIBLE_VAULT;1.2;AES256;filter_default\n3631363236330a336465636665303162633538336337656337343536346437343338323334643439\n616132666334393566303061663862666266613632653537306133353935630a3939376335666437\n626430336330636266656334663539616462623364636135\n"
        );
        assert_eq!(
            r("{{ 'secret' | vault('pw1') | unvault('pw1') }} {{ 'abc' | unvault('x') }}"),
            "secret abc"
        );
        assert!(t
            .render_str(
                "{{ 'secret' | vault('pw1') | unvault('wrong') }}",
                &to_mj(&serde_json::json!({}))
            )
            .is_err());
    }
}
