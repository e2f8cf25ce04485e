//! The scale subresource, read and written through the paths the resource declares.

use std::sync::Arc;

use http::Response;
use serde_json::{Value, json};
use uc_api::Pointer;

use crate::app::{App, Body, Req, json_response};
use crate::error::{ApiError, FieldError, Result};
use crate::handlers::write::{apply_patch, commit_update, precondition, prepare_update};
use crate::registry::ScalePaths;
use crate::request::{Target, parse_body};
use crate::storage::StoreError;

fn path_pointer(json_path: &str) -> String {
    json_path.trim_start_matches('.').split('.').fold(String::new(), |acc, s| format!("{acc}/{s}"))
}

fn scale_view(paths: &ScalePaths, obj: &Value) -> Value {
    let spec = obj.at(&path_pointer(&paths.spec_replicas)).and_then(Value::as_i64).unwrap_or(0);
    let status = obj.at(&path_pointer(&paths.status_replicas)).and_then(Value::as_i64).unwrap_or(0);
    let mut st = json!({"replicas": status});
    if let Some(sel) = paths.label_selector.as_ref().and_then(|p| obj.at(&path_pointer(p))) {
        st["selector"] = sel.clone();
    } else if let Some(sel) = obj.at("/spec/selector") {
        // Built-ins publish the selector in string form.
        if let Ok(ls) = uc_api::LabelSelector::from_value(sel) {
            let s: Vec<String> = ls
                .requirements
                .iter()
                .filter_map(|r| match r {
                    uc_api::selector::Requirement::Equals(k, v) => Some(format!("{k}={v}")),
                    _ => None,
                })
                .collect();
            st["selector"] = Value::String(s.join(","));
        }
    }
    json!({
        "kind": "Scale", "apiVersion": "autoscaling/v1",
        "metadata": {"name": obj.at("/metadata/name"), "namespace": obj.at("/metadata/namespace"),
                     "uid": obj.at("/metadata/uid"), "resourceVersion": obj.at("/metadata/resourceVersion"),
                     "creationTimestamp": obj.at("/metadata/creationTimestamp")},
        "spec": {"replicas": spec}, "status": st,
    })
}

pub(crate) fn get_scale(app: &App, t: &Target) -> Result<Response<Body>> {
    let obj = app.store.get(&t.info.gr(), &t.key()).ok_or_else(|| ApiError::not_found(&t.subject()))?;
    let paths = t.info.version(&t.version).and_then(|v| v.scale.clone()).ok_or_else(ApiError::no_route)?;
    Ok(json_response(200, &scale_view(&paths, &obj)))
}

