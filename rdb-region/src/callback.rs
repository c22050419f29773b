//! Event callbacks: debug-only functions rdb calls when something happens in the replayed
//! program (a system call, a call of a function, a write to watched memory).
//!
//! `cargo rdb build` finds each `#[rdb_macros::on_syscall(...)]` (and friends) function of the
//! user's source and, in the debug copy of the crate, writes beside it a never-called function
//! whose body names the callback through one of the registration functions below, e.g.
//!
//! ```ignore
//! #[allow(dead_code, unused)] fn who_writes(call: &rdb::Syscall) { ... }
//! #[allow(dead_code, non_snake_case)] fn __rdb_callback_4() { ::rdb_region::on_syscall::<4, _, _>(who_writes); }
//! ```
//!
//! As with regions, compiling that function (with `-C link-dead-code`) instantiates the
//! registration, which emits one entry of the *callback table*, the allocated section
//! `rdb_callbacks` (pairs of little-endian `u64`: callback id, debug function address; the same
//! layout as `rdb_regions`), pointing at a trampoline typed for the callback. The callback's
//! signature is checked by rustc at that point: a function that cannot be a callback of that
//! kind does not compile, and the error names what it should look like.
//!
//! Trampolines have the debug-function convention of regions (`extern "C" fn(argv)`); what
//! `argv` holds depends on the kind:
//! - syscall callbacks: `argv[0]` points to an [`rdb::Syscall`] (built by the replayer);
//! - callbacks of a program function ([`on_call`]): `argv[i]` points to the bytes of the
//!   function's argument `i`, where the DWARF says it is once the prologue ran (as for a
//!   region's variables); of its return ([`on_return`]): `argv[0]` points to the returned value;
//! - callbacks of a symbol (a C library's `malloc`, [`on_symbol_call`], [`on_symbol_return`]):
//!   `argv[i]` points to the 8 bytes of the System V argument register `i` (`rdi`, `rsi`,
//!   `rdx`, `rcx`, `r8`, `r9`) at the function's first instruction, or of `rax` at its return.
//! - watched values ([`watched`], called by `rdb find --watch` only): `argv[0]` points to the
//!   static; the value's `Debug` text comes back as a passing check (`rdb::check`).
//!
//! A callback of a function takes either no arguments, or the function's arguments in order,
//! each as the same type (when it is `Copy`) or by shared reference (`&T` for an argument of
//! type `T` or `&mut T`): `#[on_call(crate::vm::Vm::push)] fn pushed(vm: &Vm, v: i64)` for
//! `fn push(&mut self, v: i64)`.

use core::ffi::c_void;

use rdb::{Access, Syscall};

/// Emits the callback table entry `(ID, trampoline)`.
macro_rules! table_entry {
    ($id:expr, $tramp:expr) => {
        // SAFETY: the asm only emits data into a separate section; it executes no
        // instructions, touches no registers, memory or flags.
        unsafe {
            core::arch::asm!(
                ".pushsection rdb_callbacks,\"awR\",@progbits",
                ".balign 8",
                ".quad {id}",
                ".quad {tramp}",
                ".popsection",
                id = const $id,
                tramp = sym $tramp,
                options(nomem, nostack, preserves_flags),
            );
        }
    };
}

/// A function that can be a syscall callback: `fn(&rdb::Syscall)` or `fn()`. `M` tells the two
/// forms apart (it is inferred).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a syscall callback",
    label = "this function's signature does not fit `#[rdb_macros::on_syscall]`",
    note = "a syscall callback is `fn(call: &rdb::Syscall)`, or `fn()` when it needs no details of the call"
)]
pub trait SyscallCallback<M> {
    /// Calls the callback for `call`.
    fn call(&self, call: &Syscall);
}

impl<F: Fn()> SyscallCallback<()> for F {
    fn call(&self, _call: &Syscall) {
        self()
    }
}

impl<F: Fn(&Syscall)> SyscallCallback<(Syscall,)> for F {
    fn call(&self, call: &Syscall) {
        self(call)
    }
}

/// Declares syscall callback `ID`: instantiating this function emits the callback's entry in
/// the `rdb_callbacks` table, pointing at [`syscall_trampoline::<M, F>`](syscall_trampoline).
/// Calling it does nothing.
///
/// `F` is the callback function itself (a function item, which is zero-sized).
#[inline(never)]
pub fn on_syscall<const ID: u64, M, F: SyscallCallback<M>>(callback: F) {
    const { assert!(core::mem::size_of::<F>() == 0, "a callback must be a function, not a closure or pointer") };
    table_entry!(ID, syscall_trampoline::<M, F>);
    let _ = callback;
}

