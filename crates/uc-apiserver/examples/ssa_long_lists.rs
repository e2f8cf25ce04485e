//! Server-side apply on long lists: a Pod whose container has N environment variables (a keyed list)
//! and N finalizers (a set-list), applied by one manager, re-applied with every value changed by
//! another (forced), then updated by a third. Prints the time of each walk.
//!
//!     cargo run --release -p uc-apiserver --example ssa_long_lists

use std::time::Instant;

use serde_json::{Value, json};
use uc_apiserver::ssa::{self, Builtin, Scope, Write};

fn pod(n: usize, value: &str) -> Value {
    let env: Vec<Value> = (0..n).map(|i| json!({"name": format!("VAR_{i}"), "value": format!("{value}{i}")})).collect();
    let finalizers: Vec<Value> = (0..n).map(|i| json!(format!("f{i}"))).collect();
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "finalizers": finalizers},
           "spec": {"containers": [{"name": "c", "image": "x", "env": env}]}})
}

fn write(manager: &str) -> Write<'_> {
    Write { manager, api_version: "v1", subresource: None, scope: Scope::Object, now: "2026-01-01T00:00:00Z" }
}

fn main() {
    for n in [250, 1_000, 4_000] {
        let created = ssa::apply(None, &pod(n, "a"), false, &Builtin, &write("alice")).expect("created");
        let start = Instant::now();
        let applied = ssa::apply(Some(&created), &pod(n, "b"), true, &Builtin, &write("bob")).expect("applied");
        let apply = start.elapsed();
        let mut edited = applied.clone();
        edited["spec"]["containers"][0]["env"][0]["value"] = json!("edited");
        if let Some(meta) = edited["metadata"].as_object_mut() {
            meta.remove("managedFields");
        }
        let start = Instant::now();
        ssa::update(Some(&applied), &mut edited, &Builtin, &write("carol")).expect("updated");
        let update = start.elapsed();
        println!("{n} items: apply {:.1} ms, update {:.1} ms", apply.as_secs_f64() * 1e3, update.as_secs_f64() * 1e3);
    }
}
