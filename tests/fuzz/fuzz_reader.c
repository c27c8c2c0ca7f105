/*
** fuzz_reader.c -- libFuzzer target over the reader: any bytes in, every
** event walked, every ext item and stack read, the summary built.  `make
** fuzz` builds it with clang's libFuzzer; `make test` replays
** tests/fuzz/corpus through it with driver.c under the normal build (and
** under ASan/UBSan with SANITIZE=1).
*/
#include <stdint.h>
#include <stddef.h>
#include "heapscript.h"
#include "info.h"
#include "analysis.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

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
