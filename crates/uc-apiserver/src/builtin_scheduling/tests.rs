use serde_json::json;

use super::*;

fn class(name: &str, extra: Value) -> Value {
    let mut c = json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}});
    c.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    c
}

fn typed(classes: &[Value]) -> Vec<PriorityClass> {
    classes.iter().map(|c| serde_json::from_value(c.clone()).unwrap()).collect()
}

fn fields(errs: &[FieldError]) -> Vec<String> {
    errs.iter().map(|e| format!("{}: {}", e.field, e.detail)).collect()
}

fn spec(v: Value) -> Map<String, Value> {
    v.as_object().unwrap().clone()
}

#[test]
fn a_class_gets_kubes_default_and_the_system_classes_pass_their_own_validation() {
    let mut c = class("high", json!({"value": 1000}));
    apply_defaults(&mut c);
    assert_eq!(c["preemptionPolicy"], "PreemptLowerPriority");
    assert_eq!(fields(&validate(&c)), Vec::<String>::new());
    let mut never = class("batch", json!({"value": -5, "preemptionPolicy": "Never"}));
    apply_defaults(&mut never);
    assert_eq!(never["preemptionPolicy"], "Never", "what is given stays");
    for (name, system) in system_classes() {
        assert_eq!(fields(&validate(&system)), Vec::<String>::new(), "{name}");
        assert_eq!(delete_refusal(name), Some("this is a system priority class and cannot be deleted"));
    }
    assert_eq!(delete_refusal("high"), None);
}

#[test]
fn reserved_names_values_and_policies_are_refused_in_kubes_words() {
    let reserved = |name: &str, extra: Value| fields(&validate(&class(name, extra)));
    let prefix = "metadata.name: priority class names with 'system-' prefix are reserved for system use only. error: ";
    assert_eq!(
        reserved("system-mine", json!({"value": 10})),
        [format!("{prefix}system-mine is not a known system priority class")]
    );
    assert_eq!(
        reserved("system-node-critical", json!({"value": 10})),
        [format!("{prefix}value of system-node-critical PriorityClass must be 2000001000")]
    );
    assert_eq!(
        reserved("system-cluster-critical", json!({"value": 2_000_000_000, "globalDefault": true})),
        [format!("{prefix}globalDefault of system-cluster-critical PriorityClass must be false")]
    );
    assert_eq!(
        reserved("huge", json!({"value": 1_000_000_001, "preemptionPolicy": "Sometimes"})),
        [
            "value: maximum allowed value of a user defined priority is 1000000000",
            r#"preemptionPolicy: supported values: "PreemptLowerPriority", "Never""#,
        ]
    );
    assert_eq!(reserved("top", json!({"value": 1_000_000_000})), Vec::<String>::new(), "the highest is allowed");
}

#[test]
fn value_and_policy_are_set_once_and_the_rest_may_change() {
    let old = class("high", json!({"value": 1000, "preemptionPolicy": "PreemptLowerPriority"}));
    let described = class(
        "high",
        json!({"value": 1000, "preemptionPolicy": "PreemptLowerPriority",
                                         "description": "now", "globalDefault": true}),
    );
    assert!(update_errors(&old, &described).is_empty());
    let changed = class("high", json!({"value": 2000, "preemptionPolicy": "Never"}));
    assert_eq!(
        fields(&update_errors(&old, &changed)),
        ["value: may not be changed in an update.", "preemptionPolicy: field is immutable"]
    );
}

#[test]
fn only_one_class_is_the_default() {
    let stored = typed(&[class("a", json!({"value": 1, "globalDefault": true})), class("b", json!({"value": 2}))]);
    let second = class("c", json!({"value": 3, "globalDefault": true}));
    assert_eq!(
        admit_class(&second, &stored).unwrap_err().to_string(),
        "PriorityClass a is already marked as default. Only one default can exist"
    );
    let again = class("a", json!({"value": 1, "globalDefault": true, "description": "d"}));
    assert_eq!(admit_class(&again, &stored), Ok(()), "the default itself may be updated");
    assert_eq!(admit_class(&class("d", json!({"value": 4})), &stored), Ok(()));
    assert_eq!(admit_class(&second, &stored[1..]), Ok(()), "none is the default yet");
}

#[test]
fn a_new_pod_gets_its_class_priority_or_the_defaults() {
    let none: Vec<PriorityClass> = Vec::new();
    let mut plain = spec(json!({"containers": []}));
    admit_pod(&mut plain, &none).unwrap();
    assert_eq!(
        (plain["priority"].clone(), plain["preemptionPolicy"].clone()),
        (json!(0), json!("PreemptLowerPriority"))
    );
    assert!(plain.get("priorityClassName").is_none(), "no default class: no name");

    let classes = typed(&[
        class("high", json!({"value": 1000, "preemptionPolicy": "Never"})),
        class("low", json!({"value": -10, "globalDefault": true, "preemptionPolicy": "PreemptLowerPriority"})),
        class("lower", json!({"value": -20, "globalDefault": true, "preemptionPolicy": "PreemptLowerPriority"})),
    ]);
    let mut named = spec(json!({"priorityClassName": "high", "containers": []}));
    admit_pod(&mut named, &classes).unwrap();
    assert_eq!((named["priority"].clone(), named["preemptionPolicy"].clone()), (json!(1000), json!("Never")));
    let mut defaulted = spec(json!({"containers": []}));
    admit_pod(&mut defaulted, &classes).unwrap();
    assert_eq!(
        (defaulted["priorityClassName"].clone(), defaulted["priority"].clone()),
        (json!("lower"), json!(-20)),
        "of two defaults (a race), the lowest value"
    );
    let mut agreeing = spec(json!({"priorityClassName": "high", "priority": 1000, "preemptionPolicy": "Never"}));
    assert_eq!(admit_pod(&mut agreeing, &classes), Ok(()), "what the class says may be repeated");
}

#[test]
fn a_pod_naming_a_missing_class_or_another_priority_is_refused() {
    let classes = typed(&[class("high", json!({"value": 1000, "preemptionPolicy": "Never"}))]);
    let refused = |v: Value| admit_pod(&mut spec(v), &classes).unwrap_err().to_string();
    assert_eq!(refused(json!({"priorityClassName": "gone"})), "no PriorityClass with name gone was found");
    assert_eq!(
        refused(json!({"priorityClassName": "high", "priority": 7})),
        "the integer value of priority (7) must not be provided in pod spec; priority admission controller computed 1000 from the given PriorityClass name"
    );
    assert_eq!(
        refused(json!({"priorityClassName": "high", "preemptionPolicy": "PreemptLowerPriority"})),
        "the string value of PreemptionPolicy (PreemptLowerPriority) must not be provided in pod spec; priority admission controller computed Never from the given PriorityClass name"
    );
}

#[test]
fn an_update_leaving_out_the_priority_keeps_the_stored_one() {
    let old = json!({"spec": {"priority": 1000, "containers": []}});
    let mut new = json!({"spec": {"containers": []}});
    keep_priority(&old, &mut new);
    assert_eq!(new["spec"]["priority"], 1000);
    let mut other = json!({"spec": {"priority": 5}});
    keep_priority(&old, &mut other);
    assert_eq!(other["spec"]["priority"], 5, "a changed priority is left to the update's validation");
}
