use super::*;
use serde_json::json;

fn spec(v: serde_json::Value) -> PodSpec {
    serde_json::from_value(v).unwrap()
}

fn plain() -> serde_json::Value {
    json!({"containers": [{"name": "app", "image": "busybox"}]})
}

#[test]
fn a_plain_pod_passes_baseline_and_fails_restricted_as_kube_words_it() {
    assert!(check(Level::Baseline, &spec(plain())).is_empty());
    assert_eq!(
        describe(&check(Level::Restricted, &spec(plain()))),
        "allowPrivilegeEscalation != false (container \"app\" must set securityContext.allowPrivilegeEscalation=false), \
         unrestricted capabilities (container \"app\" must set securityContext.capabilities.drop=[\"ALL\"]), \
         runAsNonRoot != true (pod or container \"app\" must set securityContext.runAsNonRoot=true), \
         seccompProfile (pod or container \"app\" must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\")"
    );
    assert!(check(Level::Privileged, &spec(json!({"hostNetwork": true, "containers": []}))).is_empty());
}

#[test]
fn a_pod_that_owns_the_host_is_refused_under_baseline() {
    let s = spec(json!({
        "hostNetwork": true, "hostPID": true,
        "volumes": [{"name": "root", "hostPath": {"path": "/"}}, {"name": "cache", "emptyDir": {}}],
        "containers": [
            {"name": "a", "securityContext": {"privileged": true, "capabilities": {"add": ["SYS_ADMIN", "CHOWN"]}},
             "ports": [{"containerPort": 80, "hostPort": 80}]},
            {"name": "b", "securityContext": {"capabilities": {"add": ["NET_ADMIN"]}}}
        ]
    }));
    assert_eq!(
        describe(&check(Level::Baseline, &s)),
        "non-default capabilities (containers \"a\", \"b\" must not include \"NET_ADMIN\", \"SYS_ADMIN\" in securityContext.capabilities.add), \
         host namespaces (hostNetwork, hostPID), hostPath volumes (volume \"root\"), \
         hostPort (container \"a\" uses hostPort 80), privileged (container \"a\" must not set securityContext.privileged=true)"
    );
    let restricted: Vec<String> = check(Level::Restricted, &s).into_iter().map(|(r, _)| r).collect();
    assert!(!restricted.contains(&"non-default capabilities".to_string()), "restricted's capability check replaces it");
    assert!(restricted.contains(&"restricted volume types".to_string()));
    let vol = check(Level::Restricted, &s).into_iter().find(|(r, _)| r == "restricted volume types").unwrap();
    assert_eq!(vol.1, "volumes [\"root\"] have restricted types");
}

