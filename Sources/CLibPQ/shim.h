#ifndef RESERVOIR_CLIBPQ_SHIM_H
#define RESERVOIR_CLIBPQ_SHIM_H
#include <libpq-fe.h>

/// A notice processor that drops notices ("relation already exists, skipping"): the
/// backend reports what matters through errors, and a library must not write to stderr.
static inline void reservoir_pq_ignore_notice(void *arg, const char *message) {
    (void)arg;
    (void)message;
}

static inline void reservoir_pq_silence(PGconn *connection) {
    PQsetNoticeProcessor(connection, reservoir_pq_ignore_notice, 0);
}
#endif
