/*
** cliargs.h -- script mode's command line after SCRIPT: which words are
** traces and which are the script's own arguments, so that options go
** where users type them:
**
**   heapscript leaks a.etl b.etl --top 10 --kind heap
**   heapscript leaks a.etl -- --top 10             (the same; `--` kept for odd cases)
**
** The rule, word by word up to `--` (everything after `--` is the script's):
**  - heapscript's own options (`own` says how many words one takes) stay
**    heapscript's wherever they are;
**  - before the first option-looking word ("-x", "--name"), a word is a trace;
**  - the first option-looking word ends the traces: it is the script's, and
**    so is the word right after an option without "=" (its value, even if
**    a file of that name exists: `--json out.json`);
**  - after that, a word that is not an option's value is a trace when a
**    file of that name exists, else the script's.
*/
#ifndef HS_CLIARGS_H
#define HS_CLIARGS_H

enum { HSI_ARG_TRACE = 1, HSI_ARG_SCRIPT, HSI_ARG_OWN, HSI_ARG_DASHDASH };

/* Fills kind[0..n) for words[0..n).  is_file(path) says whether a file
   exists; own(word) is the number of words heapscript's own option
   `word` takes with its value (1 or 2), 0 when it is not one.  An own
   option missing its value is marked OWN alone (the caller reports it). */
void hsi_cli_classify(int n, char *const *words, int (*is_file)(const char *),
                      int (*own)(const char *), unsigned char *kind);

/* The C commands' (info, dump, symbols, merge) rule: up to `--`, a word
   starting with '-' (not '-' alone) is an option; after it every word is
   a trace.  1 when argv[*i] is a trace, put in traces[(*n)++], or `--`,
   the rest put there and *i on the last word; 0 for an option, the
   caller's. */
int hsi_cli_trace(int argc, char **argv, int *i, char **traces, int *n);

/* A usage error of the command cmd ("dump"): "heapscript CMD: MESSAGE",
   then the command's usage text, on stderr.  Returns 2, the exit status. */
int hsi_cli_usage_error(const char *cmd, const char *usage, const char *fmt, ...);

#endif
