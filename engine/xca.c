/*
** xca.c -- MS-XCA ([MS-XCA] v10.0, Xpress Compression Algorithm): the
** three formats RtlCompressBuffer knows and ETW uses for compressed
** buffers.  Decoders for Plain LZ77 (2.4), LZ77+Huffman (2.2) and LZNT1
** (2.5), and greedy compressors for the trace writer and the tests.
**
** Decoding rules shared by the three formats, because the caller (the ETL
** reader) knows how many bytes a buffer inflates to and the stream may
** carry padding or an end marker the caller does not want:
**  - decoding stops as soon as outlen bytes exist; what follows is ignored;
**  - input that ends between two whole items returns the count so far, and
**    the caller compares it with what it expected;
**  - anything else -- an item cut in half, a match reaching before the
**    start of the output or past outlen, a Huffman table that is not a
**    complete prefix code, a bad LZNT1 chunk header -- is HS_EFORMAT, and
**    no count is returned for it.
** Every input read and output write is checked against its buffer.
*/
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "heapscript.h"
#include "bytes.h"
#include "xca.h"

/* Count of leading zero bits of a non-zero word. */
static unsigned lead0(uint32_t x) {
#if defined(__GNUC__)
  return (unsigned)__builtin_clz(x);
#else
  unsigned n = 0;
  while (!(x & 0x80000000u)) x <<= 1, n++;
  return n;
#endif
}

/*
** Copy a match of len bytes from dist back.  The caller has checked both
** against the output.  Source and target overlap when dist < len (that is
** how runs are coded), so only a distance of 8 or more may move 8 bytes at
** a time, and that path needs 7 spare bytes past the match, which later
** items overwrite.  Short distances copy the period in doubling steps.
** copy_long does that; copy_match, inline in the decoders' loops, moves
** most matches, short and not close, as two 8-byte moves itself.
*/
static void copy_long(uint8_t *op, size_t dist, size_t len, const uint8_t *oend) {
  const uint8_t *src = op - dist;
  if (dist >= 8 && (size_t)(oend - op) - len >= 8) {
    uint8_t *end = op + len;
    do {
      memcpy(op, src, 8);
      op += 8, src += 8;
    } while (op < end);
  } else if (dist >= len) {
    memcpy(op, src, len);
  } else if (dist == 1) {
    memset(op, *src, len);
  } else if (len < 32) {
    while (len--) *op++ = *src++;
  } else {
    while (len) {
      size_t c = (size_t)(op - src);
      if (c > len) c = len;
      memcpy(op, src, c);
      op += c, len -= c;
    }
  }
}

static inline void copy_match(uint8_t *op, size_t dist, size_t len, const uint8_t *oend) {
  if (len <= 16 && dist >= 8 && (size_t)(oend - op) >= 16) {
    memcpy(op, op - dist, 8);
    memcpy(op + 8, op + 8 - dist, 8);
    return;
  }
  copy_long(op, dist, len, oend);
}

/* ------------------------------------------------------------ Plain LZ77 */

/*
** [MS-XCA] 2.4.  32 flag bits per little-endian DWORD, most significant
** first: 0 a literal byte, 1 a 16-bit match word (13 bits distance - 1,
** 3 bits length - 3).  Length 7 escapes to a nibble (two matches share a
** byte, low nibble first), nibble 15 to a byte, byte 255 to a u16 and a u16
** of 0 to a u32; the u16/u32 hold the whole length - 3.  The compressor
** fills unused flag bits with ones, so a match flag with no input left is
** the end.
*/
/* The match whose 16-bit word is at ip (the caller has the 2 bytes): its
   distance and whole length, the word's 3 bits escaping at 7 to a nibble
   (two matches share a byte, low nibble first; *half holds the byte with
   the high one), 15 to a byte, 255 to a u16 and a u16 of 0 to a u32
   holding the whole length - 3; checked against the output, `made`
   bytes of it so far and `room` left.  Returns where the input goes on,
   or NULL for a stream cut or damaged there. */
