//! The request/answer path between the replayer and the host: the socket,
//! plus a shared-memory mailbox when both sides busy-wait.
//!
//! With [`crate::HostOptions::spin`] set, the host has a CPU of its own and
//! each side busy-waits for the other's next message. Over the socket alone
//! a call then still costs four system calls on its critical path (send,
//! receive, send, receive: ≈10 µs on these machines). The mailbox carries the
//! two messages of every call — [`protocol::INVOKE`] and [`protocol::DONE`] —
//! through a shared `memfd` page instead: the sender copies the message into
//! its slot and bumps a sequence number, the receiver spins on that number.
//! No system call at all while both sides are awake.
//!
//! A receiver that has spun for its whole budget goes to sleep in `poll` on
//! the socket after raising its slot's `sleeping` flag; a sender that finds
//! the flag raised (it swaps it back to zero) sends a one-word
//! [`protocol::DOORBELL`] on the socket. Both sides swap the flag, so exactly
//! one of them clears it and every doorbell sent is expected and consumed by
//! the receiver's main loop — never by the host's fault handler, which reads
//! page data from the same socket.
//!
//! Everything else (page requests and data, mapping lists, crash reports from
//! the host's signal handler, messages too large for a slot) stays on the
//! socket, which the spinning receiver also polls.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use crate::protocol;
use crate::sys;
pub(crate) use rdb_tracee::this_process::{monotonic_coarse_ns, monotonic_ns};

/// Bytes of one direction's message area.
const SLOT_BYTES: usize = 128 * 1024;

#[repr(C, align(64))]
struct Slot {
    /// Bumped by the sender after each message.
    seq: AtomicU32,
    /// 1 while the receiver sleeps in `poll` (or is about to).
    sleeping: AtomicU32,
    len: AtomicU32,
    _pad: [u8; 52],
    data: [u8; SLOT_BYTES],
}

#[repr(C)]
struct Shared {
    to_host: Slot,
    to_replayer: Slot,
}

/// Which side of the channel this is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    Replayer,
    Host,
}

/// A `memfd` mapped shared by both sides.
pub(crate) struct Mailbox {
    shared: *mut Shared,
    fd: OwnedFd,
}

impl Mailbox {
    /// A new, zeroed mailbox (replayer side, before spawning the host).
    pub fn create() -> io::Result<Mailbox> {
        Mailbox::map(sys::memfd(c"rdb-mailbox", std::mem::size_of::<Shared>() as u64)?)
    }

    /// Maps a mailbox created by the other side.
    pub fn map(fd: OwnedFd) -> io::Result<Mailbox> {
        let p = sys::map_shared(fd.as_raw_fd(), std::mem::size_of::<Shared>())?;
        Ok(Mailbox { shared: p.cast(), fd })
    }

    pub fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    fn slot(&self, to: Side) -> &Slot {
        // SAFETY: the mapping lives as long as self; every field the other
        // process writes concurrently is atomic, and `data` is only read
        // after an Acquire load of the `seq` the sender bumped with SeqCst
        // after writing it (and not written again before the answer).
        unsafe {
            match to {
                Side::Host => &(*self.shared).to_host,
                Side::Replayer => &(*self.shared).to_replayer,
            }
        }
    }
}

// SAFETY: the mapping is owned by the Mailbox and not tied to a thread; the
// fields shared with the other side are atomics (see `Mailbox::slot`).
unsafe impl Send for Mailbox {}

impl Drop for Mailbox {
    fn drop(&mut self) {
        // Exactly what `map` mapped; nothing refers to it once the mailbox is dropped.
        sys::unmap(self.shared as u64, std::mem::size_of::<Shared>() as u64);
    }
}

/// What [`Channel::recv`] got.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Received {
    /// A message of this many bytes is in the buffer (0: the peer closed the socket).
    Message(usize),
    TimedOut,
}

/// One side's end: the socket, and the mailbox when spinning.
pub(crate) struct Channel {
    pub fd: RawFd,
    side: Side,
    mailbox: Option<Mailbox>,
    spin: Duration,
    /// Last sequence number taken from the incoming slot.
    seen: u32,
}

impl Channel {
    pub fn new(fd: RawFd, side: Side, mailbox: Option<Mailbox>, spin: Duration) -> Channel {
        let mailbox = mailbox.filter(|_| !spin.is_zero());
        Channel { fd, side, mailbox, spin, seen: 0 }
    }

