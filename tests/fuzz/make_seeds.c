/*
** make_seeds.c -- writes the seed inputs of tests/fuzz/corpus with the
** project's writer: small real-format traces covering each buffer layout,
** compression format, header kind and memory event, plus truncations.
** Run by `make fuzz-seeds`; the outputs are committed.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "heapscript.h"
#include "writer.h"
#include "memev.h"

/* 1: memory events with PERFINFO headers (no ids, as kernel pool events):
   the reader holds them until their StackWalk (engine/attrib.c). */
static int perfinfo;

static void mem(hsi_writer *w, int ptr, int cpu, hsi_memop *op, int with_stack) {
  uint8_t pl[128];
  int group, type;
  uint64_t frames[3] = { 0x7ff800011234ull, 0x7ff700002000ull, 0xfffff80000123456ull };
  long len = hsi_memev_encode(op, 0, 0, ptr, pl, sizeof pl, &group, &type);
  if (len < 0) return;
  hsi_writer_kernel(w, cpu, perfinfo ? (ptr == 8 ? HS_HT_PERFINFO64 : HS_HT_PERFINFO32)
                                     : (ptr == 8 ? HS_HT_SYSTEM64 : HS_HT_SYSTEM32), group, type,
                    hsi_memev_version(group, type), op->pid, op->tid, op->ts, pl, (size_t)len);
  if (with_stack) hsi_writer_stack(w, (cpu + 1) % 2, op->ts + 2, op->ts, op->pid, op->tid, frames, 3, 8);
}

static int seed(const char *dir, const char *name, int ptr, int compress, int old_layout, int bufsize) {
  char path[1024];
  hsi_writer *w;
  hsi_writer_opts o;
  hsi_memop op;
  hs_guid g;
  uint64_t stack[2] = { 0x401000, 0x402000 };
  int i;
  memset(&o, 0, sizeof o);
  o.pointer_size = ptr; o.cpus = 2; o.compress = compress; o.old_layout = old_layout;
  o.buffer_size = (uint32_t)bufsize;
  snprintf(path, sizeof path, "%s/%s", dir, name);
  if (hsi_writer_open(&w, path, &o, NULL, 0)) return 1;
  hsi_writer_process(w, 0, 3, ptr, 100, 4, 10, "seed.exe", "seed.exe -x");
  hsi_writer_thread(w, 0, 3, ptr, 100, 101, 0x401000, 11);
  hsi_writer_image(w, 0, 3, ptr, 100, 0x400000, 0x10000, 12, "\\Device\\HarddiskVolume1\\seed.exe");
  memset(&g, 0, sizeof g);                 /* parsed below; said so to the compiler */
  if (hs_guid_parse("22fb2cd6-0e7b-422b-a0c7-2fad1fd0e716", &g) != 0) return 1;
  hsi_writer_event(w, 1, ptr == 8 ? HS_HT_EVENT64 : HS_HT_EVENT32, &g, 5, 1, 0, 4, 0, 0x10, 100, 101, 13,
                   "abcd", 4, stack, 2);
  hsi_writer_mof(w, 1, ptr == 8 ? HS_HT_FULL64 : HS_HT_FULL32, &g, 1, 2, 100, 101, 14, "xyz", 3);
  memset(&op, 0, sizeof op);
  op.pid = 100; op.tid = 101; op.heap = 0x10000;
  for (i = 0; i < 24; i++) {
    op.ts = 20 + 10 * i;
    op.kind = i % 3 == 2 ? HSI_OP_HEAP_FREE : HSI_OP_HEAP_ALLOC;
    op.addr = 0x20000 + 0x40 * (uint64_t)(i / 3); op.size = 24 + i;
    mem(w, ptr, i & 1, &op, i % 2 == 0);
  }
  op.kind = HSI_OP_HEAP_REALLOC; op.ts = 400; op.old_addr = 0x20000; op.addr = 0x30000; op.size = 100; op.old_size = 24;
  mem(w, ptr, 0, &op, 1);
  op.kind = HSI_OP_VALLOC; op.ts = 410; op.addr = 0x1000000; op.size = 0x10000; op.flags = 0x3000;
  mem(w, ptr, 0, &op, 1);
  op.kind = HSI_OP_VFREE; op.ts = 420; op.addr = 0x1004000; op.size = 0x1000; op.flags = 0x4000;
  mem(w, ptr, 0, &op, 0);
  op.kind = HSI_OP_POOL_ALLOC; op.ts = 430; op.addr = 0x80001000; op.size = 64; op.tag = 0x6b61654c; op.pool_type = 0x200;
  mem(w, ptr, 1, &op, 1);
  op.kind = HSI_OP_HEAP_DESTROY; op.ts = 440; mem(w, ptr, 1, &op, 0);
  hsi_writer_process(w, 0, 2, ptr, 100, 4, 450, "seed.exe", NULL);
  return hsi_writer_close(w) != 0;
}

static int truncated(const char *dir, const char *from, const char *name, long keep) {
  char a[1024], b[1024];
  FILE *in, *out;
  int ch;
  long n = 0;
  snprintf(a, sizeof a, "%s/%s", dir, from);
  snprintf(b, sizeof b, "%s/%s", dir, name);
  if (!(in = fopen(a, "rb")) || !(out = fopen(b, "wb"))) return 1;
  while (n++ < keep && (ch = fgetc(in)) != EOF) fputc(ch, out);
  fclose(in);
  fclose(out);
  return 0;
}

/* A copy of `from` ending with a buffer too short to hold a record: a
   header of len bytes (0x49..0x4B) whose BufferSize and Offset are len,
   so that its data holds 1 to 3 bytes (read past the file end once). */
static int short_tail(const char *dir, const char *from, const char *name, int len) {
  unsigned char h[0x4B] = { 0 };
  char a[1024];
  FILE *out;
  if (truncated(dir, from, name, 1L << 30)) return 1;
  snprintf(a, sizeof a, "%s/%s", dir, name);
  if (!(out = fopen(a, "ab"))) return 1;
  h[0] = h[0x30] = (unsigned char)len;    /* BufferSize, Offset */
  h[0x36] = 1;                             /* BufferType */
  fwrite(h, 1, (size_t)len, out);
  return fclose(out) != 0;
}

int main(int argc, char **argv) {
  const char *dir = argc > 1 ? argv[1] : "tests/fuzz/corpus";
  int bad = 0;
  bad |= seed(dir, "seed-64.etl", 8, 0, 0, 1024);
  bad |= seed(dir, "seed-32-old.etl", 4, 0, 1, 1024);
  bad |= seed(dir, "seed-64-xpress.etl", 8, HS_XCA_XPRESS, 0, 2048);
  bad |= seed(dir, "seed-64-lznt1.etl", 8, HS_XCA_LZNT1, 0, 2048);
  bad |= seed(dir, "seed-32-huff.etl", 4, HS_XCA_XPRESS_HUFF, 0, 2048);
  perfinfo = 1;
  bad |= seed(dir, "seed-64-perfinfo.etl", 8, 0, 0, 1024);
  bad |= seed(dir, "seed-32-perfinfo.etl", 4, 0, 0, 1024);
  perfinfo = 0;
  bad |= truncated(dir, "seed-64.etl", "seed-64-cut.etl", 1024 + 700);
  bad |= truncated(dir, "seed-64-xpress.etl", "seed-64-xpress-cut.etl", 1500);
  bad |= short_tail(dir, "seed-64.etl", "seed-64-short-tail.etl", 0x49);
  return bad;
}
