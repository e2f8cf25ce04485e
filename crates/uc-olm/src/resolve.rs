//! Dependency resolution: from a Subscription's package, channel and starting CSV, the bundle to
//! install and every bundle it needs — a provider for each required API (`olm.gvk.required`) and a
//! version in range of each required package (`olm.package.required`) — from any catalog, higher
//! priority first, unless what is installed already satisfies it. Nothing is chosen when anything is
//! missing: the error names what and for whom.

use std::collections::BTreeSet;

use crate::fbc::{Bundle, Catalog, Gvk, Package};
use crate::graph;
use crate::versions::Version;

/// A catalog and the CatalogSource it comes from.
#[derive(Clone, Copy, Debug)]
pub struct Source<'a> {
    /// `namespace/name` of the CatalogSource.
    pub name: &'a str,
    /// Its `spec.priority` (higher is preferred).
    pub priority: i64,
    /// Its contents.
    pub catalog: &'a Catalog,
}

/// An operator installed already (a CSV that succeeded or is installing).
#[derive(Clone, Debug, PartialEq)]
pub struct Installed {
    /// Its package.
    pub package: String,
    /// Its version.
    pub version: Version,
    /// The APIs it provides.
    pub provides: Vec<Gvk>,
}

/// What a Subscription asks for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Target {
    /// The package (`spec.name`).
    pub package: String,
    /// `spec.channel`; the package's default when empty.
    pub channel: Option<String>,
    /// `spec.startingCSV`; the channel's head when empty.
    pub starting_csv: Option<String>,
    /// `namespace/name` of `spec.source` + `spec.sourceNamespace`; any source when empty.
    pub source: Option<String>,
}

/// A bundle to install, and where it comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Choice {
    /// `namespace/name` of its CatalogSource.
    pub source: String,
    /// Its package.
    pub package: String,
    /// The channel it is followed on.
    pub channel: String,
    /// The bundle (CSV) name.
    pub bundle: String,
}

/// Why nothing can be installed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResolutionError {
    /// The package is in no catalog (or not in the one named).
    #[error("no package {package:?} in {where_}")]
    NoPackage {
        /// The package.
        package: String,
        /// Which catalogs were searched.
        where_: String,
    },
    /// The channel is not one of the package's.
    #[error("package {package:?} has no channel {channel:?}")]
    NoChannel {
        /// The package.
        package: String,
        /// The channel.
        channel: String,
    },
    /// The starting CSV is not in the channel.
    #[error("channel {channel:?} of package {package:?} has no bundle {bundle:?}")]
    NoBundle {
        /// The package.
        package: String,
        /// The channel.
        channel: String,
        /// The bundle asked for.
        bundle: String,
    },
    /// No catalog provides a required API.
    #[error("no operator provides the API {gvk}, required by {required_by}")]
    MissingApi {
        /// The API.
        gvk: Gvk,
        /// The bundle that requires it.
        required_by: String,
    },
    /// No catalog has the required package in the required range.
    #[error("no bundle of package {package:?} in the range {range:?}, required by {required_by}")]
    MissingPackage {
        /// The package.
        package: String,
        /// The range.
        range: String,
        /// The bundle that requires it.
        required_by: String,
    },
}

/// Sources in preference order: priority, then name.
fn ordered<'a>(sources: &'a [Source<'a>]) -> Vec<&'a Source<'a>> {
    let mut v: Vec<&Source> = sources.iter().collect();
    v.sort_by(|a, b| b.priority.cmp(&a.priority).then(a.name.cmp(b.name)));
    v
}

/// The channel a dependency is followed on: the package's default when it holds the bundle.
fn channel_of(pkg: &Package, bundle: &str) -> String {
    let holds = |c: &str| pkg.channels.get(c).is_some_and(|ch| ch.entries.iter().any(|e| e.name == bundle));
    if holds(&pkg.default_channel) {
        return pkg.default_channel.clone();
    }
    pkg.channels.keys().find(|c| holds(c)).cloned().unwrap_or_else(|| pkg.default_channel.clone())
}

/// A package's bundles in preference order: the default channel's head, then newest first.
fn preferred(pkg: &Package) -> Vec<&Bundle> {
    let head = pkg.channels.get(&pkg.default_channel).and_then(graph::head).map(|e| e.name.clone());
    let mut v: Vec<&Bundle> = pkg.bundles.values().collect();
    v.sort_by(|a, b| {
        (Some(&b.name) == head.as_ref()).cmp(&(Some(&a.name) == head.as_ref())).then(b.version.cmp(&a.version))
    });
    v
}

