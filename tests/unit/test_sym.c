/*
** test_sym.c -- the symbol layer (sym.h, sym_path.h): symbol path parsing,
** SymStore keys, the PDB search through plain directories and store
** layouts made in temporary directories (flat, two-tier index2.txt, srv*,
** cache*, file.ptr, URLs skipped), identity mismatches and damaged files
** reported as symchk would, frame text from a symbol map and from a PDB,
** inline frames, caching and laziness (nothing is searched until asked).
**
** The PDB is examples/MemoryTestApp.pdb (built by
** examples/memorytestapp/build.lua); its identity is in
** examples/memorytestapp/layout.txt.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "unit.h"
#include "heapscript.h"
#include "sym.h"
#include "sym_path.h"
#include "symmap.h"
#include "text.h"
#include "procmap.h"
#include "pdb.h"
#include "writer.h"

#define PDB "examples/MemoryTestApp.pdb"
#define GUID "73530E7B-1169-D7AF-4C4C-44205044422E"
#define KEY "73530E7B1169D7AF4C4C44205044422E1"

/* ------------------------------------------------------------- helpers */

static char tmproot[256];

static void mkdirs(const char *path) {
  char p[1024];
  size_t i;
  snprintf(p, sizeof p, "%s", path);
  for (i = 1; p[i]; i++)
    if (p[i] == '/') { p[i] = 0; mkdir(p, 0777); p[i] = '/'; }
  mkdir(p, 0777);
}

/* Copy src to dst (making its directories), at most `limit` bytes (0: all). */
static int copy(const char *src, const char *dst, long limit) {
  char dir[1024], buf[65536];
  FILE *in, *out;
  size_t n;
  long total = 0;
  char *slash;
  snprintf(dir, sizeof dir, "%s", dst);
  if ((slash = strrchr(dir, '/')) != NULL) { *slash = 0; mkdirs(dir); }
  if (!(in = fopen(src, "rb"))) return -1;
  if (!(out = fopen(dst, "wb"))) { fclose(in); return -1; }
  while ((n = fread(buf, 1, sizeof buf, in)) > 0) {
    if (limit && total + (long)n > limit) n = (size_t)(limit - total);
    fwrite(buf, 1, n, out);
    total += (long)n;
    if (limit && total >= limit) break;
  }
  fclose(in);
  fclose(out);
  return 0;
}

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "wb");
  if (f) { fputs(text, f); fclose(f); }
}

static void rmtree(const char *path) {
  char cmd[1100];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", path);
}

/* A fresh empty directory under the test's root. */
static const char *fresh(const char *name) {
  static char p[512];
  snprintf(p, sizeof p, "%s/%s", tmproot, name);
  rmtree(p);
  mkdirs(p);
  return p;
}

/* The example's PDB opens (the searches below need it). */
static int reader_ready(void) {
  hsi_pdb *p = NULL;
  char err[HS_ERRLEN];
  if (hsi_pdb_open(&p, PDB, err, sizeof err) < 0) {
    fprintf(stderr, "cannot open the example's PDB: %s\n", err);
    CHECK(!"examples/MemoryTestApp.pdb opens");
    return 0;
  }
  hsi_pdb_close(p);
  return 1;
}

/* ------------------------------------------------------------- parsing */

TEST(path_parse) {
  hsi_sympath sp;
  memset(&sp, 0, sizeof sp);
  CHECK_EQ(hsi_sympath_parse(&sp, " C:\\sym ;srv*/a*/b*https://msdl.microsoft.com/download/symbols;"
                                  "cache*/c;;SYMSRV*symsrv.dll*/d*HTTP://x.example;/e;srv**/f;/e;cache*"), 0);
  CHECK_EQ(sp.n, 9);
  if (sp.n == 9) {
    CHECK_EQ(sp.e[0].kind, HSI_SP_DIR);   CHECK_STR(sp.e[0].path, "C:\\sym");
    CHECK_EQ(sp.e[1].kind, HSI_SP_STORE); CHECK_STR(sp.e[1].path, "/a");
    CHECK_EQ(sp.e[2].kind, HSI_SP_STORE); CHECK_STR(sp.e[2].path, "/b");
    CHECK_EQ(sp.e[3].kind, HSI_SP_URL);   CHECK_STR(sp.e[3].path, "https://msdl.microsoft.com/download/symbols");
    CHECK_EQ(sp.e[4].kind, HSI_SP_STORE); CHECK_STR(sp.e[4].path, "/c");
    CHECK_EQ(sp.e[5].kind, HSI_SP_STORE); CHECK_STR(sp.e[5].path, "/d");   /* the DLL name skipped */
    CHECK_EQ(sp.e[6].kind, HSI_SP_URL);   CHECK_STR(sp.e[6].path, "HTTP://x.example");
    CHECK_EQ(sp.e[7].kind, HSI_SP_DIR);   CHECK_STR(sp.e[7].path, "/e");   /* the repeat kept once */
    CHECK_EQ(sp.e[8].kind, HSI_SP_STORE); CHECK_STR(sp.e[8].path, "/f");   /* srv** : no default store */
  }
  CHECK_EQ(sp.nurls, 2);
  hsi_sympath_free(&sp);
  CHECK_EQ(hsi_sympath_parse(&sp, NULL), 0);
  CHECK_EQ(hsi_sympath_parse(&sp, ""), 0);
  CHECK_EQ(hsi_sympath_parse(&sp, " ; ;srv*"), 0);
  CHECK_EQ(sp.n, 0);
  hsi_sympath_free(&sp);
}

