// The decision audit log of io_nestguard_Authorizer: each record nestguard
// reports is written to glog at INFO as `nestguard audit: <json>`.
//
// nestguard calls the callback on whichever thread decides (often several
// at once, from agent actors): glog's LOG is thread-safe, and the callback
// touches nothing else, never throws and never calls back into nestguard.
// Records hold no secret and no token text.

#include "audit_log.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

#include <glog/logging.h>

#include <stout/numify.hpp>

namespace nestguard_mesos {
namespace {

void logAuditRecord(void* /*userdata*/, const uint8_t* json, size_t len)
{
  try {
    LOG(INFO) << "nestguard audit: "
              << std::string(reinterpret_cast<const char*>(json), len);
  } catch (...) {
    // Nothing may unwind into nestguard (a record is lost, not the agent).
  }
}

} // namespace

Option<Error> enableAuditLog(
    nestguard_authorizer* handle,
    const ModuleParameters& parameters)
{
  const Try<bool> on = parameters.getBool("audit_log", false);
  if (on.isError()) {
    return Error(on.error());
  }
  if (!on.get()) {
    return None();
  }

  const Try<bool> denialsOnly =
    parameters.getBool("audit_denials_only", false);
  if (denialsOnly.isError()) {
    return Error(denialsOnly.error());
  }

  nestguard_audit_options options;
  options.sample_every = 1;
  options.denials_only = denialsOnly.get();
  const Option<std::string> sample = parameters.get("audit_sample");
  if (sample.isSome()) {
    const Try<uint32_t> parsed = numify<uint32_t>(sample.get());
    if (parsed.isError() || parsed.get() == 0) {
      return Error(
          "module 'io_nestguard_Authorizer': parameter 'audit_sample' must "
          "be a positive number (one decision in N), not '" +
          sample.get() + "'");
    }
    options.sample_every = parsed.get();
  }

  const nestguard_result rc = nestguard_authorizer_set_audit_callback(
      handle, &logAuditRecord, nullptr, &options);
  if (rc != NESTGUARD_RESULT_OK) {
    return toError("module 'io_nestguard_Authorizer': audit log", rc);
  }
  return None();
}

} // namespace nestguard_mesos
