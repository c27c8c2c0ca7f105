/*
** process.c -- the payload decoders of the kernel Process (group 0x03,
** ETL-FORMAT.md §6.5) and Thread (group 0x05, §6.6) records, one reader
** per layout version.  procmap.c routes the records here and keeps what
** they say.
*/
#include <string.h>
#include "heapscript.h"
#include "kdecode.h"

/* ------------------------------------------------------ Process records */

/* UserSID (§6.5): a u32 0 alone, else TOKEN_USER (2 pointers) + SID.
   Programs that write these events themselves (the syzygy test files)
   leave the TOKEN_USER pointers 0; the caller retries with long = 1 when
   the short reading does not end where the payload does. */
static void skip_sid(hs_cursor *c, int long_sid, const uint8_t **sid) {
  uint8_t n;
  if (!long_sid) { hs_cur_sid(c, sid); return; }
  *sid = NULL;
  hs_cur_skip(c, 2 * (size_t)c->ptr);
  hs_cur_u8(c);                          /* Revision */
  n = hs_cur_u8(c);
  hs_cur_skip(c, 6 + 4 * (size_t)n);
}

/* v0 (XP): ProcessId P, ParentId P, SID, ImageFileName. */
static void proc_v0(hs_cursor *c, hsi_process_info *o) {
  const uint8_t *sid;
  o->pid = (uint32_t)hs_cur_ptr(c);
  o->ppid = (uint32_t)hs_cur_ptr(c);
  skip_sid(c, o->long_sid, &sid);
  o->namelen = hs_cur_cstr(c, &o->name);
}

/* v1-v5 share the head: UniqueProcessKey P, ProcessId, ParentId,
   SessionId, ExitStatus. */
static void proc_head(hs_cursor *c, hsi_process_info *o) {
  hs_cur_ptr(c);
  o->pid = hs_cur_u32(c);
  o->ppid = hs_cur_u32(c);
  o->session = hs_cur_u32(c);
  hs_cur_u32(c);                         /* ExitStatus */
}

/* v1: head, UserSID @P+16, ImageFileName. */
static void proc_v1(hs_cursor *c, hsi_process_info *o) {
  const uint8_t *sid;
  proc_head(c, o);
  skip_sid(c, o->long_sid, &sid);
  o->namelen = hs_cur_cstr(c, &o->name);
}

/* v2: v1 + CommandLine. */
static void proc_v2(hs_cursor *c, hsi_process_info *o) {
  proc_v1(c, o);
  o->cmdlen = hs_cur_wstr(c, &o->cmd);
}

/* v3: head, DirectoryTableBase P @P+16, UserSID @2P+16, name, cmdline. */
static void proc_v3(hs_cursor *c, hsi_process_info *o) {
  const uint8_t *sid;
  proc_head(c, o);
  hs_cur_ptr(c);
  skip_sid(c, o->long_sid, &sid);
  o->namelen = hs_cur_cstr(c, &o->name);
  o->cmdlen = hs_cur_wstr(c, &o->cmd);
}

/* v4: head, DirectoryTableBase, Flags u32 @2P+16, UserSID @2P+20, name,
   cmdline, PackageFullName, ApplicationId. */
static void proc_v4(hs_cursor *c, hsi_process_info *o) {
  const uint8_t *sid, *w;
  proc_head(c, o);
  hs_cur_ptr(c);
  o->flags = hs_cur_u32(c);
  skip_sid(c, o->long_sid, &sid);
  o->namelen = hs_cur_cstr(c, &o->name);
  o->cmdlen = hs_cur_wstr(c, &o->cmd);
  hs_cur_wstr(c, &w);
  hs_cur_wstr(c, &w);
}

/* v5: v4 + 8 bytes (§7.17: look like an exit FILETIME). */
static void proc_v5(hs_cursor *c, hsi_process_info *o) {
  proc_v4(c, o);
  hs_cur_skip(c, 8);
}

/* One decoder per layout version; newer versions append fields, so they
   are read with the newest layout we know. */
static void dec_proc(hs_cursor *c, hsi_process_info *o, int version) {
  switch (version) {
    case 0: proc_v0(c, o); break;
    case 1: proc_v1(c, o); break;
    case 2: proc_v2(c, o); break;
    case 3: proc_v3(c, o); break;
    case 4: proc_v4(c, o); break;
    default: proc_v5(c, o); break;
  }
}

