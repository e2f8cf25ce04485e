//! Reading and writing objects of any kind as JSON, for the control plane and its members alike: the
//! engine's (`uc_engine::dynamic`), applying as Karmada's controller manager; and the control plane's
//! own kinds read as their types.

use serde::de::DeserializeOwned;
use serde_json::Value;
pub use uc_api::meta::json_of;
pub use uc_engine::dynamic::{api_error, delete, get, holds, list, merge, write_status};

use crate::binding::MANAGER;
use crate::error::PlaneError;
use crate::kinds::Kinds;

/// Server-side applies `obj` (field manager `karmada-controller-manager`, forced).
pub async fn apply(client: &kube::Client, kinds: &Kinds, obj: &Value) -> uc_engine::dynamic::Result<Value> {
    uc_engine::dynamic::apply(client, kinds, obj, MANAGER).await
}

/// Every `kind` object in `namespace` (every namespace when empty) as `T`. One that does not read as
/// `T` fails the list: what is deleted is decided from all of them or not at all.
pub async fn list_as<T: DeserializeOwned>(
    client: &kube::Client,
    kinds: &Kinds,
    (api_version, kind): (&str, &str),
    namespace: &str,
) -> Result<Vec<T>, PlaneError> {
    let listed = list(client, kinds, api_version, kind, namespace).await?;
    let read = |object| {
        let name = uc_api::meta::str_at(&object, "/metadata/name").to_string();
        serde_json::from_value(object).map_err(|source| PlaneError::Unreadable { kind: kind.into(), name, source })
    };
    listed.into_iter().map(read).collect()
}
