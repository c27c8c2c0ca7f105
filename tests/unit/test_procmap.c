/*
** test_procmap.c -- processes, threads and images over time
** (engine/procmap.c, with the payload decoders of process.c and
** image.c).  Payloads are written field by field from the
** layouts in ETL-FORMAT.md §6.5-§6.8; then the real traces, when the
** corpus is there (HEAPSCRIPT_CORPUS or ../shared/traces; CI=true makes a
** missing corpus a failure).
*/
#include "unit.h"
#include "corpus.h"
#include "heapscript.h"
#include "procmap.h"
#include "kdecode.h"

/* ------------------------------------------------------ payload bytes */

typedef struct buf { uint8_t b[2048]; size_t n; } buf;

static void u8(buf *b, unsigned v) { if (b->n < sizeof b->b) b->b[b->n++] = (uint8_t)v; }
static void u16(buf *b, unsigned v) { u8(b, v & 0xFF); u8(b, v >> 8 & 0xFF); }
static void u32(buf *b, uint32_t v) { u16(b, v & 0xFFFF); u16(b, v >> 16); }
static void u64(buf *b, uint64_t v) { u32(b, (uint32_t)v); u32(b, (uint32_t)(v >> 32)); }
static void ptr(buf *b, int p, uint64_t v) { if (p == 8) u64(b, v); else u32(b, (uint32_t)v); }
static void ansi(buf *b, const char *s) { while (*s) u8(b, (unsigned char)*s++); u8(b, 0); }
static void wstr(buf *b, const char *s) { while (*s) u16(b, (unsigned char)*s++); u16(b, 0); }

/* UserSID (§6.5): u32 0 alone, or TOKEN_USER (2 pointers) + SID. */
static void sid(buf *b, int p, int with) {
  if (!with) { u32(b, 0); return; }
  ptr(b, p, 0xFFFFA00012345678ull & (p == 8 ? ~0ull : 0xFFFFFFFFull));
  ptr(b, p, 0);
  u8(b, 1); u8(b, 5);                                  /* Revision, SubAuthorityCount */
  u8(b, 0); u8(b, 0); u8(b, 0); u8(b, 0); u8(b, 0); u8(b, 5);   /* authority 5 */
  u32(b, 21); u32(b, 1111); u32(b, 2222); u32(b, 3333); u32(b, 1001);
}

/* Process v1-v5 (§6.5). */
static void process(buf *b, int v, int p, uint32_t pid, uint32_t ppid, uint32_t flags,
                    int with_sid, const char *name, const char *cmd) {
  b->n = 0;
  ptr(b, p, 0xFFFFFA8000001000ull & (p == 8 ? ~0ull : 0xFFFFFFFFull));  /* UniqueProcessKey */
  u32(b, pid); u32(b, ppid); u32(b, 1); u32(b, 0);     /* ProcessId, ParentId, SessionId, ExitStatus */
  if (v >= 3) ptr(b, p, 0x1AA000);                     /* DirectoryTableBase */
  if (v >= 4) u32(b, flags);
  CHECK_EQ(b->n, v >= 4 ? 2u * p + 20 : v == 3 ? 2u * p + 16 : p + 16u);   /* UserSID offset */
  sid(b, p, with_sid);
  ansi(b, name);
  if (v >= 2) wstr(b, cmd);
  if (v >= 4) { wstr(b, ""); wstr(b, ""); }            /* PackageFullName, ApplicationId */
  if (v >= 5) u64(b, 0x01D1B6A3C4D5E6F7ull);           /* 8 undocumented bytes (§7.17) */
}

/* Thread v3 (§6.6): base length 16 + 7P, then an optional name. */
static void thread3(buf *b, int p, uint32_t pid, uint32_t tid, const char *name) {
  int i;
  b->n = 0;
  u32(b, pid); u32(b, tid);
  for (i = 0; i < 7; i++) ptr(b, p, 0x1000u * (i + 1));   /* StackBase .. TebBase */
  u32(b, 0);                                           /* SubProcessTag */
  u8(b, 8); u8(b, 5); u8(b, 2); u8(b, 0);              /* priorities, flags */
  CHECK_EQ(b->n, 16u + 7u * p);
  if (name) wstr(b, name);
}

/* Image v2/v3 (§6.7): FileName at 3P + 32. */
static void image(buf *b, int p, uint64_t base, uint64_t size, uint32_t pid, const char *name) {
  b->n = 0;
  ptr(b, p, base); ptr(b, p, size); u32(b, pid);
  u32(b, 0xABCD);                                      /* ImageChecksum */
  u32(b, 0x5A5A5A5A);                                  /* TimeDateStamp */
  u32(b, 0);                                           /* SignatureLevel/Type */
  ptr(b, p, base);                                     /* DefaultBase */
  u32(b, 0); u32(b, 0); u32(b, 0); u32(b, 0);
  CHECK_EQ(b->n, 3u * p + 32);
  wstr(b, name);
}

static hs_event kev(int hook, int version, int p, int64_t ts, const buf *b) {
  hs_event ev;
  memset(&ev, 0, sizeof ev);
  ev.flags = HS_EVF_KERNEL | HS_EVF_HAS_IDS;
  ev.hook = (uint16_t)hook;
  ev.opcode = (uint8_t)(hook & 0xFF);
  ev.version = (uint16_t)version;
  ev.header_type = p == 8 ? HS_HT_SYSTEM64 : HS_HT_SYSTEM32;
  ev.pointer_size = (uint8_t)p;
  ev.timestamp = ts;
  ev.pid = 4; ev.tid = 8;            /* header ids are not the subject (§3.3) */
  ev.payload = b->b;
  ev.payload_len = (uint32_t)b->n;
  return ev;
}

static const hs_guid G_KTC = { 0xb3e675d7, 0x2554, 0x4f18, { 0x83, 0x0b, 0x27, 0x62, 0x73, 0x25, 0x60, 0xde } };
static const hs_guid G_IMAGE = { 0x2cb15d1d, 0x5fc1, 0x11d2, { 0xab, 0xe1, 0x00, 0xa0, 0xc9, 0x11, 0xf5, 0x18 } };

static hs_event fev(const hs_guid *g, int op, int version, int p, int64_t ts, const buf *b) {
  hs_event ev;
  memset(&ev, 0, sizeof ev);
  ev.flags = HS_EVF_HAS_IDS;
  ev.provider = *g;
  ev.opcode = (uint8_t)op;
  ev.version = (uint16_t)version;
  ev.header_type = p == 8 ? HS_HT_FULL64 : HS_HT_FULL32;
  ev.pointer_size = (uint8_t)p;
  ev.timestamp = ts;
  ev.pid = 4; ev.tid = 8;
  ev.payload = b->b;
  ev.payload_len = (uint32_t)b->n;
  return ev;
}

/* --------------------------------------------------------- processes */

static void one_process(int v, int p, int with_sid, int op) {
  hsi_procmap *pm = hsi_procmap_new();
  buf b;
  hs_event ev;
  uint32_t inst;
  process(&b, v, p, 1234, 88, 2, with_sid, "notepad.exe", "notepad.exe C:\\a.txt");
  ev = kev(0x0300 | op, v, p, 1000, &b);
  CHECK_EQ(hsi_procmap_feed(pm, &ev), 1);
  CHECK_EQ(hsi_procmap_stats(pm)->process_decoded, 1);
  inst = hsi_procmap_find(pm, 1234, 1000);
  CHECK(inst != HSI_NOINST);
  CHECK_EQ(hsi_procmap_pid(pm, inst), 1234);
  CHECK_EQ(hsi_procmap_parent(pm, inst), 88);
  CHECK_STR(hsi_procmap_name(pm, inst), "notepad.exe");
  CHECK_STR(hsi_procmap_cmdline(pm, inst), v >= 2 ? "notepad.exe C:\\a.txt" : "");   /* v1 has none */
  CHECK_EQ(hsi_procmap_find(pm, 4, 1000), HSI_NOINST);      /* not the header pid */
  if (op == 1) CHECK_EQ(hsi_procmap_start(pm, inst), 1000);
  else CHECK_EQ(hsi_procmap_start(pm, inst), HSI_TS_BEFORE);
  if (v >= 4) CHECK(hsi_procmap_flags(pm, inst) & HSI_PROC_WOW64);
  hsi_procmap_free(pm);
}

TEST(process_versions) {
  one_process(3, 8, 0, 3);   /* DCStart v3 x64, no SID */
  one_process(3, 4, 1, 1);   /* Start v3 x86, SID */
  one_process(4, 8, 1, 3);
  one_process(4, 4, 0, 1);
  one_process(5, 8, 1, 3);
  one_process(5, 4, 1, 4);   /* DCEnd */
  one_process(2, 4, 1, 1);
  one_process(1, 8, 0, 1);
}

/* ImageFileName is ANSI, read as Latin-1 into UTF-8: a byte >= 0x80 in
   the first eight, after them, or none (names checked eight bytes at a
   time, then one by one). */
TEST(process_latin1_names) {
  static const struct { const char *ansi, *utf8; } n[] = {
    { "caf\xE9.exe", "caf\xC3\xA9.exe" },
    { "rapport-\xC9t\xE9-2026.exe", "rapport-\xC3\x89t\xC3\xA9-2026.exe" },
    { "a-long-plain-ascii-name.exe", "a-long-plain-ascii-name.exe" },
    { "0123456\xFF", "0123456\xC3\xBF" },
  };
  size_t i;
  for (i = 0; i < sizeof n / sizeof n[0]; i++) {
    hsi_procmap *pm = hsi_procmap_new();
    buf b;
    hs_event ev;
    process(&b, 4, 8, 1234, 88, 0, 0, n[i].ansi, "");
    ev = kev(0x0303, 4, 8, 1000, &b);
    CHECK_EQ(hsi_procmap_feed(pm, &ev), 1);
    CHECK_STR(hsi_procmap_name(pm, hsi_procmap_find(pm, 1234, 1000)), n[i].utf8);
    hsi_procmap_free(pm);
  }
}

