//! kustomize's default transformer configuration (v5.8): where each built-in transformer
//! writes in the Kubernetes kinds, and which fields name other objects. Specs are written
//! `[group:version:]Kind path [+]`, `+` meaning "create when missing"; each was checked
//! against `kubectl kustomize` on objects carrying every candidate field.

use std::sync::OnceLock;

use super::config::{FieldSpec, NameBackRef, TransformerConfig};

/// The default configuration, built once.
pub(crate) fn transformer_config() -> TransformerConfig {
    static DEFAULTS: OnceLock<TransformerConfig> = OnceLock::new();
    DEFAULTS.get_or_init(build).clone()
}

fn specs(lines: &[&str]) -> Vec<FieldSpec> {
    lines.iter().map(|line| FieldSpec::parse(line)).collect()
}

/// Labels on object metadata and on the metadata of the templates kinds carry.
const METADATA_LABELS: [&str; 10] = [
    "* metadata/labels +",
    ":v1:ReplicationController spec/template/metadata/labels +",
    "Deployment spec/template/metadata/labels +",
    "ReplicaSet spec/template/metadata/labels +",
    "DaemonSet spec/template/metadata/labels +",
    "apps::StatefulSet spec/template/metadata/labels +",
    "apps::StatefulSet spec/volumeClaimTemplates[]/metadata/labels +",
    "batch::Job spec/template/metadata/labels +",
    "batch::CronJob spec/jobTemplate/metadata/labels +",
    "batch::CronJob spec/jobTemplate/spec/template/metadata/labels +",
];

/// Label selectors, which `commonLabels` and `includeSelectors` labels also reach.
const SELECTORS: [&str; 12] = [
    ":v1:Service spec/selector +",
    ":v1:ReplicationController spec/selector +",
    "Deployment spec/selector/matchLabels +",
    "ReplicaSet spec/selector/matchLabels +",
    "DaemonSet spec/selector/matchLabels +",
    "apps::StatefulSet spec/selector/matchLabels +",
    "batch::Job spec/selector/matchLabels",
    "batch::CronJob spec/jobTemplate/spec/selector/matchLabels",
    "policy::PodDisruptionBudget spec/selector/matchLabels",
    "networking.k8s.io::NetworkPolicy spec/podSelector/matchLabels",
    "networking.k8s.io::NetworkPolicy spec/ingress/from/podSelector/matchLabels",
    "networking.k8s.io::NetworkPolicy spec/egress/to/podSelector/matchLabels",
];

/// Pod affinity and spread selectors, reached in apps Deployments and StatefulSets only.
const POD_SELECTORS: [&str; 5] = [
    "affinity/podAffinity/preferredDuringSchedulingIgnoredDuringExecution/podAffinityTerm/labelSelector/matchLabels",
    "affinity/podAffinity/requiredDuringSchedulingIgnoredDuringExecution/labelSelector/matchLabels",
    "affinity/podAntiAffinity/preferredDuringSchedulingIgnoredDuringExecution/podAffinityTerm/labelSelector/matchLabels",
    "affinity/podAntiAffinity/requiredDuringSchedulingIgnoredDuringExecution/labelSelector/matchLabels",
    "topologySpreadConstraints/labelSelector/matchLabels",
];

/// Annotations on object metadata and on template metadata.
const ANNOTATIONS: [&str; 9] = [
    "* metadata/annotations +",
    ":v1:ReplicationController spec/template/metadata/annotations +",
    "Deployment spec/template/metadata/annotations +",
    "ReplicaSet spec/template/metadata/annotations +",
    "DaemonSet spec/template/metadata/annotations +",
    "apps::StatefulSet spec/template/metadata/annotations +",
    "batch::Job spec/template/metadata/annotations +",
    "batch::CronJob spec/jobTemplate/metadata/annotations +",
    "batch::CronJob spec/jobTemplate/spec/template/metadata/annotations +",
];

