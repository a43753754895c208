//! PyO3 bindings: `l4sim._core`. Thin by design: every method forwards to l4sim-core.
//! See API.md beside this crate for the contract with the Python package.

use l4sim_core::control::{Action, ActionError};
use l4sim_core::{SimConfig, Simulation as CoreSim};
use pyo3::exceptions::{PyDeprecationWarning, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

mod columns;

mod batch;
use batch::SimBatch;

/// A Python dict → an [`Action`] (through JSON, so the core's serde form is the one schema).
/// The action kinds of the previous release are read as `set_qdisc`, with a
/// `DeprecationWarning`.
pub(crate) fn action(a: &Bound<'_, PyAny>) -> PyResult<Action> {
    let kind = a.get_item("kind").ok();
    let kind = kind.and_then(|k| k.extract::<String>().ok());
    if matches!(kind.as_deref(), Some("set_dualpi2" | "set_flow_limit")) {
        let old: Deprecated = depythonize(a)?;
        let py = a.py();
        let category = py.get_type::<PyDeprecationWarning>();
        PyErr::warn(py, category.as_any(), old.message(), 2)?;
        return Ok(old.into_action());
    }
    depythonize(a)
}

/// Straight from the Python objects (no JSON text in between: actions come every step).
fn depythonize<T: serde::de::DeserializeOwned>(a: &Bound<'_, PyAny>) -> PyResult<T> {
    pythonize::depythonize(a).map_err(|e| PyValueError::new_err(format!("invalid action: {e}")))
}

/// Action kinds the generic `set_qdisc` replaces, accepted for one more release.
#[derive(serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
enum Deprecated {
    /// DualPI2's p′ (None: back to the PI law), k and PI target in seconds.
    SetDualpi2 {
        link: String,
        #[serde(default)]
        base_prob: Option<f64>,
        #[serde(default)]
        coupling: Option<f64>,
        #[serde(default)]
        target_s: Option<f64>,
    },
    /// `fq`'s buffer for the flow queue holding `flow`.
    SetFlowLimit {
        link: String,
        flow: usize,
        limit: u32,
    },
}

impl Deprecated {
    fn message(&self) -> &'static std::ffi::CStr {
        match self {
            Deprecated::SetDualpi2 { .. } => {
                c"action set_dualpi2 is deprecated: use {\"kind\": \"set_qdisc\", \"link\": ..., \"params\": {\"base_prob\": p, \"coupling\": k, \"target_ns\": t}}"
            }
            Deprecated::SetFlowLimit { .. } => {
                c"action set_flow_limit is deprecated: use {\"kind\": \"set_qdisc\", \"link\": ..., \"flow\": i, \"params\": {\"per_flow_limit\": n}}"
            }
        }
    }

    /// The same change as one `set_qdisc` (set_dualpi2 always set p′: None released it).
    fn into_action(self) -> Action {
        match self {
            Deprecated::SetDualpi2 {
                link,
                base_prob,
                coupling,
                target_s,
            } => {
                let mut params =
                    std::collections::BTreeMap::from([("base_prob".into(), base_prob)]);
                if let Some(k) = coupling {
                    params.insert("coupling".into(), Some(k));
                }
                if let Some(t) = target_s {
                    params.insert("target_ns".into(), Some(t * 1e9));
                }
                Action::SetQdisc {
                    link,
                    flow: None,
                    params,
                }
            }
            Deprecated::SetFlowLimit { link, flow, limit } => Action::SetQdisc {
                link,
                flow: Some(flow),
                params: [("per_flow_limit".into(), Some(limit as f64))].into(),
            },
        }
    }
}

/// A Rust value → the Python objects of its serde form (dicts, lists, numbers, str).
pub(crate) fn to_py<'py, T: serde::Serialize>(
    py: Python<'py>,
    x: &T,
) -> PyResult<Bound<'py, PyAny>> {
    pythonize::pythonize(py, x).map_err(|e| PyValueError::new_err(e.to_string()))
}

