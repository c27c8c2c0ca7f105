/*
** heapscript.h -- the one public header of the heapscript engine.
**
** The engine reads Event Tracing for Windows (.etl) files into one
** time-ordered stream of event records (hs_reader), and turns heap,
** VirtualAlloc and pool events into allocation lifetimes.  Nothing here
** depends on Lua; the Lua classes are clients of this API.
**
** Conventions: functions return 0 (or a positive count) on success and a
** negative HS_E* code on failure, with a message in the handle's error
** buffer (hs_reader_error).  Pointers returned by getters stay valid as
** long as the text next to the getter says.
*/
#ifndef HEAPSCRIPT_H
#define HEAPSCRIPT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HS_VERSION "0.1.0"

/* Error codes. */
#define HS_OK        0
#define HS_EIO      (-1)   /* cannot open, map or read a file */
#define HS_EFORMAT  (-2)   /* not an ETL file, or damaged beyond use */
#define HS_ENOMEM   (-3)
#define HS_EARG     (-4)   /* misuse of the API */
#define HS_EUNSUP   (-5)   /* valid but unsupported (e.g. unknown compression) */

#define HS_ERRLEN 512

/* "No process/thread id": PERFINFO records carry none. */
#define HS_NOID 0xFFFFFFFFu

/* ------------------------------------------------------------------ GUID */

/* Fields in host order; the file stores them in Windows byte order. */
typedef struct hs_guid {
  uint32_t d1;
  uint16_t d2, d3;
  uint8_t d4[8];
} hs_guid;

/* Lower case, no braces: 36 characters plus NUL. */
#define HS_GUID_STRLEN 37
void hs_guid_format(const hs_guid *g, char out[HS_GUID_STRLEN]);
int hs_guid_parse(const char *s, hs_guid *g);        /* 0 or HS_EARG */
int hs_guid_eq(const hs_guid *a, const hs_guid *b);
hs_guid hs_guid_from_bytes(const uint8_t b[16]);    /* Windows byte order */

/* ---------------------------------------------------------- record header */

/* Header types: byte 2 of the record marker. */
enum {
  HS_HT_SYSTEM32 = 0x01, HS_HT_SYSTEM64 = 0x02,
  HS_HT_COMPACT32 = 0x03, HS_HT_COMPACT64 = 0x04,
  HS_HT_FULL32 = 0x0A, HS_HT_INSTANCE32 = 0x0B,
  HS_HT_ERROR = 0x0D, HS_HT_MESSAGE = 0x0F,
  HS_HT_PERFINFO32 = 0x10, HS_HT_PERFINFO64 = 0x11,
  HS_HT_EVENT32 = 0x12, HS_HT_EVENT64 = 0x13,
  HS_HT_FULL64 = 0x14, HS_HT_INSTANCE64 = 0x15
};
/* "SYSTEM64", "EVENT_HEADER32", ...; NULL for an unknown type. */
const char *hs_header_type_name(int ht);

/* Event flags (hs_event.flags). */
#define HS_EVF_KERNEL   0x01  /* SYSTEM/COMPACT/PERFINFO: provider from the hook group */
#define HS_EVF_HAS_IDS  0x02  /* the header carries pid and tid */
#define HS_EVF_EXT      0x04  /* EVENT_HEADER extended data items present */
#define HS_EVF_STRING   0x08  /* EVENT_HEADER STRING_ONLY: payload is UTF-16 text */
#define HS_EVF_BUF0TAIL 0x10  /* from buffer 0 between SavedOffset and Offset */

