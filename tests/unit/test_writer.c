/*
** test_writer.c -- engine/writer.c checked byte by byte.  Every offset
** asserted here is one the corpus files show (ETL-FORMAT.md sections
** 1-4, 6.4-6.7); the reader is not used, so a writer bug cannot hide
** behind a matching reader bug.
*/
#include "unit.h"
#include "heapscript.h"
#include "writer.h"

#include <unistd.h>

static uint16_t r16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t r32(const uint8_t *p) { return (uint32_t)r16(p) | (uint32_t)r16(p + 2) << 16; }
static uint64_t r64(const uint8_t *p) { return (uint64_t)r32(p) | (uint64_t)r32(p + 4) << 32; }
static size_t al8(size_t n) { return (n + 7) & ~(size_t)7; }

static char *tmp_path(const char *tag) {
  static char buf[8][512];
  static int n;
  return unit_tmp_path(buf[n++ & 7], 512, "writer-%s.etl", tag);
}

static uint8_t *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  uint8_t *b;
  long n;
  *len = 0;
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  n = ftell(f);
  fseek(f, 0, SEEK_SET);
  b = malloc(n ? (size_t)n : 1);
  if (b && fread(b, 1, (size_t)n, f) != (size_t)n) { free(b); b = NULL; }
  fclose(f);
  remove(path);
  if (b) *len = (size_t)n;
  return b;
}

/* Size of the record at p: SYSTEM/COMPACT/PERFINFO keep it at +4. */
static size_t rec_size(const uint8_t *p) {
  switch (p[2]) {
  case 0x01: case 0x02: case 0x03: case 0x04: case 0x10: case 0x11: return r16(p + 4);
  default: return r16(p);
  }
}

static int all_ff(const uint8_t *p, size_t n) {
  size_t i;
  for (i = 0; i < n; i++) if (p[i] != 0xFF) return 0;
  return 1;
}

/* UTF-16LE at p equals the ASCII string s, NUL included. */
static int wstr_is(const uint8_t *p, const char *s) {
  size_t i;
  for (i = 0; s[i]; i++) if (r16(p + 2 * i) != (uint8_t)s[i]) return 0;
  return r16(p + 2 * i) == 0;
}

static const hs_guid guid_a = {0x222962ab, 0x6180, 0x4b88, {0xa8, 0x25, 0x34, 0x6b, 0x75, 0xf2, 0xa2, 0x4a}};
static const uint8_t guid_a_bytes[16] = {0xab, 0x62, 0x29, 0x22, 0x80, 0x61, 0x88, 0x4b,
                                         0xa8, 0x25, 0x34, 0x6b, 0x75, 0xf2, 0xa2, 0x4a};

static hsi_writer *open_w(const char *path, const hsi_writer_opts *o) {
  hsi_writer *w = NULL;
  char err[256] = "";
  int rc = hsi_writer_open(&w, path, o, err, sizeof err);
  if (rc) fprintf(stderr, "open %s: %d %s\n", path, rc, err);
  return w;
}

/* A writer of two CPUs and 4 KiB buffers, the tests' usual. */
static hsi_writer *open_small(const char *path) {
  hsi_writer_opts o;
  memset(&o, 0, sizeof o);
  o.buffer_size = 4096;
  o.cpus = 2;
  return open_w(path, &o);
}

/* ------------------------------------------------------------------ */

TEST(header64) {
  hsi_writer_opts o;
  const char *path = tmp_path("h64");
  hsi_writer *w;
  uint8_t *b, *h;
  size_t n, size, off;

  memset(&o, 0, sizeof o);
  o.pointer_size = 8;
  o.buffer_size = 4096;
  o.cpus = 4;
  o.os_build = 22631;
  o.perf_freq = 3000000;
  o.start_time = 133000000000000000;
  o.start_ticks = 123456789;
  o.logger_name = "HeapTest";
  o.log_file_name = "C:\\t.etl";
  o.events_lost = 3;
  o.buffers_lost = 2;
  CHECK((w = open_w(path, &o)) != NULL);
  if (!w) return;
  CHECK_EQ(hsi_writer_buffers(w), 1);
  CHECK_EQ(hsi_writer_close(w), 0);
  CHECK((b = slurp(path, &n)) != NULL);
  if (!b) return;
  CHECK_EQ(n, 4096);
  /* Buffer header of buffer 0, Win10 live-logger form. */
  size = 0x20 + 0x118 + 18 + 18;
  off = 0x48 + al8(size);
  CHECK_EQ(r32(b + 0x00), 4096);
  CHECK_EQ(r32(b + 0x04), off);
  CHECK_EQ(r32(b + 0x08), off);
  CHECK_EQ(r32(b + 0x28), 0);
  CHECK_EQ(r32(b + 0x2C), 3);
  CHECK_EQ(r32(b + 0x30), off);
  CHECK_EQ(r16(b + 0x34), 0x21);
  CHECK_EQ(r16(b + 0x36), 4);
  CHECK(all_ff(b + off, n - off));
  /* SYSTEM64 header record, group 0 type 0 version 2. */
  CHECK_EQ(r32(b + 0x48), 0xC0020002u);
  CHECK_EQ(r16(b + 0x4C), size);
  CHECK_EQ(r16(b + 0x4E), 0);
  CHECK_EQ(r64(b + 0x58), 123456789);
  h = b + 0x68;
  CHECK_EQ(r32(h + 0x00), 4096);
  CHECK_EQ(r32(h + 0x04), 0x0501000Au);      /* 10.0.1.5 */
  CHECK_EQ(r32(h + 0x08), 22631);
  CHECK_EQ(r32(h + 0x0C), 4);
  CHECK_EQ(r64(h + 0x10), 133000000000000000); /* EndTime: no records, the start */
  CHECK_EQ(r32(h + 0x20), 1);                 /* LogFileMode sequential */
  CHECK_EQ(r32(h + 0x24), 1);                 /* BuffersWritten */
  CHECK_EQ(r32(h + 0x2C), 8);
  CHECK_EQ(r32(h + 0x30), 3);
  CHECK_EQ(r32(h + 0x34), 3000);
  CHECK_EQ(r32(h + 0x48), 0);                 /* TZ Bias */
  CHECK_EQ(r32(h + 0xF4), 0);                 /* TZ pad */
  CHECK_EQ(r64(h + 0x100), 3000000);
  CHECK_EQ(r64(h + 0x108), 133000000000000000);
  CHECK_EQ(r32(h + 0x110), 1);
  CHECK_EQ(r32(h + 0x114), 2);
  /* BootTime: where QPC was 0, 123456789 ticks at 3 MHz before the start. */
  CHECK_EQ(r64(h + 0xF8), 133000000000000000 - 411522630);
  CHECK(wstr_is(h + 0x118, "HeapTest"));
  CHECK(wstr_is(h + 0x118 + 18, "C:\\t.etl"));
  free(b);
}

/* The header fields a copy of another trace keeps: OS version, timer
   resolution, time zone, boot time, a later EndTime; were 10.0, 15.625
   ms, UTC, derived, the last record's. */
