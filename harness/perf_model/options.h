#ifndef H3_HARNESS_PERF_MODEL_OPTIONS_H_
#define H3_HARNESS_PERF_MODEL_OPTIONS_H_

// Issue 30's optional operands in the SM120 model (a model, NOT a measurement): act_smooth (each
// activation x a float factor in the quantizer warps, kernels/device/quantize.cuh) and the rank-r
// low-rank branch (kernels/device/lowrank.cuh). The branch's units are 8 rows x ONE k-chunk
// (work_units.h WorkUnits<8, kChunkUnits>: the m-tiles in blocks of the first wave's count, each
// block chunk-major as the front, chunk 0 of every group, then chunk 1, ...), of three kinds
// (producers.cuh QuantizerLoop, work_units.h Kind). The front's (group, chunk) pairs (what the
// first tiles wait for) come first as quantize-only units (their rows prefetched to L2, then
// QuantizeUnit, 4 blocks a lane in flight, as a plain unit; published), then, after all of them,
// as down-only units (lowrank.cuh BranchDownUnit<kQuantize = false>: one block a lane per
// iteration, x read again and smoothed again, lora_down loaded and the MMAs issued). Every later
// unit is quantized and down-projected from the same registers
// (BranchDownUnit<kQuantize = true>: x loaded once, its rows' chunk prefetched to L2 at the
// unit's start), THEN published. lora_down is prefetched to L2 at the quantizers' start. A
// down-only or fused unit then stores its partial sums lambda (slot = its chunk) and arrives on its
// group's counter (BranchFinishUnit); the group's last arrival adds the group's partials, writes l
// = bf16(lambda) [M][r] and counts the group on its m-tile's BranchReadyWord (ready_flags.h). The
// load warp gates a tile's LAST A stage on that word reaching the m-tile's groups (loader.cuh;
// every other stage waits for its chunk alone), and each consumer warp, per finished warp tile,
// reads its rows' l and adds l @ lora_up^T before the epilogue. PredictOptions: the op's time with
// the options, as the plain op's (Predict) plus one term per effect, each stated in options.cc with
// its assumption:
//   (a) tensor   the branch's bf16 MMAs (2 M K r + 2 M N r FLOP) on the tensor pipes the NVFP4
//                main loop uses, at Hardware::bf16_mma_flop_per_clk_per_sm
//   (b) bytes    the branch's extra L2 traffic (lora_down per unit, x again for the front's
//                down-only units, the partials written and read once, l written and read per warp
//                tile, lora_up) through Predict's own L2 / TMA-latency terms
//   (c) start-up a front quantize-only unit's quantization (8 rows, 4 blocks a lane in flight,
//                prefetched) before its chunk is published, against the plain op's 4-row unit: the
//                first MMAs wait for it
//   (d) smooth   act_smooth's instructions in the quantizer and its factor reads, through Predict's
//                quantizer model
//   (e) keep-up  every unit occupies its warp longer (the front's down-only units are more
//                units; every later unit its fused loop before its publish; then the partials'
//                fence and the arrival; the group's last, the partials' sum and l), so chunks
//                are published later, and each tile's last stage waits for its m-tile's l: the
//                stall both cause the critical CTA, replayed per CTA against the GEMM

#include <cstdint>
#include <string>
#include <vector>

#include "harness/perf_model/model.h"
#include "kernels/device/work_units.h"

