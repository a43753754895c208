//! SCReAM v2 (Self-Clocked Rate Adaptation for Multimedia), the sender's congestion control
//! of draft-ietf-ccwg-rfc8298bis-screamv2, after Ericsson's reference code
//! (EricssonResearch/scream, `code/ScreamV2Tx.cpp`, `code/ScreamV2TxStream.cpp`,
//! `code/ScreamTx.h`; cited below as `Tx.cpp`, `Stream.cpp` and `Tx.h` with the function).
//!
//! A reference window (`ref_wnd`, the code's `cwnd`) of bytes in flight is cut on
//! congestion: by `l4s_alpha / 2` on CE marks in L4S mode (the fraction of packets marked,
//! averaged as DCTCP does), by a fixed beta on CE in classic mode and on loss, and by a
//! "virtual" alpha when the estimated queue delay exceeds half the queue-delay target. It
//! grows by about one MSS per RTT plus a multiplicative part (at most 5 % per RTT) that
//! returns slowly after congestion. The encoder's target bitrate is the window over the
//! smoothed RTT, less small margins, within the stream's min and max; packets are paced at
//! 1.5 times the target; a window check (a headroom of 1.5 to 5 windows) holds packets
//! back; the RTP queue is cleared, and a key frame asked for, when its oldest packet waited
//! too long.
//!
//! Left out: shared-bottleneck detection (off by default, `Tx.h` `kEnableSbd`), clock-drift
//! compensation (the simulator's clocks agree), several streams and their priorities (one
//! stream per flow), the MSS list, relaxed pacing, the frame-size histogram
//! (`relFrameSizeHigh` stays 1) and adaptive pacing scale, the rate-policer protection
//! (off by default), the encoder's target-rate scale (off in the BW test tool, whose runs
//! are the repository's test records), microbursts (packets are paced one by one).
//! Everything runs on f64 seconds and bytes, as the reference runs on floats.

use std::collections::VecDeque;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::packet::Ecn;
use crate::time::{Time, MS, SEC};

use super::DatagramCc;
use crate::app::feedback::Report;

/// How SCReAM reads ECN.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ScreamMode {
    /// Scalable: the window shrinks with the fraction of CE-marked packets (ECT(1)).
    #[default]
    L4s,
    /// Classic: any CE mark in a feedback cuts the window by a fixed beta (ECT(0) or none).
    Classic,
}

/// Which version of the reference's rules the sender follows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum ScreamRules {
    /// The reference code as it is now (the files cited above).
    #[default]
    #[serde(rename = "latest")]
    Latest,
    /// The L4S and window rules of the commit the repository's `test-record.md` ran
    /// (76a298ad, 2024-10-31): a plain EWMA for `l4sAlpha` (`kL4sG = 1/32`), back-off
    /// `alpha / 2` limited only at small windows and near the last congestion window, no
    /// queue-delay-variation limits, multiplicative increase back over `postCongestionDelay`
    /// (4 s), a fixed window headroom of 1.5 (`kCwndOverhead`), virtual CE only while L4S
    /// marking is absent. The rules the later commits changed (ecn-CE scaling by RTT and
    /// by the acked rate, the fast-attack alpha, adaptive headroom) are then off.
    #[serde(rename = "2024-10-31")]
    Record2024,
}

/// SCReAM v2's parameters. Defaults are those of the reference's BW test tool
/// (`code/scream_sender.cpp`), which produced the repository's `test-record.md`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct ScreamConfig {
    pub mode: ScreamMode,
    /// Lowest target bitrate (bit/s; `scream_sender.cpp` `minRate = 1000` kbit/s).
    pub min_rate_bps: u64,
    /// Highest target bitrate (bit/s; `scream_sender.cpp` `maxRate = 500000` kbit/s).
    pub max_rate_bps: u64,
    /// The first target bitrate (bit/s; `scream_sender.cpp` `initRate = 1000` kbit/s). The
    /// initial window carries it for 100 ms (`scream_sender.cpp`: `initRate * 100 / 8`).
    pub start_rate_bps: u64,
    /// Queue-delay target (ns; `scream_sender.cpp` `delayTarget = 0.06` s).
    pub qdelay_target_ns: u64,
    /// The reference's rules: its current code or the test records' 2024-10-31 commit.
    pub rules: ScreamRules,
}

impl Default for ScreamConfig {
    fn default() -> Self {
        ScreamConfig {
            mode: ScreamMode::L4s,
            min_rate_bps: 1_000_000,
            max_rate_bps: 500_000_000,
            start_rate_bps: 1_000_000,
            qdelay_target_ns: 60 * MS,
            rules: ScreamRules::Latest,
        }
    }
}

impl ScreamConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.min_rate_bps == 0 || self.start_rate_bps == 0 || self.qdelay_target_ns == 0 {
            return Err(
                "SCReAM's min rate, start rate and queue-delay target must be positive".into(),
            );
        }
        if self.min_rate_bps > self.max_rate_bps {
            return Err(format!(
                "SCReAM's min rate ({} bit/s) is above its max rate ({} bit/s)",
                self.min_rate_bps, self.max_rate_bps
            ));
        }
        Ok(())
    }
}

