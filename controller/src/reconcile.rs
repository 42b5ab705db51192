//! One Bundle reconciled: a BundleDeployment in the namespace of every cluster it targets,
//! each naming the Content of its variant (stored once), stale ones deleted, and the
//! Bundle's status counted from its deployments.

use std::borrow::Borrow;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use fleet_api::labels::{
    BUNDLE_DEPLOYMENT_FINALIZER, BUNDLE_FINALIZER, BUNDLE_NAMESPACE_LABEL, BUNDLE_NAME_LABEL,
    CLUSTER_LABEL, CLUSTER_NAMESPACE_LABEL, REPO_NAME_LABEL,
};
use fleet_api::labels::{NAMESPACE_CREATION_ANNOTATION, NAMESPACE_CREATION_DISABLED};
use fleet_api::{
    Bundle, BundleDeployment, BundleDeploymentOptions, BundleDeploymentSpec, BundleDisplay,
    BundleSummary, Cluster, ClusterGroup, Content, GitRepo, GitRepoRestriction, LabelSelector,
    Policy,
};
use fleet_objects::policy::Policies;
use kube::api::{DeleteParams, Patch, PatchParams};
use kube::{Api, ResourceExt};
use serde_json::json;

use fleet_objects::client::{
    add_finalizer, patch_params, post_params, remove_finalizer, write_unread,
};
use fleet_objects::conditions::set_condition;

use crate::caches::Caches;
use crate::downstream::{self, Sources};
use crate::placement::{self, cluster_info, is_targeted};
use crate::rollout::{self, Candidate};
use crate::variant::{deployment_id, BundleFiles, VariantError};
use crate::{Context, Error, FIELD_MANAGER};

/// The namespace holding a cluster's BundleDeployments (`status.namespace` once set).
pub fn cluster_namespace(cluster: &Cluster) -> String {
    if let Some(namespace) = cluster.status.as_ref().and_then(|s| s.namespace.clone()) {
        return namespace;
    }
    let rel = format!(
        "{}/{}",
        cluster.namespace().unwrap_or_default(),
        cluster.name_any()
    );
    fleet_renderer::bundle::bundle_name("cluster", &rel)
}

