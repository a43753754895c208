//! The engine's side of a Wi-Fi BSS (`net::wifi::link`): one event per channel access.
//!
//! A packet offered to a station's link (either direction) wakes its contender
//! (`wifi_wake`); the BSS keeps one access event queued, at the slot in which the first
//! back-off counter expires (`wifi_schedule`; a wake that makes it earlier queues a new one
//! and the old one is ignored when it comes). At the access (`on_wifi`), every contender
//! whose counter expires takes its frames: the retry of its last PPDU, or a new A-MPDU
//! from its queue (the AP's from the station its airtime scheduler picks); then the
//! outcome (collision, frame errors, success), the deliveries onto the links' wires, and
//! the next access.

use crate::engine::queue::EvKind;
use crate::engine::Simulation;
use crate::net::wifi::ampdu::Builder;
use crate::net::wifi::link::WifiBss;
use crate::net::wifi::phy::SIFS_NS;
use crate::qdisc::QueueDisc;
use crate::time::Time;

impl Simulation {
    /// Contender `k` of BSS `b` has frames now.
    pub(super) fn wifi_wake(&mut self, b: u32, k: u32) {
        let now = self.now;
        self.wifi[b as usize].medium.activate(k as usize, now);
        self.wifi_schedule(b);
    }

    /// The AP's driver takes what it may (room, AQL) from the queue of downlink channel `c`.
    pub(super) fn wifi_driver_pull(&mut self, b: u32, c: usize) {
        let bss = &self.wifi[b as usize];
        if let Some(s) = bss.down.iter().position(|&d| d as usize == c) {
            self.wifi_driver_fill(b, s);
        }
    }

    /// The AP's driver takes frames for station `s` while it has room and AQL allows
    /// (mac80211's `ieee80211_tx_dequeue` under `ieee80211_txq_airtime_check`).
    fn wifi_driver_fill(&mut self, b: u32, s: usize) {
        let now = self.now;
        let bss = &mut self.wifi[b as usize];
        let c = bss.down[s] as usize;
        while bss.driver_may_take(s) {
            let Some((p, _, _)) = self.channels[c].take(now, &mut self.drops) else {
                break;
            };
            bss.driver_took(s, p);
        }
    }

    /// Queue the BSS's next access if it is earlier than the one queued.
    fn wifi_schedule(&mut self, b: u32) {
        let bss = &mut self.wifi[b as usize];
        if let Some(k) = bss.medium.next_slot() {
            let at = bss.medium.slot_time(k).max(self.now);
            if at < bss.next_at {
                bss.next_at = at;
                self.queue.push(at, EvKind::Wifi(b));
            }
        }
    }

