// SPDX-License-Identifier: GPL-2.0
/*
 * DCTCP (RFC 8257) as a BPF struct_ops TCP congestion control, registered as
 * "l4sim_dctcp", for `l4sim emulate` on kernels without tcp_dctcp.ko.
 *
 * Adapted from the Linux kernel's BPF DCTCP selftest,
 * tools/testing/selftests/bpf/progs/bpf_dctcp.c (Copyright (c) 2019 Facebook,
 * GPL-2.0), which follows net/ipv4/tcp_dctcp.c. Licence: GPL-2.0, as the
 * source and as the kernel requires of struct_ops programs.
 *
 * Differences from the selftest: built against a vmlinux.h generated from this
 * kernel's BTF (bpftool btf dump file /sys/kernel/btf/vmlinux format c) and
 * libbpf's headers instead of the selftests' bpf_tracing_net.h; additive
 * increase through the kernel's tcp_reno_cong_avoid kfunc; no test-only map.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

char _license[] SEC("license") = "GPL";

/* include/net/tcp.h: macros, absent from BTF. */
#define TCP_ECN_DEMAND_CWR (1 << 2)
#define TCP_CONG_NEEDS_ECN (1 << 1)

#define DCTCP_MAX_ALPHA 1024U
#define DCTCP_SHIFT_G 4 /* g = 1/2^4, tcp_dctcp.c's default */

#define min(a, b) ((a) < (b) ? (a) : (b))
#define max(a, b) ((a) > (b) ? (a) : (b))
#define min_not_zero(a, b) ((a) == 0 ? (b) : ((b) == 0 ? (a) : min(a, b)))

extern void tcp_reno_cong_avoid(struct sock *sk, __u32 ack, __u32 acked) __ksym;

struct dctcp {
	__u32 old_delivered;
	__u32 old_delivered_ce;
	__u32 prior_rcv_nxt;
	__u32 dctcp_alpha;
	__u32 next_seq;
	__u32 ce_state;
	__u32 loss_cwnd;
};

static __always_inline struct tcp_sock *tcp_sk(const struct sock *sk)
{
	return (struct tcp_sock *)sk;
}

static __always_inline struct inet_connection_sock *inet_csk(const struct sock *sk)
{
	return (struct inet_connection_sock *)sk;
}

static __always_inline struct dctcp *ca_of(const struct sock *sk)
{
	return (struct dctcp *)inet_csk(sk)->icsk_ca_priv;
}

static __always_inline int before(__u32 seq1, __u32 seq2)
{
	return (__s32)(seq1 - seq2) < 0;
}

static __always_inline void dctcp_reset(const struct tcp_sock *tp, struct dctcp *ca)
{
	ca->next_seq = tp->snd_nxt;
	ca->old_delivered = tp->delivered;
	ca->old_delivered_ce = tp->delivered_ce;
}

SEC("struct_ops/l4sim_dctcp_init")
void BPF_PROG(l4sim_dctcp_init, struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	struct dctcp *ca = ca_of(sk);

	ca->prior_rcv_nxt = tp->rcv_nxt;
	ca->dctcp_alpha = DCTCP_MAX_ALPHA;
	ca->loss_cwnd = 0;
	ca->ce_state = 0;
	dctcp_reset(tp, ca);
}

SEC("struct_ops/l4sim_dctcp_ssthresh")
__u32 BPF_PROG(l4sim_dctcp_ssthresh, struct sock *sk)
{
	struct dctcp *ca = ca_of(sk);
	struct tcp_sock *tp = tcp_sk(sk);

	ca->loss_cwnd = tp->snd_cwnd;
	return max(tp->snd_cwnd - ((tp->snd_cwnd * ca->dctcp_alpha) >> 11U), 2U);
}

/* Once per RTT: alpha = (1 - g) * alpha + g * F, F the fraction of CE-marked deliveries. */
SEC("struct_ops/l4sim_dctcp_update_alpha")
void BPF_PROG(l4sim_dctcp_update_alpha, struct sock *sk, __u32 flags)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	struct dctcp *ca = ca_of(sk);

	if (!before(tp->snd_una, ca->next_seq)) {
		__u32 delivered_ce = tp->delivered_ce - ca->old_delivered_ce;
		__u32 alpha = ca->dctcp_alpha;

		alpha -= min_not_zero(alpha, alpha >> DCTCP_SHIFT_G);
		if (delivered_ce) {
			__u32 delivered = tp->delivered - ca->old_delivered;

			delivered_ce <<= (10 - DCTCP_SHIFT_G);
			delivered_ce /= max(1U, delivered);
			alpha = min(alpha + delivered_ce, DCTCP_MAX_ALPHA);
		}
		ca->dctcp_alpha = alpha;
		dctcp_reset(tp, ca);
	}
}

