//! The controller's finalizer on parents: present while a finalize hook exists, so a deleted parent
//! waits for that hook to answer `finalized: true`; absent otherwise.

use kube::api::{Patch, PatchParams};
use serde_json::{Value, json};
use uc_api::meta::{finalizers, meta_str};

use super::errors::SyncError;
use super::shared::Shared;
use crate::flavor::Flavor;

/// The finalizer a controller keeps on parents: the spec's `finalizerName` (UniversalControllers
/// only: Metacontroller's kinds have theirs), else its flavor's name for the controller.
pub(super) fn finalizer_name(spec: &uc_api::controller::UniversalControllerSpec, flavor: Flavor, name: &str) -> String {
    match &spec.finalizer_name {
        Some(f) if flavor == Flavor::Universal && !f.is_empty() => f.clone(),
        _ => flavor.finalizer(name),
    }
}

/// What a reconcile does about the finalizer before anything else.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum FinalizerStep {
    /// A deleting parent that no longer waits for this controller: nothing to do.
    Done,
    /// Add (`true`) or remove (`false`) the finalizer; the resulting update event syncs again.
    Set(bool),
    /// Go on with the sync (or, for a deleting parent, the finalize hook).
    Sync,
}

/// The finalizer step for a parent.
pub(super) fn finalizer_step(deleting: bool, has_finalizer: bool, has_finalize_hook: bool) -> FinalizerStep {
    match (deleting, has_finalizer, has_finalize_hook) {
        (true, false, _) => FinalizerStep::Done,
        (true, true, false) => FinalizerStep::Set(false),
        (false, false, true) => FinalizerStep::Set(true),
        (false, true, false) => FinalizerStep::Set(false),
        _ => FinalizerStep::Sync,
    }
}

impl Shared {
    /// Adds or removes the finalizer, conditioned on the parent's resourceVersion (a concurrent change
    /// fails this, and the sync is retried).
    pub(super) async fn set_finalizer(&self, parent: &Value, present: bool) -> Result<(), SyncError> {
        let mut f = finalizers(parent);
        f.retain(|x| x != &self.finalizer);
        if present {
            f.push(self.finalizer.clone());
        }
        let patch = json!({"metadata": {"resourceVersion": meta_str(parent, "resourceVersion"), "finalizers": f}});
        self.api(&self.parent, meta_str(parent, "namespace"))
            .patch(meta_str(parent, "name"), &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(|e| SyncError::kube("updating the parent's finalizers", e))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_named_finalizer_for_universal_controllers_only() {
        let mut spec: uc_api::controller::UniversalControllerSpec =
            serde_json::from_value(json!({"parentResource": {"apiVersion": "v1", "resource": "configmaps"}})).unwrap();
        assert_eq!(finalizer_name(&spec, Flavor::Universal, "c"), "universalcontroller.njuics.cn/c");
        spec.finalizer_name = Some("cache.example.com/finalizer".into());
        assert_eq!(finalizer_name(&spec, Flavor::Universal, "c"), "cache.example.com/finalizer");
        assert_eq!(finalizer_name(&spec, Flavor::Composite, "c"), Flavor::Composite.finalizer("c"));
    }

    #[test]
    fn finalizer_steps() {
        use FinalizerStep::*;
        // (deleting, has finalizer, has finalize hook)
        assert_eq!(finalizer_step(false, false, false), Sync);
        assert_eq!(finalizer_step(false, false, true), Set(true), "a finalize hook needs the finalizer first");
        assert_eq!(finalizer_step(false, true, true), Sync);
        assert_eq!(finalizer_step(false, true, false), Set(false), "the finalize hook was removed");
        assert_eq!(finalizer_step(true, false, true), Done, "already finalized");
        assert_eq!(finalizer_step(true, false, false), Done);
        assert_eq!(finalizer_step(true, true, false), Set(false), "nothing to wait for");
        assert_eq!(finalizer_step(true, true, true), Sync, "the finalize hook runs");
    }
}
