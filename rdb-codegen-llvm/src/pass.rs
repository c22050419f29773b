//! The LLVM IR pass: outline each debug region of an instrumented module into
//! `__rdb_func_<id>` and keep only what the debug module needs.
//!
//! Input: the instrumented source compiled by clang-14 to IR at `-O0 -g`,
//! where `rdb_begin`/`rdb_end` are calls `__rdb_begin(LINE)`/`__rdb_end(LINE)`.
//! For each region:
//!
//! 1. **Check single-entry/single-exit** on the control-flow graph: walk the
//!    blocks reachable from the `__rdb_begin` call without passing its
//!    `__rdb_end`. Reaching a `ret`, the region's start again, or code whose
//!    debug line lies outside the region means control escapes (`break`,
//!    `continue`, `longjmp`-free jumps): an error naming the jump's file:line:col.
//! 2. **Outline**: the region's blocks move into a new function
//!    `void __rdb_func_<id>(T0 *a0, T1 *a1, ...)`. Every main-program object
//!    the region uses becomes a parameter holding its address: locals of the
//!    enclosing function (their `alloca`s), program globals, and program
//!    functions (called through the parameter). Variables declared inside the
//!    region get their own `alloca` in the debug function.
//! 3. **Entry**: `void __rdb_entry_<id>(void **argv)` loads `argv[i]` and calls
//!    `__rdb_func_<id>(argv[0], argv[1], ...)` — the `DebugEntry::Symbol`
//!    calling convention of the descriptor format.
//! 4. **Keep / drop**: the debug module keeps the debug functions, debug-only
//!    globals and functions (`__rdb_` prefix or `RDB_DEBUG_ONLY`), private
//!    constants they use (string literals), and declarations of everything
//!    else they call that the program does not define (the C library, which
//!    resolves to the debug module's own libc). All program code and data is
//!    dropped.
//!
//! Program functions called from debug code are called **through an address
//! argument** (kind `static`, located by symbol in the main binary), never
//! copied: debug code then runs exactly the program's machine code, on the
//! program's memory. Consequence: such a function must exist in the main
//! binary (at `-O2` a `static` function may be inlined everywhere; the
//! locator then reports it missing). Debug-only functions may use their
//! parameters, debug-only globals and libc, but not program globals or
//! functions directly (they have no argument list the replayer fills); that
//! is an error with a hint.

use crate::source::DEBUG_PREFIX;
use inkwell::context::Context;
use inkwell::llvm_sys::core::*;
use inkwell::llvm_sys::debuginfo::{
    LLVMDILocationGetColumn, LLVMDILocationGetInlinedAt, LLVMDILocationGetLine, LLVMInstructionGetDebugLoc,
    LLVMStripModuleDebugInfo,
};
use inkwell::llvm_sys::prelude::*;
use inkwell::llvm_sys::{LLVMLinkage, LLVMOpcode};
use inkwell::module::Module;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::ffi::{CStr, CString};
use std::path::{Path, PathBuf};

/// One region to outline, as found in the source.
#[derive(Debug, Clone)]
pub struct RegionSpec {
    /// Region id (unique in the binary).
    pub id: u32,
    /// Lines of the `rdb_begin` and `rdb_end` markers.
    pub begin_line: u32,
    pub end_line: u32,
    /// Identifiers written in the region: LLVM renames a variable that
    /// shadows another (`b` becomes `b4763`); the source name is the longest
    /// prefix of the IR name found here.
    pub identifiers: BTreeSet<String>,
}

/// What the pass needs besides the module.
#[derive(Debug, Clone)]
pub struct PassInput<'a> {
    /// The instrumented source file (for diagnostics).
    pub file: &'a Path,
    pub regions: &'a [RegionSpec],
    /// Names of debug-only declarations found by the source pass.
    pub debug_only: &'a BTreeSet<String>,
    /// Names the main program defines (functions and data), including other
    /// translation units: references to them become arguments.
    pub program_symbols: &'a HashSet<String>,
}

/// A region after outlining.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutlinedRegion {
    pub id: u32,
    /// The enclosing function's name.
    pub function: String,
    /// `__rdb_func_<id>`.
    pub debug_function: String,
    /// `__rdb_entry_<id>`.
    pub entry: String,
    /// Arguments in `argv` order.
    pub arguments: Vec<OutlinedArgument>,
    /// Where the program continues after the region (line, column in the
    /// instrumented source): the debug location of the first instruction
    /// executed after `rdb_end`, following unconditional branches. For a
    /// region that ends a loop body this is the loop's step or condition,
    /// which the closing brace itself does not name.
    pub continues_at: Option<(u32, u32)>,
}

/// One argument of a debug function.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutlinedArgument {
    /// The variable's (or function's) name in the source.
    pub name: String,
    /// A local of the enclosing function (true) or a static/function (false).
    pub local: bool,
    /// A program function (called through its address).
    pub function: bool,
    /// The region uses only the object's address (to watch it: `rdb_watch(&x, ..)`), not
    /// its value, so a value held in a register does not matter.
    pub address_only: bool,
}

/// Why outlining failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PassError {
    #[error("cannot read LLVM bitcode {path}: {message}")]
    Read { path: PathBuf, message: String },
    #[error("cannot write LLVM bitcode {path}")]
    Write { path: PathBuf },
    #[error("{0}")]
    Region(String),
    #[error("the debug module of {file} does not verify (an rdb-clang bug): {message}")]
    Verify { file: PathBuf, message: String },
}

/// Outlines the regions of `input_bc` and writes the debug module to
/// `output_bc`.
pub fn outline_file(input_bc: &Path, output_bc: &Path, input: &PassInput) -> Result<Vec<OutlinedRegion>, PassError> {
    let context = Context::create();
    let module = Module::parse_bitcode_from_path(input_bc, &context)
        .map_err(|e| PassError::Read { path: input_bc.into(), message: e.to_string() })?;
    let regions = outline_module(&module, input)?;
    if !module.write_bitcode_to_path(output_bc) {
        return Err(PassError::Write { path: output_bc.into() });
    }
    Ok(regions)
}

