/*
** lua_run.h -- the Lua layer of heapscript: the script-mode CLI, the
** `heapscript` module and what its classes share.
**
** Files: lua_run.c (CLI, module, search path, require), lua_trace.c
** (heapscript.Trace), lua_event.c (heapscript.Event).  Every class file
** is a client of include/heapscript.h only; this header is what the
** class files need from one another.
*/
#ifndef HS_LUA_RUN_H
#define HS_LUA_RUN_H

#include <stdio.h>
#include <lua.h>
#include <lauxlib.h>
#include "heapscript.h"
#include "attrib.h"

/*
** The script mode of the CLI:
**   heapscript [-I DIR]... SCRIPT [TRACE...] [-- ARG...]
** argv[0] is the program.  Returns the process exit code: the script's
** integer result, 1 if it returned false or raised an error, 0 otherwise;
** 2 for usage errors, a script that cannot be found, or a trace that
** cannot be opened.
*/
int hsi_lua_cli(int argc, char **argv);
/* The script mode's usage text, in full (`heapscript --help` shows it too). */
void hsi_lua_usage(FILE *to);
/* Standard output written whole (flushed, no write of it failed: a full
   disk): `code`; else one line on stderr and status 2, for every command
   and os.exit, so that a report cut short never passes. */
int hsi_out_status(int code);

/* open function of the `heapscript` module (package.preload.heapscript). */
int hsi_lua_open_module(lua_State *L);

/* The bundled file (embedded.h) for `rel` ("leaks.lua", "rules/default.lua"):
   "scripts/REL", else "REL"; NULL if there is none. */
struct hsi_embedded;
const struct hsi_embedded *hsi_lua_bundled(lua_State *L, const char *rel);

/* ------------------------------------------------------------ classes */

/*
** Adding a class or a group of functions to the module.
**
** An opener is a lua_CFunction called with the module table as its only
** argument.  It registers its metatables (luaL_newmetatable with a
** "heapscript.Name" key), may add functions to the module table, and may
** return one value (usually its method table), which becomes
** module[name].  Example: the Trace opener adds heapscript.open and
** returns the Trace methods, so scripts can add methods of their own
** through heapscript.Trace.
**
** hsi_lua_register runs one opener against package.loaded.heapscript
** (creating that table if needed); it can be called at any time.
**
** HSI_LUA_CLASSES is the list the module opener runs, in order.  To add
** a class, write engine/lua_<name>.c with an opener and add one line
** here; a class that creates another class's objects comes after it.
*/
void hsi_lua_register(lua_State *L, const char *name, lua_CFunction open);

#define HSI_LUA_CLASSES(X) \
  X("Event", hsi_lua_open_event) \
  X("Trace", hsi_lua_open_trace) \
  X("Writer", hsi_lua_open_writer) \
  X("Symbols", hsi_lua_open_symbols) \
  X("Stack", hsi_lua_open_stack) X("Allocs", hsi_lua_open_alloc) \
  X("Live", hsi_lua_open_live) X(NULL, hsi_lua_open_term) X(NULL, hsi_lua_open_json) \
  X(NULL, hsi_lua_open_jsondec)

/* Push the registry table at `key` (a static address), a table with weak
   keys made on first use: per-Trace state that must not keep a Trace alive. */
void hsi_lua_weak_registry(lua_State *L, const void *key);
/* lua_trace.c: 1 with the path of a file of a trace this state has open
   that path names (itself or a link to it) pushed, or 0 and nothing. */
int hsi_lua_trace_named(lua_State *L, const char *path);

#define HSI_LUA_DECLARE_OPENER(name, fn) int fn(lua_State *L);
HSI_LUA_CLASSES(HSI_LUA_DECLARE_OPENER)
#undef HSI_LUA_DECLARE_OPENER

/* ------------------------------------------------- shared by the classes */

#define HSI_LUA_TRACE "heapscript.Trace"
#define HSI_LUA_EVENT "heapscript.Event"

/*
** The current symbol map (heapscript.symbols(), lua_symbols.c) as an
** hsi_symmap * (engine/symmap.h), or NULL.  It lives as long as the
** registry's "heapscript.symbols" value refers to it; keep that value
** referenced while the map is in use.
*/
void *hsi_lua_symbols(lua_State *L);