// The one place where core errors become Python exceptions (see API.md): the classes are
// the Python package's own (`python/l4sim/errors.py`).
mod errors {
    pyo3::import_exception!(l4sim.errors, CoreError);
    pyo3::import_exception!(l4sim.errors, ActionError);
}

fn config_error(e: l4sim_core::ConfigError) -> PyErr {
    errors::CoreError::new_err(e.0)
}

pub(crate) fn action_error(e: ActionError) -> PyErr {
    errors::ActionError::new_err(e.0)
}

#[pyclass(module = "l4sim._core")]
pub(crate) struct Simulation {
    pub(crate) inner: CoreSim,
}

impl Simulation {
    /// Every channel's name, by channel index.
    fn link_names(&self) -> Vec<&str> {
        self.inner
            .channels
            .iter()
            .map(|c| c.name.as_str())
            .collect()
    }
}

#[pymethods]
impl Simulation {
    #[new]
    fn new(config_json: &str) -> PyResult<Self> {
        let cfg = SimConfig::from_json(config_json).map_err(config_error)?;
        let inner = CoreSim::new(cfg).map_err(config_error)?;
        Ok(Simulation { inner })
    }

    /// Process every event at or before `t_ns` (capped at the duration).
    fn run_until(&mut self, py: Python<'_>, t_ns: u64) {
        py.allow_threads(|| self.inner.run_until(t_ns));
    }

    fn run(&mut self, py: Python<'_>) {
        py.allow_threads(|| self.inner.run());
    }

    #[getter]
    fn now_ns(&self) -> u64 {
        self.inner.now()
    }
    #[getter]
    fn duration_ns(&self) -> u64 {
        self.inner.duration()
    }
    #[getter]
    fn events(&self) -> u64 {
        self.inner.events()
    }
    #[getter]
    fn finished(&self) -> bool {
        self.inner.finished()
    }

    fn fork(&self) -> Simulation {
        Simulation {
            inner: self.inner.fork(),
        }
    }

    /// Change a link's queue limits at run time (`link` is `"a->b"`).
    #[pyo3(signature = (link, packets=None, bytes=None))]
    fn set_queue_limit(
        &mut self,
        link: &str,
        packets: Option<u64>,
        bytes: Option<u64>,
    ) -> PyResult<()> {
        self.inner
            .set_queue_limit(link, packets, bytes)
            .map_err(action_error)
    }

    /// Apply a control action now (see API.md for the action dicts).
    fn apply(&mut self, action_: &Bound<'_, PyAny>) -> PyResult<()> {
        self.inner
            .apply_action(&action(action_)?)
            .map_err(action_error)
    }

    /// Apply an action after a fixed latency.
    fn schedule(&mut self, action_: &Bound<'_, PyAny>, delay_ns: u64) -> PyResult<()> {
        self.inner
            .schedule_action(action(action_)?, delay_ns)
            .map_err(action_error)
    }

    /// Send an action as a packet on control flow `flow`.
    fn send_control(&mut self, flow: usize, action_: &Bound<'_, PyAny>) -> PyResult<()> {
        self.inner
            .send_control(flow, action(action_)?)
            .map_err(action_error)
    }

    /// Send the agent's token as a packet on control flow `flow` (an observation, say);
    /// its arrival ends `run_until_trigger` and lists it in `take_messages`.
    fn send_message(&mut self, flow: usize, token: u64) -> PyResult<()> {
        self.inner.send_message(flow, token).map_err(action_error)
    }

