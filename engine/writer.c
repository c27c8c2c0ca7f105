/*
** writer.c -- .etl writer: buffer framing, logfile header, record headers
** and the few kernel payloads a synthetic trace needs.
**
** Layouts follow shared/docs/ETL-FORMAT.md; where the document leaves a
** field open (CurrentOffset, the buffer TimeStamp, flags at the last
** flush, the relogger's header buffer) the values copy what the corpus
** files show, so that a decoder cannot tell our buffers from Windows' ones.
*/
#include "writer.h"
#include "osfile.h"
#include "bytes.h"
#include "xca.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUFHDR 0x48u
#define MAXREC 0xFFFFu

/* WMI_BUFFER_HEADER fields that carry meaning. */
#define BF_FLUSH_MARKER 0x0001u
#define BF_PROC_INDEX   0x0020u
#define BF_COMPRESSED   0x0040u
#define BT_GENERIC 0
#define BT_HEADER  4
#define BS_FLUSH   3


/* Offsets inside buffer 0 of the fields rewritten at close. */
#define HDR_PAYLOAD (BUFHDR + 0x20u)
#define HDR_ENDTIME (HDR_PAYLOAD + 0x10u)
#define HDR_BUFFERS (HDR_PAYLOAD + 0x24u)

#define ALIGN8(n) (((n) + 7u) & ~(size_t)7u)

struct cpubuf {
  uint8_t *b;          /* buffer_size bytes, allocated on the CPU's first record */
  uint32_t off;        /* end of data; 0 while no buffer is open */
  uint64_t seq;        /* SequenceNumber, given when the buffer was opened */
  int64_t last_ts;
  int has_ts;
  uint16_t marked;     /* BufferFlag bits of the open buffer (hsi_writer_mark) */
  uint16_t mark;       /* bits for the buffer of the next record */
};

struct hsi_writer {
  FILE *f;
  hsi_writer_opts o;     /* defaults applied; its strings are not kept */
  struct cpubuf *cpu;
  uint8_t *z;            /* compressed copy of one buffer */
  uint32_t nbuf;         /* buffers written, buffer 0 included */
  uint64_t seq;
  int64_t max_ts;
  int any;               /* a record was written */
  int fatal;             /* first I/O or memory error, 0 if none */
  char err[HS_ERRLEN];
};

static int fail(hsi_writer *w, int rc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(w->err, sizeof w->err, fmt, ap);
  va_end(ap);
  return rc;
}

static int io_fail(hsi_writer *w, const char *what) {
  if (!w->fatal) {
    fail(w, HS_EIO, "%s: %s", what, errno ? strerror(errno) : "I/O error");
    w->fatal = HS_EIO;
  }
  return w->fatal;
}

/* ---------------------------------------------------------------- time */

/* Trace ticks to FILETIME, as a reader of the file will convert them
   (hs_time_filetime: whole seconds split off first, held within int64_t
   for stamps no clock reaches). */
static int64_t to_filetime(const hsi_writer *w, int64_t ts) {
  hs_logfile lf;
  memset(&lf, 0, sizeof lf);
  lf.clock_type = w->o.clock_type;
  lf.perf_freq = w->o.perf_freq;
  lf.cpu_mhz = w->o.cpu_mhz;
  lf.start_time = w->o.start_time;
  lf.header_ts = w->o.start_ticks;
  return hs_time_filetime(&lf, ts);
}

/* --------------------------------------------------------------- text */

/* One code point from UTF-8; malformed input gives U+FFFD for one byte. */
static uint32_t utf8_next(const unsigned char **ps) {
  const unsigned char *s = *ps;
  uint32_t c = s[0], min;
  int n, i;
  if (c < 0x80) { *ps = s + 1; return c; }
  if (c >= 0xF0 && c < 0xF5) { n = 3; c &= 0x07; min = 0x10000; }
  else if (c >= 0xE0 && c < 0xF0) { n = 2; c &= 0x0F; min = 0x800; }
  else if (c >= 0xC2 && c < 0xE0) { n = 1; c &= 0x1F; min = 0x80; }
  else { *ps = s + 1; return 0xFFFD; }
  for (i = 1; i <= n; i++) {
    if ((s[i] & 0xC0) != 0x80) { *ps = s + 1; return 0xFFFD; }
    c = c << 6 | (s[i] & 0x3F);
  }
  if (c < min || c > 0x10FFFF || (c >= 0xD800 && c < 0xE000)) { *ps = s + 1; return 0xFFFD; }
  *ps = s + n + 1;
  return c;
}

/* UTF-16LE with its NUL into out (NULL: just measure); returns bytes. */
static size_t put_wstr(uint8_t *out, const char *s) {
  const unsigned char *p = (const unsigned char *)(s ? s : "");
  size_t n = 0;
  while (*p) {
    uint32_t c = utf8_next(&p);
    if (c >= 0x10000) {
      c -= 0x10000;
      if (out) { wr16(out + n, (uint16_t)(0xD800 | c >> 10)); wr16(out + n + 2, (uint16_t)(0xDC00 | (c & 0x3FF))); }
      n += 4;
    } else {
      if (out) wr16(out + n, (uint16_t)c);
      n += 2;
    }
  }
  if (out) wr16(out + n, 0);
  return n + 2;
}

