//! x86-64 Linux as gdb describes it: the core, SSE, `orig_rax` and segment-base registers, in
//! gdb's numbering, and the target description (`target.xml`) saying so. `fs_base` is what
//! makes thread-locals readable; `orig_rax` lets gdb tell a syscall restart.

use gdbstub::arch::{Arch, RegId, Registers};
use rdb_tracee::ptrace::{FpRegs, Regs};

/// x86-64 Linux (see the module docs).
pub enum X86_64Linux {}

impl Arch for X86_64Linux {
    type Usize = u64;
    type Registers = LinuxRegs;
    type BreakpointKind = usize;
    type RegId = Reg;

    fn target_description_xml() -> Option<&'static str> {
        Some(TARGET_XML)
    }
}

/// Register numbers (gdb's, as `target.xml` names them).
const RIP: usize = 16;
const EFLAGS: usize = 17;
const SEGMENTS: usize = 18; // cs ss ds es fs gs
const ST0: usize = 24;
const FPU_CONTROL: usize = 32; // fctrl fstat ftag fiseg fioff foseg fooff fop
const XMM0: usize = 40;
const MXCSR: usize = 56;
pub const ORIG_RAX: usize = 57;
const FS_BASE: usize = 58;
const GS_BASE: usize = 59;
/// Number of registers.
pub const COUNT: usize = 60;

/// Size in bytes of register `n`.
pub fn size(n: usize) -> usize {
    match n {
        0..=16 => 8,
        EFLAGS..=23 => 4,
        ST0..=31 => 10,
        FPU_CONTROL..=39 => 4,
        XMM0..=55 => 16,
        MXCSR => 4,
        ORIG_RAX..=GS_BASE => 8,
        _ => 0,
    }
}

/// A register by gdb number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reg(pub usize);

impl RegId for Reg {
    fn from_raw_id(id: usize) -> Option<(Self, Option<std::num::NonZeroUsize>)> {
        (id < COUNT).then(|| (Reg(id), std::num::NonZeroUsize::new(size(id))))
    }
    fn to_raw_id(&self) -> Option<usize> {
        Some(self.0)
    }
}

/// Every register of one thread, each as gdb sends it (little-endian bytes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinuxRegs {
    pub bytes: Vec<Vec<u8>>,
}

impl Default for LinuxRegs {
    fn default() -> Self {
        LinuxRegs { bytes: (0..COUNT).map(|n| vec![0; size(n)]).collect() }
    }
}

impl LinuxRegs {
    /// The registers of a stopped thread: general-purpose (with `fs_base`) and x87/SSE.
    pub fn from_thread(regs: &Regs, fp: &FpRegs) -> LinuxRegs {
        let mut r = LinuxRegs::default();
        let gp = [
            regs.rax, regs.rbx, regs.rcx, regs.rdx, regs.rsi, regs.rdi, regs.rbp, regs.rsp, regs.r8, regs.r9, regs.r10,
            regs.r11, regs.r12, regs.r13, regs.r14, regs.r15, regs.rip,
        ];
        for (n, v) in gp.iter().enumerate() {
            r.bytes[n] = v.to_le_bytes().to_vec();
        }
        r.bytes[EFLAGS] = (regs.eflags as u32).to_le_bytes().to_vec();
        for (i, v) in [regs.cs, regs.ss, regs.ds, regs.es, regs.fs, regs.gs].iter().enumerate() {
            r.bytes[SEGMENTS + i] = (*v as u32).to_le_bytes().to_vec();
        }
        for i in 0..8 {
            let words = &fp.st_space[i * 4..i * 4 + 4];
            let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
            r.bytes[ST0 + i] = bytes[..10].to_vec();
        }
        // FXSAVE layout: fcw, fsw, abridged ftw, fop, fpu ip, fpu dp (64-bit forms).
        let control = [
            fp.cwd as u32,
            fp.swd as u32,
            full_tag_word(fp),
            0, // fiseg
            fp.rip as u32,
            0, // foseg
            fp.rdp as u32,
            fp.fop as u32,
        ];
        for (i, v) in control.iter().enumerate() {
            r.bytes[FPU_CONTROL + i] = v.to_le_bytes().to_vec();
        }
        for i in 0..16 {
            let words = &fp.xmm_space[i * 4..i * 4 + 4];
            r.bytes[XMM0 + i] = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        }
        r.bytes[MXCSR] = fp.mxcsr.to_le_bytes().to_vec();
        r.bytes[ORIG_RAX] = regs.orig_rax.to_le_bytes().to_vec();
        r.bytes[FS_BASE] = regs.fs_base.to_le_bytes().to_vec();
        r.bytes[GS_BASE] = regs.gs_base.to_le_bytes().to_vec();
        r
    }

