//! The vault envelope: a header line `$ANSIBLE_VAULT;1.1;AES256` (or
//! `$ANSIBLE_VAULT;1.2;AES256;<label>` when a vault id other than `default` encrypted it),
//! then the payload in lines of 80 characters, each ending in a newline.

/// What every vaulted text starts with.
pub const HEADER: &[u8] = b"$ANSIBLE_VAULT";

/// The label ansible-core gives a secret without one (`DEFAULT_VAULT_IDENTITY`).
pub const DEFAULT_LABEL: &str = "default";

/// A parsed envelope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Envelope {
    /// `1.1` or `1.2` (older ones are read too: the payload layout is the same).
    pub version: String,
    /// The cipher name (only `AES256` is known).
    pub cipher: String,
    /// The vault id of a 1.2 header.
    pub label: Option<String>,
    /// The payload lines joined.
    pub payload: Vec<u8>,
}

/// True when the data is vaulted text (starts with the header, as ansible-core checks).
pub fn is_encrypted(data: &[u8]) -> bool {
    data.starts_with(HEADER)
}

/// Splits a vaulted text into header fields and payload.
pub(crate) fn parse(data: &[u8]) -> Result<Envelope, &'static str> {
    let mut lines = data
        .split(|b| *b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l));
    let header = lines.next().ok_or("empty")?;
    let header = std::str::from_utf8(header).map_err(|_| "the header is not text")?;
    let fields: Vec<&str> = header.trim().split(';').map(str::trim).collect();
    if fields.len() < 3 || fields[0].as_bytes() != HEADER {
        return Err("the header is not `$ANSIBLE_VAULT;<version>;<cipher>`");
    }
    let mut payload = Vec::with_capacity(data.len());
    for line in lines {
        payload.extend(line.iter().filter(|b| !b.is_ascii_whitespace()));
    }
    Ok(Envelope {
        version: fields[1].to_string(),
        cipher: fields[2].to_string(),
        label: fields.get(3).map(|s| s.to_string()),
        payload,
    })
}

/// The vaulted text of a payload: the header (1.2 with the label unless it is `default`)
/// and the payload in 80-column lines, newline-terminated.
pub(crate) fn format(payload: &[u8], label: Option<&str>) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload.len() + payload.len() / 80 + 64);
    out.extend_from_slice(HEADER);
    match label {
        Some(l) if !l.is_empty() && l != DEFAULT_LABEL => {
            out.extend_from_slice(b";1.2;AES256;");
            out.extend_from_slice(l.as_bytes());
        }
        _ => out.extend_from_slice(b";1.1;AES256"),
    }
    out.push(b'\n');
    for chunk in payload.chunks(80) {
        out.extend_from_slice(chunk);
        out.push(b'\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_versions_and_lines() {
        let p = vec![b'a'; 170];
        let t = format(&p, None);
        let s = String::from_utf8(t.clone()).unwrap();
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines[0], "$ANSIBLE_VAULT;1.1;AES256");
        assert_eq!(lines[1].len(), 80);
        assert_eq!(lines[3].len(), 10);
        assert!(s.ends_with('\n'));
        let e = parse(&t).unwrap();
        assert_eq!((e.version.as_str(), e.label, e.payload), ("1.1", None, p));
        let t = format(b"ab", Some("prod"));
        assert!(t.starts_with(b"$ANSIBLE_VAULT;1.2;AES256;prod\nab\n"));
        assert_eq!(parse(&t).unwrap().label.as_deref(), Some("prod"));
        assert!(format(b"ab", Some("default")).starts_with(b"$ANSIBLE_VAULT;1.1;AES256\n"));
        assert!(parse(b"$ANSIBLE_VAULT\nab").is_err());
    }
}
