//! Learned policies: the one seam between the qdiscs and trained networks.
//!
//! A qdisc that supports learned control holds an `Option<Box<Learned>>` (none: it pays one
//! branch per event) and reports [`Event`]s at fixed points of its control law; the policy
//! keeps its own features from them and answers some with a [`Decision`], which the qdisc
//! applies. Each qdisc declares the decision points ([`Hook`]) it offers: a flow's buffer
//! limit on its arrivals (`fq`), a drop/mark probability at each AQM update (`dualpi2`,
//! `fq_l4s`), a PI controller's target delay (`dualpi2`). A policy is one file implementing
//! [`LearnedPolicy`] (its features, its network read by `nn.rs`) and one line in
//! `policies! { ... }` below; a scenario attaches it to any qdisc offering a decision point
//! it makes with `policy = { kind = "...", weights = "...", every = n }` ([`PolicyRef`]),
//! Python evaluates it with `_core.policy_infer(kind, weights, rows)` and observes its
//! features with `Simulation.observe_policy(link)`: no qdisc, binding or engine code names a
//! policy.
//!
//! - `every`: the policy decides at a queue's 1st, n+1-th, 2n+1-th, ... decision point
//!   ([`Learned`] counts them). Per-flow limits default to 10 (LFQ, Grigorescu et al.
//!   §III: "we only let the DL run for every 10th packet"), the AQM's updates to 1, the
//!   only value they take.
//! - No `weights`: a policy that keeps features ([`LearnedPolicy::observer`], e.g.
//!   `policy = { kind = "lfq" }`) observes the qdisc and decides nothing; a policy without
//!   features needs its weights.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::time::Time;

pub mod nn;

/// A decision point a qdisc offers its policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hook {
    /// A flow queue's buffer limit, on the flow's arrivals (`fq`).
    FlowLimit,
    /// A queue's drop/mark probability, at each of the AQM's updates (`dualpi2`, `fq_l4s`).
    Prob,
    /// A PI controller's target delay, at each of its updates (`dualpi2`): the policy tunes
    /// the controller instead of replacing it.
    Target,
}

impl Hook {
    fn what(self) -> &'static str {
        match self {
            Hook::FlowLimit => "per-flow buffer limits",
            Hook::Prob => "a drop/mark probability",
            Hook::Target => "a PI controller's target delay",
        }
    }

    /// `every` when a scenario gives none: a flow's limit on every 10th of its arrivals
    /// (LFQ, Grigorescu et al. §III; the authors' `rl.cc` `every_nth = 10`), the AQM's
    /// updates each.
    fn default_every(self) -> u32 {
        match self {
            Hook::FlowLimit => 10,
            Hook::Prob | Hook::Target => 1,
        }
    }
}

/// A queue's state at one of its AQM's probability updates, over the interval since the
/// previous one: what a learned controller of the probability sees.
#[derive(Clone, Copy, Debug, Default)]
pub struct UpdateStats {
    /// The controller's probability before this update.
    pub prob: f64,
    /// The controller's delay input now and at the previous update (ns).
    pub qdelay: Time,
    pub qdelay_old: Time,
    /// The probability the queue applies (e.g. DualPI2's p_CL).
    pub applied_prob: f64,
    /// Bytes dequeued, drops and CE marks in the interval.
    pub deq_bytes: u64,
    pub drops: u64,
    pub marks: u64,
    /// Backlog now.
    pub backlog_pkts: u64,
    pub backlog_bytes: u64,
}

/// What a qdisc reports to its policy. `queue` is the flow queue (bucket) or sub-queue.
#[derive(Clone, Copy, Debug)]
pub enum Event {
    /// A packet arrived at `queue`, which held `backlog` packets and has buffer `limit`
    /// (before admission; on a `decide` arrival, every `every`-th of the queue's, a
    /// [`Hook::FlowLimit`] policy may answer with a new limit, which the qdisc applies before
    /// admitting the packet). The qdisc reports `decide: true`; [`Learned`] sets it.
    Arrival {
        queue: usize,
        now: Time,
        backlog: u32,
        limit: Option<u32>,
        decide: bool,
    },
    /// The arrival was admitted, or (`dropped`) discarded.
    Admission {
        queue: usize,
        now: Time,
        dropped: bool,
    },
    /// A packet of `queue` left.
    Departure { queue: usize, now: Time },
    /// A packet of `queue` was dropped from inside the queue (to make room).
    Loss { queue: usize, now: Time },
    /// An agent set `queue`'s limit itself.
    Pinned { queue: usize },
    /// `queue`'s AQM updates its probability (a [`Hook::Prob`] policy answers).
    Update { queue: usize, stats: UpdateStats },
}

