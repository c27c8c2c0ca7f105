/*
** corelink.c -- nothing to run: the core engine's objects linked alone,
** without Lua (Makefile, `make test`), so that a core file that calls into
** the Lua bindings fails the build here, as it failed `make fuzz` and
** would fail a Lua-free embedding of the engine.
*/
int main(void) { return 0; }
