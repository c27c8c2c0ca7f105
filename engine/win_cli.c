/*
** win_cli.c -- (Windows only) process set-up for the command line: see
** win_cli.h.
*/
#ifdef _WIN32
#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#include <shellapi.h>
#include <fcntl.h>
#include <io.h>
#include <stdio.h>
#include <stdlib.h>
#include "osfile.h"
#include "win_cli.h"

void hsi_win_init(int *argc, char ***argv) {
  int i, n = 0;
  wchar_t **w = CommandLineToArgvW(GetCommandLineW(), &n);
  char **a;
  /* Text mode would turn every "\n" into "\r\n": reports, JSON and traces
     written by scripts are the same bytes as on Linux. */
  _fmode = _O_BINARY;
  _setmode(_fileno(stdin), _O_BINARY);
  _setmode(_fileno(stdout), _O_BINARY);
  _setmode(_fileno(stderr), _O_BINARY);
  SetConsoleOutputCP(CP_UTF8);     /* the output is UTF-8 (names, paths) */
  if (!w || n < 1 || !(a = (char **)calloc((size_t)n + 1, sizeof *a))) return;  /* keep the ANSI argv */
  for (i = 0; i < n; i++)
    if (!(a[i] = hsi_utf8(w[i]))) return;
  LocalFree(w);
  *argc = n;
  *argv = a;
}
#else
typedef int hsi_win_cli_unused;   /* ISO C: a translation unit is not empty */
#endif