TEST(keys_and_names) {
  hs_guid g;
  char key[HSI_SYMKEY_LEN];
  CHECK_EQ(hs_guid_parse(GUID, &g), 0);
  hsi_sym_key(&g, 1, key);
  CHECK_STR(key, KEY);
  hsi_sym_key(&g, 0x1c, key);
  CHECK_STR(key, "73530E7B1169D7AF4C4C44205044422E1C");      /* age in hex, upper case */
  CHECK_EQ(hs_guid_parse("00000001-0002-0003-0405-060708090a0b", &g), 0);
  hsi_sym_key(&g, 0xFFFFFFFFu, key);
  CHECK_STR(key, "0000000100020003" "0405060708090A0B" "FFFFFFFF");
  CHECK_STR(hsi_sym_basename("C:\\src\\x64\\Release\\App.pdb"), "App.pdb");
  CHECK_STR(hsi_sym_basename("/builds/worker/softokn3.pdb"), "softokn3.pdb");
  CHECK_STR(hsi_sym_basename("app.pdb"), "app.pdb");
  CHECK_STR(hsi_sym_basename(""), "");
  CHECK_STR(hsi_sym_status_name(HSI_PDB_BADAGE), "mismatched age");
}

/* ------------------------------------------------------------- searches */

static int find(const char *path, const char *name, const char *guid, uint32_t age, hsi_pdb_search *r) {
  hsi_sympath sp;
  hs_guid g;
  int st;
  memset(&sp, 0, sizeof sp);
  hs_guid_parse(guid, &g);
  hsi_sympath_parse(&sp, path);
  st = hsi_pdb_find(&sp, name, &g, age, r);
  hsi_pdb_close(r->pdb);
  r->pdb = NULL;
  hsi_sympath_free(&sp);
  return st;
}

TEST(store_layouts) {
  char path[1024], sp[1200];
  const char *d;
  hsi_pdb_search r;
  if (!reader_ready()) return;

  /* a plain directory: the PDB directly inside, found by the recorded name's base */
  d = fresh("plain");
  snprintf(path, sizeof path, "%s/MemoryTestApp.pdb", d);
  CHECK_EQ(copy(PDB, path, 0), 0);
  CHECK_EQ(find(d, "C:\\src\\MemoryTestApp\\x64\\Release\\MemoryTestApp.pdb", GUID, 1, &r), HSI_PDB_FOUND);
  CHECK_STR(r.path, path);
  /* ... also when the file is in lower case and the record is not */
  d = fresh("lower");
  snprintf(path, sizeof path, "%s/memorytestapp.pdb", d);
  copy(PDB, path, 0);
  CHECK_EQ(find(d, "MemoryTestApp.pdb", GUID, 1, &r), HSI_PDB_FOUND);

  /* flat store: DIR/name/KEY/name, through srv* */
  d = fresh("flat");
  snprintf(path, sizeof path, "%s/MemoryTestApp.pdb/" KEY "/MemoryTestApp.pdb", d);
  copy(PDB, path, 0);
  snprintf(sp, sizeof sp, "srv*%s*https://msdl.microsoft.com/download/symbols", d);
  CHECK_EQ(find(sp, "MemoryTestApp.pdb", GUID, 1, &r), HSI_PDB_FOUND);
  CHECK_STR(r.path, path);
  CHECK_EQ(find(d, "MemoryTestApp.pdb", GUID, 1, &r), HSI_PDB_FOUND);    /* a plain entry that is a store */

  /* two-tier store: index2.txt in the root, DIR/me/name/KEY/name, through cache* */
  d = fresh("tier2");
  snprintf(path, sizeof path, "%s/index2.txt", d);
  write_text(path, "");
  snprintf(path, sizeof path, "%s/Me/MemoryTestApp.pdb/" KEY "/MemoryTestApp.pdb", d);
  copy(PDB, path, 0);
  snprintf(sp, sizeof sp, "cache*%s", d);
  CHECK_EQ(find(sp, "MemoryTestApp.pdb", GUID, 1, &r), HSI_PDB_FOUND);
  CHECK_STR(r.path, path);
  /* with a copy in the flat layout too: index2.txt says which is read
     first, and without it the flat one is */
  {
    char flat[1024], two[1024];
    snprintf(two, sizeof two, "%s", path);
    snprintf(flat, sizeof flat, "%s/MemoryTestApp.pdb/" KEY "/MemoryTestApp.pdb", d);
    copy(PDB, flat, 0);
    CHECK_EQ(find(sp, "MemoryTestApp.pdb", GUID, 1, &r), HSI_PDB_FOUND);
    CHECK_STR(r.path, two);
    snprintf(path, sizeof path, "%s/index2.txt", d);
    remove(path);
    CHECK_EQ(find(sp, "MemoryTestApp.pdb", GUID, 1, &r), HSI_PDB_FOUND);
    CHECK_STR(r.path, flat);
    remove(flat);
  }
  /* the same tree without index2.txt is not read as two-tier... but the flat
     layout is tried as well, so a store being migrated still works */
  snprintf(path, sizeof path, "%s/index2.txt", d);
  remove(path);
  CHECK_EQ(find(sp, "MemoryTestApp.pdb", GUID, 1, &r), HSI_PDB_FOUND);

  /* file.ptr names the real file */
  d = fresh("ptr");
  snprintf(path, sizeof path, "%s/real/MemoryTestApp.pdb", d);
  copy(PDB, path, 0);
  {
    char ptr[1100], text[1100];
    snprintf(ptr, sizeof ptr, "%s/store/MemoryTestApp.pdb/" KEY "/file.ptr", d);
    snprintf(text, sizeof text, "PATH:%s\n", path);
    copy(PDB, ptr, 1);                     /* makes the directories */
    write_text(ptr, text);
    snprintf(sp, sizeof sp, "srv*%s/store", d);
  }
  CHECK_EQ(find(sp, "MemoryTestApp.pdb", GUID, 1, &r), HSI_PDB_FOUND);
  CHECK_STR(r.path, path);

  /* missing: nothing anywhere, every candidate counted */
  CHECK_EQ(find(fresh("empty"), "MemoryTestApp.pdb", GUID, 1, &r), HSI_PDB_MISSING);
  CHECK(r.tried > 1);
  CHECK_STR(r.path, "");
  CHECK_EQ(find("", "", GUID, 1, &r), HSI_PDB_NOID);
}

