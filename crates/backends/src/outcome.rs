//! Outcome classes from the exit code and the event stream, never from "it
//! printed something" (ccw counted a non-zero exit with output as success).

use wavecrew_core::OutcomeClass;

use crate::config::Kind;
use crate::events::StreamState;
use crate::supervise::Ended;

/// [`classify`], reading the exit codes a CLI documents as well: gemini
/// exits with the HTTP error code mod 256 (145 = 401, 173 = 429) and 41
/// for missing or invalid credentials (`agent-clis.md` §2).
pub fn classify_with_exit_hints(
    kind: Kind,
    ended: &Ended,
    stream: &StreamState,
    stderr_tail: &str,
) -> OutcomeClass {
    if matches!(kind, Kind::Gemini | Kind::Qwen)
        && let Ended::Exited {
            code: Some(code), ..
        } = ended
    {
        match code {
            41 | 145 => return OutcomeClass::AuthError,
            173 => {
                return OutcomeClass::RateLimited {
                    retry_after_secs: None,
                };
            }
            _ => {}
        }
    }
    classify(ended, stream, stderr_tail)
}

/// Classify an attempt.
///
/// Order matters: limits first (we killed it), then a process that could
/// not start, then what the stream says (auth, rate limit, denied tools),
/// then the exit code.
pub fn classify(ended: &Ended, stream: &StreamState, stderr_tail: &str) -> OutcomeClass {
    let code = match ended {
        Ended::TimedOut => return OutcomeClass::TimedOut,
        Ended::Stalled => return OutcomeClass::Stalled,
        Ended::SpawnFailed(_) => return OutcomeClass::Unavailable,
        Ended::Stopped(_) => return OutcomeClass::BudgetExceeded,
        Ended::Exited { code, .. } => *code,
    };
    let (message, status) = stream
        .fatal_error
        .clone()
        .map_or((String::new(), None), |(m, s)| (m, s));
    let text = format!("{message}\n{stderr_tail}").to_ascii_lowercase();
    let failed = code != Some(0) || stream.fatal_error.is_some();
    if failed {
        if matches!(status, Some(401 | 403))
            || text.contains("unauthorized")
            || text.contains("invalid api key")
            || text.contains("invalid x-api-key")
            || text.contains("missing environment variable")
            || text.contains("authentication")
            || text.contains("failed to authenticate")
            || text.contains("not logged in")
            || text.contains("must specify the gemini_api_key")
        {
            return OutcomeClass::AuthError;
        }
        if status == Some(429)
            || text.contains("429 too many requests")
            || text.contains("rate limit")
            || text.contains("resource_exhausted")
            || text.contains("usage limit")
        {
            return OutcomeClass::RateLimited {
                retry_after_secs: retry_after(&text)
                    .or_else(|| usage_window_reset(&text, now_secs())),
            };
        }
        return OutcomeClass::Failed;
    }
    if !stream.denied.is_empty() {
        return OutcomeClass::PermissionDenied;
    }
    OutcomeClass::Success
}

fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The reset of a usage window, in seconds from `now`: Claude Code's
/// `Claude AI usage limit reached|<unix seconds>`, or codex's `try again in
/// 2 hours 5 minutes` (hours, minutes, seconds in any combination).
pub fn usage_window_reset(text: &str, now: u64) -> Option<u64> {
    if let Some(i) = text.find("limit reached|") {
        let digits: String = text[i + "limit reached|".len()..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        if let Ok(epoch) = digits.parse::<u64>() {
            return Some(epoch.saturating_sub(now).max(1));
        }
    }
    let i = text.find("try again in ")?;
    let mut total = 0u64;
    let mut number: Option<u64> = None;
    for word in text[i + "try again in ".len()..].split_whitespace().take(8) {
        let word = word.trim_matches(|c: char| !c.is_ascii_alphanumeric());
        if let Ok(n) = word.parse::<u64>() {
            number = Some(n);
            continue;
        }
        let Some(n) = number.take() else {
            if word == "and" {
                continue;
            }
            break;
        };
        let unit = match word.trim_end_matches('s') {
            "hour" | "hr" | "h" => 3600,
            "minute" | "min" | "m" => 60,
            "second" | "sec" => 1,
            _ => break,
        };
        total += n * unit;
    }
    (total > 0).then_some(total)
}

/// `retry after 30`, `retry-after: 30`, `retry in 30s`.
fn retry_after(text: &str) -> Option<u64> {
    for marker in ["retry-after:", "retry after", "retry in", "retry-after"] {
        if let Some(i) = text.find(marker) {
            let rest = text[i + marker.len()..].trim_start();
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            if let Ok(n) = digits.parse() {
                return Some(n);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exited(code: i32) -> Ended {
        Ended::Exited {
            code: Some(code),
            signal: None,
        }
    }

    #[test]
    fn exit_code_and_stream_decide() {
        let ok = StreamState {
            completed: true,
            ..StreamState::default()
        };
        assert_eq!(classify(&exited(0), &ok, ""), OutcomeClass::Success);
        assert_eq!(
            classify(&exited(1), &ok, "lots of output"),
            OutcomeClass::Failed
        );
        assert_eq!(classify(&Ended::TimedOut, &ok, ""), OutcomeClass::TimedOut);
        assert_eq!(classify(&Ended::Stalled, &ok, ""), OutcomeClass::Stalled);
        assert_eq!(
            classify(&Ended::SpawnFailed("no such file".into()), &ok, ""),
            OutcomeClass::Unavailable
        );
        let denied = StreamState {
            completed: true,
            denied: vec!["Bash".into()],
            ..StreamState::default()
        };
        assert_eq!(
            classify(&exited(0), &denied, ""),
            OutcomeClass::PermissionDenied
        );
        let limited = StreamState {
            fatal_error: Some((
                "exceeded retry limit, last status: 429 Too Many Requests; retry after 30".into(),
                None,
            )),
            ..StreamState::default()
        };
        assert_eq!(
            classify(&exited(1), &limited, ""),
            OutcomeClass::RateLimited {
                retry_after_secs: Some(30)
            }
        );
        let window = StreamState {
            fatal_error: Some((
                "You've hit your usage limit. Upgrade or try again in 2 hours 5 minutes.".into(),
                None,
            )),
            ..StreamState::default()
        };
        assert_eq!(
            classify(&exited(1), &window, ""),
            OutcomeClass::RateLimited {
                retry_after_secs: Some(2 * 3600 + 300)
            }
        );
        assert_eq!(
            usage_window_reset("claude ai usage limit reached|1000600", 1_000_000),
            Some(600)
        );
        assert_eq!(usage_window_reset("try again in 45 seconds", 0), Some(45));
        assert_eq!(usage_window_reset("try again later", 0), None);
        let auth = StreamState {
            fatal_error: Some(("unexpected status 401 Unauthorized".into(), Some(401))),
            ..StreamState::default()
        };
        assert_eq!(classify(&exited(1), &auth, ""), OutcomeClass::AuthError);
    }
}
