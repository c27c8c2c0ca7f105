/*
** evrec.c -- EVENT_RECORD <-> .etl record (see evrec.h).  The record
** layouts are those record.c decodes (ETL-FORMAT §3).
*/
#include <string.h>
#include "bytes.h"
#include "evrec.h"
#include "record.h"

static void put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static void put32(uint8_t *p, uint32_t v) { put16(p, (uint16_t)v); put16(p + 2, (uint16_t)(v >> 16)); }
static void put64(uint8_t *p, uint64_t v) { put32(p, (uint32_t)v); put32(p + 4, (uint32_t)(v >> 32)); }

static void guid_bytes(const hs_guid *g, uint8_t b[16]) {
  put32(b, g->d1); put16(b + 4, g->d2); put16(b + 6, g->d3);
  memcpy(b + 8, g->d4, 8);
}

/* What the FULL and EVENT headers share: Size, kind, marker, ids, time, GUID
   (the kernel headers place them differently). */
static void common_header(uint8_t *buf, uint32_t hlen, uint32_t size, int ht, const hsi_evrec *e) {
  memset(buf, 0, hlen);
  put16(buf, (uint16_t)size);
  buf[2] = (uint8_t)ht;
  buf[3] = 0xC0;
  put32(buf + 8, e->thread_id);
  put32(buf + 12, e->process_id);
  put64(buf + 16, (uint64_t)e->timestamp);
  memcpy(buf + 0x18, e->provider_id, 16);
}

/* The kernel hook group whose class GUID this is, or -1. */
static int kernel_group(const uint8_t id[16]) {
  static hs_guid g[32];
  static int have[32], ready;
  hs_guid x = hs_guid_from_bytes(id);
  int i;
  if (!ready) {
    for (i = 0; i < 32; i++) have[i] = hs_kernel_group_guid(i, &g[i]);
    ready = 1;
  }
  for (i = 0; i < 32; i++)
    if (have[i] && hs_guid_eq(&g[i], &x)) return i;
  return -1;
}

uint32_t hsi_evrec_to_record(const hsi_evrec *e, uint8_t *buf) {
  int wide = !(e->flags & HSI_EHF_32_BIT_HEADER);
  uint32_t size, pos, i, udl = e->user_data_length;
  int group = (e->flags & HSI_EHF_CLASSIC) ? kernel_group(e->provider_id) : -1;
  if (group >= 0) {
    int noids = e->process_id == HS_NOID && e->thread_id == HS_NOID;
    uint32_t hlen = noids ? 0x10 : 0x20;
    if ((size = hlen + udl) > 0xFFFF) return 0;
    memset(buf, 0, hlen);
    put16(buf, e->version);
    buf[2] = (uint8_t)(noids ? (wide ? HS_HT_PERFINFO64 : HS_HT_PERFINFO32)
                             : (wide ? HS_HT_SYSTEM64 : HS_HT_SYSTEM32));
    buf[3] = 0xC0;
    put16(buf + 4, (uint16_t)size);
    buf[6] = e->opcode;
    buf[7] = (uint8_t)group;
    if (noids) put64(buf + 8, (uint64_t)e->timestamp);
    else {
      put32(buf + 8, e->thread_id);
      put32(buf + 12, e->process_id);
      put64(buf + 16, (uint64_t)e->timestamp);
      put64(buf + 24, e->processor_time);
    }
    pos = hlen;
  } else if (e->flags & HSI_EHF_CLASSIC) {
    if ((size = 0x30 + udl) > 0xFFFF) return 0;
    common_header(buf, 0x30, size, wide ? HS_HT_FULL64 : HS_HT_FULL32, e);
    buf[4] = e->opcode;
    buf[5] = e->level;
    put16(buf + 6, e->version);
    put64(buf + 0x28, e->processor_time);
    pos = 0x30;
  } else {
    uint16_t fl = (uint16_t)(e->flags & ~(HSI_EHF_EXTENDED_INFO | HSI_EHF_TRACE_MESSAGE));
    size = 0x50;
    for (i = 0; i < e->extended_data_count; i++) size += 8 + ((e->extended_data[i].data_size + 7u) & ~7u);
    if ((size += udl) > 0xFFFF) return 0;
    if (e->extended_data_count) fl |= HSI_EHF_EXTENDED_INFO;
    common_header(buf, 0x50, size, wide ? HS_HT_EVENT64 : HS_HT_EVENT32, e);
    put16(buf + 4, fl);
    put16(buf + 6, e->event_property);
    put16(buf + 0x28, e->id);
    buf[0x2A] = e->version; buf[0x2B] = e->channel; buf[0x2C] = e->level; buf[0x2D] = e->opcode;
    put16(buf + 0x2E, e->task);
    put64(buf + 0x30, e->keyword);
    put64(buf + 0x38, e->processor_time);
    memcpy(buf + 0x40, e->activity_id, 16);
    pos = 0x50;
    for (i = 0; i < e->extended_data_count; i++) {
      const hsi_evrec_ext *x = &e->extended_data[i];
      uint32_t padded = (x->data_size + 7u) & ~7u;
      put16(buf + pos, (uint16_t)(8 + padded));
      put16(buf + pos + 2, x->ext_type);
      put16(buf + pos + 4, (uint16_t)(i + 1 < e->extended_data_count));   /* more follow */
      put16(buf + pos + 6, x->data_size);
      memset(buf + pos + 8, 0, padded);
      if (x->data_size) memcpy(buf + pos + 8, (const void *)(uintptr_t)x->data_ptr, x->data_size);
      pos += 8 + padded;
    }
  }
  if (udl) memcpy(buf + pos, e->user_data, udl);
  return size;
}