// Constants, with their source.
/// Window scale on a loss event and on a classic CE event (`scream_sender.cpp`
/// `scaleFactor = 0.7`, passed as `lossBeta` and `ecnCeBeta`; `Tx.h` `kLossBeta`).
const BETA: f64 = 0.7;
/// L4S alpha gains and limit (`Tx.cpp` `kL4sGUp`, `kL4sGDown`, `kL4sAlphaMax`).
const L4S_G_UP: f64 = 1.0 / 8.0;
const L4S_G_DOWN: f64 = 1.0 / 128.0;
/// Initial L4S alpha (`Tx.cpp` constructor `l4sAlpha(0.1f)`).
const L4S_ALPHA_INIT: f64 = 0.1;
/// At most one congestion back-off per 30 ms (`Tx.cpp` `kMinCongestionBackOffInterval_ntp`).
const MIN_BACKOFF_INTERVAL: f64 = 0.030;
/// Alpha updates at least every 10 ms (`Tx.cpp` `incomingStandardizedFeedback`, `655u`).
const ALPHA_UPDATE_INTERVAL: f64 = 0.010;
/// The RTT below which growth slows, as Prague's virtual RTT (`Tx.cpp` `kSrttVirtual`).
const SRTT_VIRTUAL: f64 = 0.025;
/// Growth after congestion returns over this many RTTs (`Tx.cpp` `kPostCongestionDelayRtts`).
const POST_CONGESTION_RTTS: f64 = 200.0;
/// Multiplicative increase: at most 5 % of the window per RTT (`Tx.h`
/// `kMultiplicativeIncreaseScalefactor`).
const MULT_INCREASE: f64 = 0.05;
/// The window may exceed the largest bytes in flight by this factor (`Tx.h`
/// `kBytesInFlightHeadRoom`).
const BYTES_IN_FLIGHT_HEADROOM: f64 = 2.0;
/// Bytes in flight may reach this many windows: from `MIN_WINDOW_HEADROOM` when the queue
/// delay varies by 10 ms or more to `MAX_WINDOW_HEADROOM` when it is steady (adaptive window
/// headroom, on by default: `Tx.cpp` `enableAdaptiveWindowHeadroom(true)`, `updateCwnd`,
/// `kMinWindowHeadroom`; `scream_sender.cpp` `maxWindowHeadroom = 5.0`).
const MIN_WINDOW_HEADROOM: f64 = 1.5;
const MAX_WINDOW_HEADROOM: f64 = 5.0;
/// Packets are paced at this multiple of the target (`Tx.h` `kPacketPacingHeadRoom`).
const PACING_HEADROOM: f64 = 1.5;
/// The pacing rate's floor (`Tx.cpp` `updateCwnd`, `50e3f`).
const MIN_PACING_BPS: f64 = 50e3;
/// The window's floor in MSS (`Tx.cpp` `kMinCwndMss`).
const MIN_WND_MSS: f64 = 3.0;
/// Back-off is cut to a quarter when the target is below this share of the acked rate
/// (`Tx.cpp` `kTotalAckedBitrateFraction`).
const ACKED_RATE_FRACTION: f64 = 0.8;
/// Queue-delay averaging (`Tx.cpp` `kQueueDelayAvgAlpha`, `kLatencyDiffAlpha`,
/// `kQueueDelayMinMaxAlpha`, `kLatencyDiffThreshold`).
const QDELAY_AVG_ALPHA: f64 = 0.25;
const LATENCY_DIFF_ALPHA: f64 = 1.0 / 32.0;
const QDELAY_MINMAX_ALPHA: f64 = 1.0 / 16.0;
const LATENCY_DIFF_THRESHOLD: f64 = 0.010;
/// Base-delay history: the minimum one-way delay per 10 s, 50 of them (`Tx.cpp`
/// `kBaseDelayUpdateInterval_ntp`, `Tx.h` `kBaseOwdHistSize`).
const BASE_OWD_INTERVAL: Time = 10 * SEC;
const BASE_OWD_HIST: usize = 50;
/// Slow updates every 50 ms (`Tx.cpp` `kSlowUpdateInterval_ntp`), with a history of 20
/// largest bytes in flight (`Tx.h` `kMaxBytesInFlightHistSize`).
const SLOW_UPDATE: f64 = 0.050;
const MAX_BIF_HIST: usize = 20;
/// Rate estimates every 100 ms (`Tx.cpp` `kRateUpdateInterval_ntp`).
const RATE_UPDATE: f64 = 0.100;
/// RTP + UDP overhead in the target (`Tx.cpp` `kPacketOverhead`).
const PACKET_OVERHEAD: f64 = 20.0;
/// RTP queue: cleared when its oldest packet waited this long (`scream_sender.cpp`
/// registers the stream with `maxRtpQueueDelay = 0.2`), at most every 250 ms
/// (`Stream.cpp` `kMinRtpQueueDiscardInterval_ntp`).
const MAX_RTP_QUEUE_DELAY: f64 = 0.2;
const MIN_DISCARD_INTERVAL: f64 = 0.25;
/// The rate-adjust factor's gains (`Stream.cpp` `kRateAdjustGain1`, `kRateAdjustGain2`).
const RATE_ADJUST_GAIN1: f64 = 0.2;
const RATE_ADJUST_GAIN2: f64 = 1.0 / 8.0;
/// Loss events need a loss rate above this (`Tx.cpp` `kLossRateThreshold`).
const LOSS_RATE_THRESHOLD: f64 = 0.01;
/// The 2024-10-31 rules (`ScreamRules::Record2024`; EricssonResearch/scream at 76a298ad,
/// `code/ScreamV2Tx.cpp`, `code/scream_sender.cpp`): `l4sAlpha`'s EWMA gain (`kL4sG`), the
/// multiplicative increase's return time (`scream_sender.cpp` `postCongestionDelay = 4`),
/// the window headroom (`kCwndOverhead`), the median of the last 9 congestion windows as
/// the inflexion point (`kCwndIHistSize`, `updateCwndI`), L4S counted active for 5 s after
/// a CE event (`isL4sActive`), and the back-off after 5 s without congestion.
const V2024_L4S_G: f64 = 1.0 / 32.0;
const V2024_POST_CONGESTION_S: f64 = 4.0;
const V2024_WINDOW_HEADROOM: f64 = 1.5;
const V2024_CWND_I_HIST: usize = 9;
const V2024_L4S_ACTIVE_S: f64 = 5.0;
const V2024_LONG_UNCONGESTED_S: f64 = 5.0;

/// Packets in flight the sender remembers (`Tx.h` `kMaxTxPackets`): preallocated.
const MAX_TX_PACKETS: usize = 4096;

fn secs(t: Time) -> f64 {
    t as f64 / SEC as f64
}

/// A packet in flight: sequence number, bytes on the wire, when it left.
#[derive(Clone, Copy, Debug)]
struct Sent {
    seq: u64,
    bytes: u32,
    at: Time,
}

