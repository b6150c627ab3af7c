#include "harness/sweep/report.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "harness/cli.h"

namespace h3::sweep {

std::string CaseLine(const CaseResult& r) {
  if (r.verdict == Verdict::kSkip || r.verdict == Verdict::kError) {
    return absl::StrFormat("%-5s %s (%.1fs)", VerdictName(r.verdict), r.first_mismatch, r.seconds);
  }
  std::string line =
      absl::StrFormat("%-5s out=%s act=%s rows %d/%d max_ulp %d (%.1fs)", VerdictName(r.verdict),
                      r.comparison, r.act_check, r.rows_compared, r.m, r.max_ulp, r.seconds);
  if (r.verdict == Verdict::kFail) {
    absl::StrAppendFormat(&line, "\n      %d mismatches of %d checked; first: %s", r.mismatches,
                          r.checked, r.first_mismatch);
  }
  return line;
}

std::string SummaryTable(absl::Span<const CaseResult> results) {
  size_t width = 4;
  for (const CaseResult& r : results) width = std::max(width, r.name.size());
  std::string out =
      absl::StrFormat("%-*s  %-6s %-9s %-24s %14s %8s %10s %7s\n", static_cast<int>(width), "case",
                      "result", "out", "act", "rows", "max_ulp", "mismatch", "seconds");
  int counts[4] = {0, 0, 0, 0};
  double total = 0;
  for (const CaseResult& r : results) {
    ++counts[static_cast<int>(r.verdict)];
    total += r.seconds;
    absl::StrAppendFormat(&out, "%-*s  %-6s %-9s %-24s %14s %8d %10d %7.1f\n",
                          static_cast<int>(width), r.name, VerdictName(r.verdict), r.comparison,
                          r.act_check, absl::StrCat(r.rows_compared, "/", r.m), r.max_ulp,
                          r.mismatches, r.seconds);
  }
  absl::StrAppendFormat(&out, "%d cases: %d passed, %d failed, %d errors, %d skipped; %.1fs\n",
                        results.size(), counts[0], counts[1], counts[3], counts[2], total);
  return out;
}

namespace {

std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) {
    if (c == '"') q += '"';
    q += c;
  }
  return q + "\"";
}

}  // namespace

std::string ToCsv(absl::Span<const CaseResult> results) {
  std::string out =
      "case,result,backend,m,n,k,out_comparison,act_comparison,rows_compared,checked,mismatches,"
      "max_ulp,seconds,first_mismatch\n";
  for (const CaseResult& r : results) {
    absl::StrAppendFormat(&out, "%s,%s,%s,%d,%d,%d,%s,%s,%d,%d,%d,%d,%.3f,%s\n", CsvField(r.name),
                          VerdictName(r.verdict), r.backend, r.m, r.n, r.k, r.comparison,
                          CsvField(r.act_check), r.rows_compared, r.checked, r.mismatches,
                          r.max_ulp, r.seconds, CsvField(r.first_mismatch));
  }
  return out;
}

std::string ToJson(absl::Span<const CaseResult> results, const std::string& backend) {
  nlohmann::ordered_json cases = nlohmann::ordered_json::array();
  bool pass = true;
  for (const CaseResult& r : results) {
    pass &= r.verdict == Verdict::kPass || r.verdict == Verdict::kSkip;
    cases.push_back({
        {"case", r.name},
        {"result", std::string(VerdictName(r.verdict))},
        {"backend", r.backend},
        {"m", r.m},
        {"n", r.n},
        {"k", r.k},
        {"out_comparison", r.comparison},
        {"act_comparison", r.act_check},
        {"rows_compared", r.rows_compared},
        {"checked", r.checked},
        {"mismatches", r.mismatches},
        {"max_ulp", r.max_ulp},
        {"seconds", std::round(r.seconds * 1000) / 1000},
        {"first_mismatch", r.first_mismatch},
    });
  }
  const nlohmann::ordered_json report = {
      {"backend", backend},
      {"pass", pass},
      {"cases", std::move(cases)},
  };
  // Invalid UTF-8 (never expected: names and messages are ASCII) is replaced, not thrown.
  return report.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

absl::Status CheckReportPath(const std::string& path) {
  if (!absl::EndsWith(path, ".csv") && !absl::EndsWith(path, ".json")) {
    return absl::InvalidArgumentError(
        absl::StrCat("--report must be a path ending in .csv or .json, got '", path, "'"));
  }
  return CheckOutputPath("report", path);
}

absl::Status WriteReport(const std::string& path, absl::Span<const CaseResult> results,
                         const std::string& backend) {
  if (absl::Status st = CheckReportPath(path); !st.ok()) return st;
  const std::string text = absl::EndsWith(path, ".csv") ? ToCsv(results) : ToJson(results, backend);
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) return absl::InvalidArgumentError(absl::StrCat("--report: cannot open '", path, "'"));
  f << text;
  f.close();
  if (!f) return absl::InternalError(absl::StrCat("--report: writing '", path, "' failed"));
  return absl::OkStatus();
}

}  // namespace h3::sweep
