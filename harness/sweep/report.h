// The sweep's output: one line per case, the summary table, and CSV/JSON reports.

#ifndef H3_HARNESS_SWEEP_REPORT_H_
#define H3_HARNESS_SWEEP_REPORT_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "harness/sweep/runner.h"

namespace h3::sweep {

// "PASS  bit-exact  act=bit-exact  rows 24/129  max_ulp 0  1.2s" (+ first mismatch on failure).
std::string CaseLine(const CaseResult& r);

// The table printed at the end: one row per case, then the totals.
std::string SummaryTable(absl::Span<const CaseResult> results);

std::string ToCsv(absl::Span<const CaseResult> results);
std::string ToJson(absl::Span<const CaseResult> results, const std::string& backend);

// OK when `path` ends in .csv or .json and can be written (harness/cli.h CheckOutputPath);
// else an InvalidArgument naming --report.
absl::Status CheckReportPath(const std::string& path);

// Writes CSV when `path` ends in .csv, JSON when it ends in .json (CheckReportPath first).
absl::Status WriteReport(const std::string& path, absl::Span<const CaseResult> results,
                         const std::string& backend);

}  // namespace h3::sweep

#endif  // H3_HARNESS_SWEEP_REPORT_H_
