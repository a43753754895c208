//! The cable modem's L-delay estimate on a DOCSIS upstream: MULPI Annex O's virtual queue
//! (`qdelayCoupledV`), aligned to the actual queue beyond what the request-grant loop
//! holds (`calcAllowedAQ`); see the parent module's notes.

use super::{DocsisDualq, LDelay, Upstream};
use crate::time::{Time, SEC, US};

impl DocsisDualq {
    /// The DOCSIS upstream this queue feeds (the modem's queue); called once when the
    /// network is built.
    pub fn set_upstream(&mut self, up: Upstream) {
        self.upstream = Some(up);
        self.set_estimator();
    }

    /// Which L delay estimate is in force, and the virtual queue's parameters.
    pub(super) fn set_estimator(&mut self) {
        self.virtual_q = match self.cfg.l_delay {
            LDelay::Auto => self.upstream.is_some(),
            LDelay::Queue => false,
            LDelay::Virtual => true,
        };
        let up = self.upstream.unwrap_or(Upstream {
            loop_delay: 0,
            map_interval: 0,
            pgs_bytes: 0,
        });
        // ns-3 `VqInterval`: "typically half of MAP interval", 500 µs by default.
        self.vq_interval = self
            .cfg
            .vq_interval_ns
            .unwrap_or(if up.map_interval > 0 {
                up.map_interval / 2
            } else {
                500 * US
            })
            .max(1);
        self.next_align = self.vq_interval;
        // Annex O `calcAllowedAQ`: what the request-grant loop holds in the actual queue
        // of a flow sending at MAX_RATE, loopDelay·(MAX_RATE − GGR) + GGR·GGI, in bytes.
        let ggr = if up.map_interval > 0 {
            (up.pgs_bytes as f64 * 8.0 * SEC as f64 / up.map_interval as f64)
                .min(self.rate_bps as f64)
        } else {
            0.0
        };
        let ggr_ggi = (ggr * up.map_interval as f64 / SEC as f64 / 8.0).min(up.pgs_bytes as f64);
        self.allowed_aq =
            up.loop_delay as f64 * (self.rate_bps as f64 - ggr) / SEC as f64 / 8.0 + ggr_ggi;
    }

    /// Annex O `qdelayCoupledV(size)`: drain the virtual queue at MAX_RATE to `now` and add
    /// `size` bytes; its delay.
    pub(super) fn vq_add(&mut self, size: u32, now: Time) -> Time {
        self.vq = self.vq.saturating_sub(now - self.vq_t) + self.ser_ns(size as u64);
        self.vq_t = now;
        self.vq
    }

    /// Take back a packet that did not enter the L queue (ns-3 `DecreaseVq`).
    pub(super) fn vq_sub(&mut self, size: u32) {
        self.vq = self.vq.saturating_sub(self.ser_ns(size as u64));
    }

    /// Annex O's alignment at `t`: the EWMA of the actual L queue and, where it exceeds
    /// the allowed queue, the virtual queue raised to the excess (as delay at MAX_RATE), so
    /// that a queue the grants do not drain is seen however smoothly its arrivals came.
    pub(super) fn align_vq(&mut self, t: Time) {
        let alpha = (-(self.cfg.lg_vq_ewma as f64)).exp2();
        self.avg_aq += alpha * (self.lq.bytes() as f64 - self.avg_aq);
        if self.avg_aq > self.allowed_aq {
            let excess = self.ser_ns((self.avg_aq - self.allowed_aq) as u64);
            self.vq = self
                .vq
                .saturating_sub(t.saturating_sub(self.vq_t))
                .max(excess);
            self.vq_t = self.vq_t.max(t);
        }
    }

    /// The virtual queue's delay now and the EWMA of the actual queue in bytes (0s if it
    /// is not in force).
    pub fn virtual_queue(&self, now: Time) -> (Time, f64) {
        if !self.virtual_q {
            return (0, 0.0);
        }
        (
            self.vq.saturating_sub(now.saturating_sub(self.vq_t)),
            self.avg_aq,
        )
    }

    /// The link's rate, which MAX_RATE defaults to (`rate_bps` unset); called once when
    /// the network is built.
    pub fn set_link_rate(&mut self, bps: u64) {
        // (Re-derives the virtual queue's allowed bytes, which scale with the rate.)
        if self.cfg.rate_bps.is_none() {
            self.set_rate(bps);
        }
    }
}
