/*
** win_file.c -- (Windows only) files by UTF-8 path through the wide calls.
** The Lua library of the Windows build is compiled with fopen/freopen/
** remove/rename mapped here (engine/win/lua_shim.h), so io.open, dofile and
** require open the same paths the engine does.  A string that is not
** valid UTF-8 is passed to the narrow call unchanged: it may be in the
** ANSI code page, as a path from an older tool would be.
*/
#ifdef _WIN32
#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "osfile.h"

/* The real C library calls: the shim's macros must not apply here. */
#undef fopen
#undef freopen
#undef remove
#undef rename

wchar_t *hsi_wide(const char *s) {
  int n = MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, s, -1, NULL, 0);
  wchar_t *w;
  if (n <= 0 || !(w = (wchar_t *)malloc((size_t)n * sizeof *w))) return NULL;
  MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, s, -1, w, n);
  return w;
}

char *hsi_utf8(const wchar_t *w) {
  int n = WideCharToMultiByte(CP_UTF8, 0, w, -1, NULL, 0, NULL, NULL);
  char *s;
  if (n <= 0 || !(s = (char *)malloc((size_t)n))) return NULL;
  WideCharToMultiByte(CP_UTF8, 0, w, -1, s, n, NULL, NULL);
  return s;
}

/* The volume and file index of an existing file (0: it cannot be opened). */
static int file_id(const char *path, BY_HANDLE_FILE_INFORMATION *fi) {
  wchar_t *w = hsi_wide(path);
  HANDLE h;
  int ok;
  if (!w) return 0;
  h = CreateFileW(w, 0, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, NULL, OPEN_EXISTING,
                  FILE_FLAG_BACKUP_SEMANTICS, NULL);
  free(w);
  if (h == INVALID_HANDLE_VALUE) return 0;
  ok = GetFileInformationByHandle(h, fi) != 0;
  CloseHandle(h);
  return ok;
}

int hsi_same_file(const char *a, const char *b) {
  BY_HANDLE_FILE_INFORMATION fa, fb;
  return file_id(a, &fa) && file_id(b, &fb) && fa.dwVolumeSerialNumber == fb.dwVolumeSerialNumber
         && fa.nFileIndexHigh == fb.nFileIndexHigh && fa.nFileIndexLow == fb.nFileIndexLow;
}

int hsi_file_id(const char *path, hsi_fileid *id) {
  BY_HANDLE_FILE_INFORMATION fi;
  if (!file_id(path, &fi)) return -1;
  id->dev = fi.dwVolumeSerialNumber;
  id->ino = (uint64_t)fi.nFileIndexHigh << 32 | fi.nFileIndexLow;
  id->size = (uint64_t)fi.nFileSizeHigh << 32 | fi.nFileSizeLow;
  id->mtime = (uint64_t)fi.ftLastWriteTime.dwHighDateTime << 32 | fi.ftLastWriteTime.dwLowDateTime;
  return 0;
}

FILE *hsi_fopen(const char *path, const char *mode) {
  wchar_t *wp = hsi_wide(path), *wm = hsi_wide(mode);
  FILE *f = wp && wm ? _wfopen(wp, wm) : fopen(path, mode);
  free(wp); free(wm);
  return f;
}

FILE *hsi_freopen(const char *path, const char *mode, FILE *old) {
  wchar_t *wp, *wm;
  FILE *f;
  if (!path) return freopen(path, mode, old);     /* mode change only */
  wp = hsi_wide(path); wm = hsi_wide(mode);
  f = wp && wm ? _wfreopen(wp, wm, old) : freopen(path, mode, old);
  free(wp); free(wm);
  return f;
}

/* As POSIX remove(): a file or an empty directory. */
int hsi_remove(const char *path) {
  wchar_t *wp = hsi_wide(path);
  int rc;
  if (!wp) return remove(path);
  rc = _wremove(wp);
  if (rc != 0 && (GetFileAttributesW(wp) & FILE_ATTRIBUTE_DIRECTORY) &&
      GetFileAttributesW(wp) != INVALID_FILE_ATTRIBUTES)
    rc = _wrmdir(wp);
  free(wp);
  return rc;
}

int hsi_tmpname(char *buf, size_t len) {
  wchar_t dir[MAX_PATH + 1], name[MAX_PATH + 1];
  char *s;
  DWORD n = GetTempPathW(MAX_PATH + 1, dir);
  if (n == 0 || n > MAX_PATH || !GetTempFileNameW(dir, L"lua", 0, name)) return -1;
  if (!(s = hsi_utf8(name))) return -1;
  if (strlen(s) >= len) { free(s); return -1; }
  memcpy(buf, s, strlen(s) + 1);
  free(s);
  return 0;
}

int hsi_rename(const char *from, const char *to) {
  wchar_t *wf = hsi_wide(from), *wt = hsi_wide(to);
  int rc = wf && wt ? _wrename(wf, wt) : rename(from, to);
  free(wf); free(wt);
  return rc;
}

int hsi_is_file(const char *path) {
  wchar_t *wp = hsi_wide(path);
  DWORD a = wp ? GetFileAttributesW(wp) : GetFileAttributesA(path);
  free(wp);
  return a != INVALID_FILE_ATTRIBUTES && !(a & FILE_ATTRIBUTE_DIRECTORY);
}

int hsi_path_kind(const char *path) {
  wchar_t *wp = hsi_wide(path);
  DWORD a = wp ? GetFileAttributesW(wp) : GetFileAttributesA(path);
  free(wp);
  if (a == INVALID_FILE_ATTRIBUTES) return HSI_PATH_NONE;
  return (a & FILE_ATTRIBUTE_DIRECTORY) ? HSI_PATH_DIR : HSI_PATH_FILE;
}
#else
typedef int hsi_win_file_unused;   /* ISO C: a translation unit is not empty */
#endif

char *hsi_realpath(const char *path) {
  wchar_t *wp = hsi_wide(path), *full;
  char *r = NULL;
  if (!wp) return NULL;
  if (GetFileAttributesW(wp) != INVALID_FILE_ATTRIBUTES && (full = _wfullpath(NULL, wp, 0)) != NULL) {
    r = hsi_utf8(full);
    free(full);
  }
  free(wp);
  return r;
}
