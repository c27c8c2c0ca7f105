/*
** kernel.c -- names: kernel hook groups to class GUIDs (ETL-FORMAT §5),
** and the provider and event names `info` and `dump` print.
*/
#include <string.h>
#include "heapscript.h"
#include "text.h"

/* Kernel class GUIDs by hook group, as TDH, PerfView and the corpus
   figures present them [V for the groups the corpus uses]. */
static const struct { const char *guid, *name; } groups[] = {
  {"68fdd900-4a3e-11d1-84f4-0000f80464e3", "EventTrace"},
  {"3d6fa8d4-fe05-11d0-9dda-00c04fd7ba7c", "DiskIo"},
  {"3d6fa8d3-fe05-11d0-9dda-00c04fd7ba7c", "PageFault"},
  {"3d6fa8d0-fe05-11d0-9dda-00c04fd7ba7c", "Process"},
  {"90cbdc39-4a3e-11d1-84f4-0000f80464e3", "FileIo"},
  {"3d6fa8d1-fe05-11d0-9dda-00c04fd7ba7c", "Thread"},
  {"9a280ac0-c8e0-11d1-84e2-00c04fb998a2", "TcpIp"},
  {"3282fc76-feed-498e-8aa7-e70f459d430e", "Job"},
  {"bf3a50c5-a9c9-4988-a005-2df0b7c80f80", "UdpIp"},
  {"ae53722e-c863-11d2-8659-00c04fa321a1", "Registry"},
  {"13976d09-a327-438c-950b-7f03192815c7", "DbgPrint"},
  {"01853a65-418f-4f36-aefc-dc0f1d2fd235", "SystemConfig"},
  {"99134383-5248-43fc-834b-529454e75df3", "Spare1"},
  {"42695762-ea50-497a-9068-5cbbb35e0b95", "Wnf"},
  {"0268a8b6-74fd-4302-9dd0-6e8f1795c0cf", "Pool"},
  {"ce1dbfb4-137e-4da6-87b0-3f59aa102cbc", "PerfInfo"},
  {"222962ab-6180-4b88-a825-346b75f2a24a", "Heap"},
  {"89497f50-effe-4440-8cf2-ce6b1cdcaca7", "Object"},
  {"e43445e0-0903-48c3-b878-ff0fccebdd04", "Power"},
  {"a9152f00-3f58-4bee-92a1-70c7d079d5dd", "Modbound"},
  {"2cb15d1d-5fc1-11d2-abe1-00a0c911f518", "Image"},
  {"b2d14872-7c5b-463d-8419-ee9bf7d23e04", "Dpc"},
  {"7687a439-f752-45b8-b741-321aec0f8df9", "Cc"},
  {"3ac66736-cc59-4cff-8115-8df50e39816b", "CritSec"},
  {"def2fe46-7bd6-4b80-bd94-f57fe20d0ce3", "StackWalk"},
  {"9aec974b-5b8e-4118-9b92-3186d8002ce5", "Ums"},
  {"45d8cccd-539f-4b72-a8b7-5c683142609a", "ALPC"},
  {"d837ca92-12b9-44a5-ad6a-3a65b3578aa8", "SplitIo"},
  {"c861d0e2-a2c1-4d36-9f9c-970bab943a12", "ThreadPool"},
  {"7f2a405c-69b5-4bf9-a1f5-30e8f1afab5e", "Hypervisor"},
  {"2ce9a149-effe-42f0-a635-a1d39e26c8f2", "HypervisorX"},
};
#define NGROUPS ((int)(sizeof groups / sizeof groups[0]))

