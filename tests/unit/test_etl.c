/*
** test_etl.c -- the container rules no corpus file exercises, on traces
** written by the project's writer and then patched byte by byte as real
** files can be: BuffersWritten smaller than the buffers held, a buffer-0
** tail with repeated and with unique records, a 0xFFFFFFFF end marker,
** a circular logger's wrapped buffers, merged files, per-CPU ordering,
** damage reports with offsets, a mapped buffer the device cannot read.
*/
#include "unit.h"
#include "heapscript.h"
#include "bytes.h"
#include "writer.h"
#include "source.h"
#ifndef _WIN32
#include "lostpage.h"
#endif

static char path[512];
static uint8_t *img;
static size_t imglen;

static const char *tmp_path(const char *name) {
  return unit_tmp_path(path, sizeof path, "etl-%s.etl", name);
}

static void load(const char *p) {
  FILE *f = fopen(p, "rb");
  long n;
  free(img);
  img = NULL;
  imglen = 0;
  if (!f) return;
  fseek(f, 0, SEEK_END);
  n = ftell(f);
  fseek(f, 0, SEEK_SET);
  img = (uint8_t *)malloc((size_t)n);
  if (img && fread(img, 1, (size_t)n, f) == (size_t)n) imglen = (size_t)n;
  fclose(f);
}

/* The first len bytes of img back into path. */
static void save(size_t len) {
  FILE *f = fopen(path, "wb");
  CHECK(f != NULL);
  if (!f) return;
  CHECK_EQ(fwrite(img, 1, len, f), len);
  fclose(f);
}

/* cpus CPUs, n events per CPU at timestamps 100 + 10*i + cpu, buffers of bufsize bytes. */
static int write_trace_in(const char *p, int cpus, int n, uint32_t mode, int64_t t0, uint32_t bufsize) {
  hsi_writer *w;
  hsi_writer_opts o;
  int i, c;
  uint8_t pl[40];
  memset(&o, 0, sizeof o);
  o.cpus = (uint32_t)cpus; o.buffer_size = bufsize; o.log_file_mode = mode; o.start_ticks = t0;
  if (hsi_writer_open(&w, p, &o, NULL, 0)) return -1;
  for (i = 0; i < n; i++)
    for (c = 0; c < cpus; c++) {
      memset(pl, 0, sizeof pl);
      wr32(pl, (uint32_t)(i * cpus + c));
      hsi_writer_kernel(w, c, HS_HT_SYSTEM64, 0x05, 36, 2, 4, (uint32_t)(1000 + c), t0 + 100 + 10 * i + c, pl, sizeof pl);
    }
  return hsi_writer_close(w);
}

/* The same with 1 KiB buffers. */
static int write_trace(const char *p, int cpus, int n, uint32_t mode, int64_t t0) {
  return write_trace_in(p, cpus, n, mode, t0, 1024);
}

typedef struct walk {
  uint64_t n, damage;
  int64_t last_ts;
  int ordered;
  uint64_t first_damage;
} walk;

static void on_damage(void *ud, const hs_damage *d) {
  walk *w = (walk *)ud;
  if (w->damage++ == 0) w->first_damage = d->pos;
}

static walk read_mem(const uint8_t *data, size_t len, int *rc) {
  hs_reader *r;
  hs_event ev;
  hs_reader_opts o;
  walk w;
  memset(&w, 0, sizeof w);
  memset(&o, 0, sizeof o);
  o.on_damage = on_damage; o.ud = &w;
  w.ordered = 1;
  w.last_ts = INT64_MIN;
  *rc = hs_reader_open_mem(&r, data, len, "mem.etl", &o, NULL, 0);
  if (*rc) return w;
  while (hs_reader_next(r, &ev) == 1) {
    if (ev.timestamp < w.last_ts) w.ordered = 0;
    w.last_ts = ev.timestamp;
    w.n++;
  }
  hs_reader_close(r);
  return w;
}

/* Offset of buffer k (buffers are back to back, each its own BufferSize). */
static size_t buffer_at(int k) {
  size_t pos = 0;
  while (k-- > 0 && pos + 4 <= imglen) pos += rd32(img + pos);
  return pos;
}

TEST(buffers_written_is_not_trusted) {
  int rc;
  walk w;
  CHECK_EQ(write_trace(tmp_path("bw"), 2, 200, 0, 0), 0);
  load(path);
  w = read_mem(img, imglen, &rc);
  CHECK_EQ(rc, 0); CHECK_EQ(w.n, 401); CHECK(w.ordered); CHECK_EQ(w.damage, 0);
  wr32(img + 0x48 + 0x20 + 0x24, 1);          /* BuffersWritten = 1, as a never-stopped logger */
  w = read_mem(img, imglen, &rc);
  CHECK_EQ(w.n, 401);
  remove(path);
}