TEST(header_kept) {
  hsi_writer_opts o;
  const char *path = tmp_path("hkept");
  hsi_writer *w;
  uint8_t *b, *h, tz[0xAC];
  size_t n, i;

  for (i = 0; i < sizeof tz; i++) tz[i] = (uint8_t)(i * 7 + 1);
  tz[0] = 0xE0; tz[1] = 0x01; tz[2] = tz[3] = 0;   /* Bias 480 */
  memset(&o, 0, sizeof o);
  o.pointer_size = 4;
  o.buffer_size = 4096;
  o.start_time = 133000000000000000;
  o.os_major = 6;
  o.os_minor = 1;
  o.os_build = 7601;
  o.timer_resolution = 10000;
  o.time_zone = tz;
  o.boot_time = 132999000000000000;
  o.end_time = 133000000100000000;
  o.log_file_mode = 0x00011001;
  CHECK((w = open_w(path, &o)) != NULL);
  if (!w) return;
  CHECK_EQ(hsi_writer_kernel(w, 0, HS_HT_SYSTEM32, 5, 36, 2, 4, 5, 10000000, NULL, 0), 0);  /* 1 s after */
  CHECK_EQ(hsi_writer_close(w), 0);
  CHECK((b = slurp(path, &n)) != NULL);
  if (!b) return;
  h = b + 0x68;
  CHECK_EQ(r32(h + 0x04), 0x05010106u);      /* 6.1, layout 1.5 */
  CHECK_EQ(r32(h + 0x08), 7601);
  CHECK_EQ(r64(h + 0x10), 133000000100000000); /* EndTime: later than the last record's */
  CHECK_EQ(r32(h + 0x18), 10000);
  CHECK_EQ(r32(h + 0x20), 0x00011001);
  CHECK(memcmp(h + 0x40, tz, sizeof tz) == 0);
  CHECK_EQ(r32(h + 0x40 + 0xAC), 0);          /* pad */
  CHECK_EQ(r64(h + 0xF0), 132999000000000000);
  free(b);
  /* An EndTime before the last record: the record's time wins. */
  o.end_time = 133000000000000001;
  CHECK((w = open_w(path, &o)) != NULL);
  if (!w) return;
  CHECK_EQ(hsi_writer_kernel(w, 0, HS_HT_SYSTEM32, 5, 36, 2, 4, 5, 10000000, NULL, 0), 0);
  CHECK_EQ(hsi_writer_close(w), 0);
  CHECK((b = slurp(path, &n)) != NULL);
  if (!b) return;
  CHECK_EQ(r64(b + 0x68 + 0x10), 133000000010000000);
  free(b);
}

TEST(header32) {
  hsi_writer_opts o;
  const char *path = tmp_path("h32");
  hsi_writer *w;
  uint8_t *b, *h;
  size_t n, size;

  memset(&o, 0, sizeof o);
  o.pointer_size = 4;
  o.buffer_size = 2048;
  o.clock_type = 2;
  o.start_time = 131000000000000000;
  o.logger_name = "";
  o.log_file_name = "x";
  CHECK((w = open_w(path, &o)) != NULL);
  if (!w) return;
  CHECK_EQ(hsi_writer_close(w), 0);
  CHECK((b = slurp(path, &n)) != NULL);
  if (!b) return;
  CHECK_EQ(n, 2048);
  size = 0x20 + 0x110 + 2 + 4;
  CHECK_EQ(r32(b + 0x48), 0xC0010002u);       /* SYSTEM32 */
  CHECK_EQ(r16(b + 0x4C), size);
  CHECK_EQ(r64(b + 0x58), 131000000000000000); /* system time: stamp = StartTime */
  CHECK_EQ(r32(b + 0x30), 0x48 + al8(size));
  h = b + 0x68;
  CHECK_EQ(r32(h + 0x2C), 4);
  CHECK_EQ(r32(h + 0x38), 0);                 /* LoggerName pointer */
  CHECK_EQ(r32(h + 0x3C), 0);                 /* LogFileName pointer */
  CHECK(wstr_is(h + 0x44, "Coordinated Universal Time"));
  CHECK_EQ(r32(h + 0xEC), 0);                 /* TZ pad */
  CHECK_EQ(r64(h + 0xF0), 131000000000000000); /* BootTime */
  CHECK_EQ(r64(h + 0xF8), 10000000);
  CHECK_EQ(r64(h + 0x100), 131000000000000000);
  CHECK_EQ(r32(h + 0x108), 2);
  CHECK(wstr_is(h + 0x110, ""));
  CHECK(wstr_is(h + 0x112, "x"));
  free(b);
}

TEST(kernel_records) {
  hsi_writer_opts o;
  const char *path = tmp_path("kern");
  hsi_writer *w;
  uint8_t *b, *d, pl[7] = {1, 2, 3, 4, 5, 6, 7};
  size_t n, end;

  memset(&o, 0, sizeof o);
  o.buffer_size = 4096;
  o.cpus = 2;
  o.logger_id = 0x1F;
  CHECK((w = open_w(path, &o)) != NULL);
  if (!w) return;
  CHECK_EQ(hsi_writer_kernel(w, 1, HS_HT_SYSTEM64, 0x10, 33, 2, 100, 200, 1000, pl, 5), 0);
  CHECK_EQ(hsi_writer_kernel(w, 1, HS_HT_PERFINFO64, 0x02, 98, 2, 0, 0, 1001, pl, 3), 0);
  CHECK_EQ(hsi_writer_kernel(w, 1, HS_HT_COMPACT64, 0x0E, 32, 2, 7, 8, 1001, NULL, 0), 0);
  CHECK_EQ(hsi_writer_kernel(w, 1, HS_HT_SYSTEM32, 0x10, 36, 0x8002, 9, 10, 1002, pl, 7), 0);
  CHECK_EQ(hsi_writer_close(w), 0);
  CHECK((b = slurp(path, &n)) != NULL);
  if (!b) return;
  CHECK_EQ(n, 8192);
  CHECK_EQ(r32(b + 0x68 + 0x24), 2);          /* BuffersWritten rewritten */
  CHECK_EQ(r64(b + 0x68 + 0x10), 132223104000000000 + 1002); /* EndTime of ts 1002 at 10 MHz */
  CHECK_EQ(r16(b + 0x2A), 0x1F);
  d = b + 4096;
  /* SYSTEM64 at 0x48: size 0x25, next at 0x70; padding zero. */
  CHECK_EQ(r32(d + 0x48), 0xC0020002u);
  CHECK_EQ(r16(d + 0x4C), 0x25);
  CHECK_EQ(d[0x4E], 33);
  CHECK_EQ(d[0x4F], 0x10);
  CHECK_EQ(r32(d + 0x50), 200);               /* tid */
  CHECK_EQ(r32(d + 0x54), 100);               /* pid */
  CHECK_EQ(r64(d + 0x58), 1000);
  CHECK_EQ(r64(d + 0x60), 0);
  CHECK(memcmp(d + 0x68, pl, 5) == 0);
  CHECK(d[0x6D] == 0 && d[0x6E] == 0 && d[0x6F] == 0);
  /* PERFINFO64 at 0x70: 0x13 bytes, no ids. */
  CHECK_EQ(r32(d + 0x70), 0xC0110002u);
  CHECK_EQ(r16(d + 0x74), 0x13);
  CHECK_EQ(r16(d + 0x76), 0x0262);
  CHECK_EQ(r64(d + 0x78), 1001);
  CHECK(memcmp(d + 0x80, pl, 3) == 0);
  /* COMPACT64 at 0x88: 0x18 bytes. */
  CHECK_EQ(r32(d + 0x88), 0xC0040002u);
  CHECK_EQ(r16(d + 0x8C), 0x18);
  CHECK_EQ(r16(d + 0x8E), 0x0E20);
  CHECK_EQ(r32(d + 0x90), 8);
  CHECK_EQ(r32(d + 0x94), 7);
  CHECK_EQ(r64(d + 0x98), 1001);
  /* SYSTEM32 at 0xA0 with the whole version word kept. */
  CHECK_EQ(r32(d + 0xA0), 0xC0018002u);
  CHECK_EQ(r16(d + 0xA4), 0x27);
  CHECK(memcmp(d + 0xC0, pl, 7) == 0);
  end = 0xA0 + al8(0x27);
  /* Buffer header: CPU 1 with PROC_INDEX, flushed at stop (FLUSH_MARKER). */
  CHECK_EQ(r32(d + 0x00), 4096);
  CHECK_EQ(r32(d + 0x04), end);
  CHECK_EQ(r32(d + 0x08), 4096 + end);
  CHECK_EQ(r64(d + 0x10), 1002);
  CHECK_EQ(r64(d + 0x18), 1);
  CHECK_EQ(r16(d + 0x28), 1);
  CHECK_EQ(r16(d + 0x2A), 0x1F);
  CHECK_EQ(r32(d + 0x2C), 3);
  CHECK_EQ(r32(d + 0x30), end);
  CHECK_EQ(r16(d + 0x34), 0x21);
  CHECK_EQ(r16(d + 0x36), 0);
  CHECK(all_ff(d + end, 4096 - end));
  free(b);
}

