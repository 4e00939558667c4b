// Module<Isolator> `io_nestguard_Isolator`: nestguard's isolators (cgroups,
// namespaces, filesystem/linux, volume/sandbox_path,
// environment/credentials, hardening, disk/du) as one Mesos isolator.
//
// Parameters: passed through as a serialized mesos::Parameters; the keys
// (`isolation`, `cgroups_root`, `credentials_jwt_key`, ...) are nestguard's
// and unknown keys are refused by the library (see ffi/mesos/README.md). The shim adds
// `launcher=mesos` unless the manifest sets `launcher`: under a Mesos agent
// Mesos' launch helper runs the containers, and the library then refuses
// what that helper cannot apply (capability fields where cap_last_cap > 37,
// seccomp filters) instead of letting every launch fail; with it, `disk/du`
// samples sandboxes in the background (as Mesos' own `disk/du`) instead of
// walking one per usage() call.
//
// One Mesos call is one nestguard call. Several of them block on the file
// system (cgroups, mounts; cleanup waits for a cgroup to empty), and the
// containerizer calls isolators from its actor. process::async would run
// them on a libprocess worker, and a few slow calls then stall every actor
// of the agent (its HTTP endpoints, the status update manager ...). So the
// calls run on threads of the shim's own (BlockingPool), and their futures
// are completed by dispatching to a small libprocess actor of the shim:
// whoever waits on them (the containerizer's continuations, which may not
// all be deferred) runs on a libprocess worker as with any other future,
// never on a pool thread. The nestguard error text is read on the pool
// thread, where it was recorded.
//
// watch() never blocks a thread: it waits for the watch descriptor with
// process::io::poll and then checks without blocking. It re-checks on a
// timer only for a short while after a wake-up that reported nothing (on
// cgroup v1 the OOM event precedes the kill counter); with no event, no
// timer runs. A container the library does not know (one the agent ran
// before the isolator was enabled) gets a watch that never fires, and a
// warning, rather than a failed future that would make the agent destroy
// it. The library handle is shared with the calls in flight so it outlives
// the module if Mesos deletes it first.

#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <glog/logging.h>

#include <mesos/module/isolator.hpp>
#include <mesos/slave/isolator.hpp>

#include <process/dispatch.hpp>
#include <process/future.hpp>
#include <process/id.hpp>
#include <process/io.hpp>
#include <process/process.hpp>

#include <stout/duration.hpp>
#include <stout/hashset.hpp>
#include <stout/nothing.hpp>

#include "nestguard_mesos.hpp"

using mesos::ContainerID;
using mesos::ContainerStatus;
using mesos::Parameters;
using mesos::ResourceStatistics;
using mesos::Resources;
using mesos::slave::ContainerConfig;
using mesos::slave::ContainerLaunchInfo;
using mesos::slave::ContainerLimitation;
using mesos::slave::ContainerRecoverInfo;
using mesos::slave::ContainerState;
using mesos::slave::Isolator;

using process::Failure;
using process::Future;
using process::Promise;

namespace nestguard_mesos {
namespace {

typedef std::shared_ptr<nestguard_isolator> Handle;

// The watch handle type; a watch is
// (created with nestguard_isolator_watch_new).
typedef struct ::nestguard_isolator_watch WatchHandle;


// The shim's threads for the library's blocking calls: one more thread
// whenever every thread is busy, up to kMaxThreads (then calls queue).
// Process-wide and never destroyed: Mesos does not unload modules, and a
// call in flight may outlive the isolator that made it.
class BlockingPool
{
public:
  static BlockingPool& instance()
  {
    static BlockingPool* pool = new BlockingPool();
    return *pool;
  }

