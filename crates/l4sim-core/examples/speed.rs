//! Pure-Rust speed check of the engine: N NewReno bulk flows over a dumbbell
//! (1 Gbps / 1 ms access, `rate` / 20 ms bottleneck, FIFO 100 packets).
//!
//!     cargo run --release -p l4sim-core --example speed -- [flows] [rate_mbps] [seconds]

use l4sim_core::config::*;
use l4sim_core::Simulation;

pub fn dumbbell(flows: usize, rate_bps: u64, secs: u64) -> SimConfig {
    let mut nodes = Vec::new();
    let mut links = Vec::new();
    let big = QdiscConfig::default();
    nodes.push(NodeConfig { name: "r0".into() });
    nodes.push(NodeConfig { name: "r1".into() });
    links.push(LinkConfig {
        a: 0,
        b: 1,
        rate_bps,
        delay_ns: 20_000_000,
        loss: 0.0,
        jitter_ns: 0,
        overhead_bytes: 0,
        qdisc_ab: QdiscConfig::Fifo(l4sim_core::qdisc::fifo::FifoConfig {
            limit_pkts: Some(100),
            limit_bytes: None,
        }),
        qdisc_ba: big.clone(),
        schedule_ab: None,
        schedule_ba: None,
        slot_ab: None,
        slot_ba: None,
        docsis_ab: None,
        docsis_ba: None,
    });
    let mut fl = Vec::new();
    for i in 0..flows {
        let s = nodes.len();
        nodes.push(NodeConfig {
            name: format!("s{i}"),
        });
        nodes.push(NodeConfig {
            name: format!("d{i}"),
        });
        for (a, b) in [(s, 0), (1, s + 1)] {
            links.push(LinkConfig {
                a,
                b,
                rate_bps: 1_000_000_000,
                delay_ns: 1_000_000,
                loss: 0.0,
                jitter_ns: 0,
                overhead_bytes: 0,
                qdisc_ab: big.clone(),
                qdisc_ba: big.clone(),
                schedule_ab: None,
                schedule_ba: None,
                slot_ab: None,
                slot_ba: None,
                docsis_ab: None,
                docsis_ba: None,
            });
        }
        fl.push(FlowConfig {
            kind: FlowKind::Tcp,
            src: s,
            dst: s + 1,
            start_ns: 0,
            stop_ns: None,
            size_bytes: None,
            // As scenarios/bench_*.toml: RFC 6675, RFC 6298 and a fixed window, as ns-3.
            tcp: TcpConfig {
                rack: false,
                linux_rto: false,
                rwnd_bytes: Some(64 << 20),
                ..TcpConfig::default()
            },
            udp: UdpConfig::default(),
            nqb: false,
        });
    }
    SimConfig {
        seed: 1,
        duration_ns: secs * 1_000_000_000,
        sample_interval_ns: 100_000_000,
        nodes,
        links,
        flows: fl,
        wifi: Vec::new(),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let flows = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(1);
    let mbps: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(10);
    let secs: u64 = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(60);
    let mut sim = Simulation::new(dumbbell(flows, mbps * 1_000_000, secs)).unwrap();
    let t0 = std::time::Instant::now();
    sim.run();
    let wall = t0.elapsed().as_secs_f64();
    let s = sim.summary();
    let gp: f64 = s.flows.iter().map(|f| f.goodput_bps).sum();
    println!(
        "{flows} flow(s), {mbps} Mbps, {secs} s simulated: wall {wall:.6} s, {:.0}x real time, \
         {:.2} M events/s, goodput {:.3} Mbps, bottleneck drops {}",
        secs as f64 / wall,
        sim.events() as f64 / wall / 1e6,
        gp / 1e6,
        s.queues
            .iter()
            .find(|q| q.link == "r0->r1")
            .map_or(0, |q| q.drops)
    );
}
