//! Columnar time series sampled at a fixed interval (one row per flow or queue per sample).

use schemars::JsonSchema;
use serde::Serialize;

use crate::config::SimConfig;
use crate::flow::Flow;
use crate::net::link::Channel;
use crate::qdisc::QueueDisc;
use crate::time::{secs, Time};

/// Per-flow columns.
#[derive(Clone, Debug, Default, Serialize, JsonSchema)]
pub struct FlowSeries {
    pub time_s: Vec<f64>,
    pub flow: Vec<u32>,
    pub cwnd_pkts: Vec<u32>,
    /// NaN while ssthresh is unset (Linux's "infinite").
    pub ssthresh_pkts: Vec<f64>,
    /// NaN before the first RTT sample.
    pub srtt_s: Vec<f64>,
    pub delivered_bytes: Vec<u64>,
    pub goodput_bps: Vec<f64>,
    pub throughput_bps: Vec<f64>,
    pub retransmits: Vec<u64>,
    pub bytes_in_flight: Vec<u64>,
    /// Congestion-avoidance state (`open`, `disorder`, `cwr`, `recovery`, `loss`; `""` for UDP).
    pub ca_state: Vec<&'static str>,
}

/// Per-queue columns.
#[derive(Clone, Debug, Default, Serialize, JsonSchema)]
pub struct QueueSeries {
    pub time_s: Vec<f64>,
    /// Channel index.
    pub link: Vec<u32>,
    /// `""` for the whole queue; a class name (e.g. `"L4S"`) for a class's own row.
    pub class: Vec<&'static str>,
    pub backlog_pkts: Vec<u32>,
    pub backlog_bytes: Vec<u64>,
    pub drops: Vec<u64>,
    pub ecn_marks: Vec<u64>,
    /// Mean sojourn of packets dequeued in the interval; NaN if none.
    pub sojourn_s: Vec<f64>,
    pub utilization: Vec<f64>,
}

#[derive(Clone, Debug, Default)]
pub struct Series {
    pub flows: FlowSeries,
    pub queues: QueueSeries,
}

impl FlowSeries {
    /// Room for `n` more rows in every column (`false` if the allocator refused some).
    fn reserve(&mut self, n: usize) -> bool {
        [
            self.time_s.try_reserve_exact(n),
            self.flow.try_reserve_exact(n),
            self.cwnd_pkts.try_reserve_exact(n),
            self.ssthresh_pkts.try_reserve_exact(n),
            self.srtt_s.try_reserve_exact(n),
            self.delivered_bytes.try_reserve_exact(n),
            self.goodput_bps.try_reserve_exact(n),
            self.throughput_bps.try_reserve_exact(n),
            self.retransmits.try_reserve_exact(n),
            self.bytes_in_flight.try_reserve_exact(n),
            self.ca_state.try_reserve_exact(n),
        ]
        .iter()
        .all(Result::is_ok)
    }
}

impl QueueSeries {
    /// Room for `n` more rows in every column (`false` if the allocator refused some).
    fn reserve(&mut self, n: usize) -> bool {
        [
            self.time_s.try_reserve_exact(n),
            self.link.try_reserve_exact(n),
            self.class.try_reserve_exact(n),
            self.backlog_pkts.try_reserve_exact(n),
            self.backlog_bytes.try_reserve_exact(n),
            self.drops.try_reserve_exact(n),
            self.ecn_marks.try_reserve_exact(n),
            self.sojourn_s.try_reserve_exact(n),
            self.utilization.try_reserve_exact(n),
        ]
        .iter()
        .all(Result::is_ok)
    }
}

impl Series {
    /// The rows a whole run of `cfg` adds at most, (flows, queues): a flow's from the first
    /// sample at or after its start, every channel's (and each class's) from the first.
    pub fn rows_of_run(cfg: &SimConfig, channels: &[Channel]) -> (u64, u64) {
        let iv = cfg.sample_interval_ns.max(1);
        let samples = cfg.duration_ns / iv;
        let flows = cfg
            .flows
            .iter()
            .map(|f| samples - samples.min(f.start_ns.div_ceil(iv).saturating_sub(1)))
            .sum();
        let per_sample: u64 = channels
            .iter()
            .map(|c| 1 + c.qdisc.class_names().len() as u64)
            .sum();
        (flows, samples.saturating_mul(per_sample))
    }

