//! A3C-L4S's actor evaluated inside the core ("L4S in FreeBSD with A3C", §3.2, Algorithm 1;
//! the authors' `Actor.nn_model` in
//! `A3C-L4S/.ipynb_checkpoints/5_a3c_continuous_L4S-checkpoint.ipynb`, github
//! MPTCP-FreeBSD/FreeBSD-DRL-L4S): 12 features → `fc1` → ReLU → `fc2` → ReLU → `mu`
//! → tanh; the deployed action is the Gaussian's mean mapped onto the base probability,
//! p′ = max_prob · (tanh(mu) + 1) / 2. `python/l4sim/agents/a3c.py` trains it and writes
//! the file; a `dualpi2` qdisc with `policy = { kind = "a3c", weights = ... }` sets p′ from
//! it every `tupdate`, an `fq_l4s` qdisc each sub-queue's p at its updates.
//!
//! # Weights file
//!
//! safetensors (read by `nn.rs`) with `fc1.weight` `[h1, 12]`, `fc1.bias`, `fc2.weight`
//! `[h2, h1]`, `fc2.bias`, `mu.weight` `[1, h2]`, `mu.bias` `[1]`, `norm_scale` `[12]` (the
//! factor taking each raw feature to [0, 1]) and `max_prob` `[1]`; optionally
//! `delta_prob` `[1]`: then the action is a change of p′ (an integral controller: a
//! memoryless actor alone is a proportional one), p′ ← clamp(p′ + delta_prob · tanh(mu), 0,
//! max_prob) at each update; or `pi_target` `[2]` (seconds, lo < hi): then the action sets
//! DualPI2's PI target delay, lo + (hi − lo) · (tanh(mu) + 1) / 2, and the PI law sets p′
//! (the actor tunes the integral controller; `dualpi2` only). Other tensors (the std head
//! `sigma.*`) are ignored.
//!
//! # State (Table 1 of the paper, the authors' column order)
//!
//! Raw values over one update interval, then `clamp(raw · norm_scale, 0, 1)`:
//! `burst_allowance` (0: DualPI2 has none), `drop_prob` (p′), `current_qdelay` (the PI's
//! input, s), `qdelay_old` (its value one update earlier, s), `accu_prob` (min(k·p′, 1)),
//! `measurement_start` (0: a time stamp), `tot_pkts` (bytes dequeued / 1500), `tot_bytes`,
//! `length` (backlog, packets), `len_bytes`, `drops`, `ecn` (CE marks), built from the
//! qdisc's [`UpdateStats`].

use std::sync::Arc;

use super::nn::{padded, read_chain, relu, Layer, Tensors, BLOCK};
use super::{Attach, Decision, Event, Hook, LearnedPolicy, UpdateStats};

/// Number of state features (Table 1).
pub const LEN: usize = 12;
/// Bytes per packet for `tot_pkts` (as `python/l4sim/agents/a3c.py` `PKT_BYTES`).
pub const PKT_BYTES: f64 = 1500.0;

/// One interval's raw state (Table 1, in this module's order) from the qdisc's statistics:
/// base probability `p`, delay now and one update ago, the applied probability (DualPI2's
/// p_CL), bytes dequeued, backlog in packets and bytes, drops and CE marks in the interval.
pub fn raw_state(s: &UpdateStats) -> [f64; LEN] {
    let secs = |t: u64| t as f64 * 1e-9;
    [
        0.0,
        s.prob,
        secs(s.qdelay),
        secs(s.qdelay_old),
        s.applied_prob,
        0.0,
        s.deq_bytes as f64 / PKT_BYTES,
        s.deq_bytes as f64,
        s.backlog_pkts as f64,
        s.backlog_bytes as f64,
        s.drops as f64,
        s.marks as f64,
    ]
}

/// The immutable network, shared by every copy of a qdisc (forks included).
#[derive(Debug)]
pub struct A3cNet {
    fc1: Layer,
    fc2: Layer,
    mu: Layer,
    pub scale: [f64; LEN],
    pub max_prob: f64,
    /// > 0: the action moves p′ by up to this much per update instead of setting it.
    pub delta_prob: f64,
    /// Some((lo, hi)) seconds: the action sets the PI's target delay in [lo, hi].
    pub pi_target: Option<(f64, f64)>,
}

