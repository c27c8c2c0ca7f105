/*
** test_symmap.c -- symbol map files: parsing (fields, comments, CRLF,
** hex forms, names with spaces, repeated RVAs), every error with its
** line number, lookups at the edges of symbols, module matching, and the
** resolver hooked into a procmap fed from a written trace, so that
** frames print as module!Function+0xoff.
*/
#include "unit.h"
#include "heapscript.h"
#include "symmap.h"
#include "procmap.h"
#include "stacks.h"
#include "writer.h"

static const char good[] =
  "# heapscript symbol map\n"
  "   # indented comment\n"
  "\n"
  "ntdll.dll   0009d1a0 230 RtlAllocateHeap\n"
  "ntdll.dll   0x0009D400 0x1c0 RtlFreeHeap\r\n"
  "NTDLL.DLL   00001000 0 RtlUserThreadStart\n"
  "\tapp.exe\t1000\t40\toperator new  \n"
  "app.exe 2000 100 Main\n"
  "app.exe 1000 10 DuplicateLoses\n"
  "KernelBase 3000 80 VirtualAlloc\n";

static hsi_symmap *parse(const char *text, char *err, size_t errlen) {
  hsi_symmap *sm = NULL;
  int rc = hsi_symmap_load_mem(&sm, text, strlen(text), "t.sym", err, errlen);
  CHECK(rc == 0 ? sm != NULL : sm == NULL);
  return sm;
}

TEST(parse_and_lookup) {
  char err[256];
  const char *name = NULL;
  uint64_t off = 99;
  size_t n = 0;
  hsi_symmap *sm = parse(good, err, sizeof err);
  CHECK(sm != NULL);
  if (!sm) { fprintf(stderr, "%s\n", err); return; }
  CHECK_EQ(hsi_symmap_count(sm), 6);            /* the duplicate RVA dropped */
  CHECK_EQ(hsi_symmap_nmodules(sm), 3);         /* NTDLL.DLL is ntdll.dll */
  CHECK_STR(hsi_symmap_module(sm, 0, &n), "ntdll.dll");
  CHECK_EQ(n, 3);
  CHECK_STR(hsi_symmap_module(sm, 1, &n), "app.exe");
  CHECK_EQ(n, 2);
  CHECK(hsi_symmap_module(sm, 3, NULL) == NULL);

  CHECK_EQ(hsi_symmap_lookup(sm, "ntdll.dll", 0x9d1a0, &name, &off), 1);
  CHECK_STR(name, "RtlAllocateHeap");
  CHECK_EQ(off, 0);
  CHECK_EQ(hsi_symmap_lookup(sm, "NtDll.Dll", 0x9d1a0 + 0x22f, &name, &off), 1);
  CHECK_EQ(off, 0x22f);
  /* one past the end of a sized symbol: nothing (the gap before RtlFreeHeap) */
  CHECK_EQ(hsi_symmap_lookup(sm, "ntdll.dll", 0x9d1a0 + 0x230, &name, &off), 0);
  CHECK_EQ(hsi_symmap_lookup(sm, "ntdll.dll", 0x9d400 + 0x1bf, &name, &off), 1);
  CHECK_STR(name, "RtlFreeHeap");
  /* size 0 reaches up to the next symbol */
  CHECK_EQ(hsi_symmap_lookup(sm, "ntdll.dll", 0x9d19f, &name, &off), 1);
  CHECK_STR(name, "RtlUserThreadStart");
  CHECK_EQ(off, 0x9d19f - 0x1000);
  CHECK_EQ(hsi_symmap_lookup(sm, "ntdll.dll", 0xfff, &name, &off), 0);   /* before the first */
  /* names keep inner spaces, lose trailing blanks; first of equal RVAs wins */
  CHECK_EQ(hsi_symmap_lookup(sm, "app.exe", 0x1008, &name, &off), 1);
  CHECK_STR(name, "operator new");
  CHECK_EQ(off, 8);
  CHECK_EQ(hsi_symmap_lookup(sm, "app.exe", 0x2000, &name, &off), 1);
  CHECK_STR(name, "Main");
  /* a map name without extension matches any extension, not the reverse */
  CHECK_EQ(hsi_symmap_lookup(sm, "kernelbase.dll", 0x3010, &name, &off), 1);
  CHECK_STR(name, "VirtualAlloc");
  CHECK_EQ(hsi_symmap_lookup(sm, "KernelBase", 0x3010, &name, &off), 1);
  CHECK_EQ(hsi_symmap_lookup(sm, "kernelbase.dll.mui", 0x3010, &name, &off), 0);
  CHECK_EQ(hsi_symmap_lookup(sm, "ntdll", 0x9d1a0, &name, &off), 0);
  CHECK_EQ(hsi_symmap_lookup(sm, "app", 0x2000, &name, &off), 0);
  CHECK_EQ(hsi_symmap_lookup(sm, "", 0x2000, &name, &off), 0);
  CHECK_EQ(hsi_symmap_lookup(sm, NULL, 0x2000, &name, &off), 0);
  CHECK_EQ(hsi_symmap_lookup(NULL, "app.exe", 0x2000, &name, &off), 0);
  hsi_symmap_free(sm);
}

