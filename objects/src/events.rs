//! Kubernetes Events (`v1` Events, which `kubectl describe` and `kubectl get events` show)
//! about Fleet's objects, as Fleet's controllers record them: a reason, a message, Normal or
//! Warning. A failure to record one is logged, never an error of what it reports.

use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kube::api::PostParams;
use kube::{Api, Resource, ResourceExt};

/// Whether an Event reports something expected or a problem.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    /// Expected: a new commit, a new chart version.
    Normal,
    /// A problem: a refusal, a failure.
    Warning,
}

/// Records an Event about `object` from `component`, in the object's namespace.
pub async fn record<K>(
    client: &kube::Client,
    object: &K,
    component: &str,
    kind: EventType,
    reason: &str,
    message: &str,
) where
    K: Resource<DynamicType = ()>,
{
    let namespace = object.namespace().unwrap_or_else(|| "default".into());
    let now = Time(k8s_openapi::jiff::Timestamp::now());
    let event = Event {
        metadata: ObjectMeta {
            name: Some(format!(
                "{}.{:x}",
                object.name_any(),
                k8s_openapi::jiff::Timestamp::now().as_nanosecond()
            )),
            namespace: Some(namespace.clone()),
            ..ObjectMeta::default()
        },
        involved_object: ObjectReference {
            api_version: Some(K::api_version(&()).into_owned()),
            kind: Some(K::kind(&()).into_owned()),
            name: Some(object.name_any()),
            namespace: object.namespace(),
            uid: object.uid(),
            resource_version: object.resource_version(),
            ..ObjectReference::default()
        },
        type_: Some(
            match kind {
                EventType::Normal => "Normal",
                EventType::Warning => "Warning",
            }
            .into(),
        ),
        reason: Some(reason.into()),
        message: Some(message.into()),
        source: Some(EventSource {
            component: Some(component.into()),
            host: None,
        }),
        reporting_component: Some(component.into()),
        first_timestamp: Some(now.clone()),
        last_timestamp: Some(now),
        count: Some(1),
        ..Event::default()
    };
    let api: Api<Event> = Api::namespaced(client.clone(), &namespace);
    if let Err(error) = api.create(&PostParams::default(), &event).await {
        tracing::warn!(object = %object.name_any(), reason, %error, "recording an event failed");
    }
}
