/*
** pdb_sym.c -- symbols: a module's procedures, the public symbols, inline
** sites and the names of their inlinees.
**
** A CodeView symbol record is u16 RecordLen (not counting itself), u16
** Kind, then the fields.  The procedures S_LPROC32 (0x110F), S_GPROC32
** (0x1110) and their _ID forms (0x1146, 0x1147) are u32 Parent, End, Next,
** CodeSize, DbgStart, DbgEnd, FunctionType, CodeOffset, u16 Segment, u8
** Flags, the name.  S_PUB32 (0x110E) is u32 Flags, Offset, u16 Segment,
** the name.  S_INLINESITE (0x114D) is u32 Parent, End, Inlinee (an IPI
** index), then binary annotations to the end of the record.
**
** The publics come from the publics stream's address map (u32 offsets of
** S_PUB32 records in the symbol record stream, sorted by address), or,
** when that stream is missing or damaged, from a walk of the record stream.
**
** Inline frames follow what llvm-symbolizer (LLVM 14's native PDB reader)
** does, so that our frames equal the oracle's: among the S_INLINESITE
** records directly inside the procedure, the first whose annotations
** contain the address is a frame; then the same again inside it.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bytes.h"
#include "pdb_int.h"

#define S_PUB32        0x110E
#define S_LPROC32      0x110F
#define S_GPROC32      0x1110
#define S_LPROC32_ID   0x1146
#define S_GPROC32_ID   0x1147
#define S_INLINESITE   0x114D
#define S_LPROC32_DPC    0x1155
#define S_LPROC32_DPC_ID 0x1156

#define LF_FUNC_ID     0x1601
#define LF_MFUNC_ID    0x1602
#define LF_STRING_ID   0x1605

static int is_proc(uint16_t k) {
  return k == S_LPROC32 || k == S_GPROC32 || k == S_LPROC32_ID || k == S_GPROC32_ID
      || k == S_LPROC32_DPC || k == S_LPROC32_DPC_ID;
}

/* The NUL-terminated name at rec[off..reclen) or NULL. */
static const char *rec_name(const uint8_t *rec, uint32_t off, uint32_t reclen) {
  if (off >= reclen || !memchr(rec + off, 0, reclen - off)) return NULL;
  return (const char *)rec + off;
}

static int proc_cmp(const void *a, const void *b) {
  const pdb_proc *x = a, *y = b;
  if (x->rva != y->rva) return x->rva < y->rva ? -1 : 1;
  return x->rec < y->rec ? -1 : x->rec > y->rec;
}