/// SCReAM v2's sender state.
#[derive(Clone, Debug)]
pub struct Scream {
    cfg: ScreamConfig,
    l4s: bool,
    /// The 2024-10-31 rules (`ScreamRules::Record2024`).
    v2024: bool,
    /// 2024-10-31 rules: the last congestion windows, whose median is `ref_wnd_i`.
    wnd_i_hist: [f64; V2024_CWND_I_HIST],
    wnd_i_ptr: usize,
    last_wnd_i_update: f64,
    last_ce_event: f64,
    qdelay_target: f64,
    in_flight: VecDeque<Sent>,
    bytes_in_flight: f64,
    mss: f64,
    ref_wnd: f64,
    /// The window at the last congestion event (`cwndI`, the inflexion point).
    ref_wnd_i: f64,
    ref_wnd_i_blocked: bool,
    srtt: f64,
    srtt_sh: f64,
    last_srtt_update: f64,
    // Queue delay.
    base_owd: Time,
    base_owd_hist: [Time; BASE_OWD_HIST],
    base_owd_ptr: usize,
    last_base_owd_add: Time,
    qdelay: f64,
    qdelay_avg: f64,
    qdelay_min_avg: f64,
    qdelay_max_avg: f64,
    latency_diff_avg: f64,
    latency_diff_scale: f64,
    last_qdelay_avg_update: f64,
    // Congestion signals of the report being read and since the last update.
    bytes_acked: f64,
    bytes_acked_ce: f64,
    ce_this_report: bool,
    packets_delivered: u64,
    packets_marked: u64,
    l4s_alpha: f64,
    last_alpha_update: f64,
    loss_rate: f64,
    loss_event: bool,
    ce_event: bool,
    virtual_ce: bool,
    virtual_alpha: f64,
    last_loss_event: f64,
    last_congestion: f64,
    last_wnd_update: f64,
    // Bytes in flight history and rates.
    max_bif: f64,
    max_bif_prev: f64,
    max_bif_hist: [f64; MAX_BIF_HIST],
    max_bif_ptr: usize,
    last_slow_update: f64,
    init_time: Option<f64>,
    bytes_acked_rate: f64,
    acked_rate: f64,
    last_rate_update: f64,
    // The stream.
    rate_share: f64,
    target: f64,
    rate_adjust: f64,
    frame_period: f64,
    last_frame: Option<f64>,
    last_discard: f64,
    key_frame: bool,
    /// Times the RTP queue was cleared.
    pub discards: u64,
    fed: bool,
}

impl Scream {
    pub fn new(cfg: &ScreamConfig) -> Scream {
        let start = cfg.start_rate_bps as f64;
        Scream {
            cfg: *cfg,
            l4s: cfg.mode == ScreamMode::L4s,
            v2024: cfg.rules == ScreamRules::Record2024,
            wnd_i_hist: [0.0; V2024_CWND_I_HIST],
            wnd_i_ptr: 0,
            last_wnd_i_update: 0.0,
            last_ce_event: 0.0,
            qdelay_target: secs(cfg.qdelay_target_ns),
            in_flight: VecDeque::with_capacity(MAX_TX_PACKETS),
            bytes_in_flight: 0.0,
            mss: 0.0,
            // scream_sender.cpp: the initial window carries the start rate for 100 ms.
            ref_wnd: start * 0.1 / 8.0,
            ref_wnd_i: 1.0,
            ref_wnd_i_blocked: false,
            // Tx.cpp constructor: sRtt(0.05f).
            srtt: 0.05,
            srtt_sh: 0.05,
            last_srtt_update: 0.0,
            base_owd: Time::MAX,
            base_owd_hist: [Time::MAX; BASE_OWD_HIST],
            base_owd_ptr: 0,
            last_base_owd_add: 0,
            qdelay: 0.0,
            qdelay_avg: 0.0,
            qdelay_min_avg: 0.0,
            qdelay_max_avg: 0.0,
            latency_diff_avg: 0.0,
            latency_diff_scale: 1.0,
            last_qdelay_avg_update: 0.0,
            bytes_acked: 0.0,
            bytes_acked_ce: 0.0,
            ce_this_report: false,
            packets_delivered: 0,
            packets_marked: 0,
            l4s_alpha: L4S_ALPHA_INIT,
            last_alpha_update: 0.0,
            loss_rate: 0.0,
            loss_event: false,
            ce_event: false,
            virtual_ce: false,
            virtual_alpha: 0.0,
            last_loss_event: 0.0,
            last_congestion: 0.0,
            last_wnd_update: 0.0,
            max_bif: 0.0,
            max_bif_prev: 0.0,
            max_bif_hist: [0.0; MAX_BIF_HIST],
            max_bif_ptr: 0,
            last_slow_update: 0.0,
            init_time: None,
            bytes_acked_rate: 0.0,
            acked_rate: 0.0,
            last_rate_update: 0.0,
            rate_share: start,
            target: start,
            rate_adjust: 0.0,
            frame_period: 1.0 / 30.0,
            last_frame: None,
            last_discard: 0.0,
            key_frame: false,
            discards: 0,
            fed: false,
        }
    }

    /// The reference window (bytes).
    pub fn ref_wnd(&self) -> f64 {
        self.ref_wnd
    }

    /// The L4S alpha (fraction of packets CE-marked, averaged).
    pub fn l4s_alpha(&self) -> f64 {
        self.l4s_alpha
    }

    fn mss(&self) -> f64 {
        self.mss.max(100.0)
    }

    fn wnd_min(&self) -> f64 {
        MIN_WND_MSS * self.mss()
    }

    /// One packet's report (`Tx.cpp` `markAcked`): acked bytes, CE, one-way and queue
    /// delay against the base delay (`estimateOwd`, `getBaseOwd`).
    fn on_acked(&mut self, now: Time, s: Sent, arrival: Time, ecn: Ecn) {
        let bytes = s.bytes as f64;
        self.bytes_acked += bytes;
        self.bytes_acked_rate += bytes;
        self.packets_delivered += 1;
        if ecn == Ecn::Ce {
            self.bytes_acked_ce += bytes;
            self.packets_marked += 1;
            self.ce_this_report = true;
        }
        let owd = arrival - s.at;
        self.base_owd = self.base_owd.min(owd);
        if now - self.last_base_owd_add >= BASE_OWD_INTERVAL {
            self.base_owd_ptr = (self.base_owd_ptr + 1) % BASE_OWD_HIST;
            self.base_owd_hist[self.base_owd_ptr] = self.base_owd;
            self.base_owd = Time::MAX;
            self.last_base_owd_add = now;
        }
        let hist_min = self
            .base_owd_hist
            .iter()
            .copied()
            .min()
            .unwrap_or(Time::MAX);
        let base = self.base_owd.min(hist_min);
        self.qdelay = secs(owd.saturating_sub(base));
    }

