/*
 * What a single-record commit must cost on LMDB under the backend's contract, in C alone.
 * Each commit updates one stored record (the table's "1,000 single-record commits": its old
 * row read, its index entry moved, the row replaced), in one write transaction, MDB_NOSYNC as
 * both table sides run. The steps are added one at a time, so each line shows what the one it
 * adds costs:
 *
 *   1. raw: the table's raw side (mdb_get of the old row, the index entry deleted and put,
 *      the row put, commit);
 *   2. + the change-log record: the change set's record under its sequence in `log` (about
 *      40 bytes: ids grouped by entity and kind, the commit's identity), in the same
 *      transaction; every 64 commits the holds record is read from `meta` and the log trimmed
 *      to the retention (10,000 change sets, the default);
 *   3. + the writer locks: a mutex in the process and flock(LOCK_EX) on reservoir-writer.lock,
 *      held for the whole write (map growth aborts the LMDB transaction and begins again; no
 *      other process may commit between), and unlocked after;
 *   4. + a replaced or deleted file (`.gone`): one stat of the environment's directory, its
 *      identity and times compared with those seen when the three files were last found
 *      unchanged (the backend's DirectoryFiles, since f8a771f; a directory whose times moved has
 *      its files checked one by one, which no commit here meets). THREE_STATS=1 makes this
 *      line stat data.mdb, lock.mdb and the writer lock instead, as the backend did before;
 *   5. + the checks every transaction's start makes: data.mdb not truncated (mdb_env_info,
 *      mdb_env_stat, lseek on a descriptor of data.mdb's own, or fstat with FSTAT=1), each
 *      committed named database this write uses still there (one mdb_get in the main database
 *      for the rows, index and log databases: another process's migration may have deleted
 *      one), unless the write begins on this process's own last commit (its transaction id one
 *      more than that commit's: no process committed in between, so none deleted a database),
 *      which in this loop every write does (EVERY_WRITE_CHECKS=1 checks in every write, as the
 *      backend did before), and after the commit whether it was published (mdb_env_info, to
 *      cache the newest sequence under the right transaction id);
 *   6. + the commit signal: the store watches data.mdb for other processes' commits, and the
 *      kernel charges each write to a watched file for its event. As the backend's
 *      FileChangeWatch does: a watch of data.mdb that removes itself at its first event
 *      (IN_ONESHOT), set again by a reading thread after each read, which then rests 100 µs
 *      (DIRECTORY_WATCH=1: a watch of the directory asking for writes, set once, as the backend
 *      had before, whose every pwrite queues an event);
 *   7. + the commit's identity from getrandom(2), as the library made it before 7315b0d
 *      (`CommitPosition.newIdentity`, `UInt64.random`), where 1 to 6 number identities from a
 *      per-process random seed, which would serve as well.
 *
 * Line 6 is the floor: what the contract makes every commit do. Line 7 is what the library's
 * identity added before 7315b0d.
 *
 *   cc -O2 -o /tmp/commit_protocol Benchmarks/LMDB/commit_protocol.c -llmdb -lpthread
 *   /tmp/commit_protocol 1000 100000
 *
 * A third argument runs that line alone, once (for instruction counts: callgrind's inclusive
 * count of `commit`, divided by the commits):
 *
 *   valgrind --tool=callgrind /tmp/commit_protocol 1000 20000 5
 */
#include <errno.h>
#include <fcntl.h>
#include <lmdb.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CHECK(call) do { int rc_ = (call); if (rc_) { fprintf(stderr, "%s: %s\n", #call, mdb_strerror(rc_)); exit(1); } } while (0)

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static uint64_t big_endian(uint64_t value) { return __builtin_bswap64(value); }

static MDB_env *env;
static MDB_dbi meta, log_db, rows, group_index;
static char path[] = "/tmp/commit_protocol.XXXXXX";
static pthread_mutex_t writer_mutex = PTHREAD_MUTEX_INITIALIZER;
static int writer_lock;
static const char *file_names[3] = {"data.mdb", "lock.mdb", "reservoir-writer.lock"};
static char file_paths[3][256];
static struct stat file_ids[3];
static uint64_t sequence, identity_seed, identity_counter;

/* A row as the backend stores it: version, layout, then tagged fields (id, name, score, rank, group). */
static size_t encode_row(unsigned char *row, uint64_t id, uint64_t group, uint64_t rank) {
    size_t n = 0;
    row[n++] = 2;
    row[n++] = 1;
    row[n++] = 1; row[n++] = (unsigned char)(id & 0x7f);
    char name[16];
    int length = snprintf(name, sizeof name, "item-%06llu", (unsigned long long)(id % 1000000));
    row[n++] = 3; row[n++] = (unsigned char)length; memcpy(row + n, name, (size_t)length); n += (size_t)length;
    row[n++] = 2; memcpy(row + n, &rank, 8); n += 8;
    row[n++] = 1; memcpy(row + n, &rank, 8); n += 8;
    row[n++] = 1; memcpy(row + n, &group, 8); n += 8;
    return n;
}