/// Outlines the regions of `module` in place; on success the module is the
/// debug module.
pub fn outline_module(module: &Module, input: &PassInput) -> Result<Vec<OutlinedRegion>, PassError> {
    // SAFETY: the module and its context outlive this call; every raw handle
    // below comes from that module and is used only while it is alive.
    let result = unsafe { Outliner::new(module.as_mut_ptr(), input).run() };
    let regions = result?;
    module.verify().map_err(|e| PassError::Verify { file: input.file.into(), message: e.to_string() })?;
    Ok(regions)
}

struct Marker {
    call: LLVMValueRef,
    function: LLVMValueRef,
}

type MarkersByLine = HashMap<u32, Marker>;

/// What [`Outliner::copied_functions`] found.
struct Copies {
    /// Program object -> its slot in the debug module.
    slots: HashMap<LLVMValueRef, LLVMValueRef>,
    /// Copied function -> the program objects it uses through slots.
    uses: HashMap<LLVMValueRef, Vec<LLVMValueRef>>,
    /// The functions whose own code the debug module runs: copies and debug-only
    /// functions (a program function the main binary has is called there instead).
    own: HashSet<LLVMValueRef>,
}

impl Copies {
    /// The program objects the copied functions reachable from `code` (through calls and
    /// function references, across debug-only functions and other copies) use.
    unsafe fn reached_from(&self, code: &[LLVMValueRef]) -> Vec<LLVMValueRef> {
        let mut roots = Vec::new();
        for &i in code {
            self.push_own_functions(i, &mut roots);
        }
        self.reached_from_functions(roots)
    }

    /// The functions of the debug module's own code that `i` names.
    unsafe fn push_own_functions(&self, i: LLVMValueRef, stack: &mut Vec<LLVMValueRef>) {
        for k in 0..LLVMGetNumOperands(i) as u32 {
            let o = LLVMGetOperand(i, k);
            if self.own.contains(&o) {
                stack.push(o);
            }
        }
    }

    /// As [`Copies::reached_from`], from functions.
    unsafe fn reached_from_functions(&self, mut stack: Vec<LLVMValueRef>) -> Vec<LLVMValueRef> {
        let mut out = Vec::new();
        if self.uses.is_empty() {
            return out;
        }
        let mut seen = HashSet::new();
        while let Some(f) = stack.pop() {
            if !seen.insert(f) {
                continue;
            }
            for &g in self.uses.get(&f).into_iter().flatten() {
                if !out.contains(&g) {
                    out.push(g);
                }
            }
            for bb in blocks(f) {
                for i in instructions(bb) {
                    self.push_own_functions(i, &mut stack);
                }
            }
        }
        out
    }
}

struct Outliner<'a> {
    m: LLVMModuleRef,
    ctx: LLVMContextRef,
    b: LLVMBuilderRef,
    input: &'a PassInput<'a>,
}

impl Drop for Outliner<'_> {
    fn drop(&mut self) {
        // SAFETY: the builder was created in `new` and is disposed once.
        unsafe { LLVMDisposeBuilder(self.b) }
    }
}

unsafe fn name(v: LLVMValueRef) -> String {
    let mut len = 0usize;
    let p = LLVMGetValueName2(v, &mut len);
    if p.is_null() {
        return String::new();
    }
    String::from_utf8_lossy(std::slice::from_raw_parts(p as *const u8, len)).into_owned()
}

unsafe fn instructions(bb: LLVMBasicBlockRef) -> Vec<LLVMValueRef> {
    let mut out = Vec::new();
    let mut i = LLVMGetFirstInstruction(bb);
    while !i.is_null() {
        out.push(i);
        i = LLVMGetNextInstruction(i);
    }
    out
}

unsafe fn blocks(f: LLVMValueRef) -> Vec<LLVMBasicBlockRef> {
    let mut out = Vec::new();
    let mut b = LLVMGetFirstBasicBlock(f);
    while !b.is_null() {
        out.push(b);
        b = LLVMGetNextBasicBlock(b);
    }
    out
}

unsafe fn functions(m: LLVMModuleRef) -> Vec<LLVMValueRef> {
    let mut out = Vec::new();
    let mut f = LLVMGetFirstFunction(m);
    while !f.is_null() {
        out.push(f);
        f = LLVMGetNextFunction(f);
    }
    out
}

unsafe fn globals(m: LLVMModuleRef) -> Vec<LLVMValueRef> {
    let mut out = Vec::new();
    let mut g = LLVMGetFirstGlobal(m);
    while !g.is_null() {
        out.push(g);
        g = LLVMGetNextGlobal(g);
    }
    out
}

unsafe fn successors(bb: LLVMBasicBlockRef) -> Vec<LLVMBasicBlockRef> {
    let t = LLVMGetBasicBlockTerminator(bb);
    if t.is_null() {
        return Vec::new();
    }
    (0..LLVMGetNumSuccessors(t)).map(|i| LLVMGetSuccessor(t, i)).collect()
}

unsafe fn callee_name(i: LLVMValueRef) -> Option<String> {
    if LLVMIsACallInst(i).is_null() {
        return None;
    }
    let c = LLVMGetCalledValue(i);
    if LLVMIsAFunction(c).is_null() {
        return None;
    }
    Some(name(c))
}

unsafe fn uses(v: LLVMValueRef) -> Vec<LLVMValueRef> {
    let mut out = Vec::new();
    let mut u = LLVMGetFirstUse(v);
    while !u.is_null() {
        out.push(LLVMGetUser(u));
        u = LLVMGetNextUse(u);
    }
    out
}

fn cstr(s: &str) -> CString {
    CString::new(s.replace('\0', "")).unwrap_or_default()
}

/// How a value used by a region is treated in the debug function.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Use {
    /// Becomes a parameter (its address is passed).
    Argument,
    /// Stays as is (debug-only, libc, constant, intrinsic).
    Keep,
}

