// app.cpp -- built at test time with clang + lld into a Windows executable
// and its PDB (C headers only: no C++ runtime is needed): templates, member functions inlined into each other (the
// inlinees are LF_MFUNC_ID records naming their class), a namespace
// (LF_FUNC_ID with a parent scope), and plain functions.  The classes of
// inlined members include a union (LF_UNION: its name at another offset).
#include <stdio.h>
#include <stdlib.h>

namespace geo {
template <typename T> struct Vec {
  T x, y;
  Vec operator+(const Vec &o) const { return Vec{x + o.x, y + o.y}; }
  T dot(const Vec &o) const { return x * o.x + y * o.y; }
  T norm2() const { return dot(*this); }
};

template <typename T> inline T accumulate(const Vec<T> *v, int n) {
  Vec<T> s{0, 0};
  for (int i = 0; i < n; i++) s = s + v[i];
  return s.norm2();
}

inline int scale(int v) { return v * 3 - 1; }
}  // namespace geo

class Counter {
 public:
  explicit Counter(int start) : n_(start) {}
  void bump(int by) { n_ += geo::scale(by); }
  int value() const { return n_; }
 private:
  int n_;
};

__attribute__((noinline)) long total_int(int n) {
  geo::Vec<int> *v = static_cast<geo::Vec<int> *>(malloc(sizeof(geo::Vec<int>) * (n + 1)));
  for (int i = 0; i <= n; i++) v[i] = geo::Vec<int>{i, n - i};
  long r = geo::accumulate(v, n + 1);
  free(v);
  return r;
}

__attribute__((noinline)) double total_double(int n) {
  geo::Vec<double> v[8];
  for (int i = 0; i < 8; i++) v[i] = geo::Vec<double>{i * 0.5, n * 1.5};
  return geo::accumulate(v, n < 8 ? n : 8);
}

__attribute__((noinline)) int count(int n) {
  Counter c(n);
  for (int i = 0; i < n; i++) c.bump(i);
  return c.value();
}

union Bits {
  unsigned u;
  float f;
  unsigned low() const { return u & 0xFFFFu; }
};

__attribute__((noinline)) unsigned bits(int n) {
  Bits b;
  b.u = (unsigned)n * 2654435761u;
  return b.low();
}

int main(int argc, char **) {
  printf("%ld %f %d\n", total_int(argc * 10), total_double(argc + 3), count(argc * 7));
  printf("%u\n", bits(argc));
  return 0;
}
