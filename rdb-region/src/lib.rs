//! Support library linked into every Rust debug module built by `cargo rdb build`.
//!
//! `cargo rdb build` rewrites each debug region of the user's source
//!
//! ```ignore
//! rdb_begin!();
//! println!("pc={pc} top={:?}", self.stack.last());
//! rdb_end!();
//! ```
//!
//! into a call of [`region`] in a second copy of the crate (the *debug
//! module*, built as a `cdylib` with `-C link-dead-code`):
//!
//! ```ignore
//! ::rdb_region::region::<7, _, _>((&pc, &self), move |(pc, __rdb_self)| {
//!     println!("pc={pc} top={:?}", (*__rdb_self).stack.last());
//! });
//! ```
//!
//! The tuple holds a shared reference to every program variable the region
//! uses: locals of the enclosing function (including `self`) and program
//! statics. rustc infers the tuple's type `A` from those references, so the
//! debug code sees the program's real types, methods and `Debug` impls. The
//! enclosing function is never called in the debug module; what matters is
//! that compiling it instantiates `region::<ID, A, F>`, which emits one entry
//! of the region table and instantiates the region's trampoline.
//!
//! # Calling convention
//!
//! - The debug module has an allocated, writable ELF section named
//!   `rdb_regions` ([`rdb_descriptors::REGION_TABLE_SECTION`]): a sequence of
//!   16-byte entries, each two little-endian `u64`: the region id, then the
//!   address of the region's debug function. The addresses are absolute
//!   addresses after the module is loaded (the dynamic linker relocates them);
//!   a reader of the file must add the module's load bias to the link-time
//!   address it finds through the module's `R_X86_64_RELATIVE` relocations.
//!   The simplest use is to `dlopen` the module, take the load bias from
//!   `dl_iterate_phdr`, and read the table in memory at
//!   `load_bias + section_address`.
//! - The debug function of a region is
//!   `extern "C" fn(argv: *const *const c_void)`. `argv[i]` is the address of
//!   argument `i` (argument descriptor `position == i`): the address of the
//!   variable itself, laid out exactly as in the main binary (for `self` in a
//!   `&mut self` method that is the address of the `&mut Vm` pointer, not of
//!   the `Vm`). A static is passed by its address in the *main* binary.
//! - The function reads through those pointers only. It may panic: the panic
//!   is caught at the trampoline boundary, reported on the debug module's
//!   stderr, and the function returns normally.
//!
//! [`rdb_descriptors::REGION_TABLE_SECTION`]: https://docs.rs/rdb-descriptors

use core::ffi::c_void;

/// The signature of every region's debug function.
pub type DebugFn = unsafe extern "C" fn(argv: *const *const c_void);

/// A tuple of shared references that can be rebuilt from an `argv` array of
/// pointers. Implemented for tuples of up to 24 references.
pub trait FromArgv: Sized {
    /// Number of pointers read from `argv`.
    const LEN: usize;
    /// Rebuilds the tuple from `argv`.
    ///
    /// # Safety
    /// `argv` must point to `LEN` pointers, each to a live, properly aligned
    /// value of the matching element type, valid for the returned lifetime.
    unsafe fn from_argv(argv: *const *const c_void) -> Self;
}

impl FromArgv for () {
    const LEN: usize = 0;
    unsafe fn from_argv(_argv: *const *const c_void) -> Self {}
}

macro_rules! tuple_from_argv {
    ($len:expr; $($t:ident $i:tt),+) => {
        impl<'a, $($t),+> FromArgv for ($(&'a $t,)+) {
            const LEN: usize = $len;
            unsafe fn from_argv(argv: *const *const c_void) -> Self {
                // SAFETY: the caller guarantees `argv[i]` points to a live `T_i`.
                unsafe { ($(&*(*argv.add($i) as *const $t),)+) }
            }
        }
    };
}

