/*
** etl.c -- the .etl container: buffers, end of data, compression, the
** logfile header, per-CPU streams and the merge into one time-ordered
** stream of records (ETL-FORMAT §0-§2, §1.8).
**
** Opening indexes every buffer header (cheap: one read per buffer).  Then
** each (file, CPU) pair is a stream walking its buffers in file order;
** a binary heap merges the streams by timestamp, ties by CPU then file
** position.  Compressed buffers are inflated one at a time into the
** stream's scratch buffer, so an event stays a view into memory the
** reader owns until the next call.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "heapscript.h"
#include "bytes.h"
#include "record.h"
#include "mapfile.h"
#include "source.h"

#define BUFHDR 0x48u
#define MAX_BUFFER (16u << 20)      /* Win8+ maximum buffer size [D: ntwmi] */
#define MAX_DAMAGE_SCAN (64u << 20) /* how far to look for the next buffer after damage */
#define RELEASE_STEP (16u << 20)    /* indexing gives back mapped pages this often */

typedef struct bufinfo {
  uint64_t pos;       /* file offset */
  uint32_t size;      /* stored size (compressed size if compressed) */
  uint32_t end;       /* end of data in the (inflated) buffer */
  uint32_t start;     /* first record (0x48; SavedOffset for the buffer-0 tail) */
  uint32_t index;     /* buffer index in the file */
  uint16_t cpu;
  uint8_t compressed;
  uint8_t truncated;  /* stored bytes cut by the end of the file */
} bufinfo;

typedef struct etlfile {
  char *path;
  hsi_map map;
  const uint8_t *data;
  uint64_t size;
  hs_logfile lf;
  hs_file_stats st;
  bufinfo *bufs;
  uint32_t nbufs, capbufs;
  uint32_t index_damaged;    /* buffers_damaged found while indexing */
  int file_ptr;
} etlfile;

typedef struct etlreader etlreader;
static void etl_close(void *impl);

typedef struct stream {
  int file;
  int tail;            /* the buffer-0 tail: loses ties, deduplicated */
  uint16_t cpu;
  uint32_t *bufs;      /* indices into the file's bufinfo, in walk order */
  uint32_t nbufs, next_buf;
  const uint8_t *base; /* the current buffer (mapped or inflated) */
  const bufinfo *cur;
  uint32_t pos;
  uint8_t *scratch;
  size_t scratch_cap;
  hs_event head;
  int64_t key;
  uint64_t tie;        /* tail << 32 | cpu << 16 | file: see less() */
} stream;

struct etlreader {
  etlfile *files;
  int nfiles;
  stream *streams;
  int nstreams;
  int *heap, nheap;
  int pending;          /* stream whose head was handed out last */
  int by_filetime;      /* files disagree on clocks: merge on FILETIME */
  hs_reader_opts opts;
  /* buffer-0 tail deduplication: timestamps of the tail records, and
     hashes of records already delivered with one of those timestamps */
  int64_t *tail_ts;
  size_t ntail_ts;
  int64_t tail_min, tail_max;
  uint64_t *seen;
  size_t nseen, capseen;
};

/* ------------------------------------------------------------ damage */

static void damage(etlreader *r, int file, uint64_t pos, uint32_t buffer, const char *what) {
  etlfile *f = &r->files[file];
  if (f->st.first_damage_pos == UINT64_MAX || pos < f->st.first_damage_pos)
    f->st.first_damage_pos = pos;
  if (r->opts.on_damage) {
    hs_damage d;
    d.file = file; d.pos = pos; d.buffer = buffer; d.what = what;
    r->opts.on_damage(r->opts.ud, &d);
  }
}

/* ---------------------------------------------------- logfile header */

