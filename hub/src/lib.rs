//! The hub: an embedded Kubernetes-compatible API server. It hosts many logical clusters
//! in one process (`/clusters/<name>/...`), keeps every object in SQLite, and speaks enough
//! of the Kubernetes API for the real kubectl and kube-rs clients to work unchanged.

mod auth;
mod body;
pub mod builtin_schemas;
mod call;
mod columns;
pub use fleet_objects::service::connections;
mod controllers;
mod defaults;
mod discovery;
mod event;
mod fields;
pub mod http;
mod hub;
mod immutable;
mod json;
mod jsonpath;
pub mod kinds;
mod managed;
mod meta;
pub mod metrics;
mod openapi;
mod pair;
mod partial;
mod protobuf;
mod recent;
mod registry;
pub mod requests;
mod reviews;
pub mod route;
mod selector;
pub mod serve;
mod status;
mod storage_layout;
pub mod store;
mod stored;
mod subjects;
mod subresources;
mod table;
pub mod tls;
mod token_request;
mod topics;
pub mod verbs;
mod watch;

pub use hub::Hub;
pub use serve::{start, Options, Running};