TEST(mismatch_and_damage) {
  char path[1024], sp[2200], d[512];
  hsi_pdb_search r;
  if (!reader_ready()) return;
  snprintf(d, sizeof d, "%s", fresh("mismatch"));
  snprintf(path, sizeof path, "%s/MemoryTestApp.pdb", d);
  copy(PDB, path, 0);
  /* another GUID wanted: the file is not used, and the report says what it has */
  CHECK_EQ(find(d, "MemoryTestApp.pdb", "11111111-2222-3333-4444-555555555555", 1, &r), HSI_PDB_BADGUID);
  CHECK_STR(r.path, path);
  CHECK(strstr(r.detail, "73530e7b-1169-d7af-4c4c-44205044422e") != NULL);
  CHECK(strstr(r.detail, "age 1") != NULL);
  /* same GUID, another age */
  CHECK_EQ(find(d, "MemoryTestApp.pdb", GUID, 2, &r), HSI_PDB_BADAGE);
  CHECK_EQ(r.found_age, 1);
  /* two copies that do not match: the report names the first one met, as
     symchk does (a later failure of the same kind does not replace it) */
  {
    const char *d2 = fresh("agetoo");
    char p2[1024];
    snprintf(p2, sizeof p2, "%s/MemoryTestApp.pdb", d2);
    copy(PDB, p2, 0);
    snprintf(sp, sizeof sp, "%s;%s", d, d2);
    CHECK_EQ(find(sp, "MemoryTestApp.pdb", GUID, 2, &r), HSI_PDB_BADAGE);
    CHECK_STR(r.path, path);
  }
  /* a matching copy later in the path still wins over the mismatch */
  {
    const char *d2 = fresh("agetwo");
    char p2[1024];
    snprintf(p2, sizeof p2, "%s/MemoryTestApp.pdb/" KEY "/MemoryTestApp.pdb", d2);
    copy(PDB, p2, 0);
    snprintf(sp, sizeof sp, "%s;srv*%s", d, d2);
    CHECK_EQ(find(sp, "MemoryTestApp.pdb", GUID, 1, &r), HSI_PDB_FOUND);
    CHECK_STR(r.path, path);                            /* the first one matches already */
  }
  /* a damaged file: one clear message with the file and an offset */
  snprintf(d, sizeof d, "%s", fresh("damaged"));
  snprintf(path, sizeof path, "%s/MemoryTestApp.pdb", d);
  copy(PDB, path, 5000);
  CHECK_EQ(find(d, "MemoryTestApp.pdb", GUID, 1, &r), HSI_PDB_DAMAGED);
  CHECK_STR(r.path, path);
  CHECK(strstr(r.detail, path) != NULL);
  CHECK(strstr(r.detail, "offset") != NULL);
}

/* ------------------------------------------------------- the layer */

static int notes;
static char last_note[1024];
static void on_note(void *ud, const char *msg) {
  (void)ud;
  notes++;
  snprintf(last_note, sizeof last_note, "%s", msg);
}

/* A DbgID_RSDS record (KernelTraceControl op 36) for the image at base. */
static void rsds_rec(hsi_writer *w, uint32_t pid, uint64_t base, const hs_guid *g, uint32_t age, const char *name,
                     int64_t ts) {
  static const hs_guid ktc = { 0xb3e675d7, 0x2554, 0x4f18, { 0x83, 0x0b, 0x27, 0x62, 0x73, 0x25, 0x60, 0xde } };
  uint8_t p[160];
  size_t n = 0, k;
  for (k = 0; k < 8; k++) p[n++] = (uint8_t)(base >> (8 * k));
  for (k = 0; k < 4; k++) p[n++] = (uint8_t)(pid >> (8 * k));
  for (k = 0; k < 4; k++) p[n++] = (uint8_t)(g->d1 >> (8 * k));
  p[n++] = (uint8_t)g->d2; p[n++] = (uint8_t)(g->d2 >> 8);
  p[n++] = (uint8_t)g->d3; p[n++] = (uint8_t)(g->d3 >> 8);
  memcpy(p + n, g->d4, 8); n += 8;
  for (k = 0; k < 4; k++) p[n++] = (uint8_t)(age >> (8 * k));
  memcpy(p + n, name, strlen(name) + 1); n += strlen(name) + 1;
  CHECK_EQ(hsi_writer_mof(w, 0, HS_HT_FULL64, &ktc, 36, 2, pid, pid + 4, ts, p, n), 0);
}

