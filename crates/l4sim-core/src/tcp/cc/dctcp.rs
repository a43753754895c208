//! DCTCP (RFC 8257; Linux `tcp_dctcp.c`): the sender keeps α, an EWMA (gain g = 1/16) of
//! the fraction of segments delivered with ECE over each window, and on an ECN echo cuts
//! cwnd to cwnd·(1 − α/2) once per window. Window growth is Reno's; a loss halves cwnd.
//! The receiver's echo (ECE mirrors the CE state, immediate ACK on a change) is in
//! `tcp/receiver.rs`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{AckSample, CaState, CongestionOps, EcnNeeds, NewReno, Window};
use crate::time::Time;

/// Linux `DCTCP_MAX_ALPHA`: α is kept as an integer in 1/1024ths, as the kernel keeps it.
const MAX_ALPHA: u32 = 1024;

#[derive(Clone, Debug)]
pub struct Dctcp {
    /// RFC 8257 §3.3 gain g = 1/2^shift_g; Linux `dctcp_shift_g = 4`.
    pub shift_g: u32,
    /// Congestion estimate in 1/1024ths; starts at 1024 (Linux `dctcp_alpha_on_init =
    /// DCTCP_MAX_ALPHA`).
    alpha: u32,
    /// End of the current observation window (snd_nxt when it began).
    next_seq: Option<u64>,
    acked: u32,
    acked_ece: u32,
}

impl Default for Dctcp {
    fn default() -> Self {
        Dctcp {
            shift_g: 4,
            alpha: MAX_ALPHA,
            next_seq: None,
            acked: 0,
            acked_ece: 0,
        }
    }
}

impl Dctcp {
    /// α as a fraction (the kernel's `dctcp_alpha / 1024`).
    pub fn alpha(&self) -> f64 {
        f64::from(self.alpha) / f64::from(MAX_ALPHA)
    }
}

/// Linux `min_not_zero`.
fn min_not_zero(a: u32, b: u32) -> u32 {
    match (a, b) {
        (0, b) => b,
        (a, 0) => a,
        (a, b) => a.min(b),
    }
}

impl CongestionOps for Dctcp {
    fn name(&self) -> &'static str {
        "dctcp"
    }

    fn ecn_needs(&self) -> EcnNeeds {
        // Linux TCP_CONG_NEEDS_ECN; data stays ECT(0) unless the flow asks for ECT(1).
        EcnNeeds {
            ecn: true,
            ..EcnNeeds::default()
        }
    }

    /// RFC 8257 §3.3: cwnd · (1 − α/2), at least 2 segments, in the kernel's integers
    /// (Linux `dctcp_ssthresh`: `cwnd - ((cwnd * dctcp_alpha) >> 11)`): the cut rounds down,
    /// so α < 2048 / cwnd cuts nothing.
    fn ssthresh(&mut self, w: &Window, _now: Time) -> u32 {
        let cut = ((u64::from(w.cwnd) * u64::from(self.alpha)) >> 11) as u32;
        (w.cwnd - cut.min(w.cwnd)).max(2)
    }

    /// RFC 8257 §3.3 / Linux `dctcp_update_alpha`: count delivered segments and those
    /// acknowledged with ECE; once snd_una passes the window's end, fold the fraction F
    /// into α = (1 − g)·α + g·F and start a new window. In the kernel's fixed point: the
    /// decay is `alpha -= min_not_zero(alpha, alpha >> g)`, so an α below 2^g (16/1024)
    /// drops to 0 at once, and g·F is `(ce << (10 - g)) / delivered`, rounded down. So once
    /// α is below 16, windows with F < 1/4 keep it below 16: Linux DCTCP then hardly
    /// reduces at all until a window sees a quarter of its segments marked.
    fn in_ack_event(&mut self, s: &AckSample) {
        let end = *self.next_seq.get_or_insert(s.snd_nxt);
        self.acked = self.acked.saturating_add(s.acked);
        if s.ece {
            self.acked_ece = self.acked_ece.saturating_add(s.acked);
        }
        if s.snd_una >= end {
            let mut alpha = self.alpha;
            alpha -= min_not_zero(alpha, alpha >> self.shift_g);
            if self.acked_ece > 0 {
                let f = (u64::from(self.acked_ece) << (10 - self.shift_g))
                    / u64::from(self.acked.max(1));
                alpha = (u64::from(alpha) + f).min(u64::from(MAX_ALPHA)) as u32;
            }
            self.alpha = alpha;
            self.acked = 0;
            self.acked_ece = 0;
            self.next_seq = Some(s.snd_nxt);
        }
    }

    fn cong_avoid(&mut self, w: &mut Window, s: &AckSample) {
        NewReno.cong_avoid(w, s);
    }

    /// Linux `dctcp_react_to_loss`: a loss halves the window as Reno does.
    fn set_state(&mut self, w: &mut Window, state: CaState, _now: Time) {
        if state == CaState::Recovery {
            w.ssthresh = w.reno_ssthresh();
        }
    }
}

