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
#include "layoutcheck.h"

typedef struct keyrow {
  hs_guid provider;
  uint16_t id, version;
  uint8_t opcode, used;
  uint64_t count;
} keyrow;

struct hsi_info {
  uint64_t events;
  uint64_t by_type[32];
  keyrow *keys;
  size_t nkeys, capkeys;       /* open addressing, capkeys a power of two */
  uint64_t stackwalk, stack_keys, stack_defs, ext_stacks;
  int64_t first_ts, last_ts;
  int have_ts;
  uint32_t masks[8];           /* EventTrace Extension/EndExtension (group 0 op 5/32): PERFINFO group masks, ORed */
  int have_masks;
  const struct hsi_lcheck *lc; /* memory layout checks, printed with the JSON */
  /* kernel events' rows by (hook, version): a trace is mostly a few kinds
     of them, so most events skip the hash of their key; cleared at grow() */
  uint64_t ktag[256];          /* 1 << 32 | hook << 16 | version; 0: empty */
  uint32_t krow[256];
};

static uint32_t key_hash(const hs_guid *g, int op, int id, int ver) {
  uint32_t h = g->d1 * 2654435761u ^ (uint32_t)g->d2 << 16 ^ g->d3 ^ rd32(g->d4) ^ rd32(g->d4 + 4) * 40503u;
  h ^= (uint32_t)op * 0x9E3779B1u ^ (uint32_t)id << 8 ^ (uint32_t)ver << 24;
  return h ^ h >> 15;
}

static int grow(hsi_info *in) {
  size_t i, cap = in->capkeys ? in->capkeys * 2 : 256;
  keyrow *nk = (keyrow *)calloc(cap, sizeof *nk);
  if (!nk) return -1;
  for (i = 0; i < in->capkeys; i++) {
    keyrow *k = &in->keys[i];
    if (k->used) {
      size_t j = key_hash(&k->provider, k->opcode, k->id, k->version) & (cap - 1);
      while (nk[j].used) j = (j + 1) & (cap - 1);
      nk[j] = *k;
    }
  }
  free(in->keys);
  in->keys = nk;
  in->capkeys = cap;
  memset(in->ktag, 0, sizeof in->ktag);
  return 0;
}

static int count_key(hsi_info *in, const hs_event *ev) {
  /* The figures key kernel records by the unmasked u16 at +0. */
  int kernel = (ev->flags & HS_EVF_KERNEL) != 0;
  int ver = kernel ? rd16(ev->record) : ev->version;
  /* a kernel event's provider, opcode and id follow from its hook */
  uint64_t tag = (uint64_t)1 << 32 | (uint32_t)ev->hook << 16 | (uint32_t)ver;
  unsigned c = (ev->hook ^ ev->hook >> 8 ^ (unsigned)ver * 31u) & 255u;
  size_t j;
  if (kernel && in->ktag[c] == tag) { in->keys[in->krow[c]].count++; return 0; }
  if ((in->nkeys + 1) * 2 > in->capkeys && grow(in)) return -1;
  j = key_hash(&ev->provider, ev->opcode, ev->id, ver) & (in->capkeys - 1);
  for (;; j = (j + 1) & (in->capkeys - 1)) {
    keyrow *k = &in->keys[j];
    if (!k->used) {
      k->used = 1; k->provider = ev->provider; k->opcode = ev->opcode;
      k->id = ev->id; k->version = (uint16_t)ver; k->count = 1;
      in->nkeys++;
      break;
    }
    if (k->opcode == ev->opcode && k->id == ev->id && k->version == ver &&
        hs_guid_eq(&k->provider, &ev->provider)) { k->count++; break; }
  }
  if (kernel) { in->ktag[c] = tag; in->krow[c] = (uint32_t)j; }
  return 0;
}

hsi_info *hsi_info_new(void) { return (hsi_info *)calloc(1, sizeof(hsi_info)); }

