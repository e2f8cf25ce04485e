//! The scheduler: which member clusters a binding goes to, and how many replicas each gets — Karmada's
//! semantics for `clusterAffinity` and `replicaScheduling` (Duplicated; Divided by static weights,
//! evenly, or aggregated), as pure functions.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use crate::types::{ClusterAffinity, MemberCluster, Placement, TargetCluster};

/// Whether `selector` selects `labels` (matchLabels and matchExpressions).
pub fn selects(selector: &LabelSelector, labels: &BTreeMap<String, String>) -> bool {
    // uc-api's selector (the one home of label selection); one that does not read selects nothing.
    let labels: BTreeMap<&str, &str> = labels.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    uc_api::LabelSelector::from_typed(selector).is_ok_and(|s| s.matches(&labels))
}

/// Whether a cluster is one `affinity` names (no affinity: every cluster).
pub fn affinity_matches(affinity: Option<&ClusterAffinity>, cluster: &MemberCluster) -> bool {
    let Some(a) = affinity else { return true };
    if a.exclude.contains(&cluster.name) {
        return false;
    }
    if !a.cluster_names.is_empty() && !a.cluster_names.contains(&cluster.name) {
        return false;
    }
    a.label_selector.as_ref().is_none_or(|s| selects(s, &cluster.labels))
}

/// Why nothing could be scheduled (the binding's `Scheduled` condition says it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoClusterFit(pub String);

/// The scheduling result: the clusters in the affinity's order (its `clusterNames`, then by name), each
/// with its replicas when they are divided.
pub fn schedule(
    placement: &Placement,
    replicas: i32,
    clusters: &[MemberCluster],
) -> Result<Vec<TargetCluster>, NoClusterFit> {
    let affinity = placement.cluster_affinity.as_ref();
    let mut feasible: Vec<&MemberCluster> =
        clusters.iter().filter(|c| c.ready && affinity_matches(affinity, c)).collect();
    let rank = |c: &MemberCluster| {
        affinity.and_then(|a| a.cluster_names.iter().position(|n| *n == c.name)).unwrap_or(usize::MAX)
    };
    feasible.sort_by(|a, b| rank(a).cmp(&rank(b)).then_with(|| a.name.cmp(&b.name)));
    if feasible.is_empty() {
        let not_ready = clusters.iter().filter(|c| !c.ready).count();
        return Err(NoClusterFit(format!(
            "0/{} clusters are available: {} not ready, {} not matching the cluster affinity",
            clusters.len(),
            not_ready,
            clusters.len() - not_ready
        )));
    }
    let rs = placement.replica_scheduling.clone().unwrap_or_default();
    let divided = rs.replica_scheduling_type.as_deref() == Some("Divided");
    if !divided || replicas <= 0 {
        let each = if replicas > 0 { replicas } else { 0 };
        return Ok(feasible.iter().map(|c| TargetCluster { name: c.name.clone(), replicas: each }).collect());
    }
    if rs.replica_division_preference.as_deref() == Some("Aggregated") {
        // Without capacity estimates, every replica fits the first cluster.
        return Ok(vec![TargetCluster { name: feasible[0].name.clone(), replicas }]);
    }
    let statics = rs.weight_preference.as_ref().map(|w| w.static_weight_list.as_slice()).unwrap_or_default();
    let mut weights: Vec<i64> = feasible
        .iter()
        .map(|c| {
            statics.iter().filter(|w| affinity_matches(Some(&w.target_cluster), c)).map(|w| w.weight).max().unwrap_or(0)
        })
        .collect();
    if weights.iter().all(|w| *w <= 0) {
        weights = vec![1; feasible.len()];
    }
    Ok(divide(replicas, &feasible, &weights))
}

