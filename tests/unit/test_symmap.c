/*
** test_symmap.c -- symbol map files: parsing (fields, comments, CRLF,
** hex forms, names with spaces, repeated RVAs), every error with its
** line number, lookups at the edges of symbols and module matching.  The
** map as a source of frame names is tested with the symbol layer
** (test_sym.c).
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
  /* ... and a map name with its extension is that image alone: app.exe's
     names are not app.exe.mui's (a resource DLL loaded beside it) */
  CHECK_EQ(hsi_symmap_lookup(sm, "app.exe.mui", 0x2000, &name, &off), 0);
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
  /* an RVA of 16 hex digits is the widest accepted (17 is an error above) */
  {
    static const char wide[] = "k.sys 0xffffffffffff0000 10 High\n";
    CHECK_EQ(hsi_symmap_load_mem(&sm, wide, sizeof wide - 1, "t.sym", err, sizeof err), 0);
    CHECK_EQ(hsi_symmap_lookup(sm, "k.sys", 0xffffffffffff0004ull, NULL, NULL), 1);
    hsi_symmap_free(sm);
  }
  /* the last line needs no newline */
  CHECK_EQ(hsi_symmap_load_mem(&sm, "a.dll 10 4 f", 12, "t.sym", err, sizeof err), 0);
  CHECK_EQ(hsi_symmap_lookup(sm, "A.DLL", 0x13, NULL, NULL), 1);
  hsi_symmap_free(sm);
  hsi_symmap_free(NULL);
}

TEST(load_file) {
  char path[512], err[256];
  hsi_symmap *sm = NULL;
  FILE *f;
  const char *name;
  uint64_t off;
  size_t i;
  unit_tmp_path(path, sizeof path, "symmap.sym");
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
#ifndef _WIN32
  /* a directory opens on POSIX and fails at its first read: said as such
     (it was "reading DIR: I/O error") */
  CHECK_EQ(hsi_symmap_load(&sm, ".", err, sizeof err), HS_EIO);
  CHECK(sm == NULL);
  CHECK_STR(err, ".: is a directory, not a symbol map");
#endif
}

/* One module under two spellings ("ntdll", "ntdll.dll"): each spelling's
   lines name their addresses, the full name asked first. */
TEST(two_spellings) {
  char err[256];
  const char *name = NULL;
  uint64_t off = 0;
  hsi_symmap *sm = parse("ntdll 1000 100 FromShortName\nntdll.dll 2000 100 FromFullName\n"
                         "ntdll.dll 1000 100 FullFirst\n", err, sizeof err);
  CHECK(sm != NULL);
  if (!sm) return;
  CHECK_EQ(hsi_symmap_lookup(sm, "ntdll.dll", 0x2010, &name, &off), 1);
  CHECK_STR(name, "FromFullName");
  CHECK_EQ(off, 0x10);
  CHECK_EQ(hsi_symmap_lookup(sm, "ntdll.dll", 0x1010, &name, &off), 1);
  CHECK_STR(name, "FullFirst");                 /* both name it: the full spelling's */
  CHECK_EQ(hsi_symmap_lookup(sm, "NTDLL.DLL", 0x2020, &name, &off), 1);
  CHECK_EQ(hsi_symmap_lookup(sm, "ntdll.dll", 0x3000, &name, &off), 0);
  CHECK_EQ(hsi_symmap_module_symbols(sm, "ntdll.dll"), 3);
  hsi_symmap_free(sm);
  sm = parse("ntdll 1000 100 FromShortName\nntdll.dll 2000 100 FromFullName\n", err, sizeof err);
  CHECK_EQ(hsi_symmap_lookup(sm, "ntdll.dll", 0x1010, &name, &off), 1);
  CHECK_STR(name, "FromShortName");
  hsi_symmap_free(sm);
}

int main(void) {
  srand(4242);
  RUN(parse_and_lookup);
  RUN(two_spellings);
  RUN(empty_and_errors);
  RUN(load_file);
  return UNIT_DONE();
}
