//! Sender-level tests of [`super`]: a sender and a receiver over a toy path, exercising
//! loss recovery, RACK-TLP, ECN and pacing end to end. The parts have their own tests
//! (`scoreboard.rs`, `prr.rs`, `rate.rs`, `rack.rs`).

use super::*;
use crate::tcp::receiver::TcpReceiver;
use crate::time::{MS, SEC};

/// Sender and receiver joined by a lossless-unless-told, infinitely fast path with a
/// fixed one-way delay; `drops` lists (segment index, how many of its transmissions are
/// lost). Returns the sender and the times of its retransmissions. Loss recovery is
/// RFC 6675 (with SACK) or RFC 6582 (without) and the RTO RFC 6298's: RACK and Linux's
/// RTO off, as their own tests below compare against these.
fn transfer(sack: bool, segments: u64, drops: &[(u64, usize)]) -> (TcpSender, Vec<Time>) {
    let cfg = TcpConfig {
        sack,
        rack: false,
        linux_rto: false,
        init_cwnd: 20,
        ..TcpConfig::default()
    };
    let (snd, rtx, _) = run(cfg, segments, drops);
    (snd, rtx)
}

/// As [`transfer`] with any configuration; also returns every data transmission time.
fn run(cfg: TcpConfig, segments: u64, drops: &[(u64, usize)]) -> (TcpSender, Vec<Time>, Vec<Time>) {
    let (snd, rtx, sent) = run_capture(cfg, segments, drops);
    // A segment is stamped with the time it is sent.
    (snd, rtx, sent.iter().map(|p| p.created).collect())
}

/// As [`run`], returning every data segment sent (in order) instead of their times.
fn run_capture(
    cfg: TcpConfig,
    segments: u64,
    drops: &[(u64, usize)],
) -> (TcpSender, Vec<Time>, Vec<Packet>) {
    let (snd, rtx, sent, _) = run_states(cfg, segments, drops);
    (snd, rtx, sent)
}

/// As [`run_capture`], also returning the sender's state after each ACK it processed.
fn run_states(
    cfg: TcpConfig,
    segments: u64,
    drops: &[(u64, usize)],
) -> (TcpSender, Vec<Time>, Vec<Packet>, Vec<CaState>) {
    let mut states = Vec::new();
    let mss = cfg.mss as u64;
    let mut snd = TcpSender::new(&cfg, Packet::default(), Some(segments * mss), 1);
    let mut rcv = TcpReceiver::new(&cfg, Packet::default());
    let owd = 10 * MS;
    let mut wire: Vec<(Time, u64, Packet)> = Vec::new(); // (arrival, order, packet)
    let mut order = 0;
    let mut dropped = Vec::new();
    let mut rtx_times = Vec::new();
    let mut sent = Vec::new();
    let mut out = Vec::new();
    let mut now = 0;
    // The right edge of the window the receiver offered (RFC 793 SND.UNA + SND.WND):
    // no new data may pass it.
    let mut right_edge = 0;
    snd.start(now, &mut out);
    loop {
        for p in out.drain(..) {
            if p.dir == Dir::Reverse {
                let shift = if p.tcp.flags & flags::SYN != 0 {
                    0
                } else {
                    rcv.win.wscale
                };
                right_edge = right_edge.max(p.tcp.ack + ((p.tcp.wnd as u64) << shift));
            }
            if p.dir == Dir::Forward && p.tcp.len > 0 {
                assert!(
                    p.tcp.seq + p.tcp.len as u64 <= right_edge,
                    "segment {} past the offered window's edge {right_edge}",
                    p.tcp.seq
                );
                sent.push(p);
                if snd.stats.retransmits as usize > rtx_times.len() {
                    rtx_times.push(now);
                }
                let lost_before = dropped.iter().filter(|&&s| s == p.tcp.seq).count();
                if drops
                    .iter()
                    .any(|&(i, n)| i == p.tcp.seq / mss && lost_before < n)
                {
                    dropped.push(p.tcp.seq);
                    continue;
                }
            }
            order += 1;
            wire.push((now + owd, order, p));
        }
        if snd.is_finished() {
            return (snd, rtx_times, sent, states);
        }
        let timers = [
            snd.rto_timer.deadline,
            snd.pace_timer.deadline,
            snd.rack_tlp.timer.deadline,
            rcv.delack_timer.deadline,
        ];
        let next_timer = timers.iter().flatten().min().copied();
        let next_pkt = wire.iter().map(|w| (w.0, w.1)).min();
        match (next_pkt, next_timer) {
            (Some((t, o)), nt) if nt.is_none_or(|nt| t <= nt) => {
                now = t;
                let i = wire.iter().position(|w| (w.0, w.1) == (t, o)).unwrap();
                let (_, _, p) = wire.remove(i);
                match p.dir {
                    Dir::Forward => rcv.on_segment(&p, now, &mut out),
                    Dir::Reverse => {
                        snd.on_ack(&p, now, &mut out);
                        states.push(snd.state);
                    }
                }
            }
            (_, Some(t)) => {
                now = t;
                snd.on_timer(now, &mut out);
                rcv.on_timer(now, &mut out);
            }
            _ => panic!("deadlock: nothing in flight and no timer"),
        }
        assert!(now < 60_000 * MS, "transfer did not finish");
    }
}

