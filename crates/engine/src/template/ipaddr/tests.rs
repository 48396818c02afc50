//! The IP filters and tests as templates see them, compared with ansible.utils' results.

use crate::template::{to_mj, Templar};
use serde_json::{json, Value as J};

fn ev(expr: &str) -> J {
    let t = Templar::new();
    let v = t
        .eval_expr(
            expr,
            &to_mj(&json!({"pods": "10.233.64.0/18,fd85:ee78:d8a6:8607::1:0000/112"})),
        )
        .unwrap_or_else(|e| panic!("{}: {}", expr, e.render()));
    serde_json::to_value(&v).unwrap()
}

fn err(expr: &str) -> String {
    let t = Templar::new();
    match t.eval_expr(expr, &to_mj(&json!({}))) {
        Ok(v) => panic!("{} should fail, gave {}", expr, v),
        Err(e) => e.render(),
    }
}

#[test]
fn ipaddr_validity() {
    assert_eq!(ev("'192.168.0.1' | ipaddr"), json!("192.168.0.1"));
    assert_eq!(ev("'192.168.0.1/24' | ipaddr"), json!("192.168.0.1/24"));
    assert_eq!(ev("'fd00::1' | ipaddr"), json!("fd00::1"));
    assert_eq!(
        ev("'192.24.2.1/255.255.255.0' | ipaddr"),
        json!("192.24.2.1/24")
    );
    assert_eq!(ev("'x' | ipaddr"), json!(false));
    assert_eq!(ev("'' | ipaddr"), json!(false));
    assert_eq!(ev("'300.1.1.1' | ipaddr"), json!(false));
    assert_eq!(ev("'10.0.0.0/33' | ipaddr"), json!(false));
    assert_eq!(ev("true | ipaddr"), json!(false));
    assert_eq!(ev("167772161 | ipaddr"), json!("10.0.0.1"));
    assert_eq!(
        ev("['192.24.2.1', 'host.fqdn', '::1', '', '192.168.32.0/24', 'fe80::100/10', True] | ipaddr"),
        json!(["192.24.2.1", "::1", "192.168.32.0/24", "fe80::100/10"])
    );
    assert_eq!(
        ev("'192.168.0.1' | ansible.utils.ipaddr"),
        json!("192.168.0.1")
    );
    assert_eq!(
        ev("'192.168.0.1' | ansible.netcommon.ipaddr('address')"),
        json!("192.168.0.1")
    );
}

