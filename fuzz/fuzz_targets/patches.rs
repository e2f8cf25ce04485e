//! JSON patch, JSON merge patch and strategic merge patch bodies applied to a Deployment: an answer or
//! an error, never a panic, and what they make is measured without recursion.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::json;

fuzz_target!(|data: &[u8]| {
    let target = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "labels": {"a": "b"}},
        "spec": {"replicas": 1, "template": {"spec": {"containers": [{"name": "c", "image": "i", "ports": [{"containerPort": 80}]}]}}}});
    for apply in [uc_apiserver::patch::json_patch, uc_apiserver::patch::merge_patch, uc_apiserver::patch::strategic_merge_patch] {
        let mut t = target.clone();
        if apply(&mut t, data).is_ok() {
            let _ = uc_apiserver::limits::check(&t);
        }
        uc_apiserver::limits::drop_deep(t);
    }
});
