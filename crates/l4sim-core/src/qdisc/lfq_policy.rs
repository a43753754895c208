//! LFQ's policy network evaluated inside the core (paper 001 §III; the authors' `RlNet`
//! in `src/traffic-control/helper/rl-net.cc`): 60 features → `fc1` → leaky ReLU → `fc2`
//! → leaky ReLU → `fc3` → leaky ReLU → `fc4` → one output, the flow's buffer limit in
//! packets, rounded and clamped to [1, 1000] (`rl-internal-queue-disc.cc`
//! `do_regular_logic`, `MIN_QUEUE_SIZE` / `MAX_QUEUE_SIZE`). The authors use width 256;
//! the hidden widths here are read from the file, so smaller networks load too.
//!
//! # Weights file
//!
//! A [safetensors](https://huggingface.co/docs/safetensors) file (8-byte little-endian
//! header length, a JSON header, raw little-endian data) with the tensors `fc1.weight`
//! `[h1, 60]`, `fc1.bias` `[h1]`, `fc2.weight` `[h2, h1]`, `fc2.bias` `[h2]`,
//! `fc3.weight` `[h3, h2]`, `fc3.bias` `[h3]`, `fc4.weight` `[1, h3]`, `fc4.bias` `[1]`
//! (PyTorch `nn.Linear` names and `[out, in]` layout), dtype `F32` or `F64`; other
//! tensors are ignored. `python/l4sim/agents/lfq.py` writes it. The header is read with
//! `serde_json` (the safetensors crate is not available offline; the format is small).
//!
//! Evaluation is in `f32` with preallocated buffers: each output is its bias plus
//! `x_i · W[j, i]` added for each input `i` in order, so every machine (and every layout
//! below) gives the same bits. The weights are stored in blocks of [`BLOCK`] outputs,
//! input-major inside a block (`[block][input][BLOCK]`, the last block padded with zeros):
//! one block's accumulators stay in vector registers over the whole input loop and the
//! weights stream through memory once, in order. Plain Rust on fixed-size arrays, which
//! the compiler vectorises (SSE2 on a default x86-64 build).

use std::sync::Arc;

use super::lfq_features::LEN;

/// PyTorch's `leaky_relu` default negative slope (the authors call it without one).
const LEAKY_SLOPE: f32 = 0.01;
/// `rl-internal-queue-disc.cc`: `MIN_QUEUE_SIZE`, `MAX_QUEUE_SIZE`.
pub const MIN_LIMIT: u32 = 1;
pub const MAX_LIMIT: u32 = 1000;

/// Outputs computed together: 32 `f32` accumulators are eight 128-bit registers, half
/// of x86-64's sixteen (`benchmarks/bench_lfq.py` measured 8, 16, 32 and 64).
pub const BLOCK: usize = 32;

#[derive(Debug)]
struct Layer {
    inputs: usize,
    outputs: usize,
    /// `[outputs / BLOCK rounded up][inputs][BLOCK]` of PyTorch's `W[out][in]`.
    w: Vec<[f32; BLOCK]>,
    /// The biases, by block (padding zero).
    b: Vec<[f32; BLOCK]>,
}

/// The immutable network, shared by every copy of a qdisc (forks included).
#[derive(Debug)]
pub struct LfqNet {
    layers: [Layer; 4],
}

/// A policy: the shared network and this qdisc's own scratch buffers.
#[derive(Clone, Debug)]
pub struct LfqPolicy {
    net: Arc<LfqNet>,
    a: Vec<f32>,
    b: Vec<f32>,
    /// [`ROWS`] rows of `stride` activations for batched evaluation.
    rows_a: Vec<f32>,
    rows_b: Vec<f32>,
    stride: usize,
}

impl LfqNet {
    /// Read a weights file; the error is one sentence naming the file.
    pub fn load(path: &str) -> Result<LfqNet, String> {
        let bytes = std::fs::read(path)
            .map_err(|e| format!("LFQ policy file {path:?} cannot be read: {e}"))?;
        LfqNet::parse(&bytes).map_err(|e| format!("LFQ policy file {path:?} {e}"))
    }