/*
** The symbol layer (engine/sym.h) of a Trace's analysis, set up by
** lua_symbols.c: hsi_lua_syms_setup gives it the symbol path (the
** trace's trace:symbols{path}, else --symbol-path, else _NT_SYMBOL_PATH),
** the traces' directories and a message sink (stderr), when the analysis
** is built for the Trace at tidx; hsi_lua_syms_prepare hands it the
** current symbol map before frames are named.  hsi_lua_trace_analysis
** (lua_alloc.c) pushes the analysis box of the Trace at tidx, building it
** when `build`, or nil; returns the analysis or NULL.
*/
#define HSI_LUA_SYMBOL_PATH_KEY "heapscript.symbol_path"  /* registry: --symbol-path */
struct hsi_syms;
struct hsi_analysis;
void hsi_lua_syms_setup(lua_State *L, int tidx, struct hsi_syms *sy);
void hsi_lua_syms_prepare(lua_State *L, struct hsi_syms *sy);
struct hsi_analysis *hsi_lua_trace_analysis(lua_State *L, int tidx, int build);
/* The layout checks an unfiltered trace:tally of the Trace at idx made on
   its way (lua_trace.c), or NULL. */
struct hsi_lcheck;
const struct hsi_lcheck *hsi_lua_trace_layouts(lua_State *L, int idx);

/*
** An event source: what a heapscript.Event shows.  It lives inside the
** userdata that owns the reader (a Trace); an Event keeps that userdata
** alive through its user value and reads `ev` each time it is asked, so
** an Event always shows the source's current record.
*/
typedef struct hsi_lua_evsrc {
  hs_reader *reader;         /* NULL once the owner is closed */
  hs_event ev;               /* the current record, valid when has_event */
  int has_event;             /* 0 before the first record and after the last */
  hsi_ids ids;               /* the current record's ids (attrib.h: header or its StackWalk) */
  const struct hsi_timebase *tb;  /* times on one clock (source.h); NULL: each file's own */
} hsi_lua_evsrc;

/*
** Push a new heapscript.Event showing src.  `owner` is the stack index
** of the userdata that contains src; the Event keeps it alive.
*/
void hsi_lua_event_push(lua_State *L, hsi_lua_evsrc *src, int owner);

/* Nanoseconds of ev since the start of the earliest file of src. */
int64_t hsi_lua_event_ns(const hsi_lua_evsrc *src, const hs_event *ev);

/*
** Open paths as one merged trace: push a heapscript.Trace and return 0,
** or push the reader's message (file, offset, what was expected) and
** return the negative HS_E* code.
*/
int hsi_lua_trace_open(lua_State *L, const char *const *paths, int npaths);

/*
** Damage (lua_trace.c): reader options that add what another reader of
** the same files meets to the damage list of the Trace at idx; telling it
** that such a reader went through every record; the command line's
** trace (the value at idx, a Trace or nil); and the run's damage lines
** (main.c's wording) printed to `to`: the command line's trace's, then
** those of the traces the script took as inputs (heapscript.input), with
** the number of reports (0: none, nothing printed).  With `walk`, when
** no reader went through every record of the command line's trace, a
** plain walk first finds the damage inside its buffers (none when other
** Traces of the run read every record of its files: their damage is its).
*/
void hsi_lua_trace_damage_opts(lua_State *L, int idx, hs_reader_opts *o);
/* Before the files of r are read as one trace: an error when two of them
   are one trace (one path twice, or a copy: the same header), whose
   events would count twice.  Opening them is not reading (a script that
   reads each file on its own, such as diff, may be given one twice).
   For the command line's trace the error is a usage error (below). */
void hsi_lua_trace_once(lua_State *L, const hs_reader *r);
/* Raise msg as the command line's fault, not the script's: the CLI prints
   it without the script's position or a traceback and exits with status
   2, as for a bad option.  A script that catches it (pcall) gets a value
   whose tostring is msg. */
int hsi_lua_usage_error(lua_State *L, const char *msg);
/* luaL_argerror with a message formatted as lua_pushfstring does:
   "bad argument #arg to 'f' (message)"; raises. */
int hsi_lua_argerrorf(lua_State *L, int arg, const char *fmt, ...);
/* luaL_checkstring of a file name: one with a NUL byte (which the system
   would cut there, and open another file) is an argument error. */
