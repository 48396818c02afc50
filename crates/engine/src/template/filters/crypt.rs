//! `password_hash`: SHA-crypt (`$5$`, `$6$`), MD5-crypt (`$1$`) and bcrypt (`$2b$`) hashes
//! written exactly as ansible-core 2.19 writes them through passlib — the same rounds
//! defaults (sha512 656000, sha256 535000, bcrypt cost 12), `rounds=` left out at 5000
//! (crypt's implicit count), the same salt rules. Without a salt one is drawn at random
//! (16 characters for SHA-crypt, 8 for MD5, 16 bytes for bcrypt, as passlib does).

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
    // Ansible reads `rounds: 0` as not given (`if rounds:`).
    let rounds = rounds.filter(|r| *r != 0);
    let ident = kwargs
        .get::<Option<Value>>("ident")?
        .filter(|v| !v.is_none())
        .map(|v| v.to_string());
    kwargs.assert_all_used()?;
    let Some(secret) = secret.as_str() else {
        return Err(fail(format!(
            "secret must be unicode or bytes, not {}",
            super::py_type(&secret)
        )));
    };
    let algo = match hashtype.as_str() {
        "sha512" | "sha512_crypt" => Algo::Sha512,
        "sha256" | "sha256_crypt" => Algo::Sha256,
        "md5" | "md5_crypt" => Algo::Md5,
        "blowfish" | "bcrypt" => Algo::Bcrypt,
        other => {
            return Err(fail(format!(
            "{} is not in the list of supported passlib algorithms: md5, blowfish, sha256, sha512",
            other
        )))
        }
    };
    let name = algo.name();
    // Ansible drops an empty salt (`if not salt`): one is drawn at random.
    let salt = salt.map(|s| s.to_string()).filter(|s| !s.is_empty());
    let hash = match algo {
        Algo::Sha512 | Algo::Sha256 => {
            let salt = check_salt(salt, name, 16)?;
            sha_crypt_hash(algo, secret, &salt, rounds)?
        }
        Algo::Md5 => {
            if rounds.is_some() {
                return Err(fail("Could not hash the secret: md5_crypt takes no rounds"));
            }
            let salt = check_salt(salt, name, 8)?;
            String::from_utf8(md5crypt::md5crypt(secret.as_bytes(), salt.as_bytes()))
                .map_err(|e| fail(format!("Could not hash the secret: {}", e)))?
        }
        Algo::Bcrypt => bcrypt_hash(secret, salt, rounds, ident)?,
    };
    Ok(Value::from(hash))
}

/// The hash algorithms `password_hash` knows, by passlib's names.
#[derive(Clone, Copy, PartialEq)]
enum Algo {
    Sha512,
    Sha256,
    Md5,
    Bcrypt,
}

impl Algo {
    /// passlib's name, as its messages give it.
    fn name(self) -> &'static str {
        match self {
            Algo::Sha512 => "sha512_crypt",
            Algo::Sha256 => "sha256_crypt",
            Algo::Md5 => "md5_crypt",
            Algo::Bcrypt => "bcrypt",
        }
    }
}

/// A crypt salt as passlib takes it (at most `max` characters of [`SALT_CHARS`]), or
/// `max` random ones.
fn check_salt(salt: Option<String>, name: &str, max: usize) -> Result<String, Error> {
    let Some(s) = salt else {
        return random_salt(max);
    };
    if s.len() > max {
        return Err(fail(format!(
            "Could not hash the secret: salt too large ({} requires <= {} chars)",
            name, max
        )));
    }
    if !s.bytes().all(|b| SALT_CHARS.contains(&b)) {
        return Err(fail(format!(
            "Could not hash the secret: invalid characters in {} salt",
            name
        )));
    }
    Ok(s)
}

