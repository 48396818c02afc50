#!/usr/bin/env python3
"""Ansible as oracle: run a fixture playbook under ansible-playbook and `kk run`, compare.

Usage:
  compare.py [options] PLAYBOOK...        compare the given fixtures (path or name like 07_loops)
  compare.py [options] --all              compare every playbooks/NN_*.yaml
  compare.py --ansible-only --all         only check that every fixture passes under Ansible
  compare.py --all --hosts-file H.json    both tools over SSH against real hosts h1..h3 (see SshHosts)

Both tools run from this directory with inventory.yaml, `-e oracle_root=<fresh tempdir>`
and the fixture's `# args:` header; compare.py creates each host's out_dir
(<oracle_root>/h1 .. h3) beforehand. Ansible prints kk's JSON event stream through
callback/kk_json.py; kk is asked for `--output json`. Both streams are normalised (each
oracle_root replaced by <ROOT>) and compared: the play list, the order of tasks (not for
`strategy: free`), per (task, host) the status, `ignored` and the result keys msg, rc,
stdout, stderr, stdout_lines, changed, failed, skipped, results (items reduced the same
way, plus item / loop var / index var / ansible_loop), the key a `debug: var=` prints,
the recap and the exit code; then the files each run left under its oracle_root
(relative path, content, mode).

Fixture header comments (comment lines at the top of the file):
  # args: --tags foo --skip-tags bar     extra arguments passed to both tools
  # expect-rc: 2                         Ansible's expected exit code (default 0)
  # env: ANSIBLE_GATHERING=smart          environment variables set for both tools
  # kk-differs: <reason> | skip: <selector>, <selector>
      a known, deliberate difference; mismatches matched by a selector are reported
      as "differs by design" instead of failing. Selectors:
        task:<glob>      results (and order/path entries) of tasks whose name matches
        task:<glob>@<h>  the same, only for hosts matching glob <h>
        A&B              both A and B must match, e.g. task:Show x&key:msg
        key:<name>       one result key (also inside loop items), e.g. key:msg
        file:<glob>      files whose relative path matches, e.g. file:*/merged.txt
        recap[:<h>]      recap counters (of hosts matching <h>)
        rc | order | paths | plays
  # ssh-differs: <reason> | skip: ...     the same, honoured only with --hosts-file
  # ssh-skip: <reason>                    not run with --hosts-file (reported as skipped)
  # ssh-only: <reason>                    run only with --hosts-file: the fixture changes the
                                          system it runs on (packages, users, mounts...), so it
                                          must not run on the controller (reported as skipped)
  # inventory: inventories/100/hosts h9,  the fixture's inventory sources instead of inventory.yaml,
                                          each passed as `-i` (paths relative to this directory,
                                          or host lists); with --hosts-file a generated YAML
                                          inventory giving h1..h3 their SSH settings is added last
Missing `changed`, `failed` and `skipped` keys count as false. Exit status: 0 when every
fixture passed; the last line is always `N passed, M failed` (with --hosts-file followed
by `, K skipped over SSH (Ts)`).
"""
from __future__ import annotations

import argparse
import concurrent.futures
import difflib
import fnmatch
import json
import os
import re
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(os.path.dirname(HERE))
PLAYBOOK_DIR = os.path.join(HERE, "playbooks")
INVENTORY = "inventory.yaml"
RESULT_KEYS = ("msg", "rc", "stdout", "stderr", "stdout_lines", "changed", "failed", "skipped")
BOOL_KEYS = ("changed", "failed", "skipped")
ROOT_MARK = "<ROOT>"
ORACLE_MARK = "<ORACLE>"


# --------------------------------------------------------------------------- fixtures
class Fixture:
    """A fixture playbook and the directives of its header comments."""

    def __init__(self, path: str):
        self.path = os.path.abspath(path)
        self.name = os.path.splitext(os.path.basename(path))[0]
        self.args: list[str] = []
        self.env: dict[str, str] = {}  # `# env:` NAME=value pairs, set for both tools
        self.expect_rc = 0
        self.differs: list[tuple[str, list[str]]] = []  # (reason, selectors)
        self.ssh_differs: list[tuple[str, list[str]]] = []  # the same, only with --hosts-file
        self.header_errors: list[str] = []
        self.free = False
        self.ssh_skip: str | None = None  # reason from `# ssh-skip:`; honoured with --hosts-file
        self.ssh_only: str | None = None  # reason from `# ssh-only:`; not run without --hosts-file
        self.inventories: list[str] = []  # `# inventory:` sources; empty = the shared inventory.yaml
        self.kk_python = False  # `# kk-python:` kk may run modules written in Python (ansible-core on the controller)
        self._parse()

    def _parse(self) -> None:
        try:
            with open(self.path, encoding="utf-8") as f:
                text = f.read()
        except OSError as e:
            self.header_errors.append(f"cannot read fixture: {e}")
            return
        self.free = re.search(r"^\s*strategy:\s*['\"]?free", text, re.M) is not None
        for line in text.splitlines():
            s = line.strip()
            if not s or s == "---":
                continue
            if not s.startswith("#"):
                break
            body = s.lstrip("#").strip()
            m = re.match(r"(args|env|expect-rc|kk-differs|ssh-differs|ssh-skip|ssh-only|inventory|kk-python)\s*:\s*(.*)$", body)
            if not m:
                continue
            key, value = m.group(1), m.group(2).strip()
            if key == "args":
                try:
                    self.args += shlex.split(value)
                except ValueError as e:
                    self.header_errors.append(f"bad '# args:' header: {e}")
            elif key == "env":
                for pair in value.split():
                    name, eq, val = pair.partition("=")
                    if not eq or not re.fullmatch(r"[A-Z_][A-Z0-9_]*", name):
                        self.header_errors.append(f"bad '# env:' header: expected NAME=value, found {pair!r}")
                    else:
                        self.env[name] = val
            elif key == "kk-python":
                self.kk_python = True
            elif key == "inventory":
                for src in value.split():
                    if "," not in src and not os.path.exists(os.path.join(HERE, src)):
                        self.header_errors.append(f"bad '# inventory:' header: {src} does not exist")
                    self.inventories.append(src)
            elif key in ("ssh-skip", "ssh-only"):
                if not value:
                    self.header_errors.append(f"bad '# {key}:' header: give the reason")
                if key == "ssh-skip":
                    self.ssh_skip = value or "no reason given"
                else:
                    self.ssh_only = value or "no reason given"
            elif key == "expect-rc":
                try:
                    self.expect_rc = int(value)
                except ValueError:
                    self.header_errors.append(f"bad '# expect-rc:' header: {value!r} is not an integer")
            else:
                reason, sep, skip = value.partition("| skip:")
                if not sep:
                    self.header_errors.append(
                        f"bad '# {key}:' header: expected '<reason> | skip: <selector>, ...'"
                    )
                    continue
                sels = [x.strip() for x in skip.split(",") if x.strip()]
                (self.differs if key == "kk-differs" else self.ssh_differs).append((reason.strip(), sels))


