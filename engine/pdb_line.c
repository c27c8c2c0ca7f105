/*
** pdb_line.c -- C13 line information of a module: the subsections after
** its symbols (u32 kind, u32 length, data, padded to 4).
**
** DEBUG_S_LINES (0xF2): u32 RelocOffset, u16 RelocSegment, u16 Flags (1:
** columns follow), u32 CodeSize; then blocks of u32 file (an offset into
** the FILECHKSMS subsection), u32 NumLines, u32 BlockSize, NumLines pairs
** of (u32 code offset, u32 line:24 | delta:7 | statement:1), and as many
** column pairs when Flags says so.
** DEBUG_S_FILECHKSMS (0xF4): per file u32 offset into /names, u8 checksum
** size, u8 kind, the checksum, padded to 4.
** DEBUG_S_INLINEELINES (0xF6): u32 signature (1: extra files follow each
** row), rows of u32 inlinee id, u32 file, u32 line of the inlinee's start.
** DEBUG_S_CROSSSCOPEIMPORTS (0xF7) and EXPORTS (0xF8): see pdb_sym.c.
**
** A module's rows from all blocks go in one array sorted by address, each
** block ending with a terminal row at start + CodeSize; as llvm-symbolizer
** does, code before a subsection's first row has that first line.  An
** address has the line of the last row at or before it (the first of
** several at exactly it), none after a terminal row.  Where a subsection
** has blocks of several files (an .asm including an .inc, a header's code
** in a function) llvm-symbolizer 14 opens every block at the subsection's
** start and answers from whichever sorts first; we keep the rows' own
** addresses, which is what the line table says.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bytes.h"
#include "pdb_int.h"

#define DEBUG_S_LINES        0xF2
#define DEBUG_S_FILECHKSMS   0xF4
#define DEBUG_S_INLINEELINES 0xF6
#define DEBUG_S_CROSSSCOPEIMPORTS 0xF7
#define DEBUG_S_CROSSSCOPEEXPORTS 0xF8

static int row_cmp(const void *a, const void *b) {
  const pdb_line *x = a, *y = b;
  int tx = x->line == PDB_LINE_END, ty = y->line == PDB_LINE_END;
  if (x->rva != y->rva) return x->rva < y->rva ? -1 : 1;
  if (tx != ty) return tx ? -1 : 1;          /* terminal rows first at one address */
  return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int inl_cmp(const void *a, const void *b) {
  const pdb_inlinee *x = a, *y = b;
  if (x->id != y->id) return x->id < y->id ? -1 : 1;
  return x->seq < y->seq ? -1 : x->seq > y->seq;
}

typedef struct rows { pdb_line *v; uint32_t n, cap; } rows;

/* A row we add at a subsection's start, before its first real row: marked
   in seq so it sorts after real rows at that address, and dropped where a
   real row has it (folded functions: two subsections over the same code,
   the first one's rows count). */
#define PDB_ROW_FILLED 0x80000000u

static int push_row(rows *r, uint32_t rva, uint32_t line, uint32_t file) {
  if (r->n == r->cap) {
    pdb_line *nv;
    uint32_t nc = r->cap ? 2 * r->cap : 256;
    if (!(nv = realloc(r->v, nc * sizeof *nv))) return 0;
    r->v = nv;
    r->cap = nc;
  }
  r->v[r->n].rva = rva;
  r->v[r->n].line = line;
  r->v[r->n].file = file;
  r->v[r->n].seq = r->n;
  r->n++;
  return 1;
}

/* The rows of one DEBUG_S_LINES subsection at stream offset so. */
static int lines_sub(hsi_pdb *p, pdb_module *m, uint32_t so, const uint8_t *d, uint32_t len, rows *r) {
  uint32_t roff, csz, o, start, first = 0xFFFFFFFFu, fline = 0, ffile = 0;
  uint16_t seg, flags;
  int ok;
  if (len < 12) { hsi_pdb_damage(p, &m->s, so, "expected a 12-byte line table header"); return 1; }
  roff = rd32(d);
  seg = rd16(d + 4);
  flags = rd16(d + 6);
  csz = rd32(d + 8);
  start = hsi_pdb_rva(p, seg, roff, &ok);
  if (!ok) return 1;                          /* code in no known section */
  /* Where the first line starts: a block may begin past the subsection's
     start; the code before its first row still belongs to that line. */
  for (o = 12; o + 12 <= len;) {
    uint32_t nl = rd32(d + o + 4), bsz = rd32(d + o + 8), k;
    if (nl > (len - o - 12) / (flags & 1 ? 12 : 8) || bsz < 12 || bsz > len - o) break;
    for (k = 0; k < nl; k++)
      if (rd32(d + o + 12 + 8 * k) < first) { first = rd32(d + o + 12 + 8 * k); fline = rd32(d + o + 16 + 8 * k); ffile = rd32(d + o); }
    o += bsz;
  }
  if (first != 0xFFFFFFFFu && first > 0) {
    if (!push_row(r, start, fline & 0xFFFFFF, ffile)) return 0;
    r->v[r->n - 1].seq |= PDB_ROW_FILLED;
  }
  for (o = 12; o + 12 <= len;) {
    uint32_t file = rd32(d + o), nl = rd32(d + o + 4), bsz = rd32(d + o + 8), k, need;
    need = flags & 1 ? 12 : 8;
    if (nl > (len - o - 12) / need || bsz < 12 || bsz > len - o) {
      hsi_pdb_damage(p, &m->s, so + o, "expected a line block within its subsection's %u bytes, found "
                     "%u lines in %u bytes", len, nl, bsz);
      return 1;
    }
    if (nl) {
      for (k = 0; k < nl; k++)
        if (!push_row(r, start + rd32(d + o + 12 + 8 * k), rd32(d + o + 16 + 8 * k) & 0xFFFFFF, file)) return 0;
      if (!push_row(r, start + csz, PDB_LINE_END, file)) return 0;
    }
    o += bsz;
  }
  return 1;
}

