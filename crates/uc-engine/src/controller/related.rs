//! Related resources: the customize hook names, per parent, other objects its sync hook should see
//! (by label selector or by names). Each resource type named gets an informer; a change of an object
//! re-syncs the parents whose last rules select it.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use uc_api::hook::{CustomizeRequest, ObjectMap, RelatedResourceRule};
use uc_api::meta::meta_str;
use uc_api::{LabelSelector, Pointer};

use super::errors::{SyncError, SyncReason};
use super::shared::{AbortOnDrop, RelatedSource, Shared};
use crate::hooks::HookImpl;
use crate::hooks::dialect::Dialect;
use crate::informer::{Obj, ObjKey, resource_id};

/// Checks a customize answer's rules: each sets exactly one of `labelSelector` and `names`.
pub(super) fn check_rules(rules: &[RelatedResourceRule]) -> Result<(), SyncError> {
    match rules.iter().position(|r| r.label_selector.is_some() == r.names.is_some()) {
        Some(i) => Err(SyncError::new(
            SyncReason::HookError,
            format!("relatedResources[{i}]: set exactly one of labelSelector and names"),
        )),
        None => Ok(()),
    }
}

/// Which namespaces a rule of a parent searches by label: the rule's namespace if it names one; else
/// the parent's for a namespaced parent of a v1 hook; else every namespace (`None`).
fn label_namespace(rule: &RelatedResourceRule, parent_ns: &str, parent_namespaced: bool, v2: bool) -> Option<String> {
    match &rule.namespace {
        Some(ns) => Some(ns.clone()),
        None if parent_namespaced && !v2 => Some(parent_ns.to_string()),
        None => None,
    }
}

/// Whether a rule of the parent at `parent_key` selects `obj` (of the rule's resource type); `v2`: the
/// hook may relate objects of any namespace.
pub(super) fn rule_matches(
    rule: &RelatedResourceRule,
    obj: &Value,
    parent_key: &ObjKey,
    parent_namespaced: bool,
    v2: bool,
) -> bool {
    if let Some(names) = &rule.names {
        let ns = rule.namespace.clone().unwrap_or_else(|| parent_key.0.clone());
        return names.iter().any(|n| n == meta_str(obj, "name")) && (ns.is_empty() || ns == meta_str(obj, "namespace"));
    }
    let obj_ns = meta_str(obj, "namespace");
    if let Some(ns) = label_namespace(rule, &parent_key.0, parent_namespaced, v2)
        && !obj_ns.is_empty()
        && ns != obj_ns
    {
        return false;
    }
    rule.label_selector
        .as_ref()
        .and_then(|s| LabelSelector::from_value(s).ok())
        .is_some_and(|s| s.matches_value(obj.at("/metadata/labels")))
}

fn select_related(
    source: &RelatedSource,
    rule: &RelatedResourceRule,
    parent: &Value,
    parent_namespaced: bool,
    v2: bool,
) -> Result<Vec<Obj>, SyncError> {
    if let Some(names) = &rule.names {
        let ns = rule.namespace.clone().unwrap_or_else(|| meta_str(parent, "namespace").to_string());
        let ns = if source.res.namespaced { ns } else { String::new() };
        return Ok(names.iter().filter_map(|n| source.informer.get(&(ns.clone(), n.clone()))).collect());
    }
    let sel = rule
        .label_selector
        .as_ref()
        .map(LabelSelector::from_value)
        .transpose()
        .map_err(|e| SyncError::new(SyncReason::HookError, format!("relatedResources labelSelector: {e}")))?
        .unwrap_or_default();
    let ns = label_namespace(rule, meta_str(parent, "namespace"), parent_namespaced, v2);
    let candidates = match ns {
        Some(ns) if source.res.namespaced => source.informer.list(Some(&ns)),
        _ => source.informer.list(None),
    };
    Ok(candidates.into_iter().filter(|o| sel.matches_value(o.at("/metadata/labels"))).collect())
}

