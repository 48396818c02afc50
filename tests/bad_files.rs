//! Hostile files and options (issue 15): alias bombs, non-UTF-8 bytes, endless inputs,
//! inventory values out of range, bad command-line options. Each gets a located error and
//! Ansible's exit code, within bounded time and memory.
