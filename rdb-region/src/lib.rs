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
//! ::rdb_region::region::<7, _, _>(::rdb_region::types_of!((&pc, &self)), move |(pc, __rdb_self)| {
//!     println!("pc={pc} top={:?}", (*__rdb_self).stack.last());
//! });
//! ```
//!
//! The tuple holds a shared reference to every program variable the region
//! uses: locals of the enclosing function (including `self`) and program
//! statics. It is never evaluated ([`types_of!`]): rustc infers the tuple's type `A` from those references, so the
//! debug code sees the program's real types, methods and `Debug` impls. The
//! enclosing function is never called in the debug module; what matters is
//! that compiling it instantiates `region::<ID, A, F>`, which emits one entry
//! of the region table and instantiates the region's trampoline. In generic
//! code (and closures or `async` bodies of generic functions) there is one
//! instantiation, so one entry, per instantiation of the enclosing function:
//! `F`, the closure's type, is named in the module's DWARF with the enclosing
//! function's generic arguments, which is how `cargo rdb build` matches each
//! entry with the code of the same instantiation in the main binary and gives
//! it an id of its own.
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

mod callback;
pub use callback::*;

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

/// `types_of!(expr)` is `None: Option<T>` where `T` is the type of `expr`,
/// which is never evaluated: the generated code gives a region the tuple of
/// references to its program variables this way, for their types only, so
/// the tuple borrows nothing the borrow checker could see conflict with the
/// program's own borrows (a region reading `self.total` while the program
/// holds `&mut self.counts`, as a `println!` there may). The references are
/// taken after a call that never returns, in code no path reaches.
#[macro_export]
macro_rules! types_of {
    ($args:expr) => {
        if true {
            ::core::option::Option::None
        } else {
            $crate::never_evaluated();
            #[allow(unreachable_code)]
            let __rdb_args = $args;
            ::core::option::Option::Some(__rdb_args)
        }
    };
}

/// Never returns; see [`types_of!`].
#[doc(hidden)]
pub fn never_evaluated() -> ! {
    unreachable!("a region's argument expression is never evaluated")
}

/// Declares debug region `ID`: instantiating this function emits the
/// region's entry in the `rdb_regions` table, pointing at
/// [`trampoline::<A, F>`](trampoline). Calling it does nothing: the region's
/// code runs only when a replayer calls the trampoline.
///
/// `F` must capture nothing (the generated closure is `move` and receives
/// every program variable through `A`); this is checked at compile time.
#[inline(never)]
pub fn region<const ID: u64, A: FromArgv, F: Fn(A)>(args: Option<A>, body: F) {
    const {
        assert!(core::mem::size_of::<F>() == 0, "an rdb region's closure captured a variable; cargo rdb should have passed it as an argument (please report this)")
    };
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

/// Slot the debug host fills in when it loads the module (see the `rdb-host`
/// crate docs): trampolines report a caught panic's message through it, so the
/// replay reports the panic with the region's id and source location.
#[no_mangle]
pub static mut RDB_HOST_PANIC_HOOK: Option<unsafe extern "C" fn(*const u8, usize)> = None;

/// The message and location of the panic being caught, set by the panic hook
/// [`trampoline`] installs (the default hook would print a backtrace into the
/// program's replayed stderr instead).
static PANIC_MESSAGE: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);

fn install_panic_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        std::panic::set_hook(Box::new(|info| {
            let payload = info.payload();
            let message = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "(no message)".to_string());
            let text = match info.location() {
                Some(l) => format!("{message} (at {}:{}:{})", l.file(), l.line(), l.column()),
                None => message,
            };
            if let Ok(mut slot) = PANIC_MESSAGE.lock() {
                *slot = Some(text);
            }
        }));
    });
}

