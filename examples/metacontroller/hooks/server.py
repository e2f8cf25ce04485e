"""The hooks of the Hello CompositeController and the configmap-copier DecoratorController, as Metacontroller
webhooks: JSON in, JSON out. Plain HTTP on 8080; when a TLS Secret is mounted at /tls (tls.crt, tls.key,
token), also HTTPS on 8443, where every call must carry `Authorization: Bearer <token>`."""

import json
import os
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TLS_DIR = "/tls"
# uc's pods share the machine's network: each listens on its own address (POD_IP), so that the old and
# the new pod of a rollout can both serve. On Kubernetes POD_IP is unset and every address is taken.
ADDRESS = os.environ.get("POD_IP", "")


def hello_pod(hello, i):
    name = hello["metadata"]["name"]
    script = "import os, time; print(os.environ['MESSAGE'], flush=True); time.sleep(10**6)"
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": f"{name}-{i}", "labels": {"app": "hello", "hello": name}},
        "spec": {"containers": [{"name": "hello", "image": "python:3.11", "command": ["python", "-c", script],
                                 "env": [{"name": "MESSAGE", "value": hello["spec"]["message"]}]}]},
    }


def ready(pod):
    conditions = pod.get("status", {}).get("conditions", [])
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def sync_hello(request):
    """CompositeController sync and finalize (v1 hooks: children keyed by name)."""
    hello = request["parent"]
    pods = request["children"]["Pod.v1"]
    who = f'{hello["metadata"]["namespace"]}/{hello["metadata"]["name"]}'
    if request["finalizing"]:
        print(f"finalize {who}: {len(pods)} pods left", flush=True)
        return {"children": [], "finalized": not pods}
    desired = [hello_pod(hello, i) for i in range(hello["spec"].get("replicas", 1))]
    status = {"replicas": len(pods), "readyReplicas": sum(1 for p in pods.values() if ready(p)),
              "childKeys": sorted(pods)}
    return {"status": status, "children": desired}


def decorate(request):
    """DecoratorController sync (a v2 hook: attachments keyed namespace/name)."""
    cm = request["object"]
    meta = cm["metadata"]
    copy = {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": meta["name"] + "-copy", "namespace": meta["namespace"]},
            "data": cm.get("data", {})}
    seen = ",".join(sorted(request["attachments"]["ConfigMap.v1"]))
    return {"labels": {"example.com/copied": "true", "example.com/stale": None},
            "annotations": {"example.com/attachments": seen},
            "attachments": [copy]}


ROUTES = {"/sync": sync_hello, "/decorate": decorate}


def handler(token):
    class Hook(BaseHTTPRequestHandler):
        def do_POST(self):
            if token is not None and self.headers.get("Authorization") != f"Bearer {token}":
                print(f"refused {self.path}: wrong or missing bearer token", flush=True)
                return self.answer(401, {"error": "unauthorized"})
            route = ROUTES.get(self.path)
            if route is None:
                return self.answer(404, {"error": f"no hook at {self.path}"})
            request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            self.answer(200, route(request))

        def answer(self, code, body):
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, fmt, *args):
            print(f"{'https' if token is not None else 'http'} {fmt % args}", flush=True)

    return Hook


def main():
    servers = [ThreadingHTTPServer((ADDRESS, 8080), handler(None))]
    if os.path.exists(os.path.join(TLS_DIR, "tls.crt")):
        with open(os.path.join(TLS_DIR, "token")) as f:
            token = f.read().strip()
        secure = ThreadingHTTPServer((ADDRESS, 8443), handler(token))
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(os.path.join(TLS_DIR, "tls.crt"), os.path.join(TLS_DIR, "tls.key"))
        secure.socket = context.wrap_socket(secure.socket, server_side=True)
        servers.append(secure)
    for s in servers[1:]:
        threading.Thread(target=s.serve_forever, daemon=True).start()
    print(f"serving hooks on {', '.join(str(s.server_address[1]) for s in servers)}", flush=True)
    servers[0].serve_forever()


if __name__ == "__main__":
    main()
