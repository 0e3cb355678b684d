// Parameter counts and weight bytes. Both come from one enumeration of the model's tensors, so the
// exact count (tp = 1, no padding) and the per-GPU bytes cannot drift apart.
#include "kvplan/core/param_count.h"

#include "kvplan/core/kv_layout.h"

#include <algorithm>

namespace kvplan {

namespace {

enum class Part { kEmbedding, kAttention, kRecurrent, kMlp, kExperts, kSharedExperts, kRouter, kNorm, kLmHead };

struct Tensor {
  Part part;
  int64_t rows;   // output features (per GPU)
  int64_t cols;   // input features (per GPU)
  bool quantizable;  // a linear layer's weight matrix
  int64_t copies = 1;  // identical tensors (e.g. one per routed expert)
};

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

class TensorList {
 public:
  TensorList(const ModelConfig& m, int tp, bool pad_vocab) : m_(m), tp_(tp), pad_vocab_(pad_vocab) {}

  std::vector<Tensor> tensors;

  void linear(Part part, int64_t rows, int64_t cols, bool bias, int64_t copies = 1) {
    tensors.push_back({part, rows, cols, true, copies});
    if (bias) tensors.push_back({part, rows, 1, false, copies});
  }
  void vec(Part part, int64_t n) { tensors.push_back({part, n, 1, false}); }
  void mat(Part part, int64_t rows, int64_t cols) { tensors.push_back({part, rows, cols, false}); }

  int64_t vocab_per_gpu() const {
    // vLLM's VocabParallelEmbedding pads the vocabulary to a multiple of 64, then splits it.
    int64_t v = m_.vocab_size;
    if (pad_vocab_) v = ceil_div(v, 64) * 64;
    return ceil_div(v, tp_);
  }

  void norm(int64_t width) {
    vec(Part::kNorm, width);
    if (m_.norm == NormKind::kLayerNorm) vec(Part::kNorm, width);  // bias
  }

  void attention() {
    const AttentionShape& a = m_.attention;
    const int64_t h = m_.hidden_size;
    const int64_t hq = a.num_q_heads / tp_;
    const int64_t hkv = a.num_kv_heads >= tp_ ? a.num_kv_heads / tp_ : 1;
    linear(Part::kAttention, hq * a.head_dim * (a.output_gate ? 2 : 1), h, a.qkv_bias);
    linear(Part::kAttention, hkv * a.head_dim, h, a.qkv_bias);
    linear(Part::kAttention, hkv * a.v_head_dim, h, a.qkv_bias);
    linear(Part::kAttention, h, hq * a.v_head_dim, false);
    if (a.qk_norm) {
      vec(Part::kAttention, a.head_dim);
      vec(Part::kAttention, a.head_dim);
    }
  }

  void mla() {
    const MlaShape& a = m_.mla;
    const int64_t h = m_.hidden_size;
    const int64_t heads = a.num_heads / tp_;
    const int64_t qk = a.qk_nope_head_dim + a.qk_rope_head_dim;
    if (a.q_lora_rank > 0) {
      linear(Part::kAttention, a.q_lora_rank, h, false);
      vec(Part::kAttention, a.q_lora_rank);
      linear(Part::kAttention, heads * qk, a.q_lora_rank, false);
    } else {
      linear(Part::kAttention, heads * qk, h, false);
    }
    linear(Part::kAttention, a.kv_lora_rank + a.qk_rope_head_dim, h, false);
    vec(Part::kAttention, a.kv_lora_rank);
    linear(Part::kAttention, heads * (a.qk_nope_head_dim + a.v_head_dim), a.kv_lora_rank, false);
    linear(Part::kAttention, h, heads * a.v_head_dim, false);
  }