/// The debug function of one region: rebuilds the argument tuple from
/// `argv` and runs the region's body, catching panics so that a bug in debug
/// code never unwinds into the caller; the panic is reported to the debug
/// host (or printed when there is none). Rust's stdout is flushed after the
/// body so debug output interleaves with the program's in program order.
///
/// # Safety
/// `argv` must satisfy [`FromArgv::from_argv`] for `A`.
pub unsafe extern "C" fn trampoline<A: FromArgv, F: Fn(A)>(argv: *const *const c_void) {
    // SAFETY: `F` is zero-sized (asserted in `region`) and is a closure type
    // with no captures, so any bit pattern (there are none) is a valid value.
    let body: F = unsafe { core::mem::zeroed() };
    run_caught(|| {
        // SAFETY: forwarded from this function's contract.
        let args = unsafe { A::from_argv(argv) };
        body(args)
    });
}

/// Runs debug code the way every debug function does: a panic is caught and reported to the
/// debug host (or printed when there is none), and Rust's stdout is flushed afterwards so that
/// debug output interleaves with the program's in program order.
pub fn run_caught(body: impl FnOnce()) {
    install_panic_hook();
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(body));
    let _ = std::io::Write::flush(&mut std::io::stdout());
    if result.is_err() {
        let message = PANIC_MESSAGE.lock().ok().and_then(|mut m| m.take()).unwrap_or_else(|| "(no message)".into());
        // SAFETY: the host writes the slot once, before any region runs; reading a
        // `Copy` value through a raw pointer avoids a reference to a `static mut`.
        let hook = unsafe { core::ptr::addr_of!(RDB_HOST_PANIC_HOOK).read() };
        match hook {
            // SAFETY: the host's hook reads `len` bytes at `message` during the call.
            Some(report) => unsafe { report(message.as_ptr(), message.len()) },
            None => eprintln!("rdb: debug code panicked: {message}"),
        }
    }
}

/// The debug-only locals regions share with later regions of the same call
/// of their function: the value of region `ID`'s shared `let`s, per call
/// (the call's canonical frame address, which recursion and threads tell
/// apart). Debug code runs on one thread of the debug host. Values are
/// kept until the replay ends (a later region may have kept a reference to
/// an earlier one's), so a region that runs again in the same frame
/// replaces its entry without freeing the old value.
type SharedLocals = std::collections::HashMap<(u64, u64), &'static dyn std::any::Any>;

thread_local! {
    static SHARED: std::cell::RefCell<SharedLocals> = std::cell::RefCell::new(SharedLocals::new());
}

/// The type of the debug-only locals region `ID` shares (`R`, a tuple):
/// what a later region's call names to receive them. Never a value the
/// program has: the debug module's copy of the function never runs.
pub struct Shared<const ID: u64, R>(core::marker::PhantomData<R>);

/// The debug-only locals of earlier regions a region uses: a tuple of
/// `&Shared<ID, R>`, one per region, fetched for the current call.
pub trait Imports {
    /// A tuple of `&'static R`, one per region.
    type Values;
    /// The values kept for `frame`, or the first region that has none.
    fn fetch(frame: u64) -> Result<Self::Values, u64>;
}

fn fetch_one<const ID: u64, R: 'static>(frame: u64) -> Result<&'static R, u64> {
    let value = SHARED.with(|s| s.borrow().get(&(frame, ID)).copied()).ok_or(ID)?;
    match value.downcast_ref::<R>() {
        Some(v) => Ok(v),
        None => panic!("the debug-only locals of region {ID} have another type (please report this)"),
    }
}

