//! Which client a request comes from. Behind a load balancer or proxy every
//! connection comes from the proxy, so the per-client limit would treat all
//! providers as one client; `server.trusted_proxies` names the proxies whose
//! `X-Forwarded-For` is believed. Nothing else is: a client that is not a
//! trusted proxy cannot choose its own address by sending the header.

use std::net::IpAddr;

use axum::http::HeaderMap;
use ipnet::IpNet;

/// The proxies (addresses or CIDR ranges) whose `X-Forwarded-For` is believed.
#[derive(Debug, Clone, Default)]
pub struct TrustedProxies(Vec<IpNet>);

impl TrustedProxies {
    /// The ranges of `server.trusted_proxies` (parsed with the configuration).
    pub fn new(ranges: Vec<IpNet>) -> TrustedProxies {
        TrustedProxies(ranges)
    }

    fn trusts(&self, address: IpAddr) -> bool {
        self.0.iter().any(|net| net.contains(&address))
    }

    /// The client behind a request that arrived from `peer`: the peer
    /// itself, or — when the peer is a trusted proxy — the right-most
    /// `X-Forwarded-For` hop that is not a trusted proxy (hops to its left
    /// were written by the client and prove nothing).
    pub fn client(&self, peer: IpAddr, headers: &HeaderMap) -> IpAddr {
        let peer = canonical(peer);
        if !self.trusts(peer) {
            return peer;
        }
        let hops: Vec<&str> = headers
            .get_all("x-forwarded-for")
            .iter()
            .filter_map(|value| value.to_str().ok())
            .flat_map(|value| value.split(','))
            .collect();
        let mut client = peer;
        for hop in hops.iter().rev() {
            let Some(address) = parse_hop(hop) else {
                return client;
            };
            client = address;
            if !self.trusts(address) {
                return address;
            }
        }
        client
    }
}

/// One `X-Forwarded-For` hop: an address, possibly with a port.
fn parse_hop(hop: &str) -> Option<IpAddr> {
    let hop = hop.trim();
    hop.parse::<IpAddr>()
        .ok()
        .or_else(|| hop.parse::<std::net::SocketAddr>().ok().map(|s| s.ip()))
        .map(canonical)
}

/// IPv4-mapped IPv6 addresses are the IPv4 client they map.
fn canonical(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V6(v6) => v6
            .to_ipv4_mapped()
            .map(IpAddr::V4)
            .unwrap_or(IpAddr::V6(v6)),
        v4 => v4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(xff: &[&str]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for value in xff {
            headers.append("x-forwarded-for", value.parse().unwrap());
        }
        headers
    }

    fn proxies(ranges: &[&str]) -> TrustedProxies {
        TrustedProxies::new(ranges.iter().map(|r| r.parse().unwrap()).collect())
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn an_untrusted_peer_is_the_client_whatever_it_claims() {
        let proxies = proxies(&["10.0.0.0/8"]);
        assert_eq!(
            proxies.client(ip("203.0.113.9"), &headers(&["198.51.100.1"])),
            ip("203.0.113.9")
        );
    }

    #[test]
    fn behind_trusted_proxies_the_right_most_untrusted_hop_is_the_client() {
        let proxies = proxies(&["10.0.0.0/8", "192.0.2.7/32"]);
        // The client forged the first hop; the proxies appended the rest.
        let h = headers(&["1.1.1.1, 198.51.100.1", "192.0.2.7"]);
        assert_eq!(proxies.client(ip("10.1.2.3"), &h), ip("198.51.100.1"));
        // No header: the proxy is all we know.
        assert_eq!(
            proxies.client(ip("10.1.2.3"), &HeaderMap::new()),
            ip("10.1.2.3")
        );
        // A garbage hop stops the walk at the last trusted one.
        let h = headers(&["198.51.100.1, nonsense"]);
        assert_eq!(proxies.client(ip("10.1.2.3"), &h), ip("10.1.2.3"));
        // Ports and IPv4-mapped IPv6 are understood.
        let h = headers(&["198.51.100.1:4711"]);
        assert_eq!(
            proxies.client(ip("::ffff:10.1.2.3"), &h),
            ip("198.51.100.1")
        );
    }
}