/// Deploys `bundle` to the clusters it targets.
pub async fn bundle(bundle: Arc<Bundle>, ctx: &Context, caches: &Caches) -> Result<(), Error> {
    let namespace = bundle.namespace().unwrap_or_default();
    let name = bundle.name_any();
    // Clusters (and the groups of their namespaces) of the bundle's namespace and of
    // those BundleNamespaceMappings add, in namespace order.
    let targeted = caches.namespaces_for(&bundle);
    let clusters: Vec<_> = targeted.iter().flat_map(|ns| caches.clusters(ns)).collect();
    let groups: Vec<_> = targeted.iter().flat_map(|ns| caches.groups(ns)).collect();
    if bundle.metadata.deletion_timestamp.is_none() {
        // So that deleting the bundle uninstalls it everywhere before it goes.
        let api: Api<Bundle> = Api::namespaced(ctx.client.clone(), &namespace);
        add_finalizer(&api, &bundle, BUNDLE_FINALIZER, FIELD_MANAGER).await?;
    }
    let deployments = caches.deployments_of_bundle(&namespace, &name);
    let_go_uninstalled(ctx, &deployments).await?;
    let policies = caches.policies(&namespace);
    let namespace_selector = target_namespace_selector(&bundle, &caches.restrictions(&namespace));
    let sources = Sources::read(&ctx.client, &bundle).await?;
    let key = format!("{namespace}/{name}");
    let outside = Outside {
        policies: &policies,
        downstream: sources.fingerprint(),
        namespace_selector: namespace_selector.as_ref(),
    };
    let fingerprint = placement_fingerprint(&bundle, &clusters, &groups, &deployments, &outside);
    if ctx.placed(&key) == Some(fingerprint) {
        return write_status(ctx, &bundle, &deployments, &clusters, None).await;
    }
    let deleting = bundle.metadata.deletion_timestamp.is_some();
    let creates_namespaces = match admitted(&bundle, &policies) {
        Ok(creates_namespaces) => creates_namespaces,
        // A deleted bundle is uninstalled whatever the Policies say now.
        Err(_) if deleting => true,
        // Refused: the deployments stay as they were, and the bundle says why.
        Err(refusal) => {
            return write_status(ctx, &bundle, &deployments, &clusters, Some(refusal)).await
        }
    };
    // Where each cluster's deployment stands (looked up once per cluster). The plans keep
    // that, not the deployments: a pass writing to many clusters outlasts their reports, and
    // would otherwise hold every deployment as it was while the cache takes the new ones.
    let standing: BTreeMap<&str, Standing> = deployments
        .iter()
        .filter_map(|d| Some((d.metadata.namespace.as_deref()?, Standing::of(d))))
        .collect();
    let mut files = None;
    // One plan per cluster, each deployment made only when it is written: every bundle's
    // pass holds its plans until it has written them all, and a deployment is large.
    let mut plans = Vec::with_capacity(clusters.len());
    let mut candidates = Vec::with_capacity(clusters.len());
    // The deployment id and options of each variant, shared by the clusters deploying it.
    let mut deployed: BTreeMap<String, Arc<Deployed>> = BTreeMap::new();
    let mut failures = Vec::new();
    // The Contents this pass made sure of: one per distinct variant, not one per cluster.
    let mut stored = BTreeSet::new();
    // The variants whose Content cannot be stored, and why.
    let mut unstorable = BTreeMap::new();
    for cluster in &clusters {
        let info = cluster_info(cluster, &groups);
        if bundle.metadata.deletion_timestamp.is_some()
            || !is_targeted(&bundle, &info)
            || cluster.is_driven_twice()
        {
            continue;
        }
        if files.is_none() {
            let auth = match helm_auth(ctx, &bundle).await? {
                Ok(auth) => auth,
                Err(why) => {
                    failures.push(why);
                    break;
                }
            };
            files = Some(BundleFiles::write(
                &bundle,
                &ctx.work_dir,
                auth,
                ctx.options.render_budget,
            )?);
        }
        let Some(files) = files.as_mut() else {
            continue;
        };
        let variant = match blocking(|| files.variant(&info, &ctx.charts)) {
            Ok(variant) => variant,
            // As Fleet targets: a cluster whose Helm values cannot be templated for it fails
            // the whole bundle's targeting, and no deployment changes anywhere (they are
            // written only after every cluster is planned).
            Err(VariantError::Targeting(why)) => {
                // As Fleet words it: the cluster's own namespace.
                let problem = format!(
                    "targeting error: cluster {} in namespace {}: {why}",
                    cluster.name_any(),
                    cluster.namespace().unwrap_or_default()
                );
                return write_status(ctx, &bundle, &deployments, &clusters, Some(problem)).await;
            }
            Err(error) => {
                failures.push(format!("{}: {error}", cluster.name_any()));
                continue;
            }
        };
        if !variant.deploy {
            continue;
        }
        // Part of the options, so of the deployment id: a changed restriction redeploys.
        let mut variant = variant;
        variant.options.allowed_target_namespace_selector = namespace_selector.clone();
        let copies = match sources.for_variant(&variant.options.downstream_resources) {
            Ok(copies) => copies,
            Err(why) => {
                failures.push(format!("{}: {why}", cluster.name_any()));
                continue;
            }
        };
        let target_namespace = cluster_namespace(cluster);
        if stored.insert(variant.id.clone()) {
            match store_content(ctx, &variant).await {
                Ok(()) => {}
                // Too large to store: the bundle says so, and its deployments stay.
                Err(Error::Variant(why)) => {
                    unstorable.insert(variant.id.clone(), why.to_string());
                }
                Err(error) => return Err(error),
            }
        }
        if let Some(why) = unstorable.get(&variant.id) {
            failures.push(format!("{}: {why}", cluster.name_any()));
            continue;
        }
        let id = deployment_id(&variant, &downstream::digest(&copies));
        let standing = standing.get(target_namespace.as_str());
        candidates.push(Candidate {
            cluster: info,
            current: standing.and_then(|s| s.id.clone()),
            wanted: id.clone(),
            available: standing.is_some_and(|s| s.available),
        });
        let shared = deployed.entry(id).or_insert_with_key(|id| {
            Arc::new(Deployed {
                id: id.clone(),
                options: variant.options,
            })
        });
        plans.push(Plan {
            cluster: cluster.clone(),
            target_namespace,
            deployed: shared.clone(),
            copies,
            existed: standing.is_some(),
        });
    }
    drop(standing);
    drop(deployed);
    let allowed = rollout::allowed(bundle.spec.rollout_strategy.as_ref(), &candidates);
    drop(candidates);
    drop(deployments);
    let mut wanted = BTreeSet::new();
    let mut wrote = false;
    for (plan, go) in plans.into_iter().zip(&allowed) {
        if !go && !plan.existed {
            // Held back by maxNew: created on a later pass.
            continue;
        }
        let target_namespace = &plan.target_namespace;
        // Read now, not when the pass began: the agent may have reported since.
        let current = caches.deployment_of_bundle(&namespace, &name, target_namespace);
        let desired = deployment_for(
            &bundle,
            &plan.cluster,
            &plan.deployed.options,
            target_namespace,
            plan.deployed.id.clone(),
            creates_namespaces,
        );
        let deployment = if *go {
            desired
        } else {
            staged(desired, current.as_deref())
        };
        let unchanged = current.as_ref().is_some_and(|d| {
            d.spec == deployment.spec
                && d.metadata.labels == deployment.metadata.labels
                && d.metadata.annotations.clone().unwrap_or_default()
                    == deployment.metadata.annotations.clone().unwrap_or_default()
                && d.metadata.finalizers == deployment.metadata.finalizers
        });
        if !unchanged {
            wrote = true;
            if current.is_none() {
                // A deployment there shows the namespace exists.
                ctx.ensure_namespace(target_namespace).await?;
            }
            let write = async {
                if *go {
                    // The copies go first: the agent reads them when it sees the deployment.
                    let had_copies = current.as_deref().is_some_and(has_downstream_resources);
                    let copies = &plan.copies;
                    downstream::sync(&ctx.client, &bundle, target_namespace, copies, had_copies)
                        .await?;
                }
                let api = Api::<BundleDeployment>::namespaced(ctx.client.clone(), target_namespace);
                let apply = PatchParams::apply(FIELD_MANAGER).force();
                // The caches see the write through the watch; the answer is not read.
                write_unread(&api, |request| {
                    request.patch(&name, &apply, &Patch::Apply(&deployment))
                })
                .await?;
                Ok::<_, Error>(())
            };
            write
                .await
                .inspect_err(|_| ctx.forget_namespace(target_namespace))?;
        }
        wanted.insert(plan.target_namespace);
    }
    let deployments = caches.deployments_of_bundle(&namespace, &name);
    for stale in deployments
        .iter()
        .filter(|d| !d.namespace().is_some_and(|ns| wanted.contains(&ns)))
    {
        let stale_namespace = stale.namespace().unwrap_or_default();
        if has_downstream_resources(stale) {
            downstream::sync(&ctx.client, &bundle, &stale_namespace, &[], true).await?;
        }
        let api: Api<BundleDeployment> = Api::namespaced(ctx.client.clone(), &stale_namespace);
        wrote = true;
        api.delete(&stale.name_any(), &DeleteParams::background())
            .await?;
    }
    let deployments = caches.deployments_of_bundle(&namespace, &name);
    if bundle.metadata.deletion_timestamp.is_some() {
        // Deleted: it goes once every deployment was uninstalled by its agent.
        if deployments.is_empty() {
            let api: Api<Bundle> = Api::namespaced(ctx.client.clone(), &namespace);
            remove_finalizer(&api, &bundle, BUNDLE_FINALIZER, FIELD_MANAGER).await?;
            ctx.forget_placement(&key);
        }
        return Ok(());
    }
    // Remembered only once a pass found nothing to write: the placement is then known to
    // hold for these inputs. (After writes, the caches have yet to show them; the watch
    // events of those writes bring the bundle back here.) While a rollout holds clusters
    // back, readiness reports must bring it back too.
    if !wrote && failures.is_empty() && allowed.iter().all(|go| *go) {
        ctx.remember_placement(&key, fingerprint);
    }
    let failed = (!failures.is_empty()).then(|| format!("render failed: {}", failures.join("; ")));
    write_status(ctx, &bundle, &deployments, &clusters, failed).await
}

