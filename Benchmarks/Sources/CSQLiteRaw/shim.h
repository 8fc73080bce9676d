#ifndef RESERVOIR_BENCH_CSQLITERAW_SHIM_H
#define RESERVOIR_BENCH_CSQLITERAW_SHIM_H

#include <sqlite3.h>

static inline int bench_sqlite3_bind_text_transient(sqlite3_stmt *stmt, int index, const char *text, int byteCount) {
    return sqlite3_bind_text(stmt, index, text, byteCount, SQLITE_TRANSIENT);
}

// The bytes must stay unchanged until the statement has run.
static inline int bench_sqlite3_bind_text_static(sqlite3_stmt *stmt, int index, const char *text, int byteCount) {
    return sqlite3_bind_text(stmt, index, text, byteCount, SQLITE_STATIC);
}

#endif
