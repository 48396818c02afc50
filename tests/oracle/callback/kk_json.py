# Ansible stdout callback that prints kk's `--output json` event stream.
#
# Used by tests/oracle/compare.py so that ansible-playbook and `kk run` can be
# compared event by event. One JSON object per line on stdout:
#   {"event":"play_start","play":…,"hosts":[…]}
#   {"event":"task_start","play":…,"task":…,"path":"file.yaml:12"}
#   {"event":"host_result","task":…,"host":…,"status":…,"changed":…,"ignored":…,"result":{…}}
#   {"event":"recap","hosts":{h:{ok,changed,failed,skipped,unreachable,rescued,ignored}},"elapsed_s":…}
# Task names are the names as written (no "role : " prefix); tasks of a role carry an
# extra "role" key. Handlers' task_start events carry "handler": true.
from __future__ import annotations

DOCUMENTATION = """
    name: kk_json
    type: stdout
    short_description: kk's JSON-lines event stream (for the kk oracle tests)
    description:
        - Prints play_start, task_start, host_result and recap events, one JSON object per line.
"""

import json
import os
import sys
import time

from ansible.plugins.callback import CallbackBase

# Keys of a task result that are timing / Ansible-internal and never compared.
_DROP_KEYS = {"invocation", "start", "end", "delta", "diff", "exception", "warnings", "deprecations"}


def _clean(value):
    """Recursively drop Ansible-internal keys (`_ansible_*`, invocation, timings)."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            k = str(k)
            if k.startswith("_ansible") or k in _DROP_KEYS:
                continue
            out[k] = _clean(v)
        return out
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        # Ansible 2.19 uses str/int subclasses carrying tags: make them plain.
        if isinstance(value, bool) or value is None:
            return value
        if isinstance(value, int):
            return int(value)
        if isinstance(value, float):
            return float(value)
        return str(value)
    return str(value)


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "stdout"
    CALLBACK_NAME = "kk_json"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._start = time.monotonic()
        self._play_name = ""
        self._base_dir = None

    # -- output -------------------------------------------------------------
    def _emit(self, obj):
        line = json.dumps(obj, ensure_ascii=False, default=str)
        sys.stdout.write(line + "\n")
        sys.stdout.flush()

    def _rel_path(self, path):
        if not path:
            return ""
        base = self._base_dir
        file_part, sep, line = path.rpartition(":")
        if not sep or not line.isdigit():
            file_part, line = path, ""
        if base and os.path.isabs(file_part):
            try:
                file_part = os.path.relpath(file_part, base)
            except ValueError:
                pass
        return f"{file_part}:{line}" if line else file_part

    # -- playbook events ----------------------------------------------------
    def v2_playbook_on_start(self, playbook):
        self._base_dir = os.path.abspath(playbook._basedir) if getattr(playbook, "_basedir", None) else os.getcwd()

    def v2_playbook_on_play_start(self, play):
        self._play_name = play.get_name().strip()
        hosts = []
        try:
            inventory = play.get_variable_manager()._inventory
            hosts = [h.name for h in inventory.get_hosts(play.hosts, order=play.order)]
        except Exception:  # noqa: BLE001 - the host list is informative only
            hosts = []
        # Hosts that failed (or were unreachable) in an earlier play do not run this one.
        # Only the TaskQueueManager knows them; it is the caller of this callback.
        gone = set()
        frame = sys._getframe(1)
        while frame is not None:
            tqm = frame.f_locals.get("self")
            if hasattr(tqm, "_failed_hosts") and hasattr(tqm, "_unreachable_hosts"):
                gone = set(tqm._failed_hosts) | set(tqm._unreachable_hosts)
                break
            frame = frame.f_back
        hosts = [h for h in hosts if h not in gone]
        self._emit({"event": "play_start", "play": self._play_name, "hosts": hosts})

    def _task_start(self, task, handler):
        ev = {
            "event": "task_start",
            "play": self._play_name,
            "task": str(task.name or task.action),
            "path": self._rel_path(task.get_path()),
        }
        if task._role:
            ev["role"] = task._role.get_name(include_role_fqcn=False)
        if handler:
            ev["handler"] = True
        self._emit(ev)

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._task_start(task, False)

    def v2_playbook_on_handler_task_start(self, task):
        self._task_start(task, True)

    # -- per-host results ---------------------------------------------------
    def _host_result(self, result, status, ignored=False):
        # ansible-core 2.19 names them task/result/host; 2.18 (kubespray's) _task/_result/_host.
        task = getattr(result, "task", None) or result._task
        raw = getattr(result, "result", None)
        if raw is None:
            raw = result._result
        host = getattr(result, "host", None) or result._host
        changed = bool(raw.get("changed", False))
        if status == "ok" and changed:
            status = "changed"
        result_dict = _clean(dict(raw))
        # Ansible strips the status keys from what callbacks see (the event type says
        # it); the registered variable has them, so put them back.
        if status == "failed":
            result_dict["failed"] = True
        elif status == "skipped":
            result_dict["skipped"] = True
        ev = {
            "event": "host_result",
            "task": str(task.name or task.action),
            "host": host.get_name(),
            "status": status,
            "changed": changed,
            "ignored": bool(ignored),
            "result": result_dict,
        }
        if task._role:
            ev["role"] = task._role.get_name(include_role_fqcn=False)
        self._emit(ev)

    def v2_runner_on_ok(self, result):
        self._host_result(result, "ok")

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._host_result(result, "failed", ignored=ignore_errors)

    def v2_runner_on_skipped(self, result):
        self._host_result(result, "skipped")

    def v2_runner_on_unreachable(self, result):
        self._host_result(result, "unreachable")

    # Loop items, retries, includes, diffs: not part of the stream.
    def v2_runner_item_on_ok(self, result):
        pass

    def v2_runner_item_on_failed(self, result):
        pass

    def v2_runner_item_on_skipped(self, result):
        pass

    def v2_runner_retry(self, result):
        pass

    def v2_on_file_diff(self, result):
        pass

    def v2_playbook_on_include(self, included_file):
        pass

    def v2_playbook_on_stats(self, stats):
        hosts = {}
        for h in sorted(stats.processed.keys()):
            s = stats.summarize(h)
            hosts[h] = {
                "ok": s["ok"],
                "changed": s["changed"],
                "failed": s["failures"],
                "skipped": s["skipped"],
                "unreachable": s["unreachable"],
                "rescued": s["rescued"],
                "ignored": s["ignored"],
            }
        self._emit({"event": "recap", "hosts": hosts, "elapsed_s": round(time.monotonic() - self._start, 3)})
