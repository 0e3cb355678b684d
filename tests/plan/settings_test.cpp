// tests/plan/settings_test.cpp — the settings table (kvplan/plan/settings.h): every row documented
// (unit, description, default), flags and file keys unique, defaults that read back as themselves,
// and values checked with messages that name the flag, the value and the rule.
#include <algorithm>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "kvplan/core/error.h"
#include "kvplan/plan/settings.h"

namespace kvplan::plan {
namespace {

std::string error_of(const std::string& name, const std::string& value) {
  Scenario s;
  try {
    setting(name).set(s, value);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(Settings, EveryRowIsDocumentedAndUnique) {
  std::set<std::string> flags, keys;
  ASSERT_GT(settings().size(), 60u);
  for (const Setting& s : settings()) {
    SCOPED_TRACE(s.flag);
    EXPECT_TRUE(flags.insert(s.flag).second) << "duplicate flag";
    EXPECT_TRUE(keys.insert(s.file_key()).second) << "duplicate key";
    EXPECT_FALSE(s.unit.empty());
    ASSERT_FALSE(s.description.empty());
    EXPECT_NE(s.description.back(), '.');
    EXPECT_NE(std::find(setting_sections().begin(), setting_sections().end(), s.section), setting_sections().end());
    EXPECT_TRUE(s.set_text != nullptr && s.text != nullptr);
    if (s.type == ValueType::kChoice) {
      EXPECT_GE(s.choices.size(), 2u);
    }
    // The default reads back as itself, and as a value it changes nothing.
    Scenario sc;
    s.set(sc, s.default_text);
    EXPECT_EQ(s.text(sc), s.default_text);
    EXPECT_TRUE(non_default_values(sc).empty());
    EXPECT_EQ(find_setting(s.flag), &s);
    EXPECT_EQ(find_setting("--" + s.flag), &s);
    EXPECT_EQ(find_setting(s.file_key()), &s);
  }
}

TEST(Settings, ValuesAreTyped) {
  Scenario s;
  set_values(s, {{"max-model-len", "8192"}, {"kv-cache-dtype", "fp8"}, {"users", "64"}, {"enforce-eager", "true"},
                 {"gpu-memory-utilization", "0.8"}, {"engine", "sglang"}, {"slo-ttft-ms", "2000"}});
  EXPECT_EQ(s.engine.max_model_len, 8192);
  EXPECT_EQ(s.kv_cache.dtype, DType::kFp8E4M3);
  EXPECT_EQ(s.workload.users, 64);
  EXPECT_TRUE(s.engine.enforce_eager);
  EXPECT_DOUBLE_EQ(s.engine.gpu_memory_utilization, 0.8);
  EXPECT_EQ(s.engine.name, Engine::kSglang);
  EXPECT_DOUBLE_EQ(s.slo.ttft_ms, 2000);
  // Aliases are accepted and written back by their first name.
  setting("kv-cache-dtype").set(s, "kivi");
  EXPECT_EQ(setting("kv-cache-dtype").text(s), "kivi2");
  const SettingValues changed = non_default_values(s);
  EXPECT_EQ(changed.at("max-model-len"), "8192");
  EXPECT_EQ(changed.at("engine"), "sglang");
  EXPECT_EQ(changed.count("model"), 0u);
  // An optional setting is unset by "".
  setting("kv-cache-dtype").set(s, "");
  EXPECT_FALSE(s.kv_cache.dtype.has_value());
}

TEST(Settings, BadValuesNameTheFlagTheValueAndTheRule) {
  EXPECT_EQ(error_of("max-model-len", "-5"), "--max-model-len=-5 must be at least 0");
  EXPECT_NE(error_of("max-model-len", "12x").find("--max-model-len=12x"), std::string::npos);
  EXPECT_NE(error_of("max-model-len", "1e400").find("--max-model-len=1e400"), std::string::npos);
  EXPECT_NE(error_of("gpu-memory-utilization", "1.5").find("--gpu-memory-utilization=1.5"), std::string::npos);
  EXPECT_NE(error_of("gpu-memory-utilization", "nan").find("--gpu-memory-utilization=nan"), std::string::npos);
  const std::string dtype = error_of("kv-cache-dtype", "fp7");
  EXPECT_NE(dtype.find("--kv-cache-dtype=fp7"), std::string::npos) << dtype;
  EXPECT_NE(dtype.find("fp8"), std::string::npos) << dtype;
  EXPECT_NE(dtype.find("int4"), std::string::npos) << dtype;
  EXPECT_NE(error_of("enforce-eager", "yes").find("--enforce-eager=yes"), std::string::npos);
  EXPECT_NE(error_of("tensor-parallel-size", "0").find("--tensor-parallel-size=0"), std::string::npos);
  try {
    setting("max-modle-len");
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("max-modle-len"), std::string::npos);
  }
  // In a file the label is the key.
  Scenario s;
  try {
    setting("max-model-len").set_text(s, "-1", "engine.max_model_len");
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()), "engine.max_model_len=-1 must be at least 0");
  }
}

}  // namespace
}  // namespace kvplan::plan
