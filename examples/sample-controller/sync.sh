#!/bin/sh
# The sample-controller's sync hook (the thesis's listing 5.2) as an exec hook: the request on stdin,
# the answer on stdout, written with jq.
exec jq -c '
  .parent as $foo
  | ((.children["Deployment.apps/v1"] // {})[$foo.spec.deploymentName]) as $deploy
  | {status: {availableReplicas: (($deploy.status.availableReplicas) // 0)},
     children: [{
       apiVersion: "apps/v1", kind: "Deployment",
       metadata: {name: $foo.spec.deploymentName, namespace: $foo.metadata.namespace},
       spec: {replicas: $foo.spec.replicas,
              selector: {matchLabels: {app: "sample"}},
              template: {metadata: {labels: {app: "sample"}},
                         spec: {containers: [{name: "nginx", image: "nginx:stable"}]}}}}]}'
