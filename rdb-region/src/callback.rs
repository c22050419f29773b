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
//! - syscall callbacks: `argv[0]` points to an [`rdb::Syscall`] (built by the replayer).

use core::ffi::c_void;

use rdb::Syscall;

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
    // SAFETY: the asm only emits data into a separate section; it executes no instructions,
    // touches no registers, memory or flags.
    unsafe {
        core::arch::asm!(
            ".pushsection rdb_callbacks,\"awR\",@progbits",
            ".balign 8",
            ".quad {id}",
            ".quad {tramp}",
            ".popsection",
            id = const ID,
            tramp = sym syscall_trampoline::<M, F>,
            options(nomem, nostack, preserves_flags),
        );
    }
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
