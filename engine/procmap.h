/*
** procmap.h -- processes, threads and loaded images over time.
**
** Fed every event of a trace in timestamp order; keeps what the Process
** (group 0x03), Thread (group 0x05), Image (0x030A, 0x1402-0x1404) and
** KernelTraceControl ImageId/DbgID_RSDS records say (ETL-FORMAT.md
** §6.5-§6.8), so that later questions -- which process instance is pid
** 1234 at time t, which image holds address a in it -- are answered
** without looking at payloads again.
**
** A process instance is a pid plus its start (pids are reused).  Instance
** ids are small integers from 1; 0 means "none".  Names, command lines and
** file names are interned: a string id (0 = the empty string) stays valid
** and its text (hsi_procmap_str) stays at the same address until
** hsi_procmap_free().  hsi_image pointers stay valid until then too.
*/
#ifndef HS_PROCMAP_H
#define HS_PROCMAP_H

#include "heapscript.h"
#include "hash.h"

/* Where the kernel's addresses start on 64-bit Windows: hsi_procmap_image_at
   looks them up in the system process alone. */
#define HSI_KERNEL_BASE 0xFFFF800000000000ull

/* Timestamps for "before the trace" and "never" (still loaded/running). */
#define HSI_TS_BEFORE INT64_MIN
#define HSI_TS_NEVER  INT64_MAX

#define HSI_NOINST 0u

/* Instance flags. */
#define HSI_PROC_STARTED  0x01u  /* a Process Start record was seen */
#define HSI_PROC_RUNDOWN  0x02u  /* seen in DCStart/DCEnd (existed at a trace edge) */
#define HSI_PROC_ENDED    0x04u  /* a Process End record was seen */
#define HSI_PROC_DEFUNCT  0x08u  /* reported Defunct (op 39) */
#define HSI_PROC_IMPLIED  0x10u  /* created on demand: the pid was only seen in other events */
#define HSI_PROC_WOW64    0x20u  /* Flags bit 2 (v4+) */

/* Image flags. */
#define HSI_IMG_RUNDOWN   0x01u  /* known from DCStart/DCEnd, not from a Load */
#define HSI_IMG_IMAGEID   0x02u  /* a KernelTraceControl ImageId was attached */
#define HSI_IMG_PDB       0x04u  /* pdb_guid/pdb_age/pdb_name are set (DbgID_RSDS) */

/*
** One loaded image in one process instance.  `module` is the file name
** without directory, extension kept ("ntdll.dll"), as WPA's Module column
** shows it; frames are written module+0xRVA with it.  When the NT path is
** missing the ImageId OriginalFileName is used.
*/
typedef struct hsi_image {
  uint64_t base, size;
  int64_t loaded;          /* HSI_TS_BEFORE when known only from rundown */
  int64_t unloaded;        /* HSI_TS_NEVER while loaded */
  uint32_t instance;
  uint32_t path;           /* string id: FileName, UTF-8, NT path as logged */
  uint32_t module;         /* string id: basename of path, e.g. "ntdll.dll" */
  uint32_t orig_name;      /* string id: ImageId OriginalFileName, 0 if none */
  uint32_t checksum;
  uint32_t time_date_stamp;
  hs_guid pdb_guid;
  uint32_t pdb_age;
  uint32_t pdb_name;       /* string id: PDB file name from DbgID_RSDS */
  uint32_t flags;          /* HSI_IMG_* */
  uint32_t id;             /* index for hsi_procmap_image() */
  uint64_t sig;            /* its identity, hashed: hsi_image_sig */
} hsi_image;

/* Counters, for reports and tests. */
typedef struct hsi_procstats {
  uint64_t process_records;    /* Process Start/End/DCStart/DCEnd/Defunct seen */
  uint64_t process_decoded;    /* ... decoded without error */
  uint64_t process_end_repeated; /* an End at the tick its instance ended: taken as that End */
  uint64_t thread_records;     /* Thread Start/End/DCStart/DCEnd/SetName seen */
  uint64_t thread_decoded;
  uint64_t image_records;      /* Image Load/Unload/DCStart/DCEnd seen */
  uint64_t image_decoded;
  uint64_t imageid_records, imageid_attached;
  uint64_t dbgid_records, dbgid_attached;
  uint64_t width_fallback;     /* MOF payloads that only parsed with the other pointer width */
  uint64_t unload_unknown;     /* Unload of an image not known to be loaded */
} hsi_procstats;

typedef struct hsi_procmap hsi_procmap;

hsi_procmap *hsi_procmap_new(void);
void hsi_procmap_free(hsi_procmap *pm);

/*
** Feed one event (in timestamp order).  Returns 1 if it was a Process,
** Thread, Image, ImageId or DbgID_RSDS record that was used, 0 if it is
** not one of these (or could not be decoded: see the stats), HS_ENOMEM.
*/
int hsi_procmap_feed(hsi_procmap *pm, const hs_event *ev);
/* The instance the event last fed ended because its pid started again
   (its End was lost: it ended the tick before), else 0; asked once. */
