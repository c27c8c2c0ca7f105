/*
** info.c -- what a person wants to know first about a trace: the logfile
** header, buffers, events by header type and by (provider, id, opcode,
** version).  The JSON form is exactly the schema of the corpus figures
** (shared/traces/expected/NAME.json), so tests compare the two directly.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "heapscript.h"
#include "bytes.h"
#include "info.h"
#include "evcount.h"
#include "layoutcheck.h"

struct hsi_info {
  uint64_t events;
  uint64_t by_type[32];
  hsi_evcount keys;            /* by provider, id, opcode and version */
  uint64_t stackwalk, stack_keys, stack_defs, ext_stacks;
  int64_t first_ts, last_ts;
  int have_ts;
  uint32_t masks[8];           /* EventTrace Extension/EndExtension (group 0 op 5/32): PERFINFO group masks, ORed */
  int have_masks;
  const struct hsi_lcheck *lc; /* memory layout checks, printed with the JSON */
};

hsi_info *hsi_info_new(void) { return (hsi_info *)calloc(1, sizeof(hsi_info)); }

void hsi_info_free(hsi_info *in) {
  if (!in) return;
  hsi_evcount_free(&in->keys);
  free(in);
}

int hsi_info_add(hsi_info *in, const hs_event *ev) {
  in->events++;
  in->by_type[ev->header_type & 31]++;
  if (!in->have_ts || ev->timestamp < in->first_ts) in->first_ts = ev->timestamp;
  if (!in->have_ts || ev->timestamp > in->last_ts) in->last_ts = ev->timestamp;
  in->have_ts = 1;
  if ((ev->flags & HS_EVF_KERNEL) && (ev->hook == 0x0005 || ev->hook == 0x0020) && ev->payload_len >= 32) {
    int i;                     /* a merged trace has several: what any session enabled */
    for (i = 0; i < 8; i++) in->masks[i] |= rd32(ev->payload + 4 * i);
    in->have_masks = 1;
  }
  if ((ev->flags & HS_EVF_KERNEL) && (ev->hook >> 8) == 0x18) {
    if (ev->opcode == 32) in->stackwalk++;
    else if (ev->opcode == 37 || ev->opcode == 38) in->stack_keys++;
    else if (ev->opcode >= 34 && ev->opcode <= 36) in->stack_defs++;
  }
  if (ev->flags & HS_EVF_EXT) {
    uint32_t pos = 0;
    hs_ext_item it;
    while (hs_event_ext_next(ev, &pos, &it) == 1)
      if (it.type == HS_EXT_STACK_TRACE32 || it.type == HS_EXT_STACK_TRACE64) in->ext_stacks++;
  }
  /* the figures key kernel records by the unmasked u16 at +0 */
  return hsi_evcount_add(&in->keys, ev, (ev->flags & HS_EVF_KERNEL) ? rd16(ev->record) : ev->version);
}

/* In the order of the GUIDs' text (fixed-width lower-case hex, so the
   fields' values in turn), without making the text. */
static int cmp_guid(const hs_guid *a, const hs_guid *b) {
  if (a->d1 != b->d1) return a->d1 < b->d1 ? -1 : 1;
  if (a->d2 != b->d2) return a->d2 < b->d2 ? -1 : 1;
  if (a->d3 != b->d3) return a->d3 < b->d3 ? -1 : 1;
  return memcmp(a->d4, b->d4, sizeof a->d4);
}

/* Sorted by (provider, id, opcode, version), as the figures are. */
static int cmp_rows(const void *pa, const void *pb) {
  const hsi_evrow *a = (const hsi_evrow *)pa, *b = (const hsi_evrow *)pb;
  int c = cmp_guid(&a->provider, &b->provider);
  if (c) return c;
  if (a->id != b->id) return a->id < b->id ? -1 : 1;
  if (a->opcode != b->opcode) return a->opcode < b->opcode ? -1 : 1;
  return a->version < b->version ? -1 : a->version > b->version;
}

static hsi_evrow *sorted_rows(const hsi_info *in) {
  size_t n = in->keys.n;
  hsi_evrow *rows = (hsi_evrow *)malloc((n ? n : 1) * sizeof *rows);
  if (!rows) return NULL;
  if (n) memcpy(rows, in->keys.rows, n * sizeof *rows);
  qsort(rows, n, sizeof *rows, cmp_rows);
  return rows;
}

void hsi_json_str(FILE *o, const char *s) {
  fputc('"', o);
  while (*s) {
    size_t run = 0;                      /* the characters that need no escape, at once */
    unsigned char ch;
    while ((ch = (unsigned char)s[run]) != 0 && ch != '"' && ch != '\\' && ch >= 0x20) run++;
    fwrite(s, 1, run, o);
    s += run;
    if (!ch) break;
    if (ch == '"' || ch == '\\') fprintf(o, "\\%c", ch);
    else fprintf(o, "\\u%04x", ch);
    s++;
  }
  fputc('"', o);
}