    /// Reserve the columns' room for the rest of a run (`rows_of_run` less the rows held)
    /// at once: rows are then appended without the copies of growing columns, nor the
    /// blocks they free (which can stay counted in the process's memory). The room is only
    /// reserved: memory is used as rows fill it. `false` if the allocator refused some (the
    /// columns then grow as rows come, as without the call).
    pub fn reserve_run(&mut self, cfg: &SimConfig, channels: &[Channel]) -> bool {
        let (flows, queues) = Series::rows_of_run(cfg, channels);
        let more = |total: u64, held: usize| {
            usize::try_from(total.saturating_sub(held as u64)).unwrap_or(usize::MAX)
        };
        let f = more(flows, self.flows.time_s.len());
        let q = more(queues, self.queues.time_s.len());
        // Both, whatever the first gives.
        let ok_f = self.flows.reserve(f);
        self.queues.reserve(q) && ok_f
    }

    pub(crate) fn push_flow(&mut self, now: Time, id: usize, f: &Flow, interval: Time) {
        let s = &mut self.flows;
        let (d_delivered, d_sent) = f.interval_delta();
        let per_s = 8.0 / secs(interval);
        s.time_s.push(secs(now));
        s.flow.push(id as u32);
        s.delivered_bytes.push(f.delivered_bytes());
        s.goodput_bps.push(d_delivered as f64 * per_s);
        s.throughput_bps.push(d_sent as f64 * per_s);
        let r = f.row();
        s.cwnd_pkts.push(r.cwnd_pkts);
        s.ssthresh_pkts.push(r.ssthresh_pkts);
        s.srtt_s.push(r.srtt_s);
        s.retransmits.push(r.retransmits);
        s.bytes_in_flight.push(r.bytes_in_flight);
        s.ca_state.push(r.ca_state);
    }

    /// Sample channel `idx` at the end of an interval of length `iv` (its interval
    /// accumulators start again).
    pub fn push_queue(&mut self, now: Time, idx: usize, ch: &mut Channel, iv: Time) {
        let utilization = ch.end_interval(now, iv);
        self.push_queue_row(now, idx, ch, utilization);
        ch.reset_interval_sojourn();
    }

    fn push_queue_row(&mut self, now: Time, idx: usize, ch: &Channel, utilization: f64) {
        let st = ch.qdisc.stats();
        let mean = |sum: u64, n: u64| {
            if n == 0 {
                f64::NAN
            } else {
                secs(sum) / n as f64
            }
        };
        self.queue_row(
            now,
            idx,
            "",
            (ch.qdisc.backlog_pkts(), ch.qdisc.backlog_bytes()),
            (st.drops(), st.ecn_marks),
            mean(ch.stats.iv_sojourn_sum, ch.stats.iv_sojourn_n),
            utilization,
        );
        for (k, (name, cs)) in ch
            .qdisc
            .class_names()
            .iter()
            .zip(&ch.stats.classes)
            .enumerate()
        {
            self.queue_row(
                now,
                idx,
                name,
                ch.qdisc.class_backlog(k),
                (st.class_drops[k], st.class_marks[k]),
                mean(cs.iv_sojourn_sum, cs.iv_sojourn_n),
                f64::NAN,
            );
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn queue_row(
        &mut self,
        now: Time,
        idx: usize,
        class: &'static str,
        backlog: (u32, u64),
        drops_marks: (u64, u64),
        sojourn_s: f64,
        utilization: f64,
    ) {
        let s = &mut self.queues;
        s.time_s.push(secs(now));
        s.link.push(idx as u32);
        s.class.push(class);
        s.backlog_pkts.push(backlog.0);
        s.backlog_bytes.push(backlog.1);
        s.drops.push(drops_marks.0);
        s.ecn_marks.push(drops_marks.1);
        s.sojourn_s.push(sojourn_s);
        s.utilization.push(utilization);
    }
}