/* TOKEN_USER pointers of 0 ahead of a real SID (written so by test
   programs): read as the long form because only that ends exactly. */
TEST(process_zero_token_user) {
  hsi_procmap *pm = hsi_procmap_new();
  buf b;
  hs_event ev;
  uint32_t inst;
  b.n = 0;
  u32(&b, 0); u32(&b, 1776); u32(&b, 988); u32(&b, 1); u32(&b, 259);   /* v1, P = 4 */
  u32(&b, 0); u32(&b, 0);                                               /* TOKEN_USER */
  u8(&b, 1); u8(&b, 1); u8(&b, 0); u8(&b, 0); u8(&b, 0); u8(&b, 0); u8(&b, 0); u8(&b, 5);
  u32(&b, 18);                                                          /* S-1-5-18 */
  ansi(&b, "notepad.exe");
  ev = kev(0x0301, 1, 4, 10, &b);
  CHECK_EQ(hsi_procmap_feed(pm, &ev), 1);
  inst = hsi_procmap_find(pm, 1776, 10);
  CHECK_STR(hsi_procmap_name(pm, inst), "notepad.exe");
  hsi_procmap_free(pm);
}

/* Image v0 (ImageBase P, ModuleSize u32, FileName; pid from the header)
   and v1 with a u32 size, 64-bit payloads under a 32-bit classic header. */
TEST(image_v0_v1) {
  hsi_procmap *pm = hsi_procmap_new();
  buf b;
  hs_event ev;
  const hsi_image *im;
  b.n = 0; u64(&b, 0x01160000); u32(&b, 0x19E000); wstr(&b, "C:\\code\\test_program.exe");
  ev = fev(&G_IMAGE, 3, 0, 4, 10, &b);
  ev.pid = 4192;
  CHECK_EQ(hsi_procmap_feed(pm, &ev), 1);
  b.n = 0; u64(&b, 0x76E10000); u32(&b, 0x127000); u32(&b, 4192); wstr(&b, "C:\\Windows\\system32\\ntdll.dll");
  ev = fev(&G_IMAGE, 3, 1, 4, 11, &b);
  CHECK_EQ(hsi_procmap_feed(pm, &ev), 1);
  im = hsi_procmap_image_at(pm, hsi_procmap_find(pm, 4192, 12), 0x01170000, 12);
  CHECK(im && im->size == 0x19E000 && strcmp(hsi_procmap_str(pm, im->module), "test_program.exe") == 0);
  im = hsi_procmap_image_at(pm, hsi_procmap_find(pm, 4192, 12), 0x76E10010, 12);
  CHECK(im && im->size == 0x127000 && strcmp(hsi_procmap_str(pm, im->path), "C:\\Windows\\system32\\ntdll.dll") == 0);
  CHECK_EQ(hsi_procmap_stats(pm)->width_fallback, 2);
  hsi_procmap_free(pm);
}

TEST(process_truncated) {
  hsi_procmap *pm = hsi_procmap_new();
  buf b;
  hs_event ev;
  process(&b, 4, 8, 1234, 88, 0, 1, "x.exe", "x");
  b.n = 30;                                   /* cut inside the SID */
  ev = kev(0x0301, 4, 8, 10, &b);
  CHECK_EQ(hsi_procmap_feed(pm, &ev), 0);
  CHECK_EQ(hsi_procmap_stats(pm)->process_records, 1);
  CHECK_EQ(hsi_procmap_stats(pm)->process_decoded, 0);
  CHECK_EQ(hsi_procmap_find(pm, 1234, 10), HSI_NOINST);
  hsi_procmap_free(pm);
}

TEST(pid_reuse) {
  hsi_procmap *pm = hsi_procmap_new();
  buf b;
  hs_event ev;
  uint32_t a, c, imp, rd, mid;
  process(&b, 4, 8, 100, 1, 0, 0, "first.exe", "first");
  ev = kev(0x0301, 4, 8, 10, &b); hsi_procmap_feed(pm, &ev);
  ev = kev(0x0302, 4, 8, 20, &b); hsi_procmap_feed(pm, &ev);
  process(&b, 4, 8, 100, 1, 0, 0, "second.exe", "second");
  ev = kev(0x0301, 4, 8, 30, &b); hsi_procmap_feed(pm, &ev);
  a = hsi_procmap_find(pm, 100, 15);
  c = hsi_procmap_find(pm, 100, 35);
  CHECK(a && c && a != c);
  CHECK_STR(hsi_procmap_name(pm, a), "first.exe");
  CHECK_STR(hsi_procmap_name(pm, c), "second.exe");
  CHECK_EQ(hsi_procmap_start(pm, a), 10);
  CHECK_EQ(hsi_procmap_end(pm, a), 20);
  CHECK_EQ(hsi_procmap_find(pm, 100, 20), a);          /* End time inclusive */
  CHECK_EQ(hsi_procmap_start(pm, c), 30);
  CHECK_EQ(hsi_procmap_end(pm, c), HSI_TS_NEVER);
  CHECK_EQ(hsi_procmap_find(pm, 100, 25), HSI_NOINST);  /* between the two */
  CHECK_EQ(hsi_procmap_instance(pm, 100, 35), c);
  /* an event naming pid 100 at 25 implies a third, unseen instance */
  mid = hsi_procmap_instance(pm, 100, 25);
  CHECK(mid && mid != a && mid != c);
  CHECK(hsi_procmap_flags(pm, mid) & HSI_PROC_IMPLIED);
  CHECK_EQ(hsi_procmap_instance(pm, 100, 26), mid);
  CHECK_EQ(hsi_procmap_find(pm, 100, 15), a);
  CHECK_EQ(hsi_procmap_find(pm, 100, 35), c);
  /* a pid seen only in other events */
  imp = hsi_procmap_instance(pm, 777, 40);
  CHECK(imp != HSI_NOINST);
  CHECK_EQ(hsi_procmap_pid(pm, imp), 777);
  CHECK_STR(hsi_procmap_name(pm, imp), "");
  CHECK_EQ(hsi_procmap_start(pm, imp), HSI_TS_BEFORE);
  CHECK_EQ(hsi_procmap_instance(pm, 777, 50), imp);
  CHECK_EQ(hsi_procmap_instance(pm, HS_NOID, 50), HSI_NOINST);
  /* rundown adopts the implied instance and names it */
  process(&b, 3, 8, 777, 1, 0, 0, "late.exe", "late");
  ev = kev(0x0304, 3, 8, 60, &b); hsi_procmap_feed(pm, &ev);
  CHECK_EQ(hsi_procmap_find(pm, 777, 60), imp);
  CHECK_STR(hsi_procmap_name(pm, imp), "late.exe");
  /* rundown-only instance starts before the trace */
  process(&b, 3, 8, 900, 1, 0, 0, "svc.exe", "svc");
  ev = kev(0x0303, 3, 8, 5, &b); hsi_procmap_feed(pm, &ev);
  rd = hsi_procmap_find(pm, 900, 5);
  CHECK(rd && (hsi_procmap_flags(pm, rd) & HSI_PROC_RUNDOWN));
  CHECK_EQ(hsi_procmap_start(pm, rd), HSI_TS_BEFORE);
  CHECK_EQ(hsi_procmap_find(pm, 900, 1), rd);
  /* Defunct (v5, op 39) ends a live instance */
  process(&b, 5, 8, 900, 1, 0, 1, "svc.exe", "svc");
  ev = kev(0x0327, 5, 8, 70, &b); hsi_procmap_feed(pm, &ev);
  CHECK_EQ(hsi_procmap_end(pm, rd), 70);
  CHECK(hsi_procmap_flags(pm, rd) & HSI_PROC_DEFUNCT);
  hsi_procmap_free(pm);
}

/*
** hsi_procmap_instance remembers its last answer; on random starts, ends
** and uses of a few pids, mostly in time order with repeats, every answer must
** be what hsi_procmap_find (which remembers nothing) says afterwards,
** and an instance must not outlive an End it was given before.
*/
TEST(instance_remembered) {
  hsi_procmap *pm = hsi_procmap_new();
  buf b;
  hs_event ev;
  uint64_t rs = 0x243F6A8885A308D3ull;
  int64_t ts = 100;
  int k, bad = 0, ended = 0;
  for (k = 0; k < 20000; k++) {
    uint32_t pid, got;
    unsigned r;
    rs ^= rs << 13; rs ^= rs >> 7; rs ^= rs << 17;
    r = (unsigned)(rs % 100);
    pid = 100 + (uint32_t)(rs >> 20) % 3;
    ts += (int64_t)((rs >> 40) % 3);                /* equal times too */
    if (r < 4) {
      process(&b, 4, 8, pid, 1, 0, 0, "p.exe", "p");
      ev = kev(r < 2 ? 0x0301 : 0x0302, 4, 8, ts, &b);
      hsi_procmap_feed(pm, &ev);
      if (r >= 2) ended++;
    } else {
      /* mostly now; sometimes a little earlier (an older instance, with a
         newer one after it), then now again */
      int64_t t = r < 20 ? ts - (int64_t)((rs >> 8) % 40) : ts;
      got = hsi_procmap_instance(pm, pid, t);
      if (got == HSI_NOINST || hsi_procmap_find(pm, pid, t) != got || hsi_procmap_pid(pm, got) != pid) bad++;
      if (hsi_procmap_end(pm, got) < t) bad++;
    }
  }
  CHECK_EQ(bad, 0);
  CHECK(ended > 100);
  CHECK(hsi_procmap_ninstances(pm) > 100);
  hsi_procmap_free(pm);
}

