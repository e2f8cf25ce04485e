//! What a DecoratorController does to its target besides attachments: labels and annotations from its
//! hook's answer (`null` removes a key), and the annotation that marks its attachments as its own.

use kube::api::{Patch, PatchParams};
use serde_json::{Map, Value, json};
use uc_api::Pointer;
use uc_api::meta::meta_str;
use uc_api::metacontroller::DECORATOR_ANNOTATION;

use super::errors::SyncError;
use super::shared::Shared;
use crate::hooks::dialect::StringPatch;

/// Marks a desired attachment as the decorator's (`metacontroller.k8s.io/decorator-controller`).
pub(super) fn mark_attachment(child: &mut Value, decorator: &str) {
    if let Some(meta) = child.get_mut("metadata").and_then(Value::as_object_mut) {
        let annotations = meta.entry("annotations").or_insert_with(|| json!({}));
        if !annotations.is_object() {
            *annotations = json!({});
        }
        annotations[DECORATOR_ANNOTATION] = Value::String(decorator.into());
    }
}

/// The merge patch of the target's labels and annotations for what changes, if anything does.
pub(super) fn metadata_patch(parent: &Value, labels: &StringPatch, annotations: &StringPatch) -> Option<Value> {
    let changes = |field: &str, want: &StringPatch| -> Map<String, Value> {
        let have = parent.at(&format!("/metadata/{field}"));
        want.iter()
            .filter(|(k, v)| have.and_then(|h| h.get(k.as_str())).and_then(Value::as_str) != v.as_deref())
            .map(|(k, v)| (k.clone(), v.clone().map(Value::String).unwrap_or(Value::Null)))
            .collect()
    };
    let (l, a) = (changes("labels", labels), changes("annotations", annotations));
    if l.is_empty() && a.is_empty() {
        return None;
    }
    let mut meta = Map::new();
    if !l.is_empty() {
        meta.insert("labels".into(), Value::Object(l));
    }
    if !a.is_empty() {
        meta.insert("annotations".into(), Value::Object(a));
    }
    Some(json!({ "metadata": meta }))
}

impl Shared {
    /// Applies a decorator's label and annotation changes to its target (a merge patch of those keys
    /// only: whatever else changed meanwhile stays); the target's new resourceVersion.
    pub(super) async fn patch_parent_metadata(
        &self,
        parent: &Value,
        patch: Value,
    ) -> Result<Option<String>, SyncError> {
        let api = self.api(&self.parent, meta_str(parent, "namespace"));
        match api.patch(meta_str(parent, "name"), &PatchParams::default(), &Patch::Merge(&patch)).await {
            Ok(o) => Ok(o.metadata.resource_version),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(None),
            Err(e) => Err(SyncError::kube("setting the target's labels and annotations", e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_changes_are_patched_and_null_removes() {
        let parent = json!({"metadata": {"labels": {"keep": "1", "drop": "x"}, "annotations": {"a": "same"}}});
        let labels = StringPatch::from([
            ("keep".into(), Some("1".into())),
            ("drop".into(), None),
            ("absent".into(), None),
            ("new".into(), Some("v".into())),
        ]);
        let annotations = StringPatch::from([("a".into(), Some("same".into()))]);
        let patch = metadata_patch(&parent, &labels, &annotations).unwrap();
        assert_eq!(patch, json!({"metadata": {"labels": {"drop": null, "new": "v"}}}));
        assert_eq!(metadata_patch(&parent, &StringPatch::new(), &annotations), None, "nothing changes");
    }

    #[test]
    fn attachments_are_marked() {
        let mut svc = json!({"metadata": {"name": "s"}});
        mark_attachment(&mut svc, "spp");
        assert_eq!(svc["metadata"]["annotations"][DECORATOR_ANNOTATION], "spp");
        let mut other = json!({"metadata": {"name": "s", "annotations": {"x": "y"}}});
        mark_attachment(&mut other, "spp");
        assert_eq!(other["metadata"]["annotations"]["x"], "y");
    }
}
