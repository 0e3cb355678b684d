"""kvplan.fit_runs: the same fit as `kvplan calibrate from-runs --json`, and its profile path."""
import json
import os
import subprocess
import tempfile
import unittest

import kvplan

CLI = os.environ.get("KVPLAN_CLI", "")
RUNS = "tests/data/runs/nerdalert_h100_llama31_8b_results.jsonl"
DEPLOYMENT = dict(gpu="h100-sxm", engine="vllm", engine_version="0.8.3", tensor_parallel_size=1)


class FitRunsTest(unittest.TestCase):
    def test_fit_dict_and_profile(self):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "fit.json")
            fit = kvplan.fit_runs([RUNS], where=["framework=vllm"], out=out, **DEPLOYMENT)
            self.assertEqual(fit["label"], "fitted to your runs")
            self.assertEqual(fit["profile"], out)
            self.assertTrue(fit["held_out"])
            self.assertEqual(len(fit["runs"]), 5)  # the burst with 985 failed requests left out
            self.assertEqual(sum(r["held_out"] for r in fit["runs"]), 1)
            with open(out) as f:
                self.assertEqual(json.load(f)["serving_fit"]["terms"]["step_time_factor"],
                                 fit["fitted"]["step_time_factor"])
            s = kvplan.Scenario(model="llama-3.1-8b", gpu="h100-sxm", engine_version="0.8.3", rate=2,
                                num_requests=20, prompt_lengths="fixed:1000", output_lengths="fixed:100",
                                profile=out)
            self.assertTrue(s.simulate(per_request=False)["step_time_source"].startswith("fitted to your runs"))
            if CLI:
                cli = subprocess.run([CLI, "calibrate", "from-runs", RUNS, "--where", "framework=vllm", "--gpu",
                                      "h100-sxm", "--engine", "vllm", "--engine-version", "0.8.3",
                                      "--tensor-parallel-size", "1", "--json"],
                                     capture_output=True, text=True, check=True)
                fit.pop("profile")
                self.assertEqual(json.loads(cli.stdout), fit)

    def test_missing_gpu_is_a_config_error(self):
        with self.assertRaisesRegex(kvplan.ConfigError, "the GPU is not stated"):
            kvplan.fit_runs([RUNS], where=["framework=vllm"], engine="vllm", engine_version="0.8.3",
                            tensor_parallel_size=1)


if __name__ == "__main__":
    unittest.main()