static void put_guid(uint8_t *p, const hs_guid *g) {
  wr32(p, g->d1);
  wr16(p + 4, g->d2);
  wr16(p + 6, g->d3);
  memcpy(p + 8, g->d4, 8);
}

static void put_ptr(uint8_t *p, int ptr, uint64_t v) {
  if (ptr == 8) wr64(p, v); else wr32(p, (uint32_t)v);
}

/* ------------------------------------------------------------ buffers */

static void buffer_context(const hsi_writer *w, uint8_t *b, unsigned cpu) {
  if (w->o.old_layout) {
    /* Vista/Win7: u8 ProcessorNumber, u8 Alignment (always 8 on disk). */
    b[0x28] = (uint8_t)cpu;
    b[0x29] = 8;
  } else {
    wr16(b + 0x28, (uint16_t)cpu);
  }
  wr16(b + 0x2A, w->o.logger_id);
}

/*
** Write CPU c's open buffer.  cur is the CurrentOffset Windows leaves:
** Offset plus the record that did not fit for a full buffer, BufferSize
** plus Offset for buffers flushed when the session stops (corpus values).
*/
static int flush_cpu(hsi_writer *w, unsigned c, uint32_t cur, int last) {
  struct cpubuf *cb = &w->cpu[c];
  uint8_t *b = cb->b;
  uint32_t bs = w->o.buffer_size, stored = bs;
  uint16_t flag = w->o.old_layout ? 0 : BF_PROC_INDEX;
  const uint8_t *out = b;
  int64_t stamp = w->o.compress ? to_filetime(w, w->max_ts) : w->max_ts;

  if (last) flag |= BF_FLUSH_MARKER;
  flag |= w->o.buffer_flags | cb->marked;
  cb->marked = 0;
  memset(b, 0, BUFHDR);
  wr32(b + 0x04, cb->off);                /* SavedOffset */
  wr32(b + 0x08, cur);
  /* Flush time: trace clock for a live logger, FILETIME in relogged
     (compressed) files -- both occur; readers must ignore it. */
  wr64(b + 0x10, (uint64_t)stamp);
  wr64(b + 0x18, cb->seq);
  buffer_context(w, b, c);
  wr32(b + 0x2C, BS_FLUSH);
  wr32(b + 0x30, cb->off);
  wr16(b + 0x36, BT_GENERIC);

  if (w->o.compress) {
    long n = hsi_xca_compress(w->o.compress, b + BUFHDR, cb->off - BUFHDR,
                              w->z + BUFHDR, bs - BUFHDR);
    /* Data that does not shrink is stored as a plain buffer: the flag is
       per buffer, so readers handle the mix. */
    if (n > 0 && (uint64_t)n < bs - BUFHDR) {
      stored = BUFHDR + (uint32_t)n;
      flag |= BF_COMPRESSED;
      out = w->z;
    }
  }
  wr32(b, stored);
  wr16(b + 0x34, flag);
  if (out == w->z) memcpy(w->z, b, BUFHDR);
  else memset(b + cb->off, 0xFF, bs - cb->off);
  errno = 0;
  if (fwrite(out, 1, stored, w->f) != stored) return io_fail(w, "writing a buffer");
  w->nbuf++;
  cb->off = 0;
  return 0;
}

/*
** Room for a record of `size` bytes on CPU c, stamped ts: flushes the
** CPU's buffer when the record does not fit, opens a new one when needed.
*/
static int reserve(hsi_writer *w, int cpu, size_t size, int64_t ts, uint8_t **out) {
  struct cpubuf *cb;
  uint32_t need = (uint32_t)ALIGN8(size);
  int rc;

  *out = NULL;
  if (w->fatal) return w->fatal;
  if (cpu < 0 || (uint32_t)cpu >= w->o.cpus)
    return fail(w, HS_EARG, "cpu %d out of range: the trace has %u processors", cpu, (unsigned)w->o.cpus);
  if (size > MAXREC || need > w->o.buffer_size - BUFHDR)
    return fail(w, HS_EARG, "a record of %lu bytes does not fit: the limit is %u",
                (unsigned long)size, (unsigned)(w->o.buffer_size - BUFHDR < MAXREC ? w->o.buffer_size - BUFHDR : MAXREC));
  cb = &w->cpu[cpu];
  if (cb->has_ts && ts < cb->last_ts)
    return fail(w, HS_EARG, "timestamp %lld on cpu %d is before the previous record's %lld",
                (long long)ts, cpu, (long long)cb->last_ts);
  if (!cb->b && !(cb->b = malloc(w->o.buffer_size))) {
    w->fatal = HS_ENOMEM;
    return fail(w, HS_ENOMEM, "out of memory for the buffer of cpu %d", cpu);
  }
  /* a buffer marked already is written out early (as at a flush timer)
     for the next mark to have a buffer of its own */
  if (cb->off && (cb->off + need > w->o.buffer_size || (cb->mark && cb->marked)))
    if ((rc = flush_cpu(w, (unsigned)cpu, cb->off + need, 0)) < 0) return rc;
  if (!cb->off) {
    cb->off = BUFHDR;
    cb->seq = ++w->seq;
  }
  cb->marked |= cb->mark;
  cb->mark = 0;
  *out = cb->b + cb->off;
  memset(*out + size, 0, need - size);
  cb->off += need;
  cb->last_ts = ts;
  cb->has_ts = 1;
  if (!w->any || ts > w->max_ts) w->max_ts = ts;
  w->any = 1;
  return 0;
}

