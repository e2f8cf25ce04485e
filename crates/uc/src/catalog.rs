//! The catalog shipped with uc (`uc-operators`, served by `uc up` as a CatalogSource in `olm`): uc's
//! operators as ordinary OLM bundles. Each bundle is a ClusterServiceVersion (description, icon,
//! capability level, `alm-examples`), the operator's CRDs and its UniversalController objects; its
//! install strategy has no Deployment, since the hooks run in uc's engine; every install mode is supported
//! (the controllers serve the OperatorGroup's namespaces).

use std::collections::BTreeMap;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde::Deserialize;
use serde_json::{Value, json};
use uc_api::controller::UniversalController;
use uc_api::meta::json_of;
use uc_olm::bundle::{bundle_from_objects, entry_of};
use uc_olm::csv::{Csv, Link, Maintainer};
use uc_olm::fbc::{Catalog, Channel, Icon, Package};

/// The catalog's name.
pub const NAME: &str = "uc-operators";

/// Each package's icon: its letters on its colour (a catalog's UI tells packages apart by them).
const ICONS: &[(&str, &str, &str)] = &[
    ("etcd", "etcd", "#2f7fb5"),
    ("zookeeper", "zk", "#9a5d12"),
    ("catset", "cs", "#6b4fbb"),
    ("tfjob", "tf", "#c2410c"),
    ("sample-controller", "sc", "#2e7d32"),
];

/// One operator of the catalog.
struct Operator {
    package: &'static str,
    display: &'static str,
    description: &'static str,
    /// The capability level (seed 001's maturity model) and why.
    capabilities: &'static str,
    categories: &'static str,
    crds: Vec<CustomResourceDefinition>,
    controllers: Vec<UniversalController>,
    examples: Vec<Value>,
}

/// A package's icon, as an SVG 64 units square; uc's own mark for a package the table does not name.
fn icon(package: &str) -> Icon {
    use base64::Engine as _;
    let (letters, colour) =
        ICONS.iter().find(|(p, _, _)| *p == package).map_or(("uc", "#1f5f8b"), |(_, l, c)| (*l, *c));
    let size = if letters.len() > 2 { 22 } else { 28 };
    let svg = format!(
        r##"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 64 64"><rect width="64" height="64" rx="12" fill="{colour}"/><text x="32" y="42" font-family="sans-serif" font-size="{size}" font-weight="600" fill="#fff" text-anchor="middle">{letters}</text></svg>"##
    );
    Icon { base64data: base64::engine::general_purpose::STANDARD.encode(svg), mediatype: "image/svg+xml".into() }
}

/// The CSV of an operator of the catalog: `uc package`'s, with what a catalog's UI shows.
fn csv(op: &Operator, version: &str) -> Csv {
    let mut csv = crate::package::bundle_csv(op.package, version, &op.crds, &op.examples, op.description);
    let annotations = csv.metadata.annotations.get_or_insert_default();
    annotations.insert("capabilities".into(), op.capabilities.into());
    annotations.insert("categories".into(), op.categories.into());
    annotations.insert("containerImage".into(), "uc (the hooks run in uc's engine)".into());
    annotations.insert("repository".into(), "uc".into());
    annotations.insert("support".into(), "uc".into());
    // The operator's hooks run in uc's engine; its controllers serve the OperatorGroup's namespaces
    // (the lifecycle manager annotates them with olm.targetNamespaces): every install mode.
    csv.spec.display_name = Some(op.display.into());
    csv.spec.icon = vec![icon(op.package)];
    csv.spec.keywords = vec![op.package.into(), "uc".into()];
    csv.spec.links = vec![Link { name: "Documentation".into(), url: format!("docs/{}-operator.md", op.package) }];
    csv.spec.maintainers = vec![Maintainer { name: "uc".into(), email: "uc@localhost".into() }];
    csv
}

/// Why an example's YAML built into uc does not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct BuiltinYamlError(pub String);

/// The objects of a YAML text (an example's files, built into uc).
fn docs(text: &str) -> Result<Vec<Value>, BuiltinYamlError> {
    uc_olm::fbc::parse_blobs(text).map_err(|e| BuiltinYamlError(e.to_string()))
}

/// An example operator of the repository (`examples/<dir>`): its CRDs, its controllers with the
/// JavaScript hook inlined, its example objects.
fn example(crd: &str, controller: &str, hook: &str, objects: &str) -> Result<Example, BuiltinYamlError> {
    let mut controllers = Vec::new();
    for mut c in docs(controller)? {
        crate::package::inline_hooks(&mut c, |_| Ok(hook.to_string()))
            .map_err(|e| BuiltinYamlError(format!("{e:#}")))?;
        controllers.push(UniversalController::deserialize(&c).map_err(|e| BuiltinYamlError(e.to_string()))?);
    }
    let crds = uc_api::crds::among(&docs(crd)?).map_err(|e| BuiltinYamlError(e.to_string()))?;
    Ok((crds, controllers, docs(objects)?))
}

/// An example's CRDs, controllers and example objects.
type Example = (Vec<CustomResourceDefinition>, Vec<UniversalController>, Vec<Value>);

