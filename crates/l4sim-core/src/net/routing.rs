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
    pub fn towards(n: usize, edges: &[Edge], dsts: &[usize]) -> Result<Routes, String> {
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
            format!(
                "the routing table of {n} nodes towards {} routers would hold {} entries, \
                 more than the {MAX_TABLE_ENTRIES} the core holds; use fewer nodes or fewer \
                 distinct flow endpoints",
                cores.len(),
                n as u128 * cores.len() as u128
            )
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
        assert!(err.contains("more than the"), "{err}");
    }
}
