//! The value formats the validation rules check (addresses, host names, object names, Go
//! durations, checksums, versions, package names), each a small pure function so the
//! rules read as a list and each format has its own tests.

use std::net::IpAddr;

/// An IPv4 or IPv6 address (`192.168.0.3`, `fd00::3`), as Go's `net.ParseIP` takes it.
pub fn is_ip(s: &str) -> bool {
    s.parse::<IpAddr>().is_ok()
}

/// A host name as RFC 1123 allows it (labels of 1–63 letters, digits and inner hyphens,
/// 253 characters at most), whose last label is not all digits: `300.1.1.1` is a mistyped
/// address, not a host name (RFC 3696 §2).
pub fn is_hostname(s: &str) -> bool {
    if s.is_empty() || s.len() > 253 {
        return false;
    }
    let s = s.strip_suffix('.').unwrap_or(s);
    let labels: Vec<&str> = s.split('.').collect();
    let label_ok = |l: &&str| {
        !l.is_empty()
            && l.len() <= 63
            && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    labels.iter().all(label_ok)
        && !labels
            .last()
            .is_some_and(|l| l.bytes().all(|b| b.is_ascii_digit()))
}

/// An address kk can connect to: an IP address or a host name.
pub fn is_address(s: &str) -> bool {
    is_ip(s) || is_hostname(s)
}

/// `host`, `host:port` or `[v6]:port`, with a port of 1–65535: a registry or file server.
pub fn is_host_port(s: &str) -> bool {
    if is_address(s) {
        return true;
    }
    if let Some(rest) = s.strip_prefix('[') {
        return match rest.split_once("]:") {
            Some((ip, port)) => ip.parse::<std::net::Ipv6Addr>().is_ok() && is_port(port),
            None => rest
                .strip_suffix(']')
                .is_some_and(|ip| ip.parse::<std::net::Ipv6Addr>().is_ok()),
        };
    }
    match s.rsplit_once(':') {
        Some((host, port)) => is_address(host) && !host.contains(':') && is_port(port),
        None => false,
    }
}

fn is_port(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 5
        && s.bytes().all(|b| b.is_ascii_digit())
        && s.parse::<u32>().is_ok_and(|p| (1..=65535).contains(&p))
}

/// A `http://` or `https://` URL with a host (and an optional port and path), without
/// spaces or quotes: it ends up in a download command.
pub fn is_http_url(s: &str) -> bool {
    let rest = match s
        .strip_prefix("https://")
        .or_else(|| s.strip_prefix("http://"))
    {
        Some(r) => r,
        None => return false,
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    is_host_port(authority) && is_safe_text(rest)
}

/// No whitespace, control characters, quotes or backslashes: a value that is put into
/// a remote command or a file path as it is.
pub fn is_safe_text(s: &str) -> bool {
    !s.chars()
        .any(|c| c.is_whitespace() || c.is_control() || matches!(c, '"' | '\'' | '`' | '\\'))
}

/// A Kubernetes object name (DNS-1123 subdomain): lower-case letters, digits, `-` and `.`,
/// starting and ending with a letter or digit, 253 characters at most. An instance's name
/// becomes its KKInstance's name, so it must be one.
pub fn is_dns1123_subdomain(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s.split('.').all(|l| {
            !l.is_empty()
                && l.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !l.starts_with('-')
                && !l.ends_with('-')
        })
}

/// A Go duration as KubeKey's `timeout` takes it (`30s`, `1m30s`, `500ms`, `1.5h`, `0`).
pub fn is_go_duration(s: &str) -> bool {
    if s == "0" {
        return true;
    }
    let mut rest = s;
    if rest.is_empty() {
        return false;
    }
    while !rest.is_empty() {
        let num_len = rest
            .bytes()
            .take_while(|b| b.is_ascii_digit() || *b == b'.')
            .count();
        let num = &rest[..num_len];
        if num.is_empty()
            || num.starts_with('.')
            || num.ends_with('.')
            || num.matches('.').count() > 1
        {
            return false;
        }
        rest = &rest[num_len..];
        let unit = ["ns", "us", "µs", "ms", "s", "m", "h"]
            .iter()
            // Longest first among those that match: "ms" before "m".
            .filter(|u| rest.starts_with(**u))
            .max_by_key(|u| u.len());
        match unit {
            Some(u) => rest = &rest[u.len()..],
            None => return false,
        }
    }
    true
}

/// A sha256 digest: exactly 64 hexadecimal digits.
pub fn is_sha256(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// A release version as download URLs use it: `1.6.4`, `v1.24.0`, `v1.33.0-rc.1`,
/// `v1.30.1+k3s1`: digits and dots, an optional `v` before and a pre-release or build
/// suffix after.
pub fn is_version(s: &str) -> bool {
    let s = s.strip_prefix('v').unwrap_or(s);
    let (core, suffix) = match s.find(['-', '+']) {
        Some(i) => (&s[..i], &s[i + 1..]),
        None => (s, ""),
    };
    let parts: Vec<&str> = core.split('.').collect();
    (1..=3).contains(&parts.len())
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        && (s.len() == core.len()
            || (!suffix.is_empty()
                && suffix
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'+'))))
}

/// An OS package as apt and yum take it (`conntrack`, `socat`, `libseccomp2`,
/// `containerd.io=1.6.4-1`, `glibc-2.28`): no shell characters, no leading `-` (it would be
/// read as an option).
pub fn is_package_name(s: &str) -> bool {
    s.bytes().next().is_some_and(|b| b.is_ascii_alphanumeric())
        && s.bytes().all(|b| {
            b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'+' | b'-' | b':' | b'~' | b'=')
        })
}

