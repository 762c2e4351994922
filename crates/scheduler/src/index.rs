//! The id → position index, built without copying any id.
//!
//! Resolving dependency ids is most of a large build, and each lookup in an
//! ordinary string-keyed map costs several cache misses (the table, the
//! stored key, its bytes). So the index has two tiers:
//!
//! - **dense tables** for ids of the form `PREFIX-DIGITS` (nearly all task
//!   ids: `IMPL-001`, `TESTRUN-002`): one table per prefix, indexed by the
//!   number, each slot holding a position (4 bytes, so the table stays in
//!   cache). A prefix gets a table when its numbers are dense and its ids
//!   are all written alike: every id with the same digit count (`IMPL-001`
//!   … `IMPL-120`), or none with a leading zero (`IMPL-1` … `IMPL-120`).
//!   Then the number alone identifies the id, so a hit needs no string
//!   comparison;
//! - a **hashed table** for every other id (and for ids that clash in a
//!   dense slot, such as `IMPL-05` next to `IMPL-005`): open addressing with
//!   8-byte slots (32 bits of hash, the position), every tag match confirmed
//!   by comparing the ids.
//!
//! Both tiers are exact.

/// The largest position the index can hold.
pub(crate) const MAX_POSITIONS: usize = u32::MAX as usize - 1;

/// At most this many prefixes get a dense table.
const MAX_DENSE_PREFIXES: usize = 16;

/// Positions by id; the ids themselves stay in the node list.
#[derive(Debug, Clone, Default)]
pub(crate) struct IdIndex {
    dense: Vec<Dense>,
    hashed: Hashed,
}

impl IdIndex {
    /// Index the ids `id_at(0..n)`, keeping the first position of each id;
    /// returns the index and every later position whose id was already
    /// present, with that first position.
    pub(crate) fn build<'a>(
        n: usize,
        id_at: impl Fn(u32) -> &'a str,
    ) -> (IdIndex, Vec<(u32, u32)>) {
        let positions = || (0..n).map(|p| u32::try_from(p).unwrap_or(u32::MAX));
        // Pass 1: which prefixes deserve a dense table.
        let mut stats: Vec<Stats<'a>> = Vec::new();
        for p in positions() {
            if let Some((prefix, number, digits)) = split(id_at(p)) {
                if let Some(s) = stats.iter_mut().find(|s| s.prefix == prefix) {
                    s.add(number, digits);
                } else if stats.len() < MAX_DENSE_PREFIXES {
                    stats.push(Stats::new(prefix, number, digits));
                }
            }
        }
        let dense: Vec<Dense> = stats.iter().filter_map(Stats::table).collect();
        // Pass 2: place every id, densely where it can go.
        let mut index = IdIndex {
            dense,
            hashed: Hashed::default(),
        };
        let mut spill: Vec<u32> = Vec::new();
        let mut duplicates = Vec::new();
        for p in positions() {
            let id = id_at(p);
            match index.dense_slot(id) {
                Some((t, k)) => {
                    let slot = &mut index.dense[t].slots[k];
                    if *slot == 0 {
                        *slot = p + 1;
                    } else {
                        duplicates.push((p, *slot - 1));
                    }
                }
                None => spill.push(p),
            }
        }
        index.hashed = Hashed::with_capacity(spill.len());
        for p in spill {
            if let Err(first) = index.hashed.insert(id_at(p), p, &id_at) {
                duplicates.push((p, first));
            }
        }
        duplicates.sort_unstable();
        (index, duplicates)
    }

    /// The position of `id`.
    pub(crate) fn get<'a>(&self, id: &str, id_at: impl Fn(u32) -> &'a str) -> Option<u32> {
        match self.dense_slot(id) {
            // Every id written like this table's ids is in the table.
            Some((t, k)) => self.dense[t].slots[k].checked_sub(1),
            None => self.hashed.get(id, id_at),
        }
    }

    /// The dense table and slot for `id`, if `id` is written the way that
    /// table's ids are (only such ids are ever placed there).
    fn dense_slot(&self, id: &str) -> Option<(usize, usize)> {
        if self.dense.is_empty() {
            return None;
        }
        let (prefix, number, digits) = split(id)?;
        let t = self.dense.iter().position(|d| &*d.prefix == prefix)?;
        let table = &self.dense[t];
        let written_alike = match table.style {
            Style::Width(w) => digits.len() == w,
            Style::Plain => plain(digits),
        };
        let k = usize::try_from(number.checked_sub(table.base)?).ok()?;
        (written_alike && k < table.slots.len()).then_some((t, k))
    }
}