/*
** Three CPUs with small buffers: the file must hold the buffers in the
** order they filled up, then the rest in CPU order, every record once, in
** its CPU's buffers, in order.  The expected order comes from a model of
** the rule "flush when the next record does not fit".
*/
TEST(interleave) {
  enum { BS = 1024, NCPU = 3, NREC = 600 };
  hsi_writer_opts o;
  const char *path = tmp_path("ilv");
  hsi_writer *w;
  uint8_t *b, pl[64];
  size_t n, pos, model_off[NCPU] = {0, 0, 0}, nexp = 0, nb = 0, lastpos = 0;
  int expect[64], i, c;
  uint32_t next_seq[NCPU] = {0, 0, 0};
  int64_t last_ts[NCPU] = {-1, -1, -1};

  memset(&o, 0, sizeof o);
  o.buffer_size = BS;
  o.cpus = NCPU;
  CHECK((w = open_w(path, &o)) != NULL);
  if (!w) return;
  memset(pl, 0xAB, sizeof pl);
  for (i = 0; i < NREC; i++) {
    size_t len = 8 + (size_t)(i * 13) % 50, need = al8(0x10 + len);
    c = (i * 7 + i / 5) % NCPU;
    if (model_off[c] && model_off[c] + need > BS) { expect[nexp++] = c; model_off[c] = 0; }
    if (!model_off[c]) model_off[c] = 0x48;
    model_off[c] += need;
    pl[0] = (uint8_t)c;
    pl[4] = (uint8_t)next_seq[c];
    pl[5] = (uint8_t)(next_seq[c] >> 8);
    next_seq[c]++;
    CHECK_EQ(hsi_writer_kernel(w, c, HS_HT_PERFINFO64, 0x0F, 46, 2, 0, 0, 5000 + i / 2, pl, len), 0);
  }
  for (c = 0; c < NCPU; c++) if (model_off[c]) expect[nexp++] = c;
  CHECK(nexp > 6 && nexp < 64);
  CHECK_EQ(hsi_writer_buffers(w), 1 + nexp - NCPU);
  CHECK_EQ(hsi_writer_close(w), 0);
  CHECK((b = slurp(path, &n)) != NULL);
  if (!b) return;
  CHECK_EQ(n, BS * (1 + nexp));
  CHECK_EQ(r32(b + 0x68 + 0x24), 1 + nexp);
  memset(next_seq, 0, sizeof next_seq);
  for (pos = BS; pos + BS <= n; pos += BS, nb++) {
    const uint8_t *d = b + pos;
    uint32_t off = r32(d + 0x30), q;
    int cpu = r16(d + 0x28);
    CHECK(nb < nexp && cpu == expect[nb]);
    CHECK_EQ(r32(d), BS);
    CHECK_EQ(r32(d + 0x04), off);
    CHECK_EQ(r16(d + 0x34), nb + 1 == nexp ? 0x21 : 0x20);
    CHECK(all_ff(d + off, BS - off));
    for (q = 0x48; q < off; q += (uint32_t)al8(rec_size(d + q))) {
      const uint8_t *r = d + q;
      CHECK_EQ(r32(r), 0xC0110002u);
      CHECK_EQ(r[0x10], cpu);
      CHECK_EQ(r16(r + 0x14), next_seq[cpu]);
      CHECK((int64_t)r64(r + 8) >= last_ts[cpu]);
      last_ts[cpu] = (int64_t)r64(r + 8);
      next_seq[cpu]++;
      lastpos = q;
    }
    CHECK_EQ(q, off);
    (void)lastpos;
  }
  CHECK_EQ(nb, nexp);
  for (c = 0; c < NCPU; c++) {
    uint32_t want = 0;
    for (i = 0; i < NREC; i++) if ((i * 7 + i / 5) % NCPU == c) want++;
    CHECK_EQ(next_seq[c], want);
  }
  /* A buffer flushed because it was full: the next record of its CPU did
     not fit, and CurrentOffset says by how much it overshot. */
  {
    const uint8_t *d = b + BS;                  /* first data buffer, flushed full */
    int cpu = r16(d + 0x28);
    size_t p2;
    for (p2 = 2 * BS; p2 < n; p2 += BS) if (r16(b + p2 + 0x28) == cpu) break;
    CHECK(p2 < n);
    if (p2 < n) {
      size_t first = al8(rec_size(b + p2 + 0x48));
      CHECK(r32(d + 0x30) + first > BS);
      CHECK_EQ(r32(d + 0x08), r32(d + 0x30) + first);
    }
  }
  free(b);
}

