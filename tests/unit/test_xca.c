/*
** test_xca.c -- engine/xca.c: MS-XCA decoding and the compressors.
** Hand-made streams built from [MS-XCA] section 2, the worked examples of
** section 3, round trips, damaged streams, and the XPRESS buffers of a
** real trace (skipped with a message when the corpus is absent, unless
** CI=true).  Also prints the decode speed on that trace.
*/
#include <time.h>

#include "unit.h"
#include "corpus.h"
#include "heapscript.h"
#include "bytes.h"
#include "xca.h"

#define LZNT1 HS_XCA_LZNT1
#define PLAIN HS_XCA_XPRESS
#define HUFF HS_XCA_XPRESS_HUFF

static uint8_t obuf[300000];

/* Decode in with outlen and compare with want[0..wantlen); returns the result. */
static long dec(int fmt, const uint8_t *in, size_t inlen, size_t outlen, const void *want, size_t wantlen) {
  long c = hsi_xca_decompress_careful(fmt, in, inlen, obuf, outlen);
  long r = hs_xca_decompress(fmt, in, inlen, obuf, outlen);
  CHECK_EQ(c, r);
  CHECK_EQ(r, wantlen);
  if (r == (long)wantlen) CHECK(memcmp(obuf, want, wantlen) == 0);
  return r;
}

/* hs_xca_decompress into obuf, checked against the careful loop alone
   (hsi_xca_decompress_careful): the same result, and the same bytes when
   it is a count. */
static uint8_t obuf2[sizeof obuf];
static long decode2(int fmt, const uint8_t *in, size_t inlen, size_t outlen) {
  long r = hs_xca_decompress(fmt, in, inlen, obuf, outlen);
  long c = hsi_xca_decompress_careful(fmt, in, inlen, obuf2, outlen);
  CHECK_EQ(r, c);
  if (r > 0 && r == c) CHECK(memcmp(obuf, obuf2, (size_t)r) == 0);
  return r;
}

static uint8_t *fill(uint8_t *p, int c, size_t n) { memset(p, c, n); return p; }

/* A Huffman table of 4-bit lengths: symbol s in byte s/2, even symbols in
   the low nibble (2.1.4.3). */
static void hlen(uint8_t *t, unsigned sym, unsigned len) {
  t[sym >> 1] |= (uint8_t)(sym & 1 ? len << 4 : len);
}

/* ------------------------------------------------------------ Plain LZ77 */

