/*
** evrec.h -- the EVENT_RECORD a real-time ETW consumer receives, and the
** adapter between it and the engine's hs_event.
**
** hsi_evrec mirrors EVENT_RECORD (evntcons.h) field for field, with the
** same sizes and offsets on 64-bit builds, so the Windows consumer's
** callback hands its PEVENT_RECORD over as it is (win_live.c checks the
** layout at compile time) and every other platform has the same type for
** the replay source and the tests.
**
** Live events take the same path as a file's: the adapter writes each
** EVENT_RECORD back into the record layout of an .etl buffer (the header
** kind a file has for it) and decodes that with record.c, so the
** heapscript.Event a script sees and everything the analysis reads is
** what the file reader gives for the same event.  The inverse
** (hsi_evrec_from_event) builds, from a file's event, the EVENT_RECORD
** ProcessTrace would deliver for it: the replay source (replay.c).
*/
#ifndef HS_EVREC_H
#define HS_EVREC_H
#include "heapscript.h"

/* EVENT_HEADER.Flags */
#define HSI_EHF_EXTENDED_INFO 0x0001
#define HSI_EHF_STRING_ONLY   0x0004
#define HSI_EHF_TRACE_MESSAGE 0x0008
#define HSI_EHF_32_BIT_HEADER 0x0020
#define HSI_EHF_64_BIT_HEADER 0x0040
#define HSI_EHF_CLASSIC       0x0100

typedef struct hsi_evrec_ext {     /* EVENT_HEADER_EXTENDED_DATA_ITEM, 16 bytes */
  uint16_t reserved1;
  uint16_t ext_type;               /* HS_EXT_* */
  uint16_t linkage;                /* bit 0: Linkage */
  uint16_t data_size;
  uint64_t data_ptr;               /* ULONGLONG DataPtr */
} hsi_evrec_ext;

typedef struct hsi_evrec {         /* EVENT_RECORD, 112 bytes on 64-bit */
  /* EVENT_HEADER, 80 bytes */
  uint16_t size, header_type, flags, event_property;
  uint32_t thread_id, process_id;
  int64_t timestamp;
  uint8_t provider_id[16];         /* GUID in Windows byte order */
  uint16_t id;                     /* EVENT_DESCRIPTOR */
  uint8_t version, channel, level, opcode;
  uint16_t task;
  uint64_t keyword;
  uint64_t processor_time;
  uint8_t activity_id[16];
  /* ETW_BUFFER_CONTEXT */
  uint8_t processor_number, alignment;
  uint16_t logger_id;
  uint16_t extended_data_count;
  uint16_t user_data_length;
  const hsi_evrec_ext *extended_data;
  const void *user_data;
  void *user_context;
} hsi_evrec;

/* A record as an .etl buffer would hold it: at most 64 KiB (u16 Size). */
#define HSI_EVREC_MAX 65536u

/*
** Write the .etl record for e into buf (HSI_EVREC_MAX bytes): a kernel
** class GUID with the classic flag gives a SYSTEM header (PERFINFO when
** the event has no process and thread id), another classic event a
** FULL header, anything else an EVENT_HEADER with its extended items.
** Returns the record size, or 0 if it would not fit in a record.
*/
uint32_t hsi_evrec_to_record(const hsi_evrec *e, uint8_t *buf);

/* The record as an hs_event (a view into buf); 1, or 0 if it does not decode. */
int hsi_evrec_decode(const uint8_t *buf, uint32_t len, hs_event *ev);

/*
** The EVENT_RECORD a real-time consumer receives for ev (from a file):
** items (room for nitems) receives its extended data items, which point
** into ev's bytes; valid while ev is.  Returns 0, or -1 when the event has
** more items than that (or a damaged chain).
*/
int hsi_evrec_from_event(const hs_event *ev, hsi_evrec *e, hsi_evrec_ext *items, size_t nitems);

/* Real-time loss notices the runtime inserts (EventTrace class, opcodes
   32 RTLostEvent, 33 RTLostBuffer, 34 RTLostFile): which one, or 0. */
int hsi_evrec_lost_kind(const hsi_evrec *e);
#endif