void hsi_info_free(hsi_info *in) {
  if (!in) return;
  free(in->keys);
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
  return count_key(in, ev);
}

static int cmp_guid(const hs_guid *a, const hs_guid *b) {
  char x[HS_GUID_STRLEN], y[HS_GUID_STRLEN];
  hs_guid_format(a, x);
  hs_guid_format(b, y);
  return strcmp(x, y);
}

/* Sorted by (provider, id, opcode, version), as the figures are. */
static int cmp_rows(const void *pa, const void *pb) {
  const keyrow *a = (const keyrow *)pa, *b = (const keyrow *)pb;
  int c = cmp_guid(&a->provider, &b->provider);
  if (c) return c;
  if (a->id != b->id) return a->id < b->id ? -1 : 1;
  if (a->opcode != b->opcode) return a->opcode < b->opcode ? -1 : 1;
  return a->version < b->version ? -1 : a->version > b->version;
}

static keyrow *sorted_rows(const hsi_info *in) {
  keyrow *rows = (keyrow *)malloc((in->nkeys ? in->nkeys : 1) * sizeof *rows);
  size_t i, n = 0;
  if (!rows) return NULL;
  for (i = 0; i < in->capkeys; i++)
    if (in->keys[i].used) rows[n++] = in->keys[i];
  qsort(rows, n, sizeof *rows, cmp_rows);
  return rows;
}

void hsi_json_str(FILE *o, const char *s) {
  fputc('"', o);
  for (; *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '"' || ch == '\\') fprintf(o, "\\%c", ch);
    else if (ch < 0x20) fprintf(o, "\\u%04x", ch);
    else fputc(ch, o);
  }
  fputc('"', o);
}

void hsi_info_set_layouts(hsi_info *in, const struct hsi_lcheck *lc) { in->lc = lc; }

int hsi_info_json(const hsi_info *in, const hs_reader *r, int file, FILE *o) {
  const hs_logfile *lf = hs_reader_logfile(r, file);
  const hs_file_stats *st = hs_reader_stats(r, file);
  keyrow *rows = sorted_rows(in);
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
  for (i = 0; i < in->nkeys; i++) {
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

static const char *clock_name(uint32_t c) {
  return c == 1 ? "QPC" : c == 2 ? "system time" : c == 3 ? "CPU cycles" : "unknown";
}

int hsi_info_text(const hsi_info *in, const hs_reader *r, int file, FILE *o) {
  const hs_logfile *lf = hs_reader_logfile(r, file);
  const hs_file_stats *st = hs_reader_stats(r, file);
  keyrow *rows = sorted_rows(in);
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
  if (in->have_ts)
    fprintf(o, "duration:      %.6f s (first to last event)\n",
            (double)(hs_time_ns(lf, in->last_ts) - hs_time_ns(lf, in->first_ts)) / 1e9);
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
  for (i = 0; i < in->nkeys; i++) {
    char g[HS_GUID_STRLEN];
    const char *pn = hs_provider_name(&rows[i].provider), *en = hs_event_name(&rows[i].provider, rows[i].opcode);
    hs_guid_format(&rows[i].provider, g);
    /* the provider's name, or its GUID when it has none (info --json has both) */
    fprintf(o, "  %9llu  %-22s id %-5u op %-3u v%-2u %s\n", (unsigned long long)rows[i].count,
            pn ? pn : g, rows[i].id, rows[i].opcode, rows[i].version, en ? en : "");
  }
  if (in->stackwalk || in->stack_keys || in->ext_stacks)
    fprintf(o, "stacks:        %llu stack walks, %llu ext items,\n"
            "               %llu key references, %llu key definitions\n",
            (unsigned long long)in->stackwalk, (unsigned long long)in->ext_stacks,
            (unsigned long long)in->stack_keys, (unsigned long long)in->stack_defs);
  free(rows);
  return 0;
}

