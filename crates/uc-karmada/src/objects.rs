//! Reading and writing objects of any kind as JSON, for the control plane and its members alike: the
//! engine's (`uc_engine::dynamic`), applying as Karmada's controller manager.

use serde_json::Value;
pub use uc_api::meta::json_of;
pub use uc_engine::dynamic::{api_error, delete, get, holds, list, merge, write_status};

use crate::binding::MANAGER;
use crate::kinds::Kinds;

/// Server-side applies `obj` (field manager `karmada-controller-manager`, forced).
pub async fn apply(client: &kube::Client, kinds: &Kinds, obj: &Value) -> uc_engine::dynamic::Result<Value> {
    uc_engine::dynamic::apply(client, kinds, obj, MANAGER).await
}