static void index_key(unsigned char key[16], uint64_t group, uint64_t id) {
    uint64_t g = big_endian(group), i = big_endian(id);
    memcpy(key, &g, 8);
    memcpy(key + 8, &i, 8);
}

static uint64_t read_group(const MDB_val *row) {
    uint64_t group;
    memcpy(&group, (const char *)row->mv_data + row->mv_size - 8, 8);
    return group;
}

/* The transaction id of this process's last published commit (see line 5 in the header), and
   whether EVERY_WRITE_CHECKS asks for the checks in every write (read once: getenv in the loop
   would be timed with it). */
static size_t confirmed_at;
static int every_write_checks;

static void named_database_still_there(MDB_txn *txn, const char *name) {
    MDB_dbi main_db;
    CHECK(mdb_dbi_open(txn, NULL, 0, &main_db));
    MDB_val k = {strlen(name), (void *)name}, v;
    int rc = mdb_get(txn, main_db, &k, &v);
    if (rc != 0 && rc != MDB_INCOMPATIBLE) { fprintf(stderr, "%s is gone\n", name); exit(1); }
}

static struct stat directory_settled;
static int three_stats;  /* THREE_STATS, read once in main */

static void files_unchanged(void) {
    if (!three_stats) {
        struct stat status;
        if (stat(path, &status)) { perror("stat"); exit(1); }
        if (status.st_dev == directory_settled.st_dev && status.st_ino == directory_settled.st_ino
            && status.st_ctim.tv_sec == directory_settled.st_ctim.tv_sec && status.st_ctim.tv_nsec == directory_settled.st_ctim.tv_nsec
            && status.st_mtim.tv_sec == directory_settled.st_mtim.tv_sec && status.st_mtim.tv_nsec == directory_settled.st_mtim.tv_nsec) {
            return;
        }
    }
    for (int i = 0; i < 3; i++) {
        struct stat status;
        if (stat(file_paths[i], &status) || status.st_dev != file_ids[i].st_dev || status.st_ino != file_ids[i].st_ino) {
            fprintf(stderr, "%s was replaced\n", file_names[i]);
            exit(1);
        }
    }
}

/* data.mdb opened a second time for its size, as the backend does since c26385f (lseek on it
   costs a third of an fstat); FSTAT=1 in the environment asks LMDB's descriptor with fstat, as
   the backend did before. */
static int size_fd = -1;

static void not_truncated(void) {
    MDB_envinfo info;
    MDB_stat pages;
    long long size;
    CHECK(mdb_env_info(env, &info));
    CHECK(mdb_env_stat(env, &pages));
    if (size_fd < 0) {
        struct stat status;
        int fd;
        CHECK(mdb_env_get_fd(env, &fd));
        size = fstat(fd, &status) ? -1 : (long long)status.st_size;
    } else {
        size = lseek(size_fd, 0, SEEK_END);
    }
    if (size < (long long)(info.me_last_pgno + 1) * pages.ms_psize) {
        /* The backend then walks the newest free list (PageCheck.missingPagesAreFree); a sound
           file ends short only by loose pages, rare enough not to time here. */
    }
}

/* The commit signal of line 6 (see the header). */
static int inotify_fd = -1;
static int watching;  /* read and written atomically: the reading thread sets the watch again only while set */
static char data_path[256];
static const uint32_t file_mask = IN_MODIFY | IN_CLOSE_WRITE | IN_ONESHOT;

static void *read_events(void *unused) {
    (void)unused;
    char buffer[4096];
    for (;;) {
        ssize_t n = read(inotify_fd, buffer, sizeof buffer);
        if (n < 0 && errno != EINTR) return NULL;
        if (__atomic_load_n(&watching, __ATOMIC_ACQUIRE) == 1 && inotify_add_watch(inotify_fd, data_path, file_mask) < 0) {
            perror("inotify_add_watch"); exit(1);
        }
        usleep(100);
    }
}

