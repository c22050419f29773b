/* rdb.h: debug-region markers for C programs built with rdb-clang.
 *
 * Location: rdb-codegen-llvm/include/rdb.h in the rdb source tree. rdb-clang
 * carries a copy of this file and puts it on the include path of its
 * instrumented compile; for a plain clang build of instrumented sources add
 * `-I <rdb>/rdb-codegen-llvm/include` (or `rdb-clang --print-include-dir`).
 *
 * Usage (each marker on a line of its own, optionally followed by `;`):
 *
 *     #include "rdb.h"
 *     static long __rdb_last;             debug-only: `__rdb_` prefix ...
 *     RDB_DEBUG_ONLY int seen;            ... or the RDB_DEBUG_ONLY attribute
 *     ...
 *       rdb_begin
 *       printf("len %ld\n", list_len(head));
 *       rdb_end
 *
 * In a plain compile every marker expands to nothing. Under rdb-clang's
 * instrumented compile (which defines __RDB_INSTRUMENT__) they become calls
 * that the rdb LLVM pass outlines into the debug module; the main binary is
 * always compiled from the source with these lines removed.
 *
 * Event callbacks, in debug sources (`*.rdb.c`), each macro right before a
 * function definition:
 *
 *     RDB_ON_SYSCALL(write, after) void who_writes(const rdb_syscall *call) { ... }
 *     RDB_ON_CALL(insert) void inserting(struct list *l, int v) { ... }   (or (void))
 *     RDB_ON_RETURN(list_len) void counted(long n) { ... }
 *     RDB_ON_CALL(malloc) void allocating(unsigned long size) { ... }   (a shared library's)
 *     RDB_ON_WRITE(head) void head_changed(struct node *old, struct node *new) { ... }
 *     RDB_ON_READ(limit) void limit_read(void) { ... }
 *
 * A call callback takes no parameters or the function's, each of the same
 * size (checked against the program's DWARF when rdb-clang links); a memory
 * callback takes nothing, (old, new), or (old, new, const rdb_access *).
 * In a region, rdb_check(cond, "fmt", ...) is a check for `rdb find`.
 * From any debug code: rdb_watch(&p->next, sizeof p->next) watches program
 * memory (rdb reports each change), rdb_backtrace() and rdb_location() say
 * where the program is.
 */
#ifndef RDB_H
#define RDB_H

#include <stdint.h>
#include <stddef.h>

/* A system call, as a syscall callback sees it (the same record as Rust's
 * `rdb::Syscall`): arguments and result as recorded, the bytes it moved. */
typedef struct rdb_syscall {
    uint64_t number;
    uint64_t args[6];
    int64_t result;          /* valid in `after` callbacks (flags & 1) */
    uint32_t flags;          /* 1: completed (after); 2: data cut short */
    uint32_t thread;         /* recorded thread id */
    int32_t fd;              /* its file descriptor argument, or -1 */
    uint32_t process;        /* recorded process id */
    const char *name;        /* NUL-terminated */
    uint64_t name_len;
    const unsigned char *data; /* bytes sent (write, sendto, ...) or received (read, ...) */
    uint64_t data_len;
} rdb_syscall;

/* An access to watched memory (Rust's `rdb::Access`). */
typedef struct rdb_access {
    uint64_t address;
    uint64_t len;
    uint64_t pc;             /* right after the accessing instruction */
    uint32_t thread;         /* recorded thread id */
    uint32_t flags;          /* 1: the bytes changed; 2: a system call wrote them */
    uint64_t syscall;        /* that system call's number */
} rdb_access;

/* Watch program memory from here on: 0, or -1 when refused (the reason is
 * printed on stderr). rdb reports each change on its stderr, naming the place
 * of the call. rdb_watch_access reports reads too. */
int rdb_watch_at(const void *address, size_t size, int reads, const char *file, int line);
#define rdb_watch(address, size) rdb_watch_at((address), (size), 0, __FILE__, __LINE__)
#define rdb_watch_access(address, size) rdb_watch_at((address), (size), 1, __FILE__, __LINE__)
/* The program's stack where debug code runs, one frame per line
 * ("#0 function at file:line:column", or "#2 0x7f... in libc.so.6" where no
 * symbol or line is known); valid until the next call of either function. */
const char *rdb_backtrace(void);
/* The innermost frame of the program's own code ("function at file:line:column"). */
const char *rdb_location(void);

/* A check inside a region, for `rdb find`: rdb_check(cond, "fmt", ...) records
 * whether cond holds at this hit, with the message; `rdb find` searches the
 * region's hits for the first where it fails (or the last where it holds).
 * Returns cond. In a plain compile it expands to nothing. */
int rdb_check_at(int ok, int line, const char *condition, const char *fmt, ...);

#ifdef __RDB_INSTRUMENT__
#define rdb_check(cond, ...) rdb_check_at(!!(cond), __LINE__, #cond, __VA_ARGS__)
void __rdb_begin(int line);
void __rdb_end(int line);
#define rdb_begin __rdb_begin(__LINE__);
#define rdb_end __rdb_end(__LINE__);
#define RDB_DEBUG_ONLY __attribute__((annotate("rdb_debug_only")))
#define RDB_ON_SYSCALL(...) __attribute__((used))
#define RDB_ON_CALL(function) __attribute__((used))
#define RDB_ON_RETURN(function) __attribute__((used))
#define RDB_ON_WRITE(variable) __attribute__((used))
#define RDB_ON_READ(variable) __attribute__((used))
#else
#define rdb_check(cond, ...) ((void)0)
#define rdb_begin
#define rdb_end
#define RDB_DEBUG_ONLY
#define RDB_ON_SYSCALL(...)
#define RDB_ON_CALL(function)
#define RDB_ON_RETURN(function)
#define RDB_ON_WRITE(variable)
#define RDB_ON_READ(variable)
#endif

#endif /* RDB_H */
