/*
** writer.h -- write .etl files byte for byte as Windows lays them out.
**
** Used for synthetic traces of what no public trace covers (heap,
** VirtualAlloc and pool events, other clocks, compression formats) by the
** C tests, the Lua binding and the benchmark.  The framing follows
** shared/docs/ETL-FORMAT.md sections 1-4 and was checked against the
** corpus: buffer 0 holds the logfile header record, then one buffer per
** CPU is filled and written out when the next record does not fit, so
** buffers of different CPUs interleave in flush order, as in real files.
**
** Streaming: the writer holds one buffer per CPU that has events (plus a
** compression buffer) and writes each buffer with one fwrite; memory does
** not grow with the trace.
**
** Errors: functions return 0 or a negative HS_E* code and leave a message
** in hsi_writer_error().  An I/O error is sticky: every later call fails
** with HS_EIO.  A rejected record (bad argument, decreasing timestamp)
** leaves the writer usable.
*/
#ifndef HS_WRITER_H
#define HS_WRITER_H

#include "heapscript.h"

typedef struct hsi_writer hsi_writer;

/* Zero in any field means "the default" given after it. */
typedef struct hsi_writer_opts {
  int pointer_size;       /* 4 or 8 (8): logfile header width, SYSTEM32/64 */
  uint32_t buffer_size;   /* in-memory buffer size, multiple of 8, 1 KiB..16 MiB (65536) */
  uint32_t cpus;          /* NumberOfProcessors; cpu arguments are < cpus (1) */
  uint32_t os_build;      /* ProviderVersion (19041; 7601 with old_layout) */
  int clock_type;         /* 1 QPC, 2 system time (FILETIME stamps), 3 CPU cycles (1) */
  int64_t perf_freq;      /* QPC ticks per second (10000000) */
  uint32_t cpu_mhz;       /* CpuSpeedInMHz, the cycle clock's rate (3000) */
  int64_t start_time;     /* StartTime, FILETIME (2020-01-01 00:00 UTC) */
  int64_t start_ticks;    /* timestamp of the logfile header record, in the
                             trace clock; with clock 2 it defaults to start_time */
  int old_layout;         /* 1: Vista/Win7 buffers: context {u8 cpu, u8 8}, no
                             PROC_INDEX flag, buffer 0 SavedOffset 0, version 6.1.1.5 */
  int compress;           /* 0, HS_XCA_LZNT1, HS_XCA_XPRESS or HS_XCA_XPRESS_HUFF:
                             compressed data buffers as relogger output has them */
  uint32_t log_file_mode; /* LogFileMode (0x1 sequential; 0x04010001 when compressed) */
  uint16_t logger_id;     /* LoggerId in every buffer context (0, as relogged files) */
  const char *logger_name;  /* UTF-8 ("heapscript") */
  const char *log_file_name;/* UTF-8 LogFileName string (the path given to open) */
  uint32_t events_lost, buffers_lost;
  /* BufferFlag bits every data buffer also gets, as a session that lost
     events sets them: 0x2 EVENTS_LOST, 0x4 BUFFER_LOST, 0x8 RTBACKUP_CORRUPT,
     0x10 RTBACKUP (others: an error at open) */
  uint16_t buffer_flags;
  /* Non-NULL: buffer 0 also gets an EventTrace Extension record (group 0
     op 5) with these 8 PERFINFO group masks, the way kernel loggers say
     what was enabled (masks[1] 0x40 pool, 0x8000 VirtualAlloc; masks[2]
     0x20 heap).  KernelEventVersion is written as 0. */
  const uint32_t *group_masks;
  /* What a copy of another trace (merge) keeps of its header; a synthetic
     trace leaves them 0. */
  uint8_t os_major, os_minor;   /* Version bytes 0-1 (10.0; 6.1 with old_layout);
                                   bytes 2-3 name the layout written */
  uint32_t timer_resolution;    /* TimerResolution, 100 ns units (156250) */
  const uint8_t *time_zone;     /* TIME_ZONE_INFORMATION as a file holds it, 0xAC
                                   bytes (Bias, names, dates); NULL: UTC */
  int64_t boot_time;            /* BootTime, FILETIME (where the QPC or cycle
                                   counter was 0, from start_ticks; start_time
                                   with clock 2) */
  int64_t end_time;             /* EndTime, FILETIME: at close, the later of this
                                   and the latest record's time */
} hsi_writer_opts;

