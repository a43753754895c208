//! "External" congestion control: the window belongs to an agent (RL-TCP's remote brain,
//! MA-CC's TCP agents), set through `Action::SetCwnd`. The sender still detects and
//! repairs losses; it never changes cwnd by itself except to 1 segment on a timeout.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{AckSample, CongestionOps, RateSample, Window};
use crate::time::Time;

#[derive(Clone, Copy, Debug, Default)]
pub struct External;

impl CongestionOps for External {
    fn name(&self) -> &'static str {
        "external"
    }

    fn ssthresh(&mut self, w: &Window, _now: Time) -> u32 {
        w.ssthresh
    }

    fn cong_avoid(&mut self, _w: &mut Window, _s: &AckSample) {}

    fn has_cong_control(&self) -> bool {
        true
    }

    fn cong_control(&mut self, _w: &mut Window, _s: &AckSample, _rs: &RateSample) {}
}

/// `kind = "external"`: no options.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExternalConfig {}

impl super::CcaParams for ExternalConfig {
    type Cc = External;
    fn build(&self, _: super::FlowParams) -> External {
        External
    }
}
