// The calibration runner's host logic with MockActivitySource and fake launches: statistics by
// hand, CUPTI/event ratio, kernel-name mapping (unknown kernels reported), resume, the
// "nothing lost" property on a failing launch, progress lines and canonical parameter JSON.
#include "kvplan/calibration/runner.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

namespace kvplan::calibration {
namespace {

// Calls the launch reps times and reports scripted event times (repeating the last one).
class FakeTimer : public RepetitionTimer {
 public:
  std::vector<std::vector<double>> scripted;  // one entry per time_repetitions call
  int calls = 0;
  Status time_repetitions(int reps, const Launch& launch, std::vector<double>* per_rep_ns) override {
    per_rep_ns->clear();
    for (int i = 0; i < reps; ++i) {
      if (Status s = launch(); !s.ok()) return s;
    }
    const size_t k = static_cast<size_t>(calls++);
    for (int i = 0; i < reps; ++i) {
      per_rep_ns->push_back(k < scripted.size() && !scripted[k].empty()
                                ? scripted[k][std::min(static_cast<size_t>(i), scripted[k].size() - 1)]
                                : 1000.0);
    }
    return Status::success();
  }
  Status synchronize() override { return Status::success(); }
};

KernelRecord rec(const std::string& name, uint64_t start, uint64_t dur) {
  return KernelRecord{name, start, start + dur, 0, 7, 0};
}

constexpr const char* kPagedName =
    "void decode_attention_kernel<__nv_bfloat16, 128, 4, PagedRows>(DecodeArgs, PagedRows)";
constexpr const char* kContigName =
    "void decode_attention_kernel<__nv_bfloat16, 128, 4, ContiguousRows>(DecodeArgs, ContiguousRows)";

Shape shape(const std::string& kernel, int b, int* launches, bool fail = false) {
  Shape s;
  s.kernel = kernel;
  s.op_class = "attention_decode";
  s.params.set("B", b).set("dtype", "bf16");
  s.bytes = 1e6;
  s.flops = 2e6;
  s.prepare = [launches, fail](Launch* launch) {
    *launch = [launches, fail]() {
      ++*launches;
      return fail ? Status::error("cudaLaunchKernel", 2, "out of memory", "fake") : Status::success();
    };
    return Status::success();
  };
  return s;
}

struct Fixture {
  MockActivitySource source;
  FakeTimer timer;
  std::ostringstream progress;
  double clock = 0;
  RunnerOptions options() {
    RunnerOptions o;
    o.warmup = 2;
    o.reps = 5;
    o.progress = &progress;
    o.now_s = [this] { return clock += 1.0; };  // one second per reading
    return o;
  }
};

TEST(RunnerStats, HandComputed) {
  // sorted: 10 20 30 40 100; median 30; p90 at rank 3.6 = 40 + 0.6*60 = 76; mean 200/5 = 40.
  DurationStats s = compute_stats({40, 10, 100, 30, 20});
  EXPECT_EQ(s.n, 5);
  EXPECT_DOUBLE_EQ(s.min_ns, 10);
  EXPECT_DOUBLE_EQ(s.median_ns, 30);
  EXPECT_DOUBLE_EQ(s.p90_ns, 76);
  EXPECT_DOUBLE_EQ(s.mean_ns, 40);
  // Even count: median is the mean of the middle two; p90 at rank 2.7 = 3 + 0.7*1 = 3.7.
  DurationStats e = compute_stats({4, 1, 3, 2});
  EXPECT_DOUBLE_EQ(e.median_ns, 2.5);
  EXPECT_DOUBLE_EQ(e.p90_ns, 3.7);
  EXPECT_DOUBLE_EQ(e.mean_ns, 2.5);
  EXPECT_EQ(compute_stats({}).n, 0);
}

TEST(RunnerParams, CanonicalJson) {
  Params p;
  p.set("tokens_per_block", 16).set("B", int64_t{4}).set("dtype", "bf16").set("ratio", 0.5).set("scale", 2.0);
  p.set("lens", std::vector<int64_t>{1, 300, 7}).set("note", std::string("a\"b"));
  EXPECT_EQ(p.to_json(),
            R"({"B":4,"dtype":"bf16","lens":[1,300,7],"note":"a\"b","ratio":0.5,"scale":2.0,"tokens_per_block":16})");
  Params q;  // same values, other insertion order: same text
  q.set("scale", 2.0).set("note", std::string("a\"b")).set("lens", std::vector<int64_t>{1, 300, 7});
  q.set("ratio", 0.5).set("dtype", "bf16").set("B", 4).set("tokens_per_block", 16);
  EXPECT_EQ(p.to_json(), q.to_json());
  EXPECT_EQ(Params().to_json(), "{}");
}

TEST(RunnerNames, MangledNamesMapToIds) {
  const KernelNameTable t = KernelNameTable::standard();
  EXPECT_EQ(t.classify(kPagedName)->id, "decode_paged");
  EXPECT_EQ(t.classify(kContigName)->id, "decode_contiguous");
  EXPECT_EQ(t.classify("_Z23decode_attention_kernelI13__nv_bfloat16Li128ELi4E14ContiguousRowsEv")->id,
            "decode_contiguous");
  EXPECT_EQ(t.classify("void decode_combine_kernel<__nv_bfloat16>(DecodeCombineParams)")->id, "decode_combine");
  EXPECT_EQ(t.classify("quant_decode_kernel<4, 128>")->op_class, "attention_decode");
  EXPECT_EQ(t.classify("kivi_write_kernel(KiviWriteParams)")->id, "kv_write_kivi2");
  EXPECT_EQ(t.classify("kv_write_kernel(KvWriteParams)")->id, "kv_write");
  EXPECT_EQ(t.classify("prefill_attention_kernel<128>")->op_class, "attention_prefill");
  EXPECT_EQ(t.classify("nvjet_hsh_256x128_64x4_1x2_h_bz_coopA_NTN")->id, "gemm");
  EXPECT_EQ(t.classify("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64")->op_class, "gemm");
  EXPECT_EQ(t.classify("memcpy_h2d")->op_class, "copy_h2d");
  EXPECT_EQ(t.classify("ncclDevKernel_AllReduce_Sum_bf16_RING_LL")->op_class, "collective");
  EXPECT_FALSE(t.classify("some_other_kernel").has_value());
}

TEST(Runner, MeasuresStatsAndRatioAndHandsRowsToSink) {
  Fixture f;
  // Flush 1 discards warm-up; flush 2 has 5 repetitions of one kernel: 10 20 30 40 100 ns.
  f.source.script_flush({rec(kPagedName, 1, 999)});
  f.source.script_flush({rec(kPagedName, 500, 40), rec(kPagedName, 100, 10), rec(kPagedName, 900, 100),
                         rec(kPagedName, 300, 30), rec(kPagedName, 200, 20)});
  f.timer.scripted = {{}, {50, 60, 55, 45, 65}};  // events: median 55
  int launches = 0;
  std::vector<std::vector<Measurement>> got;
  Runner r(f.source, f.timer, KernelNameTable::standard(), f.options());
  RunReport rep = r.run({shape("decode_paged", 8, &launches)}, [&](const auto& rows) { got.push_back(rows); });
  ASSERT_TRUE(rep.status.ok()) << rep.status.describe();
  EXPECT_EQ(launches, 7);  // 2 warm-up + 5 timed
  ASSERT_EQ(got.size(), 1u);
  ASSERT_EQ(got[0].size(), 1u);
  const Measurement& m = got[0][0];
  EXPECT_EQ(m.kernel, "decode_paged");
  EXPECT_EQ(m.op_class, "attention_decode");
  EXPECT_EQ(m.params_json, R"({"B":8,"dtype":"bf16"})");
  EXPECT_EQ(m.n, 5);
  EXPECT_DOUBLE_EQ(m.min_ns, 10);
  EXPECT_DOUBLE_EQ(m.median_ns, 30);
  EXPECT_DOUBLE_EQ(m.p90_ns, 76);
  EXPECT_DOUBLE_EQ(m.mean_ns, 40);
  EXPECT_DOUBLE_EQ(m.event_median_ns, 55);
  EXPECT_DOUBLE_EQ(m.cupti_event_ratio, 30.0 / 55.0);
  EXPECT_DOUBLE_EQ(m.bytes, 1e6);
  EXPECT_DOUBLE_EQ(m.flops, 2e6);
  EXPECT_EQ(rep.shapes_measured, 1);
  EXPECT_TRUE(rep.unknown_kernels.empty());
  EXPECT_FALSE(f.source.started());  // stopped at the end
}

TEST(Runner, MultiKernelShapeSumsPerRepetitionAndReportsUnknownKernel) {
  Fixture f;
  RunnerOptions o = f.options();
  o.reps = 2;
  f.source.script_flush({});
  // Two repetitions of (split kernel, combine kernel, an unknown helper kernel), in time order.
  f.source.script_flush({rec(kPagedName, 0, 100), rec("decode_combine_kernel<bf16>", 110, 10),
                         rec("mystery_kernel", 125, 5), rec(kPagedName, 200, 120),
                         rec("decode_combine_kernel<bf16>", 330, 12), rec("mystery_kernel", 345, 6)});
  int launches = 0;
  std::vector<Measurement> rows;
  Runner r(f.source, f.timer, KernelNameTable::standard(), o);
  RunReport rep = r.run({shape("decode_paged", 1, &launches)}, [&](const auto& got) { rows = got; });
  ASSERT_TRUE(rep.status.ok());
  ASSERT_EQ(rows.size(), 2u);  // the shape, plus the combine component
  EXPECT_DOUBLE_EQ(rows[0].min_ns, 115);   // 100 + 10 + 5: the unknown kernel's time stays in its shape
  EXPECT_DOUBLE_EQ(rows[0].median_ns, 126.5);  // (115 + 138) / 2
  EXPECT_EQ(rows[1].kernel, "decode_combine");
  EXPECT_EQ(rows[1].op_class, "");  // breakdown only: the fitter fits the shape's row
  EXPECT_EQ(rows[1].bytes, 0);
  EXPECT_DOUBLE_EQ(rows[1].median_ns, 11);
  EXPECT_EQ(rows[1].params_json, rows[0].params_json);
  ASSERT_EQ(rep.unknown_kernels.size(), 1u);
  EXPECT_EQ(rep.unknown_kernels.at("mystery_kernel"), 2);
  EXPECT_NE(f.progress.str().find("unknown kernel (no name rule; time counted in its shape): mystery_kernel x2"),
            std::string::npos);
}

TEST(Runner, RecordsThatDoNotSplitIntoRepetitionsRejectTheShape) {
  Fixture f;
  f.source.script_flush({});
  f.source.script_flush({rec(kPagedName, 0, 10), rec(kPagedName, 20, 10), rec(kPagedName, 40, 10)});  // 3, reps 5
  int launches = 0;
  int sink_calls = 0;
  Runner r(f.source, f.timer, KernelNameTable::standard(), f.options());
  RunReport rep = r.run({shape("decode_paged", 1, &launches)}, [&](const auto&) { ++sink_calls; });
  EXPECT_TRUE(rep.status.ok());
  EXPECT_EQ(sink_calls, 0);
  EXPECT_EQ(rep.shapes_rejected, 1);
  ASSERT_EQ(rep.warnings.size(), 1u);
  EXPECT_NE(rep.warnings[0].find("3 records do not split into 5 repetitions"), std::string::npos);
}

TEST(Runner, DroppedRecordsRejectTheShape) {
  Fixture f;
  f.source.script_flush({});
  f.source.script_flush({rec(kPagedName, 0, 10)});
  int launches = 0;
  Shape s = shape("decode_paged", 1, &launches);
  // The drop happens during the timed repetitions: the count changes between the two flushes.
  s.prepare = [&](Launch* launch) {
    *launch = [&]() {
      if (++launches == 3) f.source.set_dropped(4);
      return Status::success();
    };
    return Status::success();
  };
  Runner r(f.source, f.timer, KernelNameTable::standard(), f.options());
  RunReport rep = r.run({s}, [&](const auto&) { FAIL() << "rejected shape reached the sink"; });
  EXPECT_EQ(rep.shapes_rejected, 1);
  EXPECT_NE(rep.warnings.at(0).find("CUPTI dropped 4 records"), std::string::npos);
}

std::vector<KernelRecord> five(const char* name) {
  std::vector<KernelRecord> v;
  for (int i = 0; i < 5; ++i) v.push_back(rec(name, uint64_t(i) * 100, 10 + uint64_t(i)));
  return v;
}

TEST(Runner, ResumeSkipsStoredShapesWithoutPreparingThem) {
  Fixture f;
  f.source.script_flush({});
  f.source.script_flush(five(kPagedName));
  int launches_a = 0, launches_b = 0;
  std::vector<std::string> asked;
  RunnerOptions o = f.options();
  o.has_shape = [&](const std::string& kernel, const std::string& params) {
    asked.push_back(kernel + params);
    return params == R"({"B":1,"dtype":"bf16"})";
  };
  std::vector<std::string> stored;
  Runner r(f.source, f.timer, KernelNameTable::standard(), o);
  RunReport rep = r.run({shape("decode_paged", 1, &launches_a), shape("decode_paged", 2, &launches_b)},
                        [&](const auto& rows) { stored.push_back(rows.at(0).params_json); });
  ASSERT_TRUE(rep.status.ok());
  EXPECT_EQ(launches_a, 0);
  EXPECT_EQ(launches_b, 7);
  EXPECT_EQ(rep.shapes_resumed, 1);
  EXPECT_EQ(rep.shapes_measured, 1);
  EXPECT_EQ(stored, std::vector<std::string>{R"({"B":2,"dtype":"bf16"})"});
  EXPECT_EQ(asked.size(), 2u);
  EXPECT_NE(f.progress.str().find("shape 1/2 decode_paged resumed"), std::string::npos);
}

TEST(Runner, FailingLaunchStopsWithErrorAfterEarlierShapesReachedTheSink) {
  Fixture f;
  f.source.script_flush({});
  f.source.script_flush(five(kPagedName));
  f.source.script_flush({});
  f.source.script_flush(five(kContigName));
  int a = 0, b = 0, bad = 0, after = 0;
  std::vector<std::string> sunk;
  Runner r(f.source, f.timer, KernelNameTable::standard(), f.options());
  RunReport rep = r.run({shape("decode_paged", 1, &a), shape("decode_contiguous", 1, &b),
                         shape("decode_paged", 3, &bad, /*fail=*/true), shape("decode_paged", 4, &after)},
                        [&](const auto& rows) { sunk.push_back(rows.at(0).kernel + rows.at(0).params_json); });
  ASSERT_FALSE(rep.status.ok());
  EXPECT_EQ(rep.status.call(), "cudaLaunchKernel");
  EXPECT_NE(rep.status.describe().find("out of memory"), std::string::npos);
  // Nothing lost: both completed shapes were handed over before the failure; nothing after it ran.
  EXPECT_EQ(sunk, (std::vector<std::string>{R"(decode_paged{"B":1,"dtype":"bf16"})",
                                            R"(decode_contiguous{"B":1,"dtype":"bf16"})"}));
  EXPECT_EQ(rep.shapes_measured, 2);
  EXPECT_EQ(bad, 1);
  EXPECT_EQ(after, 0);
  EXPECT_NE(f.progress.str().find("shape 3/4 decode_paged FAILED: cudaLaunchKernel failed (2: out of memory)"),
            std::string::npos);
}

TEST(Runner, FlushErrorIsReturned) {
  Fixture f;
  f.source.fail_flush_at(1);
  f.source.script_flush({});
  int launches = 0;
  Runner r(f.source, f.timer, KernelNameTable::standard(), f.options());
  RunReport rep = r.run({shape("decode_paged", 1, &launches)}, [](const auto&) {});
  EXPECT_EQ(rep.status.call(), "cuptiActivityFlushAll");
  EXPECT_EQ(rep.shapes_measured, 0);
}

TEST(Runner, ProgressLinesCountShapesWithElapsedAndEta) {
  Fixture f;
  for (int i = 0; i < 2; ++i) {
    f.source.script_flush({});
    f.source.script_flush(five(kPagedName));
  }
  int a = 0, b = 0;
  Runner r(f.source, f.timer, KernelNameTable::standard(), f.options());
  RunReport rep = r.run({shape("decode_paged", 1, &a), shape("decode_paged", 2, &b)}, [](const auto&) {});
  ASSERT_TRUE(rep.status.ok());
  // Clock: start reads 1; shape 1's line reads 2 (elapsed 1, eta 1*1); shape 2's reads 3 (elapsed 2, eta 0).
  EXPECT_EQ(f.progress.str(),
            "[calibrate] shape 1/2 decode_paged measured elapsed 1.0s eta 1.0s\n"
            "[calibrate] shape 2/2 decode_paged measured elapsed 2.0s eta 0.0s\n");
}

TEST(Runner, CuptiOverheadIsTracedMinusUntracedEventTime) {
  Fixture f;
  // time_repetitions calls: warm-up, traced (per rep 3000), untraced (per rep 2000).
  f.timer.scripted = {{}, {3000, 3100, 2900, 3000, 3000}, {2000, 2050, 1950, 2000, 2000}};
  int launches = 0;
  Shape s = shape("cupti_overhead", 1, &launches);
  s.op_class = "";
  s.mode = Shape::Mode::kCuptiOverhead;
  s.kernels_per_rep = 2;  // the row is per launch: half of each repetition's time
  std::vector<Measurement> rows;
  Runner r(f.source, f.timer, KernelNameTable::standard(), f.options());
  RunReport rep = r.run({s}, [&](const auto& got) { rows = got; });
  ASSERT_TRUE(rep.status.ok()) << rep.status.describe();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].kernel, "cupti_overhead");
  EXPECT_DOUBLE_EQ(rows[0].median_ns, 500);  // (3000 - 2000) / 2
  EXPECT_DOUBLE_EQ(rows[0].min_ns, 475);     // (2900 - 1950) / 2
  EXPECT_DOUBLE_EQ(rows[0].event_median_ns, 1000);
  EXPECT_DOUBLE_EQ(rows[0].cupti_event_ratio, 1.5);
  EXPECT_TRUE(f.source.tracing());  // back on for later shapes
  EXPECT_EQ(launches, 12);
}

}  // namespace
}  // namespace kvplan::calibration