#[test]
fn ipaddr_queries_v4() {
    let q = |v: &str, q: &str| ev(&format!("'{}' | ipaddr('{}')", v, q));
    assert_eq!(q("192.168.1.5/24", "address"), json!("192.168.1.5"));
    assert_eq!(q("192.168.1.0/24", "address"), json!(null));
    assert_eq!(q("192.168.1.5/24", "network"), json!("192.168.1.0"));
    assert_eq!(q("192.168.1.5/24", "netmask"), json!("255.255.255.0"));
    assert_eq!(q("192.168.1.5/24", "hostmask"), json!("0.0.0.255"));
    assert_eq!(q("192.168.1.5/24", "prefix"), json!(24));
    assert_eq!(q("192.168.1.5/24", "broadcast"), json!("192.168.1.255"));
    assert_eq!(q("10.0.0.0/31", "broadcast"), json!(null));
    assert_eq!(q("192.168.1.5/24", "size"), json!(256));
    assert_eq!(q("192.168.1.5/24", "host"), json!("192.168.1.5/24"));
    assert_eq!(q("192.168.1.0/24", "host"), json!(null));
    assert_eq!(q("192.168.1.5", "host"), json!("192.168.1.5/32"));
    assert_eq!(q("192.168.1.0/24", "net"), json!("192.168.1.0/24"));
    assert_eq!(q("192.168.1.5/24", "net"), json!(null));
    assert_eq!(q("192.168.1.5/24", "subnet"), json!("192.168.1.0/24"));
    assert_eq!(q("192.168.1.5/24", "cidr"), json!("192.168.1.5/24"));
    assert_eq!(q("192.168.1.5/24", "host/prefix"), json!("192.168.1.5/24"));
    assert_eq!(q("192.168.1.0/24", "host/prefix"), json!(false));
    assert_eq!(q("192.168.1.5/24", "int"), json!("3232235781/24"));
    assert_eq!(q("192.168.1.5", "int"), json!(3232235781u64));
    assert_eq!(q("192.168.1.5/24", "type"), json!("address"));
    assert_eq!(q("192.168.1.0/24", "type"), json!("network"));
    assert_eq!(q("192.168.1.0/24", "first_usable"), json!("192.168.1.1"));
    assert_eq!(q("192.168.1.0/24", "last_usable"), json!("192.168.1.254"));
    assert_eq!(
        q("192.168.1.0/24", "range_usable"),
        json!("192.168.1.1-192.168.1.254")
    );
    assert_eq!(q("192.168.1.0/24", "size_usable"), json!(254));
    assert_eq!(q("192.168.1.5/24", "version"), json!(4));
    assert_eq!(
        q("192.168.1.5", "revdns"),
        json!("5.1.168.192.in-addr.arpa.")
    );
    assert_eq!(q("192.168.1.5", "private"), json!("192.168.1.5"));
    assert_eq!(q("192.168.1.5", "public"), json!(null));
    assert_eq!(q("8.8.8.8", "public"), json!("8.8.8.8"));
    assert_eq!(q("8.8.8.8", "private"), json!(null));
    assert_eq!(q("127.0.0.1", "loopback"), json!("127.0.0.1"));
    assert_eq!(q("192.168.1.5", "ipv4"), json!("192.168.1.5"));
    assert_eq!(q("192.168.1.5/24", "ipv6"), json!("::ffff:192.168.1.5/120"));
    assert_eq!(q("192.168.1.5", "wrap"), json!("192.168.1.5"));
    assert!(err("'1.2.3.4' | ipaddr('bogus')").contains("ipaddr: unknown filter type: bogus"));
    assert!(err("'1.2.3.4' | ipaddr('first_usable')").contains("Not a network address"));
}

#[test]
fn ipaddr_queries_v6() {
    let q = |v: &str, q: &str| ev(&format!("'{}' | ipaddr('{}')", v, q));
    assert_eq!(
        q("fd85:ee78:d8a6:8607::1:0000/112", ""),
        json!("fd85:ee78:d8a6:8607::1:0/112")
    );
    assert_eq!(
        q("fd85:ee78:d8a6:8607::1:0000/112", "network"),
        json!("fd85:ee78:d8a6:8607::1:0")
    );
    assert_eq!(q("fd85:ee78:d8a6:8607::1:0000/112", "prefix"), json!(112));
    assert_eq!(q("fd85:ee78:d8a6:8607::1:0000/112", "size"), json!(65536));
    assert_eq!(
        q("fd85:ee78:d8a6:8607::1:0000/112", "net"),
        json!("fd85:ee78:d8a6:8607::1:0/112")
    );
    assert_eq!(
        q("fd85:ee78:d8a6:8607::1:0000/112", "address"),
        json!("fd85:ee78:d8a6:8607::1:0")
    );
    assert_eq!(
        q("2001:db8::1/64", "netmask"),
        json!("ffff:ffff:ffff:ffff::")
    );
    assert_eq!(
        q("2001:db8::1/64", "broadcast"),
        json!("2001:db8::ffff:ffff:ffff:ffff")
    );
    assert_eq!(q("2001:db8::1", "wrap"), json!("[2001:db8::1]"));
    assert_eq!(q("2001:db8::1/64", "wrap"), json!("[2001:db8::1]/64"));
    assert_eq!(q("fd00::1", "private"), json!("fd00::1"));
    assert_eq!(q("2606:4700::1111", "public"), json!("2606:4700::1111"));
    assert_eq!(q("::1", "loopback"), json!("::1"));
    assert_eq!(q("::ffff:10.0.0.1/120", "ipv4"), json!("10.0.0.1/24"));
    assert_eq!(q("2001:db8::1", "ipv4"), json!(false));
    assert_eq!(q("2001:db8::1", "version"), json!(6));
}

