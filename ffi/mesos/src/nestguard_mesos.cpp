// Shared helpers of the nestguard Mesos modules (see nestguard_mesos.hpp).

#include "nestguard_mesos.hpp"

#include <set>
#include <vector>

#include <glog/logging.h>

namespace nestguard_mesos {

const char kAuthorName[] = "nestguard";
const char kAuthorEmail[] = "nestguard@localhost";

std::string lastError(nestguard_result code)
{
  // Most messages fit; a longer one is fetched again at its exact size.
  char small[512];
  size_t needed = 0;
  nestguard_result rc = nestguard_error_message(small, sizeof(small), &needed);
  if (rc == NESTGUARD_RESULT_OK && needed > 1) {
    return std::string(small, needed - 1);
  }
  if (rc == NESTGUARD_RESULT_BUFFER_TOO_SMALL && needed > 1) {
    std::vector<char> large(needed);
    if (nestguard_error_message(large.data(), large.size(), &needed) ==
          NESTGUARD_RESULT_OK &&
        needed > 1) {
      return std::string(large.data(), needed - 1);
    }
  }
  return nestguard_result_describe(static_cast<uint32_t>(code));
}


Error toError(const std::string& what, nestguard_result code)
{
  return Error(what + ": " + lastError(code));
}


Try<ModuleParameters> ModuleParameters::parse(
    const mesos::Parameters& parameters,
    const char* const* known,
    const std::string& module)
{
  std::set<std::string> allowed;
  for (const char* const* key = known; *key != nullptr; ++key) {
    allowed.insert(*key);
  }

  std::set<std::string> seen;
  for (int i = 0; i < parameters.parameter_size(); ++i) {
    const std::string& key = parameters.parameter(i).key();
    if (allowed.count(key) == 0) {
      std::string expected;
      for (const std::string& k : allowed) {
        expected += (expected.empty() ? "'" : ", '") + k + "'";
      }
      return Error(
          "module '" + module + "': unknown parameter '" + key +
          "' (expected one of " + expected + ")");
    }
    if (!seen.insert(key).second) {
      return Error(
          "module '" + module + "': parameter '" + key + "' given twice");
    }
  }

  return ModuleParameters(parameters, module);
}


Option<std::string> ModuleParameters::get(const std::string& key) const
{
  for (int i = 0; i < parameters_.parameter_size(); ++i) {
    if (parameters_.parameter(i).key() == key) {
      return parameters_.parameter(i).value();
    }
  }
  return None();
}


Try<bool> ModuleParameters::getBool(const std::string& key, bool fallback)
  const
{
  const Option<std::string> value = get(key);
  if (value.isNone()) {
    return fallback;
  }
  if (value.get() == "true" || value.get() == "1" || value.get() == "yes") {
    return true;
  }
  if (value.get() == "false" || value.get() == "0" || value.get() == "no") {
    return false;
  }
  return Error(
      "module '" + module_ + "': parameter '" + key + "' is '" + value.get() +
      "', expected 'true' or 'false'");
}


bool compatible()
{
  const uint32_t loaded = nestguard_abi_version();
  const uint32_t built = NESTGUARD_ABI_VERSION;
  const bool ok = (loaded >> 16) == (built >> 16) &&
                  ((loaded >> 8) & 0xff) >= ((built >> 8) & 0xff);
  if (!ok) {
    LOG(ERROR) << "nestguard: libnestguard.so " << nestguard_library_version()
               << " has ABI " << (loaded >> 16) << "."
               << ((loaded >> 8) & 0xff) << "." << (loaded & 0xff)
               << ", but this module was built against ABI "
               << NESTGUARD_ABI_VERSION_MAJOR << "."
               << NESTGUARD_ABI_VERSION_MINOR << "."
               << NESTGUARD_ABI_VERSION_PATCH;
  }
  return ok;
}

} // namespace nestguard_mesos
