//! Time series handed to Python column by column, each a contiguous buffer of numbers
//! (`Buffer`, which `numpy.frombuffer` wraps without a copy, and polars wraps the numpy
//! array in turn): no Python object per row (the dict-of-lists form, `flow_series` /
//! `queue_series`, builds one float or int object per value). Rows taken from the core
//! (`take_*_columns`) move into the buffers without being copied at all.
//!
//! Each column is a tuple: `(dtype, buffer)` with a numpy dtype string, `"f8"` or `"i8"`
//! (native byte order; the frames' `Float64` and `Int64`), or `("cat", codes, categories)`
//! for text: `codes` (`"u4"`) index the `categories` list (a handful of distinct strings,
//! e.g. TCP states or link names).

use std::os::raw::{c_int, c_void};

use l4sim_core::engine::series::{FlowSeries, QueueSeries};
use pyo3::exceptions::PyBufferError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

enum Owned {
    F64(Vec<f64>),
    U64(Vec<u64>),
    I64(Vec<i64>),
    U32(Vec<u32>),
}

/// A read-only buffer of numbers owned by Rust (Python's buffer protocol, format bytes):
/// `numpy.frombuffer(b, dtype)` reads it in place and keeps it alive.
#[pyclass(module = "l4sim._core", frozen)]
pub(crate) struct Buffer {
    data: Owned,
}

impl Buffer {
    fn raw(&self) -> (*const u8, usize) {
        fn raw<T>(v: &[T]) -> (*const u8, usize) {
            (v.as_ptr().cast(), std::mem::size_of_val(v))
        }
        match &self.data {
            Owned::F64(v) => raw(v),
            Owned::U64(v) => raw(v),
            Owned::I64(v) => raw(v),
            Owned::U32(v) => raw(v),
        }
    }
}

#[pymethods]
impl Buffer {
    /// # Safety
    /// Called by Python's buffer protocol with a valid `view`.
    unsafe fn __getbuffer__(
        slf: Bound<'_, Self>,
        view: *mut ffi::Py_buffer,
        flags: c_int,
    ) -> PyResult<()> {
        if flags & ffi::PyBUF_WRITABLE == ffi::PyBUF_WRITABLE {
            return Err(PyBufferError::new_err("a time-series buffer is read-only"));
        }
        let (ptr, len) = slf.get().raw();
        // The buffer's memory lives as long as `slf`, which the view holds a reference
        // to (`PyBuffer_FillInfo` sets `view.obj`); nothing in it ever changes.
        let r = unsafe {
            ffi::PyBuffer_FillInfo(
                view,
                slf.as_ptr(),
                ptr as *mut c_void,
                len as ffi::Py_ssize_t,
                1,
                flags,
            )
        };
        if r == -1 {
            return Err(PyErr::fetch(slf.py()));
        }
        Ok(())
    }

    /// Size in bytes.
    fn __len__(&self) -> usize {
        self.raw().1
    }
}

fn column<'py>(py: Python<'py>, dtype: &str, data: Owned) -> PyResult<Bound<'py, PyTuple>> {
    (dtype, Buffer { data }).into_pyobject(py)
}

fn f64s(py: Python<'_>, v: Vec<f64>) -> PyResult<Bound<'_, PyTuple>> {
    column(py, "f8", Owned::F64(v))
}

/// Counters, read as the frames' signed `Int64` (they stay below 2^63: same bytes).
fn u64s(py: Python<'_>, v: Vec<u64>) -> PyResult<Bound<'_, PyTuple>> {
    column(py, "i8", Owned::U64(v))
}

/// 32-bit values, widened to the frames' `Int64` here.
fn u32s(py: Python<'_>, v: Vec<u32>) -> PyResult<Bound<'_, PyTuple>> {
    let wide = v.into_iter().map(i64::from).collect();
    column(py, "i8", Owned::I64(wide))
}

/// Text as codes into the distinct values, in order of first appearance. The values are a
/// few static names: the previous row's is tried first, then a linear search.
fn strs<'py>(py: Python<'py>, v: Vec<&'static str>) -> PyResult<Bound<'py, PyTuple>> {
    let mut cats: Vec<&'static str> = Vec::new();
    let mut last: Option<(&'static str, u32)> = None;
    let codes: Vec<u32> = v
        .into_iter()
        .map(|x| match last {
            Some((s, k)) if std::ptr::eq(s, x) => k,
            _ => {
                let k = cats.iter().position(|&c| c == x).unwrap_or_else(|| {
                    cats.push(x);
                    cats.len() - 1
                }) as u32;
                last = Some((x, k));
                k
            }
        })
        .collect();
    coded(py, codes, &cats)
}

/// Codes already known (e.g. channel indices) with their names.
fn coded<'py>(py: Python<'py>, codes: Vec<u32>, names: &[&str]) -> PyResult<Bound<'py, PyTuple>> {
    let codes = Buffer {
        data: Owned::U32(codes),
    };
    ("cat", codes, PyList::new(py, names)?).into_pyobject(py)
}

/// The flow series' columns, in the order of `FlowSeries`'s fields (the contract's).
pub(crate) fn flows(py: Python<'_>, s: FlowSeries) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("time_s", f64s(py, s.time_s)?)?;
    d.set_item("flow", u32s(py, s.flow)?)?;
    d.set_item("cwnd_pkts", u32s(py, s.cwnd_pkts)?)?;
    d.set_item("ssthresh_pkts", f64s(py, s.ssthresh_pkts)?)?;
    d.set_item("srtt_s", f64s(py, s.srtt_s)?)?;
    d.set_item("delivered_bytes", u64s(py, s.delivered_bytes)?)?;
    d.set_item("goodput_bps", f64s(py, s.goodput_bps)?)?;
    d.set_item("throughput_bps", f64s(py, s.throughput_bps)?)?;
    d.set_item("retransmits", u64s(py, s.retransmits)?)?;
    d.set_item("bytes_in_flight", u64s(py, s.bytes_in_flight)?)?;
    d.set_item("ca_state", strs(py, s.ca_state)?)?;
    Ok(d)
}

/// The queue series' columns, in the order of `QueueSeries`'s fields; `links`: every
/// channel's name by index.
pub(crate) fn queues<'py>(
    py: Python<'py>,
    s: QueueSeries,
    links: &[&str],
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("time_s", f64s(py, s.time_s)?)?;
    d.set_item("link", coded(py, s.link, links)?)?;
    d.set_item("class", strs(py, s.class)?)?;
    d.set_item("backlog_pkts", u32s(py, s.backlog_pkts)?)?;
    d.set_item("backlog_bytes", u64s(py, s.backlog_bytes)?)?;
    d.set_item("drops", u64s(py, s.drops)?)?;
    d.set_item("ecn_marks", u64s(py, s.ecn_marks)?)?;
    d.set_item("sojourn_s", f64s(py, s.sojourn_s)?)?;
    d.set_item("utilization", f64s(py, s.utilization)?)?;
    Ok(d)
}
