#!/usr/bin/python
# uc's operator_sdk.util.k8s_event: records a Kubernetes Event about an object.
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: k8s_event
short_description: Record a Kubernetes Event (uc's implementation)
options:
  name: {type: str, required: true}
  namespace: {type: str, required: true}
  message: {type: str, required: true}
  reason: {type: str, required: true}
  type: {type: str, choices: [Normal, Warning], default: Normal}
  reportingComponent: {type: str}
  source: {type: dict}
  involvedObject: {type: dict, required: true}
  appendTimestamp: {type: bool}
  kubeconfig: {type: path}
"""

import datetime
import os

from ansible.module_utils.basic import AnsibleModule


def main():
    module = AnsibleModule(
        argument_spec=dict(
            name=dict(type="str", required=True),
            namespace=dict(type="str", required=True),
            message=dict(type="str", required=True),
            reason=dict(type="str", required=True),
            type=dict(type="str", choices=["Normal", "Warning"], default="Normal"),
            reportingComponent=dict(type="str"),
            source=dict(type="dict", options=dict(component=dict(type="str", required=True))),
            involvedObject=dict(type="dict", required=True, options=dict(
                apiVersion=dict(type="str", required=True), kind=dict(type="str", required=True),
                name=dict(type="str", required=True), namespace=dict(type="str", required=True))),
            appendTimestamp=dict(type="bool"),
            kubeconfig=dict(type="path"),
        ),
    )
    p = module.params
    from kubernetes import client, config
    from kubernetes.client.rest import ApiException

    kubeconfig = p["kubeconfig"] or os.environ.get("K8S_AUTH_KUBECONFIG") or os.environ.get("KUBECONFIG")
    api = client.CoreV1Api(config.new_client_from_config(config_file=kubeconfig))
    now = datetime.datetime.now(datetime.timezone.utc)
    name = p["name"] + ("." + now.strftime("%Y%m%d%H%M%S%f") if p["appendTimestamp"] else "")
    event = {
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": name, "namespace": p["namespace"]},
        "involvedObject": p["involvedObject"], "reason": p["reason"], "message": p["message"],
        "type": p["type"], "count": 1,
        "firstTimestamp": now.strftime("%Y-%m-%dT%H:%M:%SZ"), "lastTimestamp": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "source": p["source"] or {"component": p["reportingComponent"] or "ansible-operator"},
        "reportingComponent": p["reportingComponent"] or "",
    }
    try:
        result = api.create_namespaced_event(p["namespace"], event)
    except ApiException as exc:
        if exc.status != 409:
            module.fail_json(msg="Failed to create the event: {0}".format(exc.reason), status=exc.status)
        existing = api.read_namespaced_event(name, p["namespace"])
        result = api.patch_namespaced_event(name, p["namespace"], {
            "count": (existing.count or 1) + 1, "message": p["message"],
            "lastTimestamp": now.strftime("%Y-%m-%dT%H:%M:%SZ")})
    module.exit_json(changed=True, result=result.to_dict())


if __name__ == "__main__":
    main()