namespace h3::perf_model {

struct Options {
  int lora_rank = 0;  // 0: no branch; the kernel takes 16, 32, 48, 64
  bool act_smooth = false;
};

// Which end of the options' unmeasured inputs (options.cc states each with its range): low = every
// one at its favourable end, high = every one at its unfavourable end.
enum class OptionsReading { kLow, kDefault, kHigh };

// SM-side L2 bytes the branch adds to the call.
struct BranchBytes {
  double lora_down = 0;      // each unit its chunk of all r rows: ceil(M / 8) x K x r x 2
  double x_reread = 0;       // the front's down-only units' x, again: its rows x K x 2
  double partial_write = 0;  // f32 partials, one slot per chunk: M x chunks x r x 4
  double partial_read = 0;   // the groups' last units read them back once: M x chunks x r x 4
  double act_write = 0;      // l = bf16(lambda), once per row: M x r x 2
  double act_read = 0;       // each warp tile its rows' l: M x ceil(N / warp tile N) x r x 2
  double lora_up = 0;        // each warp tile its columns: m-tiles x warps_m x N x r x 2
  double Total() const {
    return lora_down + x_reread + partial_write + partial_read + act_write + act_read + lora_up;
  }
};

struct OptionsCost {
  Options options;
  OptionsReading reading = OptionsReading::kDefault;
  double t_plain = 0;  // Predict(hw, d, p).t_total (raw seconds)
  double flop_down = 0, flop_up = 0;
  BranchBytes bytes;
  double smooth_bytes = 0;              // act_smooth's factors read per unit (L2; front0 twice)
  double bf16_flop_per_clk_per_sm = 0;  // the reading's bf16 rate
  // The terms, seconds on the critical SM added to t_plain (each 0 where its option is off).
  double tensor_serial = 0;  // (a) the branch's MMAs, after the main loop's on the shared pipes
  double tensor_idle = 0;    //     the plain op's tensor-idle time on the critical SM
  double tensor = 0;         //     serial (default, high), or what the idle time cannot take (low)
  double bytes_s = 0;        // (b)
  double startup = 0;        // (c)
  double smooth = 0;         // (d)
  double keepup = 0;         // (e)
  // The inputs of (c) and (e).
  double quant_front0_s = 0;        // a front quantize-only unit's quantization (8 rows)
  double quant_front0_plain_s = 0;  //   the plain op's (d.quant_rows_per_unit rows)
  double startup_iter_s = 0;        //   one iteration of it (quant_depth blocks a lane)
  double front0_down_iter_s = 0;    //   its down-only unit's iteration (x again)
  double front0_finish_s = 0;       //   the down-only unit: that loop, partials, atomic
  double unit_first_iter_s = 0;     // every other unit's fused loop: its first iteration (x DRAM)
  double unit_iter_s = 0;           //   each later one (x prefetched to L2, dab8b1d)
  double unit_publish_s = 0;        //   such a unit (one chunk) from its claim to its publish
  double unit_finish_s = 0;         //   then to its arrival: partials' stores, fence, atomic
  double combine_s = 0;             // what a group's last arrival adds: partials' sum, l, fence
  int combine_round_trips = 0;      //   in L2 round trips
  double quant_busy_s = 0;          // every unit's (and combine's) time / the quantizer warps
  // The branch's schedule (seconds from the kernel's start, the reading's final replay): chunk c
  // of m-tile mt published at published[mt * chunks + c], the m-tile's l ready at l_ready[mt].
  int chunks = 0;
  std::vector<double> published, l_ready;
  // The latest publication (and l) after the GEMM's unstalled need of it (<= 0: none late), and
  // the stall the late ones cause the critical CTA (the per-CTA replay, options.cc), plain and
  // options.
  double lateness_plain = 0, lateness_options = 0, l_lateness = 0;
  double stall_plain = 0, stall_options = 0;
  double t_options = 0;
  double Cost() const { return t_options / t_plain - 1; }
};

OptionsCost PredictOptions(const Hardware& hw, const Design& d, const Problem& p, const Options& o,
                           OptionsReading reading = OptionsReading::kDefault);

// `options: <GPU> M=<m> r=<r>[ smooth] cost +X.X% (tensor +a%, bytes +b%, start-up +c%, keep-up
// +d%, smooth +e%) low +L% high +H%`: the default reading's cost over the plain op and its terms,
// in percent of the plain op's time, one decimal; low / high the other two readings' costs. <GPU>
// is hw.name up to " (".
std::string OptionsLine(const Hardware& hw, const Design& d, int64_t m, const Options& o);

// The quantizer's units in claim order, as PredictOptions replays them: `rows`-row groups, every
// unit one k-chunk (chunk_units: the branch's kChunkUnits, each block of front-many m-tiles
// chunk-major) or the later groups one unit of all K (the plain op's). options.cc's replica of
// kernels/device/work_units.h WorkUnits<rows, chunk_units>::Unit on the model's grid
// (min(SMs, tiles)), front m-tiles and k-chunks; options_test compares them unit by unit.
struct ModelUnit {
  int64_t row0 = 0, row_end = 0;
  int chunk_begin = 0, chunk_end = 0;
  kernels::UnitKind kind = kernels::UnitKind::kWhole;
};
std::vector<ModelUnit> ModelUnitOrder(const Hardware& hw, const Design& d, const Problem& p,
                                      int rows, bool chunk_units);

// The per-CTA replay of the GEMM behind (e) on the branch's grid and chunks: CTA b runs tiles
// b, b + grid, ... from t0, each waiting at chunk c for published[m_tile * chunks + c] (chunk 0 of
// the front m-tiles excepted: the start-up's) and, where l_ready is not empty, at its last k-step
// for l_ready[m_tile]. stall: the latest CTA's finish after the latest unstalled one's; lateness /
// l_lateness: the latest chunk / l after the unstalled need of its m-tile's first tile.
struct ModelReplay {
  double stall = 0;
  double lateness = -1e30, l_lateness = -1e30;
};
ModelReplay ModelGemmReplay(const Hardware& hw, const Design& d, const Problem& p,
                            const std::vector<double>& published,
                            const std::vector<double>& l_ready, double t0);

}  // namespace h3::perf_model

#endif  // H3_HARNESS_PERF_MODEL_OPTIONS_H_