    /// The access event of BSS `b`.
    pub(super) fn on_wifi(&mut self, b: u32) {
        let now = self.now;
        let bss = &mut self.wifi[b as usize];
        if bss.next_at != now {
            return; // superseded by an earlier access
        }
        bss.next_at = Time::MAX;
        let Some(k) = bss.medium.next_slot() else {
            return;
        };
        // Which contenders transmit, each with its frames (an empty queue, e.g. emptied by
        // CoDel at dequeue, sends nothing). Bit i of `tx`: contender i transmits.
        // `longest`: the longest PPDU; `busy`: the longest first frame (an RTS where one
        // protects the PPDU), what a collision keeps the medium busy for; `lead`: the
        // RTS/CTS before the PPDU of a lone transmitter.
        let mut tx = 0u128;
        let (mut longest, mut busy, mut lead) = (0, 0, 0);
        let n = bss.medium.contenders.len();
        for i in 0..n {
            if !bss.medium.transmits(k, i) {
                continue;
            }
            let (ppdu, rts) = fill(bss, i, &mut self.channels, now, &mut self.drops);
            if ppdu > 0 {
                tx |= 1 << i;
                longest = longest.max(ppdu);
                busy = busy.max(if rts { bss.cfg.rts_ns() } else { ppdu });
                lead = if rts { bss.cfg.rts_cts_ns() } else { 0 };
            } else {
                bss.medium.contenders[i].active = false;
            }
        }
        self.account_drops();
        if tx == 0 {
            self.wifi_schedule(b);
            return;
        }
        let bss = &mut self.wifi[b as usize];
        bss.medium.freeze(k);
        bss.stats.accesses += 1;
        let retry_limit = bss.cfg.retry_limit;
        let eifs = bss.cfg.eifs_extra_ns();
        if tx.count_ones() > 1 {
            bss.stats.collisions += 1;
            for i in (0..n).filter(|i| tx & (1 << i) != 0) {
                self.wifi_failed(b, i, retry_limit);
            }
            self.wifi[b as usize].medium.resume(now + busy, eifs);
        } else {
            // Alone: the PPDU follows its RTS/CTS, if any (10.3.2.9).
            let now = now + lead;
            let i = tx.trailing_zeros() as usize;
            let s = bss.frames_station[i];
            let fer = bss.cfg.stations[s].fer;
            let got = bss.frames[i]
                .iter()
                .position(|_| bss.rng.bernoulli(fer))
                .unwrap_or(bss.frames[i].len());
            if got == 0 {
                bss.stats.errored += 1;
                self.wifi_failed(b, i, retry_limit);
                self.wifi[b as usize].medium.resume(now + longest, eifs);
            } else {
                let end = now + longest + SIFS_NS + bss.cfg.response_ns();
                bss.medium.contenders[i].backoff.success(&mut bss.rng);
                self.wifi_deliver(b, i, got, now + longest);
                self.wifi[b as usize].medium.resume(end, 0);
            }
        }
        // The AP's frames got their tx status: the driver takes again, every station (the
        // interface's pending airtime fell too).
        if tx & 1 != 0 && self.wifi[b as usize].cfg.driver_queue > 0 {
            for s in 0..self.wifi[b as usize].down.len() {
                self.wifi_driver_fill(b, s);
            }
            self.account_drops();
        }
        let bss = &mut self.wifi[b as usize];
        for i in (0..n).filter(|i| tx & (1 << i) != 0) {
            if !has_frames(bss, i, &self.channels) {
                bss.medium.contenders[i].active = false;
            }
        }
        self.wifi_schedule(b);
    }

    /// Contender `i`'s PPDU got no answer: its CW doubles; at the retry limit its frames
    /// are dropped (counted as losses on the link).
    fn wifi_failed(&mut self, b: u32, i: usize, retry_limit: u32) {
        let now = self.now;
        let bss = &mut self.wifi[b as usize];
        if !bss.medium.contenders[i]
            .backoff
            .failure(retry_limit, &mut bss.rng)
        {
            return;
        }
        let s = bss.frames_station[i];
        let c = channel(bss, i, s);
        bss.stats.dropped += bss.frames[i].len() as u64;
        if i == 0 && bss.cfg.driver_queue > 0 {
            for k in 0..bss.frames[0].len() {
                let size = bss.frames[0][k].size;
                bss.driver_done(s, size);
            }
        }
        for p in bss.frames[i].drain(..) {
            self.channels[c].stats.lost += 1;
            self.counters.dropped_loss += 1;
            let f = &mut self.flows[p.flow as usize];
            f.drops += 1;
            f.last_drop = Some(now);
        }
    }

    /// The first `got` frames of contender `i` were received by the end of the PPDU at
    /// `end`: onto the link's wire, in order, arriving a propagation delay later.
    fn wifi_deliver(&mut self, b: u32, i: usize, got: usize, end: Time) {
        let bss = &mut self.wifi[b as usize];
        let s = bss.frames_station[i];
        if i == 0 && bss.cfg.driver_queue > 0 {
            for k in 0..got {
                let size = bss.frames[0][k].size;
                bss.driver_done(s, size);
            }
        }
        let c = channel(bss, i, s);
        let ch = &mut self.channels[c];
        let at = end + ch.delay;
        for p in bss.frames[i].drain(..got) {
            let seq = self.queue.next_seq();
            if ch.wire.is_empty() {
                self.queue.push_with_seq(at, seq, EvKind::Arrive(c as u32));
            }
            ch.wire.push_back((at, seq, p));
        }
    }
}

/// The channel contender `i` sends on to (or from) station `s`.
fn channel(bss: &WifiBss, i: usize, s: usize) -> usize {
    (if i == 0 { bss.down[s] } else { bss.up[s] }) as usize
}

