//! The router process: `l4sim-router CONFIG.json` attaches to the TUN device of each host
//! namespace, prints `ready`, forwards packets through the scenario's links until `stop`
//! (or end of file) on stdin, SIGTERM or SIGINT, then writes the statistics to `stats_path`.
//!
//! The configuration is written by `python/l4sim/emulate/__init__.py`: `sim` is the scenario's
//! core configuration (`SimConfig`, as `l4sim run` uses it), `hosts` the node of each
//! namespace with its TUN device and IPv4 address. Exit status 2 with one line on stderr
//! for a configuration or device problem.

use std::fs::File;
use std::io::Write;
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use crate::pool::SLOT;
use crate::router::{Delivery, EmuCapture, Router};
use l4sim_core::capture::{PcapWriter, MAX_SNAPLEN};
use l4sim_core::config::SimConfig;
use l4sim_core::stats::Histogram;
use l4sim_core::summary::queue_summaries;
use l4sim_core::time::{Time, MS};
use serde::Deserialize;
use serde_json::json;

/// `linux/if_tun.h`: `TUNSETIFF = _IOW('T', 202, int)`, `IFF_TUN`, `IFF_NO_PI`.
const TUNSETIFF: libc::c_ulong = 0x4004_54ca;
const IFF_TUN: libc::c_short = 0x0001;
const IFF_NO_PI: libc::c_short = 0x1000;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Host {
    node: u32,
    /// A network namespace file (`/run/netns/NAME`).
    netns: String,
    /// The TUN device in it (created persistent by `ip tuntap add`).
    tun: String,
    addr: Ipv4Addr,
}

/// A flow of the scenario by its data-direction 5-tuple.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FlowTuple {
    src: Ipv4Addr,
    dst: Ipv4Addr,
    sport: u16,
    dport: u16,
    proto: u8,
}

/// A packet capture of one link direction (`[[captures]]`, docs/captures.md).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CaptureConfig {
    /// `"a->b"` with node names.
    link: String,
    /// The pcap file (created or truncated).
    path: String,
    snaplen: u32,
}

fn d_pool() -> usize {
    65_536
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    sim: serde_json::Value,
    hosts: Vec<Host>,
    /// The scenario's flows, for per-flow drops, marks and one-way delay.
    #[serde(default)]
    flows: Vec<FlowTuple>,
    stats_path: String,
    /// Buffer slots (2 KiB each) for packets inside the router.
    #[serde(default = "d_pool")]
    pool_slots: usize,
    /// Busy-wait this long before an event instead of sleeping (0: always sleep).
    #[serde(default)]
    spin_ns: u64,
    /// Run with real-time priority (SCHED_FIFO) to wake on time on a busy machine.
    #[serde(default)]
    realtime: bool,
    #[serde(default)]
    captures: Vec<CaptureConfig>,
}

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

pub fn fail(msg: &str) -> ! {
    eprintln!("l4sim-router: {msg}");
    std::process::exit(2)
}

fn os_err(what: &str) -> String {
    format!("{what}: {}", std::io::Error::last_os_error())
}

/// Open `tun` inside the namespace `netns` (the device belongs to the namespace the
/// /dev/net/tun file was opened in, `tun_chr_open`), non-blocking.
fn attach(netns: &str, tun: &str) -> Result<RawFd, String> {
    let ns = File::open(netns).map_err(|e| format!("cannot open {netns}: {e}"))?;
    // SAFETY: plain system calls on descriptors we own; `ifr` outlives the ioctl.
    unsafe {
        if libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) != 0 {
            return Err(os_err(&format!("setns {netns}")));
        }
        let fd = libc::open(
            c"/dev/net/tun".as_ptr(),
            libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC,
        );
        if fd < 0 {
            return Err(os_err("open /dev/net/tun"));
        }
        // struct ifreq: 16 bytes of name, then the flags (a short) in the union.
        let mut ifr = [0u8; 40];
        let name = tun.as_bytes();
        if name.len() >= 16 {
            return Err(format!("device name {tun:?} is too long"));
        }
        ifr[..name.len()].copy_from_slice(name);
        ifr[16..18].copy_from_slice(&(IFF_TUN | IFF_NO_PI).to_ne_bytes());
        if libc::ioctl(fd, TUNSETIFF as _, ifr.as_mut_ptr()) != 0 {
            return Err(os_err(&format!("attach to {tun} in {netns}")));
        }
        Ok(fd)
    }
}

