//! l4sim's emulator: the router (`run.rs`; the `l4sim-router` binary and
//! `python -m l4sim.emulate.router`) forwards real IPv4 packets between the TUN
//! devices of network namespaces through the core's link model and qdiscs
//! (`router.rs`); `ipv4.rs` reads headers and writes CE marks; `pool.rs` holds the packets.
//! The namespaces, devices and traffic are set up by `python/l4sim/emulate/__init__.py`.

pub mod ipv4;
pub mod pool;
pub mod router;
pub mod run;
