//! A request on one resource after routing ([`Call`]): what every verb and effect is
//! handed, and how its query and path read.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use serde_json::{json, Value};

use crate::event::Key;
use crate::fields::Lists;
use crate::managed::Writer;
use crate::registry::ResourceType;
use crate::selector::Selectors;
use crate::status::{ApiError, ApiResult};
use crate::stored::Stored;

/// A request on one resource, after routing.
#[derive(Debug, Clone)]
pub struct Call {
    /// Logical cluster.
    pub cluster: String,
    /// The resource.
    pub resource: Arc<ResourceType>,
    /// The requested version.
    pub version: String,
    /// The namespace from the path; empty for cluster scope or all namespaces.
    pub namespace: String,
    /// The object name from the path.
    pub name: Option<String>,
    /// `status` or another subresource.
    pub subresource: Option<String>,
    /// Query parameters.
    pub query: HashMap<String, String>,
    /// The field manager derived from the query or the User-Agent.
    pub manager: String,
    /// Whether the client asked for objects without `metadata.managedFields`
    /// ([`fleet_objects::hints::MANAGED_FIELDS_HEADER`]).
    pub without_managed_fields: bool,
    /// Whether the client asked for metadata only ([`crate::partial`]).
    pub metadata_only: bool,
}

impl Call {
    /// A call the hub makes of itself, as the field manager `manager`: on `resource` at
    /// `version`, in `namespace`, with no query.
    pub(crate) fn own(
        cluster: &str,
        (resource, version): (Arc<ResourceType>, String),
        namespace: &str,
        name: Option<&str>,
        manager: &str,
    ) -> Self {
        Self {
            cluster: cluster.to_string(),
            resource,
            version,
            namespace: namespace.to_string(),
            name: name.map(String::from),
            subresource: None,
            query: HashMap::new(),
            manager: manager.to_string(),
            without_managed_fields: false,
            metadata_only: false,
        }
    }

    pub(crate) fn key(&self, name: &str) -> Key {
        Key {
            cluster: self.cluster.clone(),
            resource: self.resource.storage_key(),
            namespace: self.namespace.clone(),
            name: name.to_string(),
        }
    }

    pub(crate) fn param(&self, name: &str) -> Option<&str> {
        self.query.get(name).map(String::as_str)
    }

    /// A boolean query parameter as kube-apiserver reads one: true unless absent, `0` or
    /// `false` (in any case).
    pub(crate) fn flag(&self, name: &str) -> bool {
        flag(self.param(name))
    }

    pub(crate) fn dry_run(&self) -> bool {
        self.param("dryRun") == Some("All")
    }

    pub(crate) fn status_call(&self) -> bool {
        self.subresource.as_deref() == Some("status")
    }

    pub(crate) fn api_version(&self) -> String {
        self.resource.api_version(&self.version)
    }

    pub(crate) fn not_found(&self, name: &str) -> ApiError {
        ApiError::not_found(&self.resource.plural, &self.resource.group, name)
    }

    pub(crate) fn lists(&self) -> Lists {
        if self.resource.custom {
            Lists::Atomic
        } else {
            Lists::BuiltIn
        }
    }

    pub(crate) fn writer(&self) -> Writer<'_> {
        Writer {
            manager: &self.manager,
            api_version: "",
            subresource: if self.status_call() { "status" } else { "" },
            lists: self.lists(),
        }
    }

    /// The object as served at the requested version.
    pub fn present(&self, object: &Value) -> Value {
        let mut object = object.clone();
        object["apiVersion"] = json!(self.api_version());
        object
    }

    /// The text of `object` as this call's client takes it: without managedFields when it
    /// asked so, its metadata alone when it asked for that.
    pub fn wire_text(&self, object: &Stored) -> Bytes {
        if self.metadata_only {
            return self.wire_parts(object).concat().into();
        }
        if self.without_managed_fields {
            object.without_managed_fields()
        } else {
            object.text().clone()
        }
    }

    /// [`Call::wire_text`] as slices to copy one after the other (some may be empty), for
    /// a list or a watch line that copies it anyway.
    pub fn wire_parts<'a>(&self, object: &'a Stored) -> [&'a [u8]; 4] {
        let metadata = (self.metadata_only)
            .then(|| object.metadata_parts(self.without_managed_fields))
            .flatten();
        if let Some([head, tail]) = metadata {
            return [crate::partial::HEAD, head, tail, crate::partial::TAIL];
        }
        let [head, tail] = if self.without_managed_fields {
            object.parts_without_managed_fields()
        } else {
            [&object.text()[..], &[]]
        };
        [head, tail, &[], &[]]
    }

    /// The object as served at the requested version, shared when it is stored at that
    /// version (most reads), so that serving it copies nothing.
    pub fn presented(&self, object: Arc<Stored>) -> ApiResult<Arc<Stored>> {
        if object.api_version() == self.api_version() {
            return Ok(object);
        }
        Ok(Arc::new(Stored::new(&self.present(&object.value()?))))
    }

    /// The label and field selectors of a list or watch.
    pub fn selectors(&self) -> ApiResult<Selectors> {
        Selectors::parse(
            |name| self.param(name),
            &self.resource.kind,
            self.resource.custom,
        )
    }

    /// The namespace the call is limited to; `None` for every namespace (and for
    /// cluster-scoped resources).
    pub fn namespace_scope(&self) -> Option<&str> {
        (!self.namespace.is_empty()).then_some(self.namespace.as_str())
    }

    pub(crate) fn required_name(&self) -> ApiResult<&str> {
        self.name
            .as_deref()
            .ok_or_else(|| ApiError::method_not_allowed("a name is required"))
    }
}

/// How dependents are treated when their owner is deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Propagation {
    /// Dependents are deleted after the owner (Foreground is treated the same way).
    Background,
    /// Dependents lose their owner reference and stay.
    Orphan,
}

/// A boolean query parameter's value as kube-apiserver reads it: absent, `0` and `false`
/// (in any case) are false, anything else (`True`, `1`, even empty) true.
pub(crate) fn flag(value: Option<&str>) -> bool {
    value.is_some_and(|v| v != "0" && !v.eq_ignore_ascii_case("false"))
}
