// The decision audit log of io_nestguard_Authorizer: nestguard's audit
// records (one JSON object per decision) sent to glog.

#ifndef NESTGUARD_MESOS_AUDIT_LOG_HPP
#define NESTGUARD_MESOS_AUDIT_LOG_HPP

#include <stout/option.hpp>

#include "nestguard_mesos.hpp"

namespace nestguard_mesos {

// The authorizer module parameters this file reads, for the `known` list.
#define NESTGUARD_AUDIT_PARAMETERS \
  "audit_log", "audit_sample", "audit_denials_only"

// With `audit_log=true`, registers the glog callback on `handle` with
// `audit_sample` (one decision in N, default 1) and `audit_denials_only`
// (default false). Returns an error for a bad parameter or a failed
// registration; None when the audit log is off or on.
Option<Error> enableAuditLog(
    nestguard_authorizer* handle,
    const ModuleParameters& parameters);

} // namespace nestguard_mesos

#endif // NESTGUARD_MESOS_AUDIT_LOG_HPP
