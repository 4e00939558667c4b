// Module<Authorizer> `io_nestguard_Authorizer`: Mesos' Authorizer interface
// over nestguard's ACL engine.
//
// Parameters:
//   acls    required; a path or file:// URL of an ACL JSON file, or the JSON
//           itself when it starts with '{' (as Mesos' --acls accepts both)
//   strict  optional, default false; true also refuses unknown keys and
//           entities that Mesos would silently ignore
//   executor_tokens_any_user
//           optional, default false; true lets an executor token launch
//           nested containers as any user, as Mesos does
//   max_file_size  optional, bytes, default 16 MiB; the ACL file must be a
//           regular file no larger than this (a FIFO or /dev/zero is refused)
//   audit_log, audit_sample, audit_denials_only  optional: the decision
//           audit log to glog (see audit_log.hpp)
//
// authorized() passes the serialized authorization::Request. getApprover()
// makes a nestguard approver for the (subject, action); its approved() is
// called synchronously from agent actors, so for the agent's container and
// endpoint actions it only points string views at the fields of the object
// (no protobuf encoding, no allocation, no lock, no I/O). For the remaining
// actions, whose object carries more than the view (tasks, resources,
// roles), it serializes an authorization::Object instead.

#include <cstdint>
#include <memory>
#include <string>

#include <glog/logging.h>

#include <mesos/authorizer/authorizer.hpp>
#include <mesos/module/authorizer.hpp>

#include <process/future.hpp>

#include <stout/none.hpp>
#include <stout/numify.hpp>
#include <stout/try.hpp>

#include "audit_log.hpp"
#include "nestguard_mesos.hpp"

using mesos::Authorizer;
using mesos::ContainerID;
using mesos::ObjectApprover;
using mesos::Parameters;
using mesos::authorization::Action;

using process::Failure;
using process::Future;

namespace nestguard_mesos {
namespace {

nestguard_str_view absent()
{
  nestguard_str_view view = {nullptr, 0, false};
  return view;
}


nestguard_str_view viewOf(const std::string& s)
{
  nestguard_str_view view = {s.data(), s.size(), true};
  return view;
}


// The actions whose objects nestguard_object_view describes completely (see
// the header): the agent's container, sandbox, endpoint and view calls.
bool servedByView(Action action)
{
  switch (action) {
    case mesos::authorization::GET_ENDPOINT_WITH_PATH:
    case mesos::authorization::VIEW_FRAMEWORK:
    case mesos::authorization::VIEW_EXECUTOR:
    case mesos::authorization::ACCESS_SANDBOX:
    case mesos::authorization::ACCESS_MESOS_LOG:
    case mesos::authorization::VIEW_FLAGS:
    case mesos::authorization::LAUNCH_NESTED_CONTAINER:
    case mesos::authorization::KILL_NESTED_CONTAINER:
    case mesos::authorization::WAIT_NESTED_CONTAINER:
    case mesos::authorization::LAUNCH_NESTED_CONTAINER_SESSION:
    case mesos::authorization::ATTACH_CONTAINER_INPUT:
    case mesos::authorization::ATTACH_CONTAINER_OUTPUT:
    case mesos::authorization::VIEW_CONTAINER:
    case mesos::authorization::REMOVE_NESTED_CONTAINER:
    case mesos::authorization::LAUNCH_STANDALONE_CONTAINER:
    case mesos::authorization::KILL_STANDALONE_CONTAINER:
    case mesos::authorization::WAIT_STANDALONE_CONTAINER:
    case mesos::authorization::REMOVE_STANDALONE_CONTAINER:
    case mesos::authorization::VIEW_STANDALONE_CONTAINER:
      return true;
    default:
      return false;
  }
}


// The object's fields as borrowed views. Nothing is copied: the views point
// into the protobufs Mesos passed, which outlive the call.
nestguard_object_view toView(const ObjectApprover::Object& object)
{
  nestguard_object_view view;
  view.value = object.value != nullptr ? viewOf(*object.value) : absent();

  view.has_executor_info = object.executor_info != nullptr;
  view.executor_user =
    view.has_executor_info && object.executor_info->command().has_user()
      ? viewOf(object.executor_info->command().user())
      : absent();

  view.has_framework_info = object.framework_info != nullptr;
  view.framework_user =
    view.has_framework_info && object.framework_info->has_user()
      ? viewOf(object.framework_info->user())
      : absent();
  // Decides an executor token's launch as another user (ABI 1.0).
  view.framework_principal =
    view.has_framework_info && object.framework_info->has_principal()
      ? viewOf(object.framework_info->principal())
      : absent();

  view.has_command = object.command_info != nullptr;
  view.command_user =
    view.has_command && object.command_info->has_user()
      ? viewOf(object.command_info->user())
      : absent();

  if (object.container_id != nullptr) {
    const ContainerID* root = object.container_id;
    while (root->has_parent()) {
      root = &root->parent();
    }
    view.container_id = viewOf(object.container_id->value());
    view.root_container_id = viewOf(root->value());
  } else {
    view.container_id = absent();
    view.root_container_id = absent();
  }

  return view;
}


// The object as an authorization::Object (copies; the slow path only).
mesos::authorization::Object toProto(const ObjectApprover::Object& object)
{
  mesos::authorization::Object proto;
  if (object.value != nullptr) {
    proto.set_value(*object.value);
  }
  if (object.framework_info != nullptr) {
    *proto.mutable_framework_info() = *object.framework_info;
  }
  if (object.task != nullptr) {
    *proto.mutable_task() = *object.task;
  }
  if (object.task_info != nullptr) {
    *proto.mutable_task_info() = *object.task_info;
  }
  if (object.executor_info != nullptr) {
    *proto.mutable_executor_info() = *object.executor_info;
  }
  if (object.quota_info != nullptr) {
    // Deprecated in authorizer.proto but still part of the object Mesos
    // builds for GET_QUOTA.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    *proto.mutable_quota_info() = *object.quota_info;
#pragma GCC diagnostic pop
  }
  if (object.weight_info != nullptr) {
    *proto.mutable_weight_info() = *object.weight_info;
  }
  if (object.resource != nullptr) {
    *proto.mutable_resource() = *object.resource;
  }
  if (object.command_info != nullptr) {
    *proto.mutable_command_info() = *object.command_info;
  }
  if (object.container_id != nullptr) {
    *proto.mutable_container_id() = *object.container_id;
  }
  if (object.machine_id != nullptr) {
    *proto.mutable_machine_id() = *object.machine_id;
  }
  return proto;
}


class NestguardApprover : public ObjectApprover
{
public:
  NestguardApprover(nestguard_approver* handle, bool fastPath)
    : handle_(handle), fastPath_(fastPath) {}