/*
** One event record: a view into a mapped or decompressed buffer.  Valid
** until the next hs_reader_next() or hs_reader_close() on its reader;
** copy what must live longer.  No allocation is made per event.
*/
typedef struct hs_event {
  hs_guid provider;        /* class GUID; kernel groups mapped (Image Load 0x030A too) */
  int64_t timestamp;       /* raw ticks in the file's clock */
  uint64_t keyword;        /* EVENT_HEADER only */
  const uint8_t *record;   /* the whole record, header included */
  const uint8_t *payload;  /* user data (after ext items, PEBS/PMC words) */
  const uint8_t *ext;      /* first extended data item, or NULL */
  uint32_t record_len;     /* Size from the header (without alignment padding) */
  uint32_t payload_len;
  uint32_t ext_len;        /* bytes of all ext items */
  uint32_t pid, tid;       /* HS_NOID when the header has none */
  uint16_t id;             /* EVENT_DESCRIPTOR Id; 0 for other headers */
  uint16_t version;        /* EVENT_HEADER: descriptor version; kernel: the event version
                              (u16 at +0 less its PEBS/PMC bits); FULL/INSTANCE: class version */
  uint16_t task;
  uint16_t hook;           /* kernel: group << 8 | type, else 0 */
  uint16_t header_flags;   /* EVENT_HEADER Flags, MESSAGE OptionFlags */
  uint16_t cpu;            /* processor of the buffer */
  uint8_t opcode;
  uint8_t level;
  uint8_t channel;
  uint8_t header_type;     /* HS_HT_* */
  uint8_t pointer_size;    /* 4 or 8: payload pointer width */
  uint8_t flags;           /* HS_EVF_* */
  uint8_t buffer_flags;    /* its buffer's lost bits: 0x2 EVENTS_LOST, 0x4 BUFFER_LOST */
  uint16_t file;           /* index of the file among those opened */
  uint32_t buffer;         /* index of the buffer in its file */
  uint32_t offset;         /* offset of the record in the (decompressed) buffer */
  uint64_t buffer_pos;     /* byte offset of the buffer in its file */
} hs_event;

/* Extended data item types. */
enum {
  HS_EXT_RELATED_ACTIVITYID = 1, HS_EXT_SID = 2, HS_EXT_TS_ID = 3,
  HS_EXT_INSTANCE_INFO = 4, HS_EXT_STACK_TRACE32 = 5, HS_EXT_STACK_TRACE64 = 6,
  HS_EXT_PEBS_INDEX = 7, HS_EXT_PMC_COUNTERS = 8, HS_EXT_PSM_KEY = 9,
  HS_EXT_EVENT_KEY = 10, HS_EXT_EVENT_SCHEMA_TL = 11, HS_EXT_PROV_TRAITS = 12,
  HS_EXT_PROCESS_START_KEY = 13, HS_EXT_CONTROL_GUID = 14, HS_EXT_QPC_DELTA = 15,
  HS_EXT_CONTAINER_ID = 16, HS_EXT_STACK_KEY32 = 17, HS_EXT_STACK_KEY64 = 18
};

typedef struct hs_ext_item {
  const uint8_t *data;
  uint16_t type;
  uint16_t size;           /* DataSize */
} hs_ext_item;

/*
** Walk the extended data items: *pos starts at 0; returns 1 and fills
** *item while there is one, 0 at the end (after the item whose linkage
** bit is clear), -1 if the chain is damaged.
*/
int hs_event_ext_next(const hs_event *ev, uint32_t *pos, hs_ext_item *item);

/*
** The stack carried by the event itself (STACK_TRACE32/64 ext items):
** frame count, or 0.  Frames are written as 64-bit values, innermost first.
** *match_id receives the MatchId (may be NULL).
*/
size_t hs_event_ext_stack(const hs_event *ev, uint64_t *frames, size_t max,
                          uint64_t *match_id);

/* ------------------------------------------------------------- the files */

typedef struct hs_logfile {
  uint32_t buffer_size;      /* in-memory buffer size */
  uint8_t version[4];        /* OS major, minor, layout major, minor */
  uint32_t os_build;         /* ProviderVersion */
  uint32_t cpus;
  int64_t end_time;          /* FILETIME; 0 if the session was never stopped */
  uint32_t timer_resolution;
  uint32_t max_file_size;
  uint32_t log_file_mode;
  uint32_t buffers_written;
  uint32_t start_buffers;
  uint32_t pointer_size;
  uint32_t events_lost;
  uint32_t cpu_mhz;
  int32_t tz_bias;           /* minutes */
  uint8_t time_zone[0xAC];   /* TIME_ZONE_INFORMATION as the file holds it (Bias first) */
  int64_t boot_time;
  int64_t perf_freq;
  int64_t start_time;        /* FILETIME */
  uint32_t clock_type;       /* ReservedFlags: 1 QPC, 2 system time, 3 CPU cycles */
  uint32_t buffers_lost;
  int64_t header_ts;         /* timestamp of the logfile header record */
  int header_version;        /* SYSTEM header Version of that record (0 or 2) */
  int compression;           /* HS_XCA_* of compressed buffers, 0 if none */
  char logger_name[128];     /* UTF-8 */
  char log_file_name[512];   /* UTF-8 */
} hs_logfile;

