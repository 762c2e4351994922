//! ccw's timestamps: ISO-8601 with milliseconds and `+00:00` (`nowISO`).

use jiff::{Timestamp, tz::TimeZone};

/// Now, as ccw writes it: `2026-03-04T09:15:02.481+00:00`.
pub fn now_iso() -> String {
    iso(Timestamp::now())
}

/// A timestamp in ccw's `+00:00` form.
pub(crate) fn iso(ts: Timestamp) -> String {
    let z = ts.to_zoned(TimeZone::UTC);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}+00:00",
        z.year(),
        z.month(),
        z.day(),
        z.hour(),
        z.minute(),
        z.second(),
        z.millisecond()
    )
}

/// A timestamp in JavaScript's `toISOString()` form (`…Z`), which ccw uses
/// for a synthesised `created_at`.
pub(crate) fn iso_z(ts: Timestamp) -> String {
    let s = iso(ts);
    format!("{}Z", s.trim_end_matches("+00:00"))
}

/// `HH:MM:SS` of a record's `ts` (ccw's `ts.substring(11, 19)`).
pub(crate) fn clock(ts: &str) -> &str {
    ts.get(11..19).unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        let ts: Timestamp = "2026-03-04T09:15:02.481Z".parse().unwrap();
        assert_eq!(iso(ts), "2026-03-04T09:15:02.481+00:00");
        assert_eq!(iso_z(ts), "2026-03-04T09:15:02.481Z");
        assert_eq!(clock("2026-03-04T09:15:02.481+00:00"), "09:15:02");
        assert_eq!(clock("short"), "");
    }
}
