//! The connection to gdb, between the socket and gdbstub.
//!
//! A reader thread takes bytes off the socket into a channel, and flags the replay for an
//! interrupt when gdb sends Ctrl-C (`0x03` outside a packet), so that a running replay halts
//! without the serving thread reading the socket. The serving thread frames packets itself
//! before gdbstub sees them, to answer what gdbstub does not know: `qXfer:siginfo:read` and
//! `qXfer:siginfo:write`, which gdb sends around an inferior call (they mark a diversion's
//! start and end, see `diversion`), and `qGetTLSAddr` (thread-locals) are answered here; everything else goes to gdbstub byte by
//! byte. gdbstub's reply to `qSupported` gets the two features added.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::Duration;

/// What gdb's socket gave.
pub enum Incoming {
    /// Bytes for gdbstub.
    Bytes(Vec<u8>),
    /// A packet answered by rdb itself (its body, unescaped).
    Own(Vec<u8>),
}

/// Bytes from gdb, framed (see the module docs).
pub struct Reader {
    rx: Receiver<Vec<u8>>,
    /// Bytes received, not yet handed on.
    pending: Vec<u8>,
    closed: bool,
}

/// gdb's Ctrl-C: the reader thread sets the flag it is given.
pub fn spawn_reader(mut stream: TcpStream, interrupt: Arc<AtomicBool>) -> io::Result<Reader> {
    let (tx, rx) = mpsc::channel();
    std::thread::Builder::new().name("rdb-gdb-reader".into()).spawn(move || {
        let mut buf = [0u8; 4096];
        let mut in_packet = false;
        loop {
            let n = match stream.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            for &b in &buf[..n] {
                match b {
                    b'$' => in_packet = true,
                    b'#' => in_packet = false,
                    0x03 if !in_packet => interrupt.store(true, Ordering::SeqCst),
                    _ => {}
                }
            }
            if tx.send(buf[..n].to_vec()).is_err() {
                break;
            }
        }
    })?;
    Ok(Reader { rx, pending: Vec::new(), closed: false })
}

impl Reader {
    /// The next input, waiting for it (`None`: gdb closed the connection). With `wait` false,
    /// returns `Some(Bytes([]))` when nothing is there.
    pub fn next(&mut self, wait: bool) -> Option<Incoming> {
        loop {
            if let Some(item) = self.take() {
                return Some(item);
            }
            if self.closed {
                return None;
            }
            let got = if wait {
                self.rx.recv().map_err(|_| RecvTimeoutError::Disconnected)
            } else {
                self.rx.recv_timeout(Duration::ZERO)
            };
            match got {
                Ok(bytes) => self.pending.extend_from_slice(&bytes),
                Err(RecvTimeoutError::Disconnected) => self.closed = true,
                Err(RecvTimeoutError::Timeout) => return Some(Incoming::Bytes(Vec::new())),
            }
        }
    }

    /// Split what is pending: bytes up to the next packet that is ours, or that packet.
    fn take(&mut self) -> Option<Incoming> {
        if self.pending.is_empty() {
            return None;
        }
        let mut i = 0;
        while i < self.pending.len() {
            if self.pending[i] != b'$' {
                i += 1;
                continue;
            }
            // A packet: complete when its '#' and two checksum digits are in.
            let Some(hash) = self.pending[i..].iter().position(|&b| b == b'#').map(|p| i + p) else {
                // Incomplete: hand on what comes before it, keep the rest.
                return (i > 0).then(|| Incoming::Bytes(self.pending.drain(..i).collect()));
            };
            if hash + 3 > self.pending.len() {
                return (i > 0).then(|| Incoming::Bytes(self.pending.drain(..i).collect()));
            }
            let body = &self.pending[i + 1..hash];
            if OWN.iter().any(|p| body.starts_with(p)) {
                if i > 0 {
                    return Some(Incoming::Bytes(self.pending.drain(..i).collect()));
                }
                let body = unescape(body);
                self.pending.drain(..hash + 3);
                return Some(Incoming::Own(body));
            }
            i = hash + 3;
        }
        Some(Incoming::Bytes(std::mem::take(&mut self.pending)))
    }
}

/// Packets rdb answers itself (gdbstub does not know them).
const OWN: &[&[u8]] = &[b"qXfer:siginfo:", b"qGetTLSAddr:"];

