/* text.h -- small text helpers shared by the engine and the bindings. */
#ifndef HS_TEXT_H
#define HS_TEXT_H
#include <stddef.h>
#include <stdint.h>
/* ASCII case-insensitive equality (provider, module, kind and tag names). */
int hsi_strieq(const char *a, const char *b);
/* The length of the valid UTF-8 sequence at s (n bytes there: 1 to 4),
   0 if there is none (an ASCII byte is not one: 0 too); overlong forms,
   surrogates and code points past U+10FFFF are not valid. */
size_t hsi_utf8_seq(const unsigned char *s, size_t n);
/* FNV-1a of s[0..n): the hash of the interned-string tables (procmap.c, sym.c). */
uint32_t hsi_hash_bytes(const char *s, size_t n);
/* v's digits, decimal or lower-case hex, written backwards so that they
   end just before `end` (at least 20 bytes of room before it): their
   first.  What "%llu" and "%llx" write, without printf (dump and the
   frames' text write millions). */
char *hsi_utoa(uint64_t v, int hex, char *end);
/* ns / 1e9 seconds as printf("%*.*f", width, places) writes the double
   (places 1 to 9, width at most 40), made without printf where that is
   sure to give the same digits (timeconv.c); out holds 64 bytes.  Its
   length. */
size_t hsi_secs_format(int64_t ns, int places, int width, char *out);
#endif
