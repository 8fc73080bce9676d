/*
 * What a point read must cost on LMDB under the backend's contract, in C alone: the raw
 * table side's read (a read transaction renewed per read, mdb_get, the value's fields read)
 * against the same read with the checks the backend makes at every transaction's start
 * (Docs/Design/LMDB.md): data.mdb still holds the pages the newest meta page counts
 * (mdb_env_info, mdb_env_stat, and data.mdb's size by lseek on a descriptor of its own, or fstat
 * with FSTAT=1: a file truncated under an open store would fault the
 * process on its next page read), the list of named databases unchanged (mdb_stat of the
 * main database), and the map-resize gate (a mutex taken on entry and on exit).
 *
 * Each round runs four lines: the raw read, the read with the checks, and both again made
 * through two calls that are not inlined, as an app's read reaches the checks through a
 * library (the app's call into the store, the store's call into its backend). A system call
 * leaves the CPU mispredicting the return of every call pending when it was made, so the
 * checks' lseek costs more the deeper it is made. A second thread idles throughout, as a
 * store's change poller does (ONE_THREAD=1 leaves it out): in a process of more than one
 * thread, lseek takes the open file's position lock.
 *
 *   cc -O2 -o /tmp/read_protocol Benchmarks/LMDB/read_protocol.c -llmdb
 *   /tmp/read_protocol 100000
 */
#include <lmdb.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
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

static pthread_mutex_t gate = PTHREAD_MUTEX_INITIALIZER;
static long active;

/* data.mdb opened a second time, read-only, for its size (lseek(SEEK_END)), as the backend
 * does since c26385f; with FSTAT=1 in the environment, fstat on LMDB's descriptor instead, as it
 * did before. */
static int size_fd = -1;
static int use_fstat;

/* The backend's checks at a read transaction's start: truncation, named databases, gate. */
static int checks(MDB_env *env, MDB_txn *txn) {
    pthread_mutex_lock(&gate);
    active++;
    pthread_mutex_unlock(&gate);
    MDB_envinfo info;
    MDB_stat pages, named;
    long long size;
    if (mdb_env_info(env, &info) || mdb_env_stat(env, &pages)) return 1;
    if (use_fstat) {
        struct stat status;
        int fd;
        if (mdb_env_get_fd(env, &fd) || fstat(fd, &status)) return 1;
        size = status.st_size;
    } else {
        size = lseek(size_fd, 0, SEEK_END);
        if (size < 0) return 1;
    }
    if (size < (long long)(info.me_last_pgno + 1) * pages.ms_psize) return 1;
    if (mdb_stat(txn, 1 /* MAIN_DBI */, &named)) return 1;
    return named.ms_entries > 1000;
}

static void leave(void) {
    pthread_mutex_lock(&gate);
    active--;
    pthread_mutex_unlock(&gate);
}

/* One read: renew, the checks when `checked`, get, the value's fields, reset. */
static long read_one(MDB_env *env, MDB_txn *txn, MDB_dbi dbi, int id, int checked) {
    CHECK(mdb_txn_renew(txn));
    if (checked && checks(env, txn)) { fprintf(stderr, "check failed\n"); exit(1); }
    uint64_t key = big_endian(id);
    MDB_val k = {sizeof key, &key}, v;
    long value = 0;
    if (mdb_get(txn, dbi, &k, &v) == 0) {
        int64_t rank;
        memcpy(&rank, (char *)v.mv_data + 8, 8);
        value = rank + (long)v.mv_size;
    }
    if (checked) leave();
    mdb_txn_reset(txn);
    return value;
}

/* read_one behind two calls kept out of line (the empty asm after each call keeps it from
 * becoming a jump), as a library's read is reached. */
__attribute__((noinline)) static long backend_read(MDB_env *env, MDB_txn *txn, MDB_dbi dbi, int id, int checked) {
    long value = read_one(env, txn, dbi, id, checked);
    __asm__ volatile ("" ::: "memory");
    return value;
}

__attribute__((noinline)) static long store_read(MDB_env *env, MDB_txn *txn, MDB_dbi dbi, int id, int checked) {
    long value = backend_read(env, txn, dbi, id, checked);
    __asm__ volatile ("" ::: "memory");
    return value;
}

static void *idle_thread(void *unused) {
    (void)unused;
    for (;;) pause();
    return NULL;
}

int main(int argc, char **argv) {
    int records = argc > 1 ? atoi(argv[1]) : 100000;
    char path[] = "/tmp/read_protocol.XXXXXX";
    if (!mkdtemp(path)) { perror("mkdtemp"); return 1; }
    MDB_env *env;
    MDB_dbi dbi;
    CHECK(mdb_env_create(&env));
    CHECK(mdb_env_set_mapsize(env, 1UL << 30));
    CHECK(mdb_env_set_maxdbs(env, 4));
    CHECK(mdb_env_open(env, path, MDB_NOSYNC | MDB_NOTLS, 0644));
    MDB_txn *txn;
    CHECK(mdb_txn_begin(env, NULL, 0, &txn));
    CHECK(mdb_dbi_open(txn, "items", MDB_CREATE, &dbi));
    for (int id = 1; id <= records; id++) {
        uint64_t key = big_endian(id);
        char value[64];
        int length = snprintf(value + 24, sizeof value - 24, "item-%x-%d", id * 7919 % 1000000, id) + 24;
        memset(value, 0, 24);
        MDB_val k = {sizeof key, &key}, v = {(size_t)length, value};
        CHECK(mdb_put(txn, dbi, &k, &v, MDB_APPEND));
    }
    CHECK(mdb_txn_commit(txn));
    use_fstat = getenv("FSTAT") != NULL;
    char data[sizeof path + 16];
    snprintf(data, sizeof data, "%s/data.mdb", path);
    size_fd = open(data, O_RDONLY);
    if (size_fd < 0) { perror("open data.mdb"); return 1; }
    int *order = malloc(sizeof(int) * records);
    for (int i = 0; i < records; i++) order[i] = i + 1;
    srand(7);
    for (int i = records - 1; i > 0; i--) { int j = rand() % (i + 1); int t = order[i]; order[i] = order[j]; order[j] = t; }

    pthread_t idler;
    if (!getenv("ONE_THREAD") && pthread_create(&idler, NULL, idle_thread, NULL) != 0) { fprintf(stderr, "pthread_create failed\n"); return 1; }
    static const char *const names[4] = {
        "renew, get (the raw side)",
        "renew, checks (truncation, named dbs, gate), get",
        "the raw read, two calls deep",
        "the checked read, two calls deep",
    };
    for (int round = 0; round < 3; round++) {
        for (int line = 0; line < 4; line++) {
            int checked = line % 2, deep = line / 2;
            CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
            mdb_txn_reset(txn);
            long sum = 0;
            double start = now();
            for (int i = 0; i < records; i++) {
                sum += deep ? store_read(env, txn, dbi, order[i], checked) : read_one(env, txn, dbi, order[i], checked);
            }
            double elapsed = now() - start;
            mdb_txn_abort(txn);
            printf("%-50s %8.1f ms  %6.3f us/read  (checksum %ld)\n",
                   names[line], elapsed * 1e3, elapsed * 1e6 / records, sum);
        }
    }
    mdb_env_close(env);
    char command[128];
    snprintf(command, sizeof command, "rm -rf %s", path);
    return system(command) == 0 ? 0 : 1;
}
