/* app.c -- built at test time with clang + lld into a Windows executable
   and its PDB (tests/cli/test_pdb_oracle.sh): static inline functions
   called from several places and nested, so the PDB has inline sites
   several levels deep, and a few plain functions. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline unsigned mix(unsigned h, unsigned v) {
  h ^= v;
  h *= 0x01000193u;
  return h;
}

static inline unsigned hash_bytes(const char *s, size_t n) {
  unsigned h = 0x811c9dc5u;
  size_t i;
  for (i = 0; i < n; i++) h = mix(h, (unsigned char)s[i]);
  return h;
}

static inline int clamp(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

struct node { struct node *next; int key; char name[16]; };

static struct node *push(struct node *head, int key, const char *name) {
  struct node *n = malloc(sizeof *n);
  if (!n) exit(1);
  n->next = head;
  n->key = clamp(key, -1000, 1000);
  strncpy(n->name, name, sizeof n->name - 1);
  n->name[sizeof n->name - 1] = 0;
  return n;
}

__attribute__((noinline)) unsigned sum_hashes(const struct node *n) {
  unsigned h = 0;
  for (; n; n = n->next) h = mix(h, hash_bytes(n->name, strlen(n->name)) + (unsigned)clamp(n->key, 0, 99));
  return h;
}

__attribute__((noinline)) int count_over(const struct node *n, int limit) {
  int c = 0;
  for (; n; n = n->next) c += clamp(n->key, 0, 1 << 20) > limit;
  return c;
}

static void free_all(struct node *n) {
  while (n) { struct node *next = n->next; free(n); n = next; }
}

int main(int argc, char **argv) {
  struct node *list = NULL;
  int i;
  for (i = 0; i < argc * 20; i++) list = push(list, i * 37 - 300, argc > 1 ? argv[1] : "item");
  printf("%u %d %u\n", sum_hashes(list), count_over(list, 10), hash_bytes("abc", 3));
  free_all(list);
  return 0;
}
