//! A new Job's selector, as kube-apiserver's job strategy makes it (`generateSelector`, then
//! `ValidateGeneratedSelector`): unless `spec.manualSelector` is true, the pod template gets the
//! labels `batch.kubernetes.io/controller-uid` and `controller-uid` (the Job's uid),
//! `batch.kubernetes.io/job-name` and `job-name` (its name), and the selector matches the uid. So
//! `kubectl get pods -l batch.kubernetes.io/job-name=pi` finds a Job's pods, `kubectl get job -o wide`
//! shows its selector, and two Jobs of one name at different times never share pods. The Job's own
//! labels, when it has none, are its template's (batch/v1's `SetDefaults_Job`, which kube applies on
//! every read).

use serde_json::{Map, Value};
use uc_api::Pointer;
use uc_api::meta::meta_str;

use crate::error::FieldError;

const CONTROLLER_UID: &str = "batch.kubernetes.io/controller-uid";
const LEGACY_CONTROLLER_UID: &str = "controller-uid";
const JOB_NAME: &str = "batch.kubernetes.io/job-name";
const LEGACY_JOB_NAME: &str = "job-name";

/// Generates a new Job's selector and template labels; what is wrong with them afterwards (a label
/// the client set to another value, a selector it set without `manualSelector`).
pub(crate) fn generate_selector(job: &mut Value) -> Vec<FieldError> {
    if job.at("/spec/manualSelector").and_then(Value::as_bool) == Some(true) {
        return Vec::new();
    }
    let (uid, name) = (meta_str(job, "uid").to_string(), meta_str(job, "name").to_string());
    let Some(spec) = job.get_mut("spec").and_then(Value::as_object_mut) else { return Vec::new() };
    let labels = map_at(spec, &["template", "metadata", "labels"]);
    for (key, value) in
        [(LEGACY_JOB_NAME, &name), (JOB_NAME, &name), (LEGACY_CONTROLLER_UID, &uid), (CONTROLLER_UID, &uid)]
    {
        labels.entry(key).or_insert_with(|| Value::String(value.clone()));
    }
    let template_labels = labels.clone();
    map_at(spec, &["selector", "matchLabels"]).entry(CONTROLLER_UID).or_insert_with(|| Value::String(uid.clone()));
    let meta = job.get_mut("metadata").and_then(Value::as_object_mut);
    if let Some(meta) = meta.filter(|m| m.get("labels").and_then(Value::as_object).is_none_or(Map::is_empty)) {
        meta.insert("labels".into(), Value::Object(template_labels.clone()));
    }
    generated_errors(job, &template_labels, &uid, &name)
}

/// The map at `path` under `obj`, made (or made a map) where it is not one.
fn map_at<'a>(obj: &'a mut Map<String, Value>, path: &[&str]) -> &'a mut Map<String, Value> {
    let mut at = obj;
    for key in path {
        let slot = at.entry(*key).or_insert_with(|| Value::Object(Map::new()));
        if !slot.is_object() {
            *slot = Value::Object(Map::new());
        }
        at = slot.as_object_mut().expect("made an object just above");
    }
    at
}

/// `ValidateGeneratedSelector`: the legacy labels hold the uid and the name, and the selector
/// selects the pods the Job makes.
fn generated_errors(job: &Value, labels: &Map<String, Value>, uid: &str, name: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (key, expected) in [(LEGACY_CONTROLLER_UID, uid), (LEGACY_JOB_NAME, name)] {
        let field = format!("spec.template.metadata.labels[{key}]");
        match labels.get(key) {
            Some(Value::String(v)) if v == expected => {}
            Some(other) => errs.push(FieldError::invalid(field, other, format!("must be '{expected}'"))),
            None => errs.push(FieldError::required(field, format!("must be '{expected}'"))),
        }
    }
    let expected: Map<String, Value> = [(CONTROLLER_UID, uid), (JOB_NAME, name)]
        .into_iter()
        .map(|(k, v)| (k.to_string(), Value::String(v.to_string())))
        .collect();
    let selector = job.at("/spec/selector").unwrap_or(&Value::Null);
    let selects =
        uc_api::LabelSelector::from_value(selector).is_ok_and(|s| s.matches_value(Some(&Value::Object(expected))));
    if !selects {
        errs.push(FieldError::invalid("spec.selector", selector, "`selector` not auto-generated"));
    }
    errs
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn job(spec: Value) -> Value {
        json!({"metadata": {"name": "pi", "uid": "u1"}, "spec": spec})
    }

    #[test]
    fn a_new_job_selects_its_pods_by_its_uid_and_names_itself_on_them() {
        let mut j = job(json!({"template": {"spec": {"restartPolicy": "Never"}}}));
        assert!(generate_selector(&mut j).is_empty());
        let labels = json!({"batch.kubernetes.io/controller-uid": "u1", "batch.kubernetes.io/job-name": "pi",
                            "controller-uid": "u1", "job-name": "pi"});
        assert_eq!(j["spec"]["template"]["metadata"]["labels"], labels);
        assert_eq!(j["spec"]["selector"], json!({"matchLabels": {"batch.kubernetes.io/controller-uid": "u1"}}));
        assert_eq!(j["metadata"]["labels"], labels, "a Job without labels has its template's");
        let mut labelled = job(json!({"template": {"metadata": {"labels": {"app": "pi"}}}}));
        labelled["metadata"]["labels"] = json!({"team": "a"});
        assert!(generate_selector(&mut labelled).is_empty());
        assert_eq!(labelled["metadata"]["labels"], json!({"team": "a"}), "its own labels are kept");
        assert_eq!(labelled["spec"]["template"]["metadata"]["labels"]["app"], json!("pi"));
    }

    #[test]
    fn a_manual_selector_is_left_and_conflicting_labels_or_selectors_are_refused() {
        let manual = json!({"manualSelector": true, "selector": {"matchLabels": {"app": "pi"}},
                            "template": {"metadata": {"labels": {"app": "pi"}}}});
        let mut m = job(manual.clone());
        assert!(generate_selector(&mut m).is_empty());
        assert_eq!(m["spec"], manual, "nothing generated");
        let mut renamed = job(json!({"template": {"metadata": {"labels": {"job-name": "other"}}}}));
        let errs: Vec<String> = generate_selector(&mut renamed).iter().map(ToString::to_string).collect();
        assert_eq!(errs, ["spec.template.metadata.labels[job-name]: Invalid value: \"other\": must be 'pi'"]);
        let mut chosen = job(json!({"selector": {"matchLabels": {"app": "pi"}}, "template": {}}));
        let errs: Vec<String> = generate_selector(&mut chosen).iter().map(ToString::to_string).collect();
        assert_eq!(errs.len(), 1);
        assert!(
            errs[0].starts_with("spec.selector: Invalid value: ") && errs[0].ends_with("`selector` not auto-generated"),
            "{errs:?}"
        );
    }
}
