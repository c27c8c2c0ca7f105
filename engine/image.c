/*
** image.c -- the payload decoders of the kernel Image records (Load
** 0x030A or 0x140A, Unload/DCStart/DCEnd 0x1402-0x1404; ETL-FORMAT.md
** §6.7), one reader per layout version, and of the KernelTraceControl
** ImageId and DbgID_RSDS records the relogger writes beside them (§6.8).
** procmap.c routes the records here and attaches what they say to its
** images.
*/
#include <string.h>
#include "heapscript.h"
#include "kdecode.h"

/* ------------------------------------------------------------- images */

/* v1: ImageBase P, ImageSize P, ProcessId u32, FileName.  Some writers
   (syzygy's test files) use a u32 ModuleSize instead, as in v0. */
static void img_v1(hs_cursor *c, hsi_image_info *o) {
  o->base = hs_cur_ptr(c);
  o->size = o->size32 ? hs_cur_u32(c) : hs_cur_ptr(c);
  o->pid = hs_cur_u32(c);
  o->namelen = hs_cur_wstr(c, &o->name);
}
/* v2/v3: ImageBase P, ImageSize P, ProcessId, ImageChecksum, TimeDateStamp,
   Reserved0 / SignatureLevel+Type, DefaultBase P, Reserved1-4, FileName @3P+32.
   syzygy's test files also hold a variant with a u32 ImageSize and
   DefaultBase aligned to P (so FileName still lands at 3P+32). */
static void img_v2(hs_cursor *c, hsi_image_info *o) {
  o->base = hs_cur_ptr(c);
  o->size = o->size32 ? hs_cur_u32(c) : hs_cur_ptr(c);
  o->pid = hs_cur_u32(c);
  o->checksum = hs_cur_u32(c); o->tds = hs_cur_u32(c);
  hs_cur_u32(c);
  if (o->size32 && c->pos % (size_t)c->ptr) hs_cur_skip(c, (size_t)c->ptr - c->pos % (size_t)c->ptr);
  hs_cur_ptr(c);
  hs_cur_skip(c, 16);
  o->namelen = hs_cur_wstr(c, &o->name);
}

/* v0: ImageBase P, ModuleSize u32, FileName; no ProcessId (the header's). */
static void img_v0(hs_cursor *c, hsi_image_info *o) {
  o->base = hs_cur_ptr(c); o->size = hs_cur_u32(c);
  o->pid = HS_NOID;
  o->namelen = hs_cur_wstr(c, &o->name);
}

static void dec_image(hs_cursor *c, hsi_image_info *o) {
  if (o->version == 0) img_v0(c, o);
  else if (o->version == 1) img_v1(c, o);
  else img_v2(c, o);
}

int hsi_decode_image(const hs_event *ev, int version, hsi_image_info *o) {
  hs_cursor c;
  int w = ev->pointer_size == 4 ? 4 : 8, fallback = 0;
  memset(o, 0, sizeof *o);
  hs_cur_init(&c, NULL, 0, w);
  {
    /* Readings in order: the record's width, then (classic MOF headers
       only, §7.2) the other width; v1 also with a u32 size.  The first
       that ends exactly at the payload end with a plausible size (PE
       SizeOfImage is a nonzero u32) wins, else the first reading if it
       did not run past the end. */
    int k, nk = (ev->flags & HS_EVF_KERNEL) ? 1 : 2, found = 0, alt;
    for (k = 0; k < nk && !found; k++)
      for (alt = 0; alt < (version >= 1 ? 2 : 1) && !found; alt++) {
        hsi_image_info t;
        hs_cursor tc;
        memset(&t, 0, sizeof t);
        t.version = version;
        t.size32 = alt;
        hs_cur_init(&tc, ev->payload, ev->payload_len, k == 0 ? w : 12 - w);
        dec_image(&tc, &t);
        if (!tc.bad && tc.pos == tc.len && t.size && t.size <= 0xFFFFFFFFu) {
          found = 1; *o = t; c = tc;
          if (k) fallback = 1;
        } else if (k == 0 && alt == 0) {
          *o = t; c = tc;
        }
      }
  }
  return c.bad ? -1 : fallback;
}

/* ------------------------------------------ KernelTraceControl records */

/* op 0 ImageId: ImageBase P, ImageSize P, ProcessId u32, TimeDateStamp u32,
   OriginalFileName UTF-16.  op 36 DbgID_RSDS: ImageBase P, ProcessId u32,
   GUID, Age u32, PdbFileName ANSI. */
static void dec_ktc(hs_cursor *c, hsi_ktc_info *o) {
  if (o->op == 0) {
    o->base = hs_cur_ptr(c); o->size = hs_cur_ptr(c);
    o->pid = hs_cur_u32(c); o->tds = hs_cur_u32(c);
    o->namelen = hs_cur_wstr(c, &o->wname);
  } else {
    o->base = hs_cur_ptr(c); o->pid = hs_cur_u32(c);
    o->guid = hs_cur_guid(c); o->age = hs_cur_u32(c);
    o->namelen = hs_cur_cstr(c, &o->aname);
  }
}

int hsi_decode_ktc(const hs_event *ev, int op, hsi_ktc_info *o) {
  hs_cursor c;
  int w = ev->pointer_size == 4 ? 4 : 8, fallback = 0;
  memset(o, 0, sizeof *o);
  o->op = op;
  hs_cur_init(&c, ev->payload, ev->payload_len, w);
  dec_ktc(&c, o);
  /* Else the other width, if that ends exactly at the payload end
     (these are FULL_HEADER records, so §7.2 applies). */
  if (c.bad || c.pos != c.len) {
    hsi_ktc_info o2;
    hs_cursor c2;
    memset(&o2, 0, sizeof o2);
    o2.op = op;
    hs_cur_init(&c2, ev->payload, ev->payload_len, 12 - w);
    dec_ktc(&c2, &o2);
    if (!c2.bad && c2.pos == c2.len) { *o = o2; c = c2; fallback = 1; }
  }
  return c.bad ? -1 : fallback;
}
