//! The seam for a datagram sender's congestion control (SCReAM, UDP Prague, …): it sees
//! each packet sent and each feedback report, and may set the encoder's target bitrate,
//! the pacing rate, hold packets back, or ask for a key frame. `NoCc` does none of that:
//! the source sends what it produces, at its configured rate.

pub mod scream;
pub mod udp_prague;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::time::Time;

use super::feedback::Report;
use super::prague_ack::PragueAck;
use scream::{Scream, ScreamConfig};
use udp_prague::{UdpPrague, UdpPragueConfig};

/// Which congestion control a UDP flow's sender runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum DatagramCcConfig {
    /// No congestion control: the configured rate, whatever the feedback says.
    #[default]
    None,
    /// SCReAM v2 (draft-ietf-ccwg-rfc8298bis-screamv2), L4S or classic mode.
    Scream(ScreamConfig),
    /// UDP Prague (L4STeam/udp_prague `prague_cc.cpp`): bulk with a `cbr` source, frame
    /// mode with a `video` source.
    UdpPrague(UdpPragueConfig),
}

impl DatagramCcConfig {
    pub fn is_none(&self) -> bool {
        matches!(self, DatagramCcConfig::None)
    }

    pub fn build(&self) -> Box<dyn DatagramCc> {
        match self {
            DatagramCcConfig::None => Box::new(NoCc),
            DatagramCcConfig::Scream(c) => Box::new(Scream::new(c)),
            DatagramCcConfig::UdpPrague(c) => Box::new(UdpPrague::new(c)),
        }
    }

    /// Whether the sender needs the receiver's feedback (every CC but none reads it).
    pub fn needs_feedback(&self) -> bool {
        !self.is_none()
    }

    /// Whether a `cbr` source under this congestion control is greedy (always has data;
    /// the congestion control's pacing rate, window and packet size set what leaves, the
    /// flow's rate caps it) rather than a fixed rate.
    pub fn drives_cbr(&self) -> bool {
        matches!(self, DatagramCcConfig::UdpPrague(_))
    }

    pub fn validate(&self) -> Result<(), String> {
        match self {
            DatagramCcConfig::None => Ok(()),
            DatagramCcConfig::Scream(c) => c.validate(),
            DatagramCcConfig::UdpPrague(c) => c.validate(),
        }
    }
}

/// A datagram sender's congestion control. Every method but `name` and `box_clone` has a
/// default that leaves the sender as configured.
pub trait DatagramCc: std::fmt::Debug + Send + Sync {
    fn name(&self) -> &'static str;

    /// Packet `seq` of `bytes` on the wire left the sender at `now`.
    fn on_sent(&mut self, _now: Time, _seq: u64, _bytes: u32) {}

    /// A feedback report reached the sender at `now`.
    fn on_feedback(&mut self, _now: Time, _report: &Report) {}

    /// The encoder's target bitrate (`None`: the configured rate).
    fn target_rate_bps(&self) -> Option<u64> {
        None
    }

    /// The pacing rate (`None`: the source's, pacing factor × target).
    fn pacing_rate_bps(&self) -> Option<u64> {
        None
    }

    /// Whether a packet of `bytes` may leave now (a congestion window); when it may not,
    /// the sender waits for the next report.
    fn can_send(&self, _now: Time, _bytes: u32) -> bool {
        true
    }

    /// The flow is set up at `now`: its largest packet on the wire and, for a frame source,
    /// the frame interval.
    fn configure(&mut self, _now: Time, _max_packet_bytes: u32, _frame_interval: Option<Time>) {}

    /// An ACK of udp_prague's own scheme (`feedback = { kind = "prague" }`) reached the
    /// sender at `now`.
    fn on_ack(&mut self, _now: Time, _ack: &PragueAck) {}

    /// A greedy (`drives_cbr`) sender's next packet size on the wire (`None`: the flow's).
    fn packet_bytes(&self) -> Option<u32> {
        None
    }

    /// A greedy sender's packets sent back to back per pacing step.
    fn burst_packets(&self) -> u32 {
        1
    }

    /// While `can_send` refuses, when the sender stops waiting for feedback and calls
    /// `on_timeout` (`None`: it waits for the next report or frame).
    fn timeout(&self) -> Option<Time> {
        None
    }

    /// No feedback came before `timeout`.
    fn on_timeout(&mut self, _now: Time) {}

    /// Whether the next frame should be a key frame (asked once: the call clears it).
    fn take_key_frame_request(&mut self) -> bool {
        false
    }

    /// The sender's RTP queue at `now`: its oldest packet has waited `delay` (0: empty);
    /// `new_frame`: a frame just joined it, else a report was just read. Returns whether
    /// to clear the queue (its frames never complete); a key-frame request may follow.
    fn on_rtp_queue(&mut self, _now: Time, _delay: Time, _new_frame: bool) -> bool {
        false
    }

    /// A copy, so that a forked simulation carries on with its own state.
    fn box_clone(&self) -> Box<dyn DatagramCc>;
}

impl Clone for Box<dyn DatagramCc> {
    fn clone(&self) -> Self {
        self.box_clone()
    }
}

/// No congestion control.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoCc;

impl DatagramCc for NoCc {
    fn name(&self) -> &'static str {
        "none"
    }

    fn box_clone(&self) -> Box<dyn DatagramCc> {
        Box::new(*self)
    }
}
