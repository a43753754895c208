//! The receive window a receiver advertises: Linux's receive-buffer autotuning, or a fixed
//! window.
//!
//! Autotuning (Linux `net.ipv4.tcp_moderate_rcvbuf = 1`, `tcp_rmem = 4096 131072 33554432`
//! as since Linux 6.16 (6291456 before: `rmem_max`), `tcp_adv_win_scale = 1`, a bulk
//! reader that reads whatever arrives in order at once):
//!
//! - the buffer starts at `tcp_rmem[1]` and half of it is offered as window (the other
//!   half is taken as skb overhead: `tcp_win_from_space`); the first window is 45
//!   segments (`tcp_select_initial_window`, `tcp_init_buffer_space`);
//! - `rcv_ssthresh` opens the offered window by two segments per data segment received,
//!   up to the clamp and the free space (`tcp_grow_window`; for out-of-order data only
//!   when SACK is on, "to force DUPACK");
//! - once per receiver RTT (`tcp_rcv_rtt_measure_ts`, `tcp_rcv_rtt_measure`) the buffer is
//!   resized to twice what the application read in that RTT, plus 16 segments, plus twice
//!   the growth over the previous RTT (`tcp_rcv_space_adjust`, dynamic right-sizing), up
//!   to `tcp_rmem[2]`; the window clamp follows;
//! - out-of-order data holds buffer space (counted at twice its payload, the overhead
//!   `tcp_adv_win_scale = 1` assumes), and the offered window's right edge never moves
//!   left (`tcp_select_window`, `net.ipv4.tcp_shrink_window = 0`).
//!
//! So a sender can run at most about two RTTs' worth of data past a hole (and never more
//! than half the largest buffer), where a fixed 64 MiB window let it run megabytes ahead (a Not-ECT retransmission dropped by RED above
//! `max_th` again and again while new ECT data kept the average up).
//!
//! A fixed window (`rwnd`, a buffer set with `SO_RCVBUF`, which turns autotuning off in
//! Linux) is offered as it is, whatever the buffer holds.
//!
//! Not modelled: window-update ACKs sent when the application reads (`tcp_cleanup_rbuf`),
//! memory pressure and pruning of the out-of-order queue (the window keeps it within the
//! buffer), and Linux 6.6+'s measured `scaling_ratio` in place of `tcp_adv_win_scale` (a
//! window of ~60 % of the buffer where this takes 50 %).

use crate::time::Time;

/// Linux `tcp_rmem[1]`: the receive buffer a connection starts with.
pub const TCP_RMEM_INIT: u64 = 131_072;
/// Linux `tcp_rmem[2]`: the largest buffer autotuning grows to, 32 MiB since Linux 6.16.
pub const TCP_RMEM_MAX: u64 = 33_554_432;
/// RFC 7323 §2.3: the largest window shift.
const MAX_WSCALE: u32 = 14;
/// `MAX_TCP_HEADER` plus the `sk_buff` and `skb_shared_info` of one segment on x86-64
/// (`SKB_TRUESIZE(advmss + MAX_TCP_HEADER)`: 320 + 256 + 320 bytes).
const SKB_OVERHEAD: u64 = 896;

/// Linux `tcp_win_from_space` with `tcp_adv_win_scale = 1`: half the buffer is window.
#[inline]
fn win_from_space(space: u64) -> u64 {
    space - space / 2
}

/// The window shift a receiver whose buffer can reach `max_window_space` asks for
/// (Linux `tcp_select_initial_window`: `ilog2(space) - 15`, at most 14).
fn wscale_for(max_window_space: u64) -> u8 {
    let log2 = 63 - max_window_space.max(1).leading_zeros();
    log2.saturating_sub(15).min(MAX_WSCALE) as u8
}

/// The window shift a receiver announces on its SYN-ACK: for a fixed window the smallest
/// that carries it, else the one for the largest buffer autotuning may reach.
pub fn window_shift(fixed: Option<u64>, rmem_max: u64) -> u8 {
    match fixed {
        Some(b) => wscale_fixed(b),
        None => wscale_for(rmem_max),
    }
}

