// Smoke test of libnestguard_mesos.so with real Mesos protobufs, run by
// ffi/mesos/check-compile.sh (not by the test suite: it needs the Mesos
// sources). It loads the library the way Mesos' module manager does
// (dlopen, then dlsym of the module name, read as a ModuleBase), checks the
// fields Mesos verifies, creates each module from parameters and calls it.
//
// No libprocess runtime is linked: only calls whose futures are already
// completed are made (the Authorizer answers synchronously), and the
// Isolator is only created and asked what it supports; the libprocess
// symbols the modules refer to are stand-ins that abort if ever called
// (libprocess_stubs.cpp).

#include <dlfcn.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>

#include <mesos/authorizer/authorizer.hpp>
#include <mesos/hook.hpp>
#include <mesos/module.hpp>
#include <mesos/module/authorizer.hpp>
#include <mesos/module/hook.hpp>
#include <mesos/module/isolator.hpp>
#include <mesos/slave/isolator.hpp>
#include <mesos/version.hpp>

namespace {

int failures = 0;
int passes = 0;

void expect(bool ok, const std::string& what)
{
  if (ok) {
    ++passes;
    std::cout << "ok   " << what << std::endl;
  } else {
    ++failures;
    std::cout << "FAIL " << what << std::endl;
  }
}

template <typename T>
mesos::modules::Module<T>* module(void* library, const char* name,
                                  const char* kind)
{
  void* symbol = dlsym(library, name);
  expect(symbol != nullptr, std::string("dlsym ") + name);
  if (symbol == nullptr) {
    return nullptr;
  }
  // Mesos reads the symbol as a ModuleBase first (src/module/manager.cpp).
  const mesos::modules::ModuleBase* base =
    static_cast<const mesos::modules::ModuleBase*>(symbol);
  const std::string n = name;
  expect(base->moduleApiVersion != nullptr &&
           std::strcmp(base->moduleApiVersion, MESOS_MODULE_API_VERSION) == 0,
         n + " moduleApiVersion == " MESOS_MODULE_API_VERSION);
  expect(base->mesosVersion != nullptr &&
           std::strcmp(base->mesosVersion, MESOS_VERSION) == 0,
         n + " mesosVersion == " MESOS_VERSION);
  expect(base->kind != nullptr && std::strcmp(base->kind, kind) == 0,
         n + " kind == " + kind);
  expect(base->authorName != nullptr && base->authorEmail != nullptr &&
           base->description != nullptr,
         n + " author and description set");
  expect(base->compatible != nullptr && base->compatible(),
         n + " compatible() is true with this libnestguard.so");
  return static_cast<mesos::modules::Module<T>*>(symbol);
}

mesos::Parameters parameters(
    std::initializer_list<std::pair<const char*, std::string>> list)
{
  mesos::Parameters result;
  for (const auto& kv : list) {
    mesos::Parameter* p = result.add_parameter();
    p->set_key(kv.first);
    p->set_value(kv.second);
  }
  return result;
}

mesos::authorization::Subject principal(const std::string& value)
{
  mesos::authorization::Subject subject;
  subject.set_value(value);
  return subject;
}

mesos::ContainerID nested(const std::string& root, const std::string& child)
{
  mesos::ContainerID id;
  id.set_value(child);
  id.mutable_parent()->set_value(root);
  return id;
}

// `approved()` of a fresh approver, as "true", "false" or "error: ...".
std::string approve(
    mesos::Authorizer* authorizer,
    const Option<mesos::authorization::Subject>& subject,
    mesos::authorization::Action action,
    const mesos::ObjectApprover::Object& object)
{
  process::Future<std::shared_ptr<const mesos::ObjectApprover>> approver =
    authorizer->getApprover(subject, action);
  if (!approver.isReady()) {
    return "error: getApprover not ready";
  }
  Try<bool> result = approver.get()->approved(object);
  if (result.isError()) {
    return "error: " + result.error();
  }
  return result.get() ? "true" : "false";
}

const char kAcls[] = R"({
  "permissive": false,
  "kill_nested_containers": [
    {"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}
  ],
  "run_tasks": [
    {"principals": {"values": ["ops"]}, "users": {"values": ["alice"]}}
  ]
})";