static inline const uint8_t *match_of(const uint8_t *ip, const uint8_t *iend, const uint8_t **half,
                                      size_t made, size_t room, size_t *dist, uint64_t *len) {
  unsigned m = rd16(ip);
  uint64_t n = m & 7;
  ip += 2;
  *dist = (m >> 3) + 1;
  if (n == 7) {
    if (*half) {
      n = **half >> 4;
      *half = NULL;
    } else {
      if (ip == iend) return NULL;
      *half = ip;
      n = *ip++ & 15;
    }
    if (n == 15) {
      if (ip == iend) return NULL;
      n = *ip++;
      if (n == 255) {
        if (iend - ip < 2) return NULL;
        n = rd16(ip);
        ip += 2;
        if (n == 0) {
          if (iend - ip < 4) return NULL;
          n = rd32(ip);
          ip += 4;
        }
        if (n < 15 + 7) return NULL;
        n -= 15 + 7;
      }
      n += 15;
    }
    n += 7;
  }
  n += 3;
  if (*dist > made || n > (uint64_t)room) return NULL;
  *len = n;
  return ip;
}

/*
** The fast loop: while FAST bytes of input and of output remain, no item
** can read past the input (at most 4 flag bytes and 32 literals, or a
** match word and its 10 bytes of length) nor a copy of up to 32 bytes
** write past the output, so only the match itself is checked.  The
** careful loop below takes the rest of the stream from where it stops,
** with the same state.
*/
#define FAST 64

static long plain_decode(const uint8_t *in, size_t inlen, uint8_t *out, size_t outlen, int fast) {
  const uint8_t *ip = in, *iend = in + inlen, *half = NULL;
  uint8_t *op = out, *oend = out + outlen;
  uint32_t flags = 0;
  unsigned nflags = 0;

  while (fast && iend - ip >= FAST && oend - op >= FAST) {
    uint64_t len;
    size_t dist;
    if (nflags == 0) {
      flags = rd32(ip);
      ip += 4, nflags = 32;
    }
    if (!(flags & 0x80000000u)) {
      size_t run = flags ? lead0(flags) : 32;
      if (run > nflags) run = nflags;
      memcpy(op, ip, 32);
      op += run, ip += run;
      flags = run < 32 ? flags << run : 0;
      nflags -= (unsigned)run;
      continue;
    }
    flags <<= 1, nflags--;
    if ((ip = match_of(ip, iend, &half, (size_t)(op - out), (size_t)(oend - op), &dist, &len)) == NULL)
      return HS_EFORMAT;
    if (dist >= 16 && len <= 32) {            /* two 16-byte moves, within FAST */
      memcpy(op, op - dist, 16);
      memcpy(op + 16, op + 16 - dist, 16);
    } else {
      copy_match(op, dist, (size_t)len, oend);
    }
    op += len;
  }

  while (op < oend) {
    uint64_t len;
    size_t dist;
    if (nflags == 0) {
      if (ip == iend) break;
      if (iend - ip < 4) return HS_EFORMAT;
      flags = rd32(ip);
      ip += 4, nflags = 32;
    }
    if (!(flags & 0x80000000u)) {
      /* A run of literals: as many as the leading zero flags say. */
      size_t run = flags ? lead0(flags) : 32;
      if (run > nflags) run = nflags;
      if (run > (size_t)(oend - op)) run = (size_t)(oend - op);
      if (run > (size_t)(iend - ip)) {
        run = (size_t)(iend - ip);
        if (!run) break;
      }
      if (iend - ip >= 32 && oend - op >= 32) memcpy(op, ip, 32);
      else memcpy(op, ip, run);
      op += run, ip += run;
      flags = run < 32 ? flags << run : 0;
      nflags -= (unsigned)run;
      continue;
    }
    flags <<= 1, nflags--;
    if (ip == iend) break;
    if (iend - ip < 2) return HS_EFORMAT;
    if ((ip = match_of(ip, iend, &half, (size_t)(op - out), (size_t)(oend - op), &dist, &len)) == NULL)
      return HS_EFORMAT;
    copy_match(op, dist, (size_t)len, oend);
    op += len;
  }
  return (long)(op - out);
}

/* ---------------------------------------------------------- LZ77+Huffman */

/*
** A decoding table for one block: the first 12 bits of the window index
** prim; codes of 13..15 bits go through an 8-entry second level (at most
** one per long-code symbol, so 512 of them).  An entry is len << 9 | symbol,
** or 0x8000 | second-level index.  12 bits keep the hot part in L1.
*/
#define HBITS 12
typedef struct htab {
  uint16_t prim[1 << HBITS];
  uint16_t sub[512 << (15 - HBITS)];
} htab;

