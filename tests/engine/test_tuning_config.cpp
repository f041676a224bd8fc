// The engine's tuning switches: one TuningConfig, defaults from the LLMWB_* variables, set by
// name from the CLI, described for inspect and the model panel, and in effect in the engine.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <utility>

#include "backend/cpu/matmul.h"
#include "llmwb/engine.h"
#include "llmwb/errors.h"
#include "llmwb/tuning_config.h"
#include "support/test_support.h"

namespace llmwb {
namespace {

// Sets an environment variable for the scope.
struct ScopedEnv {
  const char* name;
  ScopedEnv(const char* n, const char* v) : name(n) { ::setenv(n, v, 1); }
  ~ScopedEnv() { ::unsetenv(name); }
};

// set(name, bad) throws naming the switch, the value and what it takes (`takes` begins that list).
void expect_refused(TuningConfig& t, const char* name, const char* bad, const std::string& takes) {
  try {
    t.set(name, bad);
    ADD_FAILURE() << name << " took '" << bad << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(std::string(name) + ": '" + bad + "' is not one of " + takes), std::string::npos)
        << e.what();
  }
}

// TuningConfig::from_environment() and what it wrote to stderr.
std::pair<TuningConfig, std::string> from_environment_and_stderr() {
  testing::internal::CaptureStderr();
  TuningConfig t = TuningConfig::from_environment();
  return {t, testing::internal::GetCapturedStderr()};
}

std::string value_of(const TuningConfig& t, const std::string& name) {
  for (const auto& [k, v] : t.describe())
    if (k == name) return v;
  return "(absent)";
}

TEST(TuningConfig, DefaultsAreTheFastPathsWithNoVariablesSet) {
  for (const char* v : {"LLMWB_SIMD", "LLMWB_FLOAT_PANELS", "LLMWB_DECODE_PREFETCH", "LLMWB_DECODE_STREAMS",
                        "LLMWB_CUDA_GRAPHS", "LLMWB_NVTX_LAYERS", "LLMWB_DEVICE_SAMPLING"})
    ::unsetenv(v);
  const TuningConfig t = TuningConfig::from_environment();
  EXPECT_EQ(t.simd, "");
  EXPECT_TRUE(t.float_panels);
  EXPECT_TRUE(t.cuda_graphs);
  EXPECT_FALSE(t.nvtx_layers);
  EXPECT_TRUE(t.device_sampling);
  EXPECT_EQ(t.decode_prefetch, "");
  EXPECT_EQ(value_of(t, "simd"), "best");
  EXPECT_EQ(value_of(t, "decode_prefetch"), "auto");
  EXPECT_EQ(t.decode_streams, "");
  EXPECT_EQ(value_of(t, "decode_streams"), "auto");
  EXPECT_EQ(t.describe().size(), 7u);
  EXPECT_EQ(cpu::decode_streams_from(""), cpu::default_decode_streams());
  EXPECT_EQ(cpu::decode_streams_from("2"), 2);
  EXPECT_TRUE(cpu::default_decode_streams() == 1 || cpu::default_decode_streams() == 4);
  EXPECT_EQ(cpu::decode_prefetch_from(""), cpu::default_decode_prefetch());
  EXPECT_EQ(cpu::decode_prefetch_from("off"), (cpu::DecodePrefetch{0, 0}));
  EXPECT_EQ(cpu::decode_prefetch_from("2048"), (cpu::DecodePrefetch{2048, 2048}));
}

TEST(TuningConfig, EachEnvironmentVariableSetsItsSwitch) {
  {
    ScopedEnv a("LLMWB_SIMD", "avx2"), b("LLMWB_FLOAT_PANELS", "0"), c("LLMWB_CUDA_GRAPHS", "0"),
        d("LLMWB_NVTX_LAYERS", "1"), e("LLMWB_DEVICE_SAMPLING", "0"), f("LLMWB_DECODE_PREFETCH", "off"),
        g("LLMWB_DECODE_STREAMS", "2");
    const TuningConfig t = TuningConfig::from_environment();
    EXPECT_EQ(t.simd, "avx2");
    EXPECT_EQ(t.decode_prefetch, "off");
    EXPECT_EQ(t.decode_streams, "2");
    EXPECT_FALSE(t.float_panels);
    EXPECT_FALSE(t.cuda_graphs);
    EXPECT_TRUE(t.nvtx_layers);
    EXPECT_FALSE(t.device_sampling);
    // An EngineConfig made now carries them.
    EXPECT_FALSE(EngineConfig{}.tuning.device_sampling);
  }
  EXPECT_TRUE(EngineConfig{}.tuning.device_sampling);
}

TEST(TuningConfig, AValueNotUnderstoodKeepsTheDefaultAndSaysWhichVariable) {
  ScopedEnv a("LLMWB_CUDA_GRAPHS", "maybe");
  const auto [t, err] = from_environment_and_stderr();
  EXPECT_TRUE(t.cuda_graphs);
  EXPECT_NE(err.find("LLMWB_CUDA_GRAPHS: 'maybe'"), std::string::npos) << err;
}

TEST(TuningConfig, SetByNameAcceptsOnOffAndLevelsAndNamesWhatIsWrong) {
  TuningConfig t;
  t.set("float_panels", "off");
  t.set("simd", "scalar");
  t.set("nvtx_layers", "on");
  EXPECT_FALSE(t.float_panels);
  EXPECT_EQ(t.simd, "scalar");
  EXPECT_TRUE(t.nvtx_layers);
  t.set("simd", "best");
  EXPECT_EQ(t.simd, "");
  try {
    t.set("warp_speed", "on");
    FAIL() << "an unknown switch was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'warp_speed' is not a tuning switch"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("float_panels"), std::string::npos) << "lists the switches: " << e.what();
  }
  EXPECT_THROW(t.set("cuda_graphs", "sometimes"), Error);
  EXPECT_THROW(t.set("simd", "avx9000"), Error);
  t.set("decode_prefetch", "512");
  EXPECT_EQ(t.decode_prefetch, "512");
  t.set("decode_prefetch", "off");
  EXPECT_EQ(value_of(t, "decode_prefetch"), "off");
  t.set("decode_prefetch", "auto");
  EXPECT_EQ(t.decode_prefetch, "");
  for (const char* bad : {"100", "-64", "fast", "32768", "1e3"}) expect_refused(t, "decode_prefetch", bad, "auto, off");
}

