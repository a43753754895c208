//! Building a configuration's network: its channels with their qdiscs and loss generators,
//! and the flows' paths. The one place a scenario's link and qdisc configurations become
//! the running elements, so `net` and `qdisc` never read a `SimConfig`.

use schemars::JsonSchema;
use serde::Serialize;

use crate::config::{ConfigError, SimConfig};
use crate::net::docsis::Docsis;
use crate::net::link::Channel;
use crate::net::rate::RateSchedule;
use crate::net::routing::{Edge, Routes};
use crate::net::slot::Slot;
use crate::net::wifi::link::WifiBss;
use crate::qdisc::docsis_dualq::Upstream;
use crate::qdisc::Qdisc;
use crate::rng::{Rng, KEY_LINK, KEY_QDISC, KEY_SLOT, KEY_WIFI};
use crate::time::secs;

/// The channels (link directions) of a configuration, in the engine's order: link `i` is
/// channel `2i` (a → b) and `2i + 1` (b → a).
pub fn channel_edges(cfg: &SimConfig) -> Vec<Edge> {
    cfg.links
        .iter()
        .flat_map(|l| {
            [
                (l.a as u32, l.b as u32, l.delay_ns),
                (l.b as u32, l.a as u32, l.delay_ns),
            ]
        })
        .collect()
}

/// The channels of a configuration in [`channel_edges`] order, each with its qdisc, loss
/// generator and slot gate seeded from `cfg.seed` (what the engine, and the emulator's router, run).
pub fn build_channels(cfg: &SimConfig) -> Vec<Channel> {
    let mut channels = Vec::with_capacity(2 * cfg.links.len());
    for l in &cfg.links {
        // In `channel_edges` order: a → b, then b → a.
        for (from, to, q, sched, slot, docsis) in [
            (
                l.a,
                l.b,
                &l.qdisc_ab,
                &l.schedule_ab,
                &l.slot_ab,
                &l.docsis_ab,
            ),
            (
                l.b,
                l.a,
                &l.qdisc_ba,
                &l.schedule_ba,
                &l.slot_ba,
                &l.docsis_ba,
            ),
        ] {
            let idx = channels.len() as u64;
            let mut qdisc = Qdisc::from_config(q, Rng::for_component(cfg.seed, KEY_QDISC | idx));
            // The DOCSIS dual queue estimates its delays at the service flow's rate: on a
            // DOCSIS upstream its Maximum Sustained Traffic Rate, else the link's; it
            // classifies the NQB flows into its L queue.
            if let Qdisc::DocsisDualq(d) = &mut qdisc {
                let msr = docsis.and_then(|c| c.max_sustained_rate_bps);
                d.set_link_rate(msr.unwrap_or(l.rate_bps));
                // On a DOCSIS upstream it is the modem's queue (MULPI Annex N.3).
                if let Some(c) = docsis {
                    d.set_upstream(Upstream {
                        loop_delay: c.loop_delay(l.delay_ns),
                        map_interval: c.map_interval_ns,
                        pgs_bytes: c.pgs_bytes,
                    });
                }
                d.set_nqb_flows(cfg.flows.iter().map(|f| f.nqb));
            }
            let weight = match &qdisc {
                Qdisc::DocsisDualq(d) => Some(d.sched_weight()),
                _ => None,
            };
            let rng = Rng::for_component(cfg.seed, KEY_LINK | idx);
            let ends = (from as u32, to as u32);
            channels.push(Channel {
                schedule: sched.as_ref().map(RateSchedule::new),
                // Its own stream: slotting a link leaves its loss and jitter draws as they were.
                slot: slot.map(|s| Slot::new(s, Rng::for_component(cfg.seed, KEY_SLOT | idx))),
                docsis: docsis.as_ref().map(|d| {
                    let mut gate = Docsis::new(d, l.rate_bps, l.delay_ns);
                    // A dual queue on a DOCSIS upstream is an aggregate service flow: its
                    // two queues request and are granted apart.
                    if let Some(w) = weight {
                        gate.set_aggregate(w);
                    }
                    Box::new(gate)
                }),
                loss: l.loss,
                jitter: l.jitter_ns,
                overhead: l.overhead_bytes,
                ..Channel::new(
                    channel_name(cfg, from, to),
                    ends,
                    l.rate_bps,
                    l.delay_ns,
                    qdisc,
                    rng,
                )
            });
        }
    }
    channels
}

/// The configuration's Wi-Fi BSSs over `channels`: each station's link gives the BSS its
/// downlink (a -> b, the AP's queue for it) and uplink channel, which the MAC serves from
/// then on (`Channel::wifi`).
pub fn build_wifi(cfg: &SimConfig, channels: &mut [Channel]) -> Vec<WifiBss> {
    let mut out = Vec::with_capacity(cfg.wifi.len());
    for (b, w) in cfg.wifi.iter().enumerate() {
        let down: Vec<u32> = w.links.iter().map(|&l| 2 * l as u32).collect();
        let up: Vec<u32> = down.iter().map(|c| c + 1).collect();
        for (s, (&d, &u)) in down.iter().zip(&up).enumerate() {
            for (c, k) in [(d, 0), (u, 1 + s as u32)] {
                let ch = &mut channels[c as usize];
                ch.wifi = Some((b as u32, k));
                ch.txdone_pending = true;
            }
        }
        let rng = Rng::for_component(cfg.seed, KEY_WIFI | b as u64);
        out.push(WifiBss::new(&w.bss, down, up, rng));
    }
    out
}

/// A channel's name: `"a->b"` with node names.
pub fn channel_name(cfg: &SimConfig, from: usize, to: usize) -> String {
    format!("{}->{}", cfg.nodes[from].name, cfg.nodes[to].name)
}