/* ----------------------------------------------------------- threads */

TEST(threads) {
  hsi_procmap *pm = hsi_procmap_new();
  buf b;
  hs_event ev;
  thread3(&b, 8, 100, 7, NULL);
  ev = kev(0x0503, 3, 8, 10, &b); CHECK_EQ(hsi_procmap_feed(pm, &ev), 1);
  CHECK_EQ(hsi_procmap_tid_pid(pm, 7, 5), 100);        /* rundown: from before the trace */
  CHECK_EQ(hsi_procmap_tid_pid(pm, 7, 40), 100);
  ev = kev(0x0502, 3, 8, 50, &b); hsi_procmap_feed(pm, &ev);
  CHECK_EQ(hsi_procmap_tid_pid(pm, 7, 50), 100);
  CHECK_EQ(hsi_procmap_tid_pid(pm, 7, 60), HS_NOID);
  thread3(&b, 4, 200, 7, "worker");                    /* 32-bit, v3 with a name */
  ev = kev(0x0501, 3, 4, 70, &b); hsi_procmap_feed(pm, &ev);
  CHECK_EQ(hsi_procmap_tid_pid(pm, 7, 80), 200);
  CHECK_EQ(hsi_procmap_tid_pid(pm, 7, 40), 100);
  CHECK_EQ(hsi_procmap_tid_pid(pm, 7, 65), HS_NOID);
  CHECK_STR(hsi_procmap_thread_name(pm, 7, 80), "worker");
  /* SetName, op 72: ProcessId, ThreadId, name */
  b.n = 0; u32(&b, 200); u32(&b, 7); wstr(&b, "renamed");
  ev = kev(0x0548, 2, 8, 90, &b); CHECK_EQ(hsi_procmap_feed(pm, &ev), 1);
  CHECK_STR(hsi_procmap_thread_name(pm, 7, 95), "renamed");
  CHECK_EQ(hsi_procmap_tid_pid(pm, 99, 95), HS_NOID);
  CHECK_EQ(hsi_procmap_stats(pm)->thread_decoded, 4);
  hsi_procmap_free(pm);
}

/* One Process record of pid (name `name`) with hook `hook` at ts. */
static void pfeed(hsi_procmap *pm, int hook, uint32_t pid, const char *name, int64_t ts) {
  buf b;
  hs_event ev;
  process(&b, 4, 8, pid, 1, 0, 0, name, name);
  ev = kev(hook, 4, 8, ts, &b);
  CHECK_EQ(hsi_procmap_feed(pm, &ev), 1);
}

/*
** Instances at their edges:
**   - an instance implied between two known ones starts the tick after the
**     older one's End (that tick is still the older one's);
**   - a Start of a pid still alive ends the old instance the tick before
**     (its End was lost);
**   - a second End of a pid is another instance's: the first keeps its end;
**     one at the very tick of the first is that End again (no instance that
**     starts after it ends);
**   - a Start and an End in one tick are one instance's;
**   - a Start at the very tick of an implied instance's first use is that
**     instance (timestamp ties), unless a rundown saw it (it existed before).
*/
TEST(instance_edges) {
  hsi_procmap *pm = hsi_procmap_new();
  uint32_t a, c, mid, x, y, p1, p2, imp, imp2, s, n;
  pfeed(pm, 0x0301, 100, "a.exe", 10);
  pfeed(pm, 0x0302, 100, "a.exe", 100);
  pfeed(pm, 0x0301, 100, "c.exe", 300);
  a = hsi_procmap_find(pm, 100, 50);
  c = hsi_procmap_find(pm, 100, 350);
  mid = hsi_procmap_instance(pm, 100, 200);
  CHECK(a && c && mid && mid != a && mid != c);
  CHECK_EQ(hsi_procmap_find(pm, 100, 100), a);
  CHECK_EQ(hsi_procmap_find(pm, 100, 101), mid);
  CHECK_EQ(hsi_procmap_find(pm, 100, 299), mid);
  CHECK_EQ(hsi_procmap_find(pm, 100, 300), c);
  /* a lost End */
  pfeed(pm, 0x0301, 200, "x.exe", 10);
  pfeed(pm, 0x0301, 200, "y.exe", 50);
  x = hsi_procmap_find(pm, 200, 20);
  y = hsi_procmap_find(pm, 200, 60);
  CHECK(x && y && x != y);
  CHECK_EQ(hsi_procmap_end(pm, x), 49);
  CHECK_STR(hsi_procmap_name(pm, x), "x.exe");
  CHECK_EQ(hsi_procmap_find(pm, 200, 50), y);
  /* two Ends */
  pfeed(pm, 0x0301, 300, "p.exe", 10);
  pfeed(pm, 0x0302, 300, "p.exe", 20);
  pfeed(pm, 0x0302, 300, "q.exe", 25);
  p1 = hsi_procmap_find(pm, 300, 15);
  p2 = hsi_procmap_find(pm, 300, 25);
  CHECK(p1 && p2 && p1 != p2);
  CHECK_EQ(hsi_procmap_end(pm, p1), 20);
  CHECK_EQ(hsi_procmap_end(pm, p2), 25);
  CHECK_STR(hsi_procmap_name(pm, p2), "q.exe");
  /* ... but an End again at the very tick of the first is that End */
  n = hsi_procmap_ninstances(pm);
  pfeed(pm, 0x0302, 300, "q.exe", 25);
  CHECK_EQ(hsi_procmap_ninstances(pm), n);
  CHECK_EQ(hsi_procmap_find(pm, 300, 25), p2);
  CHECK_EQ(hsi_procmap_find(pm, 300, 26), HSI_NOINST);
  CHECK_EQ(hsi_procmap_stats(pm)->process_end_repeated, 1);
  /* a process that starts and ends in one tick (a coarse clock) */
  n = hsi_procmap_ninstances(pm);
  pfeed(pm, 0x0301, 600, "t.exe", 40);
  pfeed(pm, 0x0302, 600, "t.exe", 40);
  s = hsi_procmap_find(pm, 600, 40);
  CHECK_EQ(hsi_procmap_ninstances(pm), n + 1);
  CHECK_EQ(hsi_procmap_start(pm, s), 40);
  CHECK_EQ(hsi_procmap_end(pm, s), 40);
  /* a Start tied with the first use */
  imp = hsi_procmap_instance(pm, 400, 70);
  pfeed(pm, 0x0301, 400, "z.exe", 70);
  CHECK_EQ(hsi_procmap_find(pm, 400, 70), imp);
  CHECK_EQ(hsi_procmap_flags(pm, imp) & (HSI_PROC_IMPLIED | HSI_PROC_STARTED), HSI_PROC_STARTED);
  CHECK_STR(hsi_procmap_name(pm, imp), "z.exe");
  CHECK_EQ(hsi_procmap_start(pm, imp), 70);
  /* ... but not when a rundown adopted the implied instance */
  imp2 = hsi_procmap_instance(pm, 500, 80);
  pfeed(pm, 0x0303, 500, "r.exe", 80);
  CHECK_EQ(hsi_procmap_find(pm, 500, 80), imp2);
  pfeed(pm, 0x0301, 500, "r2.exe", 80);
  s = hsi_procmap_find(pm, 500, 80);
  CHECK(s && s != imp2);
  CHECK_EQ(hsi_procmap_end(pm, imp2), 79);
  CHECK_STR(hsi_procmap_name(pm, s), "r2.exe");
  hsi_procmap_free(pm);
}

/*
** Threads at their edges: a record naming a live tid with another process
** is a new thread (the old one ended unseen); a thread first seen after
** the previous one of its tid ended starts the tick after that End.
*/
TEST(thread_edges) {
  hsi_procmap *pm = hsi_procmap_new();
  buf b;
  hs_event ev;
  thread3(&b, 8, 100, 7, NULL);
  ev = kev(0x0501, 3, 8, 10, &b); CHECK_EQ(hsi_procmap_feed(pm, &ev), 1);
  b.n = 0; u32(&b, 200); u32(&b, 7); wstr(&b, "w2");       /* SetName, pid 200 */
  ev = kev(0x0548, 2, 8, 50, &b); CHECK_EQ(hsi_procmap_feed(pm, &ev), 1);
  CHECK_EQ(hsi_procmap_tid_pid(pm, 7, 20), 100);
  CHECK_EQ(hsi_procmap_tid_pid(pm, 7, 49), 100);
  CHECK_EQ(hsi_procmap_tid_pid(pm, 7, 60), 200);
  CHECK_STR(hsi_procmap_thread_name(pm, 7, 60), "w2");
  CHECK_STR(hsi_procmap_thread_name(pm, 7, 20), "");
  /* tid 8: ends at 30; a rundown naming it at 90 (no Start) */
  thread3(&b, 8, 100, 8, NULL);
  ev = kev(0x0501, 3, 8, 10, &b); hsi_procmap_feed(pm, &ev);
  ev = kev(0x0502, 3, 8, 30, &b); hsi_procmap_feed(pm, &ev);
  thread3(&b, 8, 300, 8, NULL);
  ev = kev(0x0504, 3, 8, 90, &b); CHECK_EQ(hsi_procmap_feed(pm, &ev), 1);
  CHECK_EQ(hsi_procmap_tid_pid(pm, 8, 20), 100);
  CHECK_EQ(hsi_procmap_tid_pid(pm, 8, 30), 100);
  CHECK_EQ(hsi_procmap_tid_pid(pm, 8, 31), 300);
  CHECK_EQ(hsi_procmap_tid_pid(pm, 8, 95), 300);
  hsi_procmap_free(pm);
}