static int parse_logfile(etlfile *f, const uint8_t *b, uint32_t end, char *err, size_t errlen) {
  hs_event ev;
  uint32_t next;
  const char *why = "";
  int rc = hsi_record_decode(b, BUFHDR, end, 8, &ev, &next, &why);
  hs_logfile *lf = &f->lf;
  const uint8_t *p;
  uint32_t n, P, s;
  if (rc != 1 || !(ev.header_type == HS_HT_SYSTEM32 || ev.header_type == HS_HT_SYSTEM64) ||
      ev.hook != 0) {
    snprintf(err, errlen, "%s: offset 0x48: expected the logfile header record "
             "(SYSTEM32/64 header, group 0, type 0) at the start of buffer 0", f->path);
    return HS_EFORMAT;
  }
  P = ev.pointer_size;
  p = ev.payload;
  n = ev.payload_len;
  if (n < (P == 4 ? 0x110u : 0x118u)) {
    snprintf(err, errlen, "%s: offset 0x48: logfile header payload is %u bytes, expected at least %u",
             f->path, n, P == 4 ? 0x110u : 0x118u);
    return HS_EFORMAT;
  }
  f->file_ptr = (int)P;
  lf->header_version = rd16(ev.record);
  lf->header_ts = ev.timestamp;
  lf->buffer_size = rd32(p);
  memcpy(lf->version, p + 4, 4);
  lf->os_build = rd32(p + 8);
  lf->cpus = rd32(p + 0x0C);
  lf->end_time = (int64_t)rd64(p + 0x10);
  lf->timer_resolution = rd32(p + 0x18);
  lf->max_file_size = rd32(p + 0x1C);
  lf->log_file_mode = rd32(p + 0x20);
  lf->buffers_written = rd32(p + 0x24);
  lf->start_buffers = rd32(p + 0x28);
  lf->pointer_size = rd32(p + 0x2C);
  lf->events_lost = rd32(p + 0x30);
  lf->cpu_mhz = rd32(p + 0x34);
  s = P == 4 ? 0x40 : 0x48;                      /* TimeZone; then 4 pad bytes [V] */
  lf->tz_bias = (int32_t)rd32(p + s);
  s += 0xB0;
  lf->boot_time = (int64_t)rd64(p + s);
  lf->perf_freq = (int64_t)rd64(p + s + 8);
  lf->start_time = (int64_t)rd64(p + s + 16);
  lf->clock_type = rd32(p + s + 24);
  lf->buffers_lost = rd32(p + s + 28);
  s += 32;
  {
    hs_cursor c;
    const uint8_t *w;
    size_t wl;
    hs_cur_init(&c, p + s, n - s, (int)P);
    wl = hs_cur_wstr(&c, &w);
    hs_utf16_to_utf8(w ? w : (const uint8_t *)"", w ? wl : 0, lf->logger_name, sizeof lf->logger_name);
    wl = hs_cur_wstr(&c, &w);
    hs_utf16_to_utf8(w ? w : (const uint8_t *)"", w ? wl : 0, lf->log_file_name, sizeof lf->log_file_name);
  }
  return 0;
}

/* --------------------------------------------------------- the index */

/* A buffer header that could be real: used at offset 0 checks and to
   find the next buffer after damage. */
static int plausible(const uint8_t *b, uint64_t avail) {
  uint32_t size = rd32(b), off = rd32(b + 0x30);
  uint16_t flag = rd16(b + 0x34), type = rd16(b + 0x36);
  if (size < BUFHDR || size > MAX_BUFFER || type > 7 || (flag & 0xFF80)) return 0;
  if (!(flag & 0x40) && (off < BUFHDR || off > size)) return 0;
  if (!(flag & 0x40) && off > BUFHDR && size <= avail && (b[BUFHDR + 3] & 0x80) == 0) return 0;
  return 1;
}

/* Stricter, for finding the next buffer after damage: the first record
   must decode too (or, compressed, SavedOffset must be sane). */
static int resync_ok(const uint8_t *b, uint64_t avail) {
  hs_event ev;
  uint32_t next, size = rd32(b), off = rd32(b + 0x30), saved = rd32(b + 4);
  const char *why;
  if (avail < BUFHDR + 8 || !plausible(b, avail) || size > avail) return 0;
  if (rd16(b + 0x34) & 0x40) return saved > BUFHDR && saved <= MAX_BUFFER;
  return off == BUFHDR || hsi_record_decode(b, BUFHDR, off, 8, &ev, &next, &why) == 1;
}

/* Where the next buffer starts after damage at pos: first at the multiples
   of the in-memory buffer size (uncompressed files are laid out so), then
   at any position (relogged files store buffers of any length). */
