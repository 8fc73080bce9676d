/*
 * The server's share of a postgres:// store's reads: the statements the store sends for a point
 * read (Store.get) and a fetch of 100 records by an indexed field, sent from C with libpq alone,
 * so no Swift runs, beside the raw program's single prepared SELECT. What is left between the
 * two is what the readers' lock, the transaction and the meta row cost the server and the wire;
 * what is left between this and the benchmark table is the client's.
 *
 *   cc -O2 -o /tmp/read_protocol Benchmarks/Postgres/read_protocol.c $(pkg-config --cflags --libs libpq)
 *   scripts/with-postgres sh -c '/tmp/read_protocol "$RESERVOIR_TEST_POSTGRES"'
 *
 * It makes its own tables in schema read_protocol (dropped first): 100,000 rows shaped as the
 * benchmark table's (id, name, score, rank, grp; grp = (id - 1) / 100, indexed) and a meta row.
 * Modes, each 20,000 point reads of random ids or 2,000 reads of a random group's 100 rows,
 * three passes interleaved, microseconds per read:
 *   raw       the SELECT alone, prepared, binary results (one round trip)
 *   store     the store's read transaction (PostgresBackend+Read.swift): [BEGIN; the shared advisory lock; END;
 *             BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; the meta row; the SELECT; sync]
 *             in one pipeline, then [END; unlock; sync] sent at once and its answers read with
 *             the next read's (one round trip); every statement prepared, BEGIN and END too
 *   whole     the store's point read (row(_:id:)): the same statements, END and the unlock
 *             included, in one segment of one pipeline (one sync, so one send)
 *   no-lock   the store's without the lock's transaction and the unlock: what the lock costs
 *   trips     the same statements one round trip each, as the store sent them before: lock;
 *             BEGIN and the meta row; the SELECT; COMMIT and the unlock (four round trips)
 */
#include <libpq-fe.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static PGconn *conn;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void fail(const char *what) {
    fprintf(stderr, "%s: %s", what, PQerrorMessage(conn));
    exit(1);
}

static void run(const char *sql) {
    PGresult *result = PQexec(conn, sql);
    ExecStatusType status = PQresultStatus(result);
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) fail(sql);
    PQclear(result);
}

static void prepare(const char *name, const char *sql) {
    PGresult *result = PQprepare(conn, name, sql, 0, NULL);
    if (PQresultStatus(result) != PGRES_COMMAND_OK) fail(name);
    PQclear(result);
}

/* Reads one statement's results, or a sync's; returns the rows of the last result. */
static int answer(void) {
    int rows = 0;
    PGresult *result;
    while ((result = PQgetResult(conn))) {
        ExecStatusType status = PQresultStatus(result);
        if (status == PGRES_FATAL_ERROR) { fprintf(stderr, "%s", PQresultErrorMessage(result)); exit(1); }
        if (status == PGRES_TUPLES_OK) rows = PQntuples(result);
        PQclear(result);
        if (status == PGRES_PIPELINE_SYNC) break;
    }
    return rows;
}

static long checksum;

/* Sums the rank column (3) of every row of a binary result. */
static void consume(PGresult *result) {
    for (int row = 0; row < PQntuples(result); row++) {
        uint64_t big;
        memcpy(&big, PQgetvalue(result, row, 3), 8);
        checksum += (long)__builtin_bswap64(big);
    }
}

static void send_read(const char *statement, int64_t key) {
    uint64_t big = __builtin_bswap64((uint64_t)key);
    const char *values[1] = {(const char *)&big};
    int lengths[1] = {8}, formats[1] = {1};
    if (PQsendQueryPrepared(conn, statement, 1, values, lengths, formats, 1) != 1) fail("send");
}

static PGresult *exec_read(const char *statement, int64_t key) {
    uint64_t big = __builtin_bswap64((uint64_t)key);
    const char *values[1] = {(const char *)&big};
    int lengths[1] = {8}, formats[1] = {1};
    PGresult *result = PQexecPrepared(conn, statement, 1, values, lengths, formats, 1);
    if (PQresultStatus(result) != PGRES_TUPLES_OK) fail(statement);
    return result;
}

#define LOCK "SELECT pg_advisory_lock_shared(hashtext('reservoir.rewrite'), hashtext('read_protocol'))"
#define UNLOCK "SELECT pg_advisory_unlock_shared(hashtext('reservoir.rewrite'), hashtext('read_protocol'))"
#define BEGIN_READ "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
#define META "SELECT sequence, catalog, commit_id, store_id::text FROM read_protocol._reservoir_meta"

enum mode { RAW, STORE, NO_LOCK, TRIPS, WHOLE };

static void send_named(const char *name) {
    if (PQsendQueryPrepared(conn, name, 0, NULL, NULL, NULL, 0) != 1) fail(name);
}