#[test]
fn dual_stack_lists() {
    assert_eq!(
        ev("pods | split(',') | ansible.utils.ipv4"),
        json!(["10.233.64.0/18"])
    );
    assert_eq!(
        ev("pods | split(',') | ansible.utils.ipv6"),
        json!(["fd85:ee78:d8a6:8607::1:0/112"])
    );
    assert_eq!(
        ev("pods | split(',') | ipaddr('ipv4')"),
        json!(["10.233.64.0/18"])
    );
    assert_eq!(ev("pods | split(',') | ipv6('prefix')"), json!([112]));
    assert_eq!(
        ev("(pods | split(','))[0] | ipaddr('net') | ipaddr(1)"),
        json!("10.233.64.1/18")
    );
    assert_eq!(
        ev("'10.233.64.0/18' | ipaddr('1') | ipaddr('address')"),
        json!("10.233.64.1")
    );
    assert_eq!(ev("'10.233.0.0/18' | ipaddr(10)"), json!("10.233.0.10/18"));
    assert_eq!(
        ev("'10.233.0.0/18' | ipaddr(-1)"),
        json!("10.233.63.255/18")
    );
    assert_eq!(
        ev("'fd85::/112' | ipaddr(10) | ipaddr('address')"),
        json!("fd85::a")
    );
    assert_eq!(ev("'10.0.0.5' | ipv6"), json!(false));
    assert_eq!(ev("'10.0.0.5' | ipaddr('10.0.0.0/8')"), json!("10.0.0.5"));
    assert_eq!(ev("'11.0.0.5' | ipaddr('10.0.0.0/8')"), json!(null));
    assert_eq!(
        ev("['10.0.0.5', '11.0.0.5', 'fd00::1'] | ipaddr('10.0.0.0/8')"),
        json!(["10.0.0.5"])
    );
}

#[test]
fn helper_filters() {
    assert_eq!(ev("'::1' | ipwrap"), json!("[::1]"));
    assert_eq!(ev("'1.2.3.4' | ipwrap"), json!("1.2.3.4"));
    assert_eq!(
        ev("['::1', 'host', '10.0.0.1'] | ipwrap"),
        json!(["[::1]", "host", "10.0.0.1"])
    );
    assert_eq!(ev("'10.0.0.0/8' | nthhost(305)"), json!("10.0.1.49"));
    assert_eq!(ev("'10.0.0.0/24' | nthhost(-1)"), json!("10.0.0.255"));
    assert_eq!(ev("'10.0.0.0/24' | nthhost(300)"), json!(false));
    assert_eq!(ev("'fd00::/64' | nthhost(5)"), json!("fd00::5"));
    assert_eq!(ev("'192.168.1.5' | ipmath(5)"), json!("192.168.1.10"));
    assert_eq!(ev("'192.168.1.5/24' | ipmath(-10)"), json!("192.168.0.251"));
    assert_eq!(ev("'2001:db8::1' | ipmath(255)"), json!("2001:db8::100"));
    assert!(err("'x' | ipmath(1)").contains("you must pass a valid IP address"));
    assert!(err("'1.2.3.4' | ipmath('a')").contains("not a valid integer"));
    assert!(err("'255.255.255.255' | ipmath(1)").contains("outside"));
    assert_eq!(ev("'192.168.0.0/16' | ipsubnet"), json!("192.168.0.0/16"));
    assert_eq!(ev("'192.168.0.0/16' | ipsubnet(20)"), json!("16"));
    assert_eq!(
        ev("'192.168.0.0/16' | ipsubnet(20, 0)"),
        json!("192.168.0.0/20")
    );
    assert_eq!(
        ev("'192.168.0.0/16' | ipsubnet(20, -1)"),
        json!("192.168.240.0/20")
    );
    assert_eq!(ev("'192.168.0.0/16' | ipsubnet(20, 16)"), json!(false));
    assert_eq!(
        ev("'192.168.144.5' | ipsubnet(20)"),
        json!("192.168.144.0/20")
    );
    assert_eq!(
        ev("'192.168.144.5' | ipsubnet(18, -1)"),
        json!("192.168.144.4/31")
    );
    assert_eq!(
        ev("'192.168.144.0/20' | ipsubnet('192.168.0.0/16')"),
        json!("10")
    );
    assert!(err("'10.0.0.0/20' | ipsubnet('192.168.0.0/16')").contains("is not in the subnet"));
    assert_eq!(
        ev("'fd00::/64' | ipsubnet(66, 3)"),
        json!("fd00::c000:0:0:0/66")
    );
}

