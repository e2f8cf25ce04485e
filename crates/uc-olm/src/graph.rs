//! A channel's upgrade graph: its head (the entry no other replaces or skips), and from an installed
//! bundle the next one — an entry that replaces it, skips it, or whose `skipRange` holds its version;
//! of several, the newest (so a skipRange jumps straight to the latest, as OLM does).

pub use crate::fbc::heads;
use crate::fbc::{Channel, Entry, Package};
use crate::versions::{Range, Version};

/// The channel's head.
pub fn head(channel: &Channel) -> Option<&Entry> {
    let heads = heads(channel);
    let name = heads.first()?;
    channel.entries.iter().find(|e| &e.name == name)
}

/// Whether `entry` upgrades directly from the bundle `from` at `version`.
pub fn upgrades_from(entry: &Entry, from: &str, version: Option<&Version>) -> bool {
    entry.name != from
        && (entry.replaces.as_deref() == Some(from)
            || entry.skips.iter().any(|s| s == from)
            || match (&entry.skip_range, version) {
                (Some(r), Some(v)) => Range::parse(r).is_ok_and(|r| r.contains(v)),
                _ => false,
            })
}

/// The bundle to upgrade to from `from` (at `version`) in `channel`: the newest entry that upgrades
/// from it directly, if any.
pub fn next<'a>(pkg: &'a Package, channel: &'a Channel, from: &str, version: Option<&Version>) -> Option<&'a Entry> {
    channel.entries.iter().filter(|e| upgrades_from(e, from, version)).max_by(|a, b| {
        match (pkg.bundles.get(&a.name), pkg.bundles.get(&b.name)) {
            (Some(x), Some(y)) => x.version.cmp(&y.version),
            _ => a.name.cmp(&b.name),
        }
    })
}

/// The upgrades from `from` to the head, one InstallPlan each (what Automatic approval walks).
pub fn path_to_head(pkg: &Package, channel: &Channel, from: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = from.to_string();
    while let Some(e) = next(pkg, channel, &current, pkg.bundles.get(&current).map(|b| &b.version)) {
        if out.contains(&e.name) {
            break; // a cycle: a catalog error, not a reason to loop
        }
        out.push(e.name.clone());
        current = e.name.clone();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fbc::{Catalog, parse_blobs};

    /// Five versions in one channel: 1.0.0 ← 1.1.0 (replaces) ← 1.2.0 (replaces, skips 1.1.1) ← 1.3.0
    /// (skipRange >=1.0.0 <1.3.0), and 1.1.1 on the side.
    fn package() -> Package {
        let mut text = String::from("schema: olm.package\nname: p\ndefaultChannel: stable\n");
        for v in ["1.0.0", "1.1.0", "1.1.1", "1.2.0", "1.3.0"] {
            text.push_str(&format!(
                "---\nschema: olm.bundle\npackage: p\nname: p.v{v}\nproperties: [{{type: olm.package, value: {{packageName: p, version: {v}}}}}]\n"
            ));
        }
        text.push_str(
            "---\nschema: olm.channel\npackage: p\nname: stable\nentries:\n\
             - {name: p.v1.0.0}\n\
             - {name: p.v1.1.0, replaces: p.v1.0.0}\n\
             - {name: p.v1.1.1, replaces: p.v1.1.0}\n\
             - {name: p.v1.2.0, replaces: p.v1.1.0, skips: [p.v1.1.1]}\n\
             - {name: p.v1.3.0, replaces: p.v1.2.0, skipRange: '>=1.0.0 <1.3.0'}\n",
        );
        Catalog::from_blobs(&parse_blobs(&text).unwrap()).unwrap().packages.remove("p").unwrap()
    }

    #[test]
    fn the_head_and_the_next_bundle() {
        let p = package();
        let ch = &p.channels["stable"];
        assert_eq!(head(ch).unwrap().name, "p.v1.3.0");
        let v = |n: &str| p.bundles[n].version.clone();
        assert_eq!(next(&p, ch, "p.v1.3.0", Some(&v("p.v1.3.0"))), None, "at the head");
        // From 1.0.0, 1.1.0 replaces it but 1.3.0's skipRange holds it: the newest wins.
        assert_eq!(next(&p, ch, "p.v1.0.0", Some(&v("p.v1.0.0"))).unwrap().name, "p.v1.3.0");
        // Without the version (a CSV not in the catalog), only replaces and skips count.
        assert_eq!(next(&p, ch, "p.v1.0.0", None).unwrap().name, "p.v1.1.0");
        assert_eq!(next(&p, ch, "p.v1.1.1", None).unwrap().name, "p.v1.2.0", "skips");
    }

    #[test]
    fn paths_to_the_head() {
        let p = package();
        let ch = &p.channels["stable"];
        assert_eq!(path_to_head(&p, ch, "p.v1.0.0"), ["p.v1.3.0"]);
        assert_eq!(path_to_head(&p, ch, "p.v1.3.0"), Vec::<String>::new());
        assert!(upgrades_from(&ch.entries[3], "p.v1.1.1", None));
        assert!(!upgrades_from(&ch.entries[0], "p.v1.0.0", None), "not from itself");
    }
}