int hsi_pdb_load_module(hsi_pdb *p, uint32_t mi) {
  pdb_module *m;
  uint32_t off, lim, cap = 0;
  char err[HS_ERRLEN];
  if (mi >= p->nmods) return 0;
  m = &p->mods[mi];
  if (m->state) return m->state > 0;
  m->state = -1;
  if (hsi_msf_stream(&p->msf, m->stream, &m->s, p->path, err, sizeof err) != 0) {
    if (!p->err[0]) snprintf(p->err, sizeof p->err, "%s", err);
    return 0;
  }
  if ((uint64_t)m->symbytes + m->c11bytes + m->c13bytes > m->s.n) {
    hsi_pdb_damage(p, &p->dbi, m->dbi_off + 36, "module %u (%s): expected its symbols and lines (%u + %u + %u "
                   "bytes) within its stream %u of %u bytes", mi, m->name, m->symbytes, m->c11bytes,
                   m->c13bytes, m->s.index, m->s.n);
    if (m->symbytes > m->s.n) m->symbytes = m->s.n;
    if (m->c11bytes > m->s.n - m->symbytes) m->c11bytes = m->s.n - m->symbytes;
    m->c13bytes = m->s.n - m->symbytes - m->c11bytes;
  }
  m->state = 1;
  lim = m->symbytes;
  for (off = 4; off + 4 <= lim;) {
    const uint8_t *r = m->s.p + off;
    uint32_t len = rd16(r), kind = rd16(r + 2), next = off + 2 + len;
    if (len < 2 || next > lim) {
      hsi_pdb_damage(p, &m->s, off, "module %u (%s): expected a symbol record within the module's %u "
                     "bytes of symbols, found one of %u bytes running past them", mi, m->name, lim, len + 2);
      break;
    }
    if (is_proc((uint16_t)kind)) {
      pdb_proc pr;
      int ok;
      if (len + 2 < 40) {
        hsi_pdb_damage(p, &m->s, off, "module %u (%s): expected a procedure record of at least 40 bytes, "
                       "found %u", mi, m->name, len + 2);
        off = next;
        continue;
      }
      memset(&pr, 0, sizeof pr);
      pr.end = rd32(r + 8);
      pr.len = rd32(r + 16);
      pr.off = rd32(r + 32);
      pr.seg = rd16(r + 36);
      pr.rec = off;
      if (!(pr.name = rec_name(r, 39, len + 2))) {
        hsi_pdb_damage(p, &m->s, off + 39, "module %u (%s): expected a NUL-terminated procedure name inside "
                       "its record", mi, m->name);
        pr.name = "";
      }
      pr.rva = hsi_pdb_rva(p, pr.seg, pr.off, &ok);
      if (ok) {
        if (m->nprocs == cap) {
          pdb_proc *np;
          cap = cap ? 2 * cap : 64;
          if (!(np = realloc(m->procs, cap * sizeof *np))) { m->state = -1; return 0; }
          m->procs = np;
        }
        m->procs[m->nprocs++] = pr;
      }
      /* Nested procedures are not top-level functions: go on after this
         one's S_END, as llvm-symbolizer does. */
      if (pr.end > off && pr.end < lim && pr.end + 4 <= lim) {
        uint32_t elen = rd16(m->s.p + pr.end);
        if (elen >= 2 && pr.end + 2 + elen <= lim) { off = pr.end + 2 + elen; continue; }
      }
    }
    off = next;
  }
  if (m->nprocs > 1) qsort(m->procs, m->nprocs, sizeof *m->procs, proc_cmp);
  hsi_pdb_load_lines(p, m);
  return 1;
}

const pdb_proc *hsi_pdb_proc_at(const pdb_module *m, uint32_t rva) {
  uint32_t lo = hsi_pdb_upper(m->procs, m->nprocs, sizeof *m->procs, rva);
  if (lo == 0) return NULL;
  /* Folded functions (identical COMDATs) share an address: the first in
     the module's symbols names it, as llvm-symbolizer's linear scan does. */
  while (lo > 1 && m->procs[lo - 2].rva == m->procs[lo - 1].rva) lo--;
  if (rva - m->procs[lo - 1].rva < m->procs[lo - 1].len) return &m->procs[lo - 1];
  return NULL;
}

/* ------------------------------------------------------------ publics */

static int pub_cmp(const void *a, const void *b) {
  const pdb_public *x = a, *y = b;
  return x->rva < y->rva ? -1 : x->rva > y->rva;
}

/* Appends the S_PUB32 at offset o of the record stream; 0 if it is not one. */
static int add_public(hsi_pdb *p, uint32_t o, uint32_t *cap, uint32_t *ord) {
  const uint8_t *r;
  uint32_t len;
  pdb_public pb;
  int ok;
  if (o > p->symrec.n || p->symrec.n - o < 4) return 0;
  r = p->symrec.p + o;
  len = rd16(r);
  if (rd16(r + 2) != S_PUB32 || len < 12 || len + 2 > p->symrec.n - o) return 0;
  pb.flags = rd32(r + 4);
  pb.off = rd32(r + 8);
  pb.seg = rd16(r + 12);
  if (!(pb.name = rec_name(r, 14, len + 2))) return 0;
  pb.rva = hsi_pdb_rva(p, pb.seg, pb.off, &ok);
  if (!ok) pb.rva = 0xFFFFFFFFu;      /* no address: sorts last, never found */
  if (p->npubs == *cap) {
    pdb_public *np;
    *cap = *cap ? 2 * *cap : 256;
    if (!(np = realloc(p->pubs, *cap * sizeof *np))) return -1;
    p->pubs = np;
  }
  p->pubs[p->npubs++] = pb;
  (*ord)++;
  return 1;
}

/* Merge sort by rva, stable: among publics at one address the last in
   the address map is the one found (as llvm-symbolizer finds it). */