/* ----------------------------------------------------------- buffer 0 */

/* SYSTEM32/64 header (0x20 bytes). */
static void system_header(uint8_t *p, int ht, int version, size_t size, int group, int type,
                          uint32_t pid, uint32_t tid, int64_t ts, uint64_t cpu_time) {
  wr16(p, (uint16_t)version);
  p[2] = (uint8_t)ht;
  p[3] = 0xC0;
  wr16(p + 4, (uint16_t)size);
  p[6] = (uint8_t)type;
  p[7] = (uint8_t)group;
  wr32(p + 8, tid);
  wr32(p + 12, pid);
  wr64(p + 16, (uint64_t)ts);
  wr64(p + 24, cpu_time);              /* KernelTime, UserTime */
}

/* TIME_ZONE_INFORMATION for UTC (0xAC bytes plus the 4-byte pad, zeroed by the caller). */
static void put_timezone(uint8_t *p) {
  put_wstr(p + 0x04, "Coordinated Universal Time");
  put_wstr(p + 0x58, "Coordinated Universal Time");
}

/*
** Buffer 0: the logfile header record (ETL-FORMAT.md 2.2) and, if asked,
** an EventTrace Extension record.  Written once at open with
** BuffersWritten 1 and EndTime 0, as a session that never stopped leaves
** it; close fills both in.
*/
static int write_header_buffer(hsi_writer *w, const char *path) {
  const hsi_writer_opts *o = &w->o;
  int P = o->pointer_size, ht = P == 8 ? HS_HT_SYSTEM64 : HS_HT_SYSTEM32;
  size_t tz = P == 8 ? 0x48 : 0x40, fixed = tz + 0xB0 + 0x20;
  const char *name = o->logger_name ? o->logger_name : "heapscript";
  const char *file = o->log_file_name ? o->log_file_name : path;
  size_t nlen = put_wstr(NULL, name), flen = put_wstr(NULL, file);
  size_t size = 0x20 + fixed + nlen + flen, off;
  uint32_t stored = o->buffer_size;
  uint8_t *b, *h;
  int rc = 0;

  if (BUFHDR + ALIGN8(size) + (o->group_masks ? 0x48 : 0) > o->buffer_size || size > MAXREC)
    return fail(w, HS_EARG, "logger and file names too long for a %u-byte buffer", (unsigned)o->buffer_size);
  if (!(b = calloc(1, o->buffer_size))) return fail(w, HS_ENOMEM, "out of memory");

  system_header(b + BUFHDR, ht, 2, size, 0, 0, 0, 0, o->start_ticks, 0);
  h = b + HDR_PAYLOAD;
  wr32(h + 0x00, o->buffer_size);
  h[4] = o->os_major;
  h[5] = o->os_minor;
  if (o->compress && !o->old_layout) { h[6] = 2; h[7] = 0; }   /* the layout written */
  else { h[6] = 1; h[7] = 5; }
  wr32(h + 0x08, o->os_build);
  wr32(h + 0x0C, o->cpus);
  wr64(h + 0x10, 0);                   /* EndTime: set at close */
  wr32(h + 0x18, o->timer_resolution);
  wr32(h + 0x1C, 0);                   /* MaximumFileSize */
  wr32(h + 0x20, o->log_file_mode);
  wr32(h + 0x24, 1);                   /* BuffersWritten: set at close */
  wr32(h + 0x28, 1);                   /* StartBuffers */
  wr32(h + 0x2C, (uint32_t)P);
  wr32(h + 0x30, o->events_lost);
  wr32(h + 0x34, o->cpu_mhz);
  /* LoggerName and LogFileName pointers stay 0, as relogged files have them. */
  if (o->time_zone) memcpy(h + tz, o->time_zone, 0xAC);
  else put_timezone(h + tz);
  /* BootTime: where the QPC or cycle counter was 0. */
  wr64(h + tz + 0xB0, (uint64_t)(o->boot_time ? o->boot_time
                                 : o->clock_type == 2 ? o->start_time : to_filetime(w, 0)));
  wr64(h + tz + 0xB8, (uint64_t)o->perf_freq);
  wr64(h + tz + 0xC0, (uint64_t)o->start_time);
  wr32(h + tz + 0xC8, (uint32_t)o->clock_type);
  wr32(h + tz + 0xCC, o->buffers_lost);
  put_wstr(h + fixed, name);
  put_wstr(h + fixed + nlen, file);
  off = BUFHDR + ALIGN8(size);

  if (o->group_masks) {
    int i;
    system_header(b + off, ht, 2, 0x20 + 36, 0, 5, 0, 0, o->start_ticks, 0);
    for (i = 0; i < 8; i++) wr32(b + off + 0x20 + 4 * i, o->group_masks[i]);
    wr32(b + off + 0x20 + 32, 0);      /* KernelEventVersion */
    off += ALIGN8(0x20 + 36);
  }

  /* Relogger output keeps the header buffer short, in 512-byte units. */
  if (o->compress) stored = (uint32_t)((off + 0x1FF) & ~(size_t)0x1FF);
  wr32(b + 0x00, stored);
  wr32(b + 0x04, o->old_layout ? 0 : (uint32_t)off);   /* Win7 left SavedOffset 0 */
  wr32(b + 0x08, o->compress ? 0 : (uint32_t)off);
  buffer_context(w, b, 0);
  /* Compressed files name the format in buffer 0's State (2/3/4). */
  wr32(b + 0x2C, o->compress ? (uint32_t)o->compress : BS_FLUSH);
  wr32(b + 0x30, (uint32_t)off);
  wr16(b + 0x34, (uint16_t)(o->old_layout || o->compress ? BF_FLUSH_MARKER : BF_FLUSH_MARKER | BF_PROC_INDEX));
  wr16(b + 0x36, BT_HEADER);
  memset(b + off, 0xFF, o->buffer_size - off);
  errno = 0;
  if (fwrite(b, 1, stored, w->f) != stored) rc = io_fail(w, "writing buffer 0");
  else w->nbuf = 1;
  free(b);
  return rc;
}