def find_fixtures(names: list[str], all_: bool) -> list[Fixture]:
    paths: list[str] = []
    if all_:
        for n in sorted(os.listdir(PLAYBOOK_DIR)):
            if re.match(r"^\d{2,3}_.*\.ya?ml$", n):
                paths.append(os.path.join(PLAYBOOK_DIR, n))
    for n in names:
        cands = [n, os.path.join(PLAYBOOK_DIR, n), os.path.join(PLAYBOOK_DIR, n + ".yaml")]
        found = next((c for c in cands if os.path.isfile(c)), None)
        if found is None:
            matches = sorted(x for x in os.listdir(PLAYBOOK_DIR) if x.startswith(n) and x.endswith(".yaml"))
            if len(matches) == 1:
                found = os.path.join(PLAYBOOK_DIR, matches[0])
        if found is None:
            raise SystemExit(f"compare.py: no fixture named {n!r} (looked in {PLAYBOOK_DIR})")
        paths.append(found)
    return [Fixture(p) for p in paths]


# --------------------------------------------------------------------------- running
class Run:
    """One tool's run of one fixture: exit code, parsed events, files, problems."""

    def __init__(self, tool: str):
        self.tool = tool
        self.rc: int | None = None
        self.events: list[dict] = []
        self.stdout = ""
        self.stderr = ""
        self.problems: list[str] = []  # fatal: the run itself did not work
        self.files: dict[str, dict] = {}
        self.elapsed = 0.0
        self.root = ""


def ansible_playbook_bin() -> str | None:
    venv = os.environ.get("KK_ORACLE_VENV", "target/oracle-venv")
    if not os.path.isabs(venv):
        venv = os.path.join(REPO_ROOT, venv)
    cand = os.path.join(venv, "bin", "ansible-playbook")
    if os.path.exists(cand):
        return cand
    return shutil.which("ansible-playbook")


def _run_process(run: Run, cmd: list[str], env: dict, timeout: float) -> None:
    start = time.monotonic()
    try:
        p = subprocess.run(
            cmd,
            cwd=HERE,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            timeout=timeout,
        )
    except FileNotFoundError:
        run.problems.append(f"{run.tool}: executable not found: {cmd[0]}")
        return
    except PermissionError as e:
        run.problems.append(f"{run.tool}: cannot execute {cmd[0]}: {e}")
        return
    except subprocess.TimeoutExpired as e:
        run.elapsed = time.monotonic() - start
        run.stdout = _decode(e.stdout)
        run.stderr = _decode(e.stderr)
        run.problems.append(f"{run.tool}: timed out after {timeout:.0f}s")
        _parse_events(run)
        return
    except OSError as e:
        run.problems.append(f"{run.tool}: cannot run {cmd[0]}: {e}")
        return
    run.elapsed = time.monotonic() - start
    run.rc = p.returncode
    run.stdout = _decode(p.stdout)
    run.stderr = _decode(p.stderr)
    if p.returncode < 0:
        run.problems.append(f"{run.tool}: killed by signal {-p.returncode} (crash?)")
    _parse_events(run)
    if not any(e.get("event") == "recap" for e in run.events) and run.rc not in (4, 5):
        # No recap is only normal when the playbook did not parse / options were bad.
        run.problems.append(f"{run.tool}: no 'recap' event in its output (exit code {run.rc})")


def _decode(b) -> str:
    if b is None:
        return ""
    if isinstance(b, str):
        return b
    return b.decode("utf-8", errors="replace")


def _parse_events(run: Run) -> None:
    bad = 0
    for line in run.stdout.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            ev = json.loads(line)
        except json.JSONDecodeError:
            bad += 1
            continue
        if isinstance(ev, dict) and "event" in ev:
            run.events.append(ev)
    if bad:
        run.problems.append(f"{run.tool}: {bad} line(s) of stdout look like JSON but do not parse")


HOSTS_WITH_OUT_DIR = ("h1", "h2", "h3")


def make_root(root: str) -> None:
    """A fresh oracle_root holding each inventory host's (empty) out_dir."""
    for h in HOSTS_WITH_OUT_DIR:
        os.makedirs(os.path.join(root, h))
        os.chmod(os.path.join(root, h), 0o755)


