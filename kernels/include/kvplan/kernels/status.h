// kvplan/kernels/status.h — what a kernel launcher returns: ok, or the failed call, its code and
// the place.
//
//   Status s = launch_kv_write(params, stream);
//   if (!s.ok()) std::cerr << s.describe() << "\n";   // "cudaLaunchKernel failed (2: out of memory) at kv_write.cu:88"
//
// Bad Params (a null pointer, a head dim the kernel has no instance for) are reported the same
// way, with call "params". Launchers never throw and never exit.
#pragma once

#include <string>

namespace kvplan::kernels {

class Status {
 public:
  static Status success() { return Status(); }
  static Status error(std::string call, int code, std::string message, std::string where) {
    Status s;
    s.ok_ = false;
    s.call_ = std::move(call);
    s.code_ = code;
    s.message_ = std::move(message);
    s.where_ = std::move(where);
    return s;
  }
  bool ok() const { return ok_; }
  const std::string& call() const { return call_; }
  int code() const { return code_; }
  const std::string& message() const { return message_; }
  const std::string& where() const { return where_; }
  std::string describe() const {
    if (ok_) return "ok";
    return call_ + " failed (" + std::to_string(code_) + ": " + message_ + ") at " + where_;
  }

 private:
  bool ok_ = true;
  std::string call_;
  int code_ = 0;
  std::string message_;
  std::string where_;
};

// A Params check in a launcher: `if (!cond) return params_error("why", __FILE__, __LINE__);`
inline Status params_error(const std::string& why, const char* file, int line) {
  return Status::error("params", -1, why, std::string(file) + ":" + std::to_string(line));
}

}  // namespace kvplan::kernels
