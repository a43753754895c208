//! LFQ (Grigorescu et al., "Reinforcement learning for per-flow buffer sizing", §III;
//! github.com/CN-TU/reinforcement-learning-for-per-flow-buffer-sizing): per-flow features and
//! the policy network setting each flow's buffer limit, behind the `policy/` seam
//! (`policy = { kind = "lfq", weights = ... }` on a qdisc offering per-flow limits, `fq`;
//! without weights, only the features, for agents to observe).
//!
//! # Features
//!
//! Computed as the authors' code does (`src/traffic-control/helper/rl-net.cc`
//! `FeatureVector` and `model/rl-internal-queue-disc.cc`): six signals, each smoothed by 10
//! exponentially weighted averages with weights 2⁻⁵ … 2⁻¹⁴ (`initialCurrentValue = 1/16`,
//! halved before each use), every average starting at 0:
//!
//! - on each arrival, before the packet is admitted: the queue length (packets, / 100),
//!   the squared difference between the updated queue average and the queue length (its
//!   square root is the feature: a spread), and the inter-arrival time (s; the first is
//!   counted from the start of the run);
//! - after each decision (here: on each arrival, [`Event::Arrival`]): the flow's buffer
//!   limit (packets, / 100);
//! - after the admission: the time since the flow's last loss (s, / 10; counted from the
//!   start of the run until there is one);
//! - on each departure: the inter-departure time (s; the first from the start of the run).
//!
//! Rates are the inverted averaged inter-arrival and inter-departure times (packets per
//! second, / 10 000), zero while an average of weight w has seen fewer than 1/w arrivals or
//! departures (the smaller of the two counts), as `FeatureVector::invert` does.
//!
//! # Network
//!
//! The authors' `RlNet` (`rl-net.cc`): 60 features → `fc1` → leaky ReLU → `fc2`
//! → leaky ReLU → `fc3` → leaky ReLU → `fc4` → one output, the flow's buffer limit in
//! packets, rounded and clamped to [1, 1000] (`rl-internal-queue-disc.cc`
//! `do_regular_logic`, `MIN_QUEUE_SIZE` / `MAX_QUEUE_SIZE`), on a flow's 1st, n+1-th, ...
//! arriving packet (the policy's `every`, the authors' `m_every_nth`). The authors use width 256;
//! the hidden widths here are read from the file, so smaller networks load too.
//!
//! # Weights file
//!
//! A safetensors file (read by `nn.rs`) with the tensors `fc1.weight` `[h1, 60]`,
//! `fc1.bias` `[h1]`, `fc2.weight` `[h2, h1]`, `fc2.bias` `[h2]`, `fc3.weight` `[h3, h2]`,
//! `fc3.bias` `[h3]`, `fc4.weight` `[1, h3]`, `fc4.bias` `[1]` (PyTorch `nn.Linear` names
//! and `[out, in]` layout), dtype `F32` or `F64`; other tensors are ignored.
//! `python/l4sim/agents/lfq.py` writes it. Evaluation is `nn.rs`'s blocked `f32` layers
//! (the same bits as the textbook sums).

use std::sync::Arc;

use super::nn::{leaky, padded, read_chain, Layer, Tensors, BLOCK, ROWS};
use super::{Attach, Decision, Event, Hook, LearnedPolicy};

use crate::time::{secs, Time};

/// Number of averages per feature.
pub const AVERAGES: usize = 10;
/// Weights of the averages: 2⁻⁵ … 2⁻¹⁴ (`rl-net.cc`: 1/16 halved before each average).
pub const WEIGHTS: [f64; AVERAGES] = {
    let mut w = [0.0; AVERAGES];
    let mut k = 0;
    while k < AVERAGES {
        w[k] = 1.0 / (32u64 << k) as f64;
        k += 1;
    }
    w
};
/// Feature names, in vector order (each repeated for the 10 weights), with their scale.
pub const NAMES: [&str; 6] = [
    "queue_100pkts",
    "queue_sd_100pkts",
    "limit_100pkts",
    "in_rate_10kpps",
    "out_rate_10kpps",
    "since_loss_10s",
];
/// Length of a flow's feature vector.
pub const LEN: usize = NAMES.len() * AVERAGES;