#[test]
fn sack_repairs_three_losses_in_one_window_in_one_recovery() {
    let (snd, rtx) = transfer(true, 60, &[(4, 1), (5, 1), (7, 1)]);
    assert_eq!(snd.stats.timeouts, 0);
    assert_eq!(snd.stats.fast_recoveries, 1);
    assert_eq!(
        snd.stats.retransmits, 3,
        "only the lost segments are resent"
    );
    // All three holes are known from the SACK scoreboard and resent within one RTT.
    assert!(rtx[2] - rtx[0] < 20 * MS, "{rtx:?}");
    assert_eq!(snd.stats.bytes_acked, 60 * 1448);
}

#[test]
fn newreno_without_sack_repairs_one_hole_per_round_trip() {
    let (snd, rtx) = transfer(false, 60, &[(4, 1), (5, 1), (7, 1)]);
    assert_eq!(snd.stats.timeouts, 0);
    assert_eq!(
        snd.stats.fast_recoveries, 1,
        "RFC 6582: one recovery for the window"
    );
    assert_eq!(snd.stats.retransmits, 3);
    // RFC 6582 §3.2 step 4: each partial ACK reveals the next hole one RTT (20 ms) later.
    assert_eq!(rtx[1] - rtx[0], 20 * MS);
    assert_eq!(rtx[2] - rtx[1], 20 * MS);
    assert_eq!(snd.stats.bytes_acked, 60 * 1448);
}

#[test]
fn pacing_spaces_segments_after_the_first_ten() {
    let cfg = TcpConfig {
        pacing: true,
        ..TcpConfig::default()
    };
    let (snd, _, sends) = run(cfg, 30, &[]);
    assert_eq!(snd.stats.retransmits, 0);
    // Linux tcp_update_skb_after_send: the initial window leaves as a burst ...
    assert!(sends[..10].iter().all(|&t| t == sends[0]));
    // ... then, in slow start, at 200 % of cwnd/SRTT: the first ACK (at 40 ms, SRTT
    // 20 ms) makes cwnd 11, so 2·11·1448 bytes per 20 ms. Linux times the headerless skb:
    // a 1448-byte segment (1500 on the wire) holds the next one back 1448 / rate, not
    // the 1500 / rate its wire size would take.
    let rate = 2 * 11 * 1448 * SEC / (20 * MS);
    assert_eq!(
        sends[11] - sends[10],
        1448 * SEC / rate,
        "{:?}",
        &sends[..12]
    );
    let later: Vec<_> = sends[10..20].windows(2).map(|w| w[1] - w[0]).collect();
    assert!(later.iter().all(|&g| g > 0), "paced, not bursty: {later:?}");
}

