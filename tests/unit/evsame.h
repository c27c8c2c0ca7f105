/* evsame.h -- an event the walk made against the one hsi_record_decode
   makes from the same record bytes (test_record, fuzz_reader): every field
   a record's decoding sets, pointers included; the walk's own fields
   (cpu, file, buffer, offset, buffer_pos) and its tail flag apart. */
#ifndef HS_EVSAME_H
#define HS_EVSAME_H
#include <string.h>
#include "heapscript.h"

static int hs_event_same_decoded(const hs_event *walked, const hs_event *d) {
  const hs_event *a = walked;
  return memcmp(&a->provider, &d->provider, sizeof a->provider) == 0 && a->timestamp == d->timestamp &&
         a->keyword == d->keyword && a->record == d->record && a->payload == d->payload && a->ext == d->ext &&
         a->record_len == d->record_len && a->payload_len == d->payload_len && a->ext_len == d->ext_len &&
         a->pid == d->pid && a->tid == d->tid && a->id == d->id && a->version == d->version &&
         a->task == d->task && a->hook == d->hook && a->header_flags == d->header_flags &&
         a->opcode == d->opcode && a->level == d->level && a->channel == d->channel &&
         a->header_type == d->header_type && a->pointer_size == d->pointer_size &&
         (a->flags & ~HS_EVF_BUF0TAIL) == d->flags;
}
#endif