static uint64_t resync(const uint8_t *d, uint64_t size, uint64_t pos, uint32_t bufsize) {
  uint64_t p, lim = pos + MAX_DAMAGE_SCAN;
  if (bufsize >= BUFHDR && bufsize <= MAX_BUFFER)
    for (p = (pos / bufsize + 1) * bufsize; p + BUFHDR <= size && p < lim; p += bufsize)
      if (resync_ok(d + p, size - p)) return p;
  for (p = pos + 1; p + BUFHDR <= size && p < lim; p++)
    if (resync_ok(d + p, size - p)) return p;
  return size;
}

static int add_buf(etlfile *f, const bufinfo *bi) {
  if (f->nbufs == f->capbufs) {
    uint32_t cap = f->capbufs ? f->capbufs * 2 : 64;
    bufinfo *nb = (bufinfo *)realloc(f->bufs, cap * sizeof *nb);
    if (!nb) return HS_ENOMEM;
    f->bufs = nb;
    f->capbufs = cap;
  }
  f->bufs[f->nbufs++] = *bi;
  return 0;
}

static int index_file(etlreader *r, int fi, char *err, size_t errlen) {
  etlfile *f = &r->files[fi];
  uint64_t pos = 0, released = 0;
  uint32_t idx = 0;
  const uint8_t *d = f->data;
  char msg[160];

  if (f->size < BUFHDR + 8 || !plausible(d, f->size) || rd32(d) > f->size) {
    snprintf(err, errlen, "%s: offset 0x0: not an ETL file: expected a buffer header with "
             "BufferSize 0x48..0x%x fitting the file (%llu bytes), found BufferSize 0x%x",
             f->path, MAX_BUFFER, (unsigned long long)f->size, f->size >= 4 ? rd32(d) : 0);
    return HS_EFORMAT;
  }
  while (pos < f->size) {
    const uint8_t *b = d + pos;
    uint64_t avail = f->size - pos;
    bufinfo bi;
    uint32_t size, saved, off;
    uint16_t flag;
    if (avail < BUFHDR || !plausible(b, avail)) {
      /* Damaged framing: skip to the next buffer that is sound. */
      uint64_t scan;
      snprintf(msg, sizeof msg, avail < BUFHDR ? "a buffer header of 0x48 bytes (file ends)"
               : "a buffer header (BufferSize 0x48..16 MiB, known type and flags)");
      damage(r, fi, pos, idx, msg);
      f->st.buffers_damaged++;
      /* The logfile header's BufferSize is the first payload word of the
         record at 0x48 in buffer 0 (checked sound before the walk). */
      scan = resync(d, f->size, pos, rd32(d + BUFHDR + (d[BUFHDR + 2] <= 2 ? 0x20 : 0x10)));
      if (scan >= f->size) { f->st.bytes_trailing = f->size - pos; break; }
      pos = scan;
      idx++;
      continue;
    }
    size = rd32(b);
    saved = rd32(b + 4);
    off = rd32(b + 0x30);
    flag = rd16(b + 0x34);
    memset(&bi, 0, sizeof bi);
    bi.pos = pos;
    bi.index = idx;
    bi.size = size;
    bi.start = BUFHDR;
    bi.cpu = (flag & 0x20) ? rd16(b + 0x28) : b[0x28];
    bi.compressed = (flag & 0x40) != 0;
    if (size > avail) {
      bi.truncated = 1;
      bi.size = (uint32_t)avail;
      damage(r, fi, pos, idx, "a whole buffer (the file ends inside it)");
      f->st.buffers_damaged++;
    }
    if (bi.compressed) {
      bi.end = saved;
      if (saved <= BUFHDR || saved > MAX_BUFFER) {
        damage(r, fi, pos, idx, "a compressed buffer with SavedOffset 0x49..16 MiB");
        f->st.buffers_damaged++;
        bi.end = 0;
      }
      f->st.buffers_compressed++;
    } else {
      /* Data ends at Offset; fall back to SavedOffset, then BufferSize. */
      if (off >= BUFHDR && off <= size) bi.end = off;
      else if (saved >= BUFHDR && saved <= size) bi.end = saved;
      else bi.end = size;
      if (bi.end > bi.size) bi.end = bi.size;
    }
    if (flag & 0x6) f->st.buffers_lost_flag++;
    if (bi.end > 0 || !bi.compressed) {
      int rc = add_buf(f, &bi);
      if (rc) { snprintf(err, errlen, "%s: out of memory", f->path); return rc; }
    }
    f->st.buffers++;
    pos += size;
    idx++;
    if (pos - released >= RELEASE_STEP) {    /* keep the resident size of indexing flat */
      hsi_map_release(&f->map, released, pos - released);
      released = pos;
    }
  }
  return 0;
}