/// What reading a rule's objects asks of the API server's RBAC (the engine reads them from its caches):
/// `get` of each name, or `list` in the namespace searched (every namespace: the cluster scope).
fn reads(
    rule: &RelatedResourceRule,
    res: &crate::resources::Resolved,
    parent: &Value,
    parent_namespaced: bool,
    v2: bool,
) -> Vec<crate::acting::Read> {
    let read = |verb, namespace: String, name: &str| crate::acting::Read {
        verb,
        group: res.ar.group.clone(),
        resource: res.ar.plural.clone(),
        namespace: if res.namespaced { namespace } else { String::new() },
        name: name.to_string(),
    };
    match &rule.names {
        Some(names) => {
            let ns = rule.namespace.clone().unwrap_or_else(|| meta_str(parent, "namespace").to_string());
            names.iter().map(|n| read("get", ns.clone(), n)).collect()
        }
        None => {
            let ns = label_namespace(rule, meta_str(parent, "namespace"), parent_namespaced, v2);
            vec![read("list", ns.unwrap_or_default(), "")]
        }
    }
}

impl Shared {
    /// Asks the customize hook which related objects the parent's sync sees, and gathers them.
    pub(super) async fn related_for(
        &self,
        key: &ObjKey,
        parent: &Value,
        hook: &HookImpl,
        keys: &Dialect,
    ) -> Result<BTreeMap<String, ObjectMap>, SyncError> {
        let request = CustomizeRequest { controller: (*self.uc).clone(), parent: parent.clone() };
        let dialect = self.dialects.customize;
        let v2 = dialect.version == uc_api::controller::HookVersion::V2;
        let (answer, elapsed) = hook.customize(request, &dialect).await;
        self.ctx.metrics.hook_call(&self.name, "customize", elapsed, answer.is_ok());
        let response = answer?;
        check_rules(&response.related_resources)?;
        let mut out: BTreeMap<String, ObjectMap> = BTreeMap::new();
        let mut rules = Vec::new();
        for (i, rule) in response.related_resources.into_iter().enumerate() {
            let source = self.related_source(&rule.api_version, &rule.resource).await?;
            // A controller acting as an account sees only what the account may read.
            if let Some(access) = &self.access {
                for read in reads(&rule, &source.res, parent, self.parent.namespaced, v2) {
                    access.check(&read).await.map_err(|refusal| {
                        SyncError::new(SyncReason::HookError, format!("relatedResources[{i}]: {refusal}"))
                    })?;
                }
            }
            let entry = out.entry(source.res.type_key()).or_default();
            for o in select_related(&source, &rule, parent, self.parent.namespaced, v2)? {
                entry.insert(keys.object_key(self.parent.namespaced, source.res.namespaced, &o), o.clone());
            }
            rules.push((resource_id(&source.res.ar), rule));
        }
        self.related_rules.lock().insert(key.clone(), rules);
        Ok(out)
    }