/* Other providers worth a name in `info`. */
static const struct { const char *guid, *name; } others[] = {
  {"b3e675d7-2554-4f18-830b-2762732560de", "KernelTraceControl.ImageId"},
  {"9b79ee91-b5fd-41c0-a243-4248e266e9d0", "KernelTraceControl.SysConfigEx"},
  {"bbccf6c1-6cd1-48c4-80ff-839482e37671", "EventMetadata"},
  {"901d2afa-4ff6-46d7-8d0e-53645e1a47f5", "Microsoft-Windows-Heap-Snapshot"},
  {"b675ec37-bdb6-4648-bc92-f3fdc74d3ca2", "Microsoft-Windows-Kernel-EventTracing"},
  {"d1d93ef7-e1f2-4f45-9943-03d245fe6c00", "Microsoft-Windows-Kernel-Memory"},
  {"d781ca11-61c0-4387-b83d-af52d3d2dd6a", "HeapRange"},
  {"05867806-c246-43ef-a147-e17d2bdb1496", "HeapSummary"},
  {"e13c0d23-ccbc-4e12-931b-d9cc2eee27e4", "Microsoft-Windows-DotNETRuntime"},
  {"a669021c-c450-4609-a035-5af59af4df18", "Microsoft-Windows-DotNETRuntimeRundown"},
  {"22fb2cd6-0e7b-422b-a0c7-2fad1fd0e716", "Microsoft-Windows-Kernel-Process"},
  {"7dd42a49-5329-4832-8dfd-43d979153a88", "Microsoft-Windows-Kernel-Network"},
};
#define NOTHERS ((int)(sizeof others / sizeof others[0]))

int hs_kernel_group_guid(int group, hs_guid *out) {
  if (group < 0 || group >= NGROUPS) return 0;
  return hs_guid_parse(groups[group].guid, out) == 0;
}

/* Parsed once on first use; the tables are small and fixed.  `dump` names
   every event, so a GUID is found by its first field in a small table
   (slot: kernel group index + 1, or NGROUPS + other index + 1; the first
   fields of the GUIDs above all differ) rather than by comparing it with
   each GUID in turn, and a group's event names are the run of evnames
   (below, sorted by group) that ev_first and ev_count give. */
#define NSLOT 128
static hs_guid group_guid[NGROUPS], other_guid[NOTHERS];
static uint8_t slot[NSLOT];
static uint8_t ev_first[NGROUPS], ev_count[NGROUPS];
static int parsed;

static unsigned slot_of(uint32_t d1) { return (d1 * 0x9E3779B1u) >> 25; }   /* 7 bits */

static void index_names(void);

static void parse_all(void) {
  int i;
  if (parsed) return;
  for (i = 0; i < NGROUPS; i++) hs_guid_parse(groups[i].guid, &group_guid[i]);
  for (i = 0; i < NOTHERS; i++) hs_guid_parse(others[i].guid, &other_guid[i]);
  for (i = 0; i < NGROUPS + NOTHERS; i++) {
    unsigned k = slot_of(i < NGROUPS ? group_guid[i].d1 : other_guid[i - NGROUPS].d1);
    while (slot[k]) k = (k + 1) & (NSLOT - 1);
    slot[k] = (uint8_t)(i + 1);
  }
  index_names();
  parsed = 1;
}

/* The index into groups (>= 0), or NGROUPS + the index into others, or -1. */
static int known(const hs_guid *g) {
  unsigned k;
  parse_all();
  for (k = slot_of(g->d1); slot[k]; k = (k + 1) & (NSLOT - 1)) {
    int i = slot[k] - 1;
    if (hs_guid_eq(g, i < NGROUPS ? &group_guid[i] : &other_guid[i - NGROUPS])) return i;
  }
  return -1;
}

static int group_of(const hs_guid *g) {
  int i = known(g);
  return i < NGROUPS ? i : -1;
}

const char *hs_provider_name(const hs_guid *g) {
  int i = known(g);
  if (i < 0) return NULL;
  return i < NGROUPS ? groups[i].name : others[i - NGROUPS].name;
}

int hs_provider_guid(const char *name, hs_guid *out) {
  int i;
  parse_all();
  for (i = 0; i < NGROUPS; i++)
    if (hsi_strieq(groups[i].name, name)) { *out = group_guid[i]; return 1; }
  for (i = 0; i < NOTHERS; i++)
    if (hsi_strieq(others[i].name, name)) { *out = other_guid[i]; return 1; }
  return 0;
}