/// `$5$`/`$6$` hashes; `rounds=` is left out at 5000 (crypt's implicit count).
fn sha_crypt_hash(
    algo: Algo,
    secret: &str,
    salt: &str,
    rounds: Option<i64>,
) -> Result<String, Error> {
    let (id, default_rounds) = if algo == Algo::Sha512 {
        (6, 656_000)
    } else {
        (5, 535_000)
    };
    let rounds = rounds.unwrap_or(default_rounds);
    if !(1000..=999_999_999).contains(&rounds) {
        return Err(fail(format!(
            "Could not hash the secret: {}: rounds ({}) must be between 1000 and 999999999",
            algo.name(),
            rounds
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
    Ok(format!("${}${}{}${}", id, rounds_part, salt, hash))
}

/// bcrypt's 64 characters, in the order its base64 gives them values.
const BCRYPT64: &[u8] = b"./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/// `$2b$` hashes as passlib makes them: a salt of exactly 22 bcrypt-base64 characters
/// (the last one's 4 unused bits cleared, as Ansible's `repair_unused` does), cost
/// `rounds` (default 12, 4 to 31), version `ident` (2a, 2y or 2b, the default).
fn bcrypt_hash(
    secret: &str,
    salt: Option<String>,
    rounds: Option<i64>,
    ident: Option<String>,
) -> Result<String, Error> {
    let cost = rounds.unwrap_or(12);
    if cost < 4 {
        return Err(fail(format!(
            "Could not hash the secret: bcrypt: min_desired_rounds ({}) is too low, must be at least 4",
            cost
        )));
    }
    if cost > 31 {
        return Err(fail(format!(
            "Could not hash the secret: bcrypt: max_desired_rounds ({}) is too high, must be at most 31",
            cost
        )));
    }
    let version = match ident.as_deref().filter(|i| !i.is_empty()) {
        None | Some("2b") => bcrypt::Version::TwoB,
        Some("2a") => bcrypt::Version::TwoA,
        Some("2y") => bcrypt::Version::TwoY,
        Some(other) => {
            return Err(fail(format!(
            "Could not hash the secret: invalid ident: '{}' (kk makes 2a, 2b and 2y bcrypt hashes)",
            other
        )))
        }
    };
    let raw = match salt {
        None => {
            let mut raw = [0u8; 16];
            getrandom::getrandom(&mut raw).map_err(|e| fail(format!("password_hash: {}", e)))?;
            raw
        }
        Some(s) => decode_bcrypt_salt(&s)?,
    };
    let parts = bcrypt::hash_with_salt(secret.as_bytes(), cost as u32, raw)
        .map_err(|e| fail(format!("Could not hash the secret: {}", e)))?;
    Ok(parts.format_for_version(version))
}

/// The 16 bytes a 22-character bcrypt salt stands for.
fn decode_bcrypt_salt(s: &str) -> Result<[u8; 16], Error> {
    if s.len() != 22 {
        let size = if s.len() < 22 { "small" } else { "large" };
        return Err(fail(format!(
            "Could not hash the secret: salt too {} (bcrypt requires exactly 22 chars)",
            size
        )));
    }
    let mut bits: u128 = 0;
    for (i, c) in s.bytes().enumerate() {
        let v =
            BCRYPT64.iter().position(|&b| b == c).ok_or_else(|| {
                fail("Could not hash the secret: invalid characters in bcrypt salt")
            })? as u128;
        // 21 characters give 126 bits; the last one's 2 high bits end the 128.
        bits = if i < 21 {
            (bits << 6) | v
        } else {
            (bits << 2) | (v >> 4)
        };
    }
    Ok(bits.to_be_bytes())
}

/// An integer argument given as a number or as its text.
fn int_of(v: &Value) -> Option<i64> {
    match v.as_str() {
        Some(s) => s.trim().parse().ok(),
        None => i64::try_from(v.clone()).ok(),
    }
}

/// `n` (at most 16) random salt characters.
fn random_salt(n: usize) -> Result<String, Error> {
    let mut bytes = [0u8; 16];
    getrandom::getrandom(&mut bytes).map_err(|e| fail(format!("password_hash: {}", e)))?;
    Ok(bytes[..n]
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

    #[test]
    fn md5_and_bcrypt_match_passlib() {
        let t = Templar::new();
        let ctx = to_mj(&serde_json::json!({}));
        let r = |s: &str| t.render_str(s, &ctx).unwrap();
        // Values printed by ansible-core 2.19 with passlib 1.7.4 and bcrypt 4.0.1.
        assert_eq!(
            r("{{ 'secret' | password_hash('md5', 'mysalt') }}"),
            "$1$mysalt$n/EfEiV74OYgBdqhKQzSW/"
        );
        assert_eq!(
            r("{{ 'secret' | password_hash('md5_crypt', '12345678') }}"),
            "$1$12345678$hj0uLpdidjPhbMMZeno8X/"
        );
        // The salt's last character has unused bits: cleared as Ansible does ('v' -> 'u').
        assert_eq!(
            r("{{ 'secret' | password_hash('blowfish', 'abcdefghijklmnopqrstuv', rounds=4) }}"),
            "$2b$04$abcdefghijklmnopqrstuu2r9OfJnfCsdneAXAGHnS4UpFFP8WIrW"
        );
        assert_eq!(
            r("{{ 'secret' | password_hash('bcrypt', 'abcdefghijklmnopqrstuu', rounds=5, ident='2a') }}"),
            "$2a$05$abcdefghijklmnopqrstuuOQiyCxlgf/oeuTqixKmWdcYUh4Hjl0a"
        );
        // Secrets past 72 bytes are cut, as bcrypt does.
        assert_eq!(
            r("{{ ('x' * 80) | password_hash('blowfish', './ABCDEFGHIJKLMNOPQRST', rounds=4, ident='2y') }}"),
            "$2y$04$./ABCDEFGHIJKLMNOPQRSOYvcH4IM0nZo2yYC9VIY4mCI.q7rGrmu"
        );
        assert_eq!(
            r("{{ 'pässwörd' | password_hash('blowfish', '9999999999999999999999', rounds=6) }}"),
            "$2b$06$999999999999999999999uS1wy2nnetICRnQ4iO0Lwr1um4v3q1/2"
        );
        assert_eq!(
            r("{{ 'x' | password_hash('md5') | length }} {{ 'x' | password_hash('blowfish', rounds=4) | length }} {{ 'x' | password_hash('md5', '') | length }}"),
            "34 60 34"
        );
        for bad in [
            "{{ 'x' | password_hash('md5', '123456789') }}",
            "{{ 'x' | password_hash('md5', 'ab!') }}",
            "{{ 'x' | password_hash('md5', 'ab', rounds=5000) }}",
            "{{ 'x' | password_hash('blowfish', 'abc') }}",
            "{{ 'x' | password_hash('blowfish', 'abcdefghijklmnopqrstuv', rounds=3) }}",
            "{{ 'x' | password_hash('blowfish', 'abcdefghijklmnopqrstu!') }}",
            "{{ 'x' | password_hash('blowfish', 'abcdefghijklmnopqrstuv', ident='2x') }}",
        ] {
            let e = t.render_str(bad, &ctx).unwrap_err();
            assert!(
                e.message.contains("Could not hash the secret"),
                "{}: {}",
                bad,
                e.message
            );
        }
    }
}
