// The thesis's listing 5.7 (CatSet: Pods and PVCs), lines 1-65, with the helpers the listing leaves
// out. Both the sync and the finalize hook run this file. Changes from the printed listing: its
// typesetting ('${...}' for `${...}`, "desciredChildren", ". ..") is undone, and the closing brace the
// print lost after line 15 is back.
module.exports = {
  handler: (event, context) => {
    let observed = event.data;
    let desiredChildren = [];
    let currentStatus = {};
    let finalized = false;
    let catset = observed.parent;
    // Arrange observed Pods by ordinal.
    let observedPods = {};
    if (observed.children && observed.children['Pod.v1']) {
      for (let pod of Object.values(observed.children['Pod.v1'])) {
        let ordinal = getOrdinal(catset.metadata.name, pod.metadata.name);
        if (ordinal >= 0) observedPods[ordinal] = pod;
      }
    }
    if (observed.finalizing) {
      // If the parent is being deleted, scale down to zero replicas.
      catset.spec.replicas = 0;
      // Mark the finalizer as done if there are no more Pods.
      finalized = (Object.keys(observedPods).length === 0);
    }
    for (var ready = 0; ready < catset.spec.replicas && isRunningAndReady(observedPods[ready]); ready++);
    currentStatus = {replicas: Object.keys(observedPods).length, readyReplicas: ready};
    let desiredPods = {};
    for (let ordinal in observedPods) {
      desiredPods[ordinal] = newPod(catset, ordinal);
    }
    // Fill in one missing Pod if all lower ordinals are Ready.
    if (ready < catset.spec.replicas && !(ready in desiredPods)) {
      desiredPods[ready] = newPod(catset, ready);
    }
    // If all desired Pods are Ready, see if we need to scale down.
    if (ready === catset.spec.replicas) {
      let maxOrdinal = Math.max(...Object.keys(desiredPods));
      if (maxOrdinal >= catset.spec.replicas) {
        delete desiredPods[maxOrdinal];
      }
    }
    // List Pods in descending order, since that determines rolling update order.
    for (let ordinal of Object.keys(desiredPods).sort((a, b) => a - b).reverse()) {
      desiredChildren.push(desiredPods[ordinal]);
    }
    if (catset.spec.volumeClaimTemplates) {
      let desiredPVCs = {};
      for (let template of catset.spec.volumeClaimTemplates) {
        let baseName = `${template.metadata.name}-${catset.metadata.name}`;
        for (let i = 0; i < catset.spec.replicas; i++) {
          desiredPVCs[i] = newPVC(`${baseName}-${i}`, template);
        }
        // Also generate a desired state for existing PVCs outside the range.
        // PVCs are retained after scale down, but are deleted with the CatSet.
        if (observed.children && observed.children['PersistentVolumeClaim.v1']) {
          for (let pvc of Object.values(observed.children['PersistentVolumeClaim.v1'])) {
            if (pvc.metadata.name.startsWith(baseName)) {
              let ordinal = getOrdinal(baseName, pvc.metadata.name);
              if (ordinal >= catset.spec.replicas) desiredPVCs[ordinal] = newPVC(pvc.metadata.name, template);
            }
          }
        }
        desiredChildren.push(...Object.values(desiredPVCs));
      }
    }
    return {children: desiredChildren, status: currentStatus, finalized: finalized};
  },
};

// The ordinal of `name` under `baseName` (`<baseName>-<ordinal>`), or -1.
function getOrdinal(baseName, name) {
  if (!name.startsWith(baseName + '-')) return -1;
  let rest = name.slice(baseName.length + 1);
  return /^(0|[1-9][0-9]*)$/.test(rest) ? parseInt(rest, 10) : -1;
}

function isRunningAndReady(pod) {
  return !!pod && !pod.metadata.deletionTimestamp && !!pod.status && pod.status.phase === 'Running' &&
    (pod.status.conditions || []).some((c) => c.type === 'Ready' && c.status === 'True');
}

// A Pod of the CatSet: the template with a stable name, hostname and subdomain, and one claim per
// volumeClaimTemplate.
function newPod(catset, ordinal) {
  let pod = JSON.parse(JSON.stringify(catset.spec.template));
  pod.apiVersion = 'v1';
  pod.kind = 'Pod';
  pod.metadata = pod.metadata || {};
  pod.metadata.name = `${catset.metadata.name}-${ordinal}`;
  pod.spec.hostname = pod.metadata.name;
  pod.spec.subdomain = catset.spec.serviceName;
  for (let template of catset.spec.volumeClaimTemplates || []) {
    pod.spec.volumes = pod.spec.volumes || [];
    pod.spec.volumes.push({
      name: template.metadata.name,
      persistentVolumeClaim: {claimName: `${template.metadata.name}-${catset.metadata.name}-${ordinal}`},
    });
  }
  return pod;
}

function newPVC(name, template) {
  let pvc = JSON.parse(JSON.stringify(template));
  pvc.apiVersion = 'v1';
  pvc.kind = 'PersistentVolumeClaim';
  pvc.metadata.name = name;
  return pvc;
}
