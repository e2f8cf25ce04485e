//! HorizontalPodAutoscaler (autoscaling/v2), as kube's HPA controller reconciles one every 15 seconds
//! (`reconcileAutoscaler`): it reads the target's scale subresource and keeps its replicas within
//! `minReplicas`…`maxReplicas`, with kube's conditions, events and status. Between the bounds kube
//! follows the metrics; those come from the resource, custom and external metrics APIs
//! (`metrics.k8s.io`, …), which `uc up` does not serve, so the autoscaler says what kube's says in a
//! cluster without a metrics server: `ScalingActive` False, the metric unreadable, the replicas left.

use std::sync::Arc;

use k8s_openapi::api::autoscaling::v1::Scale;
use k8s_openapi::api::autoscaling::v2::{HorizontalPodAutoscaler, HorizontalPodAutoscalerCondition, MetricSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::PostParams;
use uc_api::hook::{SyncRequest, SyncResponse};
use uc_engine::dynamic::Kinds;
use uc_engine::events::Recorder;
use uc_engine::hooks::HookError;
use uc_engine::hooks::native::{self, AsyncSyncFn, NativeRegistry, SyncFuture};

use crate::objects::{decode, to_value};

/// The native hook's name.
pub const HOOK: &str = "horizontalpodautoscaler";

/// How often kube's controller looks at each autoscaler (`--horizontal-pod-autoscaler-sync-period`).
pub const SYNC_PERIOD_SECONDS: f64 = 15.0;

/// What one look at an autoscaler decides, from its bounds and the target's replicas.
#[derive(Debug, PartialEq, Eq)]
pub enum Step {
    /// The target has no replicas (and the bounds want some): scaling is off until someone scales it up.
    Disabled,
    /// The target is outside the bounds: scale it to `to`.
    Rescale { to: i32, reason: &'static str },
    /// Within the bounds: the metrics decide.
    FollowMetrics,
}

/// kube's first choice in `reconcileAutoscaler`, before any metric is read.
pub fn step(min: i32, max: i32, current: i32) -> Step {
    if current == 0 && min != 0 {
        Step::Disabled
    } else if current > max {
        Step::Rescale { to: max, reason: "Current number of replicas above Spec.MaxReplicas" }
    } else if current < min {
        Step::Rescale { to: min, reason: "Current number of replicas below Spec.MinReplicas" }
    } else {
        Step::FollowMetrics
    }
}

/// Why a metric cannot be read, as kube's controller reports it without the API that serves it:
/// the condition's reason and the words after "the HPA was unable to compute the replica count: ".
pub fn unreadable(metric: &MetricSpec) -> (&'static str, String) {
    let missing = |api: &str, resource: &str| {
        format!("unable to fetch metrics from {api} API: the server could not find the requested resource ({resource})")
    };
    let resource_metrics = missing("resource metrics", "get pods.metrics.k8s.io");
    match metric.type_.as_str() {
        "Resource" => {
            let name = metric.resource.as_ref().map(|r| r.name.as_str()).unwrap_or_default();
            let what = if metric.resource.as_ref().is_some_and(|r| r.target.average_value.is_some()) {
                "resource metric value"
            } else {
                "utilization"
            };
            let why =
                format!("failed to get {name} {what}: unable to get metrics for resource {name}: {resource_metrics}");
            ("FailedGetResourceMetric", why)
        }
        "ContainerResource" => {
            let name = metric.container_resource.as_ref().map(|r| r.name.as_str()).unwrap_or_default();
            let why = format!("failed to get {name} container metric value: {resource_metrics}");
            ("FailedGetContainerResourceMetric", why)
        }
        "Pods" => {
            let name = metric.pods.as_ref().map(|p| p.metric.name.as_str()).unwrap_or_default();
            let why = format!(
                "failed to get pods metric value: unable to get metric {name}: {}",
                missing("custom metrics", "get pods.custom.metrics.k8s.io")
            );
            ("FailedGetPodsMetric", why)
        }
        "Object" => {
            let name = metric.object.as_ref().map(|o| o.metric.name.as_str()).unwrap_or_default();
            let why = format!(
                "failed to get object metric value: unable to get metric {name}: {}",
                missing("custom metrics", "get custom.metrics.k8s.io")
            );
            ("FailedGetObjectMetric", why)
        }
        _ => {
            let name = metric.external.as_ref().map(|e| e.metric.name.as_str()).unwrap_or_default();
            let why = format!(
                "failed to get external metric {name}: {}",
                missing("external metrics", "get external.metrics.k8s.io")
            );
            ("FailedGetExternalMetric", why)
        }
    }
}

/// A condition of `type_`, its transition time kept from `previous` while its status stays.
fn condition(
    previous: &[HorizontalPodAutoscalerCondition],
    type_: &str,
    ok: bool,
    reason: &str,
    message: String,
) -> HorizontalPodAutoscalerCondition {
    let status = if ok { "True" } else { "False" };
    let before = previous.iter().find(|c| c.type_ == type_ && c.status == status);
    HorizontalPodAutoscalerCondition {
        type_: type_.into(),
        status: status.into(),
        reason: Some(reason.into()),
        message: Some(message),
        last_transition_time: before.and_then(|c| c.last_transition_time.clone()).or(Some(Time(Timestamp::now()))),
    }
}

/// Puts `c` in place of the condition of its type (kube's `setCondition`: the others stay as they were).
fn set(conditions: &mut Vec<HorizontalPodAutoscalerCondition>, c: HorizontalPodAutoscalerCondition) {
    match conditions.iter_mut().find(|x| x.type_ == c.type_) {
        Some(slot) => *slot = c,
        None => conditions.push(c),
    }
}

/// Registers the native hook; `client` reads and writes the targets' scale, and records Events.
pub fn register(natives: &mut NativeRegistry, client: kube::Client) {
    let events = Arc::new(Recorder::named(client.clone(), "horizontal-pod-autoscaler"));
    let kinds = Arc::new(Kinds::default());
    let hook: Arc<AsyncSyncFn> = Arc::new(move |request: SyncRequest| -> SyncFuture {
        let (client, events, kinds) = (client.clone(), events.clone(), kinds.clone());
        Box::pin(async move { sync(&client, &kinds, &events, request).await })
    });
    natives.register(HOOK, native::typed_async(hook));
}

/// Why the target's scale could not be read or written.
#[derive(Debug, thiserror::Error)]
enum ScaleError {
    /// Its kind is not served.
    #[error(transparent)]
    Kind(#[from] uc_engine::dynamic::DynamicError),
    /// The request failed.
    #[error("{}", uc_engine::dynamic::api_error(.0))]
    Request(#[from] kube::Error),
}

/// The target's scale subresource.
async fn read_scale(client: &kube::Client, kinds: &Kinds, hpa: &HorizontalPodAutoscaler) -> Result<Scale, ScaleError> {
    let (api, name) = target_api(client, kinds, hpa).await?;
    Ok(api.get_scale(&name).await?)
}

/// Writes `scale` with `to` replicas: as kube's controller, an update of what was read, so that a
/// change made meanwhile conflicts instead of being overwritten.
async fn write_scale(
    client: &kube::Client,
    kinds: &Kinds,
    hpa: &HorizontalPodAutoscaler,
    mut scale: Scale,
    to: i32,
) -> Result<(), ScaleError> {
    let (api, name) = target_api(client, kinds, hpa).await?;
    scale.spec.get_or_insert_with(Default::default).replicas = Some(to);
    api.replace_scale(&name, &PostParams::default(), &scale).await?;
    Ok(())
}

/// The API of the autoscaler's target kind in its namespace, and the target's name.
async fn target_api(
    client: &kube::Client,
    kinds: &Kinds,
    hpa: &HorizontalPodAutoscaler,
) -> Result<(kube::Api<kube::api::DynamicObject>, String), ScaleError> {
    let target = hpa.spec.as_ref().map(|s| s.scale_target_ref.clone()).unwrap_or_default();
    let api_version = target.api_version.as_deref().unwrap_or("v1");
    let kind = kinds.get(client, api_version, &target.kind).await?;
    let namespace = hpa.metadata.namespace.as_deref().unwrap_or_default();
    Ok((kind.api(client, namespace), target.name))
}

/// One look at an autoscaler. It answers with an error only for a request it cannot read: what goes
/// wrong with the target is in the status, as kube's controller puts it there.
async fn sync(
    client: &kube::Client,
    kinds: &Kinds,
    events: &Recorder,
    request: SyncRequest,
) -> Result<SyncResponse, HookError> {
    let hpa: HorizontalPodAutoscaler = decode("parent", &request.parent)?;
    let parent = &request.parent;
    let spec = hpa.spec.clone().unwrap_or_default();
    let mut status = hpa.status.clone().unwrap_or_default();
    let previous = status.conditions.take().unwrap_or_default();
    let mut conditions = previous.clone();
    match read_scale(client, kinds, &hpa).await {
        Err(e) => {
            let message = format!("the HPA controller was unable to get the target's current scale: {e}");
            events.record(parent, "Warning", "FailedGetScale", &e.to_string()).await;
            set(&mut conditions, condition(&previous, "AbleToScale", false, "FailedGetScale", message));
        }
        Ok(scale) => {
            let current = scale.spec.as_ref().and_then(|s| s.replicas).unwrap_or(0);
            let message = "the HPA controller was able to get the target's current scale".to_string();
            set(&mut conditions, condition(&previous, "AbleToScale", true, "SucceededGetScale", message));
            status.current_replicas = Some(current);
            let step = step(spec.min_replicas.unwrap_or(1), spec.max_replicas, current);
            let change = act((client, kinds, events), (&hpa, &request), scale, step).await;
            for c in change.conditions {
                set(&mut conditions, condition(&previous, c.0, c.1, c.2, c.3));
            }
            if let Some(to) = change.desired {
                status.desired_replicas = to;
            }
            if change.scaled {
                status.last_scale_time = Some(Time(Timestamp::now()));
            }
        }
    }
    status.conditions = Some(conditions);
    Ok(SyncResponse { status: Some(to_value("status", &status)?), ..Default::default() })
}

/// What acting on a [`Step`] changed: conditions (type, status, reason, message), the replicas
/// wanted when they are known, whether the target was scaled.
#[derive(Default)]
struct Change {
    conditions: Vec<(&'static str, bool, &'static str, String)>,
    desired: Option<i32>,
    scaled: bool,
}

/// Acts on a step: scales the target, or says why nothing is scaled; records kube's Events.
async fn act(
    (client, kinds, events): (&kube::Client, &Kinds, &Recorder),
    (hpa, request): (&HorizontalPodAutoscaler, &SyncRequest),
    scale: Scale,
    step: Step,
) -> Change {
    let parent = &request.parent;
    match step {
        Step::Disabled => {
            let message = "scaling is disabled since the replica count of the target is zero".to_string();
            Change {
                conditions: vec![("ScalingActive", false, "ScalingDisabled", message)],
                desired: Some(0),
                scaled: false,
            }
        }
        Step::Rescale { to, reason } => match write_scale(client, kinds, hpa, scale, to).await {
            Ok(()) => {
                events
                    .record(parent, "Normal", "SuccessfulRescale", &format!("New size: {to}; reason: {reason}"))
                    .await;
                let message = format!("the HPA controller was able to update the target scale to {to}");
                Change {
                    conditions: vec![("AbleToScale", true, "SucceededRescale", message)],
                    desired: Some(to),
                    scaled: true,
                }
            }
            Err(e) => {
                let words = format!("New size: {to}; reason: {reason}; error: {e}");
                events.record(parent, "Warning", "FailedRescale", &words).await;
                let message = format!("the HPA controller was unable to update the target scale: {e}");
                Change { conditions: vec![("AbleToScale", false, "FailedUpdateScale", message)], ..Default::default() }
            }
        },
        Step::FollowMetrics => {
            let metrics = hpa.spec.as_ref().and_then(|s| s.metrics.as_deref()).unwrap_or_default();
            let Some(first) = metrics.first() else { return Change::default() };
            let (reason, why) = unreadable(first);
            events.record(parent, "Warning", reason, &why).await;
            let n = metrics.len();
            let words = format!("invalid metrics ({n} invalid out of {n}), first error is: {why}");
            events.record(parent, "Warning", "FailedComputeMetricsReplicas", &words).await;
            let message = format!("the HPA was unable to compute the replica count: {why}");
            Change { conditions: vec![("ScalingActive", false, reason, message)], ..Default::default() }
        }
    }
}

#[cfg(test)]
mod tests;