class SshHosts:
    """The real hosts of `--hosts-file`: both tools reach h1..h3 over SSH instead of
    `ansible_connection: local`.

    The file is JSON: {"h1": {"ip": "10.0.0.11", "port": 22, "key": "/path/id_ed25519",
    "user": "root"}, ...} (port 22 and user root by default); it must name every inventory
    host with an out_dir. Each run's oracle_root is the same absolute path on the
    controller and on every host (a fresh local temp dir, created on the hosts before the
    run and removed after it), so `{{ oracle_root }}` means "this run's directory" wherever
    a task runs: on the hosts for ordinary tasks, on the controller for fetch dest,
    delegate_to: localhost and `ansible_connection: local` hosts. After the run the files
    under it are read from every host (tar over SSH) and from the controller; their paths
    in the comparison are `<where>:<relative path>`, `<where>` being the host or
    `controller`.
    """

    SSH_OPTS = ["-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
                "-o", "LogLevel=ERROR", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10"]

    def __init__(self, path: str):
        try:
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
        except (OSError, ValueError) as e:
            raise SystemExit(f"compare.py: cannot read --hosts-file {path}: {e}")
        if not isinstance(data, dict):
            raise SystemExit(f"compare.py: --hosts-file {path}: expected a JSON object host -> {{ip, port, key}}")
        self.hosts: dict[str, dict] = {}
        for h in HOSTS_WITH_OUT_DIR:
            spec = data.get(h)
            if not isinstance(spec, dict) or not spec.get("ip") or not spec.get("key"):
                raise SystemExit(f"compare.py: --hosts-file {path}: host {h!r} needs at least \"ip\" and \"key\"")
            self.hosts[h] = {"ip": str(spec["ip"]), "port": int(spec.get("port", 22)),
                             "key": os.path.abspath(str(spec["key"])), "user": str(spec.get("user", "root"))}
        # Control sockets: compare.py's own masters and (a subdir) Ansible's, shared by all
        # runs of this invocation and closed at the end.
        self.ctl = tempfile.mkdtemp(prefix="kk-oracle-ssh-")
        self.ansible_cp = os.path.join(self.ctl, "ansible")
        os.makedirs(self.ansible_cp)

    def _ssh(self, host: str, cmd: str, timeout: float = 120.0) -> subprocess.CompletedProcess:
        h = self.hosts[host]
        argv = ["ssh", "-i", h["key"], "-p", str(h["port"])] + self.SSH_OPTS + [
            "-o", "ControlMaster=auto", "-o", f"ControlPath={self.ctl}/%C", "-o", "ControlPersist=300",
            f"{h['user']}@{h['ip']}", cmd]
        return subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              timeout=timeout)

    def _each(self, fn) -> dict:
        with concurrent.futures.ThreadPoolExecutor(max_workers=len(self.hosts)) as pool:
            futs = {h: pool.submit(fn, h) for h in self.hosts}
            return {h: f.result() for h, f in futs.items()}

    def prepare(self, root: str) -> list[str]:
        """A fresh root with every out_dir on every host; problems, if any."""
        dirs = " ".join(shlex.quote(os.path.join(root, h)) for h in HOSTS_WITH_OUT_DIR)
        cmd = f"rm -rf {shlex.quote(root)} && mkdir -p {dirs} && chmod 755 {dirs}"
        out = self._each(lambda h: self._ssh(h, cmd))
        return [f"cannot prepare {root} on {h}: {_decode(p.stderr).strip()} (ssh exit {p.returncode})"
                for h, p in out.items() if p.returncode != 0]

    def collect(self, root: str, keep: bool) -> tuple[dict[str, dict], list[str]]:
        """Every file under root on every host (then removed unless keep), keyed `host:rel`."""
        q = shlex.quote(root)
        cmd = f"tar -C {q} -cf - . ; rc=$?; " + ("" if keep else f"rm -rf {q}; ") + "exit $rc"
        out = self._each(lambda h: self._ssh(h, cmd))
        files: dict[str, dict] = {}
        problems: list[str] = []
        for h, p in out.items():
            if p.returncode != 0:
                problems.append(f"cannot read {root} on {h}: {_decode(p.stderr).strip()} (ssh exit {p.returncode})")
                continue
            for rel, info in snapshot_tar(p.stdout, root).items():
                files[f"{h}:{rel}"] = info
        return files, problems

    def inventory(self, tmp: str, tool: str) -> str:
        """inventory.yaml with SSH settings instead of `ansible_connection: local`, written
        to <tmp>/oracle/inventory.yaml (so inventory_dir / inventory_file keep their
        basenames); returns its path."""
        with open(os.path.join(HERE, INVENTORY), encoding="utf-8") as f:
            lines = f.read().splitlines()
        out = [f"# Generated by compare.py --hosts-file from {INVENTORY}: h1..h3 are real hosts over SSH."]
        dropped = False
        injected: set[str] = set()
        in_all_hosts = False
        for ln in lines:
            if re.match(r"^    ansible_connection:\s*local\s*$", ln):
                dropped = True
                continue
            out.append(ln)
            if ln.rstrip() == "  hosts:":
                in_all_hosts = True
                continue
            if in_all_hosts and re.match(r"^  \S", ln):
                in_all_hosts = False
            m = re.match(r"^    ([A-Za-z0-9_.-]+):\s*$", ln) if in_all_hosts else None
            if m and m.group(1) in self.hosts:
                h = self.hosts[m.group(1)]
                hv = {
                    "ansible_connection": "ssh",
                    "ansible_host": h["ip"],
                    "ansible_port": h["port"],
                    "ansible_user": h["user"],
                    "ansible_ssh_private_key_file": h["key"],
                    "ansible_python_interpreter": "/usr/bin/python3",
                }
                if tool == "ansible":
                    # kk keeps host keys in its own work dir; Ansible would use ~/.ssh.
                    hv["ansible_ssh_common_args"] = "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null"
                out += [f"      {k}: {json.dumps(v)}" for k, v in hv.items()]
                injected.add(m.group(1))
        missing = sorted(set(self.hosts) - injected)
        if not dropped or missing:
            raise RuntimeError(f"cannot turn {INVENTORY} into an SSH inventory (the all-vars line "
                               f"'ansible_connection: local' found: {dropped}; hosts not found under all.hosts: {missing})")
        d = os.path.join(tmp, "oracle")
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, "inventory.yaml")
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(out) + "\n")
        return path

    def ssh_vars_inventory(self, tmp: str, tool: str) -> str:
        """A YAML inventory giving h1..h3 their SSH settings as host variables, for fixtures
        with their own `# inventory:` (given as the last `-i`, its host variables beat the
        fixture's group and all variables); written to <tmp>/oracle-ssh/ssh_hosts.yaml, a
        directory without group_vars/; returns its path."""
        out = ["# Generated by compare.py --hosts-file: h1..h3 are real hosts over SSH.", "all:", "  hosts:"]
        for name, h in self.hosts.items():
            hv = {
                "ansible_connection": "ssh",
                "ansible_host": h["ip"],
                "ansible_port": h["port"],
                "ansible_user": h["user"],
                "ansible_ssh_private_key_file": h["key"],
                "ansible_python_interpreter": "/usr/bin/python3",
            }
            if tool == "ansible":
                hv["ansible_ssh_common_args"] = "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null"
            out.append(f"    {name}:")
            out += [f"      {k}: {json.dumps(v)}" for k, v in hv.items()]
        d = os.path.join(tmp, "oracle-ssh")
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, "ssh_hosts.yaml")
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(out) + "\n")
        return path

    def close(self) -> None:
        """Ends the SSH masters (compare.py's and Ansible's) and removes their sockets."""
        socks = []
        for d in (self.ctl, self.ansible_cp):
            try:
                socks += [os.path.join(d, n) for n in os.listdir(d) if stat.S_ISSOCK(os.lstat(os.path.join(d, n)).st_mode)]
            except OSError:
                pass
        for s in socks:
            subprocess.run(["ssh", "-o", f"ControlPath={s}", "-O", "exit", "oracle-host"], stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30)
        shutil.rmtree(self.ctl, ignore_errors=True)


