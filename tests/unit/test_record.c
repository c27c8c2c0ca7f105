/* test_record.c -- record headers of every kind, built byte by byte from
   ETL-FORMAT §3/§4, decoded by hsi_record_decode. */
#include "unit.h"
#include "heapscript.h"
#include "bytes.h"
#include "record.h"
#include "evsame.h"

static uint8_t buf[1024];

static void kernel_hdr(uint8_t *p, int ht, uint16_t ver, uint16_t size, int group, int type) {
  wr16(p, ver); p[2] = (uint8_t)ht; p[3] = 0xC0; wr16(p + 4, size); p[6] = (uint8_t)type; p[7] = (uint8_t)group;
}

TEST(system64_with_ids) {
  hs_event ev; uint32_t next; const char *why = "";
  memset(buf, 0xFF, sizeof buf);
  kernel_hdr(buf, HS_HT_SYSTEM64, 2, 0x20 + 12, 0x10, 33);
  wr32(buf + 8, 77); wr32(buf + 12, 1234); wr64(buf + 16, 5000000);
  CHECK_EQ(hsi_record_decode(buf, 0, 200, 8, &ev, &next, &why), 1);
  CHECK_EQ(next, 48);                        /* 44 aligned to 8 */
  CHECK_EQ(ev.tid, 77); CHECK_EQ(ev.pid, 1234); CHECK_EQ(ev.timestamp, 5000000);
  CHECK_EQ(ev.hook, 0x1021); CHECK_EQ(ev.opcode, 33); CHECK_EQ(ev.version, 2);
  CHECK_EQ(ev.payload_len, 12); CHECK(ev.payload == buf + 0x20);
  CHECK_EQ(ev.pointer_size, 8);
  CHECK(ev.flags & HS_EVF_KERNEL); CHECK(ev.flags & HS_EVF_HAS_IDS);
  CHECK_STR(hs_provider_name(&ev.provider), "Heap");
  CHECK_STR(hs_event_name(&ev.provider, ev.opcode), "HeapAlloc");
}

TEST(compact_and_perfinfo) {
  hs_event ev; uint32_t next; const char *why = "";
  kernel_hdr(buf, HS_HT_COMPACT32, 2, 0x18 + 4, 0x02, 98);
  wr32(buf + 8, 5); wr32(buf + 12, 6); wr64(buf + 16, 99);
  CHECK_EQ(hsi_record_decode(buf, 0, 200, 8, &ev, &next, &why), 1);
  CHECK_EQ(ev.pointer_size, 4); CHECK_EQ(ev.pid, 6); CHECK_EQ(ev.timestamp, 99); CHECK_EQ(ev.payload_len, 4);
  CHECK(ev.payload == buf + 0x18);
  kernel_hdr(buf, HS_HT_PERFINFO64, 2, 0x10 + 16, 0x18, 32);
  wr64(buf + 8, 1234567);
  CHECK_EQ(hsi_record_decode(buf, 0, 200, 8, &ev, &next, &why), 1);
  CHECK_EQ(ev.pid, HS_NOID); CHECK_EQ(ev.tid, HS_NOID); CHECK(!(ev.flags & HS_EVF_HAS_IDS));
  CHECK_EQ(ev.timestamp, 1234567); CHECK_EQ(ev.payload_len, 16);
  CHECK_STR(hs_provider_name(&ev.provider), "StackWalk");
}

TEST(pebs_and_pmc_words_are_not_payload) {
  hs_event ev; uint32_t next; const char *why = "";
  /* version 0x8202: PEBS index + 2 PMC counters = 24 extra bytes */
  kernel_hdr(buf, HS_HT_PERFINFO64, 0x8202, 0x10 + 24 + 8, 0x0F, 46);
  CHECK_EQ(hsi_record_decode(buf, 0, 200, 8, &ev, &next, &why), 1);
  CHECK_EQ(ev.version, 2); CHECK_EQ(ev.payload_len, 8); CHECK(ev.payload == buf + 0x10 + 24);
  CHECK_EQ(rd16(ev.record), 0x8202);
  kernel_hdr(buf, HS_HT_PERFINFO64, 0x8202, 0x10 + 8, 0x0F, 46);    /* too short for its words */
  CHECK_EQ(hsi_record_decode(buf, 0, 200, 8, &ev, &next, &why), -2);
  CHECK_EQ(next, 24);
}

TEST(image_load_under_process_group) {
  hs_event ev; uint32_t next; const char *why = "";
  kernel_hdr(buf, HS_HT_SYSTEM32, 3, 0x20, 0x03, 10);
  CHECK_EQ(hsi_record_decode(buf, 0, 200, 4, &ev, &next, &why), 1);
  CHECK_STR(hs_provider_name(&ev.provider), "Image");
  CHECK_EQ(ev.hook, 0x030A);
}

static const uint8_t guid_bytes[16] = {0xd7,0x75,0xe6,0xb3,0x54,0x25,0x18,0x4f,0x83,0x0b,0x27,0x62,0x73,0x25,0x60,0xde};