    /// The RTT of the report's newest packet (`Tx.cpp` `markAcked`): a fast average, and
    /// the slower `sRtt` updated once per fast RTT.
    fn on_rtt(&mut self, now: f64, rtt: f64) {
        self.srtt_sh = (7.0 * self.srtt_sh + rtt) / 8.0;
        if now - self.last_srtt_update > self.srtt_sh {
            self.srtt = (7.0 * self.srtt + self.srtt_sh) / 8.0;
            self.last_srtt_update = now;
        }
    }

    /// After a report (`Tx.cpp` `incomingStandardizedFeedback`, `isLast`): CE event, L4S
    /// alpha, queue-delay averages, virtual CE; then the window and the target.
    fn on_report_end(&mut self, t: f64) {
        let gate = MIN_BACKOFF_INTERVAL.min(self.srtt);
        if t - self.last_loss_event > gate && self.ce_this_report {
            self.ce_event = true;
            self.last_loss_event = t;
            self.last_ce_event = t;
        }
        self.ce_this_report = false;
        if self.l4s {
            if t - self.last_alpha_update > ALPHA_UPDATE_INTERVAL.min(self.srtt)
                && self.packets_delivered > 0
            {
                self.last_alpha_update = t;
                let f = self.packets_marked as f64 / self.packets_delivered as f64;
                // Fast attack, slow decay (`incomingStandardizedFeedback`); the 2024-10-31
                // rules: a plain EWMA (76a298ad `ScreamV2Tx.cpp` line 736).
                if self.v2024 {
                    self.l4s_alpha =
                        (V2024_L4S_G * f + (1.0 - V2024_L4S_G) * self.l4s_alpha).min(1.0);
                } else if f >= self.l4s_alpha {
                    self.l4s_alpha = (L4S_G_UP * f + (1.0 - L4S_G_UP) * self.l4s_alpha).min(1.0);
                } else {
                    self.l4s_alpha *= 1.0 - L4S_G_DOWN;
                }
                self.packets_delivered = 0;
                self.packets_marked = 0;
            }
        } else {
            self.l4s_alpha = 0.0;
        }
        self.qdelay_min_avg = self.qdelay_min_avg.min(self.qdelay);
        self.qdelay_max_avg = self.qdelay_target.min(self.qdelay_max_avg.max(self.qdelay));
        if t - self.last_qdelay_avg_update > gate {
            // A slowly varying queue delay: follows drops at once, rises by a quarter.
            if self.qdelay < self.qdelay_avg {
                self.qdelay_avg = self.qdelay;
            } else {
                self.qdelay_avg += QDELAY_AVG_ALPHA * (self.qdelay - self.qdelay_avg);
            }
            // Queue-delay variation limits growth (`latencyDiffCwndScale`).
            let diff = (self.qdelay_max_avg - self.qdelay_min_avg)
                .clamp(0.0, 2.0 * LATENCY_DIFF_THRESHOLD);
            self.latency_diff_avg += LATENCY_DIFF_ALPHA * (diff - self.latency_diff_avg);
            self.latency_diff_scale =
                (1.0 - self.latency_diff_avg / LATENCY_DIFF_THRESHOLD).clamp(0.0, 1.0);
            self.qdelay_max_avg *= 1.0 - QDELAY_MINMAX_ALPHA;
            self.qdelay_min_avg +=
                QDELAY_MINMAX_ALPHA * (self.qdelay_max_avg - self.qdelay_min_avg);
            self.last_qdelay_avg_update = t;
        }
        // Virtual CE: queue delay above half the target acts as marking, the more the
        // closer to the target (draft §4.2.2; `incomingStandardizedFeedback`).
        if self.v2024 {
            self.virtual_ce_2024(t, gate);
        } else if self.qdelay_avg > self.qdelay_target / 2.0 && t - self.last_loss_event > gate {
            self.virtual_ce = true;
            let half = self.qdelay_target / 2.0;
            self.virtual_alpha = ((self.qdelay_avg - half) / half).clamp(0.0, 1.0)
                / (self.srtt / MIN_BACKOFF_INTERVAL).max(1.0);
        }
        if self.loss_event || self.ce_event || self.virtual_ce {
            self.last_loss_event = t;
        }
        if t - self.last_wnd_update > gate || self.loss_event || self.ce_event || self.virtual_ce {
            self.update_wnd(t);
            self.update_target();
            self.last_wnd_update = t;
        }
    }

    /// L4S counted active: a CE event in the last 5 s (76a298ad `ScreamV2Tx.cpp` line 821).
    fn l4s_active_2024(&self, t: f64) -> bool {
        self.l4s && self.last_ce_event > 0.0 && t - self.last_ce_event < V2024_L4S_ACTIVE_S
    }

    /// The 2024-10-31 virtual CE (76a298ad `ScreamV2Tx.cpp` lines 758-782): only while the
    /// marked fraction is well below what a congested link at this rate gives (about two
    /// marks per RTT) or L4S is not active; its alpha starts at that fraction.
    fn virtual_ce_2024(&mut self, t: f64, gate: f64) {
        let lim = 2.0 / self.target.max(1.0) * self.mss() * 8.0 / self.srtt;
        let delay_ok = self.qdelay_avg > self.qdelay_target / 2.0;
        if (self.l4s_alpha < lim * 0.1 || !self.l4s_active_2024(t))
            && delay_ok
            && t - self.last_loss_event > gate
        {
            self.virtual_ce = true;
            let over = (self.qdelay_avg - self.qdelay_target / 4.0) / (0.75 * self.qdelay_target);
            self.virtual_alpha = (lim + over.max(0.0)).min(1.0);
        }
    }

