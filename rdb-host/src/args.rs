//! Argument addresses from argument descriptors: what `argv[i]` of a debug
//! function points at, for one stop.

use crate::error::{HostError, Loc};
use rdb_descriptors::{ArgumentDescriptor, FrameAddress, Location, Register};
use rdb_tracee::Target;
use std::collections::{BTreeMap, HashMap};

/// How the host provides one argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArgValue {
    /// The variable lives in program memory at this address (mirrored).
    Address(u64),
    /// The variable's value, copied into host-side storage.
    Bytes(Vec<u8>),
    /// A copy of program memory at `from` (a small stack variable), in host-side storage: debug
    /// code reads the copy, and `rdb::watch` on it watches the program's memory at `from`.
    Copied { bytes: Vec<u8>, from: u64 },
    /// A record built for debug code (an event callback's `rdb_syscall`), copied into host-side
    /// storage, with pointers to other arguments' host-side storage: at each `(offset, index)`
    /// of `pointers` the host writes the address `argv[index]` gets.
    Record { bytes: Vec<u8>, pointers: Vec<(u32, u32)> },
}

/// Stack variables up to this size are copied at the stop rather than read
/// through the mirror: one read by the replayer instead of a page fill in the
/// host (and its invalidation) at every hit. Like register variables, such an
/// argument is a copy in debug code (its address is not the program's);
/// anything it points to is read through the mirror as usual.
pub const COPY_LIMIT: u64 = 4096;

/// A small variable's bytes at `at`, if they can be read.
fn copied(tracee: &dyn Target, at: u64, size: u64) -> Option<ArgValue> {
    if size > COPY_LIMIT {
        return None;
    }
    let mut bytes = vec![0u8; size as usize];
    tracee.read_exact(at, &mut bytes).ok()?;
    Some(ArgValue::Copied { bytes, from: at })
}

/// The values `entry_value` locations need: at each function entry they
/// name, the values to keep, and what was kept per call (process, entry,
/// canonical frame address at the entry).
#[derive(Debug, Default)]
pub struct EntryValues {
    /// Module-relative entry address -> (location at the entry, size), each once.
    points: BTreeMap<u64, Vec<(Location, u64)>>,
    kept: HashMap<CallKey, Vec<Result<Vec<u8>, String>>>,
}

/// One call of a function: process id, entry address, canonical frame address.
type CallKey = (i32, u64, u64);

impl EntryValues {
    /// The entries the `entry_value` locations of `arguments` name.
    pub fn of<'a>(arguments: impl IntoIterator<Item = &'a ArgumentDescriptor>) -> EntryValues {
        fn collect(location: &Location, size: u64, out: &mut BTreeMap<u64, Vec<(Location, u64)>>) {
            match location {
                Location::EntryValue { entry, value, .. } => {
                    let wanted = ((**value).clone(), size);
                    let list = out.entry(*entry).or_default();
                    if !list.contains(&wanted) {
                        list.push(wanted);
                    }
                }
                Location::Pieces { pieces } => pieces.iter().for_each(|p| collect(&p.location, p.size, out)),
                Location::Indirect { pointer, .. } => collect(pointer, 8, out),
                _ => {}
            }
        }
        let mut points = BTreeMap::new();
        for argument in arguments {
            for placed in &argument.locations {
                collect(&placed.location, placed.size.unwrap_or(argument.size), &mut points);
            }
        }
        EntryValues { points, kept: HashMap::new() }
    }

    /// Module-relative addresses where the replayer must stop to keep values.
    pub fn entries(&self) -> impl Iterator<Item = u64> + '_ {
        self.points.keys().copied()
    }

    /// The program stopped at module-relative `address`: if it is an entry,
    /// keeps this call's values (the canonical frame address at an entry is
    /// `rsp + 8`). Returns whether it was one.
    pub fn keep(&mut self, address: u64, tracee: &dyn Target) -> bool {
        let Some(points) = self.points.get(&address) else { return false };
        let frame = tracee.regs().rsp.wrapping_add(8);
        let values = points.iter().map(|(location, size)| value_bytes(tracee, location, *size)).collect();
        self.kept.insert((tracee.pid().0, address, frame), values);
        true
    }

    /// A process forked: the child goes on with the calls the parent was in, whose entries it
    /// will not pass again: it gets the parent's kept values.
    pub fn fork(&mut self, parent: i32, child: i32) {
        let copies: Vec<_> = self
            .kept
            .iter()
            .filter(|((pid, _, _), _)| *pid == parent)
            .map(|((_, e, f), v)| ((child, *e, *f), v.clone()))
            .collect();
        self.kept.extend(copies);
    }

    /// Forgets every kept value (the replay went back: a kept value may belong to a later call).
    pub fn forget(&mut self) {
        self.kept.clear();
    }

    /// The bytes kept for the call the program is stopped in.
    fn get(
        &self,
        tracee: &dyn Target,
        entry: u64,
        value: &Location,
        frame: &FrameAddress,
        size: u64,
    ) -> Result<Vec<u8>, String> {
        let cfa = register_u64(tracee, &frame.register)?.wrapping_add(frame.offset as u64);
        let index = self.points.get(&entry).and_then(|p| p.iter().position(|(l, s)| l == value && *s == size));
        let kept = self.kept.get(&(tracee.pid().0, entry, cfa));
        match (index, kept) {
            (Some(i), Some(values)) => values[i].clone().map_err(|e| format!("on entry to this call: {e}")),
            _ => Err(format!(
                "optimized out here; its value on entry to this call (at {entry:#x}) is what the replay keeps, and it \
                 did not see this call's entry (the call began before the replay's breakpoints were planted, or the \
                 replay went back to a point inside the call)"
            )),
        }
    }
}

