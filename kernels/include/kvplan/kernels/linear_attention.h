// kvplan/kernels/linear_attention.h — (gated) linear attention with a constant-size fp32 state per
// sequence and value head: a recurrent decode step and a chunk-parallel varlen prefill.
//
//   LinearAttentionDecodeParams p;  p.q = q;  p.k = k;  p.v = v;  p.decay = gate;  p.state = state;  ...
//   Status s = launch_linear_attention_decode(p, stream);   // state updated in place, out written
//
// The recurrence (value head h of one sequence, state S_h of shape [key_head_dim, value_head_dim]):
//
//   S_t = a_t · S_{t-1} + φ(k_t) v_tᵀ          a_t = decay of token t and head h, in (0, 1]
//   o_t = scale · φ(q_t)ᵀ S_t
//
// Update first, then read: token t attends to itself (the causal convention of linear attention,
// and what the prefill computes for every token). φ is the feature map (identity, elu+1, relu),
// applied in fp32 to q and k. `decay == nullptr` is plain linear attention (a_t = 1); a gated model
// (GLA, Qwen3-Next's gate) passes its per-token, per-head factor, already exponentiated.
// Note: Qwen3-Next's Gated DeltaNet uses the delta rule (S ← a·S + β k (v − Sᵀk)ᵀ); this file is
// the plain gated form, whose state has the same size and the same memory traffic per step.
//
// Heads: q and k have num_key_heads heads, v, decay, state and out num_value_heads; value head h
// reads key head h / (num_value_heads / num_key_heads) (consecutive value heads share a key head,
// as `repeat_interleave` in Qwen3-Next). num_key_heads must divide num_value_heads.
//
// Prefill in chunk-parallel form (chunks of kLinearAttentionChunk tokens of one sequence). With
// G_t = Σ_{r ≤ t} log a_r counted from the chunk start and S_prev the state before the chunk:
//
//   o_t   = scale · ( e^{G_t} φ(q_t)ᵀ S_prev + Σ_{s ≤ t in chunk} e^{G_t − G_s} (φ(q_t)·φ(k_s)) v_s )
//   S_end = e^{G_L} S_prev + Σ_{s in chunk} e^{G_L − G_s} φ(k_s) v_sᵀ          (L = last token)
//
// which is the recurrence above unrolled over the chunk (every factor e^{G_t − G_s} ≤ 1: no
// overflow however small the decays). Pointers are device pointers for the launchers, host pointers
// for the references (reference/linear_attention_ref.h).
#pragma once

#include <cstdint>
#include <string>

#include "kvplan/kernels/status.h"
#include "kvplan/kernels/types.h"

namespace kvplan::kernels {

enum class FeatureMap : uint8_t {
  kIdentity,    // φ(x) = x
  kEluPlusOne,  // φ(x) = x + 1 for x > 0, e^x otherwise (Katharopoulos et al.)
  kRelu,        // φ(x) = max(x, 0)
};

// Tokens per chunk of the prefill kernel, exposed so tests can put lengths on chunk boundaries ±1.
inline constexpr int kLinearAttentionChunk = 64;
// Largest key_head_dim the CUDA kernels take (decode and prefill); the references take any.
inline constexpr int kLinearAttentionMaxKeyDim = 128;

// One decode step for num_seqs sequences (one new token each).
struct LinearAttentionDecodeParams {
  ElemType dtype = ElemType::kBF16;  // of q, k, v, out
  FeatureMap feature_map = FeatureMap::kIdentity;
  int num_seqs = 0;
  int num_key_heads = 0;
  int num_value_heads = 0;  // a multiple of num_key_heads
  int key_head_dim = 0;     // d_k, kernels: 1..kLinearAttentionMaxKeyDim
  int value_head_dim = 0;   // d_v, any >= 1
  float scale = 1.f;        // multiplies the output (1/sqrt(d_k) for GLA-style scaled queries)

  const uint16_t* q = nullptr;  // [num_seqs, num_key_heads, key_head_dim]
  const uint16_t* k = nullptr;  // [num_seqs, num_key_heads, key_head_dim]
  const uint16_t* v = nullptr;  // [num_seqs, num_value_heads, value_head_dim]
  const float* decay = nullptr; // [num_seqs, num_value_heads] in (0, 1]; nullptr = 1 (plain)
  float* state = nullptr;       // [num_seqs, num_value_heads, key_head_dim, value_head_dim] in/out, fp32
  uint16_t* out = nullptr;      // [num_seqs, num_value_heads, value_head_dim]
};

// Causal prefill of packed variable-length sequences: sequence s owns tokens
// [cu_seqlens[s], cu_seqlens[s+1]) of q, k, v, decay and out. Each sequence starts from its
// initial state (zeros when initial_state is null) and its state after its last token is written
// to final_state. initial_state and final_state may be the same buffer (in-place update): each CTA
// reads its slice of the state before it writes it. A sequence of 0 tokens copies its state.
struct LinearAttentionPrefillParams {
  ElemType dtype = ElemType::kBF16;  // of q, k, v, out
  FeatureMap feature_map = FeatureMap::kIdentity;
  int num_seqs = 0;
  int total_tokens = 0;  // == cu_seqlens[num_seqs]
  int num_key_heads = 0;
  int num_value_heads = 0;
  int key_head_dim = 0;     // kernels: 1..kLinearAttentionMaxKeyDim
  int value_head_dim = 0;
  float scale = 1.f;

  const uint16_t* q = nullptr;           // [total_tokens, num_key_heads, key_head_dim]
  const uint16_t* k = nullptr;           // [total_tokens, num_key_heads, key_head_dim]
  const uint16_t* v = nullptr;           // [total_tokens, num_value_heads, value_head_dim]
  const float* decay = nullptr;          // [total_tokens, num_value_heads] in (0, 1]; nullptr = 1
  const int32_t* cu_seqlens = nullptr;   // [num_seqs + 1] 0, then running sums of tokens per sequence
  const float* initial_state = nullptr;  // [num_seqs, num_value_heads, key_head_dim, value_head_dim]; nullptr = 0
  float* final_state = nullptr;          // [num_seqs, num_value_heads, key_head_dim, value_head_dim]
  uint16_t* out = nullptr;               // [total_tokens, num_value_heads, value_head_dim]
};

// Elements of one sequence's state (all value heads).
inline int64_t linear_attention_state_elems(int num_value_heads, int key_head_dim, int value_head_dim) {
  return int64_t{num_value_heads} * key_head_dim * value_head_dim;
}

// Host-checkable problems with the scalar fields and pointers (device arrays are not read): empty
// string when none. Shared by the launchers and the references; the launchers also require
// key_head_dim <= kLinearAttentionMaxKeyDim.
std::string linear_attention_decode_problem(const LinearAttentionDecodeParams& p);
std::string linear_attention_prefill_problem(const LinearAttentionPrefillParams& p);

// Preconditions the launchers cannot check (device data): decays in (0, 1] (a decay of 0 makes
// log a = -inf and the prefill's chunk factors NaN); cu_seqlens non-decreasing and ending at
// total_tokens.
Status launch_linear_attention_decode(const LinearAttentionDecodeParams& p, Stream stream);
Status launch_linear_attention_prefill(const LinearAttentionPrefillParams& p, Stream stream);

}  // namespace kvplan::kernels
