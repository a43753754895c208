//! BBRv3 against synthetic ACK streams (the loss and ECN responses, from a state set up by
//! hand) and on simulated dumbbells (utilisation, the ProbeBW cycle's timing,
//! determinism).

use super::*;
use crate::config::{FlowConfig, FlowKind, LinkConfig, NodeConfig, SimConfig, UdpConfig};
use crate::engine::Simulation;
use crate::flow::Endpoints;
use crate::qdisc::{fifo::FifoConfig, QdiscConfig};
use crate::tcp::cc::{CcaConfig, FlowParams};
use crate::tcp::config::TcpConfig;

const MSS: u32 = 1448;

fn bbr3(cfg: Bbr3Config) -> Box<Bbr3> {
    <Bbr3Config as super::super::CcaParams>::build(&cfg, FlowParams::default())
}

/// A BBRv3 in steady state: ProbeBW in `phase`, max_bw of `bdp` segments per `min_rtt`,
/// cwnd 2 BDP.
fn steady(cfg: Bbr3Config, phase: Phase, bdp: u32, min_rtt: Time) -> (Box<Bbr3>, Window) {
    let mut w = Window::new(10, MSS);
    let mut b = bbr3(cfg);
    b.init(&mut w, 0, Some(min_rtt), Some(min_rtt));
    b.mode = Mode::ProbeBw;
    b.cycle_idx = phase;
    b.full_bw_reached = true;
    b.bw_hi = [bdp as u64 * BW_UNIT * US / min_rtt, 0];
    w.cwnd = 2 * bdp;
    (b, w)
}

/// One packet-timed round of `n` one-segment ACKs over `rtt` at the path's rate, each
/// reporting `lost` segments lost of `tx_in_flight` and, if `ce`, CE-marked (the sender
/// then in CWR, as an ECE puts it).
struct Round {
    n: u32,
    rtt: Time,
    tx_in_flight: u32,
    lost: u32,
    ce: bool,
}

fn round(b: &mut Bbr3, w: &mut Window, now: &mut Time, delivered: &mut u64, r: &Round) {
    let prior = *delivered;
    for k in 0..r.n {
        *now += r.rtt / r.n as u64;
        *delivered += 1;
        let s = AckSample {
            now: *now,
            acked: 1,
            rtt: Some(r.rtt),
            srtt: Some(r.rtt),
            min_rtt: Some(r.rtt),
            in_flight: r.tx_in_flight,
            delivered: *delivered,
            state: if r.ce { CaState::Cwr } else { CaState::Open },
            ece: r.ce,
            cwnd_limited: true,
            ..AckSample::default()
        };
        let rs = RateSample {
            prior_delivered: prior,
            delivered: Some(r.n),
            interval: r.rtt,
            losses: (k == 0 && r.lost > 0) as u32,
            acked_sacked: 1,
            prior_in_flight: r.tx_in_flight,
            tx_in_flight: r.tx_in_flight,
            lost: r.lost,
            delivered_ce: if r.ce { r.n } else { 0 },
            is_ece: r.ce,
            ..RateSample::default()
        };
        b.cong_control(w, &s, &rs);
    }
}

/// A probe (UP, its samples counted) that loses `lost` of 100 segments in flight.
fn probe_with_loss(lost: u32) -> Box<Bbr3> {
    let (mut b, mut w) = steady(Bbr3Config::default(), Phase::Up, 80, 20 * MS);
    b.bw_probe_samples = true;
    b.inflight_hi = 100;
    b.next_rtt_delivered = 1_000_000; // no round ends during the test
    b.loss_round_delivered = 1_000_000;
    let (mut now, mut delivered) = (0, 0);
    let r = Round {
        n: 10,
        rtt: 20 * MS,
        tx_in_flight: 100,
        lost,
        ce: false,
    };
    round(&mut b, &mut w, &mut now, &mut delivered, &r);
    b
}

/// draft-ietf-ccwg-bbr, `bbr_is_inflight_too_high` / `bbr_handle_inflight_too_high`: 3 %
/// lost of what was in flight is above the 2 % threshold: inflight_hi is cut and UP ends;
/// 1 % is below it: UP goes on and inflight_hi stands.
#[test]
fn a_probe_losing_more_than_two_percent_cuts_inflight_hi() {
    let high = probe_with_loss(3);
    assert!(
        high.inflight_hi() < 100,
        "inflight_hi {}",
        high.inflight_hi()
    );
    // bbr_inflight_hi_from_lost_skb: the level where 2 % was crossed, ≈ 99 · (1 + ...);
    // never below 0.7 × target inflight.
    assert!(
        high.inflight_hi() >= 70,
        "inflight_hi {}",
        high.inflight_hi()
    );
    assert_eq!(high.phase(), Phase::Down);
    assert!(high.prev_probe_too_high);

    let low = probe_with_loss(1);
    assert!(
        low.inflight_hi() >= 100,
        "inflight_hi {}",
        low.inflight_hi()
    );
    assert_eq!(low.phase(), Phase::Up);
    assert!(!low.prev_probe_too_high);
}

