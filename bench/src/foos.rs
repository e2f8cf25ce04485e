//! Foo parents (the sample-controller's) for the convergence benchmarks: creating N of them, and
//! measuring how far a controller has got.

use anyhow::Result;
use kube::Client;
use kube::api::{Api, DynamicObject, ListParams, PostParams};
use serde_json::{Value, json};

/// Creates `foo-0` .. `foo-<n-1>` with `writers` concurrent clients.
pub async fn create(foos: &Api<DynamicObject>, n: usize, writers: usize) -> Result<()> {
    let mut tasks = Vec::new();
    for w in 0..writers {
        let foos = foos.clone();
        tasks.push(tokio::spawn(async move {
            for i in (w..n).step_by(writers) {
                let parent: DynamicObject = serde_json::from_value(json!({"apiVersion": "njuics.cn/v1alpha1", "kind": "Foo",
                    "metadata": {"name": format!("foo-{i}")}, "spec": {"deploymentName": format!("foo-{i}"), "replicas": 1}}))?;
                foos.create(&PostParams::default(), &parent).await?;
            }
            anyhow::Ok(())
        }));
    }
    for t in tasks {
        t.await??;
    }
    Ok(())
}

/// How many Foos have a status for their current generation, and how many Deployments exist.
pub async fn progress(c: &Client, foos: &Api<DynamicObject>) -> Result<(usize, usize)> {
    let done = foos
        .list(&ListParams::default())
        .await?
        .items
        .iter()
        .filter(|f| f.data.pointer("/status/observedGeneration").and_then(Value::as_i64) == f.metadata.generation)
        .count();
    let deployments: Api<k8s_openapi::api::apps::v1::Deployment> = Api::namespaced(c.clone(), "default");
    let deps = deployments.list_metadata(&ListParams::default()).await?.items.len();
    Ok((done, deps))
}
