//! Reconciles of the Operator SDK's memcached sample, decided.

use std::path::{Path, PathBuf};

use super::*;
use crate::objects::Capabilities;

fn chart() -> Chart {
    Chart::load_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/e2e/upstream/operator-sdk/testdata/helm/memcached-operator/helm-charts/memcached"),
    )
    .unwrap()
}

fn watch() -> Watch {
    Watch {
        group: "cache.example.com".into(),
        version: "v1alpha1".into(),
        kind: "Memcached".into(),
        chart: PathBuf::from("memcached"),
        watch_dependent_resources: true,
        override_values: [("image".to_string(), "memcached:1.6".to_string())].into_iter().collect(),
        reconcile_period: None,
        max_concurrent_reconciles: None,
        selector: None,
    }
}

fn cr(replicas: i64, status: Option<&HelmAppStatus>) -> Json {
    serde_json::json!({"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached",
        "metadata": {"name": "memcached-sample", "namespace": "apps", "uid": "u1"},
        "spec": {"replicaCount": replicas, "pdbMinAvailable": 1}, "status": status})
}

fn secrets(objects: &[Json]) -> Vec<&Json> {
    objects.iter().filter(|o| o["kind"] == "Secret").collect()
}

#[test]
fn install_then_nothing_then_upgrade() {
    let caps = Capabilities::default();
    let first = sync(&chart(), &watch(), &cr(3, None), &[], "2026-11-28T10:00:00Z", &caps, None).unwrap();
    assert_eq!(first.release.version, 1);
    let sts = first.objects.iter().find(|o| o["kind"] == "StatefulSet").expect("the chart's StatefulSet");
    assert_eq!(sts["spec"]["replicas"], 3);
    assert_eq!(sts["metadata"]["namespace"], "apps");
    assert_eq!(
        sts["spec"]["template"]["spec"]["containers"][0]["image"], "memcached:1.6",
        "overrideValues win over the spec"
    );
    assert_eq!(first.status.conditions[1].reason, "InstallSuccessful");
    let pdb = first.objects.iter().find(|o| o["kind"] == "PodDisruptionBudget").expect("the post-install hook is kept");
    assert_eq!(pdb["spec"]["minAvailable"], 1);
    assert_eq!(first.release.hooks[0].events, ["post-upgrade", "post-install"]);
    assert_eq!(first.status.deployed_release.as_ref().unwrap().name, "memcached-sample");
    let stored = vec![release::from_secret(secrets(&first.objects)[0]).unwrap()];
    assert_eq!(stored[0].config["replicaCount"], 3);

    let again =
        sync(&chart(), &watch(), &cr(3, Some(&first.status)), &stored, "2026-11-28T10:05:00Z", &caps, None).unwrap();
    assert_eq!(again.objects, first.objects, "an unchanged resource writes nothing new");
    assert_eq!(again.status, first.status, "nor changes its status");

    let up =
        sync(&chart(), &watch(), &cr(5, Some(&first.status)), &stored, "2026-11-28T10:10:00Z", &caps, None).unwrap();
    assert_eq!(up.release.version, 2);
    let kept: Vec<Release> = secrets(&up.objects).iter().map(|s| release::from_secret(s).unwrap()).collect();
    let states: Vec<(i64, String)> =
        kept.iter().map(|r| (r.version, r.info.as_ref().unwrap().status.clone())).collect();
    assert_eq!(states, [(1, "superseded".to_string()), (2, "deployed".to_string())]);
    assert_eq!(kept[1].info.as_ref().unwrap().first_deployed, "2026-11-28T10:00:00Z");
    assert_eq!(up.status.conditions[1].reason, "UpgradeSuccessful");
    assert_eq!(up.status.conditions[1].last_transition_time, "2026-11-28T10:00:00Z", "still True since the install");
}

#[test]
fn a_chart_that_fails_reports_release_failed_with_helms_words() {
    let mut c = chart();
    c.templates.push(crate::chart::File {
        name: "templates/bad.yaml".into(),
        data: b"{{ required \"size is required\" .Values.size }}".to_vec(),
    });
    let f = sync(&c, &watch(), &cr(1, None), &[], "2026-11-28T10:00:00Z", &Capabilities::default(), None).unwrap_err();
    assert_eq!(f.message, "execution error at (memcached/templates/bad.yaml:1:3): size is required");
    assert_eq!(f.status.conditions[1].type_, "ReleaseFailed");
    assert_eq!(f.status.conditions[1].reason, "InstallError");
    assert!(f.objects.is_empty(), "nothing was deployed before");
}

#[test]
fn a_failed_upgrade_keeps_the_last_deployed_release() {
    let caps = Capabilities::default();
    let first = sync(&chart(), &watch(), &cr(3, None), &[], "2026-11-28T10:00:00Z", &caps, None).unwrap();
    let stored = vec![first.release.clone()];
    let mut c = chart();
    c.templates.push(crate::chart::File { name: "templates/bad.yaml".into(), data: b"{{ fail \"no\" }}".to_vec() });
    let f = sync(&c, &watch(), &cr(5, Some(&first.status)), &stored, "2026-11-28T10:10:00Z", &caps, None).unwrap_err();
    assert_eq!(f.status.conditions[1].reason, "UpgradeError");
    assert_eq!(f.status.deployed_release, first.status.deployed_release);
    let mut kept = f.objects.clone();
    kept.sort_by_key(|o| o.to_string());
    let mut before = first.objects.clone();
    before.sort_by_key(|o| o.to_string());
    assert_eq!(kept, before, "the release deployed before stays, objects and Secret alike");
}

#[test]
fn overrides_are_typed_as_set_types_them() {
    let mut w = watch();
    w.override_values = [("a.b", "3"), ("a.c", "true"), ("d", "0123"), ("e", "null")]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let v = values_of(&serde_json::json!({"spec": {"a": {"x": 1}}}), &w);
    assert_eq!(v, serde_json::json!({"a": {"x": 1, "b": 3, "c": true}, "d": "0123", "e": null}));
}

#[test]
fn a_releases_objects_carry_helms_ownership_and_lookup_sees_only_them() {
    let obj = object_in("kind: Secret\nmetadata:\n  name: s\n  labels: {a: b}\n", "r", "ns").unwrap();
    assert_eq!(obj["metadata"]["labels"], serde_json::json!({"a": "b", "app.kubernetes.io/managed-by": "Helm"}));
    assert!(owned_by_release(&obj, "r", "ns") && !owned_by_release(&obj, "other", "ns"));
    assert_eq!(lookup_answer(Some(obj.clone()), "r", "ns"), obj);
    assert_eq!(lookup_answer(Some(obj.clone()), "r2", "ns"), serde_json::json!({}), "another release's");
    assert_eq!(lookup_answer(None, "r", "ns"), serde_json::json!({}));
    let stranger = serde_json::json!({"kind": "Secret", "metadata": {"name": "victim"}});
    let list = serde_json::json!({"kind": "SecretList", "items": [obj.clone(), stranger]});
    assert_eq!(lookup_answer(Some(list), "r", "ns")["items"], serde_json::json!([obj]));
}