    fn incoming(&self) -> Option<&Slot> {
        self.mailbox.as_ref().map(|m| m.slot(self.side))
    }

    /// Sends one message: through the mailbox when there is one and it fits,
    /// else on the socket.
    pub fn send(&self, message: &[u8]) -> io::Result<()> {
        let peer = match self.side {
            Side::Replayer => Side::Host,
            Side::Host => Side::Replayer,
        };
        let Some(slot) = self.mailbox.as_ref().map(|m| m.slot(peer)).filter(|_| message.len() <= SLOT_BYTES) else {
            return protocol::send(self.fd, message);
        };
        // SAFETY: the peer reads `data` only after seeing the new `seq` below,
        // and sends nothing back (so we write nothing here) before it has.
        unsafe {
            std::ptr::copy_nonoverlapping(message.as_ptr(), slot.data.as_ptr().cast_mut(), message.len());
        }
        slot.len.store(message.len() as u32, Ordering::Relaxed);
        slot.seq.fetch_add(1, Ordering::SeqCst);
        if slot.sleeping.swap(0, Ordering::SeqCst) == 1 {
            protocol::send(self.fd, &protocol::DOORBELL.to_le_bytes())?;
        }
        Ok(())
    }

    /// Takes a new mailbox message into `buf`, if there is one.
    fn take(&mut self, buf: &mut [u8]) -> Option<usize> {
        let slot = self.incoming()?;
        let seq = slot.seq.load(Ordering::Acquire);
        if seq == self.seen {
            return None;
        }
        let len = (slot.len.load(Ordering::Relaxed) as usize).min(SLOT_BYTES).min(buf.len());
        buf[..len].copy_from_slice(&slot.data[..len]);
        self.seen = seq;
        Some(len)
    }

    /// Receives the next message (mailbox or socket) into `buf`, waiting at
    /// most until `deadline` ([`monotonic_ns`]; forever when `None`).
    /// Doorbells are consumed here.
    pub fn recv(&mut self, buf: &mut [u8], deadline: Option<u64>) -> io::Result<Received> {
        loop {
            // Busy-wait: the mailbox every turn; every 64th, a yield then the socket; the
            // clock every 64th from the second on. A peer sharing our CPU has usually
            // answered by the first yield: a call then makes no `poll` and reads no clock
            // here (a system call with the TSC off).
            if self.mailbox.is_some() {
                let mut until = None;
                let mut turn = 0u32;
                loop {
                    if let Some(n) = self.take(buf) {
                        return Ok(Received::Message(n));
                    }
                    if turn.is_multiple_of(64) {
                        // Free the CPU if something else wants it (the peer, when it
                        // shares this CPU): nearly free when nothing does.
                        std::thread::yield_now();
                        if let Some(n) = self.take(buf) {
                            return Ok(Received::Message(n));
                        }
                        if readable(self.fd, 0)? {
                            break;
                        }
                    }
                    if turn % 64 == 63 {
                        let now = monotonic_ns();
                        let until = *until.get_or_insert(now + self.spin.as_nanos() as u64);
                        if now >= until || deadline.is_some_and(|d| now >= d) {
                            break;
                        }
                    }
                    turn = turn.wrapping_add(1);
                    std::hint::spin_loop();
                }
            }
            // Sleep on the socket, telling the sender to ring.
            if let Some(slot) = self.incoming() {
                slot.sleeping.store(1, Ordering::SeqCst);
            }
            if let Some(n) = self.take(buf) {
                if self.lower() {
                    self.consume_doorbell()?;
                }
                return Ok(Received::Message(n));
            }
            let timeout = deadline.map(|d| Duration::from_nanos(d.saturating_sub(monotonic_ns())));
            let ready = readable_for(self.fd, timeout)?;
            let rang = self.lower();
            if !ready {
                if rang {
                    // A message came in just now: take it rather than time out.
                    self.consume_doorbell()?;
                    continue;
                }
                return Ok(Received::TimedOut);
            }
            let n = protocol::recv(self.fd, buf)?;
            if is_doorbell(&buf[..n]) {
                continue; // the message is in the mailbox
            }
            if rang {
                self.consume_doorbell()?;
            }
            return Ok(Received::Message(n));
        }
    }

