// SPDX-License-Identifier: GPL-2.0
/*
 * TCP Prague's control law as a BPF struct_ops TCP congestion control, registered
 * as "l4sim_prague", for `l4sim emulate` on kernels without tcp_prague.ko.
 *
 * Follows the L4STeam tree's net/ipv4/tcp_prague.c (GPL-2.0; Olivier Tilmans,
 * Koen De Schepper, Bob Briscoe) with RTT independence off (prague_rtt_scaling
 * RTT_CONTROL_NONE) and no classic-ECN detection (prague_ecn_fallback 0), written
 * against this kernel's BTF and libbpf's headers. Licence: GPL-2.0, as the source
 * and as the kernel requires of struct_ops programs.
 *
 * What it keeps of tcp_prague.c: the congestion estimate alpha, an EWMA with
 * g = 1/16 of the fraction of CE-marked deliveries per round, kept upscaled by 1/g
 * with 20 bits of fraction (prague_update_alpha); a window kept with 20 bits of
 * fraction (frac_cwnd), cut by alpha/2 on entering CWR, which the kernel does at
 * most once per round trip (prague_enter_cwr); the additive increase of one
 * segment per round over the non-CE-marked acked segments (prague_update_cwnd);
 * snd_cwnd stepped by one segment per ACK towards the fractional window instead
 * of PRR; a halving on loss or RTO (prague_enter_loss); pacing at 100 % of
 * cwnd/srtt in congestion avoidance, 200 % early in slow start
 * (prague_update_pacing_rate). What it cannot keep is listed in
 * docs/emulation.md.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

char _license[] SEC("license") = "GPL";

/* include/net/tcp.h (Linux 6.18): macros, absent from BTF. */
#define TCP_CONG_NEEDS_ECN (1 << 1)
#define TCP_CONG_NEEDS_ACCECN (1 << 2)
#define TCP_CONG_ECT_1_NEGOTIATION (1 << 3)
#define TCP_CONG_NO_FALLBACK_RFC3168 (1 << 4)
#define USEC_PER_SEC 1000000ULL

/* tcp_prague.c's constants. */
#define MIN_CWND 2U
#define PRAGUE_ALPHA_BITS 20U
#define PRAGUE_MAX_ALPHA (1ULL << PRAGUE_ALPHA_BITS)
#define CWND_UNIT 20U
#define ONE_CWND (1ULL << CWND_UNIT)
#define PRAGUE_SHIFT_G 4 /* EWMA gain g = 1/2^4 */

#define min(a, b) ((a) < (b) ? (a) : (b))
#define max(a, b) ((a) > (b) ? (a) : (b))

extern __u32 tcp_slow_start(struct tcp_sock *tp, __u32 acked) __ksym;

struct prague {
	__u64 upscaled_alpha; /* alpha / g, 20 bits of fraction */
	__u64 frac_cwnd; /* cwnd, CWND_UNIT bits of fraction */
	__u64 loss_frac_cwnd;
	__u32 loss_cwnd;
	__u32 old_delivered; /* tp->delivered at round start */
	__u32 old_delivered_ce; /* tp->delivered_ce at round start */
	__u32 next_seq; /* tp->snd_nxt at round start */
	__u32 last_delivered_ce; /* tp->delivered_ce at the previous ACK */
	__u32 round;
	__u8 saw_ce; /* a CE mark has been echoed: an AQM is on the path */
	__u8 in_loss; /* in a reduction caused by loss */
};

static __always_inline struct tcp_sock *tcp_sk(const struct sock *sk)
{
	return (struct tcp_sock *)sk;
}

static __always_inline struct inet_connection_sock *inet_csk(const struct sock *sk)
{
	return (struct inet_connection_sock *)sk;
}

static __always_inline struct prague *prague_ca(const struct sock *sk)
{
	return (struct prague *)inet_csk(sk)->icsk_ca_priv;
}

static __always_inline int before(__u32 seq1, __u32 seq2)
{
	return (__s32)(seq1 - seq2) < 0;
}

static __always_inline int tcp_in_slow_start(const struct tcp_sock *tp)
{
	return tp->snd_cwnd < tp->snd_ssthresh;
}

/* include/net/tcp.h tcp_is_cwnd_limited. */
static __always_inline int tcp_is_cwnd_limited(const struct tcp_sock *tp)
{
	if (BPF_CORE_READ_BITFIELD(tp, is_cwnd_limited))
		return 1;
	if (tcp_in_slow_start(tp))
		return tp->snd_cwnd < 2 * tp->max_packets_out;
	return 0;
}

/* prague_frac_cwnd_to_snd_cwnd: the fractional window rounded up. */
static __always_inline __u32 frac_to_snd_cwnd(const struct prague *ca)
{
	return max((__u32)((ca->frac_cwnd + ONE_CWND - 1) >> CWND_UNIT), 1U);
}