/// `rl-net.cc`: `queue_normalization_factor`, `speed_normalization_factor`,
/// `loss_normalizer`.
const QUEUE_SCALE: f64 = 100.0;
const RATE_SCALE: f64 = 10_000.0;
const LOSS_SCALE: f64 = 10.0;

#[derive(Clone, Debug, Default)]
pub struct LfqFeatures {
    q: [f64; AVERAGES],
    q_var: [f64; AVERAGES],
    limit: [f64; AVERAGES],
    inter_arrival: [f64; AVERAGES],
    inter_departure: [f64; AVERAGES],
    since_loss: [f64; AVERAGES],
    arrivals: u64,
    departures: u64,
    last_arrival: Time,
    last_departure: Time,
    last_loss: Time,
}

/// Fold sample `x` into every average.
#[inline]
fn update(avg: &mut [f64; AVERAGES], x: f64) {
    for (v, w) in avg.iter_mut().zip(WEIGHTS) {
        *v = w * x + (1.0 - w) * *v;
    }
}

impl LfqFeatures {
    /// A packet of this flow arrived; `backlog` is the flow queue's length before it
    /// (`FeatureVector::updateNewPacket`).
    pub fn on_arrival(&mut self, now: Time, backlog: u32) {
        self.arrivals += 1;
        let b = backlog as f64 / QUEUE_SCALE;
        update(&mut self.q, b);
        for ((var, m), w) in self.q_var.iter_mut().zip(self.q).zip(WEIGHTS) {
            let d = m - b;
            *var = w * d * d + (1.0 - w) * *var;
        }
        update(&mut self.inter_arrival, secs(now - self.last_arrival));
        self.last_arrival = now;
    }

    /// The flow's buffer limit after a decision (`FeatureVector::updateQueue`).
    pub fn on_limit(&mut self, limit: u32) {
        update(&mut self.limit, limit as f64 / QUEUE_SCALE);
    }

    /// The arrival was admitted or (`dropped`) discarded (`FeatureVector::updateNewLoss`).
    pub fn on_admission(&mut self, now: Time, dropped: bool) {
        if dropped {
            self.last_loss = now;
        }
        update(
            &mut self.since_loss,
            secs(now - self.last_loss) / LOSS_SCALE,
        );
    }

    /// A packet of this flow left (`FeatureVector::updateNewDeparture`).
    pub fn on_departure(&mut self, now: Time) {
        self.departures += 1;
        update(&mut self.inter_departure, secs(now - self.last_departure));
        self.last_departure = now;
    }

    /// A packet of this flow was dropped from inside the queue (overall limit; the
    /// authors' per-flow queues never see this, so only the time of the loss is kept).
    pub fn on_loss(&mut self, now: Time) {
        self.last_loss = now;
    }

    /// Arrivals seen.
    pub fn arrivals(&self) -> u64 {
        self.arrivals
    }

    /// The 60 features, feature-major: `NAMES[f]` with weight `WEIGHTS[k]` at `f·10 + k`.
    pub fn vector(&self) -> [f64; LEN] {
        let mut v = [0.0; LEN];
        self.write(&mut v);
        v
    }

    /// [`vector`](Self::vector) into `v` (no allocation).
    pub fn write(&self, v: &mut [f64; LEN]) {
        let seen = self.arrivals.min(self.departures) as f64;
        for k in 0..AVERAGES {
            let rate = |iat: f64| {
                if iat == 0.0 || 1.0 / WEIGHTS[k] > seen {
                    0.0
                } else {
                    1.0 / iat / RATE_SCALE
                }
            };
            v[k] = self.q[k];
            v[AVERAGES + k] = self.q_var[k].sqrt();
            v[2 * AVERAGES + k] = self.limit[k];
            v[3 * AVERAGES + k] = rate(self.inter_arrival[k]);
            v[4 * AVERAGES + k] = rate(self.inter_departure[k]);
            v[5 * AVERAGES + k] = self.since_loss[k];
        }
    }
}