    /// 2024-10-31 `updateCwndI`: the inflexion point is the median of the last 9 windows
    /// at congestion.
    fn push_wnd_i_2024(&mut self) {
        if self.wnd_i_hist[0] == 0.0 {
            self.wnd_i_hist = [self.ref_wnd; V2024_CWND_I_HIST];
        }
        self.wnd_i_hist[self.wnd_i_ptr] = self.ref_wnd;
        self.wnd_i_ptr = (self.wnd_i_ptr + 1) % V2024_CWND_I_HIST;
        let mut sorted = self.wnd_i_hist;
        sorted.sort_by(f64::total_cmp);
        self.ref_wnd_i = sorted[V2024_CWND_I_HIST / 2];
    }

    /// The 2024-10-31 `updateCwnd` (76a298ad `ScreamV2Tx.cpp` lines 1308-1750): back off on
    /// loss, CE or virtual CE, else grow; then the rate the window carries.
    fn update_wnd_2024(&mut self, t: f64) {
        let post_scale = ((t - self.last_congestion) / V2024_POST_CONGESTION_S).clamp(0.0, 1.0);
        if t - self.last_slow_update > SLOW_UPDATE {
            self.slow_update(t);
        }
        let mss = self.mss();
        // The multiplicative part is sized on the window before any cut (`cwndScaleFactorExt`).
        let mult = MULT_INCREASE * self.ref_wnd / mss;
        // Closeness to the inflexion point (`sclI`, gain 4 in this version).
        let rel = (self.ref_wnd - self.ref_wnd_i) / self.ref_wnd_i * 4.0;
        let scl_i = (rel * rel).clamp(0.1, 1.0);
        let min = self.wnd_min();
        let ratio_before = mss / self.ref_wnd;
        if self.loss_event {
            if t - self.last_wnd_i_update > 0.5 {
                self.last_wnd_i_update = t;
                self.push_wnd_i_2024();
            }
            self.ref_wnd = (BETA * self.ref_wnd).max(min);
        } else if self.ce_event || self.virtual_ce {
            if t - self.last_wnd_i_update > self.srtt {
                self.last_wnd_i_update = t;
                self.push_wnd_i_2024();
            }
            if self.l4s && !self.virtual_ce {
                // Limited at small windows and near the inflexion point (lines 1568-1580).
                let mut b = self.l4s_alpha / 2.0 * (1.0 - ratio_before).max(0.5);
                if self.qdelay < self.qdelay_target * 0.25 {
                    b *= scl_i.max(0.25);
                }
                if t - self.last_congestion > V2024_LONG_UNCONGESTED_S {
                    // Long uncongested: the window may be far above what is in flight.
                    self.ref_wnd = self.ref_wnd.min(self.max_bif_prev.max(min));
                    b = b.max(0.25);
                    self.l4s_alpha = self.l4s_alpha.max(0.25);
                }
                self.ref_wnd = ((1.0 - b) * self.ref_wnd).max(min);
            } else if self.virtual_ce {
                self.ref_wnd = ((1.0 - self.virtual_alpha / 2.0) * self.ref_wnd).max(min);
            } else {
                self.ref_wnd = (BETA * self.ref_wnd).max(min);
            }
        }
        let post = self.close_events(t, post_scale);
        let ratio = mss / self.ref_wnd;
        let mut inc = (self.bytes_acked - self.bytes_acked_ce) * ratio;
        inc *= if self.l4s_active_2024(t) {
            scl_i.max(0.25)
        } else {
            scl_i
        };
        inc *= (self.srtt / SRTT_VIRTUAL).min(1.0);
        inc *= (1.0 - ratio).max(0.5);
        inc *= 1.0 + mult * post * scl_i;
        let max_allowed = mss + self.max_bif.max(self.max_bif_prev) * BYTES_IN_FLIGHT_HEADROOM;
        if self.ref_wnd + inc <= max_allowed {
            self.ref_wnd += inc;
        }
        self.ref_wnd = self.ref_wnd.max(min);
        self.bytes_acked = 0.0;
        self.bytes_acked_ce = 0.0;
        // As now, but with `cwndRatio` from before the growth and without the 1.1 frame-size
        // margin (this version divides by the frame-size histogram's `relFrameSizeHigh`, 1
        // for fixed frame sizes).
        self.rate_share = self.carried_rate(mss, ratio, 1.0);
    }

    /// After a back-off (`updateCwnd`): the events are cleared and, after congestion, its
    /// time kept; the multiplicative increase's scale, 0 right after congestion.
    fn close_events(&mut self, t: f64, post_scale: f64) -> f64 {
        let congested = self.loss_event || self.ce_event || self.virtual_ce;
        self.loss_event = false;
        self.ce_event = false;
        self.virtual_ce = false;
        if congested {
            self.last_congestion = t;
            return 0.0;
        }
        post_scale
    }

    /// The rate the window carries (`updateCwnd`): 1 ms added to the RTT, a margin when the
    /// window is a few MSS (`ratio`: MSS over the window), `frame_margin` for frame-size
    /// peaks, the packet overhead.
    fn carried_rate(&self, mss: f64, ratio: f64, frame_margin: f64) -> f64 {
        let mut rate = 8.0 * self.ref_wnd / (self.srtt + 0.001).clamp(0.001, 0.2);
        rate *= 1.0 - (ratio - 0.1).clamp(0.0, 0.2);
        rate /= frame_margin;
        rate *= mss / (mss + PACKET_OVERHEAD);
        rate.min(self.cfg.max_rate_bps as f64)
    }

    /// A back-off factor scaled as the reference does: smaller when the target is below
    /// the acked rate, and spread over the RTT's several back-off events (`updateCwnd`).
    fn scaled_backoff(&self, alpha: f64) -> f64 {
        let mut b = alpha / 2.0;
        if self.target < self.acked_rate * ACKED_RATE_FRACTION {
            b *= 0.25;
        }
        b / (self.srtt / MIN_BACKOFF_INTERVAL).max(1.0)
    }

