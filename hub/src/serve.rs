//! Starting the hub: open the data directory, create the logical clusters, write their
//! kubeconfigs, and serve HTTPS (or plain HTTP for tests).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use axum_server::accept::DefaultAcceptor;
use axum_server::tls_rustls::RustlsAcceptor;
use base64::Engine;

use crate::connections::{with_timeouts, ConnectionLimit, MAX_CONNECTIONS};
use crate::hub::Hub;
use crate::tls::{self, TlsFiles};

/// How to run the hub.
#[derive(Debug, Clone)]
pub struct Options {
    /// The data directory: database, certificates, kubeconfigs.
    pub data: PathBuf,
    /// The address to listen on; port 0 picks a free port.
    pub listen: SocketAddr,
    /// Serve plain HTTP (tests only).
    pub insecure_http: bool,
    /// Logical clusters to create if missing.
    pub clusters: Vec<String>,
    /// Of those, the ones kept in memory only, never written to the database: simulated
    /// member clusters of a benchmark, whose real counterparts keep their objects in their
    /// own API servers. They start empty each time.
    pub memory_only: Vec<String>,
}

/// Errors starting the hub.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The database could not be opened.
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    /// The certificates could not be made or read.
    #[error(transparent)]
    Tls(#[from] tls::TlsError),
    /// A cluster could not be created.
    // The causes are part of the message, not `source`s: a reporter that prints the chain
    // would print them twice.
    #[error("creating cluster {name}: {cause}")]
    Cluster {
        /// The cluster.
        name: String,
        /// The cause.
        cause: Box<crate::status::ApiError>,
    },
    /// Another hub is running on the same data directory.
    #[error("another hub is using {}", data.display())]
    Busy {
        /// The data directory.
        data: PathBuf,
    },
    /// Binding, reading or writing failed.
    #[error("{what}: {cause}")]
    Io {
        /// What was being done.
        what: String,
        /// The cause.
        cause: std::io::Error,
    },
}

