/* Two calls on one line of an inlined function, then one on the next:
   their return addresses lie inside the rows of the inline site's line
   program, where llvm-symbolizer 14 names the next row's line
   (test_pdb_oracle.sh). */
__attribute__((noinline)) int g(int x) { return x * 7 + 1; }
static inline __attribute__((always_inline)) int inl(int x) {
  int a = g(x) * 3 + g(x + 1);
  a += g(a);
  return a;
}
int entry(void) { return inl(5); }
