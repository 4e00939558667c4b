// Parse-only stand-in for gRPC 1.10's <grpcpp/grpcpp.h> (its tarball is not
// in the Mesos mirror). Mesos headers reached by the mains (the CSI server
// and clients) name these types; the mains never instantiate code that uses
// them, so declarations are enough. Never link anything against this.
#pragma once
#include <memory>
#include <string>
namespace grpc {
enum StatusCode { OK = 0 };
class Status {
 public:
  Status() {}
  bool ok() const { return true; }
  StatusCode error_code() const { return OK; }
  std::string error_message() const { return std::string(); }
};
class ClientContext {
 public:
  void set_wait_for_ready(bool);
  template <typename T> void set_deadline(const T&);
  void TryCancel();
};
class CompletionQueue {
 public:
  bool Next(void**, bool*);
  void Shutdown();
};
class Channel {};
class ChannelCredentials {};
class ChannelArguments {};
template <typename R> class ClientAsyncResponseReader {
 public:
  void StartCall();
  void Finish(R*, Status*, void*);
};
template <typename R> class ClientAsyncResponseReaderInterface {};
std::shared_ptr<ChannelCredentials> InsecureChannelCredentials();
std::shared_ptr<Channel> CreateChannel(const std::string&, const std::shared_ptr<ChannelCredentials>&);
std::shared_ptr<Channel> CreateCustomChannel(const std::string&, const std::shared_ptr<ChannelCredentials>&, const ChannelArguments&);
}  // namespace grpc
