//! Congestion control behind one trait, modelled on Linux `struct tcp_congestion_ops`
//! (ssthresh on a congestion event, cong_avoid on ACKs, state and event hooks) and on
//! quinn-proto's `Controller`: the sender owns the window, the algorithm adjusts it.

pub mod bbr;
pub mod bbr3;
pub mod bic;
pub mod cubic;
pub mod dctcp;
pub mod external;
pub mod prague;
pub mod reno;
pub mod vegas;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::time::Time;

pub use bbr::Bbr;
pub use bbr3::Bbr3;
pub use bic::Bic;
pub use cubic::Cubic;
pub use dctcp::Dctcp;
pub use external::External;
pub use prague::Prague;
pub use reno::NewReno;
pub use vegas::Vegas;

/// The sender's window variables the algorithm may change (Linux `tcp_sock` subset).
#[derive(Clone, Debug)]
pub struct Window {
    /// Congestion window in segments.
    pub cwnd: u32,
    /// Slow-start threshold in segments (`u32::MAX`: not yet set, as Linux's infinite).
    pub ssthresh: u32,
    /// Fractional growth accumulator (Linux `snd_cwnd_cnt`).
    pub cwnd_cnt: u32,
    /// Upper bound on cwnd (Linux `snd_cwnd_clamp`).
    pub clamp: u32,
    /// Sender's maximum segment size in bytes (for algorithms that think in bytes).
    pub mss: u32,
    /// Pacing rate in bytes per second chosen by the algorithm (Linux `sk_pacing_rate`).
    /// `None`: when pacing is on, the sender derives it from cwnd and SRTT as Linux
    /// `tcp_update_pacing_rate` does.
    pub pacing_rate: Option<u64>,
}

impl Window {
    pub fn new(init_cwnd: u32, mss: u32) -> Self {
        Window {
            cwnd: init_cwnd,
            ssthresh: u32::MAX,
            cwnd_cnt: 0,
            clamp: u32::MAX / 2,
            mss,
            pacing_rate: None,
        }
    }

    #[inline]
    pub fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }

    /// Linux `tcp_slow_start`: grow by the segments acked, up to ssthresh; returns the
    /// acked segments left over for congestion avoidance.
    #[inline]
    pub fn slow_start(&mut self, acked: u32) -> u32 {
        let cwnd = self.cwnd.saturating_add(acked).min(self.ssthresh);
        let left = acked - (cwnd - self.cwnd).min(acked);
        self.cwnd = cwnd.min(self.clamp);
        left
    }

    /// The slow-start step that opens Linux `tcp_reno_cong_avoid` (and the `cong_avoid` of
    /// BIC, CUBIC, Vegas built on it): in slow start, `tcp_slow_start`; the segments left
    /// for congestion avoidance, `None` when slow start used them all.
    #[inline]
    pub fn slow_start_step(&mut self, acked: u32) -> Option<u32> {
        if !self.in_slow_start() {
            return Some(acked);
        }
        let left = self.slow_start(acked);
        (left > 0).then_some(left)
    }

    /// Linux `tcp_reno_cong_avoid` (RFC 5681 §3.1): slow start, then one segment per
    /// window of segments acked.
    #[inline]
    pub fn reno_cong_avoid(&mut self, acked: u32) {
        if let Some(acked) = self.slow_start_step(acked) {
            let cwnd = self.cwnd;
            self.cong_avoid_ai(cwnd, acked);
        }
    }

    /// Linux `tcp_reno_ssthresh`: half the window, at least 2 segments.
    #[inline]
    pub fn reno_ssthresh(&self) -> u32 {
        (self.cwnd >> 1).max(2)
    }

    /// Linux `tcp_cong_avoid_ai`: one segment per `w` segments acked.
    #[inline]
    pub fn cong_avoid_ai(&mut self, w: u32, acked: u32) {
        let w = w.max(1);
        if self.cwnd_cnt >= w {
            self.cwnd_cnt = 0;
            self.cwnd += 1;
        }
        self.cwnd_cnt += acked;
        if self.cwnd_cnt >= w {
            let delta = self.cwnd_cnt / w;
            self.cwnd_cnt -= delta * w;
            self.cwnd += delta;
        }
        self.cwnd = self.cwnd.min(self.clamp);
    }
}

