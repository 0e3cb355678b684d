// CuptiActivitySource (cupti_activity.h): the CUPTI Activity API behind ActivitySource.
// CUDA builds only. Kineto's pattern: the C callbacks forward to the one owning object, which
// owns every buffer through a unique_ptr and parses completed buffers into KernelRecords.
#include "kvplan/calibration/cupti_activity.h"

#include <cupti.h>
#include <cxxabi.h>

#include <cstdlib>
#include <map>
#include <mutex>

namespace kvplan::calibration {

namespace {

// 8 MiB per buffer: ~30k kernel records; CUPTI asks for more when one fills.
constexpr size_t kBufferBytes = size_t{8} << 20;

Status cupti_status(CUptiResult r, const char* call, int line) {
  if (r == CUPTI_SUCCESS) return Status::success();
  const char* text = nullptr;
  if (cuptiGetResultString(r, &text) != CUPTI_SUCCESS || !text) text = "unknown CUPTI error";
  return Status::error(call, static_cast<int>(r), text, std::string("cupti_activity.cpp:") + std::to_string(line));
}

std::string demangle(const char* name) {
  if (!name) return "<unnamed kernel>";
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> out(abi::__cxa_demangle(name, nullptr, nullptr, &status), std::free);
  return status == 0 && out ? std::string(out.get()) : std::string(name);
}

const char* memcpy_name(uint8_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return "memcpy_h2d";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return "memcpy_d2h";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return "memcpy_d2d";
    default: return "memcpy_other";
  }
}

constexpr CUpti_ActivityKind kKinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                         CUPTI_ACTIVITY_KIND_MEMSET};

}  // namespace

struct CuptiActivitySource::Impl {
  std::mutex mutex;
  std::map<uint8_t*, std::unique_ptr<uint8_t[]>> buffers;  // handed to CUPTI, not yet completed
  std::vector<KernelRecord> pending;                       // parsed, not yet flushed out
  int64_t dropped = 0;
  bool registered = false;
  bool tracing = false;

  void on_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
    auto owned = std::make_unique<uint8_t[]>(kBufferBytes);  // new[] aligns to 16 >= CUPTI's 8
    *buffer = owned.get();
    *size = kBufferBytes;
    *max_records = 0;  // as many as fit
    std::lock_guard<std::mutex> lock(mutex);
    buffers.emplace(owned.get(), std::move(owned));
  }

  void on_completed(CUcontext ctx, uint32_t stream_id, uint8_t* buffer, size_t valid) {
    std::vector<KernelRecord> parsed;
    CUpti_Activity* r = nullptr;
    while (cuptiActivityGetNextRecord(buffer, valid, &r) == CUPTI_SUCCESS) {
      if (r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || r->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
        const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(r);
        parsed.push_back({demangle(k->name), k->start, k->end, k->correlationId, k->streamId, 0});
      } else if (r->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(r);
        parsed.push_back({memcpy_name(m->copyKind), m->start, m->end, m->correlationId, m->streamId,
                          static_cast<int64_t>(m->bytes)});
      } else if (r->kind == CUPTI_ACTIVITY_KIND_MEMSET) {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(r);
        parsed.push_back({"memset", m->start, m->end, m->correlationId, m->streamId, static_cast<int64_t>(m->bytes)});
      }
    }
    size_t dropped_here = 0;
    cuptiActivityGetNumDroppedRecords(ctx, stream_id, &dropped_here);
    std::lock_guard<std::mutex> lock(mutex);
    for (KernelRecord& k : parsed) pending.push_back(std::move(k));
    dropped += static_cast<int64_t>(dropped_here);
    buffers.erase(buffer);  // frees it
  }
};

namespace {

std::mutex g_owner_mutex;
CuptiActivitySource::Impl* g_owner = nullptr;  // the one source the C callbacks funnel into

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = nullptr;
  *size = 0;
  *max_records = 0;
  std::lock_guard<std::mutex> lock(g_owner_mutex);
  if (g_owner) g_owner->on_requested(buffer, size, max_records);
}

void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream_id, uint8_t* buffer, size_t /*size*/, size_t valid) {
  std::lock_guard<std::mutex> lock(g_owner_mutex);
  if (g_owner) g_owner->on_completed(ctx, stream_id, buffer, valid);
}

}  // namespace

CuptiActivitySource::CuptiActivitySource() : impl_(std::make_unique<Impl>()) {}

std::unique_ptr<CuptiActivitySource> CuptiActivitySource::create(Status* status) {
  std::lock_guard<std::mutex> lock(g_owner_mutex);
  if (g_owner) {
    *status = Status::error("CuptiActivitySource::create", -1, "another CUPTI activity source is alive",
                            "cupti_activity.cpp");
    return nullptr;
  }
  std::unique_ptr<CuptiActivitySource> s(new CuptiActivitySource());
  g_owner = s->impl_.get();
  *status = Status::success();
  return s;
}

CuptiActivitySource::~CuptiActivitySource() {
  (void)stop();  // errors were reported by an explicit stop(); a destructor cannot return them
  std::lock_guard<std::mutex> lock(g_owner_mutex);
  if (g_owner == impl_.get()) g_owner = nullptr;
}

Status CuptiActivitySource::start() {
  if (!impl_->registered) {
    if (Status s = cupti_status(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed),
                                "cuptiActivityRegisterCallbacks", __LINE__);
        !s.ok())
      return s;
    impl_->registered = true;
  }
  return set_tracing(true);
}

Status CuptiActivitySource::set_tracing(bool on) {
  if (on == impl_->tracing) return Status::success();
  for (CUpti_ActivityKind kind : kKinds) {
    const CUptiResult r = on ? cuptiActivityEnable(kind) : cuptiActivityDisable(kind);
    if (Status s = cupti_status(r, on ? "cuptiActivityEnable" : "cuptiActivityDisable", __LINE__); !s.ok()) return s;
  }
  impl_->tracing = on;
  return Status::success();
}

Status CuptiActivitySource::flush(std::vector<KernelRecord>* out) {
  if (Status s = cupti_status(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), "cuptiActivityFlushAll",
                              __LINE__);
      !s.ok())
    return s;
  std::lock_guard<std::mutex> lock(impl_->mutex);
  for (KernelRecord& k : impl_->pending) out->push_back(std::move(k));
  impl_->pending.clear();
  return Status::success();
}

Status CuptiActivitySource::stop() {
  if (!impl_->registered) return Status::success();
  Status first = set_tracing(false);
  Status f = cupti_status(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), "cuptiActivityFlushAll", __LINE__);
  if (first.ok()) first = f;
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->pending.clear();
  return first;
}

int64_t CuptiActivitySource::dropped_records() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->dropped;
}

std::string CuptiActivitySource::version() const {
  uint32_t v = 0;
  if (cuptiGetVersion(&v) != CUPTI_SUCCESS) return "unknown";
  return std::to_string(v);
}

}  // namespace kvplan::calibration
