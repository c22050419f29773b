/* rdb_api.c: the C side of rdb's debug-side API, linked into every C debug
 * module by rdb-clang. The debug host fills RDB_HOST_SERVICES when it loads
 * the module (the same table as Rust's `rdb` crate); outside the host these
 * functions say that nothing is known. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "rdb.h"

struct rdb_services {
    uint32_t version;
    size_t (*backtrace)(unsigned char *buf, size_t cap);
    size_t (*watch)(uint64_t address, uint64_t len, uint32_t access, const unsigned char *label, size_t label_len,
                    unsigned char *why, size_t why_cap);
    void (*check)(uint32_t ok, uint32_t line, uint32_t column, const unsigned char *condition, size_t condition_len,
                  const unsigned char *message, size_t message_len);
};

const struct rdb_services *RDB_HOST_SERVICES;

static const struct rdb_services *rdb_services(void) {
    return RDB_HOST_SERVICES && RDB_HOST_SERVICES->version == 2 ? RDB_HOST_SERVICES : NULL;
}

int rdb_watch_at(const void *address, size_t size, int reads, const char *file, int line) {
    const struct rdb_services *s = rdb_services();
    if (!s) {
        fprintf(stderr, "rdb_watch: not running in rdb's debug host\n");
        return -1;
    }
    unsigned char why[512];
    char label[4096];
    snprintf(label, sizeof label, "%s:%d", file, line);
    size_t n = s->watch((uint64_t)(uintptr_t)address, size, reads ? 1 : 0, (const unsigned char *)label, strlen(label),
                        why, sizeof why - 1);
    if (n == 0)
        return 0;
    why[n < sizeof why - 1 ? n : sizeof why - 1] = 0;
    fprintf(stderr, "rdb_watch: %s\n", why);
    return -1;
}


static char rdb_text[64 * 1024];
static unsigned char rdb_raw[64 * 1024];

/* Field `i` of a record (fields separated by 0x1f). */
static const unsigned char *rdb_field(const unsigned char *rec, const unsigned char *end, int i, size_t *len) {
    const unsigned char *p = rec;
    for (; i > 0 && p < end; p++)
        if (*p == 0x1f)
            i--;
    const unsigned char *q = p;
    while (q < end && *q != 0x1f)
        q++;
    *len = (size_t)(q - p);
    return p;
}

/* Formats the host's backtrace records: every frame, or (only_program) the first of the
 * program's own code. */
static const char *rdb_format(int only_program) {
    const struct rdb_services *s = rdb_services();
    if (!s)
        return "(no backtrace: not running in rdb's debug host)";
    size_t n = s->backtrace(rdb_raw, sizeof rdb_raw);
    if (n > sizeof rdb_raw)
        n = sizeof rdb_raw;
    size_t out = 0;
    int frame = 0;
    const unsigned char *p = rdb_raw, *end = rdb_raw + n;
    rdb_text[0] = 0;
    while (p < end) {
        const unsigned char *rec = p;
        while (p < end && *p != 0x1e)
            p++;
        const unsigned char *rend = p;
        p++;
        size_t l0, lf, lfile, lline, lcol, lprog;
        const unsigned char *f0 = rdb_field(rec, rend, 0, &l0);
        if (l0 == 4 && memcmp(f0, "note", 4) == 0)
            continue;
        const unsigned char *fn = rdb_field(rec, rend, 2, &lf);
        const unsigned char *file = rdb_field(rec, rend, 3, &lfile);
        const unsigned char *line = rdb_field(rec, rend, 4, &lline);
        const unsigned char *col = rdb_field(rec, rend, 5, &lcol);
        const unsigned char *prog = rdb_field(rec, rend, 6, &lprog);
        int in_program = lprog == 1 && prog[0] == '1' && lfile > 0;
        if (only_program && !in_program) {
            frame++;
            continue;
        }
        /* As Rust's `rdb::Frame` shows one: the function, or the pc when no symbol holds it;
         * then the source, or the object the code is in. */
        const char *sep = out ? "\n" : "";
        int w;
        if (only_program)
            w = lf ? snprintf(rdb_text + out, sizeof rdb_text - out, "%.*s", (int)lf, (const char *)fn)
                   : snprintf(rdb_text + out, sizeof rdb_text - out, "0x%.*s", (int)l0, (const char *)f0);
        else
            w = lf ? snprintf(rdb_text + out, sizeof rdb_text - out, "%s#%d %.*s", sep, frame, (int)lf, (const char *)fn)
                   : snprintf(rdb_text + out, sizeof rdb_text - out, "%s#%d 0x%.*s", sep, frame, (int)l0, (const char *)f0);
        if (w < 0 || (size_t)w >= sizeof rdb_text - out)
            break;
        out += (size_t)w;
        if (!lfile) {
            size_t lobj;
            const unsigned char *obj = rdb_field(rec, rend, 1, &lobj);
            const unsigned char *base = obj;
            for (size_t i = 0; i < lobj; i++)
                if (obj[i] == '/')
                    base = obj + i + 1;
            size_t lbase = lobj - (size_t)(base - obj);
            if (lbase) {
                w = snprintf(rdb_text + out, sizeof rdb_text - out, " in %.*s", (int)lbase, (const char *)base);
                if (w < 0 || (size_t)w >= sizeof rdb_text - out)
                    break;
                out += (size_t)w;
            }
        }
        if (lfile) {
            w = snprintf(rdb_text + out, sizeof rdb_text - out, " at %.*s:%.*s:%.*s", (int)lfile, (const char *)file,
                         (int)lline, (const char *)line, (int)lcol, (const char *)col);
            if (w < 0 || (size_t)w >= sizeof rdb_text - out)
                break;
            out += (size_t)w;
        }
        frame++;
        if (only_program)
            return rdb_text;
    }
    return only_program && out == 0 ? "(no frame of the program's own code)" : rdb_text;
}

const char *rdb_backtrace(void) { return rdb_format(0); }
const char *rdb_location(void) { return rdb_format(1); }

int rdb_check_at(int ok, int line, const char *condition, const char *fmt, ...) {
    char message[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    const struct rdb_services *s = rdb_services();
    if (!s) {
        if (!ok)
            fprintf(stderr, "rdb_check failed at line %d: %s: %s\n", line, condition, message);
        return ok;
    }
    s->check(ok ? 1 : 0, (uint32_t)line, 0, (const unsigned char *)condition, strlen(condition),
             (const unsigned char *)message, strlen(message));
    return ok;
}