/// What an ACK tells the algorithm.
#[derive(Clone, Copy, Debug, Default)]
pub struct AckSample {
    pub now: Time,
    /// Segments newly delivered by this ACK (cumulatively acked, less those already counted
    /// by duplicate ACKs).
    pub acked: u32,
    /// RTT sample from this ACK, if any.
    pub rtt: Option<Time>,
    pub srtt: Option<Time>,
    pub min_rtt: Option<Time>,
    /// Segments in flight after processing the ACK.
    pub in_flight: u32,
    /// Total segments delivered (cumulatively acked or SACKed) so far (Linux `tp->delivered`).
    pub delivered: u64,
    /// The sender's congestion-avoidance state after processing the ACK.
    pub state: CaState,
    /// The ACK carried ECE (classic or DCTCP feedback).
    pub ece: bool,
    /// Segments newly reported CE-marked by Accurate ECN feedback (Linux `ece_delta`).
    pub delivered_ce: u32,
    /// Total CE-marked segments reported so far (Linux `tp->delivered_ce`).
    pub total_delivered_ce: u64,
    /// Payload bytes newly acknowledged cumulatively.
    pub acked_bytes: u64,
    pub snd_una: u64,
    pub snd_nxt: u64,
    /// The sender was limited by cwnd at its last transmission (Linux
    /// `tcp_is_cwnd_limited`).
    pub cwnd_limited: bool,
}

#[cfg(test)]
impl AckSample {
    /// For the algorithms' unit tests: an ACK in the Open state covering `acked` segments,
    /// with every RTT estimate equal to `rtt`.
    pub fn steady(now: Time, acked: u32, rtt: Time) -> AckSample {
        AckSample {
            now,
            acked,
            rtt: Some(rtt),
            srtt: Some(rtt),
            min_rtt: Some(rtt),
            state: CaState::Open,
            ..AckSample::default()
        }
    }
}

/// ECN an algorithm requires of the connection (Linux `TCP_CONG_NEEDS_ECN`,
/// `TCP_CONG_NEEDS_ACCECN`, `TCP_CONG_WANTS_ECT_1`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EcnNeeds {
    pub ecn: bool,
    pub accecn: bool,
    pub ect1: bool,
}

/// A delivery-rate sample (Linux `struct rate_sample`, `tcp_rate.c`;
/// draft-cheng-iccrg-delivery-rate-estimation), taken on every ACK that delivers data.
#[derive(Clone, Copy, Debug, Default)]
pub struct RateSample {
    /// `delivered` when the most recently sent of the newly delivered segments was sent.
    pub prior_delivered: u64,
    /// Segments delivered over `interval`; `None` if no valid sample.
    pub delivered: Option<u32>,
    /// Length of the sampling interval: max(send interval, ACK interval).
    pub interval: Time,
    /// Segments newly marked lost while processing this ACK.
    pub losses: u32,
    /// Segments newly delivered (acked or SACKed) by this ACK.
    pub acked_sacked: u32,
    /// Segments in flight before this ACK was processed.
    pub prior_in_flight: u32,
    /// The sample was taken while the sender was application-limited.
    pub is_app_limited: bool,
    /// Segments in flight when the sampled segment was sent, itself included (Linux
    /// `rs->tx_in_flight`, BBRv3).
    pub tx_in_flight: u32,
    /// Segments marked lost since the sampled segment was sent (`rs->lost`, BBRv3).
    pub lost: u32,
    /// Segments reported CE-marked since the sampled segment was sent
    /// (`rs->delivered_ce`).
    pub delivered_ce: u32,
    /// The ACK carried CE feedback (`rs->is_ece`).
    pub is_ece: bool,
}

impl RateSample {
    /// Delivery rate in bytes per second, if the sample is valid.
    pub fn delivery_rate(&self, mss: u32) -> Option<f64> {
        let d = self.delivered?;
        (self.interval > 0).then(|| d as f64 * mss as f64 / crate::time::secs(self.interval))
    }
}

/// Congestion-avoidance states (Linux `enum tcp_ca_state`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum CaState {
    #[default]
    Open,
    /// Duplicate ACKs seen, not yet in recovery.
    Disorder,
    /// Reducing after an ECN echo (RFC 3168 §6.1.2).
    Cwr,
    /// Fast recovery (RFC 6582 / RFC 6675).
    Recovery,
    /// After a retransmission timeout.
    Loss,
}