/// PyTorch's `leaky_relu` default negative slope (the authors call it without one).
const LEAKY_SLOPE: f32 = 0.01;
/// `rl-internal-queue-disc.cc`: `MIN_QUEUE_SIZE`, `MAX_QUEUE_SIZE`.
pub const MIN_LIMIT: u32 = 1;
pub const MAX_LIMIT: u32 = 1000;

/// The immutable network, shared by every copy of a qdisc (forks included).
#[derive(Debug)]
pub struct LfqNet {
    layers: [Layer; 4],
}

impl LfqNet {
    /// Parse safetensors bytes; the error is the end of a sentence ("is not ...").
    pub fn parse(bytes: &[u8]) -> Result<LfqNet, String> {
        let t = Tensors::parse(bytes)?;
        Ok(LfqNet {
            layers: read_chain(&t, ["fc1", "fc2", "fc3", "fc4"], LEN)?,
        })
    }

    /// Multiply-adds per evaluation.
    pub fn macs(&self) -> usize {
        self.layers.iter().map(Layer::macs).sum()
    }
}

/// The network with this qdisc's own scratch buffers.
#[derive(Clone, Debug)]
pub struct LfqActor {
    net: Arc<LfqNet>,
    a: Vec<f32>,
    b: Vec<f32>,
    /// [`ROWS`] rows of `stride` activations for batched evaluation.
    rows_a: Vec<f32>,
    rows_b: Vec<f32>,
    stride: usize,
}

impl LfqActor {
    pub fn new(net: Arc<LfqNet>) -> LfqActor {
        let widest = net
            .layers
            .iter()
            .map(|l| padded(l.outputs).max(l.inputs))
            .max();
        let n = widest.unwrap_or(LEN);
        LfqActor {
            net,
            a: vec![0.0; n],
            b: vec![0.0; n],
            rows_a: vec![0.0; ROWS * n],
            rows_b: vec![0.0; ROWS * n],
            stride: n,
        }
    }

    pub fn net(&self) -> &LfqNet {
        &self.net
    }

    /// The network's raw output for one feature vector.
    pub fn output(&mut self, features: &[f64; LEN]) -> f32 {
        let [l1, l2, l3, l4] = &self.net.layers;
        for (a, f) in self.a.iter_mut().zip(features) {
            *a = *f as f32;
        }
        let (a, b) = (&mut self.a, &mut self.b);
        l1.forward(&a[..LEN], &mut b[..padded(l1.outputs)]);
        leaky(&mut b[..l1.outputs], LEAKY_SLOPE);
        l2.forward(&b[..l2.inputs], &mut a[..padded(l2.outputs)]);
        leaky(&mut a[..l2.outputs], LEAKY_SLOPE);
        l3.forward(&a[..l3.inputs], &mut b[..padded(l3.outputs)]);
        leaky(&mut b[..l3.outputs], LEAKY_SLOPE);
        l4.forward(&b[..l4.inputs], &mut a[..BLOCK]);
        a[0]
    }