void hsi_info_set_layouts(hsi_info *in, const struct hsi_lcheck *lc) { in->lc = lc; }

int hsi_info_json(const hsi_info *in, const hs_reader *r, int file, FILE *o) {
  const hs_logfile *lf = hs_reader_logfile(r, file);
  const hs_file_stats *st = hs_reader_stats(r, file);
  hsi_evrow *rows = sorted_rows(in);
  size_t i;
  int t, first = 1;
  if (!rows) return HS_ENOMEM;
  fprintf(o, "{\n  \"file\": ");
  {
    const char *p = hs_reader_path(r, file), *b = strrchr(p, '/');
    hsi_json_str(o, b ? b + 1 : p);
  }
  fprintf(o, ",\n  \"decodable\": true,\n  \"header\": {\"logger_name\": ");
  hsi_json_str(o, lf->logger_name);
  fprintf(o, ", \"os_build\": %u, \"pointer_size\": %u, \"cpus\": %u, \"buffers_written\": %u, "
          "\"buffer_size\": %u, \"compressed\": %s, \"clock_type\": %u, \"perf_freq\": %lld, "
          "\"start_time\": %lld, \"end_time\": %lld, \"events_lost\": %u, \"buffers_lost\": %u},\n",
          lf->os_build, lf->pointer_size, lf->cpus, lf->buffers_written, lf->buffer_size,
          (lf->log_file_mode & HS_LOGMODE_COMPRESSED) ? "true" : "false", lf->clock_type,
          (long long)lf->perf_freq, (long long)lf->start_time, (long long)lf->end_time,
          lf->events_lost, lf->buffers_lost);
  fprintf(o, "  \"events\": %llu,\n  \"by_header_type\": {", (unsigned long long)in->events);
  for (t = 0; t < 32; t++) {
    if (!in->by_type[t]) continue;
    fprintf(o, "%s\"%s\": %llu", first ? "" : ", ", hs_header_type_name(t) ? hs_header_type_name(t) : "UNKNOWN",
            (unsigned long long)in->by_type[t]);
    first = 0;
  }
  fprintf(o, "},\n  \"by_key\": [");
  for (i = 0; i < in->keys.n; i++) {
    char g[HS_GUID_STRLEN];
    hs_guid_format(&rows[i].provider, g);
    fprintf(o, "%s\n    {\"provider\": \"%s\", \"opcode\": %u, \"id\": %u, \"version\": %u, \"count\": %llu}",
            i ? "," : "", g, rows[i].opcode, rows[i].id, rows[i].version, (unsigned long long)rows[i].count);
  }
  fprintf(o, "\n  ],\n  \"stacks\": {\"stackwalk_events\": %llu, \"stack_key_events\": %llu, "
          "\"ext_stack_items\": %llu},\n", (unsigned long long)in->stackwalk,
          (unsigned long long)in->stack_keys, (unsigned long long)in->ext_stacks);
  if (in->lc && hsi_lcheck_count(in->lc)) {
    fprintf(o, "  \"memory_layouts\": ");
    hsi_lcheck_json(in->lc, o);
    fprintf(o, ",\n");
  }
  fprintf(o, "  \"buffers\": {\"walked\": %u, \"compressed\": %u, \"damaged\": %u, \"lost_flag\": %u, "
          "\"records_damaged\": %llu, \"records_duplicate\": %llu, \"bytes_trailing\": %llu}\n}\n",
          st->buffers, st->buffers_compressed, st->buffers_damaged, st->buffers_lost_flag,
          (unsigned long long)st->records_damaged, (unsigned long long)st->records_duplicate,
          (unsigned long long)st->bytes_trailing);
  free(rows);
  return 0;
}

/* A by provider/opcode row within 80 columns: "  %9llu  " (13) before the
   name, "  id %-5u op %-3u v%u" (at most 24) after it. */
#define INFO_NAME_MAX (80 - 13 - 24)

/* "Provider/Event", "Provider" or the provider's GUID into out; its length. */
static size_t row_name(const hsi_evrow *r, char *out, size_t cap) {
  char g[HS_GUID_STRLEN];
  const char *pn = hs_provider_name(&r->provider), *en = hs_event_name(&r->provider, r->opcode);
  if (!pn) { hs_guid_format(&r->provider, g); pn = g; }
  snprintf(out, cap, en ? "%s/%s" : "%s", pn, en);
  return strlen(out);
}

static const char *clock_name(uint32_t c) {
  return c == 1 ? "QPC" : c == 2 ? "system time" : c == 3 ? "CPU cycles" : "unknown";
}

