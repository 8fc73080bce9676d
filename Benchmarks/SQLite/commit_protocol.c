/*
 * What a single-record commit must cost on SQLite under the backend's contract, in C alone:
 * the raw table side's commit (one UPDATE in autocommit) against the statements the backend's
 * writer runs for the same commit (Docs/Design/SQLite.md, Sources/ReservoirSQLite):
 *
 *   BEGIN IMMEDIATE                      the writer's transaction
 *   SELECT change, sequence, commit_id   the change log's head, read once per write: rows
 *     FROM _reservoir_changes            plain SQL left pending are numbered first
 *     ORDER BY change DESC LIMIT 1
 *   SELECT * FROM items WHERE id = ?1    the stored record: an update of a missing id is an
 *                                        error, one that changes nothing writes nothing, and
 *                                        the change set carries the old row
 *   INSERT … ON CONFLICT DO UPDATE       the record (a write replaces the whole row)
 *   INSERT INTO _reservoir_changes       the change set's log row (its sequence and commit id)
 *   COMMIT
 *
 * with the same tables: the entity table with its index on grp and the five change-log
 * triggers other SQLite clients fire (the writer connection turns triggers off, as the
 * backend's does), and _reservoir_changes with its partial index on sequence. WAL,
 * synchronous=NORMAL, as both sides of the table. Both halves run in one process, alternated
 * in rounds, on one database each.
 *
 *   cc -O2 -o /tmp/sqlite_commit_protocol Benchmarks/SQLite/commit_protocol.c -lsqlite3
 *   /tmp/sqlite_commit_protocol 100000 1000 5
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

static void check(sqlite3 *db, int rc, const char *what) {
    if (rc != SQLITE_OK && rc != SQLITE_DONE && rc != SQLITE_ROW) {
        fprintf(stderr, "%s: %s\n", what, sqlite3_errmsg(db));
        exit(1);
    }
}

static void exec(sqlite3 *db, const char *sql) {
    char *error = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &error) != SQLITE_OK) {
        fprintf(stderr, "%s: %s\n", sql, error);
        exit(1);
    }
}

static sqlite3_stmt *prepare(sqlite3 *db, const char *sql) {
    sqlite3_stmt *statement = NULL;
    check(db, sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &statement, NULL), sql);
    return statement;
}

static void run(sqlite3 *db, sqlite3_stmt *statement) {
    check(db, sqlite3_step(statement), sqlite3_sql(statement));
    sqlite3_reset(statement);
}

static const char *schema =
    "CREATE TABLE _reservoir_changes(change INTEGER PRIMARY KEY, entity TEXT NOT NULL, id, kind TEXT NOT NULL,"
    " sequence INTEGER, ids BLOB, commit_id INTEGER);"
    "CREATE INDEX _reservoir_changes_sequence ON _reservoir_changes(sequence) WHERE sequence IS NOT NULL;"
    "CREATE TABLE items(id INTEGER PRIMARY KEY NOT NULL, name, score, rank, grp);"
    "CREATE INDEX items_grp ON items(grp);"
    "CREATE TRIGGER log_existed BEFORE INSERT ON items WHEN EXISTS (SELECT 1 FROM items WHERE id = NEW.id)"
    " BEGIN INSERT INTO _reservoir_changes(entity, id, kind) VALUES('items', NEW.id, 'existed'); END;"
    "CREATE TRIGGER log_inserted AFTER INSERT ON items"
    " BEGIN INSERT INTO _reservoir_changes(entity, id, kind) VALUES('items', NEW.id, 'inserted'); END;"
    "CREATE TRIGGER log_updated AFTER UPDATE ON items WHEN OLD.id IS NEW.id"
    " BEGIN INSERT INTO _reservoir_changes(entity, id, kind) VALUES('items', NEW.id, 'updated'); END;"
    "CREATE TRIGGER log_deleted AFTER DELETE ON items"
    " BEGIN INSERT INTO _reservoir_changes(entity, id, kind) VALUES('items', OLD.id, 'deleted'); END;";

static sqlite3 *open_store(const char *path, int records) {
    sqlite3 *db = NULL;
    unlink(path);
    char wal[512];
    snprintf(wal, sizeof wal, "%s-wal", path);
    unlink(wal);
    snprintf(wal, sizeof wal, "%s-shm", path);
    unlink(wal);
    check(db, sqlite3_open(path, &db), "open");
    exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;");
    exec(db, schema);
    int enabled = 0;
    sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_TRIGGER, 0, &enabled);
    exec(db, "BEGIN");
    sqlite3_stmt *insert = prepare(db, "INSERT INTO items(id, name, score, rank, grp) VALUES(?1, ?2, ?3, ?4, ?5)");
    char name[32];
    for (int i = 0; i < records; i++) {
        snprintf(name, sizeof name, "name-%d", i);
        sqlite3_bind_int64(insert, 1, i);
        sqlite3_bind_text(insert, 2, name, -1, SQLITE_TRANSIENT);
        sqlite3_bind_double(insert, 3, i * 0.5);
        sqlite3_bind_int64(insert, 4, i % 1000);
        sqlite3_bind_int64(insert, 5, i / 100);
        run(db, insert);
    }
    sqlite3_finalize(insert);
    exec(db, "INSERT INTO _reservoir_changes(entity, kind, sequence, commit_id) VALUES('items', 'inserted', 1, 1)");
    exec(db, "COMMIT");
    return db;
}

static void bind_record(sqlite3_stmt *statement, int id, int round, int first) {
    char name[32];
    snprintf(name, sizeof name, "name-%d-%d", id, round);
    sqlite3_bind_int64(statement, first, id);
    sqlite3_bind_text(statement, first + 1, name, -1, SQLITE_TRANSIENT);
    sqlite3_bind_double(statement, first + 2, id * 0.25 + round);
    sqlite3_bind_int64(statement, first + 3, (id + round) % 1000);
    sqlite3_bind_int64(statement, first + 4, id / 100);
}

typedef struct {
    sqlite3 *db;
    sqlite3_stmt *update, *begin, *commit, *head, *previous, *upsert, *log;
} Sides;

/* The raw side: one UPDATE in autocommit per record. */
static __attribute__((noinline)) void raw_commits(Sides *s, int records, int commits, int round) {
    for (int i = 0; i < commits; i++) {
        int id = (int)(((int64_t)i * 7919) % records);
        bind_record(s->update, id, round, 1);
        run(s->db, s->update);
    }
}

