/*
** lua_sandbox.h -- the limits of a script run (CPU time, memory) and the
** sandbox that rule files and untrusted scripts run in.
**
** lua_run.c calls these at a few places: option parsing, creating the
** state, setting up the module and the searchers, loading a file of the
** user's, and the protected call of the script.  The C bindings call
** hsi_lua_limit_check when an engine loop returned HSI_ESTOPPED (stop.h).
** What the sandbox allows and why: docs/SCRIPTS.md, "Sandbox".
*/
#ifndef HS_LUA_SANDBOX_H
#define HS_LUA_SANDBOX_H

#include <lua.h>

/*
** The options --timeout S, --memory MB and --sandbox at argv[i]: returns
** how many arguments were taken (1 or 2), 0 when argv[i] is none of
** them, -1 after printing what is wrong with the value.
*/
int hsi_lua_limits_option(int argc, char **argv, int i);

/* Lines of --help for those options. */
extern const char hsi_lua_limits_help[];

/* A state whose allocator counts its bytes (for the memory limit); NULL without memory. */
lua_State *hsi_lua_newstate(void);

/*
** After luaL_openlibs and the heapscript module, before the searchers are
** installed: adds heapscript.sandbox and notes the directory list at
** `dirs` (-I, HEAPSCRIPT_PATH) and the traces (for "the repository being
** tested").  Under --sandbox it also takes the C loaders, package.path
** and binary chunks away from everyone, and makes the trusted globals
** loadfile and dofile load into the sandbox.
*/
void hsi_lua_sandbox_setup(lua_State *L, int dirs, char **traces, int ntraces);

/* The mode to load a file of the user's with: "t" under --sandbox, else NULL (any). */
const char *hsi_lua_load_mode(void);

/* Is the Lua code calling this C function (the nearest Lua function on
   the stack) possibly sandboxed?  0 when no sandbox is in play; else 1
   unless its _ENV holds the trusted side's io library (one that uses no
   global, and so has no _ENV, counts as sandboxed). */
int hsi_lua_sandbox_caller(lua_State *L);

/* The chunk on top was loaded from the file `path`: under --sandbox it runs in the sandbox. */
void hsi_lua_sandbox_file(lua_State *L, const char *path);
/* Push the directory part of path ("." when there is none; "/" for a
   file at the root). */
void hsi_lua_push_dir(lua_State *L, const char *path);

/*
** lua_pcall(L, narg, nres, msgh) with the limits in force: the count hook
** and the CPU timer.  When a limit ended the call, hsi_lua_limit_broken
** returns its message ("FILE:LINE: what"); the exit status is then 2.
*/
int hsi_lua_limits_pcall(lua_State *L, int narg, int nres, int msgh);
const char *hsi_lua_limit_broken(void);

/* In a C function: raise the limit's error if a limit stopped the work. */
void hsi_lua_limit_check(lua_State *L);

#endif