static void pub_sort(pdb_public *a, pdb_public *tmp, uint32_t n) {
  uint32_t h, i, j, k;
  if (n < 2) return;
  h = n / 2;
  pub_sort(a, tmp, h);
  pub_sort(a + h, tmp, n - h);
  for (i = 0, j = h, k = 0; i < h && j < n;)
    tmp[k++] = pub_cmp(&a[j], &a[i]) < 0 ? a[j++] : a[i++];
  while (i < h) tmp[k++] = a[i++];
  while (j < n) tmp[k++] = a[j++];
  memcpy(a, tmp, n * sizeof *a);
}

int hsi_pdb_load_publics(hsi_pdb *p) {
  char err[HS_ERRLEN];
  uint32_t cap = 0, ord = 0, i;
  int from_map = 0;
  if (p->pub_state) return p->pub_state > 0;
  p->pub_state = -1;
  if (!p->has_dbi || !hsi_msf_exists(&p->msf, p->symrec_stream)) return 0;
  if (hsi_msf_stream(&p->msf, p->symrec_stream, &p->symrec, p->path, err, sizeof err) != 0) {
    if (!p->err[0]) snprintf(p->err, sizeof p->err, "%s", err);
    return 0;
  }
  if (hsi_msf_exists(&p->msf, p->psi_stream)
      && hsi_msf_stream(&p->msf, p->psi_stream, &p->psi, p->path, err, sizeof err) == 0 && p->psi.n >= 28) {
    /* PublicsStreamHeader: u32 SymHash bytes, AddrMap bytes, ...; 28 bytes */
    uint32_t hash = rd32(p->psi.p), amap = rd32(p->psi.p + 4);
    if (hash <= p->psi.n - 28 && amap <= p->psi.n - 28 - hash && amap % 4 == 0) {
      const uint8_t *a = p->psi.p + 28 + hash;
      from_map = 1;
      for (i = 0; i < amap / 4; i++) {
        int r = add_public(p, rd32(a + 4 * i), &cap, &ord);
        if (r < 0) return 0;
        if (r == 0) {
          hsi_pdb_damage(p, &p->psi, 28 + hash + 4 * i, "expected the offset of an S_PUB32 record in the "
                         "symbol record stream (%u bytes), found 0x%x", p->symrec.n, rd32(a + 4 * i));
          /* fall back to the record stream */
          p->npubs = 0;
          from_map = 0;
          break;
        }
      }
    } else {
      hsi_pdb_damage(p, &p->psi, 0, "expected the publics header's hash (%u bytes) and address map (%u bytes) "
                     "within the stream's %u bytes", hash, amap, p->psi.n);
    }
  }
  if (!from_map) {
    uint32_t o;
    for (o = 0; o + 4 <= p->symrec.n;) {
      uint32_t len = rd16(p->symrec.p + o);
      if (len < 2 || len + 2 > p->symrec.n - o) {
        hsi_pdb_damage(p, &p->symrec, o, "expected a symbol record within the symbol record stream's "
                       "%u bytes, found one of %u", p->symrec.n, len + 2);
        break;
      }
      if (rd16(p->symrec.p + o + 2) == S_PUB32 && add_public(p, o, &cap, &ord) < 0) return 0;
      o += 2 + len;
    }
  }
  if (p->npubs > 1) {
    pdb_public *tmp = malloc(p->npubs * sizeof *tmp);
    if (!tmp) return 0;
    pub_sort(p->pubs, tmp, p->npubs);
    free(tmp);
  }
  p->pub_state = 1;
  return 1;
}

const pdb_public *hsi_pdb_public_at(const hsi_pdb *p, uint32_t rva) {
  uint32_t lo = hsi_pdb_upper(p->pubs, p->npubs, sizeof *p->pubs, rva);
  if (lo == 0 || p->pubs[lo - 1].rva == 0xFFFFFFFFu) return NULL;
  return &p->pubs[lo - 1];
}

/* ------------------------------------------------------- type records */

/* TPI (stream 2) and IPI (stream 4) share a layout: a header (u32
   Version, HeaderSize, TypeIndexBegin, TypeIndexEnd, TypeRecordBytes,
   ...), then the records, one per type index from TypeIndexBegin. */
