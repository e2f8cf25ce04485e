#!/usr/bin/env python3
"""The sample-controller sync hook as a webhook: the logic of the thesis's listing 5.2 in Python.

    python3 webhook.py 8080      # then apply controller-webhook.yaml
"""

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def sync(request):
    foo = request["parent"]
    deployments = request["children"].get("Deployment.apps/v1", {})
    current = deployments.get(foo["spec"]["deploymentName"])
    available = (current or {}).get("status", {}).get("availableReplicas", 0)
    labels = {"app": "sample"}
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": foo["spec"]["deploymentName"], "namespace": foo["metadata"]["namespace"]},
        "spec": {
            "replicas": foo["spec"]["replicas"],
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "nginx", "image": "nginx:stable"}]}},
        },
    }
    return {"status": {"availableReplicas": available}, "children": [deployment]}


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        answer = json.dumps(sync(json.loads(body))).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args):
        pass


if __name__ == "__main__":
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 8080
    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()
