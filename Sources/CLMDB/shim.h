#ifndef RESERVOIR_CLMDB_SHIM_H
#define RESERVOIR_CLMDB_SHIM_H

#include <lmdb.h>
#include <errno.h>
#include <sys/file.h>
#include <unistd.h>

// LMDB's flags and result codes are macros; Swift imports them as Int32 while the
// functions take `unsigned int`. These typed constants keep the Swift side cast-free.

static const unsigned int CLMDB_NOTLS = MDB_NOTLS;
static const unsigned int CLMDB_NOSYNC = MDB_NOSYNC;
static const unsigned int CLMDB_NOMETASYNC = MDB_NOMETASYNC;
static const unsigned int CLMDB_RDONLY = MDB_RDONLY;
static const unsigned int CLMDB_NOLOCK = MDB_NOLOCK;
static const unsigned int CLMDB_CREATE = MDB_CREATE;
static const unsigned int CLMDB_NOOVERWRITE = MDB_NOOVERWRITE;
static const unsigned int CLMDB_APPEND = MDB_APPEND;

static const int CLMDB_SUCCESS = MDB_SUCCESS;
static const int CLMDB_NOTFOUND = MDB_NOTFOUND;
static const int CLMDB_MAP_FULL = MDB_MAP_FULL;
static const int CLMDB_MAP_RESIZED = MDB_MAP_RESIZED;
static const int CLMDB_READERS_FULL = MDB_READERS_FULL;
static const int CLMDB_TXN_FULL = MDB_TXN_FULL;
static const int CLMDB_INVALID = MDB_INVALID;
static const int CLMDB_VERSION_MISMATCH = MDB_VERSION_MISMATCH;
static const int CLMDB_CORRUPTED = MDB_CORRUPTED;
static const int CLMDB_PAGE_NOTFOUND = MDB_PAGE_NOTFOUND;
static const int CLMDB_PANIC = MDB_PANIC;
static const int CLMDB_BAD_VALSIZE = MDB_BAD_VALSIZE;
static const int CLMDB_DBS_FULL = MDB_DBS_FULL;

/// The handle of the unnamed main database, which lists the named ones.
static const unsigned int CLMDB_MAIN_DBI = 1;

/// Asks the CPU to start loading the cache line at `address`: a fetch visits rows in sort
/// order, scattered over the map, and knows several rows ahead which it will read next.
static inline void clmdb_prefetch(const void *address) {
#if defined(__GNUC__) || defined(__clang__)
    __builtin_prefetch(address);
#endif
}

/// An MDB_val over `size` bytes at `data`.
static inline MDB_val clmdb_val(const void *data, size_t size) {
    MDB_val value;
    value.mv_size = size;
    value.mv_data = (void *)data;
    return value;
}

/// lseek(fd, 0, SEEK_END): the size of the file open as `fd` (and its offset moved there), or
/// -1 with errno set. On x86-64 Linux the system call is made inline rather than through
/// libc's `lseek`: it runs once per LMDB transaction, and a system call leaves the CPU
/// mispredicting the return of every call pending when it was made, the wrapper's included.
static inline long long clmdb_file_end(int fd) {
#if defined(__linux__) && defined(__x86_64__) && !defined(__ILP32__)
    long result;
    __asm__ volatile ("syscall"
                      : "=a"(result)
                      : "0"(8L /* __NR_lseek */), "D"((long)fd), "S"(0L), "d"(2L /* SEEK_END */)
                      : "rcx", "r11", "memory");
    if (result < 0 && result > -4096) {
        errno = (int)-result;
        return -1;
    }
    return result;
#else
    return (long long)lseek(fd, 0, SEEK_END);
#endif
}

/// flock(2) without the variadic-free but macro-named operations.
static inline int clmdb_flock_exclusive(int fd) { return flock(fd, LOCK_EX); }
static inline int clmdb_flock_unlock(int fd) { return flock(fd, LOCK_UN); }

#endif