    /// The raw outputs for many feature vectors (`features`: [`LEN`] values each),
    /// [`ROWS`] at a time (equal to [`output`](Self::output) on each, bit for bit, widened
    /// to `f64`), appended to `out`.
    pub fn outputs(&mut self, features: &[f64], out: &mut Vec<f64>) {
        let mut chunks = features.chunks_exact(ROWS * LEN);
        for chunk in &mut chunks {
            let [l1, l2, l3, l4] = &self.net.layers;
            let (n, a, b) = (self.stride, &mut self.rows_a, &mut self.rows_b);
            for (r, f) in chunk.chunks_exact(LEN).enumerate() {
                for (a, f) in a[r * n..][..LEN].iter_mut().zip(f) {
                    *a = *f as f32;
                }
            }
            let layer = |l: &Layer, x: &mut Vec<f32>, y: &mut Vec<f32>, act: bool| {
                l.forward_rows(x, n, y, n);
                if act {
                    for r in 0..ROWS {
                        leaky(&mut y[r * n..][..l.outputs], LEAKY_SLOPE);
                    }
                }
            };
            layer(l1, a, b, true);
            layer(l2, b, a, true);
            layer(l3, a, b, true);
            layer(l4, b, a, false);
            out.extend((0..ROWS).map(|r| a[r * n] as f64));
        }
        for f in chunks.remainder().chunks_exact(LEN) {
            if let Ok(f) = f.try_into() {
                let y = self.output(f);
                out.push(y as f64);
            }
        }
    }

    /// The buffer limit for one feature vector: the output rounded (half away from zero,
    /// C++ `std::round`) and clamped to [1, 1000]; NaN gives 1.
    pub fn limit(&mut self, features: &[f64; LEN]) -> u32 {
        let y = self.output(features).round();
        if y.is_nan() {
            return MIN_LIMIT;
        }
        y.clamp(MIN_LIMIT as f32, MAX_LIMIT as f32) as u32
    }
}

/// LFQ behind the seam: each flow queue's features and, with weights, the network deciding
/// its limit on the arrivals the qdisc's [`Learned`](super::Learned) marks `decide`.
#[derive(Clone, Debug)]
pub struct LfqPolicy {
    feats: Vec<LfqFeatures>,
    actor: Option<LfqActor>,
    /// The decision's input (boxed: the policy stays small).
    x: Box<[f64; LEN]>,
    /// Queues whose limit an agent set (`per_flow_limit` through `set_qdisc`): the policy
    /// leaves them alone from then on, as the authors' A/B runs keep b ± 1 after the
    /// decision (`rl-internal-queue-disc.cc`: no more `do_regular_logic` once `decided`).
    pinned: Vec<bool>,
}

impl LfqPolicy {
    /// The features of `at.queues` flow queues; `actor`: the network deciding limits.
    pub fn new(actor: Option<LfqActor>, at: &Attach) -> LfqPolicy {
        LfqPolicy {
            feats: vec![LfqFeatures::default(); at.queues],
            actor,
            x: Box::new([0.0; LEN]),
            pinned: vec![false; at.queues],
        }
    }

    /// The features of flow queue `q`.
    pub fn features_of(&self, q: usize) -> Option<&LfqFeatures> {
        self.feats.get(q)
    }
}

impl LearnedPolicy for LfqPolicy {
    const KIND: &'static str = "lfq";
    const NAME: &'static str = "LFQ";
    const HOOKS: &'static [Hook] = &[Hook::FlowLimit];

    fn parse(bytes: &[u8], at: &Attach) -> Result<LfqPolicy, String> {
        let net = Arc::new(LfqNet::parse(bytes)?);
        Ok(LfqPolicy::new(Some(LfqActor::new(net)), at))
    }

    /// The features alone.
    fn observer(at: &Attach) -> Option<LfqPolicy> {
        Some(LfqPolicy::new(None, at))
    }