TEST(timestamps) {
  const char *path = tmp_path("ts");
  hsi_writer *w;
  uint8_t *b;
  size_t n;

  CHECK((w = open_small(path)) != NULL);
  if (!w) return;
  CHECK_EQ(hsi_writer_kernel(w, 0, HS_HT_PERFINFO64, 2, 98, 2, 0, 0, 100, NULL, 0), 0);
  CHECK_EQ(hsi_writer_kernel(w, 0, HS_HT_PERFINFO64, 2, 98, 2, 0, 0, 99, NULL, 0), HS_EARG);
  CHECK(strstr(hsi_writer_error(w), "cpu 0") != NULL);
  CHECK_EQ(hsi_writer_event(w, 0, HS_HT_EVENT64, &guid_a, 1, 0, 0, 4, 0, 0, 1, 2, 50, NULL, 0, NULL, 0), HS_EARG);
  CHECK_EQ(hsi_writer_stack(w, 0, 98, 98, 1, 2, NULL, 0, 8), HS_EARG);
  CHECK_EQ(hsi_writer_kernel(w, 0, HS_HT_PERFINFO64, 2, 98, 2, 0, 0, 100, NULL, 0), 0);  /* equal is fine */
  CHECK_EQ(hsi_writer_kernel(w, 1, HS_HT_PERFINFO64, 2, 98, 2, 0, 0, 10, NULL, 0), 0);   /* other CPU */
  CHECK_EQ(hsi_writer_close(w), 0);
  CHECK((b = slurp(path, &n)) != NULL);
  if (!b) return;
  CHECK_EQ(n, 3 * 4096);
  CHECK_EQ(r32(b + 4096 + 0x30), 0x48 + 2 * 0x10); /* the rejected records left nothing */
  CHECK_EQ(r32(b + 8192 + 0x30), 0x48 + 0x10);
  free(b);
}

TEST(event_header) {
  hsi_writer_opts o;
  const char *path = tmp_path("evh");
  hsi_writer *w;
  uint8_t *b, *d, *r, pl[5] = {'a', 'b', 'c', 'd', 'e'}, tl[3] = {7, 8, 9};
  uint64_t st[3] = {0x7FFD2E570010u, 0x7FFD2E570020u, 0xFFFFF80000001234u};
  hsi_ext item[2];
  size_t n, q, isz;

  memset(&o, 0, sizeof o);
  o.buffer_size = 4096;
  CHECK((w = open_w(path, &o)) != NULL);
  if (!w) return;
  CHECK_EQ(hsi_writer_event(w, 0, HS_HT_EVENT64, &guid_a, 0x1234, 3, 10, 4, 0x55, 0x8000000000000001u,
                            0x111, 0x222, 777, pl, 5, st, 3), 0);
  CHECK_EQ(hsi_writer_event(w, 0, HS_HT_EVENT32, &guid_a, 7, 1, 2, 5, 0, 0, 3, 4, 778, pl, 2, st, 2), 0);
  CHECK_EQ(hsi_writer_event(w, 0, HS_HT_EVENT64, &guid_a, 8, 0, 0, 0, 0, 0, 3, 4, 779, pl, 1, NULL, 0), 0);
  item[0].type = HS_EXT_EVENT_SCHEMA_TL;
  item[0].len = 3;
  item[0].data = tl;
  item[1].type = HS_EXT_PROV_TRAITS;
  item[1].len = 2;
  item[1].data = tl + 1;
  CHECK_EQ(hsi_writer_event_ext(w, 0, HS_HT_EVENT32, &guid_a, 9, 0, 0, 0, 0, 0, 3, 4, 780,
                                st, 1, HS_EXT_STACK_TRACE64, item, 2, NULL, pl, 4), 0);
  CHECK_EQ(hsi_writer_close(w), 0);
  CHECK((b = slurp(path, &n)) != NULL);
  if (!b) return;
  d = b + 4096;
  /* EVENT64 + STACK_TRACE64 of 3 frames. */
  r = d + 0x48;
  isz = al8(8 + 8 + 24);
  CHECK_EQ(r16(r), 0x50 + isz + 5);
  CHECK_EQ(r16(r + 2), 0xC013);
  CHECK_EQ(r16(r + 4), 0x1);
  CHECK_EQ(r16(r + 6), 0);
  CHECK_EQ(r32(r + 8), 0x222);
  CHECK_EQ(r32(r + 12), 0x111);
  CHECK_EQ(r64(r + 16), 777);
  CHECK(memcmp(r + 0x18, guid_a_bytes, 16) == 0);
  CHECK_EQ(r16(r + 0x28), 0x1234);
  CHECK_EQ(r[0x2A], 3);
  CHECK_EQ(r[0x2C], 4);
  CHECK_EQ(r[0x2D], 10);
  CHECK_EQ(r16(r + 0x2E), 0x55);
  CHECK_EQ(r64(r + 0x30), 0x8000000000000001u);
  CHECK_EQ(r16(r + 0x50), isz);
  CHECK_EQ(r16(r + 0x52), 6);
  CHECK_EQ(r16(r + 0x54), 0);                 /* last item */
  CHECK_EQ(r16(r + 0x56), 8 + 24);
  CHECK_EQ(r64(r + 0x58), 0);                 /* MatchId */
  CHECK_EQ(r64(r + 0x60), st[0]);
  CHECK_EQ(r64(r + 0x70), st[2]);
  CHECK(memcmp(r + 0x50 + isz, pl, 5) == 0);
  q = 0x48 + al8(r16(r));
  /* EVENT32 + STACK_TRACE32: u32 frames, item padded to 8. */
  r = d + q;
  isz = al8(8 + 8 + 8);
  CHECK_EQ(r16(r + 2), 0xC012);
  CHECK_EQ(r16(r), 0x50 + isz + 2);
  CHECK_EQ(r16(r + 0x50), isz);
  CHECK_EQ(r16(r + 0x52), 5);
  CHECK_EQ(r16(r + 0x56), 16);
  CHECK_EQ(r32(r + 0x60), (uint32_t)st[0]);
  CHECK_EQ(r32(r + 0x64), (uint32_t)st[1]);
  CHECK(memcmp(r + 0x50 + isz, pl, 2) == 0);
  q += al8(r16(r));
  /* No stack: no ext flag, payload right after the header. */
  r = d + q;
  CHECK_EQ(r16(r), 0x51);
  CHECK_EQ(r16(r + 4), 0);
  CHECK_EQ(r[0x50], 'a');
  q += al8(r16(r));
  /* STACK_TRACE64 on an EVENT32 record, then two TraceLogging items. */
  r = d + q;
  CHECK_EQ(r16(r + 2), 0xC012);
  CHECK_EQ(r16(r + 4), 0x1);
  CHECK_EQ(r16(r + 0x50), 24);
  CHECK_EQ(r16(r + 0x52), 6);
  CHECK_EQ(r16(r + 0x54), 1);                 /* linkage: more follow */
  CHECK_EQ(r64(r + 0x60), st[0]);
  CHECK_EQ(r16(r + 0x68), 16);
  CHECK_EQ(r16(r + 0x6A), 11);
  CHECK_EQ(r16(r + 0x6C), 1);
  CHECK_EQ(r16(r + 0x6E), 3);
  CHECK(memcmp(r + 0x70, tl, 3) == 0);
  CHECK_EQ(r16(r + 0x78), 16);
  CHECK_EQ(r16(r + 0x7A), 12);
  CHECK_EQ(r16(r + 0x7C), 0);                 /* the last item ends the chain */
  CHECK_EQ(r16(r + 0x7E), 2);
  CHECK(memcmp(r + 0x80, tl + 1, 2) == 0);
  CHECK(memcmp(r + 0x88, pl, 4) == 0);
  CHECK_EQ(r16(r), 0x88 + 4);
  CHECK_EQ(r32(d + 0x30), q + al8(0x8C));
  free(b);
}

