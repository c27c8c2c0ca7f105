/*
** embedded.h -- the scripts/ and rules/ files built into the binary.
**
** engine/bin2c.c writes the table at build time (see the Makefile); the
** Lua layer (engine/lua_run.c) searches it after the user's directories,
** so a file on -I DIR or HEAPSCRIPT_PATH overrides a bundled one.
*/
#ifndef HS_EMBEDDED_H
#define HS_EMBEDDED_H

#include <stddef.h>

struct hsi_embedded {
  const char *name;               /* "scripts/leaks.lua", as given to bin2c */
  const unsigned char *data;      /* the file's bytes, followed by a NUL */
  size_t len;                     /* without that NUL */
};

/* Ends with {NULL, NULL, 0}.  Static data: valid for the whole run. */
extern const struct hsi_embedded hsi_embedded[];

#endif
