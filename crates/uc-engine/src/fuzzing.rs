//! What the `hook_answers` fuzz target in `fuzz/` runs on each input, here so that the stable test
//! suite replays its kept corpus (`tests/fuzz_corpus.rs`). Any bytes must end without a panic.

use std::sync::Arc;

use serde_json::{Map, Value, json};
use uc_api::controller::{HookVersion, UpdateMethod};

use crate::controller::validate::validate_children;
use crate::flavor::Flavor;
use crate::hooks::dialect::Dialect;
use crate::resources::Resolved;

/// A hook's answer as an exec or webhook hook prints it: decoded in every flavor's dialect (strict
/// and loose), its children checked as the engine checks them, then planned against a live child.
pub fn hook_answer(data: &[u8]) {
    let Ok(answer) = serde_json::from_slice::<Value>(data) else { return };
    let parent = json!({"apiVersion": "example.com/v1", "kind": "Foo",
        "metadata": {"name": "p", "namespace": "ns", "uid": "u1"}, "spec": {}});
    let live: Vec<Arc<Value>> = vec![Arc::new(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "ns", "uid": "u2", "resourceVersion": "1"}, "data": {"a": "b"}}))];
    let types =
        [Resolved::new("v1", "ConfigMap", "configmaps", true), Resolved::new("v1", "Namespace", "namespaces", false)];
    let labels: Map<String, Value> = [("app".to_string(), json!("p"))].into_iter().collect();
    for flavor in Flavor::ALL {
        for version in [HookVersion::V1, HookVersion::V2] {
            for strict in [false, true] {
                let dialect = Dialect { flavor, version, strict };
                let _ = dialect.decode_customize(answer.clone());
                let Ok(decoded) = dialect.decode(answer.clone()) else { continue };
                let Ok(by_type) = validate_children(types.iter(), true, &parent, decoded.response.children) else {
                    continue;
                };
                for (method, desired) in [UpdateMethod::InPlace, UpdateMethod::Recreate].into_iter().zip(by_type) {
                    let _ = crate::plan::plan(method, &parent, &labels, &live, desired);
                }
            }
        }
    }
}
