//! Per-frame accounting of a media flow: when each frame was produced, when its first
//! packet left, when its last packet arrived; its one-way delay (first packet sent → last
//! packet received) and whether it met its deadline. Measured by the simulator, not by
//! the protocol: the receiver's view of a frame is read from the sender's table.

use crate::stats::Histogram;
use crate::time::Time;

/// Not yet (a frame's first packet not sent, or its last not received).
pub const NEVER: Time = Time::MAX;

/// One frame.
#[derive(Clone, Copy, Debug)]
pub struct FrameRec {
    /// When the source produced it.
    pub created: Time,
    /// When its first packet left the sender.
    pub first_sent: Time,
    /// When its last packet reached the receiver.
    pub done: Time,
    /// Payload bytes.
    pub bytes: u32,
    pub packets: u32,
    pub received: u32,
    pub key: bool,
    /// The target bitrate it was encoded for (bit/s).
    pub target_bps: u64,
}

impl FrameRec {
    /// Its one-way delay, if complete.
    pub fn delay(&self) -> Option<Time> {
        (self.done != NEVER).then(|| self.done - self.first_sent)
    }

    /// Whether it missed `deadline` by `now`: complete but later, or incomplete with the
    /// deadline past (counted from its first packet's departure, or from its creation
    /// while none has left).
    pub fn late(&self, deadline: Time, now: Time) -> bool {
        match self.delay() {
            Some(d) => d > deadline,
            None => {
                let from = if self.first_sent == NEVER {
                    self.created
                } else {
                    self.first_sent
                };
                from.saturating_add(deadline) < now
            }
        }
    }
}

/// All frames of a flow and their totals.
#[derive(Clone, Debug)]
pub struct FrameLog {
    pub frames: Vec<FrameRec>,
    pub deadline: Time,
    /// Delays of the complete frames.
    pub delay: Histogram,
    pub complete: u64,
    /// Payload bytes produced, sent and received.
    pub bytes_produced: u64,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// Sum of each frame's target bitrate (for the mean).
    target_sum: u128,
}

impl FrameLog {
    pub fn new(deadline: Time) -> FrameLog {
        FrameLog {
            frames: Vec::new(),
            deadline,
            delay: Histogram::default(),
            complete: 0,
            bytes_produced: 0,
            bytes_sent: 0,
            bytes_received: 0,
            target_sum: 0,
        }
    }

    /// A new frame of `bytes` cut into `packets`; returns its index.
    pub fn push(
        &mut self,
        now: Time,
        bytes: u32,
        packets: u32,
        key: bool,
        target_bps: u64,
    ) -> usize {
        self.frames.push(FrameRec {
            created: now,
            first_sent: NEVER,
            done: NEVER,
            bytes,
            packets,
            received: 0,
            key,
            target_bps,
        });
        self.bytes_produced += bytes as u64;
        self.target_sum += target_bps as u128;
        self.frames.len() - 1
    }

    /// A packet of frame `i` carrying `payload` bytes left the sender.
    #[inline]
    pub fn on_sent(&mut self, i: usize, now: Time, payload: u32) {
        let f = &mut self.frames[i];
        if f.first_sent == NEVER {
            f.first_sent = now;
        }
        self.bytes_sent += payload as u64;
    }

    /// A packet of frame `i` carrying `payload` bytes reached the receiver.
    #[inline]
    pub fn on_received(&mut self, i: usize, now: Time, payload: u32) {
        self.bytes_received += payload as u64;
        let f = &mut self.frames[i];
        f.received += 1;
        if f.received == f.packets {
            f.done = now;
            let d = now - f.first_sent;
            self.delay.record(d);
            self.complete += 1;
        }
    }

    /// Frames that missed their deadline by `now` (`FrameRec::late`).
    pub fn late(&self, now: Time) -> u64 {
        self.frames
            .iter()
            .filter(|f| f.late(self.deadline, now))
            .count() as u64
    }

    /// Over the window `(since, now]`: the delays of the frames settled in it, the late
    /// ones among them, and the frames produced in it. A frame settles once: when it
    /// completes by its deadline (its delay), or when its deadline passes first (late, its
    /// delay censored at the deadline: it may never complete).
    pub fn window(&self, since: Time, now: Time) -> (Vec<f64>, u64, u64) {
        use crate::time::secs;
        let inside = |t: Time| since < t && t <= now;
        let (mut delays, mut late, mut made) = (Vec::new(), 0, 0);
        for f in &self.frames {
            let from = if f.first_sent == NEVER || f.first_sent > now {
                f.created
            } else {
                f.first_sent
            };
            let due = from.saturating_add(self.deadline);
            if f.done <= due {
                if inside(f.done) {
                    delays.push(secs(f.done - f.first_sent));
                }
            } else if inside(due) {
                delays.push(secs(self.deadline));
                late += 1;
            }
            made += inside(f.created) as u64;
        }
        (delays, late, made)
    }

    /// Mean of the frames' target bitrates (bit/s); 0 before the first frame.
    pub fn target_mean_bps(&self) -> f64 {
        if self.frames.is_empty() {
            0.0
        } else {
            self.target_sum as f64 / self.frames.len() as f64
        }
    }
}

/// Every media flow's frames as columns (the `frames.parquet` table): one row per frame
/// produced, in flow then frame order. NaN where a frame has not left or not completed.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct FrameRows {
    pub flow: Vec<u32>,
    pub frame: Vec<u64>,
    pub key: Vec<bool>,
    pub bytes: Vec<u32>,
    pub packets: Vec<u32>,
    /// When the source produced it (s).
    pub created_s: Vec<f64>,
    /// When its first packet left (s).
    pub sent_s: Vec<f64>,
    /// First packet sent to last packet received (s).
    pub delay_s: Vec<f64>,
    /// Missed its deadline by `now`.
    pub late: Vec<bool>,
}

impl FrameRows {
    /// Append flow `flow`'s frames as of `now`.
    pub fn push_flow(&mut self, flow: u32, log: &FrameLog, now: Time) {
        use crate::time::secs;
        let at = |t: Time| if t == NEVER { f64::NAN } else { secs(t) };
        for (k, f) in log.frames.iter().enumerate() {
            let from = if f.first_sent == NEVER {
                f.created
            } else {
                f.first_sent
            };
            let late = match f.delay() {
                Some(d) => d > log.deadline,
                None => from.saturating_add(log.deadline) < now,
            };
            self.flow.push(flow);
            self.frame.push(k as u64);
            self.key.push(f.key);
            self.bytes.push(f.bytes);
            self.packets.push(f.packets);
            self.created_s.push(secs(f.created));
            self.sent_s.push(at(f.first_sent));
            self.delay_s.push(f.delay().map_or(f64::NAN, secs));
            self.late.push(late);
        }
    }
}