static void watch_data_file(int on) {
    static int watch = -1;
    if (on) {
        int directory = getenv("DIRECTORY_WATCH") != NULL;
        __atomic_store_n(&watching, directory ? 2 : 1, __ATOMIC_RELEASE);
        watch = directory ? inotify_add_watch(inotify_fd, path, IN_MODIFY | IN_CLOSE_WRITE | IN_CREATE | IN_MOVED_TO | IN_DELETE)
                          : inotify_add_watch(inotify_fd, data_path, file_mask);
        if (watch < 0) { perror("inotify_add_watch"); exit(1); }
    } else {
        __atomic_store_n(&watching, 0, __ATOMIC_RELEASE);
        /* A one-shot watch may have removed itself, or been set again under another number: the
           data file's watch is asked for again, then removed. */
        inotify_rm_watch(inotify_fd, watch);
        int again = inotify_add_watch(inotify_fd, data_path, IN_MODIFY);
        if (again >= 0) inotify_rm_watch(inotify_fd, again);
    }
}

static uint64_t new_identity(int from_getrandom) {
    uint64_t random;
    if (from_getrandom) {
        if (getrandom(&random, sizeof random, 0) != sizeof random) { perror("getrandom"); exit(1); }
    } else {
        random = identity_seed + ++identity_counter;
    }
    random &= UINT64_MAX >> 1;
    if (random == 0) random = 1;
    return random << 1 | 1;
}

/* One commit updating record `id` to group `group`, with steps 2 to `level` of the header. */
__attribute__((noinline)) static void commit(int level, uint64_t id, uint64_t group, uint64_t rank) {
    if (level >= 3) {
        pthread_mutex_lock(&writer_mutex);
        while (flock(writer_lock, LOCK_EX) != 0) if (errno != EINTR) { perror("flock"); exit(1); }
    }
    if (level >= 4) files_unchanged();
    MDB_txn *txn;
    CHECK(mdb_txn_begin(env, NULL, 0, &txn));
    if (level >= 5) {
        not_truncated();
        if (mdb_txn_id(txn) != confirmed_at + 1 || every_write_checks) {
            named_database_still_there(txn, "rows/BenchRecord");
            named_database_still_there(txn, "index/BenchRecord/group");
            named_database_still_there(txn, "log");
        }
    }
    uint64_t key = big_endian(id);
    MDB_val k = {sizeof key, &key}, old;
    CHECK(mdb_get(txn, rows, &k, &old));
    unsigned char entry[16];
    index_key(entry, read_group(&old), id);
    MDB_val ek = {sizeof entry, entry}, empty = {0, NULL};
    CHECK(mdb_del(txn, group_index, &ek, NULL));
    unsigned char row[64];
    MDB_val v = {encode_row(row, id, group, rank), row};
    CHECK(mdb_put(txn, rows, &k, &v, 0));
    index_key(entry, group, id);
    CHECK(mdb_put(txn, group_index, &ek, &empty, 0));
    if (level >= 2) {
        /* The change-log record: version, identity, one entity's name and one updated id. */
        sequence++;
        unsigned char record[48];
        size_t n = 0;
        record[n++] = 4;
        uint64_t identity = new_identity(level >= 7);
        memcpy(record + n, &identity, 8); n += 8;
        record[n++] = 11; memcpy(record + n, "BenchRecord", 11); n += 11;
        record[n++] = 2; record[n++] = 1; record[n++] = 9;
        record[n++] = 0x13; memcpy(record + n, &key, 8); n += 8;
        uint64_t log_key = big_endian(sequence);
        MDB_val lk = {sizeof log_key, &log_key}, lv = {n, record};
        CHECK(mdb_put(txn, log_db, &lk, &lv, MDB_APPEND));
        if (sequence % 64 == 0) {
            MDB_val hk = {19, "data/history.holds"}, hv;
            int rc = mdb_get(txn, meta, &hk, &hv);
            if (rc != 0 && rc != MDB_NOTFOUND) CHECK(rc);
            if (sequence > 10000) {
                MDB_cursor *cursor;
                CHECK(mdb_cursor_open(txn, log_db, &cursor));
                MDB_val ck, cv;
                while (mdb_cursor_get(cursor, &ck, &cv, MDB_FIRST) == 0) {
                    uint64_t number;
                    memcpy(&number, ck.mv_data, 8);
                    if (big_endian(number) > sequence - 10000) break;
                    CHECK(mdb_cursor_del(cursor, 0));
                }
                mdb_cursor_close(cursor);
            }
        }
    }
    size_t id_of_write = mdb_txn_id(txn);
    CHECK(mdb_txn_commit(txn));
    if (level >= 5) {
        MDB_envinfo info;
        CHECK(mdb_env_info(env, &info));
        if (info.me_last_txnid == id_of_write) confirmed_at = id_of_write;
    }
    if (level >= 3) {
        flock(writer_lock, LOCK_UN);
        pthread_mutex_unlock(&writer_mutex);
    }
}