  ~NestguardApprover() override { nestguard_approver_free(handle_); }

  NestguardApprover(const NestguardApprover&) = delete;
  NestguardApprover& operator=(const NestguardApprover&) = delete;

  Try<bool> approved(const Option<Object>& object) const noexcept override
  {
    bool allowed = false;
    nestguard_result rc;

    if (object.isNone()) {
      rc = nestguard_approver_approved(handle_, nullptr, &allowed);
    } else if (fastPath_) {
      const nestguard_object_view view = toView(object.get());
      rc = nestguard_approver_approved(handle_, &view, &allowed);
    } else {
      try {
        const std::string bytes = serialize(toProto(object.get()));
        rc = nestguard_approver_approved_object(
            handle_, bytesOf(bytes), bytes.size(), &allowed);
      } catch (const std::exception& e) {
        return Error(std::string("nestguard: approved(): ") + e.what());
      }
    }

    if (rc != NESTGUARD_RESULT_OK) {
      return Error(lastError(rc));
    }
    return allowed;
  }

private:
  nestguard_approver* const handle_;
  const bool fastPath_;
};


class NestguardAuthorizer : public Authorizer
{
public:
  static Try<Authorizer*> create(const Parameters& parameters)
  {
    static const char* const known[] = {
        "acls", "strict", "executor_tokens_any_user", "max_file_size",
        NESTGUARD_AUDIT_PARAMETERS, nullptr};
    Try<ModuleParameters> params =
      ModuleParameters::parse(parameters, known, "io_nestguard_Authorizer");
    if (params.isError()) {
      return Error(params.error());
    }

    const Option<std::string> acls = params->get("acls");
    if (acls.isNone() || acls->empty()) {
      return Error(
          "module 'io_nestguard_Authorizer': parameter 'acls' (a path, "
          "file:// URL or JSON text) is required");
    }

    const Try<bool> strict = params->getBool("strict", false);
    if (strict.isError()) {
      return Error(strict.error());
    }

    // 0 asks the library for its default.
    uint64_t maxFileSize = 0;
    const Option<std::string> limit = params->get("max_file_size");
    if (limit.isSome()) {
      const Try<uint64_t> parsed = numify<uint64_t>(limit.get());
      if (parsed.isError() || parsed.get() == 0) {
        return Error(
            "module 'io_nestguard_Authorizer': parameter 'max_file_size' must "
            "be a positive number of bytes, not '" + limit.get() + "'");
      }
      maxFileSize = parsed.get();
    }

    nestguard_authorizer* handle = nullptr;
    const bool inlineJson = acls->find_first_not_of(" \t\r\n") !=
                              std::string::npos &&
                            (*acls)[acls->find_first_not_of(" \t\r\n")] == '{';
    const nestguard_result rc = inlineJson
      ? nestguard_authorizer_new(
            acls->data(), acls->size(), strict.get(), &handle)
      : nestguard_authorizer_new_from_file_limited(
            acls->data(), acls->size(), strict.get(), maxFileSize, &handle);
    if (rc != NESTGUARD_RESULT_OK) {
      return toError("module 'io_nestguard_Authorizer': ACLs refused", rc);
    }

    // Mesos lets an executor token launch nested containers as any user;
    // nestguard only as the executor's own user (or one that
    // launch_nested_containers_as_user allows the framework's principal)
    // unless this parameter restores Mesos' behaviour.
    const Try<bool> anyUser =
      params->getBool("executor_tokens_any_user", false);
    if (anyUser.isError()) {
      nestguard_authorizer_free(handle);
      return Error(anyUser.error());
    }
    const nestguard_result set =
      nestguard_authorizer_set_executor_tokens_any_user(handle, anyUser.get());
    if (set != NESTGUARD_RESULT_OK) {
      nestguard_authorizer_free(handle);
      return toError("module 'io_nestguard_Authorizer'", set);
    }

    const Option<Error> audit = enableAuditLog(handle, params.get());
    if (audit.isSome()) {
      nestguard_authorizer_free(handle);
      return audit.get();
    }

    return new NestguardAuthorizer(handle);
  }