/// Replicas in proportion to the weights: each cluster its whole share, then the remainder one by one
/// to the heaviest clusters (ties by name); clusters left with none are not targets.
fn divide(replicas: i32, clusters: &[&MemberCluster], weights: &[i64]) -> Vec<TargetCluster> {
    let total: i64 = weights.iter().map(|w| (*w).max(0)).sum();
    let mut shares: Vec<i64> = weights.iter().map(|w| (*w).max(0) * replicas as i64 / total).collect();
    let mut left = replicas as i64 - shares.iter().sum::<i64>();
    let mut by_weight: Vec<usize> = (0..clusters.len()).filter(|i| weights[*i] > 0).collect();
    by_weight.sort_by(|a, b| weights[*b].cmp(&weights[*a]).then_with(|| clusters[*a].name.cmp(&clusters[*b].name)));
    for i in by_weight.iter().cycle() {
        if left == 0 {
            break;
        }
        shares[*i] += 1;
        left -= 1;
    }
    clusters
        .iter()
        .zip(shares)
        .filter(|(_, n)| *n > 0)
        .map(|(c, n)| TargetCluster { name: c.name.clone(), replicas: n as i32 })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{ReplicaScheduling, StaticClusterWeight, WeightPreference};

    fn cluster(name: &str, ready: bool) -> MemberCluster {
        MemberCluster { name: name.into(), labels: [("region".to_string(), name.to_string())].into(), ready }
    }

    fn names(list: &[&str]) -> ClusterAffinity {
        ClusterAffinity { cluster_names: list.iter().map(|s| s.to_string()).collect(), ..Default::default() }
    }

    fn weighted(weights: &[(&str, i64)]) -> Placement {
        Placement {
            cluster_affinity: Some(names(&weights.iter().map(|(n, _)| *n).collect::<Vec<_>>())),
            replica_scheduling: Some(ReplicaScheduling {
                replica_scheduling_type: Some("Divided".into()),
                replica_division_preference: Some("Weighted".into()),
                weight_preference: Some(WeightPreference {
                    static_weight_list: weights
                        .iter()
                        .map(|(n, w)| StaticClusterWeight { target_cluster: names(&[n]), weight: *w })
                        .collect(),
                    dynamic_weight: None,
                }),
            }),
            ..Default::default()
        }
    }

    fn result(r: &[TargetCluster]) -> Vec<(String, i32)> {
        r.iter().map(|t| (t.name.clone(), t.replicas)).collect()
    }

    #[test]
    fn static_weights_divide_in_proportion_in_the_affinitys_order() {
        let clusters = [cluster("m3", true), cluster("m1", true), cluster("m2", true)];
        let r = schedule(&weighted(&[("m1", 2), ("m2", 2), ("m3", 1)]), 5, &clusters).unwrap();
        assert_eq!(result(&r), [("m1".into(), 2), ("m2".into(), 2), ("m3".into(), 1)]);
        // The remainder goes to the heaviest first; a cluster left with none is no target.
        let r = schedule(&weighted(&[("m1", 1), ("m2", 2), ("m3", 1)]), 2, &clusters).unwrap();
        assert_eq!(result(&r), [("m2".into(), 2)]);
        let r = schedule(&weighted(&[("m1", 1), ("m2", 1), ("m3", 1)]), 7, &clusters).unwrap();
        assert_eq!(result(&r), [("m1".into(), 3), ("m2".into(), 2), ("m3".into(), 2)]);
    }

    #[test]
    fn duplicated_gives_every_cluster_all_replicas_and_not_ready_clusters_none() {
        let clusters = [cluster("a", true), cluster("b", false), cluster("c", true)];
        let p = Placement { cluster_affinity: None, ..Default::default() };
        assert_eq!(result(&schedule(&p, 3, &clusters).unwrap()), [("a".into(), 3), ("c".into(), 3)]);
        let none = [cluster("b", false)];
        let err = schedule(&p, 3, &none).unwrap_err();
        assert!(err.0.contains("0/1 clusters are available: 1 not ready"), "{err:?}");
    }

    #[test]
    fn affinity_by_label_and_exclusion() {
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;
        let clusters = [cluster("a", true), cluster("b", true), cluster("c", true)];
        let affinity = ClusterAffinity {
            label_selector: Some(LabelSelector {
                match_expressions: Some(vec![LabelSelectorRequirement {
                    key: "region".into(),
                    operator: "In".into(),
                    values: Some(vec!["a".into(), "b".into()]),
                }]),
                ..Default::default()
            }),
            exclude: vec!["a".into()],
            ..Default::default()
        };
        let p = Placement { cluster_affinity: Some(affinity), ..Default::default() };
        assert_eq!(result(&schedule(&p, 0, &clusters).unwrap()), [("b".into(), 0)]);
    }

    #[test]
    fn divided_without_weights_is_even_and_aggregated_packs_the_first() {
        let clusters = [cluster("a", true), cluster("b", true)];
        let mut p = weighted(&[]);
        p.cluster_affinity = None;
        assert_eq!(result(&schedule(&p, 3, &clusters).unwrap()), [("a".into(), 2), ("b".into(), 1)]);
        p.replica_scheduling.as_mut().unwrap().replica_division_preference = Some("Aggregated".into());
        assert_eq!(result(&schedule(&p, 3, &clusters).unwrap()), [("a".into(), 3)]);
    }
}
