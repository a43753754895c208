//! The router's packet buffers: fixed slots allocated once. A queued [`Packet`] carries its
//! slot index in `uid` (which no qdisc reads), so the core's qdiscs hold real packets
//! without a change to their interface and nothing is allocated per packet.
//!
//! [`Packet`]: l4sim_core::packet::Packet

/// Bytes per slot: a 1500-byte MTU packet fits with room to spare (the TUN devices' MTU is
/// 1500; a longer read is truncated and then refused by the IPv4 length check).
pub const SLOT: usize = 2048;

pub struct Pool {
    buf: Vec<u8>,
    len: Vec<u16>,
    free: Vec<u32>,
}

impl Pool {
    pub fn new(slots: usize) -> Pool {
        Pool {
            buf: vec![0; slots * SLOT],
            len: vec![0; slots],
            // Lowest slots first (pop from the end).
            free: (0..slots as u32).rev().collect(),
        }
    }
    /// A free slot, or `None` when every slot holds a packet.
    #[inline]
    pub fn alloc(&mut self) -> Option<u32> {
        self.free.pop()
    }
    #[inline]
    pub fn release(&mut self, slot: u32) {
        debug_assert!(!self.free.contains(&slot), "slot {slot} released twice");
        self.free.push(slot);
    }
    /// The whole slot, to read a packet into.
    #[inline]
    pub fn slot_mut(&mut self, slot: u32) -> &mut [u8] {
        let i = slot as usize * SLOT;
        &mut self.buf[i..i + SLOT]
    }
    #[inline]
    pub fn set_len(&mut self, slot: u32, len: usize) {
        self.len[slot as usize] = len as u16;
    }
    /// The packet in `slot`.
    #[inline]
    pub fn packet(&self, slot: u32) -> &[u8] {
        let i = slot as usize * SLOT;
        &self.buf[i..i + self.len[slot as usize] as usize]
    }
    #[inline]
    pub fn packet_mut(&mut self, slot: u32) -> &mut [u8] {
        let i = slot as usize * SLOT;
        let n = self.len[slot as usize] as usize;
        &mut self.buf[i..i + n]
    }
    pub fn in_use(&self) -> usize {
        self.len.len() - self.free.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_reused_and_exhaust() {
        let mut p = Pool::new(2);
        let a = p.alloc().unwrap();
        let b = p.alloc().unwrap();
        assert_ne!(a, b);
        assert!(p.alloc().is_none());
        p.slot_mut(a)[..3].copy_from_slice(&[1, 2, 3]);
        p.set_len(a, 3);
        assert_eq!(p.packet(a), &[1, 2, 3]);
        p.release(a);
        assert_eq!(p.in_use(), 1);
        assert_eq!(p.alloc(), Some(a));
    }
}
