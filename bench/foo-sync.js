// The Foo hook of compare-bench and engine-bench: the thesis's listing 5.2
// (examples/sample-controller/sync.js) with availableReplicas defaulting to 0, as the benchmark's
// webhook, kube-rs and kopf controllers compute it. The listing reports `undefined` (dropped from the
// status) while a new Deployment has no availableReplicas, so each of its parents costs a second
// status write and a third hook call that the other controllers are not asked to make.
function sync(request) {
  var foo = request.parent;
  var deploys = request.children['Deployment.apps/v1'] || {};
  var current = deploys[foo.spec.deploymentName];
  var available = (current && current.status && current.status.availableReplicas) || 0;
  var labels = {app: 'sample'};
  return {
    status: {availableReplicas: available},
    children: [{
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: {name: foo.spec.deploymentName, namespace: foo.metadata.namespace},
      spec: {
        replicas: foo.spec.replicas,
        selector: {matchLabels: labels},
        template: {
          metadata: {labels: labels},
          spec: {containers: [{name: 'nginx', image: 'nginx:stable'}]}
        }
      }
    }]
  };
}
