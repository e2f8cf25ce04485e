use super::*;

#[test]
fn a_pod_cidr_is_a_slash_16_that_can_hold_pods() {
    let c = PodCidr::parse("10.77.0.0/16").unwrap();
    assert_eq!(c, PodCidr::private(77));
    assert_eq!(c.to_string(), "10.77.0.0/16");
    assert_eq!(c.gateway().to_string(), "10.77.0.1");
    assert_eq!(c.services(), "10.77.240.0/20");
    assert_eq!(c.kubernetes().to_string(), "10.77.240.1");
    assert_eq!(c.bridge(), "uc-br-10-77");
    assert!(PodCidr::parse("192.168.255.0/16").unwrap_err().0.contains("host bits set"));
    assert!(PodCidr::parse("10.77.0.0/24").unwrap_err().0.contains("must be a /16"));
    assert!(PodCidr::parse("127.1.0.0/16").unwrap_err().0.contains("cannot hold pods"));
    assert!(PodCidr::parse("10.77.0.0").unwrap_err().0.contains("not a CIDR"));
    assert!(PodCidr::parse("x/16").unwrap_err().0.contains("not an IPv4 address"));
    assert!(PodCidr::parse("239.1.0.0/16").unwrap_err().0.contains("cannot hold pods"));
    assert!(PodCidr::parse("223.255.0.0/16").unwrap().bridge().len() <= 15, "Linux's limit on names");
}

#[test]
fn ranges_overlap_when_they_agree_on_the_shorter_prefix() {
    let c = PodCidr::private(77);
    let ip = |s: &str| s.parse::<Ipv4Addr>().unwrap();
    assert!(c.overlaps(ip("10.0.0.0"), 8), "a wider network holds it");
    assert!(c.overlaps(ip("10.77.3.0"), 24), "a narrower one inside it");
    assert!(c.overlaps(ip("10.77.0.9"), 32));
    assert!(!c.overlaps(ip("10.78.0.0"), 16));
    assert!(!c.overlaps(ip("192.0.2.0"), 24));
    assert!(c.overlaps(ip("0.0.0.0"), 0), "everything meets the default route (left out by collisions)");
}

#[test]
fn the_dns_server_is_the_gateway_or_the_one_loopback_address_no_pod_gets() {
    assert_eq!(Network::Bridged(PodCidr::private(3)).dns().to_string(), "10.3.0.1:53");
    assert_eq!(Network::Loopback(PodCidr::loopback(3)).dns().to_string(), "127.3.239.255:53");
    assert!(Network::Bridged(PodCidr::private(3)).bridged());
}

#[test]
fn the_bridge_plugin_gets_the_allocated_address_and_no_masquerade() {
    let c: serde_json::Value =
        serde_json::from_str(&bridge_config(&PodCidr::private(5), "10.5.0.7".parse().unwrap()).to_json()).unwrap();
    assert_eq!(c["cniVersion"], "1.0.0");
    assert_eq!(c["type"], "bridge");
    assert_eq!(c["ipam"]["type"], "static");
    assert_eq!(c["hairpinMode"], true);
    assert_eq!(c["bridge"], "uc-br-10-5");
    assert_eq!(c["ipMasq"], false);
    assert_eq!(c["isGateway"], false, "uc gives the bridge its address itself");
    assert_eq!(c["ipam"]["addresses"][0]["address"], "10.5.0.7/16");
    assert_eq!(c["ipam"]["addresses"][0]["gateway"], "10.5.0.1");
    assert_eq!(c["ipam"]["routes"][0]["dst"], "0.0.0.0/0");
    assert_eq!(namespace_path("abc").to_string_lossy(), "/run/netns/uc-abc");
    assert_eq!(loopback_config().to_json(), r#"{"cniVersion":"1.0.0","name":"uc-lo","type":"loopback"}"#);
}

const ROUTES: &str = r#"[
 {"dst":"default","gateway":"192.0.2.1","dev":"eth0","flags":[]},
 {"dst":"192.0.2.0/24","dev":"eth0","protocol":"kernel","scope":"link","prefsrc":"192.0.2.2","flags":[]},
 {"dst":"10.77.0.0/16","dev":"uc-br-10-77","protocol":"kernel","flags":[]},
 {"dst":"10.77.0.0/16","dev":"uc-br-10-77","table":"30051","flags":[]},
 {"type":"unreachable","dst":"10.77.0.0/16","metric":4096,"flags":[]},
 {"type":"local","dst":"10.77.240.0/20","dev":"lo","table":"local","flags":[]},
 {"type":"broadcast","dst":"10.77.255.255","dev":"uc-br-10-77","table":"local","flags":[]},
 {"dst":"10.20.0.0/14","dev":"wg0","flags":[]},
 {"type":"local","dst":"127.0.0.0/8","dev":"lo","table":"local","flags":[]}
]"#;

const ADDRESSES: &str = r#"[
 {"ifname":"lo","addr_info":[{"family":"inet","local":"127.0.0.1","prefixlen":8}]},
 {"ifname":"eth0","addr_info":[{"family":"inet","local":"192.0.2.2","prefixlen":24}]},
 {"ifname":"uc-br-10-77","addr_info":[{"family":"inet","local":"10.77.0.1","prefixlen":16}]},
 {"ifname":"docker0","addr_info":[{"family":"inet","local":"10.5.0.1","prefixlen":24}]}
]"#;

#[test]
fn collisions_leave_out_the_default_route_and_what_uc_itself_left() {
    let taken = parse_taken(ROUTES, ADDRESSES);
    assert!(taken.iter().any(|t| t.kind == "unreachable" && t.table == "main"));
    assert!(collisions(&PodCidr::private(77), &taken).is_empty(), "a uc killed without its clean stop starts again");
    assert_eq!(collisions(&PodCidr::private(5), &taken), vec!["the address 10.5.0.1/24 on docker0"]);
    assert_eq!(collisions(&PodCidr::private(21), &taken), vec!["the unicast route 10.20.0.0/14 dev wg0 (table main)"]);
    assert!(collisions(&PodCidr::private(1), &taken).is_empty());
    assert!(parse_taken("not json", "").is_empty(), "unreadable output finds nothing (then `ip` failed loudly)");
}