/// The credentials for `bundle`'s remote charts: those its GitRepo names for its path
/// (none for a bundle not made from a GitRepo), or why they cannot be read.
async fn helm_auth(
    ctx: &Context,
    bundle: &Bundle,
) -> Result<Result<fleet_charts::HelmAuth, String>, Error> {
    let none = Ok(fleet_charts::HelmAuth::none());
    let namespace = bundle.namespace().unwrap_or_default();
    if let Some(helm_op) = bundle.spec.helm_op_options.as_ref() {
        // A HelmOp's credentials and certificate checks, for its chart's repository alone.
        let helm = bundle.spec.options.helm.as_deref();
        let repository = helm
            .and_then(|h| {
                h.repo
                    .clone()
                    .filter(|r| !r.is_empty())
                    .or_else(|| h.chart.clone())
            })
            .unwrap_or_default();
        return Ok(fleet_charts::HelmAuth::read_for_repository(
            &ctx.client,
            &namespace,
            helm_op.secret_name.as_deref(),
            &repository,
        )
        .await
        .map(|auth| auth.skipping_tls_verify(helm_op.insecure_skip_tls_verify))
        .map_err(|e| format!("Helm credentials: {e}")));
    }
    let Some(repo) = bundle.labels().get(REPO_NAME_LABEL) else {
        return Ok(none);
    };
    let gitrepos: Api<GitRepo> = Api::namespaced(ctx.client.clone(), &namespace);
    let Some(gitrepo) = gitrepos.get_opt(repo).await? else {
        return Ok(none);
    };
    if !fleet_charts::RepoHelmAuth::named_by(&gitrepo) {
        return Ok(none);
    }
    let path = bundle
        .labels()
        .get(fleet_api::labels::BUNDLE_PATH_LABEL)
        .cloned()
        .unwrap_or_default();
    Ok(fleet_charts::RepoHelmAuth::read(&ctx.client, &gitrepo)
        .await
        .map(|auth| auth.for_path(&path))
        .map_err(|e| format!("Helm credentials: {e}")))
}

