//! Static shortest-path routing: a next-hop table computed once (Dijkstra on propagation
//! delay plus one nanosecond per hop, so equal delays prefer fewer hops; ties go to the
//! lowest channel index, which keeps routes deterministic).
//!
//! Leaves (nodes with one channel out and one in, such as the hosts of a dumbbell) never
//! relay a shortest path, so [`Routes`] keeps table columns only for the other nodes: a
//! packet for a leaf goes to the leaf's neighbour and then down its one link; a leaf sends
//! everything up its one link. The choices are the ones a full table would make (the same
//! candidate first hops, the same lowest-index tie-break), at a size of nodes × non-leaf
//! nodes instead of nodes², which is what lets 10 000 flows have 20 000 hosts.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use schemars::JsonSchema;
use serde::Serialize;

use crate::config::{ConfigError, SimConfig};
use crate::net::link::Channel;
use crate::net::rate::RateSchedule;
use crate::qdisc::Qdisc;
use crate::rng::{Rng, KEY_LINK, KEY_QDISC};
use crate::time::secs;

/// `(from, to, delay)` of each channel.
pub type Edge = (u32, u32, u64);

pub const NO_ROUTE: u32 = u32::MAX;

/// Next-hop channel from every node towards each destination in `dsts`:
/// `table[node * dsts.len() + k]` for destination `dsts[k]`.
pub fn next_hops_to(n: usize, edges: &[Edge], dsts: &[usize]) -> Vec<u32> {
    let mut table = vec![NO_ROUTE; n * dsts.len()];
    fill_next_hops(n, edges, dsts, &mut table);
    table
}

/// [`next_hops_to`] into `table` (`n * dsts.len()` entries, all `NO_ROUTE`).
fn fill_next_hops(n: usize, edges: &[Edge], dsts: &[usize], table: &mut [u32]) {
    let m = dsts.len();
    // Incoming channels per node (to relax backwards from the destination).
    let mut incoming: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (c, &(_, to, _)) in edges.iter().enumerate() {
        incoming[to as usize].push(c);
    }
    let mut dist = vec![u64::MAX; n];
    for (k, &dst) in dsts.iter().enumerate() {
        dist.fill(u64::MAX);
        dist[dst] = 0;
        let mut heap = BinaryHeap::new();
        heap.push(Reverse((0u64, dst)));
        while let Some(Reverse((d, v))) = heap.pop() {
            if d > dist[v] {
                continue;
            }
            for &c in &incoming[v] {
                let (u, _, delay) = edges[c];
                let u = u as usize;
                let nd = d + delay + 1;
                let slot = &mut table[u * m + k];
                if nd < dist[u] || (nd == dist[u] && (c as u32) < *slot) {
                    dist[u] = nd;
                    *slot = c as u32;
                    heap.push(Reverse((nd, u)));
                }
            }
        }
    }
}

/// Next-hop channel for every (node, destination): `table[node * n + dst]`.
pub fn next_hops(n: usize, edges: &[Edge]) -> Vec<u32> {
    next_hops_to(n, edges, &(0..n).collect::<Vec<_>>())
}

/// The routing table of a topology (see the module comment for the leaf rule).
#[derive(Clone, Debug)]
pub struct Routes {
    /// Per node: its one outgoing channel if it is a leaf, else `NO_ROUTE`.
    up: Vec<u32>,
    /// Per leaf: its neighbour and the channel from the neighbour down to it.
    down: Vec<(u32, u32)>,
    /// Per non-leaf node: its column in `table`; `NO_ROUTE` for a leaf.
    col: Vec<u32>,
    /// Next hops towards the non-leaf nodes: `table[node * cols + col[dst]]`.
    table: Vec<u32>,
    cols: usize,
    /// Channels, for [`Routes::path`].
    edges: Vec<Edge>,
}

/// Most entries a routing table may hold (4 GiB of next hops): a topology that needs more
/// is refused in one sentence before anything that size is allocated.
pub const MAX_TABLE_ENTRIES: usize = 1 << 30;

/// Per node: its one outgoing channel if it is a leaf (else `NO_ROUTE`), and per leaf its
/// neighbour and the channel from the neighbour down to it.
type Leaves = (Vec<u32>, Vec<(u32, u32)>);

