//! The engine's half of the control API, through which a controller outside the event loop
//! (an environment, an RL agent, a remote process) steers and reads a run: actions applied
//! now, after a latency or by a control packet; control points (packet triggers, delivered
//! messages); observations. The types are in `crate::control`; the event loop is in `mod.rs`.

use super::{EvKind, Simulation, Trigger};
use crate::control::{
    Action, ActionError, ControlMessage, MediaObservation, Observation, MESSAGE_BIT,
};
use crate::flow::{Endpoints, Flow};
use crate::policy::PolicyObservation;
use crate::qdisc::{ParamChange, Qdisc, QueueDisc};
use crate::time::{secs, Time};

impl Simulation {
    fn channel_named(&self, name: &str) -> Result<usize, ActionError> {
        self.channels
            .iter()
            .position(|c| c.name == name)
            .ok_or_else(|| ActionError(format!("no link named {name:?}")))
    }

    /// The channel of `link` and, for `flow`, the flow queue holding that flow there.
    fn qdisc_target(
        &self,
        link: &str,
        flow: Option<usize>,
    ) -> Result<(usize, Option<usize>), ActionError> {
        let c = self.channel_named(link)?;
        let Some(flow) = flow else {
            return Ok((c, None));
        };
        let Some(f) = self.flows.get(flow) else {
            return Err(ActionError(format!("set_qdisc: no flow {flow}")));
        };
        match self.channels[c].qdisc.flow_bucket(&f.tmpl) {
            Some(b) => Ok((c, Some(b))),
            None => Err(ActionError(format!(
                "set_qdisc: link {link}'s qdisc has no flow queues, so flow {flow} has none"
            ))),
        }
    }

    /// Check an action against this simulation without applying it.
    pub fn check_action(&self, a: &Action) -> Result<(), ActionError> {
        let bad = |m: String| Err(ActionError(m));
        match a {
            Action::SetCwnd { flow, cwnd, .. } => {
                match self.flows.get(*flow).map(|f| &f.ep) {
                    Some(Endpoints::Tcp { .. }) => {}
                    _ => return bad(format!("set_cwnd: flow {flow} is not a TCP flow")),
                }
                if *cwnd == 0 {
                    return bad("set_cwnd: cwnd must be at least 1 segment".into());
                }
            }
            Action::SetDropProb { link, prob } => {
                let c = self.channel_named(link)?;
                if !matches!(self.channels[c].qdisc, Qdisc::External(_)) {
                    return bad(format!(
                        "set_drop_prob: link {link} has no 'external' qdisc"
                    ));
                }
                if !(0.0..=1.0).contains(prob) {
                    return bad(format!(
                        "set_drop_prob: probability {prob} is outside [0, 1]"
                    ));
                }
            }
            Action::SetQdisc { link, flow, params } => {
                let (c, bucket) = self.qdisc_target(link, *flow)?;
                if params.is_empty() {
                    return bad("set_qdisc: give at least one parameter in params".into());
                }
                let q = &self.channels[c].qdisc;
                for (name, value) in params {
                    q.check_param(&ParamChange {
                        name,
                        value: *value,
                        bucket,
                    })
                    .map_err(|e| ActionError(format!("set_qdisc: link {link}: {e}")))?;
                }
            }
            Action::SetLinkRate { link, rate_bps } => {
                let c = self.channel_named(link)?;
                if *rate_bps == 0 {
                    return bad("set_link_rate: rate_bps must be positive".into());
                }
                if self.channels[c].schedule.is_some() {
                    return bad(format!(
                        "set_link_rate: link {link} follows a rate schedule"
                    ));
                }
                if self.channels[c].docsis.is_some() {
                    // Its grants are sized at the channel rate it was built with.
                    return bad(format!(
                        "set_link_rate: link {link} is a DOCSIS upstream, whose channel rate is fixed"
                    ));
                }
                if self.channels[c].wifi.is_some() {
                    return bad(format!(
                        "set_link_rate: link {link} is a Wi-Fi station's; its rate is its MCS"
                    ));
                }
            }
            Action::SetMediaRate { flow, rate_bps } => {
                let m = self.media_flow(*flow, "set_media_rate")?;
                if m.cc.name() != "none" {
                    return bad(format!(
                        "set_media_rate: flow {flow} runs congestion control {:?}, which sets \
                         its own target; give it cc = \"none\"",
                        m.cc.name()
                    ));
                }
                if *rate_bps == 0 {
                    return bad("set_media_rate: rate_bps must be positive".into());
                }
            }
            Action::SetQueueLimit {
                link,
                packets,
                bytes,
            } => {
                self.channel_named(link)?;
                if *packets == Some(0) || *bytes == Some(0) {
                    return bad("set_queue_limit: a queue limit must be positive".into());
                }
            }
        }
        Ok(())
    }