void authorizerChecks(mesos::modules::Module<mesos::Authorizer>* m)
{
  expect(m->create(parameters({{"acls", "{not json"}})) == nullptr,
         "Authorizer: malformed ACL JSON refused (create returns nullptr)");
  expect(m->create(parameters({{"acls", kAcls}, {"strcit", "true"}})) ==
           nullptr,
         "Authorizer: unknown parameter refused");
  expect(m->create(parameters({})) == nullptr,
         "Authorizer: missing 'acls' refused");

  std::unique_ptr<mesos::Authorizer> authorizer(
      m->create(parameters({{"acls", kAcls}, {"strict", "true"}})));
  expect(authorizer != nullptr, "Authorizer: created from inline ACLs");
  if (!authorizer) {
    return;
  }

  const mesos::ContainerID child = nested("root-1", "child-1");
  mesos::ExecutorInfo executor;
  executor.mutable_executor_id()->set_value("exec");
  executor.mutable_command()->set_user("bob");
  mesos::FrameworkInfo framework;
  framework.set_user("bob");
  framework.set_name("fw");

  // authorized(): the serialized request.
  mesos::authorization::Request request;
  *request.mutable_subject() = principal("ops");
  request.set_action(mesos::authorization::KILL_NESTED_CONTAINER);
  *request.mutable_object()->mutable_container_id() = child;
  *request.mutable_object()->mutable_executor_info() = executor;
  *request.mutable_object()->mutable_framework_info() = framework;
  process::Future<bool> allowed = authorizer->authorized(request);
  expect(allowed.isReady() && allowed.get(),
         "authorized(): ops may KILL_NESTED_CONTAINER");
  *request.mutable_subject() = principal("eve");
  allowed = authorizer->authorized(request);
  expect(allowed.isReady() && !allowed.get(),
         "authorized(): eve may not KILL_NESTED_CONTAINER");

  // A subject with neither value nor claims is malformed: a failed future
  // carrying nestguard's text.
  request.mutable_subject()->clear_value();
  allowed = authorizer->authorized(request);
  expect(allowed.isFailed() && !allowed.failure().empty(),
         "authorized(): malformed request gives a failed future (" +
           (allowed.isFailed() ? allowed.failure() : std::string("?")) + ")");

  // approved(), fast path (string views).
  const mesos::ObjectApprover::Object object(executor, framework, child);
  expect(approve(authorizer.get(), principal("ops"),
                 mesos::authorization::KILL_NESTED_CONTAINER, object) ==
           "true",
         "approved(): ops KILL_NESTED_CONTAINER (fast path)");
  expect(approve(authorizer.get(), principal("eve"),
                 mesos::authorization::KILL_NESTED_CONTAINER, object) ==
           "false",
         "approved(): eve KILL_NESTED_CONTAINER (fast path)");
  expect(approve(authorizer.get(), None(),
                 mesos::authorization::KILL_NESTED_CONTAINER, object) ==
           "false",
         "approved(): no subject, no matching ANY entry");

  // The implicit executor approver compares the *root* container with the
  // token's cid claim: the shim walks the parents.
  mesos::authorization::Subject executorToken;
  mesos::Label* claim = executorToken.mutable_claims()->add_labels();
  claim->set_key("cid");
  claim->set_value("root-1");
  expect(approve(authorizer.get(), executorToken,
                 mesos::authorization::WAIT_NESTED_CONTAINER,
                 mesos::ObjectApprover::Object(child)) == "true",
         "approved(): executor token for root-1 may wait on root-1.child-1");
  expect(approve(authorizer.get(), executorToken,
                 mesos::authorization::WAIT_NESTED_CONTAINER,
                 mesos::ObjectApprover::Object(nested("root-2", "x"))) ==
           "false",
         "approved(): executor token for root-1 may not touch root-2.x");

  // approved(), serialized path (RUN_TASK needs the TaskInfo).
  mesos::TaskInfo task;
  task.set_name("t");
  task.mutable_task_id()->set_value("t1");
  task.mutable_command()->set_user("alice");
  expect(approve(authorizer.get(), principal("ops"),
                 mesos::authorization::RUN_TASK,
                 mesos::ObjectApprover::Object(task, framework)) == "true",
         "approved(): ops RUN_TASK as alice (serialized path)");
  task.mutable_command()->set_user("root");
  expect(approve(authorizer.get(), principal("ops"),
                 mesos::authorization::RUN_TASK,
                 mesos::ObjectApprover::Object(task, framework)) == "false",
         "approved(): ops RUN_TASK as root (serialized path)");

  // An approver outlives its authorizer (Mesos may cache approvers).
  process::Future<std::shared_ptr<const mesos::ObjectApprover>> kept =
    authorizer->getApprover(principal("ops"),
                            mesos::authorization::KILL_NESTED_CONTAINER);
  authorizer.reset();
  Try<bool> late = kept.get()->approved(object);
  expect(late.isSome() && late.get(),
         "approved(): approver still answers after its authorizer is gone");
}