    /// The authors' `RlInternalQueueDisc::DoEnqueue`: features of the arrival, a decision
    /// on the flow's limit, then admission under the new limit.
    #[inline]
    fn on(&mut self, ev: Event) -> Decision {
        match ev {
            Event::Arrival {
                queue,
                now,
                backlog,
                limit,
                decide,
            } => {
                let Some(f) = self.feats.get_mut(queue) else {
                    return Decision::Keep;
                };
                f.on_arrival(now, backlog);
                let mut d = Decision::Keep;
                let mut limit = limit.unwrap_or(u32::MAX);
                if let Some(a) = self.actor.as_mut() {
                    if decide && !self.pinned[queue] {
                        f.write(&mut self.x);
                        limit = a.limit(&self.x);
                        d = Decision::FlowLimit(limit);
                    }
                }
                f.on_limit(limit);
                d
            }
            Event::Admission {
                queue,
                now,
                dropped,
            } => {
                if let Some(f) = self.feats.get_mut(queue) {
                    f.on_admission(now, dropped);
                }
                Decision::Keep
            }
            Event::Departure { queue, now } => {
                if let Some(f) = self.feats.get_mut(queue) {
                    f.on_departure(now);
                }
                Decision::Keep
            }
            Event::Loss { queue, now } => {
                if let Some(f) = self.feats.get_mut(queue) {
                    f.on_loss(now);
                }
                Decision::Keep
            }
            Event::Pinned { queue } => {
                if let Some(p) = self.pinned.get_mut(queue) {
                    *p = true;
                }
                Decision::Keep
            }
            Event::Update { .. } => Decision::Keep,
        }
    }

    fn row_len(&self) -> usize {
        LEN
    }

    /// The network's raw output (before rounding) per 60-feature row.
    fn infer(&mut self, rows: &[f64], batch: bool, out: &mut Vec<f64>) {
        let Some(a) = self.actor.as_mut() else {
            return;
        };
        if batch {
            a.outputs(rows, out);
        } else {
            for f in rows.chunks_exact(LEN) {
                if let Ok(f) = f.try_into() {
                    out.push(a.output(f) as f64);
                }
            }
        }
    }

    /// `NAMES[f]@WEIGHTS[k]`, in vector order.
    fn feature_names(&self) -> Vec<String> {
        NAMES
            .iter()
            .flat_map(|n| WEIGHTS.iter().map(move |w| format!("{n}@{w}")))
            .collect()
    }