impl A3cNet {
    /// Parse safetensors bytes; the error is the end of a sentence ("is not ...").
    pub fn parse(bytes: &[u8]) -> Result<A3cNet, String> {
        let t = Tensors::parse(bytes)?;
        let [fc1, fc2, mu] = read_chain(&t, ["fc1", "fc2", "mu"], LEN)?;
        let s = t.get("norm_scale", &[LEN])?;
        let max_prob = t.get("max_prob", &[1])?[0] as f64;
        if !(max_prob > 0.0 && max_prob <= 1.0) {
            return Err(format!(
                "is not a valid weights file: max_prob {max_prob} is not in (0, 1]"
            ));
        }
        let mut scale = [0.0; LEN];
        for (d, v) in scale.iter_mut().zip(s) {
            *d = v as f64;
        }
        let delta_prob = match t.shape("delta_prob") {
            Some(_) => t.get("delta_prob", &[1])?[0] as f64,
            None => 0.0,
        };
        if !(0.0..=max_prob).contains(&delta_prob) {
            return Err(format!(
                "is not a valid weights file: delta_prob {delta_prob} is not in [0, max_prob]"
            ));
        }
        let pi_target = match t.shape("pi_target") {
            Some(_) => {
                let v = t.get("pi_target", &[2])?;
                let (lo, hi) = (v[0] as f64, v[1] as f64);
                if !(lo > 0.0 && lo < hi && hi <= 10.0) {
                    return Err(format!(
                        "is not a valid weights file: pi_target [{lo}, {hi}] is not \
                         0 < lo < hi <= 10 seconds"
                    ));
                }
                if delta_prob > 0.0 {
                    return Err(
                        "is not a valid weights file: it has both delta_prob and pi_target".into(),
                    );
                }
                Some((lo, hi))
            }
            None => None,
        };
        Ok(A3cNet {
            fc1,
            fc2,
            mu,
            scale,
            max_prob,
            delta_prob,
            pi_target,
        })
    }
}

/// A policy: the shared network and this qdisc's own scratch buffers.
#[derive(Clone, Debug)]
pub struct A3cPolicy {
    net: Arc<A3cNet>,
    h1: Vec<f32>,
    h2: Vec<f32>,
}

impl LearnedPolicy for A3cPolicy {
    const KIND: &'static str = "a3c";
    const NAME: &'static str = "A3C";
    const HOOKS: &'static [Hook] = &[Hook::Prob, Hook::Target];

    fn hooks(&self) -> &'static [Hook] {
        match self.net.pi_target {
            Some(_) => &[Hook::Target],
            None => &[Hook::Prob],
        }
    }

    fn parse(bytes: &[u8], _: &Attach) -> Result<A3cPolicy, String> {
        Ok(A3cPolicy::new(Arc::new(A3cNet::parse(bytes)?)))
    }

    /// At each update: the actor's mean action on the interval's normalised state.
    #[inline]
    fn on(&mut self, ev: Event) -> Decision {
        match ev {
            Event::Update { stats, .. } => {
                let x = self.normalise(&raw_state(&stats));
                let v = self.decide(&x, stats.prob);
                match self.net.pi_target {
                    Some(_) => Decision::Target(v),
                    None => Decision::Prob(v),
                }
            }
            _ => Decision::Keep,
        }
    }

    fn row_len(&self) -> usize {
        LEN
    }

    /// p′ (or, with `pi_target`, the target in s) per normalised 12-feature state (as
    /// `f32`, the network's input).
    fn infer(&mut self, rows: &[f64], _batch: bool, out: &mut Vec<f64>) {
        for row in rows.chunks_exact(LEN) {
            let mut x = [0.0f32; LEN];
            for (xi, r) in x.iter_mut().zip(row) {
                *xi = *r as f32;
            }
            // The current p′ is the state's drop_prob (feature 1) unscaled.
            let s1 = self.net.scale[1];
            let current = if s1 > 0.0 { row[1] / s1 } else { 0.0 };
            out.push(self.decide(&x, current));
        }
    }
}

impl A3cPolicy {
    pub fn new(net: Arc<A3cNet>) -> A3cPolicy {
        A3cPolicy {
            h1: vec![0.0; padded(net.fc1.outputs)],
            h2: vec![0.0; padded(net.fc2.outputs)],
            net,
        }
    }

