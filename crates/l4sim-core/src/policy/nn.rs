//! The one reader of learned policies' weights: small dense networks read from
//! [safetensors](https://huggingface.co/docs/safetensors) files (LFQ's network,
//! `policy/lfq.rs`; A3C-L4S's actor, `policy/a3c.rs`).
//!
//! The format: 8-byte little-endian header length, a JSON header naming each tensor's
//! `dtype`, `shape` and `data_offsets` into the raw little-endian data that follows. Only
//! `F32` and `F64` tensors are read (as `f32`). The header is read with `serde_json` (the
//! safetensors crate is not available offline; the format is small). Layers use PyTorch
//! `nn.Linear`'s names and `[out, in]` weight layout; evaluation is in `f32` with
//! preallocated buffers: `y = b`, then `y += x_i · W[:, i]` for each input in order (the
//! same sums on every machine, in every layout below).

use serde_json::Value;

/// A parsed safetensors file: its header and data section.
#[derive(Debug)]
pub struct Tensors<'a> {
    header: Value,
    data: &'a [u8],
}

impl<'a> Tensors<'a> {
    /// Split and parse the file; the error ends a sentence ("... is not a valid weights
    /// file: ...").
    pub fn parse(bytes: &'a [u8]) -> Result<Tensors<'a>, String> {
        let bad = |what: &str| format!("is not a valid weights file: {what}");
        let len: [u8; 8] = bytes
            .get(..8)
            .and_then(|b| b.try_into().ok())
            .ok_or_else(|| bad("it is shorter than the 8-byte header length"))?;
        let n = u64::from_le_bytes(len) as usize;
        let end = 8usize
            .checked_add(n)
            .filter(|&e| e <= bytes.len())
            .ok_or_else(|| bad("its header length exceeds the file"))?;
        let header: Value = serde_json::from_slice(&bytes[8..end])
            .map_err(|e| bad(&format!("its header is not JSON ({e})")))?;
        Ok(Tensors {
            header,
            data: &bytes[end..],
        })
    }

    /// The shape of tensor `name`, if present.
    pub fn shape(&self, name: &str) -> Option<Vec<usize>> {
        let s = self.header.get(name)?.get("shape")?.as_array()?;
        s.iter().map(|d| d.as_u64().map(|d| d as usize)).collect()
    }

    /// Tensor `name` as `f32` values, checked against `shape`.
    pub fn get(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>, String> {
        let bad = |what: String| format!("is not a valid weights file: {what}");
        let t = self
            .header
            .get(name)
            .ok_or_else(|| bad(format!("it has no tensor {name}")))?;
        let got = self.shape(name).unwrap_or_default();
        if got != shape {
            return Err(bad(format!("{name} has shape {got:?}, expected {shape:?}")));
        }
        let size = match t.get("dtype").and_then(Value::as_str) {
            Some("F32") => 4,
            Some("F64") => 8,
            other => {
                return Err(bad(format!(
                    "{name} has dtype {other:?}, expected F32 or F64"
                )))
            }
        };
        let offsets: Vec<usize> = t
            .get("data_offsets")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_u64().map(|v| v as usize))
                    .collect()
            })
            .unwrap_or_default();
        let count: usize = shape.iter().product();
        let raw = match offsets[..] {
            [s, e] if e >= s && e - s == count * size => self.data.get(s..e),
            _ => None,
        }
        .ok_or_else(|| {
            bad(format!(
                "{name}'s data offsets do not fit its shape and the file"
            ))
        })?;
        let values: Vec<f32> = if size == 8 {
            raw.chunks_exact(8)
                .map(|c| f64::from_le_bytes(c.try_into().unwrap_or_default()) as f32)
                .collect()
        } else {
            raw.chunks_exact(4)
                .map(|c| f32::from_le_bytes(c.try_into().unwrap_or_default()))
                .collect()
        };
        // A NaN weight makes every output NaN (read as "no limit" or "no drop" by the
        // qdiscs), an infinite one NaN or inf: refused as the file's error, as f32 keeps it
        // (an F64 value beyond f32's range is infinite here too).
        if let Some(i) = values.iter().position(|v| !v.is_finite()) {
            return Err(bad(format!(
                "{name}[{i}] is {}, not a finite number",
                values[i]
            )));
        }
        Ok(values)
    }
}