TEST(plain_vectors) {
  uint8_t want[70001];
  /* Flags 0x1FFFFFFF (LE ff ff ff 1f): three 0 bits = literals, the rest
     ones, which a compressor writes for unused flags. */
  static const uint8_t lit[] = {0xff, 0xff, 0xff, 0x1f, 'a', 'b', 'c'};
  /* Same flags; the fourth is a match: word 0x0010 = (dist 3 - 1) << 3 |
     (len 3 - 3). */
  static const uint8_t match[] = {0xff, 0xff, 0xff, 0x1f, 'a', 'b', 'c', 0x10, 0x00};
  /* Flags 0x7FFFFFFF: a literal then matches.  Word 0x0006: dist 1,
     len 6 + 3 = 9, overlapping its own output: a run. */
  static const uint8_t run[] = {0xff, 0xff, 0xff, 0x7f, 'a', 0x06, 0x00};
  /* Word 0x0007: length escape; nibble byte 0x0a: len 10 + 7 + 3 = 20. */
  static const uint8_t nib[] = {0xff, 0xff, 0xff, 0x7f, 'a', 0x07, 0x00, 0x0a};
  /* Two escapes share one byte: 0x2a = low nibble 10 for the first match
     (len 20), high nibble 2 for the second (len 2 + 7 + 3 = 12). */
  static const uint8_t shared[] = {0xff, 0xff, 0xff, 0x7f, 'a', 0x07, 0x00, 0x2a, 0x07, 0x00};
  /* Nibble 15 escapes to a byte: 0x4b = 75, len 75 + 15 + 7 + 3 = 100. */
  static const uint8_t byte[] = {0xff, 0xff, 0xff, 0x7f, 'a', 0x07, 0x00, 0x0f, 0x4b};
  /* Byte 255 escapes to a u16 holding len - 3: 0x03e5 = 997, len 1000. */
  static const uint8_t u16[] = {0xff, 0xff, 0xff, 0x7f, 'a', 0x07, 0x00, 0x0f, 0xff, 0xe5, 0x03};
  /* A u16 of 0 escapes to a u32 holding len - 3: 0x0001116d = 69997. */
  static const uint8_t u32[] = {0xff, 0xff, 0xff, 0x7f, 'a', 0x07, 0x00, 0x0f, 0xff,
                                0x00, 0x00, 0x6d, 0x11, 0x01, 0x00};
  /* The u16 must be at least 15 + 7 (2.4): 5 is damage. */
  static const uint8_t short16[] = {0xff, 0xff, 0xff, 0x7f, 'a', 0x07, 0x00, 0x0f, 0xff, 0x05, 0x00};
  /* Word 0x0008: dist 2 with one byte of output -- before the start. */
  static const uint8_t before[] = {0xff, 0xff, 0xff, 0x7f, 'a', 0x08, 0x00};
  /* Match word cut in half, and a nibble byte missing. */
  static const uint8_t half[] = {0xff, 0xff, 0xff, 0x7f, 'a', 0x06};
  static const uint8_t nonib[] = {0xff, 0xff, 0xff, 0x7f, 'a', 0x07, 0x00};
  /* A second flag DWORD: 32 literals (flags 0) then flags 0x7FFFFFFF with
     one more literal and a match word 0x0000 (dist 1, len 3). */
  uint8_t two[4 + 32 + 4 + 1 + 2];

  dec(PLAIN, lit, sizeof lit, 3, "abc", 3);
  dec(PLAIN, lit, sizeof lit, 100, "abc", 3);        /* ends cleanly: count so far */
  dec(PLAIN, lit, sizeof lit, 2, "ab", 2);           /* stops at outlen */
  dec(PLAIN, match, sizeof match, 6, "abcabc", 6);
  dec(PLAIN, run, sizeof run, 10, fill(want, 'a', 10), 10);
  dec(PLAIN, nib, sizeof nib, 21, fill(want, 'a', 21), 21);
  dec(PLAIN, shared, sizeof shared, 33, fill(want, 'a', 33), 33);
  dec(PLAIN, byte, sizeof byte, 101, fill(want, 'a', 101), 101);
  dec(PLAIN, u16, sizeof u16, 1001, fill(want, 'a', 1001), 1001);
  dec(PLAIN, u32, sizeof u32, 70001, fill(want, 'a', 70001), 70001);
  CHECK_EQ(hs_xca_decompress(PLAIN, u32, sizeof u32, obuf, 70000), HS_EFORMAT);  /* past outlen */
  CHECK_EQ(hs_xca_decompress(PLAIN, short16, sizeof short16, obuf, 100), HS_EFORMAT);
  CHECK_EQ(hs_xca_decompress(PLAIN, before, sizeof before, obuf, 100), HS_EFORMAT);
  CHECK_EQ(hs_xca_decompress(PLAIN, half, sizeof half, obuf, 100), HS_EFORMAT);
  CHECK_EQ(hs_xca_decompress(PLAIN, nonib, sizeof nonib, obuf, 100), HS_EFORMAT);
  CHECK_EQ(hs_xca_decompress(PLAIN, lit, 2, obuf, 100), HS_EFORMAT);  /* flags cut */

  memset(two, 0, 4);
  memcpy(two + 4, "0123456789abcdefghijklmnopqrstuv", 32);
  two[36] = 0xff, two[37] = 0xff, two[38] = 0xff, two[39] = 0x7f;
  two[40] = 'w', two[41] = 0x00, two[42] = 0x00;
  dec(PLAIN, two, sizeof two, 36, "0123456789abcdefghijklmnopqrstuvwwww", 36);

  /* The escapes again behind 96 literals and before 64 bytes of zero
     words (runs of 3), where the fast loop decodes them: the same as the
     careful loop, and the short u16 still damage. */
  {
    static const struct { const uint8_t *p; size_t n; } v[] = {
      {run, sizeof run}, {nib, sizeof nib}, {shared, sizeof shared}, {byte, sizeof byte},
      {u16, sizeof u16}, {u32, sizeof u32}, {short16, sizeof short16}, {before, sizeof before}};
    uint8_t s[3 * 36 + 16 + 64];
    size_t i, k;
    for (i = 0; i < sizeof v / sizeof v[0]; i++) {
      long r;
      memset(s, 0, sizeof s);
      for (k = 0; k < 3; k++) memset(s + k * 36 + 4, 'A' + (int)k, 32);
      memcpy(s + 3 * 36, v[i].p, v[i].n);
      r = decode2(PLAIN, s, 3 * 36 + v[i].n + 64, 96 + 70001 + 200);
      if (v[i].p == short16) CHECK_EQ(r, HS_EFORMAT);
      else CHECK(r > 96 && memcmp(obuf, "AAAA", 4) == 0 && obuf[96] == 'a');
    }
  }
}

/* [MS-XCA] 3.1. */
TEST(plain_spec_examples) {
  static const uint8_t alpha[] = {0x3f, 0x00, 0x00, 0x00, 0x61, 0x62, 0x63, 0x64, 0x65, 0x66,
                                  0x67, 0x68, 0x69, 0x6a, 0x6b, 0x6c, 0x6d, 0x6e, 0x6f, 0x70,
                                  0x71, 0x72, 0x73, 0x74, 0x75, 0x76, 0x77, 0x78, 0x79, 0x7a};
  static const uint8_t abc[] = {0xff, 0xff, 0xff, 0x1f, 0x61, 0x62, 0x63, 0x17, 0x00, 0x0f, 0xff, 0x26, 0x01};
  char want[301];
  int i;
  for (i = 0; i < 100; i++) memcpy(want + 3 * i, "abc", 3);
  dec(PLAIN, alpha, sizeof alpha, 26, "abcdefghijklmnopqrstuvwxyz", 26);
  dec(PLAIN, abc, sizeof abc, 300, want, 300);
}