  void mamba1() {
    const MambaShape& a = m_.mamba;
    const int64_t h = m_.hidden_size;
    const int64_t di = a.d_inner / tp_;
    linear(Part::kRecurrent, 2 * di, h, a.proj_bias);
    mat(Part::kRecurrent, di, a.d_conv);
    if (a.conv_bias) vec(Part::kRecurrent, di);
    linear(Part::kRecurrent, a.dt_rank + 2 * a.d_state, di, false);
    linear(Part::kRecurrent, di, a.dt_rank, true);
    mat(Part::kRecurrent, di, a.d_state);  // A_log
    vec(Part::kRecurrent, di);             // D
    linear(Part::kRecurrent, h, di, a.proj_bias);
    if (a.inner_layernorms) {
      vec(Part::kRecurrent, a.dt_rank);
      vec(Part::kRecurrent, a.d_state);
      vec(Part::kRecurrent, a.d_state);
    }
  }

  void mamba2() {
    const MambaShape& a = m_.mamba;
    const int64_t h = m_.hidden_size;
    const int64_t di = a.d_inner / tp_;
    const int64_t groups = a.n_groups >= tp_ ? a.n_groups / tp_ : a.n_groups;
    const int64_t heads = a.num_heads / tp_;
    const int64_t conv = di + 2 * groups * a.d_state;
    linear(Part::kRecurrent, 2 * di + 2 * groups * a.d_state + heads, h, a.proj_bias);
    mat(Part::kRecurrent, conv, a.d_conv);
    if (a.conv_bias) vec(Part::kRecurrent, conv);
    vec(Part::kRecurrent, heads);  // dt_bias
    vec(Part::kRecurrent, heads);  // A_log
    vec(Part::kRecurrent, heads);  // D
    vec(Part::kRecurrent, di);     // gated RMSNorm
    linear(Part::kRecurrent, h, di, a.proj_bias);
  }

  void linear_attention() {
    const LinearAttentionShape& a = m_.linear;
    const int64_t h = m_.hidden_size;
    const int64_t key_dim = a.num_key_heads / tp_ * a.key_head_dim;
    const int64_t value_heads = a.num_value_heads / tp_;
    const int64_t value_dim = value_heads * a.value_head_dim;
    linear(Part::kRecurrent, 2 * key_dim + 2 * value_dim, h, false);  // in_proj_qkvz
    linear(Part::kRecurrent, 2 * value_heads, h, false);              // in_proj_ba
    mat(Part::kRecurrent, 2 * key_dim + value_dim, a.conv_kernel);    // depthwise conv1d
    vec(Part::kRecurrent, value_heads);                               // dt_bias
    vec(Part::kRecurrent, value_heads);                               // A_log
    vec(Part::kRecurrent, a.value_head_dim);                          // gated RMSNorm
    linear(Part::kRecurrent, h, value_dim, false);                    // out_proj
  }

  void mlp(const MlpShape& s) {
    const int64_t h = m_.hidden_size;
    switch (s.kind) {
      case MlpKind::kGated:
        if (s.intermediate_size == 0) return;
        linear(Part::kMlp, 2 * (s.intermediate_size / tp_), h, s.bias);
        linear(Part::kMlp, h, s.intermediate_size / tp_, s.bias);
        return;
      case MlpKind::kPlain:
        linear(Part::kMlp, s.intermediate_size / tp_, h, s.bias);
        linear(Part::kMlp, h, s.intermediate_size / tp_, s.bias);
        return;
      case MlpKind::kMoe: {
        const int64_t width = s.expert_intermediate_size / tp_;
        linear(Part::kExperts, 2 * width, h, false, s.num_experts);
        linear(Part::kExperts, h, width, false, s.num_experts);
        mat(Part::kRouter, s.num_experts, h);
        if (s.router_bias) vec(Part::kRouter, s.num_experts);
        if (s.shared_intermediate_size > 0) {
          const int64_t shared = s.shared_intermediate_size / tp_;
          linear(Part::kSharedExperts, 2 * shared, h, false);
          linear(Part::kSharedExperts, h, shared, false);
          if (s.shared_expert_gate) mat(Part::kSharedExperts, 1, h);
        }
        return;
      }
    }
  }

  void layer(const LayerSpec& l) {
    switch (l.kind) {
      case LayerKind::kFullAttention:
      case LayerKind::kSlidingAttention: attention(); break;
      case LayerKind::kMla: mla(); break;
      case LayerKind::kMamba1: mamba1(); break;
      case LayerKind::kMamba2: mamba2(); break;
      case LayerKind::kLinearAttention: linear_attention(); break;
    }
    mlp(l.mlp);
    for (int i = 0; i < m_.norms_per_layer; ++i) norm(m_.hidden_size);
  }