/* The process map of the trace at path (which is then removed). */
static hsi_procmap *procmap_of(const char *path) {
  char err[256];
  const char *pp = path;
  hs_reader *r;
  hs_event ev;
  hsi_procmap *pm;
  CHECK_EQ(hs_reader_open(&r, &pp, 1, NULL, err, sizeof err), 0);
  if (!r) return NULL;
  pm = hsi_procmap_new();
  while (hs_reader_next(r, &ev) == 1) CHECK(hsi_procmap_feed(pm, &ev) >= 0);
  hs_reader_close(r);
  remove(path);
  return pm;
}

/* A procmap of pid 1000 with app.exe (with a DbgID_RSDS of the example's
   PDB when rsds), ntdll.dll, and ntoskrnl.exe in pid 0. */
static hsi_procmap *make_pm(int rsds, const char *guid, uint32_t *inst) {
  char path[512], err[256];
  hsi_writer *w;
  hsi_procmap *pm;
  unit_tmp_path(path, sizeof path, "sym.etl");
  CHECK_EQ(hsi_writer_open(&w, path, NULL, err, sizeof err), 0);
  if (!w) return NULL;
  CHECK_EQ(hsi_writer_process(w, 0, 3, 8, 0, 0, 10, "Idle", NULL), 0);
  CHECK_EQ(hsi_writer_image(w, 0, 3, 8, 0, 0xFFFFF80000000000ull, 0x1000000, 11, "\\SystemRoot\\system32\\ntoskrnl.exe"), 0);
  CHECK_EQ(hsi_writer_process(w, 0, 3, 8, 1000, 4, 12, "app.exe", NULL), 0);
  CHECK_EQ(hsi_writer_image(w, 0, 3, 8, 1000, 0x7ff700000000ull, 0x10000, 13, "\\Device\\HarddiskVolume3\\App.EXE"), 0);
  if (rsds) {
    hs_guid g;
    hs_guid_parse(guid, &g);
    rsds_rec(w, 1000, 0x7ff700000000ull, &g, 1, "C:\\src\\MemoryTestApp\\x64\\Release\\MemoryTestApp.pdb", 13);
  }
  CHECK_EQ(hsi_writer_image(w, 0, 3, 8, 1000, 0x7ff800000000ull, 0x200000, 14, "\\SystemRoot\\System32\\ntdll.dll"), 0);
  CHECK_EQ(hsi_writer_close(w), 0);
  if (!(pm = procmap_of(path))) return NULL;
  *inst = hsi_procmap_find(pm, 1000, 100);
  CHECK(*inst != HSI_NOINST);
  return pm;
}

