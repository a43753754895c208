//! DCTCP (RFC 8257; Linux `tcp_dctcp.c`): the sender keeps α, an EWMA (gain g = 1/16) of
//! the fraction of segments delivered with ECE over each window, and on an ECN echo cuts
//! cwnd to cwnd·(1 − α/2) once per window. Window growth is Reno's; a loss halves cwnd.
//! The receiver's echo (ECE mirrors the CE state, immediate ACK on a change) is in
//! `tcp/receiver.rs`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{AckSample, CaState, CongestionOps, EcnNeeds, NewReno, Window};
use crate::time::Time;

#[derive(Clone, Debug)]
pub struct Dctcp {
    /// RFC 8257 §3.3 / Linux `dctcp_shift_g = 4`.
    pub g: f64,
    /// Congestion estimate; starts at 1 (Linux `dctcp_alpha_on_init = DCTCP_MAX_ALPHA`).
    alpha: f64,
    /// End of the current observation window (snd_nxt when it began).
    next_seq: Option<u64>,
    acked: u64,
    acked_ece: u64,
}

impl Default for Dctcp {
    fn default() -> Self {
        Dctcp {
            g: 1.0 / 16.0,
            alpha: 1.0,
            next_seq: None,
            acked: 0,
            acked_ece: 0,
        }
    }
}

impl Dctcp {
    pub fn alpha(&self) -> f64 {
        self.alpha
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

    /// RFC 8257 §3.3: cwnd · (1 − α/2), at least 2 segments (Linux `dctcp_ssthresh`).
    fn ssthresh(&mut self, w: &Window, _now: Time) -> u32 {
        let cut = (w.cwnd as f64 * self.alpha / 2.0) as u32;
        (w.cwnd - cut.min(w.cwnd)).max(2)
    }

    /// RFC 8257 §3.3 / Linux `dctcp_update_alpha`: count delivered segments and those
    /// acknowledged with ECE; once snd_una passes the window's end, fold the fraction F
    /// into α = (1 − g)·α + g·F and start a new window.
    fn in_ack_event(&mut self, s: &AckSample) {
        let end = *self.next_seq.get_or_insert(s.snd_nxt);
        self.acked += s.acked as u64;
        if s.ece {
            self.acked_ece += s.acked as u64;
        }
        if s.snd_una >= end {
            let f = if self.acked > 0 {
                self.acked_ece as f64 / self.acked as f64
            } else {
                0.0
            };
            self.alpha = ((1.0 - self.g) * self.alpha + self.g * f).min(1.0);
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
        // Window 1 ends at 100: 10 segments, 5 with ECE → F = 0.5.
        d.in_ack_event(&ack(5, true, 50, 100));
        d.in_ack_event(&ack(5, false, 100, 200));
        let a1 = 15.0 / 16.0 + 0.5 / 16.0;
        assert!((d.alpha() - a1).abs() < 1e-12);
        // Window 2 ends at 200, no marks → α decays by (1 − g).
        d.in_ack_event(&ack(10, false, 200, 300));
        assert!((d.alpha() - a1 * 15.0 / 16.0).abs() < 1e-12);
    }

    #[test]
    fn reduction_is_one_minus_half_alpha() {
        let mut d = Dctcp::default();
        let w = Window::new(100, 1448);
        assert_eq!(d.ssthresh(&w, 0), 50); // α = 1 at start: halve
        d.alpha = 0.2;
        assert_eq!(d.ssthresh(&w, 0), 90);
        d.alpha = 0.0;
        assert_eq!(d.ssthresh(&w, 0), 100);
    }
}
