/*
 * What a system call costs on this machine, beside the work it does: the size checks an LMDB
 * transaction makes at its start (Docs/Design/LMDB.md) are one system call each, and the point
 * read's time does not follow its instruction count because of it.
 *
 * Part 1: lseek(SEEK_END), fstat, ioctl(FIONREAD) and getppid on one open file, in a loop, first
 * with this process's one thread, then with a second thread idling (in a process of more than
 * one thread the kernel counts references to the open file, and lseek takes its position lock).
 * Part 2: getppid made under 0 to 32 pending calls that are not inlined, against the same calls
 * without it: the CPU mispredicts the return of every call pending when a system call was made.
 *
 *   cc -O2 -o /tmp/syscall_cost Benchmarks/LMDB/syscall_cost.c -lpthread
 *   /tmp/syscall_cost
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void *idle_thread(void *unused) {
    (void)unused;
    for (;;) pause();
    return NULL;
}

static void file_calls(int fd, const char *label) {
    const int n = 200000;
    long sum = 0;
    double t0 = now();
    for (int i = 0; i < n; i++) sum += lseek(fd, 0, SEEK_END);
    double t1 = now();
    struct stat status;
    for (int i = 0; i < n; i++) { fstat(fd, &status); sum += status.st_size; }
    double t2 = now();
    int unread;
    for (int i = 0; i < n; i++) { ioctl(fd, FIONREAD, &unread); sum += unread; }
    double t3 = now();
    for (int i = 0; i < n; i++) sum += getppid();
    double t4 = now();
    printf("%-12s lseek %.3f  fstat %.3f  FIONREAD %.3f  getppid %.3f us  (%ld)\n", label,
           (t1 - t0) / n * 1e6, (t2 - t1) / n * 1e6, (t3 - t2) / n * 1e6, (t4 - t3) / n * 1e6, sum & 1);
}

static int make_call;

/* `depth` calls, each kept a call (the empty asm after it), getppid made in the innermost. */
__attribute__((noinline)) static long nested(int depth) {
    if (depth == 0) return make_call ? getppid() : 1;
    long value = nested(depth - 1);
    __asm__ volatile ("" ::: "memory");
    return value + 1;
}

int main(void) {
    char path[] = "/tmp/syscall_cost.XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0 || ftruncate(fd, 8 << 20) != 0) { perror("scratch file"); return 1; }
    unlink(path);
    file_calls(fd, "one thread");
    pthread_t idler;
    if (pthread_create(&idler, NULL, idle_thread, NULL) != 0) { fprintf(stderr, "pthread_create failed\n"); return 1; }
    file_calls(fd, "two threads");
    static const int depths[] = {0, 1, 2, 3, 4, 6, 8, 16, 32};
    for (size_t d = 0; d < sizeof depths / sizeof depths[0]; d++) {
        int depth = depths[d];
        double cost[2];
        for (make_call = 0; make_call < 2; make_call++) {
            const int n = 500000;
            long sum = 0;
            double start = now();
            for (int i = 0; i < n; i++) sum += nested(depth);
            cost[make_call] = (now() - start) / n * 1e6;
            if (sum == 42) puts("");
        }
        printf("getppid under %2d pending calls: %.3f us (the calls alone %.3f us)\n", depth, cost[1] - cost[0], cost[0]);
    }
    return 0;
}