static double measure(enum mode mode, const char *statement, int reads, int keys) {
    int owed = 0; /* answers of the last read's deferred end, still to be read */
    double start = now();
    for (int i = 0; i < reads; i++) {
        int64_t key = 1 + random() % keys;
        if (mode == RAW) {
            PGresult *result = exec_read(statement, key);
            consume(result);
            PQclear(result);
        } else if (mode == WHOLE) {
            PQenterPipelineMode(conn);
            send_named("begin"); send_named("lock"); send_named("end");
            send_named("beginread");
            send_named("meta");
            send_read(statement, key);
            send_named("end"); send_named("unlock");
            PQpipelineSync(conn);
            for (int k = 0; k < 5; k++) answer();
            PGresult *result, *rows = NULL;
            while ((result = PQgetResult(conn))) {
                if (PQresultStatus(result) == PGRES_TUPLES_OK) rows = result; else PQclear(result);
            }
            if (!rows) fail("read");
            answer(); answer(); answer(); /* END, unlock, sync */
            PQexitPipelineMode(conn);
            consume(rows);
            PQclear(rows);
        } else if (mode == STORE || mode == NO_LOCK) {
            PQenterPipelineMode(conn);
            int before = 2;
            if (mode == STORE) { send_named("begin"); send_named("lock"); send_named("end"); before += 3; }
            send_named("beginread");
            send_named("meta");
            send_read(statement, key);
            PQpipelineSync(conn);
            if (PQflush(conn) != 0) fail("flush");
            for (int k = 0; k < owed + before; k++) answer();
            PGresult *result, *rows = NULL;
            while ((result = PQgetResult(conn))) {
                if (PQresultStatus(result) == PGRES_TUPLES_OK) rows = result; else PQclear(result);
            }
            if (!rows) fail("read");
            answer(); /* sync */
            consume(rows);
            PQclear(rows);
            send_named("end");
            owed = 2;
            if (mode == STORE) { send_named("unlock"); owed++; }
            PQpipelineSync(conn);
            if (PQflush(conn) != 0) fail("flush");
        } else {
            run(LOCK);
            run(BEGIN_READ "; " META);
            PGresult *result = exec_read(statement, key);
            consume(result);
            PQclear(result);
            run("COMMIT; " UNLOCK);
        }
    }
    if (owed) { for (int k = 0; k < owed; k++) answer(); PQexitPipelineMode(conn); }
    return (now() - start) * 1e6 / reads;
}

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: read_protocol CONNINFO\n"); return 2; }
    conn = PQconnectdb(argv[1]);
    if (PQstatus(conn) != CONNECTION_OK) fail("connect");
    run("SET client_min_messages = warning");
    run("DROP SCHEMA IF EXISTS read_protocol CASCADE");
    run("CREATE SCHEMA read_protocol");
    run("CREATE TABLE read_protocol._reservoir_meta (sequence bigint, catalog bigint, commit_id bigint, store_id uuid)");
    run("INSERT INTO read_protocol._reservoir_meta VALUES (1, 1, 1, gen_random_uuid())");
    run("CREATE TABLE read_protocol.items (id bigint PRIMARY KEY, name text COLLATE \"C\", score double precision, rank bigint, grp bigint)");
    run("INSERT INTO read_protocol.items SELECT i, 'record ' || i, i * 0.5, i % 1000, (i - 1) / 100 FROM generate_series(1, 100000) i");
    run("CREATE INDEX ON read_protocol.items (grp NULLS FIRST)");
    run("VACUUM ANALYZE read_protocol.items");
    prepare("lock", LOCK);
    prepare("unlock", UNLOCK);
    prepare("meta", META);
    prepare("begin", "BEGIN");
    prepare("end", "END");
    prepare("beginread", BEGIN_READ);
    prepare("point", "SELECT id, name, score, rank, grp FROM read_protocol.items WHERE id = $1::bigint");
    prepare("group", "SELECT id, name, score, rank, grp FROM read_protocol.items WHERE (grp IS NOT NULL AND grp = $1::bigint) ORDER BY id");
    const char *names[] = {"raw", "store", "no-lock", "trips", "whole"};
    for (int pass = 1; pass <= 3; pass++) {
        for (int mode = RAW; mode <= WHOLE; mode++)
            printf("pass %d  point  %-8s %7.1f us/read\n", pass, names[mode], measure(mode, "point", 20000, 100000));
        for (int mode = RAW; mode <= WHOLE; mode++)
            printf("pass %d  group  %-8s %7.1f us/read\n", pass, names[mode], measure(mode, "group", 2000, 999));
        fflush(stdout);
    }
    run("DROP SCHEMA read_protocol CASCADE");
    PQfinish(conn);
    return checksum == 42 ? 1 : 0;
}
