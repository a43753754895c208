//! What one ACK brought to the sender, gathered as it is processed.

use super::rate::RateAcc;
use super::scoreboard::CumAck;
use crate::time::Time;

/// What one ACK brought, gathered step by step as `on_ack` processes it (Linux's `flag`
/// bits and the `prior_*` values of `tcp_ack`).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct AckInfo {
    pub(super) ack: u64,
    /// The ACK moved snd_una.
    pub(super) advanced: bool,
    /// A duplicate ACK (RFC 5681 §2): no advance, no window update, no data, data out.
    pub(super) is_dupack: bool,
    /// Payload bytes newly acknowledged cumulatively.
    pub(super) acked_bytes: u64,
    pub(super) prior_in_flight: u32,
    pub(super) prior_sacked: u32,
    pub(super) prior_lost: u32,
    pub(super) cum: CumAck,
    pub(super) newly_sacked: u32,
    /// The rate sample in the making.
    pub(super) rate: RateAcc,
    /// RACK: (send time, end) of the most recently sent segment this ACK delivered whose
    /// RTT is unambiguous (Linux `tcp_rack_advance`).
    pub(super) rack_newest: Option<(Time, u64)>,
    /// Recovery began on this ACK with a fast retransmission.
    pub(super) fast_rexmit: bool,
}