/* ------------------------------------------------------------ open/close */

static int check_opts(hsi_writer *w, hsi_writer_opts *o) {
  if (!o->pointer_size) o->pointer_size = 8;
  if (!o->buffer_size) o->buffer_size = 65536;
  if (!o->cpus) o->cpus = 1;
  if (!o->os_build) o->os_build = o->old_layout ? 7601 : 19041;
  if (!o->os_major && !o->os_minor) {
    o->os_major = o->old_layout ? 6 : 10;
    o->os_minor = o->old_layout ? 1 : 0;
  }
  if (!o->timer_resolution) o->timer_resolution = 156250;   /* 15.625 ms */
  if (!o->clock_type) o->clock_type = 1;
  if (!o->perf_freq) o->perf_freq = 10000000;
  if (!o->cpu_mhz) o->cpu_mhz = 3000;
  if (!o->start_time) o->start_time = 132223104000000000; /* 2020-01-01 00:00 UTC */
  if (!o->start_ticks && o->clock_type == 2) o->start_ticks = o->start_time;
  if (!o->log_file_mode)
    o->log_file_mode = o->compress ? HS_LOGMODE_SEQUENTIAL | HS_LOGMODE_RELOG | HS_LOGMODE_COMPRESSED
                                   : HS_LOGMODE_SEQUENTIAL;

  if (o->pointer_size != 4 && o->pointer_size != 8)
    return fail(w, HS_EARG, "pointer_size must be 4 or 8, not %d", o->pointer_size);
  if (o->buffer_size < 1024 || o->buffer_size > (16u << 20) || o->buffer_size % 8)
    return fail(w, HS_EARG, "buffer_size %u: must be a multiple of 8 from 1 KiB to 16 MiB", (unsigned)o->buffer_size);
  if (o->cpus > (o->old_layout ? 256u : 2048u))
    return fail(w, HS_EARG, "%u processors do not fit the buffer context", (unsigned)o->cpus);
  if (o->clock_type < 1 || o->clock_type > 3)
    return fail(w, HS_EARG, "clock_type must be 1, 2 or 3, not %d", o->clock_type);
  if (o->buffer_flags & ~0x1Eu)
    return fail(w, HS_EARG, "buffer_flags 0x%x: only 0x2, 0x4, 0x8 and 0x10 may be set", (unsigned)o->buffer_flags);
  if (o->perf_freq < 0)
    return fail(w, HS_EARG, "perf_freq must be positive");
  if (o->compress && o->compress != HS_XCA_LZNT1 && o->compress != HS_XCA_XPRESS &&
      o->compress != HS_XCA_XPRESS_HUFF)
    return fail(w, HS_EARG, "compress must be 0, %d, %d or %d, not %d", HS_XCA_LZNT1,
                HS_XCA_XPRESS, HS_XCA_XPRESS_HUFF, o->compress);
  if (o->compress && o->old_layout)
    return fail(w, HS_EARG, "compressed buffers exist only in the Win8+ layout");
  return 0;
}

int hsi_writer_open(hsi_writer **out, const char *path, const hsi_writer_opts *opts,
                    char *err, size_t errlen) {
  hsi_writer *w;
  int rc;

  *out = NULL;
  if (!(w = calloc(1, sizeof *w))) {
    if (err && errlen) snprintf(err, errlen, "out of memory");
    return HS_ENOMEM;
  }
  if (opts) w->o = *opts;
  rc = check_opts(w, &w->o);
  if (!rc && w->o.compress) {
    /* Find out now, not at the first flush, whether the format is there. */
    static const uint8_t probe[64];
    uint8_t tmp[256];
    long n = hsi_xca_compress(w->o.compress, probe, sizeof probe, tmp, sizeof tmp);
    if (n == HS_EUNSUP) rc = fail(w, HS_EUNSUP, "compression format %d is not supported", w->o.compress);
  }
  if (!rc && (!(w->cpu = calloc(w->o.cpus, sizeof *w->cpu)) ||
              (w->o.compress && !(w->z = malloc(w->o.buffer_size)))))
    rc = fail(w, HS_ENOMEM, "out of memory");
  if (!rc) {
    errno = 0;
    if (!(w->f = hsi_fopen(path, "wb")))
      rc = fail(w, HS_EIO, "cannot create %s: %s", path, errno ? strerror(errno) : "error");
  }
  if (!rc && (rc = write_header_buffer(w, path)) != 0) {   /* a full disk: say which file */
    char why[HS_ERRLEN];
    snprintf(why, sizeof why, "%s", w->err);
    fail(w, rc, "%s: %s", path, why);
  }
  if (rc) {
    if (err && errlen) snprintf(err, errlen, "%s", w->err);
    if (w->f) fclose(w->f);
    free(w->cpu);
    free(w->z);
    free(w);
    return rc;
  }
  *out = w;
  return 0;
}

