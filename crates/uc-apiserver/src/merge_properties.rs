//! Properties of the merge code over random Deployments: a strategic merge patch made as kubectl
//! makes one (`CreateTwoWayMergePatch`: nulls, `$patch: delete`, `$setElementOrder`,
//! `$deleteFromPrimitiveList`) from any original to any target turns the original into the target;
//! a server-side apply applied twice gives what applying it once gave.

use serde_json::{Map, Value, json};

use crate::patch::{ListStrategy, list_strategy, strategic_merge_patch};
use crate::ssa::{self, Builtin, Scope, Write};

/// A seeded xorshift generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn chance(&mut self) -> bool {
        self.below(2) == 0
    }

    /// Some of `items`, each at most once, in a random order.
    fn some<'a>(&mut self, items: &[&'a str]) -> Vec<&'a str> {
        let mut left: Vec<&str> = items.to_vec();
        let mut out = Vec::new();
        for _ in 0..self.below(items.len() as u64 + 1) {
            out.push(left.remove(self.below(left.len() as u64) as usize));
        }
        out
    }

    fn map(&mut self, keys: &[&str]) -> Value {
        let keys = self.some(keys);
        Value::Object(keys.into_iter().map(|k| (k.to_string(), json!(format!("v{}", self.below(3))))).collect())
    }
}

fn container(r: &mut Rng, name: &str) -> Value {
    let mut c = json!({"name": name, "image": format!("img:{}", r.below(3))});
    if r.chance() {
        c["args"] = json!(r.some(&["-a", "-b", "-c"]));
    }
    if r.chance() {
        let env: Vec<Value> = r
            .some(&["X", "Y", "Z"])
            .into_iter()
            .map(|n| json!({"name": n, "value": format!("{}", r.below(3))}))
            .collect();
        c["env"] = Value::Array(env);
    }
    if r.chance() {
        let ports: Vec<Value> = r
            .some(&["80", "81", "82"])
            .into_iter()
            .map(|p| {
                let mut port = json!({"containerPort": p.parse::<u16>().unwrap()});
                if r.chance() {
                    port["name"] = json!(format!("p{}", r.below(2)));
                }
                port
            })
            .collect();
        c["ports"] = Value::Array(ports);
    }
    if r.chance() {
        c["resources"] = json!({"limits": r.map(&["cpu", "memory"])});
    }
    c
}

/// A random Deployment, with the list kinds a strategic merge patch treats differently: keyed
/// (containers, env, ports, volumes), a set of primitives (finalizers) and atomic (args).
fn deployment(r: &mut Rng) -> Value {
    let mut d = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {}});
    if r.chance() {
        d["metadata"]["labels"] = r.map(&["app", "tier", "team"]);
    }
    if r.chance() {
        d["metadata"]["finalizers"] = json!(r.some(&["f1", "f2", "f3"]));
    }
    if r.chance() {
        d["spec"]["replicas"] = json!(r.below(4));
    }
    if r.chance() {
        d["spec"]["strategy"] = json!({"type": if r.chance() { "Recreate" } else { "RollingUpdate" }});
    }
    let mut names = r.some(&["a", "b", "c", "d"]);
    if names.is_empty() {
        names.push("a");
    }
    let containers: Vec<Value> = names.into_iter().map(|n| container(r, n)).collect();
    d["spec"]["template"] =
        json!({"metadata": {"labels": r.map(&["app", "tier"])}, "spec": {"containers": containers}});
    if r.chance() {
        let volumes: Vec<Value> =
            r.some(&["v1", "v2"]).into_iter().map(|n| json!({"name": n, "emptyDir": {}})).collect();
        d["spec"]["template"]["spec"]["volumes"] = Value::Array(volumes);
    }
    if r.chance() {
        d["spec"]["template"]["spec"]["nodeSelector"] = r.map(&["zone", "disk"]);
    }
    d
}