uint32_t hsi_procmap_take_lost_end(hsi_procmap *pm);
/* Might hsi_procmap_feed take anything from ev (its kernel group or its
   provider is one it reads)?  0: feeding it would do nothing. */
int hsi_procmap_wants_provider(const hs_guid *g);
static inline int hsi_procmap_wants(const hs_event *ev) {
  if (ev->flags & HS_EVF_KERNEL) {
    unsigned group = (unsigned)ev->hook >> 8;
    return group == 0x03 || group == 0x05 || group == 0x14;   /* Process, Thread, Image */
  }
  return hsi_procmap_wants_provider(&ev->provider);
}

/*
** The instance of `pid` alive at `ts`, created on demand (flag
** HSI_PROC_IMPLIED) when no record named it.  HSI_NOINST for HS_NOID
** or when out of memory.
*/
uint32_t hsi_procmap_instance(hsi_procmap *pm, uint32_t pid, int64_t ts);
/* The same without creating anything: HSI_NOINST if unknown. */
uint32_t hsi_procmap_find(const hsi_procmap *pm, uint32_t pid, int64_t ts);

uint32_t hsi_procmap_ninstances(const hsi_procmap *pm);   /* ids are 1..n */
uint32_t hsi_procmap_pid(const hsi_procmap *pm, uint32_t inst);
uint32_t hsi_procmap_parent(const hsi_procmap *pm, uint32_t inst);  /* ppid or HS_NOID */
const char *hsi_procmap_name(const hsi_procmap *pm, uint32_t inst);    /* "" if unknown */
const char *hsi_procmap_cmdline(const hsi_procmap *pm, uint32_t inst); /* "" if unknown */
uint32_t hsi_procmap_name_id(const hsi_procmap *pm, uint32_t inst);
int64_t hsi_procmap_start(const hsi_procmap *pm, uint32_t inst);  /* HSI_TS_BEFORE if before the trace */
int64_t hsi_procmap_end(const hsi_procmap *pm, uint32_t inst);    /* HSI_TS_NEVER if not seen ending */
uint32_t hsi_procmap_flags(const hsi_procmap *pm, uint32_t inst);

/* Process of thread `tid` at `ts`, or HS_NOID. */
uint32_t hsi_procmap_tid_pid(const hsi_procmap *pm, uint32_t tid, int64_t ts);
/* Thread name (SetName or Thread v3 name) at `ts`, "" if none. */
const char *hsi_procmap_thread_name(const hsi_procmap *pm, uint32_t tid, int64_t ts);

/*
** The image containing `addr` in instance `inst` at `ts`, or NULL.
** Addresses not found in the process (kernel addresses always) are
** looked up in the system process (pid 0, then pid 4), whose images are
** the kernel and drivers.
*/
const hsi_image *hsi_procmap_image_at(const hsi_procmap *pm, uint32_t inst,
                                      uint64_t addr, int64_t ts);
uint32_t hsi_procmap_nimages(const hsi_procmap *pm);
const hsi_image *hsi_procmap_image(const hsi_procmap *pm, uint32_t id);  /* 0..n-1 */

/* An image as the names of its frames depend on it, hashed: its file
   name, base (a frame is named by its offset from it), size, checksum,
   link timestamp and PDB identity (GUID and age, where a DbgID_RSDS gave
   one), so that the same DLL at one base in two processes is one and a
   rebuild of it is another.  A PDB identity that an image lacks is the
   one the other images of that file name, base and size have, when they
   agree on one.  A checksum or timestamp that a record lacks (0: rundown
   records of some systems carry no timestamp) is the one the other
   records of that file name, base, size and PDB identity have, when they
   agree on one.  Set by hsi_procmap_settle (0 before). */
static inline uint64_t hsi_image_sig(const hsi_image *im) { return im ? im->sig : 0; }

/* The end of an image's range: base + size, kept from wrapping. */
static inline uint64_t hsi_image_end(const hsi_image *im) {
  return im->base + im->size < im->base ? UINT64_MAX : im->base + im->size;
}

/*
** Eras.  A process's user addresses change meaning where one of its
** images is loaded over a range that another image of it, of another
** identity (hsi_image_sig), held before: a DLL unloaded and another
** loaded at its base.  Each such load starts an era of the instance.
** hsi_procmap_settle works out the identities and the eras once every
** record is in (the analysis pass does, at its end; again after more
** records); hsi_procmap_era(inst, ts) is then 0
** for an instance's first era (and for every instance without such a
** load, most of them), else a number >= 1 that no era of another
** instance has.  Kernel images (the system process's) are left out.
** Returns 0, or HS_ENOMEM.
*/
int hsi_procmap_settle(hsi_procmap *pm);
uint32_t hsi_procmap_era(const hsi_procmap *pm, uint32_t inst, int64_t ts);
int hsi_procmap_has_eras(const hsi_procmap *pm);   /* any instance has a second era */

/* Interned strings. */
const char *hsi_procmap_str(const hsi_procmap *pm, uint32_t id);
uint32_t hsi_procmap_intern(hsi_procmap *pm, const char *s, size_t len);  /* 0 on ENOMEM */

const hsi_procstats *hsi_procmap_stats(const hsi_procmap *pm);

#endif