/* Canonical codes from the 4-bit lengths (2.2: by length, then symbol).
   The code must be complete -- exactly 2^15 slots of the spec's table --
   or the block is invalid. */
static int huff_table(const uint8_t *lens, htab *t) {
  unsigned count[16] = {0}, next[16], code = 0, nsub = 0, s, l;
  uint32_t used = 0;
  for (s = 0; s < 512; s++) count[(lens[s >> 1] >> (s & 1) * 4) & 15]++;
  for (l = 1; l <= 15; l++) used += (uint32_t)count[l] << (15 - l);
  if (used != 1u << 15) return -1;
  count[0] = 0;
  for (l = 1; l <= 15; l++) next[l] = code = (code + count[l - 1]) << 1;
  memset(t->prim, 0, sizeof t->prim);
  for (s = 0; s < 512; s++) {
    unsigned c, i, n;
    uint16_t e, *dst;
    l = (lens[s >> 1] >> (s & 1) * 4) & 15;
    if (!l) continue;
    c = next[l]++;
    e = (uint16_t)(l << 9 | s);
    if (l <= HBITS) {
      dst = t->prim + (c << (HBITS - l));
      n = 1u << (HBITS - l);
    } else {
      uint16_t *p = t->prim + (c >> (l - HBITS));
      if (!*p) *p = (uint16_t)(0x8000 | nsub++);
      dst = t->sub + ((*p & 0x7FFFu) << (15 - HBITS))
            + ((c & ((1u << (l - HBITS)) - 1)) << (15 - l));
      n = 1u << (15 - l);
    }
    for (i = 0; i < n; i++) dst[i] = e;
  }
  return 0;
}

/*
** The bit reader of 2.2: 16-bit little-endian words, most significant bit
** first, in a 32-bit window holding nb (16..32) valid bits, topped up right
** after each take so that the byte position matches the compressor's (the
** extra length bytes sit exactly where the reader is).  At the end of the
** input one word of zeros is lent; taking any of its bits means the stream
** was cut short.
*/
typedef struct bitin {
  uint32_t v;
  int nb, lent;
  size_t ip;
} bitin;

static int take(bitin *b, const uint8_t *in, size_t inlen, unsigned n) {
  b->v <<= n;
  b->nb -= (int)n;
  if (b->nb >= 16) return 0;
  if (inlen - b->ip >= 2) {
    b->v |= (uint32_t)rd16(in + b->ip) << (16 - b->nb);
    b->ip += 2;
  } else if (b->lent) {
    return -1;
  } else {
    b->lent = 1;
  }
  b->nb += 16;
  return 0;
}

/* True when the reader holds the last of the input and nothing but zero
   bits: what follows an end-of-stream symbol (the flush pads with zeros). */
static int only_padding(const bitin *b, size_t inlen) {
  int real = b->nb - (b->lent ? 16 : 0);
  return inlen - b->ip < 2 && (real <= 0 || !(b->v >> (32 - real)));
}

static unsigned lookup(const htab *t, uint32_t v) {
  unsigned e = t->prim[v >> (32 - HBITS)];
  return e & 0x8000 ? t->sub[(e & 0x7FFFu) << (15 - HBITS) | (v >> 17 & 7)] : e;
}

/* At a block end with too little input for another block: the stream
   must stop here, with nothing left but padding, or the end-of-stream
   symbol and padding. */
static int ends_here(bitin *b, const htab *t, const uint8_t *in, size_t inlen) {
  unsigned e = lookup(t, b->v);
  if (only_padding(b, inlen)) return 1;
  return (e & 511) == 256 && !take(b, in, inlen, e >> 9) && only_padding(b, inlen);
}

