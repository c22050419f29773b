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
 */
#ifndef RDB_H
#define RDB_H

#ifdef __RDB_INSTRUMENT__
void __rdb_begin(int line);
void __rdb_end(int line);
#define rdb_begin __rdb_begin(__LINE__);
#define rdb_end __rdb_end(__LINE__);
#define RDB_DEBUG_ONLY __attribute__((annotate("rdb_debug_only")))
#else
#define rdb_begin
#define rdb_end
#define RDB_DEBUG_ONLY
#endif

#endif /* RDB_H */
