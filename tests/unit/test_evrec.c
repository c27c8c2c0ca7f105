/*
** test_evrec.c -- the EVENT_RECORD adapter and the live store: the mirror
** has EVENT_RECORD's layout; every event of the example traces and of the
** real-trace corpus, turned into the EVENT_RECORD a real-time consumer
** gets and back, is the event the file reader gave (provider, opcode,
** version, ids, time, flags, payload and extended items); loss notices
** are counted; a reader over the store reads what arrived.
*/
#define _DEFAULT_SOURCE 1
#include <dirent.h>
#include <stddef.h>
#include <stdlib.h>
#include "unit.h"
#include "corpus.h"
#include "heapscript.h"
#include "evrec.h"
#include "live.h"
#include "source.h"

TEST(layout_is_event_record) {
  /* EVENT_RECORD on x64 (evntcons.h): the Windows callback's record is
     read through this type as it is. */
  CHECK_EQ(sizeof(hsi_evrec), 112);
  CHECK_EQ(offsetof(hsi_evrec, flags), 4);
  CHECK_EQ(offsetof(hsi_evrec, thread_id), 8);
  CHECK_EQ(offsetof(hsi_evrec, process_id), 12);
  CHECK_EQ(offsetof(hsi_evrec, timestamp), 16);
  CHECK_EQ(offsetof(hsi_evrec, provider_id), 24);
  CHECK_EQ(offsetof(hsi_evrec, id), 40);
  CHECK_EQ(offsetof(hsi_evrec, opcode), 45);
  CHECK_EQ(offsetof(hsi_evrec, keyword), 48);
  CHECK_EQ(offsetof(hsi_evrec, processor_time), 56);
  CHECK_EQ(offsetof(hsi_evrec, activity_id), 64);
  CHECK_EQ(offsetof(hsi_evrec, processor_number), 80);
  CHECK_EQ(offsetof(hsi_evrec, logger_id), 82);
  CHECK_EQ(offsetof(hsi_evrec, extended_data_count), 84);
  CHECK_EQ(offsetof(hsi_evrec, user_data_length), 86);
  CHECK_EQ(offsetof(hsi_evrec, extended_data), 88);
  CHECK_EQ(offsetof(hsi_evrec, user_data), 96);
  CHECK_EQ(offsetof(hsi_evrec, user_context), 104);
  CHECK_EQ(sizeof(hsi_evrec_ext), 16);
  CHECK_EQ(offsetof(hsi_evrec_ext, data_ptr), 8);
}

static uint8_t buf[HSI_EVREC_MAX];
static uint64_t nevents, nskipped, nclassic;