TEST(full_and_instance) {
  hs_event ev; uint32_t next; const char *why = ""; char g[HS_GUID_STRLEN];
  memset(buf, 0, sizeof buf);
  wr16(buf, 0x30 + 10); buf[2] = HS_HT_FULL64; buf[3] = 0xC0; buf[4] = 36; buf[5] = 4; wr16(buf + 6, 2);
  wr32(buf + 8, 11); wr32(buf + 12, 22); wr64(buf + 16, 33); memcpy(buf + 0x18, guid_bytes, 16);
  CHECK_EQ(hsi_record_decode(buf, 0, 200, 8, &ev, &next, &why), 1);
  hs_guid_format(&ev.provider, g);
  CHECK_STR(g, "b3e675d7-2554-4f18-830b-2762732560de");
  CHECK_EQ(ev.opcode, 36); CHECK_EQ(ev.level, 4); CHECK_EQ(ev.version, 2); CHECK_EQ(ev.payload_len, 10);
  CHECK_EQ(ev.pid, 22); CHECK_EQ(ev.tid, 11); CHECK_EQ(next, 0x40);
  buf[2] = HS_HT_INSTANCE32; wr16(buf, 0x48 + 4);
  CHECK_EQ(hsi_record_decode(buf, 0, 200, 8, &ev, &next, &why), 1);
  CHECK_EQ(ev.payload_len, 4); CHECK_EQ(ev.pointer_size, 4); CHECK(ev.payload == buf + 0x48);
}

static size_t ext_item(uint8_t *p, uint16_t type, int link, const uint8_t *data, uint16_t n) {
  uint16_t sz = (uint16_t)((8 + n + 7) & ~7);
  memset(p, 0, sz);
  wr16(p, sz); wr16(p + 2, type); wr16(p + 4, (uint16_t)link); wr16(p + 6, n);
  memcpy(p + 8, data, n);
  return sz;
}

TEST(event_header_ext_items_and_stack) {
  hs_event ev; uint32_t next, pos = 0; const char *why = ""; hs_ext_item it;
  uint8_t d[8 + 3 * 8]; uint64_t frames[8], match = 1; size_t k = 0x50;
  memset(buf, 0, sizeof buf);
  buf[2] = HS_HT_EVENT32; buf[3] = 0xC0; wr16(buf + 4, 0x1);
  wr32(buf + 8, 7); wr32(buf + 12, 8); wr64(buf + 16, 9); memcpy(buf + 0x18, guid_bytes, 16);
  wr16(buf + 0x28, 154); buf[0x2A] = 3; buf[0x2C] = 5; buf[0x2D] = 36; wr16(buf + 0x2E, 12); wr64(buf + 0x30, 0x8000);
  k += ext_item(buf + k, HS_EXT_RELATED_ACTIVITYID, 1, guid_bytes, 16);
  wr64(d, 0); wr64(d + 8, 0xfffff80000001000ull); wr64(d + 16, 0x7ff600001234ull); wr64(d + 24, 0x401000);
  k += ext_item(buf + k, HS_EXT_STACK_TRACE64, 0, d, sizeof d);       /* last: linkage 0 */
  memcpy(buf + k, "payload!", 8); k += 8;
  wr16(buf, (uint16_t)k);
  CHECK_EQ(hsi_record_decode(buf, 0, 400, 8, &ev, &next, &why), 1);
  CHECK_EQ(ev.id, 154); CHECK_EQ(ev.version, 3); CHECK_EQ(ev.level, 5); CHECK_EQ(ev.opcode, 36);
  CHECK_EQ(ev.task, 12); CHECK_EQ(ev.keyword, 0x8000); CHECK_EQ(ev.pointer_size, 4);
  CHECK_EQ(ev.payload_len, 8); CHECK(memcmp(ev.payload, "payload!", 8) == 0);
  CHECK_EQ(ev.ext_len, 24 + 40);
  CHECK_EQ(hs_event_ext_next(&ev, &pos, &it), 1); CHECK_EQ(it.type, 1); CHECK_EQ(it.size, 16);
  CHECK_EQ(hs_event_ext_next(&ev, &pos, &it), 1); CHECK_EQ(it.type, 6);
  CHECK_EQ(hs_event_ext_next(&ev, &pos, &it), 0);
  /* frame width from the item type (64-bit frames on a 32-bit header) */
  CHECK_EQ(hs_event_ext_stack(&ev, frames, 8, &match), 3);
  CHECK_EQ(frames[0], 0xfffff80000001000ull); CHECK_EQ(frames[2], 0x401000); CHECK_EQ(match, 0);
  /* an item claiming more than the record holds: record damaged, size sound */
  wr16(buf + 0x50, 0x400);
  CHECK_EQ(hsi_record_decode(buf, 0, 400, 8, &ev, &next, &why), -2);
  CHECK_EQ(next, (k + 7) & ~7u);
}