    /// The general-purpose part, over `base` (which supplies what gdb does not describe).
    pub fn to_regs(&self, base: &Regs) -> Regs {
        let mut regs = *base;
        let w = |n: usize| u64::from_le_bytes(self.bytes[n][..8].try_into().expect("8 bytes"));
        let d = |n: usize| u32::from_le_bytes(self.bytes[n][..4].try_into().expect("4 bytes")) as u64;
        (regs.rax, regs.rbx, regs.rcx, regs.rdx, regs.rsi, regs.rdi, regs.rbp, regs.rsp) =
            (w(0), w(1), w(2), w(3), w(4), w(5), w(6), w(7));
        (regs.r8, regs.r9, regs.r10, regs.r11, regs.r12, regs.r13, regs.r14, regs.r15) =
            (w(8), w(9), w(10), w(11), w(12), w(13), w(14), w(15));
        regs.rip = w(RIP);
        regs.eflags = d(EFLAGS);
        (regs.cs, regs.ss, regs.ds, regs.es, regs.fs, regs.gs) =
            (d(SEGMENTS), d(SEGMENTS + 1), d(SEGMENTS + 2), d(SEGMENTS + 3), d(SEGMENTS + 4), d(SEGMENTS + 5));
        regs.orig_rax = w(ORIG_RAX);
        regs.fs_base = w(FS_BASE);
        regs.gs_base = w(GS_BASE);
        regs
    }

    /// The x87/SSE part, over `base`.
    pub fn to_fpregs(&self, base: &FpRegs) -> FpRegs {
        let mut fp = *base;
        let d = |n: usize| u32::from_le_bytes(self.bytes[n][..4].try_into().expect("4 bytes"));
        for i in 0..8 {
            let mut bytes = [0u8; 16];
            bytes[..10].copy_from_slice(&self.bytes[ST0 + i]);
            for k in 0..4 {
                fp.st_space[i * 4 + k] = u32::from_le_bytes(bytes[k * 4..k * 4 + 4].try_into().expect("4 bytes"));
            }
        }
        fp.cwd = d(FPU_CONTROL) as u16;
        fp.swd = d(FPU_CONTROL + 1) as u16;
        fp.fop = d(FPU_CONTROL + 7) as u16;
        for i in 0..16 {
            for k in 0..4 {
                fp.xmm_space[i * 4 + k] =
                    u32::from_le_bytes(self.bytes[XMM0 + i][k * 4..k * 4 + 4].try_into().expect("4 bytes"));
            }
        }
        fp.mxcsr = d(MXCSR);
        fp
    }
}

/// The x87 tag word in its full form (2 bits per register) from FXSAVE's abridged one (1 bit:
/// valid or empty): gdb shows the full form. A valid register is tagged "valid" (00) unless its
/// value is zero (01) or special (10).
fn full_tag_word(fp: &FpRegs) -> u32 {
    let top = (fp.swd >> 11) & 7;
    let mut tags = 0u32;
    for phys in 0..8u16 {
        let tag = if fp.ftw & (1 << phys) == 0 {
            3
        } else {
            let st = (phys + 8 - top) % 8;
            let words = &fp.st_space[st as usize * 4..st as usize * 4 + 4];
            let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
            let exponent = u16::from_le_bytes([bytes[8], bytes[9]]) & 0x7fff;
            let mantissa = u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes"));
            if exponent == 0x7fff || (exponent == 0 && mantissa != 0) || (exponent != 0 && mantissa >> 63 == 0) {
                2
            } else if exponent == 0 && mantissa == 0 {
                1
            } else {
                0
            }
        };
        tags |= tag << (phys * 2);
    }
    tags
}

impl Registers for LinuxRegs {
    type ProgramCounter = u64;

    fn pc(&self) -> u64 {
        u64::from_le_bytes(self.bytes[RIP][..8].try_into().expect("8 bytes"))
    }

    fn gdb_serialize(&self, mut write_byte: impl FnMut(Option<u8>)) {
        for reg in &self.bytes {
            for b in reg {
                write_byte(Some(*b));
            }
        }
    }