/* ---------------------------------------------------------- LZ77+Huffman */

TEST(huff_vectors) {
  uint8_t s[600], want[70001];
  size_t n;

  /* Literals: 'a' 1 bit, 'b' and EOF (256) 2 bits.  Canonical codes (by
     length, then symbol): a=0, b=10, EOF=11.  "abba" EOF = 0 10 10 0 11,
     padded: word 0x5300 (LE 00 53), then the zero word the flush adds. */
  memset(s, 0, sizeof s);
  hlen(s, 'a', 1), hlen(s, 'b', 2), hlen(s, 256, 2);
  s[256] = 0x00, s[257] = 0x53, s[258] = 0x00, s[259] = 0x00;
  dec(HUFF, s, 260, 4, "abba", 4);
  dec(HUFF, s, 260, 100, "abba", 4);   /* EOF with the input all read */

  /* A match: a, b, c 2 bits; EOF and match symbol 272 = 256 + (3 - 3) +
     16 * log2(3) 3 bits.  Codes a=00 b=01 c=10 EOF=110 272=111.  Stream:
     00 01 10 111 [1 raw distance bit: 3 - 2] 110 -> 0001 1011 1111 0000 =
     0x1BF0. */
  memset(s, 0, sizeof s);
  hlen(s, 'a', 2), hlen(s, 'b', 2), hlen(s, 'c', 2), hlen(s, 256, 3), hlen(s, 272, 3);
  s[256] = 0xf0, s[257] = 0x1b, s[258] = 0, s[259] = 0;
  dec(HUFF, s, 260, 6, "abcabc", 6);

  /* A run: 'a' then symbol 263 = 256 + (10 - 3), distance 1 (no raw bits).
     a=0 EOF=10 263=11: 0 11 10 -> 0x7000. */
  memset(s, 0, sizeof s);
  hlen(s, 'a', 1), hlen(s, 256, 2), hlen(s, 263, 2);
  s[256] = 0x00, s[257] = 0x70, s[258] = 0, s[259] = 0;
  dec(HUFF, s, 260, 11, fill(want, 'a', 11), 11);

  /* Long lengths: symbol 271 (length nibble 15) reads a byte at the byte
     position, which is after the two words already in the bit window. */
  memset(s, 0, sizeof s);
  hlen(s, 'a', 1), hlen(s, 256, 2), hlen(s, 271, 2);
  s[256] = 0x00, s[257] = 0x70, s[258] = 0, s[259] = 0;
  s[260] = 0x52;                          /* 82 + 15 + 3 = 100 */
  dec(HUFF, s, 261, 101, fill(want, 'a', 101), 101);
  s[260] = 0xff, s[261] = 0xe5, s[262] = 0x03;   /* 255: u16 = len - 3 = 997 */
  dec(HUFF, s, 263, 1001, fill(want, 'a', 1001), 1001);
  s[261] = 0x00, s[262] = 0x00;                  /* u16 0: u32 = 69997 */
  s[263] = 0x6d, s[264] = 0x11, s[265] = 0x01, s[266] = 0x00;
  dec(HUFF, s, 267, 70001, fill(want, 'a', 70001), 70001);
  CHECK_EQ(hs_xca_decompress(HUFF, s, 267, obuf, 70000), HS_EFORMAT);   /* past outlen */
  s[261] = 0x0e, s[262] = 0x00;                  /* u16 below 15 is damage */
  CHECK_EQ(hs_xca_decompress(HUFF, s, 263, obuf, 70001), HS_EFORMAT);
  CHECK_EQ(hs_xca_decompress(HUFF, s, 261, obuf, 70001), HS_EFORMAT);   /* u16 missing */

  /* Not a complete code: one symbol of 1 bit fills half the table. */
  memset(s, 0, sizeof s);
  hlen(s, 'a', 1);
  CHECK_EQ(hs_xca_decompress(HUFF, s, 260, obuf, 1), HS_EFORMAT);
  /* Over-full: three 1-bit codes. */
  hlen(s, 'b', 1), hlen(s, 'c', 1);
  CHECK_EQ(hs_xca_decompress(HUFF, s, 260, obuf, 1), HS_EFORMAT);
  /* All zero lengths. */
  memset(s, 0, sizeof s);
  CHECK_EQ(hs_xca_decompress(HUFF, s, 260, obuf, 1), HS_EFORMAT);
  /* Table cut short. */
  hlen(s, 'a', 1), hlen(s, 'b', 1);
  CHECK_EQ(hs_xca_decompress(HUFF, s, 200, obuf, 1), HS_EFORMAT);

  /* Match before the start: symbol 256 as the first symbol is distance 1
     with nothing written (EOF only counts with the input all read). */
  memset(s, 0, sizeof s);
  hlen(s, 'a', 1), hlen(s, 256, 1);
  s[256] = 0x00, s[257] = 0x80;           /* 1 = symbol 256 */
  CHECK_EQ(hs_xca_decompress(HUFF, s, 264, obuf, 10), HS_EFORMAT);

  /* Two blocks (> 65536 bytes out).  Block 1, not the last, so no EOF:
     'a' = 0 and 271 = 1, one bit each.  Bits 0 1 -> word 0x4000, the
     reserved next word 0, then the length bytes ff fc ff: 255, u16 65532
     = 65535 - 3.  The match ends the block at exactly 65536 bytes; block 2
     starts at the next unread byte, 256 + 4 + 3 = 263. */
  memset(s, 0, sizeof s);
  hlen(s, 'a', 1), hlen(s, 271, 1);
  s[256] = 0x00, s[257] = 0x40, s[258] = 0, s[259] = 0;
  s[260] = 0xff, s[261] = 0xfc, s[262] = 0xff;
  /* Block 2: 'b' = 0, EOF = 10, 271 = 11: 0 11 10 -> 0x7000, then the
     length byte 0x51: 81 + 15 + 3 = 99. */
  n = 263;
  hlen(s + n, 'b', 1), hlen(s + n, 256, 2), hlen(s + n, 271, 2);
  s[n + 256] = 0x00, s[n + 257] = 0x70, s[n + 258] = 0, s[n + 259] = 0, s[n + 260] = 0x51;
  n += 261;
  fill(want, 'a', 65536), fill(want + 65536, 'b', 100);
  dec(HUFF, s, n, 65636, want, 65636);
  dec(HUFF, s, n, 65536, want, 65536);         /* stops at the block end */
  dec(HUFF, s, 263, 65636, want, 65536);       /* input ends at a block boundary */
  CHECK_EQ(hs_xca_decompress(HUFF, s, 300, obuf, 65636), HS_EFORMAT);   /* table cut */
}

