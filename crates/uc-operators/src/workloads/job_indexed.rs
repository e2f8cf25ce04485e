//! A Job of `completionMode: Indexed`, as kube's Job controller runs one: each pod has an index from 0
//! to `completions − 1` (label and annotation `batch.kubernetes.io/job-completion-index`, the hostname
//! `<job>-<index>`, the environment variable `JOB_COMPLETION_INDEX` in every container), is named
//! `<job>-<index>-<suffix>`, and the Job completes when every index has a pod that succeeded;
//! `status.completedIndexes` lists them as intervals (`0-2,4`). A failed index is run again by a new pod.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::{Container, EnvVar, EnvVarSource, ObjectFieldSelector, Pod};
use serde_json::Value;
use uc_engine::hooks::HookError;

use crate::objects::{PodView, decode, name_suffix, pod_from_template, to_value};

/// The label and annotation holding a pod's index.
pub const INDEX: &str = "batch.kubernetes.io/job-completion-index";

/// A pod's index, as its label says; None for one of no index or of one out of range.
pub(crate) fn index_of(pod: &PodView<'_>, completions: usize) -> Option<usize> {
    let labels = pod.metadata.as_ref()?.labels.as_ref()?;
    labels.get(INDEX)?.parse().ok().filter(|i| *i < completions)
}

/// The indexes a pod succeeded for.
pub(crate) fn succeeded(pods: &[(&String, PodView<'_>)], completions: usize) -> BTreeSet<usize> {
    let succeeded = pods.iter().filter(|(_, p)| p.phase() == "Succeeded");
    succeeded.filter_map(|(_, p)| index_of(p, completions)).collect()
}

/// The indexes as kube writes `completedIndexes`: ascending, runs of consecutive ones as `a-b`.
pub(crate) fn intervals(indexes: &BTreeSet<usize>) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut run: Option<(usize, usize)> = None;
    for &i in indexes {
        run = match run {
            Some((a, b)) if i == b + 1 => Some((a, i)),
            Some(r) => {
                out.push(interval(r));
                Some((i, i))
            }
            None => Some((i, i)),
        };
    }
    out.extend(run.map(interval));
    out.join(",")
}

fn interval((a, b): (usize, usize)) -> String {
    if a == b { a.to_string() } else { format!("{a}-{b}") }
}

/// The indexes to start pods for: the lowest that neither succeeded nor run now, `room` of them.
pub(crate) fn to_start(
    completions: usize,
    room: usize,
    completed: &BTreeSet<usize>,
    running: &BTreeSet<usize>,
) -> Vec<usize> {
    (0..completions).filter(|i| !completed.contains(i) && !running.contains(i)).take(room).collect()
}

/// The pod of `index` for a Job, named for its attempt `attempt` (a name not taken yet). The template
/// is read as a `Pod`: the API server stored it as its type, so nothing is lost.
pub(crate) fn pod_for(
    template: &Value,
    (job, uid): (&str, &str),
    index: usize,
    attempt: usize,
    namespace: Option<&str>,
) -> Result<Value, HookError> {
    let name = format!("{job}-{index}-{}", name_suffix(&format!("{uid}/{index}/{attempt}")));
    let mut pod: Pod = decode("the pod template", &pod_from_template(template, &name, namespace))?;
    let index_text = index.to_string();
    let labels = pod.metadata.labels.get_or_insert_with(Default::default);
    labels.insert("job-name".into(), job.into());
    labels.insert(INDEX.into(), index_text.clone());
    pod.metadata.annotations.get_or_insert_with(Default::default).insert(INDEX.into(), index_text);
    let spec = pod.spec.get_or_insert_with(Default::default);
    spec.hostname.get_or_insert_with(|| format!("{job}-{index}"));
    for c in spec.init_containers.iter_mut().flatten().chain(spec.containers.iter_mut()) {
        add_index_variable(c);
    }
    to_value("a pod", &pod)
}

/// `JOB_COMPLETION_INDEX` from the pod's label, unless the container sets it itself.
fn add_index_variable(container: &mut Container) {
    let env = container.env.get_or_insert_with(Vec::new);
    if env.iter().any(|e| e.name == "JOB_COMPLETION_INDEX") {
        return;
    }
    let field_ref = ObjectFieldSelector { field_path: format!("metadata.labels['{INDEX}']"), api_version: None };
    env.push(EnvVar {
        name: "JOB_COMPLETION_INDEX".into(),
        value_from: Some(EnvVarSource { field_ref: Some(field_ref), ..Default::default() }),
        value: None,
    });
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn completed_indexes_are_written_as_intervals() {
        let set = |v: &[usize]| v.iter().copied().collect::<BTreeSet<usize>>();
        assert_eq!(intervals(&set(&[])), "");
        assert_eq!(intervals(&set(&[0, 1, 2, 4])), "0-2,4");
        assert_eq!(intervals(&set(&[1, 3, 4, 5, 7, 8])), "1,3-5,7-8");
    }

    #[test]
    fn the_lowest_free_indexes_start() {
        let set = |v: &[usize]| v.iter().copied().collect::<BTreeSet<usize>>();
        assert_eq!(to_start(5, 2, &set(&[0]), &set(&[1])), [2, 3]);
        assert_eq!(to_start(3, 5, &set(&[0, 2]), &set(&[])), [1]);
    }

    #[test]
    fn an_indexed_pod_knows_its_index() {
        let template = json!({"metadata": {"labels": {"app": "a"}},
            "spec": {"containers": [{"name": "c", "image": "i"}, {"name": "d", "image": "i", "env": [{"name": "JOB_COMPLETION_INDEX", "value": "mine"}]}],
                     "initContainers": [{"name": "setup", "image": "i"}]}});
        let pod = pod_for(&template, ("work", "u"), 2, 0, Some("ns")).unwrap();
        let name = pod["metadata"]["name"].as_str().unwrap();
        assert!(name.starts_with("work-2-") && name.len() == "work-2-".len() + 5, "{name}");
        assert_eq!(pod["metadata"]["labels"][INDEX], "2");
        assert_eq!(pod["metadata"]["annotations"][INDEX], "2");
        assert_eq!(pod["spec"]["hostname"], "work-2");
        let from_label =
            json!({"fieldRef": {"fieldPath": "metadata.labels['batch.kubernetes.io/job-completion-index']"}});
        assert_eq!(pod["spec"]["containers"][0]["env"][0]["valueFrom"], from_label);
        assert_eq!(pod["spec"]["initContainers"][0]["env"][0]["valueFrom"], from_label);
        assert_eq!(pod["spec"]["containers"][1]["env"], json!([{"name": "JOB_COMPLETION_INDEX", "value": "mine"}]));
        let again = pod_for(&template, ("work", "u"), 2, 1, Some("ns")).unwrap();
        assert_ne!(again["metadata"]["name"], pod["metadata"]["name"], "a new attempt, a new name");
    }
}