/* tcp_mss_to_mtu for IPv4 without IP options. */
static __always_inline __u64 mss_to_mtu(const struct tcp_sock *tp)
{
	return (__u64)tp->mss_cache + tp->tcp_header_len + 20;
}

/* prague_update_pacing_rate: 100 % of frac_cwnd / srtt, 200 % while cwnd is below half
 * of ssthresh (slow start, which sends two segments per ACK). */
static __always_inline void prague_update_pacing_rate(struct sock *sk)
{
	struct prague *ca = prague_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);
	__u64 mtu = mss_to_mtu(tp);
	__u64 rate = (USEC_PER_SEC << 3) * mtu;

	if (tp->snd_cwnd < tp->snd_ssthresh / 2)
		rate <<= 1;
	if (tp->srtt_us)
		rate /= tp->srtt_us;
	rate = (rate * ca->frac_cwnd + (ONE_CWND >> 1)) >> CWND_UNIT;
	rate = min(rate, (__u64)sk->sk_max_pacing_rate);
	sk->sk_pacing_rate = rate;
}

static __always_inline void prague_new_round(struct sock *sk)
{
	struct prague *ca = prague_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);

	ca->next_seq = tp->snd_nxt;
	ca->old_delivered_ce = tp->delivered_ce;
	ca->old_delivered = tp->delivered;
	if (!tcp_in_slow_start(tp))
		++ca->round;
}

/* prague_update_alpha, once per round: upscaled_alpha += F - upscaled_alpha * g, F the
 * fraction of this round's deliveries that were CE-marked (20 bits); not before the
 * first CE mark. */
static __always_inline void prague_update_alpha(struct sock *sk)
{
	struct prague *ca = prague_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);
	__u64 ecn_segs, alpha;

	if (ca->saw_ce) {
		alpha = ca->upscaled_alpha;
		ecn_segs = tp->delivered_ce - ca->old_delivered_ce;
		if (ecn_segs) {
			__u32 acked_segs = tp->delivered - ca->old_delivered;

			ecn_segs <<= PRAGUE_ALPHA_BITS;
			ecn_segs /= max(1U, acked_segs);
		}
		alpha = alpha - (alpha >> PRAGUE_SHIFT_G) + ecn_segs;
		ca->upscaled_alpha = min(PRAGUE_MAX_ALPHA << PRAGUE_SHIFT_G, alpha);
	}
	prague_new_round(sk);
}

/* prague_update_cwnd: the additive increase over the non-CE-marked acked segments (one
 * segment per round: 1/cwnd per segment), none while in a loss reduction or not
 * cwnd-limited; then snd_cwnd is stepped by one towards the fractional window. */
static __always_inline void prague_update_cwnd(struct sock *sk, const struct rate_sample *rs)
{
	struct prague *ca = prague_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);
	__u32 delivered_ce = tp->delivered_ce;
	__s64 acked = rs->acked_sacked;
	__u32 ce = delivered_ce - ca->last_delivered_ce;
	__u64 increase;
	__u32 new_cwnd;

	ca->last_delivered_ce = delivered_ce;
	if (ce) {
		ca->saw_ce = 1;
		acked -= ce;
	}
	if (acked <= 0 || ca->in_loss || !tcp_is_cwnd_limited(tp))
		goto adjust;
	if (tcp_in_slow_start(tp)) {
		/* The kernel's slow start grows snd_cwnd; the fractional window follows it
		 * (tcp_prague.c grows snd_cwnd alone here and lets the next reduction
		 * start from frac_cwnd). */
		acked = tcp_slow_start(tp, acked);
		ca->frac_cwnd = (__u64)tp->snd_cwnd << CWND_UNIT;
		if (!acked)
			return;
	}
	new_cwnd = frac_to_snd_cwnd(ca);
	increase = ((__u64)acked * ONE_CWND + (new_cwnd >> 1)) / new_cwnd;
	ca->frac_cwnd += max((__u64)acked, increase);

adjust:
	new_cwnd = frac_to_snd_cwnd(ca);
	if (tp->snd_cwnd > new_cwnd && tp->snd_cwnd > MIN_CWND) {
		/* one segment per ACK, as tcp_prague.c: no PRR */
		tp->snd_cwnd = tp->snd_cwnd - 1;
		tp->snd_ssthresh = tp->snd_cwnd;
	} else if (tp->snd_cwnd < new_cwnd && tp->snd_cwnd < tp->snd_cwnd_clamp) {
		tp->snd_cwnd = tp->snd_cwnd + 1;
	}
}

