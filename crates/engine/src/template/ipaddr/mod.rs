//! The `ansible.utils` IP address filters and tests that cluster playbooks use:
//! `ipaddr` and its queries, `ipv4`, `ipv6`, `ipwrap`, `nthhost`, `ipmath`,
//! `ipsubnet`, `network_in_network`, `network_in_usable`, and the `in_network`
//! family of tests.
//!
//! Semantics follow ansible.utils (which uses netaddr): a value keeps its host bits
//! (`192.168.1.5/24` is an "address" in a network), invalid input gives `false`
//! rather than an error, and queries that do not apply give `none`. Filters are
//! registered under their short names and as `ansible.utils.X` and
//! `ansible.netcommon.X`.
//!
//! [`register`] is the entry point. `net` is the value model (netaddr's `IPNetwork`
//! on top of `ipnet`) and how inputs are recognised; `query` answers `ipaddr(query)`
//! and its `ipv4`/`ipv6`/`ipwrap` variants; `subnets` holds the filters on whole
//! networks (`ipsubnet`, `nthhost`, `ipmath`, `network_in_*`, `*_nth_usable`); and
//! `predicates` the Jinja tests (`in_network`, `ipv4_address` …).

use minijinja::Environment;

mod net;
mod predicates;
mod query;
mod subnets;

use predicates::{
    in_any_network, in_network, in_one_network, is_ip, is_ip_address, is_ipv4, is_ipv4_address,
    is_ipv6, is_ipv6_address, is_loopback_test, is_private_test, is_public_test, subnet_of,
    supernet_of,
};
use query::{ipaddr_filter, ipv4_filter, ipv6_filter, ipwrap};
use subnets::{
    ipmath, ipsubnet, network_in_network, network_in_usable, next_nth_usable, nthhost,
    previous_nth_usable,
};

/// Registers the IP filters and tests.
pub fn register(env: &mut Environment<'static>) {
    macro_rules! filter {
        ($name:literal, $f:expr) => {{
            env.add_filter($name, $f);
            env.add_filter(concat!("ansible.utils.", $name), $f);
            env.add_filter(concat!("ansible.netcommon.", $name), $f);
        }};
    }
    filter!("ipaddr", ipaddr_filter);
    filter!("ipv4", ipv4_filter);
    filter!("ipv6", ipv6_filter);
    filter!("ipwrap", ipwrap);
    filter!("nthhost", nthhost);
    filter!("ipmath", ipmath);
    filter!("ipsubnet", ipsubnet);
    filter!("network_in_network", network_in_network);
    filter!("network_in_usable", network_in_usable);
    filter!("next_nth_usable", next_nth_usable);
    filter!("previous_nth_usable", previous_nth_usable);
    macro_rules! test {
        ($name:literal, $f:expr) => {{
            env.add_test($name, $f);
            env.add_test(concat!("ansible.utils.", $name), $f);
        }};
    }
    test!("in_network", in_network);
    test!("in_any_network", in_any_network);
    test!("in_one_network", in_one_network);
    test!("ip", is_ip);
    test!("ip_address", is_ip_address);
    test!("ipv4", is_ipv4);
    test!("ipv6", is_ipv6);
    test!("ipv4_address", is_ipv4_address);
    test!("ipv6_address", is_ipv6_address);
    test!("subnet_of", subnet_of);
    test!("supernet_of", supernet_of);
    test!("private", is_private_test);
    test!("public", is_public_test);
    test!("loopback", is_loopback_test);
}
#[cfg(test)]
mod tests;
