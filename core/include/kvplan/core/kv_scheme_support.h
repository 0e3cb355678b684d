// kvplan/core/kv_scheme_support.h — what a KV scheme costs beyond bytes, and who runs it. kvplan's
// memory arithmetic is exact for every scheme it describes, including schemes that lose accuracy
// (int4, KIVI-2, FP4, H2O eviction, StreamingLLM, low-rank keys, cross-layer sharing) and schemes a
// given engine does not implement (int4 KV in vLLM). Those answers are still worth having — what
// would fit if the engine did it — but never as if nothing were odd: every memory plan carries these
// warnings, so the CLI, JSON, reports and the planner's banner say them.
//
//   kv_scheme_warnings(scheme, Engine::kVllm);  // {"KV scheme int4 ... is lossy: ...", "vLLM does not implement ..."}
#pragma once

#include <string>
#include <vector>

#include "kvplan/core/engine_memory.h"
#include "kvplan/core/kv_scheme.h"

namespace kvplan {

// The lossy parts of the scheme ("accuracy cost not modelled: check on your evaluation"), then what
// the engine does not implement. Empty for bf16/fp16/fp8 KV without eviction in vLLM, SGLang or
// TensorRT-LLM. The static engine is kvplan's generic batcher and implements everything.
std::vector<std::string> kv_scheme_warnings(const KvScheme& scheme, Engine engine);

}  // namespace kvplan