    async fn related_source(&self, api_version: &str, resource: &str) -> Result<Arc<RelatedSource>, SyncError> {
        let cache_key = format!("{api_version}/{resource}");
        if let Some(s) = self.related_sources.lock().get(&cache_key) {
            return Ok(s.clone());
        }
        let res = self
            .ctx
            .discovery
            .resolve(api_version, resource)
            .await
            .map_err(|m| SyncError::new(SyncReason::HookError, format!("relatedResources: {m}")))?;
        let informer = self.ctx.hub.acquire(&res.ar);
        let (sub, mut rx) = informer.subscribe();
        let queue = self.queue.clone();
        let id = resource_id(&res.ar);
        let related_rules = self.related_rules.clone();
        let parent_namespaced = self.parent.namespaced;
        let v2 = self.dialects.customize.version == uc_api::controller::HookVersion::V2;
        let task = tokio::spawn(async move {
            let _sub = sub;
            while let Some(ch) = rx.recv().await {
                let keys: Vec<ObjKey> = related_rules
                    .lock()
                    .iter()
                    .filter(|(pk, rules)| {
                        rules
                            .iter()
                            .any(|(rid, r)| *rid == id && rule_matches(r, &ch.object, pk, parent_namespaced, v2))
                    })
                    .map(|(pk, _)| pk.clone())
                    .collect();
                for k in keys {
                    queue.add(k);
                }
            }
        });
        tokio::time::timeout(Duration::from_secs(30), informer.wait_synced())
            .await
            .map_err(|_| SyncError::new(SyncReason::HookError, format!("relatedResources: {resource} did not sync")))?;
        let source = Arc::new(RelatedSource { res, informer, _task: AbortOnDrop(task) });
        self.related_sources.lock().insert(cache_key, source.clone());
        Ok(source)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn rule(v: Value) -> RelatedResourceRule {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn rules_set_one_way_of_selecting() {
        let by_label =
            rule(json!({"apiVersion": "v1", "resource": "secrets", "labelSelector": {"matchLabels": {"a": "b"}}}));
        let by_name = rule(json!({"apiVersion": "v1", "resource": "secrets", "names": ["s"]}));
        let neither = rule(json!({"apiVersion": "v1", "resource": "secrets"}));
        let both = rule(json!({"apiVersion": "v1", "resource": "secrets", "names": ["s"], "labelSelector": {}}));
        assert!(check_rules(&[by_label.clone(), by_name.clone()]).is_ok());
        let e = check_rules(&[by_label, neither]).unwrap_err();
        assert_eq!(e.message, "relatedResources[1]: set exactly one of labelSelector and names");
        assert!(check_rules(&[both]).is_err());
    }

    #[test]
    fn which_objects_a_rule_selects() {
        let key: ObjKey = ("ns".into(), "p".into());
        let obj = |ns: &str, name: &str, labels: Value| json!({"metadata": {"namespace": ns, "name": name, "labels": labels}});
        let by_label =
            rule(json!({"apiVersion": "v1", "resource": "secrets", "labelSelector": {"matchLabels": {"a": "b"}}}));
        let ab = json!({"a": "b"});
        assert!(rule_matches(&by_label, &obj("ns", "x", ab.clone()), &key, true, false));
        assert!(
            !rule_matches(&by_label, &obj("other", "x", ab.clone()), &key, true, false),
            "v1: the parent's namespace"
        );
        assert!(rule_matches(&by_label, &obj("other", "x", ab.clone()), &key, true, true), "v2: any namespace");
        assert!(rule_matches(&by_label, &obj("other", "x", ab.clone()), &key, false, false), "cluster-scoped parent");
        assert!(!rule_matches(&by_label, &obj("ns", "x", json!({})), &key, true, false));
        let in_other = rule(json!({"apiVersion": "v1", "resource": "secrets", "namespace": "other",
                                   "labelSelector": {"matchLabels": {"a": "b"}}}));
        assert!(rule_matches(&in_other, &obj("other", "x", ab.clone()), &key, true, true));
        assert!(!rule_matches(&in_other, &obj("ns", "x", ab.clone()), &key, true, true), "the named namespace only");
        let cluster_scoped = json!({"metadata": {"name": "n", "labels": ab}});
        assert!(
            rule_matches(&by_label, &cluster_scoped, &key, true, false),
            "cluster-scoped objects have no namespace"
        );
        let by_name = rule(json!({"apiVersion": "v1", "resource": "secrets", "names": ["s"]}));
        assert!(rule_matches(&by_name, &obj("ns", "s", json!({})), &key, true, false));
        assert!(
            !rule_matches(&by_name, &obj("other", "s", json!({})), &key, true, false),
            "defaults to the parent's namespace"
        );
        let elsewhere = rule(json!({"apiVersion": "v1", "resource": "secrets", "names": ["s"], "namespace": "other"}));
        assert!(rule_matches(&elsewhere, &obj("other", "s", json!({})), &key, true, false));
    }

    #[test]
    fn reading_a_rules_objects_asks_get_per_name_or_list_where_it_searches() {
        let secrets = crate::resources::Resolved {
            ar: kube::api::ApiResource {
                group: String::new(),
                version: "v1".into(),
                api_version: "v1".into(),
                kind: "Secret".into(),
                plural: "secrets".into(),
            },
            namespaced: true,
            status_subresource: false,
        };
        let parent = json!({"metadata": {"namespace": "team-a", "name": "p"}});
        let by_name =
            rule(json!({"apiVersion": "v1", "resource": "secrets", "names": ["x", "y"], "namespace": "team-b"}));
        let asked: Vec<_> = reads(&by_name, &secrets, &parent, true, false)
            .into_iter()
            .map(|r| (r.verb, r.namespace, r.name))
            .collect();
        assert_eq!(asked, [("get", "team-b".into(), "x".into()), ("get", "team-b".into(), "y".into())]);
        let by_label = rule(json!({"apiVersion": "v1", "resource": "secrets", "labelSelector": {}}));
        let v1 = reads(&by_label, &secrets, &parent, true, false);
        assert_eq!((v1[0].verb, v1[0].namespace.as_str()), ("list", "team-a"), "v1: the parent's namespace");
        let v2 = reads(&by_label, &secrets, &parent, true, true);
        assert_eq!(v2[0].namespace, "", "v2: every namespace, the cluster scope");
    }
}
