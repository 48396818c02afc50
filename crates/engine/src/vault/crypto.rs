//! Vault's only cipher, `AES256`: PBKDF2-HMAC-SHA256 (10,000 rounds, 32-byte salt) gives
//! 80 bytes — an AES-256 key, an HMAC-SHA256 key and the CTR mode's initial counter. The
//! PKCS#7-padded plaintext is encrypted with AES-256-CTR and authenticated with the HMAC
//! (encrypt-then-MAC). The payload is `hex(salt) \n hex(hmac) \n hex(ciphertext)`, hexlified
//! once more: ansible-core's layout, byte for byte, so each tool reads the other's files.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use aes::cipher::{KeyIvInit, StreamCipher};
use hmac::{Hmac, Mac};
use sha2::Sha256;

type Aes256Ctr = ctr::Ctr128BE<aes::Aes256>;
type HmacSha256 = Hmac<Sha256>;

/// PBKDF2 rounds (ansible-core's fixed count).
const ROUNDS: u32 = 10_000;
/// Bytes of a fresh salt (ansible-core's `os.urandom(32)`).
pub(crate) const SALT_LEN: usize = 32;

/// Why a payload did not decrypt.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum CryptoError {
    /// The payload is not the hexlified salt/hmac/ciphertext triple.
    Format(&'static str),
    /// The HMAC does not match: another password (or altered data).
    Mac,
    /// The HMAC matched but the padding is wrong: corrupt data.
    Padding,
}

/// The three keys PBKDF2 gives for one password and salt.
#[derive(Clone)]
struct Keys {
    cipher: [u8; 32],
    mac: [u8; 32],
    iv: [u8; 16],
}

/// Derived keys by (password, salt).
type KeyCache = Mutex<HashMap<(Vec<u8>, Vec<u8>), Keys>>;

/// Derived keys by (password, salt): PBKDF2 is the slow part (10,000 rounds), and the same
/// file or value is often decrypted more than once in a run (as ansible-core's cache).
fn derive(password: &[u8], salt: &[u8]) -> Keys {
    static CACHE: OnceLock<KeyCache> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let key = (password.to_vec(), salt.to_vec());
    if let Some(k) = cache.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return k.clone();
    }
    let mut out = [0u8; 80];
    pbkdf2::pbkdf2_hmac::<Sha256>(password, salt, ROUNDS, &mut out);
    let mut keys = Keys {
        cipher: [0; 32],
        mac: [0; 32],
        iv: [0; 16],
    };
    keys.cipher.copy_from_slice(&out[..32]);
    keys.mac.copy_from_slice(&out[32..64]);
    keys.iv.copy_from_slice(&out[64..]);
    let mut cache = cache.lock().unwrap_or_else(|e| e.into_inner());
    // Bounded: a run decrypts a handful of distinct values; a pathological one just recomputes.
    if cache.len() > 4096 {
        cache.clear();
    }
    cache.insert(key, keys.clone());
    keys
}

/// A fresh random salt.
pub(crate) fn random_salt() -> std::io::Result<[u8; SALT_LEN]> {
    let mut salt = [0u8; SALT_LEN];
    getrandom::getrandom(&mut salt).map_err(std::io::Error::other)?;
    Ok(salt)
}

/// Encrypts `plaintext` with `password` and `salt`: the payload that follows the header
/// (not yet cut into lines).
pub(crate) fn encrypt(plaintext: &[u8], password: &[u8], salt: &[u8]) -> Vec<u8> {
    let keys = derive(password, salt);
    let pad = 16 - plaintext.len() % 16;
    let mut data = Vec::with_capacity(plaintext.len() + pad);
    data.extend_from_slice(plaintext);
    data.resize(plaintext.len() + pad, pad as u8);
    Aes256Ctr::new(&keys.cipher.into(), &keys.iv.into()).apply_keystream(&mut data);
    let mut mac = HmacSha256::new_from_slice(&keys.mac).expect("HMAC takes any key length");
    mac.update(&data);
    let tag = mac.finalize().into_bytes();
    let inner = format!(
        "{}\n{}\n{}",
        hex::encode(salt),
        hex::encode(tag),
        hex::encode(&data)
    );
    hex::encode(inner).into_bytes()
}

/// Decrypts a payload (the lines after the header, joined) with `password`.
pub(crate) fn decrypt(payload: &[u8], password: &[u8]) -> Result<Vec<u8>, CryptoError> {
    let inner = hex::decode(payload).map_err(|_| CryptoError::Format("not hexadecimal"))?;
    let mut parts = inner.splitn(3, |b| *b == b'\n');
    let (Some(salt), Some(tag), Some(data)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(CryptoError::Format(
            "not the salt, HMAC and ciphertext triple",
        ));
    };
    let salt = hex::decode(salt).map_err(|_| CryptoError::Format("salt is not hexadecimal"))?;
    let tag = hex::decode(tag).map_err(|_| CryptoError::Format("HMAC is not hexadecimal"))?;
    let mut data =
        hex::decode(data).map_err(|_| CryptoError::Format("ciphertext is not hexadecimal"))?;
    let keys = derive(password, &salt);
    let mut mac = HmacSha256::new_from_slice(&keys.mac).expect("HMAC takes any key length");
    mac.update(&data);
    mac.verify_slice(&tag).map_err(|_| CryptoError::Mac)?;
    Aes256Ctr::new(&keys.cipher.into(), &keys.iv.into()).apply_keystream(&mut data);
    let pad = *data.last().ok_or(CryptoError::Padding)? as usize;
    if pad == 0 || pad > 16 || pad > data.len() || data.len() % 16 != 0 {
        return Err(CryptoError::Padding);
    }
    if data[data.len() - pad..].iter().any(|b| *b as usize != pad) {
        return Err(CryptoError::Padding);
    }
    data.truncate(data.len() - pad);
    Ok(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_padding_lengths() {
        for n in [0usize, 1, 15, 16, 17, 100] {
            let text = vec![b'x'; n];
            let p = encrypt(&text, b"pw", &[7u8; SALT_LEN]);
            assert_eq!(decrypt(&p, b"pw").unwrap(), text, "length {}", n);
        }
    }

    #[test]
    fn wrong_password_is_a_mac_error() {
        let p = encrypt(b"secret", b"pw", &[1u8; SALT_LEN]);
        assert_eq!(decrypt(&p, b"other"), Err(CryptoError::Mac));
        assert!(matches!(decrypt(b"zz", b"pw"), Err(CryptoError::Format(_))));
    }

    /// A value ansible-core 2.19 wrote (`ansible-vault encrypt_string` with password `pw`).
    #[test]
    fn decrypts_what_ansible_wrote() {
        let payload = concat!(
            "34623738313530343733333132626334663933373732373363316131613432643138313161396465",
            "6233633936353233653735316463643436313237653564310a613234306530343933653130306164",
            "37313234313162623437643337383038626465626136353331363232663364356230643265613366",
            "3331653431633737300a393365373637643732303535303233363965633736356666393536613539",
            "6161",
        );
        assert_eq!(decrypt(payload.as_bytes(), b"pw").unwrap(), b"hello");
    }
}