/// The debug function of a syscall callback: `argv[0]` points to the call's [`Syscall`].
///
/// # Safety
/// `argv[0]` must point to a valid `Syscall` whose name and data pointers are valid for the call.
pub unsafe extern "C" fn syscall_trampoline<M, F: SyscallCallback<M>>(argv: *const *const c_void) {
    // SAFETY: `F` is a zero-sized function item (asserted in `on_syscall`): it has no bytes.
    let callback: F = unsafe { core::mem::zeroed() };
    crate::run_caught(|| {
        // SAFETY: forwarded from this function's contract.
        let call = unsafe { &*(*argv as *const Syscall) };
        callback.call(call)
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    static SEEN: AtomicU64 = AtomicU64::new(0);

    fn counts() {
        SEEN.fetch_add(1, Ordering::Relaxed);
    }

    fn adds_fd(call: &Syscall) {
        SEEN.fetch_add(100 * call.fd().unwrap_or(0) as u64, Ordering::Relaxed);
    }

    fn trampoline_of<M, F: SyscallCallback<M>>(_f: F) -> unsafe extern "C" fn(*const *const c_void) {
        syscall_trampoline::<M, F>
    }

    struct Counter {
        n: u64,
    }

    impl Counter {
        fn add(&mut self, by: u64) -> Option<u64> {
            self.n += by;
            Some(self.n)
        }
    }

    static CALLS: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

    fn added(counter: &Counter, by: u64) {
        CALLS.lock().unwrap().push(format!("add {by} to {}", counter.n));
    }

    fn returned(value: &Option<u64>) {
        CALLS.lock().unwrap().push(format!("returned {value:?}"));
    }

    fn allocated(size: usize, flag: bool) {
        CALLS.lock().unwrap().push(format!("malloc {size} {flag}"));
    }

    fn call_trampoline_of<A, M, F: Signature<A>, G: CallCallback<A, M>>(
        _f: F,
        _g: G,
    ) -> unsafe extern "C" fn(*const *const c_void) {
        call_trampoline::<A, M, G>
    }

    fn return_trampoline_of<A, M, F: Signature<A>, G: CallCallback<(F::Output,), M>>(
        _f: F,
        _g: G,
    ) -> unsafe extern "C" fn(*const *const c_void) {
        call_trampoline::<(F::Output,), M, G>
    }

    fn symbol_trampoline_of<M, G: SymbolCallback<M>>(_g: G) -> unsafe extern "C" fn(*const *const c_void) {
        symbol_trampoline::<M, G>
    }

    #[test]
    fn call_callbacks_take_the_arguments_as_the_function_has_them() {
        let mut counter = Counter { n: 5 };
        let receiver: &mut Counter = &mut counter;
        let receiver_ptr = &receiver as *const &mut Counter as *const c_void;
        let by = 3u64;
        let argv = [receiver_ptr, &by as *const u64 as *const c_void];
        let value = Some(8u64);
        let ret = [&value as *const Option<u64> as *const c_void];
        let (size, flag) = (48u64, 1u64);
        let registers = [&size as *const u64 as *const c_void, &flag as *const u64 as *const c_void];
        // SAFETY: each argv holds pointers to live values of the types the callbacks take.
        unsafe {
            call_trampoline_of(Counter::add, added)(argv.as_ptr());
            return_trampoline_of(Counter::add, returned)(ret.as_ptr());
            symbol_trampoline_of(allocated)(registers.as_ptr());
        }
        assert_eq!(*CALLS.lock().unwrap(), ["add 3 to 5", "returned Some(8)", "malloc 48 true"]);
    }

    #[test]
    fn both_forms_of_syscall_callback_run_from_argv() {
        // A `Syscall` as the replayer lays it out: 112 bytes, fd at offset 72.
        let mut raw = [0u64; 14];
        raw[0] = 1;
        raw[9] = 2; // fd 2 (low half), process 0
        let argv = [raw.as_ptr() as *const c_void];
        // SAFETY: argv[0] points to a Syscall-sized, aligned block with null name and data.
        unsafe {
            trampoline_of(counts)(argv.as_ptr());
            trampoline_of(adds_fd)(argv.as_ptr());
        }
        assert_eq!(SEEN.load(Ordering::Relaxed), 201);
    }
}

/// How a callback parameter receives one argument of the function it watches, of type `A`:
/// the same type when it is `Copy` (a bitwise copy), or a shared reference to it (`&T` for an
/// argument of type `T`, or of type `&mut T`).
#[diagnostic::on_unimplemented(
    message = "a callback parameter of type `{Self}` cannot receive the function's argument of type `{A}`",
    note = "take each argument as the same type (when it is `Copy`) or by shared reference (`&T` for `T` or `&mut T`)"
)]
pub trait ArgOf<A> {
    /// The parameter's value for the argument at `p`.
    ///
    /// # Safety
    /// `p` must point to a valid `A` that outlives the call.
    unsafe fn from_ptr(p: *const c_void) -> Self;
}