  void embedding() { mat(Part::kEmbedding, vocab_per_gpu(), m_.hidden_size); }
  void head(bool force_untied) {
    norm(m_.hidden_size);
    if (!m_.tie_word_embeddings || force_untied) {
      tensors.push_back({Part::kLmHead, vocab_per_gpu(), m_.hidden_size, false});
    }
  }

 private:
  const ModelConfig& m_;
  int tp_;
  bool pad_vocab_;
};

std::vector<Tensor> enumerate(const ModelConfig& m, const Parallelism& p, int stage, bool pad_vocab) {
  TensorList list(m, p.tensor_parallel, pad_vocab);
  auto [first, last] = pipeline_stage_layers(m.num_layers(), p.pipeline_parallel, stage);
  bool is_first = stage == 0;
  bool is_last = stage == p.pipeline_parallel - 1;
  if (is_first) list.embedding();
  for (int i = first; i < last; ++i) list.layer(m.layers[static_cast<size_t>(i)]);
  // With pipeline stages the last stage holds its own LM head even when tied.
  if (is_last) list.head(p.pipeline_parallel > 1 && m.tie_word_embeddings);
  return std::move(list.tensors);
}

int64_t tensor_bytes(const Tensor& t, const WeightFormat& f) {
  const int64_t n = t.rows * t.cols;
  if (!t.quantizable || f.dtype == DType::kBF16 || f.dtype == DType::kF16) {
    return n * (f.dtype == DType::kF32 ? 4 : 2);
  }
  if (f.dtype == DType::kF32) return n * 4;
  if (is_fp8(f.dtype) || f.dtype == DType::kInt8) {
    return n + t.rows * 4;  // 1 byte per weight, one fp32 scale per output channel
  }
  // int4 / int2 with group scales along the input dimension.
  const int64_t groups = t.rows * ceil_div(t.cols, f.group_size);
  return dtype_bytes_for(f.dtype, n) + groups * 2 * (f.asymmetric ? 2 : 1);
}

}  // namespace

int64_t ParamCount::total() const {
  return embedding + attention + recurrent + mlp + experts + shared_experts + routers + norms + lm_head;
}

int64_t ParamCount::active() const { return total() - experts + active_experts; }

ParamCount count_parameters(const ModelConfig& m) {
  ParamCount c;
  for (const Tensor& t : enumerate(m, Parallelism{}, 0, false)) {
    const int64_t n = t.rows * t.cols * t.copies;
    switch (t.part) {
      case Part::kEmbedding: c.embedding += n; break;
      case Part::kAttention: c.attention += n; break;
      case Part::kRecurrent: c.recurrent += n; break;
      case Part::kMlp: c.mlp += n; break;
      case Part::kExperts: c.experts += n; break;
      case Part::kSharedExperts: c.shared_experts += n; break;
      case Part::kRouter: c.routers += n; break;
      case Part::kNorm: c.norms += n; break;
      case Part::kLmHead: c.lm_head += n; break;
    }
  }
  for (const LayerSpec& l : m.layers) {
    if (l.mlp.kind == MlpKind::kMoe) {
      c.active_experts += static_cast<int64_t>(l.mlp.experts_per_token) * 3 * m.hidden_size *
                          l.mlp.expert_intermediate_size;
    }
  }
  return c;
}

int64_t weight_bytes_per_gpu(const ModelConfig& m, const WeightFormat& f, const Parallelism& p, int stage) {
  int64_t total = 0;
  for (const Tensor& t : enumerate(m, p, stage, true)) total += tensor_bytes(t, f) * t.copies;
  return total;
}

int64_t weight_bytes_total(const ModelConfig& m, const WeightFormat& f) {
  int64_t total = 0;
  for (const Tensor& t : enumerate(m, Parallelism{}, 0, false)) total += tensor_bytes(t, f) * t.copies;
  return total;
}

}  // namespace kvplan