pub(crate) async fn update_scale(
    app: &Arc<App>,
    req: &mut Req,
    t: &Target,
    patch_body: Option<(String, bytes::Bytes)>,
) -> Result<Response<Body>> {
    let paths = t.info.version(&t.version).and_then(|v| v.scale.clone()).ok_or_else(ApiError::no_route)?;
    let key = t.key();
    for _ in 0..16 {
        let old = app.store.get(&t.info.gr(), &key).ok_or_else(|| ApiError::not_found(&t.subject()))?;
        let mut scale = scale_view(&paths, &old);
        match &patch_body {
            Some(_) => {
                let scale_target = Target { sub: Some("scale".into()), ..t.clone() };
                apply_patch(req, &scale_target, &mut scale)?;
            }
            None => scale = parse_body(req)?,
        }
        let replicas = scale.at("/spec/replicas").cloned().unwrap_or(json!(0));
        if replicas.as_i64().is_none_or(|r| r < 0) {
            return Err(ApiError::invalid(
                "Scale",
                "autoscaling",
                t.name.as_deref().unwrap_or_default(),
                &[FieldError::invalid("spec.replicas", &replicas, "must be greater than or equal to 0")],
            ));
        }
        precondition(&scale, &old, t)?;
        let mut new = (*old).clone();
        let pointer = path_pointer(&paths.spec_replicas);
        let (parent, leaf) = pointer.rsplit_once('/').unwrap_or(("", &pointer));
        match new.at_mut(parent).and_then(Value::as_object_mut) {
            Some(m) => {
                m.insert(leaf.to_string(), replicas);
            }
            None => {
                return Err(ApiError::internal(format!("the object has no {} to scale", paths.spec_replicas)));
            }
        }
        let mut main = Target { sub: None, ..t.clone() };
        main.sub = None;
        let mut new = prepare_update(req, &main, &old, new)?;
        crate::handlers::managed::track_update(req, &main, Some(&old), &mut new)?;
        match commit_update(app, &t.info, &key, &old, new).await {
            Ok(stored) => return Ok(json_response(200, &scale_view(&paths, &stored))),
            Err(StoreError::Conflict { .. }) => continue,
            Err(e) => return Err(ApiError::from_store(e, &t.subject())),
        }
    }
    Err(ApiError::conflict(&t.subject(), "too many concurrent updates; try again"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scale_reads_the_replicas_and_selector_where_the_resource_keeps_them() {
        let paths = ScalePaths {
            spec_replicas: ".spec.size".into(),
            status_replicas: ".status.ready".into(),
            label_selector: Some(".status.selector".into()),
        };
        let obj = json!({"metadata": {"name": "c", "namespace": "ns", "resourceVersion": "4"},
                         "spec": {"size": 3}, "status": {"ready": 2, "selector": "app=c"}});
        let scale = scale_view(&paths, &obj);
        assert_eq!((scale["spec"]["replicas"].as_i64(), scale["status"]["replicas"].as_i64()), (Some(3), Some(2)));
        assert_eq!(scale["status"]["selector"], "app=c");
        assert_eq!(scale["metadata"]["resourceVersion"], "4");
        // A built-in's selector, published in string form; missing replicas count as 0.
        let builtin = ScalePaths {
            spec_replicas: ".spec.replicas".into(),
            status_replicas: ".status.replicas".into(),
            label_selector: None,
        };
        let deploy =
            json!({"metadata": {"name": "d"}, "spec": {"selector": {"matchLabels": {"app": "d", "tier": "web"}}}});
        let scale = scale_view(&builtin, &deploy);
        assert_eq!(scale["status"]["selector"], "app=d,tier=web");
        assert_eq!((scale["spec"]["replicas"].as_i64(), scale["status"]["replicas"].as_i64()), (Some(0), Some(0)));
    }

    #[tokio::test]
    async fn a_scale_update_holds_to_its_resource_version_and_refuses_negative_replicas() {
        let dir = tempfile::tempdir().unwrap();
        let app = crate::server::test_app(dir.path());
        let t = crate::handlers::resolve(&app, "apps", "v1", &["namespaces", "default", "deployments", "d", "scale"])
            .unwrap();
        let object = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "namespace": "default"},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "d"}},
                     "template": {"metadata": {"labels": {"app": "d"}},
                                  "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}});
        app.store.write(crate::storage::Op::Create { gr: t.info.gr(), key: t.key(), object }).await.unwrap();
        let stored = || app.store.get(&t.info.gr(), &t.key()).unwrap();
        let rv = stored()["metadata"]["resourceVersion"].as_str().unwrap().to_string();
        let scale = |replicas: i64, rv: &str| {
            json!({"apiVersion": "autoscaling/v1", "kind": "Scale",
                   "metadata": {"name": "d", "namespace": "default", "resourceVersion": rv},
                   "spec": {"replicas": replicas}})
            .to_string()
        };
        let put = |body: String| Req::for_test(http::Method::PUT, "application/json", &body, &[]);
        assert_eq!(update_scale(&app, &mut put(scale(3, &rv)), &t, None).await.unwrap().status(), 200);
        assert_eq!(stored()["spec"]["replicas"], 3);
        // The version it was read at is gone: Conflict, nothing stored.
        assert_eq!(update_scale(&app, &mut put(scale(5, &rv)), &t, None).await.unwrap_err().code(), 409);
        assert_eq!(stored()["spec"]["replicas"], 3);
        let rv = stored()["metadata"]["resourceVersion"].as_str().unwrap().to_string();
        assert_eq!(update_scale(&app, &mut put(scale(-1, &rv)), &t, None).await.unwrap_err().code(), 422);
    }
}