/*
** [MS-XCA] 2.2.  Blocks of 64 KiB of output, each a 256-byte table of
** 4-bit code lengths for 512 symbols and a bit stream.  Symbols below 256
** are literals; the others are 256 + min(len - 3, 15) + 16 * log2(dist),
** with log2(dist) raw distance bits after any extra length bytes
** (byte, 255 -> u16, 0 -> u32; the u16/u32 hold len - 3).  A match may run
** past the block end; the next block starts at the next unread byte.
**
** Symbol 256 doubles as the end-of-stream marker, which 2.2 recognises
** only once all output is written -- and then this loop has stopped
** already.  So 256 is always decoded as a match (distance 1, length 3);
** but if it came with the input used up and only zero bits left, and the
** stream then fails or stops, the stream ended there and that count is
** returned.  That covers a caller asking for more than the stream holds,
** except where 256 has the all-zero code: then a last real match and the
** end marker look alike, and the first is taken.
*/
static long huff_decode(const uint8_t *in, size_t inlen, uint8_t *out, size_t outlen) {
  htab t;
  bitin b;
  uint8_t *op = out, *oend = out + outlen;
  size_t ip = 0;
  long eof = -1;

  while (op < oend) {
    uint8_t *bend;
    if (inlen - ip == 0) break;
    if (inlen - ip < 256 + 4) goto damaged;
    if (huff_table(in + ip, &t)) goto damaged;
    ip += 256;
    b.v = (uint32_t)rd16(in + ip) << 16 | rd16(in + ip + 2);
    b.ip = ip + 4, b.nb = 32, b.lent = 0;
    bend = (size_t)(oend - op) > 65536 ? op + 65536 : oend;
    for (;;) {
      unsigned e = lookup(&t, b.v), sym, db;
      uint64_t len;
      size_t dist;
      if (op >= bend) {
        if (op == oend || inlen - b.ip >= 256 + 4) break;
        if (ends_here(&b, &t, in, inlen)) return eof >= 0 ? eof : (long)(op - out);
        goto damaged;
      }
      sym = e & 511;
      if (take(&b, in, inlen, e >> 9)) goto damaged;
      if (sym < 256) {
        *op++ = (uint8_t)sym;
        continue;
      }
      if (sym == 256 && eof < 0 && only_padding(&b, inlen)) eof = (long)(op - out);
      sym -= 256;
      len = sym & 15;
      db = sym >> 4;
      if (len == 15) {
        if (b.ip >= inlen) goto damaged;
        len = in[b.ip++];
        if (len == 255) {
          if (inlen - b.ip < 2) goto damaged;
          len = rd16(in + b.ip);
          b.ip += 2;
          if (len == 0) {
            if (inlen - b.ip < 4) goto damaged;
            len = rd32(in + b.ip);
            b.ip += 4;
          }
          if (len < 15) goto damaged;
        } else {
          len += 15;
        }
      }
      len += 3;
      dist = (size_t)1 << db;
      if (db) {
        dist += b.v >> (32 - db);
        if (take(&b, in, inlen, db)) goto damaged;
      }
      if (dist > (size_t)(op - out) || len > (uint64_t)(oend - op)) goto damaged;
      copy_match(op, dist, (size_t)len, oend);
      op += len;
    }
    ip = b.ip;
  }
  return (long)(op - out);
damaged:
  return eof >= 0 ? eof : HS_EFORMAT;
}

/* ----------------------------------------------------------------- LZNT1 */

/*
** One compressed LZNT1 chunk ([MS-XCA] 2.5.1.3-4): flag bytes, low bit
** first, each over up to 8 items, a literal byte or a 16-bit word.  The
** word's split depends on U, the bytes already out in this chunk: the
** distance takes max(4, bit length of U - 1) high bits (so 4 up to U = 16,
** 5 up to 32, ... 12), the length the rest.  A chunk holds at most 4096
** bytes and a match cannot reach before its start.
*/
static int lznt1_chunk(const uint8_t *ip, const uint8_t *iend, uint8_t *op, uint8_t *olim,
                       uint8_t **opp) {
  uint8_t *start = op;
  unsigned lbits = 12;
  size_t grow = 16;           /* U past this widens the distance field */
  while (ip < iend) {
    unsigned flags = *ip++, i;
    for (i = 0; i < 8 && ip < iend; i++, flags >>= 1) {
      size_t u = (size_t)(op - start), dist, len;
      unsigned w;
      if (!(flags & 1)) {
        if (op == olim) return -1;
        *op++ = *ip++;
        continue;
      }
      if (iend - ip < 2) return -1;
      w = rd16(ip);
      ip += 2;
      while (u > grow) grow <<= 1, lbits--;
      len = (w & ((1u << lbits) - 1)) + 3;
      dist = (w >> lbits) + 1;
      if (dist > u || len > (size_t)(olim - op)) return -1;
      copy_match(op, dist, len, olim);
      op += len;
    }
  }
  *opp = op;
  return 0;
}

