//! FAKE kubeadm / kubelet / kubectl / helm / calicoctl for kk's tests: one multi-call binary,
//! the tool chosen by argv[0]'s basename (dispatched in `kk_fakes::main_with`). Everything
//! it does is in the `kk_fakes` library (tests/fakes/src/lib.rs); it stands in for tools
//! that cannot run on the test hosts.

fn main() {
    std::process::exit(kk_fakes::main_with(std::env::args().collect()));
}