/// `PREFIX-DIGITS` → (prefix, number, digits); 1 to 18 ASCII digits.
fn split(id: &str) -> Option<(&str, u64, &str)> {
    let (prefix, digits) = id.rsplit_once('-')?;
    if prefix.is_empty()
        || digits.is_empty()
        || digits.len() > 18
        || !digits.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let number = digits
        .bytes()
        .fold(0u64, |n, b| n * 10 + u64::from(b - b'0'));
    Some((prefix, number, digits))
}

/// Digits without a leading zero (`0` itself is fine).
fn plain(digits: &str) -> bool {
    digits == "0" || !digits.starts_with('0')
}

/// How a prefix's ids write their numbers, when all alike.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Style {
    /// Always this many digits (`001` … `120`).
    Width(usize),
    /// No leading zeros (`1` … `120`).
    Plain,
}

/// What pass 1 learns about one prefix.
struct Stats<'a> {
    prefix: &'a str,
    min: u64,
    max: u64,
    count: u64,
    width: Option<usize>,
    plain: bool,
}

impl<'a> Stats<'a> {
    fn new(prefix: &'a str, number: u64, digits: &str) -> Self {
        Self {
            prefix,
            min: number,
            max: number,
            count: 1,
            width: Some(digits.len()),
            plain: plain(digits),
        }
    }

    fn add(&mut self, number: u64, digits: &str) {
        self.min = self.min.min(number);
        self.max = self.max.max(number);
        self.count += 1;
        if self.width != Some(digits.len()) {
            self.width = None;
        }
        self.plain &= plain(digits);
    }

    /// A dense table when the numbers are dense and written alike.
    fn table(&self) -> Option<Dense> {
        let style = match (self.width, self.plain) {
            (Some(w), _) => Style::Width(w),
            (None, true) => Style::Plain,
            (None, false) => return None,
        };
        let span = self.max - self.min;
        if span >= self.count.saturating_mul(4).saturating_add(64) {
            return None;
        }
        Some(Dense {
            prefix: self.prefix.into(),
            base: self.min,
            style,
            slots: vec![0; usize::try_from(span + 1).ok()?],
        })
    }
}

/// One prefix's table: slot `number - base` holds position + 1 (0 = none).
#[derive(Debug, Clone)]
struct Dense {
    prefix: Box<str>,
    base: u64,
    style: Style,
    slots: Vec<u32>,
}

#[allow(clippy::cast_possible_truncation)] // low 32 bits hold position + 1
fn slot_position(slot: u64) -> u32 {
    (slot as u32) - 1
}

/// Open addressing, linear probing, at most half full; a slot is
/// `tag << 32 | position + 1` (0 = empty).
#[derive(Debug, Clone, Default)]
struct Hashed {
    slots: Vec<u64>,
    mask: usize,
}

impl Hashed {
    fn with_capacity(n: usize) -> Self {
        if n == 0 {
            return Self::default();
        }
        let size = (n.max(4) * 2).next_power_of_two();
        Self {
            slots: vec![0; size],
            mask: size - 1,
        }
    }

