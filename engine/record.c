/*
** record.c -- one record header: the marker dword, the nine header kinds,
** PEBS/PMC extension words and EVENT_HEADER extended data items
** (ETL-FORMAT §3 and §4).  Works on bytes the framing code has already
** bounded to one buffer; every offset is checked against the record Size.
*/
#include <string.h>
#include "heapscript.h"
#include "bytes.h"
#include "record.h"

static const hs_event blank;
hs_guid hsi_kernel_guid[256];
static int kernel_guid_ready;

void hsi_record_init(void) {
  int g;
  if (kernel_guid_ready) return;
  for (g = 0; g < 32; g++)
    if (!hs_kernel_group_guid(g, &hsi_kernel_guid[g])) memset(&hsi_kernel_guid[g], 0, sizeof(hs_guid));
  kernel_guid_ready = 1;
}

/* Kernel header types: header length and pointer size. */
static const uint8_t khlen[0x12] = {
  [HS_HT_SYSTEM32] = 0x20, [HS_HT_SYSTEM64] = 0x20, [HS_HT_COMPACT32] = 0x18, [HS_HT_COMPACT64] = 0x18,
  [HS_HT_PERFINFO32] = 0x10, [HS_HT_PERFINFO64] = 0x10
};

/* A kernel record's header, checked, into *k.  0, or -2 when the record
   is shorter than its header (Size itself was checked against the
   buffer by the caller). */
static inline int kernel_head(const uint8_t *r, uint32_t size, uint32_t ht, uint32_t hlen, hsi_krec *k) {
  uint16_t ver = rd16(r);
  /* Version bits 0x8000: a PEBS index word follows the header; 0x0700: that
     many PMC counters (ETL-FORMAT §3.3). */
  uint32_t plen = hlen + (ver & 0x8000 ? 8u : 0u) + 8u * ((ver >> 8) & 7u);
  int perf = hlen == 0x10;
  uint64_t ids = rd64(r + 8);               /* within every kernel header (>= 16 bytes) */
  if (size < plen) return -2;
  /* no branch on the header kind: streams mix them record by record */
  k->rec = r;
  k->ts = (int64_t)rd64(r + (perf ? 8 : 16));
  ids = perf ? ~(uint64_t)0 : ids;          /* PERFINFO: HS_NOID */
  k->tid = (uint32_t)ids;
  k->pid = (uint32_t)(ids >> 32);
  k->size = (uint16_t)size;
  k->plen = (uint16_t)plen;
  k->hook = (uint16_t)(r[7] << 8 | r[6]);
  k->version = (uint8_t)ver;
  k->ht = (uint8_t)ht;
  return 0;
}

static int decode_kernel(const uint8_t *r, uint32_t size, uint32_t ht, uint32_t hlen, hs_event *ev,
                         const char **why) {
  hsi_krec k;
  if (kernel_head(r, size, ht, hlen, &k) != 0) { *why = "a kernel record at least as long as its header"; return -2; }
  hsi_record_init();
  *ev = blank;
  hsi_record_kernel_set(&k, ev);
  return 1;
}

/* *k for a classic or EVENT_HEADER record: both headers have the thread,
   the process and the timestamp at 8, 12 and 16 (ETL-FORMAT §3.4, §3.6). */
static inline void header_krec(const uint8_t *r, uint32_t size, uint32_t ht, uint32_t plen, uint8_t version,
                               hsi_krec *k) {
  k->rec = r;
  k->ts = (int64_t)rd64(r + 16);
  k->tid = rd32(r + 8);
  k->pid = rd32(r + 12);
  k->size = (uint16_t)size;
  k->plen = (uint16_t)plen;
  k->hook = 0;
  k->version = version;
  k->ht = (uint8_t)(ht | HSI_KREC_HEADER);
}

/* A classic (FULL, INSTANCE) record's header, checked, into *k: 0, or -2
   when the record is shorter than it. */
static inline int classic_head(const uint8_t *r, uint32_t size, uint32_t ht, hsi_krec *k, const char **why) {
  uint32_t hlen = (ht == HS_HT_INSTANCE32 || ht == HS_HT_INSTANCE64) ? 0x48 : 0x30;
  if (size < hlen) { *why = "a classic record at least as long as its header"; return -2; }
  header_krec(r, size, ht, hlen, 0, k);     /* its version is a u16: read from the header */
  return 0;
}

static int decode_classic(const uint8_t *r, uint32_t size, int ht, hs_event *ev, const char **why) {
  hsi_krec k;
  if (classic_head(r, size, (uint32_t)ht, &k, why) != 0) return -2;
  hsi_record_classic_set(&k, ev);
  return 1;
}

/* An EVENT_HEADER record's header and extended data items, checked, into
   *k.  0, or -2 when the record is too short for them (*why says what was
   expected; Size itself was checked against the buffer by the caller). */
