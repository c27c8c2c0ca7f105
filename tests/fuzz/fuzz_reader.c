/*
** fuzz_reader.c -- libFuzzer target over the reader: any bytes in, every
** event walked, every ext item and stack read, the summary built; each
** event the walk makes (from its chunks' checked records) must be the one
** hsi_record_decode makes from the record's bytes, or the target aborts.
** `make fuzz` builds it with clang's libFuzzer; `make test` replays
** tests/fuzz/corpus and the bundled real traces through it with driver.c
** under the normal build (and under ASan/UBSan with SANITIZE=1).
*/
#include <stdint.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "heapscript.h"
#include "record.h"
#include "../unit/evsame.h"
#include "info.h"
#include "analysis.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The walk's event against hsi_record_decode's of the same bytes. */
static void same_as_decoded(const hs_event *ev) {
  hs_event d;
  uint32_t next;
  const char *why = "";
  memset(&d, 0, sizeof d);
  if (hsi_record_decode(ev->record, 0, ev->record_len, ev->pointer_size, &d, &next, &why) != 1 ||
      !hs_event_same_decoded(ev, &d))
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  hs_reader *r;
  hs_event ev;
  hsi_info *in;
  uint64_t frames[256];
  int pass;
  if (hs_reader_open_mem(&r, data, size, "fuzz", NULL, NULL, 0) != 0) return 0;
  in = hsi_info_new();
  for (pass = 0; pass < 2; pass++) {        /* the second pass checks rewind */
    while (hs_reader_next(r, &ev) == 1) {
      uint32_t pos = 0;
      hs_ext_item it;
      hs_cursor c;
      const uint8_t *s;
      same_as_decoded(&ev);
      while (hs_event_ext_next(&ev, &pos, &it) == 1) {}
      (void)hs_event_ext_stack(&ev, frames, 256, NULL);
      hs_cur_init(&c, ev.payload, ev.payload_len, ev.pointer_size);
      (void)hs_cur_ptr(&c);
      (void)hs_cur_wstr(&c, &s);
      (void)hs_cur_sid(&c, &s);
      if (in && pass == 0) hsi_info_add(in, &ev);
    }
    hs_reader_rewind(r);
  }
  {
    /* and everything that decodes payloads: processes, images, memory
       events, stacks, lifetimes */
    hsi_analysis *a;
    char err[128];
    if (hsi_analysis_run(r, NULL, &a, err, sizeof err) == 0) hsi_analysis_free(a);
  }
  hsi_info_free(in);
  hs_reader_close(r);
  return 0;
}