    fn insert<'a>(
        &mut self,
        id: &str,
        pos: u32,
        id_at: impl Fn(u32) -> &'a str,
    ) -> Result<(), u32> {
        let (tag, mut at) = self.start(id);
        loop {
            let slot = self.slots[at];
            if slot == 0 {
                self.slots[at] = (tag << 32) | (u64::from(pos) + 1);
                return Ok(());
            }
            if slot >> 32 == tag && id_at(slot_position(slot)) == id {
                return Err(slot_position(slot));
            }
            at = (at + 1) & self.mask;
        }
    }

    fn get<'a>(&self, id: &str, id_at: impl Fn(u32) -> &'a str) -> Option<u32> {
        if self.slots.is_empty() {
            return None;
        }
        let (tag, mut at) = self.start(id);
        loop {
            let slot = self.slots[at];
            if slot == 0 {
                return None;
            }
            if slot >> 32 == tag && id_at(slot_position(slot)) == id {
                return Some(slot_position(slot));
            }
            at = (at + 1) & self.mask;
        }
    }

    fn start(&self, id: &str) -> (u64, usize) {
        let h = hash_id(id);
        #[allow(clippy::cast_possible_truncation)] // the mask keeps it in range
        (h >> 32, (h as usize) & self.mask)
    }
}