/// `l4sim-router --bench N`: the router's own cost per packet without I/O: N 100-byte
/// packets through a two-host link of 100 Gbit/s (FIFO), on a synthetic clock.
fn bench(n: u64) {
    let cfg = SimConfig::from_json(
        r#"{"duration_ns": 1, "nodes": [{"name": "h0"}, {"name": "h1"}],
            "links": [{"a": 0, "b": 1, "rate_bps": 100000000000, "delay_ns": 0}], "flows": []}"#,
    )
    .expect("bench configuration");
    let mut r = Router::new(&cfg, vec![(0x0a4d_0001, 0), (0x0a4d_0002, 1)], 1024);
    let mut pkt = [0u8; 100];
    pkt[0] = 0x45;
    pkt[2..4].copy_from_slice(&100u16.to_be_bytes());
    pkt[8] = 64;
    pkt[9] = 17;
    pkt[12..16].copy_from_slice(&[10, 77, 0, 1]);
    pkt[16..20].copy_from_slice(&[10, 77, 0, 2]);
    let c = crate::ipv4::header_checksum(&pkt);
    pkt[10..12].copy_from_slice(&c.to_be_bytes());
    let start = Instant::now();
    let mut out = Vec::new();
    for i in 0..n {
        let t = i * 100;
        let s = r.pool.alloc().expect("slot");
        r.pool.slot_mut(s)[..100].copy_from_slice(&pkt);
        r.advance(t);
        r.ingress(0, s, 100, t);
        r.advance(t);
        out.extend(r.take_deliveries());
        for d in out.drain(..) {
            r.release(d.slot);
        }
    }
    let ns = start.elapsed().as_nanos() as f64 / n as f64;
    println!(
        "ns_per_pkt={ns:.1} pkts={n} delivered={}",
        r.counters.delivered
    );
}