TEST(merged_per_cpu_order_and_ties) {
  hs_reader *r;
  hs_event ev;
  int64_t last = -1;
  int last_cpu = -1, ok = 1;
  uint64_t n = 0;
  CHECK_EQ(write_trace(tmp_path("cpu"), 4, 100, 0, 0), 0);
  {
    const char *p = path;
    CHECK_EQ(hs_reader_open(&r, &p, 1, NULL, NULL, 0), 0);
  }
  while (hs_reader_next(r, &ev) == 1) {
    n++;
    if (ev.hook != 0x0524) continue;
    /* timestamps 100 + 10i + cpu: strictly increasing in merged order */
    if (ev.timestamp <= last || ev.cpu != (uint16_t)((ev.timestamp - 100) % 10)) ok = 0;
    if (rd32(ev.payload) != (uint32_t)((ev.timestamp - 100) / 10 * 4 + ev.cpu)) ok = 0;
    last = ev.timestamp;
    last_cpu = ev.cpu;
  }
  CHECK(ok); CHECK_EQ(n, 401); CHECK_EQ(last_cpu, 3);
  hs_reader_close(r);
  remove(path);
}

/*
** Many CPUs (the tournament, not the scan of a few streams) and ties:
** 37 CPUs whose events share timestamps with each other's and with their
** own neighbours' (steps of 0, 1 or 2 ticks), 1 KiB buffers.  Merged, the
** events come in (timestamp, CPU) order and each CPU's in its own order,
** all of them, with the decoding workers and without.
*/
TEST(many_cpus_ties_in_order) {
  enum { NC = 37, NE = 300 };
  hsi_writer *w;
  hsi_writer_opts o;
  int64_t ts[NC];
  uint32_t seq[NC];
  unsigned x = 12345;
  int i, c, pass;
  uint8_t pl[8];
  memset(&o, 0, sizeof o);
  o.cpus = NC; o.buffer_size = 1024;
  CHECK_EQ(hsi_writer_open(&w, tmp_path("many"), &o, NULL, 0), 0);
  for (c = 0; c < NC; c++) ts[c] = 1000;
  for (i = 0; i < NE; i++)
    for (c = 0; c < NC; c++) {
      x = x * 1103515245u + 12345u;
      ts[c] += (x >> 16) % 3;
      wr32(pl, (uint32_t)c);
      wr32(pl + 4, (uint32_t)i);
      hsi_writer_kernel(w, c, HS_HT_SYSTEM64, 0x05, 36, 2, 4, 1000, ts[c], pl, sizeof pl);
    }
  CHECK_EQ(hsi_writer_close(w), 0);
  for (pass = 0; pass < 2; pass++) {
    hs_reader *r;
    hs_event ev;
    const char *p = path;
    int64_t last = INT64_MIN;
    int last_cpu = -1, ordered = 1, own = 1;
    uint64_t n = 0;
    if (pass == 1) setenv("HEAPSCRIPT_THREADS", "0", 1);
    CHECK_EQ(hs_reader_open(&r, &p, 1, NULL, NULL, 0), 0);
    memset(seq, 0, sizeof seq);
    while (hs_reader_next(r, &ev) == 1) {
      if (ev.hook != 0x0524) continue;
      c = (int)rd32(ev.payload);
      if (c != ev.cpu || c >= NC) { own = 0; continue; }
      if (ev.timestamp < last || (ev.timestamp == last && ev.cpu < last_cpu)) ordered = 0;
      if (rd32(ev.payload + 4) != seq[c]++) own = 0;
      last = ev.timestamp;
      last_cpu = ev.cpu;
      n++;
    }
    hs_reader_close(r);
    CHECK(ordered);
    CHECK(own);
    CHECK_EQ(n, NC * NE);
  }
  unsetenv("HEAPSCRIPT_THREADS");
  remove(path);
}

TEST(two_files_merge_like_xperf) {
  char a[512], b[512];
  const char *paths[2];
  hs_reader *r;
  hs_event ev;
  int64_t last = -1;
  int ok = 1, files_seen[2] = {0, 0};
  CHECK_EQ(write_trace(tmp_path("fa"), 1, 50, 0, 0), 0);
  strcpy(a, path);
  CHECK_EQ(write_trace(tmp_path("fb"), 1, 50, 0, 5), 0);     /* 5 ticks later: interleaves */
  strcpy(b, path);
  paths[0] = a; paths[1] = b;
  CHECK_EQ(hs_reader_open(&r, paths, 2, NULL, NULL, 0), 0);
  while (hs_reader_next(r, &ev) == 1) {
    if (ev.timestamp < last) ok = 0;
    last = ev.timestamp;
    files_seen[ev.file]++;
  }
  CHECK(ok); CHECK_EQ(files_seen[0], 51); CHECK_EQ(files_seen[1], 51);
  CHECK_EQ(hs_reader_nfiles(r), 2);
  hs_reader_close(r);
  remove(a); remove(b);
}

