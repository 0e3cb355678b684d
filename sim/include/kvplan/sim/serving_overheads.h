// kvplan/sim/serving_overheads.h — the time a serving stack spends outside the GPU's forward pass,
// as two named terms, each with the source of its number.
//
//   ServingOverheads o = default_serving_overheads(Engine::kTrtllm, /*cuda_graphs=*/true);
//   o.request.ns;  o.request.source;   // per request: added to TTFT and E2E at the client
//   o.step.ns;     o.step.source;      // per engine step: added to every step's time
//   o.step_factor.value;               // per engine step: multiplies the cost model's step time
//   o.prefill_step_factor.value;       // the same for the prefill part of a step
//   o.request_per_in_flight.ns;        // per request, per other request in flight when it is sent
//   o.request_per_in_flight_prefill_share.value;  // the same, as a share of the request's own prefill
//
// - request: tokenisation, scheduling, detokenisation and the HTTP round trip of one request. The
//   simulator delivers a request to the engine this long after the client sent it, so the client's
//   TTFT and E2E include it (and a closed-loop user's cycle does too); TPOT does not.
// - request_per_in_flight: the part of that delay that grows with the load on the server: each
//   request sent while k others are in flight (sent, not finished) reaches the engine
//   k · request_per_in_flight later still. The engines' front ends (HTTP, tokenisation, streaming
//   detokenised output for every running request) share CPU with all the requests they serve; the
//   published runs' TTFT grows about linearly with concurrency where the engine's own queueing
//   does not (docs/benchmarks.md, "Whole-model serving").
// - request_per_in_flight_prefill_share: the same growth, but as a share of the time the cost model
//   prices this request's prompt prefilled alone: each request sent while k others are in flight
//   reaches the engine k · share · prefill(prompt) later. Why prefill-shaped: in vLLM's runs the
//   TTFT added per user grows with the prompt and shrinks with TP just as one prefill does
//   (Llama-3.1-70B TP4: about 2.8 ms per user at 1024-token prompts, 18 ms at 8192; Qwen3-32B
//   1024 tokens: about 3.9 / 2.2 / 1.75 ms per user at TP2 / 4 / 8). Closed-loop users with equal
//   lengths fall into step with each other, so a new prompt often waits behind a share of the
//   others' prompts; the simulator's evenly staggered users do not reproduce that clumping, and a
//   delay of a fixed number of ms per user cannot follow it across prompt lengths and TP.
// - step: the engine's CPU work per forward pass (scheduler, input preparation, sampling sync,
//   output processing) that the GPU waits for. Added once to every step.
// - step_factor: how much faster or slower the engine's kernels run than the profile's (the
//   published operator tables were timed inside one vLLM version; another engine's kernels differ).
//   A step the cost model prices at t takes step_factor · t + step.
// - prefill_step_factor: the same for the prefill part of a step, so a step whose decodes alone the
//   cost model prices at t_d and whole at t takes step_factor · t_d + prefill_step_factor · (t − t_d)
//   + step. Why apart: an engine's decode kernels and its prefill (context) kernels differ from the
//   profile's by different amounts; TensorRT-LLM's decodes run faster than the vLLM-timed tables
//   (factor < 1), and one factor fitted mostly on decode made its prefill-heavy steps too short
//   (short outputs at high concurrency: TPOT under-predicted by 30-60%).
// Defaults per engine and CUDA-graph mode come from measurements (serving_overheads.cpp says which
// and how they were fitted); where none exist the term is 0 with source "not modelled".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kvplan/core/engine_memory.h"
#include "kvplan/sim/step_timer.h"
#include "kvplan/sim/time.h"