/* [MS-XCA] 3.2: the 256-byte tables are zero but for the bytes set here. */
TEST(huff_spec_examples) {
  static const uint8_t alpha_bits[] = {0xd8, 0x52, 0x3e, 0xd7, 0x94, 0x11, 0x5b, 0xe9, 0x19, 0x5f,
                                       0xf9, 0xd6, 0x7c, 0xdf, 0x8d, 0x04, 0x00, 0x00, 0x00, 0x00};
  static const uint8_t abc_bits[] = {0xa8, 0xdc, 0x00, 0x00, 0xff, 0x26, 0x01};
  uint8_t s[300];
  char want[301];
  int i;

  /* a..v 5 bits (0x50 = 'a' in the high nibble of byte 0x30, 0x55 two
     letters each), w..z and EOF (byte 0x80) 4 bits. */
  memset(s, 0, sizeof s);
  s[0x30] = 0x50;
  for (i = 0x31; i <= 0x3a; i++) s[i] = 0x55;
  s[0x3b] = 0x45, s[0x3c] = 0x44, s[0x3d] = 0x04, s[0x80] = 0x04;
  memcpy(s + 256, alpha_bits, sizeof alpha_bits);
  dec(HUFF, s, 256 + sizeof alpha_bits, 26, "abcdefghijklmnopqrstuvwxyz", 26);
  dec(HUFF, s, 256 + sizeof alpha_bits, 1000, "abcdefghijklmnopqrstuvwxyz", 26);

  /* 'a' 3 bits, 'b' 3, 'c' 2 (bytes 0x30 0x31 = 30 23), EOF 2 (byte 0x80),
     symbol 287 = 256 + 15 + 16 * 1 2 bits (byte 0x8f = 0x20).  The bytes
     ff 26 01: length 0x126 + 3 = 297, then one raw bit: distance 3. */
  memset(s, 0, sizeof s);
  s[0x30] = 0x30, s[0x31] = 0x23, s[0x80] = 0x02, s[0x8f] = 0x20;
  memcpy(s + 256, abc_bits, sizeof abc_bits);
  for (i = 0; i < 100; i++) memcpy(want + 3 * i, "abc", 3);
  dec(HUFF, s, 256 + sizeof abc_bits, 300, want, 300);
}

/* ----------------------------------------------------------------- LZNT1 */