    fn gdb_deserialize(&mut self, bytes: &[u8]) -> Result<(), ()> {
        let total: usize = (0..COUNT).map(size).sum();
        if bytes.len() < total {
            return Err(());
        }
        let mut at = 0;
        for n in 0..COUNT {
            self.bytes[n] = bytes[at..at + size(n)].to_vec();
            at += size(n);
        }
        Ok(())
    }
}

/// gdb's own amd64 Linux description (core, SSE, Linux, segments), with explicit numbers.
const TARGET_XML: &str = r#"<?xml version="1.0"?>
<!DOCTYPE target SYSTEM "gdb-target.dtd">
<target version="1.0">
<architecture>i386:x86-64</architecture>
<osabi>GNU/Linux</osabi>
<feature name="org.gnu.gdb.i386.core">
  <flags id="i386_eflags" size="4">
    <field name="CF" start="0" end="0"/><field name="" start="1" end="1"/>
    <field name="PF" start="2" end="2"/><field name="AF" start="4" end="4"/>
    <field name="ZF" start="6" end="6"/><field name="SF" start="7" end="7"/>
    <field name="TF" start="8" end="8"/><field name="IF" start="9" end="9"/>
    <field name="DF" start="10" end="10"/><field name="OF" start="11" end="11"/>
    <field name="NT" start="14" end="14"/><field name="RF" start="16" end="16"/>
    <field name="VM" start="17" end="17"/><field name="AC" start="18" end="18"/>
    <field name="VIF" start="19" end="19"/><field name="VIP" start="20" end="20"/>
    <field name="ID" start="21" end="21"/>
  </flags>
  <reg name="rax" bitsize="64" type="int64" regnum="0"/>
  <reg name="rbx" bitsize="64" type="int64"/>
  <reg name="rcx" bitsize="64" type="int64"/>
  <reg name="rdx" bitsize="64" type="int64"/>
  <reg name="rsi" bitsize="64" type="int64"/>
  <reg name="rdi" bitsize="64" type="int64"/>
  <reg name="rbp" bitsize="64" type="data_ptr"/>
  <reg name="rsp" bitsize="64" type="data_ptr"/>
  <reg name="r8" bitsize="64" type="int64"/>
  <reg name="r9" bitsize="64" type="int64"/>
  <reg name="r10" bitsize="64" type="int64"/>
  <reg name="r11" bitsize="64" type="int64"/>
  <reg name="r12" bitsize="64" type="int64"/>
  <reg name="r13" bitsize="64" type="int64"/>
  <reg name="r14" bitsize="64" type="int64"/>
  <reg name="r15" bitsize="64" type="int64"/>
  <reg name="rip" bitsize="64" type="code_ptr"/>
  <reg name="eflags" bitsize="32" type="i386_eflags"/>
  <reg name="cs" bitsize="32" type="int32"/>
  <reg name="ss" bitsize="32" type="int32"/>
  <reg name="ds" bitsize="32" type="int32"/>
  <reg name="es" bitsize="32" type="int32"/>
  <reg name="fs" bitsize="32" type="int32"/>
  <reg name="gs" bitsize="32" type="int32"/>
  <reg name="st0" bitsize="80" type="i387_ext"/>
  <reg name="st1" bitsize="80" type="i387_ext"/>
  <reg name="st2" bitsize="80" type="i387_ext"/>
  <reg name="st3" bitsize="80" type="i387_ext"/>
  <reg name="st4" bitsize="80" type="i387_ext"/>
  <reg name="st5" bitsize="80" type="i387_ext"/>
  <reg name="st6" bitsize="80" type="i387_ext"/>
  <reg name="st7" bitsize="80" type="i387_ext"/>
  <reg name="fctrl" bitsize="32" type="int" group="float"/>
  <reg name="fstat" bitsize="32" type="int" group="float"/>
  <reg name="ftag" bitsize="32" type="int" group="float"/>
  <reg name="fiseg" bitsize="32" type="int" group="float"/>
  <reg name="fioff" bitsize="32" type="int" group="float"/>
  <reg name="foseg" bitsize="32" type="int" group="float"/>
  <reg name="fooff" bitsize="32" type="int" group="float"/>
  <reg name="fop" bitsize="32" type="int" group="float"/>