/// A two-way strategic merge patch from `original` to `target`, as kubectl makes one.
fn diff_map(original: &Map<String, Value>, target: &Map<String, Value>, path: &mut Vec<String>) -> Map<String, Value> {
    let mut out = Map::new();
    for k in original.keys().filter(|k| !target.contains_key(*k)) {
        out.insert(k.clone(), Value::Null);
    }
    for (k, t) in target {
        let Some(o) = original.get(k).filter(|o| *o != t) else {
            if !original.contains_key(k) {
                out.insert(k.clone(), t.clone());
            }
            continue;
        };
        path.push(k.clone());
        match (o, t, list_strategy(path)) {
            (Value::Object(o), Value::Object(t), _) => {
                let d = diff_map(o, t, path);
                if !d.is_empty() {
                    out.insert(k.clone(), Value::Object(d));
                }
            }
            (Value::Array(o), Value::Array(t), ListStrategy::Key(key)) => {
                let (changes, order) = diff_keyed(o, t, key, path);
                out.insert(k.clone(), Value::Array(changes));
                out.insert(format!("$setElementOrder/{k}"), Value::Array(order));
            }
            (Value::Array(o), Value::Array(t), ListStrategy::Primitives) => {
                let gone: Vec<Value> = o.iter().filter(|v| !t.contains(v)).cloned().collect();
                out.insert(format!("$deleteFromPrimitiveList/{k}"), Value::Array(gone));
                out.insert(k.clone(), Value::Array(t.iter().filter(|v| !o.contains(v)).cloned().collect()));
                out.insert(format!("$setElementOrder/{k}"), Value::Array(t.clone()));
            }
            _ => {
                out.insert(k.clone(), t.clone());
            }
        }
        path.pop();
    }
    out
}

fn diff_keyed(original: &[Value], target: &[Value], key: &str, path: &mut Vec<String>) -> (Vec<Value>, Vec<Value>) {
    let mut changes = Vec::new();
    for t in target {
        match original.iter().find(|o| o.get(key) == t.get(key)) {
            Some(o) if o == t => {}
            Some(o) => {
                let mut d = diff_map(o.as_object().unwrap(), t.as_object().unwrap(), path);
                d.insert(key.to_string(), t[key].clone());
                changes.push(Value::Object(d));
            }
            None => changes.push(t.clone()),
        }
    }
    for o in original.iter().filter(|o| !target.iter().any(|t| t.get(key) == o.get(key))) {
        changes.push(json!({key: o[key].clone(), "$patch": "delete"}));
    }
    let order = target.iter().map(|t| json!({key: t[key].clone()})).collect();
    (changes, order)
}

#[test]
fn a_strategic_merge_patch_of_a_diff_turns_the_original_into_the_target() {
    let mut r = Rng(0x2545_f491_4f6c_dd1d);
    for i in 0..3000 {
        let (original, target) = (deployment(&mut r), deployment(&mut r));
        let patch = diff_map(original.as_object().unwrap(), target.as_object().unwrap(), &mut Vec::new());
        let mut patched = original.clone();
        strategic_merge_patch(&mut patched, &serde_json::to_vec(&patch).unwrap()).unwrap();
        assert_eq!(patched, target, "case {i}: {original}\n+ {}\n!= {target}", Value::Object(patch));
    }
}

#[test]
fn a_server_side_apply_applied_twice_is_applied_once() {
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    let write = |manager| Write {
        manager,
        api_version: "apps/v1",
        subresource: None,
        scope: Scope::AllButStatus,
        now: "2026-01-01T00:00:00Z",
    };
    for i in 0..1500 {
        let (other, mine) = (deployment(&mut r), deployment(&mut r));
        let live = ssa::apply(None, &other, false, &Builtin, &write("other")).unwrap();
        for start in [None, Some(&live)] {
            let once = ssa::apply(start, &mine, true, &Builtin, &write("mine")).unwrap();
            let twice = ssa::apply(Some(&once), &mine, true, &Builtin, &write("mine")).unwrap();
            assert_eq!(once, twice, "case {i}: {mine} applied onto {start:?}");
            // Without force too: applying again what one already applied never conflicts.
            let again = ssa::apply(Some(&once), &mine, false, &Builtin, &write("mine")).unwrap();
            assert_eq!(once, again, "case {i}, unforced");
        }
    }
}