TEST(mof_and_stackwalk) {
  hsi_writer_opts o;
  const char *path = tmp_path("mof");
  hsi_writer *w;
  uint8_t *b, *r, pl[3] = {1, 2, 3};
  uint64_t fr[2] = {0xFFFFF80012345678u, 0x7FF612340000u};
  size_t n;

  memset(&o, 0, sizeof o);
  o.buffer_size = 4096;
  CHECK((w = open_w(path, &o)) != NULL);
  if (!w) return;
  CHECK_EQ(hsi_writer_mof(w, 0, HS_HT_FULL64, &guid_a, 36, 2, 5, 6, 50, pl, 3), 0);
  CHECK_EQ(hsi_writer_stack(w, 0, 51, 50, 5, 6, fr, 2, 8), 0);
  CHECK_EQ(hsi_writer_stack(w, 0, 52, 50, 5, 6, fr, 2, 4), 0);
  CHECK_EQ(hsi_writer_close(w), 0);
  CHECK((b = slurp(path, &n)) != NULL);
  if (!b) return;
  r = b + 4096 + 0x48;
  CHECK_EQ(r16(r), 0x33);
  CHECK_EQ(r16(r + 2), 0xC014);
  CHECK_EQ(r[4], 36);
  CHECK_EQ(r16(r + 6), 2);
  CHECK_EQ(r32(r + 8), 6);
  CHECK_EQ(r32(r + 12), 5);
  CHECK_EQ(r64(r + 16), 50);
  CHECK(memcmp(r + 0x18, guid_a_bytes, 16) == 0);
  CHECK(memcmp(r + 0x30, pl, 3) == 0);
  /* StackWalk op 32, PERFINFO64: stamp, EventTimeStamp, pid, tid, frames. */
  r += 0x38;
  CHECK_EQ(r32(r), 0xC0110002u);
  CHECK_EQ(r16(r + 4), 0x10 + 16 + 16);
  CHECK_EQ(r16(r + 6), 0x1820);
  CHECK_EQ(r64(r + 8), 51);
  CHECK_EQ(r64(r + 16), 50);
  CHECK_EQ(r32(r + 24), 5);
  CHECK_EQ(r32(r + 28), 6);
  CHECK_EQ(r64(r + 32), fr[0]);
  CHECK_EQ(r64(r + 40), fr[1]);
  r += 0x30;
  CHECK_EQ(r32(r), 0xC0100002u);
  CHECK_EQ(r16(r + 4), 0x10 + 16 + 8);
  CHECK_EQ(r32(r + 32), (uint32_t)fr[0]);
  CHECK_EQ(r32(r + 36), (uint32_t)fr[1]);
  free(b);
}

/* What a copied record keeps (hsi_hdr_more): EVENT_HEADER Flags,
   EventProperty, Channel, processor time and ActivityId; FULL and
   INSTANCE Class.Level, processor time and instance ids; SYSTEM's
   processor times.  They were written as zero. */
TEST(header_more) {
  hsi_writer_opts o;
  const char *path = tmp_path("more");
  hsi_writer *w;
  hsi_hdr_more m;
  hsi_ext item;
  uint8_t *b, *r, pl[3] = {1, 2, 3};
  size_t n;

  memset(&o, 0, sizeof o);
  o.buffer_size = 4096;
  memset(&m, 0, sizeof m);
  m.cpu_time = 0x0000000500000007u;
  m.activity_id = guid_a;
  m.flags = 0x4 | 0x40 | 0x1;                 /* STRING_ONLY, 64_BIT_HEADER; EXTENDED_INFO is the writer's */
  m.event_property = 0x2;
  m.channel = 11;
  m.level = 4;
  m.instance_id = 77;
  m.parent_instance_id = 66;
  m.parent_guid = guid_a;
  item.type = HS_EXT_EVENT_SCHEMA_TL;
  item.len = 3;
  item.data = pl;
  CHECK((w = open_w(path, &o)) != NULL);
  if (!w) return;
  CHECK_EQ(hsi_writer_event_ext(w, 0, HS_HT_EVENT64, &guid_a, 1, 0, 0, 0, 0, 0, 3, 4, 10,
                                NULL, 0, 0, NULL, 0, &m, pl, 2), 0);
  CHECK_EQ(hsi_writer_event_ext(w, 0, HS_HT_EVENT64, &guid_a, 1, 0, 0, 0, 0, 0, 3, 4, 11,
                                NULL, 0, 0, &item, 1, &m, pl, 2), 0);
  CHECK_EQ(hsi_writer_mof_more(w, 0, HS_HT_FULL32, &guid_a, 36, 2, 5, 6, 12, &m, pl, 3), 0);
  CHECK_EQ(hsi_writer_mof_more(w, 0, HS_HT_INSTANCE64, &guid_a, 36, 2, 5, 6, 13, &m, pl, 3), 0);
  CHECK_EQ(hsi_writer_kernel_more(w, 0, HS_HT_SYSTEM64, 0x10, 33, 0x8002, 5, 6, 14, &m, pl, 3), 0);
  CHECK_EQ(hsi_writer_mof(w, 0, HS_HT_INSTANCE64, &guid_a, 36, 2, 5, 6, 15, pl, 3), HS_EARG);
  CHECK_EQ(hsi_writer_close(w), 0);
  CHECK((b = slurp(path, &n)) != NULL);
  if (!b) return;
  r = b + 4096 + 0x48;
  CHECK_EQ(r16(r + 4), 0x44);                 /* no items: EXTENDED_INFO clear */
  CHECK_EQ(r16(r + 6), 2);
  CHECK_EQ(r[0x2B], 11);
  CHECK_EQ(r64(r + 0x38), m.cpu_time);
  CHECK(memcmp(r + 0x40, guid_a_bytes, 16) == 0);
  r += al8(r16(r));
  CHECK_EQ(r16(r + 4), 0x45);                 /* an item: EXTENDED_INFO set */
  CHECK_EQ(r[0x2B], 11);
  CHECK_EQ(r16(r + 0x52), HS_EXT_EVENT_SCHEMA_TL);
  r += al8(r16(r));
  CHECK_EQ(r16(r), 0x33);
  CHECK_EQ(r16(r + 2), 0xC00A);
  CHECK_EQ(r[5], 4);                          /* Class.Level */
  CHECK_EQ(r64(r + 0x28), m.cpu_time);
  CHECK(memcmp(r + 0x30, pl, 3) == 0);
  r += al8(r16(r));
  CHECK_EQ(r16(r), 0x4B);                     /* EVENT_INSTANCE_GUID_HEADER: 0x48 */
  CHECK_EQ(r16(r + 2), 0xC015);
  CHECK_EQ(r[5], 4);
  CHECK_EQ(r64(r + 0x28), m.cpu_time);
  CHECK_EQ(r32(r + 0x30), 77);
  CHECK_EQ(r32(r + 0x34), 66);
  CHECK(memcmp(r + 0x38, guid_a_bytes, 16) == 0);
  CHECK(memcmp(r + 0x48, pl, 3) == 0);
  r += al8(r16(r));
  CHECK_EQ(r16(r), 0x8002);                   /* the whole version word */
  CHECK_EQ(r16(r + 4), 0x23);
  CHECK_EQ(r64(r + 0x18), m.cpu_time);        /* KernelTime, UserTime */
  free(b);
}

