// The tensorflowjob controller (thesis section 5.2, listing 5.4 is its core): kubeflow tf-operator's
// semantics as one sync hook. Per replica type (PS, Worker, Chief, Evaluator) and index: one Pod and
// one headless Service named <job>-<type>-<index>, TF_CONFIG in the `tensorflow` container; status
// replicaStatuses and the conditions Created, Running, Restarting, Succeeded, Failed.
//
// Restart policies: Always / OnFailure / Never go to the pod (the node restarts containers);
// ExitCode makes the pod `Never` and this hook decides: a pod that failed with a retryable exit code
// (128 and up: killed by a signal) is deleted and created again, any other failure fails the job.
module.exports = {
  handler: (event, context) => {
    let observed = event.data;
    let tfjob = observed.parent;
    let status = deepCopy(tfjob.status || {});
    status.replicaStatuses = {};
    status.conditions = status.conditions || [];
    let desiredChildren = [];
    let observedPods = Object.values(observed.children['Pod.v1'] || {});
    let replicas = tfjob.spec.tfReplicaSpecs;
    let now = timestamp();
    if (!status.startTime) status.startTime = now;
    if (!hasCondition(status, 'Created')) {
      updateJobConditions(status, 'Created', 'TFJobCreated', `TFJob ${tfjob.metadata.name} is created.`, now);
    }
    let finished = isFinished(status);
    let restarting = [];
    let failed = [];
    let worker0Succeeded = false;
    let clean = ((tfjob.spec.runPolicy || {}).cleanPodPolicy) || 'Running';
    for (let rtype of Object.keys(replicas).sort()) {
      let spec = replicas[rtype];
      let rt = rtype.toLowerCase();
      status.replicaStatuses[rtype] = {active: 0, succeeded: 0, failed: 0};
      let pods = filterPodsForReplicaType(observedPods, rt);
      let numReplicas = spec.replicas === undefined ? 1 : spec.replicas;
      let podSlices = getPodSlices(pods, numReplicas);
      for (let index = 0; index < podSlices.length; index++) {
        let podSlice = podSlices[index];
        if (index >= numReplicas) continue; // scaled down: the pod and its service go
        if (podSlice.length === 0) {
          if (!finished) {
            desiredChildren.push(newSVC(tfjob, rtype, index));
            desiredChildren.push(newPod(tfjob, rtype, index));
          }
          continue;
        }
        let pod = podSlice[0];
        let phase = (pod.status || {}).phase;
        let exitCode = getContainerExitCode(pod);
        if (!finished && spec.restartPolicy === 'ExitCode' && phase === 'Failed' && isRetryableExitCode(exitCode)) {
          // Left out of the desired children, the pod is deleted; the next sync creates it again.
          restarting.push(`${rtype} ${index} (exit code ${exitCode})`);
          desiredChildren.push(newSVC(tfjob, rtype, index));
          continue;
        }
        if (phase === 'Running') {
          status.replicaStatuses[rtype].active++;
        } else if (phase === 'Succeeded') {
          status.replicaStatuses[rtype].succeeded++;
          if (rtype === 'Worker' && index === 0) worker0Succeeded = true;
        } else if (phase === 'Failed') {
          status.replicaStatuses[rtype].failed++;
          failed.push(rtype);
        }
        if (finished && (clean === 'All' || (clean === 'Running' && (phase === 'Running' || phase === 'Pending')))) {
          continue; // cleaned up once the job is done
        }
        desiredChildren.push(newSVC(tfjob, rtype, index));
        desiredChildren.push(newPod(tfjob, rtype, index));
      }
    }
    if (!finished) {
      updateStatus(tfjob, status, failed, restarting, worker0Succeeded, now);
    }
    return {status: status, children: desiredChildren};
  },
};

// The job's conditions from its replicas: Failed beats Succeeded beats Restarting beats Running.
function updateStatus(tfjob, status, failed, restarting, worker0Succeeded, now) {
  let name = tfjob.metadata.name;
  let specs = tfjob.spec.tfReplicaSpecs;
  let rs = status.replicaStatuses;
  if (failed.length > 0) {
    let rtype = failed[0];
    updateJobConditions(status, 'Failed', 'TFJobFailed',
      `TFJob ${name} has failed because ${rs[rtype].failed} ${rtype} replica(s) failed.`, now);
    status.completionTime = now;
    return;
  }
  let chief = Object.keys(specs).find((t) => t === 'Chief' || t === 'Master');
  let succeeded;
  if (chief) {
    succeeded = rs[chief].succeeded >= (specs[chief].replicas === undefined ? 1 : specs[chief].replicas);
  } else if (specs.Worker) {
    let workers = specs.Worker.replicas === undefined ? 1 : specs.Worker.replicas;
    let all = rs.Worker.succeeded >= workers;
    // By default worker 0 finishing ends the job (tf-operator's default success policy).
    succeeded = all || (tfjob.spec.successPolicy !== 'AllWorkers' && worker0Succeeded);
  }
  if (succeeded) {
    updateJobConditions(status, 'Succeeded', 'TFJobSucceeded', `TFJob ${name} successfully completed.`, now);
    status.completionTime = now;
  } else if (restarting.length > 0) {
    updateJobConditions(status, 'Restarting', 'TFJobRestarting',
      `TFJob ${name} is restarting because ${restarting.join(', ')} failed.`, now);
  } else if (Object.values(rs).some((r) => r.active > 0)) {
    updateJobConditions(status, 'Running', 'TFJobRunning', `TFJob ${name} is running.`, now);
  }
}