int main(int argc, char **argv) {
    int commits = argc > 1 ? atoi(argv[1]) : 1000;
    int records = argc > 2 ? atoi(argv[2]) : 100000;
    int only = argc > 3 ? atoi(argv[3]) : 0;
    if (!mkdtemp(path)) { perror("mkdtemp"); return 1; }
    CHECK(mdb_env_create(&env));
    CHECK(mdb_env_set_mapsize(env, 4UL << 30));
    CHECK(mdb_env_set_maxdbs(env, 8));
    CHECK(mdb_env_open(env, path, MDB_NOSYNC | MDB_NOTLS, 0644));
    char lock_path[256];
    snprintf(lock_path, sizeof lock_path, "%s/reservoir-writer.lock", path);
    writer_lock = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (writer_lock < 0) { perror("open"); return 1; }
    for (int i = 0; i < 3; i++) {
        snprintf(file_paths[i], sizeof file_paths[i], "%s/%s", path, file_names[i]);
        if (stat(file_paths[i], &file_ids[i])) { perror("stat"); return 1; }
    }
    if (getrandom(&identity_seed, sizeof identity_seed, 0) != sizeof identity_seed) { perror("getrandom"); return 1; }
    if (stat(path, &directory_settled)) { perror("stat"); return 1; }  /* nothing changes its entries later */
    every_write_checks = getenv("EVERY_WRITE_CHECKS") != NULL;
    three_stats = getenv("THREE_STATS") != NULL;
    snprintf(data_path, sizeof data_path, "%s/data.mdb", path);
    inotify_fd = inotify_init1(IN_CLOEXEC);
    if (inotify_fd < 0) { perror("inotify_init1"); return 1; }
    pthread_t reader;
    if (pthread_create(&reader, NULL, read_events, NULL)) { perror("pthread_create"); return 1; }
    if (!getenv("FSTAT")) {
        size_fd = open(data_path, O_RDONLY | O_CLOEXEC);
        if (size_fd < 0) { perror("open data.mdb"); return 1; }
    }

    MDB_txn *txn;
    CHECK(mdb_txn_begin(env, NULL, 0, &txn));
    CHECK(mdb_dbi_open(txn, "meta", MDB_CREATE, &meta));
    CHECK(mdb_dbi_open(txn, "log", MDB_CREATE, &log_db));
    CHECK(mdb_dbi_open(txn, "rows/BenchRecord", MDB_CREATE, &rows));
    CHECK(mdb_dbi_open(txn, "index/BenchRecord/group", MDB_CREATE, &group_index));
    for (uint64_t id = 1; id <= (uint64_t)records; id++) {
        uint64_t key = big_endian(id);
        unsigned char row[64], entry[16];
        MDB_val k = {sizeof key, &key}, v = {encode_row(row, id, (id - 1) / 100, id % 1000), row};
        CHECK(mdb_put(txn, rows, &k, &v, MDB_APPEND));
        index_key(entry, (id - 1) / 100, id);
        MDB_val ek = {sizeof entry, entry}, empty = {0, NULL};
        CHECK(mdb_put(txn, group_index, &ek, &empty, 0));
    }
    CHECK(mdb_txn_commit(txn));

    /* Each round updates the same spread of records (every records/commits-th) to new values. */
    static const char *names[] = {"", "1 raw (get, index del/put, row put, commit)", "2 + change-log record (and trim every 64)",
                                  "3 + writer mutex and flock", "4 + replaced files (directory stat; THREE_STATS=1: x3)",
                                  "5 + truncation, named dbs, published", "6 + commit signal (inotify on data.mdb): floor",
                                  "7 + getrandom identity (before 7315b0d)"};
    uint64_t round_number = 0;
    for (int pass = 0; pass < (only ? 1 : 3); pass++) {
        for (int level = only ? only : 1; level <= (only ? only : 7); level++) {
            round_number++;
            if (level == 6 || (only && level > 6)) watch_data_file(1);
            double start = now();
            for (int i = 0; i < commits; i++) {
                uint64_t id = 1 + (uint64_t)i * (uint64_t)(records / commits);
                commit(level, id, (id - 1) / 100 + round_number % 2, round_number * 7 + (uint64_t)i);
            }
            double elapsed = now() - start;
            if (level == 7 || (only && level >= 6)) watch_data_file(0);
            printf("%-48s %8.2f ms  %6.2f us/commit\n", names[level], elapsed * 1e3, elapsed * 1e6 / commits);
        }
    }
    mdb_env_close(env);
    close(writer_lock);
    char command[128];
    snprintf(command, sizeof command, "rm -rf %s", path);
    return system(command) == 0 ? 0 : 1;
}
