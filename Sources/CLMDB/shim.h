#ifndef RESERVOIR_CLMDB_SHIM_H
#define RESERVOIR_CLMDB_SHIM_H

#include <lmdb.h>
#include <sys/file.h>

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

/// flock(2) without the variadic-free but macro-named operations.
static inline int clmdb_flock_exclusive(int fd) { return flock(fd, LOCK_EX); }
static inline int clmdb_flock_unlock(int fd) { return flock(fd, LOCK_UN); }

#endif
