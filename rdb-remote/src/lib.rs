//! A GDB remote protocol *client*: rdb connects to a stub — `gdbserver` on a live process,
//! QEMU user mode (`qemu-x86_64 -g PORT`), rr's or Hermit's replay server, rdb's own
//! `rdb replay --gdbserver` — and sees the stopped program as the tracee layer's stopped target:
//! [`RemoteTarget`] implements [`Memory`](rdb_tracee::Memory), [`Target`](rdb_tracee::Target)
//! and [`Control`](rdb_tracee::Control), so the debugger's region logic runs on a stub exactly
//! as on rdb's own replay.
//!
//! Module guide:
//! - [`packet`]: framing (`$data#cs`, `+`/`-`, the `}` escape, run-length encoding) and hex.
//! - [`conn`]: one TCP connection; every read has a deadline, so a stub that stops answering
//!   or drops the connection is an error, not a hang.
//! - [`tdesc`]: register layout from the stub's target description (or gdb's fixed x86-64 one).
//! - [`stop`]: stop replies (`T05thread:p1.2;swbreak:;`, `W00`, `X09`, ...) and thread ids.
//! - [`signals`]: gdb's signal numbering.
//! - [`target`]: [`RemoteTarget`]: the handshake, registers (`g`/`p`), memory (`m`, a page per
//!   packet, cached until the program runs again), breakpoints (`Z0`, else memory writes),
//!   watchpoints (`Z1`-`Z4`), resume and step (`vCont`), threads, load bias (`qXfer:auxv`, else
//!   `qOffsets`), mappings (`vFile` on `/proc/PID/maps`), the executable (`qXfer:exec-file`).
//!
//! Which packets are used, and what happens when a stub lacks one, is listed in
//! `descriptors/FORMAT.md` ("Remote use"). No published crate implements the client side:
//! `gdbstub` is a server only, and `gdb-protocol` (0.1, unmaintained) is a server-side framer
//! without deadlines; the framing here is small and unit-tested.

#![cfg(all(target_os = "linux", target_arch = "x86_64"))]

use std::time::Duration;

pub mod conn;
pub mod packet;
pub mod signals;
pub mod stop;
pub mod target;
pub mod tdesc;

pub use stop::ThreadId;
pub use target::{RemoteOptions, RemoteTarget};

/// Why talking to a stub failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RemoteError {
    #[error("cannot connect to a GDB stub at {address}: {source}")]
    Connect { address: String, source: std::io::Error },
    #[error("the GDB stub closed the connection {during}")]
    Closed { during: String },
    #[error("the GDB stub did not answer within {after:?} {during}")]
    TimedOut { during: String, after: Duration },
    #[error("talking to the GDB stub failed {during}: {source}")]
    Io { during: String, source: std::io::Error },
    #[error("the GDB stub broke the protocol: {0}")]
    Protocol(String),
    #[error("the GDB stub answered `{request}` with error {code}")]
    Refused { request: String, code: String },
    #[error("the GDB stub does not support {what}: {consequence}")]
    Unsupported { what: String, consequence: String },
    #[error("{0}")]
    Target(String),
}

impl From<RemoteError> for std::io::Error {
    fn from(e: RemoteError) -> std::io::Error {
        let kind = match &e {
            RemoteError::Closed { .. } => std::io::ErrorKind::ConnectionAborted,
            RemoteError::TimedOut { .. } => std::io::ErrorKind::TimedOut,
            RemoteError::Unsupported { .. } => std::io::ErrorKind::Unsupported,
            _ => std::io::ErrorKind::Other,
        };
        std::io::Error::new(kind, e)
    }
}