/* -------------------------------------------------------------- streams */

/* Order of stream heads: timestamp, then the buffer-0 tail last, then
   CPU, then file.  No two streams share (tail, cpu, file), so `tie`,
   computed once per stream, settles every tie. */
static inline int less(const stream *a, const stream *b) {
  return a->key < b->key || (a->key == b->key && a->tie < b->tie);
}

static void sift_down(etlreader *r, int i) {
  for (;;) {
    int l = 2 * i + 1, m = i;
    if (l < r->nheap && less(&r->streams[r->heap[l]], &r->streams[r->heap[m]])) m = l;
    if (l + 1 < r->nheap && less(&r->streams[r->heap[l + 1]], &r->streams[r->heap[m]])) m = l + 1;
    if (m == i) return;
    { int t = r->heap[i]; r->heap[i] = r->heap[m]; r->heap[m] = t; }
    i = m;
  }
}

static void sift_up(etlreader *r, int i) {
  while (i > 0) {
    int p = (i - 1) / 2;
    if (!less(&r->streams[r->heap[i]], &r->streams[r->heap[p]])) return;
    { int t = r->heap[i]; r->heap[i] = r->heap[p]; r->heap[p] = t; }
    i = p;
  }
}

/* Make the stream's next buffer current; 0 when it has none left. */
static int load_buffer(etlreader *r, stream *s) {
  etlfile *f = &r->files[s->file];
  while (s->next_buf < s->nbufs) {
    const bufinfo *bi = &f->bufs[s->bufs[s->next_buf++]];
    const uint8_t *b = f->data + bi->pos;
    if (!bi->compressed) {
      s->base = b;
      s->cur = bi;
      s->pos = bi->start;
      return 1;
    }
    if (bi->truncated || bi->end == 0) {
      damage(r, s->file, bi->pos, bi->index, "a complete compressed buffer");
      continue;
    }
    if (s->scratch_cap < bi->end) {
      uint8_t *ns = (uint8_t *)realloc(s->scratch, bi->end);
      if (!ns) { damage(r, s->file, bi->pos, bi->index, "memory to inflate the buffer"); continue; }
      s->scratch = ns;
      s->scratch_cap = bi->end;
    }
    memcpy(s->scratch, b, BUFHDR);
    {
      int fmt = f->lf.compression ? f->lf.compression : HS_XCA_XPRESS;
      long n = hs_xca_decompress(fmt, b + BUFHDR, bi->size - BUFHDR, s->scratch + BUFHDR, bi->end - BUFHDR);
      if (n != (long)(bi->end - BUFHDR)) {
        char msg[128];
        snprintf(msg, sizeof msg, n < 0 ? "a valid compressed stream (format %d)"
                 : "a compressed stream inflating to SavedOffset-0x48 bytes (format %d)", fmt);
        damage(r, s->file, bi->pos, bi->index, msg);
        f->st.buffers_damaged++;
        continue;
      }
    }
    s->base = s->scratch;
    s->cur = bi;
    s->pos = bi->start;
    return 1;
  }
  s->cur = NULL;
  return 0;
}

static int64_t merge_key(const etlreader *r, const stream *s) {
  return r->by_filetime ? hs_time_filetime(&r->files[s->file].lf, s->head.timestamp) : s->head.timestamp;
}