/*
** [MS-XCA] 2.5.1.2: chunks behind a 16-bit header -- bit 15 compressed,
** bits 14..12 the signature 3, bits 11..0 the chunk size - 3 counting the
** header; a zero header ends the buffer.  Every chunk but the last stands
** for 4096 bytes: one that comes out shorter is padded with zeros before
** the next.  (That is what Wine's RtlDecompressBuffer does, modelled on
** Windows; our compressor never writes such a chunk.)
*/
static long lznt1_decode(const uint8_t *in, size_t inlen, uint8_t *out, size_t outlen) {
  const uint8_t *ip = in, *iend = in + inlen;
  uint8_t *op = out, *oend = out + outlen;

  while (op < oend) {
    unsigned h;
    size_t size, pad;
    if (iend - ip < 2) {
      if (ip != iend) return HS_EFORMAT;
      break;
    }
    h = rd16(ip);
    if (!h) break;
    ip += 2;
    size = (h & 0xFFFu) + 1;
    if ((h >> 12 & 7) != 3 || size > (size_t)(iend - ip)) return HS_EFORMAT;
    pad = (size_t)(op - out) & 0xFFF;
    if (pad) {
      pad = 0x1000 - pad;
      if (pad >= (size_t)(oend - op)) return HS_EFORMAT;
      memset(op, 0, pad);
      op += pad;
    }
    if (h & 0x8000) {
      uint8_t *olim = (size_t)(oend - op) > 0x1000 ? op + 0x1000 : oend;
      if (lznt1_chunk(ip, ip + size, op, olim, &op)) return HS_EFORMAT;
    } else {
      if (size > (size_t)(oend - op)) return HS_EFORMAT;
      memcpy(op, ip, size);
      op += size;
    }
    ip += size;
  }
  return (long)(op - out);
}

static long decompress(int format, const uint8_t *in, size_t inlen, uint8_t *out, size_t outlen,
                       int fast) {
  if (format != HS_XCA_LZNT1 && format != HS_XCA_XPRESS && format != HS_XCA_XPRESS_HUFF)
    return HS_EUNSUP;
  if ((!in && inlen) || (!out && outlen)) return HS_EARG;
  if (!inlen || !outlen) return 0;
  if (outlen > LONG_MAX) outlen = LONG_MAX;   /* the count must fit the result */
  if (format == HS_XCA_XPRESS) return plain_decode(in, inlen, out, outlen, fast);
  if (format == HS_XCA_XPRESS_HUFF) return huff_decode(in, inlen, out, outlen);
  return lznt1_decode(in, inlen, out, outlen);
}

long hs_xca_decompress(int format, const uint8_t *in, size_t inlen, uint8_t *out, size_t outlen) {
  return decompress(format, in, inlen, out, outlen, 1);
}

long hsi_xca_decompress_careful(int format, const uint8_t *in, size_t inlen, uint8_t *out,
                                size_t outlen) {
  return decompress(format, in, inlen, out, outlen, 0);
}

/* ----------------------------------------------------------- compressors */

/* The match finder: one remembered position (+ 1; 0 is none) per hash of
   3 bytes, as 2.1.4.1 sketches. */
#define MBITS 15

static uint32_t hash3(const uint8_t *p) {
  uint32_t v = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16;
  return (v * 2654435761u) >> (32 - MBITS);
}

static void remember(uint32_t *head, const uint8_t *in, size_t inlen, size_t from, size_t to) {
  for (; from < to && from + 3 <= inlen; from++) head[hash3(in + from)] = (uint32_t)from + 1;
}

/* Length of the match at in[i] against the remembered candidate: at least
   3 and at most maxlen, from no earlier than lo and no further than
   maxdist back; 0 if there is none.  Records i either way. */
static size_t find(uint32_t *head, const uint8_t *in, size_t inlen, size_t i, size_t lo,
                   size_t maxdist, size_t maxlen, size_t *dist) {
  uint32_t *slot, c;
  size_t n = 0;
  if (maxlen < 3 || i + 3 > inlen) return 0;
  slot = head + hash3(in + i);
  c = *slot;
  *slot = (uint32_t)i + 1;
  if (!c || c - 1 < lo || i - (c - 1) > maxdist) return 0;
  c--;
  while (n < maxlen && in[c + n] == in[i + n]) n++;
  if (n < 3) return 0;
  *dist = i - c;
  return n;
}