TEST(empty_and_errors) {
  static const struct { const char *text; int rc; const char *msg; } bad[] = {
    { "a.dll 10 4 f\nb.dll zz 4 g\n", HS_EFORMAT, "t.sym:2: expected the RVA in hex" },
    { "a.dll 10\n", HS_EFORMAT, "t.sym:1: expected the size in hex" },
    { "a.dll 10 4\n", HS_EFORMAT, "t.sym:1: expected a function name" },
    { "a.dll 10 4   \t\n", HS_EFORMAT, "t.sym:1: expected a function name" },
    { "a.dll 10000000000000000 4 f\n", HS_EFORMAT, "t.sym:1: expected the RVA" },
    { "a.dll 0x 4 f\n", HS_EFORMAT, "t.sym:1: expected the RVA" },
    { "# c\n\na.dll 10 -4 f\n", HS_EFORMAT, "t.sym:3: expected the size" },
  };
  char err[256];
  size_t i;
  hsi_symmap *sm;
  for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    sm = (hsi_symmap *)&err;
    CHECK_EQ(hsi_symmap_load_mem(&sm, bad[i].text, strlen(bad[i].text), "t.sym", err, sizeof err), bad[i].rc);
    CHECK(sm == NULL);
    CHECK(strncmp(err, bad[i].msg, strlen(bad[i].msg)) == 0);
    if (strncmp(err, bad[i].msg, strlen(bad[i].msg)) != 0) fprintf(stderr, "  got: %s\n", err);
  }
  /* NUL bytes and overlong lines */
  {
    static const char nul[] = "a.dll 10 4 f\0g\n";
    char *big = (char *)malloc(HSI_SYMMAP_MAXLINE + 64);
    CHECK_EQ(hsi_symmap_load_mem(&sm, nul, sizeof nul - 1, "t.sym", err, sizeof err), HS_EFORMAT);
    CHECK(strstr(err, "t.sym:1: NUL byte") != NULL);
    memset(big, 'x', HSI_SYMMAP_MAXLINE + 10);
    memcpy(big, "a.dll 1 1 ", 10);
    CHECK_EQ(hsi_symmap_load_mem(&sm, big, HSI_SYMMAP_MAXLINE + 10, "t.sym", err, sizeof err), HS_EFORMAT);
    CHECK(strstr(err, "t.sym:1: line of") != NULL);
    free(big);
  }
  /* empty and comment-only maps are valid and know nothing */
  CHECK_EQ(hsi_symmap_load_mem(&sm, "", 0, "t.sym", err, sizeof err), 0);
  CHECK_EQ(hsi_symmap_count(sm), 0);
  CHECK_EQ(hsi_symmap_lookup(sm, "a.dll", 0, NULL, NULL), 0);
  hsi_symmap_free(sm);
  CHECK_EQ(hsi_symmap_load_mem(&sm, "# only\n#\n", 9, "t.sym", NULL, 0), 0);
  CHECK_EQ(hsi_symmap_count(sm), 0);
  hsi_symmap_free(sm);
  /* the last line needs no newline */
  CHECK_EQ(hsi_symmap_load_mem(&sm, "a.dll 10 4 f", 12, "t.sym", err, sizeof err), 0);
  CHECK_EQ(hsi_symmap_lookup(sm, "A.DLL", 0x13, NULL, NULL), 1);
  hsi_symmap_free(sm);
  hsi_symmap_free(NULL);
}

TEST(load_file) {
  char path[512], err[256];
  const char *d = getenv("TMPDIR");
  hsi_symmap *sm = NULL;
  FILE *f;
  const char *name;
  uint64_t off;
  size_t i;
  snprintf(path, sizeof path, "%s/hs-symmap-%ld.sym", d && *d ? d : "/tmp", (long)rand());
  f = fopen(path, "wb");
  CHECK(f != NULL);
  if (!f) return;
  /* enough lines to cross the reader's first chunk, written in reverse */
  for (i = 20000; i-- > 0;) fprintf(f, "big.dll %lx 10 F%lu\n", (unsigned long)(i * 16), (unsigned long)i);
  fclose(f);
  CHECK_EQ(hsi_symmap_load(&sm, path, err, sizeof err), 0);
  CHECK_EQ(hsi_symmap_count(sm), 20000);
  CHECK_EQ(hsi_symmap_lookup(sm, "big.dll", 12345 * 16 + 7, &name, &off), 1);
  CHECK_STR(name, "F12345");
  CHECK_EQ(off, 7);
  hsi_symmap_free(sm);
  remove(path);
  CHECK_EQ(hsi_symmap_load(&sm, path, err, sizeof err), HS_EIO);
  CHECK(sm == NULL);
  CHECK(strstr(err, path) != NULL);
}