static __always_inline void dctcp_react_to_loss(struct sock *sk)
{
	struct dctcp *ca = ca_of(sk);
	struct tcp_sock *tp = tcp_sk(sk);

	ca->loss_cwnd = tp->snd_cwnd;
	tp->snd_ssthresh = max(tp->snd_cwnd >> 1U, 2U);
}

SEC("struct_ops/l4sim_dctcp_state")
void BPF_PROG(l4sim_dctcp_state, struct sock *sk, __u8 new_state)
{
	/* RTO losses are handled in cwnd_event: one loss reaction per RTT. */
	if (new_state == TCP_CA_Recovery &&
	    new_state != BPF_CORE_READ_BITFIELD(inet_csk(sk), icsk_ca_state))
		dctcp_react_to_loss(sk);
}

static __always_inline void dctcp_ece_ack_cwr(struct sock *sk, __u32 ce_state)
{
	struct tcp_sock *tp = tcp_sk(sk);

	if (ce_state == 1)
		tp->ecn_flags |= TCP_ECN_DEMAND_CWR;
	else
		tp->ecn_flags &= ~TCP_ECN_DEMAND_CWR;
}

/* The receiver's CE state machine (RFC 8257 §3.2): echo each change of CE state at once,
 * first sending a delayed ACK for the old state. */
static __always_inline void dctcp_ece_ack_update(struct sock *sk, enum tcp_ca_event evt,
						 __u32 *prior_rcv_nxt, __u32 *ce_state)
{
	__u32 new_ce_state = (evt == CA_EVENT_ECN_IS_CE) ? 1 : 0;

	if (*ce_state != new_ce_state) {
		if (inet_csk(sk)->icsk_ack.pending & ICSK_ACK_TIMER) {
			dctcp_ece_ack_cwr(sk, *ce_state);
			bpf_tcp_send_ack(sk, *prior_rcv_nxt);
		}
		inet_csk(sk)->icsk_ack.pending |= ICSK_ACK_NOW;
	}
	*prior_rcv_nxt = tcp_sk(sk)->rcv_nxt;
	*ce_state = new_ce_state;
	dctcp_ece_ack_cwr(sk, new_ce_state);
}

SEC("struct_ops/l4sim_dctcp_cwnd_event")
void BPF_PROG(l4sim_dctcp_cwnd_event, struct sock *sk, enum tcp_ca_event ev)
{
	struct dctcp *ca = ca_of(sk);

	switch (ev) {
	case CA_EVENT_ECN_IS_CE:
	case CA_EVENT_ECN_NO_CE:
		dctcp_ece_ack_update(sk, ev, &ca->prior_rcv_nxt, &ca->ce_state);
		break;
	case CA_EVENT_LOSS:
		dctcp_react_to_loss(sk);
		break;
	default:
		break;
	}
}

SEC("struct_ops/l4sim_dctcp_cwnd_undo")
__u32 BPF_PROG(l4sim_dctcp_cwnd_undo, struct sock *sk)
{
	const struct dctcp *ca = ca_of(sk);

	return max(tcp_sk(sk)->snd_cwnd, ca->loss_cwnd);
}

SEC("struct_ops/l4sim_dctcp_cong_avoid")
void BPF_PROG(l4sim_dctcp_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	tcp_reno_cong_avoid(sk, ack, acked);
}

SEC(".struct_ops")
struct tcp_congestion_ops l4sim_dctcp = {
	.init = (void *)l4sim_dctcp_init,
	.in_ack_event = (void *)l4sim_dctcp_update_alpha,
	.cwnd_event = (void *)l4sim_dctcp_cwnd_event,
	.ssthresh = (void *)l4sim_dctcp_ssthresh,
	.cong_avoid = (void *)l4sim_dctcp_cong_avoid,
	.undo_cwnd = (void *)l4sim_dctcp_cwnd_undo,
	.set_state = (void *)l4sim_dctcp_state,
	.flags = TCP_CONG_NEEDS_ECN,
	.name = "l4sim_dctcp",
};