/// Whether contender `i` has anything to send: unacknowledged frames, a held packet, or a
/// queue with packets (the AP: for any station).
fn has_frames(bss: &WifiBss, i: usize, channels: &[crate::net::link::Channel]) -> bool {
    if !bss.frames[i].is_empty() {
        return true;
    }
    let queued = |s: usize| {
        let h = 2 * s + usize::from(i != 0);
        bss.held[h].is_some()
            || if i == 0 && bss.cfg.driver_queue > 0 {
                !bss.driver[s].is_empty()
            } else {
                channels[channel(bss, i, s)].qdisc.backlog_pkts() > 0
            }
    };
    if i == 0 {
        (0..bss.down.len()).any(queued)
    } else {
        queued(i - 1)
    }
}

/// Contender `i` transmits at `now`: its unacknowledged frames again, or a new A-MPDU
/// from its queue (the AP picks the station by airtime). Returns the PPDU's airtime (0:
/// nothing to send), charged to the station, and whether RTS/CTS precedes it.
fn fill(
    bss: &mut WifiBss,
    i: usize,
    channels: &mut [crate::net::link::Channel],
    now: Time,
    drops: &mut Vec<crate::qdisc::Dropped>,
) -> (Time, bool) {
    let txop = match bss.edca.txop_ns {
        0 => Time::MAX,
        t => t.saturating_sub(bss.cfg.rts_reserve_ns() + SIFS_NS + bss.cfg.response_ns()),
    };
    let driver = i == 0 && bss.cfg.driver_queue > 0;
    if bss.frames[i].is_empty() {
        let s = if i == 0 {
            let (held, down, dq) = (&bss.held, &bss.down, &bss.driver);
            let backlogged = |s: usize| {
                held[2 * s].is_some()
                    || if driver {
                        !dq[s].is_empty()
                    } else {
                        channels[down[s] as usize].qdisc.backlog_pkts() > 0
                    }
            };
            match bss.drr.next(backlogged) {
                Some(s) => s,
                None => return (0, false),
            }
        } else {
            i - 1
        };
        bss.frames_station[i] = s;
        let c = channel(bss, i, s);
        let h = 2 * s + usize::from(i != 0);
        let mut builder = Builder::new(&bss.modes[s], &bss.cfg.ampdu, txop, bss.cfg.aggregation);
        loop {
            let next = bss.held[h].take().or_else(|| {
                if driver {
                    bss.driver[s].pop_front()
                } else {
                    channels[c].take(now, drops).map(|t| t.0)
                }
            });
            let Some(p) = next else { break };
            if !builder.add(p.size) {
                bss.held[h] = Some(p);
                break;
            }
            bss.frames[i].push(p);
        }
    }
    let s = bss.frames_station[i];
    let mut builder = Builder::new(
        &bss.modes[s],
        &bss.cfg.ampdu,
        Time::MAX,
        bss.cfg.aggregation,
    );
    for p in &bss.frames[i] {
        builder.add(p.size);
    }
    let ppdu = builder.agg.ppdu_ns;
    let rts = bss.cfg.rts(builder.agg.psdu_bytes);
    if ppdu > 0 {
        if i == 0 {
            bss.drr.charge(s, ppdu);
            bss.stats.down_airtime_ns[s] += ppdu;
        } else {
            bss.stats.up_airtime_ns[s] += ppdu;
        }
    }
    (ppdu, rts)
}

#[cfg(test)]
mod tests {
    use crate::config::SimConfig;
    use crate::engine::Simulation;