    fn features(&self, queue: usize) -> Option<Vec<f64>> {
        self.feats.get(queue).map(|f| f.vector().to_vec())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::policy::nn::write_safetensors as safetensors;
    use crate::policy::{Attach, Policy};
    use crate::time::MS;

    /// A network of width 1 whose output is `c` whatever the features.
    pub(crate) fn constant(c: f32) -> Vec<u8> {
        safetensors(&[
            ("fc1.weight", vec![1, LEN], vec![0.0; LEN]),
            ("fc1.bias", vec![1], vec![0.0]),
            ("fc2.weight", vec![1, 1], vec![0.0]),
            ("fc2.bias", vec![1], vec![0.0]),
            ("fc3.weight", vec![1, 1], vec![0.0]),
            ("fc3.bias", vec![1], vec![0.0]),
            ("fc4.weight", vec![1, 1], vec![0.0]),
            ("fc4.bias", vec![1], vec![c]),
        ])
    }

    /// A tiny network: widths 2, 2, 2; fc1 reads features 0 and 1.
    fn tiny() -> Vec<u8> {
        tiny_with(LEN)
    }

    /// [`tiny`] with `inputs` columns in fc1.
    fn tiny_with(inputs: usize) -> Vec<u8> {
        let mut w1 = vec![0.0; 2 * inputs];
        w1[0] = 1.0; // h0 = x0
        w1[inputs + 1] = -1.0; // h1 = -x1
        safetensors(&[
            ("fc1.weight", vec![2, inputs], w1),
            ("fc1.bias", vec![2], vec![0.0, 0.0]),
            ("fc2.weight", vec![2, 2], vec![1.0, 0.0, 0.0, 1.0]),
            ("fc2.bias", vec![2], vec![0.0, 0.0]),
            ("fc3.weight", vec![2, 2], vec![1.0, 0.0, 0.0, 1.0]),
            ("fc3.bias", vec![2], vec![0.0, 0.0]),
            ("fc4.weight", vec![1, 2], vec![1.0, 1.0]),
            ("fc4.bias", vec![1], vec![10.0]),
        ])
    }

    #[test]
    fn evaluates_leaky_relu_layers_and_clamps() {
        let mut p = LfqActor::new(Arc::new(LfqNet::parse(&tiny()).unwrap()));
        let mut x = [0.0; LEN];
        x[0] = 5.0;
        x[1] = 100.0; // h1 = -100 → leaky -1 → -0.01 → -0.0001 after three layers
        let y = p.output(&x);
        assert!((y - (10.0 + 5.0 - 0.0001)).abs() < 1e-5, "{y}");
        assert_eq!(p.limit(&x), 15);
        x[0] = 5000.0;
        assert_eq!(p.limit(&x), MAX_LIMIT);
        x[0] = f64::NAN;
        assert_eq!(p.limit(&x), MIN_LIMIT);
        assert_eq!(p.net().macs(), 2 * LEN + 4 + 4 + 2);
    }

    /// A network of widths `h` with pseudo-random weights in [-0.5, 0.5).
    fn random(h: usize) -> Vec<u8> {
        let mut state = 12345u64;
        let mut v = |n: usize| -> Vec<f32> {
            (0..n)
                .map(|_| {
                    state = state.wrapping_mul(6364136223846793005).wrapping_add(1);
                    (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5
                })
                .collect()
        };
        safetensors(&[
            ("fc1.weight", vec![h, LEN], v(h * LEN)),
            ("fc1.bias", vec![h], v(h)),
            ("fc2.weight", vec![h, h], v(h * h)),
            ("fc2.bias", vec![h], v(h)),
            ("fc3.weight", vec![h, h], v(h * h)),
            ("fc3.bias", vec![h], v(h)),
            ("fc4.weight", vec![1, h], v(h)),
            ("fc4.bias", vec![1], v(1)),
        ])
    }

    /// The textbook evaluation over PyTorch's `[out][in]` weights, in the same order.
    fn reference(bytes: &[u8], h: usize, x: &[f64; LEN]) -> f32 {
        let header_len = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
        let header: serde_json::Value = serde_json::from_slice(&bytes[8..8 + header_len]).unwrap();
        let data = &bytes[8 + header_len..];
        let t = |name: &str| -> Vec<f32> {
            let o = &header[name]["data_offsets"];
            let (s, e) = (o[0].as_u64().unwrap() as usize, o[1].as_u64().unwrap() as usize);
            data[s..e]
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
                .collect()
        };
        let mut a: Vec<f32> = x.iter().map(|v| *v as f32).collect();
        for (k, outs) in [(1, h), (2, h), (3, h), (4, 1)] {
            let (w, b) = (t(&format!("fc{k}.weight")), t(&format!("fc{k}.bias")));
            let mut y: Vec<f32> = (0..outs)
                .map(|j| {
                    let mut s = b[j];
                    for (i, xi) in a.iter().enumerate() {
                        s += xi * w[j * a.len() + i];
                    }
                    s
                })
                .collect();
            if k < 4 {
                leaky(&mut y, LEAKY_SLOPE);
            }
            a = y;
        }
        a[0]
    }

    #[test]
    fn blocked_and_batched_layouts_give_the_textbook_bits() {
        // Widths below, at and across a block, as the shipped (64) and the paper's (256).
        for h in [5, BLOCK, BLOCK + 7, 64, 256] {
            let bytes = random(h);
            let mut p = LfqActor::new(Arc::new(LfqNet::parse(&bytes).unwrap()));
            let xs: Vec<[f64; LEN]> = (0..(2 * ROWS + 3))
                .map(|r| std::array::from_fn(|i| ((r * 7 + i * 3) % 11) as f64 / 5.0 - 0.7))
                .collect();
            let mut batched = Vec::new();
            p.outputs(&xs.concat(), &mut batched);
            assert_eq!(batched.len(), xs.len());
            for (x, yb) in xs.iter().zip(&batched) {
                let want = reference(&bytes, h, x);
                assert_eq!(p.output(x).to_bits(), want.to_bits(), "width {h}");
                assert_eq!((*yb as f32).to_bits(), want.to_bits(), "width {h}, batched");
            }
        }
    }

    #[test]
    fn bad_files_give_one_sentence() {
        let e = LfqNet::parse(b"abc").unwrap_err();
        assert!(e.contains("shorter"), "{e}");
        let mut f = tiny();
        f.truncate(f.len() - 4);
        let e = LfqNet::parse(&f).unwrap_err();
        assert!(e.contains("fc4.bias"), "{e}");
        let e = LfqNet::parse(&tiny_with(7)).unwrap_err();
        assert!(e.contains("shape [2, 7], expected [2, 60]"), "{e}");
        let e = Policy::load("lfq", "/nonexistent/w.safetensors", &Attach::default()).unwrap_err();
        assert!(e.starts_with("LFQ policy file") && !e.contains('\n'), "{e}");
    }

    #[test]
    fn weights_are_the_authors() {
        assert_eq!(WEIGHTS[0], 1.0 / 32.0);
        assert_eq!(WEIGHTS[9], 1.0 / 16384.0);
    }

    #[test]
    fn steady_arrivals_give_their_rate_and_a_constant_queue_no_spread() {
        let mut f = LfqFeatures::default();
        for i in 1..=40_000u64 {
            f.on_arrival(i * MS, 5);
            f.on_limit(100);
            f.on_admission(i * MS, false);
            f.on_departure(i * MS + MS / 2);
        }
        let v = f.vector();
        // 40 000 samples: even the slowest average (memory 16 384) is within e^-2.4.
        for k in 0..AVERAGES {
            let tol = (1.0 - WEIGHTS[k]).powi(40_000) + 1e-9;
            assert!((v[k] - 0.05).abs() <= 0.05 * tol, "queue {k}");
            assert!(v[AVERAGES + k] < 0.05 * tol.sqrt() + 1e-9, "no spread {k}");
            assert!((v[2 * AVERAGES + k] - 1.0).abs() <= tol, "limit {k}");
            // 1 packet per ms = 1000 pps = 0.1 in units of 10 kpps.
            assert!(
                (v[3 * AVERAGES + k] - 0.1).abs() < 0.1 * tol * 1.2,
                "in {k}"
            );
            assert!(
                (v[4 * AVERAGES + k] - 0.1).abs() < 0.1 * tol * 1.2,
                "out {k}"
            );
        }
        // No loss: the time since the run's start, 40 s / 10, seen by the fastest average
        // a memory (32 ms) late.
        assert!((v[5 * AVERAGES] - 4.0).abs() < 0.01, "{}", v[5 * AVERAGES]);
    }

    #[test]
    fn rates_wait_for_enough_packets_and_losses_reset_the_clock() {
        let mut f = LfqFeatures::default();
        for i in 1..=100u64 {
            f.on_arrival(i * MS, if i % 2 == 0 { 0 } else { 10 });
            f.on_admission(i * MS, i == 50);
            f.on_departure(i * MS);
        }
        let v = f.vector();
        assert!(v[3 * AVERAGES] > 0.0, "weight 1/32: used after 32 packets");
        assert!(
            v[3 * AVERAGES + 1] > 0.0,
            "weight 1/64: used after 64 packets"
        );
        assert_eq!(v[3 * AVERAGES + 2], 0.0, "weight 1/128: not before 128");
        assert!(v[AVERAGES] > 0.0, "a 0/10 queue has a spread");
        // The last loss was at 50 ms: the fastest average has moved towards 0.005 from
        // the ~0.005 it held before (time since the start / 10 until then).
        assert!(v[5 * AVERAGES] < 0.006, "{}", v[5 * AVERAGES]);
    }
}