std::string variable(const mesos::Environment& env, const std::string& name,
                     int* count)
{
  std::string value;
  *count = 0;
  for (const mesos::Environment::Variable& v : env.variables()) {
    if (v.name() == name) {
      value = v.value();
      ++*count;
    }
  }
  return value;
}

void hookChecks(mesos::modules::Module<mesos::Hook>* m)
{
  char path[] = "/tmp/nestguard-shim-credentials.XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) {
    expect(false, "Hook: temporary credentials file");
    return;
  }
  const std::string text =
    R"({"credentials": [{"principal": "exec-principal", "secret": "s3cret"}]})";
  const bool written = write(fd, text.data(), text.size()) ==
                       static_cast<ssize_t>(text.size());
  close(fd);
  expect(written, "Hook: credentials file written (mode 0600)");

  expect(m->create(parameters({})) == nullptr,
         "Hook: missing 'http_credentials' refused");
  std::unique_ptr<mesos::Hook> hook(m->create(
      parameters({{"http_credentials", std::string("file://") + path}})));
  expect(hook != nullptr, "Hook: created from the credentials file");

  chmod(path, 0644);
  expect(m->create(parameters({{"http_credentials", path}})) == nullptr,
         "Hook: world-readable credentials file refused");
  unlink(path);
  if (!hook) {
    return;
  }

  mesos::ExecutorInfo executor;
  executor.mutable_executor_id()->set_value("exec");
  executor.mutable_framework_id()->set_value("fw-1");
  mesos::Label* label = executor.mutable_labels()->add_labels();
  label->set_key("principal");
  label->set_value("exec-principal");
  mesos::Environment::Variable* foo =
    executor.mutable_command()->mutable_environment()->add_variables();
  foo->set_name("FOO");
  foo->set_value("bar");
  mesos::Environment::Variable* old =
    executor.mutable_command()->mutable_environment()->add_variables();
  old->set_name("MESOS_SECRET");
  old->set_value("stale");

  // Before the agent ran a task of the framework the hook does not know its
  // principal: the label alone is not trusted (fail closed).
  Result<mesos::Environment> env =
    hook->slaveExecutorEnvironmentDecorator(executor);
  expect(env.isError() && env.error().find("s3cret") == std::string::npos,
         "Hook: no FrameworkInfo.principal seen yet, nothing injected");

  mesos::FrameworkInfo framework;
  framework.set_user("root");
  framework.set_name("smoke");
  framework.mutable_id()->set_value("fw-1");
  framework.set_principal("exec-principal");
  mesos::TaskInfo task;
  task.set_name("t");
  task.mutable_task_id()->set_value("t");
  task.mutable_slave_id()->set_value("agent");
  mesos::SlaveInfo agent;
  agent.set_hostname("localhost");
  const Result<mesos::Labels> labels =
    hook->slaveRunTaskLabelDecorator(task, executor, framework, agent);
  expect(labels.isNone(), "Hook: task labels left as they are");

  env = hook->slaveExecutorEnvironmentDecorator(executor);
  expect(env.isSome(), "Hook: environment decorated");
  if (env.isSome()) {
    int n = 0;
    expect(variable(env.get(), "FOO", &n) == "bar" && n == 1,
           "Hook: incoming FOO=bar kept");
    expect(variable(env.get(), "MESOS_PRINCIPAL", &n) == "exec-principal" &&
             n == 1,
           "Hook: MESOS_PRINCIPAL injected");
    expect(variable(env.get(), "MESOS_SECRET", &n) == "s3cret" && n == 1,
           "Hook: MESOS_SECRET injected, replacing the stale one");
  }

  label->set_value("nobody");
  env = hook->slaveExecutorEnvironmentDecorator(executor);
  expect(env.isError() &&
           env.error().find("nobody") != std::string::npos &&
           env.error().find("s3cret") == std::string::npos,
         "Hook: unknown principal is an Error naming it, without a secret (" +
           (env.isError() ? env.error() : std::string("?")) + ")");
}