    /// A server h0 behind a 1 Gbit/s link to the AP r0, whose BSS (VHT 80 MHz) serves
    /// stations d0 (MCS `mcs0`) and d1 (MCS 9); one bulk TCP download to each station (or
    /// `upload`: from each station), through per-station fq_codel at the AP.
    fn bss(mcs0: u32, upload: bool, seconds: u64) -> SimConfig {
        let fq = r#"{"kind": "fq_codel", "target_ns": 20000000, "quantum": 300}"#;
        let (src, dst) = if upload {
            (["1", "2"], "0")
        } else {
            (["0", "0"], "")
        };
        let flows: Vec<String> = (0..2)
            .map(|s| {
                let (a, b) = if upload {
                    (src[s].to_string(), dst.to_string())
                } else {
                    ("0".to_string(), (s + 1).to_string())
                };
                format!(r#"{{"kind": "tcp", "src": {a}, "dst": {b}, "tcp": {{}}}}"#)
            })
            .collect();
        let json = format!(
            r#"{{"seed": 3, "duration_ns": {d}, "nodes": [{{"name": "h0"}}, {{"name": "d0"}},
            {{"name": "d1"}}, {{"name": "r0"}}],
            "links": [{{"a": 3, "b": 0, "rate_bps": 1000000000, "delay_ns": 5000000}},
              {{"a": 3, "b": 1, "rate_bps": 29250000, "delay_ns": 0, "qdisc_ab": {fq}, "qdisc_ba": {fq}}},
              {{"a": 3, "b": 2, "rate_bps": 390000000, "delay_ns": 0, "qdisc_ab": {fq}, "qdisc_ba": {fq}}}],
            "flows": [{f}],
            "wifi": [{{"bss": {{"stations": [{{"mcs": {mcs0}}}, {{"mcs": 9}}]}}, "links": [1, 2]}}]}}"#,
            d = seconds * crate::time::SEC,
            f = flows.join(", ")
        );
        SimConfig::from_json(&json).unwrap()
    }

    fn run(cfg: SimConfig) -> Simulation {
        let mut sim = Simulation::new(cfg).unwrap();
        sim.run();
        let c = &sim.counters;
        assert_eq!(
            c.sent,
            c.delivered + c.dropped_qdisc + c.dropped_loss + sim.in_flight(),
            "packets were lost track of"
        );
        sim
    }

    /// Downloads to a slow (MCS 0) and a fast (MCS 9) station: the airtime scheduler gives
    /// each about half the AP's airtime, so the fast station gets many times the slow
    /// one's throughput; the stations' TCP ACKs contend on the uplink and get some
    /// airtime too. The same seed gives the same summary.
    #[test]
    fn downloads_share_airtime_fairly() {
        let sim = run(bss(0, false, 5));
        let w = &sim.wifi[0].stats;
        let (a0, a1) = (w.down_airtime_ns[0] as f64, w.down_airtime_ns[1] as f64);
        assert!((a0 / a1 - 1.0).abs() < 0.15, "{w:?}");
        assert!(w.up_airtime_ns.iter().all(|&a| a > 0), "{w:?}");
        let s = sim.summary();
        let (g0, g1) = (s.flows[0].goodput_bps, s.flows[1].goodput_bps);
        assert!(g0 > 5e6 && g1 > 5.0 * g0, "{g0} {g1}");
        assert!(w.accesses > 1000 && w.collisions > 0, "{w:?}");
        let ws = &s.wifi.as_ref().unwrap()[0];
        assert_eq!(ws.access_point, "r0");
        assert_eq!(
            (ws.stations[0].station.as_str(), ws.stations[0].mcs),
            ("d0", 0)
        );
        assert_eq!(ws.accesses, w.accesses);
        assert_eq!(sim.summary_json(), run(bss(0, false, 5)).summary_json());
    }

    /// A driver queue of 1000 frames per station at the AP: without AQL it fills and the
    /// downloads' RTT grows by its airtime (hundreds of ms for the MCS 0 station, which
    /// FQ-CoDel at the TXQ cannot see); with mac80211's AQL (the default) each station's
    /// pending airtime stays under the high limit (plus the one frame that crossed it), and
    /// the slow station's RTT drops. Every packet is accounted for either way. Measured:
    /// pending peaks 12.04 / 12.00 ms with AQL, 430 / 32 ms without; smoothed RTT 60 ms
    /// against 519 (MCS 0) and 51 against 46 (MCS 9); goodput 11.5 against 7.1 and 149
    /// against 134 Mbit/s.
    #[test]
    fn airtime_queue_limits_bound_the_driver_queue() {
        let run_aql = |aql: bool| {
            let mut cfg = bss(0, false, 4);
            cfg.wifi[0].bss.driver_queue = 1000;
            cfg.wifi[0].bss.aql.enabled = aql;
            run(cfg)
        };
        let (on, off) = (run_aql(true), run_aql(false));
        let bss_on = &on.wifi[0];
        for s in 0..2 {
            let frame = bss_on.expected_airtime(s, 1500);
            let m = bss_on.stats.aql_max_pending_ns[s];
            assert!(m > 5_000_000 && m <= 12_000_000 + frame, "{s}: {m}");
        }
        // Off, the slow station's driver queue holds far more airtime.
        assert!(off.wifi[0].stats.aql_max_pending_ns[0] > 100_000_000);
        let (s_on, s_off) = (on.summary(), off.summary());
        for f in 0..2 {
            let (a, b) = (
                s_on.flows[f].srtt_mean_s.unwrap(),
                s_off.flows[f].srtt_mean_s.unwrap(),
            );
            // The slow station's RTT drops by its driver queue's airtime; the fast one's
            // queue moves from the driver to FQ-CoDel, whose 20 ms target then holds it.
            let most = if f == 0 { 0.6 } else { 1.2 };
            assert!(a < most * b, "flow {f}: srtt {a} with AQL, {b} without");
            assert!(s_on.flows[f].goodput_bps > 0.8 * s_off.flows[f].goodput_bps);
        }
        // No driver queue (the default): AQL has nothing to bound, outputs as before.
        let mut cfg = bss(0, false, 2);
        cfg.wifi[0].bss.aql.enabled = false;
        assert_eq!(
            run(cfg).summary_json(),
            run(bss(0, false, 2)).summary_json()
        );
    }

    /// Uploads from both stations: each station contends with its own back-off, the AP
    /// only sends the TCP ACKs; both flows make progress, and collisions happen.
    #[test]
    fn uploads_contend() {
        let sim = run(bss(9, true, 3));
        let s = sim.summary();
        for f in &s.flows {
            assert!(f.goodput_bps > 50e6, "{:?}", f.goodput_bps);
        }
        assert!(sim.wifi[0].stats.collisions > 0);
    }

    /// The MAC decides when a station's packets leave: its links refuse a capture, a
    /// packet trigger and a rate change, each with one sentence; other links still take
    /// them.
    #[test]
    fn station_links_refuse_link_controls() {
        use crate::capture::IpVersion;
        use crate::control::Action;
        let mut sim = Simulation::new(bss(0, false, 1)).unwrap();
        let sink = || Box::new(std::io::sink());
        let e = sim
            .add_capture("r0->d0", "x", sink(), 96, IpVersion::V4, None)
            .unwrap_err();
        assert!(e.0.contains("Wi-Fi station"), "{}", e.0);
        let e = sim.set_packet_trigger("d1->r0", Some(10)).unwrap_err();
        assert!(e.0.contains("Wi-Fi station"), "{}", e.0);
        let rate = |link: &str| Action::SetLinkRate {
            link: link.into(),
            rate_bps: 1_000_000,
        };
        let e = sim.apply_action(&rate("r0->d1")).unwrap_err();
        assert!(e.0.contains("its MCS"), "{}", e.0);
        sim.apply_action(&rate("r0->h0")).unwrap();
        sim.set_packet_trigger("r0->h0", Some(10)).unwrap();
    }

    /// Frame errors on the slow station's link with a retry limit of 2: A-MPDUs lose
    /// MPDUs (sent again) and whole PPDUs (unanswered, EIFS, CW doubled), frames are
    /// dropped at the limit and counted as the link's losses and the flow's drops, and
    /// every packet is still accounted for; TCP recovers and both downloads go on.
    #[test]
    fn frame_errors_retry_and_drop() {
        let mut cfg = bss(4, false, 4);
        cfg.wifi[0].bss.stations[0].fer = 0.3;
        cfg.wifi[0].bss.retry_limit = 2;
        cfg.wifi[0].bss.ampdu.max_mpdus = 2;
        let sim = run(cfg);
        let w = &sim.wifi[0].stats;
        assert!(w.errored > 0 && w.dropped > 0, "{w:?}");
        let s = sim.summary();
        let lost: u64 = s.queues.iter().map(|q| q.lost).sum();
        assert_eq!(lost, w.dropped);
        assert_eq!(sim.counters.dropped_loss, w.dropped);
        assert!(s.flows[0].retransmits > 0);
        for f in &s.flows {
            assert!(f.goodput_bps > 1e6, "{}", f.goodput_bps);
        }
    }
}