/// The router's entry point, for the `l4sim-router` binary and for `python -m l4sim.emulate.router`
/// (the Python extension carries the router, so an installed wheel can emulate without a
/// Rust toolchain). `args` are the command-line arguments after the program name. Returns
/// when the run ends (stop on stdin, end of stdin, SIGTERM or SIGINT) with its statistics
/// written; a configuration or device problem ends the process with status 2 and one line
/// on stderr.
pub fn main(args: &[String]) {
    // The process shows as `l4sim-router` in ps/top/proc/PID/comm whichever program
    // carries it (prctl(2) PR_SET_NAME: at most 15 bytes and the NUL).
    // SAFETY: a NUL-terminated string that outlives the call.
    unsafe {
        libc::prctl(
            libc::PR_SET_NAME,
            c"l4sim-router".as_ptr() as libc::c_ulong,
            0,
            0,
            0,
        );
    }
    let path = args
        .first()
        .cloned()
        .unwrap_or_else(|| fail("usage: l4sim-router CONFIG.json"));
    if path == "--bench" {
        let n = args
            .get(1)
            .and_then(|x| x.parse().ok())
            .unwrap_or(1_000_000);
        return bench(n);
    }
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| fail(&format!("cannot read {path}: {e}")));
    let cfg: Config =
        serde_json::from_str(&text).unwrap_or_else(|e| fail(&format!("bad configuration: {e}")));
    let sim = SimConfig::from_json(&cfg.sim.to_string())
        .and_then(|s| s.validate().map(|_| s))
        .unwrap_or_else(|e| fail(&format!("bad scenario configuration: {}", e.0)));

    let here = File::open("/proc/self/ns/net").unwrap_or_else(|e| fail(&format!("{e}")));
    let mut fds: Vec<Option<RawFd>> = vec![None; sim.nodes.len()];
    let mut hosts = Vec::new();
    for h in &cfg.hosts {
        if h.node as usize >= sim.nodes.len() {
            fail(&format!("host node {} is not in the scenario", h.node));
        }
        let fd = attach(&h.netns, &h.tun).unwrap_or_else(|e| fail(&e));
        fds[h.node as usize] = Some(fd);
        hosts.push((u32::from(h.addr), h.node));
    }
    // SAFETY: system calls with valid arguments.
    unsafe {
        libc::setns(here.as_raw_fd(), libc::CLONE_NEWNET);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
        // Wake from ppoll at the requested nanosecond, not up to 50 us later (prctl(2)).
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong);
        if cfg.realtime {
            let p = libc::sched_param { sched_priority: 10 };
            if libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) != 0 {
                eprintln!("{}", os_err("l4sim-router: SCHED_FIFO not granted"));
            }
        }
    }
    let mut router = Router::new(&sim, hosts, cfg.pool_slots);
    let keys: Vec<_> = cfg
        .flows
        .iter()
        .map(|f| {
            (
                u32::from(f.src),
                u32::from(f.dst),
                f.sport,
                f.dport,
                f.proto,
            )
        })
        .collect();
    router.set_flows(&keys);
    for cap in &cfg.captures {
        let channel = router
            .channels
            .iter()
            .position(|c| c.name == cap.link)
            .unwrap_or_else(|| fail(&format!("capture: there is no link {:?}", cap.link)));
        let file = File::create(&cap.path)
            .unwrap_or_else(|e| fail(&format!("cannot create capture {}: {e}", cap.path)));
        let sink: Box<dyn Write + Send> = Box::new(std::io::BufWriter::new(file));
        let out = PcapWriter::new(sink, cap.snaplen.clamp(1, MAX_SNAPLEN))
            .unwrap_or_else(|e| fail(&format!("cannot write capture {}: {e}", cap.path)));
        router.captures.push(EmuCapture {
            channel,
            file: cap.path.clone(),
            snaplen: cap.snaplen.clamp(1, MAX_SNAPLEN) as usize,
            out,
            packets: 0,
            error: None,
        });
    }
    let origin = Instant::now();
    router.epoch_ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as Time);
    let clock = || origin.elapsed().as_nanos() as Time;

    let mut pfds: Vec<libc::pollfd> = vec![libc::pollfd {
        fd: 0,
        events: libc::POLLIN,
        revents: 0,
    }];
    let mut nodes = Vec::new();
    for (node, fd) in fds.iter().enumerate() {
        if let Some(fd) = fd {
            pfds.push(libc::pollfd {
                fd: *fd,
                events: libc::POLLIN,
                revents: 0,
            });
            nodes.push(node as u32);
        }
    }
    println!("ready");
    let _ = std::io::stdout().flush();

    let mut lateness = Histogram::default();
    let mut late_max: Time = 0;
    let mut write_errors: u64 = 0;
    let mut out: Vec<Delivery> = Vec::new();
    let mut scratch = vec![0u8; SLOT];
    let mut stdin_buf = [0u8; 256];
    let mut flush = |router: &mut Router, lateness: &mut Histogram, late_max: &mut Time| {
        out.extend(router.take_deliveries());
        for d in out.drain(..) {
            let p = router.pool.packet(d.slot);
            let fd = fds[d.node as usize].expect("deliveries go to hosts");
            // How late the router hands the packet over (the write itself runs the
            // receiving host's stack in this thread, tun_get_user).
            let late = clock().saturating_sub(d.due);
            lateness.record(late);
            *late_max = (*late_max).max(late);
            // SAFETY: writing a buffer we own to a descriptor we own.
            let n = unsafe { libc::write(fd, p.as_ptr().cast(), p.len()) };
            if n < 0 {
                write_errors += 1;
            }
            router.release(d.slot);
        }
    };
    'run: while !STOP.load(Ordering::Relaxed) {
        router.advance(clock());
        flush(&mut router, &mut lateness, &mut late_max);
        let wait = router.next_due().saturating_sub(clock());
        let sleep = if wait > cfg.spin_ns {
            (wait - cfg.spin_ns).min(100 * MS)
        } else {
            0
        };
        let ts = libc::timespec {
            tv_sec: (sleep / 1_000_000_000) as libc::time_t,
            tv_nsec: (sleep % 1_000_000_000) as libc::c_long,
        };
        // SAFETY: `pfds` is a valid array of pollfd for the call's duration.
        let r = unsafe {
            libc::ppoll(
                pfds.as_mut_ptr(),
                pfds.len() as libc::nfds_t,
                &ts,
                std::ptr::null(),
            )
        };
        if r <= 0 {
            continue; // timeout, or a signal (EINTR): the loop checks STOP
        }
        if pfds[0].revents != 0 {
            // SAFETY: reading into a stack buffer.
            let n = unsafe { libc::read(0, stdin_buf.as_mut_ptr().cast(), stdin_buf.len()) };
            if n <= 0 || stdin_buf[..n as usize].windows(4).any(|w| w == b"stop") {
                break 'run;
            }
        }
        for (k, pfd) in pfds[1..].iter().enumerate() {
            if pfd.revents & (libc::POLLERR | libc::POLLHUP | libc::POLLNVAL) != 0 {
                fail("a TUN device went away (its namespace was deleted?)");
            }
            if pfd.revents & libc::POLLIN == 0 {
                continue;
            }
            loop {
                let slot = router.pool.alloc();
                let buf = match slot {
                    Some(s) => router.pool.slot_mut(s),
                    None => &mut scratch[..],
                };
                // SAFETY: reading at most SLOT bytes into a SLOT-byte buffer.
                let n = unsafe { libc::read(pfd.fd, buf.as_mut_ptr().cast(), SLOT) };
                if n <= 0 {
                    if let Some(s) = slot {
                        router.release(s);
                    }
                    break;
                }
                let t = clock();
                router.advance(t);
                match slot {
                    Some(s) => router.ingress(nodes[k], s, n as usize, t),
                    None => router.counters.pool_full += 1,
                }
            }
        }
    }
    let now = clock();
    router.advance(now);
    flush(&mut router, &mut lateness, &mut late_max);
    for cap in &mut router.captures {
        if let (None, Err(e)) = (&cap.error, cap.out.flush()) {
            cap.error = Some(format!("cannot write capture {}: {e}", cap.file));
        }
    }
    let us = |ns: f64| ns / 1e3;
    let stats = json!({
        "elapsed_s": now as f64 * 1e-9,
        "channels": router.channels.iter().map(|c| c.name.clone()).collect::<Vec<_>>(),
        "queues": queue_summaries(&router.channels, now),
        "series": router.series.queues,
        "counters": router.counters,
        "flows": router.flows.iter().map(|f| json!({
            "drops": f.drops,
            "ecn_marks": f.ce,
            "owd_mean_s": f.owd.mean() * 1e-9,
            "owd_p50_s": f.owd.quantile(0.5) * 1e-9,
            "owd_p99_s": f.owd.quantile(0.99) * 1e-9,
            "owd_n": f.owd.count(),
        })).collect::<Vec<_>>(),
        "in_flight": router.in_flight(),
        "captures": router.captures.iter().map(|c| json!({
            "file": c.file,
            "link": router.channels[c.channel].name,
            "packets": c.packets,
            "error": c.error,
        })).collect::<Vec<_>>(),
        "write_errors": write_errors,
        "lateness_us": {
            "count": lateness.count(),
            "mean": us(lateness.mean()),
            "p50": us(lateness.quantile(0.5)),
            "p99": us(lateness.quantile(0.99)),
            "p999": us(lateness.quantile(0.999)),
            "max": us(late_max as f64),
        },
    });
    if let Err(e) = std::fs::write(&cfg.stats_path, stats.to_string()) {
        fail(&format!("cannot write {}: {e}", cfg.stats_path));
    }
}