static inline int eh_head(const uint8_t *r, uint32_t size, uint32_t ht, hsi_krec *k, const char **why) {
  uint32_t pos = 0x50;
  if (size < 0x50) { *why = "an EVENT_HEADER record of at least 0x50 bytes"; return -2; }
  if (rd16(r + 4) & 0x1) {
    /* Items follow the header until one has its linkage bit clear; the
       user data starts after the last one [V]. */
    for (;;) {
      uint16_t isz, link;
      if (size - pos < 8) { *why = "an extended data item header inside the record"; return -2; }
      isz = rd16(r + pos);
      link = rd16(r + pos + 4);
      if (isz < 8 || isz > size - pos || rd16(r + pos + 6) > isz - 8) {
        *why = "an extended data item that fits its record"; return -2;
      }
      pos += isz;
      if (!(link & 1)) break;
    }
  }
  header_krec(r, size, ht, pos, r[0x2A], k);
  return 0;
}

/* An EVENT_HEADER or classic record's header into *k (eh_head,
   classic_head); -1 for another header type. */
static inline int header_head(const uint8_t *r, uint32_t size, uint32_t ht, hsi_krec *k, const char **why) {
  if (ht == HS_HT_EVENT32 || ht == HS_HT_EVENT64) return eh_head(r, size, ht, k, why);
  if (ht == HS_HT_FULL32 || ht == HS_HT_FULL64 || ht == HS_HT_INSTANCE32 || ht == HS_HT_INSTANCE64)
    return classic_head(r, size, ht, k, why);
  return -1;
}

static int decode_event_header(const uint8_t *r, uint32_t size, int ht, hs_event *ev, const char **why) {
  hsi_krec k;
  if (eh_head(r, size, (uint32_t)ht, &k, why) != 0) return -2;
  hsi_record_eh_set(&k, ev);
  return 1;
}

/* WPP MESSAGE_TRACE_HEADER (ETL-FORMAT §3.7): optional fields by OptionFlags. */
static int decode_message(const uint8_t *r, uint32_t size, int file_ptr, hs_event *ev, const char **why) {
  uint16_t opt = rd16(r + 6);
  uint32_t pos = 8;
  ev->id = rd16(r + 4);
  ev->header_flags = opt;
  ev->pointer_size = (uint8_t)(opt & 0x40 ? 4 : opt & 0x80 ? 8 : file_ptr);
  if (opt & 0x1) pos += 4;
  if (opt & 0x2) {
    if (size < pos + 16) goto short_rec;
    ev->provider = hs_guid_from_bytes(r + pos); pos += 16;
  } else if (opt & 0x4) pos += 4;
  if (opt & 0x18) {
    if (size < pos + 8) goto short_rec;
    ev->timestamp = (int64_t)rd64(r + pos); pos += 8;
  }
  if (opt & 0x20) {
    if (size < pos + 8) goto short_rec;
    ev->tid = rd32(r + pos); ev->pid = rd32(r + pos + 4); pos += 8;
    ev->flags |= HS_EVF_HAS_IDS;
  }
  if (size < pos) goto short_rec;
  ev->payload = r + pos;
  ev->payload_len = size - pos;
  return 1;
short_rec:
  *why = "a MESSAGE record long enough for its optional fields";
  return -2;
}