/* Move the first record of buffer 1 into buffer 0 after the header record,
   between SavedOffset and Offset, as late group-0 records are written. */
static void make_tail(int unique) {
  size_t b1 = buffer_at(1);
  uint32_t off0 = rd32(img + 0x30), rsz = rd16(img + b1 + 0x48 + 4), al = (rsz + 7) & ~7u;
  memcpy(img + off0, img + b1 + 0x48, rsz);
  if (unique) img[off0 + 0x20] ^= 0x5A;                /* a payload byte differs */
  wr32(img + 4, off0);                                  /* SavedOffset: before it */
  wr32(img + 0x30, off0 + al);                          /* Offset: after it */
}

TEST(buffer0_tail_repeats_counted_once_unique_kept) {
  int rc;
  walk w;
  hs_reader *r;
  CHECK_EQ(write_trace(tmp_path("tail"), 1, 100, 0, 0), 0);
  load(path);
  make_tail(0);
  w = read_mem(img, imglen, &rc);
  CHECK_EQ(rc, 0); CHECK_EQ(w.n, 101); CHECK_EQ(w.damage, 0);
  CHECK_EQ(hs_reader_open_mem(&r, img, imglen, "t", NULL, NULL, 0), 0);
  { hs_event ev; while (hs_reader_next(r, &ev) == 1) {} }
  CHECK_EQ(hs_reader_stats(r, 0)->records_duplicate, 1);
  CHECK_EQ(hs_reader_rewind(r), 0);                     /* and again after a rewind */
  { hs_event ev; uint64_t n = 0; while (hs_reader_next(r, &ev) == 1) n++; CHECK_EQ(n, 101); }
  hs_reader_close(r);
  load(path);
  make_tail(1);
  w = read_mem(img, imglen, &rc);
  CHECK_EQ(w.n, 102);                                   /* found nowhere else: it counts */
  /* a damaged tail record is reported once (the look at the tail's times,
     at open, reported it too) */
  load(path);
  make_tail(1);
  wr16(img + rd32(img + 4) + 4, 0x7FF8);               /* its Size: past the buffer */
  w = read_mem(img, imglen, &rc);
  CHECK_EQ(rc, 0); CHECK_EQ(w.damage, 1); CHECK_EQ(w.n, 101);
  remove(path);
}

/* A buffer 0 filled to the last byte by its tail (Offset == BufferSize)
   still ends at Offset: its tail records, after SavedOffset, are read. */
TEST(full_buffer0_keeps_its_tail) {
  int rc;
  walk w;
  uint32_t bufsize, off0;
  CHECK_EQ(write_trace(tmp_path("full0"), 1, 100, 0, 0), 0);
  load(path);
  make_tail(1);
  bufsize = rd32(img);
  off0 = rd32(img + 4);
  wr16(img + off0 + 4, (uint16_t)(bufsize - off0));    /* the tail record runs to the end */
  wr32(img + 0x30, bufsize);
  w = read_mem(img, imglen, &rc);
  CHECK_EQ(rc, 0); CHECK_EQ(w.damage, 0);
  CHECK_EQ(w.n, 102);
  remove(path);
}

/* A buffer whose Offset (0x30) is 0 or past BufferSize ends at its
   SavedOffset (0x04) when that is sane, else at BufferSize, where the 0xFF
   padding ends it (ETL-FORMAT.md 1.5): its records are read, and the
   damaged Offset is reported (once, naming the buffer).  A SavedOffset
   inside the data then cuts the buffer there.  A bad Offset at offset 0
   is still no ETL file. */
TEST(offset_fallbacks) {
  int rc;
  walk w;
  size_t b1;
  uint32_t off, size, rsz;
  CHECK_EQ(write_trace(tmp_path("offs"), 1, 100, 0, 0), 0);
  load(path);
  b1 = buffer_at(1);
  off = rd32(img + b1 + 0x30);
  size = rd32(img + b1);
  CHECK_EQ(rd32(img + b1 + 4), off);                     /* as written: SavedOffset == Offset */
  CHECK(off < size);                                      /* padding follows the data */
  wr32(img + b1 + 0x30, 0);
  w = read_mem(img, imglen, &rc);
  CHECK_EQ(rc, 0); CHECK_EQ(w.n, 101); CHECK_EQ(w.damage, 1); CHECK_EQ(w.first_damage, b1);
  wr32(img + b1 + 0x30, size + 8);
  w = read_mem(img, imglen, &rc);
  CHECK_EQ(w.n, 101); CHECK_EQ(w.damage, 1);
  wr32(img + b1 + 4, 0);                                  /* neither is sane: BufferSize */
  w = read_mem(img, imglen, &rc);
  CHECK_EQ(w.n, 101); CHECK_EQ(w.damage, 1);
  rsz = (rd16(img + b1 + 0x48 + 4) + 7u) & ~7u;           /* SavedOffset after the first record */
  CHECK_EQ((off - 0x48) % rsz, 0);                        /* records of one size */
  wr32(img + b1 + 4, 0x48 + rsz);
  w = read_mem(img, imglen, &rc);
  CHECK_EQ(w.damage, 1);
  CHECK_EQ(w.n, 101 - ((off - 0x48) / rsz - 1));          /* the buffer's other records are cut */
  load(path);
  wr32(img + 0x30, 0);                                    /* buffer 0: not an ETL file */
  w = read_mem(img, imglen, &rc);
  CHECK(rc != 0);
  remove(path);
}