</feature>
<feature name="org.gnu.gdb.i386.sse">
  <vector id="v8bf16" type="bfloat16" count="8"/>
  <vector id="v8h" type="ieee_half" count="8"/>
  <vector id="v4f" type="ieee_single" count="4"/>
  <vector id="v2d" type="ieee_double" count="2"/>
  <vector id="v16i8" type="int8" count="16"/>
  <vector id="v8i16" type="int16" count="8"/>
  <vector id="v4i32" type="int32" count="4"/>
  <vector id="v2i64" type="int64" count="2"/>
  <union id="vec128">
    <field name="v8_bfloat16" type="v8bf16"/>
    <field name="v8_half" type="v8h"/>
    <field name="v4_float" type="v4f"/>
    <field name="v2_double" type="v2d"/>
    <field name="v16_int8" type="v16i8"/>
    <field name="v8_int16" type="v8i16"/>
    <field name="v4_int32" type="v4i32"/>
    <field name="v2_int64" type="v2i64"/>
    <field name="uint128" type="uint128"/>
  </union>
  <flags id="i386_mxcsr" size="4">
    <field name="IE" start="0" end="0"/><field name="DE" start="1" end="1"/>
    <field name="ZE" start="2" end="2"/><field name="OE" start="3" end="3"/>
    <field name="UE" start="4" end="4"/><field name="PE" start="5" end="5"/>
    <field name="DAZ" start="6" end="6"/><field name="IM" start="7" end="7"/>
    <field name="DM" start="8" end="8"/><field name="ZM" start="9" end="9"/>
    <field name="OM" start="10" end="10"/><field name="UM" start="11" end="11"/>
    <field name="PM" start="12" end="12"/><field name="FZ" start="15" end="15"/>
  </flags>
  <reg name="xmm0" bitsize="128" type="vec128" regnum="40"/>
  <reg name="xmm1" bitsize="128" type="vec128"/>
  <reg name="xmm2" bitsize="128" type="vec128"/>
  <reg name="xmm3" bitsize="128" type="vec128"/>
  <reg name="xmm4" bitsize="128" type="vec128"/>
  <reg name="xmm5" bitsize="128" type="vec128"/>
  <reg name="xmm6" bitsize="128" type="vec128"/>
  <reg name="xmm7" bitsize="128" type="vec128"/>
  <reg name="xmm8" bitsize="128" type="vec128"/>
  <reg name="xmm9" bitsize="128" type="vec128"/>
  <reg name="xmm10" bitsize="128" type="vec128"/>
  <reg name="xmm11" bitsize="128" type="vec128"/>
  <reg name="xmm12" bitsize="128" type="vec128"/>
  <reg name="xmm13" bitsize="128" type="vec128"/>
  <reg name="xmm14" bitsize="128" type="vec128"/>
  <reg name="xmm15" bitsize="128" type="vec128"/>
  <reg name="mxcsr" bitsize="32" type="i386_mxcsr" group="vector"/>
</feature>
<feature name="org.gnu.gdb.i386.linux">
  <reg name="orig_rax" bitsize="64" type="int" regnum="57"/>
</feature>
<feature name="org.gnu.gdb.i386.segments">
  <reg name="fs_base" bitsize="64" type="int" regnum="58"/>
  <reg name="gs_base" bitsize="64" type="int"/>
</feature>
</target>
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registers_round_trip_through_gdb_bytes() {
        let mut regs = rdb_tracee::ptrace::zeroed_regs();
        regs.rax = 1;
        regs.r15 = 15;
        regs.rip = 0x5555_5555_1234;
        regs.eflags = 0x246;
        regs.fs_base = 0x7fff_f7d8_a740;
        regs.orig_rax = u64::MAX;
        // SAFETY: plain integers; all-zero is valid.
        let mut fp: FpRegs = unsafe { std::mem::zeroed() };
        fp.xmm_space[4] = 0xdead_beef;
        fp.mxcsr = 0x1f80;
        let g = LinuxRegs::from_thread(&regs, &fp);
        let mut bytes = Vec::new();
        g.gdb_serialize(|b| bytes.push(b.unwrap()));
        assert_eq!(bytes.len(), (0..COUNT).map(size).sum::<usize>());
        let mut back = LinuxRegs::default();
        back.gdb_deserialize(&bytes).unwrap();
        assert_eq!(back, g);
        let r = back.to_regs(&rdb_tracee::ptrace::zeroed_regs());
        assert_eq!(
            (r.rax, r.r15, r.rip, r.eflags, r.fs_base, r.orig_rax),
            (1, 15, regs.rip, 0x246, regs.fs_base, u64::MAX)
        );
        let f = back.to_fpregs(&fp);
        assert_eq!((f.xmm_space[4], f.mxcsr), (0xdead_beef, 0x1f80));
        assert_eq!(g.pc(), regs.rip);
    }
}