#[test]
fn a_hardened_pod_passes_restricted() {
    let s = spec(json!({
        "securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}},
        "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "d"}}, {"name": "t", "projected": {"sources": []}}],
        "initContainers": [{"name": "init", "securityContext": {"allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}}}],
        "containers": [{"name": "app", "securityContext": {"allowPrivilegeEscalation": false,
            "capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]}}}]
    }));
    assert_eq!(check(Level::Restricted, &s), vec![]);
    // The same pod with one container that asks for root fails, naming it.
    let mut v = serde_json::to_value(&s).unwrap();
    v["containers"][0]["securityContext"]["runAsUser"] = json!(0);
    v["containers"][0]["securityContext"]["runAsNonRoot"] = json!(false);
    v["securityContext"]["seccompProfile"]["type"] = json!("Unconfined");
    assert_eq!(
        describe(&check(Level::Restricted, &spec(v))),
        "runAsNonRoot != true (container \"app\" must not set securityContext.runAsNonRoot=false), \
         runAsUser=0 (container \"app\" must not set runAsUser=0), \
         seccompProfile (pod must not set securityContext.seccompProfile.type to \"Unconfined\")"
    );
}

#[test]
fn baseline_details_for_the_rarer_fields() {
    let s = spec(json!({
        "securityContext": {"sysctls": [{"name": "kernel.msgmax", "value": "1"}, {"name": "net.ipv4.tcp_syncookies", "value": "1"}],
                            "seccompProfile": {"type": "Unconfined"}},
        "containers": [{"name": "a", "securityContext": {"procMount": "Unmasked", "seLinuxOptions": {"type": "spc_t"}}}]
    }));
    assert_eq!(
        describe(&check(Level::Baseline, &s)),
        "procMount (container \"a\" must not set securityContext.procMount to \"Unmasked\"), \
         seLinuxOptions (container \"a\" set forbidden securityContext.seLinuxOptions: type \"spc_t\"), \
         seccompProfile (pod must not set securityContext.seccompProfile.type to \"Unconfined\"), \
         forbidden sysctls (kernel.msgmax)"
    );
}

#[test]
fn namespace_labels_override_the_cluster_default_and_bad_ones_are_named() {
    let labels =
        |m: &'static [(&'static str, &'static str)]| move |k: &str| m.iter().find(|(x, _)| *x == k).map(|(_, v)| *v);
    let p = Policy::of_namespace(
        &Policy::default(),
        labels(&[
            ("pod-security.kubernetes.io/enforce", "restricted"),
            ("pod-security.kubernetes.io/enforce-version", "v1.30"),
        ]),
    )
    .unwrap();
    assert_eq!(p.enforce.label(), "restricted:v1.30");
    assert_eq!(p.warn.label(), "restricted:latest", "the default's warn level stays");
    let e =
        Policy::of_namespace(&Policy::default(), labels(&[("pod-security.kubernetes.io/warn", "strict")])).unwrap_err();
    assert_eq!(e[0].0, "pod-security.kubernetes.io/warn");
    assert!(e[0].1.contains("must be one of privileged, baseline, restricted"));
    assert_eq!(Policy::parse("enforce=baseline,warn=restricted").unwrap(), Policy::default());
    assert_eq!(Policy::parse("").unwrap(), Policy::privileged());
    assert!(Policy::parse("enforce=strict").is_err() && Policy::parse("deny=baseline").is_err());
    assert!(Policy::parse("audit=restricted:v1.2x").is_err());
}

#[test]
fn pod_templates_are_found_where_each_workload_keeps_them() {
    assert_eq!(template_pointer("apps", "deployments"), Some("/spec/template/spec"));
    assert_eq!(template_pointer("batch", "cronjobs"), Some("/spec/jobTemplate/spec/template/spec"));
    assert_eq!(template_pointer("", "podtemplates"), Some("/template/spec"));
    assert_eq!(template_pointer("", "pods"), None);
}

#[test]
fn a_stricter_namespace_names_its_pods_that_would_be_refused() {
    let pods = vec![
        ("calico-node-1".to_string(), spec(json!({"hostNetwork": true, "containers": [{"name": "c"}]}))),
        ("calico-node-2".to_string(), spec(json!({"hostNetwork": true, "containers": [{"name": "c"}]}))),
        ("web".to_string(), spec(plain())),
    ];
    let baseline = Versioned { level: Level::Baseline, version: "latest".into() };
    assert_eq!(
        existing_pod_warnings(&baseline, "ops", &pods),
        vec![
            "existing pods in namespace \"ops\" violate the new PodSecurity enforce level \"baseline:latest\""
                .to_string(),
            "calico-node-1 (and 1 other pod): host namespaces".to_string(),
        ]
    );
    let restricted = Versioned { level: Level::Restricted, version: "latest".into() };
    let lines = existing_pod_warnings(&restricted, "ops", &pods);
    assert_eq!(lines.len(), 3);
    assert_eq!(
        lines[2],
        "web: allowPrivilegeEscalation != false, unrestricted capabilities, runAsNonRoot != true, seccompProfile"
    );
    assert!(existing_pod_warnings(&baseline, "ops", &pods[2..]).is_empty());
}