/* ------------------------------------------------------------ images */

TEST(images) {
  hsi_procmap *pm = hsi_procmap_new();
  buf b;
  hs_event ev;
  uint32_t inst;
  const hsi_image *im;
  const uint64_t base1 = 0x7FF812340000ull, base2 = 0x7FF899990000ull;
  process(&b, 4, 8, 100, 1, 0, 0, "app.exe", "app");
  ev = kev(0x0301, 4, 8, 10, &b); hsi_procmap_feed(pm, &ev);
  inst = hsi_procmap_find(pm, 100, 10);
  /* Load is hooked under the Process group (0x030A) */
  image(&b, 8, base1, 0x10000, 100, "\\Device\\HarddiskVolume1\\Windows\\System32\\ntdll.dll");
  ev = kev(0x030A, 3, 8, 12, &b); CHECK_EQ(hsi_procmap_feed(pm, &ev), 1);
  image(&b, 8, 0x7FF700000000ull, 0x2000, 100, "\\Device\\HarddiskVolume1\\app.exe");
  ev = kev(0x030A, 3, 8, 13, &b); hsi_procmap_feed(pm, &ev);
  im = hsi_procmap_image_at(pm, inst, base1 + 0x1234, 14);
  CHECK(im != NULL);
  if (im) {
    CHECK_EQ(im->base, base1);
    CHECK_EQ(im->size, 0x10000);
    CHECK_EQ(im->checksum, 0xABCD);
    CHECK_EQ(im->time_date_stamp, 0x5A5A5A5A);
    CHECK_EQ(im->loaded, 12);
    CHECK_STR(hsi_procmap_str(pm, im->path), "\\Device\\HarddiskVolume1\\Windows\\System32\\ntdll.dll");
    CHECK_STR(hsi_procmap_str(pm, im->module), "ntdll.dll");
  }
  CHECK(hsi_procmap_image_at(pm, inst, base1 + 0x1234, 11) == NULL);   /* before the load */
  CHECK(hsi_procmap_image_at(pm, inst, base1 + 0x10000, 14) == NULL);  /* one past the end */
  CHECK(hsi_procmap_image_at(pm, inst, base1 - 1, 14) == NULL);
  im = hsi_procmap_image_at(pm, inst, 0x7FF700001FFFull, 14);
  CHECK(im && strcmp(hsi_procmap_str(pm, im->module), "app.exe") == 0);
  /* Unload (0x1402), then reload at another base */
  image(&b, 8, base1, 0x10000, 100, "\\Device\\HarddiskVolume1\\Windows\\System32\\ntdll.dll");
  ev = kev(0x1402, 3, 8, 40, &b); CHECK_EQ(hsi_procmap_feed(pm, &ev), 1);
  CHECK(hsi_procmap_image_at(pm, inst, base1 + 0x1234, 40) != NULL);   /* unload time inclusive */
  CHECK(hsi_procmap_image_at(pm, inst, base1 + 0x1234, 41) == NULL);
  image(&b, 8, base2, 0x10000, 100, "\\Device\\HarddiskVolume1\\Windows\\System32\\ntdll.dll");
  ev = kev(0x030A, 3, 8, 50, &b); hsi_procmap_feed(pm, &ev);
  CHECK(hsi_procmap_image_at(pm, inst, base1 + 0x1234, 55) == NULL);
  im = hsi_procmap_image_at(pm, inst, base2 + 0x1234, 55);
  CHECK(im && im->base == base2 && im->loaded == 50);
  im = hsi_procmap_image_at(pm, inst, base1 + 0x1234, 20);   /* history stays */
  CHECK(im && im->base == base1 && im->unloaded == 40);
  /* reload at the first base */
  image(&b, 8, base1, 0x8000, 100, "\\Device\\HarddiskVolume1\\other.dll");
  ev = kev(0x030A, 3, 8, 60, &b); hsi_procmap_feed(pm, &ev);
  im = hsi_procmap_image_at(pm, inst, base1 + 0x100, 61);
  CHECK(im && strcmp(hsi_procmap_str(pm, im->module), "other.dll") == 0);
  im = hsi_procmap_image_at(pm, inst, base1 + 0x100, 30);
  CHECK(im && strcmp(hsi_procmap_str(pm, im->module), "ntdll.dll") == 0);
  CHECK(hsi_procmap_image_at(pm, inst, base1 + 0x9000, 61) == NULL);
  /* kernel images: rundown (0x1403) in pid 0, found from any process */
  image(&b, 8, 0xFFFFF80002600000ull, 0x5EC000, 0, "\\SystemRoot\\system32\\ntoskrnl.exe");
  ev = kev(0x1403, 2, 8, 5, &b); CHECK_EQ(hsi_procmap_feed(pm, &ev), 1);
  im = hsi_procmap_image_at(pm, inst, 0xFFFFF80002601000ull, 61);
  CHECK(im && strcmp(hsi_procmap_str(pm, im->module), "ntoskrnl.exe") == 0);
  CHECK(im && im->loaded == HSI_TS_BEFORE && (im->flags & HSI_IMG_RUNDOWN));
  /* a DCEnd of a known image changes nothing */
  image(&b, 8, 0xFFFFF80002600000ull, 0x5EC000, 0, "\\SystemRoot\\system32\\ntoskrnl.exe");
  ev = kev(0x1404, 2, 8, 100, &b); hsi_procmap_feed(pm, &ev);
  CHECK_EQ(hsi_procmap_nimages(pm), 5);
  /* 32-bit image in a 32-bit record (v2) */
  process(&b, 3, 4, 300, 1, 0, 0, "x86.exe", "x86");
  ev = kev(0x0303, 3, 4, 6, &b); hsi_procmap_feed(pm, &ev);
  image(&b, 4, 0x77850000u, 0x1AA000, 300, "\\Device\\HarddiskVolume1\\Windows\\SysWOW64\\ntdll.dll");
  ev = kev(0x1403, 2, 4, 6, &b); hsi_procmap_feed(pm, &ev);
  im = hsi_procmap_image_at(pm, hsi_procmap_find(pm, 300, 7), 0x77851000u, 7);
  CHECK(im && im->base == 0x77850000u && im->size == 0x1AA000);
  CHECK_EQ(hsi_procmap_stats(pm)->image_decoded, 8);
  /* an image of no process (payload pid 0xFFFFFFFF, a header without
     ids): not decoded, and not a failure (it was "out of memory", which
     ended every analysis of the trace) */
  image(&b, 8, 0x7FF700000000ull, 0x1000, HS_NOID, "\\x.dll");
  ev = kev(0x030A, 2, 8, 200, &b);
  ev.pid = ev.tid = HS_NOID;
  ev.flags &= (uint8_t)~HS_EVF_HAS_IDS;
  CHECK(hsi_procmap_feed(pm, &ev) >= 0);
  CHECK_EQ(hsi_procmap_stats(pm)->image_decoded, 8);
  CHECK_EQ(hsi_procmap_nimages(pm), 6);
  hsi_procmap_free(pm);
}

/* Eras (procmap.h): a process enters one where an image is loaded over a
   range another image of it, of another identity, held before; the
   same image loaded again, another base with no overlap, two images
   known from rundown alone and kernel images start none.  Era numbers
   are map-wide. */
static void load_tds(hsi_procmap *pm, int hook, uint64_t base, uint64_t size, uint32_t pid, const char *name,
                     int64_t ts, uint32_t tds) {
  buf b;
  hs_event ev;
  image(&b, 8, base, size, pid, name);
  b.b[24] = (uint8_t)tds; b.b[25] = (uint8_t)(tds >> 8);             /* TimeDateStamp @2P+8 */
  b.b[26] = (uint8_t)(tds >> 16); b.b[27] = (uint8_t)(tds >> 24);
  ev = kev(hook, 3, 8, ts, &b);
  CHECK_EQ(hsi_procmap_feed(pm, &ev), 1);
}

static void load(hsi_procmap *pm, int hook, uint64_t base, uint64_t size, uint32_t pid, const char *name, int64_t ts) {
  load_tds(pm, hook, base, size, pid, name, ts, 0x5A5A5A5A);
}