TEST(map_source_and_text) {
  static const char map[] =
    "ntdll.dll 9d1a0 230 RtlAllocateHeap\n"
    "app.exe 2000 100 Main\n"
    "ntoskrnl.exe 123000 400 ExAllocatePoolWithTag\n";
  char err[256], frame[256];
  hsi_symmap *sm;
  hsi_syms *sy;
  uint32_t inst = 0;
  size_t n;
  hsi_procmap *pm = make_pm(0, NULL, &inst);
  if (!pm) return;
  sy = hsi_syms_new(pm);
  CHECK_EQ(hsi_symmap_load_mem(&sm, map, strlen(map), "m.sym", err, sizeof err), 0);
  hsi_syms_format(sy, inst, 0x7ff80009d1ecull, 100, frame, sizeof frame);
  CHECK_STR(frame, "ntdll.dll+0x9d1ec");                     /* no map yet */
  hsi_syms_set_map(sy, sm);
  hsi_syms_format(sy, inst, 0x7ff80009d1ecull, 100, frame, sizeof frame);
  CHECK_STR(frame, "ntdll.dll!RtlAllocateHeap+0x4c");
  hsi_syms_format(sy, inst, 0x7ff80009d1a0ull, 100, frame, sizeof frame);
  CHECK_STR(frame, "ntdll.dll!RtlAllocateHeap");             /* offset 0 is not printed */
  hsi_syms_format(sy, inst, 0x7ff700002010ull, 100, frame, sizeof frame);
  CHECK_STR(frame, "App.EXE!Main+0x10");                     /* module case as the trace has it */
  hsi_syms_format(sy, inst, 0x7ff700009000ull, 100, frame, sizeof frame);
  CHECK_STR(frame, "App.EXE+0x9000");                        /* outside every symbol */
  hsi_syms_format(sy, inst, 0xFFFFF80000123010ull, 100, frame, sizeof frame);
  CHECK_STR(frame, "ntoskrnl.exe!ExAllocatePoolWithTag+0x10");   /* kernel image of pid 0 */
  hsi_syms_format(sy, inst, 0x7ff900000000ull, 100, frame, sizeof frame);
  CHECK_STR(frame, "0x7ff900000000");                        /* no image there */
  n = hsi_syms_format(sy, inst, 0x7ff80009d1ecull, 100, frame, 8);
  CHECK_EQ(n, strlen("ntdll.dll!RtlAllocateHeap+0x4c"));     /* cut, the whole length returned */
  CHECK_STR(frame, "ntdll.d");
  /* cached per address: a second lookup resolves nothing new */
  {
    uint64_t before = hsi_syms_stats(sy)->addresses;
    hsi_syms_format(sy, inst, 0x7ff80009d1ecull, 100, frame, sizeof frame);
    CHECK_EQ(hsi_syms_stats(sy)->addresses, before);
    CHECK_EQ(hsi_syms_stats(sy)->pdb_searches, 0);            /* no image has a PDB identity */
    /* by source: ntdll twice, App.EXE's Main and the kernel's from the map;
       App.EXE+0x9000 unnamed by it.  ntdll before the map was no lookup:
       an image with no PDB and no map is named by its RVA at once. */
    CHECK_EQ(hsi_syms_stats(sy)->from_map, 4);
    CHECK_EQ(hsi_syms_stats(sy)->unnamed, 1);
  }
  /* another map (or none) forgets the frames named with the old one */
  {
    uint32_t gen = hsi_syms_generation(sy);
    hsi_syms_set_map(sy, NULL);
    CHECK(hsi_syms_generation(sy) != gen);
    uint64_t addrs = hsi_syms_stats(sy)->addresses, lookups = hsi_syms_stats(sy)->lookups;
    hsi_syms_format(sy, inst, 0x7ff80009d1ecull, 100, frame, sizeof frame);
    CHECK_STR(frame, "ntdll.dll+0x9d1ec");
    hsi_syms_format(sy, inst, 0x7ff800001000ull, 100, frame, sizeof frame);
    CHECK_STR(frame, "ntdll.dll+0x1000");
    CHECK_EQ(hsi_syms_stats(sy)->lookups, lookups + 2);
    CHECK_EQ(hsi_syms_stats(sy)->addresses, addrs);          /* without a map: no lookup, no cache */
  }
  hsi_syms_free(sy);
  hsi_symmap_free(sm);
  hsi_procmap_free(pm);
}

TEST(frame_text) {
  hsi_symframe f;
  char out[256];
  memset(&f, 0, sizeof f);
  f.kind = HSI_SYMF_FUNC; f.module = "app.exe"; f.name = "Main"; f.off = 0x1f;
  f.file = "C:\\src\\app.c"; f.line = 42;
  hsi_symframe_format(&f, out, sizeof out);
  CHECK_STR(out, "app.exe!Main+0x1f [app.c:42]");
  f.kind = HSI_SYMF_INLINE; f.name = "Helper"; f.line = 7;
  hsi_symframe_format(&f, out, sizeof out);
  CHECK_STR(out, "app.exe!Helper [app.c:7]");        /* inline levels have no offset */
  f.kind = HSI_SYMF_FUNC; f.off = 0; f.file = NULL;
  hsi_symframe_format(&f, out, sizeof out);
  CHECK_STR(out, "app.exe!Helper");
  f.file = "a.c"; f.line = 0;
  hsi_symframe_format(&f, out, sizeof out);
  CHECK_STR(out, "app.exe!Helper [a.c]");
  f.kind = HSI_SYMF_RVA; f.off = 0x10;
  hsi_symframe_format(&f, out, sizeof out);
  CHECK_STR(out, "app.exe+0x10 [a.c]");                       /* a line known, no function */
  f.file = NULL;
  hsi_symframe_format(&f, out, sizeof out);
  CHECK_STR(out, "app.exe+0x10");
  f.kind = HSI_SYMF_ADDR; f.off = 0xfffff80000001000ull;
  hsi_symframe_format(&f, out, sizeof out);
  CHECK_STR(out, "0xfffff80000001000");
}