/// A well-mixed 64-bit hash of an id: an xxHash-style round per 8-byte
/// word (multiply, rotate, multiply), then the MurmurHash3 finaliser so
/// every output bit depends on every input bit.
fn hash_id(s: &str) -> u64 {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    const P: u64 = 0x9e37_79b9_7f4a_7c15;
    let bytes = s.as_bytes();
    let mut h = bytes.len() as u64;
    let mut words = bytes.chunks_exact(8);
    for w in &mut words {
        let mut word = [0u8; 8];
        word.copy_from_slice(w);
        h = (h ^ u64::from_le_bytes(word).wrapping_mul(K))
            .rotate_left(31)
            .wrapping_mul(P);
    }
    let rest = words.remainder();
    if !rest.is_empty() {
        let mut word = [0u8; 8];
        word[..rest.len()].copy_from_slice(rest);
        h = (h ^ u64::from_le_bytes(word).wrapping_mul(K))
            .rotate_left(31)
            .wrapping_mul(P);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index(ids: &[&str]) -> (IdIndex, Vec<(u32, u32)>) {
        IdIndex::build(ids.len(), |p| ids[p as usize])
    }

    #[test]
    fn finds_ids_in_both_tiers_and_reports_duplicates() {
        let ids = [
            "IMPL-001", "IMPL-002", "7", "a.b", "IMPL-001", "7", "TEST-9",
        ];
        let (ix, dups) = index(&ids);
        assert_eq!(dups, [(4, 0), (5, 2)]);
        for (p, id) in ids.iter().enumerate().take(4) {
            assert_eq!(
                ix.get(id, |q| ids[q as usize]),
                Some(u32::try_from(p).unwrap()),
                "{id}"
            );
        }
        assert_eq!(ix.get("TEST-9", |q| ids[q as usize]), Some(6));
        for missing in [
            "IMPL-003",
            "IMPL-01",
            "IMPL-0001",
            "IMPL-+1",
            "8",
            "TEST-10",
            "NOPE-1",
        ] {
            assert_eq!(ix.get(missing, |q| ids[q as usize]), None, "{missing}");
        }
        assert_eq!(IdIndex::default().get("x", |_| "x"), None);
    }

    #[test]
    fn same_number_different_digits_are_different_ids() {
        // Mixed widths: no dense table for IMPL, the hashed tier decides.
        let ids = ["IMPL-5", "IMPL-05", "IMPL-005", "IMPL-05"];
        let (ix, dups) = index(&ids);
        assert!(ix.dense.is_empty());
        assert_eq!(dups, [(3, 1)]);
        for (p, id) in ids.iter().enumerate().take(3) {
            assert_eq!(
                ix.get(id, |q| ids[q as usize]),
                Some(u32::try_from(p).unwrap())
            );
        }
        // Fixed width: dense, and other widths are simply absent.
        let ids = ["T-001", "T-002", "T-010"];
        let (ix, _) = index(&ids);
        assert_eq!(ix.dense.len(), 1);
        assert_eq!(ix.get("T-2", |q| ids[q as usize]), None);
        assert_eq!(ix.get("T-0002", |q| ids[q as usize]), None);
        assert_eq!(ix.get("T-002", |q| ids[q as usize]), Some(1));
        // Plain numbers of varying width: dense too.
        let ids = ["P-9", "P-10", "P-0"];
        let (ix, _) = index(&ids);
        assert_eq!(ix.dense.len(), 1);
        assert_eq!(ix.get("P-10", |q| ids[q as usize]), Some(1));
        assert_eq!(ix.get("P-010", |q| ids[q as usize]), None);
        assert_eq!(ix.get("P-0", |q| ids[q as usize]), Some(2));
    }

    #[test]
    fn sparse_numbers_use_the_hashed_tier() {
        let ids = [
            "ISS-20260215-001",
            "ISS-20260215-900000",
            "GH-1",
            "GH-99999999",
        ];
        let (ix, dups) = index(&ids);
        assert!(dups.is_empty());
        for (p, id) in ids.iter().enumerate() {
            assert_eq!(
                ix.get(id, |q| ids[q as usize]),
                Some(u32::try_from(p).unwrap())
            );
        }
    }

    #[test]
    fn a_matching_hash_is_not_enough() {
        let mut h = Hashed::with_capacity(2);
        h.insert("A-x", 0, |_| "A-x").unwrap();
        assert_eq!(h.get("A-x", |_| "A-x"), Some(0));
        assert_eq!(h.get("A-x", |_| "B-y"), None);
        assert_eq!(h.insert("A-x", 1, |_| "B-y"), Ok(()));
    }

    #[test]
    fn many_ids_round_trip() {
        let ids: Vec<String> = (0..20_000)
            .map(|i| format!("IMPL-{i:07}"))
            .chain((0..5000).map(|i| format!("x{i}")))
            .collect();
        let (ix, dups) = IdIndex::build(ids.len(), |p| ids[p as usize].as_str());
        assert!(dups.is_empty());
        for (p, t) in ids.iter().enumerate() {
            assert_eq!(
                ix.get(t, |q| ids[q as usize].as_str()),
                Some(u32::try_from(p).unwrap())
            );
        }
    }

    #[test]
    fn hash_spreads_sequential_ids() {
        let n = 300_000;
        let hashes: std::collections::HashSet<u64> =
            (0..n).map(|i| hash_id(&format!("IMPL-{i:07}"))).collect();
        assert_eq!(hashes.len(), n, "no collisions among sequential ids");
        let low: std::collections::HashSet<u64> = hashes.iter().map(|h| h & 0xf_ffff).collect();
        assert!(
            low.len() > 240_000,
            "low bits spread like random: {}",
            low.len()
        );
    }

    proptest::proptest! {
        /// Any mix of id styles: every id is found at its first position,
        /// repeats are reported, absent ids are not found.
        #[test]
        fn index_is_exact(
            picks in proptest::collection::vec((0usize..4, 0u64..60, 0usize..3), 0..120),
            probes in proptest::collection::vec((0usize..4, 0u64..70, 0usize..3), 0..40),
        ) {
            let make = |(p, n, w): (usize, u64, usize)| match w {
                0 => format!("{}-{n}", ["IMPL", "T", "a.b", "ISS-2026"][p]),
                1 => format!("{}-{n:03}", ["IMPL", "T", "a.b", "ISS-2026"][p]),
                _ => format!("{}{n}", ["x", "y-", "z_", "-"][p]),
            };
            let ids: Vec<String> = picks.into_iter().map(make).collect();
            let (ix, dups) = IdIndex::build(ids.len(), |q| ids[q as usize].as_str());
            let mut expected_dups = Vec::new();
            for (p, id) in ids.iter().enumerate() {
                let first = ids.iter().position(|x| x == id).unwrap();
                let (p, first) = (u32::try_from(p).unwrap(), u32::try_from(first).unwrap());
                if first != p {
                    expected_dups.push((p, first));
                }
                proptest::prop_assert_eq!(ix.get(id, |q| ids[q as usize].as_str()), Some(first), "{}", id);
            }
            proptest::prop_assert_eq!(dups, expected_dups);
            for probe in probes.into_iter().map(make) {
                let expected = ids.iter().position(|x| *x == probe).map(|p| u32::try_from(p).unwrap());
                proptest::prop_assert_eq!(ix.get(&probe, |q| ids[q as usize].as_str()), expected, "{}", probe);
            }
        }
    }
}