/// The shift that carries a fixed window of `bytes` in the 16-bit window field.
fn wscale_fixed(bytes: u64) -> u8 {
    let mut s = 0;
    while s < MAX_WSCALE && bytes >> s > u16::MAX as u64 {
        s += 1;
    }
    s as u8
}

#[derive(Clone, Debug)]
pub struct RcvBuf {
    /// `SO_RCVBUF`-fixed window in bytes; `None`: autotuning.
    fixed: Option<u64>,
    advmss: u64,
    /// The window shift (RFC 7323 window scale option; Linux `rx_opt.rcv_wscale`).
    pub wscale: u8,
    rmem_max: u64,
    /// Buffer bytes per full segment in `tcp_rcv_space_adjust` (`rcvmem`).
    rcvmem: u64,
    /// Linux `sk_rcvbuf`, `window_clamp`, `rcv_ssthresh`, `rcv_wnd`, `rcv_wup`.
    rcvbuf: u64,
    window_clamp: u64,
    rcv_ssthresh: u64,
    rcv_wnd: u64,
    rcv_wup: u64,
    /// Dynamic right-sizing (`rcvq_space`): bytes read in the last measured RTT, where
    /// and when the current measurement began.
    space: u64,
    space_seq: u64,
    space_time: Time,
    /// Receiver RTT estimate, 8 times the RTT in ns as Linux keeps `rcv_rtt_est.rtt_us`;
    /// 0 until the first sample.
    rtt8: u64,
    rtt_last_tsecr: Option<Time>,
    rtt_seq: u64,
    rtt_time: Option<Time>,
}

impl RcvBuf {
    /// A receiver with segments of `advmss` bytes: a fixed window of `fixed` bytes, or
    /// autotuning up to a buffer of `rmem_max` bytes.
    pub fn new(fixed: Option<u64>, rmem_max: u64, advmss: u32) -> RcvBuf {
        let advmss = advmss as u64;
        let mut rcvmem = advmss + SKB_OVERHEAD;
        while win_from_space(rcvmem) < advmss {
            rcvmem += 128;
        }
        // tcp_select_initial_window: the buffer's window in whole segments, at most 64 KiB
        // unscaled; the shift from the largest buffer autotuning may reach.
        let rcvbuf = TCP_RMEM_INIT.min(rmem_max);
        let full = win_from_space(rcvbuf);
        let space = if full > advmss {
            full / advmss * advmss
        } else {
            full
        };
        let rcv_wnd = space.min(u16::MAX as u64);
        // tcp_init_buffer_space: the clamp is the buffer's window less one segment.
        let window_clamp = if full > 2 * advmss {
            (2 * advmss).max(full - advmss)
        } else {
            full
        };
        let rcv_ssthresh = rcv_wnd.min(window_clamp);
        RcvBuf {
            fixed,
            advmss,
            wscale: window_shift(fixed, rmem_max),
            rmem_max,
            rcvmem,
            rcvbuf,
            window_clamp,
            rcv_ssthresh,
            rcv_wnd,
            rcv_wup: 0,
            space: rcv_ssthresh.min(rcv_wnd).min(10 * advmss),
            space_seq: 0,
            space_time: 0,
            rtt8: 0,
            rtt_last_tsecr: None,
            rtt_seq: 0,
            rtt_time: None,
        }
    }

    /// The connection is established at `now` (`tcp_init_buffer_space`).
    pub fn established(&mut self, now: Time) {
        self.space_time = now;
    }

    /// The receiver's RTT estimate (Linux `rcv_rtt_est.rtt_us`), 0 before the first sample.
    pub fn rtt(&self) -> Time {
        self.rtt8 / 8
    }

