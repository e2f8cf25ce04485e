//! `--watches-file`: an Operator SDK project's `watches.yaml`, run as the SDK's `helm-operator` or
//! `ansible-operator` would run it (an entry naming a role or a playbook makes it an Ansible operator's).

use std::path::Path;

use anyhow::Context as _;
use uc_api::controller::UniversalController;

/// Reads the watches file and sets up its operator: the UniversalControllers to install.
pub async fn setup(
    client: &kube::Client,
    installer: &kube::Client,
    watches_file: &Path,
    options: &mut uc_engine::EngineOptions,
    ansible: &crate::ansible_operator::Runtime,
) -> anyhow::Result<Vec<UniversalController>> {
    let text = std::fs::read_to_string(watches_file).with_context(|| format!("reading {}", watches_file.display()))?;
    if uc_ansible::watches::is_ansible(&text) {
        crate::ansible_operator::setup(ansible, installer, watches_file, &text, options).await
    } else {
        crate::helm_operator::setup(client, installer, watches_file, &text, &mut options.natives).await
    }
}

/// The factories of the SDK operators' hooks that bundles carry (`native: {name: helm|ansible, config}`);
/// answers what this process's Ansible hooks share.
pub fn register_factories(
    options: &mut uc_engine::EngineOptions,
    client: &kube::Client,
) -> std::sync::Arc<crate::ansible_operator::Runtime> {
    crate::helm_operator::register_factory(&mut options.natives, client.clone());
    let ansible = crate::ansible_operator::Runtime::new(client.clone(), options.exec_hooks.clone());
    crate::ansible_operator::register_factory(&mut options.natives, ansible.clone());
    options.collectors.push(ansible.collector());
    ansible
}