/* Output with a sticky "full" flag: once a write does not fit, nothing
   more is written and the compressor reports HS_EARG. */
typedef struct wbuf {
  uint8_t *p;
  size_t n, cap;
  int full;
} wbuf;

static int room(wbuf *w, size_t k) {
  if (!w->full && w->cap - w->n >= k) return 1;
  w->full = 1;
  return 0;
}
static void put8(wbuf *w, unsigned v) {
  if (room(w, 1)) w->p[w->n++] = (uint8_t)v;
}
static void put16(wbuf *w, unsigned v) {
  if (room(w, 2)) wr16(w->p + w->n, (uint16_t)v), w->n += 2;
}
static void put32(wbuf *w, uint32_t v) {
  if (room(w, 4)) wr32(w->p + w->n, v), w->n += 4;
}

/* Plain LZ77, the encoder of 2.3. */
static long plain_compress(const uint8_t *in, size_t n, wbuf *w, uint32_t *head) {
  size_t i = 0, fpos = w->n, half = 0;
  int have_half = 0;
  uint32_t flags = 0;
  unsigned nflags = 0;
  put32(w, 0);
  while (i < n && !w->full) {
    size_t dist = 0, len = find(head, in, n, i, 0, 8192, n - i, &dist);
    if (!len) {
      put8(w, in[i++]);
      flags <<= 1;
    } else {
      size_t l = len - 3;
      remember(head, in, n, i + 1, i + len);
      i += len;
      flags = flags << 1 | 1;
      if (l < 7) {
        put16(w, (unsigned)((dist - 1) << 3 | l));
      } else {
        put16(w, (unsigned)((dist - 1) << 3 | 7));
        l -= 7;
        if (have_half) {
          w->p[half] |= (uint8_t)((l < 15 ? l : 15) << 4);
          have_half = 0;
        } else {
          half = w->n, have_half = 1;
          put8(w, (unsigned)(l < 15 ? l : 15));
        }
        if (l >= 15) {
          l -= 15;
          if (l < 255) {
            put8(w, (unsigned)l);
          } else {
            put8(w, 255);
            l += 15 + 7;
            if (l < 65536) {
              put16(w, (unsigned)l);
            } else {
              put16(w, 0);
              put32(w, (uint32_t)l);
            }
          }
        }
      }
    }
    if (++nflags == 32 && !w->full) {
      wr32(w->p + fpos, flags);
      fpos = w->n, nflags = 0, flags = 0;
      put32(w, 0);
    }
  }
  if (w->full) return HS_EARG;
  /* Unused flags are ones: a match with no input left ends the stream. */
  flags = nflags ? flags << (32 - nflags) | ((1u << (32 - nflags)) - 1) : 0xFFFFFFFFu;
  wr32(w->p + fpos, flags);
  return (long)w->n;
}

/* LZNT1: 4096-byte chunks, each compressed on its own into tmp and stored
   raw when that does not save anything. */
static long lznt1_compress(const uint8_t *in, size_t n, wbuf *w, uint32_t *head) {
  uint8_t tmp[4096 + 512 + 8];
  size_t cs;
  for (cs = 0; cs < n; cs += 4096) {
    size_t clen = n - cs < 4096 ? n - cs : 4096, i = cs, t = 0;
    unsigned lbits = 12;
    size_t grow = 16;
    while (i < cs + clen) {
      size_t fpos = t++;
      unsigned bit;
      tmp[fpos] = 0;
      for (bit = 0; bit < 8 && i < cs + clen; bit++) {
        size_t dist = 0, len;
        while (i - cs > grow) grow <<= 1, lbits--;
        len = find(head, in, n, i, cs, (size_t)1 << (16 - lbits),
                   cs + clen - i < (1u << lbits) + 2 ? cs + clen - i : (1u << lbits) + 2, &dist);
        if (len) {
          wr16(tmp + t, (uint16_t)((dist - 1) << lbits | (len - 3)));
          t += 2;
          tmp[fpos] |= (uint8_t)(1u << bit);
          remember(head, in, n, i + 1, i + len);
          i += len;
        } else {
          tmp[t++] = in[i++];
        }
      }
    }
    if (!room(w, 2 + (t < clen ? t : clen))) return HS_EARG;
    if (t < clen) {
      put16(w, 0xB000u | (unsigned)(t - 1));
      memcpy(w->p + w->n, tmp, t);
      w->n += t;
    } else {
      put16(w, 0x3000u | (unsigned)(clen - 1));
      memcpy(w->p + w->n, in + cs, clen);
      w->n += clen;
    }
  }
  if (w->cap - w->n >= 2) wr16(w->p + w->n, 0);   /* end marker, not counted */
  return (long)w->n;
}

