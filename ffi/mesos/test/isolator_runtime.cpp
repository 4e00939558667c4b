// Runtime test of io_nestguard_Isolator on a real libprocess, run by
// check-compile.sh when LIBPROCESS_LIB names a libprocess built from the
// same Mesos sources (see ffi/mesos/README.md). It drives the module through every
// Mesos call with the `disk/du` isolator only (no cgroup, no mount): each
// call runs on the shim's own threads, errors come back as failed futures
// with the library's text, usage() reports the background disk sample (no
// sandbox walk per call), and watch() polls its descriptor until cleanup
// ends it. While 32 usage() calls walk a large sandbox (launcher=nestguard:
// one walk per call), an unrelated libprocess actor still answers at once:
// the walks hold no libprocess worker. As root with a cgroup v1 memory
// controller it also runs the `cgroups` isolator: watch() of a container
// it does not know stays pending (the agent would destroy the container on
// a failure), a process over its 32 MB limit is OOM-killed and watch()
// completes with REASON_CONTAINER_LIMITATION_MEMORY; every cgroup it made
// is removed.

#include <dlfcn.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <mesos/module/isolator.hpp>
#include <mesos/slave/isolator.hpp>

#include <process/async.hpp>
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

mesos::Parameters disk(const std::string& launcher = "")
{
  mesos::Parameters parameters;
  mesos::Parameter* p = parameters.add_parameter();
  p->set_key("isolation");
  p->set_value("disk/du");
  if (!launcher.empty()) {
    p = parameters.add_parameter();
    p->set_key("launcher");
    p->set_value(launcher);
  }
  return parameters;
}


mesos::ContainerID containerId(const std::string& value)
{
  mesos::ContainerID id;
  id.set_value(value);
  return id;
}


mesos::slave::ContainerConfig containerConfig(
    const std::string& sandbox, const std::string& command)
{
  mesos::slave::ContainerConfig config;
  config.set_directory(sandbox);
  config.mutable_command_info()->set_value(command);
  return config;
}


double secondsSince(const std::chrono::steady_clock::time_point& start)
{
  return std::chrono::duration<double>(
           std::chrono::steady_clock::now() - start).count();
}


// 32 concurrent usage() calls, each walking a sandbox of 20000 files
// (launcher=nestguard: no background sampling), and meanwhile one no-op on
// an unrelated libprocess actor. libprocess has a worker per core (8 at
// least); calls run on its workers would hold them all, and the no-op would
// wait for most of the walks.
void workerChecks(mesos::modules::Module<mesos::slave::Isolator>* module)
{
  std::unique_ptr<mesos::slave::Isolator> isolator(
      module->create(disk("nestguard")));
  expect(isolator != nullptr, "created with launcher=nestguard (walk per usage)");
  if (!isolator) {
    return;
  }
  char sandbox[] = "/tmp/nestguard-shim-walk.XXXXXX";
  if (mkdtemp(sandbox) == nullptr) {
    std::cerr << "mkdtemp failed" << std::endl;
    return;
  }
  const int files = 20000;
  for (int i = 0; i < files; ++i) {
    std::ofstream(std::string(sandbox) + "/f" + std::to_string(i)) << "x";
  }
  const mesos::ContainerID id = containerId("nestguard-shim-walk");
  process::Future<Option<mesos::slave::ContainerLaunchInfo>> prepared =
    isolator->prepare(id, containerConfig(sandbox, "true"));
  expect(settles(prepared) && prepared.isReady(), "walk: prepare() ready");

  const auto start = std::chrono::steady_clock::now();
  std::vector<process::Future<mesos::ResourceStatistics>> walks;
  for (int i = 0; i < 32; ++i) {
    walks.push_back(isolator->usage(id));
  }
  process::Future<Nothing> unrelated = process::async([]() {});
  settles(unrelated);
  const double unrelatedSeconds = secondsSince(start);
  bool all = true;
  for (const auto& walk : walks) {
    all = settles(walk) && walk.isReady() && all;
  }
  const double walkSeconds = secondsSince(start);
  expect(all, "walk: 32 usage() calls ready");
  expect(unrelated.isReady() && unrelatedSeconds < walkSeconds / 4,
         "an unrelated actor answered in " + std::to_string(unrelatedSeconds) +
           " s while 32 usage() walks took " + std::to_string(walkSeconds) +
           " s (under a quarter: no libprocess worker was held)");

  process::Future<Nothing> cleaned = isolator->cleanup(id);
  settles(cleaned);
  isolator.reset();
  const std::string remove = std::string("rm -rf ") + sandbox;
  if (system(remove.c_str()) != 0) {
    std::cerr << "could not remove " << sandbox << std::endl;
  }
}

