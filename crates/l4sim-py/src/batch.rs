//! `SimBatch`: N independent simulations stepped together, on every core.
//!
//! A step starts with `start` (each simulation's target time; returns at once) and ends
//! as the caller collects each simulation with `observe(i)`, which waits for simulation i
//! (running it on the calling thread if no helper thread has taken it yet). So Python can
//! compute one environment's features while the helper threads still run others, and
//! `run_until` (start, then wait for all) is the blocking form. Each simulation is
//! independent: results are the same whichever thread runs it, and in whatever order.

use crate::{action, action_error, to_py, Simulation};
use l4sim_core::Simulation as CoreSim;
use pyo3::exceptions::{PyIndexError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyList;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::time::Instant;

/// A step whose simulations ran longer than this in all (ns) has the next one spread over
/// the cores (a 100 ms step of a 10 Mbps scenario takes ~5 us: there handing simulations
/// to another thread costs more than it saves).
const PARALLEL_ABOVE_NS: u64 = 200_000;

/// The helper threads: one per core but the caller's (none if the system refuses threads:
/// the batch then runs on the calling thread).
fn helpers() -> Option<&'static rayon::ThreadPool> {
    static POOL: OnceLock<Option<rayon::ThreadPool>> = OnceLock::new();
    POOL.get_or_init(|| {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        rayon::ThreadPoolBuilder::new()
            .num_threads(cores.saturating_sub(1).max(1))
            .thread_name(|i| format!("l4sim-batch-{i}"))
            .build()
            .ok()
    })
    .as_ref()
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

struct Slot {
    sim: CoreSim,
    target: u64,
    /// Set if a step of this simulation panicked (a bug): the batch refuses it from then on.
    failed: Option<String>,
}

/// What the caller and the helper threads share.
struct Shared {
    slots: Vec<Mutex<Slot>>,
    /// Taken by a thread in this step: each simulation runs once.
    taken: Vec<AtomicBool>,
    /// Finished in this step.
    done: Vec<AtomicBool>,
    /// With `finished_cv`: wakes a thread waiting for a simulation another thread runs.
    finished: Mutex<()>,
    finished_cv: Condvar,
    /// Run time of this step's simulations, summed.
    work_ns: AtomicU64,
}

impl Shared {
    /// Run simulation i if no thread has taken it in this step; false if one had.
    fn claim_and_run(&self, i: usize) -> bool {
        if self.taken[i].swap(true, Ordering::AcqRel) {
            return false;
        }
        {
            let mut slot = lock(&self.slots[i]);
            let t0 = Instant::now();
            let Slot {
                sim,
                target,
                failed,
            } = &mut *slot;
            if failed.is_none() {
                let t = *target;
                if let Err(e) = catch_unwind(AssertUnwindSafe(|| sim.run_until(t))) {
                    let what = e
                        .downcast_ref::<&str>()
                        .map(|s| s.to_string())
                        .or_else(|| e.downcast_ref::<String>().cloned())
                        .unwrap_or_else(|| "unknown panic".into());
                    *failed = Some(what);
                }
            }
            let ns = t0.elapsed().as_nanos() as u64;
            self.work_ns.fetch_add(ns, Ordering::Relaxed);
        }
        self.done[i].store(true, Ordering::Release);
        let _g = lock(&self.finished);
        self.finished_cv.notify_all();
        true
    }

    /// Return once simulation i has finished this step (run here if nobody has taken it).
    fn wait(&self, i: usize) {
        if self.claim_and_run(i) {
            return;
        }
        let mut g = lock(&self.finished);
        while !self.done[i].load(Ordering::Acquire) {
            g = self.finished_cv.wait(g).unwrap_or_else(|e| e.into_inner());
        }
    }
}

/// N independent simulations stepped together: one call into Rust per step.
#[pyclass(module = "l4sim._core")]
pub(crate) struct SimBatch {
    shared: Arc<Shared>,
    /// A step was started and not every simulation waited for since.
    in_step: bool,
}

impl SimBatch {
    fn len(&self) -> usize {
        self.shared.slots.len()
    }

    fn check_index(&self, i: usize) -> PyResult<()> {
        let n = self.len();
        if i < n {
            Ok(())
        } else {
            Err(PyIndexError::new_err(format!(
                "batch index {i} is outside 0..{n}"
            )))
        }
    }

    /// Wait for every simulation of the step under way (the GIL released).
    fn finish(&mut self, py: Python<'_>) {
        if self.in_step {
            let shared = &self.shared;
            py.allow_threads(|| (0..shared.slots.len()).for_each(|i| shared.wait(i)));
            self.in_step = false;
        }
    }

    /// Simulation i after any step under way, refused if a step of it failed.
    fn slot(&mut self, py: Python<'_>, i: usize) -> PyResult<MutexGuard<'_, Slot>> {
        self.check_index(i)?;
        self.finish(py);
        usable(i, lock(&self.shared.slots[i]))
    }
}

/// `slot` (simulation i's), unless a step of it failed.
fn usable(i: usize, slot: MutexGuard<'_, Slot>) -> PyResult<MutexGuard<'_, Slot>> {
    match &slot.failed {
        Some(e) => Err(PyRuntimeError::new_err(format!(
            "simulation {i} of the batch failed: {e}"
        ))),
        None => Ok(slot),
    }
}

#[pymethods]
impl SimBatch {
    #[new]
    fn new(sims: Vec<PyRef<'_, Simulation>>) -> Self {
        let n = sims.len();
        let slots = sims
            .iter()
            .map(|s| {
                Mutex::new(Slot {
                    sim: s.inner.clone(),
                    target: 0,
                    failed: None,
                })
            })
            .collect();
        SimBatch {
            shared: Arc::new(Shared {
                slots,
                // At rest every simulation counts as taken and done.
                taken: (0..n).map(|_| AtomicBool::new(true)).collect(),
                done: (0..n).map(|_| AtomicBool::new(true)).collect(),
                finished: Mutex::new(()),
                finished_cv: Condvar::new(),
                work_ns: AtomicU64::new(0),
            }),
            in_step: false,
        }
    }

    fn __len__(&self) -> usize {
        self.len()
    }

    fn get(&mut self, py: Python<'_>, i: usize) -> PyResult<Simulation> {
        let slot = self.slot(py, i)?;
        Ok(Simulation {
            inner: slot.sim.clone(),
        })
    }

    fn set(&mut self, py: Python<'_>, i: usize, sim: PyRef<'_, Simulation>) -> PyResult<()> {
        self.check_index(i)?;
        self.finish(py);
        let mut slot = lock(&self.shared.slots[i]);
        slot.sim = sim.inner.clone();
        slot.failed = None;
        Ok(())
    }

    fn apply(&mut self, py: Python<'_>, i: usize, action_: &Bound<'_, PyAny>) -> PyResult<()> {
        let a = action(action_)?;
        let mut slot = self.slot(py, i)?;
        slot.sim.apply_action(&a).map_err(action_error)
    }

    /// Start a step: simulation i runs to `t_ns[i]`. Long steps are spread over the helper
    /// threads and the thread that waits (`observe`, `run_until`, or any other call, which
    /// first waits for the step to end), and `start` returns at once; short ones are run
    /// before it returns.
    fn start(&mut self, py: Python<'_>, t_ns: Vec<u64>) -> PyResult<()> {
        let n = self.len();
        if t_ns.len() != n {
            return Err(PyValueError::new_err(format!(
                "run_until needs {n} times, got {}",
                t_ns.len()
            )));
        }
        self.finish(py);
        let sh = &self.shared;
        let long = sh.work_ns.swap(0, Ordering::Relaxed) > PARALLEL_ABOVE_NS;
        let pool = if n > 1 && long { helpers() } else { None };
        for (slot, &t) in sh.slots.iter().zip(&t_ns) {
            lock(slot).target = t;
        }
        // `done` before `taken`: a simulation is claimable only once it counts as not done.
        sh.done
            .iter()
            .for_each(|d| d.store(false, Ordering::Release));
        sh.taken
            .iter()
            .for_each(|t| t.store(false, Ordering::Release));
        let Some(pool) = pool else {
            // Short steps: all here and now, in one release of the GIL (`observe` then
            // finds every simulation done).
            // (`wait`, not only `claim_and_run`: a helper still finishing the previous
            // parallel step's loop may take one.)
            py.allow_threads(|| (0..n).for_each(|i| sh.wait(i)));
            return Ok(());
        };
        self.in_step = true;
        for _ in 0..pool.current_num_threads().min(n - 1) {
            let sh = Arc::clone(sh);
            // From the end: the waiting thread takes the batch from the front, in the
            // order it collects observations; each keeps its end from step to step.
            pool.spawn(move || (0..n).rev().for_each(|i| _ = sh.claim_and_run(i)));
        }
        Ok(())
    }

    /// Run simulation i to `t_ns[i]`, every one, in one call (the GIL released).
    fn run_until(&mut self, py: Python<'_>, t_ns: Vec<u64>) -> PyResult<()> {
        self.start(py, t_ns)?;
        self.finish(py);
        for (i, slot) in self.shared.slots.iter().enumerate() {
            drop(usable(i, lock(slot))?);
        }
        Ok(())
    }

    /// Simulation i's observation once it has finished the step under way (waits for it,
    /// the GIL released; runs it here if no helper thread has taken it).
    fn observe<'py>(&mut self, py: Python<'py>, i: usize) -> PyResult<Bound<'py, PyAny>> {
        self.check_index(i)?;
        let sh = &self.shared;
        if !sh.done[i].load(Ordering::Acquire) {
            py.allow_threads(|| sh.wait(i));
        }
        let slot = usable(i, lock(&sh.slots[i]))?;
        to_py(py, &slot.sim.observe())
    }

    fn observe_all<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let out = PyList::empty(py);
        for i in 0..self.len() {
            out.append(self.observe(py, i)?)?;
        }
        self.in_step = false;
        Ok(out)
    }
}