/* hsi_writer_mark: the buffer of the next record gets the lost flags;
   a second mark has a buffer of its own (merge carries each flagged
   input buffer; they were dropped). */
TEST(marked_buffers) {
  const char *path = tmp_path("mark");
  hsi_writer *w;
  uint8_t *b;
  size_t n;

  CHECK((w = open_small(path)) != NULL);
  if (!w) return;
  CHECK_EQ(hsi_writer_kernel(w, 0, HS_HT_SYSTEM64, 5, 36, 2, 4, 5, 10, NULL, 0), 0);
  CHECK_EQ(hsi_writer_mark(w, 0, 0x2), 0);
  CHECK_EQ(hsi_writer_kernel(w, 0, HS_HT_SYSTEM64, 5, 36, 2, 4, 5, 11, NULL, 0), 0);  /* the open buffer */
  CHECK_EQ(hsi_writer_mark(w, 0, 0x4), 0);
  CHECK_EQ(hsi_writer_kernel(w, 0, HS_HT_SYSTEM64, 5, 36, 2, 4, 5, 12, NULL, 0), 0);  /* a new one */
  CHECK_EQ(hsi_writer_kernel(w, 0, HS_HT_SYSTEM64, 5, 36, 2, 4, 5, 13, NULL, 0), 0);
  CHECK_EQ(hsi_writer_kernel(w, 1, HS_HT_SYSTEM64, 5, 36, 2, 4, 5, 13, NULL, 0), 0);
  CHECK_EQ(hsi_writer_mark(w, 2, 0x2), HS_EARG);
  CHECK_EQ(hsi_writer_mark(w, 0, 0x1), HS_EARG);
  CHECK_EQ(hsi_writer_close(w), 0);
  CHECK((b = slurp(path, &n)) != NULL);
  if (!b) return;
  CHECK_EQ(n, 4 * 4096);
  CHECK_EQ(r16(b + 4096 + 0x34), 0x22);           /* cpu 0: records 10, 11 */
  CHECK_EQ(r32(b + 4096 + 0x30), 0x48 + 2 * 0x20);
  CHECK_EQ(r16(b + 2 * 4096 + 0x34), 0x24);       /* cpu 0: 12, 13 */
  CHECK_EQ(r64(b + 2 * 4096 + 0x48 + 0x10), 12);
  CHECK_EQ(r16(b + 3 * 4096 + 0x34), 0x21);       /* cpu 1, the last: not marked */
  free(b);
}

TEST(rundown_payloads) {
  const char *path = tmp_path("rd");
  hsi_writer *w;
  uint8_t *b, *r, *p;
  size_t n, len;
  /* "é" is one UTF-16 unit, U+1F600 a surrogate pair. */
  const char *cmd = "a \xC3\xA9 \xF0\x9F\x98\x80";

  CHECK((w = open_small(path)) != NULL);
  if (!w) return;
  CHECK_EQ(hsi_writer_process(w, 0, 1, 8, 0x1234, 0x10, 10, "app.exe", cmd), 0);
  CHECK_EQ(hsi_writer_thread(w, 0, 3, 0, 0x1234, 0x99, 0x7FF600001000u, 11), 0);
  CHECK_EQ(hsi_writer_image(w, 0, 10, 8, 0x1234, 0x7FF600000000u, 0x5000, 12, "\\Device\\X\\a.dll"), 0);
  CHECK_EQ(hsi_writer_image(w, 1, 3, 4, 0x1234, 0x10000000u, 0x3000, 13, "b"), 0);
  CHECK_EQ(hsi_writer_process(w, 1, 5, 8, 1, 1, 14, "x", NULL), HS_EARG);
  CHECK_EQ(hsi_writer_image(w, 1, 1, 8, 1, 1, 1, 14, "x"), HS_EARG);
  CHECK_EQ(hsi_writer_close(w), 0);
  CHECK((b = slurp(path, &n)) != NULL);
  if (!b) return;
  /* Process v4 Start: header pid = parent. */
  r = b + 4096 + 0x48;
  len = 16 + 24 + 8 + 14 + 4;
  CHECK_EQ(r32(r), 0xC0020004u);
  CHECK_EQ(r16(r + 4), 0x20 + len);
  CHECK_EQ(r16(r + 6), 0x0301);
  CHECK_EQ(r32(r + 12), 0x10);
  p = r + 0x20;
  CHECK_EQ(r32(p + 8), 0x1234);
  CHECK_EQ(r32(p + 12), 0x10);
  CHECK_EQ(r32(p + 20), 0x103);
  CHECK_EQ(r32(p + 32), 0);                   /* Flags */
  CHECK_EQ(r32(p + 36), 0);                   /* empty SID */
  CHECK(memcmp(p + 40, "app.exe", 8) == 0);
  CHECK_EQ(r16(p + 48), 'a');
  CHECK_EQ(r16(p + 52), 0xE9);
  CHECK_EQ(r16(p + 56), 0xD83D);
  CHECK_EQ(r16(p + 58), 0xDE00);
  CHECK_EQ(r16(p + 60), 0);
  CHECK_EQ(r32(p + 62), 0);                   /* PackageFullName, ApplicationId */
  /* Thread v3 DCStart, 72 bytes at P = 8. */
  r += al8(0x20 + len);
  CHECK_EQ(r32(r), 0xC0020003u);
  CHECK_EQ(r16(r + 4), 0x20 + 72);
  CHECK_EQ(r16(r + 6), 0x0503);
  CHECK_EQ(r32(r + 8), 0x99);
  p = r + 0x20;
  CHECK_EQ(r32(p), 0x1234);
  CHECK_EQ(r32(p + 4), 0x99);
  CHECK_EQ(r64(p + 40), 3);                   /* affinity of 2 CPUs */
  CHECK_EQ(r64(p + 48), 0x7FF600001000u);
  CHECK_EQ(p[68], 8);
  /* Image Load v3 under hook 0x030A. */
  r += al8(0x20 + 72);
  CHECK_EQ(r32(r), 0xC0020003u);
  CHECK_EQ(r16(r + 6), 0x030A);
  p = r + 0x20;
  CHECK_EQ(r64(p), 0x7FF600000000u);
  CHECK_EQ(r64(p + 8), 0x5000);
  CHECK_EQ(r32(p + 16), 0x1234);
  CHECK_EQ(r64(p + 32), 0x7FF600000000u);
  CHECK(wstr_is(p + 56, "\\Device\\X\\a.dll"));
  CHECK_EQ(r16(r + 4), 0x20 + 56 + 32);
  /* Image DCStart, 32-bit: hook 0x1403, SYSTEM32, FileName at 3P+32. */
  r = b + 8192 + 0x48;
  CHECK_EQ(r32(r), 0xC0010003u);
  CHECK_EQ(r16(r + 6), 0x1403);
  p = r + 0x20;
  CHECK_EQ(r32(p), 0x10000000u);
  CHECK_EQ(r32(p + 4), 0x3000);
  CHECK_EQ(r32(p + 8), 0x1234);
  CHECK_EQ(r32(p + 24), 0x10000000u);
  CHECK(wstr_is(p + 44, "b"));
  CHECK_EQ(r16(r + 4), 0x20 + 44 + 4);
  free(b);
}