int hsi_decode_process(const hs_event *ev, int version, hsi_process_info *o) {
  hs_cursor c;
  int w = ev->pointer_size == 4 ? 4 : 8, fallback = 0;
  memset(o, 0, sizeof *o);
  hs_cur_init(&c, NULL, 0, w);
  {
    /* Readings in order: the record's width, then (classic MOF headers
       only, §7.2) the other width; each with the short, then the long SID.
       The first that ends exactly at the payload end wins, else the
       first reading if it did not run past the end. */
    int k, nk = (ev->flags & HS_EVF_KERNEL) ? 2 : 4, found = 0;
    for (k = 0; k < nk && !found; k++) {
      hsi_process_info t;
      hs_cursor tc;
      memset(&t, 0, sizeof t);
      t.long_sid = k & 1;
      hs_cur_init(&tc, ev->payload, ev->payload_len, k < 2 ? w : 12 - w);
      dec_proc(&tc, &t, version);
      if (!tc.bad && tc.pos == tc.len) {
        found = 1; *o = t; c = tc;
        if (k >= 2) fallback = 1;
      } else if (k == 0) {
        *o = t; c = tc;
      }
    }
  }
  return c.bad ? -1 : fallback;
}

/* ------------------------------------------------------- Thread records */

/* v0: ThreadId, ProcessId. */
static void thr_v0(hs_cursor *c, hsi_thread_info *o) { o->tid = hs_cur_u32(c); o->pid = hs_cur_u32(c); }
/* v1: ProcessId, ThreadId, then fields we do not keep. */
static void thr_v1(hs_cursor *c, hsi_thread_info *o) {
  o->pid = hs_cur_u32(c); o->tid = hs_cur_u32(c);
  c->pos = c->len;
}
/* v2: ProcessId, ThreadId, StackBase..TebBase (7 P), SubProcessTag u32. */
static void thr_v2(hs_cursor *c, hsi_thread_info *o) {
  o->pid = hs_cur_u32(c); o->tid = hs_cur_u32(c);
  hs_cur_skip(c, 7 * (size_t)c->ptr + 4);
}
/* v3: v2 + BasePriority, PagePriority, IoPriority, ThreadFlags (u8 each),
   then sometimes a UTF-16 ThreadName. */
static void thr_v3(hs_cursor *c, hsi_thread_info *o) {
  thr_v2(c, o);
  hs_cur_skip(c, 4);
  if (!c->bad && c->len - c->pos >= 2) o->namelen = hs_cur_wstr(c, &o->name);
}
/* SetName (op 72) v2: ProcessId, ThreadId, ThreadName UTF-16. */
static void thr_setname(hs_cursor *c, hsi_thread_info *o) {
  o->pid = hs_cur_u32(c); o->tid = hs_cur_u32(c);
  o->namelen = hs_cur_wstr(c, &o->name);
}

static void dec_thread(hs_cursor *c, hsi_thread_info *o, int op) {
  if (op == 72) thr_setname(c, o);
  else if (o->version == 0) thr_v0(c, o);
  else if (o->version == 1) thr_v1(c, o);
  else if (o->version == 2) thr_v2(c, o);
  else thr_v3(c, o);
}

int hsi_decode_thread(const hs_event *ev, int op, int version, hsi_thread_info *o) {
  hs_cursor c;
  int w = ev->pointer_size == 4 ? 4 : 8, fallback = 0;
  memset(o, 0, sizeof *o);
  o->version = version;
  hs_cur_init(&c, ev->payload, ev->payload_len, w);
  dec_thread(&c, o, op);
  /* Classic MOF headers only (§7.2): the other width, if that ends
     exactly at the payload end. */
  if (c.pos != c.len && !(ev->flags & HS_EVF_KERNEL)) {
    hsi_thread_info o2;
    hs_cursor c2;
    memset(&o2, 0, sizeof o2);
    o2.version = version;
    hs_cur_init(&c2, ev->payload, ev->payload_len, 12 - w);
    dec_thread(&c2, &o2, op);
    if (!c2.bad && c2.pos == c2.len) { *o = o2; c = c2; fallback = 1; }
  }
  return c.bad ? -1 : fallback;
}
