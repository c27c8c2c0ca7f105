/*
** osfile.h -- opening files by a UTF-8 path on every platform.  Paths in
** heapscript are UTF-8 strings (Lua strings, argv).  POSIX takes them as
** they are; Windows's narrow calls would read them in the ANSI code page,
** so a trace under C:\Users\Zoë\ would not open.  On Windows these go
** through the wide calls (engine/win_file.c); elsewhere they are the C
** library's own.
*/
#ifndef HS_OSFILE_H
#define HS_OSFILE_H
#include <stdio.h>
#include <stdint.h>

/* Which file a path names, and which version of it: the device (volume)
   and file number, the size and the last write time.  Two ids are equal
   when they are the same file, unchanged between the two looks. */
typedef struct hsi_fileid { uint64_t dev, ino, size, mtime; } hsi_fileid;
static inline int hsi_fileid_eq(const hsi_fileid *a, const hsi_fileid *b) {
  return a->dev == b->dev && a->ino == b->ino && a->size == b->size && a->mtime == b->mtime;
}

enum { HSI_PATH_NONE, HSI_PATH_FILE, HSI_PATH_DIR, HSI_PATH_OTHER };

#ifdef _WIN32
#include <wchar.h>
FILE *hsi_fopen(const char *path, const char *mode);
FILE *hsi_freopen(const char *path, const char *mode, FILE *f);
int hsi_remove(const char *path);
int hsi_rename(const char *from, const char *to);
/* A new empty file in the user's temporary directory; its UTF-8 name in
   buf.  0, or -1 when none could be made. */
int hsi_tmpname(char *buf, size_t len);
/* 1 when path names a regular file. */
int hsi_is_file(const char *path);
/* What path names: HSI_PATH_NONE (nothing, or it cannot be looked at),
   _FILE (a regular file), _DIR or _OTHER (a FIFO, a device, a socket:
   not to be opened as a file; Windows reports none). */
int hsi_path_kind(const char *path);
/* 1 when both paths name the same existing file (links included). */
int hsi_same_file(const char *a, const char *b);
/* 0 and *id for an existing file, -1 when it cannot be looked at. */
int hsi_file_id(const char *path, hsi_fileid *id);
/* UTF-8 to a malloc'd UTF-16 string (NULL if not valid UTF-8 or no memory). */
wchar_t *hsi_wide(const char *utf8);
/* UTF-16 to a malloc'd UTF-8 string (NULL if no memory). */
char *hsi_utf8(const wchar_t *w);
/* The absolute path of an existing file or directory, malloc'd UTF-8
   (NULL if it does not exist).  Windows has no symbolic-link resolution
   here: the path is made absolute and normalised. */
char *hsi_realpath(const char *path);
#else
#include <stdlib.h>
#define hsi_realpath(p) realpath((p), NULL)
#include <sys/stat.h>
#define hsi_fopen fopen
#define hsi_freopen freopen
#define hsi_remove remove
#define hsi_rename rename
static inline int hsi_is_file(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}
static inline int hsi_path_kind(const char *path) {
  struct stat st;
  if (stat(path, &st) != 0) return HSI_PATH_NONE;
  return S_ISREG(st.st_mode) ? HSI_PATH_FILE : S_ISDIR(st.st_mode) ? HSI_PATH_DIR : HSI_PATH_OTHER;
}
static inline int hsi_same_file(const char *a, const char *b) {
  struct stat sa, sb;
  return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}
static inline int hsi_file_id(const char *path, hsi_fileid *id) {
  struct stat st;
  if (stat(path, &st) != 0) return -1;
  id->dev = (uint64_t)st.st_dev;
  id->ino = (uint64_t)st.st_ino;
  id->size = (uint64_t)st.st_size;
#if defined(__linux__) && defined(st_mtime)   /* st_mtime is st_mtim.tv_sec: the nanoseconds are there */
  id->mtime = (uint64_t)st.st_mtim.tv_sec * 1000000000u + (uint64_t)st.st_mtim.tv_nsec;
#else
  id->mtime = (uint64_t)st.st_mtime;
#endif
  return 0;
}
#endif
#endif