/// `size` bytes of a location read at a function's entry.
fn value_bytes(tracee: &dyn Target, location: &Location, size: u64) -> Result<Vec<u8>, String> {
    let none = EntryValues::default();
    let one = |location: &Location, size: u64| {
        piece_bytes(tracee, location, size, &none).map_err(|e| match e {
            PieceError::Unavailable(why) => why,
            PieceError::Read(at, e) => format!("its bytes at {at:#x} cannot be read: {e}"),
        })
    };
    match location {
        Location::Pieces { pieces } => {
            let mut out = Vec::with_capacity(size as usize);
            for piece in pieces {
                out.extend(one(&piece.location, piece.size)?);
            }
            Ok(out)
        }
        other => one(other, size),
    }
}

/// Computes every argument of `region` at code `address`, in `argv` order.
pub fn compute(
    region: u32,
    address: u64,
    arguments: &[&ArgumentDescriptor],
    tracee: &dyn Target,
    entries: &EntryValues,
    source_location: &Loc,
) -> Result<Vec<ArgValue>, HostError> {
    let mut sorted: Vec<&ArgumentDescriptor> = arguments.to_vec();
    sorted.sort_by_key(|a| a.position);
    let mut out = Vec::with_capacity(sorted.len());
    for (i, arg) in sorted.iter().enumerate() {
        let unavailable = |reason: String| HostError::ArgumentUnavailable {
            region,
            position: arg.position,
            name: arg.name.clone(),
            reason,
            source_location: source_location.clone(),
        };
        if arg.position as usize != i {
            return Err(HostError::ArgumentUnavailable {
                region,
                position: i as u32,
                name: format!("#{i}"),
                reason: "missing from the argument descriptors".into(),
                source_location: source_location.clone(),
            });
        }
        let placed = arg
            .locations
            .iter()
            .find(|p| p.address == address)
            .ok_or_else(|| unavailable(format!("not described at address {address:#x}")))?;
        // Another instantiation of generic code may give the variable another size here.
        let size = placed.size.unwrap_or(arg.size);
        let value = match &placed.location {
            Location::Stack { base, offset } => {
                let at = register_u64(tracee, base).map_err(unavailable)?.wrapping_add(*offset as u64);
                copied(tracee, at, size).unwrap_or(ArgValue::Address(at))
            }
            Location::Symbol { address, .. } => ArgValue::Address(tracee.load_bias().wrapping_add(*address)),
            Location::Indirect { .. } => {
                let at = address_of(tracee, &placed.location, entries).map_err(unavailable)?;
                copied(tracee, at, size).unwrap_or(ArgValue::Address(at))
            }
            Location::EntryValue { entry, value, frame } => {
                ArgValue::Bytes(entries.get(tracee, *entry, value, frame, size).map_err(unavailable)?)
            }
            Location::Register { register } => {
                let bytes = register_bytes(tracee, register).map_err(unavailable)?;
                ArgValue::Bytes(fit(bytes, size).map_err(unavailable)?)
            }
            Location::Implicit { bytes } => ArgValue::Bytes(decode_hex(bytes).map_err(unavailable)?),
            Location::Computed { register, offset } => {
                ArgValue::Bytes(computed(tracee, register, *offset, size).map_err(unavailable)?)
            }
            Location::Pieces { pieces } => {
                let mut value = Vec::with_capacity(size as usize);
                for piece in pieces {
                    let part = piece_bytes(tracee, &piece.location, piece.size, entries).map_err(|e| match e {
                        PieceError::Unavailable(reason) => unavailable(reason),
                        PieceError::Read(address, source) => HostError::ReadArgument {
                            region,
                            name: arg.name.clone(),
                            address,
                            source_location: source_location.clone(),
                            source,
                        },
                    })?;
                    value.extend_from_slice(&part);
                }
                if value.len() as u64 > size {
                    return Err(unavailable(format!(
                        "its pieces give {} bytes, more than its {size} (malformed descriptor)",
                        value.len()
                    )));
                }
                // Bytes no piece gives are padding (the locator reports a value with a member
                // missing as partly optimized out): zeros, never host memory after the buffer.
                value.resize(size as usize, 0);
                ArgValue::Bytes(value)
            }
            Location::OptimizedOut => return Err(unavailable("optimized out at this location".into())),
            Location::Unavailable { reason } => return Err(unavailable(reason.clone())),
        };
        out.push(value);
    }
    Ok(out)
}

