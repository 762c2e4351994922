//! Waiting for what another process writes: read it until a condition holds,
//! within a bound; past the bound, fail saying what was seen last.
//!
//! A test that reads an eventual state once (a record, a task's status, a
//! page) passes on an idle machine and fails under load. Every such wait in
//! the suite goes through [`until`], so each one is bounded and each failure
//! shows the state it last saw, not only what it waited for.
//!
//! ```
//! use std::time::Duration;
//! let mut n = 0;
//! let seen = wavecrew_testkit::wait::until("three reads", Duration::from_secs(5), || { n += 1; n }, |n| *n >= 3);
//! assert_eq!(seen, 3);
//! ```

use std::fmt::Debug;
use std::time::{Duration, Instant};

/// How often the state is read again.
const POLL: Duration = Duration::from_millis(50);

/// Read the state with `read` until `done` holds of it, within `limit`; the
/// state that held (no need to read it once more). Past `limit`, panics
/// naming `what` and showing the last state read.
pub fn until<T: Debug>(
    what: &str,
    limit: Duration,
    mut read: impl FnMut() -> T,
    done: impl Fn(&T) -> bool,
) -> T {
    let start = Instant::now();
    loop {
        let seen = read();
        if done(&seen) {
            return seen;
        }
        assert!(
            start.elapsed() < limit,
            "gave up after {limit:?} waiting for {what}; last seen: {seen:#?}"
        );
        std::thread::sleep(POLL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn returns_the_state_that_held() {
        let mut reads = vec![1, 2, 3, 4].into_iter();
        let seen = until(
            "an even number over 2",
            Duration::from_secs(5),
            || reads.next(),
            |n| n.is_some_and(|n| n > 2 && n % 2 == 0),
        );
        assert_eq!(seen, Some(4));
    }

    #[test]
    fn past_the_bound_it_says_what_it_saw() {
        let failure = std::panic::catch_unwind(|| {
            until(
                "a word",
                Duration::from_millis(120),
                || "nothing yet",
                |s| *s == "done",
            )
        })
        .unwrap_err();
        let text = failure.downcast_ref::<String>().unwrap();
        assert!(text.contains("waiting for a word"), "{text}");
        assert!(text.contains("last seen: \"nothing yet\""), "{text}");
    }
}
