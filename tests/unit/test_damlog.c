/*
** test_damlog.c -- damage reports kept once each (damlog.h): a repeat is
** counted in the total and nothing else, reports differing in any of
** file, offset, buffer or wording are distinct, the first HSI_DAMLOG_MAX
** are kept in order and the rest only counted, and the lines printed are
** the kept ones and one for the rest; one log's reports added to another
** as they are or as one file.
*/
#include "unit.h"
#include "damlog.h"

static hs_damage dmg(int file, uint64_t pos, uint32_t buffer, const char *what) {
  hs_damage d;
  d.file = file;
  d.pos = pos;
  d.buffer = buffer;
  d.what = what;
  return d;
}

TEST(repeats_and_distinct) {
  hsi_damlog l;
  hs_damage a = dmg(0, 0x1400, 5, "a buffer header"), d;
  memset(&l, 0, sizeof l);
  CHECK_EQ(hsi_damlog_add(&l, &a), 1);
  CHECK_EQ(hsi_damlog_add(&l, &a), 0);               /* a rewound reader's repeat */
  d = dmg(1, 0x1400, 5, "a buffer header");          /* another file */
  CHECK_EQ(hsi_damlog_add(&l, &d), 1);
  d = dmg(0, 0x1401, 5, "a buffer header");          /* another offset */
  CHECK_EQ(hsi_damlog_add(&l, &d), 1);
  d = dmg(0, 0x1400, 6, "a buffer header");          /* another buffer */
  CHECK_EQ(hsi_damlog_add(&l, &d), 1);
  d = dmg(0, 0x1400, 5, "a record");                 /* another wording */
  CHECK_EQ(hsi_damlog_add(&l, &d), 1);
  d = dmg(0, 0x1400, 5, NULL);                       /* none: the empty wording */
  CHECK_EQ(hsi_damlog_add(&l, &d), 1);
  d.what = "";
  CHECK_EQ(hsi_damlog_add(&l, &d), 0);
  CHECK_EQ(l.n, 6);
  CHECK_EQ(l.total, 8);
  CHECK_EQ(l.unlisted, 0);
  CHECK_EQ(l.e[0].pos, 0x1400);
  CHECK_STR(l.e[0].what, "a buffer header");
  CHECK_EQ(l.e[1].file, 1);
  CHECK_STR(l.e[5].what, "");
  hsi_damlog_free(&l);
  CHECK(l.n == 0 && l.e == NULL && l.seen == NULL && l.total == 0);
  CHECK_EQ(hsi_damlog_add(&l, &a), 1);               /* empty again, usable again */
  hsi_damlog_free(&l);
}

TEST(kept_then_counted) {
  hsi_damlog l;
  uint64_t k;
  memset(&l, 0, sizeof l);
  for (k = 0; k < HSI_DAMLOG_MAX + 1000; k++) {
    hs_damage d = dmg(0, 0x48 * k, (uint32_t)k, "a buffer header");
    CHECK_EQ(hsi_damlog_add(&l, &d), k < HSI_DAMLOG_MAX ? 1 : 2);
  }
  for (k = 0; k < HSI_DAMLOG_MAX + 1000; k++) {      /* the pass's reader: all again */
    hs_damage d = dmg(0, 0x48 * k, (uint32_t)k, "a buffer header");
    if (hsi_damlog_add(&l, &d) != 0) break;
  }
  CHECK_EQ(k, HSI_DAMLOG_MAX + 1000);
  CHECK_EQ(l.n, HSI_DAMLOG_MAX);
  CHECK_EQ(l.unlisted, 1000);
  CHECK_EQ(l.total, 2 * (HSI_DAMLOG_MAX + 1000));
  CHECK_EQ(l.e[HSI_DAMLOG_MAX - 1].buffer, HSI_DAMLOG_MAX - 1);
  hsi_damlog_free(&l);
}

