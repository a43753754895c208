//! A media flow's two ends: the sender (a source's frames cut into RTP packets, its queue,
//! its pacer, its congestion control) and the receiver (counting, recording arrivals for
//! feedback, completing frames).
//!
//! With pacing, a frame's packets leave one per `size / (pacing × target)`, as libwebrtc's
//! pacer sends them; with `pacing = 0` a frame leaves in one burst. Nothing is
//! retransmitted: a frame with a lost packet never completes.

use crate::packet::{Dir, Packet};
use crate::rng::Rng;
use crate::time::{tx_time, Time};

use super::cbr::{UdpSink, UdpSource};
use super::cc::DatagramCc;
use super::external_rate::ExternalRate;
use super::feedback::{FeedbackStats, Rfc8888Receiver};
use super::frames::FrameLog;
use super::prague_ack::PragueAcks;
use super::trace::TraceConfig;
use super::video::VideoEncoder;
use super::{PeriodicConfig, SourceConfig, UdpConfig, RTP_HEADER_BYTES};

/// What produces the flow's data.
#[derive(Clone, Debug)]
enum Source {
    Cbr(UdpSource),
    Video(VideoEncoder),
    Trace(TraceConfig),
    Periodic(PeriodicConfig),
}

/// Both ends of a media flow (boxed in `Endpoints::Media`).
#[derive(Clone, Debug)]
pub struct Media {
    fwd: Packet,
    rev: Packet,
    /// Largest packet on the wire.
    packet_bytes: u32,
    /// The configured rate: CBR rate or the video's initial target (bit/s).
    rate_bps: u64,
    source: Source,
    /// Frame interval (frame sources).
    interval: Time,
    start: Time,
    frames_made: u64,
    next_frame_at: Time,
    /// Total payload bytes to produce (`None`: until stopped).
    size: Option<u64>,
    pub stopped: bool,
    /// Pacing factor (0: bursts).
    pacing: f64,
    next_send_at: Time,
    /// The congestion control refused the queue's head packet (`can_send`): nothing is
    /// sent until a report or the next frame.
    blocked: bool,
    /// The head of the send queue: frame index and packet within it.
    q_frame: usize,
    q_pkt: u32,
    next_seq: u64,
    /// Bytes put on the wire (headers included).
    pub bytes_sent: u64,
    pub frames: Option<FrameLog>,
    pub cc: Box<dyn DatagramCc>,
    pub sink: UdpSink,
    pub feedback: Option<Rfc8888Receiver>,
    /// UDP Prague's per-packet ACKs (`feedback = { kind = "prague" }`).
    pub acks: Option<PragueAcks>,
    /// A `cbr` source under a congestion control that drives it: always data to send, at
    /// what the congestion control allows (capped at `rate_bps`).
    greedy: bool,
    /// The time of the one send event the engine holds for this flow.
    armed: Option<Time>,
    /// Frames the congestion control cleared from the send queue before they all left.
    pub discarded_frames: u64,
    /// The target set from outside (`Action::SetMediaRate`); `None` until the first.
    pub external: Option<Box<ExternalRate>>,
}