/// The threshold is the option's: at `loss_thresh = 0.05`, 3 % is tolerated.
#[test]
fn the_loss_threshold_is_configurable() {
    let (mut b, mut w) = steady(
        Bbr3Config {
            loss_thresh: 0.05,
            ..Bbr3Config::default()
        },
        Phase::Up,
        80,
        20 * MS,
    );
    b.bw_probe_samples = true;
    b.inflight_hi = 100;
    b.next_rtt_delivered = 1_000_000;
    let (mut now, mut delivered) = (0, 0);
    let r = Round {
        n: 10,
        rtt: 20 * MS,
        tx_in_flight: 100,
        lost: 3,
        ce: false,
    };
    round(&mut b, &mut w, &mut now, &mut delivered, &r);
    assert_eq!(b.phase(), Phase::Up);
    assert!(b.inflight_hi() >= 100);
}

/// Rounds of all-CE ACKs while cruising (not probing); the inflight_lo after each.
fn cruise_with_ce(min_rtt: Time, rounds: usize) -> (Box<Bbr3>, Vec<u32>, u32) {
    let cfg = Bbr3Config {
        ecn_low: true,
        ..Bbr3Config::default()
    };
    let (mut b, mut w) = steady(cfg, Phase::Cruise, 40, min_rtt);
    b.probe_wait = 100 * SEC; // no wall-clock probe during the test
    let cwnd0 = w.cwnd;
    let (mut now, mut delivered) = (0, 0);
    let mut lo = Vec::new();
    for _ in 0..rounds {
        let r = Round {
            n: 20,
            rtt: min_rtt,
            tx_in_flight: 20,
            lost: 0,
            ce: true,
        };
        round(&mut b, &mut w, &mut now, &mut delivered, &r);
        lo.push(b.inflight_lo());
    }
    (b, lo, cwnd0)
}

/// draft-ietf-ccwg-bbr / `bbr_adapt_lower_bounds` + `bbr_ecn_lower_bounds`: on a 2 ms path
/// (below ecn_max_rtt, 5 ms) each round with CE cuts inflight_lo to
/// inflight_lo × (1 − α·ecn_factor); α (`bbr_update_ecn_alpha`, gain 1/16) stays 1 while
/// every segment is marked, so the cut is 1 − 85/256 per round.
#[test]
fn ce_marks_cut_inflight_lo_by_alpha_times_ecn_factor_on_a_low_rtt_path() {
    let (b, lo, cwnd0) = cruise_with_ce(2 * MS, 4);
    assert!(b.ecn_eligible());
    assert_eq!(b.ecn_alpha(), BBR_UNIT);
    assert_eq!(b.ecn_cut(), BBR_UNIT - BBR_UNIT / 3);
    // The first cut seeds inflight_lo from cwnd (bbr_init_lower_bounds; cwnd has moved
    // by a segment or two since).
    let first = lo.iter().position(|&l| l != u32::MAX).expect("never cut");
    assert!(lo[first].abs_diff(cwnd0 * 171 / 256) <= 2, "{lo:?}");
    for pair in lo[first..].windows(2) {
        assert_eq!(pair[1], pair[0] * 171 / 256, "{lo:?}");
    }
}

/// `bbr_update_ecn_alpha`: ECN is used only if min_rtt ≤ `bbr_ecn_max_rtt_us` (5 ms): on a
/// 20 ms path the same marks are ignored.
#[test]
fn ce_marks_are_ignored_above_ecn_max_rtt() {
    let (b, lo, _) = cruise_with_ce(20 * MS, 4);
    assert!(!b.ecn_eligible());
    assert!(lo.iter().all(|&l| l == u32::MAX), "{lo:?}");
}

