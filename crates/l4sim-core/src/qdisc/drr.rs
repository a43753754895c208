//! Deficit round robin over queues with new and old lists (RFC 8290 §4.1–4.2, Linux
//! `fq_codel_dequeue`): the one scheduler of the flow-queue qdiscs (FQ-CoDel, FQ-PIE, fq,
//! FQ-L4S). It only orders queue indices; the queues and their AQMs live with the caller.

use std::collections::VecDeque;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Listed {
    No,
    New,
    Old,
}

#[derive(Clone, Debug)]
pub struct Drr {
    quantum: i64,
    deficit: Vec<i64>,
    listed: Vec<Listed>,
    new: VecDeque<u32>,
    old: VecDeque<u32>,
}

impl Drr {
    pub fn new(queues: usize, quantum: u32) -> Drr {
        Drr {
            quantum: quantum as i64,
            deficit: vec![0; queues],
            listed: vec![Listed::No; queues],
            new: VecDeque::with_capacity(queues),
            old: VecDeque::with_capacity(queues),
        }
    }

    /// A packet was queued in `i`: a newly active queue joins the new list with a full
    /// quantum (RFC 8290 §4.1).
    #[inline]
    pub fn activate(&mut self, i: usize) {
        if self.listed[i] == Listed::No {
            self.listed[i] = Listed::New;
            self.deficit[i] = self.quantum;
            self.new.push_back(i as u32);
        }
    }

    /// The queue to serve: the head of the new list, else of the old list. A queue out of
    /// credit gets another quantum and goes to the tail of the old list (RFC 8290 §4.2).
    #[inline]
    pub fn next_queue(&mut self) -> Option<usize> {
        loop {
            let (from_new, i) = match (self.new.front(), self.old.front()) {
                (Some(&i), _) => (true, i as usize),
                (None, Some(&i)) => (false, i as usize),
                (None, None) => return None,
            };
            if self.deficit[i] > 0 {
                return Some(i);
            }
            self.deficit[i] += self.quantum;
            self.listed[i] = Listed::Old;
            if from_new {
                self.new.pop_front();
            } else {
                self.old.pop_front();
            }
            self.old.push_back(i as u32);
        }
    }

    /// Queue `i` (just returned by [`Drr::next_queue`]) sent a packet of `bytes`.
    #[inline]
    pub fn charge(&mut self, i: usize, bytes: u32) {
        self.deficit[i] -= bytes as i64;
    }

    /// Queue `i` (just returned by [`Drr::next_queue`]) had nothing to send: a new queue moves to
    /// the old list (so it cannot starve the old ones by re-entering as new) if others wait
    /// there; an old one leaves the lists.
    #[inline]
    pub fn empty(&mut self, i: usize) {
        if self.new.front() == Some(&(i as u32)) {
            self.new.pop_front();
            if self.old.is_empty() {
                self.listed[i] = Listed::No;
            } else {
                self.listed[i] = Listed::Old;
                self.old.push_back(i as u32);
            }
        } else {
            self.old.pop_front();
            self.listed[i] = Listed::No;
        }
    }

    /// Active queues in service order (new list, then old).
    pub fn order(&self) -> impl Iterator<Item = usize> + '_ {
        self.new.iter().chain(self.old.iter()).map(|&i| i as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_queues_first_then_round_robin_by_bytes() {
        let mut d = Drr::new(3, 1500);
        d.activate(0);
        d.activate(1);
        assert_eq!(d.next_queue(), Some(0));
        d.charge(0, 1500); // out of credit
        assert_eq!(
            d.next_queue(),
            Some(1),
            "the other new queue before 0's second quantum"
        );
        d.charge(1, 500);
        assert_eq!(d.next_queue(), Some(1), "1 still has credit");
        d.charge(1, 1000);
        d.activate(2); // a newcomer jumps ahead of the old list
        assert_eq!(d.next_queue(), Some(2));
        d.empty(2); // new and empty: to the old list behind the others
        assert_eq!(d.next_queue(), Some(0));
        assert_eq!(d.order().collect::<Vec<_>>(), vec![0, 1, 2]);
    }
}
