//! Hostile playbooks (issue 15): include cycles, deep nesting, numbers at the edges of
//! keywords, values Ansible refuses. Each is refused with file:line:col and exit 4, or
//! fails its task with a message that says why; none panics or hangs.
