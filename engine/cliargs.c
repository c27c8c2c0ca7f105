/*
** cliargs.c -- traces or script arguments (see cliargs.h for the rule).
*/
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "cliargs.h"

static int option_like(const char *w) {
  return w[0] == '-' && w[1] != '\0';
}

int hsi_cli_trace(int argc, char **argv, int *i, char **traces, int *n) {
  if (strcmp(argv[*i], "--") == 0) {
    while (++*i < argc) traces[(*n)++] = argv[*i];
    *i = argc - 1;
    return 1;
  }
  if (option_like(argv[*i])) return 0;
  traces[(*n)++] = argv[*i];
  return 1;
}

int hsi_cli_usage_error(const char *cmd, const char *usage, const char *fmt, ...) {
  va_list ap;
  fflush(stdout);
  fprintf(stderr, "heapscript %s: ", cmd);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\n%s", usage);
  return 2;
}

void hsi_cli_classify(int n, char *const *words, int (*is_file)(const char *),
                      int (*own)(const char *), unsigned char *kind) {
  int i, in_opts = 0, value_next = 0;
  for (i = 0; i < n; i++) {
    const char *w = words[i];
    int k;
    if (strcmp(w, "--") == 0) {
      kind[i++] = HSI_ARG_DASHDASH;
      for (; i < n; i++) kind[i] = HSI_ARG_SCRIPT;
      return;
    }
    if ((k = own(w)) > 0) {               /* never an option's value: it looks like an option */
      kind[i] = HSI_ARG_OWN;
      if (k > 1 && i + 1 < n) kind[++i] = HSI_ARG_OWN;
      continue;
    }
    if (option_like(w)) {
      kind[i] = HSI_ARG_SCRIPT;
      in_opts = 1;
      value_next = strchr(w, '=') == NULL;
      continue;
    }
    if (!in_opts) kind[i] = HSI_ARG_TRACE;
    else if (value_next) kind[i] = HSI_ARG_SCRIPT;
    else kind[i] = is_file(w) ? HSI_ARG_TRACE : HSI_ARG_SCRIPT;
    value_next = 0;
  }
}
