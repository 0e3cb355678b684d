// The machine's description for a calibration run (runner_gpu.h): GPU name, UUID, driver and clocks
// read through NVML (dlopen), else nvidia-smi — read only, clocks never set — plus kvplan's version.
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <ctime>
#include <string>

#include "kvplan/config.h"
#include "kvplan/core/build_info.h"
#include "kvplan/kernels/device.h"
#include "runner_gpu.h"

namespace kvplan::calibration::internal {

using kernels::DeviceInfo;
using kernels::query_device;

namespace {

std::string uuid_text(const cudaUUID_t& u) {
  char buf[64];
  const auto* b = reinterpret_cast<const unsigned char*>(u.bytes);
  std::snprintf(buf, sizeof buf, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
                b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
  return buf;
}

// NVML through dlopen: no nvml.h or libnvidia-ml at build time; read-only queries only.
bool read_nvml(const std::string& uuid, GpuState* st) {
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return false;
  using Init = int (*)();
  using ByUuid = int (*)(const char*, void**);
  using Clock = int (*)(void*, int, unsigned*);
  using Temp = int (*)(void*, int, unsigned*);
  using Power = int (*)(void*, unsigned*);
  using Driver = int (*)(char*, unsigned);
  auto init = reinterpret_cast<Init>(dlsym(lib, "nvmlInit_v2"));
  auto by_uuid = reinterpret_cast<ByUuid>(dlsym(lib, "nvmlDeviceGetHandleByUUID"));
  auto clock = reinterpret_cast<Clock>(dlsym(lib, "nvmlDeviceGetClockInfo"));
  auto temp = reinterpret_cast<Temp>(dlsym(lib, "nvmlDeviceGetTemperature"));
  auto power = reinterpret_cast<Power>(dlsym(lib, "nvmlDeviceGetPowerUsage"));
  auto driver = reinterpret_cast<Driver>(dlsym(lib, "nvmlSystemGetDriverVersion"));
  auto shutdown = reinterpret_cast<Init>(dlsym(lib, "nvmlShutdown"));
  bool ok = false;
  if (init && by_uuid && clock && init() == 0) {
    void* dev = nullptr;
    if (by_uuid(uuid.c_str(), &dev) == 0) {
      unsigned sm = 0, mem = 0, t = 0, mw = 0;
      clock(dev, 1 /*NVML_CLOCK_SM*/, &sm);
      clock(dev, 2 /*NVML_CLOCK_MEM*/, &mem);
      if (temp) temp(dev, 0 /*NVML_TEMPERATURE_GPU*/, &t);
      if (power) power(dev, &mw);
      char drv[96] = {0};
      if (driver && driver(drv, sizeof drv) == 0) st->driver = drv;
      st->clocks_json = "{\"mem_mhz\":" + std::to_string(mem) + ",\"power_w\":" + std::to_string(mw / 1000) +
                        ",\"sm_mhz\":" + std::to_string(sm) + ",\"source\":\"nvml\",\"temp_c\":" + std::to_string(t) + "}";
      ok = true;
    }
    if (shutdown) shutdown();
  }
  dlclose(lib);
  return ok;
}

bool read_nvidia_smi(const std::string& uuid, GpuState* st) {
  const std::string cmd = "nvidia-smi --query-gpu=driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw "
                          "--format=csv,noheader,nounits -i " + uuid + " 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return false;
  char line[512] = {0};
  const bool got = std::fgets(line, sizeof line, p) != nullptr;
  pclose(p);
  if (!got) return false;
  std::string text(line);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  std::vector<std::string> f;
  size_t start = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    if (i == text.size() || text[i] == ',') {
      std::string v = text.substr(start, i - start);
      while (!v.empty() && v.front() == ' ') v.erase(v.begin());
      f.push_back(v);
      start = i + 1;
    }
  }
  if (f.size() < 5) return false;
  st->driver = f[0];
  auto num = [](const std::string& v) { return v.find_first_not_of("0123456789.") == std::string::npos && !v.empty() ? v : "null"; };
  st->clocks_json = "{\"mem_mhz\":" + num(f[2]) + ",\"power_w\":" + num(f[4]) + ",\"sm_mhz\":" + num(f[1]) +
                    ",\"source\":\"nvidia-smi\",\"temp_c\":" + num(f[3]) + "}";
  return true;
}

}  // namespace

GpuState read_gpu_state(int device) {
  GpuState st;
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, device) == cudaSuccess) {
    st.name = prop.name;
    st.uuid = uuid_text(prop.uuid);
  }
  if (!read_nvml(st.uuid, &st) && !read_nvidia_smi(st.uuid, &st)) {
    st.clocks_json = "{\"source\":\"unavailable\"}";
  }
  if (st.driver.empty()) {
    int v = 0;
    cudaDriverGetVersion(&v);
    st.driver = "cuda-driver-api " + std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
  }
  return st;
}

RunInfo describe_this_machine(int device, const std::string& mode, const std::string& cupti_version) {
  RunInfo r;
  const GpuState st = read_gpu_state(device);
  const DeviceInfo d = query_device(device);
  r.gpu_name = st.name;
  r.gpu_uuid = st.uuid;
  r.driver_version = st.driver;
  r.cuda_version = std::to_string(d.runtime_version / 1000) + "." + std::to_string((d.runtime_version % 1000) / 10);
  r.cupti_version = cupti_version;
  r.clocks_seen = "{\"before\":" + st.clocks_json + "}";
  r.kvplan_version = KVPLAN_VERSION;
  r.git_commit = std::string(build_commit());
  char host[256] = {0};
  if (gethostname(host, sizeof host - 1) == 0) r.host = host;
  char when[32];
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
  r.started_utc = when;
  r.mode = mode;
  r.num_sms = d.num_sms;
  r.memory_bytes = d.memory_bytes;
  return r;
}

}  // namespace kvplan::calibration::internal
