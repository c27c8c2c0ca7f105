/*
** merge.c -- write the merged stream of several .etl files as one file
** (see merge.h), with the project's writer.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "heapscript.h"
#include "bytes.h"
#include "merge.h"
#include "osfile.h"
#include "source.h"
#include "stacks.h"
#include "writer.h"

#define MAX_ITEMS 64
/* LogFileMode bits that say how a session's file was laid out, which the
   new file is not (NEWFILE: one of a series; BUFFERING: no file) */
#define MODE_OF_THE_FILE (HS_LOGMODE_CIRCULAR | HS_LOGMODE_APPEND | HS_LOGMODE_NEWFILE | HS_LOGMODE_PREALLOCATE \
                          | HS_LOGMODE_REAL_TIME | HS_LOGMODE_DELAY_OPEN_FILE | HS_LOGMODE_BUFFERING \
                          | HS_LOGMODE_COMPRESSED | HS_LOGMODE_NO_PER_PROCESSOR_BUFFERING)
#define NMOVED 64                        /* events moved later, remembered for their StackWalks */

/*
** An input's buffers flagged as having lost events (ev.buffer_flags;
** what `info` counts as "flagged lost" and the reports as "buffers marked
** as having lost events"): each is carried to the buffer of the new file
** that holds its first record copied (hsi_writer_mark), so the new file
** has as many, next to the same events.  A bit per buffer index of a file
** says it was carried.
*/
typedef struct lostbufs {
  uint8_t *seen;                         /* a bit per buffer index: carried */
  uint32_t nseen;                        /* bytes of seen */
} lostbufs;

/* Is ev the first record met of its flagged buffer? */
static int first_of_lost(lostbufs *l, const hs_event *ev) {
  uint32_t i = ev->buffer / 8;
  if (i >= l->nseen) {
    uint32_t n = i + 1 > 2 * l->nseen ? i + 1 : 2 * l->nseen;
    uint8_t *p = (uint8_t *)realloc(l->seen, n);
    if (!p) return 0;                    /* the flag is lost, not the merge */
    memset(p + l->nseen, 0, n - l->nseen);
    l->seen = p;
    l->nseen = n;
  }
  if (l->seen[i] & (1u << (ev->buffer & 7))) return 0;
  l->seen[i] |= (uint8_t)(1u << (ev->buffer & 7));
  return 1;
}