tuple_from_argv!(1; T0 0);
tuple_from_argv!(2; T0 0, T1 1);
tuple_from_argv!(3; T0 0, T1 1, T2 2);
tuple_from_argv!(4; T0 0, T1 1, T2 2, T3 3);
tuple_from_argv!(5; T0 0, T1 1, T2 2, T3 3, T4 4);
tuple_from_argv!(6; T0 0, T1 1, T2 2, T3 3, T4 4, T5 5);
tuple_from_argv!(7; T0 0, T1 1, T2 2, T3 3, T4 4, T5 5, T6 6);
tuple_from_argv!(8; T0 0, T1 1, T2 2, T3 3, T4 4, T5 5, T6 6, T7 7);
tuple_from_argv!(9; T0 0, T1 1, T2 2, T3 3, T4 4, T5 5, T6 6, T7 7, T8 8);
tuple_from_argv!(10; T0 0, T1 1, T2 2, T3 3, T4 4, T5 5, T6 6, T7 7, T8 8, T9 9);
tuple_from_argv!(11; T0 0, T1 1, T2 2, T3 3, T4 4, T5 5, T6 6, T7 7, T8 8, T9 9, T10 10);
tuple_from_argv!(12; T0 0, T1 1, T2 2, T3 3, T4 4, T5 5, T6 6, T7 7, T8 8, T9 9, T10 10, T11 11);
tuple_from_argv!(13; T0 0, T1 1, T2 2, T3 3, T4 4, T5 5, T6 6, T7 7, T8 8, T9 9, T10 10, T11 11, T12 12);
tuple_from_argv!(14; T0 0, T1 1, T2 2, T3 3, T4 4, T5 5, T6 6, T7 7, T8 8, T9 9, T10 10, T11 11, T12 12, T13 13);
tuple_from_argv!(15; T0 0, T1 1, T2 2, T3 3, T4 4, T5 5, T6 6, T7 7, T8 8, T9 9, T10 10, T11 11, T12 12, T13 13, T14 14);
tuple_from_argv!(16; T0 0, T1 1, T2 2, T3 3, T4 4, T5 5, T6 6, T7 7, T8 8, T9 9, T10 10, T11 11, T12 12, T13 13, T14 14, T15 15);
tuple_from_argv!(17; T0 0, T1 1, T2 2, T3 3, T4 4, T5 5, T6 6, T7 7, T8 8, T9 9, T10 10, T11 11, T12 12, T13 13, T14 14, T15 15, T16 16);
tuple_from_argv!(18; T0 0, T1 1, T2 2, T3 3, T4 4, T5 5, T6 6, T7 7, T8 8, T9 9, T10 10, T11 11, T12 12, T13 13, T14 14, T15 15, T16 16, T17 17);
tuple_from_argv!(19; T0 0, T1 1, T2 2, T3 3, T4 4, T5 5, T6 6, T7 7, T8 8, T9 9, T10 10, T11 11, T12 12, T13 13, T14 14, T15 15, T16 16, T17 17, T18 18);
tuple_from_argv!(20; T0 0, T1 1, T2 2, T3 3, T4 4, T5 5, T6 6, T7 7, T8 8, T9 9, T10 10, T11 11, T12 12, T13 13, T14 14, T15 15, T16 16, T17 17, T18 18, T19 19);
tuple_from_argv!(21; T0 0, T1 1, T2 2, T3 3, T4 4, T5 5, T6 6, T7 7, T8 8, T9 9, T10 10, T11 11, T12 12, T13 13, T14 14, T15 15, T16 16, T17 17, T18 18, T19 19, T20 20);
tuple_from_argv!(22; T0 0, T1 1, T2 2, T3 3, T4 4, T5 5, T6 6, T7 7, T8 8, T9 9, T10 10, T11 11, T12 12, T13 13, T14 14, T15 15, T16 16, T17 17, T18 18, T19 19, T20 20, T21 21);
tuple_from_argv!(23; T0 0, T1 1, T2 2, T3 3, T4 4, T5 5, T6 6, T7 7, T8 8, T9 9, T10 10, T11 11, T12 12, T13 13, T14 14, T15 15, T16 16, T17 17, T18 18, T19 19, T20 20, T21 21, T22 22);
tuple_from_argv!(24; T0 0, T1 1, T2 2, T3 3, T4 4, T5 5, T6 6, T7 7, T8 8, T9 9, T10 10, T11 11, T12 12, T13 13, T14 14, T15 15, T16 16, T17 17, T18 18, T19 19, T20 20, T21 21, T22 22, T23 23);

/// Declares debug region `ID`: instantiating this function emits the
/// region's entry in the `rdb_regions` table, pointing at
/// [`trampoline::<A, F>`](trampoline). Calling it does nothing: the region's
/// code runs only when a replayer calls the trampoline.
///
/// `F` must capture nothing (the generated closure is `move` and receives
/// every program variable through `A`); this is checked at compile time.
#[inline(never)]
pub fn region<const ID: u64, A: FromArgv, F: Fn(A)>(args: A, body: F) {
    const { assert!(core::mem::size_of::<F>() == 0, "an rdb region's closure captured a variable; cargo rdb should have passed it as an argument (please report this)") };
    // SAFETY: the asm only emits data into a separate section; it executes
    // no instructions, touches no registers, memory or flags.
    unsafe {
        core::arch::asm!(
            ".pushsection rdb_regions,\"awR\",@progbits",
            ".balign 8",
            ".quad {id}",
            ".quad {tramp}",
            ".popsection",
            id = const ID,
            tramp = sym trampoline::<A, F>,
            options(nomem, nostack, preserves_flags),
        );
    }
    let _ = (args, body);
}

/// The debug function of one region: rebuilds the argument tuple from
/// `argv` and runs the region's body, catching panics so that a bug in debug
/// code never unwinds into the caller.
///
/// # Safety
/// `argv` must satisfy [`FromArgv::from_argv`] for `A`.
pub unsafe extern "C" fn trampoline<A: FromArgv, F: Fn(A)>(argv: *const *const c_void) {
    // SAFETY: `F` is zero-sized (asserted in `region`) and is a closure type
    // with no captures, so any bit pattern (there are none) is a valid value.
    let body: F = unsafe { core::mem::zeroed() };
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: forwarded from this function's contract.
        let args = unsafe { A::from_argv(argv) };
        body(args)
    }));
    if result.is_err() {
        eprintln!("rdb: debug code panicked (see the message above); continuing the replay");
    }
}