/* A 32-bit stack item of one frame is 12 bytes (MatchId and one u32):
   shorter than two 64-bit words, still a stack; one of 8 bytes has its
   MatchId and no frames. */
TEST(stack_items_of_one_frame_and_none) {
  hs_event ev; uint32_t next; const char *why = "";
  uint8_t d[12]; uint64_t frames[4], match = 0; size_t k = 0x50;
  memset(buf, 0, sizeof buf);
  buf[2] = HS_HT_EVENT32; buf[3] = 0xC0; wr16(buf + 4, 0x1);
  wr64(d, 0x77); wr32(d + 8, 0x401000);
  k += ext_item(buf + k, HS_EXT_STACK_TRACE32, 0, d, sizeof d);
  wr16(buf, (uint16_t)k);
  CHECK_EQ(hsi_record_decode(buf, 0, 400, 4, &ev, &next, &why), 1);
  CHECK_EQ(hs_event_ext_stack(&ev, frames, 4, &match), 1);
  CHECK_EQ(frames[0], 0x401000); CHECK_EQ(match, 0x77);
  k = 0x50;
  k += ext_item(buf + k, HS_EXT_STACK_TRACE32, 0, d, 8);
  wr16(buf, (uint16_t)k);
  match = 0;
  CHECK_EQ(hsi_record_decode(buf, 0, 400, 4, &ev, &next, &why), 1);
  CHECK_EQ(hs_event_ext_stack(&ev, frames, 4, &match), 0);
  CHECK_EQ(match, 0x77);
}

TEST(message_optional_fields) {
  hs_event ev; uint32_t next; const char *why = "";
  memset(buf, 0, sizeof buf);
  /* sequence + GUID + timestamp + ids: 8 + 4 + 16 + 8 + 8 = 44, + 4 payload */
  wr16(buf, 48); buf[3] = 0x90; wr16(buf + 4, 17); wr16(buf + 6, 0x1 | 0x2 | 0x8 | 0x20 | 0x40);
  wr32(buf + 8, 1); memcpy(buf + 12, guid_bytes, 16); wr64(buf + 28, 4242); wr32(buf + 36, 3); wr32(buf + 40, 4);
  CHECK_EQ(hsi_record_decode(buf, 0, 200, 8, &ev, &next, &why), 1);
  CHECK_EQ(ev.header_type, HS_HT_MESSAGE); CHECK_EQ(ev.id, 17); CHECK_EQ(ev.timestamp, 4242);
  CHECK_EQ(ev.tid, 3); CHECK_EQ(ev.pid, 4); CHECK_EQ(ev.payload_len, 4); CHECK_EQ(ev.pointer_size, 4);
  CHECK_STR(hs_header_type_name(ev.header_type), "MESSAGE");
}

/* COMPACT64 has the 0x18-byte header of COMPACT32, only its pointers are
   wider; and the PMC count is the whole 3-bit field of the version's high
   byte (ETL-FORMAT §3.3): 5 counters, not the 1 its low two bits say. */
TEST(compact64_and_five_pmc_counters) {
  hs_event ev; uint32_t next; const char *why = "";
  memset(buf, 0, sizeof buf);
  kernel_hdr(buf, HS_HT_COMPACT64, 2, 0x18 + 8, 0x02, 98);
  wr32(buf + 8, 5); wr32(buf + 12, 6); wr64(buf + 16, 99);
  CHECK_EQ(hsi_record_decode(buf, 0, 200, 8, &ev, &next, &why), 1);
  CHECK_EQ(ev.pointer_size, 8); CHECK_EQ(ev.payload_len, 8); CHECK(ev.payload == buf + 0x18);
  kernel_hdr(buf, HS_HT_PERFINFO64, 0x0502, 0x10 + 5 * 8 + 8, 0x0F, 46);
  CHECK_EQ(hsi_record_decode(buf, 0, 200, 8, &ev, &next, &why), 1);
  CHECK_EQ(ev.payload_len, 8); CHECK(ev.payload == buf + 0x10 + 5 * 8);
  kernel_hdr(buf, HS_HT_PERFINFO64, 0x0502, 0x10 + 5 * 8 - 8, 0x0F, 46);   /* room for 4 only */
  CHECK_EQ(hsi_record_decode(buf, 0, 200, 8, &ev, &next, &why), -2);
}

/* An EVENT_HEADER record: flags 0x4 (STRING_ONLY) marks its payload as
   text, 0x2 (PRIVATE_SESSION) does not; a record shorter than the 0x50
   header is damaged, not read past its end; an item chain that leaves 4
   bytes, too few for an item header, says so. */
static size_t event_hdr(uint16_t flags, uint16_t size) {
  memset(buf, 0, sizeof buf);
  wr16(buf, size); buf[2] = HS_HT_EVENT64; buf[3] = 0xC0; wr16(buf + 4, flags);
  return 0x50;
}