impl<'a> Outliner<'a> {
    unsafe fn new(m: LLVMModuleRef, input: &'a PassInput<'a>) -> Self {
        let ctx = LLVMGetModuleContext(m);
        Outliner { m, ctx, b: LLVMCreateBuilderInContext(ctx), input }
    }

    fn at(&self, line: u32, column: u32, message: &str, hint: &str) -> PassError {
        PassError::Region(format!(
            "{}:{}:{}: error: {}\n  = help: {}",
            self.input.file.display(),
            line,
            column,
            message,
            hint
        ))
    }

    fn is_debug_only(&self, n: &str) -> bool {
        self.input.debug_only.contains(n)
            || (n.starts_with(DEBUG_PREFIX)
                && !n.starts_with("__rdb_begin")
                && !n.starts_with("__rdb_end")
                && !n.starts_with("__rdb_func_")
                && !n.starts_with("__rdb_entry_"))
    }

    /// How a global value (function or variable) used by a region is treated.
    unsafe fn classify_global(&self, g: LLVMValueRef) -> Use {
        let n = name(g);
        if n.starts_with("llvm.") || self.is_debug_only(&n) {
            return Use::Keep;
        }
        if !LLVMIsAGlobalVariable(g).is_null()
            && LLVMIsGlobalConstant(g) != 0
            && (LLVMGetLinkage(g) == LLVMLinkage::LLVMPrivateLinkage || n.starts_with('.'))
        {
            // String literals and other anonymous constants: copied.
            return Use::Keep;
        }
        let in_program = self.input.program_symbols.contains(&n);
        if LLVMIsDeclaration(g) != 0 && !in_program {
            return Use::Keep; // the C library (the debug module's own)
        }
        if !in_program && !self.input.program_symbols.is_empty() {
            // Defined here but absent from the main binary (unused once the
            // debug code is stripped, or inlined everywhere): the program
            // never touched it, so a copy is exact.
            return Use::Keep;
        }
        Use::Argument
    }

    /// The `__rdb_begin` and `__rdb_end` calls, by marker line.
    unsafe fn markers(&self) -> Result<(MarkersByLine, MarkersByLine), PassError> {
        let (mut begins, mut ends) = (HashMap::new(), HashMap::new());
        for f in functions(self.m) {
            for bb in blocks(f) {
                for i in instructions(bb) {
                    let Some(c) = callee_name(i) else { continue };
                    let map = match c.as_str() {
                        "__rdb_begin" => &mut begins,
                        "__rdb_end" => &mut ends,
                        _ => continue,
                    };
                    let arg = LLVMGetOperand(i, 0);
                    if LLVMIsAConstantInt(arg).is_null() {
                        return Err(PassError::Region(format!(
                            "{}: `{c}` called with a non-constant argument: use the rdb_begin/rdb_end markers of rdb.h",
                            self.input.file.display()
                        )));
                    }
                    let line = LLVMConstIntGetZExtValue(arg) as u32;
                    if map.insert(line, Marker { call: i, function: f }).is_some() {
                        return Err(self.at(
                            line,
                            1,
                            "two debug-region markers expand on this line",
                            "write each rdb_begin/rdb_end directly in the .c file, one per line (not inside a macro)",
                        ));
                    }
                }
            }
        }
        Ok((begins, ends))
    }

    unsafe fn run(&self) -> Result<Vec<OutlinedRegion>, PassError> {
        let (begins, ends) = self.markers()?;
        let known: HashSet<u32> = self.input.regions.iter().flat_map(|r| [r.begin_line, r.end_line]).collect();
        for (line, m) in begins.iter().chain(ends.iter()) {
            if !known.contains(line) {
                return Err(self.at(
                    *line,
                    1,
                    &format!("debug-region marker in `{}` that rdb-clang did not find in the source", name(m.function)),
                    "write rdb_begin/rdb_end literally in the .c file (not through a macro or a header)",
                ));
            }
        }
        // Phase 1 (with debug info): find and check every region.
        let mut plans = Vec::new();
        for r in self.input.regions {
            let (Some(b), Some(e)) = (begins.get(&r.begin_line), ends.get(&r.end_line)) else {
                continue; // compiled out by the preprocessor (#if 0 ...)
            };
            if b.function != e.function {
                return Err(self.at(
                    r.end_line,
                    1,
                    "`rdb_end` is in a different function from its `rdb_begin`",
                    "a region must be a sequence of statements of one block",
                ));
            }
            let blocks = self.region_blocks(r, b, e)?;
            let locals = self.region_locals(b.function, &blocks, b.call, e.call);
            plans.push((r.clone(), b.call, e.call, b.function, locals, continues_at(e.call)));
        }
        LLVMStripModuleDebugInfo(self.m);
        let copies = self.copied_functions()?;
        // Phase 2: outline. Blocks are walked again: outlining an earlier
        // region of the same function splits blocks.
        let mut out = Vec::new();
        for (r, bcall, ecall, f, locals, next) in plans {
            let (b, e) = (Marker { call: bcall, function: f }, Marker { call: ecall, function: f });
            let blocks = self.region_blocks(&r, &b, &e)?;
            let mut o = self.outline(&r, bcall, ecall, f, &blocks, &locals, &copies)?;
            o.continues_at = next;
            out.push(o);
        }
        self.refuse_slots_outside_regions(&copies)?;
        self.sweep()?;
        Ok(out)
    }

