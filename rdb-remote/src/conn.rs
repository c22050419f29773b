//! A connection to a stub: packets out, replies in, acknowledgements, and a deadline on every
//! read, so that a stub that stops answering or goes away is an error, never a hang.

use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use crate::packet::{self, Decoder, Frame};
use crate::RemoteError;

/// Retransmissions of one packet the stub answered with `-` before giving up.
const RETRIES: u32 = 3;

/// One TCP connection to a stub.
pub struct Connection {
    stream: TcpStream,
    decoder: Decoder,
    /// `QStartNoAckMode` accepted: no `+`/`-` in either direction.
    no_ack: bool,
    /// How long a reply to a request may take.
    pub timeout: Duration,
    /// Log every packet on stderr (`RDB_REMOTE_LOG=1`), like gdb's `set debug remote 1`.
    log: bool,
    buf: Vec<u8>,
    /// Requests sent without waiting whose replies (`OK` expected) come before any other.
    deferred: std::collections::VecDeque<String>,
    /// Packets that arrived while waiting for an acknowledgement (replies to deferred
    /// requests), in order.
    early: std::collections::VecDeque<Vec<u8>>,
}

impl Connection {
    /// Connects to `address` (`HOST:PORT`) within `timeout`.
    pub fn connect(address: &str, timeout: Duration) -> Result<Connection, RemoteError> {
        let failed = |source: io::Error| RemoteError::Connect { address: address.to_string(), source };
        let mut last = None;
        for addr in address.to_socket_addrs().map_err(failed)? {
            match TcpStream::connect_timeout(&addr, timeout) {
                Ok(stream) => {
                    stream.set_nodelay(true).map_err(failed)?;
                    return Ok(Connection {
                        stream,
                        decoder: Decoder::new(),
                        no_ack: false,
                        timeout,
                        log: std::env::var_os("RDB_REMOTE_LOG").is_some_and(|v| v != "0"),
                        buf: vec![0; 64 * 1024],
                        deferred: Default::default(),
                        early: Default::default(),
                    });
                }
                Err(e) => last = Some(e),
            }
        }
        Err(failed(last.unwrap_or_else(|| io::Error::other("the address resolves to nothing"))))
    }

    /// From now on neither side acknowledges packets (after the stub accepted `QStartNoAckMode`).
    pub fn set_no_ack(&mut self) {
        self.no_ack = true;
    }

    /// Sends one packet; in acknowledgement mode, waits for the stub's `+`.
    pub fn send(&mut self, data: &[u8]) -> Result<(), RemoteError> {
        let frame = packet::encode(data);
        if self.log {
            eprintln!("rdb: remote <- {}", describe(data));
        }
        let what = || describe(data);
        for _ in 0..=RETRIES {
            self.stream.write_all(&frame).map_err(|e| self.io_error(e, &what()))?;
            if self.no_ack {
                return Ok(());
            }
            let deadline = Instant::now() + self.timeout;
            loop {
                match self.frame(Some(deadline), &what())? {
                    Frame::Ack => return Ok(()),
                    Frame::Nack => break,
                    // The reply to an earlier deferred request: kept for `receive`.
                    Frame::Packet(data) => {
                        self.stream.write_all(b"+").map_err(|e| self.io_error(e, &what()))?;
                        self.early.push_back(data);
                    }
                    Frame::BadChecksum => {
                        self.stream.write_all(b"-").map_err(|e| self.io_error(e, &what()))?;
                    }
                    Frame::Notification(_) => {}
                }
            }
        }
        Err(RemoteError::Protocol(format!("the stub refused `{}` {} times (bad checksum)", what(), RETRIES + 1)))
    }

    /// Sends a request whose reply must be `OK` without waiting for it: the stub answers in
    /// order, so the reply is checked before the next one is read (saves a round trip). Only
    /// without acknowledgements: a stub waiting for the `+` of its reply may drop what arrives
    /// meanwhile (QEMU does), so in acknowledgement mode this waits for the reply.
    pub fn send_deferred(&mut self, data: &[u8]) -> Result<(), RemoteError> {
        if !self.no_ack {
            let reply = self.request(data)?;
            if reply != b"OK" {
                let code = String::from_utf8_lossy(&reply[..reply.len().min(40)]).into_owned();
                return Err(RemoteError::Refused { request: describe(data), code });
            }
            return Ok(());
        }
        self.send(data)?;
        self.deferred.push_back(describe(data));
        Ok(())
    }

