/*
 * The server's share of a single-record commit: the statements a postgres:// store sends for
 * `update` (meta row, row read, upsert, change-log row, meta update, the commit's announcement
 * and its plain NOTIFY, COMMIT), sent from C with libpq alone, so no Swift runs. What is left between this and the raw update
 * (BEGIN, UPDATE, COMMIT) is the cost of the store's guarantees; what is left between this
 * and `reservoir bench` is the client's. Run it on a store `reservoir bench` made.
 *
 *   cc -O2 -o /tmp/commit_protocol Benchmarks/Postgres/commit_protocol.c $(pkg-config --cflags --libs libpq)
 *   reservoir bench --records 1000 --store "postgres://USER@HOST:PORT/DB?schema=proto"
 *   /tmp/commit_protocol "postgres://USER@HOST:PORT/DB" proto
 *
 * Modes, 1,000 commits each, updating records 0-999:
 *   autocommit the UPDATE alone (one round trip), as the benchmark table's raw libpq side
 *   raw        BEGIN; UPDATE; COMMIT (three round trips), as raw_libpq.c
 *   two-trips  BEGIN, the meta row FOR UPDATE and the row read in one pipeline; then the
 *              upsert, change-log row, meta update, NOTIFY and COMMIT in another (the store's)
 *   no-notify  two-trips without either NOTIFY
 *   no-log     two-trips without the change-log row, the meta update and NOTIFY
 * each with nobody listening, with a second connection listening on the store's channel (as
 * the store's own listener does), and with the writing connection itself listening.
 * Then 1,000 records updated in one transaction, milliseconds for the lot:
 *   batch-raw    BEGIN, the 1,000 UPDATEs and COMMIT in one pipeline (one round trip), as the
 *                benchmark table's raw libpq side
 *   batch-store  the store's: BEGIN, the meta row and the first record's row read in one
 *                pipeline; then for each next record its row read in the pipeline of the
 *                previous record's upsert (one round trip a record: `update` must know whether
 *                the record exists, and its old row, before it returns); then the last upsert,
 *                change-log row, meta update, NOTIFYs and COMMIT
 */
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static PGconn *conn;

/* A stand-in for a one-record announcement: 200 base64 characters. */
static const char payload[] = "AAAAAQAAAAAAAAAAAAAAAQAAAAEAAAALYmVuY2hfaXRlbXMAAAABAAAABG5hbWUAAAAFdmFsdWUAAAAFZ3JvdXAAAAABAQAAAAAAAAAB"
                              "AwAAAAl1cGRhdGVkIDECAAAAAAAAAAABAAAAAAAAAAEAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void run(PGconn *on, const char *sql) {
    PGresult *result = PQexec(on, sql);
    ExecStatusType status = PQresultStatus(result);
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) { fprintf(stderr, "%s: %s", sql, PQerrorMessage(on)); exit(1); }
    PQclear(result);
}

static void prepare(const char *name, const char *sql) {
    PGresult *result = PQprepare(conn, name, sql, 0, NULL);
    if (PQresultStatus(result) != PGRES_COMMAND_OK) { fprintf(stderr, "%s: %s", name, PQerrorMessage(conn)); exit(1); }
    PQclear(result);
}

/* Reads the results of `count` pipelined statements and the sync. */
static void drain(int count) {
    for (int i = 0; i < count; i++) {
        PGresult *result;
        while ((result = PQgetResult(conn))) {
            if (PQresultStatus(result) == PGRES_FATAL_ERROR) { fprintf(stderr, "%s", PQresultErrorMessage(result)); exit(1); }
            PQclear(result);
        }
    }
    PQclear(PQgetResult(conn));
}

static void send_prepared(const char *name, int count, const char *const *values) {
    if (PQsendQueryPrepared(conn, name, count, values, NULL, NULL, 1) != 1) { fprintf(stderr, "%s", PQerrorMessage(conn)); exit(1); }
}

static void drop_notifications(PGconn *on) {
    PGnotify *notification;
    PQconsumeInput(on);
    while ((notification = PQnotifies(on))) PQfreemem(notification);
}

/* Makes `conn` a store's writer (reservoir.writer on, asynchronous commit) with the store's
 * statements prepared; returns the store's newest sequence. */