def _prepare_roots(run: Run, root: str, ssh: SshHosts | None, fx: Fixture) -> list[str]:
    """Creates root (controller, and the hosts with ssh); returns the `-i` arguments."""
    make_root(root)
    run.root = root
    if ssh is not None:
        run.problems += ssh.prepare(root)
    if fx.inventories:
        extra = [ssh.ssh_vars_inventory(os.path.dirname(root), run.tool)] if ssh is not None else []
        invs = fx.inventories + extra
    elif ssh is None:
        invs = [INVENTORY]
    else:
        invs = [ssh.inventory(os.path.dirname(root), run.tool)]
    return [a for i in invs for a in ("-i", i)]


def _collect_files(run: Run, ssh: SshHosts | None, keep: bool) -> None:
    if ssh is None:
        run.files = snapshot(run.root)
        return
    run.files = {f"controller:{rel}": v for rel, v in snapshot(run.root).items()}
    files, problems = ssh.collect(run.root, keep)
    run.files.update(files)
    run.problems += problems


def run_ansible(fx: Fixture, tmp: str, timeout: float, ssh: SshHosts | None = None, keep: bool = False) -> Run:
    run = Run("ansible")
    root = os.path.join(tmp, "ansible-root")
    inventory = _prepare_roots(run, root, ssh, fx)
    exe = ansible_playbook_bin()
    if exe is None:
        run.problems.append("ansible: ansible-playbook not found (run tests/oracle/setup_ansible.sh)")
        return run
    cfg = os.path.join(tmp, "ansible.cfg")
    with open(cfg, "w") as f:
        f.write("[defaults]\n")
    env = dict(os.environ)
    env.update(
        {
            "ANSIBLE_CONFIG": cfg,
            "ANSIBLE_STDOUT_CALLBACK": "kk_json",
            "ANSIBLE_CALLBACK_PLUGINS": os.path.join(HERE, "callback"),
            "ANSIBLE_HOST_KEY_CHECKING": "False",
            "ANSIBLE_RETRY_FILES_ENABLED": "False",
            "ANSIBLE_NOCOLOR": "1",
            "ANSIBLE_LOCALHOST_WARNING": "False",
            "ANSIBLE_DEPRECATION_WARNINGS": "False",
            "ANSIBLE_LOCAL_TEMP": os.path.join(tmp, "ansible-local"),
            "ANSIBLE_FORKS": "5",
            "ANSIBLE_PIPELINING": "True",
            # Modules run with the venv's Python (no interpreter discovery, no warning);
            # over SSH the inventory sets /usr/bin/python3 for the real hosts.
            "ANSIBLE_PYTHON_INTERPRETER": os.path.join(os.path.dirname(exe), "python"),
            "PYTHONDONTWRITEBYTECODE": "1",
        }
    )
    if ssh is not None:
        env["ANSIBLE_SSH_CONTROL_PATH_DIR"] = ssh.ansible_cp
    env.pop("ANSIBLE_FORCE_COLOR", None)
    env.update(fx.env)
    cmd = [exe, os.path.relpath(fx.path, HERE)] + inventory + ["-e", f"oracle_root={root}"] + fx.args
    if not run.problems:
        _run_process(run, cmd, env, timeout)
    _collect_files(run, ssh, keep)
    return run


def run_kk(fx: Fixture, tmp: str, timeout: float, ssh: SshHosts | None = None, keep: bool = False) -> Run:
    run = Run("kk")
    root = os.path.join(tmp, "kk-root")
    inventory = _prepare_roots(run, root, ssh, fx)
    workdir = os.path.join(tmp, "kk-work")
    os.makedirs(workdir)
    exe = os.environ.get("KK_BIN", "")
    if not exe:
        run.problems.append("kk: KK_BIN is not set (point it at the kk binary)")
        return run
    if not os.path.isfile(exe):
        run.problems.append(f"kk: KK_BIN={exe} does not exist")
        return run
    cmd = [
        exe, "run", os.path.relpath(fx.path, HERE), *inventory,
        "-e", f"oracle_root={root}", "--output", "json", "--workdir", workdir,
    ] + fx.args
    # kk runs modules written in Python only with ansible-core on the controller: a fixture
    # that says `# kk-python:` gets the oracle's (so kk runs what it does not implement the
    # way Ansible does); every other fixture gets none, so a missing native module shows.
    ap = ansible_playbook_bin()
    python = os.path.join(os.path.dirname(ap), "python") if fx.kk_python and ap else ""
    if not run.problems:
        _run_process(run, cmd, {**os.environ, **fx.env, "KK_ANSIBLE_PYTHON": python}, timeout)
    _collect_files(run, ssh, keep)
    return run


