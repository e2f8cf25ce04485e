//! Which resource serves a kind (`apiVersion` + `kind` → its plural and scope), per cluster, cached:
//! the engine's (`uc_engine::dynamic`).

pub use uc_engine::dynamic::{Kind, Kinds};