/* The example's PDB through the layer: names, file:line, inline frames, laziness. */
TEST(pdb_source) {
  char frame[1024], dir[512];
  hsi_symframe f[HSI_SYM_MAXDEPTH];
  hsi_syms *sy;
  uint32_t inst = 0;
  int n;
  hsi_procmap *pm;
  if (!reader_ready()) return;
  pm = make_pm(1, GUID, &inst);
  if (!pm) return;
  sy = hsi_syms_new(pm);
  hsi_syms_on_message(sy, on_note, NULL);
  CHECK_EQ(hsi_syms_add_dir(sy, "examples"), 0);
  CHECK_EQ(hsi_syms_stats(sy)->pdb_searches, 0);              /* nothing until asked */
  hsi_syms_format(sy, inst, 0x7ff800001000ull, 100, frame, sizeof frame);
  CHECK_STR(frame, "ntdll.dll+0x1000");
  CHECK_EQ(hsi_syms_stats(sy)->pdb_searches, 0);              /* ntdll has no identity: no search */
  /* InnerLoopOperation's call to HeapAlloc returns to RVA 0x14bf (layout.txt) */
  hsi_syms_format(sy, inst, 0x7ff7000014bfull, 100, frame, sizeof frame);
  CHECK_STR(frame, "App.EXE!InnerLoopOperation+0x1f [memorytestapp.c:53]");
  CHECK_EQ(hsi_syms_stats(sy)->pdb_searches, 1);
  CHECK_EQ(hsi_syms_stats(sy)->pdb_opened, 1);
  /* Main's call to InnerLoopOperation is inside the inlined RunInnerLoop */
  n = hsi_syms_resolve(sy, inst, 0x7ff700001105ull, 100, f, HSI_SYM_MAXDEPTH);
  CHECK_EQ(n, 2);
  if (n == 2) {
    CHECK_EQ(f[0].kind, HSI_SYMF_INLINE);
    CHECK_STR(f[0].name, "RunInnerLoop");
    CHECK_EQ(f[0].line, 111);
    CHECK_EQ(f[1].kind, HSI_SYMF_FUNC);
    CHECK_STR(f[1].name, "Main");
    CHECK_EQ(f[1].line, 129);
    CHECK_EQ(f[1].off, 0x1105 - 0x1060);
  }
  hsi_syms_format(sy, inst, 0x7ff700001105ull, 100, frame, sizeof frame);
  CHECK_STR(frame, "App.EXE!RunInnerLoop [memorytestapp.c:111]\n"
                   "App.EXE!Main+0xa5 [memorytestapp.c:129]");
  /* only the innermost cap levels but always the function */
  n = hsi_syms_resolve(sy, inst, 0x7ff700001105ull, 100, f, 1);
  CHECK_EQ(n, 1);
  CHECK_STR(f[0].name, "Main");
  CHECK_EQ(hsi_syms_stats(sy)->pdb_searches, 1);              /* opened once per image identity */
  CHECK_EQ(notes, 0);
  /* every call site of the image: the frames llvm-symbolizer gave build.lua */
  {
    FILE *lf = fopen("examples/memorytestapp/layout.txt", "r");
    char line[1024], name[256], file[512];
    unsigned long rva, lvl, ln;
    int sites = 0, agree = 0;
    CHECK(lf != NULL);
    while (lf && fgets(line, sizeof line, lf)) {
      if (sscanf(line, "frame %lx %lu %255s %lu %511[^\n]", &rva, &lvl, name, &ln, file) != 5) continue;
      n = hsi_syms_resolve(sy, inst, 0x7ff700000000ull + rva, 100, f, HSI_SYM_MAXDEPTH);
      sites++;
      if ((int)lvl <= n && strcmp(f[lvl - 1].name ? f[lvl - 1].name : "", name) == 0 && f[lvl - 1].line == ln
          && f[lvl - 1].file && strcmp(f[lvl - 1].file, file) == 0
          && (f[lvl - 1].kind == HSI_SYMF_INLINE) == ((int)lvl < n))
        agree++;
      else
        fprintf(stderr, "0x%lx level %lu: llvm-symbolizer %s %s:%lu\n", rva, lvl, name, file, ln);
    }
    if (lf) fclose(lf);
    CHECK(sites > 30);
    CHECK_EQ(agree, sites);
  }
  hsi_syms_free(sy);
  hsi_procmap_free(pm);

  /* a PDB with another GUID is not used; one message says who wanted what */
  pm = make_pm(1, "11111111-2222-3333-4444-555555555555", &inst);
  if (!pm) return;
  sy = hsi_syms_new(pm);
  hsi_syms_on_message(sy, on_note, NULL);
  hsi_syms_add_dir(sy, "examples");
  hsi_syms_format(sy, inst, 0x7ff7000014bfull, 100, frame, sizeof frame);
  CHECK_STR(frame, "App.EXE+0x14bf");
  hsi_syms_format(sy, inst, 0x7ff7000014c0ull, 100, frame, sizeof frame);
  CHECK_EQ(notes, 1);
  CHECK(strstr(last_note, "App.EXE wants MemoryTestApp.pdb GUID 11111111-2222-3333-4444-555555555555 age 1") != NULL);
  CHECK(strstr(last_note, "examples/MemoryTestApp.pdb does not match") != NULL);
  {
    const hsi_sym_image *rep;
    long k, i;
    k = hsi_syms_report(sy, &rep);
    CHECK_EQ(k, 3);
    for (i = 0; i < k; i++)
      if (strcmp(rep[i].module, "App.EXE") == 0) {
        CHECK_EQ(rep[i].status, HSI_PDB_BADGUID);
        CHECK_STR(rep[i].path, "examples/MemoryTestApp.pdb");
      } else {
        CHECK_EQ(rep[i].status, HSI_PDB_NOID);
      }
  }
  hsi_syms_free(sy);
  hsi_procmap_free(pm);

  /* a damaged PDB: that image stays unnamed, the others are named */
  snprintf(dir, sizeof dir, "%s", fresh("damaged-layer"));
  {
    char p[1024];
    snprintf(p, sizeof p, "%s/MemoryTestApp.pdb", dir);
    copy(PDB, p, 3000);
  }
  pm = make_pm(1, GUID, &inst);
  if (!pm) return;
  sy = hsi_syms_new(pm);
  notes = 0;
  hsi_syms_on_message(sy, on_note, NULL);
  hsi_syms_add_dir(sy, dir);
  hsi_syms_format(sy, inst, 0x7ff7000014bfull, 100, frame, sizeof frame);
  CHECK_STR(frame, "App.EXE+0x14bf");
  CHECK_EQ(notes, 1);
  CHECK(strstr(last_note, "MemoryTestApp.pdb") != NULL && strstr(last_note, "offset") != NULL);
  hsi_syms_free(sy);
  hsi_procmap_free(pm);
}

