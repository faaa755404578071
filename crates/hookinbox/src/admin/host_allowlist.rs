//! The `Host` check that keeps DNS rebinding away from the admin listener.
//!
//! A page on `evil.example` can make its own name resolve to 127.0.0.1 and
//! then read `http://evil.example:9090/metrics` from a browser as
//! same-origin. The one thing the page cannot change is the `Host` header:
//! the browser sends the page's name. So the listener answers only requests
//! whose `Host` it recognises:
//! - an IP address (any: a browser sends an IP only when the URL itself
//!   names it, which is a direct request, not a rebound name — and Prometheus
//!   or an orchestrator's probes scrape by IP) or `localhost`, with the
//!   listener's port (a missing port means 80);
//! - any value listed in `admin.allowed_hosts`, compared whole and without
//!   regard to case.
//!
//! Anything else gets **421 Misdirected Request**: "this server does not
//! serve that authority", which is what a rebound name is. It is checked
//! before the token, so such a request learns nothing else.

/// The `Host` values the admin listener answers.
#[derive(Debug, Clone)]
pub struct HostAllowlist {
    port: u16,
    /// `admin.allowed_hosts`, lowercased.
    listed: Vec<String>,
}

impl HostAllowlist {
    /// The hosts of `admin.allowed_hosts` (checked with the configuration)
    /// and the listener's port.
    pub fn new(port: u16, allowed_hosts: &[String]) -> HostAllowlist {
        let listed = allowed_hosts
            .iter()
            .map(|host| host.to_ascii_lowercase())
            .collect();
        HostAllowlist { port, listed }
    }

    /// The listener's port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The same list for a listener bound to `port` (port 0 is resolved
    /// only once the listener is bound).
    pub fn at_port(self, port: u16) -> HostAllowlist {
        HostAllowlist { port, ..self }
    }

    /// Whether a request with this `Host` header value is answered.
    pub fn admits(&self, host: &str) -> bool {
        let host = host.to_ascii_lowercase();
        if self.listed.contains(&host) {
            return true;
        }
        let Some((name, port)) = split_port(&host) else {
            return false;
        };
        port == self.port && (name == "localhost" || is_ip_literal(name))
    }
}

/// `name:port`, `[v6]:port`, `name` or `[v6]` → (name, port); no port means 80.
fn split_port(host: &str) -> Option<(&str, u16)> {
    let (name, port) = match host.rfind(':') {
        // The colon of `[::1]` without a port is inside the brackets.
        Some(colon) if !host[colon..].contains(']') => (&host[..colon], Some(&host[colon + 1..])),
        _ => (host, None),
    };
    let port = match port {
        Some(port) => port.parse().ok()?,
        None => 80,
    };
    Some((name, port))
}

fn is_ip_literal(name: &str) -> bool {
    match name.strip_prefix('[').and_then(|n| n.strip_suffix(']')) {
        Some(v6) => v6.parse::<std::net::Ipv6Addr>().is_ok(),
        None => name.parse::<std::net::Ipv4Addr>().is_ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allowlist(listed: &[&str]) -> HostAllowlist {
        let listed: Vec<String> = listed.iter().map(|h| h.to_string()).collect();
        HostAllowlist::new(9090, &listed)
    }

    #[test]
    fn addresses_and_localhost_at_the_listen_port_are_admitted() {
        let hosts = allowlist(&[]);
        for host in [
            "127.0.0.1:9090",
            "localhost:9090",
            "LOCALHOST:9090",
            "[::1]:9090",
            "10.1.2.3:9090",
        ] {
            assert!(hosts.admits(host), "{host}");
        }
        for host in [
            "127.0.0.1:9091",
            "localhost",
            "[::1]",
            "evil.example:9090",
            "localhost.evil.example:9090",
            "127.0.0.1.nip.io:9090",
            "",
            ":9090",
        ] {
            assert!(!hosts.admits(host), "{host}");
        }
    }

    #[test]
    fn listed_hosts_match_whole_and_ignore_case() {
        let hosts = allowlist(&["admin.internal:9090", "Metrics.Example"]);
        assert!(hosts.admits("admin.internal:9090"));
        assert!(hosts.admits("ADMIN.internal:9090"));
        assert!(hosts.admits("metrics.example"));
        assert!(!hosts.admits("admin.internal"));
        assert!(!hosts.admits("admin.internal:9091"));
        assert!(!hosts.admits("x.admin.internal:9090"));
    }
}
