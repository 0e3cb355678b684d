"""The Python module kvplan (python/src/module.cpp): scenarios by keyword or from a file, the answers
as plain Python objects, ConfigError with the CLI's message, the CLI's JSON byte for byte, and the
sweep example. Run by ctest (tests/python/CMakeLists.txt) with PYTHONPATH set to build/python,
KVPLAN_CLI naming the kvplan executable and the repository root as the working directory."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

import kvplan

CLI = os.environ.get("KVPLAN_CLI", "")
CHAT = "data/scenarios/chat-h100.json"


def cli(*args):
    return subprocess.run([CLI, *args], capture_output=True, text=True)


class ScenarioTest(unittest.TestCase):
    def test_defaults_and_keywords(self):
        default = kvplan.Scenario().memory()
        self.assertEqual(default["tokens_per_block"], 16)
        fp8 = kvplan.Scenario(kv_cache_dtype="fp8", max_model_len=8192).memory()
        self.assertEqual(fp8["max_model_len"], 8192)
        # fp8 KV holds twice the tokens of bf16 in (about) the same budget
        self.assertGreater(fp8["kv_cache_tokens"], 1.9 * default["kv_cache_tokens"])

    def test_sections_as_dicts_equal_flags(self):
        a = kvplan.Scenario(engine={"max_model_len": 8192}, kv_cache={"dtype": "int4"})
        b = kvplan.Scenario(max_model_len=8192, kv_cache_dtype="int4")
        self.assertEqual(a.memory_json(), b.memory_json())
        self.assertEqual(a.settings(), {"max-model-len": "8192", "kv-cache-dtype": "int4"})

    def test_value_types(self):
        s = kvplan.Scenario(gpu_memory_utilization=0.8, enforce_eager=True, dtype=None)
        self.assertEqual(s.settings()["gpu-memory-utilization"], "0.8")
        self.assertEqual(s.settings()["enforce-eager"], "true")
        self.assertIsInstance(s.memory()["fits"], bool)

    def test_replace_leaves_the_original(self):
        base = kvplan.Scenario(max_model_len=4096)
        changed = base.replace(max_model_len=16384)
        self.assertEqual(base.memory()["max_model_len"], 4096)
        self.assertEqual(changed.memory()["max_model_len"], 16384)

    def test_load_scenario(self):
        s = kvplan.load_scenario(CHAT)
        self.assertIn("chat on one H100", s.name)
        m = s.memory()
        self.assertEqual(m["max_model_len"], 8192)
        self.assertIn("distribution", m)  # kv_cache.fit_lengths
        self.assertIsInstance(m["terms"], list)

    def test_settings_table(self):
        rows = {row["keyword"]: row for row in kvplan.settings()}
        self.assertEqual(rows["max_model_len"]["flag"], "--max-model-len")
        self.assertEqual(rows["max_model_len"]["file_key"], "engine.max_model_len")
        self.assertIn("fp8", rows["kv_cache_dtype"]["choices"])
        for row in rows.values():
            self.assertTrue(row["unit"] and row["description"], row["keyword"])


class ErrorTest(unittest.TestCase):
    def test_config_error_is_a_value_error_naming_the_flag(self):
        with self.assertRaises(kvplan.ConfigError) as e:
            kvplan.Scenario(max_model_len=-5)
        self.assertIsInstance(e.exception, ValueError)
        self.assertIn("--max-model-len=-5", str(e.exception))

    def test_unknown_keyword_names_the_closest(self):
        with self.assertRaisesRegex(kvplan.ConfigError, "max-model-len"):
            kvplan.Scenario(max_model_length=8192)

    def test_wrong_choice_lists_the_choices(self):
        with self.assertRaisesRegex(kvplan.ConfigError, "fp8"):
            kvplan.Scenario(kv_cache_dtype="fp7")

    def test_cross_field_error_raised_at_construction(self):
        # The scenario is resolved when it is made (model, GPU and the rules between fields).
        with self.assertRaisesRegex(kvplan.ConfigError, "tensor-parallel-size=3 must divide"):
            kvplan.Scenario(model="llama-3.1-8b", tensor_parallel_size=3)
        with self.assertRaisesRegex(kvplan.ConfigError, "tensor-parallel-size=3 must divide"):
            kvplan.Scenario().replace(tensor_parallel_size=3)

    def test_unknown_model_raises_at_construction(self):
        # It raised nothing until .memory() (issue 27); now the constructor resolves the scenario.
        with self.assertRaisesRegex(kvplan.ConfigError, "nope"):
            kvplan.Scenario(model="nope")
        with self.assertRaisesRegex(kvplan.ConfigError, "nope"):
            kvplan.Scenario().replace(gpu="nope")

    @unittest.skipUnless(CLI, "KVPLAN_CLI not set")
    def test_unknown_model_has_the_cli_message(self):
        with self.assertRaises(kvplan.ConfigError) as e:
            kvplan.Scenario(model="nope")
        r = cli("memory", "--model", "nope")
        self.assertEqual(r.returncode, 2)
        self.assertEqual(r.stderr.strip(), "kvplan: " + str(e.exception))

    def test_version_one_file_warns_once(self):
        import warnings
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            old = kvplan.load_scenario("tests/plan/v1/chat-h100.json")
            new = kvplan.load_scenario(CHAT)
        notes = [w for w in seen if "is version 1; it was migrated to version 2" in str(w.message)]
        self.assertEqual(len(notes), 1, [str(w.message) for w in seen])
        self.assertIsInstance(old.memory(), dict)
        self.assertIsInstance(new.memory(), dict)

    def test_missing_file(self):
        with self.assertRaises(kvplan.ConfigError):
            kvplan.load_scenario("no/such/scenario.json")

    @unittest.skipUnless(CLI, "KVPLAN_CLI not set")
    def test_same_message_as_the_cli(self):
        for keywords, flags in [({"max_model_len": -5}, ["--max-model-len=-5"]),
                                ({"tensor_parallel_size": 3}, ["--tensor-parallel-size=3"])]:
            with self.assertRaises(kvplan.ConfigError) as e:
                kvplan.Scenario(**keywords).memory()
            r = cli("memory", *flags)
            self.assertEqual(r.returncode, 2)
            self.assertEqual(r.stderr.strip(), "kvplan: " + str(e.exception))


class AnswerTest(unittest.TestCase):
    def small_run(self):
        return kvplan.Scenario(users=8, think_time=1, turns=2, duration=20, seed=3,
                               prompt_lengths="fixed:512", output_lengths="fixed:64", slo_ttft_ms=2000)

    def test_simulate_returns_dicts_and_per_request_lists(self):
        run = self.small_run().simulate()
        n = len(run["per_request"]["ttft_ms"])
        self.assertGreater(n, 0)
        for column in ("id", "prompt_tokens", "output_tokens", "arrival_s", "ttft_ms", "tpot_ms", "e2e_ms"):
            self.assertEqual(len(run["per_request"][column]), n, column)
        self.assertTrue(all(t > 0 for t in run["per_request"]["ttft_ms"]))
        self.assertEqual(set(run["per_request"]["output_tokens"]), {64})
        self.assertNotIn("per_request", self.small_run().simulate(per_request=False))

    def test_simulate_is_deterministic(self):
        self.assertEqual(self.small_run().simulate_json(), self.small_run().simulate_json())

    def test_capacity(self):
        cap = self.small_run().replace(duration=10).capacity(tolerance=0.25)
        self.assertIsInstance(cap, dict)
        self.assertEqual(json.loads(json.dumps(cap)), cap)  # plain JSON-able objects

    def test_users_n_simulates_n_distinct_users(self):
        run = self.small_run().replace(users=11).simulate()
        self.assertEqual(sorted(set(run["per_request"]["user"])), list(range(11)))

    def test_default_workload_is_the_chat_preset(self):
        s = kvplan.Scenario()
        self.assertEqual(s.settings(), {})  # nothing given: every workload field is the preset's
        self.assertEqual(kvplan.Scenario(workload="chat").settings(), {})
        rag = kvplan.Scenario(workload="rag")
        self.assertEqual(rag.settings(), {"workload": "rag"})
        self.assertEqual(kvplan.Scenario(workload={"preset": "rag"}).settings(), {"workload": "rag"})
        with self.assertRaisesRegex(kvplan.ConfigError, "--workload=chatbot must be one of chat, code, rag, agent, batch"):
            kvplan.Scenario(workload="chatbot")

    def test_memory_dict_is_the_json_document(self):
        # memory() builds its dict without the JSON step; it must be the document memory_json()
        # prints: same keys in the same (sorted) order, same values and the same kinds (an int
        # stays an int, a float a float, null None), nested dicts and lists included.
        scenarios = [
            kvplan.Scenario(kv_cache_dtype="fp8", max_model_len=8192),
            kvplan.load_scenario(CHAT),  # with a length distribution
            kvplan.Scenario(model="deepseek-v3", gpu="h200", tensor_parallel_size=8),
            kvplan.Scenario(model="llama-3.1-70b", tensor_parallel_size=4, kv_cache_dtype="int4",
                            gpu_price=2.5),
            kvplan.Scenario(model="llama-3.1-70b", max_model_len=131072),  # does not fit
        ]

        def same(a, b, where):
            self.assertIs(type(a), type(b), where)
            if isinstance(a, dict):
                self.assertEqual(list(a), list(b), where)
                for k in a:
                    same(a[k], b[k], where + "." + k)
            elif isinstance(a, list):
                self.assertEqual(len(a), len(b), where)
                for i, (x, y) in enumerate(zip(a, b)):
                    same(x, y, f"{where}[{i}]")
            else:
                self.assertEqual(a, b, where)

        for s in scenarios:
            same(s.memory(), json.loads(s.memory_json()), "memory()")

    def test_capacity_needs_an_slo(self):
        with self.assertRaisesRegex(kvplan.ConfigError, "SLO"):
            kvplan.Scenario(users=4).capacity()


@unittest.skipUnless(CLI, "KVPLAN_CLI not set")
class SameBytesAsTheCliTest(unittest.TestCase):
    def test_memory_json(self):
        r = cli("memory", "--json", "--scenario", CHAT)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(kvplan.load_scenario(CHAT).memory_json() + "\n", r.stdout)
        self.assertEqual(json.loads(r.stdout), kvplan.load_scenario(CHAT).memory())

    def test_memory_json_by_keywords(self):
        r = cli("memory", "--json", "--kv-cache-dtype", "fp8", "--max-model-len", "8192")
        self.assertEqual(kvplan.Scenario(kv_cache_dtype="fp8", max_model_len=8192).memory_json() + "\n", r.stdout)


class ReadmeExampleTest(unittest.TestCase):
    def test_the_readme_python_example_runs(self):
        with open("README.md") as f:
            readme = f.read()
        block = readme.split("```python\n", 1)[1].split("```", 1)[0]
        self.assertLessEqual(len(block.strip().splitlines()), 5)
        r = subprocess.run([sys.executable, "-c", block], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(len(r.stdout.splitlines()), 2)


@unittest.skipUnless(CLI, "KVPLAN_CLI not set")
class ReadmePlanExampleTest(unittest.TestCase):
    def test_the_readme_plan_output_is_what_kvplan_prints(self):
        # The README shows the `kvplan plan` example's answer lines; a change to the serving terms
        # or the search must update them (they went stale once, unnoticed).
        with open("README.md") as f:
            readme = f.read()
        command = next(line.strip() for line in readme.splitlines()
                       if line.strip().startswith("build/cli/kvplan plan --model llama-3.1-70b"))
        shown = [line.strip() for line in readme.splitlines()
                 if line.strip().startswith(("cheapest deployment for", "each replica serves"))]
        self.assertEqual(len(shown), 2, shown)
        r = cli(*command.split()[1:])
        self.assertEqual(r.returncode, 0, r.stderr)
        printed = [line.strip() for line in r.stdout.splitlines()]
        for line in shown:
            self.assertIn(line, printed)


class SweepExampleTest(unittest.TestCase):
    def test_writes_a_png(self):
        example = os.path.join("examples", "sweep_kv_dtypes.py")
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "kv_dtypes.png")
            env = dict(os.environ, MPLBACKEND="Agg", MPLCONFIGDIR=tmp)
            r = subprocess.run([sys.executable, example, "--out", out], capture_output=True, text=True, env=env)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("wrote", r.stdout)
            with open(out, "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
            # the table's 8k row: bf16 fits the fewest, KIVI-2 the most, fp8 about twice bf16
            # (int8 carries scales, so it fits a little less than fp8)
            row = next(line.split() for line in r.stdout.splitlines() if line.split()[:1] == ["8192"])
            counts = dict(zip(["bf16", "fp8", "int8", "int4", "kivi2"], (int(v) for v in row[1:])))
            self.assertEqual(min(counts, key=counts.get), "bf16")
            self.assertEqual(max(counts, key=counts.get), "kivi2")
            self.assertAlmostEqual(counts["fp8"] / counts["bf16"], 2, delta=0.1)


if __name__ == "__main__":
    unittest.main()