#[test]
fn prague_negotiates_accurate_ecn_and_sends_ect1() {
    let cfg = TcpConfig {
        cca: crate::tcp::config::CcaKind::Prague.into(),
        ..TcpConfig::default()
    };
    let mut snd = TcpSender::new(&cfg, Packet::default(), None, 1);
    let mut out = Vec::new();
    snd.start(0, &mut out);
    let syn = out[0].tcp.flags;
    assert_eq!(
        syn & (flags::AE | flags::ECE | flags::CWR),
        flags::AE | flags::ECE | flags::CWR
    );
    let mut rcv = TcpReceiver::new(&cfg, Packet::default());
    let mut back = Vec::new();
    rcv.on_segment(&out[0], 0, &mut back);
    out.clear();
    snd.on_ack(&back[0], MS, &mut out);
    assert!(snd.ecn.accecn && snd.ecn.ok);
    assert!(!out.is_empty() && out.iter().all(|p| p.ecn == Ecn::Ect1));
    // A classic-ECN flow sends ECT(0).
    let mut classic = TcpSender::new(
        &TcpConfig {
            ecn: true,
            ..TcpConfig::default()
        },
        Packet::default(),
        None,
        1,
    );
    out.clear();
    classic.start(0, &mut out);
    back.clear();
    TcpReceiver::new(&TcpConfig::default(), Packet::default()).on_segment(&out[0], 0, &mut back);
    out.clear();
    classic.on_ack(&back[0], MS, &mut out);
    assert!(classic.ecn.ok && !classic.ecn.accecn);
    assert!(out.iter().all(|p| p.ecn == Ecn::Ect0));
}

/// A hole that stays (its segment lost eight times): with Linux's autotuned window
/// the sender stops at the edge the receiver offered when the hole opened, where a
/// fixed 64 MiB window let it run on. That edge is sized from what the reader took
/// before the hole, at most 300 segments: `tcp_rcv_space_adjust`'s rcvwin is at most
/// 2 x copied + 16 segments, tripled by its growth term, in buffer units of 1492 bytes
/// per segment (half of rcvmem).
#[test]
fn a_lasting_hole_stops_the_sender_at_the_offered_window() {
    let run_ahead = |rwnd_bytes: Option<u64>| {
        let cfg = TcpConfig {
            rwnd_bytes,
            ..TcpConfig::default()
        };
        let (snd, _, sent) = run_capture(cfg, 40_000, &[(300, 8)]);
        assert_eq!(snd.stats.bytes_acked, 40_000 * 1448);
        // Segments sent while 300 was still missing (before its last transmission).
        let last = sent.iter().rposition(|p| p.tcp.seq == 300 * 1448).unwrap();
        let beyond = sent[..last]
            .iter()
            .map(|p| p.tcp.seq + p.tcp.len as u64)
            .max()
            .unwrap();
        beyond - 301 * 1448
    };
    let auto = run_ahead(None);
    let fixed = run_ahead(Some(64 << 20));
    assert!(
        auto <= 3 * (2 * 300 + 16) * 1492,
        "{auto} bytes past the hole"
    );
    assert!(fixed > 2 * auto, "fixed 64 MiB: {fixed}, autotuned: {auto}");
}

#[test]
fn retransmissions_keep_ect_only_when_the_algorithm_needs_ecn() {
    // Linux tcp_ecn_send: a classic-ECN flow resends Not-ECT (RFC 3168 §6.1.5); Prague
    // (tcp_ca_needs_ecn) resends ECT(1), so that an L4S retransmission is not steered
    // into a classic queue behind the data sent after it.
    let resent = |cfg: TcpConfig| -> Vec<Ecn> {
        let (snd, _, sent) = run_capture(cfg, 30, &[(5, 1)]);
        assert_eq!(snd.stats.retransmits, 1);
        let seq = 5 * 1448;
        sent.iter()
            .filter(|p| p.tcp.seq == seq)
            .map(|p| p.ecn)
            .collect()
    };
    // (RFC 6675 recovery: in this zero-serialisation toy one retransmission each.)
    let prague = TcpConfig {
        cca: crate::tcp::config::CcaKind::Prague.into(),
        rack: false,
        ..TcpConfig::default()
    };
    assert_eq!(resent(prague), vec![Ecn::Ect1, Ecn::Ect1]);
    let classic = TcpConfig {
        ecn: true,
        rack: false,
        ..TcpConfig::default()
    };
    assert_eq!(resent(classic), vec![Ecn::Ect0, Ecn::NotEct]);
}

