//! A short seeded fuzzing run of kk's parsers (issue 15): the YAML loader, the
//! inventory loaders, templating with Ansible's filters, host patterns and the `k=v`
//! splitter. A crash it ever found is kept as a regression input.
