// Parallel callers for bench/runner.py's `parallel` workload: THREADS
// threads, each in a folder of its own under DIR, create FILES empty files
// (open O_CREAT|O_EXCL + close), then lstat each, then unlink each. The
// threads start each step together (a barrier) and the step's time is
// from the first thread's start to the last thread's end (each thread
// reads the clock itself: the main thread may be scheduled late). Before the stat step the
// kernel's dentries and inodes are dropped (as root; untimed), so that each
// lstat is a LOOKUP. Prints one JSON object: seconds for create, stat and
// unlink.
//
//   parallel DIR THREADS FILES

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char *root;
static int files;
static pthread_barrier_t barrier;

enum { steps = 3, most_threads = 256 };
static double starts[steps][most_threads], ends[steps][most_threads];
static const char *step_names[steps] = {"create", "stat", "unlink"};

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void fail(const char *what, const char *path) {
    fprintf(stderr, "parallel: %s %s: %s\n", what, path, strerror(errno));
    exit(1);
}

static void *worker(void *argument) {
    long index = (long)argument;
    char folder[4096], path[4200];
    snprintf(folder, sizeof folder, "%s/t%ld", root, index);
    if (mkdir(folder, 0755) != 0) fail("mkdir", folder);
    for (int step = 0; step < steps; step++) {
        pthread_barrier_wait(&barrier);
        starts[step][index] = now();
        for (int i = 0; i < files; i++) {
            snprintf(path, sizeof path, "%s/f%06d", folder, i);
            if (step == 0) {
                int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
                if (fd < 0) fail("open", path);
                close(fd);
            } else if (step == 1) {
                struct stat status;
                if (lstat(path, &status) != 0) fail("lstat", path);
            } else if (unlink(path) != 0) {
                fail("unlink", path);
            }
        }
        ends[step][index] = now();
        pthread_barrier_wait(&barrier);
    }
    if (rmdir(folder) != 0) fail("rmdir", folder);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: parallel DIR THREADS FILES\n");
        return 2;
    }
    root = argv[1];
    int threads = atoi(argv[2]);
    files = atoi(argv[3]);
    if (threads < 1 || threads > most_threads || files < 1) return 2;
    pthread_barrier_init(&barrier, NULL, threads + 1);
    pthread_t *ids = calloc(threads, sizeof *ids);
    for (long i = 0; i < threads; i++) pthread_create(&ids[i], NULL, worker, (void *)i);
    double seconds[steps];
    for (int step = 0; step < steps; step++) {
        if (step == 1) {
            sync();
            FILE *caches = fopen("/proc/sys/vm/drop_caches", "w");
            if (caches) {
                fputs("2\n", caches);
                fclose(caches);
            }
        }
        pthread_barrier_wait(&barrier);
        pthread_barrier_wait(&barrier);
        double first = starts[step][0], last = ends[step][0];
        for (int i = 1; i < threads; i++) {
            if (starts[step][i] < first) first = starts[step][i];
            if (ends[step][i] > last) last = ends[step][i];
        }
        seconds[step] = last - first;
    }
    for (int i = 0; i < threads; i++) pthread_join(ids[i], NULL);
    printf("{");
    for (int step = 0; step < steps; step++) printf("%s\"%s\": %.6f", step ? ", " : "", step_names[step], seconds[step]);
    printf("}\n");
    return 0;
}