    /// The region's blocks in walk order (first: the block of the begin call,
    /// which also holds the end call when the region is straight-line code).
    unsafe fn region_blocks(
        &self,
        r: &RegionSpec,
        b: &Marker,
        e: &Marker,
    ) -> Result<Vec<LLVMBasicBlockRef>, PassError> {
        let start = LLVMGetInstructionParent(b.call);
        let end_block = LLVMGetInstructionParent(e.call);
        let mut order = vec![start];
        let mut from: HashMap<LLVMBasicBlockRef, LLVMValueRef> = HashMap::new(); // block -> jump that reached it
        let mut queue = std::collections::VecDeque::from([start]);
        let in_range = |l: u32| l == 0 || (l >= r.begin_line && l <= r.end_line);
        let escape = |jump: Option<LLVMValueRef>| -> PassError {
            let (line, col) = match jump {
                Some(j) => source_position(j),
                None => (r.begin_line, 1),
            };
            self.at(
                line,
                col,
                "control leaves the debug region here without passing `rdb_end` (break, continue or return out of the region)",
                &format!("debug regions (lines {}-{}) are single-entry/single-exit: control must leave through `rdb_end`", r.begin_line, r.end_line),
            )
        };
        while let Some(bb) = queue.pop_front() {
            let insts = instructions(bb);
            let mut skip = bb == start;
            let mut stop = false;
            for i in insts {
                if skip {
                    if i == b.call {
                        skip = false;
                    }
                    continue;
                }
                if i == e.call {
                    stop = true;
                    break;
                }
                if i == b.call || !LLVMIsAReturnInst(i).is_null() || !in_range(source_position(i).0) {
                    return Err(escape(from.get(&bb).copied()));
                }
            }
            if stop {
                if bb != end_block {
                    return Err(escape(from.get(&bb).copied()));
                }
                continue;
            }
            for s in successors(bb) {
                if s == start {
                    return Err(escape(Some(LLVMGetBasicBlockTerminator(bb))));
                }
                if !order.contains(&s) {
                    order.push(s);
                    from.insert(s, LLVMGetBasicBlockTerminator(bb));
                    queue.push_back(s);
                }
            }
        }
        if !order.contains(&end_block) {
            return Err(self.at(
                r.end_line,
                1,
                "`rdb_end` cannot be reached from its `rdb_begin`",
                "remove the code that always leaves the region (e.g. exit or an endless loop)",
            ));
        }
        Ok(order)
    }

    /// Allocas of variables declared inside the region: they belong to the
    /// debug function, not to the program.
    unsafe fn region_locals(
        &self,
        f: LLVMValueRef,
        region: &[LLVMBasicBlockRef],
        bcall: LLVMValueRef,
        ecall: LLVMValueRef,
    ) -> HashSet<LLVMValueRef> {
        let inside: HashSet<LLVMValueRef> = region_instructions(region, bcall, ecall).into_iter().collect();
        // llvm.dbg.declare refers to its alloca through metadata: map the
        // declared allocas (by name) to whether the declaration is inside.
        let mut declared: HashMap<String, bool> = HashMap::new();
        let mut allocas = Vec::new();
        for bb in blocks(f) {
            for i in instructions(bb) {
                if !LLVMIsAAllocaInst(i).is_null() {
                    allocas.push(i);
                } else if callee_name(i).as_deref() == Some("llvm.dbg.declare") {
                    if let Some(t) = declare_target(i) {
                        *declared.entry(t).or_insert(false) |= inside.contains(&i);
                    }
                }
            }
        }
        let mut out = HashSet::new();
        for i in allocas {
            let n = name(i);
            let users = uses(i);
            let all_inside = !users.is_empty() && users.iter().all(|u| inside.contains(u));
            // Variables have a dbg.declare (the IR is compiled with -g);
            // allocas without one are compiler temporaries (VLA stack saves,
            // aggregate copies), which belong to whoever uses them.
            let local = match declared.get(&n) {
                Some(&inside) => inside && !n.is_empty(),
                None => all_inside || users.iter().any(|u| inside.contains(u)),
            };
            if local {
                out.insert(i);
            }
        }
        out
    }