    /// The next packet from the stub, waiting until `deadline` (`None`: as long as the
    /// connection stays open). Notifications are skipped (rdb runs the stub in all-stop mode).
    /// Replies to deferred requests are read and checked first.
    pub fn receive(&mut self, deadline: Option<Instant>, during: &str) -> Result<Vec<u8>, RemoteError> {
        while let Some(request) = self.deferred.pop_front() {
            let by = Instant::now() + self.timeout;
            let reply = self.packet(Some(deadline.map_or(by, |d| d.max(by))), &format!("answering `{request}`"))?;
            if reply != b"OK" {
                let code = String::from_utf8_lossy(&reply[..reply.len().min(40)]).into_owned();
                return Err(RemoteError::Refused { request, code });
            }
        }
        self.packet(deadline, during)
    }

    fn packet(&mut self, deadline: Option<Instant>, during: &str) -> Result<Vec<u8>, RemoteError> {
        if let Some(data) = self.early.pop_front() {
            if self.log {
                eprintln!("rdb: remote -> {}", describe(&data));
            }
            return Ok(data);
        }
        loop {
            match self.frame(deadline, during)? {
                Frame::Packet(data) => {
                    if !self.no_ack {
                        self.stream.write_all(b"+").map_err(|e| self.io_error(e, during))?;
                    }
                    if self.log {
                        eprintln!("rdb: remote -> {}", describe(&data));
                    }
                    return Ok(data);
                }
                Frame::BadChecksum if !self.no_ack => {
                    self.stream.write_all(b"-").map_err(|e| self.io_error(e, during))?;
                }
                Frame::BadChecksum => {
                    return Err(RemoteError::Protocol(format!("a reply with a bad checksum {during}")));
                }
                Frame::Ack | Frame::Nack | Frame::Notification(_) => {}
            }
        }
    }

    /// Sends a packet and returns the stub's reply, within the connection's timeout.
    pub fn request(&mut self, data: &[u8]) -> Result<Vec<u8>, RemoteError> {
        self.send(data)?;
        let deadline = Instant::now() + self.timeout;
        self.receive(Some(deadline), &format!("answering `{}`", describe(data)))
    }

    /// Sends the interrupt byte (0x03): a running program stops and the stub sends a stop reply.
    pub fn interrupt(&mut self) -> Result<(), RemoteError> {
        self.stream.write_all(&[3]).map_err(|e| self.io_error(e, "interrupting the program"))
    }

    /// The next frame, reading from the socket until `deadline`.
    fn frame(&mut self, deadline: Option<Instant>, during: &str) -> Result<Frame, RemoteError> {
        loop {
            if let Some(frame) = self.decoder.next_frame().map_err(|e| RemoteError::Protocol(e.0))? {
                return Ok(frame);
            }
            let wait = match deadline {
                Some(d) => {
                    let left = d.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Err(RemoteError::TimedOut { during: during.to_string(), after: self.timeout });
                    }
                    Some(left)
                }
                None => None,
            };
            self.stream.set_read_timeout(wait).map_err(|e| self.io_error(e, during))?;
            match self.stream.read(&mut self.buf) {
                Ok(0) => return Err(RemoteError::Closed { during: during.to_string() }),
                Ok(n) => {
                    let (buf, decoder) = (&self.buf, &mut self.decoder);
                    decoder.feed(&buf[..n]);
                }
                Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {
                    return Err(RemoteError::TimedOut { during: during.to_string(), after: self.timeout });
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.io_error(e, during)),
            }
        }
    }

    fn io_error(&self, source: io::Error, during: &str) -> RemoteError {
        match source.kind() {
            io::ErrorKind::ConnectionReset | io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionAborted => {
                RemoteError::Closed { during: during.to_string() }
            }
            _ => RemoteError::Io { during: during.to_string(), source },
        }
    }
}

/// A packet as it appears in messages: its text, cut after 60 characters.
fn describe(data: &[u8]) -> String {
    let text = String::from_utf8_lossy(&data[..data.len().min(60)]).into_owned();
    if data.len() > 60 {
        format!("{text}...")
    } else {
        text
    }
}