    /// The window field of the SYN-ACK, never scaled (RFC 7323 §2.2).
    pub fn syn_window(&self) -> u16 {
        match self.fixed {
            Some(b) => b.min(u16::MAX as u64) as u16,
            None => self.rcv_wnd.min(u16::MAX as u64) as u16,
        }
    }

    /// A data segment of `len` bytes whose timestamp echo is `tsecr` (None without
    /// timestamps) arrived at `now` (Linux `tcp_rcv_rtt_measure_ts`).
    pub fn on_data(&mut self, len: u32, tsecr: Option<Time>, now: Time) {
        let Some(ecr) = tsecr else { return };
        if self.rtt_last_tsecr == Some(ecr) {
            return;
        }
        self.rtt_last_tsecr = Some(ecr);
        if len as u64 >= self.advmss && now > ecr {
            self.rtt_update(now - ecr, false);
        }
    }

    /// `len` bytes arrived in order; the reader has taken everything up to `rcv_nxt`
    /// (`tcp_event_data_recv`: `tcp_rcv_rtt_measure`, `tcp_grow_window`; then
    /// `tcp_recvmsg` → `tcp_rcv_space_adjust`). `ooo_bytes`: out-of-order data held.
    pub fn on_in_order(&mut self, len: u32, rcv_nxt: u64, ooo_bytes: u64, now: Time) {
        if self.fixed.is_some() {
            return;
        }
        // tcp_rcv_rtt_measure: the time to receive one window, a lower bound (win_dep).
        let measure = match self.rtt_time {
            None => true,
            Some(t) if rcv_nxt >= self.rtt_seq => {
                self.rtt_update(now.saturating_sub(t).max(1), true);
                true
            }
            Some(_) => false,
        };
        if measure {
            self.rtt_seq = rcv_nxt + self.rcv_wnd;
            self.rtt_time = Some(now);
        }
        self.grow(len, ooo_bytes);
        self.space_adjust(rcv_nxt, now);
    }

    /// `len` bytes arrived out of order (`tcp_data_queue_ofo`): the window grows only for
    /// SACK flows.
    pub fn on_out_of_order(&mut self, len: u32, ooo_bytes: u64, sack: bool) {
        if self.fixed.is_none() && sack {
            self.grow(len, ooo_bytes);
        }
    }

    /// Linux `tcp_rcv_rtt_update`: an EWMA of gain 1/8 for timestamp samples, a running
    /// minimum for per-window ones.
    fn rtt_update(&mut self, sample: Time, win_dep: bool) {
        self.rtt8 = if self.rtt8 == 0 {
            sample * 8
        } else if win_dep {
            self.rtt8.min(sample * 8)
        } else {
            self.rtt8 - self.rtt8 / 8 + sample
        };
    }

    /// Linux `tcp_space`: the window the free buffer could still offer.
    fn free_space(&self, ooo_bytes: u64) -> u64 {
        win_from_space(self.rcvbuf.saturating_sub(2 * ooo_bytes))
    }

    /// Linux `tcp_grow_window` (the segment's overhead is the assumed one, so the
    /// increment is two segments).
    fn grow(&mut self, len: u32, ooo_bytes: u64) {
        if len < 128 {
            return;
        }
        let cap = self.window_clamp.min(self.free_space(ooo_bytes));
        if cap > self.rcv_ssthresh {
            let incr = (2 * self.advmss).max(2 * len as u64);
            self.rcv_ssthresh += (cap - self.rcv_ssthresh).min(incr);
        }
    }

    /// Linux `tcp_rcv_space_adjust`: once per receiver RTT, size the buffer for twice
    /// what was read in it (and for the growth since the RTT before).
    fn space_adjust(&mut self, copied_seq: u64, now: Time) {
        if self.rtt8 == 0 || now.saturating_sub(self.space_time) < self.rtt8 / 8 {
            return;
        }
        let copied = copied_seq - self.space_seq;
        if copied > self.space {
            let mut rcvwin = 2 * copied + 16 * self.advmss;
            let grow = rcvwin * (copied - self.space) / self.space.max(1);
            rcvwin += 2 * grow;
            let rcvbuf = (rcvwin / self.advmss * self.rcvmem).min(self.rmem_max);
            if rcvbuf > self.rcvbuf {
                self.rcvbuf = rcvbuf;
                self.window_clamp = win_from_space(rcvbuf);
            }
            self.space = copied;
        }
        self.space_seq = copied_seq;
        self.space_time = now;
    }