/*
** Image identities over many processes (the report has one a PDB, or a
** module without one): a module's name in any case with the same
** TimeDateStamp and size is one identity, another size another; a PDB's
** GUID and age with its file name in any case and under any directory is
** one, another age another.  Over hundreds of processes each identity
** counts every one, and the report lists each once; 40 more modules, one
** a process, make the index of identities grow.
*/
TEST(identities_many) {
  enum { NP = 300 };
  char path[512], err[256];
  hsi_writer *w;
  hsi_procmap *pm;
  hsi_syms *sy;
  const hsi_sym_image *rep;
  hs_guid g;
  uint32_t pid;
  long k, i, seen = 0;
  int64_t ts = 10;
  hs_guid_parse("11111111-2222-3333-4444-555555555555", &g);
  unit_tmp_path(path, sizeof path, "ids.etl");
  CHECK_EQ(hsi_writer_open(&w, path, NULL, err, sizeof err), 0);
  if (!w) return;
  for (pid = 1000; pid < 1000 + 4 * NP; pid += 4) {
    int odd = (pid / 4) % 2;
    CHECK_EQ(hsi_writer_process(w, 0, 3, 8, pid, 4, ts++, "svc.exe", NULL), 0);
    CHECK_EQ(hsi_writer_image(w, 0, 3, 8, pid, 0x7ff800000000ull, 0x20000, ts++,
                              odd ? "\\SystemRoot\\System32\\COMMON.DLL" : "\\SystemRoot\\System32\\common.dll"), 0);
    if (pid % 40 == 0)                       /* another build: another size */
      CHECK_EQ(hsi_writer_image(w, 0, 3, 8, pid, 0x7ff810000000ull, 0x30000, ts++, "\\Windows\\common.dll"), 0);
    if (pid < 1000 + 4 * 40) {               /* 40 modules of their own: the index grows */
      char own[64];
      snprintf(own, sizeof own, "\\Device\\HarddiskVolume3\\own%u.dll", (unsigned)pid);
      CHECK_EQ(hsi_writer_image(w, 0, 3, 8, pid, 0x7ff820000000ull, 0x8000, ts++, own), 0);
    }
    CHECK_EQ(hsi_writer_image(w, 0, 3, 8, pid, 0x7ff700000000ull, 0x10000, ts, "\\Device\\HarddiskVolume3\\svc.exe"), 0);
    rsds_rec(w, pid, 0x7ff700000000ull, &g, pid % 12 == 0 ? 2 : 1,
             odd ? "C:\\build\\Svc.PDB" : "D:\\other\\dir\\svc.pdb", ts++);
  }
  CHECK_EQ(hsi_writer_close(w), 0);
  if (!(pm = procmap_of(path))) return;
  CHECK_EQ(hsi_procmap_stats(pm)->dbgid_attached, NP);
  sy = hsi_syms_new(pm);
  hsi_syms_set_path(sy, "");
  k = hsi_syms_report(sy, &rep);
  CHECK_EQ(k, 4 + 40);
  for (i = 0; i < k; i++) {
    if (!rep[i].has_id && strncmp(rep[i].module, "own", 3) == 0 && rep[i].processes == 1) seen += 16;
    if (!rep[i].has_id && rep[i].processes == NP && hsi_strieq(rep[i].module, "common.dll")) seen |= 1;
    if (!rep[i].has_id && rep[i].processes == NP / 10) seen |= 2;              /* pids 1000, 1040, ... */
    if (rep[i].has_id && rep[i].age == 1 && rep[i].processes == NP - NP / 3) seen |= 4;
    if (rep[i].has_id && rep[i].age == 2 && rep[i].processes == NP / 3) seen |= 8;   /* pid % 12 == 0 */
  }
  CHECK_EQ(seen, 15 + 16 * 40);
  hsi_syms_free(sy);
  hsi_procmap_free(pm);
}

/* An x86 C function known only from the publics ("_TestFunctionWithNoPrivateSymbols"
   in google/syzygy's test_dll.dll.pdb) reads as llvm-symbolizer names it, without the '_'. */
