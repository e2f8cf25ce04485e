//! The Operator SDK's Ansible operators, as `ansible-operator` (operator-framework/ansible-operator-plugins)
//! runs them, with every decision a pure function: the `watches.yaml` entries ([`watches`]), the extra
//! variables a run gets ([`params`]), what a run's job events say ([`events`]), the status conditions
//! written from them ([`status`]), and the owner a created object gets ([`owner`]). Running
//! `ansible-runner` and the API proxy are in the `uc` binary.

pub mod events;
pub mod metrics;
pub mod owner;
pub mod params;
pub mod request;
pub mod status;
pub mod watches;

pub use watches::Watch;