/* Decode the stream's next record into s->head; 0 when the stream is done. */
static int advance(etlreader *r, stream *s) {
  etlfile *f = &r->files[s->file];
  for (;;) {
    const char *why = "";
    uint32_t next = 0;
    int rc;
    if (!s->cur && !load_buffer(r, s)) return 0;
    rc = hsi_record_decode(s->base, s->pos, s->cur->end, f->file_ptr, &s->head, &next, &why);
    if (rc == 1) {
      hs_event *e = &s->head;
      e->cpu = s->cpu;
      e->file = (uint16_t)s->file;
      e->buffer = s->cur->index;
      e->offset = s->pos;
      e->buffer_pos = s->cur->pos;
      if (s->tail) e->flags |= HS_EVF_BUF0TAIL;
      s->pos = next;
      s->key = merge_key(r, s);
      return 1;
    }
    if (rc != 0) {
      char msg[200];
      uint64_t at = s->cur->pos + (s->cur->compressed ? 0 : s->pos);
      snprintf(msg, sizeof msg, "%s (record at buffer offset 0x%x%s)", why, s->pos,
               s->cur->compressed ? ", inflated" : "");
      damage(r, s->file, at, s->cur->index, msg);
      f->st.records_damaged++;
      if (rc == -2) { s->pos = next; continue; }
      f->st.buffers_damaged++;
    }
    hsi_map_release(&f->map, s->cur->pos, s->cur->size);
    s->cur = NULL;     /* end of this buffer */
  }
}

static uint64_t hash_record(const uint8_t *p, uint32_t n) {
  uint64_t h = 1469598103934665603ull;
  uint32_t i;
  for (i = 0; i < n; i++) { h ^= p[i]; h *= 1099511628211ull; }
  return h ^ n;
}

static int is_tail_ts(const etlreader *r, int64_t ts) {
  size_t i;
  if (ts < r->tail_min || ts > r->tail_max) return 0;
  for (i = 0; i < r->ntail_ts; i++)
    if (r->tail_ts[i] == ts) return 1;
  return 0;
}

/* ------------------------------------------------------------ building */

static int add_stream(etlreader *r, int file, uint16_t cpu, int tail) {
  stream *ns = (stream *)realloc(r->streams, (size_t)(r->nstreams + 1) * sizeof *ns);
  if (!ns) return -1;
  r->streams = ns;
  memset(&ns[r->nstreams], 0, sizeof *ns);
  ns[r->nstreams].file = file;
  ns[r->nstreams].cpu = cpu;
  ns[r->nstreams].tail = tail;
  ns[r->nstreams].tie = (uint64_t)(tail != 0) << 32 | (uint64_t)cpu << 16 | (uint64_t)(unsigned)file;
  return r->nstreams++;
}

static int push_buf(stream *s, uint32_t bi) {
  if ((s->nbufs & (s->nbufs - 1)) == 0) {          /* grow at powers of two */
    uint32_t *nb = (uint32_t *)realloc(s->bufs, (s->nbufs ? 2 * s->nbufs : 1) * sizeof *nb);
    if (!nb) return -1;
    s->bufs = nb;
  }
  s->bufs[s->nbufs++] = bi;
  return 0;
}

typedef struct { int64_t ts; uint32_t order, buf; } bufts;

static int cmp_bufts(const void *pa, const void *pb) {
  const bufts *a = (const bufts *)pa, *b = (const bufts *)pb;
  if (a->ts != b->ts) return a->ts < b->ts ? -1 : 1;
  return a->order < b->order ? -1 : a->order > b->order;
}

/* A circular logger wraps: in file order a CPU's oldest buffer may sit in
   the middle.  Order each stream's buffers by their first record's
   timestamp (a compressed or empty buffer keeps its place after the one
   before it). */
static int order_circular(etlfile *f, stream *s) {
  bufts *t = (bufts *)malloc((s->nbufs ? s->nbufs : 1) * sizeof *t);
  int64_t last = INT64_MIN;
  uint32_t i;
  if (!t) return -1;
  for (i = 0; i < s->nbufs; i++) {
    const bufinfo *bi = &f->bufs[s->bufs[i]];
    hs_event ev;
    uint32_t next;
    const char *why;
    if (!bi->compressed && hsi_record_decode(f->data + bi->pos, bi->start, bi->end, 8, &ev, &next, &why) == 1)
      last = ev.timestamp;
    t[i].ts = last; t[i].order = i; t[i].buf = s->bufs[i];
  }
  qsort(t, s->nbufs, sizeof *t, cmp_bufts);
  for (i = 0; i < s->nbufs; i++) s->bufs[i] = t[i].buf;
  free(t);
  return 0;
}

