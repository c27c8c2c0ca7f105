/* text.h -- small text helpers shared by the engine and the bindings. */
#ifndef HS_TEXT_H
#define HS_TEXT_H
/* ASCII case-insensitive equality (provider, module, kind and tag names). */
int hsi_strieq(const char *a, const char *b);
#endif
