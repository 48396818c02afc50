//! `password_hash`: SHA-crypt hashes (`$5$`, `$6$`) written exactly as ansible-core 2.19
//! writes them through passlib — the same rounds defaults (sha512 656000, sha256 535000),
//! `rounds=` left out at 5000 (crypt's implicit count), the same salt rules. Without a salt
//! one is drawn at random (16 characters, as passlib does).

use minijinja::value::Kwargs;
use minijinja::{Error, Value};

use super::fail;

/// The characters crypt salts are made of.
const SALT_CHARS: &[u8] = b"./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// `secret | password_hash(hashtype='sha512', salt=None, rounds=None, ident=None)`.
pub(super) fn password_hash(
    secret: Value,
    hashtype: Option<String>,
    salt: Option<Value>,
    kwargs: Kwargs,
) -> Result<Value, Error> {
    let hashtype = match kwargs.get::<Option<String>>("hashtype")? {
        Some(h) => Some(h),
        None => hashtype,
    }
    .unwrap_or_else(|| "sha512".into());
    let salt = match kwargs.get::<Option<Value>>("salt")? {
        Some(s) => Some(s),
        None => salt,
    }
    .filter(|s| !s.is_none() && !s.is_undefined());
    let rounds = match kwargs.get::<Option<Value>>("rounds")? {
        None => None,
        Some(r) if r.is_none() => None,
        Some(r) => Some(int_of(&r).ok_or_else(|| {
            fail(format!(
                "password_hash: rounds must be an integer, got '{}'",
                r
            ))
        })?),
    };
    let _ = kwargs.get::<Option<Value>>("ident")?;
    kwargs.assert_all_used()?;
    let Some(secret) = secret.as_str() else {
        return Err(fail(format!(
            "secret must be unicode or bytes, not {}",
            super::py_type(&secret)
        )));
    };
    let (id, name, default_rounds) = match hashtype.as_str() {
        "sha512" | "sha512_crypt" => (6, "sha512_crypt", 656_000),
        "sha256" | "sha256_crypt" => (5, "sha256_crypt", 535_000),
        "md5" | "md5_crypt" | "blowfish" | "bcrypt" => {
            return Err(fail(format!(
                "password_hash: kk hashes sha256 and sha512 only, not {}",
                hashtype
            )))
        }
        other => {
            return Err(fail(format!(
            "{} is not in the list of supported passlib algorithms: md5, blowfish, sha256, sha512",
            other
        )))
        }
    };
    let salt = match salt {
        Some(s) => {
            let s = s.to_string();
            if s.len() > 16 {
                return Err(fail(format!(
                    "Could not hash the secret: salt too large ({} requires <= 16 chars)",
                    name
                )));
            }
            if !s.bytes().all(|b| SALT_CHARS.contains(&b)) {
                return Err(fail(format!(
                    "Could not hash the secret: invalid characters in {} salt",
                    name
                )));
            }
            s
        }
        None => random_salt()?,
    };
    let rounds = rounds.unwrap_or(default_rounds);
    if !(1000..=999_999_999).contains(&rounds) {
        return Err(fail(format!(
            "Could not hash the secret: {}: rounds ({}) must be between 1000 and 999999999",
            name, rounds
        )));
    }
    let r = rounds as usize;
    let hash = if id == 6 {
        let params = sha_crypt::Sha512Params::new(r).map_err(|e| fail(format!("{:?}", e)))?;
        sha_crypt::sha512_crypt_b64(secret.as_bytes(), salt.as_bytes(), &params)
    } else {
        let params = sha_crypt::Sha256Params::new(r).map_err(|e| fail(format!("{:?}", e)))?;
        sha_crypt::sha256_crypt_b64(secret.as_bytes(), salt.as_bytes(), &params)
    }
    .map_err(|e| fail(format!("Could not hash the secret: {:?}", e)))?;
    let rounds_part = if rounds == 5000 {
        String::new()
    } else {
        format!("rounds={}$", rounds)
    };
    Ok(Value::from(format!(
        "${}${}{}${}",
        id, rounds_part, salt, hash
    )))
}

/// An integer argument given as a number or as its text.
fn int_of(v: &Value) -> Option<i64> {
    match v.as_str() {
        Some(s) => s.trim().parse().ok(),
        None => i64::try_from(v.clone()).ok(),
    }
}

/// 16 random salt characters.
fn random_salt() -> Result<String, Error> {
    let mut bytes = [0u8; 16];
    getrandom::getrandom(&mut bytes).map_err(|e| fail(format!("password_hash: {}", e)))?;
    Ok(bytes
        .iter()
        .map(|b| SALT_CHARS[(*b as usize) % SALT_CHARS.len()] as char)
        .collect())
}

#[cfg(test)]
mod tests {
    use crate::template::{to_mj, Templar};

    #[test]
    fn matches_passlib() {
        let t = Templar::new();
        let r = |s: &str| t.render_str(s, &to_mj(&serde_json::json!({}))).unwrap();
        // Values printed by ansible-core 2.19 with passlib 1.7.4.
        assert_eq!(
            r("{{ 'secret' | password_hash('sha256', 'mysalt', rounds=5000) }}"),
            "$5$mysalt$I2SNajjJ3Gc5gIR/tkrLOGngF8wqv59buJCqxh.o9s8"
        );
        assert_eq!(
            r("{{ 'secret' | password_hash('sha256_crypt', 'ab', rounds=1000) }}"),
            "$5$rounds=1000$ab$bw4PhTdETPYycBP1S/MfHGVqzf4cldTXkxqJJ2X8w.3"
        );
        assert_eq!(
            r("{{ 'x' | password_hash('sha512', 'ab', rounds='7000') }}"),
            "$6$rounds=7000$ab$X3c18EkBN0LtZn.OCCNQ1xL/pzxDFkCx4/NyA1vvYs2dcuTX6FCcWE5iqiWSpwodj8soNCd4znSdPYQR9VVYu1"
        );
        assert_eq!(
            r("{{ 'x' | password_hash(salt='ab') | length }}"),
            serde_json::json!(106)
        );
    }
}
