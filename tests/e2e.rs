//! The end-to-end tests, one module per file of `tests/`, linked once (issue 14 §6):
//! each runs the real `kk` binary against fixture playbooks, real test hosts
//! (crates/testbed) and real software. `scripts/test` runs them module by module so each
//! module's time is printed; `cargo test --test e2e -- <module>::` runs one.

mod common;

mod adhoc_async;
mod ansible_forms;
mod bad_files;
mod bad_input;
mod bad_playbooks;
mod builtin_defaults;
mod capkk_cluster;
mod capkk_machine;
mod certs_hooks;
mod cli_ansible;
mod cli_builtin;
mod cli_lifecycle;
mod cluster_bad_input;
mod cni_storage;
mod create_cluster;
mod create_cluster_ha;
mod cri;
mod default_downloads;
mod download;
mod download_images;
mod download_lock;
mod etcd;
mod fakes;
mod fuzz;
mod image;
mod image_list;
mod image_registry;
mod interrupted;
mod inventory_plugins;
mod inventory_sources;
mod kubernetes_init;
mod kubernetes_pre;
mod lifecycle;
mod login_become;
mod module_args;
mod modules_net;
mod native;
mod native_install;
mod offline_cluster;
mod offline_packages;
mod oracle;
mod package;
mod precheck;
mod reboot;
mod run_local;
mod run_local_executor;
mod ssh;
mod summary;
mod sysctl_modprobe;
mod uninstall_network;
mod vault;
