#!/usr/bin/python
# uc's operator_sdk.util.requeue_after: asks the operator to reconcile the resource again after a
# period (a Go duration); the operator reads the period from the task's result.
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: requeue_after
short_description: Reconcile the custom resource again after a period (uc's implementation)
options:
  time: {type: str, required: true}
"""

import re

from ansible.module_utils.basic import AnsibleModule


def main():
    module = AnsibleModule(argument_spec=dict(time=dict(type="str", required=True)))
    period = module.params["time"]
    if not re.match(r"^([0-9]+(\.[0-9]+)?(h|m|s|ms))+$", period):
        module.fail_json(msg="invalid time input")
    module.exit_json(changed=False, period=period)


if __name__ == "__main__":
    main()