#[test]
fn a_lost_retransmission_is_repaired_by_the_timer() {
    // Segment 3 and its fast retransmission are lost: only the RTO can repair it
    // (RFC 6298 §5.4), no earlier than min RTO after the fast retransmission.
    let (snd, rtx) = transfer(true, 40, &[(3, 2)]);
    assert_eq!(snd.stats.timeouts, 1);
    assert_eq!(snd.stats.fast_recoveries, 1);
    assert_eq!(rtx.len(), 2);
    assert!(rtx[1] - rtx[0] >= 200 * MS, "{rtx:?}");
    assert_eq!(snd.stats.bytes_acked, 40 * 1448);
}

fn rack(on: bool) -> TcpConfig {
    TcpConfig {
        rack: on,
        init_cwnd: 20,
        ..TcpConfig::default()
    }
}

#[test]
fn rack_finds_a_lone_loss_a_quarter_rtt_after_a_later_segment_is_sacked() {
    // Three segments, the middle one lost: one duplicate ACK, too few for RFC 6675.
    // RACK (RFC 8985 §6.2) marks it lost min_rtt / 4 = 5 ms after the SACK of segment 3
    // arrives (one RTT, 20 ms, after they left), not at the RTO.
    let (snd, rtx, sends) = run(rack(true), 3, &[(1, 1)]);
    assert_eq!(snd.stats.timeouts, 0);
    assert_eq!(snd.stats.fast_recoveries, 1);
    assert_eq!(rtx, vec![sends[0] + 20 * MS + 5 * MS]);
    let (old, rtx_old, _) = run(rack(false), 3, &[(1, 1)]);
    assert_eq!(old.stats.timeouts, 1);
    assert!(rtx_old[0] >= sends[0] + 200 * MS, "{rtx_old:?}");
}

#[test]
fn tail_loss_probe_repairs_a_lost_tail_without_the_rto() {
    // The last three of 20 segments are lost. TLP (RFC 8985 §7) resends the last one
    // 2 SRTT + 2 ms after the last ACK; its SACK lets RACK mark the other two lost.
    let (snd, rtx, _) = run(rack(true), 20, &[(17, 1), (18, 1), (19, 1)]);
    assert_eq!(snd.stats.timeouts, 0);
    assert_eq!(snd.stats.loss_probes, 1);
    assert_eq!(snd.stats.retransmits, 3);
    assert_eq!(snd.stats.fast_recoveries, 1);
    assert_eq!(snd.stats.bytes_acked, 20 * 1448);
    let (old, rtx_old, _) = run(rack(false), 20, &[(17, 1), (18, 1), (19, 1)]);
    assert_eq!(old.stats.timeouts, 1);
    assert_eq!(old.stats.loss_probes, 0);
    assert!(rtx[0] < rtx_old[0], "probe {rtx:?} vs RTO {rtx_old:?}");
}

#[test]
fn rack_finds_a_lost_retransmission_without_the_rto() {
    // Segment 3 and its fast retransmission are lost (the RTO repairs it without RACK,
    // see above); RACK sees segments sent after the retransmission SACKed and marks it
    // lost again.
    let (snd, rtx, _) = run(rack(true), 40, &[(3, 2)]);
    assert_eq!(snd.stats.timeouts, 0);
    assert_eq!(rtx.len(), 2);
    assert!(rtx[1] - rtx[0] < 200 * MS, "{rtx:?}");
    assert_eq!(snd.stats.bytes_acked, 40 * 1448);
}