def snapshot_tar(data: bytes, root: str) -> dict[str, dict]:
    """The same view as snapshot(), read from a tar of the root (from a remote host)."""
    import io
    import tarfile

    out: dict[str, dict] = {}
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tf:
        for m in tf.getmembers():
            rel = os.path.normpath(m.name)
            if rel in (".", ""):
                continue
            mode = oct(stat.S_IMODE(m.mode))
            if m.issym():
                out[rel] = {"type": "link", "target": m.linkname.replace(root, ROOT_MARK)}
            elif m.isdir():
                out[rel] = {"type": "dir", "mode": mode}
            elif m.isfile():
                f = tf.extractfile(m)
                out[rel] = {"type": "file", "mode": mode, "content": _content(f.read() if f else b"", root)}
            else:
                out[rel] = {"type": "other"}
    return dict(sorted(out.items()))


def _content(data: bytes, root: str) -> str:
    try:
        return data.decode("utf-8").replace(root, ROOT_MARK)
    except UnicodeDecodeError:
        return "<binary sha256 %s>" % __import__("hashlib").sha256(data).hexdigest()


def snapshot(root: str) -> dict[str, dict]:
    """Every file, directory and symlink below root: type, mode, content."""
    out: dict[str, dict] = {}
    if not os.path.isdir(root):
        return out
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(dirnames + filenames):
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, root)
            try:
                st = os.lstat(full)
            except OSError:
                continue
            mode = oct(stat.S_IMODE(st.st_mode))
            if stat.S_ISLNK(st.st_mode):
                out[rel] = {"type": "link", "target": os.readlink(full).replace(root, ROOT_MARK)}
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = {"type": "dir", "mode": mode}
            elif stat.S_ISREG(st.st_mode):
                with open(full, "rb") as f:
                    out[rel] = {"type": "file", "mode": mode, "content": _content(f.read(), root)}
            else:
                out[rel] = {"type": "other"}
    return out


# --------------------------------------------------------------------------- normalising
def _replace_paths(value, subs: list[tuple[str, str]]):
    if isinstance(value, str):
        for a, b in subs:
            if a:
                value = value.replace(a, b)
        return value
    if isinstance(value, list):
        return [_replace_paths(v, subs) for v in value]
    if isinstance(value, dict):
        return {_replace_paths(k, subs): _replace_paths(v, subs) for k, v in value.items()}
    return value


def _path_subs(root: str) -> list[tuple[str, str]]:
    subs = {root: ROOT_MARK, os.path.realpath(root): ROOT_MARK, HERE: ORACLE_MARK, os.path.realpath(HERE): ORACLE_MARK}
    return sorted(subs.items(), key=lambda kv: -len(kv[0]))


_ROLE_PREFIX = re.compile(r"^[A-Za-z0-9_.\-]+ : ")


def task_name(ev: dict) -> str:
    """Task name without a 'role : ' display prefix (either form is accepted from kk)."""
    return _ROLE_PREFIX.sub("", str(ev.get("task", "")), count=1)


def norm_path(p: str, fx: Fixture) -> str:
    """`file:line` relative to the playbook's directory."""
    if not p:
        return ""
    file_part, sep, line = str(p).rpartition(":")
    if not sep or not line.isdigit():
        file_part, line = str(p), ""
    base = os.path.dirname(fx.path)
    if file_part.startswith(ORACLE_MARK):
        file_part = HERE + file_part[len(ORACLE_MARK):]
    if not os.path.isabs(file_part):
        cand = os.path.join(base, file_part)
        if not os.path.exists(cand) and os.path.exists(os.path.join(HERE, file_part)):
            cand = os.path.join(HERE, file_part)
        file_part = cand
    rel = os.path.relpath(os.path.normpath(file_part), base)
    return f"{rel}:{line}" if line else rel


_debug_var_cache: dict[str, str | None] = {}


def debug_var_name(path: str, fx: Fixture) -> str | None:
    """If the task at `file:line` is `debug` with `var`, the name of that var."""
    if path in _debug_var_cache:
        return _debug_var_cache[path]
    result = None
    file_part, _, line = path.rpartition(":")
    try:
        with open(os.path.join(os.path.dirname(fx.path), file_part), encoding="utf-8") as f:
            lines = f.read().splitlines()
        start = int(line) - 1
        first = lines[start]
        indent = len(first) - len(first.lstrip(" -"))
        dash = len(first) - len(first.lstrip(" "))
        block = [first]
        for ln in lines[start + 1:]:
            if not ln.strip() or ln.lstrip().startswith("#"):
                block.append(ln)
                continue
            ind = len(ln) - len(ln.lstrip(" "))
            if ind <= dash or (ind < indent and not ln.lstrip().startswith("- ")):
                break
            block.append(ln)
        text = "\n".join(block)
        m = re.search(r"^[\s-]*(?:ansible\.builtin\.)?debug:\s*(.*)$", text, re.M)
        if m:
            inline = re.search(r"\bvar=(\S+)", m.group(1))
            if inline:
                result = inline.group(1)
            else:
                after = text[m.end():]
                m2 = re.search(r"^\s+var:\s*(.+?)\s*$", after, re.M)
                if m2:
                    result = m2.group(1).strip().strip("'\"")
    except (OSError, ValueError, IndexError):
        result = None
    _debug_var_cache[path] = result
    return result


# The keys callback/kk_json.py drops from Ansible's results at every depth; a variable
# shown whole (a registered result in `debug: var=`) loses them on kk's side too.
CALLBACK_DROPS = {"invocation", "start", "end", "delta", "diff", "exception", "warnings", "deprecations"}


