//! uc's own `operator_sdk.util` collection (k8s_status, requeue_after, osdk_metric, k8s_event): the
//! Operator SDK's image ships that collection from Ansible Galaxy, which PyPI's `ansible` no longer
//! bundles; uc writes its implementation of the same modules where runs find it, after any installed
//! copy on the collections path.

use std::path::{Path, PathBuf};

use anyhow::Context as _;

const MODULES: [(&str, &str); 4] = [
    ("k8s_status.py", include_str!("operator_sdk_util/k8s_status.py")),
    ("requeue_after.py", include_str!("operator_sdk_util/requeue_after.py")),
    ("osdk_metric.py", include_str!("operator_sdk_util/osdk_metric.py")),
    ("k8s_event.py", include_str!("operator_sdk_util/k8s_event.py")),
];

const GALAXY: &str = "namespace: operator_sdk\nname: util\nversion: 0.5.0\nreadme: README.md\nauthors: [uc]\n";

/// Writes the collection under `root` (`<root>/ansible_collections/operator_sdk/util`); answers `root`.
pub fn install(root: &Path) -> anyhow::Result<PathBuf> {
    let dir = root.join("ansible_collections/operator_sdk/util");
    let modules = dir.join("plugins/modules");
    std::fs::create_dir_all(&modules).with_context(|| format!("creating {}", modules.display()))?;
    std::fs::write(dir.join("galaxy.yml"), GALAXY)?;
    std::fs::create_dir_all(dir.join("meta"))?;
    std::fs::write(dir.join("meta/runtime.yml"), "requires_ansible: '>=2.14'\n")?;
    for (name, text) in MODULES {
        std::fs::write(modules.join(name), text)?;
    }
    Ok(root.to_path_buf())
}