TEST(x86_public) {
  static const hs_guid ktc = { 0xb3e675d7, 0x2554, 0x4f18, { 0x83, 0x0b, 0x27, 0x62, 0x73, 0x25, 0x60, 0xde } };
  const char *src = "../shared/pdbs/google_syzygy__test_dll_winsdk81.pdb";
  const char *name = "E:\\src\\syzygy2\\src\\build\\Release\\test_dll.dll.pdb";
  char path[1024], err[256], frame[256], dir[512];
  const char *pp = path;
  hsi_writer *w;
  hs_reader *r;
  hs_event ev;
  hsi_procmap *pm;
  hsi_syms *sy;
  uint8_t p[160];
  size_t n = 0, k;
  hs_guid g;
  uint64_t base = 0x10000000ull;
  FILE *f = fopen(src, "rb");
  if (!f) {
    if (getenv("CI") && strcmp(getenv("CI"), "true") == 0) CHECK(!"../shared/pdbs present (CI=true)");
    else printf("SKIP: x86 publics: no %s\n", src);
    return;
  }
  fclose(f);
  snprintf(dir, sizeof dir, "%s", fresh("x86"));
  snprintf(path, sizeof path, "%s/test_dll.dll.pdb", dir);
  CHECK_EQ(copy(src, path, 0), 0);
  hs_guid_parse("180E55A2-117E-4172-804D-10E9A667B1D9", &g);
  for (k = 0; k < 8; k++) p[n++] = (uint8_t)(base >> (8 * k));
  p[n++] = 0xe8; p[n++] = 3; p[n++] = 0; p[n++] = 0;
  for (k = 0; k < 4; k++) p[n++] = (uint8_t)(g.d1 >> (8 * k));
  p[n++] = (uint8_t)g.d2; p[n++] = (uint8_t)(g.d2 >> 8);
  p[n++] = (uint8_t)g.d3; p[n++] = (uint8_t)(g.d3 >> 8);
  memcpy(p + n, g.d4, 8); n += 8;
  p[n++] = 5; p[n++] = 0; p[n++] = 0; p[n++] = 0;
  memcpy(p + n, name, strlen(name) + 1); n += strlen(name) + 1;
  snprintf(path, sizeof path, "%s/x86.etl", dir);
  CHECK_EQ(hsi_writer_open(&w, path, NULL, err, sizeof err), 0);
  if (!w) return;
  CHECK_EQ(hsi_writer_process(w, 0, 3, 8, 1000, 4, 12, "app.exe", NULL), 0);
  CHECK_EQ(hsi_writer_image(w, 0, 3, 8, 1000, base, 0x20000, 13, "\\Device\\HarddiskVolume3\\test_dll.dll"), 0);
  CHECK_EQ(hsi_writer_mof(w, 0, HS_HT_FULL64, &ktc, 36, 2, 1000, 1004, 13, p, n), 0);
  CHECK_EQ(hsi_writer_close(w), 0);
  CHECK_EQ(hs_reader_open(&r, &pp, 1, NULL, err, sizeof err), 0);
  if (!r) return;
  pm = hsi_procmap_new();
  while (hs_reader_next(r, &ev) == 1) CHECK(hsi_procmap_feed(pm, &ev) >= 0);
  hs_reader_close(r);
  sy = hsi_syms_new(pm);
  hsi_syms_add_dir(sy, dir);
  /* the public is at 0001:61600, .text at RVA 0x1000 */
  hsi_syms_format(sy, hsi_procmap_find(pm, 1000, 100), base + 0x1000 + 61600 + 3, 100, frame, sizeof frame);
  CHECK_STR(frame, "test_dll.dll!TestFunctionWithNoPrivateSymbols+0x3");
  /* a procedure with lines keeps its '_': at .text+2512+3 llvm-symbolizer
     --inlining names _vsnprintf (stdio.h:1409) inlined into _snprintf
     (stdio.h:1966), the procedure's own name */
  hsi_syms_format(sy, hsi_procmap_find(pm, 1000, 100), base + 0x1000 + 2512 + 3, 100, frame, sizeof frame);
  CHECK_STR(frame, "test_dll.dll!_vsnprintf [stdio.h:1409]\ntest_dll.dll!_snprintf+0x3 [stdio.h:1966]");
  hsi_syms_free(sy);
  hsi_procmap_free(pm);
}

/* A URL in the path is said once, and never fetched. */
TEST(urls_said_once) {
  uint32_t inst = 0;
  hsi_procmap *pm = make_pm(0, NULL, &inst);
  hsi_syms *sy;
  if (!pm) return;
  sy = hsi_syms_new(pm);
  notes = 0;
  hsi_syms_on_message(sy, on_note, NULL);
  CHECK_EQ(hsi_syms_set_path(sy, "srv*/nonexistent*https://msdl.microsoft.com/download/symbols"), 0);
  CHECK_EQ(notes, 1);
  CHECK(strstr(last_note, "https://msdl.microsoft.com/download/symbols ignored") != NULL);
  CHECK(strstr(last_note, "no network") != NULL);
  CHECK_EQ(hsi_syms_add_dir(sy, "examples"), 0);
  CHECK_EQ(hsi_syms_set_path(sy, "srv*/nonexistent*https://msdl.microsoft.com/download/symbols"), 0);
  CHECK_EQ(notes, 1);
  hsi_syms_free(sy);
  hsi_procmap_free(pm);
}

int main(void) {
  const char *t = getenv("TMPDIR");
  srand(1234);
  snprintf(tmproot, sizeof tmproot, "%s/hs-sym-XXXXXX", t && *t ? t : "/tmp");
  if (!mkdtemp(tmproot)) { perror("mkdtemp"); return 1; }
  RUN(path_parse);
  RUN(keys_and_names);
  RUN(store_layouts);
  RUN(mismatch_and_damage);
  RUN(map_source_and_text);
  RUN(frame_text);
  RUN(pdb_source);
  RUN(urls_said_once);
  RUN(x86_public);
  RUN(identities_many);
  rmtree(tmproot);
  return UNIT_DONE();
}
