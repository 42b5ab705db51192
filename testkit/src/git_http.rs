//! `git http-backend` (Debian's git, the smart HTTP protocol) behind a small HTTP server,
//! over plain HTTP or HTTPS with its own CA, with optional basic auth.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use base64::Engine;
use rustls_pki_types::pem::PemObject;

/// A running server; it stops with the test process.
pub struct GitHttpServer {
    /// `http(s)://127.0.0.1:PORT`; repositories are `URL/<dir name>`.
    pub url: String,
    /// The CA that signed the server's certificate (HTTPS only).
    pub ca_pem: Option<String>,
    requests: Arc<AtomicUsize>,
}

struct Request {
    method: String,
    target: String,
    headers: HashMap<String, String>,
    body: Vec<u8>,
}

impl GitHttpServer {
    /// Serves the repositories under `root`. With `tls_dir`, HTTPS with a CA made there;
    /// with `basic_auth`, every request must carry that user and password.
    pub fn start(root: &Path, tls_dir: Option<&Path>, basic_auth: Option<(&str, &str)>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("bind: {e}"));
        let port = listener.local_addr().map(|a| a.port()).unwrap_or(0);
        let (tls, ca_pem) = match tls_dir {
            Some(dir) => {
                let files = fleet_hub::tls::load_or_create(dir, &[])
                    .unwrap_or_else(|e| panic!("certificates: {e}"));
                (Some(server_config(&files)), Some(files.ca_pem))
            }
            None => (None, None),
        };
        let scheme = if tls.is_some() { "https" } else { "http" };
        let expected_auth = basic_auth.map(|(user, password)| {
            format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
            )
        });
        let requests = Arc::new(AtomicUsize::new(0));
        let counter = requests.clone();
        let root = root.to_path_buf();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (tls, root, auth, counter) = (
                    tls.clone(),
                    root.clone(),
                    expected_auth.clone(),
                    counter.clone(),
                );
                std::thread::spawn(move || {
                    counter.fetch_add(1, Ordering::Relaxed);
                    match tls {
                        Some(config) => {
                            let Ok(connection) = rustls::ServerConnection::new(config) else {
                                return;
                            };
                            let mut tls_stream = rustls::StreamOwned::new(connection, stream);
                            serve_one(&mut tls_stream, &root, auth.as_deref());
                        }
                        None => {
                            let mut plain = stream;
                            serve_one(&mut plain, &root, auth.as_deref());
                        }
                    }
                });
            }
        });
        Self {
            url: format!("{scheme}://127.0.0.1:{port}"),
            ca_pem,
            requests,
        }
    }

    /// Connections served so far.
    pub fn requests(&self) -> usize {
        self.requests.load(Ordering::Relaxed)
    }
}

/// A TLS server configuration with the certificate and key of `files`.
pub(crate) fn server_config(files: &fleet_hub::tls::TlsFiles) -> Arc<rustls::ServerConfig> {
    let certs: Vec<_> = rustls_pki_types::CertificateDer::pem_slice_iter(files.cert_pem.as_bytes())
        .flatten()
        .collect();
    let key = rustls_pki_types::PrivateKeyDer::from_pem_slice(files.key_pem.as_bytes())
        .unwrap_or_else(|e| panic!("key: {e}"));
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map(|b| b.with_no_client_auth().with_single_cert(certs, key))
        .unwrap_or_else(|e| panic!("TLS config: {e}"))
        .unwrap_or_else(|e| panic!("TLS certificate: {e}"));
    Arc::new(config)
}

fn serve_one<S: Read + Write>(stream: &mut S, root: &Path, auth: Option<&str>) {
    let Some(request) = read_request(stream) else {
        return;
    };
    if let Some(expected) = auth {
        if request.headers.get("authorization").map(String::as_str) != Some(expected) {
            let _ = stream.write_all(
                b"HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"git\"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            );
            let _ = stream.flush();
            return;
        }
    }
    let (status, headers, body) = run_backend(root, &request);
    let mut head = format!("HTTP/1.1 {status}\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    ));
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(&body);
    let _ = stream.flush();
}

fn read_request<S: Read>(stream: &mut S) -> Option<Request> {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_string();
    let target = parts.next()?.to_string();
    let mut headers = HashMap::new();
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).ok()? == 0 || header == "\r\n" {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            headers.insert(name.trim().to_ascii_lowercase(), value.trim().to_string());
        }
    }
    let mut body = Vec::new();
    if let Some(length) = headers
        .get("content-length")
        .and_then(|l| l.parse::<usize>().ok())
    {
        body.resize(length, 0);
        reader.read_exact(&mut body).ok()?;
    } else if headers
        .get("transfer-encoding")
        .is_some_and(|t| t.eq_ignore_ascii_case("chunked"))
    {
        loop {
            let mut size = String::new();
            reader.read_line(&mut size).ok()?;
            let size = usize::from_str_radix(size.trim(), 16).ok()?;
            let mut chunk = vec![0; size + 2];
            reader.read_exact(&mut chunk).ok()?;
            if size == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..size]);
        }
    }
    Some(Request {
        method,
        target,
        headers,
        body,
    })
}

fn run_backend(root: &Path, request: &Request) -> (String, Vec<(String, String)>, Vec<u8>) {
    let (path, query) = request
        .target
        .split_once('?')
        .unwrap_or((request.target.as_str(), ""));
    let header = |name: &str| request.headers.get(name).cloned().unwrap_or_default();
    let child = Command::new("git")
        .arg("http-backend")
        .env("GIT_PROJECT_ROOT", PathBuf::from(root))
        .env("GIT_HTTP_EXPORT_ALL", "1")
        .env("REQUEST_METHOD", &request.method)
        .env("PATH_INFO", path)
        .env("QUERY_STRING", query)
        .env("CONTENT_TYPE", header("content-type"))
        .env("CONTENT_LENGTH", request.body.len().to_string())
        .env("HTTP_CONTENT_ENCODING", header("content-encoding"))
        .env("GIT_PROTOCOL", header("git-protocol"))
        .env("REMOTE_USER", "test")
        .env("REMOTE_ADDR", "127.0.0.1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn();
    let Ok(mut child) = child else {
        return ("500 Internal Server Error".into(), Vec::new(), Vec::new());
    };
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(&request.body);
    }
    let Ok(output) = child.wait_with_output() else {
        return ("500 Internal Server Error".into(), Vec::new(), Vec::new());
    };
    let out = output.stdout;
    let split = out
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|i| (i, 4))
        .or_else(|| out.windows(2).position(|w| w == b"\n\n").map(|i| (i, 2)));
    let Some((end, gap)) = split else {
        return ("500 Internal Server Error".into(), Vec::new(), out);
    };
    let mut status = "200 OK".to_string();
    let mut headers = Vec::new();
    for line in String::from_utf8_lossy(&out[..end]).lines() {
        if let Some((name, value)) = line.split_once(':') {
            if name.eq_ignore_ascii_case("status") {
                status = value.trim().to_string();
            } else {
                headers.push((name.trim().to_string(), value.trim().to_string()));
            }
        }
    }
    (status, headers, out[end + gap..].to_vec())
}