TEST(eras) {
  hsi_procmap *pm = hsi_procmap_new();
  buf b;
  hs_event ev;
  uint32_t a, c, d;
  int pid;
  for (pid = 100; pid <= 300; pid += 100) {
    process(&b, 4, 8, (uint32_t)pid, 1, 0, 0, "app.exe", "app");
    ev = kev(0x0303, 4, 8, 1, &b); hsi_procmap_feed(pm, &ev);
  }
  a = hsi_procmap_find(pm, 100, 5); c = hsi_procmap_find(pm, 200, 5); d = hsi_procmap_find(pm, 300, 5);
  load(pm, 0x1403, 0x400000, 0x10000, 100, "\\app\\a.exe", 2);        /* rundown */
  load(pm, 0x1402, 0x400000, 0x10000, 100, "\\app\\a.exe", 10);       /* unload */
  load(pm, 0x030A, 0x400000, 0x10000, 100, "\\app\\a.exe", 20);       /* a.exe again: no era */
  load(pm, 0x1402, 0x400000, 0x10000, 100, "\\app\\a.exe", 30);
  load(pm, 0x030A, 0x408000, 0x10000, 100, "\\app\\a.exe", 40);       /* over its old range: era */
  load(pm, 0x1402, 0x408000, 0x10000, 100, "\\app\\a.exe", 50);
  load(pm, 0x030A, 0x400000, 0x10000, 100, "\\app\\b.exe", 60);       /* another image: era */
  load(pm, 0x030A, 0x10000000, 0x10000, 100, "\\app\\c.dll", 70);     /* no overlap: none */
  load_tds(pm, 0x1403, 0x30000000, 0x10000, 100, "\\app\\v.dll", 2, 0);   /* a rundown without */
  load_tds(pm, 0x1402, 0x30000000, 0x10000, 100, "\\app\\v.dll", 80, 0);  /*  the timestamp the */
  load(pm, 0x030A, 0x30000000, 0x10000, 100, "\\app\\v.dll", 85);         /*  others have: no era */
  load(pm, 0x1403, 0x400000, 0x10000, 200, "\\app\\a.exe", 2);        /* two images from rundown */
  load(pm, 0x1404, 0x400000, 0x10000, 200, "\\app\\b.exe", 90);       /*  alone: no time, no era */
  load(pm, 0x1403, 0x20000000, 0x10000, 300, "\\app\\p1.dll", 2);
  load(pm, 0x1402, 0x20000000, 0x10000, 300, "\\app\\p1.dll", 15);
  load(pm, 0x030A, 0x20008000, 0x10000, 300, "\\app\\p2.dll", 25);    /* a later base, overlapping */
  load(pm, 0x1403, 0xFFFFF80002600000ull, 0x10000, 0, "\\SystemRoot\\a.sys", 2);
  load(pm, 0x1402, 0xFFFFF80002600000ull, 0x10000, 0, "\\SystemRoot\\a.sys", 33);
  load(pm, 0x030A, 0xFFFFF80002600000ull, 0x10000, 0, "\\SystemRoot\\b.sys", 44);
  CHECK_EQ(hsi_procmap_era(pm, a, 1000), 0u);            /* not settled yet: none */
  CHECK_EQ(hsi_procmap_settle(pm), 0);
  CHECK(hsi_procmap_has_eras(pm));
  CHECK_EQ(hsi_procmap_era(pm, a, 39), 0u);
  CHECK_EQ(hsi_procmap_era(pm, a, 40), 1u);              /* from the load's own time */
  CHECK_EQ(hsi_procmap_era(pm, a, 59), 1u);
  CHECK_EQ(hsi_procmap_era(pm, a, 60), 2u);
  CHECK_EQ(hsi_procmap_era(pm, a, 1000), 2u);
  CHECK_EQ(hsi_procmap_era(pm, c, 1000), 0u);
  CHECK_EQ(hsi_procmap_era(pm, d, 24), 0u);
  CHECK_EQ(hsi_procmap_era(pm, d, 25), 3u);              /* numbers no other instance has */
  CHECK_EQ(hsi_procmap_era(pm, hsi_procmap_find(pm, 0, 50), 50), 0u);   /* the kernel's: none */
  CHECK_EQ(hsi_procmap_era(pm, HSI_NOINST, 50), 0u);
  CHECK_EQ(hsi_procmap_settle(pm), 0);                   /* again: the same */
  CHECK_EQ(hsi_procmap_era(pm, d, 25), 3u);
  hsi_procmap_free(pm);
}

/* A rundown as real traces have it: many images a process, bases in no
   order, the same paths in process after process (each converted once,
   its module found once).  Every image is found by any address inside
   it, in its own process, and nothing between them. */
TEST(rundown_of_many_images) {
  hsi_procmap *pm = hsi_procmap_new();
  buf b;
  hs_event ev;
  uint32_t inst[3], k, i, bad = 0;
  enum { N = 300 };
  char path[96], want[32];
  for (k = 0; k < 3; k++) {
    process(&b, 4, 8, 500 + k, 1, 0, 0, "svc.exe", "svc");
    ev = kev(0x0303, 4, 8, 1, &b); hsi_procmap_feed(pm, &ev);
    inst[k] = hsi_procmap_find(pm, 500 + k, 1);
    for (i = 0; i < N; i++) {
      uint32_t j = (i * 7919u + k * 13u) % N;        /* every slot once, in no order */
      snprintf(path, sizeof path, "\\Device\\HarddiskVolume3\\Windows\\System32\\m%03u.dll", j);
      image(&b, 8, 0x7FF800000000ull + (uint64_t)j * 0x100000, 0x80000, 500 + k, path);
      ev = kev(0x1403, 3, 8, 2, &b);
      if (hsi_procmap_feed(pm, &ev) != 1) bad++;
    }
  }
  CHECK_EQ(bad, 0);
  CHECK_EQ(hsi_procmap_nimages(pm), 3 * N);
  for (k = 0; k < 3; k++)
    for (i = 0; i < N; i++) {
      uint64_t base = 0x7FF800000000ull + (uint64_t)i * 0x100000;
      const hsi_image *im = hsi_procmap_image_at(pm, inst[k], base + 0x7FFFF, 3);
      snprintf(want, sizeof want, "m%03u.dll", i);
      if (!im || im->base != base || im->instance != inst[k] || strcmp(hsi_procmap_str(pm, im->module), want) != 0)
        bad++;
      if (hsi_procmap_image_at(pm, inst[k], base + 0x80000, 3) != NULL) bad++;   /* the gap after it */
    }
  CHECK_EQ(bad, 0);
  hsi_procmap_free(pm);
}

/*
** Loads and unloads in one process at a few bases, many times each (a
** plugin host), against a model: an unload ends the image live at its
** base if it names its size (else that one went away unseen and the
** unloaded one was never seen loaded: it came after the base's image
** before it had gone), a load ends the one still live there; an address
** at a time is in the live image containing it of the highest base.  Every lookup must agree, the unloads find their
** image, and a base's history stays searchable.
*/
struct mimg { uint64_t base, size; int64_t loaded, unloaded, from; };

TEST(images_against_model) {
  enum { NB = 12, NEV = 3000, NQ = 4000 };
  static struct mimg m[NEV + 1];
  hsi_procmap *pm = hsi_procmap_new();
  buf b;
  hs_event ev;
  uint32_t inst, n = 0, i, k, bad = 0, unknown = 0;
  uint64_t rng = 0x9E3779B97F4A7C15ull;
  int64_t ts = 10;
  process(&b, 4, 8, 700, 1, 0, 0, "host.exe", "host");
  ev = kev(0x0301, 4, 8, 1, &b); hsi_procmap_feed(pm, &ev);
  inst = hsi_procmap_find(pm, 700, 1);
#define RND() (rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17, rng)
  for (i = 0; i < NEV; i++) {
    uint64_t base = 0x7FF900000000ull + (RND() % NB) * 0x40000, size = 0x10000 * (1 + RND() % 8);
    int unload = RND() % 3 == 0;
    struct mimg *live = NULL, *last = NULL;
    ts += 1 + (int64_t)(RND() % 3);
    for (k = n; k-- > 0;)
      if (m[k].base == base) { last = &m[k]; if (m[k].loaded <= ts && ts <= m[k].unloaded) live = &m[k]; break; }
    image(&b, 8, base, size, 700, "\\Device\\HarddiskVolume1\\plugin.dll");
    ev = kev(unload ? 0x1402 : 0x030A, 3, 8, ts, &b);
    if (hsi_procmap_feed(pm, &ev) != 1) bad++;
    if (unload) {
      if (live && live->size != size) { live->unloaded = ts - 1; live = NULL; }   /* not the one unloaded */
      if (!live) {
        live = &m[n++]; live->base = base; live->size = size; live->loaded = HSI_TS_BEFORE; unknown++;
        live->from = last ? last->unloaded + 1 : HSI_TS_BEFORE;
      }
      live->unloaded = ts;
    } else {
      if (live) live->unloaded = ts - 1;
      m[n].base = base; m[n].size = size; m[n].loaded = m[n].from = ts; m[n].unloaded = HSI_TS_NEVER;
      n++;
    }
  }
  CHECK_EQ(bad, 0);
  CHECK_EQ(hsi_procmap_stats(pm)->unload_unknown, unknown);
  for (i = 0; i < NQ; i++) {
    uint64_t addr = 0x7FF900000000ull - 0x1000 + RND() % ((uint64_t)NB * 0x40000 + 0x90000);
    int64_t t = (int64_t)(RND() % (uint64_t)(ts + 20));
    const struct mimg *want = NULL;
    const hsi_image *im = hsi_procmap_image_at(pm, inst, addr, t);
    for (k = 0; k < n; k++)         /* the highest base wins; of one base, the newest */
      if (addr - m[k].base < m[k].size && m[k].from <= t && t <= m[k].unloaded
          && (!want || m[k].base >= want->base)) want = &m[k];
    if (!want != !im || (im && (im->base != want->base || im->size != want->size || im->loaded != want->loaded
                                || im->unloaded != want->unloaded))) {
      if (bad++ < 5) fprintf(stderr, "0x%llx at %lld: %s\n", (unsigned long long)addr, (long long)t,
                             im ? "not the model's image" : "no image");
    }
  }
  CHECK_EQ(bad, 0);
  /* a large image loaded below smaller ones it spans: found above them */
  process(&b, 4, 8, 701, 1, 0, 0, "span.exe", "span");
  ev = kev(0x0301, 4, 8, ts + 1, &b); hsi_procmap_feed(pm, &ev);
  inst = hsi_procmap_find(pm, 701, ts + 1);
  image(&b, 8, 0x10000, 0x1000, 701, "\\Device\\HarddiskVolume1\\a.dll");
  ev = kev(0x030A, 3, 8, ts + 2, &b); hsi_procmap_feed(pm, &ev);
  image(&b, 8, 0x50000, 0x1000, 701, "\\Device\\HarddiskVolume1\\b.dll");
  ev = kev(0x030A, 3, 8, ts + 3, &b); hsi_procmap_feed(pm, &ev);
  image(&b, 8, 0x20000, 0x100000, 701, "\\Device\\HarddiskVolume1\\big.dll");
  ev = kev(0x030A, 3, 8, ts + 4, &b); hsi_procmap_feed(pm, &ev);
  {
    const hsi_image *im = hsi_procmap_image_at(pm, inst, 0x58000, ts + 5);
    CHECK(im && im->base == 0x20000);
    im = hsi_procmap_image_at(pm, inst, 0x50800, ts + 5);
    CHECK(im && im->base == 0x50000);
  }
  hsi_procmap_free(pm);
#undef RND
}

