/*
 * The raw-libpq side of the PostgreSQL benchmark: what `reservoir bench` times on a
 * postgres:// store, done as a C programmer would with libpq alone (COPY for the bulk load,
 * prepared statements, one transaction for the point reads). Same table shape and steps.
 *
 *   cc -O2 -o /tmp/raw_libpq Benchmarks/Postgres/raw_libpq.c $(pkg-config --cflags --libs libpq)
 *   /tmp/raw_libpq "postgres://USER@HOST:PORT/DB" 100000
 */
#include <libpq-fe.h>
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

static PGresult *check(PGresult *result, const char *what) {
    ExecStatusType status = PQresultStatus(result);
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK && status != PGRES_COPY_IN) {
        fprintf(stderr, "%s: %s", what, PQerrorMessage(conn));
        exit(1);
    }
    return result;
}

static void run(const char *sql) { PQclear(check(PQexec(conn, sql), sql)); }

static void report(const char *name, double seconds, int operations) {
    printf("%-38s %10.1f ms  %10.2f us/op\n", name, seconds * 1e3, seconds * 1e6 / operations);
}

int main(int argc, char **argv) {
    if (argc != 3) { fprintf(stderr, "usage: raw_libpq CONNINFO RECORDS\n"); return 2; }
    int records = atoi(argv[2]);
    conn = PQconnectdb(argv[1]);
    if (PQstatus(conn) != CONNECTION_OK) { fprintf(stderr, "%s", PQerrorMessage(conn)); return 1; }
    run("DROP SCHEMA IF EXISTS raw_bench CASCADE; CREATE SCHEMA raw_bench");
    run("CREATE TABLE raw_bench.bench_items (id bigint PRIMARY KEY, name text COLLATE \"C\", value double precision, \"group\" bigint)");
    run("CREATE INDEX ON raw_bench.bench_items (\"group\")");
    srand(1);
    double *values = malloc(sizeof(double) * records);
    for (int i = 0; i < records; i++) values[i] = rand() / (RAND_MAX + 1.0);

    double start = now();
    run("BEGIN");
    PQclear(check(PQexec(conn, "COPY raw_bench.bench_items FROM STDIN"), "COPY"));
    char line[128];
    for (int i = 0; i < records; i++) {
        int length = snprintf(line, sizeof line, "%d\titem %d\t%.17g\t%d\n", i, i, values[i], i % 100);
        if (PQputCopyData(conn, line, length) != 1) { fprintf(stderr, "copy: %s", PQerrorMessage(conn)); return 1; }
    }
    if (PQputCopyEnd(conn, NULL) != 1) { fprintf(stderr, "copy end: %s", PQerrorMessage(conn)); return 1; }
    PQclear(check(PQgetResult(conn), "COPY result"));
    run("COMMIT");
    report("bulk insert (COPY, one transaction)", now() - start, records);

    PQclear(check(PQprepare(conn, "all", "SELECT id, name, value, \"group\" FROM raw_bench.bench_items ORDER BY value, id", 0, NULL), "prepare all"));
    start = now();
    PGresult *all = check(PQexecPrepared(conn, "all", 0, NULL, NULL, NULL, 1), "fetch all");
    long sum = 0;
    for (int row = 0; row < PQntuples(all); row++) sum += PQgetlength(all, row, 1);
    if (PQntuples(all) != records) { fprintf(stderr, "fetched %d rows\n", PQntuples(all)); return 1; }
    PQclear(all);
    report("fetch all, sorted by value", now() - start, 1);

    PQclear(check(PQprepare(conn, "get", "SELECT id, name, value, \"group\" FROM raw_bench.bench_items WHERE id = $1::bigint", 1, NULL), "prepare get"));
    int reads = records < 100000 ? records : 100000;
    start = now();
    run("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
    for (int i = 0; i < reads; i++) {
        char id[24];
        snprintf(id, sizeof id, "%d", (int)(((long)i * 7919) % records));
        const char *parameters[1] = {id};
        PGresult *result = check(PQexecPrepared(conn, "get", 1, parameters, NULL, NULL, 1), "get");
        if (PQntuples(result) != 1) { fprintf(stderr, "missing %s\n", id); return 1; }
        PQclear(result);
    }
    run("COMMIT");
    report("point reads (get by id)", now() - start, reads);

    PQclear(check(PQprepare(conn, "update", "UPDATE raw_bench.bench_items SET name = $2::text, value = $3::float8, \"group\" = $4::bigint WHERE id = $1::bigint", 4, NULL), "prepare update"));
    int commits = 1000;
    start = now();
    for (int i = 0; i < commits; i++) {
        char id[24], name[32], value[32], group[24];
        snprintf(id, sizeof id, "%d", i % records);
        snprintf(name, sizeof name, "updated %d", i);
        snprintf(value, sizeof value, "%d", i);
        snprintf(group, sizeof group, "%d", i % 100);
        const char *parameters[4] = {id, name, value, group};
        run("BEGIN");
        PQclear(check(PQexecPrepared(conn, "update", 4, parameters, NULL, NULL, 0), "update"));
        run("COMMIT");
    }
    report("single-record commits", now() - start, commits);
    run("DROP SCHEMA raw_bench CASCADE");
    PQfinish(conn);
    free(values);
    (void)sum;
    return 0;
}
