//! The hub of a local fleet: its management cluster `local` with Fleet installed, and
//! member clusters.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use fleet_objects::client::ClientError;
use fleet_objects::hints::ManagedFields;

/// The logical cluster holding Fleet's objects, as Rancher names its management cluster.
pub const MANAGEMENT_CLUSTER: &str = fleet_hub::route::DEFAULT_CLUSTER;

/// Why a local hub could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The hub itself did not start (port taken, data locked or unreadable).
    #[error(transparent)]
    Hub(#[from] fleet_hub::serve::ServeError),
    /// No client could be made from the hub's kubeconfig.
    #[error(transparent)]
    Client(#[from] ClientError),
    /// Fleet's CRDs and namespaces could not be installed.
    #[error("installing Fleet's CRDs and namespaces: {0}")]
    Install(#[from] kube::Error),
}

/// Where a local hub keeps its member clusters' objects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemberStorage {
    /// In its database, as every other object.
    Durable,
    /// In memory only, gone when the hub stops: simulated members of a benchmark, whose
    /// real counterparts keep their objects in their own API servers, not in the hub.
    MemoryOnly,
}

/// A running hub whose management cluster has Fleet's CRDs and namespaces.
pub struct LocalHub {
    /// The hub.
    pub running: fleet_hub::Running,
    /// An admin client of the management cluster.
    pub client: kube::Client,
    data: PathBuf,
}

impl LocalHub {
    /// Starts a hub keeping its data in `data`, listening on `listen`, serving the
    /// management cluster and `members` (stored as `storage` says), and installs Fleet (by
    /// server-side apply as `field_manager`, so that a hub started again on the same data
    /// is updated).
    pub async fn start(
        data: &Path,
        listen: SocketAddr,
        members: &[String],
        storage: MemberStorage,
        field_manager: &str,
    ) -> Result<Self, StartError> {
        let mut clusters = vec![MANAGEMENT_CLUSTER.to_string()];
        clusters.extend(members.iter().cloned());
        let memory_only = match storage {
            MemberStorage::Durable => Vec::new(),
            MemberStorage::MemoryOnly => members.to_vec(),
        };
        let running = fleet_hub::start(fleet_hub::Options {
            data: data.to_path_buf(),
            listen,
            insecure_http: false,
            clusters,
            memory_only,
        })
        .await?;
        let hub = Self {
            running,
            client: fleet_objects::client::from_kubeconfig(&fleet_hub::serve::kubeconfig_path(
                data,
                MANAGEMENT_CLUSTER,
            ))
            .await?,
            data: data.to_path_buf(),
        };
        fleet_objects::client::install_fleet(&hub.client, field_manager).await?;
        Ok(hub)
    }

    /// The admin kubeconfig of a logical cluster.
    pub fn kubeconfig(&self, cluster: &str) -> PathBuf {
        fleet_hub::serve::kubeconfig_path(&self.data, cluster)
    }

    /// Where agents reach this hub (its URL and CA), for the kubeconfigs registration hands
    /// out.
    pub fn address(
        &self,
    ) -> Result<fleet_controller::registration::HubAddress, fleet_controller::Error> {
        let kubeconfig = self.kubeconfig(crate::MANAGEMENT_CLUSTER);
        fleet_controller::registration::HubAddress::from_kubeconfig(&kubeconfig)
    }

    /// An admin client of a logical cluster.
    pub async fn client_of(&self, cluster: &str) -> Result<kube::Client, ClientError> {
        fleet_objects::client::from_kubeconfig(&self.kubeconfig(cluster)).await
    }

    /// An admin client of a logical cluster that reaches the hub's router inside this
    /// process, with no socket: the same requests and answers as over HTTPS, minus TLS and
    /// a file descriptor per connection (10,000 simulated clusters would otherwise need
    /// 20,000 of them, client and server side). It asks for objects with or without their
    /// managedFields, as `managed_fields` says. `None` for an unknown cluster.
    pub fn in_process_client(
        &self,
        cluster: &str,
        managed_fields: ManagedFields,
    ) -> Option<kube::Client> {
        let token = self.running.hub.admin_token(cluster)?;
        self.in_process_client_as(cluster, &token, managed_fields)
    }

    /// [`LocalHub::in_process_client`] presenting the bearer `token` (a service account's,
    /// say) instead of the cluster's admin token: its requests are authorised as that
    /// account's, by RBAC. `None` if the token cannot be a header.
    pub fn in_process_client_as(
        &self,
        cluster: &str,
        token: &str,
        managed_fields: ManagedFields,
    ) -> Option<kube::Client> {
        let hub = self.running.hub.clone();
        let authorization = http::HeaderValue::from_str(&format!("Bearer {token}")).ok()?;
        let prefix = format!("/clusters/{cluster}");
        let router = fleet_hub::http::router(hub);
        let service = tower::ServiceBuilder::new()
            .map_request(move |mut request: http::Request<kube::client::Body>| {
                let path = request
                    .uri()
                    .path_and_query()
                    .map_or("/", |p| p.as_str())
                    .to_string();
                if let Ok(uri) = format!("{prefix}{path}").parse() {
                    *request.uri_mut() = uri;
                }
                let headers = request.headers_mut();
                headers.insert(http::header::AUTHORIZATION, authorization.clone());
                if managed_fields == ManagedFields::Omitted {
                    let (name, value) = fleet_objects::client::managed_fields_omitted();
                    headers.insert(name, value);
                }
                request
            })
            .service(router);
        Some(kube::Client::new(service, "default"))
    }

    /// Stops the hub once every client of it has been dropped.
    pub async fn shutdown(self) {
        // Idle connections of a client still alive would report the hub going away.
        drop(self.client);
        self.running.shutdown().await;
    }
}