TEST(TuningConfig, DecodeStreamsTakeOneTwoOrFourAndNameWhatIsWrong) {
  TuningConfig t;
  for (const char* good : {"1", "2", "4"}) {
    t.set("decode_streams", good);
    EXPECT_EQ(t.decode_streams, good);
  }
  t.set("decode_streams", "auto");
  EXPECT_EQ(t.decode_streams, "");
  for (const char* bad : {"0", "3", "8", "-1", "one", "04"}) expect_refused(t, "decode_streams", bad, "auto, 1, 2 or 4");
  ScopedEnv a("LLMWB_DECODE_STREAMS", "3");
  const auto [env, err] = from_environment_and_stderr();
  EXPECT_EQ(env.decode_streams, "");
  EXPECT_NE(err.find("LLMWB_DECODE_STREAMS: '3'"), std::string::npos) << err;
}

TEST(TuningConfig, AnUnderstoodPrefetchVariableIsKeptAndABadOneNamed) {
  ScopedEnv a("LLMWB_DECODE_PREFETCH", "4096");
  EXPECT_EQ(TuningConfig::from_environment().decode_prefetch, "4096");
  ScopedEnv b("LLMWB_DECODE_PREFETCH", "near");
  const auto [t, err] = from_environment_and_stderr();
  EXPECT_EQ(t.decode_prefetch, "");
  EXPECT_NE(err.find("LLMWB_DECODE_PREFETCH: 'near'"), std::string::npos) << err;
}

TEST(TuningConfig, EnvironmentHelpNamesEveryVariable) {
  const std::string h = TuningConfig::environment_help();
  for (const char* v : {"LLMWB_SIMD", "LLMWB_FLOAT_PANELS", "LLMWB_DECODE_PREFETCH", "LLMWB_DECODE_STREAMS",
                        "LLMWB_CUDA_GRAPHS",
                        "LLMWB_NVTX_LAYERS", "LLMWB_DEVICE_SAMPLING"})
    EXPECT_NE(h.find(v), std::string::npos) << v;
}

// The engine reports the switches it runs with, and its CPU runner applies the SIMD level:
// greedy tokens are the same at every level (no switch changes a token).
TEST(TuningConfig, TheEngineRunsWithItsSwitchesAndTheyChangeNoToken) {
  const std::string model = test::shared_path("models/stories260K/stories260K.gguf");
  std::vector<std::vector<int>> tokens;
  const cpu::SimdLevel before = cpu::simd_level();
  const cpu::DecodePrefetch prefetch_before = cpu::decode_prefetch();
  const int streams_before = cpu::decode_streams();
  for (const char* simd : {"", "scalar", "best, prefetch off"}) {
    const bool prefetch_off = std::string(simd) == "best, prefetch off";
    if (prefetch_off) simd = "";
    EngineConfig c;
    c.model = model;
    c.threads = 2;
    c.tuning.simd = simd;
    c.tuning.float_panels = *simd == '\0';
    if (prefetch_off) c.tuning.decode_prefetch = "off";
    if (prefetch_off) c.tuning.decode_streams = "2";
    Engine e(c);
    EXPECT_TRUE(cpu::decode_prefetch() == (prefetch_off ? cpu::DecodePrefetch{0, 0} : cpu::default_decode_prefetch()))
        << "the runner applies decode_prefetch";
    EXPECT_EQ(cpu::decode_streams(), prefetch_off ? 2 : cpu::default_decode_streams()) << "the runner applies decode_streams";
    EXPECT_EQ(value_of(c.tuning, "float_panels"), *simd ? "off" : "on");
    bool found = false;
    for (const auto& [k, v] : e.model_info().tuning) found = found || (k == "simd" && v == (*simd ? simd : "best"));
    EXPECT_TRUE(found) << "model_info().tuning names the simd level";
    if (*simd) {
      EXPECT_EQ(cpu::simd_level(), cpu::SimdLevel::Scalar);
    }
    SamplingParams p;
    p.temperature = 0;
    p.max_tokens = 40;
    e.add_request("Once upon a time", p);
    std::vector<int> out;
    while (e.has_unfinished())
      for (const auto& o : e.step())
        if (o.finished) out = o.outputs[0].token_ids;
    tokens.push_back(out);
  }
  cpu::set_simd_level(before);
  cpu::set_decode_prefetch(prefetch_before);
  cpu::set_decode_streams(streams_before);
  ASSERT_EQ(tokens.size(), 3u);
  EXPECT_EQ(tokens[0].size(), 40u);
  EXPECT_EQ(tokens[0], tokens[1]);
  EXPECT_EQ(tokens[0], tokens[2]);
}

}  // namespace
}  // namespace llmwb