SEC("struct_ops/l4sim_prague_init")
void BPF_PROG(l4sim_prague_init, struct sock *sk)
{
	struct prague *ca = prague_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);

	/* prague_init: pace (the kernel's internal pacing: no fq qdisc is needed). */
	if (sk->sk_pacing_status == SK_PACING_NONE)
		sk->sk_pacing_status = SK_PACING_NEEDED;
	ca->upscaled_alpha = PRAGUE_MAX_ALPHA << PRAGUE_SHIFT_G;
	ca->frac_cwnd = (__u64)tp->snd_cwnd << CWND_UNIT;
	ca->loss_frac_cwnd = 0;
	ca->loss_cwnd = 0;
	ca->round = 0;
	ca->in_loss = 0;
	ca->saw_ce = !!tp->delivered_ce;
	ca->last_delivered_ce = tp->delivered_ce;
	if (tp->srtt_us)
		prague_update_pacing_rate(sk);
	prague_new_round(sk);
}

SEC("struct_ops/l4sim_prague_cong_control")
void BPF_PROG(l4sim_prague_cong_control, struct sock *sk, __u32 ack, int flag,
	      const struct rate_sample *rs)
{
	struct tcp_sock *tp = tcp_sk(sk);

	prague_update_cwnd(sk, rs);
	if (!before(tp->snd_una, prague_ca(sk)->next_seq))
		prague_update_alpha(sk);
	prague_update_pacing_rate(sk);
}

/* prague_enter_loss: halve the fractional window (Reno's response). */
static __always_inline void prague_enter_loss(struct sock *sk)
{
	struct prague *ca = prague_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);

	ca->loss_cwnd = tp->snd_cwnd;
	ca->loss_frac_cwnd = ca->frac_cwnd;
	ca->frac_cwnd -= ca->frac_cwnd >> 1;
	ca->in_loss = 1;
}

/* prague_enter_cwr: cut the fractional window by alpha/2, rounded to nearest. The kernel
 * enters CWR at most once per round trip (tcp_enter_cwr, left at high_seq). */
static __always_inline void prague_enter_cwr(struct sock *sk)
{
	struct prague *ca = prague_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);
	__u64 alpha = ca->upscaled_alpha >> PRAGUE_SHIFT_G;
	__u64 reduction;

	reduction = (alpha * ca->frac_cwnd + PRAGUE_MAX_ALPHA) >> (PRAGUE_ALPHA_BITS + 1U);
	ca->frac_cwnd -= reduction;
	/* A mark ends slow start (the kernel's slow start would otherwise regrow snd_cwnd
	 * before it is stepped down). */
	if (tcp_in_slow_start(tp))
		tp->snd_ssthresh = max(frac_to_snd_cwnd(ca), MIN_CWND);
}

SEC("struct_ops/l4sim_prague_state")
void BPF_PROG(l4sim_prague_state, struct sock *sk, __u8 new_state)
{
	if (new_state == BPF_CORE_READ_BITFIELD(inet_csk(sk), icsk_ca_state))
		return;
	switch (new_state) {
	case TCP_CA_Recovery:
		prague_enter_loss(sk);
		break;
	case TCP_CA_CWR:
		prague_enter_cwr(sk);
		break;
	case TCP_CA_Open:
		prague_ca(sk)->in_loss = 0;
		break;
	default:
		break;
	}
}

SEC("struct_ops/l4sim_prague_cwnd_event")
void BPF_PROG(l4sim_prague_cwnd_event, struct sock *sk, enum tcp_ca_event ev)
{
	if (ev == CA_EVENT_LOSS)
		prague_enter_loss(sk);
}

/* prague_ssthresh: the window itself carries the reduction (frac_cwnd). */
SEC("struct_ops/l4sim_prague_ssthresh")
__u32 BPF_PROG(l4sim_prague_ssthresh, struct sock *sk)
{
	return tcp_sk(sk)->snd_ssthresh;
}

SEC("struct_ops/l4sim_prague_cwnd_undo")
__u32 BPF_PROG(l4sim_prague_cwnd_undo, struct sock *sk)
{
	struct prague *ca = prague_ca(sk);

	ca->frac_cwnd = max(ca->frac_cwnd, ca->loss_frac_cwnd);
	return max(ca->loss_cwnd, tcp_sk(sk)->snd_cwnd);
}

SEC(".struct_ops")
struct tcp_congestion_ops l4sim_prague = {
	.init = (void *)l4sim_prague_init,
	.cong_control = (void *)l4sim_prague_cong_control,
	.cwnd_event = (void *)l4sim_prague_cwnd_event,
	.ssthresh = (void *)l4sim_prague_ssthresh,
	.undo_cwnd = (void *)l4sim_prague_cwnd_undo,
	.set_state = (void *)l4sim_prague_state,
	/* tcp_prague.c's flags: ECN on every segment, Accurate ECN feedback (RFC 9768)
	 * and no fallback to RFC 3168 feedback; ECT(1) on the SYN. This kernel sends the
	 * data ECT(0), which l4sim_ect1.bpf.c rewrites (docs/emulation.md). */
	.flags = TCP_CONG_NEEDS_ECN | TCP_CONG_NEEDS_ACCECN | TCP_CONG_ECT_1_NEGOTIATION |
		 TCP_CONG_NO_FALLBACK_RFC3168,
	.name = "l4sim_prague",
};