impl CaState {
    pub fn name(self) -> &'static str {
        match self {
            CaState::Open => "open",
            CaState::Disorder => "disorder",
            CaState::Cwr => "cwr",
            CaState::Recovery => "recovery",
            CaState::Loss => "loss",
        }
    }
}

/// Events outside the ACK clock (Linux `enum tcp_ca_event`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CaEvent {
    /// First transmission after the connection was idle (nothing in flight).
    TxStart,
}

/// The algorithm interface. Defaults are Reno's.
pub trait CongestionOps {
    fn name(&self) -> &'static str;
    /// Linux `init`: the connection is established (called once, after the SYN exchange
    /// gave the first RTT sample, before the first data segment is sent).
    fn init(&mut self, _w: &mut Window, _now: Time, _srtt: Option<Time>, _min_rtt: Option<Time>) {}
    /// New ssthresh on a congestion event (loss or ECN echo), in segments.
    fn ssthresh(&mut self, w: &Window, now: Time) -> u32;
    /// Grow the window on an ACK while not reducing it (the sender only calls this when
    /// the flow is cwnd-limited, as Linux `tcp_is_cwnd_limited`).
    fn cong_avoid(&mut self, w: &mut Window, s: &AckSample);
    /// Every ACK, before the sender reacts to congestion signals (Linux `in_ack_event`).
    /// `acked` counts segments delivered by this ACK; the window fields are not final yet.
    fn in_ack_event(&mut self, _s: &AckSample) {}
    /// Every ACK that acknowledges new data, before `cong_avoid` (Linux `pkts_acked`; it may
    /// end slow start by setting ssthresh, as CUBIC's HyStart does).
    fn pkts_acked(&mut self, _w: &mut Window, _s: &AckSample) {}
    /// The sender entered `state`.
    fn set_state(&mut self, _w: &mut Window, _state: CaState, _now: Time) {}
    fn cwnd_event(&mut self, _w: &Window, _ev: CaEvent, _now: Time) {}
    /// Linux `cong_control`: algorithms that return true own cwnd and the pacing rate
    /// outright (BBR). The sender then calls [`CongestionOps::cong_control`] on every ACK
    /// instead of `cong_avoid`, and does not set cwnd itself on recovery, ECN or timeout
    /// (it still calls `ssthresh` and `set_state`).
    fn has_cong_control(&self) -> bool {
        false
    }
    /// Set cwnd (and `w.pacing_rate`) from this ACK's samples.
    fn cong_control(&mut self, _w: &mut Window, _s: &AckSample, _rs: &RateSample) {}
    /// The algorithm needs the sender to pace (Linux `SK_PACING_NEEDED`).
    fn wants_pacing(&self) -> bool {
        false
    }
    /// ECN the algorithm needs negotiated.
    fn ecn_needs(&self) -> EcnNeeds {
        EcnNeeds::default()
    }
    /// The algorithm reads the rate samples' `tx_in_flight` and `lost` (BBRv3), which the
    /// sender then records for each segment it sends.
    fn wants_tx_signals(&self) -> bool {
        false
    }
    /// Segments a paced sender puts in one burst (one TSO skb, Linux `tcp_tso_segs`). The
    /// default, 1, paces each segment; BBR sizes its bursts (`bbr_tso_segs_goal`).
    fn tso_segs(&self) -> u32 {
        1
    }
}

/// splitmix64 (Steele, Lea, Flood 2014): the next number of the stream `state`, for
/// the algorithms' seeded random choices (BBR's gain-cycle phase, BBRv3's probe waits).
#[inline]
pub(crate) fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// What an algorithm may know of its flow besides its own options, passed explicitly (the
/// algorithms never read the flow's `TcpConfig`).
#[derive(Clone, Copy, Debug, Default)]
pub struct FlowParams {
    /// The sender paces (the flow's `pacing` option, Linux `sk_pacing_status`).
    pub pacing: bool,
    /// Seed of the algorithm's random choices (only BBR makes any: the starting phase of
    /// its gain cycle); each flow gets its own, derived from the scenario seed.
    pub seed: u64,
}