    /// Flow `flow`'s media endpoints, if it is a flow with a video source (`what`: the
    /// caller, for the sentence otherwise).
    fn media_flow(&self, flow: usize, what: &str) -> Result<&crate::app::Media, ActionError> {
        match self.flows.get(flow).map(|f| &f.ep) {
            Some(Endpoints::Media(m)) if m.is_video() => Ok(m),
            _ => Err(ActionError(format!(
                "{what}: flow {flow} is not a UDP flow with a video source"
            ))),
        }
    }

    /// What the sender of media flow `flow` (a video source) knows now, its frames over
    /// `(since, now]`.
    pub fn observe_media(&self, flow: usize, since: Time) -> Result<MediaObservation, ActionError> {
        let m = self.media_flow(flow, "observe_media")?;
        let fb = m.feedback_stats().unwrap_or_default();
        let x = m.external.as_deref();
        let rtt = |t: Option<Time>| t.map_or(f64::NAN, secs);
        let (frame_delays_s, late_frames, frames_made) = m
            .frames
            .as_ref()
            .map_or((Vec::new(), 0, 0), |l| l.window(since, self.now));
        Ok(MediaObservation {
            time_s: secs(self.now),
            target_bps: m.target_bps(),
            bytes_sent: m.bytes_sent,
            bytes_received: m.sink.bytes_received,
            fb_acked: fb.acked,
            fb_lost: fb.lost,
            fb_ce: fb.ce,
            srtt_s: rtt(x.and_then(|x| x.srtt)),
            latest_rtt_s: rtt(x.and_then(|x| x.latest_rtt)),
            frame_delays_s,
            late_frames,
            frames_made,
        })
    }

    /// Apply an action now.
    pub fn apply_action(&mut self, a: &Action) -> Result<(), ActionError> {
        self.check_action(a)?;
        self.do_action(a);
        Ok(())
    }

    /// Apply an action after a fixed latency.
    pub fn schedule_action(&mut self, a: Action, delay: Time) -> Result<(), ActionError> {
        self.check_action(&a)?;
        let id = self.pending.len() as u32;
        self.pending.push(Some(a));
        self.queue.push(self.now + delay, EvKind::Action(id));
        Ok(())
    }

    /// Send an action as one packet of control flow `flow`; it is applied when the packet
    /// reaches the flow's destination (and never, if the packet is lost).
    pub fn send_control(&mut self, flow: usize, a: Action) -> Result<(), ActionError> {
        self.check_action(&a)?;
        self.control_endpoint(flow)?;
        let id = self.pending.len() as u64;
        self.pending.push(Some(a));
        self.send_control_packet(flow, id);
        Ok(())
    }

    /// Send the agent's `token` as one packet on control flow `flow`; when it arrives it
    /// is listed by `take_messages` and `run_until_trigger` returns (the device's
    /// observations travel to the remote brain as packets).
    pub fn send_message(&mut self, flow: usize, token: u64) -> Result<(), ActionError> {
        if token & MESSAGE_BIT != 0 {
            return Err(ActionError(format!(
                "message token {token} must be below 2^63"
            )));
        }
        self.control_endpoint(flow)?;
        self.send_control_packet(flow, token | MESSAGE_BIT);
        Ok(())
    }

    /// The messages delivered since the last call, in order of arrival.
    pub fn take_messages(&mut self) -> Vec<ControlMessage> {
        std::mem::take(&mut self.messages)
    }

    fn control_endpoint(&mut self, flow: usize) -> Result<(), ActionError> {
        match self.flows.get_mut(flow) {
            Some(Flow {
                ep: Endpoints::Control(c),
                ..
            }) => {
                c.sent += 1;
                Ok(())
            }
            _ => Err(ActionError(format!("flow {flow} is not a control flow"))),
        }
    }

    /// One control packet carrying `seq` (an action's index, or a message token).
    fn send_control_packet(&mut self, flow: usize, seq: u64) {
        let f = &self.flows[flow];
        let (mut p, src) = (f.tmpl, f.cfg.src as u32);
        p.size = f.cfg.udp.packet_bytes;
        p.ecn = f.cfg.udp.ecn.into();
        p.created = self.now;
        p.tcp.seq = seq;
        self.out.push(p);
        self.flush(src);
    }

