/*
** etl.c -- the .etl container: buffers, end of data, compression, the
** logfile header, per-CPU streams and the merge into one time-ordered
** stream of records (ETL-FORMAT §0-§2, §1.8).
**
** Opening indexes every buffer header (cheap: one read per buffer).  Then
** each (file, CPU) pair is a stream walking its buffers in file order;
** a tournament (loser) tree merges the streams by timestamp, ties by CPU
** then file position.
**
** A stream decodes ahead into chunks of events (a ring of NCHUNK per
** stream): on worker threads when there are cores for them, else by the
** walk itself when it needs the next chunk -- the same code either way.
** The merge, on the caller's thread, only compares keys and copies
** events out.  What decoding finds besides events (damage, the end of a
** buffer whose pages can be given back) is written into the chunk as a
** note at its place and acted on when the walk reaches that place, so
** damage is reported in the same order, on the caller's thread, with or
** without workers.  Compressed buffers are inflated into the stream's
** scratch slots; a slot is reused only when no chunk pointing into it is
** left, so an event stays a view into memory the reader owns until the
** next call.
*/
#include <stdio.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "heapscript.h"
#include "bytes.h"
#include "record.h"
#include "mapfile.h"
#include "source.h"
#include "satmath.h"
#include "thread.h"

#define BUFHDR 0x48u
#define LINEAR_MAX 8                /* streams merged by a scan, not a tournament */
#define MAX_BUFFER (16u << 20)      /* Win8+ maximum buffer size [D: ntwmi] */
#define MAX_DAMAGE_SCAN (64u << 20) /* how far to look for the next buffer after damage */
#define RELEASE_STEP (16u << 20)    /* indexing gives back mapped pages this often */
#define CHUNK_EVENTS 1024           /* events decoded ahead per chunk, at most; */
#define CHUNK_STREAM_EVENTS 16384   /* over many streams, a chunk of each holds */
#define CHUNK_MIN 128               /* this many together, but not fewer than this */
#define NCHUNK 8                    /* chunks per stream (and scratch slots) */
#define MAX_NOTES 8                 /* notes per chunk; a full chunk closes early */
#define MAX_CBUFS (MAX_NOTES + 2)   /* buffers per chunk: a chunk ends with a read or
                                       inflated buffer and after MAX_NOTES mapped ones */
#define READ_MAX (1u << 20)          /* buffers up to this size are read, not mapped, */
#define READ_BUDGET (16u << 20)      /* when streams x NCHUNK slots of them fit in this */
#define NAHEAD 3                    /* compressed buffers a stream inflates ahead */
#define SPIN 2000                   /* polls of a chunk's flag before sleeping */
#define WHOLE_MAX HSI_THREADS_MIN_BYTES  /* a smaller trace is read whole at open: one read
                                        a file, not one per buffer and per buffer header */
/* A buffer whose view cannot be read (mapfile.h hsi_map_check): the file
   no longer holds it (cut short after it was opened), or the device
   failed to read a page of it. */
#define CUT_SHORT "a buffer the file still holds (the file was cut short after it was opened)"
#define DEVICE_LOST "a buffer the device can read (a page of it could not be read: a disk or network error)"
#define INFLATE_CUT (LONG_MIN + 1)   /* inflate: the file no longer holds the buffer */
#define INFLATE_LOST (LONG_MIN + 2)  /* inflate: the device could not read it */

typedef struct bufinfo {
  uint64_t pos;       /* file offset */
  uint32_t size;      /* stored size (compressed size if compressed) */
  uint32_t end;       /* end of data in the (inflated) buffer */
  uint32_t start;     /* first record (0x48; SavedOffset for the buffer-0 tail) */
  uint32_t index;     /* buffer index in the file */
  uint16_t cpu;
  uint8_t compressed;
  uint8_t truncated;  /* stored bytes cut by the end of the file */
  uint8_t lost;       /* BufferFlag's lost bits (0x2 EVENTS_LOST, 0x4 BUFFER_LOST) */
} bufinfo;

typedef struct etlfile {
  char *path;
  hsi_map map;         /* closed (zeros) when the file was read whole: own */
  uint8_t *own;        /* the file's bytes, for one read at open (WHOLE_MAX) */
  const uint8_t *data;
  uint64_t size;
  hs_logfile lf;
  hs_file_stats st;
  bufinfo *bufs;
  uint32_t nbufs, capbufs;
  int file_ptr;
  uint32_t lf_payload;        /* the logfile header payload's offset in buffer 0 (parse_logfile) */
  /* What indexing found, for a rewind to start from and a reopen to take
     instead of indexing again (one read of each buffer's header: 9 ms for
     11,000 buffers): the buffers it listed, buffer 0's end before its
     tail was split off, the counters it set (buffers_damaged among them),
     and the damage it reported. */
  uint32_t nidx, end0;
  /* The ticks a record of the file may have (ts_ok): from an hour before
     its header to an hour after its end (a year after its header when the
     session was never stopped, or the file appended to).  Outside, its
     timestamp is damage. */
  int64_t ts_lo;
  uint64_t ts_span;
  hs_file_stats ist;
  struct idamage { uint64_t pos; uint32_t buffer; char what[HS_ERRLEN]; } *idmg;
  uint32_t nidmg, capidmg;
} etlfile;

typedef struct etlreader etlreader;
static void etl_close(void *impl);

#define TS_SLACK_S 3600                 /* seconds a record may lie outside its file's span */

static void ts_bounds(etlfile *f) {
  const hs_logfile *lf = &f->lf;
  int64_t lo = INT64_MIN, hi = INT64_MAX;
  /* bounds only from a start and a rate the header gives (not a rate the
     clock falls back to: a damaged or zero frequency would misplace them) */
  int rate = lf->clock_type == 2 || (lf->clock_type == 3 ? lf->cpu_mhz > 0 : lf->perf_freq > 0);
  if (lf->start_time > 0 && rate) {
    /* a file appended to (EVENT_TRACE_FILE_MODE_APPEND, 0x4) holds later
       sessions whose records its header's end need not cover */
    int ended = lf->end_time > lf->start_time && !(lf->log_file_mode & 0x4);
    lo = hs_time_from_filetime(lf, hsi_add_sat(lf->start_time, -(int64_t)TS_SLACK_S * 10000000));
    hi = hs_time_from_filetime(lf, ended ? hsi_add_sat(lf->end_time, (int64_t)TS_SLACK_S * 10000000)
                                         : hsi_add_sat(lf->start_time, (int64_t)366 * 86400 * 10000000));
    if (hi < lo) { lo = INT64_MIN; hi = INT64_MAX; }
  }
  f->ts_lo = lo;
  f->ts_span = (uint64_t)hi - (uint64_t)lo;
}

/* Is ts one the file's records may have (ts_bounds)? */
static inline int ts_ok(const etlfile *f, int64_t ts) { return (uint64_t)ts - (uint64_t)f->ts_lo <= f->ts_span; }

#define TS_DAMAGE "a record timestamped within an hour of its file's span"


/* Damage decoding found, reported by the walk before event `at` of its
   chunk (at == n: after the last). */
typedef struct note {
  uint32_t at;
  uint8_t records, buffers;   /* counters to bump */
  uint32_t buffer;            /* buffer index */
  uint64_t pos;               /* file offset */
  char what[200];
} note;

/* A chunk holds its records checked, not decoded events: the decoder
   checks each as hsi_record_decode would and keeps, for a kernel, an
   EVENT_HEADER or a classic header (most records), the 32 bytes that make
   its hs_event with the header's own bytes (hsi_krec), else only its place
   (ht 0: decoded again when handed out).  The walk makes the event it
   hands out straight in the caller's struct, so few bytes cross from the
   decoding core: not a whole hs_event written there and copied here, nor a
   kernel record's bytes. */
typedef struct chunk {
  hsi_krec rec[CHUNK_EVENTS];
  int64_t key[CHUNK_EVENTS];  /* merge keys, packed for the merge */
  uint8_t cb[CHUNK_EVENTS];   /* its buffer: bufs[cb] at base[cb] */
  const bufinfo *bufs[MAX_CBUFS];
  const uint8_t *base[MAX_CBUFS];
  uint32_t nbufs;
  uint32_t n, nnotes;
  int last;                   /* the stream ends after this chunk */
  int scr;                    /* scratch slot its events point into, or -1 */
  note notes[MAX_NOTES];
  /* buffers that ended in this chunk: their mapped pages are given back
     when the chunk is filled again (the walk is past them by then) */
  uint32_t nrel;
  uint32_t rel_size[MAX_NOTES];
  uint64_t rel_pos[MAX_NOTES];
} chunk;

/* A compressed buffer of a stream inflated ahead: its index in the
   stream's bufs (-1: the slot is free), whether a thread is inflating it
   (outside the lock), its bytes as a scratch slot would hold them, the
   compressed bytes read for it, and what inflating gave. */
typedef struct ahead {
  int buf, busy;
  uint8_t *out, *in;
  size_t outcap, incap;
  long n;
} ahead;

/* The threads that decode a stream and the walk that reads it write
   different fields; a pad of a cache line between the groups keeps each
   group off the others' lines (the streams sit side by side in one
   array): measured, a 40-byte change of the struct's size moved the pass
   by 8% until the groups were kept apart. */
#define PAD(n) char n[HSI_LINE]
typedef struct stream {
  /* set when the trace is opened */
  int file;
  int tail;            /* the buffer-0 tail: loses ties, deduplicated */
  uint16_t cpu;
  uint32_t *bufs;      /* indices into the file's bufinfo, in walk order */
  uint32_t nbufs;
  uint64_t tie;        /* tail << 32 | cpu << 16 | file: see less() */
  hs_event tmpl;       /* what every event of the stream has: cpu, file, tail flag */
  chunk *ch;           /* NCHUNK */
  hs_file_stats *st;   /* of its file */
  PAD(pad0);
  /* the decoding side (its worker, or the walk without workers) */
  uint32_t next_buf;
  const uint8_t *base; /* the current buffer (mapped or inflated) */
  const bufinfo *cur;
  uint32_t pos;
  int cur_scr;         /* scratch slot of the current buffer, -1: mapped */
  int cur_read;        /* the current buffer was read (or inflated from bytes read):
                          no pages of the mapping to give back after it */
  int64_t last_key;    /* the latest key of its buffers so far (INT64_MIN: none) */
  uint8_t *scratch[NCHUNK];
  size_t scratch_cap[NCHUNK];
  uint8_t *zin;        /* a compressed buffer's bytes, read to inflate */
  size_t zin_cap;
  int wslot;           /* next chunk to fill */
  unsigned fresh;      /* chunks not filled since the rewind (bit k: ch[k]): the
                          buffers their last filling ended belong to no walk */
  int wdone;           /* decoded to the end */
  int busy;            /* a thread is filling its chunk wslot (under the lock) */
  PAD(pad1);
  /* both sides, under the reader's lock when there are workers */
  int filled[NCHUNK];  /* decoded and not yet walked through */
  int rslot;           /* chunk being walked, -1: none */
  PAD(pad2);
  /* the walking side */
  int nslot;           /* next chunk to walk */
  uint32_t i, ni;      /* its event at the head, its next note */
  uint32_t lim;        /* events below it need no settle() */
  const int64_t *keys; /* of the chunk walked */
  int ended;
  PAD(pad3);
  /* Compressed buffers inflated ahead, off the filling thread, by a
     thread that would otherwise wait (ahead_of).  Under the reader's lock. */
  ahead ah[NAHEAD];
} stream;

