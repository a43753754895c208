//! Frame sizes from a trace: one frame per entry at a fixed frame rate, looping at the end
//! (the trace-driven model of RFC 8593 §5, without its rate scaling: the sizes are sent as
//! recorded). The Python scenario layer reads the file (one size per line) and hands the
//! sizes over as data.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::time::{Time, SEC};

use super::{
    check_deadline, check_fps, check_pacing, default_deadline, default_fps, default_pacing,
};

/// Most frames a trace may hold (as the Python reader's `MAX_FRAMES`).
pub const MAX_TRACE_FRAMES: usize = 10_000_000;

/// A frame-size trace's parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TraceConfig {
    /// Frames per second (default 30).
    #[serde(default = "default_fps")]
    pub fps: f64,
    /// Each frame's payload bytes, in order; the trace repeats.
    pub frame_bytes: Vec<u32>,
    /// Packets leave at this many times the trace's mean bitrate (0: each frame at once).
    #[serde(default = "default_pacing")]
    pub pacing: f64,
    /// A frame is late when its delay exceeds this (ns; default 150 ms).
    #[serde(default = "default_deadline")]
    pub deadline_ns: u64,
}

impl TraceConfig {
    pub fn validate(&self) -> Result<(), String> {
        check_fps(self.fps)?;
        if self.frame_bytes.is_empty() {
            return Err("the frame-size trace is empty".into());
        }
        if self.frame_bytes.len() > MAX_TRACE_FRAMES {
            return Err(format!(
                "the frame-size trace has more than {MAX_TRACE_FRAMES} frames"
            ));
        }
        if let Some(i) = self.frame_bytes.iter().position(|&b| b == 0) {
            return Err(format!("frame {i} of the frame-size trace has no bytes"));
        }
        check_pacing(self.pacing)?;
        check_deadline(self.deadline_ns)
    }

    /// The frame interval (ns).
    pub fn interval(&self) -> Time {
        (SEC as f64 / self.fps).round() as Time
    }

    /// The trace's mean payload bitrate (bit/s).
    pub fn mean_rate_bps(&self) -> u64 {
        let bytes: u64 = self.frame_bytes.iter().map(|&b| b as u64).sum();
        ((bytes as f64 * 8.0 * self.fps / self.frame_bytes.len() as f64) as u64).max(1)
    }

    /// Frame `k`'s payload bytes.
    #[inline]
    pub fn frame(&self, k: u64) -> u32 {
        self.frame_bytes[(k % self.frame_bytes.len() as u64) as usize]
    }
}