/* The file's counters: first_damage_pos is the lowest offset damaged,
   not the last met; the walk's record count starts again at a rewind. */
TEST(stats_first_damage_and_rewind) {
  hs_reader *r;
  hs_event ev;
  size_t b2, b4;
  uint64_t n = 0;
  CHECK_EQ(write_trace(tmp_path("stats"), 1, 100, 0, 0), 0);
  load(path);
  b2 = buffer_at(2); b4 = buffer_at(4);
  wr16(img + b2 + 0x48 + 0x48 + 4, 0x7000);            /* two records' Size past their buffers */
  wr16(img + b4 + 0x48 + 0x48 + 4, 0x7000);
  CHECK_EQ(hs_reader_open_mem(&r, img, imglen, "t", NULL, NULL, 0), 0);
  while (hs_reader_next(r, &ev) == 1) n++;
  CHECK_EQ(hs_reader_stats(r, 0)->first_damage_pos, b2 + 0x48 + 0x48);
  CHECK_EQ(hs_reader_stats(r, 0)->records, n);
  CHECK_EQ(hs_reader_rewind(r), 0);
  while (hs_reader_next(r, &ev) == 1) {}
  CHECK_EQ(hs_reader_stats(r, 0)->records, n);
  hs_reader_close(r);
  remove(path);
}

/* The end marker 0xFFFFFFFF ends a buffer's records where its 0xFF
   padding starts, up to Offset; before more data it is damage (the
   records after it were left out unsaid). */
TEST(end_marker_ends_a_buffer) {
  int rc;
  walk w, full;
  size_t b1;
  uint32_t off, in_buf1;
  CHECK_EQ(write_trace(tmp_path("ff"), 1, 100, 0, 0), 0);
  load(path);
  full = read_mem(img, imglen, &rc);
  b1 = buffer_at(1);
  off = rd32(img + b1 + 0x30);
  in_buf1 = (off - 0x48) / 0x48;
  /* the third record of buffer 1 (records are 0x48 bytes: 0x20 header + 40 payload) */
  wr32(img + b1 + 0x48 + 2 * 0x48, 0xFFFFFFFFu);
  w = read_mem(img, imglen, &rc);
  CHECK_EQ(rc, 0); CHECK_EQ(w.damage, 1);
  CHECK_EQ(w.first_damage, b1 + 0x48 + 2 * 0x48);
  CHECK_EQ(full.n - w.n, in_buf1 - 2);
  /* the rest of the buffer up to Offset padding: its end, no damage */
  memset(img + b1 + 0x48 + 2 * 0x48, 0xFF, off - (0x48 + 2 * 0x48));
  w = read_mem(img, imglen, &rc);
  CHECK_EQ(rc, 0); CHECK_EQ(w.damage, 0);
  CHECK_EQ(full.n - w.n, in_buf1 - 2);
  remove(path);
}

/* A circular file, and the ring in memory of a session in buffering mode
   flushed to a file (the buffers of 0x400 were read as damage, "behind"). */
TEST(circular_logger_wraps) {
  static const uint32_t modes[] = { 0x2, 0x400, 0x400 | 0x2000000 };   /* CIRCULAR, BUFFERING (+ SYSTEM_LOGGER) */
  int rc;
  size_t k;
  for (k = 0; k < sizeof modes / sizeof *modes; k++) {
    walk w;
    size_t b1, b2, b3, n1, n2;
    uint8_t *tmp;
    CHECK_EQ(write_trace(tmp_path("circ"), 1, 60, modes[k], 0), 0);
    load(path);
    /* swap buffers 1 and 2 (same size): the oldest now sits second */
    b1 = buffer_at(1); b2 = buffer_at(2); b3 = buffer_at(3);
    n1 = b2 - b1; n2 = b3 - b2;
    CHECK_EQ(n1, n2);
    tmp = (uint8_t *)malloc(n1);
    memcpy(tmp, img + b1, n1); memcpy(img + b1, img + b2, n1); memcpy(img + b2, tmp, n1);
    free(tmp);
    w = read_mem(img, imglen, &rc);
    CHECK_EQ(rc, 0); CHECK_EQ(w.n, 61); CHECK(w.ordered); CHECK_EQ(w.damage, 0);
    remove(path);
  }
}

