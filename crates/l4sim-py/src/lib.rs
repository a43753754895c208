//! PyO3 bindings: `l4sim._core`. Thin by design: every method forwards to l4sim-core.
//! See API.md beside this crate for the contract with the Python package.

use l4sim_core::{SimConfig, Simulation as CoreSim};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

#[pyclass(module = "l4sim._core")]
struct Simulation {
    inner: CoreSim,
}

#[pymethods]
impl Simulation {
    #[new]
    fn new(config_json: &str) -> PyResult<Self> {
        let cfg = SimConfig::from_json(config_json).map_err(|e| PyValueError::new_err(e.0))?;
        let inner = CoreSim::new(cfg).map_err(|e| PyValueError::new_err(e.0))?;
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
            .map_err(|e| PyValueError::new_err(e.0))
    }

    fn summary_json(&self) -> String {
        self.inner.summary_json()
    }

    fn flow_series<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = &self.inner.series.flows;
        let d = PyDict::new(py);
        d.set_item("time_s", &s.time_s)?;
        d.set_item("flow", &s.flow)?;
        d.set_item("cwnd_pkts", &s.cwnd_pkts)?;
        d.set_item("ssthresh_pkts", &s.ssthresh_pkts)?;
        d.set_item("srtt_s", &s.srtt_s)?;
        d.set_item("delivered_bytes", &s.delivered_bytes)?;
        d.set_item("goodput_bps", &s.goodput_bps)?;
        d.set_item("throughput_bps", &s.throughput_bps)?;
        d.set_item("retransmits", &s.retransmits)?;
        d.set_item("bytes_in_flight", &s.bytes_in_flight)?;
        d.set_item("ca_state", &s.ca_state)?;
        Ok(d)
    }

    fn queue_series<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = &self.inner.series.queues;
        let names: Vec<&str> = s
            .link
            .iter()
            .map(|&i| self.inner.channels[i as usize].name.as_str())
            .collect();
        let d = PyDict::new(py);
        d.set_item("time_s", &s.time_s)?;
        d.set_item("link", names)?;
        d.set_item("class", &s.class)?;
        d.set_item("backlog_pkts", &s.backlog_pkts)?;
        d.set_item("backlog_bytes", &s.backlog_bytes)?;
        d.set_item("drops", &s.drops)?;
        d.set_item("ecn_marks", &s.ecn_marks)?;
        d.set_item("sojourn_s", &s.sojourn_s)?;
        d.set_item("utilization", &s.utilization)?;
        Ok(d)
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

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Simulation>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