impl Media {
    pub fn new(
        cfg: &UdpConfig,
        fwd: Packet,
        rev: Packet,
        start: Time,
        size: Option<u64>,
        rng: Rng,
    ) -> Media {
        let mut fwd = fwd;
        fwd.ecn = cfg.ecn.into();
        fwd.dir = Dir::Forward;
        let (source, interval, pacing, deadline) = match &*cfg.source {
            SourceConfig::Cbr => (
                Source::Cbr(UdpSource::new(cfg, fwd, start, size)),
                0,
                0.0,
                None,
            ),
            SourceConfig::Video(v) => {
                let e = VideoEncoder::new(v, cfg.rate_bps, rng);
                let iv = e.interval();
                (Source::Video(e), iv, v.pacing, Some(v.deadline_ns))
            }
            SourceConfig::Trace(t) => (
                Source::Trace(t.clone()),
                t.interval(),
                t.pacing,
                Some(t.deadline_ns),
            ),
            SourceConfig::Periodic(p) => (
                Source::Periodic(p.clone()),
                p.interval_ns,
                0.0,
                Some(p.deadline_ns),
            ),
        };
        let mut cc = cfg.cc.build();
        cc.configure(start, cfg.packet_bytes, (interval > 0).then_some(interval));
        let fb = cfg.feedback.as_ref();
        Media {
            fwd,
            rev,
            packet_bytes: cfg.packet_bytes,
            rate_bps: cfg.rate_bps,
            source,
            interval,
            start,
            frames_made: 0,
            next_frame_at: start,
            size,
            stopped: false,
            pacing,
            next_send_at: 0,
            blocked: false,
            q_frame: 0,
            q_pkt: 0,
            next_seq: 0,
            bytes_sent: 0,
            frames: deadline.map(FrameLog::new),
            cc,
            sink: UdpSink::default(),
            feedback: fb.filter(|f| !f.is_prague()).map(Rfc8888Receiver::new),
            acks: fb.filter(|f| f.is_prague()).map(|_| PragueAcks::default()),
            greedy: cfg.source.is_cbr() && cfg.cc.drives_cbr(),
            armed: None,
            discarded_frames: 0,
            external: None,
        }
    }

    /// The flow starts: the time of its first send event.
    pub fn start(&mut self, now: Time) -> Time {
        self.armed = Some(now);
        now
    }

    /// The send event at `now`: produce the frames due, send what the pacer and the
    /// congestion control allow. Returns the time of the next send event, if one is needed
    /// (a stale event, superseded by an earlier one, does nothing).
    #[inline(never)] // off the engine's hot path (TCP flows never come here)
    pub fn on_wake(&mut self, now: Time, out: &mut Vec<Packet>) -> Option<Time> {
        if self.armed != Some(now) {
            return None;
        }
        self.armed = None;
        let next = match &mut self.source {
            Source::Cbr(_) if self.greedy => self.send_greedy(now, out),
            Source::Cbr(src) => {
                let next = src.send(now, out);
                if let Some(p) = out.last_mut() {
                    p.tcp.seq = self.next_seq;
                    self.next_seq += 1;
                    self.bytes_sent += p.size as u64;
                    self.cc.on_sent(now, p.tcp.seq, p.size);
                }
                next
            }
            _ => {
                self.check_timeout(now);
                self.make_frames(now);
                self.send(now, out);
                self.next_wake(now)
            }
        };
        self.armed = next;
        next
    }

    /// After a report at `now`: a send event earlier than the one held, if the congestion
    /// control may now allow what it held back.
    #[inline(never)] // off the engine's hot path (TCP flows never come here)
    pub fn rearm(&mut self, now: Time) -> Option<Time> {
        if matches!(self.source, Source::Cbr(_)) && !self.greedy {
            return None;
        }
        self.blocked = false;
        let t = if self.greedy {
            self.greedy_wake(now)?
        } else {
            self.next_wake(now)?
        };
        if self.armed.is_some_and(|a| a <= t) {
            return None;
        }
        self.armed = Some(t);
        Some(t)
    }

    /// The encoder's target now (bit/s): the congestion control's, one set from outside,
    /// or the configured rate.
    pub fn target_bps(&self) -> u64 {
        match &self.source {
            Source::Trace(t) => t.mean_rate_bps(),
            _ => self
                .cc
                .target_rate_bps()
                .or(self.external.as_ref().map(|x| x.target_bps))
                .unwrap_or(self.rate_bps),
        }
    }

    /// Whether the source is the video encoder (the one source whose frames follow a target).
    pub fn is_video(&self) -> bool {
        matches!(self.source, Source::Video(_))
    }

    /// Set the target from outside: the encoder follows it with its lag, as it follows a
    /// congestion control's; the sender starts taking RTT samples from its feedback.
    pub fn set_external_rate(&mut self, rate_bps: u64) {
        match &mut self.external {
            Some(x) => x.target_bps = rate_bps,
            None => self.external = Some(Box::new(ExternalRate::new(rate_bps))),
        }
    }

    fn pace_bps(&self) -> u64 {
        if self.pacing == 0.0 {
            return 0;
        }
        self.cc
            .pacing_rate_bps()
            .unwrap_or_else(|| (self.target_bps() as f64 * self.pacing) as u64)
            .max(1)
    }