/// Whether a deployment's options name downstream resources (so copies of them may exist).
fn has_downstream_resources(deployment: &BundleDeployment) -> bool {
    deployment
        .spec
        .options
        .as_ref()
        .is_some_and(|o| !o.downstream_resources.is_empty())
}

/// What placement reads besides the bundle, its clusters, groups and deployments: the
/// namespace's Policies and the downstream resources the bundle names.
struct Outside<'a> {
    policies: &'a [Arc<Policy>],
    downstream: String,
    namespace_selector: Option<&'a LabelSelector>,
}

/// The selector a GitRepo's bundle's deployments carry to their agents: the
/// `allowedTargetNamespaceSelector`s of the GitRepoRestrictions of its namespace, merged
/// as Fleet merges them. Bundles of no GitRepo carry none.
fn target_namespace_selector(
    bundle: &Bundle,
    restrictions: &[Arc<GitRepoRestriction>],
) -> Option<LabelSelector> {
    bundle.labels().get(REPO_NAME_LABEL)?;
    restrictions
        .iter()
        .filter_map(|r| r.rules.allowed_target_namespace_selector.as_ref())
        .fold(None, |merged, next| {
            Some(fleet_objects::selector::merged(merged, next))
        })
}

/// Whether the namespace's Policies admit `bundle`: the service account of the bundle and
/// of each of its targets must be allowed. Says whether its agents may create
/// namespaces, or why it is refused.
pub(crate) fn admitted(bundle: &Bundle, policies: &[Arc<Policy>]) -> Result<bool, String> {
    let policies = Policies::combine(policies)?;
    let accounts =
        placement::every_options(bundle).map(|options| options.service_account.as_deref());
    for (index, account) in accounts.enumerate() {
        // A target that names no account takes the bundle's.
        if index > 0 && account.is_none() {
            continue;
        }
        policies.check_service_account(account)?;
    }
    Ok(policies.namespace_creation_allowed())
}