/// A policy's answer to an [`Event`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Decision {
    /// Nothing to change.
    Keep,
    /// Set the queue's buffer limit (packets).
    FlowLimit(u32),
    /// Set the queue's probability, in [0, 1].
    Prob(f64),
    /// Set the queue's PI target delay (s, > 0); the PI law then updates the probability.
    Target(f64),
}

/// What a qdisc tells a policy it attaches: its number of queues (`fq`: buckets).
#[derive(Clone, Copy, Debug, Default)]
pub struct Attach {
    pub queues: usize,
}

/// `policy = { kind = "...", weights = "...", every = n }` on a qdisc offering a decision
/// point ([`Hook`]) the policy makes.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PolicyRef {
    /// The policy's kind (a file in `policy/`: `"lfq"`, `"a3c"`, `"constant"`).
    pub kind: String,
    /// Its weights file (safetensors, format in the policy's file). None: the policy only
    /// keeps its features for agents to observe (a policy that keeps none needs weights).
    #[serde(default)]
    pub weights: Option<String>,
    /// Decide at a queue's 1st, n+1-th, ... decision point. Default: 10 for per-flow
    /// limits (LFQ's), 1 for an AQM's updates (the only value they take).
    #[serde(default)]
    pub every: Option<u32>,
}

impl PolicyRef {
    /// `{ kind, weights = path }`, `every` left to its default.
    pub fn file(kind: &str, path: impl AsRef<std::path::Path>) -> PolicyRef {
        PolicyRef {
            kind: kind.into(),
            weights: Some(path.as_ref().to_string_lossy().into_owned()),
            every: None,
        }
    }
}

/// Features a policy keeps, per flow: what `Simulation::observe_policy` returns.
#[derive(Clone, Debug)]
pub struct PolicyObservation {
    pub kind: &'static str,
    /// One name per column.
    pub names: Vec<String>,
    /// One row per flow index.
    pub rows: Vec<Vec<f64>>,
}

/// A learned policy: one file in `policy/`, one line in `policies! { ... }`.
pub trait LearnedPolicy: Clone + std::fmt::Debug + Sized {
    /// Its `kind` in `policy = { kind = ... }` and `policy_infer`.
    const KIND: &'static str;
    /// Its name in error messages ("LFQ policy file ...").
    const NAME: &'static str;
    /// The decisions it can make (the qdiscs it can drive).
    const HOOKS: &'static [Hook];
    /// The decisions this instance makes (its weights file may choose among `HOOKS`).
    fn hooks(&self) -> &'static [Hook] {
        Self::HOOKS
    }
    /// Build from a weights file's bytes; the error ends a sentence ("is not ...").
    fn parse(bytes: &[u8], at: &Attach) -> Result<Self, String>;
    /// Without weights: the policy keeping its features and deciding nothing, if it keeps
    /// any (`policy = { kind = "lfq" }`).
    fn observer(_at: &Attach) -> Option<Self> {
        None
    }
    /// A qdisc event; the decision it calls for.
    fn on(&mut self, ev: Event) -> Decision;
    /// Values in one input row of [`infer`](Self::infer).
    fn row_len(&self) -> usize;
    /// The network's output on each row of `rows` (`row_len` values each), appended to `out`
    /// (the binding's `policy_infer`, for tests and tools); `batch`: the batched evaluation,
    /// if the policy has one (the same bits).
    fn infer(&mut self, rows: &[f64], batch: bool, out: &mut Vec<f64>);
    /// Names of the features it keeps per queue (empty: none to observe).
    fn feature_names(&self) -> Vec<String> {
        Vec::new()
    }
    /// The features of `queue` now.
    fn features(&self, _queue: usize) -> Option<Vec<f64>> {
        None
    }
}

/// Largest weights file read (64 MiB; the shipped networks are under 1 MiB): a bigger one,
/// or `/dev/zero`, is refused before it is read.
pub const MAX_WEIGHTS_BYTES: u64 = 64 << 20;