static int load_types(hsi_pdb *p, pdb_types *t, uint32_t idx) {
  char err[HS_ERRLEN];
  uint32_t hs, bytes, n, o, k;
  if (t->state) return t->state > 0;
  t->state = -1;
  if (!hsi_msf_exists(&p->msf, idx) || hsi_msf_stream(&p->msf, idx, &t->s, p->path, err, sizeof err) != 0)
    return 0;
  if (t->s.n < 56 || (hs = rd32(t->s.p + 4)) < 56 || hs > t->s.n || (bytes = rd32(t->s.p + 16)) > t->s.n - hs
      || rd32(t->s.p + 12) < rd32(t->s.p + 8) || rd32(t->s.p + 12) - rd32(t->s.p + 8) > bytes / 4) {
    hsi_pdb_damage(p, &t->s, 0, "expected a type stream header with its records inside the stream's %u bytes",
                   t->s.n);
    return 0;
  }
  t->begin = rd32(t->s.p + 8);
  t->end = rd32(t->s.p + 12);
  n = t->end - t->begin;
  if (n && !(t->off = malloc(n * sizeof *t->off))) return 0;
  for (o = hs, k = 0; k < n; k++) {
    uint32_t len;
    if (o + 4 > hs + bytes || (len = rd16(t->s.p + o)) < 2 || o + 2 + len > hs + bytes) {
      hsi_pdb_damage(p, &t->s, o, "expected type record 0x%x within the stream's %u record bytes", t->begin + k, bytes);
      break;
    }
    t->off[k] = o;
    o += 2 + len;
  }
  t->end = t->begin + k;
  t->state = 1;
  return 1;
}

/* The record of type index ti: its bytes (length field included) and length. */
static const uint8_t *type_rec(const pdb_types *t, uint32_t ti, uint32_t *len) {
  const uint8_t *r;
  if (t->state <= 0 || ti < t->begin || ti >= t->end) return NULL;
  r = t->s.p + t->off[ti - t->begin];
  *len = rd16(r) + 2u;
  return r;
}

/* Skips a numeric leaf at r[o]: the offset after it, or 0. */
static uint32_t skip_numeric(const uint8_t *r, uint32_t o, uint32_t len) {
  uint16_t v;
  if (o + 2 > len) return 0;
  v = rd16(r + o);
  o += 2;
  if (v < 0x8000) return o;
  switch (v) {
  case 0x8000: return o + 1 <= len ? o + 1 : 0;                       /* LF_CHAR */
  case 0x8001: case 0x8002: return o + 2 <= len ? o + 2 : 0;          /* LF_SHORT, LF_USHORT */
  case 0x8003: case 0x8004: return o + 4 <= len ? o + 4 : 0;          /* LF_LONG, LF_ULONG */
  case 0x8009: case 0x800a: return o + 8 <= len ? o + 8 : 0;          /* LF_(U)QUADWORD */
  default: return 0;
  }
}

/* The name of a class, structure, union, interface or enum type. */
static const char *udt_name(hsi_pdb *p, uint32_t ti) {
  uint32_t len, o;
  const uint8_t *r;
  if (!load_types(p, &p->tpi, 2) || !(r = type_rec(&p->tpi, ti, &len)) || len < 4) return NULL;
  switch (rd16(r + 2)) {
  case 0x1504: case 0x1505: case 0x1519: o = skip_numeric(r, 20, len); break;   /* class, struct, interface */
  case 0x1506: o = skip_numeric(r, 12, len); break;                           /* union */
  case 0x1507: o = 16; break;                                                  /* enum */
  case 0x1608: case 0x1609: case 0x160b: o = skip_numeric(r, 24, len); break;  /* the VS2022 *2 forms */
  case 0x160a: o = skip_numeric(r, 16, len); break;
  default: return NULL;
  }
  return o ? rec_name(r, o, len) : NULL;
}

/* An id with the high bit set is the module's own: an import from another
   module (MSVC's cross-module inlining).  Bits 20-30 pick the entry of its
   DEBUG_S_CROSSSCOPEIMPORTS (u32 module name in /names, u32 count, count
   ids), the low 20 bits an id of that entry, which the named module's
   DEBUG_S_CROSSSCOPEEXPORTS (u32 local id, u32 IPI index pairs) maps to
   the IPI.  Returns the IPI index, or 0. */