    /// Payload bytes per packet.
    fn payload_max(&self) -> u32 {
        self.packet_bytes - RTP_HEADER_BYTES
    }

    fn make_frames(&mut self, now: Time) {
        while !self.stopped && self.next_frame_at <= now {
            let Some(log) = &self.frames else { return };
            if self.size.is_some_and(|s| log.bytes_produced >= s) {
                return;
            }
            let target = self.target_bps();
            let k = self.frames_made;
            let (bytes, key) = match &mut self.source {
                Source::Video(e) => {
                    let key = self.cc.take_key_frame_request();
                    e.next_frame(target, key)
                }
                Source::Trace(t) => (t.frame(k), false),
                Source::Periodic(p) => (p.message_bytes, false),
                Source::Cbr(_) => unreachable!("a CBR source has no frames"),
            };
            let packets = bytes.div_ceil(self.payload_max());
            let at = self.next_frame_at;
            let log = self.frames.as_mut().expect("a frame source logs frames");
            log.push(at, bytes, packets, key, target);
            self.frames_made += 1;
            self.next_frame_at = self.start + self.frames_made * self.interval;
            let delay = self.rtp_queue_delay(now);
            self.cc.on_rtp_queue(now, delay, true);
        }
    }

    /// How long the send queue's oldest packet has waited (its frame's age; 0: empty).
    fn rtp_queue_delay(&self, now: Time) -> Time {
        let Some(log) = &self.frames else { return 0 };
        log.frames
            .get(self.q_frame)
            .map_or(0, |f| now.saturating_sub(f.created))
    }

    /// Send the queue's head packets the pacer and the congestion control allow now.
    fn send(&mut self, now: Time, out: &mut Vec<Packet>) {
        let pace = self.pace_bps();
        let pmax = self.payload_max();
        let Some(log) = &mut self.frames else { return };
        self.blocked = false;
        while self.q_frame < log.frames.len() {
            if pace > 0 && self.next_send_at > now {
                break;
            }
            let f = log.frames[self.q_frame];
            let payload = (f.bytes - self.q_pkt * pmax).min(pmax);
            let wire = payload + RTP_HEADER_BYTES;
            if !self.cc.can_send(now, wire) {
                self.blocked = true;
                break;
            }
            let mut p = self.fwd;
            p.size = wire;
            p.created = now;
            p.tcp.seq = self.next_seq;
            p.tcp.ack = self.q_frame as u64;
            p.tcp.len = payload;
            out.push(p);
            log.on_sent(self.q_frame, now, payload);
            self.cc.on_sent(now, self.next_seq, wire);
            if let Some(x) = &mut self.external {
                x.on_sent(self.next_seq, now);
            }
            self.next_seq += 1;
            self.bytes_sent += wire as u64;
            self.q_pkt += 1;
            if self.q_pkt == f.packets {
                self.q_frame += 1;
                self.q_pkt = 0;
            }
            if pace > 0 {
                self.next_send_at = now + tx_time(wire, pace);
            }
        }
    }

