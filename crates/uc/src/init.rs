//! `uc init NAME`: a working operator to start from — a CRD with a schema, the UniversalController, a
//! JavaScript sync hook, an example object, a recorded request with its expected answer (`uc hook test`
//! checks it) and a README saying how to run it on `uc up`.

use std::path::Path;

use anyhow::{Context, bail};
use serde_json::json;
use uc_api::controller::{
    ChildResource, ConfigMapKeyRef, Exec, Hook, Hooks, JavaScript, ParentResource, UniversalController,
    UniversalControllerSpec, UpdateMethod,
};

/// `demo-app` → `DemoApp`.
pub fn kind_of(name: &str) -> String {
    name.split('-')
        .map(|w| {
            let mut c = w.chars();
            c.next().map(|f| f.to_ascii_uppercase().to_string() + c.as_str()).unwrap_or_default()
        })
        .collect()
}

/// Whether a name can name the operator (a DNS label starting with a letter).
pub fn valid(name: &str) -> bool {
    let b = name.as_bytes();
    !b.is_empty()
        && b.len() <= 40
        && b[0].is_ascii_lowercase()
        && b.iter().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && !name.ends_with('-')
}

/// The language of a new operator's hook.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lang {
    /// JavaScript, run in-process (source in a ConfigMap, hot-reloaded).
    Js,
    /// Python 3, an exec hook.
    Python,
    /// Shell and jq, an exec hook.
    Exec,
    /// Rust, an exec hook built with cargo.
    Rust,
}

impl Lang {
    /// From `--hook`.
    pub fn parse(s: &str) -> Option<Lang> {
        match s {
            "js" => Some(Lang::Js),
            "python" => Some(Lang::Python),
            "exec" => Some(Lang::Exec),
            "rust" => Some(Lang::Rust),
            _ => None,
        }
    }

    /// The hook's spec in the controller, and its source files.
    fn hook(self, name: &str, kind: &str) -> (Hook, Vec<(String, String)>) {
        let exec = |command: &[&str]| Hook {
            exec: Some(Exec {
                command: command.iter().map(|c| c.to_string()).collect(),
                timeout: Some("10s".into()),
                ..Default::default()
            }),
            ..Default::default()
        };
        match self {
            Lang::Js => {
                let source = ConfigMapKeyRef {
                    name: format!("{name}-hook"),
                    namespace: "default".into(),
                    key: "sync.js".into(),
                };
                let js = JavaScript { config_map_ref: Some(source), ..Default::default() };
                (
                    Hook { javascript: Some(js), ..Default::default() },
                    vec![("sync.js".into(), SYNC_JS.replace("KIND", kind))],
                )
            }
            Lang::Python => (exec(&["python3", "sync.py"]), vec![("sync.py".into(), SYNC_PY.replace("KIND", kind))]),
            Lang::Exec => (exec(&["sh", "sync.sh"]), vec![("sync.sh".into(), SYNC_SH.replace("KIND", kind))]),
            Lang::Rust => (
                exec(&[&format!("target/release/{name}-hook")]),
                vec![
                    ("Cargo.toml".into(), CARGO_TOML.replace("NAME", name)),
                    ("src/main.rs".into(), MAIN_RS.replace("KIND", kind)),
                ],
            ),
        }
    }