TEST(event_header_flags_and_short_records) {
  hs_event ev; uint32_t next; const char *why = "";
  size_t k;
  event_hdr(0x4, 0x50 + 6);
  CHECK_EQ(hsi_record_decode(buf, 0, 200, 8, &ev, &next, &why), 1);
  CHECK(ev.flags & HS_EVF_STRING); CHECK_EQ(ev.payload_len, 6);
  event_hdr(0x2, 0x50 + 6);
  CHECK_EQ(hsi_record_decode(buf, 0, 200, 8, &ev, &next, &why), 1);
  CHECK(!(ev.flags & HS_EVF_STRING));
  event_hdr(0, 0x48);
  CHECK_EQ(hsi_record_decode(buf, 0, 200, 8, &ev, &next, &why), -2);
  CHECK_STR(why, "an EVENT_HEADER record of at least 0x50 bytes");
  CHECK_EQ(next, 0x48);
  k = event_hdr(0x1, 0);
  k += ext_item(buf + k, HS_EXT_RELATED_ACTIVITYID, 1, guid_bytes, 16);   /* linked: another follows */
  wr16(buf, (uint16_t)(k + 4));
  CHECK_EQ(hsi_record_decode(buf, 0, 200, 8, &ev, &next, &why), -2);
  CHECK_STR(why, "an extended data item header inside the record");
}

/* The walk's fast path (hsi_record_scan, then the setter of the record's
   kind, as the merge calls them) makes the event hsi_record_decode makes,
   for each header kind it takes: a kernel header, EVENT_HEADER of both
   widths with and without items, FULL and INSTANCE; it stops before a
   MESSAGE record, a damaged EVENT_HEADER and the end of data, which
   hsi_record_decode then reports. */
static void record_set(const hsi_krec *k, hs_event *ev) {
  if (hsi_krec_kernel(k)) hsi_record_kernel_set(k, ev);
  else hsi_record_header_set(k, ev);
}

static uint32_t put_full(uint32_t at, int ht, uint16_t size, uint16_t version) {
  uint8_t *p = buf + at;
  wr16(p, size); p[2] = (uint8_t)ht; p[3] = 0xC0; p[4] = 11; p[5] = 3; wr16(p + 6, version);
  wr32(p + 8, 21); wr32(p + 12, 22); wr64(p + 16, 1000 + at); memcpy(p + 0x18, guid_bytes, 16);
  return at + ((size + 7u) & ~7u);
}

static uint32_t put_event(uint32_t at, int ht, uint16_t flags, int items) {
  uint8_t *p = buf + at;
  size_t k = 0x50;
  p[2] = (uint8_t)ht; p[3] = 0xC0; wr16(p + 4, flags);
  wr32(p + 8, 31); wr32(p + 12, 32); wr64(p + 16, 2000 + at); memcpy(p + 0x18, guid_bytes, 16);
  wr16(p + 0x28, 0x1234); p[0x2A] = 7; p[0x2B] = 16; p[0x2C] = 4; p[0x2D] = 9; wr16(p + 0x2E, 0x4321);
  wr64(p + 0x30, 0x8000000000000123ull);
  while (items-- > 0) k += ext_item(p + k, HS_EXT_TS_ID, items > 0, guid_bytes, 4);
  memcpy(p + k, "data", 4); k += 4;
  wr16(p, (uint16_t)k);
  return at + (uint32_t)((k + 7) & ~7u);
}

