use serde_json::json;

use super::*;

fn class(extra: Value) -> Value {
    let mut c = json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "fast"}});
    c.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    c
}

fn fields(errs: &[FieldError]) -> Vec<String> {
    errs.iter().map(|e| format!("{}: {}", e.field, e.detail)).collect()
}

#[test]
fn defaults_and_what_kube_accepts() {
    let mut c = class(json!({"provisioner": "rancher.io/local-path", "parameters": {"type": "ssd"}}));
    apply_defaults(&mut c);
    assert_eq!((c["reclaimPolicy"].clone(), c["volumeBindingMode"].clone()), (json!("Delete"), json!("Immediate")));
    assert_eq!(fields(&validate(&c)), Vec::<String>::new());
    let mut kept = class(json!({"provisioner": "ebs.csi.aws.com", "reclaimPolicy": "Retain",
                                "volumeBindingMode": "WaitForFirstConsumer", "allowVolumeExpansion": true}));
    apply_defaults(&mut kept);
    assert_eq!(kept["reclaimPolicy"], json!("Retain"), "what is given stays");
    assert_eq!(fields(&validate(&kept)), Vec::<String>::new());
}

#[test]
fn bad_classes_are_refused_in_kubes_words() {
    let c = class(json!({"provisioner": "", "reclaimPolicy": "Recycle", "volumeBindingMode": "Later",
                         "parameters": {"": "x"}}));
    assert_eq!(
        fields(&validate(&c)),
        [
            "provisioner: ",
            "parameters: key cannot be empty",
            r#"reclaimPolicy: supported values: "Delete", "Retain""#,
            r#"volumeBindingMode: supported values: "Immediate", "WaitForFirstConsumer""#,
        ]
    );
    let c = class(json!({"provisioner": "a/b/c", "volumeBindingMode": "Immediate"}));
    assert_eq!(fields(&validate(&c)).len(), 1, "{:?}", fields(&validate(&c)));
    assert!(fields(&validate(&c))[0].starts_with("provisioner: "));
}

#[test]
fn what_is_set_once_stays() {
    let mut old = class(json!({"provisioner": "rancher.io/local-path", "parameters": {"type": "ssd"}}));
    apply_defaults(&mut old);
    let mut new = old.clone();
    new["allowVolumeExpansion"] = json!(true);
    new["metadata"]["labels"] = json!({"tier": "fast"});
    assert_eq!(fields(&update_errors(&old, &new)), Vec::<String>::new(), "expansion and metadata may change");
    new["parameters"] = json!({"type": "hdd"});
    new["provisioner"] = json!("other.io/x");
    new["reclaimPolicy"] = json!("Retain");
    new["volumeBindingMode"] = json!("WaitForFirstConsumer");
    assert_eq!(
        fields(&update_errors(&old, &new)),
        [
            "parameters: updates to parameters are forbidden.",
            "provisioner: updates to provisioner are forbidden.",
            "reclaimPolicy: updates to reclaimPolicy are forbidden.",
            "volumeBindingMode: field is immutable",
        ]
    );
}

#[test]
fn a_claim_that_names_no_class_gets_the_newest_default() {
    let sc = |name: &str, at: &str, default: Option<&str>| {
        let mut c = json!({"metadata": {"name": name, "creationTimestamp": at}});
        if let Some(key) = default {
            c["metadata"]["annotations"] = json!({key: "true"});
        }
        c
    };
    let classes = [
        sc("old", "2024-01-01T00:00:00Z", Some("storageclass.kubernetes.io/is-default-class")),
        sc("beta", "2025-01-01T00:00:00Z", Some("storageclass.beta.kubernetes.io/is-default-class")),
        sc("newest-plain", "2026-01-01T00:00:00Z", None),
    ];
    let claim = |spec: Value| json!({"metadata": {"name": "data"}, "spec": spec});
    assert_eq!(default_for_claim(&claim(json!({})), &classes).as_deref(), Some("beta"));
    assert_eq!(default_for_claim(&claim(json!({"storageClassName": ""})), &classes), None, "\"\" asks for no class");
    assert_eq!(default_for_claim(&claim(json!({"storageClassName": "fast"})), &classes), None);
    let mut annotated = claim(json!({}));
    annotated["metadata"]["annotations"] = json!({"volume.beta.kubernetes.io/storage-class": "fast"});
    assert_eq!(default_for_claim(&annotated, &classes), None);
    assert_eq!(default_for_claim(&claim(json!({})), &classes[2..]), None, "no default class: none");
}
