//! StorageClasses (storage.k8s.io/v1) as kube-apiserver keeps them (`pkg/apis/storage`): stored with
//! kube's defaults (`reclaimPolicy: Delete`, `volumeBindingMode: Immediate`), refused in kube's words
//! (`ValidateStorageClass`, `ValidateStorageClassUpdate`), and kube's DefaultStorageClass admission: a
//! new claim that names no class gets the default one. `uc up` installs a default class, `standard`,
//! for what its node provisions (docs/apiserver.md).

use k8s_openapi::api::storage::v1::StorageClass;
use serde_json::{Value, json};
use uc_api::Pointer;

use crate::error::{FieldError, FieldErrors};

/// The annotations that make a class the default (the beta one still counts, as in kube).
pub(crate) const DEFAULT_ANNOTATIONS: &[&str] =
    &["storageclass.kubernetes.io~1is-default-class", "storageclass.beta.kubernetes.io~1is-default-class"];

/// kube's `maxProvisionerParameterSize` and `maxProvisionerParameterLen`.
const MAX_PARAMETERS_BYTES: usize = 256 * 1024;
const MAX_PARAMETERS: usize = 512;

/// Applies kube's defaults to a StorageClass (`SetDefaults_StorageClass`).
pub(crate) fn apply_defaults(obj: &mut Value) {
    let Some(class) = obj.as_object_mut() else { return };
    for (field, default) in [("reclaimPolicy", "Delete"), ("volumeBindingMode", "Immediate")] {
        if class.get(field).is_none_or(Value::is_null) {
            class.insert(field.into(), json!(default));
        }
    }
}

/// What kube refuses in a StorageClass.
pub(crate) fn validate(obj: &Value) -> Vec<FieldError> {
    let mut errs = FieldErrors::new();
    if let Ok(class) = serde_json::from_value::<StorageClass>(obj.clone()) {
        errs.storage_class(&class);
    }
    errs.0
}

/// What kube refuses in an update of a StorageClass beyond what a create is checked for: its
/// parameters, provisioner, reclaim policy and binding mode are set once.
pub(crate) fn update_errors(old: &Value, new: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let field = |v: &Value, f: &str| v.get(f).filter(|x| !x.is_null()).cloned();
    for (f, words) in [
        ("parameters", "updates to parameters are forbidden."),
        ("provisioner", "updates to provisioner are forbidden."),
        ("reclaimPolicy", "updates to reclaimPolicy are forbidden."),
    ] {
        if field(old, f) != field(new, f) {
            errs.push(FieldError::forbidden(f, words));
        }
    }
    if field(old, "volumeBindingMode") != field(new, "volumeBindingMode") {
        let now = field(new, "volumeBindingMode").unwrap_or(Value::Null);
        errs.push(FieldError::invalid("volumeBindingMode", &now, "field is immutable"));
    }
    errs
}

/// kube's DefaultStorageClass admission: the class a new claim gets when it names none (neither
/// `spec.storageClassName`, empty included, nor the beta annotation). `classes` are the stored ones.
pub(crate) fn default_for_claim<'a>(claim: &Value, classes: impl IntoIterator<Item = &'a Value>) -> Option<String> {
    let named = claim.at("/spec/storageClassName").is_some_and(|c| !c.is_null())
        || claim.at("/metadata/annotations/volume.beta.kubernetes.io~1storage-class").is_some();
    if named {
        return None;
    }
    crate::default_class::newest_default(classes, DEFAULT_ANNOTATIONS)
}

impl FieldErrors {
    fn storage_class(&mut self, class: &StorageClass) {
        if class.provisioner.is_empty() {
            self.required("provisioner", "");
        } else {
            for why in uc_api::names::qualified_name_errors(&class.provisioner.to_lowercase()) {
                self.invalid("provisioner", class.provisioner.as_str(), why);
            }
        }
        let parameters = class.parameters.as_ref();
        let bytes: usize = parameters.into_iter().flatten().map(|(k, v)| k.len() + v.len()).sum();
        if bytes > MAX_PARAMETERS_BYTES {
            self.too_long("parameters", "must be less than or equal to 256 kiB");
        }
        if parameters.is_some_and(|p| p.len() > MAX_PARAMETERS) {
            self.invalid("parameters", "", format!("can't have more than {MAX_PARAMETERS} parameters"));
        }
        if parameters.is_some_and(|p| p.contains_key("")) {
            self.invalid("parameters", "", "key cannot be empty");
        }
        if let Some(policy) = class.reclaim_policy.as_deref().filter(|p| !["Delete", "Retain"].contains(p)) {
            self.not_supported("reclaimPolicy".into(), policy, &["Delete", "Retain"]);
        }
        match class.volume_binding_mode.as_deref() {
            None => self.required("volumeBindingMode", "binding mode is required"),
            Some(mode) if !["Immediate", "WaitForFirstConsumer"].contains(&mode) => {
                self.not_supported("volumeBindingMode".into(), mode, &["Immediate", "WaitForFirstConsumer"])
            }
            Some(_) => {}
        }
    }

    fn too_long(&mut self, field: &str, why: &str) {
        self.0.push(FieldError::new(crate::error::FieldErrorKind::TooLong, field, None, why));
    }
}

#[cfg(test)]
mod tests;