    /// When the sender next has something to do after `now`: a frame to produce, or a
    /// queued packet the pacer will let go (never while the congestion control holds the
    /// queue: a report or the next frame tries again).
    fn next_wake(&self, now: Time) -> Option<Time> {
        let log = self.frames.as_ref()?;
        let more_frames = !self.stopped && self.size.is_none_or(|s| log.bytes_produced < s);
        let frame = more_frames.then_some(self.next_frame_at);
        let queued = self.q_frame < log.frames.len();
        let send = if !queued {
            None
        } else if self.blocked {
            self.cc.timeout().map(|t| t.max(now))
        } else {
            Some(self.next_send_at.max(now))
        };
        match (frame, send) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// While the congestion control holds the queue: past its timeout, tell it.
    fn check_timeout(&mut self, now: Time) {
        if self.cc.timeout().is_some_and(|t| t <= now) {
            self.cc.on_timeout(now);
        }
    }

    /// The send event of a greedy sender: a burst of packets of the congestion control's
    /// size, as its window allows, then the next burst one pacing step later
    /// (udp_prague_sender.cpp's loop: `nextSend = startSend + packet_size · inburst /
    /// pacing_rate`). Returns the next send event.
    fn send_greedy(&mut self, now: Time, out: &mut Vec<Packet>) -> Option<Time> {
        if self.stopped || self.size.is_some_and(|s| self.bytes_sent >= s) {
            return None;
        }
        self.check_timeout(now);
        self.blocked = false;
        let burst = self.cc.burst_packets().max(1);
        let mut bytes = 0u32;
        for _ in 0..burst {
            let size = self.cc.packet_bytes().unwrap_or(self.packet_bytes);
            if !self.cc.can_send(now, size) {
                self.blocked = true;
                break;
            }
            let mut p = self.fwd;
            p.size = size;
            p.created = now;
            p.tcp.seq = self.next_seq;
            p.tcp.len = size;
            out.push(p);
            self.cc.on_sent(now, self.next_seq, size);
            self.next_seq += 1;
            self.bytes_sent += size as u64;
            bytes += size;
        }
        if bytes > 0 {
            let pace = self.pace_cap();
            self.next_send_at = now + tx_time(bytes, pace);
        }
        self.greedy_wake(now)
    }

    /// The pacing rate of a greedy sender: the congestion control's, at most the flow's.
    fn pace_cap(&self) -> u64 {
        self.cc
            .pacing_rate_bps()
            .unwrap_or(self.rate_bps)
            .min(self.rate_bps)
            .max(1)
    }

    /// A greedy sender's next send event: the pacer's time, or while the window holds it,
    /// the congestion control's timeout (a report rearms it earlier).
    fn greedy_wake(&self, now: Time) -> Option<Time> {
        if self.stopped || self.size.is_some_and(|s| self.bytes_sent >= s) {
            return None;
        }
        if self.blocked {
            return self.cc.timeout().map(|t| t.max(now));
        }
        Some(self.next_send_at.max(now))
    }

    /// The flow's feedback totals (RFC 8888 reports or Prague ACKs), if it has feedback.
    pub fn feedback_stats(&self) -> Option<FeedbackStats> {
        match (&self.feedback, &self.acks) {
            (Some(fb), _) => Some(fb.stats),
            (_, Some(a)) => Some(a.stats),
            _ => None,
        }
    }

    /// A data packet reached the receiver; a per-packet ACK goes into `out`.
    #[inline(never)] // off the engine's hot path (TCP flows never come here)
    pub fn on_data(&mut self, p: &Packet, now: Time, out: &mut Vec<Packet>) {
        self.sink.on_packet(p);
        if let Some(fb) = &mut self.feedback {
            fb.on_packet(p.tcp.seq, now, p.ecn);
        }
        if let Some(acks) = &mut self.acks {
            acks.on_packet(p, now, &self.rev, out);
        }
        if let Some(log) = &mut self.frames {
            log.on_received(p.tcp.ack as usize, now, p.tcp.len);
        }
    }

    /// The receiver's report timer: the next report's packets into `out`; returns when it
    /// fires next.
    #[inline(never)] // off the engine's hot path (TCP flows never come here)
    pub fn on_feedback_timer(&mut self, now: Time, out: &mut Vec<Packet>) -> Option<Time> {
        let fb = self.feedback.as_mut()?;
        fb.tick(now, &self.rev, out);
        Some(now + fb.interval)
    }

    /// The first report timer (one interval after the start), if the flow has feedback.
    pub fn first_feedback(&self, start: Time) -> Option<Time> {
        self.feedback.as_ref().map(|fb| start + fb.interval)
    }

    /// A feedback packet reached the sender: its report goes to the congestion control.
    #[inline(never)] // off the engine's hot path (TCP flows never come here)
    pub fn on_report(&mut self, p: &Packet, now: Time) {
        if let Some(acks) = &mut self.acks {
            if let Some(a) = acks.on_ack(p) {
                self.cc.on_ack(now, &a);
            }
            return;
        }
        let Some(fb) = &mut self.feedback else { return };
        let Some(r) = fb.take(p.tcp.seq) else { return };
        let s = &mut fb.stats;
        s.reports_received += 1;
        for e in &r.entries {
            if e.arrived {
                s.acked += 1;
                s.ce += (e.ecn == crate::packet::Ecn::Ce) as u64;
            } else {
                s.lost += 1;
            }
        }
        self.cc.on_feedback(now, &r);
        if let Some(x) = &mut self.external {
            x.on_report(now, &r);
        }
        fb.recycle(r);
        let delay = self.rtp_queue_delay(now);
        if self.cc.on_rtp_queue(now, delay, false) {
            // The congestion control clears the queue: what was not sent never will be.
            let n = self.frames.as_ref().map_or(0, |l| l.frames.len());
            self.discarded_frames += (n - self.q_frame) as u64;
            self.q_frame = n;
            self.q_pkt = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;
    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::app::feedback::{Report, ReportEntry};
    use crate::config::SimConfig;
    use crate::engine::Simulation;
    use crate::flow::Endpoints;
    use crate::packet::Ecn;
    use crate::time::{MS, SEC};

    /// A congestion control that sends as configured and keeps what it is told.
    #[derive(Clone, Debug, Default)]
    struct Recorder {
        sent: Arc<Mutex<Vec<u64>>>,
        reported: Arc<Mutex<Vec<ReportEntry>>>,
    }

    impl DatagramCc for Recorder {
        fn name(&self) -> &'static str {
            "recorder"
        }
        fn on_sent(&mut self, _now: Time, seq: u64, _bytes: u32) {
            self.sent.lock().unwrap().push(seq);
        }
        fn on_feedback(&mut self, _now: Time, r: &Report) {
            self.reported.lock().unwrap().extend_from_slice(&r.entries);
        }
        fn box_clone(&self) -> Box<dyn DatagramCc> {
            Box::new(self.clone())
        }
    }

    /// h0 → h1 over one link of `rate` bit/s and 10 ms, with `link` extra keys; one UDP
    /// flow with `udp` keys, stopping at 4 s of a 5 s run.
    fn one_link(rate: u64, link: &str, udp: &str) -> SimConfig {
        SimConfig::from_json(&format!(
            r#"{{"duration_ns": {}, "nodes": [{{"name": "h0"}}, {{"name": "h1"}}],
            "links": [{{"a": 0, "b": 1, "rate_bps": {rate}, "delay_ns": {} {link}}}],
            "flows": [{{"kind": "udp", "src": 0, "dst": 1, "stop_ns": {}, "udp": {udp}}}]}}"#,
            5 * SEC,
            10 * MS,
            4 * SEC
        ))
        .unwrap()
    }