int hsi_evrec_decode(const uint8_t *buf, uint32_t len, hs_event *ev) {
  uint32_t next;
  const char *why;
  return hsi_record_decode(buf, 0, len, 8, ev, &next, &why) == 1;
}

int hsi_evrec_from_event(const hs_event *ev, hsi_evrec *e, hsi_evrec_ext *items, size_t nitems) {
  memset(e, 0, sizeof *e);
  e->size = sizeof *e;
  e->thread_id = ev->tid;
  e->process_id = ev->pid;
  e->timestamp = ev->timestamp;
  guid_bytes(&ev->provider, e->provider_id);
  e->opcode = ev->opcode;
  e->level = ev->level;
  e->processor_number = (uint8_t)ev->cpu;
  e->flags = ev->pointer_size == 4 ? HSI_EHF_32_BIT_HEADER : HSI_EHF_64_BIT_HEADER;
  e->user_data = ev->payload;
  e->user_data_length = (uint16_t)ev->payload_len;
  switch (ev->header_type) {
    case HS_HT_EVENT32: case HS_HT_EVENT64: {
      uint32_t pos = 0;
      hs_ext_item it;
      int rc;
      /* a file's EVENT_HEADER may leave the width flags out; a consumer's has one */
      e->flags = (uint16_t)((ev->header_flags & ~(HSI_EHF_32_BIT_HEADER | HSI_EHF_64_BIT_HEADER)) |
                            (ev->pointer_size == 4 ? HSI_EHF_32_BIT_HEADER : HSI_EHF_64_BIT_HEADER));
      e->id = ev->id; e->version = (uint8_t)ev->version; e->channel = ev->channel;
      e->task = ev->task; e->keyword = ev->keyword;
      while ((rc = hs_event_ext_next(ev, &pos, &it)) == 1) {
        hsi_evrec_ext *x;
        if (e->extended_data_count >= nitems) return -1;
        x = &items[e->extended_data_count++];
        memset(x, 0, sizeof *x);
        x->ext_type = it.type;
        x->data_size = it.size;
        x->data_ptr = (uint64_t)(uintptr_t)it.data;
        x->linkage = 1;
      }
      if (rc < 0) return -1;
      if (e->extended_data_count) items[e->extended_data_count - 1].linkage = 0;
      e->extended_data = items;
      break;
    }
    case HS_HT_MESSAGE: case HS_HT_ERROR:
      e->flags |= HSI_EHF_TRACE_MESSAGE;
      e->id = ev->id;
      break;
    default:                     /* kernel and classic MOF headers */
      e->flags |= HSI_EHF_CLASSIC;
      e->version = (uint8_t)ev->version;
      break;
  }
  if (!(ev->flags & HS_EVF_HAS_IDS)) e->process_id = e->thread_id = HS_NOID;
  return 0;
}

int hsi_evrec_lost_kind(const hsi_evrec *e) {
  if (kernel_group(e->provider_id) != 0) return 0;
  return e->opcode >= 32 && e->opcode <= 34 ? e->opcode : 0;
}