static uint32_t global_id(hsi_pdb *p, pdb_module *m, uint32_t id) {
  uint32_t want = id >> 20 & 0x7FF, k = id & 0xFFFFF, o = 0, e = 0, local, i;
  const char *name;
  if (!(id & 0x80000000u)) return id;
  for (;;) {                                /* the entry */
    uint32_t cnt;
    if (!m->xmi || m->nxmi - o < 8 || o > m->nxmi) return 0;
    cnt = rd32(m->xmi + o + 4);
    if (cnt > (m->nxmi - o - 8) / 4) return 0;
    if (e == want) break;
    o += 8 + 4 * cnt;
    e++;
  }
  if (k >= rd32(m->xmi + o + 4) || !(name = hsi_pdb_string(p, rd32(m->xmi + o)))) return 0;
  local = rd32(m->xmi + o + 8 + 4 * k);
  for (i = 0; i < p->nmods; i++) {          /* the exporting module, by name, any case */
    const char *a = p->mods[i].name, *b = name;
    pdb_module *x = &p->mods[i];
    uint32_t q;
    while (*a && *b && (*a | 0x20) == (*b | 0x20)) { a++; b++; }
    if (*a || *b || !hsi_pdb_load_module(p, i)) continue;
    for (q = 0; x->xme && q + 8 <= x->nxme; q += 8)
      if (rd32(x->xme + q) == local) return rd32(x->xme + q + 4);
    return 0;
  }
  return 0;
}

/* The inlinee's name, qualified as llvm-symbolizer shows it: the class
   for a member function (LF_MFUNC_ID), the scope string for a function
   with a parent scope (LF_FUNC_ID).  In the arena; NULL if unknown. */
static const char *compose_name(hsi_pdb *p, uint32_t id) {
  uint32_t len;
  const uint8_t *r;
  const char *name, *qual = NULL;
  char *s;
  size_t a, b;
  if (!load_types(p, &p->ipi, 4) || !(r = type_rec(&p->ipi, id, &len)) || len < 12) return NULL;
  if (rd16(r + 2) == LF_FUNC_ID) {
    uint32_t scope = rd32(r + 4), sl;
    const uint8_t *sr;
    if (scope && (sr = type_rec(&p->ipi, scope, &sl)) && sl >= 8 && rd16(sr + 2) == LF_STRING_ID)
      qual = rec_name(sr, 8, sl);
  } else if (rd16(r + 2) == LF_MFUNC_ID) {
    qual = udt_name(p, rd32(r + 4));
    if (!qual) qual = "";
  } else {
    return NULL;
  }
  if (!(name = rec_name(r, 12, len))) return NULL;
  a = qual ? strlen(qual) : 0;
  b = strlen(name);
  if (!(s = hsi_pdb_alloc(p, a + (qual ? 2 : 0) + b + 1))) return NULL;
  if (qual) { memcpy(s, qual, a); memcpy(s + a, "::", 2); a += 2; }
  memcpy(s + a, name, b + 1);
  return s;
}

static uint32_t key_hash(uint64_t k) { return (uint32_t)(k ^ k >> 32) * 2654435761u; }

/* The name of inlinee id as module m uses it, composed once and cached
   ("" when it cannot be named, so a damaged id is not looked up again). */
static const char *inlinee_name(hsi_pdb *p, pdb_module *m, uint32_t id) {
  uint64_t key = id & 0x80000000u ? (uint64_t)(m - p->mods + 1) << 32 | id : id;
  uint32_t h, mask;
  const char *s;
  if (p->capinames) {
    for (mask = p->capinames - 1, h = key_hash(key) & mask; p->inames[h].name; h = (h + 1) & mask)
      if (p->inames[h].key == key) return p->inames[h].name;
  }
  s = compose_name(p, global_id(p, m, id));
  if (!s) s = "";
  if (2 * (p->ninames + 1) > p->capinames) {          /* grow at half full */
    uint32_t nc = p->capinames ? 2 * p->capinames : 64, i;
    pdb_iname *nt = calloc(nc, sizeof *nt);
    if (!nt) return s;
    for (i = 0; i < p->capinames; i++)
      if (p->inames[i].name) {
        for (h = key_hash(p->inames[i].key) & (nc - 1); nt[h].name; h = (h + 1) & (nc - 1)) {}
        nt[h] = p->inames[i];
      }
    free(p->inames);
    p->inames = nt;
    p->capinames = nc;
  }
  for (mask = p->capinames - 1, h = key_hash(key) & mask; p->inames[h].name; h = (h + 1) & mask) {}
  p->inames[h].key = key;
  p->inames[h].name = s;
  p->ninames++;
  return s;
}