#[test]
fn network_membership() {
    assert_eq!(
        ev("'10.0.0.0/8' | network_in_network('10.0.0.5')"),
        json!(true)
    );
    assert_eq!(
        ev("'10.0.0.0/8' | network_in_network('10.1.0.0/16')"),
        json!(true)
    );
    assert_eq!(
        ev("'10.0.0.0/8' | network_in_network('11.0.0.1')"),
        json!(false)
    );
    assert_eq!(
        ev("'10.0.0.5' | ansible.utils.network_in_network('10.0.0.0/8')"),
        json!(false)
    );
    assert_eq!(
        ev("'192.168.0.0/24' | network_in_usable('192.168.0.1')"),
        json!(true)
    );
    assert_eq!(
        ev("'192.168.0.0/24' | network_in_usable('192.168.0.0')"),
        json!(false)
    );
    assert_eq!(
        ev("'192.168.0.0/24' | network_in_usable('192.168.0.255')"),
        json!(false)
    );
    assert_eq!(
        ev("'192.168.0.0/16' | network_in_network('192.168.0.0/24')"),
        json!(true)
    );
    assert_eq!(
        ev("'fd00::/64' | network_in_network('fd00::5')"),
        json!(true)
    );
    assert_eq!(
        ev("'fd00::/64' | network_in_network('10.0.0.1')"),
        json!(false)
    );
    assert_eq!(
        ev("'192.168.0.0/24' | next_nth_usable(2)"),
        json!("192.168.0.2")
    );
    assert_eq!(
        ev("'192.168.0.10/24' | previous_nth_usable(2)"),
        json!("192.168.0.8")
    );
}

#[test]
fn ip_tests() {
    assert_eq!(
        ev("'10.0.0.5' is ansible.utils.in_network('10.0.0.0/8')"),
        json!(true)
    );
    assert_eq!(
        ev("'10.0.0.5' is in_network('192.168.0.0/16')"),
        json!(false)
    );
    assert_eq!(ev("'10.1.0.0/16' is in_network('10.0.0.0/8')"), json!(true));
    assert_eq!(ev("'fd00::5' is in_network('fd00::/64')"), json!(true));
    assert_eq!(
        ev("'10.0.0.5' is in_any_network(['192.168.0.0/16', '10.0.0.0/8'])"),
        json!(true)
    );
    assert_eq!(
        ev("'10.0.0.5' is in_one_network(['10.0.0.0/16', '10.0.0.0/8'])"),
        json!(false)
    );
    assert_eq!(ev("'10.0.0.5' is ansible.utils.ip"), json!(true));
    assert_eq!(ev("'10.0.0.0/8' is ip_address"), json!(false));
    assert_eq!(ev("'10.0.0.5' is ipv4_address"), json!(true));
    assert_eq!(ev("'fd00::1' is ipv6"), json!(true));
    assert_eq!(ev("'fd00::1' is ipv4"), json!(false));
    assert_eq!(ev("'x' is ip"), json!(false));
    assert_eq!(ev("'10.1.0.0/16' is subnet_of('10.0.0.0/8')"), json!(true));
    assert_eq!(
        ev("'10.0.0.0/8' is supernet_of('10.1.0.0/16')"),
        json!(true)
    );
    assert_eq!(ev("'10.0.0.1' is private"), json!(true));
    assert_eq!(ev("'8.8.8.8' is public"), json!(true));
    assert_eq!(ev("'127.0.0.1' is loopback"), json!(true));
}

