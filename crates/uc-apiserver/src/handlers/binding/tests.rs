use serde_json::json;

use super::*;

#[test]
fn a_binding_names_a_node_and_assigns_a_pod_not_yet_assigned() {
    let binding = json!({"metadata": {"name": "p", "annotations": {"scheduled-by": "mine"}},
                         "target": {"kind": "Node", "name": "n1"}});
    assert!(binding_errors(&binding).is_empty());
    let errs: Vec<String> =
        binding_errors(&json!({"target": {"kind": "Pod"}})).iter().map(ToString::to_string).collect();
    assert_eq!(
        errs,
        vec![
            "target.kind: Unsupported value: \"Pod\": supported values: \"Node\", \"<empty>\"",
            "target.name: Required value"
        ]
    );
    let pod = json!({"metadata": {"name": "p"}, "spec": {"schedulerName": "mine", "containers": []}});
    let bound = assigned(&pod, &binding).unwrap();
    assert_eq!(bound["spec"]["nodeName"], "n1");
    assert_eq!(bound["metadata"]["annotations"]["scheduled-by"], "mine");
    assert_eq!(assigned(&bound, &binding), Err(Some("n1".into())), "already assigned");
    let deleting = json!({"metadata": {"name": "p", "deletionTimestamp": "2026-12-04T00:00:00Z"}, "spec": {}});
    assert_eq!(assigned(&deleting, &binding), Err(None));
}