void hsi_pdb_free_types(hsi_pdb *p) {
  hsi_stream_free(&p->tpi.s);
  hsi_stream_free(&p->ipi.s);
  free(p->tpi.off);
  free(p->ipi.off);
  free(p->inames);
}

/* --------------------------------------------------- binary annotations */

/* One decoded annotation.  Operands as in CodeView: u1 (and u2 for
   ChangeCodeLengthAndCodeOffset: u1 length, u2 offset), s1 signed. */
typedef struct annot { uint32_t op, u1, u2; int32_t s1; } annot;

static uint32_t compressed(const uint8_t **pp, const uint8_t *e) {
  const uint8_t *q = *pp;
  uint32_t v;
  if (q >= e) return 0xFFFFFFFFu;
  if (!(q[0] & 0x80)) { *pp = q + 1; return q[0]; }
  if ((q[0] & 0xC0) == 0x80) {
    if (e - q < 2) return 0xFFFFFFFFu;
    *pp = q + 2;
    return (uint32_t)(q[0] & 0x3F) << 8 | q[1];
  }
  if ((q[0] & 0xE0) == 0xC0) {
    if (e - q < 4) return 0xFFFFFFFFu;
    v = (uint32_t)(q[0] & 0x1F) << 24 | (uint32_t)q[1] << 16 | (uint32_t)q[2] << 8 | q[3];
    *pp = q + 4;
    return v;
  }
  return 0xFFFFFFFFu;
}

static int32_t unsigned_to_signed(uint32_t v) { return v & 1 ? -(int32_t)(v >> 1) : (int32_t)(v >> 1); }

/* Next annotation from [*pp, e); 0 at the end (Invalid op, damage). */
static int annot_next(const uint8_t **pp, const uint8_t *e, annot *a) {
  uint32_t v;
  a->op = compressed(pp, e);
  a->u1 = a->u2 = 0;
  a->s1 = 0;
  switch (a->op) {
  case 1: case 2: case 3: case 4: case 5: case 7: case 8: case 9: case 13:
    a->u1 = compressed(pp, e);
    return a->u1 != 0xFFFFFFFFu;
  case 6: case 10:
    if ((v = compressed(pp, e)) == 0xFFFFFFFFu) return 0;
    a->s1 = unsigned_to_signed(v);
    return 1;
  case 11:
    if ((v = compressed(pp, e)) == 0xFFFFFFFFu) return 0;
    a->s1 = unsigned_to_signed(v >> 4);
    a->u1 = v & 0xF;
    return 1;
  case 12:
    a->u1 = compressed(pp, e);
    a->u2 = compressed(pp, e);
    return a->u1 != 0xFFFFFFFFu && a->u2 != 0xFFFFFFFFu;
  default:
    return 0;
  }
}

/* Does the inline site's code contain offset x (from the procedure's
   start)?  *start gets the start of the range that contains it. */
static int site_contains(const uint8_t *q, const uint8_t *e, uint32_t x, uint32_t *start) {
  uint32_t code = 0, rstart = 0;
  int found = 0, open = 0;
  annot a;
  while (annot_next(&q, e, &a)) {
    switch (a.op) {
    case 1: case 3: case 11:              /* CodeOffset, ChangeCodeOffset, ...AndLineOffset */
      code += a.u1;
      if (!open) { rstart = code; open = 1; }
      if (x >= code) found = 1;
      break;
    case 4:                               /* ChangeCodeLength */
      code += a.u1;
      if (found && x < code) { *start = rstart; return 1; }
      found = 0;
      open = 0;
      break;
    case 12:                              /* ChangeCodeLengthAndCodeOffset */
      code += a.u2;
      if (x >= code && x - code < a.u1) { *start = code; return 1; }
      found = 0;
      open = 0;
      break;
    default:
      break;
    }
  }
  return 0;
}