TEST(scan_agrees_with_decode) {
  hsi_krec k[16];
  int64_t ts[16];
  uint32_t at = 0, starts[16], pos = 0, n, i, next;
  const char *why = "";
  hs_event a, b;
  memset(buf, 0, sizeof buf);
  starts[0] = at; kernel_hdr(buf + at, HS_HT_SYSTEM64, 2, 0x20 + 12, 0x10, 33);
  wr32(buf + at + 8, 5); wr32(buf + at + 12, 6); wr64(buf + at + 16, 99); at += 48;
  starts[1] = at; at = put_event(at, HS_HT_EVENT64, 0x1 | 0x4, 2);
  starts[2] = at; at = put_event(at, HS_HT_EVENT32, 0x20, 0);
  starts[3] = at; at = put_full(at, HS_HT_FULL64, 0x30 + 5, 0x1234);      /* a class version above 255 */
  starts[4] = at; at = put_full(at, HS_HT_INSTANCE32, 0x48 + 3, 2);
  starts[5] = at; kernel_hdr(buf + at, HS_HT_PERFINFO64, 0, 0x10 + 8, 0x0E, 32);
  wr64(buf + at + 8, 77); at += 24;
  starts[6] = at;                                            /* a MESSAGE record: not taken */
  wr16(buf + at, 16); buf[at + 3] = 0x90; at += 16;
  n = hsi_record_scan(buf, &pos, at, k, ts, 16, INT64_MIN, UINT64_MAX);
  CHECK_EQ(n, 6); CHECK_EQ(pos, starts[6]);
  for (i = 0; i < n; i++) {
    memset(&a, 0, sizeof a);
    record_set(&k[i], &a);
    CHECK_EQ(hsi_record_decode(buf, starts[i], at, 8, &b, &next, &why), 1);
    CHECK(hs_event_same_decoded(&a, &b));
    CHECK_EQ(ts[i], b.timestamp);
    CHECK(k[i].rec == buf + starts[i]);
  }
  /* the fields only EVENT_HEADER and classic headers have */
  memset(&a, 0, sizeof a);
  record_set(&k[1], &a);
  CHECK_EQ(a.channel, 16); CHECK_EQ(a.header_flags, 0x5); CHECK_EQ(a.id, 0x1234); CHECK_EQ(a.task, 0x4321);
  CHECK_EQ(a.keyword, 0x8000000000000123ull); CHECK_EQ(a.version, 7); CHECK_EQ(a.ext_len, 32);
  CHECK_EQ(a.flags, HS_EVF_HAS_IDS | HS_EVF_EXT | HS_EVF_STRING); CHECK_EQ(a.payload_len, 4);
  memset(&a, 0, sizeof a);
  record_set(&k[3], &a);
  CHECK_EQ(a.version, 0x1234); CHECK_EQ(a.opcode, 11); CHECK_EQ(a.level, 3); CHECK_EQ(a.payload_len, 5);
  /* a damaged EVENT_HEADER stops the scan where hsi_record_decode reports it */
  wr16(buf + starts[1] + 0x50, 0x200);                       /* its first item runs past it */
  pos = 0;
  CHECK_EQ(hsi_record_scan(buf, &pos, at, k, ts, 16, INT64_MIN, UINT64_MAX), 1); CHECK_EQ(pos, starts[1]);
  CHECK_EQ(hsi_record_decode(buf, starts[1], at, 8, &b, &next, &why), -2);
  CHECK_EQ(next, starts[2]);
  /* a classic record shorter than its header, and the end of data */
  pos = starts[3];
  wr16(buf + starts[3], 0x28);
  CHECK_EQ(hsi_record_scan(buf, &pos, at, k, ts, 16, INT64_MIN, UINT64_MAX), 0); CHECK_EQ(pos, starts[3]);
  pos = starts[4];
  wr32(buf + starts[5], 0xFFFFFFFFu);
  CHECK_EQ(hsi_record_scan(buf, &pos, at, k, ts, 16, INT64_MIN, UINT64_MAX), 1); CHECK_EQ(pos, starts[5]);
  pos = starts[1]; wr16(buf + starts[1] + 0x50, 16);   /* mended */
  CHECK_EQ(hsi_record_scan(buf, &pos, at, k, ts, 2, INT64_MIN, UINT64_MAX), 2); CHECK_EQ(pos, starts[3]);   /* max */
  /* the caller's bounds: the scan stops before the first record outside them */
  pos = starts[1];
  CHECK_EQ(hsi_record_scan(buf, &pos, at, k, ts, 16, ts[0] + 1, 0), 0); CHECK_EQ(pos, starts[1]);
  CHECK_EQ(hsi_record_scan(buf, &pos, at, k, ts, 1, INT64_MIN, UINT64_MAX), 1);
  pos = starts[1];
  CHECK_EQ(hsi_record_scan(buf, &pos, at, k, ts, 16, ts[0], 0), 1); CHECK_EQ(pos, starts[2]);
}

/* The MESSAGE optional fields the other test leaves out: 0x4 a 4-byte
   component id instead of the GUID, 0x10 the timestamp (as 0x8 does),
   0x80 64-bit pointers whatever the file's; 0x20's ids make the event's
   pid and tid known. */
TEST(message_component_id_and_wide_pointers) {
  hs_event ev; uint32_t next; const char *why = "";
  memset(buf, 0, sizeof buf);
  /* 8 + component 4 + timestamp 8 + ids 8 = 28, + 4 payload */
  wr16(buf, 32); buf[3] = 0x90; wr16(buf + 4, 9); wr16(buf + 6, 0x4 | 0x10 | 0x20 | 0x80);
  wr32(buf + 8, 77); wr64(buf + 12, 5151); wr32(buf + 20, 3); wr32(buf + 24, 4); memcpy(buf + 28, "abcd", 4);
  CHECK_EQ(hsi_record_decode(buf, 0, 200, 4, &ev, &next, &why), 1);
  CHECK_EQ(ev.timestamp, 5151); CHECK_EQ(ev.tid, 3); CHECK_EQ(ev.pid, 4);
  CHECK(ev.flags & HS_EVF_HAS_IDS);
  CHECK_EQ(ev.pointer_size, 8);
  CHECK_EQ(ev.payload_len, 4); CHECK(ev.payload == buf + 28);
  wr16(buf + 6, 0x4);                                      /* no ids: none known */
  CHECK_EQ(hsi_record_decode(buf, 0, 200, 4, &ev, &next, &why), 1);
  CHECK(!(ev.flags & HS_EVF_HAS_IDS)); CHECK_EQ(ev.pid, HS_NOID); CHECK_EQ(ev.pointer_size, 4);
}

