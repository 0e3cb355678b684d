// kvplan/sim/serving_overheads.h — the time a serving stack spends outside the GPU's forward pass,
// as two named terms, each with the source of its number.
//
//   ServingOverheads o = default_serving_overheads(Engine::kTrtllm, /*cuda_graphs=*/true);
//   o.request.ns;  o.request.source;   // per request: added to TTFT and E2E at the client
//   o.step.ns;     o.step.source;      // per engine step: added to every step's time
//
// - request: tokenisation, scheduling, detokenisation and the HTTP round trip of one request. The
//   simulator delivers a request to the engine this long after the client sent it, so the client's
//   TTFT and E2E include it (and a closed-loop user's cycle does too); TPOT does not.
// - step: the engine's CPU work per forward pass (scheduler, input preparation, sampling sync,
//   output processing) that the GPU waits for. Added once to every step.
// Defaults per engine and CUDA-graph mode come from measurements (serving_overheads.cpp says which
// and how they were fitted); where none exist the term is 0 with source "not modelled".
#pragma once

#include <string>

#include "kvplan/core/engine_memory.h"
#include "kvplan/sim/time.h"

namespace kvplan::sim {

struct OverheadTerm {
  TimeNs ns = 0;
  std::string source = "not modelled";  // where the number comes from (fit, URL, "given")
};

struct ServingOverheads {
  OverheadTerm request;  // per request (client-visible: TTFT and E2E)
  OverheadTerm step;     // per engine step
  // e.g. "per request 12.000 ms (fitted ...); per step 0.500 ms (fitted ...)"
  std::string describe() const;
};

// The defaults for an engine (vllm, sglang, trtllm; static gets none) with or without CUDA graphs.
ServingOverheads default_serving_overheads(Engine engine, bool cuda_graphs);

// Rounds milliseconds to whole nanoseconds. Throws ConfigError (naming `field`) unless 0 <= ms <= 1e6.
TimeNs overhead_ms_to_ns(double ms, const std::string& field);

}  // namespace kvplan::sim
