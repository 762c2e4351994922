//! The hosts a confined agent may reach (`[isolation] allow_hosts`, a
//! task's `allow_hosts`): entries parsed and checked once, for the task
//! file's check and the egress proxy alike.

/// An IPv6 literal in brackets, anything else as it is.
pub fn bracket(host: &str) -> String {
    if host.contains(':') {
        format!("[{host}]")
    } else {
        host.to_owned()
    }
}

/// `host[:port]` (`[v6]:port` for IPv6) split, the host lower-cased.
pub fn split_host_port(authority: &str, default: u16) -> Option<(String, u16)> {
    let (host, port) = if let Some(rest) = authority.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        let port = match after.strip_prefix(':') {
            Some(p) => p.parse().ok()?,
            None if after.is_empty() => default,
            None => return None,
        };
        (host.to_owned(), port)
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h.to_owned(), p.parse().ok()?),
            None => (authority.to_owned(), default),
        }
    };
    if host.is_empty()
        || !host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '*' | '_'))
    {
        return None;
    }
    Some((host.to_ascii_lowercase(), port))
}

/// One entry of the list: a host (`api.example.com`), every host below a
/// domain (`*.example.com`), or an IP literal; any port, or one.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Rule {
    host: String,
    port: Option<u16>,
}

/// The hosts an agent may reach.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllowList {
    rules: Vec<Rule>,
}

impl AllowList {
    /// A list from entries (`host`, `host:port`, `*.domain`, `[v6]:port`);
    /// an entry that is none of these is named.
    pub fn parse<S: AsRef<str>>(entries: &[S]) -> Result<AllowList, String> {
        let mut rules = Vec::new();
        for entry in entries {
            let entry = entry.as_ref().trim();
            let has_port = if entry.starts_with('[') {
                entry.contains("]:")
            } else {
                entry.matches(':').count() == 1
            };
            let (host, port) = split_host_port(entry, 0)
                .filter(|(h, _)| {
                    h.find('*').is_none_or(|i| {
                        i == 0 && h.starts_with("*.") && h.len() > 2 && h.matches('*').count() == 1
                    })
                })
                .ok_or_else(|| {
                    format!(
                        "`{entry}` is not a host (`api.example.com`, `*.example.com`, \
                         `127.0.0.1:8080`, `[::1]:80`)"
                    )
                })?;
            if let Some(domain) = host.strip_prefix("*.")
                && psl::domain(domain.as_bytes()).is_none()
            {
                return Err(format!(
                    "`{entry}` is wider than a registrable domain (`{domain}` is a public \
                     suffix: anyone can own a name below it); expected `*.example.{domain}`"
                ));
            }
            rules.push(Rule {
                host,
                port: has_port.then_some(port),
            });
        }
        Ok(AllowList { rules })
    }

    /// Whether `host:port` may be reached. A name matches itself or a
    /// `*.` rule above it; an IP literal matches only itself.
    pub fn allows(&self, host: &str, port: u16) -> bool {
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        self.rules.iter().any(|r| {
            let host_ok = match r.host.strip_prefix("*.") {
                Some(domain) => {
                    host.parse::<std::net::IpAddr>().is_err()
                        && host.len() > domain.len()
                        && host.ends_with(domain)
                        && host.as_bytes()[host.len() - domain.len() - 1] == b'.'
                }
                None => r.host == host,
            };
            host_ok && r.port.is_none_or(|p| p == port)
        })
    }

    /// Whether the address `ip` (one a name resolved to) may be reached on
    /// `port` although it is internal ([`is_internal`]): an IP literal entry
    /// names it, or `host` matched an exact `localhost` entry (a name that
    /// means loopback). A name that only resolves there (a wildcard's, a
    /// registry's) never makes an internal address reachable.
    pub fn allows_internal(&self, host: &str, ip: std::net::IpAddr, port: u16) -> bool {
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        self.rules.iter().any(|r| {
            let port_ok = r.port.is_none_or(|p| p == port);
            let named = match r.host.parse::<std::net::IpAddr>() {
                Ok(listed) => listed == ip,
                Err(_) => r.host == "localhost" && host == "localhost" && ip.is_loopback(),
            };
            port_ok && named
        })
    }

    /// The entries, as given to [`AllowList::parse`] (for the run's note).
    pub fn entries(&self) -> Vec<String> {
        self.rules
            .iter()
            .map(|r| match r.port {
                Some(p) => format!("{}:{p}", bracket(&r.host)),
                None => r.host.clone(),
            })
            .collect()
    }
}

