//! `uc package DIR` builds an OLM bundle from an operator directory (what `uc init` scaffolds:
//! `controller.yaml`, `crd.yaml`, the hook, `example.yaml`, `README.md`): `manifests/` with a
//! ClusterServiceVersion, the CRDs and the controller (a JavaScript hook's source inlined, since a bundle
//! installs into whatever namespace it is subscribed in), and `metadata/annotations.yaml`.
//! `uc catalog add BUNDLE CATALOG` adds a bundle to a file-based catalog directory, on a channel, after
//! the channel's head.

use std::path::{Path, PathBuf};

use std::collections::BTreeMap;

use anyhow::{Context, bail};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::Value;
use uc_olm::bundle::{
    CHANNELS_ANNOTATION, DEFAULT_CHANNEL_ANNOTATION, PACKAGE_ANNOTATION, bundle_blob, read_bundle_dir,
};
use uc_olm::csv::{CrdDescription, CrdDescriptions, Csv, CsvSpec, Install, InstallSpec, Link, Permission};
use uc_olm::fbc::{Blob, Catalog, ChannelBlob, FileBlob, PackageBlob, parse_blobs};

fn read_docs(path: &Path) -> anyhow::Result<Vec<Value>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    parse_blobs(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}

/// Puts the source of a controller's JavaScript hooks (a ConfigMap's or Secret's key, read from
/// `read`) in the hook itself, since a bundle installs into whatever namespace it is subscribed in; an
/// exec hook, a program on the engine's machine, cannot be bundled.
pub fn inline_hooks(c: &mut Value, read: impl Fn(&str) -> anyhow::Result<String>) -> anyhow::Result<()> {
    let Some(hooks) = c.pointer_mut("/spec/hooks").and_then(Value::as_object_mut) else { return Ok(()) };
    for (which, hook) in hooks.iter_mut() {
        if hook.get("exec").is_some() {
            bail!(
                "controller.yaml: hooks.{which} is an exec hook, a program on the machine that runs the engine; a bundle carries webhook, JavaScript or native hooks"
            );
        }
        let Some(js) = hook.get_mut("javascript").and_then(Value::as_object_mut) else { continue };
        let reference = js.get("configMapRef").or_else(|| js.get("secretRef"));
        if let Some(key) = reference.and_then(|r| r.get("key")).and_then(Value::as_str) {
            let source = read(key).with_context(|| format!("hooks.{which}"))?;
            js.remove("configMapRef");
            js.remove("secretRef");
            js.insert("source".into(), Value::String(source));
        }
    }
    Ok(())
}

/// The controller objects of `DIR/controller.yaml`, their JavaScript inlined from `DIR`.
fn controllers(dir: &Path) -> anyhow::Result<Vec<Value>> {
    let mut out = Vec::new();
    for mut c in read_docs(&dir.join("controller.yaml"))? {
        let kind = c.get("kind").and_then(Value::as_str).unwrap_or_default().to_string();
        if !matches!(kind.as_str(), "UniversalController" | "CompositeController" | "DecoratorController") {
            continue;
        }
        inline_hooks(&mut c, |key| {
            let file = dir.join(key);
            std::fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))
        })?;
        out.push(c);
    }
    if out.is_empty() {
        bail!("{}: no UniversalController (or Metacontroller controller) in it", dir.join("controller.yaml").display());
    }
    Ok(out)
}

/// The parts of the bundle of a `uc init` directory: `controller.yaml`, `crd.yaml`, `example.yaml`.
fn uc_parts(dir: &Path) -> anyhow::Result<crate::package_sdk::Parts> {
    let controllers = controllers(dir)?;
    let name = uc_api::meta::meta_str(&controllers[0], "name").to_string();
    let crds = crate::package_sdk::crds_of(&read_docs(&dir.join("crd.yaml"))?, &dir.join("crd.yaml"))?;
    let examples = if dir.join("example.yaml").is_file() { read_docs(&dir.join("example.yaml"))? } else { Vec::new() };
    Ok(crate::package_sdk::Parts { name, controllers, crds, examples, rules: Vec::new() })
}

/// The first paragraph of the README after its title, as the CSV's one-line description.
fn summary(dir: &Path) -> String {
    let text = std::fs::read_to_string(dir.join("README.md")).unwrap_or_default();
    text.split("\n\n")
        .map(str::trim)
        .find(|p| !p.is_empty() && !p.starts_with('#') && !p.starts_with("```"))
        .unwrap_or_default()
        .replace('\n', " ")
}