    /// `Tx.cpp` `updateCwnd`: back off on loss / CE / virtual CE, else grow.
    fn update_wnd(&mut self, t: f64) {
        if self.v2024 {
            return self.update_wnd_2024(t);
        }
        let post_scale =
            ((t - self.last_congestion) / (POST_CONGESTION_RTTS * self.srtt)).clamp(0.0, 1.0);
        if t - self.last_slow_update > SLOW_UPDATE {
            self.slow_update(t);
        }
        // Closeness to the last window at congestion (`sclI`).
        let rel = (self.ref_wnd - self.ref_wnd_i) / self.ref_wnd_i * 8.0;
        let scl_i = (rel * rel).clamp(0.1, 1.0);
        let congested = self.loss_event || self.ce_event || self.virtual_ce;
        if congested && !self.ref_wnd_i_blocked {
            self.ref_wnd_i = self.ref_wnd;
            self.ref_wnd_i_blocked = true;
        }
        let min = self.wnd_min();
        if self.loss_event {
            self.ref_wnd = (BETA * self.ref_wnd).max(min);
        } else if self.ce_event && self.l4s {
            let mut b = self.scaled_backoff(self.l4s_alpha);
            if self.qdelay < self.qdelay_target * 0.25 {
                b *= scl_i.max(0.25) * self.latency_diff_scale.clamp(0.25, 1.0);
            }
            self.ref_wnd = ((1.0 - b) * self.ref_wnd).max(min);
        } else if self.ce_event {
            self.ref_wnd = (BETA * self.ref_wnd).max(min);
        } else if self.virtual_ce {
            let b = self.scaled_backoff(self.virtual_alpha);
            self.ref_wnd = ((1.0 - b) * self.ref_wnd).max(min);
        }
        let post = self.close_events(t, post_scale);
        // Growth: the acked bytes not CE-marked, scaled (`updateCwnd`).
        let mss = self.mss();
        let mut inc = (self.bytes_acked - self.bytes_acked_ce) * mss / self.ref_wnd;
        inc *= scl_i.max(0.25);
        inc *= (self.srtt / SRTT_VIRTUAL).min(1.0);
        inc *= self.latency_diff_scale.clamp(0.1, 1.0);
        let mult = MULT_INCREASE * self.ref_wnd / mss * post * scl_i;
        inc *= 1.0 + mult;
        let max_allowed = mss + self.max_bif.max(self.max_bif_prev) * BYTES_IN_FLIGHT_HEADROOM;
        let grown = self.ref_wnd + inc;
        let prev = self.ref_wnd;
        if grown <= max_allowed && self.target < self.cfg.max_rate_bps as f64 {
            self.ref_wnd = grown;
        }
        if self.ref_wnd > prev {
            self.ref_wnd_i_blocked = false;
        }
        self.ref_wnd = self.ref_wnd.max(min);
        self.bytes_acked = 0.0;
        self.bytes_acked_ce = 0.0;
        // 1.1 for frame-size peaks (`updateCwnd`).
        self.rate_share = self.carried_rate(mss, mss / self.ref_wnd, 1.1);
    }

    /// Every 50 ms (`updateCwnd`'s slow updates): the bytes-in-flight history; near the
    /// max rate the window is capped at what it needs.
    fn slow_update(&mut self, t: f64) {
        self.max_bif_hist[self.max_bif_ptr] = self.max_bif;
        self.max_bif_ptr = (self.max_bif_ptr + 1) % MAX_BIF_HIST;
        let max_rate = self.cfg.max_rate_bps as f64;
        if self.target > max_rate * 0.95 {
            let hist = self
                .max_bif_hist
                .iter()
                .fold(self.max_bif, |a, &b| a.max(b));
            let need = PACING_HEADROOM * max_rate / 8.0 * (self.srtt + 0.001);
            self.ref_wnd = self.ref_wnd.min(hist.max(need));
        }
        let init = *self.init_time.get_or_insert(t);
        if t - init > 2.0 {
            self.max_bif_prev = self.max_bif;
            self.max_bif = 0.0;
        }
        self.last_slow_update = t;
    }

    /// `Stream.cpp` `updateTargetBitrate`: the stream's share within its limits, less the
    /// RTP-queue compensation.
    fn update_target(&mut self) {
        let (lo, hi) = (self.cfg.min_rate_bps as f64, self.cfg.max_rate_bps as f64);
        self.target = (self.rate_share / (1.0 + self.rate_adjust)).clamp(lo, hi);
    }
}