TEST(lznt1_vectors) {
  uint8_t want[8300];
  /* Header 0xB003: compressed (bit 15), signature 3, 4 bytes of data + 2
     of header - 3 = 3.  Flag byte 0: three literals. */
  static const uint8_t lit[] = {0x03, 0xb0, 0x00, 'a', 'b', 'c'};
  /* Flag 0x08: item 3 is a word.  At U = 3 the split is 4 distance bits,
     12 length bits: 0x2000 = dist 2 + 1, len 0 + 3. */
  static const uint8_t match[] = {0x05, 0xb0, 0x08, 'a', 'b', 'c', 0x00, 0x20};
  /* Flag 0x02: 'a', then word 0x0007 at U = 1: dist 1, len 10. */
  static const uint8_t run[] = {0x03, 0xb0, 0x02, 'a', 0x07, 0x00};
  /* Uncompressed chunk: header 0x3004 (bit 15 clear), 5 bytes follow. */
  static const uint8_t raw[] = {0x04, 0x30, 'h', 'e', 'l', 'l', 'o'};
  /* The split widens as U passes 16, 32, 64: 44 data bytes, header 0xB02B.
       flags 00: 8 literals "01234567"; flags 00: "89abcdef"
       flags 01: at U=16 (4/12 split) 0xF000 = dist 16 len 3 -> "012";
                 literals "ghijklm"
       flags C0: literals "nopqrs"; at U=32 (5/11) 0xF802 = dist 32 len 5
                 -> "01234"; at U=37 (6/10) 0x9000 = dist 37 len 3 -> "012"
       flags 03: at U=40 (6/10) 0x001B = dist 1 len 30 -> 30 x '2';
                 at U=70 (7/9) 0x8A07 = dist 70 len 10 -> "0123456789" */
  static const uint8_t split[] = {
    0x2b, 0xb0,
    0x00, '0', '1', '2', '3', '4', '5', '6', '7',
    0x00, '8', '9', 'a', 'b', 'c', 'd', 'e', 'f',
    0x01, 0x00, 0xf0, 'g', 'h', 'i', 'j', 'k', 'l', 'm',
    0xc0, 'n', 'o', 'p', 'q', 'r', 's', 0x02, 0xf8, 0x00, 0x90,
    0x03, 0x1b, 0x00, 0x07, 0x8a};
  static const char split_out[] =
    "0123456789abcdef" "012" "ghijklmnopqrs" "01234" "012"
    "222222222222222222222222222222" "0123456789";
  /* A short chunk followed by another: the first stands for 4096 bytes,
     zero-padded.  Then the end marker 00 00 and bytes after it. */
  static const uint8_t padded[] = {0x03, 0xb0, 0x00, 'a', 'b', 'c', 0x02, 0x30, 'x', 'y', 'z',
                                   0x00, 0x00, 0x55};
  /* Damage: signature 2; chunk longer than the input; word at U = 1
     reaching 2 back; a word cut in half; a header cut in half. */
  static const uint8_t badsig[] = {0x03, 0xa0, 0x00, 'a', 'b', 'c'};
  static const uint8_t badsig7[] = {0x03, 0xf0, 0x00, 'a', 'b', 'c'};   /* signature 7: its low two bits are 3's */
  static const uint8_t cut[] = {0x05, 0xb0, 0x08, 'a', 'b', 'c', 0x00};
  static const uint8_t before[] = {0x03, 0xb0, 0x02, 'a', 0x00, 0x10};
  static const uint8_t halfword[] = {0x02, 0xb0, 0x02, 'a', 0x00};
  static const uint8_t halfhdr[] = {0x02, 0x30, 'a', 'b', 'c', 0x05};
  uint8_t big[2 + 4096 + 8];

  dec(LZNT1, lit, sizeof lit, 3, "abc", 3);
  dec(LZNT1, lit, sizeof lit, 50, "abc", 3);
  dec(LZNT1, match, sizeof match, 6, "abcabc", 6);
  dec(LZNT1, run, sizeof run, 11, fill(want, 'a', 11), 11);
  dec(LZNT1, raw, sizeof raw, 5, "hello", 5);
  CHECK_EQ(sizeof split_out - 1, 80);
  dec(LZNT1, split, sizeof split, 80, split_out, 80);
  memset(want, 0, 4096);
  memcpy(want, "abc", 3), memcpy(want + 4096, "xyz", 3);
  dec(LZNT1, padded, sizeof padded, 8300, want, 4099);
  CHECK_EQ(hs_xca_decompress(LZNT1, badsig, sizeof badsig, obuf, 10), HS_EFORMAT);
  CHECK_EQ(hs_xca_decompress(LZNT1, badsig7, sizeof badsig7, obuf, 10), HS_EFORMAT);
  CHECK_EQ(hs_xca_decompress(LZNT1, cut, sizeof cut, obuf, 10), HS_EFORMAT);
  CHECK_EQ(hs_xca_decompress(LZNT1, before, sizeof before, obuf, 10), HS_EFORMAT);
  CHECK_EQ(hs_xca_decompress(LZNT1, halfword, sizeof halfword, obuf, 10), HS_EFORMAT);
  CHECK_EQ(hs_xca_decompress(LZNT1, halfhdr, sizeof halfhdr, obuf, 10), HS_EFORMAT);
  CHECK_EQ(hs_xca_decompress(LZNT1, match, sizeof match, obuf, 5), HS_EFORMAT);  /* past outlen */

  /* A full uncompressed chunk (0x3FFF: 4096 bytes) then a compressed one
     whose match cannot reach into the first chunk: chunks stand alone. */
  big[0] = 0xff, big[1] = 0x3f;
  memset(big + 2, 'q', 4096);
  big[4098] = 0x03, big[4099] = 0xb0, big[4100] = 0x02, big[4101] = 'r', big[4102] = 0x00, big[4103] = 0x00;
  fill(want, 'q', 4096), fill(want + 4096, 'r', 4);
  dec(LZNT1, big, 4104, 4100, want, 4100);
  /* Header 0xB002, flag 1: the first item is a word, at U = 0. */
  big[4098] = 0x02, big[4100] = 0x01, big[4101] = 0x00, big[4102] = 0x00;
  CHECK_EQ(hs_xca_decompress(LZNT1, big, 4103, obuf, 4100), HS_EFORMAT);
}