  ~NestguardAuthorizer() override { nestguard_authorizer_free(handle_); }

  NestguardAuthorizer(const NestguardAuthorizer&) = delete;
  NestguardAuthorizer& operator=(const NestguardAuthorizer&) = delete;

  Future<bool> authorized(
      const mesos::authorization::Request& request) override
  {
    const std::string bytes = serialize(request);
    bool allowed = false;
    const nestguard_result rc = nestguard_authorizer_authorize(
        handle_, bytesOf(bytes), bytes.size(), &allowed);
    if (rc != NESTGUARD_RESULT_OK) {
      return Failure(lastError(rc));
    }
    return allowed;
  }

  Future<std::shared_ptr<const ObjectApprover>> getApprover(
      const Option<mesos::authorization::Subject>& subject,
      const Action& action) override
  {
    std::string bytes;
    if (subject.isSome()) {
      bytes = serialize(subject.get());
    }

    nestguard_approver* approver = nullptr;
    const nestguard_result rc = nestguard_approver_new(
        handle_,
        subject.isSome() ? bytesOf(bytes) : nullptr,
        subject.isSome() ? bytes.size() : 0,
        static_cast<uint32_t>(action),
        &approver);
    if (rc != NESTGUARD_RESULT_OK) {
      return Failure(lastError(rc));
    }

    // The view carries FrameworkInfo.principal too (ABI 1.0), so an
    // executor token's launch is decided on it like every other call.
    return std::shared_ptr<const ObjectApprover>(
        new NestguardApprover(approver, servedByView(action)));
  }

private:
  explicit NestguardAuthorizer(nestguard_authorizer* handle)
    : handle_(handle) {}

  nestguard_authorizer* const handle_;
};


Authorizer* createAuthorizer(const Parameters& parameters)
{
  try {
    Try<Authorizer*> authorizer = NestguardAuthorizer::create(parameters);
    if (authorizer.isError()) {
      LOG(ERROR) << authorizer.error();
      return nullptr;
    }
    return authorizer.get();
  } catch (const std::exception& e) {
    LOG(ERROR) << "module 'io_nestguard_Authorizer': " << e.what();
    return nullptr;
  }
}

} // namespace
} // namespace nestguard_mesos


// The module symbol: Mesos looks the module name up with dlsym().
NESTGUARD_MODULE_EXPORT mesos::modules::Module<Authorizer> io_nestguard_Authorizer(
    MESOS_MODULE_API_VERSION,
    MESOS_VERSION,
    nestguard_mesos::kAuthorName,
    nestguard_mesos::kAuthorEmail,
    "Mesos ACL authorization by nestguard (libnestguard.so).",
    nestguard_mesos::compatible,
    nestguard_mesos::createAuthorizer);