TEST(old_layout) {
  hsi_writer_opts o;
  const char *path = tmp_path("old");
  hsi_writer *w;
  uint8_t *b, *d, pl[20] = {0};
  size_t n, off;
  int i;

  memset(&o, 0, sizeof o);
  o.old_layout = 1;
  o.pointer_size = 4;
  o.buffer_size = 1024;
  o.cpus = 2;
  o.logger_id = 0x13;
  o.logger_name = "L";
  o.log_file_name = "F";
  CHECK((w = open_w(path, &o)) != NULL);
  if (!w) return;
  for (i = 0; i < 60; i++)
    CHECK_EQ(hsi_writer_kernel(w, 1, HS_HT_SYSTEM32, 5, 36, 2, 4, 5, i, pl, 20), 0);
  CHECK_EQ(hsi_writer_kernel(w, 0, HS_HT_SYSTEM32, 5, 36, 2, 4, 5, 0, pl, 20), 0);
  CHECK_EQ(hsi_writer_close(w), 0);
  CHECK((b = slurp(path, &n)) != NULL);
  if (!b) return;
  /* 60 records of 0x38 on cpu 1, 17 per buffer: 3 full buffers, then the
     stop flushes cpu 0 and cpu 1 in CPU order. */
  CHECK_EQ(n, 6 * 1024);
  off = 0x48 + al8(0x20 + 0x110 + 4 + 4);
  CHECK_EQ(r32(b + 0x68 + 0x04), 0x05010106u);  /* 6.1.1.5 */
  CHECK_EQ(r32(b + 0x68 + 0x08), 7601);
  CHECK_EQ(r32(b + 0x04), 0);                   /* SavedOffset 0 */
  CHECK_EQ(r32(b + 0x30), off);
  CHECK_EQ(r32(b + 0x08), off);
  CHECK_EQ(r16(b + 0x34), 0x1);
  CHECK_EQ(b[0x28], 0);
  CHECK_EQ(b[0x29], 8);
  CHECK_EQ(r16(b + 0x2A), 0x13);
  for (i = 1; i < 6; i++) {
    d = b + 1024 * i;
    CHECK_EQ(d[0x28], i == 4 ? 0 : 1);
    CHECK_EQ(d[0x29], 8);
    CHECK_EQ(r16(d + 0x2A), 0x13);
    CHECK_EQ(r16(d + 0x34), i == 5 ? 0x1 : 0);  /* no PROC_INDEX; marker on the last */
    CHECK_EQ(r32(d + 0x04), r32(d + 0x30));
  }
  CHECK_EQ(r32(b + 1024 + 0x30), 0x48 + 17 * 0x38);
  free(b);
}

/*
** The same events into a plain and a compressed file: every compressed
** buffer must inflate to the plain file's buffer of the same rank.
*/
static void compressed_case(int format, int must_work) {
  enum { BS = 8192 };
  hsi_writer_opts o;
  const char *pp = tmp_path("zp"), *zp = tmp_path("zz");
  hsi_writer *wp, *wz;
  uint8_t *pb, *zb, pl[200], *out;
  size_t pn, zn, pos, ppos, off;
  uint32_t seed = 12345;
  int i, rc, ncomp = 0, nplain = 0;
  char err[256];

  memset(&o, 0, sizeof o);
  o.buffer_size = BS;
  o.cpus = 2;
  o.compress = format;
  rc = hsi_writer_open(&wz, zp, &o, err, sizeof err);
  if (rc == HS_EUNSUP && !must_work) { remove(zp); return; }
  CHECK_EQ(rc, 0);
  if (rc) return;
  o.compress = 0;
  CHECK((wp = open_w(pp, &o)) != NULL);
  if (!wp) { hsi_writer_close(wz); return; }
  for (i = 0; i < 400; i++) {
    int cpu = i % 3 == 0, k, len = 24 + i % 150;
    /* cpu 1 gets noise so that some buffers do not shrink. */
    for (k = 0; k < len; k++) {
      seed = seed * 1103515245u + 12345u;
      pl[k] = cpu ? (uint8_t)(seed >> 16) : (uint8_t)(k % 7 + i % 3);
    }
    CHECK_EQ(hsi_writer_kernel(wp, cpu, HS_HT_SYSTEM64, 0x10, 33, 2, 1, 2, i, pl, (size_t)len), 0);
    CHECK_EQ(hsi_writer_kernel(wz, cpu, HS_HT_SYSTEM64, 0x10, 33, 2, 1, 2, i, pl, (size_t)len), 0);
  }
  CHECK_EQ(hsi_writer_close(wp), 0);
  CHECK_EQ(hsi_writer_close(wz), 0);
  pb = slurp(pp, &pn);
  zb = slurp(zp, &zn);
  CHECK(pb && zb);
  if (!pb || !zb) { free(pb); free(zb); return; }
  /* Buffer 0: relogger form, never compressed, stored in 512-byte units. */
  off = r32(zb + 0x30);
  CHECK_EQ(r32(zb), (off + 511) & ~(size_t)511);
  CHECK_EQ(r32(zb + 0x04), off);
  CHECK_EQ(r32(zb + 0x2C), format);
  CHECK_EQ(r16(zb + 0x34), 0x1);
  CHECK(all_ff(zb + off, r32(zb) - off));
  CHECK_EQ(r32(zb + 0x68 + 0x04), 0x0002000Au);  /* 10.0.2.0 */
  CHECK_EQ(r32(zb + 0x68 + 0x20), 0x04010001u);
  CHECK_EQ(r32(pb + 0x68 + 0x20), 0x1);
  CHECK_EQ(r32(zb + 0x68 + 0x24), r32(pb + 0x68 + 0x24));
  out = malloc(BS);
  for (pos = r32(zb), ppos = BS; pos < zn && ppos < pn; pos += r32(zb + pos), ppos += BS) {
    const uint8_t *z = zb + pos, *p = pb + ppos;
    uint32_t zoff = r32(z + 0x30);
    CHECK_EQ(zoff, r32(p + 0x30));
    CHECK_EQ(r32(z + 0x04), zoff);
    /* Same header as the plain buffer but for BufferSize, TimeStamp
       (FILETIME in relogged files) and the flag. */
    CHECK(memcmp(z + 0x04, p + 0x04, 0x0C) == 0);
    CHECK(memcmp(z + 0x18, p + 0x18, 0x1C) == 0);
    CHECK(memcmp(z + 0x36, p + 0x36, 0x12) == 0);
    CHECK(r32(z) >= 0x48 && pos + r32(z) <= zn);
    if (r32(z) < 0x48 || pos + r32(z) > zn) break;
    if (r16(z + 0x34) & 0x40) {
      long got;
      ncomp++;
      CHECK_EQ(r16(z + 0x34) & ~0x41, 0x20);
      CHECK(r32(z) < BS);
      got = hs_xca_decompress(format, z + 0x48, r32(z) - 0x48, out, BS - 0x48);
      CHECK_EQ(got, zoff - 0x48);
      CHECK(got == (long)(zoff - 0x48) && memcmp(out, p + 0x48, zoff - 0x48) == 0);
    } else {
      nplain++;
      CHECK_EQ(r32(z), BS);
      CHECK(memcmp(z + 0x48, p + 0x48, BS - 0x48) == 0);
    }
  }
  CHECK_EQ(pos, zn);
  CHECK_EQ(ppos, pn);
  CHECK_EQ(1 + ncomp + nplain, r32(zb + 0x68 + 0x24));
  CHECK(ncomp >= 2);
  free(out);
  free(pb);
  free(zb);
}

