//! Leader election with a `coordination.k8s.io/v1` Lease, as client-go's leaderelection does it:
//! candidates read the lease; the holder renews it every retry period; another candidate takes it over
//! only after it has seen the same record unchanged for the lease's duration (its own clock, so clocks
//! need not agree); a clean stop releases it (holder emptied) so a standby takes over at once.
//!
//! The leader's writes are fenced (`crate::guard::Fence`): each renewal lets them out until the renewal
//! was *sent* plus the renew deadline, shorter than the lease duration, so the leader has stopped
//! writing before any standby can see the lease expire.

use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::api::{Api, PostParams};
use kube::runtime::watcher;

/// Why leader-election timings do not hold together.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct TimingError(pub String);

impl From<String> for TimingError {
    fn from(message: String) -> Self {
        TimingError(message)
    }
}

impl From<&str> for TimingError {
    fn from(message: &str) -> Self {
        TimingError(message.to_string())
    }
}

impl From<TimingError> for String {
    fn from(e: TimingError) -> String {
        e.0
    }
}

/// Leader election settings (client-go's defaults: 15 s, 10 s, 2 s).
#[derive(Clone)]
pub struct LeaderElection {
    /// A client whose writes are not fenced (the lease's own).
    pub client: kube::Client,
    /// The lease's namespace.
    pub namespace: String,
    /// The lease's name.
    pub name: String,
    /// This candidate's name, unique among candidates.
    pub identity: String,
    /// How long a lease holds without renewal.
    pub lease_duration: Duration,
    /// How long the leader keeps trying to renew before it stops leading.
    pub renew_deadline: Duration,
    /// How often candidates try, and the leader renews.
    pub retry_period: Duration,
    /// Wait for the lease (a standby); `false`: refuse to start while another engine holds it.
    pub wait: bool,
}

impl LeaderElection {
    /// Settings with client-go's defaults.
    pub fn new(client: kube::Client, namespace: &str, name: &str, identity: &str, wait: bool) -> Self {
        Self {
            client,
            namespace: namespace.into(),
            name: name.into(),
            identity: identity.into(),
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
            wait,
        }
    }

    /// Settings that cannot work: the leader must give up before a standby may take over.
    pub fn validate(&self) -> Result<(), TimingError> {
        check_timing(self.lease_duration, self.renew_deadline, self.retry_period)
    }
}

/// Timings under which a standby could take over while the leader still writes are refused.
pub fn check_timing(
    lease_duration: Duration,
    renew_deadline: Duration,
    retry_period: Duration,
) -> Result<(), TimingError> {
    if renew_deadline >= lease_duration {
        return Err(TimingError::from(format!(
            "the renew deadline ({renew_deadline:?}) must be shorter than the lease duration ({lease_duration:?})"
        )));
    }
    if retry_period.is_zero() || retry_period >= renew_deadline {
        return Err(TimingError::from(format!(
            "the retry period ({retry_period:?}) must be positive and shorter than the renew deadline ({renew_deadline:?})"
        )));
    }
    Ok(())
}

/// The parts of a lease record that say whether its holder is alive: it changes on every renewal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    holder: String,
    renewed: String,
    transitions: i32,
}

impl Record {
    /// The record of a lease's spec.
    pub fn of(spec: &LeaseSpec) -> Self {
        Self {
            holder: spec.holder_identity.clone().unwrap_or_default(),
            renewed: spec.renew_time.as_ref().map(|t| t.0.to_string()).unwrap_or_default(),
            transitions: spec.lease_transitions.unwrap_or(0),
        }
    }
}

/// What a candidate does next.
#[derive(Debug, PartialEq, Eq)]
pub enum Step {
    /// Take the lease (it is free, or its holder stopped renewing).
    Acquire,
    /// Renew it (this candidate holds it).
    Renew,
    /// Another holds it, live; it expires in (at least) this long.
    Wait(Duration),
}

/// The next step of candidate `me` seeing `spec` at `now`, having first seen the same record at
/// `seen_since` (None: it just changed).
pub fn step(spec: Option<&LeaseSpec>, me: &str, seen_since: Option<Instant>, now: Instant, default: Duration) -> Step {
    let Some(spec) = spec else { return Step::Acquire };
    let holder = spec.holder_identity.as_deref().unwrap_or_default();
    if holder.is_empty() {
        return Step::Acquire;
    }
    if holder == me {
        return Step::Renew;
    }
    let duration =
        spec.lease_duration_seconds.filter(|s| *s > 0).map(|s| Duration::from_secs(s as u64)).unwrap_or(default);
    let since = seen_since.unwrap_or(now);
    match (since + duration).checked_duration_since(now) {
        Some(left) if !left.is_zero() => Step::Wait(left),
        _ => Step::Acquire,
    }
}

