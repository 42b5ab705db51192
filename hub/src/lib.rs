//! The hub: an embedded Kubernetes-compatible API server. It hosts many logical clusters
//! in one process (`/clusters/<name>/...`), keeps every object in SQLite, and speaks enough
//! of the Kubernetes API for the real kubectl and kube-rs clients to work unchanged.

pub mod auth;
pub mod body;
pub mod builtin_schemas;
pub mod call;
pub mod columns;
pub mod connections;
pub mod controllers;
pub mod defaults;
pub mod discovery;
pub mod event;
pub mod fields;
pub mod http;
pub mod hub;
pub mod immutable;
pub mod json;
pub mod jsonpath;
pub mod kinds;
pub mod managed;
pub mod meta;
pub mod metrics;
pub mod objects;
pub mod openapi;
pub mod pair;
pub mod partial;
pub mod protobuf;
pub mod recent;
pub mod registry;
pub mod requests;
pub mod reviews;
pub mod route;
pub mod selector;
pub mod serve;
pub mod status;
pub mod storage_layout;
pub mod store;
pub mod stored;
pub mod subjects;
pub mod subresources;
pub mod table;
pub mod tls;
pub mod token_request;
pub mod topics;
pub mod watch;

pub use hub::Hub;
pub use serve::{start, Options, Running};
