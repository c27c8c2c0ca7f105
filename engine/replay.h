/*
** replay.h -- the replay source: an .etl file played into a live store
** as the EVENT_RECORD callbacks a real-time consumer of the same session
** would have received, in the trace's own pace (speed 1), faster or
** slower (speed N), or as fast as the store takes them (speed 0).  It is
** how the live path (adapter, periodic callbacks, stop, final report,
** lost-event accounting) is tested without a Windows kernel: the same
** store, Lua layer and scripts as a live session, fed by a file.
*/
#ifndef HS_REPLAY_H
#define HS_REPLAY_H
#include "live.h"

typedef struct hsi_replay hsi_replay;

/*
** Open paths (merged as the file reader merges them) and make *store a
** live store with the first file's clock.  0, or a negative HS_E* with
** the reader's message in err.
*/
int hsi_replay_open(hsi_replay **out, const char *const *paths, int npaths, double speed,
                    hsi_live **store, char *err, size_t errlen);
/* Start delivering on a thread of its own. */
int hsi_replay_start(hsi_replay *p);
/* Wait for the thread (after the store was asked to stop, or it
   finished) and hand over the damage the reader skipped in the files
   (damlog.h; *damage is the caller's to free; file i is paths[i]). */
struct hsi_damlog;
void hsi_replay_join(hsi_replay *p, struct hsi_damlog *damage);
/* Wait for the thread (after the store was asked to stop, or it finished)
   and free everything but the store. */
void hsi_replay_close(hsi_replay *p);
#endif