/// The bundle a Subscription installs first: its package (from its source, else the first catalog by
/// priority that has it), its channel (else the default), its starting CSV (else the channel's head).
fn starting_choice<'a>(sources: &'a [Source<'a>], target: &Target) -> Result<(Choice, &'a Bundle), ResolutionError> {
    let candidates: Vec<&Source> =
        ordered(sources).into_iter().filter(|s| target.source.as_deref().is_none_or(|n| n == s.name)).collect();
    let (source, pkg) = candidates
        .iter()
        .find_map(|s| s.catalog.packages.get(&target.package).map(|p| (*s, p)))
        .ok_or_else(|| ResolutionError::NoPackage {
            package: target.package.clone(),
            where_: target.source.clone().map(|s| format!("catalog {s}")).unwrap_or_else(|| "any catalog".into()),
        })?;
    let channel_name = target.channel.clone().filter(|c| !c.is_empty()).unwrap_or_else(|| pkg.default_channel.clone());
    let channel = pkg
        .channels
        .get(&channel_name)
        .ok_or_else(|| ResolutionError::NoChannel { package: pkg.name.clone(), channel: channel_name.clone() })?;
    let start = match target.starting_csv.as_deref().filter(|s| !s.is_empty()) {
        Some(csv) => channel.entries.iter().find(|e| e.name == csv).map(|e| e.name.clone()),
        None => graph::head(channel).map(|e| e.name.clone()),
    }
    .ok_or_else(|| ResolutionError::NoBundle {
        package: pkg.name.clone(),
        channel: channel_name.clone(),
        bundle: target.starting_csv.clone().unwrap_or_default(),
    })?;
    let bundle = &pkg.bundles[&start];
    Ok((
        Choice { source: source.name.to_string(), package: pkg.name.clone(), channel: channel_name, bundle: start },
        bundle,
    ))
}

/// Resolves a Subscription: the bundle it installs first, then what that bundle needs.
pub fn resolve(sources: &[Source], target: &Target, installed: &[Installed]) -> Result<Vec<Choice>, ResolutionError> {
    let (first, start) = starting_choice(sources, target)?;
    let mut provided: BTreeSet<Gvk> = installed.iter().flat_map(|i| i.provides.iter().cloned()).collect();
    provided.extend(start.provides.iter().cloned());
    let mut chosen = vec![first];
    let mut i = 0;
    while i < chosen.len() {
        let bundle = bundle_of(sources, &chosen[i]).expect("a chosen bundle is in its catalog").clone();
        i += 1;
        // Package requirements first: their ranges are narrower than "any provider of an API".
        for req in &bundle.requires_packages {
            let satisfied = installed.iter().any(|x| x.package == req.package && req.range.contains(&x.version))
                || chosen.iter().any(|c| {
                    c.package == req.package && bundle_of(sources, c).is_some_and(|b| req.range.contains(&b.version))
                });
            if satisfied {
                continue;
            }
            let missing = || ResolutionError::MissingPackage {
                package: req.package.clone(),
                range: req.range.to_string(),
                required_by: bundle.name.clone(),
            };
            if chosen.iter().any(|c| c.package == req.package) {
                return Err(missing()); // chosen already, at a version outside the range
            }
            let (s, p, b) = ordered(sources)
                .into_iter()
                .find_map(|s| {
                    let p = s.catalog.packages.get(&req.package)?;
                    preferred(p).into_iter().find(|b| req.range.contains(&b.version)).map(|b| (s, p, b))
                })
                .ok_or_else(missing)?;
            provided.extend(b.provides.iter().cloned());
            chosen.push(Choice {
                source: s.name.to_string(),
                package: p.name.clone(),
                channel: channel_of(p, &b.name),
                bundle: b.name.clone(),
            });
        }
        for gvk in &bundle.requires {
            if provided.contains(gvk) {
                continue;
            }
            let (s, p, b) = ordered(sources)
                .into_iter()
                .flat_map(|s| s.catalog.packages.values().map(move |p| (s, p)))
                .find_map(|(s, p)| preferred(p).into_iter().find(|b| b.provides.contains(gvk)).map(|b| (s, p, b)))
                .ok_or_else(|| ResolutionError::MissingApi { gvk: gvk.clone(), required_by: bundle.name.clone() })?;
            provided.extend(b.provides.iter().cloned());
            chosen.push(Choice {
                source: s.name.to_string(),
                package: p.name.clone(),
                channel: channel_of(p, &b.name),
                bundle: b.name.clone(),
            });
        }
    }
    Ok(chosen)
}