    /// An ECT(1) video flow of target `rate` with feedback over a 10 Mbit/s DualPI2 link.
    fn video_through_dualpi2(rate: u64) -> SimConfig {
        one_link(
            10_000_000,
            r#", "qdisc_ab": {"kind": "dualpi2"}"#,
            &format!(
                r#"{{"rate_bps": {rate}, "ecn": "ect1", "source": {{"kind": "video"}},
                "feedback": {{"kind": "rfc8888"}}}}"#
            ),
        )
    }

    fn media(sim: &mut Simulation) -> &mut Media {
        match &mut sim.flows[0].ep {
            Endpoints::Media(m) => m,
            other => panic!("not a media flow: {other:?}"),
        }
    }

    fn with_recorder(cfg: SimConfig) -> (Simulation, Recorder) {
        let mut sim = Simulation::new(cfg).unwrap();
        let rec = Recorder::default();
        media(&mut sim).cc = Box::new(rec.clone());
        sim.run();
        (sim, rec)
    }

    /// A target set from outside: the encoder's frames follow it, the sender measures the
    /// path's RTT from its feedback (2 x 10 ms here, plus queueing), the action is refused
    /// for a congestion-controlled flow and rate 0, and a flow never given it is unchanged.
    #[test]
    fn an_external_target_drives_the_encoder() {
        use crate::control::Action;
        let run = |set: Option<u64>| {
            let mut sim = Simulation::new(video_through_dualpi2(2_000_000)).unwrap();
            sim.run_until(SEC);
            if let Some(r) = set {
                let a = Action::SetMediaRate {
                    flow: 0,
                    rate_bps: r,
                };
                sim.apply_action(&a).unwrap();
            }
            sim.run_until(3 * SEC);
            let o = sim.observe_media(0, 2 * SEC).unwrap();
            let m = media(&mut sim);
            let last = m.frames.as_ref().unwrap().frames.last().unwrap().target_bps;
            (o, last, m.bytes_sent)
        };
        let (before, last, sent) = run(None);
        assert_eq!(last, 2_000_000);
        assert!(before.srtt_s.is_nan(), "no RTT samples without the action");
        let (o, last, more) = run(Some(6_000_000));
        assert_eq!((last, o.target_bps), (6_000_000, 6_000_000));
        assert!(more > sent * 2, "{more} {sent}");
        assert!((0.020..0.040).contains(&o.srtt_s), "srtt {}", o.srtt_s);
        assert!(o.frames_made == 30 && o.frame_delays_s.len() >= 28, "{o:?}");
        // Refusals: rate 0, a flow with a congestion control.
        let mut sim = Simulation::new(video_through_dualpi2(2_000_000)).unwrap();
        let set = |r| Action::SetMediaRate {
            flow: 0,
            rate_bps: r,
        };
        assert!(sim
            .apply_action(&set(0))
            .unwrap_err()
            .0
            .contains("positive"));
        media(&mut sim).cc = Box::new(Recorder::default());
        let e = sim.apply_action(&set(1_000_000)).unwrap_err();
        assert!(e.0.contains("congestion control"), "{e}");
    }

    /// Video at 1.3 times a 10 Mbit/s DualPI2 bottleneck, ECT(1): the L queue marks. Every
    /// packet sent is reported exactly once, arrived exactly when it arrived, CE exactly
    /// when the receiver saw CE.
    #[test]
    fn reports_cover_each_packet_once_with_the_ce_marks_dualpi2_applied() {
        let (mut sim, rec) = with_recorder(video_through_dualpi2(13_000_000));
        let m = media(&mut sim);
        let fb = m.feedback.as_ref().unwrap();
        let arrived: HashSet<u64> = fb.arrived_log.iter().copied().collect();
        assert_eq!(
            arrived.len(),
            fb.arrived_log.len(),
            "a packet arrived twice"
        );
        let sent = rec.sent.lock().unwrap().clone();
        let reported = rec.reported.lock().unwrap().clone();
        let seqs: Vec<u64> = reported.iter().map(|e| e.seq).collect();
        assert_eq!(
            seqs, sent,
            "reports must cover every packet sent, once, in order"
        );
        let mut ce = 0;
        for e in &reported {
            assert_eq!(e.arrived, arrived.contains(&e.seq), "packet {}", e.seq);
            ce += (e.ecn == Ecn::Ce) as u64;
        }
        assert_eq!(fb.stats.reports_received, fb.stats.reports_sent);
        assert_eq!(ce, m.sink.ce_packets);
        assert!(
            ce > 100,
            "DualPI2 marked only {ce} packets: the test shows nothing"
        );
    }

    /// 3 % loss on the link (both ways: some reports are lost too): for every report that
    /// arrives, the packets it calls missing are exactly those that never arrived.
    #[test]
    fn the_sender_learns_exactly_the_lost_sequence_numbers() {
        let cfg = one_link(
            20_000_000,
            r#", "loss": 0.03"#,
            r#"{"rate_bps": 5000000, "source": {"kind": "video"},
                "feedback": {"kind": "rfc8888", "interval_ns": 10000000}}"#,
        );
        let (mut sim, rec) = with_recorder(cfg);
        let fb = media(&mut sim).feedback.as_ref().unwrap();
        let arrived: HashSet<u64> = fb.arrived_log.iter().copied().collect();
        let reported = rec.reported.lock().unwrap().clone();
        let lost: Vec<u64> = reported
            .iter()
            .filter(|e| !e.arrived)
            .map(|e| e.seq)
            .collect();
        let truly_lost = reported
            .iter()
            .filter(|e| !arrived.contains(&e.seq))
            .count();
        assert_eq!(lost.len(), truly_lost);
        assert!(lost.iter().all(|s| !arrived.contains(s)));
        assert!(lost.len() > 50, "only {} losses", lost.len());
        assert!(
            fb.stats.reports_received < fb.stats.reports_sent,
            "no report was lost"
        );
        assert_eq!(fb.stats.lost, lost.len() as u64);
    }

    /// On an idle link a frame sent in one burst arrives one propagation delay after its
    /// packets' serialisation ends: 8 packets of 1500 B and one of 860 B (12 500 B of
    /// payload, 40 B of headers each) at 10 Mbit/s take 10.288 ms, plus 10 ms.
    #[test]
    fn frame_delay_on_an_idle_link_is_serialisation_plus_propagation() {
        for (pacing, expect) in [
            // Burst: 12 860 B at 10 Mbit/s, then 10 ms.
            (0.0, 10_288_000 + 10 * MS),
            // Paced at 2.5 Mbit/s: 8 gaps of 1500 B at 2.5 Mbit/s (4.8 ms each), then the
            // last packet's 0.688 ms at 10 Mbit/s, then 10 ms.
            (2.5, 8 * 4_800_000 + 688_000 + 10 * MS),
        ] {
            let cfg = one_link(
                10_000_000,
                "",
                &format!(
                    r#"{{"rate_bps": 1000000, "source": {{"kind": "video", "fps": 10,
                    "noise": 0, "key_ratio": 1, "pacing": {pacing}}},
                    "feedback": {{"kind": "rfc8888"}}}}"#
                ),
            );
            let mut sim = Simulation::new(cfg).unwrap();
            sim.run();
            let now = sim.now();
            let log = media(&mut sim).frames.as_ref().unwrap();
            assert_eq!(log.frames.len(), 40);
            for f in &log.frames {
                assert_eq!((f.bytes, f.packets), (12_500, 9));
                assert_eq!(f.delay(), Some(expect), "pacing {pacing}");
            }
            assert_eq!(log.late(now), 0);
        }
    }

    /// A fork taken mid-run (frames half sent, reports on the way) ends as the original.
    #[test]
    fn a_forked_media_flow_ends_as_the_original() {
        let mut a = Simulation::new(video_through_dualpi2(12_000_000)).unwrap();
        a.run_until(2 * SEC + 7 * MS);
        let mut b = a.fork();
        a.run();
        b.run();
        assert_eq!(a.summary_json(), b.summary_json());
        assert!(a.summary_json().contains("\"frames\""));
    }

    /// A window-based congestion control: at most `window` bytes unreported in flight;
    /// it sets the encoder's target to what its window carries per RTT-ish interval.
    #[derive(Clone, Debug)]
    struct Window {
        window: u64,
        in_flight: u64,
        sizes: std::collections::VecDeque<(u64, u32)>,
        max_seen: Arc<Mutex<u64>>,
        sent_at: Arc<Mutex<Vec<Time>>>,
        target: Option<u64>,
    }

    impl DatagramCc for Window {
        fn name(&self) -> &'static str {
            "window"
        }
        fn on_sent(&mut self, now: Time, seq: u64, bytes: u32) {
            self.sent_at.lock().unwrap().push(now);
            self.in_flight += bytes as u64;
            self.sizes.push_back((seq, bytes));
            let mut m = self.max_seen.lock().unwrap();
            *m = (*m).max(self.in_flight);
        }
        fn on_feedback(&mut self, _now: Time, r: &Report) {
            let last = r.entries.last().unwrap().seq;
            while self.sizes.front().is_some_and(|&(s, _)| s <= last) {
                self.in_flight -= self.sizes.pop_front().unwrap().1 as u64;
            }
            self.target = Some(2_000_000);
        }
        fn target_rate_bps(&self) -> Option<u64> {
            self.target
        }
        fn can_send(&self, _now: Time, bytes: u32) -> bool {
            self.in_flight + bytes as u64 <= self.window
        }
        fn box_clone(&self) -> Box<dyn DatagramCc> {
            Box::new(self.clone())
        }
    }

    /// The seam works: the encoder takes the congestion control's target (6 → 2 Mbit/s
    /// after the first report); a 10 kB window holds the first 25 kB frame back after six
    /// 1500-byte packets, and the first report (sent at 20 ms, back at 30 ms) releases the
    /// next ones at once, not at the next frame (33.3 ms): the sender's send event moves
    /// earlier. Frames keep flowing to the end.
    #[test]
    fn a_congestion_control_sets_the_target_and_holds_packets_back() {
        let cfg = one_link(
            100_000_000,
            "",
            r#"{"rate_bps": 6000000, "source": {"kind": "video", "noise": 0, "key_ratio": 1},
                "feedback": {"kind": "rfc8888"}}"#,
        );
        let mut sim = Simulation::new(cfg).unwrap();
        let max_seen = Arc::new(Mutex::new(0));
        let sent_at = Arc::new(Mutex::new(Vec::new()));
        media(&mut sim).cc = Box::new(Window {
            window: 10_000,
            in_flight: 0,
            sizes: Default::default(),
            max_seen: max_seen.clone(),
            sent_at: sent_at.clone(),
            target: None,
        });
        sim.run();
        let log = media(&mut sim).frames.as_ref().unwrap();
        assert_eq!(log.frames[0].target_bps, 6_000_000);
        assert_eq!(log.frames[0].bytes, 25_000);
        let last = log.frames[log.frames.len() - 2];
        assert_eq!((last.target_bps, last.bytes), (2_000_000, 8_333));
        assert!(*max_seen.lock().unwrap() <= 10_000);
        let sent = sent_at.lock().unwrap();
        assert!(
            sent[5] < 5 * MS && sent[6] > 30 * MS && sent[6] < 31 * MS,
            "{sent:?}"
        );
        // 4 s of frames at 30/s; all but those of the last RTT or so complete.
        assert_eq!(log.frames.len(), 121);
        assert!(log.complete >= 118, "{} complete", log.complete);
    }

    /// SCReAM v2 over a link whose capacity falls from 20 to 0.3 Mbit/s at 2 s (below
    /// SCReAM's 1 Mbit/s min rate; a deep FIFO): the RTP queue grows past 200 ms, the sender
    /// clears it (the frames in it never leave) and asks for key frames.
    #[test]
    fn scream_clears_a_stale_rtp_queue_and_asks_for_a_key_frame() {
        let cfg = one_link(
            20_000_000,
            r#", "qdisc_ab": {"kind": "fifo", "limit_pkts": 10000},
            "schedule_ab": {"kind": "steps", "steps": [{"at_ns": 0, "rate_bps": 20000000},
                {"at_ns": 2000000000, "rate_bps": 300000}]}"#,
            r#"{"rate_bps": 2000000, "ecn": "ect1", "source": {"kind": "video", "noise": 0},
                "feedback": {"kind": "rfc8888"}, "cc": {"kind": "scream"}}"#,
        );
        let mut sim = Simulation::new(cfg).unwrap();
        sim.run();
        let m = media(&mut sim);
        let log = m.frames.as_ref().unwrap();
        let keys = log.frames.iter().filter(|f| f.key).count();
        let unsent = log
            .frames
            .iter()
            .filter(|f| f.first_sent == super::super::frames::NEVER);
        assert!(m.discarded_frames > 0, "no frame discarded");
        assert!(unsent.count() as u64 >= m.discarded_frames / 2);
        assert!(keys > 1, "only {keys} key frames");
    }

    /// No congestion control, video at 1.5 times the link: the run ends, the 100-packet
    /// FIFO overflows, most frames are late or never complete.
    #[test]
    fn an_uncontrolled_video_flow_overloads_the_link_and_its_frames_are_late() {
        let cfg = one_link(
            4_000_000,
            r#", "qdisc_ab": {"kind": "fifo", "limit_pkts": 100}"#,
            r#"{"rate_bps": 6000000, "source": {"kind": "video"},
                "feedback": {"kind": "rfc8888"}}"#,
        );
        let mut sim = Simulation::new(cfg).unwrap();
        sim.run();
        assert_eq!(sim.now(), 5 * SEC);
        let now = sim.now();
        let log = media(&mut sim).frames.as_ref().unwrap();
        let (late, n) = (log.late(now), log.frames.len() as u64);
        assert!(late > n / 2 && log.complete < n / 2, "{late} late of {n}");
        assert!(sim.flows[0].drops > 0);
    }
}
