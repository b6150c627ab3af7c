// The perf_model tool's report of issue 30's options (options.h): per GPU, the cost of act_smooth
// and of the low-rank branch per rank over the plain op, each term, and the inputs behind them.

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "harness/perf_model/model.h"
#include "harness/perf_model/options.h"
#include "harness/perf_model/report.h"

namespace h3::perf_model {

void PrintOptions(const Hardware& h, const Design& d, int64_t m) {
  Problem p;
  p.m = m;
  const Prediction plain = Predict(h, d, p);
  std::printf(
      "  %s, M = %lld, `%s`: issue 30's options over the plain op (a model, NOT a measurement; "
      "raw times of the critical SM, plain %.1f us; %% of it)\n",
      h.name.c_str(), static_cast<long long>(m), d.name.c_str(), plain.t_total * kUs);
  std::printf("  %-13s %8s %8s %8s %9s %8s %8s %8s %8s   %s\n", "options", "cost", "tensor",
              "bytes", "start-up", "keep-up", "smooth", "low", "high",
              "w/o (c),(e): default (low .. high)");
  std::vector<Options> rows = {{0, true}, {16, false}};
  for (int r : {16, 32, 48, 64}) rows.push_back({r, true});
  for (const Options& o : rows) {
    const OptionsCost lo = PredictOptions(h, d, p, o, OptionsReading::kLow);
    const OptionsCost c = PredictOptions(h, d, p, o, OptionsReading::kDefault);
    const OptionsCost hi = PredictOptions(h, d, p, o, OptionsReading::kHigh);
    const double pct = 100 / c.t_plain;
    auto throughput = [&](const OptionsCost& x) { return (x.tensor + x.bytes_s + x.smooth) * pct; };
    std::printf(
        "  %-13s %+7.1f%% %+7.1f%% %+7.1f%% %+8.1f%% %+7.1f%% %+7.1f%% %+7.1f%% %+7.1f%%   %+.1f%% "
        "(%+.1f%% .. %+.1f%%)\n",
        absl::StrFormat("r=%d%s", o.lora_rank, o.act_smooth ? " smooth" : "").c_str(),
        100 * c.Cost(), c.tensor * pct, c.bytes_s * pct, c.startup * pct, c.keepup * pct,
        c.smooth * pct, 100 * lo.Cost(), 100 * hi.Cost(), throughput(c), throughput(lo),
        throughput(hi));
  }
  const OptionsCost c = PredictOptions(h, d, p, {32, true}, OptionsReading::kDefault);
  const OptionsCost lo = PredictOptions(h, d, p, {32, true}, OptionsReading::kLow);
  std::printf(
      "  r = 32 + smooth, default reading: FLOP down %.3g + up %.3g at %.0f FLOP/clk/SM (bf16, f32 "
      "accumulate): %.1f us serial on the critical SM (low: %.0f FLOP/clk/SM, only what the plain "
      "op's %.1f us of tensor-idle time cannot take: %.1f us). L2 bytes: lora_down %.1f + x again "
      "%.1f (the front's down-only units) + partials written %.1f, read %.1f + l written %.1f, "
      "read "
      "%.1f + lora_up %.1f = %.1f MB (+ act_smooth's factors %.1f MB).\n",
      c.flop_down, c.flop_up, c.bf16_flop_per_clk_per_sm, c.tensor_serial * kUs,
      lo.bf16_flop_per_clk_per_sm, lo.tensor_idle * kUs, lo.tensor * kUs, c.bytes.lora_down * 1e-6,
      c.bytes.x_reread * 1e-6, c.bytes.partial_write * 1e-6, c.bytes.partial_read * 1e-6,
      c.bytes.act_write * 1e-6, c.bytes.act_read * 1e-6, c.bytes.lora_up * 1e-6,
      c.bytes.Total() * 1e-6, c.smooth_bytes * 1e-6);
  std::printf(
      "    a front quantize-only unit (8 rows x chunk 0): its rows prefetched to L2, then 4 blocks "
      "a "
      "lane an iteration (the first %.0f ns, at the DRAM round trip; the later ones at L2's), "
      "published after %.1f us (low %.1f; the start-up, against the plain op's 4-row unit's %.1f "
      "us, no prefetch); its down-only unit, claimed after every quantize-only unit: %.0f "
      "iterations of x again from L2, lora_down from L2 (prefetched at the start [ASSUMED]), %.0f "
      "ns each (low %.0f), %.1f us to its arrival. Every other unit: %.0f iterations of one block "
      "a lane, quantized and "
      "down-projected from the same registers, its rows' chunk prefetched to L2 at its start: the "
      "first %.0f ns (x's DRAM round trip, then lora_down's loaded L2 one [ASSUMED]; low %.0f), "
      "the later ones %.0f ns each (x from L2 [ASSUMED], then lora_down; low %.0f ns, lora_down "
      "under x's), %.1f us to its publish; then its partials fenced and its arrival counted in "
      "%.1f us. The group's last + %.1f us (%d round trips: partials' sum, l; low %d). Quantizer "
      "warps busy %.1f us each (low %.1f) of the plain op's %.1f us. Latest after its unstalled "
      "need: a chunk's publication, plain %+.1f us, with the options %+.1f us; an m-tile's l (at "
      "its tiles' last stage) %+.1f us; the critical CTA's stall: plain %.1f us, with the options "
      "%.1f us.\n",
      c.startup_iter_s * 1e9, c.quant_front0_s * kUs, lo.quant_front0_s * kUs,
      c.quant_front0_plain_s * kUs, (c.front0_finish_s - c.unit_finish_s) / c.front0_down_iter_s,
      c.front0_down_iter_s * 1e9, lo.front0_down_iter_s * 1e9, c.front0_finish_s * kUs,
      1 + (c.unit_publish_s - c.unit_first_iter_s) / c.unit_iter_s, c.unit_first_iter_s * 1e9,
      lo.unit_first_iter_s * 1e9, c.unit_iter_s * 1e9, lo.unit_iter_s * 1e9, c.unit_publish_s * kUs,
      c.unit_finish_s * kUs, c.combine_s * kUs, c.combine_round_trips, lo.combine_round_trips,
      c.quant_busy_s * kUs, lo.quant_busy_s * kUs, c.t_plain * kUs, c.lateness_plain * kUs,
      c.lateness_options * kUs, c.l_lateness * kUs, c.stall_plain * kUs, c.stall_options * kUs);
  std::printf(
      "  (low / high: every unmeasured input of the options at its favourable / unfavourable end: "
      "the tensor term serial or filling idle time, the L2 latency loaded or not, the DRAM latency "
      "(450 .. 900 ns), lora_down's loads under x's or after them (x's DRAM round trip in a fused "
      "unit's first iteration, its L2 one after, the prefetches honoured in every reading), the "
      "partials' sum's steps overlapped or not, act_smooth's instructions, the RTX 5090's bf16 "
      "rate (full rate at low; the PRO 6000's is derived: one value); keep-up: the critical CTA's "
      "stall in a per-CTA replay of the GEMM "
      "against the units' publications and the m-tiles' l; w/o (c),(e): tensor + bytes + smooth "
      "alone, what a down-projection off the quantizer warps would leave)\n");
}

}  // namespace h3::perf_model
