/*
** test_stop.c -- the stop request of stop.h: the analysis pass and the
** query loops return HSI_ESTOPPED when it is set (a time limit ended the
** run while C was working), and answer normally once it is cleared.
*/
#include <unistd.h>
#include "unit.h"
#include "heapscript.h"
#include "writer.h"
#include "memev.h"
#include "analysis.h"
#include "query.h"
#include "stop.h"

#define N 10000   /* records: more than two HSI_STOP_EVERY periods */

static char path[512];

static int write_trace(void) {
  hsi_writer *w;
  hsi_writer_opts o;
  hsi_memop op;
  uint8_t pl[128];
  int i, group, type;
  unit_tmp_path(path, sizeof path, "stop.etl");
  memset(&o, 0, sizeof o);
  o.cpus = 1;
  if (hsi_writer_open(&w, path, &o, NULL, 0) != 0) return -1;
  CHECK_EQ(hsi_writer_process(w, 0, 3, 8, 1000, 4, 100, "app.exe", "app.exe"), 0);
  memset(&op, 0, sizeof op);
  op.pid = 1000; op.tid = 1001; op.heap = 0x10000; op.kind = HSI_OP_HEAP_ALLOC; op.pointer_size = 8;
  for (i = 0; i < N; i++) {
    long len;
    op.ts = 1000 + 10 * i; op.addr = 0x200000 + 64 * (uint64_t)i; op.size = 40;
    len = hsi_memev_encode(&op, 0, 0, 8, pl, sizeof pl, &group, &type);
    CHECK(len > 0);
    CHECK_EQ(hsi_writer_kernel(w, 0, HS_HT_SYSTEM64, group, type, hsi_memev_version(group, type), op.pid,
                               op.tid, op.ts, pl, (size_t)len), 0);
  }
  return hsi_writer_close(w);
}

TEST(analysis_stops) {
  hs_reader *r;
  hsi_analysis *a = NULL;
  const char *p = path;
  char err[256];
  CHECK_EQ(hs_reader_open(&r, &p, 1, NULL, err, sizeof err), 0);
  hsi_stop_request();
  CHECK_EQ(hsi_analysis_run(r, NULL, &a, err, sizeof err), HSI_ESTOPPED);
  CHECK(a == NULL);
  CHECK_STR(err, "stopped by a time limit");
  hsi_stop_clear();
  CHECK_EQ(hsi_analysis_run(r, NULL, &a, err, sizeof err), 0);
  hs_reader_close(r);
  if (!a) return;
  CHECK_EQ(hsi_life_recs(hsi_analysis_life(a))->n, N);
  hsi_analysis_free(a);
}

TEST(queries_stop) {
  hs_reader *r;
  hsi_analysis *a = NULL;
  const hsi_life *lt;
  const char *p = path;
  char err[256];
  hsi_filter f;
  hsi_sel sel;
  hsi_groups gs;
  hsi_agg ag;
  hsi_series se;
  CHECK_EQ(hs_reader_open(&r, &p, 1, NULL, err, sizeof err), 0);
  CHECK_EQ(hsi_analysis_run(r, NULL, &a, err, sizeof err), 0);
  hs_reader_close(r);
  if (!a) return;
  lt = hsi_analysis_life(a);
  hsi_filter_init(&f, lt);
  memset(&sel, 0, sizeof sel);
  memset(&se, 0, sizeof se);
  hsi_stop_request();
  CHECK_EQ(hsi_query_select(lt, &f, &sel), HSI_ESTOPPED);
  CHECK_EQ(hsi_query_group(lt, NULL, f.t1, f.t2, HSI_BY_ALLOC_STACK, NULL, HSI_AGG_PEAK, &gs), HSI_ESTOPPED);
  CHECK(gs.g == NULL && gs.n == 0);
  CHECK_EQ(hsi_query_agg(lt, NULL, f.t1, f.t2, HSI_AGG_PEAK, &ag), HSI_ESTOPPED);
  CHECK_EQ(hsi_query_series(lt, NULL, f.t1, f.t2, 0, &se), HSI_ESTOPPED);
  CHECK_EQ(hsi_query_series(lt, NULL, f.t1, f.t2, 5000, &se), HSI_ESTOPPED);
  CHECK(se.t == NULL);
  hsi_stop_clear();
  CHECK_EQ(hsi_query_select(lt, &f, &sel), 0);
  CHECK_EQ(sel.n, N);
  CHECK_EQ(hsi_query_agg(lt, NULL, f.t1, f.t2, HSI_AGG_PEAK, &ag), 0);
  CHECK_EQ(ag.count, N);
  CHECK_EQ(hsi_query_series(lt, NULL, f.t1, f.t2, 0, &se), 0);
  CHECK_EQ(se.n, N + 1);
  hsi_series_free(&se);
  hsi_sel_free(&sel);
  hsi_analysis_free(a);
}

int main(void) {
  if (write_trace() != 0) {
    printf("test_stop: cannot write %s\n", path);
    return 1;
  }
  RUN(analysis_stops);
  RUN(queries_stop);
  remove(path);
  return UNIT_DONE();
}