  // False when no thread can run the job (none could be started).
  bool submit(std::function<void()> job)
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // Jobs queued beyond the threads waiting for them: one more thread.
    if (jobs_.size() + 1 > waiting_ && threads_ < kMaxThreads) {
      try {
        std::thread(&BlockingPool::work, this).detach();
        ++threads_;
      } catch (const std::system_error& e) {
        LOG(WARNING) << "nestguard isolator: cannot start a thread: " << e.what();
        if (threads_ == 0) {
          return false;
        }
      }
    }
    jobs_.push_back(std::move(job));
    ready_.notify_one();
    return true;
  }

private:
  BlockingPool() {}

  void work()
  {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      ++waiting_;
      ready_.wait(lock, [this]() { return !jobs_.empty(); });
      --waiting_;
      std::function<void()> job = std::move(jobs_.front());
      jobs_.pop_front();
      lock.unlock();
      job();
      lock.lock();
    }
  }

  // Enough for a burst of cleanups that wait for cgroups to empty.
  static const size_t kMaxThreads = 32;

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> jobs_;
  size_t waiting_ = 0;
  size_t threads_ = 0;
};


// The actor that completes the futures of pool calls (see the file comment).
class CompletionProcess : public process::Process<CompletionProcess>
{
public:
  CompletionProcess()
    : process::ProcessBase(process::ID::generate("nestguard-isolator")) {}
};


// Spawned on first use (never in create(): the module may be loaded and
// created before anything runs) and kept for the life of the agent.
process::UPID completions()
{
  static std::once_flag once;
  static process::UPID pid;
  std::call_once(once, []() {
    pid = process::spawn(new CompletionProcess(), true);
  });
  return pid;
}


// Runs `f` (returning Try<T>) on the shim's pool; the future completes on
// the shim's actor, an Error as a failed future.
template <typename T, typename F>
Future<T> offWorkers(const F& f)
{
  std::shared_ptr<Promise<T>> promise = std::make_shared<Promise<T>>();
  Future<T> future = promise->future();
  const process::UPID pid = completions();
  const bool queued = BlockingPool::instance().submit([promise, f, pid]() {
    std::shared_ptr<Try<T>> result;
    try {
      result = std::make_shared<Try<T>>(f());
    } catch (const std::exception& e) {
      result = std::make_shared<Try<T>>(
          Error(std::string("nestguard isolator: ") + e.what()));
    }
    process::dispatch(pid, [promise, result]() {
      if (result->isError()) {
        promise->fail(result->error());
      } else {
        promise->set(result->get());
      }
    });
  });
  if (!queued) {
    return Failure("nestguard isolator: no thread to run the call on");
  }
  return future;
}


// `parent.child` (Mesos' own operator<< lives in libmesos, which the
// module does not link).
std::string dotted(const ContainerID& id)
{
  return id.has_parent() ? dotted(id.parent()) + "." + id.value() : id.value();
}


// Parses library bytes into a message, or the error naming `what`.
template <typename Message>
Try<Message> parse(const Bytes& bytes, const std::string& what)
{
  Message message;
  if (!message.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return Error("nestguard isolator: " + what + ": bad protobuf bytes");
  }
  return message;
}


// One container's limitation watch: the nestguard handle, the promise
// handed to Mesos, and the poll in flight. Freed (closing the descriptor)
// when the last poll callback and the module's map let go of it.
struct Watch
{
  explicit Watch(WatchHandle* _handle) : handle(_handle) {}
  ~Watch() { nestguard_isolator_watch_free(handle); }

  Watch(const Watch&) = delete;
  Watch& operator=(const Watch&) = delete;

  WatchHandle* const handle;
  Promise<ContainerLimitation> promise;

  std::mutex mutex;
  bool stopped = false;
  Future<short> poll;
};


// Re-checks after a wake-up that reported nothing: 10 ms, doubling, while
// under kLastRecheck (about 2.5 s in all), then only events again. On
// cgroup v1 the memory controller signals an OOM before it counts the kill,
// and no further event comes when it does.
const Milliseconds kFirstRecheck(10);
const Milliseconds kLastRecheck(1280);