/*
** Code lengths for the symbol counts f (512 of them, changed): Huffman's
** construction with two queues over the counts sorted, then, while some
** code is longer than the 15 bits the table can hold, halve the counts and
** build again.  At least two symbols get a code so that it is complete.
*/
static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return (x > y) - (x < y);
}

static void huff_lengths(uint32_t *f, uint8_t *len) {
  uint32_t key[512], weight[1023];
  uint16_t parent[1023];
  uint16_t depth[1023];
  unsigned n, s, k;
  for (n = 0, s = 0; s < 512; s++) n += f[s] != 0;
  for (s = 0; n < 2; s++)
    if (!f[s]) f[s] = 1, n++;
  for (;;) {
    unsigned li = 0, ni, nn, maxd = 0;
    for (n = 0, s = 0; s < 512; s++)
      if (f[s]) key[n++] = (f[s] > 0x7FFFFF ? 0x7FFFFFu : f[s]) << 9 | s;
    qsort(key, n, sizeof key[0], cmp_u32);
    for (k = 0; k < n; k++) weight[k] = key[k] >> 9;
    for (ni = nn = n; nn < 2 * n - 1; nn++) {
      unsigned pick[2], j;
      for (j = 0; j < 2; j++)
        pick[j] = li < n && (ni >= nn || weight[li] <= weight[ni]) ? li++ : ni++;
      weight[nn] = weight[pick[0]] + weight[pick[1]];
      parent[pick[0]] = parent[pick[1]] = (uint16_t)nn;
    }
    depth[2 * n - 2] = 0;
    for (k = 2 * n - 2; k-- > 0;) depth[k] = (uint16_t)(depth[parent[k]] + 1);
    memset(len, 0, 512);
    for (k = 0; k < n; k++) {
      len[key[k] & 511] = (uint8_t)depth[k];
      if (depth[k] > maxd) maxd = depth[k];
    }
    if (maxd <= 15) return;
    for (s = 0; s < 512; s++)
      if (f[s]) f[s] = f[s] >> 1 | 1;
  }
}

/*
** The bit writer of 2.1.4.3: a word is stored only when the next bits do
** not fit, and two word slots are always reserved ahead of the byte
** position, where extra length bytes go.  The decoder depends on exactly
** this layout.  Slots past a full output are never written.
*/
typedef struct bitout {
  wbuf *w;
  size_t p1, p2;
  uint32_t word;
  unsigned freeb;
} bitout;

static void slot16(wbuf *w, size_t at, uint32_t v) {
  if (at + 2 <= w->n) wr16(w->p + at, (uint16_t)v);
}

static void bits_put(bitout *b, unsigned n, uint32_t v) {
  if (!n) return;
  if (b->freeb >= n) {
    b->freeb -= n;
    b->word = b->word << n | v;
    return;
  }
  b->word = b->word << b->freeb | v >> (n - b->freeb);
  slot16(b->w, b->p1, b->word);
  b->p1 = b->p2, b->p2 = b->w->n;
  put16(b->w, 0);
  b->freeb += 16 - n;
  b->word = v;
}

typedef struct token {
  uint32_t len;   /* 0 for a literal */
  uint32_t val;   /* the literal, or the distance */
} token;

static unsigned high_bit(size_t d) {
  unsigned h = 0;
  while (d >>= 1) h++;
  return h;
}

static unsigned match_sym(const token *t) {
  return 256 + (t->len - 3 < 15 ? t->len - 3 : 15) + 16 * high_bit(t->val);
}

/* LZ77+Huffman: 64 KiB blocks; matches stay inside their block and reach
   up to 65535 bytes back into earlier ones. */
