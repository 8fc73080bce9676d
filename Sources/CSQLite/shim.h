#ifndef RESERVOIR_CSQLITE_SHIM_H
#define RESERVOIR_CSQLITE_SHIM_H

#include <sqlite3.h>

// SQLITE_TRANSIENT and SQLITE_STATIC are casts of integers to function pointers,
// which Swift cannot import; these wrappers bind with the intended destructor.

static inline int reservoir_sqlite3_bind_text_transient(sqlite3_stmt *stmt, int index, const char *text, int byteCount) {
    return sqlite3_bind_text(stmt, index, text, byteCount, SQLITE_TRANSIENT);
}

static inline int reservoir_sqlite3_bind_blob_transient(sqlite3_stmt *stmt, int index, const void *bytes, int byteCount) {
    return sqlite3_bind_blob(stmt, index, bytes, byteCount, SQLITE_TRANSIENT);
}

#endif
