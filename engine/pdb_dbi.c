/*
** pdb_dbi.c -- the streams read at open: the PDB info stream (stream 1:
** u32 Version, Signature, Age, the GUID, then the named stream map that
** leads to /names), the /names string table (u32 0xEFFEEFFE, HashVersion,
** ByteSize, then the strings), and the DBI stream (stream 3): its 64-byte
** header, the module list (ModInfo records), the section contributions
** (which module owns which bytes of the image) and the optional debug
** header whose sixth entry is the stream of the image's section headers,
** so that a (section, offset) pair becomes an RVA.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bytes.h"
#include "pdb_int.h"

#define fileoff(p, s, off) ((unsigned long long)hsi_msf_fileoff(&(p)->msf, (s)->index, (off)))

/* A NUL-terminated string at s[off..lim): its length, or -1. */
static long cstr(const uint8_t *s, uint32_t off, uint32_t lim) {
  const void *z;
  if (off >= lim) return -1;
  z = memchr(s + off, 0, lim - off);
  return z ? (long)((const uint8_t *)z - (s + off)) : -1;
}

static uint32_t popcount32(uint32_t v) {
  uint32_t c = 0;
  for (; v; v &= v - 1) c++;
  return c;
}

int hsi_pdb_read_info(hsi_pdb *p, char *err, size_t errlen) {
  pdb_stream s;
  uint32_t strsz, off, size, words, i, k, npresent = 0;
  const uint8_t *strs;
  int rc;
  if ((rc = hsi_msf_stream(&p->msf, 1, &s, p->path, err, errlen)) != 0) return rc;
  if (s.n < 28) {
    snprintf(err, errlen, "%s: offset 0x%llx: expected the 28-byte PDB info stream header, stream 1 has %u bytes",
             p->path, fileoff(p, &s, 0), s.n);
    hsi_stream_free(&s);
    return HS_EFORMAT;
  }
  p->info_age = rd32(s.p + 8);
  p->dbi_age = p->info_age;
  p->guid = hs_guid_from_bytes(s.p + 12);
  /* Named stream map: the string buffer, then a hash table of
     (string offset, stream number) for the buckets whose present bit is set. */
  off = 28;
  if (s.n - off < 4 || (strsz = rd32(s.p + off)) > s.n - off - 4) goto bad;
  strs = s.p + off + 4;
  off += 4 + strsz;
  if (s.n - off < 12) goto bad;
  size = rd32(s.p + off);
  off += 8;
  words = rd32(s.p + off);
  off += 4;
  if (words > (s.n - off) / 4) goto bad;
  for (i = 0; i < words; i++) npresent += popcount32(rd32(s.p + off + 4 * i));
  off += 4 * words;
  if (s.n - off < 4) goto bad;
  words = rd32(s.p + off);                      /* the deleted bits */
  off += 4;
  if (words > (s.n - off) / 4) goto bad;
  off += 4 * words;
  if (npresent > (s.n - off) / 8) goto bad;
  (void)size;
  for (k = 0; k < npresent; k++) {
    uint32_t key = rd32(s.p + off + 8 * k), val = rd32(s.p + off + 8 * k + 4);
    long len = cstr(strs, key, strsz);
    if (len == 6 && memcmp(strs + key, "/names", 6) == 0) p->names_stream = val;
  }
  hsi_stream_free(&s);
  if (p->names_stream && hsi_msf_exists(&p->msf, p->names_stream)) {
    if ((rc = hsi_msf_stream(&p->msf, p->names_stream, &p->names, p->path, err, errlen)) != 0) return rc;
    if (p->names.n < 12 || rd32(p->names.p) != 0xEFFEEFFEu || rd32(p->names.p + 8) > p->names.n - 12) {
      /* Not fatal: names of source files are lost, functions still resolve. */
      hsi_pdb_damage(p, &p->names, 0, "expected the /names string table header (0xEFFEEFFE and a size within "
                     "the stream's %u bytes)", p->names.n);
      hsi_stream_free(&p->names);
    }
  }
  return 0;
bad:
  snprintf(err, errlen, "%s: offset 0x%llx: expected the named stream map of the PDB info stream, "
           "found it running past the stream's %u bytes", p->path, fileoff(p, &s, off < s.n ? off : s.n), s.n);
  hsi_stream_free(&s);
  return HS_EFORMAT;
}

const char *hsi_pdb_string(hsi_pdb *p, uint32_t off) {
  uint32_t n;
  if (!p->names.p || p->names.n < 12) return NULL;
  n = rd32(p->names.p + 8);
  if (cstr(p->names.p + 12, off, n) < 0) return NULL;
  return (const char *)p->names.p + 12 + off;
}

static int by_rva(const void *a, const void *b) {
  const pdb_contrib *x = a, *y = b;
  if (x->rva != y->rva) return x->rva < y->rva ? -1 : 1;
  return x->mod < y->mod ? -1 : x->mod > y->mod;
}