void isolatorChecks(mesos::modules::Module<mesos::slave::Isolator>* m)
{
  expect(m->create(parameters({{"isolation", "nestguard-smoke-unknown"}})) ==
           nullptr,
         "Isolator: unknown isolator name refused");
  expect(m->create(parameters({{"nestguard_smoke_unknown_key", "1"}})) ==
           nullptr,
         "Isolator: unknown parameter refused");
  // The shim adds launcher=mesos: Mesos' launch helper cannot apply
  // nestguard's seccomp filter, the exec stage does (it runs as the
  // container's command and installs it before exec), so the isolator
  // loads under Mesos' launcher too.
  std::unique_ptr<mesos::slave::Isolator> seccomp(
      m->create(parameters({{"isolation", "seccomp"}})));
  expect(seccomp != nullptr,
         "Isolator: seccomp loads under Mesos' launcher (the exec stage applies it)");
  std::unique_ptr<mesos::slave::Isolator> untouched(m->create(parameters(
      {{"isolation", "hardening"}, {"hardening_capabilities", "*"}})));
  expect(untouched != nullptr,
         "Isolator: hardening with capabilities untouched loads on any kernel");

  // disk/du only: creating it touches no cgroup or mount.
  std::unique_ptr<mesos::slave::Isolator> isolator(
      m->create(parameters({{"isolation", "disk/du"}})));
  expect(isolator != nullptr, "Isolator: created with isolation=disk/du");
  if (isolator) {
    expect(isolator->supportsNesting() && isolator->supportsStandalone(),
           "Isolator: supports nested and standalone containers");
  }
}

} // namespace


int main(int argc, char** argv)
{
  if (argc != 2) {
    std::cerr << "usage: " << argv[0] << " LIBNESTGUARD_MESOS_SO" << std::endl;
    return 2;
  }

  // As Mesos' DynamicLibrary::open: RTLD_NOW. A libnestguard.so built
  // before the isolator ABI landed lacks its functions: then the isolator
  // is skipped (reported) and the library is loaded lazily for the rest.
  bool isolatorAbi = true;
  void* library = dlopen(argv[1], RTLD_NOW);
  if (library == nullptr) {
    const std::string error = dlerror();
    if (error.find("undefined symbol: nestguard_isolator_") ==
        std::string::npos) {
      std::cerr << "dlopen: " << error << std::endl;
      return 1;
    }
    std::cout << "SKIP io_nestguard_Isolator: libnestguard.so has no isolator "
              << "ABI yet (" << error << ")" << std::endl;
    isolatorAbi = false;
    library = dlopen(argv[1], RTLD_LAZY);
    if (library == nullptr) {
      std::cerr << "dlopen: " << dlerror() << std::endl;
      return 1;
    }
  }

  auto* authorizer = module<mesos::Authorizer>(
      library, "io_nestguard_Authorizer", "Authorizer");
  auto* hook = module<mesos::Hook>(library, "io_nestguard_CredentialHook",
                                   "Hook");
  auto* isolator = isolatorAbi
    ? module<mesos::slave::Isolator>(library, "io_nestguard_Isolator",
                                     "Isolator")
    : nullptr;

  if (authorizer != nullptr) {
    authorizerChecks(authorizer);
  }
  if (hook != nullptr) {
    hookChecks(hook);
  }
  if (isolator != nullptr) {
    isolatorChecks(isolator);
  }

  std::cout << passes << " passed, " << failures << " failed"
            << (isolatorAbi ? "" : ", 1 skipped") << std::endl;
  return failures == 0 ? 0 : 1;
}