/// The CSV of a bundle uc builds, `<name>.v<version>`: every install mode, no Deployment (the hooks run
/// in uc's engine), the CRDs it owns, its examples (`alm-examples`) and one-line description.
pub fn bundle_csv(
    name: &str,
    version: &str,
    crds: &[CustomResourceDefinition],
    examples: &[Value],
    description: &str,
) -> Csv {
    let annotations = BTreeMap::from([
        ("alm-examples".to_string(), serde_json::to_string(examples).unwrap_or_default()),
        ("capabilities".to_string(), "Basic Install".to_string()),
        ("description".to_string(), description.lines().next().unwrap_or_default().to_string()),
    ]);
    let metadata =
        ObjectMeta { name: Some(format!("{name}.v{version}")), annotations: Some(annotations), ..Default::default() };
    let spec = CsvSpec {
        display_name: Some(name.to_string()),
        description: Some(description.to_string()),
        version: Some(version.to_string()),
        maturity: Some("alpha".into()),
        provider: Some(Link { name: "uc".into(), url: String::new() }),
        install_modes: uc_olm::csv::every_install_mode(),
        install: Some(Install { strategy: "deployment".into(), spec: Some(InstallSpec::default()) }),
        customresourcedefinitions: Some(CrdDescriptions {
            owned: crds.iter().map(CrdDescription::owned).collect(),
            required: Vec::new(),
        }),
        ..Default::default()
    };
    Csv::new(metadata, spec)
}

