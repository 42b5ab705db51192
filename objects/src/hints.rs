//! Requests a fleet-rs hub honours beyond what Kubernetes defines, sent as headers that
//! other API servers ignore, so that a client using them works against both.

/// The header by which a client asks for objects without `metadata.managedFields` (value
/// [`OMIT_MANAGED_FIELDS`]): controllers that never read them are spared decoding them in
/// every watch event, list and write response.
pub const MANAGED_FIELDS_HEADER: &str = "fleet-managed-fields";

/// The value of [`MANAGED_FIELDS_HEADER`] that leaves them out.
pub const OMIT_MANAGED_FIELDS: &str = "omit";

/// Whether a client asks for objects with their managedFields or without.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ManagedFields {
    /// With them, as Kubernetes serves objects.
    Included,
    /// Without them ([`MANAGED_FIELDS_HEADER`]).
    Omitted,
}
