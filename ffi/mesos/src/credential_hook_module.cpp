// Module<Hook> `io_nestguard_CredentialHook`: gives each executor its
// credentials through slaveExecutorEnvironmentDecorator().
//
// Parameters:
//   http_credentials        required; the agent's --http_credentials file
//                           (a path, or a file:// URL as Mesos flags take)
//   allow_open_permissions  optional, default false; accept a credentials
//                           file readable by group or others
//
// Mode. Mesos calls slaveExecutorEnvironmentDecorator() with the
// ExecutorInfo only: no ContainerID (the agent picks the executor's
// container id itself and does not pass it), no FrameworkInfo, no sandbox
// path. An executor token names the executor's container in its `cid`
// claim, so it cannot be made here; the hook therefore injects in *secret*
// mode: MESOS_PRINCIPAL and MESOS_SECRET. Token mode is what the Mesos agent
// itself does when started with --jwt_secret_key (it sets
// MESOS_EXECUTOR_AUTHENTICATION_TOKEN for every executor), and
// io_nestguard_Isolator hands the same credentials to nested containers
// from prepare(), which does receive the ContainerID.
//
// Whose secret. Only the framework's own principal (FrameworkInfo.principal,
// which the master sets to the principal the framework authenticated as).
// The environment decorator cannot see FrameworkInfo, but the agent calls
// slaveRunTaskLabelDecorator() (which does see it) for every task before it
// launches the task's executor: the hook remembers framework id ->
// principal there (returning no labels, so the task's labels stay as they
// are) and passes that principal along. An executor whose framework it has
// not seen, or whose framework has no principal, gets nothing: the
// decorator fails (fail closed). The ExecutorInfo label `principal` is
// written by the framework, so it may name another principal only where
// the operator's `executor_principals` mapping allows it.
//
// Parameters:
//   executor_principals     optional; JSON {"framework-principal":
//                           ["principal", ...]} inline, or a path / file://
//                           URL of a file holding it
//
// The injector's ABI validates a ContainerID even in secret mode, where the
// id is not used; the hook passes a fixed placeholder id for that.
//
// The returned environment is the executor's own environment copied with
// the credential variables replacing same-named ones and appended, which is
// what Mesos' hook manager expects (it replaces the executor environment
// with the returned one). It holds a secret in clear: never logged.

#include <map>
#include <mutex>
#include <string>

#include <glog/logging.h>

#include <mesos/hook.hpp>
#include <mesos/module/hook.hpp>

#include <stout/result.hpp>

#include "nestguard_mesos.hpp"

using mesos::Environment;
using mesos::ExecutorInfo;
using mesos::Hook;
using mesos::Parameters;

namespace nestguard_mesos {
namespace {

// Stands in for the executor's ContainerID the hook is not given (see the
// file comment). A valid Mesos container id; secret mode never reads it.
const char kPlaceholderContainerId[] = "nestguard-hook-no-container-id";


class NestguardCredentialHook : public Hook
{
public:
  static Try<Hook*> create(const Parameters& parameters)
  {
    static const char* const known[] = {
      "http_credentials", "allow_open_permissions", "executor_principals",
      nullptr};
    const std::string module = "io_nestguard_CredentialHook";
    Try<ModuleParameters> params =
      ModuleParameters::parse(parameters, known, module);
    if (params.isError()) {
      return Error(params.error());
    }

    Option<std::string> path = params->get("http_credentials");
    if (path.isSome() && path->compare(0, 7, "file://") == 0) {
      path = path->substr(7);
    }
    if (path.isNone() || path->empty()) {
      return Error(
          "module '" + module + "': parameter 'http_credentials' (the "
          "agent's --http_credentials file) is required");
    }
    const Try<bool> open = params->getBool("allow_open_permissions", false);
    if (open.isError()) {
      return Error(open.error());
    }

    nestguard_credentials* credentials = nullptr;
    nestguard_result rc = nestguard_credentials_load(
        path->data(), path->size(), open.get(), &credentials);
    if (rc != NESTGUARD_RESULT_OK) {
      return toError("module '" + module + "': credentials refused", rc);
    }

    nestguard_credential_injector* injector = nullptr;
    nestguard_injection_mode mode = NESTGUARD_INJECTION_MODE_AUTO;
    rc = nestguard_credential_injector_new(
        NESTGUARD_INJECTION_MODE_SECRET,
        nullptr,
        0,
        open.get(),
        credentials,
        &injector,
        &mode);
    // The injector keeps its own reference to the credential set.
    nestguard_credentials_free(credentials);
    if (rc != NESTGUARD_RESULT_OK) {
      return toError("module '" + module + "': injector refused", rc);
    }

    const Option<std::string> mapping = params->get("executor_principals");
    if (mapping.isSome()) {
      rc = nestguard_credential_injector_set_executor_principals(
          injector, mapping->data(), mapping->size());
      if (rc != NESTGUARD_RESULT_OK) {
        nestguard_credential_injector_free(injector);
        return toError(
            "module '" + module + "': parameter 'executor_principals'", rc);
      }
    }

    return new NestguardCredentialHook(injector);
  }

