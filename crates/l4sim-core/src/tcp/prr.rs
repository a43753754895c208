//! Proportional Rate Reduction (RFC 6937; Linux `tcp_cwnd_reduction`): during a window
//! reduction (fast recovery, and CWR with `prr_in_cwr`) the sender sends in proportion to
//! what is delivered, so that the window lands on ssthresh at the end of recovery instead
//! of halving at once.
//!
//! While the flight (`pipe`) is above ssthresh, PRR sends `ssthresh / RecoverFS` of each
//! delivered segment (the proportional phase); once it is at or below ssthresh, it grows
//! back to ssthresh no faster than slow start (PRR-SSRB), or one for one (PRR-CRB) when the
//! ACK brought news of more losses or did not advance.

/// RFC 6937 §3 state (Linux `prior_cwnd`, `prr_delivered`, `prr_out`).
#[derive(Clone, Copy, Debug, Default)]
pub struct Prr {
    /// cwnd when the reduction began (RFC 6937 `RecoverFS`, as Linux takes it).
    prior_cwnd: u32,
    /// Segments delivered since the reduction began.
    delivered: u32,
    /// Segments sent since the reduction began.
    out: u32,
}

impl Prr {
    /// Start a reduction from window `cwnd` (Linux tcp_init_cwnd_reduction).
    pub fn init(&mut self, cwnd: u32) {
        *self = Prr {
            prior_cwnd: cwnd,
            delivered: 0,
            out: 0,
        };
    }

    /// A segment left during the reduction (Linux `prr_out`).
    #[inline]
    pub fn on_sent(&mut self) {
        self.out += 1;
    }

    /// One ACK during the reduction (Linux tcp_cwnd_reduction): `delivered` segments newly
    /// delivered, `pipe` the flight after the ACK. Returns the new cwnd, `pipe` + the
    /// send quota, or `None` if the ACK delivered nothing and needs no fast retransmit.
    /// `slow_start` permits PRR-SSRB (the ACK advanced and found no new loss);
    /// `fast_rexmit` guarantees the retransmission that starts recovery a slot.
    pub fn cwnd(
        &mut self,
        delivered: u32,
        pipe: u32,
        ssthresh: u32,
        slow_start: bool,
        fast_rexmit: bool,
    ) -> Option<u32> {
        if delivered == 0 && !fast_rexmit {
            return None;
        }
        self.delivered += delivered;
        let pipe = pipe as i64;
        let mut sndcnt = self.quota(delivered, pipe, ssthresh as i64, slow_start);
        if fast_rexmit {
            sndcnt = sndcnt.max(1);
        }
        Some((pipe + sndcnt.max(0)).max(1) as u32)
    }

    /// RFC 6937 §3 `sndcnt`, after `prr_delivered` has counted this ACK's `delivered`.
    #[inline]
    fn quota(&self, delivered: u32, pipe: i64, ssthresh: i64, slow_start: bool) -> i64 {
        let delta = ssthresh - pipe;
        if delta < 0 {
            // Proportional: CEIL(prr_delivered * ssthresh / RecoverFS) - prr_out.
            let target =
                (self.delivered as u64 * ssthresh as u64).div_ceil(self.prior_cwnd.max(1) as u64);
            target as i64 - self.out as i64
        } else if slow_start {
            // PRR-SSRB: slow-start back up to ssthresh.
            delta.min((self.delivered as i64 - self.out as i64).max(delivered as i64) + 1)
        } else {
            // PRR-CRB: conservative.
            delta.min(delivered as i64)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proportional_phase_sends_ssthresh_over_recoverfs_per_delivered_segment() {
        // RFC 6937 §3 with RecoverFS = 20, ssthresh = 10: while pipe > ssthresh, one
        // segment out per two delivered.
        let mut p = Prr::default();
        p.init(20);
        // 1 delivered: CEIL(1 · 10 / 20) − 0 = 1; pipe 18 → cwnd 19.
        assert_eq!(p.cwnd(1, 18, 10, true, false), Some(19));
        p.on_sent();
        // 2 delivered in all: CEIL(2 · 10 / 20) − 1 = 0: hold.
        assert_eq!(p.cwnd(1, 17, 10, true, false), Some(17));
        // 4 delivered: CEIL(40 / 20) − 1 = 1.
        assert_eq!(p.cwnd(2, 15, 10, true, false), Some(16));
        // Nothing delivered: no change; unless this ACK starts recovery, which may
        // always send the fast retransmission.
        assert_eq!(p.cwnd(0, 15, 10, true, false), None);
        p.on_sent();
        assert_eq!(p.cwnd(0, 15, 10, true, true), Some(16));
        // Sent ahead of the proportion (5 out for 2 delivered): cwnd holds at pipe.
        let mut ahead = Prr::default();
        ahead.init(20);
        for _ in 0..5 {
            ahead.on_sent();
        }
        assert_eq!(ahead.cwnd(2, 15, 10, true, false), Some(15));
    }

    #[test]
    fn at_or_below_ssthresh_it_slow_starts_or_goes_one_for_one() {
        let mut p = Prr::default();
        p.init(20);
        // 12 delivered, 4 sent so far (a burst of losses): pipe 6 < ssthresh 10.
        for _ in 0..4 {
            p.on_sent();
        }
        p.delivered = 10;
        // PRR-SSRB: min(ssthresh − pipe, max(prr_delivered − prr_out, delivered) + 1)
        //         = min(4, max(12 − 4, 2) + 1) = 4 → cwnd 10, at ssthresh.
        let mut crb = p;
        assert_eq!(p.cwnd(2, 6, 10, true, false), Some(10));
        // PRR-CRB (a new loss, or no advance): min(4, delivered 2) → cwnd 8.
        assert_eq!(crb.cwnd(2, 6, 10, false, false), Some(8));
    }
}
