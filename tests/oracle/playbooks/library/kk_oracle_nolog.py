#!/usr/bin/python
# A module for the oracle fixture 317_no_log_python: writes whether it was told the task
# is no_log (ansible-core's _ansible_no_log, read by AnsibleModule as module.no_log).
from ansible.module_utils.basic import AnsibleModule


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            secret=dict(type="str", default=""),
        ),
        supports_check_mode=True,
    )
    path = module.params["path"]
    with open(path, "w") as f:
        f.write("no_log=%s\n" % module.no_log)
    module.exit_json(changed=True, msg="secret is %s" % module.params["secret"])


if __name__ == "__main__":
    main()