/// An ISO file name (`ubuntu-22.04-debs-amd64.iso`): one path component, no leading `-`,
/// nothing a shell would read.
pub fn is_file_name(s: &str) -> bool {
    !s.is_empty()
        && s != "."
        && s != ".."
        && !s.contains('/')
        && !s.starts_with('-')
        && is_safe_text(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses() {
        for ok in [
            "192.168.0.3",
            "fd00::3",
            "node1",
            "node-1.example.com",
            "a.b.c.",
        ] {
            assert!(is_address(ok), "{ok}");
        }
        for bad in [
            "",
            "300.1.1.1",
            "192.168.0",
            "-node",
            "node_1",
            "a..b",
            "has space",
        ] {
            assert!(!is_address(bad), "{bad}");
        }
        assert!(!is_hostname(&"a".repeat(64)));
        assert!(is_hostname(&"a".repeat(63)));
    }

    #[test]
    fn host_ports() {
        for ok in [
            "registry",
            "registry:5000",
            "10.0.0.1:443",
            "[fd00::1]:5000",
            "fd00::1",
        ] {
            assert!(is_host_port(ok), "{ok}");
        }
        for bad in [
            "registry:",
            "registry:0",
            "registry:65536",
            "registry:x",
            "[fd00::1]:",
        ] {
            assert!(!is_host_port(bad), "{bad}");
        }
    }

    #[test]
    fn urls() {
        assert!(is_http_url(
            "https://dl.k8s.io/release/v1.33.0/bin/linux/amd64/kubeadm"
        ));
        assert!(is_http_url("http://10.0.0.1:8080/files"));
        for bad in [
            "ftp://x/y",
            "https://",
            "https://x/a b",
            "https://x/$(id)'",
            "dl.k8s.io/x",
        ] {
            assert!(!is_http_url(bad), "{bad}");
        }
    }

    #[test]
    fn object_names() {
        assert!(is_dns1123_subdomain("node-1.example"));
        for bad in ["", "Node1", "node_1", "-n", "n-", "a..b"] {
            assert!(!is_dns1123_subdomain(bad), "{bad}");
        }
    }

    #[test]
    fn go_durations() {
        for ok in ["0", "30s", "1m30s", "500ms", "1.5h", "2us", "3µs", "10ns"] {
            assert!(is_go_duration(ok), "{ok}");
        }
        for bad in ["", "30", "s", "1.s", ".5s", "30 s", "1d", "-1s", "1.2.3s"] {
            assert!(!is_go_duration(bad), "{bad}");
        }
    }

    #[test]
    fn sha256s() {
        assert!(is_sha256(&"a1".repeat(32)));
        assert!(is_sha256(&"AB".repeat(32)));
        assert!(!is_sha256(&"a1".repeat(31)));
        assert!(!is_sha256(&format!("{}g", "a".repeat(63))));
    }

    #[test]
    fn versions() {
        for ok in [
            "1.6.4",
            "v1.24.0",
            "20.10",
            "v1.33.0-rc.1",
            "v1.30.1+k3s1",
            "0.2.6",
        ] {
            assert!(is_version(ok), "{ok}");
        }
        for bad in ["", "v", "1..2", "1.2.3.4", "latest", "1.2-", "1.2;rm"] {
            assert!(!is_version(bad), "{bad}");
        }
    }

    #[test]
    fn packages_and_files() {
        for ok in [
            "socat",
            "containerd.io=1.6.4-1",
            "glibc-2.28",
            "libstdc++6",
            "a:b~c",
        ] {
            assert!(is_package_name(ok), "{ok}");
        }
        for bad in ["", "-y", "a b", "a;b", "$(id)", "pkg*"] {
            assert!(!is_package_name(bad), "{bad}");
        }
        assert!(is_file_name("ubuntu-22.04-debs-amd64.iso"));
        for bad in ["", "..", "a/b.iso", "-rf", "a b.iso"] {
            assert!(!is_file_name(bad), "{bad}");
        }
    }
}