fn write_yaml<T: serde::Serialize>(path: &Path, docs: &[T]) -> anyhow::Result<()> {
    let mut text = String::new();
    for d in docs {
        text.push_str("---\n");
        text.push_str(&serde_yaml_ng::to_string(d).context("rendering YAML")?);
    }
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

/// Builds the bundle of the operator in `dir` into `out` (default `dir/bundle`); the bundle's directory.
pub fn package(dir: &Path, version: &str, replaces: Option<&str>, out: Option<PathBuf>) -> anyhow::Result<PathBuf> {
    uc_olm::versions::parse_version(version).map_err(|e| anyhow::anyhow!("--version: {e}"))?;
    let crate::package_sdk::Parts { name, controllers, crds, examples, rules } = match crate::package_sdk::parts(dir) {
        Some(sdk) => sdk?,
        None => uc_parts(dir)?,
    };
    let out = out.unwrap_or_else(|| dir.join("bundle"));
    std::fs::create_dir_all(out.join("manifests")).with_context(|| format!("creating {}", out.display()))?;
    std::fs::create_dir_all(out.join("metadata")).with_context(|| format!("creating {}", out.display()))?;
    let mut csv = bundle_csv(&name, version, &crds, &examples, &summary(dir));
    csv.spec.replaces = replaces.map(str::to_string);
    // What the controllers' account needs: OLM grants it to the account, and the controllers act as it.
    let specs: Vec<_> =
        crate::rbac::controllers(&controllers).map_err(anyhow::Error::msg)?.into_iter().map(|(_, s)| s).collect();
    if !specs.is_empty()
        && let Some(install) = csv.spec.install.as_mut().and_then(|i| i.spec.as_mut())
    {
        let mut all = crate::rbac::account_rules(&specs);
        all.extend(rules);
        install.cluster_permissions =
            vec![Permission { service_account_name: format!("{name}-controller"), rules: all }];
    }
    write_yaml(&out.join("manifests").join(format!("{name}.clusterserviceversion.yaml")), &[csv])?;
    write_yaml(&out.join("manifests").join("crds.yaml"), &crds)?;
    write_yaml(&out.join("manifests").join("controllers.yaml"), &controllers)?;
    let annotations = BTreeMap::from([(
        "annotations",
        BTreeMap::from([
            (PACKAGE_ANNOTATION, name.as_str()),
            (CHANNELS_ANNOTATION, "alpha"),
            (DEFAULT_CHANNEL_ANNOTATION, "alpha"),
        ]),
    )]);
    write_yaml(&out.join("metadata").join("annotations.yaml"), &[annotations])?;
    // Read back as OLM would: a bundle that does not read is not written silently.
    read_bundle_dir(&out).map_err(|e| anyhow::anyhow!("the bundle written does not read back: {e}"))?;
    Ok(out)
}

/// Adds the bundle in `bundle_dir` to the FBC catalog in `catalog_dir` (`<package>/catalog.json`), on
/// `channel`, replacing the channel's head unless its CSV says what it replaces.
pub fn catalog_add(bundle_dir: &Path, catalog_dir: &Path, channel: Option<&str>) -> anyhow::Result<String> {
    let (bundle, channels, default) = read_bundle_dir(bundle_dir).map_err(anyhow::Error::msg)?;
    let channel = channel.map(str::to_string).or_else(|| channels.first().cloned()).unwrap_or_else(|| "alpha".into());
    let file = catalog_dir.join(&bundle.package).join("catalog.json");
    let docs = if file.is_file() { read_docs(&file)? } else { Vec::new() };
    let mut blobs: Vec<FileBlob> =
        docs.into_iter().map(FileBlob::read).collect::<Result<_, _>>().map_err(|e| e.within(file.display()))?;
    if !blobs.iter().any(|b| matches!(b.olm(), Some(Blob::Package(_)))) {
        let default_channel = default.clone().unwrap_or_else(|| channel.clone());
        let package = PackageBlob { name: bundle.package.clone(), default_channel, ..Default::default() };
        blobs.insert(0, FileBlob::Olm(Blob::Package(package)));
    }
    blobs.retain(|b| !matches!(b.olm(), Some(Blob::Bundle(x)) if x.name == bundle.name));
    blobs.push(FileBlob::Olm(bundle_blob(&bundle)));
    let mut entry = uc_olm::bundle::entry_of(&bundle);
    let is_channel = |b: &FileBlob| matches!(b.olm(), Some(Blob::Channel(c)) if c.name == channel);
    if !blobs.iter().any(is_channel) {
        let blob = ChannelBlob { package: bundle.package.clone(), name: channel.clone(), entries: Vec::new() };
        blobs.push(FileBlob::Olm(Blob::Channel(blob)));
    }
    if let Some(FileBlob::Olm(Blob::Channel(ch))) = blobs.iter_mut().find(|b| is_channel(b)) {
        ch.entries.retain(|e| e.name != entry.name);
        if entry.replaces.is_none() {
            let current = uc_olm::fbc::Channel { name: channel.clone(), entries: ch.entries.clone() };
            entry.replaces = uc_olm::graph::head(&current).map(|e| e.name.clone());
        }
        ch.entries.push(entry);
    }
    Catalog::of(blobs.iter().filter_map(FileBlob::olm))
        .map_err(|e| anyhow::anyhow!("the catalog would not be valid: {e}"))?;
    std::fs::create_dir_all(file.parent().unwrap_or(catalog_dir))
        .with_context(|| format!("creating {}", file.display()))?;
    let text: Vec<String> = blobs.iter().map(|b| serde_json::to_string(b).unwrap_or_default()).collect();
    std::fs::write(&file, text.join("\n") + "\n").with_context(|| format!("writing {}", file.display()))?;
    Ok(format!("{} on channel {channel} of package {} in {}", bundle.name, bundle.package, file.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_initialized_operator_packages_and_enters_a_catalog_version_after_version() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("demo");
        crate::init::write("demo", crate::init::Lang::Js, &dir).unwrap();
        let bundle = package(&dir, "0.1.0", None, None).unwrap();
        let (b, channels, _) = read_bundle_dir(&bundle).unwrap();
        assert_eq!((b.name.as_str(), channels), ("demo.v0.1.0", vec!["alpha".to_string()]));
        let uc = b.objects.iter().find(|o| o["kind"] == "UniversalController").unwrap();
        assert!(
            uc["spec"]["hooks"]["sync"]["javascript"]["source"].as_str().unwrap().contains("function sync"),
            "inlined"
        );
        assert!(b.provides.iter().any(|g| g.kind == "Demo"));
        let csv = b.objects.iter().find(|o| o["kind"] == "ClusterServiceVersion").unwrap();
        let permissions = &csv["spec"]["install"]["spec"]["clusterPermissions"][0];
        assert_eq!(permissions["serviceAccountName"], "demo-controller", "the controllers' account");
        let rules = permissions["rules"].as_array().unwrap();
        assert!(
            rules.iter().any(|r| r["resources"].as_array().unwrap().iter().any(|x| x == "configmaps")),
            "{rules:?}"
        );
        let catalog = tmp.path().join("catalog");
        catalog_add(&bundle, &catalog, None).unwrap();
        // A blob of a schema uc does not read is kept as it is.
        let file = catalog.join("demo/catalog.json");
        let other = r#"{"schema":"olm.deprecations","package":"demo","entries":[{"reference":{"schema":"olm.package"},"message":"m"}]}"#;
        std::fs::write(&file, format!("{}{other}\n", std::fs::read_to_string(&file).unwrap())).unwrap();
        let second = package(&dir, "0.2.0", None, Some(tmp.path().join("b2"))).unwrap();
        catalog_add(&second, &catalog, None).unwrap();
        let kept = std::fs::read_to_string(&file)
            .unwrap()
            .lines()
            .any(|l| serde_json::from_str::<Value>(l).unwrap() == serde_json::from_str::<Value>(other).unwrap());
        assert!(kept, "the other blob is kept");
        let read = uc_olm::bundle::read_catalog_dir(&catalog).unwrap();
        let ch = &read.packages["demo"].channels["alpha"];
        assert_eq!(ch.entries[1].replaces.as_deref(), Some("demo.v0.1.0"), "after the head");
        assert_eq!(uc_olm::graph::head(ch).unwrap().name, "demo.v0.2.0");
        catalog_add(&second, &catalog, None).unwrap();
        assert_eq!(uc_olm::bundle::read_catalog_dir(&catalog).unwrap().packages["demo"].bundles.len(), 2, "added once");
    }

    #[test]
    fn exec_hooks_are_not_packaged() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("demo");
        crate::init::write("demo", crate::init::Lang::Python, &dir).unwrap();
        let e = package(&dir, "0.1.0", None, None).unwrap_err().to_string();
        assert!(e.contains("exec hook"), "{e}");
        assert!(package(&dir, "one", None, None).unwrap_err().to_string().contains("--version"));
    }
}