/// The route of a flow as the engine forwards it: what agents and environments use for
/// their reference scales (the only routing computation in l4sim).
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct FlowPath {
    /// Channels from the source to the destination (`"a->b"`).
    pub links: Vec<String>,
    /// Channels the ACKs take back.
    pub reverse_links: Vec<String>,
    /// Propagation delay there and back (seconds).
    pub base_rtt_s: f64,
    /// The slowest forward link's rate (bits/s).
    pub bottleneck_bps: u64,
}

/// Entries of one routing table [`flow_paths`] builds at a time (64 MiB): the flows'
/// endpoints are taken in groups that fit.
const PATHS_TABLE_ENTRIES: usize = 1 << 24;

/// Every flow's path (`None` where there is no route either way). Memory stays within
/// [`PATHS_TABLE_ENTRIES`] whatever the topology (scenario validation asks this before the
/// memory budget has been checked).
pub fn flow_paths(cfg: &SimConfig) -> Result<Vec<Option<FlowPath>>, ConfigError> {
    let n = cfg.nodes.len();
    let edges = channel_edges(cfg);
    let mut ends: Vec<usize> = cfg.flows.iter().flat_map(|f| [f.src, f.dst]).collect();
    ends.sort_unstable();
    ends.dedup();
    let mut fwd = vec![None; cfg.flows.len()];
    let mut rev = vec![None; cfg.flows.len()];
    let mut group = vec![usize::MAX; n];
    for (g, chunk) in ends
        .chunks((PATHS_TABLE_ENTRIES / n.max(1)).max(1))
        .enumerate()
    {
        chunk.iter().for_each(|&e| group[e] = g);
        let routes = Routes::towards(n, &edges, chunk).map_err(ConfigError)?;
        for (i, f) in cfg.flows.iter().enumerate() {
            if group[f.dst] == g {
                fwd[i] = routes.path(f.src, f.dst);
            }
            if group[f.src] == g {
                rev[i] = routes.path(f.dst, f.src);
            }
        }
    }
    Ok(fwd
        .into_iter()
        .zip(rev)
        .map(|(f, r)| flow_path(cfg, &edges, f?, r?))
        .collect())
}

/// A flow's [`FlowPath`] from its channels there (`fwd`) and back (`rev`).
pub fn flow_path(
    cfg: &SimConfig,
    edges: &[Edge],
    fwd: Vec<usize>,
    rev: Vec<usize>,
) -> Option<FlowPath> {
    let name = |c: usize| channel_name(cfg, edges[c].0 as usize, edges[c].1 as usize);
    let delay: u64 = fwd.iter().chain(&rev).map(|&c| edges[c].2).sum();
    Some(FlowPath {
        bottleneck_bps: fwd.iter().map(|&c| cfg.links[c / 2].rate_bps).min()?,
        links: fwd.iter().map(|&c| name(c)).collect(),
        reverse_links: rev.iter().map(|&c| name(c)).collect(),
        base_rtt_s: secs(delay),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flow_paths_follow_delay_not_hops() {
        // a -50 ms- b directly, or a -5 ms- c -5 ms- b: the flow takes the two-hop path.
        let json = r#"{"duration_ns": 1000000000,
            "nodes": [{"name": "a"}, {"name": "b"}, {"name": "c"}, {"name": "d"}],
            "links": [
                {"a": 0, "b": 1, "rate_bps": 100000000, "delay_ns": 50000000},
                {"a": 0, "b": 2, "rate_bps": 10000000, "delay_ns": 5000000},
                {"a": 2, "b": 1, "rate_bps": 20000000, "delay_ns": 5000000}],
            "flows": [{"kind": "tcp", "src": 0, "dst": 1}, {"kind": "tcp", "src": 0, "dst": 3}]}"#;
        let cfg: SimConfig = serde_json::from_str(json).unwrap();
        let paths = flow_paths(&cfg).unwrap();
        let p = paths[0].as_ref().unwrap();
        assert_eq!(p.links, ["a->c", "c->b"]);
        assert_eq!(p.reverse_links, ["b->c", "c->a"]);
        assert!((p.base_rtt_s - 0.020).abs() < 1e-12);
        assert_eq!(p.bottleneck_bps, 10_000_000);
        assert_eq!(paths[1], None, "d is not connected");
    }

    /// `h0 - r0 - ... - r{k-1} - h1` with one flow h0 -> h1.
    fn long_path(k: usize) -> SimConfig {
        let nodes: Vec<String> = (0..k + 2)
            .map(|i| format!("{{\"name\": \"n{i}\"}}"))
            .collect();
        let links: Vec<String> = (0..k + 1)
            .map(|i| {
                format!(
                    "{{\"a\": {i}, \"b\": {}, \"rate_bps\": 1000000, \"delay_ns\": 1000}}",
                    i + 1
                )
            })
            .collect();
        let json = format!(
            r#"{{"duration_ns": 1000000, "nodes": [{}], "links": [{}],
                "flows": [{{"kind": "tcp", "src": 0, "dst": {}}}]}}"#,
            nodes.join(","),
            links.join(","),
            k + 1
        );
        serde_json::from_str(&json).unwrap()
    }

    #[test]
    fn a_long_path_routes_without_a_square_table() {
        // 100 000 routers: a full table would be 40 GB; towards the two endpoints, 800 KB.
        let k = 100_000;
        let cfg = long_path(k);
        let edges = channel_edges(&cfg);
        let routes = Routes::towards(cfg.nodes.len(), &edges, &[0, k + 1]).unwrap();
        assert_eq!(routes.path(0, k + 1).unwrap().len(), k + 1);
        let paths = flow_paths(&cfg).unwrap();
        assert_eq!(paths[0].as_ref().unwrap().links.len(), k + 1);
    }
}