/* One stream per CPU per file, buffers in file order (timestamps never
   decrease that way [V]); the buffer-0 records between SavedOffset and
   Offset become a stream of their own. */
static int build_streams(etlreader *r, int fi) {
  etlfile *f = &r->files[fi];
  uint32_t i, n = f->nbufs;        /* the tail buffer appended below is not walked here */
  int base = r->nstreams;
  for (i = 0; i < n; i++) {
    bufinfo *bi = &f->bufs[i];
    int k, si = -1;
    if (i == 0 && !bi->compressed) {
      uint32_t saved = rd32(f->data + bi->pos + 4);
      if (saved > BUFHDR && saved < bi->end) {
        bufinfo tail = *bi;
        int ts = add_stream(r, fi, bi->cpu, 1);
        tail.start = saved;
        bi->end = saved;
        if (ts < 0 || add_buf(f, &tail) || push_buf(&r->streams[ts], f->nbufs - 1)) return -1;
        bi = &f->bufs[i];
      }
    }
    for (k = base; k < r->nstreams; k++)
      if (!r->streams[k].tail && r->streams[k].cpu == bi->cpu) { si = k; break; }
    if (si < 0 && (si = add_stream(r, fi, bi->cpu, 0)) < 0) return -1;
    if (push_buf(&r->streams[si], i)) return -1;
  }
  if (f->lf.log_file_mode & HS_LOGMODE_CIRCULAR) {
    int k;
    for (k = base; k < r->nstreams; k++)
      if (!r->streams[k].tail && order_circular(f, &r->streams[k])) return -1;
  }
  return 0;
}

/* Timestamps of the buffer-0 tail records, to recognise their repeats. */
static int collect_tail(etlreader *r) {
  int k;
  for (k = 0; k < r->nstreams; k++) {
    stream *s = &r->streams[k];
    if (!s->tail) continue;
    while (advance(r, s)) {
      int64_t *nt = (int64_t *)realloc(r->tail_ts, (r->ntail_ts + 1) * sizeof *nt);
      if (!nt) return -1;
      r->tail_ts = nt;
      r->tail_ts[r->ntail_ts++] = s->head.timestamp;
    }
    s->next_buf = 0;
    s->cur = NULL;
  }
  if (r->ntail_ts) {
    size_t i;
    r->tail_min = r->tail_max = r->tail_ts[0];
    for (i = 1; i < r->ntail_ts; i++) {
      if (r->tail_ts[i] < r->tail_min) r->tail_min = r->tail_ts[i];
      if (r->tail_ts[i] > r->tail_max) r->tail_max = r->tail_ts[i];
    }
  }
  return 0;
}

static int etl_rewind(void *impl) {
  etlreader *r = (etlreader *)impl;
  int k;
  r->nheap = 0;
  r->pending = -1;
  r->nseen = 0;
  for (k = 0; k < r->nfiles; k++) {
    /* Walk-time counters start again; index-time ones stay. */
    r->files[k].st.records = 0;
    r->files[k].st.records_duplicate = 0;
    r->files[k].st.records_damaged = 0;
    r->files[k].st.buffers_damaged = r->files[k].index_damaged;
  }
  for (k = 0; k < r->nstreams; k++) {
    stream *s = &r->streams[k];
    s->next_buf = 0;
    s->cur = NULL;
    if (advance(r, s)) { r->heap[r->nheap++] = k; sift_up(r, r->nheap - 1); }
  }
  return 0;
}