impl<T: Copy> ArgOf<T> for T {
    unsafe fn from_ptr(p: *const c_void) -> Self {
        // SAFETY: forwarded from the contract; host storage and program memory may be unaligned.
        unsafe { (p as *const T).read_unaligned() }
    }
}

impl<T> ArgOf<T> for &T {
    unsafe fn from_ptr(p: *const c_void) -> Self {
        // SAFETY: forwarded from the contract.
        unsafe { &*(p as *const T) }
    }
}

impl<T> ArgOf<&mut T> for &T {
    unsafe fn from_ptr(p: *const c_void) -> Self {
        // SAFETY: forwarded from the contract: `p` points to the `&mut T`, a valid pointer.
        unsafe { &*((p as *const *const T).read_unaligned()) }
    }
}

/// The argument types `A` (a tuple) and return type of a function.
pub trait Signature<A> {
    /// What the function returns.
    type Output;
}

/// A function that can be a callback of a function taking `A` (a tuple of its argument
/// types): `fn()`, or one parameter per argument (see [`ArgOf`]). `M` tells the forms apart.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a callback of a function taking `{A}`",
    label = "this callback's parameters do not match the function's arguments",
    note = "a callback takes no arguments, or the function's arguments in order, each as the same type (when it is `Copy`) or by shared reference (`&T` for `T` or `&mut T`)"
)]
pub trait CallCallback<A, M> {
    /// Calls the callback with the arguments `argv` points to.
    ///
    /// # Safety
    /// `argv` must hold one pointer per element of `A`, each to a valid value of that type.
    unsafe fn call(&self, argv: *const *const c_void);
}

impl<G: Fn(), A> CallCallback<A, ()> for G {
    unsafe fn call(&self, _argv: *const *const c_void) {
        self()
    }
}

macro_rules! arity {
    ($($a:ident $c:ident $i:tt),+) => {
        impl<F: Fn($($a),+) -> R, R, $($a),+> Signature<($($a,)+)> for F {
            type Output = R;
        }
        impl<G: Fn($($c),+), $($a, $c: ArgOf<$a>),+> CallCallback<($($a,)+), ($($c,)+)> for G {
            unsafe fn call(&self, argv: *const *const c_void) {
                // SAFETY: forwarded from the contract.
                unsafe { self($($c::from_ptr(*argv.add($i))),+) }
            }
        }
    };
}

impl<F: Fn() -> R, R> Signature<()> for F {
    type Output = R;
}
arity!(A0 C0 0);
arity!(A0 C0 0, A1 C1 1);
arity!(A0 C0 0, A1 C1 1, A2 C2 2);
arity!(A0 C0 0, A1 C1 1, A2 C2 2, A3 C3 3);
arity!(A0 C0 0, A1 C1 1, A2 C2 2, A3 C3 3, A4 C4 4);
arity!(A0 C0 0, A1 C1 1, A2 C2 2, A3 C3 3, A4 C4 4, A5 C5 5);
arity!(A0 C0 0, A1 C1 1, A2 C2 2, A3 C3 3, A4 C4 4, A5 C5 5, A6 C6 6);
arity!(A0 C0 0, A1 C1 1, A2 C2 2, A3 C3 3, A4 C4 4, A5 C5 5, A6 C6 6, A7 C7 7);

/// A value a register holds whole (integers, `bool`, raw pointers): what a callback of a
/// symbol (no Rust declaration rdb could check it against) may take.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be read from a register",
    note = "a callback of a symbol (`on_call(\"malloc\")`) takes integers, `bool` or raw pointers, one per System V argument register"
)]
pub trait RegisterArg: Copy {}

macro_rules! register_args {
    ($($t:ty),*) => { $(impl RegisterArg for $t {})* };
}
register_args!(u8, u16, u32, u64, usize, i8, i16, i32, i64, isize, bool);
impl<T> RegisterArg for *const T {}
impl<T> RegisterArg for *mut T {}