#[expect(clippy::too_many_lines, reason = "data table: uc's operators as bundles")]
fn operators() -> Vec<Operator> {
    let mut ops = vec![
        Operator {
            package: "etcd",
            display: "etcd (uc)",
            description: "Creates and maintains highly available etcd clusters: the coreos etcd-operator's API \
                          (EtcdCluster, EtcdBackup, EtcdRestore) on uc's engine.\n\n\
                          Members join as learners and are promoted; scaling and version upgrades go one member at \
                          a time; dead members are replaced; backups go to local storage or S3 and restore \
                          recovers a cluster that lost quorum.\n\n\
                          Capability level: Full Lifecycle (3 of 5) — it installs, upgrades the operand one member \
                          at a time, replaces failed members and backs up and restores; it is not Deep Insights, \
                          since it exports no metrics or alerts of its own about the members.",
            capabilities: "Full Lifecycle",
            categories: "Database",
            crds: uc_operators::etcd::crds(),
            controllers: uc_operators::etcd::controllers(),
            examples: vec![json!({"apiVersion": "etcd.database.coreos.com/v1beta2", "kind": "EtcdCluster",
                                  "metadata": {"name": "example"}, "spec": {"size": 3, "version": "3.4.30"}})],
        },
        Operator {
            package: "zookeeper",
            display: "ZooKeeper (uc)",
            description: "Runs Apache ZooKeeper ensembles: the pravega zookeeper-operator's API (ZookeeperCluster) \
                          on uc's engine.\n\n\
                          Scaling one server at a time by dynamic reconfiguration, members replaced with their \
                          data, rolling upgrades with the leader last, status read from the servers.\n\n\
                          Capability level: Seamless Upgrades (2 of 5) — it installs and upgrades the ensemble \
                          without losing quorum; it is not Full Lifecycle, since it has no backup or restore.",
            capabilities: "Seamless Upgrades",
            categories: "Database",
            crds: uc_operators::zookeeper::crds(),
            controllers: uc_operators::zookeeper::controllers(),
            examples: vec![json!({"apiVersion": "zookeeper.pravega.io/v1beta1", "kind": "ZookeeperCluster",
                                  "metadata": {"name": "example"}, "spec": {"replicas": 3}})],
        },
    ];
    let examples = [
        (
            "catset",
            "CatSet (uc)",
            "The thesis's CatSet: a StatefulSet-like set of pods with stable names and their own volume claims, \
             started in order, written as one UniversalController and a JavaScript hook.\n\n\
             Capability level: Seamless Upgrades (2 of 5) — a change of the pod template rolls out one pod at a \
             time, each waiting for the previous one to be Ready; it is not Full Lifecycle (no backup of the \
             volumes, no failure handling beyond recreating pods).",
            "Seamless Upgrades",
            "Application Runtime",
            example(
                include_str!("../../../examples/catset/crd.yaml"),
                include_str!("../../../examples/catset/controller.yaml"),
                include_str!("../../../examples/catset/sync.js"),
                include_str!("../../../examples/catset/catset.yaml"),
            ),
        ),
        (
            "tfjob",
            "TensorFlowJob (uc)",
            "The thesis's TensorFlowJob: distributed training jobs of parameter servers and workers, each with \
             its Service, restarted by their restart policy, done when the workers are.\n\n\
             Capability level: Basic Install (1 of 5) — it runs a job to completion; a job is not upgraded in \
             place, and nothing is backed up.",
            "Basic Install",
            "AI/Machine Learning",
            example(
                include_str!("../../../examples/tfjob/crd.yaml"),
                include_str!("../../../examples/tfjob/controller.yaml"),
                include_str!("../../../examples/tfjob/sync.js"),
                include_str!("../../../examples/tfjob/tfjob.yaml"),
            ),
        ),
        (
            "sample-controller",
            "sample-controller (uc)",
            "Kubernetes' sample-controller as the thesis writes it for the universal controller: a Foo keeps \
             one Deployment with its replicas and mirrors the Deployment's available replicas.\n\n\
             Capability level: Basic Install (1 of 5) — it creates and scales the Deployment; nothing more.",
            "Basic Install",
            "Developer Tools",
            example(
                include_str!("../../../examples/sample-controller/crd.yaml"),
                include_str!("../../../examples/sample-controller/controller.yaml"),
                include_str!("../../../examples/sample-controller/sync.js"),
                include_str!("../../../examples/sample-controller/foo.yaml"),
            ),
        ),
    ];
    for (package, display, description, capabilities, categories, parts) in examples {
        match parts {
            Ok((crds, controllers, examples)) => ops.push(Operator {
                package,
                display,
                description,
                capabilities,
                categories,
                crds,
                controllers,
                examples,
            }),
            Err(e) => tracing::error!(package, error = %e, "a built-in operator is malformed; left out"),
        }
    }
    ops
}

/// The packages of the catalog, in `operators()`'s order: named without building their CRDs and
/// controllers (170 M instructions, tens of milliseconds, at every `uc up` to check `--operators`).
const PACKAGES: &[&str] = &["etcd", "zookeeper", "catset", "tfjob", "sample-controller"];

