/* sym_cmd.h -- the `heapscript symbols` command (sym_cmd.c). */
#ifndef HS_SYM_CMD_H
#define HS_SYM_CMD_H
/* argv: the arguments after "symbols".  Returns the exit status. */
int hsi_sym_cmd(int argc, char **argv);
#endif
