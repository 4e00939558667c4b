// A standalone mesos-master built from the PyPI libmesos 1.11.0 binary: flags,
// logging, libprocess with the master's realms, modules, the hierarchical DRF
// allocator, an in-memory registry, a standalone contender/detector that
// appoint this master, the authorizer, Files, the Master. Left out: firewall
// rules, ZooKeeper and the replicated log, the agent removal rate limiter and
// libprocess' endpoint authorization callbacks (not in the binary).
#include <cstdlib>
#include <iostream>
#include <string>

#include <mesos/authorizer/authorizer.hpp>
#include <mesos/master/contender.hpp>
#include <mesos/master/detector.hpp>
#include <mesos/state/in_memory.hpp>
#include <mesos/state/state.hpp>

#include <process/process.hpp>

#include <stout/os.hpp>

#include "common/http.hpp"
#include "files/files.hpp"
#include "hook/manager.hpp"
#include "logging/logging.hpp"
#include "master/allocator/mesos/hierarchical.hpp"
#include "master/detector/standalone.hpp"
#include "master/flags.hpp"
#include "master/master.hpp"
#include "master/registrar.hpp"
#include "module/manager.hpp"
#include "version/version.hpp"

namespace mm = mesos::internal::master;

static int die(const std::string& what, const std::string& why) {
  std::cerr << "mesos-master (nestguard real-mesos): " << what << ": " << why << std::endl;
  return EXIT_FAILURE;
}

int main(int argc, char** argv) {
  GOOGLE_PROTOBUF_VERIFY_VERSION;

  mm::Flags flags;
  Try<flags::Warnings> loaded = flags.load("MESOS_", argc, argv);
  if (flags.help) {
    std::cout << flags.usage() << std::endl;
    return EXIT_SUCCESS;
  }
  if (loaded.isError()) return die("flags", loaded.error());
  if (flags.registry != "in_memory") return die("--registry", "only in_memory is built in");

  mesos::internal::logging::initialize(argv[0], true, flags);
  for (const flags::Warning& w : loaded->warnings) LOG(WARNING) << w.message;

  if (flags.ip.isSome()) os::setenv("LIBPROCESS_IP", flags.ip.get());
  os::setenv("LIBPROCESS_PORT", stringify(flags.port));

  if (!process::initialize("master", mm::READWRITE_HTTP_AUTHENTICATION_REALM,
                           mm::READONLY_HTTP_AUTHENTICATION_REALM)) {
    return die("libprocess", "already initialized");
  }
  process::spawn(new mesos::internal::VersionProcess(), true);

  if (flags.modules.isSome()) {
    Try<Nothing> r = mesos::modules::ModuleManager::load(flags.modules.get());
    if (r.isError()) return die("modules", r.error());
  }
  if (flags.hooks.isSome()) {
    Try<Nothing> r = mesos::internal::HookManager::initialize(flags.hooks.get());
    if (r.isError()) return die("hooks", r.error());
  }

  // Allocator::create (by name) is not in the binary; the DRF instantiation is.
  Try<mesos::allocator::Allocator*> allocator =
      mm::allocator::HierarchicalDRFAllocator::create();
  if (allocator.isError()) return die("allocator", allocator.error());

  auto* storage = new mesos::state::InMemoryStorage();
  auto* state = new mesos::state::State(storage);
  auto* registrar =
      new mm::Registrar(flags, state, mm::READONLY_HTTP_AUTHENTICATION_REALM);

  Try<mesos::master::contender::MasterContender*> contender =
      mesos::master::contender::MasterContender::create(None(), flags.master_contender,
                                                         flags.zk_session_timeout);
  if (contender.isError()) return die("contender", contender.error());
  Try<mesos::master::detector::MasterDetector*> detector =
      mesos::master::detector::MasterDetector::create(None(), flags.master_detector,
                                                       flags.zk_session_timeout);
  if (detector.isError()) return die("detector", detector.error());

  Option<mesos::Authorizer*> authorizer = None();
  Result<mesos::Authorizer*> created = None();
  if (flags.authorizers != mm::DEFAULT_AUTHORIZER) {
    created = mesos::Authorizer::create(flags.authorizers);
  } else if (flags.acls.isSome()) {
    created = mesos::Authorizer::create(flags.acls.get());
  }
  if (created.isError()) return die("authorizer", created.error());
  if (created.isSome()) authorizer = created.get();

  auto* files =
      new mesos::internal::Files(mm::READONLY_HTTP_AUTHENTICATION_REALM, authorizer);
  auto* master = new mm::Master(allocator.get(), registrar, files, contender.get(),
                                detector.get(), authorizer, None(), flags);
  if (flags.master_detector.isNone()) {
    dynamic_cast<mesos::master::detector::StandaloneMasterDetector*>(detector.get())
        ->appoint(master->info());
  }
  process::spawn(master);
  process::wait(master->self());
  return EXIT_SUCCESS;
}
