/*
** driver.c -- replays fuzz inputs through LLVMFuzzerTestOneInput without
** libFuzzer: every file of the directories (or files) named.  A crash or
** sanitizer report fails `make test`.
*/
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  uint8_t *buf;
  long n;
  if (!f) return 0;
  fseek(f, 0, SEEK_END);
  n = ftell(f);
  fseek(f, 0, SEEK_SET);
  buf = (uint8_t *)malloc(n > 0 ? (size_t)n : 1);
  if (!buf || (n > 0 && fread(buf, 1, (size_t)n, f) != (size_t)n)) { fclose(f); free(buf); return 0; }
  fclose(f);
  LLVMFuzzerTestOneInput(buf, (size_t)n);
  free(buf);
  return 1;
}

int main(int argc, char **argv) {
  int i, count = 0;
  for (i = 1; i < argc; i++) {
    struct stat st;
    DIR *d;
    struct dirent *e;
    if (stat(argv[i], &st) != 0) { fprintf(stderr, "%s: not found\n", argv[i]); return 1; }
    if (!S_ISDIR(st.st_mode)) { count += run_file(argv[i]); continue; }
    if (!(d = opendir(argv[i]))) return 1;
    while ((e = readdir(d)) != NULL) {
      char p[4096];
      if (e->d_name[0] == '.') continue;
      snprintf(p, sizeof p, "%s/%s", argv[i], e->d_name);
      count += run_file(p);
    }
    closedir(d);
  }
  printf("fuzz replay: %d inputs, no crash\n", count);
  return count > 0 ? 0 : 1;
}
