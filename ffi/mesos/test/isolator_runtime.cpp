// Runtime test of io_nestguard_Isolator on a real libprocess, run by
// check-compile.sh when LIBPROCESS_LIB names a libprocess built from the
// same Mesos sources (see README.md). It drives the module through every
// Mesos call with the `disk/du` isolator only (no cgroup, no mount): each
// call goes through process::async, errors come back as failed futures
// with the library's text, and watch() polls its descriptor until cleanup
// ends it.

#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <mesos/module/isolator.hpp>
#include <mesos/slave/isolator.hpp>

#include <process/clock.hpp>
#include <process/future.hpp>
#include <process/process.hpp>

#include <stout/duration.hpp>
#include <stout/hashset.hpp>

namespace {

int failures = 0;
int passes = 0;

void expect(bool ok, const std::string& what)
{
  std::cout << (ok ? "ok   " : "FAIL ") << what << std::endl;
  ++(ok ? passes : failures);
}

template <typename T>
bool settles(const process::Future<T>& future)
{
  return future.await(Seconds(30)) && !future.isPending();
}

mesos::Parameters disk()
{
  mesos::Parameters parameters;
  mesos::Parameter* p = parameters.add_parameter();
  p->set_key("isolation");
  p->set_value("disk/du");
  return parameters;
}

} // namespace


int main(int argc, char** argv)
{
  if (argc != 2) {
    std::cerr << "usage: " << argv[0] << " LIBNESTGUARD_MESOS_SO" << std::endl;
    return 2;
  }
  process::initialize();

  void* library = dlopen(argv[1], RTLD_NOW);
  if (library == nullptr) {
    std::cerr << "dlopen: " << dlerror() << std::endl;
    return 1;
  }
  auto* module = static_cast<mesos::modules::Module<mesos::slave::Isolator>*>(
      dlsym(library, "io_nestguard_Isolator"));
  expect(module != nullptr, "dlsym io_nestguard_Isolator");
  if (module == nullptr) {
    return 1;
  }
  std::unique_ptr<mesos::slave::Isolator> isolator(module->create(disk()));
  expect(isolator != nullptr, "created with isolation=disk/du");
  if (!isolator) {
    return 1;
  }

  char sandbox[] = "/tmp/nestguard-shim-sandbox.XXXXXX";
  if (mkdtemp(sandbox) == nullptr) {
    std::cerr << "mkdtemp failed" << std::endl;
    return 1;
  }
  const std::string file = std::string(sandbox) + "/data";
  std::ofstream(file) << std::string(64 * 1024, 'x');

  mesos::ContainerID id;
  id.set_value("nestguard-shim-" + std::to_string(getpid()));
  mesos::slave::ContainerConfig config;
  config.set_directory(sandbox);
  config.mutable_command_info()->set_value("true");

  process::Future<Nothing> recovered = isolator->recover(
      std::vector<mesos::slave::ContainerState>(), hashset<mesos::ContainerID>());
  expect(settles(recovered) && recovered.isReady(), "recover() ready");

  process::Future<mesos::ResourceStatistics> unknown = isolator->usage(id);
  expect(settles(unknown) && unknown.isFailed() &&
           unknown.failure().find("unknown container") != std::string::npos,
         "usage() of an unknown container fails with the library's text (" +
           (unknown.isFailed() ? unknown.failure() : std::string("?")) + ")");

  process::Future<Option<mesos::slave::ContainerLaunchInfo>> prepared =
    isolator->prepare(id, config);
  expect(settles(prepared) && prepared.isReady() && prepared->isNone(),
         "prepare() ready, nothing to add (None)");

  process::Future<mesos::slave::ContainerLimitation> limitation =
    isolator->watch(id);
  expect(limitation.isPending(), "watch() pending");

  process::Future<Nothing> isolated = isolator->isolate(id, getpid());
  expect(settles(isolated) && isolated.isReady(), "isolate() ready");

  process::Future<mesos::ResourceStatistics> usage = isolator->usage(id);
  expect(settles(usage) && usage.isReady() &&
           usage->disk_used_bytes() >= 64 * 1024,
         "usage() counts the sandbox (" +
           (usage.isReady() ? std::to_string(usage->disk_used_bytes())
                            : std::string("?")) + " bytes)");

  // No requests (Resources' other constructors live in libmesos): the
  // update goes through and leaves no disk limit.
  process::Future<Nothing> updated = isolator->update(id, mesos::Resources());
  expect(settles(updated) && updated.isReady(), "update() ready");
  usage = isolator->usage(id);
  expect(settles(usage) && usage.isReady() && !usage->has_disk_limit_bytes(),
         "usage() after update() has no disk limit");

  process::Future<mesos::ContainerStatus> status = isolator->status(id);
  expect(settles(status) && status.isReady(), "status() ready");

  process::Future<Nothing> cleaned = isolator->cleanup(id);
  expect(settles(cleaned) && cleaned.isReady(), "cleanup() ready");
  expect(limitation.isPending(), "watch() never fired (no limitation)");

  isolator.reset();
  unlink(file.c_str());
  rmdir(sandbox);

  std::cout << passes << " passed, " << failures << " failed" << std::endl;
  return failures == 0 ? 0 : 1;
}
