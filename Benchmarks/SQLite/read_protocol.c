/*
 * What a read of 100 records by an indexed field (the table's group reads) must cost on SQLite
 * under the backend's contract, in C alone. Each line adds one step to the one above:
 *
 *   1. raw: the table's raw side (a prepared SELECT of the five columns by grp, ORDER BY id, each
 *      row's fields read with the typed column calls and its name copied, summed, let go);
 *   2. + the records kept: each group's records in an array grown as appended, summed from it and
 *      freed with it, as a store's fetch returns them (the raw side keeps nothing);
 *   3. + the read transaction: BEGIN, the catalog's check (PRAGMA schema_version) and COMMIT
 *      around the SELECT, the statements the backend runs for a read;
 *   4. + values typed by the row: each column read through sqlite3_column_value and
 *      sqlite3_value_type before its typed sqlite3_value_* call, as the backend reads them (a
 *      column holds any type in SQLite, and the store's values keep theirs).
 *
 * Line 4 is the floor of the store's group read: what the contract makes it do, with the
 * records in the array a fetch returns. WAL, as the table's sides; one database, the lines
 * alternated in rounds.
 *
 *   cc -O2 -o /tmp/sqlite_read_protocol Benchmarks/SQLite/read_protocol.c -lsqlite3
 *   /tmp/sqlite_read_protocol 100000 1000
 *
 * A third argument runs that line alone, once (for instruction counts: callgrind's inclusive
 * count of `group_reads`, divided by the reads):
 *
 *   valgrind --tool=callgrind /tmp/sqlite_read_protocol 20000 200 4
 */
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static sqlite3 *db;

static void check(int rc, const char *what) {
    if (rc != SQLITE_OK && rc != SQLITE_DONE && rc != SQLITE_ROW) {
        fprintf(stderr, "%s: %s\n", what, sqlite3_errmsg(db));
        exit(1);
    }
}

static void exec(const char *sql) {
    char *error = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &error) != SQLITE_OK) {
        fprintf(stderr, "%s: %s\n", sql, error);
        exit(1);
    }
}

static sqlite3_stmt *prepare(const char *sql) {
    sqlite3_stmt *statement = NULL;
    check(sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &statement, NULL), sql);
    return statement;
}

static void run(sqlite3_stmt *statement) {
    check(sqlite3_step(statement), sqlite3_sql(statement));
    sqlite3_reset(statement);
}

struct record {
    int64_t id, rank, group;
    double score;
    char *name;
};

static sqlite3_stmt *select_group, *begin, *commit, *schema_version;

/* A row's fields through the typed column calls (line 1 to 3) or through each column's value
   and its type (line 4). */
static struct record read_record(int typed) {
    struct record r;
    if (!typed) {
        r.id = sqlite3_column_int64(select_group, 0);
        const unsigned char *text = sqlite3_column_text(select_group, 1);
        int length = sqlite3_column_bytes(select_group, 1);
        r.name = malloc((size_t)length + 1);
        memcpy(r.name, text, (size_t)length);
        r.name[length] = 0;
        r.score = sqlite3_column_double(select_group, 2);
        r.rank = sqlite3_column_int64(select_group, 3);
        r.group = sqlite3_column_int64(select_group, 4);
        return r;
    }
    sqlite3_value *values[5];
    for (int column = 0; column < 5; column++) values[column] = sqlite3_column_value(select_group, column);
    r.id = sqlite3_value_type(values[0]) == SQLITE_INTEGER ? sqlite3_value_int64(values[0]) : 0;
    r.name = NULL;
    if (sqlite3_value_type(values[1]) == SQLITE_TEXT) {
        const unsigned char *text = sqlite3_value_text(values[1]);
        int length = sqlite3_value_bytes(values[1]);
        r.name = malloc((size_t)length + 1);
        memcpy(r.name, text, (size_t)length);
        r.name[length] = 0;
    }
    r.score = sqlite3_value_type(values[2]) == SQLITE_FLOAT ? sqlite3_value_double(values[2]) : 0;
    r.rank = sqlite3_value_type(values[3]) == SQLITE_INTEGER ? sqlite3_value_int64(values[3]) : 0;
    r.group = sqlite3_value_type(values[4]) == SQLITE_INTEGER ? sqlite3_value_int64(values[4]) : 0;
    return r;
}

