//! `uc init NAME`: a working operator to start from — a CRD with a schema, the UniversalController, a
//! JavaScript sync hook, an example object, a recorded request with its expected answer (`uc hook test`
//! checks it) and a README saying how to run it on `uc up`.

use std::path::Path;

use anyhow::{Context, bail};
use serde_json::json;

/// `demo-app` → `DemoApp`.
fn kind_of(name: &str) -> String {
    name.split('-')
        .map(|w| {
            let mut c = w.chars();
            c.next().map(|f| f.to_ascii_uppercase().to_string() + c.as_str()).unwrap_or_default()
        })
        .collect()
}

/// Whether a name can name the operator (a DNS label starting with a letter).
fn valid(name: &str) -> bool {
    let b = name.as_bytes();
    !b.is_empty()
        && b.len() <= 40
        && b[0].is_ascii_lowercase()
        && b.iter().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && !name.ends_with('-')
}

/// The files of a new operator: (path, content).
pub fn files(name: &str) -> Vec<(String, String)> {
    let kind = kind_of(name);
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
    let controller = json!({
        "apiVersion": "universalcontroller.njuics.cn/v1alpha1", "kind": "UniversalController",
        "metadata": {"name": name},
        "spec": {
            "generateSelector": true,
            "parentResource": {"apiVersion": format!("{group}/v1alpha1"), "resource": plural},
            "childResources": [{"apiVersion": "v1", "resource": "configmaps", "updateStrategy": {"method": "InPlace"}}],
            "hooks": {"sync": {"javascript": {"configMapRef": {"name": format!("{name}-hook"), "namespace": "default", "key": "sync.js"}}}},
        },
    });
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
    let yaml = |v: &serde_json::Value| serde_yaml::to_string(v).unwrap_or_default();
    let pretty = |v: &serde_json::Value| serde_json::to_string_pretty(v).unwrap_or_default() + "\n";
    vec![
        ("crd.yaml".into(), yaml(&crd)),
        ("controller.yaml".into(), yaml(&controller)),
        ("sync.js".into(), SYNC_JS.replace("KIND", &kind)),
        ("example.yaml".into(), yaml(&example)),
        ("tests/example/request.json".into(), pretty(&request)),
        ("tests/example/expected.json".into(), pretty(&expected)),
        ("README.md".into(), README.replace("NAME", name).replace("KIND", &kind).replace("PLURAL", &plural)),
    ]
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

const README: &str = r#"# NAME: a KIND operator on uc

Made by `uc init NAME`. A `KIND` (crd.yaml) gets a ConfigMap `<name>-greeting` saying its greeting;
the logic is `sync.js`, run by uc's engine (controller.yaml).

```sh
uc up --data-dir .uc &                         # the embedded cluster (or any cluster with `uc run`)
export KUBECONFIG=$PWD/.uc/kubeconfig
kubectl apply -f crd.yaml
kubectl create configmap NAME-hook --from-file=sync.js
kubectl apply -f controller.yaml -f example.yaml
kubectl get PLURAL,configmaps,uc                # example, example-greeting, NAME READY True
```

Edit `sync.js`, then `kubectl create configmap NAME-hook --from-file=sync.js -o yaml --dry-run=client |
kubectl replace -f -`: the next sync runs the new version (a version that does not load leaves the old
one running, and `kubectl get uc NAME` says so). `console.log` lines are in uc's log.

Test the hook offline against recorded requests (`tests/<case>/request.json` and the answer expected,
`expected.json`); `--update` rewrites the expected answers:

```sh
uc hook test .
```
"#;

/// Writes the files of operator `name` into `dir` (which must not exist yet).
pub fn write(name: &str, dir: &Path) -> anyhow::Result<()> {
    if !valid(name) {
        bail!("{name:?} is not a valid name: lowercase letters, digits and '-', starting with a letter (at most 40)");
    }
    if dir.exists() {
        bail!("{} exists already; uc init writes a new directory", dir.display());
    }
    for (path, content) in files(name) {
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
    fn the_scaffold_parses() {
        let files = files("demo");
        let get = |n: &str| files.iter().find(|(p, _)| p == n).map(|(_, c)| c.clone()).unwrap();
        let crd: serde_json::Value = serde_yaml::from_str(&get("crd.yaml")).unwrap();
        assert_eq!(crd["metadata"]["name"], "demos.example.com");
        let uc: serde_json::Value = serde_yaml::from_str(&get("controller.yaml")).unwrap();
        let spec: uc_api::controller::UniversalControllerSpec = serde_json::from_value(uc["spec"].clone()).unwrap();
        assert_eq!(spec.parent_resource.resource, "demos");
        let _: serde_json::Value = serde_json::from_str(&get("tests/example/request.json")).unwrap();
        assert!(get("README.md").contains("kubectl create configmap demo-hook --from-file=sync.js"));
    }
}
