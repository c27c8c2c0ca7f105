/*
** test_mapfile.c -- the guard of mapped files (mapfile.c): a view's pages
** that the file can no longer give (cut short after it was mapped) read
** as zeros instead of raising SIGBUS, on the thread that opened the map
** and on a worker thread alike; hsi_map_check names the first lost byte
** of a range and leaves the pages before it alone; hsi_map_lost tells a
** reader that keeps views; a slot used again starts clean; and a SIGBUS
** from memory that no map guards still kills the process, as it would
** without heapscript's handler.  A page the device cannot read while the
** file keeps its size (lostpage.h) is noted as lost, not cut, and only
** that page reads as zeros.
*/
#define _DEFAULT_SOURCE 1
#include "unit.h"
#include "heapscript.h"
#include "mapfile.h"
#include "thread.h"
#include "lostpage.h"
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[] = "/tmp/hs-mapfile-XXXXXX";
static size_t page;

/* A file of n pages, page k filled with byte k + 1. */
static void write_pages(const char *path, int n) {
  FILE *f = fopen(path, "wb");
  int k;
  CHECK(f != NULL);
  if (!f) return;
  for (k = 0; k < n; k++) {
    size_t i;
    for (i = 0; i < page; i++) fputc(k + 1, f);
  }
  fclose(f);
}

static void cut_to(const char *path, off_t size) { CHECK_EQ(truncate(path, size), 0); }

static void path_of(char *out, size_t n, const char *name) { snprintf(out, n, "%s/%s", dir, name); }

/* A file of n pages in the test's directory (its path in p), mapped. */
static void map_pages(hsi_map *m, char *p, size_t plen, const char *name, int n) {
  char err[256];
  path_of(p, plen, name);
  write_pages(p, n);
  CHECK_EQ(hsi_map_open(m, p, err, sizeof err), 0);
}

TEST(cut_pages_read_as_zeros) {
  char p[256], err[256];
  hsi_map m;
  uint64_t bad = 0;
  int cut = -1;
  map_pages(&m, p, sizeof p, "cut.bin", 8);
  CHECK(m.guard != 0);
  CHECK_EQ(hsi_map_check(&m, 0, m.size, &bad, &cut), 0);
  CHECK_EQ(hsi_map_lost(&m, &bad, &cut), 0);
  cut_to(p, (off_t)(2 * page + page / 2));          /* the end now inside page 2 */
  /* the pages the file still holds read as before, the one holding the
     new end too (zeros after the end, no fault) */
  CHECK_EQ(hsi_map_check(&m, 0, 3 * page, &bad, &cut), 0);
  CHECK_EQ(m.data[2 * page + page / 2 - 1], 3);
  /* a range reaching past it: its first lost byte, the file cut */
  CHECK_EQ(hsi_map_check(&m, page, 5 * page, &bad, &cut), -1);
  CHECK_EQ(bad, 3 * page);
  CHECK_EQ(cut, 1);
  /* every page past the end reads zeros now, and is still known lost */
  CHECK_EQ(m.data[7 * page + 5], 0);
  CHECK_EQ(hsi_map_check(&m, 6 * page + 1, 10, &bad, &cut), -1);
  CHECK_EQ(bad, 6 * page + 1);
  CHECK_EQ(hsi_map_check(&m, 0, 2 * page, &bad, &cut), 0);
  CHECK_EQ(hsi_map_lost(&m, &bad, &cut), 1);
  CHECK_EQ(bad, 3 * page);
  CHECK_EQ(cut, 1);
  hsi_map_close(&m);
  /* a map opened afterwards (the same slot, most likely) starts clean */
  write_pages(p, 4);
  CHECK_EQ(hsi_map_open(&m, p, err, sizeof err), 0);
  CHECK_EQ(hsi_map_check(&m, 0, m.size, &bad, &cut), 0);
  CHECK_EQ(hsi_map_lost(&m, &bad, &cut), 0);
  CHECK_EQ(m.data[3 * page], 4);
  hsi_map_close(&m);
}

/* A device error at page 3 of 8: that page is lost (not cut: the file
   has its size), reads as zeros, and the pages after it read as before. */
TEST(device_error_loses_one_page) {
  char p[256];
  hsi_map m;
  uint64_t bad = 0;
  int cut = -1;
  map_pages(&m, p, sizeof p, "device.bin", 8);
  CHECK_EQ(lose_page(p, 3 * page), 0);
  CHECK_EQ(hsi_map_check(&m, 0, 3 * page, &bad, &cut), 0);
  CHECK_EQ(hsi_map_check(&m, page, 5 * page, &bad, &cut), -1);
  CHECK_EQ(bad, 3 * page);
  CHECK_EQ(cut, 0);
  CHECK_EQ(m.data[3 * page + 7], 0);
  CHECK_EQ(m.data[4 * page], 5);                    /* the pages after it are the file's */
  CHECK_EQ(m.data[7 * page + page - 1], 8);
  CHECK_EQ(hsi_map_check(&m, 4 * page, 4 * page, &bad, &cut), 0);
  CHECK_EQ(hsi_map_lost(&m, &bad, &cut), 1);
  CHECK_EQ(bad, 3 * page);
  CHECK_EQ(cut, 0);
  hsi_map_close(&m);
}