/* ERROR records: the bytes after the marker and Size are the payload, at
   the file's pointer size (the layout is undocumented; nothing is lost). */
TEST(error_record_keeps_its_bytes) {
  hs_event ev; uint32_t next; const char *why = "";
  memset(buf, 0, sizeof buf);
  wr16(buf, 20); buf[2] = HS_HT_ERROR; buf[3] = 0xC0; memcpy(buf + 8, "twelve bytes", 12);
  CHECK_EQ(hsi_record_decode(buf, 0, 200, 4, &ev, &next, &why), 1);
  CHECK_EQ(ev.header_type, HS_HT_ERROR); CHECK_EQ(ev.pointer_size, 4);
  CHECK_EQ(ev.payload_len, 12); CHECK(ev.payload == buf + 8);
  CHECK_EQ(next, 24);
}

TEST(end_of_data_and_damage) {
  hs_event ev; uint32_t next = 0; const char *why = "";
  memset(buf, 0xFF, 64);
  CHECK_EQ(hsi_record_decode(buf, 0, 64, 8, &ev, &next, &why), 0);       /* 0xFFFFFFFF marker */
  CHECK_EQ(hsi_record_decode(buf, 60, 64, 8, &ev, &next, &why), 0);      /* < 8 bytes left */
  memset(buf, 0, 64);
  CHECK_EQ(hsi_record_decode(buf, 0, 64, 8, &ev, &next, &why), -1);      /* no marker flags */
  kernel_hdr(buf, 0x07, 2, 0x20, 0, 0);                                  /* unknown type */
  CHECK_EQ(hsi_record_decode(buf, 0, 64, 8, &ev, &next, &why), -1);
  kernel_hdr(buf, HS_HT_SYSTEM64, 2, 0x80, 0, 0);                        /* runs past the buffer */
  CHECK_EQ(hsi_record_decode(buf, 0, 64, 8, &ev, &next, &why), -1);
  kernel_hdr(buf, HS_HT_SYSTEM64, 2, 0x10, 0, 0);                        /* shorter than its header */
  CHECK_EQ(hsi_record_decode(buf, 0, 64, 8, &ev, &next, &why), -2);
  CHECK_EQ(next, 16);
}

/* The names info and dump print, by provider GUID and opcode: a table
   row with the wrong opcode names nothing or the wrong event. */
TEST(event_and_header_names) {
  hs_guid g;
  CHECK(hs_provider_guid("Image", &g));
  CHECK_STR(hs_event_name(&g, 10), "Load");
  CHECK(hs_event_name(&g, 11) == NULL);
  CHECK(hs_provider_guid("PageFault", &g));
  CHECK_STR(hs_event_name(&g, 98), "VirtualAlloc");
  CHECK_STR(hs_event_name(&g, 99), "VirtualFree");
  CHECK(hs_provider_guid("KernelTraceControl.ImageId", &g));
  CHECK_STR(hs_event_name(&g, 0), "ImageId");
  CHECK_STR(hs_event_name(&g, 36), "DbgID_RSDS");
  CHECK(hs_event_name(&g, 35) == NULL);
  CHECK_STR(hs_header_type_name(HS_HT_COMPACT32), "COMPACT32");
  CHECK_STR(hs_header_type_name(HS_HT_COMPACT64), "COMPACT64");
}

/* The names are found through an index (kernel.c): every provider by its
   GUID and back, a GUID one bit off not the same, and the first and last event of
   each kernel group's run of names. */
