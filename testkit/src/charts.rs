//! A chart server for tests: a Helm HTTP repository and an OCI
//! registry with anonymous bearer tokens, on loopback, serving one chart archive; or a
//! private one, which asks for HTTP basic credentials. And a plain file server, for
//! repositories real Helm made.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use sha2::{Digest, Sha256};

/// A running server; it stops with the test process.
pub struct ChartServer {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    /// `127.0.0.1:PORT`, for `oci://` references.
    pub host: String,
    /// Requests served, by path.
    pub hits: Arc<Mutex<BTreeMap<String, usize>>>,
    /// Requests that carried basic credentials, whatever they were.
    pub with_credentials: Arc<AtomicUsize>,
    served: Arc<AtomicUsize>,
}

impl ChartServer {
    /// Serves `archive` as chart `name` version `version` (and lists a `0.1.0` with a wrong
    /// digest and a prerelease, which must not be chosen).
    pub fn start(name: &str, version: &str, archive: Vec<u8>) -> std::io::Result<Self> {
        Self::serve(name, version, archive, None)
    }

    /// [`ChartServer::start`], answering 401 (a basic challenge) to any request to the
    /// repository or the token endpoint without `username:password` as basic credentials.
    pub fn start_private(
        name: &str,
        version: &str,
        archive: Vec<u8>,
        credentials: &str,
    ) -> std::io::Result<Self> {
        use base64::Engine;
        let expected = format!(
            "basic {}",
            base64::engine::general_purpose::STANDARD.encode(credentials)
        );
        Self::serve(name, version, archive, Some(expected))
    }

    fn serve(
        name: &str,
        version: &str,
        archive: Vec<u8>,
        required: Option<String>,
    ) -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let host = listener.local_addr()?.to_string();
        let url = format!("http://{host}");
        let digest = format!("{:x}", Sha256::digest(&archive));
        let index = format!(
            "apiVersion: v1\nentries:\n  {name}:\n  - version: {version}\n    urls: [{name}-{version}.tgz]\n    digest: {digest}\n  - version: 0.1.0\n    urls: [{name}-0.1.0.tgz]\n    digest: 0000\n  - version: 9.0.0-rc.1\n    urls: [{name}-9.0.0-rc.1.tgz]\n"
        );
        let manifest = format!(
            r#"{{"schemaVersion":2,"layers":[{{"mediaType":"application/vnd.cncf.helm.chart.content.v1.tar+gzip","digest":"sha256:{digest}","size":{}}}]}}"#,
            archive.len()
        );
        let tags =
            format!(r#"{{"name":"charts/{name}","tags":["0.1.0","{version}","9.0.0-rc.1"]}}"#);
        let hits: Arc<Mutex<BTreeMap<String, usize>>> = Arc::default();
        let served = Arc::new(AtomicUsize::new(0));
        let (name, version, url_for_token) = (name.to_string(), version.to_string(), url.clone());
        let with_credentials = Arc::new(AtomicUsize::new(0));
        let (thread_hits, thread_served) = (hits.clone(), served.clone());
        let thread_credentials = with_credentials.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let Some(request) = read_request(&stream) else {
                    continue;
                };
                let (path, authorized) = (request.path, request.bearer);
                if request.basic.is_some() {
                    thread_credentials.fetch_add(1, Ordering::Relaxed);
                }
                let oci = format!("/v2/charts/{name}");
                let guarded = !path.starts_with(&oci);
                if let Some(required) = required.as_ref().filter(|_| guarded) {
                    if request.basic.as_deref() != Some(required.as_str()) {
                        let challenge = "WWW-Authenticate: Basic realm=\"charts\"\r\n";
                        respond(stream, 401, b"unauthorized", challenge);
                        continue;
                    }
                }
                if let Ok(mut hits) = thread_hits.lock() {
                    *hits.entry(path.clone()).or_default() += 1;
                }
                thread_served.fetch_add(1, Ordering::Relaxed);
                let (status, body, extra): (u16, Vec<u8>, String) = match path.as_str() {
                    "/index.yaml" => (200, index.clone().into_bytes(), String::new()),
                    p if p == format!("/{name}-{version}.tgz") || p == format!("/{name}-0.1.0.tgz") => {
                        (200, archive.clone(), String::new())
                    }
                    p if p.starts_with("/token") => (200, br#"{"token":"anonymous-pull"}"#.to_vec(), String::new()),
                    p if p.starts_with(&oci) && !authorized => (
                        401,
                        Vec::new(),
                        format!(
                            "WWW-Authenticate: Bearer realm=\"{url_for_token}/token\",service=\"test\",scope=\"repository:charts/{name}:pull\"\r\n"
                        ),
                    ),
                    p if p == format!("{oci}/tags/list") => (200, tags.clone().into_bytes(), String::new()),
                    p if p == format!("{oci}/manifests/{version}") => (200, manifest.clone().into_bytes(), String::new()),
                    p if p == format!("{oci}/blobs/sha256:{digest}") => (200, archive.clone(), String::new()),
                    _ => (404, b"not found".to_vec(), String::new()),
                };
                respond(stream, status, &body, &extra);
            }
        });
        Ok(Self {
            url,
            host,
            hits,
            with_credentials,
            served,
        })
    }

    /// How many requests were served.
    pub fn served(&self) -> usize {
        self.served.load(Ordering::Relaxed)
    }
}