    /// The control messages delivered since the last call.
    fn take_messages<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &self.inner.take_messages())
    }

    #[pyo3(signature = (link, every=None))]
    fn set_packet_trigger(&mut self, link: &str, every: Option<u64>) -> PyResult<()> {
        self.inner
            .set_packet_trigger(link, every)
            .map_err(action_error)
    }

    fn run_until_trigger(&mut self, py: Python<'_>, t_ns: u64) -> bool {
        py.allow_threads(|| self.inner.run_until_trigger(t_ns))
    }

    /// One observation: {"time_s", "flows": {column: [per flow]}, "queues": {column: [...]}}.
    fn observe<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &self.inner.observe())
    }

    /// Each flow's path as the engine routes it: [{"links", "reverse_links", "base_rtt_s",
    /// "bottleneck_bps"}] by flow index.
    fn paths<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &self.inner.paths())
    }

    /// The features the learned policy at `link` keeps (`policy/`): {"kind", "names":
    /// [one per column], "features": one list per flow index}.
    fn observe_policy<'py>(&self, py: Python<'py>, link: &str) -> PyResult<Bound<'py, PyDict>> {
        let o = self.inner.observe_policy(link).map_err(action_error)?;
        let d = PyDict::new(py);
        d.set_item("kind", o.kind)?;
        d.set_item("names", o.names)?;
        d.set_item("features", o.rows)?;
        Ok(d)
    }

    /// What the sender of media flow `flow` (a video source) knows now, its frames over
    /// `(since_ns, now]` (`control::MediaObservation`).
    fn observe_media<'py>(
        &self,
        py: Python<'py>,
        flow: usize,
        since_ns: u64,
    ) -> PyResult<Bound<'py, PyAny>> {
        let o = self
            .inner
            .observe_media(flow, since_ns)
            .map_err(action_error)?;
        to_py(py, &o)
    }

    /// Per flow: packets in its flow queue at `link` and that queue's limit (NaN: none).
    fn observe_flow_queues<'py>(
        &self,
        py: Python<'py>,
        link: &str,
    ) -> PyResult<Bound<'py, PyDict>> {
        let (backlog, limit) = self.inner.observe_flow_queues(link).map_err(action_error)?;
        let d = PyDict::new(py);
        d.set_item("backlog_pkts", backlog)?;
        d.set_item("limit_pkts", limit)?;
        Ok(d)
    }

    fn summary_json(&self) -> String {
        self.inner.summary_json()
    }

    /// Every media flow's frames as columns (`app::frames::FrameRows`); empty lists when
    /// no flow has frames.
    fn frame_series<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &self.inner.frame_rows())
    }

    /// Whether any flow has frames (video, trace or periodic source).
    fn has_frames(&self) -> bool {
        self.inner.has_frames()
    }

    /// The per-flow time series as columns (`engine::series::FlowSeries`).
    fn flow_series<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &self.inner.series.flows)
    }

    /// The per-queue time series as columns, links by name (`engine::series::QueueSeries`).
    fn queue_series<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let s = &self.inner.series.queues;
        let names: Vec<&str> = s
            .link
            .iter()
            .map(|&i| self.inner.channels[i as usize].name.as_str())
            .collect();
        let d = to_py(py, s)?;
        d.set_item("link", names)?;
        Ok(d)
    }

    /// The per-flow time series as numeric buffers, no Python object per row (see
    /// `columns.rs`): {column: (numpy dtype, buffer) or ("cat", codes, categories)}. The
    /// rows stay in the core: this is a copy (`take_flow_columns` moves them).
    fn flow_columns<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        columns::flows(py, self.inner.series.flows.clone())
    }

    /// The per-queue time series as numeric buffers (links by name through categories); a
    /// copy (`take_queue_columns` moves them).
    fn queue_columns<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        columns::queues(py, self.inner.series.queues.clone(), &self.link_names())
    }

    /// `flow_columns`, moving the rows out of the core (no copy): a caller that writes them
    /// out as it goes keeps the run's memory bounded.
    fn take_flow_columns<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = std::mem::take(&mut self.inner.series.flows);
        columns::flows(py, s)
    }

    /// `queue_columns`, and the rows handed over leave the core.
    fn take_queue_columns<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = std::mem::take(&mut self.inner.series.queues);
        columns::queues(py, s, &self.link_names())
    }

    /// Run every link the ordinary way (no virtual queues: `Simulation::without_virtual_queues`
    /// in the core): the same results, except that events of the same nanosecond may be
    /// taken in another order. Only before the run starts (else `ValueError`).
    fn without_virtual_queues(&mut self) -> PyResult<()> {
        if self.inner.events() != 0 {
            return Err(PyValueError::new_err(
                "without_virtual_queues must be called before the run starts",
            ));
        }
        self.inner.disable_virtual_queues();
        Ok(())
    }

    /// Reserve the time series' room for the whole run at once (`Series::reserve_run`);
    /// `False` if the allocator refused it (the columns then grow as rows come).
    fn reserve_series(&mut self) -> bool {
        let sim = &mut self.inner;
        sim.series.reserve_run(&sim.cfg, &sim.channels)
    }

    /// The rows a whole run adds at most to the time series: (flow rows, queue rows).
    fn series_rows_of_run(&self) -> (u64, u64) {
        l4sim_core::engine::series::Series::rows_of_run(&self.inner.cfg, &self.inner.channels)
    }

    /// Rows held by the core's time series: (flow rows, queue rows).
    fn series_rows(&self) -> (usize, usize) {
        let s = &self.inner.series;
        (s.flows.time_s.len(), s.queues.time_s.len())
    }

    /// Capture the packets leaving link `link` (`"a->b"`) into the pcap file at `path`
    /// (created or truncated) from now on; `flows`: only these flow indices; `ip`: 4 or 6,
    /// the IP version of the synthesised headers.
    #[pyo3(signature = (link, path, snaplen = 128, flows = None, ip = 4))]
    fn add_capture(
        &mut self,
        link: &str,
        path: &str,
        snaplen: i64,
        flows: Option<Vec<i64>>,
        ip: i64,
    ) -> PyResult<()> {
        let err = |m: String| errors::CoreError::new_err(format!("capture {path}: {m}"));
        let snaplen = u32::try_from(snaplen)
            .map_err(|_| err(format!("snaplen {snaplen} is outside 1..=262144 bytes")))?;
        let ip = l4sim_core::capture::IpVersion::from_number(ip).map_err(err)?;
        let flows = flows
            .map(|fs| {
                fs.into_iter()
                    .map(|f| usize::try_from(f).map_err(|_| err(format!("there is no flow {f}"))))
                    .collect::<PyResult<Vec<_>>>()
            })
            .transpose()?;
        let file = std::fs::File::create(path).map_err(|e| {
            errors::CoreError::new_err(format!("cannot create capture {path}: {e}"))
        })?;
        let out = Box::new(std::io::BufWriter::with_capacity(1 << 16, file));
        self.inner
            .add_capture(link, path, out, snaplen, ip, flows.as_deref())
            .map_err(|e| {
                let _ = std::fs::remove_file(path); // refused: leave no empty file behind
                errors::CoreError::new_err(e.0)
            })
    }

    /// Close every capture (what left its link by now is written): [{"file", "link",
    /// "packets"}]; a write error raises `CoreError`.
    fn finish_captures<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let stats = self
            .inner
            .finish_captures()
            .map_err(|e| errors::CoreError::new_err(e.0))?;
        let rows: Vec<_> = stats
            .iter()
            .map(|s| {
                let link = self.inner.channels[s.link].name.clone();
                serde_json::json!({"file": s.file, "link": link, "packets": s.packets})
            })
            .collect();
        to_py(py, &rows)
    }

    fn conservation<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let c = &self.inner.counters;
        let d = PyDict::new(py);
        d.set_item("sent", c.sent)?;
        d.set_item("delivered", c.delivered)?;
        d.set_item("dropped_qdisc", c.dropped_qdisc)?;
        d.set_item("dropped_loss", c.dropped_loss)?;
        d.set_item("in_flight", self.inner.in_flight())?;
        Ok(d)
    }
}