/* KernelTraceControl ImageId (op 0) and DbgID_RSDS (op 36), §6.8. */
static void imageid(buf *b, int p, uint64_t base, uint64_t size, uint32_t pid, const char *orig) {
  b->n = 0;
  ptr(b, p, base); ptr(b, p, size); u32(b, pid); u32(b, 0x5A5A5A5A); wstr(b, orig);
}
static void dbgid(buf *b, int p, uint64_t base, uint32_t pid, uint32_t age, const char *pdb) {
  static const uint8_t g[16] = { 0x78, 0x56, 0x34, 0x12, 0x34, 0x12, 0x78, 0x56,
                                 1, 2, 3, 4, 5, 6, 7, 8 };
  int i;
  b->n = 0;
  ptr(b, p, base); u32(b, pid);
  for (i = 0; i < 16; i++) u8(b, g[i]);
  u32(b, age);
  ansi(b, pdb);
}

TEST(dbgid_attach) {
  hsi_procmap *pm = hsi_procmap_new();
  buf b;
  hs_event ev;
  uint32_t inst;
  const hsi_image *im;
  const uint64_t base = 0x7FF812340000ull;
  process(&b, 4, 8, 100, 1, 0, 0, "app.exe", "app");
  ev = kev(0x0303, 4, 8, 10, &b); hsi_procmap_feed(pm, &ev);
  inst = hsi_procmap_find(pm, 100, 10);
  image(&b, 8, base, 0x10000, 100, "\\Device\\HarddiskVolume1\\Windows\\System32\\ntdll.dll");
  ev = kev(0x1403, 2, 8, 11, &b); hsi_procmap_feed(pm, &ev);
  /* same timestamp, ProcessId 0 as the relogger often writes */
  imageid(&b, 8, base, 0x10000, 0, "ntdll.dll");
  ev = fev(&G_KTC, 0, 2, 8, 11, &b); CHECK_EQ(hsi_procmap_feed(pm, &ev), 1);
  dbgid(&b, 8, base, 0, 1, "ntdll.pdb");
  ev = fev(&G_KTC, 36, 2, 8, 11, &b); CHECK_EQ(hsi_procmap_feed(pm, &ev), 1);
  im = hsi_procmap_image_at(pm, inst, base + 10, 12);
  CHECK(im != NULL);
  if (im) {
    CHECK(im->flags & HSI_IMG_PDB);
    CHECK(im->flags & HSI_IMG_IMAGEID);
    CHECK_EQ(im->pdb_guid.d1, 0x12345678);
    CHECK_EQ(im->pdb_guid.d2, 0x1234);
    CHECK_EQ(im->pdb_guid.d3, 0x5678);
    CHECK_EQ(im->pdb_guid.d4[7], 8);
    CHECK_EQ(im->pdb_age, 1);
    CHECK_STR(hsi_procmap_str(pm, im->pdb_name), "ntdll.pdb");
    CHECK_STR(hsi_procmap_str(pm, im->orig_name), "ntdll.dll");
  }
  /* written before the image record with the same timestamp: attached when it comes */
  dbgid(&b, 8, 0x7FF700000000ull, 100, 3, "app.pdb");
  ev = fev(&G_KTC, 36, 2, 8, 20, &b); hsi_procmap_feed(pm, &ev);
  image(&b, 8, 0x7FF700000000ull, 0x2000, 100, "\\Device\\HarddiskVolume1\\app.exe");
  ev = kev(0x030A, 3, 8, 20, &b); hsi_procmap_feed(pm, &ev);
  im = hsi_procmap_image_at(pm, inst, 0x7FF700000010ull, 21);
  CHECK(im && (im->flags & HSI_IMG_PDB) && im->pdb_age == 3);
  /* an image found by pid and base at a later time */
  dbgid(&b, 8, base, 100, 9, "later.pdb");
  ev = fev(&G_KTC, 36, 2, 8, 30, &b); hsi_procmap_feed(pm, &ev);
  im = hsi_procmap_image_at(pm, inst, base + 10, 31);
  CHECK(im && im->pdb_age == 9);
  CHECK_EQ(hsi_procmap_stats(pm)->dbgid_records, 3);
  CHECK_EQ(hsi_procmap_stats(pm)->dbgid_attached, 3);
  CHECK_EQ(hsi_procmap_stats(pm)->imageid_attached, 1);
  hsi_procmap_free(pm);
}

/* A plug-in rebuilt and reloaded at its base: same name and size, no
   timestamp or checksum to tell them apart, another PDB identity
   (DbgID_RSDS).  The reload is another image, and starts an era; the
   timestamp one build's record has is not given to the other.  An image
   whose DbgID was lost is the one PDB identity of its name, base and
   size that the others have: no era. */
TEST(pdb_identity_eras) {
  hsi_procmap *pm = hsi_procmap_new();
  buf b;
  hs_event ev;
  uint32_t a, c, d;
  const hsi_image *i1, *i2;
  const uint64_t P = 0x180000000ull, Q = 0x190000000ull, R = 0x1A0000000ull;
  int pid;
  for (pid = 100; pid <= 300; pid += 100) {
    process(&b, 4, 8, (uint32_t)pid, 1, 0, 0, "app.exe", "app");
    ev = kev(0x0303, 4, 8, 1, &b); hsi_procmap_feed(pm, &ev);
  }
  a = hsi_procmap_find(pm, 100, 5); c = hsi_procmap_find(pm, 200, 5); d = hsi_procmap_find(pm, 300, 5);
  load_tds(pm, 0x030A, P, 0x20000, 100, "\\app\\plugin.dll", 10, 0);
  dbgid(&b, 8, P, 100, 1, "app.pdb");
  ev = fev(&G_KTC, 36, 2, 8, 10, &b); hsi_procmap_feed(pm, &ev);
  load_tds(pm, 0x1402, P, 0x20000, 100, "\\app\\plugin.dll", 20, 0);
  load_tds(pm, 0x030A, P, 0x20000, 100, "\\app\\plugin.dll", 30, 0);
  dbgid(&b, 8, P, 100, 1, "other.pdb");
  b.b[12] ^= 0xFF;                                     /* another GUID, the same age */
  ev = fev(&G_KTC, 36, 2, 8, 30, &b); hsi_procmap_feed(pm, &ev);
  /* one build has a timestamp, the rebuild none: still two */
  load_tds(pm, 0x030A, Q, 0x20000, 200, "\\app\\plugin.dll", 10, 0x5A5A5A5A);
  dbgid(&b, 8, Q, 200, 1, "app.pdb");
  ev = fev(&G_KTC, 36, 2, 8, 10, &b); hsi_procmap_feed(pm, &ev);
  load_tds(pm, 0x1402, Q, 0x20000, 200, "\\app\\plugin.dll", 20, 0);
  load_tds(pm, 0x030A, Q, 0x20000, 200, "\\app\\plugin.dll", 30, 0);
  dbgid(&b, 8, Q, 200, 2, "app.pdb");                  /* the same GUID at another age */
  ev = fev(&G_KTC, 36, 2, 8, 30, &b); hsi_procmap_feed(pm, &ev);
  /* a load whose DbgID was lost, reloaded with it: one image */
  load_tds(pm, 0x030A, R, 0x20000, 300, "\\app\\plugin.dll", 10, 0);
  load_tds(pm, 0x1402, R, 0x20000, 300, "\\app\\plugin.dll", 20, 0);
  load_tds(pm, 0x030A, R, 0x20000, 300, "\\app\\plugin.dll", 30, 0);
  dbgid(&b, 8, R, 300, 1, "app.pdb");
  ev = fev(&G_KTC, 36, 2, 8, 30, &b); hsi_procmap_feed(pm, &ev);
  CHECK_EQ(hsi_procmap_settle(pm), 0);
  i1 = hsi_procmap_image_at(pm, a, P + 0x10, 15);
  i2 = hsi_procmap_image_at(pm, a, P + 0x10, 35);
  CHECK(i1 && i2 && i1 != i2 && hsi_image_sig(i1) != hsi_image_sig(i2));
  CHECK_EQ(hsi_procmap_era(pm, a, 29), 0u);
  CHECK(hsi_procmap_era(pm, a, 30) != 0);
  i1 = hsi_procmap_image_at(pm, c, Q + 0x10, 15);
  i2 = hsi_procmap_image_at(pm, c, Q + 0x10, 35);
  CHECK(i1 && i2 && hsi_image_sig(i1) != hsi_image_sig(i2));
  CHECK_EQ(hsi_procmap_era(pm, c, 29), 0u);
  CHECK(hsi_procmap_era(pm, c, 30) != 0);
  i1 = hsi_procmap_image_at(pm, d, R + 0x10, 15);
  i2 = hsi_procmap_image_at(pm, d, R + 0x10, 35);
  CHECK(i1 && i2 && hsi_image_sig(i1) == hsi_image_sig(i2));
  CHECK_EQ(hsi_procmap_era(pm, d, 35), 0u);
  hsi_procmap_free(pm);
}