int hsi_merge(const char *const *in, int nin, const char *out, const hs_reader_opts *ro,
              hsi_merge_counts *c, char *err, size_t errlen) {
  hs_reader *r;
  hsi_writer *w;
  hsi_writer_opts o;
  const hs_logfile *lf, **clocks = NULL;
  hs_event ev;
  hsi_ext items[MAX_ITEMS];
  hsi_hdr_more more;
  uint8_t *walk = NULL;                  /* a StackWalk's payload with its time moved */
  uint32_t wcap = 0;
  int64_t *last = NULL;                  /* per CPU of the new file, its latest time */
  struct { int64_t from, to; uint32_t tid; } moved[NMOVED];   /* (tid HS_NOID: any thread's) */
  unsigned nmoved = 0, m;
  lostbufs *lost = NULL;                 /* per file, made at the first flagged buffer */
  int i, n, rc;
  memset(c, 0, sizeof *c);
  for (i = 0; i < nin; i++)       /* writing it would destroy it under the reader */
    if (hsi_same_file(out, in[i])) {
      snprintf(err, errlen, "%s: is also a trace to merge (%s); the merged file must be a new one", out, in[i]);
      return HS_EARG;
    }
  if ((rc = hs_reader_open(&r, in, nin, ro, err, errlen)) < 0) return rc;
  if (hsi_reader_twice(r, err, errlen)) {   /* merged, its every event would be there twice */
    size_t k = strlen(err);
    snprintf(err + k, errlen - k, ": its events would be written twice");
    hs_reader_close(r);
    return HS_EARG;
  }
  lf = hs_reader_logfile(r, 0);
  memset(&o, 0, sizeof o);
  o.pointer_size = (int)lf->pointer_size;
  o.buffer_size = lf->buffer_size >= 1024 && lf->buffer_size <= (16u << 20) && lf->buffer_size % 8 == 0
                  ? lf->buffer_size : 0;
  o.os_major = lf->version[0];
  o.os_minor = lf->version[1];
  o.os_build = lf->os_build;
  o.timer_resolution = lf->timer_resolution;
  o.time_zone = lf->time_zone;
  o.boot_time = lf->boot_time;          /* of the first file's clock, which the new file has */
  o.clock_type = (int)lf->clock_type;
  o.perf_freq = lf->perf_freq;
  o.cpu_mhz = lf->cpu_mhz;
  /* the new file starts with the earliest of them, in the first's clock:
     no record comes before its start */
  o.start_time = lf->start_time;
  for (i = 1; i < hs_reader_nfiles(r); i++) {
    const hs_logfile *f = hs_reader_logfile(r, i);
    if (f->start_time > 0 && (o.start_time <= 0 || f->start_time < o.start_time)) o.start_time = f->start_time;
  }
  o.start_ticks = o.start_time == lf->start_time ? lf->header_ts : hs_time_from_filetime(lf, o.start_time);
  o.logger_name = lf->logger_name[0] ? lf->logger_name : "heapscript merge";
  o.log_file_name = out;
  for (i = 0; i < hs_reader_nfiles(r); i++) {
    const hs_logfile *f = hs_reader_logfile(r, i);
    if (f->cpus > o.cpus) o.cpus = f->cpus;
    o.events_lost += f->events_lost;
    o.buffers_lost += f->buffers_lost;
    o.log_file_mode |= f->log_file_mode;
    if (f->end_time > o.end_time) o.end_time = f->end_time;   /* FILETIME: any clock's */
  }
  /* The sessions' modes that still hold, as a relogger's file has them
     (ETL-FORMAT.md 1.7, 8.2): written start to end, per-CPU buffers,
     uncompressed, RELOG */
  o.log_file_mode = (o.log_file_mode & ~MODE_OF_THE_FILE) | HS_LOGMODE_SEQUENTIAL | HS_LOGMODE_RELOG;
  if (o.cpus == 0) o.cpus = 1;
  if (hsi_reader_clocks(r, &clocks) != 0) {
    snprintf(err, errlen, "%s: out of memory", out);
    hs_reader_close(r);
    return HS_ENOMEM;
  }
  if (!(last = (int64_t *)malloc((size_t)o.cpus * sizeof *last))) {
    snprintf(err, errlen, "%s: out of memory", out);
    free((void *)clocks);
    hs_reader_close(r);
    return HS_ENOMEM;
  }
  for (i = 0; i < (int)o.cpus; i++) last[i] = INT64_MIN;
  if ((rc = hsi_writer_open(&w, out, &o, err, errlen)) < 0) { free(last); free((void *)clocks); hs_reader_close(r); return rc; }
  while (rc == 0 && (n = hs_reader_next(r, &ev)) == 1) {
    int cpu = ev.cpu < o.cpus ? ev.cpu : 0;
    int64_t from;
    hsi_rebase(r, clocks, &ev);             /* the new file has the first file's clock */
    /* Files of other clocks are merged on FILETIME, 100 ns at a time: an
       event of one, moved to the first file's clock, may land before the
       event of the same 100 ns the CPU's stream of the new file already
       has.  It goes at that event's time, the order kept (the writer
       refuses a time going back; it was left out), and is remembered so
       that its StackWalk names the time it now has. */
    from = ev.timestamp;
    if (ev.timestamp < last[cpu]) {
      ev.timestamp = last[cpu];
      c->moved++;
      if (!hsi_stacks_names_event(&ev)) {     /* an event a StackWalk may name (not a StackWalk) */
        moved[nmoved % NMOVED].from = from;
        moved[nmoved % NMOVED].to = ev.timestamp;
        moved[nmoved % NMOVED].tid = ev.tid;
        nmoved++;
      }
    }
    last[cpu] = ev.timestamp;
    /* and so has the event a StackWalk names (its EventTimeStamp): the
       payload, copied, says the new time */
    if ((clocks || nmoved) && hsi_stacks_names_event(&ev) && ev.payload_len >= 8) {
      int64_t ets = hsi_rebase_ts(r, clocks, ev.file, (int64_t)rd64(ev.payload));
      /* the newest move of an event of this time and the StackWalk's thread */
      for (m = 0; m < NMOVED && m < nmoved; m++) {
        unsigned j = (nmoved - 1 - m) % NMOVED;
        if (moved[j].from == ets && (moved[j].tid == HS_NOID || ev.payload_len < 16
                                     || moved[j].tid == rd32(ev.payload + 12))) { ets = moved[j].to; break; }
      }
      if (ets != (int64_t)rd64(ev.payload)) {
        if (ev.payload_len > wcap) {
          uint8_t *nw = (uint8_t *)realloc(walk, ev.payload_len);
          if (!nw) { rc = HS_ENOMEM; snprintf(err, errlen, "%s: out of memory", out); break; }
          walk = nw;
          wcap = ev.payload_len;
        }
        memcpy(walk, ev.payload, ev.payload_len);
        wr64(walk, (uint64_t)ets);
        ev.payload = walk;
      }
    }
    /* The header fields the event does not decode are read from the
       record as it is: the new record's header equals it but for the time. */
    memset(&more, 0, sizeof more);
    if (ev.buffer_flags && ev.file < hs_reader_nfiles(r)
        && (lost || (lost = (lostbufs *)calloc((size_t)hs_reader_nfiles(r), sizeof *lost)) != NULL)
        && first_of_lost(&lost[ev.file], &ev))
      hsi_writer_mark(w, cpu, ev.buffer_flags);
    switch (ev.header_type) {
      case HS_HT_SYSTEM32: case HS_HT_SYSTEM64: case HS_HT_COMPACT32: case HS_HT_COMPACT64:
      case HS_HT_PERFINFO32: case HS_HT_PERFINFO64: {
        /* the whole Version word, and the PEBS/PMC words it announces as
           the first payload bytes, as the writer takes them */
        uint32_t hl = ev.header_type <= HS_HT_SYSTEM64 ? 0x20 : ev.header_type <= HS_HT_COMPACT64 ? 0x18 : 0x10;
        const uint8_t *pl = ev.record + hl;
        int version = rd16(ev.record);
        if (ev.hook == 0x0000) { c->headers++; continue; }      /* the new file has its own */
        if (ev.payload != ev.record + ev.record_len - ev.payload_len) {
          /* a StackWalk whose time moved: its copy is the payload alone,
             without the words those bits announce */
          pl = ev.payload;
          version &= ~0x8700;
        }
        if (hl == 0x20) more.cpu_time = rd64(ev.record + 0x18);
        rc = hsi_writer_kernel_more(w, cpu, ev.header_type, ev.hook >> 8, ev.hook & 0xFF, version, ev.pid,
                                    ev.tid, ev.timestamp, &more, pl, ev.payload + ev.payload_len - pl);
        break;
      }
      case HS_HT_FULL32: case HS_HT_FULL64: case HS_HT_INSTANCE32: case HS_HT_INSTANCE64:
        more.level = ev.record[5];
        more.cpu_time = rd64(ev.record + 0x28);
        if (ev.header_type == HS_HT_INSTANCE32 || ev.header_type == HS_HT_INSTANCE64) {
          more.instance_id = rd32(ev.record + 0x30);
          more.parent_instance_id = rd32(ev.record + 0x34);
          more.parent_guid = hs_guid_from_bytes(ev.record + 0x38);
        }
        rc = hsi_writer_mof_more(w, cpu, ev.header_type, &ev.provider, ev.opcode, rd16(ev.record + 6), ev.pid,
                                 ev.tid, ev.timestamp, &more, ev.payload, ev.payload_len);
        break;
      case HS_HT_EVENT32: case HS_HT_EVENT64: {
        uint32_t pos = 0;
        hs_ext_item it;
        size_t k = 0;
        while (hs_event_ext_next(&ev, &pos, &it) == 1 && k < MAX_ITEMS) {
          items[k].type = it.type; items[k].len = it.size; items[k].data = it.data; k++;
        }
        more.flags = rd16(ev.record + 4);
        more.event_property = rd16(ev.record + 6);
        more.channel = ev.channel;
        more.cpu_time = rd64(ev.record + 0x38);
        more.activity_id = hs_guid_from_bytes(ev.record + 0x40);
        rc = hsi_writer_event_ext(w, cpu, ev.header_type, &ev.provider, ev.id, (uint8_t)ev.version,
                                  ev.opcode, ev.level, ev.task, ev.keyword, ev.pid, ev.tid, ev.timestamp,
                                  NULL, 0, 0, items, k, &more, ev.payload, ev.payload_len);
        break;
      }
      default:
        c->left_out++;
        continue;
    }
    if (rc == HS_EARG) { c->left_out++; rc = 0; continue; }   /* too long for a buffer */
    if (rc == 0) c->records++;
  }
  free(walk);
  free(last);
  for (i = 0; lost && i < hs_reader_nfiles(r); i++) free(lost[i].seen);
  free(lost);
  if (rc == HS_ENOMEM) {}                /* said above */
  else if (rc < 0) snprintf(err, errlen, "%s: %s", out, hsi_writer_error(w));
  else if (n < 0) { snprintf(err, errlen, "%s", hs_reader_error(r)); rc = n; }
  i = hsi_writer_close(w);
  if (rc == 0 && i < 0) { snprintf(err, errlen, "%s: cannot finish the file", out); rc = i; }
  free((void *)clocks);
  hs_reader_close(r);
  return rc;
}