/* A system-time file whose StartTime is 0 (a session that never set it):
   the header record's stamp is its start, not a sign of another clock
   (which was reported as damage, the times read as QPC). */
TEST(system_time_without_start_time) {
  hsi_writer *wr;
  hsi_writer_opts o;
  hs_reader *r;
  hs_event ev;
  uint8_t pl[40];
  const int64_t T0 = 132223104000000000;                  /* 2020-01-01, FILETIME */
  int i, rc;
  walk w;
  int64_t last = -1;
  memset(&o, 0, sizeof o);
  o.clock_type = 2; o.start_time = T0; o.buffer_size = 4096;
  CHECK_EQ(hsi_writer_open(&wr, tmp_path("st0"), &o, NULL, 0), 0);
  for (i = 1; i <= 3; i++) {
    memset(pl, 0, sizeof pl);
    hsi_writer_kernel(wr, 0, HS_HT_SYSTEM64, 0x05, 36, 2, 4, 1000, T0 + i * 10000000LL, pl, sizeof pl);
  }
  CHECK_EQ(hsi_writer_close(wr), 0);
  load(path);
  remove(path);
  CHECK_EQ(rd64(img + 0x68 + 0x108), (uint64_t)T0);    /* StartTime of the 64-bit header */
  wr64(img + 0x68 + 0x108, 0);
  w = read_mem(img, imglen, &rc);
  CHECK_EQ(rc, 0); CHECK_EQ(w.damage, 0); CHECK_EQ(w.n, 4);
  CHECK_EQ(hs_reader_open_mem(&r, img, imglen, "t", NULL, NULL, 0), 0);
  CHECK_EQ(hs_reader_logfile(r, 0)->clock_type, 2);
  CHECK_EQ(hs_reader_logfile(r, 0)->start_time, T0);
  while (hs_reader_next(r, &ev) == 1) last = hs_time_ns(hs_reader_logfile(r, 0), ev.timestamp);
  CHECK_EQ(last, 3000000000LL);
  hs_reader_close(r);
}

/* A copy of a buffer right after it is damage ("behind"), also when the
   reader's chunk of events (1,024 on one CPU) filled at the original's
   last record: the next chunk then had no record of it, and the mark the
   copy is compared with was not set.  Buffer sizes around 0x12000 put
   buffers 0 and 1 at 1,024 records together for one of them. */
TEST(copied_buffer_at_a_chunk_end) {
  uint32_t bs;
  int exact = 0;
  for (bs = 0x11F00; bs <= 0x12100; bs += 0x10) {
    int rc;
    walk w;
    hs_reader *r;
    hs_event ev;
    uint64_t in01 = 0;
    size_t b1, b2;
    CHECK_EQ(write_trace_in(tmp_path("copy"), 1, 2500, 0, 0, bs), 0);
    load(path);
    remove(path);
    CHECK_EQ(hs_reader_open_mem(&r, img, imglen, "t", NULL, NULL, 0), 0);
    while (hs_reader_next(r, &ev) == 1) in01 += ev.buffer <= 1;
    hs_reader_close(r);
    exact += in01 == 1024;
    b1 = buffer_at(1); b2 = buffer_at(2);
    if (b2 + (b2 - b1) > imglen) { CHECK(0); break; }
    memcpy(img + b2, img + b1, b2 - b1);               /* buffer 2 a copy of buffer 1 */
    w = read_mem(img, imglen, &rc);
    CHECK_EQ(rc, 0); CHECK_EQ(w.damage, 1); CHECK(w.ordered);
    CHECK_EQ(w.first_damage, b2);
  }
  CHECK(exact > 0);                                    /* the case itself was met */
}

TEST(damage_is_reported_with_offsets) {
  int rc;
  walk w;
  size_t b2;
  CHECK_EQ(write_trace(tmp_path("dmg"), 1, 100, 0, 0), 0);
  load(path);
  b2 = buffer_at(2);
  wr16(img + b2 + 0x48 + 0x48 + 4, 0x7000);            /* second record of buffer 2: Size past the buffer */
  w = read_mem(img, imglen, &rc);
  CHECK_EQ(rc, 0); CHECK_EQ(w.damage, 1);
  CHECK_EQ(w.first_damage, b2 + 0x48 + 0x48);
  load(path);
  w = read_mem(img, imglen - 300, &rc);                /* truncated inside the last buffer */
  CHECK_EQ(rc, 0); CHECK(w.damage >= 1); CHECK(w.n > 50);
  w = read_mem(img, 0x30, &rc);                         /* not even a buffer header */
  CHECK_EQ(rc, HS_EFORMAT);
  remove(path);
}