int hsi_info_text(const hsi_info *in, const hs_reader *r, int file, FILE *o) {
  const hs_logfile *lf = hs_reader_logfile(r, file);
  const hs_file_stats *st = hs_reader_stats(r, file);
  hsi_evrow *rows = sorted_rows(in);
  char when[64];
  size_t i;
  int t;
  if (!rows) return HS_ENOMEM;
  fprintf(o, "file:          %s (%llu bytes)\n", hs_reader_path(r, file), (unsigned long long)st->file_size);
  fprintf(o, "logger:        %s\n", lf->logger_name[0] ? lf->logger_name : "(none)");
  fprintf(o, "os:            Windows %u.%u build %u (log layout %u.%u)\n", lf->version[0], lf->version[1],
          lf->os_build, lf->version[2], lf->version[3]);
  fprintf(o, "pointer size:  %u\ncpus:          %u\n", lf->pointer_size, lf->cpus);
  fprintf(o, "clock:         %s, %lld ticks/s\n", clock_name(lf->clock_type), (long long)hs_time_freq(lf));
  fprintf(o, "start:         %s\n", hs_filetime_format(lf->start_time, when, sizeof when));
  if (in->have_ts)   /* in doubles: either time may be saturated (a damaged timestamp) */
    fprintf(o, "duration:      %.6f s (first to last event)\n",
            ((double)hs_time_ns(lf, in->last_ts) - (double)hs_time_ns(lf, in->first_ts)) / 1e9);
  fprintf(o, "log mode:      0x%08x\n", lf->log_file_mode);
  /* lines within 80 columns (a terminal's), continuation lines under the values */
  fprintf(o, "buffers:       %u walked (header says %u written), buffer size %u\n"
          "               %u compressed, %u damaged, %u flagged lost\n", st->buffers, lf->buffers_written,
          lf->buffer_size, st->buffers_compressed, st->buffers_damaged, st->buffers_lost_flag);
  fprintf(o, "lost:          %u events, %u buffers (header)\n", lf->events_lost, lf->buffers_lost);
  if (st->records_damaged || st->bytes_trailing)
    fprintf(o, "damage:        %llu records skipped, %llu trailing bytes, first at offset 0x%llx\n",
            (unsigned long long)st->records_damaged, (unsigned long long)st->bytes_trailing,
            (unsigned long long)st->first_damage_pos);
  if (in->have_masks) {
    /* Masks[1] 0x40 pool, 0x8000 VirtualAlloc, Masks[2] 0x20 heap [D: ntwmi; no heap trace has
       confirmed it yet] */
    int last = 7, m;
    while (last > 2 && in->masks[last] == 0) last--;        /* trailing zero masks left out */
    fprintf(o, "kernel masks: ");
    for (m = 0; m <= last; m++) fprintf(o, " %08x", in->masks[m]);
    fprintf(o, " (pool %s, VirtualAlloc %s, heap %s)\n", in->masks[1] & 0x40 ? "on" : "off",
            in->masks[1] & 0x8000 ? "on" : "off", in->masks[2] & 0x20 ? "on" : "off");
  }
  fprintf(o, "events:        %llu\n", (unsigned long long)in->events);
  for (t = 0; t < 32; t++)
    if (in->by_type[t])
      fprintf(o, "  %-16s %llu\n", hs_header_type_name(t) ? hs_header_type_name(t) : "UNKNOWN",
              (unsigned long long)in->by_type[t]);
  fprintf(o, "by provider/opcode:\n");
  /* "Provider/Event" as dump names it (the provider's GUID when it has no
     name, then no event name either: info --json has both), in a column
     as wide as the widest, so that id, op and v stay aligned after a long
     one (KernelTraceControl.ImageId/DbgID_RSDS); cut with '~' only past
     INFO_NAME_MAX, which no name heapscript knows reaches. */
  {
    int w = 8;
    char nm[128];
    for (i = 0; i < in->keys.n; i++) {
      int a = (int)row_name(&rows[i], nm, sizeof nm);
      if (a > w) w = a;
    }
    if (w > INFO_NAME_MAX) w = INFO_NAME_MAX;
    for (i = 0; i < in->keys.n; i++) {
      if ((int)row_name(&rows[i], nm, sizeof nm) > w) { nm[w - 1] = '~'; nm[w] = '\0'; }
      fprintf(o, "  %9llu  %-*s  id %-5u op %-3u v%u\n", (unsigned long long)rows[i].count, w, nm,
              rows[i].id, rows[i].opcode, rows[i].version);
    }
  }
  if (in->stackwalk || in->stack_keys || in->ext_stacks)
    fprintf(o, "stacks:        %llu stack walks, %llu ext items,\n"
            "               %llu key references, %llu key definitions\n",
            (unsigned long long)in->stackwalk, (unsigned long long)in->ext_stacks,
            (unsigned long long)in->stack_keys, (unsigned long long)in->stack_defs);
  free(rows);
  return 0;
}