/// A classic-ECN NewReno flow with 20 segments out gets a CE mark on the first; the
/// receiver echoes ECE on every ACK until the segment carrying CWR reaches it. Returns
/// (cwnd after the echo, cwnd at the end of the window's ACKs, new segments sent during
/// them, cwnd when CWR ends, window reductions).
fn ecn_echo(prr_in_cwr: bool) -> (u32, u32, u32, u32, u64) {
    let cfg = TcpConfig {
        ecn: true,
        init_cwnd: 20,
        prr_in_cwr,
        quickack: false,
        ..TcpConfig::default()
    };
    let mut snd = TcpSender::new(&cfg, Packet::default(), None, 1);
    let mut rcv = TcpReceiver::new(&cfg, Packet::default());
    let (mut out, mut back) = (Vec::new(), Vec::new());
    snd.start(0, &mut out);
    rcv.on_segment(&out[0], 0, &mut back);
    out.clear();
    snd.on_ack(&back[0], 20 * MS, &mut out);
    back.clear();
    let mut window: Vec<Packet> = std::mem::take(&mut out);
    assert_eq!(window.len(), 20);
    window[0].ecn = Ecn::Ce;
    for p in &window {
        rcv.on_segment(p, 30 * MS, &mut back);
    }
    let mut after_echo = None;
    for (k, a) in back.iter().enumerate() {
        assert!(a.tcp.flags & flags::ECE != 0, "ECE until CWR is seen");
        snd.on_ack(a, 40 * MS + k as Time, &mut out);
        after_echo.get_or_insert(snd.w.cwnd);
    }
    let (window_end, sent_in_window) = (snd.w.cwnd, out.len() as u32);
    // Every ACK of the window echoed ECE, the last one acknowledging exactly what was
    // outstanding at the echo: CWR holds until the segment that carried CWR is through.
    assert_eq!(snd.state, CaState::Cwr);
    assert!(out[0].tcp.flags & flags::CWR != 0);
    back.clear();
    for p in &out {
        rcv.on_segment(p, 60 * MS, &mut back);
    }
    out.clear();
    snd.on_ack(&back[0], 80 * MS, &mut out);
    assert_eq!(
        snd.state,
        CaState::Open,
        "CWR ends once the CWR segment is acknowledged"
    );
    (
        after_echo.unwrap(),
        window_end,
        sent_in_window,
        snd.w.cwnd,
        snd.stats.ecn_reductions,
    )
}

#[test]
fn one_reduction_per_echo_episode_as_linux_holds_cwr() {
    // Linux tcp_fastretrans_alert leaves CWR only when snd_una passes high_seq; ending
    // it at high_seq would take the last echo of the window for a new congestion event
    // and reduce twice (0.5 x 0.5) for one mark.
    for prr in [false, true] {
        let (.., reductions) = ecn_echo(prr);
        assert_eq!(reductions, 1, "prr_in_cwr = {prr}");
    }
}

#[test]
fn prr_in_cwr_reduces_gradually_as_linux_tcp_cwnd_reduction() {
    // RFC 3168 §6.1.2 as written: cwnd = ssthresh = 10 at the echo; the rest of the
    // window's ACKs send nothing until the flight falls below 10.
    let (echo, end, _, cwr_end, _) = ecn_echo(false);
    assert_eq!((echo, end, cwr_end), (10, 10, 10));
    // Linux (tcp_enter_cwr, then PRR per ACK, RFC 6937): the first ACK (2 segments
    // delivered) leaves cwnd = flight 18 + ceil(2 * 10 / 20) = 19. ACK k (2 segments
    // each) then finds a flight of 19 - k and sends one segment (ceil(2k * 10 / 20) -
    // (k - 1)) while that is above ssthresh: k = 1..8; the 9th ACK meets the flight at
    // 10 and sends nothing; the 10th acknowledges exactly high_seq, which keeps CWR, and
    // PRR's reduction bound (flight 8 < ssthresh) sends 2 more; CWR ends at ssthresh.
    let (echo, end, sent, cwr_end, _) = ecn_echo(true);
    assert_eq!(echo, 19);
    assert_eq!((end, cwr_end), (10, 10));
    assert_eq!(sent, 10);
}

#[test]
fn a_loss_marked_when_recovery_ends_starts_the_next_at_once_as_linux() {
    // Segment 4 and its first retransmission are lost, and segment 30, sent after
    // recovery began (above high_seq); RACK marks 30 lost before the ACK that ends the
    // first recovery arrives. Linux tcp_fastretrans_alert ends Recovery on that ACK (step
    // D) and, with a loss still marked, enters the next one on the same ACK (step E,
    // `default`: tcp_time_to_recover): a second reduction, and no Open state between
    // (which BBR would take for a new recovery's packet conservation).
    let (snd, _, _, states) = run_states(rack(true), 60, &[(4, 2), (30, 1)]);
    assert_eq!(snd.stats.fast_recoveries, 2);
    assert_eq!(snd.stats.timeouts, 0);
    let first = states.iter().position(|&s| s == CaState::Recovery).unwrap();
    let open = states[first..]
        .iter()
        .position(|&s| s == CaState::Open)
        .unwrap();
    assert!(
        states[first + open..]
            .iter()
            .all(|&s| s != CaState::Recovery),
        "one unbroken stretch of recovery: {states:?}"
    );
}