/* Buffer header fields no other test varies: BufferType 8 is none (0..7
   are), either lost-events flag bit counts the buffer, a compressed
   buffer's SavedOffset must leave room for data (0x48 is the header
   alone), past 255 CPUs the processor index is the whole 16-bit word
   (flag 0x20), not its low byte; and a buffer whose first record's flags
   byte lacks the 0x80 both markers have (0x40 here) is no buffer header: the
   damage is the header's, at the buffer, not a record's inside it. */
TEST(buffer_header_fields) {
  int rc;
  walk w;
  size_t b1, b2;
  hs_reader *r;
  CHECK_EQ(write_trace(tmp_path("bhdr"), 1, 100, 0, 0), 0);
  load(path);
  b1 = buffer_at(1); b2 = buffer_at(2);
  wr16(img + b2 + 0x36, 7);
  w = read_mem(img, imglen, &rc);
  CHECK_EQ(rc, 0); CHECK_EQ(w.damage, 0);
  wr16(img + b2 + 0x36, 8);
  w = read_mem(img, imglen, &rc);
  CHECK_EQ(rc, 0); CHECK_EQ(w.damage, 1); CHECK_EQ(w.first_damage, b2);
  load(path);
  img[b2 + 0x48 + 3] = 0x40;
  w = read_mem(img, imglen, &rc);
  CHECK_EQ(rc, 0); CHECK_EQ(w.damage, 1); CHECK_EQ(w.first_damage, b2);
  load(path);
  img[b1 + 0x34] |= 0x2;
  CHECK_EQ(hs_reader_open_mem(&r, img, imglen, "t", NULL, NULL, 0), 0);
  CHECK_EQ(hs_reader_stats(r, 0)->buffers_lost_flag, 1);
  hs_reader_close(r);
  load(path);
  img[b1 + 0x34] |= 0x40;                                /* compressed, holding nothing */
  wr32(img + b1 + 4, 0x48);
  w = read_mem(img, imglen, &rc);
  CHECK_EQ(rc, 0); CHECK_EQ(w.damage, 1); CHECK_EQ(w.first_damage, b1);
  remove(path);
  {
    hsi_writer *wr;
    hsi_writer_opts o;
    hs_event ev;
    const char *p = tmp_path("cpu300");
    uint8_t pl[8] = {0};
    int cpu = -1;
    memset(&o, 0, sizeof o);
    o.cpus = 300; o.buffer_size = 1024;
    CHECK_EQ(hsi_writer_open(&wr, p, &o, NULL, 0), 0);
    hsi_writer_kernel(wr, 299, HS_HT_SYSTEM64, 0x05, 36, 2, 4, 1000, 500, pl, sizeof pl);
    CHECK_EQ(hsi_writer_close(wr), 0);
    CHECK_EQ(hs_reader_open(&r, &p, 1, NULL, NULL, 0), 0);
    while (hs_reader_next(r, &ev) == 1) if (ev.hook == 0x0524) cpu = ev.cpu;
    CHECK_EQ(cpu, 299);
    hs_reader_close(r);
    remove(p);
  }
}

/* A 32-bit logfile header's payload is at least 0x110 bytes (0x118 for
   64-bit): the fixed fields up to BuffersLost; the names may be absent. */
TEST(logfile_header_32_minimum) {
  hsi_writer *wr;
  hsi_writer_opts o;
  hs_reader *r;
  memset(&o, 0, sizeof o);
  o.pointer_size = 4; o.buffer_size = 1024;
  CHECK_EQ(hsi_writer_open(&wr, tmp_path("lf32"), &o, NULL, 0), 0);
  CHECK_EQ(hsi_writer_close(wr), 0);
  load(path);
  CHECK_EQ(img[0x48 + 2], HS_HT_SYSTEM32);
  wr16(img + 0x48 + 4, 0x20 + 0x110);
  CHECK_EQ(hs_reader_open_mem(&r, img, imglen, "t", NULL, NULL, 0), 0);
  if (r) {
    CHECK_EQ(hs_reader_logfile(r, 0)->pointer_size, 4);
    hs_reader_close(r);
  }
  wr16(img + 0x48 + 4, 0x20 + 0x10F);
  CHECK_EQ(hs_reader_open_mem(&r, img, imglen, "t", NULL, NULL, 0), HS_EFORMAT);
  remove(path);
}

/* Equal timestamps keep their order where nothing else decides: a
   circular logger's buffers whose first records tie stay in file order,
   and a buffer-0 tail record loses a tie to another CPU's record. */