/// Without `ecn_low` (Linux's default) BBRv3 asks for no ECN and ignores marks.
#[test]
fn ecn_is_off_by_default() {
    let b = bbr3(Bbr3Config::default());
    assert!(!b.ecn_needs().ecn);
    let (b, lo, _) = {
        let (mut b, mut w) = steady(Bbr3Config::default(), Phase::Cruise, 40, 2 * MS);
        b.probe_wait = 100 * SEC;
        let (mut now, mut delivered) = (0, 0);
        let r = Round {
            n: 20,
            rtt: 2 * MS,
            tx_in_flight: 20,
            lost: 0,
            ce: true,
        };
        round(&mut b, &mut w, &mut now, &mut delivered, &r);
        round(&mut b, &mut w, &mut now, &mut delivered, &r);
        let lo = b.inflight_lo();
        (b, lo, ())
    };
    assert!(!b.ecn_eligible());
    assert_eq!(lo, u32::MAX);
}

#[test]
fn gains_are_v3s() {
    // tcp_bbr.c v3: Startup 2.77 (277/100 + 1/256), Drain 1/2.885, UP 1.25, DOWN 0.91.
    assert_eq!(STARTUP_PACING_GAIN, 710);
    assert_eq!(DRAIN_GAIN, 88);
    assert_eq!(PACING_GAIN, [320, 232, 256, 256]);
    let (mut b, _) = steady(Bbr3Config::default(), Phase::Up, 40, 20 * MS);
    b.update_gains();
    assert_eq!(b.gains(), (320, 576)); // cwnd gain 2 + 1/4 in UP
}

#[test]
fn invalid_options_are_refused_in_one_sentence() {
    let bad = |c: Bbr3Config| {
        <Bbr3Config as super::super::CcaParams>::validate(&c).expect_err("accepted")
    };
    let e = bad(Bbr3Config {
        loss_thresh: 1.5,
        ..Bbr3Config::default()
    });
    assert_eq!(e, "bbr3 loss_thresh must be above 0 and below 1, not 1.5");
    assert!(bad(Bbr3Config {
        beta: -0.1,
        ..Bbr3Config::default()
    })
    .starts_with("bbr3 beta"));
    assert!(bad(Bbr3Config {
        probe_rtt_win_ms: 20_000,
        ..Bbr3Config::default()
    })
    .contains("probe_rtt_win_ms"));
}

/// h0 → r0 (1 Gbit/s, 1 ms) → h1 (`rate`, `delay`, FIFO of `limit` packets), one BBRv3
/// flow.
fn dumbbell(rate_bps: u64, delay: Time, limit: u64, seed: u64, duration: Time) -> SimConfig {
    let link = |a, b, rate_bps, delay_ns, qdisc_ab| LinkConfig {
        a,
        b,
        rate_bps,
        delay_ns,
        loss: 0.0,
        jitter_ns: 0,
        overhead_bytes: 0,
        qdisc_ab,
        qdisc_ba: QdiscConfig::default(),
        schedule_ab: None,
        schedule_ba: None,
        slot_ab: None,
        slot_ba: None,
        docsis_ab: None,
        docsis_ba: None,
    };
    let fifo = QdiscConfig::Fifo(FifoConfig {
        limit_pkts: Some(limit),
        limit_bytes: None,
    });
    SimConfig {
        seed,
        duration_ns: duration,
        sample_interval_ns: 100 * MS,
        nodes: ["h0", "r0", "h1"]
            .iter()
            .map(|n| NodeConfig {
                name: n.to_string(),
            })
            .collect(),
        links: vec![
            link(0, 1, 1_000_000_000, MS, QdiscConfig::default()),
            link(1, 2, rate_bps, delay, fifo),
        ],
        flows: vec![FlowConfig {
            kind: FlowKind::Tcp,
            src: 0,
            dst: 2,
            start_ns: 0,
            stop_ns: None,
            size_bytes: None,
            tcp: TcpConfig {
                cca: CcaConfig::Bbr3(Bbr3Config::default()),
                ..TcpConfig::default()
            },
            udp: UdpConfig::default(),
            nqb: false,
        }],
        wifi: Vec::new(),
    }
}