/// The core's contract with the Python package (qdisc kinds and defaults, TCP options, CCA
/// kinds, observation columns, JSON Schemas): see `l4sim_core::contract`.
#[pyfunction]
fn contract(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    to_py(py, &l4sim_core::contract::contract())
}

/// Each flow's path in a configuration (JSON as for `Simulation`), `None` where a flow has
/// no route: what scenario validation asks before a simulation is built.
#[pyfunction]
fn flow_paths<'py>(py: Python<'py>, config_json: &str) -> PyResult<Bound<'py, PyAny>> {
    let cfg: SimConfig = serde_json::from_str(config_json).map_err(|e| {
        config_error(l4sim_core::ConfigError(format!(
            "invalid configuration: {e}"
        )))
    })?;
    let paths = l4sim_core::engine::build::flow_paths(&cfg).map_err(config_error)?;
    to_py(py, &paths)
}

/// The output of learned policy `kind` (`policy/<kind>.rs`) read from `weights_path` on
/// each input row, evaluated by the code the qdiscs run (for tests and tools; an empty
/// `rows` only checks the file): LFQ's raw network output per 60-feature row, A3C's p' per
/// normalised 12-feature state. `batch`: the policy's batched evaluation, if it has one (the
/// same bits); `repeat`: evaluate the rows this many times (for benchmarks: the conversion
/// from Python is paid once). A bad kind, file or row raises `ValueError`.
#[pyfunction]
#[pyo3(signature = (kind, weights_path, rows, batch = false, repeat = 1))]
fn policy_infer(
    kind: &str,
    weights_path: &str,
    rows: Vec<Vec<f64>>,
    batch: bool,
    repeat: u32,
) -> PyResult<Vec<f64>> {
    use l4sim_core::policy::{Attach, Policy};
    let mut p =
        Policy::load(kind, weights_path, &Attach::default()).map_err(PyValueError::new_err)?;
    let flat = p.rows(&rows).map_err(PyValueError::new_err)?;
    let mut out = Vec::with_capacity(rows.len());
    for _ in 0..repeat.max(1) {
        p.infer(&flat, batch, &mut out);
    }
    Ok(out)
}

