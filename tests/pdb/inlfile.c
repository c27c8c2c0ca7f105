/* inlfile.c -- built at test time with clang + lld (tests/cli/test_pdb_oracle.sh):
   an inlined function whose body is partly in another file (inlfile.inc,
   included in the middle of it), so that its inline sites change file
   in their binary annotations (ChangeFile) and back. */
volatile int sink;

__attribute__((noinline)) void leaf(int x) { sink = x; }

static inline __attribute__((always_inline)) int step(int x) {
  x += sink;
  leaf(x);
#include "inlfile.inc"
  leaf(x);
  return x;
}

int main(void) { return step(sink) + step(3); }