    pub fn net(&self) -> &A3cNet {
        &self.net
    }

    /// Raw features → the network's input (scaled, clamped to [0, 1], `f32`).
    pub fn normalise(&self, raw: &[f64; LEN]) -> [f32; LEN] {
        let mut x = [0.0f32; LEN];
        for ((xi, r), s) in x.iter_mut().zip(raw).zip(&self.net.scale) {
            *xi = (r * s).clamp(0.0, 1.0) as f32;
        }
        x
    }

    /// The p′ to set: the action itself, or (with `delta_prob`) the current p′ moved by
    /// `delta_prob` · tanh(mu); with `pi_target`, the PI target (s) instead.
    pub fn decide(&mut self, x: &[f32; LEN], current: f64) -> f64 {
        let (delta, max_prob) = (self.net.delta_prob, self.net.max_prob);
        if let Some((lo, hi)) = self.net.pi_target {
            return lo + (hi - lo) * (self.mean(x) + 1.0) / 2.0;
        }
        if delta > 0.0 {
            return (current + delta * self.mean(x)).clamp(0.0, max_prob);
        }
        self.prob(x)
    }

    /// The deterministic action p′ for a normalised state.
    pub fn prob(&mut self, x: &[f32; LEN]) -> f64 {
        let m = self.mean(x);
        let max_prob = self.net.max_prob;
        (max_prob * (m + 1.0) / 2.0).clamp(0.0, max_prob)
    }