    /// Parse safetensors bytes; the error is the end of a sentence ("is not ...").
    pub fn parse(bytes: &[u8]) -> Result<LfqNet, String> {
        let bad = |what: String| Err(format!("is not a valid weights file: {what}"));
        if bytes.len() < 8 {
            return bad("it is shorter than the 8-byte safetensors header length".into());
        }
        let n = u64::from_le_bytes(bytes[..8].try_into().unwrap_or_default()) as usize;
        let Some(header) = bytes.get(8..8usize.saturating_add(n)) else {
            return bad("its header length exceeds the file".into());
        };
        let data = &bytes[8 + n..];
        let header: serde_json::Value = match serde_json::from_slice(header) {
            Ok(h) => h,
            Err(e) => return bad(format!("its header is not JSON ({e})")),
        };
        let tensor = |name: &str, shape: &[usize]| -> Result<Vec<f32>, String> {
            let Some(t) = header.get(name) else {
                return Err(format!(
                    "is not a valid weights file: it has no tensor {name}"
                ));
            };
            let got = usizes(t, "shape");
            if got != shape {
                return Err(format!(
                    "is not a valid weights file: {name} has shape {got:?}, expected {shape:?}"
                ));
            }
            let offsets = usizes(t, "data_offsets");
            let count: usize = shape.iter().product();
            let (size, f64s) = match t.get("dtype").and_then(|d| d.as_str()) {
                Some("F32") => (4, false),
                Some("F64") => (8, true),
                other => {
                    return Err(format!(
                    "is not a valid weights file: {name} has dtype {other:?}, expected F32 or F64"
                ))
                }
            };
            let raw = match offsets[..] {
                [s, e] if e >= s && e - s == count * size => data.get(s..e),
                _ => None,
            };
            let Some(raw) = raw else {
                return Err(format!(
                    "is not a valid weights file: {name}'s data offsets do not fit its shape and the file"
                ));
            };
            Ok(if f64s {
                raw.chunks_exact(8)
                    .map(|c| f64::from_le_bytes(c.try_into().unwrap_or_default()) as f32)
                    .collect()
            } else {
                raw.chunks_exact(4)
                    .map(|c| f32::from_le_bytes(c.try_into().unwrap_or_default()))
                    .collect()
            })
        };
        let width = |name: &str| -> Result<usize, String> {
            header
                .get(name)
                .and_then(|t| t.get("shape"))
                .and_then(|s| s.get(0))
                .and_then(|d| d.as_u64())
                .map(|d| d as usize)
                .filter(|&d| d > 0)
                .ok_or_else(|| format!("is not a valid weights file: it has no tensor {name}"))
        };
        let dims = [
            LEN,
            width("fc1.weight")?,
            width("fc2.weight")?,
            width("fc3.weight")?,
            1,
        ];
        let layer = |k: usize| -> Result<Layer, String> {
            let (i, o) = (dims[k], dims[k + 1]);
            let w = tensor(&format!("fc{}.weight", k + 1), &[o, i])?;
            let b = tensor(&format!("fc{}.bias", k + 1), &[o])?;
            let blocks = o.div_ceil(BLOCK);
            let mut wb = vec![[0.0; BLOCK]; blocks * i];
            let mut bb = vec![[0.0; BLOCK]; blocks];
            for r in 0..o {
                let (blk, j) = (r / BLOCK, r % BLOCK);
                bb[blk][j] = b[r];
                for c in 0..i {
                    wb[blk * i + c][j] = w[r * i + c];
                }
            }
            Ok(Layer {
                inputs: i,
                outputs: o,
                w: wb,
                b: bb,
            })
        };
        Ok(LfqNet {
            layers: [layer(0)?, layer(1)?, layer(2)?, layer(3)?],
        })
    }

    /// Multiply-adds per evaluation.
    pub fn macs(&self) -> usize {
        self.layers.iter().map(|l| l.inputs * l.outputs).sum()
    }
}

/// The list of integers under `key` of a tensor's header entry (empty if none).
fn usizes(t: &serde_json::Value, key: &str) -> Vec<usize> {
    t.get(key)
        .and_then(|s| s.as_array())
        .map(|s| {
            s.iter()
                .filter_map(|d| d.as_u64())
                .map(|d| d as usize)
                .collect()
        })
        .unwrap_or_default()
}

/// `y = b + W x`, block by block; `y` holds `outputs` rounded up to [`BLOCK`].
#[inline]
fn affine(l: &Layer, x: &[f32], y: &mut [f32]) {
    for ((out, bias), w) in y
        .chunks_exact_mut(BLOCK)
        .zip(&l.b)
        .zip(l.w.chunks_exact(l.inputs))
    {
        let mut acc = *bias;
        for (xi, row) in x.iter().zip(w) {
            for (a, wj) in acc.iter_mut().zip(row) {
                *a += xi * wj;
            }
        }
        out.copy_from_slice(&acc);
    }
}

/// [`affine`] for [`ROWS`] inputs at once (row `r` at `x[r * xs..]`, its output at
/// `y[r * ys..]`), [`SUB`] outputs of a block at a time so that the `ROWS · SUB`
/// accumulators fit the registers: each weight is loaded once for all rows; every output
/// gets the same additions in the same order as [`affine`], so the same bits.
#[inline]
fn affine_rows(l: &Layer, x: &[f32], xs: usize, y: &mut [f32], ys: usize) {
    for (k, (bias, w)) in l.b.iter().zip(l.w.chunks_exact(l.inputs)).enumerate() {
        for s in (0..BLOCK).step_by(SUB) {
            let b: [f32; SUB] = bias[s..s + SUB].try_into().unwrap_or_default();
            let mut acc = [b; ROWS];
            for (i, row) in w.iter().enumerate() {
                let row = &row[s..s + SUB];
                for (r, acc) in acc.iter_mut().enumerate() {
                    let xi = x[r * xs + i];
                    for (a, wj) in acc.iter_mut().zip(row) {
                        *a += xi * wj;
                    }
                }
            }
            for (r, acc) in acc.iter().enumerate() {
                y[r * ys + k * BLOCK + s..][..SUB].copy_from_slice(acc);
            }
        }
    }
}