/// The spec this candidate writes to take (or renew) the lease at `now`.
pub fn claimed(current: Option<&LeaseSpec>, me: &str, duration: Duration, now: MicroTime) -> LeaseSpec {
    let mut spec = current.cloned().unwrap_or_default();
    let taking_over = spec.holder_identity.as_deref() != Some(me);
    if taking_over {
        spec.acquire_time = Some(now.clone());
        if current.is_some() {
            spec.lease_transitions = Some(spec.lease_transitions.unwrap_or(0) + 1);
        }
    }
    spec.holder_identity = Some(me.to_string());
    spec.lease_duration_seconds = Some(duration.as_secs().max(1) as i32);
    spec.renew_time = Some(now);
    spec
}

/// Why a candidate did not become leader.
#[derive(Debug, thiserror::Error)]
pub enum ElectionError {
    /// Another engine holds the lease and this one was not to wait.
    #[error(
        "another uc engine, {holder}, holds the lease {namespace}/{name} (renewed {renewed}, for {seconds} s): \
         two engines on the same controllers would both write. Stop it, or run every replica with \
         --leader-elect so that one leads and the others stand by"
    )]
    Held { holder: String, namespace: String, name: String, renewed: String, seconds: i32 },
    /// The API server refused or could not be reached.
    #[error("the lease {0}: {reason}", reason = crate::dynamic::api_error(.1))]
    Api(String, kube::Error),
}

/// A candidate's view of the lease, across calls.
pub struct Candidate {
    settings: LeaderElection,
    api: Api<Lease>,
    seen: Option<(Record, Instant)>,
    /// When the last try found another holder: how long until its lease expires, unrenewed.
    expires_in: Option<Duration>,
}

impl Candidate {
    /// A candidate with these settings.
    pub fn new(settings: LeaderElection) -> Self {
        let api = Api::namespaced(settings.client.clone(), &settings.namespace);
        Self { settings, api, seen: None, expires_in: None }
    }

    /// The settings.
    pub fn settings(&self) -> &LeaderElection {
        &self.settings
    }

    fn where_(&self) -> String {
        format!("{}/{}", self.settings.namespace, self.settings.name)
    }

    /// Refuses to go on when another live engine holds the lease (judged by its renew time on the
    /// wall clock: the one look a refusing candidate takes).
    pub async fn refuse_if_held(&self) -> Result<(), ElectionError> {
        let lease = self.api.get_opt(&self.settings.name).await.map_err(|e| ElectionError::Api(self.where_(), e))?;
        let Some(spec) = lease.and_then(|l| l.spec) else { return Ok(()) };
        let holder = spec.holder_identity.clone().unwrap_or_default();
        if holder.is_empty() || holder == self.settings.identity {
            return Ok(());
        }
        let seconds = spec.lease_duration_seconds.unwrap_or(15);
        let live = spec.renew_time.as_ref().is_some_and(|t| {
            let expires = t.0.as_millisecond() + i64::from(seconds) * 1000;
            expires > k8s_openapi::jiff::Timestamp::now().as_millisecond()
        });
        if !live {
            return Ok(());
        }
        Err(ElectionError::Held {
            holder,
            namespace: self.settings.namespace.clone(),
            name: self.settings.name.clone(),
            renewed: spec.renew_time.map(|t| t.0.to_string()).unwrap_or_default(),
            seconds,
        })
    }

    /// One try: reads the lease and takes or renews it if it may. `Ok(Some(sent))`: held, by a write
    /// sent at `sent`; `Ok(None)`: another holds it.
    pub async fn try_once(&mut self) -> Result<Option<Instant>, ElectionError> {
        let lease = self.api.get_opt(&self.settings.name).await.map_err(|e| ElectionError::Api(self.where_(), e))?;
        let now = Instant::now();
        let spec = lease.as_ref().and_then(|l| l.spec.clone());
        let record = spec.as_ref().map(Record::of);
        let since = match (&self.seen, &record) {
            (Some((seen, at)), Some(r)) if seen == r => Some(*at),
            _ => None,
        };
        if let Some(r) = record {
            self.seen = Some((r, since.unwrap_or(now)));
        }
        self.expires_in = None;
        let me = self.settings.identity.clone();
        match step(spec.as_ref(), &me, since, now, self.settings.lease_duration) {
            Step::Wait(left) => {
                self.expires_in = Some(left);
                return Ok(None);
            }
            Step::Acquire | Step::Renew => {}
        }
        let sent = Instant::now();
        let claimed =
            claimed(spec.as_ref(), &me, self.settings.lease_duration, MicroTime(k8s_openapi::jiff::Timestamp::now()));
        let result = match lease {
            Some(mut l) => {
                // The resourceVersion read: of two candidates taking an expired lease, one wins.
                l.spec = Some(claimed);
                self.api.replace(&self.settings.name, &PostParams::default(), &l).await
            }
            None => {
                let mut l = Lease { spec: Some(claimed), ..Default::default() };
                l.metadata.name = Some(self.settings.name.clone());
                self.api.create(&PostParams::default(), &l).await
            }
        };
        match result {
            Ok(_) => Ok(Some(sent)),
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(None),
            Err(e) => Err(ElectionError::Api(self.where_(), e)),
        }
    }