    #[allow(clippy::too_many_arguments)]
    unsafe fn outline(
        &self,
        r: &RegionSpec,
        bcall: LLVMValueRef,
        ecall: LLVMValueRef,
        f: LLVMValueRef,
        region: &[LLVMBasicBlockRef],
        locals: &HashSet<LLVMValueRef>,
        copies: &Copies,
    ) -> Result<OutlinedRegion, PassError> {
        let inside = region_instructions(region, bcall, ecall);
        let inside_set: HashSet<LLVMValueRef> = inside.iter().copied().collect();
        // Collect the values the region uses from outside, in first-use order.
        let mut params: Vec<LLVMValueRef> = Vec::new();
        let mut local_allocas: Vec<LLVMValueRef> = Vec::new();
        for &i in &inside {
            for k in 0..LLVMGetNumOperands(i) {
                let v = LLVMGetOperand(i, k as u32);
                self.collect(v, &inside_set, locals, &mut params, &mut local_allocas, r)?;
            }
        }
        // The program objects the copied functions this region calls use: the region
        // receives them too and fills their slots on entry.
        let reached = copies.reached_from(&inside);
        for &g in &reached {
            if !params.contains(&g) {
                params.push(g);
            }
        }
        // The debug function.
        let mut types: Vec<LLVMTypeRef> = params.iter().map(|&p| LLVMTypeOf(p)).collect();
        let fn_ty = LLVMFunctionType(LLVMVoidTypeInContext(self.ctx), types.as_mut_ptr(), types.len() as u32, 0);
        let fname = format!("__rdb_func_{}", r.id);
        let nf = LLVMAddFunction(self.m, cstr(&fname).as_ptr(), fn_ty);
        let mut map: HashMap<LLVMValueRef, LLVMValueRef> = HashMap::new();
        let mut arguments = Vec::new();
        for (k, &p) in params.iter().enumerate() {
            let a = LLVMGetParam(nf, k as u32);
            let n = name(p);
            let local = !LLVMIsAAllocaInst(p).is_null();
            let shown = if local {
                source_name(n.strip_suffix(".addr").unwrap_or(&n), &r.identifiers)
            } else {
                // A function's static `calls` is the global `step.calls`.
                n.rsplit('.').next().unwrap_or(&n).to_string()
            };
            LLVMSetValueName2(a, shown.as_ptr() as _, shown.len());
            map.insert(p, a);
            arguments.push(OutlinedArgument {
                name: shown,
                local,
                function: !LLVMIsAFunction(p).is_null(),
                address_only: false,
            });
        }
        let entry = LLVMAppendBasicBlockInContext(self.ctx, nf, c"entry".as_ptr());
        LLVMPositionBuilderAtEnd(self.b, entry);
        for &a in &local_allocas {
            let n = cstr(&name(a));
            let na = LLVMBuildAlloca(self.b, LLVMGetAllocatedType(a), n.as_ptr());
            LLVMSetAlignment(na, LLVMGetAlignment(a));
            map.insert(a, na);
        }
        for &g in &reached {
            LLVMBuildStore(self.b, map[&g], copies.slots[&g]);
        }
        // Split the start block: program code before the begin call stays in
        // the enclosing function (in a fresh block), the rest moves.
        let start = region[0];
        let end_block = LLVMGetInstructionParent(ecall);
        let head = LLVMAppendBasicBlockInContext(self.ctx, f, c"rdb.head".as_ptr());
        for i in instructions(start) {
            let last = i == bcall;
            move_to_end(self.b, i, head);
            if last {
                break;
            }
        }
        let tail = LLVMAppendBasicBlockInContext(self.ctx, f, c"rdb.tail".as_ptr());
        let mut after = false;
        for i in instructions(end_block) {
            if i == ecall {
                after = true;
                continue;
            }
            if after {
                move_to_end(self.b, i, tail);
            }
        }
        LLVMReplaceAllUsesWith(ecall, LLVMGetUndef(LLVMTypeOf(ecall)));
        LLVMInstructionEraseFromParent(ecall);
        LLVMPositionBuilderAtEnd(self.b, end_block);
        LLVMBuildRetVoid(self.b);
        let mut last = entry;
        for &bb in region {
            LLVMMoveBasicBlockAfter(bb, last);
            last = bb;
        }
        LLVMPositionBuilderAtEnd(self.b, entry);
        LLVMBuildBr(self.b, start);
        // Rewire operands to the parameters and the debug function's allocas.
        for bb in blocks(nf) {
            for i in instructions(bb) {
                for k in 0..LLVMGetNumOperands(i) as u32 {
                    let v = LLVMGetOperand(i, k);
                    if let Some(&n) = map.get(&v) {
                        LLVMSetOperand(i, k, n);
                    } else if !LLVMIsAConstantExpr(v).is_null() {
                        if let Some(n) = self.materialize(v, i, &map, r.begin_line)? {
                            LLVMSetOperand(i, k, n);
                        }
                    }
                }
            }
        }
        for (k, argument) in arguments.iter_mut().enumerate() {
            argument.address_only = !argument.local && only_watched(LLVMGetParam(nf, k as u32));
        }
        // The entry with the descriptor calling convention.
        let i8p = LLVMPointerType(LLVMInt8TypeInContext(self.ctx), 0);
        let mut argv_ty = [LLVMPointerType(i8p, 0)];
        let entry_ty = LLVMFunctionType(LLVMVoidTypeInContext(self.ctx), argv_ty.as_mut_ptr(), 1, 0);
        let ename = format!("__rdb_entry_{}", r.id);
        let ef = LLVMAddFunction(self.m, cstr(&ename).as_ptr(), entry_ty);
        let argv = LLVMGetParam(ef, 0);
        LLVMSetValueName2(argv, c"argv".as_ptr(), 4);
        let eb = LLVMAppendBasicBlockInContext(self.ctx, ef, c"entry".as_ptr());
        LLVMPositionBuilderAtEnd(self.b, eb);
        let mut call_args = Vec::new();
        for (k, ty) in types.iter().enumerate() {
            let mut idx = [LLVMConstInt(LLVMInt64TypeInContext(self.ctx), k as u64, 0)];
            let slot = LLVMBuildInBoundsGEP2(self.b, i8p, argv, idx.as_mut_ptr(), 1, c"".as_ptr());
            let p = LLVMBuildLoad2(self.b, i8p, slot, c"".as_ptr());
            call_args.push(LLVMBuildBitCast(self.b, p, *ty, c"".as_ptr()));
        }
        LLVMBuildCall2(self.b, fn_ty, nf, call_args.as_mut_ptr(), call_args.len() as u32, c"".as_ptr());
        LLVMBuildRetVoid(self.b);
        Ok(OutlinedRegion {
            id: r.id,
            function: name(f),
            debug_function: fname,
            entry: ename,
            arguments,
            continues_at: None,
        })
    }

    unsafe fn collect(
        &self,
        v: LLVMValueRef,
        inside: &HashSet<LLVMValueRef>,
        locals: &HashSet<LLVMValueRef>,
        params: &mut Vec<LLVMValueRef>,
        local_allocas: &mut Vec<LLVMValueRef>,
        r: &RegionSpec,
    ) -> Result<(), PassError> {
        if LLVMValueIsBasicBlock(v) != 0 || inside.contains(&v) {
            return Ok(());
        }
        if !LLVMIsAInstruction(v).is_null() {
            if !LLVMIsAAllocaInst(v).is_null() {
                if locals.contains(&v) {
                    if !local_allocas.contains(&v) {
                        local_allocas.push(v);
                    }
                } else if !params.contains(&v) {
                    params.push(v);
                }
                return Ok(());
            }
            return Err(self.at(
                r.begin_line,
                1,
                "the debug region uses a value computed before it that is not a variable",
                "copy it into a variable before the region (this can happen with GNU statement expressions or VLAs)",
            ));
        }
        if !LLVMIsAArgument(v).is_null() {
            return Err(self.at(
                r.begin_line,
                1,
                "the debug region uses a function parameter directly",
                "rdb-clang compiles regions at -O0, where parameters live in variables: report this as a bug",
            ));
        }
        if !LLVMIsAGlobalValue(v).is_null() {
            if self.classify_global(v) == Use::Argument && !params.contains(&v) {
                params.push(v);
            }
            return Ok(());
        }
        if !LLVMIsAConstantExpr(v).is_null() {
            for k in 0..LLVMGetNumOperands(v) as u32 {
                self.collect(LLVMGetOperand(v, k), inside, locals, params, local_allocas, r)?;
            }
        }
        Ok(())
    }