/* Event names for the kernel classes heapscript decodes or reports. */
static const struct { int group; int op; const char *name; } evnames[] = {
  {0x00, 0, "Header"}, {0x00, 5, "Extension"}, {0x00, 8, "RundownComplete"},
  {0x00, 32, "EndExtension"}, {0x00, 64, "DbgIdRSDS"}, {0x00, 66, "BuildInfo"},
  {0x00, 67, "ProviderBinaryPath"}, {0x00, 80, "PartitionInfoExtension"},
  {0x02, 10, "TransitionFault"}, {0x02, 11, "DemandZeroFault"}, {0x02, 12, "CopyOnWrite"},
  {0x02, 14, "HardPageFault"}, {0x02, 32, "HardFault"}, {0x02, 98, "VirtualAlloc"},
  {0x02, 99, "VirtualFree"}, {0x02, 100, "HeapRangeRundown"}, {0x02, 101, "HeapRangeCreate"},
  {0x02, 102, "HeapRangeReserve"}, {0x02, 103, "HeapRangeRelease"},
  {0x02, 104, "HeapRangeDestroy"}, {0x02, 128, "VirtualAllocDCStart"},
  {0x02, 129, "VirtualAllocDCEnd"},
  {0x03, 1, "Start"}, {0x03, 2, "End"}, {0x03, 3, "DCStart"}, {0x03, 4, "DCEnd"},
  {0x03, 39, "Defunct"},
  {0x05, 1, "Start"}, {0x05, 2, "End"}, {0x05, 3, "DCStart"}, {0x05, 4, "DCEnd"},
  {0x05, 36, "CSwitch"}, {0x05, 50, "ReadyThread"}, {0x05, 72, "SetName"},
  {0x0E, 32, "PoolAlloc"}, {0x0E, 33, "PoolAllocSession"}, {0x0E, 34, "PoolFree"},
  {0x0E, 35, "PoolFreeSession"},
  {0x0F, 46, "SampledProfile"}, {0x0F, 51, "SysClEnter"}, {0x0F, 52, "SysClExit"},
  {0x0F, 67, "ThreadedDPC"}, {0x0F, 68, "ISR"}, {0x0F, 69, "DPC"}, {0x0F, 73, "CollectionStart"},
  {0x0F, 74, "CollectionEnd"},
  {0x10, 32, "HeapCreate"}, {0x10, 33, "HeapAlloc"}, {0x10, 34, "HeapReAlloc"},
  {0x10, 35, "HeapDestroy"}, {0x10, 36, "HeapFree"}, {0x10, 37, "HeapExpand"},
  {0x10, 38, "HeapSnapShot"}, {0x10, 42, "HeapContract"},
  {0x14, 2, "Unload"}, {0x14, 3, "DCStart"}, {0x14, 4, "DCEnd"}, {0x14, 10, "Load"},
  {0x18, 32, "Stack"}, {0x18, 34, "KeyCreate"}, {0x18, 35, "KeyDelete"},
  {0x18, 36, "KeyRundown"}, {0x18, 37, "StackKeyKernel"}, {0x18, 38, "StackKeyUser"},
};

const char *hs_event_name(const hs_guid *g, int opcode) {
  size_t i;
  int grp = group_of(g);
  if (grp < 0) {
    if (hs_guid_eq(g, &other_guid[0])) {
      switch (opcode) {
        case 0: return "ImageId"; case 36: return "DbgID_RSDS"; case 37: return "DbgID_ILRSDS";
        case 64: return "FileVersion"; default: return NULL;
      }
    }
    return NULL;
  }
  for (i = ev_first[grp]; i < (size_t)ev_first[grp] + ev_count[grp]; i++)
    if (evnames[i].op == opcode) return evnames[i].name;
  return NULL;
}

static void index_names(void) {
  size_t i;
  for (i = sizeof evnames / sizeof evnames[0]; i-- > 0;) {
    ev_first[evnames[i].group] = (uint8_t)i;
    ev_count[evnames[i].group]++;
  }
}

const char *hs_header_type_name(int ht) {
  switch (ht) {
    case HS_HT_SYSTEM32: return "SYSTEM32";
    case HS_HT_SYSTEM64: return "SYSTEM64";
    case HS_HT_COMPACT32: return "COMPACT32";
    case HS_HT_COMPACT64: return "COMPACT64";
    case HS_HT_FULL32: return "FULL_HEADER32";
    case HS_HT_FULL64: return "FULL_HEADER64";
    case HS_HT_INSTANCE32: return "INSTANCE32";
    case HS_HT_INSTANCE64: return "INSTANCE64";
    case HS_HT_ERROR: return "ERROR";
    case HS_HT_MESSAGE: return "MESSAGE";
    case HS_HT_PERFINFO32: return "PERFINFO32";
    case HS_HT_PERFINFO64: return "PERFINFO64";
    case HS_HT_EVENT32: return "EVENT_HEADER32";
    case HS_HT_EVENT64: return "EVENT_HEADER64";
    default: return NULL;
  }
}