static long checksum(long sum, const struct record *r) { return sum * 1000003 + r->id * 7 + r->rank; }

/* `reads` group reads at `level` (1 to 4, the header's lines); returns a checksum. */
__attribute__((noinline)) static long group_reads(int level, int reads, int groups) {
    long sum = 0;
    for (int read = 0; read < reads; read++) {
        int group = (int)((read * 7919L) % groups);
        if (level >= 3) {
            run(begin);
            check(sqlite3_step(schema_version), "PRAGMA schema_version");
            sum += sqlite3_column_int64(schema_version, 0) & 1;
            sqlite3_reset(schema_version);
        }
        sqlite3_bind_int64(select_group, 1, group);
        struct record *kept = NULL;
        size_t count = 0, capacity = 0;
        while (sqlite3_step(select_group) == SQLITE_ROW) {
            struct record r = read_record(level >= 4);
            if (level >= 2) {
                if (count == capacity) {
                    capacity = capacity ? capacity * 2 : 1;
                    kept = realloc(kept, capacity * sizeof *kept);
                    if (!kept) { perror("realloc"); exit(1); }
                }
                kept[count++] = r;
            } else {
                sum = checksum(sum, &r);
                free(r.name);
            }
        }
        sqlite3_reset(select_group);
        if (level >= 3) run(commit);
        for (size_t i = 0; i < count; i++) {
            sum = checksum(sum, &kept[i]);
            free(kept[i].name);
        }
        free(kept);
    }
    return sum;
}

int main(int argc, char **argv) {
    int records = argc > 1 ? atoi(argv[1]) : 100000;
    int reads = argc > 2 ? atoi(argv[2]) : 1000;
    int only = argc > 3 ? atoi(argv[3]) : 0;
    int groups = records / 100;
    char path[] = "/tmp/sqlite_read_protocol.XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) { perror("mkstemp"); return 1; }
    close(fd);
    /* NOMUTEX, as the backend and the raw side open their connections. */
    check(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL), "open");
    exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;");
    exec("CREATE TABLE items(id INTEGER PRIMARY KEY NOT NULL, name, score, rank, grp); CREATE INDEX items_grp ON items(grp);");
    exec("BEGIN");
    sqlite3_stmt *insert = prepare("INSERT INTO items VALUES(?1, ?2, ?3, ?4, ?5)");
    for (int id = 1; id <= records; id++) {
        char name[48];
        snprintf(name, sizeof name, "item-%x-%d", id * 7919 % 1000000, id);
        sqlite3_bind_int64(insert, 1, id);
        sqlite3_bind_text(insert, 2, name, -1, SQLITE_TRANSIENT);
        sqlite3_bind_double(insert, 3, id * 0.5);
        sqlite3_bind_int64(insert, 4, id % 1000);
        sqlite3_bind_int64(insert, 5, (id - 1) / 100);
        run(insert);
    }
    sqlite3_finalize(insert);
    exec("COMMIT");
    select_group = prepare("SELECT id, name, score, rank, grp FROM items WHERE grp = ?1 ORDER BY id");
    begin = prepare("BEGIN DEFERRED");
    commit = prepare("COMMIT");
    schema_version = prepare("PRAGMA schema_version");

    static const char *names[] = {"", "1 raw (typed columns, nothing kept)", "2 + records kept in an array",
                                  "3 + BEGIN, PRAGMA schema_version, COMMIT", "4 + values typed by the row (the floor)"};
    if (only) {
        printf("line %d: checksum %ld\n", only, group_reads(only, reads, groups));
    } else {
        for (int round = 0; round < 3; round++) {
            for (int level = 1; level <= 4; level++) {
                double start = now();
                long sum = group_reads(level, reads, groups);
                double elapsed = now() - start;
                printf("%-44s %8.2f ms  %7.2f us/read  (checksum %ld)\n", names[level], elapsed * 1e3, elapsed * 1e6 / reads, sum);
            }
        }
    }
    sqlite3_finalize(select_group);
    sqlite3_finalize(begin);
    sqlite3_finalize(commit);
    sqlite3_finalize(schema_version);
    sqlite3_close(db);
    char wal[64], shm[64];
    snprintf(wal, sizeof wal, "%s-wal", path);
    snprintf(shm, sizeof shm, "%s-shm", path);
    unlink(path);
    unlink(wal);
    unlink(shm);
    return 0;
}
