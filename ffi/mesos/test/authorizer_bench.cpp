// Timing of the Authorizer module's whole calls with real Mesos protobufs
// (issue 29): `authorized(request)` -- the shim serializes the
// mesos::authorization::Request and libnestguard reads it -- and, beside it,
// `approved(object)` of an approver (string views, no protobuf). Built and
// run by run-smoke.sh; usage: authorizer_bench LIBNESTGUARD_MESOS_SO
// [ENTRIES [CALLS]] (defaults 10000 and 200000).
//
// The policy is the one of benches/authz.rs: entry i = principals ["p<i>"],
// users ["u<i>"] in kill_nested_containers, permissive false. The request
// is that bench's protobuf_path_kill request: subject p<n/2>,
// KILL_NESTED_CONTAINER, an executor whose command runs as u<n/2> and a
// container id with a parent; it hits the middle entry. Each figure is the
// median of 5 runs of CALLS calls, in nanoseconds per call, including the
// process::Future each call returns.

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <mesos/authorizer/authorizer.hpp>
#include <mesos/module.hpp>
#include <mesos/module/authorizer.hpp>

namespace {

std::string acls(int n)
{
  std::string json = R"({"permissive": false, "kill_nested_containers": [)";
  for (int i = 0; i < n; ++i) {
    if (i > 0) {
      json += ",";
    }
    const std::string s = std::to_string(i);
    json += R"({"principals":{"values":["p)" + s +
            R"("]},"users":{"values":["u)" + s + R"("]}})";
  }
  return json + "]}";
}

// Nanoseconds per call of `call`, the median of 5 runs of `calls` calls.
template <typename F>
double perCall(long calls, F call)
{
  std::vector<double> runs;
  for (int run = 0; run < 5; ++run) {
    const auto start = std::chrono::steady_clock::now();
    for (long i = 0; i < calls; ++i) {
      call();
    }
    const std::chrono::duration<double, std::nano> elapsed =
      std::chrono::steady_clock::now() - start;
    runs.push_back(elapsed.count() / static_cast<double>(calls));
  }
  std::sort(runs.begin(), runs.end());
  return runs[2];
}

} // namespace


int main(int argc, char** argv)
{
  if (argc < 2 || argc > 4) {
    std::cerr << "usage: " << argv[0]
              << " LIBNESTGUARD_MESOS_SO [ENTRIES [CALLS]]" << std::endl;
    return 2;
  }
  const int n = argc > 2 ? std::atoi(argv[2]) : 10000;
  const long calls = argc > 3 ? std::atol(argv[3]) : 200000;
  if (n < 1 || calls < 1) {
    std::cerr << "ENTRIES and CALLS must be positive" << std::endl;
    return 2;
  }

  void* library = dlopen(argv[1], RTLD_NOW);
  if (library == nullptr) {
    std::cerr << "dlopen: " << dlerror() << std::endl;
    return 1;
  }
  auto* module = static_cast<mesos::modules::Module<mesos::Authorizer>*>(
      dlsym(library, "io_nestguard_Authorizer"));
  if (module == nullptr) {
    std::cerr << "dlsym io_nestguard_Authorizer: " << dlerror() << std::endl;
    return 1;
  }
  mesos::Parameters parameters;
  mesos::Parameter* p = parameters.add_parameter();
  p->set_key("acls");
  p->set_value(acls(n));
  std::unique_ptr<mesos::Authorizer> authorizer(module->create(parameters));
  if (!authorizer) {
    std::cerr << "the Authorizer module refused the ACLs" << std::endl;
    return 1;
  }

  const std::string middle = std::to_string(n / 2);
  mesos::ExecutorInfo executor;
  executor.mutable_executor_id()->set_value("executor");
  executor.mutable_command()->set_user("u" + middle);
  mesos::ContainerID container;
  container.set_value("child");
  container.mutable_parent()->set_value("root");

  mesos::authorization::Request request;
  request.mutable_subject()->set_value("p" + middle);
  request.set_action(mesos::authorization::KILL_NESTED_CONTAINER);
  *request.mutable_object()->mutable_executor_info() = executor;
  *request.mutable_object()->mutable_container_id() = container;

  process::Future<bool> first = authorizer->authorized(request);
  if (!first.isReady() || !first.get()) {
    std::cerr << "authorized(): expected an allowed, ready future" << std::endl;
    return 1;
  }
  const double authorized = perCall(calls, [&]() {
    process::Future<bool> allowed = authorizer->authorized(request);
    if (!allowed.isReady() || !allowed.get()) {
      std::abort();
    }
  });

  mesos::authorization::Subject subject;
  subject.set_value("p" + middle);
  process::Future<std::shared_ptr<const mesos::ObjectApprover>> approver =
    authorizer->getApprover(subject, mesos::authorization::KILL_NESTED_CONTAINER);
  if (!approver.isReady()) {
    std::cerr << "getApprover(): not ready" << std::endl;
    return 1;
  }
  // The fields the agent sets for KILL_NESTED_CONTAINER (as the request's).
  mesos::ObjectApprover::Object object;
  object.executor_info = &executor;
  object.container_id = &container;
  const double approved = perCall(calls, [&]() {
    Try<bool> allowed = approver.get()->approved(object);
    if (allowed.isError() || !allowed.get()) {
      std::abort();
    }
  });

  std::string bytes;
  const double serialize = perCall(calls, [&]() {
    bytes.clear();
    request.SerializeToString(&bytes);
  });

  std::cout << "entries " << n << ", " << calls << " calls x 5, median ns/call:"
            << std::endl
            << "  authorized(request)            " << authorized << std::endl
            << "  approved(object) (approver)    " << approved << std::endl
            << "  of which Request serialization " << serialize << std::endl;
  return 0;
}