/// A function that can be a callback of a symbol: `fn()` or up to six [`RegisterArg`]s.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a callback of a symbol",
    note = "a callback of a symbol (`on_call(\"malloc\")`) takes no arguments, or integers, `bool` or raw pointers, one per System V argument register"
)]
pub trait SymbolCallback<M> {
    /// Calls the callback with the register values `argv` points to.
    ///
    /// # Safety
    /// `argv` must hold one pointer per parameter, each to 8 readable bytes.
    unsafe fn call(&self, argv: *const *const c_void);
}

impl<G: Fn()> SymbolCallback<()> for G {
    unsafe fn call(&self, _argv: *const *const c_void) {
        self()
    }
}

macro_rules! symbol_arity {
    ($($c:ident $i:tt),+) => {
        impl<G: Fn($($c),+), $($c: RegisterArg),+> SymbolCallback<($($c,)+)> for G {
            unsafe fn call(&self, argv: *const *const c_void) {
                // SAFETY: forwarded from the contract (a register's 8 little-endian bytes hold
                // any `RegisterArg` in their low bytes).
                unsafe { self($((*argv.add($i) as *const $c).read_unaligned()),+) }
            }
        }
    };
}
symbol_arity!(C0 0);
symbol_arity!(C0 0, C1 1);
symbol_arity!(C0 0, C1 1, C2 2);
symbol_arity!(C0 0, C1 1, C2 2, C3 3);
symbol_arity!(C0 0, C1 1, C2 2, C3 3, C4 4);
symbol_arity!(C0 0, C1 1, C2 2, C3 3, C4 4, C5 5);

/// Declares callback `ID` of a call of the program's function `function` (checked against the
/// callback's signature by [`CallCallback`]). Calling it does nothing.
#[inline(never)]
pub fn on_call<const ID: u64, A, M, F: Signature<A>, G: CallCallback<A, M>>(function: F, callback: G) {
    const { assert!(core::mem::size_of::<G>() == 0, "a callback must be a function, not a closure or pointer") };
    table_entry!(ID, call_trampoline::<A, M, G>);
    let _ = (function, callback);
}

/// Declares callback `ID` of the returns of the program's function `function`: the callback
/// takes nothing, or the returned value (see [`ArgOf`]). Calling it does nothing.
#[inline(never)]
pub fn on_return<const ID: u64, A, M, F: Signature<A>, G: CallCallback<(F::Output,), M>>(function: F, callback: G) {
    const { assert!(core::mem::size_of::<G>() == 0, "a callback must be a function, not a closure or pointer") };
    table_entry!(ID, call_trampoline::<(F::Output,), M, G>);
    let _ = (function, callback);
}

/// Declares callback `ID` of a call (or, the same way, of the return) of a symbol found at run
/// time. Calling it does nothing.
#[inline(never)]
pub fn on_symbol<const ID: u64, M, G: SymbolCallback<M>>(callback: G) {
    const { assert!(core::mem::size_of::<G>() == 0, "a callback must be a function, not a closure or pointer") };
    table_entry!(ID, symbol_trampoline::<M, G>);
    let _ = callback;
}

/// The debug function of a callback of a program function.
///
/// # Safety
/// As [`CallCallback::call`].
pub unsafe extern "C" fn call_trampoline<A, M, G: CallCallback<A, M>>(argv: *const *const c_void) {
    // SAFETY: `G` is a zero-sized function item (asserted where it is registered).
    let callback: G = unsafe { core::mem::zeroed() };
    // SAFETY: forwarded from this function's contract.
    crate::run_caught(|| unsafe { callback.call(argv) });
}

/// The debug function of a callback of a symbol.
///
/// # Safety
/// As [`SymbolCallback::call`].
pub unsafe extern "C" fn symbol_trampoline<M, G: SymbolCallback<M>>(argv: *const *const c_void) {
    // SAFETY: `G` is a zero-sized function item (asserted where it is registered).
    let callback: G = unsafe { core::mem::zeroed() };
    // SAFETY: forwarded from this function's contract.
    crate::run_caught(|| unsafe { callback.call(argv) });
}

/// A function that can be a memory callback of a variable of type `T`: `fn()`,
/// `fn(old: C, new: C)` or `fn(old: C, new: C, access: &rdb::Access)`, where `C` is `T` itself
/// when it is `Copy`, or any `Copy` type of the same size (`u64` for an `AtomicU64`).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a memory callback of a variable of type `{T}`",
    note = "a memory callback is `fn()`, `fn(old: V, new: V)` or `fn(old: V, new: V, access: &rdb::Access)`, with `V` a `Copy` type of the variable's size"
)]
pub trait AccessCallback<T, M> {
    /// Calls the callback: `argv[0]` the old bytes, `argv[1]` the new, `argv[2]` the access.
    ///
    /// # Safety
    /// `argv` must hold three pointers: two to `size_of::<T>()` readable bytes, one to an
    /// [`Access`].
    unsafe fn call(&self, argv: *const *const c_void);
    /// The size of the values it takes (`None`: it takes none).
    const VALUE_SIZE: Option<usize> = None;
}

