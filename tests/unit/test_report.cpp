// JSON records: well-formed (checked by Python's json module), escaped, no NaN.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "cudalabs/report.hpp"

using namespace cudalabs;

namespace {

// Asks python3 (which Meson itself needs, so it is always there) to parse the text.
bool python_parses(const std::string& json, const std::string& expr = "True") {
  std::string path = testing::TempDir() + "record.json";
  FILE* f = std::fopen(path.c_str(), "w");
  std::fputs(json.c_str(), f);
  std::fclose(f);
  std::string cmd = "python3 -c \"import json,sys; r=json.load(open('" + path + "')); sys.exit(0 if (" + expr + ") else 1)\"";
  return std::system(cmd.c_str()) == 0;
}

Record sample() {
  Record r;
  r.lab = "07_reduction_v3";
  r.variant = "warp \"shuffle\"\n";
  r.size = {{"n", 268435456}};
  r.bytes = 1073741824;
  r.flops = 268435456;
  r.timed = true;
  r.timing = {.runs = 41, .median_ms = 0.371, .min_ms = 0.369, .max_ms = 0.4, .mean_ms = 0.372, .stddev_ms = 0.002, .ci95_ms = 0.001};
  r.gbps = 2893.4;
  r.ceiling = "d2d_copy_gbps";
  r.pct_of_ceiling = 97.7;
  r.check.passed = r.recheck.passed = r.passed = true;
  r.check.max_abs_err = r.recheck.max_abs_err = 1e-3;
  r.resources = KernelResources{.registers = 32, .block_threads = 256, .blocks_per_sm = 8, .occupancy = 1.0};
  r.extra = {{"h2d_ms", 1.5}};
  r.seed = 42;
  return r;
}

}  // namespace

TEST(Json, RecordIsWellFormedAndComplete) {
  DeviceInfo dev;
  dev.name = "NVIDIA H100 80GB HBM3";
  dev.cc_major = 9;
  dev.runtime_version = 13000;
  dev.sm_count = 132;
  std::string j = to_json(sample(), dev);
  EXPECT_EQ(j.find('\n'), std::string::npos) << "one record, one line";
  EXPECT_TRUE(python_parses(j));
  EXPECT_TRUE(python_parses(j, "r['lab']=='07_reduction_v3' and r['size']['n']==268435456 and r['cc']=='9.0'"));
  EXPECT_TRUE(python_parses(j, "r['sms']==132"));
  EXPECT_TRUE(python_parses(j, "r['variant']=='warp \\\"shuffle\\\"\\n'"));
  EXPECT_TRUE(python_parses(j, "r['passed'] is True and r['runs']==41 and abs(r['median_ms']-0.371)<1e-9"));
  EXPECT_TRUE(python_parses(j, "r['resources']['registers']==32 and r['extra']['h2d_ms']==1.5"));
  EXPECT_TRUE(python_parses(j, "all(k in r for k in ['gpu','bytes','flops','min_ms','ci95_ms','gbps','gflops','ceiling',"
                               "'pct_of_ceiling','baseline','baseline_ms','vs_baseline','max_abs_err','rel_err','tolerance',"
                               "'seed','git','timestamp'])"));
}

TEST(Json, AJudgesRecordCarriesTheDevicesMemoryCeilings) {
  DeviceInfo dev;
  dev.dram_peak_gbps = 3352.3;
  dev.l2_bytes = std::size_t{50} << 20;
  Record r = sample();
  EXPECT_TRUE(python_parses(to_json(r, dev), "'dram_peak_gbps' not in r and 'l2_bytes' not in r"));
  r.judge = true;
  EXPECT_TRUE(python_parses(to_json(r, dev), "abs(r['dram_peak_gbps']-3352.3)<1e-9 and r['l2_bytes']==52428800"));
}

TEST(Json, NanAndInfBecomeNull) {
  Record r = sample();
  r.check.max_abs_err = r.recheck.max_abs_err = INFINITY;
  r.gbps = NAN;
  std::string j = to_json(r, DeviceInfo{});
  EXPECT_EQ(j.find("nan"), std::string::npos);
  EXPECT_EQ(j.find("inf"), std::string::npos);
  EXPECT_TRUE(python_parses(j, "r['gbps'] is None and r['max_abs_err'] is None"));
}

TEST(Json, FailedRecordSaysWhy) {
  Record r = sample();
  r.passed = false;
  r.check.passed = false;
  r.check.bad = 3;
  r.check.count = 10;
  std::string j = to_json(r, DeviceInfo{});
  EXPECT_TRUE(python_parses(j, "r['passed'] is False and 'first run' in r['failure']"));
}

// The launches of a traced run: the largest grid per kernel, most blocks first,
// at most six; an untraced record has none.
TEST(Json, TracedRecordSaysHowBigEachLaunchWas) {
  Record r = sample();
  r.gpu_work.traced = true;
  r.gpu_work.kernels = 4;
  r.gpu_work.note_launch("_Z5smallv", 32, 256);
  r.gpu_work.note_launch("_Z3bigv", 4096, 128);
  r.gpu_work.note_launch("_Z5smallv", 16, 1024);  // a smaller launch of the same kernel
  r.gpu_work.note_launch("_Z5smallv", 32, 512);   // as many blocks, more threads
  std::string j = to_json(r, DeviceInfo{});
  EXPECT_TRUE(python_parses(j, "r['gpu_work']['launches']==[{'kernel':'_Z3bigv','blocks':4096,'block_threads':128},"
                               "{'kernel':'_Z5smallv','blocks':32,'block_threads':512}]"))
      << j;
  for (int i = 0; i < 9; ++i) r.gpu_work.note_launch(("_Z1k" + std::to_string(i)).c_str(), 1 << 20, 64);
  j = to_json(r, DeviceInfo{});
  EXPECT_TRUE(python_parses(j, "len(r['gpu_work']['launches'])==6 and r['gpu_work']['launches'][0]['kernel']=='_Z1k0' "
                               "and all(l['blocks']==1<<20 for l in r['gpu_work']['launches'])"))
      << j;
  r.gpu_work = GpuWork{};
  r.gpu_work.not_traced_why = "CUDALABS_TRACE=0";
  EXPECT_TRUE(python_parses(to_json(r, DeviceInfo{}), "'launches' not in r['gpu_work']"));
}

TEST(Json, EscapesControlCharacters) {
  EXPECT_EQ(json_escape("a\"b\\c\n\x01"), "a\\\"b\\\\c\\n\\u0001");
}

TEST(Table, RowShowsVerdictAndTimerBound) {
  Record r = sample();
  r.timing.stop = StopReason::max_runs;
  std::string row = table_row(r);
  EXPECT_NE(row.find("PASS"), std::string::npos);
  EXPECT_NE(row.find("max_runs"), std::string::npos);
  r.passed = false;
  r.check.passed = false;
  EXPECT_NE(table_row(r).find("FAIL"), std::string::npos);
}
