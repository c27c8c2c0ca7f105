/*
** xca.h -- MS-XCA compressors.  The decompressor is public
** (hs_xca_decompress in heapscript.h); the compressors are for the
** project's own trace writer and for tests.  All three formats produce
** streams that hs_xca_decompress and Windows' RtlDecompressBuffer accept.
*/
#ifndef HS_XCA_H
#define HS_XCA_H

#include <stddef.h>
#include <stdint.h>
#include "heapscript.h"

/*
** Compress in[0..inlen) with format (HS_XCA_*).  Returns the compressed
** length, HS_EARG if outcap is too small (or inlen is over 1 GiB),
** HS_EUNSUP for an unknown format, HS_ENOMEM if scratch memory is not
** there.  Greedy matching on a 3-byte hash: correct, not the best ratio.
** LZNT1 may write a 2-byte end marker just past the returned length when
** outcap has room, as Windows does; it is not counted.
*/
long hsi_xca_compress(int format, const uint8_t *in, size_t inlen,
                      uint8_t *out, size_t outcap);

/* An outcap that hsi_xca_compress never overflows, or 0 for an unknown
   format. */
size_t hsi_xca_bound(int format, size_t inlen);

/* For tests: hs_xca_decompress with plain LZ77's fast loop off, every
   item decoded by the careful loop; the two must agree byte for byte,
   on every stream, damaged or not. */
long hsi_xca_decompress_careful(int format, const uint8_t *in, size_t inlen,
                                uint8_t *out, size_t outlen);

#endif