    /// Rebuilds a constant expression that refers to a program global as
    /// instructions on the global's parameter, before `at`.
    unsafe fn materialize(
        &self,
        c: LLVMValueRef,
        at: LLVMValueRef,
        map: &HashMap<LLVMValueRef, LLVMValueRef>,
        line: u32,
    ) -> Result<Option<LLVMValueRef>, PassError> {
        let n = LLVMGetNumOperands(c) as u32;
        let mut ops = Vec::new();
        let mut changed = false;
        for k in 0..n {
            let o = LLVMGetOperand(c, k);
            let new = if let Some(&m) = map.get(&o) {
                Some(m)
            } else if !LLVMIsAConstantExpr(o).is_null() {
                self.materialize(o, at, map, line)?
            } else {
                None
            };
            changed |= new.is_some();
            ops.push(new.unwrap_or(o));
        }
        if !changed {
            return Ok(None);
        }
        if !LLVMIsAPHINode(at).is_null() {
            return Err(self.at(
                line,
                1,
                "the debug region uses a program global inside a conditional constant",
                "assign the value to a debug-local variable first",
            ));
        }
        LLVMPositionBuilderBefore(self.b, at);
        let op = LLVMGetConstOpcode(c);
        let v = match op {
            LLVMOpcode::LLVMGetElementPtr => {
                let ty = LLVMGetGEPSourceElementType(c);
                let mut idx = ops[1..].to_vec();
                if LLVMIsInBounds(c) != 0 {
                    LLVMBuildInBoundsGEP2(self.b, ty, ops[0], idx.as_mut_ptr(), idx.len() as u32, c"".as_ptr())
                } else {
                    LLVMBuildGEP2(self.b, ty, ops[0], idx.as_mut_ptr(), idx.len() as u32, c"".as_ptr())
                }
            }
            LLVMOpcode::LLVMBitCast
            | LLVMOpcode::LLVMPtrToInt
            | LLVMOpcode::LLVMIntToPtr
            | LLVMOpcode::LLVMAddrSpaceCast
            | LLVMOpcode::LLVMTrunc
            | LLVMOpcode::LLVMZExt
            | LLVMOpcode::LLVMSExt => LLVMBuildCast(self.b, op, ops[0], LLVMTypeOf(c), c"".as_ptr()),
            LLVMOpcode::LLVMICmp => LLVMBuildICmp(self.b, LLVMGetICmpPredicate(c), ops[0], ops[1], c"".as_ptr()),
            LLVMOpcode::LLVMSelect => LLVMBuildSelect(self.b, ops[0], ops[1], ops[2], c"".as_ptr()),
            LLVMOpcode::LLVMAdd
            | LLVMOpcode::LLVMSub
            | LLVMOpcode::LLVMMul
            | LLVMOpcode::LLVMAnd
            | LLVMOpcode::LLVMOr
            | LLVMOpcode::LLVMXor
            | LLVMOpcode::LLVMShl
            | LLVMOpcode::LLVMLShr
            | LLVMOpcode::LLVMAShr
            | LLVMOpcode::LLVMUDiv
            | LLVMOpcode::LLVMSDiv
            | LLVMOpcode::LLVMURem
            | LLVMOpcode::LLVMSRem => LLVMBuildBinOp(self.b, op, ops[0], ops[1], c"".as_ptr()),
            _ => {
                return Err(self.at(
                    line,
                    1,
                    &format!("unsupported constant expression ({op:?}) on a program global in the debug region"),
                    "assign the value to a variable in the region first",
                ));
            }
        };
        Ok(Some(v))
    }

    /// Copies of program functions the main binary lacks (inlined everywhere, as `-O2`
    /// does with small `static` helpers) that debug code may call: each use of a program
    /// object in them (a global, a function the program has) becomes a load of a slot,
    /// `__rdb_prog.NAME`, that every region reaching the copy fills with the object's address
    /// (which it receives as an argument) before its body runs.
    unsafe fn copied_functions(&self) -> Result<Copies, PassError> {
        let mut copies = Copies { slots: HashMap::new(), uses: HashMap::new(), own: HashSet::new() };
        if self.input.program_symbols.is_empty() {
            return Ok(copies);
        }
        for f in functions(self.m) {
            let n = name(f);
            if LLVMIsDeclaration(f) != 0 || n.starts_with("llvm.") || self.input.program_symbols.contains(&n) {
                continue;
            }
            if n.starts_with(DEBUG_PREFIX) || self.is_debug_only(&n) {
                copies.own.insert(f);
                continue;
            }
            copies.own.insert(f);
            let mut used = Vec::new();
            for bb in blocks(f) {
                for i in instructions(bb) {
                    for k in 0..LLVMGetNumOperands(i) as u32 {
                        let v = LLVMGetOperand(i, k);
                        if v.is_null() || LLVMValueIsBasicBlock(v) != 0 {
                            continue;
                        }
                        let mut globals = Vec::new();
                        self.program_objects_in(v, &mut globals);
                        if globals.is_empty() {
                            continue;
                        }
                        if !LLVMIsAPHINode(i).is_null() {
                            return Err(PassError::Region(format!(
                                "{}: error: `{n}` (copied into the debug module: the main binary has no `{n}`) uses \
                                 the program's `{}` in a form rdb-clang cannot redirect\n  = help: call a function \
                                 the program keeps, or read `{}` in the region itself",
                                self.input.file.display(),
                                name(globals[0]),
                                name(globals[0])
                            )));
                        }
                        let mut map = HashMap::new();
                        for g in globals {
                            let slot = *copies.slots.entry(g).or_insert_with(|| {
                                let ty = LLVMTypeOf(g);
                                let slot = LLVMAddGlobal(self.m, ty, cstr(&format!("__rdb_prog.{}", name(g))).as_ptr());
                                LLVMSetInitializer(slot, LLVMConstNull(ty));
                                LLVMSetLinkage(slot, LLVMLinkage::LLVMInternalLinkage);
                                slot
                            });
                            LLVMPositionBuilderBefore(self.b, i);
                            map.insert(g, LLVMBuildLoad2(self.b, LLVMTypeOf(g), slot, c"".as_ptr()));
                            if !used.contains(&g) {
                                used.push(g);
                            }
                        }
                        let new = match map.get(&v) {
                            Some(&loaded) => Some(loaded),
                            None => self.materialize(v, i, &map, 0)?,
                        };
                        if let Some(new) = new {
                            LLVMSetOperand(i, k, new);
                        }
                    }
                }
            }
            copies.uses.insert(f, used);
        }
        Ok(copies)
    }