static int patch_header(hsi_writer *w) {
  uint8_t v[8];
  int64_t end = to_filetime(w, w->any ? w->max_ts : w->o.start_ticks);
  if (w->o.end_time > end) end = w->o.end_time;
  errno = 0;
  wr64(v, (uint64_t)end);
  if (fseek(w->f, HDR_ENDTIME, SEEK_SET) || fwrite(v, 1, 8, w->f) != 8)
    return io_fail(w, "rewriting EndTime");
  wr32(v, w->nbuf);
  if (fseek(w->f, HDR_BUFFERS, SEEK_SET) || fwrite(v, 1, 4, w->f) != 4)
    return io_fail(w, "rewriting BuffersWritten");
  return 0;
}

int hsi_writer_close(hsi_writer *w) {
  unsigned c, lastc = 0;
  int rc = 0, any = 0;

  if (!w) return 0;
  for (c = 0; c < w->o.cpus; c++)
    if (w->cpu[c].off) { lastc = c; any = 1; }
  if (!w->fatal) {
    for (c = 0; any && c < w->o.cpus && !w->fatal; c++)
      if (w->cpu[c].off) flush_cpu(w, c, w->o.buffer_size + w->cpu[c].off, c == lastc);
    if (!w->fatal) patch_header(w);
  }
  rc = w->fatal;
  errno = 0;
  if (fclose(w->f) && !rc) rc = HS_EIO;
  for (c = 0; c < w->o.cpus; c++) free(w->cpu[c].b);
  free(w->cpu);
  free(w->z);
  free(w);
  return rc;
}

int hsi_writer_mark(hsi_writer *w, int cpu, uint16_t flags) {
  if (cpu < 0 || (uint32_t)cpu >= w->o.cpus)
    return fail(w, HS_EARG, "cpu %d out of range: the trace has %u processors", cpu, (unsigned)w->o.cpus);
  if (flags & ~0x1Eu)
    return fail(w, HS_EARG, "buffer flags 0x%x: only 0x2, 0x4, 0x8 and 0x10 may be set", (unsigned)flags);
  w->cpu[cpu].mark |= flags;
  return 0;
}

const char *hsi_writer_error(const hsi_writer *w) { return w ? w->err : "no writer"; }

uint32_t hsi_writer_buffers(const hsi_writer *w) { return w->nbuf; }

/* ------------------------------------------------------------- records */

static const hsi_hdr_more no_more;

int hsi_writer_kernel(hsi_writer *w, int cpu, int header_kind, int group, int type,
                      int version, uint32_t pid, uint32_t tid, int64_t ts,
                      const void *payload, size_t len) {
  return hsi_writer_kernel_more(w, cpu, header_kind, group, type, version, pid, tid, ts, NULL, payload, len);
}

int hsi_writer_kernel_more(hsi_writer *w, int cpu, int header_kind, int group, int type,
                           int version, uint32_t pid, uint32_t tid, int64_t ts,
                           const hsi_hdr_more *more, const void *payload, size_t len) {
  size_t hl;
  uint8_t *p;
  int rc;

  switch (header_kind) {
  case HS_HT_SYSTEM32: case HS_HT_SYSTEM64: hl = 0x20; break;
  case HS_HT_COMPACT32: case HS_HT_COMPACT64: hl = 0x18; break;
  case HS_HT_PERFINFO32: case HS_HT_PERFINFO64: hl = 0x10; break;
  default: return fail(w, HS_EARG, "header kind 0x%x is not a kernel header", header_kind);
  }
  if (group < 0 || group > 0xFF || type < 0 || type > 0xFF || version < 0 || version > 0xFFFF)
    return fail(w, HS_EARG, "group %d, type %d or version %d out of range", group, type, version);
  if (len > MAXREC || (len && !payload))
    return fail(w, HS_EARG, "payload of %lu bytes is too long or missing", (unsigned long)len);
  if ((rc = reserve(w, cpu, hl + len, ts, &p)) < 0) return rc;
  if (hl == 0x20) {
    system_header(p, header_kind, version, hl + len, group, type, pid, tid, ts, (more ? more : &no_more)->cpu_time);
  } else {
    /* COMPACT drops SYSTEM's processor times; PERFINFO drops the ids too. */
    wr16(p, (uint16_t)version);
    p[2] = (uint8_t)header_kind;
    p[3] = 0xC0;
    wr16(p + 4, (uint16_t)(hl + len));
    p[6] = (uint8_t)type;
    p[7] = (uint8_t)group;
    if (hl == 0x10) {
      wr64(p + 8, (uint64_t)ts);
    } else {
      wr32(p + 8, tid);
      wr32(p + 12, pid);
      wr64(p + 16, (uint64_t)ts);
    }
  }
  if (len) memcpy(p + hl, payload, len);
  return 0;
}

