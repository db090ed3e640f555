//! Where outbound calls may point: http(s) URLs only and, unless the deployment allows private
//! targets (the local server does by default), no address in [`BLOCKED`] — loopback,
//! private, link-local, shared (CGNAT), multicast and the rest of the IANA special-purpose
//! ranges that are not globally reachable. An IPv4-mapped IPv6 address (`::ffff:a.b.c.d`)
//! is judged as the IPv4 address it reaches.
//!
//! The URL is checked when a config is created (an address literal, or `localhost`); the
//! addresses a name resolves to are checked at each delivery, since DNS can change, by the
//! resolver the delivery connects through ([`super::resolve`]).

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

use reqwest::Url;

/// An address range: the addresses whose first `len` bits are those of `net`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    net: IpAddr,
    len: u8,
}

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum CidrError {
    #[error("{0:?} is not an address or an address range (a.b.c.d/n, x:y::/n)")]
    Syntax(String),
    #[error("{0:?}: the prefix length is larger than the address")]
    Length(String),
    #[error("{given:?} has bits set past its prefix; the range is {range}")]
    HostBits { given: String, range: Cidr },
}

impl Cidr {
    const fn v4(a: u8, b: u8, c: u8, d: u8, len: u8) -> Cidr {
        Cidr {
            net: IpAddr::V4(Ipv4Addr::new(a, b, c, d)),
            len,
        }
    }

    const fn v6(segments: [u16; 8], len: u8) -> Cidr {
        let [a, b, c, d, e, f, g, h] = segments;
        Cidr {
            net: IpAddr::V6(Ipv6Addr::new(a, b, c, d, e, f, g, h)),
            len,
        }
    }

    pub fn contains(&self, ip: IpAddr) -> bool {
        ip.is_ipv4() == self.net.is_ipv4() && network(ip, self.len) == self.net
    }
}

/// `a.b.c.d/n`, `x:y::/n`, or a bare address (the range of that one address).
impl FromStr for Cidr {
    type Err = CidrError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        let syntax = || CidrError::Syntax(s.to_owned());
        let (addr, len) = match s.split_once('/') {
            Some((addr, len)) => (addr, Some(len)),
            None => (s, None),
        };
        let net: IpAddr = addr.parse().map_err(|_| syntax())?;
        let width = if net.is_ipv4() { 32 } else { 128 };
        let len = match len {
            None => width,
            Some(len) => len.parse::<u8>().map_err(|_| syntax())?,
        };
        if len > width {
            return Err(CidrError::Length(s.to_owned()));
        }
        let range = Cidr {
            net: network(net, len),
            len,
        };
        if range.net != net {
            return Err(CidrError::HostBits {
                given: s.to_owned(),
                range,
            });
        }
        Ok(range)
    }
}

/// `ip` with the bits past the first `len` cleared.
fn network(ip: IpAddr, len: u8) -> IpAddr {
    match ip {
        IpAddr::V4(v4) => {
            let mask = u32::MAX.checked_shl(u32::from(32 - len)).unwrap_or(0);
            IpAddr::V4(Ipv4Addr::from(u32::from(v4) & mask))
        }
        IpAddr::V6(v6) => {
            let mask = u128::MAX.checked_shl(u32::from(128 - len)).unwrap_or(0);
            IpAddr::V6(Ipv6Addr::from(u128::from(v6) & mask))
        }
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.net, self.len)
    }
}