fn leaves(n: usize, edges: &[Edge]) -> Leaves {
    let (mut outs, mut ins) = (vec![Vec::new(); n], vec![Vec::new(); n]);
    for (c, &(from, to, _)) in edges.iter().enumerate() {
        outs[from as usize].push(c as u32);
        ins[to as usize].push(c as u32);
    }
    let mut up = vec![NO_ROUTE; n];
    let mut down = vec![(NO_ROUTE, NO_ROUTE); n];
    for v in 0..n {
        if let ([o], [i]) = (outs[v].as_slice(), ins[v].as_slice()) {
            let (_, nb, _) = edges[*o as usize];
            if edges[*i as usize].0 == nb {
                up[v] = *o;
                down[v] = (nb, *i);
            }
        }
    }
    (up, down)
}

impl Routes {
    /// Routes towards every node.
    pub fn new(n: usize, edges: &[Edge]) -> Routes {
        let (up, down) = leaves(n, edges);
        let cores: Vec<usize> = (0..n).filter(|&v| up[v] == NO_ROUTE).collect();
        let table = next_hops_to(n, edges, &cores);
        Routes::with_columns(n, edges, (up, down), &cores, table)
    }

    /// Routes towards the nodes in `dsts` only (a simulation's packets go to its flows'
    /// endpoints and nowhere else): the table has a column per non-leaf node a packet for
    /// one of them is routed to, so a long path or a large mesh with few endpoints costs
    /// nodes × those few. A table above [`MAX_TABLE_ENTRIES`], or one the allocator cannot
    /// give, is an error (one sentence), never an abort.
    pub fn towards(n: usize, edges: &[Edge], dsts: &[usize]) -> Result<Routes, ConfigError> {
        let (up, down) = leaves(n, edges);
        let target = |d: usize| match up[d] {
            NO_ROUTE => d,
            _ => down[d].0 as usize,
        };
        let mut cores: Vec<usize> = dsts
            .iter()
            .map(|&d| target(d))
            .filter(|&t| up[t] == NO_ROUTE)
            .collect();
        cores.sort_unstable();
        cores.dedup();
        let too_big = || {
            ConfigError(format!(
                "the routing table of {n} nodes towards {} routers would hold {} entries, \
                 more than the {MAX_TABLE_ENTRIES} the core holds; use fewer nodes or fewer \
                 distinct flow endpoints",
                cores.len(),
                n as u128 * cores.len() as u128
            ))
        };
        let entries = n
            .checked_mul(cores.len())
            .filter(|&e| e <= MAX_TABLE_ENTRIES)
            .ok_or_else(too_big)?;
        let mut table = Vec::new();
        table.try_reserve_exact(entries).map_err(|_| too_big())?;
        table.resize(entries, NO_ROUTE);
        fill_next_hops(n, edges, &cores, &mut table);
        Ok(Routes::with_columns(n, edges, (up, down), &cores, table))
    }

    fn with_columns(
        n: usize,
        edges: &[Edge],
        (up, down): Leaves,
        cores: &[usize],
        table: Vec<u32>,
    ) -> Routes {
        let mut col = vec![NO_ROUTE; n];
        for (k, &v) in cores.iter().enumerate() {
            col[v] = k as u32;
        }
        Routes {
            table,
            cols: cores.len(),
            up,
            down,
            col,
            edges: edges.to_vec(),
        }
    }

    /// The channel a packet at `node` for `dst` takes next (`NO_ROUTE`: none).
    #[inline]
    pub fn next(&self, node: usize, dst: usize) -> u32 {
        if node == dst {
            return NO_ROUTE;
        }
        let up = self.up[node];
        if up != NO_ROUTE {
            return up;
        }
        let (target, last) = if self.col[dst] == NO_ROUTE {
            (self.down[dst].0 as usize, self.down[dst].1)
        } else {
            (dst, NO_ROUTE)
        };
        if node == target {
            return last;
        }
        match self.col[target] {
            // The leaf's neighbour is a leaf too (a component of two nodes, not this one),
            // or a table built `towards` other destinations.
            NO_ROUTE => NO_ROUTE,
            k => self.table[node * self.cols + k as usize],
        }
    }

    /// The channels from `src` to `dst` (`None`: no route).
    pub fn path(&self, src: usize, dst: usize) -> Option<Vec<usize>> {
        let mut hops = Vec::new();
        let mut node = src;
        while node != dst {
            let c = self.next(node, dst);
            if c == NO_ROUTE || hops.len() >= self.edges.len() {
                return None;
            }
            hops.push(c as usize);
            node = self.edges[c as usize].1 as usize;
        }
        Some(hops)
    }
}

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