static long huff_compress(const uint8_t *in, size_t n, wbuf *w, uint32_t *head, token *tok) {
  size_t bs = 0;
  do {
    size_t be = n - bs > 65536 ? bs + 65536 : n, i = bs, nt = 0, k;
    uint32_t freq[512] = {0};
    unsigned code[512], next[16], count[16] = {0}, c = 0, s, l;
    uint8_t len[512];
    bitout b;
    while (i < be) {
      size_t dist = 0, ml = find(head, in, n, i, 0, 65535, be - i, &dist);
      if (ml) {
        tok[nt].len = (uint32_t)ml, tok[nt].val = (uint32_t)dist;
        remember(head, in, n, i + 1, i + ml);
        i += ml;
        freq[match_sym(&tok[nt++])]++;
      } else {
        tok[nt].len = 0, tok[nt].val = in[i++];
        freq[tok[nt++].val]++;
      }
    }
    if (be == n) freq[256]++;          /* end of stream, as 2.1.4.3 advises */
    huff_lengths(freq, len);
    for (s = 0; s < 512; s++) count[len[s]]++;
    count[0] = 0;
    for (l = 1; l <= 15; l++) next[l] = c = (c + count[l - 1]) << 1;
    for (s = 0; s < 512; s++) code[s] = len[s] ? next[len[s]]++ : 0;

    if (!room(w, 256 + 4)) return HS_EARG;
    for (s = 0; s < 256; s++) w->p[w->n++] = (uint8_t)(len[2 * s] | len[2 * s + 1] << 4);
    b.w = w, b.p1 = w->n, b.p2 = w->n + 2, b.word = 0, b.freeb = 16;
    put16(w, 0), put16(w, 0);
    for (k = 0; k < nt && !w->full; k++) {
      const token *t = &tok[k];
      if (!t->len) {
        bits_put(&b, len[t->val], code[t->val]);
      } else {
        unsigned sym = match_sym(t), hb = high_bit(t->val);
        uint32_t ml = t->len - 3;
        bits_put(&b, len[sym], code[sym]);
        if (ml >= 15) {
          ml -= 15;
          if (ml < 255) {
            put8(w, ml);
          } else {
            put8(w, 255);
            ml += 15;
            if (ml < 65536) {
              put16(w, ml);
            } else {
              put16(w, 0);
              put32(w, ml);
            }
          }
        }
        bits_put(&b, hb, t->val - (1u << hb));
      }
    }
    if (be == n) bits_put(&b, len[256], code[256]);
    if (w->full) return HS_EARG;
    slot16(w, b.p1, b.word << b.freeb);
    slot16(w, b.p2, 0);
    bs = be;
  } while (bs < n);
  return (long)w->n;
}

long hsi_xca_compress(int format, const uint8_t *in, size_t inlen, uint8_t *out, size_t outcap) {
  wbuf w;
  uint32_t *head;
  token *tok = NULL;
  long r;
  if (format != HS_XCA_LZNT1 && format != HS_XCA_XPRESS && format != HS_XCA_XPRESS_HUFF)
    return HS_EUNSUP;
  if ((!in && inlen) || (!out && outcap) || inlen > (size_t)1 << 30) return HS_EARG;
  w.p = out, w.n = 0, w.full = 0;
  w.cap = outcap > LONG_MAX ? LONG_MAX : outcap;   /* the length must fit the result */
  if (!(head = calloc((size_t)1 << MBITS, sizeof *head))) return HS_ENOMEM;
  if (format == HS_XCA_XPRESS_HUFF && !(tok = malloc(65536 * sizeof *tok))) {
    free(head);
    return HS_ENOMEM;
  }
  if (format == HS_XCA_XPRESS) r = plain_compress(in, inlen, &w, head);
  else if (format == HS_XCA_LZNT1) r = lznt1_compress(in, inlen, &w, head);
  else r = huff_compress(in, inlen, &w, head, tok);
  free(tok);
  free(head);
  return r;
}

size_t hsi_xca_bound(int format, size_t inlen) {
  switch (format) {
  case HS_XCA_XPRESS: return inlen + 4 * (inlen / 32 + 2);
  case HS_XCA_LZNT1: return inlen + 2 * (inlen / 4096 + 1) + 2;
  /* A literal costs at most 15 bits, a match of n bytes less than 15n. */
  case HS_XCA_XPRESS_HUFF: return 2 * inlen + 264 * (inlen / 65536 + 1) + 8;
  default: return 0;
  }
}