TEST(compressed) {
  compressed_case(HS_XCA_XPRESS, 1);
  compressed_case(HS_XCA_LZNT1, 0);
  compressed_case(HS_XCA_XPRESS_HUFF, 0);
}

TEST(extension_record) {
  hsi_writer_opts o;
  const char *path = tmp_path("ext");
  hsi_writer *w;
  uint8_t *b, *r;
  size_t n;
  uint32_t masks[8] = {0, 0x8040, 0x20, 0, 0, 0, 0, 0};

  memset(&o, 0, sizeof o);
  o.buffer_size = 4096;
  o.logger_name = "a";
  o.log_file_name = "b";
  o.group_masks = masks;
  CHECK((w = open_w(path, &o)) != NULL);
  if (!w) return;
  CHECK_EQ(hsi_writer_close(w), 0);
  CHECK((b = slurp(path, &n)) != NULL);
  if (!b) return;
  r = b + 0x48 + al8(0x20 + 0x118 + 8);
  CHECK_EQ(r32(r), 0xC0020002u);
  CHECK_EQ(r16(r + 4), 0x44);
  CHECK_EQ(r16(r + 6), 0x0005);
  CHECK_EQ(r32(r + 0x24), 0x8040);
  CHECK_EQ(r32(r + 0x28), 0x20);
  CHECK_EQ(r32(b + 0x30), (size_t)(r - b) + 0x48);
  free(b);
}

TEST(errors) {
  hsi_writer_opts o;
  hsi_writer *w = NULL;
  char err[256] = "";
  uint8_t big[70000];

  memset(&o, 0, sizeof o);
  CHECK_EQ(hsi_writer_open(&w, "/nonexistent-dir/x/y.etl", &o, err, sizeof err), HS_EIO);
  CHECK(w == NULL);
  CHECK(strstr(err, "/nonexistent-dir/x/y.etl") != NULL);
  o.pointer_size = 6;
  CHECK_EQ(hsi_writer_open(&w, tmp_path("e1"), &o, err, sizeof err), HS_EARG);
  o.pointer_size = 8;
  o.buffer_size = 1000;                       /* not a multiple of 8... */
  CHECK_EQ(hsi_writer_open(&w, tmp_path("e1"), &o, err, sizeof err), HS_EARG);
  o.buffer_size = 1024;
  o.compress = 3;
  o.old_layout = 1;
  CHECK_EQ(hsi_writer_open(&w, tmp_path("e1"), &o, err, sizeof err), HS_EARG);
  o.old_layout = 0;
  o.compress = 9;
  CHECK_EQ(hsi_writer_open(&w, tmp_path("e1"), &o, err, sizeof err), HS_EARG);
  o.compress = 0;
  o.cpus = 2;
  CHECK((w = open_w(tmp_path("e1"), &o)) != NULL);
  if (!w) return;
  memset(big, 0, sizeof big);
  CHECK_EQ(hsi_writer_kernel(w, 2, HS_HT_SYSTEM64, 1, 1, 2, 0, 0, 0, NULL, 0), HS_EARG);
  CHECK_EQ(hsi_writer_kernel(w, -1, HS_HT_SYSTEM64, 1, 1, 2, 0, 0, 0, NULL, 0), HS_EARG);
  CHECK_EQ(hsi_writer_kernel(w, 0, HS_HT_EVENT64, 1, 1, 2, 0, 0, 0, NULL, 0), HS_EARG);
  CHECK_EQ(hsi_writer_kernel(w, 0, HS_HT_SYSTEM64, 256, 1, 2, 0, 0, 0, NULL, 0), HS_EARG);
  CHECK_EQ(hsi_writer_kernel(w, 0, HS_HT_SYSTEM64, 1, 1, 2, 0, 0, 0, NULL, 4), HS_EARG);
  /* The largest record that fits a 1 KiB buffer, and one byte more. */
  CHECK_EQ(hsi_writer_kernel(w, 0, HS_HT_SYSTEM64, 1, 1, 2, 0, 0, 0, big, 1024 - 0x48 - 0x20), 0);
  CHECK_EQ(hsi_writer_kernel(w, 0, HS_HT_SYSTEM64, 1, 1, 2, 0, 0, 0, big, 1024 - 0x48 - 0x20 + 1), HS_EARG);
  CHECK_EQ(hsi_writer_kernel(w, 0, HS_HT_SYSTEM64, 1, 1, 2, 0, 0, 0, big, sizeof big), HS_EARG);
  CHECK_EQ(hsi_writer_mof(w, 0, HS_HT_SYSTEM64, &guid_a, 1, 1, 0, 0, 0, NULL, 0), HS_EARG);
  CHECK_EQ(hsi_writer_event(w, 0, HS_HT_FULL64, &guid_a, 1, 1, 0, 0, 0, 0, 0, 0, 0, NULL, 0, NULL, 0), HS_EARG);
  CHECK_EQ(hsi_writer_stack(w, 0, 0, 0, 0, 0, NULL, 0, 5), HS_EARG);
  {
    hsi_ext two[2];
    two[0].type = two[1].type = HS_EXT_EVENT_SCHEMA_TL;
    two[0].len = two[1].len = 0x8000;
    two[0].data = two[1].data = big;
    CHECK_EQ(hsi_writer_event_ext(w, 0, HS_HT_EVENT64, &guid_a, 1, 0, 0, 0, 0, 0, 0, 0, 0,
                                  NULL, 0, 0, two, 2, NULL, NULL, 0), HS_EARG);
  }
  CHECK(hsi_writer_error(w)[0] != 0);
  CHECK_EQ(hsi_writer_kernel(w, 0, HS_HT_SYSTEM64, 1, 1, 2, 0, 0, 1, NULL, 0), 0); /* still usable */
  CHECK_EQ(hsi_writer_buffers(w), 2);         /* the full-size record was flushed */
  CHECK_EQ(hsi_writer_close(w), 0);
  remove(tmp_path("e1"));
}

int main(void) {
  RUN(header64);
  RUN(header32);
  RUN(header_kept);
  RUN(kernel_records);
  RUN(interleave);
  RUN(timestamps);
  RUN(event_header);
  RUN(mof_and_stackwalk);
  RUN(header_more);
  RUN(marked_buffers);
  RUN(rundown_payloads);
  RUN(old_layout);
  RUN(compressed);
  RUN(extension_record);
  RUN(errors);
  return UNIT_DONE();
}