const char *hsi_lua_checkpath(lua_State *L, int arg);
/* 1 when the string at idx holds a NUL byte: a name the C side would
   read cut there (a filter that matched what it never named). */
int hsi_lua_has_nul(lua_State *L, int idx);
void hsi_lua_trace_walked(lua_State *L, int idx);
void hsi_lua_trace_set_main(lua_State *L, int idx);
/* The damage a live trace's producer met reading files (a replay's),
   moved into the Trace at idx (log is emptied), the files named by
   paths[0..npaths): reported as the damage of a trace's files is. */
struct hsi_damlog;
void hsi_lua_trace_take_damage(lua_State *L, int idx, struct hsi_damlog *log, const char *const *paths, int npaths);
size_t hsi_lua_trace_report_damage(lua_State *L, FILE *to, int walk);

/*
** Live traces (lua_live.c).  hsi_lua_trace_push pushes a Trace over r (it
** owns r from then on).  A hook set on a Trace runs once, before the
** Trace's reader is first used (the live session's wait, after which
** hsi_lua_trace_set_reader gives it the whole session); while it runs,
** using that Trace is an error.  hsi_lua_trace_is_live: a Trace whose
** hook has not run yet.
*/
typedef void (*hsi_lua_trace_hook)(lua_State *L, int idx);
int hsi_lua_trace_push(lua_State *L, hs_reader *r);
void hsi_lua_trace_set_hook(lua_State *L, int idx, hsi_lua_trace_hook h);
int hsi_lua_trace_is_live(lua_State *L, int idx);
void hsi_lua_trace_set_reader(lua_State *L, int idx, hs_reader *r);

/* The reader of the Trace at idx; raises an error if not a Trace or closed. */
hs_reader *hsi_lua_checkreader(lua_State *L, int idx);

/*
** Stacks (lua_stack.c) as the allocation classes (lua_alloc.c) hand them
** out.  hsi_lua_stack_push pushes the heapscript.Stack of interned stack
** `id` (not 0) of analysis `a`, its frames named as process instance
** `inst` had its images loaded at time ts.  `owner` is the index of the
** userdata that owns `a` (the Stack keeps it alive); `cache` is the index
** of a table that lives as long as the owner, where one Stack per
** (id, inst) and its formatted frames are kept.  hsi_lua_stack_match
** tells whether a frame of the Stack at idx matches the pattern at pat
** (a Lua pattern string, an LPeg pattern or a function(frame)).
** hsi_lua_stack_flame writes the Stack at idx's s:flame() text into out
** (cap bytes) and returns its length: whole when under cap, else cut (ask
** again with more room).  hsi_lua_stack_keytext does the same with
** s:key()'s text of the Stack hsi_lua_stack_push(L, owner, cache, a, id,
** inst, ts) would push, without making one ("" for no frames, which
** s:key() reads "(empty stack)").
** The symbol layer must be prepared (hsi_lua_syms_prepare).
*/
#define HSI_LUA_STACK "heapscript.Stack"
void hsi_lua_stack_push(lua_State *L, int owner, int cache, const struct hsi_analysis *a,
                        uint32_t id, uint32_t inst, int64_t ts);
size_t hsi_lua_stack_flame(lua_State *L, int idx, char *out, size_t cap);
size_t hsi_lua_stack_keytext(lua_State *L, int cache, const struct hsi_analysis *a, uint32_t id,
                             uint32_t inst, int64_t ts, char *out, size_t cap);
int hsi_lua_stack_match(lua_State *L, int idx, int pat);

/*
** A string (not terminated) and where it came from, for sorting with
** qsort in the bytewise order of hsi_lua_keycmp (Lua's `<` in the C
** locale), equal strings in the order of `at`: heapscript.sort, JSON
** object keys (lua_json.c), A:folded's lines, A:stack_figures' keys (whose
** equal keys take the first group's Stack).  hsi_lua_keyrun: the end of
** the run of keys equal to k[i] in a sorted k[0..n).
*/
typedef struct hsi_lua_key { const char *s; size_t len, at; } hsi_lua_key;
int hsi_lua_keycmp(const void *a, const void *b);
size_t hsi_lua_keyrun(const hsi_lua_key *k, size_t i, size_t n);

#endif