/// Fields besides `metadata/namespace` the namespace transformer sets.
const NAMESPACE: [&str; 3] = [
    ":v1:Namespace metadata/name +",
    "apiregistration.k8s.io::APIService spec/service/namespace +",
    "apiextensions.k8s.io::CustomResourceDefinition spec/conversion/webhook/clientConfig/service/namespace",
];

/// Image fields (kustomize also walks every `containers` and `initContainers` list).
const IMAGES: [&str; 6] = [
    "* spec/containers[]/image",
    "* spec/initContainers[]/image",
    "* spec/volumes[]/image/reference",
    "* spec/template/spec/containers[]/image",
    "* spec/template/spec/initContainers[]/image",
    "* spec/template/spec/volumes[]/image/reference",
];

const REPLICAS: [&str; 4] = [
    "Deployment spec/replicas +",
    "ReplicationController spec/replicas +",
    "ReplicaSet spec/replicas +",
    "StatefulSet spec/replicas +",
];

/// Kinds holding a pod spec, and where.
const POD_SPEC: [(&str, &str); 9] = [
    ("Pod", "spec"),
    ("PodTemplate", "template/spec"),
    ("Deployment", "spec/template/spec"),
    ("ReplicaSet", "spec/template/spec"),
    ("DaemonSet", "spec/template/spec"),
    ("StatefulSet", "spec/template/spec"),
    ("Job", "spec/template/spec"),
    ("CronJob", "spec/jobTemplate/spec/template/spec"),
    ("ReplicationController", "spec/template/spec"),
];

/// Pod spec fields naming ConfigMaps (looked for in every pod kind but
/// ReplicationController).
const CONFIGMAP_IN_POD: [&str; 6] = [
    "volumes/configMap/name",
    "containers/env/valueFrom/configMapKeyRef/name",
    "initContainers/env/valueFrom/configMapKeyRef/name",
    "containers/envFrom/configMapRef/name",
    "initContainers/envFrom/configMapRef/name",
    "volumes/projected/sources/configMap/name",
];

/// Pod spec fields naming Secrets (same kinds as ConfigMaps).
const SECRET_IN_POD: [&str; 7] = [
    "volumes/secret/secretName",
    "containers/env/valueFrom/secretKeyRef/name",
    "initContainers/env/valueFrom/secretKeyRef/name",
    "containers/envFrom/secretRef/name",
    "initContainers/envFrom/secretRef/name",
    "imagePullSecrets/name",
    "volumes/projected/sources/secret/name",
];

/// Single references from a pod spec, looked for in Pods and the workload kinds that are
/// not PodTemplate or ReplicaSet: `referral field`.
const ONE_PER_POD: [(&str, &str); 3] = [
    (":v1:ServiceAccount", "serviceAccountName"),
    (
        ":v1:PersistentVolumeClaim",
        "volumes/persistentVolumeClaim/claimName",
    ),
    ("scheduling.k8s.io:v1:PriorityClass", "priorityClassName"),
];