/* Two processes load an image at one base at one tick, then the identity
   records come, each naming its process: each goes to its own process's
   image, not to the image fed last (the other process's). */
TEST(ktc_names_the_process) {
  hsi_procmap *pm = hsi_procmap_new();
  buf b;
  hs_event ev;
  uint32_t a, c;
  const hsi_image *ia, *ic;
  const uint64_t B = 0x180000000ull;
  process(&b, 4, 8, 100, 1, 0, 0, "a.exe", "a");
  ev = kev(0x0303, 4, 8, 10, &b); hsi_procmap_feed(pm, &ev);
  process(&b, 4, 8, 200, 1, 0, 0, "b.exe", "b");
  ev = kev(0x0303, 4, 8, 10, &b); hsi_procmap_feed(pm, &ev);
  a = hsi_procmap_find(pm, 100, 10); c = hsi_procmap_find(pm, 200, 10);
  image(&b, 8, B, 0x20000, 100, "\\a\\plugin.dll");
  ev = kev(0x1403, 2, 8, 20, &b); hsi_procmap_feed(pm, &ev);
  image(&b, 8, B, 0x20000, 200, "\\b\\plugin.dll");
  ev = kev(0x1403, 2, 8, 20, &b); hsi_procmap_feed(pm, &ev);
  imageid(&b, 8, B, 0x20000, 100, "a.dll");
  ev = fev(&G_KTC, 0, 2, 8, 20, &b); hsi_procmap_feed(pm, &ev);
  dbgid(&b, 8, B, 100, 1, "a.pdb");
  ev = fev(&G_KTC, 36, 2, 8, 20, &b); hsi_procmap_feed(pm, &ev);
  ia = hsi_procmap_image_at(pm, a, B + 0x10, 21);
  ic = hsi_procmap_image_at(pm, c, B + 0x10, 21);
  CHECK(ia && (ia->flags & HSI_IMG_PDB) && ia->pdb_age == 1 && (ia->flags & HSI_IMG_IMAGEID));
  CHECK(ic && !(ic->flags & (HSI_IMG_PDB | HSI_IMG_IMAGEID)));
  if (ia) CHECK_STR(hsi_procmap_str(pm, ia->pdb_name), "a.pdb");
  dbgid(&b, 8, B, 200, 2, "b.pdb");
  ev = fev(&G_KTC, 36, 2, 8, 20, &b); hsi_procmap_feed(pm, &ev);
  CHECK(ia && ia->pdb_age == 1);
  CHECK(ic && (ic->flags & HSI_IMG_PDB) && ic->pdb_age == 2);
  CHECK_EQ(hsi_procmap_stats(pm)->dbgid_attached, 2);
  hsi_procmap_free(pm);
}

/* The identity records of many images, all before the images, at one tick
   (a relogger writing a rundown's records in two runs): each attaches to
   its own image when that comes; a record of an earlier tick whose image
   never came attaches to nothing. */
TEST(ktc_batch_before_images) {
  hsi_procmap *pm = hsi_procmap_new();
  buf b;
  hs_event ev;
  uint32_t inst;
  int i, ok = 0;
  enum { N = 40 };
  process(&b, 4, 8, 100, 1, 0, 0, "app.exe", "app");
  ev = kev(0x0303, 4, 8, 10, &b); hsi_procmap_feed(pm, &ev);
  inst = hsi_procmap_find(pm, 100, 10);
  dbgid(&b, 8, 0x7FF000000000ull, 100, 77, "lost.pdb");      /* its image never comes */
  ev = fev(&G_KTC, 36, 2, 8, 15, &b); hsi_procmap_feed(pm, &ev);
  for (i = 0; i < N; i++) {
    char name[32];
    snprintf(name, sizeof name, "m%d.dll", i);
    imageid(&b, 8, 0x7FF800000000ull + (uint64_t)i * 0x100000, 0x10000, 0, name);
    ev = fev(&G_KTC, 0, 2, 8, 20, &b); hsi_procmap_feed(pm, &ev);
    snprintf(name, sizeof name, "m%d.pdb", i);
    dbgid(&b, 8, 0x7FF800000000ull + (uint64_t)i * 0x100000, 0, (uint32_t)i + 1, name);
    ev = fev(&G_KTC, 36, 2, 8, 20, &b); hsi_procmap_feed(pm, &ev);
  }
  for (i = N - 1; i >= 0; i--) {             /* the images, in another order */
    image(&b, 8, 0x7FF800000000ull + (uint64_t)i * 0x100000, 0x10000, 100, "\\Device\\HarddiskVolume1\\x.dll");
    ev = kev(0x1403, 2, 8, 20, &b); hsi_procmap_feed(pm, &ev);
  }
  image(&b, 8, 0x7FF000000000ull, 0x10000, 100, "\\Device\\HarddiskVolume1\\late.dll");
  ev = kev(0x1403, 2, 8, 21, &b); hsi_procmap_feed(pm, &ev);
  for (i = 0; i < N; i++) {
    const hsi_image *im = hsi_procmap_image_at(pm, inst, 0x7FF800000010ull + (uint64_t)i * 0x100000, 22);
    char pdb[32], orig[32];
    snprintf(pdb, sizeof pdb, "m%d.pdb", i);
    snprintf(orig, sizeof orig, "m%d.dll", i);
    ok += im && im->pdb_age == (uint32_t)i + 1 && (im->flags & HSI_IMG_IMAGEID)
          && strcmp(hsi_procmap_str(pm, im->pdb_name), pdb) == 0
          && strcmp(hsi_procmap_str(pm, im->orig_name), orig) == 0;
  }
  CHECK_EQ(ok, N);
  CHECK_EQ(hsi_procmap_stats(pm)->dbgid_records, N + 1);
  CHECK_EQ(hsi_procmap_stats(pm)->dbgid_attached, N);
  CHECK_EQ(hsi_procmap_stats(pm)->imageid_attached, N);
  {
    const hsi_image *im = hsi_procmap_image_at(pm, inst, 0x7FF000000010ull, 22);
    CHECK(im && !(im->flags & HSI_IMG_PDB));
  }
  hsi_procmap_free(pm);
}

/* Classic (MOF) records may carry a payload of the other width (§7.2). */
TEST(mof_width_fallback) {
  hsi_procmap *pm = hsi_procmap_new();
  buf b;
  hs_event ev;
  const hsi_image *im;
  image(&b, 8, 0x7FF812340000ull, 0x10000, 100, "C:\\x\\y.dll");
  ev = fev(&G_IMAGE, 10, 2, 4, 10, &b);      /* FULL_HEADER32, 64-bit payload */
  CHECK_EQ(hsi_procmap_feed(pm, &ev), 1);
  CHECK_EQ(hsi_procmap_stats(pm)->width_fallback, 1);
  im = hsi_procmap_image_at(pm, hsi_procmap_find(pm, 100, 10), 0x7FF812340010ull, 11);
  CHECK(im && strcmp(hsi_procmap_str(pm, im->module), "y.dll") == 0);
  hsi_procmap_free(pm);
}

/* The decoders' width rules, on their own: a kernel record's width is its
   header's (no other reading is tried, §7.2 is for classic headers); an
   ImageId whose own-width reading stops short of the payload's end (a
   64-bit payload under FULL_HEADER32: the name read from ProcessId ends
   at its zero high half) is read at the other width; v0 has no ProcessId. */
TEST(decoder_widths) {
  buf b;
  hs_event ev;
  hsi_image_info im;
  hsi_ktc_info k;
  const uint64_t base = 0x7FF812340000ull;
  image(&b, 8, base, 0x10000, 100, "C:\\x\\y.dll");
  ev = kev(0x140A, 2, 4, 10, &b);                     /* SYSTEM32, 64-bit payload */
  CHECK(hsi_decode_image(&ev, 2, &im) != 1);
  CHECK(im.base != base);
  imageid(&b, 8, base, 0x10000, 100, "y.dll");
  ev = fev(&G_KTC, 0, 2, 4, 10, &b);
  CHECK_EQ(hsi_decode_ktc(&ev, 0, &k), 1);
  CHECK_EQ(k.base, base); CHECK_EQ(k.size, 0x10000); CHECK_EQ(k.pid, 100);
  b.n = 0; u32(&b, 0x01160000); u32(&b, 0x19E000); wstr(&b, "a.exe");
  ev = kev(0x140A, 0, 4, 10, &b);
  CHECK_EQ(hsi_decode_image(&ev, 0, &im), 0);
  CHECK_EQ(im.base, 0x01160000); CHECK_EQ(im.size, 0x19E000); CHECK_EQ(im.pid, HS_NOID);
}

