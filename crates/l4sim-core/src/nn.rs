//! Small dense networks read from [safetensors](https://huggingface.co/docs/safetensors)
//! files, for policies evaluated inside the core (A3C-L4S's actor, `qdisc/a3c_policy.rs`).
//!
//! The format: 8-byte little-endian header length, a JSON header naming each tensor's
//! `dtype`, `shape` and `data_offsets` into the raw little-endian data that follows. Only
//! `F32` and `F64` tensors are read (as `f32`). Layers use PyTorch `nn.Linear`'s names and
//! `[out, in]` weight layout; they are stored transposed so that evaluation is `y = b`, then
//! `y += x_i · W[:, i]` for each input in order (the same sums on every machine).

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
        Ok(if size == 8 {
            raw.chunks_exact(8)
                .map(|c| f64::from_le_bytes(c.try_into().unwrap_or_default()) as f32)
                .collect()
        } else {
            raw.chunks_exact(4)
                .map(|c| f32::from_le_bytes(c.try_into().unwrap_or_default()))
                .collect()
        })
    }
}

/// One `nn.Linear` layer, weights transposed (`[inputs][outputs]`).
#[derive(Clone, Debug)]
pub struct Dense {
    pub inputs: usize,
    pub outputs: usize,
    w_t: Vec<f32>,
    b: Vec<f32>,
}

impl Dense {
    /// Read `{prefix}.weight` (`[outputs, inputs]`) and `{prefix}.bias`; `inputs` is
    /// given, `outputs` read from the file.
    pub fn read(t: &Tensors, prefix: &str, inputs: usize) -> Result<Dense, String> {
        let wname = format!("{prefix}.weight");
        let outputs = match t.shape(&wname).as_deref() {
            Some([o, _]) if *o > 0 => *o,
            _ => {
                return Err(format!(
                    "is not a valid weights file: it has no 2-D tensor {wname}"
                ))
            }
        };
        let w = t.get(&wname, &[outputs, inputs])?;
        let b = t.get(&format!("{prefix}.bias"), &[outputs])?;
        let mut w_t = vec![0.0; inputs * outputs];
        for r in 0..outputs {
            for c in 0..inputs {
                w_t[c * outputs + r] = w[r * inputs + c];
            }
        }
        Ok(Dense {
            inputs,
            outputs,
            w_t,
            b,
        })
    }

    /// `y = b + W x` (`x.len() == inputs`, `y.len() == outputs`).
    #[inline]
    pub fn forward(&self, x: &[f32], y: &mut [f32]) {
        y.copy_from_slice(&self.b);
        for (xi, col) in x.iter().zip(self.w_t.chunks_exact(self.outputs)) {
            for (yj, wj) in y.iter_mut().zip(col) {
                *yj += xi * wj;
            }
        }
    }
}

/// ReLU in place.
#[inline]
pub fn relu(y: &mut [f32]) {
    for v in y {
        *v = v.max(0.0);
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
        let d = Dense::read(&t, "l", 2).unwrap();
        let mut y = [0.0; 3];
        d.forward(&[1.0, -1.0], &mut y);
        assert_eq!(y, [-0.5, -2.0, -1.0]);
        relu(&mut y);
        assert_eq!(y, [0.0, 0.0, 0.0]);
    }

    #[test]
    fn bad_files_are_one_sentence() {
        assert!(Tensors::parse(b"abc").unwrap_err().contains("shorter"));
        let mut f = write_safetensors(&[("l.weight", vec![1, 2], vec![1., 2.])]);
        let t = Tensors::parse(&f).unwrap();
        assert!(Dense::read(&t, "l", 3).unwrap_err().contains("shape"));
        assert!(Dense::read(&t, "l", 2)
            .unwrap_err()
            .contains("no tensor l.bias"));
        f.truncate(f.len() - 4);
        let t = Tensors::parse(&f).unwrap();
        assert!(t.get("l.weight", &[1, 2]).unwrap_err().contains("offsets"));
    }
}