/// Lets deleted deployments go once their agent reported them uninstalled, or at once if
/// they were never applied (there is nothing to uninstall).
async fn let_go_uninstalled(
    ctx: &Context,
    deployments: &[Arc<BundleDeployment>],
) -> Result<(), Error> {
    for deployment in deployments {
        if deployment.metadata.deletion_timestamp.is_none() {
            continue;
        }
        let applied = deployment
            .status
            .as_ref()
            .and_then(|s| s.applied_deployment_id.as_ref())
            .is_some();
        if !applied || deployment.is_uninstalled() {
            let api: Api<BundleDeployment> = Api::namespaced(
                ctx.client.clone(),
                &deployment.namespace().unwrap_or_default(),
            );
            remove_finalizer(&api, deployment, BUNDLE_DEPLOYMENT_FINALIZER, FIELD_MANAGER).await?;
        }
    }
    Ok(())
}

/// A digest of everything placement and rendering read: the bundle's generation, the
/// clusters' names, labels, namespaces and pause, the groups' selectors and labels, and
/// which deployments exist with which ids. Status-only changes (an agent's report, a
/// cluster's counts) leave it alone, so they cost no render.
fn placement_fingerprint(
    bundle: &Bundle,
    clusters: &[Arc<Cluster>],
    groups: &[Arc<ClusterGroup>],
    deployments: &[Arc<BundleDeployment>],
    outside: &Outside<'_>,
) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    // A bundle deleted and made again under its name is another bundle.
    bundle.metadata.uid.hash(&mut hasher);
    bundle.metadata.generation.hash(&mut hasher);
    bundle
        .metadata
        .deletion_timestamp
        .is_some()
        .hash(&mut hasher);
    for cluster in clusters {
        cluster.name_any().hash(&mut hasher);
        cluster.labels().hash(&mut hasher);
        cluster_namespace(cluster).hash(&mut hasher);
        cluster.spec.paused.hash(&mut hasher);
        cluster.is_off_schedule().hash(&mut hasher);
        cluster.is_driven_twice().hash(&mut hasher);
    }
    for group in groups {
        group.name_any().hash(&mut hasher);
        group.namespace().hash(&mut hasher);
        group.labels().hash(&mut hasher);
        serde_json::to_string(&group.spec)
            .unwrap_or_default()
            .hash(&mut hasher);
    }
    let mut ids: Vec<(Option<String>, Option<String>)> = deployments
        .iter()
        .map(|d| (d.namespace(), d.spec.deployment_id.clone()))
        .collect();
    ids.sort();
    ids.hash(&mut hasher);
    for policy in outside.policies {
        serde_json::to_string(&**policy)
            .unwrap_or_default()
            .hash(&mut hasher);
    }
    outside.downstream.hash(&mut hasher);
    serde_json::to_string(&outside.namespace_selector)
        .unwrap_or_default()
        .hash(&mut hasher);
    hasher.finish()
}

/// What a pass deploys to one cluster. It is kept small (the deployment itself is made
/// when it is written): a bundle's pass holds one per cluster until it has written them all.
struct Plan {
    cluster: Arc<Cluster>,
    /// The cluster's namespace, where its deployments go.
    target_namespace: String,
    /// The deployment id and options, shared by the clusters of one variant.
    deployed: Arc<Deployed>,
    /// The downstream resources copied to the cluster's namespace.
    copies: Vec<downstream::Copy>,
    /// A deployment was there when the pass began.
    existed: bool,
}

