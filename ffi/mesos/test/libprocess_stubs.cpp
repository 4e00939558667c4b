// Stand-ins for the libprocess functions and objects the modules refer to
// (process::async spawns an executor process, watch() polls with
// process::io::poll and a Clock timer, Future<T>::get() may wait on a
// Latch). Inside a Mesos
// agent they come from libmesos. The smoke test has no libprocess runtime:
// it only calls module methods that complete without one, so none of these
// may ever run; each aborts loudly if one does.

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include <process/clock.hpp>
#include <process/event.hpp>
#include <process/id.hpp>
#include <process/io.hpp>
#include <process/latch.hpp>
#include <process/pid.hpp>
#include <process/process.hpp>

namespace {

[[noreturn]] void unavailable(const char* what)
{
  std::fprintf(stderr, "module_smoke: %s called: no libprocess here\n", what);
  std::abort();
}

} // namespace

namespace process {

// Private to libprocess (its src/, not its headers); ProcessBase holds one
// through a unique_ptr, which needs a complete type to define the
// destructor. No ProcessBase is ever constructed here.
class EventQueue {};

Latch::Latch() { unavailable("Latch::Latch"); }
Latch::~Latch() {}
bool Latch::trigger() { unavailable("Latch::trigger"); }
bool Latch::await(const Duration&) { unavailable("Latch::await"); }

const std::string UPID::ID::EMPTY = "";
UPID::UPID(const ProcessBase&) { unavailable("UPID::UPID"); }

ProcessBase::ProcessBase(const std::string&) { unavailable("ProcessBase"); }
ProcessBase::~ProcessBase() {}
void ProcessBase::consume(MessageEvent&&) { unavailable("consume"); }
void ProcessBase::consume(DispatchEvent&&) { unavailable("consume"); }
void ProcessBase::consume(HttpEvent&&) { unavailable("consume"); }
void ProcessBase::consume(ExitedEvent&&) { unavailable("consume"); }
void ProcessBase::consume(TerminateEvent&&) { unavailable("consume"); }

Timer Clock::timer(const Duration&, const std::function<void()>&)
{
  unavailable("Clock::timer");
}
bool Clock::cancel(const Timer&) { unavailable("Clock::cancel"); }

UPID spawn(ProcessBase*, bool) { unavailable("spawn"); }
void terminate(const UPID&, bool) { unavailable("terminate"); }

namespace ID {
std::string generate(const std::string&) { unavailable("ID::generate"); }
} // namespace ID

namespace internal {
void dispatch(
    const UPID&,
    std::unique_ptr<lambda::CallableOnce<void(ProcessBase*)>>,
    const Option<const std::type_info*>&)
{
  unavailable("dispatch");
}
} // namespace internal

namespace io {
Future<short> poll(int, short) { unavailable("io::poll"); }
} // namespace io

} // namespace process
