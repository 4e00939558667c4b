// mesos-io-switchboard for the real-Mesos checks: the helper the agent's
// IOSwitchboard runs from --launcher_dir for every container that has a
// session (LAUNCH_NESTED_CONTAINER_SESSION, ATTACH_CONTAINER_INPUT/OUTPUT).
// The server itself (IOSwitchboardServer::create/run/unblock) and its flags
// class are in the PyPI binary; this file only parses the flags the agent
// passes, starts the server and turns SIGTERM into an unblock, so a server
// still waiting for its first connection ends cleanly when the agent stops it.
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include <process/future.hpp>
#include <process/io.hpp>
#include <process/owned.hpp>

#include <stout/os.hpp>
#include <stout/try.hpp>

#include "logging/logging.hpp"
#include "slave/containerizer/mesos/io/switchboard.hpp"

namespace ms = mesos::internal::slave;

// Written to by the SIGTERM handler, read (polled) by libprocess.
static int term_pipe[2] = {-1, -1};

static void on_term(int) {
  const int saved = errno;
  const char byte = 0;
  while (::write(term_pipe[1], &byte, 1) == -1 && errno == EINTR) {
  }
  errno = saved;
}

static int fail(const std::string& why) {
  std::cerr << "mesos-io-switchboard (nestguard real-mesos): " << why << std::endl;
  return EXIT_FAILURE;
}

int main(int argc, char** argv) {
  ms::IOSwitchboardServer::Flags flags;
  // The agent passes everything on the command line (and strips MESOS_* and
  // LIBPROCESS_* from the environment it hands over), so no env prefix.
  Try<flags::Warnings> loaded = flags.load(None(), &argc, &argv);
  if (flags.help) {
    std::cout << flags.usage() << std::endl;
    return EXIT_SUCCESS;
  }
  if (loaded.isError()) {
    std::cerr << flags.usage(loaded.error()) << std::endl;
    return EXIT_FAILURE;
  }

  mesos::internal::logging::initialize(argv[0], false);
  for (const flags::Warning& w : loaded->warnings) LOG(WARNING) << w.message;

  const std::vector<std::pair<const char*, const Option<int>*>> fds = {
      {"stdin_to_fd", &flags.stdin_to_fd},
      {"stdout_from_fd", &flags.stdout_from_fd},
      {"stdout_to_fd", &flags.stdout_to_fd},
      {"stderr_from_fd", &flags.stderr_from_fd},
      {"stderr_to_fd", &flags.stderr_to_fd},
  };
  for (const auto& fd : fds) {
    if (fd.second->isNone()) {
      std::cerr << flags.usage(std::string("--") + fd.first + " is required") << std::endl;
      return EXIT_FAILURE;
    }
  }
  if (flags.socket_path.isNone()) {
    // The member is socket_path, the flag's name is socket_address.
    std::cerr << flags.usage("--socket_address is required") << std::endl;
    return EXIT_FAILURE;
  }

  if (::pipe(term_pipe) != 0) return fail("pipe: " + os::strerror(errno));
  struct sigaction sa = {};
  sa.sa_handler = on_term;
  sigemptyset(&sa.sa_mask);
  if (::sigaction(SIGTERM, &sa, nullptr) != 0) {
    return fail("sigaction(SIGTERM): " + os::strerror(errno));
  }

  Try<process::Owned<ms::IOSwitchboardServer>> server = ms::IOSwitchboardServer::create(
      flags.tty, flags.stdin_to_fd.get(), flags.stdout_from_fd.get(), flags.stdout_to_fd.get(),
      flags.stderr_from_fd.get(), flags.stderr_to_fd.get(), flags.socket_path.get(),
      flags.wait_for_connection, flags.heartbeat_interval);
  if (server.isError()) return fail("creating the server: " + server.error());

  // The callback holds its own reference, so a SIGTERM that comes while
  // main is dropping its one never reaches a freed server.
  process::Owned<ms::IOSwitchboardServer> srv = server.get();
  process::io::poll(term_pipe[0], process::io::READ)
      .onAny([srv](const process::Future<short>& polled) {
        ::close(term_pipe[0]);
        if (!polled.isReady()) {
          LOG(ERROR) << "polling the SIGTERM pipe: "
                     << (polled.isFailed() ? polled.failure() : "discarded");
          std::exit(EXIT_FAILURE);
        }
        LOG(INFO) << "SIGTERM: unblocking the server";
        srv->unblock();
      });

  process::Future<Nothing> run = srv->run();
  run.await();
  server->reset();

  if (!run.isReady()) {
    LOG(ERROR) << "the server failed: " << (run.isFailed() ? run.failure() : "discarded");
    return EXIT_FAILURE;
  }
  return EXIT_SUCCESS;
}