/// Files of a directory over HTTP on loopback, read at each request (so a test publishes
/// a new chart version by writing files): a Helm repository made by real Helm's `package`
/// and `repo index`, say. It stops with the test process.
pub struct FileServer {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
}

impl FileServer {
    /// Serves the files under `root` over HTTP; a path leaving it, or naming no file, is a
    /// 404.
    pub fn start(root: &std::path::Path) -> std::io::Result<Self> {
        Self::serve(root, None)
    }

    /// [`FileServer::start`] over HTTPS, with a certificate for 127.0.0.1 signed by a CA
    /// made in `tls_dir`; also returns that CA's PEM.
    pub fn start_tls(
        root: &std::path::Path,
        tls_dir: &std::path::Path,
    ) -> std::io::Result<(Self, String)> {
        let files = fleet_hub::tls::load_or_create(tls_dir, &[]).map_err(std::io::Error::other)?;
        let config = crate::git_http::server_config(&files);
        Ok((Self::serve(root, Some(config))?, files.ca_pem))
    }

    fn serve(
        root: &std::path::Path,
        tls: Option<Arc<rustls::ServerConfig>>,
    ) -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let scheme = if tls.is_some() { "https" } else { "http" };
        let url = format!("{scheme}://{}", listener.local_addr()?);
        let root = root.to_path_buf();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                match &tls {
                    Some(config) => {
                        let Ok(connection) = rustls::ServerConnection::new(config.clone()) else {
                            continue;
                        };
                        answer_file(&mut rustls::StreamOwned::new(connection, stream), &root);
                    }
                    None => answer_file(&mut { stream }, &root),
                }
            }
        });
        Ok(Self { url })
    }
}

/// Answers one request for a file under `root` on `stream`.
fn answer_file<S: std::io::Read + Write>(stream: &mut S, root: &std::path::Path) {
    let mut reader = BufReader::new(&mut *stream);
    let mut line = String::new();
    if reader.read_line(&mut line).is_err() {
        return;
    }
    let mut header = String::new();
    while reader.read_line(&mut header).is_ok_and(|n| n > 2) {
        header.clear();
    }
    drop(reader);
    let path = line
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.split('?').next())
        .unwrap_or_default()
        .to_string();
    let inside = !path.split('/').any(|part| part == "..");
    let (status, body) = match std::fs::read(root.join(path.trim_start_matches('/'))) {
        Ok(body) if inside => (200, body),
        _ => (404, b"not found".to_vec()),
    };
    let head = format!(
        "HTTP/1.1 {status} X\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(&body);
    let _ = stream.flush();
}

/// What the server reads of a request.
struct Request {
    path: String,
    /// It carries the token the token endpoint hands out.
    bearer: bool,
    /// Its basic credentials, as `basic <base64>` (lower-cased scheme).
    basic: Option<String>,
}

fn read_request(stream: &TcpStream) -> Option<Request> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let path = line.split_whitespace().nth(1)?.to_string();
    let mut request = Request {
        path,
        bearer: false,
        basic: None,
    };
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).ok()? == 0 || header == "\r\n" {
            break;
        }
        let lower = header.to_ascii_lowercase();
        if lower.starts_with("authorization: bearer anonymous-pull") {
            request.bearer = true;
        }
        if lower.starts_with("authorization: basic ") {
            let value = header.trim_end()["authorization: ".len()..].to_string();
            request.basic = Some(format!("basic {}", &value["basic ".len()..]));
        }
    }
    Some(request)
}

fn respond(mut stream: TcpStream, status: u16, body: &[u8], extra: &str) {
    let head = format!(
        "HTTP/1.1 {status} X\r\nContent-Length: {}\r\nConnection: close\r\n{extra}\r\n",
        body.len()
    );
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(body);
}
