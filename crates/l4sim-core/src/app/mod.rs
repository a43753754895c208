//! Traffic sources other than TCP's own: UDP datagram flows.
//!
//! A UDP flow is constant bit rate by default (`cbr.rs`), exactly as before feedback and
//! media sources existed. With a frame source (`video.rs`, `trace.rs`, `periodic.rs`), an
//! RFC 8888 feedback channel (`feedback.rs`) or both, it becomes a media flow
//! (`media.rs`): frames packetised into RTP packets, paced, per-frame delay measured
//! (`frames.rs`), a datagram congestion control (`cc.rs`) reading the feedback.

pub mod cbr;
pub mod cc;
pub mod external_rate;
pub mod feedback;
pub mod frames;
pub mod media;
pub mod periodic;
pub mod prague_ack;
pub mod trace;
pub mod video;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::packet::EcnCodepoint;

pub use cbr::{UdpSink, UdpSource};
pub use cc::scream::{ScreamConfig, ScreamMode, ScreamRules};
pub use cc::udp_prague::UdpPragueConfig;
pub use cc::{DatagramCc, DatagramCcConfig};
pub use feedback::FeedbackConfig;
pub use media::Media;
pub use periodic::PeriodicConfig;
pub use trace::TraceConfig;
pub use video::VideoConfig;

/// Bytes of headers in front of a media packet's payload: IPv4 (20, RFC 791), UDP (8,
/// RFC 768) and the fixed RTP header (12, RFC 3550 §5.1).
pub const RTP_HEADER_BYTES: u32 = 40;

/// UDP flow parameters: a constant-bit-rate source unless `source` names another.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct UdpConfig {
    // The constant bit rate, or a video source's initial target bitrate (bit/s). A plain
    // comment: a doc comment here would describe every `rate_bps` of the references.
    pub rate_bps: u64,
    /// Bytes on the wire per packet (headers included); a media flow's largest (its frames
    /// are cut into packets of at most this size).
    pub packet_bytes: u32,
    pub ecn: EcnCodepoint,
    // Boxed: every flow's configuration holds one, and a TCP flow's stays small (the
    // inline enum made the TCP benchmarks ~2 % slower).
    /// What the application sends (default: constant bit rate).
    #[serde(skip_serializing_if = "is_cbr")]
    pub source: Box<SourceConfig>,
    /// The receiver's congestion-control feedback (default: none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub feedback: Option<FeedbackConfig>,
    /// The sender's congestion control reading that feedback (default: none).
    #[serde(skip_serializing_if = "DatagramCcConfig::is_none")]
    pub cc: DatagramCcConfig,
}

impl Default for UdpConfig {
    fn default() -> Self {
        UdpConfig {
            rate_bps: 1_000_000,
            packet_bytes: 1500,
            ecn: EcnCodepoint::NotEct,
            source: Box::new(SourceConfig::Cbr),
            feedback: None,
            cc: DatagramCcConfig::None,
        }
    }
}

/// A UDP flow's application source.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SourceConfig {
    /// Fixed-size packets at `rate_bps`.
    #[default]
    Cbr,
    /// A video encoder model following a target bitrate.
    Video(VideoConfig),
    /// Frame sizes read from a trace, one frame per entry.
    Trace(TraceConfig),
    /// A fixed-size message every interval.
    Periodic(PeriodicConfig),
}

impl SourceConfig {
    pub fn is_cbr(&self) -> bool {
        matches!(self, SourceConfig::Cbr)
    }
}

#[allow(clippy::borrowed_box)] // serde's skip_serializing_if passes the field by reference
fn is_cbr(s: &Box<SourceConfig>) -> bool {
    s.is_cbr()
}

impl UdpConfig {
    /// The plain CBR flow of old: no frames, no feedback, no congestion control.
    pub fn is_plain_cbr(&self) -> bool {
        self.source.is_cbr() && self.feedback.is_none() && self.cc.is_none()
    }