    /// The README's example of an edit of the hook: the ConfigMap gets a key `edited: yes`.
    fn edit_steps(self) -> String {
        let (file, from, to) = match self {
            Lang::Js => ("sync.js", "data: {greeting", r#"data: {edited: "yes", greeting"#),
            Lang::Exec => ("sync.sh", "data: {greeting", r#"data: {edited: "yes", greeting"#),
            Lang::Python => ("sync.py", r#""data": {"greeting""#, r#""data": {"edited": "yes", "greeting""#),
            Lang::Rust => ("src/main.rs", r#""data": {"greeting""#, r#""data": {"edited": "yes", "greeting""#),
        };
        let mut steps = format!("sed -i 's/{from}/{to}/' {file}     # an edit: the ConfigMap gets a key\n");
        if self == Lang::Rust {
            steps.push_str("cargo build --release\n");
        }
        steps.trim_end().to_string()
    }

    /// How the README says to run it (after the CRD is applied).
    fn run_steps(self, name: &str) -> String {
        match self {
            Lang::Js => format!("kubectl create configmap {name}-hook --from-file=sync.js\n"),
            Lang::Python | Lang::Exec => String::new(),
            Lang::Rust => {
                "cargo build --release                          # target/release/NAME-hook\n".replace("NAME", name)
            }
        }
    }
}

/// The files of a new operator: (path, content).
#[expect(clippy::too_many_lines, reason = "data table: the scaffold's files")]
pub fn files(name: &str, lang: Lang) -> Vec<(String, String)> {
    let kind = kind_of(name);
    let (hook, sources) = lang.hook(name, &kind);
    let plural = format!("{}s", name.replace('-', ""));
    let group = "example.com";
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{group}")},
        "spec": {
            "group": group, "scope": "Namespaced",
            "names": {"kind": kind, "plural": plural, "singular": name.replace('-', ""), "listKind": format!("{kind}List")},
            "versions": [{
                "name": "v1alpha1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "additionalPrinterColumns": [
                    {"name": "Greeting", "type": "string", "jsonPath": ".spec.greeting"},
                    {"name": "Ready", "type": "boolean", "jsonPath": ".status.configMapReady"},
                    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
                ],
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "required": ["greeting"], "properties": {
                        "greeting": {"type": "string", "description": "What the ConfigMap says."},
                        "replicas": {"type": "integer", "minimum": 1, "default": 1},
                    }},
                    "status": {"type": "object", "properties": {
                        "greeting": {"type": "string"},
                        "configMapReady": {"type": "boolean"},
                        "observedGeneration": {"type": "integer"},
                    }},
                }}},
            }],
        },
    });
    let controller = uc_api::meta::json_of(&UniversalController::new(
        name,
        UniversalControllerSpec {
            generate_selector: Some(true),
            parent_resource: ParentResource::new(&format!("{group}/v1alpha1"), &plural),
            child_resources: vec![ChildResource::new("v1", "configmaps", UpdateMethod::InPlace)],
            hooks: Hooks { sync: Some(hook), ..Default::default() },
            ..Default::default()
        },
    ));
    let example = json!({
        "apiVersion": format!("{group}/v1alpha1"), "kind": kind,
        "metadata": {"name": "example"},
        "spec": {"greeting": "hello", "replicas": 2},
    });
    let request = json!({
        "controller": controller,
        "parent": {"apiVersion": format!("{group}/v1alpha1"), "kind": kind,
                   "metadata": {"name": "example", "namespace": "default", "uid": "00000000-0000-0000-0000-000000000001", "generation": 1},
                   "spec": {"greeting": "hello", "replicas": 2}},
        "children": {"ConfigMap.v1": {}},
        "related": {},
        "finalizing": false,
    });
    let expected = json!({
        "status": {"greeting": "hello", "configMapReady": false},
        "children": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "example-greeting"},
                      "data": {"greeting": "hello", "replicas": "2"}}],
    });
    let yaml = |v: &serde_json::Value| serde_yaml_ng::to_string(v).unwrap_or_default();
    let pretty = |v: &serde_json::Value| serde_json::to_string_pretty(v).unwrap_or_default() + "\n";
    let readme = match lang {
        Lang::Js => README_JS,
        _ => README_EXEC,
    };
    let readme = readme
        .replace("TESTING", TESTING)
        .replace("RUN_STEPS\n", &lang.run_steps(name))
        .replace(
            "EDIT_NOTE",
            if lang == Lang::Rust {
                "Each call runs the program anew: `cargo build --release` after an edit, and the next sync uses it."
            } else {
                "Each call runs the program anew: an edit of `SOURCE` is used by the next sync."
            },
        )
        .replace("EDIT_STEPS", &lang.edit_steps())
        .replace("SOURCE", &sources.last().map(|(p, _)| p.clone()).unwrap_or_default())
        .replace("NAME", name)
        .replace("KIND", &kind)
        .replace("PLURAL", &plural);
    let mut out = vec![
        ("crd.yaml".into(), yaml(&crd)),
        ("controller.yaml".into(), yaml(&controller)),
        ("example.yaml".into(), yaml(&example)),
        ("tests/example/request.json".into(), pretty(&request)),
        ("tests/example/expected.json".into(), pretty(&expected)),
        ("README.md".into(), readme),
    ];
    out.extend(sources);
    out
}

const SYNC_JS: &str = r#"// The sync hook of KIND: from the parent (and the children that exist), the children it should have
// and its status. uc applies the children, deletes those no longer returned, and writes the status.
function sync(request) {
  var parent = request.parent;
  var name = parent.metadata.name + '-greeting';
  var existing = (request.children['ConfigMap.v1'] || {})[name];
  console.log('syncing', parent.metadata.name, 'greeting', parent.spec.greeting);
  return {
    status: {greeting: parent.spec.greeting, configMapReady: !!existing},
    children: [{
      apiVersion: 'v1', kind: 'ConfigMap',
      metadata: {name: name},
      data: {greeting: parent.spec.greeting, replicas: String(parent.spec.replicas || 1)}
    }]
  };
}
"#;