TEST(ties_keep_file_order_and_tail_last) {
  hsi_writer *wr;
  hsi_writer_opts o;
  hs_reader *r;
  hs_event ev;
  uint8_t pl[40];
  uint32_t i, next = 0;
  int ok = 1, tail_seen = 0;
  int64_t tts;
  memset(&o, 0, sizeof o);
  o.buffer_size = 1024; o.log_file_mode = 0x2;             /* CIRCULAR */
  CHECK_EQ(hsi_writer_open(&wr, tmp_path("tie"), &o, NULL, 0), 0);
  for (i = 0; i < 60; i++) {                                 /* a few buffers, one timestamp */
    memset(pl, 0, sizeof pl);
    wr32(pl, i);
    hsi_writer_kernel(wr, 0, HS_HT_SYSTEM64, 0x05, 36, 2, 4, 1000, 500, pl, sizeof pl);
  }
  CHECK_EQ(hsi_writer_close(wr), 0);
  load(path);
  remove(path);                                              /* walked from memory */
  CHECK(buffer_at(3) < imglen);
  CHECK_EQ(hs_reader_open_mem(&r, img, imglen, "t", NULL, NULL, 0), 0);
  while (hs_reader_next(r, &ev) == 1)
    if (ev.hook == 0x0524 && rd32(ev.payload) != next++) ok = 0;
  hs_reader_close(r);
  CHECK(ok); CHECK_EQ(next, 60);
  CHECK_EQ(write_trace(tmp_path("tietail"), 2, 100, 0, 0), 0);
  load(path);
  make_tail(1);
  tts = 100 + 10 * 50 + 1;                                   /* a record of CPU 1 */
  wr64(img + rd32(img + 4) + 16, (uint64_t)tts);
  CHECK_EQ(hs_reader_open_mem(&r, img, imglen, "t", NULL, NULL, 0), 0);
  next = 0;
  while (hs_reader_next(r, &ev) == 1) {
    if (ev.timestamp != tts) continue;
    if (ev.flags & HS_EVF_BUF0TAIL) tail_seen = 1;
    else if (tail_seen) ok = 0;                              /* the CPU 1 record after the tail's */
    next++;
  }
  hs_reader_close(r);
  CHECK(ok); CHECK_EQ(next, 2); CHECK(tail_seen);
  remove(path);
}

/* What a walk of a reader saw: its events (count and a hash of their
   times and CPUs), each damage report, the file's counters. */
typedef struct seen {
  uint64_t n, h;
  int ndmg;
  uint64_t dpos[16];
  char dwhat[16][120];
  hs_file_stats st;
} seen;

static void on_damage_seen(void *ud, const hs_damage *d) {
  seen *s = (seen *)ud;
  if (s->ndmg < 16) {
    s->dpos[s->ndmg] = d->pos;
    snprintf(s->dwhat[s->ndmg], sizeof s->dwhat[0], "%s", d->what);
  }
  s->ndmg++;
}

static void walk_seen(hs_reader *r, seen *s) {
  hs_event ev;
  while (hs_reader_next(r, &ev) == 1) {
    s->n++;
    s->h = (s->h ^ (uint64_t)ev.timestamp ^ ((uint64_t)ev.cpu << 48)) * 0x100000001B3ull;
  }
  s->st = *hs_reader_stats(r, 0);
}

static int same_seen(const seen *a, const seen *b) {
  int i;
  if (a->n != b->n || a->h != b->h || a->ndmg != b->ndmg) return 0;
  for (i = 0; i < a->ndmg && i < 16; i++)
    if (a->dpos[i] != b->dpos[i] || strcmp(a->dwhat[i], b->dwhat[i])) return 0;
  return memcmp(&a->st, &b->st, sizeof a->st) == 0;
}

/* A reopened reader takes the index of the reader it came from (no
   header is read again) and reports the damage indexing found again,
   over a file and over memory; a file whose size changed since is
   indexed again. */