/// Outputs per row computed together by [`affine_rows`]: 4 rows x 8 = eight registers.
const SUB: usize = 8;

/// Feature vectors evaluated together by [`LfqPolicy::outputs`] (batching across flows;
/// `benchmarks/bench_lfq.py` measures it).
pub const ROWS: usize = 4;

/// `n` rounded up to whole blocks.
fn padded(n: usize) -> usize {
    n.div_ceil(BLOCK) * BLOCK
}

#[inline]
fn leaky(y: &mut [f32]) {
    for v in y {
        if *v < 0.0 {
            *v *= LEAKY_SLOPE;
        }
    }
}

impl LfqPolicy {
    pub fn new(net: Arc<LfqNet>) -> LfqPolicy {
        let widest = net
            .layers
            .iter()
            .map(|l| padded(l.outputs).max(l.inputs))
            .max();
        let n = widest.unwrap_or(LEN);
        LfqPolicy {
            net,
            a: vec![0.0; n],
            b: vec![0.0; n],
            rows_a: vec![0.0; ROWS * n],
            rows_b: vec![0.0; ROWS * n],
            stride: n,
        }
    }

    pub fn load(path: &str) -> Result<LfqPolicy, String> {
        Ok(LfqPolicy::new(Arc::new(LfqNet::load(path)?)))
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
        affine(l1, &a[..LEN], &mut b[..padded(l1.outputs)]);
        leaky(&mut b[..l1.outputs]);
        affine(l2, &b[..l2.inputs], &mut a[..padded(l2.outputs)]);
        leaky(&mut a[..l2.outputs]);
        affine(l3, &a[..l3.inputs], &mut b[..padded(l3.outputs)]);
        leaky(&mut b[..l3.outputs]);
        affine(l4, &b[..l4.inputs], &mut a[..BLOCK]);
        a[0]
    }

    /// The raw outputs for many feature vectors, [`ROWS`] at a time (equal to
    /// [`output`](Self::output) on each, bit for bit); `out` is cleared first.
    pub fn outputs(&mut self, features: &[[f64; LEN]], out: &mut Vec<f32>) {
        out.clear();
        let mut chunks = features.chunks_exact(ROWS);
        for chunk in &mut chunks {
            let [l1, l2, l3, l4] = &self.net.layers;
            let (n, a, b) = (self.stride, &mut self.rows_a, &mut self.rows_b);
            for (r, f) in chunk.iter().enumerate() {
                for (a, f) in a[r * n..][..LEN].iter_mut().zip(f) {
                    *a = *f as f32;
                }
            }
            let layer = |l: &Layer, x: &mut Vec<f32>, y: &mut Vec<f32>, act: bool| {
                affine_rows(l, x, n, y, n);
                if act {
                    for r in 0..ROWS {
                        leaky(&mut y[r * n..][..l.outputs]);
                    }
                }
            };
            layer(l1, a, b, true);
            layer(l2, b, a, true);
            layer(l3, a, b, true);
            layer(l4, b, a, false);
            out.extend((0..ROWS).map(|r| a[r * n]));
        }
        for f in chunks.remainder() {
            let y = self.output(f);
            out.push(y);
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

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A safetensors file of F32 tensors `(name, shape, values)`.
    pub(crate) fn safetensors(tensors: &[(&str, Vec<usize>, Vec<f32>)]) -> Vec<u8> {
        let mut header = serde_json::Map::new();
        let mut data = Vec::new();
        for (name, shape, v) in tensors {
            let s = data.len();
            data.extend(v.iter().flat_map(|x| x.to_le_bytes()));
            header.insert(
                name.to_string(),
                serde_json::json!({"dtype": "F32", "shape": shape, "data_offsets": [s, data.len()]}),
            );
        }
        let h = serde_json::to_vec(&header).unwrap();
        let mut out = (h.len() as u64).to_le_bytes().to_vec();
        out.extend(h);
        out.extend(data);
        out
    }

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
        let mut p = LfqPolicy::new(Arc::new(LfqNet::parse(&tiny()).unwrap()));
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
            let o = usizes(&header[name], "data_offsets");
            data[o[0]..o[1]]
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
                leaky(&mut y);
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
            let mut p = LfqPolicy::new(Arc::new(LfqNet::parse(&bytes).unwrap()));
            let xs: Vec<[f64; LEN]> = (0..(2 * ROWS + 3))
                .map(|r| std::array::from_fn(|i| ((r * 7 + i * 3) % 11) as f64 / 5.0 - 0.7))
                .collect();
            let mut batched = Vec::new();
            p.outputs(&xs, &mut batched);
            assert_eq!(batched.len(), xs.len());
            for (x, yb) in xs.iter().zip(&batched) {
                let want = reference(&bytes, h, x);
                assert_eq!(p.output(x).to_bits(), want.to_bits(), "width {h}");
                assert_eq!(yb.to_bits(), want.to_bits(), "width {h}, batched");
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
        let e = LfqNet::load("/nonexistent/w.safetensors").unwrap_err();
        assert!(e.starts_with("LFQ policy file") && !e.contains('\n'), "{e}");
    }
}