static int finish_open(etlreader *r, char *err, size_t errlen) {
  int i;
  for (i = 0; i < r->nfiles; i++) {
    etlfile *f = &r->files[i];
    int rc = index_file(r, i, err, errlen);
    if (rc) return rc;
    {
      /* The header buffer is never compressed [V]. */
      const bufinfo *b0 = f->nbufs ? &f->bufs[0] : NULL;
      if (!b0 || b0->compressed || b0->pos != 0) {
        snprintf(err, errlen, "%s: offset 0x0: expected an uncompressed header buffer", f->path);
        return HS_EFORMAT;
      }
      rc = parse_logfile(f, f->data, b0->end, err, errlen);
      if (rc) return rc;
      if (f->st.buffers_compressed) {
        /* Low word of buffer 0's State names the format [D: snail]; 3 is
           also the plain Flush state, so anything else means XPRESS. */
        unsigned fmt = rd16(f->data + 0x2C);
        f->lf.compression = (fmt == 2 || fmt == 3 || fmt == 4) ? (int)fmt : HS_XCA_XPRESS;
      }
    }
    f->index_damaged = f->st.buffers_damaged;
    /* Indexing touched every buffer header, and the kernel maps pages
       around each touch: give them back; the walk maps what it reads. */
    hsi_map_release(&f->map, 0, f->size);
    if (build_streams(r, i)) { snprintf(err, errlen, "%s: out of memory", f->path); return HS_ENOMEM; }
    if (i > 0 && (f->lf.clock_type != r->files[0].lf.clock_type ||
                  f->lf.perf_freq != r->files[0].lf.perf_freq))
      r->by_filetime = 1;
  }
  r->heap = (int *)malloc((size_t)(r->nstreams ? r->nstreams : 1) * sizeof(int));
  if (!r->heap || collect_tail(r)) { snprintf(err, errlen, "out of memory"); return HS_ENOMEM; }
  return etl_rewind(r);
}

static etlreader *new_reader(int n, const hs_reader_opts *opts) {
  etlreader *r = (etlreader *)calloc(1, sizeof *r);
  int i;
  if (!r) return NULL;
  r->files = (etlfile *)calloc((size_t)n, sizeof *r->files);
  if (!r->files) { free(r); return NULL; }
  r->nfiles = n;
  r->pending = -1;
  if (opts) r->opts = *opts;
  for (i = 0; i < n; i++) r->files[i].st.first_damage_pos = UINT64_MAX;
  return r;
}