enum PieceError {
    Unavailable(String),
    Read(u64, std::io::Error),
}

fn piece_bytes(
    tracee: &dyn Target,
    location: &Location,
    size: u64,
    entries: &EntryValues,
) -> Result<Vec<u8>, PieceError> {
    let read = |address: u64| {
        let mut buf = vec![0u8; size as usize];
        tracee.read_exact(address, &mut buf).map_err(|e| PieceError::Read(address, e))?;
        Ok(buf)
    };
    match location {
        Location::Register { register } => {
            let bytes = register_bytes(tracee, register).map_err(PieceError::Unavailable)?;
            fit(bytes, size).map_err(PieceError::Unavailable)
        }
        Location::Stack { base, offset } => {
            read(register_u64(tracee, base).map_err(PieceError::Unavailable)?.wrapping_add(*offset as u64))
        }
        Location::Symbol { address, .. } => read(tracee.load_bias().wrapping_add(*address)),
        Location::Indirect { .. } => read(address_of(tracee, location, entries).map_err(PieceError::Unavailable)?),
        Location::EntryValue { entry, value, frame } => {
            entries.get(tracee, *entry, value, frame, size).map_err(PieceError::Unavailable)
        }
        Location::Implicit { bytes } => {
            let bytes = decode_hex(bytes).map_err(PieceError::Unavailable)?;
            fit(bytes, size).map_err(PieceError::Unavailable)
        }
        Location::Computed { register, offset } => {
            computed(tracee, register, *offset, size).map_err(PieceError::Unavailable)
        }
        Location::OptimizedOut => Err(PieceError::Unavailable("partly optimized out at this location".into())),
        Location::Unavailable { reason } => Err(PieceError::Unavailable(format!("partly unavailable: {reason}"))),
        Location::Pieces { .. } => {
            Err(PieceError::Unavailable("described by nested pieces (malformed descriptor)".into()))
        }
    }
}

/// `register + offset` as the `size` low bytes of the sum (a `computed` location).
fn computed(tracee: &dyn Target, register: &Register, offset: i64, size: u64) -> Result<Vec<u8>, String> {
    if size > 8 {
        return Err(format!("a computed value of {size} bytes (at most 8 fit a register)"));
    }
    let value = register_u64(tracee, register)?.wrapping_add(offset as u64);
    Ok(value.to_le_bytes()[..size as usize].to_vec())
}