TEST(strings) {
  hsi_procmap *pm = hsi_procmap_new();
  uint32_t a = hsi_procmap_intern(pm, "abc", 3), b2 = hsi_procmap_intern(pm, "abcd", 3);
  char big[100000];
  uint32_t i, ids[3000];
  CHECK(a != 0);
  CHECK_EQ(a, b2);
  CHECK_EQ(hsi_procmap_intern(pm, "", 0), 0);
  CHECK_STR(hsi_procmap_str(pm, 0), "");
  memset(big, 'x', sizeof big);
  CHECK(hsi_procmap_intern(pm, big, sizeof big) != 0);
  for (i = 0; i < 3000; i++) {
    char s[16];
    snprintf(s, sizeof s, "s%u", (unsigned)i);
    ids[i] = hsi_procmap_intern(pm, s, strlen(s));
  }
  for (i = 0; i < 3000; i++) {
    char s[16];
    snprintf(s, sizeof s, "s%u", (unsigned)i);
    CHECK_EQ(hsi_procmap_intern(pm, s, strlen(s)), ids[i]);
    if (strcmp(hsi_procmap_str(pm, ids[i]), s) != 0) { CHECK(0); break; }
  }
  CHECK_STR(hsi_procmap_str(pm, a), "abc");      /* earlier strings did not move */
  hsi_procmap_free(pm);
}

/* ------------------------------------------------------- real traces */


static int ends_with_ci(const char *s, const char *suf) {
  size_t n = strlen(s), k = strlen(suf), i;
  if (n < k) return 0;
  for (i = 0; i < k; i++) {
    char a = s[n - k + i], b = suf[i];
    if (a >= 'A' && a <= 'Z') a = (char)(a - 'A' + 'a');
    if (a != b) return 0;
  }
  return 1;
}

static const char *P_PROCESS = "3d6fa8d0-fe05-11d0-9dda-00c04fd7ba7c";
static const char *P_THREAD = "3d6fa8d1-fe05-11d0-9dda-00c04fd7ba7c";
static const char *P_IMAGE = "2cb15d1d-5fc1-11d2-abe1-00a0c911f518";
static const char *P_KTC = "b3e675d7-2554-4f18-830b-2762732560de";

static int corpus_missing;

static void real_trace(const char *name) {
  char path[1024], jpath[1024], err[HS_ERRLEN];
  const char *paths[1];
  char *json;
  hs_reader *r = NULL;
  hs_event ev;
  hsi_procmap *pm;
  const hsi_procstats *s;
  uint64_t want_proc = 0, want_thr = 0, want_img = 0, named = 0, images = 0;
  uint32_t i;
  int rc, op;
  {
    char rel[512];
    snprintf(rel, sizeof rel, "%s.etl", name);
    corpus_path(path, sizeof path, rel);
    snprintf(rel, sizeof rel, "expected/%s.json", name);
    corpus_path(jpath, sizeof jpath, rel);
  }
  json = slurp(jpath);
  if (!json) { corpus_missing = 1; return; }
  paths[0] = path;
  rc = hs_reader_open(&r, paths, 1, NULL, err, sizeof err);
  CHECK_EQ(rc, 0);
  if (rc != 0) { fprintf(stderr, "%s: %s\n", name, err); free(json); return; }
  pm = hsi_procmap_new();
  while ((rc = hs_reader_next(r, &ev)) == 1)
    if (hsi_procmap_feed(pm, &ev) < 0) { CHECK(0); break; }
  CHECK_EQ(rc, 0);
  for (op = 1; op <= 4; op++) {
    want_proc += by_key(json, P_PROCESS, op);
    want_thr += by_key(json, P_THREAD, op);
  }
  want_proc += by_key(json, P_PROCESS, 39);
  want_thr += by_key(json, P_THREAD, 72);
  for (op = 2; op <= 4; op++) want_img += by_key(json, P_IMAGE, op);
  want_img += by_key(json, P_IMAGE, 10);
  s = hsi_procmap_stats(pm);
  CHECK(want_proc + want_img > 0);
  CHECK_EQ(s->process_records, want_proc);
  CHECK_EQ(s->process_decoded, want_proc);
  CHECK_EQ(s->thread_records, want_thr);
  CHECK_EQ(s->thread_decoded, want_thr);
  CHECK_EQ(s->image_records, want_img);
  CHECK_EQ(s->image_decoded, want_img);
  CHECK_EQ(s->imageid_records, by_key(json, P_KTC, 0));
  CHECK_EQ(s->dbgid_records, by_key(json, P_KTC, 36));
  /* every ImageId/DbgID describes an image the trace named (§6.8) */
  CHECK_EQ(s->imageid_attached, s->imageid_records);
  CHECK_EQ(s->dbgid_attached, s->dbgid_records);
  /* every instance a Process record named has a name */
  for (i = 1; i <= hsi_procmap_ninstances(pm); i++) {
    if (hsi_procmap_flags(pm, i) & HSI_PROC_IMPLIED) continue;
    named += *hsi_procmap_name(pm, i) != 0;
    if (!*hsi_procmap_name(pm, i)) fprintf(stderr, "%s: instance %u (pid %u) has no name\n",
                                           name, (unsigned)i, (unsigned)hsi_procmap_pid(pm, i));
  }
  if (want_proc) CHECK(named > 0);
  for (i = 1; i <= hsi_procmap_ninstances(pm); i++)
    if (!(hsi_procmap_flags(pm, i) & HSI_PROC_IMPLIED)) CHECK(*hsi_procmap_name(pm, i) != 0);
  /* image file names: paths (NT "\Device\...", "\SystemRoot\..." or
     "C:\...") of .dll/.exe/.sys files, nearly all; sizes are PE sizes */
  for (i = 0; i < hsi_procmap_nimages(pm); i++) {
    const hsi_image *im = hsi_procmap_image(pm, i);
    const char *m = hsi_procmap_str(pm, im->module), *ipath = hsi_procmap_str(pm, im->path);
    images += ends_with_ci(m, ".dll") || ends_with_ci(m, ".exe") || ends_with_ci(m, ".sys");
    if (!(ipath[0] == '\\' || (ipath[0] && ipath[1] == ':')) || im->size == 0 || im->size > 0xFFFFFFFFu) {
      fprintf(stderr, "%s: image %u at 0x%llx size 0x%llx path '%s'\n", name, (unsigned)i,
              (unsigned long long)im->base, (unsigned long long)im->size, ipath);
      CHECK(0);
    }
  }
  CHECK(images * 100 >= (uint64_t)hsi_procmap_nimages(pm) * 95);
  printf("%s: %llu process, %llu thread, %llu image records; %u instances, %u images (%llu .dll/.exe/.sys); "
         "%llu ImageId, %llu DbgID attached\n", name,
         (unsigned long long)s->process_decoded, (unsigned long long)s->thread_decoded,
         (unsigned long long)s->image_decoded, (unsigned)hsi_procmap_ninstances(pm),
         (unsigned)hsi_procmap_nimages(pm), (unsigned long long)images,
         (unsigned long long)s->imageid_attached, (unsigned long long)s->dbgid_attached);
  hsi_procmap_free(pm);
  hs_reader_close(r);
  free(json);
}

TEST(real_traces) {
  real_trace("microsoft_perfview__net.4.5.x86_PerfViewData");
  real_trace("microsoft_perfview__net.4.5.2.x64");
  real_trace("microsoft_perfview__net.4.5.2.x86");
  real_trace("Siemens-Healthineers_ETWAnalyzer__TraceLoggingTester");
  /* classic MOF records written by a test program: 64-bit payloads under
     32-bit headers (§7.2), zero TOKEN_USER pointers, v0/v1 images */
  real_trace("google_syzygy__sawbuck_log_lib_test_data__process_data_32_v1.13566c7");
  real_trace("google_syzygy__sawbuck_log_lib_test_data__process_data_64_v3.442a7c7");
  real_trace("google_syzygy__sawbuck_log_lib_test_data__process_data_64_v2.41a9001");
  real_trace("google_syzygy__sawbuck_log_lib_test_data__image_data_32_v0.73b9394");
  real_trace("google_syzygy__sawbuck_log_lib_test_data__image_data_64_v0.8075cf3");
  real_trace("google_syzygy__sawbuck_log_lib_test_data__image_data_64_v1.1667932");
  real_trace("google_syzygy__sawbuck_viewer_test_data__test_data_64_v1");
  real_trace("google_syzygy__sawbuck_viewer_test_data__test_data_64_v2");   /* u32 size, aligned DefaultBase */
  real_trace("google_syzygy__sawbuck_log_lib_test_data__image_data_64_v2.e09ad69");
  if (corpus_missing) CHECK(!corpus_absent("test_procmap"));
}

int main(void) {
  RUN(process_versions);
  RUN(process_latin1_names);
  RUN(process_zero_token_user);
  RUN(image_v0_v1);
  RUN(process_truncated);
  RUN(pid_reuse);
  RUN(instance_remembered);
  RUN(threads);
  RUN(instance_edges);
  RUN(thread_edges);
  RUN(images);
  RUN(eras); RUN(rundown_of_many_images); RUN(images_against_model); RUN(decoder_widths);
  RUN(dbgid_attach);
  RUN(ktc_batch_before_images); RUN(pdb_identity_eras); RUN(ktc_names_the_process);
  RUN(mof_width_fallback);
  RUN(strings);
  RUN(real_traces);
  return UNIT_DONE();
}
