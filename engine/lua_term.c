/*
** lua_term.c -- heapscript.terminal() for scripts that shape their text to
** the terminal (report.lua); the terminal itself is term.c's.
*/
#include <stdio.h>
#ifdef _WIN32
#include <io.h>
#define isatty _isatty
#define fileno _fileno
#else
#include <unistd.h>
#endif

#include "lua_run.h"
#include "term.h"

/* heapscript.terminal() -> {stdout=, stderr=, color=, columns=} */
static int l_terminal(lua_State *L) {
  lua_createtable(L, 0, 4);
  lua_pushboolean(L, isatty(fileno(stdout)));
  lua_setfield(L, -2, "stdout");
  lua_pushboolean(L, isatty(fileno(stderr)));
  lua_setfield(L, -2, "stderr");
  lua_pushboolean(L, hsi_term_color());
  lua_setfield(L, -2, "color");
  lua_pushinteger(L, hsi_term_stdout_width());
  lua_setfield(L, -2, "columns");
  return 1;
}

/* The opener (lua_run.h): heapscript.terminal. */
int hsi_lua_open_term(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_pushcfunction(L, l_terminal);
  lua_setfield(L, 1, "terminal");
  return 0;
}