namespace kvplan::sim {

struct OverheadTerm {
  TimeNs ns = 0;
  std::string source = "not modelled";  // where the number comes from (fit, URL, "given")
};

struct StepFactor {
  double value = 1.0;
  std::string source = "not modelled";
};

struct ShareTerm {
  double value = 0.0;  // a dimensionless share (0: off)
  std::string source = "not modelled";
};

struct ServingOverheads {
  OverheadTerm request;  // per request (client-visible: TTFT and E2E)
  // Half-width of the spread of the per-request delay: each request's delay is drawn uniformly
  // from [request - spread, request + spread] (spread <= request), seeded per request id. Real clients
  // and servers do not deliver requests sent together at the same instant; how much that matters
  // depends on how the engine batches (docs/benchmarks.md, "Whole-model serving"). 0: every request exactly
  // `request`.
  OverheadTerm request_spread;
  // Per request, for each other request in flight (sent and not finished) when it is sent.
  OverheadTerm request_per_in_flight;
  // Per request, for each other request in flight when it is sent: this share of the cost model's
  // time for its own prompt prefilled alone (prompt_prefill_ns).
  ShareTerm request_per_in_flight_prefill_share;
  OverheadTerm step;     // per engine step
  StepFactor step_factor;          // multiplies the decode part of every step's cost-model time
  StepFactor prefill_step_factor;  // multiplies the prefill part (the step minus its decodes alone)
  // e.g. "per request 12.000 ms (fitted ...); per step 0.500 ms (fitted ...)"
  std::string describe() const;
};

// The defaults for an engine (vllm, sglang, trtllm; static gets none) with or without CUDA graphs.
ServingOverheads default_serving_overheads(Engine engine, bool cuda_graphs);

// The delay of one request sent while `others_in_flight` other requests are in flight:
// request + others_in_flight · (request_per_in_flight + request_per_in_flight_prefill_share ·
// prompt_prefill_ns), ± spread drawn from the request's own seeded stream, where prompt_prefill_ns
// is the cost model's time for the request's prompt prefilled alone (0: no prefill-shaped part). A
// pure function of its arguments; never negative.
TimeNs request_delay_ns(const ServingOverheads& o, uint64_t seed, int64_t request_id, int64_t others_in_flight = 0,
                        TimeNs prompt_prefill_ns = 0);

// The cost model's time for one prompt of prompt_tokens prefilled alone in one step (no cached
// prefix, no decodes, no engine factor or overhead): what request_per_in_flight_prefill_share is a
// share of.
TimeNs prompt_prefill_ns(StepTimer& timer, int64_t prompt_tokens);

// The time the simulator advances for one step the cost model prices at model_ns:
// max(1, round(factor · model_ns) + overhead_ns).
TimeNs engine_step_ns(TimeNs model_ns, double factor, TimeNs overhead_ns);

// The same for a step whose decodes alone the cost model prices at decode_only_ns (<= model_ns; the
// rest is its prefill part): max(1, round(factor · decode_only_ns + prefill_factor · (model_ns −
// decode_only_ns)) + overhead_ns).
TimeNs engine_step_ns(TimeNs model_ns, TimeNs decode_only_ns, double factor, double prefill_factor, TimeNs overhead_ns);

// Step-time factor f and step overhead o (ms, >= 0) from runs simulated with neither: the least
// squares of the relative error, min Σ ((f·p_i + o − m_i) / m_i)², over predicted p_i and measured
// m_i TPOTs (each output token one step). When the unconstrained optimum has o < 0, o = 0 and f
// alone is fitted. Needs >= 2 rows with positive values (otherwise f = 1, o = 0, rows = 0).
struct StepTermsFit {
  double factor = 1.0;
  double prefill_factor = 1.0;  // the split fit below; the one-factor fit sets it to factor
  double overhead_ms = 0.0;
  double unconstrained_overhead_ms = 0.0;  // the optimum before the o >= 0 rule
  size_t rows = 0;
};
StepTermsFit fit_step_terms(const std::vector<double>& predicted_ms, const std::vector<double>& measured_ms);

// Decode factor f, prefill factor g and step overhead o (ms, >= 0) from runs whose predicted TPOT is
// split into the time of decode work d_i and of prefill work q_i inside the steps between a
// request's tokens: min Σ ((f·d_i + g·q_i + o − m_i) / m_i)². When the optimum has o < 0, o = 0;
// when it has f <= 0 or g <= 0 (the rows cannot tell the two apart), the one-factor fit above on
// d_i + q_i. Needs >= 3 rows with d_i > 0 and m_i > 0 (otherwise that one-factor fit).
StepTermsFit fit_step_terms(const std::vector<double>& decode_ms, const std::vector<double>& prefill_ms,
                            const std::vector<double>& measured_ms);

// Request overhead a (ms) and per-in-flight overhead b (ms per other request in flight) from runs
// simulated with neither: the least absolute relative error,
// min Σ |p_i + a + b·k_i − m_i| / m_i over a >= 0, b >= 0, where p_i and m_i are the predicted and
// measured TTFTs and k_i the other requests in flight (concurrency − 1 for a closed-loop client).
// Least absolute error, not squares: a few runs whose TTFT is seconds of queueing the model does not
// reproduce must not pull the terms of the rest. For a fixed b the best a is a weighted median; the
// objective is convex in b, searched by golden section on [0, 100] ms. Needs >= 2 usable rows
// (otherwise a = b = 0, rows = 0).
struct RequestTermsFit {
  double request_ms = 0.0;
  double per_in_flight_ms = 0.0;
  size_t rows = 0;
};
RequestTermsFit fit_request_terms(const std::vector<double>& predicted_ms, const std::vector<double>& measured_ms,
                                  const std::vector<double>& others_in_flight);

// Rounds milliseconds to whole nanoseconds. Throws ConfigError (naming `field`) unless 0 <= ms <= 1e6.
TimeNs overhead_ms_to_ns(double ms, const std::string& field);

}  // namespace kvplan::sim
