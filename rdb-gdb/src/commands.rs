//! What gdb asks beyond gdbstub's protocol: `monitor` commands and `$_siginfo`.

use gdbstub::target::ext::monitor_cmd::{outputln, ConsoleOutput, MonitorCmd};

use crate::target::ReplayTarget;

const HELP: &str = "rdb monitor commands:
  monitor when        the current event: the halted thread's next event in the trace
                      (`rdb gdb --goto N` starts where this says N; `rdb info --events` lists them)
                      and the current point, as rdb names it for going back
  monitor checkpoint  save the replay here: going back to any later point starts from it
  monitor checkpoints the checkpoints kept (automatic ones included)
  monitor help        this text";

impl MonitorCmd for ReplayTarget<'_> {
    fn handle_monitor_cmd(&mut self, cmd: &[u8], mut out: ConsoleOutput<'_>) -> Result<(), Self::Error> {
        let cmd = String::from_utf8_lossy(cmd);
        let words: Vec<&str> = cmd.split_whitespace().collect();
        match words.as_slice() {
            ["when"] => match self.current_thread() {
                Some(tid) => {
                    match self.session.next_event(tid)? {
                        Some(n) => outputln!(out, "Current event: {n}"),
                        None => outputln!(out, "Current event: end of trace (the thread has no further event)"),
                    }
                    if let Some(p) = self.session.position()? {
                        outputln!(out, "Current point: {}", p.describe());
                    }
                }
                None => outputln!(out, "The debugged process has exited."),
            },
            ["checkpoint"] => match self.session.checkpoint() {
                Ok(id) => outputln!(out, "Checkpoint {id} at event {}.", self.session.events_replayed()),
                Err(e) => outputln!(out, "No checkpoint: {e}"),
            },
            ["checkpoints"] => {
                let mut total = 0;
                for (id, cp) in self.session.checkpoints() {
                    let at = cp.position().map_or("the start".to_string(), |p| p.describe());
                    let bytes: u64 =
                        cp.copies().iter().filter_map(|p| rdb_tracee::procfs::private_memory(*p).ok()).sum();
                    total += bytes;
                    outputln!(out, "{id:>4}  event {:>8}  {:>8} KiB  {at}", cp.events(), bytes / 1024);
                }
                outputln!(out, "{} checkpoints, {} KiB of their own", self.session.checkpoints().len(), total / 1024);
            }
            [] | ["help"] => outputln!(out, "{HELP}"),
            _ => outputln!(out, "unknown command `{cmd}`\n{HELP}"),
        }
        Ok(())
    }
}

/// The reply to a packet rdb answers itself (`body` unescaped): `qXfer:siginfo:read` /
/// `qXfer:siginfo:write` (gdb reads `$_siginfo` to save it before an inferior call and writes
/// it back after) and `qGetTLSAddr`.
pub fn own_packet(target: &mut ReplayTarget<'_>, body: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(body);
    if let Some(args) = text.strip_prefix("qGetTLSAddr:") {
        return match target.tls_address(args) {
            Ok(addr) => format!("{addr:x}").into_bytes(),
            Err(e) => {
                eprintln!("rdb: cannot find a thread-local: {e}");
                b"E01".to_vec()
            }
        };
    }
    if let Some(args) = text.strip_prefix("qXfer:siginfo:read::") {
        let Some((offset, length)) = args.split_once(',') else { return b"E01".to_vec() };
        let (Ok(offset), Ok(length)) = (usize::from_str_radix(offset, 16), usize::from_str_radix(length, 16)) else {
            return b"E01".to_vec();
        };
        let info = target.siginfo_for_gdb();
        let start = offset.min(info.len());
        let end = start.saturating_add(length).min(info.len());
        let mut reply = vec![if end == info.len() { b'l' } else { b'm' }];
        reply.extend_from_slice(&info[start..end]);
        return reply;
    }
    if let Some(args) = body.strip_prefix(b"qXfer:siginfo:write::") {
        // OFFSET:DATA
        let Some(colon) = args.iter().position(|&b| b == b':') else { return b"E01".to_vec() };
        let data = &args[colon + 1..];
        target.siginfo_written();
        return format!("{:x}", data.len()).into_bytes();
    }
    Vec::new()
}

impl ReplayTarget<'_> {
    /// `$_siginfo` of the halted thread: the signal it stopped with (`SIGTRAP` for a
    /// breakpoint, a step or a watchpoint).
    pub fn siginfo_for_gdb(&mut self) -> Vec<u8> {
        let mut info = vec![0u8; 128];
        info[..4].copy_from_slice(&(libc::SIGTRAP).to_le_bytes());
        self.begin_infcall();
        info
    }
}
