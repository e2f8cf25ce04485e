//! The parent's status as the hook (and the rollout) computed it, written back when it changed.

use std::time::Instant;

use kube::Resource;
use kube::api::PostParams;
use serde_json::Value;
use uc_api::Pointer;
use uc_api::meta::meta_str;

use super::echoes::Written;
use super::errors::{SyncError, SyncReason};
use super::shared::Shared;
use super::written::digest;
use crate::informer::{Obj, key_of};
use crate::raw::Sent;

/// The status to write, if any: what the hook answered, with `observedGeneration` when the parent has
/// a status subresource (without one a status write bumps the generation, so it is not recorded);
/// `None` when the hook gave none or the parent already has it.
pub(super) fn status_to_write(
    parent: &Value,
    status: Option<Value>,
    status_subresource: bool,
) -> Result<Option<Value>, SyncError> {
    let Some(mut status) = status.filter(|s| !s.is_null()) else { return Ok(None) };
    if !status.is_object() {
        return Err(SyncError::new(SyncReason::HookError, "status must be an object"));
    }
    if status_subresource && let Some(g) = parent.at("/metadata/generation").cloned() {
        status["observedGeneration"] = g;
    }
    Ok((parent.get("status") != Some(&status)).then_some(status))
}

impl Shared {
    /// Writes a status `status_to_write` chose, unless this very status was written before.
    pub(super) async fn write_status(&self, parent: &Obj, status: Option<Value>) -> Result<(), SyncError> {
        let Some(status) = status else { return Ok(()) };
        let sent = digest(&status);
        if self.written.already_written(parent, sent) {
            return Ok(());
        }
        // Written conditioned on the resourceVersion the hook saw (as controller-runtime's status
        // updates are): a status computed from a cache a moment behind — one that misses what the
        // previous sync wrote, such as a condition the hook keeps history in — must not overwrite the
        // newer one. The 409 it gets is routine: the sync is retried quietly from the newer parent.
        let api = self.raw_api(&self.parent, meta_str(parent, "namespace"));
        let name = meta_str(parent, "name").to_string();
        let o = Sent::with_status(parent.clone(), status);
        let key = key_of(parent);
        let echo = Written::Parent(key.clone());
        self.echoes.expect(&key, echo.clone(), Instant::now());
        let r = if self.parent.status_subresource {
            api.replace_status(&name, &PostParams::default(), &o).await
        } else {
            api.replace(&name, &PostParams::default(), &o).await
        };
        let stored = r.as_ref().ok().and_then(|o| o.meta().resource_version.as_deref());
        self.echoes.settle(&echo, meta_str(parent, "resourceVersion"), stored);
        match r {
            Ok(o) => {
                let rv = o.meta().resource_version.clone().unwrap_or_default();
                self.written.remember(meta_str(parent, "uid"), sent, rv);
                Ok(())
            }
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
            Err(e) => Err(SyncError::kube("writing the parent's status", e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn what_status_is_written() {
        let parent = json!({"metadata": {"generation": 3}, "status": {"ready": 1, "observedGeneration": 3}});
        assert_eq!(status_to_write(&parent, None, true).unwrap(), None);
        assert_eq!(status_to_write(&parent, Some(Value::Null), true).unwrap(), None);
        assert_eq!(status_to_write(&parent, Some(json!({"ready": 1})), true).unwrap(), None, "unchanged");
        assert_eq!(
            status_to_write(&parent, Some(json!({"ready": 2})), true).unwrap(),
            Some(json!({"ready": 2, "observedGeneration": 3}))
        );
        assert_eq!(
            status_to_write(&parent, Some(json!({"ready": 1})), false).unwrap(),
            Some(json!({"ready": 1})),
            "no observedGeneration without a status subresource"
        );
        let e = status_to_write(&parent, Some(json!("ok")), true).unwrap_err();
        assert_eq!((e.reason, e.message.as_str()), (SyncReason::HookError, "status must be an object"));
    }
}
