#!/usr/bin/python
# uc's operator_sdk.util.k8s_status: sets fields of a custom resource's status subresource, as the
# Operator SDK's collection of that name does (status merged into the current one; conditions merged
# by type, a condition replaced only when something besides lastTransitionTime changed).
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: k8s_status
short_description: Update the status of a Kubernetes custom resource (uc's implementation)
options:
  api_version: {type: str, required: true}
  kind: {type: str, required: true}
  name: {type: str, required: true}
  namespace: {type: str}
  status: {type: dict}
  conditions: {type: list, elements: dict}
  replace: {type: bool, default: false, aliases: [force]}
  replace_lists: {type: bool, default: false}
  kubeconfig: {type: path}
  context: {type: str}
"""

import copy
import datetime
import os

from ansible.module_utils.basic import AnsibleModule


def now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def merged_conditions(old, new):
    out = copy.deepcopy(old)
    for cond in new:
        cond = dict(cond)
        idx = next((i for i, c in enumerate(out) if c.get("type") == cond.get("type")), None)
        if idx is None:
            cond.setdefault("lastTransitionTime", now())
            out.append(cond)
        elif any(k != "lastTransitionTime" and v != out[idx].get(k) for k, v in cond.items()):
            if cond.get("status") != out[idx].get("status"):
                cond.setdefault("lastTransitionTime", now())
            else:
                cond.setdefault("lastTransitionTime", out[idx].get("lastTransitionTime", now()))
            out[idx] = cond
    return out


def merged(old, new, replace_lists):
    out = copy.deepcopy(old)
    for k, v in new.items():
        if k == "conditions" and isinstance(v, list):
            out[k] = merged_conditions(old.get(k) or [], v)
        elif isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = merged(out[k], v, replace_lists)
        else:
            out[k] = v
    return out


def main():
    module = AnsibleModule(
        argument_spec=dict(
            api_version=dict(type="str", required=True, aliases=["apiVersion"]),
            kind=dict(type="str", required=True),
            name=dict(type="str", required=True),
            namespace=dict(type="str"),
            status=dict(type="dict", default={}),
            conditions=dict(type="list", elements="dict", default=[]),
            replace=dict(type="bool", default=False, aliases=["force"]),
            replace_lists=dict(type="bool", default=False),
            kubeconfig=dict(type="path"),
            context=dict(type="str"),
        ),
        supports_check_mode=True,
    )
    p = module.params
    status = dict(p["status"] or {})
    if p["conditions"]:
        if status.get("conditions"):
            module.fail_json(msg="You cannot specify conditions in both the 'status' and 'conditions' parameters")
        status["conditions"] = p["conditions"]
    for c in status.get("conditions") or []:
        if not isinstance(c, dict) or not c.get("type") or c.get("status") not in ("True", "False", "Unknown"):
            module.fail_json(msg="The specified conditions failed to validate",
                             error="each condition needs a type and a status of True, False or Unknown")
    try:
        from kubernetes import config
        from kubernetes.dynamic import DynamicClient
        from kubernetes.dynamic.exceptions import DynamicApiError
    except ImportError:
        module.fail_json(msg="the kubernetes Python client is required (pip install kubernetes)")
    kubeconfig = p["kubeconfig"] or os.environ.get("K8S_AUTH_KUBECONFIG") or os.environ.get("KUBECONFIG")
    client = DynamicClient(config.new_client_from_config(config_file=kubeconfig, context=p["context"]))
    try:
        resource = client.resources.get(api_version=p["api_version"], kind=p["kind"])
        instance = resource.get(name=p["name"], namespace=p["namespace"]).to_dict()
    except DynamicApiError as exc:
        module.fail_json(msg="Failed to retrieve requested object", error=str(exc))
    except Exception as exc:  # discovery: the kind is not served
        module.fail_json(msg="Failed to find {0}.{1}: {2}".format(p["api_version"], p["kind"], exc))
    current = instance.get("status") or {}
    if p["replace"]:
        wanted = status
    elif not status:
        module.exit_json(changed=False, result=instance)
    else:
        wanted = merged(current, status, p["replace_lists"])
    if wanted == current:
        module.exit_json(changed=False, result=instance)
    if module.check_mode:
        module.exit_json(changed=True, result=instance)
    instance["status"] = wanted
    try:
        result = resource.status.replace(body=instance, namespace=p["namespace"]).to_dict()
    except DynamicApiError as exc:
        module.fail_json(msg="Failed to update status: {0}".format(exc), error=str(exc))
    module.exit_json(changed=True, result=result)


if __name__ == "__main__":
    main()
