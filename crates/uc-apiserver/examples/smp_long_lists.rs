//! Strategic merge patch on long lists, as `kubectl apply` (client-side) sends it: a Deployment whose
//! container has N environment variables (merged by name) and N finalizers (a list of primitives),
//! patched with every value changed and the order kubectl keeps (`$setElementOrder`). Prints the time.
//!
//!     cargo run --release -p uc-apiserver --example smp_long_lists

use std::time::Instant;

use serde_json::{Value, json};
use uc_apiserver::patch::strategic_merge_patch;

fn env(n: usize, value: &str) -> Vec<Value> {
    (0..n).map(|i| json!({"name": format!("VAR_{i}"), "value": format!("{value}{i}")})).collect()
}

fn main() {
    for n in [250, 1_000, 4_000] {
        let finalizers: Vec<Value> = (0..n).map(|i| json!(format!("f{i}"))).collect();
        let mut target = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "finalizers": finalizers},
            "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "x", "env": env(n, "a")}]}}}});
        let order: Vec<Value> = (0..n).map(|i| json!({"name": format!("VAR_{i}")})).collect();
        let more: Vec<Value> = (n..2 * n).map(|i| json!(format!("f{i}"))).collect();
        let patch = json!({"metadata": {"finalizers": more},
            "spec": {"template": {"spec": {"containers": [{"name": "c", "$setElementOrder/env": order, "env": env(n, "b")}]}}}});
        let body = patch.to_string();
        let start = Instant::now();
        strategic_merge_patch(&mut target, body.as_bytes()).expect("patched");
        println!("{n} items: {:.1} ms", start.elapsed().as_secs_f64() * 1e3);
        assert_eq!(
            target["spec"]["template"]["spec"]["containers"][0]["env"][n - 1]["value"],
            json!(format!("b{}", n - 1))
        );
    }
}