def drop_callback_keys(value):
    if isinstance(value, dict):
        return {k: drop_callback_keys(v) for k, v in value.items()
                if not (str(k).startswith("_ansible") or k in CALLBACK_DROPS)}
    if isinstance(value, list):
        return [drop_callback_keys(v) for v in value]
    return value


def reduce_result(res: dict, extra: list[str], item_level: bool = False) -> dict:
    out = {}
    if not isinstance(res, dict):
        return {"<not a mapping>": res}
    for k in RESULT_KEYS:
        if k in res:
            # The callback drops its keys at every depth of Ansible's result (a registered
            # failed result shown in a debug msg loses its `exception`): kk's the same.
            out[k] = drop_callback_keys(res[k])
    for k in BOOL_KEYS:
        if out.get(k) is False:
            del out[k]  # missing == false
    for k in extra:
        if k in res:
            out[k] = drop_callback_keys(res[k])
    if item_level:
        for k in ("item", "ansible_loop_var", "ansible_index_var", "ansible_loop"):
            if k in res:
                out[k] = res[k]
        for k in ("ansible_loop_var", "ansible_index_var"):
            v = res.get(k)
            if isinstance(v, str) and v in res:
                out[v] = res[v]
    if isinstance(res.get("results"), list):
        out["results"] = [reduce_result(r, extra, True) for r in res["results"]]
    return out


class Normalised:
    """The comparable view of one run."""

    def __init__(self):
        self.plays: list[str] = []
        self.order: list[str] = []
        self.paths: dict[str, str] = {}
        self.results: dict[tuple[str, str], list[dict]] = {}
        self.recap: dict = {}
        self.rc = None
        self.files: dict = {}


def normalise(run: Run, fx: Fixture, task_paths: dict[str, str]) -> Normalised:
    n = Normalised()
    n.rc = run.rc
    subs = _path_subs(run.root)
    n.files = run.files
    for ev in run.events:
        ev = _replace_paths(ev, subs)
        kind = ev.get("event")
        if kind == "play_start":
            hosts = ev.get("hosts") if isinstance(ev.get("hosts"), list) else []
            n.plays.append(f"{ev.get('play', '')} {json.dumps(hosts)}")
        elif kind == "task_start":
            name = task_name(ev)
            if not n.order or n.order[-1] != name:
                n.order.append(name)
            n.paths.setdefault(name, norm_path(ev.get("path", ""), fx))
        elif kind == "host_result":
            name = task_name(ev)
            path = task_paths.get(name) or n.paths.get(name, "")
            var = debug_var_name(path, fx) if path else None
            res = ev.get("result") if isinstance(ev.get("result"), dict) else {}
            entry = {"status": ev.get("status"), "ignored": bool(ev.get("ignored", False))}
            entry.update(reduce_result(res, [var] if var else []))
            n.results.setdefault((name, str(ev.get("host"))), []).append(entry)
        elif kind == "recap":
            hosts = ev.get("hosts")
            n.recap = hosts if isinstance(hosts, dict) else {}
    return n


# --------------------------------------------------------------------------- comparing
class Mismatch:
    def __init__(self, kind: str, what: str, detail: str, task: str = "", host: str = "", key: str = "", file: str = ""):
        self.kind, self.what, self.detail = kind, what, detail
        self.task, self.host, self.key, self.file = task, host, key, file

    def render(self) -> str:
        head = f"  {self.kind} {self.what}".rstrip()
        if not self.detail:
            return head
        return head + "\n" + "\n".join("      " + ln for ln in self.detail.splitlines())


def _fmt(v) -> str:
    return json.dumps(v, ensure_ascii=False, sort_keys=True)


def _value_diff(a, b) -> str:
    sa, sb = _fmt(a), _fmt(b)
    if "\n" in (a if isinstance(a, str) else "") or "\n" in (b if isinstance(b, str) else "") or len(sa) + len(sb) > 160:
        la = a.splitlines() if isinstance(a, str) else json.dumps(a, indent=2, sort_keys=True, ensure_ascii=False).splitlines()
        lb = b.splitlines() if isinstance(b, str) else json.dumps(b, indent=2, sort_keys=True, ensure_ascii=False).splitlines()
        diff = "\n".join(difflib.unified_diff(la, lb, "ansible", "kk", lineterm="", n=2))
        if diff:
            return diff  # else the lines are equal: line ends differ, show both whole
    return f"ansible: {sa}\nkk:      {sb}"


_MISSING = object()


def _compare_entry(task: str, host: str, label: str, a: dict, b: dict, out: list[Mismatch], prefix: str = "") -> None:
    keys = list(dict.fromkeys(list(a.keys()) + list(b.keys())))
    for k in keys:
        va, vb = a.get(k, _MISSING), b.get(k, _MISSING)
        if k == "results" and isinstance(va, list) and isinstance(vb, list):
            if len(va) != len(vb):
                out.append(Mismatch("result", f"{label} results", f"ansible: {len(va)} items\nkk:      {len(vb)} items\n"
                                    + _value_diff(va, vb), task, host, "results"))
                continue
            for i, (ia, ib) in enumerate(zip(va, vb)):
                if isinstance(ia, dict) and isinstance(ib, dict):
                    _compare_entry(task, host, label, ia, ib, out, f"{prefix}results[{i}].")
            continue
        if va != vb:
            sa = "<missing>" if va is _MISSING else va
            sb = "<missing>" if vb is _MISSING else vb
            detail = _value_diff(sa, sb) if (va is not _MISSING and vb is not _MISSING) else \
                f"ansible: {sa if va is _MISSING else _fmt(sa)}\nkk:      {sb if vb is _MISSING else _fmt(sb)}"
            out.append(Mismatch("result", f"{label} {prefix}{k}", detail, task, host, k))


