//! NewReno's window rules: Linux `tcp_reno_ssthresh` / `tcp_reno_cong_avoid`
//! (RFC 5681 §3.1 slow start and congestion avoidance; the loss recovery itself,
//! RFC 6582, lives in the sender).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{AckSample, CongestionOps, Window};
use crate::time::Time;

#[derive(Clone, Copy, Debug, Default)]
pub struct NewReno;

impl CongestionOps for NewReno {
    fn name(&self) -> &'static str {
        "newreno"
    }

    /// Halve the window, at least 2 segments. Linux halves cwnd; RFC 5681 (4) halves the
    /// flight size — the same for a cwnd-limited sender.
    fn ssthresh(&mut self, w: &Window, _now: Time) -> u32 {
        w.reno_ssthresh()
    }

    fn cong_avoid(&mut self, w: &mut Window, s: &AckSample) {
        w.reno_cong_avoid(s.acked);
    }
}

/// `kind = "newreno"`: no options.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewRenoConfig {}

impl super::CcaParams for NewRenoConfig {
    type Cc = NewReno;
    fn build(&self, _: super::FlowParams) -> NewReno {
        NewReno
    }
}