/*
** Create `path` (truncating it) and write buffer 0.  opts may be NULL.
** On failure *w is NULL and err (if not NULL) holds the reason.
*/
int hsi_writer_open(hsi_writer **w, const char *path, const hsi_writer_opts *opts,
                    char *err, size_t errlen);

/*
** Flush every CPU buffer (the last one written gets FLUSH_MARKER), then
** rewrite buffer 0's BuffersWritten and EndTime (FILETIME of the latest
** record, or opts.end_time if later).  Frees w in all cases; returns 0 or the first error met by any
** call (the file is then incomplete).
*/
int hsi_writer_close(hsi_writer *w);

/*
** The buffer that holds CPU cpu's next record gets BufferFlag bits flags
** (0x2 EVENTS_LOST, 0x4 BUFFER_LOST, 0x8, 0x10 as opts.buffer_flags), as a
** copier carries an input buffer's: each call marks a buffer of its own
** (when the buffer open on that CPU is marked already, the next record
** starts a new one), so the file has as many marked buffers as calls.
*/
int hsi_writer_mark(hsi_writer *w, int cpu, uint16_t flags);

/* The last error message; "" if none.  Valid until the next call on w. */
const char *hsi_writer_error(const hsi_writer *w);
/* Buffers written so far, buffer 0 included. */
uint32_t hsi_writer_buffers(const hsi_writer *w);

/*
** Common rules for every record function:
** - cpu < opts.cpus: the record goes to that CPU's buffer;
** - ts is the record's timestamp in the trace clock; within one CPU it
**   must not decrease (HS_EARG otherwise), across CPUs anything goes;
** - a record must fit in one buffer and in a u16 Size (HS_EARG);
** - payload bytes are copied; payload may be NULL when len is 0.
*/

/*
** Kernel-style record: header_kind is HS_HT_SYSTEM32/64 (0x20-byte header
** with tid/pid), HS_HT_COMPACT32/64 (0x18, tid/pid) or HS_HT_PERFINFO32/64
** (0x10, no ids: pid/tid ignored).  version is the whole u16 at +0; PEBS or
** PMC extension words, if its bits ask for them, are the caller's first
** payload bytes.
*/
int hsi_writer_kernel(hsi_writer *w, int cpu, int header_kind, int group, int type,
                      int version, uint32_t pid, uint32_t tid, int64_t ts,
                      const void *payload, size_t len);

/*
** Header fields a copied record keeps (merge); a synthetic record leaves
** them zero.  The record functions that take `more` (NULL: all zero)
** write the fields their header has and ignore the others.
*/
typedef struct hsi_hdr_more {
  /* SYSTEM +0x18, FULL/INSTANCE +0x28, EVENT_HEADER +0x38: u32 KernelTime
     then u32 UserTime, or the u64 ProcessorTime, as the u64 there */
  uint64_t cpu_time;
  hs_guid activity_id;          /* EVENT_HEADER ActivityId (+0x40) */
  uint16_t flags;               /* EVENT_HEADER Flags; EXTENDED_INFO (0x1) is set
                                   when items are written, cleared otherwise */
  uint16_t event_property;      /* EVENT_HEADER EventProperty (+0x06) */
  uint8_t channel;              /* EVENT_HEADER Channel (+0x2B) */
  uint8_t level;                /* FULL/INSTANCE Class.Level (+0x05) */
  uint32_t instance_id, parent_instance_id;   /* INSTANCE +0x30, +0x34 */
  hs_guid parent_guid;          /* INSTANCE ParentGuid (+0x38) */
} hsi_hdr_more;

/* hsi_writer_kernel with the SYSTEM header's processor times (more->cpu_time;
   COMPACT and PERFINFO headers have none). */
int hsi_writer_kernel_more(hsi_writer *w, int cpu, int header_kind, int group, int type,
                           int version, uint32_t pid, uint32_t tid, int64_t ts,
                           const hsi_hdr_more *more, const void *payload, size_t len);

/* An extended data item for hsi_writer_event_ext. */
typedef struct hsi_ext {
  uint16_t type;          /* HS_EXT_* */
  uint16_t len;           /* DataSize */
  const void *data;
} hsi_ext;

/*
** Manifest/TraceLogging record: EVENT_HEADER (0x50 bytes), header_type
** HS_HT_EVENT32 or HS_HT_EVENT64.  With nframes > 0 a STACK_TRACE item
** (MatchId 0, frames innermost first) comes first among the extended
** items: STACK_TRACE32 (u32 frames) on EVENT32, STACK_TRACE64 on EVENT64.
*/
int hsi_writer_event(hsi_writer *w, int cpu, int header_type, const hs_guid *provider,
                     uint16_t id, uint8_t version, uint8_t opcode, uint8_t level,
                     uint16_t task, uint64_t keyword, uint32_t pid, uint32_t tid,
                     int64_t ts, const void *payload, size_t len,
                     const uint64_t *stack, size_t nframes);