    /// The window field of an ACK for `rcv_nxt` with `ooo_bytes` held out of order
    /// (Linux `tcp_select_window`, `__tcp_select_window`).
    pub fn select_window(&mut self, rcv_nxt: u64, ooo_bytes: u64) -> u16 {
        if let Some(b) = self.fixed {
            return (b >> self.wscale).min(u16::MAX as u64) as u16;
        }
        // Window units of 2^wscale bytes: round down to one (`round_down`), up (`ALIGN`).
        let mask = (1u64 << self.wscale) - 1;
        let mut free = self.free_space(ooo_bytes);
        let allowed = win_from_space(self.rcvbuf);
        let full = self.window_clamp.min(allowed);
        let mut new_win = 'w: {
            if free < full / 2 {
                free &= !mask;
                if free < allowed / 16 || free < self.advmss {
                    break 'w 0;
                }
            }
            (free.min(self.rcv_ssthresh) + mask) & !mask
        };
        // Never shrink the offered window: its right edge stays where it was.
        let cur_win = (self.rcv_wup + self.rcv_wnd).saturating_sub(rcv_nxt);
        if new_win < cur_win {
            new_win = (cur_win + mask) & !mask;
        }
        self.rcv_wnd = new_win;
        self.rcv_wup = rcv_nxt;
        (new_win >> self.wscale).min(u16::MAX as u64) as u16
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::MS;

    const MSS: u32 = 1448;
    /// `tcp_rmem[2]` of Linux 4.20 to 6.15.
    const TCP_RMEM_MAX_OLD: u64 = 6_291_456;

    /// Autotuning as in Linux 4.20-6.15 (`tcp_rmem[2]` 6 MiB: window shift 7).
    fn auto() -> RcvBuf {
        RcvBuf::new(None, TCP_RMEM_MAX_OLD, MSS)
    }

    #[test]
    fn initial_window_and_shift_are_linuxs() {
        let r = auto();
        // ss -tmi on a fresh Linux connection: rcv_wnd 65160 (45 x 1448), wscale 7,
        // window_clamp 64088 (65536 less one segment).
        assert_eq!(r.syn_window(), 65_160);
        assert_eq!(r.wscale, 7);
        assert_eq!(r.window_clamp, 64_088);
        assert_eq!(r.rcv_ssthresh, 64_088);
        assert_eq!(r.space, 10 * MSS as u64);
        // rcvmem: SKB_TRUESIZE(1448 + 320) = 2344, grown by 128 until half covers a segment.
        assert_eq!(r.rcvmem, 2_984);
    }

    #[test]
    fn fixed_window_is_offered_whatever_the_buffer_holds() {
        let mut r = RcvBuf::new(Some(500_000), TCP_RMEM_MAX, MSS);
        assert_eq!(r.wscale, 3);
        assert_eq!(r.syn_window(), 65_535);
        r.on_in_order(MSS, 1448, 0, MS);
        assert_eq!((r.select_window(1448, 400_000) as u64) << r.wscale, 500_000);
        assert_eq!(wscale_fixed(64 << 20), 11);
    }