impl DatagramCc for Scream {
    fn name(&self) -> &'static str {
        "scream"
    }

    fn on_sent(&mut self, now: Time, seq: u64, bytes: u32) {
        self.mss = self.mss.max(bytes as f64);
        self.bytes_in_flight += bytes as f64;
        self.in_flight.push_back(Sent {
            seq,
            bytes,
            at: now,
        });
    }

    fn on_feedback(&mut self, now: Time, report: &Report) {
        let t = secs(now);
        self.fed = true;
        self.max_bif = self.max_bif.max(self.bytes_in_flight);
        let mut newest = None;
        for e in &report.entries {
            // Packets older than the report's first: their report was lost; they leave the
            // window unacknowledged but are not counted as lost (RFC 8888 senders see them
            // again in a later report; here reports never overlap).
            while self.in_flight.front().is_some_and(|s| s.seq < e.seq) {
                let s = self.in_flight.pop_front().expect("checked");
                self.bytes_in_flight -= s.bytes as f64;
            }
            if self.in_flight.front().is_none_or(|s| s.seq != e.seq) {
                continue;
            }
            let s = self.in_flight.pop_front().expect("checked");
            self.bytes_in_flight -= s.bytes as f64;
            // `calculateLossRate`: a per-packet average over about 1 / alpha packets.
            let a = (LOSS_RATE_THRESHOLD / 4.0).min(self.mss() / self.ref_wnd / 2.0);
            self.loss_rate = (1.0 - a) * self.loss_rate + if e.arrived { 0.0 } else { a };
            if e.arrived {
                self.on_acked(now, s, e.arrival, e.ecn);
                newest = Some(s);
                continue;
            }
            // `detectLoss`: a lost packet asks for a repair (key frame); a loss event, at
            // most one per RTT, needs a loss rate above 1 % or a queue delay above a
            // quarter of the target (`setLossEvent`): random losses alone do not count.
            self.key_frame = true;
            if t - self.last_loss_event > self.srtt
                && (self.loss_rate > LOSS_RATE_THRESHOLD
                    || self.qdelay_avg > self.qdelay_target / 4.0)
            {
                self.loss_event = true;
            }
        }
        self.bytes_in_flight = self.bytes_in_flight.max(0.0);
        if let Some(s) = newest {
            self.on_rtt(t, secs(now - s.at));
        }
        if t - self.last_rate_update > RATE_UPDATE {
            // `Stream.cpp` `updateRate`: the acked rate over the last 100 ms.
            if self.last_rate_update > 0.0 {
                self.acked_rate = 8.0 * self.bytes_acked_rate / (t - self.last_rate_update);
            }
            self.bytes_acked_rate = 0.0;
            self.last_rate_update = t;
        }
        self.on_report_end(t);
    }

    fn target_rate_bps(&self) -> Option<u64> {
        self.fed.then_some(self.target as u64)
    }

    /// `updateCwnd`'s pacing rate: 1.5 times the target, at least 50 kbit/s.
    fn pacing_rate_bps(&self) -> Option<u64> {
        Some((PACING_HEADROOM * self.target).max(MIN_PACING_BPS) as u64)
    }

    /// `Tx.cpp` `isOkToTransmit`: bytes in flight may reach the window times its (adaptive)
    /// headroom, plus one MSS.
    fn can_send(&self, _now: Time, bytes: u32) -> bool {
        let headroom = if self.v2024 {
            V2024_WINDOW_HEADROOM
        } else {
            MIN_WINDOW_HEADROOM
                + (MAX_WINDOW_HEADROOM - MIN_WINDOW_HEADROOM) * self.latency_diff_scale
        };
        self.bytes_in_flight + bytes as f64 <= self.ref_wnd * headroom + self.mss()
    }

    fn take_key_frame_request(&mut self) -> bool {
        std::mem::take(&mut self.key_frame)
    }

    /// `Stream.cpp`: at a new frame the RTP queue's delay beyond half a frame period feeds
    /// the rate-adjust factor (`newMediaFrame`); after a report a queue older than
    /// `maxRtpQueueDelay` is cleared and a key frame asked for (`updateTargetBitrate`).
    fn on_rtp_queue(&mut self, now: Time, delay: Time, new_frame: bool) -> bool {
        let t = secs(now);
        let d = secs(delay);
        if new_frame {
            if let Some(last) = self.last_frame {
                self.frame_period = 0.9 * (t - last) + 0.1 * self.frame_period;
            }
            self.last_frame = Some(t);
            let p = self.frame_period.max(1e-3);
            let err = RATE_ADJUST_GAIN1 * (d - p / 2.0) / p;
            self.rate_adjust = (self.rate_adjust + err * RATE_ADJUST_GAIN2).clamp(0.0, 0.5);
            self.update_target();
            return false;
        }
        if d > MAX_RTP_QUEUE_DELAY && t - self.last_discard > MIN_DISCARD_INTERVAL {
            self.last_discard = t;
            self.discards += 1;
            self.key_frame = true;
            return true;
        }
        false
    }

    fn box_clone(&self) -> Box<dyn DatagramCc> {
        Box::new(self.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::feedback::ReportEntry;

    const PKT: u32 = 1400;

    /// `n` packets from `first` sent 1 ms apart from `t0`, all reported at `at` as having
    /// arrived 10 ms (and `queue`) after they left, the first `ce` of them CE-marked, the
    /// last `lost` missing.
    #[allow(clippy::too_many_arguments)]
    fn feed_queued(
        s: &mut Scream,
        t0: Time,
        n: u64,
        ce: u64,
        lost: u64,
        at: Time,
        first: u64,
        queue: Time,
    ) {
        let mut r = Report {
            id: 0,
            sent_at: at,
            entries: Vec::new(),
        };
        for i in 0..n {
            let sent = t0 + i * MS;
            s.on_sent(sent, first + i, PKT);
            r.entries.push(ReportEntry {
                seq: first + i,
                arrived: i >= n - lost,
                arrival: sent + 10 * MS + queue,
                ecn: if i < ce { Ecn::Ce } else { Ecn::Ect1 },
            });
        }
        for e in &mut r.entries {
            e.arrived = !e.arrived;
        }
        s.on_feedback(at, &r);
    }

    fn feed(s: &mut Scream, t0: Time, n: u64, ce: u64, lost: u64, at: Time, first: u64) {
        feed_queued(s, t0, n, ce, lost, at, first, 0);
    }

    fn steady(cfg: &ScreamConfig) -> (Scream, Time) {
        let mut s = Scream::new(cfg);
        let mut t = 0;
        for k in 0..100 {
            feed(&mut s, t, 20, 0, 0, t + 30 * MS, k * 20);
            t += 30 * MS;
        }
        (s, t)
    }

    /// Without congestion the window grows and the target follows it: the window over the
    /// smoothed RTT (about 20 ms here), less the reference's margins.
    #[test]
    fn without_congestion_the_window_grows_and_the_target_follows() {
        let cfg = ScreamConfig::default();
        let s0 = Scream::new(&cfg);
        let (s, _) = steady(&cfg);
        assert!(
            s.ref_wnd() > 2.0 * s0.ref_wnd(),
            "{} vs {}",
            s.ref_wnd(),
            s0.ref_wnd()
        );
        let t = s.target_rate_bps().unwrap() as f64;
        let plain = 8.0 * s.ref_wnd / (s.srtt + 0.001);
        assert!(t < plain / 1.1 && t > plain / 1.1 * 0.9, "{t} vs {plain}");
    }

    /// L4S mode: a report all CE-marked raises alpha and cuts the window by at most
    /// alpha / 2; classic mode cuts it by the fixed 0.7; a loss asks for a key frame, and
    /// losses above 1 % cut the window by 0.7.
    #[test]
    fn ce_marks_and_loss_cut_the_window_as_the_mode_says() {
        for mode in [ScreamMode::L4s, ScreamMode::Classic] {
            let cfg = ScreamConfig {
                mode,
                ..Default::default()
            };
            let (mut s, t) = steady(&cfg);
            let (before, alpha0) = (s.ref_wnd(), s.l4s_alpha());
            feed(&mut s, t, 20, 20, 0, t + 30 * MS, 2000);
            let ratio = s.ref_wnd() / before;
            match mode {
                ScreamMode::L4s => {
                    assert!(s.l4s_alpha() > alpha0, "alpha {}", s.l4s_alpha());
                    let cut = 1.0 - ratio;
                    assert!(cut > 0.0 && cut <= s.l4s_alpha() / 2.0 + 1e-9, "cut {cut}");
                }
                ScreamMode::Classic => {
                    assert!((ratio - BETA).abs() < 1e-9, "ratio {ratio}");
                }
            }
            assert!(!s.take_key_frame_request());
            // Three of 20 lost: a key frame, but a loss rate under 1 %: no loss event.
            let before = s.ref_wnd();
            feed(&mut s, t + 100 * MS, 20, 0, 3, t + 130 * MS, 2020);
            assert!(s.ref_wnd() >= before);
            assert!(s.take_key_frame_request() && !s.take_key_frame_request());
            // Ten more of 20: the rate passes 1 %; the cut is 0.7 (then the acked bytes'
            // growth).
            let before = s.ref_wnd();
            feed(&mut s, t + 200 * MS, 20, 0, 10, t + 230 * MS, 2040);
            let ratio = s.ref_wnd() / before;
            assert!((BETA..BETA + 0.02).contains(&ratio), "ratio {ratio}");
        }
    }

    /// Marks in every fourth report, a quarter of its packets each: the latest rules' alpha
    /// follows the peaks (fast attack, slow decay), the 2024-10-31 rules' the mean (a plain
    /// EWMA), so the latter cuts the window less and ends larger; its headroom stays 1.5.
    #[test]
    fn the_2024_rules_average_the_marked_fraction() {
        let mut wnd = [0.0; 2];
        for (i, rules) in [ScreamRules::Latest, ScreamRules::Record2024]
            .into_iter()
            .enumerate()
        {
            let cfg = ScreamConfig {
                rules,
                ..Default::default()
            };
            let (mut s, mut t) = steady(&cfg);
            for k in 0..400u64 {
                let ce = if k % 4 == 0 { 5 } else { 0 };
                feed(&mut s, t, 20, ce, 0, t + 30 * MS, 4000 + k * 20);
                t += 30 * MS;
            }
            // The mean marked fraction is 1/16.
            let alpha = s.l4s_alpha();
            match rules {
                ScreamRules::Latest => assert!(alpha > 0.1, "alpha {alpha}"),
                ScreamRules::Record2024 => {
                    assert!((0.03..0.1).contains(&alpha), "alpha {alpha}");
                    let over = (1.6 * s.ref_wnd()) as u32;
                    assert!(!s.can_send(t, over));
                }
            }
            wnd[i] = s.ref_wnd();
        }
        assert!(wnd[1] > wnd[0], "{wnd:?}");
    }

    /// Queue delay above half the target (here 60 ms) backs off without any mark.
    #[test]
    fn queue_delay_over_half_the_target_backs_off() {
        let (mut s, mut t) = steady(&ScreamConfig::default());
        let before = s.ref_wnd();
        for k in 0..10u64 {
            // 10 ms of propagation and 50 ms of queue.
            feed_queued(&mut s, t, 20, 0, 0, t + 70 * MS, 3000 + k * 20, 50 * MS);
            t += 30 * MS;
        }
        assert!(s.qdelay > 0.045, "qdelay {}", s.qdelay);
        assert!(s.ref_wnd() < before, "{} !< {before}", s.ref_wnd());
    }

    /// The window's headroom: 5 windows in flight while the queue delay is steady, down to
    /// 1.5 once it swings by 10 ms or more (reports alternating 0 and 20 ms of queue).
    #[test]
    fn a_varying_queue_delay_shrinks_the_window_headroom() {
        let (mut s, mut t) = steady(&ScreamConfig::default());
        let two = (2.0 * s.ref_wnd()) as u32;
        assert!(s.can_send(t, two));
        for k in 0..200u64 {
            let queue = if k % 2 == 0 { 0 } else { 20 * MS };
            feed_queued(&mut s, t, 5, 0, 0, t + 40 * MS, 5000 + k * 5, queue);
            t += 40 * MS;
        }
        assert!(s.latency_diff_scale < 0.1, "{}", s.latency_diff_scale);
        let two = (2.0 * s.ref_wnd()) as u32;
        assert!(!s.can_send(t, two) && s.can_send(t, two / 2));
    }

    /// The RTP queue: its delay beyond half a frame period lowers the target at the next
    /// frame; older than 200 ms after a report it is cleared (at most every 250 ms) and a
    /// key frame asked for.
    #[test]
    fn a_stale_rtp_queue_is_cleared_and_a_key_frame_asked_for() {
        let (mut s, t) = steady(&ScreamConfig::default());
        let target = s.target_rate_bps().unwrap();
        for k in 0..5 {
            assert!(!s.on_rtp_queue(t + k * 33 * MS, 30 * MS, true));
        }
        assert!(s.target_rate_bps().unwrap() < target);
        assert!(!s.on_rtp_queue(t, 150 * MS, false));
        assert!(s.on_rtp_queue(t, 250 * MS, false));
        assert!(s.take_key_frame_request());
        assert!(!s.on_rtp_queue(t + 100 * MS, 300 * MS, false), "too soon");
        assert!(s.on_rtp_queue(t + 300 * MS, 300 * MS, false));
        assert_eq!(s.discards, 2);
    }

    #[test]
    fn bad_limits_are_one_sentence() {
        let c = ScreamConfig {
            min_rate_bps: 5_000_000,
            max_rate_bps: 1_000_000,
            ..Default::default()
        };
        assert!(c.validate().unwrap_err().contains("above its max rate"));
        assert!(ScreamConfig::default().validate().is_ok());
    }
}
