#!/usr/bin/python
# uc's operator_sdk.util.osdk_metric: declares or changes a metric the operator exports (a counter,
# gauge, histogram or summary), posted to the operator (by default the address uc gives the run).
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: osdk_metric
short_description: Declare or change an operator metric (uc's implementation)
options:
  name: {type: str, required: true}
  description: {type: str, required: true}
  address: {type: str}
  counter: {type: dict}
  gauge: {type: dict}
  histogram: {type: dict}
  summary: {type: dict}
"""

import base64
import json
import os

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.urls import open_url


def main():
    module = AnsibleModule(
        argument_spec=dict(
            name=dict(type="str", required=True),
            description=dict(type="str", required=True),
            address=dict(type="str"),
            counter=dict(type="dict", options=dict(increment=dict(type="bool"), add=dict(type="float"))),
            gauge=dict(type="dict", options=dict(
                set=dict(type="float"), increment=dict(type="bool"), decrement=dict(type="bool"),
                add=dict(type="float"), subtract=dict(type="float"), set_to_current_time=dict(type="bool"))),
            histogram=dict(type="dict", options=dict(observe=dict(type="float"))),
            summary=dict(type="dict", options=dict(observe=dict(type="float"))),
        ),
        mutually_exclusive=[("counter", "gauge", "histogram", "summary")],
        required_one_of=[("counter", "gauge", "histogram", "summary")],
    )
    p = module.params
    payload = dict(name=p["name"], description=p["description"])
    for kind in ("counter", "gauge", "histogram", "summary"):
        if p[kind] is not None:
            payload[kind] = dict((k, v) for k, v in p[kind].items() if v is not None)
    address = p["address"] or os.environ.get("UC_OSDK_METRICS_URL") or "http://localhost:5050/metrics"
    headers = {"Content-Type": "application/json"}
    token = os.environ.get("UC_OSDK_METRICS_TOKEN")
    if token and not p["address"]:
        headers["Authorization"] = "Basic " + base64.b64encode(("metrics:" + token).encode()).decode()
    try:
        open_url(address, data=json.dumps(payload), headers=headers, method="POST")
    except Exception as exc:
        module.fail_json(msg="posting the metric to {0}: {1}".format(address, exc))
    module.exit_json(changed=True)


if __name__ == "__main__":
    main()
