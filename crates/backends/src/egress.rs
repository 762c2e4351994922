//! Where a confined agent's network may go: the allowlist (its backend's
//! model API, the base URLs its configuration sets, `[isolation]
//! allow_hosts` and the task's own `allow_hosts`). The egress proxy that
//! enforces it from outside the agent's namespace is
//! [`wavecrew_sys::egress`], shared with the checks that run the agent's
//! work.

/// The hosts a task adds in its metadata's `allow_hosts` (strings; any
/// other value is left out, and the task file check names it).
pub fn task_hosts(metadata: &serde_json::Map<String, serde_json::Value>) -> Vec<String> {
    metadata
        .get("allow_hosts")
        .and_then(serde_json::Value::as_array)
        .map(|hosts| {
            hosts
                .iter()
                .filter_map(|h| h.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// The `host:port` (or `host`) of every base URL in an agent's variables
/// (`ANTHROPIC_BASE_URL`, `OPENAI_BASE_URL`, `GOOGLE_GEMINI_BASE_URL`, any
/// `*_BASE_URL` or `*_API_BASE`) and in `texts` (a CLI's configuration
/// file: every `base_url = "…"`).
pub fn base_url_hosts<'a>(
    vars: impl IntoIterator<Item = (&'a str, &'a str)>,
    texts: &[String],
) -> Vec<String> {
    let mut hosts = Vec::new();
    for (k, v) in vars {
        if k.ends_with("_BASE_URL") || k.ends_with("_API_BASE") {
            hosts.extend(url_authority(v));
        }
    }
    for text in texts {
        for line in text.lines() {
            let line = line.trim();
            let Some(rest) = line.strip_prefix("base_url") else {
                continue;
            };
            let Some(value) = rest.trim_start().strip_prefix('=') else {
                continue;
            };
            let value = value.trim().trim_matches(['"', '\'']);
            hosts.extend(url_authority(value));
        }
    }
    hosts
}

/// `host:port` of an `http(s)://` URL, the port its scheme's when it
/// names none.
fn url_authority(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let default = match scheme {
        "https" => 443,
        "http" => 80,
        _ => return None,
    };
    let authority = rest.split(['/', '?', '#']).next()?;
    let authority = authority.rsplit_once('@').map_or(authority, |(_, a)| a);
    let (host, port) = split_host_port(authority, default)?;
    Some(format!("{}:{port}", bracket(&host)))
}

pub use wavecrew_core::allow_hosts::AllowList;
use wavecrew_core::allow_hosts::{bracket, split_host_port};

pub use wavecrew_sys::egress::{EgressProxy, NetworkLog};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_urls_name_their_host_and_port() {
        let hosts = base_url_hosts(
            [
                ("ANTHROPIC_BASE_URL", "http://127.0.0.1:4010"),
                ("GOOGLE_GEMINI_BASE_URL", "https://proxy.corp.example/v1"),
                ("HOME", "http://ignored"),
            ],
            &["[model_providers.mock]\nbase_url = \"http://[::1]:9/v1\"\n".to_owned()],
        );
        assert_eq!(
            hosts,
            ["127.0.0.1:4010", "proxy.corp.example:443", "[::1]:9"]
        );
    }
}
