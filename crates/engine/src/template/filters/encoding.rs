//! Encodings and hashes: `b64encode`/`b64decode` with Python's codecs, `hash`,
//! `checksum`/`sha1`, `md5`.

use base64::Engine as _;
use minijinja::value::Kwargs;
use minijinja::{Error, Value};

use super::{arg, fail, py_str};

pub(super) fn b64encode(
    value: &Value,
    encoding: Option<Value>,
    kwargs: Kwargs,
) -> Result<String, Error> {
    let encoding = arg(encoding, &kwargs, "encoding")?.map(|v| py_str(&v));
    kwargs.assert_all_used()?;
    let s = py_str(value);
    let bytes = encode_text("b64encode", &s, encoding.as_deref())?;
    Ok(base64::engine::general_purpose::STANDARD.encode(bytes))
}

fn encode_text(filter: &str, s: &str, encoding: Option<&str>) -> Result<Vec<u8>, Error> {
    match encoding
        .unwrap_or("utf-8")
        .to_ascii_lowercase()
        .replace('_', "-")
        .as_str()
    {
        "utf-8" | "utf8" => Ok(s.as_bytes().to_vec()),
        "utf-16-le" | "utf-16le" => Ok(s.encode_utf16().flat_map(|u| u.to_le_bytes()).collect()),
        "ascii" | "latin-1" | "latin1" | "iso-8859-1" if s.is_ascii() => Ok(s.as_bytes().to_vec()),
        other => Err(fail(format!(
            "{}: unsupported encoding '{}' (use utf-8 or utf-16-le)",
            filter, other
        ))),
    }
}

pub(super) fn b64decode(
    value: &Value,
    encoding: Option<Value>,
    kwargs: Kwargs,
) -> Result<String, Error> {
    let encoding = arg(encoding, &kwargs, "encoding")?.map(|v| py_str(&v));
    kwargs.assert_all_used()?;
    let s: String = py_str(value)
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    let engine = base64::engine::GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        base64::engine::GeneralPurposeConfig::new()
            .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent),
    );
    let bytes = engine
        .decode(s.as_bytes())
        .map_err(|e| fail(format!("b64decode: the input is not valid base64: {}", e)))?;
    match encoding
        .as_deref()
        .unwrap_or("utf-8")
        .to_ascii_lowercase()
        .replace('_', "-")
        .as_str()
    {
        "utf-8" | "utf8" => String::from_utf8(bytes)
            .map_err(|_| fail("b64decode: the decoded bytes are not valid UTF-8 text")),
        "utf-16-le" | "utf-16le" => {
            if bytes.len() % 2 != 0 {
                return Err(fail(
                    "b64decode: the decoded bytes are not valid UTF-16-LE text (odd length)",
                ));
            }
            let units: Vec<u16> = bytes
                .chunks(2)
                .map(|c| u16::from_le_bytes([c[0], c[1]]))
                .collect();
            String::from_utf16(&units)
                .map_err(|_| fail("b64decode: the decoded bytes are not valid UTF-16-LE text"))
        }
        other => Err(fail(format!(
            "b64decode: unsupported encoding '{}' (use utf-8 or utf-16-le)",
            other
        ))),
    }
}

fn digest(kind: &str, data: &[u8]) -> Option<String> {
    use sha2::Digest;
    Some(match kind {
        "md5" => hex::encode(md5::Md5::digest(data)),
        "sha1" => hex::encode(sha1::Sha1::digest(data)),
        "sha224" => hex::encode(sha2::Sha224::digest(data)),
        "sha256" => hex::encode(sha2::Sha256::digest(data)),
        "sha384" => hex::encode(sha2::Sha384::digest(data)),
        "sha512" => hex::encode(sha2::Sha512::digest(data)),
        _ => return None,
    })
}

pub(super) fn hash(
    value: &Value,
    hashtype: Option<Value>,
    kwargs: Kwargs,
) -> Result<String, Error> {
    let kind = arg(hashtype, &kwargs, "hashtype")?
        .map(|v| py_str(&v))
        .unwrap_or_else(|| "sha1".into())
        .to_ascii_lowercase();
    kwargs.assert_all_used()?;
    digest(&kind, py_str(value).as_bytes()).ok_or_else(|| {
        fail(format!(
            "hash: unsupported hash type '{}'; use md5, sha1, sha224, sha256, sha384 or sha512",
            kind
        ))
    })
}

pub(super) fn sha1_filter(value: &Value) -> String {
    digest("sha1", py_str(value).as_bytes()).unwrap_or_default()
}

pub(super) fn md5_filter(value: &Value) -> String {
    digest("md5", py_str(value).as_bytes()).unwrap_or_default()
}