impl<G: Fn(), T> AccessCallback<T, ()> for G {
    unsafe fn call(&self, _argv: *const *const c_void) {
        self()
    }
}

impl<G: Fn(C, C), T, C: Copy> AccessCallback<T, (C,)> for G {
    const VALUE_SIZE: Option<usize> = Some(core::mem::size_of::<C>());
    unsafe fn call(&self, argv: *const *const c_void) {
        const {
            assert!(
                core::mem::size_of::<C>() == core::mem::size_of::<T>(),
                "a memory callback's values must have the size of the watched variable"
            )
        };
        // SAFETY: forwarded from the contract; `C` has the variable's size (checked above).
        unsafe { self((*argv as *const C).read_unaligned(), (*argv.add(1) as *const C).read_unaligned()) }
    }
}

impl<G: Fn(C, C, &Access), T, C: Copy> AccessCallback<T, (C, Access)> for G {
    const VALUE_SIZE: Option<usize> = Some(core::mem::size_of::<C>());
    unsafe fn call(&self, argv: *const *const c_void) {
        const {
            assert!(
                core::mem::size_of::<C>() == core::mem::size_of::<T>(),
                "a memory callback's values must have the size of the watched variable"
            )
        };
        // SAFETY: forwarded from the contract.
        unsafe {
            self(
                (*argv as *const C).read_unaligned(),
                (*argv.add(1) as *const C).read_unaligned(),
                &*(*argv.add(2) as *const Access),
            )
        }
    }
}

/// Checks that memory callback `callback` takes values of `variable`'s size. Evaluated in a
/// `const` block where the callback is registered (its attribute's line), so that a wrong
/// size is reported there rather than in the trampoline's instantiation.
pub const fn access_fits<T, M, G: AccessCallback<T, M>>(_variable: *const T, _callback: &G) {
    if let Some(size) = G::VALUE_SIZE {
        assert!(
            size == core::mem::size_of::<T>(),
            "a memory callback's `old` and `new` values must have the size of the watched variable"
        );
    }
}

/// Declares memory callback `ID` of the static `variable` points to (`on_write`, `on_read`).
/// Calling it does nothing.
#[inline(never)]
pub fn on_access<const ID: u64, T, M, G: AccessCallback<T, M>>(variable: *const T, callback: G) {
    const { assert!(core::mem::size_of::<G>() == 0, "a callback must be a function, not a closure or pointer") };
    table_entry!(ID, access_trampoline::<T, M, G>);
    let _ = (variable, callback);
}

/// Declares watched value `ID` (`#[watched(STATIC)]`, for `rdb find --watch`): a function of a
/// reference to the static `variable` points to, whose value's `Debug` text is what the search
/// compares. Calling it does nothing.
#[inline(never)]
pub fn watched<const ID: u64, T, R: core::fmt::Debug, G: Fn(&T) -> R>(variable: *const T, callback: G) {
    const { assert!(core::mem::size_of::<G>() == 0, "a watched value must be a function, not a closure or pointer") };
    table_entry!(ID, watched_trampoline::<T, R, G>);
    let _ = (variable, callback);
}

/// The debug function of a watched value: `argv[0]` points to the static; the value is
/// reported as a passing check whose message is its `Debug` text.
///
/// # Safety
/// `argv[0]` must point to a valid `T`.
pub unsafe extern "C" fn watched_trampoline<T, R: core::fmt::Debug, G: Fn(&T) -> R>(argv: *const *const c_void) {
    // SAFETY: `G` is a zero-sized function item (asserted where it is registered).
    let callback: G = unsafe { core::mem::zeroed() };
    crate::run_caught(|| {
        // SAFETY: forwarded from this function's contract.
        let value = callback(unsafe { &*(*argv as *const T) });
        rdb::check(true, 0, 0, "watched", || format!("{value:?}"));
    });
}

/// The debug function of a memory callback.
///
/// # Safety
/// As [`AccessCallback::call`].
pub unsafe extern "C" fn access_trampoline<T, M, G: AccessCallback<T, M>>(argv: *const *const c_void) {
    // SAFETY: `G` is a zero-sized function item (asserted where it is registered).
    let callback: G = unsafe { core::mem::zeroed() };
    // SAFETY: forwarded from this function's contract.
    crate::run_caught(|| unsafe { callback.call(argv) });
}
