/*
** test_merge.c -- hsi_merge keeps what it copies: every real trace merged
** alone gives back its records byte for byte (header fields, extended
** items, payload; one file keeps its clock, so its times too), and its
** logfile header's fields but those a merged file must change (the
** LogFileMode bits of the file's layout, RELOG; the logger and file names).
*/
#include "unit.h"
#include "corpus.h"
#include <dirent.h>
#include "heapscript.h"
#include "merge.h"
#include "writer.h"

/* The records merge copies: not the logfile headers (replaced), not
   MESSAGE and ERROR records (left out). */
static int next_copied(hs_reader *r, hs_event *ev) {
  int n;
  while ((n = hs_reader_next(r, ev)) == 1) {
    if (ev->header_type == HS_HT_MESSAGE || ev->header_type == HS_HT_ERROR) continue;
    if ((ev->flags & HS_EVF_KERNEL) && ev->hook == 0) continue;
    return 1;
  }
  return n;
}

/* Records of a and b that differ (at most 3 of them said); -1 when the
   two do not hold as many. */
static long differing(const char *name, const char *a, const char *b) {
  hs_reader *ra, *rb;
  hs_event ea, eb;
  char err[256];
  long bad = 0, k = 0;
  int na, nb;
  if (hs_reader_open(&ra, &a, 1, NULL, err, sizeof err) < 0) return -1;
  if (hs_reader_open(&rb, &b, 1, NULL, err, sizeof err) < 0) { hs_reader_close(ra); return -1; }
  while ((na = next_copied(ra, &ea)) == 1 && (nb = next_copied(rb, &eb)) == 1) {
    uint32_t i = 0;
    k++;
    if (ea.record_len == eb.record_len && memcmp(ea.record, eb.record, ea.record_len) == 0) continue;
    while (i < ea.record_len && i < eb.record_len && ea.record[i] == eb.record[i]) i++;
    if (bad++ < 3)
      fprintf(stderr, "%s: record %ld (%s, %u bytes, merged %u): differs at byte 0x%x: 0x%02x, merged 0x%02x\n",
              name, k, hs_header_type_name(ea.header_type), (unsigned)ea.record_len, (unsigned)eb.record_len, i,
              i < ea.record_len ? ea.record[i] : 0, i < eb.record_len ? eb.record[i] : 0);
  }
  if (na == 1) nb = next_copied(rb, &eb);
  else nb = next_copied(rb, &eb) == 1 ? 1 : 0;
  if (na == 1 || nb == 1) { fprintf(stderr, "%s: the merged file has %s records\n", name, na == 1 ? "fewer" : "more"); bad = -1; }
  hs_reader_close(ra);
  hs_reader_close(rb);
  return bad;
}

/* Fields of the logfile header of the trace `a` that its merge `b` has
   changed: 0 if none (the rest are said). */
static int header_changed(const char *name, const char *a, const char *b) {
  hs_reader *ra, *rb;
  const hs_logfile *x, *y;
  char err[256];
  int bad = 0;
  if (hs_reader_open(&ra, &a, 1, NULL, err, sizeof err) < 0) return -1;
  if (hs_reader_open(&rb, &b, 1, NULL, err, sizeof err) < 0) { hs_reader_close(ra); return -1; }
  x = hs_reader_logfile(ra, 0);
  y = hs_reader_logfile(rb, 0);
#define SAME(f) if (x->f != y->f) { bad++; fprintf(stderr, "%s: merged, its %s is %lld, was %lld\n", name, #f, \
                                               (long long)y->f, (long long)x->f); }
  SAME(version[0]) SAME(version[1]) SAME(os_build) SAME(cpus) SAME(timer_resolution) SAME(pointer_size)
  SAME(events_lost) SAME(buffers_lost) SAME(cpu_mhz) SAME(tz_bias) SAME(boot_time) SAME(perf_freq)
  SAME(start_time) SAME(clock_type) SAME(buffer_size)
#undef SAME
  {
    /* EndTime: the input's, or its last record's time when that is later
       (PerfView's relogged files have an EndTime before their last record) */
    hs_event ev;
    int64_t last = INT64_MIN, want;
    while (hs_reader_next(rb, &ev) == 1) if (ev.timestamp > last) last = ev.timestamp;
    want = hs_time_filetime(y, last);
    if (x->end_time > want) want = x->end_time;
    if (y->end_time != want) {
      bad++;
      fprintf(stderr, "%s: merged, its end_time is %lld, was %lld (the last record at %lld)\n", name,
              (long long)y->end_time, (long long)x->end_time, (long long)hs_time_filetime(y, last));
    }
  }
  if (memcmp(x->time_zone, y->time_zone, sizeof x->time_zone) != 0) { bad++; fprintf(stderr, "%s: merged, its time zone differs\n", name); }
  /* the modes that still hold (not those of the file's layout), and RELOG */
  if (y->log_file_mode != ((x->log_file_mode & ~0x1000072Eu & ~HS_LOGMODE_COMPRESSED) | 0x1u | HS_LOGMODE_RELOG)) {
    bad++;
    fprintf(stderr, "%s: merged, its LogFileMode is 0x%08x, was 0x%08x\n", name, (unsigned)y->log_file_mode,
            (unsigned)x->log_file_mode);
  }
  hs_reader_close(ra);
  hs_reader_close(rb);
  return bad;
}

TEST(test_records_kept) {
  char path[1024], out[1024], err[512];
  DIR *d;
  struct dirent *de;
  int files = 0;
  if (!corpus_path(path, sizeof path, "MANIFEST.tsv")) { unit_failed += corpus_absent("test_merge"); return; }
  path[strlen(path) - strlen("MANIFEST.tsv")] = 0;
  if (!(d = opendir(path))) { CHECK(!"corpus directory"); return; }
  unit_tmp_path(out, sizeof out, "merged.etl");
  while ((de = readdir(d)) != NULL) {
    const char *in = path, *n = de->d_name;
    char full[1024];
    hsi_merge_counts c;
    hs_reader *r;
    size_t l = strlen(n);
    long bad;
    if (l < 5 || strcmp(n + l - 4, ".etl") != 0) continue;
    snprintf(full, sizeof full, "%s%s", path, n);
    in = full;
    if (hs_reader_open(&r, &in, 1, NULL, err, sizeof err) < 0) continue;   /* not a trace (the damaged one) */
    hs_reader_close(r);
    if (hsi_merge(&in, 1, out, NULL, &c, err, sizeof err) != 0) continue;   /* damaged: test_merge.sh */
    files++;
    bad = differing(n, full, out);
    if (bad != 0) fprintf(stderr, "%s: %ld records differ after merge\n", n, bad);
    CHECK_EQ(bad, 0);
    CHECK_EQ(header_changed(n, full, out), 0);
  }
  closedir(d);
  remove(out);
  CHECK(files > 0);
}

int main(void) {
  RUN(test_records_kept);
  return UNIT_DONE();
}
