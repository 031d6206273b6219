//! The set of request identities a report has counted: the cross-file dedupe.
//!
//! It exists because that set is the one large, randomly probed structure of a report (1.4
//! million hashes for the 2 GB benchmark home, 17 MB): each insert into a general hash set was a
//! cache miss, and they were a quarter of a warm `usage` run (0.38 s with them, 0.28 s without,
//! over the same cache). The hashes are spread already, so a hash is its own slot, and the slot
//! of a request a few ahead can be asked for ([`Seen::prefetch`]) while the current one is
//! inserted: the misses overlap instead of coming one after the other.

/// A set of 64-bit hashes: open addressing, linear probing, a power-of-two table at most three
/// quarters full.
#[derive(Debug, Default)]
pub(super) struct Seen {
    /// The table; [`EMPTY`] marks a free slot.
    slots: Vec<u64>,
    len: usize,
}

/// A free slot.
const EMPTY: u64 = 0;

/// What a hash equal to [`EMPTY`] is stored as (two hashes among 2⁶⁴ taken as one, as any two
/// equal hashes are).
const EMPTY_AS: u64 = 0x9e37_79b9_7f4a_7c15;

/// The smallest table.
const MIN_SLOTS: usize = 1 << 10;

impl Seen {
    /// Adds `hash`; whether it was not there.
    pub(super) fn insert(&mut self, hash: u64) -> bool {
        let hash = if hash == EMPTY { EMPTY_AS } else { hash };
        if (self.len + 1) * 4 > self.slots.len() * 3 {
            self.grow();
        }
        let i = slot(&self.slots, hash);
        if self.slots[i] == hash {
            return false;
        }
        self.slots[i] = hash;
        self.len += 1;
        true
    }

    /// Asks the CPU for the memory of `hash`'s slot, to be inserted soon. Only a hint: it reads
    /// nothing and changes nothing.
    pub(super) fn prefetch(&self, hash: u64) {
        if self.slots.is_empty() {
            return;
        }
        let slot = &self.slots[hash as usize & (self.slots.len() - 1)];
        #[cfg(target_arch = "x86_64")]
        // SAFETY: a prefetch of an address inside a live allocation; it cannot fault.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>((slot as *const u64).cast());
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = slot;
    }

    /// Doubles the table (or makes the first one) and puts every hash back.
    fn grow(&mut self) {
        let slots = (self.slots.len() * 2).max(MIN_SLOTS);
        let old = std::mem::replace(&mut self.slots, vec![EMPTY; slots]);
        for hash in old.into_iter().filter(|&h| h != EMPTY) {
            let i = slot(&self.slots, hash);
            self.slots[i] = hash;
        }
    }

    /// How many hashes it holds.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.len
    }
}

/// Where `hash` is in `slots` (a power of two of them, at least one free), else the free slot
/// it goes in: from its own slot on, the first that holds it or is free.
fn slot(slots: &[u64], hash: u64) -> usize {
    let mask = slots.len() - 1;
    let mut i = hash as usize & mask;
    while slots[i] != EMPTY && slots[i] != hash {
        i = (i + 1) & mask;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_each_hash_once_through_growth_and_collisions() {
        let mut seen = Seen::default();
        let mut reference = std::collections::HashSet::new();
        // Hashes that share their low bits (one slot, probed on), the empty marker and what it
        // is stored as, and a spread of others, each offered twice.
        let hashes: Vec<u64> = (0..5000u64)
            .map(|i| i << 32)
            .chain([0, EMPTY_AS, u64::MAX])
            .chain((0..20_000u64).map(|i| i.wrapping_mul(0x2545_f491_4f6c_dd1d)))
            .collect();
        for round in 0..2 {
            for &h in &hashes {
                seen.prefetch(h);
                let stored = if h == EMPTY { EMPTY_AS } else { h };
                assert_eq!(seen.insert(h), reference.insert(stored), "round {round}, {h:#x}");
            }
        }
        assert_eq!(seen.len(), reference.len());
        assert!(seen.slots.len() >= seen.len() * 4 / 3 && seen.slots.len().is_power_of_two());
    }
}
