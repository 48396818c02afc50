//! A tiny HTTP/1.1 artifact server for tests (std threads, no dependencies): serves a
//! directory, so download modules are tested against a real server on the bed's bridge
//! address rather than a mock.
//!
//! Paths:
//! - `/<file>`: the file under the root (GET or HEAD), 404 when missing.
//! - `/private/<file>`: the same, but only with the basic-auth credentials given to
//!   [`HttpServer::with_basic_auth`] (401 with `WWW-Authenticate` otherwise).
//! - `/redirect/<file>`: a 302 to `/<file>`.
//! - `/slow/<file>`: the file in ten pieces 300 ms apart (about three seconds);
//! - `/cut/<file>`: announces the full `Content-Length`, sends half the body, closes the
//!   connection: an interrupted transfer.
//! - `/status/<code>`: an empty response with that status (e.g. 500).
//!
//! Every request is logged (`requests()`), so a test can tell whether a download happened.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{IpAddr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// One request as the server saw it.
#[derive(Debug, Clone)]
pub struct LoggedRequest {
    /// `GET`, `HEAD` …
    pub method: String,
    /// The request target (path and query).
    pub path: String,
    /// The `Authorization` header, if any.
    pub authorization: Option<String>,
    /// The status answered.
    pub status: u16,
}

struct Shared {
    root: PathBuf,
    auth: Option<String>,
    log: Mutex<Vec<LoggedRequest>>,
    stop: AtomicBool,
}

/// A running server; stopped when dropped.
pub struct HttpServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl HttpServer {
    /// Serves `root` on `ip` (a free port is chosen).
    pub fn start(ip: IpAddr, root: &Path) -> std::io::Result<HttpServer> {
        Self::start_with(ip, root, None)
    }

    /// Serves `root`, with `/private/` behind basic auth `user`:`password`.
    pub fn with_basic_auth(
        ip: IpAddr,
        root: &Path,
        user: &str,
        password: &str,
    ) -> std::io::Result<HttpServer> {
        let token = base64(format!("{}:{}", user, password).as_bytes());
        Self::start_with(ip, root, Some(format!("Basic {}", token)))
    }

    fn start_with(ip: IpAddr, root: &Path, auth: Option<String>) -> std::io::Result<HttpServer> {
        let listener = TcpListener::bind(SocketAddr::new(ip, 0))?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            root: root.to_path_buf(),
            auth,
            log: Mutex::new(Vec::new()),
            stop: AtomicBool::new(false),
        });
        let s2 = shared.clone();
        let thread = std::thread::spawn(move || {
            for conn in listener.incoming() {
                if s2.stop.load(Ordering::SeqCst) {
                    break;
                }
                if let Ok(stream) = conn {
                    let s3 = s2.clone();
                    std::thread::spawn(move || {
                        let _ = handle(&s3, stream);
                    });
                }
            }
        });
        Ok(HttpServer {
            addr,
            shared,
            thread: Some(thread),
        })
    }

    /// The address served on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://ip:port/<path>` (without a leading `/` in `path`).
    pub fn url(&self, path: &str) -> String {
        format!("http://{}/{}", self.addr, path.trim_start_matches('/'))
    }

    /// Every request so far, in order.
    pub fn requests(&self) -> Vec<LoggedRequest> {
        self.shared
            .log
            .lock()
            .map(|l| l.clone())
            .unwrap_or_default()
    }

    /// How many requests asked for `path` (exactly, e.g. `/data.bin`).
    pub fn count(&self, path: &str) -> usize {
        self.requests().iter().filter(|r| r.path == path).count()
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop.
        let _ = TcpStream::connect(self.addr);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn handle(shared: &Shared, stream: TcpStream) -> std::io::Result<()> {
    stream.set_read_timeout(Some(std::time::Duration::from_secs(10)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or("").to_string();
    let path = parts.next().unwrap_or("/").to_string();
    let mut authorization = None;
    let mut content_length = 0usize;
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h)? == 0 || h.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            let k = k.trim().to_ascii_lowercase();
            if k == "authorization" {
                authorization = Some(v.trim().to_string());
            } else if k == "content-length" {
                content_length = v.trim().parse().unwrap_or(0);
            }
        }
    }
    let mut body = vec![0u8; content_length.min(16 << 20)];
    reader.read_exact(&mut body)?;
    let mut out = stream;
    let status = respond(shared, &method, &path, authorization.as_deref(), &mut out);
    if let Ok(mut log) = shared.log.lock() {
        log.push(LoggedRequest {
            method,
            path,
            authorization,
            status,
        });
    }
    let _ = out.flush();
    let _ = out.shutdown(Shutdown::Both);
    Ok(())
}