    pub(super) fn do_action(&mut self, a: &Action) {
        let now = self.now;
        match a {
            Action::SetCwnd {
                flow,
                cwnd,
                ssthresh,
            } => {
                let src = self.flows[*flow].cfg.src as u32;
                if let Endpoints::Tcp { snd, .. } = &mut self.flows[*flow].ep {
                    snd.set_window(*cwnd, *ssthresh);
                    snd.try_send(now, &mut self.out);
                }
                self.after_endpoint(*flow, src);
            }
            Action::SetDropProb { link, prob } => {
                if let Ok(c) = self.channel_named(link) {
                    if let Qdisc::External(q) = &mut self.channels[c].qdisc {
                        q.set_prob(*prob);
                    }
                }
            }
            Action::SetQdisc { link, flow, params } => {
                // Checked by `check_action` when the action was taken.
                if let Ok((c, bucket)) = self.qdisc_target(link, *flow) {
                    for (name, value) in params {
                        let p = ParamChange {
                            name,
                            value: *value,
                            bucket,
                        };
                        let _ = self.channels[c].qdisc.set_param(&p);
                    }
                }
            }
            Action::SetLinkRate { link, rate_bps } => {
                if let Ok(c) = self.channel_named(link) {
                    // Waiting packets were scheduled at the old rate: back into the FIFO.
                    self.devirtualise(c);
                    self.channels[c].set_rate(*rate_bps);
                }
            }
            Action::SetMediaRate { flow, rate_bps } => {
                if let Endpoints::Media(m) = &mut self.flows[*flow].ep {
                    m.set_external_rate(*rate_bps);
                }
            }
            Action::SetQueueLimit {
                link,
                packets,
                bytes,
            } => {
                if let Ok(c) = self.channel_named(link) {
                    let to = self.horizon();
                    self.channels[c].settle(to);
                    self.channels[c].qdisc.set_limits(*packets, *bytes);
                }
            }
        }
    }

    /// Make `run_until_trigger` return after every `every` packets sent on `link`.
    pub fn set_packet_trigger(
        &mut self,
        link: &str,
        every: Option<u64>,
    ) -> Result<(), ActionError> {
        let channel = self.channel_named(link)?;
        if every.is_some() && self.channels[channel].wifi.is_some() {
            return Err(ActionError(format!(
                "link {link} is a Wi-Fi station's; a packet trigger needs a point-to-point link"
            )));
        }
        self.trigger = match every {
            Some(0) => return Err(ActionError("a packet trigger needs every >= 1".into())),
            Some(every) => Some({
                // The trigger counts transmission starts as they happen: this link gets
                // its "transmission done" events back.
                self.devirtualise(channel);
                Trigger {
                    channel,
                    every,
                    next: self.channels[channel].stats.tx_pkts + every,
                }
            }),
            None => None,
        };
        Ok(())
    }

    /// Run like [`Simulation::run_until`], but return early, with `true`, as soon as the
    /// packet trigger fires (the clock then reads the trigger's time).
    pub fn run_until_trigger(&mut self, t: Time) -> bool {
        self.run_loop(t, true)
    }

    /// Per flow (by index): packets in the flow queue holding it at `link`'s flow-queue
    /// qdisc, and that queue's limit (`fq`; NaN otherwise). LFQ's per-flow features.
    pub fn observe_flow_queues(&self, link: &str) -> Result<(Vec<u32>, Vec<f64>), ActionError> {
        let c = self.channel_named(link)?;
        let q = &self.channels[c].qdisc;
        let mut backlog = Vec::with_capacity(self.flows.len());
        let mut limit = Vec::with_capacity(self.flows.len());
        for f in &self.flows {
            let queue = q.flow_bucket(&f.tmpl);
            let (b, n) = queue
                .and_then(|b| Some((b, q.flow_backlog(b)?)))
                .ok_or_else(|| {
                    ActionError(format!(
                        "link {link} has no flow-queue qdisc (fq, fq_codel, fq_pie)"
                    ))
                })?;
            backlog.push(n);
            limit.push(q.param("per_flow_limit", Some(b)).unwrap_or(f64::NAN));
        }
        Ok((backlog, limit))
    }

    /// The features the learned policy (`policy/`) of `link`'s qdisc keeps, per flow index
    /// (the row of the flow queue holding the flow; e.g. LFQ's 60, with
    /// `policy = { kind = "lfq" }` on an `fq`).
    pub fn observe_policy(&self, link: &str) -> Result<PolicyObservation, ActionError> {
        let c = self.channel_named(link)?;
        let q = &self.channels[c].qdisc;
        let none = || {
            ActionError(format!(
                "link {link} has no learned policy that keeps features"
            ))
        };
        let p = q.learned().map(|l| l.policy()).ok_or_else(none)?;
        let rows = self
            .flows
            .iter()
            .map(|f| {
                p.features(q.flow_bucket(&f.tmpl).unwrap_or(0))
                    .ok_or_else(none)
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(PolicyObservation {
            kind: p.kind(),
            names: p.feature_names(),
            rows,
        })
    }

    /// Everything an agent may observe, as columns (cumulative counters).
    pub fn observe(&self) -> Observation {
        let mut o = Observation {
            time_s: secs(self.now),
            ..Observation::default()
        };
        for f in &self.flows {
            o.flows.push(f.row());
        }
        for c in &self.channels {
            o.queues.push(c.row(self.now));
        }
        o
    }
}