TEST(lines) {
  hsi_damlog l;
  hs_damage d = dmg(1, 0x2a0, 3, "a record Size of at least 8 bytes");
  const char *paths[2] = { "a.etl", "b.etl" };
  char buf[512];
  FILE *f = tmpfile();
  size_t n;
  uint64_t k;
  memset(&l, 0, sizeof l);
  CHECK(f != NULL);
  if (!f) return;
  hsi_damlog_add(&l, &d);
  CHECK_EQ(hsi_damlog_print(f, &l, paths), 1);
  for (k = 0; k < HSI_DAMLOG_MAX + 2; k++) {
    hs_damage e = dmg(0, 0x10000 * k, (uint32_t)k, "x");
    hsi_damlog_add(&l, &e);
  }
  hsi_damlog_more(f, &l, paths[0]);
  rewind(f);
  n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = 0;
  CHECK_STR(buf, "heapscript: b.etl: offset 0x2a0 (buffer 3): damaged: expected a record Size of at least 8 bytes; skipped\n"
                 "heapscript: a.etl: 3 more damage reports not listed (only the first 4096 are kept)\n");
  fclose(f);
  hsi_damlog_free(&l);
}

/* A file's log added to a trace's as its file 1 (and as they are): what
   the trace had already is not added twice, the wording is copied. */
TEST(add_all) {
  hsi_damlog f, t;
  hs_damage a = dmg(0, 0x1000, 1, "a buffer header"), b = dmg(0, 0x2000, 2, "a record"), c = dmg(1, 0x1000, 1, "a buffer header");
  char what[] = "a buffer header";
  memset(&f, 0, sizeof f);
  memset(&t, 0, sizeof t);
  a.what = what;
  CHECK_EQ(hsi_damlog_add(&f, &a), 1);
  CHECK_EQ(hsi_damlog_add(&f, &b), 1);
  CHECK_EQ(hsi_damlog_add(&t, &c), 1);                /* met by the trace's own reader */
  hsi_damlog_add_all(&t, &f, 1);
  what[0] = 'X';                                       /* the copy does not follow */
  CHECK_EQ(t.n, 2);
  CHECK_EQ(t.e[1].file, 1);
  CHECK_EQ(t.e[1].pos, 0x2000);
  CHECK_STR(t.e[1].what, "a record");
  CHECK_STR(t.e[0].what, "a buffer header");
  hsi_damlog_add_all(&t, &f, -1);                      /* as they are: file 0, new */
  CHECK_EQ(t.n, 4);
  CHECK_EQ(t.e[2].file, 0);
  CHECK_STR(t.e[2].what, "a buffer header");
  hsi_damlog_free(&f);
  hsi_damlog_free(&t);
}

/* The counts a command gives for its damage (its exit and its summary
   line) are of every distinct report, the ones not kept included: from
   the printed log and from the stderr log when the walk is over. */
TEST(counts_include_the_unlisted) {
  hsi_damlog l;
  hsi_damage_out o;
  char *paths[1] = { "test_damlog-expects-this-line.etl" };
  hs_reader_opts ro;
  FILE *f = tmpfile();
  uint64_t k;
  memset(&l, 0, sizeof l);
  CHECK(f != NULL);
  if (!f) return;
  for (k = 0; k < HSI_DAMLOG_MAX + 5; k++) {
    hs_damage d = dmg(0, 0x100 * k, (uint32_t)k, "x");
    hsi_damlog_add(&l, &d);
  }
  CHECK_EQ(hsi_damlog_print(f, &l, NULL), HSI_DAMLOG_MAX + 5);
  fclose(f);
  hsi_damlog_free(&l);
  hsi_damage_stderr_opts(&o, paths, &ro);
  for (k = 0; k < HSI_DAMLOG_MAX + 7; k++) {      /* added as the callback would, without its lines */
    hs_damage d = dmg(0, 0x100 * k, (uint32_t)k, "x");
    hsi_damlog_add(&o.log, &d);
  }
  CHECK_EQ(hsi_damage_stderr_done(&o), HSI_DAMLOG_MAX + 7);   /* one line on stderr: 7 more */
}

int main(void) {
  RUN(counts_include_the_unlisted);
  RUN(repeats_and_distinct);
  RUN(kept_then_counted);
  RUN(lines);
  RUN(add_all);
  return UNIT_DONE();
}