/*
** Line and file offsets of the inline site at offset x.  The annotations
** are a line program: each op that moves the code offset (1, 3, 11, 12)
** starts a row there, with the line and file as the ops before it left
** them; the answer is the last row at or before x.  llvm-symbolizer 14
** (Debian 12's, the oracle) instead sums the deltas up to the first op
** whose code offset reaches x, which inside a row names the next row's
** line (LLVM 15 reads the program); hsi_pdb_lines_llvm14 turns that
** reading on, for tests/cli/test_pdb_oracle.sh to compare the rest of the
** frames with it.
*/
static int llvm14_lines;

void hsi_pdb_lines_llvm14(int on) { llvm14_lines = on; }

static void site_line(const uint8_t *q, const uint8_t *e, uint32_t x, uint32_t *lineoff, uint32_t *fileoff) {
  uint32_t code = 0, file = 0, rowfile = 0;
  int32_t line = 0, rowline = 0;
  int have = 0;
  annot a;
  while (annot_next(&q, e, &a)) {
    int row = 0;
    switch (a.op) {
    case 1: case 3: code += a.u1; row = 1; break;
    case 4: code += a.u1; break;
    case 12: code += a.u2; row = 1; break;
    case 6: line += a.s1; break;
    case 11: code += a.u1; line += a.s1; row = 1; break;
    case 5: file = a.u1; break;
    default: break;
    }
    if (llvm14_lines) {
      if (code >= x) break;
    } else if (row) {
      if (code > x) break;
      rowline = line; rowfile = file; have = 1;
    }
  }
  if (llvm14_lines || !have) { rowline = line; rowfile = file; }
  *lineoff = (uint32_t)rowline;
  *fileoff = rowfile;
}

#define NSITE 64                         /* inline levels kept (the innermost) */

int hsi_pdb_inline_frames(hsi_pdb *p, pdb_module *m, const pdb_proc *pr, uint32_t rva, hsi_pdb_frame *out, int cap) {
  /* Sites found, outermost first: record offset and range start; past
     NSITE levels the outer ones give way, so the innermost are kept */
  uint32_t site[NSITE], sstart[NSITE];
  int n = 0, i, w = 0;
  uint32_t x = rva - pr->rva, o = pr->rec, end = pr->end, lim = m->symbytes;
  const uint8_t *s = m->s.p;
  if (end <= o || end > lim) return 0;
  for (;;) {
    int found = 0;
    while (o < end && o + 4 <= lim) {
      uint32_t len = rd16(s + o), kind = rd16(s + o + 2), send;
      if (len < 2 || o + 2 + len > lim) { hsi_pdb_damage(p, &m->s, o, "expected a symbol record within "
                                                          "the module's symbols, found %u bytes", len + 2); return 0; }
      if (kind != S_INLINESITE || len + 2 < 16) { o += 2 + len; continue; }
      if (site_contains(s + o + 16, s + o + 2 + len, x, &sstart[n % NSITE])) {
        site[n++ % NSITE] = o;
        send = rd32(s + o + 8);
        o += 2 + len;
        if (send <= o || send > end) send = end;      /* damaged: stay inside the parent */
        end = send;
        found = 1;
        break;
      }
      send = rd32(s + o + 8);
      if (send <= o || send >= end) break;
      o = send;                                        /* past the site's children and its S_INLINESITE_END */
      if (o + 4 > lim) break;
      o += 2 + rd16(s + o);
    }
    if (!found) break;
  }
  /* innermost first; a frame without an inlinee line ends the list there */
  for (i = n - 1; i >= 0 && i >= n - NSITE && w < cap; i--) {
    const uint8_t *r = s + site[i % NSITE];
    uint32_t len = rd16(r) + 2u, inlinee = rd32(r + 12), lineoff, fileoff, base, chk;
    const char *name;
    if (!hsi_pdb_inlinee_line(p, m, inlinee, &base, &chk)) break;
    site_line(r + 16, r + len, x, &lineoff, &fileoff);
    name = inlinee_name(p, m, inlinee);
    out[w].name = name;
    out[w].start_rva = pr->rva + sstart[i % NSITE];
    out[w].file = hsi_pdb_chk_file(p, m, fileoff ? fileoff : chk);
    out[w].line = base + lineoff;
    out[w].from_public = 0;
    w++;
  }
  return w;
}
