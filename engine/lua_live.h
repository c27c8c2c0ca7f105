/*
** lua_live.h -- live sessions in the Lua layer (lua_live.c): the global
** `trace` of a script run with --live or --replay, trace:every and
** trace:session, and the stop that always happens.
*/
#ifndef HS_LUA_LIVE_H
#define HS_LUA_LIVE_H
#include "lua_run.h"
#include "live.h"


/* Start the session and push its Trace; 0, or a message pushed and a
   negative HS_E* (2 as exit status). */
int hsi_lua_live_open(lua_State *L, const hsi_live_opts *o);
/* After the script's main chunk: if it never waited for the session, wait
   now (the callbacks run until the stop).  Raises the callbacks' errors. */
int hsi_lua_live_wait(lua_State *L);
/* Stop the session if it still runs, wait for it, say how it ended on
   stderr (why: the reason if it still ran).  Safe to call more than
   once; lua_close calls it too. */
void hsi_lua_live_shutdown(lua_State *L, const char *why);
#endif
