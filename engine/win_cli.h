/*
** win_cli.h -- (Windows only) what main.c calls on Windows: the process
** set-up that makes the program behave as on Linux (UTF-8 arguments and
** output, LF line ends), and the commands that exist only there.
*/
#ifndef HS_WIN_CLI_H
#define HS_WIN_CLI_H
#ifdef _WIN32
/*
** The command line as UTF-8 (from the wide command line, so C:\Users\Zoë
** survives), the console's output code page set to UTF-8, and stdin,
** stdout, stderr and every file opened later in binary mode: the output
** is byte for byte the Linux build's (LF, no CR).  Replaces argc and argv;
** the strings live until the process exits.
*/
void hsi_win_init(int *argc, char ***argv);
#endif
#endif