const SYNC_PY: &str = r#"#!/usr/bin/env python3
"""The sync hook of KIND, run by uc as an exec hook: the request JSON on stdin, the answer on stdout;
what it prints on stderr goes to uc's log; a non-zero exit changes nothing in the cluster."""

import json
import sys


def sync(request):
    parent = request["parent"]
    name = parent["metadata"]["name"] + "-greeting"
    existing = request["children"].get("ConfigMap.v1", {}).get(name)
    print("syncing", parent["metadata"]["name"], "greeting", parent["spec"]["greeting"], file=sys.stderr)
    return {
        "status": {"greeting": parent["spec"]["greeting"], "configMapReady": existing is not None},
        "children": [{
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name},
            "data": {"greeting": parent["spec"]["greeting"], "replicas": str(parent["spec"].get("replicas", 1))},
        }],
    }


if __name__ == "__main__":
    json.dump(sync(json.load(sys.stdin)), sys.stdout)
"#;

const SYNC_SH: &str = r#"#!/bin/sh
# The sync hook of KIND, run by uc as an exec hook: the request JSON on stdin, the answer on stdout
# (jq does the work); stderr goes to uc's log; a non-zero exit changes nothing in the cluster.
set -eu
jq -c '
  .parent as $p
  | ($p.metadata.name + "-greeting") as $name
  | {
      status: {greeting: $p.spec.greeting, configMapReady: ((.children["ConfigMap.v1"] // {})[$name] != null)},
      children: [{
        apiVersion: "v1", kind: "ConfigMap",
        metadata: {name: $name},
        data: {greeting: $p.spec.greeting, replicas: ($p.spec.replicas // 1 | tostring)}
      }]
    }'
"#;

const CARGO_TOML: &str = r#"[package]
name = "NAME-hook"
version = "0.1.0"
edition = "2021"
publish = false

[dependencies]
serde_json = "1"

# A project of its own, even inside another workspace.
[workspace]
"#;

const MAIN_RS: &str = r#"//! The sync hook of KIND, run by uc as an exec hook: the request JSON on stdin, the answer on stdout;
//! stderr goes to uc's log; a non-zero exit changes nothing in the cluster.

use std::io::Read;

use serde_json::{json, Value};

fn sync(request: &Value) -> Value {
    let parent = &request["parent"];
    let name = format!("{}-greeting", parent["metadata"]["name"].as_str().unwrap_or_default());
    let existing = request["children"]["ConfigMap.v1"].get(&name).is_some();
    let greeting = parent["spec"]["greeting"].clone();
    let replicas = parent["spec"]["replicas"].as_i64().unwrap_or(1);
    eprintln!("syncing {} greeting {}", parent["metadata"]["name"], greeting);
    json!({
        "status": {"greeting": greeting, "configMapReady": existing},
        "children": [{
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name},
            "data": {"greeting": greeting, "replicas": replicas.to_string()}
        }]
    })
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut input = String::new();
    std::io::stdin().read_to_string(&mut input)?;
    let request: Value = serde_json::from_str(&input)?;
    println!("{}", sync(&request));
    Ok(())
}
"#;

/// The scaffold README's last section, after the edit: the recorded case shows the change.
const TESTING: &str = r#"Test the hook offline against recorded requests (`tests/<case>/request.json` and the answer
expected, `expected.json`): after the edit the answer differs, and `uc hook test` shows how and exits
1 (a CI gate); `--update` takes the new answers as the expected ones. Record real calls of the running
controller as more cases with `kubectl annotate uc NAME universalcontroller.njuics.cn/record-hooks=10`,
then `uc hook record NAME .`:

```sh
uc hook test . || true                          # FAIL example: the diff shows the key the edit added
uc hook test . --update                         # the new answer is the expected one from now on
uc hook test .                                  # ok   example
```
"#;

const README_EXEC: &str = r#"# NAME: a KIND operator on uc

Made by `uc init NAME`. A `KIND` (crd.yaml) gets a ConfigMap `<name>-greeting` saying its greeting;
the logic is `SOURCE`, run by uc's engine as an exec hook (controller.yaml): the request JSON on its
stdin, the answer on its stdout, stderr to uc's log; a non-zero exit or a timeout changes nothing.
The command's paths are relative to where the engine runs: start `uc up` in this directory.

```sh
RUN_STEPS
uc up --data-dir .uc &                         # the embedded cluster, run here
export KUBECONFIG=$PWD/.uc/kubeconfig
kubectl apply -f crd.yaml
kubectl apply -f controller.yaml -f example.yaml
kubectl wait PLURAL/example --for=jsonpath='{.status.configMapReady}'=true --timeout=60s
kubectl get PLURAL,configmaps,uc                # example, example-greeting, NAME READY True
```

EDIT_NOTE The engine follows the hook's files: a change re-syncs every KIND within seconds.

```sh
EDIT_STEPS
kubectl wait configmap/example-greeting --for=jsonpath='{.data.edited}'=yes --timeout=60s
```

TESTING"#;

const README_JS: &str = r#"# NAME: a KIND operator on uc

Made by `uc init NAME`. A `KIND` (crd.yaml) gets a ConfigMap `<name>-greeting` saying its greeting;
the logic is `sync.js`, run by uc's engine (controller.yaml).

```sh
uc up --data-dir .uc &                         # the embedded cluster (or any cluster with `uc run`)
export KUBECONFIG=$PWD/.uc/kubeconfig
kubectl apply -f crd.yaml
RUN_STEPS
kubectl apply -f controller.yaml -f example.yaml
kubectl wait PLURAL/example --for=jsonpath='{.status.configMapReady}'=true --timeout=60s
kubectl get PLURAL,configmaps,uc                # example, example-greeting, NAME READY True
```

Edit `sync.js` and replace the ConfigMap: the engine reloads the hook and re-syncs every KIND within
seconds (a version that does not load leaves the old one running, and `kubectl get uc NAME` says so).
`console.log` lines are in uc's log.

```sh
EDIT_STEPS
kubectl create configmap NAME-hook --from-file=sync.js -o yaml --dry-run=client | kubectl replace -f -
kubectl wait configmap/example-greeting --for=jsonpath='{.data.edited}'=yes --timeout=60s
```

TESTING"#;

/// Writes the files of operator `name` into `dir` (which must not exist yet).
pub fn write(name: &str, lang: Lang, dir: &Path) -> anyhow::Result<()> {
    if !valid(name) {
        bail!("{name:?} is not a valid name: lowercase letters, digits and '-', starting with a letter (at most 40)");
    }
    if dir.exists() {
        bail!("{} exists already; uc init writes a new directory", dir.display());
    }
    for (path, content) in files(name, lang) {
        let p = dir.join(&path);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
        }
        std::fs::write(&p, content).with_context(|| format!("writing {}", p.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_kinds() {
        assert_eq!(kind_of("demo"), "Demo");
        assert_eq!(kind_of("demo-app"), "DemoApp");
        assert!(valid("demo-2") && !valid("Demo") && !valid("2demo") && !valid("a_b") && !valid("x-") && !valid(""));
    }

    #[test]
    fn every_language_has_its_hook_and_run_steps() {
        for (lang, source, command) in [
            (Lang::Python, "sync.py", "python3"),
            (Lang::Exec, "sync.sh", "sh"),
            (Lang::Rust, "src/main.rs", "target/release/demo-hook"),
        ] {
            let files = files("demo", lang);
            let get = |n: &str| files.iter().find(|(p, _)| p == n).map(|(_, c)| c.clone());
            assert!(get(source).is_some(), "{lang:?}");
            let uc: serde_json::Value = serde_yaml_ng::from_str(&get("controller.yaml").unwrap()).unwrap();
            assert_eq!(uc["spec"]["hooks"]["sync"]["exec"]["command"][0], command);
            let readme = get("README.md").unwrap();
            assert!(
                readme.contains(source) && !readme.contains("RUN_STEPS") && !readme.contains("configmap demo-hook")
            );
        }
        assert!(files("demo", Lang::Rust).iter().any(|(p, c)| p == "Cargo.toml" && c.contains("name = \"demo-hook\"")));
        assert_eq!(Lang::parse("python"), Some(Lang::Python));
        assert_eq!(Lang::parse("cobol"), None);
    }

    #[test]
    fn the_scaffold_parses() {
        let files = files("demo", Lang::Js);
        let get = |n: &str| files.iter().find(|(p, _)| p == n).map(|(_, c)| c.clone()).unwrap();
        let crd: serde_json::Value = serde_yaml_ng::from_str(&get("crd.yaml")).unwrap();
        assert_eq!(crd["metadata"]["name"], "demos.example.com");
        let uc: serde_json::Value = serde_yaml_ng::from_str(&get("controller.yaml")).unwrap();
        let spec: uc_api::controller::UniversalControllerSpec = serde_json::from_value(uc["spec"].clone()).unwrap();
        assert_eq!(spec.parent_resource.resource, "demos");
        let _: serde_json::Value = serde_json::from_str(&get("tests/example/request.json")).unwrap();
        assert!(get("README.md").contains("kubectl create configmap demo-hook --from-file=sync.js"));
    }
}
