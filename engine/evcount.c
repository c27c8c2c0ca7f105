/*
** evcount.c -- events counted by (provider, id, opcode, version): the
** table behind `heapscript info`'s figures and trace:tally.
*/
#include <stdlib.h>
#include <string.h>
#include "evcount.h"
#include "bytes.h"

static uint32_t key_hash(const hs_guid *g, int op, int id, int ver) {
  uint32_t h = g->d1 * 2654435761u ^ (uint32_t)g->d2 << 16 ^ g->d3 ^ rd32(g->d4) ^ rd32(g->d4 + 4) * 40503u;
  h ^= (uint32_t)op * 0x9E3779B1u ^ (uint32_t)id << 8 ^ (uint32_t)ver << 24;
  return h ^ h >> 15;
}

static void place(hsi_evcount *c, size_t row) {
  const hsi_evrow *k = &c->rows[row];
  size_t j = key_hash(&k->provider, k->opcode, k->id, k->version) & (c->nslot - 1);
  while (c->slot[j]) j = (j + 1) & (c->nslot - 1);
  c->slot[j] = (uint32_t)row + 1;
}

/* Room for one more row, the slots still at most half full. */
static int grow(hsi_evcount *c) {
  if (c->n == c->cap) {
    size_t nc = c->cap ? c->cap * 2 : 64;
    hsi_evrow *p = (hsi_evrow *)realloc(c->rows, nc * sizeof *p);
    if (!p) return -1;
    c->rows = p;
    c->cap = nc;
  }
  if ((c->n + 1) * 2 > c->nslot) {
    size_t ns = c->nslot ? c->nslot * 2 : 256, i;
    uint32_t *s = (uint32_t *)calloc(ns, sizeof *s);
    if (!s) return -1;
    free(c->slot);
    c->slot = s;
    c->nslot = ns;
    for (i = 0; i < c->n; i++) place(c, i);
  }
  return 0;
}

int hsi_evcount_miss(hsi_evcount *c, const hs_event *ev, uint16_t version) {
  size_t j;
  if (grow(c)) return HS_ENOMEM;
  j = key_hash(&ev->provider, ev->opcode, ev->id, version) & (c->nslot - 1);
  for (;; j = (j + 1) & (c->nslot - 1)) {
    hsi_evrow *k;
    if (!c->slot[j]) {                    /* a new key */
      k = &c->rows[c->n];
      k->provider = ev->provider;
      k->opcode = ev->opcode;
      k->id = ev->id;
      k->version = version;
      k->count = 0;
      c->slot[j] = (uint32_t)++c->n;
    }
    k = &c->rows[c->slot[j] - 1];
    if (k->opcode == ev->opcode && k->id == ev->id && k->version == version && hs_guid_eq(&k->provider, &ev->provider)) {
      k->count++;
      if (ev->flags & HS_EVF_KERNEL) {
        unsigned h = hsi_evcount_slot(ev, version);
        c->ktag[h] = hsi_evcount_tag(ev, version);
        c->krow[h] = c->slot[j] - 1;
      }
      return 0;
    }
  }
}

void hsi_evcount_free(hsi_evcount *c) {
  free(c->rows);
  free(c->slot);
  memset(c, 0, sizeof *c);
}