/// The channels of a configuration in [`channel_edges`] order, each with its qdisc and
/// loss generator seeded from `cfg.seed` (what the engine, and the emulator's router, run).
pub fn build_channels(cfg: &SimConfig) -> Vec<Channel> {
    let mut channels = Vec::with_capacity(2 * cfg.links.len());
    for l in &cfg.links {
        // In `channel_edges` order: a → b, then b → a.
        for (from, to, q, sched) in [
            (l.a, l.b, &l.qdisc_ab, &l.schedule_ab),
            (l.b, l.a, &l.qdisc_ba, &l.schedule_ba),
        ] {
            let idx = channels.len() as u64;
            let qdisc = Qdisc::from_config(q, Rng::for_component(cfg.seed, KEY_QDISC | idx));
            let rng = Rng::for_component(cfg.seed, KEY_LINK | idx);
            let ends = (from as u32, to as u32);
            channels.push(Channel {
                schedule: sched.as_ref().map(RateSchedule::new),
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
        let routes = Routes::towards(n, &edges, chunk)?;
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
    fn chain_and_shortcut() {
        // 0 -1- 1 -1- 2, plus a slow direct 0-2 (delay 5): routes go through 1.
        let edges = vec![
            (0, 1, 1),
            (1, 0, 1),
            (1, 2, 1),
            (2, 1, 1),
            (0, 2, 5),
            (2, 0, 5),
        ];
        let t = next_hops(3, &edges);
        assert_eq!(t[2], 0); // 0 -> 2 via channel 0 (0->1)
        assert_eq!(t[3 + 2], 2); // 1 -> 2 via channel 2
        assert_eq!(t[2 * 3], 3); // 2 -> 0 via 2->1
        assert_eq!(t[0], NO_ROUTE); // to itself: no hop
    }

    #[test]
    fn disconnected_has_no_route() {
        let t = next_hops(3, &[(0, 1, 1), (1, 0, 1)]);
        assert_eq!(t[2], NO_ROUTE);
    }

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

    /// The path a full nodes² table gives (the reference for the leaf rule).
    fn full_path(
        t: &[u32],
        edges: &[Edge],
        n: usize,
        src: usize,
        dst: usize,
    ) -> Option<Vec<usize>> {
        let mut hops = Vec::new();
        let mut node = src;
        while node != dst {
            let c = t[node * n + dst];
            if c == NO_ROUTE || hops.len() > edges.len() {
                return None;
            }
            hops.push(c as usize);
            node = edges[c as usize].1 as usize;
        }
        Some(hops)
    }

    #[test]
    fn leaf_rule_equals_the_full_table() {
        // Topologies with leaves, a leaf pair, equal-delay ties, parallel links, a cycle and
        // a disconnected part; every (src, dst) pair must route as the full table does.
        let mut rng = crate::rng::Rng::for_component(7, 0);
        for case in 0..200 {
            let n = 2 + (rng.next_u64() % 9) as usize;
            let links = 1 + (rng.next_u64() % 12) as usize;
            let mut edges = Vec::new();
            for _ in 0..links {
                let a = (rng.next_u64() % n as u64) as u32;
                let b = (rng.next_u64() % n as u64) as u32;
                if a == b {
                    continue;
                }
                let d = [1, 1, 2, 5][(rng.next_u64() % 4) as usize];
                edges.push((a, b, d));
                edges.push((b, a, d));
            }
            let full = next_hops(n, &edges);
            let routes = Routes::new(n, &edges);
            for src in 0..n {
                for dst in 0..n {
                    let want = full_path(&full, &edges, n, src, dst);
                    assert_eq!(
                        routes.path(src, dst),
                        want,
                        "case {case}: {src} -> {dst} in {edges:?}"
                    );
                    // A table towards `dst` alone routes to it as the full one does.
                    let towards = Routes::towards(n, &edges, &[dst]).unwrap();
                    assert_eq!(towards.path(src, dst), want, "case {case}: towards {dst}");
                }
            }
        }
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
        assert_eq!(routes.table.len(), 2 * (k + 2));
        assert_eq!(routes.path(0, k + 1).unwrap().len(), k + 1);
        let paths = flow_paths(&cfg).unwrap();
        assert_eq!(paths[0].as_ref().unwrap().links.len(), k + 1);
    }

    #[test]
    fn a_table_above_the_cap_is_an_error() {
        // A ring of n nodes (none a leaf) towards every node: n² entries.
        let n = (MAX_TABLE_ENTRIES as f64).sqrt() as usize + 2;
        let edges: Vec<Edge> = (0..n)
            .flat_map(|i| {
                let j = ((i + 1) % n) as u32;
                [(i as u32, j, 1), (j, i as u32, 1)]
            })
            .collect();
        let all: Vec<usize> = (0..n).collect();
        let err = Routes::towards(n, &edges, &all).unwrap_err();
        assert!(err.0.contains("more than the"), "{}", err.0);
    }
}
