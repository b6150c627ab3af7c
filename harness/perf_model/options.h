#ifndef H3_HARNESS_PERF_MODEL_OPTIONS_H_
#define H3_HARNESS_PERF_MODEL_OPTIONS_H_

// Issue 30's optional operands in the SM120 model (a model, NOT a measurement): act_smooth (each
// activation x a float factor in the quantizer warps, kernels/device/quantize.cuh) and the rank-r
// low-rank branch (kernels/device/lowrank.cuh: the down-projection lambda = x' @ lora_down^T by the
// quantizer warp that claimed each 8-row unit, after quantizing it and before publishing it; the
// up-projection v = o + bf16(lambda) @ lora_up^T by each consumer warp per finished warp tile,
// before the epilogue). PredictOptions: the op's time with them, as the plain op's (Predict) plus
// one term per effect, each stated in options.cc with its assumption:
//   (a) tensor   the branch's bf16 MMAs (2 M K r + 2 M N r FLOP) on the tensor pipes the NVFP4
//                main loop uses, at Hardware::bf16_mma_flop_per_clk_per_sm
//   (b) bytes    the branch's extra L2 traffic (lora_down per unit, x re-read, partials written and
//                read, lora_up) through Predict's own L2 / TMA-latency terms
//   (c) start-up a front unit (8 rows x one k-chunk) quantized and down-projected before its chunk
//                is published: the first MMAs wait for it
//   (d) smooth   act_smooth's instructions in the quantizer and its factor reads, through Predict's
//                quantizer model
//   (e) keep-up  the quantizer warps' units take longer (8 rows, the down-projection after each):
//                how late the rows of the later tiles are published against when the GEMM needs
//                them

#include <cstdint>
#include <string>

#include "harness/perf_model/model.h"

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
  double lora_down = 0;      // each unit its k-range of all r rows: ceil(M / 8) x K x r x 2
  double x_reread = 0;       // each unit its rows of x again, for the down-projection: M x K x 2
  double partial_write = 0;  // f32 partials: (front rows x chunks + the other rows) x r x 4
  double partial_read = 0;   // each warp tile its rows' partials: (N / warp tile N) x the above
  double lora_up = 0;        // each warp tile its columns: m-tiles x warps_m x N x r x 2
  double Total() const { return lora_down + x_reread + partial_write + partial_read + lora_up; }
};

struct OptionsCost {
  Options options;
  OptionsReading reading = OptionsReading::kDefault;
  double t_plain = 0;  // Predict(hw, d, p).t_total (raw seconds)
  double flop_down = 0, flop_up = 0;
  BranchBytes bytes;
  double smooth_bytes = 0;              // act_smooth's factors read per unit (L2)
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
  double down_iter_front_s = 0;  // one down-projection iteration (32 columns), L2 unloaded
  double down_iter_s = 0;        // the same during the main loop (L2 loaded)
  double unit_front_s = 0;       // a front unit's quantization + down-projection (one chunk)
  double unit_rest_s = 0;        // a later unit's (all of K)
  double lateness_plain = 0, lateness_options = 0;  // the latest publication after its need
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

}  // namespace h3::perf_model

#endif  // H3_HARNESS_PERF_MODEL_OPTIONS_H_