fn io_error(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> ServeError {
    let what = what.into();
    move |cause| ServeError::Io { what, cause }
}

/// A hub that is listening.
pub struct Running {
    /// The state, for in-process use.
    pub hub: Arc<Hub>,
    /// The bound address.
    pub addr: SocketAddr,
    /// `https://addr` or `http://addr`.
    pub url: String,
    /// Kubeconfig path of every logical cluster.
    pub kubeconfigs: Vec<(String, PathBuf)>,
    handle: axum_server::Handle<SocketAddr>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
    _lock: std::fs::File,
}

impl Running {
    /// Waits until the server stops.
    pub async fn wait(self) -> std::io::Result<()> {
        self.task
            .await
            .unwrap_or_else(|e| Err(std::io::Error::other(e)))
    }

    /// Stops accepting connections, ends open ones and closes the database (another hub
    /// may then open it).
    pub async fn shutdown(self) {
        self.handle.shutdown();
        // The task's own result does not matter once it was told to stop.
        let _ = self.task.await;
        let hub = self.hub.clone();
        let _ = tokio::task::spawn_blocking(move || hub.store.close()).await;
    }
}

/// The kubeconfig file of a cluster in a data directory.
pub fn kubeconfig_path(data: &Path, cluster: &str) -> PathBuf {
    data.join(format!("{cluster}.kubeconfig"))
}

/// Starts the hub.
pub async fn start(options: Options) -> Result<Running, ServeError> {
    // The database holds every token and the TLS key sits beside it: owner only.
    fleet_objects::secret_file::private_dir(&options.data)
        .map_err(io_error(format!("creating {}", options.data.display())))?;
    let lock = lock_data(&options.data)?;
    let memory_only = options.memory_only.iter().cloned().collect();
    let hub = Hub::open(
        &options.data.join("hub.db"),
        memory_only,
        Box::new(crate::controllers::Controllers),
    )?;
    let listener = std::net::TcpListener::bind(options.listen)
        .map_err(io_error(format!("binding {}", options.listen)))?;
    listener
        .set_nonblocking(true)
        .map_err(io_error("configuring the listener"))?;
    let addr = listener
        .local_addr()
        .map_err(io_error("reading the bound address"))?;
    let app = crate::http::router(hub.clone());
    let handle = axum_server::Handle::new();
    let limit = ConnectionLimit::new(DefaultAcceptor, MAX_CONNECTIONS);
    let (url, tls_files, task) = if options.insecure_http {
        let server = with_timeouts(axum_server::from_tcp(listener).map_err(io_error("serving"))?)
            .acceptor(limit)
            .handle(handle.clone());
        let task = tokio::spawn(async move { server.serve(app.into_make_service()).await });
        (format!("http://{addr}"), None, task)
    } else {
        // Installing twice is refused harmlessly; the first provider stays.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let files = tls::load_or_create(&options.data.join("tls"), &[addr.ip().to_string()])?;
        hub.set_ca(&files.ca_pem);
        let config = axum_server::tls_rustls::RustlsConfig::from_pem(
            files.cert_pem.clone().into_bytes(),
            files.key_pem.clone().into_bytes(),
        )
        .await
        .map_err(io_error("loading the serving certificate"))?;
        let acceptor = RustlsAcceptor::new(config).acceptor(limit);
        let server = with_timeouts(axum_server::from_tcp(listener).map_err(io_error("serving"))?)
            .acceptor(acceptor)
            .handle(handle.clone());
        let task = tokio::spawn(async move { server.serve(app.into_make_service()).await });
        (format!("https://{addr}"), Some(files), task)
    };
    // After the CA is known: every new namespace gets it (kube-root-ca.crt).
    for name in &options.clusters {
        hub.ensure_cluster(name)
            .await
            .map_err(|cause| ServeError::Cluster {
                name: name.clone(),
                cause: Box::new(cause),
            })?;
    }
    let mut kubeconfigs = Vec::new();
    for record in hub.clusters() {
        let path = kubeconfig_path(&options.data, &record.name);
        let text = kubeconfig(&url, &record.name, &record.token, tls_files.as_ref());
        write_private(&path, &text)?;
        kubeconfigs.push((record.name, path));
    }
    tracing::info!(%url, clusters = kubeconfigs.len(), "hub listening");
    Ok(Running {
        hub,
        addr,
        url,
        kubeconfigs,
        handle,
        task,
        _lock: lock,
    })
}

/// Takes the data directory for this hub alone: two hubs on one database would each keep
/// their own view of it and overwrite each other's writes. The lock goes with the process.
fn lock_data(data: &Path) -> Result<std::fs::File, ServeError> {
    let path = data.join("hub.lock");
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(io_error(format!("opening {}", path.display())))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err(ServeError::Busy {
            data: data.to_path_buf(),
        }),
        Err(std::fs::TryLockError::Error(cause)) => Err(ServeError::Io {
            what: format!("locking {}", path.display()),
            cause,
        }),
    }
}

fn write_private(path: &Path, text: &str) -> Result<(), ServeError> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .map_err(io_error(format!("writing {}", path.display())))?;
    file.write_all(text.as_bytes())
        .map_err(io_error(format!("writing {}", path.display())))
}

/// A kubeconfig for one logical cluster with its admin token.
pub fn kubeconfig(url: &str, cluster: &str, token: &str, tls: Option<&TlsFiles>) -> String {
    let ca = tls
        .map(|t| {
            let data = base64::engine::general_purpose::STANDARD.encode(&t.ca_pem);
            format!("\n    certificate-authority-data: {data}")
        })
        .unwrap_or_default();
    format!(
        "apiVersion: v1
kind: Config
clusters:
- name: {cluster}
  cluster:
    server: {url}/clusters/{cluster}{ca}
users:
- name: {cluster}-admin
  user:
    token: {token}
contexts:
- name: {cluster}
  context:
    cluster: {cluster}
    user: {cluster}-admin
    namespace: default
current-context: {cluster}
"
    )
}
