#!/usr/bin/env python3
"""The sample-controller's sync hook as an exec hook in Python: the request on stdin, the answer on
stdout; what goes to stderr lands in uc's log."""

import json
import sys

request = json.load(sys.stdin)
foo = request["parent"]
deploy = request.get("children", {}).get("Deployment.apps/v1", {}).get(foo["spec"]["deploymentName"])
labels = {"app": "sample"}
print(f"syncing {foo['metadata']['name']}", file=sys.stderr)
json.dump({
    "status": {"availableReplicas": (deploy or {}).get("status", {}).get("availableReplicas", 0)},
    "children": [{
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": foo["spec"]["deploymentName"], "namespace": foo["metadata"]["namespace"]},
        "spec": {"replicas": foo["spec"]["replicas"], "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels},
                              "spec": {"containers": [{"name": "nginx", "image": "nginx:stable"}]}}},
    }],
}, sys.stdout)