/// The packages of the catalog.
pub fn packages() -> Vec<&'static str> {
    PACKAGES.to_vec()
}

/// An operator's CRDs and controllers, to install without OLM.
pub fn objects(package: &str) -> anyhow::Result<(Vec<CustomResourceDefinition>, Vec<UniversalController>)> {
    let op = operators()
        .into_iter()
        .find(|o| o.package == package)
        .ok_or_else(|| anyhow::anyhow!("uc has no operator {package:?}"))?;
    Ok((op.crds, op.controllers))
}

/// The catalogs built into uc, by name.
pub fn builtin() -> BTreeMap<String, std::sync::Arc<uc_olm::sources::Builtin>> {
    BTreeMap::from([(NAME.to_string(), std::sync::Arc::new(uc_olm::sources::Builtin::new(ucs_operators)))])
}

/// The catalog of uc's operators: a package of one bundle each.
fn ucs_operators() -> Catalog {
    let version = env!("CARGO_PKG_VERSION");
    let mut catalog = Catalog::default();
    for op in operators() {
        let mut objects = vec![json_of(&csv(&op, version))];
        objects.extend(op.crds.iter().map(json_of));
        objects.extend(op.controllers.iter().map(json_of));
        let bundle = match bundle_from_objects(op.package, objects) {
            Ok(b) => b,
            Err(e) => {
                tracing::error!(package = op.package, error = %e, "a built-in bundle is malformed; left out");
                continue;
            }
        };
        // The one bundle of each operator upgrades any earlier uc's: a uc upgraded moves its
        // Subscriptions on.
        let entry = uc_olm::fbc::Entry { skip_range: Some(format!("<{version}")), ..entry_of(&bundle) };
        let channel = Channel { name: "alpha".into(), entries: vec![entry] };
        let package = Package {
            name: op.package.into(),
            default_channel: "alpha".into(),
            description: op.description.into(),
            icon: Some(icon(op.package)),
            channels: BTreeMap::from([("alpha".into(), channel)]),
            bundles: BTreeMap::from([(bundle.name.clone(), bundle)]),
        };
        catalog.packages.insert(op.package.into(), package);
    }
    catalog
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_package_has_an_icon_of_its_own() {
        let icons: std::collections::HashSet<String> = PACKAGES.iter().map(|p| icon(p).base64data).collect();
        assert_eq!(icons.len(), PACKAGES.len());
        assert!(PACKAGES.iter().all(|p| ICONS.iter().any(|(named, _, _)| named == p)), "every package in the table");
    }

    #[test]
    fn the_package_names_are_the_operators_built() {
        let built: Vec<&str> = operators().iter().map(|o| o.package).collect();
        assert_eq!(packages(), built);
    }

    #[test]
    fn ucs_operators_are_bundles_that_install_their_controllers() {
        let catalog = builtin()[NAME].get();
        let etcd = &catalog.packages["etcd"];
        let bundle = etcd.bundles.values().next().unwrap();
        assert_eq!(bundle.name, format!("etcd.v{}", env!("CARGO_PKG_VERSION")));
        assert!(bundle.provides.iter().any(|g| g.kind == "EtcdCluster"));
        let kinds: Vec<&str> = bundle.objects.iter().filter_map(|o| o.get("kind").and_then(Value::as_str)).collect();
        assert!(kinds.contains(&"UniversalController") && kinds.contains(&"CustomResourceDefinition"), "{kinds:?}");
        let csv = bundle.objects.iter().find(|o| o["kind"] == "ClusterServiceVersion").unwrap();
        let examples: Value =
            serde_json::from_str(csv["metadata"]["annotations"]["alm-examples"].as_str().unwrap()).unwrap();
        assert_eq!(examples[0]["kind"], "EtcdCluster");
        // An earlier uc's bundle is upgraded from.
        let older = uc_olm::versions::Version::new(0, 0, 1);
        let next = uc_olm::graph::next(etcd, &etcd.channels["alpha"], "etcd.v0.0.1", Some(&older));
        assert_eq!(next.map(|e| e.name.as_str()), Some(bundle.name.as_str()));
        // Every operator of the repository's examples is in it, with its hook inlined.
        for package in ["catset", "tfjob", "sample-controller"] {
            let b = catalog.packages[package].bundles.values().next().unwrap();
            let controller = b.objects.iter().find(|o| o["kind"] == "UniversalController").unwrap();
            assert!(controller["spec"]["hooks"]["sync"]["javascript"]["source"].is_string(), "{package}");
        }
        // Round trip through FBC: what `uc catalog` would write reads back the same.
        let blobs: Vec<_> = catalog.packages.values().flat_map(uc_olm::bundle::package_blobs).collect();
        assert_eq!(Catalog::of(blobs.iter()).unwrap(), *catalog);
        let steps = uc_olm::plan::steps(bundle, "operators").unwrap();
        assert!(
            steps
                .iter()
                .any(|s| s.manifest["kind"] == "UniversalController"
                    && s.manifest["metadata"].get("namespace").is_none()),
            "controllers are cluster-scoped"
        );
    }
}