def compare(fx: Fixture, a: Normalised, b: Normalised) -> list[Mismatch]:
    out: list[Mismatch] = []
    if a.rc != b.rc:
        out.append(Mismatch("rc", "exit code", f"ansible: {a.rc}\nkk:      {b.rc}"))
    if a.plays != b.plays:
        out.append(Mismatch("plays", "play_start events", "\n".join(
            difflib.unified_diff(a.plays, b.plays, "ansible", "kk", lineterm="", n=2))))
    if not fx.free and a.order != b.order:
        out.append(Mismatch("order", "task order", "\n".join(
            difflib.unified_diff(a.order, b.order, "ansible", "kk", lineterm="", n=3))))
    for t in a.paths:
        if t in b.paths and a.paths[t] != b.paths[t]:
            out.append(Mismatch("paths", f'"{t}" path', f"ansible: {a.paths[t]}\nkk:      {b.paths[t]}", task=t))
    keys = list(dict.fromkeys(list(a.results.keys()) + list(b.results.keys())))
    for task, host in keys:
        la, lb = a.results.get((task, host), []), b.results.get((task, host), [])
        label = f'"{task}" {host}'
        if not la or not lb:
            who = "kk" if not lb else "ansible"
            other = la or lb
            out.append(Mismatch("result", label, f"no result from {who}; the other has: " + _fmt(other), task, host))
            continue
        if len(la) != len(lb):
            out.append(Mismatch("result", f"{label} count", f"ansible ran it {len(la)} time(s), kk {len(lb)} time(s)\n"
                                + _value_diff(la, lb), task, host, "count"))
            continue
        for i, (ea, eb) in enumerate(zip(la, lb)):
            lab = label if len(la) == 1 else f"{label} (run {i + 1})"
            _compare_entry(task, host, lab, ea, eb, out)
    hosts = list(dict.fromkeys(list(a.recap.keys()) + list(b.recap.keys())))
    for h in hosts:
        ra, rb = a.recap.get(h), b.recap.get(h)
        if ra != rb:
            out.append(Mismatch("recap", h, f"ansible: {_fmt(ra)}\nkk:      {_fmt(rb)}", host=h))
    for f in sorted(set(a.files) | set(b.files)):
        fa, fb = a.files.get(f), b.files.get(f)
        if fa == fb:
            continue
        if fa is None or fb is None:
            out.append(Mismatch("file", f, "only in " + ("kk's" if fa is None else "ansible's") + " oracle_root", file=f))
            continue
        if fa.get("type") != fb.get("type"):
            out.append(Mismatch("file", f, f"ansible: {fa.get('type')}\nkk:      {fb.get('type')}", file=f))
            continue
        for k in ("mode", "target"):
            if fa.get(k) != fb.get(k):
                out.append(Mismatch("file", f"{f} {k}", f"ansible: {fa.get(k)}\nkk:      {fb.get(k)}", file=f))
        if fa.get("content") != fb.get("content"):
            diff = "\n".join(difflib.unified_diff(
                fa.get("content", "").splitlines(), fb.get("content", "").splitlines(), "ansible", "kk", lineterm="", n=2))
            out.append(Mismatch("file", f"{f} content", diff or "(differs in trailing newline)", file=f))
    return out


def selector_matches(sel: str, m: Mismatch) -> bool:
    """A selector matches when every `&`-joined part of it matches."""
    return all(_part_matches(p.strip(), m) for p in sel.split("&") if p.strip())


def _part_matches(sel: str, m: Mismatch) -> bool:
    kind, _, pat = sel.partition(":")
    kind = kind.strip()
    pat = pat.strip()
    if kind in ("rc", "order", "plays"):
        return m.kind == kind
    if kind == "paths":
        return m.kind == "paths"
    if kind == "recap":
        return m.kind == "recap" and (not pat or fnmatch.fnmatchcase(m.host, pat))
    if kind == "file":
        return m.kind == "file" and fnmatch.fnmatchcase(m.file, pat)
    if kind == "key":
        return m.kind == "result" and m.key == pat
    if kind == "task":
        tpat, _, hpat = pat.partition("@")
        if m.kind == "order":
            return False
        if m.kind not in ("result", "paths") or not fnmatch.fnmatchcase(m.task, tpat):
            return False
        return not hpat or fnmatch.fnmatchcase(m.host, hpat)
    return False


# --------------------------------------------------------------------------- reporting
class Outcome:
    def __init__(self, fx: Fixture):
        self.fx = fx
        self.passed = False
        self.skipped = False
        self.lines: list[str] = []


def check_ansible_alone(fx: Fixture, run: Run) -> list[str]:
    """Problems that make a fixture invalid under Ansible itself."""
    problems = list(fx.header_errors) + list(run.problems)
    if run.rc is not None and run.rc != fx.expect_rc:
        problems.append(f"ansible exited {run.rc}, expected {fx.expect_rc} (# expect-rc)")
    seen: dict[str, str] = {}
    for ev in run.events:
        if ev.get("event") == "task_start":
            name, path = task_name(ev), ev.get("path", "")
            # Each play's implicit "Gathering Facts" has the play's path: the one name
            # allowed in several places (its results are compared in order of occurrence).
            if name in seen and seen[name] != path and not ev.get("handler") and name != "Gathering Facts":
                problems.append(f"task name {name!r} is used twice ({seen[name]} and {path}): names must be unique")
            seen.setdefault(name, path)
    return problems


def _tail(text: str, n: int = 25) -> str:
    lines = text.rstrip().splitlines()
    return "\n".join(lines[-n:])


