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

#[cfg(test)]
mod tests {
    use super::*;

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
