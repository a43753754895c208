//! A video encoder model: frames at a fixed rate whose sizes follow a target bitrate.
//!
//! The frame size is the target rate's share of one frame interval, `rate / (8 · fps)`
//! bytes, times `1 + Laplace(0, noise)` (at least 1 byte): the frame-size noise of the
//! synthetic codecs the ns-3 RMCAT models use (cisco/syncodecs, `CodecWithFps::
//! addLaplaceSize`, scale `SCALE_B = 0.15`). The encoder follows a new target after a lag,
//! as RFC 8593 §4's reference model has a live encoder do: here a first-order lag with time
//! constant `lag_ns` (0: at once). The first frame, every `key_interval`-th frame and every
//! frame the congestion control asks for (`DatagramCc::wants_key_frame`) is a key frame,
//! `key_ratio` times the size of a normal one.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::rng::Rng;
use crate::time::{Time, SEC};

use super::{
    check_deadline, check_fps, check_pacing, default_deadline, default_fps, default_pacing,
};

/// The video encoder model's parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VideoConfig {
    /// Frames per second (default 30).
    #[serde(default = "default_fps")]
    pub fps: f64,
    /// Time constant with which the encoder's rate follows a new target (ns; 0: at once).
    #[serde(default)]
    pub lag_ns: u64,
    /// Scale of the Laplacian frame-size noise, relative to the mean size (syncodecs'
    /// 0.15 by default; 0: every frame the same size).
    #[serde(default = "default_noise")]
    pub noise: f64,
    /// A key frame every this many frames (0: only the first and those asked for).
    #[serde(default)]
    pub key_interval: u32,
    /// A key frame's size as a multiple of a normal frame's (default 4).
    #[serde(default = "default_key_ratio")]
    pub key_ratio: f64,
    /// Packets leave at this many times the target bitrate (0: each frame in one burst).
    #[serde(default = "default_pacing")]
    pub pacing: f64,
    /// A frame is late when its delay exceeds this (ns; default 150 ms).
    #[serde(default = "default_deadline")]
    pub deadline_ns: u64,
}

fn default_noise() -> f64 {
    0.15
}
fn default_key_ratio() -> f64 {
    4.0
}

impl VideoConfig {
    pub fn validate(&self) -> Result<(), String> {
        check_fps(self.fps)?;
        if !(self.noise.is_finite() && (0.0..1.0).contains(&self.noise)) {
            return Err(format!(
                "the frame-size noise must be at least 0 and below 1, not {}",
                self.noise
            ));
        }
        if !(self.key_ratio.is_finite() && (1.0..=100.0).contains(&self.key_ratio)) {
            return Err(format!(
                "the key-frame size ratio must be between 1 and 100, not {}",
                self.key_ratio
            ));
        }
        check_pacing(self.pacing)?;
        check_deadline(self.deadline_ns)
    }
}

/// The encoder's state.
#[derive(Clone, Debug)]
pub struct VideoEncoder {
    cfg: VideoConfig,
    /// The rate the encoder produces now (bit/s), following the target.
    rate: f64,
    rng: Rng,
    frames: u64,
}

impl VideoEncoder {
    pub fn new(cfg: &VideoConfig, rate_bps: u64, rng: Rng) -> VideoEncoder {
        VideoEncoder {
            cfg: cfg.clone(),
            rate: rate_bps as f64,
            rng,
            frames: 0,
        }
    }

    /// The frame interval (ns).
    pub fn interval(&self) -> Time {
        (SEC as f64 / self.cfg.fps).round() as Time
    }

    /// The next frame's payload bytes and whether it is a key frame, the target being
    /// `target_bps` and a key frame asked for if `key`.
    pub fn next_frame(&mut self, target_bps: u64, key: bool) -> (u32, bool) {
        let target = target_bps as f64;
        if self.cfg.lag_ns == 0 {
            self.rate = target;
        } else {
            let a = 1.0 - (-(self.interval() as f64) / self.cfg.lag_ns as f64).exp();
            self.rate += (target - self.rate) * a;
        }
        let k = self.frames;
        self.frames += 1;
        let key = key
            || k == 0
            || (self.cfg.key_interval > 0 && k.is_multiple_of(self.cfg.key_interval as u64));
        let mut size = self.rate / (8.0 * self.cfg.fps);
        if key {
            size *= self.cfg.key_ratio;
        }
        if self.cfg.noise > 0.0 {
            size *= 1.0 + laplace(&mut self.rng, self.cfg.noise);
        }
        (size.round().clamp(1.0, u32::MAX as f64) as u32, key)
    }
}

/// A zero-mean Laplacian sample of scale `b` (inverse transform of a uniform in [-½, ½)).
fn laplace(rng: &mut Rng, b: f64) -> f64 {
    let u = rng.uniform() - 0.5;
    let m = (1.0 - 2.0 * u.abs()).max(f64::MIN_POSITIVE);
    -b * u.signum() * m.ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> VideoConfig {
        serde_json::from_str("{}").unwrap()
    }

    #[test]
    fn frames_average_the_target_and_vary() {
        let mut e = VideoEncoder::new(&cfg(), 3_000_000, Rng::for_component(1, 2));
        let frames: Vec<(u32, bool)> = (0..30_000)
            .map(|_| e.next_frame(3_000_000, false))
            .collect();
        let sizes: Vec<u32> = frames.iter().map(|f| f.0).collect();
        // The first frame is a key frame; the rest average 3 Mbit/s / 30 / 8 = 12 500 B.
        assert!(frames[0].1 && frames[1..].iter().all(|f| !f.1));
        let mean = sizes[1..].iter().map(|&s| s as f64).sum::<f64>() / (sizes.len() - 1) as f64;
        assert!((mean / 12_500.0 - 1.0).abs() < 0.01, "{mean}");
        // Laplace(0, 0.15): mean absolute deviation 0.15.
        let mad = sizes[1..]
            .iter()
            .map(|&s| (s as f64 / 12_500.0 - 1.0).abs())
            .sum::<f64>()
            / (sizes.len() - 1) as f64;
        assert!((mad - 0.15).abs() < 0.01, "{mad}");
    }

    #[test]
    fn the_rate_follows_a_new_target_with_its_lag() {
        let mut c = cfg();
        c.noise = 0.0;
        c.lag_ns = SEC; // 1 s time constant: 63 % of a step after 1 s (30 frames)
        let mut e = VideoEncoder::new(&c, 1_000_000, Rng::for_component(1, 2));
        e.next_frame(1_000_000, false);
        let sizes: Vec<u32> = (0..30).map(|_| e.next_frame(2_000_000, false).0).collect();
        let after = sizes[29] as f64 * 8.0 * 30.0;
        assert!((after - (1e6 + 0.632 * 1e6)).abs() < 0.01e6, "{after}");
        c.lag_ns = 0;
        let mut e = VideoEncoder::new(&c, 1_000_000, Rng::for_component(1, 2));
        e.next_frame(1_000_000, false);
        assert_eq!(e.next_frame(2_000_000, false), (8333, false));
        assert_eq!(e.next_frame(2_000_000, true), (33333, true));
    }
}