std::string firstLine(const std::string& text)
{
  return text.substr(0, text.find('\n'));
}


mesos::Resource scalar(const std::string& name, double value)
{
  mesos::Resource resource;
  resource.set_name(name);
  resource.set_type(mesos::Value::SCALAR);
  resource.mutable_scalar()->set_value(value);
  return resource;
}


// Removes the cgroups under `root` in every hierarchy (deepest first).
void removeCgroups(const std::string& root)
{
  const std::string command =
    "for d in /sys/fs/cgroup/*/" + root + " /sys/fs/cgroup/" + root +
    "; do [ -d \"$d\" ] && find \"$d\" -depth -type d -exec rmdir {} + ; "
    "done 2>/dev/null; true";
  if (system(command.c_str()) != 0) {
    std::cerr << "could not remove cgroups under " << root << std::endl;
  }
}


bool cgroupExists(const std::string& root)
{
  const std::string command =
    "ls -d /sys/fs/cgroup/*/" + root + "/*/ >/dev/null 2>&1";
  return system(command.c_str()) == 0;
}


// A process over its memory limit: OOM kill → watch() → limitation.
void oomChecks(mesos::modules::Module<mesos::slave::Isolator>* module,
               const std::string& sandbox)
{
  struct stat memory;
  if (geteuid() != 0 || stat("/sys/fs/cgroup/memory", &memory) != 0) {
    std::cout << "SKIP OOM watch: needs root and /sys/fs/cgroup/memory"
              << std::endl;
    return;
  }

  const std::string root = "nestguard-shim-" + std::to_string(getpid());
  mesos::Parameters parameters;
  mesos::Parameter* p = parameters.add_parameter();
  p->set_key("isolation");
  p->set_value("cgroups");
  p = parameters.add_parameter();
  p->set_key("cgroups_root");
  p->set_value(root);
  std::unique_ptr<mesos::slave::Isolator> isolator(module->create(parameters));
  expect(isolator != nullptr, "created with isolation=cgroups");
  if (!isolator) {
    return;
  }

  process::Future<mesos::slave::ContainerLimitation> unknown =
    isolator->watch(containerId("nestguard-shim-never-prepared"));
  unknown.await(Milliseconds(200));
  expect(unknown.isPending(),
         "watch() of a container the isolator does not know stays pending");

  const mesos::ContainerID id = containerId("nestguard-shim-oom");
  mesos::slave::ContainerConfig config = containerConfig(sandbox, "hog");
  *config.add_resources() = scalar("mem", 32);
  *config.add_resources() = scalar("cpus", 0.5);

  process::Future<Option<mesos::slave::ContainerLaunchInfo>> prepared =
    isolator->prepare(id, config);
  settles(prepared);
  expect(prepared.isReady(),
         "cgroups prepare() ready" +
           (prepared.isFailed() ? " (" + prepared.failure() + ")"
                                : std::string()));
  if (!prepared.isReady()) {
    removeCgroups(root);
    return;
  }

  process::Future<mesos::slave::ContainerLimitation> limitation =
    isolator->watch(id);

  // The hog waits for the go-ahead, then touches 64 MB.
  int go[2];
  if (pipe(go) != 0) {
    std::cerr << "pipe failed" << std::endl;
    return;
  }
  const pid_t hog = fork();
  if (hog == 0) {
    close(go[1]);
    char byte;
    if (read(go[0], &byte, 1) != 1) {
      _exit(3);
    }
    const size_t size = 64 * 1024 * 1024;
    char* memory = static_cast<char*>(malloc(size));
    if (memory == nullptr) {
      _exit(4);
    }
    memset(memory, 1, size);
    _exit(memory[size - 1] == 1 ? 0 : 5);
  }
  close(go[0]);

  process::Future<Nothing> isolated = isolator->isolate(id, hog);
  settles(isolated);
  expect(isolated.isReady(), "cgroups isolate() moved the hog in");
  if (write(go[1], "x", 1) != 1) {
    std::cerr << "write failed" << std::endl;
  }
  close(go[1]);

  const bool fired = limitation.await(Seconds(60)) && limitation.isReady();
  expect(fired &&
           limitation->reason() ==
             mesos::TaskStatus::REASON_CONTAINER_LIMITATION_MEMORY,
         "watch() completes with REASON_CONTAINER_LIMITATION_MEMORY" +
           (fired ? " (" + firstLine(limitation->message()) + ")"
                  : limitation.isFailed() ? " (failed: " + limitation.failure() + ")"
                  : limitation.isPending() ? " (still pending)"
                  : " (discarded)"));

  int status = 0;
  if (!fired) {
    kill(hog, SIGKILL);
  }
  waitpid(hog, &status, 0);
  expect(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
         "the hog was killed with SIGKILL");

  process::Future<Nothing> cleaned = isolator->cleanup(id);
  settles(cleaned);
  expect(cleaned.isReady(), "cgroups cleanup() ready");
  expect(!cgroupExists(root), "the container's cgroups are gone");
  isolator.reset();
  removeCgroups(root);
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

  const mesos::ContainerID id =
    containerId("nestguard-shim-" + std::to_string(getpid()));
  const mesos::slave::ContainerConfig config = containerConfig(sandbox, "true");

  process::Future<Nothing> recovered = isolator->recover(
      std::vector<mesos::slave::ContainerState>(), hashset<mesos::ContainerID>());
  expect(settles(recovered) && recovered.isReady(), "recover() ready");

  process::Future<mesos::ResourceStatistics> unknown = isolator->usage(id);
  settles(unknown); // before the message below reads it
  expect(unknown.isFailed() &&
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

  // The first sample is taken in the background right after prepare().
  process::Future<mesos::ResourceStatistics> usage;
  for (int i = 0; i < 200; ++i) {
    usage = isolator->usage(id);
    if (!settles(usage) || !usage.isReady() || usage->has_disk_used_bytes()) {
      break;
    }
    usleep(25 * 1000);
  }
  expect(usage.isReady() && usage->disk_used_bytes() >= 64 * 1024,
         "usage() reports the background sample of the sandbox (" +
           (usage.isReady() ? std::to_string(usage->disk_used_bytes())
                            : std::string("?")) + " bytes)");
  const uint64_t sampled = usage.isReady() ? usage->disk_used_bytes() : 0;
  std::ofstream(std::string(sandbox) + "/more") << std::string(1024 * 1024, 'y');
  usage = isolator->usage(id);
  expect(settles(usage) && usage.isReady() &&
           usage->disk_used_bytes() == sampled,
         "usage() does not walk the sandbox per call (1 MB more, same sample "
         "until the next 15 s interval)");

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
  workerChecks(module);
  oomChecks(module, sandbox);
  unlink(file.c_str());
  unlink((std::string(sandbox) + "/more").c_str());
  rmdir(sandbox);

  std::cout << passes << " passed, " << failures << " failed" << std::endl;
  return failures == 0 ? 0 : 1;
}