int hsi_pdb_read_dbi(hsi_pdb *p, char *err, size_t errlen) {
  pdb_stream *s = &p->dbi;
  uint32_t modsz, scsz, smsz, fisz, tssz, ecsz, dbgsz, off, end, n, i;
  int rc;
  if (!hsi_msf_exists(&p->msf, 3) || rd32(p->msf.sizes + 12) == 0) return 0;    /* types-only PDB */
  if ((rc = hsi_msf_stream(&p->msf, 3, s, p->path, err, errlen)) != 0) return rc;
  if (s->n < 64 || rd32(s->p) != 0xFFFFFFFFu) {
    snprintf(err, errlen, "%s: offset 0x%llx: expected the 64-byte DBI stream header (signature 0xFFFFFFFF)",
             p->path, fileoff(p, s, 0));
    return HS_EFORMAT;
  }
  p->has_dbi = 1;
  p->dbi_age = rd32(s->p + 8);
  p->gsi_stream = rd16(s->p + 12);
  p->psi_stream = rd16(s->p + 16);
  p->symrec_stream = rd16(s->p + 20);
  modsz = rd32(s->p + 24); scsz = rd32(s->p + 28); smsz = rd32(s->p + 32);
  fisz = rd32(s->p + 36); tssz = rd32(s->p + 40); ecsz = rd32(s->p + 52);
  dbgsz = rd32(s->p + 48);
  p->machine = rd16(s->p + 58);
  {
    uint64_t total = 64ull + modsz + scsz + smsz + fisz + tssz + ecsz + dbgsz;
    if (total > s->n || (int32_t)(modsz | scsz | smsz | fisz | tssz | ecsz | dbgsz) < 0) {
      snprintf(err, errlen, "%s: offset 0x%llx: expected DBI substreams within the stream's %u bytes, "
               "their sizes add up to %llu", p->path, fileoff(p, s, 24), s->n, (unsigned long long)total);
      return HS_EFORMAT;
    }
  }
  /* Section headers, through the optional debug header (u16 stream numbers;
     entry 5 is the section header stream). */
  off = 64 + modsz + scsz + smsz + fisz + tssz + ecsz;
  if (dbgsz >= 12) {
    uint16_t sh = rd16(s->p + off + 10);
    if (sh != 0xFFFF && hsi_msf_exists(&p->msf, sh)) {
      pdb_stream hs;
      if ((rc = hsi_msf_stream(&p->msf, sh, &hs, p->path, err, errlen)) != 0) return rc;
      n = hs.n / 40;
      if (n > PDB_MAX_SECTIONS) n = PDB_MAX_SECTIONS;
      if (n && !(p->sec_rva = malloc(n * sizeof *p->sec_rva))) { hsi_stream_free(&hs); return HS_ENOMEM; }
      for (i = 0; i < n; i++) p->sec_rva[i] = rd32(hs.p + 40 * i + 12);
      p->nsec = n;
      hsi_stream_free(&hs);
    }
  }
  /* Modules: 64 fixed bytes, two names, aligned to 4. */
  for (off = 64, end = 64 + modsz, n = 0; off + 64 <= end; n++) {
    long a, b;
    if ((a = cstr(s->p, off + 64, end)) < 0 || (b = cstr(s->p, off + 64 + (uint32_t)a + 1, end)) < 0) break;
    off = (off + 64 + (uint32_t)a + 1 + (uint32_t)b + 1 + 3) & ~3u;
    if (n >= PDB_MAX_MODULES) break;
  }
  if (off != end && !(off > end && off - end < 4)) {
    snprintf(err, errlen, "%s: offset 0x%llx: expected module %u's record (64 bytes and two names) within the "
             "DBI module list's %u bytes", p->path, fileoff(p, s, off), n, modsz);
    return HS_EFORMAT;
  }
  if (n && !(p->mods = calloc(n, sizeof *p->mods))) return HS_ENOMEM;
  p->nmods = n;
  for (off = 64, i = 0; i < n; i++) {
    pdb_module *m = &p->mods[i];
    long a = cstr(s->p, off + 64, end), b = cstr(s->p, off + 64 + (uint32_t)a + 1, end);
    m->dbi_off = off;
    m->stream = rd16(s->p + off + 34);
    m->symbytes = rd32(s->p + off + 36);
    m->c11bytes = rd32(s->p + off + 40);
    m->c13bytes = rd32(s->p + off + 44);
    m->name = (const char *)s->p + off + 64;
    if (m->stream == 0xFFFF || !hsi_msf_exists(&p->msf, m->stream)) m->state = -1;
    off = (off + 64 + (uint32_t)a + 1 + (uint32_t)b + 1 + 3) & ~3u;
  }
  /* Section contributions: u32 version, then 28-byte entries (32 with the
     V2 version's extra COFF section index). */
  off = 64 + modsz;
  if (scsz >= 4) {
    uint32_t ver = rd32(s->p + off), esz = ver == 0xeffe0000u + 20140516u ? 32 : 28, k = 0;
    n = (scsz - 4) / esz;
    if (n && !(p->contribs = malloc(n * sizeof *p->contribs))) return HS_ENOMEM;
    for (i = 0; i < n; i++) {
      const uint8_t *e = s->p + off + 4 + esz * i;
      uint16_t sec = rd16(e), mod = rd16(e + 16);
      uint32_t o = rd32(e + 4), sz = rd32(e + 8);
      int ok;
      uint32_t rva = hsi_pdb_rva(p, sec, o, &ok);
      if (!ok || sz == 0 || (int32_t)sz < 0 || mod >= p->nmods) continue;
      p->contribs[k].rva = rva;
      p->contribs[k].end = rva + sz < rva ? 0xFFFFFFFFu : rva + sz;
      p->contribs[k].mod = mod;
      k++;
    }
    p->ncontribs = k;
    if (k) qsort(p->contribs, k, sizeof *p->contribs, by_rva);
  }
  return 0;
}

uint32_t hsi_pdb_rva(const hsi_pdb *p, uint16_t seg, uint32_t off, int *ok) {
  if (seg == 0 || seg > p->nsec) { *ok = 0; return 0; }
  *ok = 1;
  return p->sec_rva[seg - 1] + off;
}

int hsi_pdb_module_at(const hsi_pdb *p, uint32_t rva) {
  uint32_t lo = hsi_pdb_upper(p->contribs, p->ncontribs, sizeof *p->contribs, rva);
  if (lo == 0 || rva >= p->contribs[lo - 1].end) return -1;
  return p->contribs[lo - 1].mod;
}
