//! uc API types and wire formats shared by every layer: the UniversalController resource and hook
//! protocol, uc's own CRDs, Kubernetes `Status` errors, label and field selectors, resource
//! identities. Pure data and pure functions: no I/O.

pub mod bearer;
pub mod conditions;
pub mod controller;
pub mod crds;
pub mod cron;
pub mod dns;
pub mod events;
pub mod hook;
pub mod image;
pub mod json_visit;
pub mod lenient;
pub mod meta;
pub mod metacontroller;
pub mod names;
pub mod packed;
pub mod panics;
pub mod pointer;
pub mod quantity;
pub mod resource;
pub mod sandbox;
pub mod selector;
pub mod status;
pub mod webhook_auth;
pub mod webhook_tls;

pub use pointer::Pointer;
pub use resource::{GroupResource, GroupVersionKind};
pub use selector::{FieldSelector, LabelSelector, SelectorError};
pub use status::{Status, StatusCause, StatusDetails};