    /// The invariants of a UDP source's parameters, as one sentence.
    pub fn validate(&self) -> Result<(), String> {
        if self.rate_bps == 0 || self.packet_bytes == 0 {
            return Err("UDP rate and packet size must be positive".into());
        }
        if !self.source.is_cbr() && self.packet_bytes <= RTP_HEADER_BYTES {
            return Err(format!(
                "a media flow's packet size must be more than its {RTP_HEADER_BYTES} bytes of \
                 IPv4, UDP and RTP headers"
            ));
        }
        match &*self.source {
            SourceConfig::Cbr => {}
            SourceConfig::Video(v) => v.validate()?,
            SourceConfig::Trace(t) => t.validate()?,
            SourceConfig::Periodic(p) => p.validate()?,
        }
        if let Some(fb) = &self.feedback {
            fb.validate()?;
        }
        self.cc.validate()?;
        if self.cc.drives_cbr() {
            self.validate_udp_prague()?;
        } else if self.feedback.as_ref().is_some_and(|f| f.is_prague()) {
            return Err(
                "feedback kind prague is UDP Prague's own ACKs; it needs cc udp_prague".into(),
            );
        } else if self.cc.needs_feedback() && (self.feedback.is_none() || self.source.is_cbr()) {
            return Err(
                "a UDP flow's congestion control needs a frame source and the receiver's \
                 feedback (give source and feedback)"
                    .into(),
            );
        }
        Ok(())
    }

    /// UDP Prague's needs: feedback to read, a codepoint the reference sends (ECT(1), or
    /// Not-ECT as after its L4S-error fallback), and a source it drives.
    fn validate_udp_prague(&self) -> Result<(), String> {
        if self.feedback.is_none() {
            return Err(
                "udp_prague needs feedback: its own per-packet ACKs (prague) or RFC 8888 reports"
                    .into(),
            );
        }
        if matches!(self.ecn, EcnCodepoint::Ect0 | EcnCodepoint::Ce) {
            return Err(
                "udp_prague sends ECT(1) (or Not-ECT, as after its L4S-error fallback), not \
                 ECT(0) or CE"
                    .into(),
            );
        }
        if !matches!(&*self.source, SourceConfig::Cbr | SourceConfig::Video(_)) {
            return Err(
                "udp_prague drives a cbr source (bulk) or a video source (frame mode), not a \
                 trace or periodic one"
                    .into(),
            );
        }
        Ok(())
    }
}

/// A frame deadline or a pacing factor's common checks.
pub(crate) fn check_deadline(deadline_ns: u64) -> Result<(), String> {
    if deadline_ns == 0 {
        return Err("the frame deadline must be positive".into());
    }
    Ok(())
}

pub(crate) fn check_pacing(pacing: f64) -> Result<(), String> {
    if !(pacing.is_finite() && (pacing == 0.0 || pacing >= 1.0) && pacing <= 1000.0) {
        return Err(format!(
            "the pacing factor must be 0 (send each frame at once) or between 1 and 1000, not \
             {pacing}"
        ));
    }
    Ok(())
}

pub(crate) fn check_fps(fps: f64) -> Result<(), String> {
    if !(fps.is_finite() && fps > 0.0 && fps <= 1000.0) {
        return Err(format!(
            "the frame rate must be above 0 and at most 1000 frames/s, not {fps}"
        ));
    }
    Ok(())
}

/// ITU-T G.114's 150 ms: the one-way delay below which most interactive applications are
/// unaffected; a frame later than this is late by default.
pub const DEFAULT_DEADLINE_NS: u64 = 150_000_000;

/// libwebrtc's pacer sends at 2.5 times the target bitrate (its pacing factor,
/// `kDefaultPaceMultiplier`), so a frame leaves in 40 % of a frame interval instead of in
/// one burst.
pub const DEFAULT_PACING: f64 = 2.5;

pub(crate) fn default_deadline() -> u64 {
    DEFAULT_DEADLINE_NS
}
pub(crate) fn default_pacing() -> f64 {
    DEFAULT_PACING
}
pub(crate) fn default_fps() -> f64 {
    30.0
}