/// Whether `ip` is an address inside the machine or its network, which a
/// name on the allowlist must not lead to unless listed: loopback,
/// unspecified, link-local (cloud metadata at 169.254.169.254), private
/// (10/8, 172.16/12, 192.168/16, fc00::/7), shared (100.64/10), multicast
/// and broadcast, and an IPv4 address mapped into IPv6 of any of these.
pub fn is_internal(ip: std::net::IpAddr) -> bool {
    use std::net::IpAddr;
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            v4.is_loopback()
                || v4.is_unspecified()
                || v4.is_link_local()
                || v4.is_private()
                || v4.is_multicast()
                || v4.is_broadcast()
                || (a == 100 && (64..128).contains(&b))
                || a == 0
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_internal(IpAddr::V4(v4));
            }
            let first = v6.segments()[0];
            v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (first & 0xfe00) == 0xfc00
                || (first & 0xffc0) == 0xfe80
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_wider_than_a_registrable_domain_are_refused() {
        for wide in ["*.com", "*.co.uk", "*.github.io", "*.internal"] {
            let e = AllowList::parse(&[wide]).unwrap_err();
            assert!(e.contains("wider than a registrable domain"), "{wide}: {e}");
        }
        for fine in [
            "*.example.com",
            "*.npmjs.org",
            "*.corp.internal",
            "*.x.co.uk",
        ] {
            assert!(AllowList::parse(&[fine]).is_ok(), "{fine}");
        }
    }

    #[test]
    fn internal_addresses_and_what_lists_them() {
        use std::net::IpAddr;
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        for internal in [
            "127.0.0.1",
            "169.254.169.254",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "100.64.0.1",
            "0.0.0.0",
            "::1",
            "fe80::1",
            "fd00::1",
            "::ffff:127.0.0.1",
        ] {
            assert!(is_internal(ip(internal)), "{internal}");
        }
        for public in ["93.184.216.34", "2606:4700::1111", "172.32.0.1"] {
            assert!(!is_internal(ip(public)), "{public}");
        }
        let allow =
            AllowList::parse(&["localhost:8080", "10.0.0.5", "*.example.com", "npm.corp"]).unwrap();
        assert!(allow.allows_internal("localhost", ip("127.0.0.1"), 8080));
        assert!(!allow.allows_internal("localhost", ip("127.0.0.1"), 9090));
        assert!(allow.allows_internal("npm.corp", ip("10.0.0.5"), 443));
        assert!(!allow.allows_internal("npm.corp", ip("10.0.0.6"), 443));
        assert!(!allow.allows_internal("evil.example.com", ip("127.0.0.1"), 443));
        assert!(!allow.allows_internal("evil.example.com", ip("169.254.169.254"), 80));
    }

    #[test]
    fn names_domains_ports_and_literals() {
        let allow = AllowList::parse(&[
            "api.anthropic.com",
            "*.npmjs.org",
            "127.0.0.1:8080",
            "[::1]:81",
        ])
        .unwrap();
        assert!(allow.allows("api.anthropic.com", 443));
        assert!(allow.allows("API.Anthropic.com.", 80));
        assert!(!allow.allows("evil-api.anthropic.com", 443));
        assert!(!allow.allows("anthropic.com", 443));
        assert!(allow.allows("registry.npmjs.org", 443));
        assert!(!allow.allows("npmjs.org", 443));
        assert!(!allow.allows("registry.npmjs.org.evil.com", 443));
        assert!(!allow.allows("xnpmjs.org", 443));
        assert!(allow.allows("127.0.0.1", 8080));
        assert!(!allow.allows("127.0.0.1", 8081));
        assert!(!allow.allows("127.0.0.2", 8080));
        assert!(allow.allows("::1", 81));
        assert_eq!(
            allow.entries(),
            [
                "api.anthropic.com",
                "*.npmjs.org",
                "127.0.0.1:8080",
                "[::1]:81"
            ]
        );
    }

    #[test]
    fn bad_entries_are_named() {
        for bad in [
            "", "a b", "*", "*.", "**.x.com", "x.*.com", "h:port", "[::1",
        ] {
            let e = AllowList::parse(&[bad]).unwrap_err();
            assert!(e.contains("is not a host"), "{bad}: {e}");
        }
    }
}
