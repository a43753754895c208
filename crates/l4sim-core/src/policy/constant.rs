//! A constant policy: the smallest learned policy, and a baseline for trained ones. It
//! answers every decision point with the one value in its weights file: a drop/mark
//! probability at each AQM update (`dualpi2`, `fq_l4s`), or a buffer limit in packets on
//! a flow's deciding arrivals (`fq`; every 10th by default, see `policy = { every }`).
//!
//! # Weights file
//!
//! safetensors (read by `nn.rs`) with one tensor `value` `[1]`, F32 or F64: in [0, 1] for
//! a probability (clamped), packets for a limit (rounded, at least 1).

use super::nn::Tensors;
use super::{Attach, Decision, Event, Hook, LearnedPolicy};

#[derive(Clone, Debug)]
pub struct ConstantPolicy {
    value: f64,
}

impl LearnedPolicy for ConstantPolicy {
    const KIND: &'static str = "constant";
    const NAME: &'static str = "constant";
    const HOOKS: &'static [Hook] = &[Hook::FlowLimit, Hook::Prob];

    fn parse(bytes: &[u8], _: &Attach) -> Result<ConstantPolicy, String> {
        let value = Tensors::parse(bytes)?.get("value", &[1])?[0] as f64;
        if !(value.is_finite() && value >= 0.0) {
            return Err(format!(
                "is not a valid weights file: value {value} is not a finite non-negative number"
            ));
        }
        Ok(ConstantPolicy { value })
    }

    fn on(&mut self, ev: Event) -> Decision {
        match ev {
            Event::Arrival { decide: true, .. } => Decision::FlowLimit(self.value.round().max(1.0) as u32),
            Event::Update { .. } => Decision::Prob(self.value.min(1.0)),
            _ => Decision::Keep,
        }
    }

    /// One input (ignored) per row.
    fn row_len(&self) -> usize {
        1
    }

    fn infer(&mut self, rows: &[f64], _batch: bool, out: &mut Vec<f64>) {
        out.extend(rows.iter().map(|_| self.value));
    }
}

#[cfg(test)]
mod tests {
    use crate::policy::nn::write_safetensors;
    use crate::policy::{Attach, Policy, PolicyRef};
    use crate::qdisc::dualpi2::{DualPi2, DualPi2Config};
    use crate::qdisc::fq::FqConfig;
    use crate::qdisc::{QdiscParams, QueueDisc};
    use crate::rng::Rng;
    use crate::time::MS;

    /// A weights file holding `value`, and a `policy = { kind = "constant", ... }` for it.
    fn constant(value: f32, name: &str) -> PolicyRef {
        let path = std::env::temp_dir().join(format!("l4sim-const-{name}-{}", std::process::id()));
        std::fs::write(&path, write_safetensors(&[("value", vec![1], vec![value])])).unwrap();
        PolicyRef {
            kind: "constant".into(),
            weights: Some(path.to_string_lossy().into_owned()),
            every: None,
        }
    }

    #[test]
    fn drives_dualpi2_probability_through_the_seam() {
        let cfg = DualPi2Config {
            policy: Some(constant(0.25, "p")),
            ..Default::default()
        };
        cfg.validate().unwrap();
        let mut q: DualPi2 = cfg.build(Rng::for_component(1, 0));
        q.catch_up(100 * MS);
        let (p, _, _) = q.probabilities();
        assert!((p - 0.25).abs() < 1e-9, "{p}");
        assert_eq!(q.learned().map(|l| l.decisions()), Some(6));
    }

    #[test]
    fn drives_fq_flow_limits_through_the_seam() {
        let cfg = FqConfig {
            policy: Some(constant(7.4, "limit")),
            ..Default::default()
        };
        cfg.validate().unwrap();
        let mut q = cfg.build(Rng::for_component(1, 0));
        let mut drops = Vec::new();
        let pkt = crate::packet::Packet::default();
        for _ in 0..11 {
            q.enqueue(pkt, 0, &mut drops);
        }
        // Every 10th arrival decides by default: the 1st and the 11th.
        let b = q.flow_bucket(&pkt).unwrap();
        assert_eq!(q.flow_backlog(b), Some(7));
        assert_eq!(q.param("per_flow_limit", Some(b)), Some(7.0));
        assert_eq!(q.learned().map(|l| l.decisions()), Some(2));
    }

    #[test]
    fn infers_its_value_and_rejects_bad_files() {
        let r = constant(0.5, "infer");
        let w = r.weights.as_deref().unwrap();
        let mut p = Policy::load("constant", w, &Attach::default()).unwrap();
        let mut out = Vec::new();
        p.infer(&p.rows(&[vec![0.0], vec![3.0]]).unwrap(), false, &mut out);
        assert_eq!(out, [0.5, 0.5]);
        assert!(p.rows(&[vec![]]).unwrap_err().contains("expected 1"));
        let e = Policy::load("constant", "/nonexistent", &Attach::default()).unwrap_err();
        assert!(e.starts_with("constant policy file"), "{e}");
        let e = Policy::load("nope", w, &Attach::default()).unwrap_err();
        assert!(e.contains("constant"), "{e}");
        let e = Policy::observer("constant", &Attach::default()).unwrap_err();
        assert!(e.contains("needs weights"), "{e}");
    }
}
