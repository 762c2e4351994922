//! The rate limiter of the governor: a sliding 60-second window.
//!
//! A classic token bucket of capacity `n` refilled at `n` per minute lets
//! up to `2n` requests into one 60-second window (a full bucket, then the
//! refill). Providers count per window, so `rpm = 30` must mean "never more
//! than 30 starts in any 60 seconds": the window keeps `(time, amount)`
//! entries of the last minute and admits while their sum is below the
//! limit. Requests count 1 each (`rpm`); tokens count as they are used
//! (`tpm`), so one attempt may overshoot the token window and then holds
//! back the next starts until enough of it has aged out.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

/// The window's length, milliseconds.
pub const WINDOW_MS: u64 = 60_000;

/// What was taken in the last [`WINDOW_MS`]: `(unix ms, amount)`, oldest
/// first.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Window {
    entries: VecDeque<(u64, u64)>,
}

impl Window {
    /// Forget what is older than the window.
    pub fn prune(&mut self, now_ms: u64) {
        while self
            .entries
            .front()
            .is_some_and(|(t, _)| t.saturating_add(WINDOW_MS) <= now_ms)
        {
            self.entries.pop_front();
        }
    }

    /// The amount taken in the window ending at `now_ms`.
    pub fn used(&self, now_ms: u64) -> u64 {
        self.entries
            .iter()
            .filter(|(t, _)| t.saturating_add(WINDOW_MS) > now_ms)
            .map(|(_, a)| *a)
            .sum()
    }

    /// Whether one more may start under `limit`.
    pub fn has_room(&self, now_ms: u64, limit: u64) -> bool {
        self.used(now_ms) < limit
    }

    /// Record `amount` taken at `now_ms`.
    pub fn take(&mut self, now_ms: u64, amount: u64) {
        self.prune(now_ms);
        if amount > 0 {
            self.entries.push_back((now_ms, amount));
        }
    }

    /// The earliest time (≥ `now_ms`) at which [`Window::has_room`] holds.
    pub fn free_at(&self, now_ms: u64, limit: u64) -> u64 {
        let mut used = self.used(now_ms);
        if used < limit {
            return now_ms;
        }
        for (t, a) in &self.entries {
            if t.saturating_add(WINDOW_MS) <= now_ms {
                continue;
            }
            used -= a;
            if used < limit {
                return t.saturating_add(WINDOW_MS);
            }
        }
        now_ms
    }

    /// How many entries it holds (for tests and benchmarks).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether it holds nothing.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn thirty_per_minute() {
        let mut w = Window::default();
        for i in 0..30 {
            assert!(w.has_room(i, 30));
            w.take(i, 1);
        }
        assert!(!w.has_room(30, 30));
        assert_eq!(w.free_at(30, 30), WINDOW_MS);
        assert!(w.has_room(WINDOW_MS, 30));
        w.prune(WINDOW_MS + 5);
        assert_eq!(w.len(), 24);
    }

    proptest! {
        /// Whatever the arrival times and amounts: admissions never put more
        /// than `limit` starts into any 60-second window, a refusal only
        /// happens when the window is full, and `free_at` names a time at
        /// which there is room again.
        #[test]
        fn never_more_than_the_limit_in_any_window(
            limit in 1u64..40,
            gaps in proptest::collection::vec(0u64..5_000, 1..300),
        ) {
            let mut w = Window::default();
            let mut now = 1_000_000u64;
            let mut admitted: Vec<u64> = Vec::new();
            for gap in gaps {
                now += gap;
                if w.has_room(now, limit) {
                    w.take(now, 1);
                    admitted.push(now);
                } else {
                    let in_window = admitted.iter().filter(|t| *t + WINDOW_MS > now).count() as u64;
                    prop_assert!(in_window >= limit, "refused with {in_window} of {limit}");
                    let free = w.free_at(now, limit);
                    prop_assert!(free > now);
                    prop_assert!(w.has_room(free, limit));
                    prop_assert!(!w.has_room(free - 1, limit));
                }
            }
            for (i, t) in admitted.iter().enumerate() {
                let in_window = admitted[i..].iter().take_while(|u| **u < t + WINDOW_MS).count() as u64;
                prop_assert!(in_window <= limit, "{in_window} starts from {t}");
            }
        }

        /// Token amounts: the window's `used` is the sum of what was taken in
        /// the last minute, and pruning never changes it.
        #[test]
        fn used_is_the_sum_of_the_last_minute(
            takes in proptest::collection::vec((0u64..20_000, 0u64..5_000), 1..100),
        ) {
            let mut w = Window::default();
            let mut now = 0u64;
            let mut all = Vec::new();
            for (gap, amount) in takes {
                now += gap;
                w.take(now, amount);
                all.push((now, amount));
                let expected: u64 = all.iter().filter(|(t, _)| t + WINDOW_MS > now).map(|(_, a)| a).sum();
                prop_assert_eq!(w.used(now), expected);
                let mut pruned = w.clone();
                pruned.prune(now);
                prop_assert_eq!(pruned.used(now), expected);
            }
        }
    }
}