    /// Event callbacks (`RDB_ON_*`: kept through `llvm.used`) run without a region to fill
    /// the slots: one that reaches a copy using them is refused, naming both.
    unsafe fn refuse_slots_outside_regions(&self, copies: &Copies) -> Result<(), PassError> {
        let used = LLVMGetNamedGlobal(self.m, c"llvm.used".as_ptr());
        if used.is_null() || copies.slots.is_empty() {
            return Ok(());
        }
        let list = LLVMGetInitializer(used);
        if list.is_null() {
            return Ok(());
        }
        for k in 0..LLVMGetNumOperands(list) as u32 {
            let mut root = LLVMGetOperand(list, k);
            while !root.is_null() && LLVMIsAFunction(root).is_null() && !LLVMIsAConstantExpr(root).is_null() {
                root = LLVMGetOperand(root, 0);
            }
            if root.is_null() || LLVMIsAFunction(root).is_null() {
                continue;
            }
            if let Some(&g) = copies.reached_from_functions(vec![root]).first() {
                return Err(PassError::Region(format!(
                    "{}: error: the event callback `{}` calls a copy of a program function the main binary lacks \
                     (inlined everywhere) that uses the program's `{}`\n  = help: copies reach program objects only \
                     when called from a debug region; in a callback, read `{}` directly or call a function the \
                     program keeps",
                    self.input.file.display(),
                    name(root),
                    name(g),
                    name(g)
                )));
            }
        }
        Ok(())
    }

    /// The program objects (globals and functions the main binary has) `v` refers to,
    /// directly or inside constant expressions.
    unsafe fn program_objects_in(&self, v: LLVMValueRef, out: &mut Vec<LLVMValueRef>) {
        if !LLVMIsAGlobalValue(v).is_null() {
            if self.classify_global(v) == Use::Argument && !out.contains(&v) {
                out.push(v);
            }
        } else if !LLVMIsAConstantExpr(v).is_null() {
            for k in 0..LLVMGetNumOperands(v) as u32 {
                self.program_objects_in(LLVMGetOperand(v, k), out);
            }
        }
    }

    /// Drops everything the debug functions and debug-only items do not need.
    unsafe fn sweep(&self) -> Result<(), PassError> {
        let fns = functions(self.m);
        let gvs = globals(self.m);
        let mut keep: HashSet<LLVMValueRef> = HashSet::new();
        let mut stack: Vec<LLVMValueRef> = Vec::new();
        let mut why: HashMap<LLVMValueRef, LLVMValueRef> = HashMap::new(); // kept value -> root that needs it
        for &v in fns.iter().chain(gvs.iter()) {
            let n = name(v);
            let generated = n.starts_with("__rdb_func_") || n.starts_with("__rdb_entry_");
            if generated || (self.is_debug_only(&n) && LLVMIsDeclaration(v) == 0) {
                keep.insert(v);
                stack.push(v);
                why.insert(v, v);
            }
        }
        while let Some(v) = stack.pop() {
            // The function or global whose body/initializer refers to `o`.
            let owner = if LLVMIsAGlobalValue(v).is_null() { why[&v] } else { v };
            let mut operands = Vec::new();
            if !LLVMIsAFunction(v).is_null() {
                for bb in blocks(v) {
                    for i in instructions(bb) {
                        for k in 0..LLVMGetNumOperands(i) as u32 {
                            operands.push(LLVMGetOperand(i, k));
                        }
                    }
                }
            } else if !LLVMIsAGlobalVariable(v).is_null() {
                let init = LLVMGetInitializer(v);
                if !init.is_null() {
                    operands.push(init);
                }
            } else if !LLVMIsAConstant(v).is_null() {
                for k in 0..LLVMGetNumOperands(v) as u32 {
                    operands.push(LLVMGetOperand(v, k));
                }
            }
            for o in operands {
                if o.is_null() || LLVMValueIsBasicBlock(o) != 0 || keep.contains(&o) {
                    continue;
                }
                if !LLVMIsAGlobalValue(o).is_null() {
                    let on = name(owner);
                    if !(on.starts_with("__rdb_func_") || on.starts_with("__rdb_entry_"))
                        && self.classify_global(o) == Use::Argument
                    {
                        let what = if self.is_debug_only(&on) {
                            format!("debug-only `{on}`")
                        } else {
                            format!("`{on}` (copied into the debug module: the main binary has no `{on}`)")
                        };
                        return Err(PassError::Region(format!(
                            "{}: error: {what} uses the program's `{}` directly\n  = help: debug-only functions and globals cannot refer to program objects; pass `{}` (or its address) from a debug region as a parameter",
                            self.input.file.display(),
                            name(o),
                            name(o)
                        )));
                    }
                    keep.insert(o);
                    why.insert(o, owner);
                    stack.push(o);
                } else if !LLVMIsAConstant(o).is_null() && LLVMGetNumOperands(o) > 0 {
                    keep.insert(o);
                    why.insert(o, owner);
                    stack.push(o);
                }
            }
        }
        let doomed_f: Vec<_> = fns.iter().copied().filter(|f| !keep.contains(f)).collect();
        let doomed_g: Vec<_> = gvs.iter().copied().filter(|g| !keep.contains(g)).collect();
        // Cut every reference first, then delete: the doomed items refer to
        // each other in arbitrary cycles.
        for &f in &doomed_f {
            let bbs = blocks(f);
            for &bb in &bbs {
                for i in instructions(bb) {
                    if !LLVMGetFirstUse(i).is_null() {
                        LLVMReplaceAllUsesWith(i, LLVMGetUndef(LLVMTypeOf(i)));
                    }
                }
            }
        }
        for &v in doomed_f.iter().chain(doomed_g.iter()) {
            LLVMReplaceAllUsesWith(v, LLVMGetUndef(LLVMTypeOf(v)));
        }
        for &g in &doomed_g {
            LLVMDeleteGlobal(g);
        }
        for &f in &doomed_f {
            // Basic blocks of a doomed function may still be used by
            // branches of the same function; deleting the function drops
            // them together.
            LLVMDeleteFunction(f);
        }
        Ok(())
    }
}