/// Outputs computed together: 32 `f32` accumulators are eight 128-bit registers, half
/// of x86-64's sixteen (`benchmarks/bench_lfq.py` measured 8, 16, 32 and 64).
pub const BLOCK: usize = 32;

/// Outputs per row computed together by [`Layer::forward_rows`]: 4 rows x 8 = eight
/// registers.
const SUB: usize = 8;

/// Input vectors evaluated together by [`Layer::forward_rows`] (batching across flows;
/// `benchmarks/bench_lfq.py` measures it).
pub const ROWS: usize = 4;

/// `n` rounded up to whole blocks: the length of a layer's output buffer.
pub fn padded(n: usize) -> usize {
    n.div_ceil(BLOCK) * BLOCK
}

/// One `nn.Linear` layer. The weights are stored in blocks of [`BLOCK`] outputs,
/// input-major inside a block (`[block][input][BLOCK]`, the last block padded with zeros):
/// one block's accumulators stay in vector registers over the whole input loop and the
/// weights stream through memory once, in order. Plain Rust on fixed-size arrays, which
/// the compiler vectorises (SSE2 on a default x86-64 build).
#[derive(Clone, Debug)]
pub struct Layer {
    pub inputs: usize,
    pub outputs: usize,
    /// `[outputs / BLOCK rounded up][inputs][BLOCK]` of PyTorch's `W[out][in]`.
    w: Vec<[f32; BLOCK]>,
    /// The biases, by block (padding zero).
    b: Vec<[f32; BLOCK]>,
}

impl Layer {
    /// Read `{prefix}.weight` (`[outputs, inputs]`) and `{prefix}.bias`; `inputs` is
    /// given, `outputs` read from the file.
    pub fn read(t: &Tensors, prefix: &str, inputs: usize) -> Result<Layer, String> {
        let wname = format!("{prefix}.weight");
        let o = match t.shape(&wname).as_deref() {
            Some([o, _]) if *o > 0 => *o,
            _ => {
                return Err(format!(
                    "is not a valid weights file: it has no 2-D tensor {wname}"
                ))
            }
        };
        let i = inputs;
        let w = t.get(&wname, &[o, i])?;
        let b = t.get(&format!("{prefix}.bias"), &[o])?;
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
    }

    /// Multiply-adds per evaluation.
    pub fn macs(&self) -> usize {
        self.inputs * self.outputs
    }

