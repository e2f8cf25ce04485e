//! A server-side apply of any object onto a live Deployment with managed fields: an answer or an error.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::json;
use uc_apiserver::ssa::{self, Builtin, Scope, Write};

fuzz_target!(|data: &[u8]| {
    let Ok(applied) = serde_json::from_slice::<serde_json::Value>(data) else { return };
    if uc_apiserver::limits::check(&applied).is_err() {
        return;
    }
    let live = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "managedFields": [
        {"manager": "kubectl", "operation": "Apply", "apiVersion": "apps/v1", "time": "2026-01-01T00:00:00Z",
         "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:replicas": {}}}}]},
        "spec": {"replicas": 1, "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}});
    let w = Write { manager: "fuzz", api_version: "apps/v1", subresource: None, scope: Scope::AllButStatus, now: "2026-01-01T00:00:00Z" };
    for force in [false, true] {
        let _ = ssa::apply(Some(&live), &applied, force, &Builtin, &w);
        let _ = ssa::apply(None, &applied, force, &Builtin, &w);
    }
});
