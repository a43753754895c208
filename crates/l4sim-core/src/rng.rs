//! Seeded random number generators owned by the components that draw from them.
//!
//! Each component gets its own stream, derived from the master seed and a stable
//! component key, so adding a flow does not perturb the loss pattern of a link.

use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// A component's generator. `Clone` so that a forked simulation continues the same stream.
#[derive(Clone, Debug)]
pub struct Rng(Xoshiro256PlusPlus);

impl Rng {
    /// Stream for component `key` (e.g. `(KIND_LINK << 32) | index`) under `seed`.
    pub fn for_component(seed: u64, key: u64) -> Rng {
        // SplitMix64-style mixing of the key into the seed; Xoshiro seeds itself from it.
        let mixed = seed ^ key.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(17);
        Rng(Xoshiro256PlusPlus::seed_from_u64(mixed))
    }

    /// Uniform in [0, 1) with 53 bits of precision.
    #[inline]
    pub fn uniform(&mut self) -> f64 {
        (self.0.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    #[inline]
    pub fn next_u32(&mut self) -> u32 {
        self.0.next_u32()
    }

    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// True with probability `p`.
    #[inline]
    pub fn bernoulli(&mut self, p: f64) -> bool {
        p > 0.0 && self.uniform() < p
    }
}

pub const KEY_LINK: u64 = 1 << 40;
pub const KEY_QDISC: u64 = 2 << 40;
pub const KEY_FLOW: u64 = 3 << 40;
pub const KEY_SLOT: u64 = 4 << 40;
pub const KEY_WIFI: u64 = 5 << 40;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_reproducible_and_distinct() {
        let mut a = Rng::for_component(7, KEY_LINK | 1);
        let mut b = Rng::for_component(7, KEY_LINK | 1);
        let mut c = Rng::for_component(7, KEY_LINK | 2);
        let xa: Vec<f64> = (0..8).map(|_| a.uniform()).collect();
        let xb: Vec<f64> = (0..8).map(|_| b.uniform()).collect();
        let xc: Vec<f64> = (0..8).map(|_| c.uniform()).collect();
        assert_eq!(xa, xb);
        assert_ne!(xa, xc);
        assert!(xa.iter().all(|x| (0.0..1.0).contains(x)));
    }

    #[test]
    fn bernoulli_rate_is_close_to_p() {
        let mut r = Rng::for_component(1, 0);
        let n = 200_000;
        let hits = (0..n).filter(|_| r.bernoulli(0.01)).count() as f64;
        // Binomial sd = sqrt(n p (1-p)) ≈ 44.5; allow 5 sd.
        assert!((hits - 2000.0).abs() < 5.0 * 44.5, "{hits}");
    }
}
