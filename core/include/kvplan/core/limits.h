// kvplan/core/limits.h — the largest sizes kvplan accepts from configs, flags and files.
//
// Each bound is far above any real model or deployment and low enough that every product kvplan
// forms (tokens x bytes per token, rows x columns x experts, blocks x block bytes) fits in int64.
// Inputs beyond a bound are refused with a ConfigError naming the field, the value and the bound,
// instead of overflowing into a wrong answer or an 85 GB allocation.
#pragma once

#include <cstdint>

namespace kvplan {

inline constexpr int64_t kMaxTokens = int64_t{1} << 34;   // one sequence, max_model_len, batched tokens
inline constexpr int kMaxLayers = 10'000;
inline constexpr int kMaxHiddenSize = 1 << 20;
inline constexpr int kMaxIntermediateSize = 1 << 22;
inline constexpr int kMaxVocabSize = 1 << 24;
inline constexpr int kMaxHeads = 1 << 16;                  // query, KV or state heads
inline constexpr int kMaxHeadDim = 1 << 16;
inline constexpr int kMaxExperts = 1 << 14;
inline constexpr int kMaxParallel = 1024;                  // tensor / pipeline parallel size
inline constexpr int kMaxSequences = 1 << 24;              // max_num_seqs, users

}  // namespace kvplan
