//! Learned policies: the one seam between the qdiscs and trained networks.
//!
//! A qdisc that supports learned control holds an `Option<Box<Learned>>` (none: it pays one
//! branch per event) and reports [`Event`]s at fixed points of its control law; the policy
//! keeps its own features from them and answers some with a [`Decision`], which the qdisc
//! applies. Two decision points ([`Hook`]) exist: a flow's buffer limit on its arrivals
//! (`fq`) and a drop/mark probability at each AQM update (`dualpi2`, `fq_l4s`). A policy is
//! one file implementing [`LearnedPolicy`] (its features, its network read by `nn.rs`) and
//! one line in `policies! { ... }` below; a scenario names it on such a qdisc with
//! `policy = { kind = "...", weights = "..." }`, Python evaluates it with
//! `_core.policy_infer(kind, weights, rows)` and observes its features with
//! `Simulation.observe_policy(link)`: no qdisc, binding or engine code names a policy.

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
    /// (before admission; a [`Hook::FlowLimit`] policy may answer with a new limit, which
    /// the qdisc applies before admitting the packet).
    Arrival {
        queue: usize,
        now: Time,
        backlog: u32,
        limit: Option<u32>,
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

/// What a qdisc tells a policy it attaches: its number of queues (`fq`: buckets) and how
/// often, in a flow's arrivals, the policy may decide (`fq`'s `lfq_interval`).
#[derive(Clone, Copy, Debug)]
pub struct Attach {
    pub queues: usize,
    pub every: u32,
}

impl Default for Attach {
    fn default() -> Self {
        Attach {
            queues: 0,
            every: 1,
        }
    }
}

/// `policy = { kind = "...", weights = "..." }` on a qdisc that supports learned control.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PolicyRef {
    /// The policy's kind (a file in `policy/`: `"lfq"`, `"a3c"`, `"constant"`).
    pub kind: String,
    /// Its weights file (safetensors, format in the policy's file).
    pub weights: String,
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
                Err(format!(
                    "unknown policy kind {kind:?}: one of {}",
                    KINDS.join(", ")
                ))
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

policies! {
    /// LFQ (paper 001): each flow's buffer limit from its 60 features (`policy/lfq.rs`).
    Lfq(lfq::LfqPolicy),
    /// A3C-L4S (paper 004): the probability from 12 Table-1 features (`policy/a3c.rs`).
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

/// A qdisc's learned controller: its policy and the decisions it has taken.
#[derive(Clone, Debug)]
pub struct Learned {
    policy: Policy,
    decisions: u64,
}

impl Learned {
    pub fn new(policy: Policy) -> Learned {
        Learned {
            policy,
            decisions: 0,
        }
    }

    /// Load the policy `r` names for a qdisc offering the decision points `offered`; the
    /// error is one sentence.
    pub fn load(r: &PolicyRef, offered: &[Hook], at: &Attach) -> Result<Learned, String> {
        let p = Policy::load(&r.kind, &r.weights, at)?;
        if !p.hooks().iter().any(|h| offered.contains(h)) {
            return Err(format!(
                "policy {:?} cannot drive this qdisc: it asks for {}",
                r.kind,
                p.hooks().first().map_or("nothing", |h| h.what())
            ));
        }
        Ok(Learned::new(p))
    }

    /// Report an event; the policy's decision (counted unless [`Decision::Keep`]).
    #[inline]
    pub fn on(&mut self, ev: Event) -> Decision {
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

/// The policy a qdisc's configuration names: its `policy`, or a paper's shorthand
/// (`lfq_policy = path` is `policy = { kind = "lfq", weights = path }`); both is an error.
pub fn configured(
    what: &str,
    policy: &Option<PolicyRef>,
    shorthand: (&str, &Option<String>),
) -> Result<Option<PolicyRef>, String> {
    let (kind, path) = shorthand;
    match (policy, path) {
        (Some(_), Some(_)) => Err(format!(
            "{what}: give either policy or {kind}_policy, not both"
        )),
        (Some(r), None) => Ok(Some(r.clone())),
        (None, Some(p)) => Ok(Some(PolicyRef {
            kind: kind.into(),
            weights: p.clone(),
        })),
        (None, None) => Ok(None),
    }
}

/// Build a qdisc's controller from its configuration. `validate` has loaded the file
/// already; should it have changed since, the qdisc's own law stays in charge rather than
/// the build panicking.
pub fn build(
    policy: &Option<PolicyRef>,
    shorthand: (&str, &Option<String>),
    offered: &[Hook],
    at: &Attach,
) -> Option<Box<Learned>> {
    let r = configured("", policy, shorthand).ok()??;
    Learned::load(&r, offered, at).ok().map(Box::new)
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