// Waits for the descriptor (and, with `recheck`, at most that long), then
// checks; again until a limitation or stop.
void awaitLimitation(
    const std::shared_ptr<Watch>& watch,
    const Option<Duration>& recheck)
{
  Future<short> poll;
  {
    std::lock_guard<std::mutex> lock(watch->mutex);
    if (watch->stopped) {
      return;
    }
    poll = process::io::poll(
        nestguard_isolator_watch_fd(watch->handle), process::io::READ);
    if (recheck.isSome()) {
      // 0 marks the timer's wake-up (an event gives the poll's events).
      poll = poll.after(recheck.get(), [](const Future<short>& pending) {
        Future<short>(pending).discard();
        return Future<short>(static_cast<short>(0));
      });
    }
    watch->poll = poll;
  }

  // Attached outside the lock: if the poll has already completed, the
  // callback runs right here and may come back to awaitLimitation().
  poll.onAny([watch, recheck](const Future<short>& ready) {
    if (ready.isDiscarded()) {
      return;
    }
    if (ready.isFailed()) {
      watch->promise.fail("nestguard isolator: poll: " + ready.failure());
      return;
    }

    // Non-blocking; runs on the thread that completed the poll.
    Bytes limitation;
    const nestguard_result rc =
      nestguard_isolator_watch_check(watch->handle, limitation.out());
    if (rc != NESTGUARD_RESULT_OK) {
      watch->promise.fail(lastError(rc));
      return;
    }
    if (limitation.data() == nullptr) {
      Option<Duration> next = None();
      if (ready.get() != 0) {
        next = Duration(kFirstRecheck);
      } else if (recheck.isSome() && recheck.get() < kLastRecheck) {
        next = recheck.get() * 2;
      }
      awaitLimitation(watch, next);
      return;
    }
    Try<ContainerLimitation> parsed =
      parse<ContainerLimitation>(limitation, "watch");
    if (parsed.isError()) {
      watch->promise.fail(parsed.error());
    } else {
      watch->promise.set(parsed.get());
    }
  });
}


void stop(const std::shared_ptr<Watch>& watch)
{
  Future<short> poll;
  {
    std::lock_guard<std::mutex> lock(watch->mutex);
    watch->stopped = true;
    poll = watch->poll;
  }
  poll.discard();
}


class NestguardIsolator : public Isolator
{
public:
  static Try<Isolator*> create(const Parameters& given)
  {
    Parameters parameters = given;
    bool hasLauncher = false;
    for (const mesos::Parameter& parameter : given.parameter()) {
      hasLauncher = hasLauncher || parameter.key() == "launcher";
    }
    if (!hasLauncher) {
      mesos::Parameter* launcher = parameters.add_parameter();
      launcher->set_key("launcher");
      launcher->set_value("mesos");
    }
    const std::string bytes = serialize(parameters);
    nestguard_isolator* handle = nullptr;
    const nestguard_result rc =
      nestguard_isolator_new(bytesOf(bytes), bytes.size(), &handle);
    if (rc != NESTGUARD_RESULT_OK) {
      return toError("module 'io_nestguard_Isolator'", rc);
    }
    return new NestguardIsolator(Handle(handle, [](nestguard_isolator* h) {
      nestguard_isolator_free(h);
    }));
  }