    /// `y = b + W x`, block by block: each output is its bias plus `x_i · W[j, i]` added for
    /// each input `i` in order, so every machine (and every layout) gives the same bits.
    /// `y` holds `outputs` rounded up to [`BLOCK`] ([`padded`]).
    #[inline]
    pub fn forward(&self, x: &[f32], y: &mut [f32]) {
        for ((out, bias), w) in y
            .chunks_exact_mut(BLOCK)
            .zip(&self.b)
            .zip(self.w.chunks_exact(self.inputs))
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

    /// [`forward`](Self::forward) for [`ROWS`] inputs at once (row `r` at `x[r * xs..]`, its
    /// output at `y[r * ys..]`), [`SUB`] outputs of a block at a time so that the
    /// `ROWS · SUB` accumulators fit the registers: each weight is loaded once for all
    /// rows; every output gets the same additions in the same order, so the same bits.
    #[inline]
    pub fn forward_rows(&self, x: &[f32], xs: usize, y: &mut [f32], ys: usize) {
        for (k, (bias, w)) in self
            .b
            .iter()
            .zip(self.w.chunks_exact(self.inputs))
            .enumerate()
        {
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
}

/// A chain of layers named `prefixes`, the first reading `inputs` values, each next one
/// the previous one's outputs, the last with one output (a policy's network).
pub fn read_chain<const N: usize>(
    t: &Tensors,
    prefixes: [&str; N],
    inputs: usize,
) -> Result<[Layer; N], String> {
    let mut layers = Vec::with_capacity(N);
    let mut n = inputs;
    for p in prefixes {
        let l = Layer::read(t, p, n)?;
        n = l.outputs;
        layers.push(l);
    }
    if n != 1 {
        let last = prefixes.last().copied().unwrap_or_default();
        return Err(format!(
            "is not a valid weights file: {last} must have one output"
        ));
    }
    layers
        .try_into()
        .map_err(|_| "is not a valid weights file: no layers".to_string())
}

/// ReLU in place.
#[inline]
pub fn relu(y: &mut [f32]) {
    for v in y {
        *v = v.max(0.0);
    }
}

/// Leaky ReLU in place with negative slope `slope`.
#[inline]
pub fn leaky(y: &mut [f32], slope: f32) {
    for v in y {
        if *v < 0.0 {
            *v *= slope;
        }
    }
}

/// A safetensors file from tensors (tests and tools): `(name, shape, values)`, F32.
pub fn write_safetensors(tensors: &[(&str, Vec<usize>, Vec<f32>)]) -> Vec<u8> {
    let mut header = serde_json::Map::new();
    let mut data = Vec::new();
    for (name, shape, v) in tensors {
        let start = data.len();
        for x in v {
            data.extend_from_slice(&x.to_le_bytes());
        }
        header.insert(
            (*name).to_string(),
            serde_json::json!({"dtype": "F32", "shape": shape, "data_offsets": [start, data.len()]}),
        );
    }
    let h = Value::Object(header).to_string().into_bytes();
    let mut out = (h.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(&h);
    out.extend_from_slice(&data);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dense_layer_matches_hand_computation() {
        // W = [[1, 2], [3, 4], [5, 6]], b = [0.5, -1, 0]: y = W x + b for x = [1, -1].
        let f = write_safetensors(&[
            ("l.weight", vec![3, 2], vec![1., 2., 3., 4., 5., 6.]),
            ("l.bias", vec![3], vec![0.5, -1.0, 0.0]),
        ]);
        let t = Tensors::parse(&f).unwrap();
        let d = Layer::read(&t, "l", 2).unwrap();
        let mut y = [0.0; BLOCK];
        d.forward(&[1.0, -1.0], &mut y);
        assert_eq!(y[..3], [-0.5, -2.0, -1.0]);
        relu(&mut y);
        assert_eq!(y[..3], [0.0, 0.0, 0.0]);
    }

    #[test]
    fn bad_files_are_one_sentence() {
        assert!(Tensors::parse(b"abc").unwrap_err().contains("shorter"));
        let mut f = write_safetensors(&[("l.weight", vec![1, 2], vec![1., 2.])]);
        let t = Tensors::parse(&f).unwrap();
        assert!(Layer::read(&t, "l", 3).unwrap_err().contains("shape"));
        assert!(Layer::read(&t, "l", 2)
            .unwrap_err()
            .contains("no tensor l.bias"));
        f.truncate(f.len() - 4);
        let t = Tensors::parse(&f).unwrap();
        assert!(t.get("l.weight", &[1, 2]).unwrap_err().contains("offsets"));
        for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
            let f = write_safetensors(&[("l.weight", vec![1, 2], vec![1., bad])]);
            let err = Tensors::parse(&f)
                .unwrap()
                .get("l.weight", &[1, 2])
                .unwrap_err();
            assert!(
                err.contains("l.weight[1]") && err.contains("not a finite number"),
                "{err}"
            );
        }
    }
}