/// A variant's deployment id and options.
struct Deployed {
    id: String,
    options: BundleDeploymentOptions,
}

/// Where a cluster's deployment stood when a pass began, as its rollout reads it.
struct Standing {
    /// The deployment it runs.
    id: Option<String>,
    /// Applied and ready at that deployment.
    available: bool,
}

impl Standing {
    fn of(deployment: &BundleDeployment) -> Self {
        let available = deployment.status.as_ref().is_some_and(|s| {
            s.ready
                && s.applied_deployment_id.is_some()
                && s.applied_deployment_id == deployment.spec.deployment_id
        });
        Self {
            id: deployment.spec.deployment_id.clone(),
            available,
        }
    }
}

/// `desired` held back by the rollout: the current deployment stays, the new one is staged.
fn staged(mut desired: BundleDeployment, current: Option<&BundleDeployment>) -> BundleDeployment {
    if let Some(current) = current {
        desired.spec.deployment_id = current.spec.deployment_id.clone();
        desired.spec.options = current.spec.options.clone();
    }
    desired
}

/// The deployment of `bundle` to `cluster` (in its namespace `target_namespace`) with
/// `options`, as deployment `id`; marked so when the Policies let its agent create no
/// namespaces (`creates_namespaces` false).
pub(crate) fn deployment_for(
    bundle: &Bundle,
    cluster: &Cluster,
    options: &BundleDeploymentOptions,
    target_namespace: &str,
    id: String,
    creates_namespaces: bool,
) -> BundleDeployment {
    let paused = bundle.spec.paused || cluster.spec.paused;
    let mut labels = BTreeMap::from([
        (BUNDLE_NAME_LABEL.to_string(), bundle.name_any()),
        (
            BUNDLE_NAMESPACE_LABEL.to_string(),
            bundle.namespace().unwrap_or_default(),
        ),
        (CLUSTER_LABEL.to_string(), cluster.name_any()),
        (
            CLUSTER_NAMESPACE_LABEL.to_string(),
            cluster.namespace().unwrap_or_default(),
        ),
    ]);
    for carried in [REPO_NAME_LABEL, fleet_api::labels::SHARD_LABEL] {
        if let Some(value) = bundle.labels().get(carried) {
            labels.insert(carried.to_string(), value.clone());
        }
    }
    let mut deployment = BundleDeployment::new(
        &bundle.name_any(),
        BundleDeploymentSpec {
            paused,
            staged_options: Some(options.clone()),
            staged_deployment_id: Some(id.clone()),
            options: Some(options.clone()),
            deployment_id: Some(id),
            depends_on: bundle.spec.depends_on.clone(),
            correct_drift: options.correct_drift.clone(),
            off_schedule: cluster.is_off_schedule(),
        },
    );
    deployment.metadata.namespace = Some(target_namespace.to_string());
    deployment.metadata.labels = Some(labels);
    deployment.metadata.finalizers = Some(vec![BUNDLE_DEPLOYMENT_FINALIZER.to_string()]);
    if !creates_namespaces {
        deployment.metadata.annotations = Some(BTreeMap::from([(
            NAMESPACE_CREATION_ANNOTATION.to_string(),
            NAMESPACE_CREATION_DISABLED.to_string(),
        )]));
    }
    deployment
}

/// Creates the variant's Content unless it exists: one object per distinct variant,
/// however many clusters deploy it.
async fn store_content(
    ctx: &Context,
    variant: &fleet_renderer::bundle::Variant,
) -> Result<(), Error> {
    let api: Api<Content> = Api::all(ctx.client.clone());
    if api.get_opt(&variant.id).await?.is_some() {
        return Ok(());
    }
    match api
        .create(
            &post_params(FIELD_MANAGER),
            &Content::pack(&variant.id, &variant.payload()).map_err(VariantError::from)?,
        )
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(response)) if response.code == 409 => Ok(()),
        Err(error) => Err(error.into()),
    }
}