int hsi_writer_event_ext(hsi_writer *w, int cpu, int header_type, const hs_guid *provider,
                         uint16_t id, uint8_t version, uint8_t opcode, uint8_t level,
                         uint16_t task, uint64_t keyword, uint32_t pid, uint32_t tid,
                         int64_t ts, const uint64_t *stack, size_t nframes, int stack_type,
                         const hsi_ext *items, size_t nitems, const hsi_hdr_more *more,
                         const void *payload, size_t len) {
  size_t size = 0x50, fw = stack_type == HS_EXT_STACK_TRACE32 ? 4 : 8, sdata = 0, i;
  uint8_t *p, *q;
  int rc;

  if (header_type != HS_HT_EVENT32 && header_type != HS_HT_EVENT64)
    return fail(w, HS_EARG, "header type 0x%x is not EVENT_HEADER32/64", header_type);
  if (nframes && stack_type != HS_EXT_STACK_TRACE32 && stack_type != HS_EXT_STACK_TRACE64)
    return fail(w, HS_EARG, "stack item type %d is not STACK_TRACE32/64", stack_type);
  if (!provider) return fail(w, HS_EARG, "no provider GUID");
  if (nframes > MAXREC || len > MAXREC || nitems > MAXREC)
    return fail(w, HS_EARG, "event too large");
  if ((len && !payload) || (nframes && !stack) || (nitems && !items))
    return fail(w, HS_EARG, "payload, stack or items missing");
  for (i = 0; i < nitems; i++)
    if (items[i].len && !items[i].data) return fail(w, HS_EARG, "extended item %lu has no data", (unsigned long)i);
  if (nframes) {
    sdata = 8 + nframes * fw;
    if (sdata > 0xFFF0) return fail(w, HS_EARG, "%lu stack frames do not fit an item", (unsigned long)nframes);
    size += ALIGN8(8 + sdata);
  }
  for (i = 0; i < nitems && size <= MAXREC; i++) size += ALIGN8(8 + (size_t)items[i].len);
  size += len;
  if (size > MAXREC) return fail(w, HS_EARG, "an event of %lu bytes or more does not fit a record", (unsigned long)size);
  if ((rc = reserve(w, cpu, size, ts, &p)) < 0) return rc;
  if (!more) more = &no_more;

  wr16(p, (uint16_t)size);
  p[2] = (uint8_t)header_type;
  p[3] = 0xC0;
  /* EXTENDED_INFO says whether items follow: the writer's to set */
  wr16(p + 4, (uint16_t)((more->flags & ~0x1u) | (nframes || nitems ? 0x1u : 0u)));
  wr16(p + 6, more->event_property);
  wr32(p + 8, tid);
  wr32(p + 12, pid);
  wr64(p + 16, (uint64_t)ts);
  put_guid(p + 0x18, provider);
  wr16(p + 0x28, id);
  p[0x2A] = version;
  p[0x2B] = more->channel;
  p[0x2C] = level;
  p[0x2D] = opcode;
  wr16(p + 0x2E, task);
  wr64(p + 0x30, keyword);
  wr64(p + 0x38, more->cpu_time);
  put_guid(p + 0x40, &more->activity_id);

  q = p + 0x50;
  if (nframes) {
    size_t isz = ALIGN8(8 + sdata), k;
    wr16(q, (uint16_t)isz);
    wr16(q + 2, (uint16_t)stack_type);
    wr16(q + 4, nitems ? 1 : 0);       /* linkage: another item follows */
    wr16(q + 6, (uint16_t)sdata);
    wr64(q + 8, 0);                    /* MatchId */
    for (k = 0; k < nframes; k++) put_ptr(q + 16 + k * fw, (int)fw, stack[k]);
    memset(q + 8 + sdata, 0, isz - 8 - sdata);
    q += isz;
  }
  for (i = 0; i < nitems; i++) {
    size_t isz = ALIGN8(8 + (size_t)items[i].len);
    wr16(q, (uint16_t)isz);
    wr16(q + 2, items[i].type);
    wr16(q + 4, i + 1 < nitems ? 1 : 0);
    wr16(q + 6, items[i].len);
    if (items[i].len) memcpy(q + 8, items[i].data, items[i].len);
    memset(q + 8 + items[i].len, 0, isz - 8 - items[i].len);
    q += isz;
  }
  if (len) memcpy(q, payload, len);
  return 0;
}

int hsi_writer_event(hsi_writer *w, int cpu, int header_type, const hs_guid *provider,
                     uint16_t id, uint8_t version, uint8_t opcode, uint8_t level,
                     uint16_t task, uint64_t keyword, uint32_t pid, uint32_t tid,
                     int64_t ts, const void *payload, size_t len,
                     const uint64_t *stack, size_t nframes) {
  int st = header_type == HS_HT_EVENT32 ? HS_EXT_STACK_TRACE32 : HS_EXT_STACK_TRACE64;
  return hsi_writer_event_ext(w, cpu, header_type, provider, id, version, opcode, level, task,
                              keyword, pid, tid, ts, stack, nframes, st, NULL, 0, NULL, payload, len);
}