def run_fixture(fx: Fixture, opts, ssh: SshHosts | None = None) -> Outcome:
    oc = Outcome(fx)
    if ssh is not None and fx.ssh_skip is not None:
        oc.skipped = True
        oc.passed = True
        oc.lines.append(f"SKIP {fx.name} (skipped over SSH: {fx.ssh_skip})")
        return oc
    if ssh is None and fx.ssh_only is not None:
        oc.skipped = True
        oc.passed = True
        oc.lines.append(f"SKIP {fx.name} (only run over SSH: {fx.ssh_only})")
        return oc
    tmp = tempfile.mkdtemp(prefix=f"kk-oracle-{fx.name}-")
    try:
        ta = os.path.join(tmp, "a")
        os.makedirs(ta)
        arun = run_ansible(fx, ta, opts.timeout, ssh, opts.keep)
        aprob = check_ansible_alone(fx, arun)
        timing = f"ansible {arun.elapsed:.1f}s"
        if opts.ansible_only:
            oc.passed = not aprob
            oc.lines.append(f"{'PASS' if oc.passed else 'FAIL'} {fx.name} ({timing})")
            for p in aprob:
                oc.lines.append(f"  {p}")
            if aprob and arun.stderr.strip():
                oc.lines.append("  ansible stderr (tail):")
                oc.lines += ["      " + ln for ln in _tail(arun.stderr).splitlines()]
            if opts.verbose:
                warnings = [ln for ln in arun.stderr.splitlines() if "WARNING" in ln or "DEPRECATION" in ln]
                oc.lines += ["  ansible: " + w for w in warnings]
            if opts.show:
                oc.lines += ["  " + json.dumps(e) for e in arun.events]
            return oc
        tk = os.path.join(tmp, "k")
        os.makedirs(tk)
        krun = run_kk(fx, tk, opts.timeout, ssh, opts.keep)
        timing += f", kk {krun.elapsed:.1f}s"
        failures: list[str] = []
        if aprob:
            failures.append("  the fixture does not pass under Ansible itself:")
            failures += ["    " + p for p in aprob]
            if arun.stderr.strip():
                failures += ["      " + ln for ln in _tail(arun.stderr).splitlines()]
        if krun.problems:
            failures += ["  " + p for p in krun.problems]
            if krun.stderr.strip():
                failures.append("  kk stderr (tail):")
                failures += ["      " + ln for ln in _tail(krun.stderr).splitlines()]
        by_design: list[str] = []
        differs = fx.differs + (fx.ssh_differs if ssh is not None else [])
        if not krun.problems or krun.events:
            na = normalise(arun, fx, {})
            task_paths = dict(na.paths)
            na = normalise(arun, fx, task_paths)
            nk = normalise(krun, fx, task_paths)
            for m in compare(fx, na, nk):
                reason = next((r for r, sels in differs if any(selector_matches(s, m) for s in sels)), None)
                if reason is None:
                    failures.append(m.render())
                else:
                    by_design.append(f"  differs by design ({reason}): {m.kind} {m.what}")
            if opts.show:
                for label, n in (("ansible", na), ("kk", nk)):
                    oc.lines.append(f"  --- normalised {label}")
                    oc.lines.append("  " + json.dumps({"rc": n.rc, "plays": n.plays, "order": n.order, "recap": n.recap,
                                                       "results": {f"{t} @ {h}": v for (t, h), v in n.results.items()}},
                                                      indent=1, sort_keys=True).replace("\n", "\n  "))
        if not krun.problems or krun.events:
            for reason, sels in differs:
                if not any(reason in line for line in by_design):
                    by_design.append(f"  note: declared difference not observed ({reason})")
        oc.passed = not failures
        oc.lines.insert(0, f"{'PASS' if oc.passed else 'FAIL'} {fx.name} ({timing})")
        oc.lines += failures + by_design
        if failures and krun.stderr.strip() and not krun.problems and opts.verbose:
            oc.lines.append("  kk stderr (tail):")
            oc.lines += ["      " + ln for ln in _tail(krun.stderr).splitlines()]
        return oc
    except Exception as e:  # noqa: BLE001 - a harness bug must still produce a report line
        oc.passed = False
        oc.lines = [f"FAIL {fx.name}", f"  compare.py internal error: {type(e).__name__}: {e}"]
        return oc
    finally:
        if opts.keep:
            oc.lines.append(f"  (kept {tmp})")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description="Compare kk with ansible-playbook on the oracle fixtures.")
    ap.add_argument("fixtures", nargs="*", help="fixture paths or names (e.g. 07_loops)")
    ap.add_argument("--all", action="store_true", help="run every playbooks/NN_*.yaml")
    ap.add_argument("--ansible-only", action="store_true", help="only run Ansible and check each fixture passes")
    ap.add_argument("-j", "--jobs", type=int, default=int(os.environ.get("KK_ORACLE_JOBS", "2")),
                    help="fixtures run in parallel (default 2)")
    ap.add_argument("--hosts-file", metavar="FILE",
                    help="run both tools over SSH against real hosts: JSON {\"h1\": {\"ip\": ..., \"port\": 22, "
                         "\"key\": ...}, ...} for h1..h3; fixtures with '# ssh-skip:' are skipped")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per tool run (default 300)")
    ap.add_argument("--keep", action="store_true", help="keep the temp dirs and print their paths")
    ap.add_argument("--show", action="store_true", help="print the normalised streams")
    ap.add_argument("-v", "--verbose", action="store_true", help="print kk's stderr on mismatches; with --ansible-only, Ansible's warnings")
    opts = ap.parse_args(argv)
    if not opts.all and not opts.fixtures:
        ap.error("give fixture names or --all")
    fixtures = find_fixtures(opts.fixtures, opts.all)
    ssh = SshHosts(opts.hosts_file) if opts.hosts_file else None
    passed = failed = skipped = 0
    start = time.monotonic()
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, opts.jobs)) as pool:
            futures = [pool.submit(run_fixture, fx, opts, ssh) for fx in fixtures]
            for fut in futures:
                oc = fut.result()
                print("\n".join(oc.lines), flush=True)
                if oc.skipped:
                    skipped += 1
                elif oc.passed:
                    passed += 1
                else:
                    failed += 1
    finally:
        if ssh is not None:
            ssh.close()
    if ssh is None:
        only = f", {skipped} only run over SSH" if skipped else ""
        print(f"{passed} passed, {failed} failed{only}", flush=True)
    else:
        print(f"{passed} passed, {failed} failed, {skipped} skipped over SSH "
              f"({time.monotonic() - start:.0f}s)", flush=True)
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:
        print("0 passed, 1 failed (interrupted)")
        sys.exit(130)