/* [MS-XCA] 3.3. */
TEST(lznt1_spec_example) {
  static const uint8_t s[] = {
    0x38, 0xb0, 0x88, 0x46, 0x23, 0x20, 0x00, 0x20, 0x47, 0x20, 0x41, 0x00, 0x10, 0xa2, 0x47, 0x01,
    0xa0, 0x45, 0x20, 0x44, 0x00, 0x08, 0x45, 0x01, 0x50, 0x79, 0x00, 0xc0, 0x45, 0x20, 0x05, 0x24,
    0x13, 0x88, 0x05, 0xb4, 0x02, 0x4a, 0x44, 0xef, 0x03, 0x58, 0x02, 0x8c, 0x09, 0x16, 0x01, 0x48,
    0x45, 0x00, 0xbe, 0x00, 0x9e, 0x00, 0x04, 0x01, 0x18, 0x90, 0x00};
  static const char want[] =
    "F# F# G A A G F# E D D E F# F# E E F# F# G A A G F# E D D E F# E D D E E F# D E F# G F# D E "
    "F# G F# E D E A F# F# G A A G F# E D D E F# E D D";
  CHECK_EQ(sizeof s, 59);
  dec(LZNT1, s, sizeof s, 142, want, 142);   /* with the terminal NUL */
}

TEST(unknown_format) {
  static const uint8_t s[] = {0, 0, 0, 0};
  uint8_t o[8];
  CHECK_EQ(hs_xca_decompress(0, s, 4, o, 8), HS_EUNSUP);
  CHECK_EQ(hs_xca_decompress(1, s, 4, o, 8), HS_EUNSUP);
  CHECK_EQ(hs_xca_decompress(5, s, 4, o, 8), HS_EUNSUP);
  CHECK_EQ(hs_xca_decompress(0x103, s, 4, o, 8), HS_EUNSUP);
  CHECK_EQ(hsi_xca_compress(0, s, 4, o, 8), HS_EUNSUP);
  CHECK_EQ(hsi_xca_compress(7, s, 4, o, 8), HS_EUNSUP);
  CHECK_EQ(hsi_xca_bound(7, 100), 0);
  CHECK_EQ(hs_xca_decompress(PLAIN, NULL, 4, o, 8), HS_EARG);
  CHECK_EQ(hs_xca_decompress(PLAIN, s, 0, o, 8), 0);
}

/* ------------------------------------------------------------ round trips */

static uint32_t rng = 2463534242u;
static uint32_t rnd(void) {
  rng ^= rng << 13, rng ^= rng >> 17, rng ^= rng << 5;
  return rng;
}

/* kind 0 random, 1 words, 2 mostly zeros, 3 a mix of the three */
static void gen(uint8_t *p, size_t n, int kind) {
  static const char *words[] = {"heap", "alloc ", "free ", "0x7ff6", "VirtualAlloc", "\0\0\0\0",
                                "pool", "  ", "stack", "\x01\x00\x00\xc0"};
  size_t i = 0;
  while (i < n) {
    int k = kind == 3 ? (int)(rnd() % 3) : kind;
    size_t m = kind == 3 ? 1 + rnd() % 3000 : n - i;
    size_t end = i + m < n ? i + m : n;
    while (i < end) {
      if (k == 0) {
        p[i++] = (uint8_t)rnd();
      } else if (k == 1) {
        const char *w = words[rnd() % 10];
        size_t l = strlen(w) ? strlen(w) : 4;
        while (l-- && i < end) p[i++] = (uint8_t)*w++;
      } else {
        p[i++] = rnd() % 50 ? 0 : (uint8_t)rnd();
      }
    }
  }
}

static uint8_t src[300000], comp[700000];
static unsigned long_ok, long_all;

static long roundtrip(int fmt, size_t n) {
  long c = hsi_xca_compress(fmt, src, n, comp, hsi_xca_bound(fmt, n));
  CHECK(c >= 0);
  if (c < 0) return c;
  CHECK((size_t)c <= hsi_xca_bound(fmt, n));
  CHECK_EQ(hs_xca_decompress(fmt, comp, (size_t)c, obuf, n), n);
  CHECK(memcmp(obuf, src, n) == 0);
  /* Asked for more than there is, the decoder stops at the stream's end.
     LZ77+Huffman cannot always tell: its end marker is also a match
     (distance 1, length 3), and when that symbol has the all-zero code a
     last real match looks the same.  Then it may stop short, never long. */
  if (n + 1000 <= sizeof obuf) {
    long r = hs_xca_decompress(fmt, comp, (size_t)c, obuf, n + 1000);
    if (fmt != HUFF) CHECK_EQ(r, n);
    else CHECK(r == (long)n || (r >= 0 && (size_t)r < n && !memcmp(obuf, src, (size_t)r)));
    if (fmt == HUFF) long_ok += r == (long)n, long_all++;
  }
  return c;
}