TEST(reopen_takes_the_index_and_its_damage) {
  hs_reader *r, *r2;
  hs_reader_opts o;
  seen a, b;
  size_t b3, b5;
  const char *p;
  CHECK_EQ(write_trace(tmp_path("reopen"), 2, 120, 0, 0), 0);
  load(path);
  make_tail(1);                                       /* buffer 0's end is split off for its tail */
  b3 = buffer_at(3); b5 = buffer_at(5);
  wr32(img + b3, 0x7FFFFFF0u);                        /* framing damage: indexing resyncs */
  wr16(img + b5 + 0x48 + 0x48 + 4, 0x7000);           /* a record's Size past its buffer */
  imglen -= 300;                                      /* the last buffer cut short */
  save(imglen);
  p = path;
  memset(&o, 0, sizeof o);
  o.on_damage = on_damage_seen;
  memset(&a, 0, sizeof a); memset(&b, 0, sizeof b);
  o.ud = &a;
  CHECK_EQ(hs_reader_open(&r, &p, 1, &o, NULL, 0), 0);
  walk_seen(r, &a);
  CHECK(a.ndmg >= 3); CHECK(a.n > 100);
  CHECK(a.st.buffers_damaged >= 3);
  o.ud = &b;
  CHECK_EQ(hsi_reader_reopen(r, &r2, &o, NULL, 0), 0);
  walk_seen(r2, &b);
  CHECK(same_seen(&a, &b));
  hs_reader_close(r2);
  /* the file is cut shorter since r opened it: r2 reads it as it is now */
  save(b5 + 0x100);
  memset(&b, 0, sizeof b);
  CHECK_EQ(hsi_reader_reopen(r, &r2, &o, NULL, 0), 0);
  walk_seen(r2, &b);
  CHECK(b.n < a.n);
  CHECK_EQ(b.st.file_size, b5 + 0x100);
  {
    int k, cut = 0;                                   /* the cut buffer: found by indexing */
    for (k = 0; k < b.ndmg && k < 16; k++) cut += b.dpos[k] == b5 && strstr(b.dwhat[k], "file ends") != NULL;
    CHECK_EQ(cut, 1);
  }
  hs_reader_close(r2);
  hs_reader_close(r);
  /* over memory */
  memset(&a, 0, sizeof a); memset(&b, 0, sizeof b);
  o.ud = &a;
  CHECK_EQ(hs_reader_open_mem(&r, img, imglen, "mem.etl", &o, NULL, 0), 0);
  walk_seen(r, &a);
  o.ud = &b;
  CHECK_EQ(hsi_reader_reopen(r, &r2, &o, NULL, 0), 0);
  walk_seen(r2, &b);
  CHECK(a.ndmg >= 3);
  CHECK(same_seen(&a, &b));
  hs_reader_close(r2);
  hs_reader_close(r);
  remove(path);
}

#ifndef _WIN32
/* A page of a mapped buffer the device cannot read (a disk or network
   error while the walk reads it; lostpage.h): that buffer is damage at
   its offset, saying so, and every other buffer's events are read.
   64 KiB buffers over 40 CPUs are mapped, not read into slots. */
TEST(device_error_in_a_mapped_buffer) {
  hs_reader *r;
  hs_reader_opts o;
  hs_event ev;
  seen s;
  const char *p;
  uint64_t all = 0, in_k = 0;
  size_t bk;
  CHECK_EQ(write_trace_in(tmp_path("device"), 40, 2000, 0, 0, 65536), 0);
  load(path);
  bk = buffer_at(61);
  CHECK(bk > 0 && bk + 65536 <= imglen);
  p = path;
  memset(&o, 0, sizeof o);
  CHECK_EQ(hs_reader_open(&r, &p, 1, &o, NULL, 0), 0);
  while (hs_reader_next(r, &ev) == 1) { all++; in_k += ev.buffer_pos == bk; }
  hs_reader_close(r);
  CHECK(in_k > 100);
  memset(&s, 0, sizeof s);
  o.on_damage = on_damage_seen;
  o.ud = &s;
  CHECK_EQ(hs_reader_open(&r, &p, 1, &o, NULL, 0), 0);
  CHECK_EQ(lose_page(path, bk + 8192), 0);
  walk_seen(r, &s);
  hs_reader_close(r);
  CHECK_EQ(s.ndmg, 1);
  CHECK_EQ(s.dpos[0], bk);
  CHECK(strstr(s.dwhat[0], "a buffer the device can read") != NULL);
  CHECK_EQ(s.n, all - in_k);
  CHECK_EQ(s.st.buffers_damaged, 1);
  remove(path);
}
#endif

int main(void) {
  RUN(buffers_written_is_not_trusted);
  RUN(merged_per_cpu_order_and_ties);
  RUN(many_cpus_ties_in_order);
  RUN(two_files_merge_like_xperf);
  RUN(buffer0_tail_repeats_counted_once_unique_kept);
  RUN(full_buffer0_keeps_its_tail);
  RUN(offset_fallbacks);
  RUN(stats_first_damage_and_rewind);
  RUN(end_marker_ends_a_buffer);
  RUN(circular_logger_wraps);
  RUN(copied_buffer_at_a_chunk_end);
  RUN(system_time_without_start_time);
  RUN(damage_is_reported_with_offsets);
  RUN(buffer_header_fields);
  RUN(logfile_header_32_minimum);
  RUN(ties_keep_file_order_and_tail_last);
  RUN(reopen_takes_the_index_and_its_damage);
#ifndef _WIN32
  RUN(device_error_in_a_mapped_buffer);
#endif
  free(img);
  return UNIT_DONE();
}
