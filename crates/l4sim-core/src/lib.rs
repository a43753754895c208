//! l4sim-core: a deterministic, forkable, packet-level network simulator.
//!
//! Pure Rust, no Python. Build a [`Simulation`] from a normalised [`config::SimConfig`]
//! (the Python package produces it from a TOML scenario), run it, fork it, read its
//! summary and time series.

pub mod app;
pub mod capture;
pub mod config;
pub mod contract;
pub mod control;
pub mod engine;
pub mod flow;
pub mod net;
pub mod packet;
pub mod policy;
pub mod qdisc;
pub mod rng;
pub mod stats;
pub mod summary;
pub mod tcp;
pub mod time;

pub use config::{ConfigError, SimConfig};
pub use engine::Simulation;
pub use summary::Summary;