int hsi_writer_mof(hsi_writer *w, int cpu, int header_type, const hs_guid *guid,
                   uint8_t type, uint16_t version, uint32_t pid, uint32_t tid, int64_t ts,
                   const void *payload, size_t len) {
  if (header_type != HS_HT_FULL32 && header_type != HS_HT_FULL64)
    return fail(w, HS_EARG, "header type 0x%x is not FULL_HEADER32/64", header_type);
  return hsi_writer_mof_more(w, cpu, header_type, guid, type, version, pid, tid, ts, NULL, payload, len);
}

int hsi_writer_mof_more(hsi_writer *w, int cpu, int header_type, const hs_guid *guid,
                        uint8_t type, uint16_t version, uint32_t pid, uint32_t tid, int64_t ts,
                        const hsi_hdr_more *more, const void *payload, size_t len) {
  uint8_t *p;
  size_t hl = header_type == HS_HT_INSTANCE32 || header_type == HS_HT_INSTANCE64 ? 0x48 : 0x30;
  int rc;

  if (!guid) return fail(w, HS_EARG, "no class GUID");
  if (header_type != HS_HT_FULL32 && header_type != HS_HT_FULL64 && hl != 0x48)
    return fail(w, HS_EARG, "header type 0x%x is not FULL_HEADER32/64 or INSTANCE32/64", header_type);
  if (len > MAXREC || (len && !payload))
    return fail(w, HS_EARG, "payload of %lu bytes is too long or missing", (unsigned long)len);
  if ((rc = reserve(w, cpu, hl + len, ts, &p)) < 0) return rc;
  if (!more) more = &no_more;
  wr16(p, (uint16_t)(hl + len));
  p[2] = (uint8_t)header_type;
  p[3] = 0xC0;
  p[4] = type;
  p[5] = more->level;                  /* Class.Level */
  wr16(p + 6, version);
  wr32(p + 8, tid);
  wr32(p + 12, pid);
  wr64(p + 16, (uint64_t)ts);
  put_guid(p + 0x18, guid);
  wr64(p + 0x28, more->cpu_time);
  if (hl == 0x48) {                    /* EVENT_INSTANCE_GUID_HEADER (ETL-FORMAT §3.5) */
    wr32(p + 0x30, more->instance_id);
    wr32(p + 0x34, more->parent_instance_id);
    put_guid(p + 0x38, &more->parent_guid);
  }
  if (len) memcpy(p + hl, payload, len);
  return 0;
}

/* -------------------------------------------------- built-in payloads */

/*
** The payload builders below assemble the bytes in a scratch buffer and
** hand them to hsi_writer_kernel; a record is at most 64 KiB.
*/
static int resolve_ptr(hsi_writer *w, int *ptr) {
  if (!*ptr) *ptr = w->o.pointer_size;
  if (*ptr != 4 && *ptr != 8) return fail(w, HS_EARG, "ptr must be 0, 4 or 8, not %d", *ptr);
  return 0;
}

int hsi_writer_stack(hsi_writer *w, int cpu, int64_t ts, int64_t event_ts, uint32_t pid,
                     uint32_t tid, const uint64_t *frames, size_t n, int ptr) {
  uint8_t *p;
  size_t len, k;
  int rc;

  if ((rc = resolve_ptr(w, &ptr)) < 0) return rc;
  if (n && !frames) return fail(w, HS_EARG, "no frames");
  if (n > (MAXREC - 0x10 - 16) / (size_t)ptr) return fail(w, HS_EARG, "%lu frames are too many", (unsigned long)n);
  len = 16 + n * (size_t)ptr;
  /* Written straight into the buffer: stacks are the bulk of a heap trace. */
  if ((rc = reserve(w, cpu, 0x10 + len, ts, &p)) < 0) return rc;
  wr16(p, 2);
  p[2] = ptr == 8 ? HS_HT_PERFINFO64 : HS_HT_PERFINFO32;
  p[3] = 0xC0;
  wr16(p + 4, (uint16_t)(0x10 + len));
  p[6] = 32;
  p[7] = 0x18;
  wr64(p + 8, (uint64_t)ts);
  wr64(p + 16, (uint64_t)event_ts);
  wr32(p + 24, pid);
  wr32(p + 28, tid);
  for (k = 0; k < n; k++) put_ptr(p + 32 + k * (size_t)ptr, ptr, frames[k]);
  return 0;
}