/// An algorithm's options: the `cca = { kind = "...", ... }` table of a scenario, with its
/// defaults (`Default`, Linux's), its invariants (`validate`) and the algorithm it builds.
/// Each algorithm's file implements it for its own config type (cf. quinn's per-controller
/// `XxxConfig`, and [`crate::qdisc::QdiscParams`]).
pub trait CcaParams: Default {
    /// The algorithm (what [`Cc`] holds).
    type Cc;
    /// Check the options; the error is one sentence naming the algorithm.
    fn validate(&self) -> Result<(), String> {
        Ok(())
    }
    /// Build the algorithm for one flow.
    fn build(&self, flow: FlowParams) -> Self::Cc;
}

/// The registry: one line per algorithm generates the name enum [`CcaKind`], the
/// configuration enum [`CcaConfig`] (serde tag `kind`), the sender's [`Cc`] enum and the
/// dispatch of [`CongestionOps`] over it.
macro_rules! ccas {
    ($( $(#[$attr:meta])* $Kind:ident => $V:ident($C:ty) ),* $(,)?) => {
        /// Congestion-control algorithm names as in configuration.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
        #[serde(rename_all = "snake_case")]
        pub enum CcaKind {
            $( $(#[$attr])* $Kind, )*
        }

        /// A flow's congestion control and its options: one variant per algorithm file in
        /// `tcp/cc/`, each carrying that algorithm's own config type.
        #[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
        #[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
        pub enum CcaConfig {
            $( $(#[$attr])* $Kind($C), )*
        }

        /// The algorithms a sender can hold (enum dispatch: `Clone`, no virtual calls).
        #[derive(Clone, Debug)]
        pub enum Cc {
            $( $V(<$C as CcaParams>::Cc), )*
        }

        impl CcaConfig {
            /// The algorithm's name.
            pub fn kind(&self) -> CcaKind {
                match self { $( CcaConfig::$Kind(_) => CcaKind::$Kind, )* }
            }
            /// Check the options (see [`CcaParams::validate`]).
            pub fn validate(&self) -> Result<(), String> {
                match self { $( CcaConfig::$Kind(c) => c.validate(), )* }
            }
            /// Every algorithm with its default options (the contract exported to Python).
            pub fn all_defaults() -> Vec<CcaConfig> {
                vec![$( CcaConfig::$Kind(<$C>::default()), )*]
            }
        }

        impl From<CcaKind> for CcaConfig {
            /// The algorithm `kind` with its default options.
            fn from(kind: CcaKind) -> CcaConfig {
                match kind { $( CcaKind::$Kind => CcaConfig::$Kind(<$C>::default()), )* }
            }
        }

        impl Cc {
            /// The algorithm `cfg` names, with its options, for a flow.
            pub fn new(cfg: &CcaConfig, flow: FlowParams) -> Cc {
                match cfg { $( CcaConfig::$Kind(c) => Cc::$V(c.build(flow)), )* }
            }
        }

        impl CongestionOps for Cc {
            fn name(&self) -> &'static str {
                match self { $( Cc::$V(c) => c.name(), )* }
            }
            #[inline]
            fn init(&mut self, w: &mut Window, now: Time, srtt: Option<Time>, min_rtt: Option<Time>) {
                match self { $( Cc::$V(c) => c.init(w, now, srtt, min_rtt), )* }
            }
            #[inline]
            fn ssthresh(&mut self, w: &Window, now: Time) -> u32 {
                match self { $( Cc::$V(c) => c.ssthresh(w, now), )* }
            }
            #[inline]
            fn cong_avoid(&mut self, w: &mut Window, s: &AckSample) {
                match self { $( Cc::$V(c) => c.cong_avoid(w, s), )* }
            }
            #[inline]
            fn in_ack_event(&mut self, s: &AckSample) {
                match self { $( Cc::$V(c) => c.in_ack_event(s), )* }
            }
            #[inline]
            fn pkts_acked(&mut self, w: &mut Window, s: &AckSample) {
                match self { $( Cc::$V(c) => c.pkts_acked(w, s), )* }
            }
            #[inline]
            fn set_state(&mut self, w: &mut Window, state: CaState, now: Time) {
                match self { $( Cc::$V(c) => c.set_state(w, state, now), )* }
            }
            #[inline]
            fn cwnd_event(&mut self, w: &Window, ev: CaEvent, now: Time) {
                match self { $( Cc::$V(c) => c.cwnd_event(w, ev, now), )* }
            }
            #[inline]
            fn has_cong_control(&self) -> bool {
                match self { $( Cc::$V(c) => c.has_cong_control(), )* }
            }
            #[inline]
            fn cong_control(&mut self, w: &mut Window, s: &AckSample, rs: &RateSample) {
                match self { $( Cc::$V(c) => c.cong_control(w, s, rs), )* }
            }
            #[inline]
            fn wants_pacing(&self) -> bool {
                match self { $( Cc::$V(c) => c.wants_pacing(), )* }
            }
            fn ecn_needs(&self) -> EcnNeeds {
                match self { $( Cc::$V(c) => c.ecn_needs(), )* }
            }
            fn wants_tx_signals(&self) -> bool {
                match self { $( Cc::$V(c) => c.wants_tx_signals(), )* }
            }
            #[inline]
            fn tso_segs(&self) -> u32 {
                match self { $( Cc::$V(c) => c.tso_segs(), )* }
            }
        }
    };
}

ccas! {
    /// NewReno (RFC 5681 / 6582; Linux `reno`).
    Newreno => NewReno(reno::NewRenoConfig),
    /// CUBIC (RFC 9438; Linux `tcp_cubic.c`).
    Cubic => Cubic(cubic::CubicConfig),
    /// BIC (Linux `tcp_bic.c`).
    Bic => Bic(bic::BicConfig),
    /// BBR v1 (Linux `tcp_bbr.c`).
    Bbr => Bbr(bbr::BbrConfig),
    /// Vegas (Linux `tcp_vegas.c`).
    Vegas => Vegas(vegas::VegasConfig),
    /// DCTCP (RFC 8257; Linux `tcp_dctcp.c`).
    Dctcp => Dctcp(dctcp::DctcpConfig),
    /// TCP Prague (L4STeam `tcp_prague.c`).
    Prague => Prague(prague::PragueConfig),
    /// BBRv3 (draft-ietf-ccwg-bbr; google/bbr `v3` `tcp_bbr.c`).
    Bbr3 => Bbr3(bbr3::Bbr3Config),
    /// cwnd and ssthresh are set only by control actions (`set_cwnd`) (RL-TCP's remote brain).
    External => External(external::ExternalConfig),
}

impl Default for CcaKind {
    /// NewReno, as Linux's built-in `reno`.
    fn default() -> Self {
        CcaKind::Newreno
    }
}

impl Default for CcaConfig {
    fn default() -> Self {
        CcaKind::default().into()
    }
}

impl Cc {
    /// The algorithm `kind` with its default options and `seed`, on an unpaced flow.
    pub fn with_seed(kind: CcaKind, seed: u64) -> Cc {
        Cc::new(
            &kind.into(),
            FlowParams {
                pacing: false,
                seed,
            },
        )
    }

    /// BBR's state-machine mode (`"startup"`, `"drain"`, `"probe_bw"`, `"probe_rtt"`;
    /// BBRv3 names ProbeBW's phase: `"probe_bw_down"` …); `None` for other algorithms.
    pub fn mode(&self) -> Option<&'static str> {
        match self {
            Cc::Bbr(b) => Some(b.mode()),
            Cc::Bbr3(b) => Some(b.mode()),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slow_start_stops_at_ssthresh_and_returns_the_rest() {
        let mut w = Window::new(10, 1448);
        w.ssthresh = 12;
        assert_eq!(w.slow_start(5), 3);
        assert_eq!(w.cwnd, 12);
    }

    /// Each algorithm's default options are valid, name their kind, and read back equal
    /// from the `{"kind": ...}` table the contract exports.
    #[test]
    fn every_kind_has_valid_default_options_that_round_trip() {
        for cfg in CcaConfig::all_defaults() {
            assert!(cfg.validate().is_ok(), "{cfg:?}");
            assert_eq!(CcaConfig::from(cfg.kind()).kind(), cfg.kind());
            let json = serde_json::to_string(&cfg).unwrap();
            let back: CcaConfig = serde_json::from_str(&json).unwrap();
            assert_eq!(serde_json::to_string(&back).unwrap(), json);
            let cc = Cc::new(&cfg, FlowParams::default());
            assert_eq!(
                format!("\"{}\"", cc.name()),
                serde_json::to_string(&cfg.kind()).unwrap()
            );
        }
    }

    #[test]
    fn additive_increase_is_one_segment_per_window() {
        let mut w = Window::new(10, 1448);
        w.ssthresh = 10;
        for _ in 0..10 {
            w.cong_avoid_ai(10, 1);
        }
        assert_eq!(w.cwnd, 11);
    }
}
