// Shared helpers of the nestguard Mesos modules: turning nestguard result
// codes into Mesos errors, owning library-allocated bytes, reading module
// parameters and the version gate.
//
// Everything here is glue. Decisions (ACLs, credentials, isolation) are made
// by libnestguard.so behind its C ABI; this layer only converts Mesos C++
// types to the bytes and string views that ABI takes.

#ifndef NESTGUARD_MESOS_HPP
#define NESTGUARD_MESOS_HPP

#include <cstddef>
#include <cstdint>
#include <string>

#include <mesos/mesos.hpp>
#include <mesos/module.hpp>
#include <mesos/version.hpp>

#include <stout/error.hpp>
#include <stout/option.hpp>
#include <stout/try.hpp>

#include "nestguard.h"

// The 1.10 interfaces (Authorizer::getApprover returning a shared_ptr,
// Isolator::update with requests and limits) are what this shim implements.
#if MESOS_MAJOR_VERSION_NUM != 1 || MESOS_MINOR_VERSION_NUM < 10
#error "the nestguard Mesos modules need the Mesos 1.10+ module interfaces"
#endif

// The shim is built with -fvisibility=hidden: only the module variables,
// which Mesos finds with dlsym(), are exported.
#define NESTGUARD_MODULE_EXPORT __attribute__((visibility("default")))

namespace nestguard_mesos {

// ModuleBase strings shared by the three modules.
extern const char kAuthorName[];
extern const char kAuthorEmail[];

// The text of the calling thread's last nestguard error, or the fixed
// description of `code` when no text is recorded. Must run on the thread
// that made the failed call, before any other nestguard call.
std::string lastError(nestguard_result code);

// `what: <last error>`, as a stout Error.
Error toError(const std::string& what, nestguard_result code);

// Owns a nestguard_bytes handle; frees it on destruction.
class Bytes
{
public:
  Bytes() : handle_(nullptr) {}
  ~Bytes() { nestguard_bytes_free(handle_); }

  Bytes(const Bytes&) = delete;
  Bytes& operator=(const Bytes&) = delete;

  // The out-parameter to hand to a nestguard function.
  nestguard_bytes** out() { return &handle_; }

  const uint8_t* data() const { return nestguard_bytes_data(handle_); }
  size_t size() const { return nestguard_bytes_len(handle_); }

private:
  nestguard_bytes* handle_;
};

// A protobuf message as bytes for the ABI. Partial: Mesos hands modules
// messages whose proto2 `required` fields may be unset.
template <typename Message>
std::string serialize(const Message& message)
{
  std::string bytes;
  message.SerializePartialToString(&bytes);
  return bytes;
}

inline const uint8_t* bytesOf(const std::string& s)
{
  return reinterpret_cast<const uint8_t*>(s.data());
}

// Module parameters by key. Unknown keys and repeated keys are refused so a
// typo in --modules never silently weakens a policy.
class ModuleParameters
{
public:
  // Fails if `parameters` holds a key not in `known` (a NULL-terminated
  // list) or a key twice.
  static Try<ModuleParameters> parse(
      const mesos::Parameters& parameters,
      const char* const* known,
      const std::string& module);

  Option<std::string> get(const std::string& key) const;

  // `true`/`false` (also `1`/`0`, `yes`/`no`); absent gives `fallback`.
  Try<bool> getBool(const std::string& key, bool fallback) const;

private:
  ModuleParameters(
      const mesos::Parameters& parameters,
      const std::string& module)
    : parameters_(parameters), module_(module) {}

  mesos::Parameters parameters_;
  std::string module_;
};

// ModuleBase::compatible: the loaded libnestguard.so must speak the ABI
// this shim was compiled against (same major, minor at least ours). Mesos
// itself still requires the exact Mesos version the shim was built with.
bool compatible();

} // namespace nestguard_mesos

#endif // NESTGUARD_MESOS_HPP