/// The program address of a memory-resident location (`stack`, `symbol`,
/// `indirect`).
fn address_of(tracee: &dyn Target, location: &Location, entries: &EntryValues) -> Result<u64, String> {
    Ok(match location {
        Location::Stack { base, offset } => register_u64(tracee, base)?.wrapping_add(*offset as u64),
        Location::Symbol { address, .. } => tracee.load_bias().wrapping_add(*address),
        Location::Indirect { pointer, offset } => {
            let p = match &**pointer {
                Location::Register { register } => register_u64(tracee, register)?,
                Location::EntryValue { entry, value, frame } => {
                    let bytes = entries.get(tracee, *entry, value, frame, 8)?;
                    u64::from_le_bytes(bytes.try_into().map_err(|_| "a pointer of other than 8 bytes".to_string())?)
                }
                memory => {
                    let at = address_of(tracee, memory, entries)?;
                    let mut word = [0u8; 8];
                    tracee
                        .read_exact(at, &mut word)
                        .map_err(|e| format!("behind a pointer at {at:#x} that cannot be read: {e}"))?;
                    u64::from_le_bytes(word)
                }
            };
            p.wrapping_add(*offset as u64)
        }
        _ => return Err("described as a pointer held where no pointer can be".into()),
    })
}

/// `bytes` truncated or zero-extended to `size`.
fn fit(mut bytes: Vec<u8>, size: u64) -> Result<Vec<u8>, String> {
    if size as usize > bytes.len() {
        return Err(format!("{size} bytes large but described as one {}-byte register", bytes.len()));
    }
    bytes.truncate(size as usize);
    Ok(bytes)
}

fn register_u64(tracee: &dyn Target, register: &Register) -> Result<u64, String> {
    let r = tracee.regs();
    Ok(match register.dwarf {
        0 => r.rax,
        1 => r.rdx,
        2 => r.rcx,
        3 => r.rbx,
        4 => r.rsi,
        5 => r.rdi,
        6 => r.rbp,
        7 => r.rsp,
        8 => r.r8,
        9 => r.r9,
        10 => r.r10,
        11 => r.r11,
        12 => r.r12,
        13 => r.r13,
        14 => r.r14,
        15 => r.r15,
        16 => r.rip,
        n => return Err(format!("in register {} (DWARF {n}), which is not a general-purpose register", register.name)),
    })
}

fn register_bytes(tracee: &dyn Target, register: &Register) -> Result<Vec<u8>, String> {
    match register.dwarf {
        17..=32 => tracee
            .xmm(register.dwarf - 17)
            .map(|b| b.to_vec())
            .map_err(|e| format!("in register {}, which cannot be read: {e}", register.name)),
        _ => register_u64(tracee, register).map(|v| v.to_le_bytes().to_vec()),
    }
}

