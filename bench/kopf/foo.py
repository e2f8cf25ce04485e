"""The sample-controller (Foo -> Deployment + status) written with kopf, as a Python user would write it:
the convergence baseline of compare-bench. Run: kopf run --standalone --all-namespaces bench/kopf/foo.py"""

import kopf
import kubernetes


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_):
    settings.posting.enabled = False  # no Events: the uc and kube-rs controllers do not post any either
    settings.execution.max_workers = 20
    kubernetes.config.load_kube_config()


def deployment(name, namespace, replicas):
    labels = {"app": "sample", "controller": name}
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels},
                              "spec": {"containers": [{"name": "nginx", "image": "nginx:stable"}]}}},
    }


@kopf.on.create("njuics.cn", "v1alpha1", "foos")
@kopf.on.update("njuics.cn", "v1alpha1", "foos")
@kopf.on.resume("njuics.cn", "v1alpha1", "foos")
def reconcile(spec, meta, namespace, patch, **_):
    apps = kubernetes.client.AppsV1Api()
    body = deployment(spec["deploymentName"], namespace, spec.get("replicas", 1))
    kopf.adopt(body)
    available = 0
    try:
        current = apps.read_namespaced_deployment(spec["deploymentName"], namespace)
        if current.spec.replicas != body["spec"]["replicas"]:
            apps.patch_namespaced_deployment(spec["deploymentName"], namespace, {"spec": {"replicas": body["spec"]["replicas"]}})
        available = (current.status and current.status.available_replicas) or 0
    except kubernetes.client.ApiException as e:
        if e.status != 404:
            raise
        apps.create_namespaced_deployment(namespace, body)
    patch.status["availableReplicas"] = available
    patch.status["observedGeneration"] = meta["generation"]