/// The bundle a choice names.
pub fn bundle_of<'a>(sources: &'a [Source<'a>], c: &Choice) -> Option<&'a Bundle> {
    sources.iter().find(|s| s.name == c.source)?.catalog.packages.get(&c.package)?.bundles.get(&c.bundle)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fbc::parse_blobs;

    fn multi() -> Catalog {
        Catalog::from_blobs(&parse_blobs(include_str!("../testdata/example-multi-package-index.yaml")).unwrap())
            .unwrap()
    }

    fn target(package: &str, channel: Option<&str>, csv: Option<&str>) -> Target {
        Target {
            package: package.into(),
            channel: channel.map(String::from),
            starting_csv: csv.map(String::from),
            source: None,
        }
    }

    #[test]
    fn a_required_api_and_package_bring_their_provider() {
        let catalog = multi();
        let sources = [Source { name: "olm/test", priority: 0, catalog: &catalog }];
        // foo.v0.3.1 requires the API Bar (every bar provides it) and package bar <0.2.0 (only bar.v0.1.0).
        let foo = &catalog.packages["foo"];
        let channel = foo.channels.values().find(|c| c.entries.iter().any(|e| e.name == "foo.v0.3.1")).unwrap();
        let plan = resolve(&sources, &target("foo", Some(&channel.name), Some("foo.v0.3.1")), &[]).unwrap();
        let bundles: Vec<&str> = plan.iter().map(|c| c.bundle.as_str()).collect();
        assert_eq!(bundles[0], "foo.v0.3.1");
        assert!(bundles.contains(&"bar.v0.1.0"), "the bar in range: {bundles:?}");
        assert_eq!(plan.iter().filter(|c| c.package == "bar").count(), 1, "one bar serves both needs: {bundles:?}");
    }

    #[test]
    fn an_unsatisfiable_requirement_names_what_is_missing() {
        let catalog = multi();
        let sources = [Source { name: "olm/test", priority: 0, catalog: &catalog }];
        let foo = &catalog.packages["foo"];
        let channel = foo.channels.values().find(|c| c.entries.iter().any(|e| e.name == "foo.v0.2.0")).unwrap();
        let e = resolve(&sources, &target("foo", Some(&channel.name), Some("foo.v0.2.0")), &[]).unwrap_err();
        assert!(matches!(&e, ResolutionError::MissingPackage { package, .. } if package == "bar"), "{e}");
        assert!(e.to_string().contains("required by foo.v0.2.0"), "{e}");
        // Only the foo package's catalog, without its package requirement: the API has no provider.
        let mut only_foo = catalog.clone();
        only_foo.packages.retain(|n, _| n == "foo");
        for b in only_foo.packages.get_mut("foo").unwrap().bundles.values_mut() {
            b.requires_packages.clear();
        }
        let sources = [Source { name: "olm/foo", priority: 0, catalog: &only_foo }];
        let e = resolve(&sources, &target("foo", None, None), &[]).unwrap_err();
        assert!(e.to_string().starts_with("no operator provides the API test.bar/v1alpha1/Bar"), "{e}");
    }

    #[test]
    fn what_is_installed_satisfies_requirements() {
        let catalog = multi();
        let mut only_foo = catalog.clone();
        only_foo.packages.retain(|n, _| n == "foo");
        let sources = [Source { name: "olm/foo", priority: 0, catalog: &only_foo }];
        let bar = Installed {
            package: "bar".into(),
            version: crate::versions::parse_version("0.1.0").unwrap(),
            provides: vec![Gvk { group: "test.bar".into(), version: "v1alpha1".into(), kind: "Bar".into() }],
        };
        let foo = &catalog.packages["foo"];
        let channel = foo.channels.values().find(|c| c.entries.iter().any(|e| e.name == "foo.v0.3.1")).unwrap();
        let plan = resolve(&sources, &target("foo", Some(&channel.name), Some("foo.v0.3.1")), &[bar]).unwrap();
        assert_eq!(plan.len(), 1, "{plan:?}");
    }

    #[test]
    fn unknown_packages_channels_and_bundles() {
        let catalog = multi();
        let sources = [Source { name: "olm/test", priority: 0, catalog: &catalog }];
        assert!(matches!(resolve(&sources, &target("nope", None, None), &[]), Err(ResolutionError::NoPackage { .. })));
        assert!(matches!(
            resolve(&sources, &target("bar", Some("nope"), None), &[]),
            Err(ResolutionError::NoChannel { .. })
        ));
        assert!(matches!(
            resolve(&sources, &target("bar", None, Some("bar.v9")), &[]),
            Err(ResolutionError::NoBundle { .. })
        ));
        let named = Target { source: Some("olm/other".into()), ..target("bar", None, None) };
        assert!(resolve(&sources, &named, &[]).unwrap_err().to_string().contains("catalog olm/other"));
    }
}
