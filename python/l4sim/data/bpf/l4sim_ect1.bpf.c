// SPDX-License-Identifier: GPL-2.0
/*
 * ECT(1) on a Prague sender's packets: a tc (sched_cls) egress program that rewrites
 * the IPv4 ECN field ECT(0) -> ECT(1) and fixes the header checksum, attached by
 * `l4sim emulate` to the TUN device of a host whose flows all run the BPF Prague.
 *
 * L4STeam's kernel sends a Prague flow's packets as ECT(1) (RFC 9331 §4.1,
 * tcp_prague.c sets TCP_ECN_ECT_1). Linux 6.18 sends ECT(1) only on the handshake
 * (TCP_CONG_ECT_1_NEGOTIATION) and the data as ECT(0), and a BPF congestion
 * control may not write the socket's TOS; this does it on the way out, before the
 * emulated path. Not-ECT and CE are left alone.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

char _license[] SEC("license") = "GPL";

#define ETH_P_IP 0x0800
#define TC_ACT_OK 0
#define IP_CSUM_OFF 10

SEC("tc")
int l4sim_ect1(struct __sk_buff *skb)
{
	__u16 old, new;

	if (skb->protocol != bpf_htons(ETH_P_IP))
		return TC_ACT_OK;
	/* A TUN device carries bare IP: the first 16-bit word is version, IHL and TOS. */
	if (bpf_skb_load_bytes(skb, 0, &old, sizeof(old)))
		return TC_ACT_OK;
	if ((bpf_ntohs(old) & 0x3) != 0x2) /* not ECT(0) */
		return TC_ACT_OK;
	new = bpf_htons((bpf_ntohs(old) & ~0x3) | 0x1);
	bpf_l3_csum_replace(skb, IP_CSUM_OFF, old, new, sizeof(new));
	bpf_skb_store_bytes(skb, 0, &new, sizeof(new), 0);
	return TC_ACT_OK;
}
