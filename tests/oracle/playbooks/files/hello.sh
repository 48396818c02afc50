#!/bin/sh
echo "script args: $*"
echo "script host: $KK_SCRIPT_HOST"
exit ${EXIT_CODE:-0}