struct etlreader {
  etlfile *files;
  int nfiles;
  stream *streams;
  int nstreams;
  /* the merge: per stream its head's key and tie (packed, what the
     tournament compares), the losers of the internal nodes, the winner */
  int64_t *mkey;
  uint64_t *mtie;
  int *loser;
  int winner, live;
  int64_t bound;        /* the winner stays while its key is below this (set_bound) */
  int lv[LINEAR_MAX], nlv;  /* the streams not ended, when they are few */
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
  /* decoding workers; nworkers 0: the walk decodes */
  int nworkers;
  int primed;            /* the walk has begun since the last rewind (prime) */
  int want;              /* the workers the rewind chose, started by prime */
  int beside;            /* threads the caller keeps busy beside the walk (source.h) */
  int shared;            /* chunks may be decoded off the walk's thread (workers, helpers):
                            the ring of chunks and its lock are in use */
  hsi_thread *workers;
  uint32_t read_max;     /* buffers up to this size are read into scratch slots */
  uint32_t chunk_max;    /* events a chunk holds at most */
  /* The lock and what it guards, which the workers and a helper (the
     pass's analysis thread when it waits) write, kept off the lines of the
     merge's fields above, which the walk writes for every event (the
     reader itself starts a line: add_stream) */
  PAD(padm);
  hsi_mutex mx;
  hsi_cond work, ready;  /* a chunk was given back / was filled */
  int stop;              /* workers: leave */
  int waiting;           /* the stream the walk waits for, -1 */
  int help;              /* where the walk or a helper looks first for a chunk to decode */
  int nsleep;            /* workers waiting for work */
  PAD(padn);
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

/* Damage indexing found: reported, and kept for a reopen to report. */
static int index_damage(etlreader *r, int fi, uint64_t pos, uint32_t buffer, const char *what,
                        char *err, size_t errlen) {
  etlfile *f = &r->files[fi];
  struct idamage *d;
  damage(r, fi, pos, buffer, what);
  if (f->nidmg == f->capidmg) {
    uint32_t cap = f->capidmg ? f->capidmg * 2 : 8;
    if (!(d = (struct idamage *)realloc(f->idmg, cap * sizeof *d))) {
      snprintf(err, errlen, "%s: out of memory", f->path);
      return HS_ENOMEM;
    }
    f->idmg = d;
    f->capidmg = cap;
  }
  d = &f->idmg[f->nidmg++];
  d->pos = pos;
  d->buffer = buffer;
  snprintf(d->what, sizeof d->what, "%s", what);
  return 0;
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
  f->lf_payload = (uint32_t)(p - b);
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
  memcpy(lf->time_zone, p + s, sizeof lf->time_zone);
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

/*
** Fields of the logfile header no trace has (ETL-FORMAT.md §2): each is
** damage at its offset, and the reading goes on with what the rest of
** the file says -- the pointer size its header record's type gives, 10
** MHz for a QPC clock of no frequency -- so that one bad field neither
** passes silently nor loses the trace.  `payload` is the header record's
** payload's offset in buffer 0.
*/
static int check_logfile(etlreader *r, int fi, uint32_t payload, int say, char *err, size_t errlen) {
  etlfile *f = &r->files[fi];
  hs_logfile *lf = &f->lf;
  uint32_t tz = payload + (f->file_ptr == 4 ? 0x40 : 0x48), clk = tz + 0xB0;
  char msg[200];
  int rc, bad = 0;
  int64_t away;
#define SAY(at) do { if (say && (rc = index_damage(r, fi, (at), 0, msg, err, errlen)) != 0) return rc; bad = 1; } while (0)
  if (lf->pointer_size != (uint32_t)f->file_ptr) {
    snprintf(msg, sizeof msg, "PointerSize %d, as the header record's type says, found %u (read as %d)",
             f->file_ptr, lf->pointer_size, f->file_ptr);
    SAY(payload + 0x2C);
    lf->pointer_size = (uint32_t)f->file_ptr;
  }
  if (lf->cpus == 0 || lf->cpus > 2048) {
    snprintf(msg, sizeof msg, "NumberOfProcessors 1..2048, found %u", lf->cpus);
    SAY(payload + 0x0C);
  }
  if (lf->clock_type < 1 || lf->clock_type > 3) {
    snprintf(msg, sizeof msg, "ClockType 1 (QPC), 2 (system time) or 3 (CPU cycles), found %u (read as QPC)",
             lf->clock_type);
    SAY(clk + 24);
  }
  /* with system time the header record is stamped StartTime itself (9 of 9
     files, ETL-FORMAT.md §2); ten years from it is another clock's count
     (QPC ticks since boot), and every record would fall outside the span;
     a StartTime of 0 (a session that never set it) is that stamp */
  if (lf->clock_type == 2 && lf->start_time == 0) lf->start_time = lf->header_ts;
  away = hsi_sub_sat(lf->header_ts, lf->start_time);
  if (lf->clock_type == 2 && lf->perf_freq > 0 && (away > 3155760000000000LL || away < -3155760000000000LL)) {
    snprintf(msg, sizeof msg, "ClockType 2 (system time) with the header record stamped at StartTime, found it "
             "%lld ticks away (read as QPC at PerfFreq)", (long long)away);
    SAY(clk + 24);
    lf->clock_type = 1;
  }
  if (lf->clock_type == 3 ? lf->cpu_mhz == 0 : lf->clock_type != 2 && lf->perf_freq <= 0) {
    if (lf->clock_type == 3) snprintf(msg, sizeof msg, "CpuSpeedInMHz above 0 for the cycle clock, found 0 (times read at 10 MHz)");
    else snprintf(msg, sizeof msg, "PerfFreq above 0 for its clock, found %lld (times read at 10 MHz)", (long long)lf->perf_freq);
    SAY(lf->clock_type == 3 ? payload + 0x34 : clk + 8);
  }
#undef SAY
  if (bad && say) {        /* buffer 0 is damaged: counted, and kept for a rewind and a reopen */
    f->st.buffers_damaged++;
    f->ist.buffers_damaged++;
  }
  return 0;
}

/* --------------------------------------------------------- the index */

/* Where an uncompressed buffer's data ends: at Offset, or where Offset
   is 0 or past BufferSize, at SavedOffset if that is sane, else at
   BufferSize (ETL-FORMAT.md 1.5); *fallback NULL when Offset was used,
   else the name of the field used. */
static uint32_t data_end(const uint8_t *b, const char **fallback) {
  uint32_t size = rd32(b), saved = rd32(b + 4), off = rd32(b + 0x30);
  *fallback = NULL;
  if (off >= BUFHDR && off <= size) return off;
  if (saved >= BUFHDR && saved <= size) { *fallback = "SavedOffset"; return saved; }
  *fallback = "BufferSize";
  return size;
}

/* A buffer header that could be real.  b holds avail bytes, at least
   BUFHDR; the first record's flags byte is looked at only where the
   buffer's data holds it (data of 1 to 3 bytes holds no record).  At
   offset 0 and to find the next buffer after damage (strict) Offset must
   be inside the buffer; where the buffers before lead to it, a damaged
   Offset is reported and the data ends as data_end says. */
static int plausible_as(const uint8_t *b, uint64_t avail, int strict) {
  uint32_t size = rd32(b), end;
  uint16_t flag = rd16(b + 0x34), type = rd16(b + 0x36);
  const char *fallback;
  if (size < BUFHDR || size > MAX_BUFFER || type > 7 || (flag & 0xFF80)) return 0;
  if (flag & 0x40) return 1;
  end = data_end(b, &fallback);
  if (strict && fallback) return 0;
  if (end > BUFHDR && size <= avail && (end < BUFHDR + 4 || (b[BUFHDR + 3] & 0x80) == 0)) return 0;
  return 1;
}

static int plausible(const uint8_t *b, uint64_t avail) { return plausible_as(b, avail, 1); }

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

/*
** Where the next buffer starts after damage at pos: first at the multiples
** of the in-memory buffer size (uncompressed files are laid out so), then
** at any position (relogged files store buffers of any length).  *aligned
** (0 at the first damage of a file) is where the last scan of multiples
** stopped: every multiple between its start and there failed, and damage
** is met in file order, so a later scan starts there rather than look at
** them again.  (Each damage looking at every multiple up to 64 MiB ahead
** made a damaged file quadratic: 16 MB of short buffers took 3 s.)  The
** byte scan ends where the next one begins, so it is linear as it is.
*/
static uint64_t resync(const uint8_t *d, uint64_t size, uint64_t pos, uint32_t bufsize,
                       uint64_t *aligned) {
  uint64_t p, lim = pos + MAX_DAMAGE_SCAN;
  if (bufsize >= BUFHDR && bufsize <= MAX_BUFFER) {
    p = (pos / bufsize + 1) * bufsize;
    if (p < *aligned) p = *aligned;
    for (; p + BUFHDR <= size && p < lim; p += bufsize)
      if (resync_ok(d + p, size - p)) { *aligned = p; return p; }
    *aligned = p;
  }
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

/* The offset of the logfile header record's payload in buffer 0 d, from
   its header type (SYSTEM32/64: 0x20 bytes; else 0x10), before
   parse_logfile has checked it (the index needs its BufferSize, its
   BuffersWritten and its LogFileMode first). */
static uint32_t lf_payload_at(const uint8_t *d) { return BUFHDR + (d[BUFHDR + 2] <= 2 ? 0x20 : 0x10); }

/* Does the buffer at b (avail bytes there) start with a logfile header
   record (SYSTEM header, group 0, type 0), as buffer 0 does? */
static int starts_logfile(const uint8_t *b, uint64_t avail) {
  hs_event ev;
  uint32_t next, end = rd32(b + 0x30);
  const char *why;
  if (avail < BUFHDR + 8 || end > avail || end <= BUFHDR) return 0;
  return hsi_record_decode(b, BUFHDR, end, 8, &ev, &next, &why) == 1
         && (ev.header_type == HS_HT_SYSTEM32 || ev.header_type == HS_HT_SYSTEM64) && ev.hook == 0;
}

static int index_file(etlreader *r, int fi, char *err, size_t errlen) {
  etlfile *f = &r->files[fi];
  uint64_t pos = 0, released = 0, aligned = 0;
  uint32_t idx = 0, lbs;
  const uint8_t *d = f->data;
  char msg[160];
  int rc;

  if (f->size == 0) {
    snprintf(err, errlen, "%s: offset 0x0: not an ETL file: the file is empty (0 bytes)", f->path);
    return HS_EFORMAT;
  }
  if (f->size < BUFHDR + 8 || !plausible(d, f->size) || rd32(d) > f->size) {
    snprintf(err, errlen, "%s: offset 0x0: not an ETL file: expected a buffer header with "
             "BufferSize 0x48..0x%x fitting the file (%llu bytes), found BufferSize 0x%x",
             f->path, MAX_BUFFER, (unsigned long long)f->size, f->size >= 4 ? rd32(d) : 0);
    return HS_EFORMAT;
  }
  /* the logfile header's BufferSize: the first payload word of the record at
     0x48 in buffer 0 (checked sound above) */
  lbs = rd32(d + lf_payload_at(d));
  while (pos < f->size) {
    const uint8_t *b = d + pos;
    uint64_t avail = f->size - pos;
    uint8_t hdr[BUFHDR + 8], fixed[BUFHDR];
    bufinfo bi;
    /* Read the header (and the first record's flags, see plausible) with
       read(2): touching the mapping would fault in and later release a
       run of pages per buffer, several times the cost. */
    if (avail >= sizeof hdr && hsi_map_read(&f->map, pos, hdr, sizeof hdr) == 0) b = hdr;
    uint32_t size, saved, off;
    uint16_t flag;
    if (avail < BUFHDR || !plausible_as(b, avail, 0)) {
      /* Damaged framing: skip to the next buffer that is sound. */
      uint64_t scan;
      snprintf(msg, sizeof msg, avail < BUFHDR ? "a buffer header of 0x48 bytes (file ends)"
               : "a buffer header (BufferSize 0x48..16 MiB, known type and flags)");
      if ((rc = index_damage(r, fi, pos, idx, msg, err, errlen)) != 0) return rc;
      f->st.buffers_damaged++;
      scan = resync(d, f->size, pos, lbs, &aligned);
      if (scan >= f->size) { f->st.bytes_trailing = f->size - pos; break; }
      pos = scan;
      idx++;
      continue;
    }
    size = rd32(b);
    saved = rd32(b + 4);
    off = rd32(b + 0x30);
    flag = rd16(b + 0x34);
    if (idx > 0 && rd16(b + 0x36) == 4 && starts_logfile(d + pos, avail)) {
      /* a header buffer (BufferType 4: buffer 0's alone, 82 of 82 files) that
         starts with a logfile header record: a second trace starts here, on its
         own clock (two files joined with cat); read as this one's, its times
         would be wrong.  Left out.  (A BufferType alone damaged is no header.) */
      if ((rc = index_damage(r, fi, pos, idx, "no second header buffer (BufferType 4): another trace starts here "
                             "(files joined into one?); the rest of the file is left out", err, errlen)) != 0)
        return rc;
      f->st.buffers_damaged++;
      f->st.bytes_trailing = f->size - pos;
      break;
    }
    if (idx > 0 && !(flag & 0x40) && size > lbs && lbs >= BUFHDR && lbs <= MAX_BUFFER && lbs <= avail
        && off <= lbs && plausible_as(b, lbs, 0)) {
      /* an uncompressed data buffer is the file's BufferSize (1,408 of 1,408 in
         the corpus; buffer 0 and compressed ones are not): one larger is
         damaged, and stepping by it would swallow sound buffers after it (one
         smaller lands inside its own data, where the resync says so) */
      snprintf(msg, sizeof msg, "BufferSize 0x%x as the logfile header's, found 0x%x (read as 0x%x)", lbs, size, lbs);
      if ((rc = index_damage(r, fi, pos, idx, msg, err, errlen)) != 0) return rc;
      f->st.buffers_damaged++;
      size = lbs;
      memcpy(fixed, b, BUFHDR);
      wr32(fixed, lbs);
      b = fixed;
    }
    memset(&bi, 0, sizeof bi);
    bi.pos = pos;
    bi.index = idx;
    bi.size = size;
    bi.start = BUFHDR;
    bi.cpu = (flag & 0x20) ? rd16(b + 0x28) & 0x7FF : b[0x28];   /* ProcessorIndex: 11 bits [D: ntwmi] */
    bi.compressed = (flag & 0x40) != 0;
    if (size > avail) {
      bi.truncated = 1;
      bi.size = (uint32_t)avail;
      rc = index_damage(r, fi, pos, idx, "a whole buffer (the file ends inside it)", err, errlen);
      if (rc) return rc;
      f->st.buffers_damaged++;
    }
    if (bi.compressed) {
      bi.end = saved;
      if (saved <= BUFHDR || saved > MAX_BUFFER) {
        rc = index_damage(r, fi, pos, idx, "a compressed buffer with SavedOffset 0x49..16 MiB", err, errlen);
        if (rc) return rc;
        f->st.buffers_damaged++;
        bi.end = 0;
      } else if (idx > 0 && off != saved && off > BUFHDR && off <= MAX_BUFFER) {
        /* the two are one in every compressed buffer (ETL-FORMAT.md §1.7): one of
           them is damaged.  The stream is inflated to SavedOffset, the
           documented length, with a byte of room more (inflate): a SavedOffset
           lowered fails its length check there */
        snprintf(msg, sizeof msg, "SavedOffset (0x04) equal to Offset (0x30) in a compressed buffer, found 0x%x "
                 "and 0x%x (inflated to SavedOffset)", saved, off);
        if ((rc = index_damage(r, fi, pos, idx, msg, err, errlen)) != 0) return rc;
        f->st.buffers_damaged++;
      }
      f->st.buffers_compressed++;
    } else {
      const char *fallback;
      bi.end = data_end(b, &fallback);
      if (fallback) {
        snprintf(msg, sizeof msg, "an Offset (0x30) of 0x48..0x%x, found 0x%x (its records are read up to %s 0x%x)",
                 size, off, fallback, bi.end);
        if ((rc = index_damage(r, fi, pos, idx, msg, err, errlen)) != 0) return rc;
        f->st.buffers_damaged++;
      } else if (idx > 0 && saved != off && saved > BUFHDR && saved <= size) {
        /* a data buffer's Offset and SavedOffset are one (1,400 of 1,400 in the
           corpus; buffer 0 has its own cases, §1.6): records to the larger */
        bi.end = off > saved ? off : saved;
        snprintf(msg, sizeof msg, "Offset (0x30) equal to SavedOffset (0x04), found 0x%x and 0x%x (its records "
                 "are read up to 0x%x)", off, saved, bi.end);
        if ((rc = index_damage(r, fi, pos, idx, msg, err, errlen)) != 0) return rc;
        f->st.buffers_damaged++;
      }
      if (bi.end > bi.size) bi.end = bi.size;
    }
    bi.lost = (uint8_t)(flag & 0x6);
    if (bi.lost) f->st.buffers_lost_flag++;
    if (bi.end > 0 || !bi.compressed) {
      if ((rc = add_buf(f, &bi)) != 0) { snprintf(err, errlen, "%s: out of memory", f->path); return rc; }
    }
    f->st.buffers++;
    pos += size;
    idx++;
    if (pos - released >= RELEASE_STEP) {    /* keep the resident size of indexing flat */
      hsi_map_release(&f->map, released, pos - released);
      released = pos;
    }
  }
  {
    /* A file cut at a buffer's end reads as whole: its header says how
       many buffers were written (BuffersWritten, 0x24 of the logfile
       header's payload; LogFileMode at 0x20).  Fewer here is a file cut
       short -- but not in a circular, appended or new-file (0x8: one of a
       series) file, whose count may be the session's, and a count below
       the buffers here is known to occur (ETL-FORMAT.md §7). */
    uint64_t at = lf_payload_at(d);
    if (f->nidmg == 0 && at + 0x28 <= f->size && at + 0x28 <= rd32(d)) {
      uint32_t mode = rd32(d + at + 0x20), written = rd32(d + at + 0x24);
      if (!(mode & (HS_LOGMODE_CIRCULAR | HS_LOGMODE_APPEND | HS_LOGMODE_NEWFILE)) && written > idx) {
        snprintf(msg, sizeof msg, "%u more buffer%s: the header says %u were written, the file ends after %u",
                 written - idx, written - idx == 1 ? "" : "s", written, idx);
        if ((rc = index_damage(r, fi, f->size, idx, msg, err, errlen)) != 0) return rc;
        f->st.buffers_damaged++;
      }
    }
  }
  return 0;
}

/* -------------------------------------------------------------- streams */

/* Order of stream heads: timestamp, then the buffer-0 tail last, then
   CPU, then file.  No two streams share (tail, cpu, file), so `tie`,
   computed once per stream, settles every tie; a stream that ended has
   TIE_ENDED in its tie and loses to every other. */
#define TIE_ENDED ((uint64_t)1 << 40)

static inline int less(const etlreader *r, int a, int b) {
  return r->mkey[a] < r->mkey[b] || (r->mkey[a] == r->mkey[b] && r->mtie[a] < r->mtie[b]);
}

/* The tournament over n streams: leaves n..2n-1, node i plays 2i and
   2i+1 and keeps the loser; the winner comes out. */
static int play(etlreader *r, int i) {
  int a, b;
  if (i >= r->nstreams) return i - r->nstreams;
  a = play(r, 2 * i);
  b = play(r, 2 * i + 1);
  if (less(r, b, a)) { r->loser[i] = a; return b; }
  r->loser[i] = b;
  return a;
}

/* The lesser of streams a and b by (key, tie); no two live streams tie.
   Equal keys are rare (a branch that is predicted), so the tie is looked
   at only then; the key comparison itself is a select. */
static inline int lesser(const etlreader *r, int a, int b) {
  int64_t ka = r->mkey[a], kb = r->mkey[b];
#if defined(__GNUC__) || defined(__clang__)
  if (__builtin_expect(ka == kb, 0)) return r->mtie[b] < r->mtie[a] ? b : a;
#else
  if (ka == kb) return r->mtie[b] < r->mtie[a] ? b : a;
#endif
  return kb < ka ? b : a;
}

/* With few streams (one a CPU of a small machine) the least head is
   found by looking at each, without branches: the heads of CPU streams
   interleave at random, so the tournament's comparisons mispredict. */
static inline int least(const etlreader *r) {
  const int *lv = r->lv;
  int w, i;
  switch (r->nlv) {            /* the usual machines: pairs, no loop */
    case 0: case 1: return lv[0];
    case 2: return lesser(r, lv[0], lv[1]);
    case 3: return lesser(r, lesser(r, lv[0], lv[1]), lv[2]);
    case 4: return lesser(r, lesser(r, lv[0], lv[1]), lesser(r, lv[2], lv[3]));   /* as below, no loop */
    default:
      w = lesser(r, lesser(r, lv[0], lv[1]), lesser(r, lv[2], lv[3]));
      for (i = 4; i < r->nlv; i++) w = lesser(r, w, lv[i]);
      return w;
  }
}

/* Stream k has ended: out of the merge. */
static void end_stream(etlreader *r, int k) {
  int i;
  r->mkey[k] = INT64_MAX;
  r->mtie[k] |= TIE_ENDED;
  r->live--;
  for (i = 0; i < r->nlv; i++)
    if (r->lv[i] == k) { r->lv[i] = r->lv[--r->nlv]; break; }
}

/* The least key of the streams but the winner, over a tournament: the
   runner-up lost to the winner only, so it is a loser on the winner's
   path.  While the winner's next key is below it, the winner stays and
   the tree holds (every match on the path ends as it did): etl_next
   skips the replay.  A real trace's CPU writes runs of events (4 in a
   row on Siemens' 20 CPUs, 5.5 on net.4.5.x86), and a replay over many
   streams is log2 n comparisons that mispredict.  With few streams (the
   scan) it is never used: INT64_MIN. */
static inline void set_bound(etlreader *r) {
  int64_t b = INT64_MAX;
  int i;
  if (r->nstreams <= LINEAR_MAX) { r->bound = INT64_MIN; return; }
  for (i = (r->winner + r->nstreams) >> 1; i > 0; i >>= 1) {
    int64_t k = r->mkey[r->loser[i]];
    b = k < b ? k : b;
  }
  r->bound = b;
}

/* The winner's key changed: replay its way up (log2 n comparisons). */
static inline void replay(etlreader *r, int w) {
  int i, k = w;
  if (r->nstreams <= LINEAR_MAX) { r->winner = least(r); return; }
  for (i = (w + r->nstreams) >> 1; i > 0; i >>= 1) {
    /* less(l, w) as a mask, and the swap by it: the heads of many CPUs
       interleave at random, so a branch on it mispredicts half the time;
       equal keys are rare, a branch that is predicted.  lesser() written
       as this mask costs the scan of few streams 6% more instructions,
       and called here it is compiled to a branch: hence the two. */
    int l = r->loser[i];
    int64_t kl = r->mkey[l], kw = r->mkey[w];
    int m = -(kl < kw);
#if defined(__GNUC__) || defined(__clang__)
    if (__builtin_expect(kl == kw, 0)) m = -(r->mtie[l] < r->mtie[w]);
#else
    if (kl == kw) m = -(r->mtie[l] < r->mtie[w]);
#endif
    r->loser[i] = (w & m) | (l & ~m);
    w = (l & m) | (w & ~m);
  }
  r->winner = w;
  /* The bound pays when a stream wins again (a run of its events); when
     another one wins, as the heads of many CPUs mostly do, its own next
     event replays first (callgrind: the 16-CPU walk 296 -> 277 M
     instructions, Siemens 47.6 -> 46.5 M) */
  if (w == k) set_bound(r);
  else r->bound = INT64_MIN;
}

/* ------------------------------------------------- decoding into chunks */

static void note_damage(chunk *c, uint64_t pos, uint32_t buffer, const char *what, int records, int buffers) {
  note *n = &c->notes[c->nnotes++];
  n->at = c->n;
  n->pos = pos;
  n->buffer = buffer;
  snprintf(n->what, sizeof n->what, "%s", what);
  n->records = (uint8_t)records;
  n->buffers = (uint8_t)buffers;
}

/* A scratch slot no chunk still to be walked points into.  There is one:
   at most NCHUNK - 1 chunks are filled or walked while one is filled. */
static int free_scratch(etlreader *r, stream *s) {
  int k, j, found = -1;
  if (r->shared) hsi_mx_lock(&r->mx);
  for (k = 0; k < NCHUNK && found < 0; k++) {
    int used = 0;
    for (j = 0; j < NCHUNK; j++)
      if ((s->filled[j] || j == s->rslot) && s->ch[j].scr == k) used = 1;
    if (!used) found = k;
  }
  if (r->shared) hsi_mx_unlock(&r->mx);
  return found;
}

/* *buf grown to hold n bytes: 0, or -1 when the memory cannot be had. */
static int grow(uint8_t **buf, size_t *cap, size_t n) {
  uint8_t *nb;
  if (*cap >= n) return 0;
  if (!(nb = (uint8_t *)realloc(*buf, n))) return -1;
  *buf = nb;
  *cap = n;
  return 0;
}

/* The n bytes of file f at pos, read into *buf (grown to hold them); NULL
   when they cannot be read that way (a trace in memory, no memory, a
   failed read): the caller then takes them from the mapping. */
static const uint8_t *read_into(const etlfile *f, uint64_t pos, size_t n, uint8_t **buf, size_t *cap) {
  if (!f->map.data || grow(buf, cap, n) || hsi_map_read(&f->map, pos, *buf, n) != 0) return NULL;
  return *buf;
}

/* The n bytes of file f at pos as a view of the mapping, its pages read
   once; NULL when some cannot be read, with *cut 1 when the file was cut
   short, 0 for a device error (they read as zeros, never raise SIGBUS:
   mapfile.c). */
static const uint8_t *view(const etlfile *f, uint64_t pos, size_t n, int *cut) {
  uint64_t bad;
  return hsi_map_check(&f->map, pos, n, &bad, cut) == 0 ? f->data + pos : NULL;
}

/* Inflate compressed buffer bi into *dst (grown to hold it, header
   first, as a scratch slot holds a buffer): the count inflated (compared
   with bi->end - BUFHDR by the caller), negative on a bad stream, or
   LONG_MIN when the memory cannot be had, INFLATE_CUT when the file no
   longer holds the buffer, INFLATE_LOST when the device could not read
   it.  The compressed bytes are read
   into *in (a few KiB a buffer), not taken from the mapping, so there are
   no pages to give back behind the walk, each a flush of the other cores'
   TLBs; only where they cannot be read are they taken from the mapping,
   whose pages then stay until the file is closed. */
#if defined(__GNUC__)
#define COLD __attribute__((noinline))   /* per buffer, not per record: kept out of the hot loops */
#define PREFETCH(p) __builtin_prefetch(p)
#define EVERY_EVENT __attribute__((always_inline))  /* per event: in the merge's loop */
#else
#define COLD
#define PREFETCH(p) ((void)0)
#define EVERY_EVENT
#endif
static COLD long inflate(const etlfile *f, const bufinfo *bi, uint8_t **dst, size_t *cap,
                         uint8_t **in, size_t *incap) {
  const uint8_t *src = read_into(f, bi->pos, bi->size, in, incap);
  int cut;
  if (!src && !(src = view(f, bi->pos, bi->size, &cut))) return cut ? INFLATE_CUT : INFLATE_LOST;
  if (grow(dst, cap, (size_t)bi->end + 1)) return LONG_MIN;
  memcpy(*dst, src, BUFHDR);
  /* lf.compression: set by finish_open whenever a buffer is compressed.
     Room for a byte more than SavedOffset says: a stream that fills it
     holds more records than SavedOffset lets be read (a damaged one),
     and the length check of the caller says so */
  return hs_xca_decompress(f->lf.compression, src + BUFHDR, bi->size - BUFHDR, *dst + BUFHDR, bi->end - BUFHDR + 1);
}

static int inflatable(const bufinfo *bi) { return bi->compressed && !bi->truncated && bi->end != 0; }

/*
** A thread that would wait for stream s (its chunk is being filled, or
** the buffer its filler needs is being inflated) inflates one of the
** stream's next compressed buffers instead, the slowest step of a
** compressed trace: threads on one stream's buffers, where the chunks
** themselves must be filled in order.  It takes the first buffer not
** claimed by the filler nor inflated yet, among the next NAHEAD, into a
** free slot.  With the lock held; returns with it held, 1 if it
** inflated.  The filler that reaches that buffer takes the bytes
** (take_ahead).
*/
static COLD int ahead_of(etlreader *r, stream *s) {
  const etlfile *f = &r->files[s->file];
  const bufinfo *bi = NULL;
  ahead *a = NULL;
  uint32_t j, j0 = __atomic_load_n(&s->next_buf, __ATOMIC_ACQUIRE);
  int k;
  long n;
  /* The filler claims a buffer without the lock but looks for it here
     with the lock held (take_ahead): whichever comes first, a buffer is
     inflated once. */
  for (k = 0; k < NAHEAD && !a; k++) if (s->ah[k].buf < 0) a = &s->ah[k];
  for (j = j0; a && j < s->nbufs && j < j0 + NAHEAD; j++) {
    for (k = 0; k < NAHEAD && s->ah[k].buf != (int)j; k++) {}
    if (k < NAHEAD) continue;                      /* in a slot already */
    bi = &f->bufs[s->bufs[j]];
    if (inflatable(bi)) break;
    bi = NULL;
  }
  if (!a || !bi) return 0;
  a->buf = (int)j;
  a->busy = 1;
  hsi_mx_unlock(&r->mx);
  n = inflate(f, bi, &a->out, &a->outcap, &a->in, &a->incap);
  hsi_mx_lock(&r->mx);
  a->n = n;
  a->busy = 0;
  hsi_cv_broadcast(&r->ready);
  return 1;
}

/* The stream's buffer j is claimed by its filler: taken out of its ahead
   slot into scratch slot k if it was inflated there (1, *n what that
   gave); while another thread is inflating it, the filler inflates one
   of the next ones, or waits; 0 when no slot has it. */
static COLD int take_ahead(etlreader *r, stream *s, uint32_t j, int k, long *n) {
  int got = 0, i;
  if (!r->shared) return 0;
  hsi_mx_lock(&r->mx);
  for (;;) {
    for (i = 0; i < NAHEAD && s->ah[i].buf != (int)j; i++) {}
    if (i == NAHEAD || !s->ah[i].busy) break;
    if (!ahead_of(r, s)) hsi_cv_wait(&r->ready, &r->mx);
  }
  if (i < NAHEAD) {
    ahead *a = &s->ah[i];
    uint8_t *t = s->scratch[k];
    size_t c = s->scratch_cap[k];
    s->scratch[k] = a->out; s->scratch_cap[k] = a->outcap;
    a->out = t; a->outcap = c;
    *n = a->n;
    a->buf = -1;
    got = 1;
  }
  hsi_mx_unlock(&r->mx);
  return got;
}

/* Make the stream's next buffer current: 1, 0 when it has none left, -1
   when the chunk has no room for more notes (the next chunk goes on). */
static int load_buffer(etlreader *r, stream *s, chunk *c) {
  etlfile *f = &r->files[s->file];
  while (s->next_buf < s->nbufs) {
    const bufinfo *bi;
    const uint8_t *b;
    uint32_t j;
    int k;
    long n;
    if (c->nnotes > MAX_NOTES - 2) return -1;
    j = s->next_buf;                      /* the claim: read by ahead_of, under the lock */
    __atomic_store_n(&s->next_buf, j + 1, __ATOMIC_RELEASE);
    bi = &f->bufs[s->bufs[j]];
    if (!bi->compressed) {
      /* read into a scratch slot when that works (cheaper than faulting
         the mapping in and giving it back), else a view of the mapping */
      if (bi->end <= r->read_max && (k = free_scratch(r, s)) >= 0
          && read_into(f, bi->pos, bi->end, &s->scratch[k], &s->scratch_cap[k])) {
        s->base = s->scratch[k];
        s->cur = bi;
        s->pos = bi->start;
        s->cur_scr = k;
        s->cur_read = 1;
        c->scr = k;
        return 1;
      }
      int cut;
      if (!(b = view(f, bi->pos, bi->end, &cut))) {
        note_damage(c, bi->pos, bi->index, cut ? CUT_SHORT : DEVICE_LOST, 0, 1);
        continue;
      }
      s->cur_read = 0;
      s->base = b;
      s->cur = bi;
      s->pos = bi->start;
      return 1;
    }
    if (bi->truncated || bi->end == 0) {
      note_damage(c, bi->pos, bi->index, "a complete compressed buffer", 0, 0);
      continue;
    }
    k = free_scratch(r, s);
    if (k < 0) { note_damage(c, bi->pos, bi->index, "memory to inflate the buffer", 0, 0); continue; }
    if (!take_ahead(r, s, j, k, &n))
      n = inflate(f, bi, &s->scratch[k], &s->scratch_cap[k], &s->zin, &s->zin_cap);
    s->cur_read = 1;
    if (n == LONG_MIN) { note_damage(c, bi->pos, bi->index, "memory to inflate the buffer", 0, 0); continue; }
    if (n == INFLATE_CUT || n == INFLATE_LOST) {
      note_damage(c, bi->pos, bi->index, n == INFLATE_CUT ? CUT_SHORT : DEVICE_LOST, 0, 1);
      continue;
    }
    if (n != (long)(bi->end - BUFHDR)) {
      char msg[128];
      snprintf(msg, sizeof msg, n < 0 ? "a valid compressed stream (format %d)"
               : "a compressed stream inflating to SavedOffset-0x48 bytes (format %d)", f->lf.compression);
      note_damage(c, bi->pos, bi->index, msg, 0, 1);
      continue;
    }
    s->base = s->scratch[k];
    s->cur = bi;
    s->pos = bi->start;
    s->cur_scr = k;
    c->scr = k;
    return 1;
  }
  s->cur = NULL;
  return 0;
}

/*
** Is the buffer just loaded on stream s behind the stream's earlier
** buffers?  Timestamps never go back from one buffer of a CPU to the next
** (2,354 of 2,354 in the corpus, ETL-FORMAT.md §1.8; a circular file's
** are ordered by time first): a buffer whose first record is older than
** what the CPU's buffers before it reached is a copy of one of them, or
** misplaced, and its records would be read a second time or out of
** order.  Records without a time (MESSAGE without it, ERROR) decide
** nothing.
*/
#define BEHIND "a buffer later than its CPU's buffers before it (its first record is older: a copy, or misplaced)"

static int behind(const etlreader *r, const etlfile *f, const stream *s) {
  hs_event ev;
  uint32_t next;
  const char *why;
  int64_t key;
  /* (without per-processor buffering, a buffer is no one CPU's: no order to hold) */
  if (s->last_key == INT64_MIN || s->tail || (f->lf.log_file_mode & HS_LOGMODE_NO_PER_PROCESSOR_BUFFERING)) return 0;
  if (hsi_record_decode(s->base, s->pos, s->cur->end, f->file_ptr, &ev, &next, &why) != 1) return 0;
  if (ev.header_type == HS_HT_ERROR || (ev.header_type == HS_HT_MESSAGE && !(ev.header_flags & 0x18))) return 0;
  key = r->by_filetime ? hs_time_filetime(&f->lf, ev.timestamp) : ev.timestamp;
  return key < s->last_key;
}

/* The end of stream s's current buffer in chunk c: its mapped pages to be
   given back with the chunk.  1 when the chunk ends there (the buffer
   was inflated into its own scratch slot, which the chunk's events point
   into). */
static int buffer_done(stream *s, chunk *c) {
  if (!s->cur_read) {          /* its pages were mapped in: give them back */
    c->rel_pos[c->nrel] = s->cur->pos;
    c->rel_size[c->nrel++] = s->cur->size;
  }
  s->cur = NULL;
  if (s->cur_scr >= 0) { s->cur_scr = -1; return 1; }
  return 0;
}

/* The latest key of s's buffers so far, behind()'s mark, from the last
   record in c when it is of s's current buffer: at the end of the buffer,
   or where a chunk ends inside it (the next chunk may find no record of
   it left).  Buffer 0's header record is the session's start, and a
   writer may stamp records before it: only data buffers set the mark. */
static void mark(stream *s, const chunk *c) {
  if (c->n && s->cur && s->cur->index > 0 && c->bufs[c->cb[c->n - 1]] == s->cur
      && c->key[c->n - 1] > s->last_key)
    s->last_key = c->key[c->n - 1];
}

/* Decode the stream's next records into c.  A chunk ends full, at the
   end of a compressed buffer (its events point into one scratch slot),
   with its notes full, or at the end of the stream (c->last). */
static void fill(etlreader *r, stream *s, chunk *c) {
  etlfile *f = &r->files[s->file];
  uint32_t k;
  unsigned bit = 1u << (c - s->ch);
  if (s->fresh & bit) { s->fresh &= ~bit; c->nrel = 0; }
  for (k = 0; k < c->nrel; k++) hsi_map_release(&f->map, c->rel_pos[k], c->rel_size[k]);
  c->n = c->nnotes = c->nrel = c->nbufs = 0;
  c->last = 0;
  c->scr = s->cur_scr;        /* a compressed buffer goes on from the last chunk */
  for (;;) {
    const char *why = "";
    uint32_t next = 0, cb;
    int rc;
    hs_event tmp;
    if (c->n >= r->chunk_max || c->nnotes > MAX_NOTES - 2 || c->nrel == MAX_NOTES) { mark(s, c); return; }
    if (!s->cur) {
      rc = load_buffer(r, s, c);
      if (rc < 0) return;
      if (rc == 0) { c->last = 1; return; }
      if (behind(r, f, s)) {
        note_damage(c, s->cur->pos, s->cur->index, BEHIND, 0, 1);
        if (buffer_done(s, c)) return;
        continue;
      }
    }
    if (c->nbufs == 0 || c->bufs[c->nbufs - 1] != s->cur || c->base[c->nbufs - 1] != s->base) {
      if (c->nbufs == MAX_CBUFS) { mark(s, c); return; }
      c->bufs[c->nbufs] = s->cur;
      c->base[c->nbufs++] = s->base;
    }
    cb = c->nbufs - 1;
    {
      /* most records: kernel, EVENT_HEADER and classic headers, many at a time */
      uint32_t k0 = c->n, m = hsi_record_scan(s->base, &s->pos, s->cur->end, &c->rec[k0], &c->key[k0],
                                              r->chunk_max - k0, f->ts_lo, f->ts_span);
      memset(&c->cb[k0], (int)cb, m);
      if (r->by_filetime)
        for (k = k0; k < k0 + m; k++) c->key[k] = hs_time_filetime(&f->lf, c->key[k]);
      c->n += m;
      if (c->n == r->chunk_max) continue;
    }
    rc = hsi_record_decode(s->base, s->pos, s->cur->end, f->file_ptr, &tmp, &next, &why);
    /* (MESSAGE records without the time option, and ERROR records, have no time) */
    if (rc == 1 && !ts_ok(f, tmp.timestamp) && tmp.header_type != HS_HT_ERROR
        && (tmp.header_type != HS_HT_MESSAGE || (tmp.header_flags & 0x18))) {
      /* a damaged timestamp (the scan stops before it): the record is left
         out; a second one in the buffer (this chunk's last note) says the
         buffer is garbage from there (a compressed stream damaged in a way
         that still inflates): the rest of it is skipped */
      int again = c->nnotes && c->notes[c->nnotes - 1].buffer == s->cur->index
                  && strncmp(c->notes[c->nnotes - 1].what, TS_DAMAGE, sizeof TS_DAMAGE - 1) == 0;
      rc = again ? -1 : -2;
      why = again ? TS_DAMAGE ", a second in its buffer: the rest of it" : TS_DAMAGE;
    }
    if (rc == 1) {
      c->rec[c->n].rec = s->base + s->pos;
      c->rec[c->n].ht = 0;
      c->cb[c->n] = (uint8_t)cb;
      c->key[c->n] = r->by_filetime ? hs_time_filetime(&f->lf, tmp.timestamp) : tmp.timestamp;
      c->n++;
      s->pos = next;
      continue;
    }
    if (rc != 0) {
      char msg[200];
      uint64_t at = s->cur->pos + (s->cur->compressed ? 0 : s->pos);
      snprintf(msg, sizeof msg, "%s (record at buffer offset 0x%x%s)", why, s->pos,
               s->cur->compressed ? ", inflated" : "");
      note_damage(c, at, s->cur->index, msg, 1, rc != -2);
      if (rc == -2) { s->pos = next; continue; }
    }
    mark(s, c);                               /* the end of this buffer */
    if (buffer_done(s, c)) return;
  }
}

/* A worker decodes the streams k with k % nworkers == its number, the
   one the walk waits for first. */
typedef struct worker_arg { etlreader *r; int id; } worker_arg;

static int wants_fill(const stream *s) { return !s->wdone && !s->busy && !s->filled[s->wslot]; }

/* Fill the stream's next chunk and publish it; called with the lock held
   and wants_fill(s) true, returns with it held.  The lock is let go
   while decoding: s->busy keeps every other thread off the stream. */
static void fill_next(etlreader *r, stream *s) {
  s->busy = 1;
  hsi_mx_unlock(&r->mx);
  fill(r, s, &s->ch[s->wslot]);
  hsi_mx_lock(&r->mx);
  s->busy = 0;
  if (s->ch[s->wslot].last) s->wdone = 1;
  hsi_atomic_set(&s->filled[s->wslot], 1);
  s->wslot = (s->wslot + 1) % NCHUNK;
}

/* The stream whose next chunk to decode: s if it wants one, else the
   first from r->help on that does; NULL when none does.  With the lock
   held (the walk's and a helper's choice; a worker keeps to its share). */
static stream *to_fill(etlreader *r, stream *s) {
  int j, n = r->nstreams;
  for (j = -1; j < n; j++) {
    stream *x = j < 0 ? s : &r->streams[(r->help + j) % n];
    if (x && wants_fill(x)) { r->help = (int)(x - r->streams) + 1; return x; }
  }
  return NULL;
}

static HSI_THREAD_FN worker(void *arg) {
  etlreader *r = ((worker_arg *)arg)->r;
  int id = ((worker_arg *)arg)->id, start = id;
  free(arg);
  hsi_mx_lock(&r->mx);
  for (;;) {
    stream *s = NULL;
    int k, n = r->nstreams;
    if (r->stop) break;
    if (r->waiting >= 0 && r->waiting % r->nworkers == id && wants_fill(&r->streams[r->waiting]))
      s = &r->streams[r->waiting];
    for (k = 0; !s && k < n; k++) {
      int j = (start + k) % n;
      if (j % r->nworkers == id && wants_fill(&r->streams[j])) { s = &r->streams[j]; start = j + 1; }
    }
    if (!s) { r->nsleep++; hsi_cv_wait(&r->work, &r->mx); r->nsleep--; continue; }
    fill_next(r, s);
    if (r->waiting >= 0) hsi_cv_signal(&r->ready);
  }
  hsi_mx_unlock(&r->mx);
  return HSI_THREAD_RET;
}

/* A helper: decode one chunk a stream wants, as a worker would, on the
   caller's thread (source.h); 0 when none wants one now. */
static int etl_help(void *impl) {
  etlreader *r = (etlreader *)impl;
  stream *s;
  int did = 0;
  if (!hsi_atomic_get(&r->shared)) return 0;
  hsi_mx_lock(&r->mx);
  if ((s = to_fill(r, r->waiting >= 0 ? &r->streams[r->waiting] : NULL)) != NULL) {
    fill_next(r, s);
    if (r->waiting >= 0) hsi_cv_signal(&r->ready);
    did = 1;
  } else if (r->waiting >= 0) {
    did = ahead_of(r, &r->streams[r->waiting]);
  }
  hsi_mx_unlock(&r->mx);
  return did;
}

static void stop_workers(etlreader *r) {
  int k;
  if (!r->nworkers) return;
  hsi_mx_lock(&r->mx);
  r->stop = 1;
  hsi_cv_broadcast(&r->work);
  hsi_mx_unlock(&r->mx);
  for (k = 0; k < r->nworkers; k++) hsi_th_join(r->workers[k]);
  r->stop = 0;
  r->nworkers = 0;
}

/* Start `want` workers; none when threads cannot be had. */
static void spawn_workers(etlreader *r, int want) {
  int k;
  /* room for the most a rewind may start (never more than the streams:
     the number changes with the caller's threads, hsi_reader_beside) */
  if (!r->workers && !(r->workers = (hsi_thread *)malloc((size_t)r->nstreams * sizeof *r->workers)))
    return;
  r->nworkers = want;
  for (k = 0; k < want; k++) {
    worker_arg *a = (worker_arg *)malloc(sizeof *a);
    if (a) { a->r = r; a->id = k; }
    if (!a || hsi_th_start(&r->workers[k], worker, a) != 0) {
      free(a);
      /* the ones started stop; the walk decodes alone */
      r->nworkers = k;
      stop_workers(r);
      return;
    }
  }
}

/* Workers for a trace worth them (HEAPSCRIPT_THREADS=0: none; =N: N,
   whatever the size); without any, the walk decodes.  Chosen at a rewind,
   started by prime when the walk begins. */
static void choose_workers(etlreader *r) {
  uint64_t bytes = 0;
  int k, want, helped, auto_n = hsi_auto_workers(hsi_ncpu(), r->beside);
  for (k = 0; k < r->nfiles; k++) bytes += r->files[k].size;
  want = hsi_threads_allowed(-1);
  helped = want != 0 && r->beside > 0;
  if (want < 0) want = bytes >= HSI_THREADS_MIN_BYTES ? auto_n : 0;
  if (want > r->nstreams) want = r->nstreams;
  /* The ring of chunks is shared, and locked, with workers, and with a
     caller working beside the walk: it may help when idle even with no
     worker of the reader's own (whatever the size: a helper costs no
     thread).  Decided before a worker runs, and for the whole walk. */
  r->shared = want > 0 || helped;
  r->want = want;
}

/* ---------------------------------------------------------- the walk */

static void act(etlreader *r, stream *s, const note *n) {
  damage(r, s->file, n->pos, n->buffer, n->what);
  s->st->records_damaged += n->records;
  s->st->buffers_damaged += n->buffers;
}

static void give_back(etlreader *r, stream *s) {
  if (r->shared) {
    int k, nfree = 0;
    hsi_mx_lock(&r->mx);
    hsi_atomic_set(&s->filled[s->rslot], 0);
    s->rslot = -1;
    /* Wake sleeping workers once half the ring is free, not per chunk:
       one wake-up (a system call) per several chunks.  The walk wakes
       them itself when it has to wait (take_chunk). */
    for (k = 0; k < NCHUNK; k++) nfree += !s->filled[k];
    if (r->nsleep && nfree >= NCHUNK / 2) hsi_cv_broadcast(&r->work);
    hsi_mx_unlock(&r->mx);
  } else {
    s->filled[s->rslot] = 0;
    s->rslot = -1;
  }
}

static void take_chunk(etlreader *r, stream *s) {
  if (r->shared) {
    int spin;
    hsi_mx_lock(&r->mx);
    /* The chunk is not decoded yet: rather than wait, the walk decodes
       it itself if no worker is at it, else another stream's next chunk
       (so the decoding is shared out over the walk and the workers,
       whichever has time). */
    while (!s->filled[s->nslot]) {
      stream *o = to_fill(r, s);
      if (o) fill_next(r, o);
      else if (!ahead_of(r, s)) break;
    }
    if (!s->filled[s->nslot]) {
      /* A worker or a helper is at it and usually nearly done: poll a
         little before sleeping (a sleep and a wake-up are two system
         calls). */
      hsi_mx_unlock(&r->mx);
      for (spin = 0; spin < SPIN && !hsi_atomic_get(&s->filled[s->nslot]); spin++) {}
      hsi_mx_lock(&r->mx);
    }
    if (!s->filled[s->nslot]) {
      r->waiting = (int)(s - r->streams);
      hsi_cv_broadcast(&r->work);
      while (!s->filled[s->nslot]) hsi_cv_wait(&r->ready, &r->mx);
      r->waiting = -1;
    }
    s->rslot = s->nslot;
    hsi_mx_unlock(&r->mx);
    s->nslot = (s->nslot + 1) % NCHUNK;
  } else {
    /* without workers one chunk at a time: the same slot again */
    fill(r, s, &s->ch[0]);
    s->filled[0] = 1;
    s->rslot = 0;
  }
  s->i = s->ni = 0;
}

/* Bring the stream to its event s->i (acting on the notes before it) and
   set its key; 0 when the stream has ended. */
static int settle(etlreader *r, stream *s) {
  for (;;) {
    chunk *c;
    int last;
    if (s->ended) return 0;
    if (s->rslot < 0) take_chunk(r, s);
    c = &s->ch[s->rslot];
    while (s->ni < c->nnotes && c->notes[s->ni].at <= s->i) act(r, s, &c->notes[s->ni++]);
    if (s->i < c->n) {
      s->lim = s->ni < c->nnotes && c->notes[s->ni].at < c->n ? c->notes[s->ni].at : c->n;
      s->keys = c->key;
      return 1;
    }
    last = c->last;
    give_back(r, s);
    if (last) { s->ended = 1; return 0; }
  }
}

static inline int64_t key_of(const stream *s) { return s->ch[s->rslot].key[s->i]; }

/* The stream's head, decoded into *ev (its decoder checked it: this
   returns 1 as it did there). */
static inline EVERY_EVENT void head_decode(const etlreader *r, const stream *s, hs_event *ev) {
  const chunk *c = &s->ch[s->rslot];
  const hsi_krec *k = &c->rec[s->i];
  int cb = c->cb[s->i];
  const bufinfo *bi = c->bufs[cb];
  uint32_t off = (uint32_t)(k->rec - c->base[cb]), next;
  const char *why;
  /* Over many streams a stream's next record and key are read again only
     after the other streams' turns: too far apart in time, and over too
     many streams, for the hardware to fetch them ahead, and written by a
     decoding worker on another core.  Asked for now, they are here by
     then (a 128-CPU trace walks in 0.059-0.065 s, 0.078-0.086 s without;
     nothing moves on Siemens' 20 CPUs). */
  if (r->nstreams > LINEAR_MAX && s->i + 8 < s->lim) {
    PREFETCH(&c->rec[s->i + 2]);
    PREFETCH(&c->key[s->i + 8]);
  }
  if (hsi_krec_kernel(k)) {
    *ev = s->tmpl;              /* zeros, cpu, file and flags of the stream */
    hsi_record_kernel_set(k, ev);
  } else {
    /* An EVENT_HEADER or classic record's header, and another record
       decoded again, come from bytes another core read: asking for the
       header of the record three ahead now has it here by then (the
       Siemens trace, mostly such records, walks 5-8% faster; for kernel
       headers, whose bytes the walk does not read, it only costs). */
    if (s->i + 3 < c->n) PREFETCH(c->rec[s->i + 3].rec);
    if (k->ht) {
      *ev = s->tmpl;
      hsi_record_header_set(k, ev);
    } else {
      (void)hsi_record_decode(c->base[cb], off, bi->end, r->files[s->file].file_ptr, ev, &next, &why);
      ev->cpu = s->cpu;
      ev->file = (uint16_t)s->file;
      ev->flags |= s->tmpl.flags;
    }
  }
  ev->buffer = bi->index;
  ev->offset = off;
  ev->buffer_pos = bi->pos;
  ev->buffer_flags = bi->lost;
}

/* Back to before the first record (no workers running). */
static void reset_stream(stream *s) {
  int k;
  s->next_buf = 0;
  s->cur = NULL;
  s->cur_scr = -1;
  s->last_key = INT64_MIN;
  s->wslot = s->wdone = s->busy = 0;
  for (k = 0; k < NAHEAD; k++) { s->ah[k].buf = -1; s->ah[k].busy = 0; }
  /* the chunks themselves are not touched: a stream of a few buffers
     fills few of them, and the rest are pages never faulted in */
  s->fresh = (1u << NCHUNK) - 1;
  for (k = 0; k < NCHUNK; k++) s->filled[k] = 0;
  s->rslot = -1;
  s->nslot = 0;
  s->i = s->ni = 0;
  s->ended = 0;
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

/* The reader's own memory that the walk reads or writes for every event
   (the reader itself, its files' counters, the streams, the merge's
   arrays) is on cache lines of its own (thread.h hsi_line_calloc): in the
   pass the walk runs on one thread beside another writing its own. */
static int add_stream(etlreader *r, int file, uint16_t cpu, int tail) {
  stream *ns = r->streams;
  if ((r->nstreams & (r->nstreams - 1)) == 0) {    /* grow at powers of two */
    size_t cap = r->nstreams ? 2 * (size_t)r->nstreams : 1;
    if (!(ns = (stream *)hsi_line_grow(r->streams, (size_t)r->nstreams * sizeof *ns, cap * sizeof *ns)))
      return -1;
  }
  r->streams = ns;                                 /* the new stream's slot is zeroed */
  ns[r->nstreams].file = file;
  ns[r->nstreams].cpu = cpu;
  ns[r->nstreams].tail = tail;
  ns[r->nstreams].tie = (uint64_t)(tail != 0) << 32 | (uint64_t)cpu << 16 | (uint64_t)(unsigned)file;
  ns[r->nstreams].tmpl.cpu = cpu;
  ns[r->nstreams].tmpl.file = (uint16_t)file;
  ns[r->nstreams].tmpl.flags = tail ? HS_EVF_BUF0TAIL : 0;
  ns[r->nstreams].last_key = INT64_MIN;
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

/* A circular logger wraps (a file, or the ring in memory of a session in
   buffering mode, flushed to a file): in file order a CPU's oldest buffer
   may sit in the middle.  Order each stream's buffers by their first record's
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
  int *of_cpu = (int *)calloc(0x800, sizeof *of_cpu);   /* cpu (11 bits) -> its stream + 1, 0: none yet */
  if (!of_cpu) return -1;
  for (i = 0; i < n; i++) {
    bufinfo *bi = &f->bufs[i];
    int si;
    if (i == 0 && !bi->compressed) {
      uint32_t saved = rd32(f->data + bi->pos + 4);
      if (saved > BUFHDR && saved < bi->end) {
        bufinfo tail = *bi;
        int ts = add_stream(r, fi, bi->cpu, 1);
        tail.start = saved;
        bi->end = saved;
        if (ts < 0 || add_buf(f, &tail) || push_buf(&r->streams[ts], f->nbufs - 1)) { free(of_cpu); return -1; }
        bi = &f->bufs[i];
      }
    }
    si = of_cpu[bi->cpu & 0x7FF] - 1;
    if (si < 0) {
      if ((si = add_stream(r, fi, bi->cpu, 0)) < 0) { free(of_cpu); return -1; }
      of_cpu[bi->cpu & 0x7FF] = si + 1;
    }
    if (push_buf(&r->streams[si], i)) { free(of_cpu); return -1; }
  }
  free(of_cpu);
  /* a circular file wraps, and so does the ring in memory that a session
     in buffering mode has flushed to a file */
  if (f->lf.log_file_mode & (HS_LOGMODE_CIRCULAR | HS_LOGMODE_BUFFERING)) {
    int k;
    for (k = base; k < r->nstreams; k++)
      if (!r->streams[k].tail && order_circular(f, &r->streams[k])) return -1;
  }
  return 0;
}

static int collect_tail_ts(etlreader *r);

/* Timestamps of the buffer-0 tail records, to recognise their repeats.
   Damage met on the way is the walk's to report, once (it was reported
   here too). */
static int collect_tail(etlreader *r) {
  int k;
  hs_damage_fn said = r->opts.on_damage;
  r->opts.on_damage = NULL;
  k = collect_tail_ts(r);
  r->opts.on_damage = said;
  return k;
}

static int collect_tail_ts(etlreader *r) {
  int k;
  for (k = 0; k < r->nstreams; k++) {
    stream *s = &r->streams[k];
    if (!s->tail) continue;
    reset_stream(s);
    for (; settle(r, s); s->i++) {
      int64_t *nt = (int64_t *)realloc(r->tail_ts, (r->ntail_ts + 1) * sizeof *nt);
      if (!nt) return -1;
      r->tail_ts = nt;
      hs_event ev;
      head_decode(r, s, &ev);
      r->tail_ts[r->ntail_ts++] = ev.timestamp;
    }
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
  stop_workers(r);
  r->pending = -1;
  r->nseen = 0;
  for (k = 0; k < r->nfiles; k++) {
    /* Walk-time counters start again; index-time ones stay. */
    r->files[k].st.records = 0;
    r->files[k].st.records_duplicate = 0;
    r->files[k].st.records_damaged = 0;
    r->files[k].st.buffers_damaged = r->files[k].ist.buffers_damaged;
  }
  for (k = 0; k < r->nstreams; k++) reset_stream(&r->streams[k]);
  choose_workers(r);
  r->primed = 0;
  return 0;
}

/* The walk's first step after a rewind: the workers start, and each
   stream's first record is found.  Not done by the rewind itself, so a
   reader opened and never walked (a script's trace it only analyses,
   a reopen rewound again at once) decodes nothing and starts no thread. */
static void prime(etlreader *r) {
  int k;
  r->primed = 1;
  if (r->want > 0) spawn_workers(r, r->want);
  r->live = r->nlv = 0;
  for (k = 0; k < r->nstreams; k++) {
    stream *s = &r->streams[k];
    r->mtie[k] = s->tie;
    r->live++;
    if (r->nstreams <= LINEAR_MAX) r->lv[r->nlv++] = k;
    if (settle(r, s)) r->mkey[k] = key_of(s);
    else end_stream(r, k);
  }
  r->winner = r->nstreams ? play(r, 1) : 0;
  if (r->nstreams) set_bound(r);
}

/* Take file fi's index from `from` (a reader of the same bytes), and
   report its damage again to this reader's callback. */
static int copy_index(etlreader *r, int fi, const etlreader *from, char *err, size_t errlen) {
  etlfile *f = &r->files[fi];
  const etlfile *g = &from->files[fi];
  uint32_t k;
  f->st = g->ist;
  f->st.first_damage_pos = UINT64_MAX;
  if (g->nidx && !(f->bufs = (bufinfo *)malloc((size_t)g->nidx * sizeof *f->bufs))) {
    snprintf(err, errlen, "%s: out of memory", f->path);
    return HS_ENOMEM;
  }
  if (g->nidx) memcpy(f->bufs, g->bufs, (size_t)g->nidx * sizeof *f->bufs);
  f->nbufs = f->capbufs = g->nidx;
  if (f->nbufs) f->bufs[0].end = g->end0;
  for (k = 0; k < g->nidmg; k++) {
    int rc = index_damage(r, fi, g->idmg[k].pos, g->idmg[k].buffer, g->idmg[k].what, err, errlen);
    if (rc) return rc;
  }
  return 0;
}

static int finish_open(etlreader *r, const etlreader *from, char *err, size_t errlen) {
  int i;
  for (i = 0; i < r->nfiles; i++) {
    etlfile *f = &r->files[i];
    int rc;
    hsi_map_advise(&f->map, 0);
    rc = from ? copy_index(r, i, from, err, errlen) : index_file(r, i, err, errlen);
    if (rc) return rc;
    f->ist = f->st;
    f->nidx = f->nbufs;
    f->end0 = f->nbufs ? f->bufs[0].end : 0;
    {
      /* The header buffer is never compressed [V]. */
      const bufinfo *b0 = f->nbufs ? &f->bufs[0] : NULL;
      if (!b0 || b0->compressed || b0->pos != 0) {
        snprintf(err, errlen, "%s: offset 0x0: expected an uncompressed header buffer", f->path);
        return HS_EFORMAT;
      }
      rc = parse_logfile(f, f->data, b0->end, err, errlen);
      if (rc) return rc;
      /* the header's repairs on every open; a reopen's copy of the index
         has their damage already (copy_index), and says nothing */
      if ((rc = check_logfile(r, i, f->lf_payload, !from, err, errlen)) != 0) return rc;
      if (f->st.buffers_compressed) {
        /* Low word of buffer 0's State names the format [D: snail]; 3 is
           also the plain Flush state, so anything else means XPRESS. */
        unsigned fmt = rd16(f->data + 0x2C);
        f->lf.compression = (fmt == 2 || fmt == 3 || fmt == 4) ? (int)fmt : HS_XCA_XPRESS;
      }
    }
    /* Indexing touched every buffer header, and the kernel maps pages
       around each touch: give them back; the walk maps what it reads. */
    hsi_map_release(&f->map, 0, f->size);
    hsi_map_advise(&f->map, 1);
    ts_bounds(f);
    if (build_streams(r, i)) { snprintf(err, errlen, "%s: out of memory", f->path); return HS_ENOMEM; }
    if (i > 0 && !hs_time_same_clock(&f->lf, &r->files[0].lf)) r->by_filetime = 1;
  }
  {
    size_t n = (size_t)(r->nstreams ? r->nstreams : 1);
    r->mkey = (int64_t *)hsi_line_calloc(n * sizeof *r->mkey);
    r->mtie = (uint64_t *)hsi_line_calloc(n * sizeof *r->mtie);
    r->loser = (int *)hsi_line_calloc(n * sizeof *r->loser);
  }
  {
    /* Reading buffers costs scratch memory per stream; with many CPUs or
       large buffers the mapping serves (memory stays bounded). */
    uint32_t maxend = 0, k;
    int fi;
    for (fi = 0; fi < r->nfiles; fi++)
      for (k = 0; k < r->files[fi].nbufs; k++)
        if (r->files[fi].bufs[k].end > maxend) maxend = r->files[fi].bufs[k].end;
    r->read_max = maxend <= READ_MAX && (uint64_t)r->nstreams * NCHUNK * maxend <= READ_BUDGET ? maxend : 0;
  }
  /* Over many streams (a trace of a machine with many CPUs, its events
     interleaved) a chunk holds fewer events: what is decoded ahead of the
     merge stays within the caches, and the memory is not streams x NCHUNK
     chunks of 1,024 (a 128-CPU trace: the walk without workers 0.092 ->
     0.071 s, `leaks` 128 -> 59 MB; docs/SPEED.md).  16 streams or fewer
     keep chunks of 1,024. */
  r->chunk_max = (uint32_t)(CHUNK_STREAM_EVENTS / (r->nstreams > 0 ? r->nstreams : 1));
  if (r->chunk_max > CHUNK_EVENTS) r->chunk_max = CHUNK_EVENTS;
  if (r->chunk_max < CHUNK_MIN) r->chunk_max = CHUNK_MIN;
  for (i = 0; r->mkey && r->mtie && r->loser && i < r->nstreams; i++)
    if (!(r->streams[i].ch = (chunk *)malloc(NCHUNK * sizeof(chunk)))) break;
    else r->streams[i].st = &r->files[r->streams[i].file].st;
  if (!r->mkey || !r->mtie || !r->loser || i < r->nstreams || collect_tail(r)) { snprintf(err, errlen, "out of memory"); return HS_ENOMEM; }
  return etl_rewind(r);
}

static etlreader *new_reader(int n, const hs_reader_opts *opts) {
  etlreader *r = (etlreader *)hsi_line_calloc(sizeof *r);
  int i;
  if (!r) return NULL;
  hsi_record_init();
  r->files = (etlfile *)hsi_line_calloc((size_t)n * sizeof *r->files);
  if (!r->files) { hsi_line_free(r); return NULL; }
  r->nfiles = n;
  r->pending = -1;
  r->waiting = -1;
  hsi_mx_init(&r->mx);
  hsi_cv_init(&r->work);
  hsi_cv_init(&r->ready);
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

/* A file of a trace smaller than WHOLE_MAX (all its files together)
   read whole into memory, its mapping closed: the walk then takes its
   buffers where they lie, as for a trace in memory (one read(2) instead
   of one for each buffer and for each buffer's header, which cost several
   times the bytes on a small trace; such a trace is walked without
   workers, so no decoding waits for the read).  What the file held at
   open is what is walked.  Left mapped when the memory or the read fails. */
static void read_whole(etlfile *f) {
  if (f->size == 0 || !(f->own = (uint8_t *)malloc((size_t)f->size))) return;
  if (hsi_map_read(&f->map, 0, f->own, (size_t)f->size) != 0) {
    free(f->own);
    f->own = NULL;
    return;
  }
  hsi_map_close(&f->map);
  f->data = f->own;
}

/* Open the files; `from`, if not NULL, is a reader of the same paths
   whose index serves while each file has the size it had then. */
static int etl_open(etlreader **out, const char *const *paths, int npaths, const etlreader *from,
                   const hs_reader_opts *opts, char *err, size_t errlen) {
  etlreader *r;
  char dummy[8];
  int i, rc;
  uint64_t total = 0;
  if (!err) { err = dummy; errlen = sizeof dummy; }
  *out = NULL;
  if (npaths < 1 || npaths > 65535) { snprintf(err, errlen, "no trace file given"); return HS_EARG; }
  if (!(r = new_reader(npaths, opts))) { snprintf(err, errlen, "out of memory"); return HS_ENOMEM; }
  for (i = 0; i < npaths; i++) {
    etlfile *f = &r->files[i];
    if (!(f->path = dupstr(paths[i]))) { rc = HS_ENOMEM; snprintf(err, errlen, "out of memory"); goto fail; }
    if (strcmp(paths[i], "-") == 0) {   /* a trace is mapped and read out of order: no pipe */
      snprintf(err, errlen, "-: reading a trace from standard input is not supported: give its file "
               "(./- for a file named -)");
      rc = HS_EARG;
      goto fail;
    }
    if ((rc = hsi_map_open(&f->map, paths[i], err, errlen)) != 0) goto fail;
    f->data = f->map.data;
    f->size = f->st.file_size = f->map.size;
    total += f->size;
    if (from && (from->nfiles != npaths || from->files[i].size != f->size)) from = NULL;
  }
  for (i = 0; i < npaths && total < WHOLE_MAX; i++) read_whole(&r->files[i]);
  if ((rc = finish_open(r, from, err, errlen)) != 0) goto fail;
  *out = r;
  return 0;
fail:
  etl_close(r);
  return rc;
}

static int etl_open_mem(etlreader **out, const uint8_t *data, size_t len, const char *name,
                       const etlreader *from, const hs_reader_opts *opts, char *err, size_t errlen) {
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
  if ((rc = finish_open(r, from, err, errlen)) != 0) { etl_close(r); return rc; }
  *out = r;
  return 0;
}

static void etl_close(void *impl) {
  etlreader *r = (etlreader *)impl;
  int i;
  if (!r) return;
  stop_workers(r);
  for (i = 0; i < r->nstreams; i++) {
    int k;
    free(r->streams[i].bufs);
    free(r->streams[i].ch);
    for (k = 0; k < NCHUNK; k++) free(r->streams[i].scratch[k]);
    for (k = 0; k < NAHEAD; k++) { free(r->streams[i].ah[k].out); free(r->streams[i].ah[k].in); }
    free(r->streams[i].zin);
  }
  for (i = 0; i < r->nfiles; i++) {
    hsi_map_close(&r->files[i].map);
    free(r->files[i].own);
    free(r->files[i].bufs);
    free(r->files[i].idmg);
    free(r->files[i].path);
  }
  hsi_line_free(r->streams);
  hsi_line_free(r->files);
  hsi_line_free(r->mkey);
  hsi_line_free(r->mtie);
  hsi_line_free(r->loser);
  free(r->tail_ts);
  free(r->seen);
  free(r->workers);
  hsi_cv_free(&r->work);
  hsi_cv_free(&r->ready);
  hsi_mx_free(&r->mx);
  hsi_line_free(r);
}

/* ---------------------------------------------------------- delivering */

static int etl_next(void *impl, hs_event *ev) {
  etlreader *r = (etlreader *)impl;
  if (!r->primed) prime(r);
  for (;;) {
    stream *s;
    if (r->pending >= 0) {
      /* Advance the stream handed out last only now: its event stayed a
         view into that stream's buffer until this call. */
      int k = r->pending;
      s = &r->streams[k];
      if (++s->i < s->lim) r->mkey[k] = s->keys[s->i];
      else if (settle(r, s)) r->mkey[k] = key_of(s);
      else end_stream(r, k);
      if (r->mkey[k] >= r->bound) replay(r, k);   /* else it stays the winner (set_bound) */
      r->pending = -1;
    }
    if (r->live == 0) return 0;
    r->pending = r->winner;
    s = &r->streams[r->pending];
    head_decode(r, s, ev);
    if (r->ntail_ts && is_tail_ts(r, ev->timestamp)) {
      uint64_t h = hash_record(ev->record, ev->record_len);
      if (s->tail) {
        size_t i;
        int dup = 0;
        for (i = 0; i < r->nseen; i++) if (r->seen[i] == h) { dup = 1; break; }
        if (dup) { s->st->records_duplicate++; continue; }
      } else {
        if (r->nseen == r->capseen) {
          size_t cap = r->capseen ? r->capseen * 2 : 16;
          uint64_t *ns = (uint64_t *)realloc(r->seen, cap * sizeof *ns);
          if (ns) { r->seen = ns; r->capseen = cap; }
        }
        if (r->nseen < r->capseen) r->seen[r->nseen++] = h;
      }
    }
    s->st->records++;
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

static const hsi_source_ops etl_ops;

/* The reader an open made (rc 0), as an hs_reader. */
static int wrap(hs_reader **out, int rc, etlreader *r) {
  *out = NULL;
  if (rc) return rc;
  if (!(*out = hsi_reader_wrap(&etl_ops, r))) { etl_close(r); return HS_ENOMEM; }
  return 0;
}

/* Another reader of the same files, with the index of this one. */
static int etl_reopen(void *impl, hs_reader **out, const hs_reader_opts *o, char *err, size_t errlen) {
  etlreader *r = (etlreader *)impl, *n = NULL;
  const char **paths;
  int i, rc;
  if (r->nfiles == 1 && !r->files[0].map.data && !r->files[0].own && r->files[0].data) {   /* over memory */
    rc = etl_open_mem(&n, r->files[0].data, (size_t)r->files[0].size, r->files[0].path, r, o, err, errlen);
    return wrap(out, rc, n);
  }
  if (!(paths = (const char **)malloc((size_t)r->nfiles * sizeof *paths))) {
    snprintf(err, errlen, "out of memory");
    return HS_ENOMEM;
  }
  for (i = 0; i < r->nfiles; i++) paths[i] = r->files[i].path;
  rc = etl_open(&n, paths, r->nfiles, r, o, err, errlen);
  free(paths);
  return wrap(out, rc, n);
}

static void etl_beside(void *impl, int n) { ((etlreader *)impl)->beside = n; }
/* The workers of the walk: running, or chosen for a walk not begun. */
static int etl_workers(const void *impl) {
  const etlreader *r = (const etlreader *)impl;
  return r->primed ? r->nworkers : r->want;
}

static const hsi_source_ops etl_ops = {
  etl_next, etl_rewind, etl_close, etl_nfiles, etl_path, etl_logfile, etl_stats, etl_reopen,
  etl_beside, etl_workers, etl_help
};

int hs_reader_open(hs_reader **out, const char *const *paths, int npaths,
                   const hs_reader_opts *opts, char *err, size_t errlen) {
  etlreader *r = NULL;
  int rc = etl_open(&r, paths, npaths, NULL, opts, err, errlen);
  return wrap(out, rc, r);
}

int hs_reader_open_mem(hs_reader **out, const uint8_t *data, size_t len, const char *name,
                       const hs_reader_opts *opts, char *err, size_t errlen) {
  etlreader *r = NULL;
  int rc = etl_open_mem(&r, data, len, name, NULL, opts, err, errlen);
  return wrap(out, rc, r);
}