function filterPodsForReplicaType(pods, rt) {
  return pods.filter((p) => ((p.metadata.labels || {})['replica-type'] || '') === rt);
}

// Pods by replica index, including indexes beyond `replicas` (to be removed).
function getPodSlices(pods, replicas) {
  let slices = [];
  for (let i = 0; i < replicas; i++) slices.push([]);
  for (let pod of pods) {
    let index = parseInt((pod.metadata.labels || {})['replica-index'], 10);
    if (isNaN(index) || index < 0) continue;
    while (slices.length <= index) slices.push([]);
    slices[index].push(pod);
  }
  return slices;
}

function getContainerExitCode(pod) {
  for (let cs of ((pod.status || {}).containerStatuses || [])) {
    if (cs.name === 'tensorflow' && cs.state && cs.state.terminated) return cs.state.terminated.exitCode;
  }
  return 0xbeef;
}

// tf-operator: exit codes of 128 and above mean the process was killed by a signal and may succeed
// when run again; lower codes are the program's own failure.
function isRetryableExitCode(exitCode) {
  return exitCode >= 128 && exitCode !== 0xbeef;
}

function isFinished(status) {
  return hasCondition(status, 'Succeeded') || hasCondition(status, 'Failed');
}

function hasCondition(status, type) {
  return (status.conditions || []).some((c) => c.type === type && c.status === 'True');
}

// tf-operator's updateJobConditions: the newest condition goes last; Running and Restarting exclude
// each other, and a finished job is no longer Running.
function updateJobConditions(status, type, reason, message, now) {
  let conds = status.conditions;
  let current = conds.find((c) => c.type === type);
  if (current && current.status === 'True' && current.reason === reason && current.message === message) return;
  let cond = {type: type, status: 'True', reason: reason, message: message, lastUpdateTime: now,
              lastTransitionTime: current && current.status === 'True' ? current.lastTransitionTime : now};
  let off = {Running: ['Restarting'], Restarting: ['Running'], Succeeded: ['Running', 'Restarting'],
             Failed: ['Running', 'Restarting']}[type] || [];
  status.conditions = conds.filter((c) => c.type !== type).map((c) => {
    if (off.includes(c.type) && c.status === 'True') {
      return Object.assign({}, c, {status: 'False', lastUpdateTime: now, lastTransitionTime: now});
    }
    return c;
  });
  status.conditions.push(cond);
}

function labelsFor(tfjob, rtype, index) {
  return {'group-name': 'kubeflow.org', 'job-name': tfjob.metadata.name, 'tf-job-name': tfjob.metadata.name,
          'replica-type': rtype.toLowerCase(), 'replica-index': String(index)};
}

function portOf(spec) {
  for (let c of spec.template.spec.containers || []) {
    for (let p of c.ports || []) {
      if (p.name === 'tfjob-port') return p.containerPort;
    }
  }
  return 2222;
}

// The cluster spec of TF_CONFIG: every replica's address under its Service.
function clusterSpec(tfjob) {
  let cluster = {};
  let ns = tfjob.metadata.namespace;
  for (let rtype of Object.keys(tfjob.spec.tfReplicaSpecs)) {
    let spec = tfjob.spec.tfReplicaSpecs[rtype];
    let rt = rtype.toLowerCase();
    let n = spec.replicas === undefined ? 1 : spec.replicas;
    cluster[rt] = [];
    for (let i = 0; i < n; i++) cluster[rt].push(`${tfjob.metadata.name}-${rt}-${i}.${ns}.svc:${portOf(spec)}`);
  }
  return cluster;
}

function newPod(tfjob, rtype, index) {
  let spec = tfjob.spec.tfReplicaSpecs[rtype];
  let pod = deepCopy(spec.template);
  let rt = rtype.toLowerCase();
  pod.apiVersion = 'v1';
  pod.kind = 'Pod';
  pod.metadata = pod.metadata || {};
  pod.metadata.name = `${tfjob.metadata.name}-${rt}-${index}`;
  pod.metadata.labels = Object.assign({}, pod.metadata.labels || {}, labelsFor(tfjob, rtype, index));
  pod.spec.restartPolicy = spec.restartPolicy === 'ExitCode' || !spec.restartPolicy ? 'Never' : spec.restartPolicy;
  let tfConfig = JSON.stringify({cluster: clusterSpec(tfjob), task: {type: rt, index: index}, environment: 'cloud'});
  let containers = pod.spec.containers || [];
  let target = containers.find((c) => c.name === 'tensorflow') || containers[0];
  if (target) {
    target.env = (target.env || []).filter((e) => e.name !== 'TF_CONFIG');
    target.env.push({name: 'TF_CONFIG', value: tfConfig});
  }
  return pod;
}

function newSVC(tfjob, rtype, index) {
  let spec = tfjob.spec.tfReplicaSpecs[rtype];
  let port = portOf(spec);
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {name: `${tfjob.metadata.name}-${rtype.toLowerCase()}-${index}`,
               labels: labelsFor(tfjob, rtype, index)},
    spec: {clusterIP: 'None', selector: labelsFor(tfjob, rtype, index),
           ports: [{name: 'tfjob-port', port: port, targetPort: port}]},
  };
}

function deepCopy(o) {
  return JSON.parse(JSON.stringify(o));
}

function timestamp() {
  return new Date().toISOString().replace(/\.\d+Z$/, 'Z');
}
