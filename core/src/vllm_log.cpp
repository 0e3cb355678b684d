#include "kvplan/core/vllm_log.h"

#include <charconv>
#include <cmath>
#include <fstream>
#include <limits>
#include <initializer_list>
#include <regex>
#include <sstream>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "kvplan/core/error.h"
#include "kvplan/core/limits.h"

namespace kvplan {

namespace {

std::string strip(std::string s) {
  size_t a = s.find_first_not_of(" \t\r");
  size_t b = s.find_last_not_of(" \t\r");
  return a == std::string::npos ? std::string() : s.substr(a, b - a + 1);
}

// A number a figure pattern matched that is not one ("1.2.3", ",", 25 digits): bad input,
// reported by parse_vllm_log with the log's name and line.
struct BadNumber {
  std::string text;
};

// Longest line the patterns look at: std::regex recurses per character, and log lines of tens of
// thousands of characters overflowed the stack. Every line kvplan reads is far shorter (the
// longest, vLLM's engine-config line, is ~6,000 characters); the rest of a longer line is ignored.
constexpr size_t kMaxLineChars = 16384;

int64_t parse_grouped_int(const std::string& s) {
  std::string digits;
  for (char c : s) {
    if (c != ',') digits += c;
  }
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size() || v < 0) throw BadNumber{s};
  return v;
}

double parse_number(const std::string& s) {
  double v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v)) throw BadNumber{s};
  return v;
}

constexpr std::string_view kDecimal = "0123456789.";
constexpr std::string_view kGrouped = "0123456789,";

// The run of `chars` right after the first `key` in `line`, if it is followed by `suffix` (a
// linear scan: no backtracking over long lines).
std::optional<std::string> token_after(const std::string& line, std::string_view key, std::string_view chars,
                                       std::string_view suffix) {
  const size_t at = line.find(key);
  if (at == std::string::npos) return std::nullopt;
  const size_t start = at + key.size();
  size_t end = start;
  while (end < line.size() && chars.find(line[end]) != std::string_view::npos) ++end;
  if (end == start) return std::nullopt;
  if (!suffix.empty() && line.compare(end, suffix.size(), suffix) != 0) return std::nullopt;
  return line.substr(start, end - start);
}

// A pattern with the literal keywords one of which any match contains: the regex runs only on
// lines that hold one (std::regex is slow, and most log lines hold none of kvplan's keywords).
// An empty keyword list runs the regex on every line.
struct Pattern {
  Pattern(const char* pattern, std::initializer_list<std::string_view> keys) : re(pattern), keywords(keys) {}
  std::regex re;
  std::vector<std::string_view> keywords;
  bool may_match(const std::string& line) const {
    if (keywords.empty()) return true;
    for (std::string_view k : keywords) {
      if (line.find(k) != std::string::npos) return true;
    }
    return false;
  }
};

bool search(const std::string& line, std::smatch& m, const Pattern& p) {
  return p.may_match(line) && std::regex_search(line, m, p.re);
}

// First capture group of `p` in `line`, if it matches.
std::optional<std::string> find(const std::string& line, const Pattern& p) {
  std::smatch m;
  if (search(line, m, p)) return m[1].str();
  return std::nullopt;
}

template <typename T>
void set_if(std::optional<T>& field, const std::optional<std::string>& text) {
  if (!text) return;
  if constexpr (std::is_same_v<T, double>) field = parse_number(*text);
  else if constexpr (std::is_same_v<T, int64_t>) field = parse_grouped_int(*text);
  else if constexpr (std::is_same_v<T, int>) {
    const int64_t v = parse_grouped_int(*text);
    if (v > std::numeric_limits<int>::max()) throw BadNumber{*text};
    field = static_cast<int>(v);
  }
  else if constexpr (std::is_same_v<T, bool>) field = (*text == "True" || *text == "true");
  else field = *text;
}