fn reason(code: u16) -> &'static str {
    match code {
        200 => "OK",
        302 => "Found",
        401 => "Unauthorized",
        404 => "Not Found",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

fn head(out: &mut TcpStream, code: u16, extra: &str, len: usize) {
    let _ = write!(
        out,
        "HTTP/1.1 {} {}\r\nContent-Length: {}\r\nConnection: close\r\n{}\r\n",
        code,
        reason(code),
        len,
        extra
    );
}

fn respond(
    shared: &Shared,
    method: &str,
    target: &str,
    auth: Option<&str>,
    out: &mut TcpStream,
) -> u16 {
    let path = target.split('?').next().unwrap_or("/");
    if let Some(code) = path.strip_prefix("/status/") {
        let code: u16 = code.parse().unwrap_or(500);
        head(out, code, "", 0);
        return code;
    }
    if let Some(rest) = path.strip_prefix("/redirect/") {
        head(out, 302, &format!("Location: /{}\r\n", rest), 0);
        return 302;
    }
    let slow = path.starts_with("/slow/");
    let (rel, cut) = if let Some(rest) = path.strip_prefix("/cut/") {
        (rest, true)
    } else if let Some(rest) = path.strip_prefix("/slow/") {
        (rest, false)
    } else if let Some(rest) = path.strip_prefix("/private/") {
        if shared.auth.is_some() && auth != shared.auth.as_deref() {
            let msg = b"authentication required\n";
            head(
                out,
                401,
                "WWW-Authenticate: Basic realm=\"kk\"\r\nContent-Type: text/plain\r\n",
                msg.len(),
            );
            let _ = out.write_all(msg);
            return 401;
        }
        (rest, false)
    } else {
        (path.trim_start_matches('/'), false)
    };
    if rel.split('/').any(|c| c == "..") {
        head(out, 404, "", 0);
        return 404;
    }
    let file = shared.root.join(rel);
    let data = match std::fs::read(&file) {
        Ok(d) if file.is_file() => d,
        _ => {
            let msg = format!("{} not found\n", target);
            head(out, 404, "Content-Type: text/plain\r\n", msg.len());
            let _ = out.write_all(msg.as_bytes());
            return 404;
        }
    };
    let ctype = if rel.ends_with(".json") {
        "application/json"
    } else {
        "application/octet-stream"
    };
    head(
        out,
        200,
        &format!("Content-Type: {}\r\n", ctype),
        data.len(),
    );
    if method != "HEAD" {
        let n = if cut { data.len() / 2 } else { data.len() };
        if slow {
            // Ten pieces, 300 ms apart: a download that takes about three seconds.
            for piece in data[..n].chunks(n.div_ceil(10).max(1)) {
                let _ = out.write_all(piece);
                let _ = out.flush();
                std::thread::sleep(std::time::Duration::from_millis(300));
            }
        } else {
            let _ = out.write_all(&data[..n]);
        }
    }
    200
}

/// Standard base64 (for the expected `Authorization` header).
fn base64(data: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut s = String::new();
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        s.push(T[(n >> 18) as usize & 63] as char);
        s.push(T[(n >> 12) as usize & 63] as char);
        s.push(if chunk.len() > 1 {
            T[(n >> 6) as usize & 63] as char
        } else {
            '='
        });
        s.push(if chunk.len() > 2 {
            T[n as usize & 63] as char
        } else {
            '='
        });
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_base64() {
        assert_eq!(base64(b"user:pass"), "dXNlcjpwYXNz");
        assert_eq!(base64(b"a"), "YQ==");
        assert_eq!(base64(b"ab"), "YWI=");
    }

    #[test]
    fn serves_files_auth_redirects_and_cuts() {
        let dir = std::env::temp_dir().join(format!("kk-http-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("f.txt"), "0123456789").unwrap();
        let s = HttpServer::with_basic_auth("127.0.0.1".parse().unwrap(), &dir, "u", "p").unwrap();
        let get = |path: &str, auth: Option<&str>| -> String {
            let mut c = TcpStream::connect(s.addr()).unwrap();
            let a = auth
                .map(|a| format!("Authorization: {}\r\n", a))
                .unwrap_or_default();
            write!(c, "GET {} HTTP/1.1\r\nHost: x\r\n{}\r\n", path, a).unwrap();
            let mut r = String::new();
            c.read_to_string(&mut r).unwrap();
            r
        };
        assert!(get("/f.txt", None).ends_with("\r\n\r\n0123456789"));
        assert!(get("/nope", None).starts_with("HTTP/1.1 404"));
        assert!(get("/private/f.txt", None).starts_with("HTTP/1.1 401"));
        assert!(get("/private/f.txt", Some("Basic dTpw")).ends_with("0123456789"));
        assert!(get("/redirect/f.txt", None).contains("Location: /f.txt\r\n"));
        assert!(get("/cut/f.txt", None).ends_with("\r\n\r\n01234"));
        assert_eq!(s.count("/f.txt"), 1);
        drop(s);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