/* LogFileMode bits (ETL-FORMAT.md §2.4; evntrace.h's EVENT_TRACE_*_MODE) */
#define HS_LOGMODE_SEQUENTIAL      0x00000001u
#define HS_LOGMODE_CIRCULAR        0x00000002u
#define HS_LOGMODE_APPEND          0x00000004u
#define HS_LOGMODE_NEWFILE         0x00000008u
#define HS_LOGMODE_PREALLOCATE     0x00000020u
#define HS_LOGMODE_REAL_TIME       0x00000100u
#define HS_LOGMODE_DELAY_OPEN_FILE 0x00000200u
#define HS_LOGMODE_BUFFERING       0x00000400u
#define HS_LOGMODE_RELOG           0x00010000u
#define HS_LOGMODE_COMPRESSED      0x04000000u
#define HS_LOGMODE_NO_PER_PROCESSOR_BUFFERING 0x10000000u

/* Compression formats (MS-XCA / RtlCompressBuffer numbering). */
#define HS_XCA_LZNT1       2
#define HS_XCA_XPRESS      3
#define HS_XCA_XPRESS_HUFF 4

/*
** Decompress one MS-XCA stream.  Returns the number of bytes written
** (at most outlen) or HS_EFORMAT on malformed input, HS_EUNSUP for an
** unknown format.  Never reads outside in[0..inlen) or writes outside out.
*/
long hs_xca_decompress(int format, const uint8_t *in, size_t inlen,
                       uint8_t *out, size_t outlen);

/* Counters per file, filled while reading. */
typedef struct hs_file_stats {
  uint64_t file_size;
  uint32_t buffers;              /* valid buffers walked */
  uint32_t buffers_compressed;
  uint32_t buffers_damaged;      /* skipped or cut short */
  uint32_t buffers_lost_flag;    /* BufferFlag EVENTS_LOST/BUFFER_LOST seen */
  uint64_t records;              /* records delivered */
  uint64_t records_damaged;      /* records skipped as damaged */
  uint64_t records_duplicate;    /* buffer-0 tail repeats left out */
  uint64_t bytes_trailing;       /* bytes after the last valid buffer */
  uint64_t first_damage_pos;     /* file offset of the first damage, or UINT64_MAX */
} hs_file_stats;

/* A damaged buffer or record, reported as it is met. */
typedef struct hs_damage {
  int file;
  uint64_t pos;                  /* file offset (buffer start, or record for uncompressed) */
  uint32_t buffer;
  const char *what;              /* a sentence saying what was expected */
} hs_damage;

typedef void (*hs_damage_fn)(void *ud, const hs_damage *d);

/* ------------------------------------------------------------ the reader */

/*
** An event source: one or more .etl files merged into one stream
** ordered by timestamp (per-CPU buffers merged, files merged as
** xperf -merge would; ties go to the lower CPU, then file position).
** Behind the handle is a source (engine/source.h): a live real-time
** session on Windows will be another source delivering the same events.
*/
typedef struct hs_reader hs_reader;

typedef struct hs_reader_opts {
  hs_damage_fn on_damage;        /* may be NULL */
  void *ud;
} hs_reader_opts;

/*
** Open and index the files.  On failure returns a negative code, *r is
** NULL and err (if not NULL) holds a message naming the file, the byte
** offset and what was expected.
*/
int hs_reader_open(hs_reader **r, const char *const *paths, int npaths,
                   const hs_reader_opts *opts, char *err, size_t errlen);
/* The same over memory the caller keeps alive (fuzzing, tests). */
int hs_reader_open_mem(hs_reader **r, const uint8_t *data, size_t len,
                       const char *name, const hs_reader_opts *opts,
                       char *err, size_t errlen);