/// A saturated Wi-Fi BSS (`l4sim_core::net::wifi::bss::saturation`): every transmitter
/// always has frames; returns what the MAC delivered. `config_json` is a
/// `SaturationConfig`; a bad one raises `ValueError` with one sentence.
#[pyfunction]
fn wifi_saturation<'py>(py: Python<'py>, config_json: &str) -> PyResult<Bound<'py, PyAny>> {
    use l4sim_core::net::wifi::bss::{saturation, SaturationConfig};
    let cfg: SaturationConfig = serde_json::from_str(config_json)
        .map_err(|e| PyValueError::new_err(format!("invalid Wi-Fi saturation config: {e}")))?;
    let res = py
        .allow_threads(|| saturation(&cfg))
        .map_err(PyValueError::new_err)?;
    to_py(py, &res)
}

/// Run the emulator's router in this process until its run ends (`python -m l4sim.emulate.router
/// CONFIG.json`): no logic here, `l4sim_emu::run::main` is the whole router. The GIL is
/// released for the run.
#[pyfunction]
fn router_main(py: Python<'_>, args: Vec<String>) {
    py.allow_threads(|| l4sim_emu::run::main(&args));
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(contract, m)?)?;
    m.add_function(wrap_pyfunction!(flow_paths, m)?)?;
    m.add_function(wrap_pyfunction!(policy_infer, m)?)?;
    m.add_function(wrap_pyfunction!(router_main, m)?)?;
    m.add_function(wrap_pyfunction!(wifi_saturation, m)?)?;
    m.add_class::<Simulation>()?;
    m.add_class::<SimBatch>()?;
    m.add_class::<columns::Buffer>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