/// Other references: `referral <- referrer path`. A path ending at a map (subjects,
/// webhook services, node config sources) names the referral by the map's `name` and
/// `namespace`.
const OTHER_REFERENCES: [&str; 38] = [
    "Deployment <- HorizontalPodAutoscaler spec/scaleTargetRef/name",
    "ReplicationController <- HorizontalPodAutoscaler spec/scaleTargetRef/name",
    "ReplicaSet <- HorizontalPodAutoscaler spec/scaleTargetRef/name",
    "StatefulSet <- HorizontalPodAutoscaler spec/scaleTargetRef/name",
    ":v1:ConfigMap <- Node spec/configSource/configMap",
    ":v1:ConfigMap <- Role rules/resourceNames",
    ":v1:ConfigMap <- ClusterRole rules/resourceNames",
    ":v1:ConfigMap <- Ingress metadata/annotations/nginx.ingress.kubernetes.io\\/fastcgi-params-configmap",
    ":v1:Secret <- Ingress spec/tls/secretName",
    ":v1:Secret <- Ingress metadata/annotations/ingress.kubernetes.io\\/auth-secret",
    ":v1:Secret <- Ingress metadata/annotations/nginx.ingress.kubernetes.io\\/auth-secret",
    ":v1:Secret <- Ingress metadata/annotations/nginx.ingress.kubernetes.io\\/auth-tls-secret",
    ":v1:Secret <- ServiceAccount imagePullSecrets/name",
    ":v1:Secret <- StorageClass parameters/secretName",
    ":v1:Secret <- StorageClass parameters/adminSecretName",
    ":v1:Secret <- StorageClass parameters/userSecretName",
    ":v1:Secret <- StorageClass parameters/secretRef",
    ":v1:Secret <- Role rules/resourceNames",
    ":v1:Secret <- ClusterRole rules/resourceNames",
    ":v1:Secret <- serving.knative.dev:v1:Service spec/template/spec/containers/env/valueFrom/secretKeyRef/name",
    ":v1:Secret <- PersistentVolume spec/azureFile/secretName",
    ":v1:Service <- apps::StatefulSet spec/serviceName",
    ":v1:Service <- Ingress spec/rules/http/paths/backend/serviceName",
    ":v1:Service <- Ingress spec/backend/serviceName",
    ":v1:Service <- Ingress spec/rules/http/paths/backend/service/name",
    ":v1:Service <- Ingress spec/defaultBackend/service/name",
    ":v1:Service <- apiregistration.k8s.io::APIService spec/service/name",
    ":v1:Service <- admissionregistration.k8s.io::ValidatingWebhookConfiguration webhooks/clientConfig/service",
    ":v1:Service <- admissionregistration.k8s.io::MutatingWebhookConfiguration webhooks/clientConfig/service",
    ":v1:Service <- HTTPRoute spec/rules/backendRefs/name",
    "rbac.authorization.k8s.io::Role <- rbac.authorization.k8s.io::RoleBinding roleRef/name",
    "rbac.authorization.k8s.io::ClusterRole <- rbac.authorization.k8s.io::RoleBinding roleRef/name",
    "rbac.authorization.k8s.io::ClusterRole <- rbac.authorization.k8s.io::ClusterRoleBinding roleRef/name",
    ":v1:ServiceAccount <- rbac.authorization.k8s.io::RoleBinding subjects",
    ":v1:ServiceAccount <- rbac.authorization.k8s.io::ClusterRoleBinding subjects",
    ":v1:PersistentVolume <- PersistentVolumeClaim spec/volumeName",
    ":v1:PersistentVolume <- ClusterRole rules/resourceNames",
    "storage.k8s.io:v1:StorageClass <- PersistentVolume spec/storageClassName",
];

/// StorageClass references beyond PersistentVolumes.
const STORAGE_CLASS_REFERRERS: [&str; 2] = [
    "PersistentVolumeClaim spec/storageClassName",
    "StatefulSet spec/volumeClaimTemplates/spec/storageClassName",
];

/// Where `$(VAR)` is replaced, besides container fields of every pod kind.
const VAR_REFERENCES: [&str; 6] = [
    "Ingress spec/rules/host",
    "Ingress spec/tls/hosts",
    "Ingress spec/tls/secretName",
    "Service spec/ports/port",
    "Service spec/ports/targetPort",
    "* metadata/labels",
];

/// The referral named by `group:version:Kind` text.
fn referral(text: &str) -> NameBackRef {
    let spec = FieldSpec::parse(text);
    NameBackRef {
        group: spec.group,
        version: spec.version,
        kind: spec.kind,
        field_specs: Vec::new(),
    }
}