TEST(roundtrips) {
  static const size_t sizes[] = {100, 255, 256, 257, 1000, 4095, 4096, 4097, 8191, 8192, 8193,
                                 12289, 65535, 65536, 65537, 131072, 140000, 300000};
  static const int fmts[] = {PLAIN, HUFF, LZNT1};
  static const long most[] = {100, 5 * 300, 74 * 8};   /* per 64K block / 4K chunk */
  size_t i, n;
  int f, kind;
  for (f = 0; f < 3; f++)
    for (kind = 0; kind < 4; kind++) {
      for (n = 0; n <= 70; n++) gen(src, n, kind), roundtrip(fmts[f], n);
      for (i = 0; i < sizeof sizes / sizeof sizes[0]; i++) gen(src, sizes[i], kind), roundtrip(fmts[f], sizes[i]);
    }
  /* Long runs exercise every length escape, and the matcher must find
     real matches: 300000 equal bytes shrink to almost nothing. */
  memset(src, 'z', 300000);
  for (f = 0; f < 3; f++) {
    long c = roundtrip(fmts[f], 300000);
    CHECK(c > 0 && c < most[f]);
  }
  CHECK(long_ok * 100 >= long_all * 95);
  /* A period that is not a power of two, over 8-byte distances. */
  for (i = 0; i < 300000; i++) src[i] = (uint8_t)"abcdefghijk"[i % 11];
  for (f = 0; f < 3; f++) roundtrip(fmts[f], 300000);
}

TEST(compress_limits) {
  uint8_t o[64];
  size_t n;
  int f;
  static const int fmts[] = {PLAIN, HUFF, LZNT1};
  gen(src, 5000, 3);
  for (f = 0; f < 3; f++) {
    long full = hsi_xca_compress(fmts[f], src, 5000, comp, sizeof comp);
    CHECK(full > 0);
    /* Exactly enough room works; one byte less does not, and no write
       goes past outcap (the sanitizer build checks the heap copy). */
    for (n = (size_t)full - 3; n <= (size_t)full; n++) {
      uint8_t *tight = malloc(n);
      long r = hsi_xca_compress(fmts[f], src, 5000, tight, n);
      if (n < (size_t)full) CHECK_EQ(r, HS_EARG);
      else CHECK_EQ(r, full);
      free(tight);
    }
  }
  CHECK_EQ(hsi_xca_compress(PLAIN, src, 5000, o, sizeof o), HS_EARG);
  CHECK_EQ(hsi_xca_compress(HUFF, src, 10, o, sizeof o), HS_EARG);   /* table alone is 256 */
  CHECK_EQ(hsi_xca_compress(PLAIN, src, 0, o, sizeof o), 4);          /* flags only */
  CHECK_EQ(hs_xca_decompress(PLAIN, o, 4, obuf, 10), 0);
}

/* ---------------------------------------------------------- damaged input */

/* Whatever a damaged stream gives, it is HS_EFORMAT or a count within
   outlen; a cut stream that yields a count yields the right bytes. */
static void truncations(int fmt, size_t n, size_t step) {
  long c = hsi_xca_compress(fmt, src, n, comp, sizeof comp);
  size_t k;
  CHECK(c > 0);
  for (k = 0; k < (size_t)c; k += k < 300 || (size_t)c - k < 300 ? 1 : step) {
    uint8_t *cut = malloc(k ? k : 1);
    long r;
    memcpy(cut, comp, k);
    r = decode2(fmt, cut, k, n);
    CHECK(r == HS_EFORMAT || (r >= 0 && (size_t)r <= n));
    if (r > 0) CHECK(memcmp(obuf, src, (size_t)r) == 0);
    free(cut);
  }
}

static void mutations(int fmt, size_t n, int rounds) {
  long c = hsi_xca_compress(fmt, src, n, comp, sizeof comp);
  uint8_t *m = malloc((size_t)c);
  int i, j, bad = 0;
  for (i = 0; i < rounds; i++) {
    long r;
    size_t outlen = i & 1 ? n : n + rnd() % 200;
    memcpy(m, comp, (size_t)c);
    for (j = 1 + rnd() % 4; j > 0; j--) {
      size_t at = rnd() % (size_t)c;
      m[at] = rnd() % 3 ? (uint8_t)(m[at] ^ (1u << rnd() % 8)) : (uint8_t)rnd();
    }
    r = decode2(fmt, m, (size_t)c, outlen);
    CHECK(r == HS_EFORMAT || (r >= 0 && (size_t)r <= outlen));
    bad += r == HS_EFORMAT;
  }
  CHECK(bad > 0);
  free(m);
}

