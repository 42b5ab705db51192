//! The labels Fleet puts on its objects, as Rancher Fleet spells them.

/// On a Bundle: the GitRepo (or `fleet apply` name) it comes from.
pub const REPO_NAME_LABEL: &str = "fleet.cattle.io/repo-name";
/// On a Bundle: the HelmOp it was made from.
pub const HELMOP_LABEL: &str = "fleet.cattle.io/fleet-helm-name";
/// On a Bundle: its directory in the repository.
pub const BUNDLE_PATH_LABEL: &str = "fleet.cattle.io/bundle-path";
/// On a Bundle: the commit it was rendered from.
pub const COMMIT_LABEL: &str = "fleet.cattle.io/commit";
/// On a BundleDeployment: the Bundle it deploys.
pub const BUNDLE_NAME_LABEL: &str = "fleet.cattle.io/bundle-name";
/// On a BundleDeployment: the namespace of that Bundle.
pub const BUNDLE_NAMESPACE_LABEL: &str = "fleet.cattle.io/bundle-namespace";
/// On a BundleDeployment: the Cluster it is for.
pub const CLUSTER_LABEL: &str = "fleet.cattle.io/cluster";
/// On a BundleDeployment: the namespace of that Cluster.
pub const CLUSTER_NAMESPACE_LABEL: &str = "fleet.cattle.io/cluster-namespace";
/// On a deployed object: the BundleDeployment that applied it.
pub const DEPLOYMENT_LABEL: &str = "fleet.cattle.io/bundle-deployment";
/// On a deployed object: the namespace of that BundleDeployment on the hub.
pub const DEPLOYMENT_NAMESPACE_LABEL: &str = "fleet.cattle.io/bundle-deployment-namespace";
/// On a Bundle: its BundleDeployments are deleted (and uninstalled) before it goes.
pub const BUNDLE_FINALIZER: &str = "fleet.cattle.io/bundle-finalizer";
/// On a BundleDeployment: its agent uninstalls it from the member cluster before it goes.
pub const BUNDLE_DEPLOYMENT_FINALIZER: &str = "fleet.cattle.io/bundle-deployment-finalizer";
/// On a ClusterRegistration: the token it was made with.
pub const TOKEN_LABEL: &str = "fleet.cattle.io/token";

/// Annotation of a BundleDeployment telling its agent whether it may create the namespaces
/// the deployment needs; set to [`NAMESPACE_CREATION_DISABLED`] by the controller when the
/// namespace's Policies require a service account and do not allow namespace creation.
pub const NAMESPACE_CREATION_ANNOTATION: &str = "fleet.cattle.io/namespace-creation";
/// [`NAMESPACE_CREATION_ANNOTATION`]'s value that forbids creating namespaces.
pub const NAMESPACE_CREATION_DISABLED: &str = "disabled";

/// Label giving a GitRepo (and what is made from it: Bundles, BundleDeployments) to the
/// controller shard of that id, as Fleet shards: a controller started with `--shard-id`
/// handles only objects with it, one started without only objects without it.
pub const SHARD_LABEL: &str = "fleet.cattle.io/shard-ref";