/// The mode (with ProbeBW's phase) every millisecond: (time, mode) at each change.
fn mode_log(sim: &mut Simulation) -> Vec<(Time, &'static str)> {
    let mut log: Vec<(Time, &'static str)> = Vec::new();
    let mut t = 0;
    while t < sim.duration() {
        t += MS;
        sim.run_until(t);
        let Endpoints::Tcp { snd, .. } = &sim.flows[0].ep else {
            unreachable!()
        };
        let m = snd.cc.mode().unwrap();
        if log.last().is_none_or(|&(_, last)| last != m) {
            log.push((t, m));
        }
    }
    log
}

fn starts(log: &[(Time, &str)], mode: &str) -> Vec<Time> {
    log.iter()
        .filter(|(_, m)| *m == mode)
        .map(|&(t, _)| t)
        .collect()
}

/// When each ProbeBW cycle's wall clock started (`bbr_start_bw_probe_down`): entering
/// DOWN, or CRUISE straight from Drain or ProbeRTT (their DOWN lasts under a
/// millisecond, or nothing at all on leaving ProbeRTT).
fn cycle_starts(log: &[(Time, &str)]) -> Vec<Time> {
    log.windows(2)
        .filter(|p| {
            p[1].1 == "probe_bw_down"
                || (p[1].1 == "probe_bw_cruise" && matches!(p[0].1, "drain" | "probe_rtt"))
        })
        .map(|p| p[1].0)
        .collect()
}

/// For each REFILL, the time since its cycle started.
fn probe_waits(log: &[(Time, &str)]) -> Vec<Time> {
    let cycles = cycle_starts(log);
    starts(log, "probe_bw_refill")
        .iter()
        .map(|r| r - cycles.iter().rev().find(|&&c| c < *r).unwrap())
        .collect()
}

/// 100 Mbit/s, 20 ms RTT, a 2-BDP FIFO (≈ 340 packets): Startup, Drain, then ProbeBW; the
/// link is ≥ 95 % busy after Startup, and the next probe comes 62-63 rounds after DOWN
/// began (`bbr_is_reno_coexistence_probe_time`: min(63, BDP) rounds, 0-1 of them random),
/// before the 2-3 s wall clock (draft-ietf-ccwg-bbr: whichever comes first).
#[test]
fn alone_on_a_dumbbell_it_fills_the_link_and_probes_every_63_rounds() {
    // 2 × (1 ms + 9 ms) = 20 ms RTT; BDP = 100e6 × 0.02 / 8 / 1500 ≈ 167 packets.
    let cfg = dumbbell(100_000_000, 9 * MS, 340, 1, 12 * SEC);
    let mut sim = Simulation::new(cfg).unwrap();
    let log = mode_log(&mut sim);
    assert_eq!(log[0].1, "startup", "{log:?}");
    assert_eq!(log[1].1, "drain", "{log:?}");
    assert!(log[2].1.starts_with("probe_bw_"), "{log:?}");
    // Over the whole run, Startup's quarter second included.
    let summary = sim.summary();
    let q = summary.queues.iter().find(|q| q.link == "r0->h1").unwrap();
    let util = q.utilization;
    assert!(util >= 0.95, "utilisation {util}");
    let waits = probe_waits(&log);
    assert!(waits.len() >= 5, "{log:?}");
    for &wait in &waits {
        // 62-63 rounds of at least the 20 ms base RTT, and well under the 2 s clock.
        assert!((62 * 20 * MS..2 * SEC).contains(&wait), "{waits:?} {log:?}");
    }
    // A ProbeRTT every ~5 s (`bbr_probe_rtt_win_ms`).
    let rtts = starts(&log, "probe_rtt");
    assert!((1..=3).contains(&rtts.len()), "{log:?}");
}

/// On a 200 ms RTT path min(63, BDP) rounds take more than 3 s, so the wall clock sets
/// the probe: 2-3 s after DOWN began (`bbr_pick_probe_wait`), a round of slack.
#[test]
fn on_a_long_path_the_wall_clock_times_the_probes() {
    // 2 × (1 + 99) ms = 200 ms; 20 Mbit/s: BDP ≈ 333 packets; FIFO 2 BDP.
    let cfg = dumbbell(20_000_000, 99 * MS, 670, 3, 25 * SEC);
    let mut sim = Simulation::new(cfg).unwrap();
    let log = mode_log(&mut sim);
    let waits = probe_waits(&log);
    assert!(waits.len() >= 3, "{log:?}");
    for &wait in &waits {
        // The check runs on ACKs: up to a round after the deadline.
        assert!(
            (2 * SEC..3 * SEC + 250 * MS).contains(&wait),
            "{waits:?} {log:?}"
        );
    }
    // Randomised: not all the same.
    assert!(waits.iter().any(|&w| w != waits[0]), "{waits:?}");
}

/// Same seed, same run; another seed draws other probe waits.
#[test]
fn runs_are_deterministic_per_seed() {
    let run = |seed| {
        let mut sim = Simulation::new(dumbbell(20_000_000, 99 * MS, 670, seed, 8 * SEC)).unwrap();
        mode_log(&mut sim)
    };
    assert_eq!(run(7), run(7));
    assert_ne!(run(7), run(8));
}