// Settings named in key=value, 'key': value or --flag value form, on any line.
void read_settings(const std::string& line, VllmLog& log) {
  static const Pattern util{R"((?:gpu_memory_utilization|gpu-memory-utilization)['"]?\s*[=:(\s]\s*\(?([0-9.]+))", {"gpu_memory_utilization", "gpu-memory-utilization"}};
  static const Pattern max_len{R"((?:max_model_len|max-model-len|max_seq_len)['"]?\s*[=:\s]\s*([0-9,]+))", {"max_model_len", "max-model-len", "max_seq_len"}};
  static const Pattern tp{R"((?:tensor_parallel_size|tensor-parallel-size)['"]?\s*[=:\s]\s*([0-9]+))", {"tensor_parallel_size", "tensor-parallel-size"}};
  static const Pattern pp{R"((?:pipeline_parallel_size|pipeline-parallel-size)['"]?\s*[=:\s]\s*([0-9]+))", {"pipeline_parallel_size", "pipeline-parallel-size"}};
  static const Pattern dtype{R"((?:^|[\s,{'])dtype['"]?\s*[=:\s]\s*['"]?(?:torch\.)?([a-z0-9]+))", {"dtype"}};
  static const Pattern kv_dtype{R"((?:kv_cache_dtype|kv-cache-dtype)['"]?\s*[=:\s]\s*['"]?([a-z0-9_]+))", {"kv_cache_dtype", "kv-cache-dtype"}};
  // vLLM / TensorRT-LLM flag, and SGLang's ServerArgs repr (mamba_ssm_dtype=None when unset).
  static const Pattern state_dtype{R"((?:mamba_ssm_cache_dtype|mamba-ssm-cache-dtype)['"]?\s*[=:\s]\s*['"]?([a-z0-9_]+))", {"mamba_ssm_cache_dtype", "mamba-ssm-cache-dtype"}};
  // SGLang's ServerArgs repr (mamba_ssm_dtype=None when unset, which this does not match).
  static const Pattern sg_state_dtype{R"((?:^|[\s,(])mamba_ssm_dtype=['"]?([a-z0-9_]+))", {"mamba_ssm_dtype="}};
  static const Pattern quant{R"((?:^|[\s,])quantization['"]?\s*[=:\s]\s*['"]?([A-Za-z0-9_-]+))", {"quantization"}};
  static const Pattern block{R"((?:block_size|block-size)['"]?\s*[=:\s]\s*([0-9]+))", {"block_size", "block-size"}};
  static const Pattern seqs{R"((?:max_num_seqs|max-num-seqs)['"]?\s*(?:[=:\s]|to)\s*([0-9]+))", {"max_num_seqs", "max-num-seqs"}};
  static const Pattern batched{R"((?:max_num_batched_tokens|max-num-batched-tokens)['"]?\s*(?:[=:\s]|to)\s*([0-9,]+))", {"max_num_batched_tokens", "max-num-batched-tokens"}};
  static const Pattern eager{R"(enforce_eager['"]?\s*[=:\s]\s*(True|False|true|false))", {"enforce_eager"}};
  static const Pattern eager_flag{R"(--enforce-eager\b)", {"--enforce-eager"}};
  static const Pattern chunked{R"((?:enable_chunked_prefill|chunked_prefill_enabled)['"]?\s*[=:]\s*(True|False|true|false))", {"enable_chunked_prefill", "chunked_prefill_enabled"}};
  static const Pattern chunked_flag{R"(--enable-chunked-prefill(?:[= ](True|False|true|false))?)", {"--enable-chunked-prefill"}};
  static const Pattern sg_tp{R"((?:tp_size|--tp-size|--tp)['"]?\s*[=\s]\s*([0-9]+))", {"tp_size", "--tp"}};
  static const Pattern sg_frac{R"((?:mem_fraction_static|mem-fraction-static)['"]?\s*[=:\s]\s*([0-9.]+))", {"mem_fraction_static", "mem-fraction-static"}};
  static const Pattern sg_ctx{R"((?:context_len|context-length|context_length)['"]?\s*[=:\s]\s*([0-9,]+))", {"context_len", "context-length"}};
  static const Pattern trt_frac{R"((?:free_gpu_memory_fraction|kv_cache_free_gpu_mem_fraction)['"]?\s*[=:\s(]\s*([0-9.]+))", {"free_gpu_memory_fraction", "kv_cache_free_gpu_mem_fraction"}};
  static const Pattern trt_tpb{R"(Number of tokens per block:\s*([0-9]+))", {"Number of tokens per block:"}};
  set_if(log.gpu_memory_utilization, find(line, util));
  set_if(log.max_model_len, find(line, max_len));
  set_if(log.tensor_parallel_size, find(line, tp));
  set_if(log.pipeline_parallel_size, find(line, pp));
  set_if(log.dtype, find(line, dtype));
  set_if(log.kv_cache_dtype, find(line, kv_dtype));
  set_if(log.mamba_ssm_cache_dtype, find(line, state_dtype));
  set_if(log.mamba_ssm_cache_dtype, find(line, sg_state_dtype));
  set_if(log.quantization, find(line, quant));
  set_if(log.block_size, find(line, block));
  set_if(log.max_num_seqs, find(line, seqs));
  set_if(log.max_num_batched_tokens, find(line, batched));
  set_if(log.enforce_eager, find(line, eager));
  if (std::smatch unused; search(line, unused, eager_flag)) log.enforce_eager = true;
  set_if(log.chunked_prefill, find(line, chunked));
  std::smatch flag;
  if (search(line, flag, chunked_flag)) {
    log.chunked_prefill = !flag[1].matched || flag[1].str() == "True" || flag[1].str() == "true";
  }
  if (line.find("Chunked prefill is enabled") != std::string::npos) log.chunked_prefill = true;
  if (line.find("has a long context length") != std::string::npos &&
      line.find("initial memory profiling") != std::string::npos) {
    log.chunked_prefill = false;
  }
  set_if(log.tensor_parallel_size, find(line, sg_tp));
  set_if(log.mem_fraction_static, find(line, sg_frac));
  if (!log.max_model_len) set_if(log.max_model_len, find(line, sg_ctx));
  set_if(log.free_gpu_memory_fraction, find(line, trt_frac));
  set_if(log.block_size, find(line, trt_tpb));
}

}  // namespace

