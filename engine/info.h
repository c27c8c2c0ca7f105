/* info.h -- trace summary for `heapscript info` (text and JSON). */
#ifndef HS_INFO_H
#define HS_INFO_H
#include <stdio.h>
#include "heapscript.h"

typedef struct hsi_info hsi_info;
hsi_info *hsi_info_new(void);
void hsi_info_free(hsi_info *in);
int hsi_info_add(hsi_info *in, const hs_event *ev);    /* 0 or HS_ENOMEM */
/* The figures of file `file` of r (after all its events were added). */
int hsi_info_json(const hsi_info *in, const hs_reader *r, int file, FILE *o);
int hsi_info_text(const hsi_info *in, const hs_reader *r, int file, FILE *o);
/* The memory layout checks to print with the JSON figures (layoutcheck.h;
   kept, not owned; NULL: none). */
struct hsi_lcheck;
void hsi_info_set_layouts(hsi_info *in, const struct hsi_lcheck *lc);
/* s as a JSON string literal, quotes included. */
void hsi_json_str(FILE *o, const char *s);
#endif