/* The contract's statements per record. */
static __attribute__((noinline)) void protocol_commits(Sides *s, int records, int commits, int round) {
    for (int i = 0; i < commits; i++) {
        int id = (int)(((int64_t)i * 7919) % records);
        run(s->db, s->begin);
        check(s->db, sqlite3_step(s->head), "head");
        int64_t sequence = sqlite3_column_int64(s->head, 1) + 1;
        sqlite3_reset(s->head);
        sqlite3_bind_int64(s->previous, 1, id);
        if (sqlite3_step(s->previous) != SQLITE_ROW) { fprintf(stderr, "no record %d\n", id); exit(1); }
        for (int column = 0; column < sqlite3_column_count(s->previous); column++) {
            if (sqlite3_column_type(s->previous, column) == SQLITE_TEXT) (void)sqlite3_column_text(s->previous, column);
            else (void)sqlite3_column_int64(s->previous, column);
        }
        sqlite3_reset(s->previous);
        bind_record(s->upsert, id, round, 1);
        run(s->db, s->upsert);
        sqlite3_bind_text(s->log, 1, "items", -1, SQLITE_STATIC);
        sqlite3_bind_int64(s->log, 2, id);
        sqlite3_bind_text(s->log, 3, "updated", -1, SQLITE_STATIC);
        sqlite3_bind_null(s->log, 4);
        sqlite3_bind_int64(s->log, 5, sequence);
        sqlite3_bind_int64(s->log, 6, sequence * 2654435761);
        run(s->db, s->log);
        run(s->db, s->commit);
    }
}

int main(int argc, char **argv) {
    int records = argc > 1 ? atoi(argv[1]) : 100000;
    int commits = argc > 2 ? atoi(argv[2]) : 1000;
    int rounds = argc > 3 ? atoi(argv[3]) : 5;
    sqlite3 *raw = open_store("/tmp/commit_protocol_raw.sqlite", records);
    sqlite3 *store = open_store("/tmp/commit_protocol_store.sqlite", records);

    Sides rawSide = { .db = raw, .update = prepare(raw, "UPDATE items SET name = ?2, score = ?3, rank = ?4, grp = ?5 WHERE id = ?1") };
    Sides storeSide = {
        .db = store,
        .begin = prepare(store, "BEGIN IMMEDIATE"),
        .commit = prepare(store, "COMMIT"),
        .head = prepare(store, "SELECT change, sequence, commit_id FROM _reservoir_changes ORDER BY change DESC LIMIT 1"),
        .previous = prepare(store, "SELECT * FROM items WHERE id = ?1"),
        .upsert = prepare(store,
            "INSERT INTO items(id, name, score, rank, grp) VALUES(?1, ?2, ?3, ?4, ?5)"
            " ON CONFLICT(id) DO UPDATE SET name = excluded.name, score = excluded.score, rank = excluded.rank, grp = excluded.grp"),
        .log = prepare(store, "INSERT INTO _reservoir_changes(entity, id, kind, ids, sequence, commit_id) VALUES(?1, ?2, ?3, ?4, ?5, ?6)"),
    };
    printf("records %d, %d single-record commits a round, WAL, synchronous=NORMAL\n", records, commits);
    for (int round = 0; round < rounds; round++) {
        double start = now();
        raw_commits(&rawSide, records, commits, round);
        double rawTime = now() - start;
        start = now();
        protocol_commits(&storeSide, records, commits, round);
        double storeTime = now() - start;
        printf("round %d: raw UPDATE %.2f ms, contract's statements %.2f ms (%.2fx)\n",
               round + 1, rawTime * 1e3, storeTime * 1e3, storeTime / rawTime);
    }
    sqlite3_finalize(rawSide.update);
    sqlite3_stmt *statements[] = { storeSide.begin, storeSide.commit, storeSide.head, storeSide.previous, storeSide.upsert, storeSide.log };
    for (size_t i = 0; i < sizeof statements / sizeof *statements; i++) sqlite3_finalize(statements[i]);
    sqlite3_close(raw);
    sqlite3_close(store);
    return 0;
}
