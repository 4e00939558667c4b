// A mesos-agent built from the PyPI libmesos 1.11.0 binary. Only what the
// nestguard checks need: flags, logging, libprocess with the agent's HTTP
// authentication realms, modules (--modules), hooks, the Mesos containerizer,
// a master detector, the authorizer (module or --acls), the Slave. Left out:
// firewall rules, systemd, volume gids, the CSI server, executor domain
// sockets and libprocess' endpoint authorization callbacks (the factory that
// makes them is not in the binary); the v1 API authorizes through the
// authorizer's ObjectApprovers without them.
#include <cstdlib>
#include <iostream>
#include <string>

#include <mesos/authorizer/authorizer.hpp>
#include <mesos/master/detector.hpp>
#include <mesos/module/anonymous.hpp>
#include <mesos/secret/resolver.hpp>
#include <mesos/slave/qos_controller.hpp>
#include <mesos/slave/resource_estimator.hpp>

#include <process/owned.hpp>
#include <process/process.hpp>

#include <stout/os.hpp>

#include "authentication/executor/jwt_secret_generator.hpp"
#include "common/http.hpp"
#include "hook/manager.hpp"
#include "logging/logging.hpp"
#include "module/manager.hpp"
#include "slave/csi_server.hpp"
#include "slave/containerizer/containerizer.hpp"
#include "slave/containerizer/fetcher.hpp"
#include "slave/flags.hpp"
#include "slave/gc.hpp"
#include "slave/slave.hpp"
#include "slave/task_status_update_manager.hpp"
#include "files/files.hpp"
#include "version/version.hpp"

namespace ms = mesos::internal::slave;

static int die(const std::string& what, const std::string& why) {
  std::cerr << "mesos-agent (nestguard real-mesos): " << what << ": " << why << std::endl;
  return EXIT_FAILURE;
}

int main(int argc, char** argv) {
  GOOGLE_PROTOBUF_VERIFY_VERSION;

  ms::Flags flags;
  Try<flags::Warnings> loaded = flags.load("MESOS_", argc, argv);
  if (flags.help) {
    std::cout << flags.usage() << std::endl;
    return EXIT_SUCCESS;
  }
  if (loaded.isError()) return die("flags", loaded.error());

  mesos::internal::logging::initialize(argv[0], true, flags);
  for (const flags::Warning& w : loaded->warnings) LOG(WARNING) << w.message;

  if (flags.ip.isSome()) os::setenv("LIBPROCESS_IP", flags.ip.get());
  os::setenv("LIBPROCESS_PORT", stringify(flags.port));

  const std::string id = process::ID::generate("slave");
  if (!process::initialize(id, ms::READWRITE_HTTP_AUTHENTICATION_REALM,
                           ms::READONLY_HTTP_AUTHENTICATION_REALM)) {
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

  auto* fetcher = new ms::Fetcher(flags);
  auto* gc = new ms::GarbageCollector(flags.work_dir);
  Try<mesos::SecretResolver*> resolver = mesos::SecretResolver::create(flags.secret_resolver);
  if (resolver.isError()) return die("secret resolver", resolver.error());
  Try<mesos::internal::PendingFutureTracker*> tracker =
      mesos::internal::PendingFutureTracker::create();
  if (tracker.isError()) return die("future tracker", tracker.error());

  mesos::SecretGenerator* secretGenerator = nullptr;
  if (flags.jwt_secret_key.isSome()) {
    Try<std::string> key = os::read(flags.jwt_secret_key.get());
    if (key.isError()) return die("--jwt_secret_key", key.error());
    secretGenerator =
        new mesos::authentication::executor::JWTSecretGenerator(key.get());
  }

  process::Owned<ms::CSIServer> csiServer;
  Try<ms::Containerizer*> containerizer = ms::Containerizer::create(
      flags, false, fetcher, gc, resolver.get(), nullptr, tracker.get(), csiServer.get());
  if (containerizer.isError()) return die("containerizer", containerizer.error());

  Try<mesos::master::detector::MasterDetector*> detector =
      mesos::master::detector::MasterDetector::create(
          flags.master.isSome() ? flags.master->value : Option<std::string>::none(),
          flags.master_detector, flags.zk_session_timeout);
  if (detector.isError()) return die("master detector", detector.error());

  Option<mesos::Authorizer*> authorizer = None();
  Result<mesos::Authorizer*> created = None();
  if (flags.authorizer != ms::DEFAULT_AUTHORIZER) {
    LOG(INFO) << "Creating '" << flags.authorizer << "' authorizer";
    created = mesos::Authorizer::create(flags.authorizer);
  } else if (flags.acls.isSome()) {
    created = mesos::Authorizer::create(flags.acls.get());
  }
  if (created.isError()) return die("authorizer", created.error());
  if (created.isSome()) authorizer = created.get();

  auto* files = new mesos::internal::Files(
      ms::READONLY_HTTP_AUTHENTICATION_REALM, authorizer);
  auto* statusUpdates = new ms::TaskStatusUpdateManager(flags);
  Try<mesos::slave::ResourceEstimator*> estimator =
      mesos::slave::ResourceEstimator::create(flags.resource_estimator);
  if (estimator.isError()) return die("resource estimator", estimator.error());
  Try<mesos::slave::QoSController*> qos =
      mesos::slave::QoSController::create(flags.qos_controller);
  if (qos.isError()) return die("qos controller", qos.error());

  auto* slave = new ms::Slave(id, flags, detector.get(), containerizer.get(), files, gc,
                              statusUpdates, estimator.get(), qos.get(), secretGenerator,
                              nullptr, tracker.get(), std::move(csiServer), None(),
                              authorizer);
  process::spawn(slave);
  process::wait(slave->self());
  return EXIT_SUCCESS;
}