/// The ranges no webhook may reach unless allowed: the IANA IPv4 and IPv6 special-purpose
/// address registries' entries that are not globally reachable (and those that embed an
/// IPv4 address a gateway would reach), plus multicast. Named for the logs.
pub const BLOCKED: &[(Cidr, &str)] = &[
    (Cidr::v4(0, 0, 0, 0, 8), "this network"),
    (Cidr::v4(10, 0, 0, 0, 8), "private"),
    (Cidr::v4(100, 64, 0, 0, 10), "shared (CGNAT)"),
    (Cidr::v4(127, 0, 0, 0, 8), "loopback"),
    (Cidr::v4(169, 254, 0, 0, 16), "link-local"),
    (Cidr::v4(172, 16, 0, 0, 12), "private"),
    (Cidr::v4(192, 0, 0, 0, 24), "IETF protocol assignments"),
    (Cidr::v4(192, 0, 2, 0, 24), "documentation (TEST-NET-1)"),
    (Cidr::v4(192, 88, 99, 0, 24), "6to4 relay anycast"),
    (Cidr::v4(192, 168, 0, 0, 16), "private"),
    (Cidr::v4(198, 18, 0, 0, 15), "benchmarking"),
    (Cidr::v4(198, 51, 100, 0, 24), "documentation (TEST-NET-2)"),
    (Cidr::v4(203, 0, 113, 0, 24), "documentation (TEST-NET-3)"),
    (Cidr::v4(224, 0, 0, 0, 4), "multicast"),
    (Cidr::v4(240, 0, 0, 0, 4), "reserved, and broadcast"),
    // Unspecified (::), loopback (::1) and the deprecated IPv4-compatible addresses.
    (Cidr::v6([0, 0, 0, 0, 0, 0, 0, 0], 96), "IPv4-compatible"),
    (Cidr::v6([0x64, 0xff9b, 0, 0, 0, 0, 0, 0], 96), "NAT64"),
    (
        Cidr::v6([0x64, 0xff9b, 1, 0, 0, 0, 0, 0], 48),
        "local NAT64",
    ),
    (Cidr::v6([0x100, 0, 0, 0, 0, 0, 0, 0], 64), "discard-only"),
    // Teredo (2001::/32), ORCHID, AMT, AS112 and the like.
    (
        Cidr::v6([0x2001, 0, 0, 0, 0, 0, 0, 0], 23),
        "IETF protocol assignments",
    ),
    (
        Cidr::v6([0x2001, 0xdb8, 0, 0, 0, 0, 0, 0], 32),
        "documentation",
    ),
    (Cidr::v6([0x2002, 0, 0, 0, 0, 0, 0, 0], 16), "6to4"),
    (Cidr::v6([0x3fff, 0, 0, 0, 0, 0, 0, 0], 20), "documentation"),
    (
        Cidr::v6([0x5f00, 0, 0, 0, 0, 0, 0, 0], 16),
        "segment routing (SRv6) SIDs",
    ),
    (Cidr::v6([0xfc00, 0, 0, 0, 0, 0, 0, 0], 7), "unique local"),
    (Cidr::v6([0xfe80, 0, 0, 0, 0, 0, 0, 0], 10), "link-local"),
    (Cidr::v6([0xfec0, 0, 0, 0, 0, 0, 0, 0], 10), "site-local"),
    (Cidr::v6([0xff00, 0, 0, 0, 0, 0, 0, 0], 8), "multicast"),
];

/// The name of the blocked range `ip` is in, if any.
pub fn blocked(ip: IpAddr) -> Option<&'static str> {
    let ip = canonical(ip);
    BLOCKED
        .iter()
        .find(|(range, _)| range.contains(ip))
        .map(|(_, name)| *name)
}

/// An IPv4-mapped IPv6 address as the IPv4 address it reaches.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        IpAddr::V4(_) => ip,
    }
}

#[derive(Debug, Clone, Default)]
pub struct Targets {
    allow_private: bool,
    /// Ranges the operator allows although [`BLOCKED`] holds them (one internal receiver).
    allow: Vec<Cidr>,
    /// Whether a plain `http://` URL may name another host than this machine.
    cleartext: bool,
}

/// Why a plain `http://` URL to another host is refused, and how to allow it.
pub const CLEARTEXT_RULE: &str = "is plain http:// to another host, so what is sent there \
     (its token, an answer link) would cross the network in the clear: use https (http:// \
     is taken only for this machine, localhost or a loopback address, unless \
     HARNESS_ALLOW_HTTP_URLS is set)";

impl Targets {
    pub fn new(allow_private: bool, allow: Vec<Cidr>) -> Self {
        Targets {
            allow_private,
            allow,
            cleartext: false,
        }
    }

    /// Lets plain `http://` URLs name any host (`HARNESS_ALLOW_HTTP_URLS`).
    pub fn with_cleartext(mut self, allowed: bool) -> Self {
        self.cleartext = allowed;
        self
    }

    /// Whether `url` may be called: https, or plain http to this machine (see
    /// [`on_this_machine`]) or anywhere when allowed. Webhooks and personal channels ask
    /// this where they are configured ([`CLEARTEXT_RULE`] says why not).
    pub fn permits_scheme(&self, url: &Url) -> bool {
        url.scheme() != "http" || self.cleartext || on_this_machine(url)
    }

    /// Whether a webhook may be delivered to `ip`: it is in no blocked range, or in a
    /// range the operator allows, or private targets are allowed altogether.
    pub fn permits(&self, ip: IpAddr) -> bool {
        let ip = canonical(ip);
        self.allow_private || blocked(ip).is_none() || self.allow.iter().any(|c| c.contains(ip))
    }
}

/// Whether `url` names this machine: `localhost`, or a loopback address however written
/// (an IPv4-mapped one too). A name that merely resolves to one is not.
pub fn on_this_machine(url: &Url) -> bool {
    let host = url.host_str().unwrap_or_default();
    host.eq_ignore_ascii_case("localhost")
        || literal(url).is_some_and(|ip| canonical(ip).is_loopback())
}