/* One file: every event there and back. */
static void roundtrip(const char *path) {
  hs_reader *r;
  hs_event ev, back;
  hsi_evrec e;
  hsi_evrec_ext items[64];
  char err[HS_ERRLEN];
  int n, bad = 0;
  if (hs_reader_open(&r, &path, 1, NULL, err, sizeof err) != 0) {   /* the corpus's unreadable file */
    printf("not read (the corpus test checks its message): %s\n", err);
    return;
  }
  while ((n = hs_reader_next(r, &ev)) == 1) {
    uint32_t len, pa = 0, pb = 0;
    hs_ext_item ia, ib;
    int ok = 1, ra, rb;
    if (ev.header_type == HS_HT_MESSAGE || ev.header_type == HS_HT_ERROR) { nskipped++; continue; }
    nevents++;
    if (hsi_evrec_from_event(&ev, &e, items, 64) != 0) { bad++; continue; }
    len = hsi_evrec_to_record(&e, buf);
    if (!len || !hsi_evrec_decode(buf, len, &back)) { bad++; continue; }
    /* A classic (MOF) record of a kernel class looks, to a real-time
       consumer, like the kernel logger's own: it comes back as one. */
    if (!(ev.flags & HS_EVF_KERNEL) && (back.flags & HS_EVF_KERNEL) &&
        (ev.header_type == HS_HT_FULL32 || ev.header_type == HS_HT_FULL64 ||
         ev.header_type == HS_HT_INSTANCE32 || ev.header_type == HS_HT_INSTANCE64) &&
        (back.hook & 0xFF) == ev.opcode) {
      ev.flags |= HS_EVF_KERNEL;
      ev.hook = back.hook;
      ev.level = back.level;
      nclassic++;
    }
    ok = hs_guid_eq(&ev.provider, &back.provider) && ev.opcode == back.opcode &&
         (ev.version & 0xFF) == (back.version & 0xFF) && ev.pid == back.pid && ev.tid == back.tid &&
         ev.timestamp == back.timestamp && ev.flags == back.flags && ev.pointer_size == back.pointer_size &&
         ev.payload_len == back.payload_len && !memcmp(ev.payload, back.payload, ev.payload_len) &&
         ev.id == back.id;
    if (ev.flags & HS_EVF_KERNEL)   /* Image Load under the Process group comes back under Image */
      ok = ok && (ev.hook == back.hook || (ev.hook == 0x030A && back.hook == 0x140A));
    else
      ok = ok && ev.level == back.level && ev.task == back.task && ev.keyword == back.keyword &&
           ev.channel == back.channel && (ev.header_flags & ~0x60) == (back.header_flags & ~0x60);
    while ((ra = hs_event_ext_next(&ev, &pa, &ia)) == 1) {
      rb = hs_event_ext_next(&back, &pb, &ib);
      ok = ok && rb == 1 && ia.type == ib.type && ia.size == ib.size && !memcmp(ia.data, ib.data, ia.size);
    }
    ok = ok && hs_event_ext_next(&back, &pb, &ib) == 0;
    if (!ok && !bad++)
      printf("%s: first difference: %s offset %u: ht %d->%d hook %04x->%04x flags %x->%x ver %u->%u "
             "pid %u->%u len %u->%u hflags %x->%x\n", path, hs_header_type_name(ev.header_type),
             ev.offset, ev.header_type, back.header_type, ev.hook, back.hook, ev.flags, back.flags,
             ev.version, back.version, ev.pid, back.pid, ev.payload_len, back.payload_len,
             ev.header_flags, back.header_flags);
  }
  CHECK_EQ(n, 0);
  if (bad) printf("%s: %d events differ\n", path, bad);
  CHECK_EQ(bad, 0);
  hs_reader_close(r);
}

TEST(every_event_comes_back) {
  DIR *d;
  struct dirent *de;
  int files = 0;
  roundtrip("examples/memorytestapp.etl");
  roundtrip("examples/notmyfault.etl");
  if (!(d = opendir(corpus_dir()))) { CHECK(!corpus_absent("test_evrec")); return; }
  while ((de = readdir(d)) != NULL) {
    char path[1024];
    size_t l = strlen(de->d_name);
    if (l < 5 || strcmp(de->d_name + l - 4, ".etl") || strstr(de->d_name, "damaged")) continue;
    snprintf(path, sizeof path, "%s/%s", corpus_dir(), de->d_name);
    roundtrip(path);
    files++;
  }
  closedir(d);
  printf("round trip: %llu events of %d corpus files and the examples (%llu WPP/error records left out, "
         "%llu classic records of kernel classes back as kernel records)\n",
         (unsigned long long)nevents, files, (unsigned long long)nskipped, (unsigned long long)nclassic);
  CHECK(files > 10);
}

/* A kernel group's GUID as an EVENT_RECORD holds it (the host is
   little-endian: the Windows byte order). */
static void kernel_provider(hsi_evrec *e, int group) {
  hs_guid g;
  hs_kernel_group_guid(group, &g);
  memcpy(e->provider_id, &g.d1, 4);
  memcpy(e->provider_id + 4, &g.d2, 2); memcpy(e->provider_id + 6, &g.d3, 2); memcpy(e->provider_id + 8, g.d4, 8);
}

