//! Static shortest-path routing: a next-hop table computed once (Dijkstra on propagation
//! delay plus one nanosecond per hop, so equal delays prefer fewer hops; ties go to the
//! lowest channel index, which keeps routes deterministic).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// `(from, to, delay)` of each channel.
pub type Edge = (u32, u32, u64);

pub const NO_ROUTE: u32 = u32::MAX;

/// Next-hop channel for every (node, destination): `table[node * n + dst]`.
pub fn next_hops(n: usize, edges: &[Edge]) -> Vec<u32> {
    let mut table = vec![NO_ROUTE; n * n];
    // Incoming channels per node (to relax backwards from the destination).
    let mut incoming: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (c, &(_, to, _)) in edges.iter().enumerate() {
        incoming[to as usize].push(c);
    }
    let mut dist = vec![u64::MAX; n];
    for dst in 0..n {
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
                let slot = &mut table[u * n + dst];
                if nd < dist[u] || (nd == dist[u] && (c as u32) < *slot) {
                    dist[u] = nd;
                    *slot = c as u32;
                    heap.push(Reverse((nd, u)));
                }
            }
        }
    }
    table
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
}