TEST(names_through_the_index) {
  static const char *const others[] = {
    "KernelTraceControl.ImageId", "KernelTraceControl.SysConfigEx", "EventMetadata",
    "Microsoft-Windows-Heap-Snapshot", "Microsoft-Windows-Kernel-EventTracing",
    "Microsoft-Windows-Kernel-Memory", "HeapRange", "HeapSummary", "Microsoft-Windows-DotNETRuntime",
    "Microsoft-Windows-DotNETRuntimeRundown", "Microsoft-Windows-Kernel-Process",
    "Microsoft-Windows-Kernel-Network" };
  static const struct { const char *prov; int op; const char *name; } ev[] = {
    {"EventTrace", 0, "Header"}, {"EventTrace", 80, "PartitionInfoExtension"},
    {"PageFault", 10, "TransitionFault"}, {"PageFault", 129, "VirtualAllocDCEnd"},
    {"Process", 1, "Start"}, {"Process", 39, "Defunct"}, {"Thread", 1, "Start"},
    {"Thread", 72, "SetName"}, {"Pool", 32, "PoolAlloc"}, {"Pool", 35, "PoolFreeSession"},
    {"PerfInfo", 46, "SampledProfile"}, {"PerfInfo", 74, "CollectionEnd"},
    {"Heap", 32, "HeapCreate"}, {"Heap", 42, "HeapContract"}, {"Image", 2, "Unload"},
    {"Image", 10, "Load"}, {"StackWalk", 32, "Stack"}, {"StackWalk", 38, "StackKeyUser"} };
  hs_guid g, h;
  char text[HS_GUID_STRLEN];
  int i, bit, named = 0;
  for (i = 0; hs_kernel_group_guid(i, &g); i++) {
    const char *name = hs_provider_name(&g);
    CHECK(name != NULL);
    if (!name) continue;
    CHECK(hs_provider_guid(name, &h) && hs_guid_eq(&g, &h));
    for (bit = 0; bit < 128; bit += 9) {      /* one bit off: not this name */
      h = g;
      if (bit < 32) h.d1 ^= 1u << bit;
      else if (bit < 48) h.d2 ^= (uint16_t)(1u << (bit - 32));
      else if (bit < 64) h.d3 ^= (uint16_t)(1u << (bit - 48));
      else h.d4[(bit - 64) / 8] ^= (uint8_t)(1u << (bit % 8));
      {
        const char *other = hs_provider_name(&h);   /* none, or another group (Process, Thread) */
        named += other == name || (other && strcmp(other, name) == 0);
      }
    }
  }
  CHECK_EQ(i, 31);
  CHECK_EQ(named, 0);
  for (i = 0; i < (int)(sizeof others / sizeof others[0]); i++) {
    CHECK(hs_provider_guid(others[i], &g));
    CHECK_STR(hs_provider_name(&g), others[i]);
    hs_guid_format(&g, text);
    CHECK_EQ(strlen(text), 36);
  }
  for (i = 0; i < (int)(sizeof ev / sizeof ev[0]); i++) {
    CHECK(hs_provider_guid(ev[i].prov, &g));
    CHECK_STR(hs_event_name(&g, ev[i].op), ev[i].name);
    CHECK(hs_event_name(&g, ev[i].op + 1000) == NULL);
  }
  CHECK(hs_provider_guid("Heap", &g));
  CHECK(hs_event_name(&g, 39) == NULL);          /* in the run's range, not a name */
  CHECK(hs_provider_guid("DiskIo", &g));
  CHECK(hs_event_name(&g, 10) == NULL);          /* a group with no names */
}

TEST(guid_text) {
  hs_guid g, h; char s[HS_GUID_STRLEN];
  CHECK_EQ(hs_guid_parse("{222962AB-6180-4b88-a825-346b75f2a24a}", &g), 0);
  hs_guid_format(&g, s);
  CHECK_STR(s, "222962ab-6180-4b88-a825-346b75f2a24a");
  CHECK_EQ(hs_guid_parse("222962ab-6180-4b88-a825-346b75f2a24", &h), HS_EARG);
  CHECK_EQ(hs_guid_parse("222962ab-6180-4b88-a825-346b75f2a24g", &h), HS_EARG);
  h = hs_guid_from_bytes(guid_bytes);
  hs_guid_format(&h, s);
  CHECK_STR(s, "b3e675d7-2554-4f18-830b-2762732560de");
  {                                   /* digit by digit, as printf's %08lx-%04x-... */
    uint64_t x = 0x9E3779B97F4A7C15ull;
    int i, k, bad = 0;
    char t[64];
    for (i = 0; i < 2000; i++) {
      x ^= x << 13; x ^= x >> 7; x ^= x << 17;
      h.d1 = i < 2 ? (i ? 0xFFFFFFFFu : 0) : (uint32_t)x;
      h.d2 = (uint16_t)(x >> 32); h.d3 = (uint16_t)(x >> 48);
      for (k = 0; k < 8; k++) h.d4[k] = (uint8_t)(x >> (8 * k) ^ (uint64_t)i);
      hs_guid_format(&h, s);
      snprintf(t, sizeof t, "%08lx-%04x-%04x-%02x%02x-%02x%02x%02x%02x%02x%02x", (unsigned long)h.d1, h.d2, h.d3,
               h.d4[0], h.d4[1], h.d4[2], h.d4[3], h.d4[4], h.d4[5], h.d4[6], h.d4[7]);
      bad += strcmp(s, t) != 0;
    }
    CHECK_EQ(bad, 0);
  }
}

TEST(strings_and_sid) {
  hs_cursor c; const uint8_t *w; const char *a; char out[64];
  static const uint8_t p[] = { 'a','b',0, 'h',0,0xe9,0,0x3d,0xd8,0x00,0xde,0,0, 0xAA };
  static const uint8_t sid[] = { 1,1,0,0,0,0,0,5, 18,0,0,0 };   /* S-1-5-18 */
  size_t n;
  hs_cur_init(&c, p, sizeof p, 8);
  CHECK_EQ(hs_cur_cstr(&c, &a), 2); CHECK(memcmp(a, "ab", 2) == 0);
  n = hs_cur_wstr(&c, &w);
  CHECK_EQ(n, 8);
  hs_utf16_to_utf8(w, n, out, sizeof out);
  CHECK_STR(out, "h\xc3\xa9\xf0\x9f\x98\x80");                   /* h, e-acute, U+1F600 */
  CHECK_EQ(hs_cur_u8(&c), 0xAA); CHECK(!c.bad);
  CHECK_EQ(hs_cur_u32(&c), 0); CHECK(c.bad);                        /* past the end: 0, sticky */
  CHECK_EQ(hs_sid_format(sid, sizeof sid, out, sizeof out), 8);
  CHECK_STR(out, "S-1-5-18");
  hs_utf16_to_utf8((const uint8_t *)"a\0b\0c\0", 6, out, 3);          /* truncated, NUL-terminated */
  CHECK_STR(out, "ab");
}