static long set_up_writer(const char *schema) {
    char sql[512];
    run(conn, "SET reservoir.writer = 'on'; SET synchronous_commit = off");
    snprintf(sql, sizeof sql, "SELECT sequence, catalog, commit_id, txid_current(), store_id::text FROM \"%s\"._reservoir_meta FOR UPDATE", schema);
    prepare("meta", sql);
    snprintf(sql, sizeof sql, "SELECT id, name, value, \"group\" FROM \"%s\".bench_items WHERE id = $1::bigint", schema);
    prepare("row", sql);
    snprintf(sql, sizeof sql, "UPDATE \"%s\".bench_items SET name = $2::text, value = $3::float8, \"group\" = $4::bigint WHERE id = $1::bigint", schema);
    prepare("update", sql);
    snprintf(sql, sizeof sql, "INSERT INTO \"%s\".bench_items (id, name, value, \"group\") VALUES ($1::bigint, $2::text, $3::float8, $4::bigint) "
             "ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, value = EXCLUDED.value, \"group\" = EXCLUDED.\"group\"", schema);
    prepare("upsert", sql);
    snprintf(sql, sizeof sql, "INSERT INTO \"%s\"._reservoir_changes (sequence, entity, kind, ids, commit_id) VALUES ($1::bigint, $2::text, $3::text, $4::bytea, $5::bigint)", schema);
    prepare("log", sql);
    snprintf(sql, sizeof sql, "UPDATE \"%s\"._reservoir_meta SET sequence = $1::bigint, commit_id = $2::bigint, xact = pg_current_xact_id()", schema);
    prepare("meta_update", sql);
    prepare("notify", "SELECT pg_notify($1::text, $2::text)");
    snprintf(sql, sizeof sql, "SELECT sequence FROM \"%s\"._reservoir_meta", schema);
    PGresult *meta = PQexec(conn, sql);
    if (PQresultStatus(meta) != PGRES_TUPLES_OK || PQntuples(meta) != 1) { fprintf(stderr, "no store in schema %s: %s", schema, PQerrorMessage(conn)); exit(1); }
    long sequence = atol(PQgetvalue(meta, 0, 0));
    PQclear(meta);
    return sequence;
}

enum mode { AUTOCOMMIT, RAW, TWO_TRIPS, NO_NOTIFY, NO_LOG };
enum listening { NOBODY, ANOTHER_CONNECTION, THE_WRITER };

static double measure(const char *conninfo, const char *schema, enum mode mode, enum listening listening) {
    char sql[512], channel[128], listen[320], announce[128];
    conn = PQconnectdb(conninfo);
    if (PQstatus(conn) != CONNECTION_OK) { fprintf(stderr, "%s", PQerrorMessage(conn)); exit(1); }
    snprintf(channel, sizeof channel, "reservoir.%s", schema);
    /* The announcement channel is named by the store's identity; its payload, a base64 change
     * set with one record's row, is about 200 bytes for these records. */
    snprintf(sql, sizeof sql, "SELECT 'reservoir:' || replace(store_id::text, '-', '') FROM \"%s\"._reservoir_meta", schema);
    {
        PGconn *probe = PQconnectdb(conninfo);
        PGresult *identity = PQexec(probe, sql);
        if (PQresultStatus(identity) != PGRES_TUPLES_OK || PQntuples(identity) != 1) { fprintf(stderr, "no store in schema %s: %s", schema, PQerrorMessage(probe)); exit(1); }
        snprintf(announce, sizeof announce, "%s", PQgetvalue(identity, 0, 0));
        PQclear(identity);
        PQfinish(probe);
    }
    snprintf(listen, sizeof listen, "LISTEN \"%s\"; LISTEN \"%s\"", channel, announce);
    PGconn *listener = NULL;
    if (listening == ANOTHER_CONNECTION) { listener = PQconnectdb(conninfo); run(listener, listen); }
    if (listening == THE_WRITER) run(conn, listen);
    long sequence = set_up_writer(schema);

    int commits = 1000;
    double start = now();
    for (int i = 0; i < commits; i++) {
        char id[24], name[32], value[32], group[24], next[24];
        snprintf(id, sizeof id, "%d", i);
        snprintf(name, sizeof name, "updated %d", i);
        snprintf(value, sizeof value, "%d", i);
        snprintf(group, sizeof group, "%d", i % 100);
        snprintf(next, sizeof next, "%ld", ++sequence);
        const char *row[4] = {id, name, value, group};
        if (mode == AUTOCOMMIT) {
            PGresult *result = PQexecPrepared(conn, "update", 4, row, NULL, NULL, 0);
            if (PQresultStatus(result) != PGRES_COMMAND_OK) { fprintf(stderr, "%s", PQerrorMessage(conn)); exit(1); }
            PQclear(result);
            continue;
        }
        if (mode == RAW) {
            run(conn, "BEGIN");
            PGresult *result = PQexecPrepared(conn, "update", 4, row, NULL, NULL, 0);
            if (PQresultStatus(result) != PGRES_COMMAND_OK) { fprintf(stderr, "%s", PQerrorMessage(conn)); exit(1); }
            PQclear(result);
            run(conn, "COMMIT");
            continue;
        }
        PQenterPipelineMode(conn);
        PQsendQueryParams(conn, "BEGIN", 0, NULL, NULL, NULL, NULL, 0);
        send_prepared("meta", 0, NULL);
        send_prepared("row", 1, row);
        PQpipelineSync(conn);
        drain(3);
        int sent = 0;
        send_prepared("upsert", 4, row), sent++;
        if (mode != NO_LOG) {
            const char *log[5] = {next, "bench_items", "u", "\\x01", next};
            send_prepared("log", 5, log), sent++;
            send_prepared("meta_update", 2, (const char *const[]){next, next}), sent++;
        }
        if (mode == TWO_TRIPS) {
            send_prepared("notify", 2, (const char *const[]){announce, payload}), sent++;
            send_prepared("notify", 2, (const char *const[]){channel, next}), sent++;
        }
        PQsendQueryParams(conn, "COMMIT", 0, NULL, NULL, NULL, NULL, 0), sent++;
        PQpipelineSync(conn);
        drain(sent);
        PQexitPipelineMode(conn);
        if (listening == THE_WRITER) drop_notifications(conn);
        if (listener) drop_notifications(listener);
    }
    double each = (now() - start) * 1e6 / commits;
    if (listener) PQfinish(listener);
    PQfinish(conn);
    return each;
}