int hsi_pdb_load_lines(hsi_pdb *p, pdb_module *m) {
  uint32_t base = m->symbytes + m->c11bytes, lim = base + m->c13bytes, o, ninl = 0, capinl = 0;
  rows r = { NULL, 0, 0 };
  pdb_inlinee *inl = NULL;
  for (o = base; o + 8 <= lim;) {
    uint32_t kind = rd32(m->s.p + o), len = rd32(m->s.p + o + 4);
    const uint8_t *d = m->s.p + o + 8;
    if (len > lim - o - 8) {
      hsi_pdb_damage(p, &m->s, o, "expected a debug subsection within the module's %u bytes of line "
                     "information, found 0x%x of %u bytes", m->c13bytes, kind, len);
      break;
    }
    if (kind == DEBUG_S_FILECHKSMS && !m->chk) {
      m->chk = d;
      m->nchk = len;
    } else if (kind == DEBUG_S_CROSSSCOPEIMPORTS && !m->xmi) {
      m->xmi = d;
      m->nxmi = len;
    } else if (kind == DEBUG_S_CROSSSCOPEEXPORTS && !m->xme) {
      m->xme = d;
      m->nxme = len;
    } else if (kind == DEBUG_S_LINES) {
      if (!lines_sub(p, m, o + 8, d, len, &r)) break;
    } else if (kind == DEBUG_S_INLINEELINES && len >= 4) {
      uint32_t sig = rd32(d), q = 4;
      while (q + 12 <= len) {
        uint32_t extra = 0;
        if (sig == 1) {
          if (q + 16 > len || (extra = rd32(d + q + 12)) > (len - q - 16) / 4) break;
        }
        if (ninl == capinl) {
          pdb_inlinee *ni;
          capinl = capinl ? 2 * capinl : 64;
          if (!(ni = realloc(inl, capinl * sizeof *ni))) { capinl = ninl; break; }
          inl = ni;
        }
        inl[ninl].id = rd32(d + q);
        inl[ninl].chk = rd32(d + q + 4);
        inl[ninl].line = rd32(d + q + 8);
        inl[ninl].seq = ninl;
        ninl++;
        q += 12 + (sig == 1 ? 4 + 4 * extra : 0);
      }
    }
    o = (o + 8 + len + 3) & ~3u;
    if (o < base) break;                        /* wrapped */
  }
  if (r.n > 1) {
    uint32_t i, k = 0;
    qsort(r.v, r.n, sizeof *r.v, row_cmp);
    for (i = 0; i < r.n; i++) {
      if ((r.v[i].seq & PDB_ROW_FILLED) && k && r.v[k - 1].rva == r.v[i].rva && r.v[k - 1].line != PDB_LINE_END)
        continue;
      r.v[k++] = r.v[i];
    }
    r.n = k;
  }
  if (ninl > 1) qsort(inl, ninl, sizeof *inl, inl_cmp);
  m->lines = r.v;
  m->nlines = r.n;
  m->inls = inl;
  m->ninls = ninl;
  return 1;
}

const char *hsi_pdb_chk_file(hsi_pdb *p, pdb_module *m, uint32_t chkoff) {
  if (!m->chk || chkoff > m->nchk || m->nchk - chkoff < 6) return NULL;
  return hsi_pdb_string(p, rd32(m->chk + chkoff));
}

int hsi_pdb_line_at(hsi_pdb *p, pdb_module *m, uint32_t rva, uint32_t *line, const char **file) {
  uint32_t lo = 0, hi = m->nlines;
  const pdb_line *v = m->lines;
  while (lo < hi) {        /* first row past rva, or exactly at it and not terminal */
    uint32_t mid = lo + (hi - lo) / 2;
    if (v[mid].rva < rva || (v[mid].rva == rva && v[mid].line == PDB_LINE_END)) lo = mid + 1; else hi = mid;
  }
  if (lo == m->nlines || v[lo].rva > rva) {
    if (lo == 0 || v[lo - 1].line == PDB_LINE_END) return 0;
    lo--;
  }
  *line = v[lo].line;
  *file = hsi_pdb_chk_file(p, m, v[lo].file);
  return 1;
}

int hsi_pdb_inlinee_line(hsi_pdb *p, pdb_module *m, uint32_t inlinee, uint32_t *line, uint32_t *chk) {
  uint32_t lo = 0, hi = m->ninls;
  (void)p;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (m->inls[mid].id < inlinee) lo = mid + 1; else hi = mid;
  }
  if (lo == m->ninls || m->inls[lo].id != inlinee) return 0;
  *line = m->inls[lo].line;
  *chk = m->inls[lo].chk;
  return 1;
}