/* Wide strings of every length to 40 characters, at every start, with
   characters whose low or high byte is 0: the length is where the first 0
   character is (or the end), as a plain scan finds it. */
TEST(wide_string_lengths) {
  static uint8_t p[128];
  uint32_t len, at, start, bad = 0, i;
  for (start = 0; start < 4; start++)
    for (len = 0; len <= 40; len++)
      for (at = 0; at <= len; at++) {
        hs_cursor c;
        const uint8_t *w;
        size_t n, want;
        for (i = 0; i < sizeof p; i++) p[i] = (uint8_t)(i % 3 == 0 ? 0 : 'a' + i % 26);  /* 0 high or low bytes */
        for (i = 0; i < len; i++) {
          uint8_t *q = p + start + 2 * i;
          if (i == at) { q[0] = q[1] = 0; continue; }
          if (q[0] == 0 && q[1] == 0) q[1] = 1;
        }
        hs_cur_init(&c, p, start + 2 * len, 8);
        c.pos = start;
        n = hs_cur_wstr(&c, &w);
        want = at < len ? 2 * (size_t)at : 2 * (size_t)len;
        if (n != want || w != p + start || c.pos != (at < len ? start + 2 * at + 2 : start + 2 * len)) bad++;
      }
  CHECK_EQ(bad, 0);
}

/* UTF-16 to UTF-8 against a plain conversion: strings of every length to
   40 mixing ASCII with 2-byte characters, a 0 anywhere, into outputs of
   every size (the output never splits a character and always ends in 0). */
static size_t ref_utf8(const uint16_t *u, size_t n, char *out, size_t cap) {
  size_t i, k = 0;
  for (i = 0; i < n && u[i]; i++) {
    size_t need = u[i] < 0x80 ? 1 : 2;
    if (k + need >= cap) break;
    if (need == 1) out[k++] = (char)u[i];
    else { out[k++] = (char)(0xC0 | u[i] >> 6); out[k++] = (char)(0x80 | (u[i] & 0x3F)); }
  }
  out[k] = 0;
  return k;
}

TEST(utf16_to_utf8_runs) {
  static const uint16_t alphabet[] = { 'a', 'Z', '\\', '.', 0xE9, 0x100, 0x7F, 0x80 };
  uint16_t u[48];
  uint8_t raw[96];
  char got[128], want[128];
  uint32_t len, at, cap, seed = 1, bad = 0, i;
  for (len = 0; len <= 40; len++)
    for (at = 0; at <= len; at++)
      for (cap = 1; cap <= 90; cap += (cap < 12 ? 1 : 13)) {
        size_t gn, wn;
        for (i = 0; i < len; i++) {
          seed = seed * 1103515245u + 12345u;
          u[i] = (seed >> 16) % 4 ? alphabet[(seed >> 20) % 4] : alphabet[4 + (seed >> 20) % 4];
          if (i == at) u[i] = 0;
          raw[2 * i] = (uint8_t)u[i];
          raw[2 * i + 1] = (uint8_t)(u[i] >> 8);
        }
        memset(got, 0x55, sizeof got);
        gn = hs_utf16_to_utf8(raw, 2 * (size_t)len, got, cap);
        wn = ref_utf8(u, len, want, cap);
        if (gn != wn || memcmp(got, want, wn + 1) != 0 || got[cap] != 0x55) bad++;
      }
  CHECK_EQ(bad, 0);
}

int main(void) {
  RUN(wide_string_lengths); RUN(utf16_to_utf8_runs);
  RUN(system64_with_ids); RUN(compact_and_perfinfo); RUN(pebs_and_pmc_words_are_not_payload);
  RUN(image_load_under_process_group); RUN(full_and_instance); RUN(event_header_ext_items_and_stack);
  RUN(stack_items_of_one_frame_and_none); RUN(message_optional_fields); RUN(compact64_and_five_pmc_counters);
  RUN(event_header_flags_and_short_records); RUN(message_component_id_and_wide_pointers);
  RUN(error_record_keeps_its_bytes); RUN(end_of_data_and_damage); RUN(event_and_header_names);
  RUN(names_through_the_index);
  RUN(guid_text); RUN(strings_and_sid); RUN(scan_agrees_with_decode);
  return UNIT_DONE();
}
