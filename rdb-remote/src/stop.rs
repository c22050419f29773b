//! Stop replies and thread ids.

use crate::packet::{parse_hex, unhex};

/// A thread as the protocol names it: `p<pid>.<tid>` with the multiprocess extension, else
/// `<tid>`; `-1` is every thread, `0` any thread (hex numbers).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ThreadId {
    pub pid: Option<i64>,
    pub tid: i64,
}

impl ThreadId {
    pub const ANY: ThreadId = ThreadId { pid: None, tid: 0 };

    pub fn parse(text: &[u8]) -> Option<ThreadId> {
        let num = |t: &[u8]| -> Option<i64> {
            match t {
                b"-1" => Some(-1),
                _ => parse_hex(t).and_then(|v| i64::try_from(v).ok()),
            }
        };
        match text.strip_prefix(b"p") {
            Some(rest) => match rest.iter().position(|&b| b == b'.') {
                Some(dot) => Some(ThreadId { pid: Some(num(&rest[..dot])?), tid: num(&rest[dot + 1..])? }),
                None => {
                    let pid = num(rest)?;
                    Some(ThreadId { pid: Some(pid), tid: -1 })
                }
            },
            None => Some(ThreadId { pid: None, tid: num(text)? }),
        }
    }

    /// The id in packets (`multiprocess`: the stub took the multiprocess extension).
    pub fn encode(&self, multiprocess: bool) -> String {
        let n = |v: i64| if v < 0 { "-1".to_string() } else { format!("{v:x}") };
        match (multiprocess, self.pid) {
            (true, Some(pid)) => format!("p{}.{}", n(pid), n(self.tid)),
            _ => n(self.tid),
        }
    }
}

/// What a stop reply says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopReply {
    /// `S`/`T`: the program stopped with a (gdb-numbered) signal.
    Stopped(Stopped),
    /// `W`: the process exited with this status.
    Exited { code: u8, pid: Option<i64> },
    /// `X`: the process was killed by this (gdb-numbered) signal.
    Killed { signal: u8, pid: Option<i64> },
    /// `N`: no thread is left to resume.
    NoResumed,
    /// `O`: output of the program relayed by the stub (hex-decoded); a stop reply follows.
    Output(Vec<u8>),
}

/// The fields of a `T` stop reply rdb uses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stopped {
    pub signal: u8,
    pub thread: Option<ThreadId>,
    /// `swbreak:`: a software breakpoint (the pc is already at its address).
    pub swbreak: bool,
    /// `hwbreak:`.
    pub hwbreak: bool,
    /// `watch:`/`rwatch:`/`awatch:`: the watched address that fired.
    pub watch: Option<u64>,
    /// `fork:`/`vfork:`: the new child (`true` for vfork).
    pub forked: Option<(ThreadId, bool)>,
    /// `vforkdone:`.
    pub vfork_done: bool,
    /// `exec:`: the new executable's path.
    pub exec: Option<String>,
    /// Expedited registers: (number, bytes).
    pub registers: Vec<(u32, Vec<u8>)>,
}