/// The address a URL's host is written as, if it is one.
/// (The URL parser writes every IPv4 form, `2130706433` or `0x7f.1`, as dotted quads.)
pub fn literal(url: &Url) -> Option<IpAddr> {
    let host = url.host_str()?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn plain_http_reaches_only_this_machine_unless_allowed() {
        let strict = Targets::new(true, vec![]);
        let open = Targets::new(true, vec![]).with_cleartext(true);
        let url = |s: &str| Url::parse(s).unwrap();
        for local in [
            "http://localhost:9/h",
            "http://LOCALHOST/h",
            "http://127.0.0.1/h",
            "http://127.1.2.3/h",
            "http://2130706433/h",
            "http://[::1]/h",
            "http://[::ffff:127.0.0.1]/h",
            "https://hooks.example/h",
        ] {
            assert!(strict.permits_scheme(&url(local)), "{local}");
        }
        for far in [
            "http://hooks.example/h",
            "http://localhost.hooks.example/h",
            "http://10.0.0.5/h",
            "http://[::2]/h",
        ] {
            assert!(!strict.permits_scheme(&url(far)), "{far}");
            assert!(open.permits_scheme(&url(far)), "{far}");
        }
    }

    /// Every blocked range, with an address inside it (its first, last, and one between)
    /// and one just outside where the neighbour is public.
    #[test]
    fn every_special_purpose_range_is_blocked_and_its_neighbours_are_not() {
        let cases: &[(&str, &[&str], &[&str])] = &[
            (
                "0.0.0.0/8",
                &["0.0.0.0", "0.1.2.3", "0.255.255.255"],
                &["1.0.0.0"],
            ),
            (
                "10.0.0.0/8",
                &["10.0.0.0", "10.1.2.3", "10.255.255.255"],
                &["9.255.255.255", "11.0.0.0"],
            ),
            (
                "100.64.0.0/10",
                &["100.64.0.0", "100.100.1.1", "100.127.255.255"],
                &["100.63.255.255", "100.128.0.0"],
            ),
            (
                "127.0.0.0/8",
                &["127.0.0.1", "127.0.0.2", "127.255.255.255"],
                &["126.255.255.255", "128.0.0.0"],
            ),
            (
                "169.254.0.0/16",
                &["169.254.0.0", "169.254.169.254", "169.254.255.255"],
                &["169.253.255.255", "169.255.0.0"],
            ),
            (
                "172.16.0.0/12",
                &["172.16.0.0", "172.20.1.1", "172.31.255.255"],
                &["172.15.255.255", "172.32.0.0"],
            ),
            (
                "192.0.0.0/24",
                &["192.0.0.0", "192.0.0.8", "192.0.0.255"],
                &["191.255.255.255", "192.0.1.0"],
            ),
            (
                "192.0.2.0/24",
                &["192.0.2.0", "192.0.2.1", "192.0.2.255"],
                &["192.0.3.0"],
            ),
            (
                "192.88.99.0/24",
                &["192.88.99.0", "192.88.99.1", "192.88.99.255"],
                &["192.88.98.255", "192.88.100.0"],
            ),
            (
                "192.168.0.0/16",
                &["192.168.0.0", "192.168.1.1", "192.168.255.255"],
                &["192.167.255.255", "192.169.0.0"],
            ),
            (
                "198.18.0.0/15",
                &["198.18.0.0", "198.18.5.5", "198.19.255.255"],
                &["198.17.255.255", "198.20.0.0"],
            ),
            (
                "198.51.100.0/24",
                &["198.51.100.0", "198.51.100.7", "198.51.100.255"],
                &["198.51.99.255", "198.51.101.0"],
            ),
            (
                "203.0.113.0/24",
                &["203.0.113.0", "203.0.113.9", "203.0.113.255"],
                &["203.0.112.255", "203.0.114.0"],
            ),
            (
                "224.0.0.0/4",
                &["224.0.0.0", "224.0.0.251", "239.255.255.255"],
                &["223.255.255.255"],
            ),
            (
                "240.0.0.0/4",
                &["240.0.0.0", "250.1.1.1", "255.255.255.255"],
                &[],
            ),
            (
                "::/96",
                &["::", "::1", "::7f00:1", "::ffff:ffff"],
                &["::1:0:0:0"],
            ),
            (
                "::ffff:0:0/96 (the IPv4 address)",
                &[
                    "::ffff:127.0.0.1",
                    "::ffff:10.0.0.1",
                    "::ffff:169.254.169.254",
                ],
                &["::ffff:93.184.216.34"],
            ),
            (
                "64:ff9b::/96",
                &[
                    "64:ff9b::",
                    "64:ff9b::7f00:1",
                    "64:ff9b::5db8:d822",
                    "64:ff9b::ffff:ffff",
                ],
                &["64:ff9b::1:0:0"],
            ),
            (
                "64:ff9b:1::/48",
                &["64:ff9b:1::", "64:ff9b:1:ffff:ffff:ffff:ffff:ffff"],
                &["64:ff9b:2::"],
            ),
            (
                "100::/64",
                &["100::", "100::ffff:ffff:ffff:ffff"],
                &["100:0:0:1::"],
            ),
            (
                "2001::/23",
                &["2001::", "2001:0:4136:e378::1", "2001:1ff:ffff::"],
                &["2001:200::1"],
            ),
            (
                "2001:db8::/32",
                &["2001:db8::", "2001:db8:ffff::1"],
                &["2001:db9::1"],
            ),
            (
                "2002::/16",
                &["2002::", "2002:7f00:1::1", "2002:ffff::"],
                &["2003::1", "2001:ffff::1"],
            ),
            (
                "3fff::/20",
                &["3fff::", "3fff:fff:ffff::1"],
                &["3fff:1000::1"],
            ),
            ("5f00::/16", &["5f00::", "5f00:ffff::1"], &["5f01::1"]),
            (
                "fc00::/7",
                &["fc00::", "fd00::1", "fdff:ffff::1"],
                &["fbff:ffff::1"],
            ),
            ("fe80::/10", &["fe80::", "fe80::1", "febf:ffff::1"], &[]),
            ("fec0::/10", &["fec0::", "feff:ffff::1"], &[]),
            ("ff00::/8", &["ff00::", "ff02::1", "ffff:ffff::1"], &[]),
        ];
        for (range, inside, outside) in cases {
            for a in *inside {
                assert!(blocked(ip(a)).is_some(), "{a} is in {range}");
            }
            for a in *outside {
                assert_eq!(blocked(ip(a)), None, "{a} is next to {range}, and public");
            }
        }
        for public in [
            "93.184.216.34",
            "8.8.8.8",
            "2606:2800:220:1::1",
            "2a00:1450::1",
        ] {
            assert_eq!(blocked(ip(public)), None, "{public}");
        }
    }

    #[test]
    fn ranges_parse_from_an_operators_notation() {
        assert_eq!("10.0.0.0/8".parse(), Ok(Cidr::v4(10, 0, 0, 0, 8)));
        assert_eq!(" 127.0.0.2 ".parse(), Ok(Cidr::v4(127, 0, 0, 2, 32)));
        assert_eq!(
            "fd00::/8".parse(),
            Ok(Cidr::v6([0xfd00, 0, 0, 0, 0, 0, 0, 0], 8))
        );
        assert_eq!("::/0".parse(), Ok(Cidr::v6([0; 8], 0)));
        assert_eq!(
            "0.0.0.0/0".parse::<Cidr>().map(|c| c.to_string()),
            Ok("0.0.0.0/0".into())
        );
        assert_eq!(
            "10.1.2.3/8".parse::<Cidr>().unwrap_err().to_string(),
            "\"10.1.2.3/8\" has bits set past its prefix; the range is 10.0.0.0/8"
        );
        assert_eq!(
            "10.0.0.0/33".parse::<Cidr>(),
            Err(CidrError::Length("10.0.0.0/33".into()))
        );
        for bad in ["", "10.0.0.0/", "10/8", "example.com", "10.0.0.0/x"] {
            assert!(
                matches!(bad.parse::<Cidr>(), Err(CidrError::Syntax(_))),
                "{bad}"
            );
        }
        assert!(Cidr::v6([0; 8], 0).contains(ip("2001:db8::1")));
        assert!(
            !Cidr::v6([0; 8], 0).contains(ip("10.0.0.1")),
            "families do not mix"
        );
    }

    #[test]
    fn an_allowed_range_passes_the_block_list_and_nothing_else_does() {
        let targets = Targets::new(false, vec!["10.1.0.0/16".parse().unwrap()]);
        assert!(targets.permits(ip("10.1.2.3")));
        assert!(
            targets.permits(ip("::ffff:10.1.2.3")),
            "mapped, judged as IPv4"
        );
        assert!(!targets.permits(ip("10.2.0.1")));
        assert!(!targets.permits(ip("127.0.0.1")));
        assert!(targets.permits(ip("93.184.216.34")));
        assert!(Targets::new(true, vec![]).permits(ip("127.0.0.1")));
    }
}
