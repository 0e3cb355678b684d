// kvplan/kernels/window_attention.h — decode attention over a paged 16-bit cache that visits only
// the tokens a sliding window (Mistral, Gemma-2, gpt-oss) or StreamingLLM (attention sinks + recent
// window) keeps. One kernel: the sink/window token set and the optional in-kernel rotary are a
// variant of the decode loop (scheme_decode_kernels.cuh), not a copy of it.
//
//   WindowDecodeParams p;  p.window_tokens = 4096;                       // sliding window
//   p.sink_tokens = 4;  p.rotary_dim = 128;  p.rope_theta = 10000.f;     // StreamingLLM instead
//   Status s = launch_window_decode_attention(p, stream);
//
// Tokens attended. A sequence of len = context_lens[s] tokens (len counts the current token, whose
// K/V is already in the cache, as in decode_attention.h) attends to
//   sinks:  tokens [0, S'),                    S' = min(sink_tokens, len)
//   window: tokens [window_begin, len),        window_begin = max(S', len - window_tokens)
// n = S' + (len - window_begin) = min(len, sink_tokens + window_tokens) tokens in all
// (window_span below). Sliding window is sink_tokens = 0: the last window_tokens tokens, the current
// one included (HF/Gemma-2 convention: key j is seen by query i iff i - j < window_tokens). Block
// table entries of blocks holding no attended token are NEVER read: an engine that freed them may
// leave -1 there. The loop starts at the first attended token (not just the first touched block),
// and split-KV splits the n attended tokens, so the work is O(n), independent of len.
//
// Positions (rotary_dim > 0: StreamingLLM, Xiao et al. 2023, §3.2 "positional encoding within the
// cache"). The cache holds keys BEFORE rotary. Attended token number i (0-based, in the order
// above: sinks 0..S'-1, then the window) is rotated at cache position i; the query is rotated at
// cache position n - 1 (it is the last cached token). Rotary is neox-style rotate-half on the first
// rotary_dim channels (channels >= rotary_dim pass through): for pair j in [0, rotary_dim/2),
//   x'_j        = x_j cos(pos w_j) - x_{j+h} sin(pos w_j),
//   x'_{j+h}    = x_{j+h} cos(pos w_j) + x_j sin(pos w_j),     h = rotary_dim/2,
//   w_j = rope_theta^(-2j / rotary_dim).
// With rotary_dim = 0 no rotary is applied: keys must already carry theirs (sliding-window models
// rotate at original positions when writing the cache; positions never change there).
// The kernel computes w_j and the angle in fp32 (angle error <~ 1e-3 rad at positions ~ 4k); the
// reference in double.
#pragma once

#include <cstdint>

#include "kvplan/kernels/status.h"
#include "kvplan/kernels/types.h"

namespace kvplan::kernels {

struct WindowSpan {
  int sinks = 0;         // S' = min(sink_tokens, len)
  int window_begin = 0;  // first token of the window
  int count = 0;         // n, attended tokens
};
constexpr WindowSpan window_span(int len, int sink_tokens, int window_tokens) {
  const int l = len > 0 ? len : 0;
  const int sinks = sink_tokens < l ? sink_tokens : l;
  const int from_end = l - window_tokens;
  const int begin = from_end > sinks ? from_end : sinks;
  return {sinks, begin, sinks + (l - begin)};
}
// Token index (in the sequence) of attended token i in [0, count); i is also its cache position.
constexpr int window_token(const WindowSpan& s, int i) { return i < s.sinks ? i : s.window_begin + (i - s.sinks); }

struct WindowDecodeParams {
  ElemType dtype = ElemType::kBF16;  // of q, k_cache, v_cache, out
  int num_seqs = 0;
  int num_q_heads = 0;
  int num_kv_heads = 0;
  int head_dim = 0;          // 64, 128 or 256
  int num_blocks = 0;
  int tokens_per_block = 0;  // a power of two
  int max_blocks_per_seq = 0;
  float softmax_scale = 0.f;

  int window_tokens = 0;     // > 0
  int sink_tokens = 0;       // >= 0; 0 = plain sliding window
  int rotary_dim = 0;        // 0 (no rotary in the kernel) or a multiple of 16 <= head_dim
  float rope_theta = 10000.f;

  const uint16_t* q = nullptr;            // [num_seqs, num_q_heads, head_dim] (before rotary when rotary_dim > 0)
  const uint16_t* k_cache = nullptr;      // [num_blocks, num_kv_heads, tokens_per_block, head_dim]
  const uint16_t* v_cache = nullptr;      // [num_blocks, num_kv_heads, tokens_per_block, head_dim]
  const int32_t* block_table = nullptr;   // [num_seqs, max_blocks_per_seq]; entries of blocks with an attended token in [0, num_blocks), others unread
  const int32_t* context_lens = nullptr;  // [num_seqs], each in [0, max_blocks_per_seq * tokens_per_block]
  uint16_t* out = nullptr;                // [num_seqs, num_q_heads, head_dim]

  int num_splits = 1;                     // splits of the n attended tokens (decode_split_range(n, ...))
  float* partial_out = nullptr;           // [num_seqs, num_splits, num_q_heads, head_dim] (num_splits > 1)
  float* partial_lse = nullptr;           // [num_seqs, num_splits, num_q_heads] (num_splits > 1)
};

Status launch_window_decode_attention(const WindowDecodeParams& p, Stream stream);

}  // namespace kvplan::kernels