/// The instructions of a region: after the begin call in the start block,
/// whole middle blocks, before the end call.
unsafe fn region_instructions(
    region: &[LLVMBasicBlockRef],
    bcall: LLVMValueRef,
    ecall: LLVMValueRef,
) -> Vec<LLVMValueRef> {
    let mut out = Vec::new();
    for (n, &bb) in region.iter().enumerate() {
        let mut on = n != 0;
        for i in instructions(bb) {
            if i == bcall {
                on = true;
                continue;
            }
            if i == ecall {
                break;
            }
            if on {
                out.push(i);
            }
        }
    }
    out
}

/// The name of the alloca an `llvm.dbg.declare` call describes.
/// Whether every use of `v` (through casts and address arithmetic) is an argument of
/// `rdb_watch_at`: the code needs its address only.
unsafe fn only_watched(v: LLVMValueRef) -> bool {
    uses(v).into_iter().all(|u| {
        if !LLVMIsACastInst(u).is_null() || !LLVMIsAGetElementPtrInst(u).is_null() {
            only_watched(u)
        } else if !LLVMIsACallInst(u).is_null() {
            callee_name(u).as_deref() == Some("rdb_watch_at")
                && LLVMGetOperand(u, LLVMGetNumOperands(u) as u32 - 1) != v
        } else {
            false
        }
    })
}

unsafe fn declare_target(call: LLVMValueRef) -> Option<String> {
    let md = LLVMGetOperand(call, 0);
    if md.is_null() {
        return None;
    }
    // The first operand is `metadata T* %name`, a MetadataAsValue the C API
    // cannot unwrap: read the name from its printed form.
    let s = LLVMPrintValueToString(md);
    let text = CStr::from_ptr(s).to_string_lossy().into_owned();
    LLVMDisposeMessage(s);
    let target = text.rsplit(' ').next()?.trim();
    target.strip_prefix('%').map(|t| t.trim_matches('"').to_string())
}

/// The source name of a local whose IR name may carry a uniquing suffix.
fn source_name(ir: &str, identifiers: &BTreeSet<String>) -> String {
    let mut candidate = ir;
    loop {
        if identifiers.contains(candidate) {
            return candidate.to_string();
        }
        match candidate.strip_suffix(|c: char| c.is_ascii_digit()) {
            Some(shorter) if !shorter.is_empty() => candidate = shorter,
            _ => return ir.to_string(),
        }
    }
}

/// The debug location of the first instruction executed after `ecall`
/// (skipping unconditional branches and debug intrinsics), when only the
/// region's path reaches it: a block other branches enter too (the end of an
/// `if`, which also runs when the branch is not taken; a `while` loop's
/// condition, also tested before the first iteration) is no place of the
/// region's, and `None` says so.
unsafe fn continues_at(ecall: LLVMValueRef) -> Option<(u32, u32)> {
    let mut i = LLVMGetNextInstruction(ecall);
    for _ in 0..64 {
        if i.is_null() {
            return None;
        }
        let unconditional_br = !LLVMIsABranchInst(i).is_null() && LLVMIsConditional(i) == 0;
        if unconditional_br {
            let target = LLVMGetSuccessor(i, 0);
            let mut branches = 0;
            let mut u = LLVMGetFirstUse(LLVMBasicBlockAsValue(target));
            while !u.is_null() {
                branches += 1;
                u = LLVMGetNextUse(u);
            }
            if branches > 1 {
                return None;
            }
            i = LLVMGetFirstInstruction(target);
            continue;
        }
        let debug_intrinsic = callee_name(i).is_some_and(|n| n.starts_with("llvm.dbg."));
        let (line, column) = source_position(i);
        if !debug_intrinsic && line != 0 {
            return Some((line, column));
        }
        i = LLVMGetNextInstruction(i);
    }
    None
}

/// Moves an instruction to the end of `block`, keeping its name (inserting
/// through a builder would rename it).
unsafe fn move_to_end(b: LLVMBuilderRef, i: LLVMValueRef, block: LLVMBasicBlockRef) {
    let n = cstr(&name(i));
    LLVMInstructionRemoveFromParent(i);
    LLVMPositionBuilderAtEnd(b, block);
    LLVMInsertIntoBuilderWithName(b, i, n.as_ptr());
}

/// An instruction's position in the compiled file: for code inlined from
/// elsewhere (always_inline functions of a header), the call site's.
unsafe fn source_position(i: LLVMValueRef) -> (u32, u32) {
    let mut loc = LLVMInstructionGetDebugLoc(i);
    if loc.is_null() {
        return (0, 0);
    }
    loop {
        let outer = LLVMDILocationGetInlinedAt(loc);
        if outer.is_null() {
            return (LLVMDILocationGetLine(loc), LLVMDILocationGetColumn(loc));
        }
        loc = outer;
    }
}