/// Where one deployment stands, as Fleet's summary counts it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum DeploymentState {
    /// Applied at the current version and ready.
    Ready,
    /// Applied at the current version, not ready yet.
    NotReady,
    /// Waiting for the agent to apply the current version.
    WaitApplied,
    /// The agent's last apply failed.
    ErrApplied,
    /// Paused with a newer version staged.
    OutOfSync,
    /// Applied, then changed outside Fleet.
    Modified,
}

impl DeploymentState {
    /// The state of `deployment`.
    pub fn of(deployment: &BundleDeployment) -> Self {
        // Read in place: summaries and messages ask this of every deployment of a bundle.
        let none = fleet_api::BundleDeploymentStatus::default();
        let status = deployment.status.as_ref().unwrap_or(&none);
        let applied = status.applied_deployment_id == deployment.spec.deployment_id;
        let failed = status
            .conditions
            .iter()
            .any(|c| c.type_ == "Deployed" && c.status == "False");
        if deployment.spec.paused && !applied {
            Self::OutOfSync
        } else if failed {
            Self::ErrApplied
        } else if !applied {
            Self::WaitApplied
        } else if !status.non_modified && !status.modified_status.is_empty() {
            Self::Modified
        } else if status.ready {
            Self::Ready
        } else {
            Self::NotReady
        }
    }

    /// Fleet's name of the state.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ready => "Ready",
            Self::NotReady => "NotReady",
            Self::WaitApplied => "WaitApplied",
            Self::ErrApplied => "ErrApplied",
            Self::OutOfSync => "OutOfSync",
            Self::Modified => "Modified",
        }
    }
}

/// The deployments `summarise` does not count ready, in order: the first few name the
/// ones a NotReady message lists.
pub fn not_ready<D: Borrow<BundleDeployment>>(deployments: &[D]) -> impl Iterator<Item = &D> {
    deployments
        .iter()
        .filter(|d| DeploymentState::of((*d).borrow()) != DeploymentState::Ready)
}

/// Counts of the deployments per state, as Fleet's summary counts them.
pub fn summarise<D: Borrow<BundleDeployment>>(deployments: &[D]) -> BundleSummary {
    let mut summary = BundleSummary {
        desired_ready: deployments.len() as i32,
        ..BundleSummary::default()
    };
    for deployment in deployments {
        let count = match DeploymentState::of(deployment.borrow()) {
            DeploymentState::Ready => &mut summary.ready,
            DeploymentState::NotReady => &mut summary.not_ready,
            DeploymentState::WaitApplied => &mut summary.wait_applied,
            DeploymentState::ErrApplied => &mut summary.err_applied,
            DeploymentState::OutOfSync => &mut summary.out_of_sync,
            DeploymentState::Modified => &mut summary.modified,
        };
        *count += 1;
    }
    summary
}

/// `namespace/name` of the cluster a deployment is for, from its labels.
fn cluster_of(deployment: &BundleDeployment) -> String {
    let labels = deployment.labels();
    let label = |key: &str| labels.get(key).cloned().unwrap_or_default();
    format!(
        "{}/{}",
        label(CLUSTER_NAMESPACE_LABEL),
        label(CLUSTER_LABEL)
    )
}

/// `namespace/name` of the clusters among `clusters` whose agent stopped reporting.
fn offline_clusters(clusters: &[Arc<Cluster>]) -> BTreeSet<String> {
    clusters
        .iter()
        .filter(|c| c.is_offline())
        .map(|c| format!("{}/{}", c.namespace().unwrap_or_default(), c.name_any()))
        .collect()
}

