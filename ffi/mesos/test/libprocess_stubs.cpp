// Stand-ins for the few libprocess functions that Future<T>::get() refers
// to (it waits on a Latch when the future is not ready yet). The smoke test
// only calls get() on completed futures, so none of them may ever run.

#include <cstdio>
#include <cstdlib>

#include <process/latch.hpp>

namespace {

[[noreturn]] void unavailable(const char* what)
{
  std::fprintf(stderr, "module_smoke: %s called: no libprocess here\n", what);
  std::abort();
}

} // namespace

namespace process {

Latch::Latch() { unavailable("Latch::Latch"); }
Latch::~Latch() {}
bool Latch::trigger() { unavailable("Latch::trigger"); }
bool Latch::await(const Duration&) { unavailable("Latch::await"); }

} // namespace process