/// Undo the protocol's binary escaping (`}` then the byte xor 0x20).
fn unescape(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len());
    let mut it = body.iter();
    while let Some(&b) = it.next() {
        if b == b'}' {
            if let Some(&n) = it.next() {
                out.push(n ^ 0x20);
            }
        } else {
            out.push(b);
        }
    }
    out
}

/// A reply packet's framing: escaped body and checksum.
pub fn frame(body: &[u8]) -> Vec<u8> {
    let mut escaped = Vec::with_capacity(body.len() + 8);
    for &b in body {
        if matches!(b, b'#' | b'$' | b'}' | b'*') {
            escaped.push(b'}');
            escaped.push(b ^ 0x20);
        } else {
            escaped.push(b);
        }
    }
    let sum = escaped.iter().fold(0u8, |a, b| a.wrapping_add(*b));
    let mut out = Vec::with_capacity(escaped.len() + 4);
    out.push(b'$');
    out.extend_from_slice(&escaped);
    out.extend_from_slice(format!("#{sum:02x}").as_bytes());
    out
}

/// The write side for gdbstub: buffered until gdbstub flushes; adds rdb's features to the
/// `qSupported` reply.
pub struct Writer {
    stream: TcpStream,
    out: Vec<u8>,
    /// gdb still acknowledges packets (until `QStartNoAckMode`).
    pub acks: bool,
    /// The next reply is the one to `qSupported`.
    pub supported_reply: bool,
}

impl Writer {
    pub fn new(stream: TcpStream) -> Writer {
        Writer { stream, out: Vec::new(), acks: true, supported_reply: false }
    }

    /// Send a packet of rdb's own (acknowledging gdb's request first when acks are on).
    pub fn send_own(&mut self, body: &[u8]) -> io::Result<()> {
        let mut bytes = Vec::new();
        if self.acks {
            bytes.push(b'+');
        }
        bytes.extend_from_slice(&frame(body));
        self.stream.write_all(&bytes)?;
        self.stream.flush()
    }
}

/// rdb's additions to `qSupported`.
const FEATURES: &[u8] = b";qXfer:siginfo:read+;qXfer:siginfo:write+";

impl gdbstub::conn::Connection for Writer {
    type Error = io::Error;

    fn write(&mut self, byte: u8) -> io::Result<()> {
        self.out.push(byte);
        Ok(())
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.out.extend_from_slice(buf);
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.supported_reply {
            let Some(start) = self.out.iter().position(|&b| b == b'$') else { return self.send() };
            let Some(hash) = self.out[start..].iter().position(|&b| b == b'#').map(|p| start + p) else {
                return Ok(()); // the reply is not complete yet
            };
            if hash + 3 > self.out.len() {
                return Ok(());
            }
            self.supported_reply = false;
            let mut body = self.out[start + 1..hash].to_vec();
            body.extend_from_slice(FEATURES);
            let sum = body.iter().fold(0u8, |a, b| a.wrapping_add(*b));
            let mut packet = vec![b'$'];
            packet.extend_from_slice(&body);
            packet.extend_from_slice(format!("#{sum:02x}").as_bytes());
            self.out.splice(start..hash + 3, packet);
        }
        self.send()
    }
}

impl Writer {
    fn send(&mut self) -> io::Result<()> {
        if !self.out.is_empty() {
            self.stream.write_all(&self.out)?;
            self.out.clear();
        }
        self.stream.flush()
    }
}

/// Whether gdbstub is about to receive the packet whose body starts at `bytes` (for the
/// connection's own bookkeeping: `qSupported`, `QStartNoAckMode`).
pub fn packets_in(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut rest = bytes;
    std::iter::from_fn(move || {
        let start = rest.iter().position(|&b| b == b'$')?;
        let end = rest[start..].iter().position(|&b| b == b'#').map(|p| start + p)?;
        let body = &rest[start + 1..end];
        rest = &rest[end..];
        Some(body)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_escape_and_sum() {
        assert_eq!(frame(b"OK"), b"$OK#9a");
        let sum = [b'a', b'}', 0x03, b'b'].iter().fold(0u8, |a, b| a.wrapping_add(*b));
        assert_eq!(frame(b"a#b"), [&b"$a}\x03b#"[..], format!("{sum:02x}").as_bytes()].concat());
        assert_eq!(unescape(b"a}\x03b"), b"a#b");
    }
}