    /// The Gaussian's mean action tanh(mu) in [-1, 1].
    fn mean(&mut self, x: &[f32; LEN]) -> f64 {
        let n = &*self.net;
        n.fc1.forward(x, &mut self.h1);
        relu(&mut self.h1[..n.fc1.outputs]);
        n.fc2.forward(&self.h1[..n.fc2.inputs], &mut self.h2);
        relu(&mut self.h2[..n.fc2.outputs]);
        let mut mu = [0.0f32; BLOCK];
        n.mu.forward(&self.h2[..n.mu.inputs], &mut mu);
        mu[0].tanh() as f64
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::policy::nn::write_safetensors;
    use crate::policy::Policy;

    /// A network whose mean is tanh(c · x[1]) (fc1 passes x[1] on, fc2 copies it), with
    /// the scale `scale` for every feature.
    pub(crate) fn linear_policy(c: f32, scale: f32, max_prob: f32) -> Vec<u8> {
        write_safetensors(&linear_tensors(c, scale, max_prob))
    }

    /// The tensors of [`linear_policy`], to add others to.
    fn linear_tensors(c: f32, scale: f32, max_prob: f32) -> Vec<(&'static str, Vec<usize>, Vec<f32>)> {
        let mut w1 = vec![0.0; 2 * LEN];
        w1[1] = 1.0;
        vec![
            ("fc1.weight", vec![2, LEN], w1),
            ("fc1.bias", vec![2], vec![0.0, 0.0]),
            ("fc2.weight", vec![2, 2], vec![1.0, 0.0, 0.0, 0.0]),
            ("fc2.bias", vec![2], vec![0.0, 0.0]),
            ("mu.weight", vec![1, 2], vec![c, 0.0]),
            ("mu.bias", vec![1], vec![0.0]),
            ("norm_scale", vec![LEN], vec![scale; LEN]),
            ("max_prob", vec![1], vec![max_prob]),
        ]
    }

    /// `linear_policy(c, 1, 0.5)` with `pi_target` = [lo, hi] seconds.
    pub(crate) fn target_policy(c: f32, lo: f32, hi: f32) -> Vec<u8> {
        let mut all = linear_tensors(c, 1.0, 0.5);
        all.push(("pi_target", vec![2], vec![lo, hi]));
        write_safetensors(&all)
    }

    #[test]
    fn mean_action_is_scaled_tanh() {
        let net = A3cNet::parse(&linear_policy(2.0, 1.0, 0.5)).unwrap();
        let mut p = A3cPolicy::new(Arc::new(net));
        let mut raw = [0.0; LEN];
        raw[1] = 0.25;
        let x = p.normalise(&raw);
        let want = 0.5 * ((2.0f64 * 0.25).tanh() + 1.0) / 2.0;
        assert!((p.prob(&x) - want).abs() < 1e-6);
        // Features are clamped to [0, 1]: a huge raw value acts as 1.
        raw[1] = 1e9;
        let x = p.normalise(&raw);
        assert_eq!(x[1], 1.0);
        assert!((p.prob(&x) - 0.5 * ((2.0f64).tanh() + 1.0) / 2.0).abs() < 1e-6);
    }

    #[test]
    fn an_incremental_policy_moves_the_current_prob() {
        let net = A3cNet::parse(&linear_policy(2.0, 1.0, 0.5)).unwrap();
        assert_eq!(net.delta_prob, 0.0);
        // The same network with delta_prob 0.01: p′ moves by 0.01 · tanh(2 · x[1]).
        let mut all = linear_tensors(2.0, 2.0, 0.5);
        all.push(("delta_prob", vec![1], vec![0.01]));
        let bytes = write_safetensors(&all);
        let mut p = A3cPolicy::new(Arc::new(A3cNet::parse(&bytes).unwrap()));
        let mut raw = [0.0; LEN];
        raw[1] = 0.2; // the current p′ (scale 2: normalised 0.4)
        let x = p.normalise(&raw);
        let want = 0.2 + 0.01 * (2.0f64 * 0.4).tanh();
        assert!((p.decide(&x, 0.2) - want).abs() < 1e-6);
        // infer() reads the current p′ from the row: feature 1 over its scale.
        let mut out = Vec::new();
        let row: Vec<f64> = x.iter().map(|&v| v as f64).collect();
        p.infer(&row, false, &mut out);
        assert!((out[0] - want).abs() < 1e-6);
        // Bounded: never below 0 nor above max_prob.
        assert_eq!(p.decide(&x, 0.5), 0.5);
        all.pop();
        all.push(("delta_prob", vec![1], vec![0.9]));
        let e = A3cNet::parse(&write_safetensors(&all)).unwrap_err();
        assert!(e.contains("delta_prob"), "{e}");
    }

    #[test]
    fn a_target_policy_sets_the_pi_target() {
        let mut p = A3cPolicy::new(Arc::new(A3cNet::parse(&target_policy(2.0, 0.001, 0.041)).unwrap()));
        assert_eq!(p.hooks(), &[Hook::Target]);
        let mut raw = [0.0; LEN];
        raw[1] = 0.25;
        let x = p.normalise(&raw);
        let want = 0.001 + 0.04 * ((2.0f64 * 0.25).tanh() + 1.0) / 2.0;
        assert!((p.decide(&x, 0.0) - want).abs() < 1e-6);
        let stats = UpdateStats {
            prob: 0.25,
            ..Default::default()
        };
        match p.on(Event::Update { queue: 0, stats }) {
            Decision::Target(t) => assert!((t - want).abs() < 1e-6),
            d => panic!("{d:?}"),
        }
        for (lo, hi) in [(0.0, 0.01), (0.02, 0.01), (0.001, 11.0)] {
            let e = A3cNet::parse(&target_policy(1.0, lo, hi)).unwrap_err();
            assert!(e.contains("pi_target"), "{e}");
        }
        // Not both an incremental action and a target.
        let mut all = linear_tensors(1.0, 1.0, 0.5);
        all.push(("pi_target", vec![2], vec![0.001, 0.04]));
        all.push(("delta_prob", vec![1], vec![0.01]));
        let e = A3cNet::parse(&write_safetensors(&all)).unwrap_err();
        assert!(e.contains("both"), "{e}");
        // A p′ policy asks for the probability hook.
        let p = A3cPolicy::new(Arc::new(A3cNet::parse(&linear_policy(1.0, 1.0, 0.5)).unwrap()));
        assert_eq!(p.hooks(), &[Hook::Prob]);
    }

    #[test]
    fn bad_files_give_one_sentence() {
        let e = A3cNet::parse(&linear_policy(1.0, 1.0, 2.0)).unwrap_err();
        assert!(e.contains("max_prob"), "{e}");
        let e = Policy::load("a3c", "/nonexistent/p.safetensors", &Attach::default()).unwrap_err();
        assert!(e.starts_with("A3C policy file"), "{e}");
    }
}