    /// How long a standby waits before trying again: until the holder's lease would expire unrenewed
    /// (so that it takes over right then), at most `retry_period`; a renewal seen on the watch wakes
    /// it earlier.
    pub fn next_try_in(&self) -> Duration {
        self.expires_in.map_or(self.settings.retry_period, |left| left.min(self.settings.retry_period))
    }

    /// Gives the lease up (holder emptied, duration 1 s), if this candidate holds it.
    pub async fn release(&self) -> Result<(), ElectionError> {
        let Some(mut lease) =
            self.api.get_opt(&self.settings.name).await.map_err(|e| ElectionError::Api(self.where_(), e))?
        else {
            return Ok(());
        };
        let Some(spec) = lease.spec.as_mut() else { return Ok(()) };
        if spec.holder_identity.as_deref() != Some(self.settings.identity.as_str()) {
            return Ok(());
        }
        spec.holder_identity = None;
        spec.lease_duration_seconds = Some(1);
        spec.renew_time = Some(MicroTime(k8s_openapi::jiff::Timestamp::now()));
        self.api
            .replace(&self.settings.name, &PostParams::default(), &lease)
            .await
            .map(|_| ())
            .map_err(|e| ElectionError::Api(self.where_(), e))
    }

    /// Waits up to `at_most` for the lease to change (a watch on it), so that a standby sees a
    /// release at once.
    pub async fn wait_for_change(&self, at_most: Duration) {
        let config = watcher::Config::default().fields(&format!("metadata.name={}", self.settings.name));
        let mut changes = std::pin::pin!(watcher(self.api.clone(), config).skip_while(|e| {
            let initial =
                matches!(e, Ok(watcher::Event::Init | watcher::Event::InitApply(_) | watcher::Event::InitDone));
            std::future::ready(initial)
        }));
        let _ = tokio::time::timeout(at_most, changes.next()).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(holder: &str, seconds: i32) -> LeaseSpec {
        LeaseSpec {
            holder_identity: Some(holder.into()),
            lease_duration_seconds: Some(seconds),
            renew_time: Some(MicroTime(k8s_openapi::jiff::Timestamp::now())),
            lease_transitions: Some(3),
            ..Default::default()
        }
    }

    const D: Duration = Duration::from_secs(15);

    #[test]
    fn a_missing_or_released_lease_is_taken() {
        let now = Instant::now();
        assert_eq!(step(None, "a", None, now, D), Step::Acquire);
        assert_eq!(step(Some(&spec("", 1)), "a", None, now, D), Step::Acquire);
        assert_eq!(step(Some(&LeaseSpec::default()), "a", None, now, D), Step::Acquire);
    }

    #[test]
    fn the_holder_renews() {
        assert_eq!(step(Some(&spec("a", 15)), "a", None, Instant::now(), D), Step::Renew);
    }

    #[test]
    fn another_holder_is_waited_out_from_when_its_record_was_first_seen() {
        let t0 = Instant::now();
        let s = spec("b", 4);
        assert_eq!(step(Some(&s), "a", None, t0, D), Step::Wait(Duration::from_secs(4)), "just seen: a full term");
        assert_eq!(step(Some(&s), "a", Some(t0), t0 + Duration::from_secs(3), D), Step::Wait(Duration::from_secs(1)));
        assert_eq!(step(Some(&s), "a", Some(t0), t0 + Duration::from_secs(4), D), Step::Acquire, "unchanged for 4 s");
    }

    #[test]
    fn a_takeover_moves_the_acquire_time_and_counts_a_transition() {
        let now = MicroTime(k8s_openapi::jiff::Timestamp::now());
        let taken = claimed(Some(&spec("b", 4)), "a", Duration::from_secs(6), now.clone());
        assert_eq!(taken.holder_identity.as_deref(), Some("a"));
        assert_eq!(taken.lease_transitions, Some(4));
        assert_eq!(taken.lease_duration_seconds, Some(6));
        assert_eq!(taken.acquire_time, Some(now.clone()));
        let renewed = claimed(Some(&taken), "a", Duration::from_secs(6), now.clone());
        assert_eq!(renewed.lease_transitions, Some(4), "a renewal is no transition");
        let created = claimed(None, "a", Duration::from_secs(6), now);
        assert_eq!(created.lease_transitions, None, "the first holder");
    }

    #[test]
    fn timings_where_a_standby_could_take_over_a_leader_still_writing_are_refused() {
        let s = Duration::from_secs;
        assert!(check_timing(s(15), s(10), s(2)).is_ok());
        assert!(check_timing(s(10), s(10), s(2)).is_err(), "renew deadline = lease duration");
        assert!(check_timing(s(15), s(10), s(0)).is_err());
        assert!(check_timing(s(15), s(2), s(2)).is_err(), "no second try before the deadline");
    }
}
