/*
** vmem.h -- arrays that grow large and live long (the lifetime tracker's
** record columns).  On Linux each is its own mapping, which mremap moves
** to a larger size without copying a byte or touching a page; glibc's
** realloc does that only for blocks above its mmap threshold, which it
** raises as large blocks are freed, after which a growing column is
** copied, and the copy's new pages faulted in, at every growth.
** Elsewhere they are malloc's.
*/
#ifndef HS_VMEM_H
#define HS_VMEM_H
#include <stddef.h>

/* p (of old bytes; NULL and 0 for a new array) resized to n bytes, its
   contents kept up to the smaller size; NULL when that cannot be done,
   and then p is untouched.  New bytes are not zeroed. */
void *hsi_vgrow(void *p, size_t old, size_t n);
/* Free p, made by hsi_vgrow with n bytes its last size. */
void hsi_vfree(void *p, size_t n);
#endif
