/*
** win_live.h -- (Windows only) ETW sessions: the live producer behind
** `heapscript --live` (win_live.c) and `heapscript record` (win_record.c).
*/
#ifndef HS_WIN_LIVE_H
#define HS_WIN_LIVE_H
#ifdef _WIN32
#include "live.h"

/* Start the sessions o asks for (real time) and make *store their live
   store; *prod delivers into it.  0, or a negative HS_E* with one line in
   err saying what to do (no rights, the kernel logger in use...). */
int hsi_win_live_open(const hsi_live_opts *o, hsi_live **store, hsi_live_producer *prod,
                      char *err, size_t errlen);

/* `heapscript record ...`: argv after "record".  The exit status. */
int hsi_win_record(int argc, char **argv);
#endif
#endif
