#!/bin/sh
# A script inside a nested directory.
[ "$1" = "--list" ] && echo '{"nested": {"hosts": ["h1"]}, "_meta": {"hostvars": {"h1": {"nested_var": "deep"}}}}' || echo '{}'
