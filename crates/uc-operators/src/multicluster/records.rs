//! Deployment records, exactly as seed 002 specifies them, as a pure function:
//!
//! 1. A new deployment may start when there is no record, or when the last one is `Ready` and its
//!    `observedGenerations["zookeeper"]` is less than the control plane's ZookeeperCluster's
//!    generation. A new record lists the clusters in the scheduling result's order, all `pending`,
//!    status `Deploying`.
//! 2. The last record then moves on: all clusters `completed` → nothing to do (`Ready`); none
//!    `deploying` and some `pending` → the first pending cluster starts deploying; one `deploying` →
//!    when its part is ready it is `completed` (and the next pending one starts).
//! 3. When every cluster is completed the record is `Ready`.
//!
//! Earlier records stay as history.

use std::collections::BTreeMap;

use super::types::Record;

pub const PENDING: &str = "pending";
pub const DEPLOYING: &str = "deploying";
pub const COMPLETED: &str = "completed";
pub const STATUS_DEPLOYING: &str = "Deploying";
pub const STATUS_READY: &str = "Ready";

/// The generations a deployment is of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Generations {
    pub multicluster: i64,
    pub zookeeper: i64,
}

fn state<'a>(r: &'a Record, key: &str) -> &'a [String] {
    r.current_state.get(key).map(Vec::as_slice).unwrap_or_default()
}

fn new_record(order: &[String], g: Generations, now: &str) -> Record {
    Record {
        observed_generations: BTreeMap::from([
            ("multiclusterzookeeper".to_string(), g.multicluster),
            ("zookeeper".to_string(), g.zookeeper),
        ]),
        order: order.to_vec(),
        status: STATUS_DEPLOYING.into(),
        current_state: BTreeMap::from([
            (PENDING.to_string(), order.to_vec()),
            (DEPLOYING.to_string(), Vec::new()),
            (COMPLETED.to_string(), Vec::new()),
        ]),
        last_transition_time: now.into(),
    }
}

/// Whether a new deployment may start (rule 1).
pub fn can_start(records: &[Record], zookeeper_generation: i64) -> bool {
    match records.last() {
        None => true,
        Some(last) => {
            let seen = last.observed_generations.get("zookeeper").copied().unwrap_or(0);
            seen < zookeeper_generation && last.status == STATUS_READY
        }
    }
}

/// The records after this sync: a new one when a deployment may start, and the last one moved on.
/// `ready(cluster)` says whether a cluster's part of the ensemble is deployed and serving.
pub fn advance(
    mut records: Vec<Record>,
    order: &[String],
    g: Generations,
    now: &str,
    ready: impl Fn(&str) -> bool,
) -> Vec<Record> {
    if can_start(&records, g.zookeeper) {
        records.push(new_record(order, g, now));
    }
    let Some(r) = records.last_mut() else { return records };
    loop {
        if state(r, COMPLETED).len() == r.order.len() {
            if r.status != STATUS_READY {
                r.status = STATUS_READY.into();
                r.last_transition_time = now.into();
            }
            break;
        }
        let deploying = state(r, DEPLOYING).to_vec();
        if deploying.is_empty() {
            let pending = state(r, PENDING).to_vec();
            let Some(next) = pending.first() else { break };
            r.current_state.insert(PENDING.into(), pending[1..].to_vec());
            r.current_state.insert(DEPLOYING.into(), vec![next.clone()]);
            r.last_transition_time = now.into();
            // Its part was just given to it: it is checked on the next sync.
            break;
        }
        let done: Vec<String> = deploying.iter().filter(|c| ready(c)).cloned().collect();
        if done.is_empty() {
            break;
        }
        let mut completed = state(r, COMPLETED).to_vec();
        completed.extend(done.iter().cloned());
        r.current_state.insert(COMPLETED.into(), completed);
        r.current_state.insert(DEPLOYING.into(), deploying.into_iter().filter(|c| !done.contains(c)).collect());
        r.last_transition_time = now.into();
    }
    records
}

#[cfg(test)]
mod tests {
    use super::*;

    fn order() -> Vec<String> {
        ["m1", "m2", "m3"].map(String::from).to_vec()
    }

    fn g(z: i64) -> Generations {
        Generations { multicluster: 1, zookeeper: z }
    }

    fn states(r: &Record) -> [Vec<String>; 3] {
        [PENDING, DEPLOYING, COMPLETED].map(|k| state(r, k).to_vec())
    }

    #[test]
    fn one_cluster_at_a_time_in_order_then_ready() {
        let mut ready: Vec<&str> = Vec::new();
        let r = advance(Vec::new(), &order(), g(2), "t0", |_| false);
        assert_eq!(r.len(), 1);
        assert_eq!(states(&r[0]), [vec!["m2".to_string(), "m3".into()], vec!["m1".into()], vec![]]);
        assert_eq!((r[0].status.as_str(), r[0].observed_generations["zookeeper"]), ("Deploying", 2));
        // m1 not ready yet: nothing moves.
        let r = advance(r, &order(), g(2), "t1", |c| ready.contains(&c));
        assert_eq!(states(&r[0])[1], ["m1"]);
        assert_eq!(r[0].last_transition_time, "t0");
        ready.push("m1");
        let r = advance(r, &order(), g(2), "t2", |c| ready.contains(&c));
        assert_eq!(states(&r[0]), [vec!["m3".to_string()], vec!["m2".into()], vec!["m1".into()]]);
        ready.extend(["m2", "m3"]);
        let r = advance(r, &order(), g(2), "t3", |c| ready.contains(&c));
        assert_eq!(states(&r[0])[1], ["m3"], "the next cluster starts only after the one before completed");
        let r = advance(r, &order(), g(2), "t4", |c| ready.contains(&c));
        assert_eq!(states(&r[0])[2], ["m1", "m2", "m3"]);
        assert_eq!((r[0].status.as_str(), r[0].last_transition_time.as_str()), ("Ready", "t4"));
        // Nothing changed: the record stays as it is.
        assert_eq!(advance(r.clone(), &order(), g(2), "t5", |_| true), r);
    }

    #[test]
    fn a_new_record_starts_only_when_the_last_is_ready_and_the_generation_moved() {
        let deploying = advance(Vec::new(), &order(), g(2), "t0", |_| false);
        assert_eq!(advance(deploying.clone(), &order(), g(3), "t1", |_| false).len(), 1, "the last is not Ready");
        let mut done = deploying;
        for t in 0..4 {
            done = advance(done, &order(), g(2), &format!("u{t}"), |_| true);
        }
        assert_eq!(done[0].status, "Ready");
        let again = advance(done.clone(), &order(), g(3), "v", |_| false);
        assert_eq!(again.len(), 2);
        assert_eq!(again[0], done[0], "record 1 stays as history");
        assert_eq!(
            (again[1].observed_generations["zookeeper"], states(&again[1])[1].clone()),
            (3, vec!["m1".to_string()])
        );
    }
}