int hsi_record_decode(const uint8_t *b, uint32_t pos, uint32_t end, int file_ptr,
                      hs_event *ev, uint32_t *next, const char **why) {
  const uint8_t *r;
  uint32_t marker, size, avail;
  int ht, rc;
  if (pos >= end || end - pos < 8) return 0;
  r = b + pos;
  avail = end - pos;
  marker = rd32(r);
  if (marker == 0xFFFFFFFFu) {
    /* the end marker ends the buffer's records where its padding starts
       (ETL-FORMAT.md §1.5); before Offset, with data after it, it ends
       nothing the buffer holds: records would be lost unsaid */
    uint32_t k = pos + 4;
    while (k < end && b[k] == 0xFF) k++;
    if (k == end) return 0;
    *why = "the end marker 0xFFFFFFFF only where the buffer's records end (its Offset), found it before more data";
    return -1;
  }
  ht = r[2];
  if ((r[3] & 0xC0) == 0xC0 && ht < (int)sizeof khlen && khlen[ht]) {
    /* the kernel headers first: a table instead of switches */
    size = rd16(r + 4);
    if (size < 8 || size > avail) {
      *why = size < 8 ? "a record Size of at least 8 bytes" : "a record that ends inside its buffer";
      return -1;
    }
    *next = pos + ((size + 7u) & ~7u);
    if (*next > end) *next = end;
    return decode_kernel(r, size, (uint32_t)ht, khlen[ht], ev, why);
  }
  if ((r[3] & 0xC0) == 0xC0) {
    switch (ht) {
      case HS_HT_FULL32: case HS_HT_FULL64: case HS_HT_INSTANCE32: case HS_HT_INSTANCE64:
      case HS_HT_EVENT32: case HS_HT_EVENT64: case HS_HT_ERROR:
        size = rd16(r); break;
      default:
        *why = "a known record header type"; return -1;
    }
  } else if ((r[3] & 0x90) == 0x90) {
    ht = HS_HT_MESSAGE;
    size = rd16(r);
  } else {
    *why = "a record marker (flags byte 0xC0 or 0x90)"; return -1;
  }
  if (size < 8 || size > avail) {
    *why = size < 8 ? "a record Size of at least 8 bytes" : "a record that ends inside its buffer";
    return -1;
  }
  *next = pos + ((size + 7u) & ~7u);
  if (*next > end) *next = end;
  *ev = blank;          /* a struct copy: cheaper than memset's rep stos here */
  ev->record = r;
  ev->record_len = size;
  ev->header_type = (uint8_t)ht;
  ev->pointer_size = (uint8_t)hsi_ht_ptr((unsigned)ht);
  ev->pid = ev->tid = HS_NOID;
  switch (ht) {
    case HS_HT_FULL32: case HS_HT_FULL64: case HS_HT_INSTANCE32: case HS_HT_INSTANCE64:
      rc = decode_classic(r, size, ht, ev, why); break;
    case HS_HT_EVENT32: case HS_HT_EVENT64:
      rc = decode_event_header(r, size, ht, ev, why); break;
    case HS_HT_MESSAGE:
      rc = decode_message(r, size, file_ptr, ev, why); break;
    default:
      /* ERROR records: layout undocumented [D]; keep the bytes after the marker
         and Size as payload so nothing is lost. */
      ev->pointer_size = (uint8_t)file_ptr;
      ev->payload = r + 8;
      ev->payload_len = size - 8;
      rc = 1;
      break;
  }
  return rc;
}

uint32_t hsi_record_scan(const uint8_t *b, uint32_t *pos, uint32_t end, hsi_krec *k, int64_t *ts,
                         uint32_t max, int64_t ts_lo, uint64_t ts_span) {
  uint32_t n = 0, p = *pos;
  const char *why;
  while (n < max && end - p >= 8) {           /* p <= end always */
    const uint8_t *r = b + p;
    uint32_t size, ht = r[2], hlen;
    /* a marker with flags 0xC0: a kernel header type, EVENT_HEADER or a
       classic one; the end-of-data marker 0xFFFFFFFF has type 0xFF, which
       is none */
    if ((r[3] & 0xC0) != 0xC0) break;
    if (ht < sizeof khlen && (hlen = khlen[ht]) != 0) {
      size = rd16(r + 4);
      if (size < 8 || size > end - p || kernel_head(r, size, ht, hlen, &k[n]) != 0) break;
    } else {
      size = rd16(r);
      if (size < 8 || size > end - p || header_head(r, size, ht, &k[n], &why) != 0) break;
    }
    if ((uint64_t)k[n].ts - (uint64_t)ts_lo > ts_span) break;
    ts[n] = k[n].ts;
    n++;
    p += (size + 7u) & ~7u;
    if (p > end) p = end;
  }
  *pos = p;
  return n;
}

int hs_event_ext_next(const hs_event *ev, uint32_t *pos, hs_ext_item *item) {
  uint16_t isz, link, dsz;
  if (!(ev->flags & HS_EVF_EXT) || !ev->ext) return 0;
  if (*pos >= ev->ext_len) return 0;
  if (ev->ext_len - *pos < 8) return -1;
  isz = rd16(ev->ext + *pos);
  link = rd16(ev->ext + *pos + 4);
  dsz = rd16(ev->ext + *pos + 6);
  if (isz < 8 || isz > ev->ext_len - *pos || dsz > isz - 8) return -1;
  item->type = rd16(ev->ext + *pos + 2);
  item->size = dsz;
  item->data = ev->ext + *pos + 8;
  *pos = (link & 1) ? *pos + isz : ev->ext_len;
  return 1;
}

size_t hs_event_ext_stack(const hs_event *ev, uint64_t *frames, size_t max, uint64_t *match_id) {
  uint32_t pos = 0;
  hs_ext_item it;
  size_t n = 0;
  while (hs_event_ext_next(ev, &pos, &it) == 1) {
    size_t w, i, cnt;
    if (it.type == HS_EXT_STACK_TRACE64) w = 8;
    else if (it.type == HS_EXT_STACK_TRACE32) w = 4;
    else continue;
    if (it.size < 8) continue;
    if (match_id) *match_id = rd64(it.data);
    cnt = (it.size - 8) / w;        /* frame width from the item type, not the header [V] */
    for (i = 0; i < cnt && n < max; i++)
      frames[n++] = rdw(it.data + 8 + (size_t)w * i, (unsigned)w);
  }
  return n;
}