/* The resolver behind hsi_frame_format, on images a procmap learnt from a trace. */
TEST(resolver_in_procmap) {
  char path[512], err[256], frame[256];
  const char *d = getenv("TMPDIR"), *pp = path;
  hsi_writer *w;
  hs_reader *r;
  hs_event ev;
  hsi_procmap *pm;
  hsi_symmap *sm;
  uint32_t inst;
  static const char map[] =
    "ntdll.dll 9d1a0 230 RtlAllocateHeap\n"
    "app.exe 2000 100 Main\n"
    "ntoskrnl.exe 123000 400 ExAllocatePoolWithTag\n";
  snprintf(path, sizeof path, "%s/hs-symmap-%ld.etl", d && *d ? d : "/tmp", (long)rand());
  CHECK_EQ(hsi_writer_open(&w, path, NULL, err, sizeof err), 0);
  if (!w) return;
  CHECK_EQ(hsi_writer_process(w, 0, 3, 8, 0, 0, 10, "Idle", NULL), 0);
  CHECK_EQ(hsi_writer_image(w, 0, 3, 8, 0, 0xFFFFF80000000000ull, 0x1000000, 11, "\\SystemRoot\\system32\\ntoskrnl.exe"), 0);
  CHECK_EQ(hsi_writer_process(w, 0, 3, 8, 1000, 4, 12, "app.exe", NULL), 0);
  CHECK_EQ(hsi_writer_image(w, 0, 3, 8, 1000, 0x7ff700000000ull, 0x10000, 13, "\\Device\\HarddiskVolume3\\App.EXE"), 0);
  CHECK_EQ(hsi_writer_image(w, 0, 3, 8, 1000, 0x7ff800000000ull, 0x200000, 14, "\\SystemRoot\\System32\\ntdll.dll"), 0);
  CHECK_EQ(hsi_writer_close(w), 0);

  CHECK_EQ(hs_reader_open(&r, &pp, 1, NULL, err, sizeof err), 0);
  if (!r) return;
  pm = hsi_procmap_new();
  while (hs_reader_next(r, &ev) == 1) CHECK(hsi_procmap_feed(pm, &ev) >= 0);
  hs_reader_close(r);
  remove(path);
  inst = hsi_procmap_find(pm, 1000, 100);
  CHECK(inst != HSI_NOINST);

  CHECK_EQ(hsi_symmap_load_mem(&sm, map, strlen(map), "m.sym", err, sizeof err), 0);
  hsi_frame_format(pm, inst, 0x7ff80009d1ecull, 100, frame, sizeof frame);
  CHECK_STR(frame, "ntdll.dll+0x9d1ec");                     /* no resolver yet */
  hsi_symmap_attach(sm, pm);
  hsi_frame_format(pm, inst, 0x7ff80009d1ecull, 100, frame, sizeof frame);
  CHECK_STR(frame, "ntdll.dll!RtlAllocateHeap+0x4c");
  hsi_frame_format(pm, inst, 0x7ff80009d1a0ull, 100, frame, sizeof frame);
  CHECK_STR(frame, "ntdll.dll!RtlAllocateHeap");             /* offset 0 is not printed */
  hsi_frame_format(pm, inst, 0x7ff700002010ull, 100, frame, sizeof frame);
  CHECK_STR(frame, "App.EXE!Main+0x10");                     /* module case as the trace has it */
  hsi_frame_format(pm, inst, 0x7ff700009000ull, 100, frame, sizeof frame);
  CHECK_STR(frame, "App.EXE+0x9000");                        /* outside every symbol */
  hsi_frame_format(pm, inst, 0xFFFFF80000123010ull, 100, frame, sizeof frame);
  CHECK_STR(frame, "ntoskrnl.exe!ExAllocatePoolWithTag+0x10");   /* kernel image of pid 0 */
  {
    /* a short name buffer is cut, not overrun */
    char small[5];
    uint64_t off = 0;
    const hsi_image *im = hsi_procmap_image_at(pm, inst, 0x7ff80009d1ecull, 100);
    CHECK(im != NULL);
    if (im) {
      CHECK_EQ(hsi_symmap_resolve(sm, im, 0x9d1ec, small, sizeof small, &off), 1);
      CHECK_STR(small, "RtlA");
      CHECK_EQ(off, 0x4c);
      CHECK_EQ(hsi_symmap_resolve(sm, im, 0x9d1ec, small, 0, &off), 0);
    }
  }
  hsi_symmap_attach(NULL, pm);
  hsi_frame_format(pm, inst, 0x7ff80009d1ecull, 100, frame, sizeof frame);
  CHECK_STR(frame, "ntdll.dll+0x9d1ec");
  hsi_procmap_free(pm);
  hsi_symmap_free(sm);
}

int main(void) {
  srand(4242);
  RUN(parse_and_lookup);
  RUN(empty_and_errors);
  RUN(load_file);
  RUN(resolver_in_procmap);
  return UNIT_DONE();
}