/* Eight lost pages are as many ranges as a view notes (LOST): each is
   still told apart, and the pages between and after them are sound.
   Only a ninth puts the whole view in doubt. */
TEST(eight_lost_pages_still_told_apart) {
  char p[256];
  hsi_map m;
  uint64_t bad = 0;
  int cut = -1, k;
  map_pages(&m, p, sizeof p, "eight.bin", 20);
  for (k = 0; k < 8; k++) CHECK_EQ(lose_page(p, (uint64_t)(2 * k + 1) * page), 0);
  for (k = 0; k < 8; k++) {
    CHECK_EQ(hsi_map_check(&m, (uint64_t)(2 * k) * page, 2 * page, &bad, &cut), -1);
    CHECK_EQ(bad, (uint64_t)(2 * k + 1) * page);
  }
  CHECK_EQ(hsi_map_check(&m, 16 * page, 4 * page, &bad, &cut), 0);
  CHECK_EQ(hsi_map_check(&m, 2 * page, page, &bad, &cut), 0);
  CHECK_EQ(m.data[18 * page], 19);
  hsi_map_close(&m);
}

/* A worker reads past the end: the workers block the process's signals,
   but not the SIGBUS of their own reads (thread.h). */
typedef struct job { hsi_map *m; int sum; } job;

static HSI_THREAD_FN reader(void *arg) {
  job *j = (job *)arg;
  uint64_t k;
  for (k = 0; k < j->m->size; k += page) j->sum += j->m->data[k];
  return HSI_THREAD_RET;
}

TEST(worker_thread_read_past_the_end) {
  char p[256], err[256];
  hsi_map m;
  hsi_thread t;
  job j;
  uint64_t bad = 0;
  int cut = 0;
  path_of(p, sizeof p, "worker.bin");
  write_pages(p, 6);
  CHECK_EQ(hsi_map_open(&m, p, err, sizeof err), 0);
  cut_to(p, (off_t)(2 * page));
  j.m = &m;
  j.sum = 0;
  CHECK_EQ(hsi_th_start(&t, reader, &j), 0);
  hsi_th_join(t);
  CHECK_EQ(j.sum, 1 + 2);                           /* pages 0 and 1, then zeros */
  CHECK_EQ(hsi_map_lost(&m, &bad, &cut), 1);
  CHECK_EQ(bad, 2 * page);
  CHECK_EQ(cut, 1);
  hsi_map_close(&m);
}

/* Memory no map guards: the handler passes the fault on, and the process
   dies of SIGBUS as it would have (in a child; 0 if it read on, 3 and 4
   if it could not set up). */
TEST(unguarded_sigbus_still_kills) {
  char p[256], err[256];
  hsi_map m;
  pid_t pid;
  int status = 0;
  path_of(p, sizeof p, "plain.bin");
  write_pages(p, 2);
  CHECK_EQ(hsi_map_open(&m, p, err, sizeof err), 0);    /* the handler is installed */
  pid = fork();
  if (pid == 0) {
    int fd = open(p, O_RDONLY);
    const volatile uint8_t *v = mmap(NULL, 2 * page, PROT_READ, MAP_PRIVATE, fd, 0);
    if (fd < 0 || v == MAP_FAILED) _exit(3);
    if (ftruncate(open(p, O_RDWR), 0) != 0) _exit(4);
    (void)v[page];
    _exit(0);
  }
  CHECK(pid > 0);
  if (pid > 0) {
    CHECK_EQ(waitpid(pid, &status, 0), pid);
    /* killed by SIGBUS; under AddressSanitizer, whose handler came
       before ours, its report and exit status 1 */
    CHECK((WIFSIGNALED(status) && WTERMSIG(status) == SIGBUS) || (WIFEXITED(status) && WEXITSTATUS(status) == 1));
  }
  hsi_map_close(&m);
}

int main(void) {
  long ps = sysconf(_SC_PAGESIZE);
  char cmd[300];
  page = ps > 0 ? (size_t)ps : 4096;
  if (!mkdtemp(dir)) { perror("mkdtemp"); return 1; }
  RUN(cut_pages_read_as_zeros);
  RUN(device_error_loses_one_page);
  RUN(eight_lost_pages_still_told_apart);
  RUN(worker_thread_read_past_the_end);
  RUN(unguarded_sigbus_still_kills);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  return UNIT_DONE();
}
