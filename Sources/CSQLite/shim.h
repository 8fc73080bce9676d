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

// SQLITE_STATIC: SQLite reads the bytes in place, so they must stay unchanged until the
// parameter is bound again or the statement is finalized.
static inline int reservoir_sqlite3_bind_text_static(sqlite3_stmt *stmt, int index, const void *text, int byteCount) {
    return sqlite3_bind_text(stmt, index, (const char *)text, byteCount, SQLITE_STATIC);
}

static inline int reservoir_sqlite3_bind_blob_static(sqlite3_stmt *stmt, int index, const void *bytes, int byteCount) {
    return sqlite3_bind_blob(stmt, index, bytes, byteCount, SQLITE_STATIC);
}

// An application-defined function's result, copied by SQLite (SQLITE_TRANSIENT).
static inline void reservoir_sqlite3_result_text_transient(sqlite3_context *context, const char *text, int byteCount) {
    sqlite3_result_text(context, text, byteCount, SQLITE_TRANSIENT);
}

static inline void reservoir_sqlite3_result_blob_transient(sqlite3_context *context, const void *bytes, int byteCount) {
    sqlite3_result_blob(context, bytes, byteCount, SQLITE_TRANSIENT);
}

// sqlite3_db_config is variadic, which Swift cannot call. Sets whether triggers in the
// main schema fire on this connection; returns the setting afterwards (0 or 1), or -1
// when SQLite refused the call.
static inline int reservoir_sqlite3_enable_triggers(sqlite3 *db, int enable) {
    int now = -1;
    if (sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_TRIGGER, enable, &now) != SQLITE_OK) return -1;
    return now;
}

#endif