static char *dupstr(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = (char *)malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

static int etl_open(etlreader **out, const char *const *paths, int npaths,
                   const hs_reader_opts *opts, char *err, size_t errlen) {
  etlreader *r;
  char dummy[8];
  int i, rc;
  if (!err) { err = dummy; errlen = sizeof dummy; }
  *out = NULL;
  if (npaths < 1 || npaths > 65535) { snprintf(err, errlen, "no trace file given"); return HS_EARG; }
  if (!(r = new_reader(npaths, opts))) { snprintf(err, errlen, "out of memory"); return HS_ENOMEM; }
  for (i = 0; i < npaths; i++) {
    etlfile *f = &r->files[i];
    if (!(f->path = dupstr(paths[i]))) { rc = HS_ENOMEM; snprintf(err, errlen, "out of memory"); goto fail; }
    if ((rc = hsi_map_open(&f->map, paths[i], err, errlen)) != 0) goto fail;
    f->data = f->map.data;
    f->size = f->st.file_size = f->map.size;
  }
  if ((rc = finish_open(r, err, errlen)) != 0) goto fail;
  *out = r;
  return 0;
fail:
  etl_close(r);
  return rc;
}

static int etl_open_mem(etlreader **out, const uint8_t *data, size_t len, const char *name,
                       const hs_reader_opts *opts, char *err, size_t errlen) {
  etlreader *r;
  char dummy[8];
  int rc;
  if (!err) { err = dummy; errlen = sizeof dummy; }
  *out = NULL;
  if (!(r = new_reader(1, opts))) { snprintf(err, errlen, "out of memory"); return HS_ENOMEM; }
  r->files[0].path = dupstr(name ? name : "(memory)");
  r->files[0].data = data;
  r->files[0].size = r->files[0].st.file_size = len;
  if (!r->files[0].path) { etl_close(r); return HS_ENOMEM; }
  if ((rc = finish_open(r, err, errlen)) != 0) { etl_close(r); return rc; }
  *out = r;
  return 0;
}

static void etl_close(void *impl) {
  etlreader *r = (etlreader *)impl;
  int i;
  if (!r) return;
  for (i = 0; i < r->nstreams; i++) { free(r->streams[i].bufs); free(r->streams[i].scratch); }
  for (i = 0; i < r->nfiles; i++) {
    hsi_map_close(&r->files[i].map);
    free(r->files[i].bufs);
    free(r->files[i].path);
  }
  free(r->streams);
  free(r->files);
  free(r->heap);
  free(r->tail_ts);
  free(r->seen);
  free(r);
}

/* ---------------------------------------------------------- delivering */

static int etl_next(void *impl, hs_event *ev) {
  etlreader *r = (etlreader *)impl;
  for (;;) {
    stream *s;
    int k;
    if (r->pending >= 0) {
      /* Advance the stream handed out last only now: its event stayed a
         view into that stream's buffer until this call. */
      if (advance(r, &r->streams[r->pending])) { r->heap[0] = r->pending; sift_down(r, 0); }
      else { r->heap[0] = r->heap[--r->nheap]; if (r->nheap) sift_down(r, 0); }
      r->pending = -1;
    }
    if (r->nheap == 0) return 0;
    k = r->heap[0];
    s = &r->streams[k];
    r->pending = k;
    if (r->ntail_ts && is_tail_ts(r, s->head.timestamp)) {
      uint64_t h = hash_record(s->head.record, s->head.record_len);
      if (s->tail) {
        size_t i;
        int dup = 0;
        for (i = 0; i < r->nseen; i++) if (r->seen[i] == h) { dup = 1; break; }
        if (dup) { r->files[s->file].st.records_duplicate++; continue; }
      } else {
        if (r->nseen == r->capseen) {
          size_t cap = r->capseen ? r->capseen * 2 : 16;
          uint64_t *ns = (uint64_t *)realloc(r->seen, cap * sizeof *ns);
          if (ns) { r->seen = ns; r->capseen = cap; }
        }
        if (r->nseen < r->capseen) r->seen[r->nseen++] = h;
      }
    }
    r->files[s->file].st.records++;
    *ev = s->head;
    return 1;
  }
}

static int etl_nfiles(const void *impl) { return ((const etlreader *)impl)->nfiles; }
static const char *etl_path(const void *impl, int i) {
  const etlreader *r = (const etlreader *)impl;
  return i >= 0 && i < r->nfiles ? r->files[i].path : NULL;
}
static const hs_logfile *etl_logfile(const void *impl, int i) {
  const etlreader *r = (const etlreader *)impl;
  return i >= 0 && i < r->nfiles ? &r->files[i].lf : NULL;
}
static const hs_file_stats *etl_stats(const void *impl, int i) {
  const etlreader *r = (const etlreader *)impl;
  return i >= 0 && i < r->nfiles ? &r->files[i].st : NULL;
}

static int etl_reopen(void *impl, hs_reader **out, const hs_reader_opts *o, char *err, size_t errlen) {
  etlreader *r = (etlreader *)impl;
  const char **paths;
  int i, rc;
  if (r->nfiles == 1 && !r->files[0].map.data && r->files[0].data)      /* over memory */
    return hs_reader_open_mem(out, r->files[0].data, (size_t)r->files[0].size, r->files[0].path,
                              o, err, errlen);
  if (!(paths = (const char **)malloc((size_t)r->nfiles * sizeof *paths))) {
    snprintf(err, errlen, "out of memory");
    return HS_ENOMEM;
  }
  for (i = 0; i < r->nfiles; i++) paths[i] = r->files[i].path;
  rc = hs_reader_open(out, paths, r->nfiles, o, err, errlen);
  free(paths);
  return rc;
}

static const hsi_source_ops etl_ops = {
  etl_next, etl_rewind, etl_close, etl_nfiles, etl_path, etl_logfile, etl_stats, etl_reopen
};

int hs_reader_open(hs_reader **out, const char *const *paths, int npaths,
                   const hs_reader_opts *opts, char *err, size_t errlen) {
  etlreader *r;
  int rc = etl_open(&r, paths, npaths, opts, err, errlen);
  *out = NULL;
  if (rc) return rc;
  if (!(*out = hsi_reader_wrap(&etl_ops, r))) { etl_close(r); return HS_ENOMEM; }
  return 0;
}

int hs_reader_open_mem(hs_reader **out, const uint8_t *data, size_t len, const char *name,
                       const hs_reader_opts *opts, char *err, size_t errlen) {
  etlreader *r;
  int rc = etl_open_mem(&r, data, len, name, opts, err, errlen);
  *out = NULL;
  if (rc) return rc;
  if (!(*out = hsi_reader_wrap(&etl_ops, r))) { etl_close(r); return HS_ENOMEM; }
  return 0;
}
