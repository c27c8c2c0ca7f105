/*
** kdecode.h -- the payload decoders of the records the process map is
** built from: Process and Thread (process.c; ETL-FORMAT.md §6.5, §6.6),
** Image and KernelTraceControl ImageId / DbgID_RSDS (image.c; §6.7,
** §6.8).  A decoder says what one record holds; what it means for the
** map (which instance, which image, pending ids) is procmap.c's business.
**
** Each decoder takes the op and version the caller routed on (for kernel
** records the hook's type and the version without its PEBS/PMC bits),
** fills *o (zeroed first) and returns -1 if no reading fits the payload
** (the record is damaged), 0 if it was read at the record's pointer
** width, 1 if only the other width fits: a classic MOF header (§7.2) does
** not say the width its writer used, so those records are also tried the
** other way, and the caller counts how often that was needed.
**
** Strings are left where they are in the payload (pointer + length in
** bytes, not terminated); they stay valid as long as the event's payload.
** Fields marked "decoder's own" are set and read by the decoder only.
*/
#ifndef HS_KDECODE_H
#define HS_KDECODE_H

#include "heapscript.h"

/* What one Process record says (§6.5). */
typedef struct hsi_process_info {
  uint32_t pid, ppid, session, flags;
  int long_sid;            /* decoder's own: read the SID as TOKEN_USER + SID even if its first u32 is 0 */
  const char *name;        /* ImageFileName, ANSI */
  size_t namelen;
  const uint8_t *cmd;      /* CommandLine, UTF-16LE */
  size_t cmdlen;
} hsi_process_info;

/* What one Thread record (Start/End/DCStart/DCEnd, SetName) says (§6.6). */
typedef struct hsi_thread_info {
  uint32_t pid, tid;
  const uint8_t *name;     /* ThreadName, UTF-16LE (v3 and SetName only) */
  size_t namelen;
  int version;             /* decoder's own */
} hsi_thread_info;

/* What one Image record (Load/Unload/DCStart/DCEnd) says (§6.7). */
typedef struct hsi_image_info {
  uint64_t base, size;
  uint32_t pid, checksum, tds;   /* pid HS_NOID for v0, which has none */
  const uint8_t *name;     /* FileName, UTF-16LE */
  size_t namelen;
  int version;             /* decoder's own */
  int size32;              /* decoder's own: read with a u32 ModuleSize (see img_v1, img_v2) */
} hsi_image_info;

/* What one KernelTraceControl ImageId (op 0) or DbgID_RSDS (op 36)
   record says (§6.8). */
typedef struct hsi_ktc_info {
  uint64_t base, size;
  uint32_t pid, tds, age;
  hs_guid guid;
  const uint8_t *wname;    /* ImageId OriginalFileName, UTF-16LE */
  const char *aname;       /* DbgID_RSDS PdbFileName, ANSI */
  size_t namelen;
  int op;                  /* decoder's own */
} hsi_ktc_info;

/* Process Start/End/DCStart/DCEnd/Defunct, versions 0-5 (newer as 5). */
int hsi_decode_process(const hs_event *ev, int version, hsi_process_info *o);

/* Thread Start/End/DCStart/DCEnd versions 0-3 (newer as 3), SetName (op 72). */
int hsi_decode_thread(const hs_event *ev, int op, int version, hsi_thread_info *o);

/* Image Load/Unload/DCStart/DCEnd, versions 0-3. */
int hsi_decode_image(const hs_event *ev, int version, hsi_image_info *o);

/* KernelTraceControl ImageId (op 0) or DbgID_RSDS (op 36). */
int hsi_decode_ktc(const hs_event *ev, int op, hsi_ktc_info *o);

#endif