TEST(damaged) {
  static const int fmts[] = {PLAIN, HUFF, LZNT1};
  int f;
  gen(src, 6000, 3);
  for (f = 0; f < 3; f++) truncations(fmts[f], 6000, 1);
  gen(src, 140000, 3);
  for (f = 0; f < 3; f++) truncations(fmts[f], 140000, 97);
  for (f = 0; f < 3; f++) {
    gen(src, 6000, 3);
    mutations(fmts[f], 6000, 4000);
    gen(src, 70000, 1);
    mutations(fmts[f], 70000, 300);
  }
  /* Random bytes as a stream. */
  for (f = 0; f < 3 * 3000; f++) {
    size_t k = rnd() % 600, i;
    long r;
    for (i = 0; i < k; i++) comp[i] = (uint8_t)rnd();
    r = decode2(fmts[f % 3], comp, k, 1 + rnd() % 5000);
    CHECK(r >= HS_EFORMAT && r <= 5000 && r != -1);
  }
}

/* ------------------------------------------------------------- real data */


/* Inflates every compressed buffer (0x48-byte header: BufferSize @0,
   SavedOffset @4, BufferFlag @0x34, 0x40 = compressed); the data after the
   header inflates to SavedOffset - 0x48 bytes and starts with a record
   whose byte 3 is 0xC0.  Returns the bytes inflated, or 0. */
static size_t inflate_trace(const uint8_t *d, size_t n, int check, unsigned *nbuf) {
  size_t off = 0, total = 0;
  *nbuf = 0;
  while (n - off >= 0x48) {
    uint32_t size = rd32(d + off), saved = rd32(d + off + 4);
    unsigned flag = rd16(d + off + 0x34);
    if (size < 0x48 || size > n - off) break;
    if ((flag & 0x40) && saved > 0x48 && saved - 0x48 <= sizeof obuf) {
      long r = check ? decode2(PLAIN, d + off + 0x48, size - 0x48, saved - 0x48)
                     : hs_xca_decompress(PLAIN, d + off + 0x48, size - 0x48, obuf, saved - 0x48);
      if (check) {
        CHECK_EQ(r, saved - 0x48);
        CHECK_EQ(obuf[3], 0xC0);
        if (r > 0 && (*nbuf % 16) == 0) {   /* and they survive a round trip */
          static const int fmts[] = {PLAIN, HUFF, LZNT1};
          int f;
          memcpy(src, obuf, (size_t)r);
          for (f = 0; f < 3; f++) roundtrip(fmts[f], (size_t)r);
        }
        if ((*nbuf % 8) == 4 && size - 0x48 <= sizeof comp) {  /* damaged: both loops agree */
          int i, j;
          for (i = 0; i < 40; i++) {
            memcpy(comp, d + off + 0x48, size - 0x48);
            for (j = 1 + rnd() % 3; j > 0; j--) comp[rnd() % (size - 0x48)] ^= (uint8_t)(1u << rnd() % 8);
            (void)decode2(PLAIN, comp, size - 0x48, saved - 0x48 + (i & 1 ? 0 : rnd() % 64));
          }
        }
      }
      total += (size_t)(r > 0 ? r : 0);
      ++*nbuf;
    }
    off += size;
  }
  return total;
}

TEST(real_trace) {
  char path[1024];
  uint8_t *d;
  size_t n = 0, total;
  unsigned nbuf = 0, reps = 0;
  clock_t t0, t1;
  /* the x64 trace of the full corpus, else its x86 twin among the bundled traces */
  if (!corpus_path(path, sizeof path, "microsoft_perfview__net.4.5.2.x64.etl"))
    corpus_path(path, sizeof path, "microsoft_perfview__net.4.5.2.x86.etl");
  if (!(d = (uint8_t *)slurp_len(path, &n))) {
    CHECK(!corpus_absent("test_xca"));
    return;
  }
  total = inflate_trace(d, n, 1, &nbuf);
  CHECK(nbuf > 270);
  CHECK(total > 15000000);
  t0 = clock();
  do {
    inflate_trace(d, n, 0, &nbuf);
    reps++;
    t1 = clock();
  } while (t1 - t0 < CLOCKS_PER_SEC / 2);
  printf("test_xca: %u XPRESS buffers, %.1f MB out; decode %.0f MB/s of output\n", nbuf, total / 1e6,
         (double)total * reps / 1e6 / ((double)(t1 - t0) / CLOCKS_PER_SEC));
  free(d);
}

int main(void) {
  RUN(plain_vectors);
  RUN(plain_spec_examples);
  RUN(huff_vectors);
  RUN(huff_spec_examples);
  RUN(lznt1_vectors);
  RUN(lznt1_spec_example);
  RUN(unknown_format);
  RUN(roundtrips);
  RUN(compress_limits);
  RUN(damaged);
  RUN(real_trace);
  return UNIT_DONE();
}
