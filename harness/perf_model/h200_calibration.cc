// The H200 calibration report of the perf_model tool (--calibrate_h200): the model's predictions
// of the terms the sm_90a validation build on the H200 can measure, beside what was measured.

#include <cstdint>
#include <cstdio>

#include "harness/perf_model/model.h"
#include "harness/perf_model/report.h"

namespace h3::perf_model {

void PrintH200Calibration(const Hardware& h) {
  std::printf(
      "H200 calibration: the model's predictions of the terms the H200 can measure (sm_90a "
      "validation build; the block-scaled MMA is emulated there, so no MMA term is predicted).\n"
      "Put each measurement beside its line; the SM120 inputs it calibrates are named.\n\n");
  PrintHardware(h);
  std::printf("\n");

  // 1. The standalone quantizer (bench 'quantize'): issue-bound on sm_90a (software e2m1).
  // Measured: harness/bench/results/h200_2026-11-30_s10_faithful.csv (GBps column = (2+1/2+1/16)
  // B/elem / t; the same run's copy: 3766 / 4162 / 4254 GB/s).
  struct Measured {
    int64_t m;
    double gbps;
  };
  const Measured kQuantMeasured[] = {{4096, 3245.34}, {16384, 3739.43}, {75856, 3885.49}};
  std::printf(
      "1. standalone quantize kernel (kernels/launch/quantize_kernel.cu, K = 7168): predicted at issue "
      "efficiency 1.0 and 0.8, vs measured "
      "(harness/bench/results/h200_2026-11-30_s10_faithful.csv)\n"
      "   calibrates: quant_instr_per_block x issue efficiency (SM120: 230 SASS instr/block, "
      "native cvt e2m1; H200: 206, software e2m1)\n");
  std::printf("   %8s %12s %12s %12s %10s %14s\n", "M", "pred GB/s@1", "pred GB/s@.8", "measured",
              "ratio@1", "issue bound");
  for (const Measured& q : kQuantMeasured) {
    const QuantizeStandalone a = PredictStandaloneQuantize(h, q.m, 7168, 1.0);
    const QuantizeStandalone b = PredictStandaloneQuantize(h, q.m, 7168, 0.8);
    std::printf("   %8lld %12.0f %12.0f %12.0f %10.2f %14.0f\n", static_cast<long long>(q.m),
                a.bench_gbps, b.bench_gbps, q.gbps, q.gbps / a.bench_gbps, a.issue_bound_gbps);
  }

  // 2. The fused kernel's quantizer warps (3 per SM) and their start-up.
  const Design cur = CurrentDesign();
  std::printf(
      "\n2. fused kernel's quantizer (current design, 3 warps/SM, depth 4, 4-row units): "
      "predicted attn_out rate and time to the first ready m-tile\n"
      "   measure: %%globaltimer at kernel entry, at the first WaitMTileReady return and at "
      "the last PublishUnit, per CTA (or ncu on a K=7168, N=128 run)\n");
  std::printf("   %8s %14s %14s %14s %14s\n", "M", "quant GB/s", "ready (us)", "fill (us)",
              "all rows (us)");
  for (int64_t m : {128, 1024, 4096, 16384, 75856}) {
    Problem p;
    p.m = m;
    const Prediction pr = Predict(h, cur, p);
    std::printf("   %8lld %14.0f %14.2f %14.2f %14.1f\n", static_cast<long long>(m),
                pr.quant_bytes_per_s * 1e-9, pr.startup_quant * kUs, pr.startup_fill * kUs,
                m * 7168 * 2.0 / pr.quant_bytes_per_s * kUs);
  }

  // 3. Epilogue per tile and the per-tile fixed cost: K = 256 and 512 runs, intercept at K = 0.
  std::printf(
      "\n3. epilogue (current design: residual prefetched to L2, t first, residual loads batched "
      "32 words per thread, cvt packs): predicted per tile\n"
      "   measure: the fused op at K = 256 .. 2048 (bench --bench_k); T(K) ~ linear in K, its "
      "intercept = startup + waves x (epilogue + TMA fill). calibrates: DRAM latency, the "
      "lockstep burst\n");
  std::printf("   %8s %8s %14s %14s %16s %14s\n", "M", "waves", "epilogue (us)", "fill (us)",
              "intercept (us)", "epi DRAM MB");
  for (int64_t m : {1024, 4096, 16384}) {
    Problem p;
    p.m = m;
    p.k = 256;
    const Prediction pr = Predict(h, cur, p);
    const double intercept =
        pr.startup_quant + pr.startup_fill + pr.tiles_per_sm * (pr.epilogue_tile + pr.startup_fill);
    std::printf("   %8lld %8.0f %14.2f %14.2f %16.1f %14.1f\n", static_cast<long long>(m),
                pr.tiles_per_sm, pr.epilogue_tile * kUs, pr.startup_fill * kUs, intercept * kUs,
                (pr.dram.residual + pr.dram.out) * 1e-6);
  }
  {
    // Session 10's measurements timed the lockstep tile: its epilogue, not the skewed one's.
    const Design lock = CurrentLockstepDesign();
    Design serial = lock;  // the first epilogue: one DRAM round trip per fragment row
    serial.epilogue = Epilogue::kSerialDram;
    serial.epilogue_instr_per_pair = 36;
    serial.epilogue_access_bytes = 4;
    Problem p;
    p.m = 4096;
    Design cur4 = lock;  // the L4 epilogue with 4-byte accesses (StoreTile)
    cur4.epilogue_access_bytes = 4;
    const Prediction a = Predict(h, lock, p), b = Predict(h, serial, p);
    const double model4 = Predict(h, cur4, p).epilogue_tile * kUs;
    std::printf(
        "   model per tile: serial DRAM epilogue %.2f us -> L4, 4-byte accesses %.2f -> 16-byte "
        "%.2f (now)\n",
        b.epilogue_tile * kUs, model4, a.epilogue_tile * kUs);
    // harness/bench/results/h200_2026-11-30_s10_epilogue_ab.csv: the faithful build with either
    // epilogue (the L4 one with 4-byte accesses then), medians of 5, A/B alternated twice.
    std::printf(
        "   measured (faithful, 128x256, A/B): serial - L4 4-byte = 48 / 127 us at M = 4096 / "
        "16384, K = 7168 = 8.0 / 6.1 us per tile wave (6 / 21 waves); model %.2f.\n"
        "   intercepts of T(K) fitted over K = 256..2048: 85 / 307 us (L4), 141 / 481 us "
        "(serial); at small K the residual prefetch has no main loop to hide under and T(K) is "
        "not linear, so the intercept overstates the K = 7168 epilogue.\n",
        b.epilogue_tile * kUs - model4);
    Problem p128;
    p128.m = 4096;
    const double model128 = Predict(h, Current128Design(), p128).epilogue_tile * kUs;
    // harness/bench/results/h200_2026-11-30_s10_vec16_epilogue_ab.csv: the bench's
    // fused - fused_no_epilogue (the bench's NoEpilogue timing variant), medians of 5, A/B twice.
    std::printf(
        "   measured exposed epilogue (bench fused - fused_no_epilogue), 4-byte -> 16-byte "
        "epilogue: faithful 128x256 95 -> 54 / 213 -> 116 us at M = 4096 / 16384 = 15.9 -> 9.0 / "
        "10.1 -> 5.5 us per tile wave; model %.2f -> %.2f (measured / model %.1fx -> %.1fx). "
        "Fast 128x128: 66 -> 44 / 235 -> 158 us (16-byte: 4.0 / 3.9 us per tile wave, model "
        "%.2f: %.1fx)\n\n",
        model4, a.epilogue_tile * kUs, 13.0 / model4, 7.3 / (a.epilogue_tile * kUs), model128,
        3.95 / model128);
  }

  // 4. DRAM bytes per call (ncu dram__bytes_read.sum / dram__bytes_write.sum).
  std::printf(
      "\n4. DRAM bytes per call (current design; ncu dram__bytes_read.sum + "
      "dram__bytes_write.sum), and their time at the copy bandwidth\n");
  std::printf("   %8s %10s %10s %10s %10s %10s %10s %10s %10s\n", "M", "attn MB", "act w", "act r",
              "resid", "out", "weight", "total MB", "us");
  for (int64_t m : {128, 1024, 4096, 16384, 75856}) {
    Problem p;
    p.m = m;
    const Prediction pr = Predict(h, cur, p);
    std::printf("   %8lld %10.1f %10.1f %10.1f %10.1f %10.1f %10.1f %10.1f %10.1f\n",
                static_cast<long long>(m), pr.dram.attn_out * 1e-6, pr.dram.act_write * 1e-6,
                pr.dram.act_read * 1e-6, pr.dram.residual * 1e-6, pr.dram.out * 1e-6,
                pr.dram.weight * 1e-6, pr.dram.Total() * 1e-6, pr.t_dram * kUs);
  }
  std::printf(
      "\n5. measured, not predicted: the L2 hit, the TMA round trip by size and under every "
      "SM's load, and the L2's TMA bandwidth by harness/bench:tma_latency (the constants above "
      "cite it; hardware.cc derives SM12x's TMA latency and queueing priors from it). Still to "
      "measure: the DRAM latency by a pointer chase -> dram_latency.\n");
}

}  // namespace h3::perf_model