/// Parses a stop reply; `Err` names what is wrong.
pub fn parse(reply: &[u8]) -> Result<StopReply, String> {
    let bad = || format!("malformed stop reply `{}`", String::from_utf8_lossy(&reply[..reply.len().min(80)]));
    let (&kind, rest) = reply.split_first().ok_or_else(bad)?;
    let byte = |t: &[u8]| t.get(..2).and_then(unhex).map(|v| v[0]).ok_or_else(bad);
    let process = |t: &[u8]| -> Option<i64> {
        let p = t.split(|&b| b == b';').find_map(|f| f.strip_prefix(b"process:"))?;
        parse_hex(p).and_then(|v| i64::try_from(v).ok())
    };
    // gdbserver writes exit codes without a leading zero (`W1;process:72a4`).
    let code = |t: &[u8]| {
        let head = t.split(|&b| b == b';').next().unwrap_or(b"");
        parse_hex(head).filter(|&v| head.len() <= 2 && v <= 0xff).map(|v| v as u8).ok_or_else(bad)
    };
    match kind {
        b'S' => Ok(StopReply::Stopped(Stopped { signal: byte(rest)?, ..Stopped::default() })),
        b'W' => Ok(StopReply::Exited { code: code(rest)?, pid: process(rest) }),
        b'X' => Ok(StopReply::Killed { signal: code(rest)?, pid: process(rest) }),
        b'N' => Ok(StopReply::NoResumed),
        b'O' if rest != b"K" => Ok(StopReply::Output(unhex(rest).ok_or_else(bad)?)),
        b'T' => {
            let mut s = Stopped { signal: byte(rest)?, ..Stopped::default() };
            for field in rest[2..].split(|&b| b == b';').filter(|f| !f.is_empty()) {
                let colon = field.iter().position(|&b| b == b':').ok_or_else(bad)?;
                let (key, value) = (&field[..colon], &field[colon + 1..]);
                match key {
                    b"thread" => s.thread = Some(ThreadId::parse(value).ok_or_else(bad)?),
                    b"swbreak" => s.swbreak = true,
                    b"hwbreak" => s.hwbreak = true,
                    b"watch" | b"rwatch" | b"awatch" => s.watch = Some(parse_hex(value).ok_or_else(bad)?),
                    b"fork" => s.forked = Some((ThreadId::parse(value).ok_or_else(bad)?, false)),
                    b"vfork" => s.forked = Some((ThreadId::parse(value).ok_or_else(bad)?, true)),
                    b"vforkdone" => s.vfork_done = true,
                    b"exec" => s.exec = Some(String::from_utf8_lossy(&unhex(value).ok_or_else(bad)?).into_owned()),
                    _ => {
                        // A register number and its value; other keys (core, library, create, ...)
                        // are not rdb's concern.
                        if let (Some(n), Some(v)) = (parse_hex(key), unhex(value)) {
                            s.registers.push((n as u32, v));
                        }
                    }
                }
            }
            Ok(StopReply::Stopped(s))
        }
        _ => Err(bad()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_ids_parse_and_encode_in_both_forms() {
        assert_eq!(ThreadId::parse(b"p3916.3917"), Some(ThreadId { pid: Some(0x3916), tid: 0x3917 }));
        assert_eq!(ThreadId::parse(b"p01.3975"), Some(ThreadId { pid: Some(1), tid: 0x3975 }));
        assert_eq!(ThreadId::parse(b"1a"), Some(ThreadId { pid: None, tid: 0x1a }));
        assert_eq!(ThreadId::parse(b"-1"), Some(ThreadId { pid: None, tid: -1 }));
        assert_eq!(ThreadId::parse(b"p12"), Some(ThreadId { pid: Some(0x12), tid: -1 }));
        assert_eq!(ThreadId::parse(b"pzz.1"), None);
        assert_eq!(ThreadId::parse(b""), None);
        let t = ThreadId { pid: Some(0x3916), tid: 0x3917 };
        assert_eq!(t.encode(true), "p3916.3917");
        assert_eq!(t.encode(false), "3917");
        assert_eq!(ThreadId { pid: Some(5), tid: -1 }.encode(true), "p5.-1");
    }

    #[test]
    fn stop_replies_of_gdbserver_and_qemu_parse() {
        let r =
            parse(b"T0506:0000000000000000;07:40e7ffffff7f0000;10:704bfef7ff7f0000;thread:p3916.3916;core:1;").unwrap();
        let StopReply::Stopped(s) = r else { panic!("{r:?}") };
        assert_eq!(s.signal, 5);
        assert_eq!(s.thread, Some(ThreadId { pid: Some(0x3916), tid: 0x3916 }));
        assert_eq!(s.registers.len(), 3);
        assert_eq!(s.registers[2], (0x10, vec![0x70, 0x4b, 0xfe, 0xf7, 0xff, 0x7f, 0, 0]));
        let StopReply::Stopped(s) = parse(b"T05thread:p01.3975;swbreak:;").unwrap() else { panic!() };
        assert!(s.swbreak);
        let StopReply::Stopped(s) = parse(b"T05fork:p3a.3a;thread:p39.39;").unwrap() else { panic!() };
        assert_eq!(s.forked, Some((ThreadId { pid: Some(0x3a), tid: 0x3a }, false)));
        let StopReply::Stopped(s) = parse(b"T05watch:7ffe0010;thread:2;").unwrap() else { panic!() };
        assert_eq!(s.watch, Some(0x7ffe0010));
        assert_eq!(parse(b"W00;process:3916").unwrap(), StopReply::Exited { code: 0, pid: Some(0x3916) });
        assert_eq!(parse(b"W01").unwrap(), StopReply::Exited { code: 1, pid: None });
        assert_eq!(parse(b"W1;process:72a4").unwrap(), StopReply::Exited { code: 1, pid: Some(0x72a4) });
        assert_eq!(parse(b"X09").unwrap(), StopReply::Killed { signal: 9, pid: None });
        assert_eq!(parse(b"S0b").unwrap(), StopReply::Stopped(Stopped { signal: 11, ..Stopped::default() }));
        assert_eq!(parse(b"O6869210a").unwrap(), StopReply::Output(b"hi!\n".to_vec()));
        assert_eq!(parse(b"N").unwrap(), StopReply::NoResumed);
    }

    #[test]
    fn malformed_stop_replies_are_errors() {
        for r in [
            &b""[..],
            b"T",
            b"Tzz",
            b"W",
            b"W123",
            b"X;process:1",
            b"T05thread",
            b"T05thread:q;",
            b"OK",
            b"E01",
            b"Ozz",
        ] {
            assert!(parse(r).is_err(), "{}", String::from_utf8_lossy(r));
        }
    }
}