    /// Lowers our `sleeping` flag; true when the sender had already lowered
    /// it, i.e. a doorbell is on its way (or there).
    fn lower(&self) -> bool {
        self.incoming().is_some_and(|slot| slot.sleeping.swap(0, Ordering::SeqCst) == 0)
    }

    /// Reads the doorbell the sender rang for a message taken from the
    /// mailbox, so that it is never read as another message.
    fn consume_doorbell(&self) -> io::Result<()> {
        let mut word = [0u8; 16];
        if !readable_for(self.fd, Some(Duration::from_secs(5)))? {
            return Err(io::Error::new(io::ErrorKind::TimedOut, "the doorbell for a mailbox message never came"));
        }
        let n = protocol::recv(self.fd, &mut word)?;
        if n == 0 || is_doorbell(&word[..n]) {
            return Ok(()); // (0: the peer is gone; the next receive says so)
        }
        Err(io::Error::new(io::ErrorKind::InvalidData, "a message came where a doorbell was expected"))
    }
}

fn is_doorbell(message: &[u8]) -> bool {
    message == protocol::DOORBELL.to_le_bytes()
}

use crate::sys::readable;

/// Waits until `fd` is readable (or hung up); false after `timeout`.
pub(crate) fn readable_for(fd: RawFd, timeout: Option<Duration>) -> io::Result<bool> {
    let Some(timeout) = timeout else {
        return readable(fd, -1);
    };
    let deadline = monotonic_ns() + timeout.as_nanos() as u64;
    loop {
        let left = deadline.saturating_sub(monotonic_ns());
        // Whole milliseconds, rounded up.
        if readable(fd, left.div_ceil(1_000_000).min(i32::MAX as u64) as i32)? {
            return Ok(true);
        }
        if monotonic_ns() >= deadline {
            return Ok(false);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair() -> (OwnedFd, OwnedFd) {
        crate::sys::socket_pair().unwrap()
    }

    /// Many round trips with short spins, so that both sides go to sleep and
    /// get woken by doorbells at every possible moment: every message arrives
    /// exactly once, in order, and no doorbell is left over on the socket.
    #[test]
    fn messages_arrive_once_in_order_through_mailbox_sleeps_and_socket() {
        let (a, b) = pair();
        let mailbox = Mailbox::create().unwrap();
        let theirs = Mailbox::map(mailbox.fd.try_clone().unwrap()).unwrap();
        let spin = Duration::from_micros(3);
        let host = std::thread::spawn(move || {
            let mut ch = Channel::new(b.as_raw_fd(), Side::Host, Some(theirs), spin);
            let mut buf = vec![0u8; SLOT_BYTES + 16];
            loop {
                let Received::Message(n) = ch.recv(&mut buf, None).unwrap() else { unreachable!() };
                if n == 0 {
                    return;
                }
                let mut answer = buf[..n].to_vec();
                answer.reverse();
                if answer.len() > 1000 {
                    std::thread::sleep(Duration::from_micros(200));
                }
                ch.send(&answer).unwrap();
            }
        });
        let mut ch = Channel::new(a.as_raw_fd(), Side::Replayer, Some(mailbox), spin);
        let mut buf = vec![0u8; SLOT_BYTES + 16];
        for i in 0..3000u32 {
            // Mostly small messages; some too large for the mailbox; some slow answers.
            let len = match i % 100 {
                0 => SLOT_BYTES + 8,
                7 => 2000,
                _ => 8 + (i as usize % 50),
            };
            let msg: Vec<u8> = (0..len).map(|k| (k as u32 ^ i) as u8).collect();
            ch.send(&msg).unwrap();
            if i % 13 == 0 {
                std::thread::sleep(Duration::from_micros(50));
            }
            let deadline = Some(monotonic_ns() + 20_000_000_000);
            let Received::Message(n) = ch.recv(&mut buf, deadline).unwrap() else { panic!("timed out at {i}") };
            let mut expect = msg.clone();
            expect.reverse();
            assert_eq!(&buf[..n], &expect[..], "message {i}");
        }
        // Nothing left over: no stray doorbell, no duplicate.
        assert!(!readable(a.as_raw_fd(), 50).unwrap());
        drop(ch);
        drop(a);
        host.join().unwrap();
    }
}