macro_rules! imports_tuple {
    ($(($id:ident, $r:ident)),+) => {
        impl<'x, $(const $id: u64, $r: 'static),+> Imports for ($(&'x Shared<$id, $r>,)+) {
            type Values = ($(&'static $r,)+);
            fn fetch(frame: u64) -> Result<Self::Values, u64> {
                Ok(($(fetch_one::<$id, $r>(frame)?,)+))
            }
        }
    };
}

imports_tuple!((I0, R0));
imports_tuple!((I0, R0), (I1, R1));
imports_tuple!((I0, R0), (I1, R1), (I2, R2));
imports_tuple!((I0, R0), (I1, R1), (I2, R2), (I3, R3));
imports_tuple!((I0, R0), (I1, R1), (I2, R2), (I3, R3), (I4, R4));
imports_tuple!((I0, R0), (I1, R1), (I2, R2), (I3, R3), (I4, R4), (I5, R5));
imports_tuple!((I0, R0), (I1, R1), (I2, R2), (I3, R3), (I4, R4), (I5, R5), (I6, R6));
imports_tuple!((I0, R0), (I1, R1), (I2, R2), (I3, R3), (I4, R4), (I5, R5), (I6, R6), (I7, R7));

/// Like [`region`], for a region whose `let`s later regions of the same
/// function call use (it returns them, `R`) and that uses those of earlier
/// regions (`imports`, given to its body as its second parameter). The
/// debug function receives the call's frame address in `argv[0]` and the
/// arguments after it.
#[inline(never)]
pub fn region_shared<const ID: u64, A: FromArgv, I: Imports, R: 'static, F: Fn(A, I::Values) -> R>(
    args: Option<A>,
    imports: I,
    body: F,
) -> Shared<ID, R> {
    const {
        assert!(core::mem::size_of::<F>() == 0, "an rdb region's closure captured a variable; cargo rdb should have passed it as an argument (please report this)")
    };
    unsafe {
        core::arch::asm!(
            ".pushsection rdb_regions,\"awR\",@progbits",
            ".balign 8",
            ".quad {id}",
            ".quad {tramp}",
            ".popsection",
            id = const ID,
            tramp = sym shared_trampoline::<ID, A, I, R, F>,
            options(nomem, nostack, preserves_flags),
        );
    }
    let _ = (args, imports, body);
    Shared(core::marker::PhantomData)
}

/// No imports, for [`region_shared`].
impl Imports for () {
    type Values = ();
    fn fetch(_frame: u64) -> Result<(), u64> {
        Ok(())
    }
}

/// The debug function of a [`region_shared`] region: it runs only when the
/// regions it imports from ran to their end in the same call. What it
/// shared in an earlier hit of the same frame is forgotten before its body
/// runs, so a later region never sees values of an earlier call or of a
/// body that panicked.
///
/// # Safety
/// `argv[0]` must point to a `u64`, and `argv + 1` satisfy
/// [`FromArgv::from_argv`] for `A`.
pub unsafe extern "C" fn shared_trampoline<
    const ID: u64,
    A: FromArgv,
    I: Imports,
    R: 'static,
    F: Fn(A, I::Values) -> R,
>(
    argv: *const *const c_void,
) {
    // SAFETY: as in `trampoline` (asserted zero-sized in `region_shared`).
    let body: F = unsafe { core::mem::zeroed() };
    run_caught(|| {
        // SAFETY: forwarded from this function's contract.
        let frame = unsafe { *(*argv as *const u64) };
        SHARED.with(|s| s.borrow_mut().remove(&(frame, ID)));
        // SAFETY: forwarded from this function's contract.
        let args = unsafe { A::from_argv(argv.add(1)) };
        let values = match I::fetch(frame) {
            Ok(v) => v,
            Err(missing) => panic!(
                "the debug-only locals of region {missing} are not available: it did not run to its end in this \
                 call of the function"
            ),
        };
        let kept: &'static dyn std::any::Any = Box::leak(Box::new(body(args, values)));
        SHARED.with(|s| s.borrow_mut().insert((frame, ID), kept));
    });
}

/// A check (`rdb_check!(cond, "fmt", args…)` in a region): records whether `cond` holds at this
/// hit, with the message, for `rdb find` (which searches the region's hits for where the check
/// starts failing). `cargo rdb build` rewrites the user's `rdb_check!` inside regions into this
/// macro; the line is the user's (the debug text keeps every line where it was).
#[macro_export]
macro_rules! rdb_check {
    ($cond:expr $(,)?) => {
        $crate::__rdb::check($cond, ::core::line!(), ::core::column!(), ::core::stringify!($cond), ::std::string::String::new)
    };
    ($cond:expr, $($arg:tt)+) => {
        $crate::__rdb::check($cond, ::core::line!(), ::core::column!(), ::core::stringify!($cond), || ::std::format!($($arg)+))
    };
}

#[doc(hidden)]
pub use rdb as __rdb;

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    static SEEN: Mutex<Vec<String>> = Mutex::new(Vec::new());

    fn trampoline_of<A: FromArgv, F: Fn(A)>(_body: &F) -> DebugFn {
        trampoline::<A, F>
    }

    #[test]
    fn trampoline_rebuilds_arguments_from_argv() {
        let body = move |(n, s, v): (&i64, &String, &Vec<u8>)| {
            SEEN.lock().unwrap().push(format!("{n} {s} {v:?}"));
        };
        let f = trampoline_of(&body);
        let (n, s, v) = (42i64, String::from("hi"), vec![1u8, 2]);
        let argv: [*const c_void; 3] = [
            &n as *const i64 as *const c_void,
            &s as *const String as *const c_void,
            &v as *const Vec<u8> as *const c_void,
        ];
        // SAFETY: argv holds pointers to live values of the closure's argument types.
        unsafe { f(argv.as_ptr()) };
        assert_eq!(SEEN.lock().unwrap().last().map(String::as_str), Some("42 hi [1, 2]"));
    }

    #[test]
    fn a_panicking_region_returns_normally() {
        let body = move |(n,): (&u32,)| {
            if *n > 1 {
                panic!("debug code bug");
            }
        };
        let f = trampoline_of(&body);
        let n = 7u32;
        let argv = [&n as *const u32 as *const c_void];
        // SAFETY: argv[0] points to a live u32.
        unsafe { f(argv.as_ptr()) };
    }

    fn shared_of<const ID: u64, A: FromArgv, I: Imports, R: 'static, F: Fn(A, I::Values) -> R>(
        _imports: &I,
        _body: &F,
    ) -> DebugFn {
        shared_trampoline::<ID, A, I, R, F>
    }

    #[test]
    fn shared_locals_are_kept_per_frame_and_never_taken_from_another_call() {
        static OUT: Mutex<Vec<String>> = Mutex::new(Vec::new());
        let first = move |(n,): (&u32,), ()| (n * 10,);
        let first_fn = shared_of::<501, _, _, _, _>(&(), &first);
        let marker: Shared<501, (u32,)> = Shared(core::marker::PhantomData);
        let imports = (&marker,);
        let later = move |(), ((entered,),): (&(u32,),)| OUT.lock().unwrap().push(format!("{entered}"));
        let later_fn = shared_of::<502, _, _, _, _>(&imports, &later);
        let call = |f: DebugFn, frame: u64, n: Option<u32>| {
            let argv: Vec<*const c_void> = match &n {
                Some(n) => vec![&frame as *const u64 as *const c_void, n as *const u32 as *const c_void],
                None => vec![&frame as *const u64 as *const c_void],
            };
            // SAFETY: argv[0] is a u64 and the rest the bodies' argument types.
            unsafe { f(argv.as_ptr()) };
        };
        // Two calls (frames 1 and 2), interleaved like recursion.
        call(first_fn, 1, Some(3));
        call(first_fn, 2, Some(4));
        call(later_fn, 2, None);
        call(later_fn, 1, None);
        // A frame where the first region never ran: the later one panics
        // (caught and reported), it never sees another frame's value.
        call(later_fn, 3, None);
        assert_eq!(*OUT.lock().unwrap(), ["40", "30"]);
    }

    #[test]
    fn region_does_not_run_its_body() {
        // `n` is only named where nothing is evaluated (as in a debug module,
        // where a variable only a region reads is unused).
        #[allow(unused_variables)]
        let n = 1u8;
        region::<99, _, _>(types_of!((&n,)), move |(n,): (&u8,)| panic!("ran with {n}"));
    }
}
