/*
** stop.h -- a request to stop the long loops of the engine.
**
** A time limit (lua_sandbox.c) must also end a C call that reads a huge
** trace or scans millions of records: no Lua hook runs until it returns.
** The limit's timer (a signal handler) or the Lua hook sets one flag; the
** loops of the analysis pass and of the queries look at it once every
** HSI_STOP_EVERY records -- one load, so the check costs nothing when no
** limit is set -- and return HSI_ESTOPPED, which the Lua bindings turn
** into the limit's error.  The flag stays set until hsi_stop_clear().
*/
#ifndef HS_STOP_H
#define HS_STOP_H

#include <signal.h>

/* Returned by a loop that saw the request (not an HS_E* of the public API). */
#define HSI_ESTOPPED (-64)

#define HSI_STOP_EVERY 4096u    /* records between two looks: a power of two */

/* Set from a signal handler or the Lua hook; read by the loops. */
extern volatile sig_atomic_t hsi_stop_requested;

/* Does the loop at record number i stop here? */
#define hsi_stop_due(i) ((((i) & (HSI_STOP_EVERY - 1u)) == 0) && hsi_stop_requested)

void hsi_stop_request(void);
void hsi_stop_clear(void);

#endif
