#[path = "speed.rs"]
#[allow(dead_code)]
mod speed;
use l4sim_core::config::*;
use l4sim_core::Simulation;
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let limit: u64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(33);
    let cca = if args.get(2).map(|s| s.as_str()) == Some("cubic") { CcaKind::Cubic } else { CcaKind::Newreno };
    let mut cfg = speed::dumbbell(1, 10_000_000, 30);
    cfg.links[0].delay_ns = 18_000_000; // 2*(18+1+1)=40ms RTT
    cfg.links[0].qdisc_ab = QdiscConfig::Fifo { limit_pkts: Some(limit), limit_bytes: None };
    cfg.flows[0].tcp.cca = cca; cfg.sample_interval_ns = 100_000_000;
    let mut sim = Simulation::new(cfg).unwrap();
    sim.run();
    let s = sim.summary();
    println!("{}", serde_json::to_string_pretty(&s).unwrap());
    let fs = &sim.series.flows;
    for i in (0..fs.time_s.len()).step_by(2) {
        print!("{:.1}:{}/{} ", fs.time_s[i], fs.cwnd_pkts[i], fs.ssthresh_pkts[i]);
    }
    println!();
    println!("{:?}", sim.counters);
}