fn decode_hex(text: &str) -> Result<Vec<u8>, String> {
    let bad = || format!("a constant with malformed bytes `{text}` in the descriptors");
    if !text.len().is_multiple_of(2) {
        return Err(bad());
    }
    (0..text.len())
        .step_by(2)
        .map(|i| text.get(i..i + 2).and_then(|h| u8::from_str_radix(h, 16).ok()).ok_or_else(bad))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rdb_descriptors::{ArgumentKind, Piece, PlacedLocation};
    use rdb_tracee::ptrace::zeroed_regs;
    use rdb_tracee::{Memory, Pid, Regs};
    use std::io;

    struct Fake {
        regs: Regs,
        memory: (u64, Vec<u8>),
    }

    impl Memory for Fake {
        fn read_memory(&self, addr: u64, buf: &mut [u8]) -> io::Result<usize> {
            let (base, bytes) = &self.memory;
            let start = addr.checked_sub(*base).ok_or(io::ErrorKind::InvalidInput)? as usize;
            let src = bytes.get(start..start + buf.len()).ok_or(io::ErrorKind::InvalidInput)?;
            buf.copy_from_slice(src);
            Ok(buf.len())
        }
    }

    impl Target for Fake {
        fn tid(&self) -> Pid {
            Pid(0)
        }
        fn regs(&self) -> &Regs {
            &self.regs
        }
        fn load_bias(&self) -> u64 {
            0x1000_0000
        }
    }

    fn arg(position: u32, size: u64, location: Location) -> ArgumentDescriptor {
        ArgumentDescriptor {
            region: 7,
            position,
            name: format!("v{position}"),
            kind: ArgumentKind::Local,
            type_name: "T".into(),
            size,
            locations: vec![PlacedLocation { address: 0x40, location, type_name: None, size: None }],
        }
    }

    fn loc() -> Loc {
        Loc(rdb_descriptors::SourceLocation { file: "src/main.rs".into(), line: 3, column: 5 })
    }

    #[test]
    fn every_location_class() {
        let mut regs = zeroed_regs();
        regs.rbp = 0x7000;
        regs.rdi = 0x1122_3344_5566_7788;
        let fake = Fake { regs, memory: (0x6ff0, (0u8..32).collect()) };
        let args = [
            arg(0, 8, Location::Stack { base: Register::x86_64(6), offset: -16 }),
            arg(1, 4, Location::Register { register: Register::x86_64(5) }),
            arg(2, 8, Location::Symbol { symbol: "G".into(), offset: 0, address: 0x2000 }),
            arg(
                3,
                6,
                Location::Pieces {
                    pieces: vec![
                        Piece { size: 2, location: Location::Register { register: Register::x86_64(5) } },
                        Piece { size: 4, location: Location::Stack { base: Register::x86_64(6), offset: -15 } },
                    ],
                },
            ),
            arg(4, 2, Location::Implicit { bytes: "ff01".into() }),
            arg(5, 8, Location::Computed { register: Register::x86_64(6), offset: -3 }),
        ];
        let refs: Vec<&ArgumentDescriptor> = args.iter().rev().collect();
        let values = compute(7, 0x40, &refs, &fake, &EntryValues::default(), &loc()).unwrap();
        assert_eq!(
            values,
            vec![
                ArgValue::Copied { bytes: (0u8..8).collect(), from: 0x6ff0 },
                ArgValue::Bytes(vec![0x88, 0x77, 0x66, 0x55]),
                ArgValue::Address(0x1000_2000),
                ArgValue::Bytes(vec![0x88, 0x77, 1, 2, 3, 4]),
                ArgValue::Bytes(vec![0xff, 0x01]),
                ArgValue::Bytes((0x7000u64 - 3).to_le_bytes().to_vec()),
            ]
        );
    }

    #[test]
    fn entry_values_are_kept_per_call() {
        let frame = FrameAddress { register: Register::x86_64(6), offset: 16 };
        let entry = |r: u16| Location::EntryValue {
            entry: 0x10,
            value: Box::new(Location::Register { register: Register::x86_64(r) }),
            frame: frame.clone(),
        };
        let a = arg(0, 8, entry(5));
        let b = arg(1, 8, Location::Indirect { pointer: Box::new(entry(4)), offset: 4 });
        let mut entries = EntryValues::of([&a, &b]);
        assert_eq!(entries.entries().collect::<Vec<_>>(), [0x10]);
        let at_entry = |rsp: u64, rdi: u64| {
            let mut regs = zeroed_regs();
            regs.rsp = rsp;
            regs.rdi = rdi;
            regs.rsi = 0x6ff0;
            Fake { regs, memory: (0x6ff0, (0u8..32).collect()) }
        };
        // Two calls (an outer one, a recursive inner one), each entered with its own rdi.
        assert!(entries.keep(0x10, &at_entry(0x8000 - 8, 111)));
        assert!(entries.keep(0x10, &at_entry(0x7000 - 8, 222)));
        assert!(!entries.keep(0x40, &at_entry(0x7000 - 8, 333)), "not an entry");
        // At the region the frame address is rbp + 16.
        let at_region = |rbp: u64| {
            let mut regs = zeroed_regs();
            regs.rbp = rbp;
            Fake { regs, memory: (0x6ff0, (0u8..32).collect()) }
        };
        let values = compute(7, 0x40, &[&a, &b], &at_region(0x7000 - 16), &entries, &loc()).unwrap();
        assert_eq!(
            values,
            vec![
                ArgValue::Bytes(222u64.to_le_bytes().to_vec()),
                ArgValue::Copied { bytes: (4u8..12).collect(), from: 0x6ff4 }
            ]
        );
        let values = compute(7, 0x40, &[&a], &at_region(0x8000 - 16), &entries, &loc()).unwrap();
        assert_eq!(values, vec![ArgValue::Bytes(111u64.to_le_bytes().to_vec())]);
        // A call whose entry was not seen, and every call once the replay went back: said, not guessed.
        let err = compute(7, 0x40, &[&a], &at_region(0x9000 - 16), &entries, &loc()).unwrap_err().to_string();
        assert!(err.contains("did not see this call's entry"), "{err}");
        entries.forget();
        let err = compute(7, 0x40, &[&a], &at_region(0x7000 - 16), &entries, &loc()).unwrap_err().to_string();
        assert!(err.contains("did not see this call's entry"), "{err}");
    }

    #[test]
    fn indirect_locations_follow_pointers() {
        // SAFETY: user_regs_struct is plain integers.
        let mut regs: libc::user_regs_struct = unsafe { std::mem::zeroed() };
        regs.rsp = 0x6ff0;
        // At rsp + 8 a pointer to 0x7000 + 16, where the value is.
        let mut memory = vec![0u8; 64];
        memory[8..16].copy_from_slice(&0x7000u64.to_le_bytes());
        memory[32..36].copy_from_slice(&[9, 8, 7, 6]);
        let fake = Fake { regs, memory: (0x6ff0, memory) };
        let pointer = Box::new(Location::Stack { base: Register::x86_64(7), offset: 8 });
        let a = arg(0, 4, Location::Indirect { pointer, offset: 16 });
        let b = arg(
            1,
            2,
            Location::Indirect { pointer: Box::new(Location::Register { register: Register::x86_64(7) }), offset: 34 },
        );
        let values = compute(7, 0x40, &[&a, &b], &fake, &EntryValues::default(), &loc()).unwrap();
        assert_eq!(
            values,
            vec![
                ArgValue::Copied { bytes: vec![9, 8, 7, 6], from: 0x7010 },
                ArgValue::Copied { bytes: vec![7, 6], from: 0x6ff0 + 34 }
            ]
        );
    }

    #[test]
    fn large_or_unreadable_stack_variables_stay_in_program_memory() {
        let mut regs = zeroed_regs();
        regs.rbp = 0x7000;
        let fake = Fake { regs, memory: (0x6ff0, vec![0; 32]) };
        let stack = |offset| Location::Stack { base: Register::x86_64(6), offset };
        let big = arg(0, COPY_LIMIT + 1, stack(-16));
        let unreadable = arg(1, 8, stack(0x100));
        let values = compute(7, 0x40, &[&big, &unreadable], &fake, &EntryValues::default(), &loc()).unwrap();
        assert_eq!(values, vec![ArgValue::Address(0x6ff0), ArgValue::Address(0x7100)]);
    }

    #[test]
    fn optimized_out_names_the_variable_and_region() {
        let regs = zeroed_regs();
        let fake = Fake { regs, memory: (0, vec![]) };
        let a = arg(0, 8, Location::OptimizedOut);
        let err = compute(7, 0x40, &[&a], &fake, &EntryValues::default(), &loc()).unwrap_err().to_string();
        assert!(err.contains("region 7") && err.contains("`v0`") && err.contains("optimized out"), "{err}");
        let err = compute(7, 0x99, &[&a], &fake, &EntryValues::default(), &loc()).unwrap_err().to_string();
        assert!(err.contains("not described at address 0x99"), "{err}");
        let b = arg(1, 8, Location::Implicit { bytes: "00".into() });
        let err = compute(7, 0x40, &[&b], &fake, &EntryValues::default(), &loc()).unwrap_err().to_string();
        assert!(err.contains("missing from the argument descriptors"), "{err}");
    }
}