  ~NestguardCredentialHook() override
  {
    nestguard_credential_injector_free(injector_);
  }

  NestguardCredentialHook(const NestguardCredentialHook&) = delete;
  NestguardCredentialHook& operator=(const NestguardCredentialHook&) = delete;

  // Remembers the framework's principal for its executors (see the file
  // comment); the task's labels are left as they are.
  Result<mesos::Labels> slaveRunTaskLabelDecorator(
      const mesos::TaskInfo&,
      const ExecutorInfo&,
      const mesos::FrameworkInfo& frameworkInfo,
      const mesos::SlaveInfo&) override
  {
    if (frameworkInfo.has_id()) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (frameworkInfo.has_principal()) {
        principals_[frameworkInfo.id().value()] = frameworkInfo.principal();
      } else {
        principals_.erase(frameworkInfo.id().value());
      }
    }
    return None();
  }

  Result<Environment> slaveExecutorEnvironmentDecorator(
      const ExecutorInfo& executorInfo) override
  {
    mesos::FrameworkInfo frameworkInfo;
    if (executorInfo.has_framework_id()) {
      *frameworkInfo.mutable_id() = executorInfo.framework_id();
      std::lock_guard<std::mutex> lock(mutex_);
      const auto known = principals_.find(executorInfo.framework_id().value());
      if (known != principals_.end()) {
        frameworkInfo.set_principal(known->second);
      }
    }
    // Without a principal the library refuses (no principal): fail closed.
    mesos::ContainerID containerId;
    containerId.set_value(kPlaceholderContainerId);

    const std::string executor = serialize(executorInfo);
    const std::string framework = serialize(frameworkInfo);
    const std::string container = serialize(containerId);

    Bytes environment;
    const nestguard_result rc =
      nestguard_credential_injector_decorate_executor_environment(
          injector_,
          bytesOf(executor),
          executor.size(),
          bytesOf(framework),
          framework.size(),
          bytesOf(container),
          container.size(),
          environment.out());
    if (rc != NESTGUARD_RESULT_OK) {
      return toError("nestguard credential injection", rc);
    }

    Environment result;
    if (!result.ParseFromArray(
            environment.data(), static_cast<int>(environment.size()))) {
      return Error("nestguard credential injection: bad Environment bytes");
    }
    return result;
  }

private:
  explicit NestguardCredentialHook(nestguard_credential_injector* injector)
    : injector_(injector) {}

  nestguard_credential_injector* const injector_;

  // Framework id -> FrameworkInfo.principal, from slaveRunTaskLabelDecorator.
  std::mutex mutex_;
  std::map<std::string, std::string> principals_;
};


Hook* createHook(const Parameters& parameters)
{
  try {
    Try<Hook*> hook = NestguardCredentialHook::create(parameters);
    if (hook.isError()) {
      LOG(ERROR) << hook.error();
      return nullptr;
    }
    return hook.get();
  } catch (const std::exception& e) {
    LOG(ERROR) << "module 'io_nestguard_CredentialHook': " << e.what();
    return nullptr;
  }
}

} // namespace
} // namespace nestguard_mesos


NESTGUARD_MODULE_EXPORT mesos::modules::Module<Hook> io_nestguard_CredentialHook(
    MESOS_MODULE_API_VERSION,
    MESOS_VERSION,
    nestguard_mesos::kAuthorName,
    nestguard_mesos::kAuthorEmail,
    "Executor credential injection by nestguard (libnestguard.so).",
    nestguard_mesos::compatible,
    nestguard_mesos::createHook);
