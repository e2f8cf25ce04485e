module.exports = {
  handler: (event, context) => {
    let observed = event['data'];
    return reconcile(observed.parent, observed.children);
  }
};
var reconcile = function (foo, children) {
  let desiredChildren = [];
  let currentStatus = {};
  let allDeploys = children['Deployment.apps/v1'];
  let fooDeploy = allDeploys ? allDeploys[foo.spec.deploymentName] : null;
  let replicas = fooDeploy ? fooDeploy.status.availableReplicas
    : 0;
  currentStatus = {availableReplicas: replicas};// Set the status of Foo
  desiredChildren = [desiredDeployment(foo)];
  return {status: currentStatus, children: desiredChildren};
}
var desiredDeployment = function (foo) {
  let lbls = {app: "sample"};
  let deploy = {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: {
      name: foo.spec.deploymentName,
      namespace: foo.metadata.namespace,
    },
    spec: {
      replicas: foo.spec.replicas,
      selector: {matchLabels: lbls},
      template: {
        metadata: {labels: lbls},
        spec: {
          containers: [{
            name: "nginx",
            image: "nginx:stable"
          }]
        }
      }
    }
  };
  return deploy;
}