async fn write_status(
    ctx: &Context,
    bundle: &Bundle,
    deployments: &[Arc<BundleDeployment>],
    clusters: &[Arc<Cluster>],
    problem: Option<String>,
) -> Result<(), Error> {
    let summary = summarise(deployments);
    let offline_now = offline_clusters(clusters);
    let offline: Vec<String> = deployments
        .iter()
        .map(|d| cluster_of(d))
        .filter(|cluster| offline_now.contains(cluster))
        .collect();
    let waiting: Vec<String> = not_ready(deployments)
        .take(3)
        .map(|d| cluster_of(d))
        .collect();
    let (ready, mut message) = if let Some(problem) = problem {
        (false, problem)
    } else if summary.ready < summary.desired_ready {
        let not_ready = summary.desired_ready - summary.ready;
        (
            false,
            format!("NotReady({not_ready}) [Cluster {}]", waiting.join(", ")),
        )
    } else {
        (true, String::new())
    };
    // What an offline cluster last reported may no longer hold: the bundle says so rather
    // than showing that report as today's.
    let ready = ready && offline.is_empty();
    if !offline.is_empty() {
        let first: Vec<&str> = offline.iter().take(3).map(String::as_str).collect();
        let said = format!("Offline({}) [Cluster {}]", offline.len(), first.join(", "));
        message = [message, said]
            .into_iter()
            .filter(|m| !m.is_empty())
            .collect::<Vec<_>>()
            .join("; ");
    }
    let old = bundle.status.clone().unwrap_or_default();
    let mut conditions = old.conditions.clone();
    let render_failed = conditions
        .iter()
        .any(|c| c.type_ == "Ready" && c.reason.as_deref() == Some("RenderFailed"));
    if !render_failed {
        let now = jiff::Timestamp::now().to_string();
        set_condition(&mut conditions, "Ready", ready, "", &message, &now);
    }
    let display = BundleDisplay {
        ready_clusters: Some(format!("{}/{}", summary.ready, summary.desired_ready)),
        state: Some(
            if ready {
                "Ready"
            } else if !offline.is_empty() && summary.ready == summary.desired_ready {
                "Offline"
            } else {
                "NotReady"
            }
            .into(),
        ),
    };
    let unchanged = old.summary.as_ref() == Some(&summary)
        && old.display.as_ref() == Some(&display)
        && old.conditions == conditions
        && old.observed_generation == bundle.metadata.generation;
    if unchanged {
        return Ok(());
    }
    let patch = json!({"status": {
        "summary": summary,
        "display": display,
        "conditions": conditions,
        "observedGeneration": bundle.metadata.generation,
    }});
    let api: Api<Bundle> =
        Api::namespaced(ctx.client.clone(), &bundle.namespace().unwrap_or_default());
    api.patch_status(
        &bundle.name_any(),
        &patch_params(FIELD_MANAGER),
        &Patch::Merge(&patch),
    )
    .await?;
    Ok(())
}

/// Runs blocking work (a render, which may take up to the renderer's time limit) on this
/// worker, first handing the worker's other tasks (watches, other reconciles, the lease)
/// to the runtime's other workers when there are any.
fn blocking<R>(work: impl FnOnce() -> R) -> R {
    match tokio::runtime::Handle::try_current().map(|h| h.runtime_flavor()) {
        Ok(tokio::runtime::RuntimeFlavor::MultiThread) => tokio::task::block_in_place(work),
        _ => work(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deployment(id: &str, status: serde_json::Value) -> BundleDeployment {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "fleet.cattle.io/v1alpha1", "kind": "BundleDeployment",
            "metadata": {"name": id, "namespace": "cluster-a"},
            "spec": {"deploymentID": id},
            "status": status,
        }))
        .expect("a BundleDeployment")
    }

    #[test]
    fn a_deployment_ready_at_an_older_version_is_listed_as_not_ready() {
        let deployments = [
            deployment(
                "v2",
                serde_json::json!({"appliedDeploymentID": "v2", "ready": true, "nonModified": true}),
            ),
            deployment(
                "v3",
                serde_json::json!({"appliedDeploymentID": "v2", "ready": true, "nonModified": true}),
            ),
            deployment("v4", serde_json::json!({})),
        ];
        let summary = summarise(&deployments);
        assert_eq!((summary.ready, summary.wait_applied), (1, 2));
        let listed: Vec<String> = not_ready(&deployments).map(|d| d.name_any()).collect();
        assert_eq!(listed, ["v3", "v4"]);
    }
}