int hsi_writer_process(hsi_writer *w, int cpu, int opcode, int ptr, uint32_t pid,
                       uint32_t ppid, int64_t ts, const char *image_name,
                       const char *cmdline_utf8) {
  uint8_t *p;
  size_t ilen, clen, len, o;
  int rc, P;

  if ((rc = resolve_ptr(w, &ptr)) < 0) return rc;
  if (opcode < 1 || opcode > 4) return fail(w, HS_EARG, "process opcode %d is not 1-4", opcode);
  P = ptr;
  image_name = image_name ? image_name : "";
  ilen = strlen(image_name) + 1;
  clen = put_wstr(NULL, cmdline_utf8);
  if (ilen > MAXREC || clen > MAXREC) return fail(w, HS_EARG, "process strings too long");
  len = 2 * (size_t)P + 24 + ilen + clen + 4;
  if (!(p = calloc(1, len))) return fail(w, HS_ENOMEM, "out of memory");
  /* UniqueProcessKey and DirectoryTableBase: plausible, distinct per pid. */
  put_ptr(p, P, P == 8 ? 0xFFFFA00000000000u | (uint64_t)pid << 8 : 0x80000000u | (pid << 4 & 0x7FFFFFF0u));
  wr32(p + P, pid);
  wr32(p + P + 4, ppid);
  wr32(p + P + 8, 1);                   /* SessionId */
  wr32(p + P + 12, opcode == 2 || opcode == 4 ? 0 : 0x103); /* STATUS_PENDING while running */
  put_ptr(p + P + 16, P, (uint64_t)pid << 12);
  wr32(p + 2 * P + 16, 0);              /* Flags */
  wr32(p + 2 * P + 20, 0);              /* empty UserSID */
  o = 2 * (size_t)P + 24;
  memcpy(p + o, image_name, ilen);
  o += ilen;
  put_wstr(p + o, cmdline_utf8);
  /* PackageFullName and ApplicationId: empty, already zero. */
  rc = hsi_writer_kernel(w, cpu, P == 8 ? HS_HT_SYSTEM64 : HS_HT_SYSTEM32, 0x03, opcode, 4,
                         opcode == 1 ? ppid : pid, 0, ts, p, len);
  free(p);
  return rc;
}

int hsi_writer_thread(hsi_writer *w, int cpu, int opcode, int ptr, uint32_t pid,
                      uint32_t tid, uint64_t start_addr, int64_t ts) {
  uint8_t p[16 + 7 * 8];
  uint64_t affinity;
  int rc, P;

  if ((rc = resolve_ptr(w, &ptr)) < 0) return rc;
  if (opcode < 1 || opcode > 4) return fail(w, HS_EARG, "thread opcode %d is not 1-4", opcode);
  P = ptr;
  affinity = w->o.cpus >= 64 ? ~(uint64_t)0 : ((uint64_t)1 << w->o.cpus) - 1;
  memset(p, 0, sizeof p);
  wr32(p, pid);
  wr32(p + 4, tid);
  /* StackBase, StackLimit, UserStackBase, UserStackLimit stay 0. */
  put_ptr(p + 8 + 4 * P, P, affinity);
  put_ptr(p + 8 + 5 * P, P, start_addr);  /* Win32StartAddr */
  /* TebBase, SubProcessTag 0. */
  p[12 + 7 * P] = 8;                       /* BasePriority */
  p[13 + 7 * P] = 5;                       /* PagePriority */
  p[14 + 7 * P] = 2;                       /* IoPriority */
  return hsi_writer_kernel(w, cpu, P == 8 ? HS_HT_SYSTEM64 : HS_HT_SYSTEM32, 0x05, opcode, 3,
                           pid, tid, ts, p, 16 + 7 * (size_t)P);
}

int hsi_writer_image(hsi_writer *w, int cpu, int opcode, int ptr, uint32_t pid,
                     uint64_t base, uint64_t size, int64_t ts, const char *nt_path_utf8) {
  return hsi_writer_image_id(w, cpu, opcode, ptr, pid, base, size, ts, nt_path_utf8, 0, 0);
}

int hsi_writer_image_id(hsi_writer *w, int cpu, int opcode, int ptr, uint32_t pid, uint64_t base,
                        uint64_t size, int64_t ts, const char *nt_path_utf8, uint32_t checksum,
                        uint32_t time_date_stamp) {
  uint8_t *p;
  size_t flen, len;
  int rc, P, group;

  if ((rc = resolve_ptr(w, &ptr)) < 0) return rc;
  /* Load is hooked under the Process group (0x030A), the rest under Image. */
  if (opcode == 10) group = 0x03;
  else if (opcode >= 2 && opcode <= 4) group = 0x14;
  else return fail(w, HS_EARG, "image opcode %d is not 10, 2, 3 or 4", opcode);
  P = ptr;
  flen = put_wstr(NULL, nt_path_utf8);
  if (flen > MAXREC) return fail(w, HS_EARG, "image path too long");
  len = 3 * (size_t)P + 32 + flen;
  if (!(p = calloc(1, len))) return fail(w, HS_ENOMEM, "out of memory");
  put_ptr(p, P, base);
  put_ptr(p + P, P, size);
  wr32(p + 2 * P, pid);
  wr32(p + 2 * P + 4, checksum);
  wr32(p + 2 * P + 8, time_date_stamp);  /* then the signature bytes: 0 */
  put_ptr(p + 2 * P + 16, P, base);     /* DefaultBase */
  put_wstr(p + 3 * P + 32, nt_path_utf8);
  rc = hsi_writer_kernel(w, cpu, P == 8 ? HS_HT_SYSTEM64 : HS_HT_SYSTEM32, group, opcode, 3,
                         pid, 0, ts, p, len);
  free(p);
  return rc;
}