/* 1 and *ev filled, 0 at the end, negative on a fatal error. */
int hs_reader_next(hs_reader *r, hs_event *ev);
/* Start again from the first event. */
int hs_reader_rewind(hs_reader *r);
void hs_reader_close(hs_reader *r);

int hs_reader_nfiles(const hs_reader *r);
const char *hs_reader_path(const hs_reader *r, int file);
const hs_logfile *hs_reader_logfile(const hs_reader *r, int file);
const hs_file_stats *hs_reader_stats(const hs_reader *r, int file);
const char *hs_reader_error(const hs_reader *r);

/* ------------------------------------------------------------------ time */

/* Raw ticks of file `lf` to FILETIME (100 ns since 1601), integer math. */
int64_t hs_time_filetime(const hs_logfile *lf, int64_t ts);
/* And back: the tick of file `lf`'s clock at a FILETIME. */
int64_t hs_time_from_filetime(const hs_logfile *lf, int64_t ft);
/* Do two files count on the same clock (kind, rate and origin: a QPC or
   cycle counter of one machine since one boot, their headers agreeing on
   it within 2 s), so that their ticks compare as they are?  Else they meet
   through FILETIME. */
int hs_time_same_clock(const hs_logfile *a, const hs_logfile *b);
/* Nanoseconds since the session start (the logfile header record). */
int64_t hs_time_ns(const hs_logfile *lf, int64_t ts);
/* Ticks per second of the file's clock. */
int64_t hs_time_freq(const hs_logfile *lf);
/* "2016-08-23T10:30:22.0379266Z" from a FILETIME; returns out. */
char *hs_filetime_format(int64_t ft, char *out, size_t outlen);

/* ---------------------------------------------------------- kernel names */

/* Class GUID for a kernel hook group (0xFF.. unknown: returns 0). */
int hs_kernel_group_guid(int group, hs_guid *out);
/* Provider name for a GUID we know ("Process", "Heap", ...), or NULL. */
const char *hs_provider_name(const hs_guid *g);
/* The GUID of a provider name we know (ignoring case): 1, or 0 if unknown. */
int hs_provider_guid(const char *name, hs_guid *out);
/* Event name for a (provider, opcode) we know, or NULL. */
const char *hs_event_name(const hs_guid *g, int opcode);

/* -------------------------------------------------------- payload reading */

/*
** A bounds-checked cursor over payload bytes with a sticky error flag:
** a read past the end returns 0 and sets `bad`; check once per event.
*/
typedef struct hs_cursor {
  const uint8_t *p;
  size_t len, pos;
  int bad;
  int ptr;                   /* pointer width for hs_cur_ptr */
} hs_cursor;

void hs_cur_init(hs_cursor *c, const uint8_t *p, size_t len, int ptr);
uint8_t hs_cur_u8(hs_cursor *c);
uint16_t hs_cur_u16(hs_cursor *c);
uint32_t hs_cur_u32(hs_cursor *c);
uint64_t hs_cur_u64(hs_cursor *c);
uint64_t hs_cur_ptr(hs_cursor *c);              /* c->ptr bytes */
hs_guid hs_cur_guid(hs_cursor *c);
void hs_cur_skip(hs_cursor *c, size_t n);
/* NUL-terminated strings: length in bytes without the NUL; the NUL is consumed.
   A string running to the end of the payload without NUL is accepted. */
size_t hs_cur_cstr(hs_cursor *c, const char **s);
size_t hs_cur_wstr(hs_cursor *c, const uint8_t **s);   /* UTF-16LE, length in bytes */
/* SID as in kernel payloads (§6.5): skips it, returns its start and length. */
size_t hs_cur_sid(hs_cursor *c, const uint8_t **s);
/* UTF-16LE to UTF-8 (invalid units become U+FFFD), up to the first 0
   unit; returns bytes written without NUL; out is always NUL-terminated
   when outlen > 0, and a string too long for it is cut after the last
   whole character that fits. */
size_t hs_utf16_to_utf8(const uint8_t *s, size_t nbytes, char *out, size_t outlen);
/* "S-1-5-21-..." from SID bytes; 0 if malformed. */
size_t hs_sid_format(const uint8_t *s, size_t n, char *out, size_t outlen);

#ifdef __cplusplus
}
#endif
#endif