#[test]
fn network_arithmetic_edges() {
    let q = |v: &str, q: &str| ev(&format!("'{}' | ipaddr('{}')", v, q));
    // Netmask and hostmask forms of the prefix.
    assert_eq!(ev("'10.1.2.3/0.0.0.255' | ipaddr"), json!("10.1.2.3/24"));
    assert_eq!(ev("'10.1.2.3/255.255.0.0' | ipaddr"), json!("10.1.2.3/16"));
    assert_eq!(ev("'10.1.2.3/255.0.255.0' | ipaddr"), json!(false));
    assert_eq!(ev("'fd00::1/ffff::' | ipaddr"), json!(false));
    // Whole address spaces, point-to-point links and single addresses.
    assert_eq!(q("10.0.0.1/0", "network"), json!("0.0.0.0"));
    assert_eq!(q("10.0.0.1/0", "netmask"), json!("0.0.0.0"));
    assert_eq!(q("10.0.0.1/0", "hostmask"), json!("255.255.255.255"));
    assert_eq!(q("10.0.0.1/0", "broadcast"), json!("255.255.255.255"));
    assert_eq!(q("10.0.0.1/0", "size"), json!(4294967296u64));
    assert_eq!(q("::1/0", "network"), json!("::"));
    assert_eq!(
        q("::1/0", "broadcast"),
        json!("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff")
    );
    assert_eq!(q("10.0.0.1/32", "hostmask"), json!("0.0.0.0"));
    assert_eq!(q("10.0.0.1/32", "size"), json!(1));
    assert_eq!(q("10.0.0.1/31", "broadcast"), json!(null));
    assert_eq!(q("10.0.0.1/31", "network"), json!("10.0.0.0"));
    assert_eq!(q("fd00::5/127", "broadcast"), json!(null));
    // Netmasks and hostmasks are never public.
    assert_eq!(q("128.0.0.0", "public"), json!(null));
    assert_eq!(q("128.0.0.1", "public"), json!("128.0.0.1"));
    assert_eq!(q("8000::", "public"), json!(null));
    assert_eq!(q("::ffff", "public"), json!(null));
    // A query that is a network: containment, same family only.
    assert_eq!(
        q("192.168.1.0/24", "192.168.0.0/16"),
        json!("192.168.1.0/24")
    );
    assert_eq!(q("192.169.1.0/24", "192.168.0.0/16"), json!(null));
    assert_eq!(q("::1", "192.168.0.0/16"), json!(null));
    // Integer forms.
    assert_eq!(ev("'167772160/8' | ipaddr"), json!("10.0.0.0/8"));
    assert_eq!(ev("'167772160/40' | ipaddr"), json!("::a00:0/40"));
    // Subnets and supernets by index, addresses by index.
    assert_eq!(
        ev("'192.168.0.0/16' | ipsubnet(24, 3)"),
        json!("192.168.3.0/24")
    );
    assert_eq!(
        ev("'192.168.0.0/16' | ipsubnet(24, -1)"),
        json!("192.168.255.0/24")
    );
    assert_eq!(ev("'192.168.1.5' | ipsubnet(20)"), json!("192.168.0.0/20"));
    assert_eq!(
        ev("'192.168.1.5' | ipsubnet(20, -1)"),
        json!("192.168.1.4/31")
    );
    assert_eq!(ev("'10.0.0.0/8' | nthhost(-2)"), json!("10.255.255.254"));
    assert_eq!(ev("'fd00::/120' | nthhost(300)"), json!(false));
}