/// A weights file's bytes: a regular file of at most [`MAX_WEIGHTS_BYTES`], opened without
/// blocking (a FIFO would wait for a writer) and checked on the open file; the error ends a
/// sentence ("cannot be read: ...", "is not a regular file ...").
pub fn read_weights(path: &str) -> Result<Vec<u8>, String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    // O_NONBLOCK (Linux, <fcntl.h>): opening a FIFO for reading returns at once.
    const O_NONBLOCK: i32 = 0o4000;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(O_NONBLOCK)
        .open(path)
        .map_err(|e| format!("cannot be read: {e}"))?;
    let meta = file
        .metadata()
        .map_err(|e| format!("cannot be read: {e}"))?;
    if !meta.is_file() {
        return Err("is not a regular file (a device, FIFO, socket or directory)".into());
    }
    if meta.len() > MAX_WEIGHTS_BYTES {
        return Err(format!(
            "is {} bytes, more than the {MAX_WEIGHTS_BYTES} bytes a weights file may have",
            meta.len()
        ));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(MAX_WEIGHTS_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot be read: {e}"))?;
    if bytes.len() as u64 > MAX_WEIGHTS_BYTES {
        return Err(format!(
            "grew past the {MAX_WEIGHTS_BYTES} bytes a weights file may have while it was read"
        ));
    }
    Ok(bytes)
}

/// Read policy `P` from a weights file; the error is one sentence naming the file.
fn read_policy<P: LearnedPolicy>(path: &str, at: &Attach) -> Result<P, String> {
    let bytes = read_weights(path).map_err(|e| format!("{} policy file {path:?} {e}", P::NAME))?;
    P::parse(&bytes, at).map_err(|e| format!("{} policy file {path:?} {e}", P::NAME))
}

/// The registry: one line per policy file generates its module, the [`Policy`] enum
/// (plain data: `Clone`, no virtual calls) and the dispatch over it.
macro_rules! policies {
    ($( $(#[$attr:meta])* $V:ident($m:ident :: $T:ident) ),* $(,)?) => {
        $( pub mod $m; )*

        /// The learned policies a qdisc can hold.
        #[derive(Clone, Debug)]
        pub enum Policy {
            $( $(#[$attr])* $V($m::$T), )*
        }

        /// Every policy kind, in registry order.
        pub const KINDS: &[&str] = &[$( <$m::$T as LearnedPolicy>::KIND, )*];

        impl Policy {
            /// Read policy `kind` from its weights file; the error is one sentence.
            pub fn load(kind: &str, path: &str, at: &Attach) -> Result<Policy, String> {
                $( if kind == <$m::$T>::KIND {
                    return read_policy::<$m::$T>(path, at).map(Policy::$V);
                } )*
                Err(unknown(kind))
            }
            /// Policy `kind` without weights: its observer (see [`LearnedPolicy::observer`]).
            pub fn observer(kind: &str, at: &Attach) -> Result<Policy, String> {
                $( if kind == <$m::$T>::KIND {
                    return <$m::$T>::observer(at).map(Policy::$V).ok_or_else(|| format!(
                        "policy {kind:?} needs weights: it keeps no features to observe"
                    ));
                } )*
                Err(unknown(kind))
            }
            pub fn kind(&self) -> &'static str {
                match self { $( Policy::$V(_) => <$m::$T>::KIND, )* }
            }
            pub fn name(&self) -> &'static str {
                match self { $( Policy::$V(_) => <$m::$T>::NAME, )* }
            }
            pub fn hooks(&self) -> &'static [Hook] {
                match self { $( Policy::$V(p) => p.hooks(), )* }
            }
            #[inline]
            pub fn on(&mut self, ev: Event) -> Decision {
                match self { $( Policy::$V(p) => p.on(ev), )* }
            }
            pub fn row_len(&self) -> usize {
                match self { $( Policy::$V(p) => p.row_len(), )* }
            }
            fn infer_rows(&mut self, rows: &[f64], batch: bool, out: &mut Vec<f64>) {
                match self { $( Policy::$V(p) => p.infer(rows, batch, out), )* }
            }
            pub fn feature_names(&self) -> Vec<String> {
                match self { $( Policy::$V(p) => p.feature_names(), )* }
            }
            pub fn features(&self, queue: usize) -> Option<Vec<f64>> {
                match self { $( Policy::$V(p) => p.features(queue), )* }
            }
        }
    };
}

fn unknown(kind: &str) -> String {
    format!("unknown policy kind {kind:?}: one of {}", KINDS.join(", "))
}

policies! {
    /// LFQ (Grigorescu et al.): each flow's buffer limit from its 60 features
    /// (`policy/lfq.rs`).
    Lfq(lfq::LfqPolicy),
    /// A3C-L4S: the probability or the PI target from 12 Table-1 features (`policy/a3c.rs`).
    A3c(a3c::A3cPolicy),
    /// A constant probability or buffer limit read from the file (`policy/constant.rs`).
    Constant(constant::ConstantPolicy),
}

impl Policy {
    /// `rows` (one list of [`row_len`](Self::row_len) values each) as one flat input for
    /// [`infer`](Self::infer); a row of another length is an error (one sentence).
    pub fn rows(&self, rows: &[Vec<f64>]) -> Result<Vec<f64>, String> {
        let n = self.row_len();
        if let Some(r) = rows.iter().find(|r| r.len() != n) {
            return Err(format!(
                "a {} input row has {} values, expected {n}",
                self.name(),
                r.len()
            ));
        }
        Ok(rows.concat())
    }

    /// The output on each row of the flat input `rows` (see [`rows`](Self::rows)); `out`
    /// is cleared first.
    pub fn infer(&mut self, rows: &[f64], batch: bool, out: &mut Vec<f64>) {
        out.clear();
        self.infer_rows(rows, batch, out);
    }
}

/// A qdisc's learned controller: its policy, how often it decides and the decisions it has
/// taken.
#[derive(Clone, Debug)]
pub struct Learned {
    policy: Policy,
    decisions: u64,
    /// `every` (1: each decision point decides).
    every: u32,
    /// Per queue: decision points to skip before its next decision (with `every` > 1).
    skip: Vec<u32>,
}

impl Learned {
    /// Load the policy `r` names for a qdisc offering the decision points `offered`; the
    /// error is one sentence.
    pub fn load(r: &PolicyRef, offered: &[Hook], at: &Attach) -> Result<Learned, String> {
        let p = match &r.weights {
            Some(w) => Policy::load(&r.kind, w, at)?,
            None => Policy::observer(&r.kind, at)?,
        };
        let Some(hook) = p.hooks().iter().find(|h| offered.contains(h)) else {
            return Err(format!(
                "policy {:?} cannot drive this qdisc: it asks for {}",
                r.kind,
                p.hooks().first().map_or("nothing", |h| h.what())
            ));
        };
        let every = r.every.unwrap_or(hook.default_every());
        if every == 0 || (*hook != Hook::FlowLimit && every != 1) {
            return Err(format!(
                "policy every = {every}: a policy setting {} decides at each update (every = 1)",
                hook.what()
            ));
        }
        let skip = if every > 1 {
            vec![0; at.queues]
        } else {
            Vec::new()
        };
        Ok(Learned {
            policy: p,
            decisions: 0,
            every,
            skip,
        })
    }

    /// The controller `r` names, if any, for a qdisc offering `offered` (see
    /// [`load`](Self::load)).
    pub fn attach(
        r: &Option<PolicyRef>,
        offered: &[Hook],
        at: &Attach,
    ) -> Result<Option<Learned>, String> {
        r.as_ref()
            .map(|r| Learned::load(r, offered, at))
            .transpose()
    }

    /// [`attach`](Self::attach) when building a qdisc: `validate` has loaded the file
    /// already; should it have changed since, the qdisc's own law stays in charge rather
    /// than the build panicking.
    pub fn build(r: &Option<PolicyRef>, offered: &[Hook], at: &Attach) -> Option<Box<Learned>> {
        Learned::attach(r, offered, at).ok().flatten().map(Box::new)
    }

    /// Report an event; the policy's decision (counted unless [`Decision::Keep`]).
    #[inline]
    pub fn on(&mut self, mut ev: Event) -> Decision {
        if let Event::Arrival { queue, decide, .. } = &mut ev {
            if let Some(s) = self.skip.get_mut(*queue) {
                // Every `every`-th arrival of the queue, its first included.
                *decide = *s == 0;
                *s = if *s == 0 { self.every - 1 } else { *s - 1 };
            }
        }
        let d = self.policy.on(ev);
        if d != Decision::Keep {
            self.decisions += 1;
        }
        d
    }

    /// Decisions taken.
    pub fn decisions(&self) -> u64 {
        self.decisions
    }

    pub fn policy(&self) -> &Policy {
        &self.policy
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn special_and_oversized_weights_files_are_refused_unread() {
        let err = read_weights("/dev/zero").unwrap_err();
        assert!(err.contains("not a regular file"), "{err}");
        let err = read_weights("/").unwrap_err();
        assert!(err.contains("not a regular file"), "{err}");
        let path =
            std::env::temp_dir().join(format!("l4sim-big-{}.safetensors", std::process::id()));
        let f = std::fs::File::create(&path).unwrap();
        f.set_len(MAX_WEIGHTS_BYTES + 1).unwrap(); // sparse: nothing written
        let err = read_weights(path.to_str().unwrap()).unwrap_err();
        std::fs::remove_file(&path).unwrap();
        assert!(err.contains("more than the"), "{err}");
        let err = read_weights("/nonexistent/w.safetensors").unwrap_err();
        assert!(err.starts_with("cannot be read"), "{err}");
    }
}
