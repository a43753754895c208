//! The contract between the core and the Python package, generated from the Rust types:
//! the configuration's JSON Schema, every qdisc kind with its parameters and defaults, the
//! TCP and UDP options, every CCA kind with its options and defaults, the observation and time-series columns and the
//! actions. Python reads
//! it (`l4sim._core.contract()`) and a test fails when the two sides drift apart.

use schemars::{schema_for, JsonSchema};
use serde::Serialize;
use serde_json::{json, Map, Value};

use crate::config::{CcaConfig, CcaKind, QdiscConfig, SimConfig, TcpConfig, UdpConfig};
use crate::control::{Action, FlowRow, Observation, QueueRow};
use crate::engine::build::FlowPath;
use crate::engine::series::{FlowSeries, QueueSeries};
use crate::summary::Summary;

/// Bumped when a key is renamed or removed (adding one is compatible); 3: the qdisc kind
/// `agent` is `external`; 4: learned policies attach only through `policy = { kind,
/// weights, every }` (no `a3c_policy`, `lfq_policy`, `lfq_interval`, `lfq_features`), and
/// the action `set_qdisc` replaces `set_dualpi2` and `set_flow_limit`.
pub const VERSION: u32 = 4;

fn value<T: Serialize>(x: &T) -> Value {
    serde_json::to_value(x).expect("configuration types serialise")
}

/// Field names of a struct's schema, in declaration order.
fn fields<T: JsonSchema>() -> Vec<String> {
    let s = value(&schema_for!(T));
    s["properties"]
        .as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default()
}

/// The string values of a unit-variant enum's schema (`enum`, or `oneOf` of `const`s when
/// variants carry doc comments).
fn variants<T: JsonSchema>() -> Vec<String> {
    let s = value(&schema_for!(T));
    let mut out = Vec::new();
    let mut take = |v: &Value| {
        for x in v["enum"].as_array().into_iter().flatten() {
            out.extend(x.as_str().map(str::to_owned));
        }
        out.extend(v["const"].as_str().map(str::to_owned));
    };
    take(&s);
    for alt in s["oneOf"].as_array().into_iter().flatten() {
        take(alt);
    }
    out
}

/// Each kind's parameters with their defaults (`kind` itself left out), from a tagged
/// enum's `all_defaults`.
fn kind_defaults<T: Serialize>(all: &[T]) -> Map<String, Value> {
    all.iter()
        .map(|q| {
            let mut m = value(q).as_object().cloned().unwrap_or_default();
            let kind = m.remove("kind").and_then(|k| k.as_str().map(str::to_owned));
            (kind.unwrap_or_default(), Value::Object(m))
        })
        .collect()
}

/// The whole contract as JSON.
pub fn contract() -> Value {
    json!({
        "version": VERSION,
        "qdiscs": kind_defaults(&QdiscConfig::all_defaults()),
        "cca_kinds": variants::<CcaKind>(),
        "ccas": kind_defaults(&CcaConfig::all_defaults()),
        "tcp": value(&TcpConfig::default()),
        "udp": value(&UdpConfig::default()),
        "observation": {
            "flows": fields::<FlowRow>(),
            "queues": fields::<QueueRow>(),
        },
        "series": {
            "flows": fields::<FlowSeries>(),
            "queues": fields::<QueueSeries>(),
        },
        "flow_path": fields::<FlowPath>(),
        "schemas": {
            "config": value(&schema_for!(SimConfig)),
            "observation": value(&schema_for!(Observation)),
            "action": value(&schema_for!(Action)),
            "summary": value(&schema_for!(Summary)),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contract_lists_every_kind_and_column() {
        let c = contract();
        let q = c["qdiscs"].as_object().unwrap();
        assert_eq!(q.len(), QdiscConfig::all_defaults().len());
        assert_eq!(q["red"]["max_p"], json!(0.02));
        assert_eq!(q["fifo"]["limit_pkts"], Value::Null);
        let cca: Vec<&str> = c["cca_kinds"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|v| v.as_str())
            .collect();
        assert_eq!(cca.first(), Some(&"newreno"));
        assert!(
            cca.contains(&"prague") && cca.contains(&"external"),
            "{cca:?}"
        );
        assert_eq!(c["tcp"]["mss"], json!(1448));
        assert_eq!(c["tcp"]["cca"], json!({"kind": "newreno"}));
        let ccas: Vec<&String> = c["ccas"].as_object().unwrap().keys().collect();
        assert_eq!(ccas, cca, "one table of options per kind, in order");
        assert_eq!(c["ccas"]["cubic"]["hystart"], json!(true));
        assert_eq!(c["ccas"]["prague"]["alpha_mode"], json!(1));
        let flows = c["observation"]["flows"].as_array().unwrap();
        assert_eq!(flows[0], json!("cwnd_pkts"));
        assert_eq!(flows.len(), 15);
        assert_eq!(c["observation"]["queues"].as_array().unwrap().len(), 8);
        // DualPI2's PI target: the bounds the scenario and `set_qdisc` check.
        let dualpi2 = c["schemas"]["config"]["$defs"]["QdiscConfig"]["oneOf"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["properties"]["kind"]["const"] == "dualpi2")
            .unwrap();
        let target = &dualpi2["properties"]["target_ns"];
        assert_eq!(
            (&target["minimum"], &target["maximum"]),
            (&json!(1), &json!(10_000_000_000u64))
        );
    }

    /// The summary's schema describes every field (the docs' reference is generated from
    /// these descriptions), the per-class queue entries included.
    #[test]
    fn summary_schema_describes_every_field() {
        let c = contract();
        let s = &c["schemas"]["summary"];
        let mut structs = vec![(String::from("Summary"), s)];
        for name in ["FlowSummary", "QueueSummary"] {
            structs.push((name.to_string(), &s["$defs"][name]));
        }
        for (name, st) in structs {
            let props = st["properties"]
                .as_object()
                .unwrap_or_else(|| panic!("{name}"));
            for (field, p) in props {
                assert!(
                    p["description"].as_str().is_some_and(|d| !d.is_empty()),
                    "{name}.{field} has no description"
                );
            }
        }
        let flow = s["$defs"]["FlowSummary"]["properties"].as_object().unwrap();
        assert!(flow.contains_key("throughput_bps") && flow.contains_key("send_rate_bps"));
    }
}