    /// Grows by two segments per segment received, up to the clamp.
    #[test]
    fn rcv_ssthresh_grows_two_segments_per_segment_up_to_the_clamp() {
        let mut r = auto();
        r.rcv_ssthresh = 20 * MSS as u64;
        r.on_in_order(MSS, MSS as u64, 0, MS);
        assert_eq!(r.rcv_ssthresh, 22 * MSS as u64);
        for k in 2..40 {
            r.on_in_order(MSS, k * MSS as u64, 0, MS);
        }
        assert_eq!(r.rcv_ssthresh, r.window_clamp);
        // Out-of-order data opens it only with SACK.
        r.rcv_ssthresh = 20 * MSS as u64;
        r.on_out_of_order(MSS, MSS as u64, false);
        assert_eq!(r.rcv_ssthresh, 20 * MSS as u64);
        r.on_out_of_order(MSS, MSS as u64, true);
        assert_eq!(r.rcv_ssthresh, 22 * MSS as u64);
    }

    /// tcp_rcv_space_adjust by hand: 20 segments read in an RTT after 10 gives
    /// rcvwin = (2 x 20 + 16) x (1 + 2 x (20 - 10) / 10) = 168 segments, a buffer of 168
    /// rcvmem and a clamp of half of it; a reader that reads nothing grows nothing.
    #[test]
    fn right_sizing_follows_what_the_reader_took_per_rtt() {
        let mut r = auto();
        let m = MSS as u64;
        r.established(0);
        r.on_data(MSS, Some(0), 10 * MS); // RTT 10 ms
        assert_eq!(r.rtt8, 80 * MS);
        r.on_in_order(MSS, 20 * m, 0, 10 * MS);
        assert_eq!(r.rcvbuf, 168 * 2_984);
        assert_eq!(r.window_clamp, 84 * 2_984);
        assert_eq!(r.space, 20 * m);
        // Within the next RTT nothing changes; after it, nothing read: nothing grows.
        r.on_in_order(MSS, 21 * m, 0, 15 * MS);
        assert_eq!(r.space_seq, 20 * m);
        let buf = r.rcvbuf;
        r.on_in_order(MSS, 21 * m, 0, 30 * MS);
        assert_eq!((r.rcvbuf, r.space), (buf, 20 * m));
        // Capped at tcp_rmem[2].
        r.on_in_order(MSS, 100_000 * m, 0, 60 * MS);
        assert_eq!(r.rcvbuf, TCP_RMEM_MAX_OLD);
    }

    /// A hole: data held out of order takes window, the right edge never recedes, and the
    /// window closes once the free space is below a segment.
    #[test]
    fn a_hole_bounds_how_far_the_sender_runs_ahead() {
        let mut r = auto();
        let m = MSS as u64;
        let w0 = (r.select_window(0, 0) as u64) << r.wscale;
        // The SYN-ACK offered 65160 bytes; that edge stays (rounded up to the 128-byte unit)
        // though rcv_ssthresh is 64088.
        assert_eq!(w0, 65_280);
        // 30 segments past a hole at 0: the window still ends at w0.
        let w = (r.select_window(0, 30 * m) as u64) << r.wscale;
        assert_eq!(w, w0);
        // More held than the buffer's window: zero offered, but the edge stays.
        let edge = (r.select_window(0, 44 * m) as u64) << r.wscale;
        assert_eq!(edge, w0);
        // The hole filled: the window opens from the new rcv_nxt.
        let w = (r.select_window(45 * m, 0) as u64) << r.wscale;
        assert_eq!(w, r.rcv_ssthresh.div_ceil(128) * 128);
        // Nothing offered yet and 44 segments held: below a sixteenth of the buffer's
        // window free, so the window is zero.
        let mut r = auto();
        r.rcv_wnd = 0;
        assert_eq!(r.select_window(0, 44 * m), 0);
    }

    #[test]
    fn shift_from_the_largest_buffer() {
        // ss -i: wscale 7 with Linux 6.15's 6 MiB, 10 with 6.16's 32 MiB.
        assert_eq!(wscale_for(TCP_RMEM_MAX_OLD), 7);
        assert_eq!(window_shift(None, TCP_RMEM_MAX), 10);
        assert_eq!(wscale_for(64 << 20), 11);
        assert_eq!(wscale_for(1 << 40), 14);
        assert_eq!(wscale_for(65_535), 0);
    }
}