  ~NestguardIsolator() override
  {
    std::map<std::string, std::shared_ptr<Watch>> watches;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      watches.swap(watches_);
    }
    for (auto& entry : watches) {
      stop(entry.second);
    }
  }

  NestguardIsolator(const NestguardIsolator&) = delete;
  NestguardIsolator& operator=(const NestguardIsolator&) = delete;

  // nestguard's isolators handle nested and standalone containers
  // (documented in the isolator ABI).
  bool supportsNesting() override { return true; }
  bool supportsStandalone() override { return true; }

  Future<Nothing> recover(
      const std::vector<ContainerState>& states,
      const hashset<ContainerID>& orphans) override
  {
    ContainerRecoverInfo info;
    for (const ContainerState& state : states) {
      *info.add_checkpointed_container_states() = state;
    }
    for (const ContainerID& orphan : orphans) {
      *info.add_orphan_container_ids() = orphan;
    }
    const std::string bytes = serialize(info);
    const Handle handle = handle_;
    return offWorkers<Nothing>([handle, bytes]() -> Try<Nothing> {
      const nestguard_result rc = nestguard_isolator_recover(
          handle.get(), bytesOf(bytes), bytes.size());
      if (rc != NESTGUARD_RESULT_OK) {
        return Error(lastError(rc));
      }
      return Nothing();
    });
  }

  Future<Option<ContainerLaunchInfo>> prepare(
      const ContainerID& containerId,
      const ContainerConfig& containerConfig) override
  {
    const std::string id = serialize(containerId);
    const std::string config = serialize(containerConfig);
    const Handle handle = handle_;
    return offWorkers<Option<ContainerLaunchInfo>>(
        [handle, id, config]() -> Try<Option<ContainerLaunchInfo>> {
          Bytes info;
          const nestguard_result rc = nestguard_isolator_prepare(
              handle.get(),
              bytesOf(id),
              id.size(),
              bytesOf(config),
              config.size(),
              info.out());
          if (rc != NESTGUARD_RESULT_OK) {
            return Error(lastError(rc));
          }
          if (info.data() == nullptr) {
            return Option<ContainerLaunchInfo>::none();
          }
          Try<ContainerLaunchInfo> parsed =
            parse<ContainerLaunchInfo>(info, "prepare");
          if (parsed.isError()) {
            return Error(parsed.error());
          }
          return Option<ContainerLaunchInfo>(parsed.get());
        });
  }

  Future<Nothing> isolate(const ContainerID& containerId, pid_t pid) override
  {
    const std::string id = serialize(containerId);
    const Handle handle = handle_;
    const uint32_t hostPid = static_cast<uint32_t>(pid);
    return offWorkers<Nothing>([handle, id, hostPid]() -> Try<Nothing> {
      const nestguard_result rc = nestguard_isolator_isolate(
          handle.get(), bytesOf(id), id.size(), hostPid);
      if (rc != NESTGUARD_RESULT_OK) {
        return Error(lastError(rc));
      }
      return Nothing();
    });
  }

  Future<ContainerLimitation> watch(const ContainerID& containerId) override
  {
    const std::string id = serialize(containerId);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto existing = watches_.find(id);
      if (existing != watches_.end()) {
        return existing->second->promise.future();
      }
    }

    // Creating the watch registers descriptors (epoll, cgroup OOM event
    // files): a few non-blocking system calls, done here like Mesos' own
    // isolators do on their actor.
    WatchHandle* handle = nullptr;
    const nestguard_result rc =
      nestguard_isolator_watch_new(handle_.get(), bytesOf(id), id.size(), &handle);
    if (rc == NESTGUARD_RESULT_ISOLATOR_UNKNOWN_CONTAINER) {
      // Not prepared or recovered by nestguard (e.g. launched before the
      // isolator was enabled): a failed watch would make the agent destroy
      // it. Mesos discards this future when the container ends.
      LOG(WARNING) << "nestguard isolator: not watching container "
                   << dotted(containerId) << ", which it does not isolate: "
                   << lastError(rc);
      return Future<ContainerLimitation>();
    }
    if (rc != NESTGUARD_RESULT_OK) {
      return Failure(lastError(rc));
    }

    std::shared_ptr<Watch> watch = std::make_shared<Watch>(handle);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      watches_[id] = watch;
    }
    awaitLimitation(watch, None());
    return watch->promise.future();
  }

  Future<Nothing> update(
      const ContainerID& containerId,
      const Resources& resourceRequests,
      const google::protobuf::Map<std::string, mesos::Value::Scalar>&
        resourceLimits) override
  {
    // The ABI takes requests and limits in the fields of a ContainerConfig.
    ContainerConfig config;
    for (const mesos::Resource& resource : resourceRequests) {
      *config.add_resources() = resource;
    }
    *config.mutable_limits() = resourceLimits;

    const std::string id = serialize(containerId);
    const std::string bytes = serialize(config);
    const Handle handle = handle_;
    return offWorkers<Nothing>([handle, id, bytes]() -> Try<Nothing> {
      const nestguard_result rc = nestguard_isolator_update(
          handle.get(), bytesOf(id), id.size(), bytesOf(bytes), bytes.size());
      if (rc != NESTGUARD_RESULT_OK) {
        return Error(lastError(rc));
      }
      return Nothing();
    });
  }

  Future<ResourceStatistics> usage(const ContainerID& containerId) override
  {
    const std::string id = serialize(containerId);
    const Handle handle = handle_;
    return offWorkers<ResourceStatistics>(
        [handle, id]() -> Try<ResourceStatistics> {
          Bytes stats;
          const nestguard_result rc = nestguard_isolator_usage(
              handle.get(), bytesOf(id), id.size(), stats.out());
          if (rc != NESTGUARD_RESULT_OK) {
            return Error(lastError(rc));
          }
          return parse<ResourceStatistics>(stats, "usage");
        });
  }

  Future<ContainerStatus> status(const ContainerID& containerId) override
  {
    const std::string id = serialize(containerId);
    const Handle handle = handle_;
    return offWorkers<ContainerStatus>([handle, id]() -> Try<ContainerStatus> {
      Bytes status;
      const nestguard_result rc = nestguard_isolator_status(
          handle.get(), bytesOf(id), id.size(), status.out());
      if (rc != NESTGUARD_RESULT_OK) {
        return Error(lastError(rc));
      }
      return parse<ContainerStatus>(status, "status");
    });
  }

  Future<Nothing> cleanup(const ContainerID& containerId) override
  {
    const std::string id = serialize(containerId);

    // The watch ends with the container; its descriptor closes once the
    // poll in flight has been discarded.
    std::shared_ptr<Watch> watch;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto existing = watches_.find(id);
      if (existing != watches_.end()) {
        watch = existing->second;
        watches_.erase(existing);
      }
    }
    if (watch) {
      stop(watch);
    }

    const Handle handle = handle_;
    return offWorkers<Nothing>([handle, id]() -> Try<Nothing> {
      const nestguard_result rc =
        nestguard_isolator_cleanup(handle.get(), bytesOf(id), id.size());
      if (rc != NESTGUARD_RESULT_OK) {
        return Error(lastError(rc));
      }
      return Nothing();
    });
  }

private:
  explicit NestguardIsolator(const Handle& handle) : handle_(handle) {}

  const Handle handle_;

  std::mutex mutex_;
  // Watches by serialized ContainerID.
  std::map<std::string, std::shared_ptr<Watch>> watches_;
};


Isolator* createIsolator(const Parameters& parameters)
{
  try {
    Try<Isolator*> isolator = NestguardIsolator::create(parameters);
    if (isolator.isError()) {
      LOG(ERROR) << isolator.error();
      return nullptr;
    }
    return isolator.get();
  } catch (const std::exception& e) {
    LOG(ERROR) << "module 'io_nestguard_Isolator': " << e.what();
    return nullptr;
  }
}

} // namespace
} // namespace nestguard_mesos


NESTGUARD_MODULE_EXPORT mesos::modules::Module<Isolator> io_nestguard_Isolator(
    MESOS_MODULE_API_VERSION,
    MESOS_VERSION,
    nestguard_mesos::kAuthorName,
    nestguard_mesos::kAuthorEmail,
    "nestguard isolators: nested cgroups, namespaces, sandbox volumes, "
    "credentials, hardening (libnestguard.so).",
    nestguard_mesos::compatible,
    nestguard_mesos::createIsolator);
