/* lua_shim.h -- forced into every file of the Windows build's Lua library
   (gcc -include): its file calls take UTF-8 paths through the wide calls
   of engine/win_file.c, so io.open, loadfile, dofile, require and
   os.remove/os.rename open what the engine opens.  Lua's sources are
   compiled unchanged.  os.tmpname makes its file in %TEMP% (as mkstemp
   does in /tmp on POSIX), not tmpnam's "\\sXX." in the drive's root,
   which a user may not be allowed to write. */
#include <stdio.h>
#include "osfile.h"
#define fopen hsi_fopen
#define freopen hsi_freopen
#define remove hsi_remove
#define rename hsi_rename
#define LUA_TMPNAMBUFSIZE 1024
#define lua_tmpnam(b, e) { e = hsi_tmpname(b, sizeof(b)); }