/* One record's row values for update number `i` of batch `round`. */
static void values(int i, int round, char id[24], char name[32], char value[32], char group[24]) {
    snprintf(id, 24, "%d", i);
    snprintf(name, 32, "batch %d %d", round, i);
    snprintf(value, 32, "%d", i + round);
    snprintf(group, 24, "%d", i % 100);
}

static double measure_batch(const char *conninfo, const char *schema, int store, int round) {
    char channel[128];
    conn = PQconnectdb(conninfo);
    if (PQstatus(conn) != CONNECTION_OK) { fprintf(stderr, "%s", PQerrorMessage(conn)); exit(1); }
    snprintf(channel, sizeof channel, "reservoir.%s", schema);
    char next[24];
    snprintf(next, sizeof next, "%ld", set_up_writer(schema) + 1);
    int records = 1000;
    char id[24], name[32], value[32], group[24];
    double start = now();
    PQenterPipelineMode(conn);
    PQsendQueryParams(conn, "BEGIN", 0, NULL, NULL, NULL, NULL, 0);
    if (!store) {
        for (int i = 0; i < records; i++) {
            values(i, round, id, name, value, group);
            send_prepared("update", 4, (const char *const[]){id, name, value, group});
        }
        PQsendQueryParams(conn, "COMMIT", 0, NULL, NULL, NULL, NULL, 0);
        PQpipelineSync(conn);
        drain(records + 2);
    } else {
        send_prepared("meta", 0, NULL);
        values(0, round, id, name, value, group);
        send_prepared("row", 1, (const char *const[]){id});
        PQpipelineSync(conn);
        drain(3);
        for (int i = 1; i < records; i++) {
            values(i - 1, round, id, name, value, group);
            send_prepared("upsert", 4, (const char *const[]){id, name, value, group});
            values(i, round, id, name, value, group);
            send_prepared("row", 1, (const char *const[]){id});
            PQpipelineSync(conn);
            drain(2);
        }
        values(records - 1, round, id, name, value, group);
        send_prepared("upsert", 4, (const char *const[]){id, name, value, group});
        send_prepared("log", 5, (const char *const[]){next, "bench_items", "u", "\\x01", next});
        send_prepared("meta_update", 2, (const char *const[]){next, next});
        send_prepared("notify", 2, (const char *const[]){channel, next});
        PQsendQueryParams(conn, "COMMIT", 0, NULL, NULL, NULL, NULL, 0);
        PQpipelineSync(conn);
        drain(5);
    }
    PQexitPipelineMode(conn);
    double elapsed = (now() - start) * 1e3;
    PQfinish(conn);
    return elapsed;
}

int main(int argc, char **argv) {
    if (argc != 3) { fprintf(stderr, "usage: commit_protocol CONNINFO SCHEMA\n"); return 2; }
    const char *modes[] = {"autocommit", "raw", "two-trips", "no-notify", "no-log"};
    const char *listenings[] = {"nobody listening", "another connection listening", "the writer listening"};
    for (int mode = AUTOCOMMIT; mode <= NO_LOG; mode++) {
        for (int listening = NOBODY; listening <= THE_WRITER; listening++) {
            if (mode <= RAW && listening != NOBODY) continue;
            printf("%-10s %-30s %8.1f us/commit\n", modes[mode], listenings[listening], measure(argv[1], argv[2], mode, listening));
        }
    }
    for (int round = 1; round <= 3; round++) {
        printf("%-10s %-30s %8.2f ms/1,000\n", "batch-raw", "", measure_batch(argv[1], argv[2], 0, 2 * round));
        printf("%-10s %-30s %8.2f ms/1,000\n", "batch-store", "", measure_batch(argv[1], argv[2], 1, 2 * round + 1));
    }
    return 0;
}