TEST(store_counts_and_reads) {
  hs_logfile lf;
  hsi_live *s;
  hsi_live_counts c;
  hsi_evrec e;
  hs_reader *r, *r2;
  hs_event ev;
  uint64_t n;
  int i, k;
  uint32_t payload = 0x12345678;
  memset(&lf, 0, sizeof lf);
  lf.perf_freq = 1000; lf.clock_type = 1; lf.pointer_size = 8;
  CHECK((s = hsi_live_new(&lf, "test")) != NULL);
  memset(&e, 0, sizeof e);
  e.flags = HSI_EHF_CLASSIC | HSI_EHF_64_BIT_HEADER;
  kernel_provider(&e, 3);                             /* Process */
  e.user_data = &payload; e.user_data_length = 4;
  e.process_id = 7; e.thread_id = 8;
  for (i = 0; i < 10; i++) { e.timestamp = 100 * i; e.opcode = 1; hsi_live_event(s, &e); }
  kernel_provider(&e, 0);                             /* EventTrace: RT loss notices */
  e.opcode = 32; hsi_live_event(s, &e);
  e.opcode = 33; hsi_live_event(s, &e);
  hsi_live_counts_get(s, &c);
  CHECK_EQ(c.events, 12);
  CHECK_EQ(c.lost_events, 1);
  CHECK_EQ(c.lost_buffers, 1);
  CHECK_EQ(hsi_live_wait(s, 450, 0, &n), 1);          /* the first record at or after 450 */
  CHECK_EQ(n, 5);
  CHECK_EQ(hsi_live_wait(s, 100000, 10, &n), 2);      /* not there yet: times out */
  hsi_live_finish(s, "end");
  CHECK_EQ(hsi_live_wait(s, 100000, -1, &n), 0);
  CHECK_EQ(n, 12);
  CHECK(hsi_live_reader(s, 5, &r) == 0);
  for (k = 0; hs_reader_next(r, &ev) == 1; k++) {
    CHECK(ev.flags & HS_EVF_KERNEL);
    CHECK_EQ(ev.hook, 0x0301);
    CHECK_EQ(ev.pid, 7);
    CHECK_EQ(ev.payload_len, 4);
  }
  CHECK_EQ(k, 5);
  CHECK(hsi_reader_reopen(r, &r2, NULL, NULL, 0) == 0);
  for (k = 0; hs_reader_next(r2, &ev) == 1; k++) ;
  CHECK_EQ(k, 5);
  CHECK(hs_reader_rewind(r) == 0);
  CHECK(hs_reader_next(r, &ev) == 1 && ev.timestamp == 0);
  hs_reader_close(r2);
  hsi_live_unref(s);              /* the readers keep it alive */
  CHECK(hs_reader_next(r, &ev) == 1 && ev.timestamp == 100);
  hs_reader_close(r);
}

/* A kernel class's record with ids as the file holds it (ETL-FORMAT §3.3,
   SYSTEM_HEADER64): Version, HeaderType, Flags 0xC0, Size, Type, Group,
   ThreadId, ProcessId, SystemTime, then KernelTime and UserTime, the two
   u32 of the consumer's ProcessorTime. */
TEST(kernel_record_bytes) {
  static const uint8_t want[0x24] = {
    0x02, 0x00, 0x02, 0xC0, 0x24, 0x00, 0x01, 0x03,   /* v2, SYSTEM64, size 0x24, Process Start */
    0x08, 0x00, 0x00, 0x00, 0x07, 0x00, 0x00, 0x00,   /* tid 8, pid 7 */
    0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11,   /* SystemTime */
    0x11, 0x00, 0x00, 0x00, 0x22, 0x00, 0x00, 0x00,   /* KernelTime 0x11, UserTime 0x22 */
    0x78, 0x56, 0x34, 0x12 };
  hsi_evrec e;
  uint32_t payload = 0x12345678;
  memset(&e, 0, sizeof e);
  e.flags = HSI_EHF_CLASSIC | HSI_EHF_64_BIT_HEADER;
  kernel_provider(&e, 3);                             /* Process */
  e.user_data = &payload; e.user_data_length = 4;
  e.process_id = 7; e.thread_id = 8; e.opcode = 1; e.version = 2;
  e.timestamp = 0x1122334455667788LL;
  e.processor_time = 0x0000002200000011ULL;
  memset(buf, 0xEE, 0x40);
  CHECK_EQ(hsi_evrec_to_record(&e, buf), 0x24);
  CHECK(memcmp(buf, want, sizeof want) == 0);
}

int main(void) {
  RUN(layout_is_event_record);
  RUN(kernel_record_bytes);
  RUN(every_event_comes_back);
  RUN(store_counts_and_reads);
  return UNIT_DONE();
}
