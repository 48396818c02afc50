#!/usr/bin/python
# A module written in Python for the oracle fixture 261_python_modules: kk runs it the way
# Ansible does when the controller has ansible-core (the payload carries module_utils).
from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_text


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            content=dict(type="str", default=""),
            fail=dict(type="bool", default=False),
        ),
        supports_check_mode=True,
    )
    path = module.params["path"]
    content = module.params["content"]
    if module.params["fail"]:
        module.fail_json(msg="asked to fail for %s" % path, path=path)
    try:
        with open(path) as f:
            current = to_text(f.read())
    except FileNotFoundError:
        current = None
    changed = current != content
    if changed and not module.check_mode:
        with open(path, "w") as f:
            f.write(content)
    module.exit_json(changed=changed, path=path, before=current, ansible_facts={"echo_last_path": path})


if __name__ == "__main__":
    main()