/// `kind = "dctcp"`: no options.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DctcpConfig {}

impl super::CcaParams for DctcpConfig {
    type Cc = Dctcp;
    fn build(&self, _: super::FlowParams) -> Dctcp {
        Dctcp::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ack(acked: u32, ece: bool, una: u64, nxt: u64) -> AckSample {
        AckSample {
            acked,
            ece,
            snd_una: una,
            snd_nxt: nxt,
            ..AckSample::default()
        }
    }

    #[test]
    fn alpha_is_an_ewma_of_the_marked_fraction_per_window() {
        let mut d = Dctcp::default();
        // Window 1 ends at 100: 10 segments, 5 with ECE → F = 0.5. In 1/1024ths (Linux
        // dctcp_update_alpha): 1024 − 1024/16 = 960, plus (5 << 6) / 10 = 32.
        d.in_ack_event(&ack(5, true, 50, 100));
        d.in_ack_event(&ack(5, false, 100, 200));
        assert_eq!(d.alpha, 992);
        // Window 2 ends at 200, no marks → α decays by α >> 4 = 62.
        d.in_ack_event(&ack(10, false, 200, 300));
        assert_eq!(d.alpha, 930);
    }

    #[test]
    fn a_small_alpha_is_zeroed_and_stays_below_a_sixteenth() {
        // Linux dctcp_update_alpha: alpha -= min_not_zero(alpha, alpha >> 4) takes all of
        // an α below 16, and a window with F < 1/4 adds (ce << 6) / delivered < 16.
        let mut d = Dctcp {
            alpha: 15,
            ..Dctcp::default()
        };
        d.in_ack_event(&ack(80, false, 0, 100));
        d.in_ack_event(&ack(80, false, 100, 200));
        assert_eq!(d.alpha, 0);
        // 80 segments a window, 19 marked (F = 0.24): α = 19·64/80 = 15 after each window,
        // then zeroed by the next one's decay before its own marks are added.
        let mut end = 200; // the window the last ACK opened
        for _ in 0..20 {
            d.in_ack_event(&ack(19, true, end - 50, end + 100));
            d.in_ack_event(&ack(61, false, end, end + 100));
            end += 100;
            assert_eq!(d.alpha, 15);
        }
        // ... and at cwnd 80 such an α cuts nothing (80 · 15 >> 11 = 0).
        assert_eq!(d.ssthresh(&Window::new(80, 1448), 0), 80);
        // A window with F = 1/4 lifts α to 16, which the next decay keeps (16 >> 4 = 1).
        d.in_ack_event(&ack(20, true, end - 50, end + 100));
        d.in_ack_event(&ack(60, false, end, end + 100));
        assert_eq!(d.alpha, 16);
    }

    #[test]
    fn reduction_is_one_minus_half_alpha() {
        let mut d = Dctcp::default();
        let w = Window::new(100, 1448);
        assert_eq!(d.ssthresh(&w, 0), 50); // α = 1 at start: halve
        d.alpha = 205; // 0.2 · 1024: 100 − (100 · 205 >> 11) = 100 − 10
        assert_eq!(d.ssthresh(&w, 0), 90);
        d.alpha = 20; // 100 · 20 >> 11 = 0: too small to cut
        assert_eq!(d.ssthresh(&w, 0), 100);
        d.alpha = 0;
        assert_eq!(d.ssthresh(&w, 0), 100);
    }
}