VllmLog parse_vllm_log(std::string_view text, std::string name) {
  VllmLog log;
  log.name = std::move(name);
  static const Pattern annotation{R"(^# (source|gpu|model|vllm_version|engine_version|engine|settings|kvplan_model|kvplan_gpu|kvplan_use_line|kvplan_note):\s*(.*)$)", {"# "}};
  static const Pattern version{R"(\(v?([0-9]+\.[0-9]+(?:\.[0-9]+)?)[^)]*\) with config)", {") with config"}};
  static const Pattern version_text{R"(([0-9]+\.[0-9]+(?:\.[0-9]+)?))", {}};
  static const Pattern model{R"(with config: model='([^']+)')", {"with config: model='"}};
  static const Pattern weights{
      R"((?:Loading model weights took|Model loading took|model weights take|weights memory:)\s*([0-9.]+)\s*Gi?B)", {"Loading model weights took", "Model loading took", "model weights take", "weights memory:"}};
  static const Pattern total{R"((?:total_gpu_memory|total_memory)\s*[=(\s]\s*\(?([0-9.]+)\s*GiB)", {"total_gpu_memory", "total_memory"}};
  static const Pattern total_free{R"(Free memory on device \([0-9.]+/([0-9.]+) GiB\))", {"Free memory on device ("}};
  static const Pattern activation{
      R"((?:PyTorch activation peak memory(?: takes)?|torch peak memory increase:)\s*([0-9.]+)\s*GiB)", {"PyTorch activation peak memory", "torch peak memory increase:"}};
  static const Pattern non_torch{
      R"((?:non_torch_memory(?: takes)?|non_torch_memory=|non-torch forward increase memory:)\s*([0-9.]+)\s*GiB)", {"non_torch_memory", "non-torch forward increase memory:"}};
  static const Pattern kv_mem{
      R"((?:Available KV cache memory:|reserved for KV Cache is|kv_cache_size=|available_kv_cache_memory)\s*([0-9.]+)\s*GiB)", {"Available KV cache memory:", "reserved for KV Cache is", "kv_cache_size=", "available_kv_cache_memory"}};
  static const Pattern tokens{
      R"((?:GPU KV cache size:\s*([0-9,]+) tokens|maximum number of tokens that can be stored in KV cache \(([0-9,]+)\)))", {"GPU KV cache size:", "maximum number of tokens that can be stored in KV cache ("}};
  static const Pattern blocks{R"((?:GPU|CUDA|cuda) blocks:\s*\**([0-9]+))", {" blocks:"}};
  static const Pattern concurrency{R"(Maximum concurrency for ([0-9,]+) tokens per request:\s*([0-9.]+)x)", {"Maximum concurrency for "}};
  // SGLang
  static const Pattern sg_begin{R"(Load weight begin\. avail mem=([0-9.]+) GB)", {"Load weight begin. avail mem="}};
  // (SGLang's later fields are found by scanning, not by ".*" patterns that backtrack over a line.)
  // TensorRT-LLM
  static const Pattern trt_mem{R"(paged kv cache: total: ([0-9.]+) GiB, available: ([0-9.]+) GiB)", {"paged kv cache: total: "}};
  static const Pattern trt_blocks{R"(Number of blocks in KV cache primary pool: ([0-9]+))", {"Number of blocks in KV cache primary pool: "}};
  static const Pattern trt_alloc{R"(Allocated ([0-9.]+) GiB for max tokens in paged KV cache \(([0-9,]+)\))", {"GiB for max tokens in paged KV cache ("}};
  static const Pattern trt_cap{R"(max_tokens are set \(to [0-9.]+ and ([0-9]+), respectively\))", {"max_tokens are set (to "}};
  static const Pattern graph_estimate{R"(Estimated CUDA graph memory:\s*([0-9.]+) GiB total)", {"Estimated CUDA graph memory:"}};
  static const Pattern graphs{R"(CUDA graph pool memory:\s*([0-9.]+) GiB \(actual\)|Graph capturing finished in [0-9]+ secs?, took ([0-9.]+) GiB)", {"CUDA graph pool memory:", "Graph capturing finished in "}};

  std::istringstream in{std::string(text)};
  std::string line;
  bool header = true;
  int64_t line_number = 0;
  try {
    while (std::getline(in, line)) {
      ++line_number;
      if (line.size() > kMaxLineChars) line.resize(kMaxLineChars);
      std::smatch m;
      if (header && search(line, m, annotation)) {
        std::string key = m[1].str();
        std::string value = strip(m[2].str());
        if (key == "source") log.source = value;
        else if (key == "gpu") log.gpu = value;
        else if (key == "kvplan_model") log.kvplan_model = value;
        else if (key == "kvplan_gpu") log.kvplan_gpu = value;
        else if (key == "kvplan_use_line") log.use_line = value;
        else if (key == "kvplan_note") log.note = value;
        else if (key == "model") log.model = value.substr(0, value.find(' '));
        else if (key == "engine") log.engine = value.substr(0, value.find(' '));
        else if (key == "vllm_version" || key == "engine_version") {
          if (auto v = find(value, version_text)) log.version = *v;
        } else if (key == "settings") {
          // "key=value (note); key=value": only values stated as facts, not "NOT ..." or "assumed".
          std::stringstream parts(value);
          std::string part;
          while (std::getline(parts, part, ';')) {
            if (part.find("assumed") != std::string::npos || part.find("NOT") != std::string::npos ||
                part.find("not ") != std::string::npos) {
              continue;
            }
            read_settings(part, log);
          }
        }
        continue;
      }
      if (line.rfind("# title:", 0) == 0 || line.rfind("# notes:", 0) == 0 || line.rfind("# gpu_count:", 0) == 0) continue;
      header = false;
      if (auto v = find(line, version)) log.version = *v;
      if (auto v = find(line, model)) log.model = *v;
      // Tracebacks quote engine source ("logits.softmax(dim=-1, dtype=torch.float32)"), not settings.
      const bool traceback = line.find(" ERROR ") != std::string::npos || line.find("Traceback") != std::string::npos ||
                             line.find("File \"") != std::string::npos;
      if (!traceback) read_settings(line, log);
      set_if(log.weights_gib, find(line, weights));
      set_if(log.total_gpu_memory_gib, find(line, total));
      set_if(log.total_gpu_memory_gib, find(line, total_free));
      set_if(log.activation_peak_gib, find(line, activation));
      set_if(log.non_torch_gib, find(line, non_torch));
      set_if(log.kv_cache_memory_gib, find(line, kv_mem));
      bool figures = log.use_line.empty() || line.find(log.use_line) != std::string::npos;
      if (figures) {
        std::smatch t;
        if (search(line, t, tokens)) log.kv_cache_tokens = parse_grouped_int(t[1].matched ? t[1].str() : t[2].str());
        set_if(log.num_gpu_blocks, find(line, blocks));
      }
      if (search(line, m, concurrency)) {
        log.concurrency_tokens = parse_grouped_int(m[1].str());
        log.max_concurrency = parse_number(m[2].str());
      }
      if (search(line, m, graphs)) log.cuda_graph_gib = parse_number(m[1].matched ? m[1].str() : m[2].str());
      set_if(log.cuda_graph_estimate_gib, find(line, graph_estimate));
      if (line.find("Load weight") != std::string::npos || line.find("KV Cache is allocated") != std::string::npos ||
          line.find("max_total_num_tokens=") != std::string::npos) {
        log.engine = "sglang";
        set_if(log.free_at_start_gib, find(line, sg_begin));
        if (line.find("Load weight end.") != std::string::npos) {
          set_if(log.free_after_weights_gib, token_after(line, "avail mem=", kDecimal, " GB"));
          set_if(log.weights_gib, token_after(line, "mem usage=", kDecimal, " GB"));
        }
        if (line.find("KV Cache is allocated.") != std::string::npos) {
          const auto k = token_after(line, "K size: ", kDecimal, " GB");
          const auto v = token_after(line, "V size: ", kDecimal, " GB");
          if (k && v) log.kv_cache_memory_gib = parse_number(*k) + parse_number(*v);
          set_if(log.kv_cache_tokens, token_after(line, "#tokens: ", kGrouped, ""));
        }
        set_if(log.kv_cache_tokens, token_after(line, "max_total_num_tokens=", kGrouped, ""));
      }
      if (line.find("TensorRT-LLM") != std::string::npos || line.find("TRT-LLM") != std::string::npos) {
        log.engine = "trtllm";
        if (search(line, m, trt_mem)) {
          log.total_gpu_memory_gib = parse_number(m[1].str());
          log.free_after_load_gib = parse_number(m[2].str());
        }
        set_if(log.num_gpu_blocks, find(line, trt_blocks));
        if (search(line, m, trt_alloc)) {
          log.kv_cache_memory_gib = parse_number(m[1].str());
          log.kv_cache_tokens = parse_grouped_int(m[2].str());
        }
        set_if(log.trtllm_max_tokens, find(line, trt_cap));
      }
    }
  } catch (const BadNumber& bad) {
    std::string shown = bad.text.size() > 40 ? bad.text.substr(0, 37) + "..." : bad.text;
    throw ConfigError(fmt::format("engine log '{}' line {}: '{}' stands where a number belongs and is not one",
                                  log.name, line_number, shown));
  }
  if (!log.kv_cache_tokens && log.num_gpu_blocks) {
    // TensorRT-LLM's default page is 64 tokens up to 0.x and 32 in the PyTorch backend; vLLM's 16.
    const int block = log.block_size.value_or(log.engine == "trtllm" ? 64 : 16);
    // Bounded before multiplying: a log line claiming 3e18 blocks must not overflow into a wrong
    // token count (found by fuzz_engine_log).
    if (block <= 0 || *log.num_gpu_blocks < 0 || *log.num_gpu_blocks > kMaxTokens / block) {
      throw ConfigError(fmt::format("engine log '{}': {} KV blocks of {} tokens is not a KV cache kvplan accepts "
                                    "(blocks x block size must be at most {} tokens)",
                                    log.name, *log.num_gpu_blocks, block, kMaxTokens));
    }
    log.kv_cache_tokens = *log.num_gpu_blocks * block;
  }
  if (!log.max_model_len && log.concurrency_tokens) log.max_model_len = log.concurrency_tokens;
  return log;
}

VllmLog load_vllm_log(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ConfigError(fmt::format("vllm log '{}': cannot be opened", path));
  std::stringstream buffer;
  buffer << in.rdbuf();
  VllmLog log = parse_vllm_log(buffer.str(), path);
  if (!log.kv_cache_tokens && !log.kv_cache_memory_gib) {
    throw ConfigError(fmt::format(
        "engine log '{}': no KV-cache line found (vLLM 'GPU KV cache size', '# GPU blocks' or 'Available KV cache "
        "memory'; SGLang 'KV Cache is allocated' or 'max_total_num_tokens'; TensorRT-LLM 'paged KV cache'); is this "
        "a start-up log?", path));
  }
  return log;
}

}  // namespace kvplan