/*
** The same with explicit extended items, written in order after the stack
** item (if any); stack_type is HS_EXT_STACK_TRACE32 or _64 when nframes > 0
** (a STACK_TRACE64 item on an EVENT32 record is what WOW64 events carry).
** more (may be NULL): Flags, EventProperty, Channel, processor time and
** ActivityId.
*/
int hsi_writer_event_ext(hsi_writer *w, int cpu, int header_type, const hs_guid *provider,
                         uint16_t id, uint8_t version, uint8_t opcode, uint8_t level,
                         uint16_t task, uint64_t keyword, uint32_t pid, uint32_t tid,
                         int64_t ts, const uint64_t *stack, size_t nframes, int stack_type,
                         const hsi_ext *items, size_t nitems, const hsi_hdr_more *more,
                         const void *payload, size_t len);

/* Classic MOF record: FULL_HEADER32/64 (EVENT_TRACE_HEADER, 0x30 bytes). */
int hsi_writer_mof(hsi_writer *w, int cpu, int header_type, const hs_guid *guid,
                   uint8_t type, uint16_t version, uint32_t pid, uint32_t tid, int64_t ts,
                   const void *payload, size_t len);
/* The same with Class.Level and the processor times from more, and
   INSTANCE32/64 (EVENT_INSTANCE_GUID_HEADER, 0x48 bytes) as well, with
   more's instance ids and ParentGuid. */
int hsi_writer_mof_more(hsi_writer *w, int cpu, int header_type, const hs_guid *guid,
                        uint8_t type, uint16_t version, uint32_t pid, uint32_t tid, int64_t ts,
                        const hsi_hdr_more *more, const void *payload, size_t len);

/*
** StackWalk op 32 (group 0x18, version 2) for the event stamped event_ts on
** (pid, tid): PERFINFO64 with u64 frames for ptr 8 (what every corpus
** trace has, 32-bit processes included), PERFINFO32 with u32 frames for
** ptr 4.  Frames innermost first.  ts is the stack record's own stamp
** (>= event_ts in real traces).
*/
int hsi_writer_stack(hsi_writer *w, int cpu, int64_t ts, int64_t event_ts, uint32_t pid,
                     uint32_t tid, const uint64_t *frames, size_t n, int ptr);

/*
** Kernel rundown records (ETL-FORMAT.md 6.5-6.7); ptr 4 or 8 picks
** SYSTEM32/64 and the payload width, 0 means opts.pointer_size.
*/

/* Process v4, SYSTEM header: opcode 1 Start, 2 End, 3 DCStart, 4 DCEnd.
   Header pid is ppid for Start (the parent creates it) and pid otherwise,
   header tid 0; empty SID (u32 0); image_name is written as is (ANSI);
   PackageFullName and ApplicationId empty.  cmdline may be NULL. */
int hsi_writer_process(hsi_writer *w, int cpu, int opcode, int ptr, uint32_t pid,
                       uint32_t ppid, int64_t ts, const char *image_name,
                       const char *cmdline_utf8);

/* Thread v3, SYSTEM header with (pid, tid): opcode 1 Start, 2 End, 3 DCStart,
   4 DCEnd.  Stack fields 0, Win32StartAddr = start_addr, priorities 8/5/2. */
int hsi_writer_thread(hsi_writer *w, int cpu, int opcode, int ptr, uint32_t pid,
                      uint32_t tid, uint64_t start_addr, int64_t ts);

/* Image v3, SYSTEM header with pid: opcode 10 Load (hook 0x030A), 2 Unload,
   3 DCStart, 4 DCEnd (hooks 0x1402-0x1404).  DefaultBase = base; checksum,
   TimeDateStamp 0 (hsi_writer_image_id: the ones given). */
int hsi_writer_image(hsi_writer *w, int cpu, int opcode, int ptr, uint32_t pid,
                     uint64_t base, uint64_t size, int64_t ts, const char *nt_path_utf8);
int hsi_writer_image_id(hsi_writer *w, int cpu, int opcode, int ptr, uint32_t pid, uint64_t base,
                        uint64_t size, int64_t ts, const char *nt_path_utf8, uint32_t checksum,
                        uint32_t time_date_stamp);

#endif
