//! A whole fleet in one process, as `fleet up`, `fleet bench fleet` and the end-to-end
//! tests run it: a hub with a management cluster and member clusters ([`LocalHub`]), and
//! gitjob, the targeting controller and one agent per member as tasks that stop together
//! ([`Fleet`]). The parts are the same as in production; only the process is shared.
//! Member clusters have no kubelet: [`workloads::simulate`] stands in for one.

mod fleet;
mod hub;
pub mod webhook;
pub mod workloads;

pub use fleet::{Fleet, StopSignal};
pub use hub::{LocalHub, MemberStorage, StartError, MANAGEMENT_CLUSTER};
