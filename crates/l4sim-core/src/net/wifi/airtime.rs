//! The AP's airtime-fairness scheduler, as Linux mac80211 schedules its per-station TXQs
//! (`ieee80211_next_txq`, `ieee80211_sta_register_airtime`; the deficit round robin of
//! ath9k's airtime fairness, moved into mac80211 in 2018): stations with queued frames
//! take turns; a station whose airtime deficit is negative gets its weight (256 us,
//! `IEEE80211_DEFAULT_AIRTIME_WEIGHT`) added and goes to the back of the round; one with
//! a non-negative deficit is served, and the airtime its transmission used is subtracted
//! afterwards. Over a busy period every backlogged station gets the same airtime, whatever
//! its rate: the slow station no longer takes most of the medium, as it does when
//! stations get equal turns (the "performance anomaly", Heusse et al., INFOCOM 2003).

/// mac80211's default station airtime weight, in us (`IEEE80211_DEFAULT_AIRTIME_WEIGHT`).
pub const DEFAULT_WEIGHT_US: i64 = 256;

/// Deficit round robin in airtime over stations `0..n`.
#[derive(Clone, Debug)]
pub struct AirtimeDrr {
    /// Each station's deficit in us.
    pub deficit: Vec<i64>,
    pub weight_us: Vec<i64>,
    /// The round: stations in service order (a ring over `order[head..]` then wrapping).
    order: Vec<u32>,
    head: usize,
    /// Airtime fairness off: plain round robin, one turn per transmission.
    pub fair: bool,
}

impl AirtimeDrr {
    pub fn new(n: usize, fair: bool) -> AirtimeDrr {
        AirtimeDrr {
            deficit: vec![0; n],
            weight_us: vec![DEFAULT_WEIGHT_US; n],
            order: (0..n as u32).collect(),
            head: 0,
            fair,
        }
    }

    /// The station to serve next among those `backlogged`, or `None` if none is. Stations
    /// without frames are passed over without a turn (they are off mac80211's active list).
    pub fn next(&mut self, backlogged: impl Fn(usize) -> bool) -> Option<usize> {
        let n = self.order.len();
        if !(0..n).any(&backlogged) {
            return None;
        }
        loop {
            let s = self.order[self.head] as usize;
            if !backlogged(s) {
                self.head = (self.head + 1) % n;
                continue;
            }
            if !self.fair {
                self.head = (self.head + 1) % n; // the next call serves the next station
                return Some(s);
            }
            if self.deficit[s] < 0 {
                self.deficit[s] += self.weight_us[s];
                self.head = (self.head + 1) % n;
                continue;
            }
            return Some(s);
        }
    }

    /// Station `s` used `airtime_ns` of the medium.
    pub fn charge(&mut self, s: usize, airtime_ns: u64) {
        self.deficit[s] -= (airtime_ns / 1_000) as i64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two stations, one whose transmissions take 10x the airtime: with fairness each gets
    /// half the airtime (so the fast one makes ~10x the transmissions); without it they
    /// alternate and the slow one takes ~10/11 of the airtime.
    #[test]
    fn equal_airtime_not_equal_turns() {
        for fair in [true, false] {
            let mut drr = AirtimeDrr::new(2, fair);
            let cost = [4_000_000u64, 400_000];
            let mut used = [0u64; 2];
            for _ in 0..20_000 {
                let s = drr.next(|_| true).unwrap();
                drr.charge(s, cost[s]);
                used[s] += cost[s];
            }
            let share = used[0] as f64 / (used[0] + used[1]) as f64;
            if fair {
                assert!((share - 0.5).abs() < 0.01, "{share}");
            } else {
                assert!((share - 10.0 / 11.0).abs() < 0.01, "{share}");
            }
        }
        let mut drr = AirtimeDrr::new(3, true);
        assert_eq!(drr.next(|_| false), None);
        assert_eq!(drr.next(|s| s == 2), Some(2));
    }
}