fn add_reference(references: &mut Vec<NameBackRef>, referral_text: &str, referrer: &str) {
    let target = referral(referral_text);
    let spec = FieldSpec::parse(referrer);
    match references
        .iter_mut()
        .find(|r| r.kind == target.kind && r.group == target.group)
    {
        Some(existing) => existing.field_specs.push(spec),
        None => references.push(NameBackRef {
            field_specs: vec![spec],
            ..target
        }),
    }
}

fn name_references() -> Vec<NameBackRef> {
    let mut references = Vec::new();
    for (referral_text, fields) in [
        (":v1:ConfigMap", &CONFIGMAP_IN_POD[..]),
        (":v1:Secret", &SECRET_IN_POD[..]),
    ] {
        for (kind, pod_spec) in POD_SPEC
            .iter()
            .filter(|(k, _)| *k != "ReplicationController")
        {
            let kind = if *kind == "Pod" { ":v1:Pod" } else { kind };
            for field in fields {
                add_reference(
                    &mut references,
                    referral_text,
                    &format!("{kind} {pod_spec}/{field}"),
                );
            }
        }
    }
    for (referral_text, field) in ONE_PER_POD {
        for (kind, pod_spec) in POD_SPEC
            .iter()
            .filter(|(k, _)| !matches!(*k, "PodTemplate" | "ReplicaSet"))
        {
            add_reference(
                &mut references,
                referral_text,
                &format!("{kind} {pod_spec}/{field}"),
            );
        }
    }
    for line in OTHER_REFERENCES {
        if let Some((referral_text, referrer)) = line.split_once(" <- ") {
            add_reference(&mut references, referral_text, referrer);
        }
    }
    for referrer in STORAGE_CLASS_REFERRERS {
        add_reference(&mut references, "storage.k8s.io:v1:StorageClass", referrer);
    }
    references
}

fn var_references() -> Vec<FieldSpec> {
    let mut out = Vec::new();
    for (kind, pod_spec) in POD_SPEC
        .iter()
        .filter(|(k, _)| !matches!(*k, "PodTemplate" | "ReplicationController"))
    {
        for containers in ["containers", "initContainers"] {
            for field in ["args", "command", "env/value", "volumeMounts/mountPath"] {
                out.push(FieldSpec::parse(&format!(
                    "{kind} {pod_spec}/{containers}/{field}"
                )));
            }
        }
    }
    out.extend(specs(&VAR_REFERENCES));
    out
}

fn build() -> TransformerConfig {
    let template_labels = specs(&METADATA_LABELS);
    let mut common_labels = specs(&SELECTORS);
    for kind in ["apps::Deployment", "apps::StatefulSet"] {
        for path in POD_SELECTORS {
            common_labels.push(FieldSpec::parse(&format!(
                "{kind} spec/template/spec/{path}"
            )));
        }
    }
    common_labels.extend(template_labels.clone());
    TransformerConfig {
        name_prefix: specs(&["* metadata/name"]),
        name_suffix: specs(&["* metadata/name"]),
        namespace: specs(&NAMESPACE),
        common_labels,
        template_labels,
        common_annotations: specs(&ANNOTATIONS),
        name_reference: name_references(),
        var_reference: var_references(),
        images: specs(&IMAGES),
        replicas: specs(&REPLICAS),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_group_by_referral() {
        let config = transformer_config();
        let service_account = config
            .name_reference
            .iter()
            .find(|r| r.kind == "ServiceAccount")
            .expect("ServiceAccount references");
        assert_eq!(service_account.version, "v1");
        assert!(service_account
            .field_specs
            .iter()
            .any(|s| s.kind == "ClusterRoleBinding" && s.path == "subjects"));
        assert!(!service_account
            .field_specs
            .iter()
            .any(|s| s.kind == "ReplicaSet"));
        assert!(config.common_labels.iter().any(|s| s.kind == "StatefulSet"
            && s.path == "spec/template/spec/topologySpreadConstraints/labelSelector/matchLabels"));
    }
}
